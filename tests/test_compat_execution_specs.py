"""mpt.compat.execution_specs against execution-specs itself: every fork of the installed ``ethereum-execution``
gives the same roots patched and unpatched, with the spec's own types and functions.

The unpatched side is the spec's own code: the original ``root`` (``codec.spec_root``, the function as it was before
install()) for tries, and the spec's ``state_root`` composition (the state trie's root with each account's storage
root, both through the original ``root``) for states; the tests that compare errors uninstall the patch for real.
Skipped when the ``spec`` extra (execution-specs, Python >= 3.11) is not installed.
"""

import gc
import importlib
import inspect
import json
import sys

import pytest

pytest.importorskip("ethereum.forks", reason='execution-specs not installed: pip install "mpt-engine[spec]"')
pytest.importorskip("ethereum_types.numeric", reason="execution-specs not installed")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import from_hex_or_text, load_vector  # noqa: E402
from ethereum_types.bytes import Bytes, Bytes20, Bytes32  # noqa: E402
from ethereum_types.numeric import U256, Uint  # noqa: E402

from mpt.compat import execution_specs as es  # noqa: E402
from mpt.compat.execution_specs import _fast  # noqa: E402

MAINNET_GENESIS_STATE_ROOT = "d7f8974fb5ac78d9ac099b9ad5018bedc2ce0a72dad1827a1709da30580f0544"


@pytest.fixture(scope="module", autouse=True)
def _installed():
    with es.patched():
        yield


def _forks():
    with es.patched():
        return es.patched_forks()


FORKS = _forks()


class Fork:
    """One fork's modules and the spec's unpatched roots."""

    def __init__(self, name):
        self.name = name
        self.trie = importlib.import_module(name + ".trie")
        self.state = importlib.import_module(name + ".state")
        self.types = importlib.import_module(name + ".fork_types")
        self.codec = getattr(self.trie, es._stubs.SPEC_GLOBAL)
        assert es.original(self.trie.root) is self.codec.spec_root
        assert es.original(self.state.state_root) is self.codec.spec_state_root
        self.with_transient = "transient_storage" in inspect.signature(self.state.begin_transaction).parameters
        self.TransientStorage = getattr(self.state, "TransientStorage", None)

    def spec_root(self, trie, get_storage_root=None):
        return self.codec.spec_root(trie, get_storage_root)

    def spec_state_root(self, state):
        """The spec's state_root, every root through the spec's own (unpatched) root."""
        assert not state._snapshots

        def storage_root(address):
            if address in state._storage_tries:
                return self.spec_root(state._storage_tries[address])
            return self.trie.EMPTY_TRIE_ROOT

        return self.spec_root(state._main_trie, storage_root)


@pytest.fixture(params=FORKS, ids=[f.rpartition(".")[2] for f in FORKS])
def fork(request):
    return Fork(request.param)


def test_every_fork_is_patched():
    import ethereum.forks
    import pkgutil

    packages = {"ethereum.forks." + m.name for m in pkgutil.iter_modules(ethereum.forks.__path__) if m.ispkg}
    assert set(FORKS) == packages
    assert len(FORKS) >= 20                 # frontier ... osaka, bpo1, bpo2 in 2.20.0
    for name, info in es.stats().items():
        assert info["fast_account"] and info["fast_u256"], name


def test_install_is_idempotent_and_undone(fork):
    function = fork.trie.root
    assert function.__code__ is es._stubs.root.__code__
    es.install()
    es.install()
    assert fork.trie.root is function and fork.state.root is function
    es.uninstall()
    try:
        assert function.__code__ is not es._stubs.root.__code__
        assert not hasattr(fork.trie, es._stubs.SPEC_GLOBAL)
        assert not es.installed()
        es.uninstall()
    finally:
        es.install()
    assert function.__code__ is es._stubs.root.__code__


def test_signatures_stay_the_specs(fork):
    assert str(inspect.signature(fork.trie.root)) == str(inspect.signature(fork.codec.spec_root))
    assert fork.trie.root.__name__ == "root" and fork.state.state_root.__name__ == "state_root"


# ------------------------------------------------------------------------------------------ leaf encodings

u256s = st.integers(0, 2**256 - 1)
nonces = st.integers(0, 2**64 + 5)
codes = st.binary(max_size=300)


@settings(max_examples=60, deadline=None)
@given(nonce=nonces, balance=u256s, code=codes, storage_root=st.binary(min_size=32, max_size=32), value=u256s,
       raw=st.binary(max_size=80))
def test_leaf_encodings_equal_encode_node_in_every_fork(nonce, balance, code, storage_root, value, raw):
    for name in FORKS:
        trie = sys.modules[name + ".trie"]
        codec = getattr(trie, es._stubs.SPEC_GLOBAL)
        account = trie.Account(nonce=Uint(nonce), balance=U256(balance), code=Bytes(code))
        root = Bytes32(storage_root)
        assert _fast.account_encoding(codec, account, root) == trie.encode_node(account, root)
        assert _fast.leaf_encoding(codec, U256(value)) == trie.encode_node(U256(value))
        assert _fast.leaf_encoding(codec, Bytes(raw)) == trie.encode_node(Bytes(raw))


# ---------------------------------------------------------------------------------------- generic tries

def _bytes_trie_ops():
    key = st.binary(max_size=5)                       # short keys: prefixes of each other, the empty key
    value = st.one_of(st.binary(min_size=1, max_size=90), st.just(b""))
    return st.lists(st.one_of(st.tuples(st.just("set"), key, value), st.tuples(st.just("root"))), max_size=60)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secured=st.booleans(), ops=_bytes_trie_ops(), fork_index=st.integers(0, len(FORKS) - 1))
def test_bytes_tries_random_operations(secured, ops, fork_index):
    f = Fork(FORKS[fork_index])
    trie = f.trie.Trie(secured=secured, default=Bytes(b""))
    for op in ops + [("root",)]:
        if op[0] == "set":
            f.trie.trie_set(trie, Bytes(op[1]), Bytes(op[2]))
        else:
            assert f.trie.root(trie) == f.spec_root(trie)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.tuples(st.integers(0, 80), st.integers(0, 3)), min_size=1, max_size=250),
       fork_index=st.integers(0, len(FORKS) - 1))
def test_storage_tries_cross_the_small_path(ops, fork_index):
    """Storage-like tries growing past and shrinking below the compiled small-trie size (32 entries)."""
    f = Fork(FORKS[fork_index])
    trie = f.trie.Trie(secured=True, default=U256(0))
    for i, (slot, value) in enumerate(ops):
        f.trie.trie_set(trie, Bytes32(slot.to_bytes(32, "big")), U256(value * (2**200 + 1)))
        if i % 7 == 0:
            root = f.trie.root(trie)
            assert root == f.spec_root(trie) and type(root) is type(f.spec_root(trie))
    assert f.trie.root(trie) == f.spec_root(trie)


def test_copy_trie_keeps_the_cache_exact(fork):
    before = es.stats()[fork.name]["fallbacks"]
    t = fork.trie.Trie(secured=True, default=U256(0))
    for i in range(100):
        fork.trie.trie_set(t, Bytes32(i.to_bytes(32, "big")), U256(i + 1))
    fork.trie.root(t)
    twin = fork.trie.copy_trie(t)
    fork.trie.trie_set(twin, Bytes32(bytes(32)), U256(0))
    fork.trie.trie_set(t, Bytes32(bytes(31) + b"\x05"), U256(77))
    for trie in (t, twin):
        assert fork.trie.root(trie) == fork.spec_root(trie)
    # Writes outside trie_set, and a dict swapped in, are seen too.
    twin._data[Bytes32(bytes(31) + b"\x09")] = U256(5)
    del twin._data[Bytes32(bytes(31) + b"\x0a")]
    twin._data.update({Bytes32(bytes(31) + b"\x0b"): U256(6)})
    twin._data.pop(Bytes32(bytes(31) + b"\x0c"))
    twin._data.setdefault(Bytes32(b"\x01" * 32), U256(8))
    assert fork.trie.root(twin) == fork.spec_root(twin)
    twin._data |= {Bytes32(b"\x02" * 32): U256(9)}
    twin._data.popitem()
    assert fork.trie.root(twin) == fork.spec_root(twin)
    twin._data.clear()
    assert fork.trie.root(twin) == fork.trie.EMPTY_TRIE_ROOT == fork.spec_root(twin)
    t._data = {Bytes32(b"\x03" * 32): U256(1)}
    assert fork.trie.root(t) == fork.spec_root(t)
    assert es.stats()[fork.name]["fallbacks"] == before


# ------------------------------------------------------------------------------------ states, transactions

ADDRESSES = [Bytes20(bytes([i]) * 20) for i in range(6)]
SLOTS = [Bytes32(bytes([i]) * 32) for i in range(5)]
CODES = [Bytes(b""), Bytes(b"\x60\x00\x60\x00"), Bytes(bytes(range(200)))]

state_ops = st.lists(st.one_of(
    st.tuples(st.just("account"), st.integers(0, 5), nonces, u256s, st.integers(0, 2)),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("storage"), st.integers(0, 5), st.integers(0, 4), st.sampled_from([0, 1, 2**255, 7])),
    st.tuples(st.just("destroy_account"), st.integers(0, 5)),
    st.tuples(st.just("destroy_storage"), st.integers(0, 5)),
    st.tuples(st.just("raw_storage_write"), st.integers(0, 5), st.integers(0, 4), st.integers(1, 9)),
    st.tuples(st.just("copy_state_trie")),
    st.tuples(st.just("begin")), st.tuples(st.just("commit")), st.tuples(st.just("rollback")),
    st.tuples(st.just("root")),
), max_size=50)


def _run_state_ops(f, ops):
    s = f.state
    state = s.State()
    transient = f.TransientStorage() if f.TransientStorage is not None else None

    def tx(function):
        return function(state, transient) if f.with_transient else function(state)

    roots = 0
    for op in ops + [("commit_all",), ("root",)]:
        kind = op[0]
        if kind == "account":
            s.set_account(state, ADDRESSES[op[1]], f.types.Account(nonce=Uint(op[2]), balance=U256(op[3]),
                                                                    code=CODES[op[4]]))
        elif kind == "delete":
            s.set_account(state, ADDRESSES[op[1]], None)
        elif kind == "storage":
            if s.get_account_optional(state, ADDRESSES[op[1]]) is not None:
                s.set_storage(state, ADDRESSES[op[1]], SLOTS[op[2]], U256(op[3]))
        elif kind == "destroy_account":
            s.destroy_account(state, ADDRESSES[op[1]])
        elif kind == "destroy_storage":
            s.destroy_storage(state, ADDRESSES[op[1]])
        elif kind == "raw_storage_write":
            trie = state._storage_tries.get(ADDRESSES[op[1]])
            if trie is not None:
                trie._data[SLOTS[op[2]]] = U256(op[3])
        elif kind == "copy_state_trie":
            if not state._snapshots:
                state._main_trie = f.trie.copy_trie(state._main_trie)
        elif kind == "begin":
            tx(s.begin_transaction)
        elif kind == "commit" and state._snapshots:
            tx(s.commit_transaction)
        elif kind == "rollback" and state._snapshots:
            tx(s.rollback_transaction)
        elif kind == "commit_all":
            while state._snapshots:
                tx(s.commit_transaction)
        elif kind == "root":
            if state._snapshots:
                with pytest.raises(AssertionError):
                    s.state_root(state)
                continue
            got = s.state_root(state)
            assert got == f.spec_state_root(state), ops
            assert type(got) is type(f.spec_state_root(state))
            for address in ADDRESSES[:3]:
                assert s.storage_root(state, address) == (
                    f.spec_root(state._storage_tries[address]) if address in state._storage_tries
                    else f.trie.EMPTY_TRIE_ROOT)
            roots += 1
    return roots


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=state_ops)
def test_state_random_operations(fork, ops):
    _run_state_ops(fork, ops)


def test_state_operations_take_the_compiled_path(fork):
    ops = [("account", i, i, 10**18 + i, i % 3) for i in range(6)]
    ops += [("storage", i, j, 7) for i in range(6) for j in range(5)] + [("root",)]
    ops += [("begin",), ("storage", 1, 1, 0), ("destroy_account", 2), ("begin",), ("account", 3, 9, 9, 1),
            ("rollback",), ("commit",), ("root",), ("raw_storage_write", 4, 0, 3), ("root",),
            ("copy_state_trie",), ("storage", 5, 0, 0), ("delete", 0), ("root",)]
    before = es.stats()[fork.name]
    assert _run_state_ops(fork, ops) == 5
    after = es.stats()[fork.name]
    assert after["fallbacks"] == before["fallbacks"]
    assert after["syncs"] > before["syncs"]


def test_incremental_root_touches_only_what_changed(fork):
    s = fork.state
    state = s.State()
    for i in range(300):
        address = Bytes20(i.to_bytes(20, "big"))
        s.set_account(state, address, fork.types.Account(nonce=Uint(i), balance=U256(i), code=Bytes(b"")))
        s.set_storage(state, address, Bytes32(bytes(32)), U256(i + 1))
    s.state_root(state)
    before = es.stats()[fork.name]
    s.set_storage(state, Bytes20((5).to_bytes(20, "big")), Bytes32(bytes(32)), U256(0))
    s.set_account(state, Bytes20((6).to_bytes(20, "big")), None)
    assert s.state_root(state) == fork.spec_state_root(state)
    after = es.stats()[fork.name]
    assert after["full_builds"] - before["full_builds"] <= 1      # the one changed storage trie (small path)
    assert after["syncs"] == before["syncs"] + 1


def test_large_storage_tries_in_a_state(fork):
    """Storage tries past the compiled small path (32 slots) inside state roots, from scratch and incremental."""
    s = fork.state
    state = s.State()
    before = es.stats()[fork.name]["fallbacks"]
    for i in range(8):
        address = Bytes20(i.to_bytes(20, "big"))
        s.set_account(state, address, fork.types.Account(nonce=Uint(i), balance=U256(i), code=Bytes(b"\x00")))
        for j in range(33 + i if i < 3 else i):
            s.set_storage(state, address, Bytes32(j.to_bytes(32, "big")), U256(j + 1))
    assert s.state_root(state) == fork.spec_state_root(state)
    s.set_storage(state, Bytes20((0).to_bytes(20, "big")), Bytes32(bytes(32)), U256(0))      # 33 -> 32 slots
    s.set_storage(state, Bytes20((1).to_bytes(20, "big")), Bytes32(b"\x07" * 32), U256(5))
    s.destroy_storage(state, Bytes20((2).to_bytes(20, "big")))
    assert s.state_root(state) == fork.spec_state_root(state)
    assert es.stats()[fork.name]["fallbacks"] == before


def test_mirrors_go_with_their_states(fork):
    def mirrors():
        return sum(1 for o in gc.get_objects() if type(o) is _fast.AccountMirror)

    gc.collect()
    start = mirrors()
    for _ in range(20):
        state = fork.state.State()
        fork.state.set_account(state, ADDRESSES[0], fork.types.Account(nonce=Uint(1), balance=U256(0),
                                                                        code=Bytes(b"")))
        fork.state.state_root(state)
        del state
    gc.collect()
    assert mirrors() == start


# Where the compiled integer encoding changes regime: single bytes, each 8-bit length, each 30-bit digit of
# CPython's ints, each 64-bit limb, and the 256-bit top.
BOUNDARY_INTS = sorted({v for k in range(257) for v in ((1 << k) - 1, 1 << k, (1 << k) + 1) if v < 2**256}
                       | {0x7F, 0x80, 0xFF, 0x100} | {(1 << (30 * d)) - 1 for d in range(1, 9)})


def test_integer_boundaries_equal_encode_node_in_every_fork():
    root = Bytes32(bytes(range(32)))
    for name in FORKS:
        trie = sys.modules[name + ".trie"]
        codec = getattr(trie, es._stubs.SPEC_GLOBAL)
        for i, value in enumerate(BOUNDARY_INTS):
            assert _fast.leaf_encoding(codec, U256(value)) == trie.encode_node(U256(value)), (name, value)
            account = trie.Account(nonce=Uint(value), balance=U256(BOUNDARY_INTS[-1 - i]), code=Bytes(b""))
            assert _fast.account_encoding(codec, account, root) == trie.encode_node(account, root), (name, value)
        for nonce in (2**256, 2**256 + 1, 2**300):        # a Uint past 256 bits: the fork's own encode_node
            account = trie.Account(nonce=Uint(nonce), balance=U256(1), code=Bytes(b""))
            with pytest.raises(_fast.NeedsSpec):
                _fast.account_encoding(codec, account, root)


def test_huge_nonce_state_root_is_the_specs(fork):
    s = fork.state
    state = s.State()
    s.set_account(state, ADDRESSES[0], fork.types.Account(nonce=Uint(2**300), balance=U256(1), code=Bytes(b"")))
    s.set_account(state, ADDRESSES[1], fork.types.Account(nonce=Uint(2**255), balance=U256(2**256 - 1),
                                                          code=Bytes(b"\x01")))
    s.set_storage(state, ADDRESSES[1], SLOTS[0], U256(2**200 + 3))
    assert s.state_root(state) == fork.spec_state_root(state)


def test_storage_dicts_held_elsewhere_are_copied_not_moved(fork):
    """A storage dict nobody else holds moves into its TrackingDict; one that is held elsewhere is copied and left
    as it was (what its holder reads does not change under it)."""
    s = fork.state
    state = s.State()
    for i in range(40):
        address = Bytes20(i.to_bytes(20, "big"))
        s.set_account(state, address, fork.types.Account(nonce=Uint(i), balance=U256(i), code=Bytes(b"")))
        for j in range(1 + i % 3):
            s.set_storage(state, address, Bytes32(j.to_bytes(32, "big")), U256(i * 10 + j + 1))
    held = {a: t._data for a, t in list(state._storage_tries.items())[::3]}
    contents = {a: dict(d) for a, d in held.items()}
    assert s.state_root(state) == fork.spec_state_root(state)
    for address, data in held.items():
        assert type(data) is dict and data == contents[address]
        assert state._storage_tries[address]._data == contents[address]
        assert type(state._storage_tries[address]._data) is _fast.TrackingDict
    assert all(type(t._data) is _fast.TrackingDict for t in state._storage_tries.values())
    for address in list(state._storage_tries)[:10]:
        s.set_storage(state, address, Bytes32(b"\x05" * 32), U256(77))
        s.set_storage(state, address, Bytes32(bytes(32)), U256(0))
    assert s.state_root(state) == fork.spec_state_root(state)


def test_full_builds_one_after_another_reuse_memory_exactly(fork):
    """Full builds hand their working memory to the next one, and a dropped state's node store to the next state:
    states built, dropped and changed in any order keep the spec's roots."""
    s = fork.state

    def make(n, salt):
        state = s.State()
        for i in range(n):
            address = Bytes20((i * 7919 + salt).to_bytes(20, "big"))
            s.set_account(state, address, fork.types.Account(nonce=Uint(i + salt), balance=U256(2**70 + i),
                                                             code=Bytes(b"\x60" * (i % 4))))
            for j in range(i % 4):
                s.set_storage(state, address, Bytes32((j + salt).to_bytes(32, "big")), U256(i + j + 1))
        return state

    def change(state, k):
        for address in list(state._main_trie._data)[k::17]:
            s.set_storage(state, address, Bytes32(b"\x09" * 32), U256(k + 1))
            s.set_account(state, address, fork.types.Account(nonce=Uint(k), balance=U256(k), code=Bytes(b"")))

    states = {}
    for step, (n, salt) in enumerate([(300, 1), (500, 2), (120, 3), (700, 4), (50, 5)]):
        states[salt] = make(n, salt)
        assert s.state_root(states[salt]) == fork.spec_state_root(states[salt])
        if step % 2:
            del states[min(states)]                  # a smaller or larger state's store goes to the next one
            gc.collect()
        for key, state in states.items():
            change(state, step + key)
            assert s.state_root(state) == fork.spec_state_root(state)


# ------------------------------------------------------------------------------------------------ vectors

@pytest.mark.parametrize("name", ["trietest.json", "trietest_secureTrie.json", "trieanyorder.json",
                                  "trieanyorder_secureTrie.json", "hex_encoded_securetrie_test.json"])
def test_trie_tests_vectors(name):
    trie_module = sys.modules[FORKS[-1] + ".trie"]
    secured = "secure" in name.lower()
    for case_name, case in load_vector("TrieTests/" + name).items():
        pairs = case["in"]
        if isinstance(pairs, dict):
            pairs = list(pairs.items())
        trie = trie_module.Trie(secured=secured, default=Bytes(b""))
        for key, value in pairs:
            key, value = from_hex_or_text(key), from_hex_or_text(value)
            trie_module.trie_set(trie, Bytes(key), Bytes(value or b""))
            trie_module.root(trie)                        # incremental from here on
        assert trie_module.root(trie).hex() == case["root"][2:], (name, case_name)


def test_mainnet_genesis_through_the_specs_genesis_code():
    from ethereum.genesis import GenesisFork, add_genesis_block, get_genesis_configuration
    from ethereum.forks.frontier import blocks, fork as frontier, fork_types, state, trie
    from ethereum.forks.frontier.utils.hexadecimal import hex_to_address
    from ethereum_types.numeric import U64

    assert state.state_root.__code__ is es._stubs.state_root.__code__
    before = es.stats()["ethereum.forks.frontier"]
    hardfork = GenesisFork(
        Address=fork_types.Address, Account=fork_types.Account, Trie=trie.Trie, Bloom=fork_types.Bloom,
        Header=blocks.Header, Block=blocks.Block, hex_to_address=hex_to_address, set_account=state.set_account,
        set_storage=state.set_storage, state_root=state.state_root, root=trie.root)
    chain = frontier.BlockChain(blocks=[], state=state.State(), chain_id=U64(1))
    add_genesis_block(hardfork, chain, get_genesis_configuration("mainnet.json"))
    assert chain.blocks[0].header.state_root.hex() == MAINNET_GENESIS_STATE_ROOT
    after = es.stats()["ethereum.forks.frontier"]
    assert after["fallbacks"] == before["fallbacks"] and after["full_builds"] > before["full_builds"]


# ---------------------------------------------------------------------------------------------- bad input

def _outcome(function, *args):
    try:
        return ("root", bytes(function(*args)))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(e), str(e))


def _patched_and_unpatched(function, *args):
    patched = _outcome(function, *args)
    es.uninstall()
    try:
        unpatched = _outcome(function, *args)
    finally:
        es.install()
    return patched, unpatched


def test_bad_states_fail_as_the_spec_fails(fork):
    s, trie = fork.state, fork.trie
    account = fork.types.Account(nonce=Uint(1), balance=U256(1), code=Bytes(b""))

    storage_with_uint = s.State()
    s.set_account(storage_with_uint, ADDRESSES[0], account)
    s.set_storage(storage_with_uint, ADDRESSES[0], SLOTS[0], U256(5))
    storage_with_uint._storage_tries[ADDRESSES[0]]._data[SLOTS[1]] = Uint(5)      # a type encode_node refuses

    short_address = s.State()
    s.set_account(short_address, ADDRESSES[0], account)
    short_address._main_trie._data[Bytes(b"\x01" * 19)] = account

    none_account = s.State()
    none_account._main_trie._data[ADDRESSES[1]] = None

    in_transaction = s.State()
    s.set_account(in_transaction, ADDRESSES[0], account)
    if fork.with_transient:
        s.begin_transaction(in_transaction, fork.TransientStorage())
    else:
        s.begin_transaction(in_transaction)

    for state in (storage_with_uint, short_address, none_account, in_transaction):
        patched, unpatched = _patched_and_unpatched(s.state_root, state)
        assert patched == unpatched and patched[0] == "raised", (patched, unpatched)

    empty_leaf = trie.Trie(secured=False, default=None)
    empty_leaf._data[Bytes(b"k")] = Bytes(b"")
    text_value = trie.Trie(secured=True, default=None)
    text_value._data[Bytes(b"k")] = "not bytes"
    for t in (empty_leaf, text_value):
        patched, unpatched = _patched_and_unpatched(trie.root, t)
        assert patched == unpatched and patched[0] == "raised", (patched, unpatched)
    # The root the spec gives on an odd but valid trie (values the fork encodes through encode_node) is kept.
    receipts = trie.Trie(secured=False, default=None)
    trie.trie_set(receipts, Bytes(b"\x80"), Bytes(b"\x01\x02"))
    assert _patched_and_unpatched(trie.root, receipts)[0][0] == "root"


def test_missing_extra_and_bad_shape_are_refused(monkeypatch):
    import types

    trie = sys.modules[FORKS[0] + ".trie"]
    es.uninstall()
    try:
        monkeypatch.delattr(trie, "copy_trie")
        with pytest.raises(es.SpecShapeError, match=r"module %s.trie lacks a function copy_trie" % FORKS[0]):
            es.install()
        assert es.patched_forks() == [] and not es.installed()      # nothing patched half-way
        for name in FORKS:
            assert sys.modules[name + ".trie"].root.__code__ is not es._stubs.root.__code__
        monkeypatch.undo()
        monkeypatch.setitem(sys.modules, "ethereum.forks", types.ModuleType("ethereum.forks"))
        monkeypatch.setattr(importlib, "import_module", _refuse_ethereum(importlib.import_module))
        with pytest.raises(es.MissingExtraError, match=r"mpt-engine\[spec\]"):
            es.install()
    finally:
        monkeypatch.undo()
        es.install()
    assert set(FORKS) <= set(es.patched_forks())


def _refuse_ethereum(import_module):
    def refuse(name, package=None):
        if name == "ethereum.forks":
            raise ModuleNotFoundError("No module named 'ethereum'")
        return import_module(name, package)
    return refuse


def test_forks_created_later_are_patched(tmp_path):
    """A fork package imported after install(), the way the t8n imports its cloned forks (Hardfork.discover over a
    folder, then Hardfork.module): its trie module is patched as it is imported, its state module (which
    Hardfork.module loads around the import system) at the fork's first root."""
    import shutil

    from ethereum_spec_tools.forks import Hardfork

    source = sys.modules["ethereum.forks.cancun"].__path__[0]
    name = "cancun_late%d" % id(tmp_path)
    shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (found,) = Hardfork.discover([str(tmp_path)])
    try:
        state = found.module("state")
        trie = found.module("trie")
        types_ = found.module("fork_types")
        assert trie.root.__code__ is es._stubs.root.__code__
        reference = Fork("ethereum.forks.cancun")
        roots = []
        for s, t in ((state, types_), (state, types_), (reference.state, reference.types)):
            st_ = s.State()
            s.set_account(st_, ADDRESSES[0], t.Account(nonce=Uint(1), balance=U256(2), code=Bytes(b"\x00")))
            s.set_storage(st_, ADDRESSES[0], SLOTS[0], U256(3))
            roots.append(s.state_root(st_) if s is state else reference.spec_state_root(st_))
        assert roots[0] == roots[1] == roots[2]
        assert state.state_root.__code__ is es._stubs.state_root.__code__
        assert "ethereum.forks." + name in es.patched_forks()
    finally:
        for module in [m for m in sys.modules if m.startswith("ethereum.forks." + name)]:
            del sys.modules[module]


def test_forks_created_before_install_are_patched(tmp_path):
    """A run-time fork imported while the patch was off is patched by install(), also after its folder is gone."""
    import shutil

    from ethereum_spec_tools.forks import Hardfork

    source = sys.modules["ethereum.forks.prague"].__path__[0]
    name = "prague_early%d" % id(tmp_path)
    shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    es.uninstall()
    try:
        (found,) = Hardfork.discover([str(tmp_path)])
        state = found.module("state")
        trie = found.module("trie")
        assert trie.root.__code__ is not es._stubs.root.__code__
        shutil.rmtree(tmp_path / name)
        es.install()
        assert trie.root.__code__ is es._stubs.root.__code__
        assert state.state_root.__code__ is es._stubs.state_root.__code__
        es.install()
        assert "ethereum.forks." + name in es.patched_forks()
    finally:
        es.install()
        for module in [m for m in sys.modules if m.startswith("ethereum.forks." + name)]:
            del sys.modules[module]


def test_json_of_a_tracked_trie_is_unchanged(fork):
    t = fork.trie.Trie(secured=True, default=U256(0))
    fork.trie.trie_set(t, SLOTS[0], U256(1))
    fork.trie.root(t)
    assert type(t._data) is _fast.TrackingDict
    assert t._data == {SLOTS[0]: U256(1)} and t == fork.trie.Trie(True, U256(0), {SLOTS[0]: U256(1)})
    assert json.dumps({k.hex(): int(v) for k, v in t._data.items()}) == json.dumps({SLOTS[0].hex(): 1})
    import copy
    import pickle

    assert type(copy.deepcopy(t._data)) is dict and pickle.loads(pickle.dumps(t._data)) == t._data


def test_docs_page_runs_as_written():
    """docs/execution_specs.rst: its python blocks (marked not-runnable for the main run, which lacks the spec)
    run here through doctest, their outputs compared."""
    import doctest
    from pathlib import Path

    from test_doc_blocks import rst_blocks

    page = Path(__file__).resolve().parent.parent / "docs" / "execution_specs.rst"
    blocks = [b for b in rst_blocks(page) if b.lang == "python"]
    assert blocks and all(b.skip and "test_compat_execution_specs" in b.skip for b in blocks)
    globs = {}
    es.uninstall()          # the page starts from a spec without the patch (fresh counters)
    try:
        for block in blocks:
            test = doctest.DocTestParser().get_doctest(block.code, globs, block.where, str(page), block.line)
            runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
            runner.run(test)
            assert runner.failures == 0, block.where
    finally:
        es.install()


def _speed_rows():
    """[(what, spec cell, mpt cell, speed-up cell)] of docs/execution_specs.rst's speed table."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "execution_specs.rst").read_text()
    table = page[page.index("   * - what\n"):]
    table = table[:table.index("\n\n")]
    rows = []
    for chunk in table.split("   * - ")[2:]:
        cells = [" ".join(c.split()) for c in re.split(r"\n     -(?: |$)", chunk, flags=re.M)]
        rows.append(tuple(cells))
    return rows


def _seconds(cell):
    value, unit = cell.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6}[unit]


def _half_unit(number):
    """Half a unit of the last digit of a number as written ("1.8" -> 0.05, "135" -> 0.5)."""
    return 0.5 * 10.0 ** -(len(number.partition(".")[2]))


def test_docs_speed_ups_are_the_quoted_times():
    """Each speed-up the docs page quotes is its row's two times divided, to the rounding of the cells."""
    import re

    checked = 0
    for what, spec, mpt, speedup in _speed_rows():
        m = re.fullmatch(r"(\d+(?:\.\d+)?)x", speedup)
        if m is None or not re.fullmatch(r"[\d.]+ (s|ms|µs)", spec) or not re.fullmatch(r"[\d.]+ (s|ms|µs)", mpt):
            continue
        ratio = _seconds(spec) / _seconds(mpt)
        # Each cell is rounded: half a unit of its last digit, relative for the times.
        slack = _half_unit(m.group(1)) + ratio * sum(_half_unit(c.split()[0]) / float(c.split()[0])
                                                     for c in (spec, mpt))
        assert abs(ratio - float(m.group(1))) <= slack, (what, spec, mpt, speedup, ratio)
        checked += 1
    assert checked >= 2


def test_pytest_plugin_installs():
    from mpt.compat.execution_specs import pytest_plugin

    es.uninstall()
    try:
        pytest_plugin.pytest_configure(None)
        assert es.installed() and set(FORKS) <= set(es.patched_forks())
    finally:
        es.install()
