"""MutableTree.export / import_nodes against Go iavl's export stream of iavl_store_A, round trips, bad streams."""
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpt.db import MemoryDB
from mpt.errors import CorruptTreeError, ExportImportError, MptError, VersionError
from mpt.iavl import EMPTY_ROOT, ExportNode, MutableTree

from conftest import VECTORS, replay_iavl_ops

STORE_A = VECTORS / "cosmos" / "iavl_store_A"
ROOT_V6 = bytes.fromhex("d3dcd9863823a7851f3309fe22c019eb27dab84b3ab61fdd7ac5061be960fd6c")


def _lines(name):
    with open(STORE_A / name) as f:
        return [json.loads(line) for line in f]


OPS = _lines("ops.jsonl")
GO_EXPORT_V6 = _lines("export_v6.jsonl")


def node_of(d):
    return ExportNode(bytes.fromhex(d["key"]), None if d["value"] is None else bytes.fromhex(d["value"]),
                      d["version"], d["height"])


def as_dict(n):
    return {"key": n.key.hex(), "value": None if n.value is None else n.value.hex(), "version": n.version,
            "height": n.height}


def replay(tree, ops=OPS, until=None):
    """Apply Go's logged operations but its pruning (old versions stay for the export tests); {version: root}."""
    return replay_iavl_ops(tree, ops, prune=False, until=until)


@pytest.fixture(scope="module")
def go_tree():
    tree = MutableTree(MemoryDB())
    replay(tree)
    return tree


def test_export_matches_go_exporter(go_tree):
    assert go_tree.version == 6 and go_tree.hash() == ROOT_V6
    exported = [as_dict(n) for n in go_tree.export()]
    assert exported == GO_EXPORT_V6
    assert [as_dict(n) for n in go_tree.export(6)] == GO_EXPORT_V6


def test_export_from_store_matches_and_older_versions_are_trees(go_tree):
    # A tree opened on the store reads every node from the database (no node in memory).
    reopened = MutableTree(go_tree.db)
    reopened.load_version(6)
    assert [as_dict(n) for n in reopened.export()] == GO_EXPORT_V6
    for version in (1, 3, 5):
        nodes = list(reopened.export(version))
        leaves = [n for n in nodes if n.height == 0]
        assert len(nodes) == 2 * len(leaves) - 1
        assert [n.key for n in leaves] == list(_loaded(go_tree.db, version).keys())
        assert max(n.version for n in nodes) <= version


def _loaded(db, version):
    t = MutableTree(db)
    t.load_version(version)
    return t


def test_export_version_errors(go_tree):
    with pytest.raises(VersionError):
        go_tree.export(7)
    with pytest.raises(VersionError):
        go_tree.export(0)
    with pytest.raises(VersionError):
        MutableTree().export()


def test_export_of_an_empty_version_is_empty():
    tree = MutableTree()
    tree.save_version()
    assert list(tree.export()) == []


def test_export_is_a_snapshot_while_the_tree_changes():
    tree = MutableTree()
    for i in range(300):
        tree.set(b"k%03d" % i, b"v%d" % i)
    tree.save_version()
    want = [as_dict(n) for n in tree.export()]
    exporter = tree.export()
    first = [as_dict(next(exporter)) for _ in range(50)]
    for i in range(0, 300, 3):
        tree.remove(b"k%03d" % i)
    for i in range(300, 400):
        tree.set(b"k%03d" % i, b"new")
    tree.save_version()
    rest = [as_dict(n) for n in exporter]
    assert first + rest == want
    assert all(n["version"] == 1 for n in want)


def test_import_go_stream_gives_go_root():
    tree = MutableTree(MemoryDB())
    root = tree.import_nodes((node_of(d) for d in GO_EXPORT_V6), 6)
    assert root == ROOT_V6 and tree.hash() == ROOT_V6
    assert tree.version == 6 and tree.latest_version == 6 and len(tree) == 2691
    assert [as_dict(n) for n in tree.export()] == GO_EXPORT_V6
    reopened = MutableTree(tree.db)
    assert reopened.load() == 6 and reopened.hash() == ROOT_V6


def test_import_node_keys_follow_go_importer():
    """Go's Importer: the n-th node of version v in stream order gets nonce n + 1; the root gets nonce 1."""
    tree = MutableTree(MemoryDB())
    tree.import_nodes([node_of(d) for d in GO_EXPORT_V6], 6)
    seen = {}
    want = set()
    for d in GO_EXPORT_V6[:-1]:
        seen[d["version"]] = seen.get(d["version"], 0) + 1
        want.add(b"s" + d["version"].to_bytes(8, "big") + (seen[d["version"]] + 1).to_bytes(4, "big"))
    want.add(b"s" + (6).to_bytes(8, "big") + (1).to_bytes(4, "big"))
    stored = {k for k in tree.db.records if k[:1] == b"s"}
    assert stored == want


def test_import_then_the_same_later_operations_give_the_same_roots(go_tree):
    # Import version 3 of Go's history, then replay versions 4-6: Go's roots.
    source = _loaded(go_tree.db, 3)
    tree = MutableTree(MemoryDB())
    assert tree.import_nodes(source.export(), 3) == source.hash()
    assert list(tree.items()) == list(source.items())
    assert tree.get_with_index(list(source.keys())[100]) == source.get_with_index(list(source.keys())[100])
    later = OPS[[i for i, op in enumerate(OPS) if op.get("version") == 3 and op["op"] == "save_version"][0] + 1:]
    roots = replay(tree, later)
    assert sorted(roots) == [4, 5, 6] and roots[6] == ROOT_V6
    assert [as_dict(n) for n in tree.export()] == GO_EXPORT_V6


@pytest.mark.parametrize("fmt", ["v1", "legacy"])
def test_round_trip_random_tree(fmt):
    import random

    rng = random.Random(7)
    source = MutableTree()
    keys = []
    for version in range(1, 5):
        for _ in range(400):
            if keys and rng.random() < 0.2:
                source.remove(keys.pop(rng.randrange(len(keys))))
            else:
                k = rng.randbytes(rng.randrange(1, 12))
                source.set(k, rng.randbytes(rng.randrange(0, 20)))
                if k not in keys:
                    keys.append(k)
        source.save_version()
    exported = list(source.export())
    target = MutableTree(format=fmt)
    assert target.import_nodes(iter(exported), 4) == source.hash()
    assert list(target.export()) == exported
    assert list(_loaded(target.db, 4).items()) == list(source.items())
    for tree in (source, target):
        tree.set(b"\x00new", b"x")
        tree.remove(keys[0])
    assert target.save_version() == source.save_version()


def test_legacy_versions_written_into_an_empty_memorydb_are_seen():
    """A NodeDB on an empty MemoryDB knows it holds no legacy version without scanning; a legacy save or a legacy
    import makes one, and the same NodeDB then sees it (as a prune must, to delete the legacy versions first)."""
    source = MutableTree()
    source.set(b"a", b"1")
    source.set(b"b", b"2")
    source.save_version()
    imported = MutableTree(MemoryDB(), format="legacy")
    assert imported.ndb.legacy_latest_version() == -1
    imported.import_nodes(list(source.export()), 3)
    assert imported.ndb.legacy_latest_version() == 3
    assert imported.available_versions() == [3]
    saved = MutableTree(MemoryDB(), format="legacy")
    assert saved.ndb.legacy_latest_version() == -1
    saved.set(b"a", b"1")
    saved.save_version()
    saved.set(b"a", b"2")
    saved.save_version()
    assert saved.ndb.legacy_latest_version() == 2
    assert saved.available_versions() == [1, 2]


def test_import_older_root_refers_from_the_import_version():
    source = MutableTree()
    source.set(b"a", b"1")
    source.set(b"b", b"2")
    source.save_version()
    stream = list(source.export())
    tree = MutableTree()
    assert tree.import_nodes(stream, 5) == source.hash()
    root_key = b"s" + (5).to_bytes(8, "big") + (1).to_bytes(4, "big")
    assert tree.db.get(root_key) == b"s" + (1).to_bytes(8, "big") + (1).to_bytes(4, "big")
    assert tree.version == 5 and tree.get(b"b") == b"2"
    assert tree.save_version() == (source.hash(), 6)


def test_import_empty_stream_and_single_leaf():
    tree = MutableTree()
    assert tree.import_nodes([], 3) == EMPTY_ROOT
    assert tree.version == 3 and len(tree) == 0 and list(tree.export()) == []
    assert tree.db.get(b"s" + (3).to_bytes(8, "big") + (1).to_bytes(4, "big")) == b""
    one = MutableTree()
    one.set(b"k", b"v")
    one.save_version()
    tree = MutableTree()
    assert tree.import_nodes([ExportNode(b"k", b"v", 1, 0)], 1) == one.hash()
    assert tree.get(b"k") == b"v" and list(tree.export()) == [ExportNode(b"k", b"v", 1, 0)]


def test_import_refuses_a_tree_that_is_not_empty():
    tree = MutableTree()
    tree.set(b"k", b"v")
    with pytest.raises(ExportImportError, match="empty"):
        tree.import_nodes([], 1)
    tree.save_version()
    with pytest.raises(ExportImportError, match="version 1"):
        tree.import_nodes([], 2)
    with pytest.raises(VersionError):
        MutableTree().import_nodes([], 0)
    with pytest.raises(TypeError):
        MutableTree().import_nodes([], "1")


def _small_stream():
    source = MutableTree()
    for k in (b"a", b"b", b"c", b"d", b"e"):
        source.set(k, k.upper())
    source.save_version()
    source.set(b"f", b"F")
    source.save_version()
    return list(source.export())


def _replace(stream, i, **changes):
    n = stream[i]
    fields = dict(key=n.key, value=n.value, version=n.version, height=n.height)
    fields.update(changes)
    out = list(stream)
    out[i] = ExportNode(**fields)
    return out


def _bad_streams():
    s = _small_stream()
    leaves = [i for i, n in enumerate(s) if n.height == 0]
    inner = [i for i, n in enumerate(s) if n.height > 0]
    first_leaf, second_leaf = leaves[0], leaves[1]
    return {
        "swapped leaves": ([*s[:first_leaf], s[second_leaf], s[first_leaf], *s[second_leaf + 1:]], "ascend"),
        "duplicate key": (_replace(s, second_leaf, key=s[first_leaf].key), "duplicate"),
        "inner before children": ([s[inner[0]]] + [n for i, n in enumerate(s) if i != inner[0]], "before its two"),
        "leftover nodes": (s + [ExportNode(b"zz", b"1", 1, 0)], "leftover"),
        "missing root": (s[:-1], "leftover"),
        "height too high": (_replace(s, inner[0], height=3), "heights"),
        "height too low": (_replace(s, len(s) - 1, height=s[-1].height - 1), "heights"),
        "version above import": (_replace(s, first_leaf, version=3), "above the import version"),
        "version zero": (_replace(s, first_leaf, version=0), "start at 1"),
        "inner with value": (_replace(s, inner[0], value=b"x"), "with a value"),
        "leaf without value": (_replace(s, first_leaf, value=None), "without a value"),
        "wrong inner key": (_replace(s, len(s) - 1, key=b"zzz"), "smallest key"),
        "parent older than child": (_replace(s, len(s) - 1, version=1), "older than its child"),
        "lone inner node": ([ExportNode(b"a", None, 1, 1)], "before its two"),
    }


@pytest.mark.parametrize("case", sorted(_bad_streams()))
def test_import_refuses_malformed_streams_and_writes_nothing(case):
    stream, message = _bad_streams()[case]
    db = MemoryDB()
    tree = MutableTree(db)
    with pytest.raises(ExportImportError, match=message) as info:
        tree.import_nodes(stream, 2)
    assert isinstance(info.value, (MptError, ValueError))
    assert len(db) == 0 and tree.version == 0 and tree.latest_version == 0
    assert tree.import_nodes(_small_stream(), 2) == _small_tree_hash()


def _small_tree_hash():
    source = MutableTree()
    source.import_nodes(_small_stream(), 2)
    return source.hash()


def test_import_takes_export_nodes_only():
    with pytest.raises(TypeError, match="ExportNode"):
        MutableTree().import_nodes([(b"k", b"v", 1, 0)], 1)


def test_export_node_type():
    n = ExportNode(bytearray(b"k"), b"v", 3, 0)
    assert (n.key, n.value, n.version, n.height) == (b"k", b"v", 3, 0)
    assert n == ExportNode(b"k", b"v", 3, 0) and n != ExportNode(b"k", b"v", 4, 0)
    assert hash(n) == hash(ExportNode(b"k", b"v", 3, 0))
    assert pickle.loads(pickle.dumps(n)) == n
    assert "version=3" in repr(n)
    with pytest.raises(AttributeError):
        n.key = b"x"
    with pytest.raises(TypeError, match="immutable"):
        n.__init__(b"x", b"y", 1, 0)
    assert n == ExportNode(b"k", b"v", 3, 0)
    with pytest.raises(TypeError):
        ExportNode("k", b"v", 1, 0)
    with pytest.raises(TypeError):
        ExportNode(b"k", 1, 1, 0)
    with pytest.raises(TypeError):
        ExportNode(b"k", b"v", 1.0, 0)
    with pytest.raises(ExportImportError):
        ExportNode(b"k", b"v", -1, 0)
    with pytest.raises(ExportImportError):
        ExportNode(b"k", None, 1, 128)
    with pytest.raises(ExportImportError):
        ExportNode(b"k", None, 2**63, 1)


def test_export_refuses_a_corrupt_store_naming_the_node():
    tree = MutableTree()
    for k in (b"a", b"b", b"c"):
        tree.set(k, k)
    tree.save_version()
    db = tree.db
    root_key = b"s" + (1).to_bytes(8, "big") + (1).to_bytes(4, "big")
    from mpt.iavl import decode_node

    root = decode_node(db.get(root_key), "v1", node_key=root_key[1:])
    # Point the root's right child at the root itself.
    from mpt.iavl import InnerNode

    looped = InnerNode(root.key, root.height, root.size, 1, hash=root.hash, left_node_key=root.left_node_key,
                       right_node_key=root_key[1:], nonce=1)
    db.put(root_key, looped.to_bytes("v1"))
    reopened = MutableTree(db)
    reopened.load_version(1)
    with pytest.raises(CorruptTreeError, match="s000000000000000100000001"):
        list(reopened.export())


def test_import_leaves_fast_nodes_as_go_load_version_does():
    """Go's Importer.Commit ends with LoadVersion, which writes a fast node per key at the imported version."""
    from mpt.iavl.nodedb import STORAGE_VERSION_KEY, decode_fast_node

    tree = MutableTree(MemoryDB())
    tree.import_nodes([node_of(d) for d in GO_EXPORT_V6], 6)
    fast = {k[1:]: decode_fast_node(v, k[1:]) for k, v in tree.db.records.items() if k[:1] == b"f"}
    leaves = {bytes.fromhex(d["key"]): bytes.fromhex(d["value"]) for d in GO_EXPORT_V6 if d["height"] == 0}
    assert fast == {k: (v, 6) for k, v in leaves.items()}
    assert tree.db.get(STORAGE_VERSION_KEY) == b"1.1.0-6"
    assert set(tree.db.records) == {k for k in tree.db.records if k[:1] in b"sf"} | {STORAGE_VERSION_KEY}
    key = next(iter(leaves))
    assert tree.get(key) == leaves[key]


def _tree_of(keys, versions):
    tree = MutableTree()
    for i, chunk in enumerate(versions):
        for k in chunk:
            if k in keys and i % 2:
                tree.remove(k)
                keys.discard(k)
            else:
                tree.set(k, k * 2)
                keys.add(k)
        tree.save_version()
    return tree


_small_keys = st.binary(min_size=0, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_small_keys, max_size=30), min_size=1, max_size=4))
def test_round_trip_property(versions):
    """Any tree: import(export) is the same tree, root and stream."""
    tree = _tree_of(set(), versions)
    stream = list(tree.export())
    target = MutableTree()
    assert target.import_nodes(stream, tree.version) == tree.hash()
    assert list(target.export()) == stream
    assert list(target.items()) == list(tree.items())


@settings(max_examples=200, deadline=None)
@given(st.lists(_small_keys, min_size=1, max_size=25), st.data())
def test_a_changed_stream_is_refused_or_imported_as_it_is(keys, data):
    """Change one field of one node, drop, duplicate or move a node: import either refuses the stream with an
    ExportImportError or builds exactly the tree it describes (its export is the changed stream)."""
    stream = list(_tree_of(set(), [keys]).export())
    i = data.draw(st.integers(0, len(stream) - 1))
    n = stream[i]
    change = data.draw(st.sampled_from(["key", "value", "version", "height", "drop", "dup", "move"]))
    if change == "key":
        stream[i] = ExportNode(data.draw(_small_keys), n.value, n.version, n.height)
    elif change == "value":
        stream[i] = ExportNode(n.key, data.draw(st.none() | st.binary(max_size=3)), n.version, n.height)
    elif change == "version":
        stream[i] = ExportNode(n.key, n.value, data.draw(st.integers(0, 3)), n.height)
    elif change == "height":
        stream[i] = ExportNode(n.key, n.value, n.version, data.draw(st.integers(0, 6)))
    elif change == "drop":
        del stream[i]
    elif change == "dup":
        stream.insert(i, n)
    else:
        stream.insert(data.draw(st.integers(0, len(stream) - 1)), stream.pop(i))
    tree = MutableTree()
    try:
        root = tree.import_nodes(stream, 2)
    except ExportImportError:
        assert len(tree.db) == 0 and tree.version == 0
        return
    assert list(tree.export()) == stream and root == tree.hash()
    reopened = MutableTree(tree.db)
    assert reopened.load() == 2 and list(reopened.export()) == stream
    assert [k for k, _ in reopened.items()] == sorted(k for k, _ in reopened.items())


def test_node_keys_with_many_versions():
    """300 versions (the importer's per-version counters grow many times): Go's node keys, Go's root."""
    source = MutableTree()
    for v in range(300):
        source.set(b"%05d" % (v * 7919 % 300), b"v%d" % v)
        source.save_version()
    stream = list(source.export())
    tree = MutableTree()
    assert tree.import_nodes(stream, 300) == source.hash()
    seen, want = {}, set()
    for n in stream[:-1]:
        seen[n.version] = seen.get(n.version, 0) + 1
        want.add(b"s" + n.version.to_bytes(8, "big") + (seen[n.version] + 1).to_bytes(4, "big"))
    want.add(b"s" + stream[-1].version.to_bytes(8, "big") + (1).to_bytes(4, "big"))
    assert {k for k in tree.db.records if k[:1] == b"s"} == want
    assert len({n.version for n in stream}) > 100
