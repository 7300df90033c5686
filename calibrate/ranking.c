/* calibrate/ranking.c: ranking accuracy of predictions against measured
 * runs (Spearman's rho, Kendall's tau-b, top-1 regret, memory verdicts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "calibrate.h"

/* Average ranks (1-based) of v[0..n-1], ties share their mean rank. */
static void ranks_of(const double *v, int n, double *rank, int *idx)
{
    int i, j, a;

    for (i = 0; i < n; i++)
        idx[i] = i;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[idx[j - 1]] > v[idx[j]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && v[idx[j]] == v[idx[i]]; j++)
            ;
        for (a = i; a < j; a++)
            rank[idx[a]] = (double)(i + j + 1) / 2.0;
    }
}

static double pearson(const double *x, const double *y, int n)
{
    double mx = 0.0, my = 0.0, sxy = 0.0, sxx = 0.0, syy = 0.0;
    int i;

    for (i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    for (i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0.0 && syy > 0.0 ? sxy / sqrt(sxx * syy) : 0.0;
}

static int sgn(double a, double b)
{
    return (a > b) - (a < b);
}

/* Kendall's tau-b: (C - D) / sqrt((C + D + Tx)(C + D + Ty)). */
static double kendall_tau_b(const double *x, const double *y, int n)
{
    double c = 0.0, d = 0.0, tx = 0.0, ty = 0.0;
    int i, j;

    for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++) {
            int a = sgn(x[i], x[j]), b = sgn(y[i], y[j]);
            if (a == 0 && b == 0)
                continue;
            if (a == 0)
                tx += 1.0;
            else if (b == 0)
                ty += 1.0;
            else if (a == b)
                c += 1.0;
            else
                d += 1.0;
        }
    return (c + d + tx) > 0.0 && (c + d + ty) > 0.0
               ? (c - d) / sqrt((c + d + tx) * (c + d + ty))
               : 0.0;
}

void calib_score_trials(const calib_trial *t, int n, calib_ranking *out)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    double *q = calloc((size_t)(n > 0 ? n : 1), sizeof *q);
    double *rp = calloc((size_t)(n > 0 ? n : 1), sizeof *rp);
    double *rq = calloc((size_t)(n > 0 ? n : 1), sizeof *rq);
    int *idx = calloc((size_t)(n > 0 ? n : 1), sizeof *idx);
    double best = INFINITY, err = 0.0;
    int i, k = 0, pick = -1;

    memset(out, 0, sizeof *out);
    out->top1_index = -1;
    if (!p || !q || !rp || !rq || !idx)
        goto done;
    for (i = 0; i < n; i++) {
        int runs = t[i].fits && !t[i].empty_stage; /* memory and structure */
        if (t[i].failed_memory) {
            out->oom_total++;
            if (!runs)
                out->oom_flagged++;
            if (!t[i].fits)
                out->flagged_by_memory++;
            if (t[i].empty_stage)
                out->flagged_by_empty_stage++;
        }
        if (t[i].measured_s < 0.0)
            continue;
        if (!runs)
            out->runnable_rejected++;
        p[k] = t[i].predicted_s;
        q[k] = t[i].measured_s;
        err += fabs(t[i].predicted_s - t[i].measured_s) / t[i].measured_s;
        if (t[i].measured_s < best)
            best = t[i].measured_s;
        k++;
    }
    out->ran = k;
    if (k > 1) {
        ranks_of(p, k, rp, idx);
        ranks_of(q, k, rq, idx);
        out->spearman = pearson(rp, rq, k);
        out->kendall = kendall_tau_b(p, q, k);
    }
    out->mape = k > 0 ? err / (double)k : 0.0;
    for (i = 0; i < n; i++) /* first pick among those predicted to run */
        if (t[i].fits && !t[i].empty_stage &&
            (pick < 0 || t[i].predicted_s < t[pick].predicted_s))
            pick = i;
    out->top1_index = pick >= 0 ? t[pick].index : -1;
    if (pick < 0 || t[pick].measured_s < 0.0)
        out->top1_regret = -1.0;
    else
        out->top1_regret = t[pick].measured_s / best;
done:
    free(p);
    free(q);
    free(rp);
    free(rq);
    free(idx);
}

/* The trials as a strategies document for fmt_parse_strategies. */
static char *strategies_text(const cJSON *trials)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "strategies");
    const cJSON *t;
    char *text = NULL;
    static const char *const keys[] = {"tp", "dp", "pp", "mbs", "stage_boundaries"};

    if (doc == NULL || arr == NULL)
        goto done;
    cJSON_ArrayForEach(t, trials) {
        cJSON *s = cJSON_CreateObject();
        size_t i;
        if (s == NULL)
            goto done;
        cJSON_AddItemToArray(arr, s);
        for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
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

int calib_amp_trials(const char *trial_path, const fmt_cluster *c,
                    const fmt_model *m, const fmt_profile *prof,
                    const cost_params *cp, calib_trial **trials, int *n,
                    util_error *err)
{
    char *text = NULL, *stext = NULL;
    cJSON *doc = NULL;
    const cJSON *arr, *gb, *t;
    fmt_strategy *s = NULL;
    calib_trial *out = NULL;
    int ns = 0, i = 0, rc;

    *trials = NULL;
    *n = 0;
    rc = util_read_file(trial_path, &text, err);
    if (rc != UTIL_OK)
        goto done;
    rc = util_json_parse_object(text, trial_path, &doc, err);
    if (rc != UTIL_OK)
        goto done;
    arr = cJSON_GetObjectItemCaseSensitive(doc, "trials");
    gb = cJSON_GetObjectItemCaseSensitive(doc, "global_batch");
    if (!cJSON_IsArray(arr) || !cJSON_IsNumber(gb)) {
        rc = util_error_set(err, UTIL_EFIELD, trial_path, "trials",
                            "expected a 'trials' array and a 'global_batch' number");
        goto done;
    }
    stext = strategies_text(arr);
    if (stext == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    rc = fmt_parse_strategies(stext, trial_path, c, m, gb->valueint, &s, &ns, err);
    if (rc != UTIL_OK)
        goto done;
    out = calloc((size_t)(ns > 0 ? ns : 1), sizeof *out);
    if (out == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(t, arr) {
        const cJSON *ms = cJSON_GetObjectItemCaseSensitive(t, "measured_s");
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(t, "failure");
        cost_result r;
        if (i >= ns)
            break;
        s[i].schedule = cp->schedule;
        rc = cost_evaluate(c, m, prof, cp, &s[i], &r, err);
        if (rc != UTIL_OK)
            goto done;
        out[i].index = i;
        out[i].measured_s = cJSON_IsNumber(ms) ? ms->valuedouble : -1.0;
        out[i].failed_memory = cJSON_IsString(fl) && strcmp(fl->valuestring, "memory") == 0;
        out[i].predicted_s = r.iter_s;
        out[i].fits = r.fits;
        out[i].empty_stage = r.empty_stage >= 0;
        cost_result_free(&r);
        i++;
    }
    *trials = out;
    *n = i;
    out = NULL;
done:
    for (i = 0; i < ns; i++)
        fmt_strategy_free(&s[i]);
    free(s);
    free(out);
    free(stext);
    free(text);
    cJSON_Delete(doc);
    return rc;
}

/* ---- calibrated predictions (docs/calibration.md) -------------------- */

int calib_predict_trials(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const fmt_trial_set *ts, calib_trial *t,
                        util_error *err)
{
    int i, rc;

    for (i = 0; i < ts->n; i++) {
        cost_result r;
        rc = cost_evaluate(c, m, prof, cp, &ts->s[i], &r, err);
        if (rc != UTIL_OK)
            return rc;
        t[i].index = i;
        t[i].measured_s = ts->measured_s[i];
        t[i].failed_memory = ts->failed_memory[i];
        t[i].predicted_s = r.iter_s;
        t[i].fits = r.fits;
        t[i].empty_stage = r.empty_stage >= 0;
        cost_result_free(&r);
    }
    return UTIL_OK;
}

int calib_loo(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const fmt_trial_set *ts,
                       const calib_params *sp, calib_trial *t,
                       util_error *err)
{
    return calib_loo_until(c, m, prof, cp, ts, sp, t, NULL, NULL, err);
}

int calib_loo_until(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_trial_set *ts, const calib_params *sp,
                    calib_trial *t, int *left_out, int *ndone, util_error *err)
{
    double *meas = malloc((size_t)(ts->n > 0 ? ts->n : 1) * sizeof *meas);
    calib_fit fit;
    cost_params p = *cp;
    cost_result r;
    int i, rc;

    if (ndone != NULL)
        *ndone = 0;
    for (i = 0; left_out != NULL && i < ts->n; i++)
        left_out[i] = 0;
    if (meas == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    memcpy(meas, ts->measured_s, (size_t)ts->n * sizeof *meas);
    /* failed runs: the fit on every measured trial */
    rc = calib_run(c, m, prof, cp, ts->s, meas, ts->n, sp, &fit, err);
    if (rc != UTIL_OK)
        goto done;
    p.calib = &fit.cal;
    rc = calib_predict_trials(c, m, prof, &p, ts, t, err);
    for (i = 0; rc == UTIL_OK && !fit.timed_out && i < ts->n; i++) {
        if (ts->measured_s[i] <= 0.0)
            continue;
        if (util_deadline_passed(sp != NULL ? sp->deadline : 0.0))
            break; /* the rest keep the fit on all */
        meas[i] = -1.0; /* left out of this fit */
        rc = calib_run(c, m, prof, cp, ts->s, meas, ts->n, sp, &fit, err);
        meas[i] = ts->measured_s[i];
        if (rc != UTIL_OK || fit.timed_out)
            break;
        if (left_out != NULL)
            left_out[i] = 1;
        if (ndone != NULL)
            (*ndone)++;
        p.calib = &fit.cal;
        rc = cost_evaluate(c, m, prof, &p, &ts->s[i], &r, err);
        if (rc != UTIL_OK)
            break;
        t[i].predicted_s = r.iter_s;
        cost_result_free(&r);
    }
done:
    free(meas);
    return rc;
}

int calib_cross(const fmt_cluster *fc, const fmt_profile *fprof,
                         const fmt_trial_set *fit_set, const fmt_cluster *c,
                         const fmt_model *m, const fmt_profile *prof,
                         const cost_params *cp, const fmt_trial_set *ts,
                         const calib_params *sp, calib_trial *t,
                         util_error *err)
{
    calib_fit fit;
    cost_params p = *cp;
    int rc;

    rc = calib_run(fc, m, fprof, cp, fit_set->s, fit_set->measured_s,
                          fit_set->n, sp, &fit, err);
    if (rc != UTIL_OK)
        return rc;
    p.calib = &fit.cal;
    return calib_predict_trials(c, m, prof, &p, ts, t, err);
}
