"""Fuzz mpt.iavl.decode_node (legacy, v1 and stream-vbyte) against the pure-Python reference (mpt.iavl._reference).

Input: the first byte picks the format (value % 3: legacy, v1, vbyte); the rest is the node. v1 nodes are
decoded with the fixed node key (version 7, nonce 3), since the format keeps the version in the key.

Contract: any bytes give NodeDecodeError (with an offset inside the input), or a node that the reference
decodes to the same fields, whose encoding in that format is the input itself (decoding is strict: one
encoding per node) and whose hash the reference computes the same way.
"""
from mpt.errors import NodeDecodeError
from mpt.iavl import _reference as ref
from mpt.iavl import decode_node, node_key

from fuzz_support import run_fuzzer

MAX_LEN = 2048
FORMATS = ("legacy", "v1", "vbyte")
NODE_KEY = node_key(7, 3)


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
        want = ref.decode(body, fmt, version=7)
    except ref.Rejected:
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
    assert node.hash == ref.node_hash(want), "hash differs from the reference"
    assert ref.encode(want, fmt) == body, "the reference does not re-encode the node to its input"


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
