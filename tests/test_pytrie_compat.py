"""mpt.compat.pytrie against py-trie 4.0.0 itself: random operation sequences on both classes give the same roots,
return values, exceptions, database contents and database accesses (in the same order) after every step; and
install() / uninstall() rebind py-trie's name everywhere it is bound."""
import importlib
import sys
import types

import pytest

trie = pytest.importorskip("trie", minversion="4", reason="py-trie 4 (pip install 'mpt-engine[pytrie]')")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from trie.exceptions import MissingTrieNode, ValidationError  # noqa: E402

import mpt  # noqa: E402
import mpt.compat.pytrie as compat  # noqa: E402

PyTrie = trie.hexary.HexaryTrie if not compat.is_installed() else compat.original_class()
MptTrie = compat.HexaryTrie


class LoggingDB(dict):
    """A dict that records every access the trie makes, in order."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = []

    def __getitem__(self, key):
        self.log.append(("get", key))
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self.log.append(("set", key, value))
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self.log.append(("del", key))
        super().__delitem__(key)

    def __contains__(self, key):
        self.log.append(("in", key))
        return super().__contains__(key)

    def pop(self, key, *default):
        self.log.append(("pop", key))
        return super().pop(key, *default)


def outcome(fn):
    """(kind, value): what a call returned, or the type and args of what it raised."""
    try:
        return ("ok", fn())
    except AttributeError as exc:
        # py-trie's nested squash_changes() fails on its ScratchDB having no pop(); mpt's ScratchDB is named
        # mpt.compat.pytrie._core.ScratchDB in the message
        return ("raised", AttributeError, exc.name)
    except Exception as exc:  # noqa: BLE001 - the point is to compare every exception
        return ("raised", type(exc), exc.args if not isinstance(exc, MissingTrieNode) else (
            exc.missing_node_hash, exc.root_hash, exc.requested_key, exc.prefix))


# Keys from a small alphabet so that sequences share prefixes, delete what they set and build extensions.
keys = st.binary(min_size=0, max_size=4).map(lambda b: bytes(x % 3 for x in b))
values = st.one_of(st.binary(min_size=0, max_size=3), st.binary(min_size=28, max_size=40))

op = st.one_of(
    st.tuples(st.just("set"), keys, values),
    st.tuples(st.just("delete"), keys),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("exists"), keys),
    st.tuples(st.just("proof"), keys),
    # nibbles of the keys above are 0 (high halves) and 0..2 (low halves): mostly those, to reach partial paths
    st.tuples(st.just("traverse"), st.lists(st.integers(0, 2) | st.integers(0, 15), max_size=8).map(tuple)),
    st.tuples(st.just("at_root"), st.integers(0, 1000), keys),
    st.tuples(st.just("drop_node"), st.integers(0, 1000)),
    st.tuples(st.just("traverse_from"), st.lists(st.integers(0, 2) | st.integers(0, 15), max_size=4).map(tuple),
              st.lists(st.integers(0, 2) | st.integers(0, 15), min_size=1, max_size=6).map(tuple)),
    st.tuples(st.just("get_node"), st.integers(0, 1000)),
    st.tuples(st.just("regenerate_ref_count")),
    st.tuples(st.just("corrupt_node"), st.integers(0, 1000), st.integers(0, 5)),
    st.tuples(st.just("root_node")),
    st.tuples(st.just("squash"), st.lists(st.tuples(st.sampled_from(["set", "delete"]), keys, values), max_size=8)),
    # a batch that raises part-way (nothing of it may reach the database), and a batch inside a batch
    st.tuples(st.just("squash_raise"), st.lists(st.tuples(st.sampled_from(["set", "delete"]), keys, values),
                                                max_size=8)),
    st.tuples(st.just("squash_nested"), st.lists(st.tuples(st.sampled_from(["set", "delete"]), keys, values),
                                                 max_size=8)),
)


class Abort(Exception):
    pass


# Well-formed RLP that is no well-formed node: what a damaged database may hold instead of a node.
CORRUPT_NODES = [
    mpt.rlp.encode([b"a", b"b", b"c"]),                      # three items
    mpt.rlp.encode([b"\x00" * 5] + [b""] * 15 + [b"v"]),    # a branch child that is neither empty nor a hash
    mpt.rlp.encode([b"", b"value"]),                         # an empty path
    mpt.rlp.encode([b"\x00\x01", [b"a", b"b", b"c"]]),        # an embedded child of three items
    mpt.rlp.encode(b"a string, not a list, of 32 bytes or more"),
    mpt.rlp.encode([b"\x20", [b"\x20", b"x"]] ),               # a leaf whose value is a list
]


def apply(t, db, roots, step):
    """Run one step on trie t over db; the comparable result."""
    kind = step[0]
    if kind == "set":
        return outcome(lambda: t.set(step[1], step[2]))
    if kind == "delete":
        return outcome(lambda: t.delete(step[1]))
    if kind == "get":
        return outcome(lambda: t.get(step[1]))
    if kind == "exists":
        return outcome(lambda: step[1] in t)
    if kind == "proof":
        def prove():
            proof = t.get_proof(step[1])
            return proof, type(t).get_from_proof(t.root_hash, step[1], proof)
        return outcome(prove)
    if kind == "traverse":
        return outcome(lambda: t.traverse(step[1]))
    if kind == "traverse_from":
        return outcome(lambda: t.traverse_from(t.traverse(step[1]), step[2]))
    if kind == "get_node":
        stored = sorted(dict.keys(db))
        return outcome(lambda: t.get_node(stored[step[1] % len(stored)] if stored else t.root_hash))
    if kind == "regenerate_ref_count":
        return outcome(lambda: dict(t.regenerate_ref_count()))
    if kind == "root_node":
        return outcome(lambda: t.root_node)
    if kind == "at_root":
        def read_old():
            with t.at_root(roots[step[1] % len(roots)]) as snapshot:
                return snapshot.get(step[2])
        return outcome(read_old)
    if kind == "drop_node":
        if not dict.__len__(db):
            return None
        victim = sorted(dict.keys(db))[step[1] % dict.__len__(db)]
        dict.__delitem__(db, victim)
        return victim
    if kind == "corrupt_node":
        if not dict.__len__(db):
            return None
        victim = sorted(dict.keys(db))[step[1] % dict.__len__(db)]
        dict.__setitem__(db, victim, CORRUPT_NODES[step[2]])
        return victim
    if kind in ("squash", "squash_raise", "squash_nested"):
        def run_batch(memory_trie, changes):
            for name, key, value in changes:
                if name == "set":
                    memory_trie[key] = value
                else:
                    del memory_trie[key]

        def batch():
            with t.squash_changes() as memory_trie:
                half = len(step[1]) // 2
                run_batch(memory_trie, step[1][:half])
                if kind == "squash_nested":
                    with memory_trie.squash_changes() as inner:
                        run_batch(inner, step[1][half:])
                else:
                    run_batch(memory_trie, step[1][half:])
                if kind == "squash_raise":
                    raise Abort(memory_trie.root_hash)
            return t.root_hash
        return outcome(batch)
    raise AssertionError(kind)


def run_differential(steps, prune):
    py_db, mpt_db = LoggingDB(), LoggingDB()
    py_trie, mpt_trie = PyTrie(py_db, prune=prune), MptTrie(mpt_db, prune=prune)
    roots = [py_trie.root_hash]
    for step in steps:
        want = apply(py_trie, py_db, roots, step)
        got = apply(mpt_trie, mpt_db, roots, step)
        assert got == want, step
        assert mpt_trie.root_hash == py_trie.root_hash, step
        assert dict(mpt_db) == dict(py_db), step
        assert mpt_db.log == py_db.log, step
        if prune:
            assert dict(mpt_trie.ref_count) == dict(py_trie.ref_count), step
        roots.append(py_trie.root_hash)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_differential_against_pytrie(steps):
    run_differential(steps, prune=False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_differential_against_pytrie_pruning(steps):
    run_differential(steps, prune=True)


def test_differential_large_random_trie():
    import random

    rng = random.Random(33)
    steps = []
    for _ in range(3000):
        key = rng.randbytes(rng.choice((1, 2, 3, 32)))
        r = rng.random()
        if r < 0.6:
            steps.append(("set", key, rng.randbytes(rng.choice((1, 5, 40)))))
        elif r < 0.75:
            steps.append(("delete", key))
        elif r < 0.9:
            steps.append(("get", key))
        else:
            steps.append(("proof", key))
    for prune in (False, True):
        run_differential(steps, prune)


def test_databases_open_with_either_class():
    import random

    rng = random.Random(7)
    items = {rng.randbytes(rng.choice((2, 20, 32))): rng.randbytes(rng.choice((3, 50))) for _ in range(500)}
    for writer, reader in ((PyTrie, MptTrie), (MptTrie, PyTrie)):
        db = {}
        written = writer(db)
        for k, v in items.items():
            written[k] = v
        opened = reader(db, root_hash=written.root_hash)
        assert all(opened[k] == v for k, v in items.items())
        assert opened.root_hash == mpt.Trie(db, written.root_hash).hash()


def test_missing_node_raises_pytries_exception_with_its_attributes():
    db = {}
    t = MptTrie(db)
    t[b"\x01\x23"] = b"a value long enough to be stored under its hash" * 2
    t[b"\x12\x34"] = b"short"
    first_child = t.root_node.raw[0]
    del db[first_child]
    with pytest.raises(MissingTrieNode) as info:
        t.get(b"\x01\x23")
    exc = info.value
    assert (exc.missing_node_hash, exc.root_hash, exc.requested_key, exc.prefix) == (
        first_child, t.root_hash, b"\x01\x23", (0,))
    with pytest.raises(MissingTrieNode) as info:
        t.set(b"\x02\x34", b"x")
    assert info.value.prefix is None and info.value.missing_node_hash == first_child


@pytest.mark.parametrize("bad", ["text", 1, None, bytearray(b"x")])
def test_keys_and_values_are_validated_as_pytrie_does(bad):
    t = MptTrie({})
    for call in (lambda: t.get(bad), lambda: t.set(bad, b"v"), lambda: t.set(b"k", bad), lambda: t.delete(bad),
                 lambda: MptTrie({}, root_hash=bad)):
        with pytest.raises(ValidationError, match="Value is not of type `bytes`"):
            call()


def test_pruning_trie_refuses_at_root_and_non_pruning_refuses_ref_count():
    with pytest.raises(ValidationError):
        with MptTrie({}, prune=True).at_root(MptTrie.BLANK_NODE_HASH):
            pass
    with pytest.raises(Exception, match="does not track node usage"):
        MptTrie({}).ref_count
    with pytest.raises(ValueError, match="Cannot pass an existing reference count"):
        MptTrie({}, ref_count={})


def test_root_hash_assignable_and_repr():
    db = {}
    t = MptTrie(db)
    t[b"a"] = b"1"
    first = t.root_hash
    t[b"b"] = b"2"
    t.root_hash = first
    assert t[b"b"] == b"" and t[b"a"] == b"1"
    assert repr(t) == f"HexaryTrie({db!r}, root_hash={first!r}, prune=False)"
    assert repr(MptTrie(db, prune=1)) == repr(PyTrie(db, prune=1))       # the prune object as given
    assert MptTrie(db, prune=1).ref_count == {}


# --- install / uninstall -----------------------------------------------------------------------------------------

def _user_module():
    """A module that imported the name the way py-evm's database modules do."""
    module = types.ModuleType("_pytrie_user_module")
    exec("from trie import HexaryTrie\nfrom trie.hexary import HexaryTrie as Aliased\n", module.__dict__)
    sys.modules[module.__name__] = module
    return module


def test_install_rebinds_every_binding_and_uninstall_restores_them():
    import trie.hexary
    import trie.tools.builder
    import trie.tools.strategies

    assert not compat.is_installed()
    user = _user_module()
    try:
        compat.install()
        compat.install()  # idempotent
        for owner, name in ((trie, "HexaryTrie"), (trie.hexary, "HexaryTrie"), (trie.tools.builder, "HexaryTrie"),
                            (trie.tools.strategies, "HexaryTrie"), (user, "HexaryTrie"), (user, "Aliased")):
            assert getattr(owner, name) is MptTrie, (owner, name)
        assert trie.tools.builder.trie_from_keys([b"ab", b"ac"])[1].__class__ is MptTrie
        late = importlib.reload(importlib.import_module("trie.tools.builder"))
        assert late.HexaryTrie is MptTrie
        compat.uninstall()
        for owner, name in ((trie, "HexaryTrie"), (trie.hexary, "HexaryTrie"), (trie.tools.builder, "HexaryTrie"),
                            (trie.tools.strategies, "HexaryTrie"), (user, "HexaryTrie"), (user, "Aliased")):
            assert getattr(owner, name) is PyTrie, (owner, name)
        compat.uninstall()  # harmless when nothing is installed
        assert not compat.is_installed()
    finally:
        compat.uninstall()
        del sys.modules[user.__name__]


def test_installed_context_manager():
    import trie.hexary

    with compat.installed():
        assert trie.HexaryTrie is MptTrie and trie.hexary.HexaryTrie is MptTrie
        with compat.installed():
            pass
        assert trie.hexary.HexaryTrie is MptTrie  # the inner block leaves the outer installation alone
    assert trie.HexaryTrie is PyTrie and trie.hexary.HexaryTrie is PyTrie


@pytest.mark.parametrize("prune", [False, True])
@pytest.mark.parametrize("corrupt", range(len(CORRUPT_NODES)))
def test_damaged_database_raises_what_pytrie_raises(corrupt, prune):
    """Every stored node in turn replaced by well-formed RLP that is no node: the same exceptions as py-trie's,
    the same database afterwards."""
    items = [(bytes([i, j]), bytes([i]) * (1 + 30 * (j % 2))) for i in range(3) for j in range(3)]
    seen = set()
    base = {}
    built = PyTrie(base)
    for k, v in items:
        built[k] = v
    for victim in sorted(base):
        steps = [("corrupt_fixed", victim)] + [(name, k) for k, _ in items for name in ("get", "proof", "delete")]
        steps += [("set", k, b"new value " * 4) for k, _ in items] + [("traverse", (0,)), ("traverse", (0, 0, 0))]
        py_db, mpt_db = LoggingDB(base), LoggingDB(base)
        py_trie = PyTrie(py_db, root_hash=built.root_hash, prune=prune)
        mpt_trie = MptTrie(mpt_db, root_hash=built.root_hash, prune=prune)
        for step in steps:
            if step[0] == "corrupt_fixed":
                dict.__setitem__(py_db, victim, CORRUPT_NODES[corrupt])
                dict.__setitem__(mpt_db, victim, CORRUPT_NODES[corrupt])
                continue
            want = apply(py_trie, py_db, [built.root_hash], step)
            got = apply(mpt_trie, mpt_db, [built.root_hash], step)
            assert got == want, step
            seen.add(want[0] if want[0] == "ok" else want[1].__name__)
            assert dict(mpt_db) == dict(py_db) and mpt_db.log == py_db.log, step
            assert mpt_trie.root_hash == py_trie.root_hash
    assert seen - {"ok"}, "no step met the damaged node"


def test_get_from_proof_matches_pytrie_on_odd_proofs():
    import random

    from trie.exceptions import BadTrieProof

    rng = random.Random(5)
    t = MptTrie({})
    keys = [rng.randbytes(rng.choice((1, 3, 32))) for _ in range(300)]
    for k in keys:
        t[k] = rng.randbytes(rng.choice((2, 40)))
    other = MptTrie({})
    for k in keys[:40]:
        other[k] = b"other value of 32 bytes or more........"
    padding = [n for k in keys[:10] for n in other.get_proof(k)]       # 20+ nodes: more than one SIMD batch
    for k in keys[:20] + [b"absent", b""]:
        proof = t.get_proof(k)
        for variant in (proof, proof + tuple(padding), (b"",) + proof, proof[:1], iter(proof), [b""] * 3):
            variant = tuple(variant) if not isinstance(variant, tuple) else variant
            got = outcome(lambda: MptTrie.get_from_proof(t.root_hash, k, variant))
            want = outcome(lambda: PyTrie.get_from_proof(t.root_hash, k, variant))
            assert got == want
    for bad in ([[b"a", b"b", b"c"]], [[b"\x20", 5]], [b"not a node"]):
        assert outcome(lambda: MptTrie.get_from_proof(t.root_hash, b"k", bad)) == outcome(
            lambda: PyTrie.get_from_proof(t.root_hash, b"k", bad))
    with pytest.raises(BadTrieProof):
        MptTrie.get_from_proof(t.root_hash, keys[0], ())


def test_reads_follow_the_database_not_what_the_trie_wrote_last():
    """mpt's class keeps the root it stored or read last, and reuses it only while the database hands back that
    very bytes object: a replaced record is read again, and values come back as the plain bytes py-trie gives."""
    from hexbytes import HexBytes

    db = {}
    t = MptTrie(db)
    t[b"a"] = b"1"
    t[b"b"] = HexBytes(b"2")           # a short root: the value sits inside the root node
    assert t[b"a"] == b"1" and type(t[b"b"]) is bytes and type(PyTrie(db, t.root_hash)[b"b"]) is bytes
    other = MptTrie({})
    other[b"a"] = b"changed"
    other[b"b"] = b"2"
    db[t.root_hash] = other.db[other.root_hash]    # another object, another content, under the same key
    assert t[b"a"] == b"changed" == PyTrie(db, t.root_hash)[b"a"]
    db[t.root_hash] = bytes(bytearray(other.db[other.root_hash]))   # equal content, a new object
    assert t[b"a"] == b"changed"
    root_node = t.get_node(t.root_hash)
    root_node[0] = b"mutated by the caller"
    assert t[b"a"] == b"changed"


def test_deeply_nested_node_raises_recursion_error_as_pytrie_does():
    node = [b"\x20", b"v"]
    for _ in range(100000):
        node = [b"\x00", node]
    for cls in (MptTrie, PyTrie):
        with pytest.raises(RecursionError):
            cls.get_from_proof(b"\x00" * 32, b"k", [node])
    with pytest.raises(RecursionError):
        MptTrie({})._set_raw_node(node)


def test_bench_cases_are_left_out_with_a_reason_without_pytrie_4(monkeypatch, capsys):
    import argparse

    from mpt.bench import __main__ as bench_main
    from mpt.bench.cases import pytrie as pytrie_cases

    assert pytrie_cases.MISSING is None and [c.name for c in pytrie_cases.cases()] == [
        "PyTrie/Set10K+Root", "PyTrie/Get10K", "PyTrie/Squash10K", "PyTrie/Proof"]
    monkeypatch.setattr(trie, "__version__", "3.0.1")
    assert "py-trie 3.0.1 is installed" in pytrie_cases._missing()
    monkeypatch.setattr(pytrie_cases, "MISSING", pytrie_cases._missing())
    assert pytrie_cases.cases() == [] and pytrie_cases.peer_cases(cases_any()) == []
    assert bench_main._no_match(argparse.Namespace(bench="PyTrie/", search=False)) == 1
    err = capsys.readouterr().err
    assert "the PyTrie cases are skipped: py-trie 3.0.1 is installed" in err and "mpt-engine[pytrie]" in err


def cases_any():
    from mpt.bench.registry import Case

    return Case(name="PyTrie/Get10K", setup=lambda: None, op=lambda s: None, check=lambda s: None, group="PyTrie")


def test_import_without_pytrie_names_the_extra():
    import subprocess

    code = ("import sys; sys.modules['trie'] = None\n"
            "try:\n    import mpt.compat.pytrie\n"
            "except ImportError as e:\n    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("MissingExtraError mpt.compat.pytrie needs py-trie 4 (pip install 'mpt-engine[pytrie]')")


def _stored_branch_variants(db, root_hash):
    """(description, db, root_hash): the trie in db with its root branch stored in ways set and get must not
    walk as bytes (they decode it, as py-trie does) or that they must walk exactly as py-trie reads them."""
    root = mpt.core.rlp.decode(db[root_hash])
    assert len(root) == 17
    child = next(i for i in range(16) if root[i])
    variants = []

    def store(description, encoded):
        variant = dict(db)
        key = mpt.keccak256(encoded)
        variant[key] = encoded
        variants.append((description, variant, key))

    blank_hash_child = list(root)
    blank_hash_child[child] = PyTrie.BLANK_NODE_HASH        # a child py-trie reads as blank without a read
    store("a child that is the blank root hash", mpt.core.rlp.encode(blank_hash_child))
    long_form = mpt.core.rlp.encode(root)
    head = 1 + (long_form[0] - 0xf7)
    item = long_form.index(b"\xa0" + root[child], head)
    store("a hash child in the long string form", long_form[:item] + b"\xb8\x20" + long_form[item + 1:])
    with_value = list(root)
    with_value[16] = b"\x05"
    canonical = mpt.core.rlp.encode(with_value)
    store("a one-byte value under a string header", canonical[:-1] + b"\x81\x05")
    store("bytes after the branch", canonical + b"\x00")
    store("an embedded child", mpt.core.rlp.encode(root[:15] + [[b"\x20", b"x"]] + root[16:]))
    return variants


def test_set_and_get_walk_stored_branches_as_pytrie_reads_them():
    """set and get walk canonical branches as the stored bytes: on branches stored in other forms (and on a
    child that is the blank root hash) they read, write, prune and raise what py-trie does."""
    import random

    rng = random.Random(41)
    keys = [rng.randbytes(32) for _ in range(300)]
    base = {}
    built = PyTrie(base)
    for k in keys:
        built[k] = rng.randbytes(40)
    new_keys = keys[:5] + [rng.randbytes(32) for _ in range(5)]
    for description, db, root_hash in _stored_branch_variants(base, built.root_hash):
        for prune in (False, True):
            steps = [("get", k) for k in new_keys] + [("proof", k) for k in new_keys[:3]]
            steps += [("set", k, bytes([i]) * 40) for i, k in enumerate(new_keys)] + [("get", k) for k in new_keys]
            py_db, mpt_db = LoggingDB(db), LoggingDB(db)
            py_trie = PyTrie(py_db, root_hash=root_hash, prune=prune)
            mpt_trie = MptTrie(mpt_db, root_hash=root_hash, prune=prune)
            for step in steps:
                want = apply(py_trie, py_db, [root_hash], step)
                got = apply(mpt_trie, mpt_db, [root_hash], step)
                assert got == want, (description, prune, step)
                assert mpt_trie.root_hash == py_trie.root_hash, (description, step)
                assert dict(mpt_db) == dict(py_db) and mpt_db.log == py_db.log, (description, prune, step)


@pytest.mark.parametrize("prune", [False, True])
def test_set_and_get_deeper_than_the_byte_walk(prune):
    """A path of more branches than set's byte walk takes (FAST_DEPTH, 64): the rest goes through set_at."""
    keys = [b"\x00" * (i // 2) + (b"\x01" if i % 2 else b"\x10") + b"\xff" * (40 - i // 2) for i in range(80)]
    steps = [("set", k, k[::-1]) for k in keys] + [("get", k) for k in keys]
    steps += [("set", k, b"changed value of 32 bytes or more....") for k in keys[::7]] + [("delete", keys[3])]
    steps += [("get", k) for k in keys] + [("proof", keys[-1]), ("traverse", (0,) * 70)]
    run_differential(steps, prune)
