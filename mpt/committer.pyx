# cython: language_level=3
"""Collect the dirty nodes of a hashed trie into a NodeSet.

Children are committed before their parent and each stored node is encoded once (its children already carry
their hashes). Collected nodes become clean only once the write has succeeded (mark_clean), so a failed write
can simply be retried; a clean subtree is never visited again, which is why a second commit writes only what
changed since the first.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t
from libc.string cimport memcpy
from cpython.ref cimport PyObject

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object o)

from mpt.hasher cimport Hasher
from mpt.node cimport FullNode, Node, ShortNode, ValueNode
from mpt.rlp cimport WriteBuffer

@cython.final
cdef class NodeSet:
    """What one commit wrote: ``nodes`` (path -> (hash, blob)), ``deleted`` paths, optional ``leaves``."""

    def __cinit__(self, bytes root, dict nodes, set deleted, list leaves=None):
        self.root = root
        self.nodes = nodes
        self.deleted = deleted
        self.leaves = leaves

    def __len__(self):
        return len(self.nodes)

    @property
    def size(self):
        """Bytes of node blobs written."""
        return sum(len(blob) for _, blob in self.nodes.values())

    def __repr__(self):
        return "<NodeSet root=%s nodes=%d deleted=%d>" % (self.root.hex(), len(self.nodes), len(self.deleted))


cdef inline bint _needs_commit(PyObject *c) noexcept:
    return c != NULL and type(<object>c) is not ValueNode and (<Node>c).dirty


cdef int _commit(Node n, WriteBuffer path, Py_ssize_t plen, Hasher h, dict nodes, list leaves, bytes root_hash,
                 list visited) except -1:
    """commit_node with n's path in path[:plen]: children extend it in place (a stack of nibbles), and a bytes
    path is made only for a node that is stored, not once per step."""
    cdef Py_ssize_t i, start, nk
    cdef PyObject *c
    cdef bytes node_hash, blob, key
    cdef tuple entry
    if type(n) is FullNode:
        for i in range(16):
            c = (<FullNode>n).slots[i]
            if _needs_commit(c):
                path._length = plen
                path.ensure(1)
                path._buf[plen] = <uint8_t>i
                _commit(<Node>c, path, plen + 1, h, nodes, leaves, None, visited)
    elif type(n) is ShortNode:
        c = <PyObject *>(<ShortNode>n).val
        if _needs_commit(c):
            key = (<ShortNode>n).key
            nk = PyBytes_GET_SIZE(key)
            path._length = plen
            path.ensure(nk)
            memcpy(path._buf + plen, PyBytes_AS_STRING(key), <size_t>nk)
            _commit(<Node>c, path, plen + nk, h, nodes, leaves, None, visited)
    visited.append(n)
    node_hash = n.hash_bytes() if n.has_hash else root_hash
    if node_hash is None:
        return 0                        # embedded in its parent: stored inside the parent's blob
    start = h.buf._length
    n.encode(h.buf)
    blob = PyBytes_FromStringAndSize(<char *>h.buf._buf + start, h.buf._length - start)
    h.buf._length = start
    entry = (node_hash, blob)
    # Two bytes objects cannot form a cycle: keep the collector from walking thousands of these tuples.
    PyObject_GC_UnTrack(entry)
    nodes[PyBytes_FromStringAndSize(<char *>path._buf, plen)] = entry
    if leaves is not None and type(n) is ShortNode and type((<ShortNode>n).val) is ValueNode:
        leaves.append(((<ValueNode>(<ShortNode>n).val).value, node_hash))
    return 0


cdef int commit_node(Node n, bytes path, Hasher h, dict nodes, list leaves, bytes root_hash, list visited) except -1:
    """Collect n and its dirty descendants; root_hash is given for the root only (it is stored whatever its size).
    path is n's hex path; every stored node is keyed by its own."""
    cdef WriteBuffer buf = WriteBuffer.new()
    buf.write_raw(<const uint8_t *>PyBytes_AS_STRING(path), PyBytes_GET_SIZE(path))
    return _commit(n, buf, PyBytes_GET_SIZE(path), h, nodes, leaves, root_hash, visited)


cdef int mark_clean(list visited) except -1:
    """After a successful write: the collected nodes are in the database now."""
    cdef Node n
    for n in visited:
        n.dirty = False
    return 0
