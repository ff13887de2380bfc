"""MutableTree: iavl's TestTreeHash roots, persistence and reload in both storage formats, model checks."""
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpt.bench.workloads import GoRand
from mpt.db import MemoryDB
from mpt.errors import VersionError
from mpt.iavl import EMPTY_ROOT, MutableTree, decode_node, node_key

from conftest import load_vector

TREE_HASH = load_vector("iavl_nodes.json")["tree_root_fact_TestTreeHash"]
ROOTS = [bytes.fromhex(TREE_HASH["expected_root_hashes_by_version"][str(v)]) for v in (1, 2, 3, 4)]


def tree_hash_ops(tree, versions=4, version_ops=4096, on_save=None):
    """iavl tree_test.go TestTreeHash: the exact sequence of math/rand calls (seed 49872768940)."""
    r = GoRand(49872768940)
    keys = []
    hashes = []
    for _ in range(versions):
        for _ in range(version_ops):
            if keys and r.float64() <= 0.2:                 # deleteRatio
                key = keys.pop(r.intn(len(keys)))
                assert tree.remove(key) is not None
            elif keys and r.float64() <= 0.4:               # updateRatio
                key = keys[r.intn(len(keys))]
                assert tree.set(key, r.read(16)) is True
            else:
                key = r.read(16)
                value = r.read(16)
                assert tree.set(key, value) is False
                keys.append(key)
        root, version = tree.save_version()
        hashes.append(root)
        if on_save:
            on_save(tree, version, keys)
    return hashes


def test_go_rand_float64_and_intn():
    # Go: r := rand.New(rand.NewSource(49872768940)); Float64 = Int63/2**63; Intn(n) = Int31n for small n.
    a, b = GoRand(49872768940), GoRand(49872768940)
    for n in (1, 2, 7, 16, 1000, 2**31 - 1):
        assert a.intn(n) == b.int31n(n)
    x = a.float64()
    assert x == b.int63() / 2**63 and 0 <= x < 1
    assert GoRand(1).int31() == GoRand(1).int63() >> 32


@pytest.mark.parametrize("fmt", ["v1", "legacy"])
def test_tree_hash_matches_iavl(fmt):
    tree = MutableTree(format=fmt)
    assert tree_hash_ops(tree) == ROOTS
    assert tree.version == 4 and tree.hash() == ROOTS[3]


def test_tree_hash_reload_every_version():
    db = MemoryDB()
    snapshots = {}

    def on_save(tree, version, keys):
        snapshots[version] = {k: tree.get(k) for k in keys}

    tree_hash_ops(MutableTree(db), on_save=on_save)
    for version, root in zip((1, 2, 3, 4), ROOTS):
        t = MutableTree(db)
        assert t.load_version(version) == version
        assert t.hash() == root
        model = snapshots[version]
        assert len(t) == len(model)
        items = list(t.items())
        assert items == sorted(model.items())
    t = MutableTree(db)
    assert t.load() == 4 and t.hash() == ROOTS[3]


def test_v1_node_keys_follow_iavl():
    db = MemoryDB()
    tree = MutableTree(db)
    for k in (b"b", b"a", b"c"):
        tree.set(k, k.upper())
    root, version = tree.save_version()
    assert version == 1
    # Shape: root "b" (h2) -> left leaf a, right inner "c" (h1: b | c); nonces in pre-order.
    stored = {k[1:]: v for k, v in db.records.items() if k[:1] == b"s"}
    assert sorted(stored) == [node_key(1, n) for n in range(1, 6)]
    r = decode_node(stored[node_key(1, 1)], "v1", node_key=node_key(1, 1))
    assert r.hash == root and r.height == 2 and r.size == 3 and r.key == b"b"
    assert r.left_node_key == node_key(1, 2) and r.right_node_key == node_key(1, 3)
    assert decode_node(stored[node_key(1, 2)], "v1", node_key=node_key(1, 2)).value == b"A"
    right = decode_node(stored[node_key(1, 3)], "v1", node_key=node_key(1, 3))
    assert right.key == b"c" and right.left_node_key == node_key(1, 4) and right.right_node_key == node_key(1, 5)
    assert decode_node(stored[node_key(1, 5)], "v1", node_key=node_key(1, 5)).value == b"C"
    # Unchanged version 2: a reference root; new version 3 references version-1 children by NodeKey.
    assert tree.save_version() == (root, 2)
    assert db.get(b"s" + node_key(2, 1)) == b"s" + node_key(1, 1)
    tree.set(b"d", b"D")
    root3, _ = tree.save_version()
    r3 = decode_node(db.get(b"s" + node_key(3, 1)), "v1", node_key=node_key(3, 1))
    # d made the right side two deeper: a left rotation, root "c" over inner "b" (a | b) and inner "d" (c | d).
    assert r3.key == b"c" and r3.hash == root3
    assert r3.left_node_key == node_key(3, 2) and r3.right_node_key == node_key(3, 3)
    l3 = decode_node(db.get(b"s" + node_key(3, 2)), "v1", node_key=node_key(3, 2))
    assert l3.left_node_key == node_key(1, 2) and l3.right_node_key == node_key(1, 4)
    r3r = decode_node(db.get(b"s" + node_key(3, 3)), "v1", node_key=node_key(3, 3))
    assert r3r.left_node_key == node_key(1, 5) and r3r.right_node_key == node_key(3, 4)
    t = MutableTree(db)
    t.load_version(2)
    assert t.hash() == root and t.get(b"d") is None


def test_known_small_tree_hash():
    # Hand-computed with hashlib: one leaf at version 1.
    tree = MutableTree()
    tree.set(b"k", b"v")
    pre = b"\x00\x02\x02" + b"\x01k" + b"\x20" + hashlib.sha256(b"v").digest()
    assert tree.save_version() == (hashlib.sha256(pre).digest(), 1)


def test_empty_tree_and_versions():
    db = MemoryDB()
    tree = MutableTree(db)
    assert tree.hash() == EMPTY_ROOT == hashlib.sha256(b"").digest()
    assert tree.save_version() == (EMPTY_ROOT, 1)
    tree.set(b"a", b"1")
    h2, _ = tree.save_version()
    assert tree.remove(b"a") == b"1"
    assert tree.remove(b"a") is None
    assert tree.save_version() == (EMPTY_ROOT, 3)
    t = MutableTree(db)
    assert t.load() == 3 and len(t) == 0
    t.load_version(2)
    assert t.get(b"a") == b"1" and t.hash() == h2
    assert t.version_exists(3) and not t.version_exists(4)
    with pytest.raises(VersionError):
        t.load_version(9)
    # Overwriting version 3 with a different tree is refused; the same tree is a no-op.
    t.set(b"b", b"2")
    with pytest.raises(VersionError, match="different hash"):
        t.save_version()
    t.load_version(2)
    t.remove(b"a")
    assert t.save_version() == (EMPTY_ROOT, 3)


def test_set_rejects_none_and_get_default():
    tree = MutableTree()
    with pytest.raises(TypeError):
        tree.set(b"k", None)
    with pytest.raises(TypeError):
        tree.set(5, b"v")           # bytes(5) would be five zero bytes
    with pytest.raises(TypeError):
        tree.get("k")
    tree.set(bytearray(b"ba"), memoryview(b"mv"))
    assert tree.get(b"ba") == b"mv"
    assert tree.get(b"x", b"dflt") == b"dflt"
    tree.set(b"k", b"")
    assert tree.has(b"k") and b"k" in tree and tree.get(b"k") == b""


def test_legacy_store_upgrades_to_v1():
    """A tree saved in the legacy layout (iavl v0.x) keeps its hashes when a v1 tree continues it."""
    db = MemoryDB()
    legacy = MutableTree(db, format="legacy")
    ref = MutableTree()
    for i in range(200):
        for t in (legacy, ref):
            t.set(b"key%03d" % i, b"v%d" % i)
    assert legacy.save_version() == ref.save_version()
    assert any(k[:1] == b"n" for k in db.records) and not any(k[:1] == b"s" for k in db.records)
    upgraded = MutableTree(db)                      # v1 storage
    assert upgraded.load() == 1
    for i in range(0, 200, 3):
        for t in (upgraded, ref):
            t.set(b"key%03d" % i, b"w%d" % i)
            t.remove(b"key%03d" % (i + 1))
    assert upgraded.save_version() == ref.save_version()
    # The new v1 nodes reference untouched legacy children by their 32-byte hash (iavl's mode bits).
    modes = set()
    for k, v in db.records.items():
        if k[:1] == b"s" and len(v) != 13:
            node = decode_node(v, "v1", node_key=k[1:])
            if not node.is_leaf:
                modes.add((len(node.left_node_key), len(node.right_node_key)))
    assert (32, 32) in modes or (12, 32) in modes or (32, 12) in modes
    again = MutableTree(db)
    again.load()
    assert list(again.items()) == list(ref.items())


def test_lmdb_store(tmp_path):
    from mpt.db import LMDBStore
    with LMDBStore(str(tmp_path / "iavl"), hash_keys=False) as store:
        tree = MutableTree(store)
        hashes = tree_hash_ops(tree, versions=2, version_ops=300)
    with LMDBStore(str(tmp_path / "iavl"), hash_keys=False) as store:
        tree = MutableTree(store)
        assert tree.load() == 2 and tree.hash() == hashes[1]
        tree.load_version(1)
        assert tree.hash() == hashes[0]
    ref = MutableTree()
    assert tree_hash_ops(ref, versions=2, version_ops=300) == hashes


def test_items_ranges_and_iteration():
    tree = MutableTree()
    keys = [bytes([i]) * (1 + i % 3) for i in range(0, 250, 7)]
    for k in keys:
        tree.set(k, k + b"!")
    tree.save_version()
    ordered = sorted(keys)
    assert list(tree) == ordered
    assert list(tree.values()) == [k + b"!" for k in ordered]
    lo, hi = ordered[5], ordered[20]
    assert list(tree.keys(lo, hi)) == ordered[5:20]
    assert list(tree.keys(start=b"\x50")) == [k for k in ordered if k >= b"\x50"]
    assert list(tree.keys(end=b"\x50")) == [k for k in ordered if k < b"\x50"]


ops = st.lists(st.tuples(st.sampled_from(["set", "remove", "save"]), st.binary(min_size=0, max_size=3),
                         st.binary(max_size=4)), max_size=120)


@settings(max_examples=80, deadline=None)
@given(ops)
def test_model_against_dict(script):
    db = MemoryDB()
    tree = MutableTree(db)
    model = {}
    saved = {}
    for op, key, value in script:
        if op == "set":
            assert tree.set(key, value) == (key in model)
            model[key] = value
        elif op == "remove":
            assert tree.remove(key) == model.pop(key, None)
        else:
            root, version = tree.save_version()
            saved[version] = (root, dict(model))
        assert len(tree) == len(model)
    assert list(tree.items()) == sorted(model.items())
    # Every saved version reloads from the database with its root and its contents.
    for version, (root, snapshot) in saved.items():
        t = MutableTree(db)
        t.load_version(version)
        assert t.hash() == root
        assert dict(t.items()) == snapshot


# ------------------------------------------------------------------------------------------------- iavl API

def _small_tree():
    tree = MutableTree()
    keys = [bytes([i]) * (1 + i % 3) for i in range(0, 250, 7)]
    for k in keys:
        tree.set(k, k + b"!")
    return tree, sorted(keys)


def test_get_with_index_and_get_by_index():
    # iavl ImmutableTree.GetWithIndex / GetByIndex: the index is the key's rank in key order; an absent key
    # gets the rank it would have, GetByIndex out of range gives (nil, nil).
    tree, ordered = _small_tree()
    for tree_state in ("working", "saved"):
        for i, k in enumerate(ordered):
            assert tree.get_with_index(k) == (i, k + b"!")
            assert tree.get_by_index(i) == (k, k + b"!")
        for probe in (b"", b"\x00\x00\x00\x00", b"\x08", b"\x50", b"\xff\xff\xff\xff"):
            want = sum(1 for k in ordered if k < probe)
            assert tree.get_with_index(probe) == (want, None)
        for bad in (-1, len(ordered), 10**6, 2**63, -2**63 - 1, 10**40):
            assert tree.get_by_index(bad) == (None, None)
        tree.save_version()
        tree = MutableTree(tree.db)
        tree.load()
    empty = MutableTree()
    assert empty.get_with_index(b"a") == (0, None)
    assert empty.get_by_index(0) == (None, None)


def test_reverse_iteration_same_range():
    # iavl's Iterator(start, end, false): the same [start, end) range, visited from the end.
    tree, ordered = _small_tree()
    for saved in (False, True):
        if saved:
            tree.save_version()
            tree = MutableTree(tree.db)
            tree.load()
        assert list(tree.keys(ascending=False)) == ordered[::-1]
        assert list(reversed(tree)) == ordered[::-1]
        lo, hi = ordered[5], ordered[20]
        assert list(tree.items(lo, hi, ascending=False)) == [(k, k + b"!") for k in ordered[5:20]][::-1]
        assert list(tree.items(lo, hi)) == [(k, k + b"!") for k in ordered[5:20]]
        assert list(tree.values(end=b"\x50", ascending=False)) == [k + b"!" for k in ordered if k < b"\x50"][::-1]
        assert list(tree.keys(b"\x50", b"\x50", ascending=False)) == []
    assert list(MutableTree().items(ascending=False)) == []


def test_get_versioned_available_versions_and_rollback():
    # iavl doc.go: alice=abc at v1, alice=xyz and bob=xyz at v2; GetVersioned reads any saved version.
    db = MemoryDB()
    tree = MutableTree(db)
    assert tree.available_versions() == []
    tree.set(b"alice", b"abc")
    h1, _ = tree.save_version()
    tree.set(b"alice", b"xyz")
    tree.set(b"bob", b"xyz")
    h2, _ = tree.save_version()
    assert tree.get_versioned(b"alice", 1) == b"abc"
    assert tree.get_versioned(b"alice", 2) == b"xyz"
    assert tree.get_versioned(b"bob", 1) is None
    assert tree.get_versioned(b"bob", 3) is None and tree.get_versioned(b"bob", 0, b"-") == b"-"
    # Versions iavl cannot store (int64) are simply absent, like any missing version.
    assert tree.get_versioned(b"alice", 2**63) is None and tree.get_versioned(b"alice", -2**70, b"-") == b"-"
    assert tree.available_versions() == [1, 2]
    # Unsaved changes are discarded; the working tree is version 2 again, and it keeps working.
    tree.set(b"carol", b"1")
    tree.remove(b"alice")
    tree.set(b"bob", b"new")
    assert tree.get_versioned(b"alice", 2) == b"xyz"        # saved versions do not see the working tree
    tree.rollback()
    assert tree.hash() == h2 and dict(tree.items()) == {b"alice": b"xyz", b"bob": b"xyz"}
    tree.set(b"dave", b"4")
    h3, v3 = tree.save_version()
    assert v3 == 3 and tree.available_versions() == [1, 2, 3]
    # The same as a tree that never saw the discarded changes (hashes carry node versions: same history).
    ref = MutableTree()
    ref.set(b"alice", b"abc")
    ref.save_version()
    ref.set(b"alice", b"xyz")
    ref.set(b"bob", b"xyz")
    ref.save_version()
    ref.set(b"dave", b"4")
    assert ref.save_version() == (h3, 3)
    # After load_version(1), rollback goes back to version 1; before any save, to the empty tree.
    tree.load_version(1)
    tree.set(b"zed", b"z")
    tree.rollback()
    assert tree.hash() == h1
    fresh = MutableTree()
    fresh.set(b"a", b"b")
    fresh.rollback()
    assert fresh.hash() == EMPTY_ROOT and len(fresh) == 0


@settings(max_examples=40, deadline=None)
@given(ops)
def test_rollback_and_index_against_model(script):
    tree = MutableTree()
    model, saved_model = {}, {}
    for op, key, value in script:
        if op == "set":
            tree.set(key, value)
            model[key] = value
        elif op == "remove":
            tree.remove(key)
            model.pop(key, None)
        elif value[:1] == b"\x00":
            tree.rollback()
            model = dict(saved_model)
        else:
            tree.save_version()
            saved_model = dict(model)
    ordered = sorted(model)
    assert list(tree.keys(ascending=False)) == ordered[::-1]
    for i, k in enumerate(ordered):
        assert tree.get_by_index(i) == (k, model[k])
        assert tree.get_with_index(k) == (i, model[k])


@pytest.mark.parametrize("version", [0, -1, 2**63, 2**70, -(2**70)])
def test_versions_outside_int64_are_version_errors(version):
    from mpt.errors import VersionError

    tree = MutableTree()
    tree.set(b"a", b"1")
    tree.save_version()
    with pytest.raises(VersionError, match="IAVL versions run from 1 to 2\\*\\*63-1"):
        tree.load_version(version)
    with pytest.raises(VersionError, match="IAVL versions run from 1 to 2\\*\\*63-1"):
        tree.delete_versions_to(version)
    assert tree.version_exists(version) is False
    assert tree.get_versioned(b"a", version) is None
