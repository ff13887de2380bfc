# cython: language_level=3
"""CometBFT's Merkle proofs (``crypto/merkle``'s ``Proof``, ``ProofsFromByteSlices``) over the trees of
:mod:`mpt.merkle.tree`, and their RPC JSON form.

A :class:`Proof` is CometBFT's ``merkle.Proof``: ``total``, ``index``, ``leaf_hash`` and ``aunts`` (the sibling
hashes from the leaf's sibling up to the root's child). Anything CometBFT refuses raises
:class:`mpt.errors.ProofError`.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object o)
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp, memcpy

from mpt.core.bytes_like cimport as_bytes
from mpt.core._sha256.sha256 cimport mpt_sha256_pairs
from mpt.merkle.tree cimport (HASH_LEN, INNER_PREFIX, MAX_AUNTS_LIMIT, NOGIL_BYTES, Scratch, all_levels, as_hash,
                              give_scratch, leaf_hash_into, leaf_hashes, split_point)

import base64
import json
import re
from collections.abc import Mapping

from mpt.errors import ProofError
from mpt.core.jsonrpc import parse_base64, parse_data
from mpt.merkle.tree import EMPTY_ROOT

__all__ = ["MAX_AUNTS", "Proof", "proof", "proofs"]

MAX_AUNTS = MAX_AUNTS_LIMIT
"""Most aunts a proof may carry (CometBFT ``merkle.MaxAunts``)."""

cdef int64_t _INT64_MAX = 0x7FFFFFFFFFFFFFFF

cdef extern from *:
    """
    #define MPT_TUPLE_ITEMS(t) (((PyTupleObject *)(t))->ob_item)
    #define MPT_BYTES_DATA(b) ((const unsigned char *)PyBytes_AS_STRING(b))
    """
    PyObject** _tuple_items "MPT_TUPLE_ITEMS"(tuple t) noexcept
    const unsigned char* _bytes_data "MPT_BYTES_DATA"(PyObject* b) noexcept nogil

cdef enum _RootError:
    _OK = 0
    _BAD_INDEX_TOTAL = 1
    _TOO_FEW_AUNTS = 2
    _TOO_MANY_AUNTS = 3


cdef _RootError _root_from_aunts(int64_t index, int64_t total, const unsigned char* leaf,
                                 PyObject** aunts, int n_aunts, unsigned char* out) noexcept nogil:
    """CometBFT computeHashFromAunts, iteratively: walk the splits from the top to learn on which side the leaf
    is at each level (the top split uses the last aunt), then hash from the leaf up. aunts are the items of a
    tuple of 32-byte bytes objects (read without the GIL: the caller holds the tuple)."""
    cdef unsigned char sides[MAX_AUNTS_LIMIT]
    cdef unsigned char pair[64]
    cdef int depth = 0, d
    cdef uint64_t i = <uint64_t>index, t = <uint64_t>total, k
    if index < 0 or total <= 0 or index >= total:
        return _BAD_INDEX_TOTAL
    while t > 1:
        if depth == n_aunts:
            return _TOO_FEW_AUNTS
        k = split_point(t)
        if i < k:
            sides[depth] = 0          # leaf in the left part: this level's aunt is on the right
            t = k
        else:
            sides[depth] = 1
            i -= k
            t -= k
        depth += 1
    if depth != n_aunts:
        return _TOO_MANY_AUNTS
    memcpy(out, leaf, HASH_LEN)
    for d in range(depth - 1, -1, -1):
        # Level d (from the top) used aunt n_aunts - 1 - d.
        if sides[d] == 0:
            memcpy(pair, out, HASH_LEN)
            memcpy(pair + HASH_LEN, _bytes_data(aunts[n_aunts - 1 - d]), HASH_LEN)
        else:
            memcpy(pair, _bytes_data(aunts[n_aunts - 1 - d]), HASH_LEN)
            memcpy(pair + HASH_LEN, out, HASH_LEN)
        mpt_sha256_pairs(INNER_PREFIX, pair, 1, out)
    return _OK


cdef int64_t _as_int64(value, str what) except? -1:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"proof {what} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ProofError(f"negative {what.capitalize()}")
    if value > _INT64_MAX:
        raise ProofError(f"proof {what} {value} does not fit in an int64")
    return <int64_t>value


@cython.final
@cython.no_gc          # see proof.pxd
cdef class Proof:
    """Merkle inclusion proof of one leaf (CometBFT ``merkle.Proof``).

    ``Proof(total, index, leaf_hash, aunts)`` refuses what CometBFT's ``ValidateBasic`` refuses (negative total
    or index, a leaf hash or aunt that is not 32 bytes, more than :data:`MAX_AUNTS` aunts) with
    :class:`~mpt.errors.ProofError`; an index out of range or the wrong number of aunts for it is refused when
    the root is computed. ``aunts`` is a tuple, from the leaf's sibling up to the root's child."""


    def __init__(self, total, index, leaf_hash, aunts=()):
        cdef int64_t t = _as_int64(total, "total")
        cdef int64_t i = _as_int64(index, "index")
        cdef bytes h = as_hash(leaf_hash, "LeafHash")
        if isinstance(aunts, (str, bytes, bytearray, memoryview)):
            raise TypeError("aunts must be a sequence of 32-byte hashes, not a single bytes/str value")
        cdef list raw = list(aunts)
        if len(raw) > MAX_AUNTS_LIMIT:
            raise ProofError(f"expected no more than {MAX_AUNTS_LIMIT} aunts, got {len(raw)}")
        cdef list checked = [as_hash(a, f"Aunts#{n}") for n, a in enumerate(raw)]
        self.total = t
        self.index = i
        self.leaf_hash = h
        self.aunts = tuple(checked)

    @staticmethod
    cdef Proof new(int64_t total, int64_t index, bytes leaf_hash, tuple aunts):
        """Trusted factory (hashes we computed): no validation."""
        cdef Proof p = Proof.__new__(Proof)
        p.total = total
        p.index = index
        p.leaf_hash = leaf_hash
        p.aunts = aunts
        return p

    cdef int _root_into(self, unsigned char* out) except -1:
        """The root this proof leads to into out[0:32]; ProofError if index/total are out of range or the number
        of aunts does not match the leaf's depth."""
        cdef _RootError err = _root_from_aunts(self.index, self.total, <const unsigned char*>PyBytes_AS_STRING(
            self.leaf_hash), _tuple_items(self.aunts), <int>PyTuple_GET_SIZE(self.aunts), out)
        if err == _OK:
            return 0
        if err == _BAD_INDEX_TOTAL:
            raise ProofError(f"invalid index {self.index} and/or total {self.total}")
        if err == _TOO_FEW_AUNTS:
            raise ProofError(f"expected more than {len(self.aunts)} inner hashes for index {self.index} of "
                             f"{self.total}")
        raise ProofError(f"unexpected inner hashes: {len(self.aunts)} aunts for index {self.index} of "
                         f"{self.total}")

    def compute_root_hash(self):
        """The root this proof leads to (CometBFT ``ComputeRootHash``); ProofError if index/total are out of
        range or the number of aunts does not match the leaf's depth."""
        cdef unsigned char out[32]
        self._root_into(out)
        return PyBytes_FromStringAndSize(<char*>out, HASH_LEN)

    # A method descriptor (no bound Cython function in between) and no bytes object made on success: a verify is
    # about twenty SHA-256 blocks, and what else it costs shows next to them.
    @cython.binding(False)
    @cython.embedsignature.format("clinic")
    def verify(self, root_hash, leaf):
        """Check that leaf is item ``index`` of the tree whose root is root_hash (CometBFT ``Proof.Verify``).
        Returns True; raises ProofError saying what failed. (It checks a given item, like
        :func:`mpt.ics23.verify_membership`; the verifiers that answer a lookup by key, such as
        :func:`mpt.verify_proof`, return the value instead.)"""
        cdef unsigned char want[32]
        cdef unsigned char computed[32]
        cdef bytes root
        if root_hash is None:
            raise ProofError("invalid root hash: cannot be nil")
        root = as_bytes(root_hash, "root_hash")
        leaf_hash_into(leaf, want)
        if memcmp(want, PyBytes_AS_STRING(self.leaf_hash), HASH_LEN) != 0:
            wanted = PyBytes_FromStringAndSize(<char*>want, HASH_LEN)
            raise ProofError(f"invalid leaf hash: wanted {wanted.hex().upper()} got {self.leaf_hash.hex().upper()}")
        self._root_into(computed)
        if PyBytes_GET_SIZE(root) != HASH_LEN or memcmp(computed, PyBytes_AS_STRING(root), HASH_LEN) != 0:
            raise ProofError(f"invalid root hash: wanted {root.hex().upper()} got "
                             f"{PyBytes_FromStringAndSize(<char*>computed, HASH_LEN).hex().upper()}")
        return True

    def to_json(self):
        """The proof as CometBFT's RPC writes it: decimal-string total and index, base64 hashes (a dict for
        json.dumps)."""
        return {
            "total": str(self.total),
            "index": str(self.index),
            "leaf_hash": base64.b64encode(self.leaf_hash).decode("ascii"),
            "aunts": [base64.b64encode(a).decode("ascii") for a in self.aunts],
        }

    @staticmethod
    def from_json(obj):
        """Proof from CometBFT's RPC JSON (a dict, or JSON text). Anything malformed raises ProofError.

        ``total`` and ``index`` are read as CometBFT reads them: decimal strings, optional minus sign, no leading
        zero or plus sign, within int64 (a plain JSON integer is taken too)."""
        obj = json_object(obj, "proof")
        for key in ("total", "index", "leaf_hash"):
            if key not in obj:
                raise ProofError(f"proof has no {key!r}")
        aunts = obj.get("aunts")
        if aunts is None:               # Go marshals a nil slice as null
            aunts = []
        if not isinstance(aunts, list):
            raise ProofError(f"proof aunts must be a JSON array, not {type(aunts).__name__}")
        if len(aunts) > MAX_AUNTS_LIMIT:
            raise ProofError(f"expected no more than {MAX_AUNTS_LIMIT} aunts, got {len(aunts)}")
        try:
            return Proof(json_int64(obj["total"], "total"), json_int64(obj["index"], "index"),
                         json_base64(obj["leaf_hash"], "leaf_hash"),
                         [json_base64(a, f"aunts[{n}]") for n, a in enumerate(aunts)])
        except TypeError as e:          # only reachable through types _json_* let through; never for JSON
            raise ProofError(str(e)) from None

    def __eq__(self, other):
        cdef Proof o
        if not isinstance(other, Proof):
            return NotImplemented
        o = <Proof>other
        return (self.total == o.total and self.index == o.index and self.leaf_hash == o.leaf_hash
                and self.aunts == o.aunts)

    def __hash__(self):
        return hash((self.total, self.index, self.leaf_hash, self.aunts))

    def __repr__(self):
        return (f"Proof(total={self.total}, index={self.index}, leaf_hash={self.leaf_hash.hex()}, "
                f"aunts=<{len(self.aunts)} hashes>)")

    def __reduce__(self):
        return (Proof, (self.total, self.index, self.leaf_hash, self.aunts))


cdef tuple _aunts_of(list nodes, const unsigned char* hashes, const size_t* offsets, const size_t* counts,
                     int levels, size_t index):
    """The aunts of leaf `index`: the bytes objects of nodes (one per tree node, level by level), or new ones from
    hashes when nodes is None."""
    cdef Py_ssize_t n_aunts = 0, k = 0
    cdef int level
    cdef size_t i = index, at
    for level in range(levels - 1):
        if (i ^ 1) < counts[level]:
            n_aunts += 1
        i >>= 1
    cdef tuple aunts = PyTuple_New(n_aunts)
    cdef object aunt
    i = index
    for level in range(levels - 1):
        if (i ^ 1) < counts[level]:
            at = offsets[level] + (i ^ 1)
            aunt = _node_bytes(hashes, at) if nodes is None else <object>PyList_GET_ITEM(nodes, <Py_ssize_t>at)
            Py_INCREF(aunt)
            PyTuple_SET_ITEM(aunts, k, aunt)
            k += 1
        i >>= 1
    PyObject_GC_UnTrack(aunts)          # bytes only: no cycle through it (CPython untracks such tuples lazily)
    return aunts


cdef tuple proofs_of(items, Py_ssize_t only):
    """(root, proofs): every proof, or only the one for index `only` (>= 0)."""
    cdef size_t n
    cdef size_t offsets[66]
    cdef size_t counts[66]
    cdef int levels
    cdef Scratch s = leaf_hashes(items, True, False, &n)
    cdef size_t i, total
    cdef int level
    cdef bytes root_hash
    cdef list nodes
    try:
        if only >= 0 and <size_t>only >= n:
            raise IndexError(f"proof index {only} out of range for {n} items")
        if n == 0:
            return EMPTY_ROOT, []
        if n > NOGIL_BYTES // 128:
            with nogil:
                levels = all_levels(s.hashes, n, offsets, counts)
        else:
            levels = all_levels(s.hashes, n, offsets, counts)
        root_hash = PyBytes_FromStringAndSize(<char*>s.hashes + HASH_LEN * offsets[levels - 1], HASH_LEN)
        if only >= 0:
            # One proof: only its leaf hash and aunts become objects.
            return root_hash, [Proof.new(n, only, _node_bytes(s.hashes, only),
                                         _aunts_of(None, s.hashes, offsets, counts, levels, only))]
        # Every node below the root is an aunt of all the leaves under its sibling: one bytes object per node,
        # shared by the proofs (1K leaves: about 2,000 objects instead of about 11,000).
        total = offsets[levels - 1]         # the nodes below the root (none for one leaf: it is the root)
        if total == 0:
            return root_hash, [Proof.new(n, 0, root_hash, ())]
        nodes = [_node_bytes(s.hashes, i) for i in range(total)]
        return root_hash, [Proof.new(n, i, <bytes>PyList_GET_ITEM(nodes, <Py_ssize_t>i),
                                     _aunts_of(nodes, s.hashes, offsets, counts, levels, i)) for i in range(n)]
    finally:
        give_scratch(s)


cdef inline bytes _node_bytes(const unsigned char* hashes, size_t i):
    return PyBytes_FromStringAndSize(<const char*>hashes + HASH_LEN * i, HASH_LEN)


def proofs(items):
    """``(root, [Proof for each item])`` (CometBFT ``ProofsFromByteSlices``)."""
    return proofs_of(items, -1)


def proof(items, Py_ssize_t index):
    """The Proof of ``items[index]`` (IndexError if there is no such item; negative indexes are refused)."""
    if index < 0:
        raise IndexError(f"proof index {index} out of range (negative)")
    return proofs_of(items, index)[1][0]


# ---------------------------------------------------------------------------------------------------------------
# CometBFT RPC JSON fields (the Proof's JSON form; mpt.merkle.rpc reads /tx proofs with them)
# ---------------------------------------------------------------------------------------------------------------

# CometBFT's JSON fields are read by mpt.jsonrpc, as every other JSON number and byte field of mpt (hashes bare
# hex, bytes padded base64), except int64s: CometBFT's libs/json takes a string whose content Go's encoding/json
# parses as an int64, so JSON whitespace, an optional minus sign and digits without a leading zero: "3", "-0",
# " 3"; not "03", "+3", "3.0", "1e3" or non-ASCII digits (int() alone would take several of those). Plain JSON
# numbers are taken as well.
_DECIMAL = re.compile(r"[ \t\n\r]*(-?(?:0|[1-9][0-9]*))[ \t\n\r]*\Z")


cdef object json_object(obj, str what):
    if isinstance(obj, (str, bytes, bytearray)):
        try:
            obj = json.loads(obj)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            raise ProofError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(obj, Mapping):
        raise ProofError(f"{what} must be a JSON object, not {type(obj).__name__}")
    return obj


cdef object json_int64(value, str what):
    if isinstance(value, bool):
        raise ProofError(f"proof {what} must be a decimal string, not a boolean")
    if isinstance(value, int):
        number = value
    else:
        match = _DECIMAL.match(value) if isinstance(value, str) else None
        if match is None:
            raise ProofError(f"proof {what} must be a decimal string (digits, no leading zero or plus sign), "
                             f"got {value!r:.40}")
        digits = match.group(1)
        if len(digits.lstrip("-")) > 19:     # without leading zeros, 20 digits are beyond any int64
            raise ProofError(f"proof {what} {digits:.40}{'...' if len(digits) > 40 else ''} is out of range "
                             f"for an int64")
        number = int(digits)
    if number < 0:
        raise ProofError(f"negative {what.capitalize()}")
    if number > _INT64_MAX:
        raise ProofError(f"proof {what} {number} is out of range for an int64")
    return number


cdef bytes json_base64(value, str what):
    return parse_base64(value, what, error=ProofError)


cdef bytes json_hex(value, str what):
    return parse_data(value, what, prefix=False, decoded=False, error=ProofError)
