"""Ethereum JSON-RPC objects -> consensus encodings, and the header roots built from them.

Takes the dicts a node returns for ``eth_getBlockByNumber(n, true)`` and ``eth_getBlockReceipts`` (hex strings,
as geth prints them) and produces the bytes the block header commits to:

- ``encode_transaction``: legacy ``rlp([...])`` or typed ``type || rlp([...])`` (EIP-2718), field orders as in
  geth's core/types (tx_legacy.go, tx_access_list.go, tx_dynamic_fee.go, tx_blob.go, tx_setcode.go);
- ``encode_receipt``: ``rlp([statusOrPostState, cumulativeGasUsed, logsBloom, logs])``, type-prefixed when typed;
- ``encode_withdrawal``: ``rlp([index, validatorIndex, address, amount])`` (EIP-4895);
- ``transactions_root`` / ``receipts_root`` / ``withdrawals_root``: geth's DeriveSha over those encodings, and
  ``verify_block_roots`` to check them against a block's header fields.

Parsing is strict where a lenient reading could silently produce a different encoding: fixed-size fields
(addresses, hashes, bloom) must have their exact length, quantities must fit their consensus width, and a
missing or malformed field raises :class:`mpt.errors.FieldFormatError` (a ``ValueError``) naming it, as the
strict readers of :mod:`mpt.core.jsonrpc` do for a bad hex field. Values may also be given already decoded
(``int`` for quantities, ``bytes`` for data), as web3.py returns them.
"""
from __future__ import annotations

from mpt.core import jsonrpc, rlp
from mpt.errors import FieldFormatError, ProofError
from mpt.ethereum.derive import derive_sha
# State roots live in mpt.ethereum.state; the old path mpt.eth (this module) names them too.
from mpt.ethereum.state import account_pairs, read_genesis_alloc, read_geth_dump, state_root, storage_root

__all__ = [
    "encode_receipt",
    "encode_transaction",
    "encode_withdrawal",
    "parse_data",
    "parse_quantity",
    "receipts_root",
    "transactions_root",
    "verify_block_roots",
    "withdrawals_root",
]

_UINT64 = 64
_UINT256 = 256

LEGACY_TX_TYPE = 0x00
ACCESS_LIST_TX_TYPE = 0x01
DYNAMIC_FEE_TX_TYPE = 0x02
BLOB_TX_TYPE = 0x03
SET_CODE_TX_TYPE = 0x04

_MISSING = object()


# ---------------------------------------------------------------------------------------------- hex parsing

def parse_quantity(value, field: str = "value", bits: int = _UINT256) -> int:
    """A JSON-RPC quantity ("0x0" -> 0, "0x1b" -> 27) or an int, checked to fit ``bits`` bits.

    Read by :func:`mpt.jsonrpc.parse_quantity`: leading zeros are tolerated ("0x01": some providers print them
    and the consensus encoding is the same); underscores, spaces, signs and an empty "0x" are refused.
    """
    return jsonrpc.parse_quantity(value, field, bits)


def parse_data(value, field: str = "data", size: int | None = None) -> bytes:
    """JSON-RPC data ("0x" -> b"", "0x0102" -> b"\\x01\\x02") or bytes; ``size`` demands an exact length.

    Read by :func:`mpt.jsonrpc.parse_data`: "0x" and an even number of ASCII hex digits, nothing between them."""
    return jsonrpc.parse_data(value, field, size)


def _get(obj: dict, field: str, *aliases: str, where: str):
    """obj[field] (or the first alias present); a missing or null field raises FieldFormatError naming it."""
    for name in (field,) + aliases:
        value = obj.get(name, _MISSING)
        if value is not _MISSING and value is not None:
            return value
    raise FieldFormatError("%s: missing field %r" % (where, field))


def _quantity(obj: dict, field: str, *aliases: str, where: str, bits: int = _UINT256) -> int:
    return parse_quantity(_get(obj, field, *aliases, where=where), "%s.%s" % (where, field), bits)


def _data(obj: dict, field: str, *aliases: str, where: str, size: int | None = None) -> bytes:
    return parse_data(_get(obj, field, *aliases, where=where), "%s.%s" % (where, field), size)


def _tx_type(obj: dict, where: str) -> int:
    raw = obj.get("type")
    if raw is None:
        return LEGACY_TX_TYPE  # pre-Berlin nodes print no type at all
    return parse_quantity(raw, "%s.type" % where, 8)


# ---------------------------------------------------------------------------------------------- transactions

def _to_field(tx: dict, where: str, allow_create: bool) -> bytes:
    """The recipient: 20 bytes, or empty for contract creation where the type allows it."""
    to = tx.get("to")
    if to is None or to in ("0x", b""):
        if not allow_create:
            # BlobTx and SetCodeTx have a non-pointer `To common.Address` in geth: creation is impossible.
            raise FieldFormatError("%s: missing field 'to' (this transaction type cannot create a contract)" % where)
        return b""
    return parse_data(to, where + ".to", 20)


def _list(obj: dict, field: str, where: str) -> list:
    """obj[field], which must be a JSON list."""
    items = _get(obj, field, where=where)
    if not isinstance(items, (list, tuple)):
        raise FieldFormatError("%s.%s: expected a list" % (where, field))
    return items if isinstance(items, list) else list(items)


def _objects(obj: dict, field: str, where: str, expected: str = "an object"):
    """(where it is, entry) of each entry of the list obj[field], each of which must be a JSON object (the
    error says it expected ``expected``)."""
    for i, entry in enumerate(_list(obj, field, where)):
        at = "%s.%s[%d]" % (where, field, i)
        if not isinstance(entry, dict):
            raise FieldFormatError("%s: expected %s" % (at, expected))
        yield at, entry


def _words(items: list, field: str, where: str) -> list:
    """items, the list at where.field, as 32-byte words (storage keys, log topics)."""
    return [parse_data(w, "%s.%s[%d]" % (where, field, j), 32) for j, w in enumerate(items)]


def _access_list(tx: dict, where: str) -> list:
    """accessList -> [[address, [storageKey, ...]], ...]."""
    out = []
    for at, entry in _objects(tx, "accessList", where, "an object with address and storageKeys"):
        keys = _list(entry, "storageKeys", at)
        out.append([_data(entry, "address", where=at, size=20), _words(keys, "storageKeys", at)])
    return out


def _authorization_list(tx: dict, where: str) -> list:
    """authorizationList -> [[chainId, address, nonce, yParity, r, s], ...] (SetCodeAuthorization order)."""
    out = []
    for at, auth in _objects(tx, "authorizationList", where):
        out.append([
            _quantity(auth, "chainId", where=at),
            _data(auth, "address", where=at, size=20),
            _quantity(auth, "nonce", where=at, bits=_UINT64),
            # geth's SetCodeAuthorization.V is a uint8 printed as "yParity"; older encoders print "v".
            _quantity(auth, "yParity", "v", where=at, bits=8),
            _quantity(auth, "r", where=at),
            _quantity(auth, "s", where=at),
        ])
    return out


def _y_parity(tx: dict, where: str) -> int:
    """Signature parity of a typed transaction: ``yParity``, else ``v`` (geth prints both, equal)."""
    parity = _quantity(tx, "yParity", "v", where=where)
    if parity > 1:
        raise FieldFormatError("%s.yParity: %d is not 0 or 1" % (where, parity))
    return parity


def _signature(tx: dict, where: str) -> list:
    return [_y_parity(tx, where), _quantity(tx, "r", where=where), _quantity(tx, "s", where=where)]


def _common_tail(tx: dict, where: str, allow_create: bool) -> list:
    """gas, to, value, data: the run of fields every transaction type shares, in this order."""
    return [
        _quantity(tx, "gas", "gasLimit", where=where, bits=_UINT64),
        _to_field(tx, where, allow_create),
        _quantity(tx, "value", where=where),
        _data(tx, "input", "data", where=where),
    ]


def _legacy_payload(tx: dict, where: str) -> list:
    # [nonce, gasPrice, gas, to, value, data, v, r, s]; v keeps its EIP-155 form (chainId*2+35/36) or 27/28.
    return (
        [_quantity(tx, "nonce", where=where, bits=_UINT64), _quantity(tx, "gasPrice", where=where)]
        + _common_tail(tx, where, allow_create=True)
        + [_quantity(tx, "v", where=where), _quantity(tx, "r", where=where), _quantity(tx, "s", where=where)]
    )


def _access_list_payload(tx: dict, where: str) -> list:
    # [chainId, nonce, gasPrice, gas, to, value, data, accessList, yParity, r, s]
    return (
        [
            _quantity(tx, "chainId", where=where),
            _quantity(tx, "nonce", where=where, bits=_UINT64),
            _quantity(tx, "gasPrice", where=where),
        ]
        + _common_tail(tx, where, allow_create=True)
        + [_access_list(tx, where)]
        + _signature(tx, where)
    )


def _fee_market_head(tx: dict, where: str) -> list:
    # chainId, nonce, maxPriorityFeePerGas (GasTipCap), maxFeePerGas (GasFeeCap): shared by types 2, 3 and 4.
    return [
        _quantity(tx, "chainId", where=where),
        _quantity(tx, "nonce", where=where, bits=_UINT64),
        _quantity(tx, "maxPriorityFeePerGas", where=where),
        _quantity(tx, "maxFeePerGas", where=where),
    ]


def _dynamic_fee_payload(tx: dict, where: str) -> list:
    # [chainId, nonce, tip, feeCap, gas, to, value, data, accessList, yParity, r, s]
    return (
        _fee_market_head(tx, where)
        + _common_tail(tx, where, allow_create=True)
        + [_access_list(tx, where)]
        + _signature(tx, where)
    )


def _blob_payload(tx: dict, where: str) -> list:
    # [chainId, nonce, tip, feeCap, gas, to, value, data, accessList, maxFeePerBlobGas, blobVersionedHashes,
    #  yParity, r, s]: the canonical form without the sidecar (blobs travel only on the network).
    hashes = _get(tx, "blobVersionedHashes", where=where)
    if not isinstance(hashes, (list, tuple)):
        raise FieldFormatError("%s.blobVersionedHashes: expected a list" % where)
    return (
        _fee_market_head(tx, where)
        + _common_tail(tx, where, allow_create=False)
        + [
            _access_list(tx, where),
            _quantity(tx, "maxFeePerBlobGas", where=where),
            [parse_data(h, "%s.blobVersionedHashes[%d]" % (where, i), 32) for i, h in enumerate(hashes)],
        ]
        + _signature(tx, where)
    )


def _set_code_payload(tx: dict, where: str) -> list:
    # [chainId, nonce, tip, feeCap, gas, to, value, data, accessList, authorizationList, yParity, r, s]
    return (
        _fee_market_head(tx, where)
        + _common_tail(tx, where, allow_create=False)
        + [_access_list(tx, where), _authorization_list(tx, where)]
        + _signature(tx, where)
    )


_TYPED_PAYLOADS = {
    ACCESS_LIST_TX_TYPE: _access_list_payload,
    DYNAMIC_FEE_TX_TYPE: _dynamic_fee_payload,
    BLOB_TX_TYPE: _blob_payload,
    SET_CODE_TX_TYPE: _set_code_payload,
}


def encode_transaction(tx: dict) -> bytes:
    """Consensus encoding of a JSON-RPC transaction object; keccak256 of it is the transaction hash.

    Legacy (type 0x0 or no type): ``rlp([nonce, gasPrice, gas, to, value, input, v, r, s])``.
    Typed (0x1 access list, 0x2 dynamic fee, 0x3 blob, 0x4 set code): ``type || rlp(payload)``.
    ``to`` may be null or absent for contract creation (types 0-2 only). ``input`` may be spelled ``data`` and
    ``gas`` ``gasLimit``. Raises FieldFormatError naming an unknown type or a missing/malformed field.
    """
    if not isinstance(tx, dict):
        raise FieldFormatError("transaction: expected a JSON object, got %s (a hash-only block?)" % type(tx).__name__)
    where = "transaction %s" % tx["hash"] if isinstance(tx.get("hash"), str) else "transaction"
    tx_type = _tx_type(tx, where)
    if tx_type == LEGACY_TX_TYPE:
        return rlp.encode(_legacy_payload(tx, where))
    payload = _TYPED_PAYLOADS.get(tx_type)
    if payload is None:
        raise FieldFormatError("%s: unsupported transaction type 0x%x" % (where, tx_type))
    return bytes((tx_type,)) + rlp.encode(payload(tx, where))


# ---------------------------------------------------------------------------------------------- receipts

def _status_or_post_state(receipt: dict, where: str) -> bytes:
    """First receipt field: the 32-byte post-state root before Byzantium (EIP-658), else status 1 -> 0x01, 0 -> ""."""
    root = receipt.get("root")
    # Byzantium-era nodes may print "root": "0x" next to "status"; only a 32-byte root is a post-state.
    if root is not None and root not in ("0x", b""):
        return parse_data(root, where + ".root", 32)
    status = _quantity(receipt, "status", where=where, bits=8)
    if status > 1:
        raise FieldFormatError("%s.status: %d is not 0 or 1" % (where, status))
    return b"\x01" if status else b""


def _logs(receipt: dict, where: str) -> list:
    """logs -> [[address, [topic, ...], data], ...]."""
    out = []
    for at, log in _objects(receipt, "logs", where):
        topics = _list(log, "topics", at)
        out.append([_data(log, "address", where=at, size=20), _words(topics, "topics", at),
                    _data(log, "data", where=at)])
    return out


def encode_receipt(receipt: dict) -> bytes:
    """Consensus encoding of a JSON-RPC receipt: ``[type ||] rlp([statusOrPostState, cumulativeGasUsed, bloom, logs])``.

    Legacy receipts (type 0x0 or no type) are the bare RLP list; typed ones are prefixed with the type byte.
    ``logsBloom`` is taken as given (it is not recomputed from the logs). Only the consensus fields are read:
    gasUsed, effectiveGasPrice, blob gas, addresses and hashes play no part.
    """
    if not isinstance(receipt, dict):
        raise FieldFormatError("receipt: expected a JSON object, got %s" % type(receipt).__name__)
    tx_hash = receipt.get("transactionHash")
    where = "receipt %s" % tx_hash if isinstance(tx_hash, str) else "receipt"
    tx_type = _tx_type(receipt, where)
    if tx_type != LEGACY_TX_TYPE and tx_type not in _TYPED_PAYLOADS:
        raise FieldFormatError("%s: unsupported receipt type 0x%x" % (where, tx_type))
    body = rlp.encode([
        _status_or_post_state(receipt, where),
        _quantity(receipt, "cumulativeGasUsed", where=where, bits=_UINT64),
        _data(receipt, "logsBloom", where=where, size=256),
        _logs(receipt, where),
    ])
    return body if tx_type == LEGACY_TX_TYPE else bytes((tx_type,)) + body


# ---------------------------------------------------------------------------------------------- withdrawals

def encode_withdrawal(withdrawal: dict) -> bytes:
    """Consensus encoding of an EIP-4895 withdrawal: ``rlp([index, validatorIndex, address, amount])``.

    ``amount`` is in Gwei, as the node prints it.
    """
    if not isinstance(withdrawal, dict):
        raise FieldFormatError("withdrawal: expected a JSON object, got %s" % type(withdrawal).__name__)
    index = withdrawal.get("index")
    where = "withdrawal %s" % index if isinstance(index, (str, int)) and not isinstance(index, bool) else "withdrawal"
    return rlp.encode([
        _quantity(withdrawal, "index", where=where, bits=_UINT64),
        _quantity(withdrawal, "validatorIndex", where=where, bits=_UINT64),
        _data(withdrawal, "address", where=where, size=20),
        _quantity(withdrawal, "amount", where=where, bits=_UINT64),
    ])


# ---------------------------------------------------------------------------------------------- roots

def _list_of(value, name: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise FieldFormatError("%s: expected a list, got %s" % (name, type(value).__name__))
    return list(value)


def transactions_root(block: dict) -> bytes:
    """DeriveSha over the block's transactions; they must be full objects (``eth_getBlockByNumber(n, true)``)."""
    txs = _list_of(_get(block, "transactions", where="block"), "block.transactions")
    for i, tx in enumerate(txs):
        if not isinstance(tx, dict):
            raise FieldFormatError(
                "block.transactions[%d] is %s, not a transaction object: fetch the block with full "
                "transactions (eth_getBlockByNumber(n, true))" % (i, type(tx).__name__)
            )
    return derive_sha([encode_transaction(tx) for tx in txs])


def receipts_root(receipts: list) -> bytes:
    """DeriveSha over a block's receipts in transaction order (as ``eth_getBlockReceipts`` returns them)."""
    return derive_sha([encode_receipt(r) for r in _list_of(receipts, "receipts")])


def withdrawals_root(withdrawals: list) -> bytes:
    """DeriveSha over a block's withdrawals (the header's withdrawalsRoot, Shanghai onwards)."""
    return derive_sha([encode_withdrawal(w) for w in _list_of(withdrawals, "withdrawals")])


def verify_block_roots(block: dict, receipts: list | None = None) -> None:
    """Recompute the roots a block header commits to and raise :class:`~mpt.errors.ProofError` naming the first
    that differs (FieldFormatError for a malformed block or receipt, as the encoders).

    Checks transactionsRoot always, withdrawalsRoot when the block has withdrawals (Shanghai onwards), and
    receiptsRoot when ``receipts`` is given.
    """
    checks = [("transactionsRoot", lambda: transactions_root(block))]
    if block.get("withdrawals") is not None:
        checks.append(("withdrawalsRoot", lambda: withdrawals_root(block["withdrawals"])))
    if receipts is not None:
        checks.append(("receiptsRoot", lambda: receipts_root(receipts)))
    for field, compute in checks:
        expected = _data(block, field, where="block", size=32)
        got = compute()
        if got != expected:
            raise ProofError("%s mismatch: header has 0x%s, computed 0x%s" % (field, expected.hex(), got.hex()))


__all__ += ["account_pairs", "read_genesis_alloc", "read_geth_dump", "state_root", "storage_root"]
