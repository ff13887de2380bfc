"""Fuzz mpt.verify_proof: hostile proofs, and real proofs with fuzz-chosen corruptions.

The first byte picks the mode:

* even: a **real** proof. A small trie is drawn from the input, a key (present or not) is proven, and the proof
  is mutated (corrupted, cut, reordered, padded with junk or with other nodes of the same trie). The ground
  truth is the trie itself: verify_proof must return exactly the trie's answer or raise ProofError, and must
  return the answer whenever every node of the original proof is still there.
* odd: a **hostile** proof: the root is the keccak of the first node (or 32 fuzz bytes), the key and nodes are
  raw fuzz bytes. The answer must agree with fuzz_support.reference_verify_proof, a pure-Python verifier.
"""
from mpt import keccak256, verify_proof
from mpt.errors import ProofError

from fuzz_support import (
    FuzzInput, InputBuilder, answers, build_trie_from_input, draw_key, mutate_proof, real_or_hostile,
    reference_verify_proof, run_fuzzer,
)

MAX_LEN = 4096


def check_real_proof(inp: FuzzInput) -> None:
    trie, model = build_trie_from_input(inp)
    keys = sorted(model)
    key = draw_key(inp, keys)
    root = trie.hash()
    proof = trie.prove(key)
    spare = trie.prove(draw_key(inp, keys))     # nodes of a neighbouring path, valid but beside the point
    mutated = mutate_proof(proof, inp, spare)
    as_dict = inp.flag()
    offered = {keccak256(blob) if inp.flag() else i.to_bytes(4, "big"): blob for i, blob in enumerate(mutated)} \
        if as_dict else mutated
    try:
        got = verify_proof(root, key, offered)
    except ProofError:
        assert not set(proof) <= set(mutated), "a proof holding every original node was refused"
        return
    assert got == model.get(key), "verify_proof proved %r for %r; the trie holds %r" % (got, key, model.get(key))


def check_hostile_proof(inp: FuzzInput) -> None:
    explicit_root = inp.take(32) if inp.flag() else None
    key = inp.chunk(40)
    proof = [inp.chunk(600) for _ in range(inp.int_below(8))]
    root = explicit_root if explicit_root is not None else keccak256(proof[0] if proof else b"")
    got, want = answers(lambda: verify_proof(root, key, proof), ProofError,
                        lambda: reference_verify_proof(root, key, proof, keccak256))
    assert got == want, "verify_proof gives %r, the reference %r" % (got, want)


test_one_input = real_or_hostile(check_real_proof, check_hostile_proof)


def hostile_input(key: bytes, proof, root: bytes = None) -> bytes:
    """Encode a hostile-mode input (for seeds and regression files): root defaults to keccak(proof[0])."""
    return InputBuilder().byte(1).optional_raw(root).chunk(key).chunks(proof).build()


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
