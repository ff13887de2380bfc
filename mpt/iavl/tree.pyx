# cython: language_level=3
"""MutableTree: cosmos/iavl's versioned AVL+ tree (mutable_tree.go), with the same balancing, versions and node keys.

Shape and hashes follow iavl exactly:

* ``set`` splits a leaf into an inner node of height 1 whose key is the larger of the two keys, walks inner nodes
  left when ``key < node.key`` (else right), then recomputes height/size and rebalances with iavl's rotations
  (``balance``: left-left / left-right / right-right / right-left, ties going to the single rotation).
* ``remove`` replaces an inner node whose leaf child went by the other child and hands the new leftmost key up
  to the first ancestor that turned right, as iavl's ``recursiveRemove`` does.
* Every node created or touched while building version v carries version v (iavl clones them; here a node that
  is not in the database yet is changed in place, which gives the same tree with fewer allocations).
* ``save_version`` numbers the new nodes of version v with nonces 1, 2, ... in pre-order (the root is always
  (v, 1), iavl's ``GetRootKey``), hashes them bottom-up and writes them in one batch.

Storage is Go iavl's, record for record: the key layout, root records, fast nodes, metadata and pruning live in
the node database module (mpt.iavl.nodedb, Go's nodedb.go). v1 nodes (default) or legacy nodes
(``format="legacy"``, iavl v0.x) are written; both are read, and v1 nodes may reference legacy children by hash
(iavl's mode bits), so a store upgraded from v0.x keeps working.

With fast storage on (the default, as in a Cosmos node), every ``set`` and ``remove`` is remembered until
``save_version`` writes or deletes the key's fast node, and ``get`` reads the fast node first, as Go does.

A store that does not hold a tree (a child that names itself or an ancestor, heights that do not fall, sizes
that do not add up, a missing node) raises CorruptTreeError or MissingNodeError naming the node key; every
child read from the store must sit lower than its parent, so no walk can loop.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.string cimport memcmp

from mpt.core.bytes_like cimport as_bytes, as_bytes_or_none
from mpt.core.prefetch cimport prefetch_object
from mpt.iavl.export cimport Exporter, import_tree
from mpt.iavl.node cimport (
    FORMAT_LEGACY,
    FORMAT_V1,
    HASH_SIZE,
    InnerNode,
    LeafNode,
    Node,
    NodeFormat,
    compare_keys,
    parse_format,
    sha256_into,
)
from mpt.iavl.nodedb cimport NodeDB, describe

from mpt.iavl.nodedb import FAST_CACHE_SIZE

import warnings

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.db.memory import MemoryDB, check_database
from mpt.errors import CorruptTreeError, VersionError


cdef bytes _empty_hash():
    cdef uint8_t out[HASH_SIZE]
    sha256_into(<const uint8_t *>b"", 0, out)
    return (<char *>out)[:HASH_SIZE]


EMPTY_ROOT = _empty_hash()
"""sha256 of nothing: the hash of an empty tree (iavl's ``Hash()`` of a nil root)."""


# EMPTY_ROOT is every family's name for the empty tree's root; the old name stays for one release.
__getattr__ = _renamed_attributes(__name__, {
    "EMPTY_HASH": ("mpt.iavl.tree.EMPTY_HASH is deprecated; use mpt.iavl.EMPTY_ROOT", lambda: EMPTY_ROOT),
})


# No balanced tree of at most 2**63 leaves is deeper than 1.44 * 63 levels (an AVL bound); a store claiming more is
# corrupt, and set's path array stops there.
cdef enum:
    MAX_TREE_DEPTH = 128


cdef inline int _height(Node n) noexcept:
    return n.height


@cython.final
cdef class MutableTree:
    """A versioned IAVL tree over a node database (MemoryDB by default, mpt.db.LMDBStore, mpt.db.LevelDBStore).

    ``MutableTree(db=None, *, format="v1", fast_storage=True, fast_cache_size=100000)``: ``format`` is how new
    nodes are stored, ``"v1"`` (iavl >= 1.0) or ``"legacy"`` (iavl v0.x); both are read. ``fast_storage=False`` is
    Go's ``skipFastStorageUpgrade``: no fast nodes are written or read. ``fast_cache_size`` bounds the decoded
    fast nodes kept in memory (Go's ``fastNodeCacheSize``; 0 turns the cache off). Call ``load()`` or
    ``load_version(n)`` to open saved versions. ``db`` is any mpt node store; saving, pruning and ``load()`` need
    one with ``delete`` and ``iterate`` (MemoryDB, LMDBStore, LevelDBStore).
    """

    cdef:
        readonly object db
        readonly NodeDB ndb
        Node root
        readonly int64_t version            # the last saved or loaded version (0: none)
        NodeFormat storage
        uint32_t _nonce                     # nonce counter of the version being saved
        list _new_nodes
        bytes _rm_value                     # _remove's results (value removed, new leftmost key)
        bytes _rm_newkey
        bint _rm_found
        Node _saved_root                    # root of `version` as saved/loaded (rollback goes back to it)
        readonly bint fast_storage
        bint _fast_reads                    # the store's fast index is on and current: get may read it
        dict _fast_additions                # key -> value set since the last save (Go: unsavedFastNodeAdditions)
        set _fast_removals                  # keys removed since the last save (unsavedFastNodeRemovals)

    def __init__(self, db=None, *, format="v1", fast_storage=True, fast_cache_size=FAST_CACHE_SIZE):
        self.db = MemoryDB() if db is None else check_database(db)
        self.ndb = NodeDB(self.db, fast_cache_size=fast_cache_size)
        self.storage = <NodeFormat>parse_format(format)
        if self.storage != FORMAT_V1 and self.storage != FORMAT_LEGACY:
            raise ValueError("a tree stores nodes as 'v1' or 'legacy'")
        self.root = None
        self.version = 0
        self.fast_storage = bool(fast_storage)
        self._fast_additions = {}
        self._fast_removals = set()
        self._fast_reads = False

    # ------------------------------------------------------------------------------------------ loading

    cdef inline Node _left(self, Node node):
        # node is an inner node (height > 0): every caller checks, so the cast is unchecked.
        if (<InnerNode>node).left_node is None:
            self.ndb.load_child(<InnerNode>node, False)
        return (<InnerNode>node).left_node

    cdef inline Node _right(self, Node node):
        if (<InnerNode>node).right_node is None:
            self.ndb.load_child(<InnerNode>node, True)
        return (<InnerNode>node).right_node

    cdef Node _load_root(self, int64_t version, bint *found):
        return self.ndb.load_root(version, found)

    cdef int _opened(self, Node root, int64_t version) except -1:
        """Make root (of saved version `version`) the working tree; rebuild the fast index as Go's LoadVersion
        does (enableFastStorageAndCommitIfNotEnabled), unless the store is read-only or `version` is not the
        latest.

        Go rebuilds the index from whatever version is loaded and stamps it as the latest, so after loading an
        old version the index, and every later get through it, answers that old version's values. Here only
        the latest version rebuilds it: an older one leaves a stale index to the next open of the latest, and
        reads through its tree meanwhile (the index is not current, so get does not use it)."""
        self.root = root
        self._saved_root = root
        self.version = version
        self._fast_additions = {}
        self._fast_removals = set()
        # Another tree may have written the store since this one cached its fast nodes.
        self.ndb.clear_fast_cache()
        if (self.fast_storage and not getattr(self.db, "readonly", False)
                and version == self.ndb.c_latest_version()):
            self.ndb.upgrade_fast_storage(self.items(), version)
        self._fast_reads = self.fast_storage and self.ndb.fast_storage_enabled()
        return 0

    def load_version(self, version):
        """Make saved version ``version`` the working tree; changes build version + 1. Returns the version."""
        cdef bint found
        cdef int64_t v
        if not 1 <= version < 2**63:
            raise VersionError("IAVL versions run from 1 to 2**63-1, not %d" % version)
        v = version
        root = self._load_root(v, &found)
        if not found:
            raise VersionError("version %d does not exist" % v)
        self._opened(root, v)
        return v

    def load(self):
        """Load the latest saved version (0 and an empty tree when nothing was saved). Returns the version.

        The latest version is looked up in the store again (Go keeps the one its nodedb saw first), so a tree
        reloads what another tree on the same store saved since."""
        self.ndb.forget_latest_version()
        latest = self.ndb.c_latest_version()
        if latest == 0:
            self._opened(None, 0)
            return 0
        return self.load_version(latest)

    def version_exists(self, version):
        cdef bint found
        if not 1 <= version < 2**63:      # not a version iavl can store
            return False
        self._load_root(version, &found)
        return found

    def available_versions(self):
        """The saved versions in the database, ascending (iavl's AvailableVersions)."""
        return self.ndb.available_versions()

    def delete_versions_to(self, to_version):
        """Delete the saved versions up to and including ``to_version`` (iavl's DeleteVersionsTo): their root
        records and the nodes no later version references; nodes still in use stay under their original node
        key. Deleting the latest version is refused (VersionError). Legacy (iavl v0.x) versions are deleted all at
        once, as in Go, when to_version reaches the latest of them. Returns the number of keys deleted."""
        if not 1 <= to_version < 2**63:
            raise VersionError("IAVL versions run from 1 to 2**63-1, not %d" % to_version)
        return self.ndb.delete_versions_to(to_version)

    def rollback(self):
        """Discard the unsaved changes: the working tree goes back to the last saved or loaded version
        (iavl's Rollback; an empty tree before any)."""
        self.root = self._saved_root
        self._new_nodes = None
        self._fast_additions = {}
        self._fast_removals = set()

    @property
    def latest_version(self):
        """The latest saved version in the database (0 if none)."""
        return self.ndb.c_latest_version()

    # ------------------------------------------------------------------------------------------ reading

    cdef Node _leaf_for(self, Node node, bytes k):
        """The leaf where a search for k ends below node (None for an empty tree)."""
        if node is None:
            return None
        while node.height != 0:
            if compare_keys(k, node.key) < 0:
                node = self._left(node)
            else:
                node = self._right(node)
        return node

    # A method descriptor, not a bound Cython function: the interpreter calls it directly (about 100 machine
    # instructions less per call, a sixth of a fast-index get). The clinic-style signature keeps inspect working.
    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def get(self, key, default=None):
        """The value at key in the working tree, or default (through the fast index first, as Go's Get)."""
        cdef bytes k = as_bytes(key, "key")
        cdef Node node
        cdef bytes value
        cdef int64_t updated_at
        self.ndb.check_open()
        if self.root is None:
            return default
        if self.fast_storage:
            if self._fast_additions:
                value = self._fast_additions.get(k)
                if value is not None:
                    return value
            if self._fast_removals and k in self._fast_removals:
                return default
            if self._fast_reads:
                value = self.ndb.cached_value(k, self.version)
                if value is not None:
                    return value
                value = self.ndb.fast_value(k, &updated_at)
                if value is None:
                    # The fast index is the latest version's state: absent there, absent in the tree.
                    if self.version == self.ndb.known_latest_version():
                        return default
                elif updated_at <= self.version:
                    self.ndb.cache_fast_value(k, value, updated_at)
                    return value
        node = self._leaf_for(self.root, k)
        if node is not None and compare_keys(k, node.key) == 0:
            return node.leaf_value
        return default

    def get_versioned(self, key, version, default=None):
        """The value at key in saved version ``version`` (iavl's GetVersioned): default if the key is absent
        there or the version does not exist."""
        cdef bytes k = as_bytes(key, "key")
        cdef bint found
        cdef Node node
        cdef int64_t v
        cdef tuple fast
        if version <= 0 or version >= 2**63:       # not a version iavl can store: nothing there
            return default
        v = version
        root = self._load_root(v, &found)
        if not found:
            return default
        if self._fast_reads:
            fast = self.ndb.get_fast_node(k)
            if fast is None:
                if v == self.ndb.c_latest_version():
                    return default
            elif <int64_t>fast[1] <= v:
                return fast[0]
        node = self._leaf_for(root, k)
        if node is not None and compare_keys(k, node.key) == 0:
            return node.leaf_value
        return default

    def get_with_index(self, key):
        """(index, value) like iavl's GetWithIndex: index is key's position in key order (where it would be
        inserted if absent), value None when key is absent."""
        cdef bytes k = as_bytes(key, "key")
        cdef Node node = self.root
        cdef Node right
        cdef int64_t index = 0
        cdef int c
        self.ndb.check_open()
        if node is None:
            return 0, None
        while node.height != 0:
            if compare_keys(k, node.key) < 0:
                node = self._left(node)
            else:
                # Everything in the left subtree sorts before k.
                right = self._right(node)
                index += node.size - right.size
                node = right
        c = compare_keys(node.key, k)
        if c < 0:
            return index + 1, None
        if c > 0:
            return index, None
        return index, node.leaf_value

    def get_by_index(self, index):
        """(key, value) of the index-th key in key order (iavl's GetByIndex); (None, None) if out of range."""
        cdef int64_t i
        cdef Node node = self.root
        cdef Node left
        self.ndb.check_open()
        if node is None or index < 0 or index >= node.size:
            return None, None
        i = index
        while node.height != 0:
            left = self._left(node)
            if i < left.size:
                node = left
            else:
                i -= left.size
                node = self._right(node)
        return node.key, node.leaf_value

    def has(self, key):
        """iavl's Has: whether key is in the working tree (the same as ``key in tree``)."""
        return self.get(key) is not None

    def __contains__(self, key):
        return self.has(key)

    def __getitem__(self, key):
        """``tree[key]``: the value at key in the working tree; KeyError if it is absent."""
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        """``tree[key] = value``: :meth:`set`."""
        self.set(key, value)

    def __delitem__(self, key):
        """``del tree[key]``: :meth:`remove`; KeyError if key is absent."""
        if self.remove(key) is None:
            raise KeyError(key)

    def __len__(self):
        return 0 if self.root is None else self.root.size

    @property
    def size(self):
        """Number of keys in the working tree."""
        return 0 if self.root is None else self.root.size

    @property
    def height(self):
        return 0 if self.root is None else self.root.height

    @property
    def working_version(self):
        return self.version + 1

    def items(self, start=None, end=None, ascending=True):
        """(key, value) pairs from start (inclusive) to end (exclusive), like iavl's Iterator: in key order, or
        in reverse key order with ascending=False (the same range: end is still excluded, start included)."""
        cdef bytes lo = as_bytes_or_none(start, "start")
        cdef bytes hi = as_bytes_or_none(end, "end")
        cdef list stack = []
        cdef Node node = self.root
        cdef bint asc = ascending
        cdef bint go_left, go_right
        self.ndb.check_open()
        if node is None:
            return
        stack.append(node)
        while stack:
            self.ndb.check_open()       # also between the items of an iteration the store was closed in
            node = stack.pop()
            if node.height == 0:
                if (lo is None or compare_keys(node.key, lo) >= 0) and (hi is None or compare_keys(node.key, hi) < 0):
                    yield node.key, node.leaf_value
                continue
            # Left subtree holds keys < node.key, the right one keys >= node.key: skip what the range excludes.
            go_right = hi is None or compare_keys(node.key, hi) < 0
            go_left = lo is None or compare_keys(lo, node.key) < 0
            # The stack pops last-in first: push the side to visit second first.
            if asc:
                if go_right:
                    stack.append(self._right(node))
                if go_left:
                    stack.append(self._left(node))
            else:
                if go_left:
                    stack.append(self._left(node))
                if go_right:
                    stack.append(self._right(node))

    def iterate(self, start=None, end=None, ascending=True):
        """Deprecated second name of :meth:`items` (iavl's Iterator(start, end, ascending))."""
        warnings.warn("MutableTree.iterate is deprecated; use MutableTree.items", DeprecationWarning, stacklevel=2)
        return self.items(start, end, ascending)

    def keys(self, start=None, end=None, ascending=True):
        for k, _ in self.items(start, end, ascending):
            yield k

    def values(self, start=None, end=None, ascending=True):
        for _, v in self.items(start, end, ascending):
            yield v

    def __reversed__(self):
        return self.keys(ascending=False)

    def __iter__(self):
        return self.keys()

    # ------------------------------------------------------------------------------------------ writing

    cdef inline Node _mutable(self, Node node):
        """The node to change for the working version: a clone of a saved node, or the node itself if it is new."""
        cdef InnerNode copy
        if not node.persisted:
            if node.cached_hash is not None:
                # Hashed since its last change (hash() or a proof): forget the hashes. An unhashed node has none
                # (_hash_new and _assign set all three together), so building a tree skips three stores a level.
                node.cached_hash = None
                (<InnerNode>node).left_child_hash = None
                (<InnerNode>node).right_child_hash = None
            return node
        copy = InnerNode.new(node.key, node.height, node.size, self.version + 1)
        copy.left_node = self._left(node)
        copy.right_node = self._right(node)     # both children in hand: _right checked their heights and sizes
        return copy

    cdef inline void _update(self, Node node) noexcept:
        # calcHeightAndSize; both children are in memory for a node of the working version.
        cdef Node l = (<InnerNode>node).left_node, r = (<InnerNode>node).right_node
        node.height = (l.height if l.height > r.height else r.height) + 1
        node.size = l.size + r.size

    cdef Node _rotate(self, Node node, bint to_right):
        """iavl's rotateRight (to_right) or rotateLeft: the child on the other side becomes the subtree's root,
        and its inner grandchild moves across to node."""
        cdef Node pivot
        node = self._mutable(node)
        if to_right:
            pivot = self._mutable(self._left(node))
            (<InnerNode>node).left_node = self._right(pivot)
            (<InnerNode>pivot).right_node = node
        else:
            pivot = self._mutable(self._right(node))
            (<InnerNode>node).right_node = self._left(pivot)
            (<InnerNode>pivot).left_node = node
        self._update(node)
        self._update(pivot)
        return pivot

    cdef inline int _balance_of(self, Node node) except? -999:
        return self._left(node).height - self._right(node).height

    cdef Node _balance(self, Node node):
        cdef int b = (<InnerNode>node).left_node.height - (<InnerNode>node).right_node.height
        if b > 1:
            if self._balance_of((<InnerNode>node).left_node) >= 0:
                return self._rotate(node, True)
            (<InnerNode>node).left_node = self._rotate((<InnerNode>node).left_node, False)
            return self._rotate(node, True)
        if b < -1:
            if self._balance_of((<InnerNode>node).right_node) <= 0:
                return self._rotate(node, False)
            (<InnerNode>node).right_node = self._rotate((<InnerNode>node).right_node, True)
            return self._rotate(node, False)
        return node

    cdef Node _set_at_leaf(self, Node leaf, bytes key, bytes value, bint *updated):
        """What replaces the leaf a set ends at: a new leaf for the same key (an update), else an inner node of
        height 1 over both leaves whose key is the larger key (iavl's recursiveSet at a leaf)."""
        cdef int64_t wv = self.version + 1
        cdef int c = compare_keys(key, leaf.key)
        cdef InnerNode inner
        if c == 0:
            updated[0] = True
            return LeafNode.new(key, value, wv)
        if c < 0:
            inner = InnerNode.new(leaf.key, 1, 2, wv)
            inner.left_node = LeafNode.new(key, value, wv)
            inner.right_node = leaf
        else:
            inner = InnerNode.new(key, 1, 2, wv)
            inner.left_node = leaf
            inner.right_node = LeafNode.new(key, value, wv)
        return inner

    cdef int _set(self, bytes key, bytes value, bint *updated) except -1:
        """iavl's recursiveSet as a loop: down to the leaf making each node on the path mutable, the leaf
        replaced, then back up recomputing heights and sizes and rebalancing (not after an update, which
        changes no shape).

        A path runs through nodes of the working tree (not saved yet, changed in place) and then, from the first
        saved node on, through copies of saved nodes. The one link from the working tree into the copies (or the
        new root, when the root itself was saved) is made only once the leaf is reached, so a child that cannot
        be read raises with the tree as it was. The path is a C array of borrowed references: a working-tree
        node is held by its parent, a copy by the copy above it or by ``top_copy``."""
        cdef PyObject *path[MAX_TREE_DEPTH]
        cdef bint went_right[MAX_TREE_DEPTH]
        cdef int depth = 0, i
        cdef int boundary = -1              # depth of the working-tree node whose child is top_copy (-1: the root)
        cdef bint at_leaf
        cdef Node node = self.root, child, original, balanced, top_copy = None
        if node.height == 0:
            self.root = self._set_at_leaf(node, key, value, updated)
            return 0
        child = self._mutable(node)
        if child is not node:
            top_copy = child
        node = child
        while True:
            if depth == MAX_TREE_DEPTH:
                raise CorruptTreeError("IAVL tree deeper than %d levels below %s: no balanced tree of int64 "
                                       "size is" % (MAX_TREE_DEPTH, describe(self.root)))
            path[depth] = <PyObject *>node
            went_right[depth] = compare_keys(key, node.key) >= 0
            original = (<InnerNode>node).right_node if went_right[depth] else (<InnerNode>node).left_node
            at_leaf = original.height == 0
            child = self._set_at_leaf(original, key, value, updated) if at_leaf else self._mutable(original)
            if child is not original:
                if top_copy is None:
                    top_copy = child        # linked below, once nothing can fail any more
                    boundary = depth
                elif went_right[depth]:
                    (<InnerNode>node).right_node = child
                else:
                    (<InnerNode>node).left_node = child
            depth += 1
            if at_leaf:
                break
            node = child
        if top_copy is not None:
            if boundary < 0:
                self.root = top_copy
            elif went_right[boundary]:
                (<InnerNode>path[boundary]).right_node = top_copy
            else:
                (<InnerNode>path[boundary]).left_node = top_copy
        if updated[0]:
            return 0
        for i in range(depth - 1, -1, -1):
            node = <Node>path[i]
            self._update(node)
            balanced = self._balance(node)
            if balanced is not node:
                if i == 0:
                    self.root = balanced
                elif went_right[i - 1]:
                    (<InnerNode>path[i - 1]).right_node = balanced
                else:
                    (<InnerNode>path[i - 1]).left_node = balanced
        return 0

    def set(self, key, value):
        """Set key to value in the working tree. Returns True if the key existed (an update)."""
        cdef bint updated = False
        cdef bytes k = as_bytes(key, "key")
        cdef bytes v = as_bytes(value, "value")
        self.ndb.check_open()
        if self.fast_storage:
            self._fast_additions[k] = v
            if self._fast_removals:
                self._fast_removals.discard(k)
        if self.root is None:
            self.root = LeafNode.new(k, v, self.version + 1)
            return False
        self._set(k, v, &updated)
        return updated

    cdef Node _remove(self, Node node, bytes key):
        """iavl's recursiveRemove. Sets _rm_found/_rm_value, and _rm_newkey (the new leftmost key) on the way up."""
        cdef Node child
        if node.height == 0:
            if compare_keys(key, node.key) == 0:
                self._rm_found = True
                self._rm_value = node.leaf_value
                self._rm_newkey = None
                return None
            self._rm_found = False
            return node
        if compare_keys(key, node.key) < 0:
            child = self._remove(self._left(node), key)
            if not self._rm_found:
                return node
            if child is None:
                # The left leaf went: this subtree's leftmost key is now this node's key.
                self._rm_newkey = node.key
                return self._right(node)
            node = self._mutable(node)
            (<InnerNode>node).left_node = child
            self._right(node)
            self._update(node)
            return self._balance(node)
        child = self._remove(self._right(node), key)
        if not self._rm_found:
            return node
        if child is None:
            self._rm_newkey = None
            return self._left(node)
        node = self._mutable(node)
        (<InnerNode>node).right_node = child
        self._left(node)
        if self._rm_newkey is not None:
            node.key = self._rm_newkey
        self._rm_newkey = None
        self._update(node)
        return self._balance(node)

    def remove(self, key):
        """Remove key from the working tree. Returns the removed value, or None if the key was absent."""
        cdef bytes k = as_bytes(key, "key")
        cdef Node new_root
        self.ndb.check_open()
        if self.root is None:
            return None
        self._rm_found = False
        self._rm_value = None
        self._rm_newkey = None
        new_root = self._remove(self.root, k)
        if not self._rm_found:
            return None
        self.root = new_root
        if self.fast_storage:
            self._fast_additions.pop(k, None)
            self._fast_removals.add(k)
        value = self._rm_value
        self._rm_value = None
        return value

    # ------------------------------------------------------------------------------------------ hashing

    cdef bytes _hash_new(self, Node node):
        """Hash a subtree of the working tree (children first); saved nodes know their hash already."""
        if node.cached_hash is not None:
            return node.cached_hash
        if node.height != 0:
            (<InnerNode>node).left_child_hash = self._hash_new(self._left(node))
            (<InnerNode>node).right_child_hash = self._hash_new(self._right(node))
        return node.c_hash()

    def hash(self):
        """The root hash of the working tree (iavl's WorkingHash; the saved root right after save_version)."""
        self.ndb.check_open()
        if self.root is None:
            return EMPTY_ROOT
        return self._hash_new(self.root)

    def working_hash(self):
        return self.hash()

    cdef bytes _assign(self, Node node, int64_t version):
        """iavl's saveNewNodes: nonces in pre-order, hashes bottom-up; returns how a parent references node."""
        cdef InnerNode inner
        if node.persisted:
            if node.nonce != 0:
                return node.node_key_bytes()
            return node.c_hash()
        if self.storage == FORMAT_V1:
            self._nonce += 1
            node.nonce = self._nonce
        node.version = version
        if node.height != 0:
            inner = <InnerNode>node
            inner.left_ref = self._assign(inner.left_node, version)
            inner.right_ref = self._assign(inner.right_node, version)
            inner.left_child_hash = inner.left_node.c_hash()
            inner.right_child_hash = inner.right_node.c_hash()
        node.c_hash()
        self._new_nodes.append(node)
        if self.storage == FORMAT_V1:
            return node.node_key_bytes()
        return node.cached_hash

    def save_version(self):
        """Save the working tree as version + 1. Returns (root_hash, version).

        Saving a version that exists already is a no-op if the root hash is the same, and a VersionError if not
        (iavl's rule; it happens after load_version of an older version).
        """
        cdef int64_t v = self.version + 1
        cdef bint found
        cdef Node node
        cdef bytes root_hash
        existing = self._load_root(v, &found)
        if found:
            root_hash = self.hash()
            existing_hash = EMPTY_ROOT if existing is None else existing.c_hash()
            if existing_hash != root_hash:
                raise VersionError("version %d was already saved to a different hash %s" % (v, existing_hash.hex()))
            self.root = existing
            self._saved_root = existing
            self.version = v
            return root_hash, v
        self._nonce = 0
        self._new_nodes = []
        if self.root is not None and not self.root.persisted:
            self._assign(self.root, v)      # hashes the new nodes too: no separate hash() walk
        root_hash = EMPTY_ROOT if self.root is None else self.root.c_hash()
        self.ndb.write_version(v, self.root, self._new_nodes, self.storage == FORMAT_LEGACY, self._fast_additions,
                               self._fast_removals, self.fast_storage)
        self._fast_additions = {}
        self._fast_removals = set()
        self._fast_reads = self.fast_storage and self.ndb.fast_storage_enabled()
        for node in self._new_nodes:
            node.persisted = True
        self._new_nodes = None
        self._saved_root = self.root
        self.version = v
        return root_hash, v

    def __repr__(self):
        return "MutableTree(version=%d, size=%d, format=%r)" % (
            self.version, len(self), "v1" if self.storage == FORMAT_V1 else "legacy")

    # ---- ICS23 proofs: the tree's side (paths to leaves); mpt.iavl.proof builds the cosmos/ics23 messages

    cdef Node _proof_root(self, object version):
        """The root a proof is made in: the working tree (version None, like Go's MutableTree, whose proof
        methods are its working ImmutableTree's) with every hash computed, or saved version ``version``."""
        cdef bint found = False
        cdef int64_t v
        cdef Node root
        self.ndb.check_open()
        if version is None:
            if self.root is not None:
                self._hash_new(self.root)
            return self.root
        if type(version) is not int:
            raise TypeError("version must be an int or None, not %s" % type(version).__name__)
        if version <= 0 or version >= 2**63:
            raise VersionError("version %d does not exist" % version)
        v = version
        if v == self.version:
            return self._saved_root
        root = self._load_root(v, &found)
        if not found:
            raise VersionError("version %d does not exist" % v)
        return root

    def membership_proof(self, key, version=None):
        """An ICS23 CommitmentProof that key is in the working tree (version None) or saved version ``version``,
        byte for byte Go iavl's GetMembershipProof. ProofError if key is absent, VersionError if there is no
        such version."""
        return _proof_functions()[0](self, key, version)

    def non_membership_proof(self, key, version=None):
        """An ICS23 CommitmentProof that key is absent (Go iavl's GetNonMembershipProof): existence proofs of
        its neighbours. ProofError if key is present, VersionError if there is no such version."""
        return _proof_functions()[1](self, key, version)

    def path_to_leaf(self, key, version=None, index=None):
        """(nodes, rank): the nodes (InnerNode ..., LeafNode) from the root of the working tree (version None) or
        of saved version ``version`` down to a leaf; what :mod:`mpt.iavl.proof` builds ICS23 proofs from.

        The leaf is the one ``key`` leads to (iavl's PathToLeaf: key itself if present, else a neighbour of it)
        and rank is key's GetWithIndex index (its own, or that of the first key after it); with ``index`` the
        leaf is the index-th in key order (GetByIndex) and rank is index. ([], 0) for an empty tree.
        The child off the path is loaded only when its parent does not hold its hash (a node read from the v1
        format): a walk through a large tree is bound by cache misses, and the sibling is one more per level.
        """
        cdef bytes k = as_bytes(key, "key")
        cdef Node node = self._proof_root(version)
        cdef InnerNode inner
        cdef Node left
        cdef int64_t rank = 0, i = 0
        cdef bint by_index = index is not None
        cdef list nodes
        cdef Py_ssize_t depth = 0
        if node is None:
            return [], 0
        # Sized once for the deepest possible path (the root's height), cut to the real one at the end.
        nodes = [None] * (node.height + 1)
        if by_index:
            i = index
            if i < 0 or i >= node.size:
                raise IndexError("index %d out of range for a tree of %d keys" % (i, node.size))
            # rank adds up the left subtrees passed, as for a key: it ends at index.
        while node.height != 0:
            nodes[depth] = node
            depth += 1
            inner = <InnerNode>node
            # Ask for both children while the key compare waits for node.key: the next step's miss overlaps
            # (every line of an InnerNode or a 32-byte hash; None costs three useless prefetches of one line).
            prefetch_object(<PyObject *>inner.left_node)
            prefetch_object(<PyObject *>inner.right_node)
            if by_index:
                left = self._left(node)
                if i < left.size:
                    if inner.right_child_hash is None:
                        self._right(node)
                    prefetch_object(<PyObject *>inner.right_child_hash)
                    node = left
                    continue
                i -= left.size
            elif compare_keys(k, node.key) < 0:
                if inner.right_child_hash is None:
                    self._right(node)
                prefetch_object(<PyObject *>inner.right_child_hash)
                node = self._left(node)
                continue
            if inner.left_child_hash is None:
                self._left(node)
            prefetch_object(<PyObject *>inner.left_child_hash)
            node = self._right(node)
            rank += inner.size - node.size
        nodes[depth] = node
        del nodes[depth + 1:]
        if not by_index and compare_keys(node.key, k) < 0:
            rank += 1
        return nodes, rank

    # ---- export / import
    # The state-sync path (Go's export.go / import.go). The walk, the stream checks and the node keys live in
    # mpt/iavl/export.pyx; these methods are its only window on the tree's storage.

    def export(self, version=None):
        """The nodes of saved version ``version`` (default: the last saved or loaded one) in Go's exporter
        order, as :class:`~mpt.iavl.ExportNode` objects: depth-first post-order, left subtree first. An iterator;
        changing or saving the tree meanwhile does not change what it yields. VersionError if the version is
        not saved."""
        cdef bint found
        cdef int64_t v
        cdef Node root
        self.ndb.check_open()
        if version is None:
            if self.version == 0:
                raise VersionError("no saved version to export (save_version or load first)")
            v = self.version
        else:
            if not 1 <= version < 2**63:
                raise VersionError("IAVL versions run from 1 to 2**63-1, not %d" % version)
            v = version
        if v == self.version:
            root = self._saved_root
        else:
            root = self._load_root(v, &found)
            if not found:
                raise VersionError("version %d does not exist" % v)
        return Exporter(self, root, v)

    def import_nodes(self, nodes, version):
        """Rebuild this tree, which must be empty (no saved version, no keys), from ``nodes`` (ExportNodes in
        exporter order, e.g. another tree's ``export(version)``) and save it as ``version`` with Go's node keys,
        writing as it reads (batches of 10,000 nodes: memory holds the open subtrees, not the tree). Returns the
        root hash. A malformed stream raises ExportImportError, and what was written of it is deleted again."""
        root = import_tree(self, nodes, version, self.storage == FORMAT_LEGACY)
        # Open the version the import wrote (root: its root node, children in the store) as Go's LoadVersion after
        # Importer.Commit does.
        self.ndb.set_latest_version(version)
        self._new_nodes = None
        self._opened(root, version)
        return self.hash()


# mpt.iavl.proof imports mpt.ics23, which the tree does not need otherwise: looked up on first use and kept (an
# import statement in the method would cost a dictionary lookup and more on every call).
cdef tuple _proof_fns = None


cdef tuple _proof_functions():
    global _proof_fns
    if _proof_fns is None:
        from mpt.iavl.proof import membership_proof, non_membership_proof
        _proof_fns = (membership_proof, non_membership_proof)
    return _proof_fns
