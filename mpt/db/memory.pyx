# cython: language_level=3, boundscheck=True, wraparound=True, cdivision=False, annotation_typing=False
# (Python's rules, which this module's Python code is written for: indexing, division, and annotations that are
# hints, not checks (prefix_range takes any bytes-like); its one hot path, bulk_write, indexes nothing.)
"""The node-database protocol and the in-memory implementation.

Compiled so that the trie committer writes a commit's nodes in C through :meth:`MemoryDB.bulk_write`, declared in
memory.pxd (a Python call per commit costs more than the nodes of a small one)."""
from cpython.ref cimport Py_REFCNT

import os
from bisect import bisect_left
from contextlib import contextmanager
from typing import Iterator, Optional, Protocol, Tuple, runtime_checkable

from mpt.db.store_base import describe_folder, folder_kind


@runtime_checkable
class NodeDatabase(Protocol):
    """What every tree family needs from its storage (see the package docstring of :mod:`mpt.db`)."""

    def get(self, key: bytes) -> Optional[bytes]: ...

    def put(self, key: bytes, value: bytes) -> None: ...

    def write_batch(self): ...

    def close(self) -> None: ...


def check_database(db, what="db"):
    """db itself if it can serve as a node database (it has ``get``: a read-only mapping is enough for reading);
    else a TypeError at once, naming what to pass instead, rather than a confusing failure at the first commit."""
    if callable(getattr(db, "get", None)):
        return db
    if isinstance(db, (str, bytes, os.PathLike)):
        path = os.fsdecode(db)
        kind = folder_kind(path)
        if kind == "leveldb":
            hint = "it is a LevelDB store: pass LevelDBStore(%r) (from mpt.db import LevelDBStore)" % path
        elif kind in ("lmdb", "missing", "empty"):
            hint = "pass LMDBStore(%r) (from mpt.db import LMDBStore)" % path
        else:
            hint = "it is %s" % describe_folder(path)
        raise TypeError("%s must be a node database, not the path %r: %s" % (what, path, hint))
    raise TypeError("%s must be a node database (MemoryDB, LMDBStore(path) or a dict), not %s"
                    % (what, type(db).__name__))


@runtime_checkable
class OrderedNodeDatabase(NodeDatabase, Protocol):
    """A node database that can also delete and scan keys in order: what a versioned IAVL tree needs
    (its latest version is found by a reverse scan, pruning deletes nodes, fast nodes are removed)."""

    def delete(self, key: bytes) -> None: ...

    def iterate(self, start: Optional[bytes] = None, end: Optional[bytes] = None,
                reverse: bool = False) -> Iterator[Tuple[bytes, bytes]]: ...


def prefix_range(prefix: bytes) -> Tuple[bytes, Optional[bytes]]:
    """(start, end) for ``iterate`` so that it yields exactly the keys that start with prefix (end None when
    the prefix is all 0xff bytes: nothing sorts after it but its own extensions)."""
    prefix = bytes(prefix)
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return prefix, None
    return prefix, stripped[:-1] + bytes([stripped[-1] + 1])


_DELETED = object()     # a batch's mark for "delete this key" (values are bytes, so it cannot collide)


class _DictBatch:
    """Collects writes and deletes; MemoryDB applies them all at once when the batch ends cleanly."""

    __slots__ = ("pending", "deletes")

    def __init__(self):
        self.pending = {}
        self.deletes = False

    def put(self, key, value):
        self.pending[key] = value

    def delete(self, key):
        """Delete key when the batch is applied (a later put of the same key in the batch wins, and the reverse)."""
        self.pending[key] = _DELETED
        self.deletes = True

    def put_many(self, pairs):
        """Put every (key, value) of a mapping or an iterable of pairs (one C-level dict update instead of a
        Python loop)."""
        before = len(self.pending)
        self.pending.update(pairs)
        return len(self.pending) - before


cdef class MemoryDB:
    """A dict-backed node database (the default for tries created without one)."""

    def __init__(self, data=None):
        self._data = {} if data is None else data
        self._head = None
        self._sorted = None

    cdef int bulk_write(self, dict nodes, object head) except -1:
        """Add nodes (key -> value) in one dict update; an empty store whose dict nothing else holds takes the
        dict itself, already sized for every node (the trie committer's first commit), instead of copying it.
        head, when not None, becomes the head root."""
        cdef object data = self._data
        # 2: the attribute and `data` (Cython holds no further reference to a local it owns).
        if not data and type(data) is dict and Py_REFCNT(data) == 2:
            self._data = nodes
        else:
            data.update(nodes)
        self._sorted = None
        if head is not None:
            self._head = head
        return 0

    @property
    def records(self):
        """The dict that holds the records (key -> value), for compiled code that reads and writes it in C (IAVL's
        NodeDB): a writer that adds or deletes keys through it calls ``keys_changed()`` afterwards."""
        return self._data

    def get(self, key, default=None):
        return self._data.get(key, default)

    def put(self, key, value):
        self._data[key] = value
        self._sorted = None

    def delete(self, key):
        """Remove key (nothing happens if it is absent)."""
        if self._data.pop(key, None) is not None:
            self._sorted = None

    def iterate(self, start=None, end=None, reverse=False):
        """(key, value) pairs with start <= key < end (None: unbounded) in key order, or in reverse order.

        The sorted key list is kept until the next write that changes the key set, so repeated scans of an
        unchanged database cost a binary search each; the first full scan after a write sorts the keys again (a
        bounded scan then sorts only the keys in its range). The scan runs over the keys there were when it
        started: keys added meanwhile are not seen, keys deleted meanwhile are skipped."""
        keys = self._sorted
        data = self._data
        # Writers that fill the dict directly (the trie committer) add keys without dropping the list: a new key
        # changes the length, and overwrites leave the key set as it was.
        if keys is None or len(keys) != len(data):
            if start is not None and end is not None:
                # A bounded scan after writes (IAVL's version lookups): sort only the keys in range.
                keys = sorted([k for k in data if start <= k < end])
                order = range(len(keys) - 1, -1, -1) if reverse else range(len(keys))
                for i in order:
                    v = data.get(keys[i])
                    if v is not None:
                        yield keys[i], v
                return
            keys = self._sorted = sorted(data)
        lo = 0 if start is None else bisect_left(keys, start)
        hi = len(keys) if end is None else bisect_left(keys, end)
        order = range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)
        for i in order:
            k = keys[i]
            v = data.get(k)
            if v is not None:
                yield k, v

    def keys_changed(self):
        """Say that keys were added to or deleted from the dict directly (a writer holding ``_data``, such as
        IAVL's NodeDB): the next ``iterate`` sorts the keys again. Added keys alone are noticed by the length."""
        self._sorted = None

    @contextmanager
    def write_batch(self, head=None) -> Iterator[_DictBatch]:
        """Writes made through the batch land together, and not at all if the block raises.

        head, when given, becomes the head root together with the batch's nodes.
        """
        batch = _DictBatch()
        yield batch
        self._apply(batch)
        if head is not None:
            self._head = head

    def _apply(self, batch):
        if batch.pending:
            self._sorted = None
        if not batch.deletes:
            self._data.update(batch.pending)
            return
        data = self._data
        for k, v in batch.pending.items():
            if v is _DELETED:
                data.pop(k, None)
            else:
                data[k] = v

    def head(self):
        """The root recorded by the last commit with set_head=True (None before one)."""
        return self._head

    def set_head(self, root):
        self._head = root

    def close(self):
        """Nothing to release; kept for the protocol."""

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def items(self):
        return self._data.items()

    @property
    def size(self):
        """Total bytes of keys and values stored."""
        return sum(len(k) + len(v) for k, v in self._data.items())

    def __repr__(self):
        return "<MemoryDB %d nodes>" % len(self._data)


def write_nodes(db, nodes, head=None) -> int:
    """Write (hash, blob) pairs, or a dict hash -> blob, into db in one batch (key by key for a plain mapping);
    returns the count. A dict is a MemoryDB's fastest input (one dict.update; an empty MemoryDB takes the dict
    itself, which is the store's afterwards): the trie committer hands over a dict sized for its nodes.

    head, when given, is recorded as the database's head root in the same batch; a database without a
    head (a plain mapping) raises TypeError.
    """
    if type(db) is MemoryDB:
        # The default database, written directly: one dict.update, no batch object and no generator-based
        # context manager per commit (they cost more than the nodes of a small commit).
        if type(nodes) is not dict:
            nodes = dict(nodes)
        (<MemoryDB>db).bulk_write(nodes, head)
        return len(nodes)
    if isinstance(nodes, dict):
        nodes = nodes.items()
    count = 0
    batch_factory = getattr(db, "write_batch", None)
    if batch_factory is not None:
        with (batch_factory() if head is None else batch_factory(head=head)) as batch:
            put_many = getattr(batch, "put_many", None)
            if put_many is not None:
                # A batch that can take all pairs at once (MemoryDB's): no Python call per node.
                nodes = list(nodes)
                put_many(nodes)
                return len(nodes)
            for node_hash, blob in nodes:
                batch.put(node_hash, blob)
                count += 1
    else:
        if head is not None:
            raise TypeError("%s has no head to set; use MemoryDB or LMDBStore" % type(db).__name__)
        for node_hash, blob in nodes:
            db[node_hash] = blob
            count += 1
    return count
