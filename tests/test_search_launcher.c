/* tests/test_search_launcher.c: planning for a target launcher
 * (docs/export.md, "Planning for a launcher"): the equal-middle-stages
 * split against brute force, the host rank order and the checks by hand,
 * the parameters a launcher rules out, and the whole search keeping
 * every rule while never predicting a time below the unconstrained one. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "export.h"
#include "testutil.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* ---- the split of Megatron-LM core_r0.9.0 against brute force ------- */

/* AMP eq. 5 by hand: (gas - 1) max_j t_j + sum_j t_j + sum_j e_j; HUGE_VAL
 * when a stage's memory exceeds its cap. */
static double eq5(const search_dp_input *in, const int *b)
{
    double mx = 0.0, sum = 0.0;
    int j, l;

    for (j = 0; j < in->k; j++) {
        double t = 0.0, m = 0.0;
        for (l = b[j]; l < b[j + 1]; l++) {
            t += in->t[j * in->L + l];
            m += in->mem[j * in->L + l];
        }
        if (m > in->cap[j])
            return HUGE_VAL;
        if (t > mx)
            mx = t;
        sum += t;
        if (j + 1 < in->k)
            sum += in->e[j * (in->L + 1) + b[j + 1]];
    }
    return (in->gas - 1) * mx + sum;
}

/* Every composition of L into k positive parts whose middle parts are
 * equal (all parts with even): the least eq5, HUGE_VAL when none fits. */
static double brute_ends(const search_dp_input *in, int even)
{
    int b[8], j, best_set = 0;
    double best = HUGE_VAL;

    /* bounds b[1] < ... < b[k-1] enumerated as an odometer */
    b[0] = 0;
    b[in->k] = in->L;
    for (j = 1; j < in->k; j++)
        b[j] = j;
    for (;;) {
        int ok = 1, mid = b[2] - b[1];
        for (j = 2; j < in->k - 1; j++)
            ok &= b[j + 1] - b[j] == mid;
        if (even)
            for (j = 0; j < in->k; j++)
                ok &= b[j + 1] - b[j] == b[1];
        if (ok) {
            double v = eq5(in, b);
            if (v < best) {
                best = v;
                best_set = 1;
            }
        }
        for (j = in->k - 1; j >= 1 && b[j] == in->L - (in->k - j); j--)
            ;
        if (j < 1)
            break;
        b[j]++;
        for (j = j + 1; j < in->k; j++)
            b[j] = b[j - 1] + 1;
    }
    return best_set ? best : HUGE_VAL;
}

START_TEST(ends_vs_bruteforce)
{
    search_launcher lc;
    util_pcg32 rng;
    int trial, agree = 0, feasible = 0;

    memset(&lc, 0, sizeof lc);
    lc.active = 1;
    lc.split = SEARCH_SPLIT_ENDS;
    util_pcg32_seed(&rng, 42, 7);
    for (trial = 0; trial < 400; trial++) {
        double t[6 * 14], e[5 * 15], mem[6 * 14], cap[6], v, want;
        int bounds[7], k = 3 + (int)util_pcg32_bounded(&rng, 4);
        int L = k + (int)util_pcg32_bounded(&rng, 15 - k), even = trial % 4 == 3, i, rc;
        search_dp_input in = {L, k, 1 + (int)util_pcg32_bounded(&rng, 8), t, e, mem, cap};
        util_error err;
        for (i = 0; i < k * L; i++) {
            t[i] = 0.5 + util_pcg32_double(&rng);
            mem[i] = util_pcg32_double(&rng);
        }
        for (i = 0; i < (k - 1) * (L + 1); i++)
            e[i] = 0.2 * util_pcg32_double(&rng);
        for (i = 0; i < k; i++) /* tight enough that some splits overflow */
            cap[i] = (double)L / k * (0.4 + util_pcg32_double(&rng));
        want = brute_ends(&in, even);
        rc = search_launcher_dp(&in, &lc, even ? 2 : 1, bounds, &v, &err);
        if (want == HUGE_VAL) {
            ck_assert_msg(rc == UTIL_EINFEASIBLE, "trial %d: rc %d, none fits", trial, rc);
            continue;
        }
        feasible++;
        ck_assert_msg(rc == UTIL_OK, "trial %d: rc %d: %s", trial, rc, err.msg);
        ck_assert_int_eq(bounds[0], 0);
        ck_assert_int_eq(bounds[k], L);
        ck_assert_msg(fabs(eq5(&in, bounds) - want) <= 1e-9 * want,
                      "trial %d: %.12g, brute force %.12g", trial, eq5(&in, bounds), want);
        ck_assert(fabs(v - want) <= 1e-9 * want);
        agree++;
    }
    ck_assert_int_ge(feasible, 100); /* the oracle was exercised */
    ck_assert_int_eq(agree, feasible);
}
END_TEST

/* ---- rank order and checks by hand ----------------------------------- */

static void load(const char *cluster, const char *model, fmt_cluster *c, fmt_model *m)
{
    util_error err;

    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    ck_assert_int_eq(fmt_load_cluster(cluster, c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(model, m, &err), UTIL_OK);
}

START_TEST(host_order_by_hand)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    search_launcher lc;
    char why[200];
    int a, b, r;

    load(EX "amp-het.json", EX "gpt2-amp.json", &c, &m);
    ck_assert_int_ge(c.nnodes, 2);
    ck_assert_int_ge(c.nodes[0].gpus, 4);
    ck_assert_int_ge(c.nodes[1].gpus, 4);
    a = c.nodes[0].first_device;
    b = c.nodes[1].first_device;
    memset(&lc, 0, sizeof lc);
    lc.active = 1;
    lc.order = SEARCH_ORDER_HOSTS;
    ck_assert_int_eq(fmt_strategy_alloc(&s, 2, 1, 4), UTIL_OK);
    for (r = 0; r < 5; r++)
        s.bounds[r] = r == 4 ? m.nlayers : 3 * r;
    /* ranks 0-7 on b+1, a+0, a+2, b+0, a+1, b+3, a+3, b+2: host 1 holds
     * rank 0, so it comes first with its devices b+0, b+1, b+2, b+3 in
     * ascending order, then host 0 with a+0 .. a+3 */
    {
        const int given[8] = {b + 1, a + 0, a + 2, b + 0, a + 1, b + 3, a + 3, b + 2};
        const int want[8] = {b + 0, b + 1, b + 2, b + 3, a + 0, a + 1, a + 2, a + 3};
        memcpy(s.ranks, given, sizeof given);
        ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
        ck_assert_msg(strstr(why, "not consecutive") != NULL, "%s", why);
        search_launcher_order(&c, &lc, &s);
        for (r = 0; r < 8; r++)
            ck_assert_int_eq(s.ranks[r], want[r]);
        ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    }
    /* consecutive on each host but descending GPUs: a+1 before a+0 */
    {
        const int given[8] = {a + 1, a + 0, a + 2, a + 3, b + 0, b + 1, b + 2, b + 3};
        memcpy(s.ranks, given, sizeof given);
        ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
        ck_assert_msg(strstr(why, "descending") != NULL, "%s", why);
        search_launcher_order(&c, &lc, &s);
        ck_assert_int_eq(s.ranks[0], a + 0);
        ck_assert_int_eq(s.ranks[1], a + 1);
        /* a placement that keeps the order maps to itself */
        search_launcher_order(&c, &lc, &s);
        for (r = 0; r < 8; r++)
            ck_assert_int_eq(s.ranks[r], r < 4 ? a + r : b + r - 4);
    }
    /* aligned (DeepSpeed 0.19's launcher: rank r gets the (r mod n)-th of
     * its host's n sorted GPUs): ranks 2-5 on b would give b's first rank
     * 2 its GPU 2; 0-3 on a and 4-7 on b are aligned */
    lc.order = SEARCH_ORDER_HOSTS_ALIGNED;
    fmt_strategy_free(&s);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 6, 1), UTIL_OK);
    s.bounds[0] = 0;
    s.bounds[1] = m.nlayers;
    {
        const int given[6] = {a + 0, a + 1, b + 0, b + 1, b + 2, b + 3};
        memcpy(s.ranks, given, sizeof given);
        lc.order = SEARCH_ORDER_HOSTS;
        ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
        lc.order = SEARCH_ORDER_HOSTS_ALIGNED;
        ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
        ck_assert_msg(strstr(why, "ranks 2-5") != NULL, "%s", why);
        /* the order is canonical already: it stays */
        search_launcher_order(&c, &lc, &s);
        ck_assert_int_eq(s.ranks[2], b + 0);
    }
    fmt_strategy_free(&s);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 8, 1), UTIL_OK);
    s.bounds[0] = 0;
    s.bounds[1] = m.nlayers;
    for (r = 0; r < 8; r++)
        s.ranks[r] = r < 4 ? a + r : b + r - 4;
    ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(split_rules_by_hand)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    search_launcher lc;
    char why[200];
    int first = -1, last = -1, l, r, blocks = 0;

    load(EX "amp-het.json", EX "gpt2-amp.json", &c, &m);
    for (l = 0; l < m.nlayers; l++)
        if (m.layers[l].kind == FMT_KIND_TRANSFORMER) {
            if (first < 0)
                first = l;
            last = l;
            blocks++;
        }
    ck_assert_int_ge(first, 1);          /* an embedding before the blocks */
    ck_assert_int_lt(last, m.nlayers - 1); /* a head after them */
    ck_assert_int_eq(blocks, 24);
    memset(&lc, 0, sizeof lc);
    lc.active = 1;
    lc.split = SEARCH_SPLIT_ENDS;
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 1, 4), UTIL_OK);
    for (r = 0; r < 4; r++)
        s.ranks[r] = r;
    /* blocks 5, 7, 7, 5: the middle stages equal */
    s.bounds[0] = 0;
    s.bounds[1] = first + 5;
    s.bounds[2] = first + 12;
    s.bounds[3] = first + 19;
    s.bounds[4] = m.nlayers;
    ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    /* blocks 5, 6, 8, 5: middle stages differ; core_v0.19.0's layout
     * (SEARCH_SPLIT_BLOCKS) takes it */
    s.bounds[2] = first + 11;
    ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
    ck_assert_msg(strstr(why, "middle") != NULL, "%s", why);
    lc.split = SEARCH_SPLIT_BLOCKS;
    ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    /* the embedding alone on stage 0: not between two blocks */
    s.bounds[1] = first;
    ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
    /* the head alone on the last stage */
    s.bounds[1] = first + 5;
    s.bounds[3] = last + 1;
    ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
    /* with 2 virtual stages every stage's blocks come in pairs: 6, 6, 6, 6
       (8 micro-batches, which every release interleaves over pp 4) */
    s.vpp = 2;
    s.gas = 8;
    lc.split = SEARCH_SPLIT_ENDS;
    for (r = 1; r < 4; r++)
        s.bounds[r] = first + 6 * r;
    ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    s.bounds[1] = first + 4; /* 4, 8, 6, 6: pairs, but not even */
    ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
    lc.split = SEARCH_SPLIT_BLOCKS;
    ck_assert_msg(search_launcher_ok(&c, &m, &lc, &s, why, sizeof why), "%s", why);
    s.bounds[1] = first + 5; /* 5, 7, ...: not pairs */
    ck_assert(!search_launcher_ok(&c, &m, &lc, &s, why, sizeof why));
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(params_conflicts)
{
    search_params sp;
    cost_params cp;
    util_error err;

    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 32;
    /* no launcher: nothing changes */
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    ck_assert_int_eq(sp.seq_par, -1);
    ck_assert_int_eq(sp.uneven_tp, 1);
    ck_assert_int_eq(export_target_caps(EXPORT_DEEPSPEED, EXPORT_VERSION_OLD,
                                        &sp.launcher, &err), UTIL_OK);
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    ck_assert_int_eq(sp.seq_par, 0);
    ck_assert_int_eq(sp.vpp, 1);
    ck_assert_int_eq(sp.uneven_tp, 0);
    sp.seq_par = 1; /* fixed on: DeepSpeed has none */
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_EINVAL);
    sp.seq_par = -1;
    sp.vpp = 2;
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_EINVAL);
    sp.vpp = 0;
    sp.recompute = FMT_RECOMPUTE_SELECTIVE;
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_EINVAL);
    sp.recompute = -1;
    cp.schedule = FMT_SCHED_GPIPE;
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_EINVAL);
    cp.schedule = FMT_SCHED_1F1B;
    /* Megatron-LM core_r0.9.0 has no ZeRO 2 or 3; core_v0.19.0 has FSDP */
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_OLD,
                                        &sp.launcher, &err), UTIL_OK);
    sp.zero = 2;
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_EINVAL);
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW,
                                        &sp.launcher, &err), UTIL_OK);
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    /* the hostfile is no launcher to plan for */
    ck_assert_int_eq(export_target_caps(EXPORT_HOSTFILE, EXPORT_VERSION_OLD,
                                        &sp.launcher, &err), UTIL_EINVAL);
}
END_TEST

/* ---- the whole search ------------------------------------------------ */

/* Best time of the search on c and m with the launcher of target and
 * version (target < 0: none); every candidate kept must satisfy its rules
 * and export exactly.  rules_only: the placement rules on every device
 * (no subsets, no annealing), a search over a space that only shrinks
 * with the constraints. */
static double plan_best(const fmt_cluster *c, const fmt_model *m, int target,
                        int version, int rules_only)
{
    search_params sp;
    search_result res;
    cost_params cp;
    util_error err;
    double best;
    int i, rc;

    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = m->global_batch > 0 ? m->global_batch : 32;
    sp.top_k = 4;
    if (rules_only) {
        sp.use_all = 1;
        sp.placement_search = SEARCH_PSEARCH_RULES;
    }
    if (target >= 0) {
        ck_assert_int_eq(export_target_caps(target, version, &sp.launcher, &err), UTIL_OK);
        ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    }
    rc = search_plan_devices(c, m, NULL, &cp, &sp, &res, &err);
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
    ck_assert_int_ge(res.n, 1);
    for (i = 0; target >= 0 && i < res.n; i++) {
        export_options eo;
        export_result er;
        char why[200];
        ck_assert_msg(search_launcher_ok(c, m, &sp.launcher, &res.cands[i].s, why,
                                         sizeof why), "%s %d #%d: %s",
                      export_target_name(target), version, i + 1, why);
        export_options_init(&eo);
        eo.version = version;
        rc = export_build(target, c, m, &cp, &res.cands[i].s, res.global_batch, &eo,
                          &er, &err);
        ck_assert_msg(rc == UTIL_OK && er.napprox == 0, "%s %d #%d refused: %s",
                      export_target_name(target), version, i + 1, err.msg);
        export_free(&er);
    }
    best = res.cands[0].r.iter_s;
    search_result_free(&res);
    return best;
}

START_TEST(search_keeps_the_launcher)
{
    static const char *const models[] = {EX "gpt2-amp.json", EX "gpt2-medium.json"};
    fmt_cluster c;
    fmt_model m;
    int i, t, v;

    for (i = 0; i < 2; i++) {
        load(EX "amp-het.json", models[i], &c, &m);
        for (t = EXPORT_MEGATRON; t <= EXPORT_TORCHRUN; t++)
            for (v = 0; v < EXPORT_NVERSIONS; v++) {
                /* the rules' space shrinks with the constraints: the best
                 * time can only grow (torchrun: no constraint, the same) */
                double free_s = plan_best(&c, &m, -1, 0, 1);
                double lc_s = plan_best(&c, &m, t, v, 1);
                ck_assert_msg(lc_s >= free_s * (1.0 - 1e-12), "%s %s: %g < %g", models[i],
                              export_target_name(t), lc_s, free_s);
                if (t == EXPORT_TORCHRUN)
                    ck_assert(lc_s == free_s);
                /* the default search (subsets, annealing) keeps the rules */
                plan_best(&c, &m, t, v, 0);
            }
        fmt_model_free(&m);
        fmt_cluster_free(&c);
    }
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("launcher");

    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, ends_vs_bruteforce);
    tcase_add_test(tc, host_order_by_hand);
    tcase_add_test(tc, split_rules_by_hand);
    tcase_add_test(tc, params_conflicts);
    tcase_add_test(tc, search_keeps_the_launcher);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(plain_suite());
}
