"""Pure-Python CometBFT simple Merkle tree on hashlib, written straight from crypto/merkle's recursive
definitions: the oracle of the differential tests and fuzz targets of mpt.merkle. Slow on purpose (clarity)."""
import hashlib
from typing import List, Sequence, Tuple

MAX_AUNTS = 100


def empty_hash() -> bytes:
    return hashlib.sha256(b"").digest()


def leaf_hash(leaf: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + bytes(leaf)).digest()


def inner_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """Largest power of two strictly below n (n >= 2)."""
    if n < 2:
        raise ValueError("split_point needs n >= 2")
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root(items: Sequence[bytes]) -> bytes:
    """HashFromByteSlices (recursive)."""
    n = len(items)
    if n == 0:
        return empty_hash()
    if n == 1:
        return leaf_hash(items[0])
    k = split_point(n)
    return inner_hash(root(items[:k]), root(items[k:]))


def proofs(items: Sequence[bytes]) -> Tuple[bytes, List[Tuple[int, int, bytes, List[bytes]]]]:
    """ProofsFromByteSlices: (root, [(total, index, leaf_hash, aunts)])."""
    n = len(items)

    def trails(lo: int, hi: int) -> Tuple[bytes, List[List[bytes]]]:
        # Root of items[lo:hi] and, per item, its aunts so far (leaf level first).
        if hi - lo == 1:
            return leaf_hash(items[lo]), [[]]
        k = split_point(hi - lo)
        left, left_aunts = trails(lo, lo + k)
        right, right_aunts = trails(lo + k, hi)
        return inner_hash(left, right), [a + [right] for a in left_aunts] + [a + [left] for a in right_aunts]

    if n == 0:
        return empty_hash(), []
    top, aunts = trails(0, n)
    return top, [(n, i, leaf_hash(items[i]), aunts[i]) for i in range(n)]


def compute_root_hash(index: int, total: int, leaf_hash_: bytes, aunts: Sequence[bytes]):
    """computeHashFromAunts: the root, or None where CometBFT returns an error."""
    if index >= total or index < 0 or total <= 0:
        return None
    if total == 1:
        return None if aunts else leaf_hash_
    if not aunts:
        return None
    k = split_point(total)
    if index < k:
        left = compute_root_hash(index, k, leaf_hash_, aunts[:-1])
        return None if left is None else inner_hash(left, aunts[-1])
    right = compute_root_hash(index - k, total - k, leaf_hash_, aunts[:-1])
    return None if right is None else inner_hash(aunts[-1], right)


def verify(root_hash: bytes, total: int, index: int, leaf_hash_: bytes, aunts: Sequence[bytes], leaf: bytes) -> bool:
    """Proof.Verify plus ValidateBasic's size checks: True when CometBFT accepts."""
    if total < 0 or index < 0 or len(leaf_hash_) != 32 or len(aunts) > MAX_AUNTS:
        return False
    if any(len(a) != 32 for a in aunts):
        return False
    if leaf_hash(leaf) != leaf_hash_:
        return False
    return compute_root_hash(index, total, leaf_hash_, list(aunts)) == root_hash
