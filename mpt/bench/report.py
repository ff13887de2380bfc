"""The reports of ``python -m mpt.bench``: benchstat-style text tables, ``go test -bench`` lines, JSON.

* :func:`format_text` -- time/op, B/op and allocs/op tables (with a "vs base" column against a saved JSON report,
  Mann-Whitney U p-values), the Keccak and SHA-256 floor ratios, the peers' tables, peak RSS and notes.
* :func:`format_go` -- ``go test -bench`` lines for benchstat.
* :func:`format_json` -- every sample and the machine; :func:`load_base` reads it back for ``--compare``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from mpt.bench.runner import ALLOC_HOOK_BUILT, Result
from mpt.bench.stats import SIGNIFICANCE_LEVEL, SPREAD_METHOD, geomean, mann_whitney_u, spread_pct

__all__ = ["machine_info", "mpt_version", "fmt_time", "fmt_bytes", "fmt_count", "fmt_spread", "format_text",
           "format_go", "format_json", "load_base", "NotABenchReport"]

Peers = Dict[str, Dict[str, Result]]
"""Peer results by case name, then by implementation name ("mpt" first)."""


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


def mpt_version() -> str:
    import mpt

    return getattr(mpt, "__version__", "unknown")


# ---------------------------------------------------------------------------------------------------------------
# Text tables
# ---------------------------------------------------------------------------------------------------------------

def _fixed_by_size(x: float, steps, finest: int) -> str:
    """x with the decimals of the first (floor, decimals) step whose floor abs(x) reaches, else finest ones."""
    ax = abs(x)
    for floor, decimals in steps:
        if ax >= floor:
            return "%.*f" % (decimals, x)
    return "%.*f" % (finest, x)


_FOUR_DIGITS = ((1000, 0), (100, 1), (10, 2))
# Go's testing.prettyPrint for ns/op: each floor is where rounding would carry into one more digit.
_GO_NS_DIGITS = ((999.95, 0), (99.995, 1), (9.9995, 2), (0.99995, 3))


def _sig(x: float) -> str:
    """About 4 significant digits."""
    return _fixed_by_size(x, _FOUR_DIGITS, 3)


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


def _peer_section(peers: Peers, what: str) -> List[str]:
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


def _header(info: Dict[str, Any], settings: Dict[str, Any]) -> List[str]:
    out = ["goos: %s  goarch: %s  cpu: %s (%s cores)" % (info["goos"], info["goarch"], info["cpu"], info["cores"]),
           "mpt %s  %s %s  %d samples per case, >= %gs each" % (
               settings["mpt_version"], info["implementation"], info["python"], settings["count"],
               settings["min_time"])]
    if "keccak_backend" in settings:
        # The SHA-256 backend since issue 34 (a report read back from an older JSON file may lack it).
        out.append("keccak backend: %s  sha256 backend: %s  hash threads: %s" % (
            settings["keccak_backend"], settings.get("sha256_backend", "not recorded"), settings["hash_threads"]))
    return out + [""]


class _Column:
    """One column of a unit's table (values and their spreads), formatted, a geomean row last."""

    def __init__(self):
        self.values: List[Optional[str]] = []
        self.spreads: List[Optional[str]] = []

    def add(self, value: Optional[str], spread: Optional[str] = None) -> None:
        self.values.append(value)
        self.spreads.append(spread)

    def cells(self) -> List[str]:
        return _with_spread(self.values, self.spreads)


_BASE_KEYS = {"time/op": "median", "B/op": "bytes_per_op", "allocs/op": "allocs_per_op"}


def _unit_table(results: List[Result], unit: str, getter: Callable[[Result], Optional[float]],
                fmt: Callable[[float], str], with_spread: bool, base: Optional[Dict[str, Dict[str, Any]]],
                base_label: str) -> List[str]:
    """The table of one unit: a row per result (its median, or value, ± spread), then the geomean; with base,
    the base's value and a "vs base" column."""
    names: List[str] = []
    new, old = _Column(), _Column()
    vs: List[str] = []
    olds, news = [], []
    for r in results:
        v = getter(r)
        names.append(r.name)
        new.add("n/a" if v is None else fmt(v), fmt_spread(r.spread) if with_spread and v is not None else None)
        if base is None:
            if v is not None:
                news.append(v)
            continue
        entry = base.get(r.name)
        ov = None if entry is None else entry.get(_BASE_KEYS[unit])
        if entry is None or ov is None:
            old.add(None)
            vs.append("(new)" if entry is None else "")
            continue
        old_samples = entry.get("samples") if with_spread else None
        old.add(fmt(ov), fmt_spread(spread_pct(old_samples)) if old_samples else None)
        vs.append("" if v is None else _p_cell(old_samples, r.samples, ov, v) if old_samples else _delta(ov, v))
        if v is not None and ov > 0 and v > 0:
            olds.append(ov)
            news.append(v)
    g_new = geomean(news)
    g_old = geomean(olds) if base is not None else None
    if g_new is not None and (base is None or g_old is not None):
        names.append("geomean")
        new.add(fmt(g_new))
        if g_old is not None:
            old.add(fmt(g_old))
            vs.append(_delta(g_old, g_new))
    if base is None:
        return _render([["", unit]], [[n, c] for n, c in zip(names, new.cells())], [1])
    header = [["", base_label, "new", ""], ["", unit, unit, "vs base"]]
    return _render(header, [list(row) for row in zip(names, old.cells(), new.cells(), vs)], [1, 2])


def _unit_tables(results: List[Result], base: Optional[Dict[str, Dict[str, Any]]], base_label: str) -> List[str]:
    units = [
        ("time/op", lambda r: r.median, fmt_time, True),
        ("B/op", lambda r: r.bytes_per_op, fmt_bytes, False),
        ("allocs/op", lambda r: r.allocs_per_op, fmt_count, False),
    ]
    out: List[str] = []
    for unit, getter, fmt, with_spread in units:
        if not with_spread and all(getter(r) is None for r in results):
            continue
        out += _unit_table(results, unit, getter, fmt, with_spread, base, base_label)
        out.append("")
    out.append(SPREAD_METHOD + ".")
    if base is not None:
        out.append("vs base: Mann-Whitney U test, two-sided; ~ = no significant difference (p > %.2f)."
                   % SIGNIFICANCE_LEVEL)
    if not ALLOC_HOOK_BUILT:
        out.append("B/op, allocs/op and keccak ratios need the compiled mpt.bench._alloc (not built).")
    else:
        out.append("B/op, allocs/op: bytes requested and calls through the PyMem and PyObject allocators per op.")
    return out


def _keccak_table(results: List[Result]) -> List[str]:
    rows = [[r.name, "%.2f×" % r.extra["keccak_ratio"], fmt_time(r.extra["keccak_floor_ns"]),
             "%.2f×" % r.extra.get("keccak_ratio_one_lane", r.extra["keccak_ratio"]),
             fmt_time(r.extra.get("keccak_floor_one_lane_ns", r.extra["keccak_floor_ns"])),
             str(r.extra["keccak_calls"]), fmt_bytes(r.extra["keccak_bytes"])]
            for r in results if r.extra.get("keccak_ratio")]
    if not rows:
        return []
    backend = next(r.extra.get("keccak_backend", "scalar") for r in results if r.extra.get("keccak_ratio"))
    out = [""] + _render([["", "keccak ratio", "keccak alone", "vs 1 lane", "1 lane alone", "keccak calls",
                           "hashed"]], rows, bars=False)
    out.append("keccak ratio = hash() time / time of our C keccak alone on the same node encodings, on the "
               "backend hash() uses (%s; 1.0 = nothing but Keccak left). vs 1 lane: the same against "
               "single-lane Keccak, one encoding after another (below 1.0 = faster than one lane can "
               "hash)." % backend)
    return out


def _sha_table(results: List[Result]) -> List[str]:
    rows = [[r.name, "%.2f×" % r.extra["sha_ratio"], fmt_time(r.extra["sha_floor_ns"]),
             "%.2f×" % r.extra["sha_ratio_one_at_a_time"], fmt_time(r.extra["sha_floor_one_at_a_time_ns"]),
             str(r.extra["sha_calls"]), fmt_bytes(r.extra["sha_bytes"])]
            for r in results if r.extra.get("sha_ratio") and r.extra.get("sha_ratio_one_at_a_time")]
    if not rows:
        return []
    backend = next(r.extra["sha_backend"] for r in results if r.extra.get("sha_ratio"))
    out = [""] + _render([["", "sha ratio", "sha alone", "vs 1 at a time", "1 at a time", "sha calls", "hashed"]],
                         rows, bars=False)
    out.append("sha ratio = time / time of our C SHA-256 alone on the same preimages (0x00||leaf, "
               "0x01||left||right), batched the way root() hashes them, on the %s backend (1.0 = nothing "
               "but SHA-256 left). vs 1 at a time: against one SHA-256 call per preimage." % backend)
    return out


def _rss_lines(results: List[Result]) -> List[str]:
    rss = [r for r in results if r.extra.get("peak_rss")]
    if not rss:
        return []
    out = ["", "peak RSS of one op in a fresh interpreter (of which the input it was given):"]
    for r in rss:
        out.append("  %-28s %s (%s)" % (r.name, fmt_bytes(r.extra["peak_rss"]), fmt_bytes(r.extra["rss_before_op"])))
    return out


def format_text(results: List[Result], info: Dict[str, Any], settings: Dict[str, Any],
                base: Optional[Dict[str, Dict[str, Any]]] = None, base_label: str = "base",
                peers: Optional[Peers] = None, notes: Sequence[str] = (),
                merkle_peers: Optional[Peers] = None, summary: Sequence[Any] = ()) -> str:
    """The text report: the header, a table per unit (with "vs base" against base), the floor ratios, the peer
    tables (Ethereum ``peers``, CometBFT ``merkle_peers``), peak RSS, the notes, then the summary ("faster than
    what?": :mod:`mpt.bench.summary` Comparisons)."""
    out = _header(info, settings) + _unit_tables(results, base, base_label)
    out += _keccak_table(results) + _sha_table(results)
    if merkle_peers:
        out += _peer_section(merkle_peers, "merkle peers: the CometBFT root of the MerkleRoot leaves")
    if peers:
        out += _peer_section(peers, "peers: insert all accounts, then the root")
    out += _rss_lines(results)
    out += ["note: " + note for note in notes]
    if summary:
        from mpt.bench.summary import format_summary

        out += format_summary(list(summary), fmt_time)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# go test -bench lines and JSON
# ---------------------------------------------------------------------------------------------------------------

def _go_ns(x: float) -> str:
    """Go's testing package number format for ns/op."""
    if x == 0:
        return "%.0f" % x
    return _fixed_by_size(x, _GO_NS_DIGITS, 4)


def _go_line(name: str, iterations: int, ns: float, bytes_per_op, allocs_per_op) -> str:
    line = "Benchmark%s-1\t%10d\t%12s ns/op" % (name, iterations, _go_ns(ns))
    if bytes_per_op is not None:
        line += "\t%10d B/op\t%8d allocs/op" % (round(bytes_per_op), round(allocs_per_op))
    return line


def format_go(results: List[Result], info: Dict[str, Any], settings: Dict[str, Any],
              peers: Optional[Peers] = None) -> str:
    out = ["goos: %s" % info["goos"], "goarch: %s" % info["goarch"], "pkg: mpt", "cpu: %s" % info["cpu"]]
    # benchstat keeps "key: value" lines as configuration of the results that follow.
    out.append("mpt-version: %s" % settings["mpt_version"])
    out.append("python: %s %s" % (info["implementation"], info["python"]))
    if "keccak_backend" in settings:
        out.append("keccak-backend: %s" % settings["keccak_backend"])
        if "sha256_backend" in settings:
            out.append("sha256-backend: %s" % settings["sha256_backend"])
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
                peers: Optional[Peers] = None, notes: Sequence[str] = (), summary: Sequence[Any] = ()) -> str:
    doc = {
        "machine": info,
        "mpt_version": settings["mpt_version"],
        "date": settings["date"],
        "settings": {"count": settings["count"], "min_time": settings["min_time"],
                     "spread": SPREAD_METHOD, "allocs": ALLOC_HOOK_BUILT,
                     "keccak_backend": settings.get("keccak_backend"),
                     "sha256_backend": settings.get("sha256_backend"), "hash_threads": settings.get("hash_threads")},
        "benchmarks": [r.to_json() for r in results],
        "peers": [_peer_json(name, r) for per_size in (peers or {}).values() for name, r in per_size.items()],
        "notes": list(notes),
        "summary": [c.to_json() for c in summary],
    }
    return json.dumps(doc, indent=1) + "\n"


def _peer_json(impl: str, r: Result) -> Dict[str, Any]:
    entry = r.to_json()
    entry["extra"] = dict(entry["extra"], impl=impl)    # mpt's entry is its main-table result, labelled
    return entry


class NotABenchReport(ValueError):
    """A --compare file that is not a ``python -m mpt.bench --format json`` report."""


def load_base(path: str) -> Dict[str, Dict[str, Any]]:
    """Benchmarks of a JSON report by name (for --compare). Raises OSError when the file cannot be read and
    :class:`NotABenchReport` when it is not such a report."""
    what = "%s is not a JSON report of python -m mpt.bench --format json" % path
    with open(path, encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except UnicodeDecodeError:
            raise NotABenchReport(what + " (not UTF-8 text)") from None
        except json.JSONDecodeError as e:
            raise NotABenchReport("%s (not JSON: %s)" % (what, e)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise NotABenchReport(what + " (no \"benchmarks\" list)")
    return {b["name"]: b for b in doc["benchmarks"] if isinstance(b, dict) and "name" in b}
