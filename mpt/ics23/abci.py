"""Verify a CometBFT ``abci_query`` answer (``prove=true``) of a Cosmos SDK chain against an app hash.

A proven query of ``/store/<store>/key`` answers with the value (or none) and two proof ops, as the SDK's
rootmulti ``Store.Query`` makes them:

1. ``ics23:iavl``: an ICS23 commitment proof (``IAVL_SPEC``) that the module store's IAVL tree holds
   key -> value, or that the key is absent; the op's key is the query key.
2. ``ics23:simple``: an ICS23 existence proof (``TENDERMINT_SPEC``) that the multistore's simple Merkle map holds
   store name -> that IAVL root; the op's key is the store name. Its root is the app hash.

The ops are checked as CometBFT's ``ProofOperators.Verify`` with the SDK's ``DefaultProofRuntime`` does (the op
keys consume the key path from its end; each op's output is the next op's input; the last root must be the app
hash), and as the light client's ``ABCIQueryWithOptions`` checks the response around it (code 0, a key, proof ops,
height > 0). ``ics23:smt`` ops (the SDK's experimental SMT store, never in its default proof runtime) are refused
like any other op type rootmulti's ``DefaultProofRuntime`` does not register.
"""
import json
from collections.abc import Mapping
from typing import Any, Optional, Union

from mpt.core.bytes_like import bytes_arg
from mpt.core.jsonrpc import parse_base64, parse_data, parse_decimal
from mpt.errors import ProofError
from mpt.ics23.messages import CommitmentProof
from mpt.ics23.ops import verify_membership_objects, verify_non_membership_objects
from mpt.ics23.specs import IAVL_SPEC, TENDERMINT_SPEC
from mpt.ics23.wire import proves_membership, proves_non_membership

__all__ = ["verify_abci_query"]

OP_IAVL = "ics23:iavl"
OP_SIMPLE = "ics23:simple"
OP_SMT = "ics23:smt"


# ---------------------------------------------------------------------------------------------------------------
# strict field parsing (mpt.jsonrpc's readers, failing with ProofError)
# ---------------------------------------------------------------------------------------------------------------

def _b64(value, what):
    """A base64 JSON field as bytes (None for JSON null / a missing field stays None)."""
    if value is None:
        return None
    return parse_base64(value, what, error=ProofError)


def _int64(value, what):
    """An int64 JSON field: a canonical decimal string as CometBFT writes them (a JSON number is taken too)."""
    return parse_decimal(value, what, 63, signed=True, error=ProofError)


# The rule for str arguments of the ICS23 entry points (verify_abci_query, verify_ibc_merkle_proof, the CLI): a
# str is read as what a person would type for that argument. A hash (app_hash, root) is never text: a str is its
# hex, with or without 0x. A key or store name (key, store, path keys) is text: a str is its UTF-8 bytes (Cosmos
# keys and store names are Go strings). Bytes-like values (bytes, bytearray, memoryview, array.array, ...) are
# taken as the bytes themselves under the package's one bytes-like policy.

def parse_hash_argument(value, what):
    """A 32-byte hash given as bytes-like or as hex text (``0x`` optional; no spaces or underscores)."""
    if isinstance(value, str):
        return parse_data(value, what, 32, prefix=None, error=ProofError)
    value = bytes_arg(value, what)
    if len(value) != 32:
        raise ProofError(f"{what}: expected 32 bytes, got {len(value)}")
    return value


def key_argument(value, what):
    """A store key given as bytes-like or str (its UTF-8 bytes)."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ProofError(f"{what} {value!r:.60} is not encodable as UTF-8: {e.reason}") from None
    return bytes_arg(value, what)


def _json_object(obj, what, text=False):
    """obj as a JSON object: a Mapping, or (text=True, for the whole answer only) JSON text of one."""
    if text and isinstance(obj, (str, bytes, bytearray, memoryview)):
        try:
            obj = json.loads(bytes(obj) if isinstance(obj, memoryview) else obj)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise ProofError(f"{what} is not valid JSON: {e}") from None
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise ProofError(f"{what} must be a JSON object, not {type(obj).__name__}")
    return obj


def _response_object(response):
    """The ResponseQuery inside what a user holds: the JSON-RPC envelope, its result, or the response."""
    if not isinstance(response, (Mapping, str, bytes, bytearray, memoryview)):
        raise TypeError(f"response must be a dict or JSON text, not {type(response).__name__}")
    obj = _json_object(response, "abci_query response", text=True)
    if "error" in obj and "result" not in obj:
        err = obj["error"]
        if isinstance(err, Mapping):
            err = " ".join(str(err[k]) for k in ("message", "data") if err.get(k))
        raise ProofError(f"the node answered with an error: {err!s:.200}")
    if "result" in obj:
        obj = _json_object(obj["result"], "JSON-RPC result")
    if "response" in obj:
        obj = _json_object(obj["response"], "abci_query result.response")
    return obj


def _proof_ops(resp):
    camel, snake = resp.get("proofOps"), resp.get("proof_ops")
    if camel is not None and snake is not None:
        raise ProofError("the response has both proofOps and proof_ops")
    ops_obj = camel if camel is not None else snake
    if ops_obj is None:
        if resp.get("proof") is not None:
            raise ProofError("the response carries a pre-ICS23 'proof' (iavl:v / multistore ops), not proofOps")
        raise ProofError("the response has no proofOps: query a /store/<name>/key path with prove=true")
    ops_obj = _json_object(ops_obj, "proofOps")
    ops = ops_obj.get("ops")
    if not isinstance(ops, list) or not ops:
        raise ProofError("proofOps has no ops")
    out = []
    for i, op in enumerate(ops):
        op = _json_object(op, f"proof op #{i}")
        op_type = op.get("type")
        if not isinstance(op_type, str):
            raise ProofError(f"proof op #{i} has no type")
        op_key = _b64(op.get("key"), f"proof op #{i} key") or b""
        data = _b64(op.get("data"), f"proof op #{i} data") or b""
        out.append((op_type, op_key, data))
    return out


# ---------------------------------------------------------------------------------------------------------------
# running the ops
# ---------------------------------------------------------------------------------------------------------------

def _decode_proof(data, where):
    if not data:
        raise ProofError(f"{where}: the op carries no proof")
    try:
        return CommitmentProof.from_bytes(data)
    except ProofError as e:
        raise ProofError(f"{where}: {e}") from None


def _calculate(proof, where):
    """The root a commitment proof commits to (Go's CommitmentProof.Calculate)."""
    try:
        return proof.calculate_root()
    except ProofError as e:
        raise ProofError(f"{where}: could not calculate root for proof: {e}") from None


def show_key(key):
    """A key for an error message: as text when it is printable ASCII (store names, IBC paths), else hex."""
    if key and all(0x20 <= c < 0x7F for c in key):
        return repr(key.decode("ascii"))
    return key.hex()


def _check_compressed_depth(spec, proof, where):
    """Refuse a compressed batch whose paths are longer than the spec allows, before any hashing.

    A compressed path names its inner ops by index, so a short proof can name one large lookup op a thousand
    times and make Calculate hash a thousand times its own size; the spec's depth limit (ics23's 128 when
    max_depth is 0) would refuse such a path anyway, only after that work. Uncompressed paths carry every op
    and cost time linear in their size."""
    compressed = proof.compressed
    if compressed is None:
        return
    limit = spec.max_depth if spec.max_depth > 0 else 128
    for number, entry in enumerate(compressed.entries):
        sides = (entry.exist,) if entry.exist is not None else (
            () if entry.nonexist is None else (entry.nonexist.left, entry.nonexist.right))
        for side in sides:
            if side is not None and len(side.path) > limit:
                raise ProofError(f"{where}: compressed batch entry {number} has a path of {len(side.path)} inner "
                                 f"ops, more than the spec's limit of {limit}")


def run_commitment_op(spec, proof, key, value, where, value_from=None):
    """The SDK's CommitmentOp.Run: the proof's own root, after checking it proves key -> value (value None:
    proves key absent). proof is the decoded CommitmentProof, checked by the object verifier alone: the wire
    reader has had its try on the bytes already. value_from names where value came from ("op #0's computed
    root") for the message when the proof holds another value for key."""
    _check_compressed_depth(spec, proof, where)
    root = _calculate(proof, where)
    if value is None and proof.nonexist is not None and proof.nonexist.key != key:
        # Go's VerifyNonMembership never reads the proof's own key; every store that makes these proofs sets it
        # to the key proven absent, so a different one is a forged or mixed-up proof, not a chain's answer.
        raise ProofError(f"{where}: the non-existence proof is for key {show_key(proof.nonexist.key)}, not "
                         f"{show_key(key)}")
    if value_from is not None and value is not None:
        exist = proof.exist
        if exist is not None and exist.key == key and exist.value != value:
            raise ProofError(f"{where}: {value_from} is {value.hex().upper()}, but this proof holds "
                             f"{exist.value.hex().upper()} for key {show_key(key)}: {value_from} is not what this "
                             f"proof proves (the earlier proof does not lead to this one)")
    try:
        if value is None:
            verify_non_membership_objects(spec, root, proof, key)
        else:
            verify_membership_objects(spec, root, proof, key, value)
    except ProofError as e:
        if value is None:
            raise ProofError(f"{where}: proof did not verify absence of key {show_key(key)}: {e}") from None
        raise ProofError(f"{where}: proof did not verify existence of key {show_key(key)} with the given value: "
                         f"{e}") from None
    return root


def _wire_field(data, pos, end, field):
    """(start, end) of the length-delimited field at data[pos:end] if it is the wanted one, else None."""
    if pos >= end or data[pos] != (field << 3) | 2:
        return None
    pos += 1
    length = shift = 0
    while True:
        if pos >= end or shift > 28:
            return None
        b = data[pos]
        pos += 1
        length |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    if length > end - pos:
        return None
    return pos, pos + length


def _wire_peek_exist(data):
    """(key, value) of a CommitmentProof{exist} laid out as Go marshals it (key, then value first), else None.

    Only a guess to try the compiled verifier with: the verifier then reads the whole proof, so a guess taken
    from an unusual layout (a repeated field, another order) fails there and the full check decides."""
    outer = _wire_field(data, 0, len(data), 1)
    if outer is None or outer[1] != len(data):
        return None
    key = _wire_field(data, outer[0], outer[1], 1)
    if key is None:
        return None
    value = _wire_field(data, key[1], outer[1], 2)
    if value is None:
        return None
    return data[key[0]:key[1]], data[value[0]:value[1]]


def _wire_peek_nonexist_key(data):
    """The key of a CommitmentProof{nonexist} laid out as Go marshals it, else None."""
    outer = _wire_field(data, 0, len(data), 2)
    if outer is None or outer[1] != len(data):
        return None
    key = _wire_field(data, outer[0], outer[1], 1)
    return None if key is None else data[key[0]:key[1]]


def proven_on_the_wire(store_data, multi_data, key, store_name, value, app_hash):
    """True when the compiled reader proves the whole chain of an SDK query straight from the proofs' bytes: the
    simple proof proves store_name -> X under app_hash, and the IAVL proof proves key -> value (or key absent)
    under X. That is the acceptance of running the ops one after another (each op's computed root is the next
    op's value, the last one is the app hash). False means "not decided here": the op-by-op check decodes each
    proof once and explains (verify_abci_query, and verify_ibc_merkle_proof with the SDK's specs)."""
    peeked = _wire_peek_exist(multi_data)
    if peeked is None or peeked[0] != store_name:
        return False
    store_root = peeked[1]
    if value is None:
        if _wire_peek_nonexist_key(store_data) != key:
            return False
        if not proves_non_membership(IAVL_SPEC, store_root, store_data, key):
            return False
    elif not proves_membership(IAVL_SPEC, store_root, store_data, key, value):
        return False
    return proves_membership(TENDERMINT_SPEC, app_hash, multi_data, store_name, store_root)


def _spec_for(op_type):
    if op_type == OP_IAVL:
        return IAVL_SPEC
    if op_type == OP_SIMPLE:
        return TENDERMINT_SPEC
    if op_type == OP_SMT:
        raise ProofError("ics23:smt proof ops (the SDK's experimental SMT store) are not supported: the SDK's "
                         "DefaultProofRuntime takes only ics23:iavl and ics23:simple")
    raise ProofError(f"unrecognized proof type {op_type!r:.60}")


def verify_abci_query(response: Union[Mapping[str, Any], str, bytes, bytearray, memoryview],
                      app_hash: Union[bytes, bytearray, memoryview, str], *,
                      key: Union[bytes, bytearray, memoryview, str, None] = None,
                      store: Union[bytes, bytearray, memoryview, str, None] = None) -> Optional[bytes]:
    """Verify the answer of CometBFT's ``/abci_query?path="/store/<store>/key"&data=<key>&prove=true`` and
    return the proven value, or None when the key is proven absent.

    ``response`` is what the node answered, as a dict or JSON text: the whole JSON-RPC envelope
    (``{"jsonrpc", "id", "result": {"response": ...}}``), its ``result``, or just ``result.response``. Fields
    are read in CometBFT's JSON form (base64 ``key`` / ``value``, ``proofOps`` or ``proof_ops`` with ops of
    ``type`` / base64 ``key`` / base64 ``data``, ``height`` as a decimal string), strictly: non-canonical base64,
    a non-zero ``code`` or a missing field is an error, never a guess.

    ``app_hash`` (32 bytes, or hex text with or without ``0x``) is the app hash you trust, taken from a verified
    block header. The state a query at height H reads is committed by the app hash in the header of block
    **H + 1** (a block's header carries the app hash of the state *before* it), so for an answer with
    ``"height": "H"`` take the app hash of header H + 1. ``key`` (bytes, or str: its UTF-8 text), if given,
    must be the key the answer is about; ``store`` (the store name, e.g. ``"bank"``), if given, must be the
    store its second op proves. The rule for str: a hash is hex, a key or name is text; bytes-like values are the
    bytes themselves. An answer without ``height`` is verified the same (the height only names the header to
    take the app hash from); a malformed or non-positive one is refused.

    A missing, null or empty ``value`` claims the key absent (ics23 cannot prove an empty value). Returns the
    value (bytes) or None for a proven absence. Raises :class:`mpt.errors.ProofError` naming what
    failed for anything else, and TypeError for arguments of the wrong type."""
    expected_root = parse_hash_argument(app_hash, "app_hash")
    want_key = key_argument(key, "key") if key is not None else None
    want_store = key_argument(store, "store") if store is not None else None

    resp = _response_object(response)
    code = resp.get("code", 0)
    if isinstance(code, bool) or not isinstance(code, int):
        raise ProofError(f"response code must be a number, not {type(code).__name__}")
    if code != 0:
        log = resp.get("log") or ""
        space = resp.get("codespace") or ""
        # A hostile or broken answer may put any JSON value in codespace and log: shown, never concatenated.
        raise ProofError(f"the query failed: code {code}{f' ({space!s:.100})' if space else ''}: {log!s:.200}")
    resp_key = _b64(resp.get("key"), "response key")
    if not resp_key:
        raise ProofError("the response has an empty key")
    if want_key is not None and want_key != resp_key:
        raise ProofError(f"the response is about key {resp_key.hex()}, not the queried key {want_key.hex()}")
    value = _b64(resp.get("value"), "response value")
    # ics23 proves no empty value (its LeafOp needs one), so an empty "value" can only stand for "no value": it
    # is taken as an absence claim, which the proof must prove like a null value's.
    empty_value = value is not None and len(value) == 0
    if empty_value:
        value = None
    height = None
    if resp.get("height") is not None:
        height = _int64(resp["height"], "response height")
        if height <= 0:
            raise ProofError(f"the response height must be positive, got {height}")
    ops = _proof_ops(resp)

    if len(ops) != 2:
        raise ProofError(f"expected 2 proof ops (ics23:iavl then ics23:simple), got {len(ops)}")
    (store_type, store_op_key, store_data), (multi_type, multi_op_key, multi_data) = ops
    if store_type == OP_SIMPLE and multi_type == OP_IAVL:
        raise ProofError("proof ops are in the wrong order: the store's op must come before ics23:simple")
    if OP_SMT in (store_type, multi_type):
        _spec_for(OP_SMT)
    if store_type != OP_IAVL:
        raise ProofError(f"proof op #0 must be ics23:iavl, got {store_type!r:.60}")
    if multi_type != OP_SIMPLE:
        raise ProofError(f"proof op #1 must be ics23:simple, got {multi_type!r:.60}")
    store_spec = _spec_for(store_type)
    multi_spec = _spec_for(multi_type)

    # The key path is /<store>/<key>: op #0 consumes the key, op #1 the store name.
    if store_op_key != resp_key:
        raise ProofError(f"key mismatch on operation #0: expected {resp_key.hex()} but got {store_op_key.hex()}")
    if not multi_op_key:
        raise ProofError("proof op #1 (ics23:simple) has no key: it must be the store name")
    if want_store is not None and multi_op_key != want_store:
        raise ProofError(f"key mismatch on operation #1: the proof is for store {show_key(multi_op_key)}, "
                         f"not {show_key(want_store)}")

    if proven_on_the_wire(store_data, multi_data, resp_key, multi_op_key, value, expected_root):
        return value
    store_proof = _decode_proof(store_data, f"proof op #0 ({store_type})")
    multi_proof = _decode_proof(multi_data, f"proof op #1 ({multi_type})")
    try:
        store_root = run_commitment_op(store_spec, store_proof, store_op_key, value, f"proof op #0 ({store_type})")
    except ProofError as e:
        if empty_value:
            raise ProofError(f"the response value is empty, which ics23 cannot prove, and the proof does not prove "
                             f"the key absent: {e}") from None
        raise
    app_root = run_commitment_op(multi_spec, multi_proof, multi_op_key, store_root, f"proof op #1 ({multi_type})",
                                 value_from="op #0's computed root")
    if app_root != expected_root:
        hint = "" if height is None else (f" (the app hash of a query at height {height} is in header "
                                           f"{height + 1})")
        raise ProofError(f"calculated root hash is invalid: expected {expected_root.hex().upper()} but got "
                         f"{app_root.hex().upper()}{hint}")
    return value
