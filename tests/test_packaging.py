"""Packaging: one version everywhere, an sdist file list with every source and nothing generated, portable flags.

The built artifacts themselves are checked by `make dist` and CI (scripts/check_dist.py on the real sdist, then
scripts/smoke_install.py installs it outside the checkout); these tests keep the rules true between releases.
"""
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

import mpt

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_dist = _load_script("check_dist")
smoke_install = _load_script("smoke_install")


# --- one version ---------------------------------------------------------------------------------------------

def test_version_has_one_source():
    from mpt._version import __version__

    assert mpt.__version__ is __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.dev\d+)?", __version__)
    assert check_dist.version_of_tree() == __version__
    pyproject = (ROOT / "pyproject.toml").read_text()
    project_table = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project_table, re.M), "pyproject.toml must not repeat the version"
    assert re.search(r'^dynamic = \["version"\]', project_table, re.M)
    assert 'version = { attr = "mpt._version.__version__" }' in pyproject


def test_installed_metadata_and_bench_header_read_the_same_version():
    # An install older than mpt/_version.py fails here: reinstall (pip install -e ".[test]").
    assert importlib.metadata.version("mpt-engine") == mpt.__version__
    from mpt.bench.__main__ import _mpt_version

    assert _mpt_version() == mpt.__version__


def test_changelog_names_the_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert headings[0] == "Unreleased"
    assert headings[1] == mpt.__version__, "CHANGELOG.md's newest release heading must name mpt.__version__"


# --- the sdist's file list -----------------------------------------------------------------------------------

def test_sdist_file_list_has_every_source_and_nothing_generated(tmp_path):
    # egg_info writes exactly the list the sdist packs (SOURCES.txt); it also goes through setup.py's filter of
    # Cython's output, present in the checkout after any in-place or editable build.
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)], cwd=ROOT,
                   check=True, capture_output=True)
    sources = (tmp_path / "mpt_engine.egg-info" / "SOURCES.txt").read_text().split()
    assert check_dist.check_file_list(sources) == []
    assert "mpt/core/_keccak/keccak_lanes_template.inc" in sources and "mpt/core/_keccak/keccak.c" in sources
    assert "mpt/ethereum/trie.pyx" in sources and "mpt/ethereum/trie.c" not in sources
    assert not any(path.startswith("tests/") for path in sources)


def test_manifest_globs_cover_new_modules_and_subpackages(tmp_path, monkeypatch):
    """MANIFEST.in's patterns take sources of modules nobody has listed yet (subpackages, C libraries)."""
    from setuptools.command.egg_info import FileList

    new_files = ["mpt/shards/build.pyx", "mpt/shards/records.pxd", "mpt/merkle.pyx", "mpt/merkle.pxd", "mpt/merkle.pyi",
                 "mpt/iavl/__init__.py", "mpt/iavl/tree.pyx", "mpt/iavl/tree.pxd", "mpt/iavl/tree.pyi",
                 "mpt/iavl/vectors.json", "mpt/_sha256/sha256.h", "mpt/_sha256/sha256.pxd",
                 "mpt/_sha256/sha256_rounds.inc", "mpt/py.typed"]
    generated = ["mpt/merkle.c", "mpt/iavl/tree.c", "mpt/iavl/tree.cpython-311-x86_64-linux-gnu.so",
                 "mpt/iavl/__pycache__/__init__.cpython-311.pyc", "tests/test_iavl.py"]
    for path in new_files + generated + ["LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "setup.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "MANIFEST.in").write_text((ROOT / "MANIFEST.in").read_text())
    monkeypatch.chdir(tmp_path)
    file_list = FileList()
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            file_list.process_template_line(line)
    included = set(file_list.files)
    assert set(new_files) - {"mpt/iavl/__init__.py"} <= included   # .py files come from the packages
    assert not included & set(generated)


def test_check_dist_rules(tmp_path):
    """The checker itself: a missing source, Cython's output and build output are each reported."""
    for path in ["mpt/__init__.py", "mpt/a.pyx", "mpt/a.c", "mpt/lib/hand.c", "mpt/lib/hand.h", "mpt/x.inc"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    top = check_dist.TOP_LEVEL_FILES
    good = top + ["mpt/__init__.py", "mpt/a.pyx", "mpt/lib/hand.c", "mpt/lib/hand.h", "mpt/x.inc"]
    assert check_dist.check_file_list(good, tmp_path) == []
    problems = check_dist.check_file_list([p for p in good if p != "mpt/lib/hand.c"] + ["mpt/a.c", "mpt/a.so"],
                                          tmp_path)
    assert problems == ["missing from the sdist: mpt/lib/hand.c", "Cython's generated C in the sdist: mpt/a.c",
                        "build output in the sdist: mpt/a.so"]


# --- portable builds -----------------------------------------------------------------------------------------

def test_no_flags_that_tie_a_build_to_this_cpu():
    assert check_dist.check_flags() == []
    assert check_dist.NATIVE_FLAG.search("-O3 -march=native") and check_dist.NATIVE_FLAG.search("-mtune=native")
    assert not check_dist.NATIVE_FLAG.search('#pragma GCC target("avx2")')


def test_smoke_subset_and_cibuildwheel_point_at_real_files():
    for name in smoke_install.SMOKE_TESTS:
        assert (ROOT / "tests" / name).is_file(), name
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'test-command = "python {project}/scripts/smoke_install.py --installed"' in pyproject
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^## .+\ndist:$", makefile, re.M)   # `make help` reads the "## " line above a rule


@pytest.mark.parametrize("artifact", ["", "--installed"])
def test_smoke_rejects_the_checkout(artifact):
    """The installed-copy check refuses an mpt imported from the checkout (this editable install)."""
    if artifact == "":
        with pytest.raises(SystemExit):
            smoke_install.main([])      # nothing to check
        return
    result = subprocess.run(smoke_install.root_check_command(sys.executable, ROOT), cwd=ROOT.parent,
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert "not site-packages" in result.stderr or "from the checkout" in result.stderr, result.stderr


def test_root_check_ignores_a_folder_named_mpt_in_the_current_directory(tmp_path):
    """A clone in a folder named `mpt`, seen from its parent: `python -c` would put the current folder first on
    sys.path, where that folder (no __init__.py) shadows the package as an empty namespace package
    ("cannot import name 'StackTrie' from 'mpt' (unknown location)"). The check runs isolated from it."""
    (tmp_path / "mpt" / "mpt").mkdir(parents=True)
    (tmp_path / "mpt" / "pyproject.toml").write_text("")
    result = subprocess.run(smoke_install.root_check_command(sys.executable, ROOT), cwd=tmp_path,
                            capture_output=True, text=True)
    assert "unknown location" not in result.stderr and "ImportError" not in result.stderr, result.stderr
    assert "not site-packages" in result.stderr      # it got as far as asking where mpt came from


def test_cli_and_tests_run_from_the_clones_parent_folder(tmp_path):
    """`python -m pytest` started from the folder that holds the clone (named `mpt`) imports the package, not the
    clone's folder: pytest puts the checkout first on sys.path (pyproject's `pythonpath`) and runs the tests from
    the checkout (conftest.py), so `python -m mpt` subprocesses import the package too."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^pythonpath = \["\."\]', pyproject, re.M)
    parent = tmp_path / "parent"
    (parent / "mpt" / "tests").mkdir(parents=True)
    # A stand-in clone named mpt: this checkout's pytest configuration and conftest, and one test that imports
    # the package and starts `python -m mpt`.
    clone = parent / "mpt"
    (clone / "pyproject.toml").write_text(pyproject)
    (clone / "mpt").symlink_to(ROOT / "mpt")
    (clone / "tests" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (clone / "tests" / "test_here.py").write_text(
        "import subprocess, sys\n"
        "from mpt import StackTrie\n"
        "def test_cli():\n"
        "    out = subprocess.run([sys.executable, '-m', 'mpt', '--help'], capture_output=True, text=True)\n"
        "    assert out.returncode == 0, out.stderr\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "mpt/tests"],
                            cwd=parent, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_metadata_and_sdist_run_no_cython(tmp_path):
    """Cython runs only when something is compiled: egg_info (the sdist's file list) never loads cythonize.
    (setuptools itself imports Cython's distutils command when Cython is installed; that compiles nothing.)"""
    generated = {path: path.stat().st_mtime_ns for path in (ROOT / "mpt").rglob("*.c")}
    result = subprocess.run([sys.executable, "-X", "importtime", "setup.py", "-q", "egg_info", "--egg-base",
                             str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line]
    assert "setuptools" in imported and "Cython.Build.Dependencies" not in imported
    assert {path: path.stat().st_mtime_ns for path in generated} == generated


def test_build_flags_and_reuse_are_set_up():
    """-O2 for the Cython modules, -O3 only for the hand-written Keccak and SHA-256; a persistent build folder."""
    setup_py = (ROOT / "setup.py").read_text()
    assert 'extra_compile_args = ["-O2", "-fno-strict-aliasing"]' in setup_py
    # One table of the compiled modules, and only the two documented switches.
    assert re.findall(r'os\.environ\.get\("(MPT_\w+)"', setup_py) == ["MPT_DEBUG", "MPT_SANITIZE"]
    table = re.search(r"^EXTENSIONS = \{(.*?)^\}", setup_py, re.M | re.S).group(1)
    names = set(re.findall(r'^    "([\w.]+)":', table, re.M))
    pyx = {str(p.relative_to(ROOT).with_suffix("")).replace("/", ".") for p in (ROOT / "mpt").rglob("*.pyx")}
    assert names == pyx
    assert '"cflags": HOT_C_ARGS + ["-fPIC"]' in setup_py
    assert 'PERSISTENT_BUILD = os.path.join("build", "reuse-"' in setup_py
    # The C libraries are every extension's dependencies: distutils rebuilds a module only when a source or a
    # dependency is newer, and a changed libmpt_keccak.a had left every module linked against the old one.
    assert "ext.depends = list(ext.depends) + [lib for lib in self._libraries" in setup_py
    assert subprocess.run(["git", "check-ignore", "-q", "build/reuse-cpython-311/x"], cwd=ROOT).returncode in (0, 128)
