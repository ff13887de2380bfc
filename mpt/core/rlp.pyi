"""Recursive Length Prefix encoding (Ethereum yellow paper, appendix B), strict and canonical."""
from collections.abc import Sequence
from typing import Union, final

from _typeshed import ReadableBuffer
from typing_extensions import TypeAlias

# What encode() accepts: bytes-like values, non-negative ints and (nested) lists or tuples of those.
# (The runtime takes only list and tuple as sequences; a type checker cannot exclude str from Sequence.)
_RLPInput: TypeAlias = Union[bytes, bytearray, memoryview, int, Sequence["_RLPInput"]]
# What decode() returns: bytes for strings, lists for lists.
_RLPDecoded: TypeAlias = Union[bytes, list["_RLPDecoded"]]

@final
class WriteBuffer:
    """A growable byte buffer. Starts in an inline 1 KiB array; grows with PyMem; reset() keeps the memory."""

    def __init__(self) -> None: ...
    @property
    def capacity(self) -> int:
        """Bytes the buffer can hold before it has to grow again."""
    def __len__(self) -> int: ...
    def getvalue(self) -> bytes:
        """The bytes written since the last reset."""
    def clear(self) -> None:
        """Forget the content, keep the memory."""
    def write(self, data: ReadableBuffer) -> None:
        """Append raw bytes (for tests and adapters)."""

def decode(data: ReadableBuffer) -> _RLPDecoded:
    """Decode one RLP item that spans all of data: bytes for strings, lists for lists."""

def encode(obj: _RLPInput) -> bytes:
    """Encode bytes-like, non-negative int and nested list/tuple values to canonical RLP bytes."""
