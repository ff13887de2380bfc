# cython: language_level=3
"""Roots of unsorted (key, value) pairs at any scale: shards built in parallel without the GIL.

``build_root(pairs)`` returns exactly the root a ``Trie`` gets from ``update(key, value)`` of every pair in order
and ``hash()``: duplicates resolve to the last value, an empty value deletes.

How:

1. Partition. Each pair is copied into the arena of its shard, chosen by the key's first k nibbles (16**k shards,
   k from the input size unless ``shard_nibbles`` says). Records are ``u32 key length, u32 value length, key,
   value`` in input order. Keys shorter than k nibbles sit above every shard and are kept apart.
2. Spill (with ``spill_dir``). When the arenas outgrow ``memory_limit``, they are appended to a run file (one per
   spill, with every shard's offset and length) and emptied, so memory stays bounded however large the input.
3. Build. Each shard is sorted (key, then input position, so the last duplicate wins) and fed to the C StackTrie
   builder (mpt.stacktrie's STBuilder) with the GIL released: ``workers`` threads really run in parallel. A shard
   yields nothing, a single leaf (its key and value, placed above the shard level), or the reference to its top
   branch at the nibble depth where its keys part.
4. Combine. The shard results and the short keys, in path order, go through one more builder that accepts
   finished subtrees as items: empty shards vanish, single keys become leaves with their whole remaining key,
   levels with one child become extensions, nodes under 32 bytes are embedded, exactly as in the one-thread trie.

``executor`` may also be another ``concurrent.futures.Executor`` (a process pool) or a ``dask.distributed.Client``:
then each task receives its shards' records as bytes and returns their results (see :func:`build_shard_records`).
"""
import errno
import operator
import os
from collections.abc import Mapping
from itertools import islice

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cdef extern from "Python.h":
    ctypedef struct PyTupleObject:
        PyObject *ob_item[1]
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcmp, memcpy, memset
from posix.unistd cimport pread

from mpt.bytes_like cimport as_bytes
from mpt.stacktrie cimport (
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

from mpt._spill import SpillDir

__all__ = ["build_root", "build_shard_records", "check_workers", "choose_shard_nibbles", "MAX_SHARD_NIBBLES",
           "MAX_WORKERS"]

MAX_SHARD_NIBBLES = 4
DEFAULT_MEMORY_LIMIT = 512 * 1024 * 1024        # bytes of arenas before a spill, when spill_dir is given
cdef enum:
    _RECORD_HEADER = 8            # u32 key length, u32 value length


# ---------------------------------------------------------------------------------------------------------------
# Shard build (no GIL)
# ---------------------------------------------------------------------------------------------------------------

cdef struct Entry:
    uint64_t head                   # the key's first 8 bytes, big-endian, zero-padded: most comparisons end here
    const uint8_t *key
    const uint8_t *value
    uint32_t key_len
    uint32_t value_len
    uint64_t seq                    # input position within the shard: the later duplicate wins


cdef struct Segment:
    const uint8_t *buf
    size_t len


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


cdef int _compare_entries(const void *pa, const void *pb) noexcept nogil:
    cdef const Entry *a = <const Entry *>pa
    cdef const Entry *b = <const Entry *>pb
    cdef size_t m
    cdef int c
    if a.head != b.head:
        return -1 if a.head < b.head else 1
    m = a.key_len if a.key_len < b.key_len else b.key_len
    if m > 8:
        c = memcmp(a.key + 8, b.key + 8, m - 8)
        if c != 0:
            return c
    if a.key_len != b.key_len:
        return -1 if a.key_len < b.key_len else 1
    if a.seq != b.seq:
        return -1 if a.seq < b.seq else 1
    return 0


cdef inline bint _less(const Entry *a, const Entry *b) noexcept nogil:
    # _compare_entries(a, b) < 0, inlined: the heads decide almost every comparison of hashed keys.
    if a.head != b.head:
        return a.head < b.head
    return _compare_entries(a, b) < 0


cdef void _sort_entries(Entry *e, size_t n, int depth) noexcept nogil:
    """Sort by (key, input position): quicksort with a median of three and an inlined comparison (libc's qsort
    calls through a pointer for each of its ~n log n comparisons: a fifth of a shard build), insertion sort for
    short runs, and qsort itself past a depth limit, so that no input is quadratic. The order is total (positions
    differ), so stability does not matter."""
    cdef size_t i, j, lo, mid
    cdef Entry pivot, tmp
    while n > 16:
        if depth == 0:
            qsort(e, n, sizeof(Entry), _compare_entries)
            return
        depth -= 1
        mid = n // 2
        # Median of e[0], e[mid], e[n-1] into e[mid], then used as the pivot.
        if _less(&e[mid], &e[0]):
            tmp = e[mid]; e[mid] = e[0]; e[0] = tmp
        if _less(&e[n - 1], &e[mid]):
            tmp = e[mid]; e[mid] = e[n - 1]; e[n - 1] = tmp
            if _less(&e[mid], &e[0]):
                tmp = e[mid]; e[mid] = e[0]; e[0] = tmp
        pivot = e[mid]
        i = 0
        j = n - 1
        while True:                     # Hoare partition: e[0] <= pivot <= e[n-1] bound both scans
            while _less(&e[i], &pivot):
                i += 1
            while _less(&pivot, &e[j]):
                j -= 1
            if i >= j:
                break
            tmp = e[i]; e[i] = e[j]; e[j] = tmp
            i += 1
            j -= 1
        # e[0..j] <= pivot <= e[j+1..n-1]: recurse into the smaller side, loop on the larger.
        lo = j + 1
        if lo < n - lo:
            _sort_entries(e, lo, depth)
            e += lo
            n -= lo
        else:
            _sort_entries(e + lo, n - lo, depth)
            n = lo
    for i in range(1, n):
        tmp = e[i]
        j = i
        while j > 0 and _less(&tmp, &e[j - 1]):
            e[j] = e[j - 1]
            j -= 1
        e[j] = tmp


cdef inline int _log2(size_t n) noexcept nogil:
    cdef int r = 0
    while n > 1:
        n >>= 1
        r += 1
    return r


cdef inline uint32_t _load_u32(const uint8_t *p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline void _store_u32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)
    p[2] = <uint8_t>(v >> 16)
    p[3] = <uint8_t>(v >> 24)


cdef inline uint64_t _head(const uint8_t *key, size_t n) noexcept nogil:
    cdef uint64_t h = 0
    cdef size_t i
    for i in range(8):
        h = (h << 8) | (key[i] if i < n else 0)
    return h


cdef uint8_t *_copy_out(const uint8_t *data, size_t n) noexcept nogil:
    cdef uint8_t *p = <uint8_t *>PyMem_RawMalloc(n if n else 1)
    if p != NULL:
        memcpy(p, data, n)
    return p


cdef void _build_records(STBuilder *b, const uint8_t *buf, size_t length, ShardResult *out) noexcept nogil:
    """Sort one shard's records, keep the last value of every key, drop deletions, and build the subtrie."""
    cdef Segment seg
    seg.buf = buf
    seg.len = length
    _build_segments(b, &seg, 1, out)


cdef void _build_segments(STBuilder *b, const Segment *segs, size_t nsegs, ShardResult *out) noexcept nogil:
    """_build_records over a shard whose records lie in several buffers, in input order (one per reader)."""
    cdef size_t n = 0, pos, i, j, g, length
    cdef uint32_t kl, vl
    cdef const uint8_t *buf
    cdef Entry *entries = NULL
    cdef Entry *e
    cdef const Entry *last = NULL
    cdef int kind = ST_NONE
    memset(out, 0, sizeof(ShardResult))
    for g in range(nsegs):                      # count first: one allocation
        buf = segs[g].buf
        length = segs[g].len
        pos = 0
        while pos < length:
            if length - pos < _RECORD_HEADER:
                out.error = -2
                return
            kl = _load_u32(buf + pos)
            vl = _load_u32(buf + pos + 4)
            if length - pos - _RECORD_HEADER < <size_t>kl + vl:
                out.error = -2
                return
            pos += _RECORD_HEADER + kl + vl
            n += 1
    if n == 0:
        return
    entries = <Entry *>PyMem_RawMalloc(n * sizeof(Entry))
    if entries == NULL:
        out.error = -1
        return
    i = 0
    for g in range(nsegs):
        buf = segs[g].buf
        length = segs[g].len
        pos = 0
        while pos < length:
            e = &entries[i]
            e.key_len = _load_u32(buf + pos)
            e.value_len = _load_u32(buf + pos + 4)
            e.key = buf + pos + _RECORD_HEADER
            e.value = e.key + e.key_len
            e.head = _head(e.key, e.key_len)
            e.seq = i
            pos += _RECORD_HEADER + e.key_len + e.value_len
            i += 1
    _sort_entries(entries, n, 2 * _log2(n) + 4)
    st_reset(b)
    b.allow_prefix = True
    i = 0
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
            out.error = -1
            PyMem_RawFree(entries)
            return
        last = e
        out.count += 1
    if last != NULL:
        if st_finish_subtree(b, &kind, &out.depth, out.ref, &out.ref_len) != 0:
            out.error = -1
        else:
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
    st_reset(b)
    PyMem_RawFree(entries)


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


def build_shard_records(records, int backend=-1):
    """Build one shard from its records (``u32le key length, u32le value length, key, value``, in input order).

    Returns ``(kind, depth, ref, key, value, count)``: what :func:`build_root` combines. This is the task other
    executors (process pools, Dask workers) run, so it takes and returns only picklable values.
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
        _build_records(&b, p, n, &r)
        st_free(&b)
    return _result_tuple(&r)


def build_shard_many(list blobs, int backend=-1):
    """:func:`build_shard_records` of each blob (one task for several shards)."""
    return [build_shard_records(blob, backend) for blob in blobs]


# ---------------------------------------------------------------------------------------------------------------
# Partition
# ---------------------------------------------------------------------------------------------------------------

cdef struct Arena:
    uint8_t *buf
    size_t len
    size_t cap


cdef inline int _arena_reserve(Arena *a, size_t extra) noexcept nogil:
    cdef size_t need = a.len + extra, cap
    cdef uint8_t *p
    if need <= a.cap:
        return 0
    cap = a.cap * 2 if a.cap else 1024
    if cap < need:
        cap = need
    p = <uint8_t *>PyMem_RawRealloc(a.buf, cap)
    if p == NULL:
        return -1
    a.buf = p
    a.cap = cap
    return 0


cdef inline int _append(Arena *arenas, int k, size_t nshards, const uint8_t *key, size_t kl,
                        const uint8_t *value, size_t vl) noexcept nogil:
    """Append one record to its shard's arena (arenas[nshards]: keys shorter than k nibbles). -1: out of memory."""
    cdef size_t shard
    cdef Arena *a
    cdef uint8_t *o
    if 2 * kl < <size_t>k:
        shard = nshards
    elif k == 0:
        shard = 0
    elif k <= 2:
        shard = key[0] >> (8 - 4 * k)
    else:
        shard = ((<size_t>key[0] << 8) | key[1]) >> (16 - 4 * k)
    a = &arenas[shard]
    if _arena_reserve(a, _RECORD_HEADER + kl + vl) < 0:
        return -1
    o = a.buf + a.len
    _store_u32(o, <uint32_t>kl)
    _store_u32(o + 4, <uint32_t>vl)
    memcpy(o + _RECORD_HEADER, key, kl)
    memcpy(o + _RECORD_HEADER + kl, value, vl)
    a.len += _RECORD_HEADER + kl + vl
    return 0


cdef extern from *:
    """
    /* The fast path of the input readers, run without the GIL: a pair that is an exact tuple of two exact bytes
       objects under 4 GiB. The input is a tuple (immutable) that holds a reference to every pair, and a pair
       holds its key and value, so nothing read here can change or go away while the GIL is released. */
    static inline int mpt_exact_pair(PyObject *item, const uint8_t **k, size_t *kl, const uint8_t **v, size_t *vl) {
        PyObject *a, *b;
        if (Py_TYPE(item) != &PyTuple_Type || PyTuple_GET_SIZE(item) != 2)
            return 0;
        a = PyTuple_GET_ITEM(item, 0);
        b = PyTuple_GET_ITEM(item, 1);
        if (Py_TYPE(a) != &PyBytes_Type || Py_TYPE(b) != &PyBytes_Type)
            return 0;
        if ((size_t)PyBytes_GET_SIZE(a) > 0xffffffffu || (size_t)PyBytes_GET_SIZE(b) > 0xffffffffu)
            return 0;
        *k = (const uint8_t *)PyBytes_AS_STRING(a);
        *kl = (size_t)PyBytes_GET_SIZE(a);
        *v = (const uint8_t *)PyBytes_AS_STRING(b);
        *vl = (size_t)PyBytes_GET_SIZE(b);
        return 1;
    }
    /* Shuffled input means every pair, key and value is a cache miss (~0.8 us a pair when waited for one by one):
       fetch the pair tuple MPT_AHEAD_PAIR items ahead, and the key and value objects of the pair MPT_AHEAD_DATA
       ahead (whose tuple was fetched earlier), so that several misses are in flight at once. */
    #define MPT_AHEAD_PAIR 16
    #define MPT_AHEAD_DATA 8
    #if defined(__GNUC__) || defined(__clang__)
    #define MPT_PREFETCH(p) __builtin_prefetch((const void *)(p), 0, 3)
    #else
    #define MPT_PREFETCH(p) ((void)(p))
    #endif
    static inline void mpt_prefetch_pair(PyObject *const *items, Py_ssize_t i, Py_ssize_t hi) {
        PyObject *item;
        if (i + MPT_AHEAD_PAIR < hi)
            MPT_PREFETCH(items[i + MPT_AHEAD_PAIR]);
        if (i + MPT_AHEAD_DATA < hi) {
            item = items[i + MPT_AHEAD_DATA];
            if (Py_TYPE(item) == &PyTuple_Type && PyTuple_GET_SIZE(item) == 2) {
                MPT_PREFETCH(PyTuple_GET_ITEM(item, 0));
                MPT_PREFETCH((const char *)PyTuple_GET_ITEM(item, 0) + 64);
                MPT_PREFETCH(PyTuple_GET_ITEM(item, 1));
                MPT_PREFETCH((const char *)PyTuple_GET_ITEM(item, 1) + 64);
            }
        }
    }
    """
    int mpt_exact_pair(PyObject *item, const uint8_t **k, size_t *kl, const uint8_t **v, size_t *vl) noexcept nogil
    void mpt_prefetch_pair(PyObject *const *items, Py_ssize_t i, Py_ssize_t hi) noexcept nogil


cdef Py_ssize_t _read_fast(PyObject *const *items, Py_ssize_t lo, Py_ssize_t hi, Arena *arenas, int k,
                           size_t nshards, int *oom) noexcept nogil:
    """Copy items[lo:hi] into the arenas while they are exact (bytes, bytes) tuples; returns the index of the first
    item that is not (hi when all were), for the slow path under the GIL. Sets *oom on allocation failure."""
    cdef Py_ssize_t i
    cdef const uint8_t *key
    cdef const uint8_t *value
    cdef size_t kl, vl
    for i in range(lo, hi):
        mpt_prefetch_pair(items, i, hi)
        if not mpt_exact_pair(items[i], &key, &kl, &value, &vl):
            return i
        if _append(arenas, k, nshards, key, kl, value, vl) != 0:
            oom[0] = 1
            return i
    return hi


cdef void _merge_arenas(Arena *dst, Arena *src, size_t lo, size_t hi) noexcept nogil:
    """Append src[s] to dst[s] for s in lo..hi-1 and empty src[s] (keeping its memory for the next round).
    On allocation failure src[s] keeps its records (the caller checks that every src arena is empty)."""
    cdef size_t s
    cdef Arena tmp
    for s in range(lo, hi):
        if src[s].len == 0:
            continue
        if dst[s].len == 0:
            # Swap the buffers rather than copy (dst's, empty, becomes src's for the next round).
            tmp = dst[s]
            dst[s] = src[s]
            src[s] = tmp
            continue
        if _arena_reserve(&dst[s], src[s].len) < 0:
            return
        memcpy(dst[s].buf + dst[s].len, src[s].buf, src[s].len)
        dst[s].len += src[s].len
        src[s].len = 0


cdef void _presize_arenas(Arena *arenas, size_t lo, size_t hi, double scale) noexcept nogil:
    """Grow arenas lo..hi-1 once to their length times scale (plus 1 KiB) instead of doubling them several
    times, each a copy and fresh pages to fault in. On allocation failure an arena keeps its size (it still grows
    on demand)."""
    cdef size_t s, want
    cdef uint8_t *p
    for s in range(lo, hi):
        want = <size_t>(<double>arenas[s].len * scale) + 1024
        if want > arenas[s].cap:
            p = <uint8_t *>PyMem_RawRealloc(arenas[s].buf, want)
            if p == NULL:
                return
            arenas[s].buf = p
            arenas[s].cap = want


cdef void _free_arenas(Arena *arenas, size_t n) noexcept nogil:
    cdef size_t i
    if arenas != NULL:
        for i in range(n):
            PyMem_RawFree(arenas[i].buf)
        PyMem_RawFree(arenas)


cdef inline bytes _pair_bytes(object data, str what, Py_ssize_t index):
    # The pair's index goes into the argument's name; the name is only built for a value that is not bytes.
    if type(data) is bytes:
        return <bytes>data
    return as_bytes(data, "pair %d: %s" % (index, what))


# Pairs each reader copies between two synchronisation points (a merge, a spill check, a progress update): large
# enough that the threads rarely wait for each other, small enough that the readers' private arenas stay small.
_READ_CHUNK = 262144
# Pairs taken from an iterator (not a list or tuple) at a time: they are held in a tuple while being read.
_ITER_CHUNK = 65536
# A list or tuple of at least this many pairs a reader is split into one contiguous stretch per reader (see
# _read_split); smaller ones are read in rounds.
_MAX_READERS = 16                # reader threads of one add_all, whatever `workers` says
_SPLIT_MIN = 4096
# Pairs a reader copies before growing its arenas once to their expected final size.
_PRESIZE_AFTER = 65536


cdef class _Reader:
    """One reader thread's private arenas (nshards + 1: the last holds keys shorter than the shard prefix)."""
    cdef:
        Arena *arenas
        size_t n
        object error                # the exception its last chunk raised, or None

    def __cinit__(self, size_t n):
        self.n = n
        self.arenas = <Arena *>PyMem_RawMalloc(n * sizeof(Arena))
        if self.arenas == NULL:
            raise MemoryError()
        memset(self.arenas, 0, n * sizeof(Arena))
        self.error = None

    def __dealloc__(self):
        _free_arenas(self.arenas, self.n)
        self.arenas = NULL


cdef class _Partition:
    """The input split into 16**k shard arenas, spilled to run files when it outgrows the memory limit."""
    cdef:
        int k
        size_t nshards
        Arena *arenas               # nshards + 1: arenas[nshards] holds short keys until they go to short_keys
        size_t arena_bytes          # sum of the shard arenas' lengths
        size_t memory_limit
        object spill_dir            # a directory of our own under the user's spill_dir, or None
        object spill_owner          # the mpt._spill.SpillDir holding spill_dir (locked while we live)
        list runs                   # per spill: offsets table as bytes (file offset, length: 2 x u64 per shard)
        int spill_fd                # the one spill file every run is appended to (-1: none yet)
        uint64_t spill_end          # its length
        readonly dict short_keys    # keys shorter than k nibbles: key -> last value
        Py_ssize_t count            # pairs read
        Py_ssize_t base             # input position of the tuple being read (for error messages)
        list extra                  # _Readers whose arenas hold later stretches of the input (see _read_split)

    def __cinit__(self, int k, object spill_dir, size_t memory_limit):
        self.k = k
        self.nshards = 1 << (4 * k)
        self.arenas = <Arena *>PyMem_RawMalloc((self.nshards + 1) * sizeof(Arena))
        if self.arenas == NULL:
            raise MemoryError()
        memset(self.arenas, 0, (self.nshards + 1) * sizeof(Arena))
        self.memory_limit = memory_limit
        self.runs = []
        self.spill_fd = -1
        self.spill_end = 0
        self.short_keys = {}
        self.extra = []
        self.spill_owner = SpillDir(spill_dir) if spill_dir is not None else None
        self.spill_dir = self.spill_owner.path if spill_dir is not None else None

    def __dealloc__(self):
        _free_arenas(self.arenas, self.nshards + 1)
        self.arenas = NULL

    def close(self):
        """Close and delete the run files."""
        if self.spill_fd >= 0:
            try:
                os.close(self.spill_fd)
            except OSError:
                pass
            self.spill_fd = -1
        self.runs = []
        self.extra = []
        if self.spill_owner is not None:
            self.spill_owner.close()
            self.spill_owner = None
            self.spill_dir = None

    cdef int _add_slow(self, Arena *arenas, object item, Py_ssize_t index) except -1:
        """A pair the fast path declined (GIL held): converts bytearray / memoryview, or raises the error naming
        the pair's input position."""
        cdef bytes key, value
        if type(item) is tuple and PyTuple_GET_SIZE(item) == 2:
            key = _pair_bytes(<object>PyTuple_GET_ITEM(item, 0), "key", index)
            value = _pair_bytes(<object>PyTuple_GET_ITEM(item, 1), "value", index)
        else:
            try:
                k, v = item
            except (TypeError, ValueError):
                raise TypeError("pair %d: expected a (key, value) pair, got %s"
                                % (index, type(item).__name__)) from None
            key = _pair_bytes(k, "key", index)
            value = _pair_bytes(v, "value", index)
        if <size_t>PyBytes_GET_SIZE(key) > 0xffffffff or <size_t>PyBytes_GET_SIZE(value) > 0xffffffff:
            raise ValueError("pair %d: keys and values are limited to 4 GiB" % index)
        if _append(arenas, self.k, self.nshards, <const uint8_t *>PyBytes_AS_STRING(key), <size_t>PyBytes_GET_SIZE(key),
                   <const uint8_t *>PyBytes_AS_STRING(value), <size_t>PyBytes_GET_SIZE(value)) != 0:
            raise MemoryError()
        return 0

    cdef int _read_range(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, Arena *arenas) except -1:
        """items[lo:hi] into arenas: the fast path without the GIL, each odd item under it."""
        cdef PyObject *const *p = <PyObject *const *>&(<PyTupleObject *>items).ob_item[0]
        cdef Py_ssize_t i = lo, j
        cdef int oom = 0
        while i < hi:
            with nogil:
                j = _read_fast(p, i, hi, arenas, self.k, self.nshards, &oom)
            if oom:
                raise MemoryError()
            if j < hi:
                self._add_slow(arenas, items[j], self.base + j)
                j += 1
            i = j
        return 0

    def _read_part(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, _Reader reader, Py_ssize_t share=0):
        # A reader thread's share of a round; its exception is kept for the caller to raise in input order.
        try:
            self._read_presized(items, lo, hi, reader.arenas, share)
        except BaseException as exc:
            reader.error = exc

    cdef int _read_presized(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, Arena *arenas,
                            Py_ssize_t share) except -1:
        """_read_range; with share > 0 (the first piece of a reader's stretch of share pairs, its arenas empty),
        the arenas are grown once to their expected final size after the first _PRESIZE_AFTER pairs."""
        cdef Py_ssize_t first = hi - lo
        cdef double scale
        if share > 0 and first > _PRESIZE_AFTER:
            first = _PRESIZE_AFTER
        self._read_range(items, lo, lo + first, arenas)
        if lo + first < hi:
            # The first pairs' share of every shard scaled up, with a margin for the sampling error (about 1/16
            # of a shard's count with 256 pairs a shard): untouched pages of a generous allocation cost nothing.
            scale = <double>share / <double>first * 1.12
            with nogil:
                _presize_arenas(arenas, 0, self.nshards, scale)
            self._read_range(items, lo + first, hi, arenas)
        return 0

    def _merge_part(self, list readers, size_t lo, size_t hi, Py_ssize_t done=0, Py_ssize_t total=0):
        # Shards lo..hi-1 of every other reader's arenas appended to the partition's, in reader (= input) order;
        # on the first round of a large input (done > 0), the partition's arenas are presized first.
        cdef _Reader r
        if done > 0:
            self._presize(done, total, lo, hi)
        for r in readers:
            with nogil:
                _merge_arenas(self.arenas, r.arenas, lo, hi)

    cdef int _drain_short(self, Arena *a) except -1:
        # The short keys of this round (a: an arena set's last arena), in input order, into the dict (a later
        # value wins).
        cdef size_t pos = 0
        cdef uint32_t kl, vl
        while pos < a.len:
            kl = _load_u32(a.buf + pos)
            vl = _load_u32(a.buf + pos + 4)
            self.short_keys[PyBytes_FromStringAndSize(<const char *>a.buf + pos + _RECORD_HEADER, kl)] = \
                PyBytes_FromStringAndSize(<const char *>a.buf + pos + _RECORD_HEADER + kl, vl)
            pos += _RECORD_HEADER + kl + vl
        a.len = 0
        return 0

    cdef int _presize(self, Py_ssize_t done, Py_ssize_t total, size_t lo, size_t hi) except -1:
        # After the first round of a large tuple: grow shard arenas lo..hi-1 once to what the whole input will
        # need (their share so far scaled up, plus 5%), instead of doubling them several times, each a copy and
        # fresh pages to fault in. Only without spilling: a spill empties the arenas anyway.
        with nogil:
            _presize_arenas(self.arenas, lo, hi if hi < self.nshards else self.nshards,
                            <double>total / <double>done * 1.05)
        return 0

    cdef int _read_split(self, tuple items, int readers, list states, object pool, object progress) except -1:
        """Read a whole tuple of pairs (into an empty partition, without spilling) with one contiguous stretch of
        the input per reader: reader 0 (this thread) the first into the partition's arenas, reader r the r-th
        into its own, which then stay apart (self.extra) and the shard builds read a shard's records from every
        reader's arenas in reader order, which is input order. Nothing is copied after reading, and the readers
        only wait for each other at the end (or after each _READ_CHUNK pairs each when progress is reported)."""
        cdef Py_ssize_t n = PyTuple_GET_SIZE(items), share, off, chunk, a, b, got
        cdef int r
        cdef size_t s, total
        cdef _Reader st
        share = (n + readers - 1) // readers
        chunk = share if progress is None else max(1, <Py_ssize_t>_READ_CHUNK)
        self.base = self.count
        first = None
        off = 0
        while off < share:
            futures = []
            got = 0
            for r in range(1, readers):
                st = states[r - 1]
                a = min(n, r * share + off)
                b = min(n, r * share + min(share, off + chunk))
                if a < b and st.error is None:
                    # A reader that failed reads no further: the input after its error cannot matter, since
                    # the earliest error in input order is raised (reader r's stretch precedes reader r + 1's).
                    futures.append(pool.submit(self._read_part, items, a, b, st, share if off == 0 else 0))
                got += max(0, b - a)
            a = min(n, off)
            b = min(n, min(share, off + chunk))
            if first is None and a < b:
                try:
                    self._read_presized(items, a, b, self.arenas, share if off == 0 else 0)
                except BaseException as exc:
                    first = exc
            got += max(0, b - a)
            for f in futures:
                f.result()
            if progress is not None:
                progress(got)
            off += chunk
        # The readers' arenas are part of the partition from here (close() and _fold_extra() release them).
        self.extra = states[:readers - 1]
        if first is not None:
            raise first
        for st in self.extra:
            if st.error is not None:
                err, st.error = st.error, None
                raise err
        self._drain_short(&self.arenas[self.nshards])
        for st in self.extra:
            self._drain_short(&st.arenas[self.nshards])
        total = 0
        for s in range(self.nshards):
            total += self.arenas[s].len
            for st in self.extra:
                total += st.arenas[s].len
        self.arena_bytes = total
        self.count += n
        return 0

    cdef int _fold_extra(self) except -1:
        # Append the readers' arenas kept apart by _read_split to the partition's (before reading more input or
        # spilling), in reader order.
        cdef _Reader st
        cdef size_t s
        for st in self.extra:
            with nogil:
                _merge_arenas(self.arenas, st.arenas, 0, self.nshards + 1)
            for s in range(self.nshards + 1):
                if st.arenas[s].len:
                    raise MemoryError()
        self.extra = []
        return 0

    cdef int _read_tuple(self, tuple items, int readers, list states, object pool, object progress) except -1:
        """Read a tuple of pairs in rounds of readers x _READ_CHUNK pairs: reader 0 (this thread) fills the
        partition's arenas with the first chunk, reader r the r-th chunk into its own, and then every reader's
        arenas are appended shard by shard in reader order, so each shard keeps the input order."""
        cdef Py_ssize_t n = PyTuple_GET_SIZE(items), lo = 0, hi, step, a, b
        cdef Py_ssize_t chunk = _READ_CHUNK
        if self.spill_dir is not None:
            # The arenas may outgrow memory_limit by one round before the spill check: keep rounds well under it.
            chunk = max(1, min(chunk, <Py_ssize_t>(self.memory_limit // 1024)))
        cdef size_t s, total
        cdef int r, used
        cdef _Reader st
        self.base = self.count
        while lo < n:
            hi = min(n, lo + <Py_ssize_t>readers * chunk)
            used = 1 if readers == 1 or hi - lo < 4096 else readers
            if used == 1:
                self._read_range(items, lo, hi, self.arenas)
                if lo == 0 and hi < n and self.spill_dir is None:
                    self._presize(hi, n, 0, self.nshards)
            else:
                step = (hi - lo + used - 1) // used     # (cdivision: no negative floor trick)
                futures = []
                for r in range(1, used):
                    a = lo + r * step
                    b = min(hi, a + step)
                    futures.append(pool.submit(self._read_part, items, a, b, states[r - 1]) if a < b else None)
                first = None
                try:
                    self._read_range(items, lo, min(hi, lo + step), self.arenas)
                except BaseException as exc:
                    first = exc
                for f in futures:
                    if f is not None:
                        f.result()
                if first is not None:
                    raise first
                for r in range(1, used):
                    st = states[r - 1]
                    if st.error is not None:
                        err, st.error = st.error, None
                        raise err
                # Reader 0's share scaled up, before the others are appended (in the merge tasks, in parallel).
                done = min(hi, step) if lo == 0 and hi < n and self.spill_dir is None else 0
                merges = [pool.submit(self._merge_part, states[:used - 1], a2, b2, done, n)
                          for a2, b2 in _chunks(self.nshards + 1, used)]
                for f in merges:
                    f.result()
                for r in range(1, used):
                    st = states[r - 1]
                    for s in range(self.nshards + 1):
                        if st.arenas[s].len:
                            raise MemoryError()
            self._drain_short(&self.arenas[self.nshards])
            total = 0
            for s in range(self.nshards):
                total += self.arenas[s].len
            self.arena_bytes = total
            self.count += hi - lo
            if progress is not None:
                progress(hi - lo)
            if self.spill_dir is not None and self.arena_bytes > self.memory_limit:
                self.spill()
            lo = hi
        return 0

    def add_all(self, pairs, progress=None, int readers=1):
        """Read every pair, in order; ``readers`` threads copy a list or tuple's pairs (without the GIL).
        progress(n) is called after every round with how many pairs were read since."""
        cdef list states = []
        cdef int r
        cdef tuple chunk
        if isinstance(pairs, Mapping):
            pairs = pairs.items()
        if type(pairs) is list:
            # A tuple copy of the list (pointers only): a list could change under the GIL-free readers.
            pairs = tuple(<list>pairs)
        # Every extra reader owns a set of 16^k shard arenas: no more readers than the input can keep busy
        # (a stretch or a round share of at least 4096 pairs each) and than memory bandwidth rewards.
        readers = max(1, min(readers, _MAX_READERS))
        if type(pairs) is tuple:
            readers = max(1, min(readers, PyTuple_GET_SIZE(pairs) // _SPLIT_MIN))
        pool = None
        if readers > 1:
            from concurrent.futures import ThreadPoolExecutor

            states = [_Reader(self.nshards + 1) for r in range(readers - 1)]
            pool = ThreadPoolExecutor(max_workers=readers)
        try:
            if (type(pairs) is tuple and readers > 1 and self.spill_dir is None and self.count == 0
                    and len(pairs) >= readers * _SPLIT_MIN):
                self._read_split(<tuple>pairs, readers, states, pool, progress)
                return
            self._fold_extra()
            if type(pairs) is tuple:
                self._read_tuple(<tuple>pairs, readers, states, pool, progress)
            else:
                # Any other iterable is taken a chunk at a time, so a generator's input is never held whole.
                it = iter(pairs)
                while True:
                    chunk = tuple(islice(it, _ITER_CHUNK * readers))
                    if not chunk:
                        break
                    self._read_tuple(chunk, readers, states, pool, progress)
        finally:
            if pool is not None:
                pool.shutdown(wait=True)

    def spill(self):
        """Append every arena to the spill file as a new run and empty them."""
        cdef size_t i
        cdef uint64_t *offsets
        cdef bytes table = PyBytes_FromStringAndSize(NULL, 16 * self.nshards)
        cdef uint64_t off = self.spill_end
        offsets = <uint64_t *>PyBytes_AS_STRING(table)
        self._fold_extra()
        path = os.path.join(self.spill_dir, "spill.bin")
        if self.spill_fd < 0:
            # One file for every run (a few descriptors however many spills): each run is appended to it.
            self.spill_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            with os.fdopen(os.dup(self.spill_fd), "wb", buffering=1 << 20) as f:
                f.seek(off)
                for i in range(self.nshards):
                    offsets[2 * i] = off
                    offsets[2 * i + 1] = self.arenas[i].len
                    if self.arenas[i].len:
                        f.write((<char *>self.arenas[i].buf)[:self.arenas[i].len])
                        off += self.arenas[i].len
        except OSError as e:
            # A full disk (ENOSPC) shows up here: name the file, which a bare write error does not.
            raise OSError(e.errno, e.strerror or str(e), path) from e
        self.spill_end = off
        self.runs.append(table)
        for i in range(self.nshards):
            self.arenas[i].len = 0
            # Give the memory back: the next spill's arenas regrow to what that part of the input needs.
            PyMem_RawFree(self.arenas[i].buf)
            self.arenas[i].buf = NULL
            self.arenas[i].cap = 0
        self.arena_bytes = 0

    def finish_input(self):
        """After the last pair: when anything was spilled, spill the rest too (every shard then lives on disk)."""
        if self.runs and self.arena_bytes:
            self.spill()

    @property
    def spilled(self):
        return len(self.runs)

    cdef size_t _shard_size(self, size_t s):
        cdef size_t total = self.arenas[s].len
        cdef const uint64_t *offsets
        cdef _Reader st
        for st in self.extra:
            total += st.arenas[s].len
        for table in self.runs:
            offsets = <const uint64_t *>PyBytes_AS_STRING(table)
            total += <size_t>offsets[2 * s + 1]
        return total

    def shard_bytes(self, size_t s):
        """The records of shard s as bytes (from the run files and the arena, in input order)."""
        cdef size_t size = self._shard_size(s), pos = 0
        cdef bytes out = PyBytes_FromStringAndSize(NULL, size)
        cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
        cdef int err = self._load(s, o, &pos)
        if err != 0:
            raise OSError(err, "build_root: reading a spilled shard failed")
        return out

    cdef int _load(self, size_t s, uint8_t *o, size_t *pos) except -1:
        # Copy shard s's spilled segments and then its arena to o (GIL held: the run table is a Python list).
        cdef const uint64_t *offsets
        cdef int fd = self.spill_fd
        cdef size_t seg
        cdef Py_ssize_t got
        cdef int64_t off
        for table in self.runs:
            offsets = <const uint64_t *>PyBytes_AS_STRING(table)
            off = <int64_t>offsets[2 * s]
            seg = <size_t>offsets[2 * s + 1]
            while seg > 0:
                with nogil:
                    got = pread(fd, o + pos[0], seg, off)
                if got <= 0:
                    raise OSError("build_root: short read from a spill file")
                pos[0] += got
                off += got
                seg -= got
        if self.arenas[s].len:
            memcpy(o + pos[0], self.arenas[s].buf, self.arenas[s].len)
            pos[0] += self.arenas[s].len
        for st in self.extra:
            if (<_Reader>st).arenas[s].len:
                memcpy(o + pos[0], (<_Reader>st).arenas[s].buf, (<_Reader>st).arenas[s].len)
                pos[0] += (<_Reader>st).arenas[s].len
        return 0

    def build_range(self, size_t lo, size_t hi, int backend):
        """Build shards lo..hi-1 on this thread (the GIL is released while each shard is sorted and built)."""
        cdef STBuilder b
        cdef ShardResult r
        cdef size_t s, size, pos, g
        cdef uint8_t *loaded = NULL
        cdef list out = []
        cdef list sets = [None] + self.extra
        cdef size_t nsets = len(sets)
        # Each arena set's shard s is one segment of the shard: the partition's arenas, then _read_split's readers.
        cdef Arena **arenas = <Arena **>PyMem_RawMalloc(nsets * sizeof(Arena *))
        cdef Segment *segs = <Segment *>PyMem_RawMalloc(nsets * sizeof(Segment))
        if arenas == NULL or segs == NULL:
            PyMem_RawFree(arenas)
            PyMem_RawFree(segs)
            raise MemoryError()
        arenas[0] = self.arenas
        for g in range(1, nsets):
            arenas[g] = (<_Reader>sets[g]).arenas
        st_init(&b, backend)
        try:
            for s in range(lo, hi):
                if self.runs:
                    size = self._shard_size(s)
                    loaded = <uint8_t *>PyMem_RawMalloc(size if size else 1)
                    if loaded == NULL:
                        raise MemoryError()
                    pos = 0
                    try:
                        self._load(s, loaded, &pos)
                        with nogil:
                            _build_records(&b, loaded, size, &r)
                    finally:
                        PyMem_RawFree(loaded)
                        loaded = NULL
                else:
                    with nogil:
                        for g in range(nsets):
                            segs[g].buf = arenas[g][s].buf
                            segs[g].len = arenas[g][s].len
                        _build_segments(&b, segs, nsets, &r)
                out.append(_result_tuple(&r))
        finally:
            st_free(&b)
            PyMem_RawFree(arenas)
            PyMem_RawFree(segs)
        return out


# ---------------------------------------------------------------------------------------------------------------
# Combine
# ---------------------------------------------------------------------------------------------------------------

cdef bytes _nibbles(bytes key):
    cdef Py_ssize_t i, n = PyBytes_GET_SIZE(key)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, 2 * n)
    cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
    cdef const uint8_t *k = <const uint8_t *>PyBytes_AS_STRING(key)
    for i in range(n):
        o[2 * i] = k[i] >> 4
        o[2 * i + 1] = k[i] & 0x0f
    return out


def combine(results, short_keys=None, int backend=-1):
    """The root over shard results (``(kind, depth, ref, key, value, count)`` tuples, any order) and the keys
    shorter than the shard prefix (a dict; empty values are deletions)."""
    cdef STBuilder b
    cdef list items = []
    cdef bytes path, payload
    cdef int rc
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


# ---------------------------------------------------------------------------------------------------------------
# Front end
# ---------------------------------------------------------------------------------------------------------------

def choose_shard_nibbles(n, workers, spilling=False):
    """Shard prefix length for about n pairs: shards of a few thousand keys (cache-sized sorts, many tasks to
    spread), none for tiny inputs; with spilling and an unknown size, 4096 shards."""
    if n is None or n <= 0:
        return 3 if spilling else 2
    k = 0
    while k < MAX_SHARD_NIBBLES and n > 4096 * (16 ** k):
        k += 1
    if workers > 1 and k == 0 and n > 256:
        k = 1
    return k


def _is_dask_client(obj):
    return type(obj).__module__.startswith("distributed") and hasattr(obj, "submit") and hasattr(obj, "gather")


MAX_WORKERS = 1024     # threads of one build_root; more only cost memory and thread start-up


def check_workers(workers, name="workers"):
    """``workers`` as a thread count: None gives the CPU count (at most MAX_WORKERS); an integer from 1 to
    MAX_WORKERS is kept; anything else is refused here rather than deep in a thread pool."""
    if workers is None:
        return min(os.cpu_count() or 1, MAX_WORKERS)
    try:
        if isinstance(workers, bool):       # True would silently mean one thread
            raise TypeError
        n = operator.index(workers)         # int, numpy integers; not "2", not 1.5
    except TypeError:
        raise TypeError("%s must be an integer, not %s" % (name, type(workers).__name__)) from None
    if n < 1:
        raise ValueError("%s must be at least 1, got %d" % (name, n))
    if n > MAX_WORKERS:
        raise ValueError("%s=%d is out of range: at most %d threads" % (name, n, MAX_WORKERS))
    return n


def build_root(pairs, *, workers=None, shard_nibbles=None, executor=None, spill_dir=None, memory_limit=None,
               progress=False):
    """The root hash of the trie holding ``pairs`` (any iterable of ``(key, value)`` bytes, in any order).

    Exactly what ``Trie`` + ``update`` of every pair in order + ``hash()`` gives: the last value of a repeated
    key wins and an empty value deletes. ``workers`` threads build the shards (default: the CPU count);
    ``shard_nibbles`` fixes the shard prefix length k (0..4; default from the input size). ``executor``: a
    ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` to run the shard builds on instead.
    ``spill_dir``: spill the partitioned input to files there whenever it exceeds ``memory_limit`` bytes
    (default 512 MiB), so memory stays bounded. ``progress``: tqdm progress bars (or a tqdm-like class).
    """
    from concurrent.futures import Executor, ThreadPoolExecutor

    workers = check_workers(workers)
    if memory_limit is None:
        memory_limit = DEFAULT_MEMORY_LIMIT
    if memory_limit < 0:
        raise ValueError("memory_limit must not be negative")
    if executor is not None and not isinstance(executor, Executor) and not _is_dask_client(executor):
        raise TypeError("executor must be a concurrent.futures.Executor or a dask.distributed.Client, not %s"
                        % type(executor).__name__)
    if isinstance(pairs, Mapping):
        pairs = pairs.items()
    try:
        size_hint = len(pairs)
    except TypeError:
        size_hint = None
    if shard_nibbles is None:
        k = choose_shard_nibbles(size_hint, workers, spill_dir is not None)
    else:
        k = int(shard_nibbles)
        if not 0 <= k <= MAX_SHARD_NIBBLES:
            raise ValueError("shard_nibbles must be between 0 and %d, got %d" % (MAX_SHARD_NIBBLES, k))
    if spill_dir is not None:
        if not isinstance(spill_dir, (str, os.PathLike)):
            raise TypeError("spill_dir must be a path, not %s" % type(spill_dir).__name__)
        spill_dir = os.fspath(spill_dir)
        if not os.path.exists(spill_dir):
            raise FileNotFoundError(errno.ENOENT, "spill_dir %s does not exist" % spill_dir, spill_dir)
        if not os.path.isdir(spill_dir):
            raise NotADirectoryError(errno.ENOTDIR, "spill_dir %s is a file, not a directory" % spill_dir,
                                     spill_dir)

    bar = _progress_bar(progress, size_hint, "pairs")
    part = _Partition(k, spill_dir, memory_limit)
    try:
        part.add_all(pairs, bar.update if bar is not None else None, workers)
        part.finish_input()
        if bar is not None:
            bar.close()
        backend = st_current_backend()
        nshards = 1 << (4 * k)
        bar = _progress_bar(progress, nshards, "shards")
        results = _run_shards(part, nshards, backend, workers, executor, bar)
        if bar is not None:
            bar.close()
            bar = None
        return combine(results, part.short_keys, backend)
    finally:
        if bar is not None:
            bar.close()
        part.close()


def _current_backend():
    """The Keccak backend number the shard builds use (for scripts that run the phases one by one)."""
    return st_current_backend()


def _progress_bar(progress, total, unit):
    if not progress:
        return None
    if progress is True:
        try:
            from tqdm import tqdm
        except ImportError:         # progress bars are optional
            return None
        return tqdm(total=total, unit=" " + unit, unit_scale=True, desc="build_root", leave=False)
    return progress(total=total, unit=" " + unit)


def _chunks(nshards, parts):
    step = max(1, -(-nshards // parts))
    return [(lo, min(nshards, lo + step)) for lo in range(0, nshards, step)]


def _run_shards(_Partition part, nshards, backend, workers, executor, bar):
    from concurrent.futures import ThreadPoolExecutor

    def done(n):
        if bar is not None:
            bar.update(n)

    # Several chunks per worker, so that a slow shard does not leave the other threads idle at the end.
    chunks = _chunks(nshards, workers * 8 if nshards > 1 else 1)
    results = []
    if executor is None or isinstance(executor, ThreadPoolExecutor):
        if executor is None and (workers == 1 or len(chunks) == 1):
            for lo, hi in chunks:
                results.extend(part.build_range(lo, hi, backend))
                done(hi - lo)
            return results
        own = executor is None
        pool = ThreadPoolExecutor(max_workers=workers) if own else executor
        try:
            futures = [pool.submit(part.build_range, lo, hi, backend) for lo, hi in chunks]
            for (lo, hi), future in zip(chunks, futures):
                results.extend(future.result())
                done(hi - lo)
        finally:
            if own:
                pool.shutdown(wait=True, cancel_futures=True)
        return results
    # Other executors run in other processes: send each chunk's records as bytes, submitted as they are read so
    # that a spilled input never sits in memory whole (at most a window of chunks is in flight).
    window = max(2, 2 * workers)
    pending = []
    dask = _is_dask_client(executor)
    backend = -1                # another machine: its own widest Keccak backend
    for lo, hi in chunks:
        blobs = [part.shard_bytes(s) for s in range(lo, hi)]
        if dask:
            pending.append((hi - lo, executor.submit(build_shard_many, blobs, backend, pure=False)))
        else:
            pending.append((hi - lo, executor.submit(build_shard_many, blobs, backend)))
        del blobs
        while len(pending) >= window:
            n, future = pending.pop(0)
            results.extend(future.result())
            done(n)
    for n, future in pending:
        results.extend(future.result())
        done(n)
    return results
