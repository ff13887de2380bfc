"""ICS23 proofs from an IAVL tree, byte for byte as cosmos/iavl's proof_ics23.go makes them."""
from _typeshed import ReadableBuffer
from mpt.iavl.tree import MutableTree
from mpt.ics23 import CommitmentProof

def membership_proof(tree: MutableTree, key: ReadableBuffer, version: int | None = None) -> CommitmentProof:
    """Go iavl's GetMembershipProof(key) in the working tree (None) or saved version ``version``."""
def non_membership_proof(tree: MutableTree, key: ReadableBuffer, version: int | None = None) -> CommitmentProof:
    """Go iavl's GetNonMembershipProof(key)."""
def membership_proof_bytes(tree: MutableTree, key: ReadableBuffer, version: int | None = None) -> bytes:
    """The wire form (CommitmentProof.Marshal()) of membership_proof, encoded in one pass."""
def non_membership_proof_bytes(tree: MutableTree, key: ReadableBuffer, version: int | None = None) -> bytes:
    """The wire form of non_membership_proof, encoded in one pass."""
