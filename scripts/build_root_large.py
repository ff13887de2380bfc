"""Time and peak memory of mpt.build_root over N synthetic accounts streamed from a generator (nothing held).

    python scripts/build_root_large.py 10000000 --spill-dir /tmp --memory-limit 256M --workers 2

Accounts are keccak(index) -> rlp([nonce, balance, EMPTY_ROOT, EMPTY_CODE_HASH]); with --check the root is also
computed by a StackTrie over the sorted keys (which needs them all in memory: small N only).
Prints the root, seconds, and the process's peak resident set (ru_maxrss).
"""
import argparse
import resource
import sys
import time

from mpt import EMPTY_CODE_HASH, EMPTY_ROOT, StackTrie, build_root, keccak256, rlp


def accounts(n):
    for i in range(n):
        yield keccak256(i.to_bytes(8, "big")), rlp.encode([i, i * 1000003, EMPTY_ROOT, EMPTY_CODE_HASH])


def size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("n", type=int)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--spill-dir", default=None)
    p.add_argument("--memory-limit", type=size, default=None)
    p.add_argument("--progress", action="store_true")
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    start = time.perf_counter()
    root = build_root(accounts(args.n), workers=args.workers, spill_dir=args.spill_dir,
                      memory_limit=args.memory_limit, progress=args.progress)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("n=%d root=%s seconds=%.1f peak_rss=%.0f MiB" % (args.n, root.hex(), seconds, peak / (1 << 20)))
    if args.check:
        st = StackTrie()
        for k, v in sorted(accounts(args.n)):
            st.update(k, v)
        assert st.hash() == root, "root differs from the StackTrie's"
        print("checked against StackTrie")
    return 0


if __name__ == "__main__":
    sys.exit(main())
