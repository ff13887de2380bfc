"""Build the Cython extensions of mpt.

`MPT_DEBUG=1` turns on line tracing (for coverage) and keeps assertions and bounds checks on.
`MPT_SANITIZE=address,undefined` (any `-fsanitize=` list) compiles and links every extension and the Keccak
library with those sanitizers (scripts/asan.sh, `make asan`; docs/memory_safety.rst).
"""
import os
import sysconfig

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.egg_info import egg_info, manifest_maker

DEBUG = os.environ.get("MPT_DEBUG") == "1"

KECCAK_SOURCES = ["mpt/_keccak/keccak.c", "mpt/_keccak/keccak_lanes.c"]
KECCAK_INCLUDE = ["mpt/_keccak"]

SHA256_SOURCES = ["mpt/_sha256/sha256.c"]
SHA256_INCLUDE = ["mpt/_sha256"]

# Modules that call our C Keccak link the static library built once from keccak.c; the rest are plain Cython.
MODULES = {
    "mpt._keccak.binding": True,
    "mpt.rlp": False,
    "mpt.encoding": False,
    "mpt.node": False,
    "mpt.runtime": True,
    "mpt.hasher": True,
    "mpt.committer": False,
    "mpt.trie": True,
    "mpt.iterator": False,
    "mpt.secure": True,
    "mpt.stacktrie": True,
    "mpt.derive": True,
    "mpt.proof": True,
    "mpt.bench._alloc": True,
    "mpt._sha256.binding": False,
    "mpt.merkle": False,
    "mpt.iavl.node": False,
    "mpt.iavl.tree": False,
    "mpt.parallel": False,
    "mpt.ics23.wire": False,
}

# Modules that call our C SHA-256 link the static library built once from sha256.c ("mpt_sha256").
SHA256_MODULES = {"mpt._sha256.binding", "mpt.merkle", "mpt.iavl.node", "mpt.iavl.tree", "mpt.ics23.wire"}

extra_compile_args = ["-O3", "-fno-strict-aliasing"]
define_macros = []
if DEBUG:
    extra_compile_args = ["-O0", "-g"]
    define_macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]

# The hasher spreads a level's keccaks over threads with OpenMP, mpt.merkle a root's chunks of leaves.
OPENMP_MODULES = {"mpt.hasher", "mpt.merkle"}

extensions = [
    Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"],
        include_dirs=KECCAK_INCLUDE + SHA256_INCLUDE,
        libraries=(["mpt_keccak"] if needs_keccak else []) + (["mpt_sha256"] if name in SHA256_MODULES else []),
        extra_compile_args=extra_compile_args + (["-fopenmp"] if name in OPENMP_MODULES else []),
        extra_link_args=["-fopenmp"] if name in OPENMP_MODULES else [],
        define_macros=define_macros,
    )
    for name, needs_keccak in MODULES.items()
]

# keccak.c is compiled once (build_clib) instead of once per extension.
keccak_library = ("mpt_keccak", {"sources": KECCAK_SOURCES, "include_dirs": KECCAK_INCLUDE,
                                 "cflags": extra_compile_args + ["-fPIC"]})
sha256_library = ("mpt_sha256", {"sources": SHA256_SOURCES, "include_dirs": SHA256_INCLUDE,
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

    def build_extensions(self):
        # An interpreter built with a shared libpython (pyenv's) links with `-Wl,-rpath,<its lib dir>`; extension
        # modules need no libpython on Linux, so the flag would only record the build machine's path in every
        # module of a wheel (auditwheel repair leaves it where it grafts nothing).
        libdir = sysconfig.get_config_var("LIBDIR")
        if libdir and isinstance(self.compiler.linker_so, list):
            self.compiler.linker_so = [arg for arg in self.compiler.linker_so if arg != "-Wl,-rpath," + libdir]
        super().build_extensions()


class SourcesOnlyEggInfo(egg_info):
    """egg_info's file list (SOURCES.txt, which the sdist and the wheel's package data follow) without Cython's
    output.

    cythonize() above has replaced each extension's .pyx by the .c it generates, setuptools lists an extension's
    sources, and it keeps listing every file an earlier SOURCES.txt named: drop each .c that has a .pyx beside it,
    so that an sdist ships the .pyx (MANIFEST.in) and builds with the Cython of the machine it lands on.
    Hand-written C never sits beside a .pyx of its name, which Cython would overwrite (mpt/_keccak/binding.pyx).
    """

    def find_sources(self):
        super().find_sources()
        generated = {path for path in self.filelist.files
                     if path.endswith(".c") and os.path.exists(path[:-len(".c")] + ".pyx")}
        if generated:
            self.filelist.files = [path for path in self.filelist.files if path not in generated]
            sources_txt = manifest_maker(self.distribution)
            sources_txt.manifest = os.path.join(self.egg_info, "SOURCES.txt")
            sources_txt.filelist = self.filelist
            sources_txt.write_manifest()

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
    sha256_library[1]["cflags"] = sha256_library[1]["cflags"] + sanitize_args
    directives.update(boundscheck=False, wraparound=False, initializedcheck=False, linetrace=False)

setup(
    libraries=[keccak_library, sha256_library],
    ext_modules=cythonize(extensions, compiler_directives=directives, annotate=False),
    cmdclass={"build_ext": ParallelBuildExt, "egg_info": SourcesOnlyEggInfo},
)
