# cython: language_level=3
"""Merkle proofs (geth trie/proof.go): prove, verify_proof, and the proof node set both verifiers share.

A proof is a list of node encodings. Verification looks nodes up by the keccak256 it computes itself, so the
order of a proof does not matter and a caller cannot make a node stand in for another. Range proofs are
verified in mpt.rangeproof (verify_range_proof is importable from here too).
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_AsTuple, PyList_GET_SIZE, PyList_GetSlice
from cpython.ref cimport PyObject
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.stdint cimport int32_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from mpt.core._keccak.keccak cimport mpt_keccak256_many, mpt_keccak_backend_lanes
from mpt.ethereum.encoding cimport (COMPACT_LEAF_FLAG, COMPACT_ODD_FLAG, TERMINATOR, keybytes_to_hex_c, prefix_length,
                                    write_hex)
from mpt.ethereum.hasher cimport Hasher, HasherPool, KnownEncodings, default_pool, known_key
from mpt.core.runtime cimport hash_threads, keccak_backend_number
from mpt.core.rlp cimport RLPItem, read_item_fast
from mpt.ethereum.arena cimport NodeArena
from mpt.ethereum.node cimport FullNode, HashNode, Node, ShortNode, ValueNode, decode_node_c
from mpt.ethereum.stacktrie cimport ST_LEAF, ST_REF, STBuilder, st_add_nibbles, st_finish_root, st_free, st_init
from mpt.core.bytes_like cimport as_bytes
from mpt.ethereum.trie cimport Trie

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.errors import MissingNodeError, NodeDecodeError, ProofError, RLPDecodeError
from mpt.ethereum.trie import register_walkers

cdef bytes _EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")


cdef bytes hex_key(bytes key):
    return keybytes_to_hex_c(<const uint8_t *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))


# ------------------------------------------------------------------------------------------------ prove

cdef list _path_nodes(Trie t, bytes hexkey):
    """The nodes from the root along hexkey, ending at the value or where the key leaves the trie."""
    cdef list nodes = []
    cdef Node n = t.nodes_root()
    cdef Py_ssize_t pos = 0, klen = PyBytes_GET_SIZE(hexkey)
    cdef ShortNode sn
    while pos < klen and n is not None:
        if type(n) is ShortNode:
            sn = <ShortNode>n
            nodes.append(n)
            if has_prefix(hexkey, pos, sn.key):
                pos += PyBytes_GET_SIZE(sn.key)
                n = sn.val
            else:
                n = None
        elif type(n) is FullNode:
            nodes.append(n)
            n = (<FullNode>n).child((<const uint8_t *>PyBytes_AS_STRING(hexkey))[pos])
            pos += 1
        elif type(n) is HashNode:
            n = t.resolve(<HashNode>n, hexkey, pos)
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
        start = h.buf.length()
        n.encode(h.buf)
        blob = h.buf.take_from(start)
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
    cdef NodeArena arena = t.arena
    cdef bytes k
    cdef HasherPool pool
    cdef Hasher h
    if arena is not None:
        # A fresh trie proves from its records, without turning them into node objects. The proof holds a share
        # of them, so that they stay as root_hash hashed them: a change of t while keys are read takes a copy.
        arena.holders += 1
        try:
            for key in keys:
                k = t.trie_key(key)
                arena.prove_into(<const uint8_t *>PyBytes_AS_STRING(k), PyBytes_GET_SIZE(k), out, seen, root_hash)
        finally:
            arena.holders -= 1
        return out
    pool = default_pool()
    h = pool.acquire()
    try:
        for key in keys:
            _append_proof(_path_nodes(t, hex_key(t.trie_key(key))), h, out, seen, root_hash)
    finally:
        pool.release(h)
    return out


# ------------------------------------------------------------------------------------------------ verify

cdef bytes root_bytes(object root):
    cdef bytes r = as_bytes(root, "root")
    if PyBytes_GET_SIZE(r) != HASH_LENGTH:
        raise ValueError("root must be a 32-byte hash, got %d bytes" % PyBytes_GET_SIZE(r))
    return r


cdef object get_child(Node n, bytes hexkey, Py_ssize_t *pos, bint skip_resolved):
    """geth's get(): step from n along hexkey; returns the child (None when the key is not there)."""
    cdef ShortNode sn
    while True:
        if n is None:
            return None
        if type(n) is ShortNode:
            sn = <ShortNode>n
            if not has_prefix(hexkey, pos[0], sn.key):
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


cdef inline str _proof_type_message(object proof):
    return "proof must be an iterable of node encodings, not %s" % type(proof).__name__


cdef tuple _converted_blobs(tuple blobs):
    cdef list out = []
    for blob in blobs:
        out.append(as_bytes(blob, "proof node"))
    return tuple(out)


cdef tuple proof_blobs(object proof):
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


cdef int proofset_init(ProofSet *ps, object blobs) except -1:
    """blobs: a tuple of bytes, or (verify_proof, at most LIST_PROOF_MAX nodes) a list of bytes that no Python
    code runs on while the set is in use. Whatever it raises, proofset_free(ps) is then safe: every pointer is
    set before anything can fail."""
    cdef Py_ssize_t n = PySequence_Fast_GET_SIZE(blobs), i, j, size, slot
    cdef int backend
    cdef PyObject *blob
    ps.n = n
    ps.table = NULL
    ps.known.table = NULL
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
        # first order proofset_find tries first (and the sort's mispredicted compares are saved).
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


cdef void proofset_free(ProofSet *ps) noexcept:
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


cdef Py_ssize_t proofset_find(ProofSet *ps, const uint8_t *wanted) noexcept:
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


cdef str missing_message(const uint8_t *wanted, Py_ssize_t index):
    cdef str h = PyBytes_FromStringAndSize(<const char *>wanted, HASH_LENGTH).hex()
    if index == 0:
        return "proof node 0 missing: no supplied node hashes to the root hash %s" % h
    return ("proof node %d missing: no supplied node hashes to %s, the child hash in proof node %d"
            % (index, h, index - 1))


# Node checks without node objects: the rules of mpt.node's decoder (strict RLP, geth's node rules and the
# stricter compact keys), as C functions that answer yes or no. On "no" the real decoder runs on the same bytes
# to raise its exact NodeDecodeError; tests/test_proof.py checks that both accept exactly the same encodings.

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
        # general scan and its 17-item buffers. Anything else takes scan_node.
        if (read_item_fast(data, item.payload_offset, item.end, &k) and not k.is_list
                and read_item_fast(data, k.end, item.end, &v) and v.end == item.end
                and _compact_ok(data + k.payload_offset, k.payload_length)
                and (data[k.payload_offset] >> 4) & COMPACT_LEAF_FLAG):
            return not v.is_list and v.payload_length != 0
        return scan_node(data, start, item.end, &inner)
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


cdef bint scan_node(const uint8_t *data, Py_ssize_t start, Py_ssize_t end, NodeItems *out) noexcept:
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
    """The node failed scan_node: let the decoder say why, as a ProofError."""
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
        found = proofset_find(ps, wanted)
        if found < 0:
            raise ProofError(missing_message(wanted, index))
        data = ps.data[found]
        length = <Py_ssize_t>ps.lengths[found]
        if not scan_node(data, 0, length, &node):
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
                scan_node(data, node.starts[i], item.end, &node)
                continue
            wanted = data + item.payload_offset     # a 32-byte hash (checked)
            index += 1
            break


def verify_proof(root, key, proof):
    """The value for key proven by proof under root, or None when the proof shows the key is absent.

    Raises ProofError naming the failing node when the proof shows neither. Each supplied node is hashed once
    and the path is walked on the encodings themselves: no node objects are built.
    """
    cdef bytes wanted = root_bytes(root)
    cdef bytes keyb = as_bytes(key, "key")
    cdef object blobs = proof
    cdef ProofSet ps
    cdef uint8_t hex_inline[INLINE_HEX_KEY]
    cdef uint8_t *hexkey = hex_inline
    cdef Py_ssize_t n = PyBytes_GET_SIZE(keyb), klen = 2 * n + 1, i
    cdef const uint8_t *kb = <const uint8_t *>PyBytes_AS_STRING(keyb)
    # A list of bytes is read in place (no tuple copy): from here to the end of the walk no Python code runs
    # but on error paths, which copy what they read first (_raise_bad_node, missing_message).
    if type(proof) is list and PyList_GET_SIZE(proof) <= LIST_PROOF_MAX:
        for blob in <list>proof:
            if type(blob) is not bytes:
                blobs = proof_blobs(proof)
                break
    else:
        blobs = proof_blobs(proof)
    if memcmp(PyBytes_AS_STRING(wanted), PyBytes_AS_STRING(_EMPTY_ROOT), HASH_LENGTH) == 0:
        return None                                 # the empty trie holds no key: nothing more to prove
    if klen > INLINE_HEX_KEY:
        hexkey = <uint8_t *>PyMem_Malloc(klen)
        if hexkey == NULL:
            raise MemoryError()
    write_hex(kb, n, hexkey)
    try:
        proofset_init(&ps, blobs)
        return _walk_proof(&ps, <const uint8_t *>PyBytes_AS_STRING(wanted), hexkey, klen)
    finally:
        proofset_free(&ps)
        if hexkey != hex_inline:
            PyMem_Free(hexkey)


def _verify_range_proof():
    # mpt.ethereum.rangeproof cimports this module: read on first use (the old name only).
    from mpt.ethereum.rangeproof import verify_range_proof
    return verify_range_proof


# verify_range_proof's home is mpt.ethereum.rangeproof; the name here stays for one release.
__getattr__ = _renamed_attributes(__name__, {
    "verify_range_proof": ("mpt.ethereum.proof.verify_range_proof moved to mpt.ethereum.rangeproof "
                           "(or mpt.verify_range_proof)", _verify_range_proof),
})


register_walkers(prove=prove, prove_many=prove_many)
