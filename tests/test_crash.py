"""Crash safety of LMDBStore: SIGKILL a process at random points of a long run of commits, hundreds of times.

A child process commits batches to an LMDBStore in an endless loop; each commit writes its nodes and the new
head in one write transaction (``t.commit(set_head=True)``), and once it has returned the child reports the root
on a pipe (a pipe survives the writer's death: what reached it before the kill is still read). Batch i's updates
derive from i alone, and the counter i is itself stored in the trie, so a restarted child resumes after the
head's batch and the parent can rebuild the exact content of any committed root.

The parent kills the child at random moments (during startup, between commits, inside a commit's fsync or a map
resize) and, before restarting it, checks that

* the last root the child reported opens and every key of its expected content reads back (durability), and
  nothing else is in it;
* the head is that root or the one of the commit in flight, never older, never a later one (atomicity), and it
  too reads back in full, every node hashing to its key;

then restarts the child, which continues the sequence. Restarts are forks of a small launcher process that has
already imported mpt (and has opened no LMDB environment), so that hundreds of kills fit in about a minute.

The kill times are random: the seed is printed and can be fixed with ``MPT_CRASH_SEED=n``.
"""
import inspect
import os
import pathlib
import random
import select
import signal
import subprocess
import sys
import time

import pytest

import mpt
from mpt import Trie
from mpt.db import LMDBStore, MemoryDB
from mpt.ethereum.inspect import copy_reachable
from mpt.errors import StoreError

lmdb = pytest.importorskip("lmdb")
if not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"):      # pragma: no cover
    pytest.skip("needs SIGKILL and fork", allow_module_level=True)

PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)
COUNTER_KEY = b"\x00counter"
KILLS = 300                 # kills wanted...
MIN_KILLS = 200             # ...and at least this many, however slow the machine
TIME_BUDGET = 60.0          # seconds; past this the test stops at MIN_KILLS
FULL_WALK_EVERY = 10        # copy_reachable (every node re-hashed on its own) after this many kills
START_MAP_SIZE = 128 << 10  # small, so the child also grows the map (and is sometimes killed doing it)
READ_TIMEOUT = 60.0         # a launcher or child silent this long has hung


def commit_ops(i):
    """The (key, value) updates of commit number i; an empty value deletes. Shared with the child verbatim."""
    import hashlib
    import random as _random
    rng = _random.Random(i)
    ops = [(b"\x00counter", i.to_bytes(8, "big"))]
    for _ in range(40):
        key = hashlib.blake2b(rng.randrange(2000).to_bytes(4, "big"), digest_size=12).digest()
        if rng.random() < 0.2:
            ops.append((key, b""))
        else:
            ops.append((key, rng.randbytes(rng.choice((1, 8, 40, 100)))))
    return ops


LAUNCHER_MAIN = '''
import os
import sys

from mpt import Trie
from mpt.db import LMDBStore


def say(text):
    os.write(1, (text + "\\n").encode())        # unbuffered: a line is in the pipe or not at all


def child(path, map_size):
    store = LMDBStore(path, map_size=map_size)
    head = store.head()
    t = Trie(store, root=head)
    i = 0 if head is None else int.from_bytes(t[b"\\x00counter"], "big")
    say("ready %d" % i)
    while True:
        i += 1
        for key, value in commit_ops(i):
            t.update(key, value)
        say("start %d" % i)
        root = t.commit(set_head=True)      # nodes and head in one LMDB transaction, fsynced
        say("done %d %s" % (i, root.hex()))


say("launcher")
while True:
    cmd = sys.stdin.readline().split()
    if not cmd:
        break
    if cmd[0] == "spawn":
        pid = os.fork()
        if pid == 0:
            try:
                child(cmd[1], int(cmd[2]))
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(70)
        say("pid %d" % pid)
    elif cmd[0] == "reap":
        pid, status = os.waitpid(int(cmd[1]), 0)
        say("exit %d" % os.waitstatus_to_exitcode(status))
'''


def launcher_script():
    return inspect.getsource(commit_ops) + LAUNCHER_MAIN


class Launcher:
    """Talks to the launcher process: spawn a child (a fork), kill it, collect what it reported."""

    def __init__(self, tmp_path):
        env = dict(os.environ)
        env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
        env["MPT_HASH_THREADS"] = "1"       # the children hash on their own thread: no OpenMP team to fork
        self.stderr_path = tmp_path / "launcher.err"
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", launcher_script()], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0)
        self.fd = self.proc.stdout.fileno()
        self.pending = b""
        self.child = None           # the pid of the running child, if any
        self.early = []             # lines the child wrote before the launcher reported its pid
        assert self.readline() == "launcher"

    def errors(self):
        self.stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def readline(self):
        deadline = time.monotonic() + READ_TIMEOUT
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError("launcher silent for %.0f s; stderr:\n%s" % (READ_TIMEOUT, self.errors()))
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise AssertionError("launcher died; stderr:\n%s" % self.errors())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode()

    def send(self, text):
        self.proc.stdin.write((text + "\n").encode())

    def spawn(self, path, map_size):
        self.send("spawn %s %d" % (path, map_size))
        # The forked child writes to the same pipe and may speak before the launcher reports its pid (a slow
        # fork, a loaded machine): keep those lines for kill(), which returns everything the child said.
        self.early = []
        while True:
            line = self.readline()
            words = line.split()
            if words and words[0] == "pid":
                break
            self.early.append(line)
        self.child = int(words[1])
        return self.child

    def kill(self, pid):
        """SIGKILL the child; returns (its exit code, the lines it reported)."""
        os.kill(pid, signal.SIGKILL)
        self.child = None
        self.send("reap %d" % pid)
        lines, self.early = self.early, []
        while True:
            line = self.readline()
            if line.startswith("exit "):
                return int(line.split()[1]), lines
            lines.append(line)

    def close(self):
        if self.child is not None:      # the test failed with a child running: stop it
            os.kill(self.child, signal.SIGKILL)
            self.child = None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:          # pragma: no cover
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()


class Replay:
    """The parent's in-memory copy of the child's history: the content after commit n, for n = 0, 1, 2..."""

    def __init__(self):
        self.counter = 0
        self.model = {}
        self.trie = Trie()

    def step(self):
        self.counter += 1
        for key, value in commit_ops(self.counter):
            self.trie.update(key, value)
            if value:
                self.model[key] = value
            else:
                self.model.pop(key, None)

    def advance_to_counter(self, n):
        while self.counter < n:
            self.step()
        assert self.counter == n, (self.counter, n)
        return self.trie.hash()

    def advance_to_root(self, root, limit):
        """Step forward until the trie's root is root (None = nothing committed yet); returns the counter."""
        if root is None:
            assert self.counter == 0, "the head vanished after commit %d" % self.counter
            return 0
        while self.trie.hash() != root:
            assert self.counter < limit, "head %s matches no commit up to %d" % (root.hex(), limit)
            self.step()
        return self.counter


def check_trie(store, root, replay, n, full_walk):
    """root reads back as exactly the content after commit n, every node loaded and checked against its hash."""
    t = Trie(store, root=root)      # verify_reads: every node read is hashed and compared with its key
    assert all(t.get(k) == v for k, v in replay.model.items()), "a key of commit %d does not read back" % n
    assert list(t.items()) == sorted(replay.model.items())
    assert int.from_bytes(t[COUNTER_KEY], "big") == n
    assert t.hash() == root
    if full_walk:
        copied, _ = copy_reachable(store, MemoryDB(), root)
        assert copied > 0


def open_store(path, anything_committed):
    """The store, read-only; None if the first child was killed before it had made one (or finished making it)."""
    try:
        return LMDBStore(path, readonly=True)
    except (FileNotFoundError, StoreError):
        if anything_committed:
            raise
        return None


def check_store(path, replay, last_started, last_done, last_root, full_walk):
    """The checks after a kill; returns the head's counter and root."""
    store = open_store(path, replay.counter or last_started or last_done)
    if store is None:
        return 0, None
    with store:
        if last_root is not None:
            # Durability: the last root the child reported opens and holds exactly that commit's content.
            assert replay.advance_to_counter(last_done) == last_root
            check_trie(store, last_root, replay, last_done, full_walk)
        head = store.head()
        n = replay.advance_to_root(head, max(last_started, last_done))
        # Atomicity: the head is the reported commit, or the one in flight when the kill came; never older.
        assert last_done <= n <= max(last_started, last_done), (last_done, n, last_started)
        if head is not None and head != last_root:
            check_trie(store, head, replay, n, full_walk)
    return n, head


def test_sigkill_during_commits_keeps_the_head_readable(tmp_path):
    seed = int(os.environ.get("MPT_CRASH_SEED") or int.from_bytes(os.urandom(4), "big"))
    print("MPT_CRASH_SEED=%d" % seed)
    rng = random.Random(seed)
    path = str(tmp_path / "store")
    replay = Replay()
    launcher = Launcher(tmp_path)
    began = time.monotonic()
    kills = mid_commit = early = 0
    last_done, last_root = 0, None
    try:
        while kills < KILLS and (kills < MIN_KILLS or time.monotonic() - began < TIME_BUDGET):
            pid = launcher.spawn(path, START_MAP_SIZE)
            # Mostly long enough for a few commits; now and then while the child opens the store and resumes.
            time.sleep(rng.uniform(0.0, 0.01) if rng.random() < 0.1 else rng.uniform(0.01, 0.15))
            code, lines = launcher.kill(pid)
            kills += 1
            context = "seed %d, kill %d: %s" % (seed, kills, lines[-3:])
            assert code == -signal.SIGKILL, "the child failed on its own (%s); stderr:\n%s" % (
                context, launcher.errors())
            ready = [int(line.split()[1]) for line in lines if line.startswith("ready")]
            started = [int(line.split()[1]) for line in lines if line.startswith("start")]
            done = [line.split() for line in lines if line.startswith("done")]
            if ready:
                assert ready[0] >= last_done, context       # the child resumed from a head no older than reported
            else:
                early += 1
            last_started = started[-1] if started else last_done
            if done:
                last_done, last_root = int(done[-1][1]), bytes.fromhex(done[-1][2])
            if started and (not done or int(done[-1][1]) < started[-1]):
                mid_commit += 1
            try:
                # The head (possibly one commit past the last report) is where the next child resumes.
                last_done, last_root = check_store(path, replay, last_started, last_done, last_root,
                                                   kills % FULL_WALK_EVERY == 0)
            except AssertionError as e:
                raise AssertionError("%s (%s)" % (e, context)) from e
    finally:
        launcher.close()
    elapsed = time.monotonic() - began
    print("%d kills (%d inside a commit, %d before the child resumed), %d commits, %.1f s, seed %d"
          % (kills, mid_commit, early, replay.counter, elapsed, seed))
    assert kills >= MIN_KILLS
    assert mid_commit >= kills // 4             # the kills do land inside commits
    assert replay.counter > kills // 2          # the child made progress between kills
    assert elapsed < TIME_BUDGET + 60
