"""Leaks: a million mixed operations leave memory flat, and the hasher pool stays bounded.

One deterministic workload drives the public API over a small trie (a few hundred keys, so each operation is
cheap and a million of them fit in CI): insert, delete, get, hash, commit, prove, verify_proof (good and
truncated proofs), StackTrie builds, copy, derive_sha, SecureTrie updates, partial iteration, a lookup that
raises MissingNodeError, now and then a whole trie rebuilt and hashed by the batched hasher (on two OpenMP
threads half of the time), and, every ``SWAP_EVERY`` operations, a commit whose reachable nodes are copied
into a fresh MemoryDB from which the trie is reopened (it then loads lazily). Dropping the old database at a
fixed cadence keeps the expected memory constant, so whatever grows from one sample to the next is a leak.

* ``test_a_million_mixed_operations_keep_rss_flat``: a million operations, the resident anonymous memory
  (``RssAnon`` of ``/proc/self/status``: heap and private mappings, no file pages) sampled every 50,000 after
  a garbage collection; after a warm-up it must stay within a few MiB and show no upward trend.
* ``test_mixed_operations_keep_traced_memory_flat``: a shorter run under ``tracemalloc`` (slower, but exact to
  the byte and able to say *where* memory grew): the traced size must stay flat after its warm-up.
* the hasher pool: ``HasherPool(max_idle=n)`` keeps at most n idle hashers however many were handed out, the
  default pool stays bounded under many StackTries and threads, and a hasher whose buffer grew for a huge node
  does not keep that memory once it is back in the pool.
"""
import collections
import gc
import json
import os
import pathlib
import random
import subprocess
import sys
import threading
import time
import tracemalloc

import pytest

import mpt
from mpt import MissingNodeError, ProofError, SecureTrie, StackTrie, Trie, derive_sha, verify_proof
from mpt.ethereum._reference import secure_trie_root, trie_root
from mpt.db import MemoryDB
from mpt.ethereum.inspect import copy_reachable
from mpt.ethereum.hasher import HasherPool, get_default_pool

MiB = 1 << 20
PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)

SEED = 20240608
SWAP_EVERY = 5_000                  # operations between database swaps (samples are taken right after one)

# The RSS run: a million operations, sampled every 50,000; the first 200,000 are the warm-up.
TOTAL_OPS = 1_000_000
RSS_SAMPLE_EVERY = 50_000
RSS_WARMUP = 200_000
RSS_MAX_GROWTH = 3 * MiB            # highest sample after warm-up, above the first one
RSS_MAX_TREND = 3 * MiB // 2        # mean of the last quarter of samples, above the mean of the first quarter

# The tracemalloc run: shorter, as tracing makes the workload about 7 times slower.
TM_OPS = 100_000
TM_SAMPLE_EVERY = 10_000
TM_WARMUP = 20_000
TM_MAX_GROWTH = 256 << 10
TM_MAX_TREND = 128 << 10

VALUE_SIZES = (1, 1, 3, 20, 31, 32, 33, 64, 120, 600)     # embedded, borderline and hashed leaves


def rss_anon():
    """Resident anonymous memory of this process, in bytes (None where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
        with open("/proc/self/statm") as f:       # older kernels: resident minus file-backed pages
            _, resident, shared = (int(x) for x in f.read().split()[:3])
        return (resident - shared) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


class Workload:
    """The mixed-operation driver. ``run(n)`` performs at least n operations (one per public call) then swaps."""

    def __init__(self, seed, oracle_every=10):
        rng = self.rng = random.Random(seed)
        self.oracle_every = oracle_every            # swaps between full checks against the reference (0: none)
        self.long_keys = [rng.randbytes(32) for _ in range(320)]
        # Short keys that are prefixes of one another: values in branch value slots.
        short = [bytes(p) for n in (1, 2, 3) for p in _products((0x10, 0x11), n)]
        self.keys = self.long_keys + short
        self.db = MemoryDB()
        self.trie = Trie(self.db)
        self.model = {}
        self.secure = SecureTrie()                      # a second, smaller trie: the hashed-key variant
        self.secure_model = {}
        self.proofs = collections.deque(maxlen=64)      # (root, key, proof, expected value)
        self.ops = 0
        self.swaps = 0
        self.counts = collections.Counter()

    def run(self, n):
        target = self.ops + n
        while self.ops < target:
            self.ops += self.step()
        self.swap()

    def swap(self):
        """Commit, copy what the root reaches into a fresh MemoryDB, drop the old one and reopen lazily."""
        root = self.trie.commit()
        fresh = MemoryDB()
        copy_reachable(self.db, fresh, root)
        self.db = fresh
        self.trie = Trie(fresh, root)
        self.proofs.clear()
        self.swaps += 1
        self.ops += 3
        if self.oracle_every and self.swaps % self.oracle_every == 0:  # the oracle is pure Python: now and then
            assert dict(self.trie.items()) == self.model
            assert self.trie.hash() == trie_root(self.model)
            assert self.secure.hash() == secure_trie_root(self.secure_model)

    def step(self):
        rng, t, model = self.rng, self.trie, self.model
        r = rng.random()
        if r < 0.30:
            k = rng.choice(self.keys)
            v = rng.randbytes(rng.choice(VALUE_SIZES))
            t[k] = v
            model[k] = v
            self.counts["insert"] += 1
            return 1
        if r < 0.42:
            k = rng.choice(self.keys)
            t.delete(k)
            model.pop(k, None)
            self.counts["delete"] += 1
            return 1
        if r < 0.50:
            k = rng.choice(self.keys)
            assert t.get(k) == model.get(k)
            self.counts["get"] += 1
            return 1
        if r < 0.58:
            t.hash()
            self.counts["hash"] += 1
            return 1
        if r < 0.62:
            if rng.random() < 0.25:
                root, leaves = t.commit(collect_leaves=True, set_head=True)
                assert self.db.head() == root and len(leaves) <= len(model)
            else:
                t.commit()
            self.counts["commit"] += 1
            return 1
        if r < 0.70:
            k = rng.choice(self.keys)
            self.proofs.append((t.hash(), k, t.prove(k), model.get(k)))
            self.counts["prove"] += 1
            return 2
        if r < 0.78:
            if self.proofs:
                root, k, proof, expected = rng.choice(self.proofs)
                if len(proof) > 1 and rng.random() < 0.1:
                    with pytest.raises(ProofError):             # the error path must not leak either
                        verify_proof(root, k, proof[:-1])
                else:
                    assert verify_proof(root, k, proof) == expected
            self.counts["verify"] += 1
            return 1
        if r < 0.86:
            keys = sorted(rng.sample(self.long_keys, rng.randint(2, 12)))
            s = StackTrie()
            for k in keys:
                s.update(k, model.get(k) or b"\x01")
            root = s.hash()
            if rng.random() < 0.05:
                assert root == trie_root({k: model.get(k) or b"\x01" for k in keys})
            self.counts["stacktrie"] += 1
            return len(keys) + 1
        if r < 0.90:
            c = t.copy()
            c[rng.choice(self.keys)] = rng.randbytes(8)
            c.hash()
            self.counts["copy"] += 1
            return 3
        if r < 0.93:
            derive_sha([rng.randbytes(rng.choice(VALUE_SIZES)) for _ in range(rng.randint(1, 20))])
            self.counts["derive_sha"] += 1
            return 1
        if r < 0.95:
            # Abandoned part-way: the generator is closed by refcounting (node_iter holds a pooled hasher).
            it = t.items(rng.choice(self.keys)) if rng.random() < 0.5 else t.node_iter()
            for _ in zip(range(5), it):
                pass
            self.counts["iterate"] += 1
            return 1
        if r < 0.98:
            k = rng.choice(self.long_keys[:64])
            if rng.random() < 0.3:
                self.secure.delete(k)
                self.secure_model.pop(k, None)
            else:
                v = rng.randbytes(rng.choice(VALUE_SIZES))
                self.secure[k] = v
                self.secure_model[k] = v
            self.secure.hash()
            self.counts["secure"] += 1
            return 2
        if r < 0.9995:
            if t.root_node is not None:                     # a node that is not in the database
                with pytest.raises(MissingNodeError):
                    Trie(MemoryDB(), t.hash()).get(rng.choice(self.keys))
            self.counts["missing"] += 1
            return 1
        # A whole trie built afresh: enough unhashed nodes for the batched (level) hasher, on 2 OpenMP threads
        # half of the time.
        fresh = Trie()
        for k, v in model.items():
            fresh[k] = v
        if rng.random() < 0.5:
            pool = get_default_pool()
            h = pool.get()
            try:
                root = h.hash_by_levels(fresh.root_node, 2) if fresh.root_node is not None else fresh.hash()
            finally:
                pool.put(h)
        else:
            root = fresh.hash()
        assert root == t.hash()
        self.counts["rebuild"] += 1
        return len(model) + 1


def _products(alphabet, n):
    if n == 0:
        yield ()
        return
    for head in alphabet:
        for rest in _products(alphabet, n - 1):
            yield (head,) + rest


def _flat(samples, warmup, max_growth, max_trend, unit):
    """Check samples [(ops, bytes)] after warmup: bounded growth and no upward trend. Returns a report line."""
    after = [b for ops, b in samples if ops >= warmup]
    assert len(after) >= 8, samples
    quarter = max(2, len(after) // 4)
    growth = max(after) - after[0]
    trend = sum(after[-quarter:]) / quarter - sum(after[:quarter]) / quarter
    report = "%s after warm-up: first %.2f MiB, growth %+.3f MiB, trend %+.3f MiB; samples (MiB): %s" % (
        unit, after[0] / MiB, growth / MiB, trend / MiB, " ".join("%.2f" % (b / MiB) for _, b in samples))
    assert growth < max_growth, report
    assert trend < max_trend, report
    return report


def test_a_million_mixed_operations_keep_rss_flat():
    if rss_anon() is None:
        pytest.skip("needs /proc to read the resident set")
    w = Workload(SEED)
    samples = []
    began = time.monotonic()
    while w.ops < TOTAL_OPS:
        for _ in range(RSS_SAMPLE_EVERY // SWAP_EVERY):
            w.run(SWAP_EVERY)
        gc.collect()
        samples.append((w.ops, rss_anon()))
    report = _flat(samples, RSS_WARMUP, RSS_MAX_GROWTH, RSS_MAX_TREND, "RssAnon")
    print("%d operations in %.1f s (%s)" % (w.ops, time.monotonic() - began, dict(w.counts)))
    print(report)
    assert w.ops >= TOTAL_OPS
    assert min(w.counts.values()) > 100             # every kind of operation ran many times
    assert get_default_pool().idle <= 16


def test_mixed_operations_keep_traced_memory_flat():
    w = Workload(SEED + 1, oracle_every=0)
    w.run(SWAP_EVERY)               # module-level caches and the first hasher buffers: not counted
    gc.collect()
    tracemalloc.start(1)            # one frame: the line of the workload that allocated
    try:
        samples = []
        start = None
        while w.ops < TM_OPS:
            for _ in range(TM_SAMPLE_EVERY // SWAP_EVERY):
                w.run(SWAP_EVERY)
            gc.collect()
            samples.append((w.ops, tracemalloc.get_traced_memory()[0]))
            if start is None and w.ops >= TM_WARMUP:
                start = tracemalloc.take_snapshot()
        try:
            print(_flat(samples, TM_WARMUP, TM_MAX_GROWTH, TM_MAX_TREND, "traced"))
        except AssertionError as e:
            # Say where the memory went: the allocation sites that grew most since the warm-up.
            diff = tracemalloc.take_snapshot().compare_to(start, "traceback")
            where = "\n".join(str(stat) + "\n" + "\n".join(stat.traceback.format()) for stat in diff[:5])
            raise AssertionError("%s\nlargest growth since warm-up:\n%s" % (e, where)) from None
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------------------------------------ hasher pool

def test_pool_keeps_at_most_max_idle_hashers():
    pool = HasherPool(max_idle=4)
    assert pool.idle == 0
    for rounds in range(50):
        before = pool.idle
        taken = [pool.get() for _ in range(rounds % 13)]
        assert len({id(h) for h in taken}) == len(taken)       # never one hasher handed out twice
        for h in taken:
            pool.put(h)
        assert pool.idle == min(4, max(before, len(taken)))
    zero = HasherPool(max_idle=0)
    zero.put(zero.get())
    assert zero.idle == 0


def test_pool_reuses_hashers():
    pool = HasherPool(max_idle=2)
    h = pool.get()
    pool.put(h)
    assert pool.get() is h


def test_default_pool_stays_bounded_under_stacktries_and_threads():
    pool = get_default_pool()
    rng = random.Random(5)
    keys = sorted(rng.randbytes(32) for _ in range(50))
    alive = []
    for _ in range(100):                    # each open StackTrie holds a hasher of its own
        s = StackTrie()
        for k in keys[:5]:
            s.update(k, b"v" * 40)
        alive.append(s)
    roots = {s.hash() for s in alive}
    assert len(roots) == 1
    del alive, s
    gc.collect()
    assert pool.idle <= 16

    def hash_many():
        for i in range(300):
            t = Trie()
            for k in keys[: 5 + i % 40]:
                t[k] = b"w" * 33
            t.hash()

    threads = [threading.Thread(target=hash_many) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pool.idle <= 16


BIG_VALUE_SCRIPT = r'''
import gc, json, sys, tracemalloc
from mpt import StackTrie, Trie, verify_proof
from mpt.ethereum.hasher import get_default_pool

def rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024

def small_work():
    t = Trie()
    for i in range(200):
        t[bytes([i % 256, i // 256]) * 16] = b"v" * 40
    t.commit()
    t.prove(b"\x00\x00" * 16)
    s = StackTrie()
    s.update(b"a" * 32, b"x" * 40)
    s.update(b"b" * 32, b"y" * 40)
    s.hash()

size = int(sys.argv[1])
tracemalloc.start()
small_work()
gc.collect()
base_tm, base_rss = tracemalloc.get_traced_memory()[0], rss_anon()

value = b"\x5a" * size
t = Trie()
t[b"big"] = value
t[b"small"] = b"\x01" * 40
root = t.commit()                                   # hash and commit encode the 16 MiB leaf
assert verify_proof(root, b"big", t.prove(b"big")) == value
s = StackTrie()                                     # a StackTrie holds its hasher until it is dropped
s.update(b"big", value)
s.hash()
peak_tm, peak_rss = tracemalloc.get_traced_memory()[0], rss_anon()
del t, s, value
gc.collect()
small_work()                                        # the pool's hashers are reused, and still work
gc.collect()
after_tm, after_rss = tracemalloc.get_traced_memory()[0], rss_anon()
print(json.dumps({"base_tm": base_tm, "peak_tm": peak_tm, "after_tm": after_tm, "base_rss": base_rss,
                  "peak_rss": peak_rss, "after_rss": after_rss, "idle": get_default_pool().idle}))
'''


def test_a_hasher_grown_by_a_huge_node_gives_the_memory_back():
    """Hash, commit and prove a trie holding a 16 MiB value, drop it: memory returns to near the baseline.

    Runs in a fresh interpreter so that the heap of the other tests does not blur the numbers.
    """
    if rss_anon() is None:
        pytest.skip("needs /proc to read the resident set")
    size = 16 * MiB
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", BIG_VALUE_SCRIPT, str(size)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    m = json.loads(out.stdout)
    report = ", ".join("%s %.1f MiB" % (k, v / MiB) for k, v in m.items() if k != "idle")
    assert m["peak_tm"] - m["base_tm"] > size, report       # the value really was in memory
    assert m["after_tm"] - m["base_tm"] < 2 * MiB, "pooled hashers keep a huge buffer: " + report
    assert m["after_rss"] - m["base_rss"] < 4 * MiB, "pooled hashers keep a huge buffer: " + report
