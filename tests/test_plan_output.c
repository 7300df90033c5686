/* tests/test_plan_output.c: SHA-256 vectors, plan JSON and the text table. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "plan.h"
#include "testutil.h"

#define GIB 1073741824.0

/* ---- SHA-256 --------------------------------------------------------- */

static void check_sha(const void *data, size_t n, const char *want)
{
    char out[65];

    memset(out, 'z', sizeof out);
    util_sha256_hex(data, n, out);
    ck_assert_uint_eq(strlen(out), 64);
    ck_assert_str_eq(out, want);
}

START_TEST(sha_empty)
{
    check_sha("", 0,
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(sha_abc)
{
    check_sha("abc", 3,
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(sha_448)
{
    const char *msg = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

    check_sha(msg, strlen(msg),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

START_TEST(sha_million_a)
{
    size_t n = 1000000;
    char *buf = malloc(n);

    ck_assert_ptr_nonnull(buf);
    memset(buf, 'a', n);
    check_sha(buf, n,
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(buf);
}
END_TEST

/* Lengths around the padding boundaries (values from coreutils sha256sum). */
START_TEST(sha_padding_edges)
{
    static const struct {
        size_t n;
        const char *hex;
    } v[] = {
        {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
        {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
        {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
        {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
        {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
        {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
    };
    char buf[128];
    size_t i;

    memset(buf, 'x', sizeof buf);
    for (i = 0; i < sizeof v / sizeof v[0]; i++)
        check_sha(buf, v[i].n, v[i].hex);
}
END_TEST

/* ---- fixture: 2 nodes x 2 GPUs, 4 layers, two strategies ------------- */

static fmt_cluster fx_c;
static fmt_model fx_m;
static cost_params fx_p;
static fmt_strategy fx_s[2];
static cost_result fx_r[2];
static plan_meta fx_meta;

static void fixture_setup(void)
{
    static const char *names[4] = {"embed", "block0", "block1", "head"};
    static const double params[4] = {1000, 500, 500, 1000};
    int i;

    memset(&fx_c, 0, sizeof fx_c);
    snprintf(fx_c.name, sizeof fx_c.name, "tiny");
    fx_c.ntypes = 2;
    fx_c.types = calloc(2, sizeof *fx_c.types);
    ck_assert_ptr_nonnull(fx_c.types);
    snprintf(fx_c.types[0].name, sizeof fx_c.types[0].name, "V100");
    fx_c.types[0].mem_bytes = 32 * GIB;
    fx_c.types[0].flops_fp16 = 125e12;
    fx_c.types[0].mem_bw = 900e9;
    snprintf(fx_c.types[1].name, sizeof fx_c.types[1].name, "T4");
    fx_c.types[1].mem_bytes = 16 * GIB;
    fx_c.types[1].flops_fp16 = 65e12;
    fx_c.types[1].mem_bw = 320e9;
    fx_c.nnodes = 2;
    fx_c.nodes = calloc(2, sizeof *fx_c.nodes);
    ck_assert_ptr_nonnull(fx_c.nodes);
    for (i = 0; i < 2; i++) {
        snprintf(fx_c.nodes[i].name, sizeof fx_c.nodes[i].name, "n%d", i);
        fx_c.nodes[i].type = i;
        fx_c.nodes[i].gpus = 2;
        fx_c.nodes[i].intra_bw = 100e9;
        fx_c.nodes[i].nic_bw = 10e9;
    }
    snprintf(fx_c.nodes[0].region, sizeof fx_c.nodes[0].region, "us-east");
    ck_assert_int_eq(fmt_cluster_index(&fx_c), UTIL_OK);
    ck_assert_int_eq(fx_c.ndevices, 4);

    memset(&fx_m, 0, sizeof fx_m);
    snprintf(fx_m.name, sizeof fx_m.name, "tiny-gpt");
    fx_m.nlayers = 4;
    fx_m.layers = calloc(4, sizeof *fx_m.layers);
    ck_assert_ptr_nonnull(fx_m.layers);
    for (i = 0; i < 4; i++) {
        snprintf(fx_m.layers[i].name, sizeof fx_m.layers[i].name, "%s", names[i]);
        fx_m.layers[i].params = params[i];
    }
    fx_m.layers[0].tied_group = 1;
    fx_m.layers[3].tied_group = 1;
    fx_m.dtype_bytes = 2;
    fx_m.bf16 = 1;

    /* by hand: no dependency on cost_params_init */
    memset(&fx_p, 0, sizeof fx_p);
    fx_p.compute_eff = 0.5;
    fx_p.memory_eff = 0.7;
    fx_p.kernel_overhead = 10e-6;
    fx_p.net_eff = 0.6;
    fx_p.intra_eff = 1.0;
    fx_p.bwd_ratio = 2.0;
    fx_p.optimizer_bytes = 32;
    fx_p.schedule = FMT_SCHED_1F1B;
    fx_p.state_bytes = 16;
    fx_p.zero_stage = 1;
    fx_p.recompute = 0;
    fx_p.mem_reserve = 1.5e9;

    /* strategy 0: tp 1, dp 2, pp 2, full results */
    ck_assert_int_eq(fmt_strategy_alloc(&fx_s[0], 1, 2, 2), UTIL_OK);
    fx_s[0].mbs = 2;
    fx_s[0].gas = 4;
    fx_s[0].bounds[0] = 0;
    fx_s[0].bounds[1] = 2;
    fx_s[0].bounds[2] = 4;
    for (i = 0; i < 4; i++)
        fx_s[0].ranks[i] = i;
    snprintf(fx_s[0].placement, sizeof fx_s[0].placement, "megatron");
    memset(&fx_r[0], 0, sizeof fx_r[0]);
    fx_r[0].iter_s = 0.1 + 0.2; /* not exactly 0.3: checks round trip */
    fx_r[0].bd.compute = 0.2;
    fx_r[0].bd.tp_comm = 0.0;
    fx_r[0].bd.bubble = 0.05;
    fx_r[0].bd.p2p = 0.01;
    fx_r[0].bd.dp_comm = 0.03;
    fx_r[0].bd.optimizer = 0.01;
    fx_r[0].bd.total = fx_r[0].iter_s;
    fx_r[0].pp = 2;
    fx_r[0].stage_s = malloc(2 * sizeof(double));
    fx_r[0].p2p_s = malloc(sizeof(double));
    fx_r[0].nranks = 4;
    fx_r[0].mem_bytes = malloc(4 * sizeof(double));
    fx_r[0].mem_cap = malloc(4 * sizeof(double));
    ck_assert_ptr_nonnull(fx_r[0].stage_s);
    ck_assert_ptr_nonnull(fx_r[0].p2p_s);
    ck_assert_ptr_nonnull(fx_r[0].mem_bytes);
    ck_assert_ptr_nonnull(fx_r[0].mem_cap);
    fx_r[0].stage_s[0] = 0.02;
    fx_r[0].stage_s[1] = 0.025;
    fx_r[0].p2p_s[0] = 0.001;
    fx_r[0].mem_bytes[0] = 10.12345 * GIB;
    fx_r[0].mem_bytes[1] = 10.0 * GIB;
    fx_r[0].mem_bytes[2] = 12.0 * GIB;
    fx_r[0].mem_bytes[3] = 12.5 * GIB;
    fx_r[0].mem_cap[0] = 32 * GIB;
    fx_r[0].mem_cap[1] = 32 * GIB;
    fx_r[0].mem_cap[2] = 16 * GIB;
    fx_r[0].mem_cap[3] = 16 * GIB;
    fx_r[0].fits = 1;
    fx_r[0].worst_rank = 3;
    fx_r[0].estimated = 4;
    fx_r[0].measured = 0;

    /* strategy 1: tp 2, pp 2, permuted ranks, no per-stage/memory arrays */
    ck_assert_int_eq(fmt_strategy_alloc(&fx_s[1], 2, 1, 2), UTIL_OK);
    fx_s[1].mbs = 1;
    fx_s[1].gas = 8;
    fx_s[1].schedule = FMT_SCHED_GPIPE;
    fx_s[1].bounds[0] = 0;
    fx_s[1].bounds[1] = 1;
    fx_s[1].bounds[2] = 4;
    fx_s[1].ranks[0] = 2;
    fx_s[1].ranks[1] = 3;
    fx_s[1].ranks[2] = 0;
    fx_s[1].ranks[3] = 1;
    snprintf(fx_s[1].placement, sizeof fx_s[1].placement, "fastest-first");
    memset(&fx_r[1], 0, sizeof fx_r[1]);
    fx_r[1].iter_s = 2.0;
    fx_r[1].bd.compute = 1.5;
    fx_r[1].bd.tp_comm = 0.25;
    fx_r[1].bd.bubble = 0.25;
    fx_r[1].bd.total = 2.0;
    fx_r[1].pp = 2;
    fx_r[1].fits = 0;
    fx_r[1].worst_rank = 1;
    fx_r[1].measured = 4;

    memset(&fx_meta, 0, sizeof fx_meta);
    fx_meta.cluster_path = "examples/tiny-cluster.json";
    fx_meta.model_path = "examples/tiny-model.json";
    fx_meta.profile_path = NULL;
    util_sha256_hex("cluster", 7, fx_meta.cluster_digest);
    util_sha256_hex("model", 5, fx_meta.model_digest);
    fx_meta.global_batch = 16;
    fx_meta.method = "amp";
    fx_meta.evaluated = 123;
    fx_meta.rejected_memory = 7;
    fx_meta.elapsed_s = 0.5;
}

static void fixture_teardown(void)
{
    int i;

    for (i = 0; i < 2; i++) {
        fmt_strategy_free(&fx_s[i]);
        cost_result_free(&fx_r[i]);
    }
    fmt_model_free(&fx_m);
    fmt_cluster_free(&fx_c);
}

/* ---- JSON access helpers --------------------------------------------- */

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    ck_assert_msg(v != NULL, "missing key '%s'", key);
    return v;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    ck_assert_msg(cJSON_IsNumber(v), "'%s' is not a number", key);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    ck_assert_msg(cJSON_IsString(v), "'%s' is not a string", key);
    return v->valuestring;
}

static const cJSON *at(const cJSON *a, int i)
{
    const cJSON *v;

    ck_assert(cJSON_IsArray(a));
    v = cJSON_GetArrayItem(a, i);
    ck_assert_msg(v != NULL, "no array item %d", i);
    return v;
}

static cJSON *fx_plan_json(int n)
{
    char *text = plan_to_json(&fx_meta, &fx_c, &fx_m, &fx_p, fx_s, fx_r, n);
    cJSON *doc;

    ck_assert_ptr_nonnull(text);
    doc = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(doc);
    return doc;
}

/* ---- plan JSON ------------------------------------------------------- */

START_TEST(json_header)
{
    cJSON *doc = fx_plan_json(2);
    const cJSON *o, *cp;
    char want[65];
    static const char *keys[] = {
        "compute_eff", "memory_eff", "kernel_overhead", "net_eff", "intra_eff",
        "bwd_ratio", "bwd_traffic", "optimizer_bytes", "schedule", "state_bytes",
        "zero_stage", "recompute", "mem_reserve", "fidelity", "overlap_dp",
        "frozen_layers", "gemm_eff", "attention", "tf32", "sp",
        "overlap_grad_reduce", "dp_bucket", "p2p_scatter", "grad_accum_fusion",
        "nvlink_eff", "overlap_p2p", "nccl_cumem", "launch_mode"};
    size_t i;

    ck_assert_str_eq(str(doc, "schema"), PLAN_SCHEMA);
    ck_assert_str_eq(str(doc, "schema"), "hetplan-plan/1");
    o = get(doc, "planner");
    ck_assert_str_eq(str(o, "name"), "hetplan");
    ck_assert_str_eq(str(o, "version"), HETPLAN_VERSION);

    o = get(doc, "inputs");
    ck_assert_str_eq(str(get(o, "cluster"), "path"), "examples/tiny-cluster.json");
    util_sha256_hex("cluster", 7, want);
    ck_assert_str_eq(str(get(o, "cluster"), "sha256"), want);
    ck_assert_str_eq(str(get(o, "model"), "path"), "examples/tiny-model.json");
    ck_assert(cJSON_IsNull(get(o, "profile")));

    o = get(doc, "settings");
    ck_assert_int_eq((int)num(o, "global_batch"), 16);
    ck_assert_str_eq(str(o, "method"), "amp");
    ck_assert_str_eq(str(o, "schedule"), "1f1b");
    ck_assert_str_eq(str(o, "precision"), "bf16");
    cp = get(o, "cost_params");
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
        get(cp, keys[i]);
    ck_assert_int_eq(cJSON_GetArraySize(cp), (int)(sizeof keys / sizeof keys[0]));
    ck_assert_double_eq(num(cp, "compute_eff"), 0.5);
    ck_assert_double_eq(num(cp, "kernel_overhead"), 10e-6);
    ck_assert_double_eq(num(cp, "mem_reserve"), 1.5e9);
    ck_assert_int_eq((int)num(cp, "zero_stage"), 1);
    ck_assert_str_eq(str(cp, "schedule"), "1f1b");
    ck_assert_str_eq(str(cp, "recompute"), "none");

    o = get(doc, "search");
    ck_assert_int_eq((int)num(o, "evaluated"), 123);
    ck_assert_int_eq((int)num(o, "rejected_memory"), 7);
    ck_assert_double_eq(num(o, "elapsed_s"), 0.5);

    o = get(doc, "cluster");
    ck_assert_str_eq(str(o, "name"), "tiny");
    ck_assert_int_eq((int)num(o, "devices"), 4);
    ck_assert_int_eq(cJSON_GetArraySize(get(o, "nodes")), 2);
    ck_assert_str_eq(str(at(get(o, "nodes"), 0), "name"), "n0");
    ck_assert_str_eq(str(at(get(o, "nodes"), 0), "device_type"), "V100");
    ck_assert_str_eq(str(at(get(o, "nodes"), 0), "region"), "us-east");
    ck_assert_str_eq(str(at(get(o, "nodes"), 1), "device_type"), "T4");
    ck_assert_str_eq(str(at(get(o, "nodes"), 1), "region"), "");
    ck_assert_int_eq((int)num(at(get(o, "nodes"), 1), "gpus"), 2);

    o = get(doc, "model");
    ck_assert_str_eq(str(o, "name"), "tiny-gpt");
    ck_assert_int_eq((int)num(o, "layers"), 4);
    ck_assert_double_eq(num(o, "params"), 2000.0); /* tied pair once */

    ck_assert_int_eq(cJSON_GetArraySize(get(doc, "strategies")), 2);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(json_strategy_full)
{
    cJSON *doc = fx_plan_json(2);
    const cJSON *s = at(get(doc, "strategies"), 0), *o, *st, *rk, *a;
    static const char *bd_keys[] = {"compute_s", "tp_allreduce_s",
                                    "pipeline_bubble_s", "p2p_s",
                                    "dp_allreduce_s", "optimizer_s", "total_s"};
    size_t i;

    ck_assert_int_eq((int)num(s, "rank"), 1);
    ck_assert_int_eq((int)num(s, "tp"), 1);
    ck_assert_int_eq((int)num(s, "dp"), 2);
    ck_assert_int_eq((int)num(s, "pp"), 2);
    ck_assert_int_eq((int)num(s, "mbs"), 2);
    ck_assert_int_eq((int)num(s, "micro_batches"), 4);
    ck_assert_str_eq(str(s, "schedule"), "1f1b");
    ck_assert_str_eq(str(s, "placement"), "megatron");
    ck_assert(num(s, "predicted_s") == 0.1 + 0.2); /* full precision */
    ck_assert_double_eq_tol(num(s, "samples_per_s"), 16.0 / 0.3, 1e-9);

    o = get(s, "breakdown");
    ck_assert_int_eq(cJSON_GetArraySize(o), 7);
    for (i = 0; i < sizeof bd_keys / sizeof bd_keys[0]; i++)
        num(o, bd_keys[i]);
    ck_assert_double_eq(num(o, "compute_s"), 0.2);
    ck_assert_double_eq(num(o, "pipeline_bubble_s"), 0.05);
    ck_assert_double_eq(num(o, "dp_allreduce_s"), 0.03);
    ck_assert(num(o, "total_s") == 0.1 + 0.2);

    a = get(s, "stage_boundaries");
    ck_assert_int_eq(cJSON_GetArraySize(a), 3);
    ck_assert_int_eq(at(a, 0)->valueint, 0);
    ck_assert_int_eq(at(a, 1)->valueint, 2);
    ck_assert_int_eq(at(a, 2)->valueint, 4);

    ck_assert_int_eq(cJSON_GetArraySize(get(s, "stages")), 2);
    st = at(get(s, "stages"), 0);
    ck_assert_int_eq((int)num(st, "index"), 0);
    ck_assert_int_eq(at(get(st, "layers"), 0)->valueint, 0);
    ck_assert_int_eq(at(get(st, "layers"), 1)->valueint, 2);
    ck_assert_int_eq(cJSON_GetArraySize(get(st, "layer_names")), 2);
    ck_assert_str_eq(at(get(st, "layer_names"), 0)->valuestring, "embed");
    ck_assert_str_eq(at(get(st, "layer_names"), 1)->valuestring, "block0");
    ck_assert_double_eq(num(st, "time_per_microbatch_s"), 0.02);
    ck_assert_double_eq(num(st, "p2p_to_next_s"), 0.001);
    ck_assert_int_eq(cJSON_GetArraySize(get(st, "ranks")), 2);
    ck_assert_int_eq(at(get(st, "ranks"), 1)->valueint, 1);
    st = at(get(s, "stages"), 1);
    ck_assert_int_eq(at(get(st, "layers"), 0)->valueint, 2);
    ck_assert_int_eq(at(get(st, "layers"), 1)->valueint, 4);
    ck_assert_str_eq(at(get(st, "layer_names"), 0)->valuestring, "block1");
    ck_assert_str_eq(at(get(st, "layer_names"), 1)->valuestring, "head");
    ck_assert_double_eq(num(st, "time_per_microbatch_s"), 0.025);
    ck_assert(cJSON_IsNull(get(st, "p2p_to_next_s")));
    ck_assert_int_eq(at(get(st, "ranks"), 0)->valueint, 2);
    ck_assert_int_eq(at(get(st, "ranks"), 1)->valueint, 3);

    ck_assert_int_eq(cJSON_GetArraySize(get(s, "ranks")), 4);
    rk = at(get(s, "ranks"), 0);
    ck_assert_int_eq((int)num(rk, "rank"), 0);
    ck_assert_int_eq((int)num(rk, "device"), 0);
    ck_assert_str_eq(str(rk, "node"), "n0");
    ck_assert_int_eq((int)num(rk, "gpu"), 0);
    ck_assert_str_eq(str(rk, "device_type"), "V100");
    ck_assert_double_eq(num(rk, "memory_gib"), 10.123);
    ck_assert_double_eq(num(rk, "capacity_gib"), 32.0);
    ck_assert_double_eq(num(rk, "headroom_gib"), 21.877);
    rk = at(get(s, "ranks"), 3);
    ck_assert_int_eq((int)num(rk, "device"), 3);
    ck_assert_str_eq(str(rk, "node"), "n1");
    ck_assert_int_eq((int)num(rk, "gpu"), 1);
    ck_assert_str_eq(str(rk, "device_type"), "T4");
    ck_assert_int_eq((int)num(rk, "stage"), 1);
    ck_assert_int_eq((int)num(rk, "dp_index"), 1);
    ck_assert_int_eq((int)num(rk, "tp_index"), 0);
    ck_assert_double_eq(num(rk, "memory_gib"), 12.5);
    ck_assert_double_eq(num(rk, "capacity_gib"), 16.0);
    ck_assert_double_eq(num(rk, "headroom_gib"), 3.5);

    o = get(s, "memory");
    ck_assert(cJSON_IsTrue(get(o, "fits")));
    ck_assert_double_eq(num(o, "peak_gib"), 12.5);
    ck_assert_double_eq(num(o, "min_headroom_gib"), 3.5);
    ck_assert_int_eq((int)num(o, "worst_rank"), 3);

    o = get(s, "layer_times");
    ck_assert_int_eq((int)num(o, "estimated"), 4);
    ck_assert_int_eq((int)num(o, "measured"), 0);
    ck_assert_ptr_nonnull(strstr(str(o, "note"), "compute_eff"));
    cJSON_Delete(doc);
}
END_TEST

START_TEST(json_strategy_sparse)
{
    cJSON *doc = fx_plan_json(2);
    const cJSON *s = at(get(doc, "strategies"), 1), *o, *st, *rk;

    ck_assert_int_eq((int)num(s, "rank"), 2);
    ck_assert_int_eq((int)num(s, "tp"), 2);
    ck_assert_int_eq((int)num(s, "micro_batches"), 8);
    ck_assert_str_eq(str(s, "schedule"), "gpipe");
    ck_assert_str_eq(str(s, "placement"), "fastest-first");
    ck_assert_double_eq(num(s, "predicted_s"), 2.0);
    ck_assert_double_eq(num(s, "samples_per_s"), 8.0);
    ck_assert_double_eq(num(get(s, "breakdown"), "tp_allreduce_s"), 0.25);

    st = at(get(s, "stages"), 0);
    ck_assert_int_eq(cJSON_GetArraySize(get(st, "layer_names")), 1);
    ck_assert_str_eq(at(get(st, "layer_names"), 0)->valuestring, "embed");
    ck_assert(cJSON_IsNull(get(st, "time_per_microbatch_s")));
    ck_assert(cJSON_IsNull(get(st, "p2p_to_next_s")));
    st = at(get(s, "stages"), 1);
    ck_assert_int_eq(cJSON_GetArraySize(get(st, "layer_names")), 3);
    ck_assert_str_eq(at(get(st, "layer_names"), 2)->valuestring, "head");

    /* rank -> device -> node/gpu through a permutation */
    rk = at(get(s, "ranks"), 0);
    ck_assert_int_eq((int)num(rk, "device"), 2);
    ck_assert_str_eq(str(rk, "node"), "n1");
    ck_assert_int_eq((int)num(rk, "gpu"), 0);
    ck_assert_str_eq(str(rk, "device_type"), "T4");
    ck_assert_int_eq((int)num(rk, "stage"), 0);
    ck_assert_int_eq((int)num(rk, "tp_index"), 0);
    rk = at(get(s, "ranks"), 1);
    ck_assert_int_eq((int)num(rk, "gpu"), 1);
    ck_assert_int_eq((int)num(rk, "tp_index"), 1);
    ck_assert_int_eq((int)num(rk, "dp_index"), 0);
    rk = at(get(s, "ranks"), 2);
    ck_assert_int_eq((int)num(rk, "device"), 0);
    ck_assert_str_eq(str(rk, "node"), "n0");
    ck_assert_int_eq((int)num(rk, "gpu"), 0);
    ck_assert_str_eq(str(rk, "device_type"), "V100");
    ck_assert_int_eq((int)num(rk, "stage"), 1);
    ck_assert(cJSON_IsNull(get(rk, "memory_gib")));
    ck_assert(cJSON_IsNull(get(rk, "capacity_gib")));
    ck_assert(cJSON_IsNull(get(rk, "headroom_gib")));

    o = get(s, "memory");
    ck_assert(cJSON_IsFalse(get(o, "fits")));
    ck_assert(cJSON_IsNull(get(o, "peak_gib")));
    ck_assert(cJSON_IsNull(get(o, "min_headroom_gib")));
    ck_assert_int_eq((int)num(o, "worst_rank"), 1);

    o = get(s, "layer_times");
    ck_assert_int_eq((int)num(o, "measured"), 4);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "note"));
    cJSON_Delete(doc);
}
END_TEST

START_TEST(json_profile_and_empty)
{
    cJSON *doc;
    const cJSON *o;
    char want[65];

    fx_meta.profile_path = "profile.json";
    util_sha256_hex("profile", 7, fx_meta.profile_digest);
    fx_meta.method = "megatron";
    fx_m.dtype_bytes = 4;
    doc = fx_plan_json(0);
    o = get(get(doc, "inputs"), "profile");
    ck_assert_str_eq(str(o, "path"), "profile.json");
    util_sha256_hex("profile", 7, want);
    ck_assert_str_eq(str(o, "sha256"), want);
    ck_assert_str_eq(str(get(doc, "settings"), "method"), "megatron");
    ck_assert_str_eq(str(get(doc, "settings"), "precision"), "fp32");
    ck_assert(cJSON_IsArray(get(doc, "strategies")));
    ck_assert_int_eq(cJSON_GetArraySize(get(doc, "strategies")), 0);
    cJSON_Delete(doc);

    fx_m.dtype_bytes = 2;
    fx_m.bf16 = 0;
    doc = fx_plan_json(1);
    ck_assert_str_eq(str(get(doc, "settings"), "precision"), "fp16");
    ck_assert_int_eq(cJSON_GetArraySize(get(doc, "strategies")), 1);
    cJSON_Delete(doc);

    ck_assert_ptr_null(plan_to_json(NULL, &fx_c, &fx_m, &fx_p, fx_s, fx_r, 1));
}
END_TEST

/* cJSON allocator that fails after a budget of allocations. */
static long alloc_budget;

static void *budget_malloc(size_t n)
{
    if (alloc_budget-- <= 0)
        return NULL;
    return malloc(n);
}

START_TEST(json_out_of_memory)
{
    cJSON_Hooks hooks = {budget_malloc, free};
    char *text = NULL;
    long k;

    /* every failure point returns NULL (ASan/LSan catch leaks) */
    cJSON_InitHooks(&hooks);
    for (k = 0; k < 100000 && text == NULL; k++) {
        alloc_budget = k;
        text = plan_to_json(&fx_meta, &fx_c, &fx_m, &fx_p, fx_s, fx_r, 2);
    }
    cJSON_InitHooks(NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_gt(k, 10);
    ck_assert_ptr_nonnull(strstr(text, PLAN_SCHEMA));
    free(text);
}
END_TEST

/* ---- table ----------------------------------------------------------- */

START_TEST(table_aligned)
{
    char *t, *line, *save = NULL, *lines[4];
    size_t off = 0;
    int i = 0;

    /* #2 with every feature; #1 (fixture: vpp 1, sp 0, recompute and
     * zero left to cost_params) with none */
    fx_s[1].vpp = 2;
    fx_s[1].sp = 1;
    fx_s[1].recompute = FMT_RECOMPUTE_SELECTIVE;
    fx_s[1].zero = 1;
    t = plan_to_table(&fx_c, &fx_m, fx_s, fx_r, 2, 16);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, "time (s)"));
    ck_assert_ptr_nonnull(strstr(t, "peak mem (GiB)"));
    ck_assert_ptr_nonnull(strstr(t, "0.3000"));
    ck_assert_ptr_nonnull(strstr(t, "2.0000"));
    ck_assert_ptr_nonnull(strstr(t, "fastest-first"));
    /* stage block of the best strategy */
    ck_assert_ptr_nonnull(strstr(t, "2xV100"));
    ck_assert_ptr_nonnull(strstr(t, "2xT4"));
    ck_assert_ptr_nonnull(strstr(t, "2-3"));
    ck_assert_ptr_nonnull(strstr(t, "25.000"));
    /* header, rule, two data lines: every column up to the last
     * (features, left-aligned, unpadded) ends at the same place */
    for (line = strtok_r(t, "\n", &save); line != NULL && i < 4;
         line = strtok_r(NULL, "\n", &save))
        lines[i++] = line;
    ck_assert_int_eq(i, 4);
    ck_assert_ptr_nonnull(strstr(lines[0], " features"));
    off = (size_t)(strstr(lines[0], " features") - lines[0]) + 1;
    ck_assert_uint_eq(strlen(lines[0]), off + strlen("features"));
    /* the rule spans the widest features cell */
    ck_assert_uint_eq(strlen(lines[1]), off + strlen("vpp2,sp,sel,zero1"));
    ck_assert_str_eq(lines[2] + off, "-");
    ck_assert_str_eq(lines[3] + off, "vpp2,sp,sel,zero1");
    ck_assert_int_eq(lines[2][off - 1], ' ');
    ck_assert_int_eq(lines[3][off - 1], ' ');
    ck_assert_int_ne(lines[2][off - 2], ' '); /* "fits" right-aligned */
    ck_assert_int_ne(lines[3][off - 2], ' ');
    for (i = 0; i < 4; i++)
        ck_assert_uint_le(strlen(lines[i]), 120);
    ck_assert_ptr_null(strstr(lines[0], "price")); /* no prices, no columns */
    free(t);

    t = plan_to_table(&fx_c, &fx_m, fx_s, fx_r, 0, 16);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, "samples/s"));
    free(t);
}
END_TEST

/* A cluster with prices: price/h and price/iter before features.  Both
 * strategies run on all 4 GPUs, 2 V100 at 3.0 and 2 T4 at 0.5 an hour:
 * 2 x 3.0 + 2 x 0.5 = 7 per hour; per iteration 7 x 0.3 / 3600 =
 * 5.8333e-4 ("0.0005833") for #1 and 7 x 2.0 / 3600 = 3.8889e-3
 * ("0.003889") for #2, right-aligned under headers 7 and 10 wide.  A GPU
 * type without a price (-1) makes both cells "-". */
START_TEST(table_prices)
{
    char *t;

    fx_c.price = malloc(2 * sizeof *fx_c.price);
    ck_assert_ptr_nonnull(fx_c.price);
    fx_c.price[0] = 3.0;
    fx_c.price[1] = 0.5;
    t = plan_to_table(&fx_c, &fx_m, fx_s, fx_r, 2, 16);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, " fits price/h price/iter features\n"));
    ck_assert_ptr_nonnull(strstr(t, " yes       7  0.0005833 -\n"));
    ck_assert_ptr_nonnull(strstr(t, "  no       7   0.003889 -\n"));
    free(t);
    fx_c.price[1] = -1.0;
    t = plan_to_table(&fx_c, &fx_m, fx_s, fx_r, 2, 16);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, " yes       -          - -\n"));
    free(t);
}
END_TEST

START_TEST(table_lines_fit)
{
    char *t = plan_to_table(&fx_c, &fx_m, fx_s, fx_r, 2, 16);
    char *line, *save = NULL;

    ck_assert_ptr_nonnull(t);
    for (line = strtok_r(t, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        /* a 120-column terminal shows every line whole */
        ck_assert_msg(strlen(line) <= 120, "line too long: '%s'", line);
        ck_assert_msg(line[strlen(line) - 1] != ' ', "trailing space: '%s'", line);
    }
    free(t);
}
END_TEST

int main(void)
{
    const TTest *const sha[] = {sha_empty, sha_abc, sha_448, sha_million_a,
                                sha_padding_edges};
    const TTest *const json[] = {json_header, json_strategy_full,
                                 json_strategy_sparse, json_profile_and_empty,
                                 json_out_of_memory};
    const TTest *const table[] = {table_aligned, table_lines_fit, table_prices};
    const tu_case cases[] = {
        {"sha256", sha, TU_N(sha), 0, NULL, NULL},
        {"json", json, TU_N(json), 0, fixture_setup, fixture_teardown},
        {"table", table, TU_N(table), 0, fixture_setup, fixture_teardown},
    };

    return tu_run(tu_suite_of("output", cases, TU_N(cases)));
}
