/* tests/test_util_pcg32.c: PCG32 against the reference pcg32-demo output,
 * range and rough uniformity of the derived draws. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "util.h"
#include "testutil.h"

START_TEST(test_reference_sequence)
{
    /* pcg32-demo: pcg32_srandom_r(&rng, 42u, 54u) */
    static const uint32_t want[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                     0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    util_pcg32 rng;
    int i;

    util_pcg32_seed(&rng, 42u, 54u);
    ck_assert(rng.inc & 1u);
    for (i = 0; i < 6; i++)
        ck_assert_uint_eq(util_pcg32_next(&rng), want[i]);
}
END_TEST

START_TEST(test_bounded_range_uniform)
{
    util_pcg32 rng;
    long count[10] = {0};
    double chi2 = 0.0, expect = 10000.0, d;
    uint32_t r, bound;
    int i;

    util_pcg32_seed(&rng, 12345u, 7u);
    for (i = 0; i < 100000; i++) {
        r = util_pcg32_bounded(&rng, 10u);
        ck_assert_uint_lt(r, 10u);
        count[r]++;
    }
    for (i = 0; i < 10; i++) {
        d = (double)count[i] - expect;
        chi2 += d * d / expect;
    }
    /* 9 degrees of freedom: the 99.9% quantile is about 27.9 */
    ck_assert_double_lt(chi2, 40.0);

    for (bound = 1u; bound < 200u; bound += 7u)
        for (i = 0; i < 200; i++)
            ck_assert_uint_lt(util_pcg32_bounded(&rng, bound), bound);
    for (i = 0; i < 1000; i++)
        ck_assert_uint_lt(util_pcg32_bounded(&rng, 0x80000001u),
                          0x80000001u);
    ck_assert_uint_eq(util_pcg32_bounded(&rng, 1u), 0u);
}
END_TEST

START_TEST(test_double_range)
{
    util_pcg32 rng;
    double x, sum = 0.0, lo = 1.0, hi = 0.0;
    int i, n = 100000;

    util_pcg32_seed(&rng, 99u, 3u);
    for (i = 0; i < n; i++) {
        x = util_pcg32_double(&rng);
        ck_assert(x >= 0.0 && x < 1.0);
        sum += x;
        if (x < lo)
            lo = x;
        if (x > hi)
            hi = x;
    }
    ck_assert_double_lt(lo, 1e-3);
    ck_assert_double_gt(hi, 1.0 - 1e-3);
    ck_assert_double_lt(sum / n, 0.51);
    ck_assert_double_gt(sum / n, 0.49);
}
END_TEST

START_TEST(test_same_seed_same_sequence)
{
    util_pcg32 a, b, c;
    int i, differ = 0;

    util_pcg32_seed(&a, 2024u, 11u);
    util_pcg32_seed(&b, 2024u, 11u);
    util_pcg32_seed(&c, 2024u, 12u);
    for (i = 0; i < 1000; i++) {
        uint32_t x = util_pcg32_next(&a);
        ck_assert_uint_eq(x, util_pcg32_next(&b));
        if (x != util_pcg32_next(&c))
            differ++;
    }
    /* another stream: practically every output differs */
    ck_assert_int_gt(differ, 990);
}
END_TEST

static Suite *pcg32_suite(void)
{
    Suite *s = suite_create("pcg32");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_reference_sequence);
    tcase_add_test(tc, test_bounded_range_uniform);
    tcase_add_test(tc, test_double_range);
    tcase_add_test(tc, test_same_seed_same_sequence);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(pcg32_suite());
}
