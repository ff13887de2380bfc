# cython: language_level=3
"""The encoding of trie nodes (geth trie/node_enc.go), in one place. Every writer of node encodings builds its bytes
from these: Node.encode (node.pyx), the hashing pass over node objects (hasher.pyx), the node arena (arena.pyx),
StackTrie's frames (stacktrie.pyx) and the range proof's batch of leaves (rangeproof.pyx). Each of those only
decides, from its own layout, which child reference goes into which slot.

A node is an RLP list:
    leaf        [compact key (leaf flag), value]
    extension   [compact key, child reference]
    branch      [16 child references, value or empty string]
where a child reference is the 33-byte string of the child's hash (write_hash_ref), or the child's own encoding
when that is under 32 bytes, and an empty slot is the empty string (EMPTY_STRING). Sizes are computed first, then
the bytes are written in place, into room the caller has made: nothing here allocates or fails."""
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from mpt.core.rlp cimport header_size, put_header, put_header_before, put_string, string_size
from mpt.ethereum.encoding cimport compact_size, compact_size_nibbles, write_compact, write_compact_nibbles

cdef enum:
    HASH_REF_SIZE = 33          # a hashed child as its parent holds it: 0x80 + 32, then the hash
    EMPTY_STRING = 0x80         # an empty slot, a branch without a value


cdef inline Py_ssize_t write_branch_head(uint8_t *out, Py_ssize_t payload) noexcept nogil:
    """A branch's list header, for a payload of 16 child references and the value item of payload bytes; returns
    its size."""
    return put_header(out, 0xC0, payload)


cdef inline Py_ssize_t write_head_before(uint8_t *payload, Py_ssize_t size) noexcept nogil:
    """A node's list header written to end right at payload, for writers that know the payload's size only once
    they have written it (the caller left MAX_HEADER_SIZE bytes free before it); returns the header's size."""
    return put_header_before(payload, 0xC0, size)


cdef inline Py_ssize_t key_string_size(Py_ssize_t compact) noexcept nogil:
    """Size of a short node's compact key of `compact` bytes as an RLP string. A one-byte compact key is below
    0x80 (its flag nibble is at most 3), so it is its own string."""
    return 1 if compact == 1 else header_size(compact) + compact


cdef inline Py_ssize_t short_node_size(Py_ssize_t compact, Py_ssize_t child) noexcept nogil:
    """Size of the encoding of a short node whose compact key is `compact` bytes and whose second item (a leaf's
    value string, an extension's child reference) is `child` bytes."""
    cdef Py_ssize_t payload = key_string_size(compact) + child
    return header_size(payload) + payload


cdef inline Py_ssize_t write_short_head(uint8_t *out, Py_ssize_t compact, Py_ssize_t child) noexcept nogil:
    """The list header of that short node, then its key string's header if it has one; returns the size written.
    The compact key goes right after, then the second item."""
    cdef Py_ssize_t o = put_header(out, 0xC0, key_string_size(compact) + child)
    if compact > 1:
        o += put_header(out + o, 0x80, compact)
    return o


cdef inline Py_ssize_t write_short_key(uint8_t *out, const uint8_t *hexkey, Py_ssize_t n,
                                       Py_ssize_t child) noexcept nogil:
    """write_short_head and the compact key of the hex key hexkey[:n] (a leaf's ends with the terminator);
    returns the size written: the second item (child bytes) goes there."""
    cdef Py_ssize_t o = write_short_head(out, compact_size(hexkey, n), child)
    return o + write_compact(hexkey, n, out + o)


cdef inline Py_ssize_t write_short_nibbles(uint8_t *out, const uint8_t *nibbles, Py_ssize_t n, bint leaf,
                                           Py_ssize_t child) noexcept nogil:
    """write_short_key for n nibbles without a terminator (leaf: they end a leaf's key), as StackTrie holds
    paths."""
    cdef Py_ssize_t o = write_short_head(out, compact_size_nibbles(n), child)
    return o + write_compact_nibbles(nibbles, n, leaf, out + o)


cdef inline Py_ssize_t write_leaf(uint8_t *out, const uint8_t *hexkey, Py_ssize_t n, const uint8_t *value,
                                  Py_ssize_t value_size) noexcept nogil:
    """A leaf's whole encoding: hex key tail hexkey[:n] (ending with the terminator) and value. Returns its size,
    short_node_size(compact_size(hexkey, n), string_size(value, value_size))."""
    cdef Py_ssize_t o = write_short_key(out, hexkey, n, string_size(value, value_size))
    return o + put_string(out + o, value, value_size)


cdef inline Py_ssize_t write_leaf_nibbles(uint8_t *out, const uint8_t *nibbles, Py_ssize_t n, const uint8_t *value,
                                          Py_ssize_t value_size) noexcept nogil:
    """write_leaf for a key tail of n nibbles without the terminator."""
    cdef Py_ssize_t o = write_short_nibbles(out, nibbles, n, True, string_size(value, value_size))
    return o + put_string(out + o, value, value_size)


cdef inline Py_ssize_t write_extension_nibbles(uint8_t *out, const uint8_t *nibbles, Py_ssize_t n,
                                               const uint8_t *ref, Py_ssize_t ref_size) noexcept nogil:
    """An extension's whole encoding: the path of n nibbles and the child reference ref[:ref_size]."""
    cdef Py_ssize_t o = write_short_nibbles(out, nibbles, n, False, ref_size)
    memcpy(out + o, ref, <size_t>ref_size)
    return o + ref_size


cdef inline Py_ssize_t write_hash_ref(uint8_t *out, const uint8_t *digest) noexcept nogil:
    """A hashed child's reference: the RLP string of its 32-byte hash."""
    out[0] = 0x80 + 32
    memcpy(out + 1, digest, 32)
    return HASH_REF_SIZE


cdef inline Py_ssize_t write_hash_ref_header(uint8_t *out) noexcept nogil:
    """A hashed child's reference whose hash is not known yet: its string header, with the 32 bytes at out + 1
    left for the caller to fill. Returns HASH_REF_SIZE."""
    out[0] = 0x80 + 32
    return HASH_REF_SIZE


cdef inline Py_ssize_t branch_value_size(const uint8_t *value, Py_ssize_t value_size) noexcept nogil:
    """Size of a branch's 17th item: the value's string, or the empty string when value is NULL."""
    if value == NULL:
        return 1
    return string_size(value, value_size)


cdef inline Py_ssize_t write_branch_value(uint8_t *out, const uint8_t *value, Py_ssize_t value_size) noexcept nogil:
    """A branch's 17th item (branch_value_size bytes): the value's string, or the empty string when value is
    NULL."""
    if value == NULL:
        out[0] = EMPTY_STRING
        return 1
    return put_string(out, value, value_size)

