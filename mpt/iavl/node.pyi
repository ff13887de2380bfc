"""IAVL node codecs: the legacy (iavl v0.x), v1 and stream-vbyte (cosmos/iavl PR #673) formats."""
from _typeshed import ReadableBuffer
from typing import Literal, final

from mpt.core.rlp import WriteBuffer

Format = Literal["legacy", "v1", "vbyte", 0, 1, 2]  # an int is an index into FORMATS
FORMATS: tuple[str, str, str]

class Node:
    """An IAVL node; build one with LeafNode / InnerNode, read one with decode_node."""

    @property
    def key(self) -> bytes: ...
    @property
    def height(self) -> int:
        """subtreeHeight: 0 for a leaf."""
    @property
    def size(self) -> int:
        """Number of leaves below (1 for a leaf)."""
    @property
    def version(self) -> int: ...
    @property
    def nonce(self) -> int:
        """v1 NodeKey nonce; 0 for a node without one (legacy)."""
    @property
    def value(self) -> bytes | None:
        """A leaf's value (None for inner nodes)."""
    @property
    def is_leaf(self) -> bool: ...
    @property
    def hash(self) -> bytes:
        """The 32-byte node hash (the same in every format)."""
    @property
    def node_key(self) -> bytes | None:
        """The 12-byte v1 NodeKey (version u64 BE || nonce u32 BE), None when nonce is 0."""
    @property
    def left_hash(self) -> bytes | None: ...
    @property
    def right_hash(self) -> bytes | None: ...
    @property
    def left_node_key(self) -> bytes | None:
        """How v1 references the left child: 12-byte NodeKey, or 32-byte hash of a legacy child."""
    @property
    def right_node_key(self) -> bytes | None: ...
    def to_bytes(self, format: Format = "v1") -> bytes: ...
    def encode(self, buf: WriteBuffer, format: Format = "v1") -> int:
        """Append the encoding to buf; returns the number of bytes written."""
    def encoded_size(self, format: Format = "v1") -> int:
        """len(to_bytes(format)), computed without encoding or allocating."""

@final
class LeafNode(Node):
    def __init__(self, key: ReadableBuffer, value: ReadableBuffer, version: int, nonce: int = 0) -> None: ...

@final
class InnerNode(Node):
    def __init__(
        self,
        key: ReadableBuffer,
        height: int,
        size: int,
        version: int,
        left_hash: ReadableBuffer | None = None,
        right_hash: ReadableBuffer | None = None,
        *,
        left_node_key: ReadableBuffer | None = None,
        right_node_key: ReadableBuffer | None = None,
        hash: ReadableBuffer | None = None,
        nonce: int = 0,
    ) -> None: ...

def decode_node(data: ReadableBuffer, format: Format = "v1", node_key: ReadableBuffer | None = None) -> Node:
    """Strict decoder; NodeDecodeError (with .offset) on bad input. v1 needs the 12-byte node_key."""

def node_key(version: int, nonce: int) -> bytes:
    """The v1 NodeKey bytes: version u64 big-endian || nonce u32 big-endian (TypeError for a non-integer)."""
