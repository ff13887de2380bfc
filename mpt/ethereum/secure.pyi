"""SecureTrie (geth's StateTrie): keys are keccak256(key), plus account and storage helpers."""
from _typeshed import ReadableBuffer
from mpt.ethereum.trie import EMPTY_ROOT as EMPTY_ROOT, Trie

EMPTY_CODE_HASH: bytes
"""keccak256(b""): the code hash of an account without code."""

class SecureTrie(Trie):
    """A Trie whose keys are keccak256 of the caller's keys (the state and storage tries)."""

    def update_account(
        self,
        address: ReadableBuffer,
        nonce: int,
        balance: int,
        storage_root: ReadableBuffer = ...,
        code_hash: ReadableBuffer = ...,
    ) -> None:
        """Store the account RLP [nonce, balance, storage_root, code_hash] under keccak256(address).

        address is the 20-byte account address (ValueError for another length)."""
    def get_account(self, address: ReadableBuffer) -> tuple[int, int, bytes, bytes] | None:
        """(nonce, balance, storage_root, code_hash) for address, or None if absent."""
    def delete_account(self, address: ReadableBuffer) -> None:
        """Remove the account at address (no error if absent)."""
    def update_storage(self, slot: int | ReadableBuffer, value: int | ReadableBuffer) -> None:
        """Set a storage slot (32-byte key or int) to value (int or bytes of at most 32); zero deletes."""
    def get_storage(self, slot: int | ReadableBuffer) -> int:
        """The value of a storage slot as an int (0 when absent)."""
