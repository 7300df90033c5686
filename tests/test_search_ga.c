/* tests/test_search_ga.c: the placement genetic algorithm (search/ga.c):
 * never worse than its seeds (the rules' placement and the annealed
 * one), reproducible for a seed, the brute-force optimum on a small
 * cluster, independent of the node order, and --placement rules|anneal|ga on the command line. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* Three nodes of two GPUs, three generations, and a 10 Gbit/s link
 * between the H100 and the V100 node: 6! = 720 placements of six ranks,
 * few of them equivalent. */
static const char small_cluster[] =
    "{\"name\": \"small\", \"nodes\": ["
    "{\"name\": \"v\", \"device\": \"V100\", \"gpus\": 2, \"intra_gbps\": 1200, "
    "\"nic_gbps\": 100},"
    "{\"name\": \"h\", \"device\": \"H100-SXM\", \"gpus\": 2, \"intra_gbps\": 3600, "
    "\"nic_gbps\": 400},"
    "{\"name\": \"a\", \"device\": \"A100-80GB\", \"gpus\": 2, \"intra_gbps\": 2400, "
    "\"nic_gbps\": 200}],"
    "\"links\": [{\"a\": \"h\", \"b\": \"v\", \"gbps\": 10, \"latency_ms\": 30}]}";

/* Layer assignment and cost of s; iteration time, INFINITY when it does
 * not fit or leaves a stage empty. */
static double score(const fmt_cluster *c, const fmt_model *m, const cost_params *cp,
                    fmt_strategy *s)
{
    cost_result r;
    util_error err;
    double v;
    int rc;

    rc = search_assign_layers(c, m, NULL, cp, s, &err);
    if (rc == UTIL_EINFEASIBLE)
        return INFINITY;
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(cost_evaluate(c, m, NULL, cp, s, &r, &err), UTIL_OK);
    v = r.fits && r.empty_stage < 0 ? r.iter_s : INFINITY;
    cost_result_free(&r);
    return v;
}

/* A strategy tp x dp x pp with mbs 1 on c by the Megatron rule, scored. */
static void strategy(const fmt_cluster *c, const fmt_model *m, const cost_params *cp,
                     int tp, int dp, int pp, int gb, fmt_strategy *s, cost_result *r)
{
    util_error err;

    ck_assert_int_eq(fmt_strategy_alloc(s, tp, dp, pp), UTIL_OK);
    s->mbs = 1;
    s->gas = gb / dp;
    ck_assert_int_eq(search_place(c, SEARCH_PLACE_MEGATRON, s, &err), UTIL_OK);
    ck_assert_int_eq(search_assign_layers(c, m, NULL, cp, s, &err), UTIL_OK);
    ck_assert_int_eq(cost_evaluate(c, m, NULL, cp, s, r, &err), UTIL_OK);
    ck_assert(r->fits && r->empty_stage < 0); /* else the searches return at once */
}

/* 1 when ranks (n) are distinct devices of c. */
static int distinct(const fmt_cluster *c, const int *ranks, int n)
{
    char *seen = calloc((size_t)c->ndevices, 1);
    int i, ok = 1;

    for (i = 0; i < n && ok; i++) {
        ok = ranks[i] >= 0 && ranks[i] < c->ndevices && !seen[ranks[i]];
        if (ok)
            seen[ranks[i]] = 1;
    }
    free(seen);
    return ok;
}

/* The GA's result is at most the rules' and the annealing's (same steps
 * and seed), scores what it says when evaluated afresh, and runs on
 * distinct devices. */
START_TEST(never_worse_than_seeds)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    fmt_strategy sa, sg;
    cost_result ra, rg, again;
    util_error err;
    double rules_v, sa_v;
    long moves_sa = 0, moves_ga = 0;
    uint64_t seed;

    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX "gpt2-amp.json", &m, &err), UTIL_OK);
    cost_params_init(&cp);
    search_params_init(&sp);
    for (seed = 1; seed <= 3; seed++) {
        strategy(&c, &m, &cp, 1, 2, 8, 32, &sa, &ra);
        strategy(&c, &m, &cp, 1, 2, 8, 32, &sg, &rg);
        rules_v = ra.iter_s;
        ck_assert_int_eq(search_anneal(&c, &m, NULL, &cp, &sp, 150, seed, &sa, &ra,
                                       &moves_sa, &err), UTIL_OK);
        sa_v = ra.iter_s;
        ck_assert(sa_v <= rules_v);
        ck_assert_int_eq(search_ga(&c, &m, NULL, &cp, &sp, 150, seed, &sg, &rg,
                                   &moves_ga, &err), UTIL_OK);
        /* the GA anneals first (same moves), then scores at most
         * 12 + 8 x 12 x 3 = 300 more placements (repeats are not scored
         * again) */
        ck_assert_int_gt(moves_ga, moves_sa);
        ck_assert_int_le(moves_ga, moves_sa + SEARCH_GA_POPULATION *
                                                  (1 + SEARCH_GA_GENERATIONS *
                                                           (1 + SEARCH_GA_LOCAL)));
        ck_assert(rg.iter_s <= sa_v);
        ck_assert(rg.iter_s <= rules_v);
        ck_assert(distinct(&c, sg.ranks, 16));
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &cp, &sg, &again, &err), UTIL_OK);
        ck_assert_double_eq_tol(again.iter_s, rg.iter_s, 1e-12 * rules_v);
        cost_result_free(&again);
        fmt_strategy_free(&sa);
        fmt_strategy_free(&sg);
        cost_result_free(&ra);
        cost_result_free(&rg);
    }
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* Same seed, same placement, through search_ga and search_plan_devices. */
START_TEST(same_seed_same_placement)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result a, b;
    fmt_strategy s1, s2;
    cost_result r1, r2;
    util_error err;
    int i;

    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX "gpt2-amp.json", &m, &err), UTIL_OK);
    cost_params_init(&cp);
    search_params_init(&sp);
    strategy(&c, &m, &cp, 2, 2, 4, 32, &s1, &r1);
    strategy(&c, &m, &cp, 2, 2, 4, 32, &s2, &r2);
    ck_assert_int_eq(search_ga(&c, &m, NULL, &cp, &sp, 60, 11, &s1, &r1, NULL, &err),
                     UTIL_OK);
    ck_assert_int_eq(search_ga(&c, &m, NULL, &cp, &sp, 60, 11, &s2, &r2, NULL, &err),
                     UTIL_OK);
    ck_assert_str_eq(s1.placement, s2.placement);
    for (i = 0; i < 16; i++)
        ck_assert_int_eq(s1.ranks[i], s2.ranks[i]);
    ck_assert(r1.iter_s == r2.iter_s);
    fmt_strategy_free(&s1);
    fmt_strategy_free(&s2);
    cost_result_free(&r1);
    cost_result_free(&r2);
    fmt_cluster_free(&c);
    fmt_model_free(&m);

    ck_assert_int_eq(fmt_load_cluster(EX "mixed-generations.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX "llama-7b.json", &m, &err), UTIL_OK);

    sp.global_batch = 512;
    sp.placement_search = SEARCH_PSEARCH_GA;
    sp.seed = 5;
    ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &a, &err), UTIL_OK);
    ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &b, &err), UTIL_OK);
    ck_assert_int_eq(a.n, b.n);
    for (i = 0; i < a.n; i++) {
        int k, n = a.cands[i].s.tp * a.cands[i].s.dp * a.cands[i].s.pp;
        ck_assert(a.cands[i].r.iter_s == b.cands[i].r.iter_s);
        ck_assert_str_eq(a.cands[i].s.placement, b.cands[i].s.placement);
        for (k = 0; k < n; k++)
            ck_assert_int_eq(a.cands[i].s.ranks[k], b.cands[i].s.ranks[k]);
    }
    ck_assert_int_eq(a.anneal_moves, b.anneal_moves);
    search_result_free(&a);
    search_result_free(&b);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* Next permutation in lexicographic order (Knuth, TAOCP 7.2.1.2,
 * algorithm L); 0 after the last. */
static int next_perm(int *p, int n)
{
    int i = n - 2, j, t;

    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return 0;
    for (j = n - 1; p[j] <= p[i]; j--)
        ;
    t = p[i], p[i] = p[j], p[j] = t;
    for (i++, j = n - 1; i < j; i++, j--)
        t = p[i], p[i] = p[j], p[j] = t;
    return 1;
}

/* On six GPUs of three generations (tp 1, dp 2, pp 3) the GA finds the
 * best of all 720 placements, each scored here by the layer assignment
 * and cost_evaluate (the assignment is part of what a placement
 * scores). */
START_TEST(finds_brute_force_optimum)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    fmt_strategy s, e;
    cost_result r;
    util_error err;
    int perm[6] = {0, 1, 2, 3, 4, 5}, count = 0;
    uint64_t seed;
    double best = INFINITY, worst = 0.0, v;

    ck_assert_int_eq(fmt_parse_cluster(small_cluster, "small.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX "gpt2-amp.json", &m, &err), UTIL_OK);
    cost_params_init(&cp);
    search_params_init(&sp);
    strategy(&c, &m, &cp, 1, 2, 3, 16, &e, &r);
    cost_result_free(&r);
    do {
        memcpy(e.ranks, perm, sizeof perm);
        v = score(&c, &m, &cp, &e);
        if (v < best)
            best = v;
        if (isfinite(v) && v > worst)
            worst = v;
        count++;
    } while (next_perm(perm, 6));
    ck_assert_int_eq(count, 720);
    ck_assert(isfinite(best));
    ck_assert(worst > best * 1.01); /* placement matters on this cluster */
    /* without annealing (steps 0) the GA starts from the rules' placement
     * alone, which is 8 % off the optimum here */
    for (seed = 1; seed <= 3; seed++) {
        strategy(&c, &m, &cp, 1, 2, 3, 16, &s, &r);
        ck_assert(r.iter_s > best * 1.01);
        ck_assert_int_eq(search_ga(&c, &m, NULL, &cp, &sp, 0, seed, &s, &r, NULL, &err),
                         UTIL_OK);
        ck_assert_msg(fabs(r.iter_s - best) <= 1e-9 * best, "ga %.9g, optimum %.9g",
                      r.iter_s, best);
        ck_assert_str_eq(s.placement, "genetic");
        fmt_strategy_free(&s);
        cost_result_free(&r);
    }
    fmt_strategy_free(&e);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* The small cluster's nodes listed in another order give the same plan
 * time with --placement ga: the GA's operators work on rank positions
 * and the canonical idle order, never on device numbers. */
START_TEST(node_order_does_not_matter)
{
    static const char *const nodes[] = {
        "{\"name\": \"v\", \"device\": \"V100\", \"gpus\": 2, \"intra_gbps\": 1200, "
        "\"nic_gbps\": 100}",
        "{\"name\": \"h\", \"device\": \"H100-SXM\", \"gpus\": 2, \"intra_gbps\": 3600, "
        "\"nic_gbps\": 400}",
        "{\"name\": \"a\", \"device\": \"A100-80GB\", \"gpus\": 2, \"intra_gbps\": 2400, "
        "\"nic_gbps\": 200}",
        "{\"name\": \"t\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 64, "
        "\"nic_gbps\": 50}"};
    static const int orders[3][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
    fmt_model m;
    cost_params cp;
    search_params sp;
    util_error err;
    double t0 = 0.0;
    int k;

    ck_assert_int_eq(fmt_load_model(EX "opt-1.3b.json", &m, &err), UTIL_OK);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 64;
    sp.placement_search = SEARCH_PSEARCH_GA;
    sp.seed = 3;
    for (k = 0; k < 3; k++) {
        char text[2048];
        fmt_cluster c;
        search_result res;
        snprintf(text, sizeof text,
                 "{\"name\": \"small\", \"nodes\": [%s, %s, %s, %s], \"links\": [{\"a\": "
                 "\"h\", \"b\": \"v\", \"gbps\": 10, \"latency_ms\": 30}]}",
                 nodes[orders[k][0]], nodes[orders[k][1]], nodes[orders[k][2]],
                 nodes[orders[k][3]]);
        ck_assert_msg(fmt_parse_cluster(text, "small.json", &c, &err) == UTIL_OK, "%s",
                      err.msg);
        ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_OK);
        /* the placement search, not a rule, made the best plan (checked
         * with --placement rules: 2.4432 s against 2.3113 s) */
        ck_assert_msg(strcmp(res.cands[0].s.placement, "annealed") == 0 ||
                          strcmp(res.cands[0].s.placement, "genetic") == 0,
                      "%s", res.cands[0].s.placement);
        if (k == 0)
            t0 = res.cands[0].r.iter_s;
        ck_assert_msg(fabs(res.cands[0].r.iter_s - t0) <= 1e-9 * t0,
                      "order %d: %.9g s against %.9g s", k, res.cands[0].r.iter_s, t0);
        search_result_free(&res);
        fmt_cluster_free(&c);
    }
    fmt_model_free(&m);
}
END_TEST

/* --placement ga plans and names its placement search; rules keeps the
 * rules' placement; a bad value and evaluate's use are refused. */
START_TEST(placement_option_cli)
{
    const char *ga[] = {"plan", "--cluster", EX "amp-het.json", "--model",
                        EX "gpt2-amp.json", "--global-batch", "32", "--placement", "ga",
                        "--format", "json", NULL};
    const char *rules[] = {"plan", "--cluster", EX "amp-het.json", "--model",
                           EX "gpt2-amp.json", "--global-batch", "32", "--placement",
                           "rules", "--verbose", NULL};
    const char *bad[] = {"plan", "--cluster", "small.json", "--model",
                         EX "gpt2-amp.json", "--placement", "genetic", NULL};
    const char *ev[] = {"evaluate", "--cluster", EX "amp-het.json", "--model",
                        EX "gpt2-amp.json", "--strategies", EX "strategies-amp-het.json",
                        "--placement", "ga", NULL};
    tp_run_out r;
    cJSON *doc;

    tp_run(&r, ga);
    ck_assert_msg(r.status == 0, "%s", r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_run(&r, rules);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, " 0 annealing moves"));
    tp_run_free(&r);
    tp_write("small.json", small_cluster);
    tp_run(&r, bad);
    ck_assert_int_ne(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "'--placement' expects rules, anneal, ga"));
    tp_run_free(&r);
    tp_run(&r, ev);
    ck_assert_int_ne(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.err, "belong to 'planner plan'"));
    tp_run_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("search_ga");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, never_worse_than_seeds);
    tcase_add_test(tc, same_seed_same_placement);
    tcase_add_test(tc, finds_brute_force_optimum);
    tcase_add_test(tc, node_order_does_not_matter);
    tcase_add_test(tc, placement_option_cli);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
