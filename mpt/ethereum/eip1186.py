"""EIP-1186 (`eth_getProof`): verify account and storage proofs, and build responses from our own tries.

An `eth_getProof` result proves an account against a block's state root and storage slots against the
account's storage root. Every hex field is checked against what the proofs actually show.
"""
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, cast

from mpt.core import rlp
from mpt.core._keccak import keccak256
from mpt.errors import ProofError, RLPDecodeError
from mpt.core.jsonrpc import parse_data, parse_quantity
from mpt.ethereum.proof import verify_proof
from mpt.ethereum.secure import EMPTY_CODE_HASH
from mpt.ethereum.trie import EMPTY_ROOT

_ZERO_HASH = b"\x00" * 32
# JSON-RPC hex is read by mpt.jsonrpc: "0x" then ASCII hex digits only (int() and bytes.fromhex() alone would
# also take "0x1_0", "0x1 ", full-width digits and spaces between bytes: one claim, several spellings).
# geth's StateAccount: the nonce is a uint64, the balance a uint256; claimed quantities are at most 256 bits.
_MAX_NONCE_BYTES = 8
_MAX_UINT256_BYTES = 32

__all__ = [
    "Account",
    "get_proof",
    "verify_account_proof",
    "verify_get_proof_response",
    "verify_storage_proof",
]


@dataclass(frozen=True)
class Account:
    """A state account as the state trie stores it."""

    nonce: int
    balance: int
    storage_root: bytes
    code_hash: bytes

    def encode(self) -> bytes:
        """The account's RLP as stored in the state trie."""
        return rlp.encode([self.nonce, self.balance, self.storage_root, self.code_hash])


def _uint(raw: bytes, what: str) -> int:
    if raw[:1] == b"\x00":
        raise ProofError("%s has leading zero bytes" % what)
    return int.from_bytes(raw, "big")


def _decode_account(blob: bytes) -> Account:
    try:
        fields = rlp.decode(blob)
    except RLPDecodeError as e:
        raise ProofError("account value is not valid RLP: %s" % e) from None
    if not isinstance(fields, list) or len(fields) != 4 or any(isinstance(f, list) for f in fields):
        raise ProofError("account value is not an RLP list of four strings")
    nonce, balance, storage_root, code_hash = cast(List[bytes], fields)
    if len(nonce) > _MAX_NONCE_BYTES or len(balance) > _MAX_UINT256_BYTES:
        raise ProofError("account nonce above 64 bits or balance above 256 bits")
    if len(storage_root) != 32 or len(code_hash) != 32:
        raise ProofError("account storage root or code hash is not 32 bytes")
    return Account(_uint(nonce, "nonce"), _uint(balance, "balance"), storage_root, code_hash)


def _slot_bytes(slot) -> bytes:
    if isinstance(slot, int) and not isinstance(slot, bool):
        if not 0 <= slot < 1 << 256:
            raise ValueError("storage slot out of range")
        return slot.to_bytes(32, "big")
    if isinstance(slot, (bytes, bytearray)):
        if len(slot) > 32:
            raise ValueError("storage slot longer than 32 bytes")
        return bytes(slot).rjust(32, b"\x00")
    raise TypeError("storage slot must be an int or bytes, not %s" % type(slot).__name__)


def verify_account_proof(state_root: bytes, address: bytes, account_proof: Iterable[bytes]) -> Optional[Account]:
    """The account at address proven under state_root, or None when the proof shows it does not exist."""
    if not isinstance(address, (bytes, bytearray)) or len(address) != 20:
        raise ValueError("address must be 20 bytes")
    value = verify_proof(state_root, keccak256(bytes(address)), account_proof)
    return None if value is None else _decode_account(value)


def verify_storage_proof(storage_root: bytes, slot, storage_proof: Iterable[bytes]) -> int:
    """The value of a storage slot proven under storage_root (0 when proven absent)."""
    value = verify_proof(storage_root, keccak256(_slot_bytes(slot)), storage_proof)
    if value is None:
        return 0
    try:
        raw = rlp.decode(value)
    except RLPDecodeError as e:
        raise ProofError("storage value is not valid RLP: %s" % e) from None
    if isinstance(raw, list) or not raw or len(raw) > 32:
        raise ProofError("storage value is not an RLP string of 1 to 32 bytes")
    return _uint(raw, "storage value")


# ------------------------------------------------------------------------------------------------ JSON-RPC

def _hex_bytes(value, field: str) -> bytes:
    # An odd number of digits means a leading 0 (geth prints storage keys as "0x1" when asked with them).
    return parse_data(value, field, prefix=True, pad_odd=True, decoded=False, error=ProofError)


def _hex_quantity(value, field: str) -> int:
    # Bounded before anything formats it: "%d" of an int over 4300 digits raises ValueError, not ProofError.
    return parse_quantity(value, field, 8 * _MAX_UINT256_BYTES, decoded=False, error=ProofError)


def _hash_field(value, field: str) -> bytes:
    raw = _hex_bytes(value, field)
    if len(raw) != 32:
        raise ProofError("%s is not a 32-byte hash" % field)
    return raw


def _proof_list(value, field: str) -> List[bytes]:
    if not isinstance(value, list):
        raise ProofError("%s is not a list" % field)
    return [_hex_bytes(item, "%s[%d]" % (field, i)) for i, item in enumerate(value)]


def verify_get_proof_response(state_root: bytes, response: Mapping) -> Optional[Account]:
    """Check every field of an `eth_getProof` result against state_root.

    Returns the proven account (None when the proofs show it does not exist); raises ProofError naming the
    first field that the proofs contradict.
    """
    if not isinstance(response, Mapping):
        raise ProofError("eth_getProof response must be a JSON object")
    for field in ("address", "accountProof", "balance", "codeHash", "nonce", "storageHash", "storageProof"):
        if field not in response:
            raise ProofError("eth_getProof response lacks %s" % field)
    address = _hex_bytes(response["address"], "address")
    if len(address) != 20:
        raise ProofError("address is not 20 bytes")
    account = verify_account_proof(state_root, address, _proof_list(response["accountProof"], "accountProof"))
    nonce = _hex_quantity(response["nonce"], "nonce")
    balance = _hex_quantity(response["balance"], "balance")
    code_hash = _hash_field(response["codeHash"], "codeHash")
    storage_hash = _hash_field(response["storageHash"], "storageHash")
    if account is None:
        # geth answers for a missing account with zeros, an empty storage root and a zero (or empty) code hash.
        if nonce != 0:
            raise ProofError("nonce: account is absent but nonce is %d" % nonce)
        if balance != 0:
            raise ProofError("balance: account is absent but balance is %d" % balance)
        if code_hash not in (_ZERO_HASH, EMPTY_CODE_HASH):
            raise ProofError("codeHash: account is absent but codeHash is %s" % code_hash.hex())
        if storage_hash not in (_ZERO_HASH, EMPTY_ROOT):
            raise ProofError("storageHash: account is absent but storageHash is %s" % storage_hash.hex())
        storage_root = EMPTY_ROOT
    else:
        if nonce != account.nonce:
            raise ProofError("nonce: response says %d, proof shows %d" % (nonce, account.nonce))
        if balance != account.balance:
            raise ProofError("balance: response says %d, proof shows %d" % (balance, account.balance))
        if code_hash != account.code_hash:
            raise ProofError("codeHash: response does not match the proven account")
        if storage_hash != account.storage_root:
            raise ProofError("storageHash: response does not match the proven account")
        storage_root = account.storage_root
    storage = response["storageProof"]
    if not isinstance(storage, list):
        raise ProofError("storageProof is not a list")
    for i, entry in enumerate(storage):
        field = "storageProof[%d]" % i
        if not isinstance(entry, Mapping) or not {"key", "value", "proof"} <= set(entry):
            raise ProofError("%s needs key, value and proof" % field)
        slot = _hex_bytes(entry["key"], field + ".key")
        if len(slot) > 32:
            raise ProofError("%s.key is longer than 32 bytes" % field)
        claimed = _hex_quantity(entry["value"], field + ".value")
        proof = _proof_list(entry["proof"], field + ".proof")
        if storage_root == EMPTY_ROOT and not proof:
            proven = 0  # an empty storage trie has no root node to send
        else:
            proven = verify_storage_proof(storage_root, slot, proof)
        if proven != claimed:
            raise ProofError("%s.value: response says %d, proof shows %d" % (field, claimed, proven))
    return account


def get_proof(state_trie, address: bytes, slots: Sequence = (), storage_trie=None) -> Dict:
    """An `eth_getProof`-shaped result for address (and slots of its storage trie) from our own tries.

    state_trie and storage_trie are SecureTries (the storage trie of this account, if it has storage).
    """
    account = state_trie.get_account(address)
    if account is None:
        nonce, balance, storage_root, code_hash = 0, 0, EMPTY_ROOT, _ZERO_HASH
    else:
        nonce, balance, storage_root, code_hash = account
    storage = []
    for slot in slots:
        key = _slot_bytes(slot)
        if storage_trie is None:
            value, proof = 0, []
        else:
            value, proof = storage_trie.get_storage(key), storage_trie.prove(key)
        storage.append({"key": "0x" + key.hex(), "value": hex(value), "proof": ["0x" + p.hex() for p in proof]})
    return {
        "address": "0x" + bytes(address).hex(),
        "accountProof": ["0x" + p.hex() for p in state_trie.prove(address)],
        "balance": hex(balance),
        "codeHash": "0x" + code_hash.hex(),
        "nonce": hex(nonce),
        "storageHash": "0x" + storage_root.hex(),
        "storageProof": storage,
    }
