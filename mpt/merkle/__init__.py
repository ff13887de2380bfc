"""CometBFT's simple Merkle trees (RFC 6962 with SHA-256), one module per job: the tree engine
(:mod:`mpt.merkle.tree`: roots, leaf and inner hashes), proofs (:mod:`mpt.merkle.proof`), CometBFT's ``/tx``
proofs in RPC JSON (:mod:`mpt.merkle.rpc`) and the Cosmos SDK's multistore map (:mod:`mpt.merkle.multistore`)."""
from mpt.merkle import tree as _tree
from mpt.merkle.multistore import map_proof, map_root
from mpt.merkle.proof import MAX_AUNTS, Proof, proof, proofs
from mpt.merkle.rpc import tx_proof, verify_tx_proof
from mpt.merkle.tree import EMPTY_ROOT, data_hash, hashing_threads, header_hash, inner_hash, leaf_hash, root
from mpt.merkle.tree import empty_hash as empty_hash  # deprecated (warns when called), out of __all__

__all__ = ["EMPTY_ROOT", "MAX_AUNTS", "Proof", "data_hash", "hashing_threads", "header_hash", "inner_hash",
           "leaf_hash", "proof", "proofs", "root", "tx_proof", "verify_tx_proof", "map_proof", "map_root"]

# The deprecated names: EMPTY_HASH (PEP 562); empty_hash() warns when called.
__getattr__ = _tree.__getattr__  # type: ignore[attr-defined]
