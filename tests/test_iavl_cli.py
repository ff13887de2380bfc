"""``python -m mpt iavl export|import``: round trips through JSON lines, Go's stream byte for byte, errors."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import VECTORS

pytest.importorskip("lmdb")

import mpt.db  # noqa: E402
from mpt.db import LMDBStore  # noqa: E402
from mpt.iavl import MutableTree  # noqa: E402

PKG_PARENT = str(pathlib.Path(__file__).resolve().parent.parent)
STORE_A = VECTORS / "cosmos" / "iavl_store_A"
GO_EXPORT = (STORE_A / "export_v6.jsonl").read_text()
ROOT_V6 = "d3dcd9863823a7851f3309fe22c019eb27dab84b3ab61fdd7ac5061be960fd6c"


def run_cli(*args, stdin=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "mpt", *args], capture_output=True, text=True, env=env,
                          timeout=120, input=stdin)


def assert_one_error(r, code, text):
    """One ``error:`` line on stderr (a bad argument too: no usage text), no traceback."""
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    assert len(lines) == 1 and "error:" in lines[0] and text in lines[0], r.stderr


@pytest.fixture(scope="module")
def store_a(tmp_path_factory):
    """Go's iavl_store_A history (versions 1-6) replayed into an LMDB store."""
    path = tmp_path_factory.mktemp("cli") / "a.lmdb"
    with LMDBStore(path, hash_keys=False) as store:
        tree = MutableTree(store)
        with open(STORE_A / "ops.jsonl") as f:
            for line in f:
                op = json.loads(line)
                if op["op"] == "set":
                    tree.set(bytes.fromhex(op["key"]), bytes.fromhex(op["value"]))
                elif op["op"] == "remove":
                    tree.remove(bytes.fromhex(op["key"]))
                elif op["op"] == "save_version":
                    assert tree.save_version()[0].hex() == op["root"]
    return path


def test_export_writes_go_stream_byte_for_byte(store_a, tmp_path):
    r = run_cli("iavl", "export", str(store_a), "--version", "6")
    assert r.returncode == 0, r.stderr
    assert r.stdout == GO_EXPORT
    r = run_cli("iavl", "export", str(store_a))          # the latest version by default
    assert r.stdout == GO_EXPORT
    out = tmp_path / "nodes.jsonl"
    r = run_cli("iavl", "export", str(store_a), "--store", "lmdb", "--version", "6", "-o", str(out))
    assert r.returncode == 0 and r.stdout == "" and out.read_text() == GO_EXPORT


def test_round_trip_through_a_file_and_stdin(store_a, tmp_path):
    nodes = tmp_path / "v4.jsonl"
    r = run_cli("iavl", "export", str(store_a), "--version", "4", "-o", str(nodes))
    assert r.returncode == 0, r.stderr
    dst = tmp_path / "dst.lmdb"
    r = run_cli("iavl", "import", str(dst), "--store", "lmdb", "--version", "4", str(nodes))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2b5b66d2de39409ff4e53e2b0783b70cd77dac1989b6571bc68e440de2c9ffd6"
    assert run_cli("iavl", "export", str(dst)).stdout == nodes.read_text()
    dst2 = tmp_path / "dst2.lmdb"
    r = run_cli("iavl", "import", str(dst2), "--store", "lmdb", "--version", "6", stdin=GO_EXPORT)
    assert (r.returncode, r.stdout.strip()) == (0, ROOT_V6), r.stderr
    with LMDBStore(dst2, readonly=True, hash_keys=False) as store:
        tree = MutableTree(store)
        assert tree.load() == 6 and tree.hash().hex() == ROOT_V6


def test_prefix_selects_one_module_store(tmp_path):
    pytest.importorskip("plyvel")
    dst = tmp_path / "application.db"
    r = run_cli("iavl", "import", str(dst), "--store", "leveldb", "--prefix", "s/k:bank/", "--version", "6",
                stdin=GO_EXPORT)
    assert (r.returncode, r.stdout.strip()) == (0, ROOT_V6), r.stderr
    r = run_cli("iavl", "import", str(dst), "--prefix", "s/k:acc/", "--version", "1",
                stdin='{"key":"61","value":"31","version":1,"height":0}\n')
    assert r.returncode == 0, r.stderr
    from mpt.db import LevelDBStore

    with LevelDBStore(dst, readonly=True) as store:
        keys = [k for k, _ in store.iterate(None, None)]
    assert keys and all(k.startswith((b"s/k:bank/", b"s/k:acc/")) for k in keys)
    assert run_cli("iavl", "export", str(dst), "--prefix", "s/k:bank/").stdout == GO_EXPORT
    assert run_cli("iavl", "export", str(dst), "--prefix", "s/k:acc/").stdout == (
        '{"key":"61","value":"31","version":1,"height":0}\n')
    assert_one_error(run_cli("iavl", "export", str(dst), "--prefix", "s/k:gov/"), 1, "no saved version")


def test_prefix_needs_leveldb(store_a):
    assert_one_error(run_cli("iavl", "export", str(store_a), "--prefix", "s/k:bank/"), 2, "LMDB store")


@pytest.mark.skipif(not hasattr(mpt.db, "LevelDBStore"), reason="no mpt.db.LevelDBStore in this build")
def test_leveldb_go_store_exports_go_stream(tmp_path):
    pytest.importorskip("plyvel")
    copy = tmp_path / "iavl.db"
    shutil.copytree(STORE_A / "iavl.db", copy)          # LevelDB rewrites its files on open: never the fixture
    r = run_cli("iavl", "export", str(copy), "--version", "6")
    assert r.returncode == 0, r.stderr
    assert r.stdout == GO_EXPORT
    dst = tmp_path / "new.leveldb"
    r = run_cli("iavl", "import", str(dst), "--store", "leveldb", "--version", "6", stdin=GO_EXPORT)
    assert (r.returncode, r.stdout.strip()) == (0, ROOT_V6), r.stderr
    assert run_cli("iavl", "export", str(dst)).stdout == GO_EXPORT


def test_usage_errors_exit_2(store_a, tmp_path):
    assert_one_error(run_cli("iavl", "export", str(tmp_path / "nothing")), 2, "no store at")
    assert_one_error(run_cli("iavl", "import", str(tmp_path / "new"), "--version", "1", stdin=""), 2, "--store")
    assert_one_error(run_cli("iavl", "export", str(store_a), "--store", "leveldb"), 2, "holds a lmdb store")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x").write_text("x")
    assert_one_error(run_cli("iavl", "export", str(tmp_path / "junk")), 2, "neither")
    assert_one_error(run_cli("iavl", "export", str(store_a), "--version", "0"), 2, "versions run from 1")
    assert_one_error(run_cli("iavl", "import", str(tmp_path / "j.lmdb"), "--store", "lmdb", "--version", "1",
                             stdin='{"key":"00","value":"zz","version":1,"height":0}\n'), 2, "line 1")
    assert_one_error(run_cli("iavl", "import", str(tmp_path / "k.lmdb"), "--store", "lmdb", "--version", "1",
                             stdin="\n[1, 2]\n"), 2, "<stdin> line 2")
    assert_one_error(run_cli("iavl", "import", str(tmp_path / "k.lmdb"), "--store", "lmdb", "--version", "1",
                             str(tmp_path / "missing.jsonl")), 1, "missing.jsonl")


def test_failures_exit_1(store_a, tmp_path):
    assert_one_error(run_cli("iavl", "export", str(store_a), "--version", "9"), 1, "saved versions: 1-6")
    assert_one_error(run_cli("iavl", "import", str(store_a), "--version", "7", stdin=GO_EXPORT), 1, "empty tree")
    lines = GO_EXPORT.splitlines(keepends=True)
    dst = tmp_path / "bad.lmdb"
    r = run_cli("iavl", "import", str(dst), "--store", "lmdb", "--version", "6", stdin="".join(lines[:-1]))
    assert_one_error(r, 1, "leftover")
    r = run_cli("iavl", "import", str(dst), "--store", "lmdb", "--version", "5", stdin=GO_EXPORT)
    assert_one_error(r, 1, "above the import version")
    # Nothing was written by the refused imports: the store is empty and still takes the stream.
    with LMDBStore(dst, readonly=True, hash_keys=False) as store:
        assert list(store.keys()) == []
    r = run_cli("iavl", "import", str(dst), "--store", "lmdb", "--version", "6", stdin=GO_EXPORT)
    assert (r.returncode, r.stdout.strip()) == (0, ROOT_V6), r.stderr


def test_export_into_a_closed_pipe_is_quiet(store_a):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run("%s -m mpt iavl export %s | head -n 1" % (sys.executable, store_a), shell=True,
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.stdout == GO_EXPORT.splitlines(keepends=True)[0]
    assert r.stderr == ""


def test_non_ascii_prefix_and_deeply_nested_lines_are_one_error_line(tmp_path):
    pytest.importorskip("plyvel")
    dst = tmp_path / "application.db"
    r = run_cli("iavl", "import", str(dst), "--store", "leveldb", "--prefix", "s/k:bänk/", "--version", "1",
                stdin='{"key":"61","value":"31","version":1,"height":0}\n')
    assert r.returncode == 0, r.stderr
    from mpt.db import LevelDBStore

    with LevelDBStore(dst, readonly=True) as store:     # the prefix is the command line's UTF-8 bytes
        assert all(k.startswith("s/k:bänk/".encode()) for k, _ in store.iterate(None, None))
    assert run_cli("iavl", "export", str(dst), "--prefix", "s/k:bänk/").returncode == 0
    assert_one_error(run_cli("inspect", "--db", str(dst), "--prefix", "€"), 2, "no IAVL tree")
    assert_one_error(run_cli("iavl", "import", str(tmp_path / "other.db"), "--store", "leveldb", "--version", "1",
                             stdin="[" * 100000 + "\n"), 2, "nested too deeply")
