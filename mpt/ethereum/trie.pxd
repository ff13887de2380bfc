# cython: language_level=3
"""The Merkle Patricia Trie (geth trie/trie.go)."""
from mpt.ethereum.arena cimport NodeArena
from mpt.ethereum.node cimport Node, HashNode


cdef class Trie:
    cdef:
        Node root               # None for the empty trie (and while the nodes are in the arena)
        # A fresh trie keeps its nodes as records in an arena (mpt/ethereum/arena.pyx: the hashing pass reads
        # them without chasing objects) for as long as it is only updated, read, iterated, proved, copied, hashed
        # and committed; anything that needs node objects (root_node, range proofs, update_path...)
        # turns them into nodes once (nodes_root) and the trie goes on with those. None: the nodes are objects
        # under root.
        NodeArena arena
        readonly object db      # node database (get(hash) -> bytes | None); a fresh MemoryDB by default
        bytes _root_hash        # cached root hash; None after any change that replaced the root
        bint verify_reads       # check keccak(blob) == hash for every node read from db
        object _found           # out-value of _get (a Cython cdef function returns one object)
        set _touched            # hex paths of stored (clean, hashed) nodes replaced since the last commit
        readonly object last_commit     # NodeSet written by the last commit, or None
        # hash() / commit() calls running on this trie (in any thread; nested calls count): while non-zero, the
        # hashing pass may be reading the nodes without the GIL, so a mutation raises instead of racing.
        int _state
        str _state_op           # "hash" or "commit": which one, for the error message
        # update()/delete() calls running on this trie: a node load from a Python database may let another thread
        # in mid-mutation, and a hash() started then would read nodes the mutation is still changing.
        int _writers
        # A tree rebuilt from a proof (new_private): no node of it was ever stored and nothing else holds one, so
        # _insert changes every node in place and tracks nothing.
        bint _private

    # What the proof, iterator and range-proof modules use (public names; the rest is the trie's own):
    # the key as the trie stores it (SecureTrie: its keccak), a hash node loaded from db, an update by hex path.
    cdef bytes trie_key(self, object key)
    cdef bytes _hex(self, object key)
    cdef Node resolve(self, HashNode n, bytes hexkey, Py_ssize_t pos)
    cdef Node _get(self, Node n, bytes hexkey, Py_ssize_t pos)
    cdef Node _insert(self, Node n, bytes hexkey, Py_ssize_t pos, Node value, bint owned, bint *changed)
    cdef int update_path(self, bytes hexkey, Node value) except -1
    cdef Node _delete(self, Node n, bytes hexkey, Py_ssize_t pos)
    cdef int _set_root(self, Node root) except -1
    @staticmethod
    cdef Trie new_private(Node root, object db)
    cdef int _track(self, Node n, bytes hexkey, Py_ssize_t pos) except -1
    cdef int _begin_write(self, str op) except -1
    cdef void _end_write(self) noexcept
    cdef int _enter(self, str op) except -1
    cdef void _leave(self) noexcept
    cpdef bytes hash(self)
    cpdef object get(self, object key, object default=*)
    cpdef update(self, object key, object value)
    cpdef delete(self, object key)
    cdef int _delete_key(self, object key, str caller) except -1
    # The root node, the trie's nodes made objects first if they are still in its arena: what every walk over the
    # nodes (proof, iterator, range proof) starts from.
    cdef Node nodes_root(self)
    cdef NodeArena own_arena(self)
    cdef object _iterate(self, bytes start, int mode)


