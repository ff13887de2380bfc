"""``pytest -p mpt.compat.pytrie.pytest_plugin``: run a test suite with :func:`mpt.compat.pytrie.install` in
effect, without editing it (how mpt's CI runs py-evm's own tests on mpt). In a project of your own, the one line
``mpt.compat.pytrie.install()`` in its ``conftest.py`` does the same."""

import mpt.compat.pytrie

mpt.compat.pytrie.install()


def pytest_report_header(config):
    return "mpt.compat.pytrie: trie.HexaryTrie is mpt's (installed: %s)" % mpt.compat.pytrie.is_installed()
