"""What a node arena would do for the hashing pass's keccak ratio: the same trie hashed flat, in four leaf layouts.

    python scripts/arena_estimate.py 10000 --backend avx512 [--repeat 20] [--rounds 3]

Builds the HashFixedSize trie (make_accounts(n), mpt.bench.cases), copies its nodes into a
mpt.bench._alloc.FlatTrie (flat arrays level by level, no node objects) and times FlatTrie.hash against Keccak
alone on the same encodings (keccak_floor, the bench's keccak ratio), for four ways a leaf could keep its key
and value, and two for a node arena:

* ``inline``: the compact key and the value copied into one contiguous blob, in the order the pass reads them (an
  arena that owns its values and keeps them in the trie's order);
* ``inline-inserted``: the same blob in the order the keys were inserted (an arena that appends what it is given);
* ``compact``: the key in compact form and the value as separate bytes objects;
* ``nibbles``: as ShortNode keeps them today, the key one nibble per byte (packed while encoding) and the value
  the workload's own bytes object;
* ``arena-lists``, ``arena-scan`` and ``arena-walk``: the nodes as an arena of records would hold them, in the
  order it made them (the leaves, key and value inline, in insertion order; the branches of each height in a
  random order, see arena_layout). ``arena-lists`` hashes them level by level in that order, as a pass over
  lists of the dirty records by height kept while inserting would; ``arena-scan`` first finds the heights in one
  pass over the records in their order (children first, as in a log where every change appends a record;
  FlatTrie.hash(levels="scan")); ``arena-walk`` finds them by a walk from the root over the branches
  (levels="walk"), as a pass that keeps no such log must.

The key objects are made in insertion order and the values are the workload's, as a Trie built by inserts holds
them. Each level of the trie is encoded in one run and keccaked in one call (no walk but arena-walk's, no holes), the
leaf eight places on asked for while one is encoded. The root must equal hash()'s. Prints, per round, hash() of
a trie built right before (median of 15, as the bench times it) and, per layout, the median time of one flat
hash (--repeat hashes per timing, 15 timings), each beside Keccak alone on the same encodings timed right after
it, and their ratio.
"""
import argparse
import random
import statistics
import sys
import time

from mpt.bench._alloc import FlatTrie, keccak_floor
from mpt.bench.cases.ethereum import filled_trie, hashed_blobs
from mpt.bench.workloads import hashed_accounts
from mpt.core.rlp import decode
from mpt.core.runtime import set_keccak_backend
from mpt.ethereum.encoding import compact_to_hex, hex_to_keybytes


LAYOUTS = ("inline", "inline-inserted", "compact", "nibbles", "arena-lists", "arena-scan", "arena-walk")


def flat_nodes(trie, keys, values):
    """The trie's nodes for FlatTrie: a list by height (leaves first, the root last) and the level ends. Leaves
    carry the workload's value objects, in the order keys were inserted."""
    decoded = {}
    for path, node_hash, blob in trie.node_iter():
        if node_hash is None:
            raise ValueError("an embedded node: FlatTrie takes tries without them")
        decoded[path] = decode(blob)
    value_of = dict(zip(keys, values))
    height = {}

    def child_paths(path):
        items = decoded[path]
        if len(items) == 17:
            return [path + bytes([i]) for i in range(16) if items[i]]
        if items[0][0] >> 4 >= 2:
            return []
        return [path + compact_to_hex(bytes(items[0]))]

    for path in sorted(decoded, key=len, reverse=True):         # children (longer paths) first
        height[path] = 1 + max((height[c] for c in child_paths(path)), default=-1)
    order = sorted(decoded, key=lambda p: (height[p], p))
    index = {p: i for i, p in enumerate(order)}
    leaf_key = {}
    for path in order:
        items = decoded[path]
        if len(items) == 2 and items[0][0] >> 4 >= 2:
            leaf_key[path] = hex_to_keybytes(path + compact_to_hex(bytes(items[0])))
    nodes = []
    for path in order:
        items = decoded[path]
        if len(items) == 17:
            nodes.append(("branch", [index[path + bytes([i])] if items[i] else -1 for i in range(16)]))
        elif path in leaf_key:
            nodes.append(("leaf", bytes(items[0]), value_of[leaf_key[path]]))
        else:
            nodes.append(("extension", bytes(items[0]), index[path + compact_to_hex(bytes(items[0]))]))
    levels = max(height.values()) + 1
    level_ends = [sum(1 for p in order if height[p] <= h) for h in range(levels)]
    # The leaves' node indices in the order their keys were inserted.
    by_key = {leaf_key[p]: i for p, i in index.items() if p in leaf_key}
    insertion = [by_key[k] for k in keys]
    return nodes, level_ends, insertion


def flat_layouts(nodes, level_ends, insertion):
    """{layout: (FlatTrie, levels)} for every layout of LAYOUTS, over flat_nodes' output (levels: what
    FlatTrie.hash takes)."""
    out = {}
    for layout in LAYOUTS:
        if layout.startswith("arena"):
            out[layout] = (FlatTrie(arena_layout(nodes, level_ends, insertion), level_ends, "inline"),
                           {"arena-lists": "given", "arena-scan": "scan", "arena-walk": "walk"}[layout])
        else:
            leaves = layout.split("-")[0]
            out[layout] = (FlatTrie(leaf_objects(nodes, leaves, insertion), level_ends, leaves,
                                    insertion if layout == "inline-inserted" else None), "given")
    return out


def arena_layout(nodes, level_ends, insertion, seed=1):
    """The nodes as an arena that appends a record per node made would hold them: the leaves in the order their
    keys were inserted, the branches and extensions of each height in a random order (the order a trie's inserts
    made and replaced them in is lost in a finished trie; seeded). Children stay before their parents, so
    FlatTrie takes them, and hash(levels="scan") or hash(levels="walk") find the heights as an arena's pass
    would."""
    rng = random.Random(seed)
    order = list(insertion)
    start = level_ends[0]
    for end in level_ends[1:]:
        level = list(range(start, end))
        rng.shuffle(level)
        order += level
        start = end
    if sorted(order) != list(range(len(nodes))):
        raise ValueError("the leaves in insertion order must be the first level")
    position = {old: new for new, old in enumerate(order)}

    def moved(node):
        if node[0] == "branch":
            return ("branch", [position[c] if c >= 0 else -1 for c in node[1]])
        if node[0] == "extension":
            return ("extension", node[1], position[node[2]])
        return node

    return [moved(nodes[i]) for i in order]


def _median(fn, timings=15):
    return statistics.median(_timed(fn) for _ in range(timings))


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=10000, help="accounts (make_accounts(n))")
    ap.add_argument("--backend", default="avx512", help="Keccak backend (scalar, avx2, avx512)")
    ap.add_argument("--repeat", type=int, default=20, help="flat hashes per timing")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    set_keccak_backend(args.backend)
    keys, values = hashed_accounts(args.n)
    trie = filled_trie(keys, values)
    root = trie.hash()
    nodes, level_ends, insertion = flat_nodes(trie, keys, values)
    blobs = hashed_blobs(trie)
    flats = flat_layouts(nodes, level_ends, insertion)
    for layout, (flat, levels) in flats.items():
        if flat.hash(args.backend, levels=levels) != root:
            sys.exit("%s: the flat root differs from hash()'s" % layout)
    print("%d accounts, %s, %d nodes (%d leaves)" % (args.n, args.backend, len(nodes), len(keys)))
    for r in range(args.rounds):
        t_hash = statistics.median(_fresh_hash(keys, values) for _ in range(15))
        t_keccak = _median(lambda: keccak_floor(blobs, args.repeat, args.backend)) / args.repeat
        print("round %d  hash()          of a fresh trie %.3f ms  Keccak alone %.3f ms  ratio %.2f" % (
            r + 1, t_hash * 1e3, t_keccak * 1e3, t_hash / t_keccak))
        for layout, (flat, levels) in flats.items():
            t_flat = _median(lambda flat=flat, levels=levels: flat.hash(args.backend, args.repeat,
                                                                         levels)) / args.repeat
            t_keccak = _median(lambda: keccak_floor(blobs, args.repeat, args.backend)) / args.repeat
            print("round %d  %-15s flat pass %.3f ms  Keccak alone %.3f ms  ratio %.2f" % (
                r + 1, layout, t_flat * 1e3, t_keccak * 1e3, t_flat / t_keccak))


def _fresh_hash(keys, values):
    """hash() of a trie built right before, as the bench times it."""
    return _timed(filled_trie(keys, values).hash)


def leaf_objects(nodes, layout, insertion):
    """nodes with each leaf's key as the layout keeps it ("nibbles": one nibble per byte and the terminator),
    the key objects made in the keys' insertion order, as a Trie's inserts made them."""
    if layout == "inline":
        return nodes
    made = {}
    for i in insertion:
        compact = nodes[i][1]
        # A new object either way (bytes(b) of a bytes object would be that object, allocated in level order).
        made[i] = bytes(bytearray(compact)) if layout == "compact" else compact_to_hex(compact)
    return [("leaf", made[i], node[2]) if i in made else node for i, node in enumerate(nodes)]


if __name__ == "__main__":
    main()
