# cython: language_level=3
"""Node encoding and strict decoding.

Encoding writes RLP straight into a WriteBuffer with the node writers of node_enc.pxd: sizes first (so each
header is written once, in place), then the items; no intermediate Python objects. A node's `encode` expects its
children to be ready: every child whose encoding is 32 bytes or more carries its hash (the hasher sees to that,
bottom-up); smaller children are embedded.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.encoding cimport TERMINATOR, compact_size, compact_to_hex_c
from mpt.ethereum.node_enc cimport (EMPTY_STRING, HASH_REF_SIZE, branch_value_size, key_string_size,
                                    write_branch_head, write_branch_value, write_hash_ref, write_short_key)
from mpt.core.rlp cimport (MAX_HEADER_SIZE, RLPItem, WriteBuffer, header_size, put_header, read_item,
                      read_item_fast,
                      string_size)

from mpt.errors import NodeDecodeError, RLPDecodeError

cdef enum:
    HASH_LENGTH = 32
    BRANCH_WIDTH = 17


@cython.no_gc
cdef class Node:
    """Base of the four node kinds. Not instantiated directly.

    Nodes form trees (a node never reaches itself), so they opt out of the cycle collector: a large trie
    would otherwise make every collection walk all of its nodes.
    """

    cdef int encode(self, WriteBuffer w) except -1:
        raise NotImplementedError

    cdef Py_ssize_t encoded_size(self) except -1:
        raise NotImplementedError

    cdef Py_ssize_t ref_size(self) except -1:
        if self.has_hash:
            return 1 + HASH_LENGTH
        return self.encoded_size()

    cdef int write_ref(self, WriteBuffer w) except -1:
        if self.has_hash:
            w.ensure(HASH_REF_SIZE)
            w.advance(write_hash_ref(w.tail(), self.hash_value))
            return 0
        return self.encode(w)

    @property
    def hash(self):
        """The cached keccak256 of the encoding (bytes), or None: not hashed yet, or embedded in its parent."""
        return self.hash_bytes()

    def encoding(self):
        """The node's RLP encoding (children of 32 bytes or more are hashed first)."""
        if _encode_node is None:        # only if this module was loaded outside its package
            raise RuntimeError("mpt.ethereum.hasher is not loaded: import mpt.ethereum")
        return _encode_node(self)


# Node.encoding is the hasher's (mpt.ethereum.hasher cimports this module): it lends its encode_node here when it
# loads (register_encoder), which the package mpt.ethereum does before anything else.
cdef object _encode_node = None


def register_encoder(encode_node):
    """Give Node.encoding the hasher's encoder."""
    global _encode_node
    _encode_node = encode_node


cdef inline bint _is_node(object c):
    # The exact four kinds: the hashing pass reads nodes through their C layout, so a bare Node or a Python
    # subclass of Node must never get into a tree (it would be read as a ShortNode).
    return type(c) is FullNode or type(c) is ShortNode or type(c) is HashNode or type(c) is ValueNode


cdef int check_filled(Node n) except -1:
    """Refuse a node made with cls.__new__ and never initialized: it holds None where the encoder and the
    hashing pass read bytes (they would read the None object's memory as a key, value or hash)."""
    if type(n) is ShortNode and (<ShortNode>n).key is None:
        raise TypeError("a ShortNode made with ShortNode.__new__ has no key and no child: use ShortNode(key, val)")
    if type(n) is ValueNode and (<ValueNode>n).value is None:
        raise TypeError("a ValueNode made with ValueNode.__new__ has no value: use ValueNode(value)")
    if type(n) is HashNode and not n.has_hash:
        raise TypeError("a HashNode made with HashNode.__new__ has no hash: use HashNode(hash)")
    return 0


cdef int _check_fresh(Node n) except -1:
    """Refuse a second __init__ call: nodes are immutable once made (a trie, or a hashing pass on another
    thread, may hold this one). A node made by the library (decoded, or built by a trie) is never fresh."""
    cdef bint used
    if type(n) is FullNode:
        used = n.dirty or n.has_hash or any(s is not None for s in (<FullNode>n).children)
    elif type(n) is ShortNode:
        used = (<ShortNode>n).key is not None
    elif type(n) is ValueNode:
        used = (<ValueNode>n).value is not None
    else:
        used = n.has_hash
    if used:
        raise TypeError("%s.__init__() called on a node that is already initialized (nodes are immutable)"
                        % type(n).__name__)
    return 0


@cython.final
@cython.no_gc
cdef class FullNode(Node):
    """A branch: 16 children indexed by nibble plus a value slot."""

    def __init__(self, children=None):
        _check_fresh(self)
        if children is None:
            children = [None] * BRANCH_WIDTH
        children = list(children)
        if len(children) != BRANCH_WIDTH:
            raise ValueError("a FullNode has 17 slots, got %d" % len(children))
        for i, c in enumerate(children):
            if c is not None and not _is_node(c):
                raise TypeError("FullNode slot %d holds %s, not a FullNode, ShortNode, HashNode or ValueNode"
                                % (i, type(c).__name__))
            if c is not None and (i == 16) != isinstance(c, ValueNode):
                raise TypeError("ValueNode belongs in slot 16 only (slot %d holds %s)" % (i, type(c).__name__))
            if c is not None:
                check_filled(c)
        for i, c in enumerate(children):
            self.set_child(i, c)
        self.dirty = True

    def __dealloc__(self):
        cdef int i
        for i in range(BRANCH_WIDTH):
            Py_XDECREF(self.slots[i])
            self.slots[i] = NULL

    @staticmethod
    cdef FullNode new():
        # __cinit__-free construction: tp_alloc zeroes the object, so every slot starts NULL.
        cdef FullNode n = FullNode.__new__(FullNode)
        n.dirty = True
        return n

    cdef FullNode copy(self):
        # A fresh node: no cached hash, dirty. Children are shared (they are never mutated in place).
        cdef FullNode n = FullNode.__new__(FullNode)
        cdef int i
        for i in range(BRANCH_WIDTH):
            if self.slots[i] != NULL:
                Py_INCREF(<object>self.slots[i])
                n.slots[i] = self.slots[i]
        n.present = self.present
        n.dirty = True
        return n

    cdef Py_ssize_t payload_size(self) except -1:
        cdef Py_ssize_t i, size = 0
        cdef PyObject *c
        cdef bytes v
        for i in range(16):
            c = self.slots[i]
            if c == NULL:
                size += 1
            elif (<Node>c).has_hash:
                size += 1 + HASH_LENGTH
            else:
                size += (<Node>c).encoded_size()
        return size + branch_value_size(_branch_value(self), _branch_value_size(self))

    cdef Py_ssize_t encoded_size(self) except -1:
        cdef Py_ssize_t payload = self.payload_size()
        return header_size(payload) + payload

    cdef int encode(self, WriteBuffer w) except -1:
        cdef Py_ssize_t i, payload = self.payload_size()
        cdef PyObject *c
        w.ensure(MAX_HEADER_SIZE + payload)
        w.advance(write_branch_head(w.tail(), payload))
        for i in range(16):
            c = self.slots[i]
            if c == NULL:
                w.tail()[0] = EMPTY_STRING
                w.advance(1)
            elif (<Node>c).has_hash:
                # The space was reserved by ensure() above.
                w.advance(write_hash_ref(w.tail(), (<Node>c).hash_value))
            else:
                # An embedded child: its encoding (reserved too: it is part of payload).
                (<Node>c).encode(w)
        w.advance(write_branch_value(w.tail(), _branch_value(self), _branch_value_size(self)))
        return 0

    @property
    def children(self):
        """The 17 slots as a tuple (None where empty)."""
        return tuple([self.child(i) for i in range(BRANCH_WIDTH)])

    def __repr__(self):
        parts = ["%x: %r" % (i, self.child(i)) for i in range(16) if self.slots[i] != NULL]
        if self.slots[16] != NULL:
            parts.append("value: %r" % (self.child(16),))
        return "FullNode(%s)" % ", ".join(parts)


cdef inline const uint8_t *_branch_value(FullNode n) noexcept:
    # The value slot's bytes for node_enc's branch writers: NULL when the branch has no value.
    if n.slots[16] == NULL:
        return NULL
    return <const uint8_t *>PyBytes_AS_STRING((<ValueNode>n.slots[16]).value)


cdef inline Py_ssize_t _branch_value_size(FullNode n) noexcept:
    if n.slots[16] == NULL:
        return 0
    return PyBytes_GET_SIZE((<ValueNode>n.slots[16]).value)


@cython.final
@cython.no_gc
cdef class ShortNode(Node):
    """An extension (key without terminator, child node) or a leaf (key ending in 16, ValueNode)."""

    def __init__(self, bytes key, Node val not None):
        cdef Py_ssize_t i, n = len(key)
        _check_fresh(self)
        if not _is_node(val):
            raise TypeError("a ShortNode's child must be a FullNode, ShortNode, HashNode or ValueNode, not %s"
                            % type(val).__name__)
        check_filled(val)
        for i in range(n):
            if key[i] > 15 and not (i == n - 1 and key[i] == TERMINATOR):
                raise ValueError("ShortNode key must be hex nibbles (optionally ending in 16)")
        is_leaf = n > 0 and key[n - 1] == TERMINATOR
        if is_leaf != isinstance(val, ValueNode):
            raise TypeError("a leaf key (ending in 16) goes with a ValueNode, an extension key with a node")
        self.key = key
        self.set_val(val)
        self.dirty = True

    @staticmethod
    cdef ShortNode new(bytes key, Node val):
        cdef ShortNode n = ShortNode.__new__(ShortNode)
        n.key = key
        n.set_val(val)
        n.dirty = True
        return n

    cdef Py_ssize_t payload_size(self) except -1:
        cdef Py_ssize_t compact = compact_size(<const uint8_t *>PyBytes_AS_STRING(self.key),
                                               PyBytes_GET_SIZE(self.key))
        return key_string_size(compact) + _second_item_size(self)

    cdef Py_ssize_t encoded_size(self) except -1:
        cdef Py_ssize_t payload = self.payload_size()
        return header_size(payload) + payload

    cdef int encode(self, WriteBuffer w) except -1:
        cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(self.key)
        cdef Py_ssize_t nk = PyBytes_GET_SIZE(self.key)
        cdef PyObject *v = self.leaf_value
        cdef Py_ssize_t second = _second_item_size(self)
        w.ensure(2 * MAX_HEADER_SIZE + compact_size(k, nk))
        w.advance(write_short_key(w.tail(), k, nk, second))
        if v != NULL:
            return w.write_string(<const uint8_t *>PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
        return self.val.write_ref(w)

    def __repr__(self):
        return "ShortNode(%s, %r)" % (bytes(self.key).hex(), self.val)


cdef inline Py_ssize_t _second_item_size(ShortNode n) except -1:
    # A short node's second item: a leaf's value string (through leaf_value, without a read of the ValueNode: one
    # cache miss less) or an extension's child reference.
    cdef PyObject *v = n.leaf_value
    if v != NULL:
        return string_size(<const uint8_t *>PyBytes_AS_STRING(<bytes>v), PyBytes_GET_SIZE(<bytes>v))
    return n.val.ref_size()


@cython.final
@cython.no_gc
cdef class HashNode(Node):
    """A reference by hash to a node not loaded yet."""

    def __init__(self, bytes hash):
        _check_fresh(self)
        if len(hash) != HASH_LENGTH:
            raise ValueError("a HashNode holds a 32-byte hash, got %d bytes" % len(hash))
        self.set_hash(<const uint8_t *>PyBytes_AS_STRING(hash))

    @staticmethod
    cdef HashNode new(bytes hash):
        cdef HashNode n = HashNode.__new__(HashNode)
        n.set_hash(<const uint8_t *>PyBytes_AS_STRING(hash))
        return n

    @staticmethod
    cdef HashNode from_digest(const uint8_t *digest):
        cdef HashNode n = HashNode.__new__(HashNode)
        n.set_hash(digest)
        return n

    cdef Py_ssize_t encoded_size(self) except -1:
        return 1 + HASH_LENGTH

    cdef int encode(self, WriteBuffer w) except -1:
        return self.write_ref(w)

    def __repr__(self):
        return "HashNode(%s)" % self.hash_bytes().hex()


@cython.final
@cython.no_gc
cdef class ValueNode(Node):
    """A stored value (a leaf's payload or a branch's value slot)."""

    def __init__(self, bytes value):
        _check_fresh(self)
        if not value:
            raise ValueError("trie values are never empty")
        self.value = value

    @staticmethod
    cdef ValueNode new(bytes value):
        cdef ValueNode n = ValueNode.__new__(ValueNode)
        n.value = value
        return n

    cdef Py_ssize_t encoded_size(self) except -1:
        return string_size(<const uint8_t *>PyBytes_AS_STRING(self.value), PyBytes_GET_SIZE(self.value))

    cdef int encode(self, WriteBuffer w) except -1:
        return w.write_string(<const uint8_t *>PyBytes_AS_STRING(self.value), PyBytes_GET_SIZE(self.value))

    cdef int write_ref(self, WriteBuffer w) except -1:
        return self.encode(w)

    def __repr__(self):
        return "ValueNode(%s)" % self.value.hex()


# ---------------------------------------------------------------------------------------------- decoding
# Geth's rules (trie/node.go decodeNode) and a few more, each of which no valid trie can violate:
#   - compact keys: flag nibble above 3, or a non-zero pad nibble in an even key, are rejected;
#   - an extension must have a non-empty key and a child; a leaf value must not be empty.

cdef inline int _read(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit, RLPItem *item) except -1:
    # The inline reader decides; only a bad header pays for the call that raises the reason.
    if read_item_fast(data, pos, limit, item):
        return 0
    return read_item(data, pos, limit, item)


cdef inline int _count(const uint8_t *data, Py_ssize_t pos, Py_ssize_t limit) except -1:
    cdef RLPItem item
    cdef int count = 0
    while pos < limit:
        _read(data, pos, limit, &item)
        pos = item.end
        count += 1
    return count


cdef Node _decode_ref(const uint8_t *data, RLPItem *item, Py_ssize_t offset):
    cdef Py_ssize_t size
    if item.is_list:
        size = item.end - offset
        if size >= HASH_LENGTH:
            raise NodeDecodeError("oversized embedded node (size %d, want size < %d) at offset %d"
                                  % (size, HASH_LENGTH, offset))
        return _decode_at(None, data, offset, item.end)
    if item.payload_length == 0:
        return None
    if item.payload_length == HASH_LENGTH:
        return HashNode.from_digest(data + item.payload_offset)
    raise NodeDecodeError("invalid RLP string size %d (want 0 or %d) at offset %d"
                          % (item.payload_length, HASH_LENGTH, offset))


cdef Node _decode_at(bytes node_hash, const uint8_t *data, Py_ssize_t start, Py_ssize_t end):
    cdef RLPItem outer, item
    cdef Py_ssize_t pos, count, i
    cdef bytes hexkey
    cdef FullNode fn
    cdef Node child, n
    _read(data, start, end, &outer)
    if not outer.is_list:
        raise NodeDecodeError("node at offset %d is not an RLP list" % start)
    if outer.end != end:
        raise NodeDecodeError("%d trailing bytes after node at offset %d" % (end - outer.end, outer.end))
    count = _count(data, outer.payload_offset, outer.end)
    pos = outer.payload_offset
    if count == 2:
        _read(data, pos, outer.end, &item)
        if item.is_list:
            raise NodeDecodeError("short node key at offset %d is a list" % pos)
        hexkey = compact_to_hex_c(data + item.payload_offset, item.payload_length)
        pos = item.end
        _read(data, pos, outer.end, &item)
        if PyBytes_GET_SIZE(hexkey) and (<const uint8_t *>PyBytes_AS_STRING(hexkey))[PyBytes_GET_SIZE(hexkey) - 1] == TERMINATOR:
            if item.is_list:
                raise NodeDecodeError("leaf value at offset %d is a list" % pos)
            if item.payload_length == 0:
                raise NodeDecodeError("empty leaf value at offset %d" % pos)
            child = ValueNode.new(PyBytes_FromStringAndSize(<const char *>data + item.payload_offset,
                                                            item.payload_length))
        else:
            if PyBytes_GET_SIZE(hexkey) == 0:
                raise NodeDecodeError("extension with an empty key at offset %d" % start)
            child = _decode_ref(data, &item, pos)
            if child is None:
                raise NodeDecodeError("extension without a child at offset %d" % pos)
        n = ShortNode.new(hexkey, child)
    elif count == BRANCH_WIDTH:
        fn = FullNode.new()
        for i in range(16):
            _read(data, pos, outer.end, &item)
            fn.set_child(i, _decode_ref(data, &item, pos))
            pos = item.end
        _read(data, pos, outer.end, &item)
        if item.is_list:
            raise NodeDecodeError("branch value slot at offset %d is a list" % pos)
        if item.payload_length:
            fn.set_child(16, ValueNode.new(PyBytes_FromStringAndSize(<const char *>data + item.payload_offset,
                                                                      item.payload_length)))
        n = fn
    else:
        raise NodeDecodeError("invalid number of list elements: %d (want 2 or 17)" % count)
    n.dirty = False
    if node_hash is not None:
        n.set_hash(<const uint8_t *>PyBytes_AS_STRING(node_hash))
    return n


cdef Node decode_node_c(bytes node_hash, const unsigned char *data, Py_ssize_t length):
    """Decode a node encoding; node_hash (or None) is cached in the node when the encoding is >= 32 bytes."""
    if length == 0:
        raise NodeDecodeError("empty node encoding")
    if length < HASH_LENGTH:
        node_hash = None
    try:
        return _decode_at(node_hash, <const uint8_t *>data, 0, length)
    except RLPDecodeError as e:
        raise NodeDecodeError("malformed RLP in node: %s" % e) from None


def decode_node(blob, node_hash=None):
    """Decode an Ethereum trie node from its RLP encoding with geth's strictness (plus the extra checks above).
    (``mpt.decode_node`` is this one; IAVL nodes are decoded by :func:`mpt.iavl.decode_node`.)

    Raises NodeDecodeError for anything that is not a valid node.
    """
    blob = as_bytes(blob, "blob")
    if node_hash is not None and (not isinstance(node_hash, bytes) or len(node_hash) != HASH_LENGTH):
        raise TypeError("node_hash must be 32 bytes or None")
    return decode_node_c(node_hash, <const unsigned char *>PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob))
