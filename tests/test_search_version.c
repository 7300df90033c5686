/* tests/test_search_version.c: the interleaved schedule's micro-batch
 * rule follows the Megatron-core release planned for.  core_r0.9.0's
 * forward_backward_pipelining_with_interleaving raises unless pp divides
 * the micro-batches; core_v0.19.0's takes any count M >= pp with a group
 * size N in [pp, M] whose remainder M mod N is 0 or >= pp
 * (--microbatch-group-size-per-virtual-pipeline-stage), and warms up
 * 2 (pp - rank - 1) + (vpp - 1) N chunk micro-batches
 * (get_pp_rank_microbatches). */
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

/* The group sizes, by hand from the rule above. */
START_TEST(group_sizes)
{
    ck_assert_int_eq(cost_vpp_group(4, 8), 4);   /* pp divides M: the default */
    ck_assert_int_eq(cost_vpp_group(4, 9), 5);   /* 9 mod 4 = 1 < 4; 9 mod 5 = 4 */
    ck_assert_int_eq(cost_vpp_group(4, 10), 5);  /* 10 mod 5 = 0 */
    ck_assert_int_eq(cost_vpp_group(2, 11), 3);  /* 11 mod 3 = 2 >= 2 */
    ck_assert_int_eq(cost_vpp_group(3, 64), 4);  /* 64 mod 4 = 0 */
    ck_assert_int_eq(cost_vpp_group(4, 6), 6);   /* 6 mod 5 = 1: only N = M */
    ck_assert_int_eq(cost_vpp_group(4, 3), 0);   /* fewer micro-batches than pp */
}
END_TEST

/* In-flight activations use the group: pp 2, vpp 2, M 11, N 3, stage 0:
 * 2 (2 - 0 - 1) + (2 - 1) 3 + 1 = 6 chunk micro-batches of half the
 * stage's layers = 3 micro-batches' worth; with M 12 (N = pp = 2),
 * 2 + 2 + 1 = 5, 2.5. */
START_TEST(inflight_uses_group)
{
    ck_assert_double_eq_tol(cost_inflight_interleaved(0, 2, 11, 2), 3.0, 1e-12);
    ck_assert_double_eq_tol(cost_inflight_interleaved(0, 2, 12, 2), 2.5, 1e-12);
    ck_assert_double_eq_tol(cost_inflight_interleaved(1, 2, 11, 2), 2.0, 1e-12);
}
END_TEST

/* one node of 8 A100-80GB, 200 Gbit/s NIC; GPT-NeoX-20B */
static void load(fmt_cluster *c, fmt_model *m)
{
    tu_load_selene(c, m, "one", 1, 200, NULL,
                   HETPLAN_SOURCE_DIR "/examples/gpt-neox-20b.json");
}

/* Search for Megatron-LM at version v, batch b, TP up to 2, vpp fixed
 * (0 = searched); the search's return code. */
static int plan_for(const fmt_cluster *c, const fmt_model *m, int version,
                    int b, int vpp, int top_k, search_result *r)
{
    search_params sp;
    cost_params cp;
    util_error err;

    memset(&err, 0, sizeof err);
    memset(r, 0, sizeof *r);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = b;
    sp.top_k = top_k;
    sp.max_tp = 2;
    sp.vpp = vpp;
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, version, &sp.launcher, &err),
                     UTIL_OK);
    ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    return search_plan(c, m, NULL, &cp, &sp, r, &err);
}

static int odd_interleaved(const fmt_strategy *s)
{
    return s->vpp > 1 && s->gas % s->pp != 0;
}

/* GPT-NeoX 20B on 8 A100 at batch 22 with two virtual stages: every
 * pipeline of tp <= 2 runs 11 or 22 micro-batches, which pp 2, 4 and 8
 * do not all divide: (tp, pp, dp) = (2, 2, 2) and (1, 4, 2) run 11, (2, 4,
 * 1) and (1, 8, 1) 22.  core_r0.9.0 runs none of them, core_v0.19.0 all. */
START_TEST(newer_core_interleaves_odd_counts)
{
    fmt_cluster c;
    fmt_model m;
    search_result r;
    search_launcher lo, ln;
    util_error err;
    char why[200];
    int i;

    load(&c, &m);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(plan_for(&c, &m, EXPORT_VERSION_OLD, 22, 2, 20, &r),
                     UTIL_EINFEASIBLE);
    search_result_free(&r);
    ck_assert_int_eq(plan_for(&c, &m, EXPORT_VERSION_NEW, 22, 2, 20, &r), UTIL_OK);
    ck_assert_int_gt(r.n, 0);
    for (i = 0; i < r.n; i++)
        ck_assert(odd_interleaved(&r.cands[i].s));
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_OLD, &lo, &err),
                     UTIL_OK);
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW, &ln, &err),
                     UTIL_OK);
    ck_assert_int_eq(search_launcher_ok(&c, &m, &ln, &r.cands[0].s, why, sizeof why), 1);
    ck_assert_int_eq(search_launcher_ok(&c, &m, &lo, &r.cands[0].s, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "not a multiple of pp"));
    search_result_free(&r);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Interleaving searched: the core_v0.19.0 search keeps an interleaved
 * strategy with an odd count where it beats the same degrees without
 * interleaving (a smaller bubble), is never slower than the core_r0.9.0
 * search, and the core_r0.9.0 search never keeps such a strategy. */
START_TEST(odd_counts_when_faster)
{
    fmt_cluster c;
    fmt_model m;
    search_result o, n;
    const int batches[] = {14, 22, 26, 30};
    size_t bi;
    int i, faster = 0;

    load(&c, &m);
    for (bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        ck_assert_int_eq(plan_for(&c, &m, EXPORT_VERSION_OLD, batches[bi], 0, 50, &o),
                         UTIL_OK);
        ck_assert_int_eq(plan_for(&c, &m, EXPORT_VERSION_NEW, batches[bi], 0, 50, &n),
                         UTIL_OK);
        for (i = 0; i < o.n; i++)
            ck_assert(!odd_interleaved(&o.cands[i].s));
        ck_assert(n.cands[0].r.iter_s <= o.cands[0].r.iter_s * (1.0 + 1e-12));
        for (i = 0; i < n.n; i++) {
            /* the same strategy without interleaving, layers reassigned */
            fmt_strategy b;
            cost_result rb;
            cost_params cp;
            util_error err;
            if (!odd_interleaved(&n.cands[i].s))
                continue;
            memset(&err, 0, sizeof err);
            memset(&b, 0, sizeof b);
            cost_params_init(&cp);
            ck_assert_int_eq(fmt_strategy_copy(&b, &n.cands[i].s), UTIL_OK);
            b.vpp = 1;
            ck_assert_int_eq(search_assign_layers(&c, &m, NULL, &cp, &b, &err), UTIL_OK);
            ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &cp, &b, &rb, &err), UTIL_OK);
            faster += n.cands[i].r.iter_s < rb.iter_s;
            cost_result_free(&rb);
            fmt_strategy_free(&b);
        }
        search_result_free(&o);
        search_result_free(&n);
    }
    ck_assert_int_gt(faster, 0);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {group_sizes, inflight_uses_group,
                                  newer_core_interleaves_odd_counts,
                                  odd_counts_when_faster};

    return tu_run_tests("search_version", tests, TU_N(tests));
}
