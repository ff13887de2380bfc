# C SHA-256 (sha256.h). Linked into a module through the "mpt_sha256" library of setup.py (SHA256_MODULES).

cdef extern from "sha256.h" nogil:
    ctypedef struct mpt_sha256_ctx:
        pass

    # Stable API (mpt.merkle and the IAVL engine).
    void mpt_sha256_init(mpt_sha256_ctx* ctx) noexcept
    void mpt_sha256_update(mpt_sha256_ctx* ctx, const unsigned char* data, size_t length) noexcept
    void mpt_sha256_final(mpt_sha256_ctx* ctx, unsigned char* out) noexcept
    void mpt_sha256(const unsigned char* data, size_t length, unsigned char* out) noexcept
    const char* mpt_sha256_backend() noexcept
    int mpt_sha256_set_backend(const char* name) noexcept

    # Batch hashing for Merkle levels.
    int mpt_sha256_backend_supported(const char* name) noexcept
    void mpt_sha256_prefixed(unsigned char prefix, const unsigned char* data, size_t length,
                             unsigned char* out) noexcept
    void mpt_sha256_many(unsigned char prefix, int prefix_len, const unsigned char* const* data,
                         const size_t* length, size_t n, unsigned char* out) noexcept
    void mpt_sha256_pairs(unsigned char prefix, const unsigned char* src, size_t npairs,
                          unsigned char* out) noexcept


# Every extension module that links mpt_sha256 holds its own copy of the library (it is static), hence its own
# backend choice. Each such module calls share_sha256_backend() once at import: the binding then applies the
# current choice to that copy and includes it in every later set_sha256_backend(). (MPT_SHA256_BACKEND needs
# no help: every copy reads it on first use.)
from cpython.pycapsule cimport PyCapsule_New

cdef inline int share_sha256_backend() except -1:
    from mpt.core._sha256 import binding
    binding.adopt_library_copy(PyCapsule_New(<void*>mpt_sha256_set_backend, b"mpt_sha256_set_backend", NULL),
                               PyCapsule_New(<void*>mpt_sha256_backend, b"mpt_sha256_backend", NULL))
    return 0
