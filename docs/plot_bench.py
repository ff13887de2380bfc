"""Plot a ``python -m mpt.bench --format json`` report into the PNG figures of docs/benchmarks.rst.

Usage::

    python -m mpt.bench --peers --format json -o docs/bench_reference.json
    python docs/plot_bench.py docs/bench_reference.json --out docs/_static

(``make docs-plots`` does both; every docs build runs the second step on the reference run, docs/conf.py.)

Figures written (each only when the report has the data for it):

- ``bench_hash.png``: HashFixedSize and CommitAfterHashFixedSize time/op by trie size, against geth's
  reference figures;
- ``bench_peers.png``: insert all accounts then the root (``Insert/N``), mpt against the Python peers measured
  in the same run;
- ``bench_vs_geth.png``: mpt time / geth time for every case that has a geth reference figure.

Input, as written by ``python -m mpt.bench --format json``::

    {"machine": {...}, "mpt_version": "0.1.0",
     "benchmarks": [{"name": "HashFixedSize/1K", "unit": "ns", "samples": [...], "median": ...,
                     "bytes_per_op": ..., "allocs_per_op": ..., "extra": {...}}, ...],
     "peers": [...]}

Assumptions (the script is lenient: entries it cannot read are skipped with a message on stderr, and a figure
without data is simply not written):

- Times are in the entry's ``unit`` ("ns" when absent; "us", "ms" and "s" are converted). The entry's
  ``median`` is used when present, else the median of ``samples``; the whiskers span the samples' min..max.
- Peer measurements (same run, samples alternating with mpt) may come in any of three shapes, all merged:

  1. a top-level ``"peers"`` list of entries shaped like the benchmark entries, whose ``extra["impl"]``
     names the implementation ("mpt", "py-trie", "execution-specs"); this is what the runner writes today;
  2. entries of ``"benchmarks"`` whose name is prefixed by the peer, e.g. ``"py-trie/Insert/1K"``: a first
     path component that is a known peer name, or that starts with a lower-case letter (mpt's case names are
     CamelCase, like geth's), is a peer;
  3. ``extra["peers"]`` of a benchmark entry: either ``{peer: entry}`` / ``{peer: median in the entry's
     unit}``, or a list of entries carrying ``"impl"`` (or ``extra["impl"]``); the case is the entry's own.

- An implementation called "mpt" inside the peer data is our own time measured alternating with the peers;
  the peer figure prefers it over the plain ``Insert/N`` benchmark of the same size.
- geth's figures are not in the report: they come from a side-by-side run of geth and mpt on one machine
  (docs/performance.md, "Against the peers"), copied below as ``GETH`` and ``MPT_SIDE_BY_SIDE``. The figures draw
  that run's ratios as the comparison with geth, and the report's own times beside them, labelled with the
  report's date: a report from another machine or another hour is not a measurement beside geth.
- Legends name the report by its date ("run of 2026-12-01"), never "this run": a plain docs build draws the
  committed reference run, not one of the reader's.
- Every figure checks its own layout before it is saved: a text cut off at the figure's edge or a legend over a
  data point prints "layout:" on stderr (tests/test_docs_figures.py fails on it).
- A report whose ``machine`` mapping has an ``"illustration"`` key (such as a hand-made sample) is stamped
  "ILLUSTRATION" on every figure.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

# go-ethereum's own benchmarks on the same workloads, in ns/op, measured side by side with mpt (alternating rounds,
# medians, one core each) on one machine: docs/performance.md, "Against the peers". (low, high, B/op, allocs/op);
# a single figure has low == high.
US = 1e3
MS = 1e6
SIDE_BY_SIDE_RUN = "2-vCPU AMD EPYC (Zen 4), 2026-12-06"
GETH: Dict[str, Tuple[float, float, Optional[float], Optional[float]]] = {
    name: (ns, ns, None, None) for name, ns in {
        "HashFixedSize/10": 16.9 * US, "HashFixedSize/100": 99.7 * US, "HashFixedSize/1K": 925 * US,
        "HashFixedSize/10K": 10.1 * MS, "HashFixedSize/100K": 143 * MS, "CommitAfterHashFixedSize/10": 11.0 * US,
        "CommitAfterHashFixedSize/100": 41.0 * US, "CommitAfterHashFixedSize/1K": 737 * US,
        "CommitAfterHashFixedSize/10K": 10.2 * MS, "CommitAfterHashFixedSize/100K": 209 * MS,
        "DeriveSha200/std_trie": 206 * US, "DeriveSha200/stack_trie": 174 * US, "Insert100K": 29.9 * MS,
        "Prove": 5.7 * US, "VerifyProof": 2.7 * US, "VerifyRangeProof10": 20.4 * US,
        "VerifyRangeProof100": 63.9 * US, "VerifyRangeProof1000": 1.10 * MS, "VerifyRangeProof5000": 5.72 * MS,
        "VerifyRangeNoProof10": 111 * US, "VerifyRangeNoProof500": 458 * US, "VerifyRangeNoProof1000": 885 * US,
    }.items()
}
# mpt's medians of that same side-by-side run (--hash-threads 1, Keccak backend avx512).
MPT_SIDE_BY_SIDE: Dict[str, float] = {
    "HashFixedSize/10": 2.8 * US, "HashFixedSize/100": 9.5 * US, "HashFixedSize/1K": 76.9 * US,
    "HashFixedSize/10K": 878 * US, "HashFixedSize/100K": 9.47 * MS, "CommitAfterHashFixedSize/10": 1.9 * US,
    "CommitAfterHashFixedSize/100": 7.8 * US, "CommitAfterHashFixedSize/1K": 83.1 * US,
    "CommitAfterHashFixedSize/10K": 1.21 * MS, "CommitAfterHashFixedSize/100K": 47.1 * MS,
    "DeriveSha200/std_trie": 28.1 * US, "DeriveSha200/stack_trie": 22.5 * US, "Insert100K": 6.21 * MS,
    "Prove": 0.5 * US, "VerifyProof": 1.3 * US, "VerifyRangeProof10": 5.5 * US, "VerifyRangeProof100": 17.2 * US,
    "VerifyRangeProof1000": 196 * US, "VerifyRangeProof5000": 1.35 * MS, "VerifyRangeNoProof10": 21.7 * US,
    "VerifyRangeNoProof500": 66.8 * US, "VerifyRangeNoProof1000": 132 * US,
}
# The ratios of that run as published (the ratio of the unrounded medians, so not always the ratio of the
# rounded figures above).
SIDE_BY_SIDE_RATIO: Dict[str, float] = {
    "HashFixedSize/10": 0.17, "HashFixedSize/100": 0.09, "HashFixedSize/1K": 0.08, "HashFixedSize/10K": 0.09,
    "HashFixedSize/100K": 0.07, "CommitAfterHashFixedSize/10": 0.17, "CommitAfterHashFixedSize/100": 0.19,
    "CommitAfterHashFixedSize/1K": 0.11, "CommitAfterHashFixedSize/10K": 0.12,
    "CommitAfterHashFixedSize/100K": 0.23, "DeriveSha200/std_trie": 0.14, "DeriveSha200/stack_trie": 0.13,
    "Insert100K": 0.21, "Prove": 0.09, "VerifyProof": 0.46, "VerifyRangeProof10": 0.27, "VerifyRangeProof100": 0.27,
    "VerifyRangeProof1000": 0.18, "VerifyRangeProof5000": 0.24, "VerifyRangeNoProof10": 0.20,
    "VerifyRangeNoProof500": 0.15, "VerifyRangeNoProof1000": 0.15,
}
GETH_LABEL = "geth 02b73d4e, 1 core"
GETH_TWO_CORES: set = set()   # every geth figure above is one core

# The Python peers on the same data (docs/benchmarks.rst): insert all + root, one core, in ns.
PEER_REFERENCE: Dict[str, Dict[int, float]] = {
    "py-trie": {10000: 2.7e9, 100000: 33e9},
    "execution-specs": {10000: 0.8e9, 100000: 10.6e9},
}

# Case label -> number of accounts (geth's "/10" uses 20 accounts).
ACCOUNT_SIZES = {"10": 20, "100": 100, "1K": 1000, "10K": 10000, "100K": 100000}
KNOWN_PEERS = ("mpt", "py-trie", "execution-specs")
UNIT_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
COLORS = {"mpt": "#1f77b4", "py-trie": "#d62728", "execution-specs": "#2ca02c", "geth": "#7f7f7f"}
REPORT_COLOR = "#8fb8de"     # the report's own mpt line where the side-by-side run is the main one


@dataclass
class Measure:
    """One implementation's time/op for one case, in ns."""

    impl: str
    case: str
    median: float
    low: float
    high: float
    bytes_per_op: Optional[float] = None
    allocs_per_op: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)


def warn(message: str) -> None:
    print("plot_bench: %s" % message, file=sys.stderr)


def _number(x: Any) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def _dict(x: Any) -> Dict[str, Any]:
    return x if isinstance(x, dict) else {}


def measure_from_entry(entry: Any, impl: str, case: str, unit: str = "ns") -> Optional[Measure]:
    """A Measure from a benchmark-shaped entry, or from a bare number (a median in ``unit``)."""
    number = _number(entry)
    if number is not None:
        value = number * UNIT_NS.get(unit, 1.0)
        return Measure(impl, case, value, value, value)
    if not isinstance(entry, dict):
        warn("skipping %s/%s: not a benchmark entry (%r)" % (impl, case, type(entry).__name__))
        return None
    scale = UNIT_NS.get(str(entry.get("unit", unit)), None)
    if scale is None:
        warn("skipping %s/%s: unknown unit %r" % (impl, case, entry.get("unit")))
        return None
    samples = [s * scale for s in (entry.get("samples") or []) if _number(s) is not None]
    given = _number(entry.get("median"))
    if given is not None:
        median = given * scale
    elif samples:
        median = statistics.median(samples)
    else:
        warn("skipping %s/%s: neither a median nor samples" % (impl, case))
        return None
    return Measure(impl, case, median, min(samples, default=median), max(samples, default=median),
                   _number(entry.get("bytes_per_op")), _number(entry.get("allocs_per_op")),
                   _dict(entry.get("extra")))


def split_peer_name(name: str) -> Tuple[Optional[str], str]:
    """("py-trie", "Insert/1K") for "py-trie/Insert/1K"; (None, name) for one of mpt's own case names."""
    head, sep, rest = name.partition("/")
    if sep and rest and (head in KNOWN_PEERS or head[:1].islower()):
        return head, rest
    return None, name


def _peer_entries(obj: Any, case: str, unit: str) -> Iterable[Measure]:
    """Measures from a benchmark entry's extra["peers"] (a dict by peer or a list of entries)."""
    if isinstance(obj, dict):
        for impl, entry in obj.items():
            m = measure_from_entry(entry, str(impl), case, unit)
            if m is not None:
                yield m
    elif isinstance(obj, list):
        for entry in obj:
            impl = _impl_of(entry)
            if impl is None:
                warn("skipping a peer entry of %s without an implementation name" % case)
                continue
            name = entry.get("name") if isinstance(entry.get("name"), str) else case
            m = measure_from_entry(entry, impl, split_peer_name(name)[1], unit)
            if m is not None:
                yield m
    else:
        warn("skipping extra['peers'] of %s: expected a dict or a list" % case)


def _impl_of(entry: Any) -> Optional[str]:
    if not isinstance(entry, dict):
        return None
    impl = entry.get("impl", _dict(entry.get("extra")).get("impl"))
    return str(impl) if impl is not None else None


def load_report(doc: Dict[str, Any]) -> Tuple[Dict[str, Measure], Dict[str, Dict[str, Measure]]]:
    """(mpt's own results by case, peer results by case then implementation) from a JSON report."""
    ours: Dict[str, Measure] = {}
    peers: Dict[str, Dict[str, Measure]] = {}

    def add_peer(m: Measure) -> None:
        peers.setdefault(m.case, {})[m.impl] = m

    for entry in doc.get("benchmarks") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            warn("skipping a benchmark entry without a name")
            continue
        unit = str(entry.get("unit", "ns"))
        impl, case = split_peer_name(entry["name"])
        impl = impl or _impl_of(entry) or "mpt"
        m = measure_from_entry(entry, impl, case)
        if m is None:
            continue
        if impl == "mpt":
            ours[case] = m
        else:
            add_peer(m)
        if "peers" in m.extra:
            for pm in _peer_entries(m.extra["peers"], case, unit):
                add_peer(pm)

    top = doc.get("peers")
    if isinstance(top, dict):           # {peer: [entries]} or {peer: {case: entry}}
        for impl, entries in top.items():
            items = entries.items() if isinstance(entries, dict) else (
                (e.get("name") if isinstance(e, dict) else None, e) for e in (entries or []))
            for name, entry in items:
                if not isinstance(name, str):
                    warn("skipping a %s entry without a name" % impl)
                    continue
                m = measure_from_entry(entry, str(impl), split_peer_name(name)[1])
                if m is not None:
                    add_peer(m)
    elif isinstance(top, list):
        for entry in top:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                warn("skipping a peer entry without a name")
                continue
            prefix, case = split_peer_name(entry["name"])
            impl = _impl_of(entry) or prefix
            if impl is None:
                warn("skipping peer entry %s: no implementation name" % entry["name"])
                continue
            m = measure_from_entry(entry, impl, case)
            if m is not None:
                add_peer(m)
    elif top is not None:
        warn("ignoring top-level 'peers': expected a list or a dict")
    return ours, peers


# ---------------------------------------------------------------------------------------------------- plotting

def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fmt_ns(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return "%.3g %s" % (ns / scale, unit)
    return "%.3g ns" % ns


def _footer(fig, doc: Dict[str, Any]) -> None:
    machine = _dict(doc.get("machine"))
    parts = ["%s: mpt %s" % (run_label(doc), doc.get("mpt_version", "?"))]
    if machine.get("python"):
        parts.append("%s %s" % (machine.get("implementation", "Python"), machine["python"]))
    if machine.get("cpu"):
        parts.append("%s (%s cores)" % (machine["cpu"], machine.get("cores", "?")))
    if doc.get("date"):
        parts.append(str(doc["date"]))
    fig.text(0.01, 0.005, " · ".join(parts), fontsize=7, color="#555555", ha="left", va="bottom")
    if "illustration" in machine:
        fig.text(0.5, 0.5, "ILLUSTRATION", fontsize=48, color="#cc0000", alpha=0.15, ha="center", va="center",
                 rotation=25, transform=fig.transFigure)


def run_label(doc: Dict[str, Any]) -> str:
    """The report named by its date: a docs build draws the committed reference run, not "this run"."""
    date = str(doc.get("date") or "")[:10]
    return "run of %s" % date if date else "undated run"


def check_layout(fig, name: str) -> List[str]:
    """Texts cut off at the figure's edge and legends over a data point or a label, as messages."""
    from matplotlib.collections import PathCollection

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    problems = []
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label] + list(ax.texts)
        for axis, (low, high) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            texts += [label for tick, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
                      if low <= tick <= high]
    for text in texts:
        if not text.get_visible() or not text.get_text().strip():
            continue
        extent = text.get_window_extent(renderer)
        if extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1 or extent.y0 < box.y0 - 1 or extent.y1 > box.y1 + 1:
            problems.append("%s: %r does not fit in the figure" % (name, text.get_text()[:50]))
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        frame = legend.get_window_extent(renderer)
        points = []
        for line in ax.lines:
            points += [tuple(p) for p in line.get_transform().transform(line.get_xydata())]
        for collection in ax.collections:
            if isinstance(collection, PathCollection):
                points += [tuple(p) for p in collection.get_offset_transform().transform(collection.get_offsets())]
        if any(frame.x0 <= x <= frame.x1 and frame.y0 <= y <= frame.y1 for x, y in points):
            problems.append("%s: the legend covers a data point" % name)
        if any(frame.overlaps(t.get_window_extent(renderer)) for t in ax.texts if t.get_visible()):
            problems.append("%s: the legend covers a label" % name)
    return problems


def _save(fig, path: str) -> None:
    for problem in check_layout(fig, os.path.basename(path)):
        warn("layout: " + problem)
    fig.savefig(path, dpi=110)


def _time_axis(ax) -> None:
    from matplotlib.ticker import FuncFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_ns(v)))
    ax.grid(True, which="major", alpha=0.3)


def _size_axis(ax, sizes: List[int]) -> None:
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels(["%d" % s if s < 1000 else "%dK" % (s // 1000) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("accounts in the trie")


def _series(ax, points: List[Tuple[int, Measure]], label: str, color: str, marker: str = "o") -> None:
    points.sort(key=lambda p: p[0])
    xs = [p[0] for p in points]
    ys = [p[1].median for p in points]
    yerr = [[p[1].median - p[1].low for p in points], [p[1].high - p[1].median for p in points]]
    ax.errorbar(xs, ys, yerr=yerr, label=label, color=color, marker=marker, capsize=3, linewidth=1.5)


def _group_points(table: Dict[str, float], group: str) -> List[Tuple[int, float]]:
    return sorted((ACCOUNT_SIZES[name.split("/", 1)[1]], ns) for name, ns in table.items()
                  if name.startswith(group + "/") and name.split("/", 1)[1] in ACCOUNT_SIZES)


def _side_by_side(ax, group: str) -> None:
    """geth and mpt as measured side by side on one machine: the comparison with geth."""
    geth = _group_points({name: lo for name, (lo, _, _, _) in GETH.items()}, group)
    ours = _group_points(MPT_SIDE_BY_SIDE, group)
    if ours:
        ax.plot([p[0] for p in ours], [p[1] for p in ours], color=COLORS["mpt"], marker="o", linewidth=1.8,
                label="mpt, side by side with geth")
    if geth:
        ax.plot([p[0] for p in geth], [p[1] for p in geth], color=COLORS["geth"], linestyle="--", marker="s",
                markersize=4, label="%s, side by side" % GETH_LABEL)


def plot_hash(doc: Dict[str, Any], ours: Dict[str, Measure], out: str) -> Optional[str]:
    groups = [g for g in ("HashFixedSize", "CommitAfterHashFixedSize")
              if any(c.startswith(g + "/") for c in ours)]
    if not groups:
        warn("no HashFixedSize/CommitAfterHashFixedSize results: bench_hash.png not written")
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(groups), figsize=(5.2 * len(groups), 4.2), squeeze=False)
    for ax, group in zip(axes[0], groups):
        pts = [(ACCOUNT_SIZES[c.split("/", 1)[1]], m) for c, m in ours.items()
               if c.startswith(group + "/") and c.split("/", 1)[1] in ACCOUNT_SIZES]
        _side_by_side(ax, group)
        _series(ax, pts, "mpt, %s (median, min..max)" % run_label(doc), REPORT_COLOR, marker=".")
        _time_axis(ax)
        _size_axis(ax, sorted(ACCOUNT_SIZES.values()))
        ax.set_ylabel("time/op")
        ax.set_title("%s: %s" % (group, "hash() of a fresh trie" if group == "HashFixedSize"
                                 else "commit() of a hashed trie"), fontsize=10)
        ax.legend(fontsize=7, loc="upper left")
    fig.text(0.99, 0.005, "side by side: one core each, %s" % SIDE_BY_SIDE_RUN, fontsize=7, color="#555555",
             ha="right", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    _footer(fig, doc)
    path = os.path.join(out, "bench_hash.png")
    _save(fig, path)
    plt.close(fig)
    return path


def plot_peers(doc: Dict[str, Any], ours: Dict[str, Measure], peers: Dict[str, Dict[str, Measure]],
               out: str) -> Optional[str]:
    by_impl: Dict[str, List[Tuple[int, Measure]]] = {}
    for case, per_impl in peers.items():
        label = case.split("/", 1)[1] if case.startswith("Insert/") else None
        if label not in ACCOUNT_SIZES:
            continue
        for impl, m in per_impl.items():
            by_impl.setdefault(impl, []).append((ACCOUNT_SIZES[label], m))
    if not any(impl != "mpt" for impl in by_impl):
        warn("no peer results (run python -m mpt.bench --peers): bench_peers.png not written")
        return None
    if "mpt" not in by_impl:           # fall back to mpt's own Insert/N benchmarks of the same run
        by_impl["mpt"] = [(ACCOUNT_SIZES[c.split("/", 1)[1]], m) for c, m in ours.items()
                          if c.startswith("Insert/") and c.split("/", 1)[1] in ACCOUNT_SIZES]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    markers = iter("o^vDPX*")
    for impl in sorted(by_impl, key=lambda i: (i != "mpt", i)):
        if by_impl[impl]:
            _series(ax, by_impl[impl], "%s, %s" % (impl, run_label(doc)), COLORS.get(impl, None) or "#9467bd",
                    next(markers, "o"))
    for impl, ref in PEER_REFERENCE.items():
        ax.scatter(list(ref), list(ref.values()), facecolors="none", edgecolors=COLORS.get(impl, "#9467bd"),
                   marker="o", s=60, label="%s, %s" % (impl, SIDE_BY_SIDE_RUN))
    _time_axis(ax)
    sizes = sorted({s for pts in by_impl.values() for s, _ in pts} | {s for r in PEER_REFERENCE.values() for s in r})
    _size_axis(ax, sizes)
    ax.set_ylabel("insert all accounts + root")
    ax.set_title("Trie(), update() of make_accounts(n), hash(): mpt and the Python peers", fontsize=10)
    # Ratio labels next to the largest common size.
    mpt_at = {s: m.median for s, m in by_impl.get("mpt", [])}
    for impl, pts in by_impl.items():
        if impl == "mpt":
            continue
        for s, m in pts:
            if s == max(p[0] for p in pts) and s in mpt_at and mpt_at[s] > 0:
                ax.annotate("%.0f×" % (m.median / mpt_at[s]), (s, m.median), textcoords="offset points",
                            xytext=(6, 0), fontsize=8, color=COLORS.get(impl, "#9467bd"), va="center")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: (SIDE_BY_SIDE_RUN in labels[i], not labels[i].startswith("mpt")))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, loc="lower right")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    _footer(fig, doc)
    path = os.path.join(out, "bench_peers.png")
    _save(fig, path)
    plt.close(fig)
    return path


def plot_vs_geth(doc: Dict[str, Any], ours: Dict[str, Measure], out: str) -> Optional[str]:
    """mpt ÷ geth as measured side by side (the report is not used: its times come from another hour)."""
    cases = [case for case in GETH if case in SIDE_BY_SIDE_RATIO]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(cases) + 2.0))
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    rows = list(reversed(cases))
    ys = list(range(len(rows)))
    ratios = [SIDE_BY_SIDE_RATIO[case] for case in rows]
    colors = ["#2ca02c" if r <= 1 else "#d62728" for r in ratios]
    # Bars grow from 1 (parity with geth): to the left when mpt is faster, to the right when slower.
    ax.barh(ys, [r - 1.0 for r in ratios], left=1.0, color=colors, alpha=0.75, height=0.6,
            label="measured side by side")
    # Only ratios of one run: a report's mpt times over these geth times would mix machines and hours.
    low, high = min(ratios) / 1.8, max(max(ratios), 1.0) * 1.3
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ticks = [t for t in (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 10) if low <= t <= high]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g×" % v))
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels(rows, fontsize=8)
    for y, r in zip(ys, ratios):
        ax.annotate("%.2f×" % r, (r, y), textcoords="offset points", xytext=(-4, 0), fontsize=7, va="center",
                    ha="right")
    ax.set_xlabel("mpt time/op ÷ geth time/op (< 1: mpt faster)")
    ax.set_title("mpt ÷ %s, measured side by side\none core each, %s" % (GETH_LABEL, SIDE_BY_SIDE_RUN),
                 fontsize=9)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    path = os.path.join(out, "bench_vs_geth.png")
    _save(fig, path)
    plt.close(fig)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="JSON report of python -m mpt.bench --peers --format json")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "_static"),
                        help="directory for the PNG files (default: docs/_static)")
    args = parser.parse_args(argv)
    try:
        with open(args.report, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("plot_bench: cannot read %s: %s" % (args.report, e), file=sys.stderr)
        return 2
    if not isinstance(doc, dict):
        print("plot_bench: %s is not a JSON object" % args.report, file=sys.stderr)
        return 2
    ours, peers = load_report(doc)
    os.makedirs(args.out, exist_ok=True)
    written = [p for p in (plot_hash(doc, ours, args.out), plot_peers(doc, ours, peers, args.out),
                           plot_vs_geth(doc, ours, args.out)) if p]
    for p in written:
        print("wrote %s" % p)
    if not written:
        print("plot_bench: nothing to plot in %s" % args.report, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
