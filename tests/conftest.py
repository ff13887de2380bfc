"""Shared test helpers: where the public test vectors are, and a trie filled from a dict."""
import json
import os
import pathlib

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
    """A Trie (on db, a fresh MemoryDB when None) holding every key -> value of model, inserted in its order."""
    from mpt import Trie

    t = Trie() if db is None else Trie(db)
    for k, v in model.items():
        t[k] = v
    return t


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
