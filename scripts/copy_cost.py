"""What Trie.copy() of a fresh (arena) trie costs, and what the first change of the copy costs.

    python scripts/copy_cost.py 100000 [--repeat 5]

Builds a hashed trie of hashed_accounts(n) (the HashFixedSize workload) on its node arena --repeat times and
prints the best time of copy(); of the copy's first update (it copies the shared records, once); of its second
update (nothing to copy); and, for comparison, of turning the original's records into node objects (root_node),
what copy() did before copies shared the arena. Exits non-zero if the copy and the original disagree.
"""
import argparse
import sys
import time

from mpt import Trie
from mpt.bench.workloads import hashed_accounts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    keys, values = hashed_accounts(args.n)
    best = {"copy()": [], "first update of the copy": [], "second update": [], "records -> node objects": []}
    for _ in range(args.repeat):
        t = Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        root = t.hash()
        start = time.perf_counter()
        c = t.copy()
        best["copy()"].append(time.perf_counter() - start)
        for what, trie, key in (("first update of the copy", c, keys[0]), ("second update", c, keys[1])):
            start = time.perf_counter()
            trie.update(key, b"changed")
            best[what].append(time.perf_counter() - start)
        start = time.perf_counter()
        nodes = t.root_node
        assert nodes is not None
        best["records -> node objects"].append(time.perf_counter() - start)
        if t.hash() != root or c.get(keys[0]) != b"changed" or t.get(keys[0]) != values[0]:
            print("the copy and the original disagree", file=sys.stderr)
            return 1
    print("%d accounts, best of %d" % (args.n, args.repeat))
    for what, times in best.items():
        print("  %-26s %9.3f ms" % (what, 1e3 * min(times)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
