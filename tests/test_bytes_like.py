"""One bytes-like policy over every tree family's entry points (mpt/bytes_like.pxd).

As hashlib decides: bytes, bytearray, memoryview and any other C-contiguous buffer (array.array) are taken and
give the same answer as bytes; str, int, None and non-contiguous buffers are a TypeError worded
``<argument> must be a bytes-like object, not <type>``, the same on every entry point.
"""
import array
import json
import re
from pathlib import Path

import pytest

import mpt
from mpt import SecureTrie, StackTrie, Trie, build_root, derive_sha, merkle, verify_proof, verify_range_proof
from mpt.iavl import InnerNode, LeafNode, MutableTree
from mpt.ics23 import IAVL_SPEC, verify_abci_query, verify_ibc_merkle_proof, verify_membership
from mpt.ics23.ops import verify_membership_objects

ACCEPTED = [
    pytest.param(bytes, id="bytes"),
    pytest.param(bytearray, id="bytearray"),
    pytest.param(memoryview, id="memoryview"),
    pytest.param(lambda b: array.array("B", b), id="array"),
]


def _strided(b):
    # The same bytes, every other one of a buffer twice as long: not C-contiguous (from 2 bytes on).
    assert len(b) >= 2
    return memoryview(bytes(x for c in b for x in (c, 0)))[::2]


REFUSED = [
    pytest.param(_strided, "memoryview", id="strided-memoryview"),
    pytest.param(lambda b: b.decode("latin-1"), "str", id="str"),
    pytest.param(lambda b: 5, "int", id="int"),
    pytest.param(lambda b: None, "NoneType", id="None"),
]


# ---------------------------------------------------------------------------------------------- the fixtures

def _trie():
    t = Trie()
    for i in range(20):
        t[b"key%02d" % i] = b"value %d" % i
    return t


TRIE = _trie()
TRIE.commit()                   # stored: Trie(db=TRIE.db, root=TRIE_ROOT) opens it
TRIE_ROOT = TRIE.hash()
TRIE_PROOF = TRIE.prove(b"key03")
RANGE_PROOF = TRIE.prove_many([b"key03", b"key05"])
RANGE_KEYS = [b"key03", b"key04", b"key05"]
RANGE_VALUES = [TRIE[k] for k in RANGE_KEYS]

LEAVES = [b"leaf %d" % i for i in range(5)]
MERKLE_ROOT, MERKLE_PROOFS = merkle.proofs(LEAVES)


def _iavl():
    tree = MutableTree()
    for i in range(10):
        tree.set(b"k%d" % i, b"v%d" % i)
    tree.save_version()
    return tree


IAVL = _iavl()
IAVL_ROOT = IAVL.hash()
IAVL_PROOF = IAVL.membership_proof(b"k3")
HASH = bytes(range(32))


def _root_after(make, change):
    """The root of a fresh tree from make() after change(tree)."""
    tree = make()
    change(tree)
    return tree.working_hash() if isinstance(tree, MutableTree) else tree.hash()


def _inner(key=b"key", left_hash=HASH, right_hash=HASH):
    return InnerNode(key, 1, 2, 1, left_hash, right_hash).hash


# (id, argument name as the message gives it, the bytes it is tested with, a call taking that argument);
# the arguments in OPTIONAL take None for "not given" (or, merkle's root_hash, refuse it as CometBFT does).
OPTIONAL = {"Trie root", "MutableTree.items start", "InnerNode left_hash",
            "merkle.Proof.verify root"}
ENTRY_POINTS = [
    ("Trie.update key", "key", b"key03", lambda x: _root_after(_trie, lambda t: t.update(x, b"new"))),
    ("Trie.update value", "value", b"new", lambda x: _root_after(_trie, lambda t: t.update(b"key03", x))),
    ("Trie.get", "key", b"key04", lambda x: TRIE.get(x)),
    ("Trie.delete", "key", b"key04", lambda x: _root_after(_trie, lambda t: t.delete(x))),
    ("Trie root", "root", TRIE_ROOT, lambda x: Trie(db=TRIE.db, root=x).hash()),
    ("Trie.items start", "start", b"key17", lambda x: list(TRIE.items(start=x))),
    ("Trie.prove", "key", b"key04", lambda x: TRIE.prove(x)),
    ("SecureTrie.update key", "key", b"acct", lambda x: _root_after(SecureTrie, lambda t: t.update(x, b"value"))),
    ("SecureTrie.update value", "value", b"value", lambda x: _root_after(SecureTrie, lambda t: t.update(b"acct", x))),
    ("StackTrie.update key", "key", b"\x01\x02", lambda x: _root_after(StackTrie, lambda t: t.update(x, b"value"))),
    ("StackTrie.update value", "value", b"value", lambda x: _root_after(StackTrie, lambda t: t.update(b"\x01\x02", x))),
    ("build_root key", "pair 0: key", b"key", lambda x: build_root([(x, b"value")])),
    ("build_root value", "pair 0: value", b"value", lambda x: build_root([(b"key", x)])),
    ("derive_sha", "derive_sha() items[0]", b"\xc2\x01\x02", lambda x: derive_sha([x])),
    ("verify_proof root", "root", TRIE_ROOT, lambda x: verify_proof(x, b"key03", TRIE_PROOF)),
    ("verify_proof key", "key", b"key03", lambda x: verify_proof(TRIE_ROOT, x, TRIE_PROOF)),
    ("verify_proof node", "proof node", TRIE_PROOF[0],
     lambda x: verify_proof(TRIE_ROOT, b"key03", [x] + TRIE_PROOF[1:])),
    ("verify_range_proof first_key", "first_key", b"key03",
     lambda x: verify_range_proof(TRIE_ROOT, x, RANGE_KEYS, RANGE_VALUES, RANGE_PROOF)),
    ("verify_range_proof keys", "key", b"key04",
     lambda x: verify_range_proof(TRIE_ROOT, b"key03", [b"key03", x, b"key05"], RANGE_VALUES, RANGE_PROOF)),
    ("verify_range_proof values", "value", RANGE_VALUES[1],
     lambda x: verify_range_proof(TRIE_ROOT, b"key03", RANGE_KEYS, [RANGE_VALUES[0], x, RANGE_VALUES[2]],
                                  RANGE_PROOF)),
    ("merkle.root", "items[1]", LEAVES[1], lambda x: merkle.root([LEAVES[0], x] + LEAVES[2:])),
    ("merkle.proofs", "items[0]", LEAVES[0], lambda x: merkle.proofs([x] + LEAVES[1:])[0]),
    ("merkle.leaf_hash", "leaf", LEAVES[0], merkle.leaf_hash),
    ("merkle.Proof.verify root", "root_hash", MERKLE_ROOT, lambda x: MERKLE_PROOFS[2].verify(x, LEAVES[2])),
    ("merkle.Proof.verify leaf", "leaf", LEAVES[2], lambda x: MERKLE_PROOFS[2].verify(MERKLE_ROOT, x)),
    ("merkle.Proof leaf_hash", "LeafHash", HASH, lambda x: merkle.Proof(1, 0, x).leaf_hash),
    ("merkle.map_root value", "map value", b"value", lambda x: merkle.map_root({"store": x})),
    ("MutableTree.set key", "key", b"k3", lambda x: _root_after(_iavl, lambda t: t.set(x, b"new"))),
    ("MutableTree.set value", "value", b"new", lambda x: _root_after(_iavl, lambda t: t.set(b"k3", x))),
    ("MutableTree.get", "key", b"k4", lambda x: IAVL.get(x)),
    ("MutableTree.remove", "key", b"k4", lambda x: _root_after(_iavl, lambda t: t.remove(x))),
    ("MutableTree.items start", "start", b"k7", lambda x: list(IAVL.items(start=x))),
    ("MutableTree.membership_proof", "key", b"k3", lambda x: IAVL.membership_proof(x).to_bytes()),
    ("LeafNode key", "key", b"key", lambda x: LeafNode(x, b"value", 1).hash),
    ("LeafNode value", "value", b"value", lambda x: LeafNode(b"key", x, 1).hash),
    ("InnerNode key", "key", b"key", lambda x: _inner(key=x)),
    ("InnerNode left_hash", "left_hash", HASH, lambda x: _inner(left_hash=x)),
    ("ics23 verify_membership root", "root", IAVL_ROOT,
     lambda x: verify_membership(IAVL_SPEC, x, IAVL_PROOF, b"k3", b"v3")),
    ("ics23 verify_membership key", "key", b"k3",
     lambda x: verify_membership(IAVL_SPEC, IAVL_ROOT, IAVL_PROOF, x, b"v3")),
    ("ics23 verify_membership value", "value", b"v3",
     lambda x: verify_membership(IAVL_SPEC, IAVL_ROOT, IAVL_PROOF, b"k3", x)),
    ("ics23 verify_membership_objects key", "key", b"k3",
     lambda x: verify_membership_objects(IAVL_SPEC, IAVL_ROOT, IAVL_PROOF, x, b"v3")),
]
ENTRY_IDS = [e[0] for e in ENTRY_POINTS]


@pytest.mark.parametrize("wrap", ACCEPTED)
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_every_bytes_like_gives_the_answer_of_bytes(entry, wrap):
    _, _, good, call = entry
    assert call(wrap(good)) == call(good)


@pytest.mark.parametrize("wrap, type_name", REFUSED)
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=ENTRY_IDS)
def test_anything_else_is_one_type_error(entry, wrap, type_name):
    label, name, good, call = entry
    if wrap(good) is None and label in OPTIONAL:
        pytest.skip("None is this argument's default")
    suffix = r" \(not C-contiguous\)" if wrap is _strided else ""
    with pytest.raises(TypeError, match=r"^%s must be a bytes-like object, not %s%s$"
                       % (re.escape(name), type_name, suffix)):
        call(wrap(good))


# ICS23's Python entry points over chain data (tests/vectors/cosmos/abci). A str is not refused there: by the
# documented rule a hash given as str is hex and a key given as str is its UTF-8 text, so the refusals below
# are those of every other type.
ABCI = Path(__file__).parent / "vectors" / "cosmos" / "abci"
ABCI_MANIFEST = json.loads((ABCI / "vectors.json").read_text())
APP_HASH = bytes.fromhex(ABCI_MANIFEST["app_hash_hex"])
PRESENT = json.loads((ABCI / "present.json").read_text())
PRESENT_KEY = bytes.fromhex(ABCI_MANIFEST["queries"]["present.json"]["key_hex"])
PRESENT_STORE = __import__("base64").b64decode(PRESENT["result"]["response"]["proofOps"]["ops"][1]["key"])
IBC_CASE = ABCI_MANIFEST["ibc"]["membership"]
IBC_PROOF = bytes.fromhex(IBC_CASE["merkle_proof_hex"])
IBC_PATH = [bytes.fromhex(k) for k in IBC_CASE["path_hex"]]
IBC_VALUE = bytes.fromhex(IBC_CASE["value_hex"])

ICS23_OPTIONAL = {"verify_abci_query key", "verify_abci_query store", "verify_ibc_merkle_proof value"}
ICS23_ENTRY_POINTS = [
    ("verify_abci_query app_hash", "app_hash", APP_HASH, lambda x: verify_abci_query(PRESENT, x)),
    ("verify_abci_query key", "key", PRESENT_KEY, lambda x: verify_abci_query(PRESENT, APP_HASH, key=x)),
    ("verify_abci_query store", "store", PRESENT_STORE, lambda x: verify_abci_query(PRESENT, APP_HASH, store=x)),
    ("verify_ibc_merkle_proof root", "root", APP_HASH,
     lambda x: verify_ibc_merkle_proof(IBC_PROOF, x, IBC_PATH, IBC_VALUE)),
    ("verify_ibc_merkle_proof value", "value", IBC_VALUE,
     lambda x: verify_ibc_merkle_proof(IBC_PROOF, APP_HASH, IBC_PATH, x)),
    ("verify_ibc_merkle_proof path key", "path[1]", IBC_PATH[1],
     lambda x: verify_ibc_merkle_proof(IBC_PROOF, APP_HASH, [IBC_PATH[0], x], IBC_VALUE)),
]
ICS23_IDS = [e[0] for e in ICS23_ENTRY_POINTS]


@pytest.mark.parametrize("wrap", ACCEPTED)
@pytest.mark.parametrize("entry", ICS23_ENTRY_POINTS, ids=ICS23_IDS)
def test_ics23_entry_points_take_every_bytes_like(entry, wrap):
    _, _, good, call = entry
    assert call(wrap(good)) == call(good)


@pytest.mark.parametrize("wrap, type_name", [p for p in REFUSED if p.id != "str"])
@pytest.mark.parametrize("entry", ICS23_ENTRY_POINTS, ids=ICS23_IDS)
def test_ics23_entry_points_refuse_the_rest_with_one_type_error(entry, wrap, type_name):
    label, name, good, call = entry
    if wrap(good) is None and label in ICS23_OPTIONAL:
        pytest.skip("None is this argument's default")
    suffix = r" \(not C-contiguous\)" if wrap is _strided else ""
    with pytest.raises(TypeError, match=r"^%s must be a bytes-like object, not %s%s$"
                       % (re.escape(name), type_name, suffix)):
        call(wrap(good))


def test_ics23_str_rule():
    """A hash as str is its hex (0x optional), a key or store name as str is its UTF-8 text."""
    assert verify_abci_query(PRESENT, APP_HASH.hex(), store=PRESENT_STORE.decode()) == \
        verify_abci_query(PRESENT, "0x" + APP_HASH.hex(), key=PRESENT_KEY)
    assert verify_ibc_merkle_proof(IBC_PROOF, "0X" + APP_HASH.hex().upper(), [IBC_PATH[0].decode(), IBC_PATH[1]],
                                   IBC_VALUE) is True


def test_build_root_takes_what_trie_takes():
    # The same root from the same bytes, whatever buffer type carries them.
    pairs = [(array.array("B", b"key%d" % i), memoryview(b"value %d" % i)) for i in range(50)]
    t = Trie()
    for k, v in pairs:
        t.update(k, v)
    assert build_root(pairs) == t.hash() == mpt.build_root([(bytes(k), bytes(v)) for k, v in pairs])


def test_a_copied_buffer_is_the_tree_s_own():
    key, value = bytearray(b"k1"), bytearray(b"v1")
    tree = MutableTree()
    tree.set(key, value)
    key[0] = value[0] = ord("x")
    assert tree.get(b"k1") == b"v1" and tree.get(b"x1") is None
