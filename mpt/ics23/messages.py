"""The ICS23 messages (cosmos/ics23 ``proofs.proto``, package ``cosmos.ics23.v1``) and their two wire forms.

The protobuf codec is our own and registers no descriptor: a second ``cosmos.ics23.v1`` descriptor in one process
clashes with other Cosmos libraries (cosmpy, ...) that ship the generated classes. Decoding follows what Go's
gogoproto ``Unmarshal`` accepts (unknown fields skipped, a repeated singular message field merged, the last of a
oneof wins, packed or unpacked repeated int32) and refuses everything else with a ProofError naming the problem:
a wrong wire type for a known field, a truncated varint or length, a length past the end, a varint longer than
10 bytes, unknown groups nested deeper than ``MAX_GROUP_DEPTH``, more than ``MAX_INNER_OPS`` inner ops in one
path or more than ``MAX_ENTRIES`` entries in one batch. Decoding walks the input once through offsets (no slice
of a message is copied), so it takes time linear in the input. Encoding is gogoproto's ``Marshal``: fields in
field-number order, proto3 defaults omitted, a present (even empty) sub-message written, packed int32 lists.

The JSON form is protojson's as in ics23's testdata: proto field names (lowerCamelCase names are read too),
bytes in base64, enums as numbers (names are read too).
"""
import base64
import binascii
import json
from enum import IntEnum
from typing import Any, Dict, Optional, Tuple

from mpt.core.uvarint import uvarint
from mpt.errors import ProofError

__all__ = [
    "HashOp", "LengthOp", "LeafOp", "InnerOp", "ExistenceProof", "NonExistenceProof", "BatchEntry", "BatchProof",
    "CompressedExistenceProof", "CompressedNonExistenceProof", "CompressedBatchEntry", "CompressedBatchProof",
    "CommitmentProof", "InnerSpec", "ProofSpec", "MAX_INNER_OPS", "MAX_ENTRIES", "MAX_GROUP_DEPTH",
]

# Go's verifier refuses more than 128 inner ops unless a spec raises max_depth (SMT: 256); decoding stops far
# above any real tree, so that 10**6 ops cost a ProofError after the first 1024, not a list of a million objects.
MAX_INNER_OPS = 1024
# Entries of one batch proof, and inner ops of a compressed batch's lookup table.
MAX_ENTRIES = 1 << 16
# Children of one InnerSpec (child_order): ics23's neighbour checks are quadratic in it; real trees have 2 or 3.
MAX_CHILD_ORDER = 256
# Unknown fields may hold groups (wire types 3 and 4); protobuf skips them, we refuse nesting deeper than this.
MAX_GROUP_DEPTH = 64


# The Go methods of these messages (``Apply``, ``Calculate``, ``Verify``, ``CheckAgainstSpec``, ``SpecEquals``,
# ``Decompress``) are ICS23's semantics, which live one layer up in the verifier (mpt.ics23.ops), and so does the
# compiled reader that decodes Go-made proofs fast (mpt.ics23.wire). The verifier lends them to the messages with
# register_verifier() when it is imported, which `import mpt.ics23` does before anything else: imports run one
# way (ops -> wire -> messages), and this module stays the messages and their codec.
_verifier = None


def register_verifier(verifier) -> None:
    """Give the messages their Go methods: verifier is mpt.ics23.ops (its apply_leaf, verify_existence, ...,
    and decode_commitment_fast, the compiled reader's decoder)."""
    global _verifier
    _verifier = verifier


def _ops():
    if _verifier is None:           # only if this module was loaded alone, outside the package
        raise RuntimeError("the ICS23 verifier is not loaded: import mpt.ics23")
    return _verifier


def default_message(cls):
    """A message of class cls with every field at its proto3 default, made without __init__'s checks: what the
    decoders (this module's and the compiled reader's, mpt.ics23.wire) fill in field by field."""
    msg = cls.__new__(cls)
    msg._clear()
    return msg


class HashOp(IntEnum):
    """cosmos.ics23.v1.HashOp. (Older proofs.proto versions call 3 ``KECCAK``.)"""
    NO_HASH = 0
    SHA256 = 1
    SHA512 = 2
    KECCAK256 = 3
    RIPEMD160 = 4
    BITCOIN = 5        # ripemd160(sha256(x))
    SHA512_256 = 6
    BLAKE2B_512 = 7
    BLAKE2S_256 = 8
    BLAKE3 = 9


class LengthOp(IntEnum):
    """cosmos.ics23.v1.LengthOp: how a leaf's key and value carry their length into the leaf hash."""
    NO_PREFIX = 0
    VAR_PROTO = 1
    VAR_RLP = 2
    FIXED32_BIG = 3
    FIXED32_LITTLE = 4
    FIXED64_BIG = 5
    FIXED64_LITTLE = 6
    REQUIRE_32_BYTES = 7
    REQUIRE_64_BYTES = 8


# Value -> member of each enum (a dict lookup: calling the IntEnum class costs a microsecond per field); the
# compiled reader (mpt.ics23.wire) builds its messages with them too.
ENUM_MEMBERS = {HashOp: {m.value: m for m in HashOp}, LengthOp: {m.value: m for m in LengthOp}}

# Field kinds of the schema tables below.
_BYTES, _ENUM, _INT32, _BOOL, _MSG, _MSG_REPEATED, _INT32_REPEATED, _ONEOF = range(8)

# Protobuf's wire types. The codec's readers (read_varint, read_length, skip_field) and encode_varint are public for
# the other readers of protobuf in this package (mpt.ics23.ibc's MerkleProof).
WIRE_VARINT, WIRE_FIXED64, WIRE_BYTES, WIRE_START_GROUP, WIRE_END_GROUP, WIRE_FIXED32 = range(6)
_WIRE_OF_KIND = {_BYTES: WIRE_BYTES, _ENUM: WIRE_VARINT, _INT32: WIRE_VARINT, _BOOL: WIRE_VARINT,
                 _MSG: WIRE_BYTES, _MSG_REPEATED: WIRE_BYTES, _ONEOF: WIRE_BYTES}
_WIRE_NAMES = ("varint", "fixed64", "length-delimited", "start-group", "end-group", "fixed32", "6", "7")


# ------------------------------------------------------------------------------------------------- helpers

def _as_bytes(value, name: str) -> bytes:
    """A bytes field's value: any bytes-like object (str refused: a key is bytes, not text)."""
    if type(value) is bytes:
        return value
    if isinstance(value, str):
        raise TypeError("%s must be bytes-like, not str; encode it first" % name)
    try:
        return bytes(memoryview(value))
    except TypeError:
        raise TypeError("%s must be bytes-like, not %s" % (name, type(value).__name__)) from None


def _as_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    return int(value)


def _enum_value(enum_cls, value: int):
    """An enum member, or the plain number for a value the enum does not name (proto3 keeps unknown values)."""
    return ENUM_MEMBERS[enum_cls].get(value, value)


def int32(value: int) -> int:
    """Go's int32(uint64) conversion: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def message_bytes(data, name: str = "data") -> bytes:
    """The serialized form of data: bytes, any bytes-like object, or a protobuf message with SerializeToString()
    (cosmpy's or any generated class of the same .proto)."""
    if type(data) is bytes:
        return data
    if isinstance(data, str):
        raise TypeError("%s must be bytes-like or a protobuf message, not str" % name)
    serialize = getattr(data, "SerializeToString", None)
    if serialize is not None and not isinstance(data, (bytearray, memoryview)):
        out = serialize()
        if not isinstance(out, bytes):
            raise TypeError("%s.SerializeToString() returned %s, not bytes" % (name, type(out).__name__))
        return out
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError("%s must be bytes-like or a protobuf message with SerializeToString(), not %s"
                        % (name, type(data).__name__)) from None


def commitment_bytes(proof, name: str = "proof") -> bytes:
    """The wire form of a CommitmentProof given as bytes-like data or as a generated protobuf message. A generated
    ExistenceProof or NonExistenceProof (told by its DESCRIPTOR's full name, as cosmpy's classes carry it) is
    wrapped into the CommitmentProof case that holds it."""
    raw = message_bytes(proof, name)
    if type(proof) is not bytes:
        full_name = getattr(getattr(proof, "DESCRIPTOR", None), "full_name", "")
        if isinstance(full_name, str):
            if full_name.endswith(".NonExistenceProof"):
                return b"\x12" + encode_varint(len(raw)) + raw
            if full_name.endswith(".ExistenceProof"):
                return b"\x0a" + encode_varint(len(raw)) + raw
    return raw


# ------------------------------------------------------------------------------------------- wire decoding

def read_varint(data: bytes, pos: int, end: int, what: str) -> Tuple[int, int]:
    """(value, position after it). Like gogoproto: up to 10 bytes, bits past 64 dropped, a non-minimal
    encoding accepted."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProofError("truncated varint (%s) at offset %d" % (what, pos))
        if shift >= 70:
            raise ProofError("varint longer than 10 bytes (%s) at offset %d" % (what, pos))
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7


def read_length(data: bytes, pos: int, end: int, what: str) -> Tuple[int, int]:
    """(start, stop) of a length-delimited payload whose length varint is at pos."""
    length, start = read_varint(data, pos, end, what + " length")
    if length >= 1 << 63:
        raise ProofError("negative length (%s) at offset %d" % (what, pos))
    if length > end - start:
        raise ProofError("length %d of %s at offset %d runs past the end of its message (%d bytes left)"
                         % (length, what, pos, end - start))
    return start, start + length


def skip_field(data: bytes, pos: int, end: int, wire: int, field: int) -> int:
    """Skip an unknown field's payload (protobuf keeps no unknown field we need); return the position after."""
    if wire == WIRE_VARINT:
        return read_varint(data, pos, end, "field %d" % field)[1]
    if wire == WIRE_FIXED64 or wire == WIRE_FIXED32:
        size = 8 if wire == WIRE_FIXED64 else 4
        if end - pos < size:
            raise ProofError("truncated fixed%d field %d at offset %d" % (size * 8, field, pos))
        return pos + size
    if wire == WIRE_BYTES:
        return read_length(data, pos, end, "field %d" % field)[1]
    if wire == WIRE_START_GROUP:
        # Iterative: groups nest through tags only, and hostile input may nest them deeply.
        depth = 1
        while True:
            if depth > MAX_GROUP_DEPTH:
                raise ProofError("unknown groups nested deeper than %d levels at offset %d" % (MAX_GROUP_DEPTH, pos))
            tag, pos = read_varint(data, pos, end, "tag in group")
            inner_wire = tag & 7
            if tag >> 3 == 0:
                raise ProofError("illegal field number 0 in a group at offset %d" % pos)
            if inner_wire == WIRE_START_GROUP:
                depth += 1
            elif inner_wire == WIRE_END_GROUP:
                depth -= 1
                if depth == 0:
                    return pos
            elif inner_wire in (6, 7):
                raise ProofError("illegal wire type %d at offset %d" % (inner_wire, pos))
            else:
                pos = skip_field(data, pos, end, inner_wire, tag >> 3)
    if wire == WIRE_END_GROUP:
        raise ProofError("end-group tag without a group (field %d) at offset %d" % (field, pos))
    raise ProofError("illegal wire type %d (field %d) at offset %d" % (wire, field, pos))


def _decode_into(msg, data: bytes, pos: int, end: int) -> None:
    """Decode data[pos:end] into msg (merging, as protobuf does when a message is read twice)."""
    cls = type(msg)
    schema = cls._SCHEMA
    name = cls.__name__
    while pos < end:
        tag_at = pos
        tag = data[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = read_varint(data, pos, end, name + " tag")
        field = int32(tag >> 3)
        wire = tag & 7
        if field <= 0:
            raise ProofError("%s: illegal tag %d (wire type %d) at offset %d" % (name, field, wire, tag_at))
        entry = schema.get(field)
        if entry is None:
            if wire == WIRE_END_GROUP:
                raise ProofError("%s: end-group tag without a group at offset %d" % (name, tag_at))
            pos = skip_field(data, pos, end, wire, field)
            continue
        attr, kind, arg = entry
        if kind == _INT32_REPEATED:
            values = getattr(msg, attr)
            if wire == WIRE_VARINT:
                value, pos = read_varint(data, pos, end, "%s.%s" % (name, attr))
                values.append(int32(value))
            elif wire == WIRE_BYTES:
                start, stop = read_length(data, pos, end, "%s.%s" % (name, attr))
                while start < stop:
                    value, start = read_varint(data, start, stop, "packed %s.%s" % (name, attr))
                    values.append(int32(value))
                pos = stop
            else:
                raise ProofError("%s: wrong wire type %s for field %s at offset %d"
                                 % (name, _WIRE_NAMES[wire], attr, tag_at))
            if len(values) > arg:
                raise ProofError("%s.%s has more than %d entries" % (name, attr, arg))
            continue
        if wire != _WIRE_OF_KIND[kind]:
            raise ProofError("%s: wrong wire type %s for field %s at offset %d"
                             % (name, _WIRE_NAMES[wire], attr, tag_at))
        if kind == _BYTES:
            start, pos = read_length(data, pos, end, "%s.%s" % (name, attr))
            object.__setattr__(msg, attr, data[start:pos])
        elif kind == _ENUM:
            value, pos = read_varint(data, pos, end, "%s.%s" % (name, attr))
            object.__setattr__(msg, attr, _enum_value(arg, int32(value)))
        elif kind == _INT32:
            value, pos = read_varint(data, pos, end, "%s.%s" % (name, attr))
            object.__setattr__(msg, attr, int32(value))
        elif kind == _BOOL:
            value, pos = read_varint(data, pos, end, "%s.%s" % (name, attr))
            object.__setattr__(msg, attr, value != 0)
        elif kind == _MSG:
            start, pos = read_length(data, pos, end, "%s.%s" % (name, attr))
            sub = getattr(msg, attr)
            if sub is None:
                sub = default_message(arg)
                object.__setattr__(msg, attr, sub)
            _decode_into(sub, data, start, pos)
        elif kind == _MSG_REPEATED:
            sub_cls, limit = arg
            start, pos = read_length(data, pos, end, "%s.%s" % (name, attr))
            values = getattr(msg, attr)
            if len(values) >= limit:
                raise ProofError("%s.%s has more than %d entries" % (name, attr, limit))
            sub = default_message(sub_cls)
            _decode_into(sub, data, start, pos)
            values.append(sub)
        else:  # _ONEOF: gogoproto replaces the case with a freshly decoded message
            start, pos = read_length(data, pos, end, "%s.%s" % (name, attr))
            sub = default_message(arg)
            _decode_into(sub, data, start, pos)
            for other in cls._ONEOF_FIELDS:
                object.__setattr__(msg, other, None)
            object.__setattr__(msg, attr, sub)


# ------------------------------------------------------------------------------------------- wire encoding

def encode_varint(value: int) -> bytes:
    # Negative int32 / enum values: sign-extended to 10 bytes, as Go writes them.
    return uvarint(value & 0xFFFFFFFFFFFFFFFF)


_SMALL_VARINTS = [bytes((i,)) for i in range(128)]


def _length_field(tag: bytes, value: bytes, out: list) -> None:
    """Append a length-delimited field (tag, length, value) to out, a list of parts."""
    n = len(value)
    out.append(tag)
    out.append(_SMALL_VARINTS[n] if n < 128 else encode_varint(n))
    out.append(value)


def _varint_field(tag: bytes, value: int, out: list) -> None:
    out.append(tag)
    out.append(_SMALL_VARINTS[value] if 0 <= value < 128 else encode_varint(value))


def _encode(msg, out: bytearray) -> None:
    for field, (attr, kind, _arg) in msg._FIELDS_IN_ORDER:
        value = getattr(msg, attr)
        if kind == _BYTES:
            if value:
                out += encode_varint(field << 3 | 2)
                out += encode_varint(len(value))
                out += value
        elif kind in (_ENUM, _INT32):
            if value:
                out += encode_varint(field << 3)
                out += encode_varint(int(value))
        elif kind == _BOOL:
            if value:
                out += encode_varint(field << 3)
                out.append(1)
        elif kind in (_MSG, _ONEOF):
            if value is not None:
                sub = value.to_bytes()
                out += encode_varint(field << 3 | 2)
                out += encode_varint(len(sub))
                out += sub
        elif kind == _MSG_REPEATED:
            for item in value:
                sub = item.to_bytes()
                out += encode_varint(field << 3 | 2)
                out += encode_varint(len(sub))
                out += sub
        else:  # _INT32_REPEATED, packed
            if value:
                packed = b"".join(encode_varint(v) for v in value)
                out += encode_varint(field << 3 | 2)
                out += encode_varint(len(packed))
                out += packed


# -------------------------------------------------------------------------------------------------- JSON

def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _json_bytes(value, where: str) -> bytes:
    if not isinstance(value, str):
        raise ProofError("%s: expected a base64 string, not %s" % (where, type(value).__name__))
    text = value.strip()
    # protojson accepts both alphabets and missing padding.
    text = text.replace("-", "+").replace("_", "/")
    text += "=" * (-len(text) % 4)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ProofError("%s: invalid base64 %r" % (where, value[:40])) from None


def _json_int(value, where: str) -> int:
    if isinstance(value, bool):
        raise ProofError("%s: expected an integer, not a boolean" % where)
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value)
    else:
        raise ProofError("%s: expected an integer, not %r" % (where, value))
    if not -(1 << 31) <= number < 1 << 31:
        raise ProofError("%s: %d does not fit an int32" % (where, number))
    return number


def _json_enum(enum_cls, value, where: str):
    if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
        name = "KECCAK256" if enum_cls is HashOp and value == "KECCAK" else value
        try:
            return enum_cls[name]
        except KeyError:
            raise ProofError("%s: unknown %s name %r" % (where, enum_cls.__name__, value)) from None
    return _enum_value(enum_cls, _json_int(value, where))


def _from_json_obj(cls, obj, where: str):
    if not isinstance(obj, dict):
        raise ProofError("%s: expected a JSON object, not %s" % (where, type(obj).__name__))
    msg = default_message(cls)
    names = cls._JSON_NAMES
    seen_oneof = None
    for key, value in obj.items():
        entry = names.get(key)
        if entry is None:
            raise ProofError("%s: unknown field %r of %s" % (where, key, cls.__name__))
        attr, kind, arg = entry
        at = "%s.%s" % (where, attr)
        if value is None:
            continue
        if kind == _BYTES:
            object.__setattr__(msg, attr, _json_bytes(value, at))
        elif kind == _ENUM:
            object.__setattr__(msg, attr, _json_enum(arg, value, at))
        elif kind == _INT32:
            object.__setattr__(msg, attr, _json_int(value, at))
        elif kind == _BOOL:
            if not isinstance(value, bool):
                raise ProofError("%s: expected true or false, not %r" % (at, value))
            object.__setattr__(msg, attr, value)
        elif kind in (_MSG, _ONEOF):
            if kind == _ONEOF:
                if seen_oneof is not None:
                    raise ProofError("%s: both %s and %s set in one oneof" % (where, seen_oneof, attr))
                seen_oneof = attr
            object.__setattr__(msg, attr, _from_json_obj(arg, value, at))
        elif kind == _MSG_REPEATED:
            sub_cls, limit = arg
            if not isinstance(value, list):
                raise ProofError("%s: expected a JSON array, not %s" % (at, type(value).__name__))
            if len(value) > limit:
                raise ProofError("%s has more than %d entries" % (at, limit))
            object.__setattr__(msg, attr, [_from_json_obj(sub_cls, item, "%s[%d]" % (at, i))
                                           for i, item in enumerate(value)])
        else:
            if not isinstance(value, list):
                raise ProofError("%s: expected a JSON array, not %s" % (at, type(value).__name__))
            if len(value) > arg:
                raise ProofError("%s has more than %d entries" % (at, arg))
            object.__setattr__(msg, attr, [_json_int(item, "%s[%d]" % (at, i)) for i, item in enumerate(value)])
    return msg


def _to_json_obj(msg) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for _field, (attr, kind, _arg) in msg._FIELDS_IN_ORDER:
        value = getattr(msg, attr)
        if kind == _BYTES:
            if value:
                out[attr] = base64.b64encode(value).decode("ascii")
        elif kind in (_ENUM, _INT32):
            if value:
                out[attr] = int(value)
        elif kind == _BOOL:
            if value:
                out[attr] = True
        elif kind in (_MSG, _ONEOF):
            if value is not None:
                out[attr] = value.to_json()
        elif kind == _MSG_REPEATED:
            if value:
                out[attr] = [item.to_json() for item in value]
        elif value:
            out[attr] = list(value)
    return out


# ---------------------------------------------------------------------------------------------- messages

class _Message:
    """Shared behaviour of every message: wire and JSON codecs, equality, repr."""

    __slots__ = ()
    _SCHEMA: Dict[int, Tuple[str, int, Any]] = {}
    _ONEOF_FIELDS: Tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls._FIELDS_IN_ORDER = tuple(sorted(cls._SCHEMA.items()))
        cls._NAME = cls.__dict__.get("_NAME", cls.__name__)
        names = {}
        for _field, entry in cls._SCHEMA.items():
            names[entry[0]] = entry
            names[_camel(entry[0])] = entry
        cls._JSON_NAMES = names
        cls._ONEOF_FIELDS = tuple(entry[0] for entry in cls._SCHEMA.values() if entry[1] == _ONEOF)
        defaults = []
        for attr, kind, arg in cls._SCHEMA.values():
            if kind == _BYTES:
                defaults.append((attr, b""))
            elif kind == _ENUM:
                defaults.append((attr, arg(0)))
            elif kind == _INT32:
                defaults.append((attr, 0))
            elif kind == _BOOL:
                defaults.append((attr, False))
            elif kind in (_MSG, _ONEOF):
                defaults.append((attr, None))
        cls._DEFAULTS = tuple(defaults)
        cls._LISTS = tuple(attr for attr, kind, _arg in cls._SCHEMA.values()
                           if kind in (_MSG_REPEATED, _INT32_REPEATED))
    def _clear(self) -> None:
        """Every field at its proto3 default (a fresh list for each repeated field)."""
        for attr, default in self._DEFAULTS:
            object.__setattr__(self, attr, default)
        for attr in self._LISTS:
            object.__setattr__(self, attr, [])

    @classmethod
    def from_bytes(cls, data):
        """Decode the protobuf wire form (bytes, any bytes-like object, or a message with SerializeToString())."""
        raw = message_bytes(data)
        msg = default_message(cls)
        _decode_into(msg, raw, 0, len(raw))
        return msg

    def to_bytes(self) -> bytes:
        """The protobuf wire form, byte for byte what Go's gogoproto Marshal writes."""
        out = bytearray()
        _encode(self, out)
        return bytes(out)

    @classmethod
    def from_json(cls, obj):
        """Read the protojson form (a dict, or JSON text / bytes)."""
        if isinstance(obj, (str, bytes, bytearray)):
            try:
                obj = json.loads(obj)
            except (ValueError, UnicodeDecodeError) as exc:
                raise ProofError("invalid JSON: %s" % exc) from None
        return _from_json_obj(cls, obj, cls.__name__)

    def to_json(self) -> Dict[str, Any]:
        """The protojson form as a dict (json.dumps it for text)."""
        return _to_json_obj(self)

    def __eq__(self, other):
        if not isinstance(other, _Message) or other._SCHEMA is not self._SCHEMA:
            return NotImplemented
        for attr, kind, _arg in self._SCHEMA.values():
            mine, theirs = getattr(self, attr), getattr(other, attr)
            if kind == _INT32_REPEATED:
                mine, theirs = list(mine), list(theirs)
            if mine != theirs:
                return False
        return True

    __hash__ = None  # mutable, like the generated protobuf classes

    def __repr__(self) -> str:
        parts = []
        for _field, (attr, kind, _arg) in self._FIELDS_IN_ORDER:
            value = getattr(self, attr)
            if not value and not (kind in (_MSG, _ONEOF) and value is not None):
                continue
            if kind == _BYTES:
                shown = "bytes.fromhex(%r)" % value.hex() if len(value) <= 64 else \
                    "bytes.fromhex(%r...)<%d bytes>" % (value[:32].hex(), len(value))
            elif kind == _ENUM and isinstance(value, IntEnum):
                shown = "%s.%s" % (type(value).__name__, value.name)
            else:
                shown = repr(value)
            parts.append("%s=%s" % (attr, shown))
        return "%s(%s)" % (self._NAME, ", ".join(parts))


def _check_message(value, cls, name: str):
    if value is not None and not isinstance(value, cls):
        raise TypeError("%s must be a %s or None, not %s" % (name, cls.__name__, type(value).__name__))
    return value


def _check_list(values, cls, name: str) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError("%s must be an iterable of %s, not %s" % (name, cls.__name__, type(values).__name__))
    out = list(values)
    for i, item in enumerate(out):
        if not isinstance(item, cls):
            raise TypeError("%s[%d] must be a %s, not %s" % (name, i, cls.__name__, type(item).__name__))
    return out


def _check_enum(value, enum_cls, name: str):
    return _enum_value(enum_cls, _as_int(value, name))


class LeafOp(_Message):
    """How a leaf hashes: ``hash(prefix || length(prehash_key(key)) || ... || length(prehash_value(value)) ...)``."""

    __slots__ = ("hash", "prehash_key", "prehash_value", "length", "prefix")
    _SCHEMA = {1: ("hash", _ENUM, HashOp), 2: ("prehash_key", _ENUM, HashOp), 3: ("prehash_value", _ENUM, HashOp),
               4: ("length", _ENUM, LengthOp), 5: ("prefix", _BYTES, None)}

    def __init__(self, hash=HashOp.NO_HASH, prehash_key=HashOp.NO_HASH, prehash_value=HashOp.NO_HASH,
                 length=LengthOp.NO_PREFIX, prefix=b"") -> None:
        self.hash = _check_enum(hash, HashOp, "hash")
        self.prehash_key = _check_enum(prehash_key, HashOp, "prehash_key")
        self.prehash_value = _check_enum(prehash_value, HashOp, "prehash_value")
        self.length = _check_enum(length, LengthOp, "length")
        self.prefix = _as_bytes(prefix, "prefix")

    def to_bytes(self) -> bytes:
        out: list = []
        if self.hash:
            _varint_field(b"\x08", self.hash, out)
        if self.prehash_key:
            _varint_field(b"\x10", self.prehash_key, out)
        if self.prehash_value:
            _varint_field(b"\x18", self.prehash_value, out)
        if self.length:
            _varint_field(b"\x20", self.length, out)
        if self.prefix:
            _length_field(b"\x2a", self.prefix, out)
        return b"".join(out)

    def apply(self, key, value) -> bytes:
        """The leaf hash of key and value (Go ``LeafOp.Apply``); ProofError on an empty key or value."""
        return _ops().apply_leaf(self, _as_bytes(key, "key"), _as_bytes(value, "value"))

    def check_against_spec(self, spec) -> None:
        _ops().check_leaf_against_spec(self, spec)


class InnerOp(_Message):
    """One step towards the root: ``hash(prefix || child || suffix)``."""

    __slots__ = ("hash", "prefix", "suffix")
    _SCHEMA = {1: ("hash", _ENUM, HashOp), 2: ("prefix", _BYTES, None), 3: ("suffix", _BYTES, None)}

    def __init__(self, hash=HashOp.NO_HASH, prefix=b"", suffix=b"") -> None:
        self.hash = _check_enum(hash, HashOp, "hash")
        self.prefix = _as_bytes(prefix, "prefix")
        self.suffix = _as_bytes(suffix, "suffix")

    def to_bytes(self) -> bytes:
        out: list = []
        if self.hash:
            _varint_field(b"\x08", self.hash, out)
        if self.prefix:
            _length_field(b"\x12", self.prefix, out)
        if self.suffix:
            _length_field(b"\x1a", self.suffix, out)
        return b"".join(out)

    def apply(self, child) -> bytes:
        """The parent hash of child (Go ``InnerOp.Apply``); ProofError on an empty child."""
        return _ops().apply_inner(self, _as_bytes(child, "child"))

    def check_against_spec(self, spec, layer: int) -> None:
        _ops().check_inner_against_spec(self, spec, _as_int(layer, "layer"))


class ExistenceProof(_Message):
    """key -> value is in the tree: a leaf op and the inner ops from the leaf up to the root."""

    __slots__ = ("key", "value", "leaf", "path")
    _SCHEMA = {1: ("key", _BYTES, None), 2: ("value", _BYTES, None), 3: ("leaf", _MSG, LeafOp),
               4: ("path", _MSG_REPEATED, (InnerOp, MAX_INNER_OPS))}

    def __init__(self, key=b"", value=b"", leaf=None, path=()) -> None:
        self.key = _as_bytes(key, "key")
        self.value = _as_bytes(value, "value")
        self.leaf = _check_message(leaf, LeafOp, "leaf")
        self.path = _check_list(path, InnerOp, "path")
        if len(self.path) > MAX_INNER_OPS:
            raise ProofError("path has more than %d inner ops" % MAX_INNER_OPS)

    def to_bytes(self) -> bytes:
        out: list = []
        if self.key:
            _length_field(b"\x0a", self.key, out)
        if self.value:
            _length_field(b"\x12", self.value, out)
        if self.leaf is not None:
            _length_field(b"\x1a", self.leaf.to_bytes(), out)
        for op in self.path:
            _length_field(b"\x22", op.to_bytes(), out)
        return b"".join(out)

    def calculate_root(self) -> bytes:
        """The root this proof leads to (Go ``ExistenceProof.Calculate``), checked against no spec."""
        return _ops().calculate_existence_root(self, None)

    def check_against_spec(self, spec) -> None:
        """ProofError unless the leaf and every inner op have the form spec demands (Go ``CheckAgainstSpec``)."""
        _ops().check_existence_against_spec(self, spec)

    def verify(self, spec, root, key, value) -> bool:
        return _ops().verify_existence(self, spec, _as_bytes(root, "root"), _as_bytes(key, "key"),
                                _as_bytes(value, "value"))


class NonExistenceProof(_Message):
    """key is absent: existence proofs of its two neighbours (one may be missing at an edge of the tree)."""

    __slots__ = ("key", "left", "right")
    _SCHEMA = {1: ("key", _BYTES, None), 2: ("left", _MSG, ExistenceProof), 3: ("right", _MSG, ExistenceProof)}

    def __init__(self, key=b"", left=None, right=None) -> None:
        self.key = _as_bytes(key, "key")
        self.left = _check_message(left, ExistenceProof, "left")
        self.right = _check_message(right, ExistenceProof, "right")

    def calculate_root(self) -> bytes:
        return _ops().calculate_nonexistence_root(self)

    def verify(self, spec, root, key) -> bool:
        return _ops().verify_nonexistence(self, spec, _as_bytes(root, "root"), _as_bytes(key, "key"))


class _OneOf(_Message):
    __slots__ = ()

    def _init_oneof(self, values: Dict[str, Any]) -> None:
        chosen = [name for name, value in values.items() if value is not None]
        if len(chosen) > 1:
            raise TypeError("%s takes at most one of %s, got %s" % (type(self).__name__, ", ".join(values),
                                                                     ", ".join(chosen)))
        for attr, _kind, cls in self._SCHEMA.values():
            object.__setattr__(self, attr, _check_message(values[attr], cls, attr))

    @property
    def proof(self):
        """The one proof this holds (or None), whichever case it is."""
        for attr in self._ONEOF_FIELDS:
            value = getattr(self, attr)
            if value is not None:
                return value
        return None

    def which(self) -> Optional[str]:
        """Name of the oneof case that is set (``"exist"``, ``"nonexist"``, ...), or None."""
        for attr in self._ONEOF_FIELDS:
            if getattr(self, attr) is not None:
                return attr
        return None


class BatchEntry(_OneOf):
    __slots__ = ("exist", "nonexist")
    exist: Optional[ExistenceProof]
    nonexist: Optional[NonExistenceProof]
    _SCHEMA = {1: ("exist", _ONEOF, ExistenceProof), 2: ("nonexist", _ONEOF, NonExistenceProof)}

    def __init__(self, *, exist=None, nonexist=None) -> None:
        self._init_oneof({"exist": exist, "nonexist": nonexist})


class BatchProof(_Message):
    __slots__ = ("entries",)
    _SCHEMA = {1: ("entries", _MSG_REPEATED, (BatchEntry, MAX_ENTRIES))}

    def __init__(self, entries=()) -> None:
        self.entries = _check_list(entries, BatchEntry, "entries")


class CompressedExistenceProof(_Message):
    """An ExistenceProof whose path holds indexes into the batch's lookup_inners table."""

    __slots__ = ("key", "value", "leaf", "path")
    _SCHEMA = {1: ("key", _BYTES, None), 2: ("value", _BYTES, None), 3: ("leaf", _MSG, LeafOp),
               4: ("path", _INT32_REPEATED, MAX_INNER_OPS)}

    def __init__(self, key=b"", value=b"", leaf=None, path=()) -> None:
        self.key = _as_bytes(key, "key")
        self.value = _as_bytes(value, "value")
        self.leaf = _check_message(leaf, LeafOp, "leaf")
        if isinstance(path, (str, bytes)) or not hasattr(path, "__iter__"):
            raise TypeError("path must be an iterable of ints, not %s" % type(path).__name__)
        self.path = [_as_int(v, "path[%d]" % i) for i, v in enumerate(path)]


class CompressedNonExistenceProof(_Message):
    __slots__ = ("key", "left", "right")
    _SCHEMA = {1: ("key", _BYTES, None), 2: ("left", _MSG, CompressedExistenceProof),
               3: ("right", _MSG, CompressedExistenceProof)}

    def __init__(self, key=b"", left=None, right=None) -> None:
        self.key = _as_bytes(key, "key")
        self.left = _check_message(left, CompressedExistenceProof, "left")
        self.right = _check_message(right, CompressedExistenceProof, "right")


class CompressedBatchEntry(_OneOf):
    __slots__ = ("exist", "nonexist")
    exist: Optional["CompressedExistenceProof"]
    nonexist: Optional["CompressedNonExistenceProof"]
    _SCHEMA = {1: ("exist", _ONEOF, CompressedExistenceProof), 2: ("nonexist", _ONEOF, CompressedNonExistenceProof)}

    def __init__(self, *, exist=None, nonexist=None) -> None:
        self._init_oneof({"exist": exist, "nonexist": nonexist})


class CompressedBatchProof(_Message):
    __slots__ = ("entries", "lookup_inners")
    _SCHEMA = {1: ("entries", _MSG_REPEATED, (CompressedBatchEntry, MAX_ENTRIES)),
               2: ("lookup_inners", _MSG_REPEATED, (InnerOp, MAX_ENTRIES))}

    def __init__(self, entries=(), lookup_inners=()) -> None:
        self.entries = _check_list(entries, CompressedBatchEntry, "entries")
        self.lookup_inners = _check_list(lookup_inners, InnerOp, "lookup_inners")


class CommitmentProof(_OneOf):
    """What a Cosmos store hands out: one of an existence, non-existence, batch or compressed batch proof."""

    __slots__ = ("exist", "nonexist", "batch", "compressed")
    exist: Optional[ExistenceProof]
    nonexist: Optional[NonExistenceProof]
    batch: Optional[BatchProof]
    compressed: Optional[CompressedBatchProof]
    _SCHEMA = {1: ("exist", _ONEOF, ExistenceProof), 2: ("nonexist", _ONEOF, NonExistenceProof),
               3: ("batch", _ONEOF, BatchProof), 4: ("compressed", _ONEOF, CompressedBatchProof)}

    def __init__(self, *, exist=None, nonexist=None, batch=None, compressed=None) -> None:
        self._init_oneof({"exist": exist, "nonexist": nonexist, "batch": batch, "compressed": compressed})

    @classmethod
    def from_bytes(cls, data):
        """Decode the protobuf wire form (bytes, any bytes-like object, or a message with SerializeToString())."""
        raw = message_bytes(data)
        if cls is CommitmentProof:
            # Go-made (canonical) existence and non-existence proofs: read by the compiled wire reader.
            decoded = _ops().decode_commitment_fast(raw)
            if decoded is not None:
                return decoded
        return super().from_bytes(raw)

    @classmethod
    def _from_bytes_generic(cls, data) -> "CommitmentProof":
        """The schema-driven decoder alone (tests compare it with the compiled reader)."""
        return _Message.from_bytes.__func__(cls, data)

    def decompressed(self) -> "CommitmentProof":
        """This proof with a compressed batch expanded into a plain batch (Go ``Decompress``); else itself."""
        return _ops().decompress(self)

    def calculate_root(self) -> bytes:
        return _ops().calculate_commitment_root(self)


class InnerSpec(_Message):
    """The shape of a tree's inner nodes, which the neighbour checks of non-existence proofs rely on."""

    __slots__ = ("child_order", "child_size", "min_prefix_length", "max_prefix_length", "empty_child", "hash",
                 "_frozen")
    _SCHEMA = {1: ("child_order", _INT32_REPEATED, MAX_CHILD_ORDER), 2: ("child_size", _INT32, None),
               3: ("min_prefix_length", _INT32, None), 4: ("max_prefix_length", _INT32, None),
               5: ("empty_child", _BYTES, None), 6: ("hash", _ENUM, HashOp)}

    def __init__(self, child_order=(), child_size=0, min_prefix_length=0, max_prefix_length=0, empty_child=b"",
                 hash=HashOp.NO_HASH) -> None:
        object.__setattr__(self, "_frozen", False)
        if isinstance(child_order, (str, bytes)) or not hasattr(child_order, "__iter__"):
            raise TypeError("child_order must be an iterable of ints, not %s" % type(child_order).__name__)
        self.child_order = [_as_int(v, "child_order[%d]" % i) for i, v in enumerate(child_order)]
        self.child_size = _as_int(child_size, "child_size")
        self.min_prefix_length = _as_int(min_prefix_length, "min_prefix_length")
        self.max_prefix_length = _as_int(max_prefix_length, "max_prefix_length")
        self.empty_child = _as_bytes(empty_child, "empty_child")
        self.hash = _check_enum(hash, HashOp, "hash")

    def _clear(self) -> None:
        super()._clear()
        object.__setattr__(self, "_frozen", False)

    def __setattr__(self, name, value) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError("%s is read-only (a shared spec constant); build a new InnerSpec" % name)
        object.__setattr__(self, name, value)


class ProofSpec(_Message):
    """What a verifier demands of a tree's proofs (the leaf format, the inner-node shape, depth limits)."""

    # compiled_form: what the compiled verifier (mpt.ics23.wire) made of this spec, kept on a read-only spec
    # (keep_compiled_form) and cleared by any change; None before. A slot, read on every verification.
    __slots__ = ("leaf_spec", "inner_spec", "max_depth", "min_depth", "prehash_key_before_comparison", "_frozen",
                 "compiled_form")
    compiled_form: Any
    _SCHEMA = {1: ("leaf_spec", _MSG, LeafOp), 2: ("inner_spec", _MSG, InnerSpec), 3: ("max_depth", _INT32, None),
               4: ("min_depth", _INT32, None), 5: ("prehash_key_before_comparison", _BOOL, None)}

    def __init__(self, leaf_spec=None, inner_spec=None, max_depth=0, min_depth=0,
                 prehash_key_before_comparison=False) -> None:
        object.__setattr__(self, "_frozen", False)
        self.leaf_spec = _check_message(leaf_spec, LeafOp, "leaf_spec")
        self.inner_spec = _check_message(inner_spec, InnerSpec, "inner_spec")
        self.max_depth = _as_int(max_depth, "max_depth")
        self.min_depth = _as_int(min_depth, "min_depth")
        if not isinstance(prehash_key_before_comparison, bool):
            raise TypeError("prehash_key_before_comparison must be a bool, not %s"
                            % type(prehash_key_before_comparison).__name__)
        self.prehash_key_before_comparison = prehash_key_before_comparison

    def _clear(self) -> None:
        super()._clear()
        object.__setattr__(self, "_frozen", False)
        object.__setattr__(self, "compiled_form", None)

    def __setattr__(self, name, value) -> None:
        if getattr(self, "_frozen", False):
            raise AttributeError("%s is read-only (a shared spec constant); build a new ProofSpec" % name)
        object.__setattr__(self, name, value)
        # A changed spec must not keep the compiled form of its old value.
        object.__setattr__(self, "compiled_form", None)

    @property
    def read_only(self) -> bool:
        """Whether this is a shared constant (IAVL_SPEC, ...: see frozen()), which refuses changes."""
        return self._frozen

    def keep_compiled_form(self, form) -> None:
        """Keep the compiled verifier's form of this spec, if the spec is read-only (a changeable one is compiled
        again at every use: any change would make the kept form stale)."""
        if self._frozen:
            object.__setattr__(self, "compiled_form", form)

    def spec_equals(self, other: "ProofSpec") -> bool:
        """Go ``SpecEquals``: the hash ops, length op, prefix lengths, child size and number of children agree
        (prefixes and depths are not compared)."""
        a, b = self, other
        if (a.leaf_spec is None) != (b.leaf_spec is None):
            return False
        if a.leaf_spec is not None:
            la, lb = a.leaf_spec, b.leaf_spec
            if not (la.hash == lb.hash and la.prehash_key == lb.prehash_key and la.prehash_value == lb.prehash_value
                    and la.length == lb.length):
                return False
        if (a.inner_spec is None) != (b.inner_spec is None):
            return False
        if a.inner_spec is not None:
            ia, ib = a.inner_spec, b.inner_spec
            if not (ia.hash == ib.hash and ia.min_prefix_length == ib.min_prefix_length
                    and ia.max_prefix_length == ib.max_prefix_length and ia.child_size == ib.child_size
                    and len(ia.child_order) == len(ib.child_order)):
                return False
        return True


# ------------------------------------------------------------------------------------- frozen spec constants

class _FrozenLeafOp(LeafOp):
    """A LeafOp that refuses changes: the leaf_spec of a shared spec constant."""

    __slots__ = ()
    _NAME = "LeafOp"

    def __setattr__(self, name, value) -> None:
        raise AttributeError("%s is read-only (a shared spec constant); build a new LeafOp" % name)


def frozen(spec: ProofSpec) -> ProofSpec:
    """A read-only deep copy of spec: IAVL_SPEC and the other constants, which the wire verifier compiles once."""
    leaf = spec.leaf_spec
    inner = spec.inner_spec
    frozen_leaf = None
    if leaf is not None:
        frozen_leaf = _FrozenLeafOp.__new__(_FrozenLeafOp)
        for attr in LeafOp.__slots__:
            object.__setattr__(frozen_leaf, attr, getattr(leaf, attr))
    frozen_inner = None
    if inner is not None:
        frozen_inner = InnerSpec(tuple(inner.child_order), inner.child_size, inner.min_prefix_length,
                                 inner.max_prefix_length, inner.empty_child, inner.hash)
        frozen_inner.child_order = tuple(frozen_inner.child_order)
        object.__setattr__(frozen_inner, "_frozen", True)
    out = ProofSpec(frozen_leaf, frozen_inner, spec.max_depth, spec.min_depth, spec.prehash_key_before_comparison)
    object.__setattr__(out, "_frozen", True)
    return out
