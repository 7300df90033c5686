/* planner/calibfile.c: trials files (measured runs) and calibrated
 * profiles for `planner calibrate` (docs/calibration.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "plan.h"

void plan_trial_set_free(plan_trial_set *t)
{
    int i;

    if (t == NULL)
        return;
    for (i = 0; t->s != NULL && i < t->n; i++)
        cost_strategy_free(&t->s[i]);
    free(t->s);
    free(t->measured_s);
    free(t->failed_memory);
    memset(t, 0, sizeof *t);
}

/* AMP's trials as a strategies document for plan_parse_strategies. */
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

int plan_load_trials(const char *path, int amp, const cost_cluster *c,
                     const cost_model *m, int global_batch,
                     plan_trial_set *out, cost_error *err)
{
    char *text = NULL, *stext = NULL;
    cJSON *doc = NULL;
    const cJSON *arr, *gb, *t;
    const char *key = amp ? "trials" : "strategies";
    plan_trial_set ts;
    char p[160];
    int rc, i = 0, measured = 0;

    memset(&ts, 0, sizeof ts);
    memset(out, 0, sizeof *out);
    if ((rc = plan_read_file(path, &text, err)) != COST_OK)
        goto done;
    doc = cJSON_Parse(text);
    if (doc == NULL) {
        rc = cost_error_set(err, COST_EPARSE, path, NULL, "malformed JSON");
        goto done;
    }
    arr = cJSON_GetObjectItemCaseSensitive(doc, key);
    gb = cJSON_GetObjectItemCaseSensitive(doc, "global_batch");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        rc = cost_error_set(err, COST_EFIELD, path, key,
                            "expected a non-empty array of %s", amp ? "AMP trials"
                                                                    : "strategies");
        goto done;
    }
    if (gb != NULL && (!cJSON_IsNumber(gb) || gb->valuedouble < 1 ||
                       gb->valuedouble > 1e9 || gb->valuedouble != floor(gb->valuedouble))) {
        rc = cost_error_set(err, COST_EFIELD, path, "global_batch",
                            "expected a positive integer");
        goto done;
    }
    ts.global_batch = global_batch > 0 ? global_batch : gb != NULL ? gb->valueint
                                                                   : m->global_batch;
    if (amp) {
        stext = amp_strategies_text(arr);
        if (stext == NULL) {
            rc = cost_error_set(err, COST_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
    }
    rc = plan_parse_strategies(amp ? stext : text, path, c, m, ts.global_batch, &ts.s,
                               &ts.n, err);
    if (rc != COST_OK)
        goto done;
    ts.measured_s = calloc((size_t)ts.n, sizeof *ts.measured_s);
    ts.failed_memory = calloc((size_t)ts.n, sizeof *ts.failed_memory);
    if (ts.measured_s == NULL || ts.failed_memory == NULL) {
        rc = cost_error_set(err, COST_ENOMEM, NULL, NULL, "out of memory");
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
                rc = cost_error_set(err, COST_EFIELD, path, p,
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
                rc = cost_error_set(err, COST_EFIELD, path, p,
                                    "expected a string ('memory' or 'other') or null");
                goto done;
            }
            ts.failed_memory[i] = strcmp(fl->valuestring, "memory") == 0;
        }
        i++;
    }
    if (measured == 0) {
        rc = cost_error_set(err, COST_EFIELD, path, key,
                            "expected at least one entry with a 'measured_s' in "
                            "seconds, found none");
        goto done;
    }
    *out = ts;
    memset(&ts, 0, sizeof ts);
done:
    plan_trial_set_free(&ts);
    cJSON_Delete(doc);
    free(stext);
    free(text);
    return rc;
}

/* Per-layer times in ms, null where not measured. */
static cJSON *times_ms(const double *t, int n)
{
    cJSON *a = cJSON_CreateArray();
    int i;

    for (i = 0; a != NULL && i < n; i++)
        cJSON_AddItemToArray(a, t[i] < 0.0 ? cJSON_CreateNull()
                                           : cJSON_CreateNumber(t[i] * 1e3));
    return a;
}

char *plan_calibrated_profile_json(const cost_model *m,
                                   const cost_profile *base,
                                   const search_calib_fit *fit,
                                   double loo_mape, double loo_spearman)
{
    const cost_calibration *cal = &fit->cal;
    cJSON *doc = cJSON_CreateObject(), *arr, *jc, *jd, *jl, *jf;
    char *text = NULL;
    int i;

    if (doc == NULL)
        return NULL;
    cJSON_AddStringToObject(doc, "format", PLAN_PROFILE_SCHEMA);
    cJSON_AddStringToObject(doc, "model", m->name);
    arr = cJSON_AddArrayToObject(doc, "entries");
    for (i = 0; base != NULL && arr != NULL && i < base->nentries; i++) {
        const cost_profile_entry *e = &base->entries[i];
        cJSON *o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(arr, o))
            goto done;
        cJSON_AddStringToObject(o, "device", e->device);
        cJSON_AddNumberToObject(o, "tp", e->tp);
        cJSON_AddNumberToObject(o, "mbs", e->mbs);
        cJSON_AddItemToObject(o, "fwd_ms", times_ms(e->fwd, base->nlayers));
        if (e->bwd != NULL)
            cJSON_AddItemToObject(o, "bwd_ms", times_ms(e->bwd, base->nlayers));
    }
    jc = cJSON_AddObjectToObject(doc, "calibration");
    if (jc == NULL)
        goto done;
    jd = cJSON_AddObjectToObject(jc, "devices");
    for (i = 0; jd != NULL && i < cal->ntypes; i++) {
        cJSON *o = cJSON_AddObjectToObject(jd, cal->type[i]);
        cJSON_AddNumberToObject(o, "compute_scale", cal->compute_scale[i]);
        cJSON_AddNumberToObject(o, "mbs_half", cal->mbs_half[i]);
    }
    jl = cJSON_AddObjectToObject(jc, "links");
    for (i = 0; jl != NULL && i < COST_LINK_NCLASSES; i++)
        if (cal->bw_frac[i] > 0.0)
            cJSON_AddNumberToObject(jl, cost_link_class_name(i), cal->bw_frac[i]);
    cJSON_AddNumberToObject(jc, "msg_latency_us", cal->msg_latency * 1e6);
    cJSON_AddNumberToObject(jc, "tp_fixed_ms", cal->tp_fixed * 1e3);
    cJSON_AddNumberToObject(jc, "iter_overhead_ms", cal->iter_overhead * 1e3);
    jf = cJSON_AddObjectToObject(jc, "fit");
    if (jf != NULL) {
        cJSON_AddNumberToObject(jf, "trials", fit->nfit);
        cJSON_AddNumberToObject(jf, "free_parameters", fit->nfree);
        cJSON_AddNumberToObject(jf, "rounds", fit->rounds);
        cJSON_AddNumberToObject(jf, "mape", fit->mape);
        if (loo_mape >= 0.0) {
            cJSON_AddNumberToObject(jf, "loo_mape", loo_mape);
            cJSON_AddNumberToObject(jf, "loo_spearman", loo_spearman);
        }
    }
    text = cJSON_Print(doc);
done:
    cJSON_Delete(doc);
    return text;
}
