# cython: language_level=3
"""Trie nodes (geth trie/node.go). Nodes are immutable once linked into a trie except for their cached hash and
dirty flag: updates copy the path they touch, which is what makes Trie.copy() O(1)."""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t
from libc.string cimport memcpy
from mpt.core.rlp cimport WriteBuffer


cdef extern from *:
    """
    #define MPT_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
    #define MPT_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
    """
    void _store_release "MPT_STORE_RELEASE"(bint *p, bint v) noexcept nogil
    bint _load_acquire "MPT_LOAD_ACQUIRE"(const bint *p) noexcept nogil


cdef class Node:
    cdef:
        # keccak256 of the encoding, kept inline (no bytes object per node, no pointer to chase when a parent
        # copies it); valid only while has_hash. Nodes embedded in their parent (< 32 bytes) never get one.
        uint8_t hash_value[32]
        bint has_hash
        readonly bint dirty      # created since the last commit (a node read from a database is clean)

    cdef inline bytes hash_bytes(self):
        """The cached hash as bytes, or None."""
        if not self.has_hash:
            return None
        return PyBytes_FromStringAndSize(<char *>self.hash_value, 32)

    cdef inline void set_hash(self, const uint8_t *digest) noexcept:
        # The bytes first, then the flag with a release store: a hashing pass in another thread (reading the
        # flag with an acquire load, without the GIL) that sees the flag sees the bytes (docs/threads.rst).
        memcpy(self.hash_value, digest, 32)
        _store_release(&self.has_hash, 1)

    cdef inline void copy_hash_from(self, Node other) noexcept:
        # other's flag is read once, with an acquire load: a pass on another thread may publish other's hash
        # meanwhile, and two plain reads could see the flag unset, then set, and flag self without its bytes.
        if _load_acquire(&other.has_hash):
            self.set_hash(other.hash_value)
        else:
            self.has_hash = 0

    cdef int encode(self, WriteBuffer w) except -1
    cdef Py_ssize_t encoded_size(self) except -1
    # Size of this node as its parent refers to it: 33 when hashed, else its whole encoding.
    cdef Py_ssize_t ref_size(self) except -1
    cdef int write_ref(self, WriteBuffer w) except -1


@cython.final
cdef class FullNode(Node):
    cdef:
        # 17 slots: a node for nibbles 0..15, a ValueNode in slot 16; NULL where empty. Owned references in a
        # C array instead of a list: no second allocation per branch, nothing for the cycle collector to track.
        PyObject *slots[17]

    @staticmethod
    cdef FullNode new()
    cdef FullNode copy(self)
    cdef Py_ssize_t payload_size(self) except -1

    cdef inline Node child(self, Py_ssize_t i):
        if self.slots[i] == NULL:
            return None
        return <Node>self.slots[i]

    cdef inline void set_child(self, Py_ssize_t i, Node c) noexcept:
        cdef PyObject *old = self.slots[i]
        if c is None:
            self.slots[i] = NULL
        else:
            Py_INCREF(c)
            self.slots[i] = <PyObject *>c
        Py_XDECREF(old)


@cython.final
cdef class ValueNode(Node):
    cdef:
        readonly bytes value     # the stored value, never empty

    @staticmethod
    cdef ValueNode new(bytes value)


@cython.final
cdef class ShortNode(Node):
    cdef:
        readonly bytes key       # hex nibbles; a leaf's key ends with the terminator 16
        readonly Node val        # a ValueNode for a leaf, a FullNode or HashNode for an extension; set by set_val
        # A leaf's value bytes (val.value), borrowed from val; NULL for an extension. The hashing pass reads a
        # leaf's value through it and never touches the ValueNode: one dependent cache miss less per leaf.
        PyObject *leaf_value

    @staticmethod
    cdef ShortNode new(bytes key, Node val)
    cdef Py_ssize_t payload_size(self) except -1

    cdef inline void set_val(self, Node val) noexcept:
        self.val = val
        self.leaf_value = <PyObject *>(<ValueNode>val).value if type(val) is ValueNode else NULL


@cython.final
cdef class HashNode(Node):
    # The reference is the inherited hash: a node not loaded from the database yet.
    @staticmethod
    cdef HashNode new(bytes hash)
    @staticmethod
    cdef HashNode from_digest(const uint8_t *digest)


cdef int check_filled(Node n) except -1
cdef Node decode_node_c(bytes node_hash, const unsigned char *data, Py_ssize_t length)


# ---------------------------------------------------------------------------------------------------------------
# Borrowed-pointer views of the nodes for the hashing pass without the GIL (mpt/ethereum/hasher.pyx): the caller
# holds the root, so every node under it lives while the pass runs; no reference counting, no Python. The hash
# flag is read with an acquire load and published with a release store after the bytes (as set_hash does).
# ---------------------------------------------------------------------------------------------------------------

cdef inline bint node_has_hash(PyObject *n) noexcept nogil:
    return _load_acquire(&(<Node>n).has_hash)

cdef inline const uint8_t *node_hash_value(PyObject *n) noexcept nogil:
    return (<Node>n).hash_value

cdef inline void node_publish_hash(PyObject *n, const uint8_t *digest) noexcept nogil:
    memcpy((<Node>n).hash_value, digest, 32)
    _store_release(&(<Node>n).has_hash, 1)

cdef inline PyObject **full_node_slots(PyObject *n) noexcept nogil:
    return (<FullNode>n).slots

cdef inline PyObject *short_node_key(PyObject *n) noexcept nogil:
    return <PyObject *>(<ShortNode>n).key

cdef inline PyObject *short_node_val(PyObject *n) noexcept nogil:
    return <PyObject *>(<ShortNode>n).val

cdef inline PyObject *short_node_leaf_value(PyObject *n) noexcept nogil:
    return (<ShortNode>n).leaf_value

cdef inline PyObject *value_node_bytes(PyObject *n) noexcept nogil:
    return <PyObject *>(<ValueNode>n).value
