"""The benchmark runner: times a :class:`~mpt.bench.registry.Case` and returns its :class:`Result`.

How a case is measured:

1. ``check``: the case runs once on a fresh state and its result must be right (the reference root, ...).
2. calibration: one more op gives its rough cost; a sample then makes enough op calls to last ``min_time``.
3. ``count`` samples: stateful cases (hash, commit) build a fresh state right before each op call and time
   that call alone (geth's StopTimer/StartTimer around its setup, asv's setup per sample); the others reuse
   one state. A full garbage collection precedes each sample; the collector stays on while the
   clock runs (Python users pay for it too). time/op = sample time / (calls * ops_per_sample).
4. B/op and allocs/op: one op under the allocator hook of :mod:`mpt.bench._alloc` (PyMem + PyObject domains),
   divided by ops_per_sample. Like Go's ``-benchmem``: allocations and bytes requested, frees not counted.
5. Floors: HashFixedSize also reports ``keccak_ratio``, hash() time / time of our C keccak alone over the same
   node encodings in a C loop; the Merkle cases ``sha_ratio``, the same against our C SHA-256 over the same
   preimages. Floor samples are interleaved with the case's samples.
6. Companions (``--peers``): each peer's case on the same workload, one sample after every sample of the case;
   mpt's row is one measurement, shared by the main table and the peer ratios.
7. ``peak_rss`` cases: one op in a fresh interpreter (:mod:`mpt.bench.rss`).

Progress goes to stderr: a bar on a terminal, otherwise (a log, CI) one line per finished case.
"""

from __future__ import annotations

import gc
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from mpt.bench.stats import median, spread_pct

try:
    from mpt.bench import _alloc
except ImportError:  # the extension is not built: report time only
    _alloc = None

ALLOC_HOOK_BUILT = _alloc is not None
"""Whether B/op, allocs/op and the Keccak floors can be measured (mpt.bench._alloc is compiled)."""

__all__ = ["Result", "Runner", "progress", "ALLOC_HOOK_BUILT", "MAX_CALLS_PER_SAMPLE", "MAX_STATES_PER_SAMPLE"]

MAX_CALLS_PER_SAMPLE = 1_000_000
MAX_STATES_PER_SAMPLE = 20_000   # stateful cases build this many fresh states per sample at most


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


# ---------------------------------------------------------------------------------------------------------------
# Progress on stderr
# ---------------------------------------------------------------------------------------------------------------

class NoProgress:
    """Stands in for tqdm when the bar is off (--no-progress)."""

    def update(self, n=1):
        pass

    def set_description_str(self, s, refresh=True):
        pass

    def write(self, s):
        print(s, file=sys.stderr)

    def case_done(self, line):
        pass

    def peer_sample(self, case_name, peer_name, done, count, seconds):
        pass

    def close(self):
        pass


# A peer sample that lasts this long gets a progress line of its own (without a terminal): a slow peer's case can
# take minutes (py-trie on Insert/100K: about 7), and a log that stays silent that long looks hung.
SLOW_SAMPLE_SECONDS = 2.0


class LineProgress(NoProgress):
    """Progress for a stderr that is not a terminal (a log file, CI): one line per finished case, so a long run
    is never silent and the log holds no carriage-return bar frames."""

    def __init__(self, total_cases: int):
        self.total_cases = total_cases
        self.done = 0

    def case_done(self, line):
        self.done += 1
        print("[%d/%d] %s" % (self.done, self.total_cases, line), file=sys.stderr, flush=True)

    def peer_sample(self, case_name, peer_name, done, count, seconds):
        if seconds >= SLOW_SAMPLE_SECONDS:
            print("[%d/%d] %s: %s sample %d/%d took %.1f s" % (self.done + 1, self.total_cases, case_name, peer_name,
                                                               done, count, seconds), file=sys.stderr, flush=True)


class BarProgress:
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

    def peer_sample(self, case_name, peer_name, done, count, seconds):
        self.bar.set_description_str("%s: %s %d/%d" % (case_name, peer_name, done, count))

    def close(self):
        self.bar.close()


def progress(total: int, total_cases: int, enabled: bool, stream=None):
    """The progress reporter: nothing with enabled False, a tqdm bar when stream (stderr) is a terminal and
    tqdm is installed, else one line per finished case."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        return NoProgress()
    isatty = getattr(stream, "isatty", None)
    if not (isatty is not None and isatty()):
        return LineProgress(total_cases)
    try:
        import tqdm as tqdm_module
    except ImportError:
        return LineProgress(total_cases)
    # No monitor thread: it would allocate (and run) while we count allocations and time.
    tqdm_module.tqdm.monitor_interval = 0
    return BarProgress(tqdm_module.tqdm(total=total, file=stream, unit="sample", dynamic_ncols=True,
                                        leave=False))


# ---------------------------------------------------------------------------------------------------------------
# Floors: the hash function alone on the inputs a case hashes, timed after each of its samples
# ---------------------------------------------------------------------------------------------------------------

def _timed_ns(fn, *args) -> int:
    t0 = time.perf_counter_ns()
    fn(*args)
    return time.perf_counter_ns() - t0


class KeccakFloor:
    """Two floors of a case that keccaks node encodings: Keccak alone on the backend hash() uses (all encodings
    in one batch on its lanes), and on one lane, one encoding after another."""

    def __init__(self, blobs: List[bytes]):
        try:
            from mpt.core.runtime import keccak_backend
        except ImportError:         # a commit before the package layout (asv history)
            from mpt.runtime import keccak_backend

        self.blobs = blobs
        self.backend = keccak_backend()
        self.batched: List[float] = []
        self.one_lane: List[float] = []

    def sample(self, calls: int, ops: int) -> None:
        self.batched.append(_timed_ns(_alloc.keccak_floor, self.blobs, calls, self.backend) / ops)
        if self.backend != "scalar":
            self.one_lane.append(_timed_ns(_alloc.keccak_floor, self.blobs, calls, "scalar") / ops)

    def extra(self, case_median: float) -> Dict[str, Any]:
        floor = median(self.batched)
        one_lane = median(self.one_lane) if self.one_lane else floor
        return dict(
            keccak_ratio=case_median / floor if floor > 0 else None,
            keccak_floor_ns=floor,
            keccak_backend=self.backend,
            keccak_ratio_one_lane=case_median / one_lane if one_lane > 0 else None,
            keccak_floor_one_lane_ns=one_lane,
            keccak_calls=len(self.blobs),
            keccak_bytes=sum(len(b) for b in self.blobs),
        )


class Sha256Floor:
    """Two floors of a case that SHA-256s preimages: batched as root() hashes them (two at a time on SHA-NI),
    and one call per message."""

    def __init__(self, messages: List[bytes]):
        try:
            from mpt.core._sha256.binding import sha256_floor
        except ImportError:         # an older commit (asv history): the private name, before or after the layout
            try:
                from mpt.core._sha256.binding import _floor as sha256_floor
            except ImportError:
                from mpt._sha256.binding import _floor as sha256_floor

        self.floor = sha256_floor
        self.messages = messages
        self.batched: List[float] = []
        self.one_at_a_time: List[float] = []

    def sample(self, calls: int, ops: int) -> None:
        self.batched.append(_timed_ns(self.floor, self.messages, calls, True) / ops)
        self.one_at_a_time.append(_timed_ns(self.floor, self.messages, calls, False) / ops)

    def extra(self, case_median: float) -> Dict[str, Any]:
        try:
            from mpt.core._sha256 import sha256_backend
        except ImportError:         # a commit before the package layout (asv history)
            from mpt._sha256 import sha256_backend

        batched, single = median(self.batched), median(self.one_at_a_time)
        return dict(
            sha_ratio=case_median / batched if batched > 0 else None,
            sha_floor_ns=batched,
            sha_ratio_one_at_a_time=case_median / single if single > 0 else None,
            sha_floor_one_at_a_time_ns=single,
            sha_backend=sha256_backend(),
            sha_calls=len(self.messages),
            sha_bytes=sum(len(m) for m in self.messages),
        )


def floors_of(case) -> list:
    """The floors a case reports (none for most)."""
    out: list = []
    if case.keccak_blobs is not None and _alloc is not None:
        out.append(KeccakFloor(case.keccak_blobs(case.setup())))
    if case.sha256_messages is not None:
        out.append(Sha256Floor(case.sha256_messages(case.setup())))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class _Companion:
    """A peer's case timed beside the main case (--peers), with its calibrated calls and its result."""

    peer: Any
    case: Any
    state: Any
    calls: int
    result: Result


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
            # the clock started had left the cache by their turn (several times slower per op; docs/contributing/
            # performance_notes.md); a commit or hash right after building the trie is the case geth and users
            # time. The clock reads around each op add a few percent to the smallest case.
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

    def _sample_into(self, result: Result, case, state, calls: int) -> None:
        elapsed = self._time_calls(case, state, calls)
        result.samples.append(elapsed / (calls * case.ops_per_sample))
        result.iterations.append(calls * case.ops_per_sample)
        self.bar.update(1)

    def _companions(self, case, pairs: Sequence[Any], notes: Optional[List[str]]) -> List[_Companion]:
        """The (peer, peer case) pairs whose check passes, calibrated; a failing one is a note."""
        out = []
        for peer, peer_case in pairs:
            self.bar.set_description_str("%s: %s (check)" % (case.name, peer.name))
            try:
                peer_case.check(peer_case.setup())
            except Exception as e:  # noqa: BLE001 - a broken peer is a note, never an error
                if notes is not None:
                    notes.append("peer %s skipped at %s: %s: %s" % (peer.name, case.name, type(e).__name__, e))
                self.bar.update(self.count)
                continue
            peer_state = None if peer_case.stateful else peer_case.setup()
            out.append(_Companion(peer, peer_case, peer_state, self._calls(peer_case, peer_state),
                                  Result(case.name, [], [], extra={"impl": peer.name, "detail": peer.detail})))
        return out

    def run_case(self, case, companions: Sequence[Any] = (), notes: Optional[List[str]] = None) -> Result:
        """Measure case. companions are (peer, peer case) pairs timed on the same workload, one sample each
        after every sample of case (the --peers comparison); their Results land in
        ``result.peer_results`` by peer name, with ``extra["ratio_vs_mpt"]``. A companion that fails its check is
        left out with a note."""
        self.bar.set_description_str("%s (check)" % case.name)
        case.check(case.setup())
        state = None if case.stateful else case.setup()
        calls = self._calls(case, state)
        others = self._companions(case, companions, notes)
        floors = floors_of(case)
        self.bar.set_description_str(case.name)
        result = Result(case.name, [], [])
        peer_sample = getattr(self.bar, "peer_sample", None)
        for i in range(self.count):
            self._sample_into(result, case, state, calls)
            for floor in floors:
                floor.sample(calls, calls * case.ops_per_sample)
            for other in others:
                t0 = time.perf_counter()
                self._sample_into(other.result, other.case, other.state, other.calls)
                if peer_sample is not None:
                    peer_sample(case.name, other.peer.name, i + 1, self.count, time.perf_counter() - t0)
        result.bytes_per_op, result.allocs_per_op = self._allocs(case, state)
        if case.peak_rss:
            from mpt.bench.rss import measure_in_subprocess

            self.bar.set_description_str("%s (peak RSS)" % case.name)
            result.extra.update(measure_in_subprocess(case.name))
        for floor in floors:
            result.extra.update(floor.extra(result.median))
        for other in others:
            other.result.extra["ratio_vs_mpt"] = other.result.median / result.median
            result.peer_results[other.peer.name] = other.result
        return result
