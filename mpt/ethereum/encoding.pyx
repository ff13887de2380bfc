# cython: language_level=3
"""Key encodings, with Python wrappers for tests and tools (the trie uses the C-level helpers)."""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t

from mpt.errors import NodeDecodeError


cdef bytes keybytes_to_hex_c(const uint8_t *key, Py_ssize_t n):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 2 * n + 1)
    write_hex(key, n, <uint8_t *>PyBytes_AS_STRING(out))
    return out


cdef bytes compact_to_hex_c(const uint8_t *compact, Py_ssize_t n):
    """Hex nibbles of a compact key. Stricter than geth: rejects flags above 3 and a non-zero pad nibble."""
    cdef uint8_t flag
    cdef Py_ssize_t nibbles, i, o
    cdef bint odd, leaf
    cdef bytes out
    cdef uint8_t *p
    if n == 0:
        raise NodeDecodeError("empty compact key")
    flag = compact[0] >> 4
    if flag > 3:
        raise NodeDecodeError("invalid compact key flag %d" % flag)
    odd = flag & COMPACT_ODD_FLAG
    leaf = flag & COMPACT_LEAF_FLAG
    if not odd and (compact[0] & 0x0f):
        raise NodeDecodeError("non-zero padding nibble in compact key")
    nibbles = 2 * (n - 1) + (1 if odd else 0)
    out = PyBytes_FromStringAndSize(NULL, nibbles + (1 if leaf else 0))
    p = <uint8_t *>PyBytes_AS_STRING(out)
    o = 0
    if odd:
        p[0] = compact[0] & 0x0f
        o = 1
    for i in range(1, n):
        p[o] = compact[i] >> 4
        p[o + 1] = compact[i] & 0x0f
        o += 2
    if leaf:
        p[o] = TERMINATOR
    return out


def keybytes_to_hex(bytes key not None):
    """b'\\x12' -> b'\\x01\\x02\\x10' (nibbles plus the leaf terminator 16)."""
    return keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))


def hex_to_keybytes(bytes hexkey not None):
    """Inverse of keybytes_to_hex; the nibble count (without terminator) must be even."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(hexkey)
    cdef const uint8_t *h = <const uint8_t *>PyBytes_AS_STRING(hexkey)
    cdef Py_ssize_t i
    if n and h[n - 1] == TERMINATOR:
        n -= 1
    if n & 1:
        raise ValueError("hex key with an odd number of nibbles has no keybytes form")
    out = bytearray(n // 2)
    for i in range(n // 2):
        if h[2 * i] > 15 or h[2 * i + 1] > 15:
            raise ValueError("not a nibble")
        out[i] = (h[2 * i] << 4) | h[2 * i + 1]
    return bytes(out)


def hex_to_compact(bytes hexkey not None):
    """Hex nibbles (optionally terminated by 16) -> compact (hex-prefix) bytes."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(hexkey)
    cdef const uint8_t *h = <const uint8_t *>PyBytes_AS_STRING(hexkey)
    cdef Py_ssize_t i
    for i in range(n):
        if h[i] > 15 and not (i == n - 1 and h[i] == TERMINATOR):
            raise ValueError("not a hex key: byte %d at %d" % (h[i], i))
    cdef bytes out = PyBytes_FromStringAndSize(NULL, compact_size(h, n))
    write_compact(h, n, <uint8_t *>PyBytes_AS_STRING(out))
    return out


def compact_to_hex(bytes compact not None):
    """Compact (hex-prefix) bytes -> hex nibbles, terminated by 16 for leaf keys."""
    return compact_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(compact), PyBytes_GET_SIZE(compact))
