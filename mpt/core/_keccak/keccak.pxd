from libc.stdint cimport uint8_t, uint64_t

cdef extern from "keccak.h" nogil:
    void mpt_keccak_f1600(uint64_t* state) noexcept
    void mpt_keccak256(const uint8_t* data, size_t length, uint8_t* out) noexcept

    # Multi-message hashing on SIMD lanes (keccak_lanes.c).
    enum:
        MPT_KECCAK_SCALAR
        MPT_KECCAK_AVX2
        MPT_KECCAK_AVX512
        MPT_KECCAK_AVX2_X8
        MPT_KECCAK_BACKENDS
    const char* mpt_keccak_backend_name(int backend) noexcept
    int mpt_keccak_backend_lanes(int backend) noexcept
    int mpt_keccak_backend_supported(int backend) noexcept
    int mpt_keccak_best_backend() noexcept
    void mpt_keccak256_many(int backend, const uint8_t* const* data, const size_t* length, size_t n,
                            uint8_t* out) noexcept
