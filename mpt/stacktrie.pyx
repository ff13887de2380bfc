# cython: language_level=3
"""StackTrie: builds a trie root from keys given in strictly ascending order.

Once a key arrives, every subtree to the left of its path can no longer change: it is hashed right away (the
same typed node encoders and pooled Hasher as Trie) and replaced by its hash, so memory stays proportional to the
key length, not to the number of keys. With ``on_node`` every finished node of 32 bytes or more (and the root) is
streamed out, which is how a StackTrie writes a trie into a database without holding it.
"""
cimport cython
from cpython.buffer cimport PyObject_CheckBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t

from mpt._keccak.keccak cimport mpt_keccak256
from mpt.encoding cimport TERMINATOR, keybytes_to_hex_c, prefix_length
from mpt.hasher cimport Hasher, HasherPool, default_pool
from mpt.node cimport FullNode, HashNode, Node, ShortNode, ValueNode

cdef enum:
    HASH_LENGTH = 32
    BRANCH_WIDTH = 17

cdef bytes _EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
cdef bytes _NIBBLES = bytes(range(17))


cdef inline bytes _bytes_copy(object data, str what):
    # Callers may reuse their buffers: keep an immutable copy (bytes already is one).
    if type(data) is bytes:
        return <bytes>data
    if PyObject_CheckBuffer(data):      # any bytes-like object (buffer protocol), as hashlib takes
        return bytes(memoryview(data))
    raise TypeError("%s must be a bytes-like object, not %s" % (what, type(data).__name__))


cdef inline bint _is_leaf(object n) noexcept:
    return type(n) is ShortNode and type((<ShortNode>n).val) is ValueNode


cdef inline bint _can_wait(Node n) noexcept:
    """A complete subtree small enough to wait for its parent's batch: a leaf, or a branch of leaves."""
    cdef int i
    cdef object c
    if _is_leaf(n):
        return True
    if type(n) is not FullNode:
        return False
    for i in range(16):
        if (<FullNode>n).slots[i] != NULL:
            c = <object>(<FullNode>n).slots[i]
            if type(c) is not HashNode and not _is_leaf(c):
                return False
    return True


cdef str _keyhex(bytes hexkey):
    # The key as hex digits: its nibbles without the terminator.
    return "".join(["%x" % b for b in hexkey[:len(hexkey) - 1]])


@cython.final
cdef class StackTrie:
    """Root of a trie from strictly ascending keys, in O(key length) memory.

    ``on_node(path, hash, blob)`` (optional) is called for every node of 32 bytes or more as soon as it is
    final, and for the root; ``path`` is the node's position as hex nibbles.
    """

    def __cinit__(self, on_node=None):
        if on_node is not None and not callable(on_node):
            raise TypeError("on_node must be callable")
        self.on_node = on_node
        self.hasher = default_pool().acquire()

    def __dealloc__(self):
        if self.hasher is not None:
            default_pool().release(self.hasher)
            self.hasher = None

    cpdef reset(self):
        """Forget everything and start a new trie (the hasher and callback are kept)."""
        self.root = None
        self.last_key = None
        self.root_hash = None

    cpdef update(self, object key, object value):
        """Insert key -> value. Keys must be strictly ascending; values must not be empty."""
        cdef bytes k = _bytes_copy(key, "key")
        cdef bytes v = _bytes_copy(value, "value")
        if self.root_hash is not None:
            raise ValueError("the stack trie was hashed already; call reset() to start a new one")
        if PyBytes_GET_SIZE(v) == 0:
            raise ValueError("empty value for key %s: a stack trie cannot delete" % k.hex())
        if self.last_key is not None and k <= self.last_key:
            raise ValueError("keys must be strictly ascending: %s after %s" % (k.hex(), self.last_key.hex()))
        hexkey = keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k))
        self.root = self._insert(self.root, hexkey, 0, v)
        self.last_key = k

    cdef Node _insert(self, Node n, bytes hexkey, Py_ssize_t pos, bytes value):
        """Insert below n (hexkey[:pos] is n's path); returns the node that takes n's place."""
        cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(hexkey)
        cdef FullNode fn, branch
        cdef ShortNode sn
        cdef Node child, orig
        cdef const uint8_t *sk
        cdef Py_ssize_t nk, matchlen, i
        cdef int idx
        cdef bytes path = None
        if n is None:
            return ShortNode.new(hexkey[pos:], ValueNode.new(value))
        if type(n) is FullNode:
            fn = <FullNode>n
            idx = k[pos]
            # The nearest elder sibling is complete now: hash it and keep only its reference. Without on_node a
            # leaf, or a branch of leaves, waits instead, so that they are hashed together on the SIMD lanes
            # when this branch is finalised: at most 16 x 17 waiting nodes per branch of the open path, so
            # memory stays O(key length).
            for i in range(idx - 1, -1, -1):
                child = fn.child(i)
                if child is not None:
                    if type(child) is not HashNode and not (self.on_node is None and _can_wait(child)):
                        if self.on_node is not None:
                            path = hexkey[:pos] + _NIBBLES[i:i + 1]
                        fn.set_child(i, self._finalize(child, path, False))
                    break
            fn.set_child(idx, self._insert(fn.child(idx), hexkey, pos + 1, value))
            return fn
        if type(n) is ShortNode:
            sn = <ShortNode>n
            sk = <const uint8_t *>PyBytes_AS_STRING(sn.key)
            nk = PyBytes_GET_SIZE(sn.key)
            matchlen = prefix_length(sk, nk, k + pos, klen - pos)
            if type(sn.val) is ValueNode:
                if matchlen >= nk - 1:
                    raise ValueError("key %s extends the previous key: a stack trie cannot hold a key that is "
                                     "a prefix of another" % _keyhex(hexkey))
            elif matchlen == nk:
                sn.val = self._insert(sn.val, hexkey, pos + nk, value)
                return sn
            if k[pos + matchlen] == TERMINATOR:
                raise ValueError("key %s is a prefix of an earlier key" % _keyhex(hexkey))
            # The keys part inside this node. Everything on the old side is complete (later keys are larger).
            branch = FullNode.new()
            if matchlen + 1 == nk:
                orig = sn.val                       # an extension whose last nibble is where they part
            else:
                orig = ShortNode.new(sn.key[matchlen + 1:], sn.val)
            if self.on_node is not None:
                path = hexkey[:pos + matchlen] + _NIBBLES[sk[matchlen]:sk[matchlen] + 1]
            branch.set_child(sk[matchlen], self._finalize(orig, path, False))
            branch.set_child(k[pos + matchlen], ShortNode.new(hexkey[pos + matchlen + 1:], ValueNode.new(value)))
            if matchlen == 0:
                return branch
            return ShortNode.new(hexkey[pos:pos + matchlen], branch)
        raise ValueError("the stack trie was hashed already; call reset() to start a new one")

    cdef Node _finalize(self, Node n, bytes path, bint is_root):
        """Hash the complete subtree n; return what replaces it in its parent.

        That is a HashNode when the encoding is 32 bytes or more, else n itself (it will be embedded).
        """
        cdef FullNode fn
        cdef ShortNode sn
        cdef Node child
        cdef Py_ssize_t i, start, length
        cdef Hasher h = self.hasher
        cdef bytes blob, child_path = None
        cdef HashNode done
        if type(n) is HashNode or type(n) is ValueNode:
            return n
        if self.on_node is None and type(n) is FullNode:
            # Nothing to stream: hash the subtree in batches, its waiting leaves side by side.
            h.hash_levels(n, 1)
            if n.has_hash:
                return HashNode.from_digest(n.hash_value)
            # Under 32 bytes: embedded in its parent (or hashed below when it is the root).
        if type(n) is FullNode:
            fn = <FullNode>n
            for i in range(16):
                child = fn.child(i)
                if child is not None and type(child) is not HashNode:
                    if path is not None:
                        child_path = path + _NIBBLES[i:i + 1]
                    fn.set_child(i, self._finalize(child, child_path, False))
        else:
            sn = <ShortNode>n
            if type(sn.val) is not ValueNode:
                if path is not None:
                    child_path = path + sn.key
                sn.val = self._finalize(sn.val, child_path, False)
        start = h.buf._length
        n.encode(h.buf)
        length = h.buf._length - start
        if length < HASH_LENGTH and not is_root:
            h.buf._length = start
            return n
        mpt_keccak256(h.buf._buf + start, <size_t>length, h.digest)
        done = HashNode.from_digest(h.digest)
        if self.on_node is not None:
            blob = PyBytes_FromStringAndSize(<char *>h.buf._buf + start, length)
            h.buf._length = start
            self.on_node(path, done.hash_bytes(), blob)
        h.buf._length = start
        return done

    cpdef bytes hash(self):
        """The root hash. Finalises the trie: further updates need reset() first."""
        cdef HashNode done
        if self.root_hash is not None:
            return self.root_hash
        if self.root is None:
            return _EMPTY_ROOT
        done = <HashNode>self._finalize(self.root, b"" if self.on_node is not None else None, True)
        self.root_hash = done.hash_bytes()
        self.root = done
        return self.root_hash

    @property
    def root_hash(self):
        """Same as hash()."""
        return self.hash()

    def __repr__(self):
        state = "hashed %s" % self.root_hash.hex() if self.root_hash is not None else "open"
        return "<StackTrie %s>" % state
