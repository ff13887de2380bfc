# cython: language_level=3
"""NodeArena: a trie's nodes as records in flat arrays, where a fresh Trie keeps them (docs/performance.md).

The hashing pass over node objects chases a ShortNode, its key and its value bytes, each somewhere in the heap,
and finds the order to hash them in by walking the tree. Here a leaf's RLP encoding is written once, when the leaf
is made, into one byte blob, in the order the leaves are made; branches and extensions are fixed-size records that
name their children by number; each record knows its height (above each child's), and those that lost their hash
are listed. The pass hashes the new leaves where they lie, in the order they were made, sorts the listed records by
height from dense arrays of heights, and encodes and keccaks one height at a time, in chunks on the Keccak
backend's lanes, on the hash threads: no walk, no object, no pending hole.

Records are changed in place (nothing else sees them: a Trie turns them into node objects before anything could
share them, nodes_root in trie.pyx); a replaced record is marked dead, its slot reused after the next pass, and
the arena compacts itself once dead bytes outnumber live ones. A commit collects the records as commit_trie
collects nodes, and later changes track the paths of stored records they replace.
"""
cimport cython
from cpython.buffer cimport PyBuffer_Release
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.pythread cimport PyThread_get_thread_ident
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memcmp, memcpy, memmove, memset

from mpt.core._keccak.keccak cimport mpt_keccak256, mpt_keccak256_many
from mpt.core.bytes_like cimport get_bytes_view
from mpt.core.prefetch cimport prefetch_line
from mpt.core.rlp cimport MAX_HEADER_SIZE, put_string, string_size
from mpt.core.runtime cimport hash_threads, keccak_backend_number, mark_openmp_used
from cython.parallel cimport prange
from mpt.ethereum.encoding cimport TERMINATOR, compact_size, pack_nibbles, write_compact, write_hex, write_nibbles
from mpt.ethereum.node_enc cimport (EMPTY_STRING, HASH_REF_SIZE, write_branch_value, write_head_before,
                                    write_short_head)
from mpt.ethereum.committer cimport NodeSet, add_node, new_node_set
from mpt.ethereum.node cimport FullNode, Node, ShortNode, ValueNode, lowest_bit


from time import sleep as _sleep

__all__ = ["NodeArena"]


# The end of a chain of dead or free records.
cdef const uint32_t NO_RECORD = 0xFFFFFFFF
# The height of a dead branch or extension: the pass sorts the dirty list reading only the height arrays.
cdef const uint32_t DEAD_HEIGHT = 0xFFFFFFFF


cdef extern from "<stdlib.h>" nogil:
    int posix_memalign(void **memptr, size_t alignment, size_t size)


cdef inline uint32_t make_ref(Py_ssize_t index, int kind) noexcept nogil:
    return <uint32_t>(index << 2) | <uint32_t>kind


cdef inline Py_ssize_t path_nibbles(const uint8_t *compact, Py_ssize_t size) noexcept nogil:
    """Nibbles of the path in a compact key (the terminator of a leaf's not counted)."""
    return 2 * (size - 1) + ((compact[0] >> 4) & 1)


cdef inline uint8_t path_nibble(const uint8_t *compact, Py_ssize_t i) noexcept nogil:
    """Nibble i of the path in a compact key. Its nibbles follow the flag nibble, after a pad nibble when even."""
    cdef Py_ssize_t j = i + 2 - ((compact[0] >> 4) & 1)
    return (compact[j >> 1] >> (0 if j & 1 else 4)) & 0x0F


cdef inline Py_ssize_t match_path(const uint8_t *compact, Py_ssize_t nibbles, const uint8_t *k,
                                  Py_ssize_t n) noexcept nogil:
    """Length of the common prefix of a compact key's path and k[:n]."""
    cdef Py_ssize_t i = 0
    while i < nibbles and i < n and path_nibble(compact, i) == k[i]:
        i += 1
    return i


cdef inline Py_ssize_t _doubled(Py_ssize_t capacity, Py_ssize_t needed) noexcept:
    """The capacity an array grows to for needed items: doubled from what it is (16 at least) until it fits."""
    if capacity < 16:
        capacity = 16
    while capacity < needed:
        capacity *= 2
    return capacity


cdef int _grow(void **array, Py_ssize_t *capacity, Py_ssize_t needed, size_t item) except -1:
    """Grow a PyMem array to hold at least needed items (doubling); MemoryError leaves it as it was."""
    cdef Py_ssize_t c
    cdef void *p
    if needed <= capacity[0]:
        return 0
    c = _doubled(capacity[0], needed)
    p = PyMem_Realloc(array[0], <size_t>c * item)
    if p == NULL:
        raise MemoryError()
    array[0] = p
    capacity[0] = c
    return 0


cdef int _grow_records(void **array, Py_ssize_t *capacity, Py_ssize_t needed, size_t item) except -1:
    """_grow for a record array, on 64-byte boundaries (freed with free()): a record then starts a cache line, and
    a leaf's flags, size and hash (what a parent's encoding reads) share one line."""
    cdef Py_ssize_t c
    cdef void *p = NULL
    if needed <= capacity[0]:
        return 0
    c = _doubled(capacity[0], needed)
    if posix_memalign(&p, 64, <size_t>c * item) != 0:
        raise MemoryError()
    if array[0] != NULL:
        memcpy(p, array[0], <size_t>capacity[0] * item)
        free(array[0])
    array[0] = p
    capacity[0] = c
    return 0


cdef Py_ssize_t _push_frame(IterFrame **frames, Py_ssize_t *capacity, Py_ssize_t depth, uint32_t ref,
                            Py_ssize_t path_len, bint bounded) except -1:
    """An iteration's next frame on top of frames[:depth], not visited yet (next -1); returns the new depth."""
    cdef IterFrame *f
    _grow(<void **>frames, capacity, depth + 1, sizeof(IterFrame))
    f = &frames[0][depth]
    f.ref = ref
    f.path_len = path_len
    f.next = -1
    f.bounded = bounded
    return depth + 1


cdef Py_ssize_t _append_path(const uint8_t *compact, Py_ssize_t size, uint8_t **path, Py_ssize_t *capacity,
                             Py_ssize_t at) except -1:
    """Write the path nibbles of a compact key (an extension's, or a leaf's without its terminator) at
    path[at:], the buffer grown to fit; return the path's new length."""
    cdef Py_ssize_t nibbles = path_nibbles(compact, size), i
    _grow(<void **>path, capacity, at + nibbles, 1)
    for i in range(nibbles):
        path[0][at + i] = path_nibble(compact, i)
    return at + nibbles


cdef int _compare_nibbles(const uint8_t *path, Py_ssize_t n, const uint8_t *start, Py_ssize_t m) noexcept:
    """path[:n] against start's prefix of the same length: -1 before it, 0 equal, 1 after it."""
    cdef Py_ssize_t i
    for i in range(n if n < m else m):
        if path[i] != start[i]:
            return -1 if path[i] < start[i] else 1
    return 0


cdef object _iteration_item(int mode, const uint8_t *path, Py_ssize_t nibbles, const uint8_t *value,
                            Py_ssize_t value_size):
    """What an iteration yields for the key path[:nibbles] (an even count) and value: (key, value), the key or
    the value (mode 0, 1, 2)."""
    cdef bytes key
    if mode == 2:
        return PyBytes_FromStringAndSize(<const char *>value, value_size)
    key = PyBytes_FromStringAndSize(NULL, nibbles // 2)
    pack_nibbles(path, nibbles // 2, <uint8_t *>PyBytes_AS_STRING(key))
    if mode == 1:
        return key
    return key, PyBytes_FromStringAndSize(<const char *>value, value_size)


cdef object _leaf_item(int mode, const uint8_t *path, Py_ssize_t at, const uint8_t *compact, Py_ssize_t compact_size,
                       const uint8_t *value, Py_ssize_t value_size):
    """_iteration_item for a leaf whose path is path[:at] and whose compact key is compact[:compact_size]: the key's
    bytes are the path's, packed, then the compact key's after its flag byte (which holds the first nibble of
    the leaf's part when the path's length is odd)."""
    cdef bytes key
    cdef uint8_t *out
    if mode == 2:
        return PyBytes_FromStringAndSize(<const char *>value, value_size)
    key = PyBytes_FromStringAndSize(NULL, (at + path_nibbles(compact, compact_size)) // 2)
    out = <uint8_t *>PyBytes_AS_STRING(key)
    pack_nibbles(path, at // 2, out)
    if at & 1:
        out[at // 2] = <uint8_t>((path[at - 1] << 4) | (compact[0] & 0x0F))
        memcpy(out + at // 2 + 1, compact + 1, <size_t>(compact_size - 1))
    else:
        memcpy(out + at // 2, compact + 1, <size_t>(compact_size - 1))
    if mode == 1:
        return key
    return key, PyBytes_FromStringAndSize(<const char *>value, value_size)


cdef void *_copy_array(const void *source, Py_ssize_t count, Py_ssize_t capacity, size_t item,
                       bint records) noexcept:
    """A new array of capacity items (64-byte aligned and freed with free() for records, else PyMem) holding the
    first count items of source; NULL when capacity is 0 or out of memory."""
    cdef void *p = NULL
    if capacity == 0:
        return NULL
    if records:
        if posix_memalign(&p, 64, <size_t>capacity * item) != 0:
            return NULL
    else:
        p = PyMem_Malloc(<size_t>capacity * item)
        if p == NULL:
            return NULL
    if count:
        memcpy(p, source, <size_t>count * item)
    return p


cdef void _hash_chunk(int backend, PassChunk *c, Py_ssize_t m) noexcept nogil:
    """Keccak of the chunk's m encodings in one call on the backend's lanes; each digest to its record, which is
    then done (and off the dirty list)."""
    cdef Py_ssize_t j
    if m == 0:
        return
    mpt_keccak256_many(backend, c.messages, c.lengths, <size_t>m, c.digests)
    for j in range(m):
        memcpy(c.targets[j], c.digests + 32 * j, 32)
        c.done[j][0] = (c.done[j][0] & ~REC_LISTED) | REC_DONE


cdef bytes _empty_root():
    # The empty trie's root: keccak256 of the RLP empty string (mpt.ethereum.trie.EMPTY_ROOT, which cimports this
    # module, so it cannot be imported from there).
    cdef uint8_t empty = EMPTY_STRING
    cdef uint8_t digest[32]
    mpt_keccak256(&empty, 1, digest)
    return PyBytes_FromStringAndSize(<const char *>digest, 32)


cdef bytes _EMPTY_ROOT = _empty_root()
cdef PassScratch _scratch           # starts zeroed: every array NULL, every capacity 0
cdef bint _scratch_busy = False     # a pass is using _scratch (set and read with the GIL)


@cython.final
cdef class NodeArena:
    """A Merkle Patricia Trie held as records in flat arrays, in memory: where a fresh Trie keeps its nodes.

    ``update(key, value)``, ``get(key)``, ``delete(key)`` and ``hash()`` behave as :class:`~mpt.ethereum.Trie`'s
    (an empty value deletes; the empty trie hashes to ``EMPTY_ROOT``); keys and values are bytes-like. Not part
    of the public API: Trie uses its C methods; the Python ones are for tests."""

    def __cinit__(self):
        self.holders = 1                    # its maker
        self.free_branches = self.free_extensions = NO_RECORD
        self.dead_branches = self.dead_extensions = NO_RECORD

    def __dealloc__(self):
        PyMem_Free(self.touched)
        PyMem_Free(self.committing)
        free(self.leaves)
        free(self.branches)
        free(self.extensions)
        PyMem_Free(self.branch_heights)
        PyMem_Free(self.extension_heights)
        PyMem_Free(self.dirty)
        PyMem_Free(self.blob)
        PyMem_Free(self.scratch)

    def __len__(self):
        return self.count

    # ------------------------------------------------------------------------------------------ room

    cdef int _reserve(self, Py_ssize_t blob_bytes) except -1:
        """Room for what one update or delete can make: two leaves, a branch, two extensions, blob_bytes of blob.
        Everything below runs in that room and cannot fail, so an operation either fails here, before it changes
        anything, or completes."""
        cdef Py_ssize_t b = self.branch_capacity, e = self.extension_capacity
        if self.leaf_count + 2 > MAX_RECORDS or self.branch_count + 1 > MAX_RECORDS or \
                self.extension_count + 2 > MAX_RECORDS:
            raise MemoryError("a NodeArena holds at most 2**30 records of a kind")
        _grow_records(<void **>&self.leaves, &self.leaf_capacity, self.leaf_count + 2, sizeof(LeafRecord))
        _grow(<void **>&self.blob, &self.blob_capacity, self.blob_size + blob_bytes, 1)
        if self.branch_count + 1 > self.branch_capacity:
            _grow(<void **>&self.branch_heights, &b, self.branch_count + 1, sizeof(uint32_t))
            _grow_records(<void **>&self.branches, &self.branch_capacity, b, sizeof(BranchRecord))
        if self.extension_count + 2 > self.extension_capacity:
            _grow(<void **>&self.extension_heights, &e, self.extension_count + 2, sizeof(uint32_t))
            _grow_records(<void **>&self.extensions, &self.extension_capacity, e, sizeof(ExtensionRecord))
        # Every branch and extension can be listed once: listing never needs to grow the list.
        _grow(<void **>&self.dirty, &self.dirty_capacity, self.branch_capacity + self.extension_capacity,
              sizeof(uint32_t))
        return 0

    cdef int _reserve_scratch(self, Py_ssize_t key_bytes) except -1:
        cdef Py_ssize_t region = 2 * key_bytes + 2
        cdef void *p
        if region <= self.region:
            return 0
        region = max(region, 2 * self.region, 130)
        p = PyMem_Realloc(self.scratch, <size_t>(3 * region))
        if p == NULL:
            raise MemoryError()
        self.scratch = <uint8_t *>p
        self.region = region
        return 0

    # ------------------------------------------------------------------------------------------ records

    cdef uint32_t _new_leaf(self, const uint8_t *hexkey, Py_ssize_t n, const uint8_t *value,
                            Py_ssize_t value_size) noexcept:
        """A leaf for the hex key tail hexkey[:n] (ending with the terminator) and value, its encoding appended to
        the blob. value may lie in the blob (a leaf remade with a new key): the blob has room, nothing moves."""
        cdef Py_ssize_t index = self.leaf_count
        cdef LeafRecord *r = &self.leaves[index]
        cdef uint8_t *out = self.blob + self.blob_size
        cdef Py_ssize_t value_string = string_size(value, value_size)
        # write_leaf's steps, keeping where the key and the value land.
        cdef Py_ssize_t o = write_short_head(out, compact_size(hexkey, n), value_string)
        r.key_at = <uint32_t>o
        r.key_size = <uint32_t>write_compact(hexkey, n, out + o)
        o += r.key_size
        r.value_at = <uint32_t>(o + value_string - value_size)
        r.value_size = <uint32_t>value_size
        o += put_string(out + o, value, value_size)
        r.at = <uint64_t>self.blob_size
        r.size = <uint32_t>o
        r.flags = 0
        self.blob_size += o
        self.leaf_count += 1
        if o > self.max_leaf_size:
            self.max_leaf_size = o
        return make_ref(index, KIND_LEAF)

    cdef void _shorten_leaf(self, uint32_t ref, const uint8_t *hexkey, Py_ssize_t n) noexcept:
        """Give leaf ref the hex key tail hexkey[:n] (a suffix of its own), rewriting its encoding where it lies:
        the new one is no longer, and its value string moves down as it is. Only for a leaf nothing has hashed
        or shares."""
        cdef LeafRecord *r = &self.leaves[ref >> 2]
        cdef uint8_t *out = self.blob + r.at
        cdef Py_ssize_t value_string_at = r.key_at + r.key_size
        cdef Py_ssize_t value_string = r.size - value_string_at
        # The new head and key end no later than the old key did (the key is shorter, so are their headers): the
        # value string they come before is not written over.
        cdef Py_ssize_t o = write_short_head(out, compact_size(hexkey, n), value_string)
        r.key_at = <uint32_t>o
        r.key_size = <uint32_t>write_compact(hexkey, n, out + o)
        o += r.key_size
        memmove(out + o, out + value_string_at, <size_t>value_string)
        r.value_at = <uint32_t>(o + (r.value_at - value_string_at))
        self.garbage_bytes += r.size - (o + value_string)      # the bytes it no longer reaches
        r.size = <uint32_t>(o + value_string)

    cdef uint32_t _new_branch(self) noexcept:
        cdef Py_ssize_t index
        if self.free_branches != NO_RECORD:
            index = self.free_branches
            self.free_branches = self.branches[index].child[0]
        else:
            index = self.branch_count
            self.branch_count += 1
        memset(&self.branches[index], 0, sizeof(BranchRecord))
        self.branch_heights[index] = 0
        return make_ref(index, KIND_BRANCH)

    cdef uint32_t _new_extension(self, const uint8_t *hexkey, Py_ssize_t n, uint32_t child) noexcept:
        """An extension for the path hexkey[:n] (no terminator) above child; its compact key goes into the blob."""
        cdef Py_ssize_t index
        cdef ExtensionRecord *e
        if self.free_extensions != NO_RECORD:
            index = self.free_extensions
            self.free_extensions = self.extensions[index].child
        else:
            index = self.extension_count
            self.extension_count += 1
        e = &self.extensions[index]
        memset(e, 0, sizeof(ExtensionRecord))
        e.key_at = <uint64_t>self.blob_size
        e.key_size = <uint32_t>write_compact(hexkey, n, self.blob + self.blob_size)
        self.blob_size += e.key_size
        if 3 * MAX_HEADER_SIZE + e.key_size + HASH_REF_SIZE > self.max_record_encoding:
            self.max_record_encoding = 3 * MAX_HEADER_SIZE + e.key_size + HASH_REF_SIZE
        e.child = child
        self.extension_heights[index] = 0
        return make_ref(index, KIND_EXTENSION)

    cdef void _set_value(self, BranchRecord *b, const uint8_t *value, Py_ssize_t value_size) noexcept:
        if PASS_RECORD_SIZE + MAX_HEADER_SIZE + value_size > self.max_record_encoding:
            self.max_record_encoding = PASS_RECORD_SIZE + MAX_HEADER_SIZE + value_size
        b.value_at = <uint64_t>self.blob_size
        b.value_size = <uint32_t>value_size
        memmove(self.blob + self.blob_size, value, <size_t>value_size)
        self.blob_size += value_size
        b.present |= 1 << 16

    cdef void _kill(self, uint32_t ref) noexcept:
        """ref is replaced. A dead branch or extension may still be on the dirty list (the pass skips it): its slot
        is chained for reuse after the next pass."""
        cdef Py_ssize_t i = ref >> 2
        cdef int kind = ref & KIND_MASK
        if kind == KIND_LEAF:
            self.leaves[i].flags |= REC_DEAD
            self.garbage_bytes += self.leaves[i].size
            self.dead_leaves += 1
        elif kind == KIND_BRANCH:
            self.garbage_bytes += self.branches[i].value_size
            self.branches[i].flags |= REC_DEAD
            self.branches[i].child[0] = self.dead_branches
            self.dead_branches = <uint32_t>i
            self.branch_heights[i] = DEAD_HEIGHT
        elif kind == KIND_EXTENSION:
            self.garbage_bytes += self.extensions[i].key_size
            self.extensions[i].flags |= REC_DEAD
            self.extensions[i].child = self.dead_extensions
            self.dead_extensions = <uint32_t>i
            self.extension_heights[i] = DEAD_HEIGHT

    cdef void _dirty(self, uint32_t ref, uint32_t height) noexcept:
        """Branch or extension ref changed: its hash is gone, its height is at least height, and it goes on the
        dirty list unless it is there already (a changed record keeps its place; the pass reads its height then)."""
        cdef Py_ssize_t i = ref >> 2
        cdef uint8_t *flags
        if ref & KIND_MASK == KIND_BRANCH:
            flags = &self.branches[i].flags
            if self.branch_heights[i] < height:
                self.branch_heights[i] = height
        else:
            flags = &self.extensions[i].flags
            if self.extension_heights[i] < height:
                self.extension_heights[i] = height
        flags[0] &= ~(REC_DONE | REC_EMBEDDED | REC_STORED)
        if height > self.max_height:
            self.max_height = height
        if not flags[0] & REC_LISTED:
            flags[0] |= REC_LISTED
            self.dirty[self.dirty_count] = ref
            self.dirty_count += 1

    cdef uint32_t height_of(self, uint32_t ref) noexcept:
        cdef int kind = ref & KIND_MASK
        if kind == KIND_BRANCH:
            return self.branch_heights[ref >> 2]
        if kind == KIND_EXTENSION:
            return self.extension_heights[ref >> 2]
        return 0

    cdef Py_ssize_t _path(self, uint32_t ref, uint8_t *out) noexcept:
        """The path of leaf or extension ref in hex nibbles at out, a leaf's with the terminator; returns its
        length."""
        cdef const uint8_t *compact
        cdef Py_ssize_t nibbles, i
        if ref & KIND_MASK == KIND_LEAF:
            compact = self.blob + self.leaves[ref >> 2].at + self.leaves[ref >> 2].key_at
            nibbles = path_nibbles(compact, self.leaves[ref >> 2].key_size)
        else:
            compact = self.blob + self.extensions[ref >> 2].key_at
            nibbles = path_nibbles(compact, self.extensions[ref >> 2].key_size)
        for i in range(nibbles):
            out[i] = path_nibble(compact, i)
        if ref & KIND_MASK == KIND_LEAF:
            out[nibbles] = TERMINATOR
            return nibbles + 1
        return nibbles

    cdef void _branch_put(self, uint32_t branch, const uint8_t *hexkey, Py_ssize_t n, const uint8_t *value,
                          Py_ssize_t value_size) noexcept:
        """Under branch, a leaf for the hex key tail hexkey[:n]: its first nibble picks the slot, the terminator
        the branch's own value."""
        cdef BranchRecord *b = &self.branches[branch >> 2]
        cdef uint8_t slot = hexkey[0]
        if slot == TERMINATOR:
            self._set_value(b, value, value_size)
        else:
            b.child[slot] = self._new_leaf(hexkey + 1, n - 1, value, value_size)
            b.present |= <uint32_t>1 << slot

    # ------------------------------------------------------------------------------------------ insert

    cdef uint32_t _insert(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, Py_ssize_t klen,
                          const uint8_t *value, Py_ssize_t value_size, bint *changed) noexcept:
        """Insert value at the hex key k[:klen] (its terminator last) below n, which sits at k[:pos]; return what
        takes n's place. As Trie._insert, on records: what changes is changed in place."""
        cdef Py_ssize_t nibbles, matchlen, path_size
        cdef const uint8_t *compact
        cdef uint8_t *path
        cdef LeafRecord *leaf
        cdef ExtensionRecord *e
        cdef BranchRecord *b
        cdef uint32_t branch, nn, sub, child, height
        cdef int kind = n & KIND_MASK
        cdef uint8_t slot
        cdef bint child_changed = False
        if n == REF_EMPTY:
            changed[0] = True
            self.key_delta = 1
            return self._new_leaf(k + pos, klen - pos, value, value_size)
        if kind == KIND_LEAF:
            leaf = &self.leaves[n >> 2]
            compact = self.blob + leaf.at + leaf.key_at
            nibbles = path_nibbles(compact, leaf.key_size)
            matchlen = match_path(compact, nibbles, k + pos, klen - pos)
            if matchlen == nibbles and pos + matchlen == klen - 1:
                # The same key.
                if <Py_ssize_t>leaf.value_size == value_size and \
                        memcmp(self.blob + leaf.at + leaf.value_at, value, <size_t>value_size) == 0:
                    return n
                changed[0] = True
                self._track(n, k, pos)
                nn = self._new_leaf(k + pos, klen - pos, value, value_size)
                self._kill(n)
                return nn
            # The keys part inside this leaf: a branch there, behind an extension for the common part if any.
            branch = self._split_start(n, k, pos, changed, &path_size)
            path = self.scratch + self.region
            slot = path[matchlen]
            if slot != TERMINATOR and (n >> 2) >= self.leaf_mark:
                # A leaf made since the last pass moves under the branch as it is, its key shortened in place:
                # no second record and no second copy of its value for the pass to read past.
                self._shorten_leaf(n, path + matchlen + 1, path_size - matchlen - 1)
                self.branches[branch >> 2].child[slot] = n
                self.branches[branch >> 2].present |= <uint32_t>1 << slot
            else:
                self._branch_put(branch, path + matchlen, path_size - matchlen,
                                 self.blob + leaf.at + leaf.value_at, leaf.value_size)
                self._kill(n)
            return self._split(branch, 1, k, pos, matchlen, klen, value, value_size)
        if kind == KIND_EXTENSION:
            e = &self.extensions[n >> 2]
            compact = self.blob + e.key_at
            nibbles = path_nibbles(compact, e.key_size)
            matchlen = match_path(compact, nibbles, k + pos, klen - pos)
            if matchlen == nibbles:
                nn = self._insert(e.child, k, pos + nibbles, klen, value, value_size, &child_changed)
                if not child_changed:
                    return n
                changed[0] = True
                self._track(n, k, pos)
                self.extensions[n >> 2].child = nn
                self._dirty(n, self.height_of(nn) + 1)
                return n
            child = e.child
            branch = self._split_start(n, k, pos, changed, &path_size)
            path = self.scratch + self.region
            b = &self.branches[branch >> 2]
            slot = path[matchlen]
            if matchlen + 1 == path_size:
                b.child[slot] = child
                height = self.height_of(child) + 1
            else:
                sub = self._new_extension(path + matchlen + 1, path_size - matchlen - 1, child)
                self._dirty(sub, self.height_of(child) + 1)
                b.child[slot] = sub
                height = self.height_of(sub) + 1
            b.present |= <uint32_t>1 << slot
            self._kill(n)
            return self._split(branch, height, k, pos, matchlen, klen, value, value_size)
        b = &self.branches[n >> 2]
        slot = k[pos]
        if slot == TERMINATOR:
            if <Py_ssize_t>b.value_size == value_size and \
                    memcmp(self.blob + b.value_at, value, <size_t>value_size) == 0:
                return n
            changed[0] = True
            self._track(n, k, pos)
            if b.value_size == 0:
                self.key_delta = 1
            self.garbage_bytes += b.value_size
            self._set_value(b, value, value_size)
            self._dirty(n, 1)
            return n
        nn = self._insert(b.child[slot], k, pos + 1, klen, value, value_size, &child_changed)
        if not child_changed:
            return n
        changed[0] = True
        self._track(n, k, pos)
        b = &self.branches[n >> 2]
        b.child[slot] = nn
        b.present |= <uint32_t>1 << slot
        self._dirty(n, self.height_of(nn) + 1)
        return n

    cdef uint32_t _split_start(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, bint *changed,
                               Py_ssize_t *path_size) noexcept:
        """The start of a split of leaf or extension n (at k[:pos]) by a new key: n's path, in hex nibbles, into
        the scratch's path region (its size to path_size), and a new branch, returned."""
        changed[0] = True
        self.key_delta = 1
        self._track(n, k, pos)
        path_size[0] = self._path(n, self.scratch + self.region)
        return self._new_branch()

    cdef uint32_t _split(self, uint32_t branch, uint32_t height, const uint8_t *k, Py_ssize_t pos,
                         Py_ssize_t matchlen, Py_ssize_t klen, const uint8_t *value, Py_ssize_t value_size) noexcept:
        """The end of a split at k[:pos + matchlen], where the new key leaves a leaf's or an extension's path:
        the new key's leaf (or value) goes into branch, which holds the old record's side already and is listed
        at height, behind an extension for the common part k[pos:pos + matchlen] if there is one."""
        cdef uint32_t nn
        self._branch_put(branch, k + pos + matchlen, klen - pos - matchlen, value, value_size)
        self._dirty(branch, height)
        if matchlen == 0:
            return branch
        nn = self._new_extension(k + pos, matchlen, branch)
        self._dirty(nn, height + 1)
        return nn

    # ------------------------------------------------------------------------------------------ delete

    cdef uint32_t _delete(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, Py_ssize_t klen,
                          bint *changed) noexcept:
        """Delete the hex key k[:klen] below n (at k[:pos]); return what takes n's place (REF_EMPTY for nothing).
        As Trie._delete: a branch left with one entry becomes a leaf or an extension, and an extension above a
        leaf or an extension merges with it."""
        cdef Py_ssize_t nibbles, matchlen, size
        cdef const uint8_t *compact
        cdef uint8_t *path = self.scratch + self.region
        cdef uint8_t *merged = self.scratch + 2 * self.region
        cdef LeafRecord *leaf
        cdef ExtensionRecord *e
        cdef BranchRecord *b
        cdef uint32_t nn, child, present
        cdef int kind = n & KIND_MASK
        cdef uint8_t slot
        cdef bint child_changed = False
        if n == REF_EMPTY:
            return n
        if kind == KIND_LEAF:
            leaf = &self.leaves[n >> 2]
            compact = self.blob + leaf.at + leaf.key_at
            nibbles = path_nibbles(compact, leaf.key_size)
            if nibbles != klen - 1 - pos or match_path(compact, nibbles, k + pos, nibbles) != nibbles:
                return n
            changed[0] = True
            self.key_delta = -1
            self._track(n, k, pos)
            self._kill(n)
            return REF_EMPTY
        if kind == KIND_EXTENSION:
            e = &self.extensions[n >> 2]
            compact = self.blob + e.key_at
            nibbles = path_nibbles(compact, e.key_size)
            if match_path(compact, nibbles, k + pos, klen - pos) != nibbles:
                return n
            nn = self._delete(e.child, k, pos + nibbles, klen, &child_changed)
            if not child_changed:
                return n
            changed[0] = True
            self._track(n, k, pos)
            # A branch below an extension never ends empty: it becomes a leaf or an extension or stays a branch.
            if nn & KIND_MASK == KIND_BRANCH:
                self.extensions[n >> 2].child = nn
                self._dirty(n, self.height_of(nn) + 1)
                return n
            size = self._path(n, merged)
            size += self._path(nn, merged + size)
            self._kill(n)
            return self._moved(nn, merged, size)
        b = &self.branches[n >> 2]
        slot = k[pos]
        if slot == TERMINATOR:
            if b.value_size == 0:
                return n
            self._track(n, k, pos)
            self.key_delta = -1
            self.garbage_bytes += b.value_size
            b.value_size = 0
            b.present &= ~(<uint32_t>1 << 16)
        else:
            nn = self._delete(b.child[slot], k, pos + 1, klen, &child_changed)
            if not child_changed:
                return n
            self._track(n, k, pos)
            b = &self.branches[n >> 2]
            b.child[slot] = nn
            if nn == REF_EMPTY:
                b.present &= ~(<uint32_t>1 << slot)
        changed[0] = True
        present = b.present
        if present & (present - 1):             # two entries or more left
            self._dirty(n, 1 + (self.height_of(nn) if slot != TERMINATOR else 0))
            return n
        # One entry left: the branch goes, its entry takes its place with the entry's slot in front of its path.
        slot = <uint8_t>lowest_bit(present)
        if slot == TERMINATOR:
            merged[0] = TERMINATOR
            nn = self._new_leaf(merged, 1, self.blob + b.value_at, b.value_size)
        else:
            child = b.child[slot]
            merged[0] = slot
            if child & KIND_MASK == KIND_BRANCH:
                nn = self._new_extension(merged, 1, child)
                self._dirty(nn, self.height_of(child) + 1)
            else:
                # It moves up one level: its old path (this branch's, and the slot) no longer holds a node.
                if self.tracking:
                    memcpy(merged, k, <size_t>pos)
                    merged[pos] = slot
                    self._track(child, merged, pos + 1)
                merged[0] = slot
                size = 1 + self._path(child, merged + 1)
                nn = self._moved(child, merged, size)
        self._kill(n)
        return nn

    cdef uint32_t _moved(self, uint32_t ref, const uint8_t *hexkey, Py_ssize_t n) noexcept:
        """Leaf or extension ref again at the new path hexkey[:n] (a leaf's ending with the terminator): a new
        record with its value, or its child; ref dies."""
        cdef LeafRecord *leaf
        cdef uint32_t nn, child
        if ref & KIND_MASK == KIND_LEAF:
            leaf = &self.leaves[ref >> 2]
            nn = self._new_leaf(hexkey, n, self.blob + leaf.at + leaf.value_at, leaf.value_size)
        else:
            child = self.extensions[ref >> 2].child
            nn = self._new_extension(hexkey, n, child)
            self._dirty(nn, self.height_of(child) + 1)
        self._kill(ref)
        return nn

    # ------------------------------------------------------------------------------------------ the operations

    cdef int _check_idle(self, str op) except -1:
        """A pass of this arena runs without the GIL (in another thread): like a dict changed while iterated, a
        change raises instead of racing it. get() only reads and may run alongside; a second hash() waits for
        the pass and takes its result. Records that copies or iterations share are never changed: a Trie takes
        its own first (Trie.own_arena)."""
        if self.busy:
            raise RuntimeError("NodeArena.%s() called while hash() runs on it in another thread" % op)
        if self.holders > 1:
            raise RuntimeError("NodeArena.%s() called while a copy or an iteration shares it" % op)
        return 0

    cdef int wait_quiet(self) except -1:
        """Wait while a pass runs on these records in another thread, or another thread's commit of a Trie sharing
        them writes them (they count as stored until its write fails); raise RuntimeError instead of waiting for
        a commit of this thread (a database callback of it), which cannot end first."""
        while self.busy or self.commit_thread != 0:
            if self.commit_thread == PyThread_get_thread_ident():
                raise RuntimeError("a copy of this trie is committing the records the two share, in this thread (a "
                                   "database callback): change, copy or read this trie after that commit() returns")
            _sleep(0.0002)
        return 0

    cdef NodeArena clone(self):
        """An arena with the same records, keys and state that changes apart from this one: what a copied Trie
        changes once it shares its arena no more. Every array is copied as it is (the records keep their numbers,
        the free lists and the dirty list stay valid); a pass running in another thread is waited for."""
        cdef NodeArena c = NodeArena.__new__(NodeArena)     # first: making an object may run other threads
        self.wait_quiet()
        # From here on nothing gives up the GIL: no pass or commit can start until the copy is complete.
        c.leaves = <LeafRecord *>_copy_array(self.leaves, self.leaf_count, self.leaf_capacity,
                                             sizeof(LeafRecord), True)
        c.leaf_capacity = self.leaf_capacity
        c.branches = <BranchRecord *>_copy_array(self.branches, self.branch_count, self.branch_capacity,
                                                 sizeof(BranchRecord), True)
        c.branch_capacity = self.branch_capacity
        c.extensions = <ExtensionRecord *>_copy_array(self.extensions, self.extension_count,
                                                      self.extension_capacity, sizeof(ExtensionRecord), True)
        c.extension_capacity = self.extension_capacity
        c.branch_heights = <uint32_t *>_copy_array(self.branch_heights, self.branch_count, self.branch_capacity,
                                                   sizeof(uint32_t), False)
        c.extension_heights = <uint32_t *>_copy_array(self.extension_heights, self.extension_count,
                                                      self.extension_capacity, sizeof(uint32_t), False)
        c.dirty = <uint32_t *>_copy_array(self.dirty, self.dirty_count, self.dirty_capacity, sizeof(uint32_t), False)
        c.dirty_capacity = self.dirty_capacity
        c.blob = <uint8_t *>_copy_array(self.blob, self.blob_size, self.blob_capacity, 1, False)
        c.blob_capacity = self.blob_capacity
        c.touched = <uint8_t *>_copy_array(self.touched, self.touched_size, self.touched_capacity, 1, False)
        c.touched_capacity = self.touched_capacity
        # An array that failed to copy is NULL: c frees the others when it goes.
        if (self.leaf_capacity and c.leaves == NULL) or (self.branch_capacity and c.branches == NULL) or \
                (self.extension_capacity and c.extensions == NULL) or \
                (self.branch_capacity and c.branch_heights == NULL) or \
                (self.extension_capacity and c.extension_heights == NULL) or \
                (self.dirty_capacity and c.dirty == NULL) or (self.blob_capacity and c.blob == NULL) or \
                (self.touched_capacity and c.touched == NULL):
            raise MemoryError()
        c.leaf_count = self.leaf_count
        c.leaf_mark = self.leaf_mark
        c.branch_count = self.branch_count
        c.extension_count = self.extension_count
        c.free_branches, c.free_extensions = self.free_branches, self.free_extensions
        c.dead_branches, c.dead_extensions = self.dead_branches, self.dead_extensions
        c.dirty_count = self.dirty_count
        c.blob_size = self.blob_size
        c.root = self.root
        memcpy(c.root_hash, self.root_hash, 32)
        c.root_hash_valid = self.root_hash_valid
        c.count = self.count
        c.key_delta = self.key_delta
        c.max_leaf_size = self.max_leaf_size
        c.max_record_encoding = self.max_record_encoding
        c.garbage_bytes = self.garbage_bytes
        c.dead_leaves = self.dead_leaves
        c.compactions = self.compactions
        c.max_height = self.max_height
        c.tracking = self.tracking
        c.touched_size = self.touched_size
        # committing is a commit's own (empty between commits) and scratch is made on first use.
        return c

    cdef int _reserve_touched(self, Py_ssize_t key_bytes) except -1:
        # After a commit an operation may track one path per record it passes: at most one per height.
        if self.tracking:
            _grow(<void **>&self.touched, &self.touched_capacity,
                  self.touched_size + (self.max_height + 3) * (2 * key_bytes + 6), 1)
        return 0

    cdef int set(self, const uint8_t *key, Py_ssize_t n, const uint8_t *value, Py_ssize_t value_size) except -1:
        """Set key (n bytes) to value (value_size bytes, not 0). Returns 1, having changed nothing, when the
        arena became shared meanwhile (a copy or an iteration started while the pass of _collect_garbage ran
        without the GIL): the caller takes a copy of its own and calls again. From the check on, nothing gives
        up the GIL until the change is made."""
        cdef bint changed = False
        cdef uint32_t root
        cdef Py_ssize_t klen
        self._check_idle("update")
        self._collect_garbage()
        if self.holders > 1:
            return 1
        self._reserve_scratch(n)
        self._reserve(2 * (2 * n + 2 + value_size + 3 * MAX_HEADER_SIZE) + self.max_leaf_size)
        self._reserve_touched(n)
        klen = write_hex(key, n, self.scratch)
        self.key_delta = 0
        root = self._insert(self.root, self.scratch, 0, klen, value, value_size, &changed)
        if changed:
            self.root = root
            self.root_hash_valid = False
            self.count += self.key_delta
        return 0

    cdef int remove(self, const uint8_t *key, Py_ssize_t n) except -1:
        """Remove key (n bytes) if it is there. Returns 1, having changed nothing, when the arena became shared
        meanwhile (as set)."""
        cdef bint changed = False
        cdef uint32_t root
        cdef Py_ssize_t klen
        self._check_idle("delete")
        self._collect_garbage()
        if self.holders > 1:
            return 1
        self._reserve_scratch(n)
        # A merge writes at most two records whose paths come from the key's and whose value is a leaf's.
        self._reserve(2 * (2 * n + 2 + self.max_leaf_size + 3 * MAX_HEADER_SIZE))
        self._reserve_touched(n)
        klen = write_hex(key, n, self.scratch)
        self.key_delta = 0
        root = self._delete(self.root, self.scratch, 0, klen, &changed)
        if changed:
            self.root = root
            self.root_hash_valid = False
            self.count += self.key_delta
        return 0

    cdef object lookup(self, const uint8_t *key, Py_ssize_t n, object default):
        """The value stored at key (n bytes), as a new bytes object, or default."""
        cdef Py_ssize_t pos = 0, klen, nibbles
        cdef uint32_t r
        cdef const uint8_t *k
        cdef const uint8_t *compact
        cdef LeafRecord *leaf
        cdef BranchRecord *b
        cdef uint8_t slot
        self._reserve_scratch(n)
        klen = write_hex(key, n, self.scratch)
        k = self.scratch
        r = self.root
        while r != REF_EMPTY:
            if r & KIND_MASK == KIND_LEAF:
                leaf = &self.leaves[r >> 2]
                compact = self.blob + leaf.at + leaf.key_at
                nibbles = path_nibbles(compact, leaf.key_size)
                if nibbles != klen - 1 - pos or match_path(compact, nibbles, k + pos, nibbles) != nibbles:
                    return default
                return PyBytes_FromStringAndSize(<const char *>self.blob + leaf.at + leaf.value_at,
                                                 leaf.value_size)
            if r & KIND_MASK == KIND_EXTENSION:
                compact = self.blob + self.extensions[r >> 2].key_at
                nibbles = path_nibbles(compact, self.extensions[r >> 2].key_size)
                if match_path(compact, nibbles, k + pos, klen - pos) != nibbles:
                    return default
                pos += nibbles
                r = self.extensions[r >> 2].child
                continue
            b = &self.branches[r >> 2]
            slot = k[pos]
            if slot == TERMINATOR:
                if b.value_size == 0:
                    return default
                return PyBytes_FromStringAndSize(<const char *>self.blob + b.value_at, b.value_size)
            r = b.child[slot]
            pos += 1
        return default

    cdef bytes hash_root(self):
        """The root hash; None for an empty arena (the caller knows its empty root)."""
        if self.root == REF_EMPTY:
            # Nothing is left to hash: everything listed is dead, and free for reuse now.
            self.dirty_count = 0
            self.leaf_mark = self.leaf_count
            self._free_dead()
            return None
        while self.busy:
            # Another thread's pass of this arena: it hashes what this call would, so wait for it (the GIL
            # released) and take its result.
            _sleep(0.0002)
        if not self.root_hash_valid:
            self._pass()
        return PyBytes_FromStringAndSize(<const char *>self.root_hash, 32)

    # ------------------------------------------------------------------------------------------ Python API

    cdef uint32_t _next_child(self, IterFrame *f, uint8_t **path, Py_ssize_t *path_capacity) except? 0:
        """The next child of the branch on an iteration's path from slot f.next on (f.next then moves past it),
        its slot written at path[f.path_len] (the buffer grown to fit); REF_EMPTY when none is left."""
        cdef BranchRecord *b = &self.branches[f.ref >> 2]
        cdef int slot = f.next
        while slot < 16 and b.child[slot] == REF_EMPTY:
            slot += 1
        if slot == 16:
            return REF_EMPTY
        _grow(<void **>path, path_capacity, f.path_len + 1, 1)
        path[0][f.path_len] = <uint8_t>slot
        f.next = slot + 1
        return b.child[slot]

    def iterate(self, start, int mode):
        """Yield (key, value) (mode 0), keys (1) or values (2) in ascending key order, from the first key >= start
        (bytes): what Trie.items(), keys() and values() of a fresh trie give. The records are read as they are
        when the first item is asked for: the iteration holds a share of them until it ends, so that a change of
        the trie meanwhile takes a copy of its own (Trie.own_arena) and leaves them as they were."""
        cdef bytes start_bytes = start
        cdef uint8_t *start_hex = NULL
        cdef Py_ssize_t start_len = 2 * PyBytes_GET_SIZE(start_bytes)
        cdef IterFrame *frames = NULL
        cdef uint8_t *path = NULL
        cdef Py_ssize_t depth = 0, frames_capacity = 0, path_capacity = 0, at, child_len
        cdef uint32_t r, child
        cdef int cmp
        cdef bint bounded
        cdef const uint8_t *compact
        cdef LeafRecord *leaf
        cdef BranchRecord *b
        cdef ExtensionRecord *e
        self.holders += 1
        try:
            start_hex = <uint8_t *>PyMem_Malloc(start_len + 1)
            if start_hex == NULL:
                raise MemoryError()
            write_nibbles(<const uint8_t *>PyBytes_AS_STRING(start_bytes), PyBytes_GET_SIZE(start_bytes), start_hex)
            if self.root != REF_EMPTY:
                depth = _push_frame(&frames, &frames_capacity, 0, self.root, 0, start_len > 0)
            while depth > 0:
                r = frames[depth - 1].ref
                at = frames[depth - 1].path_len
                bounded = frames[depth - 1].bounded
                if r & KIND_MASK == KIND_BRANCH:
                    b = &self.branches[r >> 2]
                    if frames[depth - 1].next < 0:
                        # The value first: its key is the branch's path, shorter than any below it.
                        frames[depth - 1].next = 0
                        if b.value_size and not (bounded and at < start_len):
                            yield _iteration_item(mode, path, at, self.blob + b.value_at, b.value_size)
                        continue
                    child = self._next_child(&frames[depth - 1], &path, &path_capacity)
                    if child == REF_EMPTY:
                        depth -= 1
                        continue
                    child_len = at + 1
                elif r & KIND_MASK == KIND_EXTENSION:
                    depth -= 1
                    e = &self.extensions[r >> 2]
                    child_len = _append_path(self.blob + e.key_at, e.key_size, &path, &path_capacity, at)
                    child = e.child
                else:
                    depth -= 1
                    leaf = &self.leaves[r >> 2]
                    compact = self.blob + leaf.at + leaf.key_at
                    if not bounded:
                        # Most leaves: the key straight from the path and the leaf's compact key bytes.
                        yield _leaf_item(mode, path, at, compact, leaf.key_size, self.blob + leaf.at + leaf.value_at,
                                         leaf.value_size)
                        continue
                    child_len = _append_path(compact, leaf.key_size, &path, &path_capacity, at)
                    cmp = _compare_nibbles(path, child_len, start_hex, start_len)
                    if cmp < 0 or (cmp == 0 and child_len < start_len):
                        continue            # before start, or a proper prefix of it
                    yield _iteration_item(mode, path, child_len, self.blob + leaf.at + leaf.value_at,
                                          leaf.value_size)
                    continue
                # A branch's child or an extension's: queued unless all of it lies before start.
                if bounded:
                    cmp = _compare_nibbles(path, child_len, start_hex, start_len)
                    if cmp < 0:
                        continue
                    bounded = cmp == 0
                depth = _push_frame(&frames, &frames_capacity, depth, child, child_len, bounded)
        finally:
            self.holders -= 1
            PyMem_Free(start_hex)
            PyMem_Free(frames)
            PyMem_Free(path)

    def iterate_nodes(self, bytes root_hash):
        """(path, hash or None, encoding) of every record in pre-order (geth's NodeIterator order), as
        Trie.node_iter gives them over node objects: path in hex nibbles, None for a record embedded in its
        parent, the root with root_hash whatever its size. The arena must be hashed, with root_hash its root's:
        the iteration holds a share of the records from this call on (not from its first item, as iterate()),
        so that they stay as they were hashed."""
        self.holders += 1
        return self._iterate_nodes(root_hash)

    def _iterate_nodes(self, bytes root_hash):
        # iterate_nodes' generator; it gives the share back when it ends or goes (one never started keeps it:
        # the last holder then clones once for nothing).
        cdef IterFrame *frames = NULL
        cdef uint8_t *path = NULL
        cdef uint8_t *buf = NULL
        cdef Py_ssize_t depth = 0, frames_capacity = 0, path_capacity = 0, at, child_len
        cdef uint32_t r, child
        cdef uint8_t *flags
        cdef ExtensionRecord *e
        cdef ReferenceTable table
        cdef object node_hash
        try:
            buf = <uint8_t *>PyMem_Malloc(max(self.max_record_encoding, PASS_RECORD_SIZE) + 1)
            if buf == NULL:
                raise MemoryError()
            if self.root != REF_EMPTY:
                depth = _push_frame(&frames, &frames_capacity, 0, self.root, 0, False)
            while depth > 0:
                r = frames[depth - 1].ref
                at = frames[depth - 1].path_len
                if frames[depth - 1].next < 0:
                    # First visit: the record itself, before anything below it.
                    frames[depth - 1].next = 0
                    flags = self._flags(r)
                    if depth == 1:
                        node_hash = root_hash
                    elif flags[0] & REC_EMBEDDED:
                        node_hash = None
                    else:
                        node_hash = PyBytes_FromStringAndSize(<const char *>flags + 4, 32)
                    reference_table(self, &table)
                    yield (PyBytes_FromStringAndSize(<const char *>path, at), node_hash,
                           self._encoding(r, &table, buf))
                    continue
                if r & KIND_MASK == KIND_BRANCH:
                    child = self._next_child(&frames[depth - 1], &path, &path_capacity)
                    if child == REF_EMPTY:
                        depth -= 1
                        continue
                    child_len = at + 1
                elif r & KIND_MASK == KIND_EXTENSION and frames[depth - 1].next == 0:
                    frames[depth - 1].next = 1
                    e = &self.extensions[r >> 2]
                    child_len = _append_path(self.blob + e.key_at, e.key_size, &path, &path_capacity, at)
                    child = e.child
                else:
                    depth -= 1              # a leaf, or an extension whose child is done
                    continue
                depth = _push_frame(&frames, &frames_capacity, depth, child, child_len, False)
        finally:
            self.holders -= 1
            PyMem_Free(buf)
            PyMem_Free(frames)
            PyMem_Free(path)

    def update(self, key, value):
        """Set key to value; an empty value deletes the key (as geth's and Trie's update)."""
        cdef Py_buffer kv, vv
        cdef int shared
        get_bytes_view(key, &kv, "key")
        try:
            get_bytes_view(value, &vv, "value")
            try:
                if vv.len == 0:
                    shared = self.remove(<const uint8_t *>kv.buf, kv.len)
                else:
                    shared = self.set(<const uint8_t *>kv.buf, kv.len, <const uint8_t *>vv.buf, vv.len)
                if shared:
                    self._check_idle("update")
            finally:
                PyBuffer_Release(&vv)
        finally:
            PyBuffer_Release(&kv)

    def delete(self, key):
        """Remove key; a key that is not there is no error (as geth's Delete)."""
        cdef Py_buffer kv
        get_bytes_view(key, &kv, "key")
        try:
            if self.remove(<const uint8_t *>kv.buf, kv.len):
                self._check_idle("delete")
        finally:
            PyBuffer_Release(&kv)

    def get(self, key, default=None):
        """The value stored at key, or default."""
        cdef Py_buffer kv
        get_bytes_view(key, &kv, "key")
        try:
            return self.lookup(<const uint8_t *>kv.buf, kv.len, default)
        finally:
            PyBuffer_Release(&kv)

    def hash(self):
        """The root hash (keccak256 of the root node's encoding); EMPTY_ROOT for an empty trie."""
        cdef bytes digest = self.hash_root()
        return _EMPTY_ROOT if digest is None else digest

    def stats(self):
        """Records and bytes held: ``leaves``, ``branches`` and ``extensions`` (slots, dead ones included),
        ``blob_bytes`` and, of those, ``garbage_bytes`` (replaced; freed by the next compaction), and how many
        ``compactions`` ran."""
        return {"leaves": self.leaf_count, "branches": self.branch_count, "extensions": self.extension_count,
                "blob_bytes": self.blob_size, "garbage_bytes": self.garbage_bytes, "compactions": self.compactions}

    # ------------------------------------------------------------------------------------------ commit

    cdef uint8_t *_flags(self, uint32_t ref) noexcept:
        cdef int kind = ref & KIND_MASK
        if kind == KIND_LEAF:
            return &self.leaves[ref >> 2].flags
        if kind == KIND_BRANCH:
            return &self.branches[ref >> 2].flags
        return &self.extensions[ref >> 2].flags

    cdef void _track(self, uint32_t ref, const uint8_t *k, Py_ssize_t pos) noexcept:
        """Record ref, at the hex path k[:pos], is being replaced or changed: if a commit stored it on its own (with
        a hash, or as the root), its path goes on the touched list (Trie._track, for the NodeSet's deleted
        paths). Room was made by _reserve_touched."""
        cdef uint8_t f
        cdef uint32_t length = <uint32_t>pos
        if not self.tracking:
            return
        f = self._flags(ref)[0]
        if not f & REC_STORED or (f & REC_EMBEDDED and pos != 0):
            return
        memcpy(self.touched + self.touched_size, &length, 4)
        memcpy(self.touched + self.touched_size + 4, k, <size_t>pos)
        self.touched_size += 4 + pos

    cdef set take_touched(self):
        """The touched paths since the last call, as bytes; the list starts over."""
        cdef set paths = set()
        cdef Py_ssize_t o = 0
        cdef uint32_t length
        while o < self.touched_size:
            memcpy(&length, self.touched + o, 4)
            paths.add(PyBytes_FromStringAndSize(<const char *>self.touched + o + 4, length))
            o += 4 + length
        self.touched_size = 0
        return paths

    cdef NodeSet collect(self, bytes root_hash, bint collect_leaves):
        """What a commit writes (committer.commit_trie's walk, on records): every record not stored yet, children
        first (lowest slot first), with its hex path, hash and encoding; a record embedded in its parent is not
        stored on its own; the root is stored with root_hash whatever its size. The arena must be hashed. The
        collected records count as stored from here on: the caller calls mark_stored once the write has
        succeeded, unmark_collected if it failed."""
        cdef NodeSet ns = new_node_set(root_hash, collect_leaves)
        cdef uint8_t *buf
        self.committing_count = 0
        if self.root == REF_EMPTY or self._flags(self.root)[0] & REC_STORED:
            return ns
        buf = <uint8_t *>PyMem_Malloc(max(self.max_record_encoding, PASS_RECORD_SIZE) + 1)
        if buf == NULL:
            raise MemoryError()
        try:
            self._reserve_scratch(0)
            self._collect(self.root, self.scratch + self.region, 0, ns, root_hash, buf)
        except BaseException:
            self.unmark_collected()
            raise
        finally:
            PyMem_Free(buf)
        return ns

    cdef int _collect(self, uint32_t ref, uint8_t *path, Py_ssize_t plen, NodeSet ns, bytes root_hash,
                      uint8_t *buf) except -1:
        cdef int kind = ref & KIND_MASK, slot
        cdef uint32_t child, mask, below
        cdef uint8_t *flags
        cdef BranchRecord *b
        cdef ExtensionRecord *e
        cdef LeafRecord *leaf
        cdef Py_ssize_t size, header, nibbles
        cdef ReferenceTable table
        cdef bytes node_hash, blob
        reference_table(self, &table)
        if kind == KIND_BRANCH:
            # The walk goes in key order, the records lie in the order they were made: ask for every child's
            # record at once (its flags and hash share a line; a branch's children are in its first line), so
            # that the misses overlap instead of coming one per child.
            b = &self.branches[ref >> 2]
            mask = b.present & 0xFFFF
            while mask:
                child = b.child[lowest_bit(mask)]
                prefetch_line(reference_field(&table, child))
                if child & KIND_MASK == KIND_BRANCH:
                    prefetch_line(&self.branches[child >> 2])
                mask &= mask - 1
            # Then what those point to: a leaf's encoding (which the blob copy reads), a branch's children.
            mask = b.present & 0xFFFF
            while mask:
                child = b.child[lowest_bit(mask)]
                mask &= mask - 1
                if child & KIND_MASK == KIND_LEAF:
                    prefetch_line(self.blob + self.leaves[child >> 2].at)
                    prefetch_line(self.blob + self.leaves[child >> 2].at + 64)
                elif child & KIND_MASK == KIND_BRANCH:
                    below = self.branches[child >> 2].present & 0xFFFF
                    while below:
                        prefetch_line(reference_field(&table, self.branches[child >> 2].child[lowest_bit(below)]))
                        below &= below - 1
            for slot in range(16):
                child = self.branches[ref >> 2].child[slot]
                if child == REF_EMPTY:
                    continue
                if not (reference_field(&table, child) - 4)[0] & REC_STORED:
                    path[plen] = <uint8_t>slot
                    self._collect(child, path, plen + 1, ns, None, buf)
        elif kind == KIND_EXTENSION:
            child = self.extensions[ref >> 2].child
            if not self._flags(child)[0] & REC_STORED:
                nibbles = self._path(ref, path + plen)
                self._collect(child, path, plen + nibbles, ns, None, buf)
        _grow(<void **>&self.committing, &self.committing_capacity, self.committing_count + 1, sizeof(uint32_t))
        self.committing[self.committing_count] = ref
        self.committing_count += 1
        flags = self._flags(ref)
        # Marked stored now, while its line is in the cache (a second pass over the records of a large trie would
        # miss on each); unmark_collected() takes it back if the commit does not complete.
        flags[0] |= REC_STORED
        if flags[0] & REC_EMBEDDED:
            if root_hash is None:
                return 0                    # embedded in its parent: stored inside the parent's encoding
            node_hash = root_hash
        else:
            node_hash = PyBytes_FromStringAndSize(<const char *>flags + 4, 32)
        add_node(ns, node_hash, self._encoding(ref, &table, buf), path, plen)
        if ns.leaves is not None and kind == KIND_LEAF:
            leaf = &self.leaves[ref >> 2]
            ns.leaves.append((PyBytes_FromStringAndSize(<const char *>self.blob + leaf.at + leaf.value_at,
                                                        leaf.value_size), node_hash))
        return 0

    cdef bytes _encoding(self, uint32_t ref, const ReferenceTable *table, uint8_t *buf):
        """The record's node encoding as bytes (buf: room for the largest record encoding and its header); its
        children must be hashed."""
        cdef LeafRecord *leaf
        cdef Py_ssize_t size, header
        if ref & KIND_MASK == KIND_LEAF:
            leaf = &self.leaves[ref >> 2]
            return PyBytes_FromStringAndSize(<const char *>self.blob + leaf.at, leaf.size)
        if ref & KIND_MASK == KIND_BRANCH:
            size = branch_payload(self.blob, table, &self.branches[ref >> 2], buf + MAX_HEADER_SIZE)
        else:
            size = extension_payload(self.blob, table, &self.extensions[ref >> 2], buf + MAX_HEADER_SIZE)
        header = write_head_before(buf + MAX_HEADER_SIZE, size)
        return PyBytes_FromStringAndSize(<const char *>buf + MAX_HEADER_SIZE - header, size + header)

    cdef int prove_into(self, const uint8_t *key, Py_ssize_t n, list out, set seen, bytes root_hash) except -1:
        """Append to out the proof of key (n bytes) that proof.prove_many makes on node objects: the encodings of
        the records from the root along the key's path, ending at its leaf or where the key leaves the trie;
        the root always, the others unless embedded in their parent; each node once (seen: the hashes out
        holds, root_hash standing for the root's). The arena must be hashed."""
        cdef uint32_t *path
        cdef uint32_t *refs
        cdef Py_ssize_t depth = 0, pos = 0, klen, nibbles, i
        cdef uint32_t r
        cdef const uint8_t *k
        cdef const uint8_t *compact
        cdef uint8_t *flags
        cdef uint8_t *buf
        cdef ReferenceTable table
        cdef bytes node_hash
        while self.busy:
            _sleep(0.0002)      # a pass of a copy sharing these records, in another thread
        self._reserve_scratch(n)
        klen = write_hex(key, n, self.scratch)
        k = self.scratch
        # The path first, with no object made meanwhile: each record on it but the last takes at least one nibble
        # of the key's klen, and buf has room for that many references.
        buf = <uint8_t *>PyMem_Malloc(max(self.max_record_encoding, PASS_RECORD_SIZE, 4 * (klen + 1)) + 1)
        if buf == NULL:
            raise MemoryError()
        path = <uint32_t *>buf
        r = self.root
        while r != REF_EMPTY and pos < klen:
            path[depth] = r
            depth += 1
            if r & KIND_MASK == KIND_LEAF:
                break
            if r & KIND_MASK == KIND_EXTENSION:
                compact = self.blob + self.extensions[r >> 2].key_at
                nibbles = path_nibbles(compact, self.extensions[r >> 2].key_size)
                if match_path(compact, nibbles, k + pos, klen - pos) != nibbles:
                    break
                pos += nibbles
                r = self.extensions[r >> 2].child
                continue
            if k[pos] == TERMINATOR:
                break
            r = self.branches[r >> 2].child[k[pos]]
            pos += 1
        refs = <uint32_t *>PyMem_Malloc(<size_t>(depth + 1) * sizeof(uint32_t))
        if refs == NULL:
            PyMem_Free(buf)
            raise MemoryError()
        memcpy(refs, path, <size_t>depth * sizeof(uint32_t))      # buf is the encodings' room from here on
        try:
            reference_table(self, &table)
            for i in range(depth):
                flags = self._flags(refs[i])
                if i == 0:
                    node_hash = root_hash
                elif flags[0] & REC_EMBEDDED:
                    continue                # it travels inside its parent
                else:
                    node_hash = PyBytes_FromStringAndSize(<const char *>flags + 4, 32)
                if node_hash in seen:
                    continue
                seen.add(node_hash)
                out.append(self._encoding(refs[i], &table, buf))
        finally:
            PyMem_Free(refs)
            PyMem_Free(buf)
        return 0

    cdef void mark_stored(self) noexcept:
        """The records collect() gathered (and marked) are in the database now; from here on, changing one tracks
        its path."""
        if self.committing_count:
            self.tracking = True
        self.committing_count = 0

    cdef void unmark_collected(self) noexcept:
        """The commit of what collect() gathered did not complete (its walk or the write failed): the records are
        not stored after all, and the next commit writes them."""
        cdef Py_ssize_t i
        for i in range(self.committing_count):
            self._flags(self.committing[i])[0] &= ~REC_STORED
        self.committing_count = 0

    # ------------------------------------------------------------------------------------------ node objects

    cdef Node to_nodes(self):
        """The trie as node objects (what Trie keeps when it leaves its arena): the same structure, each node's
        hash where the record has one, dirty where it is not stored. None when empty."""
        if self.root == REF_EMPTY:
            return None
        self._reserve_scratch(0)
        return self._node(self.root, self.scratch + self.region, 0)

    cdef Node _node(self, uint32_t ref, uint8_t *path, Py_ssize_t plen):
        cdef int kind = ref & KIND_MASK, slot
        cdef uint8_t *flags = self._flags(ref)
        cdef Node n
        cdef ValueNode v
        cdef FullNode f
        cdef BranchRecord *b
        cdef LeafRecord *leaf
        cdef Py_ssize_t nibbles
        if kind == KIND_LEAF:
            leaf = &self.leaves[ref >> 2]
            v = ValueNode.new(PyBytes_FromStringAndSize(<const char *>self.blob + leaf.at + leaf.value_at,
                                                        leaf.value_size))
            v.dirty = not flags[0] & REC_STORED
            nibbles = self._path(ref, path + plen)
            n = ShortNode.new(PyBytes_FromStringAndSize(<const char *>path + plen, nibbles), v)
        elif kind == KIND_EXTENSION:
            nibbles = self._path(ref, path + plen)
            n = ShortNode.new(PyBytes_FromStringAndSize(<const char *>path + plen, nibbles),
                              self._node(self.extensions[ref >> 2].child, path, plen + nibbles))
        else:
            f = FullNode.new()
            for slot in range(16):
                b = &self.branches[ref >> 2]
                if b.child[slot] != REF_EMPTY:
                    f.set_child(slot, self._node(b.child[slot], path, plen))
            b = &self.branches[ref >> 2]
            if b.value_size:
                v = ValueNode.new(PyBytes_FromStringAndSize(<const char *>self.blob + b.value_at, b.value_size))
                v.dirty = not flags[0] & REC_STORED
                f.set_child(16, v)
            n = f
        if flags[0] & REC_DONE and not flags[0] & REC_EMBEDDED:
            n.set_hash(flags + 4)
        n.dirty = not flags[0] & REC_STORED
        return n

    # ------------------------------------------------------------------------------------------ compaction

    cdef int _collect_garbage(self) except -1:
        """Replaced records and bytes stay where they are until the arena holds more of them than live ones (of
        blob bytes, or of leaf records): then it hashes what is pending (compaction moves done records only) and
        compacts. Each compaction copies at most as much as was thrown away since the last one, so it costs O(1)
        per byte written, and the arena holds at most about twice what it needs."""
        if not ((self.garbage_bytes >= COMPACT_MIN_GARBAGE and 2 * self.garbage_bytes > self.blob_size) or
                (self.dead_leaves >= COMPACT_MIN_DEAD_LEAVES and 2 * self.dead_leaves > self.leaf_count)):
            return 0
        if self.root != REF_EMPTY and not self.root_hash_valid:
            self._pass()
            if self.holders > 1:
                return 0            # shared since the pass began (it gives up the GIL): compacting would move them
        return self._compact()

    cdef int _compact(self) except -1:
        """Copy the live records into fresh arrays, children before parents and the leaves in key order (what a
        pass over a large trie reads best), then take those arrays over; the old ones go. Only when nothing is
        pending (after a pass): every record keeps its flags and hash. A MemoryError leaves the arena as it was."""
        cdef NodeArena fresh
        cdef Py_ssize_t sizes[4]
        cdef Py_ssize_t capacity
        sizes[0] = sizes[1] = sizes[2] = sizes[3] = 0
        if self.root != REF_EMPTY:
            self._measure(self.root, sizes)
        fresh = NodeArena.__new__(NodeArena)
        _grow_records(<void **>&fresh.leaves, &fresh.leaf_capacity, sizes[0] + 2, sizeof(LeafRecord))
        _grow_records(<void **>&fresh.branches, &fresh.branch_capacity, sizes[1] + 1, sizeof(BranchRecord))
        _grow_records(<void **>&fresh.extensions, &fresh.extension_capacity, sizes[2] + 2, sizeof(ExtensionRecord))
        capacity = 0
        _grow(<void **>&fresh.branch_heights, &capacity, fresh.branch_capacity, sizeof(uint32_t))
        capacity = 0
        _grow(<void **>&fresh.extension_heights, &capacity, fresh.extension_capacity, sizeof(uint32_t))
        _grow(<void **>&fresh.dirty, &fresh.dirty_capacity, fresh.branch_capacity + fresh.extension_capacity,
              sizeof(uint32_t))
        _grow(<void **>&fresh.blob, &fresh.blob_capacity, sizes[3] + 1, 1)
        fresh.root = self._copy_into(fresh, self.root) if self.root != REF_EMPTY else REF_EMPTY
        # Take fresh's arrays; fresh goes with the old ones.
        self.leaves, fresh.leaves = fresh.leaves, self.leaves
        self.branches, fresh.branches = fresh.branches, self.branches
        self.extensions, fresh.extensions = fresh.extensions, self.extensions
        self.branch_heights, fresh.branch_heights = fresh.branch_heights, self.branch_heights
        self.extension_heights, fresh.extension_heights = fresh.extension_heights, self.extension_heights
        self.dirty, fresh.dirty = fresh.dirty, self.dirty
        self.blob, fresh.blob = fresh.blob, self.blob
        self.leaf_count, self.leaf_capacity = fresh.leaf_count, fresh.leaf_capacity
        self.branch_count, self.branch_capacity = fresh.branch_count, fresh.branch_capacity
        self.extension_count, self.extension_capacity = fresh.extension_count, fresh.extension_capacity
        self.dirty_capacity = fresh.dirty_capacity
        self.blob_size, self.blob_capacity = fresh.blob_size, fresh.blob_capacity
        self.root = fresh.root
        self.leaf_mark = self.leaf_count
        self.dirty_count = 0
        self.free_branches = self.free_extensions = NO_RECORD
        self.dead_branches = self.dead_extensions = NO_RECORD
        self.garbage_bytes = 0
        self.dead_leaves = 0
        self.compactions += 1
        return 0

    cdef void _measure(self, uint32_t ref, Py_ssize_t *sizes) noexcept:
        """Add what the subtree at ref holds to sizes: leaves, branches, extensions, blob bytes."""
        cdef BranchRecord *b
        cdef int i
        if ref & KIND_MASK == KIND_LEAF:
            sizes[0] += 1
            sizes[3] += self.leaves[ref >> 2].size
        elif ref & KIND_MASK == KIND_EXTENSION:
            sizes[2] += 1
            sizes[3] += self.extensions[ref >> 2].key_size
            self._measure(self.extensions[ref >> 2].child, sizes)
        else:
            b = &self.branches[ref >> 2]
            sizes[1] += 1
            sizes[3] += b.value_size
            for i in range(16):
                if b.child[i] != REF_EMPTY:
                    self._measure(b.child[i], sizes)

    cdef uint32_t _copy_into(self, NodeArena fresh, uint32_t ref) noexcept:
        """Copy the subtree at ref into fresh (room made by _compact); return its reference there."""
        cdef Py_ssize_t i
        cdef int slot
        cdef LeafRecord *leaf
        cdef ExtensionRecord *e
        cdef BranchRecord *b
        cdef uint32_t child
        if ref & KIND_MASK == KIND_LEAF:
            i = fresh.leaf_count
            fresh.leaf_count += 1
            leaf = &fresh.leaves[i]
            leaf[0] = self.leaves[ref >> 2]
            leaf.at = _copy_bytes(fresh, self.blob + leaf.at, leaf.size)
            return make_ref(i, KIND_LEAF)
        if ref & KIND_MASK == KIND_EXTENSION:
            child = self._copy_into(fresh, self.extensions[ref >> 2].child)
            i = fresh.extension_count
            fresh.extension_count += 1
            e = &fresh.extensions[i]
            e[0] = self.extensions[ref >> 2]
            e.key_at = _copy_bytes(fresh, self.blob + e.key_at, e.key_size)
            e.child = child
            fresh.extension_heights[i] = self.extension_heights[ref >> 2]
            return make_ref(i, KIND_EXTENSION)
        i = fresh.branch_count
        fresh.branch_count += 1
        b = &fresh.branches[i]
        b[0] = self.branches[ref >> 2]
        for slot in range(16):
            if b.child[slot] != REF_EMPTY:
                child = self._copy_into(fresh, b.child[slot])
                b = &fresh.branches[i]
                b.child[slot] = child
        if b.value_size:
            b.value_at = _copy_bytes(fresh, self.blob + b.value_at, b.value_size)
        fresh.branch_heights[i] = self.branch_heights[ref >> 2]
        return make_ref(i, KIND_BRANCH)

    # ------------------------------------------------------------------------------------------ the pass

    cdef int _pass(self) except -1:
        """Hash every record that lost its hash (see _hash_records), without the GIL, on up to hash_threads()
        threads: the pass's arrays are made ready first, so nothing in it can fail, and the arena refuses changes
        meanwhile (busy)."""
        cdef int backend = keccak_backend_number()
        cdef int threads = hash_threads(), t
        cdef Py_ssize_t k, listed = 0
        cdef uint32_t top = 0, h
        cdef PassScratch *s = &_scratch
        global _scratch_busy
        cdef Py_ssize_t bound = max(PASS_CHUNK * PASS_RECORD_SIZE, self.max_record_encoding)
        for k in range(self.dirty_count):
            h = listed_height(self, self.dirty[k])
            if h != DEAD_HEIGHT:
                listed += 1
                if h > top:
                    top = h
        # Threads only for a pass with whole chunks to share out.
        if threads > MAX_PASS_LANES:
            threads = MAX_PASS_LANES
        if threads > 1 and max(listed, self.leaf_count - self.leaf_mark) < PARALLEL_MIN:
            threads = 1
        # The pass's arrays live between passes (one set per process): a fresh trie's pass would otherwise pay the
        # page faults of new ones. A pass that finds them taken (another thread's, running) uses its own.
        if _scratch_busy:
            s = <PassScratch *>PyMem_Malloc(sizeof(PassScratch))
            if s == NULL:
                raise MemoryError()
            memset(s, 0, sizeof(PassScratch))
        try:
            _grow(<void **>&s.counts, &s.counts_capacity, top + 2, sizeof(Py_ssize_t))
            _grow(<void **>&s.order, &s.order_capacity, listed + 1, sizeof(uint32_t))
            for t in range(threads):
                if s.lanes[t] == NULL:
                    s.lanes[t] = <PassLane *>PyMem_Malloc(sizeof(PassLane))
                    if s.lanes[t] == NULL:
                        raise MemoryError()
                    memset(s.lanes[t], 0, sizeof(PassLane))
                _grow(<void **>&s.lanes[t].buffer, &s.lanes[t].buffer_capacity, bound, 1)
            self.busy = True
            if s == &_scratch:
                _scratch_busy = True
            if threads > 1:
                mark_openmp_used()
            try:
                with nogil:
                    self._hash_records(s, top, backend, threads)
            finally:
                self.busy = False
                if s == &_scratch:
                    _scratch_busy = False
        finally:
            if s != &_scratch:
                _free_scratch(s)
                PyMem_Free(s)
        self._root_hash_from_record()
        # Done: the list is empty (each live record left it when it was hashed; a dead one is cleared when its
        # slot is reused), dead records are free for reuse.
        self.dirty_count = 0
        self.leaf_mark = self.leaf_count
        self._free_dead()
        return 0

    cdef void _hash_records(self, PassScratch *s, uint32_t top, int backend, int threads) noexcept nogil:
        """The new leaves where they lie in the blob, in the order they were made, then the listed branches and
        extensions one height at a time (children first), sorted by height from the dense height arrays. With
        threads > 1, each height (the leaves too) is cut into that many stretches, one per thread: the records
        of one height never refer to each other."""
        cdef Py_ssize_t k, start, count, lo, hi
        cdef uint32_t h, ref
        cdef int t
        cdef ArenaView view
        cdef Py_ssize_t *counts = s.counts
        cdef uint32_t *order = s.order
        # A counting sort: counts[h] becomes where height h starts (heights start at 1), then where it ends.
        memset(counts, 0, (top + 2) * sizeof(Py_ssize_t))
        for k in range(self.dirty_count):
            h = listed_height(self, self.dirty[k])
            if h != DEAD_HEIGHT:
                counts[h + 1] += 1
        for h in range(1, top + 1):
            counts[h + 1] += counts[h]
        for k in range(self.dirty_count):
            ref = self.dirty[k]
            h = listed_height(self, ref)
            if h != DEAD_HEIGHT:
                order[counts[h]] = ref
                counts[h] += 1
        arena_view(self, &view)
        # Height 0: the new leaves, hashed where they lie.
        count = self.leaf_count - self.leaf_mark
        if threads > 1 and count >= PARALLEL_MIN:
            for t in prange(threads, num_threads=threads, schedule='static', chunksize=1):
                lo = self.leaf_mark + count * t // threads
                hi = self.leaf_mark + count * (t + 1) // threads
                _hash_leaves(&view, s.lanes[t], lo, hi, backend)
        else:
            _hash_leaves(&view, s.lanes[0], self.leaf_mark, self.leaf_count, backend)
        # Heights 1 and up.
        start = 0
        for h in range(1, top + 1):
            count = counts[h] - start
            if threads > 1 and count >= PARALLEL_MIN:
                for t in prange(threads, num_threads=threads, schedule='static', chunksize=1):
                    lo = start + count * t // threads
                    hi = start + count * (t + 1) // threads
                    _hash_stretch(&view, s.lanes[t], order, lo, hi, backend)
            else:
                _hash_stretch(&view, s.lanes[0], order, start, counts[h], backend)
            start = counts[h]

    cdef void _root_hash_from_record(self) noexcept:
        """The root's hash: its digest, or (an encoding under 32 bytes, kept for a parent it does not have) the
        keccak of that encoding, as geth hashes the root whatever its size."""
        cdef ReferenceTable table
        cdef const uint8_t *r
        reference_table(self, &table)
        r = reference_field(&table, self.root)
        if (r - 4)[0] & REC_EMBEDDED:
            mpt_keccak256(r, (r - 3)[0], self.root_hash)
        else:
            memcpy(self.root_hash, r, 32)
        self.root_hash_valid = True

    cdef void _free_dead(self) noexcept:
        """After a pass the dirty list is empty: the dead branches and extensions can be reused."""
        cdef uint32_t i
        while self.dead_branches != NO_RECORD:
            i = self.dead_branches
            self.dead_branches = self.branches[i].child[0]
            self.branches[i].child[0] = self.free_branches
            self.free_branches = i
        while self.dead_extensions != NO_RECORD:
            i = self.dead_extensions
            self.dead_extensions = self.extensions[i].child
            self.extensions[i].child = self.free_extensions
            self.free_extensions = i


# --------------------------------------------------------------------------------------------------------------
# The pass's helpers, inline.
# --------------------------------------------------------------------------------------------------------------

cdef inline uint32_t listed_height(NodeArena self, uint32_t ref) noexcept nogil:
    if ref & KIND_MASK == KIND_BRANCH:
        return self.branch_heights[ref >> 2]
    return self.extension_heights[ref >> 2]

cdef uint8_t _no_record[64]         # zeroed: the dummy record of kind 0 (flags at 28, hash at 32)


cdef inline void reference_table(NodeArena self, ReferenceTable *t) noexcept nogil:
    t.base[0] = _no_record + 32
    t.shift[0] = 0
    t.base[KIND_LEAF] = (<const uint8_t *>self.leaves) + 32
    t.shift[KIND_LEAF] = 6
    t.base[KIND_EXTENSION] = (<const uint8_t *>self.extensions) + 32
    t.shift[KIND_EXTENSION] = 6
    t.base[KIND_BRANCH] = (<const uint8_t *>self.branches) + 96
    t.shift[KIND_BRANCH] = 7


cdef inline const uint8_t *reference_field(const ReferenceTable *t, uint32_t ref) noexcept nogil:
    """A record's hash_value (its flags 4 bytes before, its embedded size 3), from its reference alone: no branch
    on the kind. For no node, the dummy's (zeroed) field."""
    return t.base[ref & KIND_MASK] + (<size_t>(ref >> 2) << t.shift[ref & KIND_MASK])


cdef inline Py_ssize_t write_reference(const ReferenceTable *t, uint32_t ref, uint8_t *out) noexcept nogil:
    """A child as its parent's encoding holds it: the 33-byte string of its hash, or its own encoding when that is
    under 32 bytes; an empty slot (ref 0) is the empty string. The hash is copied whether the slot is empty or
    not (the bytes after an empty slot's one are written over next), so that only embedded nodes, which tries of
    hashed keys do not have, take a branch that is hard to predict."""
    cdef const uint8_t *field = reference_field(t, ref)
    cdef Py_ssize_t present = ref != REF_EMPTY
    if (field - 4)[0] & REC_EMBEDDED:
        memcpy(out, field, (field - 3)[0])
        return (field - 3)[0]
    # node_enc's write_hash_ref when present, its EMPTY_STRING when not.
    out[0] = <uint8_t>(EMPTY_STRING + 32 * present)
    memcpy(out + 1, field, 32)
    return 1 + 32 * present


cdef inline Py_ssize_t branch_payload(const uint8_t *blob, const ReferenceTable *t, BranchRecord *b,
                                      uint8_t *out) noexcept nogil:
    cdef Py_ssize_t o = 0
    cdef int i
    for i in range(16):
        o += write_reference(t, b.child[i], out + o)
    # Values are never empty: a size of 0 is no value.
    return o + write_branch_value(out + o, blob + b.value_at if b.value_size else NULL, b.value_size)


cdef inline Py_ssize_t extension_payload(const uint8_t *blob, const ReferenceTable *t, ExtensionRecord *e,
                                         uint8_t *out) noexcept nogil:
    cdef Py_ssize_t o = put_string(out, blob + e.key_at, e.key_size)
    return o + write_reference(t, e.child, out + o)



# ---------------------------------------------------------------------------------------------------------------
# The pass's work on one stretch of records, on one thread (without the GIL): what it reads of the arena is in an
# ArenaView, taken before the threads start (nothing moves while the pass runs).
# ---------------------------------------------------------------------------------------------------------------

cdef struct ArenaView:
    LeafRecord *leaves
    BranchRecord *branches
    ExtensionRecord *extensions
    const uint8_t *blob
    ReferenceTable table


cdef inline void arena_view(NodeArena self, ArenaView *v) noexcept nogil:
    v.leaves = self.leaves
    v.branches = self.branches
    v.extensions = self.extensions
    v.blob = self.blob
    reference_table(self, &v.table)


cdef void _hash_leaves(const ArenaView *v, PassLane *lane, Py_ssize_t lo, Py_ssize_t hi, int backend) noexcept nogil:
    """The live leaves of leaves[lo:hi], hashed where their encodings lie, PASS_CHUNK to a Keccak call."""
    cdef PassChunk *c = &lane.chunk
    cdef LeafRecord *leaf
    cdef Py_ssize_t i, m = 0
    for i in range(lo, hi):
        if i + 2 * PASS_PREFETCH_AHEAD < hi:
            prefetch_line(&v.leaves[i + 2 * PASS_PREFETCH_AHEAD])
        leaf = &v.leaves[i]
        if leaf.flags & REC_DEAD:
            continue
        if leaf.size < 32:
            memcpy(leaf.hash_value, v.blob + leaf.at, leaf.size)
            leaf.embedded_size = <uint8_t>leaf.size
            leaf.flags |= REC_DONE | REC_EMBEDDED
            continue
        c.messages[m] = v.blob + leaf.at
        c.lengths[m] = leaf.size
        c.targets[m] = leaf.hash_value
        c.done[m] = &leaf.flags
        m += 1
        if m == PASS_CHUNK:
            _hash_chunk(backend, c, m)
            m = 0
    _hash_chunk(backend, c, m)


cdef void _hash_stretch(const ArenaView *v, PassLane *lane, const uint32_t *order, Py_ssize_t lo, Py_ssize_t hi,
                        int backend) noexcept nogil:
    """The branches and extensions order[lo:hi] (of one height: their children are done), each encoded into the
    lane's buffer and keccaked PASS_CHUNK to a call: a chunk's encodings are still in the caches when Keccak
    reads them, and its records when their digests go back. An encoding under 32 bytes is kept in the record for
    its parent (embedded), not hashed."""
    cdef PassChunk *c = &lane.chunk
    cdef uint8_t *buf = lane.buffer
    cdef Py_ssize_t k, i, m = 0, used = 0, size, header
    cdef uint32_t ref, mask
    cdef BranchRecord *b
    cdef ExtensionRecord *e
    cdef uint8_t *flags
    cdef uint8_t *hv
    cdef uint8_t *payload
    cdef uint8_t *embedded_size
    for k in range(lo, hi):
        # Two stages: the record 2 x PASS_PREFETCH_AHEAD places on, then (its fields arrived meanwhile) the
        # children's references of the one PASS_PREFETCH_AHEAD places on.
        if k + 2 * PASS_PREFETCH_AHEAD < hi:
            ref = order[k + 2 * PASS_PREFETCH_AHEAD]
            if ref & KIND_MASK == KIND_BRANCH:
                prefetch_line(<const char *>&v.branches[ref >> 2])
                prefetch_line(<const char *>&v.branches[ref >> 2] + 64)
            else:
                prefetch_line(<const char *>&v.extensions[ref >> 2])
        if k + PASS_PREFETCH_AHEAD < hi:
            ref = order[k + PASS_PREFETCH_AHEAD]
            if ref & KIND_MASK == KIND_BRANCH:
                b = &v.branches[ref >> 2]
                mask = b.present & 0xFFFF
                while mask:
                    prefetch_line(reference_field(&v.table, b.child[lowest_bit(mask)]))
                    mask &= mask - 1
                if b.value_size:
                    prefetch_line(v.blob + b.value_at)
            else:
                prefetch_line(reference_field(&v.table, v.extensions[ref >> 2].child))
        ref = order[k]
        if ref & KIND_MASK == KIND_BRANCH:
            b = &v.branches[ref >> 2]
            size = 2 * MAX_HEADER_SIZE + 16 * HASH_REF_SIZE + 1 + b.value_size
        else:
            e = &v.extensions[ref >> 2]
            size = 3 * MAX_HEADER_SIZE + e.key_size + HASH_REF_SIZE
        if used + size > lane.buffer_capacity:
            # The buffer holds at least one record's largest encoding (max_record_encoding): Keccak takes what is
            # there, and the buffer starts over.
            for i in range(m):
                c.messages[i] = buf + c.offsets[i]
            _hash_chunk(backend, c, m)
            m = 0
            used = 0
        payload = buf + used + MAX_HEADER_SIZE
        if ref & KIND_MASK == KIND_BRANCH:
            size = branch_payload(v.blob, &v.table, b, payload)
            flags = &b.flags
            hv = b.hash_value
            embedded_size = &b.embedded_size
        else:
            size = extension_payload(v.blob, &v.table, e, payload)
            flags = &e.flags
            hv = e.hash_value
            embedded_size = &e.embedded_size
        header = write_head_before(payload, size)
        size += header
        used += MAX_HEADER_SIZE + size
        if size < 32:
            memcpy(hv, payload - header, <size_t>size)
            embedded_size[0] = <uint8_t>size
            flags[0] = (flags[0] & ~REC_LISTED) | REC_DONE | REC_EMBEDDED
            continue
        c.offsets[m] = <size_t>(payload - header - buf)
        c.lengths[m] = <size_t>size
        c.targets[m] = hv
        c.done[m] = flags
        m += 1
        if m == PASS_CHUNK:
            for i in range(m):
                c.messages[i] = buf + c.offsets[i]
            _hash_chunk(backend, c, m)
            m = 0
            used = 0
    for i in range(m):
        c.messages[i] = buf + c.offsets[i]
    _hash_chunk(backend, c, m)


cdef void _free_scratch(PassScratch *s) noexcept:
    cdef int t
    PyMem_Free(s.counts)
    PyMem_Free(s.order)
    for t in range(MAX_PASS_LANES):
        if s.lanes[t] != NULL:
            PyMem_Free(s.lanes[t].buffer)
            PyMem_Free(s.lanes[t])


cdef inline uint64_t _copy_bytes(NodeArena fresh, const uint8_t *data, Py_ssize_t n) noexcept:
    """Append data[:n] to fresh's blob (room made by _compact); return where it starts there."""
    cdef uint64_t at = <uint64_t>fresh.blob_size
    memcpy(fresh.blob + at, data, <size_t>n)
    fresh.blob_size += n
    return at


cdef int _check_layout() except -1:
    """reference_field's assumptions, checked once at import: record sizes of 64 and 128 bytes, the hash at 32
    (96 in a branch), flags and embedded size 4 and 3 bytes before it."""
    cdef LeafRecord leaf
    cdef BranchRecord branch
    cdef ExtensionRecord extension
    if not (sizeof(LeafRecord) == 64 and sizeof(ExtensionRecord) == 64 and sizeof(BranchRecord) == 128
            and <char *>leaf.hash_value - <char *>&leaf == 32
            and <char *>extension.hash_value - <char *>&extension == 32
            and <char *>branch.hash_value - <char *>&branch == 96
            and <char *>leaf.hash_value - <char *>&leaf.flags == 4
            and <char *>leaf.hash_value - <char *>&leaf.embedded_size == 3
            and <char *>extension.hash_value - <char *>&extension.flags == 4
            and <char *>extension.hash_value - <char *>&extension.embedded_size == 3
            and <char *>branch.hash_value - <char *>&branch.flags == 4
            and <char *>branch.hash_value - <char *>&branch.embedded_size == 3):
        raise ImportError("mpt.ethereum.arena: unexpected record layout on this platform")
    return 0


_check_layout()
