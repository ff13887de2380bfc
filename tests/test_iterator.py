"""Iteration: key order, start keys, next/prev vectors, node iteration."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from mpt import Trie, keccak256
from mpt.ethereum._reference import node_encodings

from conftest import load_vector


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.binary(max_size=5), st.binary(min_size=1, max_size=40), max_size=60), st.binary(max_size=3))
def test_items_in_order_from_start(model, start):
    t = Trie()
    for k, v in model.items():
        t[k] = v
    assert list(t.items()) == sorted(model.items())
    assert list(t.keys(start)) == sorted(k for k in model if k >= start)
    assert list(t.values(start)) == [model[k] for k in sorted(model) if k >= start]
    assert list(t) == sorted(model)


@pytest.mark.parametrize("name", sorted(load_vector("TrieTests/trietestnextprev.json")))
def test_next_prev(name):
    case = load_vector("TrieTests/trietestnextprev.json")[name]
    t = Trie()
    for k in case["in"]:
        t[k.encode()] = k.encode()
    for key, prev, nxt in case["tests"]:
        key = key.encode()
        after = [k for k in t.keys(key) if k != key]
        assert (after[0] if after else b"") == nxt.encode()
        before = [k for k in t.keys() if k < key]
        assert (before[-1] if before else b"") == prev.encode()


def test_node_iter_preorder_matches_reference_nodes():
    rng = random.Random(3)
    model = {rng.randbytes(rng.choice([2, 32])): rng.randbytes(rng.choice([1, 50])) for _ in range(300)}
    t = Trie()
    for k, v in model.items():
        t[k] = v
    nodes = list(t.node_iter())
    paths = [p for p, _, _ in nodes]
    assert paths[0] == b""
    # Pre-order: every node's parent comes before it, and siblings come in nibble order.
    assert paths == sorted(paths)
    hashed = {(p, blob) for p, h, blob in nodes if h is not None}
    expected = {(e.path, e.encoding) for e in node_encodings(model) if e.hashed}
    assert hashed == expected
    for p, h, blob in nodes:
        if h is not None:
            assert keccak256(blob) == h
        else:
            assert len(blob) < 32


def test_empty_trie_iterates_nothing():
    t = Trie()
    assert list(t.items()) == [] and list(t.node_iter()) == []
