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
  the SIMD lanes (4-way AVX2, 8-way AVX-512, chosen from CPUID; MPT_KECCAK_BACKEND or set_keccak_backend()
  force one) and optionally over several threads (MPT_HASH_THREADS or set_hash_threads(); default 1). Each
  digest goes into its node and into its parent's hole.

tests/test_batched_hashing.py checks every path against the other; docs/performance.md has the measurements.
"""
import os
import warnings

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint8_t
from libc.string cimport memcpy, memset

from cpython.ref cimport PyObject

from mpt._keccak.keccak cimport (
    MPT_KECCAK_BACKENDS,
    MPT_KECCAK_SCALAR,
    mpt_keccak256,
    mpt_keccak256_many,
    mpt_keccak_backend_lanes,
    mpt_keccak_backend_name,
    mpt_keccak_backend_supported,
    mpt_keccak_best_backend,
)
from mpt.node cimport FullNode, Node, ShortNode, ValueNode
from mpt.rlp cimport WriteBuffer

cdef enum:
    HASH_LENGTH = 32
    DEFAULT_MAX_IDLE = 16
    # A pooled hasher keeps a buffer of at most this size; a larger one (a huge value) is dropped on release.
    MAX_IDLE_BUFFER = 4 * 1024 * 1024
    # Levels with fewer encodings than this are hashed on the calling thread (each parallel batch costs a
    # wake-up of the workers).
    PARALLEL_MIN_LEVEL = 256
    # Heights a flush sorts without allocating: a 32-byte key's path has 64 nibbles, so 130 covers every
    # trie of hashed keys.
    FLUSH_INLINE_HEIGHTS = 130


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MPT_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define MPT_PREFETCH(p) ((void)(p))
    #endif
    """
    void MPT_PREFETCH(const void *p) nogil


# Large tries are bound by memory latency, not by keccak: every node, key and value is a separate object
# somewhere in the heap. Before walking a branch's children we ask for them (and what they point to) all at once,
# so that their cache misses overlap instead of queueing one by one.
cdef inline void _prefetch_children(FullNode fn) noexcept:
    # Ask for all children at once so their cache misses overlap instead of queueing one by one.
    cdef int j
    for j in range(16):
        if fn.slots[j] != NULL:
            MPT_PREFETCH(fn.slots[j])


cdef inline void _prefetch_fields(object o) noexcept:
    if type(o) is ShortNode:
        MPT_PREFETCH(<PyObject *>(<ShortNode>o).key)
        MPT_PREFETCH(<PyObject *>(<ShortNode>o).val)
    elif type(o) is FullNode:
        _prefetch_children(<FullNode>o)


cdef inline void _prefetch_value(object o) noexcept:
    cdef Node v
    if type(o) is ShortNode:
        v = (<ShortNode>o).val
        if type(v) is ValueNode:
            MPT_PREFETCH(<PyObject *>(<ValueNode>v).value)


cdef inline void _prefetch_pending_subtrees(FullNode fn) noexcept:
    # Three rounds over the children instead of one chain of misses per child: ask for all children, then
    # for what each points to (a leaf's key and value node, a branch's children), then for the value bytes
    # behind each leaf. Each round waits for about one miss while the other fifteen arrive alongside.
    cdef int j
    cdef PyObject *c
    _prefetch_children(fn)
    for j in range(16):
        c = fn.slots[j]
        if c != NULL and not (<Node>c).has_hash:
            _prefetch_fields(<object>c)
    for j in range(16):
        c = fn.slots[j]
        if c != NULL and type(<object>c) is ShortNode and not (<Node>c).has_hash:
            _prefetch_value(<object>c)


cdef inline void _store_digest(WriteBuffer buf, PendingNode *entry, const uint8_t *digest) noexcept:
    # A flushed node's hash goes into the node and into the hole its parent's encoding left for it.
    memcpy((<Node>entry.node).hash_value, digest, HASH_LENGTH)
    if entry.hole >= 0:
        memcpy(buf._buf + entry.hole, digest, HASH_LENGTH)


cdef int _threads_from_env() noexcept:
    cdef int n
    try:
        n = int(os.environ.get("MPT_HASH_THREADS", "1"))
    except ValueError:
        n = 1
    return n if n > 0 else min(os.cpu_count() or 1, 8)


cdef int _HASH_THREADS = _threads_from_env()


cdef int hash_threads() noexcept:
    """Threads the level-parallel hasher uses (MPT_HASH_THREADS: default 1, 0 = every core up to 8)."""
    return _HASH_THREADS


def get_hash_threads():
    """Threads the batched hasher spreads each level's Keccak over (1: the calling thread only)."""
    return _HASH_THREADS


def set_hash_threads(int n):
    """Set the number of hashing threads (1 = always hash on the calling thread). Returns the old value."""
    global _HASH_THREADS
    old = _HASH_THREADS
    _HASH_THREADS = n if n > 0 else 1
    return old


def keccak_backends():
    """Names of the Keccak backends this build and CPU can run, narrowest first ("scalar", "avx2", ...)."""
    cdef int b
    return [mpt_keccak_backend_name(b).decode() for b in range(MPT_KECCAK_BACKENDS) if mpt_keccak_backend_supported(b)]


cdef int _backend_number(str name) except -1:
    cdef int b
    for b in range(MPT_KECCAK_BACKENDS):
        if mpt_keccak_backend_name(b).decode() == name:
            if not mpt_keccak_backend_supported(b):
                raise ValueError(f"Keccak backend {name!r} is not supported by this CPU or build "
                                 f"(available: {', '.join(keccak_backends())})")
            return b
    raise ValueError(f"unknown Keccak backend {name!r} (known: "
                     f"{', '.join(mpt_keccak_backend_name(b).decode() for b in range(MPT_KECCAK_BACKENDS))})")


cdef int _backend_from_env() except -1:
    """MPT_KECCAK_BACKEND forces a backend; unset, the widest the CPU supports. A name this machine cannot run
    warns and falls back to the automatic choice rather than failing the import."""
    name = os.environ.get("MPT_KECCAK_BACKEND", "").strip().lower()
    if name and name != "auto":
        try:
            return _backend_number(name)
        except ValueError as e:
            warnings.warn(f"MPT_KECCAK_BACKEND ignored: {e}", RuntimeWarning, stacklevel=2)
    return mpt_keccak_best_backend()


cdef int _KECCAK_BACKEND = _backend_from_env()


cdef int keccak_backend_number() noexcept:
    """The backend number (MPT_KECCAK_*) mpt_keccak256_many should use for batches of node encodings."""
    return _KECCAK_BACKEND


def keccak_backend():
    """Name of the Keccak backend the batched hasher uses for node encodings."""
    return mpt_keccak_backend_name(_KECCAK_BACKEND).decode()


def set_keccak_backend(str name not None):
    """Use the named backend ("scalar", "avx2", "avx512", "avx2x8", or "auto" for the widest supported one)
    for batched hashing. Returns the previous name. Every backend gives the same hashes."""
    global _KECCAK_BACKEND
    old = keccak_backend()
    _KECCAK_BACKEND = mpt_keccak_best_backend() if name == "auto" else _backend_number(name)
    return old


def keccak256_many(messages, str backend=None):
    """Keccak-256 of each bytes object in messages, hashed together on `backend`'s lanes (default: the current
    backend). For tests and benchmarks of the backends; returns a list of 32-byte digests."""
    cdef list items = list(messages)
    cdef Py_ssize_t n = len(items), i
    cdef int b = _KECCAK_BACKEND if backend is None else _backend_number(backend)
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


cdef inline Py_ssize_t _list_payload_offset(const uint8_t *enc) noexcept:
    """Size of the header of the RLP list starting at enc (our own encoding, so well formed)."""
    return 1 if enc[0] <= 0xf7 else 1 + (enc[0] - 0xf7)


cdef inline Py_ssize_t _item_size(const uint8_t *item) noexcept:
    """Total size of the RLP item starting at item (our own encoding, so well formed)."""
    cdef uint8_t b = item[0]
    cdef Py_ssize_t n = 0, i, size_bytes
    if b < 0x80:
        return 1
    if b <= 0xb7:
        return 1 + (b - 0x80)
    if b <= 0xbf or b >= 0xf8:
        size_bytes = b - 0xb7 if b <= 0xbf else b - 0xf7
        for i in range(size_bytes):
            n = (n << 8) | item[1 + i]
        return 1 + size_bytes + n
    return 1 + (b - 0xc0)


cdef extern from *:
    """
    #include "keccak.h"
    /* Hash n messages split into `threads` contiguous runs, one per OpenMP thread, each run on the backend's
     * lanes.  Called with the GIL held: the worker threads touch only these arrays. */
    static void mpt_keccak_many_threads(int backend, const uint8_t *const *data, const size_t *len, size_t n,
                                        uint8_t *out, int threads)
    {
        if (threads <= 1 || n < 2) {
            mpt_keccak256_many(backend, data, len, n, out);
            return;
        }
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
                                                         int threads) noexcept


@cython.final
cdef class Hasher:
    """Owns a WriteBuffer and scratch space; get one from a HasherPool."""

    def __cinit__(self):
        self.buf = WriteBuffer.new()

    def __dealloc__(self):
        PyMem_Free(self.pending)
        PyMem_Free(self.scratch)

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
        elif type(n) is ShortNode:
            child = (<ShortNode>n).val
            if type(child) is not ValueNode and not child.has_hash:
                self.hash_node(child, False)
        return 0

    cdef bytes keccak_buffer(self, Py_ssize_t start):
        """keccak256 of the buffer from start to its end, as bytes."""
        mpt_keccak256(self.buf._buf + start, <size_t>(self.buf._length - start), self.digest)
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
        start = self.buf._length
        n.encode(self.buf)
        length = self.buf._length - start
        if length < HASH_LENGTH and not force:
            self.buf._length = start
            return False
        mpt_keccak256(self.buf._buf + start, <size_t>length, self.digest)
        if length >= HASH_LENGTH:
            n.set_hash(self.digest)
        self.buf._length = start
        return True

    cdef Py_ssize_t encode_pending(self, Node n, int *height) except -2:
        """Post-order: encode n's unhashed descendants, then n, at the end of the buffer, and record n as a
        pending entry. Returns its entry index, or -1 when n needs no entry: its encoding is under 32 bytes (it
        is embedded in its parent; nothing stays in the buffer), or n was hashed by a flush before returning.

        A recorded node gets has_hash set before its hash exists, so that its parent's encoding reserves the
        33-byte reference for it; the entry remembers where in the parent's encoding those 32 bytes are (the
        hole), to be filled once the node is hashed. height is set to 1 + the highest pending node n refers
        to (0 when none), so that a flush hashes every node after the ones it refers to.
        """
        cdef Py_ssize_t child_entry[16]
        cdef Py_ssize_t child_flushes[16]     # self.flushes when the child's entry was made
        cdef int child_height[16]
        cdef Py_ssize_t i, e = -1, e_flushes = 0, start, length, pos
        cdef int h = 0, eh = 0
        cdef PyObject *c
        cdef FullNode fn
        cdef Node val
        cdef PendingNode *entry
        cdef const uint8_t *enc
        if type(n) is FullNode:
            fn = <FullNode>n
            _prefetch_pending_subtrees(fn)
            for i in range(16):
                child_entry[i] = -1
                c = fn.slots[i]
                if c != NULL and not (<Node>c).has_hash:
                    child_entry[i] = self.encode_pending(<Node>c, &child_height[i])
                    child_flushes[i] = self.flushes
        elif type(n) is ShortNode:
            val = (<ShortNode>n).val
            if type(val) is not ValueNode and not val.has_hash:
                e = self.encode_pending(val, &eh)
                e_flushes = self.flushes
        start = self.buf._length
        n.encode(self.buf)
        length = self.buf._length - start
        if length < HASH_LENGTH:
            # Embedded in its parent; such a small node cannot refer to a hashed child, so nothing below it
            # was recorded either.
            self.buf._length = start
            return -1
        # A child entry made before the last flush is gone: that child was hashed, and n's encoding above
        # already holds its real hash.
        enc = self.buf._buf + start
        if type(n) is FullNode:
            # Walk the 16 child items of the encoding to find each pending child's 0xa0 reference.
            pos = _list_payload_offset(enc)
            for i in range(16):
                if child_entry[i] >= 0 and child_flushes[i] == self.flushes:
                    self.pending[child_entry[i]].hole = start + pos + 1
                    if child_height[i] + 1 > h:
                        h = child_height[i] + 1
                pos += _item_size(enc + pos)
        elif e >= 0 and e_flushes == self.flushes:
            # An extension's child reference is the last item: 0xa0 and the 32 bytes that end the encoding.
            self.pending[e].hole = start + length - HASH_LENGTH
            h = eh + 1
        if self.pending == NULL:
            self.pending = <PendingNode *>PyMem_Malloc(FLUSH_AT * sizeof(PendingNode))
            if self.pending == NULL:
                raise MemoryError()
        entry = &self.pending[self.n_pending]
        entry.node = <PyObject *>n
        entry.offset = start
        entry.length = length
        entry.hole = -1
        entry.height = h
        n.has_hash = True
        height[0] = h
        self.n_pending += 1
        if self.n_pending == FLUSH_AT:
            self.flush_pending()
            return -1
        return self.n_pending - 1

    cdef int flush_pending(self) except -1:
        """Hash every pending entry, level by level from height 0, each level's encodings together on the SIMD
        lanes (and over the hashing threads), writing each digest into its node and into its parent's hole.
        Then the buffer holds nothing pending: it starts over empty."""
        cdef Py_ssize_t n = self.n_pending, i, j, k, level_start
        cdef Py_ssize_t by_height[FLUSH_AT]    # entry indices sorted by height
        cdef Py_ssize_t level_end_inline[FLUSH_INLINE_HEIGHTS]
        cdef Py_ssize_t *level_end             # one past the last index of each height in by_height
        cdef PendingNode *entry
        cdef int top = 0, h
        if n == 0:
            return 0
        if self.scratch == NULL:
            self.scratch = <FlushScratch *>PyMem_Malloc(sizeof(FlushScratch))
            if self.scratch == NULL:
                raise MemoryError()
        for i in range(n):
            if self.pending[i].height > top:
                top = self.pending[i].height
        if top + 2 <= FLUSH_INLINE_HEIGHTS:
            level_end = level_end_inline
            memset(level_end, 0, (top + 2) * sizeof(Py_ssize_t))
        else:
            # Only a trie deeper than any 32-byte key makes (long or prefix keys) gets here.
            level_end = <Py_ssize_t *>PyMem_Calloc(top + 2, sizeof(Py_ssize_t))
            if level_end == NULL:
                raise MemoryError()
        try:
            # Counting sort by height (stable: each level keeps the encoding order, nearby in the buffer).
            for i in range(n):
                level_end[self.pending[i].height + 1] += 1
            for h in range(top + 1):
                level_end[h + 1] += level_end[h]
            for i in range(n):
                h = self.pending[i].height
                by_height[level_end[h]] = i
                level_end[h] += 1
            level_start = 0
            for h in range(top + 1):
                k = 0
                if self.known == NULL:
                    for i in range(level_start, level_end[h]):
                        entry = &self.pending[by_height[i]]
                        self.scratch.messages[k] = self.buf._buf + entry.offset
                        self.scratch.lengths[k] = <size_t>entry.length
                        k += 1
                else:
                    # Only the encodings nobody has hashed yet go to Keccak (entries maps them back).
                    for i in range(level_start, level_end[h]):
                        entry = &self.pending[by_height[i]]
                        j = known_find(self.known, self.buf._buf + entry.offset, <size_t>entry.length)
                        if j >= 0:
                            _store_digest(self.buf, entry, self.known.digests + j * HASH_LENGTH)
                            continue
                        self.scratch.messages[k] = self.buf._buf + entry.offset
                        self.scratch.lengths[k] = <size_t>entry.length
                        self.scratch.entries[k] = by_height[i]
                        k += 1
                _keccak_many_threads(_KECCAK_BACKEND, self.scratch.messages, self.scratch.lengths, <size_t>k,
                                     self.scratch.digests, self.threads if k >= PARALLEL_MIN_LEVEL else 1)
                for i in range(k):
                    _store_digest(self.buf, &self.pending[by_height[level_start + i]
                                                          if self.known == NULL else self.scratch.entries[i]],
                                  self.scratch.digests + i * HASH_LENGTH)
                level_start = level_end[h]
        finally:
            if level_end != level_end_inline:
                PyMem_Free(level_end)
        self.n_pending = 0
        self.flushes += 1
        self.buf._length = 0
        return 0

    cdef int hash_levels(self, Node root, int threads) except -1:
        """Hash every unhashed node under root in batches.

        One post-order pass encodes the dirty nodes, leaving a 32-byte hole in each parent for every child
        still to be hashed. Every FLUSH_AT encodings (and at the end) the pending ones are hashed level by
        level from the leaves up, each level's encodings together on the SIMD backend's lanes (and over
        `threads` threads); each digest goes into its node and into its parent's hole. The buffer and the
        entries are therefore bounded (and stay in cache), and each node gets its hash soon after it was read.

        The GIL stays held throughout, also while the worker threads hash: until its flush a recorded node
        carries has_hash without its hash, which no other Python thread may see.
        """
        cdef int height = 0
        cdef Py_ssize_t i
        self.buf.reset()
        self.n_pending = 0
        self.threads = threads
        if root.has_hash or type(root) is ValueNode:
            return 0
        try:
            self.encode_pending(root, &height)
            self.flush_pending()
        except BaseException:
            # Failed part-way (out of memory): no node may keep a hash that was never computed.
            for i in range(self.n_pending):
                (<Node>self.pending[i].node).has_hash = False
            raise
        finally:
            self.n_pending = 0
            self.buf.reset()
        return 0

    cdef bytes root_hash(self, Node root):
        """The root hash of the tree under root, as bytes."""
        cdef int threads = _HASH_THREADS
        # With SIMD lanes the batched path wins at every size (20 accounts: 9.7 against 15.9 us on AVX2); on
        # one lane and one thread the two paths cost the same, and the recursive one needs no scratch.
        if threads > 1 or mpt_keccak_backend_lanes(_KECCAK_BACKEND) > 1:
            self.hash_levels(root, threads)
        self.hash_node(root, True)
        return PyBytes_FromStringAndSize(<char *>self.digest, HASH_LENGTH)

    def hash_by_levels(self, Node node not None, int threads=0):
        """Hash node as a root through the batched path whatever its size (for tests and benchmarks)."""
        self.buf.reset()
        self.hash_levels(node, threads if threads > 0 else _HASH_THREADS)
        return self.root_hash(node)

    def hash(self, Node node not None):
        """Hash node as a root (always hashed); caches hashes in the subtree."""
        self.buf.reset()
        return self.root_hash(node)

    @property
    def buffer_capacity(self):
        """Current capacity of the hasher's buffer (kept while pooled, up to 4 MiB)."""
        return self.buf._size


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
        if h.buf._size > MAX_IDLE_BUFFER:
            # One huge value or trie must not pin its scratch memory for the life of the process.
            h.buf = WriteBuffer.new()
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
    cdef Hasher h = _DEFAULT_POOL.acquire()
    try:
        h.hash_children(node)
        node.encode(h.buf)
        return h.buf.to_bytes()
    finally:
        _DEFAULT_POOL.release(h)
