"""Iteration over a trie: key/value pairs in key order and nodes in pre-order."""
from collections.abc import Iterator
from typing import Literal, overload

from mpt.ethereum.trie import Trie

@overload
def iter_items(t: Trie, start: bytes, mode: Literal[0]) -> Iterator[tuple[bytes, bytes]]: ...
@overload
def iter_items(t: Trie, start: bytes, mode: Literal[1, 2]) -> Iterator[bytes]: ...
@overload
def iter_items(t: Trie, start: bytes, mode: int) -> Iterator[tuple[bytes, bytes]] | Iterator[bytes]: ...
def iter_nodes(t: Trie) -> Iterator[tuple[bytes, bytes | None, bytes]]:
    """Yield (path, hash or None, blob) for every node in pre-order; the trie must be hashed."""
