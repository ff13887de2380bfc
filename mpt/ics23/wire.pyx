# cython: language_level=3
"""Verify ICS23 proofs straight from their protobuf bytes: no message objects, SHA-256 in C.

The wire verifier only ever answers "proven". It reads the canonical form Go's Marshal writes (each field
once, in field-number order, no unknown fields, one-byte tags, enum values below 2**31) into C structs pointing
into the input, applies every check of cosmos/ics23's ``VerifyMembership`` / ``VerifyNonMembership`` and hashes
from the input bytes. It is the fast path of the verifier's entry points (mpt.ics23.verify: verify_membership,
verify_non_membership, calculate_root; and CommitmentProof.from_bytes through decode_commitment): anything it does
not prove (another encoding, a batch, a spec it cannot run, a check that fails) is answered "not here", and the
object verifier decides with the same rules and raises ProofError saying why. tests/test_ics23_wire.py checks
that the two agree on real, random and tampered proofs (and scripts/asan.sh runs them under ASan and UBSan).
Imports run one way: this module reads the messages and specs below it and knows nothing of the verifier.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from mpt.core.bytes_like cimport as_bytes

from mpt.core._sha256.sha256 cimport (
    mpt_sha256, mpt_sha256_ctx, mpt_sha256_final, mpt_sha256_init, mpt_sha256_many, mpt_sha256_update,
    share_sha256_backend,
)

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.ics23.messages import ProofSpec as _ProofSpec
from mpt.ics23.messages import ENUM_MEMBERS as _ENUM_MEMBERS
from mpt.ics23.messages import CommitmentProof, ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp, NonExistenceProof
from mpt.ics23.messages import default_message
from mpt.ics23.specs import IAVL_SPEC, TENDERMINT_SPEC

cdef dict _HASH_OPS = _ENUM_MEMBERS[HashOp]
cdef dict _LENGTH_OPS = _ENUM_MEMBERS[LengthOp]

share_sha256_backend()

cdef enum:
    HASH_LEN = 32
    OP_NO_HASH = 0
    OP_SHA256 = 1
    LEN_NO_PREFIX = 0
    LEN_VAR_PROTO = 1
    LEN_VAR_RLP = 2
    LEN_FIXED32_BIG = 3
    LEN_FIXED32_LITTLE = 4
    LEN_FIXED64_BIG = 5
    LEN_FIXED64_LITTLE = 6
    LEN_REQUIRE_32_BYTES = 7
    LEN_REQUIRE_64_BYTES = 8
    DEFAULT_MAX_DEPTH = 128
    # Inner-op preimages up to this size are hashed from a stack copy in one shot (IAVL's are about 70 bytes).
    INNER_BUFFER = 256
    # _canonical_tag's "no field of this message repeats" (field numbers start at 1).
    NOT_REPEATED = -1


# ------------------------------------------------------------------------------------------------- the spec

@cython.final
cdef class CompiledSpec:

    @staticmethod
    cdef CompiledSpec new(spec):
        cdef CompiledSpec c = CompiledSpec.__new__(CompiledSpec)
        cdef int i
        c.supported = False
        leaf = spec.leaf_spec
        inner = spec.inner_spec
        if leaf is None or inner is None:
            return c
        c.is_iavl = spec.spec_equals(IAVL_SPEC)
        c.is_tendermint = spec.spec_equals(TENDERMINT_SPEC)
        try:
            c.leaf_hash = leaf.hash
            c.leaf_prehash_key = leaf.prehash_key
            c.leaf_prehash_value = leaf.prehash_value
            c.leaf_length = leaf.length
            c.leaf_prefix = leaf.prefix
            c.inner_hash = inner.hash
            c.child_size = inner.child_size
            c.min_prefix_length = inner.min_prefix_length
            c.max_prefix_length = inner.max_prefix_length
            c.empty_child = inner.empty_child
            c.max_depth = spec.max_depth if spec.max_depth != 0 else DEFAULT_MAX_DEPTH
            c.min_depth = spec.min_depth
            c.prehash_compare = spec.prehash_key_before_comparison
        except OverflowError:
            # A field beyond the C types here (the proto's are int32): the object verifier decides.
            return c
        order = list(inner.child_order)
        c.nchildren = len(order)
        # What the wire verifier runs: SHA-256 trees whose child_order is a permutation of 0..n-1 (getPosition
        # never fails) and whose inner ops can pass the spec checks at all. Other specs: the object verifier.
        if not (c.leaf_hash == OP_SHA256 and c.inner_hash == OP_SHA256
                and c.leaf_prehash_key in (OP_NO_HASH, OP_SHA256) and c.leaf_prehash_value in (OP_NO_HASH, OP_SHA256)
                and 0 <= c.leaf_length <= LEN_REQUIRE_64_BYTES and c.leaf_length != LEN_VAR_RLP
                and 1 <= c.nchildren <= WIRE_MAX_CHILDREN and sorted(order) == list(range(c.nchildren))
                and c.child_size > 0 and inner.max_prefix_length < inner.min_prefix_length + inner.child_size
                and c.min_prefix_length >= 0 and c.max_depth > 0):
            return c
        for i in range(c.nchildren):
            c.child_order[i] = order[i]
        c.supported = True
        return c


cdef CompiledSpec _compiled(spec):
    """spec's compiled form: cached on a frozen spec (IAVL_SPEC, ...), made afresh for any other."""
    cdef CompiledSpec c
    if type(spec) is not _ProofSpec:
        return None
    cached = spec.compiled_form
    if cached is not None:
        return <CompiledSpec>cached
    c = CompiledSpec.new(spec)
    spec.keep_compiled_form(c)
    return c


# ------------------------------------------------------------------------------------------ wire reading

cdef inline Py_ssize_t _varint(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, uint64_t* out) noexcept nogil:
    """A protobuf varint at d[pos:end]: the position after it, or -1 (truncated, or longer than 10 bytes)."""
    cdef uint64_t x = 0
    cdef unsigned int shift = 0
    cdef uint8_t b
    while shift < 70:
        if pos >= end:
            return -1
        b = d[pos]
        pos += 1
        x |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            out[0] = x
            return pos
        shift += 7
    return -1


cdef inline Py_ssize_t _small(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, int* out) noexcept nogil:
    """A varint enum or int value below 2**31 (larger ones: -1, the object verifier reads them as Go does)."""
    cdef uint64_t v
    pos = _varint(d, pos, end, &v)
    if pos < 0 or (v >> 31) != 0:
        return -1
    out[0] = <int>v
    return pos


cdef inline Py_ssize_t _slice(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, Slice* out) noexcept nogil:
    cdef uint64_t n
    pos = _varint(d, pos, end, &n)
    if pos < 0 or n > <uint64_t>(end - pos):
        return -1
    out.p = d + pos
    out.n = <Py_ssize_t>n
    return pos + <Py_ssize_t>n


cdef inline int _canonical_tag(const uint8_t* d, Py_ssize_t pos, int* last, int repeated) noexcept nogil:
    """The one-byte tag at d[pos], or -1 where Go's Marshal would not have written it: a tag of two bytes or more,
    or a field number below the previous one (last, updated here) or equal to it, unless it is the repeated
    field (NOT_REPEATED when the message has none). Each parser reads its tags through this."""
    cdef uint8_t tag = d[pos]
    cdef int field = tag >> 3
    if tag >= 0x80 or field < last[0] or (field == last[0] and field != repeated):
        return -1
    last[0] = field
    return tag


cdef bint _parse_inner(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, WireInner* op) noexcept nogil:
    cdef int last = 0, tag
    op.hash = 0
    op.prefix.p = d
    op.prefix.n = 0
    op.suffix.p = d
    op.suffix.n = 0
    while pos < end:
        tag = _canonical_tag(d, pos, &last, NOT_REPEATED)
        pos += 1
        if tag == 0x08:
            pos = _small(d, pos, end, &op.hash)
        elif tag == 0x12:
            pos = _slice(d, pos, end, &op.prefix)
        elif tag == 0x1A:
            pos = _slice(d, pos, end, &op.suffix)
        else:
            return False
        if pos < 0:
            return False
    return True


cdef bint _parse_leaf(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, WireExist* e) noexcept nogil:
    cdef int last = 0, tag
    e.has_leaf = True
    e.leaf_hash = 0
    e.prehash_key = 0
    e.prehash_value = 0
    e.length = 0
    e.leaf_prefix.p = d
    e.leaf_prefix.n = 0
    while pos < end:
        tag = _canonical_tag(d, pos, &last, NOT_REPEATED)
        pos += 1
        if tag == 0x08:
            pos = _small(d, pos, end, &e.leaf_hash)
        elif tag == 0x10:
            pos = _small(d, pos, end, &e.prehash_key)
        elif tag == 0x18:
            pos = _small(d, pos, end, &e.prehash_value)
        elif tag == 0x20:
            pos = _small(d, pos, end, &e.length)
        elif tag == 0x2A:
            pos = _slice(d, pos, end, &e.leaf_prefix)
        else:
            return False
        if pos < 0:
            return False
    return True


cdef bint _parse_exist(const uint8_t* d, Py_ssize_t pos, Py_ssize_t end, WireExist* e) noexcept nogil:
    cdef int last = 0, tag
    cdef Slice sub
    e.key.p = d
    e.key.n = 0
    e.value.p = d
    e.value.n = 0
    e.has_leaf = False
    e.npath = 0
    while pos < end:
        tag = _canonical_tag(d, pos, &last, 4)        # only the path (field 4) repeats
        pos += 1
        if tag == 0x0A:
            pos = _slice(d, pos, end, &e.key)
        elif tag == 0x12:
            pos = _slice(d, pos, end, &e.value)
        elif tag == 0x1A:
            pos = _slice(d, pos, end, &sub)
            if pos < 0 or not _parse_leaf(sub.p, 0, sub.n, e):
                return False
        elif tag == 0x22:
            if e.npath >= WIRE_MAX_PATH:
                return False
            pos = _slice(d, pos, end, &sub)
            if pos < 0 or not _parse_inner(sub.p, 0, sub.n, &e.path[e.npath]):
                return False
            e.npath += 1
        else:
            return False
        if pos < 0:
            return False
    return True


cdef bint _parse_commitment(const uint8_t* d, Py_ssize_t n, uint8_t want_tag, Slice* body) noexcept nogil:
    """A CommitmentProof holding exactly one field, the exist (tag 0x0A) or nonexist (0x12) case."""
    if n < 2 or d[0] != want_tag:
        return False
    return _slice(d, 1, n, body) == n


# ----------------------------------------------------------------------------------------------- checks

cdef inline bint _starts_with(Slice s, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    return s.n >= n and memcmp(s.p, p, n) == 0


cdef inline bint _equal(Slice a, Slice b) noexcept nogil:
    return a.n == b.n and memcmp(a.p, b.p, a.n) == 0


cdef inline Py_ssize_t _go_varint(Slice s, Py_ssize_t pos, int64_t* out) noexcept nogil:
    """Go binary.ReadVarint (zigzag) at s[pos:]: the position after it, or -1 (EOF, overflow)."""
    cdef uint64_t x = 0
    cdef unsigned int shift = 0
    cdef int i
    cdef uint8_t b
    for i in range(10):
        if pos + i >= s.n:
            return -1
        b = s.p[pos + i]
        if b < 0x80:
            if i == 9 and b > 1:
                return -1
            x |= <uint64_t>b << shift
            out[0] = <int64_t>(x >> 1) ^ -<int64_t>(x & 1)
            return pos + i + 1
        x |= <uint64_t>(b & 0x7F) << shift
        shift += 7
    return -1


cdef bint _iavl_ok(Slice prefix, int hash_op, int layer) noexcept nogil:
    """Go validateIavlOps."""
    cdef int64_t height, size, version
    cdef Py_ssize_t pos = _go_varint(prefix, 0, &height)
    if pos < 0 or height < 0 or height < layer:
        return False
    pos = _go_varint(prefix, pos, &size)
    if pos < 0 or size < 0:
        return False
    pos = _go_varint(prefix, pos, &version)
    if pos < 0 or version < 0:
        return False
    if layer == 0:
        return prefix.n - pos == 0
    return (prefix.n - pos == 1 or prefix.n - pos == 34) and hash_op == OP_SHA256


cdef bint _inner_ok(CompiledSpec s, WireInner* op, int layer) noexcept:
    """Go InnerOp.CheckAgainstSpec."""
    cdef Py_ssize_t leaf_prefix_n = PyBytes_GET_SIZE(s.leaf_prefix)
    if op.hash != s.inner_hash:
        return False
    if s.is_iavl and not _iavl_ok(op.prefix, op.hash, layer):
        return False
    if s.is_tendermint:
        # validateTendermintOps: a simple-tree inner node starts with 0x01 (and is just 0x01 before a suffix).
        if op.prefix.n == 0 or op.prefix.p[0] != 1 or (op.suffix.n > 0 and op.prefix.n != 1):
            return False
    if _starts_with(op.prefix, <const uint8_t*>PyBytes_AS_STRING(s.leaf_prefix), leaf_prefix_n):
        return False
    if op.prefix.n < s.min_prefix_length:
        return False
    if op.prefix.n > s.max_prefix_length + <Py_ssize_t>(s.nchildren - 1) * s.child_size:
        return False
    return op.suffix.n % s.child_size == 0


cdef bint _exist_matches_spec(CompiledSpec s, WireExist* e) noexcept:
    """Go ExistenceProof.CheckAgainstSpec."""
    cdef int i
    if not e.has_leaf:
        return False
    if s.is_iavl and not _iavl_ok(e.leaf_prefix, e.leaf_hash, 0):
        return False
    if (e.leaf_hash != s.leaf_hash or e.prehash_key != s.leaf_prehash_key
            or e.prehash_value != s.leaf_prehash_value or e.length != s.leaf_length):
        return False
    if not _starts_with(e.leaf_prefix, <const uint8_t*>PyBytes_AS_STRING(s.leaf_prefix),
                        PyBytes_GET_SIZE(s.leaf_prefix)):
        return False
    if s.min_depth > 0 and e.npath < s.min_depth:
        return False
    if e.npath > s.max_depth:
        return False
    for i in range(e.npath):
        if not _inner_ok(s, &e.path[i], i + 1):
            return False
    return True


cdef bint _hash_leaf_data(mpt_sha256_ctx* ctx, int prehash, int length_op, Slice data) noexcept nogil:
    """prepareLeafData into the running hash: length(prehash(data)) || prehash(data)."""
    cdef unsigned char digest[HASH_LEN]
    cdef unsigned char header[10]
    cdef const uint8_t* p = data.p
    cdef uint64_t n = <uint64_t>data.n
    cdef int hn = 0, i
    if prehash == OP_SHA256:
        mpt_sha256(data.p, <size_t>data.n, digest)
        p = digest
        n = HASH_LEN
    if length_op == LEN_VAR_PROTO:
        while n >= 0x80:
            header[hn] = <unsigned char>((n & 0x7F) | 0x80)
            n >>= 7
            hn += 1
        header[hn] = <unsigned char>n
        hn += 1
        n = <uint64_t>(data.n if prehash != OP_SHA256 else HASH_LEN)
    elif length_op == LEN_REQUIRE_32_BYTES:
        if n != 32:
            return False
    elif length_op == LEN_REQUIRE_64_BYTES:
        if n != 64:
            return False
    elif length_op == LEN_FIXED32_BIG or length_op == LEN_FIXED32_LITTLE:
        for i in range(4):
            header[i if length_op == LEN_FIXED32_LITTLE else 3 - i] = <unsigned char>((<uint32_t>n) >> (8 * i))
        hn = 4
    elif length_op == LEN_FIXED64_BIG or length_op == LEN_FIXED64_LITTLE:
        for i in range(8):
            header[i if length_op == LEN_FIXED64_LITTLE else 7 - i] = <unsigned char>(n >> (8 * i))
        hn = 8
    elif length_op != LEN_NO_PREFIX:
        return False
    if hn:
        mpt_sha256_update(ctx, header, <size_t>hn)
    mpt_sha256_update(ctx, p, <size_t>n)
    return True


cdef inline bint _preimage(WireInner* op, const unsigned char* h, unsigned char* buf, size_t* n) noexcept nogil:
    """prefix || h || suffix into buf (INNER_BUFFER bytes); False when it does not fit."""
    cdef Py_ssize_t total = op.prefix.n + HASH_LEN + op.suffix.n
    if total > INNER_BUFFER:
        return False
    memcpy(buf, op.prefix.p, <size_t>op.prefix.n)
    memcpy(buf + op.prefix.n, h, HASH_LEN)
    memcpy(buf + op.prefix.n + HASH_LEN, op.suffix.p, <size_t>op.suffix.n)
    n[0] = <size_t>total
    return True


cdef inline void _hash_inner(WireInner* op, unsigned char* h) noexcept nogil:
    """h = sha256(prefix || h || suffix). A preimage that fits a stack buffer is hashed in one shot, which keeps
    the SHA-NI state in registers across its blocks (a third faster than streaming the three parts)."""
    cdef unsigned char buf[INNER_BUFFER]
    cdef mpt_sha256_ctx ctx
    cdef size_t n
    if _preimage(op, h, buf, &n):
        mpt_sha256(buf, n, h)
        return
    mpt_sha256_init(&ctx)
    mpt_sha256_update(&ctx, op.prefix.p, <size_t>op.prefix.n)
    mpt_sha256_update(&ctx, h, HASH_LEN)
    mpt_sha256_update(&ctx, op.suffix.p, <size_t>op.suffix.n)
    mpt_sha256_final(&ctx, h)


cdef bint _sha256_only(WireExist* e) noexcept nogil:
    """What _calculate can hash: a leaf, a key and a value, SHA-256 (or no prehash) everywhere."""
    cdef int i
    if not e.has_leaf or e.key.n == 0 or e.value.n == 0 or e.leaf_hash != OP_SHA256:
        return False
    if not (e.prehash_key == OP_NO_HASH or e.prehash_key == OP_SHA256):
        return False
    if not (e.prehash_value == OP_NO_HASH or e.prehash_value == OP_SHA256):
        return False
    for i in range(e.npath):
        if e.path[i].hash != OP_SHA256:
            return False
    return True


cdef bint _hash_leaf(WireExist* e, unsigned char* h) noexcept nogil:
    cdef mpt_sha256_ctx ctx
    mpt_sha256_init(&ctx)
    mpt_sha256_update(&ctx, e.leaf_prefix.p, <size_t>e.leaf_prefix.n)
    if not _hash_leaf_data(&ctx, e.prehash_key, e.length, e.key):
        return False
    if not _hash_leaf_data(&ctx, e.prehash_value, e.length, e.value):
        return False
    mpt_sha256_final(&ctx, h)
    return True


cdef bint _calculate(WireExist* e, unsigned char* h) noexcept:
    """Go ExistenceProof.Calculate into h, for proofs hashed with SHA-256 throughout; False for anything else
    (another hash op, VAR_RLP, no leaf, an empty key or value), which the object verifier then explains."""
    cdef int i
    if not _sha256_only(e) or not _hash_leaf(e, h):
        return False
    # The GIL stays: a proof hashes in about a microsecond, less than dropping and re-taking it costs.
    for i in range(e.npath):
        _hash_inner(&e.path[i], h)
    return True


cdef bint _calculate_pair(WireExist* a, WireExist* b, unsigned char* ha, unsigned char* hb) noexcept:
    """_calculate of both sides of a non-existence proof, their steps hashed in pairs: the two chains are
    independent, and SHA-NI hashing two messages together hides the latency of its rounds."""
    cdef unsigned char bufs[2 * INNER_BUFFER]
    cdef unsigned char out[2 * HASH_LEN]
    cdef const unsigned char* ptrs[2]
    cdef size_t lens[2]
    cdef int i, n
    if not _sha256_only(a) or not _sha256_only(b) or not _hash_leaf(a, ha) or not _hash_leaf(b, hb):
        return False
    ptrs[0] = bufs
    ptrs[1] = bufs + INNER_BUFFER
    n = a.npath if a.npath < b.npath else b.npath
    for i in range(n):
        if _preimage(&a.path[i], ha, bufs, &lens[0]) and _preimage(&b.path[i], hb, bufs + INNER_BUFFER, &lens[1]):
            mpt_sha256_many(0, 0, ptrs, lens, 2, out)
            memcpy(ha, out, HASH_LEN)
            memcpy(hb, out + HASH_LEN, HASH_LEN)
        else:
            _hash_inner(&a.path[i], ha)
            _hash_inner(&b.path[i], hb)
    for i in range(n, a.npath):
        _hash_inner(&a.path[i], ha)
    for i in range(n, b.npath):
        _hash_inner(&b.path[i], hb)
    return True


cdef inline bint _root_matches(CompiledSpec s, WireExist* e, const uint8_t* root, Py_ssize_t root_n) noexcept:
    """Go ExistenceProof.calculate (the spec has made every op SHA-256 already), compared with root."""
    cdef unsigned char h[HASH_LEN]
    return root_n == HASH_LEN and _calculate(e, h) and memcmp(h, root, HASH_LEN) == 0


cdef inline bint _exist_ok(CompiledSpec s, WireExist* e, const uint8_t* root, Py_ssize_t root_n) noexcept:
    return _exist_matches_spec(s, e) and _root_matches(s, e, root, root_n)


# ------------------------------------------------------------------------------------- neighbour checks

cdef inline int _position(CompiledSpec s, int branch) noexcept:
    cdef int i
    for i in range(s.nchildren):
        if s.child_order[i] == branch:
            return i
    return -1       # unreachable: CompiledSpec.new checked that child_order is a permutation


cdef inline bint _has_padding(CompiledSpec s, WireInner* op, int branch) noexcept:
    cdef Py_ssize_t prefix = <Py_ssize_t>_position(s, branch) * s.child_size
    return (prefix + s.min_prefix_length <= op.prefix.n <= prefix + s.max_prefix_length
            and op.suffix.n == <Py_ssize_t>(s.nchildren - 1 - _position(s, branch)) * s.child_size)


cdef int _order_from_padding(CompiledSpec s, WireInner* op) noexcept:
    cdef int branch
    for branch in range(s.nchildren):
        if _has_padding(s, op, branch):
            return branch
    return -1


cdef inline bint _is_empty_child(CompiledSpec s, Slice area, Py_ssize_t start) noexcept:
    # Go compares area[start:start+child_size], and panics past the end: that is a refusal here.
    if start + s.child_size > area.n:
        return False
    return (PyBytes_GET_SIZE(s.empty_child) == s.child_size
            and memcmp(area.p + start, PyBytes_AS_STRING(s.empty_child), s.child_size) == 0)


cdef bint _left_branches_are_empty(CompiledSpec s, WireInner* op) noexcept:
    cdef int idx = _order_from_padding(s, op), i
    cdef Py_ssize_t actual
    if idx <= 0:
        return False
    actual = op.prefix.n - <Py_ssize_t>idx * s.child_size
    if actual < 0:
        return False
    for i in range(idx):
        if not _is_empty_child(s, op.prefix, actual + <Py_ssize_t>_position(s, i) * s.child_size):
            return False
    return True


cdef bint _right_branches_are_empty(CompiledSpec s, WireInner* op) noexcept:
    cdef int idx = _order_from_padding(s, op), i
    cdef int right
    if idx < 0:
        return False
    right = s.nchildren - 1 - idx
    if right == 0 or op.suffix.n != <Py_ssize_t>right * s.child_size:
        return False
    for i in range(right):
        if not _is_empty_child(s, op.suffix, <Py_ssize_t>_position(s, i) * s.child_size):
            return False
    return True


cdef bint _is_left_most(CompiledSpec s, WireInner* path, int n) noexcept:
    cdef int i
    for i in range(n):
        if not _has_padding(s, &path[i], 0) and not _left_branches_are_empty(s, &path[i]):
            return False
    return True


cdef bint _is_right_most(CompiledSpec s, WireInner* path, int n) noexcept:
    cdef int i
    for i in range(n):
        if not _has_padding(s, &path[i], s.nchildren - 1) and not _right_branches_are_empty(s, &path[i]):
            return False
    return True


cdef bint _is_left_neighbor(CompiledSpec s, WireExist* left, WireExist* right) noexcept:
    cdef int i = left.npath - 1, j = right.npath - 1
    cdef int li, ri
    if i < 0 or j < 0:
        return False
    while _equal(left.path[i].prefix, right.path[j].prefix) and _equal(left.path[i].suffix, right.path[j].suffix):
        i -= 1
        j -= 1
        if i < 0 or j < 0:
            return False
    li = _order_from_padding(s, &left.path[i])
    ri = _order_from_padding(s, &right.path[j])
    if li < 0 or ri < 0 or ri != li + 1:
        return False
    return _is_right_most(s, left.path, i) and _is_left_most(s, right.path, j)


cdef int _compare_keys(CompiledSpec s, Slice a, Slice b) noexcept:
    """bytes.Compare of the keys as the spec compares them (hashed first with prehash_key_before_comparison)."""
    cdef unsigned char ha[HASH_LEN]
    cdef unsigned char hb[HASH_LEN]
    cdef Py_ssize_t n
    cdef int c
    if s.prehash_compare and s.leaf_prehash_key == OP_SHA256:
        mpt_sha256(a.p, <size_t>a.n, ha)
        mpt_sha256(b.p, <size_t>b.n, hb)
        a.p = ha
        a.n = HASH_LEN
        b.p = hb
        b.n = HASH_LEN
    n = a.n if a.n < b.n else b.n
    c = memcmp(a.p, b.p, n)
    if c != 0:
        return c
    return (a.n > b.n) - (a.n < b.n)


# -------------------------------------------------------------------------------------------------- API

cdef bint _membership(CompiledSpec s, bytes root, bytes proof, bytes key, bytes value):
    cdef WireExist e
    cdef Slice body, k, v
    cdef const uint8_t* d = <const uint8_t*>PyBytes_AS_STRING(proof)
    if not _parse_commitment(d, PyBytes_GET_SIZE(proof), 0x0A, &body):
        return False
    if not _parse_exist(body.p, 0, body.n, &e):
        return False
    k.p = <const uint8_t*>PyBytes_AS_STRING(key)
    k.n = PyBytes_GET_SIZE(key)
    v.p = <const uint8_t*>PyBytes_AS_STRING(value)
    v.n = PyBytes_GET_SIZE(value)
    if not _equal(e.key, k) or not _equal(e.value, v):
        return False
    return _exist_ok(s, &e, <const uint8_t*>PyBytes_AS_STRING(root), PyBytes_GET_SIZE(root))


cdef bint _parse_nonexist(Slice body, WireExist* left, bint* has_left, WireExist* right,
                          bint* has_right, Slice* key) noexcept nogil:
    """A NonExistenceProof in canonical form: key (not used by verification), left, right, each at most once."""
    cdef Py_ssize_t pos = 0
    cdef int last = 0, tag
    cdef Slice sub
    has_left[0] = False
    has_right[0] = False
    key.p = body.p
    key.n = 0
    while pos < body.n:
        tag = _canonical_tag(body.p, pos, &last, NOT_REPEATED)
        pos += 1
        if tag != 0x0A and tag != 0x12 and tag != 0x1A:
            return False
        pos = _slice(body.p, pos, body.n, &sub)
        if pos < 0:
            return False
        if tag == 0x0A:
            key[0] = sub
        elif tag == 0x12:
            if not _parse_exist(sub.p, 0, sub.n, left):
                return False
            has_left[0] = True
        elif tag == 0x1A:
            if not _parse_exist(sub.p, 0, sub.n, right):
                return False
            has_right[0] = True
    return True


cdef bint _non_membership(CompiledSpec s, bytes root, bytes proof, bytes key):
    # Two paths of up to WIRE_MAX_PATH ops each: about 20 KB, which the C stack takes.
    cdef WireExist left, right
    cdef Slice body, k
    cdef const uint8_t* d = <const uint8_t*>PyBytes_AS_STRING(proof)
    cdef const uint8_t* r = <const uint8_t*>PyBytes_AS_STRING(root)
    cdef Py_ssize_t rn = PyBytes_GET_SIZE(root)
    cdef bint has_left, has_right
    cdef Slice nkey
    cdef unsigned char hl[HASH_LEN]
    cdef unsigned char hr[HASH_LEN]
    if not _parse_commitment(d, PyBytes_GET_SIZE(proof), 0x12, &body):
        return False
    if not _parse_nonexist(body, &left, &has_left, &right, &has_right, &nkey):
        return False
    if not has_left and not has_right:
        return False
    k.p = <const uint8_t*>PyBytes_AS_STRING(key)
    k.n = PyBytes_GET_SIZE(key)
    # getNonExistProofForKey and NonExistenceProof.Verify: left.key < key < right.key, both sides valid.
    if has_left and has_right:
        if _compare_keys(s, left.key, k) >= 0 or _compare_keys(s, right.key, k) <= 0:
            return False
        if not _exist_matches_spec(s, &left) or not _exist_matches_spec(s, &right) or rn != HASH_LEN:
            return False
        if not _calculate_pair(&left, &right, hl, hr):
            return False
        if memcmp(hl, r, HASH_LEN) != 0 or memcmp(hr, r, HASH_LEN) != 0:
            return False
    elif has_left and (_compare_keys(s, left.key, k) >= 0 or not _exist_ok(s, &left, r, rn)):
        return False
    elif has_right and (_compare_keys(s, right.key, k) <= 0 or not _exist_ok(s, &right, r, rn)):
        return False
    if not has_left:
        return _is_left_most(s, right.path, right.npath)
    if not has_right:
        return _is_right_most(s, left.path, left.npath)
    return _is_left_neighbor(s, &left, &right)


cdef bint fast_membership(spec, root, bytes proof, key, value) except -1:
    cdef bytes r = as_bytes(root, "root"), k = as_bytes(key, "key"), v = as_bytes(value, "value")
    cdef CompiledSpec s = _compiled(spec)
    return s is not None and s.supported and _membership(s, r, proof, k, v)


cdef bint fast_non_membership(spec, root, bytes proof, key) except -1:
    cdef bytes r = as_bytes(root, "root"), k = as_bytes(key, "key")
    cdef CompiledSpec s = _compiled(spec)
    return s is not None and s.supported and _non_membership(s, r, proof, k)


def proves_membership(spec, root, bytes proof not None, key, value):
    """The fast path of mpt.ics23.verify_membership on wire bytes: True when proof (CommitmentProof bytes)
    proves key -> value under root in a tree of spec's form; False means "not decided here" (the object verifier
    then decides, and explains a refusal). root, key and value: bytes-like (TypeError naming the argument)."""
    return fast_membership(spec, root, proof, key, value)


def proves_non_membership(spec, root, bytes proof not None, key):
    """The fast path of mpt.ics23.verify_non_membership: True when proof proves key absent under root; False
    means "not decided here". root and key: bytes-like."""
    return fast_non_membership(spec, root, proof, key)


def calculate_root_fast(bytes proof not None):
    """The fast path of mpt.ics23.verify.calculate_root: the root proof (CommitmentProof bytes) leads to when it is a
    canonical SHA-256 existence or non-existence proof (Go CommitmentProof.Calculate: the existence proof; of a
    non-existence proof its left side, else its right); None when not decided here."""
    cdef WireExist e, right
    cdef Slice body
    cdef unsigned char h[HASH_LEN]
    cdef const uint8_t* d = <const uint8_t*>PyBytes_AS_STRING(proof)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(proof)
    cdef bint found = False, has_left, has_right
    cdef Slice nkey
    if _parse_commitment(d, n, 0x0A, &body):
        found = _parse_exist(body.p, 0, body.n, &e)
        if found and _calculate(&e, h):
            return (<char*>h)[:HASH_LEN]
    elif _parse_commitment(d, n, 0x12, &body) and _parse_nonexist(body, &e, &has_left, &right, &has_right, &nkey):
        # Go: the left side if there is one, else the right.
        if has_left and _calculate(&e, h):
            return (<char*>h)[:HASH_LEN]
        if not has_left and has_right and _calculate(&right, h):
            return (<char*>h)[:HASH_LEN]
    return None


# ------------------------------------------------------------------------------------- fast decoding

cdef inline bytes _bytes(Slice s):
    return (<const char*>s.p)[:s.n]


cdef object _exist_object(WireExist* e):
    cdef int i
    cdef WireInner* op
    ex = ExistenceProof.__new__(ExistenceProof)
    ex.key = _bytes(e.key)
    ex.value = _bytes(e.value)
    if e.has_leaf:
        leaf = LeafOp.__new__(LeafOp)
        leaf.hash = _HASH_OPS.get(e.leaf_hash, e.leaf_hash)
        leaf.prehash_key = _HASH_OPS.get(e.prehash_key, e.prehash_key)
        leaf.prehash_value = _HASH_OPS.get(e.prehash_value, e.prehash_value)
        leaf.length = _LENGTH_OPS.get(e.length, e.length)
        leaf.prefix = _bytes(e.leaf_prefix)
        ex.leaf = leaf
    else:
        ex.leaf = None
    path = []
    for i in range(e.npath):
        op = &e.path[i]
        inner = InnerOp.__new__(InnerOp)
        inner.hash = _HASH_OPS.get(op.hash, op.hash)
        inner.prefix = _bytes(op.prefix)
        inner.suffix = _bytes(op.suffix)
        path.append(inner)
    ex.path = path
    return ex


def decode_commitment(data):
    """The CommitmentProof in data (bytes) when it is an existence or non-existence proof in the canonical form
    Go's Marshal writes, built straight from the C reader; None for anything else (the generic decoder's job)."""
    cdef WireExist e, right
    cdef Slice body, nkey
    cdef bint has_left, has_right
    cdef const uint8_t* d
    cdef Py_ssize_t n
    if type(data) is not bytes:
        return None
    d = <const uint8_t*>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    cp = default_message(CommitmentProof)
    if _parse_commitment(d, n, 0x0A, &body):
        if not _parse_exist(body.p, 0, body.n, &e):
            return None
        cp.exist = _exist_object(&e)
        return cp
    if _parse_commitment(d, n, 0x12, &body):
        if not _parse_nonexist(body, &e, &has_left, &right, &has_right, &nkey):
            return None
        ne = NonExistenceProof.__new__(NonExistenceProof)
        ne.key = _bytes(nkey)
        ne.left = _exist_object(&e) if has_left else None
        ne.right = _exist_object(&right) if has_right else None
        cp.nonexist = ne
        return cp
    return None


cdef object _verifier_entry(str name):
    # The entry points moved up a layer, to mpt.ics23.verify, which imports this module: looked up when asked for.
    from mpt.ics23.verify import calculate_root, verify_membership, verify_non_membership
    return {"calculate_root": calculate_root, "verify_membership": verify_membership,
            "verify_non_membership": verify_non_membership}[name]


# The verifier's entry points lived here before the ICS23 layers were split; the names stay for one release.
__getattr__ = _renamed_attributes(__name__, {
    name: ("mpt.ics23.wire.%s moved to mpt.ics23.verify (or mpt.ics23.%s)" % (name, name),
           lambda name=name: _verifier_entry(name))
    for name in ("verify_membership", "verify_non_membership", "calculate_root")
} | {
    "wire_verdict_membership": ("mpt.ics23.wire.wire_verdict_membership is now mpt.ics23.wire.proves_membership",
                                lambda: proves_membership),
    "wire_verdict_non_membership": ("mpt.ics23.wire.wire_verdict_non_membership is now "
                                    "mpt.ics23.wire.proves_non_membership", lambda: proves_non_membership),
})
