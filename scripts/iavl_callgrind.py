#!/usr/bin/env python3
"""Instructions per call of each IAVL codec operation, counted by valgrind's callgrind (repeatable under load).

    python scripts/iavl_callgrind.py                     # every op, table on stdout
    python scripts/iavl_callgrind.py -k decode -n 20000  # ops whose name contains "decode"
    python scripts/iavl_callgrind.py --json out.json     # also save {op: instructions per call}

Wall-clock timings of a ~100 ns call mean little on a shared machine; instruction counts do not move with the
load. Each op runs in its own process under ``valgrind --tool=callgrind``, which does the setup (imports, the
nodes and byte strings, a warm-up of every op) and then calls the op N times in a ``for _ in repeat(None, N)``
loop inside a function; a second process does the same with N = 0. Instructions per call = (total - that
baseline's total) / N: the Python-level call
(argument passing, the loop's dispatch) is included, as a user's code pays it; ``loop/empty`` is that loop
calling a C builtin that does nothing useful (``len(data)``), the floor any op costs.

PYTHONHASHSEED is fixed so that the baseline and the op processes start identically. Needs valgrind.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# name -> (setup expression evaluated in the child's namespace, the call)
OPS = {
    "loop/empty": "len(VB_SMALL)",
    "decode/vbyte/small": "decode_node(VB_SMALL, 'vbyte')",
    "decode/vbyte/large": "decode_node(VB_LARGE, 'vbyte')",
    "decode/legacy/small": "decode_node(LEG_SMALL, 'legacy')",
    "decode/legacy/large": "decode_node(LEG_LARGE, 'legacy')",
    "decode/v1/small": "decode_node(V1_SMALL, 'v1', NK_SMALL)",
    "to_bytes/vbyte/small": "SMALL.to_bytes('vbyte')",
    "to_bytes/vbyte/large": "LARGE.to_bytes('vbyte')",
    "to_bytes/legacy/small": "SMALL.to_bytes('legacy')",
    "to_bytes/legacy/large": "LARGE.to_bytes('legacy')",
    "to_bytes/v1/small": "SMALL.to_bytes('v1')",
    "encoded_size/vbyte": "SMALL.encoded_size('vbyte')",
    "encoded_size/legacy": "SMALL.encoded_size('legacy')",
    "encoded_size/v1": "SMALL.encoded_size('v1')",
    "encode/vbyte/small": "SMALL.encode(BUF, 'vbyte')",
    "hash/leaf (uncached)": "LeafNode(b'key', b'value', 3).hash",
    "LeafNode()": "LeafNode(b'key', b'value', 3)",
    # IAVLTree/Get100K's op: a get through the fast index whose value is in the fast-node cache, the bound
    # method looked up once as the bench does; and its floor, a method call with one bytes argument and a dict
    # probe (dict.get).
    "tree/get (fast-node cache)": "GET(KEY)",
    "loop/dict.get (floor of a get)": "DGET(KEY)",
}

CHILD = r"""
import sys
from itertools import repeat
from mpt.iavl import LeafNode, decode_node, node_key
from mpt.core.rlp import WriteBuffer
SMALL = LeafNode(b"key", b"value", 3)
LARGE = LeafNode(b"key", b"value", 2**32 - 1)
VB_SMALL, VB_LARGE = SMALL.to_bytes("vbyte"), LARGE.to_bytes("vbyte")
LEG_SMALL, LEG_LARGE = SMALL.to_bytes("legacy"), LARGE.to_bytes("legacy")
V1_SMALL, NK_SMALL = SMALL.to_bytes("v1"), node_key(3, 1)
BUF = WriteBuffer()
from mpt.iavl import MutableTree
_saved = MutableTree()
for _i in range(1000):
    _saved.set(b"key%%05d" %% _i, b"value%%05d" %% _i)
_saved.save_version()
TREE = MutableTree(_saved.db)
TREE.load()
GET, KEY = TREE.get, b"key00500"
DGET = {KEY: b"value00500"}.get
OPS = %(ops)r
# Warm every op up the same way in every process (first calls fill caches and specialize the bytecode).
for _src in OPS.values():
    _f = eval("lambda: " + _src)
    for _ in repeat(None, 200):
        _f()
    BUF.clear()
op, n = sys.argv[1], int(sys.argv[2])
# The bench's loop shape, in a function (fast locals, specialized globals), the op inlined in its body.
exec("def run(n):\n    for _ in repeat(None, n):\n        %%s\n" %% OPS[op])
run(n)
"""


def count(op: str, n: int, child: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        env = dict(os.environ, PYTHONHASHSEED="0")
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, sys.executable, "-c", child, op, str(n)],
            check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        with open(out) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    return int(line.split()[1])
    raise RuntimeError("no totals in callgrind's output for %s" % op)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-k", default="", help="only the ops whose name contains this (regex)")
    ap.add_argument("-n", type=int, default=20000, help="calls per op (default 20000)")
    ap.add_argument("--json", help="also write {op: instructions per call} to this file")
    args = ap.parse_args()
    child = CHILD % {"ops": OPS}
    ops = [op for op in OPS if re.search(args.k, op)]
    results = {}
    for op in ops:
        # The baseline runs the same process with n = 0: setup, warm-up and compiling the loop cancel out.
        per_call = (count(op, args.n, child) - count(op, 0, child)) / args.n
        results[op] = round(per_call, 1)
        print("%-32s %8.1f instructions/call" % (op, per_call), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
