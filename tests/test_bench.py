"""The benchmark runner (`python -m mpt.bench`), its statistics, the allocation counter and the case registry.

Everything here runs tiny cases with two short samples: the numbers are not looked at, only their shape.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mpt import keccak256
from mpt.bench import _alloc, cases
from mpt.bench.__main__ import main
from mpt.bench.stats import geomean, mann_whitney_u, median, quantile, spread_pct

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


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, out


# ------------------------------------------------------------------------------------------------ registry

def test_registry_names_are_geths_plus_insert():
    build_root = {"BuildRoot/%s/workers=%d" % (n, w) for n in ("100K", "1M") for w in (1, 2)} | {"BuildRootDask/1M"}
    assert set(cases.CASES) == set(GETH_NAMES) | {"Insert/1K", "Insert/10K", "Insert/100K"} | build_root


def test_default_run_leaves_out_100k():
    default = {c.name for c in cases.select()}
    assert "HashFixedSize/10K" in default and "Prove" in default
    assert not any("100K" in name for name in default)
    assert {c.name for c in cases.select(everything=True)} == set(cases.CASES)
    assert [c.name for c in cases.select("^HashFixedSize/100K$")] == ["HashFixedSize/100K"]


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
    case.check(case.setup())
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


def test_compare_adds_p_values(capsys, tmp_path):
    path = tmp_path / "old.json"
    assert run(capsys, "-b", TINY, *FAST, "--format", "json", "-o", str(path))[0] == 0
    code, out = run(capsys, "-b", TINY, *FAST, "--compare", str(path))
    assert code == 0
    assert "vs base" in out and "old.json" in out
    assert re.search(r"HashFixedSize/10 .*\(p=\d\.\d{3} n=2\)", out)
    assert re.search(r"^geomean .*(%|~)$", out, re.M)


def test_compare_rejects_a_bad_file(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2]")
    assert main(["-b", TINY, *FAST, "--compare", str(path)]) == 1


def test_no_match_is_an_error(capsys):
    assert main(["-b", "^NoSuchCase$", *FAST]) == 1


def test_peers_missing_ones_are_skipped(capsys, monkeypatch):
    real = cases.peers()
    fake = cases.Peer("not-a-peer", None, "not installed")
    monkeypatch.setattr(cases, "peers", lambda: [real[0], fake])
    code, out = run(capsys, "-b", r"^HashFixedSize/10$", *FAST, "--peers")
    assert code == 0
    assert "peer not-a-peer skipped: not installed" in out
    assert re.search(r"^Insert/10 ", out, re.M)


def test_peers_that_are_installed_agree_on_the_root():
    for peer in cases.peers():
        if peer.build is not None:
            case = cases.peer_case(peer, "10")
            case.check(case.setup())


# ------------------------------------------------------------------------------------------------ stats

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
