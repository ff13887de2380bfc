# cython: language_level=3
"""Allocation counting (the analogue of Go's ``-benchmem``) and the Keccak floor of the benchmarks.

**Allocation counter.** :func:`start` wraps the allocators of Python's ``PyMem`` and ``PyObject`` domains
(``PyMem_GetAllocator`` / ``PyMem_SetAllocator``); every ``malloc``, ``calloc`` and ``realloc`` through them is
counted, with the bytes requested, until :func:`stop` puts the previous allocators back. Go's B/op and allocs/op
count allocations only, so frees are not counted; a ``realloc`` counts as one allocation of its new size (Go
grows a slice by allocating a new one). The wrappers only count and delegate: a block allocated before
:func:`start` may be freed while counting and the other way round, since the same underlying allocator serves
both. Both domains may only be used with the GIL held, so the counters need no atomics; they include every
Python thread's allocations while counting is on. The ``PyMem_Raw`` domain (usable without the GIL) is left
alone.

Use the context manager, which restores the allocators even when the block raises::

    with count_allocs() as c:
        trie.hash()
    print(c.bytes, c.allocs)

**Keccak floor.** :func:`keccak_floor` hashes a list of byte strings with our C Keccak in a C loop without the
GIL, the cost Keccak alone sets for a workload (``python -m mpt.bench`` reports ``hash() time / floor``).

**Walk floor.** :func:`walk_floor` reads what the hashing pass reads of a fresh trie, in its order and with its
prefetching, and nothing else: the cost of reaching the nodes, keys and values before any encoding or hashing
(scripts/hash_layout.py prints it beside the hash and the Keccak).

**Codec call floors.** :func:`call_floor`, :func:`decode_floor` and :class:`FloorNode` are what an IAVL node
codec called from Python pays before it encodes or decodes anything: the call, and the objects it must return
(scripts/peer_floors.py times them beside ``decode_node`` and ``to_bytes``).

"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport uint8_t, uint64_t

from libc.string cimport memcpy

from cpython.ref cimport PyObject
from mpt.ethereum.node cimport (Node, borrowed_bytes_data, borrowed_bytes_size, full_node_slots, gather_children,
                                is_full_node, is_short_node, node_has_hash, prefetch_below, short_node_key,
                                short_node_leaf_value, short_node_val)
from mpt.core._keccak.keccak cimport (
    MPT_KECCAK_BACKENDS,
    MPT_KECCAK_SCALAR,
    mpt_keccak256,
    mpt_keccak256_many,
    mpt_keccak_backend_name,
    mpt_keccak_backend_supported,
)

__all__ = ["start", "stop", "current", "active", "count_allocs", "measure", "keccak_floor", "walk_floor"]


cdef extern from "Python.h":
    ctypedef enum PyMemAllocatorDomain:
        PYMEM_DOMAIN_RAW
        PYMEM_DOMAIN_MEM
        PYMEM_DOMAIN_OBJ

    ctypedef struct PyMemAllocatorEx:
        void *ctx
        void *(*malloc)(void *ctx, size_t size) noexcept nogil
        void *(*calloc)(void *ctx, size_t nelem, size_t elsize) noexcept nogil
        void *(*realloc)(void *ctx, void *ptr, size_t new_size) noexcept nogil
        void (*free)(void *ctx, void *ptr) noexcept nogil

    void PyMem_GetAllocator(PyMemAllocatorDomain domain, PyMemAllocatorEx *allocator)
    void PyMem_SetAllocator(PyMemAllocatorDomain domain, PyMemAllocatorEx *allocator)


# The allocators we replaced: each wrapper gets a pointer to its domain's original as its ctx. They stay valid
# for the life of the process (an extension module is never unloaded), so a wrapper that somebody else saved
# and calls later still reaches a working allocator.
cdef PyMemAllocatorEx _orig_mem
cdef PyMemAllocatorEx _orig_obj
cdef PyMemAllocatorEx _hook_mem
cdef PyMemAllocatorEx _hook_obj

cdef unsigned long long _bytes = 0      # bytes requested since start()
cdef unsigned long long _allocs = 0     # malloc + calloc + realloc calls since start()
cdef bint _active = False
cdef bint _stranded = False             # stop() found a foreign hook over ours and left ours beneath it


cdef void *_malloc(void *ctx, size_t size) noexcept nogil:
    global _bytes, _allocs
    cdef PyMemAllocatorEx *orig = <PyMemAllocatorEx *>ctx
    _allocs += 1
    _bytes += size
    return orig.malloc(orig.ctx, size)


cdef void *_calloc(void *ctx, size_t nelem, size_t elsize) noexcept nogil:
    global _bytes, _allocs
    cdef PyMemAllocatorEx *orig = <PyMemAllocatorEx *>ctx
    _allocs += 1
    _bytes += nelem * elsize
    return orig.calloc(orig.ctx, nelem, elsize)


cdef void *_realloc(void *ctx, void *ptr, size_t new_size) noexcept nogil:
    global _bytes, _allocs
    cdef PyMemAllocatorEx *orig = <PyMemAllocatorEx *>ctx
    _allocs += 1
    _bytes += new_size
    return orig.realloc(orig.ctx, ptr, new_size)


cdef void _free(void *ctx, void *ptr) noexcept nogil:
    cdef PyMemAllocatorEx *orig = <PyMemAllocatorEx *>ctx
    orig.free(orig.ctx, ptr)


cdef inline void _make_hook(PyMemAllocatorEx *hook, PyMemAllocatorEx *orig) noexcept:
    hook.ctx = <void *>orig
    hook.malloc = _malloc
    hook.calloc = _calloc
    hook.realloc = _realloc
    hook.free = _free


cdef bint _is_ours(PyMemAllocatorDomain domain) noexcept:
    """Whether the domain's allocator right now is our counting wrapper."""
    cdef PyMemAllocatorEx cur
    PyMem_GetAllocator(domain, &cur)
    return cur.malloc == _malloc


def start():
    """Install the counting allocators and zero the counters. Raises RuntimeError if already counting."""
    global _bytes, _allocs, _active, _stranded
    cdef bint mem_ours, obj_ours
    if _active:
        raise RuntimeError("allocation counting is already on (nested start())")
    mem_ours = _is_ours(PYMEM_DOMAIN_MEM)
    obj_ours = _is_ours(PYMEM_DOMAIN_OBJ)
    if _stranded and not (mem_ours and obj_ours):
        # Our wrappers sit beneath a foreign hook that still delegates to them: saving that hook as "the
        # original" would make the chain call itself forever.
        raise RuntimeError("the allocator hook installed over the counter is still in place")
    _stranded = False
    # A domain whose allocator is already our wrapper (left by a stop() that found a foreign hook, since
    # removed) keeps the originals saved back then; reading it again would save the wrapper as its own original.
    if not mem_ours:
        PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &_orig_mem)
        _make_hook(&_hook_mem, &_orig_mem)
    if not obj_ours:
        PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &_orig_obj)
        _make_hook(&_hook_obj, &_orig_obj)
    # Nothing below can raise, and the GIL is held throughout: no allocation sneaks in half-installed.
    _bytes = 0
    _allocs = 0
    if not mem_ours:
        PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &_hook_mem)
    if not obj_ours:
        PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &_hook_obj)
    _active = True


def stop():
    """Put the previous allocators back; returns ``(bytes, allocs)`` counted since :func:`start`.

    If something else (tracemalloc, say) installed its own allocator over ours meanwhile, ours is left in place
    underneath it (it only counts and delegates, so that is harmless) and RuntimeError is raised: restoring
    would cut the other hook out. start() then refuses until that hook is gone again.
    """
    global _active, _stranded
    cdef unsigned long long nbytes = _bytes, nallocs = _allocs
    if not _active:
        raise RuntimeError("allocation counting is not on (stop() without start())")
    _active = False
    if not (_is_ours(PYMEM_DOMAIN_MEM) and _is_ours(PYMEM_DOMAIN_OBJ)):
        _stranded = True
        raise RuntimeError("another allocator hook was installed over the counter; left it in place")
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &_orig_obj)
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &_orig_mem)
    return int(nbytes), int(nallocs)


def current():
    """``(bytes, allocs)`` counted so far (while counting; the totals of the last run after stop())."""
    return int(_bytes), int(_allocs)


def active():
    """Whether the counting allocators are installed."""
    return bool(_active)


class count_allocs:
    """Context manager: counts allocations inside the block into ``.bytes`` and ``.allocs``.

    The allocators are restored however the block ends. Not reentrant (nesting raises RuntimeError).
    """

    __slots__ = ("bytes", "allocs")

    def __init__(self):
        self.bytes = 0
        self.allocs = 0

    def __enter__(self):
        start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.bytes, self.allocs = stop()
        return False


def measure(func, *args, **kwargs):
    """Call ``func(*args, **kwargs)`` while counting; returns ``(result, bytes, allocs)``."""
    start()
    try:
        result = func(*args, **kwargs)
    finally:
        nbytes, nallocs = stop()
    return result, nbytes, nallocs


cdef int _backend_number(str name) except -1:
    cdef int b
    for b in range(MPT_KECCAK_BACKENDS):
        if mpt_keccak_backend_name(b).decode() == name:
            if not mpt_keccak_backend_supported(b):
                raise ValueError("Keccak backend %r is not supported here" % name)
            return b
    raise ValueError("unknown Keccak backend %r" % name)


def keccak_floor(blobs, Py_ssize_t repeat=1, str backend="scalar"):
    """Keccak-256 of every bytes object in ``blobs``, ``repeat`` times over, in C without the GIL.

    Time this call to get what Keccak alone costs for those inputs: no Python call per blob, no result
    objects. ``backend`` "scalar" hashes one blob after another (the single-lane floor); another backend name
    ("avx2", ...) hashes them all in one batch on its SIMD lanes, as the batched hasher does. Returns the
    digest of the last blob (b"" for no blobs), so the work is observable.
    """
    cdef tuple items = tuple(blobs)     # our own references: the loop below runs without the GIL
    cdef Py_ssize_t n = len(items), i, r
    cdef const uint8_t **ptrs
    cdef size_t *lens
    cdef uint8_t *digests
    cdef uint8_t out[32]
    cdef object blob
    cdef int b = _backend_number(backend)
    if repeat < 0:
        raise ValueError("repeat must be >= 0")
    for blob in items:
        if type(blob) is not bytes:
            raise TypeError("keccak_floor takes bytes objects, not %s" % type(blob).__name__)
    if n == 0:
        return b""
    # Raw domain: allocating these may run without counting and never touches the GIL-protected domains.
    ptrs = <const uint8_t **>PyMem_RawMalloc(n * sizeof(uint8_t *))
    lens = <size_t *>PyMem_RawMalloc(n * sizeof(size_t))
    digests = <uint8_t *>PyMem_RawMalloc(n * 32)
    if ptrs == NULL or lens == NULL or digests == NULL:
        PyMem_RawFree(ptrs)
        PyMem_RawFree(lens)
        PyMem_RawFree(digests)
        raise MemoryError()
    for i in range(n):
        ptrs[i] = <const uint8_t *>PyBytes_AS_STRING(items[i])
        lens[i] = <size_t>PyBytes_GET_SIZE(items[i])
    try:
        with nogil:
            for r in range(repeat):
                if b == MPT_KECCAK_SCALAR:
                    for i in range(n):
                        mpt_keccak256(ptrs[i], lens[i], out)
                else:
                    mpt_keccak256_many(b, ptrs, lens, <size_t>n, digests)
                    memcpy(out, digests + (n - 1) * 32, 32)
    finally:
        PyMem_RawFree(ptrs)
        PyMem_RawFree(lens)
        PyMem_RawFree(digests)
    if repeat == 0:
        return b""
    return PyBytes_FromStringAndSize(<char *>out, 32)


cdef inline uint64_t _touch(PyObject *b) noexcept nogil:
    # The first, middle and last byte of a bytes object: each of the (up to three) cache lines an encoder reads.
    cdef Py_ssize_t n = borrowed_bytes_size(b)
    cdef const uint8_t *d = borrowed_bytes_data(b)
    return (<uint64_t>d[0] + d[n >> 1] + d[n - 1]) if n > 0 else 0


cdef uint64_t _walk(PyObject *n) noexcept nogil:
    """The hashing pass's visit (hasher.pyx _pass_visit) without encoding: children gathered and prefetched, the
    same two further prefetch rounds, then each child walked; a leaf's key and value bytes read. Hashed nodes are
    skipped, as the pass skips them."""
    cdef PyObject *kids[16]
    cdef PyObject **slots
    cdef PyObject *c
    cdef PyObject *v
    cdef int i, count = 0
    cdef uint64_t acc = 0
    if is_full_node(n):
        slots = full_node_slots(n)
        count = gather_children(n, kids, NULL)
        prefetch_below(kids, count, False)
        for i in range(count):
            if not node_has_hash(kids[i]):
                acc += _walk(kids[i])
        if slots[16] != NULL:
            acc += 1
    elif is_short_node(n):
        acc += _touch(short_node_key(n))
        v = short_node_leaf_value(n)
        if v != NULL:
            acc += _touch(v)
        else:
            c = short_node_val(n)
            if not node_has_hash(c):
                acc += _walk(c)
    return acc


def walk_floor(root):
    """Walk the nodes under ``root`` (a trie's ``root_node``) as the hashing pass does, reading each leaf's key
    and value, without encoding or hashing: time it on a fresh trie for the cost of reaching the nodes alone.
    Returns a checksum of the bytes read, so the work is observable."""
    if not isinstance(root, Node):
        raise TypeError("walk_floor takes a trie node, not %s" % type(root).__name__)
    # With the GIL held throughout: no other thread can change or free a node of the trie meanwhile (the hashing
    # pass has its trie's busy state for that; a bare node has none).
    return _walk(<PyObject *>root)


@cython.final
cdef class FloorNode:
    """A node as a decoder must return it at least (a key, a value and a version), for the codec floors."""
    cdef readonly bytes key
    cdef readonly bytes value
    cdef readonly long long version
    cdef Py_ssize_t encoded_size

    def __init__(self, bytes key not None, bytes value not None, long long version, Py_ssize_t encoded_size):
        if encoded_size < 0:
            raise ValueError("encoded_size must be >= 0")
        self.key = key
        self.value = value
        self.version = version
        self.encoded_size = encoded_size

    def call(self, fmt):
        """The floor of any method with one argument (``leaf.to_bytes(fmt)``'s call shape): returns None."""
        return None

    def to_bytes(self, fmt):
        """The floor of an encoder: the method call and a new bytes object of the encoding's size, nothing
        written into it."""
        return PyBytes_FromStringAndSize(NULL, self.encoded_size)


def call_floor(data, fmt, node_key):
    """The floor of any function called as ``decode_node(data, fmt, node_key)``: returns None."""
    return None


def decode_floor(bytes data not None, fmt, node_key):
    """The floor of a decoder returning a node with its key and value as bytes objects: the call, a FloorNode
    (CPython's allocator) and a 3-byte key and a 5-byte value copied from data (the bench leaf's b"key" and
    b"value"; at these sizes the length does not change the cost), nothing parsed."""
    cdef FloorNode node = FloorNode.__new__(FloorNode)
    cdef const char *p = PyBytes_AS_STRING(data)
    if PyBytes_GET_SIZE(data) < 8:
        raise ValueError("decode_floor needs at least 8 bytes of data")
    node.key = PyBytes_FromStringAndSize(p, 3)
    node.value = PyBytes_FromStringAndSize(p + PyBytes_GET_SIZE(data) - 5, 5)
    node.version = 0
    return node
