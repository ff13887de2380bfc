"""The proof specs of the Cosmos trees (cosmos/ics23 ``proof.go``): read-only constants every verifier and prover
of this package shares (``mpt.ics23`` re-exports them)."""
from mpt.ics23.messages import HashOp, InnerSpec, LeafOp, LengthOp, ProofSpec, frozen

__all__ = ["IAVL_SPEC", "SMT_SPEC", "TENDERMINT_SPEC"]

IAVL_SPEC = frozen(ProofSpec(
    leaf_spec=LeafOp(prefix=b"\x00", prehash_key=HashOp.NO_HASH, hash=HashOp.SHA256, prehash_value=HashOp.SHA256,
                     length=LengthOp.VAR_PROTO),
    inner_spec=InnerSpec(child_order=[0, 1], min_prefix_length=4, max_prefix_length=12, child_size=33,
                         empty_child=b"", hash=HashOp.SHA256),
))

TENDERMINT_SPEC = frozen(ProofSpec(
    leaf_spec=LeafOp(prefix=b"\x00", prehash_key=HashOp.NO_HASH, hash=HashOp.SHA256, prehash_value=HashOp.SHA256,
                     length=LengthOp.VAR_PROTO),
    inner_spec=InnerSpec(child_order=[0, 1], min_prefix_length=1, max_prefix_length=1, child_size=32,
                         hash=HashOp.SHA256),
))

SMT_SPEC = frozen(ProofSpec(
    leaf_spec=LeafOp(hash=HashOp.SHA256, prehash_key=HashOp.SHA256, prehash_value=HashOp.SHA256,
                     length=LengthOp.NO_PREFIX, prefix=b"\x00"),
    inner_spec=InnerSpec(child_order=[0, 1], child_size=32, min_prefix_length=1, max_prefix_length=1,
                         empty_child=bytes(32), hash=HashOp.SHA256),
    max_depth=256,
    prehash_key_before_comparison=True,
))
