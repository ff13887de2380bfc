"""Where a store or a spill lives: its directory, a damaged file, a full disk, and the run directories that killed
``build_root(spill_dir=...)`` runs leave behind."""
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import mpt
from mpt import Trie, build_root
from mpt.errors import MissingExtraError, MptError, StoreError, StoreWriteError

PKG_PARENT = str(pathlib.Path(mpt.__file__).resolve().parent.parent)
PAIRS = [(b"do", b"verb"), (b"dog", b"puppy"), (b"doge", b"coin"), (b"horse", b"stallion")]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _fill(directory):
    """Write a filler file until the file system is full; returns its path."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    return filler


# -------------------------------------------------------------------------------------------- LMDBStore

lmdb = pytest.importorskip("lmdb")
from mpt.db import LMDBStore  # noqa: E402


def test_lmdb_store_creates_its_own_directory_but_not_missing_parents(tmp_path):
    path = tmp_path / "nonexistent" / "dir" / "state.lmdb"
    with pytest.raises(FileNotFoundError, match=r"cannot create the LMDB store .*state\.lmdb: the directory "
                                                r".*nonexistent/dir does not exist") as info:
        LMDBStore(path)
    assert info.value.filename == str(tmp_path / "nonexistent" / "dir")
    assert not (tmp_path / "nonexistent").exists()          # nothing made on the way
    with LMDBStore(tmp_path / "state.lmdb") as db:
        assert len(db) == 0
    assert (tmp_path / "state.lmdb" / "data.mdb").is_file()


@pytest.mark.parametrize("readonly", [False, True])
def test_a_garbage_data_mdb_is_a_store_error(tmp_path, readonly):
    path = tmp_path / "state.lmdb"
    path.mkdir()
    (path / "data.mdb").write_bytes(b"this is not an LMDB file" * 1000)
    with pytest.raises(StoreError, match=r"^cannot open the LMDB store at .*state\.lmdb: ") as info:
        LMDBStore(path, readonly=readonly)
    assert isinstance(info.value, MptError) and isinstance(info.value.__cause__, lmdb.Error)


def test_a_damaged_page_is_a_store_error_on_read(tmp_path):
    path = tmp_path / "state.lmdb"
    with LMDBStore(path) as db:
        t = Trie(db)
        for i in range(5000):
            t[b"k%d" % i] = b"v%d" % i * 5
        t.commit(set_head=True)
    with open(path / "data.mdb", "r+b") as f:       # overwrite pages past the two meta pages
        f.seek(2 * 4096)
        f.write(b"\xff" * 4 * 4096)
    # In a child: LMDB trusts its pages, and a differently damaged file could take the process down.
    code = textwrap.dedent("""
        import sys
        from mpt import Trie
        from mpt.db import LMDBStore
        from mpt.errors import StoreError
        db = LMDBStore(sys.argv[1], readonly=True)
        try:
            list(Trie(db, db.head()).items())
        except StoreError as e:
            print(type(e.__cause__).__module__, e)
    """)
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("lmdb reading the LMDB store at %s failed: " % path), r.stdout


def test_inspect_of_a_garbage_store_is_one_line(tmp_path):
    path = tmp_path / "state.lmdb"
    path.mkdir()
    (path / "data.mdb").write_bytes(b"\x01" * 8192)
    r = subprocess.run([sys.executable, "-m", "mpt", "inspect", "--db", str(path)], capture_output=True, text=True,
                       env=_env(), timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "error: cannot open" in r.stderr


def test_a_full_disk_is_a_store_write_error_and_the_last_commit_stays(small_disk):
    db = LMDBStore(small_disk / "state.lmdb")
    t = Trie(db)
    for k, v in PAIRS:
        t[k] = v
    first = t.commit(set_head=True)
    filler = _fill(small_disk)
    for i in range(3000):
        t[b"key %d" % i] = b"value %d" % i * 4
    want = t.hash()
    with pytest.raises(StoreWriteError, match=r"^writing to the LMDB store at .*state\.lmdb failed: the disk is "
                                              r"full \(.*\); nothing of this write was stored and the last commit "
                                              r"is intact$") as info:
        t.commit()
    assert info.value.disk_full and info.value.path == str(small_disk / "state.lmdb")
    assert isinstance(info.value, MptError) and isinstance(info.value.__cause__, lmdb.Error)
    assert db.head() == first
    assert dict(Trie(db, first).items()) == dict(PAIRS)     # the last committed root is whole
    assert t.hash() == want                                  # and the trie in memory still holds everything
    filler.unlink()                                          # space again: the same commit now goes through
    assert t.commit(set_head=True) == want and db.head() == want
    db.close()
    with LMDBStore(small_disk / "state.lmdb", readonly=True) as again:
        assert Trie(again, want)[b"key 2999"] == b"value 2999" * 4


def test_a_failed_write_that_is_not_a_full_disk_says_so(tmp_path):
    # A file size limit (RLIMIT_FSIZE) makes LMDB's write fail with EFBIG while the disk has room.
    code = textwrap.dedent("""
        import resource, signal, sys
        from mpt import Trie
        from mpt.db import LMDBStore
        from mpt.errors import StoreWriteError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        db = LMDBStore(sys.argv[1])
        t = Trie(db)
        t[b"dog"] = b"puppy"
        first = t.commit()
        db.set_head(first)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))
        for i in range(20000):
            t[b"key %d" % i] = b"value %d" % i * 4
        try:
            t.commit()
        except StoreWriteError as e:
            print(e.disk_full, db.head() == first, Trie(db, first)[b"dog"] == b"puppy")
            print(e)
    """)
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "state.lmdb")], capture_output=True, text=True,
                       env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    flags, message = r.stdout.splitlines()
    assert flags == "False True True"
    assert message.startswith("writing to the LMDB store at ") and ": the write failed (" in message


# -------------------------------------------------------------------------------------------- build_root's spill_dir

def test_spill_dir_that_is_a_file_or_missing(tmp_path):
    a_file = tmp_path / "passwd"
    a_file.write_text("root:x:0:0\n")
    with pytest.raises(NotADirectoryError, match=r"^\[Errno 20\] spill_dir .*passwd is a file, not a directory: ")\
            as info:
        build_root(PAIRS, spill_dir=str(a_file))
    assert info.value.filename == str(a_file)
    with pytest.raises(FileNotFoundError, match=r"spill_dir .*missing does not exist"):
        build_root(PAIRS, spill_dir=tmp_path / "missing")
    with pytest.raises(TypeError, match=r"^spill_dir must be a path, not int$"):
        build_root(PAIRS, spill_dir=5)
    assert build_root(PAIRS, spill_dir=tmp_path, memory_limit=1) == build_root(PAIRS)
    assert os.listdir(tmp_path) == ["passwd"]                # the run's own directory is gone


_BLOCKED_RUN = textwrap.dedent("""
    import sys, time
    from mpt import build_root

    def pairs():
        for i in range(70000):  # more than build_root takes from an iterator at once: it spills them
            yield b"key %d" % i, b"value %d" % i
        while True:             # a run that never ends, until it is killed
            time.sleep(1)
            yield b"key 0", b"value 0"

    build_root(pairs(), spill_dir=sys.argv[1], memory_limit=1 << 20, workers=1)
""")


def _start_blocked_run(spill_dir):
    before = set(os.listdir(spill_dir))
    p = subprocess.Popen([sys.executable, "-c", _BLOCKED_RUN, str(spill_dir)], env=_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        new = [n for n in set(os.listdir(spill_dir)) - before if n.startswith("mpt-build-root-")]
        if new and (spill_dir / new[0] / "lock").exists() and (spill_dir / new[0] / "spill.bin").exists():
            return p, spill_dir / new[0]
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    pytest.fail("the run did not start spilling: %s" % p.stderr.read().decode())


def test_a_killed_runs_spill_directory_is_reclaimed_by_the_next_run(tmp_path):
    killed, killed_dir = _start_blocked_run(tmp_path)
    alive, alive_dir = _start_blocked_run(tmp_path)
    try:
        assert (killed_dir / "lock").read_text() == "%d\n" % killed.pid     # the owner, for people looking
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
        assert (killed_dir / "spill.bin").exists()          # SIGKILL leaves it: nothing could run
        assert build_root(PAIRS, spill_dir=tmp_path) == build_root(PAIRS)
        assert not killed_dir.exists()                       # the dead run's directory is reclaimed
        assert (alive_dir / "spill.bin").exists()            # a live run's is not touched
        assert alive.poll() is None
    finally:
        for p in (killed, alive):
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
    build_root(PAIRS, spill_dir=tmp_path)
    assert os.listdir(tmp_path) == []                        # once it is dead too, the next run takes it


def test_a_run_directory_without_a_lock_is_left_alone(tmp_path):
    # Another program's directory, or a run in its first microseconds: not ours to delete.
    other = tmp_path / "mpt-build-root-foreign"
    other.mkdir()
    (other / "data").write_bytes(b"x")
    build_root(PAIRS, spill_dir=tmp_path)
    assert (other / "data").exists()


def test_root_cli_on_a_full_spill_disk_is_one_line(small_disk):
    pairs = small_disk.parent / "pairs.jsonl"
    with open(pairs, "w") as f:
        for i in range(60000):
            f.write('{"key": "0x%064x", "value": "0x%064x"}\n' % (i, i))
    r = subprocess.run([sys.executable, "-m", "mpt", "root", str(pairs), "--format", "pairs-jsonl", "--spill-dir",
                        str(small_disk), "--memory-limit", "64K", "--no-progress"], capture_output=True, text=True,
                       env=_env(), timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "spill.bin: No space left on device" in r.stderr
    assert os.listdir(small_disk) == []                      # and the failed run cleaned up after itself


# -------------------------------------------------------------------------------------------- optional parts

def test_build_root_dask_without_dask_names_the_extra(monkeypatch):
    from mpt.ethereum.dask import build_root_dask

    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.delayed", None)
    with pytest.raises(ModuleNotFoundError, match=r"^build_root_dask needs dask \(pip install "
                                                  r"'mpt-engine\[dask\]'\)") as info:
        build_root_dask([])
    assert isinstance(info.value, MissingExtraError) and isinstance(info.value, MptError)
    assert info.value.name == "dask"


def test_a_fifo_named_lock_in_a_shared_spill_dir_neither_blocks_nor_is_deleted(tmp_path):
    # Anyone who can write to a shared spill directory (/tmp) can plant a FIFO named like a run's lock file:
    # opening it for reading would block the next run forever.
    from mpt.ethereum.shards.spill import SpillDir

    planted = tmp_path / "mpt-build-root-planted"
    planted.mkdir()
    os.mkfifo(planted / "lock")
    spill = SpillDir(str(tmp_path))
    try:
        assert os.path.isdir(spill.path) and spill.path != str(planted)
    finally:
        spill.close()
    assert planted.is_dir()     # not a run of ours: left alone
