# cython: language_level=3
"""Layout of the working memory of the small-trie builds in _fast.pyx (the other classes there are private to it)."""
cimport cython


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
    SCRATCH_SLOTS


@cython.final
cdef class Scratch:
    """Buffers reused from one build to the next: memory fresh from the system costs a page fault a page, which
    was a quarter of a 10,000-account state root."""
    cdef void *buffers[SCRATCH_SLOTS]
    cdef size_t sizes[SCRATCH_SLOTS]

    cdef void *need(self, int slot, size_t size, bint keep) except NULL
    cdef size_t total(self) noexcept
