"""List commitments: geth's DeriveSha (transactions, receipts, withdrawals roots) and klaytn's variants."""
from _typeshed import ReadableBuffer
from collections.abc import Iterable
from typing import Literal

from mpt.ethereum.stacktrie import StackTrie

def derive_sha(
    items: Iterable[ReadableBuffer],
    impl: Literal["orig", "simple", "concat"] = "orig",
    stack_trie: StackTrie | None = None,
) -> bytes:
    """Commitment to a list of consensus-encoded items (transactions, receipts, withdrawals)."""

def derive_sha_trie(items: Iterable[ReadableBuffer]) -> bytes:
    """DeriveSha through a plain Trie (geth's ListHasher path); equals derive_sha(items, "orig")."""

def rlp_encode_index(i: int) -> bytes:
    """rlp(i) for a list index (the DeriveSha key)."""
