"""Merkle proofs: prove, verify_proof (range proofs: mpt.rangeproof)."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable

from typing_extensions import TypeAlias

# Range proofs are verified in mpt.ethereum.rangeproof (verify_range_proof here is a deprecated name).
from mpt.ethereum.trie import Trie

# A proof: node encodings in any order (root first is fastest), or a dict whose values are the encodings
# (the dict's keys are ignored: every node is looked up by the hash verification computes itself).
_Proof: TypeAlias = Iterable[ReadableBuffer] | dict[bytes, bytes]

def prove(t: Trie, key: ReadableBuffer) -> list[bytes]:
    """Proof for key in t: node encodings from the root down. Empty for an empty trie."""

def prove_many(t: Trie, keys: Iterable[ReadableBuffer]) -> list[bytes]:
    """The union of the proofs for keys, each node once (a multiproof)."""

def verify_proof(root: ReadableBuffer, key: ReadableBuffer, proof: _Proof) -> bytes | None:
    """The value for key proven by proof under root, or None when the proof shows the key is absent."""
