#!/usr/bin/env python3
"""Instructions per op of bench cases in two built checkouts, counted by valgrind's callgrind (repeatable under load).

    python scripts/ab_callgrind.py OLD_CHECKOUT NEW_CHECKOUT VerifyRangeProof100:60 MerkleRoot/10K:8 ...

Each CASE:N runs in its own process per checkout under ``valgrind --tool=callgrind``: the bench case's setup, one
warm-up op, then N ops (a stateful case gets a fresh setup before each); a second process does the same without
the ops. Instructions per op = (total - that baseline's total) / N. Both checkouts must be built in place; on a
shared machine, where wall-clock A/B runs swing by tens of percent, these counts do not move with the load.
"""
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CHILD = r"""
import sys
from mpt.bench import cases
name, n, run = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
case = cases.get(name)
state = None if case.stateful else case.setup()
case.op(case.setup() if case.stateful else state)
for _ in range(n):
    s = case.setup() if case.stateful else state
    if run:
        case.op(s)
"""


def count(checkout, name, n, run):
    env = dict(os.environ, PYTHONHASHSEED="0")
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", CHILD,
                        name, str(n), "1" if run else "0"], cwd=checkout, env=env, capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m:
        raise SystemExit(p.stderr[-2000:])
    return int(m.group(1))


def main():
    old, new = sys.argv[1], sys.argv[2]
    cases = [(c.rsplit(":", 1)[0], int(c.rsplit(":", 1)[1])) for c in sys.argv[3:]]
    jobs = [(d, name, n, r) for name, n in cases for d in (old, new) for r in (True, False)]
    with ThreadPoolExecutor(2) as ex:
        res = dict(zip(jobs, ex.map(lambda j: count(*j), jobs)))
    print("| case | old instr/op | new instr/op | new/old |")
    print("|---|---:|---:|---:|")
    for name, n in cases:
        o = (res[(old, name, n, True)] - res[(old, name, n, False)]) / n
        w = (res[(new, name, n, True)] - res[(new, name, n, False)]) / n
        print("| %s | %.0f | %.0f | %.3f |" % (name, o, w, w / o))


if __name__ == "__main__":
    main()
