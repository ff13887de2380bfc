"""build_root: exactly Trie's root for unsorted input, for every shard prefix length, threads, spilling, executors."""
import os
import random
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpt import EMPTY_ROOT, build_root, keccak256
from mpt.bench import workloads
from mpt.ethereum.parallel import build_shard_records, choose_shard_nibbles

from conftest import process_pool, root_of

KS = [0, 1, 2, 3]


def check(pairs, **kw):
    want = root_of(pairs)
    for k in KS:
        for workers in (1, 2):
            got = build_root(list(pairs), shard_nibbles=k, workers=workers, **kw)
            assert got == want, "k=%d workers=%d: %s != %s" % (k, workers, got.hex(), want.hex())
    return want


def test_zero_one_two_keys():
    assert check([]) == EMPTY_ROOT
    assert build_root([]) == EMPTY_ROOT
    check([(b"\x12\x34", b"v")])
    check([(b"\x12\x34", b"v" * 40)])
    check([(b"", b"empty key")])
    check([(b"\x12\x34", b"a"), (b"\x12\x35", b"b")])
    check([(b"\x12\x34", b"a" * 40), (b"\xf2\x35", b"b" * 40)])
    check([(b"\x12", b"a"), (b"\x12\x35", b"b")])           # a key that is a prefix of another


def _rand(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def test_all_keys_in_one_shard():
    rng = random.Random(1)
    check([(b"\xab\xcd" + _rand(rng, 30), _rand(rng, rng.choice([1, 5, 40, 100]))) for _ in range(300)])


def test_one_key_per_shard():
    # One key under each of the 16**k prefixes for k = 1..3: each shard is a single leaf above the shard level.
    rng = random.Random(2)
    for k in (1, 2, 3):
        pairs = []
        for p in range(16 ** k):
            prefix = (p << (4 * (4 - k))).to_bytes(2, "big")
            pairs.append((prefix + _rand(rng, 10), _rand(rng, rng.choice([1, 3, 40]))))
        rng.shuffle(pairs)
        check(pairs)


def test_long_shared_prefixes_across_shard_boundaries():
    rng = random.Random(3)
    pairs = []
    for base in (b"\x00\x00\x00\x00", b"\x0f\xff\xff", b"\x10\x00\x00", b"\xff\xff\xff\xff"):
        for _ in range(20):
            pairs.append((base + _rand(rng, 2), _rand(rng, rng.choice([1, 2, 50]))))
    pairs.append((b"\x00", b"short"))
    pairs.append((b"\x00\x00", b"shorter than k=3"))
    rng.shuffle(pairs)
    check(pairs)


def test_small_values_make_embedded_nodes_at_every_level():
    # 1-byte values on 2-byte keys: leaves and even branches are under 32 bytes and embedded in their parents.
    pairs = [(bytes([a, b]), bytes([b])) for a in (0, 1, 0x10, 0xff) for b in range(0, 256, 17)]
    random.Random(4).shuffle(pairs)
    check(pairs)
    check([(b"\x01\x02", b"\x01"), (b"\x01\x03", b"\x02")])


def test_duplicates_last_wins_and_empty_deletes():
    rng = random.Random(5)
    keys = [_rand(rng, 32) for _ in range(200)]
    pairs = []
    for i in range(1000):
        k = rng.choice(keys)
        pairs.append((k, b"" if rng.random() < 0.2 else _rand(rng, rng.choice([1, 40]))))
    check(pairs)
    # Everything deleted again: the empty root.
    assert check([(b"a", b"1"), (b"b", b"2"), (b"a", b""), (b"b", b"")]) == EMPTY_ROOT
    check([(b"a", b""), (b"a", b"back")])
    check([(b"\x01", b""), (b"\x01\x02", b"x")])           # deleting a short key that never existed


def test_variable_length_keys_with_prefixes():
    rng = random.Random(6)
    pairs = []
    for _ in range(400):
        n = rng.choice([0, 1, 1, 2, 3, 5, 8])
        pairs.append((bytes(rng.choice([0, 1, 0x10, 0x11]) for _ in range(n)), _rand(rng, rng.choice([1, 2, 33]))))
    check(pairs)


pair_lists = st.lists(
    st.tuples(st.binary(min_size=0, max_size=5) | st.binary(min_size=32, max_size=32),
              st.binary(min_size=0, max_size=40)),
    max_size=60,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair_lists, st.integers(0, 3))
def test_property_equals_trie(pairs, k):
    assert build_root(pairs, shard_nibbles=k, workers=2) == root_of(pairs)


@pytest.mark.parametrize("n", [20, 1000, 10000])
def test_make_accounts_roots(n):
    addresses, values = workloads.make_accounts(n)
    pairs = list(zip(workloads.account_keys(addresses), values))
    random.Random(n).shuffle(pairs)
    for k in KS:
        assert build_root(pairs, shard_nibbles=k, workers=2) == workloads.ACCOUNT_ROOTS[n]
    assert build_root(iter(pairs)) == workloads.ACCOUNT_ROOTS[n]        # a generator: size unknown
    assert build_root(dict(pairs)) == workloads.ACCOUNT_ROOTS[n]        # a mapping: its items


def test_spilling_with_a_tiny_memory_budget(tmp_path):
    addresses, values = workloads.make_accounts(1000)
    pairs = list(zip(workloads.account_keys(addresses), values))
    pairs += [(pairs[3][0], b""), (pairs[7][0], b"new value")]    # a deletion and an update after spills
    want = root_of(pairs)
    for k in KS:
        got = build_root(iter(pairs), shard_nibbles=k, workers=2, spill_dir=str(tmp_path), memory_limit=4096)
        assert got == want
    assert os.listdir(tmp_path) == []           # the run files are gone


def test_spill_files_are_used(tmp_path):
    from mpt.ethereum.shards.partition import Partition
    from mpt.ethereum.shards.read import read_pairs

    part = Partition(1, str(tmp_path), 1000)
    read_pairs(part, [(bytes([i]) * 32, b"v" * 50) for i in range(100)])
    part.finish_input()
    assert part.spilled > 5
    assert sum(len(part.shard_bytes(s)) for s in range(16)) == 100 * (8 + 32 + 50)
    part.close()


@pytest.mark.slow                               # process pools: kept out of the (slow-forking) ASan run
def test_executors_give_the_same_root():
    rng = random.Random(7)
    pairs = [(_rand(rng, 32), _rand(rng, 60)) for _ in range(3000)]
    want = root_of(pairs)
    with ThreadPoolExecutor(2) as pool:
        assert build_root(pairs, executor=pool, shard_nibbles=2) == want
    with process_pool(2) as pool:
        assert build_root(pairs, executor=pool, shard_nibbles=1) == want


def _die(*args):
    os._exit(3)


@pytest.mark.slow
def test_a_dead_worker_raises():
    from concurrent.futures.process import BrokenProcessPool

    import mpt.ethereum.parallel as parallel

    pairs = [(bytes([i]) * 32, b"v" * 40) for i in range(64)]
    with ProcessPoolExecutor(1) as pool:
        original = parallel.build_shard_many
        parallel.build_shard_many = _die        # the task the pool runs kills its process
        try:
            with pytest.raises(BrokenProcessPool):
                build_root(pairs, executor=pool, shard_nibbles=1)
        finally:
            parallel.build_shard_many = original


def test_bad_input():
    with pytest.raises(TypeError, match="pair 1: key must be a bytes-like object, not str"):
        build_root([(b"a", b"1"), ("b", b"2")])
    with pytest.raises(TypeError, match="pair 0: value must be a bytes-like object, not int"):
        build_root([(b"a", 5)])
    with pytest.raises(TypeError, match="pair 0: expected a \\(key, value\\) pair"):
        build_root([b"abc"])
    with pytest.raises(TypeError, match="pair 0: expected a \\(key, value\\) pair"):
        build_root([(b"a", b"1", b"2")])
    with pytest.raises(ValueError, match="shard_nibbles"):
        build_root([], shard_nibbles=5)
    with pytest.raises(ValueError, match="workers"):
        build_root([], workers=0)
    with pytest.raises(TypeError, match="executor"):
        build_root([], executor=object())
    with pytest.raises(FileNotFoundError):
        build_root([], spill_dir="/nonexistent/dir")
    # Bytes-likes are fine.
    assert build_root([(bytearray(b"a"), memoryview(b"1"))]) == root_of([(b"a", b"1")])


def test_shard_records_task():
    rec = b"".join(len(k).to_bytes(4, "little") + len(v).to_bytes(4, "little") + k + v
                   for k, v in [(b"\x01\x02", b"a" * 40), (b"\x01\x03", b"b" * 40)])
    kind, depth, ref, key, value, count = build_shard_records(rec)
    assert count == 2 and depth == 3 and len(ref) == 33
    with pytest.raises(ValueError, match="malformed"):
        build_shard_records(rec[:-1])


def test_choose_shard_nibbles():
    assert choose_shard_nibbles(100, 1) == 0
    assert choose_shard_nibbles(1000, 2) == 1
    assert choose_shard_nibbles(10 ** 6, 2) == 2
    assert choose_shard_nibbles(10 ** 9, 2) == 4
    assert choose_shard_nibbles(None, 2, spilling=True) == 3


def test_progress_bars(capsys):
    pairs = [(keccak256(bytes([i])), b"v" * 40) for i in range(100)]
    assert build_root(pairs, progress=True) == root_of(pairs)


@pytest.mark.parametrize("order", ["sorted", "reversed", "organ", "same_head", "one_key", "shuffled"])
def test_shard_sort_orders(order):
    # The shard sort (quicksort, insertion sort, a qsort fallback past a depth limit) on inputs that defeat naive
    # pivots: sorted, reversed, organ-pipe, equal 8-byte heads (ties go to the rest of the key), one key rewritten
    # thousands of times (ties go to the input position: the last write must win).
    rng = random.Random(order)
    if order == "same_head":
        pairs = [(b"\x11" * 8 + _rand(rng, rng.choice([0, 1, 3, 24])), b"v%d" % i) for i in range(3000)]
    elif order == "one_key":
        pairs = [(b"\x22" * 32, b"v%d" % i) for i in range(3000)] + [(b"\x22" * 31, b"x")]
    else:
        pairs = sorted((_rand(rng, 32), _rand(rng, 40)) for _ in range(3000))
        if order == "reversed":
            pairs.reverse()
        elif order == "organ":
            pairs = pairs[::2] + pairs[1::2][::-1]
        elif order == "shuffled":
            rng.shuffle(pairs)
    want = root_of(pairs)
    for k in (0, 1):
        assert build_root(pairs, shard_nibbles=k, workers=1) == want
