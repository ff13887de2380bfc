# cython: language_level=3
"""StackTrie (geth trie/stacktrie.go): root of strictly ascending inserts with O(key length) memory."""
cimport cython
from mpt.hasher cimport Hasher
from mpt.node cimport Node


@cython.final
cdef class StackTrie:
    cdef:
        Node root               # the open right-most path; completed subtrees below it are HashNodes
        bytes last_key          # previous key, for the ascending-order check
        bytes root_hash         # set by hash(); no more updates until reset()
        object on_node          # callback(path, hash, blob) for each finalised node of >= 32 bytes and the root
        Hasher hasher           # taken from the default pool for the trie's lifetime

    cdef Node _insert(self, Node n, bytes hexkey, Py_ssize_t pos, bytes value)
    cdef Node _finalize(self, Node n, bytes path, bint is_root)
    cpdef update(self, object key, object value)
    cpdef bytes hash(self)
    cpdef reset(self)
