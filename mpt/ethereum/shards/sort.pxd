# The order of a shard's records: by key, then by input position, so that the last write of a key comes last.

from libc.stdint cimport uint8_t, uint32_t, uint64_t


cdef struct Entry:                  # one record of a shard, as the sort sees it
    uint64_t head                   # the key's first 8 bytes, big-endian, zero-padded: most comparisons end here
    const uint8_t *key
    const uint8_t *value
    uint32_t key_len
    uint32_t value_len
    uint64_t seq                    # input position within the shard: the later duplicate wins


cdef inline uint64_t key_head(const uint8_t *key, size_t n) noexcept nogil:
    """Entry.head of a key of n bytes."""
    cdef uint64_t h = 0
    cdef size_t i
    for i in range(8):
        h = (h << 8) | (key[i] if i < n else 0)
    return h


cdef void sort_entries(Entry *e, size_t n) noexcept nogil
