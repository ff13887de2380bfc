"""Differential and known-answer tests of the C Keccak-256 against pycryptodome."""
import random

import pytest
from Crypto.Hash import keccak as crypto_keccak

from mpt.core._keccak import keccak256

RATE = 136  # bytes absorbed per permutation for Keccak-256


def oracle(data: bytes) -> bytes:
    return crypto_keccak.new(digest_bits=256, data=data).digest()


def random_bytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def test_empty_vector():
    assert keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"


def test_rlp_empty_string_vector():
    # keccak256(rlp(b"")): the empty trie root.
    assert keccak256(b"\x80").hex() == "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"


def test_not_sha3():
    # SHA3-256 pads with 0x06; Ethereum's Keccak with 0x01, so the digests differ.
    import hashlib

    assert keccak256(b"") != hashlib.sha3_256(b"").digest()


def test_every_length_up_to_600():
    rng = random.Random(1600)
    for n in range(601):
        data = random_bytes(rng, n)
        assert keccak256(data) == oracle(data), n


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 127, 128, 129, 135, 136, 137, 271, 272, 273, 407, 408, 409])
@pytest.mark.parametrize("fill", [0x00, 0x01, 0x80, 0xFF])
def test_rate_boundaries(n, fill):
    # Constant fills collide with the pad bytes (0x01 and 0x80) at the block edge.
    data = bytes([fill]) * n
    assert keccak256(data) == oracle(data)


def test_random_lengths_up_to_64k():
    rng = random.Random(256)
    for _ in range(200):
        n = rng.randrange(64 * 1024 + 1)
        data = random_bytes(rng, n)
        assert keccak256(data) == oracle(data), n


def test_large_input_releases_gil_path():
    # Above the no-GIL threshold for bytes and for buffers alike.
    data = random_bytes(random.Random(7), 1 << 20)
    expected = oracle(data)
    assert keccak256(data) == expected
    assert keccak256(bytearray(data)) == expected
    assert keccak256(memoryview(data)) == expected


def test_threads_hash_large_inputs_concurrently():
    # Large inputs run without the GIL; results must not interfere.
    from concurrent.futures import ThreadPoolExecutor

    rng = random.Random(99)
    inputs = [random_bytes(rng, 70_000 + i) for i in range(8)]
    expected = [oracle(d) for d in inputs]
    work = [bytearray(d) if i % 2 else d for i, d in enumerate(inputs)] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(keccak256, work))
    assert results == expected * 4


def test_result_is_fresh_32_byte_bytes():
    out = keccak256(b"abc")
    assert type(out) is bytes and len(out) == 32
    assert keccak256(b"abc") == out


@pytest.mark.parametrize("n", [0, 1, 32, 135, 136, 137, 5000])
def test_bytearray_and_memoryview(n):
    data = random_bytes(random.Random(n), n)
    expected = oracle(data)
    assert keccak256(bytearray(data)) == expected
    assert keccak256(memoryview(data)) == expected
    assert keccak256(memoryview(bytearray(data))) == expected


def test_memoryview_slice_and_bytes_subclass():
    data = bytes(range(256)) * 3
    assert keccak256(memoryview(data)[10:500]) == oracle(data[10:500])

    class B(bytes):
        pass

    assert keccak256(B(data)) == oracle(data)


def test_non_contiguous_buffer_rejected():
    with pytest.raises(BufferError):
        keccak256(memoryview(b"abcdef")[::2])


@pytest.mark.parametrize(
    "value, type_name",
    [("abc", "str"), ("", "str"), (1, "int"), (None, "NoneType"), ([1, 2], "list"), (1.5, "float")],
)
def test_type_error_names_type(value, type_name):
    with pytest.raises(TypeError, match=type_name):
        keccak256(value)


def test_permutation_helper_runs():
    from mpt.core._keccak.binding import _permutations

    assert _permutations(0) is None
    assert _permutations(10) is None
