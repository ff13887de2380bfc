"""The convention table of docs/architecture.rst, held across the tree families.

Every tree (mpt.Trie, mpt.SecureTrie, mpt.iavl.MutableTree) speaks the Python mapping protocol alike; every family
module names its empty root EMPTY_ROOT with the documented value; the old names still work for a release and warn;
`import mpt` reaches every family; the verifiers return what the table says.
"""
import hashlib
import importlib
import subprocess
import sys
import types
import warnings

import pytest

import mpt
import mpt.iavl
import mpt.iavl.node
import mpt.iavl.tree
import mpt.ics23
import mpt.ethereum.node
import mpt.ethereum.trie
from mpt import merkle
from mpt.errors import MptError, NodeDecodeError, ProofError

KECCAK_OF_RLP_EMPTY = bytes.fromhex("56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421")
SHA256_OF_NOTHING = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

TREES = {
    "Trie": mpt.Trie,
    "SecureTrie": mpt.SecureTrie,
    "MutableTree": mpt.iavl.MutableTree,
}


@pytest.fixture(params=sorted(TREES))
def tree(request):
    return TREES[request.param]()


def stored_key(t, key):
    """The key as the tree's iteration shows it: SecureTrie stores keccak256(key), the others the key."""
    return mpt.keccak256(key) if isinstance(t, mpt.SecureTrie) else key


# ---------------------------------------------------------------------------------------------- empty roots

def test_the_documented_empty_roots():
    assert KECCAK_OF_RLP_EMPTY == mpt.keccak256(b"\x80")
    assert SHA256_OF_NOTHING == hashlib.sha256(b"").digest()


@pytest.mark.parametrize("module, value", [
    (mpt, KECCAK_OF_RLP_EMPTY),
    (mpt.ethereum.trie, KECCAK_OF_RLP_EMPTY),
    (merkle, SHA256_OF_NOTHING),
    (mpt.iavl, SHA256_OF_NOTHING),
    (mpt.iavl.tree, SHA256_OF_NOTHING),
], ids=lambda v: getattr(v, "__name__", ""))
def test_every_family_module_names_its_empty_root_EMPTY_ROOT(module, value):
    assert module.EMPTY_ROOT == value
    assert type(module.EMPTY_ROOT) is bytes


def test_an_empty_tree_of_every_family_has_its_EMPTY_ROOT():
    assert mpt.Trie().hash() == mpt.EMPTY_ROOT
    assert mpt.SecureTrie().hash() == mpt.EMPTY_ROOT
    assert mpt.StackTrie().hash() == mpt.EMPTY_ROOT
    assert mpt.build_root([]) == mpt.EMPTY_ROOT
    assert mpt.iavl.MutableTree().hash() == mpt.iavl.EMPTY_ROOT
    assert merkle.root([]) == merkle.EMPTY_ROOT
    assert merkle.map_root({}) == merkle.EMPTY_ROOT


# ---------------------------------------------------------------------------------------------- deprecated names

@pytest.mark.parametrize("module, name", [(mpt.iavl, "EMPTY_HASH"), (mpt.iavl.tree, "EMPTY_HASH"),
                                          (merkle, "EMPTY_HASH")],
                         ids=lambda v: getattr(v, "__name__", v))
def test_old_empty_root_names_warn_and_still_work(module, name):
    with pytest.warns(DeprecationWarning, match=r"EMPTY_ROOT"):
        value = getattr(module, name)
    assert value == module.EMPTY_ROOT == SHA256_OF_NOTHING


def test_from_import_of_an_old_name_warns_too():
    with pytest.warns(DeprecationWarning, match=r"mpt\.iavl\.EMPTY_ROOT"):
        from mpt.iavl import EMPTY_HASH
    assert EMPTY_HASH == mpt.iavl.EMPTY_ROOT


def test_merkle_empty_hash_function_warns_and_still_works():
    with pytest.warns(DeprecationWarning, match=r"mpt\.merkle\.EMPTY_ROOT"):
        assert merkle.empty_hash() == merkle.EMPTY_ROOT


def test_old_names_are_out_of_all_and_new_ones_in():
    for module in (merkle, mpt.iavl):
        assert "EMPTY_ROOT" in module.__all__
        assert "EMPTY_HASH" not in module.__all__
    assert "empty_hash" not in merkle.__all__


def test_unknown_module_attributes_still_raise_AttributeError():
    for module in (mpt, merkle, mpt.iavl, mpt.iavl.tree):
        with pytest.raises(AttributeError, match="no_such_name"):
            module.no_such_name      # noqa: B018
        assert not hasattr(module, "EMPTY_HASHES")


def test_mutable_tree_iterate_warns_and_is_items():
    t = mpt.iavl.MutableTree()
    for k in (b"a", b"b", b"c", b"d"):
        t[k] = k.upper()
    with pytest.warns(DeprecationWarning, match=r"MutableTree\.items"):
        old = list(t.iterate(b"b", b"d", False))
    assert old == list(t.items(b"b", b"d", False)) == [(b"c", b"C"), (b"b", b"B")]


def test_new_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mpt.EMPTY_ROOT and merkle.EMPTY_ROOT and mpt.iavl.EMPTY_ROOT and mpt.iavl.tree.EMPTY_ROOT
        t = mpt.iavl.MutableTree()
        t[b"k"] = b"v"
        assert list(t.items()) == [(b"k", b"v")]


# ---------------------------------------------------------------------------------------------- mapping protocol

def test_set_get_contains_delete(tree):
    tree[b"alpha"] = b"1"
    tree[b"beta"] = b"2"
    assert tree[b"alpha"] == b"1"
    assert tree.get(b"beta") == b"2"
    assert b"alpha" in tree and b"gamma" not in tree
    assert tree.get(b"gamma") is None
    assert tree.get(b"gamma", b"default") == b"default"
    tree[b"alpha"] = b"one"
    assert tree[b"alpha"] == b"one"
    del tree[b"alpha"]
    assert b"alpha" not in tree
    assert tree.get(b"alpha") is None
    assert dict(tree.items()) == {stored_key(tree, b"beta"): b"2"}


def test_items_keys_values_agree_and_run_in_key_order(tree):
    pairs = {bytes([i]) * 3: b"v%d" % i for i in (5, 1, 9, 3)}
    for k, v in pairs.items():
        tree[k] = v
    items = list(tree.items())
    assert [k for k, _ in items] == list(tree.keys()) == list(tree) == sorted(k for k, _ in items)
    assert [v for _, v in items] == list(tree.values())
    assert dict(items) == {stored_key(tree, k): v for k, v in pairs.items()}


def test_bytes_like_keys_and_values_read_back_as_bytes(tree):
    tree[bytearray(b"key")] = memoryview(b"value")
    assert tree[memoryview(b"key")] == b"value"
    assert type(tree[b"key"]) is bytes
    assert bytearray(b"key") in tree


def test_missing_key_is_a_KeyError_naming_the_key(tree):
    tree[b"present"] = b"x"
    with pytest.raises(KeyError) as err:
        tree[b"absent"]
    assert err.value.args == (b"absent",)
    with pytest.raises(KeyError) as err:
        del tree[b"absent"]
    assert err.value.args == (b"absent",)
    assert tree[b"present"] == b"x"          # the failed delete changed nothing


def test_missing_key_in_an_empty_tree_is_a_KeyError(tree):
    with pytest.raises(KeyError):
        tree[b"k"]
    with pytest.raises(KeyError):
        del tree[b"k"]


@pytest.mark.parametrize("bad", ["text", 5, None, 1.5], ids=repr)
def test_a_key_that_is_not_bytes_like_is_a_TypeError_everywhere(tree, bad):
    with pytest.raises(TypeError):
        tree[bad] = b"v"
    with pytest.raises(TypeError):
        tree[bad]
    with pytest.raises(TypeError):
        del tree[bad]
    with pytest.raises(TypeError):
        tree.get(bad)
    with pytest.raises(TypeError):
        bad in tree      # noqa: B015


@pytest.mark.parametrize("bad", ["text", 5, None], ids=repr)
def test_a_value_that_is_not_bytes_like_is_a_TypeError(tree, bad):
    with pytest.raises(TypeError):
        tree[b"k"] = bad
    assert b"k" not in tree


def test_upstream_names_sit_beside_the_mapping_protocol():
    trie = mpt.Trie()
    trie.update(b"k", b"v")                  # geth's Update / Delete
    assert trie[b"k"] == b"v"
    trie.delete(b"k")
    trie.delete(b"k")                        # geth: deleting an absent key is no error
    assert b"k" not in trie
    iavl = mpt.iavl.MutableTree()
    assert iavl.set(b"k", b"v") is False     # iavl's Set: "updated"
    assert iavl.has(b"k") and iavl[b"k"] == b"v"
    assert iavl.remove(b"k") == b"v"         # iavl's Remove: the old value
    assert iavl.remove(b"k") is None


def test_the_same_writes_give_the_same_root_through_either_name():
    pairs = [(b"k%d" % i, b"v%d" % i) for i in range(50)]
    for make, write, drop in ((mpt.Trie, "update", "delete"), (mpt.iavl.MutableTree, "set", "remove")):
        a, b = make(), make()
        for k, v in pairs:
            getattr(a, write)(k, v)
            b[k] = v
        getattr(a, drop)(b"k7")
        del b[b"k7"]
        assert a.hash() == b.hash()


def test_len_where_the_family_knows_it():
    t = mpt.iavl.MutableTree()
    assert len(t) == 0
    t[b"a"] = b"1"
    t[b"b"] = b"2"
    del t[b"a"]
    assert len(t) == 1 == t.size
    with pytest.raises(TypeError):           # an Ethereum trie does not count its keys
        len(mpt.Trie())


def test_an_empty_value_is_each_familys_own():
    trie = mpt.Trie()
    trie[b"k"] = b"v"
    trie[b"k"] = b""                         # geth: an empty value deletes
    assert b"k" not in trie
    iavl = mpt.iavl.MutableTree()
    iavl[b"k"] = b""                         # iavl stores an empty value
    assert iavl[b"k"] == b"" and b"k" in iavl


# ---------------------------------------------------------------------------------------------- verifiers

def test_verifiers_return_what_the_table_says():
    trie = mpt.Trie()
    trie[b"k"] = b"v"
    # mpt.verify_proof reads the value out of the proof: it returns it (None for a proven absence).
    assert mpt.verify_proof(trie.hash(), b"k", trie.prove(b"k")) == b"v"
    assert mpt.verify_proof(trie.hash(), b"x", trie.prove(b"x")) is None
    # merkle.Proof.verify is handed the leaf: True, or ProofError.
    leaves = [b"a", b"b", b"c"]
    root, proofs = merkle.proofs(leaves)
    assert proofs[1].verify(root, b"b") is True
    with pytest.raises(ProofError):
        proofs[1].verify(root, b"x")
    assert merkle.verify_tx_proof(merkle.tx_proof(leaves, 2)) is True
    # ICS23 is handed the value: True, or ProofError.
    iavl = mpt.iavl.MutableTree()
    iavl[b"k"] = b"v"
    proof = iavl.membership_proof(b"k")
    assert mpt.ics23.verify_membership(mpt.ics23.IAVL_SPEC, iavl.hash(), proof, b"k", b"v") is True
    with pytest.raises(ProofError):
        mpt.ics23.verify_membership(mpt.ics23.IAVL_SPEC, iavl.hash(), proof, b"k", b"w")


def test_proof_errors_are_one_class_across_families():
    assert issubclass(ProofError, MptError) and issubclass(ProofError, ValueError)


# ---------------------------------------------------------------------------------------------- decode_node

def test_decode_node_names_its_family():
    assert mpt.decode_node is mpt.ethereum.node.decode_node
    assert mpt.iavl.decode_node is mpt.iavl.node.decode_node
    assert "Ethereum" in mpt.decode_node.__doc__
    leaf = mpt.iavl.LeafNode(b"key", b"value", 1)
    assert mpt.iavl.decode_node(leaf.to_bytes("legacy"), "legacy").value == b"value"
    with pytest.raises(NodeDecodeError):     # an IAVL node is no Ethereum node: refused, not misread
        mpt.decode_node(leaf.to_bytes("legacy"))


# ---------------------------------------------------------------------------------------------- import mpt

def test_import_mpt_reaches_every_family():
    code = ("import sys, mpt\n"
            "lazy = [m for m in ('mpt.iavl', 'mpt.ics23') if m in sys.modules]\n"
            "assert mpt.merkle.EMPTY_ROOT and mpt.iavl.EMPTY_ROOT and mpt.ics23.verify_membership\n"
            "assert mpt.iavl.MutableTree().hash() == mpt.iavl.EMPTY_ROOT\n"
            "assert {'iavl', 'ics23', 'merkle'} <= set(dir(mpt))\n"
            "print(','.join(lazy))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # Reachable, and not imported before first use (they cost import time that an Ethereum user does not need).
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------------------------- the table itself

def _table_names():
    """Every name the convention table of docs/architecture.rst cites, as (text, owner object, attribute path)."""
    import builtins
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "architecture.rst").read_text()
    table = text[text.index("The convention table"):text.index("Where a new piece goes")]
    owners = {"mpt.": mpt, "merkle.": merkle, "t.": mpt.Trie, "tree.": mpt.iavl.MutableTree,
              "Proof.": merkle.Proof, "CommitmentProof.": mpt.ics23.CommitmentProof}
    for literal in re.findall(r"``([^`]+)``", table):
        name = literal.split("(")[0].strip()
        for prefix, owner in owners.items():
            if name.startswith(prefix) and re.fullmatch(r"[\w.]+", name):
                yield literal, owner, name[len(prefix):]
                break
        else:
            if re.fullmatch(r"[a-z_]+", name) and name not in ("keccak256", "sha256") + tuple(dir(builtins)):
                yield literal, None, name


def test_every_name_in_the_convention_table_exists():
    families = (mpt, merkle, mpt.iavl, mpt.ics23, mpt.Trie, mpt.iavl.MutableTree, merkle.Proof)
    seen = 0
    for literal, owner, path in _table_names():
        seen += 1
        if owner is None:        # a bare function or method name: some family module or tree has it
            assert any(hasattr(f, path) for f in families), literal
            continue
        obj = owner
        for part in path.split("."):
            with warnings.catch_warnings():
                warnings.simplefilter("error")      # the table cites no deprecated name
                if isinstance(obj, types.ModuleType) and not hasattr(obj, part):
                    importlib.import_module(obj.__name__ + "." + part)      # a subpackage's module not loaded yet
                obj = getattr(obj, part)
        assert obj is not None, literal
    assert seen > 40
