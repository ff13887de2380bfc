"""SecureTrie: secure TrieTests vectors and the account/storage helpers."""
import pytest

from mpt import EMPTY_CODE_HASH, EMPTY_ROOT, SecureTrie, keccak256, rlp
from mpt.ethereum._reference import secure_trie_root
from mpt.errors import RLPDecodeError

from conftest import from_hex_or_text, load_vector

SECURE_FILES = ["TrieTests/trietest_secureTrie.json", "TrieTests/trieanyorder_secureTrie.json",
                "TrieTests/hex_encoded_securetrie_test.json"]
CASES = [(f, name) for f in SECURE_FILES for name in sorted(load_vector(f))]


@pytest.mark.parametrize("path, name", CASES)
def test_secure_vectors(path, name):
    case = load_vector(path)[name]
    inp = case["in"]
    t = SecureTrie()
    for k, v in (inp.items() if isinstance(inp, dict) else inp):
        k, v = from_hex_or_text(k), from_hex_or_text(v)
        if v is None:
            t.delete(k)
        else:
            t.update(k, v)
    assert t.hash().hex() == case["root"][2:]


def test_keys_are_hashed():
    t = SecureTrie()
    t[b"dog"] = b"puppy"
    assert t[b"dog"] == b"puppy"
    assert t.hash() == secure_trie_root({b"dog": b"puppy"})
    copy = t.copy()
    assert isinstance(copy, SecureTrie) and copy[b"dog"] == b"puppy"


def test_accounts():
    t = SecureTrie()
    address = bytes.fromhex("a94f5374fce5edbc8e2a8697c15331677e6ebf0b")
    assert t.get_account(address) is None
    t.update_account(address, 1, 10**18)
    assert t.get_account(address) == (1, 10**18, EMPTY_ROOT, EMPTY_CODE_HASH)
    expected_value = rlp.encode([1, 10**18, EMPTY_ROOT, EMPTY_CODE_HASH])
    assert t.get(address) == expected_value
    assert t.hash() == secure_trie_root({address: expected_value})
    t.update_account(address, 0, 0, storage_root=b"\x01" * 32, code_hash=b"\x02" * 32)
    assert t.get_account(address) == (0, 0, b"\x01" * 32, b"\x02" * 32)
    t.delete_account(address)
    assert t.hash() == EMPTY_ROOT


def test_account_errors():
    t = SecureTrie()
    with pytest.raises(ValueError):
        t.update_account(b"a" * 20, -1, 0)
    with pytest.raises(ValueError):
        t.update_account(b"a" * 20, 0, -5)
    with pytest.raises(ValueError):
        t.update_account(b"a" * 20, 0, 0, storage_root=b"short")
    t.update(b"b" * 20, rlp.encode([1, 2]))
    with pytest.raises(RLPDecodeError):
        t.get_account(b"b" * 20)


def test_storage():
    t = SecureTrie()
    slot = (1).to_bytes(32, "big")
    t.update_storage(slot, 0x2A)
    assert t.get_storage(slot) == 0x2A and t.get_storage(1) == 0x2A
    # geth stores rlp(trimmed value) under keccak(slot)
    assert t.get(slot) == rlp.encode(b"\x2a")
    assert t.hash() == secure_trie_root({slot: b"\x2a"})
    t.update_storage(2, b"\x00" * 31 + b"\x07")
    assert t.get_storage(2) == 7 and t.get((2).to_bytes(32, "big")) == b"\x07"
    t.update_storage(slot, 0)
    t.update_storage(2, b"\x00" * 32)
    assert t.hash() == EMPTY_ROOT and t.get_storage(3) == 0
    with pytest.raises(ValueError):
        t.update_storage(1, 1 << 256)
    with pytest.raises(ValueError):
        t.update_storage(1, b"\x01" * 33)
    assert keccak256(slot) != slot
