/* profiler/profile_json.c: the profile document hetplan-profile writes
 * (hetplan-profile/1, docs/inputs.md and docs/profiler.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "prof.h"

void prof_device_type_of(const char *cuda_name, char out[32])
{
    const fmt_device_type *t = fmt_catalog_find(cuda_name);

    snprintf(out, 32, "%s", t ? t->name : cuda_name);
}

/* Nine significant digits (measurements carry far fewer); null when not
 * finite. */
static cJSON *num(double v)
{
    char buf[40];

    if (!isfinite(v))
        return cJSON_CreateNull();
    snprintf(buf, sizeof buf, "%.9g", v);
    return cJSON_CreateRaw(buf);
}

int prof_json_put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item)
        return 0;
    if (key ? !cJSON_AddItemToObject(obj, key, item)
            : !cJSON_AddItemToArray(obj, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static const prof_layer_result *find(const prof_run *r, int kind, int tp,
                                     int mbs)
{
    int i;

    for (i = 0; i < r->nres; i++)
        if (r->res[i].kind == kind && r->res[i].tp == tp && r->res[i].mbs == mbs)
            return &r->res[i];
    return NULL;
}

static cJSON *device_json(const prof_device_info *d)
{
    cJSON *o = cJSON_CreateObject();
    char cc[16];
    int ok = o != NULL;

    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    ok = ok && prof_json_put(o, "name", cJSON_CreateString(d->name));
    ok = ok && prof_json_put(o, "device_type", cJSON_CreateString(d->type));
    ok = ok && prof_json_put(o, "index", cJSON_CreateNumber(d->index));
    ok = ok && prof_json_put(o, "compute_capability", cJSON_CreateString(cc));
    ok = ok && prof_json_put(o, "sm_count", cJSON_CreateNumber(d->sm_count));
    ok = ok && prof_json_put(o, "memory_gib", num(d->mem_bytes / 1073741824.0));
    ok = ok && prof_json_put(o, "sm_clock_mhz",
                   d->sm_clock_khz > 0 ? num(d->sm_clock_khz / 1e3) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "memory_clock_mhz",
                   d->mem_clock_khz > 0 ? num(d->mem_clock_khz / 1e3) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "memory_bus_bits",
                   d->mem_bus_bits > 0 ? cJSON_CreateNumber(d->mem_bus_bits)
                                       : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "driver_version", cJSON_CreateNumber(d->driver_version));
    ok = ok && prof_json_put(o, "runtime_version", cJSON_CreateNumber(d->runtime_version));
    ok = ok && prof_json_put(o, "gpus_visible", cJSON_CreateNumber(d->gpus));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

char *prof_device_info_json(const prof_device_info *d)
{
    cJSON *o = device_json(d);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;

    cJSON_Delete(o);
    return text;
}

/* GB/s (10^9 bytes/s) or null when not measured. */
static cJSON *gbs(double bps)
{
    return bps > 0.0 ? num(bps / 1e9) : cJSON_CreateNull();
}

static cJSON *machine_json(const prof_bandwidth *b)
{
    cJSON *o;
    int ok;

    if (b->copy_bytes <= 0 && b->gemm_n <= 0)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    ok = o != NULL;
    ok = ok && prof_json_put(o, "h2d_gbs", gbs(b->h2d_bps));
    ok = ok && prof_json_put(o, "d2h_gbs", gbs(b->d2h_bps));
    ok = ok && prof_json_put(o, "d2d_gbs", gbs(b->d2d_bps));
    ok = ok && prof_json_put(o, "p2p_gbs", gbs(b->p2p_bps));
    ok = ok && prof_json_put(o, "p2p_peer_access", cJSON_CreateBool(b->p2p_peer));
    ok = ok && prof_json_put(o, "copy_bytes", num((double)b->copy_bytes));
    ok = ok && prof_json_put(o, "gemm_tflops",
                   b->gemm_flops > 0.0 ? num(b->gemm_flops / 1e12) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "gemm_mnk", num((double)b->gemm_n));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Detail of one measured kind: times and every kernel. */
static cJSON *detail_json(const prof_layer_result *res, const fmt_model *m)
{
    cJSON *o = cJSON_CreateObject(), *ks = NULL;
    prof_shape sh;
    prof_layer_work *w = NULL;
    int ok = o != NULL, i;

    ok = ok && prof_json_put(o, "fwd_ms", num(res->fwd_s * 1e3));
    ok = ok && prof_json_put(o, "fwd_iqr_ms", num(res->fwd_iqr_s * 1e3));
    ok = ok && prof_json_put(o, "bwd_ms", num(res->bwd_s * 1e3));
    ok = ok && prof_json_put(o, "bwd_iqr_ms", num(res->bwd_iqr_s * 1e3));
    ok = ok && prof_json_put(o, "fwd_busy_ms", num(res->fwd_busy_s * 1e3));
    ok = ok && prof_json_put(o, "bwd_busy_ms", num(res->bwd_busy_s * 1e3));
    ok = ok && prof_json_put(o, "repeats", cJSON_CreateNumber(res->repeats));
    w = malloc(sizeof *w);
    ok = ok && w != NULL;
    /* the kernel list is a pure function of the shape */
    if (ok && prof_shape_of(m, res->kind, res->tp, res->mbs, 2, &sh, NULL) == UTIL_OK &&
        prof_layer_work_of(&sh, w, NULL) == UTIL_OK && w->nk == res->nk) {
        ks = cJSON_CreateArray();
        ok = prof_json_put(o, "kernels", ks);
        for (i = 0; ok && i < w->nk; i++) {
            const prof_kernel *k = &w->k[i];
            cJSON *e = cJSON_CreateObject();
            ok = prof_json_put(ks, NULL, e);
            ok = ok && prof_json_put(e, "name", cJSON_CreateString(k->name));
            ok = ok && prof_json_put(e, "op", cJSON_CreateString(prof_op_name(k->op)));
            ok = ok && prof_json_put(e, "pass", cJSON_CreateString(k->bwd ? "bwd" : "fwd"));
            ok = ok && prof_json_put(e, "gflop", num(k->flops / 1e9));
            ok = ok && prof_json_put(e, "mbytes", num(k->bytes / 1e6));
            ok = ok && prof_json_put(e, "median_ms", num(res->kt[i].median_s * 1e3));
            ok = ok && prof_json_put(e, "iqr_ms", num(res->kt[i].iqr_s * 1e3));
        }
    }
    free(w);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One entry (tp, mbs); *empty = 1 when no layer of the model is measured. */
static cJSON *entry_json(const prof_run *r, const fmt_model *m, int tp,
                         int mbs, int *empty)
{
    cJSON *o = cJSON_CreateObject(), *fw, *bw, *det;
    int ok = o != NULL, l, k, any = 0;

    *empty = 1;
    ok = ok && prof_json_put(o, "device", cJSON_CreateString(r->dev.type));
    ok = ok && prof_json_put(o, "tp", cJSON_CreateNumber(tp));
    ok = ok && prof_json_put(o, "mbs", cJSON_CreateNumber(mbs));
    fw = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "fwd_ms", fw);
    bw = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "bwd_ms", bw);
    for (l = 0; ok && l < m->nlayers; l++) {
        int kind = m->layers[l].kind;
        const prof_layer_result *res = find(r, kind, tp, mbs);
        if (kind == FMT_KIND_NOOP) {
            ok = prof_json_put(fw, NULL, cJSON_CreateNumber(0)) &&
                 prof_json_put(bw, NULL, cJSON_CreateNumber(0));
        } else if (res) {
            any = 1;
            ok = prof_json_put(fw, NULL, num(res->fwd_s * 1e3)) &&
                 prof_json_put(bw, NULL, num(res->bwd_s * 1e3));
        } else {
            ok = prof_json_put(fw, NULL, cJSON_CreateNull()) &&
                 prof_json_put(bw, NULL, cJSON_CreateNull());
        }
    }
    det = cJSON_CreateObject();
    ok = ok && prof_json_put(o, "detail", det);
    for (k = 0; ok && k <= FMT_KIND_NOOP; k++) {
        const prof_layer_result *res = find(r, k, tp, mbs);
        if (res)
            ok = prof_json_put(det, fmt_kind_name(k), detail_json(res, m));
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    *empty = !any;
    return o;
}

char *prof_profile_json(const prof_run *r, const fmt_model *m,
                        const char *model_name)
{
    cJSON *doc = cJSON_CreateObject(), *prof, *entries;
    char *text = NULL;
    int ok = doc != NULL, i, j;

    ok = ok && prof_json_put(doc, "format", cJSON_CreateString(FMT_PROFILE_SCHEMA));
    ok = ok && prof_json_put(doc, "model", cJSON_CreateString(model_name ? model_name : m->name));
    prof = cJSON_CreateObject();
    ok = ok && prof_json_put(doc, "profiler", prof);
    ok = ok && prof_json_put(prof, "name", cJSON_CreateString("hetplan-profile"));
    ok = ok && prof_json_put(prof, "version", cJSON_CreateString(PROF_VERSION));
    ok = ok && prof_json_put(prof, "timing",
                   cJSON_CreateString("CUPTI activity API: GPU start and end of every kernel"));
    ok = ok && prof_json_put(prof, "dtype", cJSON_CreateString(r->bf16 ? "bf16" : "fp16"));
    ok = ok && prof_json_put(prof, "warmup", cJSON_CreateNumber(r->warmup));
    ok = ok && prof_json_put(prof, "repeats", cJSON_CreateNumber(r->repeats));
    ok = ok && prof_json_put(prof, "statistic",
                   cJSON_CreateString("median over repeats of the pass span "
                                      "(first kernel start to last kernel end)"));
    ok = ok && prof_json_put(doc, "device_info", device_json(&r->dev));
    ok = ok && prof_json_put(doc, "machine", machine_json(&r->bw));
    entries = cJSON_CreateArray();
    ok = ok && prof_json_put(doc, "entries", entries);
    for (i = 0; ok && i < r->ntp; i++)
        for (j = 0; ok && j < r->nmbs; j++) {
            int empty;
            cJSON *e = entry_json(r, m, r->tp[i], r->mbs[j], &empty);
            if (!e) {
                ok = 0;
            } else if (empty) {
                cJSON_Delete(e);
            } else {
                ok = prof_json_put(entries, NULL, e);
            }
        }
    if (ok)
        text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}
