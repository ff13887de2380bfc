"""Hashing nodes, with pooled hashers whose buffers stay grown."""
from typing import Iterable, List, Optional, final

from typing_extensions import Self

from mpt.ethereum.node import Node

@final
class Hasher:
    """Owns a WriteBuffer and scratch space; get one from a HasherPool."""

    def __init__(self) -> None: ...
    def hash(self, node: Node) -> bytes:
        """Hash node as a root (always hashed); caches hashes in the subtree."""
    def hash_by_levels(self, node: Node, threads: int = 0) -> bytes:
        """Hash node as a root through the batched path whatever its size (for tests and benchmarks)."""
    @property
    def buffer_capacity(self) -> int:
        """Current capacity of the hasher's buffer (kept while pooled, up to 4 MiB)."""

@final
class HasherPool:
    """Hands out Hashers and takes them back with their grown buffers intact."""

    def __new__(cls, max_idle: int = 16) -> Self: ...
    def get(self) -> Hasher:
        """Take a hasher (reused when one is idle)."""
    def put(self, h: Hasher) -> None:
        """Give a hasher back."""
    @property
    def idle(self) -> int:
        """Number of hashers waiting for reuse."""

def keccak256_many(messages: Iterable[bytes], backend: Optional[str] = None) -> List[bytes]:
    """Keccak-256 of each bytes object in messages, hashed together on the backend's lanes."""

def get_default_pool() -> HasherPool:
    """The process-wide pool that Trie, StackTrie and friends draw their hashers from."""

def encode_node(node: Node) -> bytes:
    """The RLP encoding of node, hashing its large children first."""
