"""IAVL stores as Go iavl keeps them: the node-store protocol (MemoryDB, LMDBStore, LevelDBStore), Go's goleveldb
fixture read back exactly, the same operations replayed to the same bytes, pruning, and corrupt stores."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpt.db import LevelDBStore, LMDBStore, MemoryDB, OrderedNodeDatabase, prefix_range
from mpt.errors import (
    CorruptTreeError,
    MissingNodeError,
    MptError,
    StoreClosedError,
    StoreCorruptError,
    StoreError,
    VersionError,
)
from mpt.iavl import MutableTree, decode_node, node_key
from mpt.iavl.nodedb import NodeDB, decode_fast_node, encode_fast_node, root_key

from conftest import IAVL_STORE_KINDS, VECTORS, new_iavl_store, replay_iavl_ops
from mpt.bench.workloads import iavl_prune_history

pytest.importorskip("plyvel")

FIXTURE = VECTORS / "cosmos" / "iavl_store_A"
META = json.loads((FIXTURE / "iavl_store.json").read_text())


def _jsonl(name):
    with open(FIXTURE / name) as f:
        return [json.loads(line) for line in f]


DUMP = [(bytes.fromhex(r["key"]), bytes.fromhex(r["value"])) for r in _jsonl("db_dump.jsonl")]
OPS = _jsonl("ops.jsonl")


@pytest.fixture
def go_store(tmp_path):
    """A copy of Go's goleveldb directory (LevelDB rewrites its log and MANIFEST on open: never the original)."""
    path = tmp_path / "iavl.db"
    shutil.copytree(FIXTURE / "iavl.db", path)
    with LevelDBStore(path) as store:
        yield store


@pytest.fixture(params=IAVL_STORE_KINDS)
def store(request, tmp_path):
    s = new_iavl_store(request.param, tmp_path)
    yield s
    s.close()


# ---------------------------------------------------------------------------------------------- the store layer

def test_store_protocol_delete_iterate_and_batches(store):
    assert isinstance(store, OrderedNodeDatabase)
    for k in (b"a", b"b1", b"b2", b"c", b"\xff\x01"):
        store.put(k, k + b"!")
    assert list(store.iterate(*prefix_range(b"b"))) == [(b"b1", b"b1!"), (b"b2", b"b2!")]
    assert [k for k, _ in store.iterate(reverse=True)] == [b"\xff\x01", b"c", b"b2", b"b1", b"a"]
    assert [k for k, _ in store.iterate(b"b", b"c", reverse=True)] == [b"b2", b"b1"]
    assert [k for k, _ in store.iterate(start=b"b2")] == [b"b2", b"c", b"\xff\x01"]
    assert [k for k, _ in store.iterate(*prefix_range(b"\xff"))] == [b"\xff\x01"]
    with store.write_batch() as batch:
        batch.delete(b"a")
        batch.put(b"d", b"new")
        batch.put(b"c", b"gone")
        batch.delete(b"c")              # the last operation on a key wins
        batch.delete(b"never-there")
    store.delete(b"b1")
    store.delete(b"absent")
    assert [k for k, _ in store.iterate()] == [b"b2", b"d", b"\xff\x01"]
    assert store.get(b"a") is None and store.get(b"d") == b"new"
    with pytest.raises(RuntimeError):
        with store.write_batch() as batch:
            batch.delete(b"d")
            batch.put(b"e", b"e")
            raise RuntimeError("abandon")
    assert store.get(b"d") == b"new" and store.get(b"e") is None
    with store.write_batch() as batch:
        if hasattr(batch, "put_many"):     # optional: MemoryDB's and LevelDB's batches (IAVL's save uses it)
            assert batch.put_many({b"m1": b"1", b"m2": b"2"}) == 2
            assert batch.put_many([(b"m3", b"3"), (b"m4", b"4")]) == 2
        else:
            for k, v in ((b"m1", b"1"), (b"m2", b"2"), (b"m3", b"3"), (b"m4", b"4")):
                batch.put(k, v)
    assert [store.get(b"m%d" % i) for i in range(1, 5)] == [b"1", b"2", b"3", b"4"]


def test_prefix_range():
    assert prefix_range(b"s") == (b"s", b"t")
    assert prefix_range(b"a\xff") == (b"a\xff", b"b")
    assert prefix_range(b"\xff\xff") == (b"\xff\xff", None)


def test_leveldb_errors(tmp_path):
    with pytest.raises(StoreError, match="no LevelDB at .*create=True"):
        LevelDBStore(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("hello")
    with pytest.raises(StoreError, match="not a LevelDB directory"):
        LevelDBStore(tmp_path / "plain")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        LevelDBStore(tmp_path / "file")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "CURRENT").write_text("MANIFEST-000009\n")
    with pytest.raises(StoreCorruptError, match="is damaged .*CURRENT points to a non-existent file"):
        LevelDBStore(tmp_path / "bad")
    with LevelDBStore(tmp_path / "db", create=True) as s:
        s.put(b"k", b"v")
    with pytest.raises(StoreError, match="cannot be both created and read-only"):
        LevelDBStore(tmp_path / "new", create=True, readonly=True)
    (tmp_path / "empty").mkdir()          # an existing empty directory: no database is written into it either
    with pytest.raises(StoreError, match="cannot be both created and read-only"):
        LevelDBStore(tmp_path / "empty", create=True, readonly=True)
    assert list((tmp_path / "empty").iterdir()) == []
    ro = LevelDBStore(tmp_path / "db", readonly=True)
    assert ro.get(b"k") == b"v"
    for write in (lambda: ro.put(b"a", b"b"), lambda: ro.delete(b"k"), lambda: ro.write_batch().__enter__()):
        with pytest.raises(StoreError, match="read-only"):
            write()
    ro.close()
    ro.close()
    with pytest.raises(StoreClosedError):
        ro.get(b"k")
    with pytest.raises(StoreClosedError):
        list(ro.iterate())
    with pytest.raises(TypeError):
        LevelDBStore(tmp_path / "db", prefix="s/k:bank/")
    assert issubclass(StoreError, MptError) and issubclass(StoreError, OSError)


def test_leveldb_locked_by_another_process(tmp_path):
    with LevelDBStore(tmp_path / "db", create=True):
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", "import plyvel, sys; db = plyvel.DB(sys.argv[1]); print('ready', flush=True); "
                               "sys.stdin.read()", str(tmp_path / "db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match=r"is locked \(a running node, or another open store"):
            LevelDBStore(tmp_path / "db")
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with LevelDBStore(tmp_path / "db") as s:       # free again once the holder exits
        assert list(s.iterate()) == []


def test_leveldb_prefix_selects_one_module_store(tmp_path):
    with LevelDBStore(tmp_path / "app", create=True) as root:
        root.put(b"s/latest", b"\x01")
    with LevelDBStore(tmp_path / "app", prefix=b"s/k:bank/") as bank:
        tree = MutableTree(bank)
        tree.set(b"alice", b"1")
        h, _ = tree.save_version()
        assert all(not k.startswith(b"s/k:") for k, _ in bank.iterate())
    with LevelDBStore(tmp_path / "app") as root:
        keys = [k for k, _ in root.iterate()]
        assert b"s/latest" in keys and all(k == b"s/latest" or k.startswith(b"s/k:bank/") for k in keys)
        assert b"s/k:bank/" + root_key(1) in keys and b"s/k:bank/f" + b"alice" in keys
    with LevelDBStore(tmp_path / "app", prefix=b"s/k:bank/", readonly=True) as bank:
        t = MutableTree(bank)
        assert t.load() == 1 and t.hash() == h and t.get(b"alice") == b"1"
    with LevelDBStore(tmp_path / "app", prefix=b"s/k:staking/") as other:
        # Go's Load of an empty store turns fast storage on: the one record it writes.
        assert MutableTree(other).load() == 0 and list(other.iterate()) == [(b"mstorage_version", b"1.1.0-0")]


def test_leveldb_store_serves_an_ethereum_trie(tmp_path):
    from mpt import Trie

    with LevelDBStore(tmp_path / "eth", create=True) as store:
        t = Trie(store)
        for i in range(200):
            t[b"key%d" % i] = b"value%d" % i
        root = t.hash()
        t.commit(set_head=True)
        assert store.head() == root
    with LevelDBStore(tmp_path / "eth", readonly=True) as store:
        t = Trie(store, root=store.head())
        assert t.hash() == root and t[b"key7"] == b"value7"


# ---------------------------------------------------------------------------------------------- Go's store, read

def test_go_store_reads_as_in_go(go_store):
    tree = MutableTree(go_store)
    assert tree.available_versions() == META["available_versions"] == [3, 4, 5, 6]
    assert tree.latest_version == 6
    assert tree.load() == 6 and tree.hash().hex() == META["latest_root_hex"]
    assert tree.ndb.storage_version == "1.1.0-6" and tree.ndb.fast_storage_enabled()
    for v in META["versions"]:
        version = v["version"]
        assert tree.version_exists(version)
        for key_hex, value_hex in ((p["key_hex"], p["value_hex"]) for p in v["present"]):
            assert tree.get_versioned(bytes.fromhex(key_hex), version) == bytes.fromhex(value_hex)
        for key_hex in v["absent_hex"]:
            assert tree.get_versioned(bytes.fromhex(key_hex), version) is None
        t = MutableTree(go_store)
        assert t.load_version(version) == version
        assert t.hash().hex() == v["root_hash_hex"] and len(t) == v["size"]
        for p in v["present"]:
            key, value = bytes.fromhex(p["key_hex"]), bytes.fromhex(p["value_hex"])
            assert t.get(key) == value and key in t
            index, got = t.get_with_index(key)
            assert got == value and t.get_by_index(index) == (key, value)
        for key_hex in v["absent_hex"]:
            assert t.get(bytes.fromhex(key_hex)) is None
        items = list(t.items())
        assert len(items) == v["size"] and [k for k, _ in items] == sorted(k for k, _ in items)
        assert list(t.items(ascending=False)) == items[::-1]
    for version in (1, 2, 7):
        assert not tree.version_exists(version)
        with pytest.raises(VersionError):
            MutableTree(go_store).load_version(version)
    # The latest version's items are exactly its fast nodes (Go's live state index).
    fast = [(k[1:], decode_fast_node(v)[0]) for k, v in go_store.iterate(*prefix_range(b"f"))]
    assert list(tree.items()) == fast


def test_go_store_content_is_the_dump(go_store):
    """LevelDB replays Go's write-ahead log (with the pruning deletes) over its sorted table: the logical content
    is exactly Go's own dump."""
    assert list(go_store.iterate()) == DUMP


def test_get_reads_fast_nodes_like_go(go_store):
    """At the latest version Go's Get answers from the fast node: a doctored fast node shows through, and a key
    missing from the fast index is absent without walking the tree; an older version walks the tree."""
    tree = MutableTree(go_store)
    tree.load()
    key = bytes.fromhex(META["versions"][-1]["present"][0]["key_hex"])
    value = tree.get(key)
    go_store.put(b"f" + key, encode_fast_node(6, b"doctored"))
    assert tree.get(key) == value                         # the decoded fast node is cached, as Go's
    tree.ndb.clear_fast_cache()
    assert tree.get(key) == b"doctored"
    assert dict(tree.items())[key] == value               # iteration walks the tree
    go_store.delete(b"f" + key)
    tree.ndb.clear_fast_cache()
    assert tree.get(key) is None
    old = MutableTree(go_store)
    old.load_version(5)
    assert old.get(key) == tree.get_versioned(key, 5)
    unfast = MutableTree(go_store, fast_storage=False)
    unfast.load()
    assert unfast.get(key) == value


@pytest.mark.parametrize("cache_size", [0, 1, 7, 100000])
def test_fast_node_cache_agrees_with_the_store(store, cache_size):
    """Random sets, removes and saves; after each save every key reads the same through the cache, through the
    store alone (cache off) and by a tree walk, at the latest version and at older ones."""
    import random

    r = random.Random(cache_size)
    tree = MutableTree(store, fast_cache_size=cache_size)
    model, history = {}, []
    keys = [bytes([i]) * (1 + i % 3) for i in range(40)]
    for version in range(1, 9):
        for _ in range(25):
            k = r.choice(keys)
            if r.random() < 0.3:
                tree.remove(k)
                model.pop(k, None)
            else:
                v = r.randbytes(r.randrange(0, 5))
                tree.set(k, v)
                model[k] = v
        tree.save_version()
        history.append(dict(model))
        for k in keys:
            assert tree.get(k) == model.get(k)
        assert tree.ndb.cached_fast_nodes() <= cache_size
        uncached = MutableTree(store, fast_cache_size=0)
        uncached.load()
        assert {k: uncached.get(k) for k in keys} == {k: model.get(k) for k in keys}
        assert {k: tree.get(k) for k in keys} == {k: model.get(k) for k in keys}   # now from the cache
    for version, state in enumerate(history, 1):
        old = MutableTree(store, fast_cache_size=cache_size)
        old.load_version(version)
        for k in keys:
            assert old.get(k) == state.get(k), (version, k)


def test_fast_cache_size_is_checked():
    with pytest.raises(TypeError, match="fast_cache_size"):
        MutableTree(fast_cache_size=1.5)
    with pytest.raises(ValueError, match="fast_cache_size"):
        MutableTree(fast_cache_size=-1)
    assert MutableTree().ndb.fast_cache_size == 100000


def test_fast_node_codec():
    assert encode_fast_node(3, b"ab") == b"\x06\x02ab"
    assert decode_fast_node(b"\x06\x02ab") == (b"ab", 3)
    assert decode_fast_node(encode_fast_node(2**40, b"")) == (b"", 2**40)
    with pytest.raises(CorruptTreeError, match="fast node"):
        decode_fast_node(b"\x06\x05ab", b"k")


# ---------------------------------------------------------------------------------------------- writing what Go writes

def replay(tree, ops=OPS, prune=True):
    replay_iavl_ops(tree, ops, prune=prune)
    return tree


def test_replay_writes_what_go_wrote(store):
    tree = replay(MutableTree(store))
    assert list(store.iterate()) == DUMP
    assert tree.available_versions() == [3, 4, 5, 6]
    again = MutableTree(store)
    assert again.load() == 6 and again.hash().hex() == META["latest_root_hex"]


def test_replay_onto_a_leveldb_go_can_read(tmp_path):
    """The store we write is a LevelDB with Go's exact content (what Go's own reader would list)."""
    with LevelDBStore(tmp_path / "ours", create=True) as s:
        replay(MutableTree(s))
    with LevelDBStore(tmp_path / "ours", readonly=True) as s:
        assert list(s.iterate()) == DUMP
        t = MutableTree(s)
        assert t.load() == 6 and t.available_versions() == [3, 4, 5, 6]


def test_save_version_writes_fast_nodes_and_storage_version():
    db = MemoryDB()
    tree = MutableTree(db)
    tree.set(b"a", b"1")
    tree.set(b"b", b"2")
    tree.save_version()
    assert db.get(b"f" + b"a") == encode_fast_node(1, b"1") and db.get(b"mstorage_version") == b"1.1.0-1"
    tree.set(b"a", b"1")                    # the same value again: Go bumps versionLastUpdatedAt
    tree.remove(b"b")
    tree.set(b"c", b"3")
    tree.remove(b"c")                       # set then removed in one version: no fast node
    tree.save_version()
    assert db.get(b"fa") == encode_fast_node(2, b"1") and db.get(b"fb") is None and db.get(b"fc") is None
    assert db.get(b"mstorage_version") == b"1.1.0-2"
    plain = MemoryDB()
    t = MutableTree(plain, fast_storage=False)
    t.set(b"a", b"1")
    t.save_version()
    assert sorted(k[:1] for k in plain) == [b"s"]


# ---------------------------------------------------------------------------------------------- pruning

def test_prune_refuses_the_latest_version(store):
    tree = replay(MutableTree(store), prune=False)
    with pytest.raises(VersionError, match="latest version 6 is less than or equal to toVersion 6"):
        tree.delete_versions_to(6)
    with pytest.raises(VersionError):
        tree.delete_versions_to(9)


def test_prune_step_by_step_keeps_later_versions(store):
    tree = replay(MutableTree(store), prune=False)
    roots = {op["version"]: op["root"] for op in OPS if op["op"] == "save_version"}
    tree.delete_versions_to(1)
    tree.delete_versions_to(2)
    assert list(store.iterate()) == DUMP            # in two steps, the same as Go's one
    tree.delete_versions_to(4)
    assert tree.available_versions() == [5, 6]
    for v in (5, 6):
        t = MutableTree(store)
        t.load_version(v)
        assert t.hash().hex() == roots[v] and len(list(t.items())) == len(t)
    # Every node left is reachable from version 5 or 6, and every reachable node is left.
    reachable = set()
    for v in (5, 6):
        stack = [store.get(root_key(v)) and node_key(v, 1)]
        while stack:
            nk = stack.pop()
            reachable.add(nk)
            node = decode_node(store.get(b"s" + nk), "v1", node_key=nk)
            if not node.is_leaf:
                stack += [node.left_node_key, node.right_node_key]
    assert {k[1:] for k, _ in store.iterate(*prefix_range(b"s"))} == reachable
    assert tree.delete_versions_to(4) == 0 or tree.available_versions() == [5, 6]


def test_prune_moves_a_reused_root_to_nonce_zero(store):
    """A version that changed nothing stores a reference to the root it reuses; pruning the version that wrote
    that root moves the node to (v, 0) (Go's deleteVersion), and the later version still loads."""
    tree = MutableTree(store)
    for i in range(20):
        tree.set(b"k%02d" % i, b"v%d" % i)
    h1, _ = tree.save_version()
    assert tree.save_version() == (h1, 2)                   # unchanged: a reference root
    assert store.get(root_key(2)) == b"s" + node_key(1, 1)
    tree.set(b"k05", b"changed")
    h3, _ = tree.save_version()
    tree.delete_versions_to(1)
    assert store.get(root_key(1)) is None and store.get(b"s" + node_key(1, 0)) is not None
    assert tree.available_versions() == [2, 3]
    t = MutableTree(store)
    assert t.load_version(2) == 2 and t.hash() == h1 and t.get(b"k05") == b"v5"
    tree.delete_versions_to(2)
    assert store.get(b"s" + node_key(1, 0)) is None and store.get(root_key(2)) is None
    t = MutableTree(store)
    assert t.load() == 3 and t.hash() == h3 and len(list(t.items())) == 20



class _CountingStore(MemoryDB):
    """A MemoryDB subclass: NodeDB reads it through get(), as any store other than MemoryDB itself."""

    def __init__(self):
        super().__init__()
        self.reads = {}

    def get(self, key, default=None):
        self.reads[key] = self.reads.get(key, 0) + 1
        return super().get(key, default)


def _prune_beside_a_memorydb(versions, to_version, seed):
    """The same random versions (the bench's prune workload, smaller) pruned on a _CountingStore and on a
    MemoryDB, checked to delete as many keys and to end with the same records; returns the counting store and how
    often it was asked for each node record (root records left out: the prune also reads them when it looks each
    version up)."""
    counting, plain = _CountingStore(), MemoryDB()
    for store in (counting, plain):
        iavl_prune_history(MutableTree(store), keys=1500, versions=versions, updates=150, removes=10, inserts=10,
                           seed=seed)
    counting.reads.clear()
    deleted = MutableTree(counting).delete_versions_to(to_version)
    assert deleted == MutableTree(plain).delete_versions_to(to_version) > 0
    assert list(counting.iterate()) == list(plain.iterate())
    return counting, [n for k, n in counting.reads.items() if k[:1] == b"s" and k[9:] != b"\x00\x00\x00\x01"]


def test_a_prune_reads_each_node_record_once():
    """Step v of a prune walks version v + 1, step v + 1 walks it again, and the nodes above the changes are
    checked at every step: on a store read through get() (LevelDB, LMDB), the prune keeps what it has read, as Go's
    node cache does, and asks the store for each node record once. The result is the same as on a MemoryDB."""
    counting, node_reads = _prune_beside_a_memorydb(8, 6, seed=3)
    assert len(node_reads) > 1000 and max(node_reads) == 1
    tree = MutableTree(counting)
    assert tree.load() == 8 and tree.available_versions() == [7, 8]


def test_a_prune_with_a_full_record_cache_ends_the_same(monkeypatch):
    """When the records read outgrow the cache, its older generation goes (a record not read again since is read
    from the store again if needed): the prune still ends where a MemoryDB's does."""
    import mpt.iavl.nodedb as nodedb

    monkeypatch.setattr(nodedb, "PRUNE_CACHED_RECORDS", 200)
    _, node_reads = _prune_beside_a_memorydb(8, 6, seed=4)
    assert max(node_reads) > 1                  # some were read again after their generation went
    monkeypatch.setattr(nodedb, "PRUNE_CACHED_RECORDS", 1)      # a generation of one record
    _prune_beside_a_memorydb(5, 3, seed=5)


def test_the_prune_cache_figures_of_the_docs(monkeypatch):
    """docs/iavl.rst: the cache's size, and what it saves on the IAVLTree/Prune workload (PRUNE_CACHED_RECORDS = 0
    turns it off, reading the store as before it existed)."""
    import re

    import mpt.iavl.nodedb as nodedb

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "iavl.rst").read_text().split())
    found = re.search(r"two generations of at most ([\d,]+) records, ``mpt.iavl.nodedb.PRUNE_CACHED_RECORDS``.*?"
                      r"without it the case asked LevelDB for ([\d,]+) records where ([\d,]+) are distinct", text)
    size, without, distinct = (int(g.replace(",", "")) for g in found.groups())
    assert nodedb.PRUNE_CACHED_RECORDS == size
    reads = {}
    for limit in (0, size):
        monkeypatch.setattr(nodedb, "PRUNE_CACHED_RECORDS", limit)
        store = _CountingStore()
        tree = MutableTree(store)
        iavl_prune_history(tree)
        store.reads.clear()
        tree.delete_versions_to(9)
        reads[limit] = store.reads
    assert sum(reads[0].values()) == without and len(reads[0]) == distinct
    assert set(reads[size]) == set(reads[0]) and sum(reads[size].values()) < 1.01 * distinct

def _point_reads(store):
    """Count the reads a NodeDB makes of store one key at a time (it binds the store's unchecked_get, or get, when
    it is made: wrap before making the tree). Returns the key -> count dict."""
    reads = {}
    name = "unchecked_get" if getattr(store, "unchecked_get", None) is not None else "get"
    read = getattr(store, name)

    def counted(key, *default):
        reads[key] = reads.get(key, 0) + 1
        return read(key, *default)

    setattr(store, name, counted)
    return reads


def _prune_a_persistent_store_beside_a_memorydb(kind, tmp_path, seed, first_point_read_only):
    """The prune workload (smaller) pruned on a persistent store and on a MemoryDB: the same keys deleted, the
    same records left. Each step v scans the node records version v + 1 wrote into the prune's record cache; with
    first_point_read_only, the only node records read one at a time must be the first version's."""
    persistent, plain = new_iavl_store(kind, tmp_path), MemoryDB()
    try:
        for s in (persistent, plain):
            iavl_prune_history(MutableTree(s), keys=1500, versions=8, updates=150, removes=10, inserts=10, seed=seed)
        reads = _point_reads(persistent)
        tree = MutableTree(persistent)
        reads.clear()
        deleted = tree.delete_versions_to(6)
        assert deleted == MutableTree(plain).delete_versions_to(6) > 0
        assert list(persistent.iterate()) == list(plain.iterate())
        node_versions = {int.from_bytes(k[1:9], "big") for k in reads if k[:1] == b"s" and k[9:] != b"\x00\x00\x00\x01"}
        if first_point_read_only:
            assert node_versions == {1}
        else:
            assert len(node_versions) > 1
        again = MutableTree(persistent)
        assert again.load() == 8 and again.available_versions() == [7, 8]
    finally:
        persistent.close()


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_a_prune_on_a_persistent_store_scans_each_version_it_walks(kind, tmp_path):
    """On LMDB and LevelDB, step v of a prune reads the records version v + 1 wrote in one ordered scan (a
    LevelDB scan hands over a record in about a third of a point read's time): after the scans, only the first
    version's nodes are read one at a time. The result is a MemoryDB's."""
    _prune_a_persistent_store_beside_a_memorydb(kind, tmp_path, seed=6, first_point_read_only=True)


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_a_prune_scan_takes_only_the_room_the_record_cache_has(kind, tmp_path, monkeypatch):
    """A scan stops where the cache's newer generation is full (a version may write more nodes than the cache
    holds): the rest is read one record at a time, and the prune ends the same. With the cache off
    (PRUNE_CACHED_RECORDS = 0) nothing is scanned."""
    import mpt.iavl.nodedb as nodedb

    for limit in (200, 1, 0):
        monkeypatch.setattr(nodedb, "PRUNE_CACHED_RECORDS", limit)
        (tmp_path / str(limit)).mkdir()
        _prune_a_persistent_store_beside_a_memorydb(kind, tmp_path / str(limit), seed=7, first_point_read_only=False)


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_a_prune_whose_scan_fails_changes_nothing(kind, tmp_path):
    """A store failure in the middle of a version scan (here a corrupt table, raised as the stores raise it) ends
    the prune with that mpt error before anything is deleted; the same prune afterwards ends where a MemoryDB's
    does."""
    persistent, plain = new_iavl_store(kind, tmp_path), MemoryDB()
    try:
        for s in (persistent, plain):
            iavl_prune_history(MutableTree(s), keys=500, versions=5, updates=50, removes=5, inserts=5, seed=8)
        before = list(persistent.iterate())
        scan = persistent.iterate

        def failing(start=None, end=None, reverse=False):
            for i, pair in enumerate(scan(start, end, reverse)):
                if i == 10 and start[:1] == b"s" and start[9:] == bytes(4):
                    raise StoreCorruptError("corrupt table in %s (test)" % kind)
                yield pair

        persistent.iterate = failing
        with pytest.raises(StoreCorruptError, match="corrupt table"):
            MutableTree(persistent).delete_versions_to(3)
        del persistent.iterate
        assert list(persistent.iterate()) == before
        assert MutableTree(persistent).delete_versions_to(3) == MutableTree(plain).delete_versions_to(3)
        assert list(persistent.iterate()) == list(plain.iterate())
    finally:
        persistent.close()


def test_prune_empty_versions(store):
    tree = MutableTree(store)
    tree.save_version()
    tree.set(b"a", b"1")
    tree.save_version()
    tree.remove(b"a")
    tree.save_version()
    tree.set(b"b", b"2")
    h4, _ = tree.save_version()
    tree.delete_versions_to(3)
    assert tree.available_versions() == [4]
    assert sorted(k for k, _ in store.iterate(*prefix_range(b"s"))) == [root_key(4)]
    t = MutableTree(store)
    assert t.load() == 4 and t.hash() == h4


# ---------------------------------------------------------------------------------------------- corrupt stores

def _corrupt_store(mutate):
    """A small saved tree (version 1) whose records `mutate` rewrites; returns the store."""
    db = MemoryDB()
    tree = MutableTree(db)
    for i in range(16):
        tree.set(b"k%02d" % i, b"v%d" % i)
    tree.save_version()
    nodes = {k[1:]: decode_node(v, "v1", node_key=k[1:]) for k, v in db.items() if k[:1] == b"s"}
    mutate(db, nodes)
    return db


def _rewrite(db, nk, node, **changes):
    """Store node under nk with some fields changed (re-encoded in the v1 layout by hand)."""
    from mpt.iavl import InnerNode
    fields = dict(key=node.key, height=node.height, size=node.size, version=node.version,
                  left=node.left_node_key, right=node.right_node_key)
    fields.update(changes)
    # The v1 inner node stores its own hash: keep the original one (the walk must not depend on it).
    inner = InnerNode(fields["key"], fields["height"], fields["size"], fields["version"], hash=node.hash,
                      left_node_key=fields["left"], right_node_key=fields["right"])
    db.put(b"s" + nk, inner.to_bytes("v1"))


def _self_root(db, nodes):
    root = nodes[node_key(1, 1)]
    _rewrite(db, node_key(1, 1), root, left=node_key(1, 1))


def _ancestor(db, nodes):
    root = nodes[node_key(1, 1)]
    child = root.right_node_key
    _rewrite(db, child, nodes[child], right=node_key(1, 1))


def _height(db, nodes):
    root = nodes[node_key(1, 1)]
    child = root.left_node_key
    _rewrite(db, child, nodes[child], height=root.height)


def _size(db, nodes):
    root = nodes[node_key(1, 1)]
    _rewrite(db, node_key(1, 1), root, size=root.size + 5)


def _missing(db, nodes):
    root = nodes[node_key(1, 1)]
    db.delete(b"s" + root.left_node_key)


WALKS = {
    "get": lambda t: [t.get(b"k%02d" % i) for i in range(16)],
    "items": lambda t: list(t.items()),
    "items_desc": lambda t: list(t.items(ascending=False)),
    "get_with_index": lambda t: [t.get_with_index(b"k%02d" % i) for i in range(16)],
    "get_by_index": lambda t: [t.get_by_index(i) for i in range(16)],
    "set": lambda t: [t.set(b"k%02d" % i, b"x") for i in range(16)],
    "remove": lambda t: [t.remove(b"k%02d" % i) for i in range(16)],
    "save_version": lambda t: ([t.set(b"k%02d" % i, b"y") for i in range(0, 16, 3)], t.save_version()),
}


@pytest.mark.parametrize("walk", sorted(WALKS))
@pytest.mark.parametrize("corruption, error, names", [
    (_self_root, CorruptTreeError, "s" + node_key(1, 1).hex()),
    (_ancestor, CorruptTreeError, "s" + node_key(1, 1).hex()),
    (_height, CorruptTreeError, "s" + node_key(1, 1).hex()),
    (_size, CorruptTreeError, "s" + node_key(1, 1).hex()),
    (_missing, MissingNodeError, "s" + node_key(1, 2).hex()),
], ids=["self-child", "ancestor-child", "height", "size", "missing"])
def test_corrupt_stores_raise_naming_the_node(corruption, error, names, walk):
    db = _corrupt_store(corruption)
    tree = MutableTree(db, fast_storage=False)      # through the tree, not the fast index
    tree.load()
    with pytest.raises(error, match=names):
        WALKS[walk](tree)


@pytest.mark.parametrize("corruption", [_self_root, _ancestor, _height, _size, _missing],
                         ids=["self-child", "ancestor-child", "height", "size", "missing"])
def test_corrupt_store_is_found_by_pruning_too(corruption):
    """Pruning walks the pruned version's tree: version 1's corrupt nodes raise there too."""
    db = _corrupt_store(corruption)
    tree = MutableTree(db, fast_storage=False)
    # Version 2: a tree of its own (no node shared with version 1), written beside it.
    version2 = MutableTree()
    version2.save_version()
    for i in range(16):
        version2.set(b"z%02d" % i, b"w%d" % i)
    version2.save_version()
    for k, v in version2.db.items():
        if k[:1] == b"s" and k[1:9] == (2).to_bytes(8, "big"):
            db.put(k, v)
    assert tree.available_versions() == [1, 2]
    with pytest.raises((CorruptTreeError, MissingNodeError)):
        tree.delete_versions_to(1)


def test_corrupt_root_records():
    db = MemoryDB()
    db.put(root_key(1), b"s\x00\x01")
    with pytest.raises(CorruptTreeError, match="no node reference"):
        MutableTree(db).load_version(1)
    db.put(root_key(1), b"\x02\x02garbage")
    with pytest.raises(CorruptTreeError, match=root_key(1).hex()):
        MutableTree(db).load_version(1)
    db.put(root_key(1), b"s" + node_key(1, 1))        # a root record that references itself
    with pytest.raises(CorruptTreeError):
        MutableTree(db).load_version(1)


def test_nodedb_root_refs_and_versions(store):
    tree = MutableTree(store)
    tree.set(b"a", b"1")
    tree.save_version()
    tree.save_version()
    tree.remove(b"a")
    tree.save_version()
    ndb = NodeDB(store)
    assert ndb.latest_version() == 3 and ndb.first_version() == 1 and ndb.available_versions() == [1, 2, 3]
    assert ndb.root_ref(1) == node_key(1, 1) == ndb.root_ref(2) and ndb.root_ref(3) == b""
    with pytest.raises(VersionError):
        ndb.root_ref(4)
    assert ndb.legacy_latest_version() == -1 and ndb.legacy_versions() == []


# ---------------------------------------------------------------------------------------------- python -m mpt inspect

def test_inspect_cli_on_go_store(tmp_path, capsys):
    from mpt.__main__ import main

    shutil.copytree(FIXTURE / "iavl.db", tmp_path / "db")
    assert main(["inspect", "--db", str(tmp_path / "db"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["available_versions"] == [3, 4, 5, 6] and stats["storage_version"] == "1.1.0-6"
    assert [(r["root"], r["size"]) for r in stats["versions"]] == [
        (v["root_hash_hex"], v["size"]) for v in META["versions"]]
    # plyvel's count of the fixture (PROVENANCE.md): s keys per version 1:1734 2:816 3:1757 4:1881 5:1900 6:1956.
    assert stats["nodes_by_version"] == {"1": 1734, "2": 816, "3": 1757, "4": 1881, "5": 1900, "6": 1956}
    assert stats["fast_nodes"] == 2691 and stats["legacy_nodes"] == 0
    assert main(["inspect", "--db", str(tmp_path / "db")]) == 0
    out = capsys.readouterr().out
    assert META["latest_root_hex"] in out and "v1: 1734" in out
    assert main(["inspect", "--db", str(tmp_path / "db"), "--prefix", "s/k:bank/"]) == 2
    assert "no IAVL tree" in capsys.readouterr().err
    assert main(["inspect", "--db", str(tmp_path / "missing"), "--iavl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: no store at" in err


def test_inspect_cli_on_corrupt_lmdb_store(tmp_path, capsys):
    from mpt.__main__ import main

    with LMDBStore(str(tmp_path / "lmdb"), hash_keys=False) as s:
        tree = MutableTree(s)
        for i in range(10):
            tree.set(b"k%d" % i, b"v")
        tree.save_version()
    assert main(["inspect", "--db", str(tmp_path / "lmdb"), "--iavl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["versions"][0]["size"] == 10
    with LMDBStore(str(tmp_path / "lmdb"), hash_keys=False) as s:
        s.delete(b"s" + node_key(1, 2))
    assert main(["inspect", "--db", str(tmp_path / "lmdb"), "--iavl"]) == 1
    assert "incomplete" in capsys.readouterr().err


def test_load_upgrades_a_store_without_fast_nodes_as_go_does(store):
    """Go's LoadVersion turns fast storage on (enableFastStorageAndCommitIfNotEnabled): every key of the loaded
    version gets a fast node at that version, stale ones go, and the storage version names the latest."""
    plain = MutableTree(store, fast_storage=False)
    for i in range(50):
        plain.set(b"k%02d" % i, b"v%d" % i)
    plain.save_version()
    plain.remove(b"k07")
    plain.save_version()
    assert not list(store.iterate(*prefix_range(b"f"))) and store.get(b"mstorage_version") is None
    store.put(b"f" + b"stale", encode_fast_node(1, b"x"))
    tree = MutableTree(store)
    assert tree.load() == 2
    fast = [(k[1:], decode_fast_node(v)) for k, v in store.iterate(*prefix_range(b"f"))]
    assert fast == [(k, (v, 2)) for k, v in plain.items()]
    assert store.get(b"mstorage_version") == b"1.1.0-2" and tree.ndb.fast_storage_enabled()
    assert tree.get(b"k07") is None and tree.get(b"k08") == b"v8"


# ------------------------------------------------------------------------------------------ several trees, one store

def test_get_never_answers_from_a_version_newer_than_the_tree(store):
    """Tree A stays at version 1 while tree B saves version 2: A's gets answer version 1 whether or not A had
    cached the key (Go checks each fast node's versionLastUpdatedAt against the tree's version)."""
    t = MutableTree(store)
    t.set(b"k", b"old")
    t.set(b"cached", b"old")
    t.set(b"gone", b"old")
    t.save_version()
    a = MutableTree(store)
    a.load()
    assert a.get(b"cached") == b"old"               # now in A's cache
    b = MutableTree(store)
    b.load()
    b.set(b"k", b"new")
    b.set(b"cached", b"new")
    b.set(b"added", b"new")
    b.save_version()
    assert [a.get(k) for k in (b"k", b"cached", b"gone", b"added")] == [b"old", b"old", b"old", None]
    assert a.get(b"k") == dict(a.items())[b"k"] == a.get_versioned(b"k", 1)
    a.load()                                        # version 2: loading forgets what A had cached
    assert [a.get(k) for k in (b"k", b"cached", b"gone", b"added")] == [b"new", b"new", b"old", b"new"]
    a.set(b"gone", b"x")
    a.save_version()
    assert a.get(b"cached") == b"new" and a.ndb.cached_fast_nodes() >= 1


def _reused_root_pruned(store, child):
    """v1: the leaf a; v2 reuses it; with child, v3 is a new inner node over it. Pruning v1 moves the leaf from
    (1, 1) to (1, 0)."""
    t = MutableTree(store)
    t.set(b"a", b"1")
    t.save_version()
    t.save_version()
    if child:
        t.set(b"b", b"2")
        t.save_version()
    t.delete_versions_to(1)
    assert store.get(root_key(1)) is None and store.get(b"s" + node_key(1, 0)) is not None


@pytest.mark.parametrize("child", [False, True])
def test_a_pruned_root_keeps_its_node_key(store, child):
    """Pruning moves a reused root from (v, 1) to (v, 0); read back, it keeps the key (v, 1), as Go's GetNode
    does, so a later version that keeps it as a child references (v, 1) and stays readable."""
    _reused_root_pruned(store, child)
    t = MutableTree(store)
    latest = t.load()
    assert t.get_with_index(b"a") == (0, b"1")      # the moved leaf: the root (v2), or a child (v3)
    t.set(b"c", b"3")
    assert t.save_version()[1] == latest + 1
    fresh = MutableTree(store, fast_storage=False)
    fresh.load()
    expected = {b"a": b"1", b"b": b"2", b"c": b"3"} if child else {b"a": b"1", b"c": b"3"}
    assert dict(fresh.items()) == expected
    assert t.available_versions() == list(range(2, latest + 2))


def test_a_set_that_cannot_read_a_node_leaves_the_tree_as_it_was():
    db = MemoryDB()
    t = MutableTree(db, fast_storage=False)
    for i in range(64):
        t.set(b"%03d" % i, b"v")
    saved, _ = t.save_version()
    leaves = [k for k, v in db.iterate(*prefix_range(b"s")) if v[:1] == b"\x00"]
    db.delete(leaves[len(leaves) // 2])             # a leaf deep in the tree
    t = MutableTree(db, fast_storage=False)
    t.load()
    failed = 0
    for i in range(64):
        try:
            t.set(b"%03dx" % i, b"w")
        except MissingNodeError:
            failed += 1
            assert t.hash() == saved                # nothing copied or relinked
        else:
            t.rollback()
    assert failed >= 1 and t.hash() == saved
