from libc.stdint cimport uint8_t, uint64_t

cdef extern from "keccak.h" nogil:
    void mpt_keccak_f1600(uint64_t* state) noexcept
    void mpt_keccak256(const uint8_t* data, size_t length, uint8_t* out) noexcept
