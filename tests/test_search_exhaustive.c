/* tests/test_search_exhaustive.c: on small problems the search finds a
 * plan at least as fast as the best fitting one of an exhaustive
 * enumeration of every strategy under the same cost model
 * (cost_evaluate): every tp, pp, dp, micro-batch size, interleaving,
 * recomputation, ZeRO stage, sequence parallelism and overlap flag, each
 * with the search's own layer assignment and with the fastest assignment
 * that ignores memory (so a layer assignment whose memory check is
 * stricter than cost_evaluate's cannot hide a strategy that fits), at
 * memory capacities from roomy to so tight that few strategies fit. */
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

/* n nodes of 8 A100-80GB; a GPT of `blocks` blocks */
static void load(int nodes, int blocks, int hidden, int seq, int batch,
                 fmt_cluster *c, fmt_model *m)
{
    util_error err;
    char cj[512], mj[512];

    snprintf(cj, sizeof cj,
             "{\"name\":\"small\",\"nodes\":[{\"name\":\"a\",\"count\":%d,"
             "\"device\":\"A100-80GB\",\"gpus\":8,\"intra_gbps\":2400,"
             "\"nic_gbps\":200}]}", nodes);
    snprintf(mj, sizeof mj,
             "{\"name\":\"small\",\"training\":{\"global_batch\":%d,"
             "\"precision\":\"bf16\"},\"transformer\":{\"family\":\"gpt3\","
             "\"layers\":%d,\"hidden\":%d,\"heads\":16,\"seq\":%d,"
             "\"vocab\":51200}}", batch, blocks, hidden, seq);
    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_parse_cluster(cj, "small-cluster.json", c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(mj, "small-model.json", m, &err), UTIL_OK);
}

static void set_memory(fmt_cluster *c, double bytes)
{
    int i;

    for (i = 0; i < c->ntypes; i++)
        c->types[i].mem_bytes = bytes;
}

static int count_blocks(const fmt_model *m)
{
    int l, b = 0;

    for (l = 0; l < m->nlayers; l++)
        b += m->layers[l].kind == FMT_KIND_TRANSFORMER;
    return b;
}

/* What the enumeration found. */
typedef struct exh_best {
    double t;               /* least fitting iteration time, HUGE_VAL = none */
    fmt_strategy s;         /* its strategy */
    long scored;            /* strategies scored */
    double peak_max;        /* largest peak memory of a strategy scored */
    double peak_min;        /* least peak memory of a strategy scored */
} exh_best;

/* Peak memory over s's ranks. */
static double peak_of(const cost_result *r)
{
    double p = 0.0;
    int i;

    for (i = 0; i < r->nranks; i++)
        if (r->mem_bytes[i] > p)
            p = r->mem_bytes[i];
    return p;
}

/* Score s with bounds from the search's own assignment and from the
 * assignment that ignores memory (device memory cap: the real one). */
static void score(fmt_cluster *c, const fmt_model *m,
                  const cost_params *cp, double cap, fmt_strategy *s,
                  exh_best *best)
{
    util_error err;
    int pass;

    for (pass = 0; pass < 2; pass++) {
        cost_result r;
        int rc;
        memset(&err, 0, sizeof err);
        set_memory(c, pass == 0 ? cap : 1e18);
        rc = search_assign_layers(c, m, NULL, cp, s, &err);
        set_memory(c, cap);
        if (rc != UTIL_OK)
            continue;
        ck_assert_int_eq(cost_evaluate(c, m, NULL, cp, s, &r, &err), UTIL_OK);
        best->scored++;
        if (peak_of(&r) > best->peak_max)
            best->peak_max = peak_of(&r);
        if (peak_of(&r) < best->peak_min)
            best->peak_min = peak_of(&r);
        if (r.fits && r.empty_stage < 0 && r.iter_s < best->t) {
            best->t = r.iter_s;
            fmt_strategy_free(&best->s);
            ck_assert_int_eq(fmt_strategy_copy(&best->s, s), UTIL_OK);
        }
        cost_result_free(&r);
    }
}

/* One strategy: overlap flags ov (bits: gradients, parameters, TP, P2P),
 * those it cannot use skipped; Megatron gathers the weights behind the
 * forward only with the reduction overlapped. */
static void one(fmt_cluster *c, const fmt_model *m, const cost_params *cp,
                double cap, int tp, int dp, int pp, int mbs, int gas, int v,
                int rc_, int z, int sp, int ov, exh_best *best)
{
    int og = ov & 1, opar = (ov >> 1) & 1, otp = (ov >> 2) & 1, op2 = (ov >> 3) & 1;
    fmt_strategy s;
    util_error err;

    if ((og && dp < 2) || (opar && (!og || z < 1)) || (otp && (!sp || tp < 2)) ||
        (op2 && pp < 2))
        return;
    memset(&s, 0, sizeof s);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_strategy_alloc(&s, tp, dp, pp), UTIL_OK);
    s.mbs = mbs;
    s.gas = gas;
    s.schedule = FMT_SCHED_1F1B;
    s.vpp = v;
    s.recompute = rc_;
    s.zero = z;
    s.sp = sp;
    s.offload = FMT_OFFLOAD_NONE;
    s.overlap_grad = og;
    s.overlap_param = opar;
    s.overlap_tp = otp;
    s.overlap_p2p = op2;
    ck_assert_int_eq(search_place(c, SEARCH_PLACE_MEGATRON, &s, &err), UTIL_OK);
    score(c, m, cp, cap, &s, best);
    fmt_strategy_free(&s);
}

/* Every strategy of the cluster c for batch b at memory cap. */
static void enumerate(fmt_cluster *c, const fmt_model *m, int b,
                      double cap, exh_best *best)
{
    int N = c->ndevices, blocks = count_blocks(m), tp, pp, mbs, v, rc_, z, sp, ov;
    cost_params cp;

    cost_params_init(&cp);
    best->t = HUGE_VAL;
    best->scored = 0;
    best->peak_max = 0.0;
    best->peak_min = HUGE_VAL;
    memset(&best->s, 0, sizeof best->s);
    for (tp = 1; tp <= N && tp <= 8; tp++)
        for (pp = 1; pp <= N / tp; pp++) {
            int dp;
            if (N % tp != 0 || (N / tp) % pp != 0 || m->heads % tp != 0)
                continue;
            dp = N / (tp * pp);
            if (b % dp != 0)
                continue;
            for (mbs = 1; mbs <= b / dp; mbs++) {
                int gas;
                if ((b / dp) % mbs != 0)
                    continue;
                gas = b / dp / mbs;
                for (v = 1; v <= FMT_MAX_VPP; v++) {
                    /* interleaving: 1F1B over pp >= 2, chunks of v blocks,
                       at least one a stage, gas a multiple of pp */
                    if (v > 1 && (pp < 2 || blocks % v != 0 || blocks / v < pp ||
                                  gas % pp != 0))
                        continue;
                    for (rc_ = FMT_RECOMPUTE_NONE; rc_ <= FMT_RECOMPUTE_SELECTIVE; rc_++)
                        for (z = 0; z <= (dp > 1 ? 3 : 0); z++)
                            for (sp = 0; sp <= (tp > 1); sp++)
                                for (ov = 0; ov < 16; ov++)
                                    one(c, m, &cp, cap, tp, dp, pp, mbs, gas, v, rc_, z,
                                        sp, ov, best);
                }
            }
        }
}

/* The search's best at memory cap against the enumeration's. */
static void compare(fmt_cluster *c, const fmt_model *m, int b, double cap,
                    int *fitting)
{
    exh_best best;
    search_params sp;
    search_result res;
    cost_params cp;
    util_error err;
    int rc;

    set_memory(c, cap);
    enumerate(c, m, b, cap, &best);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = b;
    sp.top_k = 1;
    memset(&err, 0, sizeof err);
    rc = search_plan(c, m, NULL, &cp, &sp, &res, &err);
    if (best.t == HUGE_VAL) {
        ck_assert_int_ne(rc, UTIL_OK);
        return;
    }
    (*fitting)++;
    ck_assert_msg(rc == UTIL_OK, "memory %.2f GiB: the search finds nothing, the "
                  "enumeration tp %d pp %d dp %d mbs %d vpp %d rc %d zero %d sp %d "
                  "at %.6f s", cap / 1073741824.0, best.s.tp, best.s.pp, best.s.dp,
                  best.s.mbs, best.s.vpp, best.s.recompute, best.s.zero, best.s.sp,
                  best.t);
    ck_assert_msg(res.cands[0].r.iter_s <= best.t * (1.0 + 1e-9),
                  "memory %.2f GiB: the search's %.6f s (tp %d pp %d dp %d mbs %d "
                  "vpp %d rc %d zero %d sp %d) is slower than the enumeration's "
                  "%.6f s (tp %d pp %d dp %d mbs %d vpp %d rc %d zero %d sp %d "
                  "overlap %d%d%d%d)",
                  cap / 1073741824.0, res.cands[0].r.iter_s, res.cands[0].s.tp,
                  res.cands[0].s.pp, res.cands[0].s.dp, res.cands[0].s.mbs,
                  res.cands[0].s.vpp, res.cands[0].s.recompute, res.cands[0].s.zero,
                  res.cands[0].s.sp, best.t, best.s.tp, best.s.pp, best.s.dp,
                  best.s.mbs, best.s.vpp, best.s.recompute, best.s.zero, best.s.sp,
                  best.s.overlap_grad, best.s.overlap_param, best.s.overlap_tp,
                  best.s.overlap_p2p);
    ck_assert(res.cands[0].r.fits);
    search_result_free(&res);
    fmt_strategy_free(&best.s);
}

/* The enumeration at roomy memory, then at capacities between the least
 * and the largest peak it saw. */
static void sweep(int nodes, int blocks, int hidden, int seq, int b)
{
    fmt_cluster c;
    fmt_model m;
    exh_best all;
    double lo, hi;
    int i, fitting = 0;
    const int steps = 6;

    load(nodes, blocks, hidden, seq, b, &c, &m);
    set_memory(&c, 1e15);
    enumerate(&c, &m, b, 1e15, &all);
    ck_assert(all.scored > 100);
    fmt_strategy_free(&all.s);
    compare(&c, &m, b, 1e15, &fitting);
    lo = all.peak_min;
    hi = all.peak_max;
    for (i = 0; i <= steps; i++) /* geometric: most plans fit at the top */
        compare(&c, &m, b, lo * pow(hi / lo, (double)i / steps), &fitting);
    ck_assert_int_ge(fitting, 4);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}

/* 8 GPUs, 4 blocks of a 1.3B-wide GPT, batch 16 */
START_TEST(eight_gpus)
{
    sweep(1, 4, 2048, 2048, 16);
}
END_TEST

/* 16 GPUs on two nodes, 8 blocks, long sequences: activations weigh */
START_TEST(sixteen_gpus)
{
    sweep(2, 8, 2048, 4096, 32);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {eight_gpus, sixteen_gpus};

    return tu_run_tests("search_exhaustive", tests, TU_N(tests));
}
