"""Trie: the Ethereum TrieTests, geth's reference roots, geth semantics and differential checks."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mpt
from mpt import EMPTY_ROOT, FullNode, ShortNode, Trie, ValueNode, keccak256
from mpt.ethereum._reference import trie_root
from mpt.bench import workloads
from mpt.errors import MissingNodeError

from conftest import from_hex_or_text, load_vector


def build(pairs):
    t = Trie()
    for k, v in pairs:
        t.update(k, v)
    return t


# -------------------------------------------------------------------------------------------- vectors

def _steps(case):
    inp = case["in"]
    pairs = inp.items() if isinstance(inp, dict) else inp
    return [(from_hex_or_text(k), from_hex_or_text(v)) for k, v in pairs]


@pytest.mark.parametrize("name", sorted(load_vector("TrieTests/trietest.json")))
def test_trietest(name):
    case = load_vector("TrieTests/trietest.json")[name]
    t = Trie()
    for k, v in _steps(case):
        if v is None:
            t.delete(k)
        else:
            t.update(k, v)
    assert t.hash().hex() == case["root"][2:]


@pytest.mark.parametrize("name", sorted(load_vector("TrieTests/trieanyorder.json")))
def test_trieanyorder(name):
    case = load_vector("TrieTests/trieanyorder.json")[name]
    steps = _steps(case)
    rng = random.Random(name)
    for _ in range(5):
        rng.shuffle(steps)
        assert build(steps).hash().hex() == case["root"][2:]


def test_empty_root():
    t = Trie()
    assert t.hash() == EMPTY_ROOT == keccak256(b"\x80")
    assert t.root_hash == EMPTY_ROOT
    assert mpt.EMPTY_ROOT.hex() == "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"


# -------------------------------------------------------------------------------------------- geth roots

@pytest.mark.parametrize("n", [20, 100, 1000, 10000])
def test_make_accounts_roots(n):
    addresses, values = workloads.make_accounts(n)
    t = Trie()
    for k, v in zip(workloads.account_keys(addresses), values):
        t[k] = v
    assert t.hash() == workloads.ACCOUNT_ROOTS[n]


@pytest.mark.slow
def test_make_accounts_root_100k():
    addresses, values = workloads.make_accounts(100000)
    t = Trie()
    for k, v in zip(workloads.account_keys(addresses), values):
        t[k] = v
    assert t.hash() == workloads.ACCOUNT_ROOTS[100000]


def test_tiny_trie():
    _, values = workloads.make_accounts(5)
    t = Trie()
    for key, index, root in workloads.TINY_TRIE_CASES:
        t.update(key, values[index])
        assert t.hash() == root


def test_insert_100k_root_with_plain_trie():
    t = build(workloads.insert_100k_items())
    assert t.hash() == workloads.INSERT_100K_ROOT


def test_gentxs200_root_with_plain_trie():
    t = Trie()
    for i, tx in enumerate(workloads.gentxs200()):
        t.update(mpt.rlp.encode(i), tx)
    assert t.hash() == workloads.GENTXS200_ROOT


# -------------------------------------------------------------------------------------------- API

def test_mapping_api():
    t = Trie()
    t[b"dog"] = b"puppy"
    t.update(b"doge", b"coin")
    assert t[b"dog"] == b"puppy"
    assert t.get(b"doge") == b"coin"
    assert t.get(b"do") is None and t.get(b"do", b"x") == b"x"
    assert b"dog" in t and b"do" not in t
    with pytest.raises(KeyError):
        t[b"cat"]
    with pytest.raises(KeyError):
        del t[b"cat"]
    t.delete(b"cat")  # geth: deleting a missing key is a no-op
    del t[b"dog"]
    assert b"dog" not in t
    t.update(b"doge", b"")  # geth: empty value deletes
    assert t.hash() == EMPTY_ROOT


@pytest.mark.parametrize("bad", ["dog", 5, None, [b"d"], 1.5])
def test_type_errors(bad):
    t = Trie()
    with pytest.raises(TypeError, match="must be a bytes-like object, not %s" % type(bad).__name__):
        t.update(bad, b"v")
    with pytest.raises(TypeError):
        t.update(b"k", bad)
    with pytest.raises(TypeError):
        t.get(bad)
    with pytest.raises(TypeError):
        t.delete(bad)


def test_bytes_subclass_accepted():
    class HexBytes(bytes):
        pass

    t = Trie()
    t[HexBytes(b"k")] = HexBytes(b"v")
    assert t[b"k"] == b"v" and type(t[b"k"]) is bytes


def test_identical_reinsert_keeps_cached_hash():
    t = build([(bytes([i]) * 32, b"value-%d" % i) for i in range(50)])
    root_node = t.root_node
    h = t.hash()
    t.update(bytes([7]) * 32, b"value-7")
    assert t.root_node is root_node and t.root_node.hash == h
    t.update(bytes([7]) * 32, b"value-7x")
    assert t.root_node is not root_node and t.hash() != h


def test_copy_is_independent():
    t = build([(b"k%d" % i, b"v%d" % i) for i in range(100)])
    h = t.hash()
    c = t.copy()
    c[b"k5"] = b"changed"
    del c[b"k6"]
    t[b"k7"] = b"other"
    assert t[b"k5"] == b"v5" and t[b"k6"] == b"v6" and c[b"k7"] == b"v7"
    assert c.hash() != h and t.hash() != h
    t[b"k7"] = b"v7"
    assert t.hash() == h


def test_opening_without_db_is_refused():
    with pytest.raises(ValueError):
        Trie(root=b"\x11" * 32)
    assert Trie(root=EMPTY_ROOT).hash() == EMPTY_ROOT


def test_missing_root_fails_at_construction():
    # geth's trie.New resolves the root: a root the database lacks fails at once, not at the first access.
    with pytest.raises(MissingNodeError) as info:
        Trie(db={}, root=b"\x11" * 32)
    assert info.value.node_hash == b"\x11" * 32 and info.value.path == b""
    assert str(info.value) == "missing trie node %s (path <root>)" % ("11" * 32)
    assert isinstance(info.value, mpt.MptError)
    with pytest.raises(MissingNodeError):
        mpt.SecureTrie(db={}, root=b"\x11" * 32)


def test_missing_inner_node_fails_on_access():
    t = build([(bytes([i]) * 4, b"v" * 40) for i in range(40)])
    db = {h: blob for _, h, blob in t.node_iter() if h is not None}
    root = t.hash()
    child = next(h for h in db if h != root)
    del db[child]
    opened = Trie(db=db, root=root)             # the root is there: construction succeeds
    with pytest.raises(MissingNodeError) as info:
        for _ in opened.items():
            pass
    assert info.value.node_hash == child


def test_corrupt_root_fails_at_construction():
    with pytest.raises(mpt.errors.NodeDecodeError, match="does not hash to its key"):
        Trie(db={b"\x22" * 32: b"\xc0"}, root=b"\x22" * 32)


# -------------------------------------------------------------------------------------------- normalisation

def test_delete_collapses_branch_into_leaf():
    # Two keys diverging at the first nibble make a branch; deleting one leaves a single leaf at the root.
    t = build([(b"\x10", b"a" * 40), (b"\x20", b"b" * 40)])
    assert isinstance(t.root_node, FullNode)
    t.delete(b"\x20")
    assert isinstance(t.root_node, ShortNode)
    assert t.root_node.key == bytes([1, 0, 16])
    assert t.hash() == build([(b"\x10", b"a" * 40)]).hash()


def test_delete_leaves_value_only_branch_as_leaf():
    # b"\x12" is a prefix of b"\x12\x34": the branch below the extension holds a value; delete the longer key.
    t = build([(b"\x12", b"short"), (b"\x12\x34", b"long")])
    t.delete(b"\x12\x34")
    root = t.root_node
    assert isinstance(root, ShortNode) and root.key == bytes([1, 2, 16])
    assert isinstance(root.val, ValueNode) and root.val.value == b"short"


def test_delete_merges_extension_with_short_child():
    keys = [b"\xab\xc1", b"\xab\xc2", b"\xab\xd0"]
    t = build([(k, b"v" * 40) for k in keys])
    t.delete(b"\xab\xd0")
    assert t.hash() == build([(k, b"v" * 40) for k in keys[:2]]).hash()
    root = t.root_node
    assert isinstance(root, ShortNode) and root.key == bytes([10, 11, 12])


# -------------------------------------------------------------------------------------------- differential

def _pytrie():
    trie = pytest.importorskip("trie")
    return trie.HexaryTrie({})


keys_st = st.binary(min_size=0, max_size=6)
ops_st = st.lists(
    st.tuples(st.sampled_from(["put", "put", "put", "del"]), keys_st, st.binary(min_size=0, max_size=40)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops_st)
def test_differential_against_reference_and_pytrie(ops):
    t = Trie()
    peer = _pytrie()
    model = {}
    snapshots = []
    for op, key, value in ops:
        if op == "put":
            t.update(key, value)
            if value:
                model[key] = value
                peer[key] = value
            else:
                model.pop(key, None)
                if key in peer:
                    del peer[key]
        else:
            t.delete(key)
            model.pop(key, None)
            if key in peer:
                del peer[key]
        root = t.hash()
        assert root == trie_root(model)
        assert root == peer.root_hash
        snapshots.append((t.copy(), dict(model), root))
    for key in set(k for _, k, _ in ops):
        assert t.get(key) == model.get(key)
    # Copies taken along the way were not disturbed by later updates.
    for copy, snapshot, root in snapshots:
        assert copy.hash() == root
        for key, value in snapshot.items():
            assert copy[key] == value


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.binary(min_size=32, max_size=32), st.binary(min_size=1, max_size=120), max_size=200),
       st.randoms(use_true_random=False))
def test_random_32_byte_keys_any_order(items, rnd):
    pairs = list(items.items())
    expected = trie_root(items)
    rnd.shuffle(pairs)
    t = build(pairs)
    assert t.hash() == expected
    # Delete half, in another order, and compare again.
    rnd.shuffle(pairs)
    half = pairs[: len(pairs) // 2]
    for k, _ in half:
        t.delete(k)
    remaining = dict(pairs[len(pairs) // 2:])
    assert t.hash() == trie_root(remaining)


def test_hash_between_every_update_matches_reference():
    rng = random.Random(42)
    t = Trie()
    model = {}
    for i in range(1500):
        key = rng.randbytes(rng.choice([1, 2, 3, 20, 32]))
        if model and rng.random() < 0.3:
            key = rng.choice(sorted(model))
            t.delete(key)
            del model[key]
        else:
            value = rng.randbytes(rng.choice([1, 5, 31, 32, 33, 100]))
            t[key] = value
            model[key] = value
        if i % 25 == 0:
            assert t.hash() == trie_root(model)
    assert t.hash() == trie_root(model)
