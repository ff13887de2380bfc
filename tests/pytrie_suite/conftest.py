"""py-trie 4.0.0's tests/core/conftest.py, plus the one line that runs the suite on mpt (PROVENANCE.md).

``install()`` runs before pytest imports the suite's modules, so their ``from trie import HexaryTrie`` (and
``from trie.hexary import HexaryTrie``) bind mpt's class. The rest keeps the other test files of mpt's own suite,
which compare against py-trie's class, on py-trie's class: the bindings are restored once this folder is
collected, and installed again around each test of this folder (py-trie's ``trie.tools`` helpers look the
name up when a test runs).
"""
import pytest
import warnings

try:  # mpt: without py-trie 4 (the `pytrie` extra) there is nothing to run the suite against
    import trie

    _HAVE_PYTRIE_4 = trie.__version__.split(".")[0] == "4"
except ImportError:
    _HAVE_PYTRIE_4 = False
if not _HAVE_PYTRIE_4:
    collect_ignore_glob = ["*.py"]
else:
    import mpt.compat.pytrie

    mpt.compat.pytrie.install()  # mpt: the install line


@pytest.fixture(autouse=True)
def show_all_warnings():
    warnings.simplefilter("always")


@pytest.fixture(autouse=True)
def _mpt_pytrie_installed():
    with mpt.compat.pytrie.installed():
        yield


def pytest_collectreport(report):
    if _HAVE_PYTRIE_4 and report.nodeid.rstrip("/").endswith("pytrie_suite"):
        mpt.compat.pytrie.uninstall()
