"""Commit: dirty nodes -> NodeSet."""
from typing import final

from typing_extensions import Self

@final
class NodeSet:
    """What one commit wrote: ``nodes`` (path -> (hash, blob)), ``deleted`` paths, optional ``leaves``."""

    def __new__(
        cls,
        root: bytes,
        nodes: dict[bytes, tuple[bytes, bytes]],
        deleted: set[bytes],
        leaves: list[tuple[bytes, bytes]] | None = None,
    ) -> Self: ...
    @property
    def nodes(self) -> dict[bytes, tuple[bytes, bytes]]:
        """Hex path -> (hash, blob) of every stored node written by the commit."""
    @property
    def deleted(self) -> set[bytes]:
        """Hex paths of formerly stored nodes that no longer exist there."""
    @property
    def leaves(self) -> list[tuple[bytes, bytes]] | None:
        """(value, hash of the leaf node) pairs when collected, else None."""
    @property
    def root(self) -> bytes:
        """The committed root hash."""
    @property
    def size(self) -> int:
        """Bytes of node blobs written."""
    def __len__(self) -> int: ...
