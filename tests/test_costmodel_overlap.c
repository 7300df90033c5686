/* tests/test_costmodel_overlap.c: communication overlap (docs/
 * time-model.md, "Overlap") against values worked out by hand: the
 * pipelined exposure formula, the DP reduce-scatter behind the backward
 * and the weights' all-gather behind the forward under ZeRO 1, TP
 * collectives behind their GEMMs, Transformer Engine's userbuffers, what
 * TP overlap needs of the cluster, and the flags the search sets for a
 * launcher. */
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

/* Exact arithmetic: whole peak and bandwidths, no launch cost, whole
 * link rates on every class of link. */
static void params_exact(cost_params *p)
{
    cost_params_init(p);
    p->gemm_eff = 1.0;
    p->compute_eff = 1.0;
    p->memory_eff = 1.0;
    p->kernel_overhead = 0.0;
    p->net_eff = 1.0;
    p->intra_eff = 1.0;
    p->nvlink_eff = 1.0;
    p->mem_reserve = 0.0;
}

/* Two chunks of 10 ms of transfer against 8 ms of compute: the second
 * transfer waits for nothing, the pipeline ends 10/n + max(10, 8) (n - 1)
 * / n + ... -> exposed max(10 / n, 10 - 8 (1 - 1 / n)). */
START_TEST(test_exposed_by_hand)
{
    ck_assert_double_eq_tol(cost_overlap_exposed(10.0, 8.0, 4.0), 4.0, 1e-12);
    ck_assert_double_eq_tol(cost_overlap_exposed(10.0, 40.0, 4.0), 2.5, 1e-12);
    ck_assert_double_eq_tol(cost_overlap_exposed(10.0, 0.0, 4.0), 10.0, 1e-12);
    ck_assert_double_eq_tol(cost_overlap_exposed(10.0, 8.0, 1.0), 10.0, 1e-12);
    ck_assert_double_eq_tol(cost_overlap_exposed(0.0, 8.0, 4.0), 0.0, 1e-12);
}
END_TEST

/* ZeRO 1 over 2 devices, 4 layers of 25e6 parameters (200 MB of fp16
 * gradients), 1 ms forward and 2 ms backward per layer: the all-reduce's
 * ring bytes take t = 200e6 / 12.5e9 = 16 ms, half of it the gradients'
 * reduce-scatter, half the weights' all-gather.  Buckets of 25e6: n = 4.
 *   no overlap:        16 ms
 *   overlap_grad:      rs max(8/4, 8 - 8 (3/4)) = 2 ms, ag 8 ms: 10 ms
 *   + overlap_param:   ag max(8/4, 8 - 4 (3/4)) = 5 ms: 7 ms
 * ZeRO 0 with overlap_grad overlaps the whole all-reduce:
 *   max(16/4, 16 - 6) = 10 ms. */
START_TEST(test_dp_grad_and_param_by_hand)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params p;
    fmt_strategy s;
    cost_result r;
    double ms = 1e-3;
    int l;

    tu_cluster_nodes(&c, 2, 1, 100.0 * TU_GB8);
    tu_generic_model(&m, 4, 0.0);
    memset(&prof, 0, sizeof prof);
    tu_profile_add(&prof, 4, "X", 1, 1e-3, 2e-3);
    for (l = 0; l < 4; l++)
        m.layers[l].params = 25e6;
    params_exact(&p);
    p.dp_bucket = 25e6;
    tu_strategy(&s, 1, 2, 1, (const int[]){0, 4}, 2);
    s.zero = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, &prof, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.dp_comm, 16 * ms, 1e-12);
    cost_result_free(&r);
    s.overlap_grad = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, &prof, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.dp_comm, 10 * ms, 1e-12);
    cost_result_free(&r);
    s.overlap_param = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, &prof, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.dp_comm, 7 * ms, 1e-12);
    cost_result_free(&r);
    /* without the distributed optimizer there is no gather to overlap */
    s.zero = 0;
    ck_assert_int_eq(cost_strategy_overlap(&p, &s, COST_OVERLAP_PARAM), 0);
    ck_assert_int_eq(cost_evaluate(&c, &m, &prof, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.dp_comm, 10 * ms, 1e-12);
    cost_result_free(&r);
    /* a strategy that states nothing takes the cost parameter */
    s.overlap_grad = -1;
    s.overlap_param = -1;
    p.overlap_grad_reduce = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, &prof, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.dp_comm, 10 * ms, 1e-12);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* One transformer-kind layer of 6e11 FLOPs per sample, all divided by
 * TP, at tp 2 on one node of 100 GB/s links: GEMM g = 3e11 / 1e14 = 3 ms
 * forward, 6 ms backward, w = 9 ms.  Two collectives of B bytes a pass,
 * each an all-reduce over 2 of B / 100e9 s.
 *   B = 3e8:  c = 4 x 3 ms = 12 ms; hidden w (1 - 1/2) = 4.5 ms: 7.5 ms
 *   B = 5e7:  c = 4 x 0.5 ms = 2 ms < 4.5 ms: all hidden
 * per micro-batch; 2 micro-batches. */
START_TEST(test_tp_by_hand)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result r;
    double ms = 1e-3;

    tu_cluster_nodes(&c, 1, 2, 100e9);
    tu_generic_model(&m, 1, 0.0);
    m.layers[0].kind = FMT_KIND_TRANSFORMER;
    m.layers[0].fwd_flops = 6e11;
    m.layers[0].tp_flops_frac = 1.0;
    m.layers[0].tp_collectives = 2;
    m.layers[0].tp_comm_bytes = 3e8;
    params_exact(&p);
    tu_strategy(&s, 2, 1, 1, (const int[]){0, 1}, 2);
    s.sp = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.compute, 2 * 9 * ms, 1e-12);
    ck_assert_double_eq_tol(r.bd.tp_comm, 2 * 12 * ms, 1e-12);
    cost_result_free(&r);
    s.overlap_tp = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.compute, 2 * 9 * ms, 1e-12);
    ck_assert_double_eq_tol(r.bd.tp_comm, 2 * 7.5 * ms, 1e-12);
    cost_result_free(&r);
    m.layers[0].tp_comm_bytes = 5e7;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.tp_comm, 0.0, 1e-12);
    cost_result_free(&r);
    /* without sequence parallelism Megatron-LM has no TP overlap */
    s.sp = 0;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.tp_comm, 2 * 2 * ms, 1e-12);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    /* PCIe-class links (32 GB/s): the flag stated, nothing hidden */
    tu_cluster_nodes(&c, 1, 2, 32e9);
    tu_generic_model(&m, 1, 0.0);
    m.layers[0].kind = FMT_KIND_TRANSFORMER;
    m.layers[0].fwd_flops = 6e11;
    m.layers[0].tp_flops_frac = 1.0;
    m.layers[0].tp_collectives = 2;
    m.layers[0].tp_comm_bytes = 3.2e7; /* 1 ms over 32 GB/s */
    tu_strategy(&s, 2, 1, 1, (const int[]){0, 1}, 2);
    s.sp = 1;
    s.overlap_tp = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, NULL), UTIL_OK);
    ck_assert_double_eq_tol(r.bd.tp_comm, 2 * 4 * ms, 1e-12);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* TP overlap needs every TP group inside one node of NVLink-class links
 * and Megatron-style training code. */
START_TEST(test_tp_hardware)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;

    tu_generic_model(&m, 2, 0.0);
    tu_cluster_nodes(&c, 2, 4, 300e9);
    tu_strategy(&s, 4, 2, 1, (const int[]){0, 2}, 2);
    ck_assert_int_eq(cost_overlap_tp_hardware(&c, &m, &s), 1);
    /* a TP group over both nodes */
    s.ranks[2] = 4;
    s.ranks[4] = 2;
    ck_assert_int_eq(cost_overlap_tp_hardware(&c, &m, &s), 0);
    s.ranks[2] = 2;
    s.ranks[4] = 4;
    m.cross_entropy = FMT_CE_PYTORCH; /* plain PyTorch code: no TE */
    ck_assert_int_eq(cost_overlap_tp_hardware(&c, &m, &s), 0);
    m.cross_entropy = FMT_CE_MEGATRON;
    fmt_cluster_free(&c);
    tu_cluster_nodes(&c, 2, 4, 32e9); /* PCIe 4.0 x16 */
    ck_assert_int_eq(cost_overlap_tp_hardware(&c, &m, &s), 0);
    fmt_strategy_free(&s);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* Transformer Engine's userbuffers: 10 buffers of seq x mbs x hidden
 * elements of 2 bytes on every TP rank: s 1000, h 500, mbs 2 -> 2e7. */
START_TEST(test_userbuffer_memory)
{
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_memory off, on;

    tu_generic_model(&m, 2, 0.0);
    m.seq = 1000;
    m.hidden = 500;
    params_exact(&p);
    tu_strategy(&s, 2, 1, 1, (const int[]){0, 2}, 2);
    s.mbs = 2;
    s.sp = 1;
    ck_assert_double_eq_tol(cost_overlap_tp_memory(&m, &s), 2e7, 1e-6);
    cost_rank_stage_memory(&m, &p, &s, 0, &off);
    s.overlap_tp = 1;
    cost_rank_stage_memory(&m, &p, &s, 0, &on);
    ck_assert_double_eq_tol(on.total - off.total, 2e7, 1e-6);
    ck_assert_double_eq_tol(on.buffers - off.buffers, 2e7, 1e-6);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
}
END_TEST

/* The search's flags: all on for no launcher on an NVLink node; the TP
 * one off on PCIe, for Megatron-LM core_r0.9.0 and DeepSpeed; DeepSpeed
 * overlaps gradients only with ZeRO >= 1 at pp 1 and never P2P;
 * Megatron-LM P2P only with interleaving. */
START_TEST(test_search_flags)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    search_launcher lc;

    tu_generic_model(&m, 4, 0.0);
    cost_params_init(&p);
    tu_cluster_nodes(&c, 2, 4, 300e9);
    tu_strategy(&s, 2, 2, 2, (const int[]){0, 2, 4}, 4);
    s.sp = 1;
    s.zero = 1;
    search_overlap_choose(&c, &m, &p, NULL, &s);
    ck_assert_int_eq(s.overlap_grad, 1);
    ck_assert_int_eq(s.overlap_param, 1);
    ck_assert_int_eq(s.overlap_tp, 1);
    ck_assert_int_eq(s.overlap_p2p, -1); /* the cost parameter's */
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW, &lc,
                                        NULL), UTIL_OK);
    search_overlap_choose(&c, &m, &p, &lc, &s);
    ck_assert_int_eq(s.overlap_tp, 1);
    ck_assert_int_eq(s.overlap_p2p, 0); /* no interleaving */
    s.vpp = 2;
    search_overlap_choose(&c, &m, &p, &lc, &s);
    ck_assert_int_eq(s.overlap_p2p, 1);
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_OLD, &lc,
                                        NULL), UTIL_OK);
    search_overlap_choose(&c, &m, &p, &lc, &s);
    ck_assert_int_eq(s.overlap_tp, 0);
    ck_assert_int_eq(s.overlap_grad, 1);
    ck_assert_int_eq(export_target_caps(EXPORT_DEEPSPEED, EXPORT_VERSION_OLD, &lc,
                                        NULL), UTIL_OK);
    s.vpp = 1;
    search_overlap_choose(&c, &m, &p, &lc, &s);
    ck_assert_int_eq(s.overlap_grad, 0); /* pp 2 */
    ck_assert_int_eq(s.overlap_param, 0);
    ck_assert_int_eq(s.overlap_tp, 0);
    ck_assert_int_eq(s.overlap_p2p, 0);
    fmt_strategy_free(&s);
    tu_strategy(&s, 1, 8, 1, (const int[]){0, 4}, 1);
    s.zero = 1;
    search_overlap_choose(&c, &m, &p, &lc, &s);
    ck_assert_int_eq(s.overlap_grad, 1);
    ck_assert_int_eq(s.overlap_param, 0);
    fmt_strategy_free(&s);
    fmt_cluster_free(&c);
    /* PCIe node: no TP overlap even without a launcher */
    tu_cluster_nodes(&c, 2, 4, 32e9);
    tu_strategy(&s, 2, 2, 2, (const int[]){0, 2, 4}, 4);
    s.sp = 1;
    search_overlap_choose(&c, &m, &p, NULL, &s);
    ck_assert_int_eq(s.overlap_tp, 0);
    ck_assert_int_eq(s.overlap_grad, 1);
    fmt_strategy_free(&s);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

static Suite *plain_suite(void)
{
    const TTest *const tests[] = {
        test_exposed_by_hand, test_dp_grad_and_param_by_hand, test_tp_by_hand,
        test_tp_hardware,     test_userbuffer_memory,         test_search_flags,
    };

    return tu_suite("overlap", "core", tests, TU_N(tests));
}

int main(void)
{
    return tu_run(plain_suite());
}
