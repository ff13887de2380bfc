"""Range proofs: verify_range_proof (geth's VerifyRangeProof)."""
from collections.abc import Iterable

from _typeshed import ReadableBuffer

from mpt.ethereum.proof import _Proof

def verify_range_proof(
    root: ReadableBuffer,
    first_key: ReadableBuffer,
    keys: Iterable[ReadableBuffer],
    values: Iterable[ReadableBuffer],
    proof: _Proof | None,
) -> bool:
    """Check that keys/values are exactly the trie's entries from first_key on; returns "has more"."""
