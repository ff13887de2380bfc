"""Shared test helpers: where the public test vectors are, a trie filled from a dict, threads for concurrency
tests, and fixtures that set the process-wide hashing settings for one test."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

HERE = pathlib.Path(__file__).resolve().parent
# The project's shared vectors when the checkout sits beside them, else the copies kept in tests/vectors.
_SHARED = HERE.parent.parent / "shared" / "vectors"
VECTORS = _SHARED if _SHARED.is_dir() else HERE / "vectors"


def load_vector(relative_path):
    """Parse a JSON vector file (relative to the vectors folder)."""
    with open(VECTORS / relative_path) as f:
        return json.load(f)


def trie_of(model, db=None):
    """A Trie (on db, a fresh MemoryDB when None) holding every key -> value of model (a mapping, or an iterable
    of (key, value) pairs: a later pair overwrites an earlier one), inserted in its order."""
    from mpt import Trie

    t = Trie() if db is None else Trie(db)
    for k, v in (model.items() if hasattr(model, "items") else model):
        t[k] = v
    return t


def replay_iavl_ops(tree, ops, *, prune=True, until=None):
    """Apply Go iavl's logged operations (an ops.jsonl of tests/vectors/cosmos/iavl_store_*, as dicts) to an IAVL
    tree: each save_version must give the logged root and version; the logged delete_versions_to runs only when
    prune. Stops after saving version until. Returns {version: root}."""
    roots = {}
    for op in ops:
        if op["op"] == "set":
            tree.set(bytes.fromhex(op["key"]), bytes.fromhex(op["value"]))
        elif op["op"] == "remove":
            assert tree.remove(bytes.fromhex(op["key"])) is not None
        elif op["op"] == "save_version":
            root, version = tree.save_version()
            assert (root.hex(), version) == (op["root"], op["version"])
            roots[version] = root
            if version == until:
                break
        else:
            assert op["op"] == "delete_versions_to", op
            if prune:
                tree.delete_versions_to(op["version"])
    return roots


def process_pool(workers):
    """A process pool whose workers start from a fork server. Forking the test process itself, which runs other
    threads (readers, pytest-xdist's), can copy a lock another thread holds: under the sanitizer run a worker
    hung in ASan's allocator lock that way."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("forkserver"))


IAVL_STORE_KINDS = ("memory", "lmdb", "leveldb")


def new_iavl_store(kind, tmp_path):
    """An empty node store of one kind for IAVL trees, in tmp_path (LevelDB tests skip without plyvel)."""
    from mpt.db import LMDBStore, MemoryDB

    if kind == "leveldb":
        pytest.importorskip("plyvel")
        from mpt.db import LevelDBStore

        return LevelDBStore(tmp_path / "leveldb", create=True)
    if kind == "lmdb":
        return LMDBStore(str(tmp_path / "lmdb"), hash_keys=False)
    return MemoryDB()


def root_of(pairs):
    """The root of the Trie holding (key, value) pairs (a later pair of the same key wins), the tests' reference
    for build_root and friends."""
    return trie_of(pairs).hash()


def from_hex_or_text(s):
    """TrieTests convention: '0x..' strings are hex, anything else is UTF-8 text; None stays None."""
    if s is None:
        return None
    if s.startswith("0x"):
        return bytes.fromhex(s[2:])
    return s.encode()


@pytest.fixture(autouse=True, scope="session")
def _run_from_the_checkout():
    """Tests run with the checkout as the current folder, wherever pytest was started: their `python -m mpt ...`
    subprocesses put the current folder first on sys.path, where the clone's own folder (named `mpt`, seen from
    its parent) would shadow the package, and some tests name files relative to the checkout."""
    started = os.getcwd()
    os.chdir(HERE.parent)
    yield
    os.chdir(started)


@pytest.fixture
def vectors():
    return load_vector


@pytest.fixture(params=["scalar", "avx2", "avx512", "shani"])
def sha256_backend(request):
    """Each SHA-256 backend this CPU and build can run, made the process-wide choice for the test (the previous
    choice is put back after it); a backend that cannot run here is a skip."""
    from mpt.core.runtime import set_sha256_backend, sha256_backends

    if request.param not in sha256_backends():
        pytest.skip(f"this CPU or build cannot run the {request.param} backend")
    old = set_sha256_backend(request.param)
    yield request.param
    set_sha256_backend(old)



@pytest.fixture
def hash_threads(request):
    """The test runs with this many hashing threads (2, or the value of an indirect parametrization:
    ``@pytest.mark.parametrize("hash_threads", [1, 2], indirect=True)``); the previous setting is put back."""
    from mpt.core.runtime import set_hash_threads

    n = getattr(request, "param", 2)
    old = set_hash_threads(n)
    yield n
    set_hash_threads(old)


def run_in_threads(workers):
    """Run each callable of workers on a thread of its own, all at once; fail with what any of them raised."""
    errors = []

    def guard(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=guard, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@contextmanager
def in_background(target, *args, timeout=60):
    """Run target(*args) on another thread while the block runs; at its end the thread is joined (``timeout``
    seconds at most) and what it raised is raised here."""
    errors = []

    def guard():
        try:
            target(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised by the main thread
            errors.append(e)

    thread = threading.Thread(target=guard)
    thread.start()
    try:
        yield thread
    finally:
        thread.join(timeout)
    assert not thread.is_alive(), "the background thread did not finish within %s s" % timeout
    if errors:
        raise errors[0]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs (needs root and mount(8)); unmounted afterwards whatever happens."""
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small tmpfs needs root on Linux")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True,
                       text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % r.stderr.strip())
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)
