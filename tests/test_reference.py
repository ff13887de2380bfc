"""Tests of the pure-Python reference trie (mpt._reference), the oracle every other test leans on.

It must reproduce the Ethereum TrieTests vectors, go-ethereum's StackTrie vectors, canonical RLP and hex-prefix
encodings, and agree with an independent implementation (py-trie's HexaryTrie) on random data.
"""

import json
import random
from pathlib import Path

import pytest
import rlp as pyrlp  # the `rlp` package py-trie depends on: an independent RLP encoder to compare with
from hypothesis import given, settings
from hypothesis import strategies as st
from trie import HexaryTrie

from mpt.ethereum._reference import (
    EMPTY_CODE_HASH,
    EMPTY_ROOT,
    bytes_to_nibbles,
    hex_prefix_encode,
    keccak256,
    node_encodings,
    rlp_encode,
    secure_trie_root,
    trie_root,
)

VECTORS = Path(__file__).resolve().parent / "vectors"
TRIE_TEST_FILES = [
    "trietest.json",
    "trieanyorder.json",
    "trietest_secureTrie.json",
    "trieanyorder_secureTrie.json",
    "hex_encoded_securetrie_test.json",
]


def decode_vector_string(text):
    """TrieTests strings: "0x..." is hex, anything else is the UTF-8 bytes of the text itself."""
    if text.startswith("0x"):
        return bytes.fromhex(text[2:])
    return text.encode("utf-8")


def final_mapping(steps):
    """Apply a TrieTests "in" (a dict, or a list of [key, value] updates where null deletes) to an empty map."""
    pairs = steps.items() if isinstance(steps, dict) else steps
    mapping = {}
    for key, value in pairs:
        key = decode_vector_string(key)
        if value is None:
            mapping.pop(key, None)
        else:
            mapping[key] = decode_vector_string(value)
    return mapping


def trie_test_cases():
    for file_name in TRIE_TEST_FILES:
        for case_name, case in json.loads((VECTORS / "TrieTests" / file_name).read_text()).items():
            yield pytest.param(file_name, case, id=f"{file_name}:{case_name}")


# --- vectors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("file_name, case", list(trie_test_cases()))
def test_trie_tests_vectors(file_name, case):
    mapping = final_mapping(case["in"])
    root_function = secure_trie_root if "secure" in file_name.lower() else trie_root
    assert root_function(mapping).hex() == case["root"][2:]


def stacktrie_cases():
    data = json.loads((VECTORS / "stacktrie_insert_and_hash.json").read_text())
    for index, steps in enumerate(data["cases"]):
        yield pytest.param(steps, id=f"case{index}")


@pytest.mark.parametrize("steps", list(stacktrie_cases()))
def test_stacktrie_vectors_root_after_each_prefix(steps):
    mapping = {}
    for step in steps:
        mapping[bytes.fromhex(step["key"][2:])] = step["value"].encode("utf-8")
        assert trie_root(mapping).hex() == step["root"][2:]


# --- building blocks ---------------------------------------------------------------------------------------------


def test_keccak256_known_values():
    assert EMPTY_CODE_HASH.hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert keccak256(b"\x80").hex() == "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
    assert EMPTY_ROOT == keccak256(b"\x80")


@pytest.mark.parametrize(
    "value, expected_hex",
    [
        (b"", "80"),
        (b"\x00", "00"),
        (b"\x7f", "7f"),
        (b"\x80", "8180"),
        (b"dog", "83646f67"),
        (b"a" * 55, "b7" + "61" * 55),
        (b"a" * 56, "b838" + "61" * 56),
        (b"a" * 1024, "b90400" + "61" * 1024),
        (0, "80"),
        (15, "0f"),
        (127, "7f"),
        (128, "8180"),
        (1024, "820400"),
        (2**64 - 1, "88ffffffffffffffff"),
        ([], "c0"),
        ([b"cat", b"dog"], "c88363617483646f67"),
        ([[], [[]], [[], [[]]]], "c7c0c1c0c3c0c1c0"),  # the set-theoretic representation of three
        ([b"a" * 60], "f83e" + "b83c" + "61" * 60),
    ],
)
def test_rlp_encode_known_values(value, expected_hex):
    assert rlp_encode(value).hex() == expected_hex


def test_rlp_encode_rejects_what_it_cannot_encode():
    with pytest.raises(ValueError):
        rlp_encode(-1)
    with pytest.raises(TypeError):
        rlp_encode(True)
    with pytest.raises(TypeError):
        rlp_encode("text")


rlp_values = st.recursive(
    st.binary(max_size=80) | st.integers(min_value=0, max_value=2**300),
    lambda children: st.lists(children, max_size=6),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(rlp_values)
def test_rlp_encode_matches_pyrlp(value):
    assert rlp_encode(value) == pyrlp.encode(value)


@pytest.mark.parametrize(
    "nibbles, is_leaf, expected_hex",
    [
        ([], False, "00"),
        ([], True, "20"),
        ([1, 2, 3, 4, 5], False, "112345"),
        ([0, 1, 2, 3, 4, 5], False, "00012345"),
        ([0xF, 1, 0xC, 0xB, 8], True, "3f1cb8"),
        ([0, 0xF, 1, 0xC, 0xB, 8], True, "200f1cb8"),
    ],
)
def test_hex_prefix_encode(nibbles, is_leaf, expected_hex):
    assert hex_prefix_encode(bytes(nibbles), is_leaf).hex() == expected_hex


def test_bytes_to_nibbles():
    assert bytes_to_nibbles(b"") == b""
    assert bytes_to_nibbles(b"\x12\xab\xf0") == bytes([1, 2, 0xA, 0xB, 0xF, 0])


# --- trie construction rules -------------------------------------------------------------------------------------


def test_empty_trie_and_empty_values():
    assert trie_root({}) == EMPTY_ROOT
    assert trie_root({b"dog": b""}) == EMPTY_ROOT
    assert trie_root({b"dog": b"puppy", b"cat": b""}) == trie_root({b"dog": b"puppy"})
    assert node_encodings({}) == []


def test_root_is_hashed_even_when_short():
    # A single short leaf encodes to fewer than 32 bytes, yet the root is its hash.
    leaf = rlp_encode([hex_prefix_encode(bytes_to_nibbles(b"a"), is_leaf=True), b"b"])
    assert len(leaf) < 32
    assert trie_root({b"a": b"b"}) == keccak256(leaf)
    assert node_encodings({b"a": b"b"}) == [(b"", leaf, True)]


def test_items_may_be_pairs_and_later_pairs_win():
    assert trie_root([(b"k", b"old"), (b"k", b"new")]) == trie_root({b"k": b"new"})


def test_short_children_are_embedded_long_ones_hashed():
    # Two keys diverging at the first nibble: a branch with two leaves. Short values give embedded leaves,
    # long values give hashed leaves; the branch must contain the leaf encoding or its hash accordingly.
    for value, expect_embedded in ((b"x", True), (b"x" * 40, False)):
        nodes = node_encodings({b"\x10": value, b"\x20": value})
        *leaves, root = nodes
        assert root.path == b"" and root.hashed
        assert [leaf.path for leaf in leaves] == [b"\x01", b"\x02"]
        for leaf in leaves:
            assert leaf.hashed is (not expect_embedded)
            reference = leaf.encoding if expect_embedded else rlp_encode(keccak256(leaf.encoding))
            assert reference in root.encoding


def random_mapping(rng, size, key_lengths=(1, 2, 3, 32), value_lengths=(1, 5, 31, 32, 40)):
    """Keys of mixed lengths over a small alphabet, so keys share prefixes and some are prefixes of others."""
    mapping = {}
    for _ in range(size):
        key = bytes(rng.choice(b"\x00\x01\x10\x11\xff") for _ in range(rng.choice(key_lengths)))
        mapping[key] = bytes(rng.randrange(256) for _ in range(rng.choice(value_lengths)))
    return mapping


def node_graph_is_consistent(mapping):
    """Check node_encodings' contract: root last and hashing to the root, every child referenced by its parent."""
    nodes = node_encodings(mapping)
    root = nodes[-1]
    assert root.path == b"" and root.hashed
    assert keccak256(root.encoding) == trie_root(mapping)
    for node in nodes[:-1]:
        assert node.hashed == (len(node.encoding) >= 32)
        reference = rlp_encode(keccak256(node.encoding)) if node.hashed else node.encoding
        # The parent is the nearest node whose path is a proper prefix of this one and that comes later.
        parents = [p for p in nodes if len(p.path) < len(node.path) and node.path.startswith(p.path)]
        parent = max(parents, key=lambda p: len(p.path))
        assert nodes.index(parent) > nodes.index(node), "children must come before parents"
        assert reference in parent.encoding
    return nodes


@pytest.mark.parametrize("seed", range(20))
def test_node_encodings_are_consistent(seed):
    node_graph_is_consistent(random_mapping(random.Random(seed), size=random.Random(seed).randrange(1, 60)))


# --- differential against py-trie --------------------------------------------------------------------------------


def py_trie_root_and_db(mapping):
    db = {}
    peer = HexaryTrie(db, prune=True)  # prune: the db then holds exactly the nodes of the final trie
    for key, value in mapping.items():
        if value:
            peer[key] = value
    return peer.root_hash, db


@pytest.mark.parametrize("seed", range(30))
def test_matches_py_trie_on_random_mappings(seed):
    rng = random.Random(seed)
    mapping = random_mapping(rng, size=rng.choice((1, 2, 5, 20, 100, 400)))
    peer_root, peer_db = py_trie_root_and_db(mapping)
    assert trie_root(mapping) == peer_root
    # The hashed nodes are exactly what py-trie stores (it stores the root even when it is short).
    hashed = {keccak256(node.encoding): node.encoding for node in node_encodings(mapping) if node.hashed}
    assert hashed == peer_db


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.binary(max_size=6), st.binary(min_size=1, max_size=40), max_size=30))
def test_matches_py_trie_property(mapping):
    assert trie_root(mapping) == py_trie_root_and_db(mapping)[0]


def test_matches_py_trie_on_random_32_byte_keys():
    rng = random.Random(7)
    mapping = {rng.randbytes(32): rng.randbytes(rng.choice((1, 20, 100))) for _ in range(2000)}
    assert trie_root(mapping) == py_trie_root_and_db(mapping)[0]
    assert secure_trie_root(mapping) == trie_root({keccak256(k): v for k, v in mapping.items()})
