"""The trie over build_root's shards: each shard built without the GIL, then the shard results combined."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable, Mapping
from typing import Optional

from typing_extensions import TypeAlias

from mpt.ethereum.shards.partition import Partition

# (kind, depth, ref, key, value, count)
_ShardResult: TypeAlias = tuple[int, int, bytes, Optional[bytes], Optional[bytes], int]

def current_backend() -> int:
    """The Keccak backend number the shard builds of this process use."""

def build_shard_records(records: ReadableBuffer, backend: int = -1) -> _ShardResult:
    """Build one shard from its records (u32le key length, u32le value length, key, value; input order)."""

def build_shard_many(blobs: list[bytes], backend: int = -1) -> list[_ShardResult]:
    """build_shard_records of each blob."""

def build_range(part: Partition, lo: int, hi: int, backend: int) -> list[_ShardResult]:
    """Build shards lo..hi-1 of a partition on this thread."""

def combine(results: Iterable[_ShardResult], short_keys: Optional[Mapping[bytes, bytes]] = None,
            backend: int = -1) -> bytes:
    """The root over shard results and the keys shorter than the shard prefix."""
