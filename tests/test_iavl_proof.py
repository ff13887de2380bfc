"""ICS23 proofs from MutableTree (Go iavl's GetMembershipProof / GetNonMembershipProof).

* Go's own proofs: the iavl_store_A fixture's operation log replayed on a MemoryDB tree gives Go's roots, and the
  20 membership, 20 non-membership and the empty-value proofs Go made from it come out byte for byte.
* A pure-Python reference written from proof_ics23.go / proof.go: it reads the saved nodes back from the database
  with mpt.iavl._reference's decoder, walks them like PathToLeaf / GetWithIndex / GetByIndex and encodes the
  protobuf by hand; random trees (several versions, removes, both storage formats, reopened from the database)
  must give the same bytes, and every proof verifies with mpt.ics23 against the tree's hash.
"""
import bisect
import hashlib
import json
import os
import random

import pytest

from mpt.errors import ProofError, VersionError
from mpt.iavl import MutableTree
from mpt.iavl import _reference as R
from mpt.iavl.proof import membership_proof_bytes, non_membership_proof_bytes
from mpt.ics23 import IAVL_SPEC, CommitmentProof, verify_membership, verify_non_membership

from conftest import replay_iavl_ops

HERE = os.path.dirname(os.path.abspath(__file__))
STORE_A = os.path.join(HERE, "vectors", "cosmos", "iavl_store_A")


# ---------------------------------------------------------------------------------------------- Go's fixture

@pytest.fixture(scope="module")
def store_a():
    """(tree after the whole log, iavl_store.json): every logged root checked on the way."""
    tree = MutableTree()
    with open(os.path.join(STORE_A, "ops.jsonl")) as f:
        replay_iavl_ops(tree, [json.loads(line) for line in f])
    with open(os.path.join(STORE_A, "iavl_store.json")) as f:
        return tree, json.load(f)


def test_go_membership_proofs_byte_identical(store_a):
    tree, data = store_a
    root = bytes.fromhex(data["latest_root_hex"])
    assert tree.hash() == root
    assert len(data["membership_proofs"]) == 20
    for entry in data["membership_proofs"]:
        key, value = bytes.fromhex(entry["key_hex"]), bytes.fromhex(entry["value_hex"])
        proof = tree.membership_proof(key)
        assert isinstance(proof, CommitmentProof)
        assert proof.to_bytes().hex() == entry["commitment_proof_hex"]
        assert membership_proof_bytes(tree, key).hex() == entry["commitment_proof_hex"]
        assert proof.exist.value == value
        assert verify_membership(IAVL_SPEC, root, proof, key, value) is True
        assert tree.membership_proof(key, version=6).to_bytes() == proof.to_bytes()


def test_go_non_membership_proofs_byte_identical(store_a):
    tree, data = store_a
    root = bytes.fromhex(data["latest_root_hex"])
    assert len(data["nonmembership_proofs"]) == 20
    for entry in data["nonmembership_proofs"]:
        key = bytes.fromhex(entry["key_hex"])
        proof = tree.non_membership_proof(key)
        assert proof.to_bytes().hex() == entry["commitment_proof_hex"]
        assert non_membership_proof_bytes(tree, key).hex() == entry["commitment_proof_hex"]
        assert verify_non_membership(IAVL_SPEC, root, proof, key) is True
        assert tree.non_membership_proof(key, version=6).to_bytes() == proof.to_bytes()


def test_go_empty_value_proof_byte_identical_and_rejected(store_a):
    """iavl stores and proves an empty value; ics23's LeafOp.Apply refuses it ("leaf op needs value")."""
    tree, data = store_a
    root = bytes.fromhex(data["latest_root_hex"])
    assert data["empty_value_membership_proofs"]
    for entry in data["empty_value_membership_proofs"]:
        key = bytes.fromhex(entry["key_hex"])
        assert entry["value_hex"] == ""
        proof = tree.membership_proof(key)
        assert proof.to_bytes().hex() == entry["commitment_proof_hex"]
        assert proof.exist.value == b""
        with pytest.raises(ProofError):
            verify_membership(IAVL_SPEC, root, proof, key, b"")


@pytest.mark.parametrize("version", [3, 4, 5])
def test_older_versions_verify_against_their_roots(store_a, version):
    tree, data = store_a
    (entry,) = [v for v in data["versions"] if v["version"] == version]
    root = bytes.fromhex(entry["root_hash_hex"])
    for item in entry["present"][:10]:
        key, value = bytes.fromhex(item["key_hex"]), bytes.fromhex(item["value_hex"])
        proof = tree.membership_proof(key, version)
        assert proof.calculate_root() == root
        if value:
            assert verify_membership(IAVL_SPEC, root, proof, key, value)
    for key_hex in entry["absent_hex"][:10]:
        key = bytes.fromhex(key_hex)
        proof = tree.non_membership_proof(key, version)
        assert verify_non_membership(IAVL_SPEC, root, proof, key)
    # Versions 1 and 2 were pruned.
    with pytest.raises(VersionError):
        tree.membership_proof(key, 2)
    # Not against the latest root: the versions differ.
    key = bytes.fromhex(entry["present"][0]["key_hex"])
    assert tree.membership_proof(key, version).calculate_root() != tree.hash()


def test_fixture_reference_agrees(store_a):
    """The reference (below) on the same database gives Go's bytes too: it is a check of the checker."""
    tree, data = store_a
    ref = RefTree(tree.db, 6)
    for entry in data["membership_proofs"][:5]:
        assert ref.membership(bytes.fromhex(entry["key_hex"])).hex() == entry["commitment_proof_hex"]
    for entry in data["nonmembership_proofs"][:5]:
        assert ref.non_membership(bytes.fromhex(entry["key_hex"])).hex() == entry["commitment_proof_hex"]


# ---------------------------------------------------------------------------------------------- reference

def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field; proto3 leaves out empty bytes, so callers pass non-empty sub-messages."""
    return R.uvarint(number << 3 | 2) + R.uvarint(len(payload)) + payload


def _bytes_field(number: int, value: bytes) -> bytes:
    return _field(number, value) if value else b""


class RefTree:
    """A saved version read back from the database with the reference decoder (dicts), and Go's proof code."""

    def __init__(self, db, version: int):
        self.db = db
        data = db.get(b"s" + R.node_key(version, 1))
        if data is not None:
            if data == b"":
                self.root = None
            elif len(data) == 13 and data[:1] == b"s":
                self.root = self._load(data[1:])
            else:
                self.root = self._node(R.decode(data, "v1", version))
        else:
            ref = db.get(b"r" + version.to_bytes(8, "big"))
            assert ref is not None, "no version %d" % version
            self.root = self._load(ref) if ref else None
        self.keys = []
        self._leaves(self.root)

    def _load(self, ref: bytes) -> dict:
        if len(ref) == 12:
            return self._node(R.decode(self.db.get(b"s" + ref), "v1", int.from_bytes(ref[:8], "big")))
        return self._node(R.decode(self.db.get(b"n" + ref), "legacy"))

    def _node(self, n: dict) -> dict:
        if n["height"] > 0:
            if "left_node_key" in n:
                n["left"], n["right"] = self._load(n["left_node_key"]), self._load(n["right_node_key"])
            else:
                n["left"], n["right"] = self._load(n["left_hash"]), self._load(n["right_hash"])
        n["hash"] = R.node_hash(n)
        return n

    def _leaves(self, n):
        if n is None:
            return
        if n["height"] == 0:
            self.keys.append(n["key"])
        else:
            self._leaves(n["left"])
            self._leaves(n["right"])

    def _existence(self, key: bytes) -> bytes:
        """PathToLeaf + convertLeafOp + convertInnerOps, encoded."""
        path, node = [], self.root
        while node["height"] > 0:
            if key < node["key"]:
                path.append((node, None, node["right"]["hash"]))
                node = node["left"]
            else:
                path.append((node, node["left"]["hash"], None))
                node = node["right"]
        assert node["key"] == key
        leaf_prefix = R.varint(0) + R.varint(1) + R.varint(node["version"])
        leaf_op = b"\x08\x01\x18\x01\x20\x01" + _field(5, leaf_prefix)
        out = _bytes_field(1, key) + _bytes_field(2, node["value"]) + _field(3, leaf_op)
        for inner, left, right in reversed(path):
            prefix = R.varint(inner["height"]) + R.varint(inner["size"]) + R.varint(inner["version"])
            if left is not None:
                prefix += b"\x20" + left + b"\x20"
                suffix = b""
            else:
                prefix += b"\x20"
                suffix = b"\x20" + right
            out += _field(4, b"\x08\x01" + _field(2, prefix) + _bytes_field(3, suffix))
        return out

    def membership(self, key: bytes) -> bytes:
        return _field(1, self._existence(key))

    def non_membership(self, key: bytes) -> bytes:
        idx = bisect.bisect_left(self.keys, key)
        assert idx == len(self.keys) or self.keys[idx] != key
        body = _bytes_field(1, key)
        if idx >= 1:
            body += _field(2, self._existence(self.keys[idx - 1]))
        if idx < len(self.keys):
            body += _field(3, self._existence(self.keys[idx]))
        return R.uvarint(2 << 3 | 2) + R.uvarint(len(body)) + body


# ---------------------------------------------------------------------------------------------- random trees

def _random_tree(seed: int, fmt: str = "v1", versions: int = 4, per_version: int = 120):
    rng = random.Random(seed)
    tree = MutableTree(format=fmt)
    model = {}
    for _ in range(versions):
        for _ in range(per_version):
            r = rng.random()
            if model and r < 0.2:
                key = rng.choice(sorted(model))
                tree.remove(key)
                del model[key]
            elif model and r < 0.35:
                key = rng.choice(sorted(model))
                model[key] = rng.randbytes(rng.randrange(1, 40))
                tree.set(key, model[key])
            else:
                key = rng.randbytes(rng.randrange(1, 12))
                model[key] = rng.randbytes(rng.randrange(1, 40))
                tree.set(key, model[key])
        tree.save_version()
    return tree, model, rng


def _absent_keys(rng, model, n):
    keys = sorted(model)
    out = [b"\x00", b"\xff" * 13, keys[0][:-1] if len(keys[0]) > 1 else b"", keys[-1] + b"\x00"]
    while len(out) < n:
        out.append(rng.randbytes(rng.randrange(1, 12)))
    return [k for k in out if k not in model]


@pytest.mark.parametrize("fmt", ["v1", "legacy"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_trees_match_reference_and_verify(seed, fmt):
    tree, model, rng = _random_tree(seed, fmt)
    root = tree.hash()
    ref = RefTree(tree.db, tree.version)
    assert ref.keys == sorted(model)
    for key in rng.sample(sorted(model), 25):
        proof = tree.membership_proof(key)
        wire = proof.to_bytes()
        assert wire == ref.membership(key) == membership_proof_bytes(tree, key)
        assert verify_membership(IAVL_SPEC, root, proof, key, model[key])
        assert verify_membership(IAVL_SPEC, root, wire, key, model[key])
    for key in _absent_keys(rng, model, 25):
        proof = tree.non_membership_proof(key)
        wire = proof.to_bytes()
        assert wire == ref.non_membership(key) == non_membership_proof_bytes(tree, key)
        if key:
            assert verify_non_membership(IAVL_SPEC, root, proof, key)
            assert verify_non_membership(IAVL_SPEC, root, wire, key)


@pytest.mark.parametrize("fmt", ["v1", "legacy"])
def test_reopened_tree_loads_siblings(fmt):
    """A tree opened from the database has v1 nodes without child hashes: the walk loads the siblings."""
    tree, model, rng = _random_tree(7, fmt)
    reopened = MutableTree(tree.db, format=fmt)
    reopened.load()
    for key in rng.sample(sorted(model), 20):
        assert reopened.membership_proof(key).to_bytes() == tree.membership_proof(key).to_bytes()
    for key in _absent_keys(rng, model, 20):
        assert reopened.non_membership_proof(key).to_bytes() == tree.non_membership_proof(key).to_bytes()
    older = MutableTree(tree.db, format=fmt)
    ref = RefTree(tree.db, 2)
    for key in ref.keys[::7]:
        assert older.membership_proof(key, 2).to_bytes() == ref.membership(key)


def test_working_tree_is_proven_with_the_working_version():
    """version=None proves the working tree (Go's MutableTree proves its working ImmutableTree); nodes not saved
    yet carry the working version, so the proofs are those of the same tree once saved."""
    tree, model, rng = _random_tree(11)
    saved_root = tree.hash()
    for _ in range(60):
        key = rng.randbytes(rng.randrange(1, 12))
        model[key] = rng.randbytes(8)
        tree.set(key, model[key])
    for key in rng.sample(sorted(model), 10):
        tree.remove(key)
        del model[key]
    working_root = tree.hash()
    assert working_root != saved_root
    probe = rng.sample(sorted(model), 30)
    absent = _absent_keys(rng, model, 20)
    before = [tree.membership_proof(k).to_bytes() for k in probe]
    before_absent = [tree.non_membership_proof(k).to_bytes() for k in absent]
    for key, wire in zip(probe, before):
        assert verify_membership(IAVL_SPEC, working_root, wire, key, model[key])
    # The last saved version is still there to prove from.
    old_key = next(k for k in RefTree(tree.db, tree.version).keys)
    assert tree.membership_proof(old_key, tree.version).calculate_root() == saved_root
    assert tree.save_version()[0] == working_root
    assert [tree.membership_proof(k).to_bytes() for k in probe] == before
    assert [tree.non_membership_proof(k).to_bytes() for k in absent] == before_absent
    ref = RefTree(tree.db, tree.version)
    assert [ref.membership(k) for k in probe] == before


def test_edges_of_the_tree():
    tree = MutableTree()
    for i in range(1, 40):
        tree.set(bytes([i * 3]), b"v%d" % i)
    tree.save_version()
    root = tree.hash()
    below = tree.non_membership_proof(b"\x01").nonexist
    assert below.left is None and below.right.key == bytes([3])
    above = tree.non_membership_proof(b"\xff").nonexist
    assert above.right is None and above.left.key == bytes([39 * 3])
    between = tree.non_membership_proof(bytes([31])).nonexist
    assert (between.left.key, between.right.key) == (bytes([30]), bytes([33]))
    for key in (b"\x01", b"\xff", bytes([31]), bytes([30, 0])):
        assert verify_non_membership(IAVL_SPEC, root, tree.non_membership_proof(key), key)
    for key in (bytes([3]), bytes([39 * 3])):
        assert verify_membership(IAVL_SPEC, root, tree.membership_proof(key), key, tree.get(key))


def test_single_leaf_and_empty_tree():
    tree = MutableTree()
    with pytest.raises(ProofError, match="key does not exist"):
        tree.membership_proof(b"k")
    # Go: a NonExistenceProof with the key and no neighbours (it verifies against nothing).
    proof = tree.non_membership_proof(b"k")
    assert proof.nonexist.key == b"k" and proof.nonexist.left is None and proof.nonexist.right is None
    assert proof.to_bytes() == bytes.fromhex("1203") + b"\x0a\x01k"
    tree.set(b"k", b"v")
    root, _ = tree.save_version()
    proof = tree.membership_proof(b"k")
    assert proof.exist.path == []
    assert proof.exist.leaf.prefix == b"\x00\x02\x02"           # varint 0, 1 and version 1
    expect = hashlib.sha256(b"\x00\x02\x02\x01k\x20" + hashlib.sha256(b"v").digest()).digest()
    assert root == expect and verify_membership(IAVL_SPEC, root, proof, b"k", b"v")
    assert verify_non_membership(IAVL_SPEC, root, tree.non_membership_proof(b"a"), b"a")


def test_errors():
    tree, model, rng = _random_tree(5, versions=2)
    present = sorted(model)[3]
    with pytest.raises(ProofError, match="^key does not exist$"):
        tree.membership_proof(present + b"\x00\x00")
    with pytest.raises(ProofError, match="^cannot create NonExistanceProof when Key in State$"):
        tree.non_membership_proof(present)
    for bad in ("key", 5, None, ["k"]):
        with pytest.raises(TypeError, match="key"):
            tree.membership_proof(bad)
        with pytest.raises(TypeError, match="key"):
            tree.non_membership_proof(bad)
    for bad in ("1", 1.0, b"\x01"):
        with pytest.raises(TypeError, match="version"):
            tree.membership_proof(present, bad)
        with pytest.raises(TypeError, match="version"):
            tree.non_membership_proof(present + b"\x00\x00", version=bad)
    for missing in (0, -1, 3, 2**63, 2**70):
        with pytest.raises(VersionError):
            tree.membership_proof(present, missing)
        with pytest.raises(VersionError):
            tree.non_membership_proof(present + b"\x00\x00", missing)
    # bytes-like keys are taken
    assert tree.membership_proof(bytearray(present)).to_bytes() == tree.membership_proof(present).to_bytes()


def test_tampered_proofs_fail():
    tree, model, rng = _random_tree(9, versions=2, per_version=60)
    root = tree.hash()
    key = sorted(model)[len(model) // 2]
    wire = tree.membership_proof(key).to_bytes()
    absent = _absent_keys(rng, model, 5)[-1]
    nwire = tree.non_membership_proof(absent).to_bytes()
    # Go's VerifyNonMembership never reads NonExistenceProof.key (the neighbours must enclose the key asked
    # about, and that is all): the bytes of that field may change freely.
    key_field = len(R.uvarint(len(nwire) - 1)) + 1
    free = range(key_field, key_field + 2 + len(absent))
    assert nwire[key_field:key_field + 2 + len(absent)] == b"\x0a" + bytes([len(absent)]) + absent
    for data, check, skip in ((wire, lambda d: verify_membership(IAVL_SPEC, root, d, key, model[key]), ()),
                              (nwire, lambda d: verify_non_membership(IAVL_SPEC, root, d, absent), free)):
        assert check(data)
        for i in range(len(data)):
            if i in skip:
                continue
            bad = bytearray(data)
            bad[i] ^= 1 << (i % 8)
            try:
                ok = check(bytes(bad))
            except ProofError:
                ok = False
            assert not ok, "byte %d flipped still verifies" % i
    other = tree.membership_proof(sorted(model)[0])
    with pytest.raises(ProofError):
        verify_membership(IAVL_SPEC, root, other, key, model[key])


def test_objects_equal_those_of_the_public_constructors():
    """The proof objects are made without __init__: they must be what the constructors would have made."""
    from mpt.ics23 import ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp, NonExistenceProof

    tree, model, rng = _random_tree(13, versions=2, per_version=80)

    def rebuilt(ep):
        leaf = LeafOp(hash=HashOp.SHA256, prehash_value=HashOp.SHA256, length=LengthOp.VAR_PROTO,
                      prefix=ep.leaf.prefix)
        path = [InnerOp(hash=HashOp.SHA256, prefix=op.prefix, suffix=op.suffix) for op in ep.path]
        return ExistenceProof(key=ep.key, value=ep.value, leaf=leaf, path=path)

    key = sorted(model)[5]
    proof = tree.membership_proof(key)
    assert proof == CommitmentProof(exist=rebuilt(proof.exist))
    assert proof.which() == "exist" and proof.batch is None and proof.compressed is None
    assert type(proof.exist.leaf.hash) is HashOp and type(proof.exist.leaf.length) is LengthOp
    assert proof.exist.leaf.prehash_key is HashOp.NO_HASH
    assert all(type(op.hash) is HashOp and type(op.prefix) is bytes and type(op.suffix) is bytes
               for op in proof.exist.path)
    assert type(proof.exist.path) is list
    absent = key + b"\x00"
    assert absent not in model
    proof = tree.non_membership_proof(absent)
    n = proof.nonexist
    assert proof == CommitmentProof(nonexist=NonExistenceProof(key=absent, left=rebuilt(n.left),
                                                               right=rebuilt(n.right)))
    # Fresh objects each time: changing one proof leaves the next alone.
    proof.nonexist.left.path[0].prefix = b""
    assert tree.non_membership_proof(absent).nonexist.left.path[0].prefix != b""


def test_proofs_from_gos_own_leveldb_store(tmp_path):
    """The tree opened on Go's goleveldb directory (nodes written by Go, versions 1 and 2 pruned) proves like Go."""
    pytest.importorskip("plyvel")
    import shutil

    from mpt.db import LevelDBStore

    path = tmp_path / "iavl.db"
    shutil.copytree(os.path.join(STORE_A, "iavl.db"), path)   # LevelDB rewrites its files on open
    with open(os.path.join(STORE_A, "iavl_store.json")) as f:
        data = json.load(f)
    with LevelDBStore(path, readonly=True) as store:
        tree = MutableTree(store)
        assert tree.load() == 6
        for entry in data["membership_proofs"] + data["empty_value_membership_proofs"]:
            key = bytes.fromhex(entry["key_hex"])
            assert tree.membership_proof(key).to_bytes().hex() == entry["commitment_proof_hex"]
        for entry in data["nonmembership_proofs"]:
            key = bytes.fromhex(entry["key_hex"])
            assert tree.non_membership_proof(key).to_bytes().hex() == entry["commitment_proof_hex"]
        for entry in data["versions"][:-1]:
            root = bytes.fromhex(entry["root_hash_hex"])
            item = entry["present"][1]
            proof = tree.membership_proof(bytes.fromhex(item["key_hex"]), entry["version"])
            assert proof.calculate_root() == root
        with pytest.raises(VersionError):
            tree.non_membership_proof(b"\x00", 2)


def test_proof_functions_take_only_a_mutable_tree():
    # The proof walk casts the path's nodes unchecked: a look-alike tree must be refused, not trusted.
    from mpt.iavl import proof as iavl_proof

    class FakeTree:
        def path_to_leaf(self, key, version=None, index=None):
            return [1, 2, 3], 0

    for fn in (iavl_proof.membership_proof_bytes, iavl_proof.membership_proof,
               iavl_proof.non_membership_proof_bytes, iavl_proof.non_membership_proof):
        with pytest.raises(TypeError, match="tree must be an mpt.iavl.MutableTree, not FakeTree"):
            fn(FakeTree(), b"k")


def test_path_to_leaf_is_gos_path_to_leaf_and_get_with_index():
    tree = MutableTree()
    assert tree.path_to_leaf(b"k") == ([], 0)
    keys = [b"key%03d" % i for i in range(0, 200, 2)]
    for k in keys:
        tree.set(k, b"v" + k)
    root_hash, version = tree.save_version()
    tree.set(b"key001", b"new")                 # the working tree differs from the saved version

    def check_chain(nodes, root):
        assert nodes[0].hash == root
        for parent, child in zip(nodes, nodes[1:]):
            assert child.hash in (parent.left_hash, parent.right_hash)
        assert nodes[-1].is_leaf and not any(n.is_leaf for n in nodes[:-1])

    for k in [b"key000", b"key042", b"key041", b"key198", b"key199", b"a", b"z"]:
        nodes, rank = tree.path_to_leaf(k, version)
        check_chain(nodes, root_hash)
        assert rank == bisect.bisect_left(keys, k)
        if k in keys:
            assert nodes[-1].key == k and nodes[-1].value == b"v" + k
        else:                                   # a neighbour of the absent key: iavl's PathToLeaf
            assert nodes[-1].key in keys[max(rank - 1, 0):rank + 1]
    for i in (0, 37, len(keys) - 1):
        nodes, rank = tree.path_to_leaf(b"", version, i)
        check_chain(nodes, root_hash)
        assert (nodes[-1].key, rank) == (keys[i], i)
    nodes, rank = tree.path_to_leaf(b"key001")  # the working tree (version None): the key set since the save
    check_chain(nodes, tree.hash())
    assert (nodes[-1].key, nodes[-1].value, rank) == (b"key001", b"new", 1)
    with pytest.raises(IndexError):
        tree.path_to_leaf(b"", version, len(keys))
    with pytest.raises(VersionError):
        tree.path_to_leaf(b"k", version + 5)
