/* tests/test_search_features.c: the layer assignment's memory check sees
 * the strategy's training features (sequence parallelism, interleaved
 * schedule) as the cost model does: a split that fits per the cost
 * model's stage memory is not rejected, and a split it returns fits;
 * a fixed interleaving no strategy admits is named in the error. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "testutil.h"

/* one node of 8 A100-80GB; a GPT-3-shaped model of 16 blocks with long
 * sequences, so activations weigh as much as the model state */
static void load(fmt_cluster *c, fmt_model *m)
{
    static const char mj[] =
        "{\"name\":\"feat\",\"training\":{\"global_batch\":32,"
        "\"precision\":\"fp16\"},\"transformer\":{\"family\":\"gpt3\","
        "\"layers\":16,\"hidden\":2048,\"heads\":16,\"seq\":8192,"
        "\"vocab\":51200}}";

    tu_load_selene(c, m, "one", 1, 200, mj, NULL);
}

/* tp 2, dp 1, pp 4, mbs 2, gas 8 on devices 0..7 */
static void make(fmt_strategy *s, int sp, int vpp)
{
    int i;

    memset(s, 0, sizeof *s);
    ck_assert_int_eq(fmt_strategy_alloc(s, 2, 1, 4), UTIL_OK);
    s->mbs = 2;
    s->gas = 8;
    s->sp = sp;
    s->vpp = vpp;
    s->recompute = FMT_RECOMPUTE_NONE;
    s->zero = 0;
    s->schedule = FMT_SCHED_1F1B;
    for (i = 0; i < 8; i++)
        s->ranks[i] = i;
}

/* Largest stage memory of s's split (cost_rank_stage_memory, the cost
 * model's count), the oracle of every check below. */
static double worst_stage(const fmt_model *m, const cost_params *cp,
                          const fmt_strategy *s)
{
    double w = 0.0;
    int j;

    for (j = 0; j < s->pp; j++) {
        cost_memory mem;
        cost_rank_stage_memory(m, cp, s, j * s->tp * s->dp, &mem);
        if (mem.total > w)
            w = mem.total;
    }
    return w;
}

static void set_memory(fmt_cluster *c, double bytes)
{
    int i;

    for (i = 0; i < c->ntypes; i++)
        c->types[i].mem_bytes = bytes;
}

/* Split of s on a cluster with memory without limit. */
static void free_split(const fmt_cluster *c0, const fmt_model *m,
                       const cost_params *cp, fmt_strategy *s)
{
    fmt_cluster c = *c0;
    util_error err;
    fmt_device_type *t = malloc((size_t)c0->ntypes * sizeof *t);
    int rc;

    ck_assert_ptr_nonnull(t);
    memcpy(t, c0->types, (size_t)c0->ntypes * sizeof *t);
    c.types = t;
    set_memory(&c, 1e18);
    rc = search_assign_layers(&c, m, NULL, cp, s, &err);
    ck_assert_int_eq(rc, UTIL_OK);
    free(t);
}

/* Least over every split of s into pp non-empty stages of the largest
 * stage memory (brute force); s->bounds are left as they were. */
static double least_worst(const fmt_model *m, const cost_params *cp,
                          fmt_strategy *s)
{
    int L = m->nlayers, b1, b2, b3, keep[5];
    double best = HUGE_VAL, w;

    ck_assert_int_eq(s->pp, 4);
    memcpy(keep, s->bounds, sizeof keep);
    for (b1 = 1; b1 < L; b1++)
        for (b2 = b1 + 1; b2 < L; b2++)
            for (b3 = b2 + 1; b3 < L; b3++) {
                s->bounds[0] = 0;
                s->bounds[1] = b1;
                s->bounds[2] = b2;
                s->bounds[3] = b3;
                s->bounds[4] = L;
                w = worst_stage(m, cp, s);
                if (w < best)
                    best = w;
            }
    memcpy(s->bounds, keep, sizeof keep);
    return best;
}

/* Sequence parallelism divides the norms' and dropouts' activations by
 * tp (Korthikanti et al. 2022, eq. 2 vs eq. 4: per layer s b h (10 +
 * 24 / t) bytes without it, 34 s b h / t with it; at t = 2, 22 vs 17).
 * Memory halfway between the least need with it and without it, over
 * every split (brute force): with it the assignment must find a split
 * that fits, without it there is none. */
START_TEST(sp_split_not_rejected)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s, plain;
    cost_params cp;
    util_error err;
    double with_sp, without_sp, cap;

    load(&c, &m);
    cost_params_init(&cp);
    /* stated runtime memory: worst_stage sums the memory model without
     * a cluster, where a derived one falls back to 1 GiB */
    cp.mem_reserve = COST_RESERVE_UNKNOWN;
    make(&s, 1, 1);
    make(&plain, 0, 1);
    with_sp = least_worst(&m, &cp, &s);
    without_sp = least_worst(&m, &cp, &plain);
    /* the instance means something: SP saves over a tenth here */
    ck_assert_double_lt(with_sp, 0.9 * without_sp);
    cap = 0.5 * (with_sp + without_sp);
    set_memory(&c, cap);
    ck_assert_int_eq(search_assign_layers(&c, &m, NULL, &cp, &s, &err), UTIL_OK);
    ck_assert_double_le(worst_stage(&m, &cp, &s), cap);
    ck_assert_int_eq(search_assign_layers(&c, &m, NULL, &cp, &plain, &err),
                     UTIL_EINFEASIBLE);
    fmt_strategy_free(&s);
    fmt_strategy_free(&plain);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* The interleaved schedule keeps (2 (pp - j - 1) + (v - 1) pp + 1) / v
 * micro-batches of a device's activations on stage j (Narayanan et al.
 * 2021, section 2.2): with pp 4, v 2, j 0: (6 + 4 + 1) / 2 = 5.5, not
 * the 4 of plain 1F1B.  Memory just below the balanced split's need: the
 * assignment returns a split that fits or none; memory just above: it
 * returns one. */
START_TEST(interleaved_split_fits)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    cost_params cp;
    util_error err;
    double need, got;
    int rc;

    ck_assert_double_eq_tol(cost_inflight_interleaved(0, 4, 8, 2), 5.5, 1e-12);
    load(&c, &m);
    cost_params_init(&cp);
    /* stated runtime memory: worst_stage sums the memory model without
     * a cluster, where a derived one falls back to 1 GiB */
    cp.mem_reserve = COST_RESERVE_UNKNOWN;
    make(&s, 1, 2);
    free_split(&c, &m, &cp, &s);
    need = worst_stage(&m, &cp, &s);

    set_memory(&c, need * 1.001);
    ck_assert_int_eq(search_assign_layers(&c, &m, NULL, &cp, &s, &err), UTIL_OK);
    ck_assert_double_le(worst_stage(&m, &cp, &s), need * 1.001);

    set_memory(&c, need * 0.98);
    rc = search_assign_layers(&c, &m, NULL, &cp, &s, &err);
    if (rc == UTIL_OK) {
        got = worst_stage(&m, &cp, &s);
        ck_assert_double_le(got, need * 0.98);
    } else {
        ck_assert_int_eq(rc, UTIL_EINFEASIBLE);
    }
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Megatron-LM's 530B model (Narayanan et al. 2021, Table 1: 105 blocks,
 * h 20480, 128 heads) on 5,120 A100 with batch 2520 = 2^3 3^2 5 7: with
 * 3 chunks per device fixed, pp must divide gas = 2520 / (dp mbs) and
 * 105 / 3 = 35 >= pp: no point exists, and the error says why
 * interleaving failed rather than blaming the many pipeline degrees
 * above 108 that no model could fill. */
START_TEST(fixed_vpp_says_why)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    static const char cj[] =
        "{\"name\":\"big\",\"nodes\":[{\"name\":\"a\",\"count\":640,"
        "\"device\":\"A100-80GB\",\"gpus\":8,\"intra_gbps\":2400,"
        "\"nic_gbps\":1600}]}";
    static const char mj[] =
        "{\"name\":\"530b\",\"training\":{\"global_batch\":2520,"
        "\"precision\":\"fp16\"},\"transformer\":{\"family\":\"gpt3\","
        "\"layers\":105,\"hidden\":20480,\"heads\":128,\"seq\":2048,"
        "\"vocab\":51200}}";

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(fmt_parse_cluster(cj, "big.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(mj, "530b.json", &m, &err), UTIL_OK);
    cost_params_init(&cp);
    /* stated runtime memory: worst_stage sums the memory model without
     * a cluster, where a derived one falls back to 1 GiB */
    cp.mem_reserve = COST_RESERVE_UNKNOWN;
    search_params_init(&sp);
    sp.global_batch = 2520;
    sp.vpp = 3;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err),
                     UTIL_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "3 model chunks per device") != NULL, "%s",
                  err.msg);
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

static Suite *features_suite(void)
{
    Suite *s = suite_create("features");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sp_split_not_rejected);
    tcase_add_test(tc, interleaved_split_fits);
    tcase_add_test(tc, fixed_vpp_says_why);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(features_suite());
}
