"""Merkle proofs: prove, verify_proof, verify_range_proof."""
from collections.abc import Iterable

from typing_extensions import TypeAlias

from mpt.trie import Trie

# A proof: node encodings in any order (root first is fastest), or a dict whose values are the encodings
# (the dict's keys are ignored: every node is looked up by the hash verification computes itself).
_Proof: TypeAlias = Iterable[bytes | bytearray | memoryview] | dict[bytes, bytes]

def prove(t: Trie, key: bytes) -> list[bytes]:
    """Proof for key in t: node encodings from the root down. Empty for an empty trie."""

def prove_many(t: Trie, keys: Iterable[bytes]) -> list[bytes]:
    """The union of the proofs for keys, each node once (a multiproof)."""

def verify_proof(root: bytes, key: bytes, proof: _Proof) -> bytes | None:
    """The value for key proven by proof under root, or None when the proof shows the key is absent."""

def verify_range_proof(
    root: bytes, first_key: bytes, keys: Iterable[bytes], values: Iterable[bytes], proof: _Proof | None
) -> bool:
    """Check that keys/values are exactly the trie's entries from first_key on; returns "has more"."""
