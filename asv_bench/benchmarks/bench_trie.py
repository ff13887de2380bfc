"""asv benchmarks generated from the shared case registry, :mod:`mpt.bench.cases`.

Nothing here defines a workload: every case of the registry (geth's names: HashFixedSize/10K, Prove, ...) becomes
part of an asv class named after its group, with the rest of the name as the parameter::

    HashFixedSize/10K      ->  bench_trie.HashFixedSize, size='10K'
    DeriveSha200/std_trie  ->  bench_trie.DeriveSha200, variant='std_trie'
    VerifyRangeProof100    ->  bench_trie.VerifyRangeProof, size='100'
    Insert100K, Prove      ->  bench_trie.Insert100K, bench_trie.Prove (no parameters)

Each class has three benchmarks:

``time_op``
    seconds per benchmark operation (geth's ns/op). A Case's ``op`` may perform a batch of operations
    (``ops_per_sample``: Prove and VerifyProof run 256 per call); the class's ``timer`` divides the clock by that
    batch size, so asv's samples are per operation like ``python -m mpt.bench`` and ``go test -bench``.
    ``number = 1``: one ``op`` call per sample, and asv runs ``setup`` before every sample, so stateful cases
    (``hash()`` caches, ``commit()`` cleans) always time a fresh state. Stateless cases keep one state per process
    (DeriveSha200/stack_trie reuses its StackTrie, as geth does) and warm up first.
``track_bytes_per_op`` / ``track_allocs_per_op``
    B/op and allocs/op through Python's allocators (PyMem + PyObject domains), counted by
    :mod:`mpt.bench._alloc` over one ``op`` call after a warm-up call, as ``python -m mpt.bench`` does. Skipped
    (asv shows n/a) when the hook is not built.

Every benchmark job first runs the case's ``check`` once (the reference root, valid proofs, ...): a commit that
computes a wrong result fails its benchmarks instead of recording a number. A case whose engine API is missing
from the commit under test (an ImportError) is skipped.

``asv_bench/run.sh`` benchmarks each commit's own compiled engine with the *current* checkout's ``mpt/bench``
(registry, workloads, allocator hook) copied over it, so every commit is measured on identical workloads. It
exports ``MPT_ASV_EXPECT_DIR``; when that is set, importing this module fails unless ``mpt`` comes from there
(a guard against silently benchmarking some other installed copy).
"""

from __future__ import annotations

import gc
import os
import re
import sys
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import mpt

_expect_dir = os.environ.get("MPT_ASV_EXPECT_DIR")
if _expect_dir:
    _got = os.path.realpath(os.path.dirname(mpt.__file__))
    if _got != os.path.realpath(_expect_dir):
        raise ImportError("benchmarking the wrong mpt: imported %s, MPT_ASV_EXPECT_DIR is %s" % (_got, _expect_dir))

from mpt.bench import cases as _cases  # noqa: E402 - after the guard above

try:
    from mpt.bench import _alloc
except ImportError:  # the allocator hook is not built: the track_* benchmarks are skipped
    _alloc = None

SUITE_VERSION = "1"
"""Bump when what the benchmarks measure changes: asv keeps results only of the current version."""

ROUNDS = 2
"""asv runs every benchmark job this many times, interleaved with the others (drift shows up as spread)."""

REPEAT = (10, 25, 10.0)
"""Samples per round: at least 10, at most 25, stop adding after 10 s (asv's (min, max, max_time))."""

TIMEOUT = 600.0
"""Seconds before asv kills one benchmark job (100K cases: a 6 s workload, then ~1.6 s per sample)."""

_SIZE_LABEL = re.compile(r"^\d+[KM]?$")


# ---------------------------------------------------------------------------------------------------------------
# Registry -> classes
# ---------------------------------------------------------------------------------------------------------------

def _split(case) -> Tuple[str, Optional[str]]:
    """(class name, parameter value or None) for a registry case."""
    group = case.group.split("/")[0]
    if case.name == group:
        return group, None
    if case.name.startswith(group):
        rest = case.name[len(group):].lstrip("/")
        if rest:
            return group, rest
    return group, case.name


def _grouped() -> "OrderedDict[str, List[Tuple[Optional[str], Any]]]":
    groups: "OrderedDict[str, List[Tuple[Optional[str], Any]]]" = OrderedDict()
    for case in _cases.CASES.values():
        group, param = _split(case)
        groups.setdefault(group, []).append((param, case))
    return groups


def _class_name(group: str) -> str:
    name = re.sub(r"\W", "_", group)
    return name if name[:1].isalpha() else "Case_" + name


class _PerOpTimer:
    """asv's timer, scaled: ``perf_counter() / ops`` makes each sample the time of one benchmark operation."""

    __slots__ = ("ops",)

    def __init__(self, ops: int):
        self.ops = ops

    def __call__(self) -> float:
        return time.perf_counter() / self.ops


_checked: set = set()          # case names whose check() passed in this process
_states: Dict[str, Any] = {}   # the one state of each stateless case in this process
_warm: set = set()             # stateless cases whose state has run op once


def _run_check(case) -> None:
    if case.name not in _checked:
        case.check(case.setup())
        _checked.add(case.name)


def _skip_if_unavailable(exc: ImportError) -> NotImplementedError:
    # asv treats NotImplementedError from setup as "skip" (n/a), not as a failure.
    print("skipped: this commit's mpt lacks what the case needs (%s)" % exc, file=sys.stderr)
    return NotImplementedError(str(exc))


def _state(case, fresh: bool):
    if case.stateful or fresh:
        return case.setup()
    if case.name not in _states:
        _states[case.name] = case.setup()
    return _states[case.name]


def _alloc_per_op(case) -> Tuple[float, float]:
    """(bytes, allocs) per op: one op counted, after a warm-up op (a separate fresh state if stateful)."""
    if _alloc is None:
        raise NotImplementedError("mpt.bench._alloc is not built")
    warm = _state(case, fresh=False)
    case.op(warm)
    state = case.setup() if case.stateful else warm
    gc.collect()
    _, nbytes, nallocs = _alloc.measure(case.op, state)
    return nbytes / case.ops_per_sample, nallocs / case.ops_per_sample


def _make_class(group: str, members: List[Tuple[Optional[str], Any]]) -> type:
    parameterized = not (len(members) == 1 and members[0][0] is None)
    by_param: Dict[Optional[str], Any] = {}
    for param, case in members:
        by_param[param if parameterized else None] = case
    labels = [p for p, c in sorted(by_param.items(), key=lambda pc: pc[1].size)] if parameterized else []
    param_name = "size" if all(_SIZE_LABEL.match(p) for p in labels) else "variant"
    cases = list(by_param.values())
    stateful = any(c.stateful for c in cases)

    def case_for(params) -> Any:
        return by_param[params[0] if params else None]

    def setup(self, *params):
        case = case_for(params)
        try:
            _run_check(case)
            self._case = case
            self._state = _state(case, fresh=False)
        except ImportError as e:
            raise _skip_if_unavailable(e) from None
        # asv reads `timer` again after setup, so each parameter gets its own batch size.
        self.timer = _PerOpTimer(case.ops_per_sample)

    def time_op(self, *params):
        self._case.op(self._state)

    def track_bytes_per_op(self, *params):
        return _alloc_per_op(self._case)[0]

    def track_allocs_per_op(self, *params):
        return _alloc_per_op(self._case)[1]

    ops = sorted({c.ops_per_sample for c in cases})
    time_op.pretty_name = "%s time/op" % group
    time_op.version = "%s-time-%s" % (SUITE_VERSION, ops)
    track_bytes_per_op.pretty_name = "%s B/op" % group
    track_bytes_per_op.unit = "bytes"
    track_bytes_per_op.version = "%s-bytes-%s" % (SUITE_VERSION, ops)
    track_allocs_per_op.pretty_name = "%s allocs/op" % group
    track_allocs_per_op.unit = "allocs"
    track_allocs_per_op.version = "%s-allocs-%s" % (SUITE_VERSION, ops)

    attrs = {
        "__module__": __name__,
        "__doc__": "; ".join("%s: %s" % (c.name, c.doc) for c in cases),
        "cases": {p: c.name for p, c in by_param.items()},
        "setup": setup,
        "time_op": time_op,
        "track_bytes_per_op": track_bytes_per_op,
        "track_allocs_per_op": track_allocs_per_op,
        "number": 1,
        "rounds": ROUNDS,
        "repeat": REPEAT,
        "timeout": TIMEOUT,
        # A stateful op needs a fresh setup per call, so a warm-up call is only setup work; stateless ones warm up.
        "warmup_time": 0.0 if stateful else 0.2,
    }
    if parameterized:
        attrs["params"] = [labels]
        attrs["param_names"] = [param_name]
    return type(_class_name(group), (object,), attrs)


def _generate() -> "OrderedDict[str, type]":
    classes: "OrderedDict[str, type]" = OrderedDict()
    for group, members in _grouped().items():
        cls = _make_class(group, members)
        classes[cls.__name__] = cls
    return classes


BENCHMARK_CLASSES = _generate()
"""The generated asv classes by name, in registry order."""

globals().update(BENCHMARK_CLASSES)

BENCHMARK_METHODS = ("time_op", "track_bytes_per_op", "track_allocs_per_op")


def benchmark_names() -> List[str]:
    """Every asv benchmark this module defines, as ``bench_trie.<Class>.<method>(<param>)`` like asv names them
    (the parameter as its repr, only for parameterized classes)."""
    names = []
    for cls_name, cls in BENCHMARK_CLASSES.items():
        labels = cls.params[0] if hasattr(cls, "params") else [None]
        for method in BENCHMARK_METHODS:
            for label in labels:
                suffix = "" if label is None else "(%r)" % label
                names.append("bench_trie.%s.%s%s" % (cls_name, method, suffix))
    return names


def case_of(benchmark: str) -> str:
    """The registry case behind a name from :func:`benchmark_names` (or an asv graph's name plus parameter)."""
    m = re.match(r"^(?:bench_trie\.)?(\w+)\.\w+(?:\('(.*)'\))?$", benchmark)
    if not m:
        raise KeyError(benchmark)
    return BENCHMARK_CLASSES[m.group(1)].cases[m.group(2)]


del _expect_dir
