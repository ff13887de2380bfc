# cython: language_level=3
"""Key forms (geth trie/encoding.go): keybytes, hex nibbles (one nibble a byte, 16 terminates a leaf key) and
compact (hex-prefix). The helpers the hot path needs are inline here so that cimporting modules inline them."""
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

cdef enum:
    TERMINATOR = 16         # last nibble of a leaf's hex key
    COMPACT_LEAF_FLAG = 2   # hex-prefix flag bit for leaves
    COMPACT_ODD_FLAG = 1    # hex-prefix flag bit for odd nibble counts


cdef inline Py_ssize_t prefix_length(const uint8_t *a, Py_ssize_t na, const uint8_t *b, Py_ssize_t nb) noexcept nogil:
    """Length of the common prefix of a[:na] and b[:nb]."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t n = na if na < nb else nb
    while i < n and a[i] == b[i]:
        i += 1
    return i


cdef extern from *:
    """
    #ifndef MPT_PACK_NIBBLES_DEFINED
    #define MPT_PACK_NIBBLES_DEFINED
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    /* out[i] = (nib[2i] << 4 | nib[2i + 1]) & 0xff for i < pairs: every leaf's 32-byte key passes through here
       on its way into an encoding, and the byte-at-a-time loop was two thirds of the hashing pass's encoder.
       Each path computes exactly the byte loop's result for any input bytes, nibbles or not. */
    static inline void mpt_pack_nibbles(const uint8_t *nib, Py_ssize_t pairs, uint8_t *out) {
        Py_ssize_t i = 0;
    #if defined(__SSE2__)
        /* 16 pairs a step: each 16-bit lane holds a pair (first nibble in its low byte); lane << 4 puts the
           first nibble's low four bits in the high half of the low byte, lane >> 8 brings the second nibble down.
           A run of 16 pairs or more ends with one step over its last 16 pairs, overlapping the step before:
           the bytes written twice are the same bytes. */
        if (pairs >= 16) {
            const __m128i low_byte = _mm_set1_epi16(0x00ff);
            for (;;) {
                __m128i a = _mm_loadu_si128((const __m128i *)(nib + 2 * i));
                __m128i b = _mm_loadu_si128((const __m128i *)(nib + 2 * i + 16));
                a = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(a, 4), _mm_srli_epi16(a, 8)), low_byte);
                b = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(b, 4), _mm_srli_epi16(b, 8)), low_byte);
                _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi16(a, b));
                if (i + 16 == pairs)
                    return;
                i = (i + 32 <= pairs) ? i + 16 : pairs - 16;
            }
        }
    #endif
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* 4 pairs a step in a 64-bit word, the same lanes as above (all of a short run; everything where SSE2
           is missing), the last step overlapping likewise. */
        if (pairs >= 4) {
            for (;;) {
                uint64_t x, y;
                uint32_t packed;
                memcpy(&x, nib + 2 * i, 8);
                y = ((x & 0x000f000f000f000fULL) << 4) | ((x >> 8) & 0x00ff00ff00ff00ffULL);
                y = (y | (y >> 8)) & 0x0000ffff0000ffffULL;
                packed = (uint32_t)(y | (y >> 16));
                memcpy(out + i, &packed, 4);
                if (i + 4 == pairs)
                    return;
                i = (i + 8 <= pairs) ? i + 4 : pairs - 4;
            }
        }
    #endif
        for (; i < pairs; i++)
            out[i] = (uint8_t)((nib[2 * i] << 4) | nib[2 * i + 1]);
    }
    #endif
    """
    void pack_nibbles "mpt_pack_nibbles"(const uint8_t *nibbles, Py_ssize_t pairs, uint8_t *out) noexcept nogil


cdef inline Py_ssize_t compact_size(const uint8_t *hexkey, Py_ssize_t n) noexcept nogil:
    """Bytes of the compact form of hexkey[:n]."""
    if n > 0 and hexkey[n - 1] == TERMINATOR:
        n -= 1
    return n // 2 + 1


cdef inline Py_ssize_t compact_size_nibbles(Py_ssize_t n) noexcept nogil:
    """Bytes of the compact form of n nibbles given without a terminator."""
    return n // 2 + 1


cdef inline Py_ssize_t write_compact_nibbles(const uint8_t *nibbles, Py_ssize_t n, bint leaf,
                                             uint8_t *out) noexcept nogil:
    """Write the compact form of the n nibbles at nibbles (no terminator: leaf says whether they end a leaf's
    key) at out; return its length (compact_size_nibbles)."""
    cdef uint8_t flag = COMPACT_LEAF_FLAG if leaf else 0
    if n & 1:
        # Odd: the first nibble shares the first byte with the flag.
        out[0] = <uint8_t>(((flag | COMPACT_ODD_FLAG) << 4) | nibbles[0])
        nibbles += 1
        n -= 1
    else:
        out[0] = <uint8_t>(flag << 4)
    pack_nibbles(nibbles, n >> 1, out + 1)
    return 1 + (n >> 1)


cdef inline Py_ssize_t write_compact(const uint8_t *hexkey, Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Write the compact form of hexkey[:n] (a leaf's ends with the terminator) at out; return its length
    (compact_size)."""
    if n > 0 and hexkey[n - 1] == TERMINATOR:
        return write_compact_nibbles(hexkey, n - 1, True, out)
    return write_compact_nibbles(hexkey, n, False, out)


cdef inline uint8_t keybytes_nibble(const uint8_t *key, Py_ssize_t i) noexcept nogil:
    """Nibble i of the key bytes key (two a byte, high first)."""
    if i & 1:
        return key[i >> 1] & 0x0F
    return key[i >> 1] >> 4


cdef inline Py_ssize_t write_compact_keybytes(const uint8_t *key, Py_ssize_t start, Py_ssize_t end, bint leaf,
                                              uint8_t *out) noexcept nogil:
    """Write the compact form of nibbles start..end of the key bytes key (leaf: they end a leaf's key) at out,
    straight from the bytes, without the hex form; return its length (compact_size_nibbles(end - start))."""
    cdef uint8_t flag = COMPACT_LEAF_FLAG if leaf else 0
    cdef Py_ssize_t i = start, o = 1
    if not (end & 1):
        # The nibbles after the first odd one (or all of them) are whole bytes of the key: copied as they are.
        if start & 1:
            out[0] = <uint8_t>(((flag | COMPACT_ODD_FLAG) << 4) | (key[start >> 1] & 0x0F))
        else:
            out[0] = <uint8_t>(flag << 4)
        memcpy(out + 1, key + ((start + 1) >> 1), <size_t>((end - start) >> 1))
        return 1 + ((end - start) >> 1)
    if (end - start) & 1:
        out[0] = <uint8_t>(((flag | COMPACT_ODD_FLAG) << 4) | keybytes_nibble(key, i))
        i += 1
    else:
        out[0] = <uint8_t>(flag << 4)
    while i < end:
        out[o] = <uint8_t>((keybytes_nibble(key, i) << 4) | keybytes_nibble(key, i + 1))
        i += 2
        o += 1
    return o


cdef inline Py_ssize_t write_nibbles(const uint8_t *key, Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Write the nibbles of key[:n], one a byte, at out (2n bytes); return that length."""
    cdef Py_ssize_t i
    for i in range(n):
        out[2 * i] = key[i] >> 4
        out[2 * i + 1] = key[i] & 0x0F
    return 2 * n


cdef inline Py_ssize_t write_hex(const uint8_t *key, Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Write the hex nibbles of key[:n] and the terminator at out (2n + 1 bytes); return that length."""
    out[write_nibbles(key, n, out)] = TERMINATOR
    return 2 * n + 1


cdef bytes keybytes_to_hex_c(const uint8_t *key, Py_ssize_t n)
cdef bytes compact_to_hex_c(const uint8_t *compact, Py_ssize_t n)
