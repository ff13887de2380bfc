"""Regression tests for what the sanitizer runs found (docs/memory_safety.rst), and a structured fuzzer of hostile
tries: hash-consistent node databases and proofs with shapes no valid trie has (a short node under a short node,
one-entry branches, odd leaf paths, hash references to small nodes), driven through every API. Each must give an
answer or a domain error, never a crash; under ``make asan`` any bad memory access aborts the run."""
import random

import pytest

from mpt import EMPTY_ROOT, MptError, ProofError, SecureTrie, Trie, keccak256, rlp, verify_proof, verify_range_proof
from mpt.ethereum import encoding, iterator
from mpt.ethereum.encoding import hex_to_compact


def _compact(nibbles, leaf=False):
    return hex_to_compact(bytes(nibbles) + (b"\x10" if leaf else b""))


def _db(*items):
    """Node database of the RLP items (root first): hash -> encoding; returns (root hash, db)."""
    db = {keccak256(rlp.encode(i)): rlp.encode(i) for i in items}
    return keccak256(rlp.encode(items[0])), db


# ------------------------------------------------------------------------------------------ findings

@pytest.mark.parametrize("nibble", [1, 5, 15])
def test_range_proof_with_a_short_node_under_a_short_node(nibble):
    # proof.pyx _unset_internal treated the parent short node as a branch and cleared "slot" `nibble` of it:
    # slot 1 overwrote the short node's child pointer (NULL dereference later), slots >= 2 wrote past the object
    # (ASan: heap-buffer-overflow in FullNode.set_child).
    inner = [_compact([2, 3]), b"\x42" * 32]                     # extension [2, 3] -> some hash
    root, db = _db([_compact([nibble]), keccak256(rlp.encode(inner))], inner)
    first, last = bytes([nibble << 4]), bytes([nibble << 4 | 5])
    with pytest.raises(ProofError, match="short node under a short node"):
        verify_range_proof(root, first, [first, last], [b"a", b"b"], list(db.values()))


def test_delete_under_an_extension_over_a_lone_leaf():
    # trie.pyx _delete left a short node without a child (val None) when the extension's child vanished; hashing
    # it then called a method through None (UBSan: member access within null pointer, ShortNode.payload_size).
    leaf = [_compact([3, 4], leaf=True), b"v" * 40]
    root, db = _db([_compact([1, 2]), keccak256(rlp.encode(leaf))], leaf)
    t = Trie(db=db, root=root)
    assert t.get(b"\x12\x34") == b"v" * 40
    t.delete(b"\x12\x34")
    assert t.hash() == EMPTY_ROOT and t.get(b"\x12\x34") is None
    t[b"\x12\x34"] = b"w"
    fresh = Trie()
    fresh[b"\x12\x34"] = b"w"
    assert t.hash() == fresh.hash()


def test_delete_the_only_entry_of_a_one_entry_branch():
    # A branch with a single entry (never in a valid trie) raised AssertionError when that entry went.
    leaf = [_compact([7, 8, 9], leaf=True), b"v" * 40]
    branch = [b""] * 6 + [keccak256(rlp.encode(leaf))] + [b""] * 10
    root, db = _db(branch, leaf)
    t = Trie(db=db, root=root)
    assert t.get(b"\x67\x89") == b"v" * 40
    del t[b"\x67\x89"]
    assert t.hash() == EMPTY_ROOT


@pytest.mark.parametrize("func", [encoding.keybytes_to_hex, encoding.hex_to_keybytes, encoding.hex_to_compact,
                                  encoding.compact_to_hex])
def test_encoding_helpers_refuse_none(func):
    # A `bytes` argument of a def function admits None; PyBytes_AS_STRING / PyBytes_GET_SIZE then read past
    # the None object.
    with pytest.raises(TypeError):
        func(None)


def test_iterators_refuse_none():
    # iter_items(None, ...) dereferenced the None trie (segfault); a None start read past the None object.
    with pytest.raises(TypeError):
        next(iterator.iter_items(None, b"", 0))
    with pytest.raises(TypeError):
        next(iterator.iter_items(Trie(), None, 0))
    with pytest.raises(TypeError):
        next(iterator.iter_nodes(None))


# ------------------------------------------------------------------------------------------ hostile tries

class _HostileTrie:
    """A random node structure; leaf paths (nibbles) are kept so that keys can follow them."""

    def __init__(self, rng):
        self.rng = rng
        self.paths = []
        self.db = {}
        item = self._node(rng.choice([1, 2, 3, 4, 6, 8]), b"")
        enc = rlp.encode(item)
        self.root = keccak256(enc)
        self.db[self.root] = enc

    def _node(self, depth, prefix):
        rng = self.rng
        kind = rng.random()
        if depth <= 0 or kind < 0.3:
            key = bytes(rng.randrange(16) for _ in range(rng.choice([0, 0, 1, 2, 3, 5, 8, 64])))
            self.paths.append(prefix + key)
            return [_compact(key, leaf=True), rng.randbytes(rng.choice([1, 1, 2, 20, 40]))]
        if kind < 0.55:
            key = bytes(rng.randrange(16) for _ in range(rng.choice([1, 1, 2, 3, 6])))
            return [_compact(key), self._ref(depth - 1, prefix + key)]    # any child: short under short too
        slots = set(rng.sample(range(16), rng.choice([0, 1, 1, 2, 3, 16 if depth <= 2 else 4])))
        children = [self._ref(depth - 1, prefix + bytes([i])) if i in slots else b"" for i in range(16)]
        if rng.random() < 0.3:
            self.paths.append(prefix)
            return children + [rng.randbytes(rng.choice([1, 3]))]
        return children + [b""]

    def _ref(self, depth, prefix):
        item = self._node(depth, prefix)
        enc = rlp.encode(item)
        if len(enc) >= 32 or self.rng.random() < 0.15:               # sometimes a hash for a small node
            self.db[keccak256(enc)] = enc
            return keccak256(enc)
        return item

    def key(self):
        rng = self.rng
        if self.paths and rng.random() < 0.7:
            path = rng.choice(self.paths)
            if len(path) % 2:
                path = path + bytes([rng.randrange(16)]) if rng.random() < 0.5 else path[:-1]
            k = bytes((path[i] << 4) | path[i + 1] for i in range(0, len(path), 2))
            return k[:rng.randrange(len(k))] if k and rng.random() < 0.2 else k
        return rng.randbytes(rng.choice([0, 1, 1, 2, 3, 4, 32]))


def _exercise(seed):
    rng = random.Random(seed)
    h = _HostileTrie(rng)
    proof = list(h.db.values())
    rng.shuffle(proof)
    keys = [h.key() for _ in range(6)]
    for k in keys:
        try:
            verify_proof(h.root, k, proof)
        except MptError:
            pass
    candidates = [h.key() for _ in range(8)]
    length = len(rng.choice(candidates))
    ks = sorted(set(k for k in candidates if len(k) == length))[:rng.randrange(1, 5)]
    first = ks[0] if ks and rng.random() < 0.8 else h.key()
    for p in (proof, None):
        try:
            verify_range_proof(h.root, first, ks, [b"v" * rng.choice([1, 40])] * len(ks), p)
        except MptError:
            pass
    for cls in (Trie, SecureTrie):
        t = cls(db=dict(h.db), root=h.root, verify_reads=rng.random() < 0.5)
        try:
            for _ in range(rng.randrange(1, 25)):
                op = rng.randrange(8)
                k = rng.choice(keys) if rng.random() < 0.5 else h.key()
                if op == 0:
                    t.get(k)
                elif op == 1:
                    t[k] = rng.randbytes(rng.choice([1, 4, 40]))
                elif op == 2:
                    t.delete(k)
                elif op == 3:
                    list(t.items(k))
                elif op == 4:
                    list(t.node_iter())
                elif op == 5:
                    try:
                        verify_proof(t.hash(), k, t.prove(k))
                    except MptError:
                        pass
                elif op == 6:
                    t.commit()
                else:
                    c = t.copy()
                    c[k] = b"x"
                    c.hash()
        except MptError:
            pass


def test_hostile_tries_through_every_api():
    for seed in range(1500):
        _exercise(seed)
