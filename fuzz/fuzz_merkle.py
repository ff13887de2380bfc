"""Fuzz mpt.merkle's untrusted-input entry points: Proof.from_json, Proof.verify and verify_tx_proof.

The first byte picks the mode:

* even: a **real** tree. Leaves (or txs) drawn from the input, a real proof or CometBFT ``/tx`` proof in RPC
  JSON, then fuzz-chosen tampering (a changed total, index, leaf hash, aunt, root, tx; aunts dropped,
  duplicated or reordered; a field replaced by another JSON type). Whatever mpt accepts, the pure-Python
  reference (mpt._merkle_reference) must accept too, and the untampered proof must be accepted.
* odd: **hostile** JSON text (the rest of the input), given to Proof.from_json and verify_tx_proof: a
  ProofError or a result the reference agrees with, nothing else.
"""
import base64
import copy
import hashlib
import json

from mpt import merkle
from mpt.merkle import _reference as ref
from mpt.errors import ProofError

from fuzz_support import FuzzInput, real_or_hostile, run_fuzzer

MAX_LEN = 4096
# Replacement values of other JSON types. The lists and dicts are templates: _tamper hands out deep copies, since
# a later edit of the same input may write into the value it placed (a shared {} once received itself as a
# field, and every later input saw the change).
_JUNK = (None, True, 0, -1, 1 << 64, "", "0", "-1", "18446744073709551616", "AA==", "zz", [], {}, 1.5, [None])


def _reference_accepts(root: bytes, p: merkle.Proof, leaf: bytes) -> bool:
    return ref.verify(root, p.total, p.index, p.leaf_hash, list(p.aunts), leaf)


def _tamper(inp: FuzzInput, obj: dict, keys) -> None:
    """Change one fuzz-chosen thing of a JSON proof object in place."""
    key = inp.choice(keys)
    how = inp.int_below(6)
    value = obj.get(key)
    if how == 0:
        obj[key] = copy.deepcopy(inp.choice(_JUNK))
    elif how == 1:
        obj.pop(key, None)
    elif how == 2 and isinstance(value, str) and value:
        i = inp.int_below(len(value))
        obj[key] = value[:i] + chr((ord(value[i]) + 1 + inp.int_below(60)) % 128) + value[i + 1:]
    elif how == 3 and isinstance(value, list) and value:
        i = inp.int_below(len(value))
        obj[key] = value[:i] + value[i + 1:] if inp.flag() else value[:i] + [value[i]] + value[i:]
    elif how == 4 and isinstance(value, list) and len(value) > 1:
        obj[key] = value[::-1]
    elif how == 5 and isinstance(value, str) and value.lstrip("-").isdigit():
        obj[key] = str(int(value) + inp.int_below(5) - 2)


def check_real(inp: FuzzInput) -> None:
    leaves = [inp.chunk(70) for _ in range(1 + inp.int_below(40))]
    index = inp.int_below(len(leaves))
    if inp.flag():
        # A CometBFT /tx proof: leaves are sha256(tx).
        obj = merkle.tx_proof(leaves, index)
        want_root = ref.root([hashlib.sha256(tx).digest() for tx in leaves])
        assert bytes.fromhex(obj["root_hash"]) == want_root
        assert merkle.verify_tx_proof(obj, data_hash=want_root) is True
        original = json.dumps(obj)
        for _ in range(inp.int_below(3)):
            if inp.flag():
                _tamper(inp, obj, ("root_hash", "data", "proof"))
            elif isinstance(obj.get("proof"), dict):
                _tamper(inp, obj["proof"], ("total", "index", "leaf_hash", "aunts"))
        try:
            accepted = merkle.verify_tx_proof(json.dumps(obj) if inp.flag() else obj)
        except ProofError:
            return
        assert accepted is True
        # Accepted: the claim must hold by the reference's reading of the (possibly changed) object.
        p = merkle.Proof.from_json(obj["proof"])
        tx = base64.b64decode(obj["data"])
        assert _reference_accepts(bytes.fromhex(obj["root_hash"]), p, hashlib.sha256(tx).digest()), \
            "verify_tx_proof accepted what CometBFT refuses: %s (from %s)" % (json.dumps(obj), original)
        return

    root, proofs = merkle.proofs(leaves)
    assert root == ref.root(leaves)
    p = proofs[index]
    assert p.verify(root, leaves[index]) is True
    obj = p.to_json()
    for _ in range(inp.int_below(3)):
        _tamper(inp, obj, ("total", "index", "leaf_hash", "aunts"))
    leaf = leaves[inp.int_below(len(leaves))] if inp.flag() else leaves[index]
    try:
        q = merkle.Proof.from_json(obj)
        accepted = q.verify(root, leaf)
    except ProofError:
        return
    assert accepted is True
    assert _reference_accepts(root, q, leaf), "verify accepted what CometBFT refuses: %r" % (obj,)


def check_hostile(inp: FuzzInput) -> None:
    text = inp.rest()
    try:
        p = merkle.Proof.from_json(text)
    except ProofError:
        pass
    else:
        try:
            computed = p.compute_root_hash()
        except ProofError:
            computed = None
        assert computed == ref.compute_root_hash(p.index, p.total, p.leaf_hash, list(p.aunts))
    try:
        accepted = merkle.verify_tx_proof(text)
    except ProofError:
        return
    assert accepted is True
    obj = json.loads(text)
    obj = obj.get("result", obj) if "root_hash" not in obj else obj
    obj = obj["proof"] if "root_hash" not in obj else obj
    q = merkle.Proof.from_json(obj["proof"])
    assert _reference_accepts(bytes.fromhex(obj["root_hash"]), q,
                              hashlib.sha256(base64.b64decode(obj["data"])).digest())


test_one_input = real_or_hostile(check_real, check_hostile)


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
