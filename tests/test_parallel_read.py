"""build_root's input readers: several threads copy a tuple's pairs into the shard arenas without the GIL, in
chunks; the order must survive exactly (last write wins, empty value deletes) and odd items go through the slow
path with the right error or conversion. Small chunk sizes put chunk boundaries everywhere."""
import random

import pytest

import mpt.ethereum.shards.read as reading
from mpt import Trie, build_root
from mpt.ethereum.shards.partition import Partition
from mpt.ethereum.shards.read import read_pairs

from conftest import process_pool, root_of


def trie_root(pairs):
    return root_of((bytes(k), bytes(v)) for k, v in pairs)


@pytest.fixture(params=["rounds", "split"])
def small_chunks(request, monkeypatch):
    # "rounds": a list or tuple read in rounds of readers x _READ_CHUNK pairs, merged after each (as iterators and
    # spilling inputs are); "split": one stretch of the input per reader, kept apart (_Readers.read_split), with the
    # arenas presized after 3 pairs.
    monkeypatch.setattr(reading, "_READ_CHUNK", 7)
    monkeypatch.setattr(reading, "_ITER_CHUNK", 5)
    monkeypatch.setattr(reading, "_SPLIT_MIN", 1 if request.param == "split" else 1 << 60)
    monkeypatch.setattr(reading, "_PRESIZE_AFTER", 3)


def _dup_heavy(seed, n=400, distinct=60, short=True):
    """Few distinct keys, many rewrites and deletions, spread over every shard prefix (and short keys)."""
    rng = random.Random(seed)
    keys = [bytes(rng.getrandbits(8) for _ in range(rng.choice([2, 3, 20, 32]))) for _ in range(distinct)]
    if short:
        keys += [b"", b"\x01", b"\x12", b"\xff"]
    pairs = []
    for _ in range(n):
        key = rng.choice(keys)
        value = b"" if rng.random() < 0.25 else bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 5, 40])))
        pairs.append((key, value))
    return pairs


@pytest.mark.parametrize("seed", range(6))
def test_duplicates_and_deletions_across_chunks(small_chunks, seed):
    pairs = _dup_heavy(seed)
    want = trie_root(pairs)
    for k in (0, 1, 2, 3):
        for workers in (1, 2, 3, 4):
            assert build_root(tuple(pairs), shard_nibbles=k, workers=workers) == want, (k, workers)
            assert build_root(list(pairs), shard_nibbles=k, workers=workers) == want, (k, workers)
            assert build_root(iter(pairs), shard_nibbles=k, workers=workers) == want, (k, workers)


def test_default_chunks_differential():
    # Real chunk sizes: two full rounds and a partial one with 2 readers, a key rewritten in each.
    rng = random.Random(7)
    n = 2 * 262144 + 1000
    keys = [rng.getrandbits(256).to_bytes(32, "big") for _ in range(n)]
    pairs = [(key, b"%d" % i) for i, key in enumerate(keys)]
    for pos in (0, 262143, 262144, 262145, n - 1):
        pairs.append((keys[pos], b"rewritten %d" % pos))       # rewrites at the end, read by the last reader
        pairs.insert(pos, (keys[(pos * 7) % n], b"early"))      # and earlier values that must lose
    pairs.append((keys[5], b""))                                # a deletion
    t = Trie()
    for k, v in pairs:
        t.update(k, v)
    want = t.hash()
    for workers in (1, 2, 3):
        assert build_root(pairs, workers=workers) == want


def test_short_keys_last_write_wins_across_readers(small_chunks):
    pairs = [(b"\x01", b"first"), (b"\x01\x02\x03", b"long")] * 10 + [(b"\x01", b"")] + [(b"\x01", b"last")]
    pairs += [(bytes([i, i]) * 3, b"x%d" % i) for i in range(30)]
    pairs.append((b"\x02", b"only once"))
    pairs.append((b"\x02", b""))
    want = trie_root(pairs)
    for workers in (1, 2, 3):
        for k in (2, 3, 4):
            assert build_root(tuple(pairs), shard_nibbles=k, workers=workers) == want


BAD = [
    (lambda i: 12, TypeError, "pair %d: expected a (key, value) pair, got int"),
    (lambda i: (b"k", b"v", b"x"), TypeError, "pair %d: expected a (key, value) pair, got tuple"),
    (lambda i: ("k%d" % i, b"v"), TypeError, "pair %d: key must be a bytes-like object, not str"),
    (lambda i: (b"k%d" % i, 5), TypeError, "pair %d: value must be a bytes-like object, not int"),
    (lambda i: (None, None), TypeError, "pair %d: key must be a bytes-like object, not NoneType"),
]


@pytest.mark.parametrize("bad", range(len(BAD)))
def test_bad_item_in_every_position(small_chunks, bad):
    make, exc, message = BAD[bad]
    good = [(b"key %d" % i, b"value %d" % i) for i in range(40)]
    for pos in range(len(good)):
        pairs = list(good)
        pairs[pos] = make(pos)
        for workers in (1, 2, 3):
            for form in (tuple, list, iter):
                with pytest.raises(exc) as info:
                    build_root(form(pairs), workers=workers, shard_nibbles=1)
                assert str(info.value) == message % pos, (pos, workers, form)


def test_first_bad_item_is_reported(small_chunks):
    # Two bad items read by different threads: the error is the earlier one's, as a serial read would give.
    pairs = [(b"key %d" % i, b"value %d" % i) for i in range(60)]
    for first, second in ((3, 50), (20, 21), (6, 7), (0, 59)):
        bad = list(pairs)
        bad[first] = ("str", b"v")
        bad[second] = 7
        for workers in (2, 3, 4):
            with pytest.raises(TypeError, match="pair %d: key" % first):
                build_root(tuple(bad), workers=workers, shard_nibbles=1)


def test_bytes_like_items_in_every_position(small_chunks):
    rng = random.Random(9)
    pairs = [(bytes(rng.getrandbits(8) for _ in range(8)), b"v%d" % i) for i in range(30)]
    want = trie_root(pairs)
    for pos in range(len(pairs)):
        mixed = list(pairs)
        k, v = mixed[pos]
        mixed[pos] = [bytearray(k), memoryview(v)] if pos % 2 else (memoryview(k), bytearray(v))
        for workers in (1, 3):
            assert build_root(tuple(mixed), workers=workers, shard_nibbles=2) == want


def test_progress_counts_every_pair(small_chunks):
    pairs = _dup_heavy(11, n=123)
    for workers in (1, 2):
        for form in (tuple, iter):
            seen = []
            part = Partition(1, None, 0)
            try:
                read_pairs(part, form(pairs), seen.append, workers)
            finally:
                part.close()
            assert sum(seen) == len(pairs)


def test_spilling_with_readers(small_chunks, tmp_path):
    pairs = _dup_heavy(12, n=500)
    want = trie_root(pairs)
    for workers in (1, 2, 3):
        assert build_root(tuple(pairs), workers=workers, shard_nibbles=2, spill_dir=str(tmp_path),
                          memory_limit=200) == want
        assert build_root(iter(pairs), workers=workers, shard_nibbles=1, spill_dir=str(tmp_path),
                          memory_limit=200) == want
    assert list(tmp_path.iterdir()) == []


def _shards(pairs, readers, k=2, calls=1):
    part = Partition(k, None, 0)
    try:
        step = -(-len(pairs) // calls)
        for lo in range(0, len(pairs), step):
            read_pairs(part, tuple(pairs[lo:lo + step]), None, readers)
        return [part.shard_bytes(s) for s in range(16 ** k)], dict(part.short_keys)
    finally:
        part.close()


@pytest.mark.parametrize("calls", [1, 3])
def test_shard_records_same_for_every_reader_count(small_chunks, calls):
    # Whatever the readers and however the input was split, each shard's records come out in input order, byte
    # for byte (what process pools and Dask workers are sent), and a second read_pairs appends after the first.
    pairs = _dup_heavy(13, n=700)
    want = _shards(pairs, 1, calls=calls)
    assert sum(len(b) for b in want[0]) > 0
    for readers in (2, 3, 5):
        assert _shards(pairs, readers, calls=calls) == want, readers


def test_process_pool_after_split_read(small_chunks):
    pairs = _dup_heavy(14, n=300)
    want = trie_root(pairs)
    with process_pool(2) as pool:
        assert build_root(tuple(pairs), workers=2, shard_nibbles=1, executor=pool) == want


def test_reader_threads_are_bounded_by_the_input():
    # Every extra reader owns 16^k shard arenas: 256 workers over 10 pairs at k=4 once took about 400 MiB.
    import tracemalloc

    pairs = [(bytes([i]) * 32, b"v%d" % i) for i in range(10)]
    want = Trie()
    for k, v in pairs:
        want.update(k, v)
    tracemalloc.start()
    try:
        got = build_root(pairs, workers=256, shard_nibbles=4)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == want.hash()
    assert peak < 32 << 20, "peak %d MiB" % (peak >> 20)
