"""How close mpt.compat.pytrie is to the floors of the PyTrie bench cases (docs/pytrie.rst "How fast").

    python scripts/pytrie_floors.py [--repeat 5]

For each PyTrie case's workload (mpt.bench.cases.pytrie): the time per operation of mpt's HexaryTrie and of
py-trie's, and two floors:

* the per-call floor: a Python loop calling a compiled method that does nothing useful with the same arguments
  (``dict.get`` of an empty dict), i.e. what any compiled HexaryTrie costs before it does any work;
* the work floor: what py-trie's semantics make every implementation do, timed alone: the single-lane
  Keccak-256 of every node the sets store (a set must write its nodes at once, and a node's hash needs its
  children's hashes, so they cannot share SIMD lanes) and the dictionary writes and reads they make; the
  dictionary reads of the gets; the Keccak of the nodes get_from_proof stores (one SIMD call per proof).

The best of --repeat runs of each. Needs py-trie 4 (``pip install "mpt-engine[pytrie]"``).
"""

from __future__ import annotations

import argparse
import os

from mpt.bench.stats import best_seconds


class Recorder(dict):
    """A dict that records the values written (each one a Keccak the trie computed) and the keys read."""

    def __init__(self):
        super().__init__()
        self.written = []
        self.read = []

    def __setitem__(self, key, value):
        self.written.append((key, value))
        super().__setitem__(key, value)

    def __getitem__(self, key):
        self.read.append(key)
        return super().__getitem__(key)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--set-workload", choices=("mpt", "py-trie"),
                   help="only run the Set10K workload --repeat times on one implementation (for instruction "
                        "counts: valgrind --tool=callgrind; subtract a run with --repeat 0)")
    args = p.parse_args(argv)
    from mpt.bench.cases import pytrie as cases
    from mpt.ethereum.hasher import keccak256_many

    if cases.MISSING:
        print(cases.MISSING)
        return 1
    if args.set_workload:
        cls = cases.mpt_class() if args.set_workload == "mpt" else cases.pytrie_class()
        keys, values = cases.workload()
        for _ in range(args.repeat):
            cases.set_all(cls, keys, values)
        return 0
    mine, theirs = cases.mpt_class(), cases.pytrie_class()
    keys, values = cases.workload()
    n = len(keys)
    noop = {}.get

    def per_call():
        for k in keys:
            noop(k)

    def per_call2():
        for k, v in zip(keys, values):
            noop(k, v)

    call1 = best_seconds(per_call, args.repeat) / n
    call2 = best_seconds(per_call2, args.repeat) / n

    # What the sets store and read: every value written is one Keccak.
    recorder = Recorder()
    cases.set_all(mine, keys, values, recorder)
    set_blobs = [v for _, v in recorder.written]
    set_writes = list(recorder.written)
    set_reads = list(recorder.read)
    keccak_set = best_seconds(lambda: keccak256_many(set_blobs, "scalar"), args.repeat)

    def dict_work(writes=set_writes, reads=set_reads):
        d = {}
        for k, v in writes:
            d[k] = v
        for k in reads:
            d.get(k)

    dict_set = best_seconds(dict_work, args.repeat)
    _, trie_mine = cases.set_all(mine, keys, values)
    _, trie_theirs = cases.set_all(theirs, keys, values)
    get_reads = Recorder()
    get_reads.update(trie_mine.db)
    probe = mine(get_reads, root_hash=trie_mine.root_hash)
    for k in keys:
        probe.get(k)
    reads = list(get_reads.read)
    db = trie_mine.db
    dict_get = best_seconds(lambda: [db[k] for k in reads], args.repeat)
    proof_keys = keys[:1000]
    from mpt.core.rlp import encode

    # get_from_proof stores (so hashes) every node of the proof; the nodes of one proof are independent, so they
    # may share the SIMD lanes: one keccak256_many call per proof, on the default backend
    proof_blobs = [[encode(node) for node in trie_mine.get_proof(k)] for k in proof_keys]
    keccak_proof = best_seconds(lambda: [keccak256_many(blobs) for blobs in proof_blobs], args.repeat) / len(proof_keys)

    rows = []
    t_set = (best_seconds(lambda: cases.set_all(mine, keys, values), args.repeat),
             best_seconds(lambda: cases.set_all(theirs, keys, values), max(1, args.repeat // 2)))
    rows.append(("PyTrie/Set10K+Root", t_set, n * call2, keccak_set + dict_set))
    t_get = (best_seconds(lambda: [trie_mine.get(k) for k in keys], args.repeat),
             best_seconds(lambda: [trie_theirs.get(k) for k in keys], max(1, args.repeat // 2)))
    rows.append(("PyTrie/Get10K", t_get, n * call1, dict_get))
    t_squash = (best_seconds(lambda: cases.squash_all(mine, keys, values), args.repeat),
                best_seconds(lambda: cases.squash_all(theirs, keys, values), max(1, args.repeat // 2)))
    rows.append(("PyTrie/Squash10K", t_squash, n * call2, keccak_set + dict_set))

    def proofs(cls, t):
        root = t.root_hash
        for k in proof_keys:
            cls.get_from_proof(root, k, t.get_proof(k))

    t_proof = (best_seconds(lambda: proofs(mine, trie_mine), args.repeat) / len(proof_keys),
               best_seconds(lambda: proofs(theirs, trie_theirs), max(1, args.repeat // 2)) / len(proof_keys))
    rows.append(("PyTrie/Proof", t_proof, 3 * call1, keccak_proof))

    def fmt(seconds):
        return "%.2f ms" % (seconds * 1e3) if seconds >= 1e-3 else "%.2f us" % (seconds * 1e6)

    print("%-20s %11s %11s %8s %14s %8s %14s %8s" % ("case", "mpt", "py-trie", "speed-up", "per-call floor",
                                                    "x floor", "work floor", "x floor"))
    for name, (t_mine, t_theirs), call_floor, work_floor in rows:
        print("%-20s %11s %11s %7.1fx %14s %7.1fx %14s %7.2fx" % (
            name, fmt(t_mine), fmt(t_theirs), t_theirs / t_mine, fmt(call_floor), t_mine / call_floor,
            fmt(work_floor), t_mine / work_floor))
    print("per-call floor: the same loop calling {}.get (%s per call; Proof: 3 calls). work floor: Set, Squash: "
          "single-lane Keccak of the %d nodes stored, and the dict writes and reads; Get: the %d dict reads; "
          "Proof: the Keccak of each proof's nodes, one SIMD call per proof" % (fmt(call1), len(set_blobs), len(reads)))
    print("load: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
