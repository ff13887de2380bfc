# cython: language_level=3
"""Trie nodes (geth trie/node.go). Nodes are immutable once linked into a trie except for their cached hash and
dirty flag: updates copy the path they touch, which is what makes Trie.copy() O(1)."""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy
from mpt.core.prefetch cimport prefetch_line, prefetch_object
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
        # Bit i set exactly when slots[i] holds a child (set_child and copy keep it): the passes over a large
        # trie visit a branch's children without testing all 17 slots, where near the leaves two or three are
        # present. It costs no memory: the object grows from 200 to 208 bytes, the size of the block pymalloc
        # gave it before.
        uint32_t present
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
            self.present &= ~(<uint32_t>1 << i)
        else:
            Py_INCREF(c)
            self.slots[i] = <PyObject *>c
            self.present |= <uint32_t>1 << i
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

cdef inline uint32_t full_node_present(PyObject *n) noexcept nogil:
    return (<FullNode>n).present

cdef inline PyObject *short_node_key(PyObject *n) noexcept nogil:
    return <PyObject *>(<ShortNode>n).key

cdef inline PyObject *short_node_val(PyObject *n) noexcept nogil:
    return <PyObject *>(<ShortNode>n).val

cdef inline PyObject *short_node_leaf_value(PyObject *n) noexcept nogil:
    return (<ShortNode>n).leaf_value

cdef inline PyObject *value_node_bytes(PyObject *n) noexcept nogil:
    return <PyObject *>(<ValueNode>n).value

# A node's type, and a borrowed bytes object's contents: CPython's own macros, usable without the GIL on objects
# the caller holds (the node classes live as long as their module).
cdef extern from *:
    """
    #define MPT_NODE_TYPE(p) ((void *)Py_TYPE(p))
    #if defined(__GNUC__) || defined(__clang__)
    #define MPT_LOWEST_BIT(m) __builtin_ctz(m)
    #else
    static int mpt_lowest_bit(uint32_t m) { int i = 0; while (!(m & 1)) { m >>= 1; i++; } return i; }
    #define MPT_LOWEST_BIT(m) mpt_lowest_bit(m)
    #endif
    #define MPT_BORROWED_BYTES_DATA(b) ((const uint8_t *)PyBytes_AS_STRING(b))
    #define MPT_BORROWED_BYTES_SIZE(b) PyBytes_GET_SIZE(b)
    """
    void *node_type "MPT_NODE_TYPE"(PyObject *n) noexcept nogil
    const uint8_t *borrowed_bytes_data "MPT_BORROWED_BYTES_DATA"(PyObject *b) noexcept nogil
    Py_ssize_t borrowed_bytes_size "MPT_BORROWED_BYTES_SIZE"(PyObject *b) noexcept nogil
    # The index of the lowest set bit of a nonzero mask (a FullNode's present children, taken lowest first).
    int lowest_bit "MPT_LOWEST_BIT"(uint32_t mask) noexcept nogil

cdef inline bint is_full_node(PyObject *n) noexcept nogil:
    return node_type(n) is <void *>FullNode

cdef inline bint is_short_node(PyObject *n) noexcept nogil:
    return node_type(n) is <void *>ShortNode

cdef inline bint is_value_node(PyObject *n) noexcept nogil:
    return node_type(n) is <void *>ValueNode


# ---------------------------------------------------------------------------------------------------------------
# Prefetching for the passes over a large trie (the hashing pass, the committer): every node, key and value is a
# separate object somewhere in the heap, so those passes are bound by memory latency. Before walking a branch's
# children they ask for them, and what they point to, all at once (mpt.core.prefetch), so that the cache misses
# overlap instead of queueing one by one (measured: docs/contributing/performance_notes.md).
# ---------------------------------------------------------------------------------------------------------------

cdef inline int gather_children(PyObject *n, PyObject **kids, int *slot_of) noexcept nogil:
    """The first of the three prefetch rounds under branch n: its present children (slots 0-15) into kids, lowest
    slot first, each asked for (prefetch_object); their slot numbers into slot_of unless it is NULL. Returns
    how many."""
    cdef PyObject **slots = full_node_slots(n)
    cdef uint32_t m = full_node_present(n) & 0xFFFF
    cdef int count = 0, i
    while m:
        i = lowest_bit(m)
        m &= m - 1
        kids[count] = slots[i]
        prefetch_object(slots[i])
        if slot_of != NULL:
            slot_of[count] = i
        count += 1
    return count


cdef inline bint _passed_over(PyObject *n, bint for_commit) noexcept nogil:
    # A node the pass will not visit: hashed already (hashing pass), or clean (committer).
    return not (<Node>n).dirty if for_commit else node_has_hash(n)


cdef inline void prefetch_below(PyObject **kids, int count, bint for_commit) noexcept nogil:
    """The second and third of three prefetch rounds under a branch whose present children kids[:count] the caller
    has gathered and prefetched (the first round: gather_children), each round waiting for about one miss while the
    others arrive alongside: (2) what each child points to: a leaf's key and value bytes (ShortNode.leaf_value: the
    ValueNode is never read), a branch's other lines and children; (3) the keys and value bytes of the leaves one
    level down. Going two levels down lets a branch above the bottom one (at 100K accounts: about 16 children and 24
    leaves below them) overlap all its leaves' misses, where a bottom branch alone has 1-3 leaves to overlap.
    Children the pass skips (for_commit: clean ones; else hashed ones) are not followed."""
    cdef PyObject *c
    cdef PyObject *g
    cdef PyObject *v
    cdef PyObject **gs
    cdef uint32_t m
    cdef int j
    for j in range(count):
        c = kids[j]
        if _passed_over(c, for_commit):
            continue
        if is_short_node(c):
            prefetch_object(short_node_key(c))
            v = short_node_leaf_value(c)
            prefetch_object(v if v != NULL else short_node_val(c))
        elif is_full_node(c):
            prefetch_line(<const char *>c + 128)
            prefetch_line(<const char *>c + 192)
            gs = full_node_slots(c)
            m = full_node_present(c) & 0xFFFF
            while m:
                prefetch_object(gs[lowest_bit(m)])
                m &= m - 1
    for j in range(count):
        c = kids[j]
        if is_full_node(c) and not _passed_over(c, for_commit):
            gs = full_node_slots(c)
            m = full_node_present(c) & 0xFFFF
            while m:
                g = gs[lowest_bit(m)]
                m &= m - 1
                if is_short_node(g) and not _passed_over(g, for_commit):
                    prefetch_object(short_node_key(g))
                    v = short_node_leaf_value(g)
                    prefetch_object(v if v != NULL else short_node_val(g))
