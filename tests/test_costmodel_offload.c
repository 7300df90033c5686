/* tests/test_costmodel_offload.c: optimizer offload (costmodel/offload.c,
 * costmodel/memory.c): GPU and host memory of an offloaded strategy and
 * its optimizer step (PCIe transfers and the CPU Adam step), each
 * computed by hand, in the closed form and in the event simulator; the
 * host-side defaults per GPU generation. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

#define GIB 1073741824.0

/* One node of 4 devices "X" (80 GiB, TFLOPS fp16 TFLOP/s); host link
 * 200 Gbit/s = 25 GB/s per GPU, host DRAM 800 Gbit/s = 100 GB/s, host
 * memory HOST GiB. */
static void cluster_tf(fmt_cluster *c, double host_gib, double tflops)
{
    char text[600];
    util_error err;

    snprintf(text, sizeof text,
             "{\"name\":\"x\",\"device_types\":{\"X\":{\"memory_gib\":80,"
             "\"tflops_fp16\":%g,\"mem_bw_gbs\":1000}},\"nodes\":[{\"name\":\"n\","
             "\"device\":\"X\",\"gpus\":4,\"intra_gbps\":8000,\"nic_gbps\":100,"
             "\"host_memory_gib\":%g,\"host_bw_gbps\":800,\"pcie_gbps\":200}]}",
             tflops, host_gib);
    ck_assert_msg(fmt_parse_cluster(text, "c.json", c, &err) == UTIL_OK, "%s: %s",
                  err.path, err.msg);
}

static void cluster(fmt_cluster *c, double host_gib)
{
    cluster_tf(c, host_gib, 1.0);
}

/* Two generic layers of 1.1e9 and 1.2e9 parameters, fp16, nothing else. */
static const char model_json[] =
    "{\"name\":\"two\",\"training\":{\"global_batch\":4},"
    "\"layers\":[{\"name\":\"a\",\"kind\":\"generic\",\"params\":1.1e9,"
    "\"fwd_flops\":0,\"out_bytes\":0,\"act_bytes\":0,\"kernels\":0},"
    "{\"name\":\"b\",\"kind\":\"generic\",\"params\":1.2e9,"
    "\"fwd_flops\":0,\"out_bytes\":0,\"act_bytes\":0,\"kernels\":0}]}";

/* The same two layers with 1e12 forward FLOPs per sample each, so that
 * the stages have a backward pass. */
static const char model_flops_json[] =
    "{\"name\":\"two\",\"training\":{\"global_batch\":4},"
    "\"layers\":[{\"name\":\"a\",\"kind\":\"generic\",\"params\":1.1e9,"
    "\"fwd_flops\":1e12,\"out_bytes\":1e6,\"act_bytes\":0,\"kernels\":0},"
    "{\"name\":\"b\",\"kind\":\"generic\",\"params\":1.2e9,"
    "\"fwd_flops\":1e12,\"out_bytes\":1e6,\"act_bytes\":0,\"kernels\":0}]}";

/* tp 1, dp 2, pp 2 (stage 0: layer a, stage 1: layer b), ZeRO 1, mbs 1,
 * 2 micro-batches, with the given offload. */
static void strategy(const fmt_cluster *c, const fmt_model *m,
                     const char *offload, fmt_strategy *s)
{
    char text[300];
    fmt_strategy *v = NULL;
    int n = 0;
    util_error err;

    snprintf(text, sizeof text,
             "{\"strategies\":[{\"tp\":1,\"dp\":2,\"pp\":2,\"mbs\":1,\"zero\":1,"
             "\"offload\":\"%s\",\"stage_boundaries\":[0,1,2]}]}", offload);
    ck_assert_msg(fmt_parse_strategies(text, "s.json", c, m, 4, &v, &n, &err) ==
                      UTIL_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(n, 1);
    *s = v[0];
    free(v);
}

START_TEST(memory_moves_to_host)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s, s0;
    cost_params p;
    cost_memory x, x0;
    util_error err;

    cluster(&c, 64);
    ck_assert_int_eq(fmt_parse_model(model_json, "m.json", &m, &err), UTIL_OK);
    strategy(&c, &m, "optimizer", &s);
    strategy(&c, &m, "none", &s0);
    ck_assert_int_eq(s.offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert_int_eq(s0.offload, FMT_OFFLOAD_NONE);
    cost_params_init(&p);
    p.mem_reserve = 0.0;
    /* rank 2 = stage 1, layer b: fp16 weights 2 and gradients 2 bytes per
     * parameter stay, 2.4e9 each; optimizer state 16 bytes (fp32 master,
     * m, v, fp32 gradient copy) over dp 2 under ZeRO 1:
     * 1.2e9 x 16 / 2 = 9.6e9, on the GPU without offload, on the host
     * with it */
    ck_assert_int_eq(cost_rank_stage_memory(&m, &p, &s, 2, &x), 1);
    cost_rank_stage_memory(&m, &p, &s0, 2, &x0);
    ck_assert_double_eq_tol(x.weights, 2.4e9, 1.0);
    ck_assert_double_eq_tol(x.grads, 2.4e9, 1.0);
    ck_assert_double_eq_tol(x.optimizer, 0.0, 1e-9);
    ck_assert_double_eq_tol(x.host, 9.6e9, 1.0);
    ck_assert_double_eq_tol(x0.optimizer, 9.6e9, 1.0);
    ck_assert_double_eq_tol(x0.host, 0.0, 1e-9);
    ck_assert_double_eq_tol(x0.total - x.total, 9.6e9, 1.0);
    /* the per-layer form the layer assignment sums: 1.2e9 x (2 + 2) */
    p.offload = FMT_OFFLOAD_OPTIMIZER;
    p.zero_stage = 1;
    ck_assert_double_eq_tol(cost_layer_memory(&m, &p, 1, 1, 2, 1, 0), 4.8e9, 1.0);
    fmt_strategy_free(&s);
    fmt_strategy_free(&s0);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(host_memory_bounds_the_plan)
{
    fmt_cluster c, small;
    fmt_model m;
    fmt_strategy s;
    cost_params p;
    cost_result r;
    util_error err;

    cluster(&c, 64);
    cluster(&small, 32);
    ck_assert_int_eq(fmt_parse_model(model_json, "m.json", &m, &err), UTIL_OK);
    strategy(&c, &m, "optimizer", &s);
    cost_params_init(&p);
    /* the node holds all four shards: 2 x 1.1e9 x 16 / 2 + 2 x 1.2e9 x
     * 16 / 2 = 8.8e9 + 8.8e9 + 9.6e9 + 9.6e9 = 36.8e9 B = 34.27 GiB */
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert_int_eq(r.fits, 1);
    ck_assert_int_eq(r.host_node, 0);
    ck_assert_double_eq_tol(r.host_bytes, 36.8e9, 1.0);
    ck_assert_double_eq_tol(r.host_cap, 64.0 * GIB, 1.0);
    cost_result_free(&r);
    /* 34.27 GiB > 32 GiB: the GPUs fit, the host does not */
    ck_assert_int_eq(cost_evaluate(&small, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert_int_eq(r.fits, 0);
    ck_assert_double_eq_tol(r.host_bytes, 36.8e9, 1.0);
    ck_assert(r.mem_bytes[r.worst_rank] < r.mem_cap[r.worst_rank]);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    fmt_cluster_free(&small);
}
END_TEST

START_TEST(step_time_by_hand)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s, s0;
    cost_params p;
    cost_result r, r0;
    util_error err;
    double adam, t1;

    cluster(&c, 64);
    ck_assert_int_eq(fmt_parse_model(model_json, "m.json", &m, &err), UTIL_OK);
    strategy(&c, &m, "optimizer", &s);
    strategy(&c, &m, "none", &s0);
    cost_params_init(&p); /* optimizer_bytes 32, memory_eff 0.7 */
    /* shards: stage 0 1.1e9 / 2 = 5.5e8, stage 1 1.2e9 / 2 = 6e8
     * parameters per rank.  CPU Adam over the node's four shards,
     * 2 x 5.5e8 + 2 x 6e8 = 2.3e9 parameters x 32 B at 0.7 x 100 GB/s:
     * 73.6e9 / 70e9 = 1.0514286 s.  Stage 1's rank: fp16 gradients
     * 6e8 x 2 B / 25 GB/s = 0.048 s to the host (no overlap without
     * overlap_grad_reduce), fp16 weights back 0.048 s: 1.1474286 s, the
     * slower stage (stage 0: 1.0514286 + 2 x 0.044 = 1.1394286 s) */
    adam = 2.3e9 * 32.0 / (0.7 * 100e9);
    t1 = adam + 2.0 * 6e8 * 2.0 / 25e9;
    ck_assert_double_eq_tol(t1, 1.1474286, 1e-6);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.optimizer, t1, 1e-9);
    /* on the GPU instead: 6e8 x 32 B / (0.7 x 1 TB/s) = 0.0274286 s */
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s0, &r0, &err), UTIL_OK);
    ck_assert_double_eq_tol(r0.bd.optimizer, 6e8 * 32.0 / 0.7e12, 1e-12);
    /* only the optimizer step differs */
    ck_assert_double_eq_tol(r.iter_s - r0.iter_s, t1 - 6e8 * 32.0 / 0.7e12, 1e-9);
    cost_result_free(&r);
    cost_result_free(&r0);
    /* overlapped gradient reduction: the transfer to the host hides
     * behind the last backward pass, by at most its 0.048 s */
    p.overlap_grad_reduce = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert(r.bd.optimizer <= t1 + 1e-12);
    ck_assert(r.bd.optimizer >= adam + 6e8 * 2.0 / 25e9 - 1e-12);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_strategy_free(&s0);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Longest optimizer event of stage j in a simulated timeline, and the
 * longest backward event of that stage (its per-micro-batch backward). */
static void sim_stage(const cost_timeline *t, int j, double *opt, double *bwd)
{
    int i;

    *opt = *bwd = 0.0;
    for (i = 0; i < t->nevents; i++) {
        const cost_event *e = &t->events[i];
        double d = e->end - e->start;
        if (e->stage != j)
            continue;
        if (e->kind == COST_EV_OPTIMIZER && d > *opt)
            *opt = d;
        if (e->kind == COST_EV_BWD && d > *bwd)
            *bwd = d;
    }
}

/* The simulator's optimizer step of each stage against the closed form's
 * and the hand-computed step (the arithmetic of step_time_by_hand). */
static void check_sim(const fmt_cluster *c, const fmt_model *m, const fmt_strategy *s,
                      int overlap, const double want[2], int partial)
{
    cost_params p;
    cost_result r;
    cost_timeline t;
    util_error err;
    double opt[2], bwd[2];
    int j;

    cost_params_init(&p);
    p.overlap_grad_reduce = overlap;
    ck_assert_int_eq(cost_evaluate(c, m, NULL, &p, s, &r, &err), UTIL_OK);
    ck_assert_int_eq(cost_simulate(c, m, NULL, &p, s, p.overlap_dp, &t, &err), UTIL_OK);
    for (j = 0; j < 2; j++) {
        sim_stage(&t, j, &opt[j], &bwd[j]);
        ck_assert(bwd[j] > 0.0);
        if (partial) {
            /* d2h of the stage's rank, 0.044 s (stage 0) or 0.048 s
             * (stage 1), longer than the backward it hides behind: the
             * rest, d2h - backward, is exposed */
            double d2h = (j == 0 ? 5.5e8 : 6e8) * 2.0 / 25e9;
            ck_assert(bwd[j] < d2h);
            ck_assert_double_eq_tol(opt[j], want[j] + d2h - bwd[j], 1e-9);
        } else {
            ck_assert_double_eq_tol(opt[j], want[j], 1e-9);
        }
    }
    /* the closed form charges the slower stage's step */
    ck_assert_double_eq_tol(r.bd.optimizer, opt[0] > opt[1] ? opt[0] : opt[1], 1e-12);
    cost_timeline_free(&t);
    cost_result_free(&r);
}

START_TEST(simulated_step_matches_analytic)
{
    fmt_cluster slow, fast;
    fmt_model m;
    fmt_strategy s, s0;
    util_error err;
    /* CPU Adam of the node: 2.3e9 parameters x 32 B / (0.7 x 100 GB/s) =
     * 1.0514286 s; per rank of stage 0 (5.5e8 parameters) fp16 gradients
     * to the host 5.5e8 x 2 / 25e9 = 0.044 s and weights back 0.044 s,
     * of stage 1 (6e8) 0.048 s each way */
    double adam = 2.3e9 * 32.0 / (0.7 * 100e9);
    double exposed[2] = {adam + 2.0 * 0.044, adam + 2.0 * 0.048};
    double hidden[2] = {adam + 0.044, adam + 0.048};
    /* on the GPU: the shard x 32 B / (0.7 x 1 TB/s): 5.5e8 x 32 / 0.7e12
     * = 0.0251429 s, 6e8 x 32 / 0.7e12 = 0.0274286 s, whatever the
     * overlap */
    double gpu[2] = {5.5e8 * 32.0 / 0.7e12, 6e8 * 32.0 / 0.7e12};

    ck_assert_double_eq_tol(exposed[1], 1.1474286, 1e-6);
    ck_assert_double_eq_tol(hidden[1], 1.0994286, 1e-6);
    ck_assert_double_eq_tol(gpu[0], 0.0251429, 1e-6);
    /* 1 TFLOP/s: a layer's backward (2e12 FLOP per sample, Kaplan et al.
     * 2020) takes seconds and hides the 0.048 s transfer; 100 TFLOP/s:
     * tens of milliseconds, hiding part of it */
    cluster_tf(&slow, 64, 1.0);
    cluster_tf(&fast, 64, 100.0);
    ck_assert_int_eq(fmt_parse_model(model_flops_json, "m.json", &m, &err), UTIL_OK);
    strategy(&slow, &m, "optimizer", &s);
    strategy(&slow, &m, "none", &s0);
    /* without overlap nothing hides: gradients out, Adam, weights back */
    check_sim(&slow, &m, &s, 0, exposed, 0);
    check_sim(&fast, &m, &s, 0, exposed, 0);
    /* overlapped gradient reduction: the transfer to the host hides behind
     * the last backward pass, wholly or in part */
    check_sim(&slow, &m, &s, 1, hidden, 0);
    check_sim(&fast, &m, &s, 1, hidden, 1);
    /* without offload the step stays on the GPU, with or without overlap */
    check_sim(&slow, &m, &s0, 0, gpu, 0);
    check_sim(&slow, &m, &s0, 1, gpu, 0);
    check_sim(&fast, &m, &s0, 1, gpu, 0);
    fmt_strategy_free(&s);
    fmt_strategy_free(&s0);
    fmt_model_free(&m);
    fmt_cluster_free(&slow);
    fmt_cluster_free(&fast);
}
END_TEST

START_TEST(generation_defaults)
{
    static const struct {
        const char *dev;
        double pcie, host; /* GB/s */
    } want[] = {
        /* PCIe 4.0 x16 ~25 GB/s; DGX A100: 2 x 8 channels DDR4-3200 x 8 B */
        {"A100-40GB", 25.0, 2 * 8 * 3.2 * 8},
        /* PCIe 5.0 x16 ~50 GB/s; DGX H100: 2 x 8 channels DDR5-4800 */
        {"H100", 50.0, 2 * 8 * 4.8 * 8},
        /* NVLink-C2C 900 GB/s both ways; Grace LPDDR5X 512 GB/s */
        {"GH200-480GB", 450.0, 512.0},
        /* PCIe 3.0 x16 ~12 GB/s; DGX-1: 2 x 4 channels DDR4-2400 */
        {"V100-16GB", 12.0, 2 * 4 * 2.4 * 8},
    };
    size_t i;

    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        char text[300];
        fmt_cluster c;
        util_error err;
        double pcie, host;
        snprintf(text, sizeof text,
                 "{\"name\":\"g\",\"nodes\":[{\"name\":\"n\",\"device\":\"%s\","
                 "\"gpus\":1,\"intra_gbps\":100,\"nic_gbps\":100}]}", want[i].dev);
        ck_assert_msg(fmt_parse_cluster(text, "g.json", &c, &err) == UTIL_OK, "%s",
                      err.msg);
        ck_assert(c.nodes[0].host_mem == 0.0); /* not given */
        cost_offload_links(&c, 0, &pcie, &host);
        ck_assert_double_eq_tol(pcie, want[i].pcie * 1e9, 1.0);
        ck_assert_double_eq_tol(host, want[i].host * 1e9, 1.0);
        fmt_cluster_free(&c);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("costmodel_offload");
    TCase *tc = tcase_create("offload");

    tcase_add_test(tc, memory_moves_to_host);
    tcase_add_test(tc, host_memory_bounds_the_plan);
    tcase_add_test(tc, step_time_by_hand);
    tcase_add_test(tc, simulated_step_matches_analytic);
    tcase_add_test(tc, generation_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
