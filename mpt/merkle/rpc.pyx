# cython: language_level=3
"""CometBFT's ``/tx?prove=true`` proofs in RPC JSON: :func:`tx_proof` writes one, :func:`verify_tx_proof` checks
one as CometBFT's ``TxProof.Validate`` does."""
import base64

from mpt.errors import ProofError
from mpt.merkle.proof cimport Proof, json_base64, json_hex, json_object, proofs_of
from mpt.merkle.tree cimport as_sequence, sha256_digest

__all__ = ["tx_proof", "verify_tx_proof"]


cdef object _tx_proof_object(obj):
    """The TxProof object inside what a user may hold: the TxProof itself, the /tx result (with "proof" and
    "tx"), or the whole JSON-RPC response (with "result")."""
    obj = json_object(obj, "tx proof")
    if "result" in obj and "root_hash" not in obj:
        obj = json_object(obj["result"], "JSON-RPC result")
    if "root_hash" not in obj and "proof" in obj:
        tx_result = obj
        obj = json_object(obj["proof"], "tx proof")
        if "tx" in tx_result and "data" in obj and tx_result["tx"] != obj["data"]:
            raise ProofError("the /tx result's tx is not the tx its proof proves")
    for key in ("root_hash", "data", "proof"):
        if key not in obj:
            raise ProofError(f"tx proof has no {key!r}")
    return obj


def verify_tx_proof(obj, data_hash=None):
    """Verify the ``proof`` object of CometBFT's ``/tx?prove=true`` (``root_hash`` hex, ``data`` base64 tx,
    ``proof``), as CometBFT's ``TxProof.Validate`` does. Takes a dict or JSON text, and also the whole ``/tx``
    result or JSON-RPC response holding it.

    The proof only ties the tx to ``root_hash``; pass ``data_hash`` (bytes or hex, the ``data_hash`` of a header
    you trust) to also check that ``root_hash`` is that block's. Returns True or raises ProofError saying what
    failed."""
    tx_proof_obj = _tx_proof_object(obj)
    root_hash = json_hex(tx_proof_obj["root_hash"], "root_hash")
    tx = json_base64(tx_proof_obj["data"], "data")
    p = Proof.from_json(tx_proof_obj["proof"])
    if data_hash is not None:
        if isinstance(data_hash, str):
            expected = json_hex(data_hash, "data_hash")
        elif isinstance(data_hash, (bytes, bytearray, memoryview)):
            expected = bytes(data_hash)
        else:
            raise TypeError(f"data_hash must be bytes or a hex string, not {type(data_hash).__name__}")
        if len(expected) != 32:
            raise ProofError(f"data_hash must be a 32-byte SHA-256 hash, got {len(expected)} bytes")
        if expected != root_hash:
            raise ProofError("proof matches different data hash")
    if p.total <= 0:
        raise ProofError("proof total must be positive")
    try:
        p.verify(root_hash, sha256_digest(tx))
    except ProofError as e:
        raise ProofError(f"proof is not internally consistent: {e}") from None
    return True


def tx_proof(txs, Py_ssize_t index):
    """CometBFT ``Txs.Proof(index)`` in RPC JSON form: ``{"root_hash", "data", "proof"}`` for transaction
    ``index`` (the leaves are sha256 of each tx)."""
    seq = as_sequence(txs)
    if not 0 <= index < len(seq):
        raise IndexError(f"tx index {index} out of range for {len(seq)} txs")
    root_hash, (p,) = proofs_of([sha256_digest(tx) for tx in seq], index)
    return {
        "root_hash": root_hash.hex().upper(),
        "data": base64.b64encode(bytes(seq[index])).decode("ascii"),
        "proof": p.to_json(),
    }
