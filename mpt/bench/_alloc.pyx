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

**Flat pass.** :class:`FlatTrie` holds a trie's nodes in flat arrays, level by level, and hashes them the way a
node arena would let the hashing pass: no node objects, each level's encodings written in one run and keccaked
together. How its leaves keep their keys and values is chosen, so that scripts/arena_estimate.py can tell what
each layout would cost against Keccak alone.
"""
cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from libc.string cimport memcpy

from cpython.ref cimport PyObject
from mpt.ethereum.node cimport (Node, borrowed_bytes_data, borrowed_bytes_size, full_node_slots, gather_children,
                                is_full_node, is_short_node, node_has_hash, prefetch_below, short_node_key,
                                short_node_leaf_value, short_node_val)
from mpt.core.prefetch cimport prefetch_line, prefetch_object
from mpt.core.rlp cimport MAX_HEADER_SIZE, put_header, put_string, string_size
from mpt.ethereum.encoding cimport compact_size, write_compact
from mpt.core._keccak.keccak cimport (
    MPT_KECCAK_BACKENDS,
    MPT_KECCAK_SCALAR,
    mpt_keccak256,
    mpt_keccak256_many,
    mpt_keccak_backend_name,
    mpt_keccak_backend_supported,
)

__all__ = ["start", "stop", "current", "active", "count_allocs", "measure", "keccak_floor", "walk_floor",
           "FlatTrie"]


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


# ---------------------------------------------------------------------------------------------------------------
# The flat pass
# ---------------------------------------------------------------------------------------------------------------

cdef extern from *:
    int __builtin_ctz(unsigned int x) noexcept nogil
    int __builtin_clz(unsigned int x) noexcept nogil


_LEVEL_ORDERS = ("given", "walk", "scan")     # FlatTrie.hash(levels=...), in the order hash() numbers them


cdef enum FlatKind:
    FLAT_LEAF_INLINE = 0        # compact key and value in the blob
    FLAT_LEAF_COMPACT = 1       # compact key and value as bytes objects
    FLAT_LEAF_NIBBLES = 2       # key as nibbles (ShortNode's form: packed while encoding), value as a bytes object
    FLAT_BRANCH = 3
    FLAT_EXTENSION = 4          # compact key in the blob, one child


cdef enum:
    # Leaves the flat pass asks for ahead of the one it encodes (its order is known), so that the misses of the
    # next leaves overlap the work on this one. 8 and 32 measured the same (performance_notes.md, session 14).
    FLAT_PREFETCH_AHEAD = 8


cdef struct FlatNode:
    int kind
    Py_ssize_t key_at           # blob offset, or the index of the key and value objects
    Py_ssize_t key_size
    Py_ssize_t value_at
    Py_ssize_t value_size
    Py_ssize_t child            # an extension's child; a branch's first of 16 entries in children (-1: empty)


cdef inline void _prefetch_flat_leaf(const FlatNode *f, const uint8_t *blob, PyObject **objects) noexcept nogil:
    if f.kind == FLAT_LEAF_INLINE:
        prefetch_line(blob + f.key_at)
        prefetch_line(blob + f.value_at)
        prefetch_line(blob + f.value_at + f.value_size - 1)
    elif f.kind == FLAT_LEAF_COMPACT or f.kind == FLAT_LEAF_NIBBLES:
        prefetch_object(objects[f.key_at])
        prefetch_object(objects[f.key_at + 1])


cdef Py_ssize_t _child_index(object child, Py_ssize_t parent, bint may_be_empty, uint8_t *has_parent) except -2:
    cdef Py_ssize_t c = child
    if c == -1 and may_be_empty:
        return c
    if not 0 <= c < parent:
        raise ValueError("node %d: child %r is not a node listed before it" % (parent, child))
    # A tree: the walk of hash(levels="walk") visits each node once, in arrays of one entry per node.
    if has_parent[c]:
        raise ValueError("node %d: child %d has another parent already" % (parent, c))
    has_parent[c] = 1
    return c


@cython.final
cdef class FlatTrie:
    """A trie's nodes in flat arrays, for the hashing pass a node arena would allow (scripts/arena_estimate.py).

    ``nodes`` lists every node, children before their parents and each height level together (leaves first, the
    root last), as ``("leaf", compact_key, value)``, ``("branch", [16 child indices or -1])`` or
    ``("extension", compact_key, child_index)``; ``level_ends[h]`` is one past the last node of height h.
    ``leaves`` says how a leaf keeps its key and value: ``"inline"``, copied into one contiguous blob;
    ``"compact"``, the two bytes objects given (the key in compact form), referenced; ``"nibbles"``, likewise,
    with the key given as ShortNode keeps it (one nibble per byte and the terminator), packed while encoding.
    ``blob_order`` lists the inline leaves (node indices) in the order their keys and values follow each other
    in the blob; by default the node order, which is the order the pass reads them in. :meth:`hash` encodes
    each level into one buffer and keccaks it in one call on the backend's lanes, the children's digests copied
    into their parents' encodings: no node objects, no pending holes; the leaf FLAT_PREFETCH_AHEAD places on is
    asked for while one is encoded. Nodes embedded in their parent and branches with a value are not supported
    (a trie of 32-byte keys and account values has neither). The nodes make a tree (each one child of at most one
    node) whose root is the last node; ``hash(levels="walk")`` and ``hash(levels="scan")`` find the levels
    themselves instead of taking ``level_ends``' order."""
    cdef FlatNode *nodes
    cdef Py_ssize_t n
    cdef Py_ssize_t *children
    cdef Py_ssize_t *level_ends
    cdef int levels
    cdef bytes blob
    cdef const uint8_t *blob_data
    cdef list objects           # the leaves' key and value objects ("compact", "nibbles"), two per leaf
    cdef PyObject **object_ptrs # the same, borrowed: objects holds the references
    cdef uint8_t *buf
    cdef uint8_t *digests
    cdef const uint8_t **messages
    cdef size_t *lengths
    # The passes that find the levels (hash(levels=...)): the node indices in the order they encode them, by height, and
    # scratch (the walk's stack, each node's height, the digests of one level before they go to their nodes).
    cdef Py_ssize_t *order
    cdef Py_ssize_t *order_ends
    cdef Py_ssize_t *stack
    cdef int *heights
    cdef uint8_t *leaf_tag          # 1 for a leaf: what a child reference into an arena would say of its node
    cdef uint32_t *child_masks      # per branch: bit i set for a child in slot i, bit 16 + i if that child is a leaf
    cdef int levels_collected
    cdef uint8_t *level_digests
    cdef bint busy              # a hash() running: its buffers are in use
    # Cython starts every C field at NULL / 0: __init__ (allocated once), hash() and __dealloc__ rely on it.

    def __init__(self, nodes, level_ends, str leaves="inline", blob_order=None):
        cdef Py_ssize_t i, j, branches = 0, buf_size = 0
        cdef FlatNode *f
        cdef bytearray blob = bytearray()
        cdef bytearray parents
        cdef uint8_t *has_parent
        if self.nodes != NULL:
            raise RuntimeError("a FlatTrie is initialised once")
        if leaves not in ("inline", "compact", "nibbles"):
            raise ValueError("leaves must be 'inline', 'compact' or 'nibbles', not %r" % (leaves,))
        nodes = list(nodes)
        self.n = len(nodes)
        self.levels = len(level_ends)
        if self.n == 0 or self.levels == 0 or level_ends[self.levels - 1] != self.n:
            raise ValueError("level_ends must end at the number of nodes")
        self.objects = []
        self.nodes = <FlatNode *>PyMem_RawMalloc(self.n * sizeof(FlatNode))
        self.level_ends = <Py_ssize_t *>PyMem_RawMalloc(self.levels * sizeof(Py_ssize_t))
        for node in nodes:
            branches += node[0] == "branch"
        self.children = <Py_ssize_t *>PyMem_RawMalloc((16 * branches + 1) * sizeof(Py_ssize_t))
        self.digests = <uint8_t *>PyMem_RawMalloc(32 * self.n)
        self.messages = <const uint8_t **>PyMem_RawMalloc(self.n * sizeof(uint8_t *))
        self.lengths = <size_t *>PyMem_RawMalloc(self.n * sizeof(size_t))
        self.order = <Py_ssize_t *>PyMem_RawMalloc(self.n * sizeof(Py_ssize_t))
        self.order_ends = <Py_ssize_t *>PyMem_RawMalloc((self.n + 1) * sizeof(Py_ssize_t))
        self.stack = <Py_ssize_t *>PyMem_RawMalloc(self.n * sizeof(Py_ssize_t))
        self.heights = <int *>PyMem_RawMalloc(self.n * sizeof(int))
        self.level_digests = <uint8_t *>PyMem_RawMalloc(32 * self.n)
        self.leaf_tag = <uint8_t *>PyMem_RawMalloc(self.n)
        self.child_masks = <uint32_t *>PyMem_RawMalloc((branches + 1) * sizeof(uint32_t))
        if not (self.nodes and self.level_ends and self.children and self.digests and self.messages and
                self.lengths and self.order and self.order_ends and self.stack and self.heights
                and self.level_digests and self.leaf_tag and self.child_masks):
            raise MemoryError()
        for i in range(self.levels):
            self.level_ends[i] = level_ends[i]
            if not (self.level_ends[i - 1] if i else 0) <= self.level_ends[i] <= self.n:
                raise ValueError("level_ends must rise from 0 to the number of nodes")
        branches = 0
        parents = bytearray(self.n)
        has_parent = <uint8_t *><char *>parents
        for i, node in enumerate(nodes):
            f = &self.nodes[i]
            f.child = -1
            f.key_size = f.value_size = 0
            self.leaf_tag[i] = node[0] not in ("branch", "extension")
            if node[0] == "branch":
                f.kind = FLAT_BRANCH
                f.child = 16 * branches
                self.child_masks[branches] = 0
                for j in range(16):
                    self.children[16 * branches + j] = _child_index(node[1][j], i, True, has_parent)
                    if self.children[16 * branches + j] >= 0:
                        # (children come before their parent: the child's tag is set)
                        self.child_masks[branches] |= (<uint32_t>1 << j) | (
                            <uint32_t>self.leaf_tag[self.children[16 * branches + j]] << (16 + j))
                branches += 1
                buf_size += MAX_HEADER_SIZE + 16 * 33 + 1
            elif node[0] == "extension":
                f.kind = FLAT_EXTENSION
                f.key_at, f.key_size = len(blob), len(node[1])
                f.child = _child_index(node[2], i, False, has_parent)
                blob += node[1]
                buf_size += 2 * MAX_HEADER_SIZE + f.key_size + 33
            elif leaves == "inline":
                f.kind = FLAT_LEAF_INLINE           # laid out in the blob below, in blob_order
                f.key_size, f.value_size = len(node[1]), len(node[2])
                buf_size += 3 * MAX_HEADER_SIZE + f.key_size + f.value_size
            else:
                f.kind = FLAT_LEAF_COMPACT if leaves == "compact" else FLAT_LEAF_NIBBLES
                if type(node[1]) is not bytes or type(node[2]) is not bytes:
                    raise TypeError("a leaf's key and value must be bytes")
                f.key_at = len(self.objects)
                self.objects += [node[1], node[2]]
                buf_size += 3 * MAX_HEADER_SIZE + len(node[1]) + len(node[2])
        placed = set()
        for i in (range(self.n) if blob_order is None else blob_order):
            if not 0 <= i < self.n:
                raise ValueError("blob_order holds %r, not a node index" % (i,))
            f = &self.nodes[i]
            if f.kind == FLAT_LEAF_INLINE and i not in placed:
                placed.add(i)
                f.key_at = len(blob)
                blob += nodes[i][1]
                f.value_at = len(blob)
                blob += nodes[i][2]
        for i in range(self.n):
            if self.nodes[i].kind == FLAT_LEAF_INLINE and i not in placed:
                raise ValueError("blob_order leaves out leaf %d" % i)
        self.blob = bytes(blob)
        self.blob_data = <const uint8_t *>PyBytes_AS_STRING(self.blob)
        self.buf = <uint8_t *>PyMem_RawMalloc(buf_size + 1)
        self.object_ptrs = <PyObject **>PyMem_RawMalloc((len(self.objects) + 1) * sizeof(PyObject *))
        if self.buf == NULL or self.object_ptrs == NULL:
            raise MemoryError()
        for i in range(len(self.objects)):
            self.object_ptrs[i] = <PyObject *>self.objects[i]

    def __dealloc__(self):
        PyMem_RawFree(self.nodes)
        PyMem_RawFree(self.children)
        PyMem_RawFree(self.level_ends)
        PyMem_RawFree(self.buf)
        PyMem_RawFree(self.digests)
        PyMem_RawFree(self.messages)
        PyMem_RawFree(self.lengths)
        PyMem_RawFree(self.object_ptrs)
        PyMem_RawFree(self.order)
        PyMem_RawFree(self.order_ends)
        PyMem_RawFree(self.stack)
        PyMem_RawFree(self.heights)
        PyMem_RawFree(self.level_digests)
        PyMem_RawFree(self.leaf_tag)
        PyMem_RawFree(self.child_masks)

    def hash(self, str backend="scalar", Py_ssize_t repeat=1, str levels="given"):
        """The root's hash, computed ``repeat`` times over on ``backend``'s lanes, without the GIL.

        ``levels`` says how each hash finds the order it encodes the nodes in, height by height: ``"given"``,
        the order of the nodes and ``level_ends``; otherwise the leaves in the order of their records (as an
        arena would list the leaves it made since the last hash) and the branches and extensions sorted by
        height, found by ``"walk"``, a walk from the root (the last node) over the branches and extensions, as a
        pass over records that keeps no lists by height would have to (a branch's masks say which children are
        leaves, as an arena's child references would; no leaf record is read), or by ``"scan"``, one pass over
        the records in their order, each branch's height from its children's (the nodes come children first, as
        in a log of records where every change appends one). Each level is then encoded in that order and its
        digests copied to their nodes."""
        cdef int b = _backend_number(backend)
        cdef int how = _LEVEL_ORDERS.index(levels) if levels in _LEVEL_ORDERS else -1
        cdef Py_ssize_t r
        if repeat < 1:
            raise ValueError("repeat must be >= 1")
        if how < 0:
            raise ValueError("levels must be one of %s, not %r" % (", ".join(_LEVEL_ORDERS), levels))
        if self.buf == NULL:
            raise ValueError("this FlatTrie was not initialised")
        if self.busy:
            raise RuntimeError("FlatTrie.hash() is already running in another thread")
        # self.objects keeps every key and value alive, and nothing changes them meanwhile; busy (set and read
        # with the GIL) keeps a second thread out of the buffers.
        self.busy = True
        try:
            with nogil:
                for r in range(repeat):
                    if how == 0:
                        self._pass(b, self.object_ptrs)
                    else:
                        if how == 1:
                            self._walk_levels()
                        else:
                            self._scan_levels()
                        self._pass_ordered(b, self.object_ptrs)
        finally:
            self.busy = False
        return PyBytes_FromStringAndSize(<char *>self.digests + 32 * (self.n - 1), 32)

    cdef inline Py_ssize_t _encode(self, FlatNode *f, uint8_t *out, PyObject **objects) noexcept nogil:
        """Write f's encoding at out (its children's digests already in self.digests); returns its size."""
        cdef Py_ssize_t j, o, payload, ck, count
        cdef const uint8_t *blob = self.blob_data
        cdef const uint8_t *key
        cdef const uint8_t *value
        cdef Py_ssize_t key_size, value_size
        cdef Py_ssize_t *kids
        if f.kind == FLAT_BRANCH:
            kids = self.children + f.child
            count = 0
            for j in range(16):
                count += kids[j] >= 0
            o = put_header(out, 0xc0, 17 + 32 * count)
            for j in range(16):
                if kids[j] < 0:
                    out[o] = 0x80
                    o += 1
                else:
                    out[o] = 0x80 + 32
                    memcpy(out + o + 1, self.digests + 32 * kids[j], 32)
                    o += 33
            out[o] = 0x80
            return o + 1
        if f.kind == FLAT_EXTENSION:
            o = put_header(out, 0xc0, string_size(blob + f.key_at, f.key_size) + 33)
            o += put_string(out + o, blob + f.key_at, f.key_size)
            out[o] = 0x80 + 32
            memcpy(out + o + 1, self.digests + 32 * f.child, 32)
            return o + 33
        if f.kind == FLAT_LEAF_INLINE:
            key, key_size = blob + f.key_at, f.key_size
            value, value_size = blob + f.value_at, f.value_size
        else:
            key = borrowed_bytes_data(objects[f.key_at])
            key_size = borrowed_bytes_size(objects[f.key_at])
            value = borrowed_bytes_data(objects[f.key_at + 1])
            value_size = borrowed_bytes_size(objects[f.key_at + 1])
        if f.kind == FLAT_LEAF_NIBBLES:
            ck = compact_size(key, key_size)
            payload = (1 if ck == 1 else ck + (1 if ck < 56 else 2)) + string_size(value, value_size)
            o = put_header(out, 0xc0, payload)
            if ck > 1:
                o += put_header(out + o, 0x80, ck)
            o += write_compact(key, key_size, out + o)
        else:
            payload = string_size(key, key_size) + string_size(value, value_size)
            o = put_header(out, 0xc0, payload)
            o += put_string(out + o, key, key_size)
        return o + put_string(out + o, value, value_size)

    cdef void _pass(self, int backend, PyObject **objects) noexcept nogil:
        cdef Py_ssize_t h, i, start = 0, o
        cdef uint8_t *out
        for h in range(self.levels):
            out = self.buf
            for i in range(start, self.level_ends[h]):
                if i + FLAT_PREFETCH_AHEAD < self.level_ends[h]:
                    _prefetch_flat_leaf(&self.nodes[i + FLAT_PREFETCH_AHEAD], self.blob_data, objects)
                self.messages[i - start] = out
                o = self._encode(&self.nodes[i], out, objects)
                self.lengths[i - start] = <size_t>o
                out += o
            mpt_keccak256_many(backend, self.messages, self.lengths, <size_t>(self.level_ends[h] - start),
                               self.digests + 32 * start)
            start = self.level_ends[h]

    cdef void _walk_levels(self) noexcept nogil:
        """hash(levels="walk"): self.order lists the nodes by height, one past each height's last in
        self.order_ends. The leaves (height 0) come in the order of their records, as an arena would list the
        leaves it made since the last hash; a pre-order walk from the root records the branches and extensions
        (self.stack, as a list; a branch's children lowest slot first), reading no leaf; the recorded nodes read
        backwards then meet every child before its parent, which gives the heights, and each height keeps the
        walk's order."""
        cdef Py_ssize_t sp = 1, visited = 0, i, k
        cdef int slot, top = 0, height
        cdef uint32_t mask, inner
        cdef Py_ssize_t *kids
        cdef FlatNode *f
        cdef Py_ssize_t *todo = self.order_ends        # the walk's stack (n + 1 entries: enough for every node)
        todo[0] = self.n - 1
        if self.leaf_tag[self.n - 1]:
            self.heights[self.n - 1] = 0
            self.order[0] = self.n - 1
            self.order_ends[0] = 1
            self.levels_collected = 1
            return
        while sp:
            sp -= 1
            i = todo[sp]
            self.stack[visited] = i
            visited += 1
            f = &self.nodes[i]
            if f.kind == FLAT_EXTENSION:
                if not self.leaf_tag[f.child]:
                    todo[sp] = f.child
                    sp += 1
                continue
            kids = self.children + f.child
            mask = self.child_masks[f.child >> 4]
            inner = (mask & 0xFFFF) & ~(mask >> 16)
            # The branches and extensions below, pushed highest slot first so that the lowest comes off first.
            # Only the slots the masks name are read, and no leaf.
            while inner:
                slot = 31 - __builtin_clz(inner)
                inner &= ~(<uint32_t>1 << slot)
                todo[sp] = kids[slot]
                sp += 1

        # Heights, children first.
        for k in range(visited - 1, -1, -1):
            height = self._height(self.stack[k])
            if height > top:
                top = height
        self._by_height(visited, top)

    cdef inline int _height(self, Py_ssize_t i) noexcept nogil:
        """Set and return the height of branch or extension i, one above its highest child that is not a leaf
        (1 when all are leaves); those children's heights are set already."""
        cdef FlatNode *f = &self.nodes[i]
        cdef int height = 1, slot
        cdef uint32_t inner
        cdef Py_ssize_t *kids
        if f.kind == FLAT_EXTENSION:
            if not self.leaf_tag[f.child]:
                height = self.heights[f.child] + 1
        else:
            kids = self.children + f.child
            inner = (self.child_masks[f.child >> 4] & 0xFFFF) & ~(self.child_masks[f.child >> 4] >> 16)
            while inner:
                slot = __builtin_ctz(inner)
                inner &= inner - 1
                if self.heights[kids[slot]] >= height:
                    height = self.heights[kids[slot]] + 1
        self.heights[i] = height
        return height

    cdef void _by_height(self, Py_ssize_t count, int top) noexcept nogil:
        """self.order: the leaves in the order of their records (height 0), then the count branches and extensions
        listed in self.stack (their heights in self.heights, top the highest), sorted by height and keeping the
        list's order within one; self.order_ends: one past each height's last."""
        cdef Py_ssize_t leaves = 0, i, k, c
        cdef int h
        # The leaves in the order of their records (an arena's: the order it made them), all of height 0.
        for i in range(self.n):
            if self.leaf_tag[i]:
                self.heights[i] = 0
                self.order[leaves] = i
                leaves += 1
        # The rest sorted by height (a counting sort, keeping the list's order within a height): order_ends[h]
        # counts height h, then is where it starts, then where it ends.
        for h in range(top + 1):
            self.order_ends[h] = 0
        for k in range(count):
            self.order_ends[self.heights[self.stack[k]]] += 1
        c = leaves
        for h in range(1, top + 1):
            k = self.order_ends[h]
            self.order_ends[h] = c
            c += k
        for k in range(count):
            i = self.stack[k]
            h = self.heights[i]
            self.order[self.order_ends[h]] = i
            self.order_ends[h] += 1
        self.order_ends[0] = leaves
        self.levels_collected = top + 1

    cdef void _scan_levels(self) noexcept nogil:
        """hash(levels="scan"): the heights in one pass over the records in their order (children first), then
        _by_height with the branches and extensions in that order."""
        cdef Py_ssize_t i, count = 0
        cdef int top = 0, height
        for i in range(self.n):
            if self.leaf_tag[i]:
                continue
            height = self._height(i)
            if height > top:
                top = height
            self.stack[count] = i
            count += 1
        self._by_height(count, top)

    cdef void _pass_ordered(self, int backend, PyObject **objects) noexcept nogil:
        """The level pass over self.order (from _walk_levels or _scan_levels): each level's digests land in
        level_digests, then go to their nodes."""
        cdef Py_ssize_t h, k, start = 0, o
        cdef uint8_t *out
        for h in range(self.levels_collected):
            out = self.buf
            for k in range(start, self.order_ends[h]):
                # Two stages: the record 2 x FLAT_PREFETCH_AHEAD places on, then (its fields arrived meanwhile)
                # what the record FLAT_PREFETCH_AHEAD places on points to.
                if k + 2 * FLAT_PREFETCH_AHEAD < self.order_ends[h]:
                    prefetch_line(<const char *>&self.nodes[self.order[k + 2 * FLAT_PREFETCH_AHEAD]])
                if k + FLAT_PREFETCH_AHEAD < self.order_ends[h]:
                    _prefetch_flat_leaf(&self.nodes[self.order[k + FLAT_PREFETCH_AHEAD]], self.blob_data, objects)
                self.messages[k - start] = out
                o = self._encode(&self.nodes[self.order[k]], out, objects)
                self.lengths[k - start] = <size_t>o
                out += o
            mpt_keccak256_many(backend, self.messages, self.lengths, <size_t>(self.order_ends[h] - start),
                               self.level_digests)
            for k in range(start, self.order_ends[h]):
                memcpy(self.digests + 32 * self.order[k], self.level_digests + 32 * (k - start), 32)
            start = self.order_ends[h]

