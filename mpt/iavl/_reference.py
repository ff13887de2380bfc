"""Pure-Python reference of the IAVL node formats (legacy, v1, stream-vbyte) and the node hash.

Written from iavl's node.go / PR #673 independently of mpt.iavl.node, for differential tests and the fuzz targets
(fuzz/fuzz_iavl_node.py): slow and obvious on purpose. A node is a dict with ``height``, ``size``, ``version``,
``key`` and either ``value`` (leaf) or ``left_hash``/``right_hash`` (legacy, vbyte inner) or ``hash`` plus
``left_node_key``/``right_node_key`` (v1 inner; a child reference is a 12-byte NodeKey or a 32-byte legacy hash).

``decode`` is as strict as the compiled decoder: anything iavl would never have written raises ``Rejected``.
"""
import hashlib

from mpt.core.uvarint import uvarint

FORMATS = ("legacy", "v1", "vbyte")


class Rejected(ValueError):
    """The reference refuses the input (the compiled decoder must raise NodeDecodeError too)."""


# ---------------------------------------------------------------------------------------------- varints

def varint(v: int) -> bytes:
    """Go's binary.PutVarint: zigzag, then LEB128."""
    return uvarint(((v << 1) ^ (v >> 63)) & (2**64 - 1))


def enc_bytes(b: bytes) -> bytes:
    """iavl's EncodeBytes: uvarint(len) || b."""
    return uvarint(len(b)) + b


def read_uvarint(data: bytes, pos: int):
    value, shift = 0, 0
    for i in range(10):
        if pos + i >= len(data):
            raise Rejected("truncated varint")
        b = data[pos + i]
        if i == 9 and b > 1:
            raise Rejected("varint overflows 64 bits")
        if b < 0x80:
            if b == 0 and i > 0:
                raise Rejected("non-canonical varint")
            return value | (b << shift), pos + i + 1
        value |= (b & 0x7F) << shift
        shift += 7
    raise Rejected("varint overflows 64 bits")  # pragma: no cover - the 10th byte check returns or raises first


def read_varint(data: bytes, pos: int):
    u, pos = read_uvarint(data, pos)
    return (u >> 1) ^ -(u & 1), pos


def read_bytes(data: bytes, pos: int):
    n, pos = read_uvarint(data, pos)
    if n > len(data) - pos:
        raise Rejected("length past the end")
    return data[pos:pos + n], pos + n


def node_key(version: int, nonce: int) -> bytes:
    return version.to_bytes(8, "big") + nonce.to_bytes(4, "big")


# ---------------------------------------------------------------------------------------------- encoding

def _vbyte_ints(ints):
    control, data = 0, b""
    for i, x in enumerate(ints):
        n = max(1, (x.bit_length() + 7) // 8)
        control |= (n - 1) << (2 * i)
        data += x.to_bytes(n, "little")
    return control, data


def encode(node: dict, fmt: str) -> bytes:
    """The node's bytes in fmt (a v1 inner node needs ``hash`` and both ``*_node_key``)."""
    height, size, version, key = node["height"], node["size"], node["version"], node["key"]
    if fmt == "vbyte":
        if not 0 <= version < 2**32:
            raise ValueError("version does not fit the stream-vbyte format's uint32")
        control, ints = _vbyte_ints([version, size & 0xFFFFFFFF, size >> 32, len(key)])
        out = bytes([height & 0xFF, control]) + ints + key
        if height == 0:
            return out + node["value"]
        return out + node["left_hash"] + node["right_hash"]
    out = varint(height) + varint(size)
    if fmt == "legacy":
        out += varint(version)
    out += enc_bytes(key)
    if height == 0:
        return out + enc_bytes(node["value"])
    if fmt == "legacy":
        return out + enc_bytes(node["left_hash"]) + enc_bytes(node["right_hash"])
    own = node["hash"] if "hash" in node else node_hash(node)
    refs = (node["left_node_key"], node["right_node_key"])
    mode = (1 if len(refs[0]) == 32 else 0) | (2 if len(refs[1]) == 32 else 0)
    out += enc_bytes(own) + varint(mode)
    for ref in refs:
        if len(ref) == 32:
            out += enc_bytes(ref)
        else:
            out += varint(int.from_bytes(ref[:8], "big")) + varint(int.from_bytes(ref[8:], "big"))
    return out


def leaf(key: bytes, value: bytes, version: int) -> dict:
    return {"height": 0, "size": 1, "version": version, "key": key, "value": value}


def node_hash(node: dict) -> bytes:
    """sha256(varint(height) varint(size) varint(version) | leaf: bytes(key) 0x20 sha256(value)
    | inner: bytes(left hash) bytes(right hash)); a v1 inner node's decoded ``hash`` is taken as is."""
    pre = varint(node["height"]) + varint(node["size"]) + varint(node["version"])
    if node["height"] == 0:
        pre += enc_bytes(node["key"]) + b"\x20" + hashlib.sha256(node["value"]).digest()
    elif "left_hash" in node:
        pre += enc_bytes(node["left_hash"]) + enc_bytes(node["right_hash"])
    else:
        return node["hash"]
    return hashlib.sha256(pre).digest()


# ---------------------------------------------------------------------------------------------- decoding

def _shape(height: int, size: int) -> None:
    if not 0 <= height <= 127:
        raise Rejected("height out of range")
    if size < 0 or (height == 0 and size != 1) or (height > 0 and size < 2):
        raise Rejected("bad size for the height")


def decode(data: bytes, fmt: str, version: int = 0) -> dict:
    """The node's fields; v1 takes the version from the caller (it lives in the NodeKey). Raises Rejected."""
    data = bytes(data)
    out = {}
    if fmt == "vbyte":
        if len(data) < 2:
            raise Rejected("short header")
        height = data[0] - 256 if data[0] > 127 else data[0]
        control, pos, ints = data[1], 2, []
        for i in range(4):
            n = ((control >> (2 * i)) & 3) + 1
            if pos + n > len(data):
                raise Rejected("control byte promises more bytes than there are")
            if n > 1 and data[pos + n - 1] == 0:
                raise Rejected("non-canonical stream-vbyte integer")
            ints.append(int.from_bytes(data[pos:pos + n], "little"))
            pos += n
        size = ints[1] | (ints[2] << 32)
        if size >= 1 << 63:
            raise Rejected("negative size")
        _shape(height, size)
        if ints[3] > len(data) - pos:
            raise Rejected("key length past the end")
        out.update(height=height, size=size, version=ints[0], key=data[pos:pos + ints[3]])
        pos += ints[3]
        if height == 0:
            out["value"] = data[pos:]
        elif len(data) - pos != 64:
            raise Rejected("an inner node ends with two hashes")
        else:
            out.update(left_hash=data[pos:pos + 32], right_hash=data[pos + 32:])
        return out
    if fmt not in ("legacy", "v1"):
        raise ValueError("unknown format %r" % (fmt,))
    height, pos = read_varint(data, 0)
    size, pos = read_varint(data, pos)
    _shape(height, size)
    if fmt == "legacy":
        version, pos = read_varint(data, pos)
        if version < 0:
            raise Rejected("negative version")
    key, pos = read_bytes(data, pos)
    out.update(height=height, size=size, version=version, key=key)
    if height == 0:
        out["value"], pos = read_bytes(data, pos)
    elif fmt == "legacy":
        out["left_hash"], pos = read_bytes(data, pos)
        out["right_hash"], pos = read_bytes(data, pos)
        if len(out["left_hash"]) != 32 or len(out["right_hash"]) != 32:
            raise Rejected("child hash length")
    else:
        own, pos = read_bytes(data, pos)
        if len(own) != 32:
            raise Rejected("node hash length")
        out["hash"] = own
        mode, pos = read_varint(data, pos)
        if not 0 <= mode <= 3:
            raise Rejected("child mode")
        for side, bit in (("left", 1), ("right", 2)):
            if mode & bit:
                ref, pos = read_bytes(data, pos)
                if len(ref) != 32:
                    raise Rejected("child hash length")
            else:
                v, pos = read_varint(data, pos)
                nonce, pos = read_varint(data, pos)
                if v < 0 or not 0 <= nonce < 2**32:
                    raise Rejected("child node key")
                ref = node_key(v, nonce)
            out[side + "_node_key"] = ref
    if pos != len(data):
        raise Rejected("trailing bytes")
    return out
