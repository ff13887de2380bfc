"""Fuzz mpt.ics23: the protobuf codec of CommitmentProof and verify_membership / verify_non_membership, with the
pure-Python reference (mpt.ics23._reference) as the oracle.

The first byte picks the mode:

* even: a **real** CometBFT simple tree (TENDERMINT_SPEC) of fuzz-chosen keys and values, a real membership or
  non-membership proof of it, then fuzz-chosen byte edits of the proof's wire form.
* odd: **hostile** bytes (the rest of the input) as a proof, claimed against IAVL_SPEC or TENDERMINT_SPEC with
  the key, value and root the proof itself names (so that verification runs as deep as the bytes allow).

Contract, both modes: decoding gives a ProofError or a message that re-encodes to bytes decoding to the same
message; calculate_root from the bytes equals the decoded message's; the reference decodes exactly the inputs
mpt decodes; verification returns True or raises ProofError, and mpt's answer equals the reference's; the wire
verifier proves nothing the object verifier refuses.
"""
import hashlib

from mpt.core.uvarint import uvarint
from mpt.errors import ProofError
from mpt.ics23 import (
    IAVL_SPEC, TENDERMINT_SPEC, CommitmentProof, ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp,
    NonExistenceProof, calculate_root, verify_membership, verify_non_membership,
)
from mpt.ics23 import _reference as ref

from fuzz_support import FuzzInput, ics23_verdicts, real_or_hostile, run_fuzzer

MAX_LEN = 4096
_SPECS = ((IAVL_SPEC, ref.IAVL), (TENDERMINT_SPEC, ref.TENDERMINT))
_LEAF = LeafOp(HashOp.SHA256, HashOp.NO_HASH, HashOp.SHA256, LengthOp.VAR_PROTO, b"\x00")


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()



def _simple_tree(items):
    """CometBFT simple-tree root and each leaf's inner ops (leaf to root), written for this harness."""
    def build(hashes):
        if len(hashes) == 1:
            return hashes[0], [[]]
        k = 1
        while k * 2 < len(hashes):
            k *= 2
        lh, lp = build(hashes[:k])
        rh, rp = build(hashes[k:])
        return _sha(b"\x01" + lh + rh), ([p + [InnerOp(HashOp.SHA256, b"\x01", rh)] for p in lp]
                                         + [p + [InnerOp(HashOp.SHA256, b"\x01" + lh)] for p in rp])
    leaves = [_sha(b"\x00" + uvarint(len(k)) + k + b"\x20" + _sha(v)) for k, v in items]
    return build(leaves)


def check_agreement(spec, ref_spec, root: bytes, proof: bytes, key: bytes, value) -> None:
    wire_says, mpt_says, objects_say, ref_says = ics23_verdicts(spec, ref_spec, root, proof, key, value)
    assert mpt_says is True or mpt_says is False
    assert mpt_says == objects_say == ref_says, \
        "mpt %s, object verifier %s, reference %s: %s" % (mpt_says, objects_say, ref_says, proof.hex())
    assert objects_say or not wire_says, "the wire verifier proved what the object verifier refuses"


def check_codec(data: bytes):
    """Decode data; the reference must agree on validity, and a decoded proof must survive re-encoding."""
    try:
        cp = CommitmentProof.from_bytes(data)
    except ProofError:
        cp = None
    assert (cp is None) == (ref.decode(data) is None), \
        "mpt %s bytes the reference %s" % ("refuses" if cp is None else "decodes", "decodes" if cp is None else
                                           "refuses")
    try:
        object_root = cp.calculate_root() if cp is not None else None
    except ProofError:
        object_root = None
    try:
        wire_root = calculate_root(data)
    except ProofError:
        wire_root = None
    assert wire_root == object_root, "calculate_root from the wire bytes differs from the objects'"
    if cp is not None:
        again = CommitmentProof.from_bytes(cp.to_bytes())
        assert again == cp, "decode(encode(proof)) differs"
        assert again.to_bytes() == cp.to_bytes()
        assert CommitmentProof.from_json(cp.to_json()) == cp
    return cp


def check_real(inp: FuzzInput) -> None:
    items = {}
    for _ in range(1 + inp.int_below(20)):
        items[inp.chunk(8) or b"k"] = inp.chunk(40) or b"v"
    items = sorted(items.items())
    root, paths = _simple_tree(items)
    exists = [ExistenceProof(k, v, _LEAF, paths[i]) for i, (k, v) in enumerate(items)]
    if inp.flag():
        i = inp.int_below(len(items))
        key, value = items[i]
        proof = CommitmentProof(exist=exists[i]).to_bytes()
    else:
        key = inp.chunk(8) or b"\x00"
        if key in dict(items):
            return
        right = next((i for i, (k, _v) in enumerate(items) if k > key), None)
        left = right - 1 if right is not None else len(items) - 1
        proof = CommitmentProof(nonexist=NonExistenceProof(
            key, exists[left] if left >= 0 else None, exists[right] if right is not None else None)).to_bytes()
        value = None
    check_agreement(TENDERMINT_SPEC, ref.TENDERMINT, root, proof, key, value)
    try:
        assert (verify_membership(TENDERMINT_SPEC, root, proof, key, value) if value is not None
                else verify_non_membership(TENDERMINT_SPEC, root, proof, key)) is True
    except ProofError as exc:
        raise AssertionError("a real proof was refused: %s" % exc) from exc
    data = bytearray(proof)
    for _ in range(inp.int_below(4)):
        if not data:
            break
        i = inp.int_below(len(data))
        how = inp.int_below(4)
        if how == 0:
            data[i] ^= 1 + inp.int_below(255)
        elif how == 1:
            del data[i:i + 1 + inp.int_below(8)]
        elif how == 2:
            data[i:i] = inp.chunk(8)
        else:
            j = inp.int_below(len(data))
            data[i:i] = data[j:j + 1 + inp.int_below(40)]
    if inp.flag():
        key = inp.chunk(8)
    check_codec(bytes(data))
    check_agreement(TENDERMINT_SPEC, ref.TENDERMINT, root, bytes(data), key, value)


def check_hostile(inp: FuzzInput) -> None:
    spec, ref_spec = _SPECS[inp.byte() & 1]
    data = inp.rest()
    cp = check_codec(data)
    if cp is None:
        check_agreement(spec, ref_spec, bytes(32), data, b"k", b"v")
        return
    # Claim what the proof itself says, against the root it computes: verification then runs to the end.
    try:
        root = cp.calculate_root()
    except ProofError:
        root = bytes(32)
    first = cp.exist or cp.nonexist
    if cp.batch is not None and cp.batch.entries:
        first = cp.batch.entries[0].proof
    if isinstance(first, ExistenceProof):
        check_agreement(spec, ref_spec, root, data, first.key, first.value)
    elif isinstance(first, NonExistenceProof):
        check_agreement(spec, ref_spec, root, data, first.key or b"\x00", None)
    else:
        check_agreement(spec, ref_spec, root, data, b"k", None)


test_one_input = real_or_hostile(check_real, check_hostile)


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
