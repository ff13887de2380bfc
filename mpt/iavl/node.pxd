# cython: language_level=3
"""IAVL nodes: layout shared by the codecs (node.pyx) and the tree (tree.pyx)."""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcmp

from mpt.core.rlp cimport WriteBuffer

cdef enum NodeFormat:
    FORMAT_LEGACY = 0       # iavl v0.x: hash-keyed, children by hash
    FORMAT_V1 = 1           # iavl v1: NodeKey-keyed, version not in the bytes, children by NodeKey
    FORMAT_VBYTE = 2        # cosmos/iavl PR #673: stream-vbyte header, raw value / raw child hashes

cdef enum:
    HASH_SIZE = 32
    NODE_KEY_SIZE = 12              # version u64 BE || nonce u32 BE
    MODE_LEGACY_LEFT = 1            # v1 inner mode bits: that child is referenced by its 32-byte hash
    MODE_LEGACY_RIGHT = 2
    MAX_HEIGHT = 127                # subtreeHeight is an int8


# The fields below are the node's declared layout: the tree (tree.pyx), its store layer (nodedb.pyx), export and
# proofs read and write them directly, as geth's trie package does its node structs.
cdef class Node:
    cdef:
        readonly bytes key
        bytes leaf_value            # leaves only (None for inner nodes)
        readonly int height         # subtreeHeight: 0 for leaves
        readonly int64_t size       # leaves below (1 for a leaf)
        readonly int64_t version    # legacy: node.version; v1: nodeKey.version
        readonly uint32_t nonce     # v1 nodeKey.nonce; 0 for a node read from the legacy format
        bytes cached_hash           # cached node hash (decoded for v1 inner nodes)
        # Tree state (tree.pyx): whether the node is in the database already.
        bint persisted

    cdef inline bint is_leaf(self) noexcept:
        return self.height == 0

    cdef Py_ssize_t c_encoded_size(self, NodeFormat fmt) except -1
    cdef int _need_child_hashes(self) except -1
    cdef Py_ssize_t _write(self, uint8_t *out, NodeFormat fmt) except -1
    cdef int _check_encodable(self, NodeFormat fmt) except -1
    cdef bytes c_to_bytes(self, NodeFormat fmt)
    cdef int c_encode(self, WriteBuffer buf, NodeFormat fmt) except -1
    cdef bytes c_hash(self)
    cdef bytes node_key_bytes(self)


@cython.final
cdef class LeafNode(Node):
    @staticmethod
    cdef LeafNode new(bytes key, bytes value, int64_t version)


# The child fields live on InnerNode only: a leaf (most nodes, and the one decode_node returns in the benchmarks)
# then has three object fields for tp_new to set to None and tp_dealloc to release, not nine. Code holding a
# Node whose height is not 0 casts it: <InnerNode>node.
@cython.final
cdef class InnerNode(Node):
    cdef:
        bytes left_child_hash       # child hashes, when known
        bytes right_child_hash
        bytes left_ref              # v1: a child's NodeKey (12 bytes) or legacy hash (32 bytes)
        bytes right_ref
        # Tree state (tree.pyx): the in-memory children.
        Node left_node
        Node right_node

    @staticmethod
    cdef InnerNode new(bytes key, int height, int64_t size, int64_t version)


cdef int parse_format(object fmt) except -1
cdef object int_in_range(object value, str what, object lo, object hi, str message, type error)
cdef Node c_decode_node(const uint8_t *data, Py_ssize_t n, NodeFormat fmt, int64_t version, uint32_t nonce,
                        bint has_node_key)
cdef bytes make_node_key(int64_t version, uint32_t nonce)
cdef int sha256_into(const uint8_t *data, Py_ssize_t n, uint8_t *out) except -1


cdef inline int compare_keys(bytes a, bytes b) noexcept:
    """Go's bytes.Compare, the order of IAVL keys: -1, 0 or 1."""
    cdef Py_ssize_t na = PyBytes_GET_SIZE(a), nb = PyBytes_GET_SIZE(b)
    cdef int r = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), <size_t>(na if na < nb else nb))
    if r != 0:
        return -1 if r < 0 else 1
    return (na > nb) - (na < nb)
