/*
 * SHA-256 (FIPS 180-4) for mpt: CometBFT / RFC 6962 Merkle trees (mpt.merkle)
 * and IAVL.
 *
 * Three compression backends behind one API:
 *   "scalar"  portable C99;
 *   "avx2"    x86 AVX2, eight messages in the eight lanes of YMM registers
 *             (batches only: mpt_sha256_many / mpt_sha256_pairs; one message
 *             at a time uses the scalar code);
 *   "avx512"  x86 AVX-512F, sixteen messages in the lanes of ZMM registers
 *             (batches; single messages use SHA-NI where the CPU has it,
 *             else the scalar code);
 *   "shani"   the x86 SHA extensions (SHA-NI).
 * The x86 ones are compiled with function-level target attributes and chosen
 * only when CPUID (and, for AVX2 and AVX-512, the OS's XCR0) reports them.
 * The backend is picked on first use: MPT_SHA256_BACKEND=scalar|avx2|avx512|
 * shani|auto (environment) forces one, otherwise the fastest the CPU supports:
 * SHA-NI or AVX-512, where a CPU has both, by timing a Merkle level of each
 * (about 0.2 ms, once).  A forced
 * backend the CPU cannot run is ignored (auto choice).  Digests never depend
 * on the backend.
 *
 * No allocation.  The hashing functions are thread safe (no shared state
 * besides the backend choice, which is one int).
 */
#ifndef MPT_SHA256_H
#define MPT_SHA256_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Stable API (also used by the IAVL engine: do not change) ---------- */

typedef struct {
    uint32_t state[8];
    uint64_t bitlen;          /* bits compressed so far (whole blocks) */
    unsigned char buf[64];    /* pending bytes of the current block */
    size_t buflen;
} mpt_sha256_ctx;

void mpt_sha256_init(mpt_sha256_ctx *ctx);
/* data may be NULL when len is 0. */
void mpt_sha256_update(mpt_sha256_ctx *ctx, const unsigned char *data, size_t len);
/* Writes the digest and leaves ctx unusable until mpt_sha256_init. */
void mpt_sha256_final(mpt_sha256_ctx *ctx, unsigned char out[32]);
/* One shot.  out may alias data. */
void mpt_sha256(const unsigned char *data, size_t len, unsigned char out[32]);

/* Name of the backend in use ("scalar", "avx2", "avx512" or "shani"). */
const char *mpt_sha256_backend(void);
/* Use the named backend ("scalar", "avx2", "avx512", "shani", or "auto": the fastest this
 * CPU supports).  Returns 0, or -1 (backend unchanged) when the name is
 * unknown or the CPU / build cannot run it. */
int mpt_sha256_set_backend(const char *name);

/* ---- Additions (batch hashing for Merkle levels) ----------------------- */

/* 1 when this build and CPU can run the named backend ("auto" included). */
int mpt_sha256_backend_supported(const char *name);

/* sha256(prefix || data[0..len)), one shot, one message. */
void mpt_sha256_prefixed(unsigned char prefix, const unsigned char *data,
                         size_t len, unsigned char out[32]);

/* sha256(prefix || data[i][0..len[i])) into out[32*i .. 32*i+32) for i < n.
 * With prefix_len 0 the prefix byte is ignored (plain SHA-256 of each
 * message).  The SHA-NI backend hashes two messages at a time (their blocks
 * interleaved, which hides the latency of the SHA rounds), AVX2 eight.  out
 * must not overlap any message. */
void mpt_sha256_many(unsigned char prefix, int prefix_len,
                     const unsigned char *const *data, const size_t *len,
                     size_t n, unsigned char *out);

/* sha256(prefix || in[64*i .. 64*i+64)) into out[32*i .. 32*i+32) for
 * i < npairs: one level of a binary Merkle tree of 32-byte hashes (RFC 6962
 * inner nodes use prefix 0x01); four pairs at a time on SHA-NI, eight on
 * AVX2.  out may equal in (the level is reduced in
 * place); otherwise they must not overlap. */
void mpt_sha256_pairs(unsigned char prefix, const unsigned char *in,
                      size_t npairs, unsigned char *out);

#ifdef __cplusplus
}
#endif

#endif /* MPT_SHA256_H */
