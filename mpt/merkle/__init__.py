"""CometBFT's simple Merkle trees (RFC 6962 with SHA-256): roots, proofs, ``/tx`` proofs, the SDK multistore map."""
from mpt.merkle import tree as _tree
from mpt.merkle.tree import empty_hash as empty_hash  # deprecated (warns when called), out of __all__
from mpt.merkle.tree import (EMPTY_ROOT, MAX_AUNTS, Proof, data_hash, hashing_threads, header_hash,
                             inner_hash, leaf_hash, map_proof, map_root, proof, proofs, root, tx_proof,
                             verify_tx_proof)

__all__ = ["EMPTY_ROOT", "MAX_AUNTS", "Proof", "data_hash", "hashing_threads", "header_hash", "inner_hash",
           "leaf_hash", "proof", "proofs", "root", "tx_proof", "verify_tx_proof", "map_proof", "map_root"]

# The deprecated names: EMPTY_HASH (PEP 562); empty_hash() warns when called.
__getattr__ = _tree.__getattr__  # type: ignore[attr-defined]
