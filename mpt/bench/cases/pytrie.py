"""py-trie's ``HexaryTrie`` API on mpt (:mod:`mpt.compat.pytrie`), with py-trie 4 itself as the peer.

``PyTrie/Set10K+Root``: 10,000 ``trie[key] = value`` on a fresh trie over a dict (each call writes its nodes at
once, as py-trie's does), then ``root_hash``. ``PyTrie/Get10K``: 10,000 ``trie[key]`` on that trie.
``PyTrie/Squash10K``: the same 10,000 sets inside ``squash_changes()`` of a pruning trie (``prune=True``).
``PyTrie/Proof``: ``get_proof(key)`` then ``HexaryTrie.get_from_proof(root, key, proof)``, 256 keys a call.
Keys are 32 random bytes, values 40 (a state trie's shape). Every case checks the root against ``mpt.Trie``'s
and the database against py-trie's when py-trie is installed.

The cases need py-trie (``pip install "mpt-engine[pytrie]"``): without it they are left out of the registry and
:data:`MISSING` says why (``python -m mpt.bench`` prints it when the selection asks for PyTrie cases).
"""

from __future__ import annotations

import random
from typing import Any, List, Optional, Tuple

from mpt.bench.registry import Case, cycled, expect

SIZE = 10000
PROOF_BATCH = 256
INSTALL_HINT = "pip install 'mpt-engine[pytrie]'"


def _missing() -> Optional[str]:
    try:
        import trie

        major = int(trie.__version__.split(".")[0])
    except Exception as e:  # noqa: BLE001 - any import failure means "leave the cases out"
        return "py-trie is not importable (%s: %s); %s" % (type(e).__name__, e, INSTALL_HINT)
    if major != 4:
        return "py-trie %s is installed, mpt.compat.pytrie follows py-trie 4; %s" % (trie.__version__, INSTALL_HINT)
    return None


MISSING: Optional[str] = _missing()
"""Why the PyTrie cases are not registered, or None when they are."""


def workload(n: int = SIZE) -> Tuple[List[bytes], List[bytes]]:
    """n distinct 32-byte keys and 40-byte values (seeded)."""
    rng = random.Random(0x9E3779B9 ^ n)
    keys = list({rng.randbytes(32): None for _ in range(n)})
    return keys, [rng.randbytes(40) for _ in keys]


def mpt_class():
    from mpt.compat.pytrie import HexaryTrie

    return HexaryTrie


def pytrie_class():
    """py-trie's own class, even while mpt.compat.pytrie.install() is in effect."""
    import mpt.compat.pytrie as compat

    return compat.original_class()


def _reference_root(keys, values) -> bytes:
    import mpt

    t = mpt.Trie()
    for k, v in zip(keys, values):
        t.update(k, v)
    return t.hash()


class _LoggingDict(dict):
    """The values a trie writes, in order: each one is a Keccak the trie computed."""

    def __init__(self):
        super().__init__()
        self.written: List[bytes] = []

    def __setitem__(self, key, value):
        self.written.append(value)
        super().__setitem__(key, value)


# --- the four workloads, for any HexaryTrie class ---------------------------------------------------------------

def set_all(cls, keys, values, db=None, prune=False):
    t = cls({} if db is None else db, prune=prune)
    for k, v in zip(keys, values):
        t[k] = v
    return t.root_hash, t


def squash_all(cls, keys, values, db=None):
    t = cls({} if db is None else db, prune=True)
    with t.squash_changes() as batch:
        for k, v in zip(keys, values):
            batch[k] = v
    return t.root_hash, t


def _set_case(cls, name: str, peer: str) -> Case:
    keys, values = workload()

    def setup():
        return cls, keys, values

    def op(state):
        return set_all(*state)[0]

    def check(state):
        expect(name + " root", op(state), _reference_root(keys, values))
        if peer == "mpt" and MISSING is None:
            mine, theirs = {}, {}
            set_all(cls, keys[:2000], values[:2000], mine)
            set_all(pytrie_class(), keys[:2000], values[:2000], theirs)
            expect(name + " database equals py-trie's", mine == theirs, True)

    def blobs(state):
        db = _LoggingDict()
        set_all(cls, keys, values, db)
        return db.written

    return Case(name=name, group="PyTrie", size=SIZE, setup=setup, op=op, check=check,
                keccak_blobs=blobs if peer == "mpt" else None,
                doc="%s: %d trie[key] = value (32-byte keys, 40-byte values) over a dict, then root_hash" % (
                    peer, SIZE))


def _get_case(cls, name: str, peer: str) -> Case:
    keys, values = workload()

    def setup():
        _, t = set_all(cls, keys, values)
        return t, keys

    def op(state):
        t, ks = state
        get = t.get
        for k in ks:
            get(k)

    def check(state):
        t, ks = state
        expect(name + " values", [t[k] for k in ks[:500]], values[:500])

    return Case(name=name, group="PyTrie", size=SIZE, setup=setup, op=op, check=check, ops_per_sample=1,
                doc="%s: %d trie.get(key) on the Set10K trie" % (peer, SIZE))


def _squash_case(cls, name: str, peer: str) -> Case:
    keys, values = workload()

    def setup():
        return cls, keys, values

    def op(state):
        return squash_all(*state)[0]

    def check(state):
        expect(name + " root", op(state), _reference_root(keys, values))
        if peer == "mpt" and MISSING is None:
            mine, theirs = {}, {}
            squash_all(cls, keys[:2000], values[:2000], mine)
            squash_all(pytrie_class(), keys[:2000], values[:2000], theirs)
            expect(name + " database equals py-trie's", mine == theirs, True)

    return Case(name=name, group="PyTrie", size=SIZE, setup=setup, op=op, check=check,
                doc="%s: %d sets inside squash_changes() of a pruning trie (prune=True), over a dict" % (peer, SIZE))


def _proof_case(cls, name: str, peer: str) -> Case:
    keys, values = workload()

    def setup():
        _, t = set_all(cls, keys, values)
        return t, cycled(keys, PROOF_BATCH)

    def op(state):
        t, ks = state
        root = t.root_hash
        prove, verify = t.get_proof, cls.get_from_proof
        for k in ks:
            verify(root, k, prove(k))

    def check(state):
        t, ks = state
        expect(name + " proven values", [cls.get_from_proof(t.root_hash, k, t.get_proof(k)) for k in ks[:32]],
               [t[k] for k in ks[:32]])

    return Case(name=name, group="PyTrie", size=SIZE, setup=setup, op=op, check=check,
                ops_per_sample=PROOF_BATCH,
                doc="%s: get_proof(key) + HexaryTrie.get_from_proof(root, key, proof) in a 10K trie" % peer)


_BUILDERS = (("Set10K+Root", _set_case), ("Get10K", _get_case), ("Squash10K", _squash_case), ("Proof", _proof_case))


def cases() -> List[Case]:
    """mpt's four PyTrie cases (none when py-trie is missing: see MISSING)."""
    if MISSING is not None:
        return []
    cls = mpt_class()
    return [build(cls, "PyTrie/" + label, "mpt") for label, build in _BUILDERS]


def peer_cases(case: Case) -> List[Tuple[Any, Case]]:
    """py-trie's own HexaryTrie on the workload of one of :func:`cases`: (peer, case) pairs for ``--peers``."""
    if MISSING is not None or case.group != "PyTrie":
        return []
    from mpt.bench.peers import Peer, _version

    label = case.name.split("/", 1)[1]
    build = dict(_BUILDERS)[label]
    peer = Peer("py-trie", pytrie_class(), detail="trie %s, trie.hexary.HexaryTrie over a dict" % _version("trie"))
    return [(peer, build(pytrie_class(), case.name, "py-trie"))]
