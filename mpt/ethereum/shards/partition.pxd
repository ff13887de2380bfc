cimport cython
from libc.stdint cimport uint8_t, uint64_t

from mpt.ethereum.shards.records cimport Arena, Segment


@cython.final
cdef class ArenaSet:
    cdef:
        Arena *arenas               # one a shard, and last the keys shorter than the shard prefix
        size_t n                    # nshards + 1

    @staticmethod
    cdef ArenaSet new(size_t n)
    cdef bint is_empty(self) noexcept


@cython.final
cdef class SpillFile:
    cdef:
        object run_dir              # the mpt._spill.SpillDir it lives in (locked while we live)
        str path
        int fd                      # -1 until the first spill
        uint64_t end                # the file's length
        list runs                   # per spill: (file offset, length) of every shard, 2 x u64 a shard, as bytes

    @staticmethod
    cdef SpillFile new(str parent)
    cdef int append_run(self, Arena *arenas, size_t nshards) except -1
    cdef size_t shard_size(self, size_t s)
    cdef int load(self, size_t s, uint8_t *o, size_t *pos) except -1
    cdef int close(self) except -1


@cython.final
cdef class Partition:
    cdef:
        readonly int k              # shard prefix length in nibbles
        readonly size_t nshards     # 16**k
        ArenaSet own                # the partition's arenas; its last holds one round's short keys
        list apart                  # ArenaSets of readers holding later stretches of the input (keep_apart)
        Arena **sets                # own's and apart's arenas, in input order: the shard build reads them nogil
        size_t nsets
        size_t arena_bytes          # records in the shard arenas of every set
        size_t memory_limit
        SpillFile spill_file        # None without a spill_dir
        readonly dict short_keys    # keys shorter than k nibbles: key -> last value
        readonly Py_ssize_t count   # pairs read

    cdef int keep_apart(self, list sets) except -1
    cdef int fold_apart(self) except -1
    cdef int end_read(self, Py_ssize_t pairs) except -1
    cdef size_t shard_size(self, size_t s)
    cdef size_t shard_segments(self, size_t s, Segment *segs) noexcept nogil
    cdef int load_shard(self, size_t s, uint8_t *o) except -1
    cdef int _set_apart(self, list sets) except -1
    cdef int _drain_short(self, Arena *a) except -1
