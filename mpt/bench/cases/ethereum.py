"""Ethereum Merkle Patricia Trie cases (mpt.Trie, StackTrie, proofs): go-ethereum's trie benchmarks on its data.

Names follow go-ethereum's benchmarks (the table of docs/benchmarks.rst), so our numbers line up with geth's;
``Insert/N`` adds what a Python user pays to build a trie (N ``update`` calls, then ``hash``) and
``HashTwoTries`` what two Python threads hashing at once gain. Workloads come from :mod:`mpt.bench.workloads`.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import List, Sequence, Tuple

from mpt.bench.registry import Case, CheckFailed, cycled, expect
from mpt.bench.workloads import (
    ACCOUNT_ROOTS,
    ACCOUNT_SIZES,
    GENTXS200_ROOT,
    INSERT_100K_ROOT,
    gentxs200,
    hashed_accounts,
    insert_100k_items,
    sorted_random_trie_items,
)

_PROOF_BATCH = 256          # proofs per op call, cycling over random_trie(100)'s 210 keys
_RANGE_TRIE_SIZE = 8192
_RANGE_START = 2


def filled_trie(keys: Sequence[bytes], values: Sequence[bytes]):
    """A fresh, unhashed Trie holding keys -> values, inserted in the order given."""
    from mpt import Trie

    t = Trie()
    for k, v in zip(keys, values):
        t.update(k, v)
    return t


@lru_cache(maxsize=None)
def _random_trie(n: int):
    """The hashed Trie over random_trie_items(n) and its sorted entries. Shared: proofs never change it."""
    entries = sorted_random_trie_items(n)
    t = filled_trie([k for k, _ in entries], [v for _, v in entries])
    t.hash()
    return t, entries


@lru_cache(maxsize=None)
def _insert_100k() -> Tuple[Tuple[bytes, bytes], ...]:
    return tuple(insert_100k_items())


def hashed_blobs(t) -> List[bytes]:
    """The node encodings hash() keccaks for t: every node with a hash (the root included), via a copy."""
    return [blob for _path, node_hash, blob in t.copy().node_iter() if node_hash is not None]


def _hash_fixed_size(label: str, n: int) -> Case:
    def setup():
        return filled_trie(*hashed_accounts(n))

    def op(t):
        return t.hash()

    def check(t):
        expect("HashFixedSize/%s root" % label, op(t), ACCOUNT_ROOTS[n])

    return Case(
        name="HashFixedSize/" + label, group="HashFixedSize", size=n, setup=setup, op=op, check=check,
        stateful=True, small=n < 100000, keccak_blobs=hashed_blobs,
        doc="hash() of a fresh trie holding make_accounts(%d)" % n,
    )


def _hash_two_tries(label: str, n: int, mode: str) -> Case:
    """Two Python threads hashing two different tries at once ("threads") against one after the other
    ("serial"): hash() runs its whole pass without the GIL, so the threads overlap."""
    def setup():
        return filled_trie(*hashed_accounts(n)), filled_trie(*hashed_accounts(n))

    def op(pair):
        a, b = pair
        if mode == "serial":
            return a.hash(), b.hash()
        out = [None]

        def other():
            out[0] = b.hash()

        t = threading.Thread(target=other)
        t.start()
        first = a.hash()
        t.join()
        return first, out[0]

    def check(pair):
        roots = op(pair)
        expect("HashTwoTries/%s/%s roots" % (label, mode), roots, (ACCOUNT_ROOTS[n], ACCOUNT_ROOTS[n]))

    return Case(
        name="HashTwoTries/%s/%s" % (label, mode), group="HashTwoTries", size=n, setup=setup, op=op, check=check,
        stateful=True, small=n < 100000,
        doc="hash() of two fresh tries holding make_accounts(%d), %s" % (
            n, "one after the other" if mode == "serial" else "in two Python threads at once"),
    )


def _commit_after_hash(label: str, n: int) -> Case:
    def setup():
        t = filled_trie(*hashed_accounts(n))
        t.hash()
        return t

    def op(t):
        return t.commit()

    def check(t):
        root = op(t)
        expect("CommitAfterHashFixedSize/%s root" % label, root, ACCOUNT_ROOTS[n])
        if t.database.get(root) is None:
            raise CheckFailed("commit() did not write the root node to the database")

    return Case(
        name="CommitAfterHashFixedSize/" + label, group="CommitAfterHashFixedSize", size=n, setup=setup, op=op,
        check=check, stateful=True, small=n < 100000,
        doc="commit() into a MemoryDB of a hashed trie holding make_accounts(%d)" % n,
    )


def _derive_sha(variant: str) -> Case:
    def setup():
        from mpt import StackTrie

        return gentxs200(), (StackTrie() if variant == "stack_trie" else None)

    if variant == "std_trie":
        def op(state):
            from mpt import derive_sha_trie

            return derive_sha_trie(state[0])
    else:
        def op(state):
            from mpt import derive_sha

            return derive_sha(state[0], "orig", stack_trie=state[1])

    def check(state):
        expect("DeriveSha200/%s root" % variant, op(state), GENTXS200_ROOT)

    return Case(
        name="DeriveSha200/" + variant, group="DeriveSha200/" + variant, size=200, setup=setup, op=op,
        check=check, doc="derive_sha over gentxs(200) with a %s" % ("plain Trie" if variant == "std_trie"
                                                                    else "reused StackTrie"),
    )


def _insert_100k_case() -> Case:
    def setup():
        return _insert_100k()

    def op(items):
        from mpt import StackTrie

        st = StackTrie()                        # geth makes a new StackTrie per iteration
        for k, v in items:
            st.update(k, v)
        return st.hash()

    def check(items):
        expect("Insert100K root", op(items), INSERT_100K_ROOT)

    return Case(
        name="Insert100K", group="Insert100K", size=100000, setup=setup, op=op, check=check, small=False,
        doc="StackTrie: 100,000 ordered updates (key j*1024, 20 zero bytes) and the root",
    )


def _insert(label: str, n: int) -> Case:
    def setup():
        return hashed_accounts(n)

    def op(state):
        from mpt import Trie

        keys, values = state
        t = Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        return t.hash()

    def check(state):
        expect("Insert/%s root" % label, op(state), ACCOUNT_ROOTS[n])

    return Case(
        name="Insert/" + label, group="Insert", size=n, setup=setup, op=op, check=check, small=n < 100000,
        doc="Trie(), update() of make_accounts(%d), hash(): what a Python user pays" % n,
    )


def _prove() -> Case:
    def setup():
        t, entries = _random_trie(100)
        return t, cycled([k for k, _ in entries], _PROOF_BATCH), dict(entries)

    def op(state):
        t, keys, _ = state
        out = None
        for k in keys:
            out = t.prove(k)
        return out

    def check(state):
        from mpt import verify_proof

        t, keys, values = state
        root = t.hash()
        for k in keys:
            expect("Prove: value proven for %s" % k.hex(), verify_proof(root, k, t.prove(k)), values[k])

    return Case(
        name="Prove", group="Prove", size=100, setup=setup, op=op, check=check, ops_per_sample=_PROOF_BATCH,
        doc="prove(key) on random_trie(100), cycling over its keys",
    )


def _verify_proof() -> Case:
    def setup():
        t, entries = _random_trie(100)
        pairs = [(k, t.prove(k)) for k, _ in entries]
        return t.hash(), cycled(pairs, _PROOF_BATCH), dict(entries)

    def op(state):
        from mpt import verify_proof

        root, pairs, _ = state
        out = None
        for k, proof in pairs:
            out = verify_proof(root, k, proof)
        return out

    def check(state):
        from mpt import verify_proof

        root, pairs, values = state
        for k, proof in pairs:
            expect("VerifyProof: value for %s" % k.hex(), verify_proof(root, k, proof), values[k])

    return Case(
        name="VerifyProof", group="VerifyProof", size=100, setup=setup, op=op, check=check,
        ops_per_sample=_PROOF_BATCH, doc="verify_proof(root, key, proof) on random_trie(100), cycling over keys",
    )


def _verify_range_proof(size: int) -> Case:
    def setup():
        t, entries = _random_trie(_RANGE_TRIE_SIZE)
        chosen = entries[_RANGE_START:_RANGE_START + size]
        keys = [k for k, _ in chosen]
        values = [v for _, v in chosen]
        proof = t.prove_many([keys[0], keys[-1]])
        return _range_verifier(), t.hash(), keys, values, proof

    return _verify_range_case("VerifyRangeProof", size, size, setup, True,
                              "verify_range_proof of %d entries from index 2 of random_trie(8192), with both edge "
                              "proofs" % size)


def _verify_range_no_proof(label: int, n: int) -> Case:
    def setup():
        t, entries = _random_trie(n)
        return _range_verifier(), t.hash(), [k for k, _ in entries], [v for _, v in entries], None

    return _verify_range_case("VerifyRangeNoProof", label, n, setup, False,
                              "verify_range_proof of all of random_trie(%d), no proof" % n)


def _range_verifier():
    """verify_range_proof, looked up in the setup: an import statement in the op (about 0.2 us) would be timed with
    each single call of the VerifyRange cases."""
    from mpt import verify_range_proof

    return verify_range_proof


def _verify_range(state):
    """The timed call of the VerifyRange cases: state is (verify_range_proof, root, keys, values, proof or None)."""
    verify, root, keys, values, proof = state
    return verify(root, keys[0], keys, values, proof)


def _verify_range_case(group: str, label: int, size: int, setup, has_more: bool, doc: str) -> Case:
    """A VerifyRangeProof / VerifyRangeNoProof case; check: the range verifies, with has_more as its answer."""
    def check(state):
        expect("%s%d has-more" % (group, label), _verify_range(state), has_more)

    return Case(name="%s%d" % (group, label), group=group, size=size, setup=setup, op=_verify_range, check=check,
                doc=doc)


def cases() -> List[Case]:
    """The Ethereum cases, in the order of the benchmark page's table (Insert/N after Insert100K)."""
    out = [_hash_fixed_size(label, n) for label, n in ACCOUNT_SIZES.items()]
    out += [_commit_after_hash(label, n) for label, n in ACCOUNT_SIZES.items()]
    out += [_hash_two_tries(label, ACCOUNT_SIZES[label], mode)
            for label in ("10K", "100K") for mode in ("serial", "threads")]
    out += [_derive_sha("std_trie"), _derive_sha("stack_trie")]
    out.append(_insert_100k_case())
    out += [_insert(label, ACCOUNT_SIZES[label]) for label in ("1K", "10K", "100K")]
    out += [_prove(), _verify_proof()]
    out += [_verify_range_proof(size) for size in (10, 100, 1000, 5000)]
    out += [_verify_range_no_proof(label, n) for label, n in ((10, 100), (500, 500), (1000, 1000))]
    return out
