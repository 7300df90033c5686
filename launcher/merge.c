/* launcher/merge.c: rank 0's view of a multi-rank run: the ranks'
 * measurements merged into a trial beside the plan's prediction. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

int launch_merge_ranks(const plan_doc *d, const launch_work *w,
                       const launch_rank_result *res, int n,
                       launch_measure *meas, launch_trial *out,
                       util_error *err)
{
    const fmt_strategy *s = &d->s[w->strategy];
    int vpp = s->vpp > 1 ? s->vpp : 1, i, j, rc;
    double iter = 0.0, lo = 0.0, hi = 0.0, *slow = NULL; /* slowest pass pair per stage */

    memset(out, 0, sizeof *out);
    slow = calloc((size_t)w->pp, sizeof *slow);
    if (!slow)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (j = 0; j < w->pp; j++) {
        memset(&meas[j], 0, sizeof meas[j]);
        meas[j].opt_s = -1.0;
    }
    /* per stage the slowest replica (data- or tensor-parallel) */
    for (i = 0; i < n; i++) {
        const launch_rank_result *r = &res[i];
        launch_measure *m;
        if (r->plan_rank < 0 || r->stage < 0 || r->stage >= w->pp)
            continue;
        m = &meas[r->stage];
        if (!m->measured || r->fwd_s + r->bwd_s > slow[r->stage]) {
            /* launch_compose adds the modelled TP collectives: take the
               measured ones out (half forward, half backward) */
            double per_micro = r->tp_s / (double)w->gas;
            m->measured = 1;
            m->fwd_s = vpp * r->fwd_s - 0.5 * per_micro;
            m->bwd_s = vpp * r->bwd_s - 0.5 * per_micro;
            if (m->fwd_s < 0.0)
                m->fwd_s = 0.0;
            if (m->bwd_s < 0.0)
                m->bwd_s = 0.0;
            m->opt_s = r->opt_s;
            slow[r->stage] = r->fwd_s + r->bwd_s;
        }
        if (r->iter_s > iter) {
            iter = r->iter_s;
            lo = r->iter_min_s;
            hi = r->iter_max_s;
        }
    }
    free(slow);
    for (j = 0; j < w->pp; j++)
        if (!meas[j].measured)
            return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                  "no rank reported stage %d", j);
    if ((rc = launch_compose(d, w, meas, out, err)) != UTIL_OK)
        return rc;
    out->composed_s = out->measured_s;
    out->measured_s = iter;
    out->iter_iqr_s = hi - lo; /* the range: per-rank medians only reach rank 0 */
    out->executed = 1;
    out->processes = n;
    out->gpu = calloc((size_t)w->pp, sizeof *out->gpu);
    out->route = calloc((size_t)(w->pp > 1 ? w->pp - 1 : 1), sizeof *out->route);
    if (!out->gpu || !out->route) {
        launch_trial_free(out);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (j = 0; j < w->pp; j++)
        out->gpu[j] = fmt_rank_device(s, j, 0, 0); /* the plan's device */
    snprintf(out->reason, sizeof out->reason,
             "executed: %d processes over NCCL, every rank's share of the plan run for "
             "real", n);
    return UTIL_OK;
}

char *launch_ranks_json(const char *json, const launch_rank_result *res, int n)
{
    cJSON *doc = cJSON_Parse(json), *arr;
    char *text = NULL;
    int i, ok;

    if (!doc)
        return NULL;
    arr = cJSON_AddArrayToObject(doc, "ranks");
    ok = arr != NULL;
    for (i = 0; i < n && ok; i++) {
        const launch_rank_result *r = &res[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(arr, o);
        ok = ok && cJSON_AddNumberToObject(o, "rank", r->rank);
        ok = ok && cJSON_AddNumberToObject(o, "plan_rank", r->plan_rank);
        if (r->plan_rank < 0)
            continue;
        ok = ok && cJSON_AddNumberToObject(o, "stage", r->stage);
        ok = ok && cJSON_AddStringToObject(o, "gpu", r->gpu);
        ok = ok && cJSON_AddNumberToObject(o, "iteration_s", r->iter_s);
        ok = ok && cJSON_AddNumberToObject(o, "fwd_s", r->fwd_s);
        ok = ok && cJSON_AddNumberToObject(o, "bwd_s", r->bwd_s);
        ok = ok && cJSON_AddNumberToObject(o, "tp_comm_s", r->tp_s);
        ok = ok && cJSON_AddNumberToObject(o, "p2p_s", r->p2p_s);
        ok = ok && cJSON_AddNumberToObject(o, "dp_comm_s", r->dp_s);
        ok = ok && cJSON_AddNumberToObject(o, "optimizer_s", r->opt_s);
        ok = ok && cJSON_AddNumberToObject(o, "memory_used_bytes", r->mem_used);
        ok = ok && cJSON_AddNumberToObject(o, "memory_before_bytes", r->mem_base);
        ok = ok && cJSON_AddNumberToObject(o, "memory_allocated_bytes", r->mem_alloc);
        ok = ok && cJSON_AddNumberToObject(o, "memory_predicted_bytes", r->mem_predicted);
    }
    if (ok)
        text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}
