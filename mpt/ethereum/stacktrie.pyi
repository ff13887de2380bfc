"""StackTrie: builds a trie root from keys given in strictly ascending order, in O(key length) memory."""
from _typeshed import ReadableBuffer
from collections.abc import Callable
from typing import final

from typing_extensions import Self

@final
class StackTrie:
    """Root of a trie from strictly ascending keys, in O(key length) memory.

    ``on_node(path, hash, blob)`` is called for every node of 32 bytes or more as soon as it is final, and
    for the root; ``path`` is the node's position as hex nibbles.
    """

    def __new__(cls, on_node: Callable[[bytes, bytes, bytes], object] | None = None) -> Self: ...
    def update(self, key: ReadableBuffer, value: ReadableBuffer) -> None:
        """Insert key -> value. Keys must be strictly ascending; values must not be empty."""
    def hash(self) -> bytes:
        """The root hash. Finalises the trie: further updates need reset() first."""
    def reset(self) -> None:
        """Forget everything and start a new trie (the callback is kept)."""
    @property
    def root_hash(self) -> bytes:
        """Same as hash()."""
