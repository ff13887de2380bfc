"""Fuzz mpt.ics23.verify_abci_query and mpt.ics23.verify_ibc_merkle_proof with answers built from Go iavl proofs.

The first byte picks the mode:

* 0 (mod 4): a **real** abci_query answer (tests/vectors/cosmos/abci: present or absent key), then fuzz-chosen
  tampering (a field replaced by another JSON type or dropped, a base64 character changed, bytes of an op's
  proof flipped, the ops reordered or repeated). Whatever is accepted must be the genuine answer: the same key
  and the same value (or absence); the untampered answer is always accepted.
* 1: a **real** IBC MerkleProof with flipped or cut bytes and a possibly changed path / value: accepted only
  with the genuine path and value.
* 2: **hostile** JSON text (the rest of the input) to verify_abci_query: ProofError or the genuine answer.
* 3: **hostile** bytes as a MerkleProof (path and value from the input): ProofError, or the genuine claim.
"""
import base64
import copy
import json
from pathlib import Path

from mpt.errors import ProofError
from mpt.ics23 import verify_abci_query, verify_ibc_merkle_proof

from fuzz_support import FuzzInput, run_fuzzer

MAX_LEN = 4096
VECTORS = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "cosmos" / "abci"
_MANIFEST = json.loads((VECTORS / "vectors.json").read_text())
APP_HASH = bytes.fromhex(_MANIFEST["app_hash_hex"])
ANSWERS = {name: json.loads((VECTORS / name).read_text()) for name in ("present.json", "absent.json")}
GENUINE = {
    name: (bytes.fromhex(q["key_hex"]), None if q["value_hex"] is None else bytes.fromhex(q["value_hex"]))
    for name, q in _MANIFEST["queries"].items() if name in ANSWERS
}
IBC = {name: (bytes.fromhex(c["merkle_proof_hex"]), [bytes.fromhex(k) for k in c["path_hex"]],
              None if c["value_hex"] is None else bytes.fromhex(c["value_hex"]))
       for name, c in _MANIFEST["ibc"].items()}
# Replacement values of other JSON types (templates: deep-copied before use).
_JUNK = (None, True, 0, -1, 1 << 64, "", "0", "-1", "AA==", "AA", "zz", "ics23:iavl", "ics23:simple", [], {},
         1.5, [None])


def _tamper_b64(inp: FuzzInput, value: str) -> str:
    try:
        raw = bytearray(base64.b64decode(value, validate=True))
    except ValueError:      # an earlier edit put junk here
        return value
    if not raw:
        return value
    for _ in range(1 + inp.int_below(3)):
        raw[inp.int_below(len(raw))] ^= 1 << inp.int_below(8)
    return base64.b64encode(bytes(raw)).decode()


def _tamper(inp: FuzzInput, env: dict) -> None:
    resp = env["result"]["response"]
    proof_ops = resp.get("proofOps")
    ops = proof_ops.get("ops") if isinstance(proof_ops, dict) else None
    how = inp.int_below(7)
    if not isinstance(ops, list) or not ops or not all(isinstance(op, dict) and op for op in ops):
        # An earlier edit broke the ops: only the response's own fields are left to change.
        ops = None
        how = min(how, 1)
    if not resp and how <= 1:
        return
    if how == 0:
        target = resp if inp.flag() or ops is None else ops[inp.int_below(len(ops))]
        key = inp.choice(sorted(target))
        target[key] = copy.deepcopy(inp.choice(_JUNK))
    elif how == 1:
        target = resp if inp.flag() or ops is None else ops[inp.int_below(len(ops))]
        target.pop(inp.choice(sorted(target)), None)
    elif how == 2:
        op = ops[inp.int_below(len(ops))]
        if isinstance(op.get("data"), str):
            op["data"] = _tamper_b64(inp, op["data"])
    elif how == 3:
        key = inp.choice(("key", "value"))
        if isinstance(resp.get(key), str) and resp[key]:
            resp[key] = _tamper_b64(inp, resp[key])
    elif how == 4:
        ops.reverse()
    elif how == 5:
        ops.append(copy.deepcopy(ops[inp.int_below(len(ops))]))
    else:
        text = resp.get("height")
        resp["height"] = str(inp.int_below(20) - 5) if inp.flag() else text


def check_real_query(inp: FuzzInput) -> None:
    name = inp.choice(sorted(ANSWERS))
    env = copy.deepcopy(ANSWERS[name])
    key, value = GENUINE[name]
    if inp.exhausted:
        assert verify_abci_query(env, APP_HASH) == value
        return
    for _ in range(1 + inp.int_below(3)):
        _tamper(inp, env)
    try:
        got = verify_abci_query(json.dumps(env) if inp.flag() else env, APP_HASH)
    except ProofError:
        return
    resp = env["result"]["response"]
    assert got == value, "accepted a forged value %r for %s" % (got, name)
    assert base64.b64decode(resp["key"]) == key, "accepted an answer about another key (%s)" % name


def check_real_ibc(inp: FuzzInput) -> None:
    name = inp.choice(sorted(IBC))
    proof, path, value = IBC[name]
    data = bytearray(proof)
    for _ in range(inp.int_below(4)):
        if inp.flag() and data:
            data[inp.int_below(len(data))] ^= 1 << inp.int_below(8)
        elif data:
            del data[inp.int_below(len(data)):]
    use_path = list(path)
    if inp.flag():
        i = inp.int_below(len(use_path))
        use_path[i] = use_path[i][:-1] if inp.flag() else use_path[i] + b"\x00"
    use_value = value
    if inp.flag():
        use_value = None if value is not None else b"v"
    try:
        assert verify_ibc_merkle_proof(bytes(data), APP_HASH, use_path, use_value) is True
    except ProofError:
        return
    assert (use_path, use_value) == (path, value), "accepted another path or value (%s)" % name


def check_hostile_query(inp: FuzzInput) -> None:
    text = inp.rest()
    try:
        got = verify_abci_query(text, APP_HASH)
    except ProofError:
        return
    obj = json.loads(text)
    obj = obj.get("result", obj)
    obj = obj.get("response", obj)
    key = base64.b64decode(obj["key"])
    assert any((key, got) == genuine for genuine in GENUINE.values()), "hostile JSON accepted: %r" % text[:200]


def check_hostile_ibc(inp: FuzzInput) -> None:
    path = [b"ibc", inp.chunk(40)]
    value = inp.chunk(40) if inp.flag() else None
    try:
        verify_ibc_merkle_proof(inp.rest(), APP_HASH, path, value or None)
    except ProofError:
        return
    assert any((path, value or None) == (p, v) for _, p, v in IBC.values()), "hostile MerkleProof accepted"


def test_one_input(data: bytes) -> None:
    inp = FuzzInput(data)
    mode = inp.byte() & 3
    if mode == 0:
        check_real_query(inp)
    elif mode == 1:
        check_real_ibc(inp)
    elif mode == 2:
        check_hostile_query(inp)
    else:
        check_hostile_ibc(inp)


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
