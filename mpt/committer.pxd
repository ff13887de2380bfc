# cython: language_level=3
"""Commit (geth trie/committer.go): dirty nodes -> NodeSet."""
cimport cython
from mpt.hasher cimport Hasher
from mpt.node cimport Node


@cython.final
cdef class NodeSet:
    cdef:
        readonly dict nodes         # hex path -> (hash, blob) of every stored node written by the commit
        readonly set deleted        # hex paths of formerly stored nodes that no longer exist there
        readonly list leaves        # (value, hash of the leaf node) when collected, else None
        readonly bytes root         # the committed root hash


cdef int commit_node(Node n, bytes path, Hasher h, dict nodes, list leaves, bytes root_hash, list visited) except -1
cdef int mark_clean(list visited) except -1
