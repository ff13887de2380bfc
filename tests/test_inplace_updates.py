"""Trie.update changes nodes in place when the trie alone holds them, and copies them otherwise.

Whatever anybody else holds (the root node, a child node, a copy of the trie, an iterator) must look exactly as
before the update; the trie itself must give the reference root.
"""
import random

from mpt import Trie
from mpt.ethereum._reference import trie_root
from mpt.db import MemoryDB

from conftest import trie_of


def snapshot(node):
    """Everything observable about a node subtree: its encoding and cached hashes, recursively."""
    if node is None:
        return None
    children = getattr(node, "children", None)
    if children is not None:
        return ("full", node.hash, tuple(snapshot(c) for c in children))
    val = getattr(node, "val", None)
    if val is not None:
        return ("short", bytes(node.key), node.hash, snapshot(val))
    value = getattr(node, "value", None)
    return ("leaf", value, node.hash)


def random_items(rng, n, key_len=32):
    return {rng.randbytes(key_len): rng.randbytes(rng.choice((1, 40, 80))) for _ in range(n)}


def test_held_root_node_is_not_changed_by_later_updates():
    rng = random.Random(1)
    items = random_items(rng, 500)
    t = trie_of(items)
    t.hash()
    held = t.root_node
    before = snapshot(held)
    for k, v in random_items(rng, 300).items():
        t[k] = v
        items[k] = v
    assert snapshot(held) == before
    assert t.hash() == trie_root(items)


def test_held_inner_node_is_not_changed():
    rng = random.Random(2)
    items = random_items(rng, 400)
    t = trie_of(items)
    # Hold a branch just below the root without hashing first: the trie's nodes are all dirty, the in-place case.
    inner = next(c for c in t.root_node.children if c is not None and getattr(c, "children", None))
    before = snapshot(inner)
    for k, v in random_items(rng, 400).items():
        t[k] = v
        items[k] = v
    assert snapshot(inner) == before
    assert t.hash() == trie_root(items)


def test_copies_stay_independent_under_in_place_updates():
    rng = random.Random(3)
    base = random_items(rng, 300)
    a = trie_of(base)
    b = a.copy()
    items_a, items_b = dict(base), dict(base)
    for step in range(200):
        k, v = rng.randbytes(32), rng.randbytes(40)
        if step % 2:
            a[k] = v
            items_a[k] = v
        else:
            b[k] = v
            items_b[k] = v
        if step % 50 == 0:
            c = a.copy()
            items_c = dict(items_a)
            c[b"\x00" * 32] = b"c"
            items_c[b"\x00" * 32] = b"c"
            assert c.hash() == trie_root(items_c)
    assert a.hash() == trie_root(items_a)
    assert b.hash() == trie_root(items_b)
    assert trie_of(base).hash() == trie_root(base)


def test_an_iterator_keeps_its_view():
    rng = random.Random(4)
    items = random_items(rng, 200)
    t = trie_of(items)
    it = t.items()
    first = [next(it) for _ in range(10)]
    for k, v in random_items(rng, 200).items():
        t[k] = v
    rest = list(it)
    # The iterator walks the trie as it was when it started.
    assert first + rest == sorted(items.items())


def test_updates_after_hash_and_commit_give_the_right_nodes():
    rng = random.Random(5)
    db = MemoryDB()
    items = random_items(rng, 300)
    t = Trie(db=db)
    for k, v in items.items():
        t[k] = v
    for round_ in range(5):
        t.hash()
        for k, v in random_items(rng, 50).items():
            t[k] = v
            items[k] = v
        # Overwrite some existing keys twice in a row: the second write finds the first one's dirty nodes.
        for k in rng.sample(sorted(items), 20):
            t[k] = b"x"
            t[k] = b"y%d" % round_
            items[k] = b"y%d" % round_
        root = t.commit()
        assert root == trie_root(items)
        reopened = Trie(db=db, root=root)
        assert dict(reopened.items()) == items


def test_identical_update_keeps_hashes_and_changes_nothing():
    rng = random.Random(6)
    items = random_items(rng, 300)
    t = trie_of(items)
    root = t.hash()
    before = snapshot(t.root_node)
    for k, v in list(items.items())[:50]:
        t[k] = v
    assert snapshot(t.root_node) == before
    assert t.hash() == root


def test_nodes_the_trie_alone_holds_are_updated_in_place():
    # The optimisation itself: with nobody else holding it, the root branch stays the same object (a copy would
    # be allocated while the old root is still alive, so it could not reuse the old address).
    rng = random.Random(7)
    t = trie_of(random_items(rng, 100))
    root_id = id(t.root_node)
    for k, v in random_items(rng, 20).items():
        t[k] = v
        assert id(t.root_node) == root_id
    # Once somebody holds the root, the next update copies it.
    held = t.root_node
    t[rng.randbytes(32)] = b"v"
    assert t.root_node is not held
