"""Hasher pool: buffers are reused, results do not depend on reuse order."""
import pytest

from mpt import FullNode, ShortNode, Trie, ValueNode
from mpt.ethereum._reference import trie_root
from mpt.ethereum.hasher import Hasher, HasherPool, get_default_pool


def test_pool_reuses_grown_buffers():
    pool = HasherPool()
    h = pool.get()
    assert h.buffer_capacity == 1024
    # A leaf with a 5000-byte value forces the buffer to grow while hashing it.
    h.hash(ShortNode(bytes([1, 16]), ValueNode(b"x" * 5000)))
    grown = h.buffer_capacity
    assert grown > 5000
    pool.put(h)
    assert pool.idle == 1
    again = pool.get()
    assert again is h and again.buffer_capacity == grown
    assert pool.idle == 0


def test_pool_is_bounded():
    pool = HasherPool(max_idle=2)
    hashers = [pool.get() for _ in range(5)]
    assert len({id(h) for h in hashers}) == 5
    for h in hashers:
        pool.put(h)
    assert pool.idle == 2


def test_results_do_not_depend_on_reuse():
    items = [{bytes([i, j]): b"v" * (j + 1) for j in range(40)} for i in range(8)]
    expected = [trie_root(d) for d in items]
    pool = get_default_pool()
    # Dirty the pooled hasher with a big encoding first, then hash the tries in two different orders.
    big = ShortNode(bytes([1, 16]), ValueNode(b"y" * 3000))
    h = pool.get()
    h.hash(big)
    pool.put(h)
    for order in (range(8), reversed(range(8))):
        for i in order:
            t = Trie()
            for k, v in items[i].items():
                t[k] = v
            assert t.hash() == expected[i]


def test_hasher_hash_matches_trie():
    t = Trie()
    for i in range(100):
        t[bytes([i]) * 4] = bytes([i]) * 10
    root = t.root_node
    expected = trie_root({bytes([i]) * 4: bytes([i]) * 10 for i in range(100)})
    assert Hasher().hash(root) == expected
    assert t.hash() == expected
    assert isinstance(root, FullNode)


def test_level_parallel_path_matches_recursive_hashing():
    import random

    from mpt.core.runtime import set_hash_threads, set_keccak_backend

    rng = random.Random(4)
    big = None
    for size, key_len, value_lens in [(3000, 32, (1, 40, 100)), (800, 3, (1, 2, 33)), (5, 32, (50,))]:
        model = {rng.randbytes(key_len): rng.randbytes(rng.choice(value_lens)) for _ in range(size)}
        expected = trie_root(model)
        big = big or (model, expected)
        for threads in (1, 2, 3):
            t = Trie()
            for k, v in model.items():
                t[k] = v
            assert Hasher().hash_by_levels(t.root_node, threads) == expected
            # Every node got the same cached hash as the recursive path gives (scalar backend, one thread:
            # Trie.hash() then never takes the batched path).
            t2 = Trie()
            for k, v in model.items():
                t2[k] = v
            old_backend = set_keccak_backend("scalar")
            old_threads = set_hash_threads(1)
            try:
                t2.hash()
            finally:
                set_keccak_backend(old_backend)
                set_hash_threads(old_threads)
            assert [h for _, h, _ in t.node_iter()] == [h for _, h, _ in t2.node_iter()]
    # Through Trie.hash(): a trie this large takes the parallel path once threads are allowed.
    model, expected = big
    old = set_hash_threads(2)
    try:
        t = Trie()
        for k, v in model.items():
            t[k] = v
        assert t.hash() == expected
    finally:
        set_hash_threads(old)


# ---------------------------------------------------------------------------------------------------------------
# Unknown node kinds: the batched pass reads nodes through their C layout, so anything but the four real kinds
# must be refused (it used to be read as a ShortNode and crash the process). In a subprocess: a regression would
# kill the interpreter, not just fail.
# ---------------------------------------------------------------------------------------------------------------

_UNKNOWN_NODES = r"""
import sys
from mpt.ethereum.node import FullNode, HashNode, Node, ShortNode, ValueNode
from mpt.ethereum.hasher import get_default_pool
from mpt.core.runtime import set_hash_threads

class Sub(Node):
    pass

h = get_default_pool().get()
for threads in (1, 2):
    set_hash_threads(threads)
    for bad in (Node(), Sub()):
        for call in (h.hash, h.hash_by_levels):
            try:
                call(bad)
            except TypeError as e:
                assert type(bad).__name__ in str(e), e
            else:
                sys.exit("hashed a bare %s" % type(bad).__name__)
for children in ([Node(), Node()] + [None] * 15, [Sub()] + [None] * 16):
    try:
        FullNode(children)
    except TypeError as e:
        assert "slot 0" in str(e), e
    else:
        sys.exit("FullNode took a bare node")
for bad in (Node(), Sub()):
    try:
        ShortNode(b"\x01", bad)
    except TypeError:
        pass
    else:
        sys.exit("ShortNode took a bare node")
# The real kinds still hash after the refusals (the pool's hasher is reusable).
leaf = ShortNode(bytes([1] * 10 + [16]), ValueNode(b"v" * 40))
assert h.hash(FullNode([leaf, HashNode(b"\x07" * 32)] + [None] * 15)) == bytes.fromhex(sys.argv[1])
print("ok")
"""


def test_unknown_node_types_raise_instead_of_crashing(tmp_path):
    import subprocess
    import sys

    from mpt import HashNode

    leaf = ShortNode(bytes([1] * 10 + [16]), ValueNode(b"v" * 40))
    want = get_default_pool().get().hash(FullNode([leaf, HashNode(b"\x07" * 32)] + [None] * 15))
    script = tmp_path / "unknown_nodes.py"
    script.write_text(_UNKNOWN_NODES)
    r = subprocess.run([sys.executable, str(script), want.hex()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.strip() == "ok"


_MANY_THREADS = r"""
import os
from mpt import Trie, merkle
from mpt.merkle._reference import root as ref_root
from mpt.ethereum._reference import trie_root
from mpt.core.runtime import set_hash_threads

set_hash_threads(256)
leaves = [i.to_bytes(10, "big") for i in range(2048)]
assert merkle.root(leaves) == ref_root(leaves)
items = {i.to_bytes(32, "big"): b"v" * 40 for i in range(3000)}
t = Trie()
for k, v in items.items():
    t.update(k, v)
assert t.hash() == trie_root(items)
# 2 chunks of merkle leaves, at most 16 subtrees under the root branch: not 256 OS threads.
print(len(os.listdir("/proc/self/task")))
"""


def test_thread_count_is_bounded(tmp_path):
    import os
    import subprocess
    import sys

    from mpt.core.runtime import get_hash_threads, set_hash_threads

    before = get_hash_threads()
    for n in (257, 2**31 - 1):
        with pytest.raises(ValueError):
            set_hash_threads(n)
    assert get_hash_threads() == before
    assert set_hash_threads(256) == before
    assert set_hash_threads(before) == 256
    script = tmp_path / "many_threads.py"
    script.write_text(_MANY_THREADS)
    env = dict(os.environ, MPT_HASH_THREADS="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    if os.path.isdir("/proc/self/task"):
        assert int(r.stdout) <= 20
