# cython: language_level=3
"""Hasher: turns a node tree into hashes bottom-up, caching each hash in its node.

A child whose encoding is 32 bytes or more is hashed and referred to by hash; a smaller child is embedded in its
parent. Each node that needs hashing is encoded exactly once, into the hasher's buffer at its current end, hashed,
and the buffer is rewound; the root is always hashed.

Large tries take a second path (hash_levels): the unhashed nodes are grouped by height, each level is encoded
with the GIL held (children are always in a lower level, so their hashes are ready), and then the whole level's
encodings are hashed without the GIL, spread over several threads with OpenMP. Both paths give identical
hashes. The parallel path is opt-in for now (MPT_HASH_THREADS=N or set_hash_threads(N)): on this project's
2-core machines it saves about 10% at 100K accounts, not yet enough to be the default (docs/performance.md).
"""
import os

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cython.parallel cimport prange
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from cpython.list cimport PyList_GET_ITEM
from cpython.ref cimport PyObject

from mpt._keccak.keccak cimport mpt_keccak256
from mpt.node cimport FullNode, Node, ShortNode, ValueNode
from mpt.rlp cimport WriteBuffer

cdef enum:
    HASH_LENGTH = 32
    DEFAULT_MAX_IDLE = 16
    # Unhashed nodes two levels below the root from which the level-parallel path pays for its bookkeeping.
    PARALLEL_MIN_NODES_AT_DEPTH_2 = 128
    # Levels with fewer encodings than this are hashed on the calling thread.
    PARALLEL_MIN_LEVEL = 64


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MPT_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define MPT_PREFETCH(p) ((void)(p))
    #endif
    """
    void MPT_PREFETCH(const void *p) nogil


# Large tries are bound by memory latency, not by keccak: every node, key and value is a separate object
# somewhere in the heap. Walking a level, we ask for the objects a few nodes ahead so their cache misses overlap.
cdef enum:
    PREFETCH_NODE_AHEAD = 16     # the node object itself
    PREFETCH_FIELDS_AHEAD = 8    # what it points to: key and value objects, or a branch's children
    PREFETCH_VALUE_AHEAD = 4     # the bytes behind a leaf's ValueNode


cdef inline void _prefetch_children(FullNode fn) noexcept:
    # Ask for all children at once so their cache misses overlap instead of queueing one by one.
    cdef int j
    for j in range(16):
        if fn.slots[j] != NULL:
            MPT_PREFETCH(fn.slots[j])


cdef inline void _prefetch_fields(object o) noexcept:
    if type(o) is ShortNode:
        MPT_PREFETCH(<PyObject *>(<ShortNode>o).key)
        MPT_PREFETCH(<PyObject *>(<ShortNode>o).val)
    elif type(o) is FullNode:
        _prefetch_children(<FullNode>o)


cdef inline void _prefetch_value(object o) noexcept:
    cdef Node v
    if type(o) is ShortNode:
        v = (<ShortNode>o).val
        if type(v) is ValueNode:
            MPT_PREFETCH(<PyObject *>(<ValueNode>v).value)


cdef int _threads_from_env() noexcept:
    cdef int n
    try:
        n = int(os.environ.get("MPT_HASH_THREADS", "1"))
    except ValueError:
        n = 1
    return n if n > 0 else min(os.cpu_count() or 1, 8)


cdef int _HASH_THREADS = _threads_from_env()


cdef int hash_threads() noexcept:
    """Threads the level-parallel hasher uses (MPT_HASH_THREADS: default 1, 0 = every core up to 8)."""
    return _HASH_THREADS


def set_hash_threads(int n):
    """Set the number of hashing threads (1 = always hash on the calling thread). Returns the old value."""
    global _HASH_THREADS
    old = _HASH_THREADS
    _HASH_THREADS = n if n > 0 else 1
    return old


cdef int _collect(Node n, list levels) except -2:
    """Append every unhashed branch/short node under n to levels[height]; return n's height (-1: nothing)."""
    cdef int h = -1, ch, i
    cdef Node c
    if n is None or n.has_hash or type(n) is ValueNode:
        return -1
    if type(n) is FullNode:
        _prefetch_children(<FullNode>n)
        for i in range(16):
            c = (<FullNode>n).child(i)
            if c is not None:
                ch = _collect(c, levels)
                if ch > h:
                    h = ch
    elif type(n) is ShortNode:
        h = _collect((<ShortNode>n).val, levels)
    h += 1
    while len(levels) <= h:
        levels.append([])
    (<list>levels[h]).append(n)
    return h


cdef bint _is_large(Node root) noexcept:
    """Cheap look two levels down: are there enough unhashed nodes to make the parallel path worth it?"""
    cdef int i, j, count = 0
    cdef Node c, g
    if type(root) is not FullNode or root.has_hash:
        return False
    for i in range(16):
        c = (<FullNode>root).child(i)
        if c is None or c.has_hash:
            continue
        if type(c) is FullNode:
            for j in range(16):
                g = (<FullNode>c).child(j)
                if g is not None and not g.has_hash and type(g) is not ValueNode:
                    count += 1
        elif type(c) is ShortNode:
            count += 1
    return count >= PARALLEL_MIN_NODES_AT_DEPTH_2


@cython.final
cdef class Hasher:
    """Owns a WriteBuffer and scratch space; get one from a HasherPool."""

    def __cinit__(self):
        self.buf = WriteBuffer.new()

    @staticmethod
    cdef Hasher new():
        return Hasher.__new__(Hasher)

    cdef int hash_children(self, Node n) except -1:
        """Make every child of n ready to be referenced: hash those of 32 bytes or more."""
        cdef Py_ssize_t i
        cdef object c
        cdef Node child
        if type(n) is FullNode:
            _prefetch_children(<FullNode>n)
            for i in range(16):
                c = (<FullNode>n).child(i)
                if c is not None and not (<Node>c).has_hash:
                    self.hash_node(<Node>c, False)
        elif type(n) is ShortNode:
            child = (<ShortNode>n).val
            if type(child) is not ValueNode and not child.has_hash:
                self.hash_node(child, False)
        return 0

    cdef bytes keccak_buffer(self, Py_ssize_t start):
        """keccak256 of the buffer from start to its end, as bytes."""
        mpt_keccak256(self.buf._buf + start, <size_t>(self.buf._length - start), self.digest)
        return PyBytes_FromStringAndSize(<char *>self.digest, HASH_LENGTH)

    cdef bint hash_node(self, Node n, bint force) except -1:
        """Hash n (caching the hash in it when its encoding is 32 bytes or more).

        Returns whether a hash was computed; it is then also in self.digest. A small node is left unhashed
        (it will be embedded in its parent) unless force is set: the root is hashed whatever its size.
        """
        cdef Py_ssize_t start, length
        if n.has_hash:
            memcpy(self.digest, n.hash_value, HASH_LENGTH)
            return True
        self.hash_children(n)
        start = self.buf._length
        n.encode(self.buf)
        length = self.buf._length - start
        if length < HASH_LENGTH and not force:
            self.buf._length = start
            return False
        mpt_keccak256(self.buf._buf + start, <size_t>length, self.digest)
        if length >= HASH_LENGTH:
            n.set_hash(self.digest)
        self.buf._length = start
        return True

    cdef int hash_levels(self, Node root, int threads) except -1:
        """Hash every unhashed node under root level by level, each level's keccaks on `threads` threads."""
        cdef list levels = []
        cdef list level
        cdef Py_ssize_t m, i, length
        cdef Py_ssize_t *offsets = NULL
        cdef uint8_t *digests = NULL
        cdef const uint8_t *base
        cdef int nthreads
        cdef Node n
        _collect(root, levels)
        for level in levels:
            m = len(level)
            offsets = <Py_ssize_t *>PyMem_Malloc((m + 1) * sizeof(Py_ssize_t))
            digests = <uint8_t *>PyMem_Malloc(m * HASH_LENGTH)
            if offsets == NULL or digests == NULL:
                PyMem_Free(offsets)
                PyMem_Free(digests)
                raise MemoryError()
            try:
                self.buf.reset()
                for i in range(m):
                    if i + PREFETCH_NODE_AHEAD < m:
                        MPT_PREFETCH(PyList_GET_ITEM(level, i + PREFETCH_NODE_AHEAD))
                    if i + PREFETCH_FIELDS_AHEAD < m:
                        _prefetch_fields(<object>PyList_GET_ITEM(level, i + PREFETCH_FIELDS_AHEAD))
                    if i + PREFETCH_VALUE_AHEAD < m:
                        _prefetch_value(<object>PyList_GET_ITEM(level, i + PREFETCH_VALUE_AHEAD))
                    offsets[i] = self.buf._length
                    (<Node>level[i]).encode(self.buf)
                offsets[m] = self.buf._length
                base = self.buf._buf
                nthreads = threads if m >= PARALLEL_MIN_LEVEL else 1
                # No Python object is touched here: only the buffer, the offsets and the digests.
                with nogil:
                    for i in prange(m, num_threads=nthreads, schedule="static"):
                        length = offsets[i + 1] - offsets[i]
                        if length >= HASH_LENGTH:
                            mpt_keccak256(base + offsets[i], <size_t>length, digests + i * HASH_LENGTH)
                for i in range(m):
                    if i + PREFETCH_NODE_AHEAD < m:
                        MPT_PREFETCH(PyList_GET_ITEM(level, i + PREFETCH_NODE_AHEAD))
                    if offsets[i + 1] - offsets[i] >= HASH_LENGTH:
                        (<Node>level[i]).set_hash(digests + i * HASH_LENGTH)
            finally:
                PyMem_Free(offsets)
                PyMem_Free(digests)
                offsets = NULL
                digests = NULL
        self.buf.reset()
        return 0

    cdef bytes root_hash(self, Node root):
        """The root hash of the tree under root, as bytes."""
        cdef int threads = _HASH_THREADS
        if threads > 1 and _is_large(root):
            self.hash_levels(root, threads)
        self.hash_node(root, True)
        return PyBytes_FromStringAndSize(<char *>self.digest, HASH_LENGTH)

    def hash_by_levels(self, Node node not None, int threads=0):
        """Hash node as a root through the level-parallel path whatever its size (for tests and benchmarks)."""
        self.buf.reset()
        self.hash_levels(node, threads if threads > 0 else _HASH_THREADS)
        return self.root_hash(node)

    def hash(self, Node node not None):
        """Hash node as a root (always hashed); caches hashes in the subtree."""
        self.buf.reset()
        return self.root_hash(node)

    @property
    def buffer_capacity(self):
        """Current capacity of the hasher's buffer (it never shrinks while pooled)."""
        return self.buf._size


@cython.final
cdef class HasherPool:
    """Hands out Hashers and takes them back with their grown buffers intact.

    Explicit acquire/release because Cython's freelist keeps the object but frees the buffer it owns.
    """

    def __cinit__(self, Py_ssize_t max_idle=DEFAULT_MAX_IDLE):
        self._idle = []
        self.max_idle = max_idle

    cdef Hasher acquire(self):
        if self._idle:
            return <Hasher>self._idle.pop()
        return Hasher.new()

    cdef void release(self, Hasher h) noexcept:
        h.buf.reset()
        if len(self._idle) < self.max_idle:
            self._idle.append(h)

    def get(self):
        """Take a hasher (reused when one is idle)."""
        return self.acquire()

    def put(self, Hasher h not None):
        """Give a hasher back."""
        self.release(h)

    @property
    def idle(self):
        """Number of hashers waiting for reuse."""
        return len(self._idle)


cdef HasherPool _DEFAULT_POOL = HasherPool()


cdef HasherPool default_pool():
    return _DEFAULT_POOL


def get_default_pool():
    """The process-wide pool that Trie, StackTrie and friends draw their hashers from."""
    return _DEFAULT_POOL


def encode_node(Node node not None):
    """The RLP encoding of node, hashing its large children first."""
    cdef Hasher h = _DEFAULT_POOL.acquire()
    try:
        h.hash_children(node)
        node.encode(h.buf)
        return h.buf.to_bytes()
    finally:
        _DEFAULT_POOL.release(h)
