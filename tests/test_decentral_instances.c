/* tests/test_decentral_instances.c: generated DT-FM instances, the lower
 * bound (against the exhaustive optimum and hand arithmetic) and the
 * searchers on instances whose optimum is known. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "decentral.h"
#include "testutil.h"

/* dtfm_search's cost with method and max_evals, the rest default. */
static double search_cost(const dtfm_problem *p, int method, long evals)
{
    return tu_dtfm_search(p, method, evals, 0, NULL);
}

/* The bound never exceeds the optimum: exhaustive search (every balanced
 * partition) on random instances of 8-16 devices, with and without
 * per-device compute times. */
START_TEST(test_bound_below_exhaustive_optimum)
{
    static const int sizes[][2] = {{8, 2}, {8, 4}, {9, 3}, {10, 5}, {12, 3},
                                   {12, 4}, {12, 6}, {14, 7}, {16, 4}};
    util_pcg32 rng;
    int i, d;

    util_pcg32_seed(&rng, 77u, 1u);
    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
        dtfm_problem p, q;
        dtfm_bound b;
        double opt;

        ck_assert_int_eq(dtfm_generate_regional(&rng, sizes[i][0], sizes[i][1], &p, NULL),
                         UTIL_OK);
        opt = search_cost(&p, DTFM_EXACT, 0);
        ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
        ck_assert_msg(b.total_s <= opt * (1 + 1e-12), "bound %g above optimum %g",
                      b.total_s, opt);
        ck_assert(b.dp_s > 0 && b.pp_s > 0 && b.compute_s == 0.0);
        ck_assert_double_eq_tol(b.total_s, b.dp_s + b.pp_s, 1e-12);
        /* the same with compute times */
        ck_assert_int_eq(dtfm_problem_alloc(&q, p.n, p.d_pp, 1, NULL), UTIL_OK);
        memcpy(q.lat, p.lat, (size_t)p.n * (size_t)p.n * sizeof *p.lat);
        memcpy(q.bw, p.bw, (size_t)p.n * (size_t)p.n * sizeof *p.bw);
        q.c_pp = p.c_pp;
        q.c_dp = p.c_dp;
        for (d = 0; d < p.n; d++)
            q.compute[d] = 1.0 + 3.0 * util_pcg32_double(&rng);
        opt = search_cost(&q, DTFM_EXACT, 0);
        ck_assert_int_eq(dtfm_lower_bound(&q, &b, NULL), UTIL_OK);
        ck_assert(b.compute_s >= q.d_pp * 1.0);
        ck_assert_msg(b.total_s <= opt * (1 + 1e-12), "bound %g above optimum %g "
                      "with compute", b.total_s, opt);
        dtfm_problem_free(&q);
        dtfm_problem_free(&p);
    }
}
END_TEST

/* Hand-worked bound: 4 devices, d_pp 2 (g = 2), c_dp = c_pp = 1e9 bytes,
 * latency 0, symmetric bandwidths (GB/s) 0-1: 10, 2-3: 5, every other
 * pair 1.
 *   w_dp = 2 c_dp / (g b) = 1 / b (b in GB/s), w_pp = 2 c_pp / b = 2 / b.
 *   DP bound: each device's g - 1 = 1 lightest w_dp: 0.1, 0.1, 0.2, 0.2,
 *     max 0.2.
 *   nu (lightest w_pp): 0.2, 0.2, 0.4, 0.4; descending 0.4 0.4 0.2 0.2;
 *     PP bound = nu_(1 * g) = nu_(2) = 0.2.
 *   Total 0.4.  The three partitions: {0,1} {2,3}: DP = max(0.1, 0.2) =
 *   0.2, the edge only has cross pairs at w_pp 2 / 1 = 2, total 2.2;
 *   {0,2} {1,3} and {0,3} {1,2}: DP = w_dp 1, the edge matches 0-1 (0.2)
 *   and 2-3 (0.4), bottleneck 0.4, total 1.4 = the optimum >= 0.4. */
START_TEST(test_bound_hand_worked)
{
    dtfm_problem p;
    dtfm_bound b;
    int i, j;

    ck_assert_int_eq(dtfm_problem_alloc(&p, 4, 2, 0, NULL), UTIL_OK);
    p.c_pp = p.c_dp = 1e9;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++) {
            double b_gbs = 1.0;
            if (i / 2 == j / 2)
                b_gbs = i < 2 ? 10.0 : 5.0;
            p.bw[i * 4 + j] = b_gbs * 1e9;
        }
    ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
    ck_assert_double_eq_tol(b.dp_s, 0.2, 1e-12);
    ck_assert_double_eq_tol(b.pp_s, 0.2, 1e-12);
    ck_assert_double_eq_tol(b.total_s, 0.4, 1e-12);
    ck_assert_double_eq_tol(search_cost(&p, DTFM_EXACT, 0), 1.4, 1e-12);
    dtfm_problem_free(&p);
}
END_TEST

/* Planted instances: the hidden schedule's cost is the bound, by hand:
 * grid links 0.2 ms and 100 Gbit/s = 12.5e9 B/s;
 *   w_dp = 2 (0.0002 + 0.65e9 / (g 12.5e9)),
 *   w_pp = 2 (0.0002 + 0.512e9 / 12.5e9) = 2 (0.0002 + 0.04096) = 0.08232;
 * cost = (g - 1) w_dp + (k - 1) w_pp.  n = 8, k = 2, g = 4: w_dp =
 * 2 (0.0002 + 0.013) = 0.0264, cost = 3 * 0.0264 + 0.08232 = 0.16152, the
 * exhaustive optimum.  n = 64, k = 8, g = 8: w_dp = 2 (0.0002 + 0.0065) =
 * 0.0134, cost = 7 * 0.0134 + 7 * 0.08232 = 0.67004. */
START_TEST(test_planted_optimum)
{
    static const struct { int n, k; double cost; } cases[] = {
        {8, 2, 0.16152}, {64, 8, 0.67004}};
    int i, d;

    for (i = 0; i < 2; i++) {
        dtfm_gen_params gp;
        dtfm_problem p;
        dtfm_bound b;
        dtfm_result r;
        int planted[64], count[8] = {0};

        dtfm_gen_params_init(&gp);
        gp.kind = DTFM_GEN_PLANTED;
        gp.n = cases[i].n;
        gp.d_pp = cases[i].k;
        gp.seed = 11;
        ck_assert_int_eq(dtfm_generate(&gp, &p, planted, NULL), UTIL_OK);
        for (d = 0; d < p.n; d++) {
            ck_assert(planted[d] >= 0 && planted[d] < p.d_pp);
            count[planted[d]]++;
        }
        for (d = 0; d < p.d_pp; d++)
            ck_assert_int_eq(count[d], p.d_dp);
        ck_assert_int_eq(dtfm_evaluate(&p, planted, &r, NULL), UTIL_OK);
        ck_assert_double_eq_tol(r.total_s, cases[i].cost, 1e-9);
        ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
        ck_assert_double_eq_tol(b.total_s, cases[i].cost, 1e-9);
        if (p.n <= DTFM_EXACT_MAX)
            ck_assert_double_eq_tol(search_cost(&p, DTFM_EXACT, 0), cases[i].cost, 1e-9);
        else /* the GA within 1% of the proven optimum, reproducibly */
            ck_assert_double_le(search_cost(&p, DTFM_GA, 30000), cases[i].cost * 1.01);
        dtfm_result_free(&r);
        dtfm_problem_free(&p);
    }
}
END_TEST

/* Same seed, same instance; another seed or kind, another; asymmetric
 * matrices; bad sizes are errors. */
START_TEST(test_generator)
{
    dtfm_gen_params gp;
    dtfm_problem a, b;
    util_error err;
    int planted[128], i, same = 1, asym = 0;
    size_t nn = 128 * 128;

    dtfm_gen_params_init(&gp);
    ck_assert_int_eq(gp.kind, DTFM_GEN_GEO);
    gp.n = 128;
    gp.d_pp = 8;
    gp.seed = 5;
    ck_assert_int_eq(dtfm_generate(&gp, &a, planted, NULL), UTIL_OK);
    ck_assert_int_eq(dtfm_generate(&gp, &b, NULL, NULL), UTIL_OK);
    ck_assert_int_eq(memcmp(a.lat, b.lat, nn * sizeof *a.lat), 0);
    ck_assert_int_eq(memcmp(a.bw, b.bw, nn * sizeof *a.bw), 0);
    ck_assert_int_eq(planted[0], -1); /* no hidden schedule in a geo instance */
    ck_assert_int_eq(dtfm_problem_check(&a, NULL), UTIL_OK);
    for (i = 0; i < 128; i++)
        asym |= a.lat[i * 128 + (i + 1) % 128] != a.lat[((i + 1) % 128) * 128 + i];
    ck_assert(asym);
    dtfm_problem_free(&b);
    gp.seed = 6;
    ck_assert_int_eq(dtfm_generate(&gp, &b, NULL, NULL), UTIL_OK);
    for (i = 0; (size_t)i < nn; i++)
        same &= a.lat[i] == b.lat[i];
    ck_assert(!same);
    dtfm_problem_free(&a);
    dtfm_problem_free(&b);
    ck_assert_str_eq(dtfm_gen_kind_name(DTFM_GEN_PLANTED), "planted");
    ck_assert_ptr_null(dtfm_gen_kind_name(DTFM_GEN_NKINDS));
    gp.d_pp = 7; /* does not divide 128 */
    ck_assert_int_eq(dtfm_generate(&gp, &a, NULL, &err), UTIL_EINVAL);
    ck_assert(strstr(err.msg, "d_pp 7") != NULL);
    gp.d_pp = 8;
    gp.kind = 9;
    ck_assert_int_eq(dtfm_generate(&gp, &a, NULL, &err), UTIL_EINVAL);
}
END_TEST

/* The regional generator: the same seed gives the same instance; every
 * value lies in its documented range; the +-20% noise multiplies latency
 * and divides bandwidth, so latency * bandwidth of a directed pair is the
 * noiseless product of its two regions, the same in both directions, and
 * 5 ms * 2 Gbit/s = 5e-3 * 2.5e8 B/s = 1.25e6 B for a pair in one region;
 * bad sizes are errors that leave the generator where it was. */
START_TEST(test_regional_generator)
{
    util_pcg32 r1, r2;
    dtfm_problem a, b;
    util_error err;
    int i, j, n = 40, inside = 0;

    util_pcg32_seed(&r1, 11u, 3u);
    util_pcg32_seed(&r2, 11u, 3u);
    ck_assert_int_eq(dtfm_generate_regional(&r1, n, 5, &a, NULL), UTIL_OK);
    ck_assert_int_eq(dtfm_generate_regional(&r2, n, 5, &b, NULL), UTIL_OK);
    ck_assert_int_eq(memcmp(a.lat, b.lat, (size_t)(n * n) * sizeof *a.lat), 0);
    ck_assert_int_eq(memcmp(a.bw, b.bw, (size_t)(n * n) * sizeof *a.bw), 0);
    ck_assert_int_eq(a.n, n);
    ck_assert_int_eq(a.d_pp, 5);
    ck_assert_int_eq(a.d_dp, 8);
    ck_assert_ptr_null(a.compute);
    ck_assert_double_eq(a.c_pp, 0.512e9);
    ck_assert_double_eq(a.c_dp, 0.65e9);
    ck_assert_int_eq(dtfm_problem_check(&a, NULL), UTIL_OK);
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double l = a.lat[i * n + j], w = a.bw[i * n + j];
            double prod = l * w, back = a.lat[j * n + i] * a.bw[j * n + i];
            if (i == j)
                continue;
            /* latency 5 ms or 10..250 ms, times 0.8..1.2 */
            ck_assert(l >= 0.8 * 5e-3 && l <= 1.2 * 0.25);
            /* bandwidth 0.3..2 Gbit/s over 0.8..1.2 */
            ck_assert(w >= 0.3e9 / 8 / 1.2 && w <= 2e9 / 8 / 0.8);
            ck_assert_double_eq_tol(prod, back, 1e-9 * prod);
            if (fabs(prod - 1.25e6) < 1e-6 * 1.25e6) {
                inside++;
                ck_assert(l <= 1.2 * 5e-3);
            }
        }
    /* 40 devices in at most 4 regions: some region holds >= 10 devices */
    ck_assert_int_ge(inside, 10 * 9);
    dtfm_problem_free(&b);
    /* the next instance from the same generator is another one */
    ck_assert_int_eq(dtfm_generate_regional(&r1, n, 5, &b, NULL), UTIL_OK);
    ck_assert(memcmp(a.lat, b.lat, (size_t)(n * n) * sizeof *a.lat) != 0);
    dtfm_problem_free(&a);
    dtfm_problem_free(&b);
    /* errors: r1 and r2 stay in step */
    util_pcg32_seed(&r1, 12u, 3u);
    util_pcg32_seed(&r2, 12u, 3u);
    ck_assert_int_eq(dtfm_generate_regional(&r1, 12, 5, &a, &err), UTIL_EINVAL);
    ck_assert(strstr(err.msg, "d_pp 5") != NULL);
    ck_assert_ptr_null(a.lat);
    ck_assert_int_eq(dtfm_generate_regional(&r1, 1, 1, &a, &err), UTIL_EINVAL);
    ck_assert_int_eq(util_pcg32_next(&r1), util_pcg32_next(&r2));
}
END_TEST

/* A budget spent before the search starts (loading took it all): a
 * schedule still comes back, with the time-out status. */
START_TEST(test_budget_spent_before_the_search)
{
    dtfm_gen_params gp;
    dtfm_problem p;
    dtfm_search_params sp;
    dtfm_search_result r;
    dtfm_result e;

    dtfm_gen_params_init(&gp);
    ck_assert_int_eq(dtfm_generate(&gp, &p, NULL, NULL), UTIL_OK);
    dtfm_search_params_init(&sp);
    sp.seconds = 1.0;
    sp.budget_start_s = dtfm_clock_s() - 5.0;
    sp.stall = 1000000000L;
    ck_assert_int_eq(dtfm_search(&p, &sp, &r, NULL), UTIL_ETIMEOUT);
    ck_assert_int_eq(r.timed_out, 1);
    ck_assert(r.evaluated >= 1);
    ck_assert_int_eq(dtfm_evaluate(&p, r.group_of, &e, NULL), UTIL_OK);
    ck_assert_double_eq_tol(e.total_s, r.cost_s, 1e-12);
    dtfm_result_free(&e);
    dtfm_search_result_free(&r);
    dtfm_problem_free(&p);
}
END_TEST

static Suite *instances_suite(void)
{
    Suite *s = suite_create("dtfm-instances");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_bound_below_exhaustive_optimum);
    tcase_add_test(tc, test_bound_hand_worked);
    tcase_add_test(tc, test_planted_optimum);
    tcase_add_test(tc, test_generator);
    tcase_add_test(tc, test_regional_generator);
    tcase_add_test(tc, test_budget_spent_before_the_search);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(instances_suite());
}
