# cython: language_level=3
"""Key forms (geth trie/encoding.go): keybytes, hex nibbles (one nibble a byte, 16 terminates a leaf key) and
compact (hex-prefix). The helpers the hot path needs are inline here so that cimporting modules inline them."""
from libc.stdint cimport uint8_t

cdef enum:
    TERMINATOR = 16         # last nibble of a leaf's hex key
    COMPACT_LEAF_FLAG = 2   # hex-prefix flag bit for leaves
    COMPACT_ODD_FLAG = 1    # hex-prefix flag bit for odd nibble counts


cdef inline Py_ssize_t prefix_length(const uint8_t *a, Py_ssize_t na, const uint8_t *b, Py_ssize_t nb) noexcept:
    """Length of the common prefix of a[:na] and b[:nb]."""
    cdef Py_ssize_t i = 0
    cdef Py_ssize_t n = na if na < nb else nb
    while i < n and a[i] == b[i]:
        i += 1
    return i


cdef inline Py_ssize_t compact_size(const uint8_t *hexkey, Py_ssize_t n) noexcept nogil:
    """Bytes of the compact form of hexkey[:n]."""
    if n > 0 and hexkey[n - 1] == TERMINATOR:
        n -= 1
    return n // 2 + 1


cdef inline Py_ssize_t write_compact(const uint8_t *hexkey, Py_ssize_t n, uint8_t *out) noexcept nogil:
    """Write the compact form of hexkey[:n] at out; return its length (compact_size)."""
    cdef uint8_t flag = 0
    cdef Py_ssize_t i, o
    if n > 0 and hexkey[n - 1] == TERMINATOR:
        flag = COMPACT_LEAF_FLAG
        n -= 1
    if n & 1:
        # Odd: the first nibble shares the first byte with the flag.
        out[0] = <uint8_t>(((flag | COMPACT_ODD_FLAG) << 4) | hexkey[0])
        i = 1
    else:
        out[0] = <uint8_t>(flag << 4)
        i = 0
    o = 1
    while i < n:
        out[o] = <uint8_t>((hexkey[i] << 4) | hexkey[i + 1])
        i += 2
        o += 1
    return o


cdef bytes keybytes_to_hex_c(const uint8_t *key, Py_ssize_t n)
cdef bytes compact_to_hex_c(const uint8_t *compact, Py_ssize_t n)
