"""Measurements that `python -m mpt.bench` does not make: Keccak per permutation, hash() against the
pycryptodome floor, commits into LMDB, bytes per stored node, StackTrie peak memory, retained trie memory.

Run from a checkout with the extension built and the test extra installed:
    python docs/measure_extras.py
Numbers drift on shared VMs; compare the lines of one run with each other.
"""
import statistics
import tempfile
import time
import tracemalloc
import gc
from Crypto.Hash import keccak as pyc
from mpt import Trie, StackTrie, derive_sha, derive_sha_trie
from mpt.core._keccak.binding import _permutations
from mpt.bench._alloc import keccak_floor
from mpt.bench import workloads as W
from mpt.db import MemoryDB, LMDBStore

def med(f, n=9):
    xs = []
    for _ in range(n):
        s = time.perf_counter(); f(); xs.append(time.perf_counter() - s)
    return statistics.median(xs)

# keccak permutation
N = 1_000_000
t = med(lambda: _permutations(N), 5)
print("keccak-f1600: %.1f ns/permutation" % (t / N * 1e9))

for n in (1000, 10000):
    a, v = W.make_accounts(n); keys = W.account_keys(a)
    def build(db=None):
        tr = Trie(db)
        for k, x in zip(keys, v): tr.update(k, x)
        return tr
    hs = []
    for _ in range(9):
        tr = build(); s = time.perf_counter(); tr.hash(); hs.append(time.perf_counter() - s)
    blobs = [b for _, h, b in tr.node_iter() if h is not None]
    ours = med(lambda: keccak_floor(blobs, 1))
    pyco = med(lambda: [pyc.new(digest_bits=256, data=b).digest() for b in blobs], 5)
    print("make_accounts(%d): hash() %.2f ms; %d encodings; our keccak floor (C loop) %.2f ms -> ratio %.2f; "
          "pycryptodome floor (Python loop) %.2f ms" % (n, statistics.median(hs) * 1e3, len(blobs), ours * 1e3,
                                                      statistics.median(hs) / ours, pyco * 1e3))
    # commit after hash
    for kind in ("MemoryDB", "LMDB"):
        cs = []; written = []
        for _ in range(5):
            with tempfile.TemporaryDirectory() as d:
                db = MemoryDB() if kind == "MemoryDB" else LMDBStore(d + "/db", map_size=1 << 28)
                tr = build(db); tr.hash()
                s = time.perf_counter(); tr.commit(); cs.append(time.perf_counter() - s)
                ns = tr.last_commit
                written.append((len(ns), ns.size))
                if kind == "LMDB": db.close()
        nodes, size = written[0]
        print("CommitAfterHash(%d) into %s: %.2f ms, %d nodes, %d bytes of blobs (%.1f B/node, + 32 B key each)"
              % (n, kind, statistics.median(cs) * 1e3, nodes, size, size / nodes))

txs = W.gentxs200()
st = StackTrie()
print("DeriveSha200 std_trie %.1f us, stack_trie (reused) %.1f us" % (
    med(lambda: derive_sha_trie(txs), 51) * 1e6, med(lambda: derive_sha(txs, stack_trie=st), 51) * 1e6))
items = W.insert_100k_items()
def ins():
    s = StackTrie()
    for k, x in items: s.update(k, x)
    assert s.hash() == W.INSERT_100K_ROOT
print("Insert100K (StackTrie) %.1f ms" % (med(ins, 5) * 1e3))
gc.collect(); tracemalloc.start()
ins()
cur, peak = tracemalloc.get_traced_memory(); tracemalloc.stop()
print("Insert100K peak traced memory while inserting: %.1f KiB (input list excluded)" % (peak / 1024))
# retained memory of a 100K account trie
a, v = W.make_accounts(100000); keys = W.account_keys(a)
gc.collect(); tracemalloc.start()
tr = Trie()
for k, x in zip(keys, v): tr.update(k, x)
s = time.perf_counter(); tr.hash()
cur, peak = tracemalloc.get_traced_memory(); tracemalloc.stop()
print("make_accounts(100000) trie retained (excluding the input values): %.1f MB" % (cur / 1e6))
