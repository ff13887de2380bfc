"""LevelDBStore: a node database in a LevelDB directory (the ``plyvel`` package), such as a Cosmos node's.

A Cosmos SDK node keeps its application state in ``data/application.db``, a goleveldb directory by default. Each
module's IAVL tree lives in that one database under the key prefix ``s/k:<store name>/`` (the multistore's
prefix store), and the multistore's own records (``s/latest``, ``s/<version>`` commit infos) sit beside them.
``LevelDBStore(path, prefix=b"s/k:bank/")`` opens such a database and shows one module store: every key is
prefixed on the way in, and iteration yields keys with the prefix stripped, so ``MutableTree`` sees exactly the
keys Go iavl wrote for that module (``s`` nodes, ``f`` fast nodes, ``m`` metadata).

goleveldb and the C++ LevelDB that plyvel wraps share the on-disk format (log, sorted tables with snappy blocks,
MANIFEST), so either can read what the other wrote.

Note: opening a LevelDB **changes the directory even if you only read**: LevelDB replays the write-ahead log into
a new table, writes a new MANIFEST and rotates its text ``LOG``. The data stay the same, but do not open a
directory you must keep byte-for-byte (a fixture, a backup) in place: open a copy. ``readonly=True`` refuses
writes through this object; it cannot stop LevelDB's own rewrite on open. LevelDB allows one process at a time
(it holds the ``LOCK`` file): a directory held by a running node cannot be opened, and the error says so.
"""
import os
from contextlib import contextmanager

from mpt.db.store_base import PersistentStore, describe_folder, import_backend
from mpt.errors import StoreClosedError, StoreCorruptError, StoreError, StoreReadOnlyError, StoreWriteError

HEAD_KEY = b"mpt:head"      # the head root of an Ethereum trie (Trie.commit(set_head=True)), as in LMDBStore


def _text(error):
    # plyvel's messages are bytes: b'IO error: lock .../LOCK: already held by process'.
    arg = error.args[0] if error.args else error
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _disk_full(path, text):
    if "No space left" in text:
        return True
    try:
        free = os.statvfs(path)
    except OSError:
        return False
    return free.f_bavail * free.f_frsize < (1 << 20)


def store_failure(path, error, doing):
    """The mpt error for a plyvel ``error`` raised while ``doing`` something with the LevelDB at ``path``.

    LevelDB names what went wrong only in its message (``Corruption: ...``, ``IO error: ...: No space left on
    device``, ``... Read-only file system``): damaged files are :class:`~mpt.errors.StoreCorruptError`, a full
    disk or a file over the size limit :class:`~mpt.errors.StoreWriteError`, a read-only file system
    :class:`~mpt.errors.StoreReadOnlyError`, anything else :class:`~mpt.errors.StoreError`."""
    text = _text(error)
    if type(error).__name__ == "CorruptionError" or text.startswith("Corruption"):
        return StoreCorruptError("the LevelDB at %s is damaged (%s while %s): restore it from a copy"
                                 % (path, text, doing))
    if "Read-only file system" in text:
        return StoreReadOnlyError("the LevelDB at %s is on a read-only file system (%s while %s)"
                                  % (path, text, doing))
    if "No space left" in text or "File too large" in text or "Disk quota" in text:
        full = _disk_full(path, text)
        reason = "the disk is full" if full else "a file would exceed the size limit" if "too large" in text \
            else "the disk quota is used up"
        return StoreWriteError("writing to the LevelDB at %s failed: %s (%s while %s); nothing of this write was "
                               "stored and the last write is intact" % (path, reason, text, doing),
                               path=path, disk_full=full)
    return StoreError("the LevelDB at %s failed while %s: %s" % (path, doing, text))


class LevelDBBatch:
    """The puts and deletes of one ``write_batch()`` block, applied atomically when it exits cleanly."""

    __slots__ = ("_batch", "_count")

    def __init__(self, batch):
        self._batch = batch
        self._count = 0

    def put(self, key, value):
        self._batch.put(bytes(key), bytes(value))
        self._count += 1

    def delete(self, key):
        self._batch.delete(bytes(key))
        self._count += 1

    def put_many(self, records):
        """Put every (key, value) of a mapping or an iterable of pairs, with plyvel's put bound once: saving an
        IAVL version writes tens of thousands of records, and a Python frame of ``put`` each cost more than
        LevelDB's own work."""
        put = self._batch.put
        items = records.items() if hasattr(records, "items") else records
        count = 0
        for key, value in items:
            put(key if type(key) is bytes else bytes(key), value if type(value) is bytes else bytes(value))
            count += 1
        self._count += count
        return count

    @property
    def bytes_put(self):
        """plyvel's own ``put(key, value)``, for writers that loop in C (IAVL's save_version): keys and values
        must be bytes, and these puts are not counted by ``len()``."""
        return self._batch.put

    @property
    def bytes_delete(self):
        """plyvel's own ``delete(key)``, for writers that loop in C (IAVL pruning): the key must be bytes, and
        these deletes are not counted by ``len()``."""
        return self._batch.delete

    def __len__(self):
        return self._count


class LevelDBStore(PersistentStore):
    """A node database in the LevelDB directory at ``path``.

    ``create=True`` makes the directory and an empty database if there is none (parents included); without it
    a missing directory is an error. ``readonly=True`` refuses every write (``put``, ``delete``,
    ``write_batch``) with :class:`~mpt.errors.StoreError`. ``prefix`` selects one keyspace of a shared
    database (a Cosmos module store: ``b"s/k:" + name + b"/"``): keys are prefixed on the way in and stripped
    from what ``iterate`` yields.

    Errors are :class:`~mpt.errors.StoreError` naming the path: no such directory, a directory that is not a
    LevelDB, one locked by another process (a running node); the subclasses say more:
    :class:`~mpt.errors.StoreCorruptError` for damaged tables or a damaged write-ahead log (the store is opened
    with LevelDB's ``paranoid_checks``, so a damaged log stops the open instead of silently rolling the store
    back), :class:`~mpt.errors.StoreWriteError` for a full disk or a file over the size limit,
    :class:`~mpt.errors.StoreReadOnlyError` for ``readonly=True`` stores and read-only file systems. Use it as a
    context manager or call ``close()``: LevelDB holds its lock until then.
    """

    #: One process at a time (LevelDB's LOCK file): an IAVL import marker of another process is always an
    #: import that process left unfinished.
    shared_between_processes = False

    def __init__(self, path, *, create=False, readonly=False, prefix=b""):
        plyvel = import_backend("plyvel", "LevelDBStore", "pip install 'mpt-engine[leveldb]' or pip install plyvel")
        self.path = os.fspath(path)
        self.readonly = bool(readonly)
        if not isinstance(prefix, (bytes, bytearray, memoryview)):
            raise TypeError("prefix must be bytes, not %s" % type(prefix).__name__)
        self.prefix = bytes(prefix)
        if create and self.readonly:
            raise StoreError("a LevelDB cannot be both created and read-only (%s): create it first, then open "
                             "it with readonly=True" % self.path)
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise StoreError("%s is a file, not a LevelDB directory" % self.path)
        if not os.path.isdir(self.path):
            if not create:
                raise StoreError("no LevelDB at %s (no such directory; create=True makes one)" % self.path)
            if self.readonly:
                raise StoreError("cannot create a read-only LevelDB at %s" % self.path)
            os.makedirs(self.path, exist_ok=True)
        elif not create and not os.path.exists(os.path.join(self.path, "CURRENT")):
            raise StoreError("%s is not a LevelDB directory (it has no CURRENT file): it is %s"
                             % (self.path, describe_folder(self.path)))
        self._plyvel_error = plyvel.Error
        try:
            # paranoid_checks: a damaged write-ahead log or table stops the open (StoreCorruptError) instead of
            # LevelDB dropping the damaged records and opening an older state without a word.
            self._root = plyvel.DB(self.path, create_if_missing=bool(create), paranoid_checks=True)
        except plyvel.Error as e:
            text = _text(e)
            if "already held" in text or "Resource temporarily unavailable" in text:
                raise StoreError("the LevelDB at %s is locked (a running node, or another open store in this or "
                                 "another process, holds its LOCK file): close it or open a copy (%s)"
                                 % (self.path, text)) from None
            if "Read-only file system" in text:
                raise StoreReadOnlyError("cannot open the LevelDB at %s: it is on a read-only file system, and "
                                         "LevelDB writes to its directory even to read (copy it to a writable "
                                         "place) (%s)" % (self.path, text)) from None
            raise store_failure(self.path, e, "opening it") from None
        self._db = self._root.prefixed_db(self.prefix) if self.prefix else self._root
        self.unchecked_get = self._db.get
        self._opened()

    # -------------------------------------------------------------------------------------- reading

    def get(self, key, default=None):
        """The value stored under key (bytes), or default."""
        try:
            return self._db.get(key, default)
        except AttributeError:
            self._check_open()      # closed: _db is None
            raise
        except self._plyvel_error as e:
            raise store_failure(self.path, e, "reading") from None

    #: plyvel's own ``get(key, default=None)``, for compiled readers (mpt.iavl's NodeDB) that call it per node:
    #: no Python frame of ours in between. Its errors are plyvel's: such a reader passes them to
    #: ``read_failure``. Replaced by a closed-store check at ``close()``.
    unchecked_get = None

    def read_failure(self, error):
        """The mpt error (StoreClosedError, StoreCorruptError, StoreError) for an exception raised by
        ``unchecked_get``, or None if it is not the store's."""
        if self.closed:
            return StoreClosedError("the %s store at %s is closed" % (self.KIND, self.path))
        if isinstance(error, self._plyvel_error):
            return store_failure(self.path, error, "reading")
        return None

    def iterate(self, start=None, end=None, reverse=False):
        """(key, value) pairs with start <= key < end (None: unbounded) in key order, or in reverse order with
        reverse=True; keys relative to the store's prefix. A snapshot: writes made meanwhile are not seen."""
        self._check_open()
        it = None
        try:
            # plyvel's iterator seeks when it is made: a damaged table raises there already.
            it = self._db.iterator(start=start, stop=end, reverse=bool(reverse))
            yield from it
        except RuntimeError:
            self._check_open()      # closed while iterating: plyvel's "Database or iterator is closed"
            raise
        except self._plyvel_error as e:
            raise store_failure(self.path, e, "reading") from None
        finally:
            if it is not None:
                it.close()

    def items(self):
        return self.iterate()

    def __len__(self):
        """Number of keys (a full scan)."""
        n = 0
        for _ in self.iterate():
            n += 1
        return n

    # -------------------------------------------------------------------------------------- writing

    def _check_writable(self):
        self._check_open()
        if self.readonly:
            raise StoreReadOnlyError("the LevelDB at %s is open read-only: nothing was written" % self.path)

    def put(self, key, value):
        self._check_writable()
        try:
            self._db.put(bytes(key), bytes(value))
        except self._plyvel_error as e:
            raise store_failure(self.path, e, "writing") from None

    def delete(self, key):
        """Remove key (nothing happens if it is absent)."""
        self._check_writable()
        try:
            self._db.delete(bytes(key))
        except self._plyvel_error as e:
            raise store_failure(self.path, e, "writing") from None

    @contextmanager
    def write_batch(self, head=None):
        """A batch whose puts and deletes are applied in one atomic LevelDB write when the block exits without
        an exception (in call order: the last operation on a key wins); an exception writes nothing.

        ``head=root`` records an Ethereum trie's root as the store's head (key ``b"mpt:head"``) in the same
        write, as LMDBStore does; a Trie reopens with ``Trie(store, root=store.head())``."""
        self._check_writable()
        if head is not None and len(head) != 32:
            raise ValueError("a head root must be a 32-byte hash")
        try:
            with self._db.write_batch(transaction=True) as batch:
                yield LevelDBBatch(batch)
                if head is not None:
                    batch.put(HEAD_KEY, bytes(head))
        except RuntimeError:
            self._check_open()      # closed inside the block: plyvel's "Database is closed" from the write
            raise
        except self._plyvel_error as e:
            # Raised by the batch's write at the end of the block (a full disk, ...): nothing of it was applied.
            raise store_failure(self.path, e, "writing a batch") from None

    def head(self):
        """The root recorded by ``write_batch(head=...)`` / ``set_head``, or None."""
        return self.get(HEAD_KEY)

    def set_head(self, root):
        with self.write_batch(head=root):
            pass

    # -------------------------------------------------------------------------------------- lifetime

    KIND = "LevelDB"

    def close(self):
        """Close the database and release its lock; using the store afterwards raises
        :class:`~mpt.errors.StoreClosedError`. Repeat calls do nothing."""
        if self._closing():
            self.unchecked_get = self._closed_get
            self._db = None
            self._root.close()

    def _closed_get(self, key, default=None):
        self._check_open()

    def __repr__(self):
        extra = (" prefix=%r" % self.prefix if self.prefix else "") + (" read-only" if self.readonly else "")
        return "<LevelDBStore %s%s%s>" % (self.path, extra, " (closed)" if self.closed else "")
