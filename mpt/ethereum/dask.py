"""Roots of data too large for one machine: :func:`build_root_dask` over a ``dask.bag`` or ``dask.dataframe``.

Install with ``pip install 'mpt-engine[dask]'``. The input's partitions are read where they live; each is split
by key prefix into shard groups (the records of a group, as bytes), the groups are shuffled so that one task
receives everything of its shards, in partition order (so the last duplicate still wins), and builds them with
the nogil shard builder of :mod:`mpt.shards.build`. Only the shard results (a few dozen bytes each) come back, and
the client combines them into the root, exactly as :func:`mpt.build_root` does.

To run the shard builds of an in-memory or streamed input on a cluster instead, pass the ``Client`` as
``build_root(pairs, executor=client)``.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from mpt.errors import InputFormatError, MissingExtraError
from mpt.ethereum.shards.build import build_shard_records, combine
from mpt.ethereum.shards.partition import MAX_SHARD_NIBBLES, Partition
from mpt.ethereum.shards.read import read_pairs

__all__ = ["build_root_dask", "DEFAULT_SHARD_NIBBLES"]

DEFAULT_SHARD_NIBBLES = 2


def _hexbytes(cell, column: str, row: int) -> bytes:
    if isinstance(cell, bytes):
        return cell
    if isinstance(cell, (bytearray, memoryview)):
        return bytes(cell)
    if isinstance(cell, str):
        text = cell[2:] if cell[:2] in ("0x", "0X") else cell
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise InputFormatError("column %s, row %d: %r is not hex" % (column, row, cell[:80])) from None
    raise InputFormatError("column %s, row %d: expected bytes or a hex string, got %s"
                           % (column, row, type(cell).__name__))


def _records_of_frame(frame, key: str, value: str):
    for column in (key, value):
        if column not in frame.columns:
            raise InputFormatError("no column %r (columns: %s)" % (column, ", ".join(map(str, frame.columns))))
    keys = frame[key].tolist()
    values = frame[value].tolist()
    return [(_hexbytes(k, key, i), _hexbytes(v, value, i)) for i, (k, v) in enumerate(zip(keys, values))]


def _split(partition, k: int, groups: int, key: Optional[str], value: Optional[str]) -> List[Tuple[List[bytes], dict]]:
    """One input partition -> for each shard group: the records of each of its shards (bytes), and the keys
    shorter than the shard prefix."""
    pairs = partition if key is None or value is None else _records_of_frame(partition, key, value)
    part = Partition(k, None, 0)
    try:
        read_pairs(part, pairs)
        nshards = 1 << (4 * k)
        per = -(-nshards // groups)
        out = []
        for g in range(groups):
            lo, hi = g * per, min(nshards, (g + 1) * per)
            out.append(([part.shard_bytes(s) for s in range(lo, hi)], part.short_keys if g == 0 else {}))
        return out
    finally:
        part.close()


def _pick(split_result, group: int):
    return split_result[group]


def _build_group(*pieces) -> Tuple[list, dict]:
    """Every partition's piece of one shard group, in partition order -> the group's shard results."""
    shards = len(pieces[0][0]) if pieces else 0
    results = []
    for s in range(shards):
        results.append(build_shard_records(b"".join(piece[0][s] for piece in pieces)))
    short: dict = {}
    for piece in pieces:                      # later partitions win, like later pairs
        short.update(piece[1])
    return results, short


def build_root_dask(collection, key: str = "key", value: str = "value", *, shard_nibbles: Optional[int] = None,
                    groups: Optional[int] = None, client=None) -> bytes:
    """The root of the trie holding the pairs of ``collection``, exactly as :func:`mpt.build_root` would give.

    ``collection``: a ``dask.bag`` of ``(key, value)`` bytes pairs, or a ``dask.dataframe`` with columns ``key``
    and ``value`` (bytes, or hex strings; e.g. from ``dask.dataframe.read_parquet``). Order across partitions
    counts: a later partition's value for a key wins, and an empty value deletes. ``shard_nibbles`` (default 2:
    256 shards) sets how finely keys are split; ``groups`` how many build tasks there are (default: twice the
    client's worker threads, or twice the partitions without a client; at most the shard count). ``client``: a
    ``dask.distributed.Client`` (default: the current one, or dask's default scheduler).
    """
    try:
        import dask
        from dask.delayed import delayed
    except ImportError as e:
        raise MissingExtraError("build_root_dask needs dask (pip install 'mpt-engine[dask]'): %s" % e,
                                name=e.name) from e

    k = DEFAULT_SHARD_NIBBLES if shard_nibbles is None else int(shard_nibbles)
    if not 0 <= k <= MAX_SHARD_NIBBLES:
        raise ValueError("shard_nibbles must be between 0 and %d, got %d" % (MAX_SHARD_NIBBLES, k))
    kind = type(collection).__module__
    if kind.startswith("dask.bag") or kind.startswith("dask_expr._bag"):
        columns: Tuple[Optional[str], Optional[str]] = (None, None)
    elif hasattr(collection, "columns") and hasattr(collection, "to_delayed"):
        for column in (key, value):
            if column not in collection.columns:
                raise InputFormatError("no column %r (columns: %s)"
                                       % (column, ", ".join(map(str, collection.columns))))
        columns = (key, value)
    else:
        raise TypeError("build_root_dask takes a dask.bag of (key, value) pairs or a dask.dataframe, not %s"
                        % type(collection).__name__)
    parts = collection.to_delayed()
    nshards = 1 << (4 * k)
    if groups is None:
        # Two build tasks per worker thread (one running, one queued, so none idles at the end), not per input
        # partition: every group adds a pick task per partition to the shuffle.
        threads = 0
        if client is not None:
            try:
                threads = sum(client.nthreads().values())
            except Exception:               # a client that cannot say: fall back to the partition count
                threads = 0
        groups = 2 * (threads or max(1, len(parts)))
    groups = max(1, min(int(groups), nshards))
    split = [delayed(_split, pure=True)(p, k, groups, columns[0], columns[1]) for p in parts]
    builds = [delayed(_build_group, pure=True)(*[delayed(_pick, pure=True)(s, g) for s in split])
              for g in range(groups)]
    if client is not None:
        outputs = client.gather(client.compute(builds))
    else:
        outputs = dask.compute(*builds)
    results: list = []
    short: dict = {}
    for group_results, group_short in outputs:
        results.extend(group_results)
        short.update(group_short)
    return combine(results, short)
