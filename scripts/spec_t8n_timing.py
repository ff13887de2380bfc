"""Time execution-specs' t8n on a pre-state of N accounts (2 storage slots each), with and without mpt.

    python scripts/spec_t8n_timing.py [--accounts 10000] [--runs 3]

Writes the inputs to a temporary folder (the block of tests/data/execution_specs_t8n: transfers, a contract
creation with storage, self-destructs, storage writes, withdrawals; its pre-state grown by N accounts), runs
``ethereum-spec-evm t8n`` (the spec alone) and ``python -m mpt.compat.execution_specs t8n`` (the spec with mpt's
roots) on them, checks that both write the same files, and prints each command's median wall time.
"""

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "execution_specs_t8n"


def write_inputs(folder: Path, accounts: int) -> None:
    alloc = json.loads((DATA / "alloc.json").read_text())
    rnd = random.Random(accounts)
    for _ in range(accounts):
        storage = {"0x%064x" % rnd.getrandbits(256): "0x%x" % (rnd.getrandbits(64) + 1) for _ in range(2)}
        alloc["0x%040x" % rnd.getrandbits(160)] = {"balance": "0x%x" % rnd.getrandbits(80), "nonce": "0x1",
                                                   "code": "0x", "storage": storage}
    (folder / "alloc.json").write_text(json.dumps(alloc))
    shutil.copy(DATA / "env_cancun.json", folder / "env.json")
    shutil.copy(DATA / "txs.json", folder / "txs.json")


def run(command, folder: Path, out: str) -> float:
    (folder / out).mkdir(exist_ok=True)
    args = ["t8n", "--input.alloc", str(folder / "alloc.json"), "--input.env", str(folder / "env.json"),
            "--input.txs", str(folder / "txs.json"), "--state.fork", "Cancun", "--output.basedir",
            str(folder / out), "--output.result", "result.json", "--output.alloc", "alloc.json"]
    start = time.perf_counter()
    subprocess.run(command + args, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accounts", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    evm = shutil.which("ethereum-spec-evm")
    if evm is None:
        sys.exit('ethereum-spec-evm not found: pip install "mpt-engine[spec]"')
    spec = [evm]
    ours = [sys.executable, "-m", "mpt.compat.execution_specs"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_inputs(folder, args.accounts)
        times = {"spec": [], "mpt": []}
        for _ in range(args.runs):
            times["spec"].append(run(spec, folder, "spec"))
            times["mpt"].append(run(ours, folder, "mpt"))
        for name in ("result.json", "alloc.json"):
            if (folder / "spec" / name).read_bytes() != (folder / "mpt" / name).read_bytes():
                sys.exit("the outputs differ: %s" % name)
        spec_s, mpt_s = statistics.median(times["spec"]), statistics.median(times["mpt"])
        print("t8n, Cancun, %d pre-state accounts (2 slots each), median of %d runs:" % (args.accounts, args.runs))
        print("  ethereum-spec-evm t8n                 %7.2f s" % spec_s)
        print("  python -m mpt.compat.execution_specs  %7.2f s  (%.1fx)" % (mpt_s, spec_s / mpt_s))
        print("  outputs identical: result.json, alloc.json")


if __name__ == "__main__":
    main()
