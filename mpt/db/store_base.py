"""What the persistent node stores (LMDBStore, LevelDBStore) share: importing their backend package on first use,
mapping-style reads through ``get``, and being closed.

A closed store raises :class:`~mpt.errors.StoreClosedError` from every method. Trees keep their own references
to a store's reading methods (NodeDB binds the store's getter once, and a LevelDBStore's ``unchecked_get`` is
plyvel's own), so the store's open state is a :class:`~mpt.db.state.StoreState`, ``store.state``, declared in
``mpt/db/state.pxd``: NodeDB reads its one C field before each use, which costs nothing next to the Python
attribute lookup ``store.closed`` would take on every cached read.
"""
import importlib
import os

from mpt.db.state import StoreState
from mpt.errors import MissingExtraError, StoreClosedError

LMDB_FILES = ("data.mdb", "lock.mdb")


def folder_kind(path):
    """What the directory ``path`` holds, as far as the stores are concerned: ``"missing"``, ``"file"`` (not a
    directory), ``"empty"``, ``"lmdb"`` (a ``data.mdb``), ``"leveldb"`` (a ``CURRENT`` file, as LevelDB and
    goleveldb write) or ``"other"``. Reads the directory listing only."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "file"
    if not names:
        return "empty"
    if "CURRENT" in names:      # first: older mpt releases made data.mdb inside LevelDB folders
        return "leveldb"
    if "data.mdb" in names:
        return "lmdb"
    return "other"


def describe_folder(path):
    """A phrase saying what the directory ``path`` looks like and which store opens it, for error messages."""
    kind = folder_kind(path)
    if kind == "lmdb":
        return "an LMDB store: use LMDBStore(%r)" % path
    if kind == "leveldb":
        stray = " (delete the data.mdb and lock.mdb an older mpt release left in it)" \
            if os.path.exists(os.path.join(path, "data.mdb")) else ""
        return "a LevelDB store: use LevelDBStore(%r)%s" % (path, stray)
    if kind == "missing":
        return "no such directory"
    if kind == "file":
        return "a file, not a directory"
    if kind == "empty":
        return "an empty directory"
    names = sorted(os.listdir(path))
    return "a directory of %d entr%s that is no store (%s%s)" % (
        len(names), "y" if len(names) == 1 else "ies", ", ".join(names[:3]), ", ..." if len(names) > 3 else "")


def import_backend(module, store, install):
    """The backend package ``module`` of ``store`` (a class name), imported on first use; MissingExtraError
    saying how to ``install`` it when it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError("%s needs the %r package (%s)" % (store, module, install), name=e.name) from e


class PersistentStore:
    """Base of the persistent stores: ``store[key]`` and ``key in store`` through ``get``, ``keys()`` and
    ``iter(store)`` through ``iterate``, and the closed state (``closed``, ``state``). Subclasses set ``KIND``
    (how errors name the store) and ``path``, call ``_opened()`` once their backend is open and ``_closing()``
    first thing in ``close()``."""

    KIND = "node"
    #: The open state compiled readers check (a StoreState, mpt/db/state.pxd); None before the backend opened.
    state = None

    @property
    def closed(self):
        return self.state is None or self.state.closed

    def __contains__(self, key):
        return self.get(key) is not None

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def keys(self):
        """Every stored key, in key order."""
        for k, _ in self.iterate():
            yield k

    def __iter__(self):
        return self.keys()

    def _opened(self):
        self.state = StoreState("the %s store at %s" % (self.KIND, self.path))

    def _closing(self):
        """Mark the store closed; False if it was already (close() then does nothing)."""
        if self.closed:
            return False
        self.state.close()
        return True

    def _check_open(self):
        if self.closed:
            raise StoreClosedError("the %s store at %s is closed" % (self.KIND, self.path))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
