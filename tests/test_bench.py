"""The benchmark runner (`python -m mpt.bench`), its statistics, the allocation counter and the case registry.

Everything here runs tiny cases with two short samples: the numbers are not looked at, only their shape.
"""
import io
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mpt import keccak256
from mpt.bench import _alloc, cases, peers
from mpt.bench.__main__ import main
from mpt.bench.stats import best_seconds, geomean, mann_whitney_u, median, quantile, spread_pct
from mpt.errors import MissingExtraError

REPO = Path(__file__).resolve().parent.parent
TINY = r"^(HashFixedSize/10|VerifyRangeNoProof10)$"
FAST = ["--count", "2", "--min-time", "0.001", "--no-progress"]
GO_LINE = re.compile(r"^Benchmark\S+-1\s+\d+\s+[\d.]+ ns/op")

GETH_NAMES = (
    ["HashFixedSize/%s" % s for s in ("10", "100", "1K", "10K", "100K")]
    + ["CommitAfterHashFixedSize/%s" % s for s in ("10", "100", "1K", "10K", "100K")]
    + ["DeriveSha200/std_trie", "DeriveSha200/stack_trie", "Insert100K", "Prove", "VerifyProof"]
    + ["VerifyRangeProof%d" % n for n in (10, 100, 1000, 5000)]
    + ["VerifyRangeNoProof%d" % n for n in (10, 500, 1000)]
)

# cosmos/iavl PR #673's node benchmarks (per format) and the IAVL tree cases (mpt.iavl).
IAVL_NAMES = (
    ["IAVLNode/maxEncodedSize/%s" % f for f in ("vbyte", "legacy", "v1")]
    + ["IAVLNode/Encode/%s_integer/%s" % (s, f) for s in ("small", "large") for f in ("vbyte", "legacy", "v1")]
    + ["IAVLNode/Decode/%s_number/%s" % (s, f) for s in ("small", "large") for f in ("vbyte", "legacy", "v1")]
    + ["IAVLTree/Set10K", "IAVLTree/SaveVersion10K", "IAVLTree/TestTreeHash", "ICS23Prove/100K"]
    # Go iavl's tree workloads on a store (mpt.bench.cases.iavl_trees; the LevelDB ones need plyvel, a test extra).
    + ["IAVLTree/%s/%s" % (w, s) for w in ("Set10K+Save", "Set100K+Save", "Get100K", "Prune")
       for s in ("MemoryDB", "LevelDB")]
    # Export / import (the state-sync path), on the same stores.
    + ["IAVLTree/%s100K/%s" % (w, s) for w in ("Export", "Import") for s in ("MemoryDB", "LevelDB")]
)


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, out


# ------------------------------------------------------------------------------------------------ registry

# mpt.merkle's cases: go-square's BenchmarkHashAlternatives plus our root, proof and verify workloads.
MERKLE_NAMES = (["MerkleHashAlternatives/recursive", "MerkleHashAlternatives/iterative"]
                + ["MerkleRoot/%s" % s for s in ("100", "1K", "10K", "100K")] + ["MerkleProof", "MerkleVerify"])


# ICS23 verification (mpt.ics23) and a whole abci_query answer.
ICS23_NAMES = ["ICS23Verify/iavl", "ICS23Verify/iavl_absent", "ICS23Verify/simple", "AbciQueryVerify"]


# execution-specs' state root with and without mpt.compat.execution_specs.
SPEC_NAMES = ["SpecStateRoot/10K", "SpecStateRoot/10K-spec"] + ["SpecStateRoot/incremental/%s" % n
                                                                  for n in ("10K", "100K", "1M")]

# py-trie's HexaryTrie API on mpt (mpt.compat.pytrie), registered when py-trie 4 is installed.
PYTRIE_NAMES = ["PyTrie/Set10K+Root", "PyTrie/Get10K", "PyTrie/Squash10K", "PyTrie/Proof"]


def test_registry_names_are_geths_plus_insert():
    build_root = {"BuildRoot/%s/workers=%d" % (n, w) for n in ("100K", "1M") for w in (1, 2)} | {"BuildRootDask/1M"}
    two_tries = {"HashTwoTries/%s/%s" % (n, m) for n in ("10K", "100K") for m in ("serial", "threads")}
    assert set(cases.CASES) == (set(GETH_NAMES) | {"Insert/1K", "Insert/10K", "Insert/100K"} | set(MERKLE_NAMES)
                                | set(IAVL_NAMES) | set(ICS23_NAMES) | build_root | two_tries | set(SPEC_NAMES)
                                | set(PYTRIE_NAMES if cases.pytrie.MISSING is None else []))


def test_default_run_leaves_out_100k():
    default = {c.name for c in cases.select()}
    assert "HashFixedSize/10K" in default and "Prove" in default
    assert not any("100K" in name for name in default)
    assert {c.name for c in cases.select(everything=True)} == set(cases.CASES)
    assert [c.name for c in cases.select("^HashFixedSize/100K$")] == ["HashFixedSize/100K"]
    assert [c.name for c in cases.select("HashFixedSize/100K")] == ["HashFixedSize/100K"]


def smallest_per_group():
    best = {}
    for case in cases.CASES.values():
        if case.group == "BuildRootDask":
            continue        # a LocalCluster on 1M accounts: tests/test_dask.py checks build_root_dask instead
        if case.group not in best or case.size < best[case.group].size:
            best[case.group] = case
    return sorted(best.values(), key=lambda c: c.name)


@pytest.mark.parametrize("case", smallest_per_group(), ids=lambda c: c.name)
def test_every_case_checks_at_its_smallest_size(case):
    try:
        state = case.setup()
    except MissingExtraError as e:      # a case on an optional extra (the execution-specs peer): CI's own step
        pytest.skip(str(e))
    case.check(state)
    # and the timed op gives the same answer on another fresh state
    case.op(case.setup())


def test_check_catches_a_wrong_root():
    case = cases.get("HashFixedSize/10")
    t = case.setup()
    t.update(b"\x01" * 32, b"tampered")
    with pytest.raises(cases.CheckFailed):
        case.check(t)


# ------------------------------------------------------------------------------------------------ CLI

def test_list(capsys):
    code, out = run(capsys, "--list")
    assert code == 0
    names = [line.split()[0] for line in out.splitlines()]
    assert names == list(cases.CASES)
    assert "HashFixedSize/100K" in out and "-b/--all" in out


def test_help_through_python_m():
    proc = subprocess.run([sys.executable, "-m", "mpt.bench", "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for flag in ("-b REGEX", "--count", "--min-time", "--format", "--compare", "--peers", "--list", "--all"):
        assert flag in proc.stdout


def test_text_format(capsys):
    code, out = run(capsys, "-b", TINY, *FAST)
    assert code == 0
    for word in ("time/op", "B/op", "allocs/op", "geomean", "HashFixedSize/10", "VerifyRangeNoProof10",
                 "keccak ratio"):
        assert word in out
    assert re.search(r"HashFixedSize/10\s+[\d.]+(ns|µs|ms|s) ± [\d.]+%", out)


def test_json_format(capsys, tmp_path):
    path = tmp_path / "run.json"
    code, out = run(capsys, "-b", TINY, *FAST, "--format", "json", "-o", str(path))
    assert code == 0
    assert "time/op" in out  # the text table still goes to stdout
    doc = json.loads(path.read_text())
    assert doc["mpt_version"] and doc["machine"]["cores"] >= 1
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    assert set(by_name) == {"HashFixedSize/10", "VerifyRangeNoProof10"}
    for b in by_name.values():
        assert b["unit"] == "ns"
        assert len(b["samples"]) == 2 and all(s > 0 for s in b["samples"])
        assert b["median"] == pytest.approx(median(b["samples"]))
        assert b["bytes_per_op"] > 0 and b["allocs_per_op"] > 0
        assert isinstance(b["extra"], dict)
    extra = by_name["HashFixedSize/10"]["extra"]
    assert extra["keccak_ratio"] > 0 and extra["keccak_calls"] > 0


def test_go_format(capsys):
    code, out = run(capsys, "-b", TINY, *FAST, "--format", "go")
    assert code == 0
    lines = out.splitlines()
    for key in ("goos:", "goarch:", "pkg:", "cpu:"):
        assert any(line.startswith(key) for line in lines)
    bench_lines = [line for line in lines if line.startswith("Benchmark")]
    assert len(bench_lines) == 4
    for line in bench_lines:
        assert GO_LINE.match(line), line
        assert re.search(r"\d+ B/op\s+\d+ allocs/op$", line), line


def test_every_format_names_the_cpu_and_the_backends_it_ran_on(capsys, tmp_path):
    from mpt.bench.report import _cpu_model
    from mpt.core.runtime import keccak_backend, sha256_backend

    code, out = run(capsys, "-b", TINY, *FAST)
    assert code == 0
    assert "cpu: %s (" % _cpu_model() in out.splitlines()[0]
    assert "keccak backend: %s  sha256 backend: %s  hash threads: " % (keccak_backend(), sha256_backend()) in out
    code, out = run(capsys, "-b", TINY, *FAST, "--format", "go")
    assert {"keccak-backend: %s" % keccak_backend(), "sha256-backend: %s" % sha256_backend()} <= set(out.splitlines())
    path = tmp_path / "run.json"
    assert run(capsys, "-b", TINY, *FAST, "--format", "json", "-o", str(path))[0] == 0
    settings = json.loads(path.read_text())["settings"]
    assert (settings["keccak_backend"], settings["sha256_backend"]) == (keccak_backend(), sha256_backend())


def test_compare_adds_p_values(capsys, tmp_path):
    path = tmp_path / "old.json"
    assert run(capsys, "-b", TINY, *FAST, "--format", "json", "-o", str(path))[0] == 0
    code, out = run(capsys, "-b", TINY, *FAST, "--compare", str(path))
    assert code == 0
    assert "vs base" in out and "old.json" in out
    assert re.search(r"HashFixedSize/10 .*\(p=\d\.\d{3} n=2\)", out)
    assert re.search(r"^geomean .*(%|~)$", out, re.M)


def bench_cli(*argv, timeout=120):
    return subprocess.run([sys.executable, "-m", "mpt.bench", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_compare_rejects_a_bad_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2]")
    proc = bench_cli("-b", TINY, *FAST, "--compare", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines()[-1] == (
        "python -m mpt.bench: error: --compare: %s is not a JSON report of python -m mpt.bench --format json "
        '(no "benchmarks" list)' % path)


def test_compare_names_a_file_that_is_not_json():
    """A README handed to --compare: said before any case runs, as a usage error naming the file, no traceback."""
    proc = bench_cli("-b", TINY, *FAST, "--compare", "README.md")
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("python -m mpt.bench: error: --compare: README.md is not a JSON report of "
                           "python -m mpt.bench --format json (not JSON: Expecting value: line 1 column 1")


def test_compare_names_a_missing_file(tmp_path):
    proc = bench_cli("-b", TINY, *FAST, "--compare", str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == ("python -m mpt.bench: error: --compare: cannot read %s: No such file "
                                            "or directory" % (tmp_path / "missing.json"))


@pytest.mark.parametrize("where, why", [
    ("missing/dir/out.json", "directory {tmp}/missing/dir does not exist"),
    ("", "{tmp} is a directory"),
])
def test_unwritable_output_is_refused_before_running(tmp_path, where, why):
    """-o is checked before the first case runs (a long run must not end in a write error); nothing is left behind."""
    target = tmp_path / where
    proc = bench_cli("-b", TINY, *FAST, "-o", str(target))
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "python -m mpt.bench: error: -o/--output: " + why.format(tmp=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_output_check_leaves_no_file_and_keeps_an_existing_one(tmp_path):
    from mpt.bench.__main__ import check_output_path

    new = tmp_path / "new.json"
    assert check_output_path(str(new)) is None and not new.exists()
    old = tmp_path / "old.json"
    old.write_text("kept")
    assert check_output_path(str(old)) is None and old.read_text() == "kept"


@pytest.mark.parametrize("argv, message", [
    (["--hash-threads", "100000"], "--hash-threads: set_hash_threads(100000): at most 256 hashing threads"),
    (["--hash-threads", "0"], "--hash-threads must be at least 1"),
    (["--count", "0"], "--count must be at least 1"),
])
def test_hashing_options_name_themselves(argv, message):
    proc = bench_cli("-b", TINY, *FAST, *argv)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "python -m mpt.bench: error: " + message


def test_no_match_is_an_error(capsys):
    assert main(["-b", "^NoSuchCase$", *FAST]) == 1


def test_peers_missing_ones_are_skipped_with_one_install_hint(capsys, monkeypatch):
    real = cases.peers()
    fakes = [cases.Peer("not-a-peer", None, "not installed"), cases.Peer("other", None, "needs Python >= 3.11")]
    monkeypatch.setattr(peers, "peers", lambda: [real[0], *fakes])
    code, out = run(capsys, "-b", "Insert/1K", *FAST, "--peers")
    assert code == 0
    notes = [line for line in out.splitlines() if line.startswith("note:")]
    assert notes == ["note: peers skipped: not-a-peer (not installed); other (needs Python >= 3.11); install them "
                     "with pip install 'mpt-engine[peers]'"]
    assert out.count("pip install") == 1


def _fake_peer(name, calls, mpt_build):
    """A peer (mpt's own build under another name) whose op records its calls."""

    def build(keys, values):
        calls.append(name)
        return mpt_build(keys, values)

    return cases.Peer(name, build, detail="%s (test double)" % name)


def test_peers_share_the_main_measurement_and_run_only_listed_cases(capsys, monkeypatch, tmp_path):
    calls = []
    real = cases.peers()
    fake = _fake_peer("fake-peer", calls, real[0].build)
    monkeypatch.setattr(peers, "peers", lambda: [real[0], fake])
    path = tmp_path / "run.json"
    code, out = run(capsys, "-b", r"(HashFixedSize/10|Insert/1K)", *FAST, "--peers", "--format", "json",
                    "-o", str(path))
    assert code == 0
    # Rows of the peer table are listed case names only (no Insert/10 from HashFixedSize/10).
    listed = set(cases.CASES)
    peer_table = out[out.index("fake-peer"):out.index("peers: insert all")]
    rows = [line.split()[0] for line in peer_table.splitlines()[1:] if line.strip()]
    assert rows == ["Insert/1K"] and set(rows) <= listed
    assert "Insert/10 " not in out
    doc = json.loads(path.read_text())
    main_row = next(b for b in doc["benchmarks"] if b["name"] == "Insert/1K")
    by_impl = {p["extra"]["impl"]: p for p in doc["peers"]}
    assert set(by_impl) == {"mpt", "fake-peer"}
    # mpt is measured once: its peer entry is the main table's result, sample for sample.
    assert by_impl["mpt"]["samples"] == main_row["samples"]
    assert {p["name"] for p in doc["peers"]} == {"Insert/1K"}
    assert by_impl["fake-peer"]["extra"]["ratio_vs_mpt"] == pytest.approx(
        by_impl["fake-peer"]["median"] / main_row["median"])
    assert len(by_impl["fake-peer"]["samples"]) == 2
    assert calls and set(calls) == {"fake-peer"}        # check, calibration and the samples ran the peer
    # The peer's text row uses the same mpt median as the main table.
    mpt_cell = re.search(r"^Insert/1K\s+(\S+) ±", out, re.M).group(1)
    assert re.search(r"^Insert/1K\s+%s ± .*\(\d+\.\d×\)" % re.escape(mpt_cell), peer_table, re.M)


def test_peers_without_an_insert_case_say_so(capsys):
    code, out = run(capsys, "-b", "HashFixedSize/10", *FAST, "--peers")
    assert code == 0
    assert "note: --peers compares the Insert/N and MerkleRoot/N cases; none was selected" in out
    assert "py-trie" not in out.split("note:")[0]


# ------------------------------------------------------------------------------------------------ -b matching

@pytest.mark.parametrize("pattern, names", [
    ("HashFixedSize", ["HashFixedSize/%s" % s for s in ("10", "100", "1K", "10K", "100K")]),
    ("HashFixedSize/1K", ["HashFixedSize/1K"]),
    ("HashFixedSize/10", ["HashFixedSize/10"]),
    ("Insert/", ["Insert/1K", "Insert/10K", "Insert/100K"]),
    ("Insert", ["Insert/1K", "Insert/10K", "Insert/100K"]),
    ("Insert100K", ["Insert100K"]),
    ("DeriveSha200/stack.*", ["DeriveSha200/stack_trie"]),
    ("VerifyRangeProof1.*", ["VerifyRangeProof10", "VerifyRangeProof100", "VerifyRangeProof1000"]),
    ("(HashFixedSize/10|Prove)", ["HashFixedSize/10", "Prove"]),
    ("Hash", []),
])
def test_bench_pattern_is_anchored_per_level(pattern, names):
    assert [c.name for c in cases.select(pattern)] == names


def test_search_flag_keeps_substring_matching(capsys):
    assert [c.name for c in cases.select("HashFixedSize/10$", search=True)] == [
        "HashFixedSize/10", "CommitAfterHashFixedSize/10"]
    code, out = run(capsys, "-b", "HashFixedSize/10$", "--search", *FAST)
    assert code == 0
    assert re.search(r"^CommitAfterHashFixedSize/10 ", out, re.M) and re.search(r"^HashFixedSize/10 ", out, re.M)
    code, out = run(capsys, "-b", "HashFixedSize/10", *FAST)
    assert code == 0
    assert "CommitAfter" not in out


def test_no_match_suggests_widening(capsys):
    assert main(["-b", "VerifyRange", *FAST]) == 1
    err = capsys.readouterr().err
    assert "no case matches 'VerifyRange'" in err and "'VerifyRange.*'" in err and "--search" in err


def test_split_pattern_like_go():
    assert cases.split_pattern("a/b") == ["a", "b"]
    assert cases.split_pattern(r"a\/b/[/]/(c/d)/") == [r"a\/b", "[/]", "(c/d)", ""]


# ------------------------------------------------------------------------------------------------ progress

def test_progress_without_a_terminal_is_one_line_per_case():
    # stderr is a pipe here: no bar frames, one line per finished case, as it finishes.
    proc = subprocess.run([sys.executable, "-m", "mpt.bench", "-b", TINY, "--count", "2", "--min-time", "0.001"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and "\r" not in proc.stderr
    assert re.match(r"^\[1/2\] HashFixedSize/10 [\d.]+(ns|µs|ms|s) ± [\d.]+%$", lines[0]), lines
    assert re.match(r"^\[2/2\] VerifyRangeNoProof10 [\d.]+(ns|µs|ms|s) ± [\d.]+%$", lines[1]), lines


def test_no_progress_is_silent():
    proc = subprocess.run([sys.executable, "-m", "mpt.bench", "-b", TINY, *FAST], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == ""


def test_progress_on_a_terminal_is_a_bar():
    from mpt.bench.runner import BarProgress, LineProgress, progress

    class Tty:
        def isatty(self):
            return True

        def write(self, s):
            pass

        def flush(self):
            pass

    bar = progress(10, 2, True, Tty())
    assert isinstance(bar, BarProgress)
    bar.close()
    assert isinstance(progress(10, 2, True, io.StringIO()), LineProgress)     # not a terminal


def test_peers_that_are_installed_agree_on_the_root():
    for peer in cases.peers():
        if peer.build is not None:
            case = cases.peer_case(peer, "1K")
            case.check(case.setup())


# ------------------------------------------------------------------------------------------------ stats

def test_best_seconds_is_the_least_of_its_calls(monkeypatch):
    # A clock that makes the calls last 5, 2 and 7 seconds: the least is what the floor scripts quote.
    import mpt.bench.stats as stats

    ticks = iter([0.0, 5.0, 10.0, 12.0, 20.0, 27.0])
    monkeypatch.setattr(stats.time, "perf_counter", lambda: next(ticks))
    calls = []
    assert best_seconds(lambda: calls.append(1), 3) == 2.0
    assert len(calls) == 3


def test_mann_whitney_against_scipy_values():
    # Reference p-values from scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method=...).
    assert mann_whitney_u([1, 2, 3], [4, 5, 6]) == (0.0, pytest.approx(0.1))
    x = list(range(10))
    assert mann_whitney_u(x, [v + 10 for v in x])[1] == pytest.approx(1.082508822446903e-05, rel=1e-12)
    x = [1.1, 2.3, 3.2, 4.5, 5.1, 6.6, 7.0, 8.4, 9.9, 10.2]
    y = [2.0, 3.9, 5.5, 6.1, 7.7, 8.8, 9.1, 11.3, 12.0, 13.4]
    u, p = mann_whitney_u(x, y, method="exact")
    assert u == 33.0 and p == pytest.approx(0.21756262313537858, rel=1e-12)
    assert mann_whitney_u(x, y, method="asymptotic")[1] == pytest.approx(0.21229383619233155, rel=1e-12)
    # ties: normal approximation with tie correction
    assert mann_whitney_u([1, 2, 2, 3, 3, 3, 4], [3, 4, 4, 5, 5, 6]) == (3.5, pytest.approx(0.012999854364387305))
    # symmetric in its arguments, and identical samples are no evidence
    assert mann_whitney_u(y, x)[1] == pytest.approx(mann_whitney_u(x, y)[1])
    assert mann_whitney_u([5, 5, 5], [5, 5, 5])[1] == 1.0
    with pytest.raises(ValueError):
        mann_whitney_u([1, 1], [1, 2], method="exact")


def test_summary_statistics():
    assert median([3, 1, 2, 4]) == 2.5
    assert quantile([1, 2, 3, 4, 5], 0.25) == 2.0
    assert geomean([1, 100]) == pytest.approx(10.0)
    assert geomean([]) is None and geomean([0.0]) is None
    # 150 is an outlier beyond the Tukey fence and is dropped; the rest strays at most 2.5 from 100.5
    assert spread_pct([100, 101, 99, 102, 98, 150]) == pytest.approx(2.5 / 100.5 * 100)
    assert spread_pct([7.0]) == 0.0


# ------------------------------------------------------------------------------------------------ allocator hook

def test_alloc_counter_counts_a_known_allocation():
    with _alloc.count_allocs() as c:
        buf = bytearray(10000)
    assert c.bytes >= 10000 and c.allocs >= 1
    assert not _alloc.active()
    del buf
    _, nbytes, nallocs = _alloc.measure(lambda: [bytes(1000) for _ in range(100)])
    assert nbytes >= 100_000 and nallocs >= 100


def test_alloc_counter_is_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with _alloc.count_allocs():
            1 / 0
    assert not _alloc.active()
    with pytest.raises(ZeroDivisionError):
        _alloc.measure(lambda: 1 / 0)
    assert not _alloc.active()


def test_alloc_counter_is_not_reentrant():
    _alloc.start()
    try:
        with pytest.raises(RuntimeError):
            _alloc.start()
    finally:
        _alloc.stop()
    with pytest.raises(RuntimeError):
        _alloc.stop()


def test_alloc_counter_steps_aside_for_a_hook_installed_over_it():
    tracemalloc = pytest.importorskip("tracemalloc")
    if tracemalloc.is_tracing():
        pytest.skip("tracemalloc already on")
    _alloc.start()
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError):
            _alloc.stop()               # leaves ours beneath tracemalloc's hook
        with pytest.raises(RuntimeError):
            _alloc.start()              # refuses: would make the chain call itself
    finally:
        tracemalloc.stop()              # puts ours back on top
    with _alloc.count_allocs() as c:    # counting works again, and stops cleanly
        bytearray(5000)
    assert c.bytes >= 5000 and not _alloc.active()


def test_keccak_floor():
    blobs = [b"", b"abc", bytes(range(200)) * 3]
    assert _alloc.keccak_floor(blobs, 3) == keccak256(blobs[-1])
    assert _alloc.keccak_floor([]) == b""
    with pytest.raises(TypeError):
        _alloc.keccak_floor(["not bytes"])
    assert _alloc.keccak_floor(blobs, 0) == b""


def test_codec_floors_return_what_a_codec_must():
    from mpt.iavl import LeafNode, decode_node

    data = LeafNode(b"key", b"value", 3).to_bytes("vbyte")
    assert _alloc.call_floor(data, "vbyte", None) is None
    node = _alloc.decode_floor(data, "vbyte", None)
    real = decode_node(data, "vbyte", None)
    # The floor's node holds what the decoder's does (the bench leaf's key and value), without parsing.
    assert (node.key, node.value) == (data[:3], data[-5:]) and (real.key, real.value) == (b"key", b"value")
    assert len(node.key) == len(real.key) and len(node.value) == len(real.value)
    floor = _alloc.FloorNode(b"key", b"value", 3, len(data))
    assert floor.call("vbyte") is None
    assert len(floor.to_bytes("vbyte")) == len(data) and floor.to_bytes("vbyte") is not floor.to_bytes("vbyte")
    with pytest.raises(ValueError):
        _alloc.decode_floor(b"short", "vbyte", None)
    with pytest.raises(TypeError):
        _alloc.decode_floor(bytearray(data), "vbyte", None)
    with pytest.raises(ValueError):
        _alloc.FloorNode(b"", b"", 0, -1)


def test_peer_floors_codec_part_prints_each_op_beside_its_floors():
    """scripts/peer_floors.py's codec floors (docs/performance.md quotes them), two runs of each."""
    code = ("import sys; sys.path.insert(0, 'scripts'); import peer_floors; peer_floors.codec_floors(2)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    decode, encode = proc.stdout.splitlines()
    assert decode.startswith("IAVLNode/Decode/small_number/vbyte: decode_node ") and "key and value bytes" in decode
    assert encode.startswith("IAVLNode/Encode/small_integer/vbyte: leaf.to_bytes ") and "(14 bytes)" in encode


def test_walk_floor_reads_every_leaf_of_the_unhashed_nodes():
    from mpt import Trie
    from mpt.ethereum.node import FullNode, ShortNode, ValueNode

    def touched(b):
        return b[0] + b[len(b) // 2] + b[-1] if b else 0

    def expected(n):
        # What the walk reads: each leaf's key nibbles and value; 1 per branch value slot; hashed nodes skipped.
        if isinstance(n, FullNode):
            return sum(expected(c) for c in n.children[:16] if c is not None and c.hash is None) + (
                n.children[16] is not None)
        if isinstance(n, ShortNode):
            if isinstance(n.val, ValueNode):
                return touched(n.key) + touched(n.val.value)
            return touched(n.key) + (expected(n.val) if n.val.hash is None else 0)
        return 0

    rng = random.Random(5)
    t = Trie()
    for _ in range(300):
        t[rng.randbytes(rng.choice([3, 32]))] = rng.randbytes(rng.choice([1, 40, 120]))
    want = expected(t.root_node)
    assert want > 0 and _alloc.walk_floor(t.root_node) == want
    t.hash()                            # now only the nodes embedded in their parents are left to walk
    assert _alloc.walk_floor(t.root_node) == expected(t.root_node) < want
    with pytest.raises(TypeError):
        _alloc.walk_floor(b"not a node")


# ------------------------------------------------------------------------------------------------ merkle

def test_merkle_cases_report_sha_ratio_and_constant_allocations(capsys):
    code, out = run(capsys, "-b", "^MerkleRoot/(100|1K)$", "--format", "json", *FAST)
    assert code == 0
    doc = json.loads(out)
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    assert set(by_name) == {"MerkleRoot/100", "MerkleRoot/1K"}
    for b in by_name.values():
        assert b["extra"]["sha_ratio"] > 0 and b["extra"]["sha_ratio_one_at_a_time"] > 0
        assert b["extra"]["sha_backend"] in ("scalar", "avx2", "shani")
    # 2n - 1 preimages: n leaves and n - 1 inner nodes.
    assert by_name["MerkleRoot/1K"]["extra"]["sha_calls"] == 1999
    # O(1) allocations per root: the same count for 100 and 1000 leaves (pooled scratch, no object per node).
    assert by_name["MerkleRoot/100"]["allocs_per_op"] == by_name["MerkleRoot/1K"]["allocs_per_op"]


def test_merkle_root_on_hash_threads(capsys):
    """--hash-threads N reaches mpt.merkle: MerkleRoot/10K (above 2048 leaves) runs its chunks on N OpenMP threads,
    its root checked against the reference, with the same O(1) allocations."""
    from mpt.core.runtime import get_hash_threads, set_hash_threads

    old = get_hash_threads()
    try:
        code, out = run(capsys, "-b", "^MerkleRoot/(100|10K)$", "--hash-threads", "2", "--format", "json", *FAST)
    finally:
        set_hash_threads(old)
    assert code == 0
    doc = json.loads(out)
    assert doc["settings"]["hash_threads"] == 2
    by_name = {b["name"]: b for b in doc["benchmarks"]}
    assert by_name["MerkleRoot/10K"]["allocs_per_op"] == by_name["MerkleRoot/100"]["allocs_per_op"]


def test_merkle_peers(capsys):
    code, out = run(capsys, "-b", "^MerkleRoot/100$", "--peers", *FAST)
    assert code == 0
    assert "hashlib" in out and "MerkleRoot/100" in out
    assert "sha ratio" in out


def test_hash_layout_script_builds_one_root_in_every_layout():
    """scripts/hash_layout.py (docs/performance.md, issue 15's target 3) hashes the same accounts in three memory
    layouts; it exits non-zero when the layouts give different roots."""
    proc = subprocess.run([sys.executable, "scripts/hash_layout.py", "300", "--repeat", "1", "--backend", "scalar"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("300 accounts, scalar Keccak alone")
    assert [line.split("  ")[0] for line in lines[1:]] == [
        "insertion order (the benchmark)", "key order", "key order, values copied in that order"]



def test_arena_costs_script_times_records_against_node_objects():
    """scripts/arena_costs.py (docs/contributing/performance_notes.md, session 17) times copy() of a fresh trie,
    the copy's first and second update, iteration and proofs on records and on node objects, and the switch to
    node objects; it exits non-zero when they disagree."""
    proc = subprocess.run([sys.executable, "scripts/arena_costs.py", "300", "--repeat", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "300 accounts, best of 1"
    assert [line.rsplit(None, 2)[0].strip() for line in lines[1:]] == [
        "copy()", "first update of the copy", "second update", "items() pass, records", "1,000 proofs, records",
        "items() pass, node objects", "1,000 proofs, node objects", "records -> node objects"]

# ------------------------------------------------------------------------------------------------ issue 30

def test_report_ends_with_faster_than_what(capsys, tmp_path):
    """The default report says what mpt is faster than (peers that take seconds) and how to get the Go numbers."""
    path = tmp_path / "run.json"
    code, out = run(capsys, "-b", "(MerkleRoot/1K|ICS23Verify/iavl)", *FAST, "--format", "json", "-o", str(path))
    assert code == 0
    tail = out[out.index("faster than what?"):]
    rows = {line.split()[0]: line for line in tail.splitlines()[1:3]}
    assert set(rows) == {"MerkleRoot/1K", "ICS23Verify/iavl"}
    assert "hashlib.sha256 loop" in rows["MerkleRoot/1K"] and "pure-Python ICS23 verifier" in rows["ICS23Verify/iavl"]
    assert all(re.search(r"\d(\.\d)?× (faster|slower)$", line) for line in rows.values())
    assert "docs/performance.md" in tail and "--peers" in tail
    assert " ".join(out.split()).endswith("(it prints how long that takes first).")
    summary = json.loads(path.read_text())["summary"]
    assert [s["case"] for s in summary] == ["MerkleRoot/1K", "ICS23Verify/iavl"]
    assert all(s["ratio"] == pytest.approx(s["peer_ns"] / s["mpt_ns"]) for s in summary)


def test_summary_names_a_missing_peer_and_reuses_peers_results(capsys, monkeypatch, tmp_path):
    from mpt.bench import summary

    real = cases.peers()
    monkeypatch.setattr(peers, "peers", lambda: [real[0], cases.Peer("py-trie", None, "not installed")])
    code, out = run(capsys, "-b", "Insert/1K", *FAST)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("  Insert/1K"))
    assert "py-trie HexaryTrie" in line and "not run: py-trie not installed (pip install 'mpt-engine[peers]')" in line
    # With --peers, the peer measured beside the case (alternating samples) is the one the summary quotes.
    fake = _fake_peer("py-trie", [], real[0].build)
    monkeypatch.setattr(peers, "peers", lambda: [real[0], fake])
    code, out = run(capsys, "-b", "Insert/1K", *FAST, "--peers", "--format", "json", "-o", str(tmp_path / "r.json"))
    assert code == 0 and "the peers ran" not in out
    doc = json.loads((tmp_path / "r.json").read_text())
    (quoted,) = doc["summary"]
    measured = next(p for p in doc["peers"] if p["extra"]["impl"] == "py-trie")
    assert quoted["alternating"] and quoted["peer_ns"] == measured["median"]
    assert [c.case for c in summary.QUICK_PEERS] == ["MerkleRoot/1K", "Insert/1K", "ICS23Verify/iavl"]
    assert all(cases.get(c.case).small for c in summary.QUICK_PEERS)     # all in the default run


def test_peers_print_an_estimate_first(capsys, monkeypatch):
    import mpt.bench.__main__ as bench_main

    real = cases.peers()
    monkeypatch.setattr(peers, "peers", lambda: [real[0], cases.Peer("py-trie", real[0].build),
                                                 cases.Peer("execution-specs", real[0].build)])
    monkeypatch.setattr(bench_main, "_run_cases", lambda *args: 0)        # the estimate, not the run
    monkeypatch.setattr(bench_main.bench_summary, "compare", lambda *args: [])
    assert main(["-b", "Insert", "--peers", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err == "python -m mpt.bench: the peers add about 9 minutes to this run (their times on a 2-vCPU AMD EPYC; " \
                  "progress on stderr)\n"
    assert main(["-b", "Insert/1K", "--peers", "--no-progress"]) == 0     # seconds: nothing to announce
    assert capsys.readouterr().err == ""


def test_peer_reference_times_are_the_reference_runs():
    doc = json.loads((REPO / "docs" / "bench_reference.json").read_text())
    for p in doc["peers"]:
        impl = p["extra"]["impl"]
        if impl == "mpt":
            continue
        assert peers.SECONDS_PER_OP[(impl, p["name"])] == pytest.approx(p["median"] / 1e9, rel=0.1), (impl, p["name"])
    assert {k for k in peers.SECONDS_PER_OP if k[1].endswith("/100K")} == {
        ("py-trie", "Insert/100K"), ("execution-specs", "Insert/100K")}


def test_slow_peer_samples_get_progress_lines(capsys):
    from mpt.bench.runner import LineProgress

    bar = LineProgress(3)
    bar.peer_sample("Insert/100K", "py-trie", 2, 10, 33.04)
    bar.peer_sample("Insert/1K", "py-trie", 2, 10, 0.13)          # quick ones stay quiet
    assert capsys.readouterr().err == "[1/3] Insert/100K: py-trie sample 2/10 took 33.0 s\n"


def test_ctrl_c_writes_the_finished_cases(capsys, monkeypatch, tmp_path):
    from mpt.bench.runner import Runner

    real_run_case = Runner.run_case

    def run_case(self, case, *args, **kwargs):
        if case.name == "VerifyRangeNoProof10":
            raise KeyboardInterrupt
        return real_run_case(self, case, *args, **kwargs)

    monkeypatch.setattr(Runner, "run_case", run_case)
    path = tmp_path / "run.json"
    assert main(["-b", TINY, *FAST, "--format", "json", "-o", str(path)]) == 130
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == "interrupted (1 finished cases written to %s)" % path
    doc = json.loads(path.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["HashFixedSize/10"]
    assert doc["notes"] == ["interrupted after 1 of 2 cases: this report holds the finished ones"]
    # Without -o the finished cases go to stdout, the text table as always.
    assert main(["-b", TINY, *FAST]) == 130
    captured = capsys.readouterr()
    assert "HashFixedSize/10" in captured.out and "note: interrupted after 1 of 2 cases" in captured.out
    assert captured.err == "interrupted\n"


def test_ctrl_c_in_a_subprocess_is_one_line_and_130(tmp_path):
    import os
    import signal
    import time

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    path = tmp_path / "run.json"
    pattern = r"(HashFixedSize/10|IAVLTree/Set100K\+Save/MemoryDB)"      # a quick case, then a slow one
    p = subprocess.Popen([sys.executable, "-m", "mpt.bench", "-b", pattern,
                          "--count", "20", "--min-time", "0.01", "--format", "json", "-o", str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = p.stderr.readline().decode()
        lines.append(line)
        if line.startswith("[1/2]") or not line:
            break
    assert lines[-1].startswith("[1/2] HashFixedSize/10"), lines
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err.decode()
    assert err.decode().splitlines()[-1] == "interrupted (1 finished cases written to %s)" % path
    assert [b["name"] for b in json.loads(path.read_text())["benchmarks"]] == ["HashFixedSize/10"]
