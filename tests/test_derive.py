"""derive_sha: geth's DeriveSha (StackTrie and Trie) and klaytn's Simple / Concat."""
import pytest
from Crypto.Hash import keccak as pycryptodome_keccak
from hypothesis import given, settings, strategies as st

from mpt import StackTrie, derive_sha, derive_sha_trie, rlp
from mpt.ethereum._reference import trie_root
from mpt.bench import workloads
from mpt.ethereum.derive import rlp_encode_index


def k(data):
    return pycryptodome_keccak.new(digest_bits=256, data=data).digest()


def test_gentxs200_root():
    txs = workloads.gentxs200()
    assert derive_sha(txs) == workloads.GENTXS200_ROOT
    assert derive_sha_trie(txs) == workloads.GENTXS200_ROOT
    reused = StackTrie()
    assert derive_sha(txs, stack_trie=reused) == workloads.GENTXS200_ROOT
    assert derive_sha(txs, stack_trie=reused) == workloads.GENTXS200_ROOT


@pytest.mark.parametrize("n", [0, 1, 2, 127, 128, 129, 300, 70000])
def test_orig_matches_reference_at_index_boundaries(n):
    items = [b"item-%d" % i for i in range(n)]
    expected = trie_root({rlp.encode(i): item for i, item in enumerate(items)})
    assert derive_sha(items) == expected
    if n <= 300:
        assert derive_sha_trie(items) == expected


def test_rlp_index():
    for i in [0, 1, 127, 128, 255, 256, 65535, 65536, 2**40]:
        assert rlp_encode_index(i) == rlp.encode(i)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=200), max_size=300))
def test_orig_stack_equals_trie(items):
    assert derive_sha(items) == derive_sha_trie(items)


def _simple(items):
    if not items:
        return k(b"")
    level = [k(x) for x in items]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [k(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 9])
def test_klaytn_variants(n):
    items = [bytes([i]) * (i + 1) for i in range(n)]
    assert derive_sha(items, impl="concat") == k(b"".join(items))
    assert derive_sha(items, impl="simple") == _simple(items)


def test_klaytn_hand_computed():
    a, b, c = b"a", b"bb", b"ccc"
    assert derive_sha([], impl="simple") == k(b"") == derive_sha([], impl="concat")
    assert derive_sha([a], impl="simple") == k(a)
    assert derive_sha([a, b], impl="simple") == k(k(a) + k(b))
    assert derive_sha([a, b, c], impl="simple") == k(k(k(a) + k(b)) + k(k(c) + k(c)))
    assert derive_sha([a, b, c], impl="concat") == k(b"abbccc")


def test_errors():
    with pytest.raises(ValueError, match="impl"):
        derive_sha([b"x"], impl="fast")
    with pytest.raises(TypeError, match=r"items\[1\]"):
        derive_sha([b"x", "y"])
    with pytest.raises(TypeError):
        derive_sha([b"x"], stack_trie=object())
