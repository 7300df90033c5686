/* calibrate/profile.c: the calibrated profile document. */
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"

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

/* The calibrated profile document: see calibrate.h. */
char *calib_profile_json(const fmt_model *m,
                                   const fmt_profile *base,
                                   const calib_fit *fit,
                                   double loo_mape, double loo_spearman)
{
    const fmt_calibration *cal = &fit->cal;
    cJSON *doc = cJSON_CreateObject(), *arr, *jc, *jd, *jl, *jf;
    char *text = NULL;
    int i;

    if (doc == NULL)
        return NULL;
    cJSON_AddStringToObject(doc, "format", FMT_PROFILE_SCHEMA);
    cJSON_AddStringToObject(doc, "model", m->name);
    arr = cJSON_AddArrayToObject(doc, "entries");
    for (i = 0; base != NULL && arr != NULL && i < base->nentries; i++) {
        const fmt_profile_entry *e = &base->entries[i];
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
    for (i = 0; jl != NULL && i < FMT_LINK_NCLASSES; i++)
        if (cal->bw_frac[i] > 0.0)
            cJSON_AddNumberToObject(jl, fmt_link_class_name(i), cal->bw_frac[i]);
    cJSON_AddNumberToObject(jc, "msg_latency_us", cal->msg_latency * 1e6);
    cJSON_AddNumberToObject(jc, "tp_fixed_ms", cal->tp_fixed * 1e3);
    cJSON_AddNumberToObject(jc, "iter_overhead_ms", cal->iter_overhead * 1e3);
    jf = cJSON_AddObjectToObject(jc, "fit");
    if (jf != NULL) {
        cJSON_AddNumberToObject(jf, "trials", fit->nfit);
        cJSON_AddNumberToObject(jf, "free_parameters", fit->nfree);
        cJSON_AddNumberToObject(jf, "rounds", fit->rounds);
        cJSON_AddNumberToObject(jf, "mape", fit->mape);
        if (fit->timed_out) /* a time limit stopped the rounds early */
            cJSON_AddStringToObject(jf, "status", "time-limit");
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
