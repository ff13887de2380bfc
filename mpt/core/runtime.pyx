# cython: language_level=3
"""Process-wide settings every tree family shares: hashing threads, the OpenMP fork guard, the hash backends.

- Hashing threads (:func:`set_hash_threads`, ``MPT_HASH_THREADS``; default 1): the Ethereum hasher spreads each
  level's Keccak over them, :mod:`mpt.merkle` a large root's chunks of leaves. Both use OpenMP.
- The fork guard: libgomp's thread pool does not survive ``fork()``, so a child forked after a parallel region
  ran hashes on its calling thread only (docs/threads.rst).
- The Keccak backend of batched hashing (:func:`set_keccak_backend`, ``MPT_KECCAK_BACKEND``) and the SHA-256
  backend (:func:`set_sha256_backend`, ``MPT_SHA256_BACKEND``; kept by :mod:`mpt._sha256`, re-exported here).

An environment variable never fails the import: a value that cannot be used warns (RuntimeWarning), saying what
is used instead.
"""
import os
import re
import warnings

from mpt.core._keccak.keccak cimport (
    MPT_KECCAK_BACKENDS,
    mpt_keccak_backend_name,
    mpt_keccak_backend_supported,
    mpt_keccak_best_backend,
)
from mpt.core._sha256 import set_sha256_backend, sha256_backend, sha256_backends
from mpt.core._sha256.binding import BACKENDS

__all__ = ["get_hash_threads", "set_hash_threads", "keccak_backends", "keccak_backend", "set_keccak_backend",
           "sha256_backends", "sha256_backend", "set_sha256_backend"]

cdef enum:
    # How many cores MPT_HASH_THREADS=0 ("every core") takes at most.
    AUTO_THREADS_CAP = 8


# ---------------------------------------------------------------------------------------------------------------
# Hashing threads, and the fork guard
# ---------------------------------------------------------------------------------------------------------------

def _env_warning(str name, str value, str problem, str used):
    warnings.warn(f"{name}={value!r} {problem}; using {used}", RuntimeWarning, stacklevel=3)


cdef int _threads_from_env():
    """MPT_HASH_THREADS: a whole number, 0 = every core up to 8. Unset or empty: 1."""
    value = os.environ.get("MPT_HASH_THREADS", "")
    text = value.strip()
    if not text:
        return 1
    if re.fullmatch(r"[0-9]+", text) is None:
        problem = "is negative" if re.fullmatch(r"-[0-9]+", text) else "is not a whole number"
        _env_warning("MPT_HASH_THREADS", value, problem + " (0 means every core, up to 8)", "1 hashing thread")
        return 1
    n = int(text)
    if n > MAX_HASH_THREADS:
        _env_warning("MPT_HASH_THREADS", value, f"is above {MAX_HASH_THREADS}", f"{MAX_HASH_THREADS} hashing threads")
        return MAX_HASH_THREADS
    return <int>n if n > 0 else min(os.cpu_count() or 1, AUTO_THREADS_CAP)


cdef int _HASH_THREADS = _threads_from_env()
cdef bint _OPENMP_USED = False           # a parallel region ran in this process (see _after_fork_in_child)
cdef bint _FORKED_AFTER_OPENMP = False    # this process was forked after one did


cdef int hash_threads() noexcept nogil:
    return _HASH_THREADS


def get_hash_threads():
    """Threads the batched hashers spread their work over (1: the calling thread only)."""
    return _HASH_THREADS


def set_hash_threads(int n):
    """Set the number of hashing threads of every tree family (1 = always hash on the calling thread; 0 or less
    also means 1). Returns the old value. ValueError above 256.

    In a child process forked after OpenMP threads ran in its parent, the count stays 1 (with a RuntimeWarning
    when more is asked): libgomp's thread pool does not survive fork(), and a parallel region there never
    returns (docs/threads.rst)."""
    global _HASH_THREADS
    if n > MAX_HASH_THREADS:
        raise ValueError(f"set_hash_threads({n}): at most {MAX_HASH_THREADS} hashing threads")
    old = _HASH_THREADS
    if n > 1 and _FORKED_AFTER_OPENMP:
        warnings.warn("set_hash_threads(): this process was forked after OpenMP threads ran in its parent; "
                      "hashing stays on the calling thread (libgomp cannot run threads after fork())",
                      RuntimeWarning, stacklevel=2)
        n = 1
    _HASH_THREADS = n if n > 0 else 1
    return old


# OpenMP threads and fork(). libgomp keeps its worker threads in a pool; fork() copies the pool's bookkeeping but
# not the threads, so the child's next parallel region waits forever for workers that do not exist. Once any
# region ran here (mark_openmp_used: the batched hasher, merkle roots), a forked child hashes on its calling
# thread only; a count of 1 never enters a parallel region (_hash_tree, mpt_keccak_many_threads, merkle's fold).
cdef void mark_openmp_used() noexcept nogil:
    global _OPENMP_USED
    _OPENMP_USED = True


def _after_fork_in_child():
    global _HASH_THREADS, _FORKED_AFTER_OPENMP
    if _OPENMP_USED:
        _FORKED_AFTER_OPENMP = True
        _HASH_THREADS = 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------------------------------------------------------
# The Keccak backend of batched hashing
# ---------------------------------------------------------------------------------------------------------------

def keccak_backends():
    """Names of the Keccak backends this build and CPU can run, narrowest first ("scalar", "avx2", ...)."""
    cdef int b
    return [mpt_keccak_backend_name(b).decode() for b in range(MPT_KECCAK_BACKENDS) if mpt_keccak_backend_supported(b)]


cdef int keccak_backend_by_name(str name) except -1:
    cdef int b
    for b in range(MPT_KECCAK_BACKENDS):
        if mpt_keccak_backend_name(b).decode() == name:
            if not mpt_keccak_backend_supported(b):
                raise ValueError(f"Keccak backend {name!r} is not supported by this CPU or build "
                                 f"(available: {', '.join(keccak_backends())})")
            return b
    raise ValueError(f"unknown Keccak backend {name!r} (known: "
                     f"{', '.join(mpt_keccak_backend_name(b).decode() for b in range(MPT_KECCAK_BACKENDS))})")


cdef int _keccak_backend_from_env() except -1:
    """MPT_KECCAK_BACKEND forces a backend; unset, the widest the CPU supports. A name this machine cannot run
    warns and falls back to the automatic choice rather than failing the import."""
    value = os.environ.get("MPT_KECCAK_BACKEND", "")
    name = value.strip().lower()
    best = mpt_keccak_best_backend()
    if name and name != "auto":
        try:
            return keccak_backend_by_name(name)
        except ValueError as e:
            warnings.warn(f"MPT_KECCAK_BACKEND ignored: {e}; using {mpt_keccak_backend_name(best).decode()}",
                          RuntimeWarning, stacklevel=2)
    return best


cdef int _KECCAK_BACKEND = _keccak_backend_from_env()


cdef int keccak_backend_number() noexcept nogil:
    return _KECCAK_BACKEND


def keccak_backend():
    """Name of the Keccak backend the batched hasher uses for node encodings."""
    return mpt_keccak_backend_name(_KECCAK_BACKEND).decode()


def set_keccak_backend(str name not None):
    """Use the named backend ("scalar", "avx2", "avx512", "avx2x8", or "auto" for the widest supported one)
    for batched hashing. Returns the previous name. Every backend gives the same hashes."""
    global _KECCAK_BACKEND
    old = keccak_backend()
    _KECCAK_BACKEND = mpt_keccak_best_backend() if name == "auto" else keccak_backend_by_name(name)
    return old


# ---------------------------------------------------------------------------------------------------------------
# The SHA-256 backend: sha256.c reads MPT_SHA256_BACKEND itself (plain C callers honour it too) and quietly takes
# the fastest backend for a name it cannot use; say so here.
# ---------------------------------------------------------------------------------------------------------------

def _check_sha256_env():
    value = os.environ.get("MPT_SHA256_BACKEND")
    if not value or value == "auto":
        return
    if value in sha256_backends():
        return
    problem = ("is not supported by this CPU or build" if value in BACKENDS
               else f"is not a SHA-256 backend (known: auto, {', '.join(BACKENDS)})")
    warnings.warn(f"MPT_SHA256_BACKEND ignored: {value!r} {problem}; using {sha256_backend()}", RuntimeWarning,
                  stacklevel=2)


_check_sha256_env()
