# cython: language_level=3
"""Merkle proofs (geth trie/proof.go): prove, verify_proof, verify_range_proof.

A proof is a list of node encodings. Verification looks nodes up by the keccak256 it computes itself, so the
order of a proof does not matter and a caller cannot make a node stand in for another.
"""
cimport cython
from cpython.buffer cimport PyObject_CheckBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_AsTuple, PyList_GET_SIZE, PyList_GetSlice
from cpython.ref cimport PyObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from mpt._keccak.keccak cimport mpt_keccak256_many, mpt_keccak_backend_lanes
from mpt.encoding cimport COMPACT_LEAF_FLAG, COMPACT_ODD_FLAG, TERMINATOR, keybytes_to_hex_c, prefix_length
from mpt.hasher cimport Hasher, HasherPool, KnownEncodings, default_pool, known_key
from mpt.runtime cimport hash_threads, keccak_backend_number
from mpt.rlp cimport RLPItem, read_item_fast
from mpt.node cimport FullNode, HashNode, Node, ShortNode, ValueNode, decode_node_c
from mpt.stacktrie cimport ST_LEAF, ST_REF, STBuilder, st_add_nibbles, st_finish_root, st_free, st_init
from mpt.trie cimport Trie, check_bytes

from mpt.errors import MissingNodeError, NodeDecodeError, ProofError, RLPDecodeError

cdef enum:
    HASH_LENGTH = 32

cdef bytes _EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")


from mpt.db.memory import MemoryDB
cdef object _NO_NODES = MemoryDB()          # verify_range_proof's rebuilt tries read from it, nothing writes


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


cdef enum:
    BRANCH_WIDTH = 17
    # Proofs up to this many nodes are looked up without allocating (a path of a 2**32-entry trie has ~9).
    INLINE_PROOF_NODES = 16
    # Above this many nodes a lookup goes through an open-addressing table instead of a scan.
    LINEAR_LOOKUP_MAX = 16
    # Hex keys (2 nibbles a byte + terminator) of keys up to 64 bytes live on the C stack.
    INLINE_HEX_KEY = 129
    # verify_proof reads a list of up to this many nodes in place (no tuple copy); more are hashed without the
    # GIL, when another thread could change a list: those come as a tuple.
    LIST_PROOF_MAX = 64
    # The payload of a branch holding 16 hashes and an empty value.
    FULL_BRANCH_PAYLOAD = 16 * (HASH_LENGTH + 1) + 1


ctypedef struct ProofSet:
    # The supplied node encodings, each hashed once (in one multi-lane Keccak batch) and looked up by that
    # hash: no bytes object per hash, no dict. The pointers look into the bytes objects of a tuple the caller
    # holds for as long as the set lives.
    const uint8_t **data
    size_t *lengths
    uint8_t *digests            # 32 bytes per node
    int32_t *table              # n > LINEAR_LOOKUP_MAX: node indices by digest prefix, -1 where empty
    Py_ssize_t n
    Py_ssize_t mask             # table size - 1
    Py_ssize_t next_index       # proofs usually come root first: the node after the last found is tried first
    KnownEncodings known        # the same nodes by encoding, for the hasher (verify_range_proof); table NULL until built
    const uint8_t *data_inline[INLINE_PROOF_NODES]
    size_t lengths_inline[INLINE_PROOF_NODES]
    uint8_t digests_inline[INLINE_PROOF_NODES * HASH_LENGTH]


cdef inline str _proof_type_message(object proof):
    return "proof must be an iterable of node encodings, not %s" % type(proof).__name__


cdef tuple _converted_blobs(tuple blobs):
    cdef list out = []
    for blob in blobs:
        if type(blob) is not bytes:
            if PyObject_CheckBuffer(blob) and not isinstance(blob, str):   # any bytes-like object, as hashlib
                blob = bytes(memoryview(blob).cast("B"))
            else:
                raise TypeError("proof nodes must be bytes-like, not %s" % type(blob).__name__)
        out.append(blob)
    return tuple(out)


cdef tuple _proof_blobs(object proof):
    """The proof's node encodings as a tuple of bytes: it owns every encoding while C pointers look into them
    (a list could change under us if anything ran Python code)."""
    cdef tuple blobs
    if type(proof) is tuple:
        blobs = <tuple>proof
    elif type(proof) is list:
        blobs = PyList_AsTuple(proof)
    else:
        if proof is None or isinstance(proof, (bytes, bytearray, memoryview, str)):
            raise TypeError(_proof_type_message(proof))
        if hasattr(proof, "items"):
            blobs = tuple([v for _, v in proof.items()])   # a proof database: the caller's keys are not trusted
        else:
            try:
                it = iter(proof)
            except TypeError:
                raise TypeError(_proof_type_message(proof)) from None
            blobs = tuple(it)
    for blob in blobs:
        if type(blob) is not bytes:
            return _converted_blobs(blobs)
    return blobs


cdef inline uint64_t _digest_slot(const uint8_t *digest) noexcept:
    cdef uint64_t v
    memcpy(&v, digest, 8)
    return v


cdef int _proofset_init(ProofSet *ps, object blobs) except -1:
    """blobs: a tuple of bytes, or (verify_proof, at most LIST_PROOF_MAX nodes) a list of bytes that no Python
    code runs on while the set is in use."""
    cdef Py_ssize_t n = PySequence_Fast_GET_SIZE(blobs), i, j, size, slot
    cdef int backend
    cdef PyObject *blob
    ps.n = n
    ps.table = NULL
    ps.mask = 0
    ps.next_index = 0
    ps.data = ps.data_inline
    ps.lengths = ps.lengths_inline
    ps.digests = ps.digests_inline
    if n > INLINE_PROOF_NODES:
        ps.data = <const uint8_t **>PyMem_Malloc(n * sizeof(uint8_t *))
        ps.lengths = <size_t *>PyMem_Malloc(n * sizeof(size_t))
        ps.digests = <uint8_t *>PyMem_Malloc(n * HASH_LENGTH)
        if ps.data == NULL or ps.lengths == NULL or ps.digests == NULL:
            raise MemoryError()
    for i in range(n):
        blob = PySequence_Fast_GET_ITEM(blobs, i)
        ps.data[i] = <const uint8_t *>PyBytes_AS_STRING(<object>blob)
        ps.lengths[i] = <size_t>PyBytes_GET_SIZE(<object>blob)
    backend = keccak_backend_number()
    if mpt_keccak_backend_lanes(backend) < n <= INLINE_PROOF_NODES:
        # Longest first (insertion sort): the lanes start the long chains (a branch is 4 Keccak blocks) together
        # and fill up with the short ones, instead of finishing a long one alone at the end. When every node
        # has a lane of its own they all start at once anyway: the proof's order stays, and with it the root-
        # first order _proofset_find tries first (and the sort's mispredicted compares are saved).
        for i in range(1, n):
            j = i
            while j > 0 and ps.lengths[j - 1] < ps.lengths[j]:
                ps.lengths[j - 1], ps.lengths[j] = ps.lengths[j], ps.lengths[j - 1]
                ps.data[j - 1], ps.data[j] = ps.data[j], ps.data[j - 1]
                j -= 1
    if n > LIST_PROOF_MAX:
        with nogil:                                 # the tuple keeps every encoding alive
            mpt_keccak256_many(backend, ps.data, ps.lengths, <size_t>n, ps.digests)
    else:
        mpt_keccak256_many(backend, ps.data, ps.lengths, <size_t>n, ps.digests)
    if n > LINEAR_LOOKUP_MAX:
        size = 1
        while size < 2 * n:
            size <<= 1
        ps.table = <int32_t *>PyMem_Malloc(size * sizeof(int32_t))
        if ps.table == NULL:
            raise MemoryError()
        memset(ps.table, 0xff, size * sizeof(int32_t))
        ps.mask = size - 1
        for i in range(n):
            slot = <Py_ssize_t>(_digest_slot(ps.digests + i * HASH_LENGTH) & <uint64_t>ps.mask)
            while ps.table[slot] >= 0 and memcmp(ps.digests + ps.table[slot] * HASH_LENGTH,
                                                 ps.digests + i * HASH_LENGTH, HASH_LENGTH) != 0:
                slot = (slot + 1) & ps.mask
            if ps.table[slot] < 0:
                ps.table[slot] = <int32_t>i          # a repeated node keeps its first index
    return 0


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


cdef void _proofset_free(ProofSet *ps) noexcept:
    if ps.data != ps.data_inline:
        PyMem_Free(ps.data)
    if ps.lengths != ps.lengths_inline:
        PyMem_Free(ps.lengths)
    if ps.digests != ps.digests_inline:
        PyMem_Free(ps.digests)
    PyMem_Free(ps.table)
    PyMem_Free(ps.known.table)
    ps.known.table = NULL
    ps.data = ps.data_inline
    ps.lengths = ps.lengths_inline
    ps.digests = ps.digests_inline
    ps.table = NULL


cdef Py_ssize_t _proofset_find(ProofSet *ps, const uint8_t *wanted) noexcept:
    """Index of a node whose keccak256 is wanted, or -1."""
    cdef Py_ssize_t i = ps.next_index, slot
    cdef int32_t j
    if i < ps.n and memcmp(ps.digests + i * HASH_LENGTH, wanted, HASH_LENGTH) == 0:
        ps.next_index = i + 1
        return i
    if ps.table == NULL:
        for i in range(ps.n):
            if memcmp(ps.digests + i * HASH_LENGTH, wanted, HASH_LENGTH) == 0:
                ps.next_index = i + 1
                return i
        return -1
    slot = <Py_ssize_t>(_digest_slot(wanted) & <uint64_t>ps.mask)
    while True:
        j = ps.table[slot]
        if j < 0:
            return -1
        if memcmp(ps.digests + j * HASH_LENGTH, wanted, HASH_LENGTH) == 0:
            ps.next_index = j + 1
            return j
        slot = (slot + 1) & ps.mask


cdef str _missing_message(const uint8_t *wanted, Py_ssize_t index):
    cdef str h = PyBytes_FromStringAndSize(<const char *>wanted, HASH_LENGTH).hex()
    if index == 0:
        return "proof node 0 missing: no supplied node hashes to the root hash %s" % h
    return ("proof node %d missing: no supplied node hashes to %s, the child hash in proof node %d"
            % (index, h, index - 1))


# Node checks without node objects: the rules of mpt.node's decoder (strict RLP, geth's node rules and the
# stricter compact keys), as C functions that answer yes or no. On "no" the real decoder runs on the same bytes
# to raise its exact NodeDecodeError; tests/test_proof.py checks that both accept exactly the same encodings.

ctypedef struct NodeItems:
    # The items of one checked node encoding, in order: 2 for a short node, 17 for a branch.
    RLPItem items[BRANCH_WIDTH]
    Py_ssize_t starts[BRANCH_WIDTH]     # where each item's header starts
    int count


cdef inline bint _compact_ok(const uint8_t *compact, Py_ssize_t n) noexcept:
    """compact_to_hex_c's checks: not empty, flag <= 3, zero pad nibble in an even key."""
    cdef uint8_t flag
    if n == 0:
        return False
    flag = compact[0] >> 4
    if flag > 3:
        return False
    return (flag & COMPACT_ODD_FLAG) or not (compact[0] & 0x0f)


cdef bint _ref_ok(const uint8_t *data, RLPItem *item, Py_ssize_t start) noexcept:
    """A child reference (mpt.node's _decode_ref) that decodes: empty, a 32-byte hash or a small embedded node."""
    cdef NodeItems inner
    cdef RLPItem k, v
    if item.is_list:
        if item.end - start >= HASH_LENGTH:
            return False
        # An embedded leaf (a branch of short keys holds up to 16): its two items checked here, without the
        # general scan and its 17-item buffers. Anything else takes _scan_node.
        if (read_item_fast(data, item.payload_offset, item.end, &k) and not k.is_list
                and read_item_fast(data, k.end, item.end, &v) and v.end == item.end
                and _compact_ok(data + k.payload_offset, k.payload_length)
                and (data[k.payload_offset] >> 4) & COMPACT_LEAF_FLAG):
            return not v.is_list and v.payload_length != 0
        return _scan_node(data, start, item.end, &inner)
    return item.payload_length == 0 or item.payload_length == HASH_LENGTH


cdef extern from *:
    """
    /* How many of p[0..8) are 0x80 (an empty RLP string) before the first other byte: one load instead of a
       chain of dependent ones over a sparse branch's empty slots. */
    static inline int mpt_proof_empty_run(const unsigned char *p) {
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && \
        __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        unsigned long long w;
        memcpy(&w, p, 8);
        w ^= 0x8080808080808080ULL;
        return w ? __builtin_ctzll(w) >> 3 : 8;
    #else
        int n = 0;
        while (n < 8 && p[n] == 0x80)
            n++;
        return n;
    #endif
    }
    """
    int _empty_run "mpt_proof_empty_run"(const uint8_t *p) noexcept nogil


cdef bint _scan_node(const uint8_t *data, Py_ssize_t start, Py_ssize_t end, NodeItems *out) noexcept:
    """Whether data[start:end] decodes as a node (mpt.node's _decode_at, embedded nodes included); fills out
    with its items."""
    cdef RLPItem outer
    cdef RLPItem *item
    cdef Py_ssize_t pos, step
    cdef int c = 0, i, run
    cdef uint8_t flag, b
    cdef uint32_t slow = 0                          # bit i: item i is neither empty nor a 32-byte string
    if not read_item_fast(data, start, end, &outer) or not outer.is_list or outer.end != end:
        return False
    pos = outer.payload_offset
    if outer.payload_length == FULL_BRANCH_PAYLOAD and data[pos + 16 * (HASH_LENGTH + 1)] == 0x80:
        # A branch with 16 hash children and no value (most branches near a big trie's root): every item is
        # at a known place, so the checks are 16 independent loads instead of a chain where each item's
        # position waits for the previous item's header.
        b = 0
        for i in range(16):
            b |= data[pos + i * (HASH_LENGTH + 1)] ^ 0xa0
        if b == 0:
            for i in range(BRANCH_WIDTH):
                item = &out.items[i]
                out.starts[i] = pos + i * (HASH_LENGTH + 1)
                item.is_list = False
                item.payload_offset = pos + i * (HASH_LENGTH + 1) + 1
                item.payload_length = HASH_LENGTH if i < 16 else 0
                item.end = item.payload_offset + item.payload_length
            out.count = BRANCH_WIDTH
            return True
    while pos < outer.end:
        if c == BRANCH_WIDTH:
            return False
        item = &out.items[c]
        out.starts[c] = pos
        b = data[pos]
        if b == 0x80 and pos + 8 <= outer.end:
            # A run of empty slots (most of a sparse branch), up to 8 at once.
            run = _empty_run(data + pos)
            if run > BRANCH_WIDTH - c:
                run = BRANCH_WIDTH - c              # too many items: the c == BRANCH_WIDTH check refuses it
            for i in range(run):
                item = &out.items[c + i]
                out.starts[c + i] = pos + i
                item.is_list = False
                item.payload_offset = pos + i + 1
                item.payload_length = 0
                item.end = pos + i + 1
            pos += run
            c += run
            continue
        if (b & 0xdf) == 0x80:
            # An empty string or a hash (most items of a branch): a valid child reference as it is. The next
            # position is one add away (this loop is a chain of dependent loads: it was ~15% of a verification,
            # its checks mispredicting on the random empty/hash pattern); an item running past the list shows
            # as pos != outer.end after the loop.
            step = b & 0x20
            item.is_list = False
            item.payload_offset = pos + 1
            item.payload_length = step
            pos += 1 + step
            item.end = pos
        else:
            if not read_item_fast(data, pos, outer.end, item):
                return False
            slow |= (<uint32_t>1) << c
            pos = item.end
        c += 1
    if pos != outer.end:
        return False
    out.count = c
    if c == 2:
        item = &out.items[0]
        if item.is_list or not _compact_ok(data + item.payload_offset, item.payload_length):
            return False
        flag = data[item.payload_offset] >> 4
        if flag & COMPACT_LEAF_FLAG:
            return not out.items[1].is_list and out.items[1].payload_length != 0
        if item.payload_length == 1 and not (flag & COMPACT_ODD_FLAG):
            return False                            # an extension with an empty key
        item = &out.items[1]
        if not item.is_list and item.payload_length == 0:
            return False                            # an extension without a child
        return _ref_ok(data, item, out.starts[1])
    if c == BRANCH_WIDTH:
        for i in range(16):
            if (slow >> i) & 1 and not _ref_ok(data, &out.items[i], out.starts[i]):
                return False
        return not out.items[16].is_list
    return False


cdef int _raise_bad_node(const uint8_t *data, Py_ssize_t length, const uint8_t *digest, Py_ssize_t index) except -1:
    """The node failed _scan_node: let the decoder say why, as a ProofError."""
    cdef str why = "rejected by the node checks"
    # Copies first (bytes objects: no garbage collection, no Python code): data and digest may point into the
    # caller's list, which code run by the decoder (a finalizer) could change.
    cdef bytes node = PyBytes_FromStringAndSize(<const char *>data, length)
    cdef bytes node_hash = PyBytes_FromStringAndSize(<const char *>digest, HASH_LENGTH)
    try:
        decode_node_c(None, <const unsigned char *>PyBytes_AS_STRING(node), length)
    except NodeDecodeError as e:
        why = str(e)
    raise ProofError("bad proof node %d (hash %s): %s" % (index, node_hash.hex(), why))


cdef inline bint _compact_matches(const uint8_t *compact, Py_ssize_t n, const uint8_t *hexkey, Py_ssize_t klen,
                                  Py_ssize_t *pos) noexcept:
    """Whether the hex form of a (checked) compact key is a prefix of hexkey[pos:]; advances pos past it."""
    cdef uint8_t flag = compact[0] >> 4
    cdef Py_ssize_t nibbles = 2 * (n - 1) + (flag & COMPACT_ODD_FLAG) + ((flag & COMPACT_LEAF_FLAG) >> 1)
    cdef const uint8_t *q = hexkey + pos[0]
    cdef Py_ssize_t i
    if klen - pos[0] < nibbles:
        return False
    if flag & COMPACT_ODD_FLAG:
        if q[0] != (compact[0] & 0x0f):
            return False
        q += 1
    for i in range(1, n):
        if q[0] != (compact[i] >> 4) or q[1] != (compact[i] & 0x0f):
            return False
        q += 2
    if (flag & COMPACT_LEAF_FLAG) and q[0] != TERMINATOR:
        return False
    pos[0] += nibbles
    return True


cdef object _walk_proof(ProofSet *ps, const uint8_t *root, const uint8_t *hexkey, Py_ssize_t klen):
    """geth's VerifyProof straight on the encodings: the value, or None for a proven absence."""
    cdef const uint8_t *wanted = root
    cdef const uint8_t *data
    cdef Py_ssize_t index = 0, found, pos = 0, length
    cdef NodeItems node
    cdef RLPItem *item
    cdef int nib, i
    while True:
        found = _proofset_find(ps, wanted)
        if found < 0:
            raise ProofError(_missing_message(wanted, index))
        data = ps.data[found]
        length = <Py_ssize_t>ps.lengths[found]
        if not _scan_node(data, 0, length, &node):
            _raise_bad_node(data, length, wanted, index)
        while True:                                 # this node, then the nodes embedded in it along the key
            if node.count == 2:
                item = &node.items[0]
                if not _compact_matches(data + item.payload_offset, item.payload_length, hexkey, klen, &pos):
                    return None
                i = 1
                item = &node.items[1]
                if (data[node.items[0].payload_offset] >> 4) & COMPACT_LEAF_FLAG:
                    return PyBytes_FromStringAndSize(<const char *>data + item.payload_offset, item.payload_length)
            else:
                if pos >= klen:
                    raise ProofError("proof path runs past the end of the key")
                i = hexkey[pos]
                pos += 1
                item = &node.items[i]
                if i == 16 or (not item.is_list and item.payload_length == 0):
                    if item.payload_length == 0:
                        return None
                    return PyBytes_FromStringAndSize(<const char *>data + item.payload_offset, item.payload_length)
            if item.is_list:                        # an embedded node: walk on inside this encoding (checked)
                _scan_node(data, node.starts[i], item.end, &node)
                continue
            wanted = data + item.payload_offset     # a 32-byte hash (checked)
            index += 1
            break


def verify_proof(root, key, proof):
    """The value for key proven by proof under root, or None when the proof shows the key is absent.

    Raises ProofError naming the failing node when the proof shows neither. Each supplied node is hashed once
    and the path is walked on the encodings themselves: no node objects are built.
    """
    cdef bytes wanted = _root_bytes(root)
    cdef bytes keyb = check_bytes(key, "key")
    cdef object blobs = proof
    cdef ProofSet ps
    cdef uint8_t hex_inline[INLINE_HEX_KEY]
    cdef uint8_t *hexkey = hex_inline
    cdef Py_ssize_t n = PyBytes_GET_SIZE(keyb), klen = 2 * n + 1, i
    cdef const uint8_t *kb = <const uint8_t *>PyBytes_AS_STRING(keyb)
    # A list of bytes is read in place (no tuple copy): from here to the end of the walk no Python code runs
    # but on error paths, which copy what they read first (_raise_bad_node, _missing_message).
    if type(proof) is list and PyList_GET_SIZE(proof) <= LIST_PROOF_MAX:
        for blob in <list>proof:
            if type(blob) is not bytes:
                blobs = _proof_blobs(proof)
                break
    else:
        blobs = _proof_blobs(proof)
    if memcmp(PyBytes_AS_STRING(wanted), PyBytes_AS_STRING(_EMPTY_ROOT), HASH_LENGTH) == 0:
        return None                                 # the empty trie holds no key: nothing more to prove
    if klen > INLINE_HEX_KEY:
        hexkey = <uint8_t *>PyMem_Malloc(klen)
        if hexkey == NULL:
            raise MemoryError()
    for i in range(n):
        hexkey[2 * i] = kb[i] >> 4
        hexkey[2 * i + 1] = kb[i] & 0x0f
    hexkey[2 * n] = TERMINATOR
    ps.data = ps.data_inline
    ps.lengths = ps.lengths_inline
    ps.digests = ps.digests_inline
    ps.table = NULL
    ps.known.table = NULL
    try:
        _proofset_init(&ps, blobs)
        return _walk_proof(&ps, <const uint8_t *>PyBytes_AS_STRING(wanted), hexkey, klen)
    finally:
        _proofset_free(&ps)
        if hexkey != hex_inline:
            PyMem_Free(hexkey)


# ------------------------------------------------------------------------------------------------ ranges

cdef Node _resolve_node(ProofSet *ps, const uint8_t *wanted, Py_ssize_t index):
    """The supplied node hashing to wanted, decoded (its hash cached in it)."""
    cdef Py_ssize_t found = _proofset_find(ps, wanted), length
    cdef Node n
    if found < 0:
        raise ProofError(_missing_message(wanted, index))
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
    """_resolve_node, but a branch is built from _scan_node's items (cheaper than the general decoder), leaving
    out the children in drop (bit i: nibble i): those _unset_internal would remove again, so their nodes are
    never made. The node is checked whole all the same (_scan_node accepts exactly what the decoder does):
    anything it refuses, and a short node, takes _resolve_node, with its exact errors."""
    cdef Py_ssize_t found, length
    cdef NodeItems items
    cdef const uint8_t *data
    cdef FullNode fn
    cdef RLPItem *item
    cdef int i
    found = _proofset_find(ps, wanted)
    if found < 0:
        return _resolve_node(ps, wanted, index)
    data = <const uint8_t *>ps.data[found]
    length = <Py_ssize_t>ps.lengths[found]
    if length < HASH_LENGTH or not _scan_node(data, 0, length, &items) or items.count != BRANCH_WIDTH:
        return _resolve_node(ps, wanted, index)
    fn = FullNode.new()
    for i in range(16):
        item = &items.items[i]
        if (drop >> i) & 1:
            continue
        if item.is_list:
            # An embedded node, checked by _scan_node: decoded as mpt.node's _decode_ref does.
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


cdef int _unset_internal(Node n, bytes left, bytes right) except -1:
    """Drop every reference strictly between the two edge paths; returns 1 when the whole trie goes."""
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


cdef Node _range_insert(Trie t, Node n, bytes hexkey, Py_ssize_t pos, Node value):
    """Trie._insert for the tree a range proof rebuilds: nothing else holds its nodes, so they change in place
    (no copies, no paths to track), and key tails are made straight from the key's bytes, not through slice
    objects. A hash node (the range reaching past the proof) and anything odd take t._insert, as before."""
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(hexkey), matchlen, nk
    cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(hexkey)
    cdef const uint8_t *sk
    cdef ShortNode sn
    cdef FullNode fn, branch
    cdef bint changed = False
    cdef int idx
    if pos == klen:
        return value
    if n is None:
        return ShortNode.new(PyBytes_FromStringAndSize(<const char *>k + pos, klen - pos), value)
    if type(n) is ShortNode:
        sn = <ShortNode>n
        sk = <const uint8_t *>PyBytes_AS_STRING(sn.key)
        nk = PyBytes_GET_SIZE(sn.key)
        matchlen = prefix_length(sk, nk, k + pos, klen - pos)
        if matchlen == nk:
            sn.set_val(_range_insert(t, sn.val, hexkey, pos + nk, value))
            _touch(sn)
            return sn
        # The keys diverge inside this node: a branch at the divergence point, behind an extension for the
        # common part if there is one.
        branch = FullNode.new()
        branch.set_child(sk[matchlen], _range_insert(t, None, sn.key, matchlen + 1, sn.val))
        branch.set_child(k[pos + matchlen], _range_insert(t, None, hexkey, pos + matchlen + 1, value))
        if matchlen == 0:
            return branch
        return ShortNode.new(PyBytes_FromStringAndSize(<const char *>k + pos, matchlen), branch)
    if type(n) is FullNode:
        fn = <FullNode>n
        idx = k[pos]
        fn.set_child(idx, _range_insert(t, fn.child(idx), hexkey, pos + 1, value))
        _touch(fn)
        return fn
    return t._insert(n, hexkey, pos, value, False, &changed)


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
            if not _has_prefix(hexkey, pos, sn.key):
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
    return [check_bytes(x, what) for x in items]


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


cdef inline size_t _rlp_header_size(size_t n) noexcept:
    cdef size_t size = 1
    if n < 56:
        return 1
    while n:
        size += 1
        n >>= 8
    return size


cdef inline uint8_t *_put_rlp_header(uint8_t *o, uint8_t base, size_t n) noexcept:
    """A string (base 0x80) or list (base 0xc0) header for n bytes of payload."""
    cdef size_t lb = _rlp_header_size(n) - 1, i
    if lb == 0:
        o[0] = <uint8_t>(base + n)
        return o + 1
    o[0] = <uint8_t>(base + 55 + lb)
    for i in range(lb):
        o[lb - i] = <uint8_t>(n >> (8 * i))
    return o + 1 + lb


cdef inline size_t _rlp_string_size(const uint8_t *d, size_t n) noexcept:
    if n == 1 and d[0] < 0x80:
        return 1
    return _rlp_header_size(n) + n


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
    cdef size_t nk, vl, s, d, left = 0, right, c, vsize, payload, total = 0, start
    cdef const uint8_t *kb
    cdef const uint8_t *vb
    cdef uint8_t *o
    cdef uint8_t ref[33]
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
            vsize = _rlp_string_size(vb, vl)
            payload = (1 if c == 1 else _rlp_header_size(c) + c) + vsize
            offs[i] = total
            total += _rlp_header_size(payload) + payload
            if _rlp_header_size(payload) + payload >= HASH_LENGTH:
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
            c = 1 + nk - (s + 1) // 2
            vsize = _rlp_string_size(vb, vl)
            payload = (1 if c == 1 else _rlp_header_size(c) + c) + vsize
            o = _put_rlp_header(enc + offs[i], 0xc0, payload)
            if c > 1:
                o = _put_rlp_header(o, 0x80, c)
            if s & 1:
                o[0] = <uint8_t>(0x30 | (kb[s // 2] & 0x0f))
            else:
                o[0] = 0x20
            o += 1
            memcpy(o, kb + (s + 1) // 2, c - 1)
            o += c - 1
            if vsize != vl:
                o = _put_rlp_header(o, 0x80, vl)
            memcpy(o, vb, vl)
            if offs[i + 1] - offs[i] >= HASH_LENGTH:
                hptrs[count] = enc + offs[i]
                hlens[count] = offs[i + 1] - offs[i]
                count += 1
        # With the GIL, as the key-by-key builder runs (docs/threads.rst lists what releases it).
        mpt_keccak256_many(b.backend, hptrs, hlens, <size_t>count, digests)
        # Pass 3: the references, at their paths, into the builder.
        ref[0] = 0xa0
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
                rc = st_add_nibbles(&b, nib, s, ST_REF, ref, 33)
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
    cdef bytes root_hash = _root_bytes(root)
    cdef list ks = _bytes_list(keys, "key")
    cdef list vs = _bytes_list(values, "value")
    cdef bytes first = check_bytes(first_key, "first_key")
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
    blobs = _proof_blobs(proof)
    value_out = []
    cdef const uint8_t *rh = <const uint8_t *>PyBytes_AS_STRING(root_hash)
    ps.data = ps.data_inline
    ps.lengths = ps.lengths_inline
    ps.digests = ps.digests_inline
    ps.table = NULL
    ps.known.table = NULL
    try:
        _proofset_init(&ps, blobs)
        if n == 0:
            first_hex = _hex(first)
            tree = _proof_to_path(rh, None, first_hex, &ps, True, value_out)
            if value_out or _has_right_element(tree, first_hex):
                raise ProofError("more entries available")
            return False
        last = ks[n - 1]
        if n == 1 and first == last:
            first_hex = _hex(first)
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
        first_hex = _hex(first)
        last_hex = _hex(last)
        tree = _proof_to_path(rh, None, first_hex, &ps, True, value_out, last_hex, True)
        tree = _proof_to_path(rh, tree, last_hex, &ps, True, value_out, first_hex, False)
        # A bare Trie (no __init__: no MemoryDB per call) over the module's empty database: the rebuilt tree
        # is only read (a hash node the range reaches raises MissingNodeError), never committed.
        t = Trie.__new__(Trie)
        t.db = _NO_NODES
        t.verify_reads = True
        t._touched = set()
        if not _unset_internal(tree, first_hex, last_hex):
            t.root = tree
        # The trie's slot must be the tree's only reference: _insert then sees the (touched, dirty) edge path as
        # owned and changes it in place, instead of copying the root's branch and path on every entry.
        tree = None
        for i in range(n):
            # Checked above: bytes, and no value is empty (an update, never a delete).
            # The edge keys' hex forms exist already (ks[0] may lie right of first: then it is hexed here).
            if i == n - 1:
                t.root = _range_insert(t, t.root, last_hex, 0, ValueNode.new(<bytes>vs[i]))
            elif i == 0 and <bytes>ks[0] == first:
                t.root = _range_insert(t, t.root, first_hex, 0, ValueNode.new(<bytes>vs[i]))
            else:
                t.root = _range_insert(t, t.root, _hex(<bytes>ks[i]), 0, ValueNode.new(<bytes>vs[i]))
        _proofset_build_known(&ps)
        have = _hash_rebuilt(t.root, &ps) if t.root is not None else t.hash()
        if have != root_hash:
            raise ProofError("invalid proof, want hash %s, got %s" % (root_hash.hex(), have.hex()))
        return _has_right_element(t.root, last_hex)
    except MissingNodeError as e:
        raise ProofError("invalid proof: the range reaches node %s that the proof does not hold"
                         % (e.node_hash.hex() if e.node_hash else "?")) from None
    finally:
        _proofset_free(&ps)
