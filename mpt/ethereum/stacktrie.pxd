# cython: language_level=3
"""StackTrie (geth trie/stacktrie.go): root of strictly ascending inserts with O(key length) memory.

The work is done by a C-level builder (``STBuilder``): the open right-most path is a stack of branch frames whose
children are kept as node encodings in one byte buffer per frame, so no Python object exists per node and a whole
build can run without the GIL (mpt.parallel builds shards that way, on several threads).
"""
cimport cython
from libc.stdint cimport uint8_t, uint32_t


cdef enum:
    ST_HASH_LENGTH = 32
    ST_MAX_IDLE_BUFFER = 4 * 1024 * 1024   # a reset builder keeps no buffer larger than this
    ST_REF_MAX = 33                 # a child reference: 0xa0 + hash, or an embedded encoding of < 32 bytes

    # What an item added to the builder is.
    ST_NONE = 0
    ST_LEAF = 1                     # a key and its value
    ST_REF = 2                      # a finished subtree: the reference to its top branch (see st_finish_subtree)

    # st_add's results besides 0 (done) and -1 (out of memory, or on_node failed).
    ST_ERR_ORDER = -2               # the key is not above the previous one
    ST_ERR_PREFIX = -3              # the previous key is a prefix of this one and prefixes are refused

# Called for every finished node of 32 bytes or more and for the root: path (nibbles), hash, encoding.
# Returns 0, or -1 to stop the build (the builder's caller then reports the error it recorded).
ctypedef int (*st_on_node_fn)(void *ctx, const uint8_t *path, size_t path_len, const uint8_t *digest,
                              const uint8_t *blob, size_t blob_len) noexcept nogil


cdef struct STFrame:
    # A branch on the open path, at nibble depth `depth`. Its children are node encodings (or verbatim
    # references) in `buf`; those of 32 bytes or more are hashed together when the branch is finished.
    size_t depth
    uint32_t mask                   # bit i: slot i holds a child
    uint8_t is_ref[16]              # 1: the slot holds a reference to copy verbatim, not an encoding
    size_t off[16]
    size_t len[16]
    uint8_t *buf
    size_t buf_len
    size_t buf_cap
    bint has_value                  # a key ends exactly here (only when prefixes are allowed)
    uint8_t *value
    size_t value_len
    size_t value_cap


cdef struct STBuilder:
    STFrame *frames
    size_t nframes
    size_t frames_cap
    uint8_t *prev                   # nibbles of the pending item's path (the last key added)
    size_t prev_len
    size_t prev_cap
    uint8_t *nib                    # scratch: nibbles of the key being added
    size_t nib_cap
    int pending                     # ST_NONE / ST_LEAF / ST_REF
    const uint8_t *pvalue           # pending leaf's value: borrowed, must stay valid until the next st_add
    size_t pvalue_len
    uint8_t pref[ST_REF_MAX]        # pending reference (ST_REF)
    size_t pref_len
    uint8_t *tmp                    # scratch: a finished branch's encoding
    size_t tmp_len
    size_t tmp_cap
    uint8_t *tmp2                   # scratch: the extension above it
    size_t tmp2_len
    size_t tmp2_cap
    uint8_t *path                   # scratch: paths handed to on_node
    size_t path_cap
    int backend                     # Keccak backend for a branch's children (SIMD lanes)
    bint allow_prefix
    st_on_node_fn on_node
    void *ctx
    uint8_t root[ST_HASH_LENGTH]


# The builder, for mpt.parallel. All return 0 on success, -1 when memory ran out or on_node returned -1.
cdef int st_init(STBuilder *b, int backend) noexcept nogil
cdef void st_free(STBuilder *b) noexcept nogil
cdef void st_reset(STBuilder *b) noexcept nogil
cdef int st_add_key(STBuilder *b, const uint8_t *key, size_t key_len, const uint8_t *value,
                    size_t value_len) noexcept nogil
cdef int st_add_nibbles(STBuilder *b, const uint8_t *nib, size_t n, int kind, const uint8_t *payload,
                        size_t payload_len) noexcept nogil
cdef int st_finish_root(STBuilder *b) noexcept nogil
cdef int st_finish_subtree(STBuilder *b, int *kind, size_t *depth, uint8_t *ref, size_t *ref_len) noexcept nogil
cdef int st_current_backend() except -1


@cython.final
cdef class StackTrie:
    cdef:
        STBuilder b
        bint hashed             # hash() ran: no more updates until reset()
        bint failed             # on_node raised mid-update: the builder is inconsistent until reset()
        bytes root_hash         # set by hash()
        object pending_value    # keeps the builder's borrowed pending value alive
        object on_node          # callback(path, hash, blob) for each finalised node of >= 32 bytes and the root
        object error            # exception raised by on_node inside the builder, re-raised by the caller

    cpdef update(self, object key, object value)
    cpdef bytes hash(self)
    cpdef reset(self)
    cdef int _raise(self, int rc) except -1
    cdef str _previous_key_hex(self)
