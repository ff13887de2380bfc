"""Interleaved timing of mpt.merkle.root against a hashlib loop, for A/B runs of two builds on a busy machine.

    python scripts/merkle_ab.py [--threads N] [--rounds R]      # run from the checkout to measure

Each round times root() and the hashlib loop back to back on the same leaves (MerkleRoot's: 100-byte leaves)
and keeps the best of `--rounds`; the ratio hashlib / root of one process is what to compare between builds
(both sides see the same load). Prints one JSON line per size.
"""
import argparse
import json
import sys
import time

sys.path.insert(0, ".")

from mpt import merkle  # noqa: E402
from mpt.bench.peers import hashlib_merkle_root as hashlib_root  # noqa: E402
from mpt.bench.workloads import merkle_leaves as _merkle_leaves  # noqa: E402
from mpt.core.runtime import set_hash_threads  # noqa: E402


CLOCK = time.perf_counter


def best(fn, arg, calls, rounds):
    out = []
    for _ in range(rounds):
        t0 = CLOCK()
        for _ in range(calls):
            fn(arg)
        out.append((CLOCK() - t0) / calls)
    return min(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--sizes", default="100,1000,10000,100000")
    p.add_argument("--cpu", action="store_true",
                   help="time with the calling thread's CPU clock (time.thread_time) instead of the wall clock: "
                        "on a busy machine it leaves out the time spent waiting for a core (one thread only)")
    args = p.parse_args()
    if args.cpu:
        global CLOCK
        CLOCK = time.thread_time
    set_hash_threads(args.threads)
    for n in map(int, args.sizes.split(",")):
        leaves = list(_merkle_leaves(n, 100))       # MerkleRoot/N's leaves
        assert merkle.root(leaves) == hashlib_root(leaves)
        calls = max(1, 20000 // n)
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(best(merkle.root, leaves, calls, 1))
            theirs.append(best(hashlib_root, leaves, max(1, calls // 10), 1))
        o, t = min(ours), min(theirs)
        print(json.dumps({"n": n, "threads": args.threads, "root_us": round(o * 1e6, 2),
                          "hashlib_us": round(t * 1e6, 2), "speedup": round(t / o, 2)}), flush=True)


if __name__ == "__main__":
    main()
