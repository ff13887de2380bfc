"""ICS23 proof cases (Cosmos commitment proofs over IAVL and the CometBFT simple tree).

* ``ICS23Prove/100K``: Go iavl's GetMembershipProof workload (BENCHMARKS.md): a membership proof of a random
  present key in a saved 100,000-key tree.

A new case: a ``_name(...) -> Case`` factory per workload, checked against a known root or proof, listed by
:func:`cases`. The registry (:mod:`mpt.bench.cases`) picks it up from there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import List

from mpt.bench.registry import Case, expect

_ICS23_PROVE_BATCH = 1000


@lru_cache(maxsize=None)
def _ics23_prove_tree(n: int):
    """A saved n-key tree (16-byte random keys, 32-byte values, Go math/rand) and _ICS23_PROVE_BATCH of its keys
    in random order (the tree of BENCHMARKS.md's GetMembershipProof row)."""
    from mpt.bench.workloads import GoRand
    from mpt.iavl import MutableTree

    r = GoRand(23)
    tree = MutableTree()
    keys = []
    for _ in range(n):
        key = r.read(16)
        tree.set(key, r.read(32))
        keys.append(key)
    tree.save_version()
    return tree, [keys[r.intn(n)] for _ in range(_ICS23_PROVE_BATCH)]


def _ics23_prove(label: str, n: int) -> Case:
    def setup():
        return _ics23_prove_tree(n)

    def op(state):
        tree, keys = state
        prove = tree.membership_proof
        for key in keys:
            prove(key)

    def check(state):
        from mpt.iavl.proof import membership_proof_bytes
        from mpt.ics23 import IAVL_SPEC, verify_membership

        tree, keys = state
        root = tree.hash()
        for key in keys[:: _ICS23_PROVE_BATCH // 50]:
            proof = tree.membership_proof(key)
            expect("proof bytes", proof.to_bytes(), membership_proof_bytes(tree, key))
            expect("verified", verify_membership(IAVL_SPEC, root, proof, key, tree.get(key)), True)

    return Case(
        name="ICS23Prove/%s" % label, group="ICS23Prove", size=n, setup=setup, op=op, check=check,
        ops_per_sample=_ICS23_PROVE_BATCH, small=False,
        doc="MutableTree.membership_proof of a random present key in a saved %s-key tree (16-byte keys, 32-byte "
            "values): an mpt.ics23 CommitmentProof, Go iavl's GetMembershipProof" % label,
    )


def cases() -> List[Case]:
    """The ICS23 cases, in the order of the benchmark page."""
    return [_ics23_prove("100K", 100000)]
