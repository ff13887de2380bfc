"""docs/iavl.rst's instruction counts of a fast-index get and of its floor, recounted with the script the page
names (scripts/iavl_callgrind.py, valgrind's callgrind: instruction counts, not times, so the load of the machine
does not move them)."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "iavl.rst").read_text()



def _documented():
    """{row label: instructions} of the page's table."""
    table = PAGE.split(".. list-table:: instructions per call, CPython 3.11, callgrind")[1].split("\n\n", 2)[1]
    cells = re.findall(r"\* - (.+)\n\s+- ([\d.]+)", table)
    return {label: float(value) for label, value in cells}


def test_the_page_shows_the_three_ops_and_the_ratio_it_states():
    doc = _documented()
    assert list(doc) == ["the loop alone, calling ``len(data)``", "the floor: ``dict.get(key)``",
                         "``tree.get(key)``, fast-node cache hit"]
    floor, get = doc["the floor: ``dict.get(key)``"], doc["``tree.get(key)``, fast-node cache hit"]
    assert "%.1f (%.2f× the floor)" % (get, get / floor) in PAGE


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
# The page counts the release build; a sanitized one (make asan preloads libasan) cannot run under valgrind.
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="an ASan build: counted in release")
@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the page counts CPython 3.11's interpreter")
def test_the_counts_are_what_callgrind_counts_now(tmp_path):
    out = tmp_path / "counts.json"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "iavl_callgrind.py"), "-k", "loop/empty|tree/get|dict.get",
                    "--json", str(out)], check=True, cwd=ROOT, capture_output=True, timeout=600)
    counted = json.loads(out.read_text())
    doc = _documented()
    pairs = [("loop/empty", "the loop alone, calling ``len(data)``"),
             ("loop/dict.get (floor of a get)", "the floor: ``dict.get(key)``"),
             ("tree/get (fast-node cache)", "``tree.get(key)``, fast-node cache hit")]
    for op, label in pairs:
        # A few instructions move with the interpreter's build and the libc: 2% either way.
        assert counted[op] == pytest.approx(doc[label], rel=0.02), (op, counted[op], doc[label])
