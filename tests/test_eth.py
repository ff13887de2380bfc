"""mpt.eth: JSON-RPC objects -> consensus encodings -> header roots, checked against published chain data.

Every expected root and hash below is copied from public material (each fixture's "source" field names the
repository and file); none is computed with our own code. A transaction's published ``hash`` is
keccak256(consensus encoding), so each one checks encode_transaction on its own; the header roots then check
the encodings together with derive_sha.
"""
import copy
import json
import pathlib

import pytest

from mpt import EMPTY_ROOT, keccak256, rlp
from mpt.errors import FieldFormatError, ProofError
from mpt.ethereum.blocks import (
    encode_receipt,
    encode_transaction,
    encode_withdrawal,
    parse_data,
    parse_quantity,
    receipts_root,
    transactions_root,
    verify_block_roots,
    withdrawals_root,
)

BLOCKS = pathlib.Path(__file__).resolve().parent / "vectors" / "blocks"


def load(name):
    with open(BLOCKS / name) as f:
        return json.load(f)


def h(hex_string):
    return bytes.fromhex(hex_string[2:])


# Blocks with full transaction objects and their published transactionsRoot.
TX_BLOCKS = ["mainnet_2000004.json", "mainnet_14151203.json", "hive_1.json", "hive_2.json", "hive_20.json"]
# Blocks with withdrawals and their published withdrawalsRoot.
WITHDRAWAL_BLOCKS = [
    "mainnet_18000000_withdrawals.json",
    "goerli_8704005_withdrawals.json",
    "hive_1.json",
    "hive_20.json",
]
# Blocks with every receipt (eth_getBlockReceipts) and their published receiptsRoot.
RECEIPT_BLOCKS = ["hive_1.json", "hive_20.json"]
SINGLE_TXS = load("transactions.json")["transactions"]


def test_every_fixture_names_its_source():
    for path in BLOCKS.glob("*.json"):
        data = json.loads(path.read_text())
        assert data.get("source"), path.name
        for entry in data.get("transactions", []):
            if "tx" in entry:
                assert entry.get("source"), (path.name, entry["tx"]["hash"])


# ---------------------------------------------------------------------------------------------- real blocks

@pytest.mark.parametrize("name", TX_BLOCKS)
def test_transaction_hashes(name):
    for tx in load(name)["transactions"]:
        assert keccak256(encode_transaction(tx)) == h(tx["hash"]), tx["hash"]


@pytest.mark.parametrize("name", TX_BLOCKS)
def test_transactions_root(name):
    block = load(name)
    assert transactions_root(block) == h(block["transactionsRoot"])


@pytest.mark.parametrize("name", WITHDRAWAL_BLOCKS)
def test_withdrawals_root(name):
    block = load(name)
    assert withdrawals_root(block["withdrawals"]) == h(block["withdrawalsRoot"])


@pytest.mark.parametrize("name", RECEIPT_BLOCKS)
def test_receipts_root(name):
    block = load(name)
    assert receipts_root(block["receipts"]) == h(block["receiptsRoot"])


@pytest.mark.parametrize("name", TX_BLOCKS)
def test_verify_block_roots_accepts_published_blocks(name):
    block = load(name)
    verify_block_roots(block, block.get("receipts"))


def test_mainnet_block_2000004_root():
    # The block the task names: four legacy transactions, pre-EIP-155 signatures (v = 27/28).
    block = load("mainnet_2000004.json")
    assert len(block["transactions"]) == 4
    assert transactions_root(block).hex() == "681d66117e6161c01614b0c3f85b4433e5efc7672ca3b0e6ba982aee41a31e8d"


def test_mainnet_block_14151203_mixes_types():
    types = {tx["type"] for tx in load("mainnet_14151203.json")["transactions"]}
    assert types == {"0x0", "0x2"}


@pytest.mark.parametrize("entry", SINGLE_TXS, ids=lambda e: "%s-type%s" % (e["chain"].split()[0], e["tx"]["type"]))
def test_single_transaction_hashes(entry):
    tx = entry["tx"]
    assert keccak256(encode_transaction(tx)) == h(tx["hash"])


def test_single_transactions_cover_every_type_on_mainnet():
    mainnet_types = {e["tx"]["type"] for e in SINGLE_TXS if e["chain"] == "mainnet"}
    assert mainnet_types == {"0x0", "0x1", "0x2", "0x3", "0x4"}


def test_empty_lists_give_the_empty_root():
    # Published: hive blocks 1 and 2 carry "withdrawals": [] with withdrawalsRoot = the empty trie root.
    assert withdrawals_root([]) == EMPTY_ROOT == h(load("hive_2.json")["withdrawalsRoot"])
    assert transactions_root({"transactions": []}) == EMPTY_ROOT
    assert receipts_root([]) == EMPTY_ROOT


# ---------------------------------------------------------------------------------------------- verify_block_roots

def test_verify_names_transactions_root():
    block = load("mainnet_2000004.json")
    block["transactions"][1]["value"] = "0x1"
    with pytest.raises(ProofError, match="transactionsRoot"):
        verify_block_roots(block)


def test_verify_names_withdrawals_root():
    block = load("hive_20.json")
    block["withdrawals"][0]["amount"] = "0x65"
    with pytest.raises(ProofError, match="withdrawalsRoot"):
        verify_block_roots(block, block["receipts"])


def test_verify_names_receipts_root():
    block = load("hive_20.json")
    receipts = copy.deepcopy(block["receipts"])
    receipts[2]["cumulativeGasUsed"] = "0xf619"
    with pytest.raises(ProofError, match="receiptsRoot"):
        verify_block_roots(block, receipts)


def test_verify_skips_receipts_without_them():
    block = load("hive_20.json")
    block["receiptsRoot"] = "0x" + "00" * 32
    verify_block_roots(block)  # receipts not given: receiptsRoot is not checked
    with pytest.raises(ProofError, match="receiptsRoot"):
        verify_block_roots(block, block["receipts"])


def test_hash_only_block_is_rejected():
    block = load("mainnet_2000004.json")
    block["transactions"] = [tx["hash"] for tx in block["transactions"]]
    with pytest.raises(FieldFormatError, match="full transactions"):
        transactions_root(block)


def test_block_without_transactions_field():
    with pytest.raises(FieldFormatError, match="transactions"):
        transactions_root({"number": "0x1"})


# ---------------------------------------------------------------------------------------------- encode_transaction

def _tx(name, index):
    return copy.deepcopy(load(name)["transactions"][index])


def _single(tx_type, chain="mainnet"):
    for e in SINGLE_TXS:
        if e["tx"]["type"] == tx_type and e["chain"].startswith(chain):
            return copy.deepcopy(e["tx"])
    raise LookupError(tx_type)


def test_legacy_layout():
    tx = _tx("mainnet_2000004.json", 2)
    fields = rlp.decode(encode_transaction(tx))
    assert fields == [
        b"\xf7\x52",  # nonce
        h("0x04a817c800"),  # gasPrice
        h("0x03d090"),  # gas
        h(tx["to"]),
        b"",  # value 0
        h("0x667a2f58"),  # input
        b"\x1b",  # v
        h(tx["r"]),
        h(tx["s"]),
    ]


def test_legacy_without_type_field():
    tx = _tx("mainnet_2000004.json", 0)
    encoded = encode_transaction(tx)
    del tx["type"]
    assert encode_transaction(tx) == encoded


def test_contract_creation_has_empty_to():
    tx = _tx("hive_1.json", 0)
    assert tx["to"] is None
    encoded = encode_transaction(tx)
    assert rlp.decode(encoded)[3] == b""
    del tx["to"]
    assert encode_transaction(tx) == encoded


def test_eip155_v_beyond_one_byte():
    # The hive chain id 0xc72dd9d5e883e makes v = chainId*2 + 35 a 7-byte integer.
    tx = _tx("hive_1.json", 0)
    assert rlp.decode(encode_transaction(tx))[6] == h("0x18e5bb3abd10a0")


def test_r_and_s_drop_leading_zeros():
    # r of this mainnet transaction is a 31-byte integer (62 hex digits): RLP carries it without padding, so a
    # zero-padded spelling must encode the same and keep the published hash.
    tx = _tx("mainnet_14151203.json", 9)
    assert len(tx["r"]) == 2 + 62
    assert len(rlp.decode(encode_transaction(tx)[1:])[10]) == 31
    tx["r"] = "0x00" + tx["r"][2:]
    assert keccak256(encode_transaction(tx)) == h(tx["hash"])


def test_access_list_layout():
    tx = _tx("hive_2.json", 3)  # EIP-2930
    encoded = encode_transaction(tx)
    assert encoded[0] == 0x01
    fields = rlp.decode(encoded[1:])
    assert len(fields) == 11
    assert fields[7] == [[h(tx["accessList"][0]["address"]), [h(k) for k in tx["accessList"][0]["storageKeys"]]]]
    assert fields[8:] == [b"", h(tx["r"]), h(tx["s"])]


def test_dynamic_fee_layout():
    tx = _tx("hive_2.json", 2)  # EIP-1559
    fields = rlp.decode(encode_transaction(tx)[1:])
    assert len(fields) == 12
    assert fields[2] == b"\x01"  # maxPriorityFeePerGas
    assert fields[3] == h("0x2dbf1f9a")  # maxFeePerGas
    assert fields[9] == b"\x01"  # yParity


def test_blob_layout():
    tx = _single("0x3")
    fields = rlp.decode(encode_transaction(tx)[1:])
    assert len(fields) == 14
    assert fields[9] == h("0x3b9aca00")  # maxFeePerBlobGas
    assert fields[10] == [h(x) for x in tx["blobVersionedHashes"]]


def test_set_code_layout():
    tx = _single("0x4")
    fields = rlp.decode(encode_transaction(tx)[1:])
    assert len(fields) == 13
    auth = tx["authorizationList"][0]
    assert fields[9] == [[b"\x01", h(auth["address"]), b"\x07", b"", h(auth["r"]), h(auth["s"])]]


def test_y_parity_falls_back_to_v():
    for tx in (_tx("hive_2.json", 2), _single("0x3"), _single("0x4")):
        encoded = encode_transaction(tx)
        del tx["yParity"]
        assert encode_transaction(tx) == encoded


def test_authorization_v_alias():
    tx = _single("0x4")
    encoded = encode_transaction(tx)
    auth = tx["authorizationList"][0]
    auth["v"] = auth.pop("yParity")
    assert encode_transaction(tx) == encoded


def test_decoded_values_are_accepted():
    # web3.py hands back ints and bytes instead of hex strings: same encoding.
    tx = _tx("hive_2.json", 2)
    encoded = encode_transaction(tx)
    for key in ("gas", "maxFeePerGas", "maxPriorityFeePerGas", "nonce", "value", "chainId", "v", "r", "s", "yParity"):
        tx[key] = int(tx[key], 16)
    tx["input"] = h(tx["input"])
    tx["to"] = h(tx["to"])
    tx["type"] = 2
    assert encode_transaction(tx) == encoded


def test_data_and_gas_limit_aliases():
    tx = _tx("mainnet_14151203.json", 0)
    encoded = encode_transaction(tx)
    tx["data"] = tx.pop("input")
    tx["gasLimit"] = tx.pop("gas")
    assert encode_transaction(tx) == encoded


@pytest.mark.parametrize("tx_type", ["0x5", "0x7e", "0xff"])
def test_unknown_type(tx_type):
    tx = _tx("hive_2.json", 2)
    tx["type"] = tx_type
    with pytest.raises(FieldFormatError, match="type %s" % tx_type):
        encode_transaction(tx)


@pytest.mark.parametrize(
    "which, field",
    [
        (("mainnet_2000004.json", 0), "nonce"),
        (("mainnet_2000004.json", 0), "gasPrice"),
        (("mainnet_2000004.json", 0), "v"),
        (("mainnet_2000004.json", 0), "r"),
        (("mainnet_2000004.json", 0), "s"),
        (("mainnet_2000004.json", 0), "value"),
        (("mainnet_2000004.json", 0), "input"),
        (("mainnet_2000004.json", 0), "gas"),
        (("hive_2.json", 3), "chainId"),
        (("hive_2.json", 3), "accessList"),
        (("hive_2.json", 2), "maxFeePerGas"),
        (("hive_2.json", 2), "maxPriorityFeePerGas"),
        (("0x3",), "maxFeePerBlobGas"),
        (("0x3",), "blobVersionedHashes"),
        (("0x4",), "authorizationList"),
    ],
)
def test_missing_field(which, field):
    tx = _tx(*which) if len(which) == 2 else _single(which[0])
    del tx[field]
    with pytest.raises(FieldFormatError, match="missing field '%s'" % field):
        encode_transaction(tx)


def test_missing_typed_signature():
    tx = _tx("hive_2.json", 2)
    del tx["yParity"], tx["v"]
    with pytest.raises(FieldFormatError, match="yParity"):
        encode_transaction(tx)


def test_null_field_counts_as_missing():
    tx = _tx("mainnet_2000004.json", 0)
    tx["nonce"] = None
    with pytest.raises(FieldFormatError, match="nonce"):
        encode_transaction(tx)


def test_missing_authorization_field():
    tx = _single("0x4")
    del tx["authorizationList"][0]["address"]
    with pytest.raises(FieldFormatError, match=r"authorizationList\[0\].*address"):
        encode_transaction(tx)


@pytest.mark.parametrize("tx_type", ["0x3", "0x4"])
def test_blob_and_set_code_cannot_create(tx_type):
    tx = _single(tx_type)
    tx["to"] = None
    with pytest.raises(FieldFormatError, match="'to'"):
        encode_transaction(tx)


def test_bad_y_parity():
    tx = _tx("hive_2.json", 2)
    tx["yParity"] = "0x1b"
    with pytest.raises(FieldFormatError, match="yParity"):
        encode_transaction(tx)


@pytest.mark.parametrize(
    "field, value",
    [
        ("to", "0x24f21c22f0e641e2371f04a7bb8d713f89f535"),  # 19 bytes
        ("nonce", "0x10000000000000000"),  # above uint64
        ("value", "0x1" + "00" * 32),  # above uint256
        ("value", "12"),  # no 0x prefix
        ("input", "0x123"),  # odd digits
        ("gas", -1),
        ("gas", True),
    ],
)
def test_malformed_fields(field, value):
    tx = _tx("mainnet_2000004.json", 0)
    tx[field] = value
    with pytest.raises(FieldFormatError, match=r"\.%s: " % field):
        encode_transaction(tx)


def test_storage_key_length_is_checked():
    tx = _tx("hive_2.json", 3)
    tx["accessList"][0]["storageKeys"][1] = "0x01"
    with pytest.raises(FieldFormatError, match=r"storageKeys\[1\]"):
        encode_transaction(tx)


def test_non_object_transaction():
    with pytest.raises(FieldFormatError, match="hash-only"):
        encode_transaction("0x4de721391f9075bc0d5c27d09569dcba8975d78258ed527a6d287474a087bd34")


# ---------------------------------------------------------------------------------------------- encode_receipt

RECEIPTS = load("receipts.json")


def test_receipt_matches_geth_vector():
    vector = RECEIPTS["encoded"][0]
    receipt = copy.deepcopy(vector["receipt"])
    assert encode_receipt(receipt) == h(vector["encoding"])
    # Typed receipts are type || the same RLP list (geth's accessListWant is 0x01 || legacyWant).
    receipt["type"] = "0x1"
    assert encode_receipt(receipt) == b"\x01" + h(vector["encoding"])


def test_receipt_status_encoding():
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    assert rlp.decode(encode_receipt(receipt))[0] == b""  # status 0: empty string
    receipt["status"] = "0x1"
    assert rlp.decode(encode_receipt(receipt))[0] == b"\x01"
    receipt["status"] = "0x2"
    with pytest.raises(FieldFormatError, match="status"):
        encode_receipt(receipt)


def test_pre_byzantium_receipt_uses_post_state():
    receipt = RECEIPTS["pre_byzantium"]["receipt"]
    assert "status" not in receipt
    fields = rlp.decode(encode_receipt(receipt))
    assert fields[0] == h(receipt["root"])
    assert fields[1] == h("0x011a71")
    assert fields[2] == h(receipt["logsBloom"])
    log = receipt["logs"][0]
    assert fields[3] == [[h(log["address"]), [h(t) for t in log["topics"]], h(log["data"])]]


def test_empty_root_field_falls_back_to_status():
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    encoded = encode_receipt(receipt)
    receipt["root"] = "0x"
    assert encode_receipt(receipt) == encoded


def test_typed_receipt_with_log():
    receipt = RECEIPTS["blob_with_log"]["receipt"]
    encoded = encode_receipt(receipt)
    assert encoded[0] == 0x03
    fields = rlp.decode(encoded[1:])
    assert fields[0] == b"\x01"
    assert fields[3][0][1][0] == h("0x00000000000000000000000000000000000000000000000000000000656d6974")


def test_receipt_unknown_type():
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    receipt["type"] = "0x7e"
    with pytest.raises(FieldFormatError, match="type 0x7e"):
        encode_receipt(receipt)


@pytest.mark.parametrize("field", ["cumulativeGasUsed", "logsBloom", "logs", "status"])
def test_receipt_missing_field(field):
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    del receipt[field]
    with pytest.raises(FieldFormatError, match=field):
        encode_receipt(receipt)


def test_receipt_bloom_length():
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    receipt["logsBloom"] = receipt["logsBloom"][:-2]
    with pytest.raises(FieldFormatError, match="logsBloom"):
        encode_receipt(receipt)


def test_receipt_missing_log_field():
    receipt = copy.deepcopy(RECEIPTS["encoded"][0]["receipt"])
    del receipt["logs"][1]["topics"]
    with pytest.raises(FieldFormatError, match=r"logs\[1\].*topics"):
        encode_receipt(receipt)


# ---------------------------------------------------------------------------------------------- encode_withdrawal

def test_withdrawal_layout():
    w = load("hive_20.json")["withdrawals"][0]
    assert rlp.decode(encode_withdrawal(w)) == [b"\x06", b"\x05", h(w["address"]), b"\x64"]


def test_withdrawal_zero_index():
    w = {"index": "0x0", "validatorIndex": "0x0", "address": "0x" + "00" * 20, "amount": "0x0"}
    assert encode_withdrawal(w) == bytes.fromhex("d8808094") + b"\x00" * 20 + b"\x80"


@pytest.mark.parametrize("field", ["index", "validatorIndex", "address", "amount"])
def test_withdrawal_missing_field(field):
    w = dict(load("hive_20.json")["withdrawals"][0])
    del w[field]
    with pytest.raises(FieldFormatError, match=field):
        encode_withdrawal(w)


# ---------------------------------------------------------------------------------------------- hex helpers

def test_parse_quantity():
    assert parse_quantity("0x0") == 0
    assert parse_quantity("0x1b") == 27
    assert parse_quantity("0x01") == 1
    assert parse_quantity(5) == 5
    for bad in ("0x", "1b", "0xg", "", None, 1.5, True):
        with pytest.raises(FieldFormatError):
            parse_quantity(bad)
    with pytest.raises(FieldFormatError, match="64 bits"):
        parse_quantity("0x1" + "0" * 16, "nonce", 64)


def test_parse_data():
    assert parse_data("0x") == b""
    assert parse_data("0x0102") == b"\x01\x02"
    assert parse_data(b"\x01") == b"\x01"
    for bad in ("0x1", "0102", "0xzz", None, 7):
        with pytest.raises(FieldFormatError):
            parse_data(bad)
    with pytest.raises(FieldFormatError, match="20 bytes"):
        parse_data("0x01", "address", 20)


def test_errors_are_the_convention_table_s():
    """A missing field and a bad hex field of one block raise the same class (FieldFormatError); a header root
    that the block does not match is a ProofError, as every verifier's refusal."""
    block = load("mainnet_2000004.json")
    tx = copy.deepcopy(block["transactions"][0])
    del tx["nonce"]
    with pytest.raises(FieldFormatError, match="missing field 'nonce'"):
        encode_transaction(tx)
    tx = copy.deepcopy(block["transactions"][0])
    tx["nonce"] = "0xzz"
    with pytest.raises(FieldFormatError, match="nonce"):
        encode_transaction(tx)
    with pytest.raises(FieldFormatError, match="expected a JSON object"):
        encode_transaction("0x" + "00" * 32)
    block["transactions"][1]["value"] = "0x1"
    with pytest.raises(ProofError, match="transactionsRoot mismatch"):
        verify_block_roots(block)
