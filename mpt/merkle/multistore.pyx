# cython: language_level=3
"""The Cosmos SDK's simple Merkle map (``store/internal/maps``): the multistore commit hash over store name ->
store root, and its ``ics23:simple`` proofs."""
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint64_t

from mpt.core.bytes_like cimport as_bytes
from mpt.core.varint cimport MAX_VARINT_LEN64, put_uvarint
from mpt.merkle.proof cimport Proof, proofs_of
from mpt.merkle.tree cimport root_of, sha256_digest, split_point

from collections.abc import Mapping

__all__ = ["map_proof", "map_root"]



cdef bytes _map_key(key):
    """A map key as bytes: str as UTF-8 (the SDK's store names are Go strings), or any bytes-like."""
    cdef bytes b
    if isinstance(key, str):
        try:
            b = (<str>key).encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"map key {key!r:.60} is not encodable as UTF-8: {e.reason}") from None
    else:
        b = as_bytes(key, "map key")
    if len(b) == 0:
        # The SDK's assertValidKey panics on an empty key: no such map exists on a chain.
        raise ValueError("map keys must not be empty")
    return b


cdef bytes _map_value(value):
    return as_bytes(value, "map value")


cdef list _map_entries(mapping):
    """[(key, value)] of the mapping as bytes, sorted by key bytes (the SDK's kv.Pairs.Sort)."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"mapping must be a Mapping of keys to values, not {type(mapping).__name__}")
    cdef dict by_key = {}
    cdef bytes k
    for key, value in mapping.items():
        k = _map_key(key)
        if k in by_key:
            # "a" and b"a" in one mapping: Go's map[string][]byte cannot hold both.
            raise ValueError(f"map key {k!r:.60} is given twice (as str and as bytes)")
        by_key[k] = _map_value(value)
    return sorted(by_key.items())


cdef bytes _map_leaf(bytes key, bytes value):
    """The SDK's KVPair(key, sha256(value)).Bytes(): uvarint(len(key)) || key || uvarint(32) || sha256(value)."""
    cdef unsigned char head[MAX_VARINT_LEN64]
    cdef Py_ssize_t n = put_uvarint(head, <uint64_t>PyBytes_GET_SIZE(key))
    return PyBytes_FromStringAndSize(<char*>head, n) + key + b"\x20" + sha256_digest(value)


def map_root(mapping):
    """The Cosmos SDK's simple Merkle map root (``maps.HashFromMap``), the hash a multistore commits to
    (``CommitInfo.Hash()`` over store name -> store root hash): keys sorted by their bytes, one leaf
    ``uvarint(len(key)) || key || uvarint(32) || sha256(value)`` per entry, the RFC 6962 tree over the leaves.

    ``mapping`` maps str (UTF-8) or bytes-like keys to bytes-like values; empty keys are refused (ValueError) as
    the SDK refuses them. The empty map has root ``sha256(b"")`` like ``HashFromMap`` (the SDK's
    ``CommitInfo.Hash()`` of no stores is nil instead)."""
    cdef list entries = _map_entries(mapping)
    return root_of([_map_leaf(k, v) for k, v in entries], False)


cdef list _map_path(Proof p):
    """The aunts of p as (aunt, aunt_is_right) from the leaf up (the SDK's proofs.convertInnerOps / buildPath:
    the leaf's side at every split of the recursive tree, the deepest split first)."""
    cdef list sides = []
    cdef int64_t i = p.index, t = p.total, k
    while t > 1:
        k = <int64_t>split_point(<uint64_t>t)
        if i < k:
            sides.append(True)      # the leaf is in the left part: the aunt is the right child
            t = k
        else:
            sides.append(False)
            i -= k
            t -= k
    sides.reverse()
    return list(zip(p.aunts, sides))


cdef object _map_existence(list entries, Py_ssize_t index):
    # ICS23's messages are imported on first use: the package costs as much again as `import mpt` (about 20 ms),
    # and only map_proof needs it.
    from mpt.ics23.messages import ExistenceProof, HashOp, InnerOp, LeafOp, LengthOp
    cdef bytes key = entries[index][0], value = entries[index][1]
    cdef Proof p = proofs_of([_map_leaf(k, v) for k, v in entries], index)[1][0]
    path = []
    for aunt, aunt_is_right in _map_path(p):
        if aunt_is_right:
            path.append(InnerOp(hash=HashOp.SHA256, prefix=b"\x01", suffix=aunt))
        else:
            path.append(InnerOp(hash=HashOp.SHA256, prefix=b"\x01" + aunt, suffix=b""))
    leaf = LeafOp(hash=HashOp.SHA256, prehash_key=HashOp.NO_HASH, prehash_value=HashOp.SHA256,
                  length=LengthOp.VAR_PROTO, prefix=b"\x00")
    return ExistenceProof(key=key, value=value, leaf=leaf, path=path)


def map_proof(mapping, key):
    """The ``ics23:simple`` proof of ``key`` in :func:`map_root` ``(mapping)``, as an
    :class:`mpt.ics23.CommitmentProof`; it verifies with :data:`mpt.ics23.TENDERMINT_SPEC`.

    For a key of the map: the existence proof the Cosmos SDK puts in a query's proof ops (its
    ``ConvertExistenceProof`` of the map's simple proof; the proven value is the map's value itself, hashed by
    the leaf op). For a key not in the map: a non-existence proof made of the existence proofs of its sorted
    neighbours (the SDK's ``CreateNonMembershipProof``). ValueError for an empty map."""
    from mpt.ics23.messages import CommitmentProof, NonExistenceProof     # on first use: see _map_existence
    cdef list entries = _map_entries(mapping)
    cdef bytes k = _map_key(key)
    if not entries:
        raise ValueError("an empty map has no proofs")
    cdef list keys = [e[0] for e in entries]
    cdef Py_ssize_t lo = 0, hi = len(keys), mid
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < k:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(keys) and keys[lo] == k:
        return CommitmentProof(exist=_map_existence(entries, lo))
    return CommitmentProof(nonexist=NonExistenceProof(
        key=k,
        left=_map_existence(entries, lo - 1) if lo > 0 else None,
        right=_map_existence(entries, lo) if lo < len(keys) else None,
    ))
