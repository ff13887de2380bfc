/*
 * Keccak-256 as used by Ethereum: the original Keccak submission padding
 * (0x01 ... 0x80), not FIPS 202 SHA3-256 (0x06 ... 0x80).
 *
 * Portable C99, no dependencies, no allocation, thread safe (no global state).
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

#ifdef __cplusplus
}
#endif

#endif /* MPT_KECCAK_H */
