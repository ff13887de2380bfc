"""What a new user meets first (issue 16): bytes-like keys and values everywhere, and clear errors for the usual
mistakes (a root not in the database, a closed or misplaced LMDB store, a missing argument)."""
import array
import pathlib

import pytest

import mpt
from mpt import SecureTrie, StackTrie, Trie, derive_sha, derive_sha_trie, verify_proof, verify_range_proof
from mpt.db import LMDBStore
from mpt.errors import MissingNodeError, MptError, StoreClosedError

PAIRS = [(b"do", b"verb"), (b"dog", b"puppy"), (b"doge", b"coin"), (b"horse", b"stallion")]

BYTES_LIKE = [
    pytest.param(bytearray, id="bytearray"),
    pytest.param(memoryview, id="memoryview"),
    pytest.param(lambda b: array.array("B", b), id="array"),
    pytest.param(lambda b: memoryview(b"xx" + b + b"yy")[2:-2], id="memoryview-slice"),
]


def _reference_trie():
    t = Trie()
    for k, v in PAIRS:
        t[k] = v
    return t


# -------------------------------------------------------------------------------------------- bytes-like input

@pytest.mark.parametrize("wrap", BYTES_LIKE)
def test_trie_takes_bytes_like_keys_and_values(wrap):
    want = _reference_trie()
    t = Trie()
    for k, v in PAIRS:
        t[wrap(k)] = wrap(v)
    assert t.hash() == want.hash()
    assert t[wrap(b"dog")] == b"puppy" and type(t[wrap(b"dog")]) is bytes
    assert t.get(wrap(b"cat")) is None and wrap(b"doge") in t
    assert [k for k, _ in t.items(start=wrap(b"dog"))] == [b"dog", b"doge", b"horse"]
    t.update(wrap(b"horse"), wrap(b""))                  # an empty bytes-like value deletes, as b"" does
    del t[wrap(b"do")]
    t.delete(wrap(b"doge"))
    assert list(t.items()) == [(b"dog", b"puppy")]


def test_trie_copies_a_mutable_buffer():
    # The trie keeps its own bytes: changing the caller's buffer afterwards changes nothing.
    key, value = bytearray(b"dog"), bytearray(b"puppy")
    t = Trie()
    t[key] = value
    root = t.hash()
    key[0] = value[0] = ord("x")
    assert t[b"dog"] == b"puppy" and t.hash() == root and t.get(b"xog") is None


@pytest.mark.parametrize("wrap", BYTES_LIKE)
def test_secure_trie_and_proofs_take_bytes_like(wrap):
    address = bytes.fromhex("a94f5374fce5edbc8e2a8697c15331677e6ebf0b")
    want = SecureTrie()
    want.update_account(address, nonce=1, balance=10)
    want.update_storage(b"\x01" * 32, b"\x2a")
    s = SecureTrie()
    s.update_account(wrap(address), nonce=1, balance=10, storage_root=wrap(mpt.EMPTY_ROOT))
    s.update_storage(wrap(b"\x01" * 32), wrap(b"\x2a"))
    assert s.hash() == want.hash()
    assert s.get_account(wrap(address))[:2] == (1, 10)

    t = _reference_trie()
    root = t.hash()
    proof = t.prove(wrap(b"doge"))
    assert proof == t.prove(b"doge")
    assert verify_proof(wrap(root), wrap(b"doge"), [wrap(n) for n in proof]) == b"coin"
    ranged = Trie()
    keys = [bytes([i]) * 4 for i in range(20)]
    for k in keys:
        ranged[k] = k * 2
    values = [k * 2 for k in keys]
    edges = ranged.prove_many([keys[3], keys[9]])
    assert verify_range_proof(wrap(ranged.hash()), wrap(keys[3]), [wrap(k) for k in keys[3:10]],
                              [wrap(v) for v in values[3:10]], [wrap(n) for n in edges]) is True
    assert verify_range_proof(wrap(ranged.hash()), wrap(keys[0]), [wrap(k) for k in keys],
                              [wrap(v) for v in values], None) is False


@pytest.mark.parametrize("wrap", BYTES_LIKE)
def test_stack_trie_and_derive_sha_take_bytes_like(wrap):
    items = [b"\x01" * 40, b"\x02" * 3, b"\x03" * 100]
    assert derive_sha([wrap(i) for i in items]) == derive_sha(items) == derive_sha_trie([wrap(i) for i in items])
    st, want = StackTrie(), Trie()
    for i in range(50):
        key, value = i.to_bytes(4, "big"), b"value %d" % i
        st.update(wrap(key), wrap(value))
        want[key] = value
    assert st.hash() == want.hash()


@pytest.mark.parametrize("bad", ["dog", 5, None, 1.5, [b"d"]])
def test_non_bytes_like_is_a_type_error_naming_the_argument(bad):
    t = Trie()
    name = type(bad).__name__
    with pytest.raises(TypeError, match=r"^key must be a bytes-like object, not %s$" % name):
        t[bad] = b"v"
    with pytest.raises(TypeError, match=r"^value must be a bytes-like object, not %s$" % name):
        t[b"k"] = bad
    with pytest.raises(TypeError, match=r"^start must be a bytes-like object, not %s$" % name):
        t.items(start=bad)
    with pytest.raises(TypeError, match=r"^key must be a bytes-like object, not %s$" % name):
        StackTrie().update(bad, b"v")


# -------------------------------------------------------------------------------------------- derive_sha

@pytest.mark.parametrize("func", [derive_sha, derive_sha_trie], ids=["derive_sha", "derive_sha_trie"])
@pytest.mark.parametrize("bad", [None, 7, b"\x01\x02", "tx"])
def test_derive_sha_names_its_argument(func, bad):
    with pytest.raises(TypeError, match=r"^%s\(\) items must be an iterable of consensus encodings \(bytes\), "
                                        r"not %s$" % (func.__name__, type(bad).__name__)):
        func(bad)


def test_derive_sha_names_a_bad_item():
    with pytest.raises(TypeError, match=r"^derive_sha\(\) items\[1\] must be a bytes-like object, not int$"):
        derive_sha([b"\x01", 2])
    assert derive_sha(iter([b"\x01"])) == derive_sha([b"\x01"])     # any iterable, generators included


# -------------------------------------------------------------------------------------------- missing root

def test_trie_with_a_root_absent_from_the_db_fails_at_construction(tmp_path):
    t = _reference_trie()
    root = t.commit()
    with pytest.raises(MissingNodeError) as info:
        Trie(mpt.db.MemoryDB(), root)
    assert info.value.node_hash == root and isinstance(info.value, KeyError)
    assert str(info.value) == "missing trie node %s (path <root>)" % root.hex()
    with LMDBStore(tmp_path / "empty.lmdb") as db:
        with pytest.raises(MissingNodeError, match=root.hex()):
            Trie(db, root)
    assert Trie(t.database, root)[b"dog"] == b"puppy"       # the database that holds it opens it


# -------------------------------------------------------------------------------------------- LMDBStore

def test_lmdb_store_on_a_regular_file_says_so(tmp_path):
    path = tmp_path / "state.lmdb"
    path.write_bytes(b"not a store")
    for readonly in (False, True):
        with pytest.raises(NotADirectoryError, match=r"state\.lmdb is a file, not an LMDB store directory") as info:
            LMDBStore(path, readonly=readonly)
        assert info.value.filename == str(path)
    assert path.read_bytes() == b"not a store"               # untouched


def test_closed_lmdb_store_raises_store_closed(tmp_path):
    path = tmp_path / "state.lmdb"
    with LMDBStore(path) as db:
        t = Trie(db)
        t[b"dog"] = b"puppy"
        root = t.commit()
    t[b"doge"] = b"coin"
    # Committing after the with block: the write meets a closed store.
    with pytest.raises(StoreClosedError, match=r"^the LMDB store at .*state\.lmdb is closed$") as info:
        t.commit()
    assert isinstance(info.value, MptError) and isinstance(info.value, ValueError)
    calls = [
        lambda: db.get(root), lambda: db.head(), lambda: root in db, lambda: len(db), lambda: list(db.items()),
        lambda: db.stats(), lambda: db.map_size, lambda: db.put(root, b"x"), lambda: db.set_head(root),
        lambda: db.sync(), lambda: Trie(db, root),
    ]
    for call in calls:
        with pytest.raises(StoreClosedError):
            call()
    with pytest.raises(StoreClosedError):
        with db.write_batch() as batch:
            batch.put(root, b"x")
    with LMDBStore(path) as db:                              # the commit that failed wrote nothing
        assert Trie(db, root)[b"dog"] == b"puppy" and Trie(db, root).get(b"doge") is None


def test_docs_say_bytes_like():
    quickstart = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "quickstart.rst").read_text()
    assert "bytes-like" in quickstart


# -------------------------------------------------------------------------------------------- workers

@pytest.mark.parametrize("bad", ["2", 1.5, 2.0, True])
def test_workers_must_be_an_integer(bad):
    from mpt.ethereum.state import state_root

    with pytest.raises(TypeError, match=r"^workers must be an integer, not %s$" % type(bad).__name__):
        mpt.build_root(PAIRS, workers=bad)
    with pytest.raises(TypeError, match=r"^workers must be an integer, not %s$" % type(bad).__name__):
        state_root([], workers=bad)


@pytest.mark.parametrize("bad", [2 ** 70, 10 ** 23, 100000, 0, -1])
def test_workers_out_of_range_is_a_value_error(bad):
    from mpt.ethereum.parallel import MAX_WORKERS

    with pytest.raises(ValueError, match=r"workers.*%d" % bad) as info:
        mpt.build_root(PAIRS, workers=bad)
    assert not isinstance(info.value, OverflowError)
    assert mpt.build_root(PAIRS, workers=MAX_WORKERS) == mpt.build_root(PAIRS, workers=1) == _reference_trie().hash()


# -------------------------------------------------------------------------------------------- refused at construction

@pytest.mark.parametrize("cls", [Trie, SecureTrie])
@pytest.mark.parametrize("path", ["state.lmdb", b"state.lmdb", pathlib.Path("state.lmdb")])
def test_a_path_where_a_database_belongs_points_to_lmdb_store(cls, path):
    with pytest.raises(TypeError, match=r"^db must be a node database, not the path 'state\.lmdb': "
                                        r"pass LMDBStore\('state\.lmdb'\) \(from mpt\.db import LMDBStore\)$"):
        cls(path)


@pytest.mark.parametrize("bad", [42, 1.5, [b"x"], object()])
def test_a_non_database_is_refused_at_construction(bad):
    with pytest.raises(TypeError, match=r"^db must be a node database \(MemoryDB, LMDBStore\(path\) or a dict\), "
                                        r"not %s$" % type(bad).__name__):
        Trie(bad)


def test_mappings_and_stores_are_still_databases(tmp_path):
    plain = {}
    t = Trie(plain)
    t[b"dog"] = b"puppy"
    root = t.commit()
    assert Trie(plain, root)[b"dog"] == b"puppy"
    with LMDBStore(tmp_path / "state.lmdb") as db:
        Trie(db)[b"dog"] = b"puppy"


@pytest.mark.parametrize("length", [0, 5, 19, 21, 32])
def test_account_address_is_20_bytes(length):
    s = SecureTrie()
    for call in (lambda: s.update_account(b"\x00" * length, 1, 1), lambda: s.get_account(b"\x00" * length),
                 lambda: s.delete_account(b"\x00" * length)):
        with pytest.raises(ValueError, match=r"^an account address is 20 bytes, got %d$" % length):
            call()
    assert s.hash() == mpt.EMPTY_ROOT
    with pytest.raises(TypeError, match=r"^address must be a bytes-like object, not str$"):
        s.update_account("0x" + "00" * 20, 1, 1)


@pytest.mark.parametrize("version, nonce, name", [(1.5, 1, "version"), (1, 1.0, "nonce"), ("1", 1, "version"),
                                                   (True, 1, "version")])
def test_iavl_node_key_takes_integers_only(version, nonce, name):
    from mpt.iavl.node import node_key

    bad = version if name == "version" else nonce
    with pytest.raises(TypeError, match=r"^%s must be an integer, not %s$" % (name, type(bad).__name__)):
        node_key(version, nonce)


def test_iavl_nodes_refuse_what_decode_node_refuses():
    from mpt.errors import NodeDecodeError
    from mpt.iavl.node import InnerNode, LeafNode, decode_node

    good = InnerNode(b"k", 1, 2, 7, left_hash=bytes(32), right_hash=b"\x01" * 32)
    assert decode_node(good.to_bytes("legacy"), "legacy").to_bytes("legacy") == good.to_bytes("legacy")
    short = bytearray(good.to_bytes("legacy"))
    for left, right in [(bytes(31), bytes(32)), (bytes(32), bytes(33)), (b"", b"")]:
        with pytest.raises(ValueError, match=r"^left_hash and right_hash must be 32 bytes, got %d and %d$"
                                             % (len(left), len(right))):
            InnerNode(b"k", 1, 2, 7, left_hash=left, right_hash=right)
    del short[-1]
    short[-32] = 31                                 # the right hash's length prefix: what the decoder refuses
    with pytest.raises(NodeDecodeError, match="right child hash is 31 bytes, not 32"):
        decode_node(bytes(short), "legacy")
    with pytest.raises(ValueError, match=r"^hash must be 32 bytes, got 3$"):
        InnerNode(b"k", 1, 2, 7, left_node_key=bytes(12), right_node_key=bytes(12), hash=b"abc")
    with pytest.raises(TypeError, match=r"^height must be an integer, not float$"):
        InnerNode(b"k", 1.0, 2, 7, left_hash=bytes(32), right_hash=bytes(32))
    with pytest.raises(TypeError, match=r"^version must be an integer, not float$"):
        LeafNode(b"k", b"v", 1.5)
    with pytest.raises(ValueError, match=r"^an inner node's size must be in 2\.\.2\*\*63-1, got %d$" % 2 ** 63):
        InnerNode(b"k", 1, 2 ** 63, 7, left_hash=bytes(32), right_hash=bytes(32))
    with pytest.raises(ValueError, match=r"^version must be in 0\.\.2\*\*63-1, got %d$" % 2 ** 63):
        LeafNode(b"k", b"v", 2 ** 63)
