/* tests/test_bench_layer_analytic.c: bench/layer-analytic.  On a data
 * folder built here (sailor-opt's layout: one model, a profile, one run)
 * each scored layer is the analytic time of the cost model at the
 * entry's own device, micro-batch size and TP degree, its ratio is that
 * over the measured time, a TP entry on a device no cluster has is
 * scored apart, and a folder without data is reported as skipped.  With
 * ../shared/data (the second entry, skipped with 77 without it) the
 * document is well-formed and holds what the data holds, counted by hand
 * from the files. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

#ifndef HETPLAN_BENCH_DIR
#error "HETPLAN_BENCH_DIR must name the folder of the bench programs"
#endif

#define BENCH HETPLAN_BENCH_DIR "/layer-analytic"

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_lbench_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

/* A small fp16 GPT-2 on one node of two A100-80GB. */
static const char model_json[] =
    "{\"name\": \"M\", \"training\": {\"precision\": \"fp16\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 2, \"hidden\": 512,"
    " \"heads\": 8, \"seq\": 256, \"vocab\": 1000}}";
static const char cluster_json[] =
    "{\"name\": \"c\", \"nodes\": [{\"name\": \"n0\", \"device\": "
    "\"A100-80GB\", \"gpus\": 2, \"intra_gbps\": 600, \"nic_gbps\": 100}]}";

/* The folder: model, cluster, a strategy, runs.json and a profile of
 * three entries whose every layer took 1 ms forward and 2 ms backward:
 * A100-80GB tp 1 mbs 2, A100-80GB tp 2 mbs 4, RTX3090 tp 2 mbs 1. */
static int put_folder(void)
{
    char sub[256], path[300], fwd[512] = "", bwd[512] = "", prof[2048];
    static const char *const ent[3] = {"A100-80GB\", \"tp\": 1, \"mbs\": 2",
                                       "A100-80GB\", \"tp\": 2, \"mbs\": 4",
                                       "RTX3090\", \"tp\": 2, \"mbs\": 1"};
    fmt_model m;
    util_error err;
    size_t len;
    int l, i, n;

    snprintf(sub, sizeof sub, "%s/sailor-opt", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    tu_put(sub, "model_M.json", model_json);
    tu_put(sub, "r_cluster.json", cluster_json);
    snprintf(path, sizeof path, "%s/model_M.json", sub);
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_load_model(path, &m, &err) == UTIL_OK, "%s", err.msg);
    n = m.nlayers;
    fmt_model_free(&m);
    for (l = 0; l < n; l++) {
        len = strlen(fwd);
        snprintf(fwd + len, sizeof fwd - len, "%s1.0", l > 0 ? ", " : "");
        len = strlen(bwd);
        snprintf(bwd + len, sizeof bwd - len, "%s2.0", l > 0 ? ", " : "");
    }
    snprintf(prof, sizeof prof, "{\"format\": \"hetplan-profile/1\", \"model\": "
             "\"M\", \"entries\": [");
    for (i = 0; i < 3; i++) {
        len = strlen(prof);
        snprintf(prof + len, sizeof prof - len, "%s{\"device\": \"%s, \"fwd_ms\": "
                 "[%s], \"bwd_ms\": [%s]}", i > 0 ? ", " : "", ent[i], fwd, bwd);
    }
    len = strlen(prof);
    snprintf(prof + len, sizeof prof - len, "]}");
    tu_put(sub, "profile_M.json", prof);
    snprintf(path, sizeof path, "{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 1, "
             "\"mbs\": 2, \"stage_boundaries\": [0, %d]}]}", n);
    tu_put(sub, "r_strat.json", path);
    tu_put(sub, "runs.json", "[{\"tag\": \"r\", \"model\": \"M\", \"gbs\": 8, "
           "\"tp\": 1, \"dp\": 2, \"pp\": 1, \"mbs\": 2, \"measured_s\": 0.5}]");
    return n;
}

/* Member key of the devices entry of device `name`. */
static const cJSON *device_group(const cJSON *doc, const char *name,
                                 const char *key)
{
    const cJSON *d;

    cJSON_ArrayForEach(d, tu_get(doc, "devices"))
        if (strcmp(tu_get(d, "device")->valuestring, name) == 0)
            return tu_get(d, key);
    ck_abort_msg("no device '%s'", name);
    return NULL;
}

static int group_n(const cJSON *doc, const char *dev, const char *group,
                   const char *pass)
{
    return (int)tu_num(tu_get(device_group(doc, dev, group), pass), "n");
}

/* Every scored layer is cost_layer_time_of without a profile at its
 * entry's device, mbs and tp, its ratio that over 1 ms / 2 ms. */
START_TEST(test_same_layer_same_size)
{
    const fmt_device_type *a100 = fmt_catalog_find("A100-80GB");
    const cJSON *x;
    fmt_model m;
    cost_params cp;
    util_error err;
    char path[300];
    cJSON *doc;
    int n = put_folder(), status, seen = 0, blocks = 0, nolink = 0;

    memset(&err, 0, sizeof err);
    snprintf(path, sizeof path, "%s/sailor-opt/model_M.json", dir);
    ck_assert(fmt_load_model(path, &m, &err) == UTIL_OK);
    cost_params_init(&cp);
    doc = tu_bench_run(BENCH, dir, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(doc, "not_scored")), 0);
    ck_assert_int_eq((int)tu_num(doc, "profile_entries_scored"), 3);
    cJSON_ArrayForEach(x, tu_get(doc, "layers")) {
        int l = (int)tu_num(x, "layer"), tp = (int)tu_num(x, "tp");
        int mbs = (int)tu_num(x, "mbs");
        const char *dev = tu_get(x, "device")->valuestring;
        cost_layer_time lt;

        seen++;
        ck_assert(m.layers[l].kind != FMT_KIND_NOOP);
        ck_assert_double_eq_tol(tu_num(x, "fwd_measured_s"), 1e-3, 1e-12);
        ck_assert_double_eq_tol(tu_num(x, "bwd_measured_s"), 2e-3, 1e-12);
        ck_assert_double_eq_tol(tu_num(x, "fwd_ratio"),
                                tu_num(x, "fwd_analytic_s") / 1e-3, 1e-9);
        ck_assert_double_eq_tol(tu_num(x, "bwd_ratio"),
                                tu_num(x, "bwd_analytic_s") / 2e-3, 1e-9);
        if (strcmp(dev, "RTX3090") == 0) {
            /* no cluster has it: no link, no collectives estimated */
            ck_assert_int_eq(tp, 2);
            ck_assert_int_eq(mbs, 1);
            ck_assert(cJSON_IsNull(tu_get(x, "link_Bps")));
            ck_assert_double_eq(tu_num(x, "fwd_analytic_s"),
                                tu_num(x, "fwd_compute_s"));
            nolink += m.layers[l].kind == FMT_KIND_TRANSFORMER;
            continue;
        }
        ck_assert_str_eq(dev, "A100-80GB");
        ck_assert_int_eq(mbs, tp == 1 ? 2 : 4);
        cost_layer_time_of(&m, NULL, &cp, a100, l, tp, mbs, INFINITY, 0.0,
                           INFINITY, &lt);
        ck_assert_double_eq_tol(tu_num(x, "fwd_compute_s"), lt.fwd, 1e-15);
        ck_assert_double_eq_tol(tu_num(x, "bwd_compute_s"), lt.bwd, 1e-15);
        if (tp == 1) {
            ck_assert_double_eq_tol(tu_num(x, "fwd_analytic_s"), lt.fwd, 1e-15);
        } else if (m.layers[l].kind == FMT_KIND_TRANSFORMER) {
            /* two all-reduces per block on the node's NVLink-class link */
            ck_assert(tu_num(x, "link_Bps") > 0.0);
            ck_assert(tu_num(x, "fwd_analytic_s") > lt.fwd);
        }
        blocks += m.layers[l].kind == FMT_KIND_TRANSFORMER;
    }
    /* every layer but the no-ops, in each of the three entries */
    for (int l = 0; l < m.nlayers; l++)
        n -= m.layers[l].kind == FMT_KIND_NOOP;
    ck_assert_int_eq(seen, 3 * n);
    ck_assert_int_eq((int)tu_num(doc, "layers_scored"), 3 * n);
    ck_assert_int_eq(blocks, 2 * 2);
    ck_assert_int_eq(nolink, 2);
    ck_assert_int_eq(group_n(doc, "A100-80GB", "blocks", "fwd"), 4);
    ck_assert_int_eq(group_n(doc, "A100-80GB", "blocks_tp1", "bwd"), 2);
    ck_assert_int_eq(group_n(doc, "A100-80GB", "whole_model", "fwd"), 2);
    ck_assert_int_eq(group_n(doc, "RTX3090", "blocks", "fwd"), 0);
    ck_assert_int_eq(group_n(doc, "RTX3090", "blocks_no_link", "fwd"), 2);
    ck_assert_int_eq(group_n(doc, "RTX3090", "whole_model_no_link", "bwd"), 1);
    /* the run: one set of one run, analytic and with the profile */
    x = cJSON_GetArrayItem(tu_get(doc, "run_sets"), 0);
    ck_assert_str_eq(tu_get(x, "set")->valuestring, "sailor-opt");
    ck_assert_int_eq((int)tu_num(tu_get(x, "analytic"), "n"), 1);
    ck_assert_int_eq((int)tu_num(tu_get(x, "profile"), "n"), 1);
    fmt_model_free(&m);
    cJSON_Delete(doc);
}
END_TEST

/* A folder without amp/, sailor-opt/ or megatron-sc21/: skipped, 0. */
START_TEST(test_no_data_skipped)
{
    int status;
    cJSON *doc = tu_bench_run(BENCH, dir, &status);

    ck_assert_int_eq(status, 0);
    ck_assert(cJSON_IsTrue(tu_get(doc, "skipped")));
    cJSON_Delete(doc);
}
END_TEST

/* ../shared/data, counted by hand: amp/profiles.json gpt2 has 2 devices
 * x 3 TP degrees of 30 entries, 4 of them no-ops (noop0..3 of
 * examples/gpt2-amp.json): 6 entries, 156 layers, forward only;
 * transgan-generator has no model file.  sailor-opt/profile_OPT-350.json
 * has 82 entries (GH-96 21, Titan-RTX 22, RTX-2080 17, RTX3090 22) of 27
 * layers, one measured as 0: 26 each, 2132 layers; at tp 1 GH-96 has 6
 * micro-batch sizes, Titan-RTX 4, RTX-2080 3, RTX3090 4.  Runs that ran:
 * sailor-opt 15, AMP homogeneous 47 of 52, het_cluster 43 of 53,
 * megatron-sc21 10. */
START_TEST(test_shared_data)
{
    static const struct {
        const char *dev;
        int blocks, tp1, nolink_entries, bwd;
    } d[] = {{"T4", 72, 24, 0, 0},        {"V100", 72, 24, 0, 0},
             {"GH200", 504, 144, 0, 504}, {"TitanRTX", 96, 96, 18, 96},
             {"RTX2080", 72, 72, 14, 72}, {"RTX3090", 96, 96, 18, 96}};
    static const struct {
        const char *set;
        int n;
    } r[] = {{"sailor-opt", 15}, {"amp homogeneous", 47},
             {"amp het_cluster", 43}, {"megatron-sc21", 10}};
    const cJSON *x;
    cJSON *doc;
    size_t i;
    int status, k = 0;

    doc = tu_bench_run(BENCH, TU_DATA, &status);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(doc, "not_scored")), 0);
    x = cJSON_GetArrayItem(tu_get(doc, "profiles_without_model"), 0);
    ck_assert_ptr_nonnull(strstr(tu_get(x, "set")->valuestring, "transgan"));
    ck_assert_int_eq((int)tu_num(doc, "profile_entries_scored"), 6 + 82);
    ck_assert_int_eq((int)tu_num(doc, "layers_scored"), 156 + 82 * 26);
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(doc, "layers")), 156 + 82 * 26);
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(doc, "devices")), 6);
    for (i = 0; i < sizeof d / sizeof d[0]; i++) {
        ck_assert_int_eq(group_n(doc, d[i].dev, "blocks", "fwd"), d[i].blocks);
        ck_assert_int_eq(group_n(doc, d[i].dev, "blocks", "bwd"), d[i].bwd);
        ck_assert_int_eq(group_n(doc, d[i].dev, "blocks_tp1", "fwd"), d[i].tp1);
        ck_assert_int_eq(group_n(doc, d[i].dev, "whole_model_no_link", "fwd"),
                         d[i].nolink_entries);
    }
    ck_assert_int_eq(cJSON_GetArraySize(tu_get(doc, "run_sets")), 4);
    cJSON_ArrayForEach(x, tu_get(doc, "run_sets")) {
        const cJSON *a = tu_get(x, "analytic");
        ck_assert_str_eq(tu_get(x, "set")->valuestring, r[k].set);
        ck_assert_int_eq((int)tu_num(a, "n"), r[k].n);
        ck_assert(tu_num(a, "mape") > 0.0 && tu_num(a, "mape") < 10.0);
        k++;
    }
    cJSON_Delete(doc);
}
END_TEST

static Suite *plain(void)
{
    const TTest *const tests[] = {test_same_layer_same_size, test_no_data_skipped};
    const tu_case cases[] = {{"core", tests, TU_N(tests), 0.0, setup, teardown}};

    return tu_suite_of("bench_layer_analytic", cases, TU_N(cases));
}

static Suite *data(void)
{
    const TTest *const tests[] = {test_shared_data};
    const tu_case cases[] = {{"data", tests, TU_N(tests), 60.0, NULL, NULL}};

    return tu_suite_of("bench_layer_analytic_data", cases, TU_N(cases));
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain, data, TU_DATA);
}
