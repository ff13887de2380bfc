"""StackTrie: geth's vectors, equality with Trie on random sorted input, streaming, errors."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpt import EMPTY_ROOT, StackTrie, Trie
from mpt.ethereum._reference import node_encodings, trie_root
from mpt.bench import workloads

from conftest import load_vector

STACKTRIE_CASES = load_vector("stacktrie_insert_and_hash.json")["cases"]


@pytest.mark.parametrize("index", range(len(STACKTRIE_CASES)))
def test_geth_insert_and_hash(index):
    steps = STACKTRIE_CASES[index]
    for upto in range(1, len(steps) + 1):
        st_ = StackTrie()
        for step in steps[:upto]:
            st_.update(bytes.fromhex(step["key"][2:]), step["value"].encode())
        assert st_.hash().hex() == steps[upto - 1]["root"][2:]


def test_insert_100k_root():
    st_ = StackTrie()
    for k, v in workloads.insert_100k_items():
        st_.update(k, v)
    assert st_.hash() == workloads.INSERT_100K_ROOT


def test_empty_and_single():
    assert StackTrie().hash() == EMPTY_ROOT
    s = StackTrie()
    s.update(b"\x01", b"v")  # a root of less than 32 bytes is still hashed
    assert s.hash() == trie_root({b"\x01": b"v"})


def test_reset_and_reuse():
    s = StackTrie()
    s.update(b"a", b"1")
    first = s.hash()
    with pytest.raises(ValueError, match="reset"):
        s.update(b"b", b"2")
    assert s.hash() == first
    s.reset()
    s.update(b"a", b"1")
    s.update(b"b", b"2")
    assert s.hash() == trie_root({b"a": b"1", b"b": b"2"})


@pytest.mark.parametrize(
    "keys, message",
    [
        ([b"b", b"a"], "ascending"),
        ([b"a", b"a"], "ascending"),
        ([b"\x12", b"\x12\x34"], "prefix"),
        ([b"\x12\x00", b"\x12\x34", b"\x12\x34\x56"], "prefix"),
    ],
)
def test_errors(keys, message):
    s = StackTrie()
    with pytest.raises(ValueError, match=message):
        for k in keys:
            s.update(k, b"value")


def test_empty_value_and_types():
    s = StackTrie()
    with pytest.raises(ValueError, match="empty value"):
        s.update(b"a", b"")
    with pytest.raises(TypeError):
        s.update("a", b"v")
    with pytest.raises(TypeError):
        s.update(b"a", 5)
    with pytest.raises(TypeError):
        StackTrie(on_node=5)


def test_copies_reused_buffers():
    s = StackTrie()
    buf = bytearray(b"\x01" * 32)
    val = bytearray(b"x" * 40)
    expected = {}
    for i in range(50):
        buf[31] = i
        val[0] = i
        s.update(buf, val)
        expected[bytes(buf)] = bytes(val)
    assert s.hash() == trie_root(expected)


sorted_items = st.dictionaries(
    st.binary(min_size=1, max_size=6) | st.binary(min_size=32, max_size=32),
    st.binary(min_size=1, max_size=60),
    max_size=120,
)


def _without_prefix_keys(items):
    keys = sorted(items)
    keep = {}
    for k in keys:
        if keep and k.startswith(list(keep)[-1]):
            continue
        keep[k] = items[k]
    return keep


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sorted_items)
def test_equals_trie_and_streams_the_committed_nodes(items):
    items = _without_prefix_keys(items)
    streamed = []
    s = StackTrie(on_node=lambda path, h, blob: streamed.append((path, h, blob)))
    t = Trie()
    for k in sorted(items):
        s.update(k, items[k])
        t.update(k, items[k])
    root = s.hash()
    assert root == t.hash() == trie_root(items)
    # Exactly the nodes a committed trie stores: every node of 32+ bytes, and the root.
    expected = {(e.path, e.encoding) for e in node_encodings(items) if e.hashed}
    got = {(path, blob) for path, _, blob in streamed}
    assert got == expected
    from mpt import keccak256
    assert all(keccak256(blob) == h for _, h, blob in streamed)
    if items:
        assert streamed[-1][0] == b"" and streamed[-1][1] == root
        # ...and the same (path, hash, blob) triples that Trie.commit() writes.
        t.commit()
        assert {(p, h, b) for p, (h, b) in t.last_commit.nodes.items()} == set(streamed)


def test_on_node_error_propagates_and_needs_reset():
    class Boom(Exception):
        pass

    def on_node(path, h, blob):
        raise Boom(path)

    s = StackTrie(on_node=on_node)
    keys = [bytes([i]) * 32 for i in range(1, 40)]
    with pytest.raises(Boom):
        for k in keys:
            s.update(k, b"v" * 40)
    with pytest.raises(ValueError, match="reset"):
        s.update(b"\xff" * 32, b"v" * 40)
    with pytest.raises(ValueError, match="reset"):
        s.hash()
    s.reset()
    s.update(b"\x01", b"v")
    with pytest.raises(Boom):                   # the root is always streamed
        s.hash()


def test_error_leaves_the_trie_usable():
    s = StackTrie()
    s.update(b"\x10", b"a")
    with pytest.raises(ValueError, match="ascending: 05 after 10"):
        s.update(b"\x05", b"b")
    with pytest.raises(ValueError, match="prefix"):
        s.update(b"\x10\x01", b"b")
    s.update(b"\x20", b"c")
    assert s.hash() == trie_root({b"\x10": b"a", b"\x20": b"c"})


def test_huge_values_and_keys():
    items = {b"\x01" * 100: b"x" * 70000, b"\x01" * 99 + b"\x02": b"y", b"\x02": b"z" * 56, b"\x03": b"\x7f"}
    s = StackTrie()
    for k in sorted(items):
        s.update(k, items[k])
    assert s.hash() == trie_root(items)
