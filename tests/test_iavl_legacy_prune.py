"""Pruning a store that still holds legacy (iavl v0.x) versions, as Go iavl v1 does it (nodedb.go DeleteVersionsTo,
deleteLegacyVersions, deleteVersion), on MemoryDB, LMDB and LevelDB.

The legacy stores are written as iavl v0.19/v0.20 wrote them: ``n`` + hash nodes and ``r`` + version roots
(``MutableTree(format="legacy")``), plus the ``o`` + toVersion + fromVersion + hash orphan records (value: the
hash) that v0.20's SaveVersion adds for every node of the previous version the new one no longer holds
(toVersion: the previous version), and that its DeleteVersion deletes or shortens. The expected key sets are
derived from what a store holds before pruning (which nodes each version reaches), not from the pruning code.
"""
import pytest

from mpt.db import MemoryDB, prefix_range
from mpt.errors import VersionError
from mpt.iavl import MutableTree, decode_node, node_key
from mpt.iavl.nodedb import root_key

from conftest import IAVL_STORE_KINDS, new_iavl_store

ONE = b"\x00\x00\x00\x01"


def be(n):
    return n.to_bytes(8, "big")


@pytest.fixture(params=IAVL_STORE_KINDS)
def store(request, tmp_path):
    s = new_iavl_store(request.param, tmp_path)
    yield s
    s.close()


# ---------------------------------------------------------------------------------------------- a v0.20 writer

def _root_ref(snapshot, version):
    """How version's root is named (a 12-byte node key, a 32-byte legacy hash, b"" for an empty tree)."""
    rec = snapshot.get(root_key(version))
    if rec is None:
        return snapshot[b"r" + be(version)]
    if rec == b"":
        return b""
    if rec[:1] == b"s" and len(rec) == 13:
        return rec[1:]
    return node_key(version, 1)


def _reach(snapshot, version):
    """{database key: node} of every node version's tree holds."""
    out = {}
    ref = _root_ref(snapshot, version)
    stack = [ref] if ref else []
    while stack:
        ref = stack.pop()
        if len(ref) == 32:
            key = b"n" + ref
            node = decode_node(snapshot[key], "legacy")
            kids = (node.left_hash, node.right_hash)
        else:
            key = b"s" + ref
            if key not in snapshot and ref[8:] == ONE:
                key = b"s" + ref[:8] + bytes(4)         # a root moved to (version, 0)
            node = decode_node(snapshot[key], "v1", node_key=key[1:])
            kids = (node.left_node_key, node.right_node_key)
        out[key] = node
        if not node.is_leaf:
            stack += kids
    return out


def _legacy_hashes(db, version):
    """{hash: node version} of the legacy tree of version."""
    return {k[1:]: n.version for k, n in _reach(dict(db.iterate()), version).items()}


def save_legacy(tree):
    """tree.save_version() on a format="legacy" tree, with v0.20's orphan records: every node of the previous
    version the new one no longer holds, keyed o + toVersion (the previous version) + fromVersion + hash."""
    db, prev = tree.db, tree.version
    before = _legacy_hashes(db, prev) if prev else {}
    result = tree.save_version()
    after = _legacy_hashes(db, result[1])
    for h, from_version in before.items():
        if h not in after:
            db.put(b"o" + be(prev) + be(from_version) + h, h)
    return result


def legacy_delete_version(db, version):
    """v0.20's DeleteVersion: the orphans whose lifetime ends at version are deleted with their node when the
    previous version is older than the node, else moved to end at the previous version; the root goes."""
    versions = sorted(int.from_bytes(k[1:], "big") for k, _ in db.iterate(*prefix_range(b"r")))
    assert version in versions and version != versions[-1]
    predecessor = max([v for v in versions if v < version], default=0)
    for k, h in list(db.iterate(*prefix_range(b"o"))):
        to, frm = int.from_bytes(k[1:9], "big"), int.from_bytes(k[9:17], "big")
        if to != version:
            continue
        db.delete(k)
        if predecessor < frm or frm == to:
            db.delete(b"n" + h)
        else:
            db.put(b"o" + be(predecessor) + be(frm) + h, h)
    db.delete(b"r" + be(version))


def _edit(tree, version):
    """Some sets and removes that depend on the version (removes of absent keys do nothing)."""
    for i in range(version % 3, 48, 3 + version % 2):
        tree.set(b"k%03d" % i, b"v%d.%d" % (version, i))
    for i in range(version % 5, 48, 7):
        tree.remove(b"k%03d" % i)


def build(db, legacy_versions=4, v1_versions=4, legacy_pruned=1):
    """Legacy versions 1..legacy_versions (the first legacy_pruned of them pruned by v0.20), then v1 versions.
    Returns {version: (root hash, items)} of the versions still stored."""
    tree = MutableTree(db, format="legacy")
    saved = {}
    for v in range(1, legacy_versions + 1):
        _edit(tree, v)
        h, _ = save_legacy(tree)
        saved[v] = (h, list(tree.items()))
    for v in range(1, legacy_pruned + 1):
        legacy_delete_version(db, v)
        del saved[v]
    tree = MutableTree(db)
    assert tree.load() == legacy_versions
    for v in range(legacy_versions + 1, legacy_versions + v1_versions + 1):
        _edit(tree, v)
        h, _ = tree.save_version()
        saved[v] = (h, list(tree.items()))
    return saved


def _check_versions(db, saved):
    for v, (h, items) in saved.items():
        t = MutableTree(db, fast_storage=False)
        t.load_version(v)
        assert t.hash() == h and list(t.items()) == items


# ---------------------------------------------------------------------------------------------- tests

def test_the_writer_writes_v020_orphan_records():
    db = MemoryDB()
    tree = MutableTree(db, format="legacy")
    for i in range(8):
        tree.set(b"k%d" % i, b"v")
    save_legacy(tree)
    v1_nodes = _legacy_hashes(db, 1)
    tree.set(b"k7", b"w")                   # the path to k7 changes: 4 nodes (leaf, 3 ancestors) are orphaned
    save_legacy(tree)
    orphans = sorted(k for k, _ in db.iterate(*prefix_range(b"o")))
    assert len(orphans) == 4
    for k in orphans:
        assert len(k) == 49 and k[1:9] == be(1) and k[9:17] == be(1) and db.get(k) == k[17:]
        assert k[17:] in v1_nodes and k[17:] not in _legacy_hashes(db, 2)
    tree.set(b"k0", b"w")
    save_legacy(tree)
    legacy_delete_version(db, 2)            # orphans ending at 2 created before 1 move to end at 1
    assert db.get(b"r" + be(2)) is None and db.get(b"r" + be(1)) is not None


@pytest.mark.parametrize("to_version", [4, 5, 6])
def test_prune_through_the_legacy_versions(store, to_version):
    saved = build(store)                    # legacy 2..4 (1 pruned by v0.20), v1 5..8
    assert MutableTree(store).available_versions() == [2, 3, 4, 5, 6, 7, 8]
    before = dict(store.iterate())
    assert any(k[:1] == b"o" for k in before) and any(k[:1] == b"n" for k in before)
    keep = {}
    for v in range(to_version + 1, 9):
        keep.update(_reach(before, v))
    roots = {root_key(v) for v in range(to_version + 1, 9)}
    deleted = MutableTree(store).delete_versions_to(to_version)
    after = dict(store.iterate())
    # Go's result: no legacy roots or orphan records left; the nodes left are those the versions after
    # to_version hold, legacy ones included, under their original keys; fast nodes and metadata untouched.
    assert not [k for k in after if k[:1] in (b"r", b"o")]
    assert {k for k in after if k[:1] in (b"n", b"s")} == set(keep) | roots
    assert {k: v for k, v in after.items() if k[:1] in (b"f", b"m")} == {
        k: v for k, v in before.items() if k[:1] in (b"f", b"m")}
    assert all(after[k] == before[k] for k in after)
    assert deleted == len(before) - len(after)
    assert MutableTree(store).available_versions() == list(range(to_version + 1, 9))
    _check_versions(store, {v: saved[v] for v in range(to_version + 1, 9)})
    # Pruning on: the v1 rules alone from here.
    MutableTree(store).delete_versions_to(7)
    assert MutableTree(store).available_versions() == [8]
    assert {k for k, _ in store.iterate() if k[:1] in (b"n", b"s")} == set(_reach(dict(store.iterate()), 8)) | {
        root_key(8)}
    _check_versions(store, {8: saved[8]})


def test_below_the_latest_legacy_version_nothing_happens(store):
    build(store)
    before = list(store.iterate())
    for v in (1, 2, 3):
        assert MutableTree(store).delete_versions_to(v) == 0        # Go: legacyLatestVersion > toVersion
    assert list(store.iterate()) == before
    with pytest.raises(VersionError, match="latest version 8 is less than or equal to toVersion 8"):
        MutableTree(store).delete_versions_to(8)
    assert list(store.iterate()) == before


def test_a_store_with_legacy_versions_only(store):
    tree = MutableTree(store, format="legacy")
    for v in (1, 2, 3):
        _edit(tree, v)
        save_legacy(tree)
    before = list(store.iterate())
    assert MutableTree(store).delete_versions_to(2) == 0
    with pytest.raises(VersionError, match="latest version 3 is less than or equal to toVersion 3"):
        MutableTree(store).delete_versions_to(3)
    assert list(store.iterate()) == before


@pytest.mark.parametrize("reopened", [False, True])
def test_versions_saved_after_a_prune_are_legacy_versions_too(store, reopened):
    """The same tree keeps saving in the legacy format after a prune (or after load() looked up the latest
    legacy version): the next prune below those versions deletes nothing, and never the latest version."""
    tree = MutableTree(store, format="legacy")
    for i in range(2):
        tree.set(b"k%d" % i, b"v")
        tree.save_version()
    if reopened:
        tree = MutableTree(store, format="legacy")
        assert tree.load() == 2
    else:
        assert tree.delete_versions_to(1) == 0
    for i in range(2, 5):
        tree.set(b"k%d" % i, b"v")
        tree.save_version()
    before = list(store.iterate())
    assert tree.delete_versions_to(3) == 0
    assert list(store.iterate()) == before and tree.available_versions() == [1, 2, 3, 4, 5]
    fresh = MutableTree(store, format="legacy")
    assert fresh.load() == 5 and len(fresh) == 5


def test_a_legacy_root_reused_by_the_first_v1_version(store):
    """Go's SaveVersion: a v1 version that changed nothing on a legacy root names it (version, 0) and writes the
    node there in the v1 format; pruning the legacy versions leaves both records (Go does not look at the
    hash key of a root a v1 version still uses), pruning that v1 version deletes both."""
    legacy = MutableTree(store, format="legacy")
    for v in (1, 2):
        _edit(legacy, v)
        save_legacy(legacy)
    h2 = legacy.hash()
    legacy_root = store.get(b"r" + be(2))
    root_version = decode_node(store.get(b"n" + legacy_root), "legacy").version
    tree = MutableTree(store)
    assert tree.load() == 2
    assert tree.save_version() == (h2, 3)
    moved = b"s" + node_key(root_version, 0)
    assert store.get(root_key(3)) == moved
    node = decode_node(store.get(moved), "v1", node_key=moved[1:])
    assert node.hash == legacy_root and len(node.left_node_key) == 32 == len(node.right_node_key)
    assert tree.save_version() == (h2, 4)                   # a reference again, nothing rewritten
    assert store.get(root_key(4)) == moved
    t = MutableTree(store)
    assert t.load_version(3) == 3 and t.hash() == h2 and list(t.items()) == list(legacy.items())
    tree.set(b"k001", b"changed")
    h5, _ = tree.save_version()
    before = dict(store.iterate())
    MutableTree(store).delete_versions_to(2)
    after = dict(store.iterate())
    assert not [k for k in after if k[:1] in (b"r", b"o")]
    keep = {}
    for v in (3, 4, 5):
        keep.update(_reach(before, v))
    assert b"n" + legacy_root not in keep and moved in keep
    assert {k for k in after if k[:1] in (b"n", b"s")} == set(keep) | {root_key(v) for v in (3, 4, 5)} | {
        b"n" + legacy_root}
    MutableTree(store).delete_versions_to(4)
    after = dict(store.iterate())
    assert b"n" + legacy_root not in after and moved not in after
    assert {k for k in after if k[:1] in (b"n", b"s")} == set(_reach(before, 5)) | {root_key(5)}
    t = MutableTree(store)
    assert t.load() == 5 and t.hash() == h5


def test_orphan_records_are_read_by_go_rule(store):
    """deleteLegacyVersions deletes every o record; the node it names goes when fromVersion <= legacy latest
    and toVersion < legacy latest, or fromVersion > legacy latest; otherwise the node stays."""
    build(store, legacy_versions=3, v1_versions=2, legacy_pruned=0)
    before = dict(store.iterate())
    live = next(k for k in _reach(before, 4) if k[:1] == b"n")     # a legacy node version 4 still holds
    fake_old, fake_new = b"\x01" * 32, b"\x02" * 32
    records = {
        b"o" + be(3) + be(1) + live[1:]: live[1:],              # toVersion = legacy latest: the node stays
        b"o" + be(1) + be(1) + fake_old: fake_old,              # ended before the legacy latest: goes
        b"o" + be(9) + be(4) + fake_new: fake_new,              # fromVersion > legacy latest: goes
    }
    for k, v in records.items():
        store.put(k, v)
    store.put(b"n" + fake_old, before[live])
    store.put(b"n" + fake_new, before[live])
    MutableTree(store).delete_versions_to(3)
    after = dict(store.iterate())
    assert not [k for k in after if k[:1] in (b"o", b"r")]
    assert live in after and b"n" + fake_old not in after and b"n" + fake_new not in after
    keep = {}
    for v in (4, 5):
        keep.update(_reach(before, v))
    assert {k for k in after if k[:1] in (b"n", b"s")} == set(keep) | {root_key(4), root_key(5)}
