"""Node databases: MemoryDB and LMDBStore, commit / reopen round trips, incremental commits, damaged databases,
map growth, copy_reachable, inspect_trie and `python -m mpt inspect`."""
import json
import os
import pathlib
import random
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import pytest

import mpt
from mpt import EMPTY_ROOT, FullNode, ShortNode, Trie, ValueNode, decode_node, keccak256
from mpt.db import LMDBStore, MemoryDB, NodeDatabase, write_nodes
from mpt.db.lmdb_store import HEAD_KEY
from mpt.ethereum.inspect import copy_reachable, inspect_trie
from mpt.errors import MissingNodeError, NodeDecodeError, StoreClosedError, StoreReadOnlyError

lmdb = pytest.importorskip("lmdb")

# The directory holding the mpt package, for the child processes.
PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)


def run_python(code, *args, timeout=120):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def run_cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "mpt", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def random_model(seed, n, key_sizes=(1, 40), value_sizes=(1, 80)):
    """n random keys of mixed lengths (short ones make branch values and embedded nodes)."""
    rng = random.Random(seed)
    model = {}
    while len(model) < n:
        k = rng.randbytes(rng.randint(*key_sizes))
        model[k] = rng.randbytes(rng.randint(*value_sizes))
    return model


def fill(t, model):
    for k, v in model.items():
        t[k] = v
    return t


def stored_nodes(t):
    """{hash: blob} of the nodes a root reaches, from the trie's own node iterator."""
    return {h: blob for _, h, blob in t.node_iter() if h is not None}


@pytest.fixture
def store(tmp_path):
    s = LMDBStore(tmp_path / "store")
    yield s
    s.close()


# -------------------------------------------------------------------------------------------- batches

def test_memorydb_batch_is_all_or_nothing():
    db = MemoryDB()
    with pytest.raises(RuntimeError):
        with db.write_batch() as b:
            b.put(b"\x01" * 32, b"one")
            b.put(b"\x02" * 32, b"two")
            raise RuntimeError("boom")
    assert len(db) == 0
    with db.write_batch() as b:
        b.put(b"\x01" * 32, b"one")
        b.put(b"\x02" * 32, b"two")
        assert db.get(b"\x01" * 32) is None       # nothing lands before the block ends
    assert db.get(b"\x01" * 32) == b"one" and len(db) == 2
    assert write_nodes(db, [(b"\x03" * 32, b"three")]) == 1
    assert isinstance(db, NodeDatabase)


def test_lmdb_batch_is_all_or_nothing(store):
    root = b"\xaa" * 32
    with pytest.raises(RuntimeError):
        with store.write_batch(head=root) as b:
            b.put(b"\x01" * 32, b"one")
            raise RuntimeError("boom")
    assert len(store) == 0 and store.head() is None and store.get(b"\x01" * 32) is None
    with store.write_batch(head=root) as b:
        b.put(b"\x01" * 32, b"one")
        b.put(b"\x02" * 32, b"two")
        assert store.get(b"\x01" * 32) is None    # written at exit, in one transaction
    assert store.head() == root
    assert store.get(b"\x02" * 32) == b"two"
    assert len(store) == 2                        # the head record is not a node


def test_lmdb_store_protocol(tmp_path):
    path = tmp_path / "s"
    with LMDBStore(path) as s:
        assert isinstance(s, NodeDatabase)
        assert s.get(b"\x00" * 32) is None and s.get(b"\x00" * 32, b"dflt") == b"dflt"
        s.put(b"\x07" * 32, b"blob")
        v = s.get(b"\x07" * 32)
        assert type(v) is bytes and v == b"blob"
        assert b"\x07" * 32 in s and b"\x08" * 32 not in s
        assert s[b"\x07" * 32] == b"blob"
        with pytest.raises(KeyError):
            s[b"\x08" * 32]
        with pytest.raises(ValueError):
            s.put(HEAD_KEY, b"x")                 # the reserved key cannot be overwritten as a node
        with pytest.raises(ValueError):
            s.set_head(b"short")
        assert s.head() is None
        s.set_head(b"\x07" * 32)
        assert s.head() == b"\x07" * 32
        assert list(s.items()) == [(b"\x07" * 32, b"blob")]
        st = s.stats()
        assert st["nodes"] == 1 and st["head"] == "07" * 32 and st["map_size"] >= 64 << 20
        assert "read-only" not in repr(s)
    assert s.closed
    s.close()                                     # a second close does nothing
    with pytest.raises(StoreClosedError, match="the LMDB store at .* is closed"):
        s.get(b"\x07" * 32)
    with LMDBStore(path, readonly=True) as ro:
        assert ro.get(b"\x07" * 32) == b"blob" and ro.head() == b"\x07" * 32
        with pytest.raises(StoreReadOnlyError, match="open read-only"):
            ro.put(b"\x09" * 32, b"x")
    with pytest.raises(FileNotFoundError):
        LMDBStore(tmp_path / "absent", readonly=True)
    with LMDBStore(tmp_path / "new") as s:                # the store's own directory is created
        assert len(s) == 0 and s.head() is None


def test_lmdb_items_span_chunks(store):
    pairs = {bytes([i, j]) + b"\x00" * 30: bytes([i, j]) for i in range(20) for j in range(10)}
    with store.write_batch(head=b"\x01" * 32) as b:
        for k, v in pairs.items():
            b.put(k, v)
    assert list(store.items(chunk=7)) == sorted(pairs.items())
    assert len(store) == len(pairs)


# -------------------------------------------------------------------------------------------- round trips

def check_trie(t, model, root):
    assert t.hash() == root
    for k, v in model.items():
        assert t[k] == v
    assert list(t.items()) == sorted(model.items())
    assert list(t.keys()) == sorted(model)


@pytest.mark.parametrize("seed", range(4))
def test_roundtrip_memorydb(seed):
    model = random_model(seed, 1500)
    rng = random.Random(seed)
    db = MemoryDB()
    t = fill(Trie(db), model)
    for k in rng.sample(sorted(model), 300):      # deletions exercise collapsing before the commit
        del t[k]
        del model[k]
    root = t.commit()
    assert root == fill(Trie(), model).hash()
    assert set(db.records) == set(stored_nodes(t))
    check_trie(Trie(db, root=root), model, root)
    assert Trie(db, root=root).get(b"absent key") is None


@pytest.mark.parametrize("seed", range(3))
def test_roundtrip_lmdb_and_reopen_in_another_process(tmp_path, seed):
    model = random_model(100 + seed, 3000)
    path = tmp_path / "store"
    with LMDBStore(path) as s:
        t = fill(Trie(s), model)
        root = t.commit()
        s.set_head(root)
        assert len(s) == len(t.last_commit) == len(stored_nodes(t))
    with LMDBStore(path) as s:                    # reopen in this process
        assert s.head() == root
        check_trie(Trie(s, root=s.head()), model, root)
    (tmp_path / "model.json").write_text(json.dumps({k.hex(): v.hex() for k, v in model.items()}))
    r = run_python("""
        import json, sys
        from mpt import Trie
        from mpt.db import LMDBStore
        path, model_file, root_hex = sys.argv[1:]
        model = {bytes.fromhex(k): bytes.fromhex(v) for k, v in json.load(open(model_file)).items()}
        with LMDBStore(path, readonly=True) as s:
            assert s.head().hex() == root_hex, "head"
            t = Trie(s, root=s.head())
            for k, v in model.items():
                assert t[k] == v, k.hex()
            assert list(t.items()) == sorted(model.items()), "order"
            assert t.hash().hex() == root_hex, "root"
        print("ok", len(model))
    """, str(path), str(tmp_path / "model.json"), root.hex())
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", str(len(model))]


def test_every_committed_root_stays_readable(store):
    """Commits never delete: each earlier root still opens with its own content."""
    rng = random.Random(7)
    model = random_model(7, 500)
    t = fill(Trie(store), model)
    history = [(t.commit(), dict(model))]
    for _ in range(5):
        for k in rng.sample(sorted(model), 50):
            del t[k]
            del model[k]
        for k, v in random_model(rng.random(), 80).items():
            t[k] = v
            model[k] = v
        history.append((t.commit(), dict(model)))
    for root, snapshot in history:
        check_trie(Trie(store, root=root), snapshot, root)


def test_iteration_order_after_reopen_from_lmdb(tmp_path):
    model = random_model(11, 2000, key_sizes=(1, 6))    # short keys: many branch values and embedded nodes
    with LMDBStore(tmp_path / "s") as s:
        root = fill(Trie(s), model).commit()
    with LMDBStore(tmp_path / "s", readonly=True) as s:
        t = Trie(s, root=root)
        assert list(t.items()) == sorted(model.items())
        start = sorted(model)[len(model) // 2]
        assert list(t.keys(start)) == sorted(k for k in model if k >= start)
        assert list(t.values()) == [model[k] for k in sorted(model)]


# -------------------------------------------------------------------------------------------- incremental commits

def path_nodes(t, key):
    """Hashes of the stored nodes on the path to key (their hex paths are prefixes of the key's nibbles)."""
    nibbles = b"".join(bytes((b >> 4, b & 15)) for b in key)
    return {p: h for p, h, _ in t.node_iter() if h is not None and nibbles.startswith(p)}


@pytest.mark.parametrize("make_db", ["memory", "lmdb"])
def test_incremental_commit_writes_only_the_changed_path(tmp_path, make_db):
    db = MemoryDB() if make_db == "memory" else LMDBStore(tmp_path / "s")
    rng = random.Random(3)
    model = {rng.randbytes(32): rng.randbytes(40) for _ in range(1000)}
    keys = sorted(model)
    t = fill(Trie(db), model)
    t.commit()
    assert len(db) == len(t.last_commit) == len(stored_nodes(t))

    # An identical value and an empty commit write nothing.
    t[keys[0]] = model[keys[0]]
    t.commit()
    assert len(t.last_commit) == 0 and not t.last_commit.deleted

    # One changed value: exactly the stored nodes on its path, all new.
    before = len(db)
    t[keys[10]] = b"\x01" * 40
    t.commit()
    expect = path_nodes(t, keys[10])
    assert 2 <= len(expect) <= 6
    assert {p: h for p, (h, _) in t.last_commit.nodes.items()} == expect
    assert len(db) - before == len(expect)

    # The same from a trie reopened from the database (its nodes come in clean).
    t2 = Trie(db, root=t.hash())
    t2[keys[20]] = b"\x02" * 40
    before = len(db)
    root2 = t2.commit()
    expect = path_nodes(t2, keys[20])
    assert set(t2.last_commit.nodes) == set(expect)
    assert len(db) - before == len(expect)
    model[keys[10]] = b"\x01" * 40
    model[keys[20]] = b"\x02" * 40
    check_trie(Trie(db, root=root2), model, root2)

    # A deletion: new nodes on the path only, the leaf's old path in `deleted`.
    leaf_path = max(path_nodes(t2, keys[30]), key=len)
    del t2[keys[30]]
    t2.commit()
    assert leaf_path in t2.last_commit.deleted
    assert len(t2.last_commit) <= len(path_nodes(t2, keys[30])) + 1
    if make_db == "lmdb":
        db.close()


class FlakyDB(MemoryDB):
    """A MemoryDB whose batches fail while `fail` is set (a full disk, say)."""

    fail = False

    @contextmanager
    def write_batch(self):
        with super().write_batch() as b:
            yield b
            if self.fail:
                raise OSError("disk full")


def test_commit_retried_after_a_failed_write_writes_everything():
    db = FlakyDB()
    model = random_model(5, 200)
    t = fill(Trie(db), model)
    db.fail = True
    with pytest.raises(OSError):
        t.commit()
    assert len(db) == 0
    db.fail = False
    root = t.commit()
    check_trie(Trie(db, root=root), model, root)


# -------------------------------------------------------------------------------------------- damaged databases

def pick_stored(t, want):
    """(path, hash, blob) of a stored non-root node accepted by want(decoded node)."""
    for p, h, blob in t.node_iter():
        if h is not None and p and want(decode_node(blob)):
            return p, h, blob
    raise AssertionError("no such node")


def keys_below(model, path):
    return [k for k in model if b"".join(bytes((b >> 4, b & 15)) for b in k).startswith(path)]


def test_missing_node_raises_with_hash_and_path():
    model = random_model(21, 800, key_sizes=(20, 32))
    db = MemoryDB()
    t = fill(Trie(db), model)
    root = t.commit()
    path, h, _ = pick_stored(t, lambda n: type(n) is FullNode)
    del db.records[h]
    t2 = Trie(db, root=root)
    under = keys_below(model, path)
    assert under
    with pytest.raises(MissingNodeError) as e:
        t2.get(under[0])
    assert e.value.node_hash == h and e.value.path == path
    assert h.hex() in str(e.value)
    with pytest.raises(MissingNodeError):
        list(Trie(db, root=root).items())
    other = [k for k in model if k not in set(under)]
    assert all(Trie(db, root=root)[k] == model[k] for k in other[:50])
    with pytest.raises(MissingNodeError) as e:
        copy_reachable(db, MemoryDB(), root)
    assert e.value.node_hash == h and e.value.path == path
    with pytest.raises(MissingNodeError):
        inspect_trie(db, root)


def test_missing_root(store):
    ghost = keccak256(b"no such node")
    for db in (MemoryDB(), store):
        with pytest.raises(MissingNodeError) as e:
            Trie(db, root=ghost).get(b"k")
        assert e.value.node_hash == ghost and e.value.path == b""


def test_corrupt_node_is_detected(store):
    model = random_model(31, 600, key_sizes=(20, 32), value_sizes=(40, 60))  # leaves >= 32 bytes: stored
    t = fill(Trie(store), model)
    root = t.commit()
    path, h, blob = pick_stored(t, lambda n: type(n) is ShortNode and type(n.val) is ValueNode)
    (key,) = keys_below(model, path)
    # Bytes that are no node at all.
    store.put(h, b"\xff\x00garbage")
    with pytest.raises(NodeDecodeError):
        Trie(store, root=root).get(key)
    with pytest.raises(NodeDecodeError):
        Trie(store, root=root, verify_reads=False).get(key)
    # A valid leaf with another value (the value is the blob's tail): only the hash check can tell.
    forged = blob[:-1] + bytes((blob[-1] ^ 1,))
    decode_node(forged)
    store.put(h, forged)
    with pytest.raises(NodeDecodeError):
        Trie(store, root=root).get(key)
    assert Trie(store, root=root, verify_reads=False).get(key) == model[key][:-1] + bytes((model[key][-1] ^ 1,))
    with pytest.raises(NodeDecodeError):
        copy_reachable(store, MemoryDB(), root)
    with pytest.raises(NodeDecodeError):
        inspect_trie(store, root)
    assert copy_reachable(store, MemoryDB(), root, verify=False)[0] == len(stored_nodes(t))


# -------------------------------------------------------------------------------------------- map growth

def test_lmdb_map_grows_from_a_tiny_map(tmp_path):
    model = {keccak256(i.to_bytes(4, "big")): i.to_bytes(4, "big") * 10 for i in range(5000)}
    with LMDBStore(tmp_path / "s", map_size=64 << 10) as s:
        t = fill(Trie(s), model)
        root = t.commit()                           # one batch several times larger than the map
        s.set_head(root)
        st = s.stats()
        assert s.resizes >= 3 and st["map_size"] > 64 << 10
        assert st["nodes"] == len(t.last_commit)
        check_trie(Trie(s, root=root), model, root)
    with LMDBStore(tmp_path / "s", map_size=64 << 10) as s:    # reopening with the small size still works
        assert s.head() == root
        check_trie(Trie(s, root=root), model, root)
        more = {keccak256(b"x" + i.to_bytes(4, "big")): b"y" * 40 for i in range(2000)}
        t = fill(Trie(s, root=root), more)
        root2 = t.commit()
        check_trie(Trie(s, root=root2), {**model, **more}, root2)


def test_map_grown_by_another_process(tmp_path, monkeypatch):
    """A reader whose map is smaller than what another process grew the file to adopts the new size."""
    adopted = []
    adopt = LMDBStore._adopt_map_size
    monkeypatch.setattr(LMDBStore, "_adopt_map_size", lambda self: (adopted.append(1), adopt(self)))
    path = tmp_path / "s"
    with LMDBStore(path, map_size=64 << 10) as s:
        first = fill(Trie(s), {b"a": b"1" * 40}).commit()
        s.set_head(first)
        assert s.head() == first
        r = run_python("""
            import sys
            from mpt import Trie, keccak256
            from mpt.db import LMDBStore
            with LMDBStore(sys.argv[1], map_size=64 << 10) as s:
                t = Trie(s, root=s.head())
                for i in range(4000):
                    t[keccak256(i.to_bytes(4, "big"))] = b"v" * 40
                t.commit()
                s.set_head(t.hash())
                print(s.stats()["map_size"])
        """, str(path))
        assert r.returncode == 0, r.stderr
        assert int(r.stdout) > 64 << 10
        root = s.head()
        assert root != first
        assert adopted                              # the first read after the growth hit MapResizedError
        t = Trie(s, root=root)
        assert all(t[keccak256(i.to_bytes(4, "big"))] == b"v" * 40 for i in range(4000))
        assert t[b"a"] == b"1" * 40
        fill(t, {b"b": b"2" * 40})
        s.set_head(t.commit())                      # and it can still write


def test_readers_in_threads_while_the_map_grows(tmp_path):
    """Remapping invalidates open transactions: readers in other threads must never see that."""
    import threading
    with LMDBStore(tmp_path / "s", map_size=64 << 10) as s:
        fixed = {keccak256(b"fixed%d" % i): b"v%d" % i * 20 for i in range(200)}
        with s.write_batch() as b:
            for k, v in fixed.items():
                b.put(k, v)
        stop = threading.Event()
        errors = []
        reads = [0]

        def reader():
            try:
                while not stop.is_set():
                    for k, v in fixed.items():
                        assert s.get(k) == v
                        reads[0] += 1
            except BaseException as e:      # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for th in threads:
            th.start()
        try:
            for j in range(40):
                with s.write_batch() as b:
                    for i in range(300):
                        b.put(keccak256(b"%d/%d" % (j, i)), b"x" * 100)
        finally:
            stop.set()
            for th in threads:
                th.join()
        assert not errors, errors[0]
        assert s.resizes >= 5 and reads[0] > 0
        assert len(s) == 200 + 40 * 300


# -------------------------------------------------------------------------------------------- tools

def test_copy_reachable_copies_exactly_the_reachable_nodes(tmp_path):
    src = MemoryDB()
    model1 = random_model(41, 1500)
    t = fill(Trie(src), model1)
    root1 = t.commit()
    rng = random.Random(41)
    model2 = dict(model1)
    for k in rng.sample(sorted(model1), 100):
        del model2[k]
        del t[k]
    for k, v in random_model(42, 200).items():
        model2[k] = v
        t[k] = v
    root2 = t.commit()
    reach1 = stored_nodes(Trie(src, root=root1))
    reach2 = stored_nodes(Trie(src, root=root2))
    assert len(src) == len(set(reach1) | set(reach2)) > len(reach1)
    shared = set(reach1) & set(reach2)
    assert shared                                      # the two roots share subtrees

    dst = MemoryDB()
    count, size = copy_reachable(src, dst, root1, batch_size=100)
    assert set(dst.records) == set(reach1)
    assert count == len(reach1) and size == sum(len(b) for b in reach1.values())
    assert all(dst.get(h) == b for h, b in reach1.items())
    check_trie(Trie(dst, root=root1), model1, root1)

    with LMDBStore(tmp_path / "dst") as out:
        assert copy_reachable(src, out, root2, batch_size=64) == (len(reach2),
                                                                  sum(len(b) for b in reach2.values()))
        assert set(out.keys()) == set(reach2)
        check_trie(Trie(out, root=root2), model2, root2)
    assert copy_reachable(src, MemoryDB(), EMPTY_ROOT) == (0, 0)
    assert copy_reachable(src, MemoryDB(), root1.hex()) == (count, size)


def tally(t):
    """inspect_trie's counts, recomputed from the trie's own node iterator."""
    out = {"nodes": 0, "bytes": 0, "embedded": 0, "values": 0}
    for kind in ("branch", "extension", "leaf"):
        out[kind] = out["embedded_" + kind] = 0
    for _, h, blob in t.node_iter():
        n = decode_node(blob)
        kind = "branch" if type(n) is FullNode else ("leaf" if type(n.val) is ValueNode else "extension")
        if h is None:
            out["embedded"] += 1
            out["embedded_" + kind] += 1
        else:
            out["nodes"] += 1
            out["bytes"] += len(blob)
            out[kind] += 1
        if kind == "leaf" or (kind == "branch" and n.children[16] is not None):
            out["values"] += 1
    return out


@pytest.mark.parametrize("key_sizes", [(1, 5), (20, 32)])
def test_inspect_trie_counts(key_sizes):
    db = MemoryDB()
    model = random_model(51, 1200, key_sizes=key_sizes)
    t = fill(Trie(db), model)
    root = t.commit()
    calls = []
    stats = inspect_trie(db, root, progress=calls.append)
    expect = tally(Trie(db, root=root))
    assert {k: stats[k] for k in expect} == expect
    assert stats["values"] == len(model)
    assert stats["root"] == root.hex()
    assert sum(calls) == stats["nodes"]
    depths = stats["depths"]
    assert stats["max_depth"] == len(depths) - 1
    assert depths[0]["branch"] + depths[0]["extension"] + depths[0]["leaf"] == 1
    for kind in ("branch", "extension", "leaf"):
        assert sum(row[kind] for row in depths) == stats[kind] + stats["embedded_" + kind]
    assert sum(row["values"] for row in depths) == len(model)
    empty = inspect_trie(db, EMPTY_ROOT)
    assert empty["nodes"] == empty["values"] == 0 and empty["depths"] == []


def test_cli_inspect(tmp_path):
    path = tmp_path / "s"
    model = random_model(61, 700)
    with LMDBStore(path) as s:
        root = fill(Trie(s), model).commit()
        s.set_head(root)
        stats = inspect_trie(s, root)
        other = fill(Trie(s), {b"k": b"v" * 40}).commit()

    r = run_cli("inspect", "--db", str(path), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == json.loads(json.dumps(stats))

    r = run_cli("inspect", "--db", str(path))
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert root.hex() in text
    lines = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.strip()}
    assert lines["values"][0] == str(stats["values"]) == str(len(model))
    assert lines["bytes"][0] == str(stats["bytes"])
    assert lines["branch"][:2] == [str(stats["branch"]), str(stats["embedded_branch"])]
    assert lines["leaf"][:2] == [str(stats["leaf"]), str(stats["embedded_leaf"])]
    assert lines["total"][:2] == [str(stats["nodes"]), str(stats["embedded"])]
    assert "depth" in lines

    r = run_cli("inspect", "--db", str(path), "--root", "0x" + other.hex(), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["values"] == 1

    r = run_cli("--help")
    assert r.returncode == 0 and "inspect" in r.stdout
    r = run_cli("inspect", "--help")
    assert r.returncode == 0 and "--root" in r.stdout and "--db" in r.stdout


@pytest.mark.parametrize("case", ["missing db", "not a store", "bad hex", "short root", "no head",
                                  "no args", "missing node"])
def test_cli_inspect_errors(tmp_path, case):
    path = tmp_path / "s"
    with LMDBStore(path) as s:
        s.put(b"\x01" * 32, b"x")
    (tmp_path / "empty").mkdir()
    args = {
        "missing db": ["inspect", "--db", str(tmp_path / "nope")],
        "not a store": ["inspect", "--db", str(tmp_path / "empty")],
        "bad hex": ["inspect", "--db", str(path), "--root", "zz" * 32],
        "short root": ["inspect", "--db", str(path), "--root", "ab" * 31],
        "no head": ["inspect", "--db", str(path)],
        "no args": ["inspect"],
        "missing node": ["inspect", "--db", str(path), "--root", "cd" * 32],
    }[case]
    r = run_cli(*args)
    assert r.returncode == (1 if case == "missing node" else 2)
    assert "Traceback" not in r.stderr
    assert "error" in r.stderr
    if case == "missing node":
        assert "cd" * 32 in r.stderr


def test_write_nodes_takes_any_iterable_in_one_batch():
    # MemoryDB's batch takes all pairs at once (put_many); a generator must be consumed exactly once.
    db = MemoryDB()
    pairs = [(bytes([i]) * 32, b"blob%d" % i) for i in range(100)]
    assert write_nodes(db, (p for p in pairs), head=pairs[0][0]) == 100
    assert all(db.get(h) == blob for h, blob in pairs)
    assert db.head() == pairs[0][0]
    # A failing iterable writes nothing.
    def failing():
        yield (b"\x77" * 32, b"x")
        raise RuntimeError("source failed")
    with pytest.raises(RuntimeError):
        write_nodes(db, failing())
    assert db.get(b"\x77" * 32) is None


def test_memorydb_as_an_extension_type_behaves_as_the_python_class_did():
    # mpt.db.memory is compiled: its functions take what the Python module took, and a MemoryDB takes
    # attributes, weak references, pickling and subclassing as any Python object.
    import pickle
    import weakref

    from mpt.db.memory import prefix_range

    assert prefix_range(bytearray(b"ab")) == prefix_range(memoryview(b"ab")) == (b"ab", b"ac")
    assert prefix_range(b"a\xff") == (b"a\xff", b"b") and prefix_range(b"\xff\xff") == (b"\xff\xff", None)
    db = MemoryDB()
    db.put(b"k", b"v")
    db.note = "mine"
    assert weakref.ref(db)() is db
    copy = pickle.loads(pickle.dumps(db))
    assert (copy.get(b"k"), copy.note, type(copy)) == (b"v", "mine", MemoryDB)

    class Logged(MemoryDB):
        def put(self, key, value):
            self.last = key
            super().put(key, value)

    logged = Logged()
    t = Trie(logged)
    t[b"\x01" * 32] = b"x"
    t.commit()                  # a subclass takes the commit through its write batch, not MemoryDB's own path
    assert Trie(logged, root=t.hash())[b"\x01" * 32] == b"x"
