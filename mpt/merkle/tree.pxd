# cython: language_level=3
# The tree engine's pieces mpt.merkle.proof, .rpc and .multistore build on: the pooled scratch of one call, leaf
# hashing, the level-by-level reduction and the root, with the constants of CometBFT's tree.
cimport cython
from cpython.object cimport PyObject
from libc.stdint cimport uint64_t

cdef enum:
    HASH_LEN = 32
    LEAF_PREFIX = 0                 # sha256(0x00 || leaf)
    INNER_PREFIX = 1                # sha256(0x01 || left || right)
    # CometBFT's MaxAunts: a tree of 2**100 leaves; bounds the work a hostile proof can ask for.
    MAX_AUNTS_LIMIT = 100
    # Below this many bytes to hash, dropping and re-taking the GIL costs more than it lets other threads do.
    NOGIL_BYTES = 65536


cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil


cdef inline uint64_t split_point(uint64_t total) noexcept nogil:
    """Largest power of two strictly below total (total >= 2): where CometBFT splits a tree of total leaves."""
    return (<uint64_t>1) << (63 - __builtin_clzll(total - 1))


@cython.final
cdef class Scratch:
    """Per-call working memory, pooled. ``items`` holds a strong reference to every leaf object while their
    pointers are in use (another thread may drop the caller's list while the GIL is released); ``views`` holds
    the buffer exports of leaves that are not exact bytes."""
    cdef:
        PyObject** items
        const unsigned char** ptrs
        size_t* lens
        Py_buffer* views
        unsigned char* hashes           # the leaf hashes, then (all_levels) every level above them
        size_t leaf_capacity            # entries of items / ptrs / lens / views
        size_t hash_capacity            # 32-byte slots of hashes
        size_t held                     # items[0 .. held) are referenced
        size_t exported                 # views[0 .. exported) are exported

    cdef int reserve(self, size_t leaves, size_t hash_slots) except -1
    cdef void release(self) noexcept
    cdef size_t gather(self, seq, size_t n) except? 0


# A scratch holding the leaf hashes of items in hashes[0:n] (n_out): give it back with give_scratch.
cdef Scratch leaf_hashes(items, bint all_levels, bint hash_txs, size_t* n_out)
cdef void give_scratch(Scratch s) noexcept
# Every level of the tree over count leaf hashes, behind them in hashes; returns the number of levels.
cdef int all_levels(unsigned char* hashes, size_t count, size_t* offsets, size_t* counts) noexcept nogil
cdef bytes root_of(items, bint hash_txs)
# items as a list or tuple (no copy of those), else read into a list; a single bytes-like is refused.
cdef object as_sequence(items)
# sha256(data) of a bytes-like (a transaction's hash, a map value's hash).
cdef bytes sha256_digest(data)
# sha256(0x00 || leaf) of a bytes-like leaf into out[0:32].
cdef int leaf_hash_into(leaf, unsigned char* out) except -1
# value as 32 bytes, or ProofError naming what.
cdef bytes as_hash(value, str what)
