"""Threads: what docs/threads.rst promises, each with 8 threads.

Independent tries (and StackTries, derive_sha) in threads give the right roots, with the batched hasher
too; readers share one committed, lazily loading trie, and one trie that nobody has hashed yet; proofs verify
concurrently; one MemoryDB takes the commits of several threads; one LMDBStore serves readers while a writer
commits and grows its map; a HasherPool never hands one hasher to two threads.
"""
import os
import pathlib
import random
import re
import threading

import pytest

import mpt
from mpt import SecureTrie, StackTrie, Trie, derive_sha, verify_proof, verify_range_proof
from mpt.ethereum._reference import secure_trie_root, trie_root
from mpt.db import MemoryDB
from mpt.ethereum.hasher import HasherPool, get_default_pool
from mpt.core.runtime import set_hash_threads

from conftest import in_background, run_in_threads, trie_of


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
                t = trie_of(models[i])
                assert t.hash() == _stack_root(models[i]) == expected[i]
                assert derive_sha(list(models[i].values())) == derive_sha(list(models[i].values()))
            results[i] = t.hash()
        return run

    run_in_threads([worker(i) for i in range(8)])
    assert results == expected


def _read_and_prove(shared, root, model, keys, rng, reads, prove_share):
    """One reader thread's work: reads random gets from the shared trie, each checked against model, about
    prove_share of them also proven and verified against root; then the trie's hash must be root."""
    for _ in range(reads):
        k = rng.choice(keys)
        assert shared.get(k) == model[k]
        if rng.random() < prove_share:
            assert verify_proof(root, k, shared.prove(k)) == model[k]
    assert shared.hash() == root


def test_readers_share_a_committed_trie():
    rng = random.Random(99)
    model = {rng.randbytes(32): rng.randbytes(50) for _ in range(3000)}
    db = MemoryDB()
    t = trie_of(model, db)
    root = t.commit()
    shared = Trie(db, root)          # nodes load lazily while the readers race through it
    keys = list(model)

    def reader(seed):
        return lambda: _read_and_prove(shared, root, model, keys, random.Random(seed), 400, 0.1)

    run_in_threads([reader(s) for s in range(8)])
    assert dict(shared.items()) == model


def _models(count, size, seed):
    out = []
    for i in range(count):
        rng = random.Random(seed + i)
        out.append({rng.randbytes(32): rng.randbytes(rng.choice([1, 20, 40, 100])) for _ in range(size)})
    return out


def _stack_root(model):
    s = StackTrie()
    for k in sorted(model):
        s.update(k, model[k])
    return s.hash()


def test_level_parallel_hashing_in_threads(hash_threads):
    # 3000 keys: several batches for the batched (level) hasher, with levels wide enough to be split over its
    # two OpenMP worker threads (in each of the 8 Python threads in turn).
    models = _models(8, 3000, 1000)
    expected = [_stack_root(m) for m in models]
    results = [[] for _ in range(8)]

    def worker(i):
        def run():
            for round_ in range(3):
                t = trie_of(models[i])
                if round_ == 1:
                    # The level path on purpose, on a hasher of this thread's own.
                    pool = get_default_pool()
                    h = pool.get()
                    try:
                        results[i].append(h.hash_by_levels(t.root_node, hash_threads))
                    finally:
                        pool.put(h)
                results[i].append(t.hash())
                s = SecureTrie()
                for k, v in list(models[i].items())[:300]:
                    s[k] = v
                results[i].append((s.hash(), secure_trie_root(list(models[i].items())[:300])))
        return run

    run_in_threads([worker(i) for i in range(8)])
    for i in range(8):
        assert [r for r in results[i] if isinstance(r, bytes)] == [expected[i]] * 4
        assert all(a == b for a, b in (r for r in results[i] if isinstance(r, tuple)))


def test_readers_hash_a_shared_unhashed_trie(hash_threads):
    # Nobody mutates the trie, but nobody hashed it either: the readers race to fill the node hash caches
    # (each cache goes from empty to its one possible value), on the batched path with 2 OpenMP threads.
    (model,) = _models(1, 4000, 77)
    expected = _stack_root(model)
    for _ in range(3):
        shared = trie_of(model)
        keys = list(model)
        barrier = threading.Barrier(8)

        def reader(seed):
            def run():
                r = random.Random(seed)
                barrier.wait()
                if seed % 2:
                    assert shared.hash() == expected
                _read_and_prove(shared, expected, model, keys, r, 100, 0.2)
            return run

        run_in_threads([reader(s) for s in range(8)])


def test_proofs_verify_concurrently():
    rng = random.Random(3)
    model = {rng.randbytes(32): rng.randbytes(rng.choice([1, 33, 80])) for _ in range(2000)}
    t = trie_of(model)
    root = t.hash()
    keys = sorted(model)
    proofs = [(k, t.prove(k)) for k in keys[:400]]
    absent = [rng.randbytes(32) for _ in range(100)]
    absent_proofs = [(k, t.prove(k)) for k in absent]
    first, last = keys[100], keys[140]
    range_proof = t.prove_many([first, last])

    def verifier(seed):
        def run():
            r = random.Random(seed)
            for _ in range(300):
                k, proof = r.choice(proofs)
                assert verify_proof(root, k, proof) == model[k]
                k, proof = r.choice(absent_proofs)
                assert verify_proof(root, k, proof) is None
            for _ in range(20):
                assert verify_range_proof(root, first, keys[100:141], [model[k] for k in keys[100:141]],
                                          range_proof) is True
        return run

    run_in_threads([verifier(s) for s in range(8)])


def test_threads_commit_into_one_memorydb():
    models = _models(8, 800, 500)
    db = MemoryDB()
    roots = [None] * 8

    def writer(i):
        def run():
            t = Trie(db)
            items = list(models[i].items())
            for n in range(0, len(items), 100):      # several commits each, interleaved with the others'
                for k, v in items[n:n + 100]:
                    t[k] = v
                t.commit()
            roots[i] = t.hash()
        return run

    run_in_threads([writer(i) for i in range(8)])
    assert roots == [_stack_root(m) for m in models]

    def reader(i):
        def run():
            for j in range(8):
                t = Trie(db, roots[(i + j) % 8])
                assert dict(t.items()) == models[(i + j) % 8]
        return run

    run_in_threads([reader(i) for i in range(8)])


def test_lmdb_store_shared_by_a_writer_and_readers(tmp_path):
    pytest.importorskip("lmdb")
    from mpt.db import LMDBStore

    def version(n):
        rng = random.Random(n)
        return {rng.randbytes(20): rng.randbytes(rng.choice([3, 50])) for _ in range(200)}

    # A tiny map: the writer grows it again and again while the readers are inside read transactions.
    store = LMDBStore(str(tmp_path / "store"), map_size=64 << 10)
    published = []                          # (n, root), appended by the writer once committed
    first = threading.Event()
    done = threading.Event()

    def writer():
        try:
            t = Trie(store)
            for n in range(60):
                for k in list(t.keys()):
                    t.delete(k)
                for k, v in version(n).items():
                    t[k] = v
                published.append((n, t.commit(set_head=True)))
                first.set()
        finally:
            first.set()
            done.set()

    def reader(seed):
        def run():
            r = random.Random(seed)
            checked = 0
            first.wait()
            while not done.is_set() or checked < 5:
                n, root = r.choice(published)
                expected = version(n)
                t = Trie(store, root)
                for k in r.sample(sorted(expected), 20):
                    assert t[k] == expected[k]
                if r.random() < 0.2:
                    assert dict(t.items()) == expected
                checked += 1
        return run

    try:
        run_in_threads([writer] + [reader(s) for s in range(7)])
        assert store.resizes > 0
        assert store.head() == published[-1][1]
        last = version(59)
        shared = Trie(store, published[-1][1])      # one trie loading lazily from the store for 8 readers

        def read_all():
            for k, v in last.items():
                assert shared.get(k) == v

        run_in_threads([read_all] * 8)
        assert dict(shared.items()) == last
    finally:
        store.close()


def test_hasher_pool_never_hands_one_hasher_to_two_threads():
    pool = HasherPool(max_idle=3)
    in_use = set()
    lock = threading.Lock()

    def user():
        for _ in range(3000):
            h = pool.get()
            with lock:
                assert id(h) not in in_use
                in_use.add(id(h))
            with lock:
                in_use.remove(id(h))
            pool.put(h)

    run_in_threads([user for _ in range(8)])
    assert pool.idle <= 3


def test_lmdb_map_adoption_waits_for_the_writer(tmp_path):
    # When another process has grown the map, the first reader to notice adopts the new size (set_mapsize),
    # which LMDB refuses while a write transaction of this process is open. The reader must wait for the
    # writer instead of failing. The writer below does what LMDBStore._write does, paused inside its transaction.
    pytest.importorskip("lmdb")
    from mpt.db import LMDBStore

    store = LMDBStore(str(tmp_path / "store"), map_size=1 << 20)
    in_txn, release = threading.Event(), threading.Event()

    def writer():
        with store._write_lock:
            with store._env.begin(write=True) as txn:
                txn.put(b"\x01" * 32, b"node")
                in_txn.set()
                release.wait(10)

    def adopter():
        in_txn.wait(10)
        threading.Timer(0.2, release.set).start()
        store._adopt_map_size()

    try:
        run_in_threads([writer, adopter])
        assert store.get(b"\x01" * 32) == b"node"
    finally:
        store.close()


def test_copies_updated_and_committed_in_threads():
    # One base trie, committed; each thread updates and commits its own copy. The copies share their nodes
    # (and the database) with the base and with each other.
    base_model, *extra = _models(9, 600, 900)
    db = MemoryDB()
    base = Trie(db)
    for k, v in base_model.items():
        base[k] = v
    base_root = base.commit()
    for k, v in list(base_model.items())[:50]:      # uncommitted changes too: dirty nodes shared by the copies
        base[k] = v[::-1] + b"!"
    shared_model = dict(base_model)
    shared_model.update({k: v[::-1] + b"!" for k, v in list(base_model.items())[:50]})
    expected_models = []
    for i in range(8):
        m = dict(shared_model)
        m.update(extra[i])
        for k in list(base_model)[100 + 10 * i:110 + 10 * i]:
            del m[k]
        expected_models.append(m)
    roots = [None] * 8

    def worker(i):
        def run():
            t = base.copy()
            for k, v in extra[i].items():
                t[k] = v
            t.commit()
            for k in list(base_model)[100 + 10 * i:110 + 10 * i]:
                del t[k]
            roots[i] = t.commit()
        return run

    run_in_threads([worker(i) for i in range(8)])
    assert roots == [_stack_root(m) for m in expected_models]
    assert base.hash() == _stack_root(shared_model)
    assert dict(Trie(db, base_root).items()) == base_model
    for root, m in zip(roots, expected_models):
        assert dict(Trie(db, root).items()) == m


# ------------------------------------------------------------------------------------------------ the GIL audit

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "threads.rst"
PACKAGE = pathlib.Path(mpt.__file__).resolve().parent
_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|cdef|cpdef)\b[^(:=]*?(\w+)\s*\(")


def gil_release_sites():
    """``module.function`` of every function in the package's .pyx sources that releases the GIL."""
    sites = set()
    for path in sorted(PACKAGE.rglob("*.pyx")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        function = "<module>"
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0]
            m = _DEF.match(code)
            if m and not code.lstrip().startswith("cdef class"):
                function = m.group(1)
            if re.search(r"\bwith\s+nogil\b|\bnogil\s*=\s*True\b", code):
                sites.add("%s.%s" % (module, function))
    return sites


def test_every_gil_release_is_documented():
    if not DOCS.is_file():
        pytest.skip("docs/threads.rst is not in this checkout")
    sites = gil_release_sites()
    assert "mpt.core._keccak.binding.keccak256" in sites           # the scan itself works
    text = DOCS.read_text()
    undocumented = sorted(s for s in sites if "``%s``" % s not in text)
    assert not undocumented, "GIL released in functions docs/threads.rst does not cover: %s" % undocumented


# ---------------------------------------------------------------------------------------------------------------
# The busy-state contract: hash() and commit() run their hashing pass without the GIL; a write to the same trie
# meanwhile raises RuntimeError instead of racing, and copies sharing nodes hash concurrently.
# ---------------------------------------------------------------------------------------------------------------

class _MutatingDB(dict):
    """A plain-mapping database whose writes try to update the trie being committed (same thread)."""

    def __init__(self):
        super().__init__()
        self.trie = None
        self.errors = []

    def __setitem__(self, key, value):
        if self.trie is not None and not self.errors:
            try:
                self.trie[b"\x01" * 32] = b"sneaky"
            except RuntimeError as e:
                self.errors.append(e)
        super().__setitem__(key, value)


def test_write_during_commit_raises_and_changes_nothing():
    rng = random.Random(5)
    model = {rng.randbytes(32): rng.randbytes(40) for _ in range(300)}
    db = _MutatingDB()
    t = trie_of(model, db)
    db.trie = t
    root = t.commit()
    assert root == trie_root(model)
    assert len(db.errors) == 1
    assert "trie changed during commit()" in str(db.errors[0])
    assert "update()" in str(db.errors[0])
    db.trie = None
    # Nothing was changed, and the trie is writable again once commit() returned.
    assert t.hash() == root and t.get(b"\x01" * 32) is None
    t[b"\x01" * 32] = b"after"
    model[b"\x01" * 32] = b"after"
    assert t.hash() == trie_root(model)


class _PausingDB(MemoryDB):
    """A node database whose get() pauses (Python code: other threads run meanwhile) until told to go on."""

    def __init__(self):
        super().__init__()
        self.pause = False
        self.inside = threading.Event()
        self.go_on = threading.Event()

    def get(self, key, default=None):
        if self.pause:
            self.inside.set()
            self.go_on.wait(10)
        return super().get(key, default)


def test_hash_while_an_update_loads_nodes_raises():
    # An update that loads a node from a Python database lets other threads in halfway through; a hash() then
    # would read nodes that the update is still changing, without the GIL. It raises instead.
    rng = random.Random(6)
    model = {rng.randbytes(32): rng.randbytes(40) for _ in range(200)}
    db = _PausingDB()
    t = trie_of(model, db)
    root = t.commit()
    t = Trie(db, root)                              # nothing loaded: the updates below resolve from db
    first, key = sorted(model)[0], sorted(model)[-1]    # different first nibbles: different subtrees
    assert first[0] >> 4 != key[0] >> 4
    t.update(first, b"first")                       # the root is dirty now: hash() has work to do
    model[first] = b"first"
    db.pause = True
    with in_background(t.update, key, b"new", timeout=10):
        try:
            assert db.inside.wait(10)
            with pytest.raises(RuntimeError, match="hash\\(\\) called while an update or delete"):
                t.hash()
            with pytest.raises(RuntimeError, match="commit\\(\\) called while an update or delete"):
                t.commit()
        finally:
            db.pause = False
            db.go_on.set()
    model[key] = b"new"
    assert t.hash() == trie_root(model)


@pytest.mark.parametrize("hash_threads", [1, 2], indirect=True)
def test_writes_while_another_thread_hashes_raise(hash_threads):
    rng = random.Random(11)
    model = {rng.randbytes(32): rng.randbytes(60) for _ in range(30000)}
    expected = trie_root(model)
    for _attempt in range(5):
        t = trie_of(model)
        started = threading.Event()
        done = threading.Event()
        outcome = {"raised": 0, "applied": 0}

        def writer():
            started.wait()
            key = b"\x02" * 32
            while not done.is_set():
                try:
                    t.update(key, b"w")
                except RuntimeError as e:
                    assert "trie changed during hash()" in str(e)
                    outcome["raised"] += 1
                    continue
                outcome["applied"] += 1
                # Undo it, so that the trie hashes to the model's root whenever the hash started.
                try:
                    t.delete(key)
                except RuntimeError:
                    # hash() started in between: retry the delete once it is done.
                    while True:
                        try:
                            t.delete(key)
                            break
                        except RuntimeError:
                            outcome["raised"] += 1
                break

        with in_background(writer):
            started.set()
            root = t.hash()
            done.set()
        assert t.get(b"\x02" * 32) is None
        assert root == expected or outcome["applied"]
        assert t.hash() == expected
        if outcome["raised"]:
            return
    pytest.skip("the writer thread never ran while hash() did (scheduling)")


@pytest.mark.parametrize("threads", [1, 2])
def test_copies_sharing_nodes_hash_concurrently(threads):
    rng = random.Random(21)
    base = {rng.randbytes(32): rng.randbytes(rng.choice([5, 40, 100])) for _ in range(4000)}
    t = Trie()
    for k, v in base.items():
        t[k] = v
    models, copies = [], []
    for i in range(8):
        m = dict(base)
        c = t.copy()             # shares every (unhashed) node with t and the other copies
        r = random.Random(100 + i)
        for _ in range(50):
            k = r.randbytes(32)
            m[k] = c[k] = r.randbytes(30)
        models.append(m)
        copies.append(c)
    expected = [trie_root(m) for m in models]
    results = [None] * 8
    old = set_hash_threads(threads)
    try:
        def worker(i):
            def run():
                results[i] = copies[i].hash()
            return run
        run_in_threads([worker(i) for i in range(8)])
    finally:
        set_hash_threads(old)
    assert results == expected
    assert t.hash() == trie_root(base)


# ---------------------------------------------------------------------------------------------------------------
# fork() after OpenMP threads ran: libgomp's pool does not survive fork(), so a child entering a parallel region
# waited forever. The child now hashes on its calling thread (mpt.runtime._after_fork_in_child).
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("work", ["merkle", "trie"])
def test_forked_child_hashes_after_openmp_ran_in_parent(work):
    import time
    import warnings

    from mpt import merkle
    from mpt.merkle._reference import root as merkle_root
    from mpt.core.runtime import get_hash_threads

    leaves = [i.to_bytes(40, "big") for i in range(5000)]
    items = {i.to_bytes(32, "big"): b"v" * 40 for i in range(3000)}

    def run():
        if work == "merkle":
            return merkle.root(leaves)
        t = Trie()
        for k, v in items.items():
            t.update(k, v)
        return t.hash()

    want = merkle_root(leaves) if work == "merkle" else trie_root(items)
    old = set_hash_threads(2)
    try:
        assert run() == want            # the parent's OpenMP team now exists
        pid = os.fork()
        if pid == 0:                    # child: never return into pytest
            code = 1
            try:
                ok = get_hash_threads() == 1 and run() == want
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    set_hash_threads(2)     # refused with a warning: still 1
                ok = ok and get_hash_threads() == 1 and len(caught) == 1 and run() == want
                code = 0 if ok else 3
            finally:
                os._exit(code)
        deadline = time.monotonic() + 120
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the forked child hung hashing")
            time.sleep(0.05)
        assert os.waitstatus_to_exitcode(status) == 0
        assert get_hash_threads() == 2  # the parent keeps its setting
        assert run() == want
    finally:
        set_hash_threads(old)
