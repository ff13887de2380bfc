/*
 * Cycles per 64-byte block of each SHA-256 compression path of
 * mpt/core/_sha256/sha256.c, measured with RDTSC (the minimum over many runs, which
 * a busy machine disturbs far less than a mean; RDTSC counts reference cycles,
 * so compare paths within one run, not across machines).
 *
 *   cc -O3 -o /tmp/sha256_microbench scripts/sha256_microbench.c && /tmp/sha256_microbench
 *
 * The library file is included whole, so its static functions (the 2-, 3- and
 * 4-way SHA-NI interleaves) can be timed one by one.
 */
#include "../mpt/core/_sha256/sha256.c"

#include <stdio.h>
#include <x86intrin.h>

#define PAIRS 4096            /* one Merkle level of 8192 hashes: 256 KiB in, in L2 */
#define RUNS 200

static unsigned char level[64 * PAIRS], out[32 * PAIRS];

typedef void (*pairs_fn)(unsigned char, const unsigned char *, unsigned char *);

static double best_cycles(void (*run)(void *), void *arg, double blocks)
{
    unsigned long long best = ~0ULL, t0, t;
    int r;
    for (r = 0; r < RUNS; r++) {
        t0 = __rdtsc();
        run(arg);
        t = __rdtsc() - t0;
        if (t < best)
            best = t;
    }
    return (double)best / blocks;
}

struct interleave { pairs_fn fn; int ways; };

static void run_interleave(void *arg)
{
    struct interleave *w = arg;
    size_t i;
    for (i = 0; i + (size_t)w->ways <= PAIRS; i += (size_t)w->ways)
        w->fn(1, level + 64 * i, out + 32 * i);
}

static void run_pairs(void *arg)
{
    (void)arg;
    mpt_sha256_pairs(1, level, PAIRS, out);
}

static const unsigned char *leaf_ptrs[PAIRS];
static size_t leaf_lens[PAIRS];

static void run_leaves(void *arg)
{
    (void)arg;
    mpt_sha256_many(0, 1, leaf_ptrs, leaf_lens, PAIRS, out);
}

int main(void)
{
    static const char *names[] = {"scalar", "avx2", "avx512", "shani"};
    static unsigned char leaves[100 * PAIRS];
    size_t i;
    int b;

    for (i = 0; i < sizeof(level); i++)
        level[i] = (unsigned char)(i * 131 + 7);
    for (i = 0; i < sizeof(leaves); i++)
        leaves[i] = (unsigned char)(i * 97 + 3);
    for (i = 0; i < PAIRS; i++) {
        leaf_ptrs[i] = leaves + 100 * i;
        leaf_lens[i] = 100;
    }
    /* A 65-byte inner node and a 101-byte leaf are two blocks each. */
    printf("cycles per block (RDTSC, best of %d)\n", RUNS);
    for (b = 0; b < (int)(sizeof(names) / sizeof(names[0])); b++) {
        if (mpt_sha256_set_backend(names[b]) != 0) {
            printf("  %-8s not supported here\n", names[b]);
            continue;
        }
        printf("  %-8s pairs (65 B) %7.1f   leaves (101 B) %7.1f\n", names[b],
               best_cycles(run_pairs, NULL, 2.0 * PAIRS), best_cycles(run_leaves, NULL, 2.0 * PAIRS));
    }
#ifdef MPT_SHA256_HAVE_SHANI
    if (backend_supported(BACKEND_SHANI)) {
        struct interleave w2 = {shani_pairs_x2, 2}, w3 = {shani_pairs_x3, 3}, w4 = {shani_pairs_x4, 4};
        /* Same digests whatever the width. */
        static unsigned char ref[32 * PAIRS];
        run_interleave(&w2);
        memcpy(ref, out, sizeof(ref));
        run_interleave(&w4);
        if (memcmp(ref, out, 32 * (PAIRS - PAIRS % 12)) != 0) {
            printf("4-way digests differ from 2-way\n");
            return 1;
        }
        printf("SHA-NI interleave, pairs: 2-way %.1f  3-way %.1f  4-way %.1f\n",
               best_cycles(run_interleave, &w2, 2.0 * PAIRS),
               best_cycles(run_interleave, &w3, 2.0 * (PAIRS - PAIRS % 3)),
               best_cycles(run_interleave, &w4, 2.0 * PAIRS));
    }
#endif
    return 0;
}
