"""The ICS23 verifier: hashing, leaf and inner ops, spec checks, membership and non-membership.

The entry points (mpt.ics23.verify: ``verify_membership``, ``verify_non_membership``, ``calculate_root``) try the
compiled wire reader first (mpt.ics23.wire: a proof it proves from the wire bytes is accepted there) and leave
everything else to this module, which decides on the message objects, with the error text of that one decode.
The messages get their Go methods from here (register_verifier below).

Mirrors cosmos/ics23's Go (``ops.go``, ``proof.go``, ``ics23.go``, ``compress.go``; v0.11 with the
``MaxPrefixLength < MinPrefixLength + ChildSize`` guard and the Tendermint inner-prefix check of its main line):
the same proofs are accepted, and a refusal raises ProofError with Go's error text where Go has one. Where Go
panics (neighbour checks on paths that never diverge, a child that no padding fits, a lookup index out of range,
a branch missing from child_order) we raise ProofError instead.
"""
import hashlib
import sys
from typing import List, Optional

from mpt.core._keccak import keccak256
from mpt.core._sha256 import sha256
from mpt.core.uvarint import uvarint
from mpt.errors import ProofError
from mpt.core.bytes_like import bytes_arg
from mpt.ics23.messages import (
    BatchEntry, BatchProof, CommitmentProof, CompressedExistenceProof, ExistenceProof, HashOp, InnerOp, InnerSpec,
    LeafOp, LengthOp, NonExistenceProof, ProofSpec, commitment_bytes, register_verifier,
)
from mpt.ics23.specs import IAVL_SPEC, SMT_SPEC, TENDERMINT_SPEC  # noqa: F401 - importable from here as before
from mpt.ics23.wire import decode_commitment

# Go's ExistenceProof.CheckAgainstSpec reads max_depth 0 as this.
DEFAULT_MAX_DEPTH = 128


# --------------------------------------------------------------------------------------------------- hashes

def _hashlib_or_pycryptodome(hashlib_name: str, title: str, pycryptodome_digest):
    """The digest function of hashlib's hashlib_name, falling back to pycryptodome_digest(data) where hashlib
    lacks it: OpenSSL 3 moved RIPEMD-160 to its legacy provider, which many builds leave out, and some builds
    lack SHA-512/256; pycryptodome (the "ics23" extra) has both. Without either: ProofError naming title."""
    def digest(data: bytes) -> bytes:
        try:
            return hashlib.new(hashlib_name, data).digest()
        except ValueError:
            try:
                return pycryptodome_digest(data)
            except ImportError:
                raise ProofError("%s is unavailable: this Python's hashlib lacks it; "
                                 "pip install 'mpt-engine[ics23]' (pycryptodome)" % title) from None
    return digest


def _pycryptodome_ripemd160(data: bytes) -> bytes:
    from Crypto.Hash import RIPEMD160
    return RIPEMD160.new(data).digest()


def _pycryptodome_sha512_256(data: bytes) -> bytes:
    from Crypto.Hash import SHA512
    return SHA512.new(data, truncate="256").digest()


_ripemd160 = _hashlib_or_pycryptodome("ripemd160", "RIPEMD-160", _pycryptodome_ripemd160)
_sha512_256 = _hashlib_or_pycryptodome("sha512_256", "SHA-512/256", _pycryptodome_sha512_256)


_HASHES = {
    HashOp.SHA256: sha256,
    HashOp.SHA512: lambda data: hashlib.sha512(data).digest(),
    # Go's ics23 refuses KECCAK256 ("unsupported hashop: 3"); the Rust and TypeScript ones hash it. We follow
    # them: a spec that names it (none of the standard ones does) gets Ethereum's Keccak-256.
    HashOp.KECCAK256: keccak256,
    HashOp.RIPEMD160: _ripemd160,
    HashOp.BITCOIN: lambda data: _ripemd160(sha256(data)),
    HashOp.SHA512_256: _sha512_256,
    HashOp.BLAKE2B_512: lambda data: hashlib.blake2b(data, digest_size=64).digest(),
    HashOp.BLAKE2S_256: lambda data: hashlib.blake2s(data, digest_size=32).digest(),
    # BLAKE3: Go's ics23 has no implementation ("unsupported hashop: 9"), and so neither do we.
}


def do_hash(hash_op, data) -> bytes:
    """hash_op applied to data (Go ``doHash``): ProofError ``unsupported hashop: N`` for NO_HASH, BLAKE3 and
    numbers ics23 does not define."""
    fn = _HASHES.get(hash_op)
    if fn is None:
        if isinstance(hash_op, bool) or not isinstance(hash_op, int):
            raise TypeError("hash_op must be a HashOp or int, not %s" % type(hash_op).__name__)
        raise ProofError("unsupported hashop: %d" % int(hash_op))
    if type(data) is not bytes:
        data = bytes_arg(data, "data")
    return fn(data)


def _hash_or_noop(hash_op, data: bytes) -> bytes:
    if hash_op == HashOp.NO_HASH:
        return data
    return do_hash(hash_op, data)


def _do_length(length_op, data: bytes) -> bytes:
    n = len(data)
    if length_op == LengthOp.NO_PREFIX:
        return data
    if length_op == LengthOp.VAR_PROTO:
        return uvarint(n) + data
    if length_op == LengthOp.REQUIRE_32_BYTES:
        if n != 32:
            raise ProofError("data was %d bytes, not 32" % n)
        return data
    if length_op == LengthOp.REQUIRE_64_BYTES:
        if n != 64:
            raise ProofError("data was %d bytes, not 64" % n)
        return data
    if length_op == LengthOp.FIXED32_BIG:
        return (n & 0xFFFFFFFF).to_bytes(4, "big") + data
    if length_op == LengthOp.FIXED32_LITTLE:
        return (n & 0xFFFFFFFF).to_bytes(4, "little") + data
    if length_op == LengthOp.FIXED64_BIG:
        return n.to_bytes(8, "big") + data
    if length_op == LengthOp.FIXED64_LITTLE:
        return n.to_bytes(8, "little") + data
    # VAR_RLP is declared by proofs.proto but implemented by no ics23 library.
    raise ProofError("unsupported lengthop: %d" % int(length_op))


def _prepare_leaf_data(hash_op, length_op, data: bytes) -> bytes:
    return _do_length(length_op, _hash_or_noop(hash_op, data))


# ------------------------------------------------------------------------------------------------ ops apply

def apply_leaf(op: LeafOp, key: bytes, value: bytes) -> bytes:
    if not key:
        raise ProofError("leaf op needs key")
    if not value:
        raise ProofError("leaf op needs value")
    try:
        pkey = _prepare_leaf_data(op.prehash_key, op.length, key)
    except ProofError as exc:
        raise ProofError("prehash key, %s" % exc) from None
    try:
        pvalue = _prepare_leaf_data(op.prehash_value, op.length, value)
    except ProofError as exc:
        raise ProofError("prehash value, %s" % exc) from None
    return do_hash(op.hash, op.prefix + pkey + pvalue)


def apply_inner(op: InnerOp, child: bytes) -> bytes:
    if not child:
        raise ProofError("inner op needs child value")
    return do_hash(op.hash, op.prefix + child + op.suffix)


# ------------------------------------------------------------------------------------------- spec checks

def spec_equals(a: ProofSpec, b: ProofSpec) -> bool:
    """Go ``ProofSpec.SpecEquals`` (the comparison is the spec's own: ``ProofSpec.spec_equals``)."""
    return a.spec_equals(b)


def _read_go_varint(data: bytes, pos: int):
    """Go ``binary.ReadVarint`` on a bytes.Reader at pos: (value, new pos) or (None, error text)."""
    x = 0
    shift = 0
    for i in range(10):
        if pos + i >= len(data):
            return None, ("unexpected EOF" if i > 0 else "EOF")
        b = data[pos + i]
        if b < 0x80:
            if i == 9 and b > 1:
                return None, "binary: varint overflows a 64-bit integer"
            ux = x | (b << shift)
            value = ux >> 1
            if ux & 1:
                value = ~value
            return value, pos + i + 1
        x |= (b & 0x7F) << shift
        shift += 7
    return None, "binary: varint overflows a 64-bit integer"


def _validate_iavl_ops(prefix: bytes, hash_op, layer: int) -> None:
    """Go ``validateIavlOps``: an IAVL node prefix is zigzag varints height, size, version, then (inner nodes)
    the 1-byte length of a left child's hash, or that byte plus a 32-byte sibling hash and its length byte."""
    height, pos = _read_go_varint(prefix, 0)
    if height is None:
        raise ProofError("failed to read IAVL height varint: %s" % pos)
    if height < 0 or height < layer:
        raise ProofError("IAVL height (%d) must be non-negative and greater than or equal to the layer number (%d)"
                         % (height, layer))
    size, pos2 = _read_go_varint(prefix, pos)
    if size is None:
        raise ProofError("failed to read IAVL size varint: %s" % pos2)
    if size < 0:
        raise ProofError("IAVL size must be non-negative")
    version, pos3 = _read_go_varint(prefix, pos2)
    if version is None:
        raise ProofError("failed to read IAVL version varint: %s" % pos3)
    if version < 0:
        raise ProofError("IAVL version must be non-negative")
    remaining = len(prefix) - pos3
    if layer == 0:
        if remaining != 0:
            raise ProofError("expected remaining prefix length to be 0, got: %d" % remaining)
    else:
        if remaining != 1 and remaining != 34:
            raise ProofError("remainder of prefix must be of length 1 or 34, got: %d" % remaining)
        if hash_op != HashOp.SHA256:
            raise ProofError("IAVL hash op must be SHA256")


def _go_bytes(data: bytes) -> str:
    """fmt's %v of a []byte: [1 2 3]."""
    return "[" + " ".join(str(b) for b in data) + "]"


def _validate_tendermint_ops(op: InnerOp) -> None:
    """Go ``validateTendermintOps``: an inner node of the simple tree starts with the 0x01 inner-node prefix."""
    if not op.prefix:
        raise ProofError("inner op prefix must not be empty")
    if op.suffix and op.prefix != b"\x01":
        raise ProofError("expected inner op prefix: [1], got: %s" % _go_bytes(op.prefix))
    if not op.prefix.startswith(b"\x01"):
        raise ProofError("expected inner op prefix to begin with: [1], got: %s" % _go_bytes(op.prefix[:1]))


def check_leaf_against_spec(op: LeafOp, spec: Optional[ProofSpec]) -> None:
    if spec is None:
        raise ProofError("op and spec must be non-nil")
    lspec = spec.leaf_spec
    if lspec is None:
        raise ProofError("spec.LeafSpec must be non-nil")
    if spec_equals(spec, IAVL_SPEC):
        _validate_iavl_ops(op.prefix, op.hash, 0)
    if op.hash != lspec.hash:
        raise ProofError("unexpected HashOp: %d" % op.hash)
    if op.prehash_key != lspec.prehash_key:
        raise ProofError("unexpected PrehashKey: %d" % op.prehash_key)
    if op.prehash_value != lspec.prehash_value:
        raise ProofError("unexpected PrehashValue: %d" % op.prehash_value)
    if op.length != lspec.length:
        raise ProofError("unexpected LengthOp: %d" % op.length)
    if not op.prefix.startswith(lspec.prefix):
        raise ProofError("leaf Prefix doesn't start with %s" % lspec.prefix.hex().upper())


def check_inner_against_spec(op: InnerOp, spec: Optional[ProofSpec], layer: int) -> None:
    if spec is None:
        raise ProofError("op and spec must be both non-nil")
    ispec = spec.inner_spec
    if ispec is None:
        raise ProofError("spec.InnerSpec must be non-nil")
    if spec.leaf_spec is None:
        raise ProofError("spec.LeafSpec must be non-nil")
    if op.hash != ispec.hash:
        raise ProofError("unexpected HashOp: %d" % op.hash)
    if spec_equals(spec, IAVL_SPEC):
        _validate_iavl_ops(op.prefix, op.hash, layer)
    if spec_equals(spec, TENDERMINT_SPEC):
        _validate_tendermint_ops(op)
    leaf_prefix = spec.leaf_spec.prefix
    if op.prefix.startswith(leaf_prefix):
        raise ProofError("inner Prefix starts with %s" % leaf_prefix.hex().upper())
    if len(op.prefix) < ispec.min_prefix_length:
        raise ProofError("innerOp prefix too short (%d)" % len(op.prefix))
    max_left_child_bytes = (len(ispec.child_order) - 1) * ispec.child_size
    if len(op.prefix) > ispec.max_prefix_length + max_left_child_bytes:
        raise ProofError("innerOp prefix too long (%d)" % len(op.prefix))
    if ispec.child_size <= 0:
        raise ProofError("spec.InnerSpec.ChildSize must be >= 1")
    if ispec.max_prefix_length >= ispec.min_prefix_length + ispec.child_size:
        raise ProofError("spec.InnerSpec.MaxPrefixLength must be < spec.InnerSpec.MinPrefixLength + "
                         "spec.InnerSpec.ChildSize")
    if len(op.suffix) % ispec.child_size != 0:
        raise ProofError("InnerOp suffix malformed")


def check_existence_against_spec(proof: ExistenceProof, spec: Optional[ProofSpec]) -> None:
    leaf = proof.leaf
    if leaf is None:
        raise ProofError("existence Proof needs defined LeafOp")
    try:
        check_leaf_against_spec(leaf, spec)
    except ProofError as exc:
        raise ProofError("leaf, %s" % exc) from None
    assert spec is not None         # refused by check_leaf_against_spec
    depth = len(proof.path)
    if spec.min_depth > 0 and depth < spec.min_depth:
        raise ProofError("innerOps depth too short: %d" % depth)
    max_depth = spec.max_depth or DEFAULT_MAX_DEPTH
    if depth > max_depth:
        raise ProofError("innerOps depth too long: %d" % depth)
    for layer, inner in enumerate(proof.path, 1):
        try:
            check_inner_against_spec(inner, spec, layer)
        except ProofError as exc:
            raise ProofError("inner, %s" % exc) from None


# ------------------------------------------------------------------------------------------------- roots

def calculate_existence_root(proof: ExistenceProof, spec: Optional[ProofSpec]) -> bytes:
    if proof.leaf is None:
        raise ProofError("existence Proof needs defined LeafOp")
    try:
        res = apply_leaf(proof.leaf, proof.key, proof.value)
    except ProofError as exc:
        raise ProofError("leaf, %s" % exc) from None
    for step in proof.path:
        try:
            res = apply_inner(step, res)
        except ProofError as exc:
            raise ProofError("inner, %s" % exc) from None
        if spec is not None and spec.inner_spec is not None:
            child_size = spec.inner_spec.child_size
            if len(res) > child_size and child_size >= 32:
                # Go wraps a nil error here ("inner, %!w(<nil>)"); we say what happened.
                raise ProofError("inner, hash output of %d bytes is longer than the child size %d"
                                 % (len(res), child_size))
    return res


def calculate_nonexistence_root(proof: NonExistenceProof) -> bytes:
    if proof.left is not None:
        return calculate_existence_root(proof.left, None)
    if proof.right is not None:
        return calculate_existence_root(proof.right, None)
    raise ProofError("nonexistence proof has empty Left and Right proof")


def calculate_commitment_root(proof: CommitmentProof) -> bytes:
    """Go ``CommitmentProof.Calculate``: the root of the first proof inside."""
    proof = decompress(proof)
    if proof.exist is not None:
        return calculate_existence_root(proof.exist, None)
    if proof.nonexist is not None:
        return calculate_nonexistence_root(proof.nonexist)
    if proof.batch is not None:
        entries = proof.batch.entries
        if not entries:
            raise ProofError("batch proof has empty entry")
        if entries[0].exist is not None:
            return calculate_existence_root(entries[0].exist, None)
        if entries[0].nonexist is not None:
            return calculate_nonexistence_root(entries[0].nonexist)
    raise ProofError("unrecognized proof type")


# ---------------------------------------------------------------------------------------------- verifying

def verify_existence(proof: ExistenceProof, spec: ProofSpec, root: bytes, key: bytes, value: bytes) -> bool:
    """Go ``ExistenceProof.Verify``: True, or ProofError."""
    check_existence_against_spec(proof, spec)
    if key != proof.key:
        raise ProofError("provided key doesn't match proof")
    if value != proof.value:
        raise ProofError("provided value doesn't match proof")
    try:
        calc = calculate_existence_root(proof, spec)
    except ProofError as exc:
        raise ProofError("error calculating root, %s" % exc) from None
    if root != calc:
        raise ProofError("calculated root doesn't match provided root")
    return True


def _key_for_comparison(spec: ProofSpec, key: bytes) -> bytes:
    if not spec.prehash_key_before_comparison:
        return key
    if spec.leaf_spec is None:
        raise ProofError("spec.LeafSpec must be non-nil")
    try:
        return _hash_or_noop(spec.leaf_spec.prehash_key, key)
    except ProofError:
        return b""     # Go ignores the error and compares a nil slice


def _position(order, branch: int) -> int:
    """Go ``getPosition`` (which panics where this raises)."""
    if branch < 0 or branch >= len(order):
        raise ProofError("invalid branch: %d" % branch)
    for i, item in enumerate(order):
        if item == branch:
            return i
    raise ProofError("branch %d not found in order %s" % (branch, _go_bytes(order)))


def _padding(spec: InnerSpec, branch: int):
    idx = _position(spec.child_order, branch)
    prefix = idx * spec.child_size
    return (prefix + spec.min_prefix_length, prefix + spec.max_prefix_length,
            (len(spec.child_order) - 1 - idx) * spec.child_size)


def _has_padding(op: InnerOp, min_prefix: int, max_prefix: int, suffix: int) -> bool:
    return min_prefix <= len(op.prefix) <= max_prefix and len(op.suffix) == suffix


def _order_from_padding(spec: InnerSpec, op: InnerOp) -> Optional[int]:
    for branch in range(len(spec.child_order)):
        if _has_padding(op, *_padding(spec, branch)):
            return branch
    return None


def _left_branches_are_empty(spec: InnerSpec, op: InnerOp) -> bool:
    idx = _order_from_padding(spec, op)
    if idx is None or idx == 0:
        return False
    actual_prefix = len(op.prefix) - idx * spec.child_size
    if actual_prefix < 0:
        return False
    for i in range(idx):
        start = actual_prefix + _position(spec.child_order, i) * spec.child_size
        # Go slices op.Prefix[start:start+ChildSize] and panics past its end: a refusal here.
        if start + spec.child_size > len(op.prefix) or spec.empty_child != op.prefix[start:start + spec.child_size]:
            return False
    return True


def _right_branches_are_empty(spec: InnerSpec, op: InnerOp) -> bool:
    idx = _order_from_padding(spec, op)
    if idx is None:
        return False
    right_branches = len(spec.child_order) - 1 - idx
    if right_branches == 0:
        return False
    if len(op.suffix) != right_branches * spec.child_size:
        return False
    for i in range(right_branches):
        start = _position(spec.child_order, i) * spec.child_size
        if start + spec.child_size > len(op.suffix) or spec.empty_child != op.suffix[start:start + spec.child_size]:
            return False
    return True


def is_left_most(spec: InnerSpec, path: List[InnerOp]) -> bool:
    padding = _padding(spec, 0)
    return all(_has_padding(step, *padding) or _left_branches_are_empty(spec, step) for step in path)


def is_right_most(spec: InnerSpec, path: List[InnerOp]) -> bool:
    padding = _padding(spec, len(spec.child_order) - 1)
    return all(_has_padding(step, *padding) or _right_branches_are_empty(spec, step) for step in path)


def _is_left_step(spec: InnerSpec, left: InnerOp, right: InnerOp) -> bool:
    left_idx = _order_from_padding(spec, left)
    right_idx = _order_from_padding(spec, right)
    if left_idx is None or right_idx is None:
        raise ProofError("cannot find any valid spacing for this node")
    return right_idx == left_idx + 1


def is_left_neighbor(spec: InnerSpec, left: List[InnerOp], right: List[InnerOp]) -> bool:
    """Go ``IsLeftNeighbor``: below their common top part, left is the rightmost path of the branch just left of
    right's, which is leftmost. (Go panics on paths that never diverge; that is a ProofError here.)"""
    i, j = len(left) - 1, len(right) - 1
    if i < 0 or j < 0:
        raise ProofError("neighbour proofs have no inner ops to compare")
    while left[i].prefix == right[j].prefix and left[i].suffix == right[j].suffix:
        i -= 1
        j -= 1
        if i < 0 or j < 0:
            raise ProofError("neighbour proofs share their whole path")
    if not _is_left_step(spec, left[i], right[j]):
        return False
    return is_right_most(spec, left[:i]) and is_left_most(spec, right[:j])


def _verified_neighbour_key(side: Optional[ExistenceProof], name: str, spec: ProofSpec, root: bytes):
    """The key of one side of a non-existence proof once that side verifies under root (ProofError "<name>
    proof, ..." otherwise); None when the side is missing."""
    if side is None:
        return None
    try:
        verify_existence(side, spec, root, side.key, side.value)
    except ProofError as exc:
        raise ProofError("%s proof, %s" % (name, exc)) from None
    return side.key


def verify_nonexistence(proof: NonExistenceProof, spec: ProofSpec, root: bytes, key: bytes) -> bool:
    """Go ``NonExistenceProof.Verify``: True, or ProofError."""
    left_key = _verified_neighbour_key(proof.left, "left", spec, root)
    right_key = _verified_neighbour_key(proof.right, "right", spec, root)
    if left_key is None and right_key is None:
        raise ProofError("both left and right proofs missing")
    if right_key is not None and _key_for_comparison(spec, key) >= _key_for_comparison(spec, right_key):
        raise ProofError("key is not left of right proof")
    if left_key is not None and _key_for_comparison(spec, key) <= _key_for_comparison(spec, left_key):
        raise ProofError("key is not right of left proof")
    if spec.inner_spec is None:
        raise ProofError("spec.InnerSpec must be non-nil")
    if left_key is None:
        if not is_left_most(spec.inner_spec, proof.right.path):
            raise ProofError("left proof missing, right proof must be left-most")
    elif right_key is None:
        if not is_right_most(spec.inner_spec, proof.left.path):
            raise ProofError("right proof missing, left proof must be right-most")
    elif not is_left_neighbor(spec.inner_spec, proof.left.path, proof.right.path):
        # Go's text for this case, although it is about neighbours.
        raise ProofError("right proof missing, left proof must be right-most")
    return True


# ------------------------------------------------------------------------------------- compressed batches

def _decompress_exist(exist: Optional[CompressedExistenceProof], lookup: List[InnerOp]):
    if exist is None:
        return None
    path = []
    for step in exist.path:
        if not 0 <= step < len(lookup):
            raise ProofError("compressed proof refers to inner op %d of a lookup table of %d" % (step, len(lookup)))
        path.append(lookup[step])
    return ExistenceProof(exist.key, exist.value, exist.leaf, path)


def decompress(proof: CommitmentProof) -> CommitmentProof:
    """Go ``Decompress``: a compressed batch as a plain batch; any other proof unchanged."""
    comp = proof.compressed
    if comp is None:
        return proof
    lookup = comp.lookup_inners
    entries = []
    for centry in comp.entries:
        if centry.exist is not None:
            entries.append(BatchEntry(exist=_decompress_exist(centry.exist, lookup)))
        else:
            # Go decompresses an empty entry as a NonExistenceProof with nil sides, and dereferences a missing
            # nonexist (a panic): we refuse it.
            non = centry.nonexist
            if non is None:
                raise ProofError("compressed batch entry holds neither an existence nor a non-existence proof")
            entries.append(BatchEntry(nonexist=NonExistenceProof(
                non.key, _decompress_exist(non.left, lookup), _decompress_exist(non.right, lookup))))
    return CommitmentProof(batch=BatchProof(entries))


def _is_left(spec: ProofSpec, left: Optional[ExistenceProof], key: bytes) -> bool:
    return left is None or _key_for_comparison(spec, left.key) < _key_for_comparison(spec, key)


def _is_right(spec: ProofSpec, right: Optional[ExistenceProof], key: bytes) -> bool:
    return right is None or _key_for_comparison(spec, right.key) > _key_for_comparison(spec, key)


def existence_proof_for_key(proof: CommitmentProof, key: bytes) -> Optional[ExistenceProof]:
    """Go ``getExistProofForKey`` (after Decompress)."""
    if proof.exist is not None:
        return proof.exist if proof.exist.key == key else None
    if proof.batch is not None:
        for entry in proof.batch.entries:
            if entry.exist is not None and entry.exist.key == key:
                return entry.exist
    return None


def nonexistence_proof_for_key(spec: ProofSpec, proof: CommitmentProof, key: bytes) -> Optional[NonExistenceProof]:
    """Go ``getNonExistProofForKey`` (after Decompress)."""
    candidates = []
    if proof.nonexist is not None:
        candidates = [proof.nonexist]
    elif proof.batch is not None:
        candidates = [entry.nonexist for entry in proof.batch.entries if entry.nonexist is not None]
    for np in candidates:
        if _is_left(spec, np.left, key) and _is_right(spec, np.right, key):
            return np
    return None


# ---------------------------------------------------------------------------------------------- the API
# The object verifiers behind the entry points of mpt.ics23.verify, which try the wire reader first.

def _check_spec(spec) -> ProofSpec:
    if not isinstance(spec, ProofSpec):
        raise TypeError("spec must be a ProofSpec (IAVL_SPEC, TENDERMINT_SPEC, ...), not %s" % type(spec).__name__)
    return spec


def _commitment(proof) -> CommitmentProof:
    if isinstance(proof, CommitmentProof):
        return proof
    if isinstance(proof, ExistenceProof):
        return CommitmentProof(exist=proof)
    if isinstance(proof, NonExistenceProof):
        return CommitmentProof(nonexist=proof)
    return CommitmentProof.from_bytes(commitment_bytes(proof, "proof"))


def verify_membership_objects(spec, root, proof, key, value) -> bool:
    """verify_membership on the decoded messages (any proof form)."""
    _check_spec(spec)
    root = bytes_arg(root, "root")
    key = bytes_arg(key, "key")
    value = bytes_arg(value, "value")
    cp = decompress(_commitment(proof))
    ep = existence_proof_for_key(cp, key)
    if ep is None:
        raise ProofError("proof holds no existence proof for key %s" % key.hex())
    return verify_existence(ep, spec, root, key, value)


def verify_non_membership_objects(spec, root, proof, key) -> bool:
    """verify_non_membership on the decoded messages (any proof form)."""
    _check_spec(spec)
    root = bytes_arg(root, "root")
    key = bytes_arg(key, "key")
    cp = decompress(_commitment(proof))
    np = nonexistence_proof_for_key(spec, cp, key)
    if np is None:
        raise ProofError("proof holds no non-existence proof whose neighbours enclose key %s" % key.hex())
    return verify_nonexistence(np, spec, root, key)


def decode_commitment_fast(data: bytes) -> Optional[CommitmentProof]:
    """CommitmentProof.from_bytes's fast path: the compiled reader's decode of a canonical existence or
    non-existence proof, None for anything else (the schema decoder's job)."""
    return decode_commitment(data)


register_verifier(sys.modules[__name__])
