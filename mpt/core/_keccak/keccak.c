/*
 * Keccak-f[1600] and Ethereum's Keccak-256 (rate 136 bytes, padding 0x01 ... 0x80).
 *
 * The permutation keeps the 25 lanes in local variables and runs two rounds per
 * loop iteration (state A -> E -> A), so no lane is ever copied between rounds.
 * Writing all 24 rounds out measured ~20% slower on x86-64 (likely the larger
 * code missing the decoded-instruction cache); four rounds per iteration
 * gained nothing reliable over two.
 *
 * Chi uses the "lane complementing" transform (Bertoni et al., "Keccak
 * implementation overview", section 2.2): six lanes (be, bi, go, ki, mi, sa)
 * are kept bitwise complemented between rounds, which lets chi be written
 * with AND/OR and one NOT per row instead of five.  Baseline x86-64 has no
 * and-not instruction, so this measurably beats the textbook chi there.  The
 * complement is applied on entry and removed on exit, so callers see the
 * plain state.
 *
 * Lane naming: A<y><x> with y in b,g,k,m,s (rows 0..4) and x in a,e,i,o,u
 * (columns 0..4); lane index in the state array is x + 5*y.
 */
#include "keccak.h"
#include "keccak_internal.h"

#define KECCAK_LANE_T uint64_t
#define KECCAK_PERMUTE keccak_f1600_scalar
#include "keccak_permute.inc"

void mpt_keccak_f1600(uint64_t state[25])
{
    keccak_f1600_scalar(state);
}

void mpt_keccak256(const uint8_t *data, size_t len, uint8_t out[32])
{
    uint64_t s[25] = {0};
    mpt_keccak256_continue(s, data, len, out);
}

void mpt_keccak256_continue(uint64_t s[25], const uint8_t *data, size_t len,
                            uint8_t out[32])
{
    uint8_t last[8] = {0};
    size_t i, words, rem;

    /* Whole blocks: XOR the 17 rate lanes straight from the input. */
    while (len >= MPT_KECCAK_RATE) {
        for (i = 0; i < MPT_KECCAK_RATE_LANES; i++)
            s[i] ^= load64_le(data + 8 * i);
        keccak_f1600_scalar(s);
        data += MPT_KECCAK_RATE;
        len -= MPT_KECCAK_RATE;
    }

    /* Tail (0..135 bytes): whole words directly, the final partial word plus
     * the 0x01 pad byte via an 8-byte buffer.  words <= 16, so the 0x80 in
     * lane 16 may share that lane (len 135 gives the single byte 0x81). */
    words = len / 8;
    rem = len % 8;
    for (i = 0; i < words; i++)
        s[i] ^= load64_le(data + 8 * i);
    if (rem)
        memcpy(last, data + 8 * words, rem);
    last[rem] = 0x01;
    s[words] ^= load64_le(last);
    s[MPT_KECCAK_RATE_LANES - 1] ^= 0x8000000000000000ULL;
    keccak_f1600_scalar(s);

    for (i = 0; i < 4; i++)
        store64_le(out + 8 * i, s[i]);
}
