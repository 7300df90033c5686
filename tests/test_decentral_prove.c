/* tests/test_decentral_prove.c: the exact search over classes of
 * interchangeable devices (dtfm_prove) against the exhaustive optimum
 * (every balanced partition, DTFM_EXACT) and by hand. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "decentral.h"
#include "testutil.h"

/* Devices in nreg regions; links depend on the two regions only, or,
 * with noise, every pair and direction gets its own +-20%.  reg gets the
 * region of each device. */
static void region_instance(util_pcg32 *rng, int n, int d_pp, int nreg, int noise,
                            int with_compute, dtfm_problem *p, int *reg)
{
    double rl[6][6], rb[6][6], rc[6];
    int i, j;

    ck_assert_int_le(nreg, 6);
    ck_assert_int_eq(dtfm_problem_alloc(p, n, d_pp, with_compute, NULL), UTIL_OK);
    p->c_pp = 0.512e9;
    p->c_dp = 0.65e9;
    for (i = 0; i < nreg; i++) {
        rc[i] = 0.5 + util_pcg32_double(rng);
        for (j = i; j < nreg; j++) {
            rl[i][j] = rl[j][i] = i == j ? 5e-3 : 0.01 + 0.24 * util_pcg32_double(rng);
            rb[i][j] = rb[j][i] = (i == j ? 2.0 : 0.3 + util_pcg32_double(rng)) * 1e9 / 8;
        }
    }
    for (i = 0; i < n; i++)
        reg[i] = (int)util_pcg32_bounded(rng, (uint32_t)nreg);
    for (i = 0; i < n; i++) {
        if (with_compute)
            p->compute[i] = rc[reg[i]];
        for (j = 0; j < n; j++) {
            double f = noise ? 0.8 + 0.4 * util_pcg32_double(rng) : 1.0;
            if (i == j)
                continue;
            p->lat[i * n + j] = rl[reg[i]][reg[j]] * f;
            p->bw[i * n + j] = rb[reg[i]][reg[j]] / f;
        }
    }
}

static double exhaustive(const dtfm_problem *p)
{
    dtfm_search_params sp;
    dtfm_search_result r;
    double c;

    dtfm_search_params_init(&sp);
    sp.method = DTFM_EXACT;
    ck_assert_int_eq(dtfm_search(p, &sp, &r, NULL), UTIL_OK);
    c = r.cost_s;
    dtfm_search_result_free(&r);
    return c;
}

/* Distinct regions among the devices: the classes a noise-free instance
 * must have (two regions could tie on every link only by chance). */
static int regions_used(const int *reg, int n)
{
    int seen[6] = {0}, i, c = 0;

    for (i = 0; i < n; i++)
        if (!seen[reg[i]]++)
            c++;
    return c;
}

/* Complete search = the exhaustive optimum, on 8-12 devices, with links
 * per region (few classes) and with noise (every device its own class),
 * with and without compute times; its schedule costs what it reports. */
START_TEST(test_prove_equals_exhaustive_optimum)
{
    static const int sizes[][3] = {{8, 2, 2}, {8, 4, 3}, {9, 3, 3}, {10, 5, 2},
                                   {12, 3, 4}, {12, 4, 3}, {12, 6, 5}};
    util_pcg32 rng;
    int i, noise, comp, reg[16];

    util_pcg32_seed(&rng, 2026u, 5u);
    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (noise = 0; noise <= 1; noise++)
            for (comp = 0; comp <= 1; comp++) {
                dtfm_problem p;
                dtfm_prove_params pp;
                dtfm_proof pr;
                dtfm_result e;
                dtfm_bound b;
                double opt;

                region_instance(&rng, sizes[i][0], sizes[i][1], sizes[i][2], noise, comp,
                                &p, reg);
                opt = exhaustive(&p);
                dtfm_prove_params_init(&pp);
                ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
                ck_assert_int_eq(pr.complete, 1);
                ck_assert_int_eq(pr.classes, noise ? p.n : regions_used(reg, p.n));
                ck_assert_msg(fabs(pr.best_s - opt) <= 1e-9 * opt,
                              "n %d d_pp %d noise %d: proof %.12g, exhaustive %.12g",
                              p.n, p.d_pp, noise, pr.best_s, opt);
                ck_assert_double_eq_tol(pr.lower_s, pr.best_s, 1e-9 * opt);
                ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
                ck_assert(pr.lower_s >= b.total_s * (1 - 1e-12));
                ck_assert_ptr_nonnull(pr.group_of);
                ck_assert_int_eq(dtfm_evaluate(&p, pr.group_of, &e, NULL), UTIL_OK);
                ck_assert_double_eq_tol(e.total_s, pr.best_s, 1e-12 * opt);
                dtfm_result_free(&e);
                dtfm_proof_free(&pr);

                /* with the optimum as the incumbent nothing is cheaper:
                 * no schedule returned, the bound meets the incumbent */
                pp.upper_s = opt;
                ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
                ck_assert_int_eq(pr.complete, 1);
                ck_assert_ptr_null(pr.group_of);
                ck_assert_double_eq(pr.best_s, opt);
                ck_assert_double_eq(pr.lower_s, opt);
                dtfm_proof_free(&pr);

                /* an incumbent far above: the search finds the optimum */
                pp.upper_s = 3.0 * opt;
                ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
                ck_assert_msg(fabs(pr.best_s - opt) <= 1e-9 * opt, "incumbent 3x");
                dtfm_proof_free(&pr);
                dtfm_problem_free(&p);
            }
}
END_TEST

/* Spot-like (DT-FM case 2 in small): multi-GPU nodes fast inside,
 * single GPUs, every other link slow; 12 devices.  The exhaustive
 * optimum and the class search agree for several node sizes and stage
 * counts. */
START_TEST(test_prove_spot_like)
{
    static const int shapes[][3] = {{2, 3, 4}, {3, 2, 4}, {4, 2, 3}, {2, 4, 2}};
    int sh;

    for (sh = 0; sh < 4; sh++) {
        int per = shapes[sh][0], nodes = shapes[sh][1], d_pp = shapes[sh][2];
        int n = 12, i, j;
        dtfm_problem p;
        dtfm_prove_params pp;
        dtfm_proof pr;
        double opt;

        ck_assert_int_eq(dtfm_problem_alloc(&p, n, d_pp, 0, NULL), UTIL_OK);
        p.c_pp = 0.512e9;
        p.c_dp = 0.65e9;
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                int same = i / per == j / per && i < per * nodes && j < per * nodes;
                if (i == j)
                    continue;
                p.lat[i * n + j] = same ? 1e-5 : 1e-4;
                p.bw[i * n + j] = (same ? 100.0 : 10.0) * 1e9 / 8;
            }
        opt = exhaustive(&p);
        dtfm_prove_params_init(&pp);
        ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
        ck_assert_int_eq(pr.complete, 1);
        /* one class per node and one for the single GPUs */
        ck_assert_int_eq(pr.classes, nodes + 1);
        ck_assert_msg(fabs(pr.best_s - opt) <= 1e-9 * opt, "shape %d: proof %.12g, "
                      "exhaustive %.12g", sh, pr.best_s, opt);
        dtfm_proof_free(&pr);
        dtfm_problem_free(&p);
    }
}
END_TEST

/* Stopped by its node budget, the search still returns a valid bound:
 * between the simple bound and the exhaustive optimum. */
START_TEST(test_prove_budget_bound_valid)
{
    util_pcg32 rng;
    int i, reg[12], stopped = 0;

    util_pcg32_seed(&rng, 9u, 3u);
    for (i = 0; i < 6; i++) {
        dtfm_problem p;
        dtfm_prove_params pp;
        dtfm_proof pr;
        dtfm_bound b;
        double opt;

        region_instance(&rng, 12, i % 2 ? 3 : 4, 5, 1, 0, &p, reg);
        opt = exhaustive(&p);
        ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
        dtfm_prove_params_init(&pp);
        pp.max_nodes = 1024;
        ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
        stopped += !pr.complete;
        ck_assert_msg(pr.lower_s <= opt * (1 + 1e-12), "bound %.12g above optimum %.12g",
                      pr.lower_s, opt);
        ck_assert(pr.lower_s >= b.total_s);
        ck_assert(pr.best_s >= opt * (1 - 1e-12));
        dtfm_proof_free(&pr);
        dtfm_problem_free(&p);
    }
    /* the budget did stop some searches (otherwise this proves nothing) */
    ck_assert_int_gt(stopped, 0);
}
END_TEST

/* Hand-worked (the instance of test_decentral_instances' hand bound):
 * 4 devices, d_pp 2, c_dp = c_pp = 1e9 B, no latency, bandwidth (GB/s)
 * 0-1: 10, 2-3: 5, others 1.  Classes {0,1} and {2,3} (each device's
 * links to the other class are all 1 GB/s).  Partitions: {0,1}{2,3}
 * costs 0.2 + 2 = 2.2, the two mixed ones 1 + 0.4 = 1.4 (see that test),
 * so the optimum is 1.4 while dtfm_lower_bound gives 0.4. */
START_TEST(test_prove_hand_worked)
{
    dtfm_problem p;
    dtfm_prove_params pp;
    dtfm_proof pr;
    int i, j;

    ck_assert_int_eq(dtfm_problem_alloc(&p, 4, 2, 0, NULL), UTIL_OK);
    p.c_dp = p.c_pp = 1e9;
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++)
            if (i != j)
                p.bw[i * 4 + j] = 1e9;
    p.bw[0 * 4 + 1] = p.bw[1 * 4 + 0] = 10e9;
    p.bw[2 * 4 + 3] = p.bw[3 * 4 + 2] = 5e9;
    dtfm_prove_params_init(&pp);
    ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
    ck_assert_int_eq(pr.classes, 2);
    /* compositions of a 2-device stage over classes of 2: (2,0) (1,1) (0,2) */
    ck_assert_int_eq(pr.compositions, 3);
    ck_assert_int_eq(pr.complete, 1);
    ck_assert_double_eq_tol(pr.best_s, 1.4, 1e-12);
    ck_assert_double_eq_tol(pr.lower_s, 1.4, 1e-12);
    ck_assert_int_ne(pr.group_of[0], pr.group_of[1]);
    ck_assert_int_ne(pr.group_of[2], pr.group_of[3]);
    dtfm_proof_free(&pr);
    dtfm_problem_free(&p);
}
END_TEST

/* The coarse-instance bound stays below the exhaustive optimum when the
 * devices are merged into few clusters (compositions capped at 5-40), and
 * equals it when no merging is needed (every device its own cluster). */
START_TEST(test_relaxed_bound_below_optimum)
{
    static const int sizes[][3] = {{8, 2, 3}, {9, 3, 3}, {10, 5, 4}, {12, 3, 4},
                                   {12, 4, 3}, {12, 6, 5}};
    util_pcg32 rng;
    int i, noise, reg[12], merged = 0;

    util_pcg32_seed(&rng, 404u, 2u);
    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++)
        for (noise = 0; noise <= 1; noise++) {
            dtfm_problem p;
            dtfm_prove_params pp;
            dtfm_proof pr;
            double opt;
            long cap;
            int ncl;

            region_instance(&rng, sizes[i][0], sizes[i][1], sizes[i][2], noise, noise,
                            &p, reg);
            opt = exhaustive(&p);
            for (cap = 5; cap <= 40; cap *= 2) {
                dtfm_prove_params_init(&pp);
                pp.max_compositions = cap;
                ck_assert_int_eq(dtfm_relaxed_bound(&p, &pp, &pr, &ncl, NULL), UTIL_OK);
                ck_assert_msg(pr.lower_s <= opt * (1 + 1e-12),
                              "n %d cap %ld: relaxed bound %.12g above optimum %.12g",
                              p.n, cap, pr.lower_s, opt);
                ck_assert_ptr_null(pr.group_of);
                merged += ncl < p.n;
                dtfm_proof_free(&pr);
            }
            dtfm_prove_params_init(&pp);
            ck_assert_int_eq(dtfm_relaxed_bound(&p, &pp, &pr, &ncl, NULL), UTIL_OK);
            ck_assert_int_eq(ncl, p.n);
            ck_assert_int_eq(pr.complete, 1);
            ck_assert_msg(fabs(pr.lower_s - opt) <= 1e-9 * opt, "unmerged %.12g vs %.12g",
                          pr.lower_s, opt);
            dtfm_proof_free(&pr);
            dtfm_problem_free(&p);
        }
    ck_assert_int_gt(merged, 0);
}
END_TEST

/* More classes than the search handles: declined, the simple bound. */
START_TEST(test_prove_declines)
{
    dtfm_gen_params gp;
    dtfm_problem p;
    dtfm_prove_params pp;
    dtfm_proof pr;
    dtfm_bound b;

    dtfm_gen_params_init(&gp); /* geo, 64 devices, every link its own noise */
    ck_assert_int_eq(dtfm_generate(&gp, &p, NULL, NULL), UTIL_OK);
    ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
    dtfm_prove_params_init(&pp);
    ck_assert_int_eq(dtfm_prove(&p, &pp, &pr, NULL), UTIL_OK);
    ck_assert_int_eq(pr.classes, 0);
    ck_assert_int_eq(pr.complete, 0);
    ck_assert_ptr_null(pr.group_of);
    ck_assert_double_eq(pr.lower_s, b.total_s);
    dtfm_proof_free(&pr);
    dtfm_problem_free(&p);
}
END_TEST

/* --searcher exact beyond DTFM_EXACT_MAX devices: by classes when the
 * devices have few, an error otherwise. */
START_TEST(test_search_exact_by_classes)
{
    util_pcg32 rng;
    dtfm_problem p;
    dtfm_search_params sp;
    dtfm_search_result r, ga;
    dtfm_gen_params gp;
    dtfm_bound b;
    util_error err;
    int reg[24];

    util_pcg32_seed(&rng, 31u, 7u);
    region_instance(&rng, 24, 4, 4, 0, 0, &p, reg);
    dtfm_search_params_init(&sp);
    sp.method = DTFM_EXACT;
    ck_assert_int_eq(dtfm_search(&p, &sp, &r, NULL), UTIL_OK);
    sp.method = DTFM_GA;
    sp.max_evals = 20000;
    ck_assert_int_eq(dtfm_search(&p, &sp, &ga, NULL), UTIL_OK);
    ck_assert_int_eq(dtfm_lower_bound(&p, &b, NULL), UTIL_OK);
    /* the optimum: no dearer than the GA's schedule, above the bound */
    ck_assert(r.cost_s <= ga.cost_s * (1 + 1e-12));
    ck_assert(r.cost_s >= b.total_s);
    dtfm_search_result_free(&r);
    dtfm_search_result_free(&ga);
    dtfm_problem_free(&p);

    dtfm_gen_params_init(&gp); /* 64 devices, each its own class */
    ck_assert_int_eq(dtfm_generate(&gp, &p, NULL, NULL), UTIL_OK);
    dtfm_search_params_init(&sp);
    sp.method = DTFM_EXACT;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(dtfm_search(&p, &sp, &r, &err), UTIL_EINVAL);
    ck_assert(strstr(err.msg, "at most 16 devices") != NULL);
    dtfm_problem_free(&p);
}
END_TEST

static Suite *prove_suite(void)
{
    Suite *s = suite_create("dtfm-prove");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_prove_equals_exhaustive_optimum);
    tcase_add_test(tc, test_prove_spot_like);
    tcase_add_test(tc, test_prove_budget_bound_valid);
    tcase_add_test(tc, test_prove_hand_worked);
    tcase_add_test(tc, test_prove_declines);
    tcase_add_test(tc, test_relaxed_bound_below_optimum);
    tcase_add_test(tc, test_search_exact_by_classes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(prove_suite());
}
