"""Roots of unsorted (key, value) pairs at any scale: shards built in parallel without the GIL.

``build_root(pairs)`` returns exactly the root a ``Trie`` gets from ``update(key, value)`` of every pair in order
and ``hash()``: duplicates resolve to the last value, an empty value deletes.

How (the compiled steps live in :mod:`mpt.shards`; this module runs them):

1. Read and partition (:mod:`mpt.shards.read`, :mod:`mpt.shards.partition`). Each pair is copied into the
   arena of its shard, chosen by the key's first k nibbles (16**k shards, k from the input size unless
   ``shard_nibbles`` says), by ``workers`` reader threads. Keys shorter than k nibbles are kept apart.
2. Spill (with ``spill_dir``). When the arenas outgrow ``memory_limit``, they are appended to a spill file and
   emptied, so memory stays bounded however large the input.
3. Build (:mod:`mpt.shards.build`, :mod:`mpt.shards.sort`). Each shard is sorted (key, then input position, so
   the last duplicate wins) and fed to the C StackTrie builder with the GIL released: ``workers`` threads
   really run in parallel. A shard yields nothing, a single leaf, or the reference to its top branch.
4. Combine. The shard results and the short keys go through one more builder into the root.

``executor`` may also be another ``concurrent.futures.Executor`` (a process pool) or a ``dask.distributed.Client``:
then each task receives its shards' records as bytes and returns their results (see :func:`build_shard_records`).
"""
from __future__ import annotations

import errno
import operator
import os
from collections.abc import Iterable, Mapping, Sized
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from mpt.ethereum.shards.build import build_range, build_shard_many, build_shard_records, combine, current_backend
from mpt.ethereum.shards.partition import MAX_SHARD_NIBBLES, Partition
from mpt.ethereum.shards.read import read_pairs

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, StrPath

    from mpt.ethereum.shards.build import _ShardResult

__all__ = ["build_root", "build_shard_records", "check_workers", "choose_shard_nibbles", "MAX_SHARD_NIBBLES",
           "MAX_WORKERS"]

DEFAULT_MEMORY_LIMIT = 512 * 1024 * 1024        # bytes of arenas before a spill, when spill_dir is given
MAX_WORKERS = 1024     # threads of one build_root; more only cost memory and thread start-up


def choose_shard_nibbles(n: Optional[int], workers: int, spilling: bool = False) -> int:
    """Shard prefix length for about n pairs: shards of a few thousand keys (cache-sized sorts, many tasks to
    spread), none for tiny inputs; with spilling and an unknown size, 4096 shards."""
    if n is None or n <= 0:
        return 3 if spilling else 2
    k = 0
    while k < MAX_SHARD_NIBBLES and n > 4096 * (16 ** k):
        k += 1
    if workers > 1 and k == 0 and n > 256:
        k = 1
    return k


def check_workers(workers: Optional[int], name: str = "workers") -> int:
    """``workers`` as a thread count: None gives the CPU count (at most MAX_WORKERS); an integer from 1 to
    MAX_WORKERS is kept; anything else is refused here rather than deep in a thread pool."""
    if workers is None:
        return min(os.cpu_count() or 1, MAX_WORKERS)
    try:
        if isinstance(workers, bool):       # True would silently mean one thread
            raise TypeError
        n = operator.index(workers)         # int, numpy integers; not "2", not 1.5
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (name, type(workers).__name__)) from None
    if n < 1:
        raise ValueError("%s must be at least 1, got %d" % (name, n))
    if n > MAX_WORKERS:
        raise ValueError("%s=%d is out of range: at most %d threads" % (name, n, MAX_WORKERS))
    return n


def _is_dask_client(obj):
    return type(obj).__module__.startswith("distributed") and hasattr(obj, "submit") and hasattr(obj, "gather")


def _check_spill_dir(spill_dir: Optional[StrPath]) -> Optional[str]:
    """spill_dir as a str path to an existing directory, or None."""
    if spill_dir is None:
        return None
    if not isinstance(spill_dir, (str, os.PathLike)):
        raise TypeError("spill_dir must be a path, not %s" % type(spill_dir).__name__)
    spill_dir = os.fspath(spill_dir)
    if not os.path.exists(spill_dir):
        raise FileNotFoundError(errno.ENOENT, "spill_dir %s does not exist" % spill_dir, spill_dir)
    if not os.path.isdir(spill_dir):
        raise NotADirectoryError(errno.ENOTDIR, "spill_dir %s is a file, not a directory" % spill_dir, spill_dir)
    return spill_dir


def _check_shard_nibbles(shard_nibbles: Optional[int], size_hint: Optional[int], workers: int, spilling: bool) -> int:
    if shard_nibbles is None:
        return choose_shard_nibbles(size_hint, workers, spilling)
    k = int(shard_nibbles)
    if not 0 <= k <= MAX_SHARD_NIBBLES:
        raise ValueError("shard_nibbles must be between 0 and %d, got %d" % (MAX_SHARD_NIBBLES, k))
    return k


def build_root(
    pairs: Union[Iterable[tuple[ReadableBuffer, ReadableBuffer]], Mapping[ReadableBuffer, ReadableBuffer]],
    *,
    workers: Optional[int] = None,
    shard_nibbles: Optional[int] = None,
    executor: Any = None,
    spill_dir: Optional[StrPath] = None,
    memory_limit: Optional[int] = None,
    progress: Union[bool, Callable[..., Any]] = False,
) -> bytes:
    """The root hash of the trie holding ``pairs`` (any iterable of ``(key, value)`` bytes, in any order).

    Exactly what ``Trie`` + ``update`` of every pair in order + ``hash()`` gives: the last value of a repeated
    key wins and an empty value deletes. ``workers`` threads build the shards (default: the CPU count);
    ``shard_nibbles`` fixes the shard prefix length k (0..4; default from the input size). ``executor``: a
    ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` to run the shard builds on instead.
    ``spill_dir``: spill the partitioned input to files there whenever it exceeds ``memory_limit`` bytes
    (default 512 MiB), so memory stays bounded. ``progress``: tqdm progress bars (or a tqdm-like class).
    """
    workers = check_workers(workers)
    if memory_limit is None:
        memory_limit = DEFAULT_MEMORY_LIMIT
    if memory_limit < 0:
        raise ValueError("memory_limit must not be negative")
    if executor is not None and not isinstance(executor, Executor) and not _is_dask_client(executor):
        raise TypeError("executor must be a concurrent.futures.Executor or a dask.distributed.Client, not %s"
                        % type(executor).__name__)
    if isinstance(pairs, Mapping):
        pairs = pairs.items()
    size_hint = len(pairs) if isinstance(pairs, Sized) else None
    k = _check_shard_nibbles(shard_nibbles, size_hint, workers, spill_dir is not None)

    part = Partition(k, _check_spill_dir(spill_dir), memory_limit)
    try:
        with _ProgressBar(progress, size_hint, "pairs") as bar:
            read_pairs(part, pairs, bar.update, workers)
            part.finish_input()
        backend = current_backend()
        with _ProgressBar(progress, part.nshards, "shards") as bar:
            results = run_shards(part, backend, workers, executor, bar.update)
        return combine(results, part.short_keys, backend)
    finally:
        part.close()


class _ProgressBar:
    """A tqdm bar while a step runs (``progress``: True for tqdm when installed, or a tqdm-like class); update is
    None without one."""

    def __init__(self, progress, total, unit):
        self._bar = None
        if progress is True:
            try:
                from tqdm import tqdm
            except ImportError:         # progress bars are optional
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, unit=" " + unit, unit_scale=True, desc="build_root", leave=False)
        elif progress:
            self._bar = progress(total=total, unit=" " + unit)
        self.update = self._bar.update if self._bar is not None else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.close()


def _chunks(nshards, parts):
    step = max(1, -(-nshards // parts))
    return [(lo, min(nshards, lo + step)) for lo in range(0, nshards, step)]


def run_shards(part: Partition, backend: int, workers: int, executor: Any = None,
               done: Optional[Callable[[int], object]] = None) -> list[_ShardResult]:
    """Every shard's result, in shard order: built on this thread, on ``workers`` threads, or on ``executor``.
    ``done(n)`` is called as n more shards are finished."""
    # Several chunks per worker, so that a slow shard does not leave the other threads idle at the end.
    chunks = _chunks(part.nshards, workers * 8 if part.nshards > 1 else 1)
    done = done or (lambda n: None)
    if executor is not None and not isinstance(executor, ThreadPoolExecutor):
        return _run_elsewhere(part, chunks, workers, executor, done)
    results = []
    if executor is None and (workers == 1 or len(chunks) == 1):
        for lo, hi in chunks:
            results.extend(build_range(part, lo, hi, backend))
            done(hi - lo)
        return results
    pool = ThreadPoolExecutor(max_workers=workers) if executor is None else executor
    try:
        futures = [pool.submit(build_range, part, lo, hi, backend) for lo, hi in chunks]
        for (lo, hi), future in zip(chunks, futures):
            results.extend(future.result())
            done(hi - lo)
    finally:
        if executor is None:
            pool.shutdown(wait=True, cancel_futures=True)
    return results


def _run_elsewhere(part, chunks, workers, executor, done):
    """The shard builds on an executor of other processes (a process pool, a Dask cluster): each chunk's records
    are sent as bytes, submitted as they are read so that a spilled input never sits in memory whole (at most a
    window of chunks is in flight)."""
    window = max(2, 2 * workers)
    pending = []
    results = []
    options = {"pure": False} if _is_dask_client(executor) else {}
    backend = -1                # another machine: its own widest Keccak backend
    for lo, hi in chunks:
        blobs = [part.shard_bytes(s) for s in range(lo, hi)]
        pending.append((hi - lo, executor.submit(build_shard_many, blobs, backend, **options)))
        del blobs
        while len(pending) >= window:
            n, future = pending.pop(0)
            results.extend(future.result())
            done(n)
    for n, future in pending:
        results.extend(future.result())
        done(n)
    return results
