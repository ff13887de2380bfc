# cython: language_level=3
"""Hashing nodes (geth trie/hasher.go), with pooled hashers whose buffers stay grown."""
cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport uint8_t
from mpt.node cimport Node
from mpt.rlp cimport WriteBuffer


cdef enum:
    # The batched hasher hashes what it has encoded whenever this many nodes are pending: enough for full SIMD
    # lanes and threads, few enough that the encodings (about 200 bytes each) stay in the L2 cache.
    FLUSH_AT = 1024


cdef struct PendingNode:
    # A node the batched hasher has encoded and not hashed yet (Hasher.hash_levels).
    PyObject *node              # borrowed: the tree being hashed keeps it alive
    Py_ssize_t offset           # its encoding in the hasher's buffer
    Py_ssize_t length
    Py_ssize_t hole             # where its hash goes inside its parent's encoding; -1 for the root
    int height                  # 0 when it refers to no pending node, else 1 + the highest such


cdef struct FlushScratch:
    # One level of a flush, handed to the multi-message Keccak.
    const uint8_t *messages[FLUSH_AT]
    size_t lengths[FLUSH_AT]
    uint8_t digests[FLUSH_AT * 32]


@cython.final
cdef class Hasher:
    cdef:
        WriteBuffer buf         # node encodings are built here
        uint8_t digest[32]      # scratch for the keccak output before it becomes the cached bytes
        PendingNode *pending    # the batched hasher's entries (FLUSH_AT), allocated on first use and kept
        Py_ssize_t n_pending
        Py_ssize_t flushes      # flushes so far: an entry index is stale once this moved on
        FlushScratch *scratch   # allocated on first use and kept
        int threads             # hashing threads of the current batched pass

    @staticmethod
    cdef Hasher new()
    cdef int hash_children(self, Node n) except -1
    cdef bint hash_node(self, Node n, bint force) except -1
    cdef Py_ssize_t encode_pending(self, Node n, int *height) except -2
    cdef int flush_pending(self) except -1
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
cdef int keccak_backend_number() noexcept
