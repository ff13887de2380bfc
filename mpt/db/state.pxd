# cython: language_level=3
"""The open state of a persistent store, declared for compiled readers (state.pyx)."""


cdef class StoreState:
    cdef:
        readonly bint closed            # set once by the store's close()
        readonly str description        # how errors name the store: "the LMDB store at /path"

    cdef int raise_closed(self) except -1

    cdef inline int check_open(self) except -1:
        """StoreClosedError once the store is closed: what a compiled reader (IAVL's NodeDB) calls before each
        use of the store, one C field read, where the Python attribute ``store.closed`` would cost more than a
        cached read."""
        if self.closed:
            self.raise_closed()
        return 0
