"""ICS23 proof cases (Cosmos commitment proofs over IAVL and the CometBFT simple tree).

``ICS23Verify/{iavl,iavl_absent,simple}``: ``mpt.ics23.verify_membership`` / ``verify_non_membership`` straight
from the proof's protobuf bytes, on cosmos/ics23's own testdata (the proofs its Go benchmarks verify);
``AbciQueryVerify``: ``mpt.ics23.verify_abci_query`` of a whole CometBFT abci_query answer from its JSON text. Each
is checked: the proof verifies and its calculated root is the testdata's, the answer's value is the proven one.
``ICS23Prove/100K``: Go iavl's GetMembershipProof workload (docs/benchmarks.rst): a membership proof of a random
present key in a saved 100,000-key tree, checked byte for byte against the pure-tree encoder and verified.

A new case: a ``_name(...) -> Case`` factory per workload, checked against a known root or proof, listed by
:func:`cases`. The registry (:mod:`mpt.bench.cases`) picks it up from there.
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import repeat
from typing import List

from mpt.bench.registry import Case, each_key, expect
from mpt.bench.workloads import ics23_vectors

_ICS23_BATCH = 100
_ABCI_BATCH = 10


def _ics23_verify(label: str, vector: str, spec_name: str) -> Case:
    def setup():
        d = ics23_vectors()[vector]
        return (bytes.fromhex(d["root"]), bytes.fromhex(d["proof"]), bytes.fromhex(d["key"]),
                bytes.fromhex(d["value"]) if d["value"] else None)

    def op(state):
        import mpt.ics23 as ics23

        spec = getattr(ics23, spec_name)
        root, proof, key, value = state
        out = None
        if value is None:
            for _ in repeat(None, _ICS23_BATCH):
                out = ics23.verify_non_membership(spec, root, proof, key)
        else:
            for _ in repeat(None, _ICS23_BATCH):
                out = ics23.verify_membership(spec, root, proof, key, value)
        return out

    def check(state):
        from mpt.ics23 import CommitmentProof

        root, proof, _, _ = state
        expect("ICS23Verify/%s" % label, op(state), True)
        expect("ICS23Verify/%s calculated root" % label, CommitmentProof.from_bytes(proof).calculate_root(), root)

    kind = "verify_non_membership" if "nonexist" in vector else "verify_membership"
    return Case(
        name="ICS23Verify/%s" % label, group="ICS23Verify", size=1, setup=setup, op=op, check=check,
        ops_per_sample=_ICS23_BATCH,
        doc="mpt.ics23.%s(%s, root, proof bytes, ...) on cosmos/ics23's testdata %s" % (kind, spec_name, vector),
    )


def _abci_query_verify() -> Case:
    def setup():
        d = ics23_vectors()["abci_query"]
        return json.dumps(d["response"]), bytes.fromhex(d["app_hash"]), bytes.fromhex(d["value"])

    def op(state):
        from mpt.ics23 import verify_abci_query

        text, app_hash, _ = state
        out = None
        for _ in repeat(None, _ABCI_BATCH):
            out = verify_abci_query(text, app_hash)
        return out

    def check(state):
        expect("AbciQueryVerify value", op(state), state[2])

    return Case(
        name="AbciQueryVerify", group="AbciQueryVerify", size=1, setup=setup, op=op, check=check,
        ops_per_sample=_ABCI_BATCH,
        doc="mpt.ics23.verify_abci_query(JSON text, app_hash): a CometBFT abci_query answer (an ics23:iavl proof "
            "of depth 11 made by Go iavl, an ics23:simple proof of depth 5 over 19 stores), parsed and verified",
    )


_ICS23_PROVE_BATCH = 1000


@lru_cache(maxsize=None)
def _ics23_prove_tree(n: int):
    """A saved n-key tree (16-byte random keys, 32-byte values, Go math/rand) and _ICS23_PROVE_BATCH of its keys
    in random order (the tree of the benchmark page's GetMembershipProof row)."""
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
        name="ICS23Prove/%s" % label, group="ICS23Prove", size=n, setup=setup, op=each_key("membership_proof"),
        check=check, ops_per_sample=_ICS23_PROVE_BATCH, small=False,
        doc="MutableTree.membership_proof of a random present key in a saved %s-key tree (16-byte keys, 32-byte "
            "values): an mpt.ics23 CommitmentProof, Go iavl's GetMembershipProof" % label,
    )


def cases() -> List[Case]:
    """The ICS23 cases, in the order of the benchmark page."""
    return [
        _ics23_verify("iavl", "iavl/exist_left", "IAVL_SPEC"),
        _ics23_verify("iavl_absent", "iavl/nonexist_left", "IAVL_SPEC"),
        _ics23_verify("simple", "tendermint/exist_left", "TENDERMINT_SPEC"),
        _abci_query_verify(),
        _ics23_prove("100K", 100000),
    ]
