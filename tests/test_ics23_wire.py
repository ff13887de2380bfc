"""Differential tests of ICS23 verification: the wire verifier (mpt.ics23.wire), the object verifier
(mpt.ics23.ops) and the independent pure-Python reference (mpt.ics23._reference) must agree on real, random,
re-encoded and tampered proofs. The wire verifier answers only "proven"; it must never prove what the object
verifier refuses, and it must prove every canonical real proof (else verification would be slow)."""
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))

from fuzz_support import ics23_verdicts  # noqa: E402
from ics23_trees import SimpleTree, iavl_store, vector_cases  # noqa: E402

from mpt.errors import ProofError  # noqa: E402
from mpt.ics23 import (  # noqa: E402
    IAVL_SPEC, TENDERMINT_SPEC, CommitmentProof, HashOp, InnerOp, InnerSpec, LeafOp, ProofSpec, calculate_root,
    verify_membership,
    verify_non_membership,
)
from mpt.ics23 import _reference as ref  # noqa: E402
from mpt.ics23 import wire  # noqa: E402

REF_SPECS = {id(IAVL_SPEC): ref.IAVL, id(TENDERMINT_SPEC): ref.TENDERMINT}


def _claims():
    """(spec, root, proof bytes, key, value or None) of every real proof we hold."""
    out = []
    for _n, tree, root, proof, key, value in vector_cases():
        out.append((IAVL_SPEC if tree == "iavl" else TENDERMINT_SPEC, root, proof, key, value or None))
    store = iavl_store()
    root = bytes.fromhex(store["latest_root_hex"])
    for p in store["membership_proofs"]:
        out.append((IAVL_SPEC, root, bytes.fromhex(p["commitment_proof_hex"]), bytes.fromhex(p["key_hex"]),
                    bytes.fromhex(p["value_hex"])))
    for p in store["nonmembership_proofs"]:
        out.append((IAVL_SPEC, root, bytes.fromhex(p["commitment_proof_hex"]), bytes.fromhex(p["key_hex"]), None))
    rng = random.Random(23)
    for size in (1, 2, 3, 5, 8, 13, 33):
        tree = SimpleTree({rng.randbytes(rng.randint(1, 6)): rng.randbytes(rng.randint(1, 40)) for _ in range(size)})
        for i, (key, value) in enumerate(tree.items):
            out.append((TENDERMINT_SPEC, tree.root, tree.membership(i).to_bytes(), key, value))
        for _ in range(4):
            absent = rng.randbytes(rng.randint(1, 6))
            if absent not in dict(tree.items):
                out.append((TENDERMINT_SPEC, tree.root, tree.non_membership(absent).to_bytes(), absent, None))
    return out


CLAIMS = _claims()


def _verdicts(spec, root, proof, key, value):
    """(wire, public function, object verifier, reference) answers, each True/False (a ProofError is False)."""
    return ics23_verdicts(spec, REF_SPECS.get(id(spec)) or ref.from_proof_spec(spec), root, proof, key, value)


def _agree(spec, root, proof, key, value):
    w, public, o, r = _verdicts(spec, root, proof, key, value)
    assert o == r, "object verifier says %s, reference %s: %s" % (o, r, proof.hex())
    assert o or not w, "the wire verifier proved what the object verifier refuses: %s" % proof.hex()
    assert public == o          # the public functions: the same answer
    return w, o


def test_every_real_proof_takes_the_wire_path():
    assert len(CLAIMS) > 100
    for claim in CLAIMS:
        w, o = _agree(*claim)
        assert w and o


def test_single_byte_changes_agree():
    rng = random.Random(1)
    for spec, root, proof, key, value in CLAIMS[:12] + rng.sample(CLAIMS[12:], 2):
        for i in range(len(proof)):
            for flip in (rng.randrange(1, 256),):
                _agree(spec, root, proof[:i] + bytes([proof[i] ^ flip]) + proof[i + 1:], key, value)


def test_random_edits_agree():
    rng = random.Random(2)
    for _ in range(3000):
        spec, root, proof, key, value = rng.choice(CLAIMS)
        data = bytearray(proof)
        for _ in range(rng.randint(1, 4)):
            how = rng.randrange(4)
            i = rng.randrange(len(data) + 1)
            if how == 0 and data:
                data[min(i, len(data) - 1)] = rng.randrange(256)
            elif how == 1:
                data[i:i] = rng.randbytes(rng.randint(1, 3))
            elif how == 2 and data:
                del data[i:i + rng.randint(1, 3)]
            else:
                j = rng.randrange(len(data) + 1)
                data[i:i] = data[j:j + rng.randint(1, 40)]
        _agree(spec, root, bytes(data), key, value)


def test_structural_edits_agree():
    """Edits through the objects: ops dropped, swapped, duplicated, changed; leaf fields changed; sides swapped."""
    rng = random.Random(3)
    for _ in range(600):
        spec, root, proof, key, value = rng.choice(CLAIMS)
        cp = CommitmentProof.from_bytes(proof)
        ex = cp.exist if cp.exist is not None else rng.choice([e for e in (cp.nonexist.left, cp.nonexist.right)
                                                                if e is not None])
        how = rng.randrange(8)
        if how == 0 and ex.path:
            del ex.path[rng.randrange(len(ex.path))]
        elif how == 1 and len(ex.path) > 1:
            i, j = rng.sample(range(len(ex.path)), 2)
            ex.path[i], ex.path[j] = ex.path[j], ex.path[i]
        elif how == 2 and ex.path:
            ex.path.insert(rng.randrange(len(ex.path)), ex.path[rng.randrange(len(ex.path))])
        elif how == 3 and ex.path:
            op = ex.path[rng.randrange(len(ex.path))]
            op.hash = rng.choice(list(HashOp))
        elif how == 4:
            ex.leaf.prehash_key = rng.choice(list(HashOp))
        elif how == 5 and cp.nonexist is not None:
            cp.nonexist.left, cp.nonexist.right = cp.nonexist.right, cp.nonexist.left
        elif how == 6 and cp.nonexist is not None:
            if rng.random() < 0.5:
                cp.nonexist.left = None
            else:
                cp.nonexist.right = None
        elif ex.path:
            op = ex.path[rng.randrange(len(ex.path))]
            op.prefix, op.suffix = op.suffix, op.prefix
        _w, o = _agree(spec, root, cp.to_bytes(), key, value)
        # The same proof given as the objects (encoded for the wire verifier, else checked as objects).
        try:
            public = (verify_membership(spec, root, cp, key, value) if value is not None
                      else verify_non_membership(spec, root, cp, key))
        except ProofError:
            public = False
        assert public == o


def test_non_canonical_encodings_fall_back_and_verify():
    """Encodings Go's Unmarshal reads but Marshal never writes: the wire verifier declines, the object verifier
    proves them."""
    for spec, root, proof, key, value in CLAIMS[:12]:
        cp = CommitmentProof.from_bytes(proof)
        body = (cp.exist or cp.nonexist).to_bytes()
        tag = b"\x0a" if cp.exist is not None else b"\x12"
        variants = [
            proof + b"\x78\x01",                                  # an unknown varint field after the proof
            b"\x78\x01" + proof,                                  # ... and before it
            tag + _non_minimal_varint(len(body)) + body,          # a length varint with a needless 0x00 group
            b"\x0a\x00" + proof if cp.exist is None else b"\x12\x00" + proof,    # another oneof case, then ours
        ]
        for data in variants:
            w, o = _agree(spec, root, data, key, value)
            assert o, data.hex()


def _non_minimal_varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n | 0x80)
    out.append(0)
    return bytes(out)


def test_custom_spec_without_cache():
    """A spec the caller built (not a frozen constant) is compiled per call, and agrees."""
    spec = ProofSpec.from_bytes(TENDERMINT_SPEC.to_bytes())
    assert spec == TENDERMINT_SPEC and spec is not TENDERMINT_SPEC
    for s, root, proof, key, value in CLAIMS:
        if s is TENDERMINT_SPEC:
            w, o = _agree(spec, root, proof, key, value)
            assert w and o
    # A spec the wire verifier does not run (SHA-512 inner nodes): the object verifier decides alone.
    odd = ProofSpec(LeafOp(HashOp.SHA256, prehash_value=HashOp.SHA256, length=1, prefix=b"\x00"),
                    TENDERMINT_SPEC.inner_spec, 0, 0, False)
    odd.inner_spec = ProofSpec.from_bytes(TENDERMINT_SPEC.to_bytes()).inner_spec
    odd.inner_spec.hash = HashOp.SHA512
    spec0, root, proof, key, value = CLAIMS[6]
    with pytest.raises(ProofError, match="unexpected HashOp: 1"):
        verify_membership(odd, root, proof, key, value)


def test_inner_op_swap_is_refused_everywhere():
    spec, root, proof, key, value = CLAIMS[0]
    cp = CommitmentProof.from_bytes(proof)
    cp.exist.path[0] = InnerOp(cp.exist.path[0].hash, cp.exist.path[0].prefix + b"\x00", cp.exist.path[0].suffix)
    w, _public, o, r = _verdicts(spec, root, cp.to_bytes(), key, value)
    assert (w, o, r) == (False, False, False)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import fuzz_ics23  # noqa: E402  (the atheris harness; its contract needs no atheris)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_fuzz_harness_on_generated_bytes(data):
    fuzz_ics23.test_one_input(data)


def _or_none(fn, data):
    """fn(data), or None where it raises ProofError."""
    try:
        return fn(data)
    except ProofError:
        return None


def _object_root(data):
    return _or_none(lambda d: CommitmentProof.from_bytes(d).calculate_root(), data)


def test_calculate_root_agrees():
    rng = random.Random(4)
    for spec, root, proof, key, value in CLAIMS:
        assert calculate_root(proof) == root == _object_root(proof)
        assert calculate_root(CommitmentProof.from_bytes(proof)) == root
        assert calculate_root(bytearray(proof)) == root
    for _ in range(2000):
        spec, root, proof, key, value = rng.choice(CLAIMS)
        data = bytearray(proof)
        i = rng.randrange(len(data))
        data[i] ^= rng.randrange(1, 256)
        assert _or_none(calculate_root, bytes(data)) == _object_root(bytes(data)), bytes(data).hex()
    with pytest.raises(TypeError, match="proof"):
        calculate_root("0a00")


def test_compiled_reader_decodes_as_the_generic_decoder():
    rng = random.Random(5)
    for spec, root, proof, key, value in CLAIMS:
        fast = wire.decode_commitment(proof)
        assert fast is not None and fast == CommitmentProof._from_bytes_generic(proof)
        assert fast.to_bytes() == proof and repr(fast) == repr(CommitmentProof._from_bytes_generic(proof))
    for _ in range(3000):
        spec, root, proof, key, value = rng.choice(CLAIMS)
        data = bytearray(proof)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            data[i] ^= rng.randrange(1, 256)
        data = bytes(data)
        generic = _or_none(CommitmentProof._from_bytes_generic, data)
        assert _or_none(CommitmentProof.from_bytes, data) == generic
        fast = wire.decode_commitment(data)
        assert fast is None or fast == generic


def _random_spec(rng):
    """A spec near IAVL's or Tendermint's: other child orders, sizes, prefix bounds, empty children, depths."""
    base = rng.choice((IAVL_SPEC, TENDERMINT_SPEC))
    spec = ProofSpec.from_bytes(base.to_bytes())
    inner = spec.inner_spec
    for _ in range(rng.randint(1, 3)):
        how = rng.randrange(9)
        if how == 0:
            inner.child_order = rng.choice(([1, 0], [0, 1, 2], [2, 0, 1], [0], [0, 2], [0, 0]))
        elif how == 1:
            inner.child_size = rng.choice((0, 1, 31, 32, 33, 34, -1, 2 ** 31 - 1))
        elif how == 2:
            inner.min_prefix_length = rng.choice((0, 1, 4, 5, -1))
        elif how == 3:
            inner.max_prefix_length = rng.choice((1, 12, 13, 40, 2 ** 31 - 1))
        elif how == 4:
            inner.empty_child = rng.choice((b"", bytes(32), bytes(33)))
        elif how == 5:
            spec.max_depth = rng.choice((0, 1, 5, 10, 200, -1))
        elif how == 6:
            spec.min_depth = rng.choice((0, 1, 5, 11, 200))
        elif how == 7:
            spec.prehash_key_before_comparison = not spec.prehash_key_before_comparison
        else:
            spec.leaf_spec.prefix = rng.choice((b"", b"\x00", b"\x00\x02", b"\x01"))
    return spec


def test_random_specs_agree():
    rng = random.Random(6)
    for _ in range(1500):
        spec = _random_spec(rng)
        _s, root, proof, key, value = rng.choice(CLAIMS)
        _agree(spec, root, proof, key, value)


@pytest.mark.parametrize("make", [
    lambda: ProofSpec(leaf_spec=IAVL_SPEC.leaf_spec, inner_spec=InnerSpec(
        child_order=[0, 1], child_size=33, min_prefix_length=2**40, max_prefix_length=12, hash=HashOp.SHA256)),
    lambda: ProofSpec(leaf_spec=IAVL_SPEC.leaf_spec, inner_spec=InnerSpec(
        child_order=[0, 1], child_size=2**32, min_prefix_length=4, max_prefix_length=12, hash=HashOp.SHA256)),
    lambda: ProofSpec(leaf_spec=IAVL_SPEC.leaf_spec, inner_spec=IAVL_SPEC.inner_spec, max_depth=2**40),
    lambda: ProofSpec(leaf_spec=IAVL_SPEC.leaf_spec, inner_spec=IAVL_SPEC.inner_spec, min_depth=-2**40),
])
def test_specs_with_fields_beyond_the_c_types_go_to_the_object_verifier(make):
    # The compiled reader keeps spec fields in C ints; a spec it cannot hold is the object verifier's to judge,
    # which refuses these proofs with a ProofError (not an OverflowError from the compiled side).
    spec = make()
    with pytest.raises(ProofError):
        verify_membership(spec, b"\0" * 32, b"\x0a\x00", b"k", b"v")
    with pytest.raises(ProofError):
        verify_non_membership(spec, b"\0" * 32, b"\x12\x00", b"k")


@pytest.mark.parametrize("which", ["root", "proof", "key", "value"])
def test_wire_verdicts_refuse_none(which):
    spec, root, proof, key, value = next(c for c in CLAIMS if c[4] is not None)
    args = dict(root=root, proof=proof, key=key, value=value)
    args[which] = None
    with pytest.raises(TypeError):
        wire.proves_membership(spec, args["root"], args["proof"], args["key"], args["value"])
