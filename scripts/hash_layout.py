"""How much of hash()'s time is where the nodes sit in memory: the same trie hashed in three layouts.

    python scripts/hash_layout.py 100000 --backend avx2 --repeat 7

Uses the HashFixedSize workload and trie builder of mpt.bench.cases (make_accounts(n): keccak keys, account
values) and builds the same trie three
ways: inserted in the workload's order (the benchmark: nodes scattered over the heap in insertion order, which
is random against the key order hash() walks in), inserted in key order (nodes allocated in the order hash()
visits them, values where make_accounts left them), and inserted in key order with each value copied just
before its insert (values in that order too). Every layout gives the same root; only the addresses differ.
Prints the median hash() time of each over --repeat fresh tries, and its ratio to the time Keccak alone needs
for the same encodings on the same backend (the bench's keccak ratio); beside it, the median time of walking
the same fresh trie as hash() walks it, with its prefetching, reading every leaf's key and value and doing
nothing else (mpt.bench._alloc.walk_floor): what reaching the nodes costs before any encoding or hashing.
"""
import argparse
import gc
import statistics
import sys
import time

from mpt.bench import _alloc
from mpt.bench.cases.ethereum import filled_trie as _filled_trie, hashed_blobs as _hashed_blobs
from mpt.bench.workloads import hashed_accounts as _accounts
from mpt.core.runtime import set_keccak_backend


def hash_time(pairs, repeat):
    """(root, median hash() time, median walk time), each on its own fresh trie."""
    keys, values = [k for k, _ in pairs], [v for _, v in pairs]
    times, walks = [], []
    for _ in range(repeat):
        t = _filled_trie(keys, values)
        gc.collect()
        t0 = time.perf_counter()
        root = t.hash()
        times.append(time.perf_counter() - t0)
        t = _filled_trie(keys, values)
        gc.collect()
        t0 = time.perf_counter()
        _alloc.walk_floor(t.root_node)
        walks.append(time.perf_counter() - t0)
    return root, statistics.median(times), statistics.median(walks)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int, nargs="?", default=100000)
    p.add_argument("--backend", default="avx2", help="Keccak backend (as --keccak-backend of mpt.bench)")
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    set_keccak_backend(args.backend)
    keys, values = _accounts(args.n)
    pairs = list(zip(keys, values))
    in_key_order = sorted(pairs)
    layouts = [
        ("insertion order (the benchmark)", pairs),
        ("key order", in_key_order),
        ("key order, values copied in that order", [(k, bytes(bytearray(v))) for k, v in in_key_order]),
    ]
    blobs = _hashed_blobs(_filled_trie(keys, values))
    floors = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        _alloc.keccak_floor(blobs, 1, args.backend)
        floors.append(time.perf_counter() - t0)
    floor = statistics.median(floors)
    print("%d accounts, %s Keccak alone on the same encodings: %.2f ms" % (args.n, args.backend, floor * 1e3))
    roots = set()
    for name, layout in layouts:
        root, seconds, walk = hash_time(layout, args.repeat)
        roots.add(root)
        print("%-42s %8.2f ms   keccak ratio %.2f   walk alone %.2f ms (%.2f of Keccak)" % (
            name, seconds * 1e3, seconds / floor, walk * 1e3, walk / floor))
    if len(roots) != 1:
        sys.exit("layouts gave different roots: %s" % sorted(r.hex() for r in roots))


if __name__ == "__main__":
    main()
