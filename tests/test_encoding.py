"""Key encodings (geth trie/encoding_test.go cases)."""
import random

import pytest
from hypothesis import given, strategies as st

from mpt.ethereum.encoding import compact_to_hex, hex_to_compact, hex_to_keybytes, keybytes_to_hex
from mpt.errors import NodeDecodeError


@pytest.mark.parametrize(
    "hexkey, compact",
    [
        # empty keys, with and without terminator
        (b"", "00"),
        (b"\x10", "20"),
        # odd length, no terminator
        (bytes([1, 2, 3, 4, 5]), "112345"),
        # even length, no terminator
        (bytes([0, 1, 2, 3, 4, 5]), "00012345"),
        # odd length, terminator
        (bytes([15, 1, 12, 11, 8, 16]), "3f1cb8"),
        # even length, terminator
        (bytes([0, 15, 1, 12, 11, 8, 16]), "200f1cb8"),
    ],
)
def test_compact(hexkey, compact):
    assert hex_to_compact(hexkey).hex() == compact
    assert compact_to_hex(bytes.fromhex(compact)) == hexkey


@pytest.mark.parametrize(
    "key, hexkey",
    [
        (b"", bytes([16])),
        (bytes([0x12, 0x34, 0x56]), bytes([1, 2, 3, 4, 5, 6, 16])),
        (bytes([0x12, 0x34, 0x5]), bytes([1, 2, 3, 4, 0, 5, 16])),
    ],
)
def test_keybytes(key, hexkey):
    assert keybytes_to_hex(key) == hexkey
    assert hex_to_keybytes(hexkey) == key


@given(st.binary(max_size=64))
def test_round_trips(key):
    h = keybytes_to_hex(key)
    assert hex_to_keybytes(h) == key
    assert compact_to_hex(hex_to_compact(h)) == h
    assert compact_to_hex(hex_to_compact(h[:-1])) == h[:-1]
    if len(h) > 2:
        assert compact_to_hex(hex_to_compact(h[1:])) == h[1:]


def _compact_by_hand(hexkey):
    # The yellow paper's hex-prefix encoding, one nibble pair at a time.
    leaf = hexkey[-1:] == bytes([16])
    nibbles = list(hexkey[:-1] if leaf else hexkey)
    flag = (2 if leaf else 0) + (len(nibbles) & 1)
    nibbles = [flag] + ([] if flag & 1 else [0]) + nibbles
    return bytes(nibbles[i] << 4 | nibbles[i + 1] for i in range(0, len(nibbles), 2))


def test_compact_of_every_length():
    # write_compact (what every node encoder uses) for every length up to 100, odd and even, leaf and extension,
    # with every nibble value, against the encoding done by hand. Its nibble packing has three paths: 16 pairs a
    # step with SSE2 (runs of 16 pairs or more, on x86), 4 a step in a 64-bit word (runs of 4 to 15 pairs), one at
    # a time (shorter runs); the longer two end with an overlapping step, which every length here lands on.
    rng = random.Random(3)
    for n in range(101):
        for _ in range(4):
            nibbles = bytes(rng.randrange(16) for _ in range(n))
            for hexkey in (nibbles, nibbles + bytes([16])):
                assert hex_to_compact(hexkey) == _compact_by_hand(hexkey), hexkey.hex()
                assert compact_to_hex(hex_to_compact(hexkey)) == hexkey
    assert hex_to_compact(bytes([15]) * 64 + bytes([16])) == b"\x20" + b"\xff" * 32


@pytest.mark.parametrize("bad", ["", "40", "f0", "01", "2f"])
def test_compact_strictness(bad):
    with pytest.raises(NodeDecodeError):
        compact_to_hex(bytes.fromhex(bad))


def test_bad_hex_keys():
    with pytest.raises(ValueError):
        hex_to_keybytes(bytes([1, 2, 3]))
    with pytest.raises(ValueError):
        hex_to_compact(bytes([1, 17]))


# One encoder (issue 34): every writer of trie node encodings (Node.encode, the hashing pass, the node arena,
# StackTrie, the range proof's leaf batch, execution-specs' compiled tries) writes a node's list header, its
# hashed children's references and its compact keys through mpt/ethereum/node_enc.pxd and encoding.pxd.
_PACKAGE = __import__("pathlib").Path(__file__).resolve().parent.parent / "mpt"
_NODE_WRITERS_ALLOWED = {
    # (file, line text): RLP lists that are not trie nodes
    ("compat/execution_specs/_fast.pyx", "h = put_header(out, 0xc0, n)"): "an account's RLP list",
    ("compat/pytrie/_core.pyx", "out += put_header(out, 0xc0, payload)"): "py-trie's raw nodes: any RLP list",
    ("compat/pytrie/_core.pyx", "q += put_header(q, 0xc0, payload)"): "a py-trie node spliced byte by byte",
    ("compat/execution_specs/_fast.pyx", "body[n] = 0xa0"): "an account's storage root string",
    ("compat/execution_specs/_fast.pyx", "body[n + 33] = 0xa0"): "an account's code hash string",
}


def test_node_encodings_are_written_by_node_enc_only():
    import re

    list_header = re.compile(r"put_header(_before)?\([^,]+,\s*0x[cC]0\b")
    hash_string = re.compile(r"\]\s*=\s*(0xa0|0x80 \+ (32|HASH_LENGTH))\b")
    compact_flag = re.compile(r"\(flag (\||\+) (1|COMPACT_ODD_FLAG)\) << 4|0x30 \|")
    found = []
    for path in sorted(_PACKAGE.rglob("*.p[xy][xd]")):
        rel = path.relative_to(_PACKAGE).as_posix()
        if rel in ("ethereum/node_enc.pxd", "ethereum/encoding.pxd") or rel.startswith(
                ("core/", "iavl/", "merkle/", "ics23/")):
            continue                # the writers themselves, generic RLP, the other families' formats
        for line in path.read_text().splitlines():
            text = line.strip()
            if (list_header.search(text) or hash_string.search(text) or compact_flag.search(text)) \
                    and (rel, text) not in _NODE_WRITERS_ALLOWED:
                found.append("%s: %s" % (rel, text))
    assert found == []
    for rel, text in _NODE_WRITERS_ALLOWED:
        assert text in (_PACKAGE / rel).read_text(), (rel, text)
