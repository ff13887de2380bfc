"""Option values of the command lines that argparse alone gets wrong: each is named, in one line, before any work."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def mpt_cli(*argv):
    return subprocess.run([sys.executable, "-m", "mpt", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def alloc_file(tmp_path):
    path = tmp_path / "alloc.json"
    path.write_text(json.dumps({"0x" + "11" * 20: {"balance": "0x1"}}))
    return path


@pytest.mark.parametrize("value, message", [
    ("-5M", "'-5M' is negative: give a size like 512M or 2G"),
    ("-1", "'-1' is negative: give a size like 512M or 2G"),
    ("1_000", "'1_000' is not a size (like 512M or 2G)"),
    ("5 M", "'5 M' is not a size (like 512M or 2G)"),
    ("+5M", "'+5M' is not a size (like 512M or 2G)"),
])
def test_memory_limit_names_a_bad_size(alloc_file, tmp_path, value, message):
    proc = mpt_cli("root", str(alloc_file), "--format", "alloc", "--spill-dir", str(tmp_path),
                   "--memory-limit", value)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    # one line: "python -m mpt root: error: argument --memory-limit: <message> (see python -m mpt root --help)"
    assert len(proc.stderr.splitlines()) == 1
    assert "error: argument --memory-limit: " + message in proc.stderr


@pytest.mark.parametrize("value, size", [("512M", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29),
                                         ("4096", 4096), ("1KB", 1024)])
def test_memory_limit_sizes(value, size):
    from mpt.cli.root import _size

    assert _size(value) == size
