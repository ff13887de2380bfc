"""`python -m mpt.bench`: a first, minimal runner (HashFixedSize on a small default).

The full runner (case registry, go/json formats, --compare, peers) replaces this as the benchmark issue lands.
"""
import statistics
import sys
import time

from mpt import Trie
from mpt.bench.workloads import account_keys, make_accounts

SIZES = {"10": 20, "100": 100, "1K": 1000, "10K": 10000}


def hash_fixed_size(n, count):
    addresses, values = make_accounts(n)
    keys = account_keys(addresses)
    samples = []
    for _ in range(count):
        t = Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        start = time.perf_counter_ns()
        t.hash()
        samples.append(time.perf_counter_ns() - start)
    return samples


def main(argv=None):
    count = 10
    print("%-24s %14s %10s" % ("case", "time/op", "± spread"))
    for label, n in SIZES.items():
        samples = hash_fixed_size(n, count)
        median = statistics.median(samples)
        spread = (max(samples) - min(samples)) / 2 / median * 100
        print("%-24s %11.1f us %9.1f%%" % ("HashFixedSize/" + label, median / 1000, spread))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
