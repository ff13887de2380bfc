"""The batched hasher and the SIMD Keccak backends: every path gives the scalar path's hashes.

Backends this machine cannot run are skipped by name, so the file reports which lane counts were really tested
(avx2x8 runs the 8-lane scheduling on AVX2 hardware; avx512 needs a CPU with AVX-512F).
"""
import os
import random
import subprocess
import sys
from contextlib import contextmanager

import pytest
from Crypto.Hash import keccak as pycryptodome_keccak

from mpt import StackTrie
from mpt.core._keccak.binding import keccak256
from mpt.ethereum._reference import trie_root
from mpt.ethereum.hasher import Hasher, HasherPool, keccak256_many
from mpt.core.runtime import keccak_backend, keccak_backends, set_hash_threads, set_keccak_backend
from mpt.ethereum.node import ShortNode, ValueNode

from conftest import in_background, trie_of

ALL_BACKENDS = ["scalar", "avx2", "avx512", "avx2x8"]
LANES = {"scalar": 1, "avx2": 4, "avx512": 8, "avx2x8": 8}


def backend_param(name):
    return pytest.param(name, marks=pytest.mark.skipif(name not in keccak_backends(),
                                                       reason="%s not supported on this CPU" % name))


BACKENDS = [backend_param(name) for name in ALL_BACKENDS]


def reference_digest(data):
    return pycryptodome_keccak.new(digest_bits=256, data=data).digest()


@contextmanager
def hashing_config(backend, threads=1):
    old_backend = set_keccak_backend(backend)
    old_threads = set_hash_threads(threads)
    try:
        yield
    finally:
        set_keccak_backend(old_backend)
        set_hash_threads(old_threads)


def recursive_root(items):
    """Root and per-node hashes through the one-node-at-a-time recursive path (scalar, one thread)."""
    with hashing_config("scalar", 1):
        t = trie_of(items)
        root = t.hash()
    return root, node_hashes(t)


def node_hashes(t):
    return [h for _, h, _ in t.node_iter()]


# --- the backends themselves -------------------------------------------------------------------------------------

def widest_automatic():
    """The backend chosen when none is forced: avx2x8 is a test path, never chosen by itself."""
    available = keccak_backends()
    return "avx512" if "avx512" in available else "avx2" if "avx2" in available else "scalar"


def test_scalar_is_always_available_and_the_default_is_the_widest():
    available = keccak_backends()
    assert available[0] == "scalar"
    assert set(available) <= set(ALL_BACKENDS)
    if not os.environ.get("MPT_KECCAK_BACKEND"):
        assert keccak_backend() == widest_automatic()


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_count_and_tail_length(backend):
    # Every message count up to three full rounds of lanes plus a tail, and lengths on both sides of each block
    # boundary, so every lane sees every padding case and lanes finish at different steps.
    rng = random.Random(7)
    lengths = [0, 1, 7, 8, 31, 32, 33, 55, 56, 127, 128, 134, 135, 136, 137, 271, 272, 273, 408, 532, 1000]
    for count in range(3 * LANES[backend] + 2):
        messages = [rng.randbytes(rng.choice(lengths)) for _ in range(count)]
        assert keccak256_many(messages, backend) == [reference_digest(m) for m in messages]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_length_up_to_three_blocks(backend):
    rng = random.Random(8)
    messages = [rng.randbytes(n) for n in range(0, 3 * 136 + 2)]
    rng.shuffle(messages)
    assert keccak256_many(messages, backend) == [keccak256(m) for m in messages]


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_long_message_among_short_ones(backend):
    # The long one keeps its lane for many steps while the others cycle through the remaining lanes.
    rng = random.Random(9)
    messages = [rng.randbytes(40) for _ in range(30)]
    messages.insert(3, rng.randbytes(100_000))
    assert keccak256_many(messages, backend) == [keccak256(m) for m in messages]


def test_backend_names_are_checked():
    with pytest.raises(ValueError, match="unknown Keccak backend"):
        keccak256_many([b""], "sse9")
    with pytest.raises(ValueError, match="unknown Keccak backend"):
        set_keccak_backend("sse9")
    missing = [b for b in ALL_BACKENDS if b not in keccak_backends()]
    for name in missing:
        with pytest.raises(ValueError, match="not supported"):
            set_keccak_backend(name)
    with pytest.raises(TypeError):
        keccak256_many([b"ok", bytearray(b"no")])


def run_python(code, **env):
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env,
                          check=True)


def test_environment_variable_forces_a_backend():
    out = run_python("from mpt.core.runtime import keccak_backend; print(keccak_backend())",
                     MPT_KECCAK_BACKEND="scalar")
    assert out.stdout.strip() == "scalar"
    out = run_python("from mpt.core.runtime import keccak_backend; print(keccak_backend())", MPT_KECCAK_BACKEND="auto")
    assert out.stdout.strip() == widest_automatic()


def test_environment_variable_naming_an_unusable_backend_warns_and_falls_back():
    code = ("import warnings; warnings.simplefilter('always')\n"
            "from mpt.core.runtime import keccak_backend; print(keccak_backend())")
    out = run_python(code, MPT_KECCAK_BACKEND="sse9")
    assert "MPT_KECCAK_BACKEND ignored" in out.stderr
    assert out.stdout.strip() in keccak_backends()


# --- the batched hasher on every backend ---------------------------------------------------------------------------

TRIE_SHAPES = [
    # (entries, key length, value lengths): account-like, short keys (embedded nodes), long values (multi-block
    # leaves), a handful of entries
    (3000, 32, (70, 80)),
    (800, 3, (1, 2, 33)),
    (300, 20, (1, 200, 600)),
    (5, 32, (50,)),
    (40, 1, (1,)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("threads", [1, 2])
def test_batched_hashing_matches_the_recursive_path(backend, threads):
    rng = random.Random(4)
    for size, key_len, value_lens in TRIE_SHAPES:
        items = {rng.randbytes(key_len): rng.randbytes(rng.choice(value_lens)) for _ in range(size)}
        expected_root, expected_nodes = recursive_root(items)
        assert expected_root == trie_root(items)
        with hashing_config(backend, threads):
            t = trie_of(items)
            assert Hasher().hash_by_levels(t.root_node, threads) == expected_root
            assert node_hashes(t) == expected_nodes
            # And through Trie.hash(), which picks the batched path by size.
            assert trie_of(items).hash() == expected_root


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_rehash_after_changes(backend):
    # Only the changed paths are dirty: the batched pass must splice fresh hashes next to cached ones.
    rng = random.Random(5)
    items = {rng.randbytes(32): rng.randbytes(70) for _ in range(2000)}
    with hashing_config(backend):
        t = trie_of(items)
        t.hash()
        for step in range(20):
            for k in rng.sample(sorted(items), 30):
                if rng.random() < 0.3:
                    del items[k]
                    del t[k]
                else:
                    items[k] = rng.randbytes(rng.choice((1, 70, 300)))
                    t[k] = items[k]
            for _ in range(10):
                k = rng.randbytes(32)
                items[k] = rng.randbytes(70)
                t[k] = items[k]
            assert Hasher().hash_by_levels(t.root_node) == trie_root(items)


@pytest.mark.parametrize("backend", BACKENDS)
def test_values_replaced_in_unhashed_leaves(backend):
    # Before its first hash a trie owns its leaves and replaces a value in the same ShortNode (Trie._insert);
    # the pass reads the value through ShortNode.leaf_value, which must follow the new ValueNode.
    rng = random.Random(11)
    items = {rng.randbytes(32): rng.randbytes(70) for _ in range(3000)}
    with hashing_config(backend):
        t = trie_of(items)
        for k in list(items)[::2]:
            items[k] = rng.randbytes(rng.choice((1, 31, 33, 70, 200)))
            t[k] = items[k]
        assert t.hash() == trie_root(items)
        assert [t[k] for k in items] == list(items.values())


def test_batched_hashing_of_a_deep_trie():
    # Keys that are prefixes of each other's paths make a chain of branch nodes thousands of levels deep.
    items = {b"\x11" * i + b"\x22": b"v%d" % i for i in range(1, 600)}
    expected_root, expected_nodes = recursive_root(items)
    t = trie_of(items)
    assert Hasher().hash_by_levels(t.root_node) == expected_root
    assert node_hashes(t) == expected_nodes


def test_small_root_is_hashed_whatever_its_size():
    t = trie_of({b"a": b"b"})
    assert Hasher().hash_by_levels(t.root_node) == trie_root({b"a": b"b"})


@pytest.mark.parametrize("backend", BACKENDS)
def test_stack_trie_batches_its_leaves(backend):
    rng = random.Random(6)
    for size, value_lens in ((200, (100, 120)), (3000, (1, 40, 200)), (17, (1,))):
        items = dict(sorted({rng.randbytes(rng.choice((1, 2, 32))): rng.randbytes(rng.choice(value_lens))
                             for _ in range(size)}.items()))
        # Drop keys that are prefixes of others: a stack trie cannot hold them.
        keys = sorted(items)
        items = {k: items[k] for i, k in enumerate(keys) if i + 1 == len(keys) or not keys[i + 1].startswith(k)}
        with hashing_config(backend):
            st = StackTrie()
            streamed = []
            st_streaming = StackTrie(on_node=lambda *node: streamed.append(node))
            for k, v in items.items():
                st.update(k, v)
                st_streaming.update(k, v)
            assert st.hash() == st_streaming.hash() == trie_root(items)


def test_pool_drops_oversized_scratch():
    pool = HasherPool()
    h = pool.get()
    h.hash(ShortNode(bytes([1, 16]), ValueNode(b"x" * (16 << 20))))
    assert h.buffer_capacity > 16 << 20
    pool.put(h)
    again = pool.get()
    assert again is h and again.buffer_capacity <= 4 << 20


def test_openmp_workers_sleep_unless_the_user_chose_otherwise():
    # Spinning OpenMP workers on busy cores cost whole scheduler slices per batch (mpt/__init__.py).
    code = "import os, mpt; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "PASSIVE"
    assert run_python(code, OMP_WAIT_POLICY="ACTIVE").stdout.strip() == "ACTIVE"


# ---------------------------------------------------------------------------------------------------------------
# The pass split over hash_threads: the subtrees under the first branch, found below an extension root too.
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("hash_threads", [1, 2, 3, 8], indirect=True)
@pytest.mark.parametrize("shape", ["branch_root", "extension_root", "one_dirty_child", "tiny"])
def test_split_over_threads_matches_reference(hash_threads, shape):
    rng = random.Random(hash((hash_threads, shape)) & 0xFFFF)
    if shape == "branch_root":
        model = {rng.randbytes(32): rng.randbytes(rng.choice([1, 20, 40, 200])) for _ in range(3000)}
    elif shape == "extension_root":
        # Every key starts with the same 3 bytes: the root is an extension over the first branch.
        model = {b"\xab\xcd\xef" + rng.randbytes(29): rng.randbytes(rng.choice([3, 50])) for _ in range(3000)}
    elif shape == "one_dirty_child":
        model = {rng.randbytes(32): rng.randbytes(40) for _ in range(2000)}
    else:
        model = {b"\x01": b"a", b"\x02": b"b"}      # everything embedded in a root under 32 bytes... or not
    t = trie_of(model)
    assert t.hash() == trie_root(model)
    if shape == "one_dirty_child":
        # After one update only one path under the root branch is dirty.
        k = next(iter(model))
        model[k] = t[k] = b"changed"
        assert t.hash() == trie_root(model)


def test_hash_releases_the_gil():
    """Another Python thread runs while hash() hashes (it could not while the pass kept the GIL)."""
    import threading
    import time

    rng = random.Random(3)
    model = {rng.randbytes(32): rng.randbytes(80) for _ in range(60000)}
    counts = []
    for _attempt in range(3):
        t = trie_of(model)
        hashing = threading.Event()
        stop = threading.Event()
        ticks = [0]

        def spin():
            while not stop.is_set():
                if hashing.is_set():
                    ticks[0] += 1
                time.sleep(0)

        with in_background(spin):
            time.sleep(0.01)
            hashing.set()
            root = t.hash()
            hashing.clear()
            stop.set()
        assert root == trie_root(model)
        counts.append(ticks[0])
        if ticks[0] >= 50:
            return
    pytest.fail("no other thread ran during hash(): %s" % counts)
