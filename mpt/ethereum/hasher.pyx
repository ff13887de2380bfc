# cython: language_level=3
"""Hasher: turns a node tree into hashes bottom-up, caching each hash in its node.

A child whose encoding is 32 bytes or more is hashed and referred to by hash; a smaller child is embedded in its
parent; the root is always hashed. Two paths do this, with identical results:

- recursive (hash_node): each node that needs hashing is encoded once at the end of the buffer, hashed, and
  the buffer rewound. Used on one lane and one thread (there it costs what the batched path costs, without
  scratch), and for single nodes.
- batched (hash_levels), whenever the Keccak backend has SIMD lanes or several threads are allowed: one
  post-order pass encodes the dirty nodes, leaving a 32-byte hole in each parent for every child still to be
  hashed; every 1024 encodings the pending ones are hashed level by level from the leaves up, many at once on
  the SIMD lanes (4-way AVX2, 8-way AVX-512, chosen from CPUID; MPT_KECCAK_BACKEND or
  mpt.runtime.set_keccak_backend() force one) and optionally over several threads (MPT_HASH_THREADS or
  mpt.runtime.set_hash_threads(); default 1). Each digest goes into its node and into its parent's hole.

The process-wide settings (threads, the OpenMP fork guard, the Keccak backend) live in mpt.runtime, shared with
the other tree families; their old names here still work, with a DeprecationWarning.

tests/test_batched_hashing.py checks every path against the other; docs/performance.md has the measurements.
"""
import functools

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport (PyMem_Free, PyMem_Malloc, PyMem_RawCalloc, PyMem_RawFree, PyMem_RawMalloc,
                          PyMem_RawRealloc, PyMem_Realloc)
from cython.parallel cimport prange, threadid
from libc.stdint cimport uint8_t
from libc.string cimport memcpy, memset

from cpython.ref cimport PyObject

from mpt.core._keccak.keccak cimport mpt_keccak256, mpt_keccak256_many
from mpt.ethereum.node cimport (FullNode, Node, ShortNode, ValueNode, borrowed_bytes_data, borrowed_bytes_size,
                                check_filled, full_node_slots, gather_children, is_full_node, is_short_node,
                                is_value_node, node_has_hash, node_hash_value, node_publish_hash, prefetch_below,
                                short_node_key, short_node_leaf_value, short_node_val, value_node_bytes)
from mpt.ethereum.encoding cimport compact_size
from mpt.ethereum.node_enc cimport (EMPTY_STRING, HASH_REF_SIZE, branch_value_size, key_string_size,
                                    short_node_size, write_branch_head, write_branch_value, write_hash_ref,
                                    write_hash_ref_header, write_leaf, write_short_key)
from mpt.core.prefetch cimport prefetch_line
from mpt.core.rlp cimport MAX_HEADER_SIZE, WriteBuffer, header_size, put_header, put_string, string_size
from mpt.core.runtime cimport hash_threads, keccak_backend_by_name, keccak_backend_number, mark_openmp_used

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.core import runtime as _runtime
from mpt.ethereum.node import register_encoder

cdef enum:
    HASH_LENGTH = 32
    # A branch's encoding is written with up to this many bytes of scratch past its end (runs of empty slots).
    GAP_SLACK = 16
    DEFAULT_MAX_IDLE = 16
    # A pooled hasher keeps a buffer of at most this size; a larger one (a huge value) is dropped on release.
    MAX_IDLE_BUFFER = 4 * 1024 * 1024
    # Levels with fewer encodings than this are hashed on the calling thread (each parallel batch costs a
    # wake-up of the workers).
    PARALLEL_MIN_LEVEL = 256
    # Heights a flush sorts without allocating: a 32-byte key's path has 64 nibbles, so 130 covers every
    # trie of hashed keys.
    FLUSH_INLINE_HEIGHTS = 130
    # The pass shares out at most the 16 subtrees under the first branch: more threads than that only cost a
    # HashPass (about 115 KB) and an idle OS thread each.
    MAX_PASS_THREADS = 16
    # _pass_visit results besides an entry index (>= 0) and -1 (no entry).
    VISIT_NO_MEMORY = -2
    VISIT_BAD_TYPE = -3
    # _pass_run / _hash_tree failure bits (OR-ed over the threads).
    RUN_NO_MEMORY = 1
    RUN_BAD_TYPE = 2


cdef inline void _prefetch_children(FullNode fn) noexcept:
    # Ask for all children at once so their cache misses overlap instead of queueing one by one.
    cdef int j
    for j in range(16):
        if fn.slots[j] != NULL:
            prefetch_line(fn.slots[j])


def keccak256_many(messages, str backend=None):
    """Keccak-256 of each bytes object in messages, hashed together on `backend`'s lanes (default: the current
    backend). For tests and benchmarks of the backends; returns a list of 32-byte digests."""
    cdef list items = list(messages)
    cdef Py_ssize_t n = len(items), i
    cdef int b = keccak_backend_number() if backend is None else keccak_backend_by_name(backend)
    cdef const uint8_t **data = NULL
    cdef size_t *lengths = NULL
    cdef uint8_t *out = NULL
    cdef bytes item
    for i in range(n):
        if type(items[i]) is not bytes:
            raise TypeError(f"keccak256_many() needs bytes items, not {type(items[i]).__name__}")
    data = <const uint8_t **>PyMem_Malloc((n + 1) * sizeof(uint8_t *))
    lengths = <size_t *>PyMem_Malloc((n + 1) * sizeof(size_t))
    out = <uint8_t *>PyMem_Malloc((n + 1) * HASH_LENGTH)
    try:
        if not (data and lengths and out):
            raise MemoryError()
        for i in range(n):
            item = <bytes>items[i]
            data[i] = <const uint8_t *>PyBytes_AS_STRING(item)
            lengths[i] = <size_t>PyBytes_GET_SIZE(item)
        # items keeps every bytes object alive; nothing else is touched without the GIL.
        with nogil:
            mpt_keccak256_many(b, data, lengths, <size_t>n, out)
        return [PyBytes_FromStringAndSize(<char *>out + i * HASH_LENGTH, HASH_LENGTH) for i in range(n)]
    finally:
        PyMem_Free(data)
        PyMem_Free(lengths)
        PyMem_Free(out)


cdef extern from *:
    """
    #include "keccak.h"
    /* Hash n messages split into `threads` contiguous runs, one per OpenMP thread, each run on the backend's
     * lanes.  Called with or without the GIL: the worker threads touch only these arrays. */
    static void mpt_keccak_many_threads(int backend, const uint8_t *const *data, const size_t *len, size_t n,
                                        uint8_t *out, int threads)
    {
        if (threads <= 1 || n < 2) {
            mpt_keccak256_many(backend, data, len, n, out);
            return;
        }
        if ((size_t)threads > n)
            threads = (int)n;   /* no idle OS threads */
        {
            size_t chunk = (n + (size_t)threads - 1) / (size_t)threads;
            int t;
            #pragma omp parallel for num_threads(threads) schedule(static)
            for (t = 0; t < threads; t++) {
                size_t lo = (size_t)t * chunk;
                if (lo < n)
                    mpt_keccak256_many(backend, data + lo, len + lo, (lo + chunk <= n) ? chunk : n - lo,
                                       out + 32 * lo);
            }
        }
    }
    """
    void _keccak_many_threads "mpt_keccak_many_threads"(int backend, const uint8_t * const *data,
                                                         const size_t *length, size_t n, uint8_t *out,
                                                         int threads) noexcept nogil


# ---------------------------------------------------------------------------------------------------------------
# The batched pass without the GIL.
#
# Everything below runs in plain C over borrowed node pointers: the caller holds a reference to the root, and
# Trie's busy state (Trie._begin_write) refuses mutations of that trie while it runs; other tries sharing nodes
# with it never mutate a shared node (copy-on-write), and may only write the same cached hash into it. A node's
# hash bytes are written before its has_hash flag, the flag with a release store, and the pass reads the flag
# with an acquire load: a thread that sees the flag also sees the bytes (a no-op on x86; what makes ARM safe).
# Unlike the old GIL-held pass, a node is never flagged before its hash exists: a parent's encoding learns
# which children are pending from the pass itself, so no other thread can ever see a flag without its hash.
# ---------------------------------------------------------------------------------------------------------------

# The nodes are read through node.pxd's borrowed-pointer views (node_has_hash, full_node_slots, is_full_node,
# borrowed_bytes_data, ...), CPython's own API, usable without the GIL on objects the pass holds.


cdef HashPass *_pass_new() noexcept nogil:
    cdef HashPass *p = <HashPass *>PyMem_RawCalloc(1, sizeof(HashPass))
    if p == NULL:
        return NULL
    # Enough for a few hundred encodings before the first growth; grown buffers are kept while pooled.
    p.size = 1 << 14
    p.buf = <uint8_t *>PyMem_RawMalloc(<size_t>p.size)
    if p.buf == NULL:
        PyMem_RawFree(p)
        return NULL
    return p


cdef void _pass_free(HashPass *p) noexcept nogil:
    if p != NULL:
        PyMem_RawFree(p.buf)
        PyMem_RawFree(p)


cdef int _pass_ensure(HashPass *p, Py_ssize_t extra) noexcept nogil:
    """Room for extra more bytes; -1 when out of memory."""
    cdef Py_ssize_t need = p.length + extra, size = p.size
    cdef uint8_t *nb
    if need <= size:
        return 0
    while size < need:
        size *= 2
    nb = <uint8_t *>PyMem_RawRealloc(p.buf, <size_t>size)
    if nb == NULL:
        return -1
    p.buf = nb
    p.size = size
    return 0


# A branch's value slot (a ValueNode, or NULL) as node_enc's branch writers take it: NULL when there is none.
cdef inline const uint8_t *_value_data(PyObject *v) noexcept nogil:
    if v == NULL:
        return NULL
    return borrowed_bytes_data(value_node_bytes(v))


cdef inline Py_ssize_t _value_length(PyObject *v) noexcept nogil:
    return 0 if v == NULL else borrowed_bytes_size(value_node_bytes(v))


cdef inline Py_ssize_t _key_size(PyObject *key) noexcept nogil:
    return key_string_size(compact_size(borrowed_bytes_data(key), borrowed_bytes_size(key)))


cdef Py_ssize_t _payload_size(PyObject *n, const bint *pending) noexcept nogil:
    """Size of n's RLP list payload. A child i with pending[i] (slot 0 for an extension's child; pending NULL:
    none) is referred to by a hash still to come; any other unhashed child is small and embedded."""
    cdef Py_ssize_t payload = 0, i
    cdef PyObject *c
    cdef PyObject **slots
    if is_full_node(n):
        slots = full_node_slots(n)
        for i in range(16):
            c = slots[i]
            if c == NULL:
                payload += 1
            elif (pending != NULL and pending[i]) or node_has_hash(c):
                payload += HASH_REF_SIZE
            else:
                payload += _embedded_size(c)
        return payload + branch_value_size(_value_data(slots[16]), _value_length(slots[16]))
    payload = _key_size(short_node_key(n))
    c = short_node_leaf_value(n)
    if c != NULL:
        return payload + string_size(borrowed_bytes_data(c), borrowed_bytes_size(c))
    c = short_node_val(n)
    if (pending != NULL and pending[0]) or node_has_hash(c):
        return payload + HASH_REF_SIZE
    return payload + _embedded_size(c)


cdef inline Py_ssize_t _embedded_size(PyObject *n) noexcept nogil:
    cdef Py_ssize_t payload = _payload_size(n, NULL)
    return header_size(payload) + payload


cdef inline Py_ssize_t _put_string(uint8_t *out, PyObject *b) noexcept nogil:
    return put_string(out, borrowed_bytes_data(b), borrowed_bytes_size(b))


cdef inline Py_ssize_t _put_ref(uint8_t *out, PyObject *c) noexcept nogil:
    return write_hash_ref(out, node_hash_value(c))


cdef Py_ssize_t _write_node(uint8_t *out, PyObject *n, Py_ssize_t payload, const bint *pending,
                            Py_ssize_t *holes) noexcept nogil:
    """Write n's encoding (payload from _payload_size with the same pending) at out, which has room for it. A
    child i with pending[i] is written as 0xa0 and a 32-byte hole whose offset from out lands in holes[i].
    Returns the size written."""
    cdef Py_ssize_t o, i
    cdef PyObject *c
    cdef PyObject **slots
    cdef PyObject *key
    if is_full_node(n):
        o = write_branch_head(out, payload)
        slots = full_node_slots(n)
        for i in range(16):
            c = slots[i]
            if c == NULL:
                out[o] = EMPTY_STRING
                o += 1
            elif pending != NULL and pending[i]:
                holes[i] = o + 1
                o += write_hash_ref_header(out + o)
            elif node_has_hash(c):
                o += _put_ref(out + o, c)
            else:
                o += _write_node(out + o, c, _payload_size(c, NULL), NULL, NULL)
        return o + write_branch_value(out + o, _value_data(slots[16]), _value_length(slots[16]))
    key = short_node_key(n)
    o = write_short_key(out, borrowed_bytes_data(key), borrowed_bytes_size(key), payload - _key_size(key))
    c = short_node_leaf_value(n)
    if c != NULL:
        return o + _put_string(out + o, c)
    c = short_node_val(n)
    if pending != NULL and pending[0]:
        holes[0] = o + 1
        return o + write_hash_ref_header(out + o)
    if node_has_hash(c):
        return o + _put_ref(out + o, c)
    return o + _write_node(out + o, c, _payload_size(c, NULL), NULL, NULL)


cdef inline void _pass_store(HashPass *p, PendingNode *entry, const uint8_t *digest) noexcept nogil:
    # A flushed node's hash goes into the node (published: bytes, then the flag) and into its parent's hole.
    node_publish_hash(entry.node, digest)
    if entry.hole >= 0:
        memcpy(p.buf + entry.hole, digest, HASH_LENGTH)


cdef int _pass_flush(HashPass *p) noexcept nogil:
    """Hash every pending entry, level by level from height 0, each level's encodings together on the SIMD
    lanes (and over p.threads threads), writing each digest into its node and into its parent's hole. Then the
    buffer holds nothing pending: it starts over empty. -1 when out of memory."""
    cdef Py_ssize_t n = p.n_pending, i, j, k, level_start
    cdef Py_ssize_t by_height[FLUSH_AT]    # entry indices sorted by height
    cdef Py_ssize_t level_end_inline[FLUSH_INLINE_HEIGHTS]
    cdef Py_ssize_t *level_end             # one past the last index of each height in by_height
    cdef PendingNode *entry
    cdef FlushScratch *s = &p.scratch
    cdef int top = 0, h
    if n == 0:
        return 0
    for i in range(n):
        if p.pending[i].height > top:
            top = p.pending[i].height
    if top + 2 <= FLUSH_INLINE_HEIGHTS:
        level_end = level_end_inline
        memset(level_end, 0, (top + 2) * sizeof(Py_ssize_t))
    else:
        # Only a trie deeper than any 32-byte key makes (long or prefix keys) gets here.
        level_end = <Py_ssize_t *>PyMem_RawCalloc(top + 2, sizeof(Py_ssize_t))
        if level_end == NULL:
            return -1
    # Counting sort by height (stable: each level keeps the encoding order, nearby in the buffer).
    for i in range(n):
        level_end[p.pending[i].height + 1] += 1
    for h in range(top + 1):
        level_end[h + 1] += level_end[h]
    for i in range(n):
        h = p.pending[i].height
        by_height[level_end[h]] = i
        level_end[h] += 1
    level_start = 0
    for h in range(top + 1):
        k = 0
        for i in range(level_start, level_end[h]):
            entry = &p.pending[by_height[i]]
            if p.known != NULL:
                # Only the encodings nobody has hashed yet go to Keccak.
                j = known_find(p.known, p.buf + entry.offset, <size_t>entry.length)
                if j >= 0:
                    _pass_store(p, entry, p.known.digests + j * HASH_LENGTH)
                    continue
            s.messages[k] = p.buf + entry.offset
            s.lengths[k] = <size_t>entry.length
            s.entries[k] = by_height[i]
            k += 1
        _keccak_many_threads(keccak_backend_number(), s.messages, s.lengths, <size_t>k, s.digests,
                             p.threads if k >= PARALLEL_MIN_LEVEL else 1)
        for i in range(k):
            _pass_store(p, &p.pending[s.entries[i]], s.digests + i * HASH_LENGTH)
        level_start = level_end[h]
    if level_end != level_end_inline:
        PyMem_RawFree(level_end)
    p.n_pending = 0
    p.flushes += 1
    p.length = 0
    return 0


cdef inline Py_ssize_t _pass_record(HashPass *p, PyObject *n, Py_ssize_t start, Py_ssize_t length, int h,
                                     int *height) noexcept nogil:
    """Record n, encoded at start, as a pending entry (see _pass_visit for the return value)."""
    cdef PendingNode *entry = &p.pending[p.n_pending]
    entry.node = n
    entry.offset = start
    entry.length = length
    entry.hole = -1
    entry.height = h
    height[0] = h
    p.n_pending += 1
    if p.n_pending == FLUSH_AT:
        return -2 if _pass_flush(p) < 0 else -1
    return p.n_pending - 1


cdef Py_ssize_t _visit_full(HashPass *p, PyObject *n, int *height) noexcept nogil:
    """_pass_visit for a branch. Every loop runs over the present children only (a branch near the leaves has
    two or three of sixteen), gathered once: the empty slots cost one 0x80 byte each and nothing else."""
    cdef PyObject **slots = full_node_slots(n)
    cdef PyObject *kids[16]
    cdef int idx[16]
    cdef Py_ssize_t entry_of[16]          # the child's pending entry, or -1
    cdef Py_ssize_t flushes_at[16]        # p.flushes when that entry was made
    cdef int heights[16]
    cdef Py_ssize_t ref[16]               # -2: pending (a hole), -1: hashed (a reference), else embedded payload
    cdef Py_ssize_t hole_at[16]
    cdef PyObject *c
    cdef PyObject *v
    cdef Py_ssize_t payload, start, o, e
    cdef uint8_t *out
    cdef int cnt = gather_children(n, kids, idx), i, j, h = 0, prev
    prefetch_below(kids, cnt, False)
    for j in range(cnt):
        entry_of[j] = -1
        c = kids[j]
        if not node_has_hash(c):
            e = _pass_visit(p, c, &heights[j])
            if e < -1:
                return e
            entry_of[j] = e
            flushes_at[j] = p.flushes
    # Sizes, deciding once how each child is written. A child entry made before the last flush is gone: that
    # child was hashed and carries its hash now. An unhashed child that is not pending is under 32 bytes.
    payload = 16 - cnt
    for j in range(cnt):
        c = kids[j]
        if entry_of[j] >= 0 and flushes_at[j] == p.flushes:
            ref[j] = -2
            payload += HASH_REF_SIZE
        elif node_has_hash(c):
            ref[j] = -1
            payload += HASH_REF_SIZE
        else:
            ref[j] = _payload_size(c, NULL)
            payload += header_size(ref[j]) + ref[j]
    v = slots[16]
    payload += branch_value_size(_value_data(v), _value_length(v))
    # GAP_SLACK more: each run of empty slots is written as a 16-byte store of 0x80s, of which only the run's
    # length counts; the rest is overwritten by what follows, or lies past the end.
    if _pass_ensure(p, MAX_HEADER_SIZE + payload + GAP_SLACK) < 0:
        return -2
    start = p.length
    out = p.buf + start
    o = write_branch_head(out, payload)
    prev = 0
    for j in range(cnt):
        i = idx[j]
        memset(out + o, EMPTY_STRING, GAP_SLACK)
        o += i - prev
        prev = i + 1
        c = kids[j]
        if ref[j] == -2:
            hole_at[j] = o + 1
            o += write_hash_ref_header(out + o)
        elif ref[j] == -1:
            o += _put_ref(out + o, c)
        else:
            o += _write_node(out + o, c, ref[j], NULL, NULL)
    memset(out + o, EMPTY_STRING, GAP_SLACK)
    o += 16 - prev
    o += write_branch_value(out + o, _value_data(v), _value_length(v))
    if o < HASH_LENGTH:
        # Embedded in its parent; such a small node cannot refer to a hashed child, so nothing below it was
        # recorded either.
        return -1
    p.length = start + o
    for j in range(cnt):
        if ref[j] == -2:
            p.pending[entry_of[j]].hole = start + hole_at[j]
            if heights[j] + 1 > h:
                h = heights[j] + 1
    return _pass_record(p, n, start, o, h, height)


cdef Py_ssize_t _visit_leaf(HashPass *p, PyObject *n, PyObject *value, int *height) noexcept nogil:
    """_pass_visit for a leaf (value: its leaf_value), most of the nodes of a trie: [compact key, value], sized
    and written in one go, with nothing pending under it."""
    cdef PyObject *key = short_node_key(n)
    cdef const uint8_t *k = borrowed_bytes_data(key)
    cdef Py_ssize_t nk = borrowed_bytes_size(key)
    cdef const uint8_t *vb = borrowed_bytes_data(value)
    cdef Py_ssize_t vn = borrowed_bytes_size(value)
    cdef Py_ssize_t start, o
    if _pass_ensure(p, short_node_size(compact_size(k, nk), string_size(vb, vn))) < 0:
        return -2
    start = p.length
    o = write_leaf(p.buf + start, k, nk, vb, vn)
    if o < HASH_LENGTH:
        return -1
    p.length = start + o
    return _pass_record(p, n, start, o, 0, height)


cdef Py_ssize_t _pass_visit(HashPass *p, PyObject *n, int *height) noexcept nogil:
    """Post-order: encode n's unhashed descendants, then n, at the end of the buffer, and record n as a pending
    entry. Returns its entry index; -1 when n needs no entry (its encoding is under 32 bytes: it is embedded in
    its parent, nothing stays in the buffer; or a flush hashed it before returning); VISIT_NO_MEMORY (-2) when
    out of memory; VISIT_BAD_TYPE (-3) for an unhashed node that is neither a FullNode nor a ShortNode (a bare
    Node or a Python subclass: the macros below would read it as a ShortNode and crash).
    height is set to 1 + the highest pending node n refers to (0 when none), so that a flush hashes every node
    after the ones it refers to."""
    cdef Py_ssize_t e = -1, e_flushes = 0, start, length, payload
    cdef Py_ssize_t hole = 0
    cdef int eh = 0
    cdef bint pending = False
    cdef PyObject *c
    if is_full_node(n):
        return _visit_full(p, n, height)
    if not is_short_node(n):
        return VISIT_BAD_TYPE
    c = short_node_leaf_value(n)
    if c != NULL:
        return _visit_leaf(p, n, c, height)
    c = short_node_val(n)
    if not node_has_hash(c):
        e = _pass_visit(p, c, &eh)
        if e < -1:
            return e
        e_flushes = p.flushes
    # An entry made before the last flush is gone: the child was hashed, and carries its hash now.
    pending = e >= 0 and e_flushes == p.flushes
    payload = _payload_size(n, &pending)
    if _pass_ensure(p, MAX_HEADER_SIZE + payload) < 0:
        return -2
    start = p.length
    length = _write_node(p.buf + start, n, payload, &pending, &hole)
    if length < HASH_LENGTH:
        return -1
    p.length = start + length
    if pending:
        p.pending[e].hole = start + hole
        return _pass_record(p, n, start, length, eh + 1, height)
    return _pass_record(p, n, start, length, 0, height)


cdef int _pass_run(HashPass *p, PyObject *n) noexcept nogil:
    """Hash every unhashed node under n (n too, when its encoding is 32 bytes or more). Returns 0, or
    RUN_NO_MEMORY / RUN_BAD_TYPE (the nodes hashed so far keep their correct hashes; nothing is flagged without
    one)."""
    cdef int height = 0
    cdef Py_ssize_t e
    p.length = 0
    p.n_pending = 0
    e = _pass_visit(p, n, &height)
    if e < -1 or _pass_flush(p) < 0:
        p.n_pending = 0
        p.length = 0
        return RUN_BAD_TYPE if e == VISIT_BAD_TYPE else RUN_NO_MEMORY
    return 0


cdef int _hash_tree(HashPass **passes, int n_passes, PyObject *root) noexcept nogil:
    """Hash the tree under root over n_passes threads: the subtrees under the first branch (below the root's
    extension, if any) one per task on the OpenMP threads, then the few nodes above them on this thread.
    Returns 0 or the RUN_* failure bits. n_passes == 1 never enters a parallel region (fork safety)."""
    cdef PyObject *split = root
    cdef PyObject *c
    cdef PyObject *todo[16]
    cdef int m = 0, i, failed = 0, team
    if n_passes > 1:
        while is_short_node(split):
            c = short_node_val(split)
            if is_value_node(c) or node_has_hash(c):
                break
            split = c
        if is_full_node(split):
            for i in range(16):
                c = full_node_slots(split)[i]
                if c != NULL and not node_has_hash(c):
                    todo[m] = c
                    m += 1
        if m >= 2:
            # No more threads than subtrees: each costs an OS thread.
            team = m if m < n_passes else n_passes
            for i in prange(m, num_threads=team, schedule='dynamic', chunksize=1):
                # (A reduction: a plain assignment would make failed lastprivate.)
                failed |= _pass_run(passes[threadid()], todo[i])
            if failed:
                return failed
    # The root pass: with the subtrees done only a few nodes remain, unless the split found nothing to share.
    passes[0].threads = n_passes if m < 2 else 1
    i = _pass_run(passes[0], root)
    passes[0].threads = 1
    return i


cdef str _bad_type_name(Node root):
    """Name of the first unhashed node under root that the pass cannot hash (for the error message)."""
    cdef list todo = [root]
    cdef Node n
    while todo:
        n = todo.pop()
        if n is None or n.has_hash:
            continue
        if type(n) is FullNode:
            todo.extend((<FullNode>n).children[:16])
        elif type(n) is ShortNode:
            todo.append((<ShortNode>n).val)
        elif type(n) is not ValueNode:
            return type(n).__name__
    return "node"


@cython.final
cdef class Hasher:
    """Owns a WriteBuffer and scratch space; get one from a HasherPool."""

    def __cinit__(self):
        self.buf = WriteBuffer.new()

    def __dealloc__(self):
        self.drop_passes()

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
        elif type(n) is ShortNode and (<ShortNode>n).leaf_value == NULL:
            child = (<ShortNode>n).val
            if not child.has_hash:
                self.hash_node(child, False)
        return 0

    cdef bytes keccak_buffer(self, Py_ssize_t start):
        """keccak256 of the buffer from start to its end, as bytes."""
        mpt_keccak256(self.buf.data() + start, <size_t>(self.buf.length() - start), self.digest)
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
        start = self.buf.length()
        n.encode(self.buf)
        length = self.buf.length() - start
        if length < HASH_LENGTH and not force:
            self.buf.set_length(start)
            return False
        mpt_keccak256(self.buf.data() + start, <size_t>length, self.digest)
        if length >= HASH_LENGTH:
            n.set_hash(self.digest)
        self.buf.set_length(start)
        return True

    cdef int hash_levels(self, Node root, int threads) except -1:
        """Hash every unhashed node under root in batches, without the GIL.

        One post-order pass per thread encodes the dirty nodes, leaving a 32-byte hole in each parent for every
        child still to be hashed. Every FLUSH_AT encodings (and at the end) the pending ones are hashed level by
        level from the leaves up, each level's encodings together on the SIMD backend's lanes; each digest goes
        into its node and into its parent's hole. The buffer and the entries are therefore bounded (and stay in
        cache), and each node gets its hash soon after it was read. With threads > 1 the subtrees under the
        first branch are shared out over that many OpenMP threads, each with its own scratch (HashPass).

        The caller holds a reference to root and keeps the tree from changing (Trie's busy state).
        """
        cdef int i, rc
        cdef PyObject *r = <PyObject *>root
        if root.has_hash or type(root) is ValueNode:
            return 0
        if threads < 1:
            threads = 1
        elif threads > MAX_PASS_THREADS:
            threads = MAX_PASS_THREADS
        if threads > self.n_passes:
            self._grow_passes(threads)
        for i in range(threads):
            self.passes[i].known = self.known
        if threads > 1:
            mark_openmp_used()
        with nogil:
            rc = _hash_tree(self.passes, threads, r)
        if rc & RUN_BAD_TYPE:
            raise TypeError("cannot hash a node tree holding an unhashed %s: only FullNode, ShortNode, HashNode "
                            "and ValueNode can be hashed" % _bad_type_name(root))
        if rc:
            raise MemoryError()
        return 0

    cdef int _grow_passes(self, int threads) except -1:
        cdef HashPass **grown = <HashPass **>PyMem_Realloc(self.passes, threads * sizeof(HashPass *))
        if grown == NULL:
            raise MemoryError()
        self.passes = grown
        while self.n_passes < threads:
            self.passes[self.n_passes] = _pass_new()
            if self.passes[self.n_passes] == NULL:
                raise MemoryError()
            self.passes[self.n_passes].threads = 1
            self.n_passes += 1
        return 0

    cdef bytes root_hash(self, Node root):
        """The root hash of the tree under root, as bytes."""
        # The batched pass runs without the GIL whatever the backend (with SIMD lanes it also wins at every
        # size, down to 20 accounts); hash_node then only hashes a root under 32 bytes.
        self.hash_levels(root, hash_threads())
        self.hash_node(root, True)
        return PyBytes_FromStringAndSize(<char *>self.digest, HASH_LENGTH)

    def hash_by_levels(self, Node node not None, int threads=0):
        """Hash node as a root through the batched path whatever its size (for tests and benchmarks)."""
        check_filled(node)
        self.buf.reset()
        self.hash_levels(node, threads if threads > 0 else hash_threads())
        return self.root_hash(node)

    def hash(self, Node node not None):
        """Hash node as a root (always hashed); caches hashes in the subtree."""
        check_filled(node)
        self.buf.reset()
        return self.root_hash(node)

    @property
    def buffer_capacity(self):
        """Current capacity of the hasher's largest buffer (kept while pooled, up to 4 MiB)."""
        return self.largest_buffer()

    cdef Py_ssize_t largest_buffer(self) noexcept:
        # A C call, not the property: HasherPool.release runs after every proof and hash.
        cdef Py_ssize_t size = self.buf.c_capacity()
        cdef int i
        for i in range(self.n_passes):
            if self.passes[i].size > size:
                size = self.passes[i].size
        return size

    cdef void drop_passes(self) noexcept:
        cdef int i
        for i in range(self.n_passes):
            _pass_free(self.passes[i])
        PyMem_Free(self.passes)
        self.passes = NULL
        self.n_passes = 0


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
        if h.buf.c_capacity() > MAX_IDLE_BUFFER:
            # One huge value or trie must not pin its scratch memory for the life of the process.
            h.buf = WriteBuffer.new()
        if h.largest_buffer() > MAX_IDLE_BUFFER:
            h.drop_passes()
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
    check_filled(node)
    cdef Hasher h = _DEFAULT_POOL.acquire()
    try:
        h.hash_children(node)
        node.encode(h.buf)
        return h.buf.to_bytes()
    finally:
        _DEFAULT_POOL.release(h)


def _runtime_setting(name):
    return getattr(_runtime, name)


# Settings that moved to mpt.runtime (every tree family uses them): the old names keep working for a release.
__getattr__ = _renamed_attributes(__name__, {
    name: (f"mpt.hasher.{name} moved to mpt.runtime.{name}", functools.partial(_runtime_setting, name))
    for name in ("get_hash_threads", "set_hash_threads", "keccak_backends", "keccak_backend", "set_keccak_backend")
})


register_encoder(encode_node)
