# cython: language_level=3
"""Layout of the working memory of the small-trie builds in _fast.pyx (the other classes there are private to it)."""
cimport cython
from libc.stdint cimport uint8_t


cdef enum ScratchSlot:
    # One buffer each; a SmallTries build takes a Scratch from the pool and gives it back when finished.
    S_PAIRS
    S_KEY_DATA
    S_KEY_LEN
    S_U256
    S_HASHED_KEYS
    S_NODES
    S_KIDS
    S_ORDER
    S_COUNT
    S_HASH_DATA
    S_HASH_LEN
    S_HASH_NODE
    S_DIGESTS
    S_ARENA
    S_SORT_START
    S_SORT_PAIRS
    S_VALUES
    S_KEY_COPIES
    SCRATCH_SLOTS


@cython.final
cdef class Scratch:
    """Buffers reused from one build to the next: memory fresh from the system costs a page fault a page, which
    was a quarter of a 10,000-account state root."""
    cdef void *buffers[SCRATCH_SLOTS]
    cdef size_t sizes[SCRATCH_SLOTS]

    cdef void *need(self, int slot, size_t size, bint keep) except NULL
    cdef size_t total(self) noexcept


ctypedef struct StoreMemory:
    # A NodeStore's buffers and their sizes in bytes (handed from a dropped NodeStore to the next one).
    uint8_t *arena
    size_t arena_size
    uint8_t *hashes
    size_t hashes_size
    Py_ssize_t *offsets
    size_t offsets_size
    Py_ssize_t *lengths
    size_t lengths_size
    Py_ssize_t *table
    size_t table_size


@cython.final
cdef class NodeStore:
    """The hashed nodes of one SmallTries build (the state trie's), read by an mpt.Trie as its node database."""
    cdef StoreMemory mem
    cdef uint8_t *arena                  # the node encodings (mem's buffers, under their own names)
    cdef uint8_t *hashes                 # 32 bytes a node
    cdef Py_ssize_t *offsets
    cdef Py_ssize_t *lengths
    cdef Py_ssize_t *table               # open addressing: node index + 1, 0 for empty
    cdef Py_ssize_t count, capacity, mask

    cdef Py_ssize_t _slot(self, const uint8_t *digest) noexcept nogil
    cdef void add(self, const uint8_t *digest, Py_ssize_t offset, Py_ssize_t length) noexcept nogil
