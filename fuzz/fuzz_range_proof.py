"""Fuzz mpt.verify_range_proof: real range proofs with tampered claims or proofs, and hostile inputs.

The first byte picks the mode:

* even: a **real** range. A trie with keys of one length is drawn from the input, then a range of it (from a
  first key, present or not, over the next entries; or the whole trie without a proof). The claimed keys and
  values may be tampered with (an entry dropped, a value changed, an entry invented) before the edge proofs
  are made, and the proof itself may be mutated. Soundness: whenever verification succeeds, the claim must be
  exactly the trie's entries from the first key through the last claimed key, and "has more" must be true
  exactly when the trie has entries beyond. Completeness: a true claim with every original proof node present
  must verify.
* odd: **hostile** bytes for every argument (root = keccak of the first proof node, or 32 fuzz bytes). Only
  a result or ProofError may come out.
"""
from mpt import keccak256, verify_range_proof
from mpt.errors import ProofError

from fuzz_support import (
    FuzzInput, InputBuilder, build_trie_from_input, draw_key, draw_value, mutate_proof, real_or_hostile, run_fuzzer,
)

MAX_LEN = 4096


def _truth(model, first, keys, whole):
    """Whether (keys, their values) is exactly the trie's range claimed, and whether entries lie beyond it."""
    ordered = sorted(model)
    if whole:
        return ordered, False
    if not keys:
        # An empty claim says the trie holds nothing from first on.
        return [k for k in ordered if k >= first], False
    covered = [k for k in ordered if first <= k <= keys[-1]]
    return covered, any(k > keys[-1] for k in ordered)


def _tamper_claim(inp: FuzzInput, keys, values, key_length):
    """Up to two edits of the claimed entries (each edit makes the claim false unless it undoes itself)."""
    keys, values = list(keys), list(values)
    for _ in range(inp.int_below(3)):
        edit = inp.int_below(4)
        if edit == 0 and keys:
            i = inp.int_below(len(keys))
            del keys[i], values[i]
        elif edit == 1 and keys:
            i = inp.int_below(len(keys))
            values[i] = draw_value(inp)
        elif edit == 2:
            # An invented entry, usually of the trie's key length (other lengths must fail the edge checks).
            fake = inp.take(key_length if inp.byte() % 4 else inp.int_below(5))
            if fake not in keys:
                keys.append(fake)
                keys.sort()
                values.insert(keys.index(fake), draw_value(inp))
        elif edit == 3 and len(keys) > 1:
            keys.pop()
            values.pop()
    return keys, values


def check_real_range(inp: FuzzInput) -> None:
    key_length = 1 + inp.int_below(3)
    trie, model = build_trie_from_input(inp, max_entries=40, key_length=key_length)
    ordered = sorted(model)
    root = trie.hash()
    whole = inp.int_below(8) == 0
    if whole:
        first, keys = b"", ordered
    else:
        first = draw_key(inp, ordered, key_length)
        after = [k for k in ordered if k >= first]
        keys = after[:inp.int_below(len(after) + 1)]
    keys, values = _tamper_claim(inp, keys, [model[k] for k in keys], key_length)
    if whole:
        proof = original = None
    else:
        original = trie.prove_many([first] + keys[-1:])
        proof = mutate_proof(original, inp, trie.prove(draw_key(inp, ordered, key_length)))

    covered, more = _truth(model, first, keys, whole)
    claim_is_true = keys == covered and values == [model[k] for k in covered]
    try:
        has_more = verify_range_proof(root, first, keys, values, proof)
    except ProofError:
        # An empty trie has no root node to send, so only the proof-less form can show it.
        complete = whole or (model and set(original) <= set(proof))
        assert not (claim_is_true and complete), "a true range claim with a complete proof was refused"
        return
    assert claim_is_true, "verify_range_proof accepted a false claim: %r -> %r from %r" % (
        list(zip(keys, values)), [(k, model[k]) for k in covered], first)
    assert has_more == more, "has_more is %r, the trie says %r" % (has_more, more)


def check_hostile_range(inp: FuzzInput) -> None:
    explicit_root = inp.take(32) if inp.flag() else None
    first = inp.chunk(8)
    keys = [inp.chunk(8) for _ in range(inp.int_below(6))]
    if inp.flag():
        keys = sorted(set(keys))                # most real callers pass sorted keys: get past that check
    values = [inp.chunk(40) for _ in keys]
    proof = None if inp.byte() % 8 == 0 else [inp.chunk(600) for _ in range(inp.int_below(8))]
    root = explicit_root if explicit_root is not None else keccak256(proof[0] if proof else b"")
    try:
        has_more = verify_range_proof(root, first, keys, values, proof)
    except ProofError:
        return
    assert has_more in (True, False)


test_one_input = real_or_hostile(check_real_range, check_hostile_range)


def hostile_input(first: bytes, keys, values, proof, root: bytes = None, sort_keys: bool = False) -> bytes:
    """Encode a hostile-mode input (seeds and regression files); proof None means no proof, root None means
    keccak(proof[0])."""
    builder = InputBuilder().byte(1).optional_raw(root).chunk(first).chunks(keys).byte(1 if sort_keys else 0)
    for value in values:
        builder.chunk(value)
    if proof is None:
        builder.byte(0)
    else:
        builder.byte(1).chunks(proof)
    return builder.build()


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
