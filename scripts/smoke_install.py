#!/usr/bin/env python3
"""Install a built sdist or wheel into a fresh virtual environment outside the checkout and test that copy.

    python scripts/smoke_install.py dist/mpt_engine-0.1.0.tar.gz          # as a user without a wheel would
    python scripts/smoke_install.py dist/mpt_engine-0.1.0-cp311-*.whl
    python scripts/smoke_install.py --no-build-isolation dist/*.tar.gz    # Cython preinstalled in the venv
    python scripts/smoke_install.py --installed       # the mpt this interpreter has (cibuildwheel's test step)

In a new temporary folder (never inside the checkout) it makes a venv and pip-installs the artifact: an sdist
builds in pip's isolated build environment, which pulls Cython and setuptools itself (or, with
--no-build-isolation, with the Cython and setuptools installed into the venv first). Then, from that folder:

1. ``mpt`` must import from the venv's site-packages, and ``mpt.__version__`` must equal the installed
   distribution's version;
2. ``Trie`` and ``StackTrie`` must give geth's root of ``make_accounts(1000)``
   (72f9d3f3...493f3fe6, mpt.bench.workloads.ACCOUNT_ROOTS);
3. a smoke subset of the test suite (SMOKE_TESTS, copied with conftest.py and tests/vectors into the folder, so
   nothing of the checkout is on sys.path) must pass against the installed copy.

The folder is removed afterwards unless --keep. Exit status: pytest's, or 1 when a check fails.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Fast tests (about 30 s in all here) that cover every compiled module through the public API and read only
# tests/vectors and the package's own data: Keccak against pycryptodome, RLP, keys, nodes, SecureTrie,
# StackTrie with geth's vectors, derive_sha, proofs, block roots, EIP-1186, iterators, commits.
SMOKE_TESTS = [
    "test_keccak.py",
    "test_rlp.py",
    "test_encoding.py",
    "test_node.py",
    "test_secure.py",
    "test_stacktrie.py",
    "test_derive.py",
    "test_proof.py",
    "test_eth.py",
    "test_eip1186.py",
    "test_iterator.py",
    "test_commit.py",
    "test_sha256.py",
    "test_merkle.py",
    "test_iavl_node.py",
    "test_iavl_tree.py",
]
# What those tests import besides mpt and pytest.
TEST_REQUIREMENTS = ["pytest>=7", "hypothesis>=6", "pycryptodome>=3.15"]
# What the package's build needs in the venv when pip does not isolate the build (pyproject.toml's build-system).
BUILD_REQUIREMENTS = ["setuptools>=77", "Cython>=3.0"]

ROOT_CHECK = textwrap.dedent(
    """
    import importlib.metadata, pathlib, sys, sysconfig
    import mpt
    from mpt import StackTrie, Trie
    from mpt.bench.workloads import ACCOUNT_ROOTS, account_keys, make_accounts
    from mpt.core.runtime import keccak_backend

    site = {pathlib.Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    location = pathlib.Path(mpt.__file__).resolve()
    assert any(s in location.parents for s in site), "mpt imported from %s, not site-packages" % location
    assert not pathlib.Path(sys.argv[1]) in location.parents, "mpt imported from the checkout"
    installed = importlib.metadata.version("mpt-engine")
    assert mpt.__version__ == installed, (mpt.__version__, installed)

    addresses, accounts = make_accounts(1000)
    keys = account_keys(addresses)
    trie = Trie()
    for key, value in zip(keys, accounts):
        trie.update(key, value)
    stack = StackTrie()
    for key, value in sorted(zip(keys, accounts)):
        stack.update(key, value)
    want = "72f9d3f3fe1e1dd7b8936442e7642aef76371472d94319900790053c493f3fe6"
    assert ACCOUNT_ROOTS[1000].hex() == want
    assert trie.hash().hex() == want, trie.hash().hex()
    assert stack.hash().hex() == want, stack.hash().hex()
    print("smoke: mpt %s from %s (keccak backend %s): make_accounts(1000) root %s"
          % (mpt.__version__, location.parent, keccak_backend(), want))
    """
)


def root_check_command(python, root=ROOT):
    """Steps 1-2: ROOT_CHECK in ``python``, isolated (-I) from the current folder and PYTHON* variables.

    Without -I, `python -c` puts the current folder first on sys.path; a folder there named `mpt` (a clone of
    this repository, seen from its parent) would shadow the package as an empty namespace package.
    """
    return [str(python), "-I", "-c", ROOT_CHECK, str(root)]


def _run(command, **kwargs):
    shown = ["'<%d-line script>'" % len(str(c).splitlines()) if "\n" in str(c) else str(c) for c in command]
    print("smoke: $ " + " ".join(shown), flush=True)
    return subprocess.run([str(c) for c in command], **kwargs)


def _pip(venv_python, *args):
    # Quiet, and without the "Location ... is ignored" lines a local-index configuration prints on some machines.
    result = _run([venv_python, "-m", "pip", "install", "-q", *args], stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, text=True)
    for line in result.stdout.splitlines():
        if not (line.startswith("WARNING: Location '")
                and line.endswith("is ignored: it is neither a file nor a directory.")):
            print(line)
    if result.returncode:
        raise SystemExit("smoke: pip install failed (exit %d)" % result.returncode)


def check_installed(python, tests, work: pathlib.Path, env) -> int:
    """Steps 1-3 with ``python``, from ``work`` (a folder outside the checkout)."""
    # The test files go to work/project/tests (their conftest looks for ../../shared/vectors, absent there, then
    # for tests/vectors beside it). Only they are on sys.path; mpt comes from site-packages.
    project = work / "project"
    (project / "tests").mkdir(parents=True)
    for name in ["conftest.py", *tests]:
        shutil.copy2(ROOT / "tests" / name, project / "tests" / name)
    shutil.copytree(ROOT / "tests" / "vectors", project / "tests" / "vectors")
    # test_proof.py checks the C node readers against the fuzz harnesses' pure-Python rules (../fuzz from tests).
    (project / "fuzz").mkdir()
    shutil.copy2(ROOT / "fuzz" / "fuzz_support.py", project / "fuzz" / "fuzz_support.py")
    (project / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow: long-running tests (deselect with -m 'not slow')\n")

    if _run(root_check_command(python), cwd=project, env=env).returncode:
        print("smoke: the installed copy failed its checks", file=sys.stderr)
        return 1
    return _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project, env=env).returncode


def smoke(artifact: Optional[pathlib.Path], *, no_build_isolation: bool, tests, keep: bool) -> int:
    """Install ``artifact`` into a new venv and check it; with ``artifact`` None, check this interpreter's mpt."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="mpt-smoke-")).resolve()
    if ROOT in work.parents:
        raise SystemExit("smoke: the temporary folder %s is inside the checkout; set TMPDIR elsewhere" % work)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    start = time.monotonic()
    try:
        if artifact is None:
            python = pathlib.Path(sys.executable)
            name = "the installed mpt"
        else:
            artifact = artifact.resolve()
            if not artifact.is_file():
                raise SystemExit("smoke: no such file: %s" % artifact)
            name = artifact.name
            env.pop("VIRTUAL_ENV", None)
            _run([sys.executable, "-m", "venv", work / "venv"], check=True)
            python = work / "venv" / "bin" / "python"
            if no_build_isolation:
                _pip(python, *BUILD_REQUIREMENTS)
                _pip(python, "--no-build-isolation", artifact, *TEST_REQUIREMENTS)
            else:
                _pip(python, artifact, *TEST_REQUIREMENTS)
            print("smoke: installed %s in %.0f s" % (name, time.monotonic() - start), flush=True)
        status = check_installed(python, tests, work, env)
        print("smoke: %s: %s in %.0f s" % (name, "FAILED" if status else "passed", time.monotonic() - start),
              flush=True)
        return status
    finally:
        if keep:
            print("smoke: kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="*", type=pathlib.Path, help="sdists (.tar.gz) and wheels (.whl)")
    parser.add_argument("--installed", action="store_true",
                        help="no install: check the mpt this interpreter has (cibuildwheel's test step)")
    parser.add_argument("--no-build-isolation", action="store_true",
                        help="preinstall Cython and setuptools in the venv and build the sdist with them")
    parser.add_argument("--tests", nargs="*", default=SMOKE_TESTS, metavar="FILE",
                        help="test files of tests/ to run (default: the smoke subset)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    if args.installed == bool(args.artifacts):
        parser.error("name sdists or wheels to install, or pass --installed")
    options = dict(no_build_isolation=args.no_build_isolation, tests=args.tests, keep=args.keep)
    if args.installed:
        return smoke(None, **options)
    status = 0
    for artifact in args.artifacts:
        status = smoke(artifact, **options) or status
    return status


if __name__ == "__main__":
    sys.exit(main())
