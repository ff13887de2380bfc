"""Tests of the benchmark workloads (mpt.bench.workloads): the data must be bit-identical to go-ethereum's.

Each workload's root, computed with the pure-Python reference trie, must equal the root geth computes on the
same data (docs/benchmarks.rst). The Go math/rand port is checked against outputs of Go itself.
"""

import json
from pathlib import Path

import pytest

from mpt.ethereum._reference import EMPTY_CODE_HASH, EMPTY_ROOT, keccak256, rlp_encode, trie_root
from mpt.bench import workloads
from mpt.bench.workloads import (
    ACCOUNT_ROOTS,
    GENTXS200_ROOT,
    INSERT_100K_ROOT,
    TINY_TRIE_CASES,
    GoRand,
    account_keys,
    gentxs200,
    insert_100k_items,
    make_accounts,
    random_trie_items,
)

VECTORS = Path(__file__).resolve().parent / "vectors"


# --- Go math/rand ------------------------------------------------------------------------------------------------


def test_packaged_cooked_table_matches_vector():
    vector = json.loads((VECTORS / "go_math_rand_cooked.json").read_text())["cooked"]
    assert list(workloads._go_rng_cooked()) == vector


def test_go_rand_seed_1_matches_go():
    # `rand.New(rand.NewSource(1)).Int63()`, the sequence of Go's long-time default global source
    # (fmt.Println(rand.Int()) famously printed 5577006791947779410).
    rng = GoRand(1)
    assert [rng.int63() for _ in range(6)] == [
        5577006791947779410,
        8674665223082153551,
        6129484611666145821,
        4037200794235010051,
        3916589616287113937,
        6334824724549167320,
    ]


def test_go_rand_seed_0_first_value_gives_geths_first_address():
    # geth's first account address 0194fdc2fa2ffcc041d3ff12045b73c86e4ff95f starts with the 7 low bytes of
    # the first Int63, lowest first: so that Int63 is 0x..fc2ffac2fd9401 with some top byte.
    first = GoRand(0).int63()
    assert first == 8717895732742165505
    assert first.to_bytes(8, "little")[:7] == bytes.fromhex("0194fdc2fa2ffc")


def test_go_rand_seed_normalisation():
    # Go reduces the seed mod 2^31-1 (non-negative) and replaces 0 by 89482311.
    def first_values(seed):
        rng = GoRand(seed)
        return [rng.int63() for _ in range(3)]

    assert first_values(0) == first_values(89482311) == first_values(2**31 - 1)
    assert first_values(-1) == first_values(2**31 - 2)
    assert first_values(1) != first_values(2)


def test_go_rand_uint32_is_top_bits_of_int63():
    a, b = GoRand(5), GoRand(5)
    for _ in range(100):
        assert a.uint32() == b.int63() >> 31


def test_go_rand_read_carries_leftover_bytes():
    # Read takes 7 bytes per Int63, lowest byte first, and keeps unused bytes for the next call.
    source = GoRand(0)
    expected = b"".join(source.int63().to_bytes(8, "little")[:7] for _ in range(10))
    for split in ([70], [1] * 70, [3, 4, 7, 20, 36], [13, 0, 57]):
        rng = GoRand(0)
        assert b"".join(rng.read(size) for size in split) == expected


def test_go_rand_int63_leaves_read_leftovers_alone():
    # Int63 does not touch the Read buffer: Go draws a fresh value and the leftover bytes stay for Read.
    rng, reference = GoRand(3), GoRand(3)
    first, second = reference.int63(), reference.int63()
    assert rng.read(2) == first.to_bytes(8, "little")[:2]
    assert rng.int63() == second
    assert rng.read(5) == first.to_bytes(8, "little")[2:7]


# --- make_accounts -----------------------------------------------------------------------------------------------


def test_make_accounts_shapes():
    addresses, accounts = make_accounts(50)
    assert addresses[0].hex() == "0194fdc2fa2ffcc041d3ff12045b73c86e4ff95f"
    assert all(len(address) == 20 for address in addresses)
    assert all(77 <= len(account) <= 110 for account in accounts)
    suffix = rlp_encode(EMPTY_ROOT) + rlp_encode(EMPTY_CODE_HASH)
    assert all(account.endswith(suffix) for account in accounts)
    assert make_accounts(5)[0] == addresses[:5]  # a prefix of the same stream, as in geth


def test_account_keys_are_keccak_of_addresses():
    addresses, _ = make_accounts(3)
    assert account_keys(addresses) == [keccak256(address) for address in addresses]


def account_root(n):
    addresses, accounts = make_accounts(n)
    return trie_root(dict(zip(account_keys(addresses), accounts)))


@pytest.mark.parametrize("n", [20, 100, 1000, 10000])
def test_make_accounts_roots(n):
    assert account_root(n) == ACCOUNT_ROOTS[n]


@pytest.mark.slow
def test_make_accounts_root_100k():
    assert account_root(100_000) == ACCOUNT_ROOTS[100_000]


def test_tiny_trie():
    _, accounts = make_accounts(5)
    mapping = {}
    for key, account_index, expected_root in TINY_TRIE_CASES:
        mapping[key] = accounts[account_index]
        assert trie_root(mapping) == expected_root


# --- random_trie -------------------------------------------------------------------------------------------------


def test_random_trie_fixed_part():
    items = random_trie_items(0)
    assert len(items) == 110
    keys = [key for key, _ in items]
    assert all(len(key) == 32 and key[:31] == bytes(31) for key in keys)
    # Order of first write: 0, 10, 1, 11, ..., 9, 19, then 20..109 (each first written as i + 10).
    assert [key[31] for key in keys] == [k for i in range(10) for k in (i, i + 10)] + list(range(20, 110))
    # Final values: k < 100 was last written by i = k; 100..109 only by i = k - 10.
    assert all(value == bytes([key[31] if key[31] < 100 else key[31] - 10]) for key, value in items)


def test_random_trie_random_part_is_seeded():
    items = random_trie_items(100)
    assert len(items) == 210
    assert items == random_trie_items(100, seed=1)
    assert items != random_trie_items(100, seed=2)
    assert random_trie_items(100, seed=2)[:110] == items[:110]
    assert all(len(key) == 32 and len(value) == 20 for key, value in items[110:])


# --- gentxs200 and DeriveSha -------------------------------------------------------------------------------------


def test_gentxs200_matches_vector_and_root():
    transactions = gentxs200()
    vector = json.loads((VECTORS / "derivesha_gentxs200.json").read_text())
    assert [tx.hex() for tx in transactions] == [tx[2:] for tx in vector["transactions"]]
    assert GENTXS200_ROOT.hex() == vector["root"][2:]
    assert len(transactions) == 200
    assert trie_root({rlp_encode(index): tx for index, tx in enumerate(transactions)}) == GENTXS200_ROOT


# --- Insert100K --------------------------------------------------------------------------------------------------


def test_insert_100k_items():
    items = insert_100k_items()
    assert len(items) == 100_000
    assert items[1] == (bytes.fromhex("0000000000000400"), bytes(20))
    assert items[-1][0] == (99_999 * 1024).to_bytes(8, "big")
    assert [key for key, _ in items] == sorted(key for key, _ in items)
    assert trie_root(items) == INSERT_100K_ROOT
