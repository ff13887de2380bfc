"""Test helpers for mpt.ics23: the vectors, and ICS23 proofs of small CometBFT simple trees built here.

The simple tree (TENDERMINT_SPEC) is CometBFT's ``crypto/merkle`` over key/value leaves, as the Cosmos SDK's
multistore proves store roots: leaf = sha256(0x00 || varint(len key) || key || varint(32) || sha256(value)),
inner = sha256(0x01 || left || right), split at the largest power of two below the leaf count.
"""
import hashlib
import json
from pathlib import Path

from mpt.core.uvarint import uvarint
from mpt.ics23 import (
    TENDERMINT_SPEC, CommitmentProof, ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp, NonExistenceProof,
)

VECTORS = Path(__file__).resolve().parent / "vectors" / "cosmos"
ICS23_DIR = VECTORS / "ics23"
IAVL_STORE_JSON = VECTORS / "iavl_store_A" / "iavl_store.json"


def vector_cases():
    """(name, spec name, root, proof bytes, key, value) of cosmos/ics23's testdata (value b"" = non-existence)."""
    out = []
    for tree in ("iavl", "tendermint"):
        for path in sorted((ICS23_DIR / tree).glob("*.json")):
            d = json.loads(path.read_text())
            out.append(("%s/%s" % (tree, path.stem), tree, bytes.fromhex(d["root"]), bytes.fromhex(d["proof"]),
                        bytes.fromhex(d["key"]), bytes.fromhex(d["value"])))
    return out


def iavl_store():
    return json.loads(IAVL_STORE_JSON.read_text())


def _sha(data):
    return hashlib.sha256(data).digest()



SIMPLE_LEAF = LeafOp(hash=HashOp.SHA256, prehash_key=HashOp.NO_HASH, prehash_value=HashOp.SHA256,
                     length=LengthOp.VAR_PROTO, prefix=b"\x00")


def simple_leaf_hash(key, value):
    vh = _sha(value)
    return _sha(b"\x00" + uvarint(len(key)) + key + uvarint(len(vh)) + vh)


def _split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _build(hashes):
    """(root, [path of InnerOps leaf to root, per leaf])."""
    if len(hashes) == 1:
        return hashes[0], [[]]
    k = _split(len(hashes))
    lh, lpaths = _build(hashes[:k])
    rh, rpaths = _build(hashes[k:])
    root = _sha(b"\x01" + lh + rh)
    return root, ([p + [InnerOp(HashOp.SHA256, b"\x01", rh)] for p in lpaths]
                  + [p + [InnerOp(HashOp.SHA256, b"\x01" + lh, b"")] for p in rpaths])


class SimpleTree:
    """A CometBFT simple Merkle map of sorted keys, with ICS23 proofs (TENDERMINT_SPEC)."""

    spec = TENDERMINT_SPEC

    def __init__(self, mapping):
        self.items = sorted(mapping.items())
        self.root, self.paths = _build([simple_leaf_hash(k, v) for k, v in self.items])

    def exist(self, i):
        key, value = self.items[i]
        return ExistenceProof(key, value, SIMPLE_LEAF, list(self.paths[i]))

    def membership(self, i):
        return CommitmentProof(exist=self.exist(i))

    def non_membership(self, key):
        keys = [k for k, _ in self.items]
        assert key not in keys
        right = next((i for i, k in enumerate(keys) if k > key), None)
        left = (right - 1 if right is not None else len(keys) - 1)
        return CommitmentProof(nonexist=NonExistenceProof(
            key, self.exist(left) if left >= 0 else None, self.exist(right) if right is not None else None))
