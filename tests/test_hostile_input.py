"""Hostile input: any bytes give a domain exception from mpt.errors or a correct answer, never a crash."""
import copy
import importlib
import random
import re
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpt import MptError, SecureTrie, Trie, decode_node, keccak256, rlp, verify_proof, verify_range_proof
from mpt.ethereum.eip1186 import get_proof, verify_get_proof_response
from mpt.errors import NodeDecodeError, ProofError, RLPDecodeError

# mpt/rlp.pxd: lists nested deeper than this are refused by the decoder (and the encoder).
MAX_DECODE_DEPTH = 1024

FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            del b[rng.randrange(len(b))]
        elif op == 2:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
        elif b:
            cut = rng.randrange(len(b))
            b = b[:cut]
    return bytes(b)


@FAST
@given(st.binary(max_size=300))
def test_rlp_decode_any_bytes(data):
    try:
        decoded = rlp.decode(data)
    except RLPDecodeError:
        return
    assert rlp.encode(decoded) == data  # whatever decodes is canonical


@FAST
@given(st.binary(max_size=600))
def test_decode_node_any_bytes(data):
    try:
        node = decode_node(data)
    except NodeDecodeError:
        return
    assert node.encoding() == data


def test_decode_node_mutated_real_nodes():
    rng = random.Random(1)
    t = Trie()
    for i in range(300):
        t[rng.randbytes(rng.choice([1, 3, 32]))] = rng.randbytes(rng.choice([1, 5, 40]))
    blobs = [blob for _, _, blob in t.node_iter()]
    for _ in range(5000):
        data = mutate(rng.choice(blobs), rng)
        try:
            node = decode_node(data)
        except NodeDecodeError:
            continue
        assert node.encoding() == data


def test_verify_proof_with_mutated_and_random_proofs():
    rng = random.Random(2)
    t = Trie()
    model = {}
    for _ in range(500):
        k, v = rng.randbytes(32), rng.randbytes(rng.choice([1, 30, 80]))
        t[k] = v
        model[k] = v
    root = t.hash()
    keys = list(model)
    for trial in range(1500):
        k = rng.choice(keys)
        proof = t.prove(k)
        proof = [mutate(p, rng) if rng.random() < 0.5 else p for p in proof]
        if trial % 5 == 0:
            proof.append(rng.randbytes(rng.randrange(200)))
        try:
            got = verify_proof(root, k, proof)
        except ProofError:
            continue
        assert got == model[k]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=6), st.binary(min_size=1, max_size=33))
def test_verify_proof_random_junk_never_crashes(proof, key):
    root = keccak256(proof[0]) if proof else b"\x11" * 32
    try:
        verify_proof(root, key, proof)
    except MptError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=6), st.lists(st.binary(min_size=1, max_size=4), max_size=5))
def test_verify_range_proof_random_junk_never_crashes(proof, keys):
    root = keccak256(proof[0]) if proof else b"\x11" * 32
    keys = sorted(set(keys))
    try:
        verify_range_proof(root, keys[0] if keys else b"\x00", keys, [b"v"] * len(keys), proof)
    except MptError:
        pass


# ------------------------------------------------------------------------------ the fuzz harnesses' oracles

FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ_DIR))
FUZZ_TARGETS = ("rlp", "node", "proof", "range_proof", "eip1186", "trie_ops")


@pytest.mark.parametrize("target", FUZZ_TARGETS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=1500))
def test_fuzz_harness_on_generated_bytes(target, data):
    # The same checks the atheris fuzzers make (fuzz/), with a fixed budget in the normal suite: each harness
    # turns any bytes into a scenario and raises only when mpt breaks the contract.
    importlib.import_module("fuzz_" + target).test_one_input(data)


# ------------------------------------------------------------------------------------------ linear time
# Generous wall-clock bounds: the inputs are large enough that anything worse than linear would take minutes,
# while a linear pass takes milliseconds.

def nested_lists(depth):
    """depth empty lists, each inside the next, with headers made by hand (rlp.encode stops at the cap)."""
    headers, size = [], 1                           # the innermost list is b"\xc0"
    for _ in range(depth - 1):
        if size < 56:
            header = bytes([0xC0 + size])
        else:
            length = size.to_bytes((size.bit_length() + 7) // 8, "big")
            header = bytes([0xF7 + len(length)]) + length
        headers.append(header)
        size += len(header)
    return b"".join(reversed(headers)) + b"\xc0"


def timed(fn, *args):
    started = time.perf_counter()
    try:
        fn(*args)
    except MptError as e:
        return time.perf_counter() - started, e
    return time.perf_counter() - started, None


def test_nesting_cap_is_exact():
    assert rlp.encode(rlp.decode(nested_lists(MAX_DECODE_DEPTH))) == nested_lists(MAX_DECODE_DEPTH)
    with pytest.raises(RLPDecodeError, match="nested deeper than 1024"):
        rlp.decode(nested_lists(MAX_DECODE_DEPTH + 1))


def test_deep_nesting_is_refused_quickly():
    deep = nested_lists(100_000)                    # about 500 KB, valid RLP all the way down
    elapsed, error = timed(rlp.decode, deep)
    assert isinstance(error, RLPDecodeError) and "nested deeper" in str(error)
    assert elapsed < 1.0
    elapsed, error = timed(decode_node, deep)
    assert isinstance(error, NodeDecodeError) and elapsed < 1.0
    # The encoder has the same cap: a deep Python list is refused, not recursed into until the stack ends.
    value = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(ValueError, match="nested deeper"):
        rlp.encode(value)


def test_huge_declared_lengths_allocate_nothing():
    # 2**64 - 1, 2**63 (negative as a signed size), 2**63 - 1 and 4 GiB, as strings and as lists.
    headers = [b"\xbf" + b"\xff" * 8, b"\xff" + b"\xff" * 8, b"\xbf\x80" + b"\x00" * 7, b"\xff\x80" + b"\x00" * 7,
               b"\xbf\x7f" + b"\xff" * 7, b"\xff" + b"\x7f" * 8, b"\xbb\xff\xff\xff\xff", b"\xfb\xff\xff\xff\xff",
               b"\xf9\xff\xff"]
    for header in headers:
        tracemalloc.start()
        try:
            for decoder, error in ((rlp.decode, RLPDecodeError), (decode_node, NodeDecodeError)):
                with pytest.raises(error):
                    decoder(header + b"\x01" * 16)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 64 * 1024, "decoding %s allocated %d bytes" % (header.hex(), peak)


def test_wide_inputs_decode_in_linear_time():
    wide = rlp.encode([bytes([i % 128]) for i in range(1_000_000)])
    elapsed, error = timed(rlp.decode, wide)
    assert error is None and elapsed < 2.0
    elapsed, error = timed(decode_node, wide)
    assert isinstance(error, NodeDecodeError) and elapsed < 1.0


def test_large_junk_proofs_are_refused_in_linear_time():
    rng = random.Random(9)
    junk = [rng.randbytes(100) for _ in range(50_000)]
    elapsed, error = timed(verify_proof, keccak256(b"root"), b"key", junk)
    assert isinstance(error, ProofError) and elapsed < 3.0
    keys = sorted({rng.randbytes(8) for _ in range(20_000)})
    elapsed, error = timed(verify_range_proof, keccak256(b"root"), keys[0], keys, [b"v"] * len(keys), junk)
    assert isinstance(error, ProofError) and elapsed < 3.0
    elapsed, error = timed(verify_range_proof, keccak256(b"root"), keys[0], keys, [b"v"] * len(keys), None)
    assert isinstance(error, ProofError) and elapsed < 3.0


def test_huge_hex_quantities_are_refused_in_linear_time():
    state = SecureTrie()
    state.update_account(b"\x01" * 20, 1, 2)
    response = get_proof(state, b"\x01" * 20)
    response["balance"] = "0x" + "f" * 1_000_000
    elapsed, error = timed(verify_get_proof_response, state.hash(), response)
    assert isinstance(error, ProofError) and elapsed < 1.0


# ---------------------------------------------------------------------- what the fuzzers found (fixed)

def test_range_proof_with_a_short_node_under_an_extension_is_refused():
    # fuzz/regressions/range_proof/extension-over-leaf-segfault: an extension whose embedded child is a leaf
    # exists in no valid trie; the edge pruning cast that extension to a branch and wrote into it (segfault).
    root_node = rlp.encode([b"\x11", [b"\x31", b"v"]])          # extension 1 -> leaf 1 (key 0x11)
    with pytest.raises(ProofError, match="short node under a short node"):
        verify_range_proof(keccak256(root_node), b"\x10", [b"\x10", b"\x11"], [b"a", b"b"], [root_node])


def test_range_proof_with_entries_before_first_key_is_refused():
    # fuzz/regressions/range_proof/entry-before-first-key: real entries left of first_key re-inserted
    # unchanged, so the claim "exactly the entries from first_key on" was accepted with extra entries.
    t = Trie()
    for i in range(0, 256, 16):
        t[bytes([i])] = b"value %d" % i
    keys = [bytes([i]) for i in (0x10, 0x20, 0x30)]
    values = [t[k] for k in keys]
    first = b"\x15"
    with pytest.raises(ProofError, match="before first_key"):
        verify_range_proof(t.hash(), first, keys, values, t.prove_many([first, keys[-1]]))
    assert verify_range_proof(t.hash(), first, keys[1:], values[1:], t.prove_many([first, keys[-1]])) is True


@pytest.fixture(scope="module")
def account_response():
    state = SecureTrie()
    storage = SecureTrie()
    storage.update_storage(1, 77)
    address = b"\x05" * 20
    state.update_account(address, 3, 10**18, storage_root=storage.hash())
    state.update_account(b"\x06" * 20, 1, 1)
    return state.hash(), get_proof(state, address, slots=[1, 2], storage_trie=storage), storage


@pytest.mark.parametrize("field, value", [
    ("nonce", "0x3 "), ("nonce", "0x0_3"), ("nonce", "0x\uff13"), ("balance", "0x" + "f" * 5000),
    ("balance", "0x" + "1" + "0" * 64), ("address", "0x05050505050505050505 05050505050505050505"),
    ("codeHash", "0x" + "00" * 31 + "0_0"),
])
def test_eip1186_fields_must_be_plain_bounded_hex(account_response, field, value):
    # int() and bytes.fromhex() take underscores, surrounding spaces and non-ASCII digits; "%d" of a quantity
    # over 4300 digits raised ValueError instead of ProofError.
    root, response, _ = account_response
    assert verify_get_proof_response(root, response).nonce == 3
    bad = copy.deepcopy(response)
    bad[field] = value
    with pytest.raises(ProofError):
        verify_get_proof_response(root, bad)


def test_eip1186_storage_proof_must_be_a_list():
    state = SecureTrie()
    state.update_account(b"\x07" * 20, 1, 1)        # no storage: an empty proof is enough for any slot
    response = get_proof(state, b"\x07" * 20, slots=[4])
    verify_get_proof_response(state.hash(), response)
    for not_a_list in (None, "", 0, {}):
        response["storageProof"][0]["proof"] = not_a_list
        with pytest.raises(ProofError, match="not a list"):
            verify_get_proof_response(state.hash(), response)


def test_eip1186_proven_account_with_oversized_balance_is_a_proof_error():
    # fuzz/regressions/eip1186/proven-balance-over-256-bits. A root the caller trusts never holds such an
    # account, but the contract covers any input: it was accepted, and a claim differing from it raised
    # ValueError when the mismatch was formatted (more than 4300 decimal digits).
    state = SecureTrie()
    state.update_account(b"\x01" * 20, 1, 2**20000)
    response = get_proof(state, b"\x01" * 20)
    with pytest.raises(ProofError, match="above 256 bits"):
        verify_get_proof_response(state.hash(), response)


# ---------------------------------------------------------------- eth_getProof: any field, any JSON value

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40),
    st.builds(lambda prefix, digits: prefix + digits, st.sampled_from(["0x", "0X", "", "0x0"]),
              st.text(alphabet="0123456789abcdefABCDEF _g\u0661\uff11", max_size=70)),
)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
FIELD_PATHS = [(f,) for f in ("address", "accountProof", "balance", "codeHash", "nonce", "storageHash",
                              "storageProof")] + [("storageProof", 0, f) for f in ("key", "value", "proof")]


def _strict_reading(field, value):
    """What a field means read strictly (plain 0x hex), or None when it is not strictly well-formed."""
    if not isinstance(value, str) or not re.fullmatch(r"0[xX][0-9a-fA-F]*", value):
        return None
    digits = value[2:]
    if field in ("nonce", "balance", "value"):
        return int(digits, 16) if digits else None
    return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(FIELD_PATHS), replacement=JSON_VALUES)
def test_eip1186_any_json_in_any_field(account_response, path, replacement):
    root, response, storage = account_response
    bad = copy.deepcopy(response)
    parent = bad
    for step in path[:-1]:
        parent = parent[step]
    original = parent[path[-1]]
    parent[path[-1]] = replacement
    try:
        account = verify_get_proof_response(root, bad)
    except ProofError:
        return
    # Accepted: the account is the proven one, and a replaced claim says exactly what the original said.
    assert account == verify_get_proof_response(root, response)
    if path == ("storageProof",):
        # Entries may be dropped or repeated, but each one left must claim the slot's real value.
        for entry in replacement:
            slot = _strict_reading("key", entry["key"])
            assert _strict_reading("value", entry["value"]) == storage.get_storage(int.from_bytes(slot, "big"))
    elif not isinstance(original, list):
        assert _strict_reading(path[-1], replacement) == _strict_reading(path[-1], original) is not None
