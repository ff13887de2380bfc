"""The benchmark cases, shared by ``python -m mpt.bench`` and the asv suite.

Names follow go-ethereum's benchmarks (the table of docs/benchmarks.rst), so our numbers line up with geth's;
``Insert/N`` adds what a Python user pays to build a trie (N ``update`` calls, then ``hash``). Workloads come from
:mod:`mpt.bench.workloads` only; this module turns them into timed operations.

A :class:`Case` is run like this (see ``mpt/bench/__main__.py``)::

    case.check(case.setup())           # once: the result is right (root equals the reference root)
    state = case.setup()                # not timed; stateful cases get a fresh one per op
    case.op(state)                      # timed; performs case.ops_per_sample benchmark operations

``ops_per_sample`` is how many benchmark operations one ``op`` call performs, so time/op = time / ops_per_sample.
Cheap operations (Prove, VerifyProof) run a batch per call, cycling over the keys like geth's ``b.N`` loop.
``stateful`` cases change their state (``hash()`` caches hashes in the nodes, ``commit()`` cleans them), so every
``op`` call needs a state of its own from ``setup()``.

:func:`peer_case` builds the same "insert all + root" workload for the Python peers (py-trie, execution-specs).
"""

from __future__ import annotations

import importlib
import importlib.util
import random
import re
from collections import deque
from itertools import repeat
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from mpt.bench.workloads import (
    ACCOUNT_ROOTS,
    GENTXS200_ROOT,
    INSERT_100K_ROOT,
    account_keys,
    gentxs200,
    insert_100k_items,
    make_accounts,
    random_trie_items,
)

__all__ = [
    "Case",
    "CheckFailed",
    "CASES",
    "get",
    "select",
    "Peer",
    "PEER_NAMES",
    "peers",
    "peer_case",
    "ACCOUNT_SIZES",
    "MERKLE_SIZES",
    "merkle_peers",
    "merkle_peer_case",
]


class CheckFailed(AssertionError):
    """A case computed a wrong result (a wrong root, a proof that does not verify, ...)."""


def _expect(what: str, got: Any, want: Any) -> None:
    if got != want:
        show = lambda v: v.hex() if isinstance(v, (bytes, bytearray)) else repr(v)  # noqa: E731
        raise CheckFailed("%s: got %s, want %s" % (what, show(got), show(want)))


@dataclass(frozen=True)
class Case:
    """One benchmark: ``op(setup())`` is timed, ``check(setup())`` proves the result right."""

    name: str                                   # geth-style name, e.g. "HashFixedSize/10K"
    setup: Callable[[], Any]                    # builds the state (not timed)
    op: Callable[[Any], Any]                    # the timed operation(s)
    check: Callable[[Any], None]                # runs op on a fresh state and verifies the result
    group: str                                  # the name without the size, e.g. "HashFixedSize"
    size: int = 0                               # workload size in entries (for ordering and "smallest")
    stateful: bool = False                      # op changes the state: one setup() per op call
    ops_per_sample: int = 1                     # benchmark operations one op call performs
    small: bool = True                          # part of the default run (else only with -b or --all)
    keccak_blobs: Optional[Callable[[Any], List[bytes]]] = None  # the encodings op keccaks (given a fresh state)
    doc: str = ""
    sha256_messages: Optional[Callable[[Any], List[bytes]]] = None  # the preimages op SHA-256s (mpt.merkle)
    peak_rss: Optional[Callable[[], Dict[str, int]]] = None  # one op in a fresh interpreter: RSS before and peak


# ---------------------------------------------------------------------------------------------------------------
# Workload data, built once per process (make_accounts(100000) alone takes seconds)
# ---------------------------------------------------------------------------------------------------------------

ACCOUNT_SIZES: Dict[str, int] = {"10": 20, "100": 100, "1K": 1000, "10K": 10000, "100K": 100000}
"""HashFixedSize labels and the number of accounts each really uses (geth's "/10" uses 20)."""


@lru_cache(maxsize=None)
def _accounts(n: int) -> Tuple[Tuple[bytes, ...], Tuple[bytes, ...]]:
    addresses, values = make_accounts(n)
    return tuple(account_keys(addresses)), tuple(values)


@lru_cache(maxsize=None)
def _random_entries(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """random_trie_items(n), sorted by key (the proof benchmarks' ``entries``)."""
    return tuple(sorted(random_trie_items(n)))


@lru_cache(maxsize=None)
def _gentxs() -> Tuple[bytes, ...]:
    return tuple(gentxs200())


@lru_cache(maxsize=None)
def _insert_100k() -> Tuple[Tuple[bytes, bytes], ...]:
    return tuple(insert_100k_items())


def _filled_trie(keys: Sequence[bytes], values: Sequence[bytes]):
    from mpt import Trie

    t = Trie()
    for k, v in zip(keys, values):
        t.update(k, v)
    return t


@lru_cache(maxsize=None)
def _random_trie(n: int):
    """The hashed Trie over random_trie_items(n) and its sorted entries. Shared: proofs never change it."""
    entries = _random_entries(n)
    t = _filled_trie([k for k, _ in entries], [v for _, v in entries])
    t.hash()
    return t, entries


# ---------------------------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------------------------

def _hashed_blobs(t) -> List[bytes]:
    """The node encodings hash() keccaks for t: every node with a hash (the root included), via a copy."""
    return [blob for _path, node_hash, blob in t.copy().node_iter() if node_hash is not None]


def _hash_fixed_size(label: str, n: int) -> Case:
    def setup():
        ks, vs = _accounts(n)
        return _filled_trie(ks, vs)

    def op(t):
        return t.hash()

    def check(t):
        _expect("HashFixedSize/%s root" % label, op(t), ACCOUNT_ROOTS[n])

    return Case(
        name="HashFixedSize/" + label, group="HashFixedSize", size=n, setup=setup, op=op, check=check,
        stateful=True, small=n < 100000, keccak_blobs=_hashed_blobs,
        doc="hash() of a fresh trie holding make_accounts(%d)" % n,
    )


def _hash_two_tries(label: str, n: int, mode: str) -> Case:
    """Two Python threads hashing two different tries at once ("threads") against one after the other
    ("serial"): hash() runs its whole pass without the GIL, so the threads overlap (issue 15)."""
    def setup():
        ks, vs = _accounts(n)
        return _filled_trie(ks, vs), _filled_trie(ks, vs)

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
        _expect("HashTwoTries/%s/%s roots" % (label, mode), roots, (ACCOUNT_ROOTS[n], ACCOUNT_ROOTS[n]))

    return Case(
        name="HashTwoTries/%s/%s" % (label, mode), group="HashTwoTries", size=n, setup=setup, op=op, check=check,
        stateful=True, small=n < 100000,
        doc="hash() of two fresh tries holding make_accounts(%d), %s" % (
            n, "one after the other" if mode == "serial" else "in two Python threads at once"),
    )


def _commit_after_hash(label: str, n: int) -> Case:
    def setup():
        ks, vs = _accounts(n)
        t = _filled_trie(ks, vs)
        t.hash()
        return t

    def op(t):
        return t.commit()

    def check(t):
        root = op(t)
        _expect("CommitAfterHashFixedSize/%s root" % label, root, ACCOUNT_ROOTS[n])
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

        return list(_gentxs()), (StackTrie() if variant == "stack_trie" else None)

    if variant == "std_trie":
        def op(state):
            from mpt import derive_sha_trie

            return derive_sha_trie(state[0])
    else:
        def op(state):
            from mpt import derive_sha

            return derive_sha(state[0], "orig", stack_trie=state[1])

    def check(state):
        _expect("DeriveSha200/%s root" % variant, op(state), GENTXS200_ROOT)

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
        _expect("Insert100K root", op(items), INSERT_100K_ROOT)

    return Case(
        name="Insert100K", group="Insert100K", size=100000, setup=setup, op=op, check=check, small=False,
        doc="StackTrie: 100,000 ordered updates (key j*1024, 20 zero bytes) and the root",
    )


def _insert(label: str, n: int) -> Case:
    def setup():
        return _accounts(n)

    def op(state):
        from mpt import Trie

        keys, values = state
        t = Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        return t.hash()

    def check(state):
        _expect("Insert/%s root" % label, op(state), ACCOUNT_ROOTS[n])

    return Case(
        name="Insert/" + label, group="Insert", size=n, setup=setup, op=op, check=check, small=n < 100000,
        doc="Trie(), update() of make_accounts(%d), hash(): what a Python user pays" % n,
    )


_PROOF_BATCH = 256  # proofs per op call, cycling over random_trie(100)'s 210 keys


def _cycled(seq: Sequence[Any], count: int) -> List[Any]:
    return [seq[i % len(seq)] for i in range(count)]


def _prove() -> Case:
    def setup():
        t, entries = _random_trie(100)
        return t, _cycled([k for k, _ in entries], _PROOF_BATCH), dict(entries)

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
            _expect("Prove: value proven for %s" % k.hex(), verify_proof(root, k, t.prove(k)), values[k])

    return Case(
        name="Prove", group="Prove", size=100, setup=setup, op=op, check=check, ops_per_sample=_PROOF_BATCH,
        doc="prove(key) on random_trie(100), cycling over its keys",
    )


def _verify_proof() -> Case:
    def setup():
        t, entries = _random_trie(100)
        pairs = [(k, t.prove(k)) for k, _ in entries]
        return t.hash(), _cycled(pairs, _PROOF_BATCH), dict(entries)

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
            _expect("VerifyProof: value for %s" % k.hex(), verify_proof(root, k, proof), values[k])

    return Case(
        name="VerifyProof", group="VerifyProof", size=100, setup=setup, op=op, check=check,
        ops_per_sample=_PROOF_BATCH, doc="verify_proof(root, key, proof) on random_trie(100), cycling over keys",
    )


_RANGE_TRIE_SIZE = 8192
_RANGE_START = 2


def _verify_range_proof(size: int) -> Case:
    def setup():
        t, entries = _random_trie(_RANGE_TRIE_SIZE)
        chosen = entries[_RANGE_START:_RANGE_START + size]
        keys = [k for k, _ in chosen]
        values = [v for _, v in chosen]
        proof = t.prove_many([keys[0], keys[-1]])
        return t.hash(), keys, values, proof

    def op(state):
        from mpt import verify_range_proof

        root, keys, values, proof = state
        return verify_range_proof(root, keys[0], keys, values, proof)

    def check(state):
        _expect("VerifyRangeProof%d has-more" % size, op(state), True)

    return Case(
        name="VerifyRangeProof%d" % size, group="VerifyRangeProof", size=size, setup=setup, op=op, check=check,
        doc="verify_range_proof of %d entries from index 2 of random_trie(8192), with both edge proofs" % size,
    )


def _verify_range_no_proof(label: int, n: int) -> Case:
    def setup():
        t, entries = _random_trie(n)
        return t.hash(), [k for k, _ in entries], [v for _, v in entries]

    def op(state):
        from mpt import verify_range_proof

        root, keys, values = state
        return verify_range_proof(root, keys[0], keys, values, None)

    def check(state):
        _expect("VerifyRangeNoProof%d has-more" % label, op(state), False)

    return Case(
        name="VerifyRangeNoProof%d" % label, group="VerifyRangeNoProof", size=n, setup=setup, op=op, check=check,
        doc="verify_range_proof of all of random_trie(%d), no proof" % n,
    )


# ---------------------------------------------------------------------------------------------------------------
# Binary Merkle trees (mpt.merkle: CometBFT / RFC 6962)
# ---------------------------------------------------------------------------------------------------------------

MERKLE_SIZES: Dict[str, int] = {"100": 100, "1K": 1000, "10K": 10000, "100K": 100000}
"""MerkleRoot labels and leaf counts (100-byte leaves)."""

MERKLE_LEAF_SIZE = 100
# go-square / CometBFT BenchmarkHashAlternatives: 100 leaves of sha256.Size random bytes (crypto/rand there,
# seeded here so that every run hashes the same tree).
MERKLE_ALTERNATIVES_LEAVES = 100
MERKLE_ALTERNATIVES_LEAF_SIZE = 32
_MERKLE_PROOF_LEAVES = 1000
_MERKLE_VERIFY_BATCH = 256


@lru_cache(maxsize=None)
def _merkle_leaves(n: int, size: int, seed: int = 6962) -> Tuple[bytes, ...]:
    """n leaves of `size` pseudo-random bytes (seeded)."""
    rng = random.Random("%d/%d/%d" % (seed, n, size))
    return tuple(rng.getrandbits(8 * size).to_bytes(size, "little") for _ in range(n))


@lru_cache(maxsize=None)
def _merkle_reference_root(leaves: Tuple[bytes, ...]) -> bytes:
    from mpt import _merkle_reference

    return _merkle_reference.root(list(leaves))


def _merkle_preimages(leaves: Sequence[bytes]) -> List[bytes]:
    """Every SHA-256 input of root(leaves): 0x00||leaf for each leaf, then 0x01||left||right level by level."""
    import hashlib

    messages = [b"\x00" + bytes(x) for x in leaves]
    level = [hashlib.sha256(m).digest() for m in messages]
    while len(level) > 1:
        pairs = [b"\x01" + level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        messages += pairs
        nxt = [hashlib.sha256(m).digest() for m in pairs]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return messages


def _merkle_root_case(label: str, n: int) -> Case:
    def setup():
        return list(_merkle_leaves(n, MERKLE_LEAF_SIZE))

    def op(leaves):
        from mpt.merkle import root

        return root(leaves)

    def check(leaves):
        _expect("MerkleRoot/%s root" % label, op(leaves), _merkle_reference_root(tuple(leaves)))

    return Case(
        name="MerkleRoot/" + label, group="MerkleRoot", size=n, setup=setup, op=op, check=check,
        small=n < 100000, sha256_messages=_merkle_preimages,
        doc="mpt.merkle.root of %d leaves of %d bytes (CometBFT HashFromByteSlices%s)" % (
            n, MERKLE_LEAF_SIZE, "; on --hash-threads N threads" if n >= 2048 else ""),
    )


def _merkle_alternatives(variant: str) -> Case:
    def setup():
        return list(_merkle_leaves(MERKLE_ALTERNATIVES_LEAVES, MERKLE_ALTERNATIVES_LEAF_SIZE))

    if variant == "recursive":
        def op(leaves):
            from mpt.merkle import _root_recursive

            return _root_recursive(leaves)
    else:
        def op(leaves):
            from mpt.merkle import root

            return root(leaves)

    def check(leaves):
        _expect("MerkleHashAlternatives/%s root" % variant, op(leaves), _merkle_reference_root(tuple(leaves)))

    return Case(
        name="MerkleHashAlternatives/" + variant, group="MerkleHashAlternatives/" + variant,
        size=MERKLE_ALTERNATIVES_LEAVES, setup=setup, op=op, check=check, sha256_messages=_merkle_preimages,
        doc="go-square BenchmarkHashAlternatives: 100 leaves of 32 bytes, %s" % (
            "split-point recursion, one inner hash at a time" if variant == "recursive"
            else "root(): level by level, two hashes at a time"),
    )


def _merkle_proof_case() -> Case:
    def setup():
        return list(_merkle_leaves(_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE))

    def op(leaves):
        from mpt.merkle import proofs

        return proofs(leaves)

    def check(leaves):
        root, all_proofs = op(leaves)
        _expect("MerkleProof root", root, _merkle_reference_root(tuple(leaves)))
        _expect("MerkleProof count", len(all_proofs), len(leaves))
        for i in (0, len(leaves) // 2, len(leaves) - 1):
            _expect("MerkleProof %d verifies" % i, all_proofs[i].verify(root, leaves[i]), True)

    return Case(
        name="MerkleProof", group="MerkleProof", size=_MERKLE_PROOF_LEAVES, setup=setup, op=op, check=check,
        doc="mpt.merkle.proofs: root and all %d proofs of %d-byte leaves (CometBFT ProofsFromByteSlices)"
            % (_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE),
    )


def _merkle_verify_case() -> Case:
    def setup():
        from mpt.merkle import proofs

        leaves = list(_merkle_leaves(_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE))
        root, all_proofs = proofs(leaves)
        return root, _cycled(list(zip(all_proofs, leaves)), _MERKLE_VERIFY_BATCH)

    def op(state):
        root, pairs = state
        out = None
        for p, leaf in pairs:
            out = p.verify(root, leaf)
        return out

    def check(state):
        _expect("MerkleVerify", op(state), True)

    return Case(
        name="MerkleVerify", group="MerkleVerify", size=_MERKLE_PROOF_LEAVES, setup=setup, op=op, check=check,
        ops_per_sample=_MERKLE_VERIFY_BATCH,
        doc="Proof.verify(root, leaf) on a %d-leaf tree, cycling over its proofs" % _MERKLE_PROOF_LEAVES,
    )


def _merkle_cases() -> List[Case]:
    cases = [_merkle_alternatives("recursive"), _merkle_alternatives("iterative")]
    cases += [_merkle_root_case(label, n) for label, n in MERKLE_SIZES.items()]
    cases += [_merkle_proof_case(), _merkle_verify_case()]
    return cases


# ---------------------------------------------------------------------------------------------------------------
# IAVL (mpt.iavl): node codecs in the three formats (cosmos/iavl PR #673's benchmarks) and the tree
# ---------------------------------------------------------------------------------------------------------------

# Codec calls per op call: one call is ~100 ns, far below the clock's resolution. The loops run over
# itertools.repeat, not range, whose ints above 256 would be allocations counted against the codec.
_IAVL_BATCH = 1000
_IAVL_FORMATS = ("vbyte", "legacy", "v1")
_IAVL_NODE_KEY = bytes(7) + b"\x03" + bytes(3) + b"\x01"     # NodeKey{version 3, nonce 1}
_IAVL_LEAVES = {
    # PR #673 node_test.go: the "leaf" vector (key "key", value "value", version 3) and its "large number"
    # version 2**32-1 (the largest the stream-vbyte format holds; a leaf's size stays 1).
    "small": (b"key", b"value", 3),
    "large": (b"key", b"value", 2**32 - 1),
}
_IAVL_EXPECT = {
    ("small", "vbyte"): "0000030100036b657976616c7565",
    ("small", "legacy"): "000206036b65790576616c7565",
    ("small", "v1"): "0002036b65790576616c7565",
}


def _iavl_default(fmt: str, size: str = "small") -> bool:
    """Only the stream-vbyte small-number cases join the default run (it stays about a minute); ``-b IAVL``
    or ``--all`` runs every format."""
    return fmt == "vbyte" and size == "small"


def _iavl_leaf(size: str):
    from mpt.iavl import LeafNode

    key, value, version = _IAVL_LEAVES[size]
    return LeafNode(key, value, version)


def _iavl_node_key(size: str) -> bytes:
    from mpt.iavl import node_key

    return node_key(_IAVL_LEAVES[size][2], 1)


def _iavl_max_encoded_size(fmt: str) -> Case:
    def setup():
        return _iavl_leaf("small")

    def op(leaf):
        size = leaf.encoded_size
        for _ in repeat(None, _IAVL_BATCH):
            size(fmt)

    def check(leaf):
        _expect("encoded_size", leaf.encoded_size(fmt), len(bytes.fromhex(_IAVL_EXPECT["small", fmt])))

    return Case(
        name="IAVLNode/maxEncodedSize/%s" % fmt, group="IAVLNode/maxEncodedSize", setup=setup, op=op, check=check,
        ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt), doc="leaf.encoded_size(%r) (exact size, nothing encoded)" % fmt,
    )


def _iavl_encode(size: str, fmt: str) -> Case:
    def setup():
        return _iavl_leaf(size)

    def op(leaf):
        to_bytes = leaf.to_bytes
        for _ in repeat(None, _IAVL_BATCH):
            to_bytes(fmt)

    def check(leaf):
        from mpt.iavl import decode_node

        data = leaf.to_bytes(fmt)
        if (size, fmt) in _IAVL_EXPECT:
            _expect("encoding", data.hex(), _IAVL_EXPECT[size, fmt])
        back = decode_node(data, fmt, _iavl_node_key(size) if fmt == "v1" else None)
        _expect("round trip", (back.key, back.value, back.version), (leaf.key, leaf.value, leaf.version))

    return Case(
        name="IAVLNode/Encode/%s_integer/%s" % (size, fmt), group="IAVLNode/Encode", setup=setup, op=op,
        check=check, ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt, size),
        doc="leaf.to_bytes(%r), version %d" % (fmt, _IAVL_LEAVES[size][2]),
    )


def _iavl_decode(size: str, fmt: str) -> Case:
    def setup():
        return _iavl_leaf(size).to_bytes(fmt), (_iavl_node_key(size) if fmt == "v1" else None)

    def op(state):
        from mpt.iavl import decode_node

        data, nk = state
        for _ in repeat(None, _IAVL_BATCH):
            decode_node(data, fmt, nk)

    def check(state):
        from mpt.iavl import decode_node

        data, nk = state
        node = decode_node(data, fmt, nk)
        _expect("decoded leaf", (node.key, node.value, node.version), _IAVL_LEAVES[size])
        _expect("hash", node.hash, _iavl_leaf(size).hash)

    return Case(
        name="IAVLNode/Decode/%s_number/%s" % (size, fmt), group="IAVLNode/Decode", setup=setup, op=op,
        check=check, ops_per_sample=_IAVL_BATCH, small=_iavl_default(fmt, size),
        doc="decode_node(leaf bytes, %r), version %d" % (fmt, _IAVL_LEAVES[size][2]),
    )


_IAVL_TREE_SIZE = 10000


@lru_cache(maxsize=None)
def _iavl_entries(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """n fresh 16-byte keys with 16-byte values, drawn like iavl's TestTreeHash (Go math/rand, Read)."""
    from mpt.bench.workloads import GoRand

    r = GoRand(49872768940)
    return tuple((r.read(16), r.read(16)) for _ in range(n))


def _iavl_check_tree(tree, entries) -> None:
    from mpt.iavl import MutableTree

    _expect("size", len(tree), len(dict(entries)))
    for k, v in entries[:: max(1, len(entries) // 500)]:
        _expect("get %s" % k.hex(), tree.get(k), v)
    root, version = tree.save_version()
    reopened = MutableTree(tree.db)
    reopened.load_version(version)
    _expect("reloaded root", reopened.hash(), root)
    _expect("ordered items", list(reopened.keys()), sorted(dict(entries)))


def _iavl_set() -> Case:
    def setup():
        return _iavl_entries(_IAVL_TREE_SIZE)

    def op(entries):
        from mpt.iavl import MutableTree

        tree = MutableTree()
        put = tree.set
        for k, v in entries:
            put(k, v)
        return tree

    def check(entries):
        _iavl_check_tree(op(entries), entries)

    return Case(
        name="IAVLTree/Set10K", group="IAVLTree/Set10K", size=_IAVL_TREE_SIZE, setup=setup, op=op, check=check,
        doc="MutableTree.set of 10K fresh 16-byte keys (balancing included, no hashing)",
    )


def _iavl_save_version() -> Case:
    def setup():
        from mpt.iavl import MutableTree

        tree = MutableTree()
        entries = _iavl_entries(_IAVL_TREE_SIZE)
        for k, v in entries:
            tree.set(k, v)
        return tree, entries

    def op(state):
        return state[0].save_version()

    def check(state):
        tree, entries = state
        _iavl_check_tree(tree, entries)

    return Case(
        name="IAVLTree/SaveVersion10K", group="IAVLTree/SaveVersion10K", size=_IAVL_TREE_SIZE, setup=setup, op=op,
        check=check, stateful=True,
        doc="save_version() of 10K fresh keys: hash every node, v1-encode and write them to a MemoryDB",
    )


def _iavl_tree_hash() -> Case:
    def setup():
        from mpt.bench.workloads import GoRand

        return GoRand(49872768940)

    def op(r):
        from mpt.iavl import MutableTree

        tree = MutableTree()
        keys: List[bytes] = []
        roots = []
        for _ in range(4):
            for _ in range(4096):
                if keys and r.float64() <= 0.2:
                    tree.remove(keys.pop(r.intn(len(keys))))
                elif keys and r.float64() <= 0.4:
                    tree.set(keys[r.intn(len(keys))], r.read(16))
                else:
                    key = r.read(16)
                    tree.set(key, r.read(16))
                    keys.append(key)
            roots.append(tree.save_version()[0].hex())
        return roots

    def check(r):
        want = ["58ec30fa27f338057e5964ed9ec3367e59b2b54bec4c194f10fde7fed16c2a1c",
                "91ad3ace227372f0064b2d63e8493ce8f4bdcbd16c7a8e4f4d54029c9db9570c",
                "92c25dce822c5968c228cfe7e686129ea281f79273d4a8fcf6f9130a47aa5421",
                "e44d170925554f42e00263155c19574837a38e3efed8910daccc7fa12f560fa0"]
        _expect("TestTreeHash roots", op(r), want)

    return Case(
        name="IAVLTree/TestTreeHash", group="IAVLTree/TestTreeHash", size=16384, setup=setup, op=op, check=check,
        stateful=True, small=False,
        doc="iavl's TestTreeHash: 4 versions x 4096 random set/update/remove (Go math/rand) + save_version, "
            "roots checked against iavl's",
    )


_IAVL_EXPORT_SIZE = 100000


@lru_cache(maxsize=None)
def _iavl_export_stream() -> Tuple[Any, ...]:
    """The export stream of the saved Set100K+Save tree (100K 16-byte keys with 32-byte values, seeded)."""
    from mpt.bench.iavl_trees import _saved_tree
    from mpt.iavl import MutableTree

    tree = MutableTree(_saved_tree("MemoryDB")[0])
    tree.load()
    return tuple(tree.export())


def _iavl_check_stream(nodes, n: int) -> None:
    _expect("exported nodes", len(nodes), 2 * n - 1)
    leaves = [x.key for x in nodes if x.height == 0]
    _expect("leaves in key order", leaves, sorted(leaves))


def _iavl_export(kind: str) -> Case:
    def setup():
        # A tree opened on the store, as Go's exporter reads a saved version: every node is read and decoded.
        from mpt.bench.iavl_trees import _saved_tree
        from mpt.iavl import MutableTree

        tree = MutableTree(_saved_tree(kind)[0])
        tree.load()
        return tree

    def op(tree):
        # Consumed at C speed: the case measures the exporter, not a Python loop around it.
        deque(tree.export(), maxlen=0)

    def check(tree):
        nodes = tuple(tree.export())
        _iavl_check_stream(nodes, _IAVL_EXPORT_SIZE)
        _expect("export", nodes, _iavl_export_stream())

    return Case(
        name="IAVLTree/Export100K/%s" % kind, group="IAVLTree/Export100K", size=_IAVL_EXPORT_SIZE, setup=setup,
        op=op, check=check, stateful=True, small=False,
        doc="MutableTree.export() of the saved Set100K+Save tree just opened on %s (199,999 ExportNodes in Go's "
            "exporter order, every node read from the store)" % kind,
    )


def _iavl_import(kind: str) -> Case:
    def setup():
        from mpt.bench.iavl_trees import _SCRATCH

        return _iavl_export_stream(), _SCRATCH.new(kind)

    def op(state):
        from mpt.iavl import MutableTree

        return MutableTree(state[1]).import_nodes(state[0], 1)

    def check(state):
        from mpt.bench.iavl_trees import _saved_tree
        from mpt.iavl import MutableTree

        _iavl_check_stream(state[0], _IAVL_EXPORT_SIZE)
        source = MutableTree(_saved_tree("MemoryDB")[0])
        source.load()
        _expect("imported root", op(state), source.hash())
        reopened = MutableTree(state[1])
        _expect("reopened version", reopened.load(), 1)
        _expect("reopened root", reopened.hash(), source.hash())

    return Case(
        name="IAVLTree/Import100K/%s" % kind, group="IAVLTree/Import100K", size=_IAVL_EXPORT_SIZE, setup=setup,
        op=op, check=check, stateful=True, small=False,
        doc="MutableTree.import_nodes() of the Export100K stream into an empty tree on %s: checks, node keys, "
            "hashes, v1 encodings and one batch, then the fast nodes Go's LoadVersion writes" % kind,
    )


def _iavl_cases() -> List[Case]:
    cases = [_iavl_max_encoded_size(fmt) for fmt in _IAVL_FORMATS]
    cases += [_iavl_encode(size, fmt) for size in ("small", "large") for fmt in _IAVL_FORMATS]
    cases += [_iavl_decode(size, fmt) for size in ("small", "large") for fmt in _IAVL_FORMATS]
    cases += [_iavl_set(), _iavl_save_version(), _iavl_tree_hash()]
    from mpt.bench import iavl_trees

    cases += iavl_trees.cases(Case, _expect)
    kinds = [k for k in iavl_trees.STORES if k == "MemoryDB" or iavl_trees._leveldb_available()]
    cases += [_iavl_export(kind) for kind in kinds] + [_iavl_import(kind) for kind in kinds]
    return cases


# ---------------------------------------------------------------------------------------------------------------
# Roots at scale (mpt.build_root, mpt.dask)
# ---------------------------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _shuffled_account_pairs(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """make_accounts(n) as (keccak key, account RLP) pairs in a seeded shuffled order (docs/benchmarks.rst, BuildRoot)."""
    keys, values = _accounts(n)
    pairs = list(zip(keys, values))
    random.Random(n).shuffle(pairs)
    return tuple(pairs)


def _fresh_process_rss(name: str) -> Dict[str, int]:
    from mpt.bench.rss import measure_in_subprocess

    return measure_in_subprocess(name)


def _build_root(label: str, n: int, workers: int) -> Case:
    name = "BuildRoot/%s/workers=%d" % (label, workers)

    def setup():
        return _shuffled_account_pairs(n)

    def op(pairs):
        from mpt import build_root

        return build_root(pairs, workers=workers)

    def check(pairs):
        _expect(name + " root", op(pairs), ACCOUNT_ROOTS[n])

    return Case(
        name=name, group="BuildRoot", size=n, setup=setup, op=op, check=check, small=False,
        peak_rss=lambda: _fresh_process_rss(name),
        doc="build_root of make_accounts(%d) pairs in shuffled order on %d thread(s)" % (n, workers),
    )


@lru_cache(maxsize=None)
def _dask_client():
    # One 2-process LocalCluster per benchmark process, kept until it exits.
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=40)
    return Client(cluster)


def _build_root_dask(label: str, n: int) -> Case:
    name = "BuildRootDask/%s" % label

    def setup():
        import dask.bag as db
        from dask.delayed import delayed

        # The partitions live on the workers already, as they would when read from Parquet there: a bag made with
        # from_sequence would embed 1M pairs in the graph, and dask's graph conversion of them alone takes ~10 s.
        # They travel pickled (distributed serializes a list of tuples item by item: minutes) and are unpickled
        # and kept in the workers' memory by persist().
        import pickle

        client = _dask_client()
        pairs = _shuffled_account_pairs(n)
        step = -(-n // 8)
        blobs = client.scatter([pickle.dumps(list(pairs[i:i + step]), protocol=5) for i in range(0, n, step)],
                               hash=False)
        bag = db.from_delayed([delayed(pickle.loads)(blob) for blob in blobs]).persist()
        return bag, client

    def op(state):
        from mpt.dask import build_root_dask

        bag, client = state
        return build_root_dask(bag, client=client)

    def check(state):
        _expect(name + " root", op(state), ACCOUNT_ROOTS[n])

    return Case(
        name=name, group="BuildRootDask", size=n, setup=setup, op=op, check=check, small=False,
        doc="build_root_dask of make_accounts(%d) pairs (a bag of 8 partitions scattered to the workers) on a "
            "2-worker LocalCluster" % n,
    )


def _build_cases() -> Dict[str, Case]:
    cases: List[Case] = []
    cases += [_hash_fixed_size(label, n) for label, n in ACCOUNT_SIZES.items()]
    cases += [_commit_after_hash(label, n) for label, n in ACCOUNT_SIZES.items()]
    cases += [_hash_two_tries(label, ACCOUNT_SIZES[label], mode)
              for label in ("10K", "100K") for mode in ("serial", "threads")]
    cases += [_derive_sha("std_trie"), _derive_sha("stack_trie")]
    cases.append(_insert_100k_case())
    cases += [_insert(label, ACCOUNT_SIZES[label]) for label in ("1K", "10K", "100K")]
    cases += [_prove(), _verify_proof()]
    cases += [_verify_range_proof(size) for size in (10, 100, 1000, 5000)]
    cases += [_verify_range_no_proof(label, n) for label, n in ((10, 100), (500, 500), (1000, 1000))]
    cases += _merkle_cases()
    cases += _iavl_cases()
    cases += [_build_root(label, n, w) for label, n in (("100K", 100000), ("1M", 1000000)) for w in (1, 2)]
    cases.append(_build_root_dask("1M", 1000000))
    return {c.name: c for c in cases}


CASES: Dict[str, Case] = _build_cases()
"""Every case by name, in the order of the benchmark page's table (docs/benchmarks.rst; Insert/N after Insert100K)."""


def get(name: str) -> Case:
    """The case called name (KeyError if there is none)."""
    return CASES[name]


def split_pattern(pattern: str) -> List[str]:
    """pattern split at each "/" outside brackets and parentheses (Go's testing.splitRegexp): one regular
    expression per level of a case name."""
    parts, depth_paren, in_class, cur, i = [], 0, False, "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            cur += pattern[i:i + 2]
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth_paren += 1
        elif ch == ")":
            depth_paren -= 1
        elif ch == "/" and depth_paren == 0:
            parts.append(cur)
            cur, i = "", i + 1
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return parts


def name_matcher(pattern: str, search: bool = False) -> Callable[[str], bool]:
    """A predicate on case names for ``-b pattern``.

    By default the pattern is split at "/" like Go's ``-bench`` (one regular expression per level) and each
    part must match a *whole* level of the name: ``HashFixedSize`` selects HashFixedSize/10 ... /100K but not
    CommitAfterHashFixedSize, ``HashFixedSize/1K`` selects one case, ``Insert/`` (an empty part matches
    anything) every Insert/N. A name with more levels than the pattern matches at the levels given. Go matches
    each part unanchored; anchoring makes a plain name mean that case, and ``.*`` widens it on purpose
    (``VerifyRange.*``). A pattern that matches a whole name as it stands is taken too, so an alternation with
    "/" inside parentheses works: ``(HashFixedSize/10|Prove)``. ``search=True`` is plain ``re.search`` over the
    whole name (the old behaviour).
    Raises re.error for a bad expression.
    """
    if search:
        rx = re.compile(pattern)
        return lambda name: rx.search(name) is not None
    whole = re.compile(pattern)
    parts = [re.compile(p) if p else None for p in split_pattern(pattern)]

    def match(name: str) -> bool:
        if whole.fullmatch(name) is not None:
            return True
        levels = name.split("/")
        if len(levels) < len(parts):
            return False
        return all(rx is None or rx.fullmatch(level) is not None for rx, level in zip(parts, levels))

    return match


def select(pattern: Optional[str] = None, everything: bool = False, search: bool = False) -> List[Case]:
    """Cases to run: those whose name matches pattern (see :func:`name_matcher`; any size), else every case
    with ``everything``, else the default small set."""
    if pattern is not None:
        matches = name_matcher(pattern, search)
        return [c for c in CASES.values() if matches(c.name)]
    if everything:
        return list(CASES.values())
    return [c for c in CASES.values() if c.small]


# ---------------------------------------------------------------------------------------------------------------
# Peers: the same "insert all + root" workload through other Python tries
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Peer:
    """A Python MPT implementation to compare with: ``build(keys, values)`` returns the root."""

    name: str
    build: Optional[Callable[[Sequence[bytes], Sequence[bytes]], bytes]]
    missing: Optional[str] = None               # why it cannot run (not installed, ...), else None
    detail: str = ""                            # module and version used


def _mpt_peer() -> Peer:
    import mpt

    def build(keys, values):
        t = mpt.Trie()
        for k, v in zip(keys, values):
            t.update(k, v)
        return t.hash()

    return Peer("mpt", build, detail="mpt %s" % getattr(mpt, "__version__", "?"))


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - metadata is only decoration here
        return "?"


def _py_trie_peer() -> Peer:
    try:
        from trie import HexaryTrie
    except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
        return Peer("py-trie", None, "not importable (%s: %s)" % (type(e).__name__, e))

    def build(keys, values):
        t = HexaryTrie({})
        for k, v in zip(keys, values):
            t.set(k, v)
        return t.root_hash

    return Peer("py-trie", build, detail="trie %s, HexaryTrie over a dict" % _version("trie"))


# The execution-specs packages moved the forks under ethereum.forks in 2.x; 1.x had them at the top level.
_SPECS_TRIE_MODULES = ("ethereum.forks.cancun.trie", "ethereum.forks.prague.trie", "ethereum.cancun.trie",
                       "ethereum.shanghai.trie")


def _specs_peer() -> Peer:
    for module_name in _SPECS_TRIE_MODULES:
        try:
            module = importlib.import_module(module_name)
            specs_trie, trie_set, root = module.Trie, module.trie_set, module.root
        except Exception:  # noqa: BLE001 - try the next layout
            continue

        def build(keys, values, specs_trie=specs_trie, trie_set=trie_set, root=root):
            t = specs_trie(secured=False, default=b"")
            for k, v in zip(keys, values):
                trie_set(t, k, v)
            return bytes(root(t))

        return Peer("execution-specs", build,
                    detail="ethereum-execution %s, %s" % (_version("ethereum-execution"), module_name))
    if importlib.util.find_spec("ethereum") is None:
        why = "not installed" if sys.version_info >= (3, 11) else "needs Python >= 3.11 (this is %d.%d)" % (
            sys.version_info[:2])
    else:  # e.g. the unrelated old pyethereum, which also installs a package called "ethereum"
        why = "the installed 'ethereum' package has none of %s" % ", ".join(_SPECS_TRIE_MODULES)
    return Peer("execution-specs", None, why)


PEER_NAMES = ("py-trie", "execution-specs")
PEERS_INSTALL_HINT = "pip install 'mpt-engine[peers]'"
"""The one install hint for the peers (the ``peers`` extra of pyproject.toml)."""


def peers() -> List[Peer]:
    """mpt itself first, then each peer (with ``missing`` set when it cannot be imported)."""
    return [_mpt_peer(), _py_trie_peer(), _specs_peer()]


def peer_case(peer: Peer, label: str) -> Case:
    """The Insert workload for ``ACCOUNT_SIZES[label]`` accounts through peer: insert all, then the root."""
    if peer.build is None:
        raise ValueError("peer %s is not available: %s" % (peer.name, peer.missing))
    n = ACCOUNT_SIZES[label]
    build = peer.build

    def setup():
        return _accounts(n)

    def op(state):
        return build(*state)

    def check(state):
        _expect("%s Insert/%s root" % (peer.name, label), bytes(op(state)), ACCOUNT_ROOTS[n])

    return Case(
        name="Insert/%s" % label, group="Insert", size=n, setup=setup, op=op, check=check, small=n < 100000,
        doc="%s: insert make_accounts(%d), then the root" % (peer.name, n),
    )


# ---------------------------------------------------------------------------------------------------------------
# Merkle peers: the same MerkleRoot leaves through other Python code
# ---------------------------------------------------------------------------------------------------------------

def _hashlib_merkle_root(leaves: Sequence[bytes]) -> bytes:
    """What Python users write today: the CometBFT tree level by level, one hashlib call per node."""
    import hashlib

    sha256 = hashlib.sha256
    if not leaves:
        return sha256(b"").digest()
    level = [sha256(b"\x00" + x).digest() for x in leaves]
    while len(level) > 1:
        nxt = [sha256(b"\x01" + level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _pymerkle_peer() -> Peer:
    try:
        from pymerkle import InmemoryTree
    except Exception as e:  # noqa: BLE001 - any import failure means "skip this peer"
        return Peer("pymerkle", None, "not importable (%s: %s)" % (type(e).__name__, e))

    def build(leaves):
        # RFC 6962 mode (the default: 0x00 / 0x01 prefixes), the same root as CometBFT's.
        return InmemoryTree.init_from_entries(list(leaves), algorithm="sha256").get_root()

    return Peer("pymerkle", build, detail="pymerkle %s, InmemoryTree.init_from_entries" % _version("pymerkle"))


MERKLE_PEER_NAMES = ("hashlib", "pymerkle")


def merkle_peers() -> List[Peer]:
    """mpt.merkle first, then a hashlib loop and pymerkle (``missing`` set when pymerkle is not installed)."""
    import hashlib

    from mpt.merkle import root

    return [Peer("mpt", root, detail="mpt.merkle.root"),
            Peer("hashlib", _hashlib_merkle_root, detail="hashlib.sha256 loop (%s)" % hashlib.sha256().name),
            _pymerkle_peer()]


def merkle_peer_case(peer: Peer, label: str) -> Case:
    """MerkleRoot/label's leaves through peer."""
    if peer.build is None:
        raise ValueError("peer %s is not available: %s" % (peer.name, peer.missing))
    n = MERKLE_SIZES[label]
    build = peer.build

    def setup():
        return list(_merkle_leaves(n, MERKLE_LEAF_SIZE))

    def op(leaves):
        return build(leaves)

    def check(leaves):
        _expect("%s MerkleRoot/%s root" % (peer.name, label), bytes(op(leaves)),
                _merkle_reference_root(tuple(leaves)))

    return Case(
        name="MerkleRoot/%s" % label, group="MerkleRoot", size=n, setup=setup, op=op, check=check,
        small=n < 100000, doc="%s: root of %d leaves of %d bytes" % (peer.name, n, MERKLE_LEAF_SIZE),
    )
