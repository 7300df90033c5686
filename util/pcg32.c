/* util/pcg32.c: PCG32 random numbers (O'Neill 2014, XSH RR 64/32),
 * bit-compatible with pcg32_srandom_r / pcg32_random_r of the reference
 * C implementation. */
#include <stdint.h>

#include "util.h"

#define PCG32_MULT 6364136223846793005ULL

static void pcg32_step(util_pcg32 *rng)
{
    rng->state = rng->state * PCG32_MULT + rng->inc;
}

void util_pcg32_seed(util_pcg32 *rng, uint64_t initstate,
                       uint64_t initseq)
{
    rng->state = 0U;
    rng->inc = (initseq << 1u) | 1u;
    pcg32_step(rng);
    rng->state += initstate;
    pcg32_step(rng);
}

uint32_t util_pcg32_next(util_pcg32 *rng)
{
    uint64_t old = rng->state;
    uint32_t xorshifted, rot;

    pcg32_step(rng);
    xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

uint32_t util_pcg32_bounded(util_pcg32 *rng, uint32_t bound)
{
    uint32_t threshold, r;

    if (bound == 0U)
        return 0U;
    /* 2^32 mod bound: outputs below it would bias the modulo */
    threshold = (uint32_t)(0U - bound) % bound;
    for (;;) {
        r = util_pcg32_next(rng);
        if (r >= threshold)
            return r % bound;
    }
}

double util_pcg32_double(util_pcg32 *rng)
{
    uint32_t a = util_pcg32_next(rng) >> 5u;  /* 27 bits */
    uint32_t b = util_pcg32_next(rng) >> 6u;  /* 26 bits */

    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}
