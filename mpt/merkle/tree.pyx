# cython: language_level=3
"""RFC 6962 / CometBFT simple Merkle trees (CometBFT ``crypto/merkle``), hashed with our C SHA-256.

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
2048 leaves on the chunks are spread over :func:`mpt.runtime.set_hash_threads` / ``MPT_HASH_THREADS`` OpenMP
threads (default 1; :func:`hashing_threads` sets it for a block).

A :class:`Proof` is CometBFT's ``merkle.Proof``: ``total``, ``index``, ``leaf_hash`` and ``aunts`` (the sibling
hashes from the leaf's sibling up to the root's child). Anything CometBFT refuses raises
:class:`mpt.errors.ProofError`.
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

import base64
import contextlib
import json
import re
import warnings
from collections.abc import Mapping

from mpt._deprecation import renamed_attributes as _renamed_attributes
from mpt.errors import ProofError
from mpt.core.jsonrpc import parse_base64, parse_data

# This module's copy of the C SHA-256 follows mpt._sha256.set_sha256_backend().
share_sha256_backend()

__all__ = [
    "EMPTY_ROOT",
    "MAX_AUNTS",
    "Proof",
    "data_hash",
    "hashing_threads",
    "header_hash",
    "inner_hash",
    "leaf_hash",
    "proof",
    "proofs",
    "root",
    "tx_proof",
    "verify_tx_proof",
]

cdef enum:
    HASH_LEN = 32
    # CometBFT's MaxAunts: a tree of 2**100 leaves; bounds the work a hostile proof can ask for.
    _MAX_AUNTS = 100
    # Below this many bytes to hash, dropping and re-taking the GIL costs more than it lets other threads do.
    _NOGIL_BYTES = 65536
    # Below this many leaves a root is hashed on the calling thread whatever the hashing-thread setting: the
    # work is not much more than waking an OpenMP team on a loaded machine.
    _THREADS_MIN_LEAVES = 2048

MAX_AUNTS = _MAX_AUNTS
"""Most aunts a proof may carry (CometBFT ``merkle.MaxAunts``)."""

cdef const unsigned char LEAF_PREFIX = 0
cdef const unsigned char INNER_PREFIX = 1
cdef int64_t _INT64_MAX = 0x7FFFFFFFFFFFFFFF

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
cdef class _Scratch:
    """Per-call working memory. ``items`` holds a strong reference to every leaf object while their pointers
    are in use (another thread may drop the caller's list while the GIL is released); ``views`` holds the
    buffer exports of leaves that are not exact bytes."""

    cdef PyObject** items
    cdef const unsigned char** ptrs
    cdef size_t* lens
    cdef Py_buffer* views
    cdef unsigned char* hashes
    cdef size_t leaf_capacity      # entries of items / ptrs / lens / views
    cdef size_t hash_capacity      # 32-byte slots of hashes
    cdef size_t held               # items[0 .. held) are referenced
    cdef size_t exported           # views[0 .. exported) are exported

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


cdef _Scratch _POOL = None


cdef _Scratch _take_scratch(size_t leaves, size_t hash_slots):
    global _POOL
    cdef _Scratch s = _POOL
    if s is None:
        s = _Scratch.__new__(_Scratch)
    else:
        _POOL = None            # ours alone until given back (another thread may run while we hash)
    s.reserve(leaves, hash_slots)
    return s


cdef void _give_scratch(_Scratch s) noexcept:
    global _POOL
    s.release()
    if _POOL is None and s.leaf_capacity <= _POOL_MAX_LEAVES:
        _POOL = s


cdef object _as_sequence(items):
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


cdef int _all_levels(unsigned char* hashes, size_t count, size_t* offsets, size_t* counts) noexcept nogil:
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


cdef inline void _hash_leaves(_Scratch s, size_t n, unsigned char* out) noexcept nogil:
    mpt_sha256_many(LEAF_PREFIX, 1, s.ptrs, s.lens, n, out)


cdef inline void _hash_tx_leaves(_Scratch s, size_t n) noexcept nogil:
    """Leaf hashes of sha256(tx) for n txs into hashes[0:n]: the tx hashes go to hashes[n:2n] first."""
    cdef size_t i
    cdef unsigned char* tx_hashes = s.hashes + HASH_LEN * n
    mpt_sha256_many(0, 0, s.ptrs, s.lens, n, tx_hashes)
    for i in range(n):
        s.ptrs[i] = tx_hashes + HASH_LEN * i
        s.lens[i] = HASH_LEN
    mpt_sha256_many(LEAF_PREFIX, 1, s.ptrs, s.lens, n, s.hashes)


cdef _Scratch _leaf_hashes(items, bint all_levels, bint hash_txs, size_t* n_out):
    """Take a scratch, gather the leaves of items and hash them into hashes[0:n] (the GIL released for large
    inputs). The caller gives the scratch back. all_levels: room for every level behind the leaves (2n slots).
    With hash_txs every leaf is sha256(item) (CometBFT's Txs)."""
    seq = _as_sequence(items)
    cdef size_t n = len(seq), work
    # All levels: n + ceil(n/2) + ceil(n/4) + ... + 1 <= 2n + (levels - 1) slots.
    cdef size_t slots = 2 * n + 64 if all_levels else (2 * n if hash_txs else n)
    cdef _Scratch s = _take_scratch(n, slots if slots > 0 else 1)
    try:
        work = s.gather(seq, n)
        if work + 64 * n > _NOGIL_BYTES:
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
        _give_scratch(s)
        raise
    n_out[0] = n
    return s


cdef bytes _root_of(items, bint hash_txs):
    """Root of items. Plain leaves take the fused path: each chunk of leaves is hashed and folded to its subtree
    root while its hashes are still in cache, the chunks spread over the hashing threads when there are enough
    of them. Tx leaves (sha256 of sha256(tx)) hash all leaves first, then fold the same way."""
    seq = _as_sequence(items)
    cdef size_t n = len(seq), work
    cdef int threads
    if hash_txs:
        return _root_of_txs(seq)
    if n == 0:
        return EMPTY_ROOT
    threads = _threads_for(n)
    cdef _Scratch s = _take_scratch(n, _merkle_fold_slots(n, threads))
    try:
        work = s.gather(seq, n)
        if threads > 1 or work + 64 * n > _NOGIL_BYTES:
            with nogil:
                _merkle_fold(s.ptrs, s.lens, n, s.hashes, threads)
        else:
            _merkle_fold(s.ptrs, s.lens, n, s.hashes, 1)
        return PyBytes_FromStringAndSize(<char*>s.hashes, HASH_LEN)
    finally:
        _give_scratch(s)


cdef bytes _root_of_txs(seq):
    cdef size_t n
    cdef int threads
    cdef _Scratch s = _leaf_hashes(seq, False, True, &n)
    try:
        if n == 0:
            return EMPTY_ROOT
        threads = _threads_for(n)
        if threads > 1 or n > _NOGIL_BYTES // 128:
            with nogil:
                _merkle_fold(NULL, NULL, n, s.hashes, threads)
        else:
            _merkle_fold(NULL, NULL, n, s.hashes, 1)
        return PyBytes_FromStringAndSize(<char*>s.hashes, HASH_LEN)
    finally:
        _give_scratch(s)


def root(items):
    """Merkle root (CometBFT ``HashFromByteSlices``) of an iterable of bytes-like leaves.

    A list or tuple of ``bytes`` is the fast path; any other iterable is read into a list first. The empty tree
    has root ``sha256(b"")`` (:data:`EMPTY_ROOT`)."""
    return _root_of(items, False)


@contextlib.contextmanager
def hashing_threads(int n):
    """Context manager: hash roots of 2048+ leaves on n OpenMP threads inside the block (1 to 256, else
    ValueError), then restore the previous setting. The setting is process-wide
    (:func:`mpt.runtime.set_hash_threads`): it also applies to the Keccak hashing of tries, and to every Python
    thread while the block runs, not only to the one that entered it."""
    from mpt.core.runtime import set_hash_threads

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
    return _root_of(fields, False)


def data_hash(txs):
    """A block's ``data_hash``: the Merkle root over sha256(tx) of each transaction (CometBFT ``Txs.Hash()``)."""
    return _root_of(txs, True)


# ---------------------------------------------------------------------------------------------------------------
# Proofs
# ---------------------------------------------------------------------------------------------------------------

cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil


cdef inline uint64_t _split_point(uint64_t total) noexcept nogil:
    """Largest power of two strictly below total (total >= 2)."""
    return (<uint64_t>1) << (63 - __builtin_clzll(total - 1))


cdef enum _RootError:
    _OK = 0
    _BAD_INDEX_TOTAL = 1
    _TOO_FEW_AUNTS = 2
    _TOO_MANY_AUNTS = 3


cdef _RootError _root_from_aunts(int64_t index, int64_t total, const unsigned char* leaf,
                                 const unsigned char* aunts, int n_aunts, unsigned char* out) noexcept nogil:
    """CometBFT computeHashFromAunts, iteratively: walk the splits from the top to learn on which side the leaf
    is at each level (the top split uses the last aunt), then hash from the leaf up."""
    cdef unsigned char sides[_MAX_AUNTS]
    cdef unsigned char pair[64]
    cdef int depth = 0, d
    cdef uint64_t i = <uint64_t>index, t = <uint64_t>total, k
    if index < 0 or total <= 0 or index >= total:
        return _BAD_INDEX_TOTAL
    while t > 1:
        if depth == n_aunts:
            return _TOO_FEW_AUNTS
        k = _split_point(t)
        if i < k:
            sides[depth] = 0          # leaf in the left part: this level's aunt is on the right
            t = k
        else:
            sides[depth] = 1
            i -= k
            t -= k
        depth += 1
    if depth != n_aunts:
        return _TOO_MANY_AUNTS
    memcpy(out, leaf, HASH_LEN)
    for d in range(depth - 1, -1, -1):
        # Level d (from the top) used aunt n_aunts - 1 - d.
        if sides[d] == 0:
            memcpy(pair, out, HASH_LEN)
            memcpy(pair + HASH_LEN, aunts + HASH_LEN * (n_aunts - 1 - d), HASH_LEN)
        else:
            memcpy(pair, aunts + HASH_LEN * (n_aunts - 1 - d), HASH_LEN)
            memcpy(pair + HASH_LEN, out, HASH_LEN)
        mpt_sha256_pairs(INNER_PREFIX, pair, 1, out)
    return _OK


cdef bytes _as_hash(value, str what):
    """value as 32 bytes, or ProofError."""
    cdef bytes b = as_bytes(value, what)
    if len(b) != HASH_LEN:
        raise ProofError(f"expected {what} size to be {HASH_LEN}, got {len(b)}")
    return b


cdef int64_t _as_int64(value, str what) except? -1:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"proof {what} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ProofError(f"negative {what.capitalize()}")
    if value > _INT64_MAX:
        raise ProofError(f"proof {what} {value} does not fit in an int64")
    return <int64_t>value


@cython.final
cdef class Proof:
    """Merkle inclusion proof of one leaf (CometBFT ``merkle.Proof``).

    ``Proof(total, index, leaf_hash, aunts)`` refuses what CometBFT's ``ValidateBasic`` refuses (negative total
    or index, a leaf hash or aunt that is not 32 bytes, more than :data:`MAX_AUNTS` aunts) with
    :class:`~mpt.errors.ProofError`; an index out of range or the wrong number of aunts for it is refused when
    the root is computed. ``aunts`` is a tuple, from the leaf's sibling up to the root's child."""

    cdef readonly int64_t total         # number of leaves of the tree
    cdef readonly int64_t index         # position of the proven leaf
    cdef readonly bytes leaf_hash       # sha256(0x00 || leaf)
    cdef readonly tuple aunts           # sibling hashes, leaf level first
    cdef bytes _aunts_joined       # the aunts back to back, for the C walk

    def __init__(self, total, index, leaf_hash, aunts=()):
        cdef int64_t t = _as_int64(total, "total")
        cdef int64_t i = _as_int64(index, "index")
        cdef bytes h = _as_hash(leaf_hash, "LeafHash")
        if isinstance(aunts, (str, bytes, bytearray, memoryview)):
            raise TypeError("aunts must be a sequence of 32-byte hashes, not a single bytes/str value")
        cdef list raw = list(aunts)
        if len(raw) > _MAX_AUNTS:
            raise ProofError(f"expected no more than {_MAX_AUNTS} aunts, got {len(raw)}")
        cdef list checked = [_as_hash(a, f"Aunts#{n}") for n, a in enumerate(raw)]
        self.total = t
        self.index = i
        self.leaf_hash = h
        self.aunts = tuple(checked)
        self._aunts_joined = b"".join(checked)

    @staticmethod
    cdef Proof _new(int64_t total, int64_t index, bytes leaf_hash, tuple aunts):
        """Trusted factory (hashes we computed): no validation."""
        cdef Proof p = Proof.__new__(Proof)
        p.total = total
        p.index = index
        p.leaf_hash = leaf_hash
        p.aunts = aunts
        p._aunts_joined = b"".join(aunts)
        return p

    def compute_root_hash(self):
        """The root this proof leads to (CometBFT ``ComputeRootHash``); ProofError if index/total are out of
        range or the number of aunts does not match the leaf's depth."""
        cdef unsigned char out[32]
        cdef _RootError err = _root_from_aunts(self.index, self.total, <const unsigned char*>PyBytes_AS_STRING(
            self.leaf_hash), <const unsigned char*>PyBytes_AS_STRING(self._aunts_joined), len(self.aunts), out)
        if err == _BAD_INDEX_TOTAL:
            raise ProofError(f"invalid index {self.index} and/or total {self.total}")
        if err == _TOO_FEW_AUNTS:
            raise ProofError(f"expected more than {len(self.aunts)} inner hashes for index {self.index} of "
                             f"{self.total}")
        if err == _TOO_MANY_AUNTS:
            raise ProofError(f"unexpected inner hashes: {len(self.aunts)} aunts for index {self.index} of "
                             f"{self.total}")
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)

    def verify(self, root_hash, leaf):
        """Check that leaf is item ``index`` of the tree whose root is root_hash (CometBFT ``Proof.Verify``).
        Returns True; raises ProofError saying what failed. (It checks a given item, like
        :func:`mpt.ics23.verify_membership`; the verifiers that answer a lookup by key, such as
        :func:`mpt.verify_proof`, return the value instead.)"""
        if root_hash is None:
            raise ProofError("invalid root hash: cannot be nil")
        root_hash = as_bytes(root_hash, "root_hash")
        want = leaf_hash(leaf)
        if want != self.leaf_hash:
            raise ProofError(f"invalid leaf hash: wanted {want.hex().upper()} got {self.leaf_hash.hex().upper()}")
        computed = self.compute_root_hash()
        if computed != bytes(root_hash):
            raise ProofError(f"invalid root hash: wanted {bytes(root_hash).hex().upper()} got "
                             f"{computed.hex().upper()}")
        return True

    def to_json(self):
        """The proof as CometBFT's RPC writes it: decimal-string total and index, base64 hashes (a dict for
        json.dumps)."""
        return {
            "total": str(self.total),
            "index": str(self.index),
            "leaf_hash": base64.b64encode(self.leaf_hash).decode("ascii"),
            "aunts": [base64.b64encode(a).decode("ascii") for a in self.aunts],
        }

    @staticmethod
    def from_json(obj):
        """Proof from CometBFT's RPC JSON (a dict, or JSON text). Anything malformed raises ProofError.

        ``total`` and ``index`` are read as CometBFT reads them: decimal strings, optional minus sign, no leading
        zero or plus sign, within int64 (a plain JSON integer is taken too)."""
        obj = _json_object(obj, "proof")
        for key in ("total", "index", "leaf_hash"):
            if key not in obj:
                raise ProofError(f"proof has no {key!r}")
        aunts = obj.get("aunts")
        if aunts is None:               # Go marshals a nil slice as null
            aunts = []
        if not isinstance(aunts, list):
            raise ProofError(f"proof aunts must be a JSON array, not {type(aunts).__name__}")
        if len(aunts) > _MAX_AUNTS:
            raise ProofError(f"expected no more than {_MAX_AUNTS} aunts, got {len(aunts)}")
        try:
            return Proof(_json_int64(obj["total"], "total"), _json_int64(obj["index"], "index"),
                         _json_base64(obj["leaf_hash"], "leaf_hash"),
                         [_json_base64(a, f"aunts[{n}]") for n, a in enumerate(aunts)])
        except TypeError as e:          # only reachable through types _json_* let through; never for JSON
            raise ProofError(str(e)) from None

    def __eq__(self, other):
        cdef Proof o
        if not isinstance(other, Proof):
            return NotImplemented
        o = <Proof>other
        return (self.total == o.total and self.index == o.index and self.leaf_hash == o.leaf_hash
                and self.aunts == o.aunts)

    def __hash__(self):
        return hash((self.total, self.index, self.leaf_hash, self.aunts))

    def __repr__(self):
        return (f"Proof(total={self.total}, index={self.index}, leaf_hash={self.leaf_hash.hex()}, "
                f"aunts=<{len(self.aunts)} hashes>)")

    def __reduce__(self):
        return (Proof, (self.total, self.index, self.leaf_hash, self.aunts))


cdef tuple _aunts_of(const unsigned char* hashes, const size_t* offsets, const size_t* counts, int levels,
                     size_t index):
    cdef list aunts = []
    cdef int level
    cdef size_t i = index, sibling
    for level in range(levels - 1):
        sibling = i ^ 1
        if sibling < counts[level]:
            aunts.append(PyBytes_FromStringAndSize(<const char*>hashes + HASH_LEN * (offsets[level] + sibling),
                                                   HASH_LEN))
        i >>= 1
    return tuple(aunts)


cdef tuple _proofs_of(items, Py_ssize_t only):
    """(root, proofs): every proof, or only the one for index `only` (>= 0)."""
    cdef size_t n
    cdef size_t offsets[66]
    cdef size_t counts[66]
    cdef int levels
    cdef _Scratch s = _leaf_hashes(items, True, False, &n)
    cdef size_t i
    cdef bytes root_hash
    try:
        if only >= 0 and <size_t>only >= n:
            raise IndexError(f"proof index {only} out of range for {n} items")
        if n == 0:
            return EMPTY_ROOT, []
        if n > _NOGIL_BYTES // 128:
            with nogil:
                levels = _all_levels(s.hashes, n, offsets, counts)
        else:
            levels = _all_levels(s.hashes, n, offsets, counts)
        root_hash = PyBytes_FromStringAndSize(<char*>s.hashes + HASH_LEN * offsets[levels - 1], HASH_LEN)
        if only >= 0:
            return root_hash, [Proof._new(n, only,
                                          PyBytes_FromStringAndSize(<char*>s.hashes + HASH_LEN * only, HASH_LEN),
                                          _aunts_of(s.hashes, offsets, counts, levels, only))]
        return root_hash, [Proof._new(n, i, PyBytes_FromStringAndSize(<char*>s.hashes + HASH_LEN * i, HASH_LEN),
                                      _aunts_of(s.hashes, offsets, counts, levels, i)) for i in range(n)]
    finally:
        _give_scratch(s)


cdef void _recursive(const unsigned char* leaves, size_t count, unsigned char* out) noexcept nogil:
    """CometBFT's recursive HashFromByteSlices over leaf hashes: split at the largest power of two below
    count, one inner hash at a time. Same root as the level-by-level reduction; kept for the
    MerkleHashAlternatives benchmark (go-square's recursive vs iterative)."""
    cdef unsigned char pair[64]
    cdef size_t k
    if count == 1:
        memcpy(out, leaves, HASH_LEN)
        return
    k = <size_t>_split_point(count)
    _recursive(leaves, k, pair)
    _recursive(leaves + HASH_LEN * k, count - k, pair + HASH_LEN)
    mpt_sha256_pairs(INNER_PREFIX, pair, 1, out)


def _root_recursive(items):
    """root(items) by CometBFT's recursive split (benchmarks and tests; root() is the fast path)."""
    cdef size_t n
    cdef _Scratch s = _leaf_hashes(items, False, False, &n)
    cdef unsigned char out[32]
    try:
        if n == 0:
            return EMPTY_ROOT
        _recursive(s.hashes, n, out)
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)
    finally:
        _give_scratch(s)


def proofs(items):
    """``(root, [Proof for each item])`` (CometBFT ``ProofsFromByteSlices``)."""
    return _proofs_of(items, -1)


def proof(items, Py_ssize_t index):
    """The Proof of ``items[index]`` (IndexError if there is no such item; negative indexes are refused)."""
    if index < 0:
        raise IndexError(f"proof index {index} out of range (negative)")
    return _proofs_of(items, index)[1][0]


def leaf_hash(leaf):
    """sha256(0x00 || leaf) of a bytes-like leaf."""
    cdef unsigned char out[32]
    cdef Py_buffer view
    if type(leaf) is bytes:
        mpt_sha256_prefixed(LEAF_PREFIX, <const unsigned char*>PyBytes_AS_STRING(leaf),
                            <size_t>PyBytes_GET_SIZE(leaf), out)
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)
    get_bytes_view(leaf, &view, "leaf")
    try:
        mpt_sha256_prefixed(LEAF_PREFIX, <const unsigned char*>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)


def inner_hash(left, right):
    """sha256(0x01 || left || right) of two 32-byte hashes."""
    cdef bytes joined = _as_hash(left, "left hash") + _as_hash(right, "right hash")
    cdef unsigned char out[32]
    mpt_sha256_pairs(INNER_PREFIX, <const unsigned char*>PyBytes_AS_STRING(joined), 1, out)
    return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)


def empty_hash():
    """Deprecated: the root of the empty tree, sha256(b""); use :data:`EMPTY_ROOT`."""
    warnings.warn("mpt.merkle.empty_hash() is deprecated; use mpt.merkle.EMPTY_ROOT", DeprecationWarning,
                  stacklevel=2)
    return EMPTY_ROOT


# ---------------------------------------------------------------------------------------------------------------
# CometBFT RPC JSON
# ---------------------------------------------------------------------------------------------------------------

# CometBFT's JSON fields are read by mpt.jsonrpc, as every other JSON number and byte field of mpt (hashes bare
# hex, bytes padded base64), except int64s: CometBFT's libs/json takes a string whose content Go's encoding/json
# parses as an int64, so JSON whitespace, an optional minus sign and digits without a leading zero: "3", "-0",
# " 3"; not "03", "+3", "3.0", "1e3" or non-ASCII digits (int() alone would take several of those). Plain JSON
# numbers are taken as well.
_DECIMAL = re.compile(r"[ \t\n\r]*(-?(?:0|[1-9][0-9]*))[ \t\n\r]*\Z")


cdef object _json_object(obj, str what):
    if isinstance(obj, (str, bytes, bytearray)):
        try:
            obj = json.loads(obj)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise ProofError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(obj, Mapping):
        raise ProofError(f"{what} must be a JSON object, not {type(obj).__name__}")
    return obj


cdef object _json_int64(value, str what):
    if isinstance(value, bool):
        raise ProofError(f"proof {what} must be a decimal string, not a boolean")
    if isinstance(value, int):
        number = value
    else:
        match = _DECIMAL.match(value) if isinstance(value, str) else None
        if match is None:
            raise ProofError(f"proof {what} must be a decimal string (digits, no leading zero or plus sign), "
                             f"got {value!r:.40}")
        digits = match.group(1)
        if len(digits.lstrip("-")) > 19:     # without leading zeros, 20 digits are beyond any int64
            raise ProofError(f"proof {what} {digits:.40}{'...' if len(digits) > 40 else ''} is out of range "
                             f"for an int64")
        number = int(digits)
    if number < 0:
        raise ProofError(f"negative {what.capitalize()}")
    if number > _INT64_MAX:
        raise ProofError(f"proof {what} {number} is out of range for an int64")
    return number


cdef bytes _json_base64(value, str what):
    return parse_base64(value, what, error=ProofError)


cdef bytes _json_hex(value, str what):
    return parse_data(value, what, prefix=False, decoded=False, error=ProofError)


cdef object _tx_proof_object(obj):
    """The TxProof object inside what a user may hold: the TxProof itself, the /tx result (with "proof" and
    "tx"), or the whole JSON-RPC response (with "result")."""
    obj = _json_object(obj, "tx proof")
    if "result" in obj and "root_hash" not in obj:
        obj = _json_object(obj["result"], "JSON-RPC result")
    if "root_hash" not in obj and "proof" in obj:
        tx_result = obj
        obj = _json_object(obj["proof"], "tx proof")
        if "tx" in tx_result and "data" in obj and tx_result["tx"] != obj["data"]:
            raise ProofError("the /tx result's tx is not the tx its proof proves")
    for key in ("root_hash", "data", "proof"):
        if key not in obj:
            raise ProofError(f"tx proof has no {key!r}")
    return obj


def verify_tx_proof(obj, data_hash=None):
    """Verify the ``proof`` object of CometBFT's ``/tx?prove=true`` (``root_hash`` hex, ``data`` base64 tx,
    ``proof``), as CometBFT's ``TxProof.Validate`` does. Takes a dict or JSON text, and also the whole ``/tx``
    result or JSON-RPC response holding it.

    The proof only ties the tx to ``root_hash``; pass ``data_hash`` (bytes or hex, the ``data_hash`` of a header
    you trust) to also check that ``root_hash`` is that block's. Returns True or raises ProofError saying what
    failed."""
    tx_proof_obj = _tx_proof_object(obj)
    root_hash = _json_hex(tx_proof_obj["root_hash"], "root_hash")
    tx = _json_base64(tx_proof_obj["data"], "data")
    p = Proof.from_json(tx_proof_obj["proof"])
    if data_hash is not None:
        if isinstance(data_hash, str):
            expected = _json_hex(data_hash, "data_hash")
        elif isinstance(data_hash, (bytes, bytearray, memoryview)):
            expected = bytes(data_hash)
        else:
            raise TypeError(f"data_hash must be bytes or a hex string, not {type(data_hash).__name__}")
        if len(expected) != 32:
            raise ProofError(f"data_hash must be a 32-byte SHA-256 hash, got {len(expected)} bytes")
        if expected != root_hash:
            raise ProofError("proof matches different data hash")
    if p.total <= 0:
        raise ProofError("proof total must be positive")
    try:
        p.verify(root_hash, _sha256_digest(tx))
    except ProofError as e:
        raise ProofError(f"proof is not internally consistent: {e}") from None
    return True


def tx_proof(txs, Py_ssize_t index):
    """CometBFT ``Txs.Proof(index)`` in RPC JSON form: ``{"root_hash", "data", "proof"}`` for transaction
    ``index`` (the leaves are sha256 of each tx)."""
    seq = _as_sequence(txs)
    if not 0 <= index < len(seq):
        raise IndexError(f"tx index {index} out of range for {len(seq)} txs")
    root_hash, (p,) = _proofs_of([_sha256_digest(tx) for tx in seq], index)
    return {
        "root_hash": root_hash.hex().upper(),
        "data": base64.b64encode(bytes(seq[index])).decode("ascii"),
        "proof": p.to_json(),
    }


cdef bytes _sha256_digest(data):
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


# ---------------------------------------------------------------------------------------------------------------
# Cosmos SDK simple Merkle map (store/internal/maps): the multistore commit hash and its ics23:simple proofs
# ---------------------------------------------------------------------------------------------------------------

from mpt.core.varint cimport MAX_VARINT_LEN64, put_uvarint

__all__ += ["map_proof", "map_root"]


cdef bytes _map_key(key):
    """A map key as bytes: str as UTF-8 (the SDK's store names are Go strings), or any bytes-like."""
    cdef bytes b
    if isinstance(key, str):
        try:
            b = (<str>key).encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"map key {key!r:.60} is not encodable as UTF-8: {e.reason}") from None
    else:
        b = as_bytes(key, "map key")
    if len(b) == 0:
        # The SDK's assertValidKey panics on an empty key: no such map exists on a chain.
        raise ValueError("map keys must not be empty")
    return b


cdef bytes _map_value(value):
    return as_bytes(value, "map value")


cdef list _map_entries(mapping):
    """[(key, value)] of the mapping as bytes, sorted by key bytes (the SDK's kv.Pairs.Sort)."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"mapping must be a Mapping of keys to values, not {type(mapping).__name__}")
    cdef dict by_key = {}
    cdef bytes k
    for key, value in mapping.items():
        k = _map_key(key)
        if k in by_key:
            # "a" and b"a" in one mapping: Go's map[string][]byte cannot hold both.
            raise ValueError(f"map key {k!r:.60} is given twice (as str and as bytes)")
        by_key[k] = _map_value(value)
    return sorted(by_key.items())


cdef bytes _map_leaf(bytes key, bytes value):
    """The SDK's KVPair(key, sha256(value)).Bytes(): uvarint(len(key)) || key || uvarint(32) || sha256(value)."""
    cdef unsigned char head[MAX_VARINT_LEN64]
    cdef Py_ssize_t n = put_uvarint(head, <uint64_t>PyBytes_GET_SIZE(key))
    return PyBytes_FromStringAndSize(<char*>head, n) + key + b"\x20" + _sha256_digest(value)


def map_root(mapping):
    """The Cosmos SDK's simple Merkle map root (``maps.HashFromMap``), the hash a multistore commits to
    (``CommitInfo.Hash()`` over store name -> store root hash): keys sorted by their bytes, one leaf
    ``uvarint(len(key)) || key || uvarint(32) || sha256(value)`` per entry, the RFC 6962 tree over the leaves.

    ``mapping`` maps str (UTF-8) or bytes-like keys to bytes-like values; empty keys are refused (ValueError) as
    the SDK refuses them. The empty map has root ``sha256(b"")`` like ``HashFromMap`` (the SDK's
    ``CommitInfo.Hash()`` of no stores is nil instead)."""
    cdef list entries = _map_entries(mapping)
    return _root_of([_map_leaf(k, v) for k, v in entries], False)


cdef list _map_path(Proof p):
    """The aunts of p as (aunt, aunt_is_right) from the leaf up (the SDK's proofs.convertInnerOps / buildPath:
    the leaf's side at every split of the recursive tree, the deepest split first)."""
    cdef list sides = []
    cdef int64_t i = p.index, t = p.total, k
    while t > 1:
        k = <int64_t>_split_point(<uint64_t>t)
        if i < k:
            sides.append(True)      # the leaf is in the left part: the aunt is the right child
            t = k
        else:
            sides.append(False)
            i -= k
            t -= k
    sides.reverse()
    return list(zip(p.aunts, sides))


cdef object _map_existence(list entries, Py_ssize_t index):
    from mpt.ics23 import ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp
    cdef bytes key = entries[index][0], value = entries[index][1]
    cdef Proof p = _proofs_of([_map_leaf(k, v) for k, v in entries], index)[1][0]
    path = []
    for aunt, aunt_is_right in _map_path(p):
        if aunt_is_right:
            path.append(InnerOp(hash=HashOp.SHA256, prefix=b"\x01", suffix=aunt))
        else:
            path.append(InnerOp(hash=HashOp.SHA256, prefix=b"\x01" + aunt, suffix=b""))
    leaf = LeafOp(hash=HashOp.SHA256, prehash_key=HashOp.NO_HASH, prehash_value=HashOp.SHA256,
                  length=LengthOp.VAR_PROTO, prefix=b"\x00")
    return ExistenceProof(key=key, value=value, leaf=leaf, path=path)


def map_proof(mapping, key):
    """The ``ics23:simple`` proof of ``key`` in :func:`map_root` ``(mapping)``, as an
    :class:`mpt.ics23.CommitmentProof`; it verifies with :data:`mpt.ics23.TENDERMINT_SPEC`.

    For a key of the map: the existence proof the Cosmos SDK puts in a query's proof ops (its
    ``ConvertExistenceProof`` of the map's simple proof; the proven value is the map's value itself, hashed by
    the leaf op). For a key not in the map: a non-existence proof made of the existence proofs of its sorted
    neighbours (the SDK's ``CreateNonMembershipProof``). ValueError for an empty map."""
    from mpt.ics23 import CommitmentProof, NonExistenceProof
    cdef list entries = _map_entries(mapping)
    cdef bytes k = _map_key(key)
    if not entries:
        raise ValueError("an empty map has no proofs")
    cdef list keys = [e[0] for e in entries]
    cdef Py_ssize_t lo = 0, hi = len(keys), mid
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(keys) and keys[lo] == k:
        return CommitmentProof(exist=_map_existence(entries, lo))
    return CommitmentProof(nonexist=NonExistenceProof(
        key=k,
        left=_map_existence(entries, lo - 1) if lo > 0 else None,
        right=_map_existence(entries, lo) if lo < len(keys) else None,
    ))
