# cython: language_level=3
"""A trie's nodes as records in flat arrays, where a fresh Trie keeps them: what the hashing pass can hash without
chasing Python objects. Bodies in arena.pyx; the measurements are in docs/contributing/performance_notes.md
("the node arena", session 16)."""
cimport cython
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from mpt.ethereum.committer cimport NodeSet
from mpt.ethereum.node cimport Node
from mpt.core.rlp cimport MAX_HEADER_SIZE
from mpt.ethereum.node_enc cimport HASH_REF_SIZE


# A reference to a record: its index in its kind's array, shifted left by two, with the kind in the low bits, so
# that a parent knows what a child is without reading it. 0 is no node.
cdef enum:
    REF_EMPTY = 0
    KIND_LEAF = 1
    KIND_EXTENSION = 2
    KIND_BRANCH = 3
    KIND_MASK = 3
    # Records of one kind an arena holds at most (a reference keeps 30 bits for the index).
    MAX_RECORDS = 1 << 30


# Record flags.
cdef enum:
    REC_DONE = 1            # the reference is computed: hash_value holds the hash, or the encoding (REC_EMBEDDED)
    REC_EMBEDDED = 2        # the encoding is under 32 bytes: a parent embeds it, hash_value holds it
    REC_LISTED = 4          # a branch or extension on the dirty list, waiting for the next pass
    REC_DEAD = 8            # replaced: nothing refers to it any more
    REC_STORED = 16         # written by a commit and not changed since (a Node's dirty flag, inverted)


# Every record ends the same way: flags, the size of an embedded encoding, two bytes of padding, then the 32 bytes
# of its hash (or of its encoding, when embedded). A parent's encoding then finds any child's reference from the
# child's reference number alone (reference_field in arena.pyx), and its flags four bytes before it, in the
# same cache line (records start on 64-byte boundaries).

# A leaf: its whole RLP encoding written once, when it is made, into the arena's byte blob (compact key and value
# inside it), so that the pass hashes it where it lies. 64 bytes.
cdef struct LeafRecord:
    uint64_t at             # blob offset of the encoding
    uint32_t size           # bytes of the encoding
    uint32_t key_at         # the compact key: offset within the encoding, and size
    uint32_t key_size
    uint32_t value_at       # the value: offset within the encoding, and size (never 0)
    uint32_t value_size
    uint8_t flags
    uint8_t embedded_size   # bytes of hash_value that hold the encoding when REC_EMBEDDED
    uint8_t pad[2]
    uint8_t hash_value[32]


# A branch: 16 child references and an optional value (bytes in the blob). 128 bytes.
cdef struct BranchRecord:
    uint32_t child[16]
    uint64_t value_at       # blob offset of the value stored at the branch (slot 16)
    uint32_t value_size     # 0: no value
    uint32_t present        # bit i set exactly when child[i] is set, bit 16 when there is a value
    uint8_t pad[12]
    uint8_t flags
    uint8_t embedded_size
    uint8_t pad2[2]
    uint8_t hash_value[32]


# An extension: a compact key (in the blob) and one child, a branch. 64 bytes.
cdef struct ExtensionRecord:
    uint64_t key_at         # blob offset of the compact key
    uint32_t key_size
    uint32_t child
    uint8_t pad[12]
    uint8_t flags
    uint8_t embedded_size
    uint8_t pad2[2]
    uint8_t hash_value[32]


cdef enum:
    # Records the pass asks for ahead of the one it encodes: the record, then what it points to.
    PASS_PREFETCH_AHEAD = 8
    # Encodings hashed in one Keccak call: enough to fill every lane many times over (each call ends with a few
    # steps on idle lanes: 1,024 to a call took 0.02 less of Keccak's time than 256 at 10,000 accounts on
    # AVX-512), few enough that they are still in the caches when Keccak reads them (about 550 KB of branches).
    PASS_CHUNK = 1024
    # What a chunk's encodings take in the level buffer for a branch of hashed children and no value, and the
    # headers' room: the buffer holds PASS_CHUNK of them, or one record's largest encoding if that is more.
    PASS_RECORD_SIZE = 2 * MAX_HEADER_SIZE + 16 * HASH_REF_SIZE + 1
    # The most threads a pass runs on (set_hash_threads may ask for more), and the fewest records of one height (or
    # new leaves) worth sharing out: 512 a thread of two.
    MAX_PASS_LANES = 16
    PARALLEL_MIN = 1024
    # An arena compacts once it holds more replaced bytes than live ones, and at least this many, or more dead leaf
    # records than live ones, and at least this many.
    COMPACT_MIN_GARBAGE = 1 << 14
    COMPACT_MIN_DEAD_LEAVES = 256


cdef struct IterFrame:
    # A record on an iteration's path (NodeArena.iterate): its path's length in nibbles, whether that path is
    # still start's own prefix, and for a branch the next slot to visit (-1: its value first).
    uint32_t ref
    Py_ssize_t path_len
    int next
    bint bounded


cdef struct ReferenceTable:
    # Per kind of reference (its low two bits): where the first record's hash_value lies, and log2 of the record
    # size. Kind 0 (no node) points at a zeroed dummy record.
    const uint8_t *base[4]
    int shift[4]


cdef struct PassChunk:
    # PASS_CHUNK encodings on their way through Keccak: where each lies (offset in the level buffer, then
    # address), its size, where its digest goes, the flags that say it is done.
    size_t offsets[PASS_CHUNK]
    const uint8_t *messages[PASS_CHUNK]
    size_t lengths[PASS_CHUNK]
    uint8_t *targets[PASS_CHUNK]
    uint8_t *done[PASS_CHUNK]
    uint8_t digests[32 * PASS_CHUNK]


cdef struct PassLane:
    # One thread's share of a pass: its chunk and the level buffer its encodings go into.
    PassChunk chunk
    uint8_t *buffer
    Py_ssize_t buffer_capacity


cdef struct PassScratch:
    Py_ssize_t *counts
    Py_ssize_t counts_capacity
    uint32_t *order
    Py_ssize_t order_capacity
    PassLane *lanes[MAX_PASS_LANES]     # one per thread, made when first needed


@cython.final
cdef class NodeArena:
    cdef:
        LeafRecord *leaves
        Py_ssize_t leaf_count, leaf_capacity
        # Leaves from leaf_mark on were made since the last pass: the pass hashes them in the order they were made,
        # which is the order of their records and of their encodings in the blob.
        Py_ssize_t leaf_mark
        BranchRecord *branches
        Py_ssize_t branch_count, branch_capacity
        ExtensionRecord *extensions
        Py_ssize_t extension_count, extension_capacity
        # Heights of the branches and extensions, in arrays of their own: the pass sorts its dirty records by
        # height reading these dense arrays, not the records. A record's height is above each child's.
        uint32_t *branch_heights
        uint32_t *extension_heights
        # Dead branch and extension records, chained through their first child slot; reused only after the next
        # pass (until then the dirty list may still name them). UINT32 max: none.
        uint32_t free_branches, free_extensions, dead_branches, dead_extensions
        # References of the branches and extensions that lost their hash since the last pass (REC_LISTED), each
        # once; room for every record, grown with the record arrays, so listing never fails.
        uint32_t *dirty
        Py_ssize_t dirty_count, dirty_capacity
        uint8_t *blob
        Py_ssize_t blob_size, blob_capacity
        uint32_t root
        uint8_t root_hash[32]
        bint root_hash_valid
        Py_ssize_t count                    # keys held
        int key_delta                       # what the last _insert or _delete did to count (+1, -1 or 0)
        Py_ssize_t max_leaf_size            # the largest leaf encoding made: bounds what a split or merge writes
        # The largest encoding a branch or extension made so far can have (their values and keys): the pass's
        # level buffer holds at least one.
        Py_ssize_t max_record_encoding
        bint busy                           # a pass runs without the GIL: changes are refused meanwhile
        # Who holds this arena: its maker, the copies of a Trie that share it, the iterations running over it. A
        # Trie that changes it while others hold it takes a clone() first (copy-on-write, the records copied
        # once); set() and remove() refuse to change it while shared.
        Py_ssize_t holders
        # The thread whose Trie.commit() is collecting and writing these records (0: none). They are marked stored
        # during the walk and unmarked if the write fails: a trie sharing them waits before it copies them or
        # makes nodes of them (wait_quiet).
        unsigned long commit_thread
        Py_ssize_t garbage_bytes            # blob bytes of replaced records and values (compaction frees them)
        Py_ssize_t dead_leaves              # leaf records replaced since the last compaction
        Py_ssize_t compactions              # how many ran (stats())
        uint32_t max_height                 # no record is higher (an upper bound: heights only grow)
        # After a commit: the hex paths of stored records that an update or delete replaced or changed since (a
        # Trie's _touched, for the next NodeSet's deleted paths), each as a 4-byte length and its nibbles.
        bint tracking
        uint8_t *touched
        Py_ssize_t touched_size, touched_capacity
        # The records a commit collected, marked stored once the write has succeeded (mark_stored).
        uint32_t *committing
        Py_ssize_t committing_count, committing_capacity
        # Three regions of `region` bytes each: the key in hex nibbles, a record's path in nibbles, a path being
        # built (a merge); region is at least twice the longest key's bytes plus 2.
        uint8_t *scratch
        Py_ssize_t region

    cdef int _reserve(self, Py_ssize_t blob_bytes) except -1
    cdef int _reserve_scratch(self, Py_ssize_t key_bytes) except -1
    cdef uint32_t _new_leaf(self, const uint8_t *hexkey, Py_ssize_t n, const uint8_t *value,
                            Py_ssize_t value_size) noexcept
    cdef void _shorten_leaf(self, uint32_t ref, const uint8_t *hexkey, Py_ssize_t n) noexcept
    cdef uint32_t _new_branch(self) noexcept
    cdef uint32_t _moved(self, uint32_t ref, const uint8_t *hexkey, Py_ssize_t n) noexcept
    cdef uint32_t _new_extension(self, const uint8_t *hexkey, Py_ssize_t n, uint32_t child) noexcept
    cdef void _set_value(self, BranchRecord *b, const uint8_t *value, Py_ssize_t value_size) noexcept
    cdef void _kill(self, uint32_t ref) noexcept
    cdef void _dirty(self, uint32_t ref, uint32_t height) noexcept
    cdef uint32_t height_of(self, uint32_t ref) noexcept
    cdef Py_ssize_t _path(self, uint32_t ref, uint8_t *out) noexcept
    cdef uint32_t _insert(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, Py_ssize_t klen,
                          const uint8_t *value, Py_ssize_t value_size, bint *changed) noexcept
    cdef uint32_t _split_start(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, bint *changed,
                               Py_ssize_t *path_size) noexcept
    cdef uint32_t _split(self, uint32_t branch, uint32_t height, const uint8_t *k, Py_ssize_t pos,
                         Py_ssize_t matchlen, Py_ssize_t klen, const uint8_t *value, Py_ssize_t value_size) noexcept
    cdef uint32_t _delete(self, uint32_t n, const uint8_t *k, Py_ssize_t pos, Py_ssize_t klen,
                          bint *changed) noexcept
    cdef int _check_idle(self, str op) except -1
    cdef int wait_quiet(self) except -1
    cdef NodeArena clone(self)
    cdef uint32_t _next_child(self, IterFrame *f, uint8_t **path, Py_ssize_t *path_capacity) except? 0
    # What a Trie holding its nodes in an arena calls (keys as the trie stores them, values never empty):
    cdef int set(self, const uint8_t *key, Py_ssize_t n, const uint8_t *value, Py_ssize_t value_size) except -1
    cdef int remove(self, const uint8_t *key, Py_ssize_t n) except -1
    cdef object lookup(self, const uint8_t *key, Py_ssize_t n, object default)
    cdef bytes hash_root(self)
    cdef int _reserve_touched(self, Py_ssize_t key_bytes) except -1
    cdef bytes _encoding(self, uint32_t ref, const ReferenceTable *table, uint8_t *buf)
    cdef int prove_into(self, const uint8_t *key, Py_ssize_t n, list out, set seen, bytes root_hash) except -1
    cdef NodeSet collect(self, bytes root_hash, bint collect_leaves)
    cdef void mark_stored(self) noexcept
    cdef void unmark_collected(self) noexcept
    cdef set take_touched(self)
    cdef Node to_nodes(self)
    cdef Node _node(self, uint32_t ref, uint8_t *path, Py_ssize_t plen)
    cdef int _collect(self, uint32_t ref, uint8_t *path, Py_ssize_t plen, NodeSet ns, bytes root_hash,
                      uint8_t *buf) except -1
    cdef uint8_t *_flags(self, uint32_t ref) noexcept
    cdef void _track(self, uint32_t ref, const uint8_t *k, Py_ssize_t pos) noexcept
    cdef int _collect_garbage(self) except -1
    cdef int _compact(self) except -1
    cdef void _measure(self, uint32_t ref, Py_ssize_t *sizes) noexcept
    cdef uint32_t _copy_into(self, NodeArena fresh, uint32_t ref) noexcept
    cdef int _pass(self) except -1
    cdef void _hash_records(self, PassScratch *s, uint32_t top, int backend, int threads) noexcept nogil
    cdef void _root_hash_from_record(self) noexcept
    cdef void _free_dead(self) noexcept
    cdef void _branch_put(self, uint32_t branch, const uint8_t *hexkey, Py_ssize_t n, const uint8_t *value,
                          Py_ssize_t value_size) noexcept
