"""Commit into a MemoryDB: NodeSets, reopening, incremental commits, deleted paths, leaves."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpt import EMPTY_ROOT, SecureTrie, ShortNode, Trie, ValueNode, decode_node, keccak256
from mpt.ethereum._reference import node_encodings, trie_root
from mpt.db import MemoryDB


def filled(n, db=None, seed=1):
    rng = random.Random(seed)
    t = Trie(db)
    model = {}
    for _ in range(n):
        k, v = rng.randbytes(32), rng.randbytes(rng.choice([1, 10, 40, 100]))
        t[k] = v
        model[k] = v
    return t, model


def test_commit_stores_exactly_the_reference_nodes():
    t, model = filled(500)
    root = t.commit()
    assert root == trie_root(model)
    expected = {(e.path, e.encoding) for e in node_encodings(model) if e.hashed}
    got = {(path, blob) for path, (_, blob) in t.last_commit.nodes.items()}
    assert got == expected
    for path, (h, blob) in t.last_commit.nodes.items():
        assert keccak256(blob) == h and t.database.get(h) == blob
    assert len(t.database) == len(expected)


def test_large_commit_stores_exactly_the_reference_nodes():
    # Past its first 16,384 nodes a commit prefetches what it walks next (committer.pyx PREFETCH_FROM): the nodes
    # written after that point are the reference nodes all the same.
    t, model = filled(20000, seed=3)
    root = t.commit()
    assert root == trie_root(model)
    expected = {(e.path, e.encoding) for e in node_encodings(model) if e.hashed}
    assert len(expected) > 16384 * 1.2
    got = {(path, blob) for path, (_, blob) in t.last_commit.nodes.items()}
    assert got == expected
    assert len(t.database) == len(expected)


def test_reopen_and_read_everything():
    db = MemoryDB()
    t, model = filled(300, db)
    root = t.commit()
    again = Trie(db, root)
    for k, v in model.items():
        assert again[k] == v
    assert again.hash() == root
    assert dict(again.items()) == model


def test_committed_trie_stays_usable_and_commits_incrementally():
    db = MemoryDB()
    t, model = filled(1000, db)
    t.commit()
    before = len(db)
    key = sorted(model)[500]
    t[key] = b"changed value that is long enough to be hashed"
    model[key] = t[key]
    root = t.commit()
    written = t.last_commit.nodes
    # Only the nodes on the path to the changed leaf are written again.
    assert 2 <= len(written) <= 6
    key_nibbles = bytes(b for byte in key for b in (byte >> 4, byte & 15))
    assert all(key_nibbles.startswith(path) for path in written)
    assert len(db) == before + len(written)
    assert root == trie_root(model)
    assert t.commit() == root and len(t.last_commit) == 0  # nothing changed: nothing written


def test_deleted_paths():
    db = MemoryDB()
    t = Trie(db)
    t[b"\x10" * 4] = b"a" * 40
    t[b"\x20" * 4] = b"b" * 40
    t.commit()
    assert set(t.last_commit.nodes) == {b"", b"\x01", b"\x02"}
    del t[b"\x20" * 4]      # the branch collapses: the root becomes the remaining leaf
    t.commit()
    assert set(t.last_commit.nodes) == {b""}
    assert t.last_commit.deleted == {b"\x01", b"\x02"}
    del t[b"\x10" * 4]
    assert t.commit() == EMPTY_ROOT
    assert t.last_commit.deleted == {b""}


def test_reopened_trie_tracks_deletions_in_resolved_nodes():
    db = MemoryDB()
    t = Trie(db)
    for i in range(20):
        t[bytes([i * 8]) * 8] = b"v" * 50
    root = t.commit()
    t2 = Trie(db, root)
    del t2[bytes([0]) * 8]
    t2.commit()
    # Keys 00.. and 08.. shared a branch at path 0; it collapsed into the remaining leaf, which now sits at
    # path 0 itself, so the two old leaf positions hold nothing any more.
    assert t2.last_commit.deleted == {b"\x00\x00", b"\x00\x08"}
    assert b"\x00" in t2.last_commit.nodes


def test_collect_leaves():
    t, model = filled(50)
    root, leaves = t.commit(collect_leaves=True)
    stored_leaves = {}
    for h, blob in t.last_commit.nodes.values():
        node = decode_node(blob)
        if isinstance(node, ShortNode) and isinstance(node.val, ValueNode):
            stored_leaves[h] = node.val.value
    assert len(stored_leaves) > 40
    assert sorted(leaves) == sorted((v, h) for h, v in stored_leaves.items())
    assert {v for v, _ in leaves} <= set(model.values())


def test_copies_share_the_database():
    t, model = filled(100)
    c = t.copy()
    t.commit()
    c[b"\x01" * 32] = b"new" * 20
    root = c.commit()
    reopened = Trie(c.database, root)
    for k, v in model.items():
        assert reopened[k] == v


def test_secure_trie_commit_and_reopen():
    db = MemoryDB()
    s = SecureTrie(db)
    s.update_account(b"\xaa" * 20, 5, 10**18)
    root = s.commit()
    again = SecureTrie(db, root)
    assert again.get_account(b"\xaa" * 20)[:2] == (5, 10**18)


def test_plain_dict_as_database():
    db = {}
    t, model = filled(100, db)
    root = t.commit()
    assert Trie(db, root)[next(iter(model))] == model[next(iter(model))]


def test_short_root_is_stored():
    t = Trie()
    t[b"a"] = b"b"
    root = t.commit()
    assert t.database.get(root) == bytes.fromhex("c482206162")
    assert Trie(t.database, root)[b"a"] == b"b"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=4), st.binary(max_size=40)), min_size=1, max_size=80),
       st.integers(min_value=1, max_value=5))
def test_random_commit_reopen_cycles(ops, every):
    db = MemoryDB()
    t = Trie(db)
    model = {}
    for i, (k, v) in enumerate(ops):
        t[k] = v
        if v:
            model[k] = v
        else:
            model.pop(k, None)
        if i % every == 0:
            root = t.commit()
            t = Trie(db, root)
            assert dict(t.items()) == model
    assert t.hash() == trie_root(model)


def test_nodeset_nodes_built_on_first_access_match_the_database():
    t, model = filled(200)
    root = t.commit()
    ns = t.last_commit
    count, size = len(ns), ns.size          # answered from the collected arrays, before the dict exists
    nodes = ns.nodes
    assert nodes is ns.nodes                # built once
    assert count == len(nodes) == len(t.database) and size == sum(len(b) for _, b in nodes.values())
    assert nodes[b""] == (root, t.database.get(root))
    for path, (h, blob) in nodes.items():
        assert keccak256(blob) == h and t.database.get(h) == blob
    assert repr(ns) == "<NodeSet root=%s nodes=%d deleted=0>" % (root.hex(), count)


def test_many_deleted_paths():
    # More replaced paths than the scan handles: they are checked against the NodeSet's dict.
    t, model = filled(300)
    t.commit()
    keys = sorted(model)
    for k in keys[:250]:
        del t[k]
        del model[k]
    root = t.commit()
    assert root == trie_root(model)
    ns = t.last_commit
    stored_now = {e.path for e in node_encodings(model) if e.hashed}
    assert set(ns.nodes) <= stored_now
    assert len(ns.deleted) > 16 and not (ns.deleted & set(ns.nodes))


def test_nodeset_built_directly():
    from mpt.ethereum.committer import NodeSet

    ns = NodeSet(b"\x01" * 32, {b"": (b"\x01" * 32, b"abc")}, {b"\x02"}, None)
    assert len(ns) == 1 and ns.size == 3 and ns.nodes == {b"": (b"\x01" * 32, b"abc")} and ns.deleted == {b"\x02"}
    assert repr(ns) == "<NodeSet root=%s nodes=1 deleted=1>" % ("01" * 32)
    assert repr(NodeSet.__new__(NodeSet)) == "<NodeSet root=None nodes=0 deleted=0>"   # no crash before __init__


@pytest.mark.parametrize("n", [1, 5, 12, 100, 3000])
def test_first_commit_into_a_fresh_memorydb(n):
    # The first commit into an empty MemoryDB fills a dict presized for its nodes (swapped in when only the
    # database holds its dict); a dict the caller passed in and still holds is filled in place.
    t, model = filled(n)
    root = t.commit()
    expected = {keccak256(e.encoding): e.encoding for e in node_encodings(model) if e.hashed}
    if root not in expected:
        expected[root] = next(e.encoding for e in node_encodings(model) if e.path == b"")
    assert dict(t.database.items()) == expected
    mine = {}
    db = MemoryDB(mine)
    t2, _ = filled(n, db)
    assert t2.commit() == root
    assert db.records is mine and mine == expected
    # A second commit adds to what is there.
    t[b"\x01" * 32] = b"new"
    root2 = t.commit()
    assert root2 == trie_root({**model, b"\x01" * 32: b"new"})
    assert t.database.get(root2) is not None and all(t.database.get(h) == b for h, b in expected.items())
