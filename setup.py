"""Build the Cython extensions of mpt.

`MPT_DEBUG=1` turns on line tracing (for coverage) and keeps assertions and bounds checks on.
`MPT_SANITIZE=address,undefined` (any `-fsanitize=` list) compiles and links every extension and the Keccak
library with those sanitizers (scripts/asan.sh, `make asan`; docs/memory_safety.rst).
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("MPT_DEBUG") == "1"

KECCAK_SOURCES = ["mpt/_keccak/keccak.c", "mpt/_keccak/keccak_lanes.c"]
KECCAK_INCLUDE = ["mpt/_keccak"]

# Modules that call our C Keccak link the static library built once from keccak.c; the rest are plain Cython.
MODULES = {
    "mpt._keccak.binding": True,
    "mpt.rlp": False,
    "mpt.encoding": False,
    "mpt.node": False,
    "mpt.hasher": True,
    "mpt.committer": False,
    "mpt.trie": True,
    "mpt.iterator": False,
    "mpt.secure": True,
    "mpt.stacktrie": True,
    "mpt.derive": True,
    "mpt.proof": True,
    "mpt.bench._alloc": True,
    "mpt.parallel": False,
}

extra_compile_args = ["-O3", "-fno-strict-aliasing"]
define_macros = []
if DEBUG:
    extra_compile_args = ["-O0", "-g"]
    define_macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]

# The hasher spreads a level's keccaks over threads with OpenMP (cython.parallel.prange).
OPENMP_MODULES = {"mpt.hasher"}

extensions = [
    Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"],
        include_dirs=KECCAK_INCLUDE,
        libraries=["mpt_keccak"] if needs_keccak else [],
        extra_compile_args=extra_compile_args + (["-fopenmp"] if name in OPENMP_MODULES else []),
        extra_link_args=["-fopenmp"] if name in OPENMP_MODULES else [],
        define_macros=define_macros,
    )
    for name, needs_keccak in MODULES.items()
]

# keccak.c is compiled once (build_clib) instead of once per extension.
keccak_library = ("mpt_keccak", {"sources": KECCAK_SOURCES, "include_dirs": KECCAK_INCLUDE,
                                 "cflags": extra_compile_args + ["-fPIC"]})


class ParallelBuildExt(build_ext):
    """Compile the extensions on every core: a fresh install compiles a dozen large generated C files."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        # `build_ext --inplace` and editable installs skip the `build` command that would run build_clib.
        self.run_command("build_clib")
        super().run()

directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "embedsignature.format": "python",
    "linetrace": DEBUG,
}

# Sanitizers: added last, to whatever flags the extensions and keccak.c got above. Undefined behaviour aborts
# (-fno-sanitize-recover) instead of printing a report and going on, so a test run under it fails; -fno-wrapv
# undoes CPython's -fwrapv so that signed overflow is reported too. Cython's bounds and wraparound checks stay
# as in the release build even with MPT_DEBUG=1: an out-of-range index must reach ASan, not become an IndexError
# (or, negative, silently wrap around) only in the checked build. Line tracing (coverage) is left out: it only
# makes the C larger and its compilation slower.
SANITIZE = os.environ.get("MPT_SANITIZE", "").strip()
if SANITIZE:
    sanitize_args = ["-fsanitize=" + SANITIZE, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-fno-wrapv"]
    for extension in extensions:
        extension.extra_compile_args = extension.extra_compile_args + sanitize_args
        extension.extra_link_args = extension.extra_link_args + sanitize_args
        extension.define_macros = [m for m in extension.define_macros if not m[0].startswith("CYTHON_TRACE")]
    keccak_library[1]["cflags"] = keccak_library[1]["cflags"] + sanitize_args
    directives.update(boundscheck=False, wraparound=False, initializedcheck=False, linetrace=False)

setup(
    libraries=[keccak_library],
    ext_modules=cythonize(extensions, compiler_directives=directives, annotate=False),
    cmdclass={"build_ext": ParallelBuildExt},
)
