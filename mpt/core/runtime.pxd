# cython: language_level=3
"""Process-wide settings shared by every tree family: hashing threads, the OpenMP fork guard, the Keccak backend
(bodies and the Python API in runtime.pyx)."""

cdef enum:
    # set_hash_threads() refuses more than this: far beyond any useful count, and a typo (2**31 - 1) must not
    # size memory or start OS threads.
    MAX_HASH_THREADS = 256

# Threads a batched hashing pass may use (set_hash_threads / MPT_HASH_THREADS; 1 in a child forked after OpenMP ran).
cdef int hash_threads() noexcept nogil
# Call before entering an OpenMP parallel region: a child forked afterwards then stays on one thread.
cdef void mark_openmp_used() noexcept nogil
# The backend number (MPT_KECCAK_*) mpt_keccak256_many should use for batches of node encodings.
cdef int keccak_backend_number() noexcept nogil
# The backend number of a backend name; ValueError for an unknown or unsupported one.
cdef int keccak_backend_by_name(str name) except -1
