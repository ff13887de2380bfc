"""What the persistent node stores (LMDBStore, LevelDBStore) share: importing their backend package on first use,
mapping-style reads through ``get``, and being closed.

A closed store raises :class:`~mpt.errors.StoreClosedError` from every method. Trees keep their own references
to a store's reading methods (NodeDB binds ``get`` once, and a LevelDBStore's ``get`` is plyvel's own), so the
store also keeps ``_open_flag``, a one-byte bytearray that ``close()`` clears: NodeDB reads it in C before each
use, which costs nothing next to the Python attribute lookup ``store.closed`` would take on every cached read.
"""
import importlib

from mpt.errors import MissingExtraError, StoreClosedError


def import_backend(module, store, install):
    """The backend package ``module`` of ``store`` (a class name), imported on first use; MissingExtraError
    saying how to ``install`` it when it is absent."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError("%s needs the %r package (%s)" % (store, module, install), name=e.name) from e


class PersistentStore:
    """Base of the persistent stores: ``store[key]`` and ``key in store`` through ``get``, ``keys()`` and
    ``iter(store)`` through ``iterate``, and the closed state
    (``closed``, ``_open_flag``, ``_check_open``). Subclasses set ``KIND`` (how errors name the store) and
    ``path``, call ``_opened()`` once their backend is open and ``_closing()`` first thing in ``close()``."""

    KIND = "node"
    closed = True
    _open_flag = None

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
        self.closed = False
        self._open_flag = bytearray(b"\x01")

    def _closing(self):
        """Mark the store closed; False if it was already (close() then does nothing)."""
        if self.closed:
            return False
        self.closed = True
        self._open_flag[0] = 0
        return True

    def _check_open(self):
        if self.closed:
            raise StoreClosedError("the %s store at %s is closed" % (self.KIND, self.path))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
