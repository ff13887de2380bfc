# cython: language_level=3
"""Hashing nodes (geth trie/hasher.go), with pooled hashers whose buffers stay grown."""
cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.string cimport memcmp, memcpy
from mpt.ethereum.node cimport Node
from mpt.core.rlp cimport WriteBuffer


cdef enum:
    # The batched hasher hashes what it has encoded whenever this many nodes are pending: enough for full SIMD
    # lanes and threads, few enough that the encodings (about 200 bytes each) stay in the L2 cache.
    FLUSH_AT = 1024


cdef struct PendingNode:
    # A node the batched hasher has encoded and not hashed yet (Hasher.hash_levels).
    PyObject *node              # borrowed: the tree being hashed keeps it alive
    Py_ssize_t offset           # its encoding in the pass's buffer
    Py_ssize_t length
    Py_ssize_t hole             # where its hash goes inside its parent's encoding; -1 for the root
    int height                  # 0 when it refers to no pending node, else 1 + the highest such


cdef struct FlushScratch:
    # One level of a flush, handed to the multi-message Keccak.
    const uint8_t *messages[FLUSH_AT]
    size_t lengths[FLUSH_AT]
    Py_ssize_t entries[FLUSH_AT]    # the pending entry of each message
    uint8_t digests[FLUSH_AT * 32]


cdef struct KnownEncodings:
    # Encodings whose keccak256 the caller already has (verify_range_proof: the proof's nodes, hashed once on
    # arrival). A flush copies the digest of a pending encoding found here instead of hashing the same bytes
    # again: a rebuilt edge node of a valid range proof encodes exactly like the proof node it came from.
    const uint8_t **data
    const size_t *lengths
    const uint8_t *digests          # 32 bytes per encoding
    int32_t *table                  # encoding indices by known_key() & mask, open addressing, -1 where empty
    Py_ssize_t mask


cdef inline uint64_t known_key(const uint8_t *data, size_t length) noexcept nogil:
    """Lookup key of an encoding of 32 bytes or more: its last 8 bytes (a child hash or value bytes, well
    spread) mixed with its length."""
    cdef uint64_t v
    memcpy(&v, data + length - 8, 8)
    return v ^ (<uint64_t>length * <uint64_t>0x9E3779B97F4A7C15)


cdef inline Py_ssize_t known_find(const KnownEncodings *known, const uint8_t *data, size_t length) noexcept nogil:
    """Index of an encoding equal to data[:length] (32 bytes or more), or -1."""
    cdef Py_ssize_t slot = <Py_ssize_t>(known_key(data, length) & <uint64_t>known.mask)
    cdef int32_t j
    while True:
        j = known.table[slot]
        if j < 0:
            return -1
        if known.lengths[j] == length and memcmp(known.data[j], data, length) == 0:
            return j
        slot = (slot + 1) & known.mask


cdef struct HashPass:
    # Scratch of one thread of the batched hashing pass, which runs without the GIL: plain C memory only
    # (raw allocator), nodes reached through borrowed pointers.
    uint8_t *buf                # node encodings (PyMem_Raw; grown on demand, kept)
    Py_ssize_t size
    Py_ssize_t length
    PendingNode pending[FLUSH_AT]
    Py_ssize_t n_pending
    Py_ssize_t flushes          # flushes so far: an entry index is stale once this moved on
    FlushScratch scratch
    const KnownEncodings *known # digests a flush may take instead of hashing (NULL: none)
    int threads                 # threads a flush may spread one level's Keccak over


@cython.final
cdef class Hasher:
    cdef:
        WriteBuffer buf         # node encodings are built here (the recursive, GIL-held path)
        uint8_t digest[32]      # scratch for the keccak output before it becomes the cached bytes
        HashPass **passes       # one per hashing thread, allocated on first use and kept
        int n_passes
        const KnownEncodings *known     # digests a flush may take instead of hashing (NULL: none)

    @staticmethod
    cdef Hasher new()
    cdef int hash_children(self, Node n) except -1
    cdef bint hash_node(self, Node n, bint force) except -1
    cdef int hash_levels(self, Node root, int threads) except -1
    cdef int _grow_passes(self, int threads) except -1
    cdef void drop_passes(self) noexcept
    cdef Py_ssize_t largest_buffer(self) noexcept
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
