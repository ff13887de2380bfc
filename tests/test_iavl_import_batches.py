"""MutableTree.import_nodes writes as it reads, in batches (Go's importer flushes every maxBatchSize = 10,000 nodes):
the same store content whatever the batch size, the version invisible until the last batch, and a stream that
fails part-way leaves the store as it was (Go's Close without Commit would leave the flushed nodes behind). An
import needs an empty store; a store holding another program's records is refused before anything is written."""
import json

import pytest

import mpt.iavl.export as export_module
from mpt.db import MemoryDB
from mpt.errors import ExportImportError, ForeignStoreError
from mpt.iavl import ExportNode, MutableTree
from mpt.iavl.nodedb import STORAGE_VERSION_KEY, root_key

from conftest import IAVL_STORE_KINDS, VECTORS, new_iavl_store

FIXTURE = VECTORS / "cosmos" / "iavl_store_A"
with open(FIXTURE / "export_v6.jsonl") as _f:
    GO_EXPORT_V6 = [json.loads(line) for line in _f]
ROOT_V6 = bytes.fromhex(json.loads((FIXTURE / "iavl_store.json").read_text())["latest_root_hex"])
OTHER = (b"zz-not-iavl", b"kept")            # a record that is not IAVL's


def go_stream():
    for d in GO_EXPORT_V6:
        yield ExportNode(bytes.fromhex(d["key"]), None if d["value"] is None else bytes.fromhex(d["value"]),
                         d["version"], d["height"])


@pytest.fixture(params=IAVL_STORE_KINDS)
def store(request, tmp_path):
    s = new_iavl_store(request.param, tmp_path)
    yield s
    s.close()


def _reference(fmt="v1", fast_storage=True):
    """Go's stream imported in one batch (it has fewer nodes than IMPORT_BATCH_SIZE)."""
    assert len(GO_EXPORT_V6) < export_module.IMPORT_BATCH_SIZE == 10000
    db = MemoryDB()
    assert MutableTree(db, format=fmt, fast_storage=fast_storage).import_nodes(go_stream(), 6) == ROOT_V6
    return dict(db.iterate())


@pytest.mark.parametrize("fmt,fast_storage", [("v1", True), ("v1", False), ("legacy", True)])
def test_batches_write_what_one_batch_writes(store, monkeypatch, fmt, fast_storage):
    want = _reference(fmt, fast_storage)
    monkeypatch.setattr(export_module, "IMPORT_BATCH_SIZE", 500)
    sizes = []

    def watched():
        for i, node in enumerate(go_stream()):
            if i % 1000 == 999:
                sizes.append(sum(1 for _ in store.iterate()))
                # Nodes are on disk already, but the version is not there until the stream is through.
                assert not MutableTree(store).version_exists(6)
            yield node

    tree = MutableTree(store, format=fmt, fast_storage=fast_storage)
    assert tree.import_nodes(watched(), 6) == ROOT_V6
    assert dict(store.iterate()) == want
    assert sizes[0] > 1 and sizes == sorted(sizes) and len(set(sizes)) == len(sizes)    # written as read
    assert tree.version == 6 and len(tree) == 2691 and tree.hash() == ROOT_V6
    reopened = MutableTree(store, fast_storage=fast_storage)
    assert reopened.load() == 6 and reopened.hash() == ROOT_V6
    assert list(reopened.items()) == list(tree.items())
    if fast_storage:
        assert store.get(STORAGE_VERSION_KEY) == b"1.1.0-6"


def _raising(at):
    for i, node in enumerate(go_stream()):
        if i == at:
            raise RuntimeError("the source broke")
        yield node


def _cut(stream, at):
    for i, node in enumerate(stream):
        if i == at:
            return
        yield node


def _duplicate_late():
    nodes = list(go_stream())
    a, b = [i for i, n in enumerate(nodes) if n.height == 0][-2:]
    nodes[b] = ExportNode(nodes[a].key, b"x", 1, 0)
    return nodes


FAILURES = {
    "iterator raises": (lambda: _raising(4000), RuntimeError, "the source broke"),
    "stream cut short": (lambda: _cut(go_stream(), 4000), ExportImportError, "subtrees that no inner node joins"),
    "late duplicate key": (_duplicate_late, ExportImportError, "duplicate key"),
    "bad node type": (lambda: list(go_stream())[:3000] + [("k", "v", 1, 0)], TypeError, "ExportNode"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_failed_import_leaves_the_store_as_it_was(store, monkeypatch, case):
    make, error, message = FAILURES[case]
    want = _reference()
    before = dict(store.iterate())
    monkeypatch.setattr(export_module, "IMPORT_BATCH_SIZE", 500)
    tree = MutableTree(store)
    with pytest.raises(error, match=message):
        tree.import_nodes(make(), 6)
    assert dict(store.iterate()) == before
    assert tree.version == 0 and len(tree) == 0
    fresh = MutableTree(store)
    assert fresh.latest_version == 0 and fresh.available_versions() == [] and not fresh.version_exists(6)
    # The same tree and store take a good stream afterwards.
    assert tree.import_nodes(go_stream(), 6) == ROOT_V6
    assert dict(store.iterate()) == want


def test_a_failed_last_batch_is_rolled_back(store, monkeypatch):
    """The last batch (root record, storage version) failing: the earlier batches are deleted too."""
    before = dict(store.iterate())
    monkeypatch.setattr(export_module, "IMPORT_BATCH_SIZE", 500)
    tree = MutableTree(store)
    real = store.write_batch
    calls = []

    def failing_last(*args, **kwargs):
        calls.append(1)
        if len(calls) == len(GO_EXPORT_V6) // 500 + 1:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "write_batch", failing_last)
    with pytest.raises(OSError, match="disk full"):
        tree.import_nodes(go_stream(), 6)
    assert dict(store.iterate()) == before and not MutableTree(store).version_exists(6)


def test_the_root_record_comes_in_the_last_batch(monkeypatch):
    db = MemoryDB()
    monkeypatch.setattr(export_module, "IMPORT_BATCH_SIZE", 100)
    seen = []

    def watched():
        for node in go_stream():
            seen.append(root_key(6) in db.records)
            yield node

    MutableTree(db).import_nodes(watched(), 6)
    assert not any(seen) and root_key(6) in db.records


@pytest.mark.parametrize("record", [OTHER, (b"foo:1", b"bar"), (b"\x66" + bytes(31), b"\xf8\x51" + bytes(81))])
def test_an_import_refuses_a_store_with_foreign_records(store, record):
    store.put(*record)
    with pytest.raises(ForeignStoreError, match="refusing to import: .* not an IAVL tree's .*nothing was written") as e:
        MutableTree(store).import_nodes(go_stream(), 6)
    assert e.value.key == record[0]
    assert dict(store.iterate()) == dict([record])


def test_an_import_refuses_a_store_with_a_tree(store):
    tree = MutableTree(store)
    tree.set(b"k", b"v")
    tree.save_version()
    before = dict(store.iterate())
    with pytest.raises(ExportImportError, match="needs an empty tree"):
        MutableTree(store).import_nodes(go_stream(), 6)
    fresh = MutableTree(store)          # a tree that did not load the version sees the store's records
    with pytest.raises(ExportImportError, match="needs an empty"):
        fresh.import_nodes(go_stream(), 6)
    assert dict(store.iterate()) == before


def test_an_import_takes_a_store_that_an_empty_load_stamped(store):
    """Loading an empty store writes its storage version (as Go's LoadVersion does): an import still takes it."""
    tree = MutableTree(store)
    assert tree.load() == 0 and store.get(STORAGE_VERSION_KEY) is not None
    assert tree.import_nodes(go_stream(), 6) == ROOT_V6
