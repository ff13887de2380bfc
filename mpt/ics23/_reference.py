"""A pure-Python ICS23 verifier written from the spec, for differential tests and as the fuzz oracle.

Independent of mpt.ics23's code (its own protobuf reader, plain dicts and tuples, hashlib's SHA-256): short and
obvious rather than fast. It follows cosmos/ics23's Go semantics (v0.11 plus the main line's extra spec checks);
``verify_membership`` / ``verify_non_membership`` return True or False (never raise on bad proofs), and
``decode`` returns None where the protobuf bytes are not a valid CommitmentProof.
"""
import hashlib

# Same limits as mpt.ics23.messages (they are part of what "valid bytes" means for us).
MAX_INNER_OPS = 1024
MAX_ENTRIES = 1 << 16
MAX_GROUP_DEPTH = 64


class Invalid(Exception):
    pass


# ------------------------------------------------------------------------------------------ protobuf reading

def _varint(buf, i, end):
    value = shift = 0
    while True:
        if i >= end or shift >= 70:
            raise Invalid("bad varint")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & (2 ** 64 - 1), i
        shift += 7


def _fields(buf, start, end):
    """Yield (field number, wire type, value) of one message: value is an int, or (start, end) of a payload."""
    i = start
    while i < end:
        tag, i = _varint(buf, i, end)
        number, wire = tag >> 3, tag & 7
        if number & 0xFFFFFFFF == 0 or number & 0x80000000:
            raise Invalid("bad field number")
        if wire == 3:
            depth = 1
            while depth:
                if depth > MAX_GROUP_DEPTH:
                    raise Invalid("groups too deep")
                t, i = _varint(buf, i, end)
                if t >> 3 == 0:
                    raise Invalid("bad field number")
                w = t & 7
                if w == 3:
                    depth += 1
                elif w == 4:
                    depth -= 1
                else:
                    _, i = _scalar_value(buf, w, i, end)      # skipped: groups carry nothing ICS23 reads
            value = None
        else:
            value, i = _scalar_value(buf, wire, i, end)
        yield number & 0xFFFFFFFF, wire, value


def _scalar_value(buf, wire, i, end):
    """(value, position after it) of a field of wire type wire (not a group) at buf[i:end]: an int (varint),
    (start, end) of a payload (length-delimited), or None (fixed64 / fixed32)."""
    if wire == 0:
        return _varint(buf, i, end)
    if wire == 2:
        n, i = _varint(buf, i, end)
        if n > end - i:
            raise Invalid("length past the end")
        return (i, i + n), i + n
    if wire in (1, 5):
        size = 8 if wire == 1 else 4
        if end - i < size:
            raise Invalid("truncated fixed field")
        return None, i + size
    raise Invalid("bad wire type")


def _int32(v):
    v &= 0xFFFFFFFF
    return v - 2 ** 32 if v >= 2 ** 31 else v


def _want(wire, expected):
    if wire != expected:
        raise Invalid("wrong wire type")


def _leaf(buf, span, leaf=None):
    leaf = leaf or {"hash": 0, "prehash_key": 0, "prehash_value": 0, "length": 0, "prefix": b""}
    names = {1: "hash", 2: "prehash_key", 3: "prehash_value", 4: "length"}
    for number, wire, value in _fields(buf, *span):
        if number in names:
            _want(wire, 0)
            leaf[names[number]] = _int32(value)
        elif number == 5:
            _want(wire, 2)
            leaf["prefix"] = buf[value[0]:value[1]]
    return leaf


def _inner(buf, span):
    op = {"hash": 0, "prefix": b"", "suffix": b""}
    for number, wire, value in _fields(buf, *span):
        if number == 1:
            _want(wire, 0)
            op["hash"] = _int32(value)
        elif number in (2, 3):
            _want(wire, 2)
            op["prefix" if number == 2 else "suffix"] = buf[value[0]:value[1]]
    return op


def _exist(buf, span, compressed=False, ex=None):
    """An ExistenceProof; decoded into ex when the field was already read (protobuf merges the two)."""
    ex = ex if ex is not None else {"key": b"", "value": b"", "leaf": None, "path": []}
    for number, wire, value in _fields(buf, *span):
        if number in (1, 2):
            _want(wire, 2)
            ex["key" if number == 1 else "value"] = buf[value[0]:value[1]]
        elif number == 3:
            _want(wire, 2)
            ex["leaf"] = _leaf(buf, value, ex["leaf"])
        elif number == 4:
            if compressed and wire == 0:
                ex["path"].append(_int32(value))
            elif compressed and wire == 2:
                i = value[0]
                while i < value[1]:
                    v, i = _varint(buf, i, value[1])
                    ex["path"].append(_int32(v))
            elif not compressed and wire == 2:
                ex["path"].append(_inner(buf, value))
            else:
                raise Invalid("wrong wire type")
            if len(ex["path"]) > MAX_INNER_OPS:
                raise Invalid("too many inner ops")
    return ex


def _nonexist(buf, span, compressed=False):
    ne = {"key": b"", "left": None, "right": None}
    for number, wire, value in _fields(buf, *span):
        if number == 1:
            _want(wire, 2)
            ne["key"] = buf[value[0]:value[1]]
        elif number in (2, 3):
            _want(wire, 2)
            side = "left" if number == 2 else "right"
            ne[side] = _exist(buf, value, compressed, ne[side])
    return ne


def _entry(buf, span, compressed):
    kind = body = None
    for number, wire, value in _fields(buf, *span):
        if number in (1, 2):
            _want(wire, 2)
            kind = "exist" if number == 1 else "nonexist"
            body = _exist(buf, value, compressed) if number == 1 else _nonexist(buf, value, compressed)
    return kind, body


def decode(data):
    """A CommitmentProof as ("exist" | "nonexist" | "batch" | "compressed" | None, body), or None if invalid."""
    buf = bytes(data)
    try:
        kind = body = None
        for number, wire, value in _fields(buf, 0, len(buf)):
            if number == 1:
                _want(wire, 2)
                kind, body = "exist", _exist(buf, value)
            elif number == 2:
                _want(wire, 2)
                kind, body = "nonexist", _nonexist(buf, value)
            elif number in (3, 4):
                _want(wire, 2)
                compressed = number == 4
                entries, lookup = [], []
                for n2, w2, v2 in _fields(buf, *value):
                    if n2 == 1:
                        _want(w2, 2)
                        entries.append(_entry(buf, v2, compressed))
                        if len(entries) > MAX_ENTRIES:
                            raise Invalid("too many entries")
                    elif n2 == 2 and compressed:
                        _want(w2, 2)
                        lookup.append(_inner(buf, v2))
                        if len(lookup) > MAX_ENTRIES:
                            raise Invalid("too many lookup ops")
                kind, body = ("compressed", (entries, lookup)) if compressed else ("batch", entries)
        return kind, body
    except Invalid:
        return None


# ---------------------------------------------------------------------------------------------- hashing

def _ripemd(data):
    try:
        return hashlib.new("ripemd160", data).digest()
    except ValueError:
        from Crypto.Hash import RIPEMD160
        return RIPEMD160.new(data).digest()


def _keccak(data):
    from Crypto.Hash import keccak
    return keccak.new(data=data, digest_bits=256).digest()


HASHES = {
    1: lambda d: hashlib.sha256(d).digest(),
    2: lambda d: hashlib.sha512(d).digest(),
    3: _keccak,
    4: _ripemd,
    5: lambda d: _ripemd(hashlib.sha256(d).digest()),
    6: lambda d: hashlib.new("sha512_256", d).digest(),
    7: lambda d: hashlib.blake2b(d).digest(),
    8: lambda d: hashlib.blake2s(d).digest(),
}


def do_hash(op, data):
    if op not in HASHES:
        raise Invalid("unsupported hash")
    return HASHES[op](data)


def _length_prefixed(op, data):
    n = len(data)
    if op == 0:
        return data
    if op == 1:
        out = bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out) + bytes([n]) + data
    if op in (7, 8):
        if n != (32 if op == 7 else 64):
            raise Invalid("wrong length")
        return data
    sizes = {3: (4, "big"), 4: (4, "little"), 5: (8, "big"), 6: (8, "little")}
    if op not in sizes:
        raise Invalid("unsupported length op")
    size, order = sizes[op]
    return (n % 2 ** (8 * size)).to_bytes(size, order) + data


def leaf_hash(leaf, key, value):
    if not key or not value:
        raise Invalid("empty key or value")
    pk = key if leaf["prehash_key"] == 0 else do_hash(leaf["prehash_key"], key)
    pv = value if leaf["prehash_value"] == 0 else do_hash(leaf["prehash_value"], value)
    return do_hash(leaf["hash"], leaf["prefix"] + _length_prefixed(leaf["length"], pk)
                   + _length_prefixed(leaf["length"], pv))


def root_of(ex, child_size):
    if ex["leaf"] is None:
        raise Invalid("no leaf")
    h = leaf_hash(ex["leaf"], ex["key"], ex["value"])
    for op in ex["path"]:
        h = do_hash(op["hash"], op["prefix"] + h + op["suffix"])
        if child_size is not None and len(h) > child_size >= 32:
            raise Invalid("hash longer than a child")
    return h


# ---------------------------------------------------------------------------------------------- specs

def spec(leaf, child_order, child_size, min_prefix, max_prefix, empty_child, inner_hash, max_depth=0,
         min_depth=0, prehash_compare=False):
    return {"leaf": leaf, "child_order": list(child_order), "child_size": child_size, "min_prefix": min_prefix,
            "max_prefix": max_prefix, "empty_child": empty_child, "inner_hash": inner_hash,
            "max_depth": max_depth, "min_depth": min_depth, "prehash_compare": prehash_compare}


_LEAF = {"hash": 1, "prehash_key": 0, "prehash_value": 1, "length": 1, "prefix": b"\x00"}
IAVL = spec(_LEAF, [0, 1], 33, 4, 12, b"", 1)
TENDERMINT = spec(_LEAF, [0, 1], 32, 1, 1, b"", 1)
SMT = spec({"hash": 1, "prehash_key": 1, "prehash_value": 1, "length": 0, "prefix": b"\x00"}, [0, 1], 32, 1, 1,
           bytes(32), 1, max_depth=256, prehash_compare=True)


def from_proof_spec(ps):
    """This module's spec dict from an mpt.ics23.ProofSpec (read through its attributes only)."""
    lf = ps.leaf_spec
    ins = ps.inner_spec
    return spec({"hash": int(lf.hash), "prehash_key": int(lf.prehash_key), "prehash_value": int(lf.prehash_value),
                 "length": int(lf.length), "prefix": bytes(lf.prefix)},
                [int(c) for c in ins.child_order], ins.child_size, ins.min_prefix_length, ins.max_prefix_length,
                bytes(ins.empty_child), int(ins.hash), ps.max_depth, ps.min_depth, ps.prehash_key_before_comparison)


def _same_shape(a, b):
    """Go SpecEquals."""
    la, lb = a["leaf"], b["leaf"]
    return (all(la[k] == lb[k] for k in ("hash", "prehash_key", "prehash_value", "length"))
            and all(a[k] == b[k] for k in ("inner_hash", "min_prefix", "max_prefix", "child_size"))
            and len(a["child_order"]) == len(b["child_order"]))


def _zigzag_varints(data, count):
    """count Go binary.ReadVarint values from data, and what is left; Invalid on a short or overlong one."""
    out = []
    i = 0
    for _ in range(count):
        u = shift = 0
        for j in range(11):
            if j == 10 or i >= len(data):
                raise Invalid("bad IAVL varint")
            b = data[i]
            i += 1
            if j == 9 and b > 1:
                raise Invalid("IAVL varint overflow")
            u |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(-(u >> 1) - 1 if u & 1 else u >> 1)
    return out, len(data) - i


def _iavl_ok(prefix, hash_op, layer):
    try:
        (height, size, version), rest = _zigzag_varints(prefix, 3)
    except Invalid:
        return False
    if height < 0 or height < layer or size < 0 or version < 0:
        return False
    if layer == 0:
        return rest == 0
    return rest in (1, 34) and hash_op == 1


def check_exist(ex, sp):
    """Go ExistenceProof.CheckAgainstSpec, as a bool."""
    lf, want = ex["leaf"], sp["leaf"]
    if lf is None:
        return False
    iavl = _same_shape(sp, IAVL)
    if iavl and not _iavl_ok(lf["prefix"], lf["hash"], 0):
        return False
    if any(lf[k] != want[k] for k in ("hash", "prehash_key", "prehash_value", "length")):
        return False
    if not lf["prefix"].startswith(want["prefix"]):
        return False
    depth = len(ex["path"])
    if sp["min_depth"] > 0 and depth < sp["min_depth"]:
        return False
    if depth > (sp["max_depth"] or 128):
        return False
    tendermint = _same_shape(sp, TENDERMINT)
    for layer, op in enumerate(ex["path"], 1):
        p, s = op["prefix"], op["suffix"]
        if op["hash"] != sp["inner_hash"]:
            return False
        if iavl and not _iavl_ok(p, op["hash"], layer):
            return False
        if tendermint and (not p or p[0] != 1 or (s and p != b"\x01")):
            return False
        if p.startswith(want["prefix"]) or len(p) < sp["min_prefix"]:
            return False
        if len(p) > sp["max_prefix"] + (len(sp["child_order"]) - 1) * sp["child_size"]:
            return False
        if sp["child_size"] <= 0 or sp["max_prefix"] >= sp["min_prefix"] + sp["child_size"]:
            return False
        if len(s) % sp["child_size"]:
            return False
    return True


def verify_exist(ex, sp, root, key, value):
    try:
        return (check_exist(ex, sp) and ex["key"] == key and ex["value"] == value
                and root_of(ex, sp["child_size"]) == root)
    except Invalid:
        return False


# --------------------------------------------------------------------------------------- neighbour checks

def _pos(sp, branch):
    order = sp["child_order"]
    if branch not in order:
        raise Invalid("branch missing from child_order")
    return order.index(branch)


def _padding(sp, branch):
    idx = _pos(sp, branch)
    return (idx * sp["child_size"] + sp["min_prefix"], idx * sp["child_size"] + sp["max_prefix"],
            (len(sp["child_order"]) - 1 - idx) * sp["child_size"])


def _fits(op, pad):
    return pad[0] <= len(op["prefix"]) <= pad[1] and len(op["suffix"]) == pad[2]


def _branch(sp, op):
    for b in range(len(sp["child_order"])):
        if _fits(op, _padding(sp, b)):
            return b
    return None


def _empty_at(sp, data, start):
    cs = sp["child_size"]
    return start + cs <= len(data) and data[start:start + cs] == sp["empty_child"]


def _leftmost(sp, path):
    pad = _padding(sp, 0)          # first, as Go does: a spec without branch 0 fails even for an empty path
    for op in path:
        if _fits(op, pad):
            continue
        b = _branch(sp, op)
        if not b:
            return False
        base = len(op["prefix"]) - b * sp["child_size"]
        if base < 0 or not all(_empty_at(sp, op["prefix"], base + _pos(sp, i) * sp["child_size"]) for i in range(b)):
            return False
    return True


def _rightmost(sp, path):
    last = len(sp["child_order"]) - 1
    pad = _padding(sp, last)
    for op in path:
        if _fits(op, pad):
            continue
        b = _branch(sp, op)
        if b is None or b == last or len(op["suffix"]) != (last - b) * sp["child_size"]:
            return False
        if not all(_empty_at(sp, op["suffix"], _pos(sp, i) * sp["child_size"]) for i in range(last - b)):
            return False
    return True


def _neighbours(sp, left, right):
    i, j = len(left) - 1, len(right) - 1
    while i >= 0 and j >= 0 and left[i]["prefix"] == right[j]["prefix"] and left[i]["suffix"] == right[j]["suffix"]:
        i, j = i - 1, j - 1
    if i < 0 or j < 0:
        return False
    lb, rb = _branch(sp, left[i]), _branch(sp, right[j])
    if lb is None or rb is None or rb != lb + 1:
        return False
    return _rightmost(sp, left[:i]) and _leftmost(sp, right[:j])


def _cmp_key(sp, key):
    if not sp["prehash_compare"] or sp["leaf"]["prehash_key"] == 0:
        return key
    try:
        return do_hash(sp["leaf"]["prehash_key"], key)
    except Invalid:
        return b""


def verify_nonexist(ne, sp, root, key):
    left, right = ne["left"], ne["right"]
    if left is None and right is None:
        return False
    if left is not None and not verify_exist(left, sp, root, left["key"], left["value"]):
        return False
    if right is not None and not verify_exist(right, sp, root, right["key"], right["value"]):
        return False
    k = _cmp_key(sp, key)
    if right is not None and not k < _cmp_key(sp, right["key"]):
        return False
    if left is not None and not k > _cmp_key(sp, left["key"]):
        return False
    try:
        if left is None:
            return _leftmost(sp, right["path"])
        if right is None:
            return _rightmost(sp, left["path"])
        return _neighbours(sp, left["path"], right["path"])
    except Invalid:
        return False


# ------------------------------------------------------------------------------------------------- API

def _expand(decoded):
    """The entries to search: [(kind, body)] after decompressing; Invalid for an invalid compressed batch."""
    kind, body = decoded
    if kind in ("exist", "nonexist"):
        return [(kind, body)]
    if kind == "batch":
        return [entry for entry in body if entry[0] is not None]
    if kind == "compressed":
        entries, lookup = body
        out = []

        def expand(ex):
            if ex is None:
                return None
            if any(not 0 <= i < len(lookup) for i in ex["path"]):
                raise Invalid("lookup index out of range")
            return dict(ex, path=[lookup[i] for i in ex["path"]])

        for kind2, b2 in entries:
            if kind2 is None:
                raise Invalid("empty compressed entry")
            if kind2 == "exist":
                out.append(("exist", expand(b2)))
            else:
                out.append(("nonexist", dict(b2, left=expand(b2["left"]), right=expand(b2["right"]))))
        return out
    return []


def _decoded_entries(proof_bytes):
    """(the proof's outer kind, its entries to search), or None when the bytes do not decode or a compressed
    batch does not expand: both verifiers then answer False."""
    decoded = decode(proof_bytes)
    if decoded is None:
        return None
    try:
        return decoded[0], _expand(decoded)
    except Invalid:
        return None


def verify_membership(sp, root, proof_bytes, key, value):
    found = _decoded_entries(proof_bytes)
    if found is None:
        return False
    outer_kind, entries = found
    if outer_kind == "exist":
        candidates = [b for k, b in entries if b["key"] == key]
    else:
        candidates = [b for k, b in entries if k == "exist" and b["key"] == key][:1]
    return bool(candidates) and verify_exist(candidates[0], sp, root, key, value)


def verify_non_membership(sp, root, proof_bytes, key):
    found = _decoded_entries(proof_bytes)
    if found is None:
        return False
    _, entries = found
    k = _cmp_key(sp, key)
    for kind, ne in entries:
        if kind != "nonexist":
            continue
        if ((ne["left"] is None or _cmp_key(sp, ne["left"]["key"]) < k)
                and (ne["right"] is None or _cmp_key(sp, ne["right"]["key"]) > k)):
            return verify_nonexist(ne, sp, root, key)
    return False
