"""EIP-1186: eth_getProof responses built by our prover verify; every corrupted field is rejected."""
import copy

import pytest

from mpt import EMPTY_ROOT, ProofError, SecureTrie, keccak256
from mpt.ethereum.eip1186 import (Account, get_proof, verify_account_proof, verify_get_proof_response,
                                 verify_storage_proof)


@pytest.fixture(scope="module")
def state():
    storage_tries = {}
    state = SecureTrie()
    for i in range(1, 60):
        address = bytes([i]) * 20
        storage = SecureTrie()
        for slot in range(i % 7):
            storage.update_storage(slot, (slot + 1) * 1000 + i)
        storage_tries[address] = storage
        state.update_account(address, i, i * 10**15, storage_root=storage.hash(),
                             code_hash=keccak256(b"code %d" % i) if i % 2 else keccak256(b""))
    return state, storage_tries


def test_account_and_storage_proofs(state):
    state_trie, storage_tries = state
    root = state_trie.hash()
    address = bytes([12]) * 20
    account = verify_account_proof(root, address, state_trie.prove(address))
    assert account == Account(*state_trie.get_account(address))
    assert account.encode() == state_trie.get(address)
    storage = storage_tries[address]
    for slot in range(5):
        proof = storage.prove(slot.to_bytes(32, "big"))
        assert verify_storage_proof(account.storage_root, slot, proof) == storage.get_storage(slot)
    assert verify_storage_proof(account.storage_root, 99, storage.prove((99).to_bytes(32, "big"))) == 0
    assert verify_account_proof(root, b"\xee" * 20, state_trie.prove(b"\xee" * 20)) is None


def test_get_proof_round_trip(state):
    state_trie, storage_tries = state
    root = state_trie.hash()
    for i in (1, 6, 13, 40):
        address = bytes([i]) * 20
        response = get_proof(state_trie, address, slots=[0, 1, 2, 77], storage_trie=storage_tries[address])
        account = verify_get_proof_response(root, response)
        assert account.nonce == i


def test_absent_account(state):
    state_trie, _ = state
    response = get_proof(state_trie, b"\xab" * 20, slots=[1])
    assert verify_get_proof_response(state_trie.hash(), response) is None
    response["balance"] = "0x1"
    with pytest.raises(ProofError, match="balance"):
        verify_get_proof_response(state_trie.hash(), response)


CORRUPTIONS = {
    "nonce": lambda r: r.update(nonce=hex(int(r["nonce"], 16) + 1)),
    "balance": lambda r: r.update(balance=hex(int(r["balance"], 16) + 1)),
    "codeHash": lambda r: r.update(codeHash="0x" + "11" * 32),
    "storageHash": lambda r: r.update(storageHash="0x" + "22" * 32),
    "accountProof": lambda r: r["accountProof"].pop(),
    "accountProof byte": lambda r: r["accountProof"].__setitem__(0, r["accountProof"][0][:-2] + "00"),
    "address": lambda r: r.update(address="0x" + "33" * 20),
    "storageProof[0].value": lambda r: r["storageProof"][0].update(
        value=hex(int(r["storageProof"][0]["value"], 16) + 1)),
    "storageProof[1].key": lambda r: r["storageProof"][1].update(key="0x" + "44" * 32),
    "storageProof[0].proof": lambda r: r["storageProof"][0]["proof"].pop(),
    "storageProof[2].value absent": lambda r: r["storageProof"][2].update(value="0x5"),
    "missing field": lambda r: r.pop("storageHash"),
    "not hex": lambda r: r.update(nonce="12"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupted_fields_are_rejected(state, name):
    state_trie, storage_tries = state
    address = bytes([13]) * 20
    response = get_proof(state_trie, address, slots=[0, 1, 99], storage_trie=storage_tries[address])
    verify_get_proof_response(state_trie.hash(), response)
    bad = copy.deepcopy(response)
    CORRUPTIONS[name](bad)
    with pytest.raises(ProofError):
        verify_get_proof_response(state_trie.hash(), bad)


def test_empty_storage_trie(state):
    state_trie, storage_tries = state
    address = bytes([7]) * 20       # 7 % 7 == 0: no storage
    assert state_trie.get_account(address)[2] == EMPTY_ROOT
    response = get_proof(state_trie, address, slots=[3], storage_trie=storage_tries[address])
    assert verify_get_proof_response(state_trie.hash(), response).storage_root == EMPTY_ROOT
