"""Key encodings (geth trie/encoding_test.go cases)."""
import pytest
from hypothesis import given, strategies as st

from mpt.encoding import compact_to_hex, hex_to_compact, hex_to_keybytes, keybytes_to_hex
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


@pytest.mark.parametrize("bad", ["", "40", "f0", "01", "2f"])
def test_compact_strictness(bad):
    with pytest.raises(NodeDecodeError):
        compact_to_hex(bytes.fromhex(bad))


def test_bad_hex_keys():
    with pytest.raises(ValueError):
        hex_to_keybytes(bytes([1, 2, 3]))
    with pytest.raises(ValueError):
        hex_to_compact(bytes([1, 17]))
