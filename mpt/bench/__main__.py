"""``python -m mpt.bench``: go-ethereum's trie benchmarks on the same data, reported like ``go test -bench``.

Run ``python -m mpt.bench --help`` for the options. The cases live in :mod:`mpt.bench.cases` and the workloads in
:mod:`mpt.bench.workloads`; the "Benchmarks" page of the documentation (docs/benchmarks.rst) describes both and
geth's numbers on this kind of machine.

How a case is measured:

1. ``check``: the case runs once on a fresh state and its result must be right (the reference root, ...).
2. calibration: one more op gives its rough cost; a sample then makes enough op calls to last ``--min-time``.
3. ``--count`` samples: stateful cases (hash, commit) build a fresh state right before each op call and time
   that call alone (geth's StopTimer/StartTimer around its setup, asv's setup per sample); the others reuse
   one state. A full garbage collection precedes each sample; the collector stays on while the
   clock runs (Python users pay for it too). time/op = sample time / (calls * ops_per_sample).
4. B/op and allocs/op: one op under the allocator hook of :mod:`mpt.bench._alloc` (PyMem + PyObject domains),
   divided by ops_per_sample. Like Go's ``-benchmem``: allocations and bytes requested, frees not counted.
5. HashFixedSize also reports ``keccak_ratio``: hash() time / time of our C keccak alone over the same node
   encodings, in a C loop (samples interleaved with the hash samples).
6. The Merkle cases (mpt.merkle) report ``sha_ratio`` the same way: root time / time of our C SHA-256 alone
   over the same preimages (0x00||leaf, 0x01||left||right), batched as root() hashes them, and one at a time.
7. With ``--peers``, each selected ``Insert/N`` case times the Python peers (each ``MerkleRoot/N`` case a hashlib loop and
   pymerkle) on the same workload inside its own sample loop (mpt, then each peer, per sample): mpt's row is one measurement, shared by the main table and the
   peer ratios.

Progress goes to stderr: a bar on a terminal, otherwise (a log, CI) one line per finished case.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, TextIO

from mpt.bench import cases as bench_cases
from mpt.hasher import get_hash_threads, keccak_backend, set_hash_threads, set_keccak_backend
from mpt._sha256 import sha256_backend
from mpt._sha256.binding import _floor as _sha256_floor

# Every Keccak backend name --keccak-backend knows; which ones run here is mpt.hasher.keccak_backends().
ALL_KECCAK_BACKENDS = ("scalar", "avx2", "avx512", "avx2x8")
from mpt.bench.stats import SIGNIFICANCE_LEVEL, SPREAD_METHOD, geomean, mann_whitney_u, median, spread_pct

try:
    from mpt.bench import _alloc
except ImportError:  # the extension is not built: report time only
    _alloc = None

DEFAULT_COUNT = 10
DEFAULT_MIN_TIME = 0.1
MAX_CALLS_PER_SAMPLE = 1_000_000
MAX_STATES_PER_SAMPLE = 20_000   # stateful cases build this many fresh states per sample at most


# ---------------------------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Result:
    """What one case measured: per-op times in ns, one per sample."""

    name: str
    samples: List[float]
    iterations: List[int]
    bytes_per_op: Optional[float] = None
    allocs_per_op: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    # --peers: the peers' Results on this case's workload, sampled alternating with this one (not in to_json:
    # the report lists them under "peers").
    peer_results: Dict[str, "Result"] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return median(self.samples)

    @property
    def spread(self) -> float:
        return spread_pct(self.samples)

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name,
            "unit": "ns",
            "samples": self.samples,
            "iterations": self.iterations,
            "median": self.median,
            "spread_pct": self.spread,
            "bytes_per_op": self.bytes_per_op,
            "allocs_per_op": self.allocs_per_op,
            "extra": self.extra,
        }


class _NoProgress:
    """Stands in for tqdm when the bar is off (--no-progress)."""

    def update(self, n=1):
        pass

    def set_description_str(self, s, refresh=True):
        pass

    def write(self, s):
        print(s, file=sys.stderr)

    def case_done(self, line):
        pass

    def close(self):
        pass


class _LineProgress(_NoProgress):
    """Progress for a stderr that is not a terminal (a log file, CI): one line per finished case, so a long run
    is never silent and the log holds no carriage-return bar frames."""

    def __init__(self, total_cases: int):
        self.total_cases = total_cases
        self.done = 0

    def case_done(self, line):
        self.done += 1
        print("[%d/%d] %s" % (self.done, self.total_cases, line), file=sys.stderr, flush=True)


class _BarProgress:
    """tqdm's bar on a terminal (the bar itself shows each case, so nothing is printed per case)."""

    def __init__(self, bar):
        self.bar = bar

    def update(self, n=1):
        self.bar.update(n)

    def set_description_str(self, s, refresh=True):
        self.bar.set_description_str(s, refresh)

    def write(self, s):
        self.bar.write(s, file=sys.stderr)

    def case_done(self, line):
        pass

    def close(self):
        self.bar.close()


def _progress(total: int, total_cases: int, enabled: bool, stream=None):
    """The progress reporter: nothing with enabled False, a tqdm bar when stream (stderr) is a terminal and
    tqdm is installed, else one line per finished case."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        return _NoProgress()
    isatty = getattr(stream, "isatty", None)
    if not (isatty is not None and isatty()):
        return _LineProgress(total_cases)
    try:
        import tqdm as tqdm_module
    except ImportError:
        return _LineProgress(total_cases)
    # No monitor thread: it would allocate (and run) while we count allocations and time.
    tqdm_module.tqdm.monitor_interval = 0
    return _BarProgress(tqdm_module.tqdm(total=total, file=stream, unit="sample", dynamic_ncols=True,
                                         leave=False))


class Runner:
    def __init__(self, count: int, min_time: float, bar):
        self.count = count
        self.min_time_ns = min_time * 1e9
        self.bar = bar

    def _calls(self, case, state) -> int:
        """Op calls per sample so that a sample lasts at least min_time (at least 1)."""
        s = case.setup() if case.stateful else state
        gc.collect()
        t0 = time.perf_counter_ns()
        case.op(s)
        elapsed = max(time.perf_counter_ns() - t0, 1)
        cap = MAX_STATES_PER_SAMPLE if case.stateful else MAX_CALLS_PER_SAMPLE
        return max(1, min(cap, math.ceil(self.min_time_ns / elapsed)))

    @staticmethod
    def _time_calls(case, state, calls: int) -> int:
        op = case.op
        if case.stateful:
            # geth's b.StopTimer() / b.StartTimer() around each setup (and asv's setup before each sample): every
            # op runs on a state built just before it, and only the op is timed. States built all at once before
            # the clock started had left the cache by their turn (CommitAfterHashFixedSize/100: 49 against 10 us
            # per op; docs/performance.md); a commit or hash right after building the trie is the case geth and
            # users time. The clock reads around each op add about 60 ns to it (3% of the smallest,
            # CommitAfterHashFixedSize/10).
            setup = case.setup
            gc.collect()
            elapsed = 0
            for _ in range(calls):
                s = setup()
                t0 = time.perf_counter_ns()
                op(s)
                elapsed += time.perf_counter_ns() - t0
            return elapsed
        gc.collect()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            op(state)
        return time.perf_counter_ns() - t0

    @staticmethod
    def _allocs(case, state):
        if _alloc is None:
            return None, None
        s = case.setup() if case.stateful else state
        gc.collect()
        _, nbytes, nallocs = _alloc.measure(case.op, s)
        return nbytes / case.ops_per_sample, nallocs / case.ops_per_sample

    def run_case(self, case, companions: Sequence[Any] = (), notes: Optional[List[str]] = None) -> Result:
        """Measure case. companions are (peer, peer case) pairs timed on the same workload, one sample each
        after every sample of case (the --peers comparison); their Results land in
        ``result.peer_results`` by peer name, with ``extra["ratio_vs_mpt"]``. A companion that fails its check is
        left out with a note."""
        self.bar.set_description_str("%s (check)" % case.name)
        case.check(case.setup())
        state = None if case.stateful else case.setup()
        calls = self._calls(case, state)
        others = []
        for peer, peer_case in companions:
            self.bar.set_description_str("%s: %s (check)" % (case.name, peer.name))
            try:
                peer_case.check(peer_case.setup())
            except Exception as e:  # noqa: BLE001 - a broken peer is a note, never an error
                if notes is not None:
                    notes.append("peer %s skipped at %s: %s: %s" % (peer.name, case.name, type(e).__name__, e))
                self.bar.update(self.count)
                continue
            peer_state = None if peer_case.stateful else peer_case.setup()
            others.append((peer, peer_case, peer_state, self._calls(peer_case, peer_state),
                           Result(case.name, [], [], extra={"impl": peer.name, "detail": peer.detail})))
        blobs = None
        floor_samples: List[float] = []
        scalar_floor_samples: List[float] = []
        backend = keccak_backend()
        if case.keccak_blobs is not None and _alloc is not None:
            blobs = case.keccak_blobs(case.setup())
        sha_messages = case.sha256_messages(case.setup()) if case.sha256_messages is not None else None
        sha_samples: List[float] = []
        sha_single_samples: List[float] = []
        self.bar.set_description_str(case.name)
        samples, iterations = [], []
        for _ in range(self.count):
            elapsed = self._time_calls(case, state, calls)
            samples.append(elapsed / (calls * case.ops_per_sample))
            iterations.append(calls * case.ops_per_sample)
            if blobs is not None:
                # Two floors: Keccak alone on the backend hash() uses (all encodings in one batch on its
                # lanes), and on one lane, one encoding after another.
                t0 = time.perf_counter_ns()
                _alloc.keccak_floor(blobs, calls, backend)
                floor_samples.append((time.perf_counter_ns() - t0) / (calls * case.ops_per_sample))
                if backend != "scalar":
                    t0 = time.perf_counter_ns()
                    _alloc.keccak_floor(blobs, calls, "scalar")
                    scalar_floor_samples.append((time.perf_counter_ns() - t0) / (calls * case.ops_per_sample))
            if sha_messages is not None:
                # SHA-256 alone on the same preimages: batched as root() hashes (two at a time on SHA-NI),
                # and one call per message.
                t0 = time.perf_counter_ns()
                _sha256_floor(sha_messages, calls, True)
                sha_samples.append((time.perf_counter_ns() - t0) / (calls * case.ops_per_sample))
                t0 = time.perf_counter_ns()
                _sha256_floor(sha_messages, calls, False)
                sha_single_samples.append((time.perf_counter_ns() - t0) / (calls * case.ops_per_sample))
            self.bar.update(1)
            for peer, peer_case, peer_state, peer_calls, peer_result in others:
                elapsed = self._time_calls(peer_case, peer_state, peer_calls)
                peer_result.samples.append(elapsed / (peer_calls * peer_case.ops_per_sample))
                peer_result.iterations.append(peer_calls * peer_case.ops_per_sample)
                self.bar.update(1)
        bytes_per_op, allocs_per_op = self._allocs(case, state)
        result = Result(case.name, samples, iterations, bytes_per_op, allocs_per_op)
        if case.peak_rss is not None:       # BuildRoot: one op in a fresh interpreter (mpt.bench.rss)
            self.bar.set_description_str("%s (peak RSS)" % case.name)
            result.extra.update(case.peak_rss())
        if blobs is not None:
            floor = median(floor_samples)
            scalar_floor = median(scalar_floor_samples) if scalar_floor_samples else floor
            result.extra.update(
                keccak_ratio=result.median / floor if floor > 0 else None,
                keccak_floor_ns=floor,
                keccak_backend=backend,
                keccak_ratio_one_lane=result.median / scalar_floor if scalar_floor > 0 else None,
                keccak_floor_one_lane_ns=scalar_floor,
                keccak_calls=len(blobs),
                keccak_bytes=sum(len(b) for b in blobs),
            )
        if sha_messages is not None:
            sha_floor = median(sha_samples)
            sha_single = median(sha_single_samples)
            result.extra.update(
                sha_ratio=result.median / sha_floor if sha_floor > 0 else None,
                sha_floor_ns=sha_floor,
                sha_ratio_one_at_a_time=result.median / sha_single if sha_single > 0 else None,
                sha_floor_one_at_a_time_ns=sha_single,
                sha_backend=sha256_backend(),
                sha_calls=len(sha_messages),
                sha_bytes=sum(len(m) for m in sha_messages),
            )
        for peer, _, _, _, peer_result in others:
            peer_result.extra["ratio_vs_mpt"] = peer_result.median / result.median
            result.peer_results[peer.name] = peer_result
        return result


# ---------------------------------------------------------------------------------------------------------------
# Machine description
# ---------------------------------------------------------------------------------------------------------------

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386",
           "i686": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> Dict[str, Any]:
    goos = "darwin" if sys.platform == "darwin" else "windows" if sys.platform.startswith("win") else (
        sys.platform.rstrip("0123456789") or sys.platform)
    info = {
        "goos": goos,
        "goarch": _GOARCH.get(platform.machine().lower(), platform.machine().lower()),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }
    try:
        import Cython

        info["cython"] = Cython.__version__
    except ImportError:
        pass
    return info


def _mpt_version() -> str:
    import mpt

    return getattr(mpt, "__version__", "unknown")


# ---------------------------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------------------------

def _sig(x: float) -> str:
    """About 4 significant digits."""
    ax = abs(x)
    if ax >= 1000:
        return "%.0f" % x
    if ax >= 100:
        return "%.1f" % x
    if ax >= 10:
        return "%.2f" % x
    return "%.3f" % x


def fmt_time(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return _sig(ns / scale) + unit
    return _sig(ns) + "ns"


def fmt_bytes(b: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= scale:
            return _sig(b / scale) + unit
    return "%.0fB" % b


def fmt_count(n: float) -> str:
    if abs(n) >= 1e6:
        return _sig(n / 1e6) + "M"
    if abs(n) >= 1e4:
        return _sig(n / 1e3) + "k"
    return "%.0f" % n if n == int(n) or abs(n) >= 100 else "%.1f" % n


def fmt_spread(pct: float) -> "str":
    return "± %.0f%%" % pct if pct >= 1 else "± %.1f%%" % pct


def _delta(old: float, new: float) -> str:
    if old == new:
        return "~"
    if old == 0:
        return "+inf%"
    return "%+.2f%%" % ((new / old - 1) * 100)


def _render(header: List[List[str]], rows: List[List[str]], group_edges: Sequence[int] = (),
            bars: bool = True) -> List[str]:
    """A benchstat-like table: names left-aligned, cells right-aligned (headers centred); with bars, header rows
    get a "│" before each column in group_edges and at the end."""
    ncol = max(len(r) for r in header + rows)
    grid = [r + [""] * (ncol - len(r)) for r in header + rows]
    widths = [max(len(r[i]) for r in grid) for i in range(ncol)]
    lines = []
    for ri, r in enumerate(grid):
        is_header = ri < len(header)
        parts = [r[0].ljust(widths[0])]
        for i in range(1, ncol):
            sep = " │ " if (bars and is_header and i in group_edges) else "   "
            parts.append(sep + (r[i].center(widths[i]) if is_header else r[i].rjust(widths[i])))
        line = "".join(parts)
        lines.append(line + " │" if bars and is_header else line.rstrip())
    return lines


def _with_spread(values: List[Optional[str]], spreads: List[Optional[str]]) -> List[str]:
    """Cells "value ± spread" with the values right-aligned and the spreads left-aligned among themselves."""
    wv = max((len(v) for v in values if v is not None), default=0)
    ws = max((len(s) for s in spreads if s is not None), default=0)
    cells = []
    for v, s in zip(values, spreads):
        if v is None:
            cells.append("")
        else:
            cells.append(v.rjust(wv) + (" " + (s or "").ljust(ws) if ws else ""))
    return cells


def _p_cell(old_samples: Sequence[float], new_samples: Sequence[float], old_med: float, new_med: float) -> str:
    _, p = mann_whitney_u(old_samples, new_samples)
    n = ("n=%d" % len(new_samples) if len(old_samples) == len(new_samples)
         else "n=%d+%d" % (len(old_samples), len(new_samples)))
    if p > SIGNIFICANCE_LEVEL:
        return "~ (p=%.3f %s)" % (p, n)
    return "%s (p=%.3f %s)" % (_delta(old_med, new_med), p, n)


def _peer_section(peers: Dict[str, Dict[str, Result]], what: str) -> List[str]:
    """A table of each case's peers (one row per case, mpt first, each peer with its ratio to mpt), then what
    the workload is and which implementation each column is."""
    names: List[str] = []
    for per_case in peers.values():
        for name in per_case:
            if name not in names:
                names.append(name)
    rows = []
    for case_name, per_case in peers.items():
        row = [case_name]
        for name in names:
            r = per_case.get(name)
            if r is None:
                row.append("skipped")
            elif name == "mpt":
                row.append(fmt_time(r.median) + " " + fmt_spread(r.spread))
            elif r.extra.get("ratio_vs_mpt") is None:
                row.append(fmt_time(r.median))
            else:
                row.append("%s (%.1f×)" % (fmt_time(r.median), r.extra["ratio_vs_mpt"]))
        rows.append(row)
    out = [""] + _render([["", *names]], rows, bars=False)
    out.append(what + "; median time, (×) = peer time / mpt time, samples alternating between implementations "
               "(mpt's are those of the table above).")
    details = ["%s = %s" % (name, r.extra["detail"])
               for name, r in next(iter(peers.values())).items() if r.extra.get("detail")]
    if details:
        out.append("  " + "; ".join(details))
    return out


def format_text(results: List[Result], info: Dict[str, Any], settings: Dict[str, Any],
                base: Optional[Dict[str, Dict[str, Any]]] = None, base_label: str = "base",
                peers: Optional[Dict[str, Dict[str, Result]]] = None, notes: Sequence[str] = (),
                merkle_peers: Optional[Dict[str, Dict[str, Result]]] = None) -> str:
    out: List[str] = []
    out.append("goos: %s  goarch: %s  cpu: %s (%s cores)" % (info["goos"], info["goarch"], info["cpu"],
                                                             info["cores"]))
    out.append("mpt %s  %s %s  %d samples per case, >= %gs each" % (
        settings["mpt_version"], info["implementation"], info["python"], settings["count"], settings["min_time"]))
    if "keccak_backend" in settings:
        out.append("keccak backend: %s  hash threads: %s" % (settings["keccak_backend"], settings["hash_threads"]))
    out.append("")

    units = [
        ("time/op", lambda r: r.median, fmt_time, True),
        ("B/op", lambda r: r.bytes_per_op, fmt_bytes, False),
        ("allocs/op", lambda r: r.allocs_per_op, fmt_count, False),
    ]
    base_keys = {"time/op": "median", "B/op": "bytes_per_op", "allocs/op": "allocs_per_op"}
    for unit, getter, fmt, with_spread in units:
        if not with_spread and all(getter(r) is None for r in results):
            continue
        names: List[str] = []
        new_v: List[Optional[str]] = []      # formatted values and spreads, one per row (geomean last)
        new_s: List[Optional[str]] = []
        old_v: List[Optional[str]] = []
        old_s: List[Optional[str]] = []
        vs: List[str] = []
        olds, news = [], []
        for r in results:
            v = getter(r)
            names.append(r.name)
            new_v.append("n/a" if v is None else fmt(v))
            new_s.append(fmt_spread(r.spread) if with_spread and v is not None else None)
            if base is None:
                if v is not None:
                    news.append(v)
                continue
            old = base.get(r.name)
            ov = None if old is None else old.get(base_keys[unit])
            if ov is None:
                old_v.append(None)
                old_s.append(None)
                vs.append("(new)" if old is None else "")
                continue
            old_samples = old.get("samples") if with_spread else None
            old_v.append(fmt(ov))
            old_s.append(fmt_spread(spread_pct(old_samples)) if old_samples else None)
            if v is None:
                vs.append("")
            elif old_samples:
                vs.append(_p_cell(old_samples, r.samples, ov, v))
            else:
                vs.append(_delta(ov, v))
            if v is not None and ov > 0 and v > 0:
                olds.append(ov)
                news.append(v)
        g_new = geomean(news)
        g_old = geomean(olds) if base is not None else None
        if g_new is not None and (base is None or g_old is not None):
            names.append("geomean")
            new_v.append(fmt(g_new))
            new_s.append(None)
            if base is not None:
                old_v.append(fmt(g_old))
                old_s.append(None)
                vs.append(_delta(g_old, g_new))
        new_cells = _with_spread(new_v, new_s)
        if base is None:
            out += _render([["", unit]], [[n, c] for n, c in zip(names, new_cells)], [1])
        else:
            old_cells = _with_spread(old_v, old_s)
            header = [["", base_label, "new", ""], ["", unit, unit, "vs base"]]
            out += _render(header, [list(row) for row in zip(names, old_cells, new_cells, vs)], [1, 2])
        out.append("")
    out.append(SPREAD_METHOD + ".")
    if base is not None:
        out.append("vs base: Mann-Whitney U test, two-sided; ~ = no significant difference (p > %.2f)."
                   % SIGNIFICANCE_LEVEL)
    if _alloc is None:
        out.append("B/op, allocs/op and keccak ratios need the compiled mpt.bench._alloc (not built).")
    else:
        out.append("B/op, allocs/op: bytes requested and calls through the PyMem and PyObject allocators per op.")

    ratio_rows = [[r.name, "%.2f×" % r.extra["keccak_ratio"], fmt_time(r.extra["keccak_floor_ns"]),
                   "%.2f×" % r.extra.get("keccak_ratio_one_lane", r.extra["keccak_ratio"]),
                   fmt_time(r.extra.get("keccak_floor_one_lane_ns", r.extra["keccak_floor_ns"])),
                   str(r.extra["keccak_calls"]), fmt_bytes(r.extra["keccak_bytes"])]
                  for r in results if r.extra.get("keccak_ratio")]
    if ratio_rows:
        backend = next(r.extra.get("keccak_backend", "scalar") for r in results if r.extra.get("keccak_ratio"))
        out.append("")
        out += _render([["", "keccak ratio", "keccak alone", "vs 1 lane", "1 lane alone", "keccak calls",
                         "hashed"]], ratio_rows, bars=False)
        out.append("keccak ratio = hash() time / time of our C keccak alone on the same node encodings, on the "
                   "backend hash() uses (%s; 1.0 = nothing but Keccak left). vs 1 lane: the same against "
                   "single-lane Keccak, one encoding after another (below 1.0 = faster than one lane can "
                   "hash)." % backend)

    sha_rows = [[r.name, "%.2f×" % r.extra["sha_ratio"], fmt_time(r.extra["sha_floor_ns"]),
                 "%.2f×" % r.extra["sha_ratio_one_at_a_time"], fmt_time(r.extra["sha_floor_one_at_a_time_ns"]),
                 str(r.extra["sha_calls"]), fmt_bytes(r.extra["sha_bytes"])]
                for r in results if r.extra.get("sha_ratio") and r.extra.get("sha_ratio_one_at_a_time")]
    if sha_rows:
        backend = next(r.extra["sha_backend"] for r in results if r.extra.get("sha_ratio"))
        out.append("")
        out += _render([["", "sha ratio", "sha alone", "vs 1 at a time", "1 at a time", "sha calls", "hashed"]],
                       sha_rows, bars=False)
        out.append("sha ratio = time / time of our C SHA-256 alone on the same preimages (0x00||leaf, "
                   "0x01||left||right), batched the way root() hashes them, on the %s backend (1.0 = nothing "
                   "but SHA-256 left). vs 1 at a time: against one SHA-256 call per preimage." % backend)

    if merkle_peers:
        out += _peer_section(merkle_peers, "merkle peers: the CometBFT root of the MerkleRoot leaves")
    if peers:
        out += _peer_section(peers, "peers: insert all accounts, then the root")
    rss = [r for r in results if r.extra.get("peak_rss")]
    if rss:
        out.append("")
        out.append("peak RSS of one op in a fresh interpreter (of which the input it was given):")
        for r in rss:
            out.append("  %-28s %s (%s)" % (r.name, fmt_bytes(r.extra["peak_rss"]), fmt_bytes(r.extra["rss_before_op"])))
    for note in notes:
        out.append("note: " + note)
    return "\n".join(out) + "\n"


def _go_ns(x: float) -> str:
    """Go's testing package number format for ns/op."""
    y = abs(x)
    if y == 0 or y >= 999.95:
        return "%.0f" % x
    if y >= 99.995:
        return "%.1f" % x
    if y >= 9.9995:
        return "%.2f" % x
    if y >= 0.99995:
        return "%.3f" % x
    return "%.4f" % x


def _go_line(name: str, iterations: int, ns: float, bytes_per_op, allocs_per_op) -> str:
    line = "Benchmark%s-1\t%10d\t%12s ns/op" % (name, iterations, _go_ns(ns))
    if bytes_per_op is not None:
        line += "\t%10d B/op\t%8d allocs/op" % (round(bytes_per_op), round(allocs_per_op))
    return line


def format_go(results: List[Result], info: Dict[str, Any], settings: Dict[str, Any],
              peers: Optional[Dict[str, Dict[str, Result]]] = None) -> str:
    out = ["goos: %s" % info["goos"], "goarch: %s" % info["goarch"], "pkg: mpt", "cpu: %s" % info["cpu"]]
    # benchstat keeps "key: value" lines as configuration of the results that follow.
    out.append("mpt-version: %s" % settings["mpt_version"])
    out.append("python: %s %s" % (info["implementation"], info["python"]))
    if "keccak_backend" in settings:
        out.append("keccak-backend: %s" % settings["keccak_backend"])
        out.append("hash-threads: %s" % settings["hash_threads"])
    for r in results:
        for ns, iters in zip(r.samples, r.iterations):
            out.append(_go_line(r.name, iters, ns, r.bytes_per_op, r.allocs_per_op))
    for per_size in (peers or {}).values():
        for name, r in per_size.items():
            for ns, iters in zip(r.samples, r.iterations):
                out.append(_go_line("%s/impl=%s" % (r.name, name), iters, ns, None, None))
    out.append("PASS")
    return "\n".join(out) + "\n"


def format_json(results: List[Result], info: Dict[str, Any], settings: Dict[str, Any],
                peers: Optional[Dict[str, Dict[str, Result]]] = None, notes: Sequence[str] = ()) -> str:
    doc = {
        "machine": info,
        "mpt_version": settings["mpt_version"],
        "date": settings["date"],
        "settings": {"count": settings["count"], "min_time": settings["min_time"],
                     "spread": SPREAD_METHOD, "allocs": _alloc is not None,
                     "keccak_backend": settings.get("keccak_backend"), "hash_threads": settings.get("hash_threads")},
        "benchmarks": [r.to_json() for r in results],
        "peers": [_peer_json(name, r) for per_size in (peers or {}).values() for name, r in per_size.items()],
        "notes": list(notes),
    }
    return json.dumps(doc, indent=1) + "\n"


def _peer_json(impl: str, r: Result) -> Dict[str, Any]:
    entry = r.to_json()
    entry["extra"] = dict(entry["extra"], impl=impl)    # mpt's entry is its main-table result, labelled
    return entry


def load_base(path: str) -> Dict[str, Dict[str, Any]]:
    """Benchmarks of a JSON report by name (for --compare)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ValueError("%s is not a JSON report of python -m mpt.bench --format json" % path)
    return {b["name"]: b for b in doc["benchmarks"] if isinstance(b, dict) and "name" in b}


# ---------------------------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------------------------

EPILOG = """\
cases:
  The default run takes the small sizes (about a minute on 2 cores); -b REGEX or --all adds the 100K ones.
  -b splits REGEX at '/' and matches each part against a whole level of the name (see -b above).
  --list shows every case. Names follow go-ethereum's benchmarks, so tables line up with geth's.

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
                         "peers are skipped; %s)" % bench_cases.PEERS_INSTALL_HINT)
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


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        _list_cases(sys.stdout)
        return 0
    if args.count < 1:
        parser.error("--count must be at least 1")
    if args.min_time < 0:
        parser.error("--min-time must not be negative")
    try:
        selected = bench_cases.select(args.bench, everything=args.all, search=args.search)
    except re.error as e:
        parser.error("bad -b regular expression: %s" % e)
    if not selected:
        hint = "" if args.search else (
            "; each /-separated part must match a whole level of a name: try %r, or --search"
            % (args.bench.split("/")[0] + ".*"))
        print("no case matches %r (see --list%s)" % (args.bench, hint), file=sys.stderr)
        return 1
    if args.hash_threads is not None and args.hash_threads < 1:
        parser.error("--hash-threads must be at least 1")
    try:
        if args.keccak_backend is not None:
            set_keccak_backend(args.keccak_backend)
        if args.hash_threads is not None:
            set_hash_threads(args.hash_threads)
    except ValueError as e:
        parser.error("--keccak-backend: %s" % e)
    base = None
    if args.compare:
        try:
            base = load_base(args.compare)
        except (OSError, ValueError) as e:
            print("--compare: %s" % e, file=sys.stderr)
            return 1

    info = machine_info()
    settings = {"count": args.count, "min_time": args.min_time, "mpt_version": _mpt_version(),
                "keccak_backend": keccak_backend(), "hash_threads": get_hash_threads(),
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    notes: List[str] = []
    # --peers: the Python peers run on the selected Insert/N cases only (the same workload: insert every
    # account, then the root), inside those cases' own sample loops.
    peer_cases = [c for c in selected if c.group == "Insert"] if args.peers else []
    merkle_cases = [c for c in selected if c.group == "MerkleRoot"] if args.peers else []
    if args.peers and not peer_cases and not merkle_cases:
        notes.append("--peers compares the Insert/N and MerkleRoot/N cases; none was selected (try -b 'Insert/' "
                     "or -b 'MerkleRoot/')")
    available_peers, missing = [], []
    for peer in bench_cases.peers()[1:] if peer_cases else ():    # [0] is mpt itself: the case is its row
        if peer.build is None:
            missing.append("%s (%s)" % (peer.name, peer.missing))
        else:
            available_peers.append(peer)
    available_merkle_peers = []
    for peer in bench_cases.merkle_peers()[1:] if merkle_cases else ():    # [0] is mpt.merkle itself
        if peer.build is None:
            missing.append("%s (%s)" % (peer.name, peer.missing))
        else:
            available_merkle_peers.append(peer)
    if missing:
        notes.append("peers skipped: %s; install them with %s" % ("; ".join(missing),
                                                                   bench_cases.PEERS_INSTALL_HINT))
    total = args.count * (len(selected) + len(available_peers) * len(peer_cases)
                          + len(available_merkle_peers) * len(merkle_cases))
    bar = _progress(total, len(selected), not args.no_progress)
    runner = Runner(args.count, args.min_time, bar)
    results: List[Result] = []
    failed = 0
    try:
        for case in selected:
            companions = []
            if case in peer_cases:
                label = case.name.split("/", 1)[1]
                companions = [(peer, bench_cases.peer_case(peer, label)) for peer in available_peers]
            elif case in merkle_cases:
                label = case.name.split("/", 1)[1]
                companions = [(peer, bench_cases.merkle_peer_case(peer, label)) for peer in available_merkle_peers]
            try:
                result = runner.run_case(case, companions, notes)
                results.append(result)
                bar.case_done(_progress_line(result))
            except Exception as e:  # noqa: BLE001 - a failing case is reported; the others still run
                failed += 1
                what = "%s" % e if isinstance(e, bench_cases.CheckFailed) else "%s: %s" % (type(e).__name__, e)
                bar.write("FAIL %s: %s" % (case.name, what))
                notes.append("FAIL %s: %s" % (case.name, what))
                bar.update(args.count * (1 + len(companions)))
                bar.case_done("%s FAIL" % case.name)
    except KeyboardInterrupt:
        bar.close()
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        bar.close()

    # Every case's peers (its companions): the Insert/N ones and the MerkleRoot/N ones get a table each.
    all_peers = {r.name: {"mpt": r, **r.peer_results} for r in results if r.peer_results} or None
    account_peers = {k: v for k, v in (all_peers or {}).items() if not k.startswith("MerkleRoot/")} or None
    merkle_peer_results = {k: v for k, v in (all_peers or {}).items() if k.startswith("MerkleRoot/")} or None
    text = format_text(results, info, settings, base, os.path.basename(args.compare or "base"), account_peers,
                       notes, merkle_peer_results)
    if args.format == "text":
        report = text
    elif args.format == "go":
        report = format_go(results, info, settings, all_peers)
    else:
        report = format_json(results, info, settings, all_peers, notes)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(report)
        if args.format != "text":
            sys.stdout.write(text)
    else:
        sys.stdout.write(report)
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
