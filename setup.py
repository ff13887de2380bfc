"""Build the Cython extensions of mpt.

One table (EXTENSIONS) names every compiled module and what it links; two switches change the build:
`MPT_DEBUG=1` (line tracing for coverage, assertions and bounds checks on) and `MPT_SANITIZE` (a checked build:
`address,undefined` or any `-fsanitize=` list for every extension and C library, scripts/asan.sh and
`make asan`; `valgrind` for the release build with debug information, scripts/valgrind.sh;
docs/memory_safety.rst).

Build speed (README.md "Set-up times"): Cython runs only when something is compiled (never for an sdist), on
every core; the C compiles run on every core. The incremental rebuild is the part below from PersistentBuildClib
to ParallelBuildExt.build_extension: the objects of the C libraries, each module's Cython run and, in an
in-place or editable build, each compiled module are reused while a digest of their sources, headers and flags
is unchanged, so a second `pip install -e .` compiles nothing. Neither maintained tool covers that: setuptools
gives an editable install a new temporary build folder each time and keeps no cache of its own, and ccache
(`CC="ccache gcc"`, which works with this build and whose compiler name is part of the digest) caches C
compiles only: it would still re-run Cython on every module (an isolated pip build installs Cython afresh, so
Cython's own timestamp check sees every .pxd of its own as new) and link every module again.
"""
import glob
import hashlib
import os
import shutil
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_clib import build_clib
from setuptools.command.build_ext import build_ext
from setuptools.command.egg_info import egg_info, manifest_maker


KECCAK_SOURCES = ["mpt/core/_keccak/keccak.c", "mpt/core/_keccak/keccak_lanes.c"]
KECCAK_INCLUDE = ["mpt/core/_keccak"]

SHA256_SOURCES = ["mpt/core/_sha256/sha256.c"]
SHA256_INCLUDE = ["mpt/core/_sha256"]

# Every compiled module, with what it links beyond Python: "keccak" and "sha256" are the static libraries built
# once from our C (mpt/core/_keccak, mpt/core/_sha256); "openmp" spreads its hashing over threads (the Ethereum
# hasher a level's keccaks, the CometBFT tree a root's chunks of leaves). The source is the module's .pyx.
EXTENSIONS = {
    # the core
    "mpt.core._keccak.binding": ("keccak",),
    "mpt.core._sha256.binding": ("sha256",),
    "mpt.core.rlp": (),
    "mpt.core.bytes_like": (),
    "mpt.core.runtime": ("keccak",),
    # Ethereum
    "mpt.ethereum.encoding": (),
    "mpt.ethereum.node": (),
    "mpt.ethereum.hasher": ("keccak", "openmp"),
    "mpt.ethereum.committer": (),
    "mpt.ethereum.trie": ("keccak",),
    "mpt.ethereum.arena": ("keccak", "openmp"),
    "mpt.ethereum.iterator": (),
    "mpt.ethereum.secure": ("keccak",),
    "mpt.ethereum.stacktrie": ("keccak",),
    "mpt.ethereum.derive": ("keccak",),
    "mpt.ethereum.proof": ("keccak",),
    "mpt.ethereum.rangeproof": ("keccak",),
    "mpt.ethereum.shards.sort": (),
    "mpt.ethereum.shards.partition": (),
    "mpt.ethereum.shards.read": (),
    "mpt.ethereum.shards.build": (),
    # CometBFT
    "mpt.merkle.tree": ("sha256", "openmp"),
    "mpt.merkle.proof": ("sha256",),
    "mpt.merkle.rpc": (),
    "mpt.merkle.multistore": (),
    # the stores: their open state, which compiled readers check in C (mpt/db/state.pxd), and MemoryDB, whose bulk
    # write the trie committer calls in C (mpt/db/memory.pxd)
    "mpt.db.state": (),
    "mpt.db.memory": (),
    # IAVL
    "mpt.iavl.node": ("sha256",),
    "mpt.iavl.nodedb": (),
    "mpt.iavl.tree": ("sha256",),
    "mpt.iavl.proof": (),
    "mpt.iavl.export": (),
    # ICS23
    "mpt.ics23.wire": ("sha256",),
    "mpt.ics23.verify": (),
    # execution-specs' leaf encodings and root syncs (mpt.compat.execution_specs; the spec itself is an extra)
    "mpt.compat.execution_specs._fast": ("keccak",),
    # py-trie's HexaryTrie algorithm, compiled (mpt.compat.pytrie; py-trie itself is an extra)
    "mpt.compat.pytrie._core": ("keccak",),
    # the benchmarks' Keccak floor
    "mpt.bench._alloc": ("keccak",),
}

# Modules that were compiled once and are plain Python, a package, or gone now: an in-place or editable build
# deletes their old compiled file (and the .c Cython left), which Python would otherwise import instead. Most are
# the old paths of modules that moved into mpt/core and mpt/ethereum (issue 31; mpt/_deprecation.py serves them).
RETIRED_MODULES = ["mpt.parallel", "mpt.rlp", "mpt.encoding", "mpt.node", "mpt.runtime", "mpt.hasher", "mpt.committer",
                   "mpt.trie", "mpt.iterator", "mpt.secure", "mpt.stacktrie", "mpt.derive", "mpt.proof",
                   "mpt.rangeproof", "mpt.merkle"]

# The two build switches (everything else is the release build):
#   MPT_DEBUG=1       -O0 -g, line tracing (coverage), assertions, bounds and wraparound checks;
#   MPT_SANITIZE=...  a checked build: a -fsanitize= list (address,undefined: scripts/asan.sh) added to every
#                     compile and link, or "valgrind" (scripts/valgrind.sh): the release build with debug
#                     information, which valgrind's reports need. The scripts also set it for the test run.
DEBUG = os.environ.get("MPT_DEBUG") == "1"
SANITIZE = os.environ.get("MPT_SANITIZE", "").strip()
# -O2 for the Cython modules (it compiles faster, and HashFixedSize/10K, MerkleRoot/10K and the IAVLNode codecs
# measured no slower than with -O3); the hand-written C libraries (Keccak, SHA-256) keep -O3 (HOT_C_ARGS).
# -g0 undoes the -g of CPython's own CFLAGS: debug information is a third of the compile time of the large
# generated C files and nothing a user runs reads it; the checked builds keep it.
DEBUG_INFO = ["-g"] if SANITIZE else ["-g0"]
extra_compile_args = ["-O2", "-fno-strict-aliasing"] + DEBUG_INFO
HOT_C_ARGS = ["-O3", "-fno-strict-aliasing"] + DEBUG_INFO
define_macros = []
if DEBUG:
    extra_compile_args = HOT_C_ARGS = ["-O0", "-g"]
    define_macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]

# Hand-written C headers and templates the generated C of the modules includes: a change rebuilds every module.
C_HEADERS = sorted(glob.glob("mpt/core/_keccak/*.h") + glob.glob("mpt/core/_keccak/*.inc")
                   + glob.glob("mpt/core/_sha256/*.h") + glob.glob("mpt/core/_sha256/*.inc"))

extensions = [
    Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"],
        include_dirs=KECCAK_INCLUDE + SHA256_INCLUDE,
        libraries=["mpt_" + lib for lib in ("keccak", "sha256") if lib in links],
        extra_compile_args=extra_compile_args + (["-fopenmp"] if "openmp" in links else []),
        extra_link_args=["-fopenmp"] if "openmp" in links else [],
        define_macros=define_macros,
        depends=C_HEADERS,
    )
    for name, links in EXTENSIONS.items()
]

# keccak.c is compiled once (build_clib) instead of once per extension.
# obj_deps: setuptools' build_clib recompiles an object only when its source or one of these is newer.
keccak_library = ("mpt_keccak", {"sources": KECCAK_SOURCES, "include_dirs": KECCAK_INCLUDE,
                                 "obj_deps": {"": C_HEADERS}, "cflags": HOT_C_ARGS + ["-fPIC"]})
sha256_library = ("mpt_sha256", {"sources": SHA256_SOURCES, "include_dirs": SHA256_INCLUDE,
                                 "obj_deps": {"": C_HEADERS}, "cflags": HOT_C_ARGS + ["-fPIC"]})


def _build_fingerprint(*parts):
    """What besides the sources decides a compiled file: flags, compiler, interpreter (a changed one rebuilds)."""
    text = repr((parts, os.environ.get("CC"), os.environ.get("CFLAGS"), os.environ.get("LDFLAGS"), SANITIZE,
                 sys.version, sysconfig.get_platform()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# Where reusable build products live between builds (git-ignored): setuptools gives editable installs a new
# temporary build folder every time, which would recompile everything.
PERSISTENT_BUILD = os.path.join("build", "reuse-" + sys.implementation.cache_tag)


class PersistentBuildClib(build_clib):
    """The C libraries' objects in a persistent folder named by their flags: compiled again only when a source,
    a header or a flag changes (an editable install's own build folder is a new temporary one each time)."""

    def finalize_options(self):
        super().finalize_options()
        folder = os.path.join(PERSISTENT_BUILD, "clib-" + _build_fingerprint(self.distribution.libraries))
        self.build_temp = self.build_clib = folder


def _digest(paths, *extra):
    """A digest of the files' contents (not their times: pip's isolated build installs Cython afresh each time,
    so every .pxd of Cython's own looks new) and of extra."""
    h = hashlib.sha256(repr(extra).encode())
    for path in paths:
        h.update(path.encode() + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class ParallelBuildExt(build_ext):
    """Cython and the C compiler on every core, and nothing done again that is up to date.

    Cython runs here rather than when setup.py is imported, so an sdist (which ships the .pyx) or egg_info never
    runs it. A module's Cython run is skipped while its .pyx, every .pxd/.pxi and C header of the package, the
    Cython version and the directives are unchanged (a content digest in PERSISTENT_BUILD); in an in-place or
    editable build, its compile is skipped while its generated C, the headers, the C libraries and the flags are
    unchanged and the in-place module is there: the in-place module is reused.
    """

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1

    def run(self):
        self._cythonize()
        # `build_ext --inplace` and editable installs skip the `build` command that would run build_clib.
        self.run_command("build_clib")
        self._libraries = [os.path.join(self.get_finalized_command("build_clib").build_clib, "lib%s.a" % name)
                           for name, _ in self.distribution.libraries]
        # distutils skips an extension none of whose sources and depends is newer than the module (silently: the
        # message is at debug level); the C libraries are neither, so a changed library would leave every module
        # linked against the old one. They are dependencies.
        for ext in self.extensions:
            ext.depends = list(ext.depends) + [lib for lib in self._libraries if lib not in ext.depends]
        self._reuse = self.inplace or getattr(self, "editable_mode", False)
        if self._reuse:
            self._remove_retired()
        super().run()

    def _remove_retired(self):
        for name in RETIRED_MODULES:
            stem = name.replace(".", "/")
            if not os.path.exists(stem + ".pyx"):
                for path in glob.glob(stem + ".*.so") + glob.glob(stem + ".*.pyd") + [stem + ".c"]:
                    if os.path.exists(path):
                        os.remove(path)
                        sys.stdout.write("removing %s (%s is plain Python now)\n" % (path, name))

    def _cythonize(self):
        import Cython
        from Cython.Build import cythonize

        interfaces = sorted(glob.glob("mpt/**/*.pxd", recursive=True) + glob.glob("mpt/**/*.pxi", recursive=True))
        stale, stamps = [], {}
        for ext in self.extensions:
            pyx = [s for s in ext.sources if s.endswith(".pyx")]
            if not pyx:
                continue
            stamps[ext.name] = _digest(pyx + interfaces + C_HEADERS, Cython.__version__, directives)
            c_file = pyx[0][:-len(".pyx")] + ".c"
            if self.force or not os.path.exists(c_file) or _read(self._stamp("cython", ext)) != stamps[ext.name]:
                stale.append(ext)
            ext.sources = [c_file if s == pyx[0] else s for s in ext.sources]
        if stale:
            # cythonize also skips a module whose .c is newer than everything it cimports or includes. The
            # extensions keep their identity (setuptools has annotated them): only their sources change.
            cythonize([Extension(e.name, [e.name.replace(".", "/") + ".pyx"]) for e in stale],
                      compiler_directives=directives, nthreads=self.parallel, force=self.force)
        for ext in stale:
            _write(self._stamp("cython", ext), stamps[ext.name])

    def build_extensions(self):
        # An interpreter built with a shared libpython (pyenv's) links with `-Wl,-rpath,<its lib dir>`; extension
        # modules need no libpython on Linux, so the flag would only record the build machine's path in every
        # module of a wheel (auditwheel repair leaves it where it grafts nothing).
        libdir = sysconfig.get_config_var("LIBDIR")
        if libdir and isinstance(self.compiler.linker_so, list):
            self.compiler.linker_so = [arg for arg in self.compiler.linker_so if arg != "-Wl,-rpath," + libdir]
        super().build_extensions()

    # --- reuse of an in-place build ---

    def _inplace_file(self, ext):
        package = ext.name.split(".")[:-1]
        return os.path.join(*package, os.path.basename(self.get_ext_filename(ext.name)))

    def _stamp(self, kind, ext):
        return os.path.join(PERSISTENT_BUILD, kind, ext.name)

    def _module_digest(self, ext):
        flags = _build_fingerprint(ext.extra_compile_args, ext.extra_link_args, ext.define_macros, ext.libraries,
                                   self.compiler.compiler_so, self.compiler.linker_so)
        return _digest(list(ext.sources) + list(ext.depends) + self._libraries, flags)

    def build_extension(self, ext):
        inplace = self._inplace_file(ext)
        if (self._reuse and not self.force and os.path.exists(inplace)
                and _read(self._stamp("modules", ext)) == self._module_digest(ext)):
            target = self.get_ext_fullpath(ext.name)
            if os.path.abspath(target) != os.path.abspath(inplace):
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(inplace, target)
            sys.stdout.write("reusing %s (its C, headers, libraries and flags are unchanged)\n" % inplace)
            return
        super().build_extension(ext)

    def copy_extensions_to_source(self):
        super().copy_extensions_to_source()
        for ext in self.extensions:
            _write(self._stamp("modules", ext), self._module_digest(ext))


class SourcesOnlyEggInfo(egg_info):
    """egg_info's file list (SOURCES.txt, which the sdist and the wheel's package data follow) without Cython's
    output.

    A build_ext run replaces each extension's .pyx by the .c Cython generates, setuptools lists an extension's
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
if SANITIZE and SANITIZE != "valgrind":
    sanitize_args = ["-fsanitize=" + SANITIZE, "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-fno-wrapv",
                     "-g"]
    for extension in extensions:
        extension.extra_compile_args = extension.extra_compile_args + sanitize_args
        extension.extra_link_args = extension.extra_link_args + sanitize_args
        extension.define_macros = [m for m in extension.define_macros if not m[0].startswith("CYTHON_TRACE")]
    keccak_library[1]["cflags"] = keccak_library[1]["cflags"] + sanitize_args
    sha256_library[1]["cflags"] = sha256_library[1]["cflags"] + sanitize_args
    directives.update(boundscheck=False, wraparound=False, initializedcheck=False, linetrace=False)

setup(
    libraries=[keccak_library, sha256_library],
    ext_modules=extensions,
    cmdclass={"build_ext": ParallelBuildExt, "build_clib": PersistentBuildClib, "egg_info": SourcesOnlyEggInfo},
)
