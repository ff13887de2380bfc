# cython: language_level=3
"""Hashing nodes (geth trie/hasher.go), with pooled hashers whose buffers stay grown."""
cimport cython
from libc.stdint cimport uint8_t
from mpt.node cimport Node
from mpt.rlp cimport WriteBuffer


@cython.final
cdef class Hasher:
    cdef:
        WriteBuffer buf         # node encodings are built here, one subtree level at a time
        uint8_t digest[32]      # scratch for the keccak output before it becomes the cached bytes

    @staticmethod
    cdef Hasher new()
    cdef int hash_children(self, Node n) except -1
    cdef bint hash_node(self, Node n, bint force) except -1
    cdef int hash_levels(self, Node root, int threads) except -1
    cdef bytes root_hash(self, Node root)
    cdef bytes keccak_buffer(self, Py_ssize_t start)


@cython.final
cdef class HasherPool:
    cdef:
        list _idle              # hashers handed back, ready for reuse
        Py_ssize_t max_idle     # beyond this many idle hashers, released ones are dropped

    cdef Hasher acquire(self)
    cdef void release(self, Hasher h) noexcept


cdef HasherPool default_pool()
cdef int hash_threads() noexcept
