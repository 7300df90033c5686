/* tests/test_bench_sailor.c: bench/sailor-opt on a folder of runs in
 * Sailor's layout (runs.json, <tag>_cluster.json, <tag>_strat.json,
 * model_<model>.json, profile_<model>.json) built here: a run whose files
 * are missing is left out of the scores with its reason, a profile that
 * does not load leaves its model's runs scored analytically, and in both
 * cases the other runs get the very figures they get in a folder of their
 * own, the exit status is 1 and the document says why; a strategy without
 * stage boundaries is scored; null measurements leave a run out of the
 * scores they belong to. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "testutil.h"

#ifndef HETPLAN_BENCH_DIR
#error "HETPLAN_BENCH_DIR must name the folder of the bench programs"
#endif

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_bench_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

static void put(const char *name, const char *text)
{
    tu_put(dir, name, text);
}

/* A small fp32 GPT-2 on one node of two A100-80GB, data-parallel. */
static const char model_json[] =
    "{\"name\": \"M\", \"training\": {\"precision\": \"fp32\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 4, \"hidden\": 256,"
    " \"heads\": 4, \"seq\": 128, \"vocab\": 1000}}";
static const char cluster_json[] =
    "{\"name\": \"good\", \"nodes\": [{\"name\": \"n0\", \"device\": "
    "\"A100-80GB\", \"gpus\": 2, \"intra_gbps\": 600, \"nic_gbps\": 100}]}";
static const char good_run[] =
    "{\"tag\": \"good\", \"model\": \"M\", \"gbs\": 8, \"tp\": 1, \"dp\": 2,"
    " \"pp\": 1, \"mbs\": 2, \"measured_s\": 0.5,"
    " \"measured_peak_bytes\": 4000000000}";

/* The good run's files: the strategy holds every layer of the model. */
static void put_good(void)
{
    char path[256], strat[256];
    fmt_model m;
    util_error err;

    put("model_M.json", model_json);
    put("good_cluster.json", cluster_json);
    snprintf(path, sizeof path, "%s/model_M.json", dir);
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_load_model(path, &m, &err) == UTIL_OK, "%s", err.msg);
    snprintf(strat, sizeof strat,
             "{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 1, \"mbs\": 2,"
             " \"stage_boundaries\": [0, %d]}]}", m.nlayers);
    fmt_model_free(&m);
    put("good_strat.json", strat);
}

/* The bench's document on dir (caller deletes); *status its exit status. */
static cJSON *bench(int *status)
{
    return tu_bench_run(HETPLAN_BENCH_DIR "/sailor-opt", dir, status);
}

/* The good run alone: its analytic time and predicted peak. */
static void alone(double *time_s, double *peak)
{
    char runs[600];
    cJSON *doc;
    const cJSON *run;
    int status;

    put_good();
    snprintf(runs, sizeof runs, "[%s]", good_run);
    put("runs.json", runs);
    doc = bench(&status);
    ck_assert_int_eq(status, 0);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(doc, "error"));
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs"), 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_not_scored"), 0);
    run = cJSON_GetArrayItem(tu_get(doc, "runs"), 0);
    ck_assert(cJSON_IsNull(tu_get(run, "predicted_s_profile")));
    *time_s = tu_num(run, "predicted_s_analytic");
    *peak = tu_num(run, "predicted_peak_bytes");
    ck_assert(*time_s > 0.0 && *peak > 0.0);
    cJSON_Delete(doc);
}

/* The run object has the figures the good run has alone. */
static void same_as_alone(const cJSON *run, double t0, double p0)
{
    ck_assert_double_eq(tu_num(run, "predicted_s_analytic"), t0);
    ck_assert_double_eq(tu_num(run, "predicted_peak_bytes"), p0);
}

START_TEST(test_missing_run_not_scored)
{
    char runs[1200];
    double t0, p0;
    cJSON *doc;
    const cJSON *arr, *bad;
    int status;

    alone(&t0, &p0);
    snprintf(runs, sizeof runs,
             "[{\"tag\": \"gone\", \"model\": \"M\", \"gbs\": 8, \"tp\": 1,"
             " \"dp\": 2, \"pp\": 1, \"mbs\": 2, \"measured_s\": 0.5,"
             " \"measured_peak_bytes\": 4000000000}, %s]", good_run);
    put("runs.json", runs);
    doc = bench(&status);
    ck_assert_int_eq(status, 1);
    ck_assert_ptr_nonnull(strstr(tu_get(doc, "error")->valuestring,
                                 "1 of 2 runs not scored"));
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs"), 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_not_scored"), 1);
    arr = tu_get(doc, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
    bad = cJSON_GetArrayItem(arr, 0);
    ck_assert_str_eq(tu_get(bad, "tag")->valuestring, "gone");
    ck_assert_ptr_nonnull(strstr(tu_get(bad, "error")->valuestring,
                                 "gone_cluster.json"));
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(bad, "predicted_peak_bytes"));
    /* the other run: the figures it has on its own */
    same_as_alone(cJSON_GetArrayItem(arr, 1), t0, p0);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(test_bad_profile_scored_analytically)
{
    double t0, p0;
    cJSON *doc;
    const cJSON *run;
    int status;

    alone(&t0, &p0);
    /* one entry of one layer for a model of several */
    put("profile_M.json",
        "{\"format\": \"hetplan-profile/1\", \"model\": \"M\", \"entries\":"
        " [{\"device\": \"A100-80GB\", \"tp\": 1, \"mbs\": 2,"
        " \"fwd_ms\": [1.0], \"bwd_ms\": [2.0]}]}");
    doc = bench(&status);
    ck_assert_int_eq(status, 1);
    ck_assert_ptr_nonnull(strstr(tu_get(doc, "error")->valuestring,
                                 "1 runs scored without their model's profile"));
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs"), 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_with_profile"), 0);
    run = cJSON_GetArrayItem(tu_get(doc, "runs"), 0);
    ck_assert_ptr_nonnull(strstr(tu_get(run, "profile_error")->valuestring,
                                 "profile_M.json"));
    ck_assert(cJSON_IsNull(tu_get(run, "predicted_s_profile")));
    same_as_alone(run, t0, p0);
    cJSON_Delete(doc);
}
END_TEST

/* A strategy file that leaves out the stage boundaries is scored with
 * the split planner evaluate gives it: with one stage, the same figures
 * as the boundaries [0, layers]. */
START_TEST(test_open_boundaries_scored)
{
    char runs[600];
    double t0, p0;
    cJSON *doc;
    const cJSON *run;
    int status;

    alone(&t0, &p0);
    put("good_strat.json",
        "{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 1, \"mbs\": 2}]}");
    snprintf(runs, sizeof runs, "[%s]", good_run);
    put("runs.json", runs);
    doc = bench(&status);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_not_scored"), 0);
    run = cJSON_GetArrayItem(tu_get(doc, "runs"), 0);
    same_as_alone(run, t0, p0);
    cJSON_Delete(doc);
}
END_TEST

/* A null measurement: a run whose peak was not measured is scored for
 * time and left out of the memory scores; a run whose time is null did
 * not run: it is left out of every score and counted as failed (here
 * predicted to fit, so not flagged), and never as a false reject. */
START_TEST(test_null_measurements)
{
    char runs[1600];
    double t0, p0;
    cJSON *doc;
    const cJSON *tot, *run;
    int status;

    alone(&t0, &p0);
    snprintf(runs, sizeof runs,
             "[%s, {\"tag\": \"good\", \"model\": \"M\", \"gbs\": 8, \"tp\": 1,"
             " \"dp\": 2, \"pp\": 1, \"mbs\": 2, \"measured_s\": 0.6,"
             " \"measured_peak_bytes\": null},"
             " {\"tag\": \"good\", \"model\": \"M\", \"gbs\": 8, \"tp\": 1,"
             " \"dp\": 2, \"pp\": 1, \"mbs\": 2, \"measured_s\": null,"
             " \"measured_peak_bytes\": 4000000000}]", good_run);
    put("runs.json", runs);
    doc = bench(&status);
    ck_assert_int_eq(status, 0);
    tot = tu_get(doc, "totals");
    ck_assert_int_eq((int)tu_num(tot, "runs"), 3);
    ck_assert_int_eq((int)tu_num(tu_get(tot, "time_analytic"), "n"), 2);
    ck_assert_int_eq((int)tu_num(tu_get(tot, "peak_memory"), "n"), 1);
    ck_assert_int_eq((int)tu_num(tot, "runs_failed"), 1);
    ck_assert_int_eq((int)tu_num(tot, "failed_predicted_not_to_fit"), 0);
    ck_assert_int_eq((int)tu_num(tot, "false_rejects"), 0);
    run = cJSON_GetArrayItem(tu_get(doc, "runs"), 1);
    ck_assert(cJSON_IsNull(tu_get(run, "measured_peak_bytes")));
    ck_assert(cJSON_IsNull(tu_get(run, "peak_ratio")));
    ck_assert_double_eq(tu_num(run, "predicted_peak_bytes"), p0);
    run = cJSON_GetArrayItem(tu_get(doc, "runs"), 2);
    ck_assert(cJSON_IsNull(tu_get(run, "measured_s")));
    ck_assert(cJSON_IsNull(tu_get(run, "measured_peak_bytes")));
    ck_assert_double_eq(tu_num(run, "predicted_s_analytic"), t0);
    cJSON_Delete(doc);
    /* a measurement that is neither a positive number nor null */
    snprintf(runs, sizeof runs,
             "[%s, {\"tag\": \"good\", \"model\": \"M\", \"gbs\": 8, \"tp\": 1,"
             " \"dp\": 2, \"pp\": 1, \"mbs\": 2, \"measured_s\": -1,"
             " \"measured_peak_bytes\": 4000000000}]", good_run);
    put("runs.json", runs);
    doc = bench(&status);
    ck_assert_int_eq(status, 1);
    ck_assert_int_eq((int)tu_num(tu_get(doc, "totals"), "runs_not_scored"), 1);
    ck_assert_ptr_nonnull(strstr(tu_get(cJSON_GetArrayItem(tu_get(doc, "runs"), 1),
                                     "error")->valuestring,
                                 "positive number or null"));
    cJSON_Delete(doc);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {test_missing_run_not_scored,
                                  test_bad_profile_scored_analytically,
                                  test_open_boundaries_scored,
                                  test_null_measurements};
    const tu_case cases[] = {
        {"core", tests, TU_N(tests), 0.0, setup, teardown}};

    return tu_run(tu_suite_of("bench_sailor", cases, TU_N(cases)));
}
