"""The Cosmos SDK's simple Merkle map: the multistore commit hash and its ``ics23:simple`` proofs."""
from typing import Mapping, Union

from _typeshed import ReadableBuffer

from mpt.ics23 import CommitmentProof

__all__ = ["map_proof", "map_root"]

def map_root(mapping: Mapping[Union[str, ReadableBuffer], ReadableBuffer]) -> bytes: ...
def map_proof(mapping: Mapping[Union[str, ReadableBuffer], ReadableBuffer],
              key: Union[str, ReadableBuffer]) -> "CommitmentProof": ...
