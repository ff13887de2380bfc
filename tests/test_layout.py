"""The package layout of issue 31: a core, one package per tree family, and the old module paths kept for one
release as aliases that warn."""
import importlib
import pathlib
import pickle
import subprocess
import sys
import warnings

import pytest

import mpt
import mpt.ethereum.trie
from mpt import merkle

# old path -> new path (every module that moved; the old path is the same module object).
MOVED = {
    "mpt.rlp": "mpt.core.rlp",
    "mpt.runtime": "mpt.core.runtime",
    "mpt.jsonrpc": "mpt.core.jsonrpc",
    "mpt._varint": "mpt.core.uvarint",
    "mpt._keccak": "mpt.core._keccak",
    "mpt._sha256": "mpt.core._sha256",
    "mpt.encoding": "mpt.ethereum.encoding",
    "mpt.node": "mpt.ethereum.node",
    "mpt.hasher": "mpt.ethereum.hasher",
    "mpt.committer": "mpt.ethereum.committer",
    "mpt.trie": "mpt.ethereum.trie",
    "mpt.iterator": "mpt.ethereum.iterator",
    "mpt.secure": "mpt.ethereum.secure",
    "mpt.stacktrie": "mpt.ethereum.stacktrie",
    "mpt.derive": "mpt.ethereum.derive",
    "mpt.proof": "mpt.ethereum.proof",
    "mpt.rangeproof": "mpt.ethereum.rangeproof",
    "mpt.eip1186": "mpt.ethereum.eip1186",
    "mpt.eth": "mpt.ethereum.blocks",
    "mpt.ethstate": "mpt.ethereum.state",
    "mpt.parallel": "mpt.ethereum.parallel",
    "mpt.dask": "mpt.ethereum.dask",
    "mpt.shards": "mpt.ethereum.shards",
    "mpt._spill": "mpt.ethereum.shards.spill",
    "mpt._reference": "mpt.ethereum._reference",
    "mpt._merkle_reference": "mpt.merkle._reference",
    "mpt.db.tools": "mpt.ethereum.inspect",
    "mpt.rootcli": "mpt.cli.root",
    "mpt.inspectcli": "mpt.cli.inspect",
}


def _fresh_import(name):
    """Import name in a new interpreter with DeprecationWarnings as errors: (exit status, stderr)."""
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", "import " + name],
                         capture_output=True, text=True)
    return out.returncode, out.stderr


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_module_path_is_the_moved_module_and_warns_once(old, new):
    code, err = _fresh_import(old)
    assert code == 1 and f"{old} moved to {new}" in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert importlib.import_module(old) is importlib.import_module(new)


def test_new_paths_and_import_mpt_warn_nothing():
    for name in ["mpt", "mpt.iavl", "mpt.ics23", "mpt.merkle", "mpt.db", "mpt.core.rlp", "mpt.ethereum.blocks",
                 "mpt.ethereum.state", "mpt.ethereum.dask", "mpt.merkle.multistore"]:
        assert _fresh_import(name) == (0, ""), name


def test_old_submodule_attributes_of_mpt_still_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert mpt.trie.Trie is mpt.Trie
        assert mpt.node.decode_node is mpt.decode_node
        assert mpt.shards.build is importlib.import_module("mpt.ethereum.shards.build")
        assert mpt._keccak.binding is importlib.import_module("mpt.core._keccak.binding")
    assert mpt.rlp is importlib.import_module("mpt.core.rlp")       # mpt.rlp, in mpt.__all__, does not warn


@pytest.mark.parametrize("name, new", [
    ("verify_membership", "mpt.ics23.verify"), ("verify_non_membership", "mpt.ics23.verify"),
    ("calculate_root", "mpt.ics23.verify"), ("wire_verdict_membership", "proves_membership"),
    ("wire_verdict_non_membership", "proves_non_membership"),
])
def test_the_ics23_verifier_names_the_wire_module_had_warn_and_work(name, new):
    import mpt.ics23
    from mpt.ics23 import wire

    with pytest.warns(DeprecationWarning, match=r"mpt\.ics23\.wire\.%s (moved to|is now) .*%s" % (name, new)):
        old = getattr(wire, name)
    assert old is (getattr(mpt.ics23, name) if new == "mpt.ics23.verify" else getattr(wire, new))


def test_the_old_wire_verifier_names_answer_as_before_on_cosmos_testdata():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from ics23_trees import vector_cases

    from mpt.ics23 import IAVL_SPEC, wire

    name, _tree, root, proof, key, value = next(c for c in vector_cases() if c[1] == "iavl" and c[5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert wire.verify_membership(IAVL_SPEC, root, proof, key, value) is True, name
        assert wire.wire_verdict_membership(IAVL_SPEC, root, proof, key, value) is True
        assert wire.calculate_root(proof) == root


def test_every_public_name_is_where_it_was():
    for name in mpt.__all__:
        assert getattr(mpt, name) is not None, name
    for name in merkle.__all__:
        assert getattr(merkle, name) is not None, name
    for name in mpt.iavl.__all__ + mpt.ics23.__all__:
        assert getattr(mpt.iavl if name in mpt.iavl.__all__ else mpt.ics23, name) is not None, name
    assert mpt.merkle.root([b"a"]) == merkle.tree.root([b"a"])
    assert mpt.ics23.verify_abci_query.__module__ == "mpt.ics23.abci"
    assert mpt.ics23.verify_membership.__module__ == "mpt.ics23.verify"


def test_objects_pickled_under_the_new_paths_load():
    root, proofs = merkle.proofs([b"a", b"b", b"c"])
    assert type(proofs[1]).__module__ == "mpt.merkle.proof"
    assert pickle.loads(pickle.dumps(proofs[1])) == proofs[1]
    # A pickle made before the move names mpt.merkle.Proof: still found there.
    old = pickle.dumps(proofs[1], protocol=0).replace(b"mpt.merkle.proof\n", b"mpt.merkle\n")
    assert b"mpt.merkle\nProof" in old
    assert pickle.loads(old) == proofs[1]


def test_the_file_list_shows_the_families_and_the_core():
    import pathlib

    top = sorted(p.name for p in pathlib.Path(mpt.__file__).parent.iterdir()
                 if p.is_dir() and not p.name.startswith("__"))
    assert {"core", "ethereum", "merkle", "iavl", "ics23", "db", "bench", "cli"} <= set(top)
    assert mpt.ethereum.trie.Trie is mpt.Trie


def test_a_trie_commits_into_a_memory_db_through_its_bulk_write():
    """The committer hands its nodes to mpt.db.write_nodes: a MemoryDB given a dict keeps writing into that dict,
    and its key order (iterate) sees the new keys."""
    from mpt.db import MemoryDB

    data = {}
    db = MemoryDB(data)
    t = mpt.Trie(db)
    for i in range(100):
        t[b"key%03d" % i] = b"value %d" % i
    root = t.commit()
    assert db.head() is None and len(data) == len(db) > 10
    assert list(k for k, _ in db.iterate()) == sorted(data)
    t[b"key100"] = b"one more"
    root2 = t.commit(set_head=True)
    assert db.head() == root2 and list(k for k, _ in db.iterate()) == sorted(data)
    assert mpt.Trie(db, root)[b"key042"] == b"value 42" and mpt.Trie(db, root2)[b"key100"] == b"one more"


def test_the_warning_names_the_line_that_imported_the_old_path(tmp_path):
    script = tmp_path / "user.py"
    script.write_text("import warnings\nwarnings.simplefilter('always')\nimport mpt.trie\nimport mpt\nmpt.node\n"
                      "from mpt.shards.build import combine\n")
    err = subprocess.run([sys.executable, str(script)], capture_output=True, text=True).stderr
    lines = [line for line in err.splitlines() if "DeprecationWarning" in line]
    assert [line.split(": DeprecationWarning")[0] for line in lines] == [
        f"{script}:3", f"{script}:5", f"{script}:6", f"{script}:6"], err
    assert "mpt.shards.build moved to mpt.ethereum.shards.build" in lines[-1]


def test_no_file_is_left_at_an_old_path():
    import pathlib

    root = pathlib.Path(mpt.__file__).parent
    for old in MOVED:
        path = root.joinpath(*old.split(".")[1:])
        assert not path.with_suffix(".py").exists() and not path.with_suffix(".pyx").exists(), old
