"""What a fresh trie's records cost against node objects: copy(), the copy's changes, iteration and proofs.

    python scripts/arena_costs.py 100000 [--repeat 5]

Builds a hashed trie of hashed_accounts(n) (the HashFixedSize workload) on its node arena --repeat times, and
beside it the same trie on node objects made by the same inserts (what a trie on nodes has). Prints the best
time of: copy(); the copy's first update (it copies the shared records, once) and second update; a full
items() pass and 1,000 prove() calls on each trie; and turning the records into node objects (root_node),
what copy(), items() and prove() did before they ran on the records. Exits non-zero when the two disagree.
"""
import argparse
import sys
import time

from mpt import Trie
from mpt.bench.cases.ethereum import filled_trie
from mpt.bench.workloads import hashed_accounts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    keys, values = hashed_accounts(args.n)
    probes = keys[:: max(1, len(keys) // 1000)][:1000]
    objects = Trie()
    assert objects.root_node is None                # on node objects from here on
    for k, v in zip(keys, values):
        objects.update(k, v)
    objects.hash()
    best = {}

    def record(what, seconds):
        best[what] = min(best.get(what, seconds), seconds)

    for _ in range(args.repeat):
        t = filled_trie(keys, values)
        root = t.hash()
        start = time.perf_counter()
        c = t.copy()
        record("copy()", time.perf_counter() - start)
        for what, key in (("first update of the copy", keys[0]), ("second update", keys[1])):
            start = time.perf_counter()
            c.update(key, b"changed")
            record(what, time.perf_counter() - start)
        for label, trie in (("records", t), ("node objects", objects)):
            start = time.perf_counter()
            count = sum(1 for _ in trie.items())
            record("items() pass, " + label, time.perf_counter() - start)
            start = time.perf_counter()
            proofs = [trie.prove(k) for k in probes]
            record("1,000 proofs, " + label, time.perf_counter() - start)
            if count != len(keys) or proofs[-1] != objects.prove(probes[-1]):
                print("the records and the node objects disagree", file=sys.stderr)
                return 1
        start = time.perf_counter()
        nodes = t.root_node
        record("records -> node objects", time.perf_counter() - start)
        if nodes is None or t.hash() != root or c.get(keys[0]) != b"changed" or t.get(keys[0]) != values[0]:
            print("the copy and the original disagree", file=sys.stderr)
            return 1
    print("%d accounts, best of %d" % (args.n, args.repeat))
    for what, seconds in best.items():
        print("  %-30s %9.3f ms" % (what, 1e3 * seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
