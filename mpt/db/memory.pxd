# cython: language_level=3
"""MemoryDB's layout (memory.pyx): the dict of records, and the bulk write compiled writers call in C."""


cdef class MemoryDB:
    cdef:
        object _data                    # the records, key -> value (a dict unless a caller passed its own mapping)
        list _sorted                    # sorted keys for iterate(), dropped by every write that changes the key set
        object _head                    # the root recorded by the last commit with a head (None before one)
        dict __dict__                   # attributes of subclasses and of users, as on any Python object
        object __weakref__

    cdef int bulk_write(self, dict nodes, object head) except -1
