/* tests/test_bench_megatron.c: bench/megatron-sc21 on a runs.json in the
 * layout of ../shared/data/megatron-sc21 built here: the file's hardware
 * chooses the nodes (DGX A100 80GB without it, the DGX H100 rates for an
 * H100, an unknown device refused with its reason), the features it
 * models change the evaluation and the others are reported, and a run
 * that cannot be evaluated is left out while the others keep their
 * figures; on the published runs, the plans hetplan chooses. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "testutil.h"

#ifndef HETPLAN_BENCH_DIR
#error "HETPLAN_BENCH_DIR must name the folder of the bench programs"
#endif

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_mbench_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

/* A GPT of 8 layers, hidden 2048, on 2 nodes of 8: tp 8, pp 2, with
 * features (a JSON array's inside) and a name. */
static void run_json(char *buf, size_t n, const char *name, const char *features)
{
    snprintf(buf, n,
             "{\"name\": \"%s\", \"model\": {\"params_billion\": 0.5, \"layers\": 8,"
             " \"hidden\": 2048, \"heads\": 16, \"seq\": 2048, \"vocab\": 51200},"
             " \"parallel\": {\"tp\": 8, \"pp\": 2, \"dp\": 1, \"gpus\": 16,"
             " \"nodes\": 2, \"global_batch\": 64, \"micro_batch\": 2,"
             " \"virtual_stages\": 1},"
             " \"training\": {\"precision\": \"bf16\", \"recompute\": \"none\"},"
             " \"features\": [%s], \"measured\": {\"iteration_time_s\": 1.0}}",
             name, features);
}

/* runs.json with hardware hw (NULL: none) and the runs given; the
 * bench's document (caller deletes), *status its exit status. */
static cJSON *bench(const char *hw, const char *runs, int *status)
{
    char text[8192];

    snprintf(text, sizeof text, "{%s%s%s \"runs\": [%s]}", hw ? "\"hardware\": " : "",
             hw ? hw : "", hw ? "," : "", runs);
    tu_put(dir, "runs.json", text);
    return tu_bench_run(HETPLAN_BENCH_DIR "/megatron-sc21", dir, status);
}

static const cJSON *run_at(const cJSON *doc, int i)
{
    return cJSON_GetArrayItem(tu_get(doc, "runs"), i);
}

START_TEST(test_hardware)
{
    char r[1024];
    cJSON *doc;
    double a100, h100;
    int status;

    run_json(r, sizeof r, "a", "");
    doc = bench(NULL, r, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(tu_get(tu_get(doc, "hardware"), "device")->valuestring, "A100-80GB");
    ck_assert_int_eq((int)tu_num(tu_get(doc, "hardware"), "intra_gbps"), 2400);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "hardware"), "nic_gbps"), 1600);
    a100 = tu_num(run_at(doc, 0), "predicted_s");
    cJSON_Delete(doc);
    /* the catalogue's spelling of the SC'21 file */
    doc = bench("{\"device\": \"A100-SXM 80GB\", \"gpus_per_node\": 8}", r, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_double_eq(tu_num(run_at(doc, 0), "predicted_s"), a100);
    cJSON_Delete(doc);
    /* DGX H100: NVLink 4 and 8 x 400 Gbit/s, and a faster GPU */
    doc = bench("{\"device\": \"H100-SXM\"}", r, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "hardware"), "intra_gbps"), 3600);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "hardware"), "nic_gbps"), 3200);
    h100 = tu_num(run_at(doc, 0), "predicted_s");
    ck_assert_msg(h100 < a100, "H100 %.4f s not faster than A100 %.4f s", h100, a100);
    cJSON_Delete(doc);
    /* a device without known node links needs them stated */
    doc = bench("{\"device\": \"L40S\"}", r, &status);
    ck_assert_int_eq(status, 1);
    ck_assert_ptr_nonnull(strstr(tu_get(doc, "error")->valuestring, "'intra_gbps' and "
                                                                   "'nic_gbps'"));
    cJSON_Delete(doc);
    doc = bench("{\"device\": \"L40S\", \"intra_gbps\": 256, \"nic_gbps\": 400}", r,
                &status);
    ck_assert_int_eq(status, 0);
    ck_assert_str_eq(tu_get(tu_get(doc, "hardware"), "device")->valuestring, "L40S");
    cJSON_Delete(doc);
    doc = bench("{\"device\": \"Z9000\"}", r, &status);
    ck_assert_int_eq(status, 1);
    ck_assert_ptr_nonnull(strstr(tu_get(doc, "error")->valuestring,
                                 "'Z9000' is not in the device catalogue"));
    cJSON_Delete(doc);
}
END_TEST

START_TEST(test_features)
{
    char r[3 * 1024];
    const char *names[] = {"plain", "sp", "flash", "dist", "odd"};
    const char *feats[] = {
        "", "\"sequence_parallel\"", "\"flash_attention\"",
        "\"distributed_optimizer\", \"recompute_selective\"",
        "\"fp8\", \"sequence_parallel\""};
    cJSON *doc;
    const cJSON *w, *odd;
    size_t i, used = 0;
    int status;

    for (i = 0; i < TU_N(names); i++) {
        char one[1024];
        run_json(one, sizeof one, names[i], feats[i]);
        used += (size_t)snprintf(r + used, sizeof r - used, "%s%s", i ? ", " : "", one);
    }
    doc = bench(NULL, r, &status);
    ck_assert_int_eq(status, 0);
    w = tu_get(run_at(doc, 0), "evaluated_with");
    ck_assert(cJSON_IsFalse(tu_get(w, "sequence_parallel")));
    ck_assert_str_eq(tu_get(w, "attention")->valuestring, "eager");
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(run_at(doc, 0), "features_not_modelled")), 0);
    w = tu_get(run_at(doc, 1), "evaluated_with");
    ck_assert(cJSON_IsTrue(tu_get(w, "sequence_parallel")));
    w = tu_get(run_at(doc, 2), "evaluated_with");
    ck_assert_str_eq(tu_get(w, "attention")->valuestring, "flash");
    /* flash attention keeps no s x s scores: less memory */
    ck_assert(tu_num(run_at(doc, 2), "predicted_peak_gib") <
              tu_num(run_at(doc, 0), "predicted_peak_gib"));
    w = tu_get(run_at(doc, 3), "evaluated_with");
    ck_assert_str_eq(tu_get(w, "recompute")->valuestring, "selective");
    /* dp 1: no optimizer state to shard */
    ck_assert_int_eq((int)tu_num(w, "zero"), 0);
    odd = tu_get(run_at(doc, 4), "features_not_modelled");
    ck_assert_int_eq(cJSON_GetArraySize(odd), 1);
    ck_assert_str_eq(cJSON_GetArrayItem(odd, 0)->valuestring, "fp8");
    ck_assert(cJSON_IsTrue(tu_get(tu_get(run_at(doc, 4), "evaluated_with"),
                               "sequence_parallel")));
    cJSON_Delete(doc);
}
END_TEST

START_TEST(test_bad_run_left_out)
{
    char good[1024], bad[1024], both[2200];
    cJSON *doc;
    double t0;
    int status;

    run_json(good, sizeof good, "good", "");
    doc = bench(NULL, good, &status);
    ck_assert_int_eq(status, 0);
    t0 = tu_num(run_at(doc, 0), "predicted_s");
    cJSON_Delete(doc);
    /* 3 layers cannot be split over pp 2 */
    run_json(bad, sizeof bad, "bad", "");
    memcpy(strstr(bad, "\"layers\": 8"), "\"layers\": 3", 11);
    snprintf(both, sizeof both, "%s, %s", bad, good);
    doc = bench(NULL, both, &status);
    ck_assert_int_eq(status, 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs"), 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_not_scored"), 1);
    ck_assert_ptr_nonnull(strstr(tu_get(run_at(doc, 0), "error")->valuestring,
                                 "divisible by pp"));
    ck_assert_double_eq(tu_num(run_at(doc, 1), "predicted_s"), t0);
    cJSON_Delete(doc);
}
END_TEST

/* A run's model may name its family, FFN and key/value heads: a
 * Llama-style block of 8 layers, hidden 2048, 16 heads, 4 key/value
 * heads, SwiGLU FFN 5632, vocabulary 32000, untied.  Parameters by hand:
 * per layer Q and O 2 h^2, K and V 2 h (h / 4), MLP 3 h f, two RMSNorm
 * scales 2 h = 45,092,864; 8 layers, 2 V h embeddings and the final
 * norm h: 491,816,960. */
START_TEST(test_model_family)
{
    char r[1200];
    cJSON *doc;
    int status;

    run_json(r, sizeof r, "llama", "\"flash_attention\"");
    memcpy(strstr(r, "\"vocab\": 51200"), "\"vocab\": 32000", 14);
    {
        const char *at = strstr(r, "\"params_billion\"");
        char head[1200];
        snprintf(head, sizeof head, "%.*s\"family\": \"llama\", \"kv_heads\": 4, "
                 "\"ffn\": 5632, %s", (int)(at - r), r, at);
        snprintf(r, sizeof r, "%s", head);
    }
    doc = bench(NULL, r, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_double_eq_tol(tu_num(run_at(doc, 0), "params_model_billion"),
                            0.49181696, 1e-9);
    cJSON_Delete(doc);
}
END_TEST

/* The ten published runs (../shared/data/megatron-sc21): predictions
 * within 5% of the measured times on average, and the plan hetplan
 * chooses for the same GPUs, model and batch never predicted slower than
 * the published configuration, 1.2x faster on the median run. */
START_TEST(test_sc21_chosen)
{
    cJSON *doc;
    const cJSON *r;
    int status, n = 0;

    doc = tu_bench_run(HETPLAN_BENCH_DIR "/megatron-sc21", TU_DATA "/megatron-sc21",
                       &status);
    ck_assert_int_eq(status, 0);
    /* the published configurations' predictions: within 5% on average */
    ck_assert(tu_num(tu_get(tu_get(doc, "totals"), "time"), "mape") <= 0.05);
    cJSON_ArrayForEach(r, tu_get(doc, "runs"))
    {
        ck_assert_msg(tu_num(tu_get(r, "chosen"), "speedup") >= 1.0, "%s: chosen "
                      "plan slower", tu_get(r, "name")->valuestring);
        n++;
    }
    ck_assert_int_eq(n, 10);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "chosen_slower_runs"), 0);
    ck_assert(tu_num(tu_get(doc, "totals"), "chosen_speedup_median") >= 1.2);
    cJSON_Delete(doc);
}
END_TEST

static Suite *plain(void)
{
    const TTest *const tests[] = {test_hardware, test_features, test_bad_run_left_out,
                                  test_model_family};
    const tu_case cases[] = {
        {"core", tests, TU_N(tests), 0.0, setup, teardown}};

    return tu_suite_of("bench_megatron", cases, TU_N(cases));
}

static Suite *data(void)
{
    const TTest *const tests[] = {test_sc21_chosen};

    return tu_suite("bench_megatron_data", "data", tests, TU_N(tests));
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain, data, TU_DATA "/megatron-sc21");
}
