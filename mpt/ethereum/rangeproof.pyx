# cython: language_level=3
"""Range proofs (geth trie/proof.go VerifyRangeProof): verify_range_proof.

The edge proofs are resolved into a partial tree, everything between the edges is cut out and the claimed
entries are inserted in its place; the rebuilt tree must hash to the root. Without a proof the entries must be
the whole trie: their root is computed directly (a StackTrie pass).
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_SIZE, PyList_GetSlice
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from mpt.core._keccak.keccak cimport mpt_keccak256_many
from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.encoding cimport TERMINATOR, write_compact_keybytes
from mpt.ethereum.hasher cimport Hasher, HasherPool, default_pool, known_key
from mpt.ethereum.node cimport FullNode, HashNode, Node, ShortNode, ValueNode, decode_node_c
from mpt.ethereum.node_enc cimport HASH_REF_SIZE, short_node_size, write_hash_ref_header, write_short_head
from mpt.ethereum.proof cimport (
    BRANCH_WIDTH, HASH_LENGTH, INLINE_HEX_KEY, NodeItems, ProofSet, get_child, has_prefix, hex_key, missing_message,
    proof_blobs, proofset_find, proofset_free, proofset_init, root_bytes, scan_node,
)
from mpt.core.rlp cimport RLPItem, put_string, string_size
from mpt.core.runtime cimport hash_threads, keccak_backend_number
from mpt.ethereum.stacktrie cimport ST_LEAF, ST_REF, STBuilder, st_add_nibbles, st_finish_root, st_free, st_init
from mpt.ethereum.trie cimport Trie

from mpt.db.memory import MemoryDB
from mpt.errors import MissingNodeError, NodeDecodeError, ProofError

cdef object _NO_NODES = MemoryDB()          # the rebuilt tries read from it (a hash node is missing), nothing writes


cdef int _proofset_build_known(ProofSet *ps) except -1:
    """Index the nodes by their encoding too, so that the hasher can take their digests (KnownEncodings)."""
    cdef Py_ssize_t size = 1, i, slot
    while size < 2 * ps.n:
        size <<= 1
    ps.known.table = <int32_t *>PyMem_Malloc(size * sizeof(int32_t))
    if ps.known.table == NULL:
        raise MemoryError()
    memset(ps.known.table, 0xff, size * sizeof(int32_t))
    ps.known.mask = size - 1
    ps.known.data = ps.data
    ps.known.lengths = ps.lengths
    ps.known.digests = ps.digests
    for i in range(ps.n):
        if ps.lengths[i] < HASH_LENGTH:
            continue                                # never hashed on its own: embedded in its parent
        slot = <Py_ssize_t>(known_key(ps.data[i], ps.lengths[i]) & <uint64_t>ps.known.mask)
        while ps.known.table[slot] >= 0:
            slot = (slot + 1) & ps.known.mask
        ps.known.table[slot] = <int32_t>i
    return 0


cdef bytes _hash_rebuilt(Node root, ProofSet *ps):
    """The root hash of the tree rebuilt from a range proof. Its edge nodes mostly encode exactly like proof
    nodes, whose digests we have: the hasher takes those instead of hashing the same bytes again."""
    cdef HasherPool pool = default_pool()
    cdef Hasher h = pool.acquire()
    try:
        h.known = &ps.known
        h.hash_levels(root, hash_threads())
        h.known = NULL
        return h.root_hash(root)
    finally:
        h.known = NULL
        pool.release(h)


cdef Node _resolve_node(ProofSet *ps, const uint8_t *wanted, Py_ssize_t index):
    """The supplied node hashing to wanted, decoded (its hash cached in it)."""
    cdef Py_ssize_t found = proofset_find(ps, wanted), length
    cdef Node n
    if found < 0:
        raise ProofError(missing_message(wanted, index))
    length = <Py_ssize_t>ps.lengths[found]
    try:
        n = decode_node_c(None, <const unsigned char *>ps.data[found], length)
    except NodeDecodeError as e:
        raise ProofError("bad proof node %d (hash %s): %s"
                         % (index, PyBytes_FromStringAndSize(<const char *>wanted, HASH_LENGTH).hex(), e)) from None
    if length >= HASH_LENGTH:
        n.set_hash(wanted)
    return n


cdef Node _resolve_branch(ProofSet *ps, const uint8_t *wanted, Py_ssize_t index, uint32_t drop):
    """_resolve_node, but a branch is built from scan_node's items (cheaper than the general decoder), leaving
    out the children in drop (bit i: nibble i): those _unset_internal would remove again, so their nodes are
    never made. The node is checked whole all the same (scan_node accepts exactly what the decoder does):
    anything it refuses, and a short node, takes _resolve_node, with its exact errors."""
    cdef Py_ssize_t found, length
    cdef NodeItems items
    cdef const uint8_t *data
    cdef FullNode fn
    cdef RLPItem *item
    cdef int i
    found = proofset_find(ps, wanted)
    if found < 0:
        return _resolve_node(ps, wanted, index)
    data = <const uint8_t *>ps.data[found]
    length = <Py_ssize_t>ps.lengths[found]
    if length < HASH_LENGTH or not scan_node(data, 0, length, &items) or items.count != BRANCH_WIDTH:
        return _resolve_node(ps, wanted, index)
    fn = FullNode.new()
    for i in range(16):
        item = &items.items[i]
        if (drop >> i) & 1:
            continue
        if item.is_list:
            # An embedded node, checked by scan_node: decoded as mpt.node's _decode_ref does.
            fn.set_child(i, decode_node_c(None, <const unsigned char *>data + items.starts[i],
                                          item.end - items.starts[i]))
        elif item.payload_length == HASH_LENGTH:
            fn.set_child(i, HashNode.from_digest(data + item.payload_offset))
    item = &items.items[16]
    if item.payload_length:
        fn.set_child(16, ValueNode.new(PyBytes_FromStringAndSize(<const char *>data + item.payload_offset,
                                                                  item.payload_length)))
    fn.dirty = False
    fn.set_hash(wanted)
    return fn


cdef uint32_t _drop_mask(bytes hexkey, bytes other, bint left, Py_ssize_t pos) noexcept:
    """Which children of a branch at hexkey[:pos] on an edge path _unset_internal removes (other: the other
    edge key, of the same length; None: none). Above the fork nothing; at the fork those strictly between the
    edges; below it, on the left path those right of it, on the right path those left of it. Only siblings of
    the path: the walk of _unset_internal never looks at them, so leaving them out early changes nothing."""
    cdef const uint8_t *k
    cdef const uint8_t *o
    cdef int a, b
    if other is None or pos >= PyBytes_GET_SIZE(hexkey) or PyBytes_GET_SIZE(other) != PyBytes_GET_SIZE(hexkey):
        return 0
    k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
    o = <const uint8_t *>PyBytes_AS_STRING(other)
    a = k[pos]
    if a > 15:
        return 0
    if memcmp(k, o, pos) == 0:
        b = o[pos]
        if b > 15 or a == b:
            return 0
        if a > b:
            a, b = b, a
        # Bits a+1 .. b-1.
        return ((<uint32_t>1 << b) - 1) & ~((<uint32_t>2 << a) - 1)
    if left:
        return 0xffff & ~((<uint32_t>2 << a) - 1)
    return (<uint32_t>1 << a) - 1


cdef Node _proof_to_path(const uint8_t *root_hash, Node root, bytes hexkey, ProofSet *ps, bint allow_absent,
                         list value_out, bytes other=None, bint left=False):
    """Resolve the path of key from the proof into a node tree; hash nodes stay where the path does not go.
    With other (the other edge key), branches leave out what _unset_internal would remove (_drop_mask)."""
    cdef Py_ssize_t pos = 0, before, depth = 0
    cdef Node parent, child
    cdef object got
    if root is None:
        root = _resolve_branch(ps, root_hash, 0, _drop_mask(hexkey, other, left, 0))
    parent = root
    while True:
        before = pos
        got = get_child(parent, hexkey, &pos, False)
        if got is None:
            if allow_absent:
                return root
            raise ProofError("the node is not contained in trie")
        child = <Node>got
        if type(child) is ShortNode or type(child) is FullNode:
            parent = child
            continue
        if type(child) is HashNode:
            depth += 1
            child = _resolve_branch(ps, child.hash_value, depth, _drop_mask(hexkey, other, left, pos))
        elif type(child) is ValueNode:
            value_out.append((<ValueNode>child).value)
        # Link the parent and the resolved child (the parent's own encoding, and hash, do not change).
        if type(parent) is ShortNode:
            (<ShortNode>parent).set_val(child)
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
            if not has_prefix(key, pos, sn.key):
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


cdef int _unset_internal(Node n, bytes left, bytes right) except -1:
    """Drop every reference strictly between the two edge paths; returns 1 when the whole trie goes."""
    cdef Py_ssize_t pos = 0, nk
    cdef Node parent = None
    cdef int fork_left = 0, fork_right = 0, i
    cdef ShortNode sn
    cdef FullNode fn
    cdef object ln, rn
    cdef bytes edge
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
        if fork_right != 0 or fork_left != 0:
            # One edge leaves the node: below it, cut what lies beyond the other edge, on the range's side.
            edge = left if fork_right != 0 else right
            if type(sn.val) is ValueNode:
                if parent is None:
                    return 1
                _drop_child(parent, edge, pos - 1)
                return 0
            _unset(sn, sn.val, edge, pos + PyBytes_GET_SIZE(sn.key), fork_right == 0)
            return 0
        return 0
    fn = <FullNode>n
    for i in range(_nibble(left, pos) + 1, _nibble(right, pos)):
        fn.set_child(i, None)
    _unset(fn, fn.child(_nibble(left, pos)), left, pos + 1, False)
    _unset(fn, fn.child(_nibble(right, pos)), right, pos + 1, True)
    return 0


cdef bint _has_right_element(Node n, bytes hexkey) except -1:
    """Whether the (resolved) path of hexkey has anything to its right."""
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
            if not has_prefix(hexkey, pos, sn.key):
                return _compare(sn.key, 0, PyBytes_GET_SIZE(sn.key), hexkey[pos:]) > 0
            n = sn.val
            pos += PyBytes_GET_SIZE(sn.key)
        elif type(n) is ValueNode:
            return False
        else:
            raise ProofError("invalid edge proof: unresolved node on the edge path")
    return False


# Byte -> its two nibbles as they lie in memory (high nibble first), for one 16-bit store per key byte.
cdef uint16_t _NIBBLE_PAIRS[256]
cdef int _fill_nibble_pairs() except -1:
    cdef int i
    cdef uint8_t pair[2]
    for i in range(256):
        pair[0] = <uint8_t>(i >> 4)
        pair[1] = <uint8_t>(i & 0x0f)
        memcpy(&_NIBBLE_PAIRS[i], pair, 2)
    return 0
_fill_nibble_pairs()


cdef list _bytes_list(object items, str what):
    """items as a private list of exact bytes. Always a copy, even of a list that already holds only bytes: the
    range checks read it without bounds or type checks, and before they run, the proof is taken apart (which
    may run the caller's Python code, a generator or a mapping's items()) and, for a long proof, hashed with
    the GIL released, so the caller's list could change in between. A list of bytes costs one pointer copy."""
    if type(items) is list:
        for x in <list>items:
            if type(x) is not bytes:
                break
        else:
            return PyList_GetSlice(items, 0, PyList_GET_SIZE(items))
    return [as_bytes(x, what) for x in items]


cdef inline int _key_order(bytes a, bytes b) noexcept:
    """0 when a < b and a is not a prefix of b; 1 when a >= b; -1 when a is a proper prefix of b."""
    cdef Py_ssize_t na = PyBytes_GET_SIZE(a), nb = PyBytes_GET_SIZE(b)
    cdef int c = memcmp(PyBytes_AS_STRING(a), PyBytes_AS_STRING(b), <size_t>(na if na < nb else nb))
    if c > 0 or (c == 0 and na >= nb):
        return 1
    return -1 if c == 0 else 0


cdef enum:
    # From this many entries on, whole-range verification hashes the leaves in one batch first (see below).
    BATCHED_LEAVES_MIN = 16


cdef inline size_t _nibble_lcp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) noexcept:
    """Common prefix of two keys in nibbles (neither is a prefix of the other: checked by the caller)."""
    cdef size_t i = 0, m = na if na < nb else nb
    while i < m and a[i] == b[i]:
        i += 1
    if i == m:
        return 2 * m
    return 2 * i + ((a[i] >> 4) == (b[i] >> 4))


cdef int _finish_against(STBuilder *b, int rc, bytes root_hash) except -1:
    """The end of both whole-range checks: finish the builder's root (rc: how adding the entries went) and compare
    it with the claimed root."""
    if rc == 0:
        rc = st_finish_root(b)
    if rc != 0:
        raise MemoryError("range verification: out of memory")
    if memcmp(b.root, PyBytes_AS_STRING(root_hash), HASH_LENGTH) != 0:
        raise ProofError("invalid proof, want hash %s, got %s"
                         % (root_hash.hex(), PyBytes_FromStringAndSize(<const char *>b.root, HASH_LENGTH).hex()))
    return 0


cdef object _verify_whole_range_batched(bytes root_hash, list ks, list vs):
    """_verify_whole_range for n >= 2 entries, with every leaf hashed in one batch before the builder runs.

    Fed leaf by leaf, the builder hashes a branch's leaves when the branch completes: in a random trie that is a
    batch of 2 or 3, one mostly empty pass over the SIMD lanes each (a pass costs nearly as much with 1 live lane
    as with 8). But each leaf's node is known from the sorted keys alone: its parent branch sits at the longer of
    its common prefixes with the two neighbouring keys, d nibbles, so the leaf holds key[d+1:] (hex-prefix) and
    the value. All leaves are encoded into one buffer and hashed together on full lanes, then the builder gets
    each leaf's reference (ST_REF) at its path key[:d+1] and only builds the branches above."""
    cdef Py_ssize_t n = len(ks), i, count = 0
    cdef size_t nk, vl, s, d, left = 0, right, c, size, total = 0, start
    cdef const uint8_t *kb
    cdef const uint8_t *vb
    cdef uint8_t *o
    cdef uint8_t ref[HASH_REF_SIZE]
    cdef int rc = 0
    cdef size_t *paths = NULL       # s_i: the leaf's path length in nibbles (d + 1)
    cdef size_t *offs = NULL        # where leaf i's encoding starts in enc (its end: offs[i + 1])
    cdef uint8_t *enc = NULL
    cdef const uint8_t **hptrs = NULL
    cdef size_t *hlens = NULL
    cdef uint8_t *digests = NULL
    cdef uint8_t nib_inline[INLINE_HEX_KEY]
    cdef uint8_t *nib = nib_inline
    cdef size_t cap = INLINE_HEX_KEY
    cdef void *grown
    cdef STBuilder b
    st_init(&b, keccak_backend_number())
    try:
        paths = <size_t *>PyMem_Malloc(n * sizeof(size_t))
        offs = <size_t *>PyMem_Malloc((n + 1) * sizeof(size_t))
        if paths == NULL or offs == NULL:
            raise MemoryError()
        # Pass 1: each leaf's path length and encoded size.
        for i in range(n):
            kb = <const uint8_t *>PyBytes_AS_STRING(<bytes>ks[i])
            nk = <size_t>PyBytes_GET_SIZE(<bytes>ks[i])
            if i < n - 1:
                right = _nibble_lcp(kb, nk, <const uint8_t *>PyBytes_AS_STRING(<bytes>ks[i + 1]),
                                    <size_t>PyBytes_GET_SIZE(<bytes>ks[i + 1]))
            else:
                right = 0
            d = left if left > right else right
            left = right
            s = d + 1
            paths[i] = s
            # Hex-prefix of the s.. nibbles (a leaf): a flag byte (holding the first nibble when odd), then bytes.
            c = 1 + nk - (s + 1) // 2
            vb = <const uint8_t *>PyBytes_AS_STRING(<bytes>vs[i])
            vl = <size_t>PyBytes_GET_SIZE(<bytes>vs[i])
            size = <size_t>short_node_size(c, string_size(vb, vl))
            offs[i] = total
            total += size
            if size >= HASH_LENGTH:
                count += 1
        offs[n] = total
        enc = <uint8_t *>PyMem_Malloc(total if total else 1)
        hptrs = <const uint8_t **>PyMem_Malloc((count if count else 1) * sizeof(uint8_t *))
        hlens = <size_t *>PyMem_Malloc((count if count else 1) * sizeof(size_t))
        digests = <uint8_t *>PyMem_Malloc((count if count else 1) * HASH_LENGTH)
        if enc == NULL or hptrs == NULL or hlens == NULL or digests == NULL:
            raise MemoryError()
        # Pass 2: the encodings, and the list of those to hash.
        count = 0
        for i in range(n):
            kb = <const uint8_t *>PyBytes_AS_STRING(<bytes>ks[i])
            nk = <size_t>PyBytes_GET_SIZE(<bytes>ks[i])
            vb = <const uint8_t *>PyBytes_AS_STRING(<bytes>vs[i])
            vl = <size_t>PyBytes_GET_SIZE(<bytes>vs[i])
            s = paths[i]
            o = enc + offs[i]
            o += write_short_head(o, 1 + nk - (s + 1) // 2, string_size(vb, vl))
            o += write_compact_keybytes(kb, s, 2 * nk, True, o)
            put_string(o, vb, vl)
            if offs[i + 1] - offs[i] >= HASH_LENGTH:
                hptrs[count] = enc + offs[i]
                hlens[count] = offs[i + 1] - offs[i]
                count += 1
        # With the GIL, as the key-by-key builder runs (docs/threads.rst lists what releases it).
        mpt_keccak256_many(b.backend, hptrs, hlens, <size_t>count, digests)
        # Pass 3: the references, at their paths, into the builder.
        write_hash_ref_header(ref)
        count = 0
        for i in range(n):
            kb = <const uint8_t *>PyBytes_AS_STRING(<bytes>ks[i])
            s = paths[i]
            if s + 1 > cap:
                grown = PyMem_Realloc(NULL if nib == nib_inline else nib, s + 1)
                if grown == NULL:
                    raise MemoryError()
                nib = <uint8_t *>grown
                cap = s + 1
            # The path's nibbles, a pair per key byte (an odd path writes one nibble past its end: unused).
            for start in range((s + 1) // 2):
                memcpy(nib + 2 * start, &_NIBBLE_PAIRS[kb[start]], 2)
            if offs[i + 1] - offs[i] >= HASH_LENGTH:
                memcpy(ref + 1, digests + count * HASH_LENGTH, HASH_LENGTH)
                count += 1
                rc = st_add_nibbles(&b, nib, s, ST_REF, ref, HASH_REF_SIZE)
            else:
                rc = st_add_nibbles(&b, nib, s, ST_REF, enc + offs[i], offs[i + 1] - offs[i])
            if rc != 0:
                break
        _finish_against(&b, rc, root_hash)
    finally:
        st_free(&b)
        PyMem_Free(paths)
        PyMem_Free(offs)
        PyMem_Free(enc)
        PyMem_Free(hptrs)
        PyMem_Free(hlens)
        PyMem_Free(digests)
        if nib != nib_inline:
            PyMem_Free(nib)
    return False


cdef object _verify_whole_range(bytes root_hash, list ks, list vs):
    """No proof: the entries must be the whole trie. Their root comes from the C StackTrie builder straight
    from the lists (checked ascending, prefix-free, no empty value): no Python call per key."""
    cdef STBuilder b
    cdef Py_ssize_t i, j, n = len(ks), nk, cap = INLINE_HEX_KEY
    cdef int rc = 0
    cdef bytes k, v
    cdef const uint8_t *kb
    cdef uint8_t nib_inline[INLINE_HEX_KEY]
    cdef uint8_t *nib = nib_inline
    cdef void *grown
    st_init(&b, keccak_backend_number())
    try:
        for i in range(n):
            k = <bytes>ks[i]
            v = <bytes>vs[i]
            nk = PyBytes_GET_SIZE(k)
            if 2 * nk > cap:
                grown = PyMem_Realloc(NULL if nib == nib_inline else nib, 2 * nk)
                if grown == NULL:
                    raise MemoryError()
                nib = <uint8_t *>grown
                cap = 2 * nk
            # Two nibbles per key byte from a table: one 16-bit store each (st_add_key's loop does two stores
            # through the builder's pointer, reloaded after each).
            kb = <const uint8_t *>PyBytes_AS_STRING(k)
            for j in range(nk):
                memcpy(nib + 2 * j, &_NIBBLE_PAIRS[kb[j]], 2)
            # The lists hold every key and value alive: the builder's borrowed pending value stays valid.
            rc = st_add_nibbles(&b, nib, <size_t>(2 * nk), ST_LEAF, <const uint8_t *>PyBytes_AS_STRING(v),
                                <size_t>PyBytes_GET_SIZE(v))
            if rc != 0:
                break
        _finish_against(&b, rc, root_hash)
    finally:
        st_free(&b)
        if nib != nib_inline:
            PyMem_Free(nib)
    return False


def verify_range_proof(root, first_key, keys, values, proof):
    """Check that keys/values are exactly the trie's entries from first_key up to the last key (no gaps).

    proof holds the edge proofs of first_key and of the last key (None when the range is the whole trie).
    Returns whether the trie has more entries to the right. Raises ProofError otherwise (geth semantics).
    """
    cdef bytes root_hash = root_bytes(root)
    cdef list ks = _bytes_list(keys, "key")
    cdef list vs = _bytes_list(values, "value")
    cdef bytes first = as_bytes(first_key, "first_key")
    cdef Py_ssize_t i, n = len(ks)
    cdef ProofSet ps
    cdef tuple blobs
    cdef int order
    cdef Trie t
    cdef Node tree
    cdef list value_out
    cdef bytes last, have, first_hex, last_hex
    if n != len(vs):
        raise ProofError("inconsistent proof data, keys: %d, values: %d" % (n, len(vs)))
    for i in range(n):
        if i < n - 1:
            order = _key_order(<bytes>ks[i], <bytes>ks[i + 1])
            if order > 0:
                raise ProofError("range is not monotonically increasing")
            if order < 0:
                raise ProofError("range contains path prefixes")
        if PyBytes_GET_SIZE(<bytes>vs[i]) == 0:
            raise ProofError("range contains deletion")
    if proof is None:
        if n >= BATCHED_LEAVES_MIN:
            return _verify_whole_range_batched(root_hash, ks, vs)
        return _verify_whole_range(root_hash, ks, vs)
    blobs = proof_blobs(proof)
    value_out = []
    cdef const uint8_t *rh = <const uint8_t *>PyBytes_AS_STRING(root_hash)
    try:
        proofset_init(&ps, blobs)
        if n == 0:
            first_hex = hex_key(first)
            tree = _proof_to_path(rh, None, first_hex, &ps, True, value_out)
            if value_out or _has_right_element(tree, first_hex):
                raise ProofError("more entries available")
            return False
        last = ks[n - 1]
        if n == 1 and first == last:
            first_hex = hex_key(first)
            tree = _proof_to_path(rh, None, first_hex, &ps, False, value_out)
            if value_out[0] != vs[0]:
                raise ProofError("correct proof but invalid data")
            return _has_right_element(tree, first_hex)
        if first >= last:
            raise ProofError("invalid edge keys")
        if ks[0] < first:
            # geth accepts real entries left of first_key (they re-insert unchanged, unchecked for gaps); the
            # claim is "exactly the entries from first_key on", so they are refused.
            raise ProofError("range starts before first_key")
        if PyBytes_GET_SIZE(first) != PyBytes_GET_SIZE(last):
            raise ProofError("inconsistent edge keys (%d != %d)" % (PyBytes_GET_SIZE(first), PyBytes_GET_SIZE(last)))
        first_hex = hex_key(first)
        last_hex = hex_key(last)
        tree = _proof_to_path(rh, None, first_hex, &ps, True, value_out, last_hex, True)
        tree = _proof_to_path(rh, tree, last_hex, &ps, True, value_out, first_hex, False)
        # The rebuilt tree is the trie's own (changed in place, nothing tracked) over the module's empty
        # database: a hash node the range reaches raises MissingNodeError. Never committed.
        t = Trie.new_private(None if _unset_internal(tree, first_hex, last_hex) else tree, _NO_NODES)
        tree = None
        for i in range(n):
            # Checked above: bytes, and no value is empty (an update, never a delete).
            # The edge keys' hex forms exist already (ks[0] may lie right of first: then it is hexed here).
            if i == n - 1:
                t.update_path(last_hex, ValueNode.new(<bytes>vs[i]))
            elif i == 0 and <bytes>ks[0] == first:
                t.update_path(first_hex, ValueNode.new(<bytes>vs[i]))
            else:
                t.update_path(hex_key(<bytes>ks[i]), ValueNode.new(<bytes>vs[i]))
        _proofset_build_known(&ps)
        have = _hash_rebuilt(t.nodes_root(), &ps) if t.nodes_root() is not None else t.hash()
        if have != root_hash:
            raise ProofError("invalid proof, want hash %s, got %s" % (root_hash.hex(), have.hex()))
        return _has_right_element(t.nodes_root(), last_hex)
    except MissingNodeError as e:
        raise ProofError("invalid proof: the range reaches node %s that the proof does not hold"
                         % (e.node_hash.hex() if e.node_hash else "?")) from None
    finally:
        proofset_free(&ps)
