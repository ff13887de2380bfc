"""An eth-tester workload on py-trie and on mpt (docs/pytrie.rst "Running py-evm and eth-tester on mpt").

    python scripts/eth_tester_on_mpt.py                  # both, each in a fresh interpreter, and the speed-up
    python scripts/eth_tester_on_mpt.py --only mpt --profile

The workload: ``eth_tester.EthereumTester(PyEVMBackend())`` (each transaction mined in a block of its own, as
eth-tester does by default), TRANSFERS plain transfers of 1 wei to fresh accounts, then a contract that stores
``calldata[32:64]`` at slot ``calldata[0:32]`` receiving WRITES transactions to fresh slots. ``--only mpt`` runs it
with ``mpt.compat.pytrie.install()`` in effect. ``--profile`` also times every call into the trie class (py-trie's
or mpt's: the time inside its methods, all the RLP and Keccak work they do included) and prints its share of the
run.
Needs ``pip install "mpt-engine[pytrie]" "eth-tester[py-evm]" coincurve``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# A contract whose runtime code is SSTORE(calldata[0:32], calldata[32:64]); STOP, behind a constructor that
# returns it.
RUNTIME = "6020356000355500"
INIT = "6008600c60003960086000f3" + RUNTIME


def workload(transfers: int, writes: int) -> dict:
    from eth_tester import EthereumTester, PyEVMBackend

    tester = EthereumTester(PyEVMBackend())
    sender = tester.get_accounts()[0]
    start = time.perf_counter()
    for i in range(transfers):
        to = "0x" + (0x1000 + i).to_bytes(20, "big").hex()
        tester.send_transaction({"from": sender, "to": to, "value": 1, "gas": 21000})
    transfers_s = time.perf_counter() - start
    receipt = tester.get_transaction_receipt(
        tester.send_transaction({"from": sender, "gas": 200000, "data": "0x" + INIT}))
    contract = receipt["contract_address"]
    start = time.perf_counter()
    for i in range(writes):
        data = "0x" + (i + 1).to_bytes(32, "big").hex() + (i + 7).to_bytes(32, "big").hex()
        tester.send_transaction({"from": sender, "to": contract, "gas": 60000, "data": data})
    writes_s = time.perf_counter() - start
    block = tester.get_block_by_number("latest")
    return {"transfers_s": transfers_s, "writes_s": writes_s, "state_root": block["state_root"].hex()
            if isinstance(block["state_root"], bytes) else block["state_root"], "blocks": block["number"]}


_TIMED_METHODS = ("get", "set", "delete", "exists", "__getitem__", "__setitem__", "__delitem__", "__contains__",
                  "get_proof", "traverse", "traverse_from", "get_node", "regenerate_ref_count")


class _Clock:
    """Seconds spent inside trie methods (outermost calls only: a method that calls another is counted once)."""

    def __init__(self):
        self.seconds = 0.0
        self.depth = 0


def _timed_class(cls, clock: _Clock):
    """A subclass of cls whose public methods, squash_changes() included, add their time to clock."""
    import contextlib
    import functools

    def timed(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            clock.depth += 1
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                clock.depth -= 1
                if clock.depth == 0:
                    clock.seconds += time.perf_counter() - start
        return wrapper

    def squash_changes(self):
        inner = cls.squash_changes(self)

        @contextlib.contextmanager
        def timed_squash():
            enter = timed(lambda _self: inner.__enter__())
            exit_ = timed(lambda _self, *exc: inner.__exit__(*exc))
            batch = enter(self)
            try:
                yield batch
            except BaseException as exc:
                if not exit_(self, type(exc), exc, exc.__traceback__):
                    raise
            else:
                exit_(self, None, None, None)
        return timed_squash()

    namespace = {name: timed(getattr(cls, name)) for name in _TIMED_METHODS if hasattr(cls, name)}
    namespace["squash_changes"] = squash_changes
    if "__slots__" in cls.__dict__:
        namespace["__slots__"] = ()
    return type(cls.__name__, (cls,), namespace)


def _rebind(original, replacement) -> None:
    """Bind replacement wherever original is bound in an imported module (what install() does for mpt)."""
    for module in list(sys.modules.values()):
        try:
            names = [name for name, value in vars(module).items() if value is original]
        except TypeError:
            continue
        for name in names:
            setattr(module, name, replacement)


def run_one(which: str, transfers: int, writes: int, profile: bool) -> dict:
    import trie
    import trie.hexary

    if which == "mpt":
        import mpt.compat.pytrie

        mpt.compat.pytrie.install()
    if not profile:
        out = workload(transfers, writes)
        out["impl"] = which
        return out
    clock = _Clock()
    cls = trie.hexary.HexaryTrie
    _rebind(cls, _timed_class(cls, clock))
    start = time.perf_counter()
    out = workload(transfers, writes)
    out.update(impl=which, profiled_total_s=time.perf_counter() - start, trie_s=clock.seconds)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--transfers", type=int, default=1000)
    p.add_argument("--writes", type=int, default=300)
    p.add_argument("--only", choices=("py-trie", "mpt"))
    p.add_argument("--profile", action="store_true", help="time the calls into the trie class too")
    args = p.parse_args(argv)
    if args.only:
        print(json.dumps(run_one(args.only, args.transfers, args.writes, args.profile)))
        return 0
    results = {}
    for which in ("py-trie", "mpt"):
        cmd = [sys.executable, os.path.abspath(__file__), "--only", which, "--transfers", str(args.transfers),
               "--writes", str(args.writes)] + (["--profile"] if args.profile else [])
        line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
        results[which] = json.loads(line)
    a, b = results["py-trie"], results["mpt"]
    if a["state_root"] != b["state_root"]:
        print("state roots differ: %s vs %s" % (a["state_root"], b["state_root"]))
        return 1
    for key, label in (("transfers_s", "%d transfers" % args.transfers),
                       ("writes_s", "%d storage writes" % args.writes)):
        print("%-20s py-trie %7.2f s   mpt %7.2f s   %.2fx" % (label, a[key], b[key], a[key] / b[key]))
    if args.profile:
        for r in (a, b):
            print("%-8s inside HexaryTrie %.2f s of %.2f s (%.1f%%)" % (
                r["impl"], r["trie_s"], r["profiled_total_s"], 100 * r["trie_s"] / r["profiled_total_s"]))
    print("same state root %s after %d blocks" % (a["state_root"], a["blocks"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
