# cython: language_level=3
"""RFC 6962 / CometBFT simple Merkle trees (CometBFT ``crypto/merkle``), hashed with our C SHA-256: the tree
engine (leaf and inner hashes, roots). Proofs are :mod:`mpt.merkle.proof`, CometBFT's ``/tx`` proofs in RPC JSON
:mod:`mpt.merkle.rpc`, the Cosmos SDK's multistore map :mod:`mpt.merkle.multistore`; :mod:`mpt.merkle` has them all.

Consensus rules (bit-exact with CometBFT's ``HashFromByteSlices`` / ``ProofsFromByteSlices``):

* leaf hash ``sha256(0x00 || leaf)``, inner hash ``sha256(0x01 || left || right)``, empty tree ``sha256(b"")``;
* n >= 2 items split at k, the largest power of two strictly below n: the root is
  ``inner(root(items[:k]), root(items[k:]))``.

Because the left part of every split is a complete tree of 2**j leaves, the same root comes out of hashing level
by level: pair neighbours, and carry an unpaired last node up unchanged. That is how :func:`root` works: all
leaf hashes go into one scratch buffer (SHA-NI hashes two leaves at a time), then each level is reduced in
place into the front of the same buffer. No Python object is made per node, the scratch is pooled across calls,
and the GIL is released while hashing large inputs.

Large trees are hashed in chunks of 1024 leaves, each hashed and folded to its subtree root while in cache; from
2048 leaves on the chunks are spread over :func:`mpt.core.runtime.set_hash_threads` / ``MPT_HASH_THREADS`` OpenMP
threads (default 1; :func:`hashing_threads` sets it for a block).
"""

cimport cython
from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.sequence cimport PySequence_Fast_GET_ITEM, PySequence_Fast_GET_SIZE
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp, memcpy, memmove

from mpt.core.bytes_like cimport as_bytes, get_bytes_view
from mpt.core.runtime cimport hash_threads, mark_openmp_used
from mpt.core._sha256.sha256 cimport (
    mpt_sha256,
    mpt_sha256_backend,
    mpt_sha256_many,
    mpt_sha256_pairs,
    mpt_sha256_prefixed,
    share_sha256_backend,
)

import contextlib
import warnings

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.core.runtime import set_hash_threads
from mpt.errors import ProofError

# This module's copy of the C SHA-256 follows mpt.core._sha256.set_sha256_backend().
share_sha256_backend()

__all__ = [
    "EMPTY_ROOT",
    "data_hash",
    "hashing_threads",
    "header_hash",
    "inner_hash",
    "leaf_hash",
    "root",
]

cdef enum:
    # Below this many leaves a root is hashed on the calling thread whatever the hashing-thread setting: the
    # work is not much more than waking an OpenMP team on a loaded machine.
    _THREADS_MIN_LEAVES = 2048

EMPTY_ROOT = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")  # sha256(b"")
"""Root of the empty tree: sha256(b"")."""

# EMPTY_ROOT is every family's name for the empty tree's root; the old name stays for one release.
__getattr__ = _renamed_attributes(__name__, {
    "EMPTY_HASH": ("mpt.merkle.EMPTY_HASH is deprecated; use mpt.merkle.EMPTY_ROOT", lambda: EMPTY_ROOT),
})

# ---------------------------------------------------------------------------------------------------------------
# Scratch: leaf pointers and the hash levels of one call, pooled like the Keccak hasher's buffers
# ---------------------------------------------------------------------------------------------------------------

# A scratch this large or larger is freed after use instead of kept (it would pin tens of MB for good).
cdef size_t _POOL_MAX_LEAVES = 1 << 18


@cython.final
cdef class Scratch:
    """Per-call working memory. ``items`` holds a strong reference to every leaf object while their pointers
    are in use (another thread may drop the caller's list while the GIL is released); ``views`` holds the
    buffer exports of leaves that are not exact bytes."""


    def __dealloc__(self):
        self.release()
        PyMem_Free(self.items)
        PyMem_Free(<void*>self.ptrs)
        PyMem_Free(self.lens)
        PyMem_Free(self.views)
        PyMem_Free(self.hashes)

    cdef int reserve(self, size_t leaves, size_t hash_slots) except -1:
        cdef void* p
        if leaves > self.leaf_capacity:
            p = PyMem_Realloc(self.items, leaves * sizeof(PyObject*))
            if p == NULL:
                raise MemoryError()
            self.items = <PyObject**>p
            p = PyMem_Realloc(<void*>self.ptrs, leaves * sizeof(unsigned char*))
            if p == NULL:
                raise MemoryError()
            self.ptrs = <const unsigned char**>p
            p = PyMem_Realloc(self.lens, leaves * sizeof(size_t))
            if p == NULL:
                raise MemoryError()
            self.lens = <size_t*>p
            p = PyMem_Realloc(self.views, leaves * sizeof(Py_buffer))
            if p == NULL:
                raise MemoryError()
            self.views = <Py_buffer*>p
            self.leaf_capacity = leaves
        if hash_slots > self.hash_capacity:
            p = PyMem_Realloc(self.hashes, hash_slots * HASH_LEN)
            if p == NULL:
                raise MemoryError()
            self.hashes = <unsigned char*>p
            self.hash_capacity = hash_slots
        return 0

    cdef void release(self) noexcept:
        """Drop the buffer exports and leaf references of the last call (needs the GIL)."""
        cdef size_t i
        for i in range(self.exported):
            PyBuffer_Release(&self.views[i])
        self.exported = 0
        for i in range(self.held):
            Py_DECREF(<object>self.items[i])
        self.held = 0

    cdef size_t gather(self, seq, size_t n) except? 0:
        """Pointer and length of each leaf of seq (a list or tuple of n bytes-like objects). Returns the number
        of bytes to hash (at least 1, so that 0 can signal an error)."""
        cdef size_t i, total = 1
        cdef object item
        cdef PyObject* obj
        for i in range(n):
            # A buffer export may run Python code that changes the list: re-check its size every time.
            if <size_t>PySequence_Fast_GET_SIZE(seq) <= i:
                raise RuntimeError("the list of Merkle leaves changed size while it was read")
            item = <object>PySequence_Fast_GET_ITEM(seq, i)
            obj = <PyObject*>item
            if type(item) is bytes:
                self.ptrs[i] = <const unsigned char*>PyBytes_AS_STRING(item)
                self.lens[i] = <size_t>PyBytes_GET_SIZE(item)
            else:
                # A C-contiguous byte buffer, else TypeError; the export pins its size.
                get_bytes_view(item, &self.views[self.exported], f"items[{i}]")
                self.ptrs[i] = <const unsigned char*>self.views[self.exported].buf
                self.lens[i] = <size_t>self.views[self.exported].len
                self.exported += 1
            Py_INCREF(item)
            self.items[i] = obj
            self.held = i + 1
            total += self.lens[i] + 9
        return total


cdef Scratch _POOL = None


cdef Scratch _take_scratch(size_t leaves, size_t hash_slots):
    global _POOL
    cdef Scratch s = _POOL
    if s is None:
        s = Scratch.__new__(Scratch)
    else:
        _POOL = None            # ours alone until given back (another thread may run while we hash)
    s.reserve(leaves, hash_slots)
    return s


cdef void give_scratch(Scratch s) noexcept:
    global _POOL
    s.release()
    if _POOL is None and s.leaf_capacity <= _POOL_MAX_LEAVES:
        _POOL = s


cdef object as_sequence(items):
    """items as a list or tuple: those two are used as they are (no copy), any other iterable is read into a
    list."""
    if type(items) is list or type(items) is tuple:
        return items
    if isinstance(items, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"items must be an iterable of bytes-like leaves, not a single {type(items).__name__}")
    return list(items)


# ---------------------------------------------------------------------------------------------------------------
# Hashing levels (no GIL)
# ---------------------------------------------------------------------------------------------------------------

cdef inline void _reduce_level(unsigned char* src, size_t count, unsigned char* dst) noexcept nogil:
    """Next level of count (>= 2) hashes at src into dst (dst == src allowed): pairs, then the odd one carried."""
    cdef size_t pairs = count >> 1
    mpt_sha256_pairs(INNER_PREFIX, src, pairs, dst)
    if count & 1:
        memmove(dst + HASH_LEN * pairs, src + HASH_LEN * (count - 1), HASH_LEN)


cdef int all_levels(unsigned char* hashes, size_t count, size_t* offsets, size_t* counts) noexcept nogil:
    """Every level stored one after the other behind the leaf hashes (level 0 at slot 0); returns the number
    of levels. Needs 2 * count + 64 slots."""
    cdef int level = 0
    cdef size_t offset = 0
    offsets[0] = 0
    counts[0] = count
    while count > 1:
        _reduce_level(hashes + HASH_LEN * offset, count, hashes + HASH_LEN * (offset + count))
        offset += count
        count = (count >> 1) + (count & 1)
        level += 1
        offsets[level] = offset
        counts[level] = count
    return level + 1


cdef extern from *:
    """
    #include "sha256.h"
    #include <string.h>
    /* prange-free OpenMP: without -fopenmp the pragma below is ignored and every chunk runs on this thread. */
    #ifdef _OPENMP
    #include <omp.h>
    #define MPT_MERKLE_THREAD_NUM() omp_get_thread_num()
    #else
    #define MPT_MERKLE_THREAD_NUM() 0
    #endif

    /* Leaves per chunk of the fused root: 1024 hashes are 32 KiB, reduced level by level while they sit in L1/L2
     * instead of going out to memory and being read back once per level (what made 100K leaves slower per leaf
     * than 10K).  A power of two, so that chunk j's subtree root is exactly node j of level 10 of the whole tree
     * (the carried odd node of the level-by-level reduction only ever happens at the right edge).  Also the unit
     * of work of the hashing threads. */
    #define MPT_MERKLE_CHUNK 1024

    /* count (>= 1) hashes at h reduced in place to their root in h[0..32). */
    static void mpt_merkle_reduce(unsigned char *h, size_t count)
    {
        while (count > 1) {
            size_t pairs = count >> 1;
            mpt_sha256_pairs(1, h, pairs, h);
            if (count & 1)
                memmove(h + 32 * pairs, h + 32 * (count - 1), 32);
            count = pairs + (count & 1);
        }
    }

    /* Chunk j's subtree root into hashes[j].  With ptrs, the chunk's leaf hashes go to `level`, CHUNK slots private
     * to the calling thread and reused chunk after chunk, so they stay in L1/L2: a 100K-leaf tree no longer writes
     * a 3 MB level out to memory and reads it back.  Without, hashes holds the leaf hashes and chunk j is reduced
     * in place at hashes[j * CHUNK] (the caller then moves the chunk roots together). */
    static void mpt_merkle_chunk(const unsigned char *const *ptrs, const size_t *lens, size_t n,
                                 unsigned char *hashes, unsigned char *level, size_t j)
    {
        size_t lo = j * MPT_MERKLE_CHUNK, count = n - lo < MPT_MERKLE_CHUNK ? n - lo : MPT_MERKLE_CHUNK;
        if (ptrs != NULL) {
            mpt_sha256_many(0, 1, ptrs + lo, lens + lo, count, level);
            mpt_merkle_reduce(level, count);
            memcpy(hashes + 32 * j, level, 32);
        } else {
            mpt_merkle_reduce(hashes + 32 * lo, count);
        }
    }

    /* Threads mpt_merkle_fold really starts for n leaves: no more than there are chunks (1: no parallel region). */
    static int mpt_merkle_team(size_t n, int threads)
    {
        size_t nchunks = (n + MPT_MERKLE_CHUNK - 1) / MPT_MERKLE_CHUNK;
        if (threads <= 1 || nchunks <= 1)
            return 1;
        return (size_t)threads > nchunks ? (int)nchunks : threads;
    }

    /* Slots of hashes mpt_merkle_fold needs for n (>= 1) leaves given as pointers: a chunk root each, then CHUNK
     * working slots per thread it starts (capped at the chunks: the count alone must not size memory). */
    static size_t mpt_merkle_fold_slots(size_t n, int threads)
    {
        return (n + MPT_MERKLE_CHUNK - 1) / MPT_MERKLE_CHUNK + (size_t)mpt_merkle_team(n, threads) * MPT_MERKLE_CHUNK;
    }

    /* Root of n (>= 1) leaves into hashes[0..32).  With ptrs, the leaves are ptrs/lens and hashes has
     * mpt_merkle_fold_slots(n, threads) slots; else hashes[0 .. n) already holds the leaf hashes.  Chunks go to
     * `threads` OpenMP threads (dynamic schedule: on a busy machine a descheduled thread leaves its chunks to the
     * others); the worker threads touch only these arrays, so the caller may have released the GIL. */
    static void mpt_merkle_fold(const unsigned char *const *ptrs, const size_t *lens, size_t n,
                                unsigned char *hashes, int threads)
    {
        size_t nchunks = (n + MPT_MERKLE_CHUNK - 1) / MPT_MERKLE_CHUNK, j;
        unsigned char *work = hashes + 32 * nchunks;
        threads = mpt_merkle_team(n, threads);
        if (threads > 1) {
            long jj, nc = (long)nchunks;
            #pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
            for (jj = 0; jj < nc; jj++)
                mpt_merkle_chunk(ptrs, lens, n, hashes,
                                 work + (size_t)32 * MPT_MERKLE_CHUNK * (size_t)MPT_MERKLE_THREAD_NUM(), (size_t)jj);
        } else {
            for (j = 0; j < nchunks; j++)
                mpt_merkle_chunk(ptrs, lens, n, hashes, work, j);
        }
        /* Chunk roots side by side (slot j <= j * CHUNK: ascending order never overwrites one not yet moved). */
        if (ptrs == NULL)
            for (j = 1; j < nchunks; j++)
                memcpy(hashes + 32 * j, hashes + 32 * j * MPT_MERKLE_CHUNK, 32);
        mpt_merkle_reduce(hashes, nchunks);
    }
    """
    size_t _merkle_fold_slots "mpt_merkle_fold_slots"(size_t n, int threads) noexcept nogil
    int _merkle_team "mpt_merkle_team"(size_t n, int threads) noexcept nogil
    void _merkle_fold "mpt_merkle_fold"(const unsigned char* const* ptrs, const size_t* lens, size_t n,
                                         unsigned char* hashes, int threads) noexcept nogil


cdef inline int _threads_for(size_t n) noexcept:
    """Hashing threads for a root of n leaves: mpt.runtime.set_hash_threads() / MPT_HASH_THREADS, once the tree is large
    enough (_THREADS_MIN_LEAVES) that waking the OpenMP team pays."""
    cdef int threads
    if n < _THREADS_MIN_LEAVES:
        return 1
    threads = _merkle_team(n, hash_threads())
    if threads > 1:
        # A forked child must not enter a parallel region again (mpt.runtime._after_fork_in_child).
        mark_openmp_used()
    return threads


cdef inline void _hash_leaves(Scratch s, size_t n, unsigned char* out) noexcept nogil:
    mpt_sha256_many(LEAF_PREFIX, 1, s.ptrs, s.lens, n, out)


cdef inline void _hash_tx_leaves(Scratch s, size_t n) noexcept nogil:
    """Leaf hashes of sha256(tx) for n txs into hashes[0:n]: the tx hashes go to hashes[n:2n] first."""
    cdef size_t i
    cdef unsigned char* tx_hashes = s.hashes + HASH_LEN * n
    mpt_sha256_many(0, 0, s.ptrs, s.lens, n, tx_hashes)
    for i in range(n):
        s.ptrs[i] = tx_hashes + HASH_LEN * i
        s.lens[i] = HASH_LEN
    mpt_sha256_many(LEAF_PREFIX, 1, s.ptrs, s.lens, n, s.hashes)


cdef Scratch leaf_hashes(items, bint all_levels, bint hash_txs, size_t* n_out):
    """Take a scratch, gather the leaves of items and hash them into hashes[0:n] (the GIL released for large
    inputs). The caller gives the scratch back. all_levels: room for every level behind the leaves (2n slots).
    With hash_txs every leaf is sha256(item) (CometBFT's Txs)."""
    seq = as_sequence(items)
    cdef size_t n = len(seq), work
    # All levels: n + ceil(n/2) + ceil(n/4) + ... + 1 <= 2n + (levels - 1) slots.
    cdef size_t slots = 2 * n + 64 if all_levels else (2 * n if hash_txs else n)
    cdef Scratch s = _take_scratch(n, slots if slots > 0 else 1)
    try:
        work = s.gather(seq, n)
        if work + 64 * n > NOGIL_BYTES:
            with nogil:
                if hash_txs:
                    _hash_tx_leaves(s, n)
                else:
                    _hash_leaves(s, n, s.hashes)
        elif hash_txs:
            _hash_tx_leaves(s, n)
        else:
            _hash_leaves(s, n, s.hashes)
    except BaseException:
        give_scratch(s)
        raise
    n_out[0] = n
    return s


cdef bytes root_of(items, bint hash_txs):
    """Root of items. Plain leaves take the fused path: each chunk of leaves is hashed and folded to its subtree
    root while its hashes are still in cache, the chunks spread over the hashing threads when there are enough
    of them. Tx leaves (sha256 of sha256(tx)) hash all leaves first, then fold the same way."""
    seq = as_sequence(items)
    cdef size_t n = len(seq), work
    cdef int threads
    if hash_txs:
        return _root_of_txs(seq)
    if n == 0:
        return EMPTY_ROOT
    threads = _threads_for(n)
    cdef Scratch s = _take_scratch(n, _merkle_fold_slots(n, threads))
    try:
        work = s.gather(seq, n)
        if threads > 1 or work + 64 * n > NOGIL_BYTES:
            with nogil:
                _merkle_fold(s.ptrs, s.lens, n, s.hashes, threads)
        else:
            _merkle_fold(s.ptrs, s.lens, n, s.hashes, 1)
        return PyBytes_FromStringAndSize(<char*>s.hashes, HASH_LEN)
    finally:
        give_scratch(s)


cdef bytes _root_of_txs(seq):
    cdef size_t n
    cdef int threads
    cdef Scratch s = leaf_hashes(seq, False, True, &n)
    try:
        if n == 0:
            return EMPTY_ROOT
        threads = _threads_for(n)
        if threads > 1 or n > NOGIL_BYTES // 128:
            with nogil:
                _merkle_fold(NULL, NULL, n, s.hashes, threads)
        else:
            _merkle_fold(NULL, NULL, n, s.hashes, 1)
        return PyBytes_FromStringAndSize(<char*>s.hashes, HASH_LEN)
    finally:
        give_scratch(s)


def root(items):
    """Merkle root (CometBFT ``HashFromByteSlices``) of an iterable of bytes-like leaves.

    A list or tuple of ``bytes`` is the fast path; any other iterable is read into a list first. The empty tree
    has root ``sha256(b"")`` (:data:`EMPTY_ROOT`)."""
    return root_of(items, False)


@contextlib.contextmanager
def hashing_threads(int n):
    """Context manager: hash roots of 2048+ leaves on n OpenMP threads inside the block (1 to 256, else
    ValueError), then restore the previous setting. The setting is process-wide
    (:func:`mpt.core.runtime.set_hash_threads`): it also applies to the Keccak hashing of tries, and to every Python
    thread while the block runs, not only to the one that entered it."""
    if n < 1:
        raise ValueError(f"hashing_threads({n}): need at least 1 thread")
    old = set_hash_threads(n)
    try:
        yield n
    finally:
        set_hash_threads(old)


def header_hash(fields):
    """CometBFT block header hash: the Merkle root of its already-encoded fields, in header order.

    CometBFT's ``Header.Hash()`` is ``HashFromByteSlices`` over the 14 protobuf/amino encodings (version,
    chain_id, height, time, last_block_id, last_commit_hash, data_hash, validators_hash, next_validators_hash,
    consensus_hash, app_hash, last_results_hash, evidence_hash, proposer_address); encoding them is the
    caller's job. The same function serves any list of pre-encoded fields (validator sets, ...)."""
    return root_of(fields, False)


def data_hash(txs):
    """A block's ``data_hash``: the Merkle root over sha256(tx) of each transaction (CometBFT ``Txs.Hash()``)."""
    return root_of(txs, True)


cdef enum:
    # Subtrees the recursive walk keeps in flight: mpt_sha256_pairs hashes four pairs at a time on SHA-NI.
    RECURSIVE_WIDTH = 4


cdef void _recursive(const unsigned char* const* leaves, const size_t* counts, int m,
                     unsigned char* out) noexcept nogil:
    """CometBFT's recursive HashFromByteSlices over leaf hashes, for m <= RECURSIVE_WIDTH independent subtrees at
    once (subtree i: counts[i] leaf hashes at leaves[i]; its root into out[32 * i]): each splits at the largest
    power of two below its count, as CometBFT splits, and the roots of the halves are hashed together, up to four
    pairs per call. One subtree at a time, each inner hash would wait for the SHA rounds of the one before it.
    Same root as the level-by-level reduction; kept for the MerkleHashAlternatives benchmark (go-square's
    recursive vs iterative) and as the reference shape."""
    cdef const unsigned char* half_leaves[2 * RECURSIVE_WIDTH]
    cdef size_t half_counts[2 * RECURSIVE_WIDTH]
    cdef unsigned char pairs[2 * RECURSIVE_WIDTH * HASH_LEN]
    cdef unsigned char roots[RECURSIVE_WIDTH * HASH_LEN]
    cdef int pair_of[RECURSIVE_WIDTH]
    cdef int i, g, halves = 0, npairs = 0
    cdef size_t k
    for i in range(m):
        if counts[i] == 1:
            memcpy(out + HASH_LEN * i, leaves[i], HASH_LEN)
            pair_of[i] = -1
            continue
        k = <size_t>split_point(counts[i])
        half_leaves[halves] = leaves[i]
        half_counts[halves] = k
        half_leaves[halves + 1] = leaves[i] + HASH_LEN * k
        half_counts[halves + 1] = counts[i] - k
        pair_of[i] = npairs
        halves += 2
        npairs += 1
    if npairs == 0:
        return
    # Half h's root lands at pairs[32 * h]: pair p is halves 2p and 2p + 1, side by side.
    g = 0
    while g < halves:
        _recursive(half_leaves + g, half_counts + g, halves - g if halves - g < RECURSIVE_WIDTH else RECURSIVE_WIDTH,
                   pairs + HASH_LEN * g)
        g += RECURSIVE_WIDTH
    mpt_sha256_pairs(INNER_PREFIX, pairs, <size_t>npairs, roots)
    for i in range(m):
        if pair_of[i] >= 0:
            memcpy(out + HASH_LEN * i, roots + HASH_LEN * pair_of[i], HASH_LEN)


def root_recursive(items):
    """root(items) by CometBFT's recursive split (benchmarks and tests; root() is the fast path)."""
    cdef size_t n
    cdef Scratch s = leaf_hashes(items, False, False, &n)
    cdef unsigned char out[32]
    cdef const unsigned char* whole
    try:
        if n == 0:
            return EMPTY_ROOT
        whole = s.hashes
        _recursive(&whole, &n, 1, out)
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)
    finally:
        give_scratch(s)


cdef int leaf_hash_into(leaf, unsigned char* out) except -1:
    """sha256(0x00 || leaf) of a bytes-like leaf into out[0:32] (TypeError naming ``leaf`` otherwise)."""
    cdef Py_buffer view
    if type(leaf) is bytes:
        mpt_sha256_prefixed(LEAF_PREFIX, <const unsigned char*>PyBytes_AS_STRING(leaf),
                            <size_t>PyBytes_GET_SIZE(leaf), out)
        return 0
    get_bytes_view(leaf, &view, "leaf")
    try:
        mpt_sha256_prefixed(LEAF_PREFIX, <const unsigned char*>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return 0


def leaf_hash(leaf):
    """sha256(0x00 || leaf) of a bytes-like leaf."""
    cdef unsigned char out[32]
    leaf_hash_into(leaf, out)
    return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)


def inner_hash(left, right):
    """sha256(0x01 || left || right) of two 32-byte hashes."""
    cdef bytes joined = as_hash(left, "left hash") + as_hash(right, "right hash")
    cdef unsigned char out[32]
    mpt_sha256_pairs(INNER_PREFIX, <const unsigned char*>PyBytes_AS_STRING(joined), 1, out)
    return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)


def empty_hash():
    """Deprecated: the root of the empty tree, sha256(b""); use :data:`EMPTY_ROOT`."""
    warnings.warn("mpt.merkle.empty_hash() is deprecated; use mpt.merkle.EMPTY_ROOT", DeprecationWarning,
                  stacklevel=2)
    return EMPTY_ROOT


cdef bytes sha256_digest(data):
    cdef unsigned char out[32]
    cdef Py_buffer view
    if type(data) is bytes:
        mpt_sha256(<const unsigned char*>PyBytes_AS_STRING(data), <size_t>PyBytes_GET_SIZE(data), out)
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)
    get_bytes_view(data, &view, "tx")
    try:
        mpt_sha256(<const unsigned char*>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)


cdef bytes as_hash(value, str what):
    """value as 32 bytes, or ProofError."""
    cdef bytes b = as_bytes(value, what)
    if len(b) != HASH_LEN:
        raise ProofError(f"expected {what} size to be {HASH_LEN}, got {len(b)}")
    return b
