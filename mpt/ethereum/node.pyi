"""Trie nodes: FullNode (branch), ShortNode (extension or leaf), HashNode, ValueNode; strict decoding."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable
from typing import Callable, Union, final

class Node:
    """Base of the four node kinds. Not instantiated directly."""

    @property
    def hash(self) -> bytes | None:
        """keccak256 of the encoding once hashed; stays None for nodes embedded in their parent."""
    @property
    def dirty(self) -> bool:
        """Created since the last commit (a node read from a database is clean)."""
    def encoding(self) -> bytes:
        """The node's RLP encoding (children of 32 bytes or more are hashed first)."""

@final
class FullNode(Node):
    """A branch: 16 children indexed by nibble plus a value slot."""

    def __init__(self, children: Iterable[Node | None] | None = None) -> None: ...
    @property
    def children(self) -> tuple[Node | None, ...]:
        """The 17 slots as a tuple (None where empty); slot 16 holds a ValueNode or None."""

@final
class ShortNode(Node):
    """An extension (key without terminator, child node) or a leaf (key ending in 16, ValueNode)."""

    def __init__(self, key: bytes, val: Node) -> None: ...
    @property
    def key(self) -> bytes:
        """Hex nibbles; a leaf's key ends with the terminator 16."""
    @property
    def val(self) -> Node:
        """A ValueNode for a leaf, a FullNode or HashNode for an extension."""

@final
class HashNode(Node):
    """A reference by hash to a node not loaded yet."""

    def __init__(self, hash: bytes) -> None: ...
    @property
    def hash(self) -> bytes:
        """The 32-byte hash of the referenced node."""

@final
class ValueNode(Node):
    """A stored value (a leaf's payload or a branch's value slot)."""

    def __init__(self, value: bytes) -> None: ...
    @property
    def value(self) -> bytes:
        """The stored value, never empty."""

def decode_node(
    blob: ReadableBuffer, node_hash: bytes | None = None
) -> Union[FullNode, ShortNode]:
    """Decode an Ethereum trie node from its RLP encoding with geth's strictness; NodeDecodeError for anything
    else. (``mpt.decode_node`` is this one; IAVL nodes are decoded by ``mpt.iavl.decode_node``.)"""

def register_encoder(encode_node: Callable[[Node], bytes]) -> None: ...
