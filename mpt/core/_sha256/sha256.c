/*
 * SHA-256 (FIPS 180-4): a portable compression function, one on the x86 SHA
 * extensions, and an eight-lane AVX2 one and a sixteen-lane AVX-512 one for
 * batches, chosen at run time (sha256.h).  scripts/sha256_microbench.c measures cycles per block of each.
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
 * batch entry points therefore hash two (leaves of different lengths) or four
 * (Merkle inner nodes, equal-length leaves) independent messages at once,
 * their rounds interleaved instruction by instruction (shani_rounds_x2,
 * shani_rounds_xw below).
 */
#include "sha256.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MPT_SHA256_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

enum { BACKEND_UNSET = -1, BACKEND_SCALAR = 0, BACKEND_SHANI = 1, BACKEND_AVX2 = 2, BACKEND_AVX512 = 3 };

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
/* The two padded blocks of the 65-byte message prefix || pair[0..64) (a Merkle inner node) at blocks[0..128),
 * which the caller zeroed: the lane backends hash many of them side by side. */
static inline void pair_message_blocks(unsigned char *blocks, unsigned char prefix, const unsigned char *pair)
{
    blocks[0] = prefix;
    memcpy(blocks + 1, pair, 64);
    blocks[65] = 0x80;
    store64_be(blocks + 120, 65 * 8);
}

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

/* Byte order of the message words: big-endian 32-bit words into lanes. */
#define SHANI_BSWAP_MASK() _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL)

/* One block, given as its four 16-byte quads already in word order, into (abef, cdgh). */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_rounds(__m128i *abef, __m128i *cdgh, __m128i m0, __m128i m1, __m128i m2, __m128i m3)
{
    __m128i s0 = *abef, s1 = *cdgh;
    int q;

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

/* One block of each of two independent messages, their rounds interleaved
 * instruction by instruction. */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_rounds_x2(__m128i *abef_a, __m128i *cdgh_a, const __m128i *ma,
                __m128i *abef_b, __m128i *cdgh_b, const __m128i *mb)
{
    __m128i sa0 = *abef_a, sa1 = *cdgh_a, sb0 = *abef_b, sb1 = *cdgh_b;
    __m128i a0 = ma[0], a1 = ma[1], a2 = ma[2], a3 = ma[3];
    __m128i b0 = mb[0], b1 = mb[1], b2 = mb[2], b3 = mb[3];
    int q;

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

SHANI_TARGET static inline __attribute__((always_inline)) void
shani_load_quads(const unsigned char *p, __m128i m[4])
{
    const __m128i mask = SHANI_BSWAP_MASK();
    m[0] = SHANI_LOAD(p, 0, mask);
    m[1] = SHANI_LOAD(p, 1, mask);
    m[2] = SHANI_LOAD(p, 2, mask);
    m[3] = SHANI_LOAD(p, 3, mask);
}

/* prefix || p[0..63) as quads: each 16 bytes shifted by one byte with PALIGNR,
 * no byte-wise copy (a copy to a buffer followed by 16-byte loads stalls on
 * store forwarding). p must have 64 readable bytes. */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_prefixed_quads(unsigned char prefix, const unsigned char *p, __m128i m[4])
{
    const __m128i mask = SHANI_BSWAP_MASK();
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    __m128i pre = _mm_slli_si128(_mm_cvtsi32_si128(prefix), 15);
    m[0] = _mm_shuffle_epi8(_mm_alignr_epi8(x0, pre, 15), mask);
    m[1] = _mm_shuffle_epi8(_mm_alignr_epi8(x1, x0, 15), mask);
    m[2] = _mm_shuffle_epi8(_mm_alignr_epi8(x2, x1, 15), mask);
    m[3] = _mm_shuffle_epi8(_mm_alignr_epi8(x3, x2, 15), mask);
}

/* Byte-shift tables for the tail block: shift_window[16 + b ..] picks bytes
 * b.. of a vector into the low lanes, shift_window[b ..] the rest into the
 * high lanes (0x80 = zero lane); pad_window has the 0x80 end marker at 64. */
static const unsigned char shift_window[48] __attribute__((aligned(16))) = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};
static const unsigned char pad_window[128] __attribute__((aligned(16))) = {[64] = 0x80};

/* The last block(s) of a message of at least 64 data bytes (block k, not a
 * prefixed block 0, not wholly inside the data).  Quads wholly inside the
 * data are plain loads; the one quad the data ends in is the data's last 16
 * bytes moved down with one PSHUFB, the 0x80 marker ORed in; the rest are
 * zeros, and the length goes into the last quad.  Everything from registers,
 * the data and constant tables: assembling the block in a buffer byte by byte
 * and reading it back as vectors stalls on store forwarding, which cost as
 * much as compressing the block.  (An earlier version shifted all four quads
 * out of the last 64 bytes: eight PSHUFB per block, which left 101-byte
 * leaves at 50 cycles per block against 42 for 65-byte inner nodes.) */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_tail_quads(const sha_msg *m, size_t k, __m128i q[4])
{
    const __m128i mask = SHANI_BSWAP_MASK();
    const __m128i zero = _mm_setzero_si128();
    size_t start = 64 * k, r, ds, n;
    int j;

    if (start <= m->total) {
        r = m->total - start;            /* message bytes in this block: 0..63 */
        ds = start - m->prefix_len;      /* data offset of the block's first byte */
        for (j = 0; j < 4; j++) {
            size_t lo = 16 * (size_t)j;
            if (lo + 16 <= r) {
                q[j] = _mm_loadu_si128((const __m128i *)(m->data + ds + lo));
            } else if (lo < r) {
                n = r - lo;                  /* 1..15 data bytes, then the marker */
                q[j] = _mm_or_si128(
                    _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(m->data + m->len - 16)),
                                     _mm_loadu_si128((const __m128i *)(shift_window + 32 - n))),
                    _mm_loadu_si128((const __m128i *)(pad_window + 64 - n)));
            } else if (lo == r) {
                q[j] = _mm_loadu_si128((const __m128i *)(pad_window + 64));
            } else {
                q[j] = zero;
            }
        }
    } else {                             /* the length-only block after the marker */
        q[0] = q[1] = q[2] = q[3] = zero;
    }
    if (k == m->nblocks - 1)
        q[3] = _mm_or_si128(q[3], _mm_set_epi64x((long long)__builtin_bswap64((uint64_t)m->total * 8), 0));
    for (j = 0; j < 4; j++)
        q[j] = _mm_shuffle_epi8(q[j], mask);
}

/* Block k of message m as quads. */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_msg_quads(sha_msg *m, size_t k, __m128i q[4])
{
    size_t start = 64 * k;
    if (k == 0 && m->prefix_len && m->len >= 64)
        shani_prefixed_quads(m->prefix, m->data, q);
    else if (start + 64 > m->total && start >= m->prefix_len && m->len >= 64)
        shani_tail_quads(m, k, q);
    else
        shani_load_quads(msg_block(m, k), q);
}

SHANI_TARGET static inline void shani_block(__m128i *abef, __m128i *cdgh, const unsigned char *p)
{
    __m128i m[4];
    shani_load_quads(p, m);
    shani_rounds(abef, cdgh, m[0], m[1], m[2], m[3]);
}

SHANI_TARGET static void shani_blocks(uint32_t state[8], const unsigned char *p, size_t nblocks)
{
    __m128i abef, cdgh;
    shani_from_state(state, &abef, &cdgh);
    for (; nblocks; nblocks--, p += 64)
        shani_block(&abef, &cdgh, p);
    shani_to_state(abef, cdgh, state);
}

/* The digest straight from the register layout: words A..H, big-endian. */
SHANI_TARGET static inline void shani_digest(__m128i abef, __m128i cdgh, unsigned char out[32])
{
    const __m128i mask = SHANI_BSWAP_MASK();
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)out, _mm_shuffle_epi8(_mm_blend_epi16(feba, dchg, 0xF0), mask));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_shuffle_epi8(_mm_alignr_epi8(dchg, feba, 8), mask));
}

SHANI_TARGET static void shani_hash(sha_msg *m, unsigned char out[32])
{
    __m128i abef, cdgh, q[4];
    size_t k, first, count;
    const unsigned char *p;

    shani_from_state(sha256_iv, &abef, &cdgh);
    msg_direct_run(m, &first, &count);
    for (k = 0; k < first; k++) {
        shani_msg_quads(m, k, q);
        shani_rounds(&abef, &cdgh, q[0], q[1], q[2], q[3]);
    }
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
 * an output may overlap an input. */
SHANI_TARGET static void shani_hash_x2(sha_msg *a, sha_msg *b, unsigned char *out_a, unsigned char *out_b)
{
    __m128i abef_a, cdgh_a, abef_b, cdgh_b, qa[4], qb[4];
    size_t k, common = a->nblocks < b->nblocks ? a->nblocks : b->nblocks;

    shani_from_state(sha256_iv, &abef_a, &cdgh_a);
    abef_b = abef_a;
    cdgh_b = cdgh_a;
    for (k = 0; k < common; k++) {
        shani_msg_quads(a, k, qa);
        shani_msg_quads(b, k, qb);
        shani_rounds_x2(&abef_a, &cdgh_a, qa, &abef_b, &cdgh_b, qb);
    }
    for (k = common; k < a->nblocks; k++) {
        shani_msg_quads(a, k, qa);
        shani_rounds(&abef_a, &cdgh_a, qa[0], qa[1], qa[2], qa[3]);
    }
    for (k = common; k < b->nblocks; k++) {
        shani_msg_quads(b, k, qb);
        shani_rounds(&abef_b, &cdgh_b, qb[0], qb[1], qb[2], qb[3]);
    }
    shani_digest(abef_a, cdgh_a, out_a);
    shani_digest(abef_b, cdgh_b, out_b);
}

/* prefix || in[64i .. 64i+64) for two pairs at once.  A 65-byte message is
 * two blocks: prefix and the first 63 bytes (built with PALIGNR), then the
 * last byte, 0x80 and the length 520 bits; all in registers.  Every input is
 * loaded before any digest is stored, so out may equal in. */
SHANI_TARGET static void shani_pairs_x2(unsigned char prefix, const unsigned char *in, unsigned char *out)
{
    const __m128i mask = SHANI_BSWAP_MASK();
    const __m128i pad = _mm_slli_si128(_mm_cvtsi32_si128(0x80), 1);               /* byte 1 = 0x80 */
    const __m128i bitlen = _mm_shuffle_epi8(_mm_slli_si128(_mm_cvtsi32_si128(0x0802), 14), mask);
    const __m128i zero = _mm_setzero_si128();
    __m128i abef_a, cdgh_a, abef_b, cdgh_b, qa[4], qb[4];

    shani_prefixed_quads(prefix, in, qa);
    shani_prefixed_quads(prefix, in + 64, qb);
    /* The last input bytes, saved before any store. */
    __m128i last_a = _mm_srli_si128(_mm_loadu_si128((const __m128i *)(in + 48)), 15);
    __m128i last_b = _mm_srli_si128(_mm_loadu_si128((const __m128i *)(in + 112)), 15);

    shani_from_state(sha256_iv, &abef_a, &cdgh_a);
    abef_b = abef_a;
    cdgh_b = cdgh_a;
    shani_rounds_x2(&abef_a, &cdgh_a, qa, &abef_b, &cdgh_b, qb);
    qa[0] = _mm_shuffle_epi8(_mm_or_si128(last_a, pad), mask);
    qb[0] = _mm_shuffle_epi8(_mm_or_si128(last_b, pad), mask);
    qa[1] = qa[2] = qb[1] = qb[2] = zero;
    qa[3] = qb[3] = bitlen;
    shani_rounds_x2(&abef_a, &cdgh_a, qa, &abef_b, &cdgh_b, qb);
    shani_digest(abef_a, cdgh_a, out);
    shani_digest(abef_b, cdgh_b, out + 32);
}

/* One block of each of W (constant after inlining: 3 or 4) independent
 * messages, round for round.  More messages in flight than two hide more of
 * SHA256RNDS2's latency, at the price of spilling some of the 16 XMM
 * registers (scripts/sha256_microbench.c measures which width wins). */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_rounds_xw(int w, __m128i *abef, __m128i *cdgh, __m128i (*m)[4])
{
    __m128i s0[4], s1[4];
    int q, x;

    for (x = 0; x < w; x++) {
        s0[x] = abef[x];
        s1[x] = cdgh[x];
    }
    for (q = 0; q < 4; q++)
        for (x = 0; x < w; x++)
            SHANI_4ROUNDS(s0[x], s1[x], m[x][q], q);
    for (q = 4; q < 16; q += 4) {
        for (x = 0; x < w; x++) {
            SHANI_SCHED(m[x][0], m[x][1], m[x][2], m[x][3]);
            SHANI_4ROUNDS(s0[x], s1[x], m[x][0], q);
        }
        for (x = 0; x < w; x++) {
            SHANI_SCHED(m[x][1], m[x][2], m[x][3], m[x][0]);
            SHANI_4ROUNDS(s0[x], s1[x], m[x][1], q + 1);
        }
        for (x = 0; x < w; x++) {
            SHANI_SCHED(m[x][2], m[x][3], m[x][0], m[x][1]);
            SHANI_4ROUNDS(s0[x], s1[x], m[x][2], q + 2);
        }
        for (x = 0; x < w; x++) {
            SHANI_SCHED(m[x][3], m[x][0], m[x][1], m[x][2]);
            SHANI_4ROUNDS(s0[x], s1[x], m[x][3], q + 3);
        }
    }
    for (x = 0; x < w; x++) {
        abef[x] = _mm_add_epi32(s0[x], abef[x]);
        cdgh[x] = _mm_add_epi32(s1[x], cdgh[x]);
    }
}

/* shani_pairs_x2 for w pairs (w <= 4).  Every input is loaded before any
 * digest is stored, so out may equal in. */
SHANI_TARGET static inline __attribute__((always_inline)) void
shani_pairs_xw(int w, unsigned char prefix, const unsigned char *in, unsigned char *out)
{
    const __m128i mask = SHANI_BSWAP_MASK();
    const __m128i pad = _mm_slli_si128(_mm_cvtsi32_si128(0x80), 1);
    const __m128i bitlen = _mm_shuffle_epi8(_mm_slli_si128(_mm_cvtsi32_si128(0x0802), 14), mask);
    const __m128i zero = _mm_setzero_si128();
    __m128i abef[4], cdgh[4], m[4][4], last[4], iv_abef, iv_cdgh;
    int x;

    shani_from_state(sha256_iv, &iv_abef, &iv_cdgh);
    for (x = 0; x < w; x++) {
        shani_prefixed_quads(prefix, in + 64 * x, m[x]);
        last[x] = _mm_srli_si128(_mm_loadu_si128((const __m128i *)(in + 64 * x + 48)), 15);
        abef[x] = iv_abef;
        cdgh[x] = iv_cdgh;
    }
    shani_rounds_xw(w, abef, cdgh, m);
    for (x = 0; x < w; x++) {
        m[x][0] = _mm_shuffle_epi8(_mm_or_si128(last[x], pad), mask);
        m[x][1] = m[x][2] = zero;
        m[x][3] = bitlen;
    }
    shani_rounds_xw(w, abef, cdgh, m);
    for (x = 0; x < w; x++)
        shani_digest(abef[x], cdgh[x], out + 32 * x);
}

/* Not used by the library (four ways win); kept for scripts/sha256_microbench.c. */
__attribute__((unused)) SHANI_TARGET static void
shani_pairs_x3(unsigned char prefix, const unsigned char *in, unsigned char *out)
{
    shani_pairs_xw(3, prefix, in, out);
}

SHANI_TARGET static void shani_pairs_x4(unsigned char prefix, const unsigned char *in, unsigned char *out)
{
    shani_pairs_xw(4, prefix, in, out);
}

/* Four messages of the same block count at once (equal-length Merkle
 * leaves: the common case).  Digests are stored after every block was read. */
SHANI_TARGET static void shani_hash_x4(sha_msg *m, unsigned char *out)
{
    __m128i abef[4], cdgh[4], q[4][4];
    size_t k;
    int x;

    shani_from_state(sha256_iv, &abef[0], &cdgh[0]);
    for (x = 1; x < 4; x++) {
        abef[x] = abef[0];
        cdgh[x] = cdgh[0];
    }
    for (k = 0; k < m[0].nblocks; k++) {
        for (x = 0; x < 4; x++)
            shani_msg_quads(&m[x], k, q[x]);
        shani_rounds_xw(4, abef, cdgh, q);
    }
    for (x = 0; x < 4; x++)
        shani_digest(abef[x], cdgh[x], out + 32 * x);
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


/* ---- AVX2: eight messages in the eight 32-bit lanes of YMM registers -- */

#ifdef MPT_SHA256_HAVE_SHANI   /* same compilers and CPUs: GCC/Clang on x86 */
#define MPT_SHA256_HAVE_AVX2 1

/* For x86 CPUs without the SHA extensions (Intel before Ice Lake on the
 * desktop and Sapphire Rapids on servers): the portable rounds, each
 * instruction working on eight independent messages (batches only; a single
 * message falls back to scalar).  About 3x the portable code per block
 * (scripts/sha256_microbench.c), still well behind SHA-NI where that exists. */
#define AVX2_TARGET __attribute__((target("avx2")))

#define V8_ROR(x, n) _mm256_or_si256(_mm256_srli_epi32((x), (n)), _mm256_slli_epi32((x), 32 - (n)))
#define V8_BSIG0(x) _mm256_xor_si256(_mm256_xor_si256(V8_ROR(x, 2), V8_ROR(x, 13)), V8_ROR(x, 22))
#define V8_BSIG1(x) _mm256_xor_si256(_mm256_xor_si256(V8_ROR(x, 6), V8_ROR(x, 11)), V8_ROR(x, 25))
#define V8_SSIG0(x) _mm256_xor_si256(_mm256_xor_si256(V8_ROR(x, 7), V8_ROR(x, 18)), _mm256_srli_epi32((x), 3))
#define V8_SSIG1(x) _mm256_xor_si256(_mm256_xor_si256(V8_ROR(x, 17), V8_ROR(x, 19)), _mm256_srli_epi32((x), 10))

/* 8x8 transpose of 32-bit words: row x (lane x's eight words) into column
 * vectors (word j of every lane); its own inverse. */
AVX2_TARGET static inline __attribute__((always_inline)) void avx2_transpose8(__m256i r[8])
{
    __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

#define V8_BSWAP_MASK() _mm256_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL, \
                                          0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL)

/* Block p[x] of lane x (64 readable bytes each) as 16 word vectors. */
AVX2_TARGET static inline __attribute__((always_inline)) void
avx2_load_blocks(const unsigned char *const p[8], __m256i w[16])
{
    const __m256i mask = V8_BSWAP_MASK();
    int x, half;
    for (half = 0; half < 2; half++) {
        for (x = 0; x < 8; x++)
            w[8 * half + x] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p[x] + 32 * half)), mask);
        avx2_transpose8(w + 8 * half);
    }
}

/* One block of each lane into st (st[j]: word j of the eight states). */
AVX2_TARGET static void avx2_rounds(__m256i st[8], __m256i w[16])
{
    __m256i a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    __m256i t1, t2;
    int i;

    for (i = 0; i < 64; i++) {
        if (i >= 16)
            w[i & 15] = _mm256_add_epi32(
                _mm256_add_epi32(V8_SSIG1(w[(i - 2) & 15]), w[(i - 7) & 15]),
                _mm256_add_epi32(V8_SSIG0(w[(i - 15) & 15]), w[i & 15]));
        t1 = _mm256_add_epi32(_mm256_add_epi32(h, V8_BSIG1(e)),
                              _mm256_add_epi32(_mm256_xor_si256(_mm256_and_si256(e, _mm256_xor_si256(f, g)), g),
                                               _mm256_add_epi32(_mm256_set1_epi32((int)sha256_k[i]), w[i & 15])));
        t2 = _mm256_add_epi32(V8_BSIG0(a),
                              _mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(c, _mm256_or_si256(a, b))));
        h = g; g = f; f = e; e = _mm256_add_epi32(d, t1);
        d = c; c = b; b = a; a = _mm256_add_epi32(t1, t2);
    }
    st[0] = _mm256_add_epi32(st[0], a); st[1] = _mm256_add_epi32(st[1], b);
    st[2] = _mm256_add_epi32(st[2], c); st[3] = _mm256_add_epi32(st[3], d);
    st[4] = _mm256_add_epi32(st[4], e); st[5] = _mm256_add_epi32(st[5], f);
    st[6] = _mm256_add_epi32(st[6], g); st[7] = _mm256_add_epi32(st[7], h);
}

AVX2_TARGET static inline void avx2_init(__m256i st[8])
{
    int j;
    for (j = 0; j < 8; j++)
        st[j] = _mm256_set1_epi32((int)sha256_iv[j]);
}

/* The digests of lanes 0 .. nout-1 to out[32x ..]. */
AVX2_TARGET static inline void avx2_digests(__m256i st[8], int nout, unsigned char *out)
{
    const __m256i mask = V8_BSWAP_MASK();
    int x;
    avx2_transpose8(st);
    for (x = 0; x < nout; x++)
        _mm256_storeu_si256((__m256i *)(out + 32 * x), _mm256_shuffle_epi8(st[x], mask));
}

static const unsigned char zero_block[64];

/* Up to eight messages (m[0 .. nmsg)), any lengths: every lane runs as many
 * blocks as the longest, and a lane past its last block keeps its state (a
 * blend after each block).  Digests are stored after every block was read. */
AVX2_TARGET static void avx2_hash_x8(sha_msg *m, int nmsg, unsigned char *out)
{
    __m256i st[8], saved[8], w[16], nblocks, active;
    const unsigned char *p[8];
    size_t k, most = 0;
    int x, j, uneven = 0;

    for (x = 0; x < nmsg; x++) {
        if (m[x].nblocks > most)
            most = m[x].nblocks;
        if (m[x].nblocks != m[0].nblocks)
            uneven = 1;
    }
    uneven |= nmsg < 8;
    /* Block counts fit an int lane: a message of 2**37 bytes or more is
     * 2**31 blocks; such lanes are clamped, which only matters past that. */
    nblocks = _mm256_set_epi32(
        nmsg > 7 ? (int)(m[7].nblocks < 0x7fffffff ? m[7].nblocks : 0x7fffffff) : 0,
        nmsg > 6 ? (int)(m[6].nblocks < 0x7fffffff ? m[6].nblocks : 0x7fffffff) : 0,
        nmsg > 5 ? (int)(m[5].nblocks < 0x7fffffff ? m[5].nblocks : 0x7fffffff) : 0,
        nmsg > 4 ? (int)(m[4].nblocks < 0x7fffffff ? m[4].nblocks : 0x7fffffff) : 0,
        nmsg > 3 ? (int)(m[3].nblocks < 0x7fffffff ? m[3].nblocks : 0x7fffffff) : 0,
        nmsg > 2 ? (int)(m[2].nblocks < 0x7fffffff ? m[2].nblocks : 0x7fffffff) : 0,
        nmsg > 1 ? (int)(m[1].nblocks < 0x7fffffff ? m[1].nblocks : 0x7fffffff) : 0,
        (int)(m[0].nblocks < 0x7fffffff ? m[0].nblocks : 0x7fffffff));
    avx2_init(st);
    for (k = 0; k < most; k++) {
        for (x = 0; x < 8; x++)
            p[x] = (x < nmsg && k < m[x].nblocks) ? msg_block(&m[x], k) : zero_block;
        avx2_load_blocks(p, w);
        if (uneven) {
            for (j = 0; j < 8; j++)
                saved[j] = st[j];
            avx2_rounds(st, w);
            active = _mm256_cmpgt_epi32(nblocks, _mm256_set1_epi32(k < 0x7fffffff ? (int)k : 0x7fffffff));
            for (j = 0; j < 8; j++)
                st[j] = _mm256_blendv_epi8(saved[j], st[j], active);
        } else {
            avx2_rounds(st, w);
        }
    }
    avx2_digests(st, nmsg, out);
}

/* prefix || in[64x .. 64x+64) for pairs x < npairs (<= 8): two blocks each,
 * assembled in a local buffer (so out may equal in). */
AVX2_TARGET static void avx2_pairs_x8(unsigned char prefix, const unsigned char *in, int npairs,
                                      unsigned char *out)
{
    unsigned char blocks[8][128];
    const unsigned char *p[8];
    __m256i st[8], w[16];
    int x;

    memset(blocks, 0, sizeof(blocks));
    for (x = 0; x < npairs; x++)
        pair_message_blocks(blocks[x], prefix, in + 64 * x);
    avx2_init(st);
    for (x = 0; x < 8; x++)
        p[x] = blocks[x];
    avx2_load_blocks(p, w);
    avx2_rounds(st, w);
    for (x = 0; x < 8; x++)
        p[x] = blocks[x] + 64;
    avx2_load_blocks(p, w);
    avx2_rounds(st, w);
    avx2_digests(st, npairs, out);
}

static int cpu_has_avx2(void)
{
    unsigned int eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ecx & bit_OSXSAVE) || !(ecx & bit_AVX))
        return 0;
    /* The OS saves the YMM registers: XCR0 bits 1 (SSE) and 2 (AVX). */
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    if ((xcr0_lo & 6) != 6)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return (ebx & (1u << 5)) ? 1 : 0;    /* CPUID.(EAX=7,ECX=0):EBX.AVX2[bit 5] */
}

#endif /* MPT_SHA256_HAVE_AVX2 */

/* ---- AVX-512: sixteen messages in the sixteen 32-bit lanes of ZMM ----- */

#ifdef MPT_SHA256_HAVE_SHANI   /* same compilers and CPUs: GCC/Clang on x86 */
#define MPT_SHA256_HAVE_AVX512 1

/* Batches only, like AVX2, but with the instructions that make the portable
 * rounds short: a rotate is one VPRORD, Ch, Maj and three-way XORs are one
 * VPTERNLOGD each (about 100 instructions per lane and block against 330 on
 * AVX2).  Where SHA-NI is slow (Intel: about 99 ns per Merkle node against
 * 50 on Zen 4) or missing (Xeons before Ice Lake), sixteen lanes beat it;
 * "auto" times both on first use and keeps the faster for batches, while
 * single messages stay on SHA-NI. */
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw")))

#define V16_ROR(x, n) _mm512_ror_epi32((x), (n))
#define V16_XOR3(a, b, c) _mm512_ternarylogic_epi32((a), (b), (c), 0x96)
#define V16_BSIG0(x) V16_XOR3(V16_ROR(x, 2), V16_ROR(x, 13), V16_ROR(x, 22))
#define V16_BSIG1(x) V16_XOR3(V16_ROR(x, 6), V16_ROR(x, 11), V16_ROR(x, 25))
#define V16_SSIG0(x) V16_XOR3(V16_ROR(x, 7), V16_ROR(x, 18), _mm512_srli_epi32((x), 3))
#define V16_SSIG1(x) V16_XOR3(V16_ROR(x, 17), V16_ROR(x, 19), _mm512_srli_epi32((x), 10))
#define V16_CH(e, f, g) _mm512_ternarylogic_epi32((e), (f), (g), 0xCA)    /* e ? f : g */
#define V16_MAJ(a, b, c) _mm512_ternarylogic_epi32((a), (b), (c), 0xE8)

/* Block p[x] of lane x as 16 word vectors (word j of every lane in w[j]). */
AVX512_TARGET static inline __attribute__((always_inline)) void
avx512_load_blocks(const unsigned char *const p[16], __m512i w[16])
{
    /* Sixteen 64-byte rows into sixteen word columns: a 16x16 transpose of
     * 32-bit words in four stages of shuffles (64 instructions), then each
     * word to big-endian. */
    const __m512i bswap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
    __m512i r[16], t[16];
    int x;
    for (x = 0; x < 16; x++)
        r[x] = _mm512_loadu_si512((const void *)p[x]);
    for (x = 0; x < 16; x += 2) {
        t[x] = _mm512_unpacklo_epi32(r[x], r[x + 1]);
        t[x + 1] = _mm512_unpackhi_epi32(r[x], r[x + 1]);
    }
    for (x = 0; x < 16; x += 4) {
        r[x] = _mm512_unpacklo_epi64(t[x], t[x + 2]);
        r[x + 1] = _mm512_unpackhi_epi64(t[x], t[x + 2]);
        r[x + 2] = _mm512_unpacklo_epi64(t[x + 1], t[x + 3]);
        r[x + 3] = _mm512_unpackhi_epi64(t[x + 1], t[x + 3]);
    }
    /* r[4g + k] holds, in its 128-bit lane l, word 4l + k' of rows 4g .. 4g+3
     * (k' = 0, 1, 2, 3 for k = 0, 1, 2, 3): gather the lanes across groups. */
    for (x = 0; x < 4; x++) {
        t[x] = _mm512_shuffle_i32x4(r[x], r[4 + x], 0x88);         /* lanes 0, 2 of g0 | 0, 2 of g1 */
        t[4 + x] = _mm512_shuffle_i32x4(r[x], r[4 + x], 0xdd);     /* lanes 1, 3 */
        t[8 + x] = _mm512_shuffle_i32x4(r[8 + x], r[12 + x], 0x88);
        t[12 + x] = _mm512_shuffle_i32x4(r[8 + x], r[12 + x], 0xdd);
    }
    for (x = 0; x < 4; x++) {
        w[x] = _mm512_shuffle_i32x4(t[x], t[8 + x], 0x88);          /* word x */
        w[8 + x] = _mm512_shuffle_i32x4(t[x], t[8 + x], 0xdd);      /* word 8 + x */
        w[4 + x] = _mm512_shuffle_i32x4(t[4 + x], t[12 + x], 0x88); /* word 4 + x */
        w[12 + x] = _mm512_shuffle_i32x4(t[4 + x], t[12 + x], 0xdd);
    }
    for (x = 0; x < 16; x++)
        w[x] = _mm512_shuffle_epi8(w[x], bswap);
}

AVX512_TARGET static void avx512_rounds(__m512i st[8], __m512i w[16])
{
    __m512i a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    __m512i t1, t2;
    int i;

    for (i = 0; i < 64; i++) {
        if (i >= 16)
            w[i & 15] = _mm512_add_epi32(
                _mm512_add_epi32(V16_SSIG1(w[(i - 2) & 15]), w[(i - 7) & 15]),
                _mm512_add_epi32(V16_SSIG0(w[(i - 15) & 15]), w[i & 15]));
        t1 = _mm512_add_epi32(_mm512_add_epi32(h, V16_BSIG1(e)),
                              _mm512_add_epi32(V16_CH(e, f, g),
                                               _mm512_add_epi32(_mm512_set1_epi32((int)sha256_k[i]), w[i & 15])));
        t2 = _mm512_add_epi32(V16_BSIG0(a), V16_MAJ(a, b, c));
        h = g; g = f; f = e; e = _mm512_add_epi32(d, t1);
        d = c; c = b; b = a; a = _mm512_add_epi32(t1, t2);
    }
    st[0] = _mm512_add_epi32(st[0], a); st[1] = _mm512_add_epi32(st[1], b);
    st[2] = _mm512_add_epi32(st[2], c); st[3] = _mm512_add_epi32(st[3], d);
    st[4] = _mm512_add_epi32(st[4], e); st[5] = _mm512_add_epi32(st[5], f);
    st[6] = _mm512_add_epi32(st[6], g); st[7] = _mm512_add_epi32(st[7], h);
}

AVX512_TARGET static inline void avx512_init(__m512i st[8])
{
    int j;
    for (j = 0; j < 8; j++)
        st[j] = _mm512_set1_epi32((int)sha256_iv[j]);
}

/* The digests of lanes 0 .. nout-1 to out[32x ..]. */
AVX512_TARGET static inline void avx512_digests(__m512i st[8], int nout, unsigned char *out)
{
    uint32_t t[8][16] __attribute__((aligned(64)));
    int x, j;
    for (j = 0; j < 8; j++)
        _mm512_store_si512((void *)t[j], st[j]);
    for (x = 0; x < nout; x++)
        for (j = 0; j < 8; j++)
            store32_be(out + 32 * x + 4 * j, t[j][x]);
}

/* Up to sixteen messages of any lengths, as avx2_hash_x8: a lane past its
 * last block keeps its state (a masked blend after each block). */
AVX512_TARGET static void avx512_hash_x16(sha_msg *m, int nmsg, unsigned char *out)
{
    __m512i st[8], saved[8], w[16];
    const unsigned char *p[16];
    size_t k, most = 0;
    int x, j, uneven = nmsg < 16;
    __mmask16 active;

    for (x = 0; x < nmsg; x++) {
        if (m[x].nblocks > most)
            most = m[x].nblocks;
        if (m[x].nblocks != m[0].nblocks)
            uneven = 1;
    }
    avx512_init(st);
    for (k = 0; k < most; k++) {
        active = 0;
        for (x = 0; x < 16; x++) {
            if (x < nmsg && k < m[x].nblocks) {
                p[x] = msg_block(&m[x], k);
                active |= (__mmask16)(1u << x);
            } else {
                p[x] = zero_block;
            }
        }
        avx512_load_blocks(p, w);
        if (uneven) {
            for (j = 0; j < 8; j++)
                saved[j] = st[j];
            avx512_rounds(st, w);
            for (j = 0; j < 8; j++)
                st[j] = _mm512_mask_blend_epi32(active, saved[j], st[j]);
        } else {
            avx512_rounds(st, w);
        }
    }
    avx512_digests(st, nmsg, out);
}

/* prefix || in[64x .. 64x+64) for pairs x < npairs (<= 16): two blocks each,
 * assembled in a local buffer (so out may equal in). */
AVX512_TARGET static void avx512_pairs_x16(unsigned char prefix, const unsigned char *in, int npairs,
                                           unsigned char *out)
{
    unsigned char blocks[16][128];
    const unsigned char *p[16];
    __m512i st[8], w[16];
    int x;

    memset(blocks, 0, sizeof(blocks));
    for (x = 0; x < npairs; x++)
        pair_message_blocks(blocks[x], prefix, in + 64 * x);
    avx512_init(st);
    for (x = 0; x < 16; x++)
        p[x] = blocks[x];
    avx512_load_blocks(p, w);
    avx512_rounds(st, w);
    for (x = 0; x < 16; x++)
        p[x] = blocks[x] + 64;
    avx512_load_blocks(p, w);
    avx512_rounds(st, w);
    avx512_digests(st, npairs, out);
}

static int cpu_has_avx512(void)
{
    unsigned int eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ecx & bit_OSXSAVE))
        return 0;
    /* The OS saves the opmask and ZMM registers: XCR0 bits 1, 2, 5, 6, 7. */
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    (void)xcr0_hi;
    if ((xcr0_lo & 0xe6) != 0xe6)
        return 0;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    /* CPUID.(EAX=7,ECX=0):EBX: AVX512F (bit 16) and AVX512BW (bit 30, the byte shuffle). */
    return (ebx & (1u << 16)) && (ebx & (1u << 30)) ? 1 : 0;
}

#endif /* MPT_SHA256_HAVE_AVX512 */

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
#ifdef MPT_SHA256_HAVE_AVX2
    case BACKEND_AVX2: {
        static int has = -1;
        if (has < 0)
            has = cpu_has_avx2();
        return has;
    }
#endif
#ifdef MPT_SHA256_HAVE_AVX512
    case BACKEND_AVX512: {
        static int has = -1;
        if (has < 0)
            has = cpu_has_avx512();
        return has;
    }
#endif
    default:
        return 0;
    }
}

#ifdef MPT_SHA256_HAVE_AVX512
static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Merkle levels of 256 pairs on SHA-NI (four pairs at a time) and on sixteen
 * AVX-512 lanes, alternately, the best of seven rounds each (about 0.2 ms in
 * all): 1 when the lanes are clearly faster.  Which one wins depends on the core, not
 * on the instruction sets: Zen 4 runs SHA-NI about twice as fast per block as
 * the Xeons these hosts have, and splits every 512-bit instruction in two. */
static int avx512_beats_shani(void)
{
    static unsigned char level[256 * 64], digests[256 * 32];
    double best_shani = 1e9, best_lanes = 1e9, t;
    int round, i;

    for (i = 0; i < (int)sizeof(level); i++)
        level[i] = (unsigned char)(i * 131 + 7);
    for (round = 0; round < 7; round++) {
        t = seconds_now();
        for (i = 0; i < 256; i += 4)
            shani_pairs_x4(1, level + 64 * i, digests + 32 * i);
        t = seconds_now() - t;
        if (t < best_shani)
            best_shani = t;
        t = seconds_now();
        for (i = 0; i < 256; i += 16)
            avx512_pairs_x16(1, level + 64 * i, 16, digests + 32 * i);
        t = seconds_now() - t;
        if (t < best_lanes)
            best_lanes = t;
    }
    /* A clear margin, so that the choice does not flip from run to run on a
     * core where the two are close (Zen 4: the lanes about 15% slower). */
    return best_lanes < 0.8 * best_shani;
}
#endif

static int best_backend(void)
{
    /* SHA-NI: ~42-50 cycles per block on Zen 4, about twice that on Intel;
     * sixteen AVX-512 lanes: about the same on Zen 4, faster on Intel; AVX2
     * eight lanes: ~165; portable: ~500 (scripts/sha256_microbench.c). */
    if (backend_supported(BACKEND_SHANI)) {
#ifdef MPT_SHA256_HAVE_AVX512
        if (backend_supported(BACKEND_AVX512) && avx512_beats_shani())
            return BACKEND_AVX512;
#endif
        return BACKEND_SHANI;
    }
    if (backend_supported(BACKEND_AVX512))
        return BACKEND_AVX512;
    return backend_supported(BACKEND_AVX2) ? BACKEND_AVX2 : BACKEND_SCALAR;
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
    if (strcmp(name, "avx2") == 0)
        return BACKEND_AVX2;
    if (strcmp(name, "avx512") == 0)
        return BACKEND_AVX512;
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

/* The backend of single messages (streaming, one shot, the odd message of a
 * batch): the lanes serve batches only, so AVX-512 leaves them to SHA-NI
 * where the CPU has it (AVX2, a forced test backend, to the portable code). */
static int single_backend(void)
{
    int b = backend();
    if (b == BACKEND_AVX512 && backend_supported(BACKEND_SHANI))
        return BACKEND_SHANI;
    return b;
}

const char *mpt_sha256_backend(void)
{
    switch (backend()) {
    case BACKEND_SHANI:
        return "shani";
    case BACKEND_AVX2:
        return "avx2";
    case BACKEND_AVX512:
        return "avx512";
    default:
        return "scalar";
    }
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
    if (single_backend() == BACKEND_SHANI) {
        shani_blocks(state, p, nblocks);
        return;
    }
#endif
    scalar_blocks(state, p, nblocks);
}

static void hash_msg(sha_msg *m, unsigned char out[32])
{
#ifdef MPT_SHA256_HAVE_SHANI
    if (single_backend() == BACKEND_SHANI) {
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
        sha_msg four[4];
        /* Four at a time when four neighbours have the same block count
         * (equal-length leaves; 47 cycles per block against 48 two at a time
         * on 101-byte leaves), else two: their common blocks interleaved. */
        while (i + 1 < n) {
            int x, ways = i + 3 < n ? 4 : 2;
            for (x = 0; x < ways; x++)
                msg_init(&four[x], prefix, plen, data[i + (size_t)x], len[i + (size_t)x]);
            if (ways == 4 && four[1].nblocks == four[0].nblocks && four[2].nblocks == four[0].nblocks
                && four[3].nblocks == four[0].nblocks) {
                shani_hash_x4(four, out + 32 * i);
                i += 4;
            } else {
                shani_hash_x2(&four[0], &four[1], out + 32 * i, out + 32 * (i + 1));
                i += 2;
            }
        }
    }
#endif
#ifdef MPT_SHA256_HAVE_AVX2
    /* Eight at a time; a last group of fewer than 3 goes to the scalar code,
     * which beats eight lanes of which six or seven are idle. */
    if (backend() == BACKEND_AVX2) {
        sha_msg eight[8];
        int x, count;
        while (n - i >= 3) {
            count = n - i >= 8 ? 8 : (int)(n - i);
            for (x = 0; x < count; x++)
                msg_init(&eight[x], prefix, plen, data[i + (size_t)x], len[i + (size_t)x]);
            avx2_hash_x8(eight, count, out + 32 * i);
            i += (size_t)count;
        }
    }
#endif
#ifdef MPT_SHA256_HAVE_AVX512
    /* Sixteen at a time; a last group of fewer than 6 goes to the single
     * message code (SHA-NI where there is one). */
    if (backend() == BACKEND_AVX512) {
        sha_msg sixteen[16];
        int x, count;
        while (n - i >= 6) {
            count = n - i >= 16 ? 16 : (int)(n - i);
            for (x = 0; x < count; x++)
                msg_init(&sixteen[x], prefix, plen, data[i + (size_t)x], len[i + (size_t)x]);
            avx512_hash_x16(sixteen, count, out + 32 * i);
            i += (size_t)count;
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
        /* Four pairs at a time: 42.5 cycles per block against 48-49 for two
         * (scripts/sha256_microbench.c, this EPYC); 3-way sits between. */
        for (; i + 3 < npairs; i += 4)
            shani_pairs_x4(prefix, in + 64 * i, out + 32 * i);
        for (; i + 1 < npairs; i += 2)
            shani_pairs_x2(prefix, in + 64 * i, out + 32 * i);
    }
#endif
#ifdef MPT_SHA256_HAVE_AVX2
    /* Group g reads its eight pairs before writing its eight digests, which
     * land at or below them: in place stays safe. */
    if (backend() == BACKEND_AVX2) {
        while (npairs - i >= 3) {
            int count = npairs - i >= 8 ? 8 : (int)(npairs - i);
            avx2_pairs_x8(prefix, in + 64 * i, count, out + 32 * i);
            i += (size_t)count;
        }
    }
#endif
#ifdef MPT_SHA256_HAVE_AVX512
    if (backend() == BACKEND_AVX512) {
        while (npairs - i >= 6) {
            int count = npairs - i >= 16 ? 16 : (int)(npairs - i);
            avx512_pairs_x16(prefix, in + 64 * i, count, out + 32 * i);
            i += (size_t)count;
        }
    }
#endif
    for (; i < npairs; i++) {
        msg_init(&a, prefix, 1, in + 64 * i, 64);
        hash_msg(&a, out + 32 * i);
    }
}
