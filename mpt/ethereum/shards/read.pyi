"""build_root's input readers: copy the pairs into a partition's shard arenas, on several threads, in order."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable, Mapping
from typing import Callable, Optional, Union

from mpt.ethereum.shards.partition import Partition

def read_pairs(
    part: Partition,
    pairs: Union[Iterable[tuple[ReadableBuffer, ReadableBuffer]], Mapping[ReadableBuffer, ReadableBuffer]],
    progress: Optional[Callable[[int], object]] = None,
    readers: int = 1,
) -> None:
    """Read every pair into part, in order; readers threads copy a list or tuple's pairs."""
