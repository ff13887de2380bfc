"""Replay the committed fuzz corpus and every crash reproducer through the fuzz harnesses (no atheris needed).

fuzz/corpus/<target>/ holds the seeds (fuzz/make_corpus.py); fuzz/regressions/<target>/ holds the inputs that
once broke mpt, each fixed since. A harness's test_one_input raises exactly when mpt breaks its hostile-input
contract, so every file must pass through silently.
"""
import copy
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ_DIR = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ_DIR))

from fuzz_support import TARGETS  # noqa: E402  (fuzz/fuzz_support.py: the one list of harnesses)


def _inputs(kind):
    return [pytest.param(target, path, id="%s/%s" % (target, path.name))
            for target in TARGETS
            for path in sorted((FUZZ_DIR / kind / target).glob("*")) if path.is_file()]


def _harness(target):
    return importlib.import_module("fuzz_%s" % target)


def test_targets_list_every_harness():
    on_disk = {path.stem[len("fuzz_"):] for path in FUZZ_DIR.glob("fuzz_*.py")} - {"support"}
    assert sorted(TARGETS) == sorted(on_disk)
    assert len(set(TARGETS)) == len(TARGETS)


def test_committed_seeds_are_what_make_corpus_writes():
    subprocess.run([sys.executable, str(FUZZ_DIR / "make_corpus.py"), "--check"], check=True, cwd=FUZZ_DIR.parent)


def test_every_target_has_a_seed_corpus():
    for target in TARGETS:
        seeds = list((FUZZ_DIR / "corpus" / target).glob("*"))
        assert len(seeds) >= 10, "fuzz/corpus/%s is missing its seeds (python fuzz/make_corpus.py)" % target


@pytest.mark.parametrize("target, path", _inputs("corpus"))
def test_seed_corpus(target, path):
    _harness(target).test_one_input(path.read_bytes())


@pytest.mark.parametrize("target, path", _inputs("regressions"))
def test_regression(target, path):
    _harness(target).test_one_input(path.read_bytes())


def test_tampering_never_writes_into_the_replacement_values():
    # A harness's tampering places wrong-typed values from a module-level table, then may edit the same field
    # again. With the table's own {} placed, fuzz/regressions/merkle/junk-dict-given-itself made that dict its
    # own "total" (json.dumps: circular reference, the CI fuzz run's failure), and any such edit changed the
    # table for every later input. The tables now hand out copies.
    merkle, eip1186 = _harness("merkle"), _harness("eip1186")
    before = copy.deepcopy((merkle._JUNK, eip1186.ODD_VALUES))
    merkle.test_one_input((FUZZ_DIR / "regressions" / "merkle" / "junk-dict-given-itself").read_bytes())
    # eip1186: two edits of accountProof, first to the table's ["0x00"], then deleting that list's item.
    from fuzz_support import FuzzInput, InputBuilder
    field = eip1186.TOP_FIELDS.index("accountProof")
    template = eip1186.ODD_VALUES.index(["0x00"])
    response = {}
    edits = InputBuilder().byte(2).byte(field).byte(1).byte(template).byte(field).byte(3).byte(0).byte(0).build()
    eip1186.tamper(response, FuzzInput(edits), [])
    assert response == {"accountProof": []}
    assert (merkle._JUNK, eip1186.ODD_VALUES) == before


def test_harnesses_import_without_atheris():
    # atheris is imported only when a harness runs as a script: block it and import every harness.
    code = "import sys; sys.modules['atheris'] = None; sys.path.insert(0, %r); %s" % (
        str(FUZZ_DIR), "; ".join("import fuzz_%s" % target for target in TARGETS))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=FUZZ_DIR.parent)
