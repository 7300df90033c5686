/* tests/test_costmodel_evaluate.c: the cost model against values worked out by hand. */
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

/* Two device types: "fast" and "slow" (no catalogue). */
static void make_cluster(fmt_cluster *c, int nnodes, int gpus, int slow_last)
{
    int i;

    memset(c, 0, sizeof *c);
    c->ntypes = 2;
    c->types = calloc(2, sizeof *c->types);
    strcpy(c->types[0].name, "fast");
    c->types[0].mem_bytes = 16.0 * 1073741824.0;
    c->types[0].flops_fp16 = 100e12;
    c->types[0].mem_bw = 1e12;
    strcpy(c->types[1].name, "slow");
    c->types[1].mem_bytes = 16.0 * 1073741824.0;
    c->types[1].flops_fp16 = 50e12;
    c->types[1].mem_bw = 5e11;
    c->nnodes = nnodes;
    c->nodes = calloc((size_t)nnodes, sizeof *c->nodes);
    for (i = 0; i < nnodes; i++) {
        snprintf(c->nodes[i].name, sizeof c->nodes[i].name, "n%d", i);
        c->nodes[i].gpus = gpus;
        c->nodes[i].type = slow_last && i == nnodes - 1 ? 1 : 0;
        c->nodes[i].intra_bw = 100.0 * TU_GB8;
        c->nodes[i].intra_lat = 0.0;
        c->nodes[i].nic_bw = 10.0 * TU_GB8;
        c->nodes[i].nic_lat = 0.0;
    }
    ck_assert_int_eq(fmt_cluster_index(c), UTIL_OK);
}

static void params_exact(cost_params *p)
{
    cost_params_init(p);
    p->net_eff = 1.0;
    p->intra_eff = 1.0;
    p->mem_reserve = 0.0;
}

/* The inputs of one evaluation on make_cluster's devices, and its
 * result. */
typedef struct fixture {
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof; /* empty until tu_profile_add */
    cost_params p;    /* params_exact */
    fmt_strategy s;   /* empty until tu_strategy */
    cost_result r;
    util_error err;
} fixture;

/* make_cluster(nnodes, gpus, slow_last), tu_generic_model(nlayers,
 * out_bytes), an empty profile, exact parameters. */
static void fixture_init(fixture *x, int nnodes, int gpus, int slow_last,
                         int nlayers, double out_bytes)
{
    memset(x, 0, sizeof *x);
    make_cluster(&x->c, nnodes, gpus, slow_last);
    tu_generic_model(&x->m, nlayers, out_bytes);
    params_exact(&x->p);
}

/* cost_evaluate of x's strategy into x->r (freed first), which succeeds. */
static void evaluate(fixture *x)
{
    cost_result_free(&x->r);
    ck_assert_int_eq(cost_evaluate(&x->c, &x->m, &x->prof, &x->p, &x->s, &x->r,
                                   &x->err),
                     UTIL_OK);
}

static void fixture_free(fixture *x)
{
    cost_result_free(&x->r);
    fmt_strategy_free(&x->s);
    fmt_profile_free(&x->prof);
    fmt_model_free(&x->m);
    fmt_cluster_free(&x->c);
}

START_TEST(test_allreduce)
{
    /* AMP eq. 3: 2 (n-1) M / (n B) */
    ck_assert_double_eq_tol(cost_allreduce(1e9, 4, 1e9, 0.0), 1.5, 1e-12);
    ck_assert_double_eq_tol(cost_allreduce(1e9, 2, 1e9, 1e-3), 1.0 + 2e-3, 1e-12);
    ck_assert(cost_allreduce(1e9, 1, 1e9, 1.0) == 0.0);
}
END_TEST

/* Two stages on two nodes, gas 4: T = (gas-1) max t + sum t + sum e. */
START_TEST(test_pipeline_eq5)
{
    fixture x;
    double t_stage, e, expect;

    fixture_init(&x, 2, 1, 0, 4, 1.25e6);
    tu_profile_add(&x.prof, 4, "fast", 1, 1e-3, 2e-3);
    tu_strategy(&x.s, 1, 1, 2, (const int[]){0, 2, 4}, 4);
    evaluate(&x);
    t_stage = 2 * (1e-3 + 2e-3);
    e = 2.0 * (1.25e6 / (10.0 * TU_GB8)); /* activation + gradient over the NIC */
    expect = 3 * t_stage + 2 * t_stage + e;
    ck_assert_double_eq_tol(x.r.iter_s, expect, 1e-12);
    ck_assert_double_eq_tol(x.r.bd.bubble, t_stage, 1e-12);
    ck_assert_double_eq_tol(x.r.bd.p2p, e, 1e-12);
    ck_assert_double_eq_tol(x.r.bd.compute, 4 * t_stage, 1e-12);
    ck_assert_double_eq_tol(x.r.bd.compute + x.r.bd.tp_comm + x.r.bd.bubble +
                                x.r.bd.p2p + x.r.bd.dp_comm + x.r.bd.optimizer,
                            x.r.bd.total, 1e-12);
    ck_assert_int_eq(x.r.measured, 4);
    ck_assert_int_eq(x.r.estimated, 0);
    cost_result_free(&x.r);

    /* a slower link between the stages is charged on that link */
    x.c.nlinks = 1;
    x.c.links = calloc(1, sizeof *x.c.links);
    x.c.links[0].node_a = 0;
    x.c.links[0].gpu_a = -1;
    x.c.links[0].node_b = 1;
    x.c.links[0].gpu_b = -1;
    x.c.links[0].bw = 1.0 * TU_GB8;
    x.c.links[0].lat = 0.01;
    evaluate(&x);
    ck_assert_double_eq_tol(x.r.bd.p2p, 2.0 * (0.01 + 1.25e6 / TU_GB8), 1e-12);
    fixture_free(&x);
}
END_TEST

/* A stage runs at its slowest device; the slow replica sets the pace. */
START_TEST(test_slowest_device)
{
    fixture x;

    fixture_init(&x, 2, 1, 1, 2, 0.0); /* n0 fast, n1 slow */
    tu_profile_add(&x.prof, 2, "fast", 1, 1e-3, 2e-3);
    tu_profile_add(&x.prof, 2, "slow", 1, 4e-3, 8e-3);
    tu_strategy(&x.s, 1, 2, 1, (const int[]){0, 2}, 3);
    evaluate(&x);
    /* slow replica: 3 micro-batches x 2 layers x 12 ms; no params, no DP bytes */
    ck_assert_double_eq_tol(x.r.iter_s, 3 * 2 * 12e-3, 1e-12);
    fixture_free(&x);
}
END_TEST

/* Profile at mbs 1 and 4: interpolate between, extend beyond. */
START_TEST(test_profile_interpolation)
{
    fmt_model m;
    fmt_profile prof;
    cost_params p;
    fmt_device_type dt;
    cost_layer_time lt;

    tu_generic_model(&m, 1, 0.0);
    memset(&prof, 0, sizeof prof);
    memset(&dt, 0, sizeof dt);
    strcpy(dt.name, "fast");
    dt.flops_fp16 = 1e14;
    dt.mem_bw = 1e12;
    tu_profile_add(&prof, 1, "fast", 4, 7e-3, 14e-3);
    tu_profile_add(&prof, 1, "fast", 1, 1e-3, 2e-3);
    params_exact(&p);
    cost_layer_time_of(&m, &prof, &p, &dt, 0, 1, 2, 1e9, 0.0, 1e9, &lt);
    ck_assert_double_eq_tol(lt.fwd, 3e-3, 1e-15);
    ck_assert_double_eq_tol(lt.bwd, 6e-3, 1e-15);
    ck_assert_int_eq(lt.estimated, 0);
    cost_layer_time_of(&m, &prof, &p, &dt, 0, 1, 8, 1e9, 0.0, 1e9, &lt);
    ck_assert_double_eq_tol(lt.fwd, 15e-3, 1e-15);
    /* a device type the profile lacks is estimated */
    strcpy(dt.name, "other");
    cost_layer_time_of(&m, &prof, &p, &dt, 0, 1, 2, 1e9, 0.0, 1e9, &lt);
    ck_assert_int_eq(lt.estimated, 1);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
}
END_TEST

/* One measured size: the launches are fixed, the rest scales with mbs;
 * without a profile: launches + FLOPs / (peak eff) + bytes / (bw eff). */
START_TEST(test_single_point_and_estimate)
{
    fmt_model m;
    fmt_profile prof;
    cost_params p;
    fmt_device_type dt;
    cost_layer_time lt;
    double launch, w;

    tu_generic_model(&m, 1, 0.0);
    m.layers[0].kernels = 10;
    m.layers[0].fwd_flops = 1e12;
    m.layers[0].tp_flops_frac = 1.0;
    memset(&prof, 0, sizeof prof);
    memset(&dt, 0, sizeof dt);
    strcpy(dt.name, "fast");
    dt.flops_fp16 = 1e14;
    dt.mem_bw = 1e12;
    tu_profile_add(&prof, 1, "fast", 1, 2e-3, -1.0);
    params_exact(&p);
    launch = 10 * p.kernel_overhead;
    cost_layer_time_of(&m, &prof, &p, &dt, 0, 1, 4, 1e9, 0.0, 1e9, &lt);
    ck_assert_double_eq_tol(lt.fwd, launch + 4 * (2e-3 - launch), 1e-15);
    /* backward of a pure-GEMM layer: twice the forward */
    ck_assert_double_eq_tol(lt.bwd, 2.0 * lt.fwd, 1e-15);

    cost_layer_time_of(&m, NULL, &p, &dt, 0, 1, 4, 1e9, 0.0, 1e9, &lt);
    w = 1e12 / (1e14 * p.compute_eff);
    ck_assert_double_eq_tol(lt.fwd, launch + 4 * w, 1e-15);
    ck_assert_int_eq(lt.estimated, 1);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
}
END_TEST

/* Transfers that leave a node together share its NIC. */
START_TEST(test_nic_sharing)
{
    fixture x;

    fixture_init(&x, 2, 2, 0, 2, 1.25e6);
    tu_profile_add(&x.prof, 2, "fast", 1, 0.0, 0.0);
    /* dp 2, pp 2: both replicas send from node 0 to node 1 at once */
    tu_strategy(&x.s, 1, 2, 2, (const int[]){0, 1, 2}, 1);
    evaluate(&x);
    ck_assert_double_eq_tol(x.r.bd.p2p, 2.0 * 1.25e6 / (10.0 * TU_GB8 / 2.0), 1e-12);
    fixture_free(&x);
}
END_TEST

/* DP all-reduce of the stage's gradients over the group's slowest link,
 * and the tied-embedding all-reduce between first and last stage. */
START_TEST(test_dp_and_tied_sync)
{
    fixture x;
    double bytes = 1e8 * 2.0, ar;

    fixture_init(&x, 2, 1, 0, 2, 0.0);
    x.m.layers[0].params = 1e8;
    tu_profile_add(&x.prof, 2, "fast", 1, 0.0, 0.0);
    x.p.optimizer_bytes = 0.0;
    tu_strategy(&x.s, 1, 2, 1, (const int[]){0, 2}, 1);
    evaluate(&x);
    ar = cost_allreduce(bytes, 2, 10.0 * TU_GB8, 0.0);
    ck_assert_double_eq_tol(x.r.bd.dp_comm, ar, 1e-12);
    cost_result_free(&x.r);
    fmt_strategy_free(&x.s);

    /* pp 2 with layers 0 and 1 tied: their gradients meet across the NIC */
    x.m.layers[1].params = 1e8;
    x.m.layers[0].tied_group = 1;
    x.m.layers[1].tied_group = 1;
    tu_strategy(&x.s, 1, 1, 2, (const int[]){0, 1, 2}, 1);
    evaluate(&x);
    ck_assert_double_eq_tol(x.r.bd.dp_comm, ar, 1e-12);
    fixture_free(&x);
}
END_TEST

START_TEST(test_costmodel_memory)
{
    fmt_model m;
    cost_params p;
    double expect;

    tu_generic_model(&m, 2, 0.0);
    m.layers[0].params = 1e6;
    m.layers[0].act_bytes = 1000.0;
    m.layers[0].act_rep_bytes = 200.0;
    m.layers[1].params = 3e6;
    m.layers[1].act_bytes = 500.0;
    params_exact(&p);
    /* tp 2: params halved; activations: rep + rest / tp */
    expect = 4e6 / 2 * 20.0 + 2 * 3 * (200.0 + 800.0 / 2 + 500.0 / 2);
    ck_assert_double_eq_tol(cost_stage_memory(&m, &p, 0, 2, 2, 4, 2, 3), expect, 1e-6);
    /* ZeRO-1 over dp 4: the 16 optimizer bytes (20 - 2 x 2) are sharded */
    p.zero_stage = 1;
    expect = 4e6 * (4.0 + 16.0 / 4) + 1 * 1 * 1500.0;
    ck_assert_double_eq_tol(cost_stage_memory(&m, &p, 0, 2, 1, 4, 1, 1), expect, 1e-6);
    p.zero_stage = 3;
    expect = 4e6 * (4.0 + 16.0) / 4 + 1500.0;
    ck_assert_double_eq_tol(cost_stage_memory(&m, &p, 0, 2, 1, 4, 1, 1), expect, 1e-6);
    /* in-flight micro-batches: 1F1B keeps pp - stage, GPipe all */
    ck_assert_int_eq(cost_inflight(&p, 0, 4, 8), 4);
    ck_assert_int_eq(cost_inflight(&p, 3, 4, 8), 1);
    ck_assert_int_eq(cost_inflight(&p, 0, 4, 2), 2);
    p.schedule = FMT_SCHED_GPIPE;
    ck_assert_int_eq(cost_inflight(&p, 3, 4, 8), 8);
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_strategy_check)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    util_error err;

    make_cluster(&c, 2, 2, 0);
    tu_generic_model(&m, 4, 0.0);
    m.heads = 6;
    tu_strategy(&s, 1, 2, 2, (const int[]){0, 2, 4}, 2);
    s.mbs = 2;
    ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 8, &err), UTIL_OK);
    ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 6, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not divisible"));
    s.bounds[1] = 4;
    ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 8, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "increasing"));
    s.bounds[1] = 2;
    s.ranks[3] = 0;
    ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 8, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "more than one rank"));
    fmt_strategy_free(&s);
    tu_strategy(&s, 4, 1, 1, (const int[]){0, 4}, 8);
    ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 8, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "attention heads"));
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(test_params_set)
{
    cost_params p;
    util_error err;

    cost_params_init(&p);
    ck_assert_int_eq(cost_params_set(&p, "net_eff", 0.25, &err), UTIL_OK);
    ck_assert(p.net_eff == 0.25);
    ck_assert_int_eq(cost_params_set(&p, "zero_stage", 2, &err), UTIL_OK);
    ck_assert_int_eq(p.zero_stage, 2);
    ck_assert_int_eq(cost_params_set(&p, "zero_stage", 1.5, &err), UTIL_EINVAL);
    ck_assert_int_eq(cost_params_set(&p, "net_eff", 0.0, &err), UTIL_EINVAL);
    ck_assert_int_eq(cost_params_set(&p, "nosuch", 1.0, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown"));
    ck_assert_ptr_nonnull(cost_params_name(0));
    ck_assert_ptr_null(cost_params_name(1000));
}
END_TEST

/* The search's layer assignment gives a slow stage fewer layers. */
START_TEST(test_assign_balances_speed)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params p;
    fmt_strategy s;
    util_error err;
    int l;

    make_cluster(&c, 2, 1, 1);
    tu_generic_model(&m, 12, 0.0);
    for (l = 0; l < 12; l++) /* every stage needs parameters */
        m.layers[l].params = 1e6;
    memset(&prof, 0, sizeof prof);
    tu_profile_add(&prof, 12, "fast", 1, 1e-3, 2e-3);
    tu_profile_add(&prof, 12, "slow", 1, 2e-3, 4e-3);
    params_exact(&p);
    tu_strategy(&s, 1, 1, 2, NULL, 8);
    ck_assert_int_eq(search_assign_layers(&c, &m, &prof, &p, &s, &err), UTIL_OK);
    ck_assert_int_eq(s.bounds[1], 8); /* 8 fast layers, 4 slow ones */
    fmt_strategy_free(&s);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        test_allreduce, test_pipeline_eq5, test_slowest_device,
        test_profile_interpolation, test_single_point_and_estimate,
        test_nic_sharing, test_dp_and_tied_sync, test_costmodel_memory,
        test_strategy_check, test_params_set, test_assign_balances_speed,
    };

    return tu_run_tests("cost", tests, TU_N(tests));
}
