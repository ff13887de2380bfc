# cython: language_level=3
"""build_root's input readers: copy the pairs into a partition's shard arenas, on several threads, in order.

A list or tuple is read by ``readers`` threads without the GIL, each copying exact ``(bytes, bytes)`` pairs into
arenas of its own; any other item is handled with the GIL (converted when bytes-like, else refused with the
error naming its input position). The order of the input survives exactly, so the last write of a key still
wins: either each reader reads one contiguous stretch and its arenas join the partition as they are (a whole
tuple, no spilling), or the input is read in rounds after which every reader's arenas are appended to the
partition's shard by shard, in reader order. Any other iterable is taken a chunk at a time, so a generator's
input is never held whole.
"""
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import islice

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport uint8_t

from mpt.core.bytes_like cimport as_bytes
from mpt.core.prefetch cimport prefetch_line  # the MPT_PREFETCH macro of the C helpers below
from mpt.ethereum.shards.partition cimport ArenaSet, Partition
from mpt.ethereum.shards.records cimport Arena, append_record, arenas_move, arenas_presize

cdef extern from "Python.h":
    ctypedef struct PyTupleObject:
        PyObject *ob_item[1]

# Pairs each reader copies between two synchronisation points (a merge, a spill check, a progress update): large
# enough that the threads rarely wait for each other, small enough that the readers' private arenas stay small.
_READ_CHUNK = 262144
# Pairs taken from an iterator (not a list or tuple) at a time: they are held in a tuple while being read.
_ITER_CHUNK = 65536
_MAX_READERS = 16                # reader threads of one read_pairs, whatever `readers` says
# A list or tuple of at least this many pairs a reader is read as one contiguous stretch per reader
# (_Readers.read_split); smaller ones are read in rounds.
_SPLIT_MIN = 4096
# Pairs a reader copies before growing its arenas once to their expected final size.
_PRESIZE_AFTER = 65536


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
    /* MPT_PREFETCH: mpt.core.prefetch, cimported above. */
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
        if append_record(arenas, k, nshards, key, kl, value, vl) != 0:
            oom[0] = 1
            return i
    return hi


cdef inline bytes _pair_bytes(object data, str what, Py_ssize_t index):
    # The pair's index goes into the argument's name; the name is only built for a value that is not bytes.
    if type(data) is bytes:
        return <bytes>data
    return as_bytes(data, "pair %d: %s" % (index, what))


cdef int _reader_count(object pairs, int readers) except -1:
    # Every extra reader owns a set of 16^k shard arenas: no more readers than the input can keep busy (a stretch
    # or a round share of at least _SPLIT_MIN pairs each) and than memory bandwidth rewards.
    readers = max(1, min(readers, <int>_MAX_READERS))
    if type(pairs) is tuple:
        readers = max(1, min(readers, PyTuple_GET_SIZE(pairs) // <Py_ssize_t>_SPLIT_MIN))
    return readers


def read_pairs(Partition part, pairs, progress=None, int readers=1):
    """Read every pair into ``part``, in order; ``readers`` threads copy a list or tuple's pairs (without the GIL).
    ``progress(n)``, when given, is called after every round with how many pairs were read since."""
    cdef _Readers rs
    cdef tuple chunk
    if isinstance(pairs, Mapping):
        pairs = pairs.items()
    if type(pairs) is list:
        # A tuple copy of the list (pointers only): a list could change under the GIL-free readers.
        pairs = tuple(<list>pairs)
    rs = _Readers.new(part, _reader_count(pairs, readers), progress)
    try:
        if type(pairs) is tuple and rs.can_split(<tuple>pairs):
            rs.read_split(<tuple>pairs)
            return
        part.fold_apart()
        if type(pairs) is tuple:
            rs.read_rounds(<tuple>pairs)
            return
        it = iter(pairs)
        while True:
            chunk = tuple(islice(it, _ITER_CHUNK * rs.count))
            if not chunk:
                break
            rs.read_rounds(chunk)
    finally:
        rs.close()


@cython.final
cdef class _Readers:
    """The reader threads of one read_pairs call. Reader 0 is the calling thread and copies into the partition's
    own arenas; reader r > 0 runs on the pool and copies into sets[r - 1], arenas of its own."""
    cdef:
        Partition part
        int count                   # readers, this thread included
        list sets                   # ArenaSet of readers 1..count-1
        list errors                 # per reader: what its last piece raised, or None (raised in reader order)
        object pool                 # a ThreadPoolExecutor of count threads (None for one reader)
        object progress
        Py_ssize_t base             # input position of the tuple being read (for error messages)

    @staticmethod
    cdef _Readers new(Partition part, int count, object progress):
        cdef _Readers rs = _Readers.__new__(_Readers)
        rs.part = part
        rs.count = count
        rs.progress = progress
        rs.sets = [ArenaSet.new(part.nshards + 1) for _ in range(count - 1)]
        rs.errors = [None] * count
        rs.pool = ThreadPoolExecutor(max_workers=count) if count > 1 else None
        return rs

    cdef int close(self) except -1:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None
        return 0

    cdef inline Arena *arenas_of(self, int r):
        return self.part.own.arenas if r == 0 else (<ArenaSet>self.sets[r - 1]).arenas

    # --- one reader's piece of the input ---

    cdef int add_slow(self, Arena *arenas, object item, Py_ssize_t index) except -1:
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
        if <size_t>PyBytes_GET_SIZE(key) > <size_t>0xffffffff or <size_t>PyBytes_GET_SIZE(value) > <size_t>0xffffffff:
            raise ValueError("pair %d: keys and values are limited to 4 GiB" % index)
        if append_record(arenas, self.part.k, self.part.nshards, <const uint8_t *>PyBytes_AS_STRING(key),
                         <size_t>PyBytes_GET_SIZE(key), <const uint8_t *>PyBytes_AS_STRING(value),
                         <size_t>PyBytes_GET_SIZE(value)) != 0:
            raise MemoryError()
        return 0

    cdef int read_range(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, Arena *arenas) except -1:
        """items[lo:hi] into arenas: the fast path without the GIL, each odd item under it."""
        cdef PyObject *const *p = <PyObject *const *>&(<PyTupleObject *>items).ob_item[0]
        cdef Py_ssize_t i = lo, j
        cdef int oom = 0, k = self.part.k
        cdef size_t nshards = self.part.nshards
        while i < hi:
            with nogil:
                j = _read_fast(p, i, hi, arenas, k, nshards, &oom)
            if oom:
                raise MemoryError()
            if j < hi:
                self.add_slow(arenas, items[j], self.base + j)
                j += 1
            i = j
        return 0

    cdef int presize(self, Arena *arenas, size_t lo, size_t hi, double scale) except -1:
        """Grow shard arenas lo..hi-1 once to their length times scale (records.arenas_presize)."""
        if hi > self.part.nshards:
            hi = self.part.nshards          # not the short keys' arena
        with nogil:
            arenas_presize(arenas, lo, hi, scale)
        return 0

    cdef int read_presized(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, Arena *arenas,
                           Py_ssize_t share) except -1:
        """read_range; with share > 0 (the first piece of a reader's stretch of share pairs, its arenas empty),
        the arenas are grown once to their expected final size after the first _PRESIZE_AFTER pairs."""
        cdef Py_ssize_t first = hi - lo
        if share > 0 and first > _PRESIZE_AFTER:
            first = _PRESIZE_AFTER
        self.read_range(items, lo, lo + first, arenas)
        if lo + first < hi:
            # The first pairs' share of every shard scaled up, with a margin for the sampling error (about 1/16
            # of a shard's count with 256 pairs a shard): untouched pages of a generous allocation cost nothing.
            self.presize(arenas, 0, self.part.nshards, <double>share / <double>first * 1.12)
            self.read_range(items, lo + first, hi, arenas)
        return 0

    def read_piece(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, int r, Py_ssize_t share=0):
        # Reader r's piece of a round; its exception is kept, for raise_error to raise in input order.
        try:
            self.read_presized(items, lo, hi, self.arenas_of(r), share)
        except BaseException as exc:
            self.errors[r] = exc

    cdef int raise_error(self) except -1:
        """Raise the exception of the earliest reader that failed, which is the earliest in input order (reader
        r's piece precedes reader r + 1's)."""
        cdef int r
        for r in range(self.count):
            if self.errors[r] is not None:
                err, self.errors[r] = self.errors[r], None
                raise err
        return 0

    # --- a whole tuple, one stretch per reader ---

    cdef bint can_split(self, tuple items):
        return (self.count > 1 and self.part.spill_file is None and self.part.count == 0
                and PyTuple_GET_SIZE(items) >= self.count * <Py_ssize_t>_SPLIT_MIN)

    cdef int read_split(self, tuple items) except -1:
        """Read a whole tuple of pairs (into an empty partition, without spilling) with one contiguous stretch of
        the input per reader: reader 0 (this thread) the first into the partition's arenas, reader r the r-th
        into its own, which then join the partition as they are (Partition.keep_apart): the shard build reads a
        shard's records from every set in reader order, which is input order. Nothing is copied after reading,
        and the readers only wait for each other at the end (or after each _READ_CHUNK pairs each when progress
        is reported)."""
        cdef Py_ssize_t n = PyTuple_GET_SIZE(items), share, chunk, off = 0, got
        share = (n + self.count - 1) // self.count
        chunk = share if self.progress is None else max(1, <Py_ssize_t>_READ_CHUNK)
        self.base = self.part.count
        while off < share:
            got = self.split_round(items, share, off, chunk)
            if self.progress is not None:
                self.progress(got)
            off += chunk
        # The readers' arenas are part of the partition from here (its close() and fold_apart() release them).
        self.part.keep_apart(self.sets)
        self.raise_error()
        self.part.end_read(n)
        return 0

    cdef Py_ssize_t split_round(self, tuple items, Py_ssize_t share, Py_ssize_t off, Py_ssize_t chunk) except -1:
        """Every reader's next chunk of its stretch (reader r's: items[r * share + off:][:chunk], within its
        stretch); returns how many pairs that is. A reader that failed reads no further: the input after its
        error cannot matter, since the earliest error in input order is raised."""
        cdef Py_ssize_t n = PyTuple_GET_SIZE(items), a, b, got = 0
        cdef Py_ssize_t presize = share if off == 0 else 0
        cdef int r
        futures = []
        for r in range(1, self.count + 1):
            r %= self.count                 # readers 1..count-1 to the pool, then reader 0 on this thread
            a = min(n, r * share + off)
            b = min(n, r * share + min(share, off + chunk))
            got += max(0, b - a)
            if a >= b or self.errors[r] is not None:
                continue
            if r:
                futures.append(self.pool.submit(self.read_piece, items, a, b, r, presize))
            else:
                self.read_piece(items, a, b, 0, presize)
        for f in futures:
            f.result()
        return got

    # --- rounds ---

    cdef int read_rounds(self, tuple items) except -1:
        """Read a tuple of pairs in rounds of readers x _READ_CHUNK pairs (fewer when spilling), each round
        joining the partition before the next, which may spill it."""
        cdef Py_ssize_t n = PyTuple_GET_SIZE(items), lo = 0, hi, chunk = _READ_CHUNK
        cdef bint first_of_many
        cdef int used
        if self.part.spill_file is not None:
            # The arenas may outgrow memory_limit by one round before the spill check: keep rounds well under it.
            chunk = max(1, min(chunk, <Py_ssize_t>(self.part.memory_limit // 1024)))
        self.base = self.part.count
        while lo < n:
            hi = min(n, lo + <Py_ssize_t>self.count * chunk)
            used = 1 if self.count == 1 or hi - lo < 4096 else self.count
            # After the first round of a larger input (and only without spilling: a spill empties the arenas
            # anyway), the partition's arenas are grown once to what the whole input will need.
            first_of_many = lo == 0 and hi < n and self.part.spill_file is None
            if used == 1:
                self.read_range(items, lo, hi, self.part.own.arenas)
                if first_of_many:
                    self.presize(self.part.own.arenas, 0, self.part.nshards, <double>n / <double>hi * 1.05)
            else:
                self.read_round(items, lo, hi, used, n if first_of_many else 0)
            self.part.end_read(hi - lo)
            if self.progress is not None:
                self.progress(hi - lo)
            lo = hi
        return 0

    cdef int read_round(self, tuple items, Py_ssize_t lo, Py_ssize_t hi, int used, Py_ssize_t total) except -1:
        """items[lo:hi] in `used` pieces: reader 0 (this thread) fills the partition's arenas with the first,
        reader r the r-th into its own, and then every reader's arenas are appended shard by shard in reader
        order, so each shard keeps the input order. total > 0: the first round of total pairs."""
        cdef Py_ssize_t step = (hi - lo + used - 1) // used     # (cdivision: no negative floor trick)
        cdef Py_ssize_t a, b
        cdef int r
        futures = []
        for r in range(1, used):
            a = lo + r * step
            b = min(hi, a + step)
            if a < b:
                futures.append(self.pool.submit(self.read_piece, items, a, b, r))
        self.read_piece(items, lo, min(hi, lo + step), 0)
        for f in futures:
            f.result()
        self.raise_error()
        # Reader 0's share scaled up, before the others are appended (in the merge tasks, in parallel).
        self.merge_round(used, <double>total / <double>min(hi, step) * 1.05 if total else 0.0)
        return 0

    cdef int merge_round(self, int used, double scale) except -1:
        """Readers 1..used-1's arenas appended to the partition's, shard ranges spread over the pool."""
        cdef size_t arenas = self.part.nshards + 1, per = (arenas + used - 1) // used, lo = 0
        cdef int r
        merges = []
        while lo < arenas:
            merges.append(self.pool.submit(self.merge_part, used, lo, min(arenas, lo + per), scale))
            lo += per
        for f in merges:
            f.result()
        for r in range(1, used):
            if not (<ArenaSet>self.sets[r - 1]).is_empty():
                raise MemoryError()         # arenas_move ran out of memory
        return 0

    def merge_part(self, int used, size_t lo, size_t hi, double scale):
        # Shards lo..hi-1 of readers 1..used-1 appended to the partition's, in reader (= input) order; with
        # scale > 0 the partition's arenas are presized first.
        cdef int r
        cdef Arena *own = self.part.own.arenas
        cdef Arena *src
        if scale > 0:
            self.presize(own, lo, hi, scale)
        for r in range(1, used):
            src = (<ArenaSet>self.sets[r - 1]).arenas
            with nogil:
                arenas_move(own, src, lo, hi)
