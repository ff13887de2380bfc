"""mpt.merkle: the CometBFT / RFC 6962 simple Merkle tree.

Known answers from CometBFT's own code (tests/vectors/rfc6962_merkle.json), differential checks against the
pure-Python reference (mpt._merkle_reference, written from crypto/merkle's recursive definitions) on both SHA-256
backends, every proof of every index for n <= 64, tampering, CometBFT's refusals, and the RPC JSON forms.
"""
import base64
import hashlib
import json
import pickle
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import load_vector
from mpt import merkle
from mpt.merkle import _reference as ref
from mpt.core._sha256 import binding as sha_binding
from mpt.core._sha256 import set_sha256_backend
from mpt.errors import MptError, ProofError
from mpt.merkle import Proof

VECTORS = load_vector("rfc6962_merkle.json")


def vector_leaf(i: int) -> bytes:
    """The vectors' leaf rule: SHA-512(decimal i)[:(7i) % 64]."""
    return hashlib.sha512(str(i).encode()).digest()[:(i * 7) % 64]


def random_leaves(rng: random.Random, n: int, max_len: int = 150):
    return [rng.getrandbits(8 * k).to_bytes(k, "little") if k else b""
            for k in (rng.randrange(max_len + 1) for _ in range(n))]


# ---------------------------------------------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------------------------------------------

def test_leaf_rule_matches_the_samples():
    for sample in VECTORS["leaf_samples"]:
        assert vector_leaf(sample["i"]).hex() == sample["leaf"]
        assert merkle.leaf_hash(vector_leaf(sample["i"])).hex() == sample["leaf_hash"]


def test_rfc6962_hasher_vectors(sha256_backend):
    got = {
        "HashFromByteSlices([])": lambda v: merkle.root([]),
        "leafHash(leaf)": lambda v: merkle.leaf_hash(bytes.fromhex(v["input_hex"])),
        "innerHash(left,right)": lambda v: hashlib.sha256(
            b"\x01" + v["left_ascii"].encode() + v["right_ascii"].encode()).digest(),
    }
    for v in VECTORS["rfc6962_test_vectors"]:
        assert got[v["op"]](v).hex() == v["want"], v["desc"]
    assert merkle.EMPTY_ROOT == hashlib.sha256(b"").digest()


def test_tree_test_vectors(sha256_backend):
    for case in VECTORS["tree_test_TestHashFromByteSlices"]:
        items = [bytes.fromhex(x) for x in (case["items"] or [])]
        assert merkle.root(items).hex() == case["root"], case["name"]


def test_split_points():
    for n, want in VECTORS["split_point_table"]:
        if n >= 2:
            assert ref.split_point(n) == want
        # root([...n]) splits at the same place: left part of `want` leaves.
        leaves = [bytes([i % 256, i // 256]) for i in range(n)]
        if n >= 2:
            assert merkle.root(leaves) == ref.inner_hash(merkle.root(leaves[:want]), merkle.root(leaves[want:]))


def test_cometbft_cases_roots_and_proofs(sha256_backend):
    for case in VECTORS["cases"]:
        leaves = [vector_leaf(i) for i in range(case["n"])]
        assert merkle.root(leaves).hex() == case["root"], case["n"]
        root, proofs = merkle.proofs(leaves)
        assert root.hex() == case["root"]
        assert len(proofs) == case["n"]
        for want in case["proofs"]:
            p = proofs[want["index"]]
            assert (p.total, p.index) == (want["total"], want["index"])
            assert p.leaf_hash.hex() == want["leaf_hash"]
            assert [a.hex() for a in p.aunts] == want["aunts"]
            assert p == merkle.proof(leaves, want["index"])
            assert p.compute_root_hash() == root
            assert p.verify(root, bytes.fromhex(want["leaf"])) is True
            rebuilt = Proof(want["total"], want["index"], bytes.fromhex(want["leaf_hash"]),
                            [bytes.fromhex(a) for a in want["aunts"]])
            assert rebuilt == p


def test_vector_copy_is_current():
    """tests/vectors/rfc6962_merkle.json is a verbatim copy of the shared vectors (when they are present)."""
    import pathlib

    here = pathlib.Path(__file__).resolve().parent
    shared = here.parent.parent / "shared" / "vectors" / "rfc6962_merkle.json"
    if not shared.exists():
        pytest.skip("shared vectors not beside this checkout")
    assert (here / "vectors" / "rfc6962_merkle.json").read_bytes() == shared.read_bytes()


# ---------------------------------------------------------------------------------------------------------------
# Differential against the reference
# ---------------------------------------------------------------------------------------------------------------

def test_roots_match_reference_up_to_300(sha256_backend):
    rng = random.Random(6962)
    for n in range(301):
        leaves = random_leaves(rng, n)
        assert merkle.root(leaves) == ref.root(leaves), n


@pytest.mark.parametrize("n", [1000, 4097, 20000])
def test_large_roots_match_reference(sha256_backend, n):
    rng = random.Random(n)
    leaves = random_leaves(rng, n, max_len=300)
    assert merkle.root(leaves) == ref.root(leaves)      # over the no-GIL threshold


@pytest.mark.parametrize("hash_threads", [1, 2, 3], indirect=True)
@pytest.mark.parametrize("n", [1023, 1024, 1025, 2047, 2048, 2049, 3072, 4096, 5000, 9999])
def test_chunked_and_threaded_roots_match_reference(sha256_backend, hash_threads, n):
    """root() folds chunks of 1024 leaves (over the hashing threads from 2048 leaves on): chunk edges, a last
    chunk of one leaf, and a count of chunks that is not a power of two."""
    rng = random.Random(n)
    leaves = random_leaves(rng, n, max_len=120)
    want = ref.root(leaves)
    assert merkle.root(leaves) == want
    assert merkle.root(tuple(leaves)) == want
    assert merkle.header_hash(iter(leaves)) == want
    assert merkle.data_hash(leaves) == ref.root([hashlib.sha256(x).digest() for x in leaves])


def test_hashing_threads_context_manager():
    from mpt.core.runtime import get_hash_threads

    before = get_hash_threads()
    leaves = [i.to_bytes(100, "big") for i in range(5000)]
    with merkle.hashing_threads(2) as n:
        assert n == 2 and get_hash_threads() == 2
        assert merkle.root(leaves) == ref.root(leaves)
    assert get_hash_threads() == before
    with pytest.raises(KeyError):
        with merkle.hashing_threads(3):
            raise KeyError("restored on error too")
    assert get_hash_threads() == before


def test_threaded_roots_from_many_python_threads():
    """Python threads calling root() at once, each running its own OpenMP team without the GIL."""
    from mpt.core.runtime import set_hash_threads

    rng = random.Random(99)
    trees = [random_leaves(rng, 3000 + 517 * i, max_len=80) for i in range(4)]
    want = [ref.root(t) for t in trees]
    got = [None] * len(trees)

    def work(i):
        for _ in range(3):
            got[i] = merkle.root(trees[i])

    old = set_hash_threads(2)
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(trees))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        set_hash_threads(old)
    assert got == want


def test_every_proof_of_every_index_up_to_64(sha256_backend):
    rng = random.Random(64)
    for n in range(65):
        leaves = random_leaves(rng, n, max_len=80)
        root, proofs = merkle.proofs(leaves)
        want_root, want_proofs = ref.proofs(leaves)
        assert root == want_root
        assert [(p.total, p.index, p.leaf_hash, list(p.aunts)) for p in proofs] == want_proofs
        for i, p in enumerate(proofs):
            assert p.compute_root_hash() == root
            assert p.verify(root, leaves[i])
            assert merkle.proof(leaves, i) == p


def test_recursive_walk_matches_the_reference(sha256_backend):
    """root_recursive keeps up to four subtrees in flight: every shape of split, from one leaf to past 2^12, gives
    the reference root (and the level-by-level root)."""
    from mpt.merkle.tree import root_recursive

    rng = random.Random(7)
    sizes = list(range(0, 70)) + [127, 128, 129, 255, 256, 257, 1000, 1023, 1025, 4095, 4097, 5000]
    for n in sizes:
        leaves = random_leaves(rng, n, max_len=40)
        want = ref.root(leaves)
        assert root_recursive(leaves) == want, n
        assert merkle.root(leaves) == want, n


def test_proofs_stay_out_of_the_cycle_collector():
    # A proof holds only ints, bytes and a tuple of bytes: neither it nor the tuple is tracked, so making a
    # proof per leaf sets off no collections (they took 30% of MerkleProof's time).
    import gc

    leaves = [bytes([i]) for i in range(100)]
    root, all_proofs = merkle.proofs(leaves)
    some = all_proofs[57]
    for p in (all_proofs[0], some, merkle.proof(leaves, 99), Proof(some.total, 57, some.leaf_hash, list(some.aunts)),
              Proof.from_json(some.to_json())):
        assert not gc.is_tracked(p)
        assert p.compute_root_hash() == root
    assert not any(gc.is_tracked(p.aunts) for p in all_proofs)


def test_large_proofs_match_reference():
    rng = random.Random(5)
    leaves = random_leaves(rng, 3000, max_len=40)
    root, proofs = merkle.proofs(leaves)
    want_root, want_proofs = ref.proofs(leaves)
    assert root == want_root
    for i in (0, 1, 1023, 1024, 2047, 2048, 2999):
        assert (proofs[i].total, proofs[i].index, proofs[i].leaf_hash, list(proofs[i].aunts)) == want_proofs[i]


def test_any_iterable_and_bytes_like_leaves():
    leaves = [b"a", b"bc", b"", bytes(range(100))]
    want = ref.root(leaves)
    assert merkle.root(tuple(leaves)) == want
    assert merkle.root(iter(leaves)) == want
    assert merkle.root(x for x in leaves) == want
    assert merkle.root([bytearray(x) for x in leaves]) == want
    assert merkle.root([memoryview(x) for x in leaves]) == want
    assert merkle.root([leaves[0], bytearray(leaves[1]), memoryview(leaves[2]), leaves[3]]) == want
    assert merkle.proofs(iter(leaves))[0] == want
    assert merkle.header_hash(leaves) == want
    assert merkle.data_hash(leaves) == ref.root([hashlib.sha256(x).digest() for x in leaves])
    assert merkle.data_hash([]) == merkle.EMPTY_ROOT


def test_bad_leaves_are_type_errors():
    with pytest.raises(TypeError, match="str"):
        merkle.root(["abc"])
    with pytest.raises(TypeError, match="int"):
        merkle.root([b"ok", 5])
    with pytest.raises(TypeError):
        merkle.root(b"not a list of leaves")
    with pytest.raises(TypeError):
        merkle.root(None)
    with pytest.raises(TypeError, match=r"^items\[0\] must be a bytes-like object, not memoryview \(not C-cont"):
        merkle.root([memoryview(bytes(10))[::2]])
    # A failed call leaves the pool usable and drops every reference it took.
    assert merkle.root([b"x"]) == ref.root([b"x"])


def test_proof_index_out_of_range():
    with pytest.raises(IndexError):
        merkle.proof([b"a", b"b"], 2)
    with pytest.raises(IndexError):
        merkle.proof([b"a", b"b"], -1)
    with pytest.raises(IndexError):
        merkle.proof([], 0)
    assert merkle.proofs([]) == (merkle.EMPTY_ROOT, [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=130), max_size=70), st.data())
def test_property_proofs_verify_and_match_reference(leaves, data):
    root, proofs = merkle.proofs(leaves)
    assert root == ref.root(leaves)
    if leaves:
        i = data.draw(st.integers(0, len(leaves) - 1))
        p = proofs[i]
        assert p.verify(root, leaves[i])
        assert ref.verify(root, p.total, p.index, p.leaf_hash, p.aunts, leaves[i])
        assert Proof.from_json(json.loads(json.dumps(p.to_json()))) == p


def test_threads_share_the_pool():
    """Roots computed from 4 threads at once (GIL released on large inputs) are all right."""
    rng = random.Random(3)
    inputs = [random_leaves(rng, n, 120) for n in (5000, 7000, 3, 9000)]
    wants = [ref.root(x) for x in inputs]
    errors = []

    def work(k):
        try:
            for _ in range(5):
                assert merkle.root(inputs[k]) == wants[k]
                assert merkle.proofs(inputs[k])[0] == wants[k]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------------------------------------------------------
# Tampering and CometBFT's refusals
# ---------------------------------------------------------------------------------------------------------------

def _flip(b: bytes, i: int) -> bytes:
    return b[:i] + bytes([b[i] ^ 0x01]) + b[i + 1:]


def test_tampering_is_refused():
    rng = random.Random(17)
    for n in (2, 3, 5, 8, 13, 33):
        leaves = random_leaves(rng, n, 50)
        root, proofs = merkle.proofs(leaves)
        for i, p in enumerate(proofs):
            for a in range(len(p.aunts)):
                for byte in range(0, 32, 7):
                    aunts = list(p.aunts)
                    aunts[a] = _flip(aunts[a], byte)
                    with pytest.raises(ProofError, match="invalid root hash"):
                        Proof(p.total, p.index, p.leaf_hash, aunts).verify(root, leaves[i])
            with pytest.raises(ProofError, match="invalid leaf hash"):
                p.verify(root, leaves[i] + b"\x00")
            with pytest.raises(ProofError, match="invalid leaf hash"):
                Proof(p.total, p.index, _flip(p.leaf_hash, 0), p.aunts).verify(root, leaves[i])
            with pytest.raises(ProofError):
                p.verify(_flip(root, 31), leaves[i])
            for other in range(n):
                if other != i:
                    with pytest.raises(ProofError):
                        Proof(p.total, other, p.leaf_hash, p.aunts).verify(root, leaves[i])
            # The total is not bound by the root on its own (n=3, index 0 also verifies as total 4): whatever
            # CometBFT decides for another total, we decide the same.
            for total in (p.total - 1, p.total + 1):
                if total >= 1:
                    other = Proof(total, p.index, p.leaf_hash, p.aunts)
                    if ref.verify(root, total, p.index, p.leaf_hash, p.aunts, leaves[i]):
                        assert other.verify(root, leaves[i])
                    else:
                        with pytest.raises(ProofError):
                            other.verify(root, leaves[i])


def test_cometbft_refusals():
    h = bytes(32)
    with pytest.raises(ProofError, match="negative Total"):
        Proof(-1, 0, h, [])
    with pytest.raises(ProofError, match="negative Index"):
        Proof(1, -1, h, [])
    with pytest.raises(ProofError, match="LeafHash size"):
        Proof(1, 0, bytes(31), [])
    with pytest.raises(ProofError, match="no more than 100 aunts"):
        Proof(2, 0, h, [h] * 101)
    with pytest.raises(ProofError, match="Aunts#1 size"):
        Proof(4, 0, h, [h, bytes(33)])
    with pytest.raises(ProofError, match="int64"):
        Proof(1 << 63, 0, h, [])
    # Index out of range, total 0, wrong aunt counts: refused when the root is computed.
    for total, index, aunts in [(1, 1, []), (0, 0, []), (5, 5, [h] * 3), (1, 0, [h]), (2, 0, []), (4, 1, [h]),
                                (4, 1, [h] * 3), (5, 4, [h, h]), ((1 << 63) - 1, 0, [h] * 62),
                                ((1 << 63) - 1, 0, [h] * 100)]:
        p = Proof(total, index, h, aunts)
        with pytest.raises(ProofError):
            p.compute_root_hash()
        with pytest.raises(ProofError):
            p.verify(h, b"")
    assert Proof((1 << 63) - 1, 0, h, [h] * 63).compute_root_hash()   # the deepest int64 tree
    with pytest.raises(ProofError, match="nil"):
        Proof(1, 0, merkle.leaf_hash(b""), []).verify(None, b"")
    with pytest.raises(TypeError):
        Proof("1", 0, h, [])
    with pytest.raises(TypeError):
        Proof(True, 0, h, [])
    with pytest.raises(TypeError):
        Proof(1, 0, "00" * 32, [])
    with pytest.raises(TypeError):
        Proof(2, 0, h, h)                    # aunts must be a sequence of hashes, not one hash
    assert issubclass(ProofError, MptError) and issubclass(ProofError, ValueError)


def test_proof_value_semantics():
    root, proofs = merkle.proofs([b"a", b"b", b"c"])
    p = proofs[2]
    assert p == Proof(3, 2, p.leaf_hash, list(p.aunts))
    assert p != proofs[1]
    assert hash(p) == hash(Proof(3, 2, p.leaf_hash, p.aunts))
    assert pickle.loads(pickle.dumps(p)) == p
    assert "total=3" in repr(p) and "index=2" in repr(p)
    assert isinstance(p.aunts, tuple)
    with pytest.raises(AttributeError):
        p.total = 4


def test_inner_hash_and_leaf_hash():
    a, b = hashlib.sha256(b"a").digest(), hashlib.sha256(b"b").digest()
    assert merkle.inner_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()
    assert merkle.leaf_hash(bytearray(b"xyz")) == hashlib.sha256(b"\x00xyz").digest()
    with pytest.raises(ProofError):
        merkle.inner_hash(a, b[:31])


def test_every_module_follows_the_backend_switch():
    old = set_sha256_backend("scalar")
    try:
        assert set(sha_binding._copy_backends()) == {"scalar"}
    finally:
        set_sha256_backend(old)
    assert set(sha_binding._copy_backends()) == {old}


# ---------------------------------------------------------------------------------------------------------------
# JSON: Proof.to_json / from_json and verify_tx_proof
# ---------------------------------------------------------------------------------------------------------------

def test_proof_json_round_trip_is_cometbft_form():
    root, proofs = merkle.proofs([b"tx1", b"tx2", b"tx3"])
    j = proofs[1].to_json()
    assert j == {"total": "3", "index": "1", "leaf_hash": base64.b64encode(proofs[1].leaf_hash).decode(),
                 "aunts": [base64.b64encode(a).decode() for a in proofs[1].aunts]}
    assert Proof.from_json(j) == proofs[1]
    assert Proof.from_json(json.dumps(j)) == proofs[1]
    assert Proof.from_json(json.dumps(j).encode()) == proofs[1]
    assert Proof.from_json(dict(j, total=3, index=1)) == proofs[1]       # plain JSON numbers too
    # What CometBFT's decoder (Go's encoding/json inside the quotes) also takes: JSON whitespace, "-0".
    assert Proof.from_json(dict(j, total=" 3\n", index="\t1")) == proofs[1]
    assert Proof.from_json(dict(j, index="-0")).index == 0
    single = merkle.proofs([b"only"])[1][0]
    assert Proof.from_json(dict(single.to_json(), aunts=None)) == single  # Go's nil slice


@pytest.mark.parametrize("mutate", [
    lambda j: j.pop("total"),
    lambda j: j.pop("leaf_hash"),
    lambda j: j.update(total="-1"),
    lambda j: j.update(index="-2"),
    lambda j: j.update(total="9223372036854775808"),
    lambda j: j.update(total="1e3"),
    lambda j: j.update(total="+3"),
    lambda j: j.update(total="03"),
    lambda j: j.update(index="01"),
    lambda j: j.update(total="3.0"),
    lambda j: j.update(total="0x3"),
    lambda j: j.update(total=""),
    lambda j: j.update(total="٣"),
    lambda j: j.update(total=True),
    lambda j: j.update(total=3.0),
    lambda j: j.update(total=None),
    lambda j: j.update(total="9" * 5000),
    lambda j: j.update(leaf_hash="not base64!"),
    lambda j: j.update(leaf_hash=j["leaf_hash"][:-4]),
    lambda j: j.update(leaf_hash=j["leaf_hash"].rstrip("=")),
    lambda j: j.update(leaf_hash=None),
    lambda j: j.update(leaf_hash=12),
    lambda j: j.update(aunts="AAAA"),
    lambda j: j.update(aunts={"a": 1}),
    lambda j: j.update(aunts=[None]),
    lambda j: j.update(aunts=[base64.b64encode(bytes(31)).decode()]),
    lambda j: j.update(aunts=[base64.b64encode(bytes(32)).decode()] * 101),
])
def test_hostile_proof_json_is_proof_error(mutate):
    j = merkle.proofs([b"tx1", b"tx2", b"tx3"])[1][1].to_json()
    mutate(j)
    with pytest.raises(ProofError):
        Proof.from_json(j)


@pytest.mark.parametrize("text", ["", "[", "[]", "null", "3", '"x"', "{" * 100000, b"\xff\xfe"])
def test_unparsable_json_is_proof_error(text):
    with pytest.raises(ProofError):
        Proof.from_json(text)
    with pytest.raises(ProofError):
        merkle.verify_tx_proof(text)


def _txs(n):
    return [b"tx-%d-" % i + bytes(i % 7) for i in range(n)]


def test_tx_proofs_verify(sha256_backend):
    for n in (1, 2, 3, 7, 16, 33):
        txs = _txs(n)
        dh = merkle.data_hash(txs)
        assert dh == ref.root([hashlib.sha256(t).digest() for t in txs])
        for i in range(n):
            obj = merkle.tx_proof(txs, i)
            assert obj["root_hash"] == dh.hex().upper()
            assert base64.b64decode(obj["data"]) == txs[i]
            assert merkle.verify_tx_proof(obj) is True
            assert merkle.verify_tx_proof(json.dumps(obj)) is True
            assert merkle.verify_tx_proof(obj, data_hash=dh) is True
            assert merkle.verify_tx_proof(obj, data_hash=dh.hex()) is True


def test_tx_proof_wrappers_of_the_rpc_response():
    txs = _txs(5)
    obj = merkle.tx_proof(txs, 3)
    result = {"hash": hashlib.sha256(txs[3]).hexdigest().upper(), "height": "12", "index": 3,
              "tx_result": {"code": 0}, "tx": obj["data"], "proof": obj}
    assert merkle.verify_tx_proof(result) is True
    assert merkle.verify_tx_proof({"jsonrpc": "2.0", "id": -1, "result": result}) is True
    with pytest.raises(ProofError, match="tx"):
        merkle.verify_tx_proof(dict(result, tx=base64.b64encode(txs[2]).decode()))


def test_tx_proof_failures_say_what_failed():
    txs = _txs(6)
    good = merkle.tx_proof(txs, 4)
    dh = merkle.data_hash(txs)

    def changed(**kw):
        obj = json.loads(json.dumps(good))
        proof_kw = kw.pop("proof", {})
        obj.update(kw)
        obj["proof"].update(proof_kw)
        return obj

    with pytest.raises(ProofError, match="different data hash"):
        merkle.verify_tx_proof(good, data_hash=bytes(32))
    with pytest.raises(ProofError, match="not internally consistent: invalid leaf hash"):
        merkle.verify_tx_proof(changed(data=base64.b64encode(b"another tx").decode()))
    with pytest.raises(ProofError, match="not internally consistent: invalid root hash"):
        merkle.verify_tx_proof(changed(root_hash="00" * 32))
    with pytest.raises(ProofError, match="total must be positive"):
        merkle.verify_tx_proof(changed(proof={"total": "0", "index": "0"}))
    with pytest.raises(ProofError, match="negative"):
        merkle.verify_tx_proof(changed(proof={"index": "-1"}))
    with pytest.raises(ProofError, match="not internally consistent"):
        merkle.verify_tx_proof(changed(proof={"index": "3"}))
    with pytest.raises(ProofError, match="root_hash"):
        merkle.verify_tx_proof(changed(root_hash="0x" + dh.hex()))
    with pytest.raises(ProofError, match="root_hash"):
        merkle.verify_tx_proof(changed(root_hash=dh.hex()[:-1]))
    with pytest.raises(ProofError, match="data"):
        merkle.verify_tx_proof(changed(data=None))
    for key in ("root_hash", "data", "proof"):
        obj = changed()
        del obj[key]
        with pytest.raises(ProofError, match=key):
            merkle.verify_tx_proof(obj)
    with pytest.raises(ProofError):
        merkle.verify_tx_proof(changed(proof=None) if False else dict(good, proof=[1, 2]))
    with pytest.raises(TypeError):
        merkle.verify_tx_proof(good, data_hash=5)


def test_hashing_threads_refuses_counts_below_one():
    from mpt.core.runtime import get_hash_threads

    before = get_hash_threads()
    for n in (0, -1):
        with pytest.raises(ValueError):
            with merkle.hashing_threads(n):
                pass
    with pytest.raises(ValueError):
        with merkle.hashing_threads(257):
            pass
    assert get_hash_threads() == before


@pytest.mark.parametrize("total, message", [
    ("03", r"^proof total must be a decimal string \(digits, no leading zero or plus sign\), got '03'$"),
    ("+3", r"^proof total must be a decimal string \(digits, no leading zero or plus sign\), got '\+3'$"),
    ("1" + "0" * 30, r"^proof total 1000000000000000000000000000000 is out of range for an int64$"),
    ("9" * 5000, r"^proof total 9{40}\.\.\. is out of range for an int64$"),
    ("9223372036854775808", r"^proof total 9223372036854775808 is out of range for an int64$"),
    ("-" + "1" * 25, r"^proof total -1{25} is out of range for an int64$"),
])
def test_proof_json_numbers_say_what_is_wrong(total, message):
    j = merkle.proofs([b"tx1", b"tx2", b"tx3"])[1][1].to_json()
    with pytest.raises(ProofError, match=message):
        Proof.from_json(dict(j, total=total))


def test_proof_json_number_rules_are_documented():
    import pathlib

    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "merkle.rst"
    if not page.exists():
        pytest.skip("docs/ is not beside the tests (scripts/smoke_install.py tests an installed copy)")
    text = page.read_text()
    assert '``"03"``' in text and '``"+3"``' in text and "encoding/json" in text


@pytest.mark.parametrize("bad", [b"\0" * 3, bytes(31), bytes(33), "00" * 3, b""])
def test_verify_tx_proof_data_hash_of_the_wrong_length(bad):
    txs = _txs(3)
    answer = merkle.tx_proof(txs, 1)
    n = len(bad) // 2 if isinstance(bad, str) else len(bad)
    with pytest.raises(ProofError, match=r"^data_hash must be a 32-byte SHA-256 hash, got %d bytes$" % n):
        merkle.verify_tx_proof(answer, data_hash=bad)
    assert merkle.verify_tx_proof(answer, data_hash=merkle.data_hash(txs)) is True
    with pytest.raises(ProofError, match="^proof matches different data hash$"):
        merkle.verify_tx_proof(answer, data_hash=bytes(32))
