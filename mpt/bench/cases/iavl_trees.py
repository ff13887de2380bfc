"""IAVL tree cases on a node store (Go iavl's tree benchmarks, docs/benchmarks.rst "IAVL trees"): sets + save,
gets through the fast index, pruning; each on MemoryDB and on LevelDB (skipped without plyvel).

Workloads: 16-byte random keys with 32-byte values from a seeded generator (the same for both stores):

* ``IAVLTree/Set10K+Save/<store>``, ``IAVLTree/Set100K+Save/<store>``: N sets on an empty tree, then
  ``save_version`` (nodes, fast nodes and the storage version written in one batch).
* ``IAVLTree/Get100K/<store>``: 10,000 gets of present keys in a saved 100,000-key tree, reopened with ``load()``
  (so the gets go through the fast index, as Go's); one op = the 10,000 gets, Go's workload.
* ``IAVLTree/Prune/<store>``: 10 versions of a 10,000-key tree (1,000 updates, 100 removes, 100 inserts each
  after the first), then ``delete_versions_to(9)``: the op is the pruning alone.
"""
from __future__ import annotations

import os
import random
import shutil
import tempfile
from typing import Any, List

from mpt.bench.registry import each_key
from mpt.bench.workloads import iavl_prune_history, iavl_tree_entries

STORES = ("MemoryDB", "LevelDB")
GET_KEYS = 10000
PRUNE_KEYS = 10000
PRUNE_VERSIONS = 10


def leveldb_available() -> bool:
    try:
        import plyvel  # noqa: F401
    except ImportError:
        return False
    return True


class _Scratch:
    """Fresh stores for the cases: a LevelDB in a scratch directory, closed and removed when the next is made
    (one op's store at a time) and at exit."""

    def __init__(self):
        self.root = None
        self.store = None
        self.count = 0

    def new(self, kind: str):
        from mpt.db import LevelDBStore, MemoryDB

        if kind == "MemoryDB":
            return MemoryDB()
        self.release()
        if self.root is None:
            import atexit

            self.root = tempfile.mkdtemp(prefix="mpt-bench-iavl-")
            atexit.register(self.cleanup)
        self.count += 1
        self.store = LevelDBStore(os.path.join(self.root, "db%d" % self.count), create=True)
        return self.store

    def release(self):
        if self.store is not None:
            path = self.store.path
            self.store.close()
            self.store = None
            shutil.rmtree(path, ignore_errors=True)

    def cleanup(self):
        self.release()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


_SCRATCH = _Scratch()
_KEPT = {}          # Get100K's saved trees, one per store kind, built once per process


def _check_saved(tree, entries, expect) -> None:
    from mpt.iavl import MutableTree

    expect("size", len(tree), len(entries))
    reopened = MutableTree(tree.db)
    expect("latest version", reopened.load(), tree.version)
    expect("reloaded root", reopened.hash(), tree.hash())
    for k, v in entries[:: max(1, len(entries) // 500)]:
        expect("get %s" % k.hex(), reopened.get(k), v)
    expect("fast nodes", sum(1 for _ in tree.db.iterate(b"f", b"g")), len(entries))


def _set_save(case_type, expect, label: str, n: int, kind: str):
    def setup():
        return iavl_tree_entries(n), _SCRATCH.new(kind)

    def op(state):
        from mpt.iavl import MutableTree

        entries, store = state
        tree = MutableTree(store)
        put = tree.set
        for k, v in entries:
            put(k, v)
        tree.save_version()
        return tree

    def check(state):
        _check_saved(op(state), state[0], expect)

    return case_type(
        name="IAVLTree/Set%s+Save/%s" % (label, kind), group="IAVLTree/Set+Save", size=n, setup=setup,
        op=op, check=check, stateful=True, small=(n <= 10000 and kind == "MemoryDB"),
        doc="%s sets of fresh 16-byte keys (32-byte values) on an empty tree, then save_version, on %s" % (label, kind),
    )


def saved_tree(kind: str):
    if kind not in _KEPT:
        from mpt.iavl import MutableTree

        if kind == "MemoryDB":
            from mpt.db import MemoryDB

            store = MemoryDB()
        else:
            from mpt.db import LevelDBStore

            path = tempfile.mkdtemp(prefix="mpt-bench-iavl-get-")
            import atexit

            atexit.register(shutil.rmtree, path, True)
            store = LevelDBStore(os.path.join(path, "db"), create=True)
        tree = MutableTree(store)
        for k, v in iavl_tree_entries(100000):
            tree.set(k, v)
        tree.save_version()
        keys = [k for k, _ in random.Random(7).sample(iavl_tree_entries(100000), GET_KEYS)]
        _KEPT[kind] = store, keys
    return _KEPT[kind]


def _get100k(case_type, expect, kind: str):
    def setup():
        from mpt.iavl import MutableTree

        store, keys = saved_tree(kind)
        tree = MutableTree(store)
        tree.load()
        return tree, keys

    def check(state):
        tree, keys = state
        want = dict(iavl_tree_entries(100000))
        expect("fast index on", tree.ndb.fast_storage_enabled(), True)
        for k in keys:
            expect("get %s" % k.hex(), tree.get(k), want[k])
        absent = b"\x00" * 16
        expect("absent key", tree.get(absent), want.get(absent))

    return case_type(
        name="IAVLTree/Get100K/%s" % kind, group="IAVLTree/Get100K", size=100000, setup=setup, op=each_key("get"),
        check=check, small=False,
        doc="10,000 random gets of present keys in a saved 100K-key tree (fast index), on %s" % kind,
    )


def _prune(case_type, expect, kind: str):
    def setup():
        from mpt.iavl import MutableTree

        tree = MutableTree(_SCRATCH.new(kind))
        iavl_prune_history(tree, PRUNE_KEYS, PRUNE_VERSIONS)
        return tree

    def op(tree):
        return tree.delete_versions_to(PRUNE_VERSIONS - 1)

    def check(tree):
        from mpt.iavl import MutableTree

        root = tree.hash()
        deleted = op(tree)
        expect("versions left", tree.available_versions(), [PRUNE_VERSIONS])
        again = MutableTree(tree.db)
        again.load()
        expect("root after pruning", again.hash(), root)
        expect("keys after pruning", len(list(again.items())), len(tree))
        # Every node left is one of the latest tree's: their count is its 2n - 1 nodes.
        left = sum(1 for k, v in tree.db.iterate(b"s", b"t") if len(v) != 0)
        expect("nodes left", left, 2 * len(tree) - 1)
        expect("keys deleted", deleted > 0, True)

    return case_type(
        name="IAVLTree/Prune/%s" % kind, group="IAVLTree/Prune", size=PRUNE_KEYS, setup=setup, op=op, check=check,
        stateful=True, small=False,
        doc="delete_versions_to(9) after 10 versions of a 10K-key tree (1,000 updates, 100 removes, 100 inserts "
            "per version), on %s" % kind,
    )


def cases(case_type: Any, expect: Any) -> List[Any]:
    """The IAVL tree-on-a-store cases, built with the registry's Case class and its check helper."""
    kinds = [k for k in STORES if k == "MemoryDB" or leveldb_available()]
    out = []
    for label, n in (("10K", 10000), ("100K", 100000)):
        out += [_set_save(case_type, expect, label, n, kind) for kind in kinds]
    out += [_get100k(case_type, expect, kind) for kind in kinds]
    out += [_prune(case_type, expect, kind) for kind in kinds]
    return out
