"""Where build_root's time goes: read (partition), build (sort + StackTrie per shard), combine, per worker count.

    python scripts/build_root_phases.py 1000000 --workers 1 2 --repeat 3

Uses the BuildRoot benchmark's input (make_accounts pairs in a seeded shuffled order, a tuple) and the same steps
as mpt.build_root, timed one by one; each phase's best over --repeat runs, worker counts interleaved. Under load,
compare ratios between worker counts of the same run, not absolute times.
"""
import argparse
import sys
import time

from mpt.bench.workloads import shuffled_account_pairs as _shuffled_account_pairs
from mpt.ethereum.parallel import choose_shard_nibbles, run_shards
from mpt.ethereum.shards.build import combine, current_backend
from mpt.ethereum.shards.partition import Partition
from mpt.ethereum.shards.read import read_pairs


def phases(pairs, workers):
    k = choose_shard_nibbles(len(pairs), workers)
    c0 = time.process_time()
    t0 = time.perf_counter()
    part = Partition(k, None, 0)
    try:
        read_pairs(part, pairs, None, workers)
        t1 = time.perf_counter()
        results = run_shards(part, current_backend(), workers)
        t2 = time.perf_counter()
        root = combine(results, part.short_keys)
        t3 = time.perf_counter()
        c3 = time.process_time()
    finally:
        part.close()
    return root, {"read": t1 - t0, "build": t2 - t1, "combine": t3 - t2, "total": t3 - t0, "cpu": c3 - c0}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int, nargs="?", default=1000000)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    pairs = _shuffled_account_pairs(args.n)
    best = {w: {} for w in args.workers}
    roots = set()
    for _ in range(args.repeat):
        for w in args.workers:
            root, times = phases(pairs, w)
            roots.add(root)
            for name, t in times.items():
                best[w][name] = min(best[w].get(name, t), t)
    assert len(roots) == 1, "roots differ between worker counts"
    print("n=%d root=%s (best of %d)" % (args.n, roots.pop().hex(), args.repeat))
    # cpu: CPU seconds of every thread; cpu / total is the parallelism the run got (2 at best on 2 free cores).
    print("%-8s %9s %9s %9s %9s %9s" % ("workers", "read", "build", "combine", "total", "cpu"))
    for w in args.workers:
        b = best[w]
        print("%-8d %8.3fs %8.3fs %8.3fs %8.3fs %8.3fs"
              % (w, b["read"], b["build"], b["combine"], b["total"], b["cpu"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
