"""Fuzz mpt.node.decode_node against the reference node decoder of fuzz_support.

Contract: any bytes give NodeDecodeError, or a node that the reference decodes to the same structure and
whose encoding() is the input itself (decoding is strict: one encoding per node).
"""
from mpt import keccak256
from mpt.errors import NodeDecodeError
from mpt.ethereum.node import decode_node

from fuzz_support import HASH_LENGTH, answers, both_accept, describe_node, reference_decode_node, run_fuzzer

MAX_LEN = 4096


def test_one_input(data: bytes) -> None:
    node, want = answers(lambda: decode_node(data), NodeDecodeError, lambda: reference_decode_node(data))
    if not both_accept(node, want):
        return
    assert describe_node(node) == want, "mpt and the reference decode the node differently"
    assert node.encoding() == data, "a decoded node does not re-encode to its input"
    # A hash given to the decoder is kept only for nodes that are referenced by hash (>= 32 bytes).
    digest = keccak256(data)
    hashed = decode_node(data, digest)
    assert hashed.hash == (digest if len(data) >= HASH_LENGTH else None)


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
