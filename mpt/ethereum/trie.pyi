"""The Merkle Patricia Trie: get / update / delete / hash / commit / copy over copy-on-write nodes."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Literal, Optional, Protocol, TypeVar, overload

from typing_extensions import Self

from mpt.ethereum.committer import NodeSet
from mpt.ethereum.node import FullNode, HashNode, Node, ShortNode

_T = TypeVar("_T")

class _NodeReader(Protocol):
    # What a trie needs to read nodes: MemoryDB, LMDBStore, a dict[bytes, bytes], ... (commit() also writes,
    # through ``write_batch()`` when the database has one, else through ``db[hash] = blob``).
    def get(self, key: bytes, /) -> bytes | None: ...

EMPTY_ROOT: bytes
"""keccak256(rlp(b"")): the root of the empty trie."""

class Trie:
    """An Ethereum Merkle Patricia Trie."""

    def __init__(
        self, db: _NodeReader | None = None, root: ReadableBuffer | None = None, *, verify_reads: bool = True
    ) -> None: ...
    @property
    def db(self) -> Any:
        """The node database (a fresh MemoryDB unless one was given)."""
    @property
    def last_commit(self) -> NodeSet | None:
        """NodeSet written by the last commit, or None."""
    @overload
    def get(self, key: ReadableBuffer) -> bytes | None: ...
    @overload
    def get(self, key: ReadableBuffer, default: _T) -> bytes | _T: ...
    def update(self, key: ReadableBuffer, value: ReadableBuffer) -> None:
        """Set key to value; an empty value deletes the key (geth semantics)."""
    def delete(self, key: ReadableBuffer) -> None:
        """Remove key; a missing key is not an error (geth semantics)."""
    def hash(self) -> bytes:
        """The root hash (EMPTY_ROOT for an empty trie)."""
    @property
    def root_hash(self) -> bytes:
        """Same as hash()."""
    @overload
    def commit(self, collect_leaves: Literal[False] = False, *, set_head: bool = False) -> bytes: ...
    @overload
    def commit(
        self, collect_leaves: Literal[True], *, set_head: bool = False
    ) -> tuple[bytes, list[tuple[bytes, bytes]]]: ...
    @overload
    def commit(
        self, collect_leaves: bool, *, set_head: bool = False
    ) -> bytes | tuple[bytes, list[tuple[bytes, bytes]]]: ...
    def items(self, start: ReadableBuffer = b"") -> Iterator[tuple[bytes, bytes]]:
        """(key, value) pairs in ascending key order, from the first key >= start."""
    def keys(self, start: ReadableBuffer = b"") -> Iterator[bytes]:
        """Keys in ascending order, from the first key >= start."""
    def values(self, start: ReadableBuffer = b"") -> Iterator[bytes]:
        """Values in ascending key order, from the first key >= start."""
    def __iter__(self) -> Iterator[bytes]: ...
    def node_iter(self) -> Iterator[tuple[bytes, bytes | None, bytes]]:
        """(path, hash or None, blob) of every node in pre-order."""
    def prove(self, key: ReadableBuffer) -> list[bytes]:
        """Merkle proof for key: node encodings from the root down."""
    def prove_many(self, keys: Iterable[bytes]) -> list[bytes]:
        """One deduplicated proof covering every key in keys."""
    def resolve_node(self, n: HashNode, path: bytes = b"") -> FullNode | ShortNode:
        """Load and decode the node behind a HashNode from the database."""
    @property
    def root_node(self) -> Node | None:
        """The root node (None when empty), for inspection."""
    @property
    def database(self) -> Any:
        """The node database this trie reads from."""
    def copy(self) -> Self:
        """An independent trie with the same content, O(1): what the two hold is shared copy-on-write (node
        objects path by path; a fresh trie's records all at once, copied by the first of the two that changes
        them)."""
    def __copy__(self) -> Self: ...
    def __getitem__(self, key: ReadableBuffer, /) -> bytes: ...
    def __setitem__(self, key: ReadableBuffer, value: ReadableBuffer, /) -> None: ...
    def __delitem__(self, key: ReadableBuffer, /) -> None: ...
    def __contains__(self, key: ReadableBuffer, /) -> bool: ...

def register_walkers(*, prove: Optional[Callable[..., Any]] = None, prove_many: Optional[Callable[..., Any]] = None,
                     iter_items: Optional[Callable[..., Any]] = None,
                     iter_nodes: Optional[Callable[..., Any]] = None) -> None: ...
