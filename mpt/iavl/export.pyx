# cython: language_level=3
"""IAVL export and import, the state-sync path (cosmos/iavl export.go and import.go, v1).

Export: ``MutableTree.export(version)`` walks a saved version depth-first in post-order, left subtree first
(Go's ``traversePost``), one :class:`ExportNode` per node: ``key``, ``value`` (None for inner nodes),
``version`` (the version in the node's node key) and ``height``. Leaves therefore come in ascending key order and
every inner node right after its right subtree; its key is the smallest key of that subtree.

Import: ``MutableTree.import_nodes(nodes, version)`` rebuilds the tree from such a stream into an empty tree with
Go's stack machine (an inner node joins the last two subtrees on the stack) and Go's node keys: the n-th node of
version v in stream order gets NodeKey (v, n + 1), and the root is renumbered to (root version, 1), so nonce 1
stays the root's. When the root is older than the import version, the import version's root key refers to it,
as ``Importer.Commit`` writes it. As in Go, a node is written once its parent joins it, in batches of 10,000
nodes, so an import holds the stack of open subtrees in memory, not the tree; the root and the version's root
record come last, so the version is not visible before the whole stream checked out. An import needs an empty
store. Unlike Go, whose Close leaves the flushed batches behind (and a killed import a phantom version that no
load can open), it is all or nothing as a user sees it: a stream that fails deletes what was written of it, and
an import killed part-way left mpt's import marker, so the next open of the store removes what it wrote (see
``NodeDB.remove_import``); a new import then works.

Go's importer checks little (a node's version against the import version, children lower than their parent,
one subtree left at the end); a stream it accepts may still build a tree whose lookups fail. This one refuses
everything no real tree exports, with an ExportImportError naming the node's position in the stream: leaf keys
that do not strictly ascend (duplicates included), an inner node whose key is not the smallest key of its right
subtree, heights that break the AVL shape (a height-h node joins subtrees of heights h-1 and h-1 or h-2), an
inner node older than one of its children or placed before them, subtrees left over at the end, versions
below 1 or above the import version, inner nodes with a value and leaves without one.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp

from mpt.core.bytes_like cimport as_bytes, as_bytes_or_none
from mpt.core.prefetch cimport prefetch_line
from mpt.iavl.node cimport (
    FORMAT_LEGACY,
    FORMAT_V1,
    MAX_HEIGHT,
    InnerNode,
    LeafNode,
    Node,
    compare_keys,
    int_in_range,
)
from mpt.iavl.nodedb cimport NodeDB, describe, is_iavl_record, show_key

from operator import index as _index

from mpt.errors import CorruptTreeError, ExportImportError, VersionError
from mpt.iavl.nodedb import IMPORT_MARKER_KEY as _IMPORT_MARKER_KEY
from mpt.iavl.nodedb import STORAGE_VERSION_KEY as _STORAGE_VERSION_KEY
from mpt.iavl.nodedb import encode_fast_node, foreign_store_error, legacy_root_key, root_key

cdef int64_t MAX_VERSION = 0x7FFFFFFFFFFFFFFF


@cython.final
@cython.no_gc              # only bytes fields: no cycles to find, and the cyclic GC need not track 200K of them
@cython.freelist(64)
cdef class ExportNode:
    """One node of an export stream (Go's ``ExportNode``): ``ExportNode(key, value, version, height)``.

    ``value`` is None for an inner node (height > 0) and bytes (maybe empty) for a leaf; ``version`` is the
    version that wrote the node (the one in its node key); ``height`` is 0 for leaves, at most 127. Immutable,
    compared and hashed by its four fields.
    """

    def __init__(self, key, value, version, height):
        cdef object v, h
        if self.key is not None:
            raise TypeError("ExportNode objects are immutable")
        v = int_in_range(version, "version", 0, MAX_VERSION, "an ExportNode version must be in 0..2**63-1, got %d",
                         ExportImportError)
        h = int_in_range(height, "height", 0, MAX_HEIGHT, "an ExportNode height must be in 0..127, got %d",
                         ExportImportError)
        self.key = as_bytes(key, "key")
        self.value = as_bytes_or_none(value, "value")
        self.version = v
        self.height = h

    @staticmethod
    cdef ExportNode new(bytes key, bytes value, int64_t version, int height):
        cdef ExportNode n = ExportNode.__new__(ExportNode)
        n.key = key
        n.value = value
        n.version = version
        n.height = height
        return n

    def __repr__(self):
        return "ExportNode(key=%r, value=%r, version=%d, height=%d)" % (self.key, self.value, self.version,
                                                                          self.height)

    def __eq__(self, other):
        if type(other) is not ExportNode:
            return NotImplemented
        cdef ExportNode o = <ExportNode>other
        return (self.key == o.key and self.value == o.value and self.version == o.version
                and self.height == o.height)

    def __hash__(self):
        return hash((self.key, self.value, self.version, self.height))

    def __reduce__(self):
        return ExportNode, (self.key, self.value, self.version, self.height)


@cython.final
cdef class Exporter:
    """The nodes of one saved version in Go's exporter order (an iterator; made by ``MutableTree.export``).

    It holds that version's root, whose nodes a saved tree never changes: changing or saving the tree while
    exporting does not change what is exported.
    """

    def __init__(self, tree, Node root, version):
        self._ndb = tree.ndb
        self.version = version
        self._path = []
        if root is not None:
            self._path.append(root)
            self._state[0] = 0

    def __iter__(self):
        return self

    cdef Node _child(self, InnerNode node, bint right):
        cdef Node child = node.right_node if right else node.left_node
        if child is None:
            # Not in memory yet: loaded, checked and kept on the saved node (which is still unchanged), as the
            # tree's own walks load it.
            child = self._ndb.load_child(node, right)
        if child.height >= node.height:
            # The tree checks what it loads; a child it holds in memory gets the same check here, so no store
            # (a node naming itself or an ancestor as a child) can send the walk in circles.
            raise CorruptTreeError("%s has a child of height %d: heights must fall towards the leaves" % (
                describe(node), child.height))
        return child

    def __next__(self):
        cdef Py_ssize_t top
        cdef Node node
        cdef uint8_t state
        self._ndb.check_open()
        while True:
            top = len(self._path) - 1
            if top < 0:
                raise StopIteration
            node = <Node>self._path[top]
            state = self._state[top]
            if node.height == 0 or state == 2:
                self._path.pop()
                return ExportNode.new(node.key, node.leaf_value, node.version, node.height)
            if state == 0:
                # A walk of a large tree waits on memory: ask for both children and this node's key (read when
                # the node is emitted, after its subtrees) now, so the misses overlap.
                prefetch_line(<void *>(<InnerNode>node).left_node)
                prefetch_line(<void *>(<InnerNode>node).right_node)
                prefetch_line(<void *>node.key)
            self._state[top] = state + 1
            self._path.append(self._child(<InnerNode>node, state == 1))
            self._state[top + 1] = 0


cdef struct _VersionCount:
    int64_t version         # 0: an empty slot (node versions start at 1)
    uint32_t count


cdef class _NonceCounter:
    """Nodes seen per version (Go's importer ``nonces``): an open-addressing table of int64 -> uint32, so the
    count of a node costs no Python int (versions of a real chain are far above the small-int cache)."""
    cdef _VersionCount *slots
    cdef Py_ssize_t mask, used

    def __cinit__(self):
        self.slots = <_VersionCount *>PyMem_Calloc(16, sizeof(_VersionCount))
        if self.slots == NULL:
            raise MemoryError()
        self.mask = 15

    def __dealloc__(self):
        PyMem_Free(self.slots)

    cdef int64_t next(self, int64_t version) except -1:
        """Count one more node of version; returns the new count."""
        cdef Py_ssize_t i = <Py_ssize_t>((<uint64_t>version * 0x9E3779B97F4A7C15ULL) >> 32) & self.mask
        while self.slots[i].version != 0 and self.slots[i].version != version:
            i = (i + 1) & self.mask
        if self.slots[i].version == 0:
            if 2 * (self.used + 1) > self.mask + 1:
                self._grow()
                return self.next(version)
            self.slots[i].version = version
            self.used += 1
        self.slots[i].count += 1
        return self.slots[i].count

    cdef int _grow(self) except -1:
        cdef _VersionCount *old = self.slots
        cdef Py_ssize_t n = self.mask + 1, i, j
        cdef _VersionCount *new = <_VersionCount *>PyMem_Calloc(2 * n, sizeof(_VersionCount))
        if new == NULL:
            raise MemoryError()
        self.slots = new
        self.mask = 2 * n - 1
        for i in range(n):
            if old[i].version != 0:
                j = <Py_ssize_t>((<uint64_t>old[i].version * 0x9E3779B97F4A7C15ULL) >> 32) & self.mask
                while new[j].version != 0:
                    j = (j + 1) & self.mask
                new[j] = old[i]
        PyMem_Free(old)
        return 0


cdef inline Py_ssize_t _position_error(Py_ssize_t position, ExportNode en, str problem) except -1:
    raise ExportImportError("export stream node %d (key %s, height %d, version %d): %s" % (
        position, en.key.hex(), en.height, en.version, problem))


IMPORT_BATCH_SIZE = 10000
"""Nodes per write batch of an import (Go's importer maxBatchSize)."""


@cython.final
cdef class _ImportWriter:
    """The writing half of an import, as Go's Importer: each node is written once its parent joins it (the root
    at the end), in batches of IMPORT_BATCH_SIZE nodes, so memory holds the stack and one batch, not the tree.
    The version becomes visible only with the last batch (the root record).

    An import starts only on an empty store (its storage version record aside), so everything it finds there
    later is its own. The first of several batches also writes mpt's import marker, and the last deletes it
    with the root record: a stream that fails is removed by ``discard``, and an import killed part-way is
    removed by the next open of the store (NodeDB.remove_import), where Go leaves a phantom version behind.

    With fast storage the fast nodes (``f`` + key at the import version) and the storage version go in the same
    batches: what Go's LoadVersion after Commit writes (enableFastStorageAndCommitIfNotEnabled), without a
    second walk over the stored tree."""
    cdef object db
    cdef NodeDB ndb
    cdef bint legacy
    cdef bint fast                  # fast nodes are written with the leaves
    cdef int64_t version
    cdef dict pending               # key -> value of the current batch (a dict: no GC-tracked tuple per record)
    cdef Py_ssize_t nodes           # nodes in it
    cdef bint marked                # a batch with the import marker has been written
    cdef bytes token                # the import's token in the marker (NodeDB.start_import)

    def __init__(self, tree, bint legacy, int64_t version):
        self.db = tree.db
        self.ndb = <NodeDB>tree.ndb
        self.legacy = legacy
        self.version = version
        self.pending = {}
        self.nodes = 0
        self.marked = False
        self.token = None
        self.ndb.check_ours("import")
        _check_empty(self.db)
        self.fast = (tree.fast_storage and not getattr(self.db, "readonly", False)
                     and self.ndb.fast_upgrade_pending(version))

    cdef int add(self, Node node, bint may_flush=True) except -1:
        if self.legacy:
            self.pending[b"n" + node.c_hash()] = node.c_to_bytes(FORMAT_LEGACY)
        else:
            self.pending[b"s" + node.node_key_bytes()] = node.c_to_bytes(FORMAT_V1)
        if self.fast and node.height == 0:
            self.pending[b"f" + node.key] = encode_fast_node(self.version, node.leaf_value)
        node.persisted = True
        self.nodes += 1
        if may_flush and self.nodes >= IMPORT_BATCH_SIZE:
            self.flush(False)
        return 0

    cdef int flush(self, bint last) except -1:
        with self.db.write_batch() as batch:
            if not last and not self.marked:
                self.token = self.ndb.start_import(batch, "legacy" if self.legacy else "v1", self.version)
            _put_all(batch, self.pending)
            if last and self.marked:
                batch.delete(_IMPORT_MARKER_KEY)
        if not last:
            self.marked = True
        self.pending = {}
        self.nodes = 0
        return 0

    cdef int commit(self, Node root) except -1:
        """The last batch: the remaining nodes, the root and the version's root record (Go's Commit), the fast
        storage version, and the marker's removal."""
        cdef str storage_version = None
        if root is not None:
            self.add(root, False)       # in the last batch, with the root record
        if self.legacy:
            self.pending[legacy_root_key(self.version)] = b"" if root is None else root.c_hash()
        elif root is None:
            self.pending[root_key(self.version)] = b""
        elif root.version != self.version:
            # The root is older than the version: the version's root record refers to it.
            self.pending[root_key(self.version)] = b"s" + root.node_key_bytes()
        if self.fast:
            storage_version = self.ndb.next_storage_version(self.version)
            self.pending[_STORAGE_VERSION_KEY] = storage_version.encode()
        self.flush(True)
        if storage_version is not None:
            self.ndb.storage_version = storage_version
        return 0

    def discard(self):
        """Delete what earlier batches wrote (nothing of a failed batch landed)."""
        if self.marked:
            self.ndb.remove_import()

    def finish(self):
        if self.token is not None:
            NodeDB.finish_import(self.token)


cdef int _check_empty(db) except -1:
    """An import needs an empty store: one seek (two when the storage version record, which a load of an empty
    tree writes, comes first)."""
    for k, v in db.iterate(None, None, False):
        if k == _STORAGE_VERSION_KEY:
            for k, v in db.iterate(k + b"\x00", None, False):
                break
            else:
                return 0
        if not is_iavl_record(k, v):
            raise foreign_store_error(db, k, "import")
        raise ExportImportError("import needs an empty store (as Go's Import needs an empty tree): the store %r "
                                "holds IAVL records already (key %s)" % (db, show_key(k)))
    return 0


cdef int _put_all(batch, dict records) except -1:
    put_many = getattr(batch, "put_many", None)
    if put_many is not None:        # MemoryDB: one C-level dict update; LevelDB: plyvel's put bound once
        put_many(records)
    else:
        put = batch.put
        for k, v in records.items():
            put(k, v)
    return 0


cdef Node import_tree(object tree, object nodes, object version, bint legacy):
    """Write ``nodes`` (ExportNodes in exporter order) into the store of ``tree`` (empty) as saved version
    ``version``, and return the root (None for an empty stream).

    Called by ``MutableTree.import_nodes`` (``legacy``: the tree stores the legacy format), which then opens the
    version. A stream that fails (a malformed node, an error raised by the iterator, a failed write) deletes what
    was written of it and re-raises.
    """
    cdef object v_obj = _index(version)
    cdef _ImportWriter writer
    if not 1 <= v_obj <= MAX_VERSION:
        raise VersionError("IAVL versions run from 1 to 2**63-1, not %d" % v_obj)
    if tree.latest_version > 0 or tree.version != 0 or len(tree) != 0:
        raise ExportImportError("import needs an empty tree (as Go's Import): this one has version %d saved%s" % (
            tree.latest_version, "" if len(tree) == 0 else " and %d keys in its working tree" % len(tree)))
    writer = _ImportWriter(tree, legacy, v_obj)
    try:
        root = _build(writer, nodes, v_obj)
        writer.commit(root)
    except BaseException:
        try:
            writer.discard()
        except Exception:       # a closed or failing store: the import's own error is the one to see (the marker
            pass                # stays, and the next open of the store removes the rest)
        raise
    finally:
        writer.finish()
    return root


cdef Node _build(_ImportWriter writer, nodes, int64_t v):
    """Go's Importer.Add over the stream, with the checks of the module docstring: the root (None for an empty
    stream), renumbered to nonce 1; every other node handed to the writer when its parent joins it."""
    cdef list stack = []            # the subtrees built so far, waiting for their parent
    cdef list lows = []             # the smallest key of each of them
    cdef _NonceCounter nonces = _NonceCounter()     # per version: nodes of that version seen so far
    cdef int64_t count
    cdef bytes last_leaf = None
    cdef bytes low
    cdef Py_ssize_t position = -1, n
    cdef ExportNode en
    cdef Node node, left, right
    cdef InnerNode inner
    cdef int lh, rh, h
    cdef bint legacy = writer.legacy
    for item in nodes:
        position += 1
        if type(item) is not ExportNode:
            raise TypeError("import_nodes takes ExportNode objects; node %d is a %s" % (position,
                                                                                       type(item).__name__))
        en = <ExportNode>item
        if en.version < 1:
            _position_error(position, en, "versions start at 1")
        if en.version > v:
            _position_error(position, en, "a node version above the import version %d" % v)
        h = en.height
        if h == 0:
            if en.value is None:
                _position_error(position, en, "a leaf (height 0) without a value")
            if last_leaf is not None and compare_keys(en.key, last_leaf) <= 0:
                _position_error(position, en, ("a duplicate key" if en.key == last_leaf else
                                               "leaf keys must ascend, and %s came before it" % last_leaf.hex()))
            node = LeafNode.new(en.key, en.value, en.version)
            last_leaf = low = en.key
        else:
            if en.value is not None:
                _position_error(position, en, "an inner node (height > 0) with a value")
            n = len(stack)
            if n < 2:
                _position_error(position, en, "an inner node before its two children (%d subtree%s to join)" % (
                    n, "" if n == 1 else "s"))
            left = <Node>stack[n - 2]
            right = <Node>stack[n - 1]
            lh = left.height
            rh = right.height
            if (lh if lh > rh else rh) != h - 1 or lh - rh > 1 or rh - lh > 1:
                _position_error(position, en, "heights that do not fit: an inner node of height %d joins subtrees "
                                "of heights h-1 and h-1 or h-2, not %d and %d" % (h, lh, rh))
            if en.version < left.version or en.version < right.version:
                # A parent is written whenever anything below it changes: never before its children. (Pruning
                # relies on it: a version's walk stops at the first node no newer than the version before.)
                _position_error(position, en, "an inner node older than its child (version %d)" % (
                    left.version if left.version > right.version else right.version))
            if en.key != <bytes>lows[n - 1]:
                _position_error(position, en, "an inner node's key must be the smallest key of its right "
                                "subtree, %s" % (<bytes>lows[n - 1]).hex())
            inner = InnerNode.new(en.key, h, left.size + right.size, en.version)
            # Legacy nodes are found by hash and carry no node key, as when read from the store.
            inner.left_ref = left.c_hash() if legacy else left.node_key_bytes()
            inner.right_ref = right.c_hash() if legacy else right.node_key_bytes()
            inner.left_child_hash = left.c_hash()
            inner.right_child_hash = right.c_hash()
            writer.add(left)
            writer.add(right)
            node = inner
            low = <bytes>lows[n - 2]
            del stack[n - 2:]
            del lows[n - 2:]
        # Go: nonces[version]++, nonce = nonces[version] + 1 (nonce 1 is kept for the root).
        count = nonces.next(en.version)
        if count >= <int64_t>0xFFFFFFFF:
            _position_error(position, en, "more nodes of one version than a uint32 nonce can number")
        if not legacy:
            node.nonce = <uint32_t>(count + 1)
        stack.append(node)
        lows.append(low)
    if len(stack) > 1:
        raise ExportImportError("export stream ends with %d subtrees that no inner node joins (leftover nodes; "
                                "a stream holds exactly one tree)" % len(stack))
    node = <Node>stack[0] if stack else None
    if node is not None and not legacy:
        node.nonce = 1
    return node
