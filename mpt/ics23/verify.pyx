# cython: language_level=3
"""The ICS23 verifier's entry points: ``verify_membership``, ``verify_non_membership`` and ``calculate_root`` (what
``mpt.ics23`` exports). Each tries the compiled wire reader first (mpt.ics23.wire: a proof it proves from the wire
bytes is accepted there, a message built in Python is encoded for it) and leaves everything else to the object
verifier (mpt.ics23.ops), which decides on the decoded messages and says why it refuses. Compiled, so that the
fast path costs one call."""
from mpt.ics23.wire cimport fast_membership, fast_non_membership

from mpt.ics23.messages import CommitmentProof, ExistenceProof, NonExistenceProof, commitment_bytes, encode_varint
from mpt.ics23.ops import verify_membership_objects, verify_non_membership_objects
from mpt.ics23.wire import calculate_root_fast

__all__ = ["calculate_root", "verify_membership", "verify_non_membership"]


cdef tuple _MESSAGES = (CommitmentProof, ExistenceProof, NonExistenceProof)


cdef object _proof_arg(proof):
    """proof as bytes or one of our messages: any other bytes-like object, or a protobuf message with
    SerializeToString(), becomes its bytes (TypeError naming proof for anything else)."""
    if type(proof) is not bytes and not isinstance(proof, _MESSAGES):
        return commitment_bytes(proof, "proof")
    return proof


cdef object _wire_form(proof):
    """proof (bytes or one of our messages) as CommitmentProof wire bytes, so that the wire reader decides a proof
    built in Python too (encoding a 10-op proof costs less than the object verifier's checks); None for a batch
    or a message that cannot be encoded (its fields changed to wrong types), which the object verifier reports."""
    if type(proof) is bytes:
        return proof
    if isinstance(proof, CommitmentProof) and proof.exist is None and proof.nonexist is None:
        return None
    try:
        raw = proof.to_bytes()
    except (TypeError, AttributeError, ValueError):
        return None
    if isinstance(proof, ExistenceProof):
        return b"\x0a" + encode_varint(len(raw)) + raw
    if isinstance(proof, NonExistenceProof):
        return b"\x12" + encode_varint(len(raw)) + raw
    return raw


def verify_membership(spec, root, proof, key, value):
    """True if proof proves key -> value under root in a tree of spec's form; ProofError saying why otherwise.

    spec: a ProofSpec (IAVL_SPEC, TENDERMINT_SPEC, SMT_SPEC or your own); root, key, value: bytes-like; proof: a
    CommitmentProof, its protobuf bytes (any bytes-like object), or a protobuf message with SerializeToString().
    Same acceptance as cosmos/ics23's Go VerifyMembership; batch and compressed proofs are searched for key.
    """
    if type(proof) is bytes:
        data = proof
    else:
        proof = _proof_arg(proof)
        data = _wire_form(proof)
    if data is not None and fast_membership(spec, root, <bytes>data, key, value):
        return True
    return verify_membership_objects(spec, root, proof, key, value)


def verify_non_membership(spec, root, proof, key):
    """True if proof proves that key is absent under root in a tree of spec's form; ProofError saying why
    otherwise (same acceptance as cosmos/ics23's Go VerifyNonMembership). Arguments as verify_membership's."""
    if type(proof) is bytes:
        data = proof
    else:
        proof = _proof_arg(proof)
        data = _wire_form(proof)
    if data is not None and fast_non_membership(spec, root, <bytes>data, key):
        return True
    return verify_non_membership_objects(spec, root, proof, key)


def calculate_root(proof):
    """The root a proof leads to (Go CommitmentProof.Calculate: the first existence proof inside; of a
    non-existence proof its left side, else its right), checked against no spec. proof: a CommitmentProof, an
    ExistenceProof or NonExistenceProof, or protobuf bytes (read in place when canonical and SHA-256)."""
    proof = _proof_arg(proof)
    if type(proof) is bytes:
        root = calculate_root_fast(proof)
        if root is not None:
            return root
        proof = CommitmentProof.from_bytes(proof)
    return proof.calculate_root()
