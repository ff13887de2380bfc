# cython: language_level=3
# The proof node set and the encoding checks that mpt.proof's single-key verifier and mpt.rangeproof's range
# verifier share (bodies in proof.pyx).
from libc.stdint cimport int32_t, uint8_t
from libc.string cimport memcmp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE

from mpt.ethereum.hasher cimport KnownEncodings
from mpt.ethereum.node cimport Node
from mpt.core.rlp cimport RLPItem

cdef enum:
    HASH_LENGTH = 32

cdef enum:
    BRANCH_WIDTH = 17
    # Proofs up to this many nodes are looked up without allocating (a path of a 2**32-entry trie has ~9).
    INLINE_PROOF_NODES = 16
    # Above this many nodes a lookup goes through an open-addressing table instead of a scan.
    LINEAR_LOOKUP_MAX = 16
    # Hex keys (2 nibbles a byte + terminator) of keys up to 64 bytes live on the C stack.
    INLINE_HEX_KEY = 129
    # verify_proof reads a list of up to this many nodes in place (no tuple copy); more are hashed without the
    # GIL, when another thread could change a list: those come as a tuple.
    LIST_PROOF_MAX = 64
    # The payload of a branch holding 16 hashes and an empty value.
    FULL_BRANCH_PAYLOAD = 16 * (HASH_LENGTH + 1) + 1


ctypedef struct ProofSet:
    # The supplied node encodings, each hashed once (in one multi-lane Keccak batch) and looked up by that
    # hash: no bytes object per hash, no dict. The pointers look into the bytes objects of a tuple the caller
    # holds for as long as the set lives.
    const uint8_t **data
    size_t *lengths
    uint8_t *digests            # 32 bytes per node
    int32_t *table              # n > LINEAR_LOOKUP_MAX: node indices by digest prefix, -1 where empty
    Py_ssize_t n
    Py_ssize_t mask             # table size - 1
    Py_ssize_t next_index       # proofs usually come root first: the node after the last found is tried first
    KnownEncodings known        # the same nodes by encoding, for the hasher (verify_range_proof); table NULL until built
    const uint8_t *data_inline[INLINE_PROOF_NODES]
    size_t lengths_inline[INLINE_PROOF_NODES]
    uint8_t digests_inline[INLINE_PROOF_NODES * HASH_LENGTH]


ctypedef struct NodeItems:
    # The items of one checked node encoding, in order: 2 for a short node, 17 for a branch.
    RLPItem items[BRANCH_WIDTH]
    Py_ssize_t starts[BRANCH_WIDTH]     # where each item's header starts
    int count


cdef inline bint has_prefix(bytes key, Py_ssize_t pos, bytes prefix):
    cdef Py_ssize_t n = PyBytes_GET_SIZE(prefix)
    if PyBytes_GET_SIZE(key) - pos < n:
        return False
    return memcmp(PyBytes_AS_STRING(key) + pos, PyBytes_AS_STRING(prefix), n) == 0


cdef bytes hex_key(bytes key)
cdef bytes root_bytes(object root)
cdef object get_child(Node n, bytes hexkey, Py_ssize_t *pos, bint skip_resolved)
cdef tuple proof_blobs(object proof)
cdef int proofset_init(ProofSet *ps, object blobs) except -1
cdef void proofset_free(ProofSet *ps) noexcept
cdef Py_ssize_t proofset_find(ProofSet *ps, const uint8_t *wanted) noexcept
cdef str missing_message(const uint8_t *wanted, Py_ssize_t index)
cdef bint scan_node(const uint8_t *data, Py_ssize_t start, Py_ssize_t end, NodeItems *out) noexcept
