/* tests/test_formats_keys.c: unknown keys in the input files.  Every
 * reader (cluster, model, profile and its calibration, strategies,
 * trials, plan, scenario) records a key it does not know in the
 * caller's list (fmt_warnings_use) with the file, the JSON path and a
 * suggestion, or fails on it under strict; the shipped examples and the
 * data files the readers read raise none. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "decentral.h"
#include "formats.h"
#include "plan.h"
#include "testutil.h"

#define EX(f) HETPLAN_SOURCE_DIR "/examples/" f

static fmt_warnings warn;

static void sink_on(int strict)
{
    memset(&warn, 0, sizeof warn);
    warn.strict = strict;
    fmt_warnings_use(&warn);
}

static void sink_off(void)
{
    fmt_warnings_use(NULL);
    fmt_warnings_free(&warn);
}

/* Warning k of the list names file and path and holds the two words. */
static void expect_warning(int k, const char *file, const char *path, const char *w1,
                           const char *w2)
{
    const util_error *e;

    ck_assert_msg(k < warn.n, "%d warnings, expected warning %d (%s)", warn.n, k, path);
    e = &warn.items[k];
    ck_assert_str_eq(e->file, file);
    ck_assert_str_eq(e->path, path);
    ck_assert_msg(strstr(e->msg, w1) != NULL, "'%s' lacks '%s'", e->msg, w1);
    ck_assert_msg(w2 == NULL || strstr(e->msg, w2) != NULL, "'%s' lacks '%s'", e->msg,
                  w2);
}

static const char *const MODEL =
    "{\"name\": \"m\", \"training\": {\"global_batch\": 8, \"precison\": \"bf16\"},"
    " \"transformer\": {\"layers\": 2, \"hidden\": 64, \"heads\": 2, \"seq\": 8,"
    " \"vocab\": 10, \"hiden\": 64}}";

START_TEST(model_keys)
{
    fmt_model m;
    util_error err;

    memset(&err, 0, sizeof err);
    /* no list installed: ignored, as before */
    ck_assert_int_eq(fmt_parse_model(MODEL, "m.json", &m, &err), UTIL_OK);
    fmt_model_free(&m);
    sink_on(0);
    ck_assert_int_eq(fmt_parse_model(MODEL, "m.json", &m, &err), UTIL_OK);
    ck_assert_int_eq(warn.n, 2);
    /* "precison" is one swap from "precision", "hiden" one letter from
     * "hidden" */
    expect_warning(0, "m.json", "training.precison", "unknown key 'precison'",
                   "did you mean 'precision'?");
    expect_warning(1, "m.json", "transformer.hiden", "unknown key 'hiden'",
                   "did you mean 'hidden'?");
    ck_assert(!m.bf16); /* the misspelled precision did not apply */
    fmt_model_free(&m);
    sink_off();
    sink_on(1);
    ck_assert_int_eq(fmt_parse_model(MODEL, "m.json", &m, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "training.precison");
    ck_assert_ptr_nonnull(strstr(err.msg, "did you mean 'precision'?"));
    ck_assert_int_eq(warn.n, 0);
    sink_off();
    /* a key near no known one lists the known keys */
    sink_on(0);
    ck_assert_int_eq(fmt_parse_model("{\"name\": \"m\", \"layers\": [{\"name\": \"l\","
                                     " \"kind\": \"generic\", \"params\": 1,"
                                     " \"fwd_flops\": 1, \"out_bytes\": 1,"
                                     " \"act_bytes\": 1, \"colour\": 3}],"
                                     " \"notes\": \"x\"}",
                                     "l.json", &m, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 2);
    expect_warning(0, "l.json", "notes", "unknown key 'notes' (known: name, training",
                   NULL);
    expect_warning(1, "l.json", "layers[0].colour", "unknown key 'colour' (known:",
                   "tp_flops_frac");
    fmt_model_free(&m);
    fmt_warnings_free(&warn);
    /* a key with a control character reaches the terminal without it */
    ck_assert_int_eq(fmt_parse_model("{\"name\": \"m\", \"a\\u001b[2Jb\": 1,"
                                     " \"transformer\": {\"layers\": 2, \"hidden\": 64,"
                                     " \"heads\": 2, \"seq\": 8, \"vocab\": 10}}",
                                     "e.json", &m, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 1);
    expect_warning(0, "e.json", "a?[2Jb", "unknown key 'a?[2Jb'", NULL);
    fmt_model_free(&m);
    sink_off();
}
END_TEST

START_TEST(cluster_keys)
{
    fmt_cluster c;
    util_error err;

    memset(&err, 0, sizeof err);
    sink_on(0);
    ck_assert_int_eq(fmt_parse_cluster(
                         "{\"name\": \"c\", \"nodes\": [{\"name\": \"a\", \"device\": \"X\","
                         " \"gpus\": 2, \"intra_gbps\": 1, \"nic_gbps\": 1, \"regoin\": \"eu\"}],"
                         " \"device_types\": {\"X\": {\"memory_gib\": 16, \"tflops_fp16\": 1,"
                         " \"mem_bw_gbs\": 1, \"tflops_bf61\": 1}},"
                         " \"links\": [{\"a\": \"a:0\", \"b\": \"a:1\", \"gbps\": 1,"
                         " \"latency\": 1}], \"totl_gpus\": 2}",
                         "c.json", &c, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 4);
    expect_warning(0, "c.json", "totl_gpus", "did you mean 'total_gpus'?", NULL);
    expect_warning(1, "c.json", "device_types.X.tflops_bf61",
                   "did you mean 'tflops_bf16'?", NULL);
    expect_warning(2, "c.json", "nodes[0].regoin", "did you mean 'region'?", NULL);
    expect_warning(3, "c.json", "links[0].latency", "did you mean 'latency_ms'?",
                   NULL);
    fmt_cluster_free(&c);
    sink_off();
}
END_TEST

START_TEST(profile_and_strategy_keys)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile pr;
    fmt_strategy *s = NULL;
    util_error err;
    int n = 0, i;

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(EX("amp-het.json"), &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX("gpt2-amp.json"), &m, &err), UTIL_OK);
    sink_on(0);
    ck_assert_int_eq(fmt_parse_profile(
                         "{\"format\": \"hetplan-profile/1\", \"entries\": [{\"device\":"
                         " \"T4\", \"tp\": 1, \"mbs\": 1, \"by_kind\": {\"transformer\":"
                         " {\"fwd_ms\": 1, \"bwd_m\": 2}}}], \"calibration\": {\"devices\":"
                         " {\"T4\": {\"compute_scal\": 1}}, \"tp_fixed\": 1}}",
                         "p.json", &m, &pr, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 3);
    expect_warning(0, "p.json", "entries[0].by_kind.transformer.bwd_m",
                   "did you mean 'bwd_ms'?", NULL);
    expect_warning(1, "p.json", "calibration.tp_fixed", "did you mean 'tp_fixed_ms'?",
                   NULL);
    expect_warning(2, "p.json", "calibration.devices.T4.compute_scal",
                   "did you mean 'compute_scale'?", NULL);
    fmt_profile_free(&pr);
    fmt_warnings_free(&warn);
    ck_assert_int_eq(fmt_parse_strategies(
                         "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1,"
                         " \"stage_boundaries\": [0, 7, 14, 20, 30], \"shedule\": \"gpipe\"}]}",
                         "s.json", &c, &m, 32, &s, &n, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 1);
    expect_warning(0, "s.json", "strategies[0].shedule", "did you mean 'schedule'?",
                   NULL);
    ck_assert_int_eq(s[0].schedule, FMT_SCHED_1F1B); /* not applied */
    for (i = 0; i < n; i++)
        fmt_strategy_free(&s[i]);
    free(s);
    sink_off();
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Write text to dir/name; the path into out (256 bytes). */
static void write_file(const char *dir, const char *name, const char *text, char *out)
{
    snprintf(out, 256, "%s/%s", dir, name);
    tu_put(dir, name, text);
}

START_TEST(trials_plan_and_scenario_keys)
{
    char dir[64], p[256], msg[256];
    fmt_cluster c;
    fmt_model m;
    fmt_trial_set ts;
    plan_doc d;
    dtfm_input in;
    util_error err;

    memset(&err, 0, sizeof err);
    snprintf(dir, sizeof dir, "/tmp/hetplan_keys_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(fmt_load_cluster(EX("amp-het.json"), &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX("gpt2-amp.json"), &m, &err), UTIL_OK);
    sink_on(0);
    write_file(dir, "t.json",
               "{\"global_batch\": 32, \"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4,"
               " \"mbs\": 1, \"stage_boundaries\": [0, 7, 14, 20, 30],"
               " \"measured\": 1.5}]}", p);
    ck_assert_int_eq(fmt_load_trials(p, 0, &c, &m, 0, &ts, &err), UTIL_EFIELD);
    expect_warning(0, p, "strategies[0].measured", "did you mean 'measured_s'?", NULL);
    fmt_warnings_free(&warn);
    /* an AMP log: its own keys are known */
    write_file(dir, "a.json",
               "{\"global_batch\": 32, \"experiment\": \"x\", \"trials\": [{\"tp\": 1,"
               " \"dp\": 4, \"pp\": 4, \"mbs\": 1, \"stage_boundaries\": [0, 7, 14, 20, 30],"
               " \"measured_s\": 1.5, \"amp_predicted_s\": 1.2, \"mbs2\": 1}]}", p);
    ck_assert_int_eq(fmt_load_trials(p, 1, &c, &m, 0, &ts, &err), UTIL_OK);
    ck_assert_int_eq(warn.n, 1);
    expect_warning(0, p, "trials[0].mbs2", "did you mean 'mbs'?", NULL);
    fmt_trial_set_free(&ts);
    fmt_warnings_free(&warn);
    /* a plan naming the examples, with a misspelled setting */
    write_file(dir, "plan.json",
               "{\"schema\": \"hetplan-plan/1\", \"inputs\": {\"cluster\": {\"path\": \""
               EX("amp-het.json") "\"}, \"model\": {\"path\": \"" EX("gpt2-amp.json")
               "\"}}, \"settings\": {\"global_batch\": 32, \"methd\": \"amp\"},"
               " \"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1,"
               " \"stage_boundaries\": [0, 7, 14, 20, 30], \"predicted\": 1}]}", p);
    ck_assert_int_eq(plan_load_plan(p, &d, &err), UTIL_OK);
    ck_assert_int_eq(warn.n, 2);
    expect_warning(0, p, "settings.methd", "did you mean 'method'?", NULL);
    expect_warning(1, p, "strategies[0].predicted", "did you mean 'predicted_s'?",
                   NULL);
    plan_doc_free(&d);
    fmt_warnings_free(&warn);
    ck_assert_int_eq(dtfm_parse("{\"regions\": [{\"name\": \"a\", \"gpus\": 4,"
                                " \"latency\": 1}], \"inside\": {\"latency_ms\": 1,"
                                " \"bandwidth_gbps\": 10}, \"workload\": {\"d_pp\": 2,"
                                " \"dpp\": 2}}",
                                "d.json", NULL, &in, &err),
                     UTIL_OK);
    ck_assert_int_eq(warn.n, 2);
    expect_warning(0, "d.json", "workload.dpp", "did you mean 'd_pp'?", NULL);
    expect_warning(1, "d.json", "regions[0].latency", "did you mean 'latency_ms'?",
                   NULL);
    dtfm_input_free(&in);
    sink_off();
    /* strict: the first one is the error, with the same words */
    sink_on(1);
    snprintf(msg, sizeof msg, "%s/plan.json", dir);
    ck_assert_int_eq(plan_load_plan(msg, &d, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "settings.methd");
    plan_doc_free(&d);
    sink_off();
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    tu_remove_tree(dir);
}
END_TEST

/* Plans the planner itself writes, with every optional setting it
 * records (target launcher, simulated timeline, time limit), read back
 * without a warning. */
START_TEST(written_plans_have_no_unknown_keys)
{
    static const char *const extra[][8] = {
        {"--launcher", "megatron", NULL},
        {"--launcher", "deepspeed", "--fidelity", "simulate", NULL},
        {"--vpp", "2", "--fidelity", "simulate", "--time-limit", "600", NULL},
    };
    char dir[64], plan[128], out[128], err_path[128];
    size_t k;

    snprintf(dir, sizeof dir, "/tmp/hetplan_keys_w_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    for (k = 0; k < sizeof extra / sizeof extra[0]; k++) {
        const char *args[24] = {"--cluster", EX("amp-homogeneous.json"), "--model",
                                EX("gpt2-amp.json"), "--output", plan, "--quiet"};
        int n = 7, i;
        plan_doc d;
        util_error err;

        for (i = 0; extra[k][i] != NULL; i++)
            args[n++] = extra[k][i];
        args[n] = NULL;
        ck_assert_int_eq(tu_run_planner(NULL, args, out, err_path), 0);
        memset(&err, 0, sizeof err);
        sink_on(1);
        ck_assert_msg(plan_load_plan(plan, &d, &err) == UTIL_OK, "%s %s: %s",
                      extra[k][0], extra[k][1], err.msg);
        ck_assert_int_eq(warn.n, 0);
        plan_doc_free(&d);
        sink_off();
    }
    tu_remove_tree(dir);
}
END_TEST

/* The top-level key that tells what an example file is. */
static int has_key(const char *path, const char *key)
{
    char *text = NULL;
    cJSON *j;
    int yes;

    ck_assert_int_eq(util_read_file(path, &text, NULL), UTIL_OK);
    j = cJSON_Parse(text);
    free(text);
    ck_assert_msg(j != NULL, "%s is not JSON", path);
    yes = cJSON_GetObjectItemCaseSensitive(j, key) != NULL;
    cJSON_Delete(j);
    return yes;
}

/* Every file of examples/ read by its reader: no unknown key. */
START_TEST(examples_have_no_unknown_keys)
{
    DIR *dd = opendir(HETPLAN_SOURCE_DIR "/examples");
    struct dirent *de;
    char p[512];
    util_error err;
    int files = 0;

    ck_assert_ptr_nonnull(dd);
    memset(&err, 0, sizeof err);
    sink_on(1);
    while ((de = readdir(dd)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(p, sizeof p, "%s/examples/%s", HETPLAN_SOURCE_DIR, de->d_name);
        if (has_key(p, "regions") || has_key(p, "latency_ms")) {
            dtfm_options o;
            dtfm_input in;
            dtfm_options_init(&o);
            ck_assert_msg(dtfm_load(p, &o, &in, &err) == UTIL_OK, "%s: %s: %s", p,
                          err.path, err.msg);
            dtfm_input_free(&in);
        } else if (has_key(p, "nodes")) {
            fmt_cluster c;
            ck_assert_msg(fmt_load_cluster(p, &c, &err) == UTIL_OK, "%s: %s: %s", p,
                          err.path, err.msg);
            fmt_cluster_free(&c);
        } else if (has_key(p, "strategies")) {
            continue; /* below, with their cluster and model */
        } else {
            fmt_model m;
            ck_assert_msg(fmt_load_model(p, &m, &err) == UTIL_OK, "%s: %s: %s", p,
                          err.path, err.msg);
            fmt_model_free(&m);
        }
        files++;
    }
    closedir(dd);
    ck_assert_int_ge(files, 20);
    {
        static const char *const sets[][3] = {
            {EX("amp-het.json"), EX("gpt2-amp.json"), EX("strategies-amp-het.json")},
            {EX("h100-node4.json"), EX("gpt2-345m.json"), EX("strategies-gpt2-pp4.json")}};
        size_t k;
        for (k = 0; k < 2; k++) {
            fmt_cluster c;
            fmt_model m;
            fmt_strategy *s = NULL;
            int n = 0, i;
            ck_assert_int_eq(fmt_load_cluster(sets[k][0], &c, &err), UTIL_OK);
            ck_assert_int_eq(fmt_load_model(sets[k][1], &m, &err), UTIL_OK);
            ck_assert_msg(fmt_load_strategies(sets[k][2], &c, &m, 0, &s, &n, &err) ==
                              UTIL_OK, "%s: %s: %s", sets[k][2], err.path, err.msg);
            for (i = 0; i < n; i++)
                fmt_strategy_free(&s[i]);
            free(s);
            fmt_model_free(&m);
            fmt_cluster_free(&c);
        }
    }
    ck_assert_int_eq(warn.n, 0);
    sink_off();
}
END_TEST

/* The data files the readers read (Sailor's OPT-350 runs, AMP's logs):
 * no unknown key under strict. */
START_TEST(data_has_no_unknown_keys)
{
    DIR *dd = opendir(TU_DATA "/sailor-opt");
    struct dirent *de;
    char p[1024], q[1024];
    fmt_cluster c, ch, cn;
    fmt_model m, ma;
    fmt_profile pr;
    fmt_trial_set ts;
    util_error err;
    int clusters = 0;

    ck_assert_ptr_nonnull(dd);
    memset(&err, 0, sizeof err);
    sink_on(1);
    ck_assert_int_eq(fmt_load_model(TU_DATA "/sailor-opt/model_OPT-350.json", &m, &err),
                     UTIL_OK);
    ck_assert_msg(fmt_load_profile(TU_DATA "/sailor-opt/profile_OPT-350.json", &m, &pr,
                                   &err) == UTIL_OK, "%s: %s", err.path, err.msg);
    fmt_profile_free(&pr);
    while ((de = readdir(dd)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len > 13 && strcmp(de->d_name + len - 13, "_cluster.json") == 0) {
            fmt_strategy *s = NULL;
            int n = 0, i;
            snprintf(p, sizeof p, "%s/sailor-opt/%s", TU_DATA, de->d_name);
            ck_assert_msg(fmt_load_cluster(p, &c, &err) == UTIL_OK, "%s: %s: %s", p,
                          err.path, err.msg);
            /* its strategy: the run's batch is in runs.json, the keys are
             * checked before the batch is: a batch error is not a key one */
            snprintf(q, sizeof q, "%.*s_strat.json", (int)(strlen(p) - 13), p);
            if (fmt_load_strategies(q, &c, &m, 1 << 20, &s, &n, &err) != UTIL_OK)
                ck_assert_msg(strstr(err.msg, "unknown key") == NULL, "%s: %s", q,
                              err.msg);
            for (i = 0; i < n; i++)
                fmt_strategy_free(&s[i]);
            free(s);
            fmt_cluster_free(&c);
            clusters++;
        }
        if (strncmp(de->d_name, "model_", 6) == 0) {
            fmt_model mm;
            snprintf(p, sizeof p, "%s/sailor-opt/%s", TU_DATA, de->d_name);
            ck_assert_msg(fmt_load_model(p, &mm, &err) == UTIL_OK, "%s: %s", p, err.msg);
            fmt_model_free(&mm);
        }
    }
    closedir(dd);
    ck_assert_int_ge(clusters, 15);
    ck_assert_int_eq(fmt_load_cluster(EX("amp-het.json"), &ch, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_cluster(EX("amp-homogeneous.json"), &cn, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX("gpt2-amp.json"), &ma, &err), UTIL_OK);
    ck_assert_msg(fmt_load_trials(TU_DATA "/amp/het_cluster.json", 1, &ch, &ma, 0, &ts,
                                  &err) == UTIL_OK, "%s: %s", err.path, err.msg);
    fmt_trial_set_free(&ts);
    ck_assert_msg(fmt_load_trials(TU_DATA "/amp/homogeneous.json", 1, &cn, &ma, 0, &ts,
                                  &err) == UTIL_OK, "%s: %s", err.path, err.msg);
    fmt_trial_set_free(&ts);
    ck_assert_int_eq(warn.n, 0);
    sink_off();
    fmt_model_free(&ma);
    fmt_model_free(&m);
    fmt_cluster_free(&ch);
    fmt_cluster_free(&cn);
}
END_TEST

static Suite *plain(void)
{
    Suite *s = suite_create("formats_keys");
    TCase *tc = tcase_create("keys");

    tcase_add_test(tc, model_keys);
    tcase_add_test(tc, cluster_keys);
    tcase_add_test(tc, profile_and_strategy_keys);
    tcase_add_test(tc, trials_plan_and_scenario_keys);
    tcase_add_test(tc, examples_have_no_unknown_keys);
    tcase_add_test(tc, written_plans_have_no_unknown_keys);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data(void)
{
    Suite *s = suite_create("formats_keys_data");
    TCase *tc = tcase_create("data");

    tcase_add_test(tc, data_has_no_unknown_keys);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain, data, TU_DATA);
}
