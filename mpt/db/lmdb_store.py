"""LMDBStore: the persistent node database, on LMDB (the ``lmdb`` package).

One LMDB environment (a directory holding ``data.mdb`` and ``lock.mdb``) with one unnamed database: keys are the
32-byte keccak256 hashes of the nodes, values their RLP encodings. LMDB gives what a node store needs: ACID write
transactions (a commit is all or nothing, whatever kills the process), memory-mapped reads that copy nothing
until we make the ``bytes``, one writer and any number of readers across threads and processes.

Besides the nodes, the store keeps one small metadata record, the *head*: the root of the last trie committed
through ``write_batch(head=root)`` or ``set_head(root)``. It lives under the 8-byte key ``b"mpt:head"``, which
cannot collide with a 32-byte node hash. A trie reopens with ``Trie(store, root=store.head())``.

The map size (LMDB's upper bound on the file, reserved as address space and not as disk) grows by itself: a write
that fails with ``MapFullError`` is aborted, the map is doubled and the whole transaction is retried. To make the
retry possible a batch keeps its puts in a list and writes them all in one transaction when the ``with`` block
exits; nothing reaches LMDB before that, so a batch costs memory in proportion to what it writes.
"""
import errno
import os
import threading
from contextlib import contextmanager

from mpt.db.store_base import PersistentStore, describe_folder, folder_kind, import_backend
from mpt.errors import StoreCorruptError, StoreError, StoreReadOnlyError, StoreWriteError

HEAD_KEY = b"mpt:head"          # 8 bytes: no node hash (32 bytes) can equal it
HASH_LENGTH = 32
DEFAULT_MAP_SIZE = 64 << 20     # 64 MiB; grows by doubling on demand

_lmdb = None


def _import_lmdb():
    global _lmdb
    if _lmdb is None:
        _lmdb = import_backend("lmdb", "LMDBStore", "pip install lmdb; MemoryDB works without it")
    return _lmdb


def _is_read_only_failure(e):
    # lmdb names the errno in the message: EROFS ("Read-only file system"), or EACCES on files made read-only.
    text = str(e)
    return "Read-only file system" in text or "Permission denied" in text


def _check_root(root):
    if not isinstance(root, (bytes, bytearray, memoryview)) or len(root) != HASH_LENGTH:
        raise ValueError("a head root must be a 32-byte hash")
    return bytes(root)


class LMDBBatch:
    """Collects the puts of one ``write_batch()`` block; they are written together when it exits cleanly."""

    __slots__ = ("pending", "head", "hash_keys", "deletes")

    def __init__(self, head=None, hash_keys=True):
        self.pending = []           # (key, value) in call order; value None deletes key
        self.head = head
        self.hash_keys = hash_keys
        self.deletes = False

    def put(self, key, value):
        key = bytes(key)
        if self.hash_keys and len(key) != HASH_LENGTH:
            raise ValueError("node keys are 32-byte hashes, got %d bytes (open the store with hash_keys=False "
                             "for other key layouts, such as mpt.iavl's)" % len(key))
        if key == HEAD_KEY:
            raise ValueError("%r is the store's head record" % HEAD_KEY)
        self.pending.append((key, bytes(value)))

    def delete(self, key):
        """Delete key in the same transaction (in call order with the puts)."""
        key = bytes(key)
        if key == HEAD_KEY:
            raise ValueError("%r is the store's head record" % HEAD_KEY)
        self.pending.append((key, None))
        self.deletes = True

    def set_head(self, root):
        """Make root the store's head in the same transaction as the nodes."""
        self.head = _check_root(root)

    def __len__(self):
        return len(self.pending)


class LMDBStore(PersistentStore):
    """A node database in an LMDB environment at ``path`` (a directory, created unless ``readonly``).

    ``map_size`` is the initial map size in bytes (it doubles whenever a write needs more; reopening with a
    smaller value than the file needs is fine). ``sync=False`` skips the fsync at each commit: a crash of the
    process still loses nothing committed, but a crash of the machine may lose the last commits or, as LMDB
    warns, corrupt the store; keep the default for data you cannot rebuild. ``readonly=True`` opens an
    existing store for reading only. Only the store's own directory is created: a missing parent directory is a
    FileNotFoundError (a mistyped path does not silently make a new, empty store).

    A store is created only in a missing or empty directory: a directory holding anything but an LMDB store (a
    LevelDB, a project folder) raises :class:`~mpt.errors.StoreError` saying what it looks like, and so does a
    file that is not an LMDB store (:class:`~mpt.errors.StoreCorruptError` when it is damaged). A write that
    fails (a full disk) raises :class:`~mpt.errors.StoreWriteError` and stores nothing of that write, so the last
    commit stays intact; a write to a store opened ``readonly=True``, or on a read-only file system,
    :class:`~mpt.errors.StoreReadOnlyError`.

    Safe to share between threads: each read runs in its own short read transaction; writes are serialised.
    Several processes may open the same store (LMDB allows one writer at a time); a process that finds the map
    grown by another adopts the new size by itself.
    """

    #: Several processes may have the store open at once (LMDB's reader table and writer lock): an IAVL import
    #: marker of another live process means an import may still be running there.
    shared_between_processes = True

    def __init__(self, path, map_size=DEFAULT_MAP_SIZE, *, sync=True, readonly=False, hash_keys=True):
        lmdb = _import_lmdb()
        # hash_keys=False lifts the 32-byte key check for stores whose keys are not node hashes (mpt.iavl keeps
        # iavl's prefixed NodeKeys there); only the 8-byte head key stays reserved.
        self.hash_keys = bool(hash_keys)
        self.path = os.fspath(path)
        self.readonly = bool(readonly)
        if map_size <= 0:
            raise ValueError("map_size must be positive")
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            # LMDB's own error would be FileExistsError (mkdir) or a bare ENOTDIR from lmdb.open.
            raise NotADirectoryError(errno.ENOTDIR, "%s is a file, not an LMDB store directory (LMDBStore takes "
                                     "the directory holding data.mdb and lock.mdb)" % self.path, self.path)
        kind = folder_kind(self.path)
        if kind not in ("lmdb", "missing", "empty"):
            # LMDB would create data.mdb and lock.mdb inside any directory: a LevelDB, a project folder.
            raise StoreError("%s is not an LMDB store: it is %s (LMDBStore creates a store only in a missing or "
                             "empty directory)" % (self.path, describe_folder(self.path)))
        if self.readonly:
            if kind != "lmdb":
                raise FileNotFoundError(errno.ENOENT, "no LMDB store at %s (%s)" % (
                    self.path, describe_folder(self.path)), self.path)
        elif not os.path.isdir(self.path):
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                raise FileNotFoundError(errno.ENOENT, "cannot create the LMDB store %s: the directory %s does not "
                                        "exist (LMDBStore creates the store's own directory only)"
                                        % (self.path, parent), parent)
            try:
                os.mkdir(self.path)
            except FileExistsError:     # made meanwhile by another process opening the same store
                pass
        try:
            self._env = lmdb.open(
                self.path,
                map_size=int(map_size),
                subdir=True,
                readonly=self.readonly,
                sync=bool(sync),
                metasync=bool(sync),
                max_dbs=0,
                max_spare_txns=4,   # read transactions are recycled rather than allocated for every get
            )
        except lmdb.ReadonlyError as e:
            raise StoreReadOnlyError("cannot open the LMDB store at %s for writing: %s (open it with "
                                     "readonly=True)" % (self.path, e)) from e
        except (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.InvalidError) as e:
            raise StoreCorruptError("cannot open the LMDB store at %s: it is damaged or not an LMDB file (%s)"
                                    % (self.path, e)) from e
        except lmdb.Error as e:
            # MDB_VERSION_MISMATCH, a read-only file system (EROFS/EACCES on lock.mdb), ...
            if _is_read_only_failure(e):
                raise StoreReadOnlyError("cannot open the LMDB store at %s for writing: the file system or the "
                                         "files are read-only (%s); open it with readonly=True"
                                         % (self.path, e)) from e
            raise StoreError("cannot open the LMDB store at %s: %s" % (self.path, e)) from e
        self._write_lock = threading.RLock()    # one writer at a time in this process (LMDB's rule)
        self._map_lock = threading.Lock()       # held by readers and by a remap (set_mapsize invalidates txns)
        self.resizes = 0                        # times the map was grown by this object
        self._opened()
        if not self.readonly:
            self._env.reader_check()            # free reader slots left behind by killed processes

    # -------------------------------------------------------------------------------------- reading

    def get(self, key, default=None):
        """The blob stored under key (bytes), or default."""
        try:
            with self._map_lock:
                with self._env.begin(buffers=False) as txn:
                    value = txn.get(key)
        except _lmdb.MapResizedError:
            self._adopt_for_reading()
            value = self._read(lambda txn: txn.get(key))
        except _lmdb.Error as e:
            self._check_open()      # checked only on failure: the open store's reads pay nothing for it
            raise self._read_failure(e) from e
        return default if value is None else value

    def head(self):
        """The root recorded by the last ``set_head`` / ``write_batch(head=...)``, or None."""
        return self.get(HEAD_KEY)

    def __len__(self):
        """Number of nodes stored (the head record is not counted)."""
        entries, head = self._read(lambda txn: (self._env.stat()["entries"], txn.get(HEAD_KEY)))
        return entries - (0 if head is None else 1)

    def items(self, chunk=4096):
        """(hash, blob) of every stored node in key order (the head record is skipped): ``iterate()``.

        Reads in chunks, each in its own read transaction, so a long iteration neither pins old pages nor
        blocks a map resize; nodes written meanwhile may or may not be seen.
        """
        return self.iterate(chunk=chunk)

    def iterate(self, start=None, end=None, reverse=False, chunk=4096):
        """(key, value) pairs with start <= key < end (None: unbounded) in key order, or in reverse order with
        reverse=True; the head record is skipped. Reads in chunks of short read transactions, like items()."""
        last = None
        while True:
            def read_chunk(txn):
                out = []
                cur = txn.cursor()
                if not reverse:
                    if last is not None:
                        ok = cur.set_range(last)
                        if ok and cur.key() == last:
                            ok = cur.next()
                    elif start is not None:
                        ok = cur.set_range(start)
                    else:
                        ok = cur.first()
                    while ok and len(out) < chunk:
                        k = cur.key()
                        if end is not None and k >= end:
                            break
                        out.append((k, cur.value()))
                        ok = cur.next()
                else:
                    bound = last if last is not None else end
                    if bound is None:
                        ok = cur.last()
                    else:
                        # The last key below bound: set_range lands on the first key >= bound, one step back.
                        ok = cur.prev() if cur.set_range(bound) else cur.last()
                    while ok and len(out) < chunk:
                        k = cur.key()
                        if start is not None and k < start:
                            break
                        out.append((k, cur.value()))
                        ok = cur.prev()
                return out
            block = self._read(read_chunk)
            for k, v in block:
                if self.closed:
                    self._check_open()      # closed while iterating: not another item of the chunk read
                if k != HEAD_KEY:
                    yield k, v
            if len(block) < chunk:
                return
            last = block[-1][0]

    def stats(self):
        """A dict: nodes, head (hex or None), map_size, used_bytes, page_size, depth, path, resizes."""
        def read(txn):
            return self._env.stat(), txn.get(HEAD_KEY)
        stat, head = self._read(read)
        info = self._env.info()
        return {
            "path": self.path,
            "nodes": stat["entries"] - (1 if head is not None else 0),
            "head": head.hex() if head is not None else None,
            "map_size": info["map_size"],
            "used_bytes": (info["last_pgno"] + 1) * stat["psize"],
            "page_size": stat["psize"],
            "depth": stat["depth"],
            "resizes": self.resizes,
        }

    @property
    def map_size(self):
        """The current map size in bytes."""
        self._check_open()
        return self._env.info()["map_size"]

    KIND = "LMDB"

    def _read(self, fn):
        self._check_open()
        lmdb = _lmdb
        for _ in range(3):
            try:
                with self._map_lock:
                    with self._env.begin(buffers=False) as txn:
                        return fn(txn)
            except lmdb.MapResizedError:
                self._adopt_for_reading()
            except lmdb.Error as e:
                raise self._read_failure(e) from e
        raise StoreError("reading the LMDB store at %s failed: the map kept growing under this reader" % self.path)

    def _read_failure(self, e):
        if isinstance(e, (_lmdb.CorruptedError, _lmdb.PageNotFoundError)):
            return StoreCorruptError("reading the LMDB store at %s failed: the file is damaged (%s)" % (self.path, e))
        # A reader table that is full, ...
        return StoreError("reading the LMDB store at %s failed: %s" % (self.path, e))

    # -------------------------------------------------------------------------------------- writing

    def put(self, key, value):
        """Store one node in its own write transaction."""
        batch = LMDBBatch(hash_keys=self.hash_keys)
        batch.put(key, value)
        self._write(batch.pending, None)

    def delete(self, key):
        """Remove one key in its own write transaction (nothing happens if it is absent)."""
        batch = LMDBBatch(hash_keys=self.hash_keys)
        batch.delete(key)
        self._write(batch.pending, None)

    def set_head(self, root):
        """Record root as the store's head (its own write transaction)."""
        self._write([], _check_root(root))

    @contextmanager
    def write_batch(self, head=None):
        """A batch whose puts are committed in one ACID transaction when the block exits without an exception.

        The puts are collected in memory and written at exit (so the transaction can be retried after the
        map grows); an exception inside the block writes nothing. ``head=root`` (or ``batch.set_head(root)``)
        records root as the head in the same transaction, so the head never names a root whose nodes are not
        all there.
        """
        self._check_open()
        batch = LMDBBatch(None if head is None else _check_root(head), hash_keys=self.hash_keys)
        yield batch
        self._write(batch.pending, batch.head)

    def _write(self, pending, head):
        lmdb = _lmdb
        self._check_open()
        if self.readonly:
            raise StoreReadOnlyError("the LMDB store at %s is open read-only: nothing was written" % self.path)
        if not pending and head is None:
            return                  # nothing to write: do not even take the writer lock
        with self._write_lock:
            while True:
                try:
                    with self._env.begin(write=True) as txn:
                        if pending and any(v is None for _, v in pending):
                            for k, v in pending:
                                if v is None:
                                    txn.delete(k)
                                else:
                                    txn.put(k, v)
                        elif pending:
                            txn.cursor().putmulti(pending, dupdata=False, overwrite=True)
                        if head is not None:
                            txn.put(HEAD_KEY, head)
                    return
                except lmdb.MapFullError as e:
                    # The transaction has been aborted by the context manager: grow the map and redo it all.
                    self._resize(self._grow, e)
                except lmdb.MapResizedError as e:
                    self._resize(self._adopt_map_size, e)
                except lmdb.Error as e:
                    # The transaction was aborted: nothing of it is in the file. LMDB reports a full disk as
                    # "Input/output error", so look at the free space to say which it was.
                    if _is_read_only_failure(e):
                        raise StoreReadOnlyError("writing to the LMDB store at %s failed: the file system is "
                                                 "read-only (%s); nothing was written" % (self.path, e)) from e
                    raise self._write_failure(e) from e

    def _write_failure(self, e):
        try:
            free = os.statvfs(self.path)
            disk_full = free.f_bavail * free.f_frsize < (1 << 20)
        except OSError:
            disk_full = False
        reason = "the disk is full" if disk_full else "the write failed"
        return StoreWriteError("writing to the LMDB store at %s failed: %s (%s); nothing of this write was "
                               "stored and the last commit is intact" % (self.path, reason, e),
                               path=self.path, disk_full=disk_full)

    def _resize(self, resize, cause):
        """Grow or adopt the map for a write; a resize that fails (no address space, no memory) is the write's
        failure: nothing of it was stored."""
        try:
            resize()
        except _lmdb.Error as e:
            raise self._write_failure(e) from cause

    def _grow(self):
        with self._map_lock:
            self._env.set_mapsize(self._env.info()["map_size"] * 2)
            self.resizes += 1

    def _adopt_for_reading(self):
        try:
            self._adopt_map_size()
        except _lmdb.Error as e:
            raise self._read_failure(e) from e

    def _adopt_map_size(self):
        # Another process grew the map beyond ours: 0 means "take the size recorded in the file". LMDB refuses
        # while a write transaction of this process is open, so a reader waits for our writer first (the lock
        # order is the writer's: _write_lock, then _map_lock).
        with self._write_lock:
            with self._map_lock:
                self._env.set_mapsize(0)

    # -------------------------------------------------------------------------------------- lifetime

    def sync(self):
        """Flush to disk (useful with sync=False)."""
        self._check_open()
        try:
            self._env.sync(True)
        except _lmdb.Error as e:
            raise self._write_failure(e) from e

    def close(self):
        """Close the environment; using the store afterwards raises :class:`~mpt.errors.StoreClosedError`.
        Repeat calls do nothing."""
        if self._closing():
            self._env.close()

    def __repr__(self):
        if self.closed:
            return "<LMDBStore %s (closed)>" % self.path
        return "<LMDBStore %s%s>" % (self.path, " read-only" if self.readonly else "")
