# cython: language_level=3
"""Trie: get / update / delete / hash / copy over copy-on-write nodes.

Updates never modify a node that is already linked in: they copy the path they touch (geth's approach), so an
unchanged subtree keeps its cached hash and `copy()` costs O(1). A fresh trie keeps its nodes as records in a
NodeArena (mpt/ethereum/arena.pyx) until something needs node objects (nodes_root); its copies share the arena
until one of them changes it (own_arena: that one copies the records, once).
"""
cimport cython
from cpython.ref cimport Py_REFCNT
from cpython.pythread cimport PyThread_get_thread_ident
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t
from libc.string cimport memcmp

from mpt.core._keccak.keccak cimport mpt_keccak256
from mpt.ethereum.encoding cimport TERMINATOR, keybytes_to_hex_c, prefix_length
from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.arena cimport NodeArena
from mpt.ethereum.committer cimport NodeSet, commit_trie, finish_commit
from mpt.ethereum.hasher cimport Hasher, HasherPool, default_pool
from mpt.ethereum.node cimport FullNode, HashNode, Node, ShortNode, ValueNode, decode_node_c

from time import sleep as _sleep

from mpt.db.memory import MemoryDB, check_database, write_nodes
from mpt.errors import MissingNodeError, NodeDecodeError

cdef enum:
    HASH_LENGTH = 32
    BRANCH_WIDTH = 17

# keccak256(rlp(b"")): the root of the empty trie.
EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
cdef bytes _EMPTY_ROOT = EMPTY_ROOT
cdef object _MISSING = object()

# Trie.prove and Trie.items are mpt.ethereum.proof's and mpt.ethereum.iterator's, which cimport this module: they
# lend their functions here when they load (register_walkers), which the package mpt.ethereum does before anything
# else. Imports run one way (proof, iterator -> trie), and a prove() calls its function without an import.
cdef object _prove = None
cdef object _prove_many = None
cdef object _iter_items = None
cdef object _iter_nodes = None


def register_walkers(*, prove=None, prove_many=None, iter_items=None, iter_nodes=None):
    """Give Trie its proving (mpt.ethereum.proof) and iterating (mpt.ethereum.iterator) methods."""
    global _prove, _prove_many, _iter_items, _iter_nodes
    if prove is not None:
        _prove, _prove_many = prove, prove_many
    if iter_items is not None:
        _iter_items, _iter_nodes = iter_items, iter_nodes


cdef object _walker(object function, str module):
    if function is None:            # only if this module was loaded outside its package
        raise RuntimeError("%s is not loaded: import mpt.ethereum" % module)
    return function


cdef object _proof_function(bint many):
    return _walker(_prove_many if many else _prove, "mpt.ethereum.proof")


cdef object _iterator_function(bint nodes):
    return _walker(_iter_nodes if nodes else _iter_items, "mpt.ethereum.iterator")


cdef inline FullNode _empty_branch():
    return FullNode.new()


cdef inline FullNode _copy_keep_flags(FullNode n):
    # For replacing a resolved hash node inside a parent: the encoding (and so the hash) does not change.
    cdef FullNode c = n.copy()
    c.copy_hash_from(n)
    c.dirty = n.dirty
    return c


cdef inline bint _owned_child(bint parent_owned, Node child) noexcept:
    """Whether child, just read into a local variable from a slot of an owned parent (or from Trie.root), is
    held by nothing else: its references are that slot and the local variable. Anyone else holding it (another
    trie after copy(), a caller of root_node, an iterator, a pending proof) adds a reference, and so does a
    copy of any node above it, so a shared node is never seen as owned."""
    return parent_owned and child is not None and Py_REFCNT(child) == 2


cdef inline bint _owns(Trie t, bint parent_owned, Node child) noexcept:
    """_owned_child, or always in a private trie (Trie.new_private), whose every node is its own."""
    return t._private or _owned_child(parent_owned, child)


cdef void _mark_all_dirty(Node n) noexcept:
    # Every node under n (inclusive) is to be written by the next commit.
    cdef int i
    if n is None:
        return
    n.dirty = True
    if type(n) is FullNode:
        for i in range(17):
            _mark_all_dirty((<FullNode>n).child(i))
    elif type(n) is ShortNode:
        _mark_all_dirty((<ShortNode>n).val)


cdef class Trie:
    """An Ethereum Merkle Patricia Trie.

    ``Trie()`` is empty, backed by a fresh MemoryDB. ``Trie(db=..., root=hash)`` opens the trie with that root
    from a node database (see mpt.db; a plain dict works too); nodes load lazily on first touch and are checked
    against their hash unless ``verify_reads=False``. As geth's ``trie.New``, the root node itself is read at
    construction: a root the database does not hold raises :class:`~mpt.errors.MissingNodeError` here, not
    at the first access. Keys and values are bytes, or any bytes-like object (bytearray, memoryview...: copied
    to bytes). Like geth, updating a key with an empty value deletes it.
    """

    def __init__(self, db=None, root=None, *, bint verify_reads=True):
        self.verify_reads = verify_reads
        self.root = None
        self._root_hash = None
        self._touched = set()
        self.last_commit = None
        if root is not None and db is None and root != _EMPTY_ROOT:
            raise ValueError("opening a trie from a root needs a node database (db=...)")
        # A trie always has a database, so copies share it and a commit of one is visible to the others.
        self.db = MemoryDB() if db is None else check_database(db)
        self.arena = None
        if root is not None:
            root = as_bytes(root, "root")
            if len(root) != HASH_LENGTH:
                raise ValueError("root must be a 32-byte hash, got %d bytes" % len(root))
            if root != _EMPTY_ROOT:
                # Resolved now (geth's trie.New): a root missing from db fails here, with its hash.
                self.root = self.resolve(HashNode.new(root), b"", 0)
                self._root_hash = root
                return
        # Nothing stored yet: the nodes start as records in an arena.
        self.arena = NodeArena.__new__(NodeArena)

    def __dealloc__(self):
        # One holder fewer for an arena that copies share (a trie the cycle collector cleared first has no arena
        # here: the count stays high, and costs the last holder one needless clone at most).
        if self.arena is not None:
            self.arena.holders -= 1

    cdef NodeArena own_arena(self):
        """The trie's arena, its own first if copies share it: the records are copied once (copy-on-write), by
        the first trie that changes them. None when the trie is on node objects (another thread made them
        meanwhile)."""
        cdef NodeArena arena = self.arena
        cdef NodeArena fresh
        if arena is None or arena.holders <= 1:
            return arena
        fresh = arena.clone()       # after any pass or commit of a copy (wait_quiet)
        if self.arena is not arena:
            return self.arena       # made node objects while the clone waited for a pass
        arena.holders -= 1
        self.arena = fresh
        return fresh

    cdef Node nodes_root(self):
        cdef NodeArena arena = self.arena
        if arena is not None:
            if arena.holders > 1:
                arena.wait_quiet()      # and a commit of a copy sharing the records
            while arena.busy:
                # Another thread's hash() is in its pass (without the GIL), writing the records' hashes: reading
                # the records now would race it. It takes milliseconds; a reader of a node-object trie would
                # not wait, but it would not have to turn records into nodes either.
                _sleep(0.0002)
            if self.arena is not arena:
                return self.root                # made objects meanwhile, by another thread
            self.root = arena.to_nodes()
            self._touched |= arena.take_touched()
            if self.root is not None and arena.root_hash_valid:
                self._root_hash = PyBytes_FromStringAndSize(<const char *>arena.root_hash, HASH_LENGTH)
            self.arena = None
            arena.holders -= 1
        return self.root

    # -------------------------------------------------------------------------------------- key hook

    cdef bytes trie_key(self, object key):
        """The key as stored in the trie (SecureTrie hashes it)."""
        return as_bytes(key, "key")

    # -------------------------------------------------------------------------------------- resolving

    cdef Node resolve(self, HashNode n, bytes hexkey, Py_ssize_t pos):
        cdef bytes blob
        cdef uint8_t digest[HASH_LENGTH]
        cdef bytes node_hash = n.hash_bytes()
        blob = self.db.get(node_hash)
        if blob is None:
            raise MissingNodeError(node_hash, hexkey[:pos])
        if type(blob) is not bytes:
            blob = bytes(blob)
        if self.verify_reads:
            mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob), digest)
            if memcmp(digest, n.hash_value, HASH_LENGTH) != 0:
                raise NodeDecodeError("node %s read from the database does not hash to its key" % node_hash.hex())
        return decode_node_c(node_hash, <const unsigned char *>PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob))

    # -------------------------------------------------------------------------------------- get

    cdef Node _get(self, Node n, bytes hexkey, Py_ssize_t pos):
        """Look hexkey[pos:] up below n; the value (or None) lands in self._found.

        Returns n, or a replacement of n in which resolved hash nodes are kept (geth's tryGet), so the next
        lookup does not read the database again.
        """
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(hexkey)
        cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
        cdef ShortNode sn
        cdef FullNode fn, fc
        cdef Node child, nn
        cdef Py_ssize_t nk
        cdef int idx
        if n is None:
            self._found = None
            return n
        if type(n) is ValueNode:
            self._found = (<ValueNode>n).value if pos == klen else None
            return n
        if type(n) is ShortNode:
            sn = <ShortNode>n
            nk = PyBytes_GET_SIZE(sn.key)
            if klen - pos < nk or prefix_length(<const uint8_t *>PyBytes_AS_STRING(sn.key), nk, k + pos, nk) != nk:
                self._found = None
                return n
            if sn.leaf_value != NULL:
                # A leaf: its value without a read of the ValueNode (what _get of it would return).
                self._found = <bytes>sn.leaf_value if pos + nk == klen else None
                return n
            nn = self._get(sn.val, hexkey, pos + nk)
            if nn is not sn.val:
                sn = ShortNode.new(sn.key, nn)
                sn.copy_hash_from(n)
                sn.dirty = (<ShortNode>n).dirty
                return sn
            return n
        if type(n) is FullNode:
            fn = <FullNode>n
            idx = k[pos]
            child = fn.child(idx)
            nn = self._get(child, hexkey, pos + 1)
            if nn is not child:
                fc = _copy_keep_flags(fn)
                fc.set_child(idx, nn)
                return fc
            return n
        if type(n) is HashNode:
            child = self.resolve(<HashNode>n, hexkey, pos)
            return self._get(child, hexkey, pos)
        raise TypeError("invalid node %r" % (n,))

    cpdef object get(self, object key, object default=None):
        """The value stored at key, or default."""
        # The key first: making it may run Python code (a buffer's), in which another thread may move the nodes
        # out of the arena; nothing runs between the test below and the arena's call.
        cdef bytes k = self.trie_key(key)
        cdef bytes hexkey
        cdef Node newroot
        if self.arena is not None:
            return self.arena.lookup(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), default)
        hexkey = keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))
        newroot = self._get(self.root, hexkey, 0)
        found = self._found
        self._found = None
        if newroot is not self.root and self._state == 0:
            # (Not while hashing: the pass may be reading the old root; the resolved nodes are just not kept.)
            self.root = newroot     # same hash; only resolved nodes are cached in it
        return default if found is None else found

    cdef bytes _hex(self, object key):
        cdef bytes k = self.trie_key(key)
        return keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))

    # -------------------------------------------------------------------------------------- insert

    cdef Node _insert(self, Node n, bytes hexkey, Py_ssize_t pos, Node value, bint owned, bint *changed):
        """Insert value at hexkey[:pos] below n and return what takes n's place; *changed tells whether anything
        changed (when not, n itself is returned and every cached hash stays valid).

        owned: n is reachable only through this trie's own chain of exclusively held nodes (see _owned_child). A
        node that is owned and dirty (never stored) is changed in place instead of being copied: nobody else can
        see it, and as it was never written there is no stored version whose path must be tracked. In a private
        trie (new_private) every node is both.
        """
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(hexkey)
        cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
        cdef ShortNode sn
        cdef FullNode fn, branch
        cdef Node child, nn
        cdef Py_ssize_t matchlen, nk
        cdef const uint8_t *sk
        cdef int idx
        cdef bint child_changed = False
        if pos == klen:
            if type(n) is ValueNode and type(value) is ValueNode and (<ValueNode>n).value == (<ValueNode>value).value:
                return n
            changed[0] = True
            return value
        if n is None:
            changed[0] = True
            # Key tails straight from the key's bytes (a slice expression would build a slice object first).
            return ShortNode.new(PyBytes_FromStringAndSize(<const char *>k + pos, klen - pos), value)
        if type(n) is ShortNode:
            sn = <ShortNode>n
            sk = <const uint8_t *>PyBytes_AS_STRING(sn.key)
            nk = PyBytes_GET_SIZE(sn.key)
            matchlen = prefix_length(sk, nk, k + pos, klen - pos)
            if matchlen == nk:
                child = sn.val
                nn = self._insert(child, hexkey, pos + matchlen, value, _owns(self, owned, child), &child_changed)
                if not child_changed:
                    return n
                changed[0] = True
                if owned and (sn.dirty or self._private):
                    sn.set_val(nn)
                    sn.has_hash = False
                    sn.dirty = True
                    return sn
                self._track(n, hexkey, pos)
                return ShortNode.new(sn.key, nn)
            changed[0] = True
            self._track(n, hexkey, pos)
            # The keys diverge inside this node: a branch at the divergence point, behind an extension
            # for the common part if there is one.
            branch = _empty_branch()
            branch.set_child(sk[matchlen], self._insert(None, sn.key, matchlen + 1, sn.val, False, &child_changed))
            branch.set_child(k[pos + matchlen], self._insert(None, hexkey, pos + matchlen + 1, value, False,
                                                             &child_changed))
            if matchlen == 0:
                return branch
            return ShortNode.new(PyBytes_FromStringAndSize(<const char *>k + pos, matchlen), branch)
        if type(n) is FullNode:
            fn = <FullNode>n
            idx = k[pos]
            child = fn.child(idx)
            nn = self._insert(child, hexkey, pos + 1, value, _owns(self, owned, child), &child_changed)
            if not child_changed:
                return n
            changed[0] = True
            if owned and (fn.dirty or self._private):
                if nn is not child:
                    fn.set_child(idx, nn)
                fn.has_hash = False
                fn.dirty = True
                return fn
            self._track(n, hexkey, pos)
            fn = fn.copy()
            fn.set_child(idx, nn)
            return fn
        if type(n) is HashNode:
            child = self.resolve(<HashNode>n, hexkey, pos)
            nn = self._insert(child, hexkey, pos, value, False, &child_changed)
            if not child_changed:
                return n
            changed[0] = True
            return nn
        raise TypeError("invalid node %r" % (n,))

    # -------------------------------------------------------------------------------------- delete

    cdef Node _delete(self, Node n, bytes hexkey, Py_ssize_t pos):
        """Delete hexkey[pos:] below n, normalising as geth does. Returns n itself when the key is absent."""
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(hexkey)
        cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
        cdef ShortNode sn
        cdef FullNode fn
        cdef Node child, nn, remaining
        cdef Py_ssize_t matchlen, nk, i, only
        cdef object c
        cdef int idx
        if n is None:
            return None
        if type(n) is ValueNode:
            return None if pos == klen else n
        if type(n) is ShortNode:
            sn = <ShortNode>n
            nk = PyBytes_GET_SIZE(sn.key)
            matchlen = prefix_length(<const uint8_t *>PyBytes_AS_STRING(sn.key), nk, k + pos, klen - pos)
            if matchlen < nk:
                return n                        # the key is not here
            if matchlen == klen - pos:
                self._track(n, hexkey, pos)
                return None                     # this leaf is the key: remove it
            # The key continues below this extension. In a valid trie the child cannot vanish (it is a branch
            # with at least two entries), but it may shrink into a short node, which then merges into this one.
            nn = self._delete(sn.val, hexkey, pos + nk)
            if nn is sn.val:
                return n
            self._track(n, hexkey, pos)
            if nn is None:
                # Only in a malformed trie from a hostile database (an extension over a lone leaf): nothing is
                # left below, so the extension goes too instead of becoming a short node without a child.
                return None
            if type(nn) is ShortNode:
                return ShortNode.new(sn.key + (<ShortNode>nn).key, (<ShortNode>nn).val)
            return ShortNode.new(sn.key, nn)
        if type(n) is FullNode:
            fn = <FullNode>n
            idx = k[pos]
            child = fn.child(idx)
            nn = self._delete(child, hexkey, pos + 1)
            if nn is child:
                return n
            self._track(n, hexkey, pos)
            fn = fn.copy()
            fn.set_child(idx, nn)
            if nn is not None:
                return fn                       # still at least two entries
            only = -1
            for i in range(BRANCH_WIDTH):
                if fn.child(i) is not None:
                    if only == -1:
                        only = i
                    else:
                        return fn               # two or more entries left: stays a branch
            if only < 0:
                return None                     # a malformed branch (one entry) from a hostile database
            remaining = fn.child(only)
            if only == 16:
                # Only the value is left: a leaf with an empty path.
                return ShortNode.new(b"\x10", remaining)
            if type(remaining) is HashNode:
                # Resolve it just to see whether it is a short node that must absorb the nibble.
                remaining = self.resolve(<HashNode>remaining, hexkey[:pos] + bytes((only,)), pos + 1)
            if type(remaining) is ShortNode:
                # It moves up one level: its old path no longer holds a node.
                self._track(remaining, hexkey[:pos] + bytes((only,)), pos + 1)
                return ShortNode.new(bytes((only,)) + (<ShortNode>remaining).key, (<ShortNode>remaining).val)
            return ShortNode.new(bytes((only,)), fn.child(only))
        if type(n) is HashNode:
            child = self.resolve(<HashNode>n, hexkey, pos)
            nn = self._delete(child, hexkey, pos)
            if nn is child:
                return n
            return nn
        raise TypeError("invalid node %r" % (n,))

    # -------------------------------------------------------------------------------------- public API

    cdef int _begin_write(self, str op) except -1:
        """Refuse a mutation while hash() or commit() runs on this trie (necessarily in another thread, or in a
        database callback of commit()): the hashing pass reads the nodes without the GIL and an update may
        change an owned node in place. Like a dict changed during iteration, this raises instead of racing."""
        if self._state:
            raise RuntimeError("trie changed during %s(): %s() called while %s() runs on this trie"
                               % (self._state_op, op, self._state_op))
        self._writers += 1
        return 0

    cdef void _end_write(self) noexcept:
        self._writers -= 1

    cdef int _enter(self, str op) except -1:
        # Under the GIL: the count and the check in _begin_write cannot interleave.
        if self._writers:
            raise RuntimeError("%s() called while an update or delete of this trie runs in another thread" % op)
        if self._state == 0:
            self._state_op = op
        self._state += 1
        return 0

    cdef void _leave(self) noexcept:
        self._state -= 1

    cdef int _track(self, Node n, bytes hexkey, Py_ssize_t pos) except -1:
        """Note that the stored node at hexkey[:pos] is being replaced (for the NodeSet's deleted paths)."""
        # Stored nodes are those with a hash, and the root whatever its size (a private trie has none).
        if not n.dirty and (n.has_hash or pos == 0) and not self._private:
            self._touched.add(hexkey[:pos])
        return 0

    cdef int update_path(self, bytes hexkey, Node value) except -1:
        cdef Node root = self.nodes_root()
        cdef bint changed = False
        root = self._insert(root, hexkey, 0, value, _owns(self, True, root), &changed)
        if changed:
            # The root may have changed in place: the cached root hash goes whether or not it is a new object.
            self.root = root
            self._root_hash = None
        return 0

    cdef int _set_root(self, Node root) except -1:
        self.nodes_root()
        if root is not self.root:
            self.root = root
            self._root_hash = None
        return 0

    @staticmethod
    cdef Trie new_private(Node root, object db):
        """A trie over root that owns every node of it and stores none (a tree rebuilt from a proof): update_path
        changes the nodes in place and tracks no paths. No MemoryDB of its own: a hash node is read from db (and
        checked against its hash). Never committed."""
        cdef Trie t = Trie.__new__(Trie)
        t.db = db
        t.verify_reads = True
        t._touched = set()
        t._private = True
        t.root = root
        return t

    cpdef update(self, object key, object value):
        """Set key to value; an empty value deletes the key (geth semantics)."""
        cdef bytes v = as_bytes(value, "value")
        cdef bytes k = self.trie_key(key)      # (first: see get)
        cdef bytes hexkey
        cdef NodeArena arena
        cdef int shared
        if self.arena is not None:
            self._begin_write("update")
            try:
                while True:
                    arena = self.own_arena()
                    if arena is None:
                        break
                    if PyBytes_GET_SIZE(v) == 0:
                        shared = arena.remove(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))
                    else:
                        shared = arena.set(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k),
                                           <const uint8_t *>PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
                    if not shared:
                        break       # done (else shared meanwhile: take a copy of our own and go again)
            finally:
                self._end_write()
            if arena is not None:
                return
        hexkey = keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))
        self._begin_write("update")
        try:
            if PyBytes_GET_SIZE(v) == 0:
                self._set_root(self._delete(self.root, hexkey, 0))
            else:
                self.update_path(hexkey, ValueNode.new(v))
        finally:
            self._end_write()

    cpdef delete(self, object key):
        """Remove key; a missing key is not an error (geth semantics)."""
        self._delete_key(key, "delete")

    cdef int _delete_key(self, object key, str caller) except -1:
        # delete() and `del t[key]`; caller names the method in the busy-state error.
        cdef bytes k = self.trie_key(key)      # (first: see get)
        cdef bytes hexkey
        cdef NodeArena arena
        if self.arena is not None:
            self._begin_write(caller)
            try:
                while True:
                    arena = self.own_arena()
                    if arena is None or not arena.remove(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k)):
                        break       # done, or on node objects now (else shared meanwhile: as in update)
            finally:
                self._end_write()
            if arena is not None:
                return 0
        hexkey = keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))
        self._begin_write(caller)
        try:
            self._set_root(self._delete(self.root, hexkey, 0))
        finally:
            self._end_write()
        return 0

    cpdef bytes hash(self):
        """The root hash (keccak256 of the root node's encoding; EMPTY_ROOT for an empty trie)."""
        cdef HasherPool pool
        cdef Hasher h
        cdef Node root = self.root      # a reference of our own: the pass borrows every node below it
        cdef bytes digest
        cdef NodeArena arena = self.arena      # ours: another thread may make the nodes objects meanwhile
        if arena is not None:
            self._enter("hash")
            try:
                digest = arena.hash_root()
            finally:
                self._leave()
            return _EMPTY_ROOT if digest is None else digest
        if root is None:
            return _EMPTY_ROOT
        if self._root_hash is not None:
            return self._root_hash
        pool = default_pool()
        h = pool.acquire()
        self._enter("hash")
        try:
            digest = h.root_hash(root)
        finally:
            self._leave()
            pool.release(h)
        self._root_hash = digest
        return digest

    @property
    def root_hash(self):
        """Same as hash()."""
        return self.hash()

    def commit(self, collect_leaves=False, *, bint set_head=False):
        """Hash, then write every node changed since the last commit to the database in one batch.

        Returns the root hash, or ``(root, leaves)`` with ``collect_leaves=True`` where leaves are
        ``(value, leaf node hash)`` pairs (for callers that track storage tries). ``set_head=True`` records the
        root as the database's head in the same batch (LMDBStore, MemoryDB). The trie stays usable;
        ``last_commit`` holds the NodeSet that was written. If the write fails, nothing is marked committed
        and the commit can be retried.
        """
        self._enter("commit")
        try:
            return self._commit(collect_leaves, set_head)
        finally:
            self._leave()

    def _commit(self, collect_leaves, bint set_head):
        # commit()'s body, run while the trie counts as busy (see _begin_write).
        cdef bytes root = self.hash()
        cdef NodeSet written
        cdef NodeArena arena = self.arena
        if arena is not None:
            # Records copies share are committed where they lie, as shared node objects are: the copies share
            # the database too, and count them stored from then on. One commit at a time walks them.
            if arena.holders > 1:
                arena.wait_quiet()
            arena.commit_thread = PyThread_get_thread_ident()
            try:
                # The records the arena collects, written as commit_trie writes nodes; they count as stored once
                # the write has succeeded (a failed write leaves everything to commit again, the touched paths
                # included).
                self._touched |= arena.take_touched()
                written = arena.collect(root, collect_leaves)
                try:
                    finish_commit(written, self.db, self._touched, set_head)
                except BaseException:
                    arena.unmark_collected()
                    if self.arena is not arena:
                        # A database callback made the nodes objects during the write, from records already
                        # marked stored: they all count as dirty again (the next commit writes them, whatever
                        # they were).
                        _mark_all_dirty(self.root)
                    raise
                arena.mark_stored()
            finally:
                arena.commit_thread = 0
        else:
            written = commit_trie(self.root, root, self.db, self._touched, collect_leaves, set_head)
        self._touched = set()
        self.last_commit = written
        if collect_leaves:
            return root, written.leaves
        return root

    # -------------------------------------------------------------------------------------- iteration

    def items(self, start=b""):
        """(key, value) pairs in ascending key order, from the first key >= start."""
        return self._iterate(as_bytes(start, "start"), 0)

    def keys(self, start=b""):
        """Keys in ascending order, from the first key >= start."""
        return self._iterate(as_bytes(start, "start"), 1)

    def values(self, start=b""):
        """Values in ascending key order, from the first key >= start."""
        return self._iterate(as_bytes(start, "start"), 2)

    def __iter__(self):
        return self._iterate(b"", 1)

    cdef object _iterate(self, bytes start, int mode):
        # A fresh trie iterates over its records (sharing them with the iteration: a change meanwhile copies
        # them first), any other over its nodes.
        cdef NodeArena arena = self.arena
        if arena is not None:
            return arena.iterate(start, mode)
        return _iterator_function(False)(self, start, mode)

    def node_iter(self):
        """(path, hash or None, blob) of every node in pre-order (geth's NodeIterator order).

        path is hex nibbles; hash is None for nodes embedded in their parent. The trie is hashed first.
        """
        cdef bytes root = self.hash()
        cdef NodeArena arena = self.arena
        if arena is not None:
            return arena.iterate_nodes(root)        # a fresh trie: over its records, as items() is
        self.nodes_root()
        return _iterator_function(True)(self)

    # -------------------------------------------------------------------------------------- proofs

    def prove(self, key):
        """Merkle proof for key: node encodings from the root down (see mpt.proof.prove)."""
        return _proof_function(False)(self, key)

    def prove_many(self, keys):
        """One deduplicated proof covering every key in keys."""
        return _proof_function(True)(self, keys)

    def resolve_node(self, HashNode n not None, bytes path=b""):
        """Load and decode the node behind a HashNode from the database."""
        return self.resolve(n, path, len(path))

    @property
    def root_node(self):
        """The root node (None when empty), for inspection."""
        return self.nodes_root()

    @property
    def database(self):
        """The node database this trie reads from and commits to."""
        return self.db

    def copy(self):
        """An independent trie with the same content, O(1): what the two hold is shared copy-on-write (node
        objects path by path; a fresh trie's records all at once, copied by the first of the two that changes
        them)."""
        cdef Trie t = type(self).__new__(type(self))
        cdef NodeArena arena = self.arena
        if arena is not None:
            # The paths touched so far go with each trie (into _touched below), not with the shared records.
            self._touched |= arena.take_touched()
            arena.holders += 1
            t.arena = arena
        else:
            t.root = self.root
        t.db = self.db
        t._root_hash = self._root_hash
        t.verify_reads = self.verify_reads
        t._touched = set(self._touched)
        return t

    def __copy__(self):
        return self.copy()

    def __getitem__(self, key):
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        self.update(key, value)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self._delete_key(key, "__delitem__")

    def __contains__(self, key):
        return self.get(key, _MISSING) is not _MISSING

    def __repr__(self):
        return "<%s root=%s>" % (type(self).__name__, self.hash().hex())
