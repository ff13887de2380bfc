/*
 * Keccak-256 as used by Ethereum: the original Keccak submission padding
 * (0x01 ... 0x80), not FIPS 202 SHA3-256 (0x06 ... 0x80).
 *
 * Portable C99 (SIMD backends with GCC or clang on x86-64), no dependencies,
 * no allocation, thread safe (no global state).
 */
#ifndef MPT_KECCAK_H
#define MPT_KECCAK_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Keccak-f[1600], all 24 rounds, in place.  Lane i = x + 5*y holds bytes
 * 8*i .. 8*i+7 of the state read as a little-endian integer. */
void mpt_keccak_f1600(uint64_t state[25]);

/* Keccak-256 digest of data[0..len) into out[0..32).  data may be NULL when
 * len is 0; out may alias data. */
void mpt_keccak256(const uint8_t *data, size_t len, uint8_t out[32]);

/* Multi-message hashing (keccak_lanes.c).  Backends, by number: */
enum {
    MPT_KECCAK_SCALAR = 0,   /* portable C, one message at a time */
    MPT_KECCAK_AVX2 = 1,     /* 4 messages per permutation */
    MPT_KECCAK_AVX512 = 2,   /* 8 messages per permutation */
    MPT_KECCAK_AVX2_X8 = 3,  /* the 8-lane code on AVX2 (for testing) */
    MPT_KECCAK_BACKENDS = 4
};

/* Name ("scalar", "avx2", ...) and lane count of a backend; NULL / 0 for a
 * number out of range. */
const char *mpt_keccak_backend_name(int backend);
int mpt_keccak_backend_lanes(int backend);

/* 1 when this build and this CPU can run the backend, else 0. */
int mpt_keccak_backend_supported(int backend);

/* The widest supported backend. */
int mpt_keccak_best_backend(void);

/* Keccak-256 of n messages: message i is data[i][0..len[i]), its digest goes
 * to out[32*i .. 32*i+32).  Digests do not depend on the backend; an
 * unsupported backend runs as scalar.  out must not overlap the messages. */
void mpt_keccak256_many(int backend, const uint8_t *const *data,
                        const size_t *len, size_t n, uint8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MPT_KECCAK_H */
