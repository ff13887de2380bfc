"""The C SHA-256 (mpt/_sha256) against hashlib, on every backend this CPU runs.

Every test that hashes runs once per backend (conftest's `sha256_backend` fixture switches the process-wide choice
and puts the previous one back); the environment variable MPT_SHA256_BACKEND is checked in a subprocess.
"""
import hashlib
import os
import random
import subprocess
import sys

import pytest

from mpt.core._sha256 import binding, sha256, sha256_backend, sha256_backends, sha256_prefixed, set_sha256_backend

BLOCK = 64

# Lengths where padding changes shape: 55 is the longest message with the length in its own block, 56..63 push
# the length into an extra block; with a prefix byte everything shifts by one.
BOUNDARY_LENGTHS = sorted({0, 1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 191, 192, 193, 4095, 4096,
                           4097, 65535, 65536, 65537, 1 << 20})


def random_bytes(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def test_known_answers(sha256_backend):
    assert sha256(b"").hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert sha256(b"abc").hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    # FIPS 180-2 appendix B.2 (two blocks) and B.3 (one million 'a').
    assert sha256(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").hex() == (
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    assert sha256(b"a" * 1_000_000).hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"


def test_every_length_up_to_300(sha256_backend):
    rng = random.Random(256)
    for n in range(301):
        data = random_bytes(rng, n)
        assert sha256(data) == hashlib.sha256(data).digest(), n
        for prefix in (0, 1, 0xFF):
            assert sha256_prefixed(prefix, data) == hashlib.sha256(bytes([prefix]) + data).digest(), (n, prefix)


def test_block_boundaries_and_large(sha256_backend):
    rng = random.Random(512)
    for n in BOUNDARY_LENGTHS:
        data = random_bytes(rng, n)
        assert sha256(data) == hashlib.sha256(data).digest(), n
        assert sha256_prefixed(0, data) == hashlib.sha256(b"\x00" + data).digest(), n


def test_bytes_like_inputs(sha256_backend):
    data = bytes(range(200))
    want = hashlib.sha256(data).digest()
    assert sha256(bytearray(data)) == want
    assert sha256(memoryview(data)) == want
    assert sha256(memoryview(data)[10:150]) == hashlib.sha256(data[10:150]).digest()
    big = bytearray(b"\x5a" * 10_000)  # over the no-GIL threshold, through a buffer export
    assert sha256(big) == hashlib.sha256(big).digest()


def test_refuses_non_bytes():
    with pytest.raises(TypeError, match="encode"):
        sha256("abc")
    with pytest.raises(TypeError):
        sha256(12)
    with pytest.raises(TypeError):
        sha256(None)
    with pytest.raises(BufferError):
        sha256(memoryview(bytes(100))[::2])  # not contiguous
    with pytest.raises(ValueError):
        sha256_prefixed(256, b"")


def test_streaming_any_chunking(sha256_backend):
    rng = random.Random(7)
    for n in [0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 300, 1000, 5000]:
        data = random_bytes(rng, n)
        want = hashlib.sha256(data).digest()
        assert binding._sha256_streamed([data]) == want
        assert binding._sha256_streamed([data[i:i + 1] for i in range(n)]) == want
        for _ in range(5):
            cuts = sorted(rng.randrange(n + 1) for _ in range(rng.randrange(1, 6)))
            chunks = [data[a:b] for a, b in zip([0] + cuts, cuts + [n])]
            assert binding._sha256_streamed(chunks) == want, (n, cuts)


def test_many_matches_one_at_a_time(sha256_backend):
    """The batch entry point groups messages of different lengths (SHA-NI interleaves two, AVX2 runs eight lanes,
    a short lane idling while the longest finishes; a last group of 3..7 uses idle lanes, of 1..2 scalar code)."""
    rng = random.Random(11)
    for count in [0, 1, 2, 3, 7, 8, 9, 10, 11, 15, 16, 17, 64, 101]:
        messages = [random_bytes(rng, rng.choice([0, 1, 31, 55, 56, 63, 64, 100, 129, 500])) for _ in range(count)]
        assert binding._sha256_many(messages) == [hashlib.sha256(m).digest() for m in messages]
        assert binding._sha256_many(messages, prefix=0) == [hashlib.sha256(b"\0" + m).digest() for m in messages]
        assert binding._sha256_many(messages, prefix=1) == [hashlib.sha256(b"\1" + m).digest() for m in messages]


def test_many_long_and_equal_lengths(sha256_backend):
    """Groups where every lane has the same block count (AVX2 skips its per-lane blend) and lanes far apart."""
    rng = random.Random(12)
    for size in [0, 55, 64, 100, 4096]:
        messages = [random_bytes(rng, size) for _ in range(19)]
        assert binding._sha256_many(messages, prefix=0) == [hashlib.sha256(b"\0" + m).digest() for m in messages]
    messages = [random_bytes(rng, 5000 if i % 8 == 3 else 3) for i in range(24)]
    assert binding._sha256_many(messages) == [hashlib.sha256(m).digest() for m in messages]


def test_batches_match_the_scalar_backend():
    """Every backend this CPU runs gives the scalar backend's digests on random batches (mixed and equal lengths,
    every group size around AVX-512's sixteen lanes, AVX2's eight and SHA-NI's four) and on in-place Merkle
    levels."""
    rng = random.Random(14)
    batches = [[random_bytes(rng, rng.randrange(300)) for _ in range(count)] for count in range(0, 40)]
    batches += [[random_bytes(rng, size)] * count for size in (32, 100, 129) for count in (4, 8, 12, 13)]
    batches += [[random_bytes(rng, rng.randrange(300)) for _ in range(count)] for count in (47, 48, 49, 64, 70)]
    levels = [random_bytes(rng, 64 * npairs) for npairs in range(0, 40)] + [random_bytes(rng, 64 * 101)]
    start = sha256_backend()
    try:
        set_sha256_backend("scalar")
        want = [(binding._sha256_many(b), binding._sha256_many(b, prefix=0)) for b in batches]
        want_levels = [binding._sha256_pairs(1, level, True) for level in levels]
        for name in sha256_backends():
            set_sha256_backend(name)
            assert [(binding._sha256_many(b), binding._sha256_many(b, prefix=0)) for b in batches] == want, name
            assert [binding._sha256_pairs(1, level, True) for level in levels] == want_levels, name
    finally:
        set_sha256_backend(start)


@pytest.mark.parametrize("in_place", [False, True])
def test_pairs_reduce_a_level(sha256_backend, in_place):
    rng = random.Random(13)
    for npairs in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 33]:
        level = random_bytes(rng, 64 * npairs)
        want = b"".join(hashlib.sha256(b"\x01" + level[64 * i:64 * i + 64]).digest() for i in range(npairs))
        assert binding._sha256_pairs(1, level, in_place) == want, (npairs, in_place)


def test_set_backend_round_trip():
    start = sha256_backend()
    assert start in sha256_backends()
    assert "scalar" in sha256_backends()
    old = set_sha256_backend("scalar")
    try:
        assert old == start
        assert sha256_backend() == "scalar"
        set_sha256_backend("auto")
        chosen = sha256_backend()
        assert chosen == _auto_choices()[0] or chosen in _auto_choices()
        with pytest.raises(ValueError, match="unknown"):
            set_sha256_backend("md5")
        assert sha256_backend() == chosen  # unchanged by a refused name
    finally:
        set_sha256_backend(start)


def _auto_choices():
    """What "auto" may pick here: SHA-NI or AVX-512 by a timing where the CPU has both, else the one it has, else
    AVX2, else the portable code."""
    have = sha256_backends()
    fast = [name for name in ("shani", "avx512") if name in have]
    return fast or [name for name in ("avx2", "scalar") if name in have][:1]


@pytest.mark.parametrize("name", ["scalar", "avx2", "avx512", "shani", "auto", "bogus"])
def test_environment_forces_backend(name):
    code = "from mpt.core._sha256 import sha256, sha256_backend; import hashlib; " \
           "assert sha256(b'x' * 100) == hashlib.sha256(b'x' * 100).digest(); print(sha256_backend())"
    env = dict(os.environ, MPT_SHA256_BACKEND=name)
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    if name in sha256_backends():
        assert out.strip() == name
    else:
        assert out.strip() in _auto_choices()


def test_single_messages_of_the_avx512_backend_use_sha_ni():
    """The lanes hash batches; one message at a time, streaming included, goes to SHA-NI where the CPU has it:
    the same digests either way."""
    if "avx512" not in sha256_backends():
        pytest.skip("no AVX-512 here")
    start = set_sha256_backend("avx512")
    try:
        rng = random.Random(3)
        for size in (0, 1, 55, 56, 64, 65, 1000):
            data = random_bytes(rng, size)
            assert sha256(data) == hashlib.sha256(data).digest()
            assert sha256_prefixed(1, data) == hashlib.sha256(b"\x01" + data).digest()
    finally:
        set_sha256_backend(start)
