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

