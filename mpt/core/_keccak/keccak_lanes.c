/*
 * Keccak-256 of many independent messages at once (a trie level's node
 * encodings), on SIMD lanes where the CPU has them.
 *
 * Backends:
 *   scalar  one message after another with the portable permutation;
 *   avx2    4 lanes: each uint64_t of a 256-bit vector is a lane of another
 *           message's state;
 *   avx512  8 lanes in 512-bit vectors (rotations become one vprolq);
 *   avx2x8  the 8-lane code compiled for AVX2 (each 512-bit operation split
 *           in two).  It exists so the 8-lane scheduling is tested on
 *           machines without AVX-512; it is never chosen automatically.
 *
 * All of them use the same round (keccak_internal.h) and the same scheduling
 * template (keccak_lanes_template.inc); only the vector width and the
 * instruction set the compiler may use differ.  The SIMD backends exist only
 * when compiling with GCC or clang for x86-64; elsewhere everything runs on
 * the scalar backend.  The choice is the caller's (mpt/hasher.pyx picks the
 * widest one the CPU supports, or the one MPT_KECCAK_BACKEND names).
 */
#include "keccak.h"
#include "keccak_internal.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define MPT_KECCAK_HAVE_X86_SIMD 1
#endif

#ifdef MPT_KECCAK_HAVE_X86_SIMD

/* What an idle lane absorbs. */
static const uint8_t keccak_zero_block[MPT_KECCAK_RATE];

typedef uint64_t mpt_u64x4 __attribute__((vector_size(32)));
typedef uint64_t mpt_u64x8 __attribute__((vector_size(64)));

/* Everything in these regions may use the named instruction set; it is only
 * called after the CPU was checked for it. */
#pragma GCC push_options
#pragma GCC target("avx2")
#define KECCAK_LANES 4
#define KECCAK_VEC_T mpt_u64x4
#define KECCAK_PERMUTE_LANES keccak_f1600_avx2
#define KECCAK_MANY keccak256_many_avx2
#define KECCAK_SCALAR_TAIL 1
#include "keccak_lanes_template.inc"

#define KECCAK_LANES 8
#define KECCAK_VEC_T mpt_u64x8
#define KECCAK_PERMUTE_LANES keccak_f1600_avx2x8
#define KECCAK_MANY keccak256_many_avx2x8
#define KECCAK_SCALAR_TAIL 2
#include "keccak_lanes_template.inc"
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
#define KECCAK_LANES 8
#define KECCAK_VEC_T mpt_u64x8
#define KECCAK_PERMUTE_LANES keccak_f1600_avx512
#define KECCAK_MANY keccak256_many_avx512
/* One 8-lane AVX-512 step (absorb and permutation) costs about 1.1 scalar
 * permutations (AMD EPYC Zen 4: 236 ns vs 213 ns; the permutations alone
 * take the same time whatever the width, 4 or 8 lanes), so two live lanes
 * still run vector; only a last lone lane goes scalar.  A proof's 4-block
 * root next to one 2-block node: 2 vector + 2 scalar permutations instead of
 * 1 + 4. */
#define KECCAK_SCALAR_TAIL 1
#include "keccak_lanes_template.inc"
#pragma GCC pop_options

#endif /* MPT_KECCAK_HAVE_X86_SIMD */

static void keccak256_many_scalar(const uint8_t *const *data, const size_t *len,
                                  size_t n, uint8_t *out)
{
    size_t i;
    for (i = 0; i < n; i++)
        mpt_keccak256(data[i], len[i], out + 32 * i);
}

static const char *const backend_names[MPT_KECCAK_BACKENDS] = {
    "scalar", "avx2", "avx512", "avx2x8",
};

static const int backend_lanes[MPT_KECCAK_BACKENDS] = {1, 4, 8, 8};

const char *mpt_keccak_backend_name(int backend)
{
    if (backend < 0 || backend >= MPT_KECCAK_BACKENDS)
        return NULL;
    return backend_names[backend];
}

int mpt_keccak_backend_lanes(int backend)
{
    if (backend < 0 || backend >= MPT_KECCAK_BACKENDS)
        return 0;
    return backend_lanes[backend];
}

int mpt_keccak_backend_supported(int backend)
{
    switch (backend) {
    case MPT_KECCAK_SCALAR:
        return 1;
#ifdef MPT_KECCAK_HAVE_X86_SIMD
    case MPT_KECCAK_AVX2:
    case MPT_KECCAK_AVX2_X8:
        return __builtin_cpu_supports("avx2") ? 1 : 0;
    case MPT_KECCAK_AVX512:
        return __builtin_cpu_supports("avx512f") ? 1 : 0;
#endif
    default:
        return 0;
    }
}

int mpt_keccak_best_backend(void)
{
    if (mpt_keccak_backend_supported(MPT_KECCAK_AVX512))
        return MPT_KECCAK_AVX512;
    if (mpt_keccak_backend_supported(MPT_KECCAK_AVX2))
        return MPT_KECCAK_AVX2;
    return MPT_KECCAK_SCALAR;
}

void mpt_keccak256_many(int backend, const uint8_t *const *data,
                        const size_t *len, size_t n, uint8_t *out)
{
    /* An unsupported backend (never reached through mpt's callers, which
     * check first) degrades to scalar instead of faulting on an illegal
     * instruction. */
    if (n < 2 || !mpt_keccak_backend_supported(backend))
        backend = MPT_KECCAK_SCALAR;
    switch (backend) {
#ifdef MPT_KECCAK_HAVE_X86_SIMD
    case MPT_KECCAK_AVX2:
        keccak256_many_avx2(data, len, n, out);
        return;
    case MPT_KECCAK_AVX2_X8:
        keccak256_many_avx2x8(data, len, n, out);
        return;
    case MPT_KECCAK_AVX512:
        keccak256_many_avx512(data, len, n, out);
        return;
#endif
    default:
        keccak256_many_scalar(data, len, n, out);
    }
}
