"""Fuzz mpt.eip1186.verify_get_proof_response: eth_getProof responses, real but tampered, or arbitrary JSON.

The first byte picks the mode:

* even: a **real** response. A small state (accounts with storage) is drawn from the input; get_proof answers
  for an address and slots (present or not), the response goes through JSON, and up to three fuzz-chosen
  edits replace, drop or bend its fields and proofs. Soundness: when verification succeeds, every claim of the
  response, read strictly (0x-prefixed hex digits only), must be what the state really holds for the claimed
  address and slots, and the returned account must be that account. Completeness: an untouched response must
  verify.
* odd: **arbitrary JSON** (32 bytes of state root, then JSON text). Only a result or ProofError may come out.
"""
import copy
import json
import re

from mpt import EMPTY_CODE_HASH, EMPTY_ROOT, SecureTrie, keccak256
from mpt.ethereum.eip1186 import Account, get_proof, verify_get_proof_response
from mpt.errors import ProofError

from fuzz_support import FuzzInput, real_or_hostile, run_fuzzer

MAX_LEN = 8192
ZERO_HASH = b"\x00" * 32
STRICT_HEX = re.compile(r"0[xX][0-9a-fA-F]*\Z")

# Replacement values for a field: wrong types, malformed hex, hex that int() or bytes.fromhex() would
# half-accept, and sizes far beyond any legal field. The lists and dicts are templates: tamper() hands out deep
# copies, since a later edit of the same response may write into the value it placed, and a shared one would
# carry that change into every later input.
ODD_VALUES = (
    None, 0, 1.5, True, [], {}, "", "0x", "0X", "0x0", "0x00", "0x1", "12", "0xzz", " 0x1", "0x1 ", "0x1_0",
    "0x\uff11", "0x12 34", "0x-1", "0x" + "f" * 5000, "0x" + "0" * 5000 + "1", "0x" + "11" * 32, "0x" + "00" * 32,
    "0x" + EMPTY_CODE_HASH.hex(), "0x" + EMPTY_ROOT.hex(), ["0x"], ["0x00"], [{}], [None],
    {"key": "0x0", "value": "0x0", "proof": []},
)
TOP_FIELDS = ("address", "accountProof", "balance", "codeHash", "nonce", "storageHash", "storageProof")
ENTRY_FIELDS = ("key", "value", "proof")


def build_state(inp: FuzzInput):
    """A state trie of up to four accounts and their storage tries; returns (state, {address: storage})."""
    state, storages = SecureTrie(), {}
    for _ in range(1 + inp.int_below(4)):
        address = inp.take(20) if inp.flag() else bytes([inp.byte()]) * 20
        storage = SecureTrie()
        for _ in range(inp.int_below(5)):
            slot = inp.int_below(8) if inp.flag() else int.from_bytes(inp.take(32), "big")
            storage.update_storage(slot, 1 + int.from_bytes(inp.take(inp.choice((1, 2, 31))), "big"))
        nonce = inp.choice((0, 1, inp.byte(), 2**64 - 1))
        balance = inp.choice((0, 1, 10**18, 2**256 - 1, int.from_bytes(inp.take(8), "big")))
        code_hash = inp.choice((EMPTY_CODE_HASH, keccak256(inp.take(4))))
        state.update_account(address, nonce, balance, storage_root=storage.hash(), code_hash=code_hash)
        storages[address] = storage
    return state, storages


def _hex_text(value) -> str:
    return "0x" + value.hex()


def _bend_string(value: str, inp: FuzzInput) -> str:
    """A near miss of a hex string: one digit changed, case changed, a leading zero, a digit dropped or a
    stray character appended."""
    edit = inp.int_below(5)
    digits = value[2:]
    if edit == 0 and digits:
        i = inp.int_below(len(digits))
        replacement = inp.choice("0123456789abcdefABCDEF")
        return value[:2] + digits[:i] + replacement + digits[i + 1:]
    if edit == 1:
        return "0X" + digits.upper()
    if edit == 2:
        return "0x0" + digits
    if edit == 3:
        return value[:-1]
    return value + inp.choice(("0", "00", " ", "_0", "g"))


def tamper(response: dict, inp: FuzzInput, other_proofs) -> None:
    """Up to three fuzz-chosen edits of a JSON-shaped eth_getProof response, in place."""
    for _ in range(inp.int_below(4)):
        entries = response.get("storageProof")
        target = response
        fields = TOP_FIELDS
        if isinstance(entries, list) and entries and inp.flag():
            target = entries[inp.int_below(len(entries))]
            if not isinstance(target, dict):
                continue
            fields = ENTRY_FIELDS
        field = inp.choice(fields)
        edit = inp.int_below(6)
        if edit == 0:
            target.pop(field, None)
        elif edit == 1:
            target[field] = copy.deepcopy(inp.choice(ODD_VALUES))
        elif edit == 2 and isinstance(target.get(field), str):
            target[field] = _bend_string(target[field], inp)
        elif edit == 3 and isinstance(target.get(field), list) and target[field]:
            items = target[field]
            i = inp.int_below(len(items))
            choice = inp.int_below(4)
            if choice == 0:
                del items[i]
            elif choice == 1:
                items.append(items[i])
            elif choice == 2 and isinstance(items[i], str):
                items[i] = _bend_string(items[i], inp)
            else:
                items.insert(i, copy.deepcopy(inp.choice(ODD_VALUES)))
        elif edit == 4 and other_proofs:
            # A real proof from the same state, for another address or slot.
            target[field] = list(inp.choice(other_proofs))
        elif edit == 5 and field in ("key", "address"):
            target[field] = "0x" + inp.take(32 if field == "key" else 20).hex()


def _strict_bytes(value) -> bytes:
    if not isinstance(value, str) or not STRICT_HEX.match(value):
        raise ValueError("not strict hex: %r" % (value,))
    digits = value[2:]
    return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)


def _strict_quantity(value) -> int:
    if not isinstance(value, str) or not STRICT_HEX.match(value) or len(value) == 2:
        raise ValueError("not a strict hex quantity: %r" % (value,))
    return int(value, 16)


def assert_claims_true(response, account, state, storages) -> None:
    """Every claim of an accepted response, read strictly, is what the state holds."""
    address = _strict_bytes(response["address"])
    truth = state.get_account(address)
    assert (account is None) == (truth is None), "the account's existence is misproven"
    nonce = _strict_quantity(response["nonce"])
    balance = _strict_quantity(response["balance"])
    code_hash = _strict_bytes(response["codeHash"])
    storage_hash = _strict_bytes(response["storageHash"])
    if truth is None:
        assert (nonce, balance) == (0, 0)
        assert code_hash in (ZERO_HASH, EMPTY_CODE_HASH) and storage_hash in (ZERO_HASH, EMPTY_ROOT)
        storage = None
    else:
        assert account == Account(*truth), "returned account %r, the state holds %r" % (account, truth)
        assert (nonce, balance, storage_hash, code_hash) == truth, "accepted claims differ from the state"
        storage = storages[address]
    for entry in response["storageProof"]:
        slot = _strict_bytes(entry["key"])
        claimed = _strict_quantity(entry["value"])
        held = storage.get_storage(int.from_bytes(slot, "big")) if storage is not None else 0
        assert claimed == held, "slot %s: accepted %d, the state holds %d" % (slot.hex(), claimed, held)
        _strict_proof(entry["proof"])
    _strict_proof(response["accountProof"])


def _strict_proof(value) -> None:
    if not isinstance(value, list):
        raise ValueError("proof is not a list: %r" % (value,))
    for blob in value:
        _strict_bytes(blob)


def check_real_response(inp: FuzzInput) -> None:
    state, storages = build_state(inp)
    addresses = sorted(storages)
    address = inp.choice(addresses) if inp.flag() else inp.take(20)
    storage = storages.get(address)
    slots = [inp.int_below(10) if inp.flag() else inp.take(32) for _ in range(inp.int_below(4))]
    response = json.loads(json.dumps(get_proof(state, address, slots=slots, storage_trie=storage)))
    root = state.hash()
    assert verify_get_proof_response(root, response) == (
        None if state.get_account(address) is None else Account(*state.get_account(address)))
    other_proofs = [["0x" + p.hex() for p in state.prove(a)] for a in addresses]
    other_proofs += [["0x" + p.hex() for p in s.prove(bytes(32))] for s in storages.values()]
    tamper(response, inp, other_proofs)
    try:
        account = verify_get_proof_response(root, response)
    except ProofError:
        return
    try:
        assert_claims_true(response, account, state, storages)
    except ValueError as e:
        raise AssertionError("verify_get_proof_response accepted a malformed field: %s" % e) from None


def check_arbitrary_json(inp: FuzzInput) -> None:
    root = inp.take(32)
    try:
        response = json.loads(inp.rest().decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return                                  # not JSON: the caller's parser refuses it, not mpt
    try:
        verify_get_proof_response(root, response)
    except ProofError:
        pass


test_one_input = real_or_hostile(check_real_response, check_arbitrary_json)


def json_input(root: bytes, response) -> bytes:
    """Encode an arbitrary-JSON-mode input (seeds and regression files)."""
    return b"\x01" + root + json.dumps(response).encode()


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
