/* bench/amp_ranking.c: ranking accuracy of hetplan's cost model on AMP's
 * real runs.  Usage: amp-ranking [--framework NAME] [DATA_DIR] (default
 * ../shared/data/amp); --framework scores the model as trained by NAME
 * (its training.framework, docs/inputs.md).  Prints one JSON object on
 * stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "calibrate.h"
#include "bench_data.h"

/* training.framework set into the model (--framework); NULL: as written */
static const char *run_framework = NULL;

typedef struct experiment {
    const char *name, *data, *cluster;
    double amp_rho, amp_tau, amp_regret, amp_mape;
} experiment;

static const experiment experiments[] = {
    {"homogeneous", "homogeneous.json", "amp-homogeneous.json", 0.935, 0.795, 1.10, 0.476},
    {"het_cluster", "het_cluster.json", "amp-het.json", 0.394, 0.306, 1.148, 0.494},
};

/* ---- calibrated scores, scored honestly (docs/calibration.md) */

/* Inputs of one experiment for the calibration scores. */
typedef struct cal_set {
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    fmt_trial_set ts;
} cal_set;

static void cal_set_free(cal_set *x)
{
    fmt_trial_set_free(&x->ts);
    fmt_profile_free(&x->prof);
    fmt_model_free(&x->m);
    fmt_cluster_free(&x->c);
}

static int cal_set_load(const char *dir, const experiment *e, cal_set *x,
                        util_error *err)
{
    char path[4096];
    int rc;

    memset(x, 0, sizeof *x);
    snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR, e->cluster);
    rc = fmt_load_cluster(path, &x->c, err);
    if (rc == UTIL_OK)
        rc = bench_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", run_framework,
                              &x->m, err);
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/profiles.json", dir);
        rc = fmt_profile_from_amp(path, "gpt2", &x->m, &x->prof, err);
    }
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/%s", dir, e->data);
        rc = fmt_load_trials(path, 1, &x->c, &x->m, 0, &x->ts, err);
    }
    return rc;
}

/* {"spearman", "kendall", "top1_regret", "top1_index", "mape", "trials"} */
static void cal_scores(cJSON *o, const char *name, const calib_trial *t, int n)
{
    cJSON *x = cJSON_AddObjectToObject(o, name), *arr;
    calib_ranking rk;
    int i;

    calib_score_trials(t, n, &rk);
    cJSON_AddNumberToObject(x, "ran", rk.ran);
    cJSON_AddNumberToObject(x, "spearman", rk.spearman);
    cJSON_AddNumberToObject(x, "kendall", rk.kendall);
    if (rk.top1_regret > 0.0)
        cJSON_AddNumberToObject(x, "top1_regret", rk.top1_regret);
    else
        cJSON_AddNullToObject(x, "top1_regret");
    cJSON_AddNumberToObject(x, "top1_index", rk.top1_index);
    cJSON_AddNumberToObject(x, "mape", rk.mape);
    arr = cJSON_AddArrayToObject(x, "trials");
    for (i = 0; i < n; i++) {
        cJSON *y = cJSON_CreateObject();
        cJSON_AddNumberToObject(y, "index", t[i].index);
        cJSON_AddNumberToObject(y, "predicted_s", t[i].predicted_s);
        cJSON_AddItemToArray(arr, y);
    }
}

/* "loo": each trial predicted by a calibration fitted without it;
 * "cross": every trial predicted by a calibration fitted on the other
 * experiment only. */
static void calibrated(const char *dir, const experiment *e,
                       const experiment *other, cJSON *o)
{
    cal_set a, b;
    cost_params cp;
    util_error err;
    calib_params sp;
    calib_trial *t = NULL;
    char msg[1024];
    int rc;

    memset(&err, 0, sizeof err);
    memset(&b, 0, sizeof b);
    cost_params_init(&cp);
    calib_params_init(&sp);
    rc = cal_set_load(dir, e, &a, &err);
    if (rc == UTIL_OK)
        rc = cal_set_load(dir, other, &b, &err);
    if (rc == UTIL_OK && (t = calloc((size_t)a.ts.n, sizeof *t)) == NULL)
        rc = util_error_set(&err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    if (rc == UTIL_OK)
        rc = calib_loo(&a.c, &a.m, &a.prof, &cp, &a.ts, &sp, t, &err);
    if (rc == UTIL_OK)
        cal_scores(o, "loo", t, a.ts.n);
    if (rc == UTIL_OK)
        rc = calib_cross(&b.c, &b.prof, &b.ts, &a.c, &a.m, &a.prof, &cp,
                                  &a.ts, &sp, t, &err);
    if (rc == UTIL_OK) {
        cal_scores(o, "cross", t, a.ts.n);
        cJSON_AddStringToObject(cJSON_GetObjectItem(o, "cross"), "calibrated_on",
                                other->name);
    }
    if (rc != UTIL_OK) {
        util_error_format(&err, msg, sizeof msg);
        cJSON_AddStringToObject(o, "calibration_error", msg);
    }
    free(t);
    cal_set_free(&a);
    cal_set_free(&b);
}

static cJSON *run(const char *dir, const experiment *e)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params cp;
    util_error err;
    calib_trial *t = NULL;
    calib_ranking rk;
    char path[4096], msg[1024];
    int n = 0, i, rc;
    cJSON *o = cJSON_CreateObject(), *arr, *amp;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&err, 0, sizeof err);
    cost_params_init(&cp);
    cJSON_AddStringToObject(o, "name", e->name);
    snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR, e->cluster);
    rc = fmt_load_cluster(path, &c, &err);
    if (rc == UTIL_OK)
        rc = bench_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", run_framework,
                              &m, &err);
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/profiles.json", dir);
        rc = fmt_profile_from_amp(path, "gpt2", &m, &prof, &err);
    }
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/%s", dir, e->data);
        rc = calib_amp_trials(path, &c, &m, &prof, &cp, &t, &n, &err);
    }
    if (rc != UTIL_OK) {
        util_error_format(&err, msg, sizeof msg);
        cJSON_AddStringToObject(o, "error", msg);
        goto done;
    }
    calib_score_trials(t, n, &rk);
    arr = cJSON_AddArrayToObject(o, "trials");
    for (i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "index", t[i].index);
        cJSON_AddNumberToObject(x, "predicted_s", t[i].predicted_s);
        cJSON_AddBoolToObject(x, "fits", t[i].fits); /* the memory model's verdict */
        cJSON_AddBoolToObject(x, "runnable", t[i].fits && !t[i].empty_stage);
        if (t[i].measured_s >= 0.0)
            cJSON_AddNumberToObject(x, "measured_s", t[i].measured_s);
        else
            cJSON_AddNullToObject(x, "measured_s");
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddNumberToObject(o, "ran", rk.ran);
    cJSON_AddNumberToObject(o, "spearman", rk.spearman);
    cJSON_AddNumberToObject(o, "kendall", rk.kendall);
    if (rk.top1_regret > 0.0)
        cJSON_AddNumberToObject(o, "top1_regret", rk.top1_regret);
    else
        cJSON_AddNullToObject(o, "top1_regret"); /* first pick failed */
    cJSON_AddNumberToObject(o, "top1_index", rk.top1_index);
    cJSON_AddNumberToObject(o, "mape", rk.mape);
    cJSON_AddNumberToObject(o, "oom_flagged", rk.oom_flagged);
    cJSON_AddNumberToObject(o, "oom_total", rk.oom_total);
    cJSON_AddNumberToObject(o, "runnable_rejected", rk.runnable_rejected);
    cJSON_AddNumberToObject(o, "flagged_by_memory", rk.flagged_by_memory);
    cJSON_AddNumberToObject(o, "flagged_by_empty_stage", rk.flagged_by_empty_stage);
    amp = cJSON_AddObjectToObject(o, "amp");
    cJSON_AddNumberToObject(amp, "spearman", e->amp_rho);
    cJSON_AddNumberToObject(amp, "kendall", e->amp_tau);
    cJSON_AddNumberToObject(amp, "top1_regret", e->amp_regret);
    cJSON_AddNumberToObject(amp, "mape", e->amp_mape);
done:
    free(t);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return o;
}

int main(int argc, char **argv)
{
    const char *dir;
    struct stat st;
    cJSON *doc, *arr;
    char *text;
    size_t i;
    fmt_framework fw;

    if (argc > 2 && strcmp(argv[1], "--framework") == 0) {
        if (fmt_framework_parse(argv[2], &fw) != 0) {
            fprintf(stderr, "amp-ranking: option '--framework' expects one of %s, "
                    "got '%s'\n", fmt_framework_accepted(), argv[2]);
            return 2;
        }
        run_framework = argv[2];
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    dir = argc > 1 ? argv[1] : "../shared/data/amp";
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: amp-ranking [--framework NAME] [DATA_DIR]   (default "
               "../shared/data/amp)\n");
        return 0;
    }
    if (argc <= 1 && stat(dir, &st) != 0)
        dir = HETPLAN_SOURCE_DIR "/../shared/data/amp";
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "amp-ranking: cannot find the AMP data folder '%s'\n", dir);
        return 1;
    }
    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "data_dir", dir);
    cJSON_AddStringToObject(doc, "framework", run_framework != NULL ? run_framework
                                                                    : "as written");
    arr = cJSON_AddArrayToObject(doc, "experiments");
    for (i = 0; i < sizeof experiments / sizeof experiments[0]; i++) {
        cJSON *x = run(dir, &experiments[i]);
        calibrated(dir, &experiments[i],
                   &experiments[(i + 1) % (sizeof experiments / sizeof experiments[0])],
                   x);
        cJSON_AddItemToArray(arr, x);
    }
    text = cJSON_Print(doc);
    puts(text);
    free(text);
    cJSON_Delete(doc);
    return 0;
}
