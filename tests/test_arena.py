"""NodeArena (mpt.ethereum.arena): the records a fresh Trie keeps its nodes in. The bench's account roots and random
operations against a Trie of node objects and the pure-Python reference, on every Keccak backend; compaction,
threads, commits and the switch to node objects. (tests/test_trie.py runs the TrieTests on Trie, which starts in
its arena.)"""
import random

import pytest
from hypothesis import given, settings, strategies as st

from mpt import EMPTY_ROOT, Trie
from mpt.bench import workloads
from mpt.bench.cases.ethereum import filled_trie
from mpt.core import runtime
from mpt.ethereum._reference import trie_root
from mpt.ethereum.arena import NodeArena

from conftest import run_in_threads


@pytest.fixture(params=runtime.keccak_backends())
def backend(request):
    """Each Keccak backend this CPU runs, forced for the pass's batches (the SIMD lanes against scalar)."""
    before = runtime.keccak_backend()
    runtime.set_keccak_backend(request.param)
    yield request.param
    runtime.set_keccak_backend(before)


def object_trie():
    """A Trie on node objects, the arena's independent counterpart: asking for root_node turns a fresh trie's (empty)
    arena into node objects, for good."""
    t = Trie()
    assert t.root_node is None
    return t


def test_empty():
    a = NodeArena()
    assert a.hash() == EMPTY_ROOT
    assert len(a) == 0
    assert a.get(b"x") is None
    assert a.get(b"x", b"d") == b"d"
    a.delete(b"x")
    a.update(b"x", b"")
    assert a.hash() == EMPTY_ROOT
    a.update(b"x", b"1")
    a.delete(b"x")
    assert a.hash() == EMPTY_ROOT and len(a) == 0


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    """Hash threads for the pass (set_hash_threads): past 1024 records of a height, each height is shared out."""
    before = runtime.set_hash_threads(request.param)
    yield request.param
    runtime.set_hash_threads(before)


@pytest.mark.parametrize("n", [1000, 10000])
def test_account_roots(n, backend, threads):
    """The bench's HashFixedSize tries: the same root as geth (workloads.ACCOUNT_ROOTS), then again after
    half the accounts change, hashed in between and not; on 1 to 3 threads."""
    keys, values = workloads.hashed_accounts(n)
    a, t = NodeArena(), object_trie()
    for k, v in zip(keys, values):
        a.update(k, v)
    assert a.hash() == workloads.ACCOUNT_ROOTS[n]
    assert len(a) == n
    for k, v in list(zip(keys, values))[::2]:
        a.update(k, v[::-1])
    for k, v in zip(keys, values):
        t.update(k, v)
    for k, v in list(zip(keys, values))[::2]:
        t.update(k, v[::-1])
    assert a.hash() == t.hash()
    for k in keys[::3]:
        a.delete(k)
        t.delete(k)
    assert a.hash() == t.hash()
    for k, v in list(zip(keys, values))[:50]:
        assert a.get(k) == t.get(k)


def _random_ops(rng, steps, key_sizes, value_sizes, alphabet):
    """Updates (some with an empty value: a delete) and deletes over a small key space, so that keys are set,
    changed and removed again; short keys and values make embedded nodes and values at branches."""
    space = [bytes(rng.randrange(alphabet) for _ in range(rng.choice(key_sizes))) for _ in range(40)]
    ops = []
    for _ in range(steps):
        k = rng.choice(space)
        r = rng.random()
        if r < 0.6:
            ops.append(("update", k, bytes(rng.randrange(256) for _ in range(rng.choice(value_sizes)))))
        elif r < 0.85:
            ops.append(("delete", k, None))
        else:
            ops.append(("update", k, b""))
    return space, ops


@pytest.mark.parametrize("seed", range(40))
def test_random_against_trie(seed, backend):
    """Every kind of split and merge (keys that are prefixes of others, values at branches, nodes under 32
    bytes embedded in their parent): root, length and every get agree with Trie and the reference after
    each hash, and the records a delete killed are reused after the next pass."""
    rng = random.Random(seed)
    space, ops = _random_ops(rng, 300, [0, 1, 2, 3, 5, 33, 100], [1, 2, 5, 31, 32, 40, 300], 3 + seed % 4)
    a, t, ref = NodeArena(), object_trie(), {}
    for i, (op, k, v) in enumerate(ops):
        if op == "update":
            a.update(k, v)
            t.update(k, v)
            if v:
                ref[k] = v
            else:
                ref.pop(k, None)
        else:
            a.delete(k)
            t.delete(k)
            ref.pop(k, None)
        assert len(a) == len(ref)
        if i % 23 == 0:
            assert a.hash() == t.hash() == trie_root(ref)
    assert a.hash() == t.hash() == trie_root(ref)
    for k in space:
        assert a.get(k) == ref.get(k)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(max_size=4), st.binary(max_size=40)), max_size=30))
def test_hypothesis_against_reference(pairs):
    a, ref = NodeArena(), {}
    for k, v in pairs:
        a.update(k, v)
        if v:
            ref[k] = v
        else:
            ref.pop(k, None)
    assert a.hash() == trie_root(ref)
    assert len(a) == len(ref)


def test_records_are_reused():
    """A dead branch or extension goes back into use after the next pass, so a trie whose keys come and go
    does not grow its record arrays without end."""
    a = NodeArena()
    keys = [bytes([i, j]) for i in range(16) for j in range(16)]
    rounds = []
    for _ in range(20):
        for k in keys:
            a.update(k, b"v" * 40)
        assert a.hash() == trie_root({k: b"v" * 40 for k in keys})
        for k in keys:
            a.delete(k)
        assert a.hash() == EMPTY_ROOT
        rounds.append(a.stats())
    # One round needs 17 branches and a few extensions at a time: the slots are reused (or compacted away), so
    # the arrays never hold many more; dead leaves go at compactions.
    assert max(r["branches"] for r in rounds) <= 2 * 17
    assert max(r["extensions"] for r in rounds) <= 2 * 19
    assert rounds[-1]["compactions"] >= 5
    assert max(r["leaves"] for r in rounds) <= 2 * 256 + 2 * 256


def test_bytes_like_and_type_errors():
    a = NodeArena()
    a.update(bytearray(b"key"), memoryview(b"value"))
    assert a.get(b"key") == b"value"
    with pytest.raises(TypeError, match="key must be a bytes-like object, not str"):
        a.update("key", b"v")
    with pytest.raises(TypeError, match="value must be a bytes-like object, not int"):
        a.update(b"key", 5)
    with pytest.raises(TypeError, match="key must be a bytes-like object, not NoneType"):
        a.get(None)
    with pytest.raises(TypeError, match="key must be a bytes-like object"):
        a.delete(1)
    assert a.hash() == trie_root({b"key": b"value"})


def test_records_larger_than_the_pass_buffer():
    """A branch value or extension key larger than a whole chunk of ordinary records (the level buffer grows to
    hold the largest encoding there is before the pass starts)."""
    a, t = NodeArena(), object_trie()
    pairs = [(b"a", b"x" * 300000), (b"ab", b"y"), (b"ac", b"z" * 70), (b"k" * 200000 + b"1", b"v1"),
             (b"k" * 200000 + b"2", b"v2")]
    pairs += [(bytes([i, j]), b"w" * 40) for i in range(3) for j in range(200)]
    for k, v in pairs:
        a.update(k, v)
        t.update(k, v)
    assert a.hash() == t.hash()
    assert a.get(b"a") == b"x" * 300000


def test_two_threads_hash_two_arenas():
    """The pass runs without the GIL: two threads hashing two arenas at once (one on the shared scratch arrays,
    the other on its own) get each its root."""
    keys, values = workloads.hashed_accounts(1000)
    results = []

    def work():
        for _ in range(20):
            a = NodeArena()
            for k, v in zip(keys, values):
                a.update(k, v)
            results.append(a.hash())

    run_in_threads([work, work])
    assert results == [workloads.ACCOUNT_ROOTS[1000]] * 40


def test_changes_during_a_pass_raise():
    """A change while another thread's pass runs on the same arena raises RuntimeError, never races it; get
    may run alongside. Whatever interleaving happens, the arena ends consistent with what succeeded."""
    import threading

    keys, values = workloads.hashed_accounts(100000)
    a = NodeArena()
    for k, v in zip(keys, values):
        a.update(k, v)
    refused = []
    done = threading.Event()

    def hash_it():
        a.hash()
        done.set()

    th = threading.Thread(target=hash_it)
    th.start()
    extra = {}
    i = 0
    while not done.is_set() and i < 100000:
        k = b"extra-%d" % i
        try:
            a.update(k, b"v")
            extra[k] = b"v"
        except RuntimeError as exc:
            assert "NodeArena.update() called while hash() runs on it in another thread" in str(exc)
            refused.append(k)
        assert a.get(keys[0]) == values[0]
        i += 1
    th.join()
    t = object_trie()
    for k, v in zip(keys, values):
        t.update(k, v)
    for k, v in extra.items():
        t.update(k, v)
    assert a.hash() == t.hash()


def test_compaction_bounds_memory():
    """Values rewritten over and over: the arena compacts once replaced bytes pass live ones (and 16 KB), so its
    blob stays within a small multiple of what it holds; roots and values stay those of Trie throughout, hashed
    and not, and changes after a compaction land as before."""
    rng = random.Random(7)
    keys = [bytes(rng.randrange(256) for _ in range(32)) for _ in range(500)]
    a, t = NodeArena(), object_trie()
    largest = 0
    for round_ in range(60):
        for k in keys:
            v = bytes(rng.randrange(256) for _ in range(rng.choice([40, 100, 200])))
            a.update(k, v)
            t.update(k, v)
        for k in rng.sample(keys, 20):
            a.delete(k)
            t.delete(k)
        if round_ % 3 == 0:
            assert a.hash() == t.hash()
        largest = max(largest, a.stats()["blob_bytes"])
    # About 3.4 MB written in all, about 60 KB live: without compaction the blob would hold all of it.
    assert a.stats()["compactions"] >= 20
    assert largest < 3 * sum(len(v) + 40 for _k, v in t.items()) + (1 << 15)
    assert a.stats()["garbage_bytes"] < a.stats()["blob_bytes"]
    assert a.hash() == t.hash()
    for k in keys:
        assert a.get(k) == t.get(k)
    assert len(a) == sum(1 for _ in t.items())


# -------------------------------------------------------------------------------------------- Trie in its arena

class FailingDict(dict):
    """A plain-mapping node database whose writes fail while ``failing`` is set (a full disk, say)."""

    failing = False

    def __setitem__(self, key, value):
        if self.failing:
            raise OSError("no space left on device")
        super().__setitem__(key, value)


def _apply(op, k, v, *tries):
    # One of _random_ops' operations on each trie.
    for t in tries:
        if op == "update":
            t.update(k, v)
        else:
            t.delete(k)


def _commit_record(t, collect_leaves):
    out = t.commit(collect_leaves=collect_leaves)
    ns = t.last_commit
    return out, dict(ns.nodes), set(ns.deleted), list(ns.leaves) if ns.leaves is not None else None


@pytest.mark.parametrize("seed", range(30))
def test_trie_in_its_arena_commits_as_on_node_objects(seed):
    """A fresh Trie (records in its arena) and a Trie on node objects take the same random updates, deletes,
    hashes and commits, the arena trie turning into node objects at a random step or never: every commit
    returns the same root and writes the same NodeSet (nodes with their paths, deleted paths, leaves, in the
    same order), and the two databases end equal. Short keys and values make embedded nodes, values at
    branches and stored nodes moved up by deletes."""
    rng = random.Random(seed)
    space, ops = _random_ops(rng, 400, [1, 2, 3, 32], [1, 3, 20, 40], 4 + seed % 5)
    arena_db, object_db = {}, {}
    a, o = Trie(arena_db), Trie(object_db)
    assert o.root_node is None                      # o on node objects from here on
    switch = rng.randrange(len(ops) + 100)          # a's nodes become objects there (or never)
    for i, (op, k, v) in enumerate(ops):
        if i == switch:
            a.root_node
        _apply(op, k, v, a, o)
        r = rng.random()
        if r < 0.1:
            leaves = rng.random() < 0.5
            assert _commit_record(a, leaves) == _commit_record(o, leaves)
        elif r < 0.2:
            assert a.hash() == o.hash()
    assert _commit_record(a, True) == _commit_record(o, True)
    assert arena_db == object_db
    assert dict(a.items()) == dict(o.items())


def test_trie_in_its_arena_survives_a_failed_write():
    """A commit whose write fails leaves everything to commit again: the retry writes the same NodeSet as one
    commit on node objects, and changes made after it are tracked as before."""
    keys, values = workloads.hashed_accounts(300)
    db = FailingDict()
    a, o = Trie(db), Trie({})
    assert o.root_node is None
    for k, v in zip(keys, values):
        a.update(k, v)
        o.update(k, v)
    first = a.commit()
    assert o.commit() == first
    db.failing = True
    for k in keys[:40]:
        a.delete(k)
        o.delete(k)
    a.update(b"\x01" * 32, b"new")
    o.update(b"\x01" * 32, b"new")
    o.commit()
    o_first = o.last_commit
    with pytest.raises(OSError, match="no space left"):
        a.commit()
    assert a.last_commit.root == first
    db.failing = False
    assert a.commit() == o_first.root
    assert dict(a.last_commit.nodes) == dict(o_first.nodes)
    assert a.last_commit.deleted == o_first.deleted and a.last_commit.deleted
    assert Trie(db, a.hash()).get(keys[50]) == values[50]
    assert Trie(db, a.hash()).get(keys[0]) is None


def test_trie_leaves_its_arena_for_node_objects_when_asked():
    """What needs node objects turns the records into nodes once, hashes and stored state kept: the next
    commit writes only what changed since the last one."""
    keys, values = workloads.hashed_accounts(500)
    t = filled_trie(keys, values)
    root = t.commit()
    t.update(keys[0], b"changed")
    node = t.root_node                              # records -> nodes
    assert node.dirty and t.root_node is node
    assert t.hash() != root
    t.commit()
    # Only the changed path went out again: the root, the branches down to the leaf, the leaf.
    assert 2 <= len(t.last_commit) <= 6
    assert t.last_commit.deleted == set()           # every replaced path was written again
    copy = t.copy()
    copy.update(keys[1], b"x")
    assert t.get(keys[1]) == values[1] and copy.get(keys[1]) == b"x"


def _commit_both(a, o, leaves, db):
    """Commit a (arena lineage) and o (node objects) with the same content: the same root, and a writes every node
    (and leaf) o writes. It may write more: a copy that took its own records before a sibling committed the
    shared ones writes those again (same hashes, same bytes: the database is shared), where copies on node
    objects share the stored marks of their nodes. Every node of a's trie is then in the database."""
    ra, ro = _commit_record(a, leaves), _commit_record(o, leaves)
    root = a.last_commit.root
    assert root == o.last_commit.root and ra[1].items() >= ro[1].items()
    assert (ra[3] is None) == (ro[3] is None) and set(ra[3] or ()) >= set(ro[3] or ())
    assert dict(Trie(db, root).items()) == dict(o.items())


@pytest.mark.parametrize("seed", range(20))
def test_copies_of_a_trie_in_its_arena_change_apart(seed):
    """Trie.copy() of a fresh trie shares its arena; the first of the tries sharing it to change its records
    copies them, and a commit marks shared records stored for all. A family of arena tries and their twins on
    node objects take the same random updates, deletes, hashes, commits, copies and switches to node objects,
    each on a randomly chosen member: every member keeps its own content and root, and its commits store what
    its twin's store (_commit_both)."""
    rng = random.Random(1000 + seed)
    space, ops = _random_ops(rng, 300, [1, 2, 32], [1, 20, 40], 4 + seed % 5)
    arena_db, object_db = {}, {}
    first_object = Trie(object_db)
    assert first_object.root_node is None
    family = [(Trie(arena_db), first_object)]
    for op, k, v in ops:
        a, o = rng.choice(family)
        _apply(op, k, v, a, o)
        r = rng.random()
        if r < 0.1:
            family.append((a.copy(), o.copy()))
        elif r < 0.16:
            _commit_both(a, o, rng.random() < 0.5, arena_db)
        elif r < 0.22:
            assert a.hash() == o.hash()
        elif r < 0.24:
            a.root_node                             # this member leaves the shared records for node objects
        elif r < 0.26 and len(family) > 1:
            family.remove((a, o))                   # dropped: one holder fewer
    for a, o in family:
        assert dict(a.items()) == dict(o.items())
        _commit_both(a, o, True, arena_db)
    assert arena_db == object_db


def test_a_commit_of_shared_records_counts_for_every_copy():
    """Copies that still share their records when one of them commits see them stored, as copies sharing node
    objects do: the other's next commit writes only what it changed since, and its deleted paths are the
    stored paths it replaced, exactly as on node objects."""
    keys, values = workloads.hashed_accounts(300)
    a, o = Trie({}), Trie({})
    assert o.root_node is None
    for k, v in zip(keys, values):
        a.update(k, v)
        o.update(k, v)
    a2, o2 = a.copy(), o.copy()
    assert _commit_record(a, True) == _commit_record(o, True)
    for k in keys[:20]:
        a2.delete(k)
        o2.delete(k)
    record = _commit_record(a2, False)
    assert record == _commit_record(o2, False)
    assert record[2] and len(record[1]) < 60


def test_a_copy_changed_while_its_sibling_hashes_in_another_thread():
    """A copy's first change copies the shared records; while the sibling's pass runs on them in another thread,
    the copy waits for it (where a change of the hashing trie itself raises). Both end with their own content."""
    keys, values = workloads.hashed_accounts(100000)
    t = filled_trie(keys, values)
    c = t.copy()
    roots = []

    def change_copy():
        for i in range(50):
            c.update(keys[i], b"copy")

    run_in_threads([lambda: roots.append(t.hash()), change_copy])
    assert roots == [workloads.ACCOUNT_ROOTS[100000]] == [t.hash()]
    o = object_trie()
    for k, v in zip(keys, values):
        o.update(k, v)
    for i in range(50):
        o.update(keys[i], b"copy")
    assert c.hash() == o.hash() and t.get(keys[0]) == values[0]


def test_a_database_callback_cannot_take_shared_records_mid_commit():
    """Records a commit is writing count as stored until its write fails: a copy sharing them that a database
    callback of that commit changes or reads as nodes raises RuntimeError instead of taking them half done; after
    the commit the copy goes on."""
    keys, values = workloads.hashed_accounts(200)

    class Callback(dict):
        def __setitem__(self, key, value):
            if self.during is not None:
                copy, self.during = self.during, None
                with pytest.raises(RuntimeError, match="a copy of this trie is committing the records the two share"):
                    copy.update(b"\x01" * 32, b"x")
                with pytest.raises(RuntimeError, match="a copy of this trie is committing"):
                    copy.root_node
            super().__setitem__(key, value)

    db = Callback()
    db.during = None
    t = Trie(db)
    for k, v in zip(keys, values):
        t.update(k, v)
    c = t.copy()
    db.during = c
    root = t.commit()
    assert db.during is None                        # the callback ran
    c.update(b"\x01" * 32, b"x")
    assert c.get(keys[0]) == values[0] and Trie(db, root).get(keys[0]) == values[0]
    assert c.commit() != root and Trie(db, root).get(b"\x01" * 32) is None


def test_copy_of_a_trie_in_its_arena_is_o1_and_the_first_change_copies_once():
    """copy() shares the records (a few hundred bytes, where turning 20,000 accounts into node objects takes
    megabytes); the first change of either trie copies them once, the next changes do not; a copy that is
    dropped gives the records back to the one trie left."""
    import tracemalloc

    keys, values = workloads.hashed_accounts(20000)
    t = filled_trie(keys, values)
    root = t.hash()

    def allocated(f):
        tracemalloc.start()
        try:
            f()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    box = []
    assert allocated(lambda: box.append(t.copy())) < 4096
    c = box.pop()
    assert c.hash() == root and allocated(c.hash) < 4096   # hashing shared records copies nothing
    assert allocated(lambda: c.update(keys[0], b"changed")) > 1_000_000     # the copy's own records now
    assert allocated(lambda: c.update(keys[1], b"changed")) < 65536
    assert allocated(lambda: t.update(keys[2], b"changed")) < 65536         # t holds the old ones alone
    assert t.get(keys[0]) == values[0] and c.get(keys[0]) == b"changed"
    assert t.get(keys[2]) == b"changed" and c.get(keys[2]) == values[2]
    d = t.copy()
    del d
    assert allocated(lambda: t.update(keys[3], b"changed")) < 65536         # d gave the records back
    assert Trie(t.db, t.commit()).get(keys[3]) == b"changed"


@pytest.mark.parametrize("seed", range(20))
def test_proofs_from_records_are_the_node_objects_proofs(seed):
    """A fresh trie proves from its records: prove and prove_many give, byte for byte, what a trie on node objects
    gives (the root always, embedded nodes inside their parents, each node once), for present and absent keys,
    short keys with embedded nodes and values at branches, after random updates and deletes."""
    from mpt import verify_proof

    for rng, space, a, o in _twin_tries(2000 + seed, 40):
        probes = rng.sample(space, 5) + [b"", b"\x00" * 33]
        for k in probes:
            proof = a.prove(k)
            assert proof == o.prove(k)
            assert verify_proof(a.hash(), k, proof) == o.get(k)
        assert a.prove_many(probes) == o.prove_many(probes)


def _twin_tries(seed, check_every):
    """A fresh Trie (on its records) and one on node objects taking the same 200 random updates and deletes over
    short and 32-byte keys (_random_ops); yields (rng, key space, a, o) every check_every steps."""
    rng = random.Random(seed)
    space, ops = _random_ops(rng, 200, [1, 2, 3, 32], [1, 3, 20, 40], 4 + seed % 5)
    a, o = Trie(), object_trie()
    for i, (op, k, v) in enumerate(ops):
        _apply(op, k, v, a, o)
        if i % check_every == check_every - 1:
            yield rng, space, a, o


def test_proving_keeps_a_large_trie_on_its_records():
    """A proof of a fresh 20,000-account trie allocates a few kilobytes (turning the records into node objects
    takes megabytes), and the trie goes on hashing from its records."""
    import tracemalloc

    from mpt import verify_proof

    keys, values = workloads.hashed_accounts(20000)
    t = filled_trie(keys, values)
    root = t.hash()
    tracemalloc.start()
    try:
        proof = t.prove(keys[7])
        many = t.prove_many(keys[:50])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024
    assert verify_proof(root, keys[7], proof) == values[7]
    o = object_trie()
    for k, v in zip(keys, values):
        o.update(k, v)
    assert proof == o.prove(keys[7]) and many == o.prove_many(keys[:50])


@pytest.mark.parametrize("seed", range(20))
def test_iteration_over_records_is_the_node_objects_iteration(seed):
    """A fresh trie iterates over its records: items(), keys(), values() and iter() from random starts, and
    node_iter(), give what a trie on node objects gives, with embedded nodes, values at branches (keys that are
    prefixes of others) and starts before, inside and after the keys."""
    for rng, space, a, o in _twin_tries(3000 + seed, 50):
        assert list(a) == list(o) and list(a.values()) == list(o.values())
        for start in rng.sample(space, 4) + [b"", b"\x00", b"\xff" * 40, rng.choice(space)[:1]]:
            assert list(a.items(start)) == list(o.items(start))
            assert list(a.keys(start)) == list(o.keys(start))
        assert list(a.node_iter()) == list(o.node_iter())
        assert a.hash() == o.hash()


def test_changes_during_an_iteration_leave_it_as_it_started():
    """An iteration over a fresh trie's records sees them as they were when it started, as one over node objects
    does: the trie changed in the loop takes its own copy of the records first. An abandoned iteration gives its
    share back, and a bare arena refuses changes while an iteration holds it."""
    import tracemalloc

    keys, values = workloads.hashed_accounts(5000)
    a, o = Trie(), object_trie()
    for k, v in zip(keys, values):
        a.update(k, v)
        o.update(k, v)
    seen_a = [(k, v) for k, v in _changing_loop(a)]
    seen_o = [(k, v) for k, v in _changing_loop(o)]
    assert seen_a == seen_o == sorted(zip(keys, values))
    assert a.hash() == o.hash() and dict(a.items()) == dict(o.items())
    nodes_before = list(o.node_iter())
    seen_nodes = []
    for i, node in enumerate(a.node_iter()):        # node_iter holds the records likewise
        seen_nodes.append(node)
        a.update(keys[i % len(keys)], b"during node_iter")
    assert seen_nodes == nodes_before
    for i in range(len(seen_nodes)):
        o.update(keys[i % len(keys)], b"during node_iter")
    assert a.hash() == o.hash()
    it = a.items()
    next(it)
    del it
    tracemalloc.start()
    try:
        a.update(keys[0], b"again")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 65536                             # no copy: the abandoned iteration let go of the records
    bare = NodeArena()
    bare.update(b"k", b"v")
    it = bare.iterate(b"", 1)
    assert next(it) == b"k"
    with pytest.raises(RuntimeError, match="while a copy or an iteration shares it"):
        bare.update(b"k2", b"v")
    it.close()
    bare.update(b"k2", b"v")
    assert list(bare.iterate(b"", 0)) == [(b"k", b"v"), (b"k2", b"v")]


def test_node_iter_and_prove_many_keep_the_records_they_hashed():
    """node_iter() takes its share of the records when called (it hashes then), prove_many for its whole loop:
    a change made before the first node is read, or by the keys' own generator between two proofs, takes a copy
    and leaves them as they were hashed. Both give what node objects give for that state."""
    from mpt import verify_proof

    keys, values = workloads.hashed_accounts(500)
    a, o = Trie(), object_trie()
    for k, v in zip(keys, values):
        a.update(k, v)
        o.update(k, v)
    root = a.hash()
    it = a.node_iter()
    a.update(b"\x01" * 32, b"changed before the first node")
    assert list(it) == list(o.node_iter())
    o.update(b"\x01" * 32, b"changed before the first node")
    root = a.hash()

    def keys_changing_a():
        for i, k in enumerate(keys[:20]):
            yield k
            a.update(k, b"changed between proofs %d" % i)

    proof = a.prove_many(keys_changing_a())
    assert proof == o.prove_many(keys[:20])
    assert all(verify_proof(root, k, proof) == v for k, v in zip(keys[:20], values[:20]))


def test_copies_and_iterations_started_while_a_writer_compacts():
    """A writer whose updates compact the arena (a pass without the GIL, then the records moved) while another
    thread copies the trie and iterates over it: every copy keeps the content it was taken with, and every
    iteration completes with a consistent set of keys."""
    import threading

    keys, values = workloads.hashed_accounts(3000)
    t = filled_trie(keys, values)
    done = threading.Event()
    copies = []

    def writer():
        try:
            for round_ in range(30):
                for k in keys[:1500]:
                    t.update(k, b"round %d" % round_)        # the replaced values make garbage: compactions
        finally:
            done.set()

    def reader():
        while not done.is_set():
            c = t.copy()
            snapshot = dict(c.items())
            assert len(snapshot) == len(keys)
            copies.append((c, snapshot))

    run_in_threads([writer, reader])
    assert copies
    for c, snapshot in copies:
        assert dict(c.items()) == snapshot
    assert all(t.get(k) == b"round 29" for k in keys[:1500])


def _changing_loop(t):
    # Every key changed, some deleted, new ones added, while the trie's items are iterated.
    for i, (k, v) in enumerate(t.items()):
        yield k, v
        t.update(k, v + b"!")
        if i % 7 == 0:
            t.delete(k)
        t.update(bytes(32 - len(str(i))) + str(i).encode(), b"new")


def test_threads_share_out_embedded_nodes_and_values(threads):
    """Thousands of short keys with 1-byte values: leaves and branches under 32 bytes (embedded in their parents)
    and values at branches, in heights large enough to be shared out between threads."""
    rng = random.Random(11)
    model = {bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 3]))): bytes([rng.randrange(1, 256)])
             for _ in range(6000)}
    a = NodeArena()
    for k, v in model.items():
        a.update(k, v)
    assert a.hash() == trie_root(model)
    for k in list(model)[::3]:
        a.delete(k)
        del model[k]
    assert a.hash() == trie_root(model)


def test_paths_touched_after_a_commit_are_kept_once():
    """A trie updated for long after a commit tracks a stored record's path once, when it is first changed (a
    changed record is no longer stored): 60,000 updates of the same keys leave traced memory flat, and the next
    commit's deleted paths and nodes are those of a trie on node objects."""
    import tracemalloc

    keys, values = workloads.hashed_accounts(200)
    a, o = Trie(), Trie()
    assert o.root_node is None
    for k, v in zip(keys, values):
        a.update(k, v)
        o.update(k, v)
    a.commit()
    o.commit()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(60000):
            a.update(keys[i % 3], b"%d" % i)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < (1 << 20), grown
    for i in range(60000 - 3, 60000):
        o.update(keys[i % 3], b"%d" % i)
    o.delete(keys[5])
    a.delete(keys[5])
    assert a.commit() == o.commit()
    assert a.last_commit.deleted == o.last_commit.deleted
    assert dict(a.last_commit.nodes) == dict(o.last_commit.nodes)
