/*
 * Pieces shared by the scalar Keccak (keccak.c) and the multi-lane one
 * (keccak_lanes.c): constants, the round macro, little-endian lane access.
 * Not a public header.
 */
#ifndef MPT_KECCAK_INTERNAL_H
#define MPT_KECCAK_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#define MPT_KECCAK_RATE 136               /* bytes: 1600 - 2*256 bits */
#define MPT_KECCAK_RATE_LANES (MPT_KECCAK_RATE / 8)

#define ROL64(a, n) (((a) << (n)) | ((a) >> (64 - (n))))

static const uint64_t keccak_rc[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
    0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
    0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
    0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
    0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
    0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/*
 * One round from lanes A## into lanes E##, written once for any lane type
 * that has ^ | & ~ << >>: uint64_t for the scalar permutation, GCC vectors of
 * 4 or 8 uint64_t for the SIMD ones (one independent Keccak state per vector
 * element).  B* hold one row of rho+pi output; N* is the single complemented
 * copy each row's chi needs.  The AND/OR choice per lane follows from which
 * chi inputs arrive complemented (lane complementing: see keccak.c's header).
 */
#define KECCAK_ROUND(A, E, rc)                                                 \
    do {                                                                       \
        /* theta */                                                            \
        Ca = A##ba ^ A##ga ^ A##ka ^ A##ma ^ A##sa;                            \
        Ce = A##be ^ A##ge ^ A##ke ^ A##me ^ A##se;                            \
        Ci = A##bi ^ A##gi ^ A##ki ^ A##mi ^ A##si;                            \
        Co = A##bo ^ A##go ^ A##ko ^ A##mo ^ A##so;                            \
        Cu = A##bu ^ A##gu ^ A##ku ^ A##mu ^ A##su;                            \
        Da = Cu ^ ROL64(Ce, 1);                                                \
        De = Ca ^ ROL64(Ci, 1);                                                \
        Di = Ce ^ ROL64(Co, 1);                                                \
        Do = Ci ^ ROL64(Cu, 1);                                                \
        Du = Co ^ ROL64(Ca, 1);                                                \
        /* rho + pi + chi, output row b (iota on lane ba) */                   \
        Ba = A##ba ^ Da;                                                       \
        Be = ROL64(A##ge ^ De, 44);                                            \
        Bi = ROL64(A##ki ^ Di, 43);                                            \
        Bo = ROL64(A##mo ^ Do, 21);                                            \
        Bu = ROL64(A##su ^ Du, 14);                                            \
        Nx = ~Bi;                                                              \
        E##ba = Ba ^ (Be | Bi) ^ (rc);                                         \
        E##be = Be ^ (Nx | Bo);                                                \
        E##bi = Bi ^ (Bo & Bu);                                                \
        E##bo = Bo ^ (Bu | Ba);                                                \
        E##bu = Bu ^ (Ba & Be);                                                \
        /* output row g */                                                     \
        Ba = ROL64(A##bo ^ Do, 28);                                            \
        Be = ROL64(A##gu ^ Du, 20);                                            \
        Bi = ROL64(A##ka ^ Da, 3);                                             \
        Bo = ROL64(A##me ^ De, 45);                                            \
        Bu = ROL64(A##si ^ Di, 61);                                            \
        Nx = ~Bu;                                                              \
        E##ga = Ba ^ (Be | Bi);                                                \
        E##ge = Be ^ (Bi & Bo);                                                \
        E##gi = Bi ^ (Bo | Nx);                                                \
        E##go = Bo ^ (Bu | Ba);                                                \
        E##gu = Bu ^ (Ba & Be);                                                \
        /* output row k */                                                     \
        Ba = ROL64(A##be ^ De, 1);                                             \
        Be = ROL64(A##gi ^ Di, 6);                                             \
        Bi = ROL64(A##ko ^ Do, 25);                                            \
        Bo = ROL64(A##mu ^ Du, 8);                                             \
        Bu = ROL64(A##sa ^ Da, 18);                                            \
        Nx = ~Bo;                                                              \
        E##ka = Ba ^ (Be | Bi);                                                \
        E##ke = Be ^ (Bi & Bo);                                                \
        E##ki = Bi ^ (Nx & Bu);                                                \
        E##ko = Nx ^ (Bu | Ba);                                                \
        E##ku = Bu ^ (Ba & Be);                                                \
        /* output row m */                                                     \
        Ba = ROL64(A##bu ^ Du, 27);                                            \
        Be = ROL64(A##ga ^ Da, 36);                                            \
        Bi = ROL64(A##ke ^ De, 10);                                            \
        Bo = ROL64(A##mi ^ Di, 15);                                            \
        Bu = ROL64(A##so ^ Do, 56);                                            \
        Nx = ~Bo;                                                              \
        E##ma = Ba ^ (Be & Bi);                                                \
        E##me = Be ^ (Bi | Bo);                                                \
        E##mi = Bi ^ (Nx | Bu);                                                \
        E##mo = Nx ^ (Bu & Ba);                                                \
        E##mu = Bu ^ (Ba | Be);                                                \
        /* output row s */                                                     \
        Ba = ROL64(A##bi ^ Di, 62);                                            \
        Be = ROL64(A##go ^ Do, 55);                                            \
        Bi = ROL64(A##ku ^ Du, 39);                                            \
        Bo = ROL64(A##ma ^ Da, 41);                                            \
        Bu = ROL64(A##se ^ De, 2);                                             \
        Nx = ~Be;                                                              \
        E##sa = Ba ^ (Nx & Bi);                                                \
        E##se = Nx ^ (Bi | Bo);                                                \
        E##si = Bi ^ (Bo & Bu);                                                \
        E##so = Bo ^ (Bu | Ba);                                                \
        E##su = Bu ^ (Ba & Be);                                                \
    } while (0)

/*
 * Little-endian lane load/store.  On little-endian targets memcpy compiles to
 * one unaligned move; elsewhere the byte-wise form is always correct.
 */
#if (defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&          \
     __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) ||                             \
    defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64) || defined(_M_ARM)
#define MPT_KECCAK_LITTLE_ENDIAN 1
#endif

static inline uint64_t load64_le(const uint8_t *p)
{
#ifdef MPT_KECCAK_LITTLE_ENDIAN
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) |
           ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) |
           ((uint64_t)p[7] << 56);
#endif
}

static inline void store64_le(uint8_t *p, uint64_t v)
{
#ifdef MPT_KECCAK_LITTLE_ENDIAN
    memcpy(p, &v, 8);
#else
    int i;
    for (i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
#endif
}

/*
 * Finish a Keccak-256 from state s (zero for a fresh hash): absorb
 * data[0..len), pad, squeeze 32 bytes into out.  Defined in keccak.c; the
 * multi-lane code uses it to finish a lane's part-absorbed state alone.
 */
void mpt_keccak256_continue(uint64_t s[25], const uint8_t *data, size_t len,
                            uint8_t out[32]);

#endif /* MPT_KECCAK_INTERNAL_H */
