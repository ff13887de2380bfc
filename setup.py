"""Build the Cython extensions of mpt.

`MPT_DEBUG=1` turns on line tracing (for coverage) and keeps assertions and bounds checks on.
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("MPT_DEBUG") == "1"

KECCAK_SOURCES = ["mpt/_keccak/keccak.c"]
KECCAK_INCLUDE = ["mpt/_keccak"]

# Modules that hash need our C Keccak linked in; the rest are plain Cython.
MODULES = {
    "mpt._keccak.keccak": True,
    "mpt.rlp": False,
    "mpt.encoding": False,
    "mpt.node": True,
    "mpt.hasher": True,
    "mpt.committer": True,
    "mpt.trie": True,
    "mpt.iterator": True,
    "mpt.secure": True,
    "mpt.stacktrie": True,
    "mpt.derive": True,
    "mpt.proof": True,
}

extra_compile_args = ["-O3", "-fno-strict-aliasing"]
define_macros = []
if DEBUG:
    extra_compile_args = ["-O0", "-g"]
    define_macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")]

extensions = [
    Extension(
        name,
        sources=[name.replace(".", "/") + ".pyx"] + (KECCAK_SOURCES if needs_keccak else []),
        include_dirs=KECCAK_INCLUDE,
        extra_compile_args=extra_compile_args,
        define_macros=define_macros,
    )
    for name, needs_keccak in MODULES.items()
]

directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
    "linetrace": DEBUG,
}

setup(ext_modules=cythonize(extensions, compiler_directives=directives, annotate=False))
