"""ICS23 commitment proofs (cosmos/ics23): the messages, the IAVL / Tendermint / SMT specs, and verification.

A Cosmos store proves ``key -> value`` (or ``key`` absent) with a ``CommitmentProof``; ``verify_membership`` and
``verify_non_membership`` check one against a root with the same acceptance as cosmos/ics23's Go
``VerifyMembership`` / ``VerifyNonMembership`` and raise :class:`mpt.errors.ProofError` saying what failed.
Given the proof's wire bytes they verify straight from the bytes (compiled, SHA-256 in C).

The modules, each importing only those before it: ``messages`` (the protobuf messages and their codec),
``specs`` (IAVL_SPEC, TENDERMINT_SPEC, SMT_SPEC), ``wire`` (the compiled reader: the verifier's fast path),
``ops`` (the verifier on message objects), ``verify`` (the entry points: the fast path, then ops), ``abci`` and
``ibc`` (Cosmos queries and IBC proofs on top).
"""
from mpt.ics23.messages import (
    MAX_ENTRIES, MAX_INNER_OPS, BatchEntry, BatchProof, CommitmentProof, CompressedBatchEntry, CompressedBatchProof,
    CompressedExistenceProof, CompressedNonExistenceProof, ExistenceProof, HashOp, InnerOp, InnerSpec, LeafOp,
    LengthOp, NonExistenceProof, ProofSpec,
)
from mpt.ics23.ops import DEFAULT_MAX_DEPTH, decompress, do_hash, is_left_most, is_left_neighbor, is_right_most
from mpt.ics23.specs import IAVL_SPEC, SMT_SPEC, TENDERMINT_SPEC
from mpt.ics23.verify import calculate_root, verify_membership, verify_non_membership

__all__ = [
    "BatchEntry", "BatchProof", "calculate_root", "CommitmentProof", "CompressedBatchEntry", "CompressedBatchProof",
    "CompressedExistenceProof", "CompressedNonExistenceProof", "DEFAULT_MAX_DEPTH", "ExistenceProof", "HashOp",
    "IAVL_SPEC", "InnerOp", "InnerSpec", "LeafOp", "LengthOp", "MAX_ENTRIES", "MAX_INNER_OPS",
    "NonExistenceProof", "ProofSpec", "SMT_SPEC", "TENDERMINT_SPEC", "decompress", "do_hash", "is_left_most",
    "is_left_neighbor", "is_right_most", "verify_membership", "verify_non_membership",
]

# The Cosmos user flows on top of the core: abci_query answers and IBC MerkleProofs.
from mpt.ics23.abci import verify_abci_query  # noqa: E402
from mpt.ics23.ibc import verify_ibc_merkle_proof  # noqa: E402

__all__ += ["verify_abci_query", "verify_ibc_merkle_proof"]
