"""MutableTree: cosmos/iavl's versioned AVL+ tree over an mpt node database."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, final

from typing_extensions import deprecated

if TYPE_CHECKING:
    from mpt.ics23 import CommitmentProof

from mpt.iavl.export import Exporter, ExportNode
from mpt.iavl.node import Node
from mpt.iavl.nodedb import NodeDB

EMPTY_ROOT: bytes
"""sha256(b""): the root hash of the empty tree."""
EMPTY_HASH: bytes
"""Deprecated name of EMPTY_ROOT (a DeprecationWarning when read)."""
FAST_CACHE_SIZE: int
"""The default fast_cache_size (Go iavl's fastNodeCacheSize)."""

@final
class MutableTree:
    def __init__(
        self,
        db: Any = None,
        *,
        format: Literal["v1", "legacy"] = "v1",
        fast_storage: bool = True,
        fast_cache_size: int = 100000,
    ) -> None: ...
    @property
    def db(self) -> Any: ...
    @property
    def ndb(self) -> NodeDB: ...
    @property
    def fast_storage(self) -> bool: ...
    @property
    def version(self) -> int:
        """The last saved or loaded version (0 before any)."""
    @property
    def working_version(self) -> int: ...
    @property
    def latest_version(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def height(self) -> int: ...
    def set(self, key: ReadableBuffer, value: ReadableBuffer) -> bool:
        """Returns True when the key existed (an update)."""
    def get(self, key: ReadableBuffer, default: Any = None) -> Any: ...
    def get_versioned(self, key: ReadableBuffer, version: int, default: Any = None) -> Any:
        """The value at key in saved version ``version`` (default if absent or no such version)."""
    def get_with_index(self, key: ReadableBuffer) -> tuple[int, bytes | None]:
        """(rank of key in key order, value or None)."""
    def get_by_index(self, index: int) -> tuple[bytes, bytes] | tuple[None, None]: ...
    def has(self, key: ReadableBuffer) -> bool:
        """iavl's Has: the same as ``key in tree``."""
    def remove(self, key: ReadableBuffer) -> bytes | None:
        """The removed value, or None when the key was absent."""
    def hash(self) -> bytes:
        """Root hash of the working tree."""
    def working_hash(self) -> bytes: ...
    def save_version(self) -> tuple[bytes, int]:
        """(root_hash, version) of the newly saved version."""
    def load_version(self, version: int) -> int: ...
    def load(self) -> int: ...
    def version_exists(self, version: int) -> bool: ...
    def available_versions(self) -> list[int]: ...
    def delete_versions_to(self, to_version: int) -> int:
        """Prune versions up to to_version (Go's DeleteVersionsTo); the number of keys deleted."""
    def rollback(self) -> None:
        """Discard unsaved changes (back to the last saved or loaded version)."""
    def items(
        self, start: ReadableBuffer | None = None, end: ReadableBuffer | None = None, ascending: bool = True
    ) -> Iterator[tuple[bytes, bytes]]: ...
    @deprecated("use MutableTree.items")
    def iterate(
        self, start: ReadableBuffer | None = None, end: ReadableBuffer | None = None, ascending: bool = True
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def keys(
        self, start: ReadableBuffer | None = None, end: ReadableBuffer | None = None, ascending: bool = True
    ) -> Iterator[bytes]: ...
    def values(
        self, start: ReadableBuffer | None = None, end: ReadableBuffer | None = None, ascending: bool = True
    ) -> Iterator[bytes]: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def __reversed__(self) -> Iterator[bytes]: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: ReadableBuffer, /) -> bool: ...
    def __getitem__(self, key: ReadableBuffer, /) -> bytes:
        """The value at key; KeyError if absent."""
    def __setitem__(self, key: ReadableBuffer, value: bytes, /) -> None: ...
    def __delitem__(self, key: ReadableBuffer, /) -> None:
        """remove(key); KeyError if absent."""
    def membership_proof(self, key: ReadableBuffer, version: int | None = None) -> CommitmentProof:
        """ICS23 proof that key is in the working tree (None) or saved version ``version`` (Go iavl's
        GetMembershipProof, byte for byte). ProofError if key is absent, VersionError if no such version."""
    def non_membership_proof(self, key: ReadableBuffer, version: int | None = None) -> CommitmentProof:
        """ICS23 proof that key is absent (Go iavl's GetNonMembershipProof): existence proofs of the keys just
        before and after it. ProofError if key is present, VersionError if no such version."""
    def path_to_leaf(
        self, key: ReadableBuffer, version: int | None = None, index: int | None = None
    ) -> tuple[list[Node], int]:
        """(nodes, rank): the nodes from the root down to the leaf key leads to (iavl's PathToLeaf) and key's
        GetWithIndex rank; with ``index``, the index-th leaf (GetByIndex). ([], 0) for an empty tree."""
    def export(self, version: int | None = None) -> Exporter:
        """The nodes of a saved version in Go's exporter order (post-order, left first)."""
    def import_nodes(self, nodes: Iterable[ExportNode], version: int) -> bytes:
        """Rebuild this empty tree from an export stream as saved version ``version``; returns the root hash."""
