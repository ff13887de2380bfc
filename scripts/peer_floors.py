"""The floors that docs/performance.md ("Against the peers") sets beside the cases above 0.3 times Go.

    python scripts/peer_floors.py [--repeat 40]

Each floor is the part of a bench case's work that no implementation called from Python avoids, timed alone on
the case's own inputs (mpt.bench.cases), next to the case itself:

* VerifyProof: the Keccak-256 of the proof's nodes, all at once on the Keccak backend's lanes (and, for
  comparison, one after another on one lane), before any walking;
* MerkleVerify: the SHA-256 of its leaf and of each inner node up to the root, one message at a time (each waits
  for the hash before it);
* IAVLTree/Get100K/MemoryDB: the bench's loop calling ``dict.get`` of the same keys instead of ``tree.get``;
* IAVLTree/Prune/LevelDB: LevelDB's own part of the prune, on a fresh store of the case: a read of each node
  record the prune reads (in its order, from a C loop: ``map`` over plyvel's get), then one write batch of the
  keys it deletes.

Best of --repeat runs, in microseconds per operation of the bench case (the prune: best of 5, in milliseconds;
each run needs a fresh store).
"""

from __future__ import annotations

import argparse
import os
import time

from mpt.bench._alloc import keccak_floor
from mpt.bench.cases import get
from mpt.bench.stats import best_seconds
from mpt.core._sha256.binding import sha256_floor
from mpt.core.runtime import keccak_backend


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=40, help="runs of each measurement; the best is kept")
    args = ap.parse_args()
    calls = 1000

    from mpt import verify_proof

    root, pairs, _ = get("VerifyProof").setup()
    key, proof = pairs[0]
    nodes = list(proof)
    print("VerifyProof: verify_proof %.2f us; the Keccak of its %d nodes on the %s lanes %.2f us, one after "
          "another on one lane %.2f us" % (
              best_seconds(lambda: [verify_proof(root, key, proof) for _ in range(calls)], args.repeat) / calls * 1e6,
              len(nodes), keccak_backend(),
              best_seconds(lambda: keccak_floor(nodes, calls, keccak_backend()), args.repeat) / calls * 1e6,
              best_seconds(lambda: keccak_floor(nodes, calls, "scalar"), args.repeat) / calls * 1e6))

    root, pairs = get("MerkleVerify").setup()
    p, leaf = pairs[0]
    # The messages of the walk: 0x00 || leaf, then 0x01 || left || right per aunt (their contents do not change
    # the cost of hashing them).
    messages = [b"\x00" + bytes(leaf)] + [b"\x01" + os.urandom(64) for _ in p.aunts]
    print("MerkleVerify: Proof.verify %.2f us; its %d SHA-256 messages one at a time %.2f us" % (
        best_seconds(lambda: [p.verify(root, leaf) for _ in range(calls)], args.repeat) / calls * 1e6, len(messages),
        best_seconds(lambda: sha256_floor(messages, calls, False), args.repeat) / calls * 1e6))

    case = get("IAVLTree/Get100K/MemoryDB")
    tree, keys = case.setup()
    case.op((tree, keys))                                   # the fast-node cache filled, as in the bench
    values = {k: tree.get(k) for k in keys}

    def floor_op():
        call = values.get                                   # the bench's loop (registry.each_key), on a dict
        for k in keys:
            call(k)

    print("IAVLTree/Get100K/MemoryDB: %d gets %.0f us; the same loop calling dict.get %.0f us" % (
        len(keys), best_seconds(lambda: case.op((tree, keys)), args.repeat) * 1e6,
        best_seconds(floor_op, args.repeat) * 1e6))

    try:
        import plyvel  # noqa: F401
    except ImportError:
        print("IAVLTree/Prune/LevelDB: plyvel is not installed")
        return
    prune_floor()


class _LoggedReads:
    """A store whose node reads (unchecked_get, what NodeDB calls) are logged; the rest is the store's."""

    def __init__(self, store):
        self._store = store
        self.reads = []
        read = store.unchecked_get

        def logged(key):
            self.reads.append(key)
            return read(key)

        self.unchecked_get = logged

    def __getattr__(self, name):
        return getattr(self._store, name)


def prune_floor(runs=5):
    """IAVLTree/Prune/LevelDB against LevelDB's own part of it."""
    from mpt.iavl import MutableTree

    case = get("IAVLTree/Prune/LevelDB")
    store = case.setup().db
    before = {k for k, _ in store.iterate()}
    logged = _LoggedReads(store)
    tree = MutableTree(logged)
    del logged.reads[:]                         # the prune's reads only, not the metadata of opening the tree
    tree.delete_versions_to(9)
    reads = [k for k in dict.fromkeys(logged.reads) if k[:1] in (b"s", b"n")]      # node records
    deletes = sorted(before - {k for k, _ in store.iterate()})

    def store_work():
        fresh = case.setup().db                 # the case's store, rebuilt (the last one is closed and removed)
        t0 = time.perf_counter()
        list(map(fresh.unchecked_get, reads))
        t1 = time.perf_counter()
        with fresh.write_batch() as batch:
            list(map(getattr(batch, "bytes_delete", batch.delete), deletes))
        return t1 - t0, time.perf_counter() - t1

    def op():
        tree = case.setup()
        t0 = time.perf_counter()
        case.op(tree)
        return time.perf_counter() - t0

    work = [store_work() for _ in range(runs)]
    print("IAVLTree/Prune/LevelDB: delete_versions_to %.1f ms; LevelDB alone: %d node reads %.1f ms and a batch of %d "
          "deletes %.1f ms" % (min(op() for _ in range(runs)) * 1e3, len(reads), min(w[0] for w in work) * 1e3,
                               len(deletes), min(w[1] for w in work) * 1e3))


if __name__ == "__main__":
    main()
