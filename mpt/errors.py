"""Domain exceptions of mpt. Every error the library raises on bad data derives from MptError."""
from typing import Optional


class MptError(Exception):
    """Base class of every mpt domain error."""


class RLPDecodeError(MptError, ValueError):
    """Bytes that are not canonical RLP (the message names the offset)."""


class NodeDecodeError(MptError, ValueError):
    """Bytes that are not a valid trie node encoding."""


class MissingNodeError(MptError, KeyError):
    """A node referenced by hash is not in the node database."""

    def __init__(self, node_hash: Optional[bytes], path: bytes = b"", message: Optional[str] = None) -> None:
        self.node_hash = node_hash
        self.path = path
        if message is None:
            message = "missing trie node %s (path %s)" % (
                node_hash.hex() if node_hash else "?",
                bytes(path).hex() if path else "<root>",
            )
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.args[0])


class ProofError(MptError, ValueError):
    """A Merkle proof that proves neither presence nor absence."""


class NodeEncodeError(MptError, ValueError):
    """A node that the requested format cannot hold (an IAVL version above 2**32-1 in stream-vbyte, ...)."""


class VersionError(MptError, KeyError):
    """An IAVL tree version that does not exist, or one saved already with a different root."""

    def __str__(self) -> str:
        return str(self.args[0])


class InputFormatError(MptError, ValueError):
    """A malformed input record (genesis alloc, state dump, pairs file); the message names the line or account."""

    def __init__(self, message: str, line: Optional[int] = None) -> None:
        super().__init__(message)
        self.line = line


class FieldFormatError(MptError, ValueError):
    """A JSON field that is not in its strict form (hex quantity, hex data, canonical decimal or base64, see
    :mod:`mpt.jsonrpc`); the message starts with the field's name."""


class StoreClosedError(MptError, ValueError):
    """A node store used after ``close()`` (or after its ``with`` block); a ValueError like I/O on a closed file."""
