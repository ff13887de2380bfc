"""Fuzz mpt.iavl.decode_node (legacy, v1 and stream-vbyte) against a pure-Python reference decoder.

Input: the first byte picks the format (value % 3: legacy, v1, vbyte); the rest is the node. v1 nodes are
decoded with the fixed node key (version 7, nonce 3), since the format keeps the version in the key.

Contract: any bytes give NodeDecodeError (with an offset inside the input), or a node that the reference
decodes to the same fields, whose encoding in that format is the input itself (decoding is strict: one
encoding per node) and whose hash the reference computes the same way.
"""
import hashlib

from mpt.errors import NodeDecodeError
from mpt.iavl import decode_node, node_key

from fuzz_support import Rejected, run_fuzzer

MAX_LEN = 2048
FORMATS = ("legacy", "v1", "vbyte")
NODE_KEY = node_key(7, 3)


def _uvarint(data, pos):
    value, shift = 0, 0
    for i in range(10):
        if pos + i >= len(data):
            raise Rejected("truncated varint")
        b = data[pos + i]
        if i == 9 and b > 1:
            raise Rejected("overflow")
        if b < 0x80:
            if b == 0 and i > 0:
                raise Rejected("non-canonical")
            return value | (b << shift), pos + i + 1
        value |= (b & 0x7F) << shift
        shift += 7
    raise Rejected("overflow")  # pragma: no cover - the 10th byte check returns or raises first


def _varint(data, pos):
    u, pos = _uvarint(data, pos)
    return (u >> 1) ^ -(u & 1), pos


def _bytes(data, pos):
    n, pos = _uvarint(data, pos)
    if n > len(data) - pos:
        raise Rejected("length past the end")
    return data[pos:pos + n], pos + n


def _shape(height, size):
    if not 0 <= height <= 127 or size < 0 or (height == 0 and size != 1) or (height > 0 and size < 2):
        raise Rejected("shape")


def reference_decode(fmt, data):
    """dict of the node's fields; raises Rejected for anything the strict decoder must refuse."""
    out = {}
    if fmt == "vbyte":
        if len(data) < 2:
            raise Rejected("short")
        height = data[0] - 256 if data[0] > 127 else data[0]
        control, pos, ints = data[1], 2, []
        for i in range(4):
            n = ((control >> (2 * i)) & 3) + 1
            if pos + n > len(data):
                raise Rejected("control byte")
            if n > 1 and data[pos + n - 1] == 0:
                raise Rejected("non-minimal")
            ints.append(int.from_bytes(data[pos:pos + n], "little"))
            pos += n
        size = ints[1] | (ints[2] << 32)
        if size >= 1 << 63:
            raise Rejected("negative size")
        _shape(height, size)
        if ints[3] > len(data) - pos:
            raise Rejected("key")
        out.update(height=height, size=size, version=ints[0], key=data[pos:pos + ints[3]])
        pos += ints[3]
        if height == 0:
            out["value"] = data[pos:]
        elif len(data) - pos != 64:
            raise Rejected("hashes")
        else:
            out.update(left_hash=data[pos:pos + 32], right_hash=data[pos + 32:])
        return out
    height, pos = _varint(data, 0)
    size, pos = _varint(data, pos)
    _shape(height, size)
    version = 7
    if fmt == "legacy":
        version, pos = _varint(data, pos)
        if version < 0:
            raise Rejected("negative version")
    key, pos = _bytes(data, pos)
    out.update(height=height, size=size, version=version, key=key)
    if height == 0:
        out["value"], pos = _bytes(data, pos)
    elif fmt == "legacy":
        out["left_hash"], pos = _bytes(data, pos)
        out["right_hash"], pos = _bytes(data, pos)
        if len(out["left_hash"]) != 32 or len(out["right_hash"]) != 32:
            raise Rejected("hash length")
    else:
        own, pos = _bytes(data, pos)
        if len(own) != 32:
            raise Rejected("hash length")
        out["hash"] = own
        mode, pos = _varint(data, pos)
        if not 0 <= mode <= 3:
            raise Rejected("mode")
        for side, bit in (("left", 1), ("right", 2)):
            if mode & bit:
                ref, pos = _bytes(data, pos)
                if len(ref) != 32:
                    raise Rejected("hash length")
            else:
                v, pos = _varint(data, pos)
                nonce, pos = _varint(data, pos)
                if v < 0 or not 0 <= nonce < 2**32:
                    raise Rejected("child key")
                ref = v.to_bytes(8, "big") + nonce.to_bytes(4, "big")
            out[side + "_node_key"] = ref
    if pos != len(data):
        raise Rejected("trailing bytes")
    return out


def reference_hash(fields):
    def varint(v):
        u = ((v << 1) ^ (v >> 63)) & (2**64 - 1)
        b = bytearray()
        while u >= 0x80:
            b.append((u & 0x7F) | 0x80)
            u >>= 7
        b.append(u)
        return bytes(b)

    def enc(b):
        return _uv(len(b)) + b

    def _uv(n):
        b = bytearray()
        while n >= 0x80:
            b.append((n & 0x7F) | 0x80)
            n >>= 7
        b.append(n)
        return bytes(b)

    pre = varint(fields["height"]) + varint(fields["size"]) + varint(fields["version"])
    if fields["height"] == 0:
        pre += enc(fields["key"]) + b"\x20" + hashlib.sha256(fields["value"]).digest()
    elif "hash" in fields:
        return fields["hash"]
    else:
        pre += enc(fields["left_hash"]) + enc(fields["right_hash"])
    return hashlib.sha256(pre).digest()


def test_one_input(data: bytes) -> None:
    if not data:
        return
    fmt, body = FORMATS[data[0] % 3], data[1:]
    try:
        node = decode_node(body, fmt, NODE_KEY if fmt == "v1" else None)
    except NodeDecodeError as e:
        assert 0 <= e.offset <= len(body), "error offset %d outside the input" % e.offset
        node = None
    try:
        want = reference_decode(fmt, body)
    except Rejected:
        want = None
    if node is None or want is None:
        assert node is None and want is None, "mpt %s a %s node the reference %s" % (
            "refuses" if node is None else "accepts", fmt, "accepts" if want is not None else "refuses")
        return
    got = {"height": node.height, "size": node.size, "version": node.version, "key": node.key}
    for name in ("value", "left_hash", "right_hash", "left_node_key", "right_node_key"):
        if name in want:
            got[name] = getattr(node, name)
    if "hash" in want:
        got["hash"] = node.hash
    assert got == want, "mpt and the reference decode the %s node differently" % fmt
    assert node.to_bytes(fmt) == body, "a decoded %s node does not re-encode to its input" % fmt
    assert node.encoded_size(fmt) == len(body)
    assert node.hash == reference_hash(want), "hash differs from the reference"


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
