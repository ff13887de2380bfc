"""Interleaved A/B timing of two built checkouts of mpt, for machines whose speed drifts.

``python -m mpt.bench --compare`` compares two runs made minutes apart; on a VM whose speed swings by tens of
percent from one minute to the next that mixes the drift into the comparison. This script instead alternates
short subprocesses of the two checkouts, ROUNDS times, and reports for every case the best time of each side
(the run least disturbed by the neighbours) and their ratio. It complements, not replaces, the bench runner:
the numbers in docs/performance.md say which one they come from.

    python docs/ab_compare.py /path/to/old/checkout /path/to/new/checkout [--rounds 6] [-b REGEX]

Both checkouts must be built in place (``python setup.py build_ext --inplace``).
"""
import argparse
import json
import os
import re
import subprocess
import sys

DEFAULT_CASES = [
    "HashFixedSize/10", "HashFixedSize/100", "HashFixedSize/1K", "HashFixedSize/10K", "HashFixedSize/100K",
    "CommitAfterHashFixedSize/10K", "CommitAfterHashFixedSize/100K", "DeriveSha200/std_trie",
    "DeriveSha200/stack_trie", "Insert/10K", "Insert/100K", "Prove", "VerifyProof", "VerifyRangeProof1000",
]

# Runs inside the checkout's interpreter: best-of-3 per case, printed as JSON {name: seconds per op}.
CHILD = r"""
import gc, json, sys, time
from mpt.bench import cases
out = {}
for name in json.loads(sys.argv[1]):
    case = cases.get(name)
    state = None if case.stateful else case.setup()
    best = None
    # Cheap operations repeat until a sample lasts about 50 ms; a stateful case (hash, commit: the op changes its
    # state) gets a fresh state built right before each call, and only the call is timed, as the bench runner,
    # asv and geth's StopTimer/StartTimer do.
    t0 = time.perf_counter()
    case.op(case.setup() if case.stateful else state)
    calls = max(1, int(0.05 / max(time.perf_counter() - t0, 1e-7)))
    if case.stateful:
        calls = min(calls, 2000)
    for _ in range(3):
        gc.collect()
        if case.stateful:
            total = 0.0
            for _ in range(calls):
                s = case.setup()
                t0 = time.perf_counter()
                case.op(s)
                total += time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            for _ in range(calls):
                case.op(state)
            total = time.perf_counter() - t0
        elapsed = total / (calls * case.ops_per_sample)
        best = elapsed if best is None else min(best, elapsed)
    out[name] = best
print(json.dumps(out))
"""


def run_side(checkout, names):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(names)], cwd=checkout, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return "%.3g %s" % (seconds / scale, unit)
    return "%.3g ns" % (seconds / 1e-9)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("-b", "--bench", metavar="REGEX", help="the cases matching REGEX (any case of mpt.bench)")
    args = p.parse_args()
    if args.bench:
        # Any case of the runner (the new checkout's list), not only the default ones.
        from mpt.bench.cases import CASES
        names = [n for n in CASES if re.search(args.bench, n)]
    else:
        names = list(DEFAULT_CASES)
    best = {"old": {}, "new": {}}
    for _ in range(args.rounds):
        for side, checkout in (("old", args.old), ("new", args.new)):
            for name, t in run_side(checkout, names).items():
                best[side][name] = min(t, best[side].get(name, t))
    print("| case | old (best of %d) | new (best of %d) | new / old |" % (args.rounds * 3, args.rounds * 3))
    print("|---|---:|---:|---:|")
    for name in names:
        old, new = best["old"][name], best["new"][name]
        print("| %s | %s | %s | %.2f |" % (name, fmt(old), fmt(new), new / old))


if __name__ == "__main__":
    main()
