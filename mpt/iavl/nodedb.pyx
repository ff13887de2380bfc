# cython: language_level=3
"""NodeDB: cosmos/iavl's nodedb.go, the IAVL key layout over an mpt node store.

The records, exactly as Go iavl (v1) writes them, so that either side opens what the other wrote:

* ``b"s" + version (8 bytes BE) + nonce (4 bytes BE)``: a node in the v1 format. The nodes of version v are
  numbered 1, 2, ... in pre-order, so the root of version v is ``(v, 1)`` (Go's ``GetRootKey``).
* The root record ``b"s" + (v, 1)`` holds the root node itself; for a version that changed nothing, the 13-byte
  ``b"s" + <node key of the reused root>`` (``SaveRoot``); for an empty tree, an empty value (``SaveEmptyRoot``).
  Pruning a version whose root the next version reuses moves that root to ``(v, 0)``, and readers look there
  when ``(v, 1)`` is gone.
* ``b"f" + key``: a fast node, the latest value of a key: zigzag varint ``versionLastUpdatedAt`` + length-prefixed
  value (``fastnode.Node``), written and removed at each ``save_version``.
* ``b"m" + b"storage_version"``: ``1.1.0-<latest version>`` once fast storage is on (``1.0.0`` or absent before).
* Legacy, read (iavl v0.x, and written by ``format="legacy"``): ``b"n" + hash`` nodes, ``b"r" + version`` root
  hashes (empty for an empty tree), ``b"o" + ...`` orphans.

Fast nodes read or saved are kept decoded in a bounded cache, as Go's ``fastNodeCache`` (100,000 entries by
default): a get at the latest version that hits it touches no store and allocates nothing.

The latest version is found as Go finds it: the version of the last ``s`` key (a reverse scan), else of the last
``r`` key. One record of mpt's own exists while an import runs: ``b"m" + b"mpt:import"``, written with its
first batch and deleted with its last, so that the next open removes what a killed import wrote.

What the tree writes into, it owns: before the first write ``check_ours`` makes sure that the store is empty or an
IAVL tree's, and what is deleted or overwritten must decode as the record its key says (``is_iavl_record``);
anything else raises ForeignStoreError before a write.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy

from mpt.iavl.node cimport (
    FORMAT_LEGACY,
    FORMAT_V1,
    HASH_SIZE,
    MODE_LEGACY_LEFT,
    MODE_LEGACY_RIGHT,
    NODE_KEY_SIZE,
    InnerNode,
    Node,
    NodeFormat,
    c_decode_node,
    make_node_key,
)
from mpt.core.varint cimport (
    MAX_VARINT_LEN64,
    put_be32,
    put_be64,
    put_uvarint,
    put_varint,
    read_be32,
    read_be64,
    read_uvarint,
    unzigzag,
)

import os

from mpt.db.memory import MemoryDB, prefix_range
from mpt.db.store_base import PersistentStore
from mpt.errors import (
    CorruptTreeError,
    ExportImportError,
    ForeignStoreError,
    MissingNodeError,
    NodeDecodeError,
    StoreError,
    VersionError,
)

NODE_PREFIX = b"s"
FAST_PREFIX = b"f"
METADATA_PREFIX = b"m"
LEGACY_NODE_PREFIX = b"n"
LEGACY_ORPHAN_PREFIX = b"o"
LEGACY_ROOT_PREFIX = b"r"
STORAGE_VERSION_KEY = b"m" + b"storage_version"
DEFAULT_STORAGE_VERSION = "1.0.0"
FAST_STORAGE_VERSION = "1.1.0"
FAST_CACHE_SIZE = 100000        # Go iavl's fastNodeCacheSize
# The one record of mpt's own: written with an import's first batch and deleted with its last, so that the next
# open of a store whose import was killed removes what the import wrote (see NodeDB.remove_import). Go iavl
# reads metadata records by name and never sees it.
IMPORT_MARKER_KEY = b"m" + b"mpt:import"
REMOVE_BATCH_SIZE = 10000       # records deleted per batch when an interrupted import is removed
# The records a prune keeps for its later steps, which read many of them again (on a store other than MemoryDB:
# there each is a read of the backend). Two generations of at most this many: when the newer one is full, the
# older one goes, with what was not read again since. About 25 MB of 200-byte records at most, whatever the
# store's size. Read when a prune starts; 0 turns the cache off.
PRUNE_CACHED_RECORDS = 65536

cdef extern from "Python.h":
    PyObject *PyDict_GetItemWithError(object d, object key) except? NULL

cdef bytes S = b"s"
cdef bytes F = b"f"
cdef bytes N = b"n"
cdef bytes R = b"r"
cdef int64_t MAX_VERSION = 0x7FFFFFFFFFFFFFFF


cdef inline bytes _prefixed(char prefix, bytes key):
    """prefix + key in one allocation (bytes + bytes goes through the buffer protocol: twice the work)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(key)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 1)
    cdef char *o = PyBytes_AS_STRING(out)
    o[0] = prefix
    memcpy(o + 1, PyBytes_AS_STRING(key), n)
    return out


cdef inline bytes _node_record_key(int64_t version, uint32_t nonce):
    """b"s" + version (8 bytes BE) + nonce (4 bytes BE): a v1 node's record key, built in one allocation."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 1 + NODE_KEY_SIZE)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    o[0] = b"s"[0]
    put_be64(o + 1, <uint64_t>version)
    put_be32(o + 9, nonce)
    return out


cdef inline bytes _legacy_root_key(int64_t version):
    return R + (<object>version).to_bytes(8, "big")


def root_key(int64_t version):
    """The database key of version's root record: ``b"s" + NodeKey(version, 1)``."""
    return _node_record_key(version, 1)


def legacy_root_key(int64_t version):
    return _legacy_root_key(version)


cdef bytes _fast_node_bytes(int64_t version, bytes value):
    cdef uint8_t head[2 * MAX_VARINT_LEN64]
    cdef Py_ssize_t n = PyBytes_GET_SIZE(value)
    cdef Py_ssize_t h = put_varint(head, version)
    cdef bytes out
    cdef char *o
    h += put_uvarint(head + h, <uint64_t>n)
    out = PyBytes_FromStringAndSize(NULL, h + n)
    o = PyBytes_AS_STRING(out)
    memcpy(o, head, h)
    memcpy(o + h, PyBytes_AS_STRING(value), n)
    return out


def encode_fast_node(int64_t version, bytes value):
    """A fast node's bytes: zigzag varint versionLastUpdatedAt, then the length-prefixed value."""
    return _fast_node_bytes(version, value)


cdef bytes _fast_node_value(bytes key, bytes data, int64_t *version):
    """The value of a fast node's bytes, its versionLastUpdatedAt in version[0]."""
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos
    cdef uint64_t u, length
    pos = read_uvarint(p, 0, n, &u)
    if pos >= 0:
        pos = read_uvarint(p, pos, n, &length)
    if pos < 0 or length > <uint64_t>(n - pos):
        raise CorruptTreeError("malformed IAVL fast node f%s: %s" % (key.hex(), data.hex()))
    version[0] = unzigzag(u)
    # Go's DeserializeNode ignores bytes after the value; so do we.
    return PyBytes_FromStringAndSize(<const char *>p + pos, <Py_ssize_t>length)


cdef tuple _decode_fast_node(bytes key, bytes data):
    cdef int64_t version
    cdef bytes value = _fast_node_value(key, data, &version)
    return value, version


def decode_fast_node(bytes data, bytes key=b""):
    """(value, versionLastUpdatedAt) of a fast node's bytes."""
    return _decode_fast_node(key, data)


# ------------------------------------------------------------------------------------------ whose records

cdef bint _is_fast_record(bytes data) noexcept:
    """Whether data is a fast node's bytes exactly as Go writes them: zigzag varint version (>= 1), uvarint
    length, the value and nothing after it."""
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos
    cdef uint64_t u, length
    pos = read_uvarint(p, 0, n, &u)
    if pos < 0 or unzigzag(u) < 1:
        return False
    pos = read_uvarint(p, pos, n, &length)
    return pos >= 0 and length == <uint64_t>(n - pos)


cdef bint _decodes(bytes data, NodeFormat fmt) noexcept:
    try:
        c_decode_node(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), fmt,
                      1 if fmt == FORMAT_V1 else 0, 1 if fmt == FORMAT_V1 else 0, fmt == FORMAT_V1)
    except Exception:
        return False
    return True


cdef bint _is_storage_version(bytes data) noexcept:
    # "1.0.0", "1.1.0", "1.1.0-<latest version>"
    cdef Py_ssize_t i, n = PyBytes_GET_SIZE(data)
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    if n == 0 or n > 48:
        return False
    for i in range(n):
        if not (48 <= p[i] <= 57 or p[i] == 46 or p[i] == 45):
            return False
    return 48 <= p[0] <= 57


cpdef bint is_iavl_record(bytes key, bytes value):
    """Whether (key, value) decodes as the IAVL record its key says it is: a v1 node (or root record) under
    ``s``, a fast node under ``f``, a legacy node under ``n``, a legacy root under ``r``, a legacy orphan under
    ``o``, the storage version or mpt's import marker under ``m``. What a tree deletes or overwrites must pass
    this first: a record that does not is someone else's (ForeignStoreError)."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(key), m = PyBytes_GET_SIZE(value)
    cdef const uint8_t *v = <const uint8_t *>PyBytes_AS_STRING(value)
    cdef uint8_t c
    if n == 0:
        return False
    c = (<const uint8_t *>PyBytes_AS_STRING(key))[0]
    if c == b"s"[0]:
        if n != 1 + NODE_KEY_SIZE:
            return False
        # A root record holds the root node, nothing (an empty tree) or the key of a reused root.
        if m == 0 or (v[0] == b"s"[0] and (m == 1 + NODE_KEY_SIZE or m == 9)):
            return True
        return _decodes(value, FORMAT_V1)
    if c == b"f"[0]:
        return n > 1 and _is_fast_record(value)
    if c == b"n"[0]:
        return n == 1 + HASH_SIZE and _decodes(value, FORMAT_LEGACY)
    if c == b"r"[0]:
        return n == 9 and (m == 0 or m == HASH_SIZE)
    if c == b"o"[0]:
        return n == 1 + 8 + 8 + HASH_SIZE and m == HASH_SIZE
    if c == b"m"[0]:
        if key == STORAGE_VERSION_KEY:
            return _is_storage_version(value)
        return key == IMPORT_MARKER_KEY
    return False


cdef str show_key(bytes key):
    """A store key as errors show it: text when it is printable ASCII, else hex."""
    cdef bytes head = key[:48]
    cdef str more = "..." if PyBytes_GET_SIZE(key) > 48 else ""
    if head and all(32 <= b < 127 for b in head):
        return repr(head)[1:] + more
    return "0x" + head.hex() + more


def cosmos_store_names(db, int limit=64):
    """The module store names of a Cosmos SDK multistore opened without a prefix (its ``s/k:<name>/`` keys), in
    key order: one seek per name, not a scan. Empty when db is no multistore."""
    cdef list names = []
    cdef bytes start = b"s/k:", k
    cdef Py_ssize_t slash
    while len(names) < limit:
        k = None
        for k, _ in db.iterate(start, b"s/k;"):
            break
        if k is None:
            break
        slash = k.find(b"/", 4)
        if slash < 0:
            break
        names.append(k[4:slash].decode("utf-8", "replace"))
        start = k[:slash] + b"0"        # "0" follows "/": the first key past this module's
    return names


def foreign_store_error(db, bytes key, str doing):
    """The ForeignStoreError for a record under ``key`` that is not IAVL's, found before ``doing``."""
    names = cosmos_store_names(db, 8) if key.startswith(b"s/") else []
    if names:
        hint = ("it is a Cosmos multistore: open one module's tree with its prefix, e.g. prefix=b\"s/k:%s/\" "
                "(stores: %s)" % (names[0], ", ".join(names)))
    else:
        hint = ("if the tree shares this database with other data, open the store with the tree's own key prefix "
                "(LevelDBStore(path, prefix=b\"s/k:<name>/\"))")
    return ForeignStoreError("refusing to %s: the store %r holds a record that is not an IAVL tree's (key %s); "
                             "nothing was written. %s" % (doing, db, show_key(key), hint), key=key)


cdef str describe(Node node):
    """How errors name a stored node: its v1 node key (version, nonce), or the hash of a legacy node."""
    if node.nonce != 0 or node.cached_hash is None:
        return "s%s (version %d, nonce %d)" % (make_node_key(node.version, node.nonce).hex(), node.version,
                                                node.nonce)
    return "n%s (legacy, version %d)" % (node.cached_hash.hex(), node.version)


cdef int check_child(Node parent, Node child, bint right) except -1:
    """A child loaded from the store must sit lower than its parent (heights fall by one or two in an AVL tree)
    and hold fewer leaves: what keeps every walk finite on a corrupt store (a node that names itself or an
    ancestor as a child cannot pass, whatever the keys say)."""
    if child.height < parent.height and child.height >= parent.height - 2 and child.size < parent.size:
        return 0
    raise CorruptTreeError(
        "corrupt IAVL store: node %s (height %d, size %d) names %s (height %d, size %d) as its %s child"
        % (describe(parent), parent.height, parent.size, describe(child), child.height, child.size,
           "right" if right else "left"))


cdef int check_children(Node parent, Node left, Node right) except -1:
    """Both children in hand: the parent's height is one more than the higher child's, its size their sum."""
    cdef int h = (left.height if left.height > right.height else right.height) + 1
    if parent.height == h and parent.size == left.size + right.size:
        return 0
    raise CorruptTreeError(
        "corrupt IAVL store: node %s has height %d and size %d, but its children %s and %s give height %d and "
        "size %d" % (describe(parent), parent.height, parent.size, describe(left), describe(right), h,
                     left.size + right.size))


cdef bint _same_node(Node a, Node b) except -1:
    """Go compares the two walks' nodes by hash. The hash covers the version, height and size (and a leaf's key),
    so nodes that differ there differ, and only the rest need their (leaf) hashes computed."""
    if a.version != b.version or a.height != b.height or a.size != b.size:
        return False
    if a.height == 0 and a.key != b.key:
        return False
    return a.c_hash() == b.c_hash()


@cython.final
cdef class _RecordWriter:
    """Where save_version's records go: straight into a MemoryDB's dict, or through a write batch's put."""

    @staticmethod
    cdef _RecordWriter new(dict into, object put):
        cdef _RecordWriter w = _RecordWriter.__new__(_RecordWriter)
        w.into = into
        w.put = put
        return w

# ------------------------------------------------------------------------------------------ pruning's walk
# Pruning walks two trees at once and needs of each node only its children's references, its height and its
# size: _links reads those straight from the stored record, into the record keys of the children, with no Node
# object, key, value or hash made (a Node and its five byte strings cost three quarters of the walk).

cdef inline Py_ssize_t _skip_varint(const uint8_t *p, Py_ssize_t pos, Py_ssize_t n, int64_t *out) noexcept:
    cdef uint64_t u
    pos = read_uvarint(p, pos, n, &u)
    if pos >= 0:
        out[0] = unzigzag(u)
    return pos


cdef inline Py_ssize_t _skip_bytes(const uint8_t *p, Py_ssize_t pos, Py_ssize_t n) noexcept:
    cdef uint64_t length
    pos = read_uvarint(p, pos, n, &length)
    if pos < 0 or length > <uint64_t>(n - pos):
        return -1
    return pos + <Py_ssize_t>length


cdef bytes _child_key(const uint8_t *p, Py_ssize_t *pos, Py_ssize_t n, bint by_hash):
    """The record key of a child reference at p[pos[0]:]: n + hash, or s + version + nonce; None if malformed."""
    cdef int64_t version, nonce
    cdef Py_ssize_t at = pos[0], end
    if by_hash:
        end = _skip_bytes(p, at, n)
        if end < 0 or end - at != 1 + HASH_SIZE:
            return None
        pos[0] = end
        return _prefixed_raw(b"n", p + at + 1, HASH_SIZE)
    at = _skip_varint(p, at, n, &version)
    if at < 0 or version < 0:
        return None
    at = _skip_varint(p, at, n, &nonce)
    if at < 0 or nonce < 0 or nonce > <int64_t>0xFFFFFFFF:
        return None
    pos[0] = at
    return _node_record_key(version, <uint32_t>nonce)


cdef inline bytes _prefixed_raw(char prefix, const uint8_t *data, Py_ssize_t n):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 1)
    cdef char *o = PyBytes_AS_STRING(out)
    o[0] = prefix
    memcpy(o + 1, data, n)
    return out


cdef class _Walk


cdef int _links(bytes key, bytes data, int64_t *height, int64_t *size, _Walk walk) except -1:
    """Read a stored node's height and size, and push its children's record keys on walk (right, then left:
    popped in pre-order; walk None: the height and size alone). The record's format follows its key: ``s`` v1,
    ``n`` legacy."""
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), pos
    cdef int64_t version, mode = 0
    cdef bint legacy = PyBytes_GET_SIZE(key) == 1 + HASH_SIZE
    cdef bytes left, right
    pos = _skip_varint(p, 0, n, height)
    if pos >= 0:
        pos = _skip_varint(p, pos, n, size)
    if pos >= 0 and legacy:
        pos = _skip_varint(p, pos, n, &version)
    if pos >= 0:
        pos = _skip_bytes(p, pos, n)                # the key
    if pos < 0 or height[0] < 0 or height[0] > 127 or (size[0] != 1 if height[0] == 0 else size[0] < 2):
        raise CorruptTreeError("corrupt IAVL node %s: %s" % (show_key(key), data.hex()))
    if height[0] == 0 or walk is None:
        return 0
    if not legacy:
        pos = _skip_bytes(p, pos, n)                # the node's hash
        if pos >= 0:
            pos = _skip_varint(p, pos, n, &mode)
        if pos < 0 or mode < 0 or mode > 3:
            raise CorruptTreeError("corrupt IAVL node %s: %s" % (show_key(key), data.hex()))
    left = _child_key(p, &pos, n, legacy or (mode & MODE_LEGACY_LEFT) != 0)
    right = _child_key(p, &pos, n, legacy or (mode & MODE_LEGACY_RIGHT) != 0) if left is not None else None
    if right is None or pos != n:
        raise CorruptTreeError("corrupt IAVL node %s: %s" % (show_key(key), data.hex()))
    walk.push(right)
    walk.push(left)
    return 0


cdef inline int64_t _key_version(bytes key) noexcept:
    """The version in a v1 record key (s + version + nonce); -1 for a legacy one (n + hash): legacy nodes are
    older than every v1 version."""
    if PyBytes_GET_SIZE(key) == 1 + NODE_KEY_SIZE:
        return <int64_t>read_be64(<const uint8_t *>PyBytes_AS_STRING(key) + 1)
    return -1


cdef inline bytes _record_key(bytes ref):
    """The record key of a node reference: s + node key, or n + hash."""
    return _prefixed(b"s" if PyBytes_GET_SIZE(ref) == NODE_KEY_SIZE else b"n", ref)


cdef enum:
    _PARENT_HEIGHT = 0              # the slots kept beside each key of a _Walk
    _PARENT_SIZE = 1
    _SIDE = 2                       # 0 left child, 1 right child, -1 a root
    _EXACT_SIZE = 3                 # the size the node must have (-1: not known)
    _EXACT_HEIGHT = 4               # the height it must have (-1: any that fits under the parent)
    _SLOTS = 5


@cython.final
cdef class _Walk:
    """One of pruning's two pre-order walks: a stack of record keys, and beside each key what its node must look
    like, from its parent and its left sibling: every node read is checked to sit lower than its parent and hold
    fewer leaves (what keeps a walk over a corrupt store finite), and a right child read after its left sibling
    must give the parent its height and size, as check_children requires of loaded trees.

    The keys are a C array of references, not a list: a walk's stack goes up and down by one or two at every
    node, and a list reallocated itself each time its length crossed half its allocation (a fifth of a prune's
    instructions on a MemoryDB)."""
    cdef PyObject **keys            # n references, owned
    cdef Py_ssize_t n
    cdef int64_t *slots             # _SLOTS per key
    cdef Py_ssize_t capacity        # of keys and of slots
    cdef int64_t top[_SLOTS]        # the slots of the key popped last

    def __cinit__(self):
        self.n = 0
        self.capacity = 64
        self.keys = <PyObject **>PyMem_Malloc(self.capacity * sizeof(PyObject *))
        self.slots = <int64_t *>PyMem_Malloc(_SLOTS * self.capacity * sizeof(int64_t))
        if self.keys == NULL or self.slots == NULL:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.keys != NULL:
            for i in range(self.n):
                Py_XDECREF(self.keys[i])
        PyMem_Free(self.keys)
        PyMem_Free(self.slots)

    cdef inline bint empty(self) noexcept:
        return self.n == 0

    cdef int push(self, bytes key) except -1:
        """key on top of the stack, its slots not set yet."""
        cdef PyObject **grown_keys
        cdef int64_t *grown_slots
        if self.n == self.capacity:
            grown_keys = <PyObject **>PyMem_Realloc(self.keys, 2 * self.capacity * sizeof(PyObject *))
            if grown_keys == NULL:
                raise MemoryError()
            self.keys = grown_keys
            grown_slots = <int64_t *>PyMem_Realloc(self.slots, 2 * _SLOTS * self.capacity * sizeof(int64_t))
            if grown_slots == NULL:
                raise MemoryError()
            self.slots = grown_slots
            self.capacity *= 2
        Py_INCREF(key)
        self.keys[self.n] = <PyObject *>key
        self.n += 1
        return 0

    cdef int push_root(self, bytes key) except -1:
        cdef int i
        self.push(key)
        for i in range(_SLOTS):
            self.slots[_SLOTS * (self.n - 1) + i] = -1
        return 0

    cdef bytes pop(self):
        cdef int j
        cdef bytes key
        self.n -= 1
        for j in range(_SLOTS):
            self.top[j] = self.slots[_SLOTS * self.n + j]
        key = <bytes>self.keys[self.n]         # a reference of our own, then the array's dropped
        Py_XDECREF(self.keys[self.n])
        return key

    cdef int expand(self, NodeDB ndb, bytes key, bint children) except -1:
        """Read the node of key, popped last, check it, and push its children (with children; else only check
        it: a node the other walk shares, which must be there and fit its place before any node is deleted
        because it is not that one)."""
        cdef int64_t height, size, ph = self.top[_PARENT_HEIGHT], ps = self.top[_PARENT_SIZE]
        cdef Py_ssize_t n = self.n, i
        cdef int64_t *sibling
        _links(key, ndb.record(key), &height, &size, self if children else None)
        if ph >= 0 and not (height < ph and height >= ph - 2 and size < ps):
            raise CorruptTreeError("corrupt IAVL store: node %s (height %d, size %d) sits under a parent of height "
                                   "%d and size %d" % (show_key(key), height, size, ph, ps))
        if (self.top[_EXACT_SIZE] >= 0 and size != self.top[_EXACT_SIZE]) or \
                (self.top[_EXACT_HEIGHT] >= 0 and height != self.top[_EXACT_HEIGHT]):
            raise CorruptTreeError("corrupt IAVL store: node %s (height %d, size %d) and its left sibling do not "
                                   "give their parent's height %d and size %d" % (show_key(key), height, size, ph, ps))
        if self.top[_SIDE] == 0:
            # A left child: its right sibling, below it on the stack, must make up the parent's size and height.
            sibling = self.slots + _SLOTS * (n - 1)
            sibling[_EXACT_SIZE] = ps - size
            sibling[_EXACT_HEIGHT] = ph - 1 if height == ph - 2 else -1
        for i in range(n, self.n):                      # the right child, then the left one
            self.slots[_SLOTS * i + _PARENT_HEIGHT] = height
            self.slots[_SLOTS * i + _PARENT_SIZE] = size
            self.slots[_SLOTS * i + _SIDE] = 1 if i == n else 0
            self.slots[_SLOTS * i + _EXACT_SIZE] = -1
            self.slots[_SLOTS * i + _EXACT_HEIGHT] = -1
        return 0


cdef inline int _compare(bytes a, bytes b) noexcept:
    """Byte-string order, as bytes' own comparison, without its Python-level dispatch."""
    cdef Py_ssize_t na = PyBytes_GET_SIZE(a), nb = PyBytes_GET_SIZE(b)
    cdef int c = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), na if na < nb else nb)
    if c:
        return c
    return (na > nb) - (na < nb)


cdef object _first_record(db, bint reverse):
    for record in db.iterate(None, None, reverse):
        return record
    return None


# Tokens (random) of the imports running in this process: a store opened meanwhile hides their versions
# instead of removing them.
cdef set _RUNNING_IMPORTS = set()


cdef bytes _process_start(long pid):
    """The start time of process pid (field 22 of /proc/<pid>/stat, in clock ticks since boot), b"gone" if it does
    not exist: with the id, what names one process, whose id another may get later. b"?" without /proc."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return b"gone"
    except OSError:
        return b"?"
    fields = stat[stat.rfind(b")") + 2:].split()        # after the command name, which may hold spaces
    return fields[19] if len(fields) > 19 else b"?"


@cython.final
cdef class NodeDB:
    """Go iavl's node database over ``db`` (an mpt node store: MemoryDB, LMDBStore, LevelDBStore).

    Reading needs ``get``; saving ``write_batch`` (put); the latest version, the legacy versions, pruning and
    the fast-storage upgrade need ``iterate`` and ``delete`` too (:class:`mpt.db.OrderedNodeDatabase`).
    """

    def __init__(self, db, *, fast_cache_size=FAST_CACHE_SIZE):
        if type(fast_cache_size) is not int:
            raise TypeError("fast_cache_size must be an int, not %s" % type(fast_cache_size).__name__)
        if fast_cache_size < 0:
            raise ValueError("fast_cache_size must be >= 0, not %d" % fast_cache_size)
        self.db = db
        self.fast_cache_size = fast_cache_size
        self._fast_cache = {}
        self._cache_newest = 0
        self._dict = None
        self._read_failure = None
        if type(db) is MemoryDB and type((<object>db).records) is dict:
            # The dict itself (MemoryDB.records), read with PyDict_GetItemWithError: no call per node read.
            # Holding it also keeps write_nodes from handing the store another dict under us (it adopts a
            # committer's dict only into a MemoryDB that alone holds its own).
            self._dict = (<object>db).records
            self._get = self._dict.get
        else:
            # A store may offer its backend's own get for readers like this one, which call it per node with no
            # Python frame in between, and translate its failures with the store's read_failure (LevelDBStore).
            unchecked = getattr(db, "unchecked_get", None)
            self._get = db.get if unchecked is None else unchecked
            self._read_failure = getattr(db, "read_failure", None)
        # LMDBStore and LevelDBStore keep their open state in a StoreState (mpt/db/state.pxd): one C field read
        # per call, where a Python attribute lookup (db.closed) would cost more than a cached read.
        self._state = (<object>db).state if isinstance(db, PersistentStore) else None
        self._latest = -1
        self._legacy_latest = 0
        if self._dict is not None and not self._dict:
            # An empty MemoryDB holds no legacy version, and only a legacy save of this NodeDB makes one (it resets
            # the cache): no scan of the whole dict when a prune first asks (Go's is one seek).
            self._legacy_latest = -1
        self.check_open()
        raw = self._read_key(STORAGE_VERSION_KEY)
        self.storage_version = DEFAULT_STORAGE_VERSION if raw is None else (<bytes>raw).decode("latin-1")
        self._ours = False
        self._hidden_import = None
        marker = self._read_key(IMPORT_MARKER_KEY)
        if marker is not None:
            self._interrupted_import(marker)

    # ------------------------------------------------------------------------------------------ whose store

    def check_ours(self, str doing):
        """Raise ForeignStoreError, before anything is written, unless the store is empty or an IAVL tree's.

        Run before the first write of a load (the fast-index rebuild), a save, a prune or an import; a few seeks,
        once per NodeDB: the first and the last key must have IAVL's prefixes (``f m n o r s``) and the store
        must hold an IAVL version (the root record of the latest ``s`` version, or a legacy ``r`` root) or its
        storage version record. An Ethereum trie, a Cosmos multistore opened without a module prefix or another
        program's keys fail it; deletes then check each record too (``is_iavl_record``)."""
        cdef object first, last
        if self._ours:
            return
        self.check_open()
        if self._hidden_import is not None:
            raise StoreError("cannot %s: %s" % (doing, self._hidden_import))
        first = _first_record(self.db, False)
        if first is None:
            self._ours = True
            return
        last = _first_record(self.db, True)
        for k, v in (first, last):
            if not (PyBytes_GET_SIZE(k) and k[0] in b"fmnors"):
                raise foreign_store_error(self.db, k, doing)
        if not self._holds_a_version():
            raise foreign_store_error(self.db, first[0], doing)
        self._ours = True

    cdef bint _holds_a_version(self) except -1:
        cdef bytes k
        raw = self._read_key(STORAGE_VERSION_KEY)
        if raw is not None and _is_storage_version(raw):
            return True
        k = self._last_key(S, S + b"\xff" * 9, 0)
        if k is not None and PyBytes_GET_SIZE(k) == 1 + NODE_KEY_SIZE:
            # The last node key's version must have its root record (the latest version is never pruned).
            root = self._read_key(_node_record_key(_key_version(k), 1))
            if root is not None and is_iavl_record(_node_record_key(1, 1), root):
                return True
        for k, v in self.db.iterate(*prefix_range(R), reverse=True):
            return is_iavl_record(k, v)
        return False

    # ------------------------------------------------------------------------------------------ imports

    cdef int _interrupted_import(self, bytes marker) except -1:
        """An import marker at open: the import that wrote it was killed (or is still running). Remove what it
        wrote, unless the store is read-only or the import may still run: in this process (its token is among
        the running ones), or in another process where the store can be shared between processes (LMDB) and
        that process is alive (the same process id and start time). Then hide it: no version of it is visible,
        and writes are refused."""
        # The marker: format, version, the writer's process id, its start time and the import's token.
        parts = marker.split(b" ")
        pid = int(parts[2]) if len(parts) == 5 and parts[2].isdigit() else 0
        if getattr(self.db, "readonly", False):
            self._hidden_import = ("an import into the store %r was interrupted; open it writable once to remove "
                                   "what it wrote" % (self.db,))
        elif pid == os.getpid() and parts[4] in _RUNNING_IMPORTS:
            self._hidden_import = "an import into the store %r is running in this process" % (self.db,)
        elif pid and pid != os.getpid() and getattr(self.db, "shared_between_processes", False) and \
                parts[3] == _process_start(pid):
            self._hidden_import = ("an import into the store %r is running in process %d (if none is, "
                                   "MutableTree(store).ndb.remove_import() removes what it wrote)" % (self.db, pid))
        else:
            self._hidden_import = None
            self.remove_import()
        return 0

    def start_import(self, batch, str fmt, int64_t version):
        """Put the import marker into batch (the import's first write); returns the import's token, which
        finish_import takes when it ends, whatever the outcome."""
        self.check_ours("import")
        token = os.urandom(6).hex().encode()
        _RUNNING_IMPORTS.add(token)
        batch.put(IMPORT_MARKER_KEY, b"%s %d %d %s %s" % (fmt.encode(), version, os.getpid(),
                                                          _process_start(os.getpid()), token))
        return token

    @staticmethod
    def finish_import(token):
        """The import of token (start_import) is over: a marker of it that is left means it was interrupted."""
        _RUNNING_IMPORTS.discard(token)

    def remove_import(self):
        """Delete every record an unfinished import wrote, then its marker; returns how many. An import starts
        only on an empty store, so every node, fast node and root record there is the import's; each is checked
        to decode as one all the same (is_iavl_record), and a record that does not stops the removal with
        ForeignStoreError. Runs in batches of REMOVE_BATCH_SIZE and deletes the marker last, so a removal that
        is itself killed resumes at the next open."""
        cdef Py_ssize_t removed = 0
        cdef list chunk
        cdef bytes prefix
        self.check_open()
        for prefix in (F, N, R, S):
            while True:
                chunk = []
                for k, v in self.db.iterate(*prefix_range(prefix)):
                    if not is_iavl_record(k, v):
                        raise foreign_store_error(self.db, k, "remove an interrupted import")
                    chunk.append(k)
                    if len(chunk) >= REMOVE_BATCH_SIZE:
                        break
                if not chunk:
                    break
                with self.db.write_batch() as batch:
                    for k in chunk:
                        batch.delete(k)
                removed += len(chunk)
        with self.db.write_batch() as batch:
            batch.delete(IMPORT_MARKER_KEY)
        self._hidden_import = None
        self._latest = -1
        self._legacy_latest = 0
        self.clear_fast_cache()
        return removed

    # ------------------------------------------------------------------------------------------ nodes

    cdef Node get_node(self, bytes ref):
        """The node a reference names: a 12-byte NodeKey (v1) or a 32-byte hash (legacy)."""
        cdef bytes data
        cdef Node node
        cdef const uint8_t *k
        cdef Py_ssize_t n = PyBytes_GET_SIZE(ref)
        self.check_open()
        if n == NODE_KEY_SIZE:
            k = <const uint8_t *>PyBytes_AS_STRING(ref)
            data = self._read_key(_prefixed(b"s", ref))
            if data is None and read_be32(k + 8) == 1:
                # A root that pruning moved to (version, 0) (nodedb.go GetNode). The node keeps the key it was
                # asked for, (version, 1), as Go's MakeNode(nk, buf) does: a parent saved later references it so,
                # and this fallback finds it again.
                data = self._read_key(_node_record_key(<int64_t>read_be64(k), 0))
            if data is None:
                raise MissingNodeError(ref, message="missing IAVL node s%s (version %d, nonce %d)"
                                       % (ref.hex(), <int64_t>read_be64(k), read_be32(k + 8)))
            try:
                node = c_decode_node(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), FORMAT_V1,
                                     <int64_t>read_be64(k), read_be32(k + 8), True)
            except NodeDecodeError as e:
                raise CorruptTreeError("corrupt IAVL node s%s (version %d, nonce %d): %s"
                                       % (ref.hex(), <int64_t>read_be64(k), read_be32(k + 8), e)) from None
        elif n == HASH_SIZE:
            data = self._read_key(N + ref)
            if data is None:
                raise MissingNodeError(ref, message="missing IAVL node n%s (legacy hash)" % ref.hex())
            try:
                node = c_decode_node(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), FORMAT_LEGACY,
                                     0, 0, False)
            except NodeDecodeError as e:
                raise CorruptTreeError("corrupt IAVL node n%s (legacy): %s" % (ref.hex(), e)) from None
            node.cached_hash = ref        # the key it is stored under (Go: node.hash = nk)
        else:
            raise CorruptTreeError("corrupt IAVL store: a child reference of %d bytes (%s), neither a NodeKey nor "
                                   "a hash" % (n, ref.hex()))
        node.persisted = True
        return node

    cdef Node load_child(self, InnerNode inner, bint right):
        """A child of a saved inner node that is not in memory yet: read from the store, checked against its parent
        (and against its sibling, if that is in memory), and kept in the parent, where the next walk finds it."""
        cdef bytes ref
        cdef Node child, sibling
        if right:
            ref = inner.right_ref if inner.right_ref is not None else inner.right_child_hash
        else:
            ref = inner.left_ref if inner.left_ref is not None else inner.left_child_hash
        child = self.get_node(ref)
        check_child(inner, child, right)
        sibling = inner.left_node if right else inner.right_node
        if sibling is not None:
            check_children(inner, sibling if right else child, child if right else sibling)
        if right:
            inner.right_node = child
        else:
            inner.left_node = child
        return child

    cdef Node load_root(self, int64_t version, bint *found):
        """The root of a saved version (None for an empty one); found[0] is False if there is no such version."""
        cdef bytes key = _node_record_key(version, 1)
        cdef bytes data
        cdef Node node
        cdef Py_ssize_t n
        self.check_open()
        data = self._read_key(key)
        found[0] = True
        if data is not None:
            n = PyBytes_GET_SIZE(data)
            if n == 0:
                return None
            if (<const uint8_t *>PyBytes_AS_STRING(data))[0] == b"s"[0]:
                # An unchanged root: the key of the node the version reuses (nodedb.go GetRoot). 9 bytes is the
                # pre-lazy-pruning form (prefix + version), meaning that version's root.
                if n == 1 + NODE_KEY_SIZE:
                    return self.get_node(data[1:])
                if n == 9:
                    return self.get_node(data[1:] + b"\x00\x00\x00\x01")
                raise CorruptTreeError("corrupt IAVL root record %s of version %d: %s is no node reference"
                                       % (key.hex(), version, data.hex()))
            try:
                node = c_decode_node(<const uint8_t *>PyBytes_AS_STRING(data), n, FORMAT_V1, version, 1, True)
            except NodeDecodeError as e:
                raise CorruptTreeError("corrupt IAVL root node %s (version %d, nonce 1): %s"
                                       % (key.hex(), version, e)) from None
            node.persisted = True
            return node
        data = self._read_key(_legacy_root_key(version))
        if data is not None:
            if PyBytes_GET_SIZE(data) == 0:
                return None
            return self.get_node(data)
        found[0] = False
        return None

    def root_ref(self, int64_t version):
        """Go's GetRoot: the reference of version's root (a NodeKey or legacy hash), b"" for an empty tree;
        VersionError if the version does not exist."""
        cdef bytes key = make_node_key(version, 1)
        self.check_open()
        data = self._read_key(S + key)
        if data is None:
            data = self._read_key(_legacy_root_key(version))
            if data is None:
                raise VersionError("version %d does not exist" % version)
            return data
        if len(data) == 0:
            return b""
        if data[:1] == S:
            if len(data) == 1 + NODE_KEY_SIZE:
                if self._read_key(data) is None:
                    moved = data[1:9] + b"\x00\x00\x00\x00"
                    if self._read_key(S + moved) is None:
                        raise VersionError("version %d does not exist" % version)
                    return moved
                return data[1:]
            if len(data) == 9:
                return data[1:] + b"\x00\x00\x00\x01"
            raise CorruptTreeError("corrupt IAVL root record s%s of version %d: %s is no node reference"
                                   % (key.hex(), version, data.hex()))
        return key

    def node(self, ref):
        """The node a reference (12-byte NodeKey or 32-byte legacy hash) names, as stored."""
        return self.get_node(bytes(ref))

    # ------------------------------------------------------------------------------------------ versions

    cdef int64_t c_latest_version(self) except -2:
        cdef bytes k
        self.check_open()
        if self._latest >= 0:
            return self._latest
        self._latest = 0
        if self._hidden_import is not None:
            return 0            # an unfinished import: none of its versions is visible
        k = self._last_key(S + make_node_key(1, 0)[:8], S + make_node_key(MAX_VERSION, 0)[:8], 0)
        if k is not None and PyBytes_GET_SIZE(k) >= 9:
            self._latest = <int64_t>read_be64(<const uint8_t *>PyBytes_AS_STRING(k) + 1)
        if self._latest == 0:
            self._latest = max(self.legacy_latest_version(), 0)
        return self._latest

    def latest_version(self):
        """The latest saved version (0 if none): the version of the last ``s`` key, else of the last ``r`` key."""
        return self.c_latest_version()

    def forget_latest_version(self):
        """Drop the cached latest (and latest legacy) version: the next lookup scans the store. An import this
        NodeDB hid is looked at again: finished (its marker gone) it shows, abandoned it is removed."""
        self._latest = -1
        self._legacy_latest = 0
        if self._hidden_import is not None:
            marker = self._read_key(IMPORT_MARKER_KEY)
            if marker is None:
                self._hidden_import = None
            else:
                self._interrupted_import(marker)

    def set_latest_version(self, int64_t version):
        """The latest version is ``version``, which someone else wrote (an import): the latest legacy version is
        looked up again when asked (a legacy import writes an ``r`` root record)."""
        self._latest = version
        self._legacy_latest = 0

    def legacy_latest_version(self):
        """The latest legacy (``r``) version, -1 if there is none."""
        self.check_open()
        if self._legacy_latest == 0:
            self._legacy_latest = -1
            if self._hidden_import is not None:
                return -1
            k = self._last_key(R, b"s", 9)
            if k is not None:
                self._legacy_latest = int.from_bytes(k[1:], "big")
        return self._legacy_latest

    cdef object _last_key(self, bytes lo, bytes hi, Py_ssize_t length):
        """The greatest key in [lo, hi) (of exactly length bytes, if length), or None: a reverse seek on an
        ordered store; on a MemoryDB a scan of its dict in C, where its iterate would sort the keys in Python
        after every write (most of a prune's time went there)."""
        cdef PyObject *key
        cdef PyObject *value
        cdef Py_ssize_t pos = 0, n
        cdef bytes best = None, k
        if self._dict is None:
            for k, _ in self.db.iterate(lo, hi, True):
                if length == 0 or PyBytes_GET_SIZE(k) == length:
                    return k
            return None
        while PyDict_Next(self._dict, &pos, &key, &value):
            if not PyBytes_CheckExact(<object>key):
                continue
            k = <bytes>key
            n = PyBytes_GET_SIZE(k)
            if (length and n != length) or _compare(k, lo) < 0 or _compare(k, hi) >= 0:
                continue
            if best is None or _compare(k, best) > 0:
                best = k
        return best

    def legacy_versions(self):
        self.check_open()
        return [int.from_bytes(k[1:], "big") for k, _ in self.db.iterate(*prefix_range(R)) if len(k) == 9]

    def has_version(self, int64_t version):
        self.check_open()
        return self._read_key(_node_record_key(version, 1)) is not None

    def first_version(self):
        """The first v1 version still stored (Go's getFirstVersion: a binary search over the root records,
        which are contiguous from the first to the latest version); 0 if none."""
        cdef int64_t lo = max(self.legacy_latest_version(), 0) + 1
        cdef int64_t hi = self.c_latest_version()
        cdef int64_t mid
        if hi < lo:
            return 0
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)     # (lo + hi) >> 1 overflows int64 above 2**62 (a damaged key)
            if self.has_version(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo if self.has_version(lo) else 0

    def available_versions(self):
        """The saved versions, ascending: the legacy ``r`` versions, then the first v1 version to the latest."""
        cdef list out = self.legacy_versions()
        first = self.first_version()
        if first:
            out.extend(range(first, self.c_latest_version() + 1))
        return out

    # ------------------------------------------------------------------------------------------ fast nodes

    def fast_storage_enabled(self):
        """Whether the fast index (``f`` keys) is on and matches the latest version (Go: upgraded to fast storage
        and no forced re-upgrade pending)."""
        parts = self.storage_version.split("-")
        if self.storage_version < FAST_STORAGE_VERSION:
            return False
        return len(parts) != 2 or parts[1] == str(self.c_latest_version())

    cdef tuple get_fast_node(self, bytes key):
        """(value, versionLastUpdatedAt) of key's fast node, or None."""
        self.check_open()
        data = self._read_key(F + key)
        if data is None:
            return None
        return _decode_fast_node(key, data)

    cdef bytes fast_value(self, bytes key, int64_t *version):
        """key's fast node value from the store (None if it has none), its versionLastUpdatedAt in version[0]."""
        cdef object data
        self.check_open()
        data = self._read_key(_prefixed(b"f", key))
        if data is None:
            return None
        return _fast_node_value(key, data, version)

    cdef int cache_fast_value(self, bytes key, bytes value, int64_t version) except -1:
        """Cache key's fast node (Go's fastNodeCache.Add), last updated at ``version``."""
        cdef dict cache = self._fast_cache
        if self.fast_cache_size == 0:
            return 0
        if len(cache) >= self.fast_cache_size and key not in cache:
            self._evict_oldest()
        cache[key] = value
        if version > self._cache_newest:
            self._cache_newest = version
        return 0

    cdef int _evict_oldest(self) except -1:
        """Drop the older half of the cache, in insertion order (hits do not reorder: a move per get would cost
        more than the misses it saves). Halving keeps eviction O(1) per insertion on a plain dict, whose
        insertion costs a third of an OrderedDict's; popping its oldest entry one by one would rescan."""
        cdef dict cache = self._fast_cache
        cdef list kept = list(cache.items())[(len(cache) + 1) // 2:]
        cache.clear()
        cache.update(kept)
        return 0

    def cached_fast_nodes(self):
        """How many decoded fast nodes the cache holds (at most fast_cache_size)."""
        return len(self._fast_cache)

    def clear_fast_cache(self):
        """Forget the cached fast nodes (trees do when they load a version; call it after another program changed
        the store's fast nodes)."""
        self._fast_cache.clear()
        self._cache_newest = 0

    cdef object _read_key(self, bytes key):
        """The store's value under key, or None: every read of a record goes through here."""
        cdef PyObject *found
        if self._dict is not None:
            found = PyDict_GetItemWithError(self._dict, key)
            return None if found == NULL else <object>found
        try:
            return self._get(key)
        except Exception as e:
            if self._read_failure is not None:
                failure = self._read_failure(e)
                if failure is not None:
                    raise failure from None
            raise

    def fast_node(self, key):
        return self.get_fast_node(bytes(key))

    def next_storage_version(self, int64_t latest):
        """Go's SetFastStorageVersionToBatch: ``<1.1.0 or the stored base>-<latest>``."""
        if self.storage_version >= FAST_STORAGE_VERSION:
            parts = self.storage_version.split("-")
            if len(parts) > 2:
                raise CorruptTreeError("fast storage version must be in the format <storage version>-<latest fast "
                                       "cache version>, not %r" % self.storage_version)
            base = parts[0]
        else:
            base = FAST_STORAGE_VERSION
        return "%s-%d" % (base, latest)

    def write_storage_version(self, batch, int64_t latest):
        value = self.next_storage_version(latest)
        batch.put(STORAGE_VERSION_KEY, value.encode())
        self.storage_version = value

    def fast_upgrade_pending(self, int64_t latest):
        """Whether opening version ``latest`` rebuilds the fast index (Go's isUpgradeable: not upgraded to fast
        storage yet, or upgraded at another latest version)."""
        parts = self.storage_version.split("-")
        return self.storage_version < FAST_STORAGE_VERSION or (len(parts) == 2 and parts[1] != str(latest))

    def upgrade_fast_storage(self, items, int64_t version):
        """Go's enableFastStorageAndCommitIfNotEnabled: drop every fast node, write one per (key, value) of items
        at ``version``, record the storage version; one batch. Returns whether it wrote anything."""
        self.check_open()
        if self._hidden_import is not None or not self.fast_upgrade_pending(self.c_latest_version()):
            return False            # nothing to rebuild, or a store an import is writing (it writes the index)
        latest = self.c_latest_version()
        self.check_ours("rebuild the fast index")
        stale = []
        for k, v in self.db.iterate(*prefix_range(F)):
            if not is_iavl_record(k, v):        # checked before anything is deleted
                raise foreign_store_error(self.db, k, "rebuild the fast index")
            stale.append(k)
        self.clear_fast_cache()
        with self.db.write_batch() as batch:
            for k in stale:
                batch.delete(k)
            for k, v in items:
                batch.put(F + k, encode_fast_node(version, v))
            self.write_storage_version(batch, latest)
        return True

    # ------------------------------------------------------------------------------------------ saving

    cdef int write_version(self, int64_t version, Node root, list new_nodes, bint legacy, dict fast_additions,
                           set fast_removals, bint fast_storage) except -1:
        """Go's SaveVersion, the writing half, atomically: the fast nodes the version set and removed, the
        storage version, the version's new nodes (numbered and hashed by the tree) and its root record.

        A MemoryDB takes the records straight into its dict, where nothing between the first and the last
        insertion can fail; other stores get them in one write batch, through its put called from this C loop
        (a LevelDB batch's own plyvel put: a Python frame per record cost more than LevelDB's write of it). No
        tuple or list entry per record either: the garbage collector tracks tuples and walked 30,000 of them
        over and over while a 10,000-key version was saved."""
        cdef bint direct = self._dict is not None
        cdef list deletes = []
        cdef bytes k
        cdef _RecordWriter out
        self.check_open()
        self.check_ours("save version %d" % version)
        # Raises on a malformed stored version: before anything is written.
        cdef str storage_version = self.next_storage_version(version) if fast_storage else None
        if fast_storage:
            for k in fast_removals:
                deletes.append(_prefixed(b"f", k))
        if direct:
            out = _RecordWriter.new(self._dict, None)
            self._write_records(out, version, root, new_nodes, legacy, fast_additions, storage_version)
            for k in deletes:
                self._dict.pop(k, None)
            self.db.keys_changed()          # MemoryDB's sorted key list for iterate(): stale now
        else:
            with self.db.write_batch() as batch:
                for k in deletes:
                    batch.delete(k)
                put = getattr(batch, "bytes_put", None)
                out = _RecordWriter.new(None, batch.put if put is None else put)
                self._write_records(out, version, root, new_nodes, legacy, fast_additions, storage_version)
        if fast_storage:
            self.storage_version = storage_version
            # After the write, so a failed one leaves the cache as the store is. Go's saveFastNodeUnlocked
            # caches each fast node it saves.
            cache = self._fast_cache
            for k in fast_removals:
                cache.pop(k, None)
            for k, v in fast_additions.items():
                self.cache_fast_value(k, v, version)
        self._latest = version
        if legacy:
            self._legacy_latest = 0     # a new legacy version: look the latest one up again when asked
        return 0

    cdef int _write_records(self, _RecordWriter out, int64_t version, Node root, list new_nodes, bint legacy,
                            dict fast_additions, str storage_version) except -1:
        """The records of a saved version, into out: fast nodes and the storage version (storage_version None:
        no fast storage), the new nodes, the root record."""
        cdef Node node
        cdef bytes k, v
        if storage_version is not None:
            for k, v in fast_additions.items():
                out.emit(_prefixed(b"f", k), _fast_node_bytes(version, v))
            out.emit(STORAGE_VERSION_KEY, storage_version.encode())
        if root is None:
            out.emit(_legacy_root_key(version) if legacy else _node_record_key(version, 1), b"")
        elif not new_nodes:
            # Nothing changed: a reference to the root the version reuses (SaveRoot).
            if not legacy:
                self._put_root_reference(out, version, root)
            else:
                out.emit(_legacy_root_key(version), root.c_hash())
        elif legacy:
            for node in new_nodes:
                out.emit(N + node.cached_hash, node.c_to_bytes(FORMAT_LEGACY))
            out.emit(_legacy_root_key(version), root.cached_hash)
        else:
            for node in new_nodes:
                out.emit(_node_record_key(node.version, node.nonce), node.c_to_bytes(FORMAT_V1))
        return 0

    cdef int _put_root_reference(self, _RecordWriter out, int64_t version, Node root) except -1:
        """The root record of a v1 version that reuses ``root`` (Go's SaveRoot): ``b"s"`` + the root's node key.

        A root at nonce 0 is a legacy node (read by hash); Go names it (version, 0). (A root that pruning moved to
        (version, 0) keeps the key (version, 1) it was read by, as in Go, and is referenced so.) A legacy root the
        first v1 version reuses is written there in the v1 format (Go's SaveVersion: "update the legacy node to
        the new format"), its children still referenced by hash."""
        cdef bytes key
        cdef InnerNode inner
        if root.nonce != 0:
            out.emit(_node_record_key(version, 1), S + root.node_key_bytes())
            return 0
        key = _node_record_key(root.version, 0)
        out.emit(_node_record_key(version, 1), key)
        if self._read_key(key) is None:
            if root.height != 0:
                inner = <InnerNode>root
                if inner.left_ref is None:
                    inner.left_ref = inner.left_child_hash
                if inner.right_ref is None:
                    inner.right_ref = inner.right_child_hash
            out.emit(key, root.c_to_bytes(FORMAT_V1))
        return 0

    # ------------------------------------------------------------------------------------------ pruning

    cdef bytes record(self, bytes key):
        """The stored record under a node's record key (s + node key, or n + hash); a root that pruning moved from
        (version, 1) to (version, 0) is found there, as get_node finds it. MissingNodeError if there is none.
        While a prune runs, from its record cache first (nothing is written before its walks end)."""
        cdef PyObject *hit
        cdef dict now = self._prune_records
        cdef dict before = self._prune_records_before
        if now is not None and before is not None:
            hit = PyDict_GetItemWithError(now, key)
            if hit != NULL:
                return <bytes>hit
            hit = PyDict_GetItemWithError(before, key)
            if hit != NULL:
                now[key] = <bytes>hit
                return <bytes>hit
        data = self._read_key(key)
        if data is None and PyBytes_GET_SIZE(key) == 1 + NODE_KEY_SIZE and \
                read_be32(<const uint8_t *>PyBytes_AS_STRING(key) + 9) == 1:
            data = self._read_key(_node_record_key(_key_version(key), 0))
        if data is None:
            raise MissingNodeError(key[1:], message="missing IAVL node %s" % show_key(key))
        if now is not None and before is not None:
            if len(now) >= self._prune_cache_limit:
                # Full: what was not read again since the last turn goes, what was stays (moved on a hit above).
                self._prune_records_before = now
                now = self._prune_records = {}
            now[key] = data
        return data

    cdef int _prune_scan(self, int64_t version) except -1:
        """Put the node records of version (s + version + any nonce) into the prune's record cache, read in one
        ordered scan of the store, as many as the cache's newer generation has room for. Step v of a prune walks
        the nodes that version v + 1 wrote (they are its tree's new nodes, each read for its children), and a
        LevelDB scan hands over a record in about a third of the time of a read by key; a record of that range
        the walk does not reach (it stops once the previous version's walk is done) only costs its share of the
        scan. Only on the persistent stores (LMDB, LevelDB), whose iterate is a seek and a sequential read: a
        MemoryDB's sorts its keys, and another store's may cost anything."""
        cdef dict now = self._prune_records
        cdef Py_ssize_t room
        if now is None or self._state is None:
            return 0
        room = self._prune_cache_limit - len(now)
        if room <= 0:
            return 0
        for k, value in self.db.iterate(_node_record_key(version, 0), _node_record_key(version + 1, 0)):
            if type(value) is not bytes:
                value = bytes(value)
            now[k] = value
            room -= 1
            if room == 0:
                break
        return 0

    cdef list _orphan_keys(self, int64_t prev_version, bytes prev_ref, bytes cur_ref):
        """Go's traverseOrphans: the record keys of the nodes of prev_version's tree (root prev_ref) that the next
        version's tree (root cur_ref) no longer holds. Both trees are walked in pre-order; the current walk stops
        at each node of prev_version or older (shared with the previous tree: not even read) and the previous walk
        skips that subtree. Only the nodes the walks go through are read, each for its children's keys alone."""
        cdef _Walk cur = _Walk(), prev = _Walk()
        cdef bytes org = None, k
        cdef list out = []
        if cur_ref:
            cur.push_root(_record_key(cur_ref))
        if prev_ref:
            prev.push_root(_record_key(prev_ref))
        while not prev.empty():
            while org is None and not cur.empty():
                k = cur.pop()
                if _key_version(k) <= prev_version:
                    # Shared with the previous tree: read and checked all the same, so that a damaged reference
                    # stops the prune instead of making every node of the previous walk an orphan.
                    cur.expand(self, k, False)
                    org = k
                else:
                    cur.expand(self, k, True)
            k = prev.pop()
            if org is not None and (k == org or self._maybe_same(k, org) and self._same_by_hash(k, org)):
                org = None
            else:
                out.append(k)
                prev.expand(self, k, True)
        return out

    cdef bint _maybe_same(self, bytes a, bytes b) except -1:
        """Whether two different record keys may hold the same node: a legacy node and its v1 rewrite, or a root
        under (version, 1) and under (version, 0), where pruning moved it. Go compares the walks' nodes by hash;
        any other two keys are two nodes."""
        cdef const uint8_t *p
        cdef const uint8_t *q
        if PyBytes_GET_SIZE(a) != PyBytes_GET_SIZE(b):
            return True
        if PyBytes_GET_SIZE(a) != 1 + NODE_KEY_SIZE or _key_version(a) != _key_version(b):
            return False
        p = <const uint8_t *>PyBytes_AS_STRING(a)
        q = <const uint8_t *>PyBytes_AS_STRING(b)
        return read_be32(p + 9) + read_be32(q + 9) == 1

    cdef bint _same_by_hash(self, bytes a, bytes b) except -1:
        return _same_node(self.get_node(a[1:]), self.get_node(b[1:]))

    def _ref_or_none(self, int64_t version):
        try:
            return self.root_ref(version)
        except VersionError:
            return None

    def delete_versions_to(self, int64_t to_version):
        """Go's DeleteVersionsTo (synchronous pruning): delete versions first..to_version, in one batch.

        Per version v (deleteVersion): the nodes of v that v + 1 no longer references are deleted; nodes that later
        versions still reference stay under their original node key; v's root record goes; a root that v + 1
        reuses moves to (v, 0). The latest version cannot be deleted. Returns the number of deleted keys.

        A store that still holds legacy versions (iavl v0.x: ``r`` roots, ``n`` nodes, ``o`` orphans) loses them
        all at once, as in Go: nothing happens while to_version is below the latest legacy version; from there
        on the legacy versions go first (deleteLegacyVersions), then the v1 versions up to to_version.
        """
        cdef int64_t legacy = self.legacy_latest_version()
        cdef int64_t latest, first
        self.check_open()
        self.check_ours("prune versions up to %d" % to_version)
        if legacy > to_version:
            return 0            # Go: the legacy versions are deleted at once, later
        latest = self.c_latest_version()
        if latest <= to_version:
            raise VersionError("latest version %d is less than or equal to toVersion %d" % (latest, to_version))
        first = self.first_version()
        cdef Py_ssize_t deleted = 0
        refs = {}

        def ref_of(int64_t version):
            if version not in refs:
                refs[version] = self._ref_or_none(version)
            return refs[version]

        # The walk collects the deletes (and the few moved roots) first and applies them at the end, all or
        # nothing: straight into a MemoryDB's dict from C (nothing can fail between the first and the last
        # change), or in one write batch through its C-level delete where the store has one (LevelDB: plyvel's
        # own). A Python call per deleted key cost a third of a prune.
        cdef list dels = []
        cdef list moved = []            # (key, value): roots moved to (version, 0)
        if self._dict is None and PRUNE_CACHED_RECORDS > 0:
            # Step v walks version v + 1's new nodes, step v + 1 walks version v + 1 again, and the nodes above the
            # changes are checked at every step that passes them: a prune reads many records more than once. They
            # are kept, as Go's node cache keeps them. (A MemoryDB's dict answers as fast as a cache would.)
            self._prune_cache_limit = PRUNE_CACHED_RECORDS
            self._prune_records = {}
            self._prune_records_before = {}
        try:
            deleted += self._collect_prune(dels, moved, legacy, first, to_version, ref_of)
        finally:
            self._prune_records = self._prune_records_before = None
        # Moved roots first, then the deletes: a key is put (a root moved to (v, 0) at step v) before any later
        # step deletes it, never after, so this order ends where the walk's order would.
        self._apply_prune(dels, moved)
        if legacy > 0:
            self._legacy_latest = -1
        return deleted

    cdef Py_ssize_t _collect_prune(self, list dels, list moved, int64_t legacy, int64_t first, int64_t to_version,
                                   object ref_of) except -1:
        """delete_versions_to's walk: the keys to delete into dels, the moved roots into moved, nothing written.
        Returns how many keys go."""
        cdef Py_ssize_t deleted = 0
        cdef int64_t v, version
        cdef bytes k, legacy_key
        cdef uint32_t nonce
        cdef Node root
        if legacy > 0:
            deleted += self._delete_legacy_versions(dels, legacy)
        for v in range(first if first else to_version + 1, to_version + 1):
            root_ref = ref_of(v)
            if root_ref:
                next_ref = ref_of(v + 1)
                if next_ref is not None:
                    self._prune_scan(v + 1)
                    for k in self._orphan_keys(v, root_ref, next_ref):
                        if PyBytes_GET_SIZE(k) != 1 + NODE_KEY_SIZE:
                            dels.append(k)              # a legacy node, n + hash
                        else:
                            version = _key_version(k)
                            nonce = read_be32(<const uint8_t *>PyBytes_AS_STRING(k) + 9)
                            if nonce == 0:
                                legacy_key = N + self.get_node(k[1:]).c_hash()
                                if self._read_key(legacy_key) is not None:
                                    # A legacy root that a v1 version reused, rewritten at (version, 0): its
                                    # legacy record goes too (Go: "it can be a legacy root").
                                    dels.append(legacy_key)
                                    deleted += 1
                            if nonce == 1 and version < v:
                                # A root moved to (version, 0) by an earlier step.
                                dels.append(_node_record_key(version, 0))
                            else:
                                dels.append(k)
                        deleted += 1
            literal = make_node_key(v, 1)
            if root_ref is None or root_ref != literal:
                dels.append(S + literal)
                deleted += 1
            if ref_of(v + 1) == literal:
                # v + 1 reuses v's root: the root record goes, the node moves to (v, 0).
                root = self.get_node(literal)
                dels.append(S + literal)
                root.nonce = 0
                moved.append((_node_record_key(v, 0), root.c_to_bytes(FORMAT_V1)))
                deleted += 1
        return deleted

    cdef int _apply_prune(self, list dels, list moved) except -1:
        cdef dict data = self._dict
        cdef bytes k
        if data is not None:
            for k, value in moved:
                data[k] = value
            for k in dels:
                data.pop(k, None)
            self.db.keys_changed()
            return 0
        with self.db.write_batch() as batch:
            for k, value in moved:
                batch.put(k, value)
            delete = getattr(batch, "bytes_delete", None)
            if delete is None:
                delete = batch.delete
            for k in dels:
                delete(k)
        return 0

    def _delete_legacy_versions(self, list dels, int64_t legacy):
        """Go's deleteLegacyVersions(legacyLatestVersion): the keys to delete appended to dels; returns how many.

        1. The legacy nodes of the latest legacy version that the first v1 version no longer references (its
           orphans were never recorded: v1 writes no ``o`` records).
        2. Every ``o`` orphan record (``o`` + toVersion + fromVersion + hash, the hash as value), and the node it
           names when fromVersion <= legacy and toVersion < legacy (orphaned before the latest legacy version),
           or fromVersion > legacy. Any other node an orphan record names stays.
        3. Every ``r`` root record.

        If the version after the latest legacy one does not exist, Go logs the error and deletes nothing of the
        legacy versions; so does this (the v1 versions are pruned all the same)."""
        cdef int64_t to, frm
        cdef Node orphan
        cdef bytes k, value
        cdef int deleted = 0
        next_ref = self._ref_or_none(legacy + 1)
        if next_ref is None:
            return 0
        for k in self._orphan_keys(legacy, self.root_ref(legacy), next_ref):
            dels.append(k)          # the latest legacy version's nodes: n + hash
            deleted += 1
        for k, value in list(self.db.iterate(*prefix_range(LEGACY_ORPHAN_PREFIX))):
            if not is_iavl_record(k, value):
                raise foreign_store_error(self.db, k, "delete the legacy orphan records")
            dels.append(k)
            deleted += 1
            to = <int64_t>read_be64(<const uint8_t *>PyBytes_AS_STRING(k) + 1)
            frm = <int64_t>read_be64(<const uint8_t *>PyBytes_AS_STRING(k) + 9)
            if (frm <= legacy and to < legacy) or frm > legacy:
                dels.append(N + value)
                deleted += 1
        for k, value in list(self.db.iterate(*prefix_range(R))):
            if not is_iavl_record(k, value):
                raise foreign_store_error(self.db, k, "delete the legacy root records")
            dels.append(k)
            deleted += 1
        return deleted
