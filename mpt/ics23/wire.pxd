# cython: language_level=3
# The wire verifier of ICS23 proofs: reads a CommitmentProof in place and hashes with our C SHA-256.
from libc.stdint cimport int32_t, uint8_t

cdef enum:
    # Inner ops of one path that the wire verifier handles (a longer path goes to the object verifier, which
    # refuses more than the spec's max_depth, 128 by default; SMT's 256 fit).
    WIRE_MAX_PATH = 256
    # Children of an inner node (child_order) the wire verifier handles; IAVL and Tendermint have 2.
    WIRE_MAX_CHILDREN = 8


cdef struct Slice:
    const uint8_t* p
    Py_ssize_t n


cdef struct WireInner:
    int hash
    Slice prefix
    Slice suffix


cdef struct WireExist:
    Slice key
    Slice value
    bint has_leaf
    int leaf_hash
    int prehash_key
    int prehash_value
    int length
    Slice leaf_prefix
    int npath
    WireInner path[WIRE_MAX_PATH]


cdef class CompiledSpec:
    """A ProofSpec as plain C fields, made once per spec constant (ProofSpec caches it when frozen)."""
    cdef:
        bint supported           # the wire verifier can decide proofs of this spec (else: object path)
        bint is_iavl             # SpecEquals(IavlSpec): validateIavlOps applies
        bint is_tendermint       # SpecEquals(TendermintSpec): validateTendermintOps applies
        int leaf_hash            # leaf_spec fields
        int leaf_prehash_key
        int leaf_prehash_value
        int leaf_length
        bytes leaf_prefix
        int inner_hash           # inner_spec fields
        int nchildren
        int32_t child_order[WIRE_MAX_CHILDREN]
        int child_size
        int min_prefix_length
        int max_prefix_length
        bytes empty_child
        int max_depth            # 0 already read as 128
        int min_depth
        bint prehash_compare     # prehash_key_before_comparison

    @staticmethod
    cdef CompiledSpec new(spec)


# The fast path of mpt.ics23.verify's entry points: True when proof (CommitmentProof bytes) proves the claim
# under root; False means "not decided here". root, key, value: bytes-like (TypeError naming the argument).
cdef bint fast_membership(spec, root, bytes proof, key, value) except -1
cdef bint fast_non_membership(spec, root, bytes proof, key) except -1
