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
    # The refused imports created the store folder, and removed it again: nothing is left behind.
    assert not dst.exists()
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


def test_import_help_says_batches_of_the_real_size():
    from mpt.iavl.export import IMPORT_BATCH_SIZE

    r = run_cli("iavl", "import", "--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "in batches of {:,} nodes".format(IMPORT_BATCH_SIZE) in text and "one batch" not in text
    assert "batches of {:,} nodes".format(IMPORT_BATCH_SIZE) in " ".join(
        (pathlib.Path(PKG_PARENT) / "docs" / "iavl.rst").read_text().split())


def test_import_reads_a_gzipped_export(tmp_path):
    import gzip

    gz = tmp_path / "export_v6.jsonl.gz"
    gz.write_bytes(gzip.compress(GO_EXPORT.encode()))
    r = run_cli("iavl", "import", str(tmp_path / "a.lmdb"), "--store", "lmdb", "--version", "6", str(gz))
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, ROOT_V6, "")
    # gzip on stdin too (the bytes decide, not the name)
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "mpt", "iavl", "import", str(tmp_path / "b.lmdb"), "--store", "lmdb",
                        "--version", "6"], input=gz.read_bytes(), capture_output=True, env=env, timeout=120)
    assert (r.returncode, r.stdout.decode().strip()) == (0, ROOT_V6), r.stderr
    # A damaged or truncated one, or bytes that are not text, is one line (and leaves no store behind).
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gz.read_bytes()[:300])
    r = run_cli("iavl", "import", str(tmp_path / "c.lmdb"), "--store", "lmdb", "--version", "6", str(cut))
    assert_one_error(r, 2, "damaged gzip data")
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\xff\xfe\x00" * 10)
    r = run_cli("iavl", "import", str(tmp_path / "d.lmdb"), "--store", "lmdb", "--version", "6", str(binary))
    assert_one_error(r, 2, "not UTF-8 text")
    assert not (tmp_path / "c.lmdb").exists() and not (tmp_path / "d.lmdb").exists()


@pytest.mark.parametrize("kind", ["lmdb", "leveldb"])
def test_failed_import_removes_only_what_it_created(tmp_path, kind):
    if kind == "leveldb":
        pytest.importorskip("plyvel")
    bad = "".join(GO_EXPORT.splitlines(keepends=True)[:-1])      # no root: refused at the end
    new = tmp_path / "new.db"
    assert_one_error(run_cli("iavl", "import", str(new), "--store", kind, "--version", "6", stdin=bad), 1, "leftover")
    assert not new.exists()
    # A folder that was there, empty: it stays, and empty.
    empty = tmp_path / "empty.db"
    empty.mkdir()
    assert_one_error(run_cli("iavl", "import", str(empty), "--store", kind, "--version", "6", stdin=bad), 1,
                     "leftover")
    assert empty.is_dir() and os.listdir(empty) == []
    # A store that held something before is never removed (the import is refused before it writes).
    full = tmp_path / "full.db"
    assert run_cli("iavl", "import", str(full), "--store", kind, "--version", "6", stdin=GO_EXPORT).returncode == 0
    r = run_cli("iavl", "import", str(full), "--version", "7", stdin=GO_EXPORT)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert run_cli("iavl", "export", str(full)).stdout == GO_EXPORT


def test_remove_new_store_leaves_foreign_files(tmp_path):
    from mpt.iavl.cli import _remove_new_store

    folder = tmp_path / "s"
    folder.mkdir()
    for name in ("data.mdb", "lock.mdb", "CURRENT", "LOCK", "LOG", "MANIFEST-000001", "000003.log", "notes.txt"):
        (folder / name).write_text("x")
    _remove_new_store(str(folder), None)
    assert os.listdir(folder) == ["notes.txt"]      # not ours: kept, and so is the folder
    _remove_new_store(str(folder), {"notes.txt"})   # held something before: nothing is touched
    assert os.listdir(folder) == ["notes.txt"]


# ---------------------------------------------------------------------------------------------------- inspect

def test_inspect_root_on_an_iavl_store_is_refused(store_a):
    assert_one_error(run_cli("inspect", "--db", str(store_a), "--iavl", "--root", "zz"), 2, "--root 'zz' is not hex")
    assert_one_error(run_cli("inspect", "--db", str(store_a), "--iavl", "--root", "0x" + ROOT_V6), 2,
                     "an IAVL store has a root per version")
    r = run_cli("inspect", "--db", str(store_a), "--iavl")
    assert r.returncode == 0 and ROOT_V6 in r.stdout


def test_inspect_names_iavl_in_lmdb_without_iavl(store_a):
    assert_one_error(run_cli("inspect", "--db", str(store_a)), 2,
                     "holds an IAVL tree, not an Ethereum trie: pass --iavl")
    assert_one_error(run_cli("inspect", "--db", str(store_a), "--root", ROOT_V6), 2, "pass --iavl")


def test_inspect_and_export_of_a_multistore_list_its_module_stores(tmp_path):
    pytest.importorskip("plyvel")
    app = tmp_path / "application.db"
    for name in ("bank", "acc", "staking"):
        r = run_cli("iavl", "import", str(app), "--store", "leveldb", "--prefix", "s/k:%s/" % name, "--version", "6",
                    stdin=GO_EXPORT)
        assert r.returncode == 0, r.stderr
    from mpt.db import LevelDBStore

    with LevelDBStore(app) as store:        # the multistore's own records beside the module stores
        store.put(b"s/latest", b"\x06")
        store.put(b"s/6", b"commit info")
    want = "is a Cosmos multistore: pass --prefix with one of its 3 module stores: s/k:acc/, s/k:bank/, s/k:staking/"
    assert_one_error(run_cli("inspect", "--db", str(app)), 2, want)
    assert_one_error(run_cli("iavl", "export", str(app)), 2, "s/k:acc/, s/k:bank/, s/k:staking/")
    r = run_cli("inspect", "--db", str(app), "--prefix", "s/k:bank/")
    assert r.returncode == 0 and "latest version   6" in r.stdout and ROOT_V6 in r.stdout


def test_inspect_help_names_both_stores():
    r = run_cli("inspect", "--help")
    text = " ".join(r.stdout.split())
    assert "an LMDB store" in text and "a LevelDB directory" in text and "LMDB store directory (an" not in text


def test_import_accepts_0x_hex(tmp_path):
    lines = [json.loads(line) for line in GO_EXPORT.splitlines()]
    text = "".join(json.dumps({**d, "key": "0x" + d["key"], "value": None if d["value"] is None else "0X" + d["value"]})
                   + "\n" for d in lines)
    r = run_cli("iavl", "import", str(tmp_path / "x.lmdb"), "--store", "lmdb", "--version", "6", stdin=text)
    assert (r.returncode, r.stdout.strip()) == (0, ROOT_V6), r.stderr
