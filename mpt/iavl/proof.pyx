# cython: language_level=3
# cython: binding=False
"""ICS23 proofs from an IAVL tree, byte for byte as cosmos/iavl's proof_ics23.go makes them.

``MutableTree.membership_proof`` / ``non_membership_proof`` call in here; the tree hands over the nodes on the
way from the root to a leaf (``MutableTree.path_to_leaf``) and this module turns them into the ops of an
``ExistenceProof``:

* the leaf op: SHA-256, value prehashed with SHA-256, VAR_PROTO lengths, prefix varint(0) varint(1)
  varint(version of the leaf);
* one inner op per inner node, leaf first: prefix varint(height) varint(size) varint(version), then, when the
  path goes right, 0x20 || left hash; always a final 0x20 (the length byte of the child's hash), and when the
  path goes left the suffix 0x20 || right hash. ``version`` is the node's NodeKey version, or the working
  version for a node not saved yet (iavl's ``t.version + 1``).

GetMembershipProof of an absent key fails with PathToLeaf's "key does not exist"; GetNonMembershipProof of a
present key with "cannot create NonExistanceProof when Key in State" (Go's spelling); the neighbours of an absent
key are the keys at GetWithIndex's index - 1 and index, either of which may be missing at the ends of the tree
(an empty tree gives a NonExistenceProof with the key alone, as Go's does).

``membership_proof`` / ``non_membership_proof`` return mpt.ics23 message objects (made by ``_Builder``s,
without the classes' checking __init__). ``*_bytes`` encode the wire form straight into one bytes
object of the exact size (what Go's ``Marshal`` writes: fields in number order, defaults left out).

``binding=False``: the functions are plain builtins (a cheaper call than a cyfunction, which the tree's methods
pay on every proof); their docstrings start with the signature line.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from mpt.core.bytes_like cimport as_bytes
from mpt.iavl.node cimport HASH_SIZE, InnerNode, Node
from mpt.core.varint cimport put_uvarint, put_varint, uvarint_size, varint_size

from mpt.errors import ProofError
from mpt.iavl.tree import MutableTree
from mpt.ics23.messages import CommitmentProof, ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp, NonExistenceProof

cdef enum:
    LENGTH_BYTE = 0x20          # the length prefix of a 32-byte hash (convertInnerOps' lengthByte)
    HASH_SHA256 = 1             # ics23 HashOp.SHA256
    LENGTH_VAR_PROTO = 1        # ics23 LengthOp.VAR_PROTO
    # Protobuf tags: (field number << 3) | wire type (0 varint, 2 length-delimited).
    TAG_COMMITMENT_EXIST = 0x0a
    TAG_COMMITMENT_NONEXIST = 0x12
    TAG_EXIST_KEY = 0x0a
    TAG_EXIST_VALUE = 0x12
    TAG_EXIST_LEAF = 0x1a
    TAG_EXIST_PATH = 0x22
    TAG_NONEXIST_KEY = 0x0a
    TAG_NONEXIST_LEFT = 0x12
    TAG_NONEXIST_RIGHT = 0x1a
    TAG_LEAF_HASH = 0x08
    TAG_LEAF_PREHASH_VALUE = 0x18
    TAG_LEAF_LENGTH = 0x20
    TAG_LEAF_PREFIX = 0x2a
    TAG_INNER_HASH = 0x08
    TAG_INNER_PREFIX = 0x12
    TAG_INNER_SUFFIX = 0x1a
    SUFFIX_SIZE = 1 + HASH_SIZE                 # 0x20 || right hash
    INNER_SUFFIX_FIELD = 2 + SUFFIX_SIZE        # tag, length byte, suffix


cdef inline bint _goes_left(list nodes, Py_ssize_t i) noexcept:
    """Whether the path turns left below nodes[i] (an inner node)."""
    return <object>PyList_GET_ITEM(nodes, i + 1) is (<InnerNode>PyList_GET_ITEM(nodes, i)).left_node


cdef inline bytes _sibling_hash(InnerNode inner, bint left):
    """The hash of the child off the path: the parent's copy when it has one (no visit to the child), else the
    child's own (MutableTree.path_to_leaf loaded the child then)."""
    if left:
        return inner.right_child_hash if inner.right_child_hash is not None else inner.right_node.c_hash()
    return inner.left_child_hash if inner.left_child_hash is not None else inner.left_node.c_hash()


cdef inline const char *_known_sibling_hash(InnerNode inner, bint left) noexcept:
    """_sibling_hash after _hash_siblings has run: a read, nothing computed."""
    cdef bytes h
    if left:
        h = inner.right_child_hash if inner.right_child_hash is not None else inner.right_node.cached_hash
    else:
        h = inner.left_child_hash if inner.left_child_hash is not None else inner.left_node.cached_hash
    return PyBytes_AS_STRING(h)


cdef inline Py_ssize_t _inner_prefix_size(Node node, bint left) noexcept:
    return (varint_size(node.height) + varint_size(node.size) + varint_size(node.version)
            + (1 if left else 2 + HASH_SIZE))


cdef inline Py_ssize_t _inner_op_size(Node node, bint left) noexcept:
    cdef Py_ssize_t prefix = _inner_prefix_size(node, left)
    return 2 + 1 + uvarint_size(prefix) + prefix + (INNER_SUFFIX_FIELD if left else 0)


cdef inline Py_ssize_t _leaf_prefix_size(Node leaf) noexcept:
    return 2 + varint_size(leaf.version)


cdef inline Py_ssize_t _leaf_op_size(Node leaf) noexcept:
    return 6 + 2 + _leaf_prefix_size(leaf)


cdef inline Py_ssize_t _field_size(Py_ssize_t n) noexcept:
    """A length-delimited field of n bytes: tag, length, payload."""
    return 1 + uvarint_size(<uint64_t>n) + n


cdef inline Py_ssize_t _put_field_header(uint8_t *out, uint8_t tag, Py_ssize_t n) noexcept:
    out[0] = tag
    return 1 + put_uvarint(out + 1, <uint64_t>n)


cdef inline Py_ssize_t _put_bytes_field(uint8_t *out, uint8_t tag, bytes b) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    cdef Py_ssize_t p = _put_field_header(out, tag, n)
    memcpy(out + p, PyBytes_AS_STRING(b), <size_t>n)
    return p + n


cdef Py_ssize_t _put_leaf_prefix(uint8_t *out, Node leaf) noexcept:
    out[0] = 0                  # varint(0): height
    out[1] = 2                  # varint(1): size
    return 2 + put_varint(out + 2, leaf.version)


cdef Py_ssize_t _put_inner_prefix(uint8_t *out, Node node, bint left) noexcept:
    cdef Py_ssize_t p = put_varint(out, node.height)
    p += put_varint(out + p, node.size)
    p += put_varint(out + p, node.version)
    if not left:
        out[p] = LENGTH_BYTE
        memcpy(out + p + 1, _known_sibling_hash(<InnerNode>node, False), HASH_SIZE)
        p += 1 + HASH_SIZE
    out[p] = LENGTH_BYTE
    return p + 1


cdef inline void _put_inner_suffix(uint8_t *out, Node node) noexcept:
    out[0] = LENGTH_BYTE
    memcpy(out + 1, _known_sibling_hash(<InnerNode>node, True), HASH_SIZE)


cdef int _hash_siblings(list nodes) except -1:
    """Compute (or find cached) the hash of the child each inner node's op carries."""
    cdef Py_ssize_t i
    cdef bytes h
    for i in range(PyList_GET_SIZE(nodes) - 1):
        h = _sibling_hash(<InnerNode>PyList_GET_ITEM(nodes, i), _goes_left(nodes, i))
        if PyBytes_GET_SIZE(h) != HASH_SIZE:        # only a node built by hand can carry another size
            raise ProofError("IAVL node hash of %d bytes, not %d" % (PyBytes_GET_SIZE(h), HASH_SIZE))
    return 0


cdef Py_ssize_t _existence_size(list nodes) except -1:
    """Size of the ExistenceProof message (its body, without the enclosing field's tag and length)."""
    cdef Py_ssize_t i, last = PyList_GET_SIZE(nodes) - 1
    cdef Node leaf = <Node>PyList_GET_ITEM(nodes, last)
    cdef Py_ssize_t n = _field_size(_leaf_op_size(leaf))
    # proto3: empty bytes fields are left out (an empty key or value).
    if PyBytes_GET_SIZE(leaf.key) != 0:
        n += _field_size(PyBytes_GET_SIZE(leaf.key))
    if PyBytes_GET_SIZE(leaf.leaf_value) != 0:
        n += _field_size(PyBytes_GET_SIZE(leaf.leaf_value))
    for i in range(last):
        n += _field_size(_inner_op_size(<Node>PyList_GET_ITEM(nodes, i), _goes_left(nodes, i)))
    return n


cdef Py_ssize_t _put_existence(uint8_t *out, list nodes) noexcept:
    """Write the ExistenceProof body (key, value, leaf op, inner ops from the leaf up); return its size."""
    cdef Py_ssize_t i, last = PyList_GET_SIZE(nodes) - 1
    cdef Node leaf = <Node>PyList_GET_ITEM(nodes, last)
    cdef Node node
    cdef bint left
    cdef Py_ssize_t p = 0
    if PyBytes_GET_SIZE(leaf.key) != 0:
        p = _put_bytes_field(out, TAG_EXIST_KEY, leaf.key)
    if PyBytes_GET_SIZE(leaf.leaf_value) != 0:
        p += _put_bytes_field(out + p, TAG_EXIST_VALUE, leaf.leaf_value)
    p += _put_field_header(out + p, TAG_EXIST_LEAF, _leaf_op_size(leaf))
    out[p] = TAG_LEAF_HASH
    out[p + 1] = HASH_SHA256
    out[p + 2] = TAG_LEAF_PREHASH_VALUE
    out[p + 3] = HASH_SHA256
    out[p + 4] = TAG_LEAF_LENGTH
    out[p + 5] = LENGTH_VAR_PROTO
    p += 6 + _put_field_header(out + p + 6, TAG_LEAF_PREFIX, _leaf_prefix_size(leaf))
    p += _put_leaf_prefix(out + p, leaf)
    for i in range(last - 1, -1, -1):
        node = <Node>PyList_GET_ITEM(nodes, i)
        left = _goes_left(nodes, i)
        p += _put_field_header(out + p, TAG_EXIST_PATH, _inner_op_size(node, left))
        out[p] = TAG_INNER_HASH
        out[p + 1] = HASH_SHA256
        p += 2 + _put_field_header(out + p + 2, TAG_INNER_PREFIX, _inner_prefix_size(node, left))
        p += _put_inner_prefix(out + p, node, left)
        if left:
            out[p] = TAG_INNER_SUFFIX
            out[p + 1] = SUFFIX_SIZE
            _put_inner_suffix(out + p + 2, node)
            p += INNER_SUFFIX_FIELD
    return p


cdef tuple _proof_path(object tree, bytes key, object version, object index=None):
    # The walk below casts the path's items to Node/InnerNode unchecked: only the tree's own path may reach it.
    if type(tree) is not MutableTree:
        raise TypeError("tree must be an mpt.iavl.MutableTree, not %s" % type(tree).__name__)
    return tree.path_to_leaf(key, version, index)


cdef list _membership_path(object tree, bytes key, object version):
    nodes, _ = _proof_path(tree, key, version)
    if PyList_GET_SIZE(nodes) == 0 or (<Node>PyList_GET_ITEM(nodes, PyList_GET_SIZE(nodes) - 1)).key != key:
        raise ProofError("key does not exist")
    _hash_siblings(nodes)
    return nodes


cdef bytes _as_key(object key):
    return as_bytes(key, "key")


def membership_proof_bytes(tree, key, version=None):
    """membership_proof_bytes(tree, key, version=None) -> bytes

    The wire form (``CommitmentProof.Marshal()``) of Go iavl's GetMembershipProof(key) for ``tree``'s working
    tree (version None) or saved version ``version``. ProofError("key does not exist") if key is absent.
    """
    cdef bytes k = _as_key(key)
    cdef list nodes = _membership_path(tree, k, version)
    cdef Py_ssize_t body = _existence_size(nodes)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, _field_size(body))
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out)
    cdef Py_ssize_t n = _put_field_header(p, TAG_COMMITMENT_EXIST, body)
    _put_existence(p + n, nodes)
    return out


cdef tuple _neighbour_paths(object tree, bytes key, object version):
    """(left nodes or None, right nodes or None) around absent key; ProofError if key is present."""
    cdef list nodes, left = None, right = None
    cdef Node leaf
    cdef int64_t rank, size
    nodes, rank = _proof_path(tree, key, version)
    if PyList_GET_SIZE(nodes) == 0:
        return None, None
    leaf = <Node>PyList_GET_ITEM(nodes, PyList_GET_SIZE(nodes) - 1)
    if leaf.key == key:
        raise ProofError("cannot create NonExistanceProof when Key in State")
    size = (<Node>PyList_GET_ITEM(nodes, 0)).size
    # PathToLeaf of an absent key ends at one of its two neighbours: reuse that path, walk to the other.
    if leaf.key < key:
        left = nodes
        if rank < size:
            right = _proof_path(tree, key, version, rank)[0]
    else:
        right = nodes
        if rank >= 1:
            left = _proof_path(tree, key, version, rank - 1)[0]
    if left is not None:
        _hash_siblings(left)
    if right is not None:
        _hash_siblings(right)
    return left, right


def non_membership_proof_bytes(tree, key, version=None):
    """non_membership_proof_bytes(tree, key, version=None) -> bytes

    The wire form of Go iavl's GetNonMembershipProof(key): a NonExistenceProof with the existence proofs of the
    keys just before and just after key (either left out at the ends of the tree). ProofError if key is present.
    """
    cdef bytes k = _as_key(key)
    cdef list left, right
    left, right = _neighbour_paths(tree, k, version)
    cdef Py_ssize_t left_size = 0 if left is None else _existence_size(left)
    cdef Py_ssize_t right_size = 0 if right is None else _existence_size(right)
    cdef Py_ssize_t body = (_field_size(PyBytes_GET_SIZE(k)) if PyBytes_GET_SIZE(k) != 0 else 0)
    if left is not None:
        body += _field_size(left_size)
    if right is not None:
        body += _field_size(right_size)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, _field_size(body))
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(out)
    cdef Py_ssize_t n = _put_field_header(p, TAG_COMMITMENT_NONEXIST, body)
    if PyBytes_GET_SIZE(k) != 0:
        n += _put_bytes_field(p + n, TAG_NONEXIST_KEY, k)
    if left is not None:
        n += _put_field_header(p + n, TAG_NONEXIST_LEFT, left_size)
        n += _put_existence(p + n, left)
    if right is not None:
        n += _put_field_header(p + n, TAG_NONEXIST_RIGHT, right_size)
        n += _put_existence(p + n, right)
    return out


# ------------------------------------------------------------------------------------------ message objects

cdef extern from "structmember.h":
    # A __slots__ entry of a Python class is a member descriptor (descrobject.h) over a PyMemberDef
    # (structmember.h up to CPython 3.11, descrobject.h since; the header stays for compatibility).
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyTypeObject *d_type
        PyMemberDef *d_member
    PyTypeObject PyMemberDescr_Type
    enum: T_OBJECT_EX


cdef object _SHA256 = HashOp.SHA256
cdef object _NO_HASH = HashOp.NO_HASH
cdef object _VAR_PROTO = LengthOp.VAR_PROTO
cdef bytes _EMPTY = b""
cdef tuple _NO_ARGS = ()


cdef Py_ssize_t _slot(type cls, str name) except -2:
    """The offset of slot ``name`` in instances of cls, or -1 when it is not a plain __slots__ entry stored
    with no __setattr__ in between (then fields are set through setattr)."""
    descr = getattr(cls, name, None)
    if (type(descr) is not <type>&PyMemberDescr_Type or cls.__setattr__ is not object.__setattr__
            or (<PyMemberDescrObject *>descr).d_member.type != T_OBJECT_EX):
        return -1
    return (<PyMemberDescrObject *>descr).d_member.offset


@cython.final
cdef class _Builder:
    """Makes one message class's objects without its __init__: its checks are for callers' values, and the
    values made here are right by construction (bytes, the SHA256 / VAR_PROTO members). A proof in a 100K-key
    tree has about 17 inner ops; the checks and generic setattr would cost more than the walk.
    Fields go straight into the instance's slots when they are plain __slots__ (what mpt.ics23's classes
    are), else through setattr."""
    cdef:
        type cls
        tuple names
        Py_ssize_t offsets[5]
        bint direct

    @staticmethod
    cdef _Builder new(type cls, tuple names):
        cdef _Builder b = _Builder.__new__(_Builder)
        cdef Py_ssize_t i
        b.cls = cls
        b.names = names
        b.direct = True
        for i in range(len(names)):
            b.offsets[i] = _slot(cls, names[i])
            if b.offsets[i] < 0:
                b.direct = False
        return b

    cdef object make(self):
        return (<PyTypeObject *>self.cls).tp_new(self.cls, <PyObject *>_NO_ARGS, NULL)

    cdef inline int set(self, object obj, Py_ssize_t field, object value) except -1:
        cdef PyObject **slot
        cdef PyObject *old
        if not self.direct:
            setattr(obj, self.names[field], value)
            return 0
        slot = <PyObject **>(<char *><PyObject *>obj + self.offsets[field])
        old = slot[0]
        Py_INCREF(value)
        slot[0] = <PyObject *>value
        Py_XDECREF(old)
        return 0


cdef _Builder _LEAF_OP = _Builder.new(LeafOp, ("hash", "prehash_key", "prehash_value", "length", "prefix"))
cdef _Builder _INNER_OP = _Builder.new(InnerOp, ("hash", "prefix", "suffix"))
cdef _Builder _EXISTENCE = _Builder.new(ExistenceProof, ("key", "value", "leaf", "path"))
cdef _Builder _NONEXISTENCE = _Builder.new(NonExistenceProof, ("key", "left", "right"))
cdef _Builder _COMMITMENT = _Builder.new(CommitmentProof, ("exist", "nonexist", "batch", "compressed"))


cdef object _leaf_op(Node leaf):
    cdef uint8_t buf[2 + 10]
    cdef object op = _LEAF_OP.make()
    _LEAF_OP.set(op, 0, _SHA256)
    _LEAF_OP.set(op, 1, _NO_HASH)
    _LEAF_OP.set(op, 2, _SHA256)
    _LEAF_OP.set(op, 3, _VAR_PROTO)
    _LEAF_OP.set(op, 4, PyBytes_FromStringAndSize(<char *>buf, _put_leaf_prefix(buf, leaf)))
    return op


cdef object _inner_op(Node node, bint left):
    cdef uint8_t buf[3 * 10 + 2 + HASH_SIZE]
    cdef bytes suffix
    cdef object op = _INNER_OP.make()
    _INNER_OP.set(op, 0, _SHA256)
    _INNER_OP.set(op, 1, PyBytes_FromStringAndSize(<char *>buf, _put_inner_prefix(buf, node, left)))
    if left:
        suffix = PyBytes_FromStringAndSize(NULL, SUFFIX_SIZE)
        _put_inner_suffix(<uint8_t *>PyBytes_AS_STRING(suffix), node)
        _INNER_OP.set(op, 2, suffix)
    else:
        _INNER_OP.set(op, 2, _EMPTY)
    return op


cdef object _existence_proof(list nodes):
    """The ExistenceProof of the leaf at the end of nodes (root first), ops from the leaf up."""
    cdef Py_ssize_t i, last = PyList_GET_SIZE(nodes) - 1
    cdef Node leaf = <Node>PyList_GET_ITEM(nodes, last)
    cdef list path = PyList_New(last)
    cdef object op
    for i in range(last):
        op = _inner_op(<Node>PyList_GET_ITEM(nodes, last - 1 - i), _goes_left(nodes, last - 1 - i))
        Py_INCREF(op)
        PyList_SET_ITEM(path, i, op)
    cdef object proof = _EXISTENCE.make()
    _EXISTENCE.set(proof, 0, leaf.key)
    _EXISTENCE.set(proof, 1, leaf.leaf_value)
    _EXISTENCE.set(proof, 2, _leaf_op(leaf))
    _EXISTENCE.set(proof, 3, path)
    return proof


cdef object _commitment(object exist, object nonexist):
    cdef object proof = _COMMITMENT.make()
    _COMMITMENT.set(proof, 0, exist)
    _COMMITMENT.set(proof, 1, nonexist)
    _COMMITMENT.set(proof, 2, None)
    _COMMITMENT.set(proof, 3, None)
    return proof


def membership_proof(tree, key, version=None):
    """membership_proof(tree, key, version=None) -> CommitmentProof

    Go iavl's GetMembershipProof(key) for ``tree``'s working tree (version None) or saved version ``version``:
    an ExistenceProof of key and its value. ProofError("key does not exist") if key is absent.
    """
    return _commitment(_existence_proof(_membership_path(tree, _as_key(key), version)), None)


def non_membership_proof(tree, key, version=None):
    """non_membership_proof(tree, key, version=None) -> CommitmentProof

    Go iavl's GetNonMembershipProof(key): a NonExistenceProof with the existence proofs of the keys just before
    and just after key (either left out at the ends of the tree). ProofError if key is present.
    """
    cdef bytes k = _as_key(key)
    cdef list left, right
    left, right = _neighbour_paths(tree, k, version)
    cdef object nonexist = _NONEXISTENCE.make()
    _NONEXISTENCE.set(nonexist, 0, k)
    _NONEXISTENCE.set(nonexist, 1, None if left is None else _existence_proof(left))
    _NONEXISTENCE.set(nonexist, 2, None if right is None else _existence_proof(right))
    return _commitment(None, nonexist)
