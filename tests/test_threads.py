"""Threads: independent tries in 8 threads give the right roots; 8 readers share one committed trie."""
import random
import threading

from mpt import StackTrie, Trie, derive_sha, verify_proof
from mpt._reference import trie_root
from mpt.db import MemoryDB


def _run(workers):
    errors = []

    def guard(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_independent_tries_in_threads():
    models = []
    for seed in range(8):
        rng = random.Random(seed)
        models.append({rng.randbytes(32): rng.randbytes(rng.choice([1, 40, 100])) for _ in range(1500)})
    expected = [trie_root(m) for m in models]
    results = [None] * 8

    def worker(i):
        def run():
            for _ in range(3):
                t = Trie()
                for k, v in models[i].items():
                    t[k] = v
                s = StackTrie()
                for k in sorted(models[i]):
                    s.update(k, models[i][k])
                assert t.hash() == s.hash() == expected[i]
                assert derive_sha(list(models[i].values())) == derive_sha(list(models[i].values()))
            results[i] = t.hash()
        return run

    _run([worker(i) for i in range(8)])
    assert results == expected


def test_readers_share_a_committed_trie():
    rng = random.Random(99)
    model = {rng.randbytes(32): rng.randbytes(50) for _ in range(3000)}
    db = MemoryDB()
    t = Trie(db)
    for k, v in model.items():
        t[k] = v
    root = t.commit()
    shared = Trie(db, root)          # nodes load lazily while the readers race through it
    keys = list(model)

    def reader(seed):
        def run():
            r = random.Random(seed)
            for _ in range(400):
                k = r.choice(keys)
                assert shared.get(k) == model[k]
                if r.random() < 0.1:
                    assert verify_proof(root, k, shared.prove(k)) == model[k]
            assert shared.hash() == root
        return run

    _run([reader(s) for s in range(8)])
    assert dict(shared.items()) == model
