"""RLP: canonical encoding, strict decoding, every error path."""
import pytest
from hypothesis import given, strategies as st

from mpt import rlp
from mpt.errors import MptError, RLPDecodeError


@pytest.mark.parametrize(
    "obj, encoded",
    [
        (b"", "80"),
        (b"\x00", "00"),
        (b"\x7f", "7f"),
        (b"\x80", "8180"),
        (b"dog", "83646f67"),
        (0, "80"),
        (1, "01"),
        (127, "7f"),
        (128, "8180"),
        (1024, "820400"),
        (2**64, "89010000000000000000"),
        ([], "c0"),
        ([b"cat", b"dog"], "c88363617483646f67"),
        ([[], [[]], [[], [[]]]], "c7c0c1c0c3c0c1c0"),
        (b"a" * 55, "b7" + "61" * 55),
        (b"a" * 56, "b838" + "61" * 56),
        (bytearray(b"dog"), "83646f67"),
        (memoryview(b"dog"), "83646f67"),
        ((b"cat",), "c483636174"),
    ],
)
def test_encode_known(obj, encoded):
    assert rlp.encode(obj).hex() == encoded


def test_encode_long_list_header():
    items = [b"x" * 10] * 10  # payload 110 bytes -> f86e
    assert rlp.encode(items)[:2] == bytes([0xF8, 110])


def test_encode_large_string_header():
    data = b"\x01" * 70000
    enc = rlp.encode(data)
    assert enc[:4] == bytes([0xBA, 0x01, 0x11, 0x70]) and enc[4:] == data


def _header_by_hand(base, length):
    # The yellow paper's rule: the length in the first byte below 56, else its big-endian bytes follow.
    if length < 56:
        return bytes([base + length])
    be = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([base + 55 + len(be)]) + be


@pytest.mark.parametrize("length", [55, 56, 57, 110, 255, 256, 257, 532, 65535, 65536, 65537, 1 << 24])
def test_header_length_boundaries(length):
    # Headers of one, two and three length bytes are written by their own branches (put_header, header_size),
    # longer ones by the general loop: every boundary between them, for a string and (up to the three-byte
    # lengths) for a list, encoded and decoded back.
    data = b"\x01" * length
    assert rlp.encode(data) == _header_by_hand(0x80, length) + data
    assert rlp.decode(rlp.encode(data)) == data
    if length > 65537:
        return
    items = [b"\x02"] * length
    assert rlp.encode(items) == _header_by_hand(0xC0, length) + b"\x02" * length
    assert rlp.decode(rlp.encode(items)) == items


@pytest.mark.parametrize("bad, exc, word", [(-1, ValueError, "negative"), ("abc", TypeError, "str"),
                                              (1.5, TypeError, "float"), (None, TypeError, "NoneType"),
                                              ({b"a": 1}, TypeError, "dict"), (True, TypeError, "bool")])
def test_encode_rejects(bad, exc, word):
    with pytest.raises(exc, match=word):
        rlp.encode(bad)
    with pytest.raises(exc):
        rlp.encode([b"ok", [bad]])


nested = st.recursive(
    st.binary(max_size=80),
    lambda children: st.lists(children, max_size=6),
    max_leaves=40,
)


@given(nested)
def test_round_trip(obj):
    assert rlp.decode(rlp.encode(obj)) == obj


@given(st.integers(min_value=0, max_value=2**300))
def test_int_round_trip(n):
    raw = rlp.decode(rlp.encode(n))
    assert int.from_bytes(raw, "big") == n
    assert raw == b"" or raw[0] != 0


@pytest.mark.parametrize(
    "hexdata, offset, what",
    [
        ("", 0, "empty"),
        ("8100", 0, "non-canonical single byte"),
        ("817f", 0, "non-canonical single byte"),
        ("b800", 0, "leading zero"),
        ("b80100", 0, "non-canonical size"), ("b9000100", 0, "leading zero"),
        ("b837" + "00" * 55, 0, "non-canonical size"),
        ("f800", 0, "leading zero"),
        ("f837" + "00" * 55, 0, "non-canonical size"),
        ("83646f", 0, "too short"),
        ("c3808080" + "00", 4, "trailing"),
        ("c58364", 0, "too short"),
        ("c2" + "8364", 1, "too short"),
        ("b9", 0, "too short"),
        ("bf" + "ff" * 8, 0, "too short"),  # declared 2**64-1 bytes: refused without allocating
        ("ffffffffffffffffff", 0, "too short"),
        ("c28100", 1, "non-canonical single byte"),
        ("8080", 1, "trailing"),
    ],
)
def test_decode_rejects(hexdata, offset, what):
    with pytest.raises(RLPDecodeError, match=what) as info:
        rlp.decode(bytes.fromhex(hexdata))
    assert "offset %d" % offset in str(info.value)
    assert isinstance(info.value, MptError)


def test_decode_accepts_bytes_like():
    assert rlp.decode(bytearray(b"\x83dog")) == b"dog"
    assert rlp.decode(memoryview(b"\xc0")) == []


@pytest.mark.parametrize("bad", ["c0", 5, None, [b"a"]])
def test_decode_type_errors(bad):
    with pytest.raises(TypeError):
        rlp.decode(bad)


def test_decode_depth_cap():
    deep = b"\xc0"
    for _ in range(2000):
        deep = rlp.encode([rlp.decode(deep)]) if len(deep) < 50 else None
        if deep is None:
            break
    # Build a 5000-deep nesting directly: each level is a list header around the next.
    blob = b"\xc0"
    for _ in range(5000):
        n = len(blob)
        width = (n.bit_length() + 7) // 8
        blob = (bytes([0xC0 + n]) if n < 56 else bytes([0xF7 + width]) + n.to_bytes(width, "big")) + blob
    with pytest.raises(RLPDecodeError, match="nested deeper"):
        rlp.decode(blob)


def test_write_buffer_grows_and_keeps_memory():
    w = rlp.WriteBuffer()
    assert w.capacity == 1024
    w.write(b"x" * 5000)
    assert len(w) == 5000 and w.getvalue() == b"x" * 5000
    grown = w.capacity
    assert grown >= 5000
    w.clear()
    assert len(w) == 0 and w.capacity == grown
