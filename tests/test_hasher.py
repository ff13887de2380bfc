"""Hasher pool: buffers are reused, results do not depend on reuse order."""
from mpt import FullNode, ShortNode, Trie, ValueNode
from mpt._reference import trie_root
from mpt.hasher import Hasher, HasherPool, get_default_pool


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

    from mpt.hasher import set_hash_threads, set_keccak_backend

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
