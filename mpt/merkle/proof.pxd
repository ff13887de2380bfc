# cython: language_level=3
cimport cython
from libc.stdint cimport int64_t


# Not tracked by the cycle collector (no_gc): a proof holds ints, bytes and a tuple of bytes, which can make no
# cycle. ProofsFromByteSlices makes a proof and a tuple per leaf; tracked, they set off collections that took 30%
# of MerkleProof's time (1K leaves: 185 against 130 us with the collector off).
@cython.final
@cython.no_gc
cdef class Proof:
    cdef:
        readonly int64_t total          # number of leaves of the tree
        readonly int64_t index          # position of the proven leaf
        readonly bytes leaf_hash        # sha256(0x00 || leaf)
        readonly tuple aunts            # sibling hashes (32-byte bytes), leaf level first

    @staticmethod
    cdef Proof new(int64_t total, int64_t index, bytes leaf_hash, tuple aunts)

    cdef int _root_into(self, unsigned char* out) except -1


# (root, proofs) of items: every proof, or only the one of index `only` (>= 0).
cdef tuple proofs_of(items, Py_ssize_t only)

# CometBFT's RPC JSON fields, refused with ProofError: an object (or JSON text), an int64 (decimal string),
# base64 bytes, bare hex bytes.
cdef object json_object(obj, str what)
cdef object json_int64(value, str what)
cdef bytes json_base64(value, str what)
cdef bytes json_hex(value, str what)
