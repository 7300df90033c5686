/* bench/layer_runs.h: the parts of bench/layer-analytic that read the
 * data's models and score whole runs: device names, the model files as
 * bench/sailor-opt scores them, and the analytic iteration time of each
 * set of measured runs (sailor-opt, AMP, megatron-sc21). */
#ifndef HETPLAN_BENCH_LAYER_RUNS_H
#define HETPLAN_BENCH_LAYER_RUNS_H

#include <ctype.h>
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

#define MAX_RUNS 512

/* The catalogue's name of device `name` (itself when not catalogued). */
static const char *catalogue_name(const char *name)
{
    const fmt_device_type *t = fmt_catalog_find(name);

    return t != NULL ? t->name : name;
}

static void not_scored(cJSON *arr, const char *set, const util_error *err,
                       const char *reason)
{
    char msg[1024];
    cJSON *x = cJSON_CreateObject();

    if (err != NULL)
        util_error_format(err, msg, sizeof msg);
    cJSON_AddStringToObject(x, "set", set);
    cJSON_AddStringToObject(x, "reason", err != NULL ? msg : reason);
    cJSON_AddItemToArray(arr, x);
}

/* ---- models --------------------------------------------------------- */

static int starts_with_nocase(const char *name, const char *prefix)
{
    for (; *prefix; name++, prefix++)
        if (*name == '\0' ||
            tolower((unsigned char)*name) != tolower((unsigned char)*prefix))
            return 0;
    return 1;
}

/* The model file at path as bench/sailor-opt scores it: an OPT model
 * described as a GPT-2 block without an "mlp" gets OPT's ReLU MLP (Zhang
 * et al. 2022; HF OPTConfig activation_function "relu"). */
static int load_model(const char *path, const char *name, fmt_model *m,
                      util_error *err)
{
    cJSON *doc = NULL, *tf, *fam;
    char *text;
    int rc = bench_read_json(path, &doc, err);

    if (rc != UTIL_OK)
        return rc;
    tf = cJSON_GetObjectItemCaseSensitive(doc, "transformer");
    fam = cJSON_GetObjectItemCaseSensitive(tf, "family");
    if (cJSON_IsObject(tf) && starts_with_nocase(name, "opt") &&
        !cJSON_HasObjectItem(tf, "mlp") &&
        (fam == NULL || (cJSON_IsString(fam) && strcmp(fam->valuestring, "gpt2") == 0)))
        cJSON_AddStringToObject(tf, "mlp", "relu");
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (text == NULL)
        return util_error_set(err, UTIL_ENOMEM, path, NULL, "out of memory");
    rc = fmt_parse_model(text, path, m, err);
    cJSON_free(text);
    return rc;
}

/* ---- per run -------------------------------------------------------- */

/* One set of runs scored: out gets {"set", "devices", "n", analytic and
 * (np > 0) profiled scores}; the summary text in sum. */
static void put_set(cJSON *arr, const char *set, const char *devices,
                    const calib_trial *ta, const calib_trial *tp, int n,
                    int np, char *sum, size_t cap)
{
    cJSON *o = cJSON_CreateObject();
    calib_ranking ra, rp;
    size_t len = strlen(sum);

    cJSON_AddItemToArray(arr, o);
    cJSON_AddStringToObject(o, "set", set);
    cJSON_AddStringToObject(o, "devices", devices);
    bench_put_scores(o, "analytic", ta, n, &ra);
    if (np > 0)
        bench_put_scores(o, "profile", tp, np, &rp);
    snprintf(sum + len, cap - len, "%s%s %s %.1f%% (rho %.3f", len > 0 ? ", " : "",
             set, devices, 100.0 * ra.mape, ra.spearman);
    len = strlen(sum);
    if (np > 0)
        snprintf(sum + len, cap - len, "; profiled %.1f%%", 100.0 * rp.mape);
    len = strlen(sum);
    snprintf(sum + len, cap - len, ")");
}

/* "A+B" of the cluster's device types (catalogue names) into out. */
static void type_names(const fmt_cluster *c, char *out, size_t n)
{
    int i;

    out[0] = '\0';
    for (i = 0; i < c->ntypes; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", len > 0 ? "+" : "",
                 catalogue_name(c->types[i].name));
    }
}

/* sailor-opt: each run's strategy by cost_evaluate, analytic and with
 * its model's profile. */
static void sailor_runs(const char *root, const cJSON *runs, cJSON *sets,
                        cJSON *skipped, char *sum, size_t cap)
{
    static calib_trial ta[MAX_RUNS], tp[MAX_RUNS];
    char path[4200], devices[256] = "";
    const cJSON *r;
    int n = 0, np = 0, k = 0;

    cJSON_ArrayForEach(r, runs) {
        const char *tag = bench_str(r, "tag"), *model = bench_str(r, "model");
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(r, "measured_s");
        fmt_cluster c;
        fmt_model m;
        fmt_profile prof;
        fmt_strategy *s = NULL;
        cost_params cp;
        cost_result ra, rp;
        util_error err;
        struct stat st;
        int ns = 0, gbs = 0, rc, i, profiled = 0;

        k++;
        if (n == MAX_RUNS)
            break;
        memset(&c, 0, sizeof c);
        memset(&m, 0, sizeof m);
        memset(&prof, 0, sizeof prof);
        memset(&ra, 0, sizeof ra);
        memset(&rp, 0, sizeof rp);
        memset(&err, 0, sizeof err);
        cost_params_init(&cp);
        rc = tag != NULL && model != NULL
                 ? bench_int(r, "gbs", "runs.json", &gbs, &err)
                 : util_error_set(&err, UTIL_EFIELD, "runs.json", "tag",
                                  "expected strings 'tag' and 'model'");
        if (rc == UTIL_OK) {
            snprintf(path, sizeof path, "%s/sailor-opt/%s_cluster.json", root, tag);
            rc = fmt_load_cluster(path, &c, &err);
        }
        if (rc == UTIL_OK) {
            snprintf(path, sizeof path, "%s/sailor-opt/model_%s.json", root, model);
            rc = load_model(path, model, &m, &err);
        }
        if (rc == UTIL_OK) {
            snprintf(path, sizeof path, "%s/sailor-opt/profile_%s.json", root, model);
            profiled = stat(path, &st) == 0 &&
                       fmt_load_profile(path, &m, &prof, &err) == UTIL_OK;
            memset(&err, 0, sizeof err);
            snprintf(path, sizeof path, "%s/sailor-opt/%s_strat.json", root, tag);
            rc = fmt_load_strategies(path, &c, &m, gbs, &s, &ns, &err);
        }
        if (rc == UTIL_OK && (ns != 1 || s[0].bounds_open))
            rc = util_error_set(&err, UTIL_EINVAL, path, NULL,
                                "expected one strategy with stage boundaries");
        if (rc == UTIL_OK)
            rc = cost_evaluate(&c, &m, NULL, &cp, &s[0], &ra, &err);
        if (rc == UTIL_OK && profiled)
            rc = cost_evaluate(&c, &m, &prof, &cp, &s[0], &rp, &err);
        if (rc != UTIL_OK) {
            char set[128];
            snprintf(set, sizeof set, "sailor-opt run %d", k - 1);
            not_scored(skipped, set, &err, NULL);
        } else if (cJSON_IsNumber(ms) && ms->valuedouble > 0.0) {
            type_names(&c, devices, sizeof devices);
            memset(&ta[n], 0, sizeof ta[n]);
            ta[n].index = k - 1;
            ta[n].measured_s = ms->valuedouble;
            ta[n].predicted_s = ra.iter_s;
            ta[n].fits = 1;
            if (profiled) {
                tp[np] = ta[n];
                tp[np++].predicted_s = rp.iter_s;
            }
            n++;
        }
        cost_result_free(&ra);
        cost_result_free(&rp);
        for (i = 0; i < ns; i++)
            fmt_strategy_free(&s[i]);
        free(s);
        fmt_profile_free(&prof);
        fmt_model_free(&m);
        fmt_cluster_free(&c);
    }
    if (n > 0)
        put_set(sets, "sailor-opt", devices, ta, tp, n, np, sum, cap);
}

/* AMP's homogeneous and het_cluster runs, by calibrate's evaluation of
 * them (the path of bench/amp-ranking), analytic and with the profile. */
static void amp_runs(const char *root, cJSON *sets, cJSON *skipped, char *sum,
                     size_t cap)
{
    static const struct {
        const char *set, *data, *cluster;
    } x[] = {{"amp homogeneous", "homogeneous.json", "amp-homogeneous.json"},
             {"amp het_cluster", "het_cluster.json", "amp-het.json"}};
    char path[4200], devices[256];
    size_t i;

    for (i = 0; i < sizeof x / sizeof x[0]; i++) {
        fmt_cluster c;
        fmt_model m;
        fmt_profile prof;
        cost_params cp;
        calib_trial *ta = NULL, *tp = NULL;
        util_error err;
        int na = 0, np = 0, rc;

        memset(&c, 0, sizeof c);
        memset(&m, 0, sizeof m);
        memset(&prof, 0, sizeof prof);
        memset(&err, 0, sizeof err);
        cost_params_init(&cp);
        snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR, x[i].cluster);
        rc = fmt_load_cluster(path, &c, &err);
        if (rc == UTIL_OK)
            rc = fmt_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", &m, &err);
        if (rc == UTIL_OK) {
            snprintf(path, sizeof path, "%s/amp/profiles.json", root);
            rc = fmt_profile_from_amp(path, "gpt2", &m, &prof, &err);
        }
        snprintf(path, sizeof path, "%s/amp/%s", root, x[i].data);
        if (rc == UTIL_OK)
            rc = calib_amp_trials(path, &c, &m, NULL, &cp, &ta, &na, &err);
        if (rc == UTIL_OK)
            rc = calib_amp_trials(path, &c, &m, &prof, &cp, &tp, &np, &err);
        if (rc == UTIL_OK) {
            type_names(&c, devices, sizeof devices);
            put_set(sets, x[i].set, devices, ta, tp, na, np, sum, cap);
        } else {
            not_scored(skipped, x[i].set, &err, NULL);
        }
        free(ta);
        free(tp);
        fmt_profile_free(&prof);
        fmt_model_free(&m);
        fmt_cluster_free(&c);
    }
}

/* megatron-sc21: the totals its own bench prints (the program beside
 * this one, run on <root>/megatron-sc21). */
static void megatron_runs(const char *self, const char *root, cJSON *sets,
                          cJSON *skipped, char *sum, size_t cap)
{
    char prog[4200], cmd[8800], *text = NULL;
    const char *slash = strrchr(self, '/');
    size_t len = 0, got;
    cJSON *doc, *tot, *time, *o, *hw;
    FILE *f;

    snprintf(prog, sizeof prog, "%.*smegatron-sc21",
             slash != NULL ? (int)(slash - self + 1) : 0, self);
    snprintf(cmd, sizeof cmd, "'%s' '%s/megatron-sc21' 2>/dev/null", prog, root);
    if (strchr(prog, '\'') != NULL || strchr(root, '\'') != NULL ||
        (f = popen(cmd, "r")) == NULL) {
        not_scored(skipped, "megatron-sc21", NULL, "cannot run megatron-sc21");
        return;
    }
    for (;;) {
        char *grown = realloc(text, len + 65536);
        if (grown == NULL)
            break;
        text = grown;
        got = fread(text + len, 1, 65535, f);
        len += got;
        text[len] = '\0';
        if (got == 0)
            break;
    }
    pclose(f);
    doc = text != NULL ? cJSON_Parse(text) : NULL;
    free(text);
    tot = cJSON_GetObjectItemCaseSensitive(doc, "totals");
    time = cJSON_GetObjectItemCaseSensitive(tot, "time");
    hw = cJSON_GetObjectItemCaseSensitive(doc, "hardware");
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(time, "mape"))) {
        not_scored(skipped, "megatron-sc21", NULL, "the program megatron-sc21 "
                   "beside this one gave no totals.time.mape");
        cJSON_Delete(doc);
        return;
    }
    o = cJSON_CreateObject();
    cJSON_AddItemToArray(sets, o);
    cJSON_AddStringToObject(o, "set", "megatron-sc21");
    cJSON_AddStringToObject(o, "devices", bench_str(hw, "device") != NULL
                                              ? bench_str(hw, "device") : "?");
    cJSON_AddItemToObject(o, "analytic", cJSON_Duplicate(time, 1));
    len = strlen(sum);
    snprintf(sum + len, cap - len, "%smegatron-sc21 %s %.1f%% (rho %.3f)",
             len > 0 ? ", " : "", bench_str(o, "devices"),
             100.0 * cJSON_GetObjectItemCaseSensitive(time, "mape")->valuedouble,
             cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(time, "spearman"))
                 ? cJSON_GetObjectItemCaseSensitive(time, "spearman")->valuedouble
                 : 0.0);
    cJSON_Delete(doc);
}

#endif
