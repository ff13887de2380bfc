"""RFC 6962 / CometBFT simple Merkle trees (CometBFT ``crypto/merkle``), hashed with our C SHA-256: the engine."""
from contextlib import AbstractContextManager
from typing import Iterable

from _typeshed import ReadableBuffer
from typing_extensions import deprecated

__all__ = [
    "EMPTY_ROOT",
    "data_hash",
    "hashing_threads",
    "header_hash",
    "inner_hash",
    "leaf_hash",
    "root",
]

EMPTY_ROOT: bytes
"""sha256(b""): the root of the empty tree."""
EMPTY_HASH: bytes
"""Deprecated name of EMPTY_ROOT (a DeprecationWarning when read)."""

def root(items: Iterable[ReadableBuffer]) -> bytes: ...
def root_recursive(items: Iterable[ReadableBuffer]) -> bytes:
    """root(items) by CometBFT's recursive split (benchmarks and tests; root() is the fast path)."""
def hashing_threads(n: int) -> AbstractContextManager[int]: ...
def header_hash(fields: Iterable[ReadableBuffer]) -> bytes: ...
def data_hash(txs: Iterable[ReadableBuffer]) -> bytes: ...
def leaf_hash(leaf: ReadableBuffer) -> bytes: ...
def inner_hash(left: ReadableBuffer, right: ReadableBuffer) -> bytes: ...
@deprecated("use mpt.merkle.EMPTY_ROOT")
def empty_hash() -> bytes: ...
