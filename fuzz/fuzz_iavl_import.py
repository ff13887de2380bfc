"""Fuzz MutableTree.import_nodes (the state-sync import) with tampered export streams.

Input (read through FuzzInput, so any bytes are a scenario): up to 40 keys of 0-4 bytes, each set in one of
three saved versions (a later set of a key updates it); the tree's export stream of version 3; then up to four
edits of that stream (change one field of a node -- key, value, version, height --, drop, duplicate or move a
node); then the import version (2, 3 or 4).

Contract: import_nodes accepts exactly the streams the rules written out here accept (leaf keys strictly
ascending with values, an inner node after its two subtrees, with a height that fits them, a version no older
than theirs and the smallest key of its right subtree, versions 1..import version, one tree at the end);
anything else raises ExportImportError and leaves the store empty. An accepted stream is imported as exactly the
tree it describes: its export is the stream, its root the one the pure-Python reference hashes (mpt.iavl._reference),
and a tree reopened on the store exports it again.
"""
import hashlib

from mpt.db import MemoryDB
from mpt.errors import ExportImportError
from mpt.iavl import ExportNode, MutableTree
from mpt.iavl import _reference as ref

from fuzz_support import FuzzInput, run_fuzzer

MAX_LEN = 1024
MAX_KEYS = 40
MAX_EDITS = 4
EDITS = ("key", "value", "version", "height", "drop", "duplicate", "move")


def build_stream(inp: FuzzInput):
    """The export stream of version 3 of a tree the input describes."""
    tree = MutableTree(MemoryDB())
    versions = ([], [], [])
    for _ in range(inp.int_below(MAX_KEYS + 1)):
        key = inp.chunk(4)
        versions[inp.int_below(3)].append(key)
    for v, keys in enumerate(versions, 1):
        for key in keys:
            tree.set(key, key + bytes([v]))
        tree.save_version()
    return list(tree.export(3))


def tamper(stream, inp: FuzzInput):
    for _ in range(inp.int_below(MAX_EDITS + 1)):
        if not stream:
            return stream
        kind = inp.choice(EDITS)
        i = inp.int_below(len(stream))
        n = stream[i]
        if kind == "key":
            stream[i] = ExportNode(inp.chunk(4), n.value, n.version, n.height)
        elif kind == "value":
            stream[i] = ExportNode(n.key, None if inp.flag() else inp.chunk(4), n.version, n.height)
        elif kind == "version":
            stream[i] = ExportNode(n.key, n.value, inp.int_below(6), n.height)
        elif kind == "height":
            stream[i] = ExportNode(n.key, n.value, n.version, inp.int_below(8))
        elif kind == "drop":
            del stream[i]
        elif kind == "duplicate":
            stream.insert(i, n)
        else:
            stream.insert(inp.int_below(len(stream)), stream.pop(i))
    return stream


def valid(stream, version: int) -> bool:
    """The import rules, written out independently of mpt.iavl.export."""
    stack = []      # (height, version, smallest key) of each subtree waiting for its parent
    last = None
    for n in stream:
        if not 1 <= n.version <= version:
            return False
        if n.height == 0:
            if n.value is None or (last is not None and n.key <= last):
                return False
            last = n.key
            stack.append((0, n.version, n.key))
            continue
        if n.value is not None or len(stack) < 2:
            return False
        (lh, lv, low), (rh, rv, right_low) = stack[-2], stack[-1]
        if max(lh, rh) != n.height - 1 or abs(lh - rh) > 1 or n.version < max(lv, rv) or n.key != right_low:
            return False
        del stack[-2:]
        stack.append((n.height, n.version, low))
    return len(stack) <= 1


def reference_root(stream) -> bytes:
    stack = []
    for n in stream:
        if n.height == 0:
            stack.append(ref.leaf(n.key, n.value, n.version))
            continue
        right, left = stack.pop(), stack.pop()
        stack.append({"height": n.height, "size": left["size"] + right["size"], "version": n.version,
                      "key": n.key, "left_hash": ref.node_hash(left), "right_hash": ref.node_hash(right)})
    return ref.node_hash(stack[0]) if stack else hashlib.sha256(b"").digest()


def test_one_input(data: bytes) -> None:
    inp = FuzzInput(data)
    stream = tamper(build_stream(inp), inp)
    version = 2 + inp.int_below(3)
    db = MemoryDB()
    tree = MutableTree(db)
    try:
        root = tree.import_nodes(stream, version)
    except ExportImportError:
        assert not valid(stream, version), "import refuses a stream the rules accept"
        assert len(db) == 0 and tree.version == 0, "a refused import wrote to the store"
        return
    assert valid(stream, version), "import accepts a stream the rules refuse"
    assert tree.version == version and root == tree.hash()
    assert root == reference_root(stream), "the imported root differs from the reference's"
    assert list(tree.export()) == stream, "the imported tree does not export its stream"
    reopened = MutableTree(db)
    assert reopened.load() == version and list(reopened.export()) == stream


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
