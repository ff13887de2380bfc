#!/usr/bin/env python3
"""Check what a release ships: the sdist's file list, a wheel's contents, and the build flags.

    python scripts/check_dist.py dist/mpt_engine-0.1.0.tar.gz dist/mpt_engine-0.1.0-*.whl
    python scripts/check_dist.py --sources build/egg/mpt_engine.egg-info/SOURCES.txt   # egg_info's file list
    python scripts/check_dist.py --flags-only

The rules, checked against the source tree the script sits in (the files git tracks there, or a walk of mpt/
outside a git checkout):

- sdist: every ``.pyx .pxd .pyi .h .inc .py .json py.typed`` under mpt/ and every hand-written ``.c`` is in
  it, and so are LICENSE, README.md, CHANGELOG.md, MANIFEST.in, pyproject.toml and setup.py; nothing generated
  is: no ``.c`` beside a ``.pyx`` of the same name (Cython's output), no ``.so .pyd .o .a .html .pyc``.
  PKG-INFO names the version of mpt/_version.py.
- wheel: one compiled module per ``.pyx``, the stubs, py.typed and the bench data; no Cython output; no
  RPATH outside the wheel (readelf); the METADATA version is mpt/_version.py's.
- flags: no ``-march=native`` / ``-mtune=native`` (or ``-xHost``) in setup.py, pyproject.toml, the hand-written
  C, the interpreter's own CFLAGS or the CFLAGS of this environment: a wheel must run on other x86-64 machines,
  and SIMD code stays behind CPUID dispatch.

Exit status 1 with one line per problem when a rule is broken; also importable (tests/test_packaging.py).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile
from typing import Iterable, List, Optional, Set

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Sources a build reads: the sdist must carry each one found under mpt/.
SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".pyi", ".h", ".inc", ".json"}
SOURCE_NAMES = {"py.typed"}
TOP_LEVEL_FILES = ["LICENSE", "README.md", "CHANGELOG.md", "MANIFEST.in", "pyproject.toml", "setup.py"]
# What a build makes: never in an sdist (and only the .so/.pyd as modules in a wheel).
BUILD_OUTPUT_SUFFIXES = {".so", ".pyd", ".o", ".a", ".html", ".pyc", ".pyo"}
# Flags that tie a binary to the building CPU.
NATIVE_FLAG = re.compile(r"-m(arch|tune|cpu)=native|-xHost\b|target\(\s*\"arch=native")


def version_of_tree(root: pathlib.Path = ROOT) -> str:
    text = (root / "mpt" / "_version.py").read_text()
    match = re.search(r'^__version__\s*=\s*"([^"]+)"', text, re.M)
    if not match:
        raise SystemExit("check_dist: no __version__ in mpt/_version.py")
    return match.group(1)


def tree_files(root: pathlib.Path = ROOT) -> List[str]:
    """The files under mpt/ of the source tree, relative to it: git's tracked files (generated files are ignored
    there) in a checkout, else every file on disk."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", "mpt"], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f and (root / f).exists()]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    return [p.relative_to(root).as_posix() for p in (root / "mpt").rglob("*") if p.is_file()]


def is_cython_output(path: str, names: Set[str]) -> bool:
    """A ``name.c`` (or ``.cpp``) beside a ``name.pyx``: Cython's output, which a hand-written file never is
    (it would be overwritten; that is why mpt/_keccak's binding is binding.pyx, not keccak.pyx)."""
    stem, suffix = os.path.splitext(path)
    return suffix in (".c", ".cpp") and stem + ".pyx" in names


def required_sources(files: Iterable[str]) -> Set[str]:
    """Of the tree's files under mpt/, those an sdist must hold."""
    files = list(files)
    names = set(files)
    required = set()
    for path in files:
        name = path.rsplit("/", 1)[-1]
        suffix = os.path.splitext(path)[1]
        if "__pycache__" in path or suffix in BUILD_OUTPUT_SUFFIXES:
            continue
        if suffix in SOURCE_SUFFIXES or name in SOURCE_NAMES:
            required.add(path)
        elif suffix == ".c" and not is_cython_output(path, names):
            required.add(path)
    return required


def check_file_list(files: Iterable[str], root: pathlib.Path = ROOT) -> List[str]:
    """Problems with an sdist's file list (paths relative to the project root; egg_info's SOURCES.txt writes the
    package's files as ./mpt/... since pyproject.toml names the project folder as the package root)."""
    files = {f[2:] if f.startswith("./") else f for f in files if not f.endswith("/")}
    problems = []
    for path in sorted(required_sources(tree_files(root)) - files):
        problems.append("missing from the sdist: %s" % path)
    for path in TOP_LEVEL_FILES:
        if path not in files:
            problems.append("missing from the sdist: %s" % path)
    for path in sorted(files):
        suffix = os.path.splitext(path)[1]
        if suffix in BUILD_OUTPUT_SUFFIXES or "__pycache__" in path:
            problems.append("build output in the sdist: %s" % path)
        elif is_cython_output(path, files):
            problems.append("Cython's generated C in the sdist: %s" % path)
    return problems


def check_sdist(path: pathlib.Path, root: pathlib.Path = ROOT) -> List[str]:
    with tarfile.open(path) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        prefix = members[0].name.split("/", 1)[0] + "/"
        files = [m.name[len(prefix):] for m in members if m.name.startswith(prefix)]
        pkg_info = archive.extractfile(prefix + "PKG-INFO").read().decode()
    problems = check_file_list(files, root)
    problems += _check_metadata_version(pkg_info, "sdist PKG-INFO", root)
    return problems


def check_wheel(path: pathlib.Path, root: pathlib.Path = ROOT) -> List[str]:
    with zipfile.ZipFile(path) as archive:
        files = set(archive.namelist())
        metadata_name = next((f for f in files if f.endswith(".dist-info/METADATA")), None)
        metadata = archive.read(metadata_name).decode() if metadata_name else ""
    problems = _check_metadata_version(metadata, "wheel METADATA", root)
    tree = tree_files(root)
    for pyx in sorted(f for f in tree if f.endswith(".pyx")):
        stem = pyx[:-len(".pyx")]
        if not any(f.startswith(stem + ".") and f.endswith((".so", ".pyd")) for f in files):
            problems.append("no compiled module for %s in the wheel" % pyx)
    for name in sorted(tree):
        if name.endswith((".pyi", ".pxd", ".json", "py.typed", ".py")) and name not in files:
            problems.append("missing from the wheel: %s" % name)
    for name in sorted(files):
        if is_cython_output(name, files):
            problems.append("Cython's generated C in the wheel: %s" % name)
    problems += _check_rpaths(path)
    return problems


def _check_rpaths(wheel: pathlib.Path) -> List[str]:
    """Every RPATH/RUNPATH of the wheel's modules stays inside the wheel ($ORIGIN...): a path of the build
    machine would be searched first on the user's. Needs binutils' readelf; skipped without it."""
    if not shutil.which("readelf"):
        return []
    problems = []
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for name in archive.namelist():
            if not name.endswith(".so") and ".so." not in name:
                continue
            target = archive.extract(name, scratch)
            dynamic = subprocess.run(["readelf", "-d", target], capture_output=True, text=True).stdout
            for entry in re.findall(r"\((?:RPATH|RUNPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", dynamic):
                for directory in entry.split(":"):
                    if directory and not directory.startswith("$ORIGIN"):
                        problems.append("%s in the wheel searches %s (a build-machine path)" % (name, directory))
    return problems


def _check_metadata_version(metadata: str, where: str, root: pathlib.Path) -> List[str]:
    match = re.search(r"^Version: (.+)$", metadata, re.M)
    want = version_of_tree(root)
    if not match:
        return ["%s names no version" % where]
    if match.group(1).strip() != want:
        return ["%s says version %s, mpt/_version.py %s" % (where, match.group(1).strip(), want)]
    return []


def check_flags(root: pathlib.Path = ROOT) -> List[str]:
    """No flag that ties the binaries to the building machine's CPU, in our build files, our C or the
    toolchain's defaults."""
    problems = []
    files = tree_files(root)
    names = set(files)
    candidates = [root / "setup.py", root / "pyproject.toml"]
    candidates += [root / f for f in files if f.endswith((".c", ".h", ".inc", ".pyx", ".pxd"))
                   and not is_cython_output(f, names)]
    for path in candidates:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if NATIVE_FLAG.search(line):
                problems.append("%s:%d builds for this CPU only: %s" % (path.relative_to(root), number,
                                                                       line.strip()))
    for name in ("CFLAGS", "OPT", "CCSHARED", "LDSHARED", "PY_CFLAGS", "PY_CORE_CFLAGS"):
        value = sysconfig.get_config_var(name) or ""
        if NATIVE_FLAG.search(value):
            problems.append("this Python was built with %s=%s: its extensions inherit it" % (name, value))
    for name in ("CFLAGS", "CPPFLAGS", "LDFLAGS", "ARCHFLAGS"):
        if NATIVE_FLAG.search(os.environ.get(name, "")):
            problems.append("the environment sets %s=%s" % (name, os.environ[name]))
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="*", type=pathlib.Path, help="sdists (.tar.gz) and wheels (.whl)")
    parser.add_argument("--sources", type=pathlib.Path, help="an egg_info SOURCES.txt: check it as an sdist list")
    parser.add_argument("--flags-only", action="store_true", help="only the -march=native check")
    args = parser.parse_args(argv)
    if not args.artifacts and not args.sources and not args.flags_only:
        parser.error("name an sdist, a wheel, --sources or --flags-only")

    problems = check_flags()
    checked = ["build flags"]
    if args.sources:
        files = args.sources.read_text().split()
        problems += check_file_list(files)
        checked.append(str(args.sources))
    for artifact in args.artifacts:
        if artifact.name.endswith(".tar.gz"):
            problems += check_sdist(artifact)
        elif artifact.suffix == ".whl":
            problems += check_wheel(artifact)
        else:
            problems.append("not an sdist or a wheel: %s" % artifact)
        checked.append(artifact.name)
    for problem in problems:
        print("check_dist: " + problem, file=sys.stderr)
    if problems:
        return 1
    print("check_dist: ok (%s)" % ", ".join(checked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
