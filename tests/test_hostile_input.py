"""Hostile input: any bytes give a domain exception from mpt.errors or a correct answer, never a crash."""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpt import MptError, Trie, decode_node, keccak256, rlp, verify_proof, verify_range_proof
from mpt.errors import NodeDecodeError, ProofError, RLPDecodeError

FAST = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1 and b:
            del b[rng.randrange(len(b))]
        elif op == 2:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
        elif b:
            cut = rng.randrange(len(b))
            b = b[:cut]
    return bytes(b)


@FAST
@given(st.binary(max_size=300))
def test_rlp_decode_any_bytes(data):
    try:
        decoded = rlp.decode(data)
    except RLPDecodeError:
        return
    assert rlp.encode(decoded) == data  # whatever decodes is canonical


@FAST
@given(st.binary(max_size=600))
def test_decode_node_any_bytes(data):
    try:
        node = decode_node(data)
    except NodeDecodeError:
        return
    assert node.encoding() == data


def test_decode_node_mutated_real_nodes():
    rng = random.Random(1)
    t = Trie()
    for i in range(300):
        t[rng.randbytes(rng.choice([1, 3, 32]))] = rng.randbytes(rng.choice([1, 5, 40]))
    blobs = [blob for _, _, blob in t.node_iter()]
    for _ in range(5000):
        data = mutate(rng.choice(blobs), rng)
        try:
            node = decode_node(data)
        except NodeDecodeError:
            continue
        assert node.encoding() == data


def test_huge_declared_lengths_do_not_allocate():
    for header in (b"\xbb\xff\xff\xff\xff", b"\xbf" + b"\xff" * 8, b"\xfb\xff\xff\xff\xff", b"\xff" + b"\x7f" * 8):
        with pytest.raises(RLPDecodeError):
            rlp.decode(header + b"\x00" * 10)
        with pytest.raises(NodeDecodeError):
            decode_node(header + b"\x00" * 10)


def test_verify_proof_with_mutated_and_random_proofs():
    rng = random.Random(2)
    t = Trie()
    model = {}
    for _ in range(500):
        k, v = rng.randbytes(32), rng.randbytes(rng.choice([1, 30, 80]))
        t[k] = v
        model[k] = v
    root = t.hash()
    keys = list(model)
    for trial in range(1500):
        k = rng.choice(keys)
        proof = t.prove(k)
        proof = [mutate(p, rng) if rng.random() < 0.5 else p for p in proof]
        if trial % 5 == 0:
            proof.append(rng.randbytes(rng.randrange(200)))
        try:
            got = verify_proof(root, k, proof)
        except ProofError:
            continue
        assert got == model[k]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=6), st.binary(min_size=1, max_size=33))
def test_verify_proof_random_junk_never_crashes(proof, key):
    root = keccak256(proof[0]) if proof else b"\x11" * 32
    try:
        verify_proof(root, key, proof)
    except MptError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=6), st.lists(st.binary(min_size=1, max_size=4), max_size=5))
def test_verify_range_proof_random_junk_never_crashes(proof, keys):
    root = keccak256(proof[0]) if proof else b"\x11" * 32
    keys = sorted(set(keys))
    try:
        verify_range_proof(root, keys[0] if keys else b"\x00", keys, [b"v"] * len(keys), proof)
    except MptError:
        pass
