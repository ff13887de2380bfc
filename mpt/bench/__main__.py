"""``python -m mpt.bench``: go-ethereum's trie benchmarks on the same data, reported like ``go test -bench``.

Run ``python -m mpt.bench --help`` for the options. This module only reads the command line: the cases live in
:mod:`mpt.bench.cases` (one module per tree family), their data in :mod:`mpt.bench.workloads`, the timing in
:mod:`mpt.bench.runner` and the tables in :mod:`mpt.bench.report`. The "Benchmarks" page of the documentation
(docs/benchmarks.rst) describes the cases and geth's numbers on this kind of machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, TextIO

from mpt.cli import EXIT_INTERRUPTED, entry_point, exit_if_shadowed

PROG = "python -m mpt.bench"
if __name__ == "__main__":
    exit_if_shadowed(PROG)      # before the imports below, which need the package itself

from mpt.bench import cases as bench_cases  # noqa: E402
from mpt.bench import peers as bench_peers  # noqa: E402
from mpt.bench import summary as bench_summary  # noqa: E402
from mpt.bench.peers import PEERS_INSTALL_HINT  # noqa: E402
from mpt.bench.report import (  # noqa: E402
    NotABenchReport,
    fmt_spread,
    fmt_time,
    format_go,
    format_json,
    format_text,
    load_base,
    machine_info,
    mpt_version,
)
from mpt.bench.runner import BarProgress, LineProgress, Result, Runner, progress  # noqa: E402
from mpt.core.runtime import (  # noqa: E402
    get_hash_threads, keccak_backend, set_hash_threads, set_keccak_backend, sha256_backend,
)

# Older names of what moved to mpt.bench.runner and mpt.bench.report (tests and scripts import them from here).
_BarProgress, _LineProgress, _progress, _mpt_version = BarProgress, LineProgress, progress, mpt_version

# Every Keccak backend name --keccak-backend knows; which ones run here is mpt.runtime.keccak_backends().
ALL_KECCAK_BACKENDS = ("scalar", "avx2", "avx512", "avx2x8")
DEFAULT_COUNT = 10
DEFAULT_MIN_TIME = 0.1

EPILOG = """\
cases:
  The default run takes the small sizes (about a minute on 2 cores); -b REGEX or --all adds the 100K ones.
  -b splits REGEX at '/' and matches each part against a whole level of the name (see -b above).
  --list shows every case. Names follow go-ethereum's benchmarks, so tables line up with geth's.
  The report ends with "faster than what?": Python peers that take seconds, timed on the spot (a hashlib loop,
  py-trie, a pure-Python ICS23 verifier), and where the Go comparison is. --peers says how long it will take.
  Ctrl-C writes the report of the finished cases (to -o FILE when given) and exits 130.

metrics:
  time/op    median of --count samples ± spread (benchstat v1 rule: distance from the median to min/max,
             outliers beyond 1.5 IQR dropped)
  B/op       bytes requested from Python's PyMem/PyObject allocators per op (like go test -benchmem)
  allocs/op  allocator calls per op
  keccak_ratio (HashFixedSize)  hash() time / time our keccak alone needs for the same node encodings, on
             the Keccak backend hash() uses; "vs 1 lane" is the same against single-lane Keccak
  sha_ratio (Merkle*)  time / time our SHA-256 alone needs for the same preimages, batched as root() hashes
             them; "vs 1 at a time" is the same against one SHA-256 call per preimage

examples:
  python -m mpt.bench                                   # default run, text table
  python -m mpt.bench -b 'HashFixedSize' --count 20     # every HashFixedSize size, 100K included
  python -m mpt.bench -b 'HashFixedSize/1K'              # one case (each /-part matches a whole level)
  python -m mpt.bench -b Hash --search                  # re.search: every name containing "Hash"
  python -m mpt.bench --format json -o old.json         # save a run ...
  python -m mpt.bench --compare old.json                # ... and compare with it (Mann-Whitney U p-values)
  python -m mpt.bench --format go -o new.txt && benchstat geth.txt new.txt
  python -m mpt.bench --peers -b 'Insert/'              # py-trie and execution-specs on the same workload
  python -m mpt.bench --peers -b 'MerkleRoot/'         # CometBFT Merkle trees: hashlib loop and pymerkle
  python -m mpt.bench --keccak-backend scalar -b HashFixedSize --format json -o one_lane.json
  python -m mpt.bench -b HashFixedSize --compare one_lane.json    # what the SIMD lanes buy
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mpt.bench",
        description="Run mpt's benchmarks: go-ethereum's trie benchmarks on the same data, with the\n"
                    "reference root of every workload checked before timing.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-b", "--bench", metavar="REGEX",
                   help="run the cases whose name matches REGEX, any size (100K included). Like go test -bench, "
                        "REGEX is split at '/' into one expression per level of the name; each must match a "
                        "whole level: 'HashFixedSize' runs HashFixedSize/*, not CommitAfterHashFixedSize; "
                        "'HashFixedSize/1K' one case; 'VerifyRange.*' both range groups")
    p.add_argument("--search", action="store_true",
                   help="match -b REGEX anywhere in the whole name instead (re.search: 'Hash' also selects "
                        "CommitAfterHashFixedSize)")
    p.add_argument("--all", action="store_true", help="run every case, 100K sizes included")
    p.add_argument("--count", type=int, default=DEFAULT_COUNT, metavar="N",
                   help="samples per case (default %d; medians want at least 10)" % DEFAULT_COUNT)
    p.add_argument("--min-time", type=float, default=DEFAULT_MIN_TIME, metavar="S",
                   help="minimum seconds per sample; cheap ops repeat until a sample lasts this long "
                        "(default %g)" % DEFAULT_MIN_TIME)
    p.add_argument("--format", choices=("text", "go", "json"), default="text",
                   help="text: benchstat-style tables; go: `go test -bench` lines for benchstat; json: every "
                        "sample and the machine (input of --compare)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the report to FILE instead of stdout (with --format go/json the text table "
                        "still goes to stdout)")
    p.add_argument("--compare", metavar="OLD.json",
                   help="add a 'vs base' column against a saved --format json report: change of the median "
                        "and the Mann-Whitney U p-value, '~' when not significant (p > 0.05)")
    p.add_argument("--peers", action="store_true",
                   help="also time py-trie and the execution-specs trie on each selected Insert/N case "
                        "(insert all accounts, then the root), their samples alternating with mpt's, and print "
                        "the ratios, and a hashlib loop and pymerkle on each selected MerkleRoot/N case (missing "
                         "peers are skipped; %s)" % PEERS_INSTALL_HINT)
    p.add_argument("--keccak-backend", metavar="NAME", choices=("auto",) + tuple(ALL_KECCAK_BACKENDS),
                   help="Keccak backend for batched hashing: auto (default: the widest this CPU runs), "
                        + ", ".join(ALL_KECCAK_BACKENDS) + " (same as MPT_KECCAK_BACKEND)")
    p.add_argument("--hash-threads", type=int, metavar="N",
                   help="threads for batched hashing (default 1, or MPT_HASH_THREADS)")
    p.add_argument("--list", action="store_true", help="list the cases (and whether the default run has them)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress on stderr (by default a bar on a terminal, else one line per finished case)")
    return p


def _list_cases(out: TextIO) -> None:
    width = max(len(name) for name in bench_cases.CASES)
    for case in bench_cases.CASES.values():
        out.write("%s  %-8s  %s\n" % (case.name.ljust(width), "default" if case.small else "-b/--all", case.doc))


def _progress_line(r: Result) -> str:
    line = "%s %s %s" % (r.name, fmt_time(r.median), fmt_spread(r.spread))
    for name, p in r.peer_results.items():
        line += "; %s %s" % (name, fmt_time(p.median))
    return line


# ---------------------------------------------------------------------------------------------------------------
# Checking the options (all before the first case runs)
# ---------------------------------------------------------------------------------------------------------------

def _select(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list:
    if args.count < 1:
        parser.error("--count must be at least 1")
    if args.min_time < 0:
        parser.error("--min-time must not be negative")
    try:
        return bench_cases.select(args.bench, everything=args.all, search=args.search)
    except re.error as e:
        parser.error("bad -b regular expression: %s" % e)


def _no_match(args: argparse.Namespace) -> int:
    hint = "" if args.search else (
        "; each /-separated part must match a whole level of a name: try %r, or --search"
        % (args.bench.split("/")[0] + ".*"))
    print("no case matches %r (see --list%s)" % (args.bench, hint), file=sys.stderr)
    if bench_cases.pytrie.MISSING and "pytrie" in (args.bench or "").lower():
        print("the PyTrie cases are skipped: %s" % bench_cases.pytrie.MISSING, file=sys.stderr)
    return 1


def _apply_hashing_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--keccak-backend and --hash-threads, each error naming its own option."""
    if args.keccak_backend is not None:
        try:
            set_keccak_backend(args.keccak_backend)
        except ValueError as e:
            parser.error("--keccak-backend: %s" % e)
    if args.hash_threads is not None:
        if args.hash_threads < 1:
            parser.error("--hash-threads must be at least 1")
        try:
            set_hash_threads(args.hash_threads)
        except ValueError as e:
            parser.error("--hash-threads: %s" % e)


def _load_compare(parser: argparse.ArgumentParser, path: Optional[str]) -> Optional[Dict[str, Dict[str, Any]]]:
    if not path:
        return None
    try:
        return load_base(path)
    except NotABenchReport as e:
        parser.error("--compare: %s" % e)
    except OSError as e:
        parser.error("--compare: cannot read %s: %s" % (path, e.strerror or e))


def check_output_path(path: str) -> Optional[str]:
    """Why the report cannot be written to path (None when it can): tried before any case runs, by opening it
    for appending; a file that did not exist is removed again."""
    if os.path.isdir(path):
        return "%s is a directory" % path
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return "directory %s does not exist" % parent
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as e:
        return "cannot write %s: %s" % (path, e.strerror or e)
    if not existed:
        os.remove(path)
    return None


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class _PeerPlan:
    """--peers: which selected cases get companions, and the peers available for each family."""

    insert_cases: list = field(default_factory=list)
    merkle_cases: list = field(default_factory=list)
    insert_peers: list = field(default_factory=list)
    merkle_peers: list = field(default_factory=list)
    pytrie_cases: list = field(default_factory=list)     # PyTrie/*: py-trie's own HexaryTrie is the peer

    def companions(self, case) -> list:
        """(peer, peer case) pairs timed beside case."""
        label = case.name.split("/", 1)[-1]
        if case in self.insert_cases:
            return [(peer, bench_peers.peer_case(peer, label)) for peer in self.insert_peers]
        if case in self.merkle_cases:
            return [(peer, bench_peers.merkle_peer_case(peer, label)) for peer in self.merkle_peers]
        if case in self.pytrie_cases:
            return bench_cases.pytrie.peer_cases(case)
        return []

    def samples_per_round(self, selected: list) -> int:
        return (len(selected) + len(self.insert_peers) * len(self.insert_cases)
                + len(self.merkle_peers) * len(self.merkle_cases) + len(self.pytrie_cases))


def _plan_peers(selected: list, wanted: bool, notes: List[str]) -> _PeerPlan:
    """The Python peers run on the selected Insert/N cases (the same workload: insert every account, then the
    root) and MerkleRoot/N cases only, inside those cases' own sample loops."""
    plan = _PeerPlan()
    if not wanted:
        return plan
    plan.insert_cases = [c for c in selected if c.group == "Insert"]
    plan.merkle_cases = [c for c in selected if c.group == "MerkleRoot"]
    plan.pytrie_cases = [c for c in selected if c.group == "PyTrie"]
    if not plan.insert_cases and not plan.merkle_cases and not plan.pytrie_cases:
        notes.append("--peers compares the Insert/N and MerkleRoot/N cases; none was selected (try -b 'Insert/' "
                     "or -b 'MerkleRoot/')")
    missing: List[str] = []
    for available, family_cases, all_peers in ((plan.insert_peers, plan.insert_cases, bench_peers.peers),
                                               (plan.merkle_peers, plan.merkle_cases, bench_peers.merkle_peers)):
        for peer in all_peers()[1:] if family_cases else ():     # [0] is mpt itself: the case is its row
            if peer.build is None:
                missing.append("%s (%s)" % (peer.name, peer.missing))
            else:
                available.append(peer)
    if missing:
        notes.append("peers skipped: %s; install them with %s" % ("; ".join(missing), PEERS_INSTALL_HINT))
    return plan


def _estimate_peers(plan: _PeerPlan, count: int, min_time: float) -> float:
    """Seconds the selected peers add to the run (from their times on the reference machine)."""
    return sum(bench_peers.estimate_seconds(peer.name, case.name, count, min_time)
               for cases_, peers_ in ((plan.insert_cases, plan.insert_peers), (plan.merkle_cases, plan.merkle_peers))
               for case in cases_ for peer in peers_) + sum(
        bench_peers.estimate_seconds("py-trie", case.name, count, min_time) for case in plan.pytrie_cases)


def _fmt_duration(seconds: float) -> str:
    if seconds < 90:
        return "%d s" % max(1, round(seconds))
    return "%d minutes" % round(seconds / 60)


def _run_cases(runner: Runner, bar, selected: list, plan: _PeerPlan, notes: List[str],
               results: List[Result]) -> int:
    """Every selected case, appended to results as it finishes (a failing one is a note, and the others still
    run; a Ctrl-C leaves the finished ones in results): the number of failures."""
    failed = 0
    for case in selected:
        companions = plan.companions(case)
        try:
            result = runner.run_case(case, companions, notes)
            results.append(result)
            bar.case_done(_progress_line(result))
        except ImportError as e:        # an optional extra the case needs (MissingExtraError names it)
            notes.append("skipped %s: %s" % (case.name, e))
            bar.update(runner.count * (1 + len(companions)))
            bar.case_done("%s skipped" % case.name)
        except Exception as e:  # noqa: BLE001 - a failing case is reported; the others still run
            failed += 1
            what = "%s" % e if isinstance(e, bench_cases.CheckFailed) else "%s: %s" % (type(e).__name__, e)
            bar.write("FAIL %s: %s" % (case.name, what))
            notes.append("FAIL %s: %s" % (case.name, what))
            bar.update(runner.count * (1 + len(companions)))
            bar.case_done("%s FAIL" % case.name)
    return failed


def _write_report(args: argparse.Namespace, results: List[Result], base, notes: List[str],
                  summary: Sequence[Any] = ()) -> None:
    info = machine_info()
    settings = {"count": args.count, "min_time": args.min_time, "mpt_version": mpt_version(),
                "keccak_backend": keccak_backend(), "sha256_backend": sha256_backend(),
                "hash_threads": get_hash_threads(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    # Every case's peers (its companions): the Insert/N ones and the MerkleRoot/N ones get a table each.
    all_peers = {r.name: {"mpt": r, **r.peer_results} for r in results if r.peer_results} or None
    account_peers = {k: v for k, v in (all_peers or {}).items() if not k.startswith("MerkleRoot/")} or None
    merkle_peers = {k: v for k, v in (all_peers or {}).items() if k.startswith("MerkleRoot/")} or None
    text = format_text(results, info, settings, base, os.path.basename(args.compare or "base"), account_peers,
                       notes, merkle_peers, summary)
    if args.format == "text":
        report = text
    elif args.format == "go":
        report = format_go(results, info, settings, all_peers)
    else:
        report = format_json(results, info, settings, all_peers, notes, summary)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(report)
        if args.format != "text":
            sys.stdout.write(text)
    else:
        sys.stdout.write(report)
    sys.stdout.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        _list_cases(sys.stdout)
        return 0
    selected = _select(parser, args)
    if not selected:
        return _no_match(args)
    _apply_hashing_options(parser, args)
    base = _load_compare(parser, args.compare)
    problem = check_output_path(args.output) if args.output else None
    if problem is not None:
        parser.error("-o/--output: %s" % problem)
    notes: List[str] = []
    plan = _plan_peers(selected, args.peers, notes)
    peer_seconds = _estimate_peers(plan, args.count, args.min_time)
    if peer_seconds >= 10:
        print("%s: the peers add about %s to this run (their times on a 2-vCPU AMD EPYC; progress on stderr)"
              % (PROG, _fmt_duration(peer_seconds)), file=sys.stderr, flush=True)
    bar = progress(args.count * plan.samples_per_round(selected), len(selected), not args.no_progress)
    results: List[Result] = []
    try:
        failed = _run_cases(Runner(args.count, args.min_time, bar), bar, selected, plan, notes, results)
    except KeyboardInterrupt:
        bar.close()
        return _interrupted(args, results, len(selected), base, notes)
    finally:
        bar.close()
    try:
        summary = bench_summary.compare(results, args.min_time)
    except KeyboardInterrupt:
        return _interrupted(args, results, len(selected), base, notes)
    _write_report(args, results, base, notes, summary)
    return 1 if failed else 0


def _interrupted(args: argparse.Namespace, results: List[Result], total: int, base, notes: List[str]) -> int:
    """Ctrl-C: the report of the cases that finished (to -o FILE or stdout, as asked), then one line."""
    if results:
        notes.append("interrupted after %d of %d cases: this report holds the finished ones" % (len(results), total))
        _write_report(args, results, base, notes)
    where = " (%d finished cases written to %s)" % (len(results), args.output) if results and args.output else ""
    print("interrupted%s" % where, file=sys.stderr)
    return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(entry_point(PROG, main))
