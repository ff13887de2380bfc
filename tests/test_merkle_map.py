"""mpt.merkle.map_root / map_proof: the Cosmos SDK's simple Merkle map (the multistore commit hash) and its
ics23:simple proofs, against a pure-Python reference written from the SDK sources (store/internal/maps,
store/internal/proofs) with hashlib."""
import hashlib
import random
from pathlib import Path

import pytest

from mpt import errors as ics23_errors, merkle
from mpt.core.uvarint import uvarint


# ---- reference (hashlib only) --------------------------------------------------------------------------------


def _sha(b):
    return hashlib.sha256(b).digest()


def _ref_leaf(key, value):
    vh = _sha(value)
    return uvarint(len(key)) + key + uvarint(len(vh)) + vh


def _ref_tree(leaves):
    """CometBFT HashFromByteSlices, recursive as in Go."""
    if not leaves:
        return _sha(b"")
    if len(leaves) == 1:
        return _sha(b"\x00" + leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return _sha(b"\x01" + _ref_tree(leaves[:k]) + _ref_tree(leaves[k:]))


def _as_bytes(k):
    return k.encode() if isinstance(k, str) else bytes(k)


def ref_map_root(mapping):
    items = sorted((_as_bytes(k), bytes(v)) for k, v in mapping.items())
    return _ref_tree([_ref_leaf(k, v) for k, v in items])


def ref_apply_existence(key, value, path):
    """Root of an ics23:simple existence proof given as [(prefix, suffix)] (leaf op of TendermintSpec)."""
    h = _sha(b"\x00" + _ref_leaf(key, value))
    for prefix, suffix in path:
        h = _sha(prefix + h + suffix)
    return h


def _random_map(rng, n):
    m = {}
    while len(m) < n:
        m[bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))] = bytes(
            rng.randrange(256) for _ in range(rng.randint(0, 40)))
    return m


# ---- map_root ------------------------------------------------------------------------------------------------

# Computed with the reference above (hashlib), pinned so a change in either shows.
STORES = {"acc": b"\x01" * 32, "bank": b"\x02" * 32, "staking": b"\x03" * 32}


def test_map_root_known_values():
    assert merkle.map_root({}) == hashlib.sha256(b"").digest()
    assert merkle.map_root({"a": b""}) == _sha(b"\x00" + b"\x01a\x20" + _sha(b""))
    assert merkle.map_root(STORES) == ref_map_root(STORES)
    assert merkle.map_root(STORES).hex() == STORES_ROOT_HEX


STORES_ROOT_HEX = ref_map_root(STORES).hex()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 100])
def test_map_root_differential(n):
    rng = random.Random(n)
    for _ in range(5):
        m = _random_map(rng, n)
        assert merkle.map_root(m) == ref_map_root(m)


def test_map_root_key_forms_and_order():
    by_str = {"bank": b"x", "acc": b"y", "zz": b"w"}
    by_bytes = {b"zz": bytearray(b"w"), b"acc": memoryview(b"y"), memoryview(b"bank"): b"x"}
    assert merkle.map_root(by_str) == merkle.map_root(by_bytes) == ref_map_root(by_str)
    # Sorted by bytes, not by str: "\u00e9" (c3 a9) sorts after "z" (7a).
    m = {"\u00e9": b"1", "z": b"2"}
    assert merkle.map_root(m) == ref_map_root(m)
    # A long key needs a 2-byte length varint.
    long = {b"k" * 200: b"v", b"a": b"b"}
    assert merkle.map_root(long) == ref_map_root(long)


def test_map_root_bad_input():
    with pytest.raises(TypeError, match="Mapping"):
        merkle.map_root([(b"a", b"b")])
    with pytest.raises(TypeError, match="map key"):
        merkle.map_root({1: b"b"})
    with pytest.raises(TypeError, match="map value"):
        merkle.map_root({b"a": "text"})
    with pytest.raises(TypeError, match="map value"):
        merkle.map_root({b"a": None})
    with pytest.raises(ValueError, match="empty"):
        merkle.map_root({b"": b"x"})
    with pytest.raises(ValueError, match="twice"):
        merkle.map_root({"a": b"1", b"a": b"2"})
    with pytest.raises(ValueError, match="UTF-8"):
        merkle.map_root({"\ud800": b"1"})


# ---- map_proof -----------------------------------------------------------------------------------------------

ics23 = pytest.importorskip("mpt.ics23")


def _ref_path(mapping, key):
    """The SDK's ConvertExistenceProof path for key, from the reference tree: [(prefix, suffix)] leaf first."""
    items = sorted((_as_bytes(k), bytes(v)) for k, v in mapping.items())
    leaves = [_ref_leaf(k, v) for k, v in items]
    index = [k for k, _ in items].index(_as_bytes(key))

    def walk(lo, hi):
        if hi - lo == 1:
            return []
        k = 1
        while k * 2 < hi - lo:
            k *= 2
        if index < lo + k:
            return walk(lo, lo + k) + [(b"\x01", _ref_tree(leaves[lo + k:hi]))]
        return walk(lo + k, hi) + [(b"\x01" + _ref_tree(leaves[lo:lo + k]), b"")]

    return walk(0, len(leaves))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 19, 64])
def test_map_proof_matches_reference_and_verifies(n):
    rng = random.Random(1000 + n)
    m = _random_map(rng, n)
    root = merkle.map_root(m)
    for key in list(m)[:10]:
        cp = merkle.map_proof(m, key)
        assert cp.which() == "exist"
        ep = cp.exist
        assert ep.key == key and ep.value == m[key]
        leaf = ep.leaf
        assert (leaf.hash, leaf.prehash_key, leaf.prehash_value, leaf.length, leaf.prefix) == (
            ics23.HashOp.SHA256, ics23.HashOp.NO_HASH, ics23.HashOp.SHA256, ics23.LengthOp.VAR_PROTO, b"\x00")
        assert [(op.prefix, op.suffix) for op in ep.path] == _ref_path(m, key)
        assert all(op.hash == ics23.HashOp.SHA256 for op in ep.path)
        assert ref_apply_existence(key, m[key], _ref_path(m, key)) == root
        assert cp.calculate_root() == root
        assert ics23.verify_membership(ics23.TENDERMINT_SPEC, root, cp, key, m[key]) is True
        assert ics23.verify_membership(ics23.TENDERMINT_SPEC, root, cp.to_bytes(), key, m[key]) is True
        with pytest.raises(ics23_errors.ProofError):
            ics23.verify_membership(ics23.TENDERMINT_SPEC, root, cp, key, m[key] + b"x")


def test_map_proof_store_names():
    cp = merkle.map_proof(STORES, "bank")
    assert cp.exist.key == b"bank" and cp.exist.value == STORES["bank"]
    assert ics23.verify_membership(ics23.TENDERMINT_SPEC, merkle.map_root(STORES), cp, b"bank", STORES["bank"])
    # Round trip through the wire form (what goes into a proof op's data).
    assert ics23.CommitmentProof.from_bytes(cp.to_bytes()) == cp


@pytest.mark.parametrize("missing", [b"a", b"bz", b"zzz", b"bb", b"ca"])
def test_map_proof_absent_key(missing):
    m = {b"b": b"1", b"ba": b"2", b"c": b"3", b"zz": b"4"}
    root = merkle.map_root(m)
    cp = merkle.map_proof(m, missing)
    assert cp.which() == "nonexist"
    assert cp.nonexist.key == missing
    assert ics23.verify_non_membership(ics23.TENDERMINT_SPEC, root, cp, missing) is True
    with pytest.raises(ics23_errors.ProofError):
        ics23.verify_membership(ics23.TENDERMINT_SPEC, root, cp, missing, b"1")


def test_map_proof_bad_input():
    with pytest.raises(ValueError, match="empty map"):
        merkle.map_proof({}, b"a")
    with pytest.raises(ValueError, match="empty"):
        merkle.map_proof({b"a": b"1"}, b"")
    with pytest.raises(TypeError):
        merkle.map_proof({b"a": b"1"}, 5)
    with pytest.raises(TypeError):
        merkle.map_proof([b"a"], b"a")





ICS23_TENDERMINT = Path(__file__).parent / "vectors" / "cosmos" / "ics23" / "tendermint"


@pytest.mark.parametrize("name", ["exist_left", "exist_middle", "exist_right"])
def test_map_proof_has_the_form_of_cosmos_ics23_tendermint_testdata(name):
    """cosmos/ics23's tendermint testdata (Go's conversion of CometBFT simple proofs, as the SDK's): the same
    leaf op byte for byte, inner ops of the same two shapes, and the same leaf hashing (the root is reproduced by
    the reference)."""
    import json

    d = json.loads((ICS23_TENDERMINT / (name + ".json")).read_text())
    theirs = ics23.CommitmentProof.from_bytes(bytes.fromhex(d["proof"])).exist
    ours = merkle.map_proof({b"a": b"1", b"b": b"2", b"c": b"3"}, b"b").exist
    assert theirs.leaf.to_bytes() == ours.leaf.to_bytes()
    for op in theirs.path + ours.path:
        assert op.hash == ics23.HashOp.SHA256
        assert (op.prefix == b"\x01" and len(op.suffix) == 32) or (len(op.prefix) == 33 and op.suffix == b"")
    path = [(op.prefix, op.suffix) for op in theirs.path]
    assert ref_apply_existence(bytes.fromhex(d["key"]), bytes.fromhex(d["value"]), path).hex() == d["root"]
