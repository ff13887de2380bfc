"""Benchmark workloads, bit-identical to the data go-ethereum's trie benchmarks and tests use.

Each workload comes with the root geth computes over it, so a wrong byte anywhere shows up as a wrong root
(the "Benchmarks" page of the documentation, docs/benchmarks.rst, lists them). The data is generated in Python;
account values are RLP-encoded and keys hashed with mpt's own RLP and Keccak, so ``python -m mpt.bench`` runs on
a plain install (the reference implementation needs pycryptodome, a test dependency). The known roots guard the
data either way:
tests/test_workloads.py checks them with the pure-Python reference trie.

* :class:`GoRand` -- an exact port of Go's ``math/rand`` (``rand.New(rand.NewSource(seed))``).
* :func:`make_accounts` / :func:`account_keys` -- geth's ``makeAccounts``; :data:`ACCOUNT_ROOTS`,
  :data:`TINY_TRIE_CASES`.
* :func:`random_trie_items` -- geth's ``randomTrie`` data (seeded, since geth uses crypto/rand).
* :func:`gentxs200` -- the 200 signed transactions of geth's DeriveSha benchmark; :data:`GENTXS200_ROOT`.
* :func:`insert_100k_items` -- geth's StackTrie ``Insert100K``; :data:`INSERT_100K_ROOT`.
* :func:`merkle_leaves` -- seeded random leaves for CometBFT's simple Merkle tree (go-square's and CometBFT's
  ``BenchmarkHashAlternatives`` shape, and our MerkleRoot sizes).
* :func:`iavl_entries`, :data:`IAVL_TREE_HASH_SEED` -- cosmos/iavl's ``TestTreeHash`` draws (Go math/rand);
  :data:`IAVL_NODE_LEAVES` and :data:`IAVL_NODE_ENCODINGS` -- cosmos/iavl PR #673's node codec vectors.

Besides the data, cached views the benchmark cases share (:func:`hashed_accounts`,
:func:`sorted_random_trie_items`, :func:`shuffled_account_pairs`): building ``make_accounts(100000)`` alone takes
seconds, so each is built once per process.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from mpt import EMPTY_CODE_HASH, EMPTY_ROOT, keccak256
from mpt import rlp  # the public name, the same before and after the package layout (asv history)

__all__ = [
    "GoRand",
    "make_accounts",
    "account_keys",
    "ACCOUNT_ROOTS",
    "TINY_TRIE_CASES",
    "random_trie_items",
    "RANDOM_TRIE_DEFAULT_SEED",
    "gentxs200",
    "GENTXS200_ROOT",
    "insert_100k_items",
    "INSERT_100K_ROOT",
    "ACCOUNT_SIZES",
    "hashed_accounts",
    "sorted_random_trie_items",
    "shuffled_account_pairs",
    "MERKLE_SIZES",
    "MERKLE_LEAF_SIZE",
    "merkle_leaves",
    "merkle_reference_root",
    "IAVL_TREE_HASH_SEED",
    "iavl_entries",
    "IAVL_NODE_LEAVES",
    "IAVL_NODE_ENCODINGS",
]

# Data files ship inside the package (see pyproject's package-data), so an installed mpt needs no repo checkout.
_DATA_DIR = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------------------------------------------
# Go's math/rand
# ---------------------------------------------------------------------------------------------------------------

_RNG_LEN = 607  # length of the lagged Fibonacci register
_RNG_TAP = 273  # the second lag
_INT63_MASK = (1 << 63) - 1
_SEED_MODULUS = (1 << 31) - 1  # seeding uses the Lehmer generator x -> 48271 * x mod (2^31 - 1)
_SEED_MULTIPLIER = 48271
_ZERO_SEED_REPLACEMENT = 89482311  # Go maps seed 0 (which would stick at 0) to this value
_BYTES_PER_INT63 = 7  # Rand.Read uses the low 7 bytes of each Int63


@lru_cache(maxsize=1)
def _go_rng_cooked() -> Tuple[int, ...]:
    """Go's ``rngCooked``: the register after 780e10 iterations, masked to 63 bits (only those bits matter)."""
    cooked = tuple(json.loads((_DATA_DIR / "go_rand_cooked.json").read_text()))
    assert len(cooked) == _RNG_LEN
    return cooked


class GoRand:
    """Go's ``math/rand.New(rand.NewSource(seed))``, bit for bit.

    The source is an additive lagged Fibonacci generator (Mitchell and Reeds): ``x[n] = x[n-607] + x[n-273]``
    over a register seeded from the Lehmer generator and XORed with a fixed "cooked" table. Go computes
    ``Int63`` as the sum masked to 63 bits; because carries only travel upwards, that masked sum does not depend
    on the top bit of the register, so keeping a 63-bit register reproduces every ``Int63`` exactly.

    ``Uint64`` is deliberately absent: modern Go returns the full 64-bit sum, whose top bit depends on the top
    bits of Go's unmasked cooked table, which the 63-bit table we ship does not carry.

    ``read`` keeps Go's ``Rand.Read`` state (``readVal``/``readPos``) between calls: each ``Int63`` yields
    7 bytes, lowest byte first, and bytes left over from one call are used by the next.
    """

    def __init__(self, seed: int = 0) -> None:
        cooked = _go_rng_cooked()
        # Go: seed = seed % M, made non-negative; Python's % already returns a non-negative result.
        x = seed % _SEED_MODULUS
        if x == 0:
            x = _ZERO_SEED_REPLACEMENT

        def next_seed(value: int) -> int:
            # Go uses Schrage's method to avoid 32-bit overflow; with Python ints the plain formula is exact.
            return (_SEED_MULTIPLIER * value) % _SEED_MODULUS

        # 20 warm-up steps, then three Lehmer draws per register entry.
        for _ in range(20):
            x = next_seed(x)
        register = []
        for i in range(_RNG_LEN):
            x = next_seed(x)
            entry = x << 40
            x = next_seed(x)
            entry ^= x << 20
            x = next_seed(x)
            entry ^= x
            register.append((entry ^ cooked[i]) & _INT63_MASK)
        self._register = register
        self._tap = 0
        self._feed = _RNG_LEN - _RNG_TAP
        self._read_val = 0  # Go's Rand.readVal: bits of the last Int63 not yet handed out by read()
        self._read_pos = 0  # Go's Rand.readPos: how many bytes of _read_val are left

    def int63(self) -> int:
        """A non-negative pseudo-random 63-bit integer (Go ``Rand.Int63``)."""
        # Both indices walk downwards through the register, wrapping around.
        self._tap = (self._tap - 1) % _RNG_LEN
        self._feed = (self._feed - 1) % _RNG_LEN
        value = (self._register[self._feed] + self._register[self._tap]) & _INT63_MASK
        self._register[self._feed] = value
        return value

    def uint32(self) -> int:
        """A pseudo-random 32-bit integer (Go ``Rand.Uint32``: the top 32 of the 63 bits)."""
        return self.int63() >> 31

    def read(self, n: int) -> bytes:
        """``n`` pseudo-random bytes (Go ``Rand.Read``), continuing from where the previous read stopped."""
        out = bytearray()
        while len(out) < n:
            if self._read_pos == 0:
                self._read_val = self.int63()
                self._read_pos = _BYTES_PER_INT63
            take = min(self._read_pos, n - len(out))
            out += (self._read_val & ((1 << (8 * take)) - 1)).to_bytes(take, "little")
            self._read_val >>= 8 * take
            self._read_pos -= take
        return bytes(out)

    def int31(self) -> int:
        """A non-negative pseudo-random 31-bit integer (Go ``Rand.Int31``: the top 31 of the 63 bits)."""
        return self.int63() >> 32

    def int31n(self, n: int) -> int:
        """Uniform in [0, n) (Go ``Rand.Int31n``: a mask for powers of two, else rejection sampling)."""
        if n <= 0:
            raise ValueError("invalid argument to int31n")
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        limit = (1 << 31) - 1 - (1 << 31) % n
        v = self.int31()
        while v > limit:
            v = self.int31()
        return v % n

    def intn(self, n: int) -> int:
        """Uniform in [0, n) (Go ``Rand.Intn``; only the n < 2**31 branch, which goes through Int31n)."""
        if n <= 0:
            raise ValueError("invalid argument to intn")
        if n > (1 << 31) - 1:
            raise NotImplementedError("Go's Intn for n >= 2**31 uses Int63n, which is not ported")
        return self.int31n(n)

    def float64(self) -> float:
        """Uniform in [0, 1) (Go ``Rand.Float64``: Int63 / 2**63, resampling the (never seen) 1.0)."""
        while True:
            f = float(self.int63()) / (1 << 63)
            if f != 1.0:
                return f


# ---------------------------------------------------------------------------------------------------------------
# Accounts (geth trie_test.go makeAccounts)
# ---------------------------------------------------------------------------------------------------------------

def make_accounts(n: int) -> Tuple[List[bytes], List[bytes]]:
    """geth's ``makeAccounts(n)``: ``n`` 20-byte addresses and their RLP-encoded accounts.

    With ``GoRand(0)``: all addresses are drawn first (``read(20)`` each), then per account ``nonce = int63()``,
    ``nbytes = uint32() % 33``, ``balance`` = the big-endian integer of ``read(nbytes)``, and the value is
    ``rlp([nonce, balance, EMPTY_ROOT, keccak256(b"")])``. Store them under :func:`account_keys`.
    """
    rng = GoRand(0)
    addresses = [rng.read(20) for _ in range(n)]
    accounts = []
    for _ in range(n):
        nonce = rng.int63()
        balance_length = rng.uint32() % 33  # 0..32 bytes; geth avoids big.Rand, which is not portable
        balance = int.from_bytes(rng.read(balance_length), "big")
        accounts.append(rlp.encode([nonce, balance, EMPTY_ROOT, EMPTY_CODE_HASH]))
    return addresses, accounts


def account_keys(addresses: Sequence[bytes]) -> List[bytes]:
    """The trie keys of ``addresses``: ``keccak256(address)`` each, as geth's benchmarks insert them."""
    return [keccak256(address) for address in addresses]


ACCOUNT_ROOTS: Dict[int, bytes] = {
    20: bytes.fromhex("05e58c630c3a9eba8ed3b8d4bb127afffe4ca7d320a5f5a1b2b6f93f880f404b"),
    100: bytes.fromhex("c68d5e803037e6ed076c9ca93c37e639d145cdbbe8add2630e3689a1473687e4"),
    1000: bytes.fromhex("72f9d3f3fe1e1dd7b8936442e7642aef76371472d94319900790053c493f3fe6"),
    10000: bytes.fromhex("57c0e2e0202b7a52670678080718925b93df6742a5259e7c5064eae65272a2e3"),
    100000: bytes.fromhex("61cd842b37356ab2f50dc4b3e8136175aeb63b21cee235ab041500b70d9a3844"),
    # BuildRoot/1M's (not in geth's table): Trie, a StackTrie over the sorted keys and build_root agree on it.
    1000000: bytes.fromhex("766f6d26382c5107288a9f751138d2e2b2e9c345418ae2dc816e2c1f0a01d071"),
}
"""Root of the trie holding all ``make_accounts(n)`` accounts under ``account_keys``, by ``n``."""

TINY_TRIE_CASES: Tuple[Tuple[bytes, int, bytes], ...] = (
    (
        (0x1337).to_bytes(32, "big"),
        3,
        bytes.fromhex("8c6a85a4d9fda98feff88450299e574e5378e32391f75a055d470ac0653f1005"),
    ),
    (
        (0x1338).to_bytes(32, "big"),
        4,
        bytes.fromhex("ec63b967e98a5720e7f720482151963982890d82c9093c0d486b7eb8883a66b1"),
    ),
    (
        (0x1339).to_bytes(32, "big"),
        4,
        bytes.fromhex("0608c1d1dc3905fa22204c7a0e43644831c3b6d3def0f274be623a948197e64a"),
    ),
)
"""geth's TestTinyTrie: starting from an empty trie, for each ``(key, account_index, root)`` insert
``make_accounts(5)[1][account_index]`` at ``key``; the trie's root must then be ``root``."""


# ---------------------------------------------------------------------------------------------------------------
# randomTrie (geth proof_test.go), used by the proof benchmarks
# ---------------------------------------------------------------------------------------------------------------

RANDOM_TRIE_DEFAULT_SEED = 1
"""Seed of :func:`random_trie_items`' random part; geth draws it from crypto/rand, so any seed is faithful."""


def random_trie_items(n: int, seed: int = RANDOM_TRIE_DEFAULT_SEED) -> List[Tuple[bytes, bytes]]:
    """geth's ``randomTrie(n)`` data as ``(key, value)`` pairs: 110 fixed keys, then ``n`` random ones.

    Fixed part, as geth writes it: for ``i`` in 0..99, ``leftpad32([i]) -> [i]`` then ``leftpad32([i+10]) -> [i]``.
    Later writes overwrite earlier ones, so the 110 distinct keys 0..109 end up with value ``[k]`` for ``k < 100``
    and ``[k-10]`` for ``k >= 100``. These 1-byte values make embedded leaves. The pairs come in order of each
    key's first write (0, 10, 1, 11, ..., 9, 19, 20, 21, ..., 109) with its final value.

    Random part: ``n`` pairs of a 32-byte key and a 20-byte value from ``random.Random(seed)``'s ``randbytes``
    (key then value, pair by pair). geth uses crypto/rand here, so its data differs run to run; ours is fixed by
    ``seed`` (default :data:`RANDOM_TRIE_DEFAULT_SEED`) so runs are comparable.
    """
    items: Dict[bytes, bytes] = {}  # dict keeps first-insertion order while later writes update the value
    for i in range(100):
        items[bytes([i]).rjust(32, b"\x00")] = bytes([i])
        items[bytes([i + 10]).rjust(32, b"\x00")] = bytes([i])
    rng = random.Random(seed)
    for _ in range(n):
        key = rng.randbytes(32)
        items[key] = rng.randbytes(20)
    return list(items.items())


# ---------------------------------------------------------------------------------------------------------------
# DeriveSha over genTxs(200) (geth core/types/hashing_test.go)
# ---------------------------------------------------------------------------------------------------------------

GENTXS200_ROOT = bytes.fromhex("d325882c79784f5751b8871ac628c2841154d5b739c5ad811bf0de74d927ad63")
"""DeriveSha root of :func:`gentxs200`: the trie of ``rlp(i) -> transaction i``."""


@lru_cache(maxsize=1)
def _gentxs200_cached() -> Tuple[bytes, ...]:
    data = json.loads((_DATA_DIR / "derivesha_gentxs200.json").read_text())
    return tuple(bytes.fromhex(tx[2:] if tx.startswith("0x") else tx) for tx in data["transactions"])


def gentxs200() -> List[bytes]:
    """The consensus encodings of geth's ``genTxs(200)``: 200 signed legacy transactions (EIP-155, chain 18)."""
    return list(_gentxs200_cached())


# ---------------------------------------------------------------------------------------------------------------
# Insert100K (geth stacktrie_test.go)
# ---------------------------------------------------------------------------------------------------------------

INSERT_100K_ROOT = bytes.fromhex("b0071bd257342925d9d8a9f002b9d2b646a35437aa8b089628ab56e428d29a1a")
"""Root of :func:`insert_100k_items`."""


def insert_100k_items() -> List[Tuple[bytes, bytes]]:
    """geth's StackTrie ``Insert100K`` data: key = 8-byte big-endian ``j * 1024`` for j in 0..99999 (ascending,
    so a StackTrie accepts them in order), value = 20 zero bytes."""
    value = bytes(20)
    return [((j * 1024).to_bytes(8, "big"), value) for j in range(100_000)]


# ---------------------------------------------------------------------------------------------------------------
# Cached views of the geth workloads, shared by the benchmark cases (built once per process)
# ---------------------------------------------------------------------------------------------------------------

ACCOUNT_SIZES: Dict[str, int] = {"10": 20, "100": 100, "1K": 1000, "10K": 10000, "100K": 100000}
"""geth's HashFixedSize labels and the number of accounts each really uses (geth's "/10" uses 20)."""


@lru_cache(maxsize=None)
def hashed_accounts(n: int) -> Tuple[Tuple[bytes, ...], Tuple[bytes, ...]]:
    """``make_accounts(n)`` as (:func:`account_keys` of the addresses, account RLPs): what HashFixedSize stores."""
    addresses, values = make_accounts(n)
    return tuple(account_keys(addresses)), tuple(values)


@lru_cache(maxsize=None)
def sorted_random_trie_items(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """``random_trie_items(n)``, sorted by key (the ``entries`` of geth's proof benchmarks)."""
    return tuple(sorted(random_trie_items(n)))


@lru_cache(maxsize=None)
def shuffled_account_pairs(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """:func:`hashed_accounts` as (key, account RLP) pairs in a seeded shuffled order (our BuildRoot workload,
    docs/benchmarks.rst: build_root takes its input in any order)."""
    keys, values = hashed_accounts(n)
    pairs = list(zip(keys, values))
    random.Random(n).shuffle(pairs)
    return tuple(pairs)


# ---------------------------------------------------------------------------------------------------------------
# CometBFT simple Merkle tree (crypto/merkle; go-square's BenchmarkHashAlternatives)
# ---------------------------------------------------------------------------------------------------------------

MERKLE_SIZES: Dict[str, int] = {"100": 100, "1K": 1000, "10K": 10000, "100K": 100000}
"""MerkleRoot labels and leaf counts (leaves of :data:`MERKLE_LEAF_SIZE` bytes)."""

MERKLE_LEAF_SIZE = 100
MERKLE_LEAVES_DEFAULT_SEED = 6962


@lru_cache(maxsize=None)
def merkle_leaves(n: int, size: int, seed: int = MERKLE_LEAVES_DEFAULT_SEED) -> Tuple[bytes, ...]:
    """``n`` leaves of ``size`` pseudo-random bytes, the same every run.

    go-square's and CometBFT's ``BenchmarkHashAlternatives`` hash 100 leaves of ``sha256.Size`` bytes from
    crypto/rand, so their data differs run to run; ours is seeded (``random.Random``) so runs are comparable.
    """
    rng = random.Random("%d/%d/%d" % (seed, n, size))
    return tuple(rng.getrandbits(8 * size).to_bytes(size, "little") for _ in range(n))


@lru_cache(maxsize=None)
def merkle_reference_root(leaves: Tuple[bytes, ...]) -> bytes:
    """The CometBFT root of ``leaves`` by the pure-Python reference (mpt._merkle_reference), cached: the
    known root of a :func:`merkle_leaves` workload."""
    from mpt.merkle import _reference as _merkle_reference

    return _merkle_reference.root(list(leaves))


# ---------------------------------------------------------------------------------------------------------------
# Cosmos IAVL (cosmos/iavl tree_test.go TestTreeHash; node_test.go of PR #673)
# ---------------------------------------------------------------------------------------------------------------

IAVL_TREE_HASH_SEED = 49872768940
"""The ``rand.New(rand.NewSource(...))`` seed of cosmos/iavl's ``TestTreeHash``."""


@lru_cache(maxsize=None)
def iavl_entries(n: int) -> Tuple[Tuple[bytes, bytes], ...]:
    """``n`` fresh 16-byte keys with 16-byte values, drawn as iavl's TestTreeHash draws them (Go math/rand,
    ``Read`` of the key, then of the value, from :data:`IAVL_TREE_HASH_SEED`)."""
    r = GoRand(IAVL_TREE_HASH_SEED)
    return tuple((r.read(16), r.read(16)) for _ in range(n))


IAVL_TREE_SEED = 4321
"""The ``random.Random`` seed of :func:`iavl_tree_entries` (the IAVLTree store cases)."""


@lru_cache(maxsize=None)
def iavl_tree_entries(n: int, seed: int = IAVL_TREE_SEED) -> Tuple[Tuple[bytes, bytes], ...]:
    """``n`` (16-byte key, 32-byte value) pairs with distinct keys, seeded: the sets of Go iavl's tree
    benchmarks (docs/iavl.rst, "Trees on a store": ``IAVLTree/Set10K+Save``, ``Set100K+Save``, ``Get100K``, ...)."""
    r = random.Random(seed)
    seen: Dict[bytes, bytes] = {}
    while len(seen) < n:
        seen[r.randbytes(16)] = r.randbytes(32)
    return tuple(seen.items())


def iavl_prune_history(tree, keys: int = 10000, versions: int = 10, updates: int = 1000, removes: int = 100,
                       inserts: int = 100, seed: int = 99, entries_seed: int = 77) -> None:
    """The versions ``IAVLTree/Prune`` prunes, saved in ``tree`` (an empty ``MutableTree``): ``keys`` pairs of
    :func:`iavl_tree_entries` as the first version, then ``versions - 1`` more, each with ``updates`` new 32-byte
    values for random live keys, ``removes`` random live keys removed and the next ``inserts`` pairs added."""
    r = random.Random(seed)
    entries = iavl_tree_entries(keys + inserts * versions, seed=entries_seed)
    live = [k for k, _ in entries[:keys]]
    for k, v in entries[:keys]:
        tree.set(k, v)
    tree.save_version()
    fresh = iter(entries[keys:])
    for _ in range(versions - 1):
        for k in r.sample(live, updates):
            tree.set(k, r.randbytes(32))
        for k in r.sample(live, removes):
            tree.remove(k)
            live.remove(k)
        for _ in range(inserts):
            k, v = next(fresh)
            tree.set(k, v)
            live.append(k)
        tree.save_version()


IAVL_NODE_LEAVES: Dict[str, Tuple[bytes, bytes, int]] = {
    # PR #673 node_test.go: the "leaf" vector (key "key", value "value", version 3) and its "large number"
    # version 2**32-1 (the largest the stream-vbyte format holds; a leaf's size stays 1).
    "small": (b"key", b"value", 3),
    "large": (b"key", b"value", 2**32 - 1),
}
"""(key, value, version) of the leaves cosmos/iavl PR #673's node benchmarks encode and decode."""

IAVL_NODE_ENCODINGS: Dict[Tuple[str, str], str] = {
    ("small", "vbyte"): "0000030100036b657976616c7565",
    ("small", "legacy"): "000206036b65790576616c7565",
    ("small", "v1"): "0002036b65790576616c7565",
}
"""The encodings (hex) of ``IAVL_NODE_LEAVES["small"]`` by format, as PR #673's node tests expect them."""


# ---------------------------------------------------------------------------------------------------------------
# ICS23 (cosmos/ics23 testdata; an abci_query answer built from a Go iavl proof)
# ---------------------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def ics23_vectors() -> Dict[str, Any]:
    """``ics23_cases.json``: cosmos/ics23's testdata ``iavl/exist_left``, ``iavl/nonexist_left`` and
    ``tendermint/exist_left`` (unmodified: root, proof, key, value in hex), and ``abci_query``: the answer of
    tests/vectors/cosmos/abci/present.json (a Go iavl proof chained with an ``mpt.merkle.map_proof`` multistore
    proof) with its app hash and value."""
    return json.loads((_DATA_DIR / "ics23_cases.json").read_text())
