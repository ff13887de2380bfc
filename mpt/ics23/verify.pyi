"""The ICS23 verifier's entry points: the compiled wire reader's fast path, then the object verifier."""
from typing import Protocol, Union

from _typeshed import ReadableBuffer

from mpt.ics23.messages import CommitmentProof, ExistenceProof, NonExistenceProof, ProofSpec

__all__ = ["calculate_root", "verify_membership", "verify_non_membership"]

class _Serializable(Protocol):
    def SerializeToString(self) -> bytes: ...

_Proof = Union[CommitmentProof, ExistenceProof, NonExistenceProof, ReadableBuffer, _Serializable]

def verify_membership(spec: ProofSpec, root: ReadableBuffer, proof: _Proof, key: ReadableBuffer,
                      value: ReadableBuffer) -> bool: ...
def verify_non_membership(spec: ProofSpec, root: ReadableBuffer, proof: _Proof, key: ReadableBuffer) -> bool: ...
def calculate_root(proof: _Proof) -> bytes: ...
