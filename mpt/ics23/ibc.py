"""Verify an IBC ``MerkleProof`` (ibc-go ``modules/core/23-commitment``) against a commitment root.

A ``MerkleProof`` is ``repeated cosmos.ics23.v1.CommitmentProof proofs = 1``: the proofs of a chained commitment,
lowest subtree first (on a Cosmos SDK chain: the module store's IAVL proof, then the multistore's simple Merkle
proof of the store's root). The path is a ``MerklePath``: the keys from the root down, prefix first (on an SDK
chain ``[b"ibc", b"clients/07-tendermint-0/clientState"]``). Checked as ibc-go's ``MerkleProof.VerifyMembership``
/ ``VerifyNonMembership`` with its SDK specs (``IAVL_SPEC`` for the first proof, ``TENDERMINT_SPEC`` for the
second).
"""
from typing import Any, Iterable, Optional, Sequence, Union

from mpt.core.bytes_like import bytes_arg
from mpt.errors import ProofError
from mpt.ics23.abci import key_argument, parse_hash_argument, proven_on_the_wire, run_commitment_op
from mpt.ics23.messages import (WIRE_BYTES, CommitmentProof, ProofSpec, int32, message_bytes, read_length,
                                read_varint, skip_field)
from mpt.ics23.specs import IAVL_SPEC, TENDERMINT_SPEC

__all__ = ["decode_merkle_proof", "verify_ibc_merkle_proof"]

# A MerkleProof of a real chain holds 2 proofs; this bounds the work a hostile message can ask for.
_MAX_PROOFS = 64


def _split_merkle_proof(proof):
    """The wire bytes of each CommitmentProof of an ibc-go MerkleProof (bytes-like or a protobuf message object
    with ``SerializeToString()``), lowest subtree first.

    Read as ibc-go's gogoproto ``Unmarshal`` reads it, with the ICS23 codec's own readers: varints of up to 10
    bytes (a non-minimal one too), unknown fields skipped; field 1 in another wire type is an error."""
    data = message_bytes(proof, "proof")
    end = len(data)
    parts = []
    pos = 0
    while pos < end:
        tag_at = pos
        tag, pos = read_varint(data, pos, end, "MerkleProof tag")
        field = int32(tag >> 3)
        wire = tag & 7
        if field <= 0:
            raise ProofError(f"MerkleProof: illegal tag {field} (wire type {wire}) at offset {tag_at}")
        if field != 1:
            pos = skip_field(data, pos, end, wire, field)
            continue
        if wire != WIRE_BYTES:
            raise ProofError(f"MerkleProof: wrong wire type {wire} for field 1 (proofs) at offset {tag_at}")
        if len(parts) == _MAX_PROOFS:
            raise ProofError(f"MerkleProof holds more than {_MAX_PROOFS} proofs")
        start, pos = read_length(data, pos, end, f"MerkleProof proof #{len(parts)}")
        parts.append(data[start:pos])
    return parts


def _decode_parts(parts):
    proofs = []
    for i, part in enumerate(parts):
        try:
            proofs.append(CommitmentProof.from_bytes(part))
        except ProofError as e:
            raise ProofError(f"MerkleProof proof #{i}: {e}") from None
    return proofs


def decode_merkle_proof(proof):
    """The CommitmentProofs of an ibc-go MerkleProof given as bytes(-like) or as a protobuf message object
    (anything with ``SerializeToString()``), lowest subtree first."""
    return _decode_parts(_split_merkle_proof(proof))


def _path_keys(path):
    if isinstance(path, (str, bytes, bytearray, memoryview)):
        raise TypeError("path must be a list of keys (prefix first), not a single "
                        f"{type(path).__name__}")
    key_path = getattr(path, "key_path", None)     # a MerklePath message object
    if key_path is not None:
        path = key_path
    try:
        keys = list(path)
    except TypeError:
        raise TypeError(f"path must be a list of keys (prefix first), not {type(path).__name__}") from None
    return [key_argument(k, f"path[{i}]") for i, k in enumerate(keys)]


def _chained_membership(root, specs, proofs, keys, value, index, value_from=None):
    """ibc-go verifyChainedMembershipProof: proofs[index:] each prove the previous subroot (or value) under
    their key; the last subroot must be root."""
    subroot = value
    for i in range(index, len(proofs)):
        kind = proofs[i].which()
        if kind == "nonexist":
            raise ProofError(f"chained membership proof contains nonexistence proof at index {i}")
        if kind != "exist":
            raise ProofError(f"expected an existence proof at index {i}, got {kind or 'an empty proof'}")
        key = keys[len(keys) - 1 - i]
        subroot = run_commitment_op(specs[i], proofs[i], key, value, f"proof #{i}", value_from=value_from)
        value = subroot
        value_from = f"proof #{i}'s computed root"
    if subroot != root:
        raise ProofError(f"proof did not commit to expected root: {root.hex().upper()}, got: "
                         f"{subroot.hex().upper()}")


def verify_ibc_merkle_proof(proof: Any, root: Union[bytes, bytearray, memoryview, str],
                            path: Iterable[Union[bytes, bytearray, memoryview, str]],
                            value: Union[bytes, bytearray, memoryview, None] = None, *,
                            specs: Optional[Sequence[Any]] = None) -> bool:
    """Verify an ibc-go ``MerkleProof`` against ``root`` (the 32-byte commitment root, bytes or hex text with or
    without ``0x``; on a
    Cosmos SDK chain the app hash) for ``path`` (a list of keys, prefix first, each bytes or str; or a
    MerklePath message object with ``key_path``).

    With ``value`` (non-empty bytes): proves path -> value (ibc-go ``VerifyMembership``). Without: proves the
    path's last key absent from the lowest store and that store's root present in the rest of the chain
    (``VerifyNonMembership``). ``proof`` is the MerkleProof as bytes or a protobuf message object.

    ``specs``: the proof specs of the chain's client state, lowest store first; by default a Cosmos SDK chain's
    (``[IAVL_SPEC, TENDERMINT_SPEC]``, ibc-go's ``GetSDKSpecs``).

    Returns True, or raises :class:`mpt.errors.ProofError` saying what failed (TypeError for arguments of the
    wrong type)."""
    sdk_specs = specs is None
    if specs is None:
        spec_list = [IAVL_SPEC, TENDERMINT_SPEC]
    else:
        if isinstance(specs, (str, bytes)) or not hasattr(specs, "__iter__"):
            raise TypeError(f"specs must be a list of ProofSpec, not {type(specs).__name__}")
        spec_list = list(specs)
        for i, spec in enumerate(spec_list):
            if not isinstance(spec, ProofSpec):
                raise TypeError(f"specs[{i}] must be a ProofSpec, not {type(spec).__name__}")

    root_hash = parse_hash_argument(root, "root")
    keys = _path_keys(path)
    if value is not None:
        value = bytes_arg(value, "value")
    parts = _split_merkle_proof(proof)
    if not parts:
        raise ProofError("proof cannot be empty")
    if len(spec_list) != len(parts):
        raise ProofError(f"length of specs: {len(spec_list)} not equal to length of proof: {len(parts)}")
    if len(keys) != len(spec_list):
        raise ProofError(f"path length {len(keys)} not same as proof {len(spec_list)}")
    if any(len(k) == 0 for k in keys):
        raise ProofError("path keys must not be empty")
    if value is not None and len(value) == 0:
        raise ProofError("empty value in membership proof")
    # The compiled verifier proves the usual chain from the bytes; anything it does not prove is checked (and
    # explained) proof by proof below, as ibc-go does.
    if sdk_specs and proven_on_the_wire(parts[0], parts[1], keys[1], keys[0], value, root_hash):
        return True
    proofs = _decode_parts(parts)
    if value is not None:
        _chained_membership(root_hash, spec_list, proofs, keys, value, 0)
        return True
    kind = proofs[0].which()
    if kind == "exist":
        raise ProofError("got ExistenceProof in VerifyNonMembership: the key is present (or the path is wrong)")
    if kind != "nonexist":
        raise ProofError(f"expected a non-existence proof at index 0, got {kind or 'an empty proof'}")
    subroot = run_commitment_op(spec_list[0], proofs[0], keys[-1], None, "proof #0")
    _chained_membership(root_hash, spec_list, proofs, keys, subroot, 1, value_from="proof #0's computed root")
    return True
