# cython: language_level=3
"""Collect the dirty nodes of a hashed trie into a NodeSet and write them.

Children are committed before their parent and each stored node is encoded once (its children already carry
their hashes). The pass keeps what it collects in C arrays: the (hash, blob) bytes the database needs, the paths
as one buffer, and the nodes to mark clean. The store gets the pairs as one dict through its bulk write; the
NodeSet's ``nodes`` dict (path -> node) is built only if somebody reads it. Collected nodes become clean only once the write has
succeeded, so a failed write can simply be retried; a clean subtree is never visited again, which is why a
second commit writes only what changed since the first.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_SetItem
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcmp, memcpy

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object o)
    Py_ssize_t PyDict_GET_SIZE(object o)

cdef extern from *:
    """
    /* A dict sized for n entries up front (CPython's own helper; a plain new dict on versions that no longer
       export it, where the inserts then grow it step by step as before). */
    #if PY_VERSION_HEX < 0x030D0000
    #define MPT_DICT_PRESIZED(n) _PyDict_NewPresized(n)
    #else
    #define MPT_DICT_PRESIZED(n) PyDict_New()
    #endif
    """
    dict MPT_DICT_PRESIZED(Py_ssize_t n)

from mpt.ethereum.hasher cimport Hasher, HasherPool, default_pool
from mpt.ethereum.node cimport FullNode, Node, ShortNode, ValueNode, gather_children, lowest_bit, prefetch_below
from mpt.core.rlp cimport WriteBuffer
from mpt.db.memory cimport MemoryDB

from mpt.db.memory import write_nodes

cdef enum:
    HASH_LENGTH = 32
    # Up to this many touched paths are checked against the collected paths by a scan; more build the dict.
    DELETED_SCAN_MAX = 16
    # Up to this many nodes fit an empty dict's first table (5 usable slots) or its first resize.
    PRESIZE_MIN = 10
    # A commit prefetches once it has collected this many nodes (about 300 bytes of objects each: 5 MB, past the
    # L2 caches and a good part of a shared L3): below that the hashed trie is still in the caches, where the
    # prefetch rounds cost more than they save (docs/contributing/performance_notes.md).
    PREFETCH_FROM = 16384


@cython.final
cdef class NodeSet:
    """What one commit wrote: ``nodes`` (path -> (hash, blob)), ``deleted`` paths, optional ``leaves``."""

    def __init__(self, bytes root, dict nodes, set deleted, list leaves=None):
        self.root = root
        self._nodes = nodes
        self.deleted = deleted
        self.leaves = leaves

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self._objs != NULL:
            for i in range(2 * self._count):
                Py_XDECREF(self._objs[i])
        PyMem_Free(self._objs)
        PyMem_Free(self._path_ends)
        if self._visited != NULL:
            for i in range(self._visited_count):
                Py_XDECREF(self._visited[i])
        PyMem_Free(self._visited)

    cdef int _add(self, bytes node_hash, bytes blob, const unsigned char *path, Py_ssize_t plen) except -1:
        cdef Py_ssize_t cap
        cdef void *p
        if self._count == self._capacity:
            cap = 64 if self._capacity == 0 else 2 * self._capacity
            p = PyMem_Realloc(self._objs, 2 * cap * sizeof(PyObject *))
            if p == NULL:
                raise MemoryError()
            self._objs = <PyObject **>p
            p = PyMem_Realloc(self._path_ends, cap * sizeof(Py_ssize_t))
            if p == NULL:
                raise MemoryError()
            self._path_ends = <Py_ssize_t *>p
            self._capacity = cap
        self._paths.write_raw(<const uint8_t *>path, plen)
        Py_INCREF(node_hash)
        Py_INCREF(blob)
        self._objs[2 * self._count] = <PyObject *>node_hash
        self._objs[2 * self._count + 1] = <PyObject *>blob
        self._path_ends[self._count] = self._paths.length()
        self._count += 1
        return 0

    cdef int _visit(self, Node n) except -1:
        cdef Py_ssize_t cap
        cdef void *p
        if self._visited_count == self._visited_capacity:
            cap = 64 if self._visited_capacity == 0 else 2 * self._visited_capacity
            p = PyMem_Realloc(self._visited, cap * sizeof(PyObject *))
            if p == NULL:
                raise MemoryError()
            self._visited = <PyObject **>p
            self._visited_capacity = cap
        # Owned: a database's Python write code could otherwise drop the last reference before mark-clean.
        Py_INCREF(n)
        self._visited[self._visited_count] = <PyObject *>n
        self._visited_count += 1
        return 0

    cdef bint _has_path(self, bytes path) noexcept:
        cdef Py_ssize_t i, start = 0, n = PyBytes_GET_SIZE(path)
        for i in range(self._count):
            if (self._path_ends[i] - start == n
                    and memcmp(self._paths.data() + start, PyBytes_AS_STRING(path), <size_t>n) == 0):
                return True
            start = self._path_ends[i]
        return False

    @property
    def nodes(self):
        """Hex path -> (hash, blob) of every stored node written by the commit."""
        cdef Py_ssize_t i, start = 0
        cdef tuple entry
        cdef dict d
        if self._nodes is None:
            d = {}
            for i in range(self._count):
                entry = (<object>self._objs[2 * i], <object>self._objs[2 * i + 1])
                # Two bytes objects cannot form a cycle: keep the collector from walking thousands of tuples.
                PyObject_GC_UnTrack(entry)
                d[PyBytes_FromStringAndSize(<char *>self._paths.data() + start, self._path_ends[i] - start)] = entry
                start = self._path_ends[i]
            self._nodes = d
        return self._nodes

    def __len__(self):
        if self._nodes is not None:
            return len(self._nodes)
        return self._count

    @property
    def size(self):
        """Bytes of node blobs written."""
        cdef Py_ssize_t i, total = 0
        if self._nodes is not None:
            return sum(len(blob) for _, blob in self._nodes.values())
        for i in range(self._count):
            total += PyBytes_GET_SIZE(<bytes>self._objs[2 * i + 1])
        return total

    def __repr__(self):
        # (A NodeSet made with NodeSet.__new__ has no root or deleted set yet.)
        return "<NodeSet root=%s nodes=%d deleted=%d>" % (
            self.root.hex() if self.root is not None else None, len(self),
            len(self.deleted) if self.deleted is not None else 0)


cdef inline bint _needs_commit(PyObject *c) noexcept:
    return c != NULL and type(<object>c) is not ValueNode and (<Node>c).dirty


cdef int _commit(Node n, WriteBuffer path, Py_ssize_t plen, WriteBuffer out, NodeSet ns, bytes root_hash) except -1:
    """Collect n (hex path in path[:plen]) and its dirty descendants: children extend the path in place (a
    stack of nibbles). root_hash is given for the root only (it is stored whatever its size)."""
    cdef Py_ssize_t i, start, nk
    cdef PyObject *c
    cdef PyObject *kids[16]
    cdef int count = 0
    cdef uint32_t present
    cdef bytes node_hash, blob, key
    if type(n) is FullNode:
        if ns._count >= PREFETCH_FROM:
            # The hashing pass's prefetch rounds (node.pxd): the nodes of a large trie are out of the caches again
            # by the time the commit walks them.
            count = gather_children(<PyObject *>n, kids, NULL)
            prefetch_below(kids, count, True)
        present = (<FullNode>n).present & 0xFFFF
        while present:
            i = lowest_bit(present)
            present &= present - 1
            c = (<FullNode>n).slots[i]
            if _needs_commit(c):
                path.set_length(plen)
                path.ensure(1)
                path.data()[plen] = <uint8_t>i
                _commit(<Node>c, path, plen + 1, out, ns, None)
    elif type(n) is ShortNode:
        c = <PyObject *>(<ShortNode>n).val
        # A leaf (leaf_value set) has nothing to commit below it; asking saves a read of its ValueNode, which
        # the hashing pass did not bring into the cache either (CommitAfterHashFixedSize: a large share).
        if (<ShortNode>n).leaf_value == NULL and _needs_commit(c):
            key = (<ShortNode>n).key
            nk = PyBytes_GET_SIZE(key)
            path.set_length(plen)
            path.ensure(nk)
            memcpy(path.data() + plen, PyBytes_AS_STRING(key), <size_t>nk)
            _commit(<Node>c, path, plen + nk, out, ns, None)
    ns._visit(n)
    if n.has_hash:
        node_hash = PyBytes_FromStringAndSize(<char *>n.hash_value, HASH_LENGTH)
    elif root_hash is not None:
        node_hash = root_hash
    else:
        return 0                        # embedded in its parent: stored inside the parent's blob
    start = out.length()
    n.encode(out)
    blob = out.take_from(start)
    ns._add(node_hash, blob, path.data(), plen)
    if ns.leaves is not None and type(n) is ShortNode and (<ShortNode>n).leaf_value != NULL:
        ns.leaves.append((<bytes>(<ShortNode>n).leaf_value, node_hash))
    return 0


cdef int _write(NodeSet ns, object db, bint set_head) except -1:
    # One dict of every (hash, blob), sized up front, handed to the store's bulk write: a MemoryDB's, declared in
    # mpt/db/memory.pxd, in C (one dict.update, or the dict itself when the store is empty); other stores take it
    # in one batch through mpt.db.write_nodes. The store keeps its own bookkeeping (head, key order).
    cdef Py_ssize_t i
    cdef dict nodes
    if not set_head and ns._count == 0:
        return 0
    nodes = MPT_DICT_PRESIZED(ns._count) if ns._count > PRESIZE_MIN else {}
    for i in range(ns._count):
        PyDict_SetItem(nodes, <object>ns._objs[2 * i], <object>ns._objs[2 * i + 1])
    if type(db) is MemoryDB:
        (<MemoryDB>db).bulk_write(nodes, ns.root if set_head else None)
    else:
        write_nodes(db, nodes, head=ns.root if set_head else None)
    return 0


cdef NodeSet new_node_set(bytes root_hash, bint collect_leaves):
    """An empty NodeSet for a commit of root_hash, to be filled by add_node (and finished by finish_commit)."""
    cdef NodeSet ns = NodeSet.__new__(NodeSet)
    ns.root = root_hash
    ns.leaves = [] if collect_leaves else None
    ns._paths = WriteBuffer.new()
    return ns


cdef int add_node(NodeSet ns, bytes node_hash, bytes blob, const unsigned char *path, Py_ssize_t plen) except -1:
    """Collect one stored node (its hex path is path[:plen]) into ns."""
    return ns._add(node_hash, blob, path, plen)


cdef int finish_commit(NodeSet ns, object db, set touched, bint set_head) except -1:
    """The end of every commit, whatever collected ns (commit_trie from node objects, a NodeArena from its
    records): the deleted paths (touched: stored nodes replaced since the last commit, minus the paths written
    again), then the write."""
    # The root of an emptied trie counts as deleted (geth's tracer does the same).
    if not touched:
        ns.deleted = set()
    elif len(touched) <= DELETED_SCAN_MAX:
        ns.deleted = {p for p in touched if not ns._has_path(<bytes>p)}
    else:
        nodes = ns.nodes
        ns.deleted = {p for p in touched if p not in nodes}
    _write(ns, db, set_head)
    return 0


cdef NodeSet commit_trie(Node root, bytes root_hash, object db, set touched, bint collect_leaves, bint set_head):
    """Collect the dirty nodes under root (whose hash is root_hash), write them to db in one batch, then mark
    them clean; touched holds the paths of stored nodes replaced since the last commit."""
    cdef NodeSet ns = new_node_set(root_hash, collect_leaves)
    cdef HasherPool pool
    cdef Hasher h
    cdef WriteBuffer path
    cdef Py_ssize_t i
    if root is not None and root.dirty:
        path = WriteBuffer.new()
        pool = default_pool()
        h = pool.acquire()
        try:
            _commit(root, path, 0, h.buf, ns, root_hash)
        finally:
            pool.release(h)
    finish_commit(ns, db, touched, set_head)
    # The write succeeded: the collected nodes are in the database now.
    for i in range(ns._visited_count):
        (<Node>ns._visited[i]).dirty = False
        Py_XDECREF(ns._visited[i])
        ns._visited[i] = NULL
    # The array is not needed again: the NodeSet (kept as last_commit) does not hold it for its lifetime.
    PyMem_Free(ns._visited)
    ns._visited = NULL
    ns._visited_count = ns._visited_capacity = 0
    return ns
