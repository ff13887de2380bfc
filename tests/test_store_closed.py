"""A closed LMDBStore or LevelDBStore raises StoreClosedError from every operation: its own methods, iterators
and batches left open across close(), and every MutableTree / NodeDB / Exporter entry that may touch the store,
whatever the tree keeps cached (NodeDB binds the store's get once; a LevelDBStore's get is plyvel's own)."""
import sys

import pytest

from mpt.db import LevelDBStore, LMDBStore
from mpt.errors import MissingExtraError, MptError, StoreClosedError
from mpt.iavl import ExportNode, MutableTree

KINDS = ["lmdb", "leveldb"]


def _open(kind, tmp_path):
    if kind == "leveldb":
        pytest.importorskip("plyvel")
        return LevelDBStore(tmp_path / "leveldb", create=True)
    return LMDBStore(str(tmp_path / "lmdb"), hash_keys=False)


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


def _saved_tree(store):
    tree = MutableTree(store)
    for i in range(200):
        tree.set(b"k%03d" % i, b"v%d" % i)
    tree.save_version()
    tree.set(b"k001", b"changed")
    tree.save_version()
    return tree


# Every MutableTree method that may read or write the store.
TREE_CALLS = {
    "get": lambda t: t.get(b"k005"),
    "get absent": lambda t: t.get(b"zz"),
    "get_versioned": lambda t: t.get_versioned(b"k005", 1),
    "get_with_index": lambda t: t.get_with_index(b"k100"),
    "get_by_index": lambda t: t.get_by_index(100),
    "has": lambda t: t.has(b"k005"),
    "in": lambda t: b"k005" in t,
    "[]": lambda t: t[b"k005"],
    "set": lambda t: t.set(b"k150", b"x"),
    "[]=": lambda t: t.__setitem__(b"k150", b"x"),
    "remove": lambda t: t.remove(b"k151"),
    "del": lambda t: t.__delitem__(b"k151"),
    "hash": lambda t: t.hash(),
    "working_hash": lambda t: t.working_hash(),
    "save_version": lambda t: t.save_version(),
    "load": lambda t: t.load(),
    "load_version": lambda t: t.load_version(1),
    "version_exists": lambda t: t.version_exists(1),
    "available_versions": lambda t: t.available_versions(),
    "latest_version": lambda t: t.latest_version,
    "delete_versions_to": lambda t: t.delete_versions_to(1),
    "items": lambda t: next(t.items()),
    "keys": lambda t: next(t.keys()),
    "values": lambda t: next(t.values()),
    "iter": lambda t: next(iter(t)),
    "reversed": lambda t: next(reversed(t)),
    "export": lambda t: next(t.export()),
    "export older": lambda t: next(t.export(1)),
    "membership_proof": lambda t: t.membership_proof(b"k005"),
    "membership_proof older": lambda t: t.membership_proof(b"k005", 1),
    "non_membership_proof": lambda t: t.non_membership_proof(b"k005x"),
    "import_nodes": lambda t: MutableTree(t.db).import_nodes([ExportNode(b"a", b"1", 1, 0)], 1),
    "new tree": lambda t: MutableTree(t.db),
    "ndb.node": lambda t: t.ndb.node(b"\x00" * 7 + b"\x01" + b"\x00\x00\x00\x01"),
    "ndb.root_ref": lambda t: t.ndb.root_ref(1),
    "ndb.latest_version": lambda t: t.ndb.latest_version(),
    "ndb.fast_node": lambda t: t.ndb.fast_node(b"k005"),
}


@pytest.mark.parametrize("call", sorted(TREE_CALLS))
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_every_tree_entry_raises_store_closed(kind, tmp_path, call, warm):
    store = _open(kind, tmp_path)
    tree = _saved_tree(store)
    if warm:
        # Everything in memory and in the fast-node cache: the store is still refused.
        assert list(tree.items())[5] == (b"k005", b"v5") and tree.get(b"k005") == b"v5"
    else:
        tree = MutableTree(store)
        tree.load()
    store.close()
    with pytest.raises(StoreClosedError, match="store at .* is closed"):
        TREE_CALLS[call](tree)


def test_in_memory_state_stays_readable(kind, tmp_path):
    """Like a closed file's name: what the tree holds without the store still answers; rollback discards
    unsaved changes without touching the store."""
    store = _open(kind, tmp_path)
    tree = _saved_tree(store)
    store.close()
    assert (tree.version, tree.working_version, len(tree), tree.size) == (2, 3, 200, 200)
    assert tree.height == 8 and "version=2" in repr(tree)
    tree.rollback()
    assert tree.version == 2


def test_iterations_and_exports_across_close(kind, tmp_path):
    store = _open(kind, tmp_path)
    tree = _saved_tree(store)
    items, exporter = tree.items(), tree.export()
    assert next(items) == (b"k000", b"v0") and next(exporter).key == b"k000"
    store.close()
    with pytest.raises(StoreClosedError):
        next(items)
    with pytest.raises(StoreClosedError):
        next(exporter)


STORE_CALLS = {
    "get": lambda s: s.get(b"k1"),
    "in": lambda s: b"k1" in s,
    "[]": lambda s: s[b"k1"],
    "iterate": lambda s: next(s.iterate()),
    "items": lambda s: next(iter(s.items())),
    "keys": lambda s: next(iter(s.keys())),
    "iter": lambda s: next(iter(s)),
    "len": lambda s: len(s),
    "put": lambda s: s.put(b"a", b"b"),
    "delete": lambda s: s.delete(b"k1"),
    "write_batch": lambda s: s.write_batch().__enter__(),
    "head": lambda s: s.head(),
    "set_head": lambda s: s.set_head(b"\x00" * 32),
}


@pytest.mark.parametrize("call", sorted(STORE_CALLS))
def test_every_store_method_raises_store_closed(kind, tmp_path, call):
    store = _open(kind, tmp_path)
    store.put(b"k1", b"v")
    store.close()
    with pytest.raises(StoreClosedError, match="store at .* is closed"):
        STORE_CALLS[call](store)
    store.close()                                   # again: nothing


def test_iterators_and_batches_open_across_close(kind, tmp_path):
    store = _open(kind, tmp_path)
    for i in range(10):
        store.put(b"k%d" % i, b"v")
    it, items = store.iterate(), store.items()
    assert next(it) == (b"k0", b"v") and next(iter(items)) == (b"k0", b"v")
    batch = store.write_batch()
    batch.__enter__().put(b"x", b"y")
    store.close()
    with pytest.raises(StoreClosedError):
        next(it)
    with pytest.raises(StoreClosedError):
        next(items)
    with pytest.raises(StoreClosedError):
        batch.__exit__(None, None, None)
    assert isinstance(StoreClosedError("x"), (MptError, ValueError))


def test_a_missing_backend_names_the_extra(monkeypatch, tmp_path):
    import mpt.db.lmdb_store as lmdb_store

    monkeypatch.setitem(sys.modules, "plyvel", None)
    with pytest.raises(MissingExtraError, match=r"^LevelDBStore needs the 'plyvel' package \(pip install "
                                                r"'mpt-engine\[leveldb\]' or pip install plyvel\)") as info:
        LevelDBStore(tmp_path / "x", create=True)
    assert info.value.name == "plyvel" and isinstance(info.value, ImportError)
    monkeypatch.setitem(sys.modules, "lmdb", None)
    monkeypatch.setattr(lmdb_store, "_lmdb", None)
    with pytest.raises(MissingExtraError, match=r"^LMDBStore needs the 'lmdb' package") as info:
        LMDBStore(str(tmp_path / "y"))
    assert info.value.name == "lmdb" and not (tmp_path / "x").exists()
