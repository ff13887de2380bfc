"""Never touch what is not ours: the sequences of a new user's trial and of the kill and corruption runs.

* A store that is not an IAVL tree's (an Ethereum trie in LMDB, another program's keys in a LevelDB, a Cosmos
  multistore opened without its module prefix) is refused by every IAVL operation that writes, before anything is
  written: ForeignStoreError naming the key.
* LMDBStore creates a store only in a missing or empty directory.
* An import killed part-way leaves a store that the next open cleans up; a new import then works.
* Loading an old version never makes its values the current ones.
* A damaged version key cannot make a search loop forever.
* Store failures are mpt errors saying what happened (damaged files, a full or read-only disk, read-only stores).
"""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import mpt
from mpt import Trie
from mpt.db import LMDBStore, MemoryDB
from mpt.errors import (
    ForeignStoreError,
    MptError,
    StoreCorruptError,
    StoreError,
    StoreReadOnlyError,
)
from mpt.iavl import MutableTree
from mpt.iavl.nodedb import IMPORT_MARKER_KEY, STORAGE_VERSION_KEY, cosmos_store_names, is_iavl_record

from conftest import IAVL_STORE_KINDS, VECTORS, new_iavl_store

PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)
GO_STORE = VECTORS / "cosmos" / "iavl_store_A" / "iavl.db"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _eth_lmdb(path, n=2000):
    """An Ethereum trie committed to an LMDB store, as `python -m mpt` and Trie(store) write it."""
    store = LMDBStore(str(path))
    t = Trie(store)
    for i in range(n):
        t[b"key-%d" % i] = b"a value long enough for a node of its own, %d" % i
    root = t.commit(set_head=True)
    store.close()
    return root


def _snapshot(store):
    return dict(store.iterate())


# ------------------------------------------------------------------------------------------- foreign stores

def test_an_ethereum_trie_in_lmdb_is_never_written_by_an_iavl_tree(tmp_path):
    path = tmp_path / "eth.lmdb"
    root = _eth_lmdb(path)
    store = LMDBStore(str(path), hash_keys=False)
    assert store.get(root) is not None
    before = _snapshot(store)
    assert any(k[:1] == b"f" for k in before)       # the records the old load deleted
    for operation in (lambda t: t.load(), lambda t: (t.set(b"a", b"b"), t.save_version()),
                      lambda t: t.delete_versions_to(1), lambda t: t.import_nodes(iter(()), 6)):
        with pytest.raises(ForeignStoreError, match="not an IAVL tree's .*nothing was written"):
            operation(MutableTree(store))
        assert _snapshot(store) == before
    store.close()
    with LMDBStore(str(path)) as again:
        assert Trie(again, root=again.head()).get(b"key-7").endswith(b", 7")


def test_the_iavl_import_cli_refuses_an_ethereum_lmdb(tmp_path):
    path = tmp_path / "eth.lmdb"
    _eth_lmdb(path)
    export = tmp_path / "v6.jsonl"
    shutil.copy(VECTORS / "cosmos" / "iavl_store_A" / "export_v6.jsonl", export)
    with LMDBStore(str(path), hash_keys=False) as store:
        before = _snapshot(store)
    r = subprocess.run([sys.executable, "-m", "mpt", "iavl", "import", str(path), "--version", "6", str(export)],
                       capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "not an IAVL tree's" in r.stderr and r.stdout == ""
    with LMDBStore(str(path), hash_keys=False) as store:
        assert _snapshot(store) == before


def test_a_leveldb_of_other_keys_keeps_them(tmp_path):
    """The trial's sequence: a LevelDB holding foo:* keys, MutableTree(store).load()."""
    plyvel = pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore

    db = plyvel.DB(str(tmp_path / "app.db"), create_if_missing=True)
    for i in range(50):
        db.put(b"foo:%d" % i, b"some application value %d" % i)
    db.close()
    with LevelDBStore(tmp_path / "app.db") as store:
        with pytest.raises(ForeignStoreError, match=r"key 'foo:0'.*prefix") as e:
            MutableTree(store).load()
        assert e.value.key == b"foo:0" and isinstance(e.value, StoreError)
        assert len(store) == 50
    with LevelDBStore(tmp_path / "app.db", readonly=True) as store:
        assert MutableTree(store).load() == 0           # reading is fine: nothing to rebuild on a read-only store


def test_a_cosmos_multistore_without_a_prefix_names_its_stores(tmp_path):
    db = MemoryDB()
    for name in (b"acc", b"bank", b"staking"):
        pre = b"s/k:" + name + b"/"
        tree = MutableTree(_Prefixed(db, pre))
        tree.set(b"key", name)
        tree.save_version()
    db.put(b"s/latest", b"\x01")
    assert cosmos_store_names(db) == ["acc", "bank", "staking"]
    before = dict(db.iterate())
    with pytest.raises(ForeignStoreError, match=r"Cosmos multistore.*prefix=b\"s/k:acc/\".*acc, bank, staking"):
        MutableTree(db).load()
    assert dict(db.iterate()) == before
    assert MutableTree(_Prefixed(db, b"s/k:bank/")).load() == 1


class _Prefixed:
    """A prefixed view of a MemoryDB (what LevelDBStore(prefix=...) does), enough for the tree."""

    def __init__(self, db, prefix):
        self.db, self.prefix = db, prefix

    def get(self, key, default=None):
        return self.db.get(self.prefix + key, default)

    def put(self, key, value):
        self.db.put(self.prefix + key, value)

    def delete(self, key):
        self.db.delete(self.prefix + key)

    def iterate(self, start=None, end=None, reverse=False):
        lo = self.prefix + (start or b"")
        hi = self.prefix + end if end is not None else self.prefix[:-1] + bytes([self.prefix[-1] + 1])
        n = len(self.prefix)
        for k, v in self.db.iterate(lo, hi, reverse):
            yield k[n:], v

    def write_batch(self):
        outer = self

        class _Batch:
            def __enter__(self):
                self.cm = outer.db.write_batch()
                self.b = self.cm.__enter__()
                return self

            def put(self, k, v):
                self.b.put(outer.prefix + k, v)

            def delete(self, k):
                self.b.delete(outer.prefix + k)

            def __exit__(self, *exc):
                return self.cm.__exit__(*exc)

        return _Batch()

    def close(self):
        pass


@pytest.mark.parametrize("kind", IAVL_STORE_KINDS)
def test_a_foreign_record_among_the_fast_nodes_stops_the_rebuild(tmp_path, kind):
    """An IAVL store with one record under `f` that is no fast node: the fast-index rebuild (which deletes every
    `f` record) stops before deleting anything."""
    store = new_iavl_store(kind, tmp_path)
    tree = MutableTree(store)
    for i in range(20):
        tree.set(b"k%d" % i, b"v%d" % i)
    tree.save_version()
    store.put(STORAGE_VERSION_KEY, b"1.0.0")            # an index to rebuild at the next load
    store.put(b"foreign-key", b"\x00\x01not a fast node")
    before = _snapshot(store)
    with pytest.raises(ForeignStoreError, match="rebuild the fast index.*'foreign-key'"):
        MutableTree(store).load()
    assert _snapshot(store) == before
    store.close()


def test_pruning_keeps_a_foreign_record_under_r(tmp_path):
    db = MemoryDB()
    tree = MutableTree(db, format="legacy")
    for v in range(3):
        tree.set(b"k", b"%d" % v)
        tree.save_version()
    v1 = MutableTree(db)
    v1.load()
    for v in range(2):
        v1.set(b"n", b"%d" % v)
        v1.save_version()
    db.put(b"report.txt", b"hello")          # under `r`, not a legacy root record
    before = dict(db.iterate())
    with pytest.raises(ForeignStoreError, match="legacy root records.*'report.txt'"):
        v1.delete_versions_to(4)
    assert dict(db.iterate()) == before


def test_is_iavl_record_reads_records_as_their_keys_say():
    db = MemoryDB()
    tree = MutableTree(db)
    tree.set(b"a", b"1")
    tree.set(b"b", b"2")
    tree.save_version()
    tree.save_version()         # a version that reuses its root: a root reference record
    records = dict(db.iterate())
    assert records and all(is_iavl_record(k, v) for k, v in records.items())
    assert not is_iavl_record(b"foo:1", b"x")
    assert not is_iavl_record(b"f" + b"a", b"\x02\x05ab")           # a length past the end
    assert not is_iavl_record(b"s" + bytes(12), b"\xf8\x51")       # no node
    assert not is_iavl_record(b"s" + bytes(31), b"")                # no node key
    assert not is_iavl_record(b"mpt:head", bytes(32))
    assert not is_iavl_record(b"", b"")


# ------------------------------------------------------------------------------------------- LMDB folders

def test_lmdbstore_refuses_a_leveldb_folder(tmp_path):
    pytest.importorskip("plyvel")
    path = tmp_path / "app.db"
    shutil.copytree(GO_STORE, path)
    names = sorted(os.listdir(path))
    for readonly in (False, True):
        with pytest.raises(StoreError, match=r"not an LMDB store: it is a LevelDB store: use LevelDBStore"):
            LMDBStore(str(path), readonly=readonly)
    assert sorted(os.listdir(path)) == names            # no data.mdb, no lock.mdb
    with pytest.raises(TypeError, match=r"it is a LevelDB store: pass LevelDBStore\("):
        MutableTree(str(path))


def test_lmdbstore_refuses_a_folder_of_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"is not an LMDB store: it is a directory of 1 entry that is no store "
                                         r"\(notes.txt\)"):
        LMDBStore(str(tmp_path))
    assert os.listdir(tmp_path) == ["notes.txt"]
    with pytest.raises(TypeError, match="it is a directory of 1 entry"):
        MutableTree(str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with LMDBStore(str(empty)) as s:                    # a missing or empty directory makes a store
        s.put(bytes(32), b"x")
    with LMDBStore(str(empty), readonly=True) as s:
        assert s.get(bytes(32)) == b"x"
    with pytest.raises(TypeError, match=r"pass LMDBStore\("):
        MutableTree(str(tmp_path / "new.db"))


# ------------------------------------------------------------------------------------------- killed imports

KILLED_IMPORT = textwrap.dedent("""
    import os, signal, sys
    from mpt.db import LMDBStore, LevelDBStore
    from mpt.iavl import MutableTree
    import mpt.iavl.export as export_module
    import mpt.iavl.nodedb as nodedb_module
    kind, path, at, die_in_removal = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    export_module.IMPORT_BATCH_SIZE = 500
    nodedb_module.REMOVE_BATCH_SIZE = 300
    base = LMDBStore if kind == "lmdb" else LevelDBStore

    class Store(base):
        batches = 0

        def write_batch(self, *args, **kwargs):
            Store.batches += 1
            if die_in_removal and Store.batches == 3:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().write_batch(*args, **kwargs)

    store = Store(path, hash_keys=False) if kind == "lmdb" else Store(path, create=True)
    if die_in_removal:
        MutableTree(store)      # the open that removes the killed import's records, killed in its turn
        sys.exit(3)
    src = MutableTree()
    for i in range(3000):
        src.set(b"key-%05d" % i, b"value-%d" % i)
    src.save_version()
    nodes = list(src.export(1))

    def stream():
        for i, node in enumerate(nodes):
            if i == at:
                os.kill(os.getpid(), signal.SIGKILL)
            yield node

    MutableTree(store).import_nodes(stream(), 7)
    sys.exit(4)
""")


def _source_root():
    src = MutableTree()
    for i in range(3000):
        src.set(b"key-%05d" % i, b"value-%d" % i)
    src.save_version()
    return src, src.hash()


def _open(kind, path, readonly=False):
    if kind == "lmdb":
        return LMDBStore(str(path), hash_keys=False, readonly=readonly)
    from mpt.db import LevelDBStore
    return LevelDBStore(path, create=not readonly, readonly=readonly)


def _run_killed(kind, path, at, die_in_removal=False):
    r = subprocess.run([sys.executable, "-c", KILLED_IMPORT, kind, str(path), str(at), "1" if die_in_removal else "0"],
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stderr)


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
@pytest.mark.parametrize("at", [0, 700, 3000, 5998])       # before any batch, after one, midway, before the last
def test_an_import_killed_midway_leaves_a_store_that_opens(tmp_path, kind, at):
    if kind == "leveldb":
        pytest.importorskip("plyvel")
    path = tmp_path / ("store." + kind)
    _run_killed(kind, path, at)
    src, root = _source_root()
    if at > 500:
        with _open(kind, path, readonly=True) as ro:            # read-only: no trace of the import, writes refused
            assert ro.get(IMPORT_MARKER_KEY) is not None
            tree = MutableTree(ro)
            assert tree.load() == 0 and tree.available_versions() == [] and tree.latest_version == 0
            with pytest.raises(StoreError, match="interrupted; open it writable"):
                tree.import_nodes(src.export(1), 7)
    with _open(kind, path) as store:
        tree = MutableTree(store)          # the open removes what the killed import wrote
        assert list(store.iterate()) == []
        assert tree.load() == 0 and tree.available_versions() == []
        assert tree.import_nodes(src.export(1), 7) == root
    with _open(kind, path) as store:
        again = MutableTree(store)
        assert again.load() == 7 and again.hash() == root and again.get(b"key-01234") == b"value-1234"
        assert store.get(IMPORT_MARKER_KEY) is None


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_a_killed_removal_resumes_at_the_next_open(tmp_path, kind):
    if kind == "leveldb":
        pytest.importorskip("plyvel")
    path = tmp_path / ("store." + kind)
    _run_killed(kind, path, 5998)
    with _open(kind, path, readonly=True) as ro:
        left = sum(1 for _ in ro.iterate())
    _run_killed(kind, path, 0, die_in_removal=True)
    with _open(kind, path, readonly=True) as ro:
        middle = sum(1 for _ in ro.iterate())
        assert ro.get(IMPORT_MARKER_KEY) is not None
    assert 0 < middle < left
    src, root = _source_root()
    with _open(kind, path) as store:
        tree = MutableTree(store)
        assert list(store.iterate()) == [] and tree.import_nodes(src.export(1), 7) == root


def _import_with_a_look_during_it(db, monkeypatch, look):
    """Import _source_root's version 1 into db as version 7, in batches of 500 nodes (so that several are written),
    calling look() at the 3000th node while the import runs. Returns the root."""
    import mpt.iavl.export as export_module

    src, root = _source_root()
    monkeypatch.setattr(export_module, "IMPORT_BATCH_SIZE", 500)

    def stream():
        for i, node in enumerate(src.export(1)):
            if i == 3000:
                look()
            yield node

    assert MutableTree(db).import_nodes(stream(), 7) == root
    return root


def test_an_import_running_in_this_process_is_not_removed_by_another_open(monkeypatch):
    db = MemoryDB()
    seen = []

    def look():
        other = MutableTree(db)             # another tree on the store while the import runs
        seen.append((other.latest_version, other.available_versions()))

    _import_with_a_look_during_it(db, monkeypatch, look)
    assert seen == [(0, [])]
    assert MutableTree(db).load() == 7 and db.get(IMPORT_MARKER_KEY) is None


# ------------------------------------------------------------------------------------------- old versions

@pytest.mark.parametrize("kind", IAVL_STORE_KINDS)
def test_loading_an_old_version_never_makes_its_values_current(tmp_path, kind):
    store = new_iavl_store(kind, tmp_path)
    tree = MutableTree(store)
    tree.set(b"k", b"old")
    tree.set(b"gone", b"x")
    tree.save_version()                         # 1
    tree.set(b"k", b"new")
    tree.remove(b"gone")
    tree.save_version()                         # 2
    skip = MutableTree(store, fast_storage=False)
    skip.load()
    skip.set(b"k", b"newest")
    skip.save_version()                         # 3, written without the fast index: it is behind now
    old = MutableTree(store)
    assert old.load_version(1) == 1
    assert old.get(b"k") == b"old" and old.get(b"gone") == b"x"
    assert dict(old.items()) == {b"k": b"old", b"gone": b"x"}
    latest = MutableTree(store)
    assert latest.load() == 3
    assert latest.get(b"k") == b"newest" and latest.get(b"gone") is None
    assert dict(latest.items()) == {b"k": b"newest"}
    assert old.get(b"k") == b"old"              # the old tree still answers its own version
    store.close()


# ------------------------------------------------------------------------------------------- damaged keys

HANG_CHECK = textwrap.dedent("""
    import sys
    from mpt.db import MemoryDB
    from mpt.errors import MptError
    from mpt.iavl import MutableTree
    db = MemoryDB()
    tree = MutableTree(db)
    for v in range(3):
        tree.set(b"k%d" % v, b"v")
        tree.save_version()
    key = [k for k, _ in db.iterate(b"s", b"t")][-1]
    version = int.from_bytes(key[1:9], "big") | (1 << int(sys.argv[1]))      # one flipped bit
    db.put(b"s" + version.to_bytes(8, "big") + key[9:], db.get(key))
    fresh = MutableTree(db)
    print(fresh.latest_version, fresh.available_versions())
    for call in (fresh.load, lambda: fresh.delete_versions_to(2), lambda: fresh.delete_versions_to(2**62 + 1)):
        try:
            call()
        except MptError as e:
            print(type(e).__name__)
""")


@pytest.mark.parametrize("bit", [62, 61, 40])
def test_a_damaged_version_key_cannot_hang_a_search(bit):
    r = subprocess.run([sys.executable, "-c", HANG_CHECK, str(bit)], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0].split(" ", 1)
    assert int(first[0]) == 3 | (1 << bit)


# ------------------------------------------------------------------------------------------- store failures

def _go_copy(tmp_path):
    path = tmp_path / "iavl.db"
    shutil.copytree(GO_STORE, path)
    return path


def test_a_damaged_leveldb_log_is_refused_not_rolled_back(tmp_path):
    pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore

    path = _go_copy(tmp_path)
    log = next(path.glob("*.log"))
    data = bytearray(log.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0xFF
    log.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match=r"the LevelDB at .*iavl.db is damaged"):
        LevelDBStore(path)


@pytest.mark.parametrize("damage", ["truncate", "zero-middle", "flip-tail"])
def test_damaged_leveldb_tables_raise_mpt_errors(tmp_path, damage):
    """Every step of the user's sequence on a store with a damaged table: an mpt error (naming the path when it
    is the store's) or the right answer, never plyvel's exception."""
    plyvel = pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore

    path = _go_copy(tmp_path)
    with LevelDBStore(path):
        pass                                # the log goes into a second table
    table = max(path.glob("*.ldb"), key=lambda p: p.stat().st_size)
    data = bytearray(table.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    elif damage == "zero-middle":
        data[len(data) // 3:len(data) // 3 + 4096] = bytes(4096)
    else:
        for i in range(len(data) - 200, len(data) - 100):
            data[i] ^= 0x55
    table.write_bytes(bytes(data))
    steps = [lambda s: MutableTree(s).load(), lambda s: list(s.iterate()), lambda s: s.get(b"s" + bytes(12)),
             lambda s: [MutableTree(s, fast_storage=False).load_version(6), list(MutableTree(s).items())],
             lambda s: MutableTree(s).delete_versions_to(3)]
    outcomes = []
    for step in steps:
        try:
            with LevelDBStore(path) as s:
                step(s)
            outcomes.append("ok")
        except MptError as e:
            assert not isinstance(e, plyvel.Error)
            if isinstance(e, StoreError):
                assert str(path) in str(e)
            outcomes.append(type(e).__name__)
    assert outcomes != ["ok"] * len(steps)


def test_lmdb_read_only_commit_is_a_store_error(tmp_path):
    path = tmp_path / "s"
    with LMDBStore(str(path)) as s:
        s.put(bytes(32), b"x")
    with LMDBStore(str(path), readonly=True) as ro:
        t = Trie(ro)
        t[b"a"] = b"b"
        with pytest.raises(StoreReadOnlyError, match="open read-only"):
            t.commit()
        with pytest.raises(StoreReadOnlyError):
            with ro.write_batch() as b:
                b.put(bytes(32), b"y")
        assert ro.get(bytes(32)) == b"x"


def test_leveldb_on_a_full_disk_is_a_store_write_error(small_disk):
    pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore
    from mpt.errors import StoreWriteError

    store = LevelDBStore(small_disk / "db", create=True)
    tree = MutableTree(store)
    with pytest.raises(StoreWriteError) as e:
        for v in range(1000):
            for i in range(200):
                tree.set(b"%d-%d" % (v, i), os.urandom(64))
            tree.save_version()
    saved = tree.version
    assert saved > 0 and e.value.disk_full and "disk is full" in str(e.value) and str(small_disk / "db") in str(e.value)
    store.close()
    # LevelDB writes a table of its log when it opens: on the full disk that is the same error again, not
    # corruption.
    with pytest.raises(StoreWriteError, match="disk is full"):
        LevelDBStore(small_disk / "db", readonly=True)


def test_leveldb_on_a_read_only_disk_says_read_only(small_disk):
    pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore

    with LevelDBStore(small_disk / "db", create=True) as store:
        tree = MutableTree(store)
        tree.set(b"a", b"b")
        tree.save_version()
    r = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only: %s" % r.stderr.strip())
    for readonly in (False, True):
        with pytest.raises(StoreReadOnlyError, match="read-only file system") as e:
            LevelDBStore(small_disk / "db", readonly=readonly)
        assert "locked" not in str(e.value)


def test_lmdb_on_a_read_only_disk_says_read_only(small_disk):
    with LMDBStore(str(small_disk / "s")) as s:
        s.put(bytes(32), b"x")
    r = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only: %s" % r.stderr.strip())
    with pytest.raises(StoreReadOnlyError, match="read-only .*open it with readonly=True"):
        LMDBStore(str(small_disk / "s"))
    with LMDBStore(str(small_disk / "s"), readonly=True) as ro:
        assert ro.get(bytes(32)) == b"x"


# ------------------------------------------------------------------------------------------- review findings

def test_a_damaged_reference_in_an_older_version_stops_the_prune():
    """Version 2's root names (1, 50), which does not exist; version 3 shares version 1's nodes correctly. The
    prune must stop before writing anything, not take every node of version 1 for an orphan."""
    from mpt.errors import MissingNodeError
    from mpt.iavl import decode_node

    db = MemoryDB()
    tree = MutableTree(db, fast_storage=False)
    for i in range(16):
        tree.set(b"k%02d" % i, b"v%d" % i)
    tree.save_version()
    tree.set(b"k00", b"x")
    tree.save_version()
    tree.set(b"k01", b"y")
    tree.save_version()
    key2 = b"s" + (2).to_bytes(8, "big") + (1).to_bytes(4, "big")
    root2 = db.get(key2)
    right = decode_node(root2, "v1", node_key=key2[1:]).right_node_key
    assert root2[-1] == 2 * int.from_bytes(right[8:], "big")       # the right child's nonce, one zigzag byte
    db.put(key2, root2[:-1] + bytes([100]))
    before = dict(db.iterate())
    with pytest.raises(MissingNodeError):
        MutableTree(db, fast_storage=False).delete_versions_to(1)
    assert dict(db.iterate()) == before
    latest = MutableTree(db, fast_storage=False)
    assert latest.load() == 3 and len(list(latest.items())) == 16


def test_a_damaged_orphan_leaf_stops_the_prune():
    """A leaf of the pruned version whose size field is not 1: CorruptTreeError, nothing deleted."""
    from mpt.errors import CorruptTreeError

    db = MemoryDB()
    tree = MutableTree(db, fast_storage=False)
    tree.set(b"a", b"1")
    tree.set(b"b", b"2")
    tree.save_version()
    tree.set(b"a", b"3")
    tree.save_version()
    leaf = [k for k, v in db.iterate(b"s", b"t") if v[:2] == b"\x00\x02"][0]      # height 0, size 1
    db.put(leaf, b"\x00\x12" + db.get(leaf)[2:])                                  # size 9
    before = dict(db.iterate())
    with pytest.raises(CorruptTreeError):
        MutableTree(db, fast_storage=False).delete_versions_to(1)
    assert dict(db.iterate()) == before


MARKER_OF = textwrap.dedent("""
    import os, sys
    from mpt.db import LMDBStore, LevelDBStore
    from mpt.iavl import MutableTree
    from mpt.iavl.nodedb import IMPORT_MARKER_KEY
    kind, path = sys.argv[1], sys.argv[2]
    store = LMDBStore(path, hash_keys=False) if kind == "lmdb" else LevelDBStore(path)
    tree = MutableTree(store)
    print(store.get(IMPORT_MARKER_KEY) is None, sum(1 for _ in store.iterate()), tree.load())
""")


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_an_abandoned_marker_of_a_live_process_is_removed_where_no_import_can_run(tmp_path, kind):
    """An import whose clean-up failed leaves its marker with the pid of a process that lives on. LevelDB is
    opened by one process at a time, so another process's marker is always an abandoned import; on LMDB the
    process id and its start time must both match a live process (a reused pid does not)."""
    if kind == "leveldb":
        pytest.importorskip("plyvel")
    path = tmp_path / ("store." + kind)
    store = _open(kind, path)
    tree = MutableTree(store)
    with store.write_batch() as batch:
        token = tree.ndb.start_import(batch, "v1", 7)
    tree.ndb.finish_import(token)
    with store.write_batch() as batch:
        batch.put(b"s" + (7).to_bytes(8, "big") + (2).to_bytes(4, "big"), b"\x00\x02\x01k\x01v")   # a leaf
    marker = store.get(IMPORT_MARKER_KEY)
    if kind == "lmdb":
        parts = marker.split(b" ")
        parts[3] = b"1"                       # this pid, but another start time: another process
        with store.write_batch() as batch:
            batch.put(IMPORT_MARKER_KEY, b" ".join(parts))
    store.close()
    r = subprocess.run([sys.executable, "-c", MARKER_OF, kind, str(path)], capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "0", "0"]


def test_a_load_while_this_process_imports_sees_an_empty_store(monkeypatch):
    db = MemoryDB()
    seen = []

    def look():
        other = MutableTree(db)
        seen.append(other.load())
        seen.append(other)

    root = _import_with_a_look_during_it(db, monkeypatch, look)
    assert seen[0] == 0
    assert seen[1].load() == 7 and seen[1].hash() == root         # the same tree sees the import once it is done


def test_leveldb_iteration_over_a_damaged_table_is_a_store_error(tmp_path):
    pytest.importorskip("plyvel")
    from mpt.db import LevelDBStore

    path = _go_copy(tmp_path)
    with LevelDBStore(path):
        pass
    for table in path.glob("*.ldb"):
        data = bytearray(table.read_bytes())
        data[-48:] = bytes(48)                  # the footer: "not an sstable (bad magic number)"
        table.write_bytes(bytes(data))
    with LevelDBStore(path) as store:
        with pytest.raises(StoreCorruptError, match="is damaged"):
            list(store.iterate())
        with pytest.raises(StoreCorruptError):
            len(store)
        with pytest.raises(StoreCorruptError):
            MutableTree(store).load()


LMDB_NO_ADDRESS_SPACE = textwrap.dedent("""
    import os, resource, sys
    from mpt.db import LMDBStore
    from mpt.errors import StoreWriteError
    s = LMDBStore(sys.argv[1], map_size=1 << 20)
    used = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + (48 << 20),) * 2)
    try:
        for i in range(100000):
            with s.write_batch() as b:
                for j in range(100):
                    b.put(os.urandom(32), os.urandom(100))
    except StoreWriteError as e:
        print("StoreWriteError")
""")


def test_lmdb_that_cannot_grow_its_map_is_a_store_write_error(tmp_path):
    r = subprocess.run([sys.executable, "-c", LMDB_NO_ADDRESS_SPACE, str(tmp_path / "s")], capture_output=True,
                       text=True, env=_env(), timeout=300)
    assert r.stdout.strip() == "StoreWriteError", r.stderr[-2000:]


def test_a_leveldb_folder_with_stray_lmdb_files_stays_a_leveldb(tmp_path):
    pytest.importorskip("plyvel")
    path = _go_copy(tmp_path)
    (path / "data.mdb").write_bytes(b"")
    (path / "lock.mdb").write_bytes(b"")
    with pytest.raises(StoreError, match="a LevelDB store: use LevelDBStore.*delete the data.mdb"):
        LMDBStore(str(path))
