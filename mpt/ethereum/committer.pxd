# cython: language_level=3
"""Commit (geth trie/committer.go): dirty nodes -> NodeSet."""
cimport cython
from cpython.ref cimport PyObject
from mpt.ethereum.node cimport Node
from mpt.core.rlp cimport WriteBuffer


@cython.final
cdef class NodeSet:
    cdef:
        dict _nodes                 # hex path -> (hash, blob); built from the arrays below on first access
        readonly set deleted        # hex paths of formerly stored nodes that no longer exist there
        readonly list leaves        # (value, hash of the leaf node) when collected, else None
        readonly bytes root         # the committed root hash
        # What the commit collected, as C arrays (no tuple, path bytes or dict entry per node unless asked):
        PyObject **_objs            # owned: hash, blob of node i at 2i, 2i+1
        Py_ssize_t *_path_ends      # node i's path is _paths[_path_ends[i-1]:_path_ends[i]] (0 for i == 0)
        Py_ssize_t _count
        Py_ssize_t _capacity
        WriteBuffer _paths
        # The collected nodes, owned, to mark clean once the write has succeeded.
        PyObject **_visited
        Py_ssize_t _visited_count
        Py_ssize_t _visited_capacity

    cdef int _add(self, bytes node_hash, bytes blob, const unsigned char *path, Py_ssize_t plen) except -1
    cdef int _visit(self, Node n) except -1
    cdef bint _has_path(self, bytes path) noexcept


cdef NodeSet new_node_set(bytes root_hash, bint collect_leaves)
cdef int add_node(NodeSet ns, bytes node_hash, bytes blob, const unsigned char *path, Py_ssize_t plen) except -1
cdef int finish_commit(NodeSet ns, object db, set touched, bint set_head) except -1
cdef NodeSet commit_trie(Node root, bytes root_hash, object db, set touched, bint collect_leaves, bint set_head)
