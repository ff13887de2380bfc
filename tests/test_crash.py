"""Crash safety of LMDBStore: SIGKILL a process in the middle of its commits, reopen, and the head must resolve.

A child process commits to an LMDBStore in a loop; each commit writes its nodes and the new head in one write
transaction (``write_batch(head=root)``). Its data derives from the commit counter alone (and the counter is
itself stored in the trie), so the parent can rebuild the expected content of any committed root. The parent
kills the child at random moments, some of them inside a commit or a map resize, then checks that the head names
a complete trie (every node reachable and hashing to its key) holding exactly the expected keys, and that no
commit the child saw finish was lost.
"""
import inspect
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest

import mpt
from mpt import Trie
from mpt.db import LMDBStore, MemoryDB
from mpt.db.tools import copy_reachable

pytest.importorskip("lmdb")
if not hasattr(signal, "SIGKILL"):      # pragma: no cover
    pytest.skip("needs SIGKILL", allow_module_level=True)

PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)
COUNTER_KEY = b"\x00counter"
KILLS = 20
TIME_BUDGET = 25.0          # seconds for the whole test; fewer kills if the machine is slow (at least MIN_KILLS)
MIN_KILLS = 8
START_MAP_SIZE = 128 << 10  # small, so the child also grows the map (and is sometimes killed doing it)


def commit_ops(i):
    """The (key, value) updates of commit number i; an empty value deletes. Shared with the child verbatim."""
    import hashlib
    import random as _random
    rng = _random.Random(i)
    ops = [(b"\x00counter", i.to_bytes(8, "big"))]
    for _ in range(120):
        key = hashlib.blake2b(rng.randrange(4000).to_bytes(4, "big"), digest_size=12).digest()
        if rng.random() < 0.2:
            ops.append((key, b""))
        else:
            ops.append((key, rng.randbytes(rng.randint(1, 60))))
    return ops


CHILD_MAIN = '''
import sys
from mpt import Trie
from mpt.db import LMDBStore


store = LMDBStore(sys.argv[1], map_size=int(sys.argv[2]))
head = store.head()
t = Trie(store, root=head)
i = 0 if head is None else int.from_bytes(t[b"\\x00counter"], "big")
print("ready", i, flush=True)
while True:
    i += 1
    for key, value in commit_ops(i):
        t.update(key, value)
    print("start", i, flush=True)
    t.commit(set_head=True)     # nodes and head in one LMDB transaction
    print("done", i, flush=True)
'''


def child_script():
    return inspect.getsource(commit_ops) + CHILD_MAIN


class Replay:
    """The parent's in-memory copy of the child's history: the content after commit n, for n = 0, 1, 2..."""

    def __init__(self):
        self.counter = 0
        self.model = {}
        self.trie = Trie()

    def advance_to(self, root, limit):
        """Step forward until the trie's root is root (None = nothing committed yet); returns the counter."""
        if root is None:
            assert self.counter == 0, "the head vanished after commit %d" % self.counter
            return 0
        while self.trie.hash() != root:
            self.counter += 1
            assert self.counter <= limit, "head %s matches no commit up to %d" % (root.hex(), limit)
            for key, value in commit_ops(self.counter):
                self.trie.update(key, value)
                if value:
                    self.model[key] = value
                else:
                    self.model.pop(key, None)
        return self.counter


def check_store(path, replay, last_started, last_done):
    with LMDBStore(path, readonly=True) as s:
        head = s.head()
        n = replay.advance_to(head, last_started)
        # Durability: a commit the child saw return is on disk. Atomicity: nothing beyond the one in flight.
        assert last_done <= n <= max(last_started, last_done), (last_done, n, last_started)
        if head is None:
            return n
        copied, _ = copy_reachable(s, MemoryDB(), head)        # every node reachable and hashing to its key
        assert copied > 0
        t = Trie(s, root=head)
        assert list(t.items()) == sorted(replay.model.items())
        assert all(t[k] == v for k, v in replay.model.items())
        assert int.from_bytes(t[COUNTER_KEY], "big") == n
        assert t.hash() == head
    return n


def test_sigkill_during_commits_keeps_the_head_readable(tmp_path):
    path = str(tmp_path / "store")
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    script = child_script()
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    replay = Replay()
    began = time.monotonic()
    kills = mid_commit = 0
    last_done = 0
    while kills < KILLS and (kills < MIN_KILLS or time.monotonic() - began < TIME_BUDGET - 1.5):
        proc = subprocess.Popen([sys.executable, "-c", script, path, str(START_MAP_SIZE)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = proc.stdout.readline().split()
            assert ready and ready[0] == "ready", proc.stderr.read()
            assert int(ready[1]) >= last_done
            time.sleep(rng.uniform(0.01, 0.35))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        out = proc.stdout.read().split("\n")
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL, err
        assert "Traceback" not in err, err
        kills += 1
        started = [int(line.split()[1]) for line in out if line.startswith("start")]
        done = [int(line.split()[1]) for line in out if line.startswith("done")]
        last_started = started[-1] if started else last_done
        if done:
            last_done = done[-1]
        if started and (not done or done[-1] < started[-1]):
            mid_commit += 1
        last_done = check_store(path, replay, last_started, last_done)
    elapsed = time.monotonic() - began
    print("%d kills (%d inside a commit), %d commits, %.1f s" % (kills, mid_commit, replay.counter, elapsed))
    assert kills >= MIN_KILLS
    assert replay.counter > kills           # the child made progress between kills
    assert elapsed < 30
