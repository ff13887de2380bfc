"""Python peers of mpt: the same workload through other Python implementations, for ``--peers``.

Ethereum: the Insert/N workload ("insert all accounts, then the root") through py-trie and the execution-specs
trie. CometBFT Merkle: the MerkleRoot/N leaves through a hashlib loop (what Python users write today) and
pymerkle. A peer that cannot be imported is listed with the reason (``Peer.missing``) and skipped by the runner.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

from mpt.bench.registry import Case, expect
from mpt.bench.workloads import (
    ACCOUNT_ROOTS,
    ACCOUNT_SIZES,
    MERKLE_LEAF_SIZE,
    MERKLE_SIZES,
    hashed_accounts,
    merkle_leaves,
    merkle_reference_root,
)

__all__ = [
    "Peer",
    "PEER_NAMES",
    "PEERS_INSTALL_HINT",
    "peers",
    "peer_case",
    "MERKLE_PEER_NAMES",
    "merkle_peers",
    "merkle_peer_case",
    "hashlib_merkle_root",
    "SECONDS_PER_OP",
    "estimate_seconds",
]


@dataclass(frozen=True)
class Peer:
    """A Python MPT implementation to compare with: ``build(keys, values)`` returns the root."""

    name: str
    build: Optional[Callable[[Sequence[bytes], Sequence[bytes]], bytes]]
    missing: Optional[str] = None               # why it cannot run (not installed, ...), else None
    detail: str = ""                            # module and version used


def _mpt_peer() -> Peer:
    import mpt

    def build(keys, values):
        t = mpt.Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        return t.hash()

    return Peer("mpt", build, detail="mpt %s" % getattr(mpt, "__version__", "?"))


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - metadata is only decoration here
        return "?"


def _py_trie_peer() -> Peer:
    try:
        from trie import HexaryTrie
    except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
        return Peer("py-trie", None, "not importable (%s: %s)" % (type(e).__name__, e))

    def build(keys, values):
        t = HexaryTrie({})
        for k, v in zip(keys, values):
            t.set(k, v)
        return t.root_hash

    return Peer("py-trie", build, detail="trie %s, HexaryTrie over a dict" % _version("trie"))


# The execution-specs packages moved the forks under ethereum.forks in 2.x; 1.x had them at the top level.
_SPECS_TRIE_MODULES = ("ethereum.forks.cancun.trie", "ethereum.forks.prague.trie", "ethereum.cancun.trie",
                       "ethereum.shanghai.trie")


def _specs_peer() -> Peer:
    for module_name in _SPECS_TRIE_MODULES:
        try:
            module = importlib.import_module(module_name)
            specs_trie, trie_set, root = module.Trie, module.trie_set, module.root
        except Exception:  # noqa: BLE001 - try the next layout
            continue

        def build(keys, values, specs_trie=specs_trie, trie_set=trie_set, root=root):
            t = specs_trie(secured=False, default=b"")
            for k, v in zip(keys, values):
                trie_set(t, k, v)
            return bytes(root(t))

        return Peer("execution-specs", build,
                    detail="ethereum-execution %s, %s" % (_version("ethereum-execution"), module_name))
    if importlib.util.find_spec("ethereum") is None:
        why = "not installed" if sys.version_info >= (3, 11) else "needs Python >= 3.11 (this is %d.%d)" % (
            sys.version_info[:2])
    else:  # e.g. the unrelated old pyethereum, which also installs a package called "ethereum"
        why = "the installed 'ethereum' package has none of %s" % ", ".join(_SPECS_TRIE_MODULES)
    return Peer("execution-specs", None, why)


PEER_NAMES = ("py-trie", "execution-specs")
PEERS_INSTALL_HINT = "pip install 'mpt-engine[peers]'"
"""The one install hint for the peers (the ``peers`` extra of pyproject.toml)."""


def peers() -> List[Peer]:
    """mpt itself first, then each peer (with ``missing`` set when it cannot be imported)."""
    return [_mpt_peer(), _py_trie_peer(), _specs_peer()]


def _build_of(peer: Peer) -> Callable:
    if peer.build is None:
        raise ValueError("peer %s is not available: %s" % (peer.name, peer.missing))
    return peer.build


def _peer_case(peer: Peer, group: str, label: str, n: int, setup, op, want_root, doc: str) -> Case:
    """group/label's workload through peer (Ethereum and Merkle alike): op(setup()) must give want_root(state)."""
    def check(state):
        expect("%s %s/%s root" % (peer.name, group, label), bytes(op(state)), want_root(state))

    return Case(name="%s/%s" % (group, label), group=group, size=n, setup=setup, op=op, check=check,
                small=n < 100000, doc="%s: %s" % (peer.name, doc))


def peer_case(peer: Peer, label: str) -> Case:
    """The Insert workload for ``ACCOUNT_SIZES[label]`` accounts through peer: insert all, then the root."""
    build = _build_of(peer)
    n = ACCOUNT_SIZES[label]

    def op(state):
        return build(*state)

    return _peer_case(peer, "Insert", label, n, setup=lambda: hashed_accounts(n), op=op,
                      want_root=lambda state: ACCOUNT_ROOTS[n], doc="insert make_accounts(%d), then the root" % n)


# ---------------------------------------------------------------------------------------------------------------
# CometBFT Merkle peers: the same MerkleRoot leaves through other Python code
# ---------------------------------------------------------------------------------------------------------------

def hashlib_merkle_root(leaves: Sequence[bytes]) -> bytes:
    """What Python users write today: the CometBFT tree level by level, one hashlib call per node."""
    import hashlib

    sha256 = hashlib.sha256
    if not leaves:
        return sha256(b"").digest()
    level = [sha256(b"\x00" + x).digest() for x in leaves]
    while len(level) > 1:
        nxt = [sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _pymerkle_peer() -> Peer:
    try:
        from pymerkle import InmemoryTree
    except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
        return Peer("pymerkle", None, "not importable (%s: %s)" % (type(e).__name__, e))

    def build(leaves):
        # RFC 6962 mode (the default: 0x00 / 0x01 prefixes), the same root as CometBFT's.
        return InmemoryTree.init_from_entries(list(leaves), algorithm="sha256").get_root()

    return Peer("pymerkle", build, detail="pymerkle %s, InmemoryTree.init_from_entries" % _version("pymerkle"))


MERKLE_PEER_NAMES = ("hashlib", "pymerkle")


def merkle_peers() -> List[Peer]:
    """mpt.merkle first, then a hashlib loop and pymerkle (``missing`` set when pymerkle is not installed)."""
    import hashlib

    from mpt.merkle import root

    return [Peer("mpt", root, detail="mpt.merkle.root"),
            Peer("hashlib", hashlib_merkle_root, detail="hashlib.sha256 loop (%s)" % hashlib.sha256().name),
            _pymerkle_peer()]


def merkle_peer_case(peer: Peer, label: str) -> Case:
    """MerkleRoot/label's leaves through peer."""
    build = _build_of(peer)
    n = MERKLE_SIZES[label]

    def op(leaves):
        return build(leaves)

    return _peer_case(peer, "MerkleRoot", label, n, setup=lambda: list(merkle_leaves(n, MERKLE_LEAF_SIZE)), op=op,
                      want_root=lambda leaves: merkle_reference_root(tuple(leaves)),
                      doc="root of %d leaves of %d bytes" % (n, MERKLE_LEAF_SIZE))


# ---------------------------------------------------------------------------------------------------------------
# How long --peers takes: the peers' time per op on the reference machine (a 2-vCPU AMD EPYC, Zen 4): the
# reference run of the Benchmarks page (docs/bench_reference.json: Insert/1K, Insert/10K, MerkleRoot/*) and, for
# Insert/100K, the Python-peer table of docs/performance.md. tests/test_bench.py checks them against both.
# ---------------------------------------------------------------------------------------------------------------

SECONDS_PER_OP = {
    ("py-trie", "Insert/1K"): 0.133,
    ("py-trie", "Insert/10K"): 1.74,
    ("py-trie", "Insert/100K"): 33.0,
    ("execution-specs", "Insert/1K"): 0.053,
    ("execution-specs", "Insert/10K"): 0.59,
    ("execution-specs", "Insert/100K"): 10.6,
    ("hashlib", "MerkleRoot/100"): 0.00008,
    ("hashlib", "MerkleRoot/1K"): 0.0008,
    ("hashlib", "MerkleRoot/10K"): 0.0087,
    ("pymerkle", "MerkleRoot/100"): 0.0005,
    ("pymerkle", "MerkleRoot/1K"): 0.006,
    ("pymerkle", "MerkleRoot/10K"): 0.071,
}


def estimate_seconds(peer_name: str, case_name: str, count: int, min_time: float) -> float:
    """Seconds the peer adds beside one case: a check, a calibration op and ``count`` samples of at least
    ``min_time`` each (unknown pairs count as min_time per sample)."""
    op = SECONDS_PER_OP.get((peer_name, case_name), 0.0)
    if case_name.endswith("/100K") and op == 0.0 and case_name.startswith("MerkleRoot"):
        op = 10 * SECONDS_PER_OP.get((peer_name, "MerkleRoot/10K"), 0.0)
    return 2 * op + count * max(op, min_time)
