"""mpt.jsonrpc: one strict reading of JSON hex, decimal and base64 fields, and every entry point that uses it.

int(), bytes.fromhex() and base64.b64decode() take underscores, spaces, signs, non-ASCII digits and stray base64
bits; the same bad spelling must be refused with the same message by mpt.eth, mpt.eip1186, mpt.ethstate,
``python -m mpt root`` and mpt.merkle's RPC JSON."""
import base64
import json
import re

import pytest

from mpt import SecureTrie, merkle
from mpt.ethereum import blocks as eth
from mpt.ethereum.eip1186 import get_proof, verify_get_proof_response
from mpt.errors import FieldFormatError, InputFormatError, ProofError
from mpt.ethereum.state import read_genesis_alloc, state_root
from mpt.core.jsonrpc import parse_base64, parse_data, parse_decimal, parse_number, parse_quantity

# ------------------------------------------------------------------------------------------------ the parsers


@pytest.mark.parametrize("text, n", [("0x0", 0), ("0x1b", 27), ("0X1B", 27), ("0x01", 1),
                                     ("0x" + "f" * 64, 2**256 - 1)])
def test_quantity_accepts(text, n):
    assert parse_quantity(text) == n


@pytest.mark.parametrize("text", ["0x", "1b", "0x1_0", "0x 1", "0x1 ", " 0x1", "+0x1", "-0x1", "0x\uff11", "0x1g",
                                  "0x\u0661"])
def test_quantity_refuses(text):
    with pytest.raises(FieldFormatError, match=r"^nonce: .* is not a 0x-prefixed hex quantity$"):
        parse_quantity(text, "nonce")


def test_quantity_bounds_before_converting():
    assert parse_quantity("0x" + "0" * 100_000 + "1", "n", 64) == 1           # leading zeros only: fine
    with pytest.raises(FieldFormatError, match=r"^balance: '0xfff+\.\.\. is out of range \(above 256 bits\)$"):
        parse_quantity("0x" + "f" * 1_000_000, "balance")
    with pytest.raises(FieldFormatError, match=r"^nonce: 18446744073709551616 is out of range \(above 64 bits\)$"):
        parse_quantity(2**64, "nonce", 64)
    with pytest.raises(FieldFormatError, match=r"^x: a 20001-bit number is out of range"):
        parse_quantity(2**20000, "x")
    for not_a_quantity in (True, None, 1.5, b"\x01"):
        with pytest.raises(FieldFormatError, match=r"^x: expected a hex quantity, got "):
            parse_quantity(not_a_quantity, "x")
    with pytest.raises(FieldFormatError, match=r"^x: 5 is not a 0x-prefixed hex quantity$"):
        parse_quantity(5, "x", decoded=False)      # JSON-RPC answers: a JSON number is no quantity


@pytest.mark.parametrize("text, n", [("0", 0), ("27", 27), ("9223372036854775807", 2**63 - 1)])
def test_decimal_accepts_canonical(text, n):
    assert parse_decimal(text, "total") == n


@pytest.mark.parametrize("text", ["027", "00", "+27", "-27", " 27", "27 ", "2_7", "\u0663", "1e3", "0x1b", "", "-0"])
def test_decimal_refuses_non_canonical(text):
    with pytest.raises(FieldFormatError, match=r"^total: .* is not a canonical decimal number$"):
        parse_decimal(text, "total")


def test_decimal_signed_and_ranges():
    assert parse_decimal("-27", "x", signed=True) == -27
    with pytest.raises(FieldFormatError, match="not a canonical decimal"):
        parse_decimal("-0", "x", signed=True)
    with pytest.raises(FieldFormatError, match=r"^total: '1000000000000000000000000000000' is out of range"):
        parse_decimal("1" + "0" * 30, "total")
    with pytest.raises(FieldFormatError, match=r"^total: 9223372036854775808 is out of range \(above 63 bits\)$"):
        parse_decimal("9223372036854775808", "total")
    with pytest.raises(FieldFormatError, match="out of range"):
        parse_decimal("9" * 5000, "total")
    with pytest.raises(FieldFormatError, match=r"^x: -5 is negative$"):
        parse_decimal(-5, "x")


def test_number_is_hex_or_decimal():
    assert parse_number("0x10") == parse_number("16") == parse_number(16) == 16
    with pytest.raises(FieldFormatError, match=r"^b: 'ten' is neither a 0x-prefixed hex quantity nor a canonical"):
        parse_number("ten", "b")


@pytest.mark.parametrize("kwargs, text, out", [
    ({}, "0x", b""), ({}, "0x0102", b"\x01\x02"), ({"pad_odd": True}, "0x102", b"\x01\x02"),
    ({"prefix": None}, "0102", b"\x01\x02"), ({"prefix": None}, "0x0102", b"\x01\x02"),
    ({"prefix": False}, "AB01", b"\xab\x01"), ({}, b"\x01", b"\x01"), ({}, bytearray(b"\x01"), b"\x01"),
])
def test_data_accepts(kwargs, text, out):
    assert parse_data(text, **kwargs) == out


@pytest.mark.parametrize("kwargs, text, message", [
    ({}, "0x01 02", "'0x01 02' is not 0x-prefixed hex data"),
    ({}, "0x0_1", "'0x0_1' is not 0x-prefixed hex data"),
    ({}, "0102", "'0102' is not 0x-prefixed hex data"),
    ({}, "0x1", "'0x1' has an odd number of hex digits"),
    ({"prefix": False}, "0x01", "'0x01' is not hex data"),
    ({"prefix": None}, " 01", "' 01' is not hex data"),
    ({}, 7, "expected hex data, got int"),
    ({"decoded": False}, b"\x01", "expected hex data, got bytes"),
    ({"size": 20}, "0x01", "expected 20 bytes, got 1"),
])
def test_data_refuses(kwargs, text, message):
    with pytest.raises(FieldFormatError, match="^address: " + re.escape(message) + "$"):
        parse_data(text, "address", **kwargs)


def test_base64_is_canonical_and_padded():
    for raw in (b"", b"\x00", b"\x00\x01", b"\x00\x01\x02", bytes(range(256))):
        assert parse_base64(base64.b64encode(raw).decode()) == raw
    for bad, why in (("AB==", "is not canonical base64"), ("AAF=", "is not canonical base64"),
                     ("AAE", "is not padded base64"), ("AA-_", "is not padded base64"),
                     (" AAAA", "is not padded base64"), ("AAAA\n", "is not padded base64"),
                     ("AA==AA==", "is not padded base64")):
        with pytest.raises(FieldFormatError, match="^leaf_hash: .* " + why):
            parse_base64(bad, "leaf_hash")
    with pytest.raises(FieldFormatError, match="expected 32 bytes, got 3"):
        parse_base64("AAAA", "h", 32)


def test_the_caller_chooses_the_exception():
    with pytest.raises(ProofError, match=r"^nonce: '0x1_0' is not a 0x-prefixed hex quantity$"):
        parse_quantity("0x1_0", "nonce", error=ProofError)
    with pytest.raises(InputFormatError) as info:
        parse_data("zz", "line 3: key", prefix=None, error=lambda m: InputFormatError(m, line=3))
    assert info.value.line == 3


# ------------------------------------------------------------------------------------------------ every entry point

QUANTITY = "'0x1_0' is not a 0x-prefixed hex quantity"


def test_eth_reads_quantities_and_data_strictly():
    with pytest.raises(ValueError, match="^nonce: " + re.escape(QUANTITY) + "$"):
        eth.parse_quantity("0x1_0", "nonce")
    with pytest.raises(ValueError, match=r"^data: '0x01 02 03' is not 0x-prefixed hex data$"):
        eth.parse_data("0x01 02 03")
    tx = {"type": "0x0", "nonce": "0x1_0", "gasPrice": "0x1", "gas": "0x5208", "to": "0x" + "11" * 20,
          "value": "0x0", "input": "0x", "v": "0x1b", "r": "0x1", "s": "0x1"}
    with pytest.raises(ValueError, match=re.escape(QUANTITY)):
        eth.encode_transaction(tx)


def test_eip1186_reads_strictly_with_proof_error():
    state = SecureTrie()
    state.update_account(b"\x05" * 20, 3, 10)
    response = get_proof(state, b"\x05" * 20)
    assert verify_get_proof_response(state.hash(), response).nonce == 3
    for field, value, message in (("nonce", "0x1_0", "nonce: " + QUANTITY),
                                  ("nonce", "0x", "nonce: '0x' is not a 0x-prefixed hex quantity"),
                                  ("codeHash", "0x" + "00" * 31 + " 0", "codeHash: '0x"),
                                  ("balance", "0x" + "f" * 5000, "balance: '0xfff")):
        bad = dict(response, **{field: value})
        with pytest.raises(ProofError, match="^" + re.escape(message)):
            verify_get_proof_response(state.hash(), bad)


def test_ethstate_reads_strictly_with_input_format_error():
    alloc = {"alloc": {"11" * 20: {"nonce": "0x1_0"}}}
    with pytest.raises(InputFormatError, match=r": nonce: " + re.escape(QUANTITY) + "$"):
        state_root(read_genesis_alloc(json.dumps(alloc).encode()))
    with pytest.raises(InputFormatError, match=r"balance: '\+5' is neither"):
        state_root([{"address": b"\x11" * 20, "balance": "+5"}])


def test_root_cli_reads_strictly(tmp_path, capsys):
    from mpt.__main__ import main

    path = tmp_path / "pairs.jsonl"
    path.write_text('{"key": "0x01 02", "value": "0x01"}\n')
    assert main(["root", str(path), "--format", "pairs-jsonl"]) == 2
    assert "line 1: key: '0x01 02' is not hex data" in capsys.readouterr().err


def _proof_json():
    return merkle.proofs([b"tx1", b"tx2", b"tx3"])[1][1].to_json()


@pytest.mark.parametrize("field, value, message", [
    # CometBFT's int64 rule (libs/json: what Go's encoding/json parses as an int64), checked in merkle.pyx.
    ("total", "03", "proof total must be a decimal string (digits, no leading zero or plus sign), got '03'"),
    ("total", "+3", "proof total must be a decimal string (digits, no leading zero or plus sign), got '+3'"),
    ("total", "3_0", "proof total must be a decimal string (digits, no leading zero or plus sign), got '3_0'"),
    ("total", "1" + "0" * 30, "proof total 1000000000000000000000000000000 is out of range for an int64"),
    ("leaf_hash", "not base64!", "leaf_hash: 'not base64!' is not padded base64"),
])
def test_merkle_proof_json_reads_strictly(field, value, message):
    j = _proof_json()
    assert merkle.Proof.from_json(j).total == 3
    j[field] = value
    with pytest.raises(ProofError, match="^" + re.escape(message) + "$"):
        merkle.Proof.from_json(j)


def test_merkle_proof_json_refuses_stray_base64_bits():
    j = _proof_json()
    raw = base64.b64decode(j["leaf_hash"])
    assert len(raw) == 32 and j["leaf_hash"].endswith("=")
    last = j["leaf_hash"][-2]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    j["leaf_hash"] = j["leaf_hash"][:-2] + alphabet[alphabet.index(last) ^ 1] + "="   # same bytes, one stray bit
    assert base64.b64decode(j["leaf_hash"]) == raw
    with pytest.raises(ProofError, match="is not canonical base64"):
        merkle.Proof.from_json(j)


def test_merkle_tx_proof_reads_hex_strictly():
    answer = merkle.tx_proof([b"tx1", b"tx2"], 1)
    assert merkle.verify_tx_proof(answer) is True
    bad = dict(answer, root_hash=answer["root_hash"][:2] + " " + answer["root_hash"][3:])
    with pytest.raises(ProofError, match=r"^root_hash: '.*' is not hex data$"):
        merkle.verify_tx_proof(bad)
    with pytest.raises(ProofError, match=r"^data_hash: '0xAB' is not hex data$"):
        merkle.verify_tx_proof(answer, data_hash="0xAB")
