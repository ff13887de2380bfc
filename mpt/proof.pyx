# cython: language_level=3
"""Merkle proofs (geth trie/proof.go): prove, verify_proof, verify_range_proof.

A proof is a list of node encodings. Verification looks nodes up by the keccak256 it computes itself, so the
order of a proof does not matter and a caller cannot make a node stand in for another.
"""
cimport cython
from cpython.buffer cimport PyObject_CheckBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint8_t
from libc.string cimport memcmp

from mpt._keccak.keccak cimport mpt_keccak256
from mpt.encoding cimport keybytes_to_hex_c, prefix_length
from mpt.hasher cimport Hasher, HasherPool, default_pool
from mpt.node cimport FullNode, HashNode, Node, ShortNode, ValueNode, decode_node_c
from mpt.stacktrie cimport StackTrie
from mpt.trie cimport Trie, check_bytes

from mpt.errors import MissingNodeError, NodeDecodeError, ProofError

cdef enum:
    HASH_LENGTH = 32

cdef bytes _EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")


cdef bytes _keccak(bytes data):
    cdef uint8_t digest[HASH_LENGTH]
    mpt_keccak256(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), digest)
    return PyBytes_FromStringAndSize(<char *>digest, HASH_LENGTH)


cdef bytes _hex(bytes key):
    return keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))


cdef inline bint _has_prefix(bytes key, Py_ssize_t pos, bytes prefix):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(prefix)
    if PyBytes_GET_SIZE(key) - pos < n:
        return False
    return memcmp(PyBytes_AS_STRING(key) + pos, PyBytes_AS_STRING(prefix), n) == 0


# ------------------------------------------------------------------------------------------------ prove

cdef list _path_nodes(Trie t, bytes hexkey):
    """The nodes from the root along hexkey, ending at the value or where the key leaves the trie."""
    cdef list nodes = []
    cdef Node n = t.root
    cdef Py_ssize_t pos = 0, klen = PyBytes_GET_SIZE(hexkey)
    cdef ShortNode sn
    while pos < klen and n is not None:
        if type(n) is ShortNode:
            sn = <ShortNode>n
            nodes.append(n)
            if _has_prefix(hexkey, pos, sn.key):
                pos += PyBytes_GET_SIZE(sn.key)
                n = sn.val
            else:
                n = None
        elif type(n) is FullNode:
            nodes.append(n)
            n = (<FullNode>n).child((<const uint8_t *>PyBytes_AS_STRING(hexkey))[pos])
            pos += 1
        elif type(n) is HashNode:
            n = t._resolve(<HashNode>n, hexkey, pos)
        else:
            break                                   # a ValueNode: the path is complete
    return nodes


cdef int _append_proof(list nodes, Hasher h, list out, set seen, bytes root_hash) except -1:
    cdef Py_ssize_t i, start
    cdef Node n
    cdef bytes blob, node_hash
    for i in range(len(nodes)):
        n = <Node>nodes[i]
        if not n.has_hash and i != 0:
            continue                                # embedded: it travels inside its parent
        node_hash = n.hash_bytes() if n.has_hash else root_hash
        if node_hash in seen:
            continue
        seen.add(node_hash)
        start = h.buf._length
        n.encode(h.buf)
        blob = PyBytes_FromStringAndSize(<char *>h.buf._buf + start, h.buf._length - start)
        h.buf._length = start
        out.append(blob)
    return 0


def prove(Trie t not None, key):
    """Proof for key in t: node encodings from the root down (the root always, others when >= 32 bytes),
    ending at the leaf, or at the node that shows the key is absent. Empty for an empty trie."""
    return prove_many(t, [key])


def prove_many(Trie t not None, keys):
    """The union of the proofs for keys, each node once (a multiproof)."""
    cdef bytes root_hash = t.hash()             # every node on every path carries its hash from here on
    cdef list out = []
    cdef set seen = set()
    cdef HasherPool pool = default_pool()
    cdef Hasher h = pool.acquire()
    try:
        for key in keys:
            _append_proof(_path_nodes(t, _hex(t._trie_key(key))), h, out, seen, root_hash)
    finally:
        pool.release(h)
    return out


# ------------------------------------------------------------------------------------------------ verify

@cython.final
cdef class _ProofNodes:
    """Proof nodes looked up by their own hash. Tries the next node in order first (proofs usually come
    root-to-leaf), hashing a node only when it is needed; a miss hashes the rest once."""
    cdef list blobs
    cdef dict by_hash
    cdef Py_ssize_t next_index

    def __cinit__(self, proof):
        cdef list blobs = []
        if isinstance(proof, (bytes, bytearray, str)):
            raise TypeError("proof must be an iterable of node encodings, not %s" % type(proof).__name__)
        if hasattr(proof, "items"):
            proof = [v for _, v in proof.items()]   # a proof database: the caller's keys are not trusted
        for blob in proof:
            if type(blob) is not bytes:
                if PyObject_CheckBuffer(blob):      # any bytes-like object (issue 16)
                    blob = bytes(memoryview(blob))
                else:
                    raise TypeError("proof nodes must be bytes, not %s" % type(blob).__name__)
            blobs.append(blob)
        self.blobs = blobs
        self.by_hash = None
        self.next_index = 0

    cdef bytes get(self, bytes wanted):
        cdef bytes blob
        if self.by_hash is None and self.next_index < len(self.blobs):
            blob = <bytes>self.blobs[self.next_index]
            self.next_index += 1
            if _keccak(blob) == wanted:
                return blob
            self.by_hash = {_keccak(b): b for b in self.blobs}
        elif self.by_hash is None:
            self.by_hash = {_keccak(b): b for b in self.blobs}
        return self.by_hash.get(wanted)

    cdef Node resolve(self, bytes wanted, int index):
        cdef bytes blob = self.get(wanted)
        if blob is None:
            raise ProofError("proof node %d (hash %s) missing" % (index, wanted.hex()))
        try:
            return decode_node_c(wanted, <const unsigned char *>PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob))
        except NodeDecodeError as e:
            raise ProofError("bad proof node %d (hash %s): %s" % (index, wanted.hex(), e)) from None


cdef bytes _root_bytes(object root):
    cdef bytes r = check_bytes(root, "root")
    if PyBytes_GET_SIZE(r) != HASH_LENGTH:
        raise ValueError("root must be a 32-byte hash, got %d bytes" % PyBytes_GET_SIZE(r))
    return r


cdef object _get_child(Node n, bytes hexkey, Py_ssize_t *pos, bint skip_resolved):
    """geth's get(): step from n along hexkey; returns the child (None when the key is not there)."""
    cdef ShortNode sn
    while True:
        if n is None:
            return None
        if type(n) is ShortNode:
            sn = <ShortNode>n
            if not _has_prefix(hexkey, pos[0], sn.key):
                return None
            pos[0] += PyBytes_GET_SIZE(sn.key)
            n = sn.val
        elif type(n) is FullNode:
            if pos[0] >= PyBytes_GET_SIZE(hexkey):
                raise ProofError("proof path runs past the end of the key")
            n = (<FullNode>n).child((<const uint8_t *>PyBytes_AS_STRING(hexkey))[pos[0]])
            pos[0] += 1
        else:
            return n                                    # HashNode or ValueNode
        if not skip_resolved:
            return n


def verify_proof(root, key, proof):
    """The value for key proven by proof under root, or None when the proof shows the key is absent.

    Raises ProofError naming the failing node when the proof shows neither.
    """
    cdef bytes wanted = _root_bytes(root)
    cdef bytes hexkey = _hex(check_bytes(key, "key"))
    cdef _ProofNodes nodes = _ProofNodes(proof)
    if wanted == _EMPTY_ROOT:
        return None                                 # the empty trie holds no key: nothing more to prove
    cdef Py_ssize_t pos = 0
    cdef int index = 0
    cdef Node n
    cdef object child
    while True:
        n = nodes.resolve(wanted, index)
        child = _get_child(n, hexkey, &pos, True)
        if child is None:
            return None
        if type(child) is ValueNode:
            return (<ValueNode>child).value
        wanted = (<HashNode>child).hash_bytes()
        index += 1


# ------------------------------------------------------------------------------------------------ ranges

cdef Node _proof_to_path(bytes root_hash, Node root, bytes key, _ProofNodes nodes, bint allow_absent,
                         list value_out):
    """Resolve the path of key from the proof into a node tree; hash nodes stay where the path does not go."""
    cdef bytes hexkey = _hex(key)
    cdef Py_ssize_t pos = 0, before
    cdef Node parent, child
    cdef object got
    if root is None:
        root = nodes.resolve(root_hash, 0)
    parent = root
    while True:
        before = pos
        got = _get_child(parent, hexkey, &pos, False)
        if got is None:
            if allow_absent:
                return root
            raise ProofError("the node is not contained in trie")
        child = <Node>got
        if type(child) is ShortNode or type(child) is FullNode:
            parent = child
            continue
        if type(child) is HashNode:
            child = nodes.resolve((<HashNode>child).hash_bytes(), 1)
        elif type(child) is ValueNode:
            value_out.append((<ValueNode>child).value)
        # Link the parent and the resolved child (the parent's own encoding, and hash, do not change).
        if type(parent) is ShortNode:
            (<ShortNode>parent).val = child
        else:
            (<FullNode>parent).set_child((<const uint8_t *>PyBytes_AS_STRING(hexkey))[before], child)
        if type(child) is ValueNode:
            return root
        parent = child


cdef inline void _touch(Node n) noexcept:
    # Its content is about to change: forget the cached hash.
    n.has_hash = False
    n.dirty = True


cdef int _compare(bytes a, Py_ssize_t apos, Py_ssize_t alen, bytes b) noexcept:
    """bytes.Compare(a[apos:apos+alen], b)."""
    cdef Py_ssize_t nb = PyBytes_GET_SIZE(b)
    cdef Py_ssize_t n = alen if alen < nb else nb
    cdef int c = memcmp(PyBytes_AS_STRING(a) + apos, PyBytes_AS_STRING(b), n)
    if c != 0:
        return -1 if c < 0 else 1
    if alen == nb:
        return 0
    return -1 if alen < nb else 1


cdef inline int _nibble(bytes hexkey, Py_ssize_t pos) except -1:
    if pos < 0 or pos >= PyBytes_GET_SIZE(hexkey):
        raise ProofError("proof path runs past the end of the key")
    return (<const uint8_t *>PyBytes_AS_STRING(hexkey))[pos]


cdef int _unset(Node parent, Node child, bytes key, Py_ssize_t pos, bint remove_left) except -1:
    """Remove every reference left (remove_left) or right of key below child."""
    cdef FullNode fn
    cdef ShortNode sn
    cdef int i, nib
    cdef Py_ssize_t rest
    while True:
        if child is None:
            return 0
        if type(child) is FullNode:
            fn = <FullNode>child
            nib = _nibble(key, pos)
            if remove_left:
                for i in range(nib):
                    fn.set_child(i, None)
            else:
                for i in range(nib + 1, 16):
                    fn.set_child(i, None)
            _touch(fn)
            parent = child
            child = fn.child(nib)
            pos += 1
        elif type(child) is ShortNode:
            sn = <ShortNode>child
            rest = PyBytes_GET_SIZE(key) - pos
            if not _has_prefix(key, pos, sn.key):
                # The path leaves the trie inside this node: keep or drop the whole branch by which side it is.
                i = _compare(sn.key, 0, PyBytes_GET_SIZE(sn.key), key[pos:])
                if (remove_left and i < 0) or (not remove_left and i > 0):
                    if type(parent) is not FullNode:
                        raise ProofError("invalid edge proof: short node under a short node")
                    (<FullNode>parent).set_child(_nibble(key, pos - 1), None)
                return 0
            if type(sn.val) is ValueNode:
                if type(parent) is not FullNode:
                    raise ProofError("invalid edge proof: leaf under a short node")
                (<FullNode>parent).set_child(_nibble(key, pos - 1), None)
                return 0
            _touch(sn)
            parent = child
            child = sn.val
            pos += PyBytes_GET_SIZE(sn.key)
        else:
            raise ProofError("invalid edge proof: unexpected %s on the edge path" % type(child).__name__)


cdef int _drop_child(Node parent, bytes key, Py_ssize_t pos) except -1:
    """geth's parent.(*fullNode).Children[key[pos]] = nil, with the type assertion made a ProofError: a
    hostile root can put a short node under an extension, and the cast alone would write into it blindly."""
    if type(parent) is not FullNode:
        raise ProofError("invalid edge proof: short node under a short node")
    (<FullNode>parent).set_child(_nibble(key, pos), None)
    return 0


cdef int _unset_internal(Node n, bytes left_key, bytes right_key) except -1:
    """Drop every reference strictly between the two edge paths; returns 1 when the whole trie goes."""
    cdef bytes left = _hex(left_key), right = _hex(right_key)
    cdef Py_ssize_t pos = 0, nk
    cdef Node parent = None
    cdef int fork_left = 0, fork_right = 0, i
    cdef ShortNode sn
    cdef FullNode fn
    cdef object ln, rn
    while True:
        if type(n) is ShortNode:
            sn = <ShortNode>n
            _touch(sn)
            nk = PyBytes_GET_SIZE(sn.key)
            fork_left = _compare(left, pos, min(nk, PyBytes_GET_SIZE(left) - pos), sn.key)
            fork_right = _compare(right, pos, min(nk, PyBytes_GET_SIZE(right) - pos), sn.key)
            if fork_left != 0 or fork_right != 0:
                break
            parent = n
            n = sn.val
            pos += nk
        elif type(n) is FullNode:
            fn = <FullNode>n
            _touch(fn)
            ln = fn.child(_nibble(left, pos))
            rn = fn.child(_nibble(right, pos))
            if ln is None or rn is None or ln is not rn:
                break
            parent = n
            n = <Node>ln
            pos += 1
        else:
            raise ProofError("invalid edge proof: unexpected %s at the fork" % type(n).__name__)
    if type(n) is ShortNode:
        sn = <ShortNode>n
        if (fork_left == -1 and fork_right == -1) or (fork_left == 1 and fork_right == 1):
            raise ProofError("empty range")
        if fork_left != 0 and fork_right != 0:
            if parent is None:
                return 1
            _drop_child(parent, left, pos - 1)
            return 0
        if fork_right != 0:
            if type(sn.val) is ValueNode:
                if parent is None:
                    return 1
                _drop_child(parent, left, pos - 1)
                return 0
            _unset(sn, sn.val, left, pos + PyBytes_GET_SIZE(sn.key), False)
            return 0
        if fork_left != 0:
            if type(sn.val) is ValueNode:
                if parent is None:
                    return 1
                _drop_child(parent, right, pos - 1)
                return 0
            _unset(sn, sn.val, right, pos + PyBytes_GET_SIZE(sn.key), True)
            return 0
        return 0
    fn = <FullNode>n
    for i in range(_nibble(left, pos) + 1, _nibble(right, pos)):
        fn.set_child(i, None)
    _unset(fn, fn.child(_nibble(left, pos)), left, pos + 1, False)
    _unset(fn, fn.child(_nibble(right, pos)), right, pos + 1, True)
    return 0


cdef bint _has_right_element(Node n, bytes key) except -1:
    """Whether the (resolved) path of key has anything to its right."""
    cdef bytes hexkey = _hex(key)
    cdef Py_ssize_t pos = 0
    cdef int i, nib
    cdef ShortNode sn
    while n is not None:
        if type(n) is FullNode:
            nib = _nibble(hexkey, pos)
            for i in range(nib + 1, 16):
                if (<FullNode>n).child(i) is not None:
                    return True
            n = (<FullNode>n).child(nib)
            pos += 1
        elif type(n) is ShortNode:
            sn = <ShortNode>n
            if not _has_prefix(hexkey, pos, sn.key):
                return _compare(sn.key, 0, PyBytes_GET_SIZE(sn.key), hexkey[pos:]) > 0
            n = sn.val
            pos += PyBytes_GET_SIZE(sn.key)
        elif type(n) is ValueNode:
            return False
        else:
            raise ProofError("invalid edge proof: unresolved node on the edge path")
    return False


def verify_range_proof(root, first_key, keys, values, proof):
    """Check that keys/values are exactly the trie's entries from first_key up to the last key (no gaps).

    proof holds the edge proofs of first_key and of the last key (None when the range is the whole trie).
    Returns whether the trie has more entries to the right. Raises ProofError otherwise (geth semantics).
    """
    cdef bytes root_hash = _root_bytes(root)
    cdef list ks = [check_bytes(k, "key") for k in keys]
    cdef list vs = [check_bytes(v, "value") for v in values]
    cdef bytes first = check_bytes(first_key, "first_key")
    cdef Py_ssize_t i, n = len(ks)
    cdef _ProofNodes nodes
    cdef StackTrie st
    cdef Trie t
    cdef Node tree
    cdef list value_out
    cdef bytes last, have
    if n != len(vs):
        raise ProofError("inconsistent proof data, keys: %d, values: %d" % (n, len(vs)))
    for i in range(n):
        if i < n - 1:
            if ks[i] >= ks[i + 1]:
                raise ProofError("range is not monotonically increasing")
            if (<bytes>ks[i + 1]).startswith(ks[i]):
                raise ProofError("range contains path prefixes")
        if PyBytes_GET_SIZE(<bytes>vs[i]) == 0:
            raise ProofError("range contains deletion")
    if proof is None:
        st = StackTrie()
        for i in range(n):
            st.update(ks[i], vs[i])
        have = st.hash()
        if have != root_hash:
            raise ProofError("invalid proof, want hash %s, got %s" % (root_hash.hex(), have.hex()))
        return False
    nodes = _ProofNodes(proof)
    value_out = []
    try:
        if n == 0:
            tree = _proof_to_path(root_hash, None, first, nodes, True, value_out)
            if value_out or _has_right_element(tree, first):
                raise ProofError("more entries available")
            return False
        last = ks[n - 1]
        if n == 1 and first == last:
            tree = _proof_to_path(root_hash, None, first, nodes, False, value_out)
            if value_out[0] != vs[0]:
                raise ProofError("correct proof but invalid data")
            return _has_right_element(tree, first)
        if first >= last:
            raise ProofError("invalid edge keys")
        if ks[0] < first:
            # geth accepts real entries left of first_key (they re-insert unchanged, unchecked for gaps); the
            # claim is "exactly the entries from first_key on", so they are refused.
            raise ProofError("range starts before first_key")
        if PyBytes_GET_SIZE(first) != PyBytes_GET_SIZE(last):
            raise ProofError("inconsistent edge keys (%d != %d)" % (PyBytes_GET_SIZE(first), PyBytes_GET_SIZE(last)))
        tree = _proof_to_path(root_hash, None, first, nodes, True, value_out)
        tree = _proof_to_path(root_hash, tree, last, nodes, True, value_out)
        t = Trie()
        if not _unset_internal(tree, first, last):
            t.root = tree
        for i in range(n):
            t.update(ks[i], vs[i])
        have = t.hash()
        if have != root_hash:
            raise ProofError("invalid proof, want hash %s, got %s" % (root_hash.hex(), have.hex()))
        return _has_right_element(t.root, last)
    except MissingNodeError as e:
        raise ProofError("invalid proof: the range reaches node %s that the proof does not hold"
                         % (e.node_hash.hex() if e.node_hash else "?")) from None
