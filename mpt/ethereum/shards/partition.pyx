# cython: language_level=3
"""The input of build_root split by key prefix into 16**k shards, in memory and, past a memory limit, on disk.

Each pair is a record (:mod:`mpt.shards.records`) in the arena of its shard, chosen by the key's first k nibbles;
keys shorter than k nibbles sit above every shard and are kept apart, in a dict (last value wins). With a
``spill_dir``, arenas that outgrow ``memory_limit`` are appended to a spill file as a run (every shard's records
and a table of where each shard's lie) and emptied, so memory stays bounded however large the input. A shard's
records are read back in input order: its spilled runs, then its arenas.

The readers (:mod:`mpt.shards.read`) fill the arenas; the shard build (:mod:`mpt.shards.build`) reads them.
"""
import os

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawRealloc
from libc.stdint cimport int64_t, uint32_t
from libc.string cimport memcpy
from posix.unistd cimport pread

from mpt.ethereum.shards.records cimport RECORD_HEADER, arenas_free, arenas_move, arenas_new, load_u32

from mpt.ethereum.shards.spill import SpillDir

MAX_SHARD_NIBBLES = 4               # the shard of a key comes from its first two bytes (records.shard_of)


@cython.final
cdef class ArenaSet:
    """One arena per shard and, last, one for the keys shorter than the shard prefix: what one reader copied."""

    @staticmethod
    cdef ArenaSet new(size_t n):
        cdef ArenaSet a = ArenaSet.__new__(ArenaSet)
        a.arenas = arenas_new(n)
        if a.arenas == NULL:
            raise MemoryError()
        a.n = n
        return a

    def __dealloc__(self):
        arenas_free(self.arenas, self.n)
        self.arenas = NULL

    cdef bint is_empty(self) noexcept:
        cdef size_t s
        for s in range(self.n):
            if self.arenas[s].len:
                return False
        return True



@cython.final
cdef class SpillFile:
    """The one file every spill of a partition is appended to (a few descriptors however many spills), in a
    private run directory (:class:`mpt.ethereum.shards.spill.SpillDir`) that close() deletes."""

    @staticmethod
    cdef SpillFile new(str parent):
        cdef SpillFile f = SpillFile.__new__(SpillFile)
        f.fd = -1
        f.runs = []
        f.run_dir = SpillDir(parent)
        f.path = os.path.join(f.run_dir.path, "spill.bin")
        return f

    cdef int append_run(self, Arena *arenas, size_t nshards) except -1:
        """Append shards 0..nshards-1 of arenas as a new run (the arenas are left as they are)."""
        cdef size_t i
        cdef bytes table = PyBytes_FromStringAndSize(NULL, 16 * nshards)
        cdef uint64_t *offsets = <uint64_t *>PyBytes_AS_STRING(table)
        cdef uint64_t off = self.end
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            with os.fdopen(os.dup(self.fd), "wb", buffering=1 << 20) as f:
                f.seek(off)
                for i in range(nshards):
                    offsets[2 * i] = off
                    offsets[2 * i + 1] = arenas[i].len
                    if arenas[i].len:
                        f.write((<char *>arenas[i].buf)[:arenas[i].len])
                        off += arenas[i].len
        except OSError as e:
            # A full disk (ENOSPC) shows up here: name the file, which a bare write error does not.
            raise OSError(e.errno, e.strerror or str(e), self.path) from e
        self.end = off
        self.runs.append(table)
        return 0

    cdef size_t shard_size(self, size_t s):
        cdef size_t total = 0
        for table in self.runs:
            total += <size_t>(<const uint64_t *>PyBytes_AS_STRING(table))[2 * s + 1]
        return total

    cdef int load(self, size_t s, uint8_t *o, size_t *pos) except -1:
        """Copy shard s's records of every run to o + pos[0], advancing pos[0]."""
        cdef const uint64_t *offsets
        cdef size_t seg
        cdef Py_ssize_t got
        cdef int64_t off
        for table in self.runs:
            offsets = <const uint64_t *>PyBytes_AS_STRING(table)
            off = <int64_t>offsets[2 * s]
            seg = <size_t>offsets[2 * s + 1]
            while seg > 0:
                with nogil:
                    got = pread(self.fd, o + pos[0], seg, off)
                if got <= 0:
                    raise OSError("build_root: short read from a spill file")
                pos[0] += got
                off += got
                seg -= got
        return 0

    cdef int close(self) except -1:
        """Close the file and delete the run directory."""
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1
        self.runs = []
        if self.run_dir is not None:
            self.run_dir.close()
            self.run_dir = None
        return 0


@cython.final
cdef class Partition:
    """The input split into 16**k shard arenas, spilled to a run file when it outgrows the memory limit."""

    def __init__(self, int k, object spill_dir, size_t memory_limit):
        if not 0 <= k <= MAX_SHARD_NIBBLES:
            raise ValueError("shard_nibbles must be between 0 and %d, got %d" % (MAX_SHARD_NIBBLES, k))
        self.k = k
        self.nshards = 1 << (4 * k)
        self.own = ArenaSet.new(self.nshards + 1)
        self._set_apart([])
        self.memory_limit = memory_limit
        self.short_keys = {}
        self.spill_file = SpillFile.new(spill_dir) if spill_dir is not None else None

    def __dealloc__(self):
        PyMem_RawFree(self.sets)
        self.sets = NULL

    def close(self):
        """Close and delete the spill file."""
        self._set_apart([])
        if self.spill_file is not None:
            self.spill_file.close()

    @property
    def spilling(self):
        """Whether a spill_dir was given."""
        return self.spill_file is not None

    @property
    def spilled(self):
        """How many runs have been spilled."""
        return len(self.spill_file.runs) if self.spill_file is not None else 0

    # --- while reading ---

    cdef int _set_apart(self, list sets) except -1:
        cdef size_t g, n = 1 + len(sets)
        cdef Arena **p = <Arena **>PyMem_RawRealloc(self.sets, n * sizeof(Arena *))
        if p == NULL:
            raise MemoryError()
        self.sets = p
        self.nsets = n
        self.apart = sets
        p[0] = self.own.arenas
        for g in range(1, n):
            p[g] = (<ArenaSet>sets[g - 1]).arenas
        return 0

    cdef int keep_apart(self, list sets) except -1:
        """Make the readers' ArenaSets, which hold the stretches of the input after the partition's own (in
        order), part of the partition: the shard build reads every set's arenas in order, nothing is copied."""
        return self._set_apart(list(sets))

    cdef int fold_apart(self) except -1:
        """Append the sets kept apart to the partition's own arenas, in order (before more input or a spill)."""
        cdef ArenaSet a
        for a in self.apart:
            with nogil:
                arenas_move(self.own.arenas, a.arenas, 0, self.nshards + 1)
            if not a.is_empty():
                raise MemoryError()
        return self._set_apart([])

    cdef int _drain_short(self, Arena *a) except -1:
        # The short keys a set holds, in input order, into the dict (a later value wins).
        cdef size_t pos = 0
        cdef uint32_t kl, vl
        while pos < a.len:
            kl = load_u32(a.buf + pos)
            vl = load_u32(a.buf + pos + 4)
            self.short_keys[PyBytes_FromStringAndSize(<const char *>a.buf + pos + RECORD_HEADER, kl)] = \
                PyBytes_FromStringAndSize(<const char *>a.buf + pos + RECORD_HEADER + kl, vl)
            pos += RECORD_HEADER + kl + vl
        a.len = 0
        return 0

    cdef int end_read(self, Py_ssize_t pairs) except -1:
        """After the readers copied the next `pairs` pairs (into every set, in order): the short keys go to the
        dict, the arena bytes are counted, and the arenas spill when they outgrow the memory limit."""
        cdef size_t g, s, total = 0
        for g in range(self.nsets):
            self._drain_short(&self.sets[g][self.nshards])
            for s in range(self.nshards):
                total += self.sets[g][s].len
        self.arena_bytes = total
        self.count += pairs
        if self.spill_file is not None and self.arena_bytes > self.memory_limit:
            self.spill()
        return 0

    def spill(self):
        """Append every arena to the spill file as a new run and empty them."""
        cdef size_t i
        cdef Arena *a
        if self.spill_file is None:
            raise ValueError("this partition has no spill_dir")
        self.fold_apart()
        self.spill_file.append_run(self.own.arenas, self.nshards)
        for i in range(self.nshards):
            a = &self.own.arenas[i]
            # Give the memory back: the next spill's arenas regrow to what that part of the input needs.
            PyMem_RawFree(a.buf)
            a.buf = NULL
            a.len = a.cap = 0
        self.arena_bytes = 0

    def finish_input(self):
        """After the last pair: when anything was spilled, spill the rest too (every shard then lives on disk)."""
        if self.spilled and self.arena_bytes:
            self.spill()

    # --- the shards ---

    cdef size_t shard_size(self, size_t s):
        cdef size_t g, total = 0
        for g in range(self.nsets):
            total += self.sets[g][s].len
        if self.spill_file is not None:
            total += self.spill_file.shard_size(s)
        return total

    cdef size_t shard_segments(self, size_t s, Segment *segs) noexcept nogil:
        """Shard s's records in memory, one segment per set, in input order (segs: room for nsets); returns how
        many. Not the spilled ones: with runs, load_shard."""
        cdef size_t g
        for g in range(self.nsets):
            segs[g].buf = self.sets[g][s].buf
            segs[g].len = self.sets[g][s].len
        return self.nsets

    cdef int load_shard(self, size_t s, uint8_t *o) except -1:
        """Copy shard s's records to o (room for shard_size(s)): its spilled runs, then every set's arena."""
        cdef size_t g, pos = 0
        if self.spill_file is not None:
            self.spill_file.load(s, o, &pos)
        for g in range(self.nsets):
            if self.sets[g][s].len:
                memcpy(o + pos, self.sets[g][s].buf, self.sets[g][s].len)
                pos += self.sets[g][s].len
        return 0

    def shard_bytes(self, size_t s):
        """The records of shard s as bytes (from the spill file and the arenas, in input order)."""
        cdef bytes out
        if s >= self.nshards:
            raise IndexError("shard %d of %d" % (s, self.nshards))
        out = PyBytes_FromStringAndSize(NULL, self.shard_size(s))
        self.load_shard(s, <uint8_t *>PyBytes_AS_STRING(out))
        return out
