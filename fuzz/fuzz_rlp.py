"""Fuzz mpt.rlp.decode against the pure-Python reference decoder of fuzz_support.

Contract: any bytes decode to exactly what the reference decodes (and re-encode to the same bytes), or raise
RLPDecodeError when the reference refuses them; nesting deeper than 1024 lists is refused, never recursed.
Run: python fuzz/fuzz_rlp.py [corpus dirs] [libFuzzer flags], or all targets with python fuzz/run.py.
"""
from mpt import rlp
from mpt.errors import RLPDecodeError

from fuzz_support import answers, both_accept, reference_rlp_decode, run_fuzzer, same_tree

# Deep nesting needs room: 1025 nested lists take about 3 KB.
MAX_LEN = 8192


def test_one_input(data: bytes) -> None:
    got, want = answers(lambda: rlp.decode(data), RLPDecodeError, lambda: reference_rlp_decode(data))
    if not both_accept(got, want):
        return
    assert same_tree(got, want), "mpt and the reference decode differently"
    assert rlp.encode(got) == data, "decoded input does not re-encode to itself"
    # Every bytes-like input reads the same.
    assert same_tree(rlp.decode(bytearray(data)), got)
    assert same_tree(rlp.decode(memoryview(data)), got)


if __name__ == "__main__":
    run_fuzzer(test_one_input, max_len=MAX_LEN)
