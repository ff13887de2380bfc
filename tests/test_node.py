"""Node encode/decode round trips and the strict decoder."""
import pytest
from hypothesis import given, settings, strategies as st

from mpt import FullNode, HashNode, ShortNode, Trie, ValueNode, decode_node, keccak256, rlp
from mpt.ethereum._reference import node_encodings
from mpt.errors import MptError, NodeDecodeError


def test_leaf_encoding():
    leaf = ShortNode(bytes([1, 2, 3, 16]), ValueNode(b"hello"))
    assert leaf.encoding() == rlp.encode([bytes([0x31, 0x23]), b"hello"])


def test_branch_encoding_with_hashed_and_embedded_children():
    big = ShortNode(bytes([5, 16]), ValueNode(b"x" * 40))
    small = ShortNode(bytes([6, 16]), ValueNode(b"y"))
    children = [None] * 17
    children[1] = big
    children[2] = small
    children[16] = ValueNode(b"branch value")
    branch = FullNode(children)
    enc = branch.encoding()
    big_enc = rlp.encode([bytes([0x35]), b"x" * 40])
    assert big.hash == keccak256(big_enc)
    assert small.hash is None  # embedded, never hashed
    expected = [b"", keccak256(big_enc), [bytes([0x36]), b"y"]] + [b""] * 13 + [b"branch value"]
    assert enc == rlp.encode(expected)
    decoded = decode_node(enc)
    assert isinstance(decoded, FullNode)
    assert isinstance(decoded.children[1], HashNode) and decoded.children[1].hash == big.hash
    assert isinstance(decoded.children[2], ShortNode) and decoded.children[2].val.value == b"y"
    assert decoded.children[16].value == b"branch value"
    assert decoded.encoding() == enc and not decoded.dirty


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=8), st.binary(min_size=1, max_size=50), min_size=1, max_size=40))
def test_every_node_round_trips(items):
    for entry in node_encodings(items):
        node = decode_node(entry.encoding)
        assert node.encoding() == entry.encoding
        rehashed = decode_node(entry.encoding, keccak256(entry.encoding) if len(entry.encoding) >= 32 else None)
        assert rehashed.encoding() == entry.encoding


def _branch(items):
    return rlp.encode(items)


MALFORMED = {
    "empty": b"",
    "string not list": rlp.encode(b"abc"),
    "three items": rlp.encode([b"\x20", b"a", b"b"]),
    "one item": rlp.encode([b"\x20"]),
    "sixteen items": rlp.encode([b""] * 16),
    "eighteen items": rlp.encode([b""] * 18),
    "trailing bytes": rlp.encode([b"\x20", b"v"]) + b"\x00",
    "bad rlp inside": bytes.fromhex("c4") + bytes.fromhex("820061") + bytes.fromhex("00")[:0] + b"\x81",
    "non-canonical size": bytes.fromhex("c3") + bytes.fromhex("8120") + b"v",
    "key is list": rlp.encode([[b"\x20"], b"v"]),
    "leaf value is list": rlp.encode([b"\x20", [b"v"]]),
    "empty leaf value": rlp.encode([b"\x20", b""]),
    "extension empty key": rlp.encode([b"\x00", b"\x11" * 32]),
    "extension without child": rlp.encode([b"\x11", b""]),
    "child ref 31 bytes": rlp.encode([b"\x11", b"\x11" * 31]),
    "child ref 33 bytes": rlp.encode([b"\x11", b"\x11" * 33]),
    "oversized embedded child": rlp.encode([b"\x11", [b"\x20", b"v" * 40]]),
    "branch child ref 20 bytes": rlp.encode([b"\x11" * 20] + [b""] * 16),
    "branch value slot list": rlp.encode([b""] * 16 + [[b"v"]]),
    "bad compact flag": rlp.encode([b"\x40", b"v"]),
    "bad pad nibble": rlp.encode([b"\x21", b"v"]),
    "empty compact key": rlp.encode([b"", b"v"]),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_decode_rejects(name):
    with pytest.raises(NodeDecodeError) as info:
        decode_node(MALFORMED[name])
    assert isinstance(info.value, MptError)


def test_decode_type_errors():
    with pytest.raises(TypeError):
        decode_node("c0")
    with pytest.raises(TypeError):
        decode_node(b"\xc0", node_hash=b"short")


def test_constructor_checks():
    with pytest.raises(ValueError):
        ValueNode(b"")
    with pytest.raises(ValueError):
        HashNode(b"\x00" * 31)
    with pytest.raises(TypeError):
        ShortNode(bytes([1, 16]), FullNode())
    with pytest.raises(TypeError):
        ShortNode(bytes([1]), ValueNode(b"v"))
    with pytest.raises(ValueError):
        FullNode([None] * 16)
    with pytest.raises(TypeError):
        FullNode([ValueNode(b"v")] + [None] * 16)


def test_trie_nodes_match_reference_encodings():
    items = {bytes([i, j]): b"v%d" % (i * j) for i in range(20) for j in range(0, 256, 37)}
    t = Trie()
    for k, v in items.items():
        t[k] = v
    t.hash()
    expected = {e.encoding for e in node_encodings(items) if e.hashed}
    seen = set()

    def walk(n):
        if n is None or isinstance(n, ValueNode):
            return
        if n.hash is not None:
            seen.add(n.encoding())
        if isinstance(n, FullNode):
            for c in n.children[:16]:
                walk(c)
        elif isinstance(n, ShortNode):
            walk(n.val)

    walk(t.root_node)
    seen.add(t.root_node.encoding())
    assert seen == expected


def test_constructors_take_only_the_four_node_kinds():
    from mpt.ethereum.node import Node

    class Sub(Node):
        pass

    for bad in (Node(), Sub()):
        with pytest.raises(TypeError):
            FullNode([bad] + [None] * 16)
        with pytest.raises(TypeError):
            ShortNode(bytes([1, 2]), bad)
    # The real kinds are still accepted.
    leaf = ShortNode(bytes([3, 16]), ValueNode(b"v"))
    assert FullNode([leaf, HashNode(b"\x01" * 32)] + [None] * 14 + [ValueNode(b"w")]).children[0] is leaf
    assert ShortNode(bytes([1, 2]), FullNode()).val is not None


def test_nodes_made_with_new_and_never_initialized_are_refused():
    """cls.__new__ leaves None where the encoder and the hashing pass read bytes (they would read the None
    object's memory as a key, value or hash): such a node is refused as a child, as a root and when encoded."""
    from mpt.ethereum.hasher import Hasher, encode_node
    bare_short = ShortNode.__new__(ShortNode)
    bare_value = ValueNode.__new__(ValueNode)
    bare_hash = HashNode.__new__(HashNode)
    for bare, what in ((bare_short, "ShortNode.__new__"), (bare_value, "ValueNode.__new__"),
                       (bare_hash, "HashNode.__new__")):
        for use in (Hasher().hash, Hasher().hash_by_levels, encode_node, lambda n: n.encoding()):
            with pytest.raises(TypeError, match=what):
                use(bare)
    with pytest.raises(TypeError, match="ValueNode.__new__"):
        ShortNode(bytes([1, 16]), bare_value)
    with pytest.raises(TypeError, match="ShortNode.__new__"):
        ShortNode(bytes([1]), bare_short)
    with pytest.raises(TypeError, match="ValueNode.__new__"):
        FullNode([None] * 16 + [bare_value])
    with pytest.raises(TypeError, match="HashNode.__new__"):
        FullNode([bare_hash] + [None] * 16)
    # A FullNode made with __new__ is a well-formed empty branch: 17 empty slots.
    assert FullNode.__new__(FullNode).encoding() == rlp.encode([b""] * 17)


def test_nodes_cannot_be_initialized_twice():
    """A node may already sit in a trie (or be read by a hashing pass on another thread): __init__ on a live
    node raises instead of changing it in place."""
    leaf = ShortNode(bytes([3, 16]), ValueNode(b"v"))
    fn = FullNode([leaf] + [None] * 16)
    ext = ShortNode(bytes([1, 2]), fn)
    vn = ValueNode(b"v")
    hn = HashNode(b"\x01" * 32)
    empty = FullNode()
    for node, args in ((fn, ([None] * 17,)), (empty, ()), (leaf, (bytes([4, 16]), ValueNode(b"x"))),
                       (ext, (bytes([5]), fn)), (vn, (b"x",)), (hn, (b"\x02" * 32,))):
        before = repr(node)
        with pytest.raises(TypeError, match="already initialized"):
            node.__init__(*args)
        assert repr(node) == before
    # Decoded and trie-made nodes are no fresher.
    t = Trie()
    t.update(b"\x01" * 32, b"a" * 40)
    t.update(b"\x02" * 32, b"b" * 40)
    t.hash()
    root = t.root_node
    with pytest.raises(TypeError):
        root.__init__()
    dec = decode_node(bytes(root.encoding()))
    with pytest.raises(TypeError):
        dec.__init__()
