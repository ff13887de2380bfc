"""The end of a ``python -m mpt.bench`` report: faster than what?

The tables above are absolute times on this machine. The summary answers the question a reader has next by
timing, on the same workload as one case of the run, a peer that takes seconds rather than minutes:

- ``MerkleRoot/1K``: a ``hashlib.sha256`` loop over the CometBFT tree (what Python code does today);
- ``Insert/1K``: py-trie's ``HexaryTrie``, the Python Ethereum trie (``pip install 'mpt-engine[peers]'``);
- ``ICS23Verify/iavl``: mpt's own pure-Python ICS23 verifier (``mpt.ics23._reference``, its test oracle: a
  straightforward Python implementation on hashlib).

Each peer runs :data:`QUICK_COUNT` samples after the main run and is divided by the case's median from the table
above. With ``--peers`` a peer that already ran beside its case (alternating samples) is taken from there. The Go
comparison (go-ethereum, cometbft, cosmos/iavl on one core) takes a Go toolchain and the peers' sources: the
summary says where its figures and commands are.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from itertools import repeat
from typing import Callable, Dict, List, Optional

from mpt.bench.registry import Case, expect
from mpt.bench.runner import NoProgress, Result, Runner

__all__ = ["QUICK_COUNT", "QuickPeer", "QUICK_PEERS", "Comparison", "compare", "format_summary", "GO_POINTER"]

QUICK_COUNT = 3

GO_POINTER = ("Go: go-ethereum, cometbft and cosmos/iavl, timed side by side with mpt on one core of one machine, are "
              "in the documentation's Performance page (docs/performance.md), with the go-ethereum commands to run "
              "here; --peers also times py-trie and the execution-specs trie on every selected Insert/N case and "
              "pymerkle on MerkleRoot/N (it prints how long that takes first).")


@dataclass(frozen=True)
class QuickPeer:
    """A peer of one case: ``make()`` returns its Case on that case's workload, or raises LookupError saying
    why it cannot run here."""

    case: str           # the mpt case it is compared with
    name: str           # the peer's name in --peers tables, when it has one there
    label: str          # what the summary calls it
    make: Callable[[], Case]


def _hashlib_merkle() -> Case:
    from mpt.bench.peers import Peer, hashlib_merkle_root, merkle_peer_case

    return merkle_peer_case(Peer("hashlib", hashlib_merkle_root), "1K")


def _py_trie() -> Case:
    from mpt.bench.peers import PEERS_INSTALL_HINT, peer_case, peers

    peer = next((p for p in peers() if p.name == "py-trie"), None)
    if peer is None:
        raise LookupError("py-trie is not among the peers")
    if peer.build is None:
        raise LookupError("py-trie %s (%s)" % (peer.missing, PEERS_INSTALL_HINT))
    return peer_case(peer, "1K")


_ICS23_REFERENCE_BATCH = 10


def _ics23_reference() -> Case:
    from mpt.bench import cases

    try:
        from mpt.ics23 import _reference as ref
    except ImportError as e:        # pragma: no cover - part of the package
        raise LookupError(str(e)) from None
    mpt_case = cases.get("ICS23Verify/iavl")

    def op(state):
        root, proof, key, value = state
        out = None
        for _ in repeat(None, _ICS23_REFERENCE_BATCH):
            out = ref.verify_membership(ref.IAVL, root, proof, key, value)
        return out

    def check(state):
        expect("pure-Python ICS23Verify/iavl", op(state), True)

    return Case(name="ICS23Verify/iavl", group="ICS23Verify", size=1, setup=mpt_case.setup, op=op, check=check,
                ops_per_sample=_ICS23_REFERENCE_BATCH, doc="mpt.ics23._reference.verify_membership (pure Python)")


QUICK_PEERS = (
    QuickPeer("MerkleRoot/1K", "hashlib", "hashlib.sha256 loop", _hashlib_merkle),
    QuickPeer("Insert/1K", "py-trie", "py-trie HexaryTrie", _py_trie),
    QuickPeer("ICS23Verify/iavl", "", "pure-Python ICS23 verifier", _ics23_reference),
)


@dataclass
class Comparison:
    case: str
    peer: str
    mpt_ns: float
    peer_ns: Optional[float]        # None: the peer could not run (missing says why)
    missing: str = ""
    alternating: bool = False       # measured beside the case's own samples (--peers)

    @property
    def ratio(self) -> Optional[float]:
        return None if self.peer_ns is None else self.peer_ns / self.mpt_ns

    def to_json(self) -> Dict[str, object]:
        return {"case": self.case, "peer": self.peer, "mpt_ns": self.mpt_ns, "peer_ns": self.peer_ns,
                "ratio": self.ratio, "missing": self.missing or None, "alternating": self.alternating}


def compare(results: List[Result], min_time: float, count: int = QUICK_COUNT,
            quick_peers=QUICK_PEERS) -> List[Comparison]:
    """A Comparison for each quick peer whose case is among results (peers that fail their check are left out;
    a peer that is missing is listed with the reason)."""
    by_name = {r.name: r for r in results}
    out: List[Comparison] = []
    runner = Runner(count, min_time, NoProgress())
    for quick in quick_peers:
        mine = by_name.get(quick.case)
        if mine is None or not mine.median > 0:
            continue
        ran = mine.peer_results.get(quick.name) if quick.name else None
        if ran is not None:
            out.append(Comparison(quick.case, quick.label, mine.median, ran.median, alternating=True))
            continue
        try:
            case = quick.make()
        except LookupError as e:
            out.append(Comparison(quick.case, quick.label, mine.median, None, missing=str(e)))
            continue
        theirs = runner.run_case(case)
        out.append(Comparison(quick.case, quick.label, mine.median, theirs.median))
    return out


def format_summary(comparisons: List[Comparison], fmt_time) -> List[str]:
    """The summary's lines (none when nothing was compared)."""
    if not comparisons:
        return []
    rows = []
    for c in comparisons:
        if c.ratio is None:
            rows.append((c.case, "mpt " + fmt_time(c.mpt_ns), c.peer, "not run: " + c.missing))
            continue
        ratio = c.ratio
        verdict = ("%.0f× faster" % ratio if ratio >= 10 else "%.1f× faster" % ratio) if ratio >= 1 else (
            "%.1f× slower" % (1 / ratio))
        rows.append((c.case, "mpt " + fmt_time(c.mpt_ns), "%s %s" % (c.peer, fmt_time(c.peer_ns)), verdict))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["", "faster than what? mpt against Python code doing the same work on this machine (median time per op):"]
    for r in rows:
        lines.append("  %s   %s   %s   %s" % (r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2].ljust(widths[2]),
                                              r[3]))
    if any(not c.alternating and c.peer_ns is not None for c in comparisons):
        lines.append("  (the peers ran %d samples each after the tables above; --peers alternates them with mpt's)"
                     % QUICK_COUNT)
    lines += textwrap.wrap(GO_POINTER, 116)
    return lines
