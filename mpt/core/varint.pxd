# cython: language_level=3
"""Go's encoding/binary: varints (LEB128 `PutUvarint` and zigzag `PutVarint`) and big-endian integers
(`binary.BigEndian`), inline for every codec that needs them.

Header-only: nothing here needs a compiled module, so cimporting it costs no import at run time. The readers are
strict where Go is lenient: an encoding with a needless trailing 0x00 group (non-canonical) is refused as well as
one that overflows 64 bits, so that decode -> encode gives back the same bytes.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef enum:
    MAX_VARINT_LEN64 = 10           # binary.MaxVarintLen64
    VARINT_TRUNCATED = -1           # read_uvarint: the input ended inside the varint
    VARINT_OVERFLOW = -2            # read_uvarint: more than 64 bits (10th byte > 1, or an 11th byte)
    VARINT_NON_CANONICAL = -3       # read_uvarint: a final 0x00 group after a continuation byte


cdef extern from *:
    """
    #ifndef MPT_BITLEN64
    #define MPT_BITLEN64
    #if defined(__GNUC__) || defined(__clang__)
    static inline int mpt_bitlen64(unsigned long long v) { return 64 - __builtin_clzll(v | 1); }
    #else
    static inline int mpt_bitlen64(unsigned long long v) { int n = 1; v |= 1; while (v >>= 1) n++; return n; }
    #endif
    #endif
    """
    # Bits needed for v, at least 1 (so 0 counts as one byte / one group).
    int bitlen64 "mpt_bitlen64"(unsigned long long v) noexcept nogil


cdef inline int uvarint_size(uint64_t v) noexcept nogil:
    # Branch-free LEB128 length (Go's trick): 7 payload bits per byte, the count rounded up.
    return (bitlen64(v) * 9 + 64) >> 6


cdef inline uint64_t zigzag(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)


cdef inline int64_t unzigzag(uint64_t u) noexcept nogil:
    return <int64_t>(u >> 1) ^ -<int64_t>(u & 1)


cdef inline int varint_size(int64_t v) noexcept nogil:
    return uvarint_size(zigzag(v))


cdef inline Py_ssize_t put_uvarint(uint8_t *out, uint64_t v) noexcept nogil:
    """Write v at out (room for MAX_VARINT_LEN64 bytes); return the number of bytes written."""
    cdef Py_ssize_t n = 0
    while v >= 0x80:
        out[n] = <uint8_t>(v | 0x80)
        v >>= 7
        n += 1
    out[n] = <uint8_t>v
    return n + 1


cdef inline Py_ssize_t put_varint(uint8_t *out, int64_t v) noexcept nogil:
    return put_uvarint(out, zigzag(v))


cdef inline Py_ssize_t read_uvarint(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit,
                                    uint64_t *out) noexcept nogil:
    """Read a uvarint at data[pos:limit]; return the position after it, or a negative VARINT_* code."""
    cdef uint64_t x = 0
    cdef unsigned int shift = 0
    cdef Py_ssize_t i = 0
    cdef uint8_t b
    while True:
        if pos + i >= limit:
            return VARINT_TRUNCATED
        b = data[pos + i]
        if i == MAX_VARINT_LEN64 - 1 and b > 1:
            return VARINT_OVERFLOW
        if b < 0x80:
            if b == 0 and i > 0:
                return VARINT_NON_CANONICAL
            out[0] = x | (<uint64_t>b << shift)
            return pos + i + 1
        x |= <uint64_t>(b & 0x7f) << shift
        shift += 7
        i += 1


cdef inline uint64_t read_be64(const uint8_t *p) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return v


cdef inline uint32_t read_be32(const uint8_t *p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline void put_be64(uint8_t *out, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        out[7 - i] = <uint8_t>(v >> (8 * i))


cdef inline void put_be32(uint8_t *out, uint32_t v) noexcept nogil:
    cdef int i
    for i in range(4):
        out[3 - i] = <uint8_t>(v >> (8 * i))
