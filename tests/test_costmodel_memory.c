/* tests/test_costmodel_memory.c: the memory model (costmodel/memory.c) on a small
 * model whose every term is computed by hand, plus the CLI's --precision
 * and the "no strategy fits" message. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

#define EXAMPLES HETPLAN_SOURCE_DIR "/examples/"
#define GIB 1073741824.0

/* embedding, two blocks, head; seq 4, vocab 10 (40 logits per sample) */
static void make_model(fmt_model *m)
{
    static const struct {
        int kind;
        double params, act, rep, out;
    } L[4] = {
        {FMT_KIND_EMBEDDING, 100.0, 8.0, 8.0, 16.0},
        {FMT_KIND_TRANSFORMER, 1000.0, 400.0, 100.0, 16.0},
        {FMT_KIND_TRANSFORMER, 1000.0, 400.0, 100.0, 16.0},
        /* 40 logits x (2 + 8) bytes + the 16-byte input */
        {FMT_KIND_HEAD, 200.0, 416.0, 16.0, 4.0},
    };
    int i;

    memset(m, 0, sizeof *m);
    m->nlayers = 4;
    m->dtype_bytes = 2;
    m->seq = 4;
    m->vocab = 10;
    m->hidden = 2;
    m->layers = calloc(4, sizeof *m->layers);
    ck_assert_ptr_nonnull(m->layers);
    for (i = 0; i < 4; i++) {
        snprintf(m->layers[i].name, sizeof m->layers[i].name, "l%d", i);
        m->layers[i].kind = L[i].kind;
        m->layers[i].params = L[i].params;
        m->layers[i].act_bytes = L[i].act;
        m->layers[i].act_rep_bytes = L[i].rep;
        m->layers[i].out_bytes = L[i].out;
    }
}

static void params(cost_params *p)
{
    cost_params_init(p);
    p->mem_reserve = 1000.0;
}

static cost_mem_stage stage(int a, int b, int tp, int dp, int mbs, int inflight,
                            int gas, int j, int pp)
{
    cost_mem_stage st;

    memset(&st, 0, sizeof st);
    st.a = a;
    st.b = b;
    st.tp = tp;
    st.dp = dp;
    st.mbs = mbs;
    st.inflight = inflight;
    st.gas = gas;
    st.stage = j;
    st.pp = pp;
    return st;
}

START_TEST(state_bytes_precision_zero)
{
    fmt_model m;
    cost_params p;
    double w, g, o;

    make_model(&m);
    params(&p);
    /* fp16 mixed precision: 2 + 2 + (4 master + 4 m + 4 v + 4 fp32 grads) */
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 2.0 && g == 2.0 && o == 16.0);
    p.zero_stage = 1;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 2.0 && g == 2.0 && o == 4.0);
    p.zero_stage = 2;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 2.0 && g == 0.5 && o == 4.0);
    p.zero_stage = 3;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 0.5 && g == 0.5 && o == 4.0);
    /* dp 1: ZeRO shards nothing */
    cost_state_bytes(&m, &p, 1, &w, &g, &o);
    ck_assert(w == 2.0 && g == 2.0 && o == 16.0);
    /* bf16: fp32 gradient accumulation, no loss-scaler copy */
    m.bf16 = 1;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 0.5 && g == 1.0 && o == 3.0);
    /* fp32: weights, grads, Adam m and v */
    m.bf16 = 0;
    m.dtype_bytes = 4;
    p.zero_stage = 1;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 4.0 && g == 4.0 && o == 2.0);
    /* an explicit total overrides: weights and grads in the element size */
    p.zero_stage = 0;
    p.state_bytes = 18.0;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert(w == 4.0 && g == 4.0 && o == 10.0);
    fmt_model_free(&m);
}
END_TEST

START_TEST(inflight_schedules)
{
    cost_params p;

    params(&p);
    /* 1F1B: stage i keeps pp - i, never more than gas */
    ck_assert_int_eq(cost_inflight(&p, 0, 4, 8), 4);
    ck_assert_int_eq(cost_inflight(&p, 2, 4, 8), 2);
    ck_assert_int_eq(cost_inflight(&p, 3, 4, 8), 1);
    ck_assert_int_eq(cost_inflight(&p, 0, 4, 2), 2);
    /* GPipe: all micro-batches on every stage */
    p.schedule = FMT_SCHED_GPIPE;
    ck_assert_int_eq(cost_inflight(&p, 0, 4, 8), 8);
    ck_assert_int_eq(cost_inflight(&p, 3, 4, 8), 8);
}
END_TEST

START_TEST(stored_and_transient)
{
    fmt_model m;
    cost_params p;

    make_model(&m);
    params(&p);
    /* block at tp 2: 100 + 300 / 2 */
    ck_assert_double_eq(cost_layer_stored(&m, &p, 1, 2), 250.0);
    ck_assert_double_eq(cost_layer_transient(&m, &p, 1, 2), 250.0);
    /* embedding: no workspace; head: fp32 clone of 40 logits / tp 2 */
    ck_assert_double_eq(cost_layer_transient(&m, &p, 0, 2), 0.0);
    ck_assert_double_eq(cost_layer_transient(&m, &p, 3, 2), 80.0);
    ck_assert_double_eq(cost_layer_stored(&m, &p, 3, 2), 16.0 + 400.0 / 2);
    /* recomputation keeps the block's input only and re-materialises it */
    p.recompute = 1;
    ck_assert_double_eq(cost_layer_stored(&m, &p, 1, 2), 16.0);
    ck_assert_double_eq(cost_layer_transient(&m, &p, 1, 2), 500.0);
    /* the head is not recomputed */
    ck_assert_double_eq(cost_layer_stored(&m, &p, 3, 2), 216.0);
    /* state + stored: 1000/2 x 20 + mbs 2 x inflight 3 x 16 */
    ck_assert_double_eq(cost_layer_memory(&m, &p, 1, 2, 1, 2, 3), 10000.0 + 96.0);
    fmt_model_free(&m);
}
END_TEST

/* Middle stage [1, 3) of pp 3 (tp 2, dp 2, mbs 2, gas 4): every term. */
START_TEST(device_memory_by_hand)
{
    fmt_model m;
    cost_params p;
    cost_memory x;
    cost_mem_stage st;
    double t;

    make_model(&m);
    params(&p);
    st = stage(1, 3, 2, 2, 2, 2, 4, 1, 3);
    t = cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.weights, 1000.0 * 2);   /* 2000 params / tp 2 */
    ck_assert_double_eq(x.grads, 1000.0 * 2);
    ck_assert_double_eq(x.optimizer, 1000.0 * 16);
    ck_assert_double_eq(x.activations, 2 * 2 * 500.0); /* mbs x inflight x 2 blocks */
    ck_assert_double_eq(x.workspace, 2 * 250.0);
    /* received inputs min(2 + 1, 4) + the gradient sent back: 4 x 2 x 16;
     * outputs kept (2) + the gradient receive buffer: 3 x 2 x 16 */
    ck_assert_double_eq(x.buffers, 128.0 + 96.0);
    ck_assert_double_eq(x.bucket, 1000.0 * 2); /* fp16 gradients, dp 2 */
    ck_assert_double_eq(x.reserve, 1000.0);
    ck_assert_double_eq(t, 20000.0 + 2000.0 + 500.0 + 224.0 + 1000.0);
    ck_assert_double_eq(x.total, t);
    /* GPipe keeps all 4 micro-batches: activations and buffers grow */
    st.inflight = 4;
    t = cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.buffers, 5 * 2 * 16.0 + 5 * 2 * 16.0);
    ck_assert_double_eq(t, 20000.0 + 4000.0 + 500.0 + 320.0 + 1000.0);
    /* position unknown (cost_stage_memory): no buffers, no bucket */
    ck_assert_double_eq(cost_stage_memory(&m, &p, 1, 3, 2, 2, 2, 2),
                        20000.0 + 2000.0 + 500.0 + 1000.0);
    fmt_model_free(&m);
}
END_TEST

START_TEST(last_stage_and_bucket_phase)
{
    fmt_model m;
    cost_params p;
    cost_memory x;
    cost_mem_stage st;

    make_model(&m);
    params(&p);
    /* last stage: head only, tp 2, dp 1, mbs 2, one micro-batch in flight */
    st = stage(3, 4, 2, 1, 2, 1, 4, 2, 3);
    cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.activations, 2 * 216.0);
    ck_assert_double_eq(x.workspace, 2 * 80.0);
    ck_assert_double_eq(x.buffers, 3 * 2 * 16.0); /* min(2, 4) + 1 inputs, no outputs */
    ck_assert_double_eq(x.bucket, 0.0);
    ck_assert_double_eq(x.total, 100.0 * 20 + 432.0 + 160.0 + 96.0 + 1000.0);
    /* embedding alone, one stage, dp 2: the all-reduce bucket (50 params
     * x 2 bytes) outweighs 8 bytes of activations */
    st = stage(0, 1, 2, 2, 1, 1, 1, 0, 1);
    cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.activations, 8.0);
    ck_assert_double_eq(x.bucket, 100.0);
    ck_assert_double_eq(x.total, 50.0 * 20 + 100.0 + 1000.0);
    fmt_model_free(&m);
}
END_TEST

START_TEST(recompute_and_frozen)
{
    fmt_model m;
    cost_params p;
    cost_memory x;
    cost_mem_stage st;

    make_model(&m);
    params(&p);
    p.recompute = 1;
    /* inputs 16 + 16 per sample, one re-materialised block + its workspace */
    ck_assert_double_eq(cost_stage_memory(&m, &p, 1, 3, 2, 2, 2, 2),
                        20000.0 + 2 * 2 * 32.0 + 2 * 500.0 + 1000.0);
    p.recompute = 0;
    p.frozen_layers = 2; /* embedding and the first block: forward only */
    st = stage(1, 3, 2, 2, 2, 2, 4, 1, 3);
    cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.weights, 2000.0);
    ck_assert_double_eq(x.grads, 500.0 * 2);
    ck_assert_double_eq(x.optimizer, 500.0 * 16);
    ck_assert_double_eq(x.activations, 2 * 2 * 250.0);
    ck_assert_double_eq(x.bucket, 500.0 * 2);
    ck_assert_double_eq(x.total, 2000.0 + 1000.0 + 8000.0 + 1000.0 + 500.0 + 224.0 +
                                     1000.0);
    fmt_model_free(&m);
}
END_TEST

START_TEST(precision_names_and_conversion)
{
    fmt_model m;
    util_error err;

    ck_assert_str_eq(fmt_precision_name(FMT_PREC_FP16), "fp16");
    ck_assert_str_eq(fmt_precision_name(FMT_PREC_BF16), "bf16");
    ck_assert_str_eq(fmt_precision_name(FMT_PREC_FP32), "fp32");
    ck_assert_ptr_null(fmt_precision_name(3));
    ck_assert_int_eq(fmt_precision_from_name("bf16"), FMT_PREC_BF16);
    ck_assert_int_eq(fmt_precision_from_name("fp8"), -1);
    make_model(&m);
    ck_assert_int_eq(fmt_model_precision(&m), FMT_PREC_FP16);
    ck_assert_int_eq(fmt_model_set_precision(&m, FMT_PREC_FP32, &err), UTIL_OK);
    ck_assert_int_eq(m.dtype_bytes, 4);
    ck_assert_int_eq(fmt_model_precision(&m), FMT_PREC_FP32);
    ck_assert_double_eq(m.layers[1].act_bytes, 800.0);
    ck_assert_double_eq(m.layers[1].act_rep_bytes, 200.0);
    ck_assert_double_eq(m.layers[1].out_bytes, 32.0);
    /* head: 40 logits x (4 + 8) + 16 x 2; the fp32 loss stays 4 bytes */
    ck_assert_double_eq(m.layers[3].act_bytes, 512.0);
    ck_assert_double_eq(m.layers[3].out_bytes, 4.0);
    ck_assert_int_eq(fmt_model_set_precision(&m, FMT_PREC_BF16, &err), UTIL_OK);
    ck_assert_int_eq(m.dtype_bytes, 2);
    ck_assert_int_eq(m.bf16, 1);
    ck_assert_double_eq(m.layers[1].act_bytes, 400.0);
    ck_assert_double_eq(m.layers[3].act_bytes, 416.0);
    ck_assert_int_eq(fmt_model_set_precision(&m, 7, &err), UTIL_EINVAL);
    fmt_model_free(&m);
}
END_TEST

/* The DP's per-layer sum plus the overhead bound never undercuts the
 * full model for a stage cut where a block hands its hidden state on. */
START_TEST(overhead_bound_is_an_upper_bound)
{
    fmt_model m;
    cost_params p;
    cost_mem_stage st;
    int j;

    make_model(&m);
    params(&p);
    for (j = 0; j < 3; j++) {
        static const int bounds[4] = {0, 2, 3, 4};
        double sum = 0.0, bound;
        int l, inflight = cost_inflight(&p, j, 3, 4);
        st = stage(bounds[j], bounds[j + 1], 2, 1, 2, inflight, 4, j, 3);
        for (l = st.a; l < st.b; l++)
            sum += cost_layer_memory(&m, &p, l, 2, 1, 2, inflight);
        bound = cost_memory_overhead_bound(&m, &p, 2, 1, 2, j, 3, inflight, 4);
        ck_assert_msg(sum + bound >= cost_device_memory(&m, &p, &st, NULL),
                      "stage %d: %g + %g < %g", j, sum, bound,
                      cost_device_memory(&m, &p, &st, NULL));
    }
    fmt_model_free(&m);
}
END_TEST

/* cost_evaluate reports each rank's peak and capacity; a smaller GPU
 * turns fits off and becomes the worst rank. */
START_TEST(evaluate_fits_and_worst_rank)
{
    char text[1024];
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result r;
    util_error err;
    cost_memory x;

    memset(&c, 0, sizeof c);
#define CLUSTER_FMT                                                              \
    "{\"name\": \"c\", \"device_types\": {\"big\": {\"memory_gib\": 80, "            \
    "\"tflops_fp16\": 100, \"mem_bw_gbs\": 1000}, \"small\": {\"memory_gib\": "      \
    "%g, \"tflops_fp16\": 100, \"mem_bw_gbs\": 1000}}, \"nodes\": [{\"name\": "       \
    "\"a\", \"device\": \"big\", \"gpus\": 1, \"intra_gbps\": 100, \"nic_gbps\": "   \
    "100}, {\"name\": \"b\", \"device\": \"small\", \"gpus\": 1, \"intra_gbps\": "   \
    "100, \"nic_gbps\": 100}]}"
    snprintf(text, sizeof text, CLUSTER_FMT, 80.0);
    ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EXAMPLES "gpt2-345m.json", &m, &err), UTIL_OK);
    /* eager attention: the s x s scores make stage 0's two micro-batches
     * outweigh stage 1's one plus the logits (with flash attention the
     * logits win) */
    m.attention = FMT_ATTN_EAGER;
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 1, 2), UTIL_OK);
    s.mbs = 4;
    s.gas = 8;
    s.bounds[1] = m.nlayers / 2;
    s.bounds[2] = m.nlayers;
    s.ranks[0] = 0;
    s.ranks[1] = 1;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert(r.fits);
    cost_rank_stage_memory(&m, &p, &s, 1, &x);
    cost_runtime_apply(&c, &p, &s, 1, &x); /* the runtime memory it derives */
    ck_assert_double_eq_tol(r.mem_bytes[1], x.total, 1e-6);
    ck_assert_double_eq(r.mem_cap[1], 80.0 * GIB);
    ck_assert(r.mem_bytes[0] > r.mem_bytes[1]); /* stage 0 keeps 2 micro-batches */
    ck_assert_int_eq(r.worst_rank, 0);
    cost_result_free(&r);
    fmt_cluster_free(&c);
    /* a GPU just below stage 1's peak: no fit, and it is the worst rank */
    snprintf(text, sizeof text, CLUSTER_FMT, x.total / GIB - 0.01);
    ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
    ck_assert(!r.fits);
    ck_assert_int_eq(r.worst_rank, 1);
    cost_result_free(&r);
    fmt_cluster_free(&c);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
#undef CLUSTER_FMT
}
END_TEST

/* ---- command line ---------------------------------------------------- */

static char tmp_dir[256];

/* Run the planner with args (a shell fragment of quoted paths); stdout
 * and stderr go to files in tmp_dir.  Returns the exit code. */
static int planner(const char *args, char **out, char **errtext)
{
    char cmd[4096], o[512], e[512];
    int st;

    snprintf(o, sizeof o, "%s/out", tmp_dir);
    snprintf(e, sizeof e, "%s/err", tmp_dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", HETPLAN_PLANNER, args, o, e);
    st = system(cmd);
    *out = tu_slurp(o);
    *errtext = tu_slurp(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* An H100 node: a cluster with V100 or T4 devices would plan bf16 on
 * fewer devices or fall back to fp16 (tests/test_search_precision.c). */
START_TEST(cli_precision_recorded)
{
    char args[2048], *out = NULL, *err = NULL;
    cJSON *doc;
    const cJSON *set;
    int rc;

    snprintf(args, sizeof args,
             "--cluster '" EXAMPLES "h100-node4.json' --model '" EXAMPLES
             "gpt2-amp.json' --precision bf16 --max-mbs 2 --top-k 1 --format json");
    rc = planner(args, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err ? err : "");
    doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    set = cJSON_GetObjectItemCaseSensitive(doc, "settings");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(set, "precision")->valuestring,
                     "bf16");
    cJSON_Delete(doc);
    free(out);
    free(err);
    rc = planner("--cluster '" EXAMPLES "amp-het.json' --model '" EXAMPLES
                 "gpt2-amp.json' --precision fp8",
                 &out, &err);
    ck_assert_int_eq(rc, 2);
    ck_assert_ptr_nonnull(strstr(err, "'--precision' expects fp16, bf16 or fp32"));
    free(out);
    free(err);
}
END_TEST

START_TEST(cli_no_fit_names_device)
{
    char path[512], args[2048], *out = NULL, *err = NULL;
    FILE *f;
    int rc;

    snprintf(path, sizeof path, "%s/t4x2.json", tmp_dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"name\": \"tiny\", \"nodes\": [{\"name\": \"t\", \"device\": \"T4\", "
          "\"gpus\": 2, \"intra_gbps\": 50, \"nic_gbps\": 50}]}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "--cluster '%s' --model '" EXAMPLES "llama-7b.json'",
             path);
    rc = planner(args, &out, &err);
    ck_assert_int_eq(rc, 4);
    ck_assert_msg(strstr(err, "no strategy fits in memory: the closest") != NULL &&
                      strstr(err, "GiB on device") != NULL &&
                      strstr(err, "(T4, stage") != NULL &&
                      strstr(err, "which has 15.00 GiB") != NULL,
                  "message: %s", err);
    ck_assert_str_eq(out, "");
    /* what the search did not try: offload without host memory in the
     * cluster file, more GPUs; nothing it searched (ZeRO, recomputation) */
    ck_assert_msg(strstr(err, "(try: optimizer offload (needs host_memory_gib on "
                              "every node); more GPUs or GPUs with more memory)") != NULL,
                  "message: %s", err);
    free(out);
    free(err);
    /* each setting that held a remedy back is named, with its value */
    snprintf(args, sizeof args, "--cluster '%s' --model '" EXAMPLES "llama-7b.json' "
             "--zero 1 --recompute-level selective --offload none "
             "--memory-headroom 10 --max-tp 1 --precision fp32", path);
    rc = planner(args, &out, &err);
    ck_assert_int_eq(rc, 4);
    ck_assert_msg(strstr(err, "(try: ZeRO above stage 1 (held fixed); full "
                              "recomputation ('selective' held fixed); optimizer "
                              "offload (held off); less headroom (10% kept free); "
                              "tensor parallelism above 1 (the limit); 16-bit mixed "
                              "precision (the model trains in fp32); more GPUs or "
                              "GPUs with more memory)") != NULL,
                  "message: %s", err);
    free(out);
    free(err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("memory");
    TCase *tc = tcase_create("model"), *cli = tcase_create("cli");
    int failed;
    char cmd[600];

    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_costmodel_memory.XXXXXX");
    if (mkdtemp(tmp_dir) == NULL)
        return EXIT_FAILURE;
    tcase_add_test(tc, state_bytes_precision_zero);
    tcase_add_test(tc, inflight_schedules);
    tcase_add_test(tc, stored_and_transient);
    tcase_add_test(tc, device_memory_by_hand);
    tcase_add_test(tc, last_stage_and_bucket_phase);
    tcase_add_test(tc, recompute_and_frozen);
    tcase_add_test(tc, precision_names_and_conversion);
    tcase_add_test(tc, overhead_bound_is_an_upper_bound);
    tcase_add_test(tc, evaluate_fits_and_worst_rank);
    tcase_set_timeout(cli, 120);
    tcase_add_test(cli, cli_precision_recorded);
    tcase_add_test(cli, cli_no_fit_names_device);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, cli);
    failed = tu_run(s) != EXIT_SUCCESS;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        failed++;
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
