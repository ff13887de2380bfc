# cython: language_level=3
"""StoreState: whether a persistent store (LMDBStore, LevelDBStore) is still open, as one C field.

A store keeps its ``state`` from open to close; trees that bind the store's reading methods once (IAVL's NodeDB
binds ``get``, and a LevelDBStore's fast getter is plyvel's own) ``cimport`` this class and call the inline
``check_open`` declared in state.pxd before each use, so that a closed store raises StoreClosedError from every
entry point, cached reads included.
"""
cimport cython

from mpt.errors import StoreClosedError


@cython.final
cdef class StoreState:
    """The open state of one store: ``closed`` and the ``description`` errors name it by."""

    def __init__(self, str description not None):
        self.description = description
        self.closed = False

    def close(self):
        """Mark the store closed (for good)."""
        self.closed = True

    def check(self):
        """Raise StoreClosedError if the store is closed (the check compiled readers inline)."""
        self.check_open()

    cdef int raise_closed(self) except -1:
        raise StoreClosedError("%s is closed" % self.description)
