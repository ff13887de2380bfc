"""mpt.ics23: messages (wire and JSON forms), specs, hashing, and verification against cosmos/ics23's own testdata
and the Go-made proofs of the iavl_store_A fixture (tests/vectors/cosmos/*, PROVENANCE.md there)."""
import base64
import hashlib
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ics23_trees import ICS23_DIR, SimpleTree, iavl_store, vector_cases  # noqa: E402

from mpt import keccak256  # noqa: E402
from mpt.core.uvarint import uvarint  # noqa: E402
from mpt.errors import ProofError  # noqa: E402
from mpt.ics23 import (  # noqa: E402
    IAVL_SPEC, MAX_INNER_OPS, SMT_SPEC, TENDERMINT_SPEC, BatchEntry, BatchProof, CommitmentProof,
    CompressedBatchEntry, CompressedBatchProof, CompressedExistenceProof, CompressedNonExistenceProof,
    ExistenceProof, HashOp, InnerOp, InnerSpec, LeafOp, LengthOp, NonExistenceProof, ProofSpec, do_hash,
    verify_membership, verify_non_membership,
)
from mpt.ics23 import _reference as ref  # noqa: E402

SPECS = {"iavl": IAVL_SPEC, "tendermint": TENDERMINT_SPEC}
CASES = vector_cases()
STORE = iavl_store()
STORE_ROOT = bytes.fromhex(STORE["latest_root_hex"])


def _verify(spec, root, proof, key, value):
    if value:
        return verify_membership(spec, root, proof, key, value)
    return verify_non_membership(spec, root, proof, key)


# --------------------------------------------------------------------------------------------- testdata

@pytest.mark.parametrize("name, tree, root, proof, key, value", CASES, ids=[c[0] for c in CASES])
def test_testdata_verifies(name, tree, root, proof, key, value):
    spec = SPECS[tree]
    assert _verify(spec, root, proof, key, value) is True
    cp = CommitmentProof.from_bytes(proof)
    assert _verify(spec, root, cp, key, value) is True          # the object path
    assert cp.calculate_root() == root
    ref_spec = ref.IAVL if tree == "iavl" else ref.TENDERMINT
    if value:
        assert ref.verify_membership(ref_spec, root, proof, key, value)
        assert cp.which() == "exist" and cp.exist.calculate_root() == root
        cp.exist.check_against_spec(spec)
    else:
        assert ref.verify_non_membership(ref_spec, root, proof, key)
        assert cp.which() == "nonexist"


@pytest.mark.parametrize("name, tree, root, proof, key, value", CASES, ids=[c[0] for c in CASES])
def test_testdata_wrong_claims_refused(name, tree, root, proof, key, value):
    spec = SPECS[tree]
    other = SPECS["iavl" if tree == "tendermint" else "tendermint"]
    with pytest.raises(ProofError):
        _verify(other, root, proof, key, value)
    with pytest.raises(ProofError):
        _verify(spec, hashlib.sha256(root).digest(), proof, key, value)
    if value:
        with pytest.raises(ProofError, match="doesn't match proof|no existence proof"):
            verify_membership(spec, root, proof, key, value + b"x")
        with pytest.raises(ProofError, match="no existence proof"):
            verify_membership(spec, root, proof, key + b"x", value)
        with pytest.raises(ProofError, match="no non-existence proof"):
            verify_non_membership(spec, root, proof, key)
    else:
        with pytest.raises(ProofError, match="no existence proof"):
            verify_membership(spec, root, proof, key, b"value")


def test_check_against_spec_data():
    data = json.loads((ICS23_DIR / "TestCheckAgainstSpecData.json").read_text())
    assert len(data) == 11
    for name, case in data.items():
        proof = ExistenceProof.from_json(case["Proof"])
        spec = ProofSpec.from_json(case["Spec"])
        if case["Err"]:
            with pytest.raises(ProofError) as info:
                proof.check_against_spec(spec)
            assert str(info.value) == case["Err"], name          # Go's exact text
        else:
            proof.check_against_spec(spec)
        # The reference agrees.
        assert ref.check_exist(_ref_exist(proof), ref.from_proof_spec(spec)) == (not case["Err"]), name


def _ref_exist(proof):
    leaf = None if proof.leaf is None else {"hash": int(proof.leaf.hash), "prehash_key": int(proof.leaf.prehash_key),
                                            "prehash_value": int(proof.leaf.prehash_value),
                                            "length": int(proof.leaf.length), "prefix": proof.leaf.prefix}
    return {"key": proof.key, "value": proof.value, "leaf": leaf,
            "path": [{"hash": int(op.hash), "prefix": op.prefix, "suffix": op.suffix} for op in proof.path]}


# ---------------------------------------------------------------------------------- the iavl_store fixture

def test_iavl_store_membership_proofs():
    assert len(STORE["membership_proofs"]) == 20
    for p in STORE["membership_proofs"]:
        raw, key, value = (bytes.fromhex(p[k]) for k in ("commitment_proof_hex", "key_hex", "value_hex"))
        assert verify_membership(IAVL_SPEC, STORE_ROOT, raw, key, value) is True
        assert verify_membership(IAVL_SPEC, STORE_ROOT, CommitmentProof.from_bytes(raw), key, value) is True
        assert ref.verify_membership(ref.IAVL, STORE_ROOT, raw, key, value)
        assert CommitmentProof.from_bytes(raw).to_bytes() == raw


def test_iavl_store_non_membership_proofs():
    assert len(STORE["nonmembership_proofs"]) == 20
    for p in STORE["nonmembership_proofs"]:
        raw, key = bytes.fromhex(p["commitment_proof_hex"]), bytes.fromhex(p["key_hex"])
        assert verify_non_membership(IAVL_SPEC, STORE_ROOT, raw, key) is True
        assert verify_non_membership(IAVL_SPEC, STORE_ROOT, CommitmentProof.from_bytes(raw), key) is True
        assert ref.verify_non_membership(ref.IAVL, STORE_ROOT, raw, key)
        assert CommitmentProof.from_bytes(raw).to_bytes() == raw


def test_iavl_store_empty_value_proofs_are_refused():
    # iavl stores and proves an empty value, ics23 refuses it (LeafOp.Apply: "leaf op needs value").
    assert STORE["empty_value_membership_proofs"]
    for p in STORE["empty_value_membership_proofs"]:
        raw, key, value = (bytes.fromhex(p[k]) for k in ("commitment_proof_hex", "key_hex", "value_hex"))
        assert value == b""
        with pytest.raises(ProofError, match="leaf op needs value"):
            verify_membership(IAVL_SPEC, STORE_ROOT, raw, key, value)
        assert not ref.verify_membership(ref.IAVL, STORE_ROOT, raw, key, value)
        assert CommitmentProof.from_bytes(raw).to_bytes() == raw


# -------------------------------------------------------------------------------------- wire and JSON forms

def _all_proofs():
    out = [proof for _n, _t, _r, proof, _k, _v in CASES]
    for group in ("membership_proofs", "nonmembership_proofs", "empty_value_membership_proofs"):
        out += [bytes.fromhex(p["commitment_proof_hex"]) for p in STORE[group]]
    return out


def test_wire_round_trip_is_byte_identical():
    for raw in _all_proofs():
        cp = CommitmentProof.from_bytes(raw)
        assert cp.to_bytes() == raw
        again = CommitmentProof.from_bytes(cp.to_bytes())
        assert again == cp
        inner = cp.proof
        assert type(inner).from_bytes(inner.to_bytes()) == inner


def test_json_round_trip():
    for raw in _all_proofs():
        cp = CommitmentProof.from_bytes(raw)
        obj = cp.to_json()
        assert CommitmentProof.from_json(obj) == cp
        assert CommitmentProof.from_json(json.dumps(obj)) == cp
        assert CommitmentProof.from_json(json.dumps(obj).encode()) == cp
        assert CommitmentProof.from_json(obj).to_bytes() == raw


def test_json_form_is_protojson():
    data = json.loads((ICS23_DIR / "TestCheckAgainstSpecData.json").read_text())
    case = data["accepts leaf with valid inner proofs"]
    proof = ExistenceProof.from_json(case["Proof"])
    assert proof.to_json() == case["Proof"]
    assert proof.key == b"food" and proof.leaf.prefix == base64.b64decode("AAKKAQ==")
    assert ProofSpec.from_json(case["Spec"]).to_json() == case["Spec"]
    # lowerCamelCase names and enum names are read too (protojson accepts both).
    spec = ProofSpec.from_json({"leafSpec": {"hash": "SHA256", "prehashValue": "SHA256", "length": "VAR_PROTO",
                                             "prefix": "AA=="},
                                "innerSpec": {"childOrder": [0, 1], "childSize": 33, "minPrefixLength": 4,
                                              "maxPrefixLength": 12, "hash": "SHA256"}})
    assert spec == IAVL_SPEC
    assert HashOp.KECCAK256 == LeafOp.from_json({"hash": "KECCAK"}).hash


@pytest.mark.parametrize("bad", [
    "[]", "{", '{"exist": 5}', '{"exist": {"key": "!!"}}', '{"bogus": 1}', '{"exist": {"leaf": {"hash": "NOPE"}}}',
    '{"exist": {"path": {}}}', '{"exist": {}, "nonexist": {}}', '{"exist": {"leaf": {"hash": 4294967296}}}',
    '{"exist": {"leaf": {"hash": true}}}',
])
def test_bad_json_is_a_proof_error(bad):
    with pytest.raises(ProofError):
        CommitmentProof.from_json(bad)


def test_gogoproto_encoding_details():
    # proto3 defaults are omitted, a present empty sub-message is written, enums and packed int32 as Go writes.
    assert ExistenceProof().to_bytes() == b""
    assert ExistenceProof(leaf=LeafOp()).to_bytes() == b"\x1a\x00"
    assert CommitmentProof(exist=ExistenceProof()).to_bytes() == b"\x0a\x00"
    assert InnerSpec(child_order=[0, 1], child_size=33).to_bytes() == b"\x0a\x02\x00\x01\x10\x21"
    assert InnerSpec(child_order=[-1]).to_bytes() == b"\x0a\x0a" + b"\xff" * 9 + b"\x01"
    assert ProofSpec(max_depth=-1).to_bytes() == b"\x18" + b"\xff" * 9 + b"\x01"
    assert ProofSpec(prehash_key_before_comparison=True).to_bytes() == b"\x28\x01"
    # Decoding: unpacked int32s accepted, unknown fields skipped, a repeated sub-message merged, last oneof wins.
    assert InnerSpec.from_bytes(b"\x08\x00\x08\x01").child_order == [0, 1]
    assert InnerOp.from_bytes(b"\x08\x01\x78\x05\x12\x01\xaa\x90\x01\x00").prefix == b"\xaa"
    merged = ExistenceProof.from_bytes(b"\x1a\x02\x08\x01\x1a\x02\x10\x01")
    assert merged.leaf == LeafOp(hash=HashOp.SHA256, prehash_key=HashOp.SHA256)
    cp = CommitmentProof.from_bytes(b"\x0a\x02\x0a\x00\x12\x00")
    assert cp.which() == "nonexist" and cp.exist is None
    # Unknown enum values are kept as numbers (proto3).
    assert LeafOp.from_bytes(b"\x08\x2a").hash == 42
    assert LeafOp.from_bytes(b"\x08\x2a").to_bytes() == b"\x08\x2a"


def test_repr_is_readable():
    text = repr(IAVL_SPEC)
    assert text.startswith("ProofSpec(leaf_spec=LeafOp(hash=HashOp.SHA256")
    assert "child_size=33" in text
    assert repr(InnerOp(HashOp.SHA256, b"\x01")) == "InnerOp(hash=HashOp.SHA256, prefix=bytes.fromhex('01'))"


# ---------------------------------------------------------------------------------------- specs and hashes

def test_specs_are_gos():
    assert IAVL_SPEC.to_bytes().hex() == "0a090801180120012a0100120c0a0200011021180420" + "0c3001"
    assert TENDERMINT_SPEC.inner_spec.child_size == 32 and TENDERMINT_SPEC.inner_spec.max_prefix_length == 1
    assert SMT_SPEC.max_depth == 256 and SMT_SPEC.prehash_key_before_comparison is True
    assert SMT_SPEC.inner_spec.empty_child == bytes(32) and SMT_SPEC.leaf_spec.prehash_key == HashOp.SHA256
    assert IAVL_SPEC.spec_equals(ProofSpec.from_bytes(IAVL_SPEC.to_bytes()))
    assert not IAVL_SPEC.spec_equals(TENDERMINT_SPEC)


def test_spec_constants_are_read_only():
    with pytest.raises(AttributeError):
        IAVL_SPEC.max_depth = 5
    with pytest.raises(AttributeError):
        IAVL_SPEC.inner_spec.child_size = 32
    with pytest.raises(AttributeError):
        IAVL_SPEC.leaf_spec.prefix = b"\x01"
    with pytest.raises(AttributeError):
        IAVL_SPEC.inner_spec.child_order.append(2)


def test_do_hash_every_op():
    data = b"food"
    assert do_hash(HashOp.SHA256, data) == hashlib.sha256(data).digest()
    assert do_hash(HashOp.SHA512, data) == hashlib.sha512(data).digest()
    assert do_hash(HashOp.KECCAK256, data) == keccak256(data)
    # ics23's DoHashTestData vectors.
    assert do_hash(HashOp.RIPEMD160, b"food").hex() == "b1ab9988c7c7c5ec4b2b291adfeeee10e77cdd46"
    assert do_hash(HashOp.BITCOIN, b"food").hex() == "0bcb587dfb4fc10b36d57f2bba1878f139b75d24"
    assert do_hash(HashOp.SHA512_256, b"food").hex() == \
        "5b3a452a6acbf1fc1e553a40c501585d5bd3cca176d562e0a0e19a3c43804e88"
    assert do_hash(HashOp.BLAKE2B_512, data) == hashlib.blake2b(data).digest()
    assert do_hash(HashOp.BLAKE2S_256, data) == hashlib.blake2s(data).digest()
    for op in (HashOp.NO_HASH, HashOp.BLAKE3, 10, -1):
        with pytest.raises(ProofError, match="unsupported hashop: %d" % int(op)):
            do_hash(op, data)


def test_leaf_and_inner_ops():
    # ics23's LeafOpTestData "hash foobar lengthop" (VAR_PROTO) and InnerOpTestData "hash child with prefix and
    # suffix".
    leaf = LeafOp(hash=HashOp.SHA256, length=LengthOp.VAR_PROTO)
    assert leaf.apply(b"food", b"some longer text").hex() == \
        "b68f5d298e915ae1753dd333da1f9cf605411a5f2e12516be6758f365e6db265"
    inner = InnerOp(HashOp.SHA256, bytes.fromhex("0123456789"), bytes.fromhex("deadbeef"))
    assert inner.apply(bytes.fromhex("00cafe00")).hex() == \
        "0339f76086684506a6d42a60da4b5a719febd4d96d8b8d85ae92849e3a849a5e"
    with pytest.raises(ProofError, match="leaf op needs key"):
        leaf.apply(b"", b"v")
    with pytest.raises(ProofError, match="leaf op needs value"):
        leaf.apply(b"k", b"")
    with pytest.raises(ProofError, match="inner op needs child value"):
        inner.apply(b"")
    with pytest.raises(ProofError, match="prehash key, data was 4 bytes, not 32"):
        LeafOp(hash=HashOp.SHA256, length=LengthOp.REQUIRE_32_BYTES).apply(b"food", b"bar")
    with pytest.raises(ProofError, match="unsupported lengthop: 2"):
        LeafOp(hash=HashOp.SHA256, length=LengthOp.VAR_RLP).apply(b"food", b"bar")
    for length, header in ((LengthOp.FIXED32_BIG, b"\0\0\0\4"), (LengthOp.FIXED32_LITTLE, b"\4\0\0\0"),
                           (LengthOp.FIXED64_BIG, b"\0" * 7 + b"\4"), (LengthOp.FIXED64_LITTLE, b"\4" + b"\0" * 7)):
        assert LeafOp(hash=HashOp.SHA256, length=length).apply(b"food", b"bars") == \
            hashlib.sha256(header + b"food" + header + b"bars").digest()


# --------------------------------------------------------------------------------- simple trees, batches

def test_simple_tree_proofs_and_batches():
    mapping = {bytes([i]) * (1 + i % 3): b"v%d" % i for i in range(1, 40, 3)}
    tree = SimpleTree(mapping)
    for i, (key, value) in enumerate(tree.items):
        raw = tree.membership(i).to_bytes()
        assert verify_membership(TENDERMINT_SPEC, tree.root, raw, key, value)
    for key in (b"\x00", b"\x05", b"\xff", b"\x02\x02\x03"):
        raw = tree.non_membership(key).to_bytes()
        assert verify_non_membership(TENDERMINT_SPEC, tree.root, raw, key)
        assert ref.verify_non_membership(ref.TENDERMINT, tree.root, raw, key)
    # A batch of everything, and its compressed form (inner ops shared through lookup_inners).
    entries = [BatchEntry(exist=tree.exist(i)) for i in range(len(tree.items))]
    entries.append(BatchEntry(nonexist=tree.non_membership(b"\x05").nonexist))
    batch = CommitmentProof(batch=BatchProof(entries))
    lookup, index = [], {}
    centries = []

    def compress(ex):
        path = []
        for op in ex.path:
            sig = op.to_bytes()
            if sig not in index:
                index[sig] = len(lookup)
                lookup.append(op)
            path.append(index[sig])
        return CompressedExistenceProof(ex.key, ex.value, ex.leaf, path)

    for e in entries:
        if e.exist is not None:
            centries.append(CompressedBatchEntry(exist=compress(e.exist)))
        else:
            n = e.nonexist
            centries.append(CompressedBatchEntry(nonexist=CompressedNonExistenceProof(
                n.key, compress(n.left) if n.left else None, compress(n.right) if n.right else None)))
    compressed = CommitmentProof(compressed=CompressedBatchProof(centries, lookup))
    assert compressed.decompressed() == batch
    assert len(compressed.to_bytes()) < len(batch.to_bytes())
    for proof in (batch, compressed):
        raw = proof.to_bytes()
        assert CommitmentProof.from_bytes(raw) == proof
        for key, value in tree.items:
            assert verify_membership(TENDERMINT_SPEC, tree.root, raw, key, value)
            assert ref.verify_membership(ref.TENDERMINT, tree.root, raw, key, value)
        assert verify_non_membership(TENDERMINT_SPEC, tree.root, raw, b"\x05")
        assert ref.verify_non_membership(ref.TENDERMINT, tree.root, raw, b"\x05")
        with pytest.raises(ProofError):
            verify_non_membership(TENDERMINT_SPEC, tree.root, raw, b"\xfe")
        assert proof.calculate_root() == tree.root
    bad = CommitmentProof(compressed=CompressedBatchProof(
        [CompressedBatchEntry(exist=CompressedExistenceProof(b"k", b"v", tree.exist(0).leaf, [len(lookup)]))],
        lookup))
    with pytest.raises(ProofError, match="lookup table"):
        verify_membership(TENDERMINT_SPEC, tree.root, bad.to_bytes(), b"k", b"v")


def test_non_membership_neighbour_checks():
    tree = SimpleTree({b"b": b"1", b"d": b"2", b"f": b"3", b"h": b"4"})
    good = tree.non_membership(b"e").nonexist
    assert verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=good).to_bytes(), b"e")
    # Neighbours that are not adjacent: b and f around e.
    skip = NonExistenceProof(b"e", tree.exist(0), tree.exist(2))
    with pytest.raises(ProofError, match="right proof missing, left proof must be right-most"):
        verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=skip).to_bytes(), b"c")
    # A missing side must be at the edge of the tree.
    no_left = NonExistenceProof(b"c", None, tree.exist(1))
    with pytest.raises(ProofError, match="left proof missing, right proof must be left-most"):
        verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=no_left).to_bytes(), b"c")
    no_right = NonExistenceProof(b"e", tree.exist(2), None)
    with pytest.raises(ProofError, match="right proof missing, left proof must be right-most"):
        verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=no_right).to_bytes(), b"g")
    with pytest.raises(ProofError, match="both left and right proofs missing|no non-existence proof"):
        verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=NonExistenceProof()).to_bytes(),
                              b"e")
    # Both sides the same leaf: their paths never diverge (Go panics; a ProofError here).
    same = NonExistenceProof(b"e", tree.exist(2), tree.exist(2))
    with pytest.raises(ProofError):
        verify_non_membership(TENDERMINT_SPEC, tree.root, CommitmentProof(nonexist=same).to_bytes(), b"e")


def test_smt_spec_neighbours_with_empty_children():
    # A depth-2 sparse tree with an empty right subtree: the left leaf is right-most thanks to the placeholder.
    leaf = SMT_SPEC.leaf_spec
    key, value = b"a", b"1"
    lh = hashlib.sha256(b"\x00" + hashlib.sha256(key).digest() + hashlib.sha256(value).digest()).digest()
    other = hashlib.sha256(b"x").digest()
    step1 = InnerOp(HashOp.SHA256, b"\x01" + other, b"")
    h1 = hashlib.sha256(b"\x01" + other + lh).digest()
    step2 = InnerOp(HashOp.SHA256, b"\x01", bytes(32))
    root = hashlib.sha256(b"\x01" + h1 + bytes(32)).digest()
    ex = ExistenceProof(key, value, LeafOp(leaf.hash, leaf.prehash_key, leaf.prehash_value, leaf.length, leaf.prefix),
                        [step1, step2])
    assert verify_membership(SMT_SPEC, root, CommitmentProof(exist=ex).to_bytes(), key, value)
    # With prehash_key_before_comparison the order is that of sha256(key).
    bigger = next(k for k in (b"%d" % i for i in range(100))
                  if hashlib.sha256(k).digest() > hashlib.sha256(key).digest())
    raw = CommitmentProof(nonexist=NonExistenceProof(bigger, ex, None)).to_bytes()
    assert verify_non_membership(SMT_SPEC, root, raw, bigger)
    assert ref.verify_non_membership(ref.SMT, root, raw, bigger)
    smaller = next(k for k in (b"%d" % i for i in range(100))
                   if hashlib.sha256(k).digest() < hashlib.sha256(key).digest())
    with pytest.raises(ProofError):
        verify_non_membership(SMT_SPEC, root, raw, smaller)


# -------------------------------------------------------------------------------------------- tampering

def _tamper_positions(raw):
    """Every byte offset of a proof, except the payload of a NonExistenceProof's own key field, which Go's
    verification never reads (changing it leaves a valid proof)."""
    cp = CommitmentProof.from_bytes(raw)
    skip = set()
    if cp.nonexist is not None and cp.nonexist.key:
        body_start = len(raw) - len(cp.nonexist.to_bytes())
        key = cp.nonexist.key
        start = body_start + 1 + len(uvarint(len(key)))
        assert raw[start:start + len(key)] == key
        skip = set(range(start, start + len(key)))
    return [i for i in range(len(raw)) if i not in skip]



@pytest.mark.parametrize("name, tree, root, proof, key, value", CASES, ids=[c[0] for c in CASES])
def test_tampering_any_byte_is_refused(name, tree, root, proof, key, value):
    spec = SPECS[tree]
    for i in _tamper_positions(proof):
        for flip in (0x01, 0x80):
            bad = proof[:i] + bytes([proof[i] ^ flip]) + proof[i + 1:]
            with pytest.raises(ProofError):
                _verify(spec, root, bad, key, value)


def test_tampering_fixture_proofs_is_refused():
    for p in STORE["membership_proofs"][:4] + STORE["nonmembership_proofs"][:4]:
        raw, key = bytes.fromhex(p["commitment_proof_hex"]), bytes.fromhex(p["key_hex"])
        value = bytes.fromhex(p.get("value_hex", ""))
        for i in _tamper_positions(raw):
            bad = raw[:i] + bytes([raw[i] ^ 0x04]) + raw[i + 1:]
            with pytest.raises(ProofError):
                _verify(IAVL_SPEC, STORE_ROOT, bad, key, value)


# --------------------------------------------------------------------------------------- hostile bytes

def test_truncations_are_proof_errors():
    for _n, tree, root, proof, key, value in CASES[:2] + CASES[6:8]:
        for n in range(len(proof)):
            with pytest.raises(ProofError):
                _verify(SPECS[tree], root, proof[:n], key, value)
            if n and n % 7 == 0:
                try:
                    CommitmentProof.from_bytes(proof[:n])
                except ProofError:
                    pass


@pytest.mark.parametrize("data, message", [
    (b"\x0a", "truncated varint"),
    (b"\x0a\x05\x0a", "runs past the end"),
    (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "negative length|runs past the end"),
    (b"\x0a\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", "longer than 10 bytes"),
    (b"\x08\x01", "wrong wire type varint for field exist"),
    (b"\x0d\x00\x00\x00\x00", "wrong wire type"),
    (b"\x0a\x02\x08\x01", "wrong wire type varint for field key"),
    (b"\x0a\x04\x1a\x02\x0a\x00", "wrong wire type length-delimited for field hash"),
    (b"\x00", "illegal tag 0"),
    (b"\x7c", "end-group tag"),
    (b"\x7f", "illegal wire type 7"),
    (b"\x7b" + b"\x7b" * 200, "nested deeper"),
    (b"\x79\x00\x00", "truncated fixed64"),
])
def test_hostile_bytes(data, message):
    with pytest.raises(ProofError, match=message):
        CommitmentProof.from_bytes(data)
    with pytest.raises(ProofError):
        verify_membership(IAVL_SPEC, bytes(32), data, b"k", b"v")
    assert ref.decode(data) is None


def test_a_million_inner_ops_fail_fast():
    body = b"\x22\x00" * 1_000_000
    exist = b"\x0a\x01k\x12\x01v" + body
    length = uvarint(len(exist))
    data = b"\x0a" + length + exist
    start = time.perf_counter()
    with pytest.raises(ProofError, match="more than %d entries" % MAX_INNER_OPS):
        CommitmentProof.from_bytes(data)
    with pytest.raises(ProofError):
        verify_membership(IAVL_SPEC, bytes(32), data, b"k", b"v")
    assert time.perf_counter() - start < 5      # linear: stops after MAX_INNER_OPS, never quadratic
    assert ref.decode(data) is None


def test_huge_batch_fails_fast():
    data = b"\x1a" + uvarint(2 * 70000) + b"\x0a\x00" * 70000
    with pytest.raises(ProofError, match="more than 65536 entries"):
        CommitmentProof.from_bytes(data)


# ------------------------------------------------------------------------------------------ input types

class _Generated:
    """Stands in for a generated protobuf class (cosmpy's cosmos.ics23.v1.CommitmentProof)."""

    def __init__(self, raw):
        self.raw = raw

    def SerializeToString(self):
        return self.raw


def test_bytes_like_and_protobuf_objects_accepted():
    _n, _t, root, proof, key, value = CASES[0]
    for form in (bytearray(proof), memoryview(proof), _Generated(proof)):
        assert verify_membership(IAVL_SPEC, root, form, key, value) is True
        assert CommitmentProof.from_bytes(form).to_bytes() == proof
    assert verify_membership(IAVL_SPEC, bytearray(root), proof, memoryview(key), bytearray(value)) is True
    cp = CommitmentProof.from_bytes(proof)
    assert verify_membership(IAVL_SPEC, root, cp.exist, key, value) is True
    _n, _t, root, proof, key, _v = CASES[3]
    assert verify_non_membership(IAVL_SPEC, root, _Generated(proof), bytearray(key)) is True


@pytest.mark.parametrize("args, name", [
    (("spec", b"r", b"p", b"k", b"v"), "spec"),
    ((IAVL_SPEC, "root", b"p", b"k", b"v"), "root"),
    ((IAVL_SPEC, b"r", "proof", b"k", b"v"), "proof"),
    ((IAVL_SPEC, b"r", 12, b"k", b"v"), "proof"),
    ((IAVL_SPEC, b"r", b"p", "key", b"v"), "key"),
    ((IAVL_SPEC, b"r", b"p", b"k", None), "value"),
])
def test_wrong_types_name_the_argument(args, name):
    with pytest.raises(TypeError, match=name):
        verify_membership(*args)
    if name != "value":
        with pytest.raises(TypeError, match=name):
            verify_non_membership(*args[:4])


def test_constructors_check_types():
    with pytest.raises(TypeError, match="key"):
        ExistenceProof(key="text")
    with pytest.raises(TypeError, match="leaf"):
        ExistenceProof(leaf=InnerOp())
    with pytest.raises(TypeError, match=r"path\[0\]"):
        ExistenceProof(path=[LeafOp()])
    with pytest.raises(TypeError, match="hash"):
        InnerOp(hash="SHA256")
    with pytest.raises(TypeError, match="at most one"):
        CommitmentProof(exist=ExistenceProof(), nonexist=NonExistenceProof())
    with pytest.raises(TypeError, match="data"):
        CommitmentProof.from_bytes("0a00")
    with pytest.raises(TypeError, match="positional"):
        CommitmentProof(ExistenceProof())
    assert ExistenceProof(key=bytearray(b"k")).key == b"k"


class _Descriptor:
    def __init__(self, full_name):
        self.full_name = full_name


class _GeneratedMessage(_Generated):
    """A generated class of another ics23 message (cosmpy's ExistenceProof, ...): DESCRIPTOR names it."""

    def __init__(self, raw, full_name):
        super().__init__(raw)
        self.DESCRIPTOR = _Descriptor(full_name)


def test_generated_existence_and_non_existence_messages_accepted():
    _n, _t, root, proof, key, value = CASES[0]
    exist = CommitmentProof.from_bytes(proof).exist.to_bytes()
    generated = _GeneratedMessage(exist, "cosmos.ics23.v1.ExistenceProof")
    assert verify_membership(IAVL_SPEC, root, generated, key, value) is True
    _n, _t, root, proof, key, _v = CASES[3]
    nonexist = CommitmentProof.from_bytes(proof).nonexist.to_bytes()
    generated = _GeneratedMessage(nonexist, "cosmos.ics23.v1.NonExistenceProof")
    assert verify_non_membership(IAVL_SPEC, root, generated, key) is True
    whole = _GeneratedMessage(proof, "cosmos.ics23.v1.CommitmentProof")
    assert verify_non_membership(IAVL_SPEC, root, whole, key) is True
