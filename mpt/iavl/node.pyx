# cython: language_level=3
# cython: binding=False
"""IAVL node codecs (cosmos/iavl node.go): the legacy v0.x format, the v1 format and PR #673's stream-vbyte.

Layouts (varint = Go binary.PutVarint, i.e. zigzag + LEB128; bytes(x) = uvarint(len(x)) || x)::

    * legacy:  varint(height) varint(size) varint(version) bytes(key) | leaf: bytes(value)
                                                                       | inner: bytes(leftHash) bytes(rightHash)
    * v1:      varint(height) varint(size) bytes(key) | leaf: bytes(value)
                                                      | inner: 0x20 hash varint(mode) left right
               (the version lives in the 12-byte NodeKey, the database key; a child is varint(version) varint(nonce),
               or 0x20 || 32-byte hash when its mode bit says it is a legacy node)
    * vbyte:   int8 height, control byte, 4 x uint32 stream-vbyte [version, size lo, size hi, len(key)], key
               | leaf: value (raw, to the end) | inner: leftHash(32) rightHash(32)

The hash is the same for all three: sha256(varint(height) varint(size) varint(version) | leaf: bytes(key)
0x20 sha256(value) | inner: bytes(leftHash) bytes(rightHash)).

Every encoder writes straight into memory sized by `c_encoded_size` (to_bytes fills the bytes object in place;
`encode` extends a WriteBuffer once). Every decoder walks the input with bounds checks and refuses anything iavl
would never write, raising NodeDecodeError with the offset of the offending byte.

``binding=False``: the module's functions are plain builtins (METH_FASTCALL, the interpreter's specialised call
path) instead of cyfunctions, which takes ~100 instructions off each ~1000-instruction decode_node call.
inspect.signature() cannot read them; each docstring starts with its signature line instead (embedsignature).
The codec methods (to_bytes, encode, encoded_size) are defined again on LeafNode and InnerNode: CPython 3.11
specialises a builtin method's call only when self's type is the defining type.
"""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from mpt.core.bytes_like cimport as_bytes, as_bytes_or_none, get_bytes_view
from mpt.core.rlp cimport WriteBuffer
from mpt.core.varint cimport (
    MAX_VARINT_LEN64,
    VARINT_NON_CANONICAL,
    VARINT_OVERFLOW,
    VARINT_TRUNCATED,
    bitlen64,
    put_be32,
    put_be64,
    put_uvarint,
    put_varint,
    read_be32,
    read_be64,
    read_uvarint,
    unzigzag,
    uvarint_size,
    varint_size,
)

from mpt.core._sha256.sha256 cimport (
    mpt_sha256,
    mpt_sha256_ctx,
    mpt_sha256_final,
    mpt_sha256_init,
    mpt_sha256_update,
    share_sha256_backend,
)
from mpt.errors import NodeDecodeError, NodeEncodeError

# This module's copy of the C SHA-256 follows mpt._sha256.set_sha256_backend(), like mpt.merkle's.
share_sha256_backend()

cdef enum:
    # varint(height) + varint(size) + varint(version): the longest header any format or the hash writes.
    MAX_HEADER = 30
    # Height, control byte, four integers of up to 4 bytes, and 3 bytes of slack for _put_le32's full stores.
    VBYTE_HEADER_ROOM = 2 + 16 + 3

cdef uint64_t UINT32_MAX_ = 0xFFFFFFFF

cdef str _LEGACY = "legacy"
cdef str _V1 = "v1"
cdef str _VBYTE = "vbyte"
FORMATS = (_LEGACY, _V1, _VBYTE)


cdef int sha256_into(const uint8_t *data, Py_ssize_t n, uint8_t *out) except -1:
    mpt_sha256(data, <size_t>n, out)
    return 0


cdef inline int _fmt(object fmt) except -1:
    # The hot path of every Python-level codec call: literals are interned, so it is one or two pointer
    # compares; anything else (an equal str built at run time, or an int 0/1/2) goes through parse_format.
    if fmt is _VBYTE:
        return FORMAT_VBYTE
    if fmt is _LEGACY:
        return FORMAT_LEGACY
    if fmt is _V1:
        return FORMAT_V1
    return parse_format(fmt)


cdef int parse_format(object fmt) except -1:
    # Identity first: string literals are interned, so the common call costs one pointer compare.
    if fmt is _VBYTE:
        return FORMAT_VBYTE
    if fmt is _V1:
        return FORMAT_V1
    if fmt is _LEGACY:
        return FORMAT_LEGACY
    if fmt == _VBYTE:
        return FORMAT_VBYTE
    if fmt == _V1:
        return FORMAT_V1
    if fmt == _LEGACY:
        return FORMAT_LEGACY
    if type(fmt) is int and 0 <= <object>fmt <= 2:
        # An index into FORMATS (0 legacy, 1 v1, 2 vbyte): the same order as the NodeFormat enum.
        return <int>fmt
    raise ValueError("unknown IAVL node format %r (expected 'legacy', 'v1' or 'vbyte')" % (fmt,))


cdef bytes make_node_key(int64_t version, uint32_t nonce):
    cdef uint8_t out[NODE_KEY_SIZE]
    put_be64(out, <uint64_t>version)
    put_be32(out + 8, nonce)
    return PyBytes_FromStringAndSize(<char *>out, NODE_KEY_SIZE)


cdef object _as_int(object value, str what):
    # int(1.5) would be 1 and int("2") 2: only integers (int, numpy integers) are accepted, as the encoders
    # store them exactly.
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError("%s must be an integer, not %s" % (what, type(value).__name__))
    return value.__index__()


cdef object int_in_range(object value, str what, object lo, object hi, str message, type error):
    """value as an int (an integer type, as _as_int; a TypeError naming ``what``), or ``error(message % value)``
    if it is not in lo..hi: the one check of every node and export-node field."""
    value = _as_int(value, what)
    if not lo <= value <= hi:
        raise error(message % value)
    return value


cdef object MAX_INT64 = (1 << 63) - 1


cdef inline int _vbyte_len(uint32_t v) noexcept:
    # Bytes of v, at least 1, without branches.
    return (bitlen64(v) + 7) >> 3


cdef inline Py_ssize_t _put_le32(uint8_t *out, uint32_t v, int length, uint8_t *control, int slot) noexcept:
    # All four bytes are written whatever the length (no branches); the caller's buffer has 3 bytes of slack and
    # the next field overwrites the extra ones.
    out[0] = <uint8_t>v
    out[1] = <uint8_t>(v >> 8)
    out[2] = <uint8_t>(v >> 16)
    out[3] = <uint8_t>(v >> 24)
    control[0] |= <uint8_t>((length - 1) << (2 * slot))
    return length


cdef inline Py_ssize_t _vbyte_header(uint8_t *out, int height, uint32_t version, uint64_t size,
                                     uint32_t klen) noexcept:
    """height, control byte, the four integers; out has VBYTE_HEADER_ROOM bytes. Returns the header length."""
    cdef uint8_t control = 0
    cdef Py_ssize_t p = 2
    out[0] = <uint8_t>height
    p += _put_le32(out + p, version, _vbyte_len(version), &control, 0)
    p += _put_le32(out + p, <uint32_t>size, _vbyte_len(<uint32_t>size), &control, 1)
    p += _put_le32(out + p, <uint32_t>(size >> 32), _vbyte_len(<uint32_t>(size >> 32)), &control, 2)
    p += _put_le32(out + p, klen, _vbyte_len(klen), &control, 3)
    out[1] = control
    return p


cdef int _vbyte_version_error(int64_t version) except -1:
    raise NodeEncodeError("version is too large: %d does not fit the stream-vbyte format's uint32 "
                          "(PR #673 refuses versions above 2**32-1)" % version)


cdef inline Py_ssize_t _leaf_size(Node node, NodeFormat fmt) except -1:
    # A leaf's size is a sum of field lengths: straight-line, no virtual call, nothing allocated.
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(node.key), vlen = PyBytes_GET_SIZE(node.leaf_value)
    if fmt == FORMAT_VBYTE:
        if <uint64_t>node.version > UINT32_MAX_:
            _vbyte_version_error(node.version)
        # height, control, version, size low (1), size high (0), key length
        return 4 + _vbyte_len(<uint32_t>node.version) + _vbyte_len(<uint32_t>klen) + klen + vlen
    return 2 + (varint_size(node.version) if fmt == FORMAT_LEGACY else 0) + uvarint_size(<uint64_t>klen) + klen \
        + uvarint_size(<uint64_t>vlen) + vlen


cdef Py_ssize_t _leaf_header(Node node, NodeFormat fmt, uint8_t *head, uint8_t *vhead, Py_ssize_t *vh) except -1:
    """A leaf's bytes before the key (into head, VBYTE_HEADER_ROOM + MAX_HEADER bytes) and, for the varint
    formats, before the value (uvarint(len(value)) into vhead, vh[0] bytes). Returns the length of head."""
    cdef Py_ssize_t h
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(node.key)
    vh[0] = 0
    if fmt == FORMAT_VBYTE:
        if <uint64_t>node.version > UINT32_MAX_:
            _vbyte_version_error(node.version)
        if <uint64_t>klen > UINT32_MAX_:
            raise NodeEncodeError("key too long for the stream-vbyte format")
        return _vbyte_header(head, 0, <uint32_t>node.version, 1, <uint32_t>klen)
    head[0] = 0                     # varint(height 0)
    head[1] = 2                     # varint(size 1)
    h = 2
    if fmt == FORMAT_LEGACY:
        h += put_varint(head + h, node.version)
    h += put_uvarint(head + h, <uint64_t>klen)
    vh[0] = put_uvarint(vhead, <uint64_t>PyBytes_GET_SIZE(node.leaf_value))
    return h


cdef inline void _leaf_put(uint8_t *o, Node node, const uint8_t *head, Py_ssize_t h, const uint8_t *vhead,
                           Py_ssize_t vh) noexcept:
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(node.key)
    memcpy(o, head, <size_t>h)
    memcpy(o + h, PyBytes_AS_STRING(node.key), <size_t>klen)
    o += h + klen
    if vh:
        memcpy(o, vhead, <size_t>vh)
        o += vh
    memcpy(o, PyBytes_AS_STRING(node.leaf_value), <size_t>PyBytes_GET_SIZE(node.leaf_value))


cdef bytes _leaf_bytes(Node node, NodeFormat fmt):
    """A leaf's encoding in one pass: the header goes to a stack buffer (its length is then known), then one
    exact-size bytes object gets the header, the key and the value. No size pre-pass.

    The header code repeats _leaf_header's on purpose: gcc does not inline that one into a second caller, even
    declared inline, and the call with its out-parameter costs to_bytes ~40 instructions of its ~670 (calling
    it here measured 1.04-1.10x the encode time: `python docs/ab_compare.py <old> <new> --rounds 8 -b
    '^IAVLNode/Encode/.*$'`, 2026-12-01)."""
    cdef uint8_t head[VBYTE_HEADER_ROOM + MAX_HEADER]
    cdef uint8_t vhead[MAX_VARINT_LEN64]
    cdef Py_ssize_t h, vh = 0
    cdef Py_ssize_t klen = PyBytes_GET_SIZE(node.key), vlen = PyBytes_GET_SIZE(node.leaf_value)
    cdef bytes out
    if fmt == FORMAT_VBYTE:
        if <uint64_t>node.version > UINT32_MAX_:
            _vbyte_version_error(node.version)
        if <uint64_t>klen > UINT32_MAX_:
            raise NodeEncodeError("key too long for the stream-vbyte format")
        h = _vbyte_header(head, 0, <uint32_t>node.version, 1, <uint32_t>klen)
    else:
        head[0] = 0                     # varint(height 0)
        head[1] = 2                     # varint(size 1)
        h = 2
        if fmt == FORMAT_LEGACY:
            h += put_varint(head + h, node.version)
        h += put_uvarint(head + h, <uint64_t>klen)
        vh = put_uvarint(vhead, <uint64_t>vlen)
    out = PyBytes_FromStringAndSize(NULL, h + klen + vh + vlen)
    _leaf_put(<uint8_t *>PyBytes_AS_STRING(out), node, head, h, vhead, vh)
    return out


cdef inline Py_ssize_t _put_bytes(uint8_t *out, bytes b) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    cdef Py_ssize_t h = put_uvarint(out, <uint64_t>n)
    memcpy(out + h, PyBytes_AS_STRING(b), <size_t>n)
    return h + n


cdef inline Py_ssize_t _bytes_size(bytes b) noexcept:
    cdef Py_ssize_t n = PyBytes_GET_SIZE(b)
    return uvarint_size(<uint64_t>n) + n


cdef inline void _hash_bytes(mpt_sha256_ctx *ctx, bytes b) noexcept:
    """Feed bytes(b) = uvarint(len) || b to ctx."""
    cdef uint8_t head[10]
    cdef Py_ssize_t h = put_uvarint(head, <uint64_t>PyBytes_GET_SIZE(b))
    mpt_sha256_update(ctx, head, <size_t>h)
    mpt_sha256_update(ctx, <const uint8_t *>PyBytes_AS_STRING(b), <size_t>PyBytes_GET_SIZE(b))


cdef bint _is_v1_ref(bytes ref) noexcept:
    return PyBytes_GET_SIZE(ref) == NODE_KEY_SIZE


cdef Py_ssize_t _v1_ref_size(bytes ref) noexcept:
    cdef const uint8_t *p
    if PyBytes_GET_SIZE(ref) == NODE_KEY_SIZE:
        p = <const uint8_t *>PyBytes_AS_STRING(ref)
        return varint_size(<int64_t>read_be64(p)) + varint_size(<int64_t>read_be32(p + 8))
    return 1 + HASH_SIZE


cdef Py_ssize_t _put_v1_ref(uint8_t *out, bytes ref) noexcept:
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(ref)
    cdef Py_ssize_t n
    if PyBytes_GET_SIZE(ref) == NODE_KEY_SIZE:
        n = put_varint(out, <int64_t>read_be64(p))
        return n + put_varint(out + n, <int64_t>read_be32(p + 8))
    out[0] = HASH_SIZE
    memcpy(out + 1, p, HASH_SIZE)
    return 1 + HASH_SIZE


cdef int _check_ref(bytes ref, str side) except -1:
    if ref is None:
        raise NodeEncodeError("an inner node needs its %s child's node key for the v1 format" % side)
    if PyBytes_GET_SIZE(ref) != NODE_KEY_SIZE and PyBytes_GET_SIZE(ref) != HASH_SIZE:
        raise NodeEncodeError("the %s child reference must be a 12-byte NodeKey or a 32-byte legacy hash" % side)
    return 0


# No GC tracking: a node references only its children (and bytes), never an ancestor, and Python code cannot
# link nodes, so no cycle can form; untracked nodes also keep allocation-heavy loops out of the cyclic GC.
@cython.no_gc
@cython.freelist(64)
cdef class Node:
    """An IAVL node. Use LeafNode / InnerNode to build one, decode_node to read one."""

    def __init__(self):
        raise TypeError("use LeafNode(...), InnerNode(...) or decode_node(...)")

    # ------------------------------------------------------------------------------------------ sizes

    cdef Py_ssize_t c_encoded_size(self, NodeFormat fmt) except -1:
        # A cast, not a check: only read for height > 0.
        cdef InnerNode inner = <InnerNode>self
        cdef Py_ssize_t n
        if fmt == FORMAT_VBYTE:
            if <uint64_t>self.version > UINT32_MAX_:
                _vbyte_version_error(self.version)
            n = 2 + _vbyte_len(<uint32_t>self.version) + _vbyte_len(<uint32_t>self.size) \
                + _vbyte_len(<uint32_t>(<uint64_t>self.size >> 32)) \
                + _vbyte_len(<uint32_t>PyBytes_GET_SIZE(self.key)) + PyBytes_GET_SIZE(self.key)
            if self.height == 0:
                return n + PyBytes_GET_SIZE(self.leaf_value)
            return n + 2 * HASH_SIZE
        n = varint_size(self.height) + varint_size(self.size) + _bytes_size(self.key)
        if fmt == FORMAT_LEGACY:
            n += varint_size(self.version)
            if self.height == 0:
                return n + _bytes_size(self.leaf_value)
            self._need_child_hashes()
            return n + _bytes_size(inner.left_child_hash) + _bytes_size(inner.right_child_hash)
        if self.height == 0:
            return n + _bytes_size(self.leaf_value)
        _check_ref(inner.left_ref, "left")
        _check_ref(inner.right_ref, "right")
        # 0x20 + own hash, one mode byte (0..3), then the children.
        return n + 1 + HASH_SIZE + 1 + _v1_ref_size(inner.left_ref) + _v1_ref_size(inner.right_ref)

    cdef int _need_child_hashes(self) except -1:
        # A cast, not a check: only read for height > 0.
        cdef InnerNode inner = <InnerNode>self
        if inner.left_child_hash is None or inner.right_child_hash is None:
            raise NodeEncodeError("this inner node does not know its children's hashes (it was read from the "
                                  "v1 format, which stores child node keys); the legacy and vbyte formats and "
                                  "the hash need them")
        return 0

    # ------------------------------------------------------------------------------------------ writing

    cdef Py_ssize_t _write(self, uint8_t *out, NodeFormat fmt) except -1:
        """Write the encoding at out, which has c_encoded_size(fmt) bytes of room (checked by the callers)."""
        # A cast, not a check: only read for height > 0.
        cdef InnerNode inner = <InnerNode>self
        cdef Py_ssize_t p = 0
        cdef Py_ssize_t klen = PyBytes_GET_SIZE(self.key)
        cdef uint8_t head[VBYTE_HEADER_ROOM]
        cdef bytes own
        cdef int mode
        if fmt == FORMAT_VBYTE:
            p = _vbyte_header(head, self.height, <uint32_t>self.version, <uint64_t>self.size, <uint32_t>klen)
            memcpy(out, head, <size_t>p)
            memcpy(out + p, PyBytes_AS_STRING(self.key), <size_t>klen)
            p += klen
            if self.height == 0:
                memcpy(out + p, PyBytes_AS_STRING(self.leaf_value), <size_t>PyBytes_GET_SIZE(self.leaf_value))
                return p + PyBytes_GET_SIZE(self.leaf_value)
            memcpy(out + p, PyBytes_AS_STRING(inner.left_child_hash), HASH_SIZE)
            memcpy(out + p + HASH_SIZE, PyBytes_AS_STRING(inner.right_child_hash), HASH_SIZE)
            return p + 2 * HASH_SIZE
        p = put_varint(out, self.height)
        p += put_varint(out + p, self.size)
        if fmt == FORMAT_LEGACY:
            p += put_varint(out + p, self.version)
        p += _put_bytes(out + p, self.key)
        if self.height == 0:
            return p + _put_bytes(out + p, self.leaf_value)
        if fmt == FORMAT_LEGACY:
            p += _put_bytes(out + p, inner.left_child_hash)
            return p + _put_bytes(out + p, inner.right_child_hash)
        own = self.c_hash()
        out[p] = HASH_SIZE
        memcpy(out + p + 1, PyBytes_AS_STRING(own), HASH_SIZE)
        p += 1 + HASH_SIZE
        mode = 0
        if not _is_v1_ref(inner.left_ref):
            mode |= MODE_LEGACY_LEFT
        if not _is_v1_ref(inner.right_ref):
            mode |= MODE_LEGACY_RIGHT
        p += put_varint(out + p, mode)
        p += _put_v1_ref(out + p, inner.left_ref)
        return p + _put_v1_ref(out + p, inner.right_ref)

    cdef int _check_encodable(self, NodeFormat fmt) except -1:
        # A cast, not a check: only read for height > 0.
        cdef InnerNode inner = <InnerNode>self
        if fmt == FORMAT_VBYTE:
            if <uint64_t>self.version > UINT32_MAX_:
                _vbyte_version_error(self.version)
            if PyBytes_GET_SIZE(self.key) > UINT32_MAX_:
                raise NodeEncodeError("key too long for the stream-vbyte format")
            if self.height != 0:
                self._need_child_hashes()
                if (PyBytes_GET_SIZE(inner.left_child_hash) != HASH_SIZE
                        or PyBytes_GET_SIZE(inner.right_child_hash) != HASH_SIZE):
                    raise NodeEncodeError("the stream-vbyte format stores child hashes raw: both must be 32 bytes")
        elif fmt == FORMAT_V1 and self.height != 0:
            # The own hash is written too: computing it needs the child hashes unless it was decoded.
            if self.cached_hash is None:
                self._need_child_hashes()
        return 0

    cdef int c_encode(self, WriteBuffer buf, NodeFormat fmt) except -1:
        cdef Py_ssize_t n, h, vh
        cdef uint8_t head[VBYTE_HEADER_ROOM + MAX_HEADER]
        cdef uint8_t vhead[MAX_VARINT_LEN64]
        if self.height == 0:
            # One pass, as _leaf_bytes: the header sized on the stack, one ensure(), three copies.
            h = _leaf_header(self, fmt, head, vhead, &vh)
            n = h + PyBytes_GET_SIZE(self.key) + vh + PyBytes_GET_SIZE(self.leaf_value)
            buf.ensure(n)
            _leaf_put(buf.tail(), self, head, h, vhead, vh)
            buf.advance(n)
            return 0
        self._check_encodable(fmt)
        n = self.c_encoded_size(fmt)
        buf.ensure(n)
        self._write(buf.tail(), fmt)
        buf.advance(n)
        return 0

    cdef bytes c_to_bytes(self, NodeFormat fmt):
        cdef Py_ssize_t n
        cdef bytes out
        if self.height == 0:
            return _leaf_bytes(self, fmt)
        self._check_encodable(fmt)
        n = self.c_encoded_size(fmt)
        out = PyBytes_FromStringAndSize(NULL, n)
        self._write(<uint8_t *>PyBytes_AS_STRING(out), fmt)
        return out

    # ------------------------------------------------------------------------------------------ hashing

    cdef bytes c_hash(self):
        # A cast, not a check: only read for height > 0.
        cdef InnerNode inner = <InnerNode>self
        # Streamed: the header and bytes(key) go through a small stack buffer, the key itself straight from
        # the bytes object, so no preimage is ever copied whole.
        cdef mpt_sha256_ctx ctx
        cdef uint8_t head[MAX_HEADER + 10]
        cdef uint8_t tail[1 + HASH_SIZE]
        cdef uint8_t digest[HASH_SIZE]
        cdef Py_ssize_t p
        if self.cached_hash is not None:
            return self.cached_hash
        if self.height != 0:
            self._need_child_hashes()
        p = put_varint(head, self.height)
        p += put_varint(head + p, self.size)
        p += put_varint(head + p, self.version)
        mpt_sha256_init(&ctx)
        if self.height == 0:
            p += put_uvarint(head + p, <uint64_t>PyBytes_GET_SIZE(self.key))
            mpt_sha256_update(&ctx, head, <size_t>p)
            mpt_sha256_update(&ctx, <const uint8_t *>PyBytes_AS_STRING(self.key), <size_t>PyBytes_GET_SIZE(self.key))
            tail[0] = HASH_SIZE
            mpt_sha256(<const uint8_t *>PyBytes_AS_STRING(self.leaf_value), <size_t>PyBytes_GET_SIZE(self.leaf_value),
                       tail + 1)
            mpt_sha256_update(&ctx, tail, 1 + HASH_SIZE)
        else:
            mpt_sha256_update(&ctx, head, <size_t>p)
            _hash_bytes(&ctx, inner.left_child_hash)
            _hash_bytes(&ctx, inner.right_child_hash)
        mpt_sha256_final(&ctx, digest)
        self.cached_hash = PyBytes_FromStringAndSize(<char *>digest, HASH_SIZE)
        return self.cached_hash

    cdef bytes node_key_bytes(self):
        return make_node_key(self.version, self.nonce)

    # ------------------------------------------------------------------------------------------ Python API

    def to_bytes(self, format="v1"):
        """The node's encoding in format ``"legacy"``, ``"v1"`` (default) or ``"vbyte"``."""
        return self.c_to_bytes(<NodeFormat>_fmt(format))

    def encode(self, WriteBuffer buf not None, format="v1"):
        """Append the encoding to buf (an mpt.rlp.WriteBuffer); return the number of bytes written."""
        cdef NodeFormat fmt = <NodeFormat>_fmt(format)
        cdef Py_ssize_t before = buf.length()
        self.c_encode(buf, fmt)
        return buf.length() - before

    def encoded_size(self, format="v1"):
        """Length of to_bytes(format), computed without encoding (no allocation)."""
        if self.height == 0:
            return _leaf_size(self, <NodeFormat>_fmt(format))
        return self.c_encoded_size(<NodeFormat>_fmt(format))

    @property
    def hash(self):
        """The 32-byte node hash (the same in every format)."""
        return self.c_hash()

    @property
    def value(self):
        """The value of a leaf (None for an inner node)."""
        return self.leaf_value

    @property
    def is_leaf(self):
        return self.height == 0

    @property
    def node_key(self):
        """The v1 NodeKey (version u64 BE || nonce u32 BE), or None for a node without a nonce (legacy)."""
        if self.nonce == 0:
            return None
        return self.node_key_bytes()

    @property
    def left_hash(self):
        return None if self.height == 0 else (<InnerNode>self).left_child_hash

    @property
    def right_hash(self):
        return None if self.height == 0 else (<InnerNode>self).right_child_hash

    @property
    def left_node_key(self):
        """Inner node: how the v1 format references the left child (12-byte NodeKey or 32-byte legacy hash)."""
        return None if self.height == 0 else (<InnerNode>self).left_ref

    @property
    def right_node_key(self):
        return None if self.height == 0 else (<InnerNode>self).right_ref


@cython.final
@cython.no_gc
cdef class LeafNode(Node):
    """A leaf: ``LeafNode(key, value, version, nonce=0)``; height 0, size 1."""

    def __init__(self, key, value, version, nonce=0):
        version = int_in_range(version, "version", 0, MAX_INT64, "version must be in 0..2**63-1, got %d",
                               ValueError)
        nonce = int_in_range(nonce, "nonce", 0, UINT32_MAX_, "nonce must be in 0..2**32-1, got %d", ValueError)
        self.key = as_bytes(key, "key")
        self.leaf_value = as_bytes(value, "value")
        self.height = 0
        self.size = 1
        self.version = version
        self.nonce = nonce

    @staticmethod
    cdef LeafNode new(bytes key, bytes value, int64_t version):
        cdef LeafNode n = LeafNode.__new__(LeafNode)
        n.key = key
        n.leaf_value = value
        n.height = 0
        n.size = 1
        n.version = version
        return n

    # The codec methods again on each concrete class: CPython 3.11 specialises the call of a builtin method
    # (METH_FASTCALL) only when self's type is exactly the type that defines it; Node's, called on a LeafNode,
    # would take the generic path with a subclass check (~110 instructions more than this).
    def to_bytes(self, format="v1"):
        """The node's encoding in format ``"legacy"``, ``"v1"`` (default) or ``"vbyte"``."""
        return _leaf_bytes(self, <NodeFormat>_fmt(format))

    def encode(self, WriteBuffer buf not None, format="v1"):
        """Append the encoding to buf (an mpt.rlp.WriteBuffer); return the number of bytes written."""
        cdef Py_ssize_t before = buf.length()
        self.c_encode(buf, <NodeFormat>_fmt(format))
        return buf.length() - before

    def encoded_size(self, format="v1"):
        """Length of to_bytes(format), computed without encoding (no allocation)."""
        return _leaf_size(self, <NodeFormat>_fmt(format))

    def __repr__(self):
        return "LeafNode(key=%r, value=%r, version=%d, nonce=%d)" % (self.key, self.leaf_value, self.version,
                                                                    self.nonce)


@cython.final
@cython.no_gc
@cython.freelist(64)
cdef class InnerNode(Node):
    """An inner node.

    ``InnerNode(key, height, size, version, left_hash=None, right_hash=None, *, left_node_key=None,
    right_node_key=None, hash=None, nonce=0)``: key is the smallest key of the right subtree. The legacy and
    vbyte formats and the hash need both child hashes; the v1 format needs the children's node keys (12-byte
    NodeKey, or the 32-byte hash of a legacy child) and the node's own hash (computed from the child hashes, or
    given as ``hash`` when they are unknown, as for a node decoded from v1).
    """

    def __init__(self, key, height, size, version, left_hash=None, right_hash=None, *, left_node_key=None,
                 right_node_key=None, hash=None, nonce=0):
        height = int_in_range(height, "height", 1, MAX_HEIGHT, "an inner node's height must be in 1..127, got %d",
                              ValueError)
        size = int_in_range(size, "size", 2, MAX_INT64, "an inner node's size must be in 2..2**63-1, got %d",
                            ValueError)
        version = int_in_range(version, "version", 0, MAX_INT64, "version must be in 0..2**63-1, got %d",
                               ValueError)
        nonce = int_in_range(nonce, "nonce", 0, UINT32_MAX_, "nonce must be in 0..2**32-1, got %d", ValueError)
        if (left_hash is None) != (right_hash is None):
            raise ValueError("give both child hashes or neither")
        if hash is not None:
            hash = as_bytes(hash, "hash")
            if len(hash) != HASH_SIZE:
                raise ValueError("hash must be 32 bytes, got %d" % len(hash))
        # What decode_node refuses, the constructor refuses: a child hash is a SHA-256 digest.
        if left_hash is not None:
            left_hash = as_bytes(left_hash, "left_hash")
            right_hash = as_bytes(right_hash, "right_hash")
            if len(left_hash) != HASH_SIZE or len(right_hash) != HASH_SIZE:
                raise ValueError("left_hash and right_hash must be 32 bytes, got %d and %d"
                                 % (len(left_hash), len(right_hash)))
        self.key = as_bytes(key, "key")
        self.height = height
        self.size = size
        self.version = version
        self.nonce = nonce
        self.left_child_hash = left_hash
        self.right_child_hash = right_hash
        self.left_ref = as_bytes_or_none(left_node_key, "left_node_key")
        self.right_ref = as_bytes_or_none(right_node_key, "right_node_key")
        for ref in (self.left_ref, self.right_ref):
            if ref is not None and len(ref) not in (NODE_KEY_SIZE, HASH_SIZE):
                raise ValueError("a child node key is a 12-byte NodeKey or a 32-byte legacy hash")
        self.cached_hash = hash

    @staticmethod
    cdef InnerNode new(bytes key, int height, int64_t size, int64_t version):
        cdef InnerNode n = InnerNode.__new__(InnerNode)
        n.key = key
        n.height = height
        n.size = size
        n.version = version
        return n

    # See LeafNode: the codec methods on the exact type, for CPython's specialised call.
    def to_bytes(self, format="v1"):
        """The node's encoding in format ``"legacy"``, ``"v1"`` (default) or ``"vbyte"``."""
        return self.c_to_bytes(<NodeFormat>_fmt(format))

    def encode(self, WriteBuffer buf not None, format="v1"):
        """Append the encoding to buf (an mpt.rlp.WriteBuffer); return the number of bytes written."""
        cdef Py_ssize_t before = buf.length()
        self.c_encode(buf, <NodeFormat>_fmt(format))
        return buf.length() - before

    def encoded_size(self, format="v1"):
        """Length of to_bytes(format), computed without encoding (no allocation)."""
        return self.c_encoded_size(<NodeFormat>_fmt(format))

    def __repr__(self):
        return "InnerNode(key=%r, height=%d, size=%d, version=%d, nonce=%d)" % (
            self.key, self.height, self.size, self.version, self.nonce)


# ---------------------------------------------------------------------------------------------- decoding

cdef int _fail(str what, Py_ssize_t offset) except -1:
    err = NodeDecodeError("%s at offset %d" % (what, offset))
    err.offset = offset
    raise err


cdef int _varint_fail(Py_ssize_t code, str what, Py_ssize_t pos) except -1:
    if code == VARINT_TRUNCATED:
        _fail("truncated varint (%s)" % what, pos)
    if code == VARINT_OVERFLOW:
        _fail("varint overflows 64 bits (%s)" % what, pos)
    _fail("non-canonical varint (%s)" % what, pos)
    return -1


cdef inline Py_ssize_t _uvarint(const uint8_t *data, Py_ssize_t pos, Py_ssize_t n, uint64_t *out,
                                str what) except -1:
    cdef Py_ssize_t r = read_uvarint(data, pos, n, out)
    if r >= 0:
        return r
    return _varint_fail(r, what, pos)


cdef inline Py_ssize_t _varint(const uint8_t *data, Py_ssize_t pos, Py_ssize_t n, int64_t *out,
                               str what) except -1:
    cdef uint64_t u
    if pos < n and data[pos] < 0x80:
        # One byte: the common case for heights, sizes of small subtrees and key/value lengths.
        out[0] = unzigzag(data[pos])
        return pos + 1
    pos = _uvarint(data, pos, n, &u, what)
    out[0] = unzigzag(u)
    return pos


cdef inline bytes _read_bytes(const uint8_t *data, Py_ssize_t *pos, Py_ssize_t n, str what):
    """Read bytes(x) = uvarint(len) || x at data[pos[0]:n]; advance pos[0] past it."""
    cdef uint64_t length
    cdef Py_ssize_t at = pos[0]
    cdef Py_ssize_t start
    if at < n and data[at] < 0x80:
        length = data[at]
        start = at + 1
    else:
        start = read_uvarint(data, at, n, &length)
        if start < 0:
            _varint_fail(start, what + " length", at)
    if length > <uint64_t>(n - start):
        _fail("%s length %d exceeds the %d bytes left" % (what, length, n - start), at)
    pos[0] = start + <Py_ssize_t>length
    return PyBytes_FromStringAndSize(<const char *>data + start, <Py_ssize_t>length)


cdef int _check_shape(int64_t height, int64_t size, Py_ssize_t height_at, Py_ssize_t size_at) except -1:
    if height < 0:
        _fail("negative height %d" % height, height_at)
    if height > MAX_HEIGHT:
        _fail("height %d does not fit an int8" % height, height_at)
    if size < 0:
        _fail("negative size %d" % size, size_at)
    if height == 0 and size != 1:
        _fail("a leaf's size must be 1, not %d" % size, size_at)
    if height > 0 and size < 2:
        _fail("an inner node's size must be at least 2, not %d" % size, size_at)
    return 0


cdef bytes _read_child_hash(const uint8_t *data, Py_ssize_t *pos, Py_ssize_t n, str what):
    cdef Py_ssize_t at = pos[0]
    cdef bytes out = _read_bytes(data, pos, n, what)
    if PyBytes_GET_SIZE(out) != HASH_SIZE:
        _fail("%s is %d bytes, not 32" % (what, PyBytes_GET_SIZE(out)), at)
    return out


cdef bytes _read_v1_ref(const uint8_t *data, Py_ssize_t *pos, Py_ssize_t n, bint legacy, bint left):
    cdef int64_t version, nonce
    cdef Py_ssize_t at = pos[0]
    cdef str side = "left" if left else "right"
    if legacy:
        return _read_child_hash(data, pos, n, "left child hash" if left else "right child hash")
    pos[0] = _varint(data, pos[0], n, &version, "child version")
    if version < 0:
        _fail("negative %s child version %d" % (side, version), at)
    at = pos[0]
    pos[0] = _varint(data, pos[0], n, &nonce, "child nonce")
    if nonce < 0 or <uint64_t>nonce > UINT32_MAX_:
        _fail("%s child nonce %d does not fit a uint32" % (side, nonce), at)
    return make_node_key(version, <uint32_t>nonce)


cdef inline uint32_t _le32(const uint8_t *p, int length) noexcept:
    """A stream-vbyte integer of length 1..4 bytes, little-endian."""
    cdef uint32_t v = p[0]
    if length > 1:
        v |= <uint32_t>p[1] << 8
        if length > 2:
            v |= <uint32_t>p[2] << 16
            if length > 3:
                v |= <uint32_t>p[3] << 24
    return v


cdef Node _decode_vbyte(const uint8_t *data, Py_ssize_t n):
    # Straight-line: the control byte gives all four lengths at once, one bounds check covers the header, and a
    # leaf (the common node) checks its shape inline; the key and value are sliced once into their bytes objects.
    cdef int height, l0, l1, l2, l3
    cdef uint8_t control
    cdef Py_ssize_t pos
    cdef uint32_t version, size_lo, size_hi, klen
    cdef const uint8_t *p
    cdef bytes key
    cdef InnerNode inner
    if n < 2:
        _fail("truncated header (%d of at least 2 bytes)" % n, n)
    height = <signed char>data[0]
    control = data[1]
    l0 = (control & 3) + 1
    l1 = ((control >> 2) & 3) + 1
    l2 = ((control >> 4) & 3) + 1
    l3 = (control >> 6) + 1
    pos = 2 + l0 + l1 + l2 + l3
    if pos > n:
        _fail("control byte 0x%02x promises %d more bytes than there are" % (control, pos - n), 1)
    # Canonical: a multi-byte integer has a non-zero top byte (the encoder picks the shortest length).
    p = data + 2
    if l0 > 1 and p[l0 - 1] == 0:
        _fail("non-canonical stream-vbyte integer (a zero top byte)", 2)
    version = _le32(p, l0)
    p += l0
    if l1 > 1 and p[l1 - 1] == 0:
        _fail("non-canonical stream-vbyte integer (a zero top byte)", p - data)
    size_lo = _le32(p, l1)
    p += l1
    if l2 > 1 and p[l2 - 1] == 0:
        _fail("non-canonical stream-vbyte integer (a zero top byte)", p - data)
    size_hi = _le32(p, l2)
    p += l2
    if l3 > 1 and p[l3 - 1] == 0:
        _fail("non-canonical stream-vbyte integer (a zero top byte)", p - data)
    klen = _le32(p, l3)
    if height != 0 or size_lo != 1 or size_hi != 0:
        _check_shape(height, <int64_t>(size_lo | (<uint64_t>size_hi << 32)), 0, 1)
    if klen > <uint64_t>(n - pos):
        _fail("key length %d exceeds the %d bytes left" % (klen, n - pos), 1)
    key = PyBytes_FromStringAndSize(<const char *>data + pos, <Py_ssize_t>klen)
    pos += <Py_ssize_t>klen
    if height == 0:
        return LeafNode.new(key, PyBytes_FromStringAndSize(<const char *>data + pos, n - pos), version)
    if n - pos != 2 * HASH_SIZE:
        _fail("an inner node ends with two 32-byte hashes, %d bytes left" % (n - pos), pos)
    inner = InnerNode.new(key, height, <int64_t>(size_lo | (<uint64_t>size_hi << 32)), version)
    inner.left_child_hash = PyBytes_FromStringAndSize(<const char *>data + pos, HASH_SIZE)
    inner.right_child_hash = PyBytes_FromStringAndSize(<const char *>data + pos + HASH_SIZE, HASH_SIZE)
    return inner


cdef Node c_decode_node(const uint8_t *data, Py_ssize_t n, NodeFormat fmt, int64_t version, uint32_t nonce,
                        bint has_node_key):
    """Decode one node spanning data[:n]. v1 takes version and nonce from the NodeKey (has_node_key)."""
    cdef Py_ssize_t pos = 0, at, size_at
    cdef int64_t height, size, mode
    cdef bytes key, value
    cdef LeafNode leaf
    cdef InnerNode inner
    if fmt == FORMAT_V1 and not has_node_key:
        raise ValueError("the v1 format does not store the version: pass the 12-byte node_key")
    if fmt == FORMAT_VBYTE:
        return _decode_vbyte(data, n)
    pos = _varint(data, 0, n, &height, "height")
    size_at = pos
    pos = _varint(data, pos, n, &size, "size")
    _check_shape(height, size, 0, size_at)
    if fmt == FORMAT_LEGACY:
        at = pos
        pos = _varint(data, pos, n, &version, "version")
        if version < 0:
            _fail("negative version %d" % version, at)
    key = _read_bytes(data, &pos, n, "key")
    if height == 0:
        value = _read_bytes(data, &pos, n, "value")
        if pos != n:
            _fail("%d trailing bytes" % (n - pos), pos)
        leaf = LeafNode.new(key, value, version)
        leaf.nonce = nonce
        return leaf
    inner = InnerNode.new(key, <int>height, size, version)
    inner.nonce = nonce
    if fmt == FORMAT_LEGACY:
        inner.left_child_hash = _read_child_hash(data, &pos, n, "left child hash")
        inner.right_child_hash = _read_child_hash(data, &pos, n, "right child hash")
    else:
        inner.cached_hash = _read_child_hash(data, &pos, n, "node hash")
        at = pos
        pos = _varint(data, pos, n, &mode, "mode")
        if mode < 0 or mode > 3:
            _fail("invalid child mode %d" % mode, at)
        inner.left_ref = _read_v1_ref(data, &pos, n, mode & MODE_LEGACY_LEFT, True)
        inner.right_ref = _read_v1_ref(data, &pos, n, mode & MODE_LEGACY_RIGHT, False)
    if pos != n:
        _fail("%d trailing bytes" % (n - pos), pos)
    return inner


def decode_node(data, format="v1", node_key=None):
    """Decode a node from bytes in format ``"legacy"``, ``"v1"`` (default) or ``"vbyte"``.

    v1 needs the 12-byte node_key (the database key, version u64 BE || nonce u32 BE): the bytes do not hold
    the version. Raises NodeDecodeError (with ``.offset``) for anything iavl would never have written.
    """
    cdef NodeFormat fmt = <NodeFormat>_fmt(format)
    cdef Py_buffer view
    cdef int64_t version = 0
    cdef uint32_t nonce = 0
    cdef bint has_key = False
    cdef const uint8_t *k
    if fmt == FORMAT_VBYTE and node_key is None and type(data) is bytes:
        # The hot path: no node key to read (stream-vbyte holds the version), no buffer to acquire.
        return _decode_vbyte(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
    if node_key is not None:
        nk = as_bytes(node_key, "node_key")
        if PyBytes_GET_SIZE(nk) != NODE_KEY_SIZE:
            raise ValueError("a node key is 12 bytes (version u64 BE || nonce u32 BE)")
        k = <const uint8_t *>PyBytes_AS_STRING(nk)
        version = <int64_t>read_be64(k)
        if version < 0:
            raise ValueError("node key version does not fit an int64")
        nonce = read_be32(k + 8)
        has_key = True
    if type(data) is bytes:
        return c_decode_node(<const uint8_t *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), fmt, version,
                             nonce, has_key)
    get_bytes_view(data, &view, "data")
    try:
        return c_decode_node(<const uint8_t *>view.buf, view.len, fmt, version, nonce, has_key)
    finally:
        PyBuffer_Release(&view)


def node_key(version, nonce):
    """The v1 NodeKey bytes: version u64 big-endian || nonce u32 big-endian."""
    version = int_in_range(version, "version", 0, MAX_INT64, "version must be in 0..2**63-1, got %d",
                               ValueError)
    nonce = int_in_range(nonce, "nonce", 0, UINT32_MAX_, "nonce must be in 0..2**32-1, got %d", ValueError)
    return make_node_key(version, nonce)
