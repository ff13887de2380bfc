"""NodeArena: a trie's nodes as records in flat arrays, where a fresh Trie keeps them."""
from collections.abc import Generator
from typing import Any, TypeVar, final

from _typeshed import ReadableBuffer

_D = TypeVar("_D")

__all__ = ["NodeArena"]

@final
class NodeArena:
    """A Merkle Patricia Trie held as records in flat arrays, in memory. Not part of the public API."""

    def __len__(self) -> int: ...
    def update(self, key: ReadableBuffer, value: ReadableBuffer) -> None:
        """Set key to value; an empty value deletes the key."""
    def delete(self, key: ReadableBuffer) -> None:
        """Remove key; a key that is not there is no error."""
    def get(self, key: ReadableBuffer, default: _D | None = None) -> bytes | _D | None:
        """The value stored at key, or default."""
    def hash(self) -> bytes:
        """The root hash; EMPTY_ROOT for an empty trie."""
    def iterate(self, start: bytes, mode: int) -> Generator[Any, None, None]:
        """(key, value) pairs (mode 0), keys (1) or values (2) in key order from the first key >= start, over the
        records as they are when the first is asked for."""
    def iterate_nodes(self, root_hash: bytes) -> Generator[tuple[bytes, bytes | None, bytes], None, None]:
        """(path, hash or None, encoding) of every record in pre-order; the arena must be hashed."""
    def stats(self) -> dict[str, int]:
        """Records and bytes held: leaves, branches, extensions, blob_bytes, garbage_bytes, compactions."""
