# cython: language_level=3
"""Software prefetch, for the walks over many Python objects (tries, IAVL trees, a store's records).

Those walks are bound by memory latency: every node, key and value is a separate object somewhere in the heap.
Asking for the objects a walk will read next before it reads them lets their cache misses overlap instead of
queueing one by one. Header-only: cimporting it costs no import at run time.
"""

cdef extern from *:
    """
    #ifndef MPT_PREFETCH
    #if defined(__GNUC__) || defined(__clang__)
    /* The empty volatile asm: GCC counts __builtin_prefetch as no side effect, so a helper that does nothing but
       prefetch (and the loads that find the addresses) is "pure" to its interprocedural analysis, and a call to
       it whose result nobody uses is deleted as dead code: with -DNDEBUG (setuptools' default) GCC 12 dropped
       every prefetch of the shard readers' helper and of the arena's first prefetch helpers that way. A volatile
       asm statement is a side effect, so the prefetch stays; it emits nothing and clobbers nothing. */
    #define MPT_PREFETCH(p) do { __builtin_prefetch((const void *)(p)); __asm__ __volatile__(""); } while (0)
    #else
    #define MPT_PREFETCH(p) ((void)(p))
    #endif
    #endif
    """
    # Ask for the cache line holding p, for reading; no fault if p is not mapped.
    void prefetch_line "MPT_PREFETCH"(const void *p) noexcept nogil


cdef inline void prefetch_object(const void *p) noexcept nogil:
    # Every cache line of an object of up to 144 bytes. pymalloc aligns objects to 16 bytes, not to lines, so
    # such an object spans three lines whenever it starts late in one: a ShortNode (88 bytes: its key, val and
    # leaf_value pointers at 64, 72 and 80) at offset 48 has leaf_value in its third line; a 32-byte key's
    # nibbles (98 bytes as bytes) and an account value (about 110) from offset 32 on. Asked for two lines, the
    # trie's hashing pass took the third as a serial miss on a large part of the leaves. The extra prefetch of a
    # line the object does not reach costs one instruction.
    prefetch_line(p)
    prefetch_line(<const char *>p + 64)
    prefetch_line(<const char *>p + 128)
