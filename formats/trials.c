/* formats/trials.c: the reader of trials files (measured runs) for
 * `planner calibrate` (docs/calibration.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

/* The keys of a trials file (docs/calibration.md): a strategies file
 * with the measurement; hetplan-launch's trial documents add what they
 * recorded about the run (docs/launcher.md). */
static const char *const trial_root_keys[] = {
    "strategies", "global_batch", "format", "launcher", "plan", "mode", "mode_reason",
    "selection", "rank", "composed", "note", "iterations", "local_device", "ranks",
    NULL};
static const char *const trial_keys[] = {
    "tp", "dp", "pp", "mbs", "schedule", "vpp", "zero", "recompute",
    "sequence_parallel", "stage_boundaries", "ranks", "measured_s", "failure",
    "micro_batches", "predicted_s", "simulated_s", "measured_iqr_s",
    "measured_over_predicted", "composed_from_measured_s", "modelled_dp_allreduce_s",
    "modelled_p2p_per_microbatch_s", "stages", NULL};
/* AMP's experiment logs (homogeneous.json, het_cluster.json). */
static const char *const amp_root_keys[] = {
    "trials", "global_batch", "cluster", "experiment", "failure", "measurement",
    "model", "rank_layout", "source", "stage_boundaries", NULL};
static const char *const amp_trial_keys[] = {
    "tp", "dp", "pp", "mbs", "stage_boundaries", "ranks", "schedule", "measured_s",
    "amp_predicted_s", "failure", NULL};

/* The unknown keys of an AMP log: the document and each trial. */
static int amp_keys(const char *path, const cJSON *doc, const cJSON *arr,
                    util_error *err)
{
    const cJSON *t;
    char p[64];
    int rc, i = 0;

    if ((rc = fmt_check_keys(path, doc, "", amp_root_keys, err)) != UTIL_OK)
        return rc;
    cJSON_ArrayForEach(t, arr) {
        snprintf(p, sizeof p, "trials[%d]", i++);
        if ((rc = fmt_check_keys(path, t, p, amp_trial_keys, err)) != UTIL_OK)
            return rc;
    }
    return UTIL_OK;
}

void fmt_trial_set_free(fmt_trial_set *t)
{
    int i;

    if (t == NULL)
        return;
    for (i = 0; t->s != NULL && i < t->n; i++)
        fmt_strategy_free(&t->s[i]);
    free(t->s);
    free(t->measured_s);
    free(t->failed_memory);
    memset(t, 0, sizeof *t);
}

/* AMP's trials as a strategies document for fmt_parse_strategies. */
static char *amp_strategies_text(const cJSON *trials)
{
    static const char *const keys[] = {"tp", "dp", "pp", "mbs", "stage_boundaries",
                                       "ranks", "schedule"};
    cJSON *doc = cJSON_CreateObject(), *arr;
    const cJSON *t;
    char *text = NULL;

    arr = doc != NULL ? cJSON_AddArrayToObject(doc, "strategies") : NULL;
    if (arr == NULL)
        goto done;
    cJSON_ArrayForEach(t, trials) {
        cJSON *s = cJSON_CreateObject();
        size_t i;
        if (s == NULL || !cJSON_AddItemToArray(arr, s))
            goto done;
        for (i = 0; cJSON_IsObject(t) && i < sizeof keys / sizeof keys[0]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, keys[i]);
            if (v != NULL)
                cJSON_AddItemToObject(s, keys[i], cJSON_Duplicate(v, 1));
        }
    }
    text = cJSON_PrintUnformatted(doc);
done:
    cJSON_Delete(doc);
    return text;
}

int fmt_load_trials(const char *path, int amp, const fmt_cluster *c,
                     const fmt_model *m, int global_batch,
                     fmt_trial_set *out, util_error *err)
{
    char *text = NULL, *stext = NULL;
    cJSON *doc = NULL;
    const cJSON *arr, *gb, *t;
    const char *key = amp ? "trials" : "strategies";
    fmt_trial_set ts;
    char p[160];
    int rc, i = 0, measured = 0;

    memset(&ts, 0, sizeof ts);
    memset(out, 0, sizeof *out);
    if ((rc = util_read_file(path, &text, err)) != UTIL_OK)
        goto done;
    if ((rc = util_json_parse_object(text, path, &doc, err)) != UTIL_OK)
        goto done;
    arr = cJSON_GetObjectItemCaseSensitive(doc, key);
    gb = cJSON_GetObjectItemCaseSensitive(doc, "global_batch");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        rc = util_error_set(err, UTIL_EFIELD, path, key,
                            "expected a non-empty array of %s", amp ? "AMP trials"
                                                                    : "strategies");
        goto done;
    }
    if (cJSON_GetArraySize(arr) > FMT_MAX_TRIALS) {
        rc = util_error_set(err, UTIL_EFIELD, path, key,
                            "expected at most %d trials, got %d", FMT_MAX_TRIALS,
                            cJSON_GetArraySize(arr));
        goto done;
    }
    if (gb != NULL && (!cJSON_IsNumber(gb) || gb->valuedouble < 1 ||
                       gb->valuedouble > 1e9 || gb->valuedouble != floor(gb->valuedouble))) {
        rc = util_error_set(err, UTIL_EFIELD, path, "global_batch",
                            "expected a positive integer");
        goto done;
    }
    ts.global_batch = global_batch > 0 ? global_batch : gb != NULL ? gb->valueint
                                                                   : m->global_batch;
    if (amp) {
        if ((rc = amp_keys(path, doc, arr, err)) != UTIL_OK)
            goto done;
        stext = amp_strategies_text(arr);
        if (stext == NULL) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
    }
    rc = fmt_parse_strategies_keys(amp ? stext : text, path, c, m, ts.global_batch,
                                   amp ? NULL : trial_root_keys,
                                   amp ? NULL : trial_keys, &ts.s, &ts.n, err);
    if (rc != UTIL_OK)
        goto done;
    ts.measured_s = calloc((size_t)ts.n, sizeof *ts.measured_s);
    ts.failed_memory = calloc((size_t)ts.n, sizeof *ts.failed_memory);
    if (ts.measured_s == NULL || ts.failed_memory == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(t, arr) {
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(t, "measured_s");
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(t, "failure");
        if (i >= ts.n)
            break;
        ts.measured_s[i] = -1.0;
        if (ms != NULL && !cJSON_IsNull(ms)) {
            if (!cJSON_IsNumber(ms) || !(ms->valuedouble > 0.0) ||
                !isfinite(ms->valuedouble)) {
                snprintf(p, sizeof p, "%s[%d].measured_s", key, i);
                rc = util_error_set(err, UTIL_EFIELD, path, p,
                                    "expected a positive number of seconds or null "
                                    "(failed run)");
                goto done;
            }
            ts.measured_s[i] = ms->valuedouble;
            measured++;
        }
        if (fl != NULL && !cJSON_IsNull(fl)) {
            if (!cJSON_IsString(fl)) {
                snprintf(p, sizeof p, "%s[%d].failure", key, i);
                rc = util_error_set(err, UTIL_EFIELD, path, p,
                                    "expected a string ('memory' or 'other') or null");
                goto done;
            }
            ts.failed_memory[i] = strcmp(fl->valuestring, "memory") == 0;
        }
        i++;
    }
    if (measured == 0) {
        rc = util_error_set(err, UTIL_EFIELD, path, key,
                            "expected at least one entry with a 'measured_s' in "
                            "seconds, found none");
        goto done;
    }
    *out = ts;
    memset(&ts, 0, sizeof ts);
done:
    fmt_trial_set_free(&ts);
    cJSON_Delete(doc);
    free(stext);
    free(text);
    return rc;
}

