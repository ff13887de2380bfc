"""execution-specs' state root with mpt.compat.execution_specs, and the spec's own as the peer.

* ``SpecStateRoot/10K`` -- ``state_root`` of a fresh spec ``State`` (10,000 accounts, 2 storage slots each) with the
  patch: every account and slot encoded and hashed from scratch.
* ``SpecStateRoot/10K-spec`` -- the same root by the spec's own code (no patch), the figure the first is set against.
* ``SpecStateRoot/incremental/<N>`` -- N accounts whose root was asked once; each op changes 10 accounts and 10
  storage slots through the spec's ``set_account`` / ``set_storage`` and asks the root again.

The spec is an optional extra (``pip install "mpt-engine[spec]"``, Python >= 3.11): without it the cases raise
MissingExtraError in setup, which ``python -m mpt.bench`` reports as skipped and asv as n/a.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any, List

from mpt.bench.registry import Case, expect

SLOTS_PER_ACCOUNT = 2
CHANGED_ACCOUNTS = 10
CHANGED_SLOTS = 10


@lru_cache(maxsize=None)
def _fork():
    """(state module, fork_types module, trie module) of the newest fork the installed spec has."""
    import importlib

    from mpt.compat import execution_specs

    execution_specs.install()
    name = execution_specs.patched_forks()
    for preferred in ("ethereum.forks.osaka", "ethereum.forks.prague", "ethereum.forks.cancun"):
        if preferred in name:
            break
    else:
        preferred = name[-1]
    return tuple(importlib.import_module(preferred + "." + m) for m in ("state", "fork_types", "trie"))


@lru_cache(maxsize=None)
def _template(n: int):
    """The accounts and storage of a state of n accounts: (address, Account, {slot: value}) triples."""
    _, types, _ = _fork()       # first: MissingExtraError (a skipped case) without the spec
    from ethereum_types.bytes import Bytes, Bytes20, Bytes32
    from ethereum_types.numeric import U256, Uint

    rnd = random.Random(n)
    out = []
    for i in range(n):
        storage = {Bytes32(rnd.getrandbits(256).to_bytes(32, "big")): U256(rnd.getrandbits(64) + 1)
                   for _ in range(SLOTS_PER_ACCOUNT)}
        account = types.Account(nonce=Uint(i % 7), balance=U256(rnd.getrandbits(80)), code=Bytes(b""))
        out.append((Bytes20(rnd.getrandbits(160).to_bytes(20, "big")), account, storage))
    return out


def new_state(n: int):
    """A fresh spec State of n accounts (plain dicts, as the spec builds them; no root asked yet). The cyclic
    collector is run at the end: the op timed next pays for its own allocations, not for the setup's."""
    import gc

    state_module, _, trie = _fork()       # first: MissingExtraError (a skipped case) without the spec
    from ethereum_types.numeric import U256

    state = state_module.State()
    main = state._main_trie._data
    for address, account, storage in _template(n):
        main[address] = account
        state._storage_tries[address] = trie.Trie(secured=True, default=U256(0), _data=dict(storage))
    gc.collect()
    return state


@lru_cache(maxsize=None)
def spec_state_root(n: int) -> bytes:
    """The spec's own state root of new_state(n), patch or no patch (its original root function throughout)."""
    return bytes(_unpatched_state_root(new_state(n)))


def _full_case(n: int, label: str) -> Case:
    name = "SpecStateRoot/%s" % label

    def setup():
        return new_state(n)

    def op(state):
        state_module, _, _ = _fork()
        return state_module.state_root(state)

    def check(state):
        expect(name + " root", bytes(op(state)), spec_state_root(n))

    return Case(name=name, group="SpecStateRoot", size=n, setup=setup, op=op, check=check, stateful=True,
                small=False, doc="execution-specs state_root of %d accounts with %d slots each, from scratch, "
                                 "with mpt.compat.execution_specs" % (n, SLOTS_PER_ACCOUNT))


def _spec_case(n: int, label: str) -> Case:
    name = "SpecStateRoot/%s-spec" % label

    def setup():
        _fork()
        return new_state(n)

    def op(state):
        return _unpatched_state_root(state)

    def check(state):
        expect(name + " root", bytes(op(state)), spec_state_root(n))

    return Case(name=name, group="SpecStateRoot", size=n, setup=setup, op=op, check=check, stateful=True,
                small=False, doc="the same root by execution-specs' own code (the peer)")


def _unpatched_state_root(state) -> Any:
    """The spec's state_root with its own root throughout (its three lines, over the original root)."""
    from mpt.compat.execution_specs import original

    _, _, trie = _fork()
    spec_root = original(trie.root)

    def storage_root(address):
        return spec_root(state._storage_tries[address]) if address in state._storage_tries else trie.EMPTY_TRIE_ROOT

    return spec_root(state._main_trie, storage_root)


def _incremental_case(n: int, label: str) -> Case:
    name = "SpecStateRoot/incremental/%s" % label

    def setup():
        state_module, types, _ = _fork()       # first: MissingExtraError (a skipped case) without the spec
        from ethereum_types.bytes import Bytes, Bytes32
        from ethereum_types.numeric import U256, Uint

        state = new_state(n)
        state_module.state_root(state)
        addresses = [a for a, _, _ in _template(n)]
        rnd = random.Random(7)
        batches = []
        for b in range(64):
            accounts = [(addresses[rnd.randrange(n)],
                         types.Account(nonce=Uint(b + 10), balance=U256(rnd.getrandbits(64)), code=Bytes(b"")))
                        for _ in range(CHANGED_ACCOUNTS)]
            slots = [(addresses[rnd.randrange(n)], Bytes32(rnd.getrandbits(256).to_bytes(32, "big")),
                      U256(rnd.getrandbits(64))) for _ in range(CHANGED_SLOTS)]
            batches.append((accounts, slots))
        return {"state": state, "batches": batches, "next": 0}

    def op(s):
        state_module, _, _ = _fork()
        accounts, slots = s["batches"][s["next"] % len(s["batches"])]
        s["next"] += 1
        state = s["state"]
        for address, account in accounts:
            state_module.set_account(state, address, account)
        for address, slot, value in slots:
            state_module.set_storage(state, address, slot, value)
        return state_module.state_root(state)

    def check(s):
        from mpt.compat.execution_specs import forget

        root = bytes(op(s))
        forget(s["state"]._main_trie)
        state_module, _, _ = _fork()
        expect(name + " root (against a rebuild)", bytes(state_module.state_root(s["state"])), root)
        if n <= 10000:
            expect(name + " root (against the spec)", bytes(_unpatched_state_root(s["state"])), root)

    return Case(name=name, group="SpecStateRoot", size=n, setup=setup, op=op, check=check, small=False,
                doc="%d accounts and %d slots changed through the spec, then state_root again, in a state of %d "
                    "accounts (%d slots each)" % (CHANGED_ACCOUNTS, CHANGED_SLOTS, n, SLOTS_PER_ACCOUNT))


def cases() -> List[Case]:
    """SpecStateRoot/10K against the spec's own SpecStateRoot/10K-spec, then incremental roots at 10K .. 1M."""
    return [_full_case(10000, "10K"), _spec_case(10000, "10K"),
            _incremental_case(10000, "10K"), _incremental_case(100000, "100K"),
            _incremental_case(1000000, "1M")]
