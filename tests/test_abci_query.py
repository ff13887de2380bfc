"""mpt.ics23.verify_abci_query: CometBFT abci_query answers (prove=true) against an app hash, and
mpt.ics23.verify_ibc_merkle_proof: ibc-go MerkleProofs. Data: tests/vectors/cosmos/abci (see its README: Go-made
IAVL proofs chained with a multistore map proof)."""
import array
import base64
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mpt import merkle
from mpt.core.uvarint import uvarint
from mpt.errors import ProofError
from mpt.ics23 import _reference as ics23_reference
from mpt.ics23 import verify_abci_query, verify_ibc_merkle_proof
from mpt.ics23.ibc import decode_merkle_proof

VECTORS = Path(__file__).parent / "vectors" / "cosmos" / "abci"
MANIFEST = json.loads((VECTORS / "vectors.json").read_text())
APP_HASH = bytes.fromhex(MANIFEST["app_hash_hex"])


def load(name):
    return json.loads((VECTORS / name).read_text())


def response_of(envelope):
    return envelope["result"]["response"]


def ops_of(envelope):
    return response_of(envelope)["proofOps"]["ops"]


PRESENT_VALUE = bytes.fromhex(MANIFEST["queries"]["present.json"]["value_hex"])
PRESENT_KEY = bytes.fromhex(MANIFEST["queries"]["present.json"]["key_hex"])
ABSENT_KEY = bytes.fromhex(MANIFEST["queries"]["absent.json"]["key_hex"])


def b64(data):
    return base64.b64encode(data).decode()


# ---- accepted ------------------------------------------------------------------------------------------------

def test_manifest_app_hash_is_the_map_root():
    stores = {name: bytes.fromhex(h) for name, h in MANIFEST["stores"].items()}
    assert merkle.map_root(stores) == APP_HASH
    assert stores["bank"].hex() == MANIFEST["store_root_hex"]


@pytest.mark.parametrize("form", ["dict", "text", "bytes", "result", "response"])
def test_present_every_input_form(form):
    env = load("present.json")
    obj = {"dict": env, "text": json.dumps(env), "bytes": json.dumps(env).encode(), "result": env["result"],
           "response": response_of(env)}[form]
    assert verify_abci_query(obj, APP_HASH) == PRESENT_VALUE


@pytest.mark.parametrize("app_hash", [APP_HASH, bytearray(APP_HASH), memoryview(APP_HASH), APP_HASH.hex(),
                                      APP_HASH.hex().upper(), "0x" + APP_HASH.hex(), "0X" + APP_HASH.hex().upper(),
                                      array.array("B", APP_HASH)])
def test_app_hash_forms(app_hash):
    assert verify_abci_query(load("present.json"), app_hash) == PRESENT_VALUE


def test_present_response_only_snake_case():
    resp = load("present_response_only.json")
    assert "proof_ops" in resp and "proofOps" not in resp
    assert verify_abci_query(resp, APP_HASH, key=PRESENT_KEY, store="bank") == PRESENT_VALUE


def test_absent_returns_none():
    assert verify_abci_query(load("absent.json"), APP_HASH) is None
    assert verify_abci_query(load("absent.json"), APP_HASH, key=ABSENT_KEY, store=b"bank") is None
    resp = response_of(load("absent.json"))
    del resp["value"]       # a missing value is an absence claim like null
    assert verify_abci_query(resp, APP_HASH) is None
    resp["value"] = ""      # so is an empty one (ics23 proves no empty value)
    assert verify_abci_query(resp, APP_HASH) is None


def test_height_as_json_number():
    resp = response_of(load("present.json"))
    resp["height"] = 6
    assert verify_abci_query(resp, APP_HASH) == PRESENT_VALUE


# ---- refused -------------------------------------------------------------------------------------------------

def refused(obj, match, app_hash=APP_HASH, **kw):
    """ProofError matching match, for the answer as a dict and as JSON text (both input forms)."""
    forms = [obj, json.dumps(obj), json.dumps(obj).encode()] if isinstance(obj, dict) else [obj]
    for form in forms:
        with pytest.raises(ProofError, match=match) as e:
            verify_abci_query(form, app_hash, **kw)
        assert type(e.value) is ProofError


def test_wrong_app_hash():
    refused(load("present.json"), "calculated root hash is invalid.*header 7", app_hash=b"\x00" * 32)
    refused(load("absent.json"), "calculated root hash is invalid", app_hash=bytes(31) + b"\x01")


def test_empty_value_proof_refused():
    refused(load("empty_value.json"), "value is empty, which ics23 cannot prove, and the proof does not prove the "
                                      "key absent: proof op #0 .*leaf op needs value")
    resp = response_of(load("empty_value.json"))
    resp["value"] = None      # claimed as absent: the proof is a membership proof of an empty value
    refused(resp, "op #0 .*leaf op needs value")


def test_absence_proof_given_with_a_value():
    resp = response_of(load("absent.json"))
    resp["value"] = b64(b"forged")
    refused(resp, "did not verify existence")


def test_membership_proof_claimed_absent_or_other_value():
    resp = response_of(load("present.json"))
    resp["value"] = None
    refused(resp, "did not verify absence")
    resp["value"] = b64(PRESENT_VALUE + b"!")
    refused(resp, "did not verify existence")


def test_op_types_and_order():
    env = load("present.json")
    ops = ops_of(env)
    swapped = copy.deepcopy(env)
    ops_of(swapped).reverse()
    refused(swapped, "wrong order")
    for i, bad in ((0, "ics23:simple"), (0, "iavl:v"), (1, "ics23:iavl"), (1, "multistore")):
        e = copy.deepcopy(env)
        ops_of(e)[i]["type"] = bad
        refused(e, "proof op #%d must be" % i)
    e = copy.deepcopy(env)
    del ops_of(e)[1]
    refused(e, "expected 2 proof ops")
    e = copy.deepcopy(env)
    ops_of(e).append(ops[1])
    refused(e, "expected 2 proof ops")
    e = copy.deepcopy(env)
    ops_of(e)[0]["type"] = None
    refused(e, "has no type")
    e = copy.deepcopy(env)
    ops_of(e)[0]["type"] = "ics23:smt"
    refused(e, "ics23:smt proof ops .* not supported")


def test_op_keys():
    env = load("present.json")
    e = copy.deepcopy(env)
    ops_of(e)[0]["key"] = b64(PRESENT_KEY + b"x")
    refused(e, "key mismatch on operation #0")
    e = copy.deepcopy(env)
    response_of(e)["key"] = b64(ABSENT_KEY)      # the answer claims another key than its proof
    refused(e, "key mismatch on operation #0")
    refused(env, "not the queried key", key=ABSENT_KEY)
    refused(env, "key mismatch on operation #1", store="acc")
    e = copy.deepcopy(env)
    ops_of(e)[1]["key"] = b64(b"acc")             # a bank proof presented as the acc store's
    refused(e, "did not verify existence of key 'acc'")
    e = copy.deepcopy(env)
    ops_of(e)[1]["key"] = ""
    refused(e, "has no key")
    e = copy.deepcopy(env)
    response_of(e)["key"] = ""
    refused(e, "empty key")


def test_missing_proof_ops():
    resp = response_of(load("present.json"))
    ops = resp.pop("proofOps")
    refused(resp, "no proofOps")
    resp["proofOps"] = None
    refused(resp, "no proofOps")
    resp["proofOps"] = {"ops": []}
    refused(resp, "no ops")
    resp["proofOps"] = ops
    resp["proof_ops"] = ops
    refused(resp, "both proofOps and proof_ops")
    del resp["proofOps"], resp["proof_ops"]
    resp["proof"] = {"ops": [{"type": "iavl:v", "key": "", "data": ""}]}
    refused(resp, "pre-ICS23")


def test_bad_base64():
    base = load("present.json")
    good = response_of(base)["value"]
    for where in ("key", "value", "op0key", "op0data", "op1data"):
        for bad in ("QQ", "QR==", "QQ== ", " QQ==", "QQ\n==", "-_8=", "Q Q==", "QQ=", 5, ["QQ=="]):
            e = copy.deepcopy(base)
            if where in ("key", "value"):
                response_of(e)[where] = bad
            else:
                ops_of(e)[int(where[2])][where[3:]] = bad
            refused(e, "base64")
    assert good    # the untouched answer has a value


@pytest.mark.parametrize("bad", ["0x0x" + APP_HASH.hex(), "0x", "0x" + APP_HASH.hex()[:-2], APP_HASH.hex()[:-1],
                                 APP_HASH.hex() + "00",
                                 APP_HASH.hex()[:32] + " " + APP_HASH.hex()[32:],
                                 APP_HASH.hex()[:32] + "_" + APP_HASH.hex()[32:], "zz" * 32, "",
                                 "\uff10" * 64])
def test_bad_app_hash_text(bad):
    refused(load("present.json"), "app_hash", app_hash=bad)


def test_bad_argument_types():
    with pytest.raises(TypeError, match="app_hash"):
        verify_abci_query(load("present.json"), 5)
    with pytest.raises(TypeError, match="key"):
        verify_abci_query(load("present.json"), APP_HASH, key=5)
    with pytest.raises(TypeError, match="response"):
        verify_abci_query(5, APP_HASH)
    with pytest.raises(TypeError, match="response"):
        verify_abci_query(None, APP_HASH)


def test_response_shape():
    refused("not json", "not valid JSON")
    env = load("present.json")
    refused({"result": json.dumps(env["result"])}, "JSON-RPC result must be a JSON object, not str")
    refused({"response": json.dumps(response_of(env))}, "result.response must be a JSON object, not str")
    refused("[1, 2]", "JSON object")
    refused({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error",
                                                   "data": "height 9 must be less than or equal"}},
            "answered with an error: Internal error height 9")
    resp = response_of(load("present.json"))
    resp["code"] = 38
    resp["codespace"] = "sdk"
    resp["log"] = "failed to load state at height 6"
    refused(resp, r"query failed: code 38 \(sdk\): failed to load")
    resp["codespace"], resp["log"] = 7, ["not", "text"]         # any JSON value: shown, not a TypeError
    refused(resp, r"query failed: code 38 \(7\): \['not', 'text'\]")
    resp["codespace"], resp["log"] = "sdk", "failed to load state at height 6"
    resp["code"] = "0"
    refused(resp, "code must be a number")
    for height, match in (("0", "positive"), ("-1", "positive"), ("6.0", "decimal"), ("+6", "decimal"),
                          (" 6", "decimal"), ("06", "decimal"), ("6_0", "decimal"), ("\uff16", "decimal"),
                          (True, "decimal"), ("99999999999999999999", "out of range"),
                          (1 << 64, "out of range")):
        resp = response_of(load("present.json"))
        resp["height"] = height
        refused(resp, match)
    # The height only names the header whose app hash to take (H + 1): an answer without one is verified the
    # same, and a mismatch says so without the hint.
    for missing in ("del", None):
        resp = response_of(load("present.json"))
        if missing == "del":
            del resp["height"]
        else:
            resp["height"] = missing
        assert verify_abci_query(resp, APP_HASH) == PRESENT_VALUE
        with pytest.raises(ProofError, match=r"calculated root hash is invalid: expected [0-9A-F]{64} but got "
                                             r"[0-9A-F]{64}$"):
            verify_abci_query(resp, bytes(32))
    resp = response_of(load("present.json"))
    with pytest.raises(ProofError, match=r"\(the app hash of a query at height \d+ is in header \d+\)"):
        verify_abci_query(resp, bytes(32))


def test_a_flipped_sibling_in_the_iavl_op_names_op_0_s_computed_root():
    """A flipped bit in a sibling hash of op #0 (ics23:iavl) makes op #0 compute another store root; op #1
    (ics23:simple) then fails to prove it. The message says so, instead of blaming op #1 alone."""
    from mpt.ics23 import CommitmentProof

    env = load("present.json")
    op = ops_of(env)[0]
    proof = CommitmentProof.from_bytes(base64.b64decode(op["data"]))
    inner = proof.exist.path[0]
    side = "suffix" if len(inner.suffix) == 33 else "prefix"
    tampered = bytearray(getattr(inner, side))
    tampered[-1] ^= 0x01                    # the last byte of the 32-byte sibling hash
    setattr(inner, side, bytes(tampered))
    op["data"] = b64(proof.to_bytes())
    computed = proof.calculate_root().hex().upper()
    with pytest.raises(ProofError, match=r"^proof op #1 \(ics23:simple\): op #0's computed root is %s, but this "
                                         r"proof holds [0-9A-F]{64} for key 'bank'" % computed) as e:
        verify_abci_query(env, APP_HASH)
    assert "is not what this proof proves" in str(e.value)


def test_a_refused_answer_is_decoded_once_and_not_run_through_the_wire_reader_again(monkeypatch):
    """The wire reader tries the whole chain once (abci.proven_on_the_wire); when it refuses, each proof is
    decoded once into messages and the object verifier alone decides and explains: no second wire attempt
    (ops.proves_*), no re-encoding of the decoded proofs."""
    from mpt.ics23 import abci, messages, ops

    calls = {"chain": 0, "wire": 0, "decode": 0, "encode": 0}
    real_chain, real_decode = abci.proven_on_the_wire, ops.decode_commitment_fast
    real_to_bytes = messages.CommitmentProof.to_bytes

    def counting(name, real):
        def f(*a, **k):
            calls[name] += 1
            return real(*a, **k)
        return f
    monkeypatch.setattr(abci, "proven_on_the_wire", counting("chain", real_chain))
    monkeypatch.setattr(abci, "proves_membership", counting("wire", abci.proves_membership))
    monkeypatch.setattr(abci, "proves_non_membership", counting("wire", abci.proves_non_membership))
    monkeypatch.setattr(ops, "decode_commitment_fast", counting("decode", real_decode))
    monkeypatch.setattr(messages.CommitmentProof, "to_bytes", counting("encode", real_to_bytes))
    env = load("present.json")
    with pytest.raises(ProofError, match="calculated root hash is invalid"):
        verify_abci_query(env, bytes(32))
    # The wire reader read each proof at most once (the chain stops at the first proof it does not prove).
    assert calls["chain"] == 1 and 1 <= calls["wire"] <= 2
    assert calls["decode"] == 2 and calls["encode"] == 0


def test_cli_text_form_and_0x(capsys):
    path = str(VECTORS / "present.json")
    code, out, err = run_cli(capsys, path, "--app-hash", "0x" + APP_HASH.hex())
    assert code == 0 and out.strip() == PRESENT_VALUE.hex()
    code, out, err = run_cli(capsys, path, "--app-hash", APP_HASH.hex(), "--key", "0x" + PRESENT_KEY.hex())
    assert code == 0 and out.strip() == PRESENT_VALUE.hex()
    code, out, err = run_cli(capsys, path, "--app-hash", APP_HASH.hex(), "--text")
    from mpt.ics23.cli import printable_text
    shown = printable_text(PRESENT_VALUE)
    assert code == 0 and out.strip() == (shown if shown is not None else PRESENT_VALUE.hex())
    assert printable_text(b"stake") == "stake" and printable_text(b"\x00\x01") is None
    assert printable_text("h\u00e9".encode()) == "h\u00e9" and printable_text(b"\xff") is None
    assert printable_text(b"") is None and printable_text(b"a\nb") is None


def _flip_every_byte(env, op_index):
    data = base64.b64decode(ops_of(env)[op_index]["data"])
    for i in range(len(data)):
        tampered = bytearray(data)
        tampered[i] ^= 0x01
        e = copy.deepcopy(env)
        ops_of(e)[op_index]["data"] = b64(bytes(tampered))
        yield i, e


@pytest.mark.parametrize("name", ["present.json", "absent.json"])
@pytest.mark.parametrize("op_index", [0, 1])
def test_tampering_every_byte_is_refused(name, op_index):
    env = load(name)
    for i, e in _flip_every_byte(env, op_index):
        try:
            verify_abci_query(e, APP_HASH)
        except ProofError:
            continue
        pytest.fail(f"{name}: op #{op_index} with byte {i} flipped was accepted")


def test_truncated_op_data():
    env = load("present.json")
    data = base64.b64decode(ops_of(env)[0]["data"])
    for n in (0, 1, 2, 10, len(data) // 2, len(data) - 1):
        e = copy.deepcopy(env)
        ops_of(e)[0]["data"] = b64(data[:n])
        refused(e, "op #0")


# ---- IBC MerkleProof -----------------------------------------------------------------------------------------

IBC = MANIFEST["ibc"]


def ibc_case(name):
    c = IBC[name]
    return (bytes.fromhex(c["merkle_proof_hex"]), [bytes.fromhex(k) for k in c["path_hex"]],
            None if c["value_hex"] is None else bytes.fromhex(c["value_hex"]))


class _ProtoMessage:
    """Stands in for a generated protobuf class (cosmpy, ibc-py, betterproto)."""

    def __init__(self, data):
        self._data = data

    def SerializeToString(self):
        return self._data


class _MerklePath:
    def __init__(self, key_path):
        self.key_path = key_path


def test_ibc_membership_forms():
    proof, path, value = ibc_case("membership")
    assert verify_ibc_merkle_proof(proof, APP_HASH, path, value) is True
    assert verify_ibc_merkle_proof(bytearray(proof), APP_HASH.hex(), path, value) is True
    assert verify_ibc_merkle_proof(memoryview(proof), APP_HASH, tuple(path), bytearray(value)) is True
    assert verify_ibc_merkle_proof(_ProtoMessage(proof), APP_HASH, _MerklePath(path), value) is True
    assert verify_ibc_merkle_proof(proof, APP_HASH, ["ibc", path[1]], value) is True


def test_ibc_specs_argument():
    from mpt.ics23 import IAVL_SPEC, SMT_SPEC, TENDERMINT_SPEC

    proof, path, value = ibc_case("membership")
    assert verify_ibc_merkle_proof(proof, APP_HASH, path, value, specs=[IAVL_SPEC, TENDERMINT_SPEC]) is True
    nproof, npath, _ = ibc_case("non_membership")
    assert verify_ibc_merkle_proof(nproof, APP_HASH, npath, specs=(IAVL_SPEC, TENDERMINT_SPEC)) is True
    with pytest.raises(ProofError):
        verify_ibc_merkle_proof(proof, APP_HASH, path, value, specs=[SMT_SPEC, TENDERMINT_SPEC])
    with pytest.raises(ProofError, match="length of specs: 1"):
        verify_ibc_merkle_proof(proof, APP_HASH, path, value, specs=[IAVL_SPEC])
    with pytest.raises(TypeError, match=r"specs\[1\]"):
        verify_ibc_merkle_proof(proof, APP_HASH, path, value, specs=[IAVL_SPEC, "tendermint"])
    with pytest.raises(TypeError, match="specs"):
        verify_ibc_merkle_proof(proof, APP_HASH, path, value, specs=IAVL_SPEC)


def test_ibc_non_membership():
    proof, path, value = ibc_case("non_membership")
    assert value is None
    assert verify_ibc_merkle_proof(proof, APP_HASH, path) is True
    assert verify_ibc_merkle_proof(_ProtoMessage(proof), APP_HASH.hex(), ["ibc", path[1]]) is True


def ibc_refused(match, proof, root, path, value=None):
    with pytest.raises(ProofError, match=match):
        verify_ibc_merkle_proof(proof, root, path, value)


def test_ibc_refusals():
    proof, path, value = ibc_case("membership")
    nproof, npath, _ = ibc_case("non_membership")
    ibc_refused("did not verify existence", proof, APP_HASH, path, value + b"x")
    ibc_refused("empty value", proof, APP_HASH, path, b"")
    ibc_refused("got ExistenceProof", proof, APP_HASH, path)
    ibc_refused("nonexistence proof at index 0", nproof, APP_HASH, npath, b"v")
    ibc_refused("did not verify existence of key 'bank'", proof, APP_HASH, [b"bank", path[1]], value)
    ibc_refused("did not verify existence", proof, APP_HASH, [path[0], path[1] + b"x"], value)
    ibc_refused("non-existence proof is for key", nproof, APP_HASH, [npath[0], path[1]])
    ibc_refused("did not commit to expected root", proof, b"\x01" * 32, path, value)
    ibc_refused("did not commit to expected root", nproof, b"\x01" * 32, npath)
    ibc_refused("path length 1", proof, APP_HASH, path[1:], value)
    ibc_refused("path length 3", proof, APP_HASH, [b"x"] + path, value)
    ibc_refused("must not be empty", proof, APP_HASH, [b"", path[1]], value)
    ibc_refused("proof cannot be empty", b"", APP_HASH, path, value)
    # One proof, three proofs.
    first_len = proof[1] if proof[1] < 0x80 else None
    one = _MerkleProof_first(proof)
    ibc_refused("length of specs: 2 not equal to length of proof: 1", one, APP_HASH, path, value)
    ibc_refused("length of specs: 2 not equal to length of proof: 3", proof + one, APP_HASH, path, value)
    ibc_refused("wrong wire type 0 for field 1", proof + b"\x08\x00", APP_HASH, path, value)
    ibc_refused("illegal tag 0", proof + b"\x02\x00", APP_HASH, path, value)
    ibc_refused("truncated|runs past the end", proof[:-1], APP_HASH, path, value)
    ibc_refused("root", proof, b"\x00" * 31, path, value)
    ibc_refused("root: .* is not hex data", proof, "0x0x" + APP_HASH.hex(), path, value)
    assert verify_ibc_merkle_proof(proof, "0x" + APP_HASH.hex(), path, value) is True
    assert first_len is None or first_len > 0


def test_ibc_merkle_proof_is_read_as_gogoproto_reads_it():
    """ibc-go decodes the MerkleProof with gogoproto: unknown fields are skipped and a varint may be longer than
    it needs to be; both verify as the plain proof does."""
    proof, path, value = ibc_case("membership")
    assert verify_ibc_merkle_proof(proof + b"\x12\x00" + b"\x18\x05", APP_HASH, path, value) is True
    length, pos = ics23_reference._varint(proof, 1, len(proof))
    padded = b"\x0a" + bytes([(length & 0x7F) | 0x80, (length >> 7) | 0x80, 0x00]) + proof[pos:]
    assert length < 1 << 14 and verify_ibc_merkle_proof(padded, APP_HASH, path, value) is True
    assert decode_merkle_proof(padded) == decode_merkle_proof(proof)


def _MerkleProof_first(proof):
    """The MerkleProof made of only the first proof of proof (its field 1: tag, length varint, bytes)."""
    length, pos = ics23_reference._varint(proof, 1, len(proof))
    return proof[:pos + length]


def test_ibc_argument_types():
    proof, path, value = ibc_case("membership")
    with pytest.raises(TypeError, match="path"):
        verify_ibc_merkle_proof(proof, APP_HASH, b"ibc/key", value)
    with pytest.raises(TypeError, match="path"):
        verify_ibc_merkle_proof(proof, APP_HASH, 5, value)
    with pytest.raises(TypeError, match=r"path\[0\]"):
        verify_ibc_merkle_proof(proof, APP_HASH, [5, path[1]], value)
    with pytest.raises(TypeError, match="value"):
        verify_ibc_merkle_proof(proof, APP_HASH, path, "text")
    with pytest.raises(TypeError, match="root"):
        verify_ibc_merkle_proof(proof, None, path, value)
    with pytest.raises(TypeError):
        verify_ibc_merkle_proof(12, APP_HASH, path, value)


@pytest.mark.parametrize("name", ["membership", "non_membership"])
def test_ibc_tampering_every_byte_is_refused(name):
    proof, path, value = ibc_case(name)
    for i in range(len(proof)):
        tampered = bytearray(proof)
        tampered[i] ^= 0x01
        try:
            verify_ibc_merkle_proof(bytes(tampered), APP_HASH, path, value)
        except ProofError:
            continue
        pytest.fail(f"{name}: byte {i} flipped was accepted")


# ---- command line --------------------------------------------------------------------------------------------

ERR = "python -m mpt verify-query: error: "


def run_cli(capsys, *argv):
    from mpt.__main__ import main

    code = main(["verify-query", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_present_absent(capsys):
    assert run_cli(capsys, str(VECTORS / "present.json"), "--app-hash", APP_HASH.hex()) == (
        0, PRESENT_VALUE.hex() + "\n", "")
    assert run_cli(capsys, str(VECTORS / "absent.json"), "--app-hash", APP_HASH.hex().upper()) == (
        0, "absent\n", "")
    assert run_cli(capsys, str(VECTORS / "present_response_only.json"), "--app-hash", APP_HASH.hex(),
                   "--key", PRESENT_KEY.hex(), "--store", "bank")[0] == 0


def test_cli_failures(capsys):
    code, out, err = run_cli(capsys, str(VECTORS / "present.json"), "--app-hash", "00" * 32)
    assert code == 1 and out == "" and err.startswith(ERR + "calculated root hash is invalid")
    assert err.count("\n") == 1
    code, out, err = run_cli(capsys, str(VECTORS / "empty_value.json"), "--app-hash", APP_HASH.hex())
    assert code == 1 and "empty" in err
    code, out, err = run_cli(capsys, str(VECTORS / "present.json"), "--app-hash", APP_HASH.hex(), "--store", "acc")
    assert code == 1 and "operation #1" in err


def test_cli_usage_errors(capsys, tmp_path):
    code, out, err = run_cli(capsys, str(tmp_path / "missing.json"), "--app-hash", APP_HASH.hex())
    assert code == 2 and err.startswith(ERR + "cannot read") and "Traceback" not in err
    for bad in ("0x0x" + APP_HASH.hex(), "zz", APP_HASH.hex()[:-2], APP_HASH.hex() + " "):
        code, out, err = run_cli(capsys, str(VECTORS / "present.json"), "--app-hash", bad)
        assert code == 2 and err.startswith(ERR + "--app-hash"), (bad, err)
    code, out, err = run_cli(capsys, str(VECTORS / "present.json"), "--app-hash", APP_HASH.hex(), "--key", "x")
    assert code == 2 and "--key" in err
    with pytest.raises(SystemExit) as e:
        run_cli(capsys, str(VECTORS / "present.json"))      # --app-hash is required: argparse's usage error
    assert e.value.code == 2


def test_cli_subprocess_no_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = subprocess.run([sys.executable, "-m", "mpt", "verify-query", str(bad), "--app-hash", APP_HASH.hex()],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(ERR + str(bad) + " is not JSON") and "Traceback" not in r.stderr
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    r = subprocess.run([sys.executable, "-m", "mpt", "verify-query", str(listed), "--app-hash", APP_HASH.hex()],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr == ERR + "abci_query response must be a JSON object, not list\n"
    r = subprocess.run([sys.executable, "-m", "mpt", "verify-query", "-", "--app-hash", APP_HASH.hex()],
                       input=(VECTORS / "present.json").read_text(), capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, PRESENT_VALUE.hex() + "\n")
    r = subprocess.run([sys.executable, "-m", "mpt", "verify-query", str(VECTORS / "absent.json"), "--app-hash",
                        APP_HASH.hex()], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "absent\n")


# ---- the compiled fast path and the op-by-op path agree --------------------------------------------------------

def test_wire_fast_path_is_taken_and_agrees_with_op_by_op(monkeypatch):
    from mpt.ics23 import abci

    pytest.importorskip("mpt.ics23.wire")
    taken = []
    real = abci.proven_on_the_wire
    monkeypatch.setattr(abci, "proven_on_the_wire", lambda *a: taken.append(real(*a)) or taken[-1])
    assert verify_abci_query(load("present.json"), APP_HASH) == PRESENT_VALUE
    assert verify_abci_query(load("absent.json"), APP_HASH) is None
    assert taken == [True, True]
    # The same answers, and the same refusals, with the compiled verifier out of the way.
    monkeypatch.setattr(abci, "proven_on_the_wire", lambda *a: False)
    assert verify_abci_query(load("present.json"), APP_HASH) == PRESENT_VALUE
    assert verify_abci_query(load("absent.json"), APP_HASH) is None
    for name in ("present.json", "absent.json"):
        for _i, e in _flip_every_byte(load(name), 1):
            with pytest.raises(ProofError):
                verify_abci_query(e, APP_HASH)


def test_wire_peek_falls_back_on_unusual_layouts():
    from mpt.ics23 import abci

    data = base64.b64decode(ops_of(load("present.json"))[1]["data"])
    key, value = abci._wire_peek_exist(data)
    assert key == b"bank" and value.hex() == MANIFEST["store_root_hex"]
    assert abci._wire_peek_exist(data + b"\x00") is None         # trailing bytes: not Go's layout
    assert abci._wire_peek_exist(data[:-1]) is None
    assert abci._wire_peek_exist(b"") is None
    absent = base64.b64decode(ops_of(load("absent.json"))[0]["data"])
    assert abci._wire_peek_nonexist_key(absent) == ABSENT_KEY
    assert abci._wire_peek_nonexist_key(data) is None


# ---- end to end: answers made from MutableTree proofs ----------------------------------------------------------

def _answer(key, value, iavl_proof, store, stores, height):
    return {"jsonrpc": "2.0", "id": 1, "result": {"response": {
        "code": 0, "log": "", "info": "", "index": "0", "key": b64(key),
        "value": None if value is None else b64(value),
        "proofOps": {"ops": [
            {"type": "ics23:iavl", "key": b64(key), "data": b64(iavl_proof.to_bytes())},
            {"type": "ics23:simple", "key": b64(store.encode()),
             "data": b64(merkle.map_proof(stores, store).to_bytes())},
        ]},
        "height": str(height), "codespace": ""}}}


@pytest.mark.parametrize("seed", range(4))
def test_answers_from_mutable_tree_proofs(seed):
    """Random module stores in a random multistore: every answer made from MutableTree's proofs (byte-identical
    with Go iavl's) verifies to the tree's own value or absence, for present, absent and removed keys."""
    import random

    iavl = pytest.importorskip("mpt.iavl")
    if not hasattr(iavl.MutableTree, "membership_proof"):
        pytest.skip("MutableTree has no membership_proof")
    rng = random.Random(seed)
    tree = iavl.MutableTree()
    keys = [rng.randbytes(rng.randint(1, 24)) for _ in range(rng.randint(1, 300))]
    for k in keys:
        tree.set(k, rng.randbytes(rng.randint(1, 40)))
    removed = keys[: len(keys) // 5]
    for k in removed:
        tree.remove(k)
    root, version = tree.save_version()
    stores = {name: rng.randbytes(32) for name in rng.sample(["acc", "bank", "gov", "ibc", "staking", "upgrade",
                                                              "wasm", "mint"], rng.randint(1, 7))}
    store = rng.choice(sorted(stores))
    stores[store] = root
    app_hash = merkle.map_root(stores)
    probes = keys[::7] + removed[:5] + [rng.randbytes(rng.randint(1, 24)) for _ in range(5)]
    for k in probes:
        value = tree.get(k)
        proof = tree.membership_proof(k) if value is not None else tree.non_membership_proof(k)
        answer = _answer(k, value, proof, store, stores, version)
        assert verify_abci_query(answer, app_hash, key=k, store=store) == value
        assert verify_abci_query(json.dumps(answer), app_hash.hex()) == value
        parts = [base64.b64decode(op["data"]) for op in ops_of(answer)]
        merkle_proof = b"".join(b"\x0a" + uvarint(len(p)) + p for p in parts)
        assert verify_ibc_merkle_proof(merkle_proof, app_hash, [store, k], value) is True
        forged = copy.deepcopy(answer)
        response_of(forged)["value"] = b64(b"forged") if value is None else None
        refused(forged, "did not verify")



def test_compressed_paths_longer_than_the_spec_are_refused_before_hashing():
    # A compressed path names ops by index: 1024 uses of one 1 MiB lookup op would make Calculate hash 1 GiB.
    import base64 as _b64
    import json as _json

    from mpt.ics23 import (CommitmentProof, CompressedBatchEntry, CompressedBatchProof, CompressedExistenceProof,
                           HashOp, InnerOp, LeafOp, LengthOp, verify_abci_query)

    big = InnerOp(HashOp.SHA256, b"\x01" * (1 << 20), b"")
    leaf = LeafOp(HashOp.SHA256, HashOp.NO_HASH, HashOp.SHA256, LengthOp.VAR_PROTO, b"\x00")
    entry = CompressedBatchEntry(exist=CompressedExistenceProof(b"k", b"v", leaf, [0] * 1024))
    raw = CommitmentProof(compressed=CompressedBatchProof([entry], [big])).to_bytes()

    def b64(b):
        return _b64.b64encode(b).decode()

    answer = {"code": 0, "key": b64(b"k"), "value": b64(b"v"), "height": "5",
              "proofOps": {"ops": [{"type": "ics23:iavl", "key": b64(b"k"), "data": b64(raw)},
                                   {"type": "ics23:simple", "key": b64(b"bank"), "data": b64(raw)}]}}
    with pytest.raises(ProofError, match="compressed batch entry 0 has a path of 1024 inner ops, more than the "
                                         "spec's limit of 128"):
        verify_abci_query(_json.dumps(answer), b"\0" * 32)
