"""mpt.eth.state_root, the genesis alloc and geth dump readers, and `python -m mpt root`."""
import gzip
import json
import pathlib

import pytest

from mpt import EMPTY_CODE_HASH, EMPTY_ROOT, Trie, keccak256, rlp
from mpt.__main__ import main
from mpt.errors import InputFormatError, MptError
from mpt.ethereum.blocks import read_genesis_alloc, read_geth_dump, state_root, storage_root

VECTORS = pathlib.Path(__file__).resolve().parent / "vectors"
MAINNET_GENESIS_ROOT = bytes.fromhex("d7f8974fb5ac78d9ac099b9ad5018bedc2ce0a72dad1827a1709da30580f0544")


def _genesis_file(tmp_path):
    path = tmp_path / "genesis.json"
    path.write_bytes(gzip.decompress((VECTORS / "mainnet_genesis_alloc.json.gz").read_bytes()))
    return path


def test_mainnet_genesis_alloc(tmp_path):
    path = _genesis_file(tmp_path)
    assert state_root(read_genesis_alloc(str(path))) == MAINNET_GENESIS_ROOT
    assert state_root(read_genesis_alloc(str(path)), workers=1) == MAINNET_GENESIS_ROOT


def _reference_state(accounts):
    """Account trie root through plain Tries (storage tries included)."""
    t = Trie()
    for a in accounts:
        s = Trie()
        for slot, value in a.get("storage", {}).items():
            if value:
                s.update(keccak256(slot.to_bytes(32, "big")), rlp.encode(value))
        code_hash = keccak256(a["code"]) if "code" in a else EMPTY_CODE_HASH
        t.update(keccak256(a["address"]), rlp.encode([a["nonce"], a["balance"], s.hash(), code_hash]))
    return t.hash()


def _accounts(n=300):
    out = []
    for i in range(n):
        a = {"address": keccak256(b"addr%d" % i)[:20], "nonce": i % 7, "balance": i * 10 ** 18}
        if i % 3 == 0:
            a["storage"] = {j: (j * 31 + i) % 5 for j in range(i % 150)}     # zeros are absent slots
        if i % 5 == 0:
            a["code"] = b"\x60\x00" * (i % 9 + 1)
        out.append(a)
    return out


def test_state_root_with_storage_tries():
    accounts = _accounts()
    want = _reference_state(accounts)
    assert state_root(accounts) == want
    assert state_root(iter(accounts), workers=1) == want
    assert state_root([]) == EMPTY_ROOT


def test_storage_forms():
    # Slots and values as ints, bytes and hex (geth alloc style: 0x-hex words), zero values absent.
    a = storage_root({1: 5, 2: 0})
    assert storage_root({"0x01": "0x05", "0x" + "00" * 31 + "02": "0x00"}) == a
    assert storage_root({(1).to_bytes(32, "big"): b"\x05"}) == a
    assert storage_root({}) == EMPTY_ROOT


def test_alloc_as_dict_and_hex_forms():
    alloc = {"alloc": {
        "0x" + "11" * 20: {"balance": "0x10", "nonce": "0x1", "code": "0x6000", "storage": {"0x01": "0x02"}},
        "22" * 20: {"balance": "1000000000000000000000"},
    }}
    want = _reference_state([
        {"address": bytes.fromhex("11" * 20), "nonce": 1, "balance": 16, "code": b"\x60\x00", "storage": {1: 2}},
        {"address": bytes.fromhex("22" * 20), "nonce": 0, "balance": 10 ** 21},
    ])
    assert state_root(read_genesis_alloc(alloc)) == want
    assert state_root(read_genesis_alloc(json.dumps(alloc).encode())) == want


@pytest.mark.parametrize("alloc, message", [
    ({"alloc": {"0x11": {"balance": "1"}}}, r"alloc\[0x11\]: address: expected 20 bytes"),
    ({"alloc": {"11" * 20: {"balance": "ten"}}}, "balance: 'ten' is neither"),
    ({"alloc": {"11" * 20: {"balance": "-1"}}}, "balance: '-1' is neither a 0x-prefixed hex quantity nor a "
                                                 "canonical decimal number"),
    ({"alloc": {"11" * 20: {"balance": "0x1_0"}}}, "balance: '0x1_0' is not a 0x-prefixed hex quantity"),
    ({"alloc": {"11" * 20: {"balance": " 10"}}}, "balance: ' 10' is neither"),
    ({"alloc": {"11" * 20: {"balance": "010"}}}, "balance: '010' is neither"),
    ({"alloc": {"11" * 20: {"balance": "0x" + "f" * 65}}}, "balance: .* is out of range"),
    ({"alloc": {"11" * 20: {"code": "0x60 00"}}}, "code: '0x60 00' is not hex data"),
    ({"alloc": {"11" * 20: {"nonce": 2 ** 64}}}, "nonce: .* out of range"),
    ({"alloc": {"11" * 20: {"storage": {"0xzz": "0x01"}}}}, "storage slot"),
    ({"alloc": {"11" * 20: {"storage": [1]}}}, "storage: expected an object"),
    ({"alloc": {"11" * 20: 5}}, "expected an object"),
    ({"alloc": []}, "alloc must be an object"),
])
def test_bad_alloc(alloc, message):
    with pytest.raises(InputFormatError, match=message):
        state_root(read_genesis_alloc(alloc))


def test_bad_genesis_json_names_the_line():
    with pytest.raises(InputFormatError, match="line 2"):
        list(read_genesis_alloc(b'{"alloc": {\n  "11": ,\n}}'))
    assert issubclass(InputFormatError, MptError) and issubclass(InputFormatError, ValueError)


def _dump_lines(accounts, root, with_address=True):
    lines = [json.dumps({"root": "0x" + root.hex()})]
    for a in accounts:
        s = storage_root(a.get("storage", {}))
        code_hash = keccak256(a["code"]) if "code" in a else EMPTY_CODE_HASH
        line = {"balance": str(a["balance"]), "nonce": a["nonce"], "root": "0x" + s.hex(),
                "codeHash": "0x" + code_hash.hex(), "key": "0x" + keccak256(a["address"]).hex()}
        if with_address:
            line["address"] = "0x" + a["address"].hex()
        lines.append(json.dumps(line))
    return "\n".join(lines) + "\n"


def test_geth_dump_jsonl(tmp_path):
    accounts = _accounts(50)
    want = _reference_state(accounts)
    path = tmp_path / "dump.jsonl"
    path.write_text(_dump_lines(accounts, want, with_address=False))
    reader = read_geth_dump(str(path))
    assert state_root(reader) == want
    assert reader.root == want
    # geth's single-object dump
    whole = {"root": want.hex(), "accounts": {}}
    for line in _dump_lines(accounts, want).splitlines()[1:]:
        obj = json.loads(line)
        whole["accounts"][obj.pop("address")] = obj
    path2 = tmp_path / "dump.json"
    path2.write_text(json.dumps(whole, indent=4))
    assert state_root(read_geth_dump(str(path2))) == want


def test_geth_dump_errors_name_the_line(tmp_path):
    path = tmp_path / "dump.jsonl"
    path.write_text('{"root": "0x' + "00" * 32 + '"}\n{"balance": "1", "nonce": 0, "key": "0x12"}\n')
    with pytest.raises(InputFormatError, match="line 2: key: expected 32 bytes"):
        state_root(read_geth_dump(str(path)))
    path.write_text('{"root": "0x' + "00" * 32 + '"}\n\n{"balance": 1,\n')
    with pytest.raises(InputFormatError, match="line 3: not JSON"):
        state_root(read_geth_dump(str(path)))


def test_cli_root(tmp_path, capsys):
    assert main(["root", str(_genesis_file(tmp_path)), "--format", "alloc", "--workers", "2"]) == 0
    assert capsys.readouterr().out.strip() == "0x" + MAINNET_GENESIS_ROOT.hex()

    accounts = _accounts(30)
    want = _reference_state(accounts)
    dump = tmp_path / "dump.jsonl"
    dump.write_text(_dump_lines(accounts, want))
    assert main(["root", str(dump), "--format", "geth-dump"]) == 0
    assert capsys.readouterr().out.strip() == "0x" + want.hex()
    dump.write_text(_dump_lines(accounts, b"\x01" * 32))                 # a dump recording another root
    assert main(["root", str(dump), "--format", "geth-dump"]) == 1
    assert "differs" in capsys.readouterr().err

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"key": "0x01", "value": "0x02"}\n["0x03", "0x04"]\n\n{"key": "0x01", "value": "0x"}\n')
    t = Trie()
    t.update(b"\x03", b"\x04")
    assert main(["root", str(pairs), "--format", "pairs-jsonl", "--spill-dir", str(tmp_path),
                 "--memory-limit", "1K"]) == 0
    assert capsys.readouterr().out.strip() == "0x" + t.hash().hex()


@pytest.mark.parametrize("content, message", [
    ('{"key": "0x01", "value": "0x02"}\n{"key": "0x0g", "value": "0x"}\n', "line 2: key: '0x0g' is not hex data"),
    ('{"key": "0x01", "value": "0x0_2"}\n', "line 1: value: '0x0_2' is not hex data"),
    ('{"key": "0x01", "value": "0x0 2"}\n', "line 1: value: '0x0 2' is not hex data"),
    ('{"key": "0x1", "value": "0x02"}\n', "line 1: key: '0x1' has an odd number of hex digits"),
    ('{"key": "0x01"}\n', "line 1: expected an object with"),
    ('[1, 2]\n', "line 1: key: expected hex data, got int"),
    ('{"key": \n', "line 1: not JSON"),
])
def test_cli_errors_name_the_line(tmp_path, capsys, content, message):
    path = tmp_path / "pairs.jsonl"
    path.write_text(content)
    assert main(["root", str(path), "--format", "pairs-jsonl"]) == 2
    assert message in capsys.readouterr().err


def test_cli_usage_errors(tmp_path, capsys):
    assert main(["root", str(tmp_path / "missing"), "--format", "alloc"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["root", "-", "--format", "parquet"]) == 2
    with pytest.raises(SystemExit):
        main(["root", "x", "--format", "csv"])


def test_cli_parquet(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    keys = [keccak256(bytes([i])) for i in range(200)]
    values = [b"v%d" % i for i in range(200)]
    pq.write_table(pa.table({"key": keys, "value": values}), tmp_path / "pairs.parquet")
    t = Trie()
    for k, v in zip(keys, values):
        t.update(k, v)
    assert main(["root", str(tmp_path / "pairs.parquet"), "--format", "parquet"]) == 0
    assert capsys.readouterr().out.strip() == "0x" + t.hash().hex()
    pq.write_table(pa.table({"k": keys, "value": values}), tmp_path / "bad.parquet")
    assert main(["root", str(tmp_path / "bad.parquet"), "--format", "parquet"]) == 2
    assert "no column 'key'" in capsys.readouterr().err
    pq.write_table(pa.table({"key": list(range(3)), "value": values[:3]}), tmp_path / "ints.parquet")
    assert main(["root", str(tmp_path / "ints.parquet"), "--format", "parquet"]) == 2
    assert "parquet row 0: column key must be binary" in capsys.readouterr().err
