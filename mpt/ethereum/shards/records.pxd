# The shard records and the arenas that hold them, inline for the readers, the partition and the shard build
# (header-only: cimporting it costs no import at run time).
#
# A shard's records are ``u32le key length, u32le value length, key, value``, one after another in input order:
# what the readers append (mpt.shards.read), what a spill writes and loads back (mpt.shards.partition), what the
# shard build sorts (mpt.shards.build) and what process pools and Dask workers are sent.

from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy, memset

cdef enum:
    RECORD_HEADER = 8               # u32 key length, u32 value length


cdef struct Segment:                # a run of whole records
    const uint8_t *buf
    size_t len


cdef struct Arena:                  # a growing buffer of one shard's records
    uint8_t *buf
    size_t len
    size_t cap


cdef inline uint32_t load_u32(const uint8_t *p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline void store_u32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)
    p[2] = <uint8_t>(v >> 16)
    p[3] = <uint8_t>(v >> 24)


cdef inline Arena *arenas_new(size_t n) noexcept nogil:
    """n empty arenas, or NULL when memory ran out."""
    cdef Arena *arenas = <Arena *>PyMem_RawMalloc(n * sizeof(Arena))
    if arenas != NULL:
        memset(arenas, 0, n * sizeof(Arena))
    return arenas


cdef inline void arenas_free(Arena *arenas, size_t n) noexcept nogil:
    cdef size_t i
    if arenas != NULL:
        for i in range(n):
            PyMem_RawFree(arenas[i].buf)
        PyMem_RawFree(arenas)


cdef inline int arena_reserve(Arena *a, size_t extra) noexcept nogil:
    """Room for extra more bytes (doubling); -1 when memory ran out."""
    cdef size_t need = a.len + extra, cap
    cdef uint8_t *p
    if need <= a.cap:
        return 0
    cap = a.cap * 2 if a.cap else 1024
    if cap < need:
        cap = need
    p = <uint8_t *>PyMem_RawRealloc(a.buf, cap)
    if p == NULL:
        return -1
    a.buf = p
    a.cap = cap
    return 0


cdef inline size_t shard_of(const uint8_t *key, size_t kl, int k, size_t nshards) noexcept nogil:
    """The shard of a key: its first k nibbles (k <= 4), or nshards for a key shorter than that."""
    if 2 * kl < <size_t>k:
        return nshards
    if k == 0:
        return 0
    if k <= 2:
        return key[0] >> (8 - 4 * k)
    return ((<size_t>key[0] << 8) | key[1]) >> (16 - 4 * k)


cdef inline int append_record(Arena *arenas, int k, size_t nshards, const uint8_t *key, size_t kl,
                              const uint8_t *value, size_t vl) noexcept nogil:
    """Append one record to its shard's arena (arenas[nshards]: keys shorter than k nibbles). -1: out of memory."""
    cdef Arena *a = &arenas[shard_of(key, kl, k, nshards)]
    cdef uint8_t *o
    if arena_reserve(a, RECORD_HEADER + kl + vl) < 0:
        return -1
    o = a.buf + a.len
    store_u32(o, <uint32_t>kl)
    store_u32(o + 4, <uint32_t>vl)
    memcpy(o + RECORD_HEADER, key, kl)
    memcpy(o + RECORD_HEADER + kl, value, vl)
    a.len += RECORD_HEADER + kl + vl
    return 0


cdef inline void arenas_move(Arena *dst, Arena *src, size_t lo, size_t hi) noexcept nogil:
    """Append src[s] to dst[s] for s in lo..hi-1 and empty src[s] (keeping its memory for the next round).
    On allocation failure src[s] keeps its records (the caller checks that every src arena is empty)."""
    cdef size_t s
    cdef Arena tmp
    for s in range(lo, hi):
        if src[s].len == 0:
            continue
        if dst[s].len == 0:
            # Swap the buffers rather than copy (dst's, empty, becomes src's for the next round).
            tmp = dst[s]
            dst[s] = src[s]
            src[s] = tmp
            continue
        if arena_reserve(&dst[s], src[s].len) < 0:
            return
        memcpy(dst[s].buf + dst[s].len, src[s].buf, src[s].len)
        dst[s].len += src[s].len
        src[s].len = 0


cdef inline void arenas_presize(Arena *arenas, size_t lo, size_t hi, double scale) noexcept nogil:
    """Grow arenas lo..hi-1 once to their length times scale (plus 1 KiB) instead of doubling them several
    times, each a copy and fresh pages to fault in. On allocation failure an arena keeps its size (it still grows
    on demand)."""
    cdef size_t s, want
    cdef uint8_t *p
    for s in range(lo, hi):
        want = <size_t>(<double>arenas[s].len * scale) + 1024
        if want > arenas[s].cap:
            p = <uint8_t *>PyMem_RawRealloc(arenas[s].buf, want)
            if p == NULL:
                return
            arenas[s].buf = p
            arenas[s].cap = want
