# cython: language_level=3
"""The trie over build_root's shards: each shard's records sorted and fed to the C StackTrie builder
(:mod:`mpt.stacktrie`'s STBuilder) without the GIL, then the shard results combined into the root.

A shard is sorted by (key, input position) and only the last write of each key is kept, unless it is empty (a
deletion). It yields nothing, a single leaf (its key and value, placed above the shard level), or the reference
to its top branch at the nibble depth where its keys part. :func:`combine` puts the shard results and the keys
shorter than the shard prefix, in path order, through one more builder that accepts finished subtrees as items:
empty shards vanish, single keys become leaves with their whole remaining key, levels with one child become
extensions, nodes under 32 bytes are embedded, exactly as in the one-thread trie.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcmp, memcpy, memset

from mpt.ethereum.encoding cimport write_nibbles
from mpt.ethereum.shards.partition cimport Partition
from mpt.ethereum.shards.records cimport RECORD_HEADER, Segment, load_u32
from mpt.ethereum.shards.sort cimport Entry, key_head, sort_entries
from mpt.ethereum.stacktrie cimport (
    ST_LEAF,
    ST_NONE,
    ST_REF,
    ST_REF_MAX,
    STBuilder,
    st_add_key,
    st_add_nibbles,
    st_current_backend,
    st_finish_root,
    st_finish_subtree,
    st_free,
    st_init,
    st_reset,
)


cdef struct ShardResult:
    int kind                        # ST_NONE, ST_LEAF or ST_REF
    int error                       # 0, -1 out of memory, -2 malformed records
    size_t depth                    # ST_REF: nibble depth of the top branch
    uint8_t ref[ST_REF_MAX]
    size_t ref_len
    uint8_t *key                    # ST_LEAF: the key and value; ST_REF: a key of the shard (its path)
    size_t key_len
    uint8_t *value
    size_t value_len
    size_t count                    # distinct live keys


# ---------------------------------------------------------------------------------------------------------------
# One shard (no GIL)
# ---------------------------------------------------------------------------------------------------------------

cdef int _count_records(const Segment *segs, size_t nsegs, size_t *n) noexcept nogil:
    """How many records the segments hold (n); -2 when one runs past its segment."""
    cdef size_t pos, g, length, count = 0
    cdef uint32_t kl, vl
    cdef const uint8_t *buf
    for g in range(nsegs):
        buf = segs[g].buf
        length = segs[g].len
        pos = 0
        while pos < length:
            if length - pos < RECORD_HEADER:
                return -2
            kl = load_u32(buf + pos)
            vl = load_u32(buf + pos + 4)
            if length - pos - RECORD_HEADER < <size_t>kl + vl:
                return -2
            pos += RECORD_HEADER + kl + vl
            count += 1
    n[0] = count
    return 0


cdef void _fill_entries(Entry *entries, const Segment *segs, size_t nsegs) noexcept nogil:
    """An entry for every record (checked by _count_records), numbered in input order."""
    cdef size_t i = 0, pos, g
    cdef const uint8_t *buf
    cdef Entry *e
    for g in range(nsegs):
        buf = segs[g].buf
        pos = 0
        while pos < segs[g].len:
            e = &entries[i]
            e.key_len = load_u32(buf + pos)
            e.value_len = load_u32(buf + pos + 4)
            e.key = buf + pos + RECORD_HEADER
            e.value = e.key + e.key_len
            e.head = key_head(e.key, e.key_len)
            e.seq = i
            pos += RECORD_HEADER + e.key_len + e.value_len
            i += 1


cdef int _add_last_writes(STBuilder *b, const Entry *entries, size_t n, ShardResult *out,
                          const Entry **last) noexcept nogil:
    """Feed the sorted entries to the builder: the last write of each key, unless it is a deletion. *last: the
    last entry added (NULL: none). -1 when memory ran out."""
    cdef size_t i = 0, j
    cdef const Entry *e
    while i < n:
        j = i
        while j + 1 < n and entries[j + 1].key_len == entries[i].key_len and entries[j + 1].head == entries[i].head \
                and memcmp(entries[j + 1].key, entries[i].key, entries[i].key_len) == 0:
            j += 1
        e = &entries[j]                         # the last write of this key
        i = j + 1
        if e.value_len == 0:
            continue                            # deleted
        if st_add_key(b, e.key, e.key_len, e.value, e.value_len) != 0:
            return -1
        last[0] = e
        out.count += 1
    return 0


cdef uint8_t *_copy_out(const uint8_t *data, size_t n) noexcept nogil:
    cdef uint8_t *p = <uint8_t *>PyMem_RawMalloc(n if n else 1)
    if p != NULL:
        memcpy(p, data, n)
    return p


cdef void _finish_shard(STBuilder *b, const Entry *last, ShardResult *out) noexcept nogil:
    """The shard's top: its kind and reference, and a copy of a key of it (the leaf's value too)."""
    cdef int kind = ST_NONE
    if st_finish_subtree(b, &kind, &out.depth, out.ref, &out.ref_len) != 0:
        out.error = -1
        return
    out.kind = kind
    out.key = _copy_out(last.key, last.key_len)
    out.key_len = last.key_len
    if kind == ST_LEAF:
        out.value = _copy_out(last.value, last.value_len)
        out.value_len = last.value_len
        if out.value == NULL:
            out.error = -1
    if out.key == NULL:
        out.error = -1


cdef void build_segments(STBuilder *b, const Segment *segs, size_t nsegs, ShardResult *out) noexcept nogil:
    """Sort one shard's records (in several buffers, in input order), keep the last value of every key, drop
    deletions, and build the subtrie."""
    cdef size_t n
    cdef Entry *entries
    cdef const Entry *last = NULL
    memset(out, 0, sizeof(ShardResult))
    if _count_records(segs, nsegs, &n) != 0:    # count first: one allocation
        out.error = -2
        return
    if n == 0:
        return
    entries = <Entry *>PyMem_RawMalloc(n * sizeof(Entry))
    if entries == NULL:
        out.error = -1
        return
    _fill_entries(entries, segs, nsegs)
    sort_entries(entries, n)
    st_reset(b)
    b.allow_prefix = True
    if _add_last_writes(b, entries, n, out, &last) != 0:
        out.error = -1
    elif last != NULL:
        _finish_shard(b, last, out)
    st_reset(b)
    PyMem_RawFree(entries)


cdef inline void build_records(STBuilder *b, const uint8_t *buf, size_t length, ShardResult *out) noexcept nogil:
    """build_segments of one buffer."""
    cdef Segment seg
    seg.buf = buf
    seg.len = length
    build_segments(b, &seg, 1, out)


cdef object _result_tuple(ShardResult *r):
    """(kind, depth, ref, key, value, count) of a shard; frees the result's copies."""
    cdef object key = None, value = None
    try:
        if r.error == -1:
            raise MemoryError("build_root: out of memory while building a shard")
        if r.error == -2:
            raise ValueError("build_root: malformed shard records")
        if r.key != NULL:
            key = PyBytes_FromStringAndSize(<const char *>r.key, r.key_len)
        if r.value != NULL:
            value = PyBytes_FromStringAndSize(<const char *>r.value, r.value_len)
        return (r.kind, r.depth, PyBytes_FromStringAndSize(<const char *>r.ref, r.ref_len), key, value, r.count)
    finally:
        PyMem_RawFree(r.key)
        PyMem_RawFree(r.value)
        r.key = r.value = NULL


# ---------------------------------------------------------------------------------------------------------------
# The tasks
# ---------------------------------------------------------------------------------------------------------------

def current_backend():
    """The Keccak backend number the shard builds of this process use."""
    return st_current_backend()


def build_shard_records(records, int backend=-1):
    """Build one shard from its records (``u32le key length, u32le value length, key, value``, in input order).

    Returns ``(kind, depth, ref, key, value, count)``: what :func:`~mpt.parallel.build_root` combines. This is
    the task other executors (process pools, Dask workers) run, so it takes and returns only picklable values.
    """
    cdef STBuilder b
    cdef ShardResult r
    cdef const uint8_t *p
    cdef size_t n
    cdef bytes data = records if type(records) is bytes else bytes(records)
    if backend < 0:
        backend = st_current_backend()
    p = <const uint8_t *>PyBytes_AS_STRING(data)
    n = <size_t>PyBytes_GET_SIZE(data)
    st_init(&b, backend)
    with nogil:
        build_records(&b, p, n, &r)
        st_free(&b)
    return _result_tuple(&r)


def build_shard_many(list blobs, int backend=-1):
    """:func:`build_shard_records` of each blob (one task for several shards)."""
    return [build_shard_records(blob, backend) for blob in blobs]


cdef int _build_spilled(Partition part, size_t s, STBuilder *b, ShardResult *r) except -1:
    """Build shard s of a partition that spilled: its records are loaded into one buffer first."""
    cdef size_t size = part.shard_size(s)
    cdef uint8_t *loaded = <uint8_t *>PyMem_RawMalloc(size if size else 1)
    if loaded == NULL:
        raise MemoryError()
    try:
        part.load_shard(s, loaded)
        with nogil:
            build_records(b, loaded, size, r)
    finally:
        PyMem_RawFree(loaded)
    return 0


def build_range(Partition part, size_t lo, size_t hi, int backend):
    """Build shards lo..hi-1 of a partition on this thread (the GIL is released while each shard is sorted and
    built); returns their results in shard order."""
    cdef STBuilder b
    cdef ShardResult r
    cdef size_t s, nsegs
    cdef list out = []
    cdef bint spilled = part.spill_file is not None and len(part.spill_file.runs) > 0
    # Shard s in memory is one segment per arena set: the partition's, then its readers' kept apart.
    cdef Segment *segs = <Segment *>PyMem_RawMalloc(part.nsets * sizeof(Segment))
    if segs == NULL:
        raise MemoryError()
    st_init(&b, backend)
    try:
        for s in range(lo, hi):
            if spilled:
                _build_spilled(part, s, &b, &r)
            else:
                with nogil:
                    nsegs = part.shard_segments(s, segs)
                    build_segments(&b, segs, nsegs, &r)
            out.append(_result_tuple(&r))
    finally:
        st_free(&b)
        PyMem_RawFree(segs)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Combine
# ---------------------------------------------------------------------------------------------------------------

cdef bytes _nibbles(bytes key):
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 2 * PyBytes_GET_SIZE(key))
    write_nibbles(<const uint8_t *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), <uint8_t *>PyBytes_AS_STRING(out))
    return out


cdef list _combine_items(results, short_keys):
    """(nibble path, kind, payload) of every shard result and live short key, in path order."""
    cdef list items = []
    for kind, depth, ref, key, value, _count in results:
        if kind == ST_LEAF:
            items.append((_nibbles(key), ST_LEAF, value))
        elif kind == ST_REF:
            items.append((_nibbles(key)[:depth], ST_REF, ref))
    if short_keys:
        for key, value in short_keys.items():
            if len(value):
                items.append((_nibbles(key), ST_LEAF, value))
    items.sort()
    return items


def combine(results, short_keys=None, int backend=-1):
    """The root over shard results (``(kind, depth, ref, key, value, count)`` tuples, any order) and the keys
    shorter than the shard prefix (a dict; empty values are deletions)."""
    cdef STBuilder b
    cdef bytes path, payload
    cdef int rc
    cdef list items = _combine_items(results, short_keys)
    if backend < 0:
        backend = st_current_backend()
    st_init(&b, backend)
    b.allow_prefix = True
    try:
        for path, kind, payload in items:
            rc = st_add_nibbles(&b, <const uint8_t *>PyBytes_AS_STRING(path), <size_t>PyBytes_GET_SIZE(path), kind,
                                <const uint8_t *>PyBytes_AS_STRING(payload), <size_t>PyBytes_GET_SIZE(payload))
            if rc == -1:
                raise MemoryError()
            if rc != 0:
                raise ValueError("build_root: shard results overlap (path %s)" % path.hex())
        if st_finish_root(&b) != 0:
            raise MemoryError()
        return PyBytes_FromStringAndSize(<const char *>b.root, 32)
    finally:
        st_free(&b)
