"""Roots of unsorted (key, value) pairs at any scale: shards built in parallel without the GIL."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional, Union

from typing_extensions import TypeAlias

__all__ = ["build_root", "build_shard_records", "check_workers", "choose_shard_nibbles", "MAX_SHARD_NIBBLES",
           "MAX_WORKERS"]

_ShardResult: TypeAlias = tuple[int, int, bytes, Optional[bytes], Optional[bytes], int]

MAX_SHARD_NIBBLES: int
DEFAULT_MEMORY_LIMIT: int
MAX_WORKERS: int

def check_workers(workers: Optional[int], name: str = "workers") -> int:
    """A thread count: None gives the CPU count; TypeError for a non-integer, ValueError outside 1..MAX_WORKERS."""

def build_root(
    pairs: Union[Iterable[tuple[ReadableBuffer, ReadableBuffer]], Mapping[ReadableBuffer, ReadableBuffer]],
    *,
    workers: Optional[int] = None,
    shard_nibbles: Optional[int] = None,
    executor: Any = None,
    spill_dir: Optional[str] = None,
    memory_limit: Optional[int] = None,
    progress: Union[bool, Callable[..., Any]] = False,
) -> bytes:
    """The root hash of the trie holding ``pairs`` (any order; last duplicate wins; empty value deletes)."""

def build_shard_records(records: ReadableBuffer, backend: int = -1) -> _ShardResult:
    """Build one shard from its records (u32le key length, u32le value length, key, value; input order)."""

def build_shard_many(blobs: list[bytes], backend: int = -1) -> list[_ShardResult]:
    """build_shard_records of each blob."""

def combine(results: Iterable[_ShardResult], short_keys: Optional[Mapping[bytes, bytes]] = None,
            backend: int = -1) -> bytes:
    """The root over shard results and the keys shorter than the shard prefix."""

def choose_shard_nibbles(n: Optional[int], workers: int, spilling: bool = False) -> int:
    """Shard prefix length for about n pairs."""
