"""The floors that docs/performance.md ("Against the peers") sets beside the cases above 0.3 times Go.

    python scripts/peer_floors.py [--repeat 40]

Each floor is the part of a bench case's work that no implementation called from Python avoids, timed alone on
the case's own inputs (mpt.bench.cases), next to the case itself:

* VerifyProof: the Keccak-256 of the proof's nodes, all at once on the Keccak backend's lanes (and, for
  comparison, one after another on one lane), before any walking; and of its longest node alone (the root branch,
  four Keccak blocks that wait for each other: no number of lanes hashes the proof faster);
* MerkleVerify: the SHA-256 of its leaf and of each inner node up to the root, one message at a time (each waits
  for the hash before it);
* IAVLTree/Get100K/MemoryDB: the bench's loop calling ``dict.get`` of the same keys instead of ``tree.get``;
* IAVLNode/Decode and IAVLNode/Encode (stream-vbyte, small): the call alone (``call_floor``, a function called as
  ``decode_node(data, fmt, node_key)`` that returns None; ``FloorNode.call``, a method called as
  ``leaf.to_bytes(fmt)``), then what the call must return: a node object with its key and value bytes
  (``decode_floor``), a new bytes object of the encoding's size (``FloorNode.to_bytes``); nothing parsed or written;
* IAVLTree/Prune/MemoryDB: the store's own part of the prune, on a fresh store of the case: one lookup in its
  dict of each node record the prune reads (each once, in the prune's order, with a new key object as the walk
  builds one; from a C loop: ``map``), then one ``pop`` of each key it deletes; and the same lookups in the
  order Go's algorithm reads them, repeats included (step v + 1 reads again what step v read), with the pops;
* IAVLTree/Prune/LevelDB: LevelDB's own part, likewise: the ordered scans of the versions the prune scans (each
  step reads the records the next version wrote in one scan), a read of each node record it still reads one at a
  time (from a C loop: ``map`` over plyvel's get), then one write batch of the keys it deletes.

Best of --repeat runs, in microseconds per operation of the bench case (the prunes: best of 5, in milliseconds;
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
    longest = [max(nodes, key=len)]     # the root branch: its Keccak blocks wait for each other, whatever the lanes
    print("VerifyProof: verify_proof %.2f us; the Keccak of its %d nodes on the %s lanes %.2f us, one after "
          "another on one lane %.2f us, the longest node (%d bytes) alone %.2f us" % (
              best_seconds(lambda: [verify_proof(root, key, proof) for _ in range(calls)], args.repeat) / calls * 1e6,
              len(nodes), keccak_backend(),
              best_seconds(lambda: keccak_floor(nodes, calls, keccak_backend()), args.repeat) / calls * 1e6,
              best_seconds(lambda: keccak_floor(nodes, calls, "scalar"), args.repeat) / calls * 1e6,
              len(longest[0]), best_seconds(lambda: keccak_floor(longest, calls, "scalar"), args.repeat) / calls * 1e6))

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

    codec_floors(args.repeat)

    prune_floor("MemoryDB")
    try:
        import plyvel  # noqa: F401
    except ImportError:
        print("IAVLTree/Prune/LevelDB: plyvel is not installed")
        return
    prune_floor("LevelDB")


def codec_floors(repeat_runs):
    """IAVLNode/Decode and IAVLNode/Encode, stream-vbyte, small number: each op beside its call floors."""
    from itertools import repeat

    from mpt.bench._alloc import FloorNode, call_floor, decode_floor
    from mpt.iavl import LeafNode, decode_node

    leaf = LeafNode(b"key", b"value", 3)
    data = leaf.to_bytes("vbyte")
    floor = FloorNode(b"key", b"value", 3, len(data))
    calls = 100000

    def per_call(func, *args):
        def loop():
            for _ in repeat(None, calls):      # the bench's loop (mpt.bench.cases.iavl)
                func(*args)
        return best_seconds(loop, repeat_runs) / calls * 1e9

    print("IAVLNode/Decode/small_number/vbyte: decode_node %.1f ns; the call alone %.1f ns, returning a node object "
          "with its key and value bytes %.1f ns" % (
              per_call(decode_node, data, "vbyte", None), per_call(call_floor, data, "vbyte", None),
              per_call(decode_floor, data, "vbyte", None)))
    print("IAVLNode/Encode/small_integer/vbyte: leaf.to_bytes %.1f ns; the method call alone %.1f ns, with a new "
          "bytes object of the encoding's size (%d bytes) %.1f ns" % (
              per_call(leaf.to_bytes, "vbyte"), per_call(floor.call, "vbyte"), len(data),
              per_call(floor.to_bytes, "vbyte")))


class _LoggedReads:
    """A store whose node reads (unchecked_get or get, what NodeDB binds) are logged; the rest is the store's. Not a
    persistent store to NodeDB, so a prune on it scans nothing: with the record cache off it reads every record
    it uses one at a time."""

    def __init__(self, store):
        self._store = store
        self.reads = []
        read = getattr(store, "unchecked_get", None) or store.get

        def logged(key, *default):
            self.reads.append(key)
            return read(key, *default)

        self.unchecked_get = logged

    def __getattr__(self, name):
        return getattr(self._store, name)


def _prune_work(kind):
    """The node records IAVLTree/Prune/<kind> reads (each once, in its order: the record cache off, nothing
    scanned), the keys it deletes, the versions whose records it scans on a persistent store, and every node
    record read in Go's order, repeats included."""
    import mpt.iavl.nodedb as nodedb
    from mpt.bench.cases.iavl_trees import PRUNE_VERSIONS
    from mpt.iavl import MutableTree

    store = get("IAVLTree/Prune/" + kind).setup().db
    before = {k for k, _ in store.iterate()}
    logged = _LoggedReads(store)
    limit, nodedb.PRUNE_CACHED_RECORDS = nodedb.PRUNE_CACHED_RECORDS, 0
    try:
        tree = MutableTree(logged)
        first = tree.available_versions()[0]
        del logged.reads[:]                     # the prune's reads only, not the metadata of opening the tree
        tree.delete_versions_to(PRUNE_VERSIONS - 1)
    finally:
        nodedb.PRUNE_CACHED_RECORDS = limit
    every_read = [k for k in logged.reads if k[:1] in (b"s", b"n")]                # node records
    deletes = sorted(before - {k for k, _ in store.iterate()})
    return list(dict.fromkeys(every_read)), deletes, range(first + 1, PRUNE_VERSIONS + 1), every_read


def _node_version(key):
    return int.from_bytes(key[1:9], "big") if key[:1] == b"s" and len(key) == 13 else -1


def _best_op(case, runs):
    def op():
        tree = case.setup()
        t0 = time.perf_counter()
        case.op(tree)
        return time.perf_counter() - t0

    return min(op() for _ in range(runs))


def prune_floor(kind, runs=5):
    """IAVLTree/Prune/<kind> against the store's own part of it."""
    case = get("IAVLTree/Prune/" + kind)
    reads, deletes, scanned, every_read = _prune_work(kind)

    if kind == "MemoryDB":
        def store_work():
            records = case.setup().db.records
            keys, gone = [bytes(bytearray(k)) for k in reads], [bytes(bytearray(k)) for k in deletes]
            t0 = time.perf_counter()
            list(map(records.__getitem__, keys))
            t1 = time.perf_counter()
            list(map(records.pop, gone))
            return 0.0, t1 - t0, time.perf_counter() - t1

        def go_order_work():
            records = case.setup().db.records
            # Each key made right before its lookup, as the walk makes it (from a bytearray laid out in order).
            keys, gone = [bytearray(k) for k in every_read], [bytearray(k) for k in deletes]
            t0 = time.perf_counter()
            list(map(records.__getitem__, map(bytes, keys)))
            t1 = time.perf_counter()
            list(map(records.pop, map(bytes, gone)))
            return t1 - t0, time.perf_counter() - t1

        work = [store_work() for _ in range(runs)]
        go_order = [go_order_work() for _ in range(runs)]
        print("IAVLTree/Prune/MemoryDB: delete_versions_to %.1f ms; its dict alone: %d node lookups %.1f ms and %d "
              "pops %.1f ms; in Go's order, %d lookups (repeats included) %.1f ms and the pops %.1f ms" % (
                  _best_op(case, runs) * 1e3, len(reads), min(w[1] for w in work) * 1e3, len(deletes),
                  min(w[2] for w in work) * 1e3, len(every_read), min(w[0] for w in go_order) * 1e3,
                  min(w[1] for w in go_order) * 1e3))
        return
    ranges = [(b"s" + v.to_bytes(8, "big"), b"s" + (v + 1).to_bytes(8, "big")) for v in scanned]
    point = [k for k in reads if _node_version(k) not in scanned]

    def store_work():
        fresh = case.setup().db                 # the case's store, rebuilt (the last one is closed and removed)
        t0 = time.perf_counter()
        records = sum(len(list(fresh.iterate(lo, hi))) for lo, hi in ranges)
        t1 = time.perf_counter()
        list(map(fresh.unchecked_get, point))
        t2 = time.perf_counter()
        with fresh.write_batch() as batch:
            list(map(getattr(batch, "bytes_delete", batch.delete), deletes))
        return records, t1 - t0, t2 - t1, time.perf_counter() - t2

    work = [store_work() for _ in range(runs)]
    print("IAVLTree/Prune/LevelDB: delete_versions_to %.1f ms; LevelDB alone: scans of %d records %.1f ms, %d node "
          "reads %.1f ms and a batch of %d deletes %.1f ms" % (
              _best_op(case, runs) * 1e3, work[0][0], min(w[1] for w in work) * 1e3, len(point),
              min(w[2] for w in work) * 1e3, len(deletes), min(w[3] for w in work) * 1e3))


if __name__ == "__main__":
    main()
