"""CometBFT simple Merkle tree cases (mpt.merkle, RFC 6962): roots, proofs and their verification.

``MerkleHashAlternatives`` is go-square's / CometBFT's ``BenchmarkHashAlternatives``; ``MerkleRoot/N``,
``MerkleProof`` and ``MerkleVerify`` are ours (CometBFT's ``HashFromByteSlices`` and ``ProofsFromByteSlices``
at several sizes). Every root is checked against the pure-Python reference (mpt._merkle_reference).
"""

from __future__ import annotations

from typing import List, Sequence

from mpt.bench.registry import Case, cycled, expect
from mpt.bench.workloads import MERKLE_LEAF_SIZE, MERKLE_SIZES, merkle_leaves, merkle_reference_root

# go-square / CometBFT BenchmarkHashAlternatives: 100 leaves of sha256.Size random bytes.
MERKLE_ALTERNATIVES_LEAVES = 100
MERKLE_ALTERNATIVES_LEAF_SIZE = 32
_MERKLE_PROOF_LEAVES = 1000
_MERKLE_VERIFY_BATCH = 256


def preimages(leaves: Sequence[bytes]) -> List[bytes]:
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
        return list(merkle_leaves(n, MERKLE_LEAF_SIZE))

    def op(leaves):
        from mpt.merkle import root

        return root(leaves)

    def check(leaves):
        expect("MerkleRoot/%s root" % label, op(leaves), merkle_reference_root(tuple(leaves)))

    return Case(
        name="MerkleRoot/" + label, group="MerkleRoot", size=n, setup=setup, op=op, check=check,
        small=n < 100000, sha256_messages=preimages,
        doc="mpt.merkle.root of %d leaves of %d bytes (CometBFT HashFromByteSlices%s)" % (
            n, MERKLE_LEAF_SIZE, "; on --hash-threads N threads" if n >= 2048 else ""),
    )


def _merkle_alternatives(variant: str) -> Case:
    def setup():
        return list(merkle_leaves(MERKLE_ALTERNATIVES_LEAVES, MERKLE_ALTERNATIVES_LEAF_SIZE))

    if variant == "recursive":
        def op(leaves):
            try:
                from mpt.merkle.tree import root_recursive
            except ImportError:         # an older commit (asv history): the private name, in mpt.merkle.tree or,
                import mpt.merkle       # before the package layout, in mpt.merkle

                root_recursive = getattr(getattr(mpt.merkle, "tree", mpt.merkle), "_root_recursive")  # noqa: B009

            return root_recursive(leaves)
    else:
        def op(leaves):
            from mpt.merkle import root

            return root(leaves)

    def check(leaves):
        expect("MerkleHashAlternatives/%s root" % variant, op(leaves), merkle_reference_root(tuple(leaves)))

    return Case(
        name="MerkleHashAlternatives/" + variant, group="MerkleHashAlternatives/" + variant,
        size=MERKLE_ALTERNATIVES_LEAVES, setup=setup, op=op, check=check, sha256_messages=preimages,
        doc="go-square BenchmarkHashAlternatives: 100 leaves of 32 bytes, %s" % (
            "split-point recursion, one inner hash at a time" if variant == "recursive"
            else "root(): level by level, two hashes at a time"),
    )


def _merkle_proof_case() -> Case:
    def setup():
        return list(merkle_leaves(_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE))

    def op(leaves):
        from mpt.merkle import proofs

        return proofs(leaves)

    def check(leaves):
        root, all_proofs = op(leaves)
        expect("MerkleProof root", root, merkle_reference_root(tuple(leaves)))
        expect("MerkleProof count", len(all_proofs), len(leaves))
        for i in (0, len(leaves) // 2, len(leaves) - 1):
            expect("MerkleProof %d verifies" % i, all_proofs[i].verify(root, leaves[i]), True)

    return Case(
        name="MerkleProof", group="MerkleProof", size=_MERKLE_PROOF_LEAVES, setup=setup, op=op, check=check,
        doc="mpt.merkle.proofs: root and all %d proofs of %d-byte leaves (CometBFT ProofsFromByteSlices)"
            % (_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE),
    )


def _merkle_verify_case() -> Case:
    def setup():
        from mpt.merkle import proofs

        leaves = list(merkle_leaves(_MERKLE_PROOF_LEAVES, MERKLE_LEAF_SIZE))
        root, all_proofs = proofs(leaves)
        return root, cycled(list(zip(all_proofs, leaves)), _MERKLE_VERIFY_BATCH)

    def op(state):
        root, pairs = state
        out = None
        for p, leaf in pairs:
            out = p.verify(root, leaf)
        return out

    def check(state):
        expect("MerkleVerify", op(state), True)

    return Case(
        name="MerkleVerify", group="MerkleVerify", size=_MERKLE_PROOF_LEAVES, setup=setup, op=op, check=check,
        ops_per_sample=_MERKLE_VERIFY_BATCH,
        doc="Proof.verify(root, leaf) on a %d-leaf tree, cycling over its proofs" % _MERKLE_PROOF_LEAVES,
    )


def cases() -> List[Case]:
    """The CometBFT Merkle cases, in the order of the benchmark page."""
    out = [_merkle_alternatives("recursive"), _merkle_alternatives("iterative")]
    out += [_merkle_root_case(label, n) for label, n in MERKLE_SIZES.items()]
    out += [_merkle_proof_case(), _merkle_verify_case()]
    return out
