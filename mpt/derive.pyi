"""List commitments: geth's DeriveSha (transactions, receipts, withdrawals roots) and klaytn's variants."""
from collections.abc import Iterable
from typing import Literal

from typing_extensions import TypeAlias

from mpt.stacktrie import StackTrie

_BytesLike: TypeAlias = bytes | bytearray | memoryview

def derive_sha(
    items: Iterable[_BytesLike],
    impl: Literal["orig", "simple", "concat"] = "orig",
    stack_trie: StackTrie | None = None,
) -> bytes:
    """Commitment to a list of consensus-encoded items (transactions, receipts, withdrawals)."""

def derive_sha_trie(items: Iterable[_BytesLike]) -> bytes:
    """DeriveSha through a plain Trie (geth's ListHasher path); equals derive_sha(items, "orig")."""

def rlp_encode_index(i: int) -> bytes:
    """rlp(i) for a list index (the DeriveSha key)."""
