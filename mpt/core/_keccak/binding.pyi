"""Ethereum Keccak-256 (original Keccak padding, not SHA3-256), backed by keccak.c."""
from _typeshed import ReadableBuffer

def keccak256(data: ReadableBuffer) -> bytes:
    """Return the 32-byte Keccak-256 digest of a bytes-like object (``str`` is refused)."""

def _permutations(n: int) -> None:
    """Run n bare Keccak-f[1600] permutations on a scratch state (benchmark helper)."""
