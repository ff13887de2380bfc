# cython: language_level=3
"""StackTrie: builds a trie root from keys given in strictly ascending order.

Once a key arrives, every subtree to the left of its path can no longer change, so it is finished right away and
only its reference (a hash, or the encoding itself when under 32 bytes) is kept: memory stays proportional to the
key length, not to the number of keys. With ``on_node`` every finished node of 32 bytes or more (and the root) is
streamed out, which is how a StackTrie writes a trie into a database without holding it.

The builder underneath (``STBuilder``, declared in stacktrie.pxd) is plain C data: the open path is a stack of
branch frames, each holding its children's encodings in one byte buffer. The item being added last (the
"pending" one) stays open because the next key decides how long its leaf key is; when a branch is complete its
children of 32 bytes or more are hashed together on the Keccak backend's SIMD lanes, then the branch is encoded
into its parent's buffer. Nothing in it needs the GIL, so :mod:`mpt.parallel` runs one builder per shard on
several threads.

Items are either leaves or finished subtrees (``ST_REF``: the reference to a branch at a known path), which is
how mpt.parallel combines shard results into the top levels. Keys that are prefixes of later keys (a value in a
branch) are allowed when ``allow_prefix`` is set; StackTrie refuses them, like geth.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawRealloc
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy, memset

from mpt.core.bytes_like cimport as_bytes
from mpt.core.runtime import keccak_backend
from mpt.core.rlp cimport header_size, put_header, string_size
from mpt.core._keccak.keccak cimport (
    MPT_KECCAK_BACKENDS,
    mpt_keccak256,
    mpt_keccak256_many,
    mpt_keccak_backend_name,
    mpt_keccak_best_backend,
)
from mpt.ethereum.encoding cimport compact_size_nibbles, prefix_length, write_nibbles
from mpt.ethereum.node_enc cimport (EMPTY_STRING, HASH_REF_SIZE, branch_value_size, short_node_size,
                                    write_branch_head, write_branch_value, write_extension_nibbles, write_hash_ref,
                                    write_hash_ref_header, write_leaf_nibbles, write_short_nibbles)

cdef bytes _EMPTY_ROOT = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
cdef uint8_t _EMPTY_ROOT_C[32]
memcpy(_EMPTY_ROOT_C, <const char *>_EMPTY_ROOT, 32)


# ---------------------------------------------------------------------------------------------------------------
# Buffers (the node encodings are node_enc.pxd's: sizes first, then the bytes written in place)
# ---------------------------------------------------------------------------------------------------------------

cdef inline int _grow(uint8_t **buf, size_t *cap, size_t need) noexcept nogil:
    cdef size_t new_cap
    cdef uint8_t *p
    if need <= cap[0]:
        return 0
    new_cap = cap[0] * 2
    if new_cap < need:
        new_cap = need
    if new_cap < 256:
        new_cap = 256
    p = <uint8_t *>PyMem_RawRealloc(buf[0], new_cap)
    if p == NULL:
        return -1
    buf[0] = p
    cap[0] = new_cap
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------------------------------

cdef inline void _frame_clear(STFrame *f, size_t depth) noexcept nogil:
    f.depth = depth
    f.mask = 0
    f.buf_len = 0
    f.has_value = False


cdef inline STFrame *_push_frame(STBuilder *b, size_t depth) noexcept nogil:
    cdef STFrame *frames
    cdef size_t new_cap
    if b.nframes == b.frames_cap:
        new_cap = b.frames_cap * 2 if b.frames_cap else 16
        frames = <STFrame *>PyMem_RawRealloc(b.frames, new_cap * sizeof(STFrame))
        if frames == NULL:
            return NULL
        # Frames past nframes keep their buffers for reuse; fresh ones start without any.
        memset(frames + b.frames_cap, 0, (new_cap - b.frames_cap) * sizeof(STFrame))
        b.frames = frames
        b.frames_cap = new_cap
    _frame_clear(&b.frames[b.nframes], depth)
    b.nframes += 1
    return &b.frames[b.nframes - 1]


cdef inline void _frame_record(STFrame *f, uint8_t slot, size_t n, bint is_ref) noexcept nogil:
    # The n bytes just written at the end of f's buffer are the child in slot.
    f.off[slot] = f.buf_len
    f.len[slot] = n
    f.is_ref[slot] = is_ref
    f.mask |= (<uint32_t>1) << slot
    f.buf_len += n


cdef inline int _frame_put(STFrame *f, uint8_t slot, const uint8_t *data, size_t n, bint is_ref) noexcept nogil:
    if _grow(&f.buf, &f.buf_cap, f.buf_len + n) < 0:
        return -1
    memcpy(f.buf + f.buf_len, data, n)
    _frame_record(f, slot, n, is_ref)
    return 0


cdef inline size_t _leaf_size(size_t n, const uint8_t *value, size_t value_len) noexcept nogil:
    # The size of the leaf write_leaf_nibbles writes for n nibbles (no terminator) and value.
    return <size_t>short_node_size(compact_size_nibbles(n), string_size(value, value_len))


cdef int _emit_pending(STBuilder *b, STFrame *f) noexcept nogil:
    """The pending item is complete: put it into f's slot on its path (its key goes on below that slot)."""
    cdef uint8_t slot = b.prev[f.depth]
    cdef const uint8_t *rest = b.prev + f.depth + 1
    cdef size_t n = b.prev_len - f.depth - 1, size
    if b.pending == ST_LEAF:
        size = _leaf_size(n, b.pvalue, b.pvalue_len)
    elif n == 0:
        return _frame_put(f, slot, b.pref, b.pref_len, True)
    else:
        size = <size_t>short_node_size(compact_size_nibbles(n), b.pref_len)
    if _grow(&f.buf, &f.buf_cap, f.buf_len + size) < 0:
        return -1
    if b.pending == ST_LEAF:
        write_leaf_nibbles(f.buf + f.buf_len, rest, n, b.pvalue, b.pvalue_len)
    else:
        write_extension_nibbles(f.buf + f.buf_len, rest, n, b.pref, b.pref_len)
    _frame_record(f, slot, size, False)
    return 0


cdef inline int _notify(STBuilder *b, size_t depth, int slot, const uint8_t *digest, const uint8_t *blob,
                        size_t blob_len) noexcept nogil:
    # on_node for the node at prev[:depth] (+ slot when slot >= 0).
    if _grow(&b.path, &b.path_cap, depth + 1) < 0:
        return -1
    memcpy(b.path, b.prev, depth)
    if slot >= 0:
        b.path[depth] = <uint8_t>slot
        depth += 1
    return b.on_node(b.ctx, b.path, depth, digest, blob, blob_len)


cdef int _finish_frame(STBuilder *b, STFrame *f, size_t start, const uint8_t **out, size_t *out_len) noexcept nogil:
    """Encode the complete branch f, whose node begins at nibble `start` of its path (an extension covers
    prev[start:f.depth] when start < f.depth). The encoding lands in b.tmp or b.tmp2 (*out, *out_len)."""
    cdef uint8_t digests[16 * ST_HASH_LENGTH]
    cdef uint8_t digest[ST_HASH_LENGTH]
    cdef const uint8_t *ptrs[16]
    cdef size_t lens[16]
    cdef int which[16]
    cdef int i, count = 0
    cdef size_t payload = 0, size, n
    cdef uint8_t *o
    cdef int slot_hashed[16]
    for i in range(16):
        slot_hashed[i] = -1
        if f.mask & ((<uint32_t>1) << i):
            if not f.is_ref[i] and f.len[i] >= ST_HASH_LENGTH:
                ptrs[count] = f.buf + f.off[i]
                lens[count] = f.len[i]
                which[count] = i
                slot_hashed[i] = count
                count += 1
                payload += HASH_REF_SIZE
            else:
                payload += f.len[i]
        else:
            payload += 1
    if count == 1:
        mpt_keccak256(ptrs[0], lens[0], digests)
    elif count > 1:
        mpt_keccak256_many(b.backend, ptrs, lens, <size_t>count, digests)
    if b.on_node != NULL:
        for i in range(count):
            if _notify(b, f.depth, which[i], digests + i * ST_HASH_LENGTH, ptrs[i], lens[i]) < 0:
                return -1
    payload += <size_t>branch_value_size(f.value if f.has_value else NULL, f.value_len)
    size = <size_t>header_size(payload) + payload
    if _grow(&b.tmp, &b.tmp_cap, size) < 0:
        return -1
    o = b.tmp + write_branch_head(b.tmp, payload)
    for i in range(16):
        if slot_hashed[i] >= 0:
            o += write_hash_ref(o, digests + slot_hashed[i] * ST_HASH_LENGTH)
        elif f.mask & ((<uint32_t>1) << i):
            memcpy(o, f.buf + f.off[i], f.len[i])
            o += f.len[i]
        else:
            o[0] = EMPTY_STRING
            o += 1
    write_branch_value(o, f.value if f.has_value else NULL, f.value_len)
    b.tmp_len = size
    if start >= f.depth:
        out[0] = b.tmp
        out_len[0] = size
        return 0
    # An extension over the branch: it needs the branch's reference now.
    n = f.depth - start
    if size >= ST_HASH_LENGTH:
        mpt_keccak256(b.tmp, size, digest + 0)
        if b.on_node != NULL and _notify(b, f.depth, -1, digest, b.tmp, size) < 0:
            return -1
        size = <size_t>short_node_size(compact_size_nibbles(n), HASH_REF_SIZE)
        if _grow(&b.tmp2, &b.tmp2_cap, size) < 0:
            return -1
        o = b.tmp2 + write_short_nibbles(b.tmp2, b.prev + start, n, False, HASH_REF_SIZE)
        write_hash_ref(o, digest)
    else:
        size = <size_t>short_node_size(compact_size_nibbles(n), b.tmp_len)
        if _grow(&b.tmp2, &b.tmp2_cap, size) < 0:
            return -1
        write_extension_nibbles(b.tmp2, b.prev + start, n, b.tmp, b.tmp_len)
    b.tmp2_len = size
    out[0] = b.tmp2
    out_len[0] = size
    return 0


# ---------------------------------------------------------------------------------------------------------------
# The builder
# ---------------------------------------------------------------------------------------------------------------

cdef int st_init(STBuilder *b, int backend) noexcept nogil:
    memset(b, 0, sizeof(STBuilder))
    b.backend = backend
    return 0


cdef void st_free(STBuilder *b) noexcept nogil:
    cdef size_t i
    st_reset(b)                                 # hands huge buffers back to the system first
    for i in range(b.frames_cap):
        PyMem_RawFree(b.frames[i].buf)
        PyMem_RawFree(b.frames[i].value)
    PyMem_RawFree(b.frames)
    PyMem_RawFree(b.prev)
    PyMem_RawFree(b.nib)
    PyMem_RawFree(b.tmp)
    PyMem_RawFree(b.tmp2)
    PyMem_RawFree(b.path)
    b.frames = NULL
    b.frames_cap = 0
    b.prev = b.nib = b.tmp = b.tmp2 = b.path = NULL
    b.prev_cap = b.nib_cap = b.tmp_cap = b.tmp2_cap = b.path_cap = 0
    st_reset(b)


cdef extern from *:
    """
    #if defined(__GLIBC__)
    #include <malloc.h>
    #define MPT_RETURN_FREED_MEMORY() ((void)malloc_trim(0))
    #else
    #define MPT_RETURN_FREED_MEMORY() ((void)0)
    #endif
    """
    void MPT_RETURN_FREED_MEMORY() nogil


cdef inline void _trim(uint8_t **buf, size_t *cap) noexcept nogil:
    if cap[0] > ST_MAX_IDLE_BUFFER:
        PyMem_RawFree(buf[0])
        buf[0] = NULL
        cap[0] = 0
        # glibc raises its trim threshold after freeing a large mapping, so a huge buffer freed from the heap
        # would stay resident: hand it back now (rare: only after a value of megabytes).
        MPT_RETURN_FREED_MEMORY()


cdef void st_reset(STBuilder *b) noexcept nogil:
    """Start over, keeping the buffers for the next trie (but not one that a huge value blew up)."""
    cdef size_t i
    for i in range(b.frames_cap):
        _trim(&b.frames[i].buf, &b.frames[i].buf_cap)
        _trim(&b.frames[i].value, &b.frames[i].value_cap)
    _trim(&b.prev, &b.prev_cap)
    _trim(&b.nib, &b.nib_cap)
    _trim(&b.tmp, &b.tmp_cap)
    _trim(&b.tmp2, &b.tmp2_cap)
    _trim(&b.path, &b.path_cap)
    b.nframes = 0
    b.prev_len = 0
    b.pending = ST_NONE
    b.pvalue = NULL
    b.pvalue_len = 0
    b.pref_len = 0


cdef int st_add_key(STBuilder *b, const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len) noexcept nogil:
    """Add key -> value (value must stay valid until the next add or finish)."""
    if _grow(&b.nib, &b.nib_cap, 2 * key_len) < 0:
        return -1
    write_nibbles(key, key_len, b.nib)
    return st_add_nibbles(b, b.nib, 2 * key_len, ST_LEAF, value, value_len)


cdef int _close_top_frame(STBuilder *b) noexcept nogil:
    """Finish the top frame (there are at least two) into its slot of the frame below it, and pop it."""
    cdef STFrame *f = &b.frames[b.nframes - 1]
    cdef STFrame *parent = &b.frames[b.nframes - 2]
    cdef const uint8_t *enc
    cdef size_t enc_len
    if _finish_frame(b, f, parent.depth + 1, &enc, &enc_len) < 0:
        return -1
    if _frame_put(parent, b.prev[parent.depth], enc, enc_len, False) < 0:
        return -1
    b.nframes -= 1
    return 0


cdef int st_add_nibbles(STBuilder *b, const uint8_t *nib, size_t n, int kind, const uint8_t *payload,
                        size_t payload_len) noexcept nogil:
    """Add an item at the path nib[:n]: a leaf (payload = value, borrowed) or a finished subtree (payload = the
    reference to its top branch, copied). Paths must ascend; the builder is unchanged when they do not."""
    cdef size_t L = 0
    cdef STFrame *f
    cdef const uint8_t *enc
    cdef size_t enc_len
    cdef uint8_t *tmpbuf
    if b.pending != ST_NONE:
        L = <size_t>prefix_length(b.prev, b.prev_len, nib, n)
        if L == n or (L < b.prev_len and nib[L] < b.prev[L]):
            return ST_ERR_ORDER
        if L == b.prev_len:
            # The pending key is a prefix of this one: its value goes into a branch at its end.
            if not b.allow_prefix or b.pending != ST_LEAF:
                return ST_ERR_PREFIX
            f = _push_frame(b, L)
            if f == NULL:
                return -1
            if _grow(&f.value, &f.value_cap, b.pvalue_len) < 0:
                return -1
            if b.pvalue_len:
                memcpy(f.value, b.pvalue, b.pvalue_len)
            f.value_len = b.pvalue_len
            f.has_value = True
        elif b.nframes == 0 or b.frames[b.nframes - 1].depth < L:
            f = _push_frame(b, L)
            if f == NULL or _emit_pending(b, f) < 0:
                return -1
        else:
            f = &b.frames[b.nframes - 1]
            if _emit_pending(b, f) < 0:
                return -1
            while f.depth > L:
                if b.nframes >= 2 and b.frames[b.nframes - 2].depth >= L:
                    if _close_top_frame(b) < 0:
                        return -1
                    f = &b.frames[b.nframes - 1]
                else:
                    # The new key parts from the old path above this branch: a new branch at L takes its place.
                    if _finish_frame(b, f, L + 1, &enc, &enc_len) < 0:
                        return -1
                    _frame_clear(f, L)
                    if _frame_put(f, b.prev[L], enc, enc_len, False) < 0:
                        return -1
                    break
    # The new item is the pending one now.
    if _grow(&b.prev, &b.prev_cap, n) < 0:
        return -1
    if n:                       # an empty key may come with no pointer at all; memcpy(NULL) is undefined
        memcpy(b.prev, nib, n)
    b.prev_len = n
    b.pending = kind
    if kind == ST_LEAF:
        b.pvalue = payload
        b.pvalue_len = payload_len
    else:
        memcpy(b.pref, payload, payload_len)
        b.pref_len = payload_len
    return 0


cdef int _fold(STBuilder *b) noexcept nogil:
    # Close every frame but the bottom one (the pending item included); there is at least one frame.
    if _emit_pending(b, &b.frames[b.nframes - 1]) < 0:
        return -1
    while b.nframes > 1:
        if _close_top_frame(b) < 0:
            return -1
    return 0


cdef int st_finish_root(STBuilder *b) noexcept nogil:
    """Hash the root into b.root (the empty root when nothing was added). The builder needs st_reset after."""
    cdef const uint8_t *enc
    cdef size_t enc_len
    if b.pending == ST_NONE:
        memcpy(b.root, _EMPTY_ROOT_C, ST_HASH_LENGTH)
        return 0
    if b.nframes == 0:
        if b.pending == ST_LEAF:
            enc_len = _leaf_size(b.prev_len, b.pvalue, b.pvalue_len)
            if _grow(&b.tmp, &b.tmp_cap, enc_len) < 0:
                return -1
            write_leaf_nibbles(b.tmp, b.prev, b.prev_len, b.pvalue, b.pvalue_len)
        elif b.prev_len == 0:
            if b.pref_len == HASH_REF_SIZE:             # the root is that subtree's (hashed) branch
                memcpy(b.root, b.pref + 1, ST_HASH_LENGTH)
                return 0
            enc_len = b.pref_len
            if _grow(&b.tmp, &b.tmp_cap, enc_len) < 0:
                return -1
            memcpy(b.tmp, b.pref, enc_len)
        else:
            enc_len = <size_t>short_node_size(compact_size_nibbles(b.prev_len), b.pref_len)
            if _grow(&b.tmp, &b.tmp_cap, enc_len) < 0:
                return -1
            write_extension_nibbles(b.tmp, b.prev, b.prev_len, b.pref, b.pref_len)
        enc = b.tmp
    else:
        if _fold(b) < 0 or _finish_frame(b, &b.frames[0], 0, &enc, &enc_len) < 0:
            return -1
    mpt_keccak256(enc, enc_len, b.root)
    if b.on_node != NULL:
        return b.on_node(b.ctx, b.path, 0, b.root, enc, enc_len)
    return 0


cdef int st_finish_subtree(STBuilder *b, int *kind, size_t *depth, uint8_t *ref, size_t *ref_len) noexcept nogil:
    """Finish without the part above the top branch, for a shard: *kind is ST_NONE (nothing added), ST_LEAF (a
    single key: the caller has it) or ST_REF (*ref: the top branch's reference, *depth: its nibble depth)."""
    cdef const uint8_t *enc
    cdef size_t enc_len
    kind[0] = b.pending
    if b.pending == ST_NONE or b.nframes == 0:
        return 0
    kind[0] = ST_REF
    if _fold(b) < 0 or _finish_frame(b, &b.frames[0], b.frames[0].depth, &enc, &enc_len) < 0:
        return -1
    depth[0] = b.frames[0].depth
    if enc_len >= ST_HASH_LENGTH:
        write_hash_ref_header(ref)
        mpt_keccak256(enc, enc_len, ref + 1)
        ref_len[0] = HASH_REF_SIZE
        if b.on_node != NULL:
            return _notify(b, depth[0], -1, ref + 1, enc, enc_len)
    else:
        memcpy(ref, enc, enc_len)
        ref_len[0] = enc_len
    return 0


cdef int st_current_backend() except -1:
    """The Keccak backend the batched hasher uses (mpt.core.runtime.set_keccak_backend / MPT_KECCAK_BACKEND)."""
    cdef bytes name = keccak_backend().encode()
    cdef int i
    for i in range(MPT_KECCAK_BACKENDS):
        if mpt_keccak_backend_name(i) == name:
            return i
    return mpt_keccak_best_backend()


# ---------------------------------------------------------------------------------------------------------------
# StackTrie
# ---------------------------------------------------------------------------------------------------------------

cdef int _on_node_trampoline(void *ctx, const uint8_t *path, size_t path_len, const uint8_t *digest,
                             const uint8_t *blob, size_t blob_len) noexcept nogil:
    with gil:
        return _call_on_node(<StackTrie>ctx, path, path_len, digest, blob, blob_len)


cdef int _call_on_node(StackTrie st, const uint8_t *path, size_t path_len, const uint8_t *digest,
                       const uint8_t *blob, size_t blob_len) noexcept:
    try:
        st.on_node(PyBytes_FromStringAndSize(<const char *>path, path_len),
                   PyBytes_FromStringAndSize(<const char *>digest, ST_HASH_LENGTH),
                   PyBytes_FromStringAndSize(<const char *>blob, blob_len))
    except BaseException as exc:
        st.error = exc
        return -1
    return 0


cdef str _nibbles_hex(const uint8_t *nib, size_t n):
    return "".join(["%x" % nib[i] for i in range(n)])


@cython.final
cdef class StackTrie:
    """Root of a trie from strictly ascending keys, in O(key length) memory.

    ``on_node(path, hash, blob)`` (optional) is called for every node of 32 bytes or more as soon as it is
    final, and for the root; ``path`` is the node's position as hex nibbles.
    """

    def __cinit__(self, on_node=None):
        if on_node is not None and not callable(on_node):
            raise TypeError("on_node must be callable")
        st_init(&self.b, st_current_backend())
        self.on_node = on_node
        if on_node is not None:
            self.b.on_node = _on_node_trampoline
            self.b.ctx = <void *>self

    def __dealloc__(self):
        st_free(&self.b)

    cpdef reset(self):
        """Forget everything and start a new trie (the callback is kept)."""
        st_reset(&self.b)
        self.hashed = False
        self.failed = False
        self.root_hash = None
        self.pending_value = None
        self.error = None

    cpdef update(self, object key, object value):
        """Insert key -> value. Keys must be strictly ascending; values must not be empty."""
        cdef bytes k = as_bytes(key, "key")
        cdef bytes v = as_bytes(value, "value")
        cdef int rc
        if self.hashed:
            raise ValueError("the stack trie was hashed already; call reset() to start a new one")
        if self.failed:
            raise ValueError("an earlier on_node callback failed; call reset() to start a new trie")
        if PyBytes_GET_SIZE(v) == 0:
            raise ValueError("empty value for key %s: a stack trie cannot delete" % k.hex())
        rc = st_add_key(&self.b, <const uint8_t *>PyBytes_AS_STRING(k), <size_t>PyBytes_GET_SIZE(k),
                        <const uint8_t *>PyBytes_AS_STRING(v), <size_t>PyBytes_GET_SIZE(v))
        if rc == ST_ERR_ORDER:
            raise ValueError("keys must be strictly ascending: %s after %s" % (k.hex(), self._previous_key_hex()))
        if rc == ST_ERR_PREFIX:
            raise ValueError("key %s extends the previous key %s: a stack trie cannot hold a key that is a prefix "
                             "of another" % (k.hex(), self._previous_key_hex()))
        if rc != 0:
            self._raise(rc)
        self.pending_value = v

    cdef str _previous_key_hex(self):
        # The builder keeps the previous key as nibbles (an even number of them: keys are bytes).
        return _nibbles_hex(self.b.prev, self.b.prev_len)

    cdef int _raise(self, int rc) except -1:
        # An on_node callback raised (its exception is re-raised) or memory ran out, possibly halfway through
        # folding the path: the builder cannot go on.
        cdef object exc
        self.failed = True
        exc = self.error
        self.error = None
        if exc is not None:
            raise exc
        raise MemoryError("stack trie: out of memory")

    cpdef bytes hash(self):
        """The root hash. Finalises the trie: further updates need reset() first."""
        cdef int rc
        if self.hashed:
            return self.root_hash
        if self.failed:
            raise ValueError("an earlier on_node callback failed; call reset() to start a new trie")
        rc = st_finish_root(&self.b)
        if rc != 0:
            self._raise(rc)
        self.hashed = True
        self.pending_value = None
        st_reset(&self.b)                       # gives back buffers a huge value grew
        self.root_hash = PyBytes_FromStringAndSize(<const char *>self.b.root, ST_HASH_LENGTH)
        return self.root_hash

    @property
    def root_hash(self):
        """Same as hash()."""
        return self.hash()

    def __repr__(self):
        state = "hashed %s" % self.root_hash.hex() if self.hashed else "open"
        return "<StackTrie %s>" % state
