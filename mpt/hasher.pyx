# cython: language_level=3
"""Hasher: turns a node tree into hashes bottom-up, caching each hash in its node.

A child whose encoding is 32 bytes or more is hashed and referred to by hash; a smaller child is embedded in its
parent. Each node that needs hashing is encoded exactly once, into the hasher's buffer at its current end, hashed,
and the buffer is rewound; the root is always hashed.
"""
cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from mpt._keccak.keccak cimport mpt_keccak256
from mpt.node cimport FullNode, Node, ShortNode, ValueNode
from mpt.rlp cimport WriteBuffer

cdef enum:
    HASH_LENGTH = 32
    DEFAULT_MAX_IDLE = 16


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

    cdef bytes root_hash(self, Node root):
        """The root hash of the tree under root, as bytes."""
        self.hash_node(root, True)
        return PyBytes_FromStringAndSize(<char *>self.digest, HASH_LENGTH)

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
