"""Cosmos IAVL cases (mpt.iavl): node codecs in the three formats (cosmos/iavl PR #673's benchmarks) and the tree.

``IAVLNode/...`` are PR #673's node benchmarks (``maxEncodedSize``, ``Encode``, ``Decode`` per format);
``IAVLTree/...`` time building, saving and iavl's ``TestTreeHash`` workload, roots checked against iavl's.
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache
from itertools import repeat
from typing import Any, List, Tuple

from mpt.bench.registry import Case, expect
from mpt.bench.workloads import (
    IAVL_NODE_ENCODINGS,
    IAVL_NODE_LEAVES,
    IAVL_TREE_HASH_SEED,
    GoRand,
    iavl_entries,
)

# Codec calls per op call: one call is far below the clock's resolution. The loops run over
# itertools.repeat, not range, whose ints above 256 would be allocations counted against the codec.
_IAVL_BATCH = 1000
_IAVL_FORMATS = ("vbyte", "legacy", "v1")
_IAVL_TREE_SIZE = 10000


def _iavl_default(fmt: str, size: str = "small") -> bool:
    """Only the stream-vbyte small-number cases join the default run (it stays about a minute); ``-b IAVL``
    or ``--all`` runs every format."""
    return fmt == "vbyte" and size == "small"


def _iavl_leaf(size: str):
    from mpt.iavl import LeafNode

    key, value, version = IAVL_NODE_LEAVES[size]
    return LeafNode(key, value, version)


def _iavl_node_key(size: str) -> bytes:
    from mpt.iavl import node_key

    return node_key(IAVL_NODE_LEAVES[size][2], 1)


def _iavl_max_encoded_size(fmt: str) -> Case:
    def setup():
        return _iavl_leaf("small")

    def op(leaf):
        size = leaf.encoded_size
        for _ in repeat(None, _IAVL_BATCH):
            size(fmt)

    def check(leaf):
        expect("encoded_size", leaf.encoded_size(fmt), len(bytes.fromhex(IAVL_NODE_ENCODINGS["small", fmt])))

    return Case(
        name="IAVLNode/maxEncodedSize/%s" % fmt, group="IAVLNode/maxEncodedSize", setup=setup, op=op, check=check,
        ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt),
        doc="leaf.encoded_size(%r) (exact size, nothing encoded)" % fmt,
    )


def _iavl_encode(size: str, fmt: str) -> Case:
    def setup():
        return _iavl_leaf(size)

    def op(leaf):
        to_bytes = leaf.to_bytes
        for _ in repeat(None, _IAVL_BATCH):
            to_bytes(fmt)

    def check(leaf):
        from mpt.iavl import decode_node

        data = leaf.to_bytes(fmt)
        if (size, fmt) in IAVL_NODE_ENCODINGS:
            expect("encoding", data.hex(), IAVL_NODE_ENCODINGS[size, fmt])
        back = decode_node(data, fmt, _iavl_node_key(size) if fmt == "v1" else None)
        expect("round trip", (back.key, back.value, back.version), (leaf.key, leaf.value, leaf.version))

    return Case(
        name="IAVLNode/Encode/%s_integer/%s" % (size, fmt), group="IAVLNode/Encode", setup=setup, op=op,
        check=check, ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt, size),
        doc="leaf.to_bytes(%r), version %d" % (fmt, IAVL_NODE_LEAVES[size][2]),
    )


def _iavl_decode(size: str, fmt: str) -> Case:
    def setup():
        return _iavl_leaf(size).to_bytes(fmt), (_iavl_node_key(size) if fmt == "v1" else None)

    def op(state):
        from mpt.iavl import decode_node

        data, nk = state
        for _ in repeat(None, _IAVL_BATCH):
            decode_node(data, fmt, nk)

    def check(state):
        from mpt.iavl import decode_node

        data, nk = state
        node = decode_node(data, fmt, nk)
        expect("decoded leaf", (node.key, node.value, node.version), IAVL_NODE_LEAVES[size])
        expect("hash", node.hash, _iavl_leaf(size).hash)

    return Case(
        name="IAVLNode/Decode/%s_number/%s" % (size, fmt), group="IAVLNode/Decode", setup=setup, op=op,
        check=check, ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt, size),
        doc="decode_node(leaf bytes, %r), version %d" % (fmt, IAVL_NODE_LEAVES[size][2]),
    )


def _iavl_check_tree(tree, entries) -> None:
    from mpt.iavl import MutableTree

    expect("size", len(tree), len(dict(entries)))
    for k, v in entries[:: max(1, len(entries) // 500)]:
        expect("get %s" % k.hex(), tree.get(k), v)
    root, version = tree.save_version()
    reopened = MutableTree(tree.db)
    reopened.load_version(version)
    expect("reloaded root", reopened.hash(), root)
    expect("ordered items", list(reopened.keys()), sorted(dict(entries)))


def _iavl_set() -> Case:
    def setup():
        return iavl_entries(_IAVL_TREE_SIZE)

    def op(entries):
        from mpt.iavl import MutableTree

        tree = MutableTree()
        put = tree.set
        for k, v in entries:
            put(k, v)
        return tree

    def check(entries):
        _iavl_check_tree(op(entries), entries)

    return Case(
        name="IAVLTree/Set10K", group="IAVLTree/Set10K", size=_IAVL_TREE_SIZE, setup=setup, op=op, check=check,
        doc="MutableTree.set of 10K fresh 16-byte keys (balancing included, no hashing)",
    )


def _iavl_save_version() -> Case:
    def setup():
        from mpt.iavl import MutableTree

        tree = MutableTree()
        entries = iavl_entries(_IAVL_TREE_SIZE)
        for k, v in entries:
            tree.set(k, v)
        return tree, entries

    def op(state):
        return state[0].save_version()

    def check(state):
        tree, entries = state
        _iavl_check_tree(tree, entries)

    return Case(
        name="IAVLTree/SaveVersion10K", group="IAVLTree/SaveVersion10K", size=_IAVL_TREE_SIZE, setup=setup, op=op,
        check=check, stateful=True,
        doc="save_version() of 10K fresh keys: hash every node, v1-encode and write them to a MemoryDB",
    )


def _iavl_tree_hash() -> Case:
    def setup():
        return GoRand(IAVL_TREE_HASH_SEED)

    def op(r):
        from mpt.iavl import MutableTree

        tree = MutableTree()
        keys: List[bytes] = []
        roots = []
        for _ in range(4):
            for _ in range(4096):
                if keys and r.float64() <= 0.2:
                    tree.remove(keys.pop(r.intn(len(keys))))
                elif keys and r.float64() <= 0.4:
                    tree.set(keys[r.intn(len(keys))], r.read(16))
                else:
                    key = r.read(16)
                    tree.set(key, r.read(16))
                    keys.append(key)
            roots.append(tree.save_version()[0].hex())
        return roots

    def check(r):
        want = ["58ec30fa27f338057e5964ed9ec3367e59b2b54bec4c194f10fde7fed16c2a1c",
                "91ad3ace227372f0064b2d63e8493ce8f4bdcbd16c7a8e4f4d54029c9db9570c",
                "92c25dce822c5968c228cfe7e686129ea281f79273d4a8fcf6f9130a47aa5421",
                "e44d170925554f42e00263155c19574837a38e3efed8910daccc7fa12f560fa0"]
        expect("TestTreeHash roots", op(r), want)

    return Case(
        name="IAVLTree/TestTreeHash", group="IAVLTree/TestTreeHash", size=16384, setup=setup, op=op, check=check,
        stateful=True, small=False,
        doc="iavl's TestTreeHash: 4 versions x 4096 random set/update/remove (Go math/rand) + save_version, "
            "roots checked against iavl's",
    )


_IAVL_EXPORT_SIZE = 100000


@lru_cache(maxsize=None)
def _iavl_export_stream() -> Tuple[Any, ...]:
    """The export stream of the saved Set100K+Save tree (100K 16-byte keys with 32-byte values, seeded)."""
    from mpt.bench.cases.iavl_trees import saved_tree
    from mpt.iavl import MutableTree

    tree = MutableTree(saved_tree("MemoryDB")[0])
    tree.load()
    return tuple(tree.export())


def _iavl_check_stream(nodes, n: int) -> None:
    expect("exported nodes", len(nodes), 2 * n - 1)
    leaves = [x.key for x in nodes if x.height == 0]
    expect("leaves in key order", leaves, sorted(leaves))


def _iavl_export(kind: str) -> Case:
    def setup():
        # A tree opened on the store, as Go's exporter reads a saved version: every node is read and decoded.
        from mpt.bench.cases.iavl_trees import saved_tree
        from mpt.iavl import MutableTree

        tree = MutableTree(saved_tree(kind)[0])
        tree.load()
        return tree

    def op(tree):
        # Consumed at C speed: the case measures the exporter, not a Python loop around it.
        deque(tree.export(), maxlen=0)

    def check(tree):
        nodes = tuple(tree.export())
        _iavl_check_stream(nodes, _IAVL_EXPORT_SIZE)
        expect("export", nodes, _iavl_export_stream())

    return Case(
        name="IAVLTree/Export100K/%s" % kind, group="IAVLTree/Export100K", size=_IAVL_EXPORT_SIZE, setup=setup,
        op=op, check=check, stateful=True, small=False,
        doc="MutableTree.export() of the saved Set100K+Save tree just opened on %s (199,999 ExportNodes in Go's "
            "exporter order, every node read from the store)" % kind,
    )


def _iavl_import(kind: str) -> Case:
    def setup():
        from mpt.bench.cases.iavl_trees import _SCRATCH

        return _iavl_export_stream(), _SCRATCH.new(kind)

    def op(state):
        from mpt.iavl import MutableTree

        return MutableTree(state[1]).import_nodes(state[0], 1)

    def check(state):
        from mpt.bench.cases.iavl_trees import saved_tree
        from mpt.iavl import MutableTree

        _iavl_check_stream(state[0], _IAVL_EXPORT_SIZE)
        source = MutableTree(saved_tree("MemoryDB")[0])
        source.load()
        expect("imported root", op(state), source.hash())
        reopened = MutableTree(state[1])
        expect("reopened version", reopened.load(), 1)
        expect("reopened root", reopened.hash(), source.hash())

    return Case(
        name="IAVLTree/Import100K/%s" % kind, group="IAVLTree/Import100K", size=_IAVL_EXPORT_SIZE, setup=setup,
        op=op, check=check, stateful=True, small=False,
        doc="MutableTree.import_nodes() of the Export100K stream into an empty tree on %s: checks, node keys, "
            "hashes, v1 encodings and one batch, then the fast nodes Go's LoadVersion writes" % kind,
    )


def cases() -> List[Case]:
    """The IAVL cases: node codecs per format, then the tree."""
    out = [_iavl_max_encoded_size(fmt) for fmt in _IAVL_FORMATS]
    out += [_iavl_encode(size, fmt) for size in ("small", "large") for fmt in _IAVL_FORMATS]
    out += [_iavl_decode(size, fmt) for size in ("small", "large") for fmt in _IAVL_FORMATS]
    out += [_iavl_set(), _iavl_save_version(), _iavl_tree_hash()]
    from mpt.bench.cases import iavl_trees     # the tree on a node store (MemoryDB, LevelDB)

    out += iavl_trees.cases(Case, expect)
    kinds = [k for k in iavl_trees.STORES if k == "MemoryDB" or iavl_trees.leveldb_available()]
    out += [_iavl_export(kind) for kind in kinds] + [_iavl_import(kind) for kind in kinds]
    return out
