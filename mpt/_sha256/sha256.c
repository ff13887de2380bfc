/*
 * SHA-256 (FIPS 180-4): a portable compression function and one on the x86
 * SHA extensions, chosen at run time (sha256.h).
 *
 * Every message, streamed or one shot, is seen as a sequence of 64-byte
 * blocks: optional one-byte prefix (the RFC 6962 domain separator), the data,
 * then the padding.  Blocks that lie wholly inside the data are compressed
 * straight from the caller's memory; only the first block of a prefixed
 * message and the last one or two blocks are assembled in a 64-byte buffer
 * (struct sha_msg below).  That is what lets a Merkle leaf 0x00 || leaf be
 * hashed without copying the leaf.
 *
 * The SHA-NI code keeps the state in the (ABEF, CDGH) register layout that
 * SHA256RNDS2 wants for the whole message and converts only at the ends.
 * SHA256RNDS2 has a latency of several cycles and each pair of rounds depends
 * on the previous one, so a single message leaves the unit mostly idle; the
 * batch entry points therefore hash two independent messages at once, their
 * rounds interleaved instruction by instruction (sha256_x2 below).
 */
#include "sha256.h"

#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MPT_SHA256_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

enum { BACKEND_UNSET = -1, BACKEND_SCALAR = 0, BACKEND_SHANI = 1 };

static const uint32_t sha256_k[64] __attribute__((aligned(16))) = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t sha256_iv[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static inline uint32_t load32_be(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void store32_be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static inline void store64_be(unsigned char *p, uint64_t v)
{
    store32_be(p, (uint32_t)(v >> 32));
    store32_be(p + 4, (uint32_t)v);
}

static void state_to_digest(const uint32_t state[8], unsigned char out[32])
{
    int i;
    for (i = 0; i < 8; i++)
        store32_be(out + 4 * i, state[i]);
}

/* ---- Message as a sequence of blocks ----------------------------------- */

typedef struct {
    const unsigned char *data;
    size_t len;               /* data bytes */
    size_t prefix_len;        /* 0 or 1 */
    size_t total;             /* prefix_len + len: the message length */
    size_t nblocks;           /* blocks including the padding */
    unsigned char prefix;
    unsigned char buf[64];    /* an assembled block */
} sha_msg;

static inline void msg_init(sha_msg *m, unsigned char prefix, size_t prefix_len,
                            const unsigned char *data, size_t len)
{
    m->data = data;
    m->len = len;
    m->prefix = prefix;
    m->prefix_len = prefix_len;
    m->total = prefix_len + len;
    /* Message, the 0x80 byte and the 8-byte length, rounded up to blocks. */
    m->nblocks = (m->total + 9 + 63) / 64;
}

/* Block k (< nblocks) of the padded message: a pointer into the data when the
 * block lies inside it, else m->buf (valid until the next call on m). */
static inline const unsigned char *msg_block(sha_msg *m, size_t k)
{
    size_t start = 64 * k, pos = 0, off, n;
    unsigned char *b = m->buf;

    if (start >= m->prefix_len && start + 64 <= m->total)
        return m->data + (start - m->prefix_len);

    memset(b, 0, 64);
    if (start < m->prefix_len)        /* only block 0, prefix of one byte */
        b[pos++] = m->prefix;
    if (start + pos < m->total) {
        off = start + pos - m->prefix_len;
        n = m->len - off;
        if (n > 64 - pos)
            n = 64 - pos;
        memcpy(b + pos, m->data + off, n);
    }
    if (m->total >= start && m->total < start + 64)
        b[m->total - start] = 0x80;
    if (k == m->nblocks - 1)
        store64_be(b + 56, (uint64_t)m->total * 8);
    return b;
}

/* Blocks [first, first + count) all lie inside the data, contiguous. */
static inline void msg_direct_run(const sha_msg *m, size_t *first, size_t *count)
{
    size_t whole = m->total / 64;     /* blocks with no padding byte */
    *first = m->prefix_len ? 1 : 0;   /* a prefixed block 0 is assembled */
    *count = whole > *first ? whole - *first : 0;
}

/* ---- Portable compression --------------------------------------------- */

#define ROTR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define BSIG0(x) (ROTR32(x, 2) ^ ROTR32(x, 13) ^ ROTR32(x, 22))
#define BSIG1(x) (ROTR32(x, 6) ^ ROTR32(x, 11) ^ ROTR32(x, 25))
#define SSIG0(x) (ROTR32(x, 7) ^ ROTR32(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR32(x, 17) ^ ROTR32(x, 19) ^ ((x) >> 10))
#define CH(x, y, z) (((x) & ((y) ^ (z))) ^ (z))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))

static void scalar_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks)
{
    uint32_t w[64];
    uint32_t a, b, c, d, e, f, g, h, t1, t2;
    int i;

    while (nblocks--) {
        for (i = 0; i < 16; i++)
            w[i] = load32_be(p + 4 * i);
        for (i = 16; i < 64; i++)
            w[i] = SSIG1(w[i - 2]) + w[i - 7] + SSIG0(w[i - 15]) + w[i - 16];
        a = state[0]; b = state[1]; c = state[2]; d = state[3];
        e = state[4]; f = state[5]; g = state[6]; h = state[7];
        for (i = 0; i < 64; i++) {
            t1 = h + BSIG1(e) + CH(e, f, g) + sha256_k[i] + w[i];
            t2 = BSIG0(a) + MAJ(a, b, c);
            h = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
        p += 64;
    }
}

static void scalar_hash(sha_msg *m, unsigned char out[32])
{
    uint32_t state[8];
    size_t k, first, count;

    memcpy(state, sha256_iv, sizeof(state));
    msg_direct_run(m, &first, &count);
    for (k = 0; k < first; k++)
        scalar_blocks(state, msg_block(m, k), 1);
    if (count)
        scalar_blocks(state, msg_block(m, first), count);
    for (k = first + count; k < m->nblocks; k++)
        scalar_blocks(state, msg_block(m, k), 1);
    state_to_digest(state, out);
}

/* ---- SHA-NI compression ----------------------------------------------- */

#ifdef MPT_SHA256_HAVE_SHANI

#define SHANI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* Four rounds with schedule quad M (message words 4q .. 4q+3). */
#define SHANI_4ROUNDS(ABEF, CDGH, M, q)                                                   \
    do {                                                                                \
        __m128i wk_ = _mm_add_epi32((M), _mm_load_si128((const __m128i *)&sha256_k[4 * (q)])); \
        (CDGH) = _mm_sha256rnds2_epu32((CDGH), (ABEF), wk_);                             \
        wk_ = _mm_shuffle_epi32(wk_, 0x0E);                                             \
        (ABEF) = _mm_sha256rnds2_epu32((ABEF), (CDGH), wk_);                             \
    } while (0)

/* Next schedule quad, replacing the oldest: W[q] from W[q-4], W[q-3], W[q-2],
 * W[q-1] held in Q0, Q1, Q2, Q3.  (After the two rnds2 above, ABEF and CDGH
 * have swapped roles back, so the macro arguments never change.) */
#define SHANI_SCHED(Q0, Q1, Q2, Q3)                                                     \
    (Q0) = _mm_sha256msg2_epu32(                                                         \
        _mm_add_epi32(_mm_sha256msg1_epu32((Q0), (Q1)), _mm_alignr_epi8((Q3), (Q2), 4)), (Q3))

#define SHANI_LOAD(p, i, mask) _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)((p) + 16 * (i))), (mask))

SHANI_TARGET static inline void shani_from_state(const uint32_t s[8], __m128i *abef, __m128i *cdgh)
{
    __m128i dcba = _mm_loadu_si128((const __m128i *)&s[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&s[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    *abef = _mm_alignr_epi8(cdab, efgh, 8);
    *cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
}

SHANI_TARGET static inline void shani_to_state(__m128i abef, __m128i cdgh, uint32_t s[8])
{
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&s[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&s[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* One block into (abef, cdgh). */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_block(__m128i *abef, __m128i *cdgh, const unsigned char *p)
{
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i s0 = *abef, s1 = *cdgh;
    __m128i m0, m1, m2, m3;
    int q;

    m0 = SHANI_LOAD(p, 0, mask);
    m1 = SHANI_LOAD(p, 1, mask);
    m2 = SHANI_LOAD(p, 2, mask);
    m3 = SHANI_LOAD(p, 3, mask);
    SHANI_4ROUNDS(s0, s1, m0, 0);
    SHANI_4ROUNDS(s0, s1, m1, 1);
    SHANI_4ROUNDS(s0, s1, m2, 2);
    SHANI_4ROUNDS(s0, s1, m3, 3);
    for (q = 4; q < 16; q += 4) {
        SHANI_SCHED(m0, m1, m2, m3);
        SHANI_4ROUNDS(s0, s1, m0, q);
        SHANI_SCHED(m1, m2, m3, m0);
        SHANI_4ROUNDS(s0, s1, m1, q + 1);
        SHANI_SCHED(m2, m3, m0, m1);
        SHANI_4ROUNDS(s0, s1, m2, q + 2);
        SHANI_SCHED(m3, m0, m1, m2);
        SHANI_4ROUNDS(s0, s1, m3, q + 3);
    }
    *abef = _mm_add_epi32(s0, *abef);
    *cdgh = _mm_add_epi32(s1, *cdgh);
}

/* One block of each of two independent messages, rounds interleaved. */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_block_x2(__m128i *abef_a, __m128i *cdgh_a, const unsigned char *pa,
               __m128i *abef_b, __m128i *cdgh_b, const unsigned char *pb)
{
    const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i sa0 = *abef_a, sa1 = *cdgh_a, sb0 = *abef_b, sb1 = *cdgh_b;
    __m128i a0, a1, a2, a3, b0, b1, b2, b3;
    int q;

    a0 = SHANI_LOAD(pa, 0, mask); b0 = SHANI_LOAD(pb, 0, mask);
    a1 = SHANI_LOAD(pa, 1, mask); b1 = SHANI_LOAD(pb, 1, mask);
    a2 = SHANI_LOAD(pa, 2, mask); b2 = SHANI_LOAD(pb, 2, mask);
    a3 = SHANI_LOAD(pa, 3, mask); b3 = SHANI_LOAD(pb, 3, mask);
    SHANI_4ROUNDS(sa0, sa1, a0, 0); SHANI_4ROUNDS(sb0, sb1, b0, 0);
    SHANI_4ROUNDS(sa0, sa1, a1, 1); SHANI_4ROUNDS(sb0, sb1, b1, 1);
    SHANI_4ROUNDS(sa0, sa1, a2, 2); SHANI_4ROUNDS(sb0, sb1, b2, 2);
    SHANI_4ROUNDS(sa0, sa1, a3, 3); SHANI_4ROUNDS(sb0, sb1, b3, 3);
    for (q = 4; q < 16; q += 4) {
        SHANI_SCHED(a0, a1, a2, a3); SHANI_SCHED(b0, b1, b2, b3);
        SHANI_4ROUNDS(sa0, sa1, a0, q); SHANI_4ROUNDS(sb0, sb1, b0, q);
        SHANI_SCHED(a1, a2, a3, a0); SHANI_SCHED(b1, b2, b3, b0);
        SHANI_4ROUNDS(sa0, sa1, a1, q + 1); SHANI_4ROUNDS(sb0, sb1, b1, q + 1);
        SHANI_SCHED(a2, a3, a0, a1); SHANI_SCHED(b2, b3, b0, b1);
        SHANI_4ROUNDS(sa0, sa1, a2, q + 2); SHANI_4ROUNDS(sb0, sb1, b2, q + 2);
        SHANI_SCHED(a3, a0, a1, a2); SHANI_SCHED(b3, b0, b1, b2);
        SHANI_4ROUNDS(sa0, sa1, a3, q + 3); SHANI_4ROUNDS(sb0, sb1, b3, q + 3);
    }
    *abef_a = _mm_add_epi32(sa0, *abef_a);
    *cdgh_a = _mm_add_epi32(sa1, *cdgh_a);
    *abef_b = _mm_add_epi32(sb0, *abef_b);
    *cdgh_b = _mm_add_epi32(sb1, *cdgh_b);
}

SHANI_TARGET static void shani_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks)
{
    __m128i abef, cdgh;
    shani_from_state(state, &abef, &cdgh);
    for (; nblocks; nblocks--, p += 64)
        shani_block(&abef, &cdgh, p);
    shani_to_state(abef, cdgh, state);
}

/* The digest straight from the register layout (big-endian words A..H). */
SHANI_TARGET static inline void shani_digest(__m128i abef, __m128i cdgh, unsigned char out[32])
{
    uint32_t state[8];
    shani_to_state(abef, cdgh, state);
    state_to_digest(state, out);
}

SHANI_TARGET static void shani_hash(sha_msg *m, unsigned char out[32])
{
    __m128i abef, cdgh;
    size_t k, first, count;
    const unsigned char *p;

    shani_from_state(sha256_iv, &abef, &cdgh);
    msg_direct_run(m, &first, &count);
    for (k = 0; k < first; k++)
        shani_block(&abef, &cdgh, msg_block(m, k));
    if (count) {
        p = msg_block(m, first);      /* inside the data: a direct pointer */
        for (k = 0; k < count; k++, p += 64)
            shani_block(&abef, &cdgh, p);
    }
    for (k = first + count; k < m->nblocks; k++)
        shani_block(&abef, &cdgh, msg_block(m, k));
    shani_digest(abef, cdgh, out);
}

/* Two messages at once: their common blocks interleaved, then the rest of the
 * longer one alone.  Both digests are written after every block was read, so
 * an output may overlap an input (mpt_sha256_pairs relies on that). */
SHANI_TARGET static void shani_hash_x2(sha_msg *a, sha_msg *b, unsigned char *out_a, unsigned char *out_b)
{
    __m128i abef_a, cdgh_a, abef_b, cdgh_b;
    size_t k, common = a->nblocks < b->nblocks ? a->nblocks : b->nblocks;

    shani_from_state(sha256_iv, &abef_a, &cdgh_a);
    abef_b = abef_a;
    cdgh_b = cdgh_a;
    for (k = 0; k < common; k++)
        shani_block_x2(&abef_a, &cdgh_a, msg_block(a, k), &abef_b, &cdgh_b, msg_block(b, k));
    for (k = common; k < a->nblocks; k++)
        shani_block(&abef_a, &cdgh_a, msg_block(a, k));
    for (k = common; k < b->nblocks; k++)
        shani_block(&abef_b, &cdgh_b, msg_block(b, k));
    shani_digest(abef_a, cdgh_a, out_a);
    shani_digest(abef_b, cdgh_b, out_b);
}

static int cpu_has_shani(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ecx & bit_SSSE3) || !(ecx & bit_SSE4_1))
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return (ebx & (1u << 29)) ? 1 : 0;   /* CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29] */
}

#endif /* MPT_SHA256_HAVE_SHANI */

/* ---- Backend choice ---------------------------------------------------- */

static int backend_supported(int backend)
{
    switch (backend) {
    case BACKEND_SCALAR:
        return 1;
#ifdef MPT_SHA256_HAVE_SHANI
    case BACKEND_SHANI: {
        static int has = -1;
        if (has < 0)
            has = cpu_has_shani();
        return has;
    }
#endif
    default:
        return 0;
    }
}

static int best_backend(void)
{
    return backend_supported(BACKEND_SHANI) ? BACKEND_SHANI : BACKEND_SCALAR;
}

/* -1 unknown name, -2 "auto", else the backend number. */
static int backend_number(const char *name)
{
    if (name == NULL)
        return -1;
    if (strcmp(name, "auto") == 0 || strcmp(name, "") == 0)
        return -2;
    if (strcmp(name, "scalar") == 0)
        return BACKEND_SCALAR;
    if (strcmp(name, "shani") == 0)
        return BACKEND_SHANI;
    return -1;
}

/* Resolved on first use (so plain C callers honour the environment too).
 * Racing first calls all compute the same value. */
static int current_backend = BACKEND_UNSET;

static int backend(void)
{
    int b = current_backend;
    if (b == BACKEND_UNSET) {
        b = backend_number(getenv("MPT_SHA256_BACKEND"));
        if (b < 0 || !backend_supported(b))
            b = best_backend();
        current_backend = b;
    }
    return b;
}

const char *mpt_sha256_backend(void)
{
    return backend() == BACKEND_SHANI ? "shani" : "scalar";
}

int mpt_sha256_set_backend(const char *name)
{
    int b = backend_number(name);
    if (b == -2)
        b = best_backend();
    if (b < 0 || !backend_supported(b))
        return -1;
    current_backend = b;
    return 0;
}

int mpt_sha256_backend_supported(const char *name)
{
    int b = backend_number(name);
    if (b == -2)
        return 1;
    return b >= 0 && backend_supported(b);
}

static void compress_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks)
{
#ifdef MPT_SHA256_HAVE_SHANI
    if (backend() == BACKEND_SHANI) {
        shani_blocks(state, p, nblocks);
        return;
    }
#endif
    scalar_blocks(state, p, nblocks);
}

static void hash_msg(sha_msg *m, unsigned char out[32])
{
#ifdef MPT_SHA256_HAVE_SHANI
    if (backend() == BACKEND_SHANI) {
        shani_hash(m, out);
        return;
    }
#endif
    scalar_hash(m, out);
}

/* ---- Streaming --------------------------------------------------------- */

void mpt_sha256_init(mpt_sha256_ctx *ctx)
{
    memcpy(ctx->state, sha256_iv, sizeof(ctx->state));
    ctx->bitlen = 0;
    ctx->buflen = 0;
}

void mpt_sha256_update(mpt_sha256_ctx *ctx, const unsigned char *data, size_t len)
{
    size_t take, whole;

    if (len == 0)
        return;
    ctx->bitlen += (uint64_t)len * 8;
    if (ctx->buflen) {
        take = 64 - ctx->buflen;
        if (take > len)
            take = len;
        memcpy(ctx->buf + ctx->buflen, data, take);
        ctx->buflen += take;
        data += take;
        len -= take;
        if (ctx->buflen < 64)
            return;
        compress_blocks(ctx->state, ctx->buf, 1);
        ctx->buflen = 0;
    }
    whole = len / 64;
    if (whole) {
        compress_blocks(ctx->state, data, whole);
        data += 64 * whole;
        len -= 64 * whole;
    }
    if (len) {
        memcpy(ctx->buf, data, len);
        ctx->buflen = len;
    }
}

void mpt_sha256_final(mpt_sha256_ctx *ctx, unsigned char out[32])
{
    size_t n = ctx->buflen;

    ctx->buf[n++] = 0x80;
    if (n > 56) {
        memset(ctx->buf + n, 0, 64 - n);
        compress_blocks(ctx->state, ctx->buf, 1);
        n = 0;
    }
    memset(ctx->buf + n, 0, 56 - n);
    store64_be(ctx->buf + 56, ctx->bitlen);
    compress_blocks(ctx->state, ctx->buf, 1);
    state_to_digest(ctx->state, out);
    memset(ctx, 0, sizeof(*ctx));
}

/* ---- One shot and batches --------------------------------------------- */

void mpt_sha256(const unsigned char *data, size_t len, unsigned char out[32])
{
    sha_msg m;
    msg_init(&m, 0, 0, data, len);
    hash_msg(&m, out);
}

void mpt_sha256_prefixed(unsigned char prefix, const unsigned char *data, size_t len,
                         unsigned char out[32])
{
    sha_msg m;
    msg_init(&m, prefix, 1, data, len);
    hash_msg(&m, out);
}

void mpt_sha256_many(unsigned char prefix, int prefix_len, const unsigned char *const *data,
                     const size_t *len, size_t n, unsigned char *out)
{
    sha_msg a;
    size_t i = 0, plen = prefix_len ? 1 : 0;

#ifdef MPT_SHA256_HAVE_SHANI
    if (backend() == BACKEND_SHANI) {
        sha_msg b;
        for (; i + 1 < n; i += 2) {
            msg_init(&a, prefix, plen, data[i], len[i]);
            msg_init(&b, prefix, plen, data[i + 1], len[i + 1]);
            shani_hash_x2(&a, &b, out + 32 * i, out + 32 * (i + 1));
        }
    }
#endif
    for (; i < n; i++) {
        msg_init(&a, prefix, plen, data[i], len[i]);
        hash_msg(&a, out + 32 * i);
    }
}

void mpt_sha256_pairs(unsigned char prefix, const unsigned char *in, size_t npairs,
                      unsigned char *out)
{
    sha_msg a;
    size_t i = 0;

    /* Pair i is read before digest i is written, and digest i lands at or
     * below pair i, so reducing a level in place (out == in) is safe. */
#ifdef MPT_SHA256_HAVE_SHANI
    if (backend() == BACKEND_SHANI) {
        sha_msg b;
        for (; i + 1 < npairs; i += 2) {
            msg_init(&a, prefix, 1, in + 64 * i, 64);
            msg_init(&b, prefix, 1, in + 64 * (i + 1), 64);
            shani_hash_x2(&a, &b, out + 32 * i, out + 32 * (i + 1));
        }
    }
#endif
    for (; i < npairs; i++) {
        msg_init(&a, prefix, 1, in + 64 * i, 64);
        hash_msg(&a, out + 32 * i);
    }
}
