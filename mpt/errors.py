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


class StoreError(MptError, OSError):
    """A node store that cannot be opened or used: no such directory, not a database of that kind (a file that
    is not an LMDB store, a directory that is not a LevelDB), an incompatible or damaged one, locked by another
    process (a running node), or opened read-only. The message names the path; an underlying ``lmdb`` or
    ``plyvel`` error is the ``__cause__``."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreWriteError(StoreError):
    """A write to a node store that failed (most often a full disk). Nothing of that write was stored: the last
    committed state, and the head root recorded with it, stay intact and readable; free space and commit again.
    ``disk_full`` says whether the store's file system had no space left; ``path`` is the store's directory."""

    def __init__(self, message: str, path: Optional[str] = None, disk_full: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.disk_full = disk_full


class StoreReadOnlyError(StoreError):
    """A write to a store opened with ``readonly=True``, or on a read-only file system. Nothing was written."""


class StoreCorruptError(StoreError):
    """A store whose files are damaged (a truncated or corrupted LevelDB table or write-ahead log, an LMDB page
    that fails its checks): the backend refused to read or open it. The message names the path; restore the
    store from a copy, or sync it again."""


class ForeignStoreError(StoreError):
    """A store, or a record in it, that is not the tree's own: an IAVL tree refuses to write into a store that
    holds anything but IAVL records (an Ethereum trie, a Cosmos multistore opened without its module prefix,
    another application's keys), and never deletes or overwrites a record that does not decode as the record its
    key says. Nothing was written; the message names the key and suggests a prefix."""

    def __init__(self, message: str, key: Optional[bytes] = None) -> None:
        super().__init__(message)
        self.key = key


class MissingExtraError(MptError, ModuleNotFoundError):
    """An optional part of mpt used without the package it needs; the message says what to ``pip install``
    (a ModuleNotFoundError, so ``except ImportError`` catches it as well)."""


class CorruptTreeError(NodeDecodeError):
    """Stored IAVL nodes that do not form a tree: a child that names itself or an ancestor, heights that do not
    fall by one, sizes that do not add up, a malformed root record. The message names the node key."""


class ExportImportError(MptError, ValueError):
    """An IAVL export stream that does not describe one valid tree (nodes out of order, heights that do not fit,
    duplicate keys, leftover subtrees, ...), or an import into a tree that is not empty. Nothing is written."""
