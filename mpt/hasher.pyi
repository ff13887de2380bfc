"""Hashing nodes, with pooled hashers whose buffers stay grown."""
from typing import final

from typing_extensions import Self

from mpt.node import Node

@final
class Hasher:
    """Owns a WriteBuffer and scratch space; get one from a HasherPool."""

    def __init__(self) -> None: ...
    def hash(self, node: Node) -> bytes:
        """Hash node as a root (always hashed); caches hashes in the subtree."""
    def hash_by_levels(self, node: Node, threads: int = 0) -> bytes:
        """Hash node as a root through the level-parallel path whatever its size (for tests and benchmarks)."""
    @property
    def buffer_capacity(self) -> int:
        """Current capacity of the hasher's buffer (it never shrinks while pooled)."""

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

def set_hash_threads(n: int) -> int:
    """Set the number of hashing threads (1 = always hash on the calling thread). Returns the old value."""

def get_default_pool() -> HasherPool:
    """The process-wide pool that Trie, StackTrie and friends draw their hashers from."""

def encode_node(node: Node) -> bytes:
    """The RLP encoding of node, hashing its large children first."""
