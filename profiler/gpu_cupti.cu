/* profiler/gpu_cupti.cu: kernel times from the CUPTI activity API (GPU
 * start and end of every kernel, matched to our sub-kernels by external
 * correlation ids).  CUPTI is loaded at run time (profiler/cupti_load.c):
 * only its header is used here, never its library at link time. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "gpu_internal.h"

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif

#ifndef HETPLAN_CUPTI_LIBRARY
#define HETPLAN_CUPTI_LIBRARY ""
#endif

/* ---- CUPTI loaded at run time ---------------------------------------- */

static struct {
    pthread_mutex_t lock;
    int tried, ok;
    prof_cupti_lib lib;
    char msg[sizeof(((util_error *)0)->msg)]; /* why it failed */
    decltype(&cuptiActivityRegisterCallbacks) register_callbacks;
    decltype(&cuptiActivityEnable) enable;
    decltype(&cuptiActivityFlushAll) flush_all;
    decltype(&cuptiActivityGetNextRecord) get_next_record;
    decltype(&cuptiActivityGetNumDroppedRecords) get_dropped;
    decltype(&cuptiGetResultString) result_string;
    decltype(&cuptiActivityPushExternalCorrelationId) push_id;
    decltype(&cuptiActivityPopExternalCorrelationId) pop_id;
} cu = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {}, "", NULL, NULL, NULL, NULL, NULL,
        NULL, NULL, NULL};

template <typename F>
static void bind(F *fp, int which)
{
    void *a = cu.lib.fn[which];

    memcpy((void *)fp, &a, sizeof *fp); /* dlsym address to function pointer */
}

int prof_cupti_init(util_error *err)
{
    char names[PROF_CUPTI_MAX_CANDIDATES][PROF_PATH_MAX];
    util_error e;
    int n;

    pthread_mutex_lock(&cu.lock);
    if (!cu.tried) {
        cu.tried = 1;
        memset(&e, 0, sizeof e);
        n = prof_cupti_candidates(CUDART_VERSION / 1000, HETPLAN_CUPTI_LIBRARY,
                                  names, PROF_CUPTI_MAX_CANDIDATES);
        if (prof_cupti_load(names, n, &cu.lib, &e) == UTIL_OK) {
            bind(&cu.register_callbacks, PROF_CUPTI_REGISTER_CALLBACKS);
            bind(&cu.enable, PROF_CUPTI_ENABLE);
            bind(&cu.flush_all, PROF_CUPTI_FLUSH_ALL);
            bind(&cu.get_next_record, PROF_CUPTI_GET_NEXT_RECORD);
            bind(&cu.get_dropped, PROF_CUPTI_GET_DROPPED);
            bind(&cu.result_string, PROF_CUPTI_RESULT_STRING);
            bind(&cu.push_id, PROF_CUPTI_PUSH_EXTERNAL_ID);
            bind(&cu.pop_id, PROF_CUPTI_POP_EXTERNAL_ID);
            cu.ok = 1;
        } else {
            snprintf(cu.msg, sizeof cu.msg, "%s", e.msg);
        }
    }
    pthread_mutex_unlock(&cu.lock);
    if (!cu.ok)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL, "%s", cu.msg);
    return UTIL_OK;
}

/* ---- CUPTI activity collection (process-wide, as CUPTI is) ----------- */

typedef struct kspan {
    uint32_t corr;          /* CUPTI correlation id of the launch */
    uint64_t start, end;    /* GPU timestamps, ns */
} kspan;

typedef struct extmap {
    uint32_t corr;          /* CUPTI correlation id */
    uint64_t ext;           /* our id: sample + 1 */
} extmap;

static struct {
    pthread_mutex_t lock;
    int ready;              /* callbacks registered, kinds enabled */
    kspan *k;
    size_t nk, capk;
    extmap *x;
    size_t nx, capx;
    int oom;                /* a record could not be stored */
} cupti = {PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, 0, NULL, 0, 0, 0};

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
                                      size_t *max_records)
{
    const size_t n = 8u << 20;
    void *p = NULL;

    if (posix_memalign(&p, 8, n) != 0)
        p = NULL;
    *buffer = (uint8_t *)p;
    *size = p ? n : 0;
    *max_records = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t c = *cap ? *cap : 4096;
    void *q;

    if (need <= *cap)
        return 1;
    while (c < need)
        c *= 2;
    q = realloc(*p, c * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buffer, size_t size,
                                      size_t valid)
{
    CUpti_Activity *rec = NULL;

    (void)ctx;
    (void)stream;
    (void)size;
    pthread_mutex_lock(&cupti.lock);
    while (valid > 0 &&
           cu.get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const kernel_record *r = (const kernel_record *)rec;
            if (grow((void **)&cupti.k, &cupti.capk, cupti.nk + 1, sizeof(kspan))) {
                cupti.k[cupti.nk].corr = r->correlationId;
                cupti.k[cupti.nk].start = r->start;
                cupti.k[cupti.nk].end = r->end;
                cupti.nk++;
            } else {
                cupti.oom = 1;
            }
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const CUpti_ActivityExternalCorrelation *r =
                (const CUpti_ActivityExternalCorrelation *)rec;
            if (r->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
                continue;
            if (grow((void **)&cupti.x, &cupti.capx, cupti.nx + 1, sizeof(extmap))) {
                cupti.x[cupti.nx].corr = r->correlationId;
                cupti.x[cupti.nx].ext = r->externalId;
                cupti.nx++;
            } else {
                cupti.oom = 1;
            }
        }
    }
    pthread_mutex_unlock(&cupti.lock);
    free(buffer);
}

/* A failed CUPTI call: UTIL_EINTERNAL, or UTIL_ENOTFOUND (exit 6) when
 * CUPTI refuses to start tracing at all. */
static int cupti_fail_code(util_error *err, int code, const char *call,
                           CUptiResult r)
{
    const char *s = NULL;

    if (cu.result_string)
        cu.result_string(r, &s);
    return util_error_set(err, code, NULL, NULL,
                          "CUPTI is not usable: %s failed: %s", call,
                          s ? s : "unknown error");
}

static int cupti_fail(util_error *err, const char *call, CUptiResult r)
{
    return cupti_fail_code(err, UTIL_EINTERNAL, call, r);
}

int prof_cupti_start(util_error *err)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};
    CUptiResult r;
    size_t i;
    int rc;

    if (cupti.ready)
        return UTIL_OK;
    if ((rc = prof_cupti_init(err)) != UTIL_OK)
        return rc;
    r = cu.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS)
        return cupti_fail_code(err, UTIL_ENOTFOUND, "cuptiActivityRegisterCallbacks", r);
    for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        r = cu.enable(kinds[i]);
        if (r != CUPTI_SUCCESS)
            return cupti_fail_code(err, UTIL_ENOTFOUND, "cuptiActivityEnable", r);
    }
    cupti.ready = 1;
    return UTIL_OK;
}

int prof_cupti_reset(util_error *err)
{
    CUptiResult r = cu.flush_all(1);

    if (r != CUPTI_SUCCESS)
        return cupti_fail(err, "cuptiActivityFlushAll", r);
    pthread_mutex_lock(&cupti.lock);
    cupti.nk = 0;
    cupti.nx = 0;
    cupti.oom = 0;
    pthread_mutex_unlock(&cupti.lock);
    return UTIL_OK;
}

void prof_cupti_flush(void)
{
    if (cupti.ready)
        cu.flush_all(1);
}

static int cmp_ext(const void *a, const void *b)
{
    uint32_t x = ((const extmap *)a)->corr, y = ((const extmap *)b)->corr;

    return (x > y) - (x < y);
}

int prof_cupti_assemble(prof_samples *out, const char *(*name)(void *, int),
                        void *ctx, util_error *err)
{
    size_t i, n = (size_t)out->repeats * (size_t)out->nk;
    uint64_t t0 = UINT64_MAX;
    int rc = UTIL_OK;
    CUptiResult r;
    size_t dropped = 0;

    r = cu.flush_all(1);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(err, "cuptiActivityFlushAll", r);
    pthread_mutex_lock(&cupti.lock);
    if (cu.get_dropped(NULL, 0, &dropped) == CUPTI_SUCCESS &&
        dropped > 0) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "CUPTI dropped %zu activity records", dropped);
        goto done;
    }
    if (cupti.oom) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                            "out of memory storing CUPTI records");
        goto done;
    }
    qsort(cupti.x, cupti.nx, sizeof(extmap), cmp_ext);
    for (i = 0; i < n; i++) {
        out->start[i] = INFINITY;
        out->end[i] = -INFINITY;
        out->busy[i] = 0.0;
    }
    for (i = 0; i < cupti.nk; i++)
        if (cupti.k[i].start < t0)
            t0 = cupti.k[i].start;
    for (i = 0; i < cupti.nk; i++) {
        extmap key, *hit;
        size_t s;
        double a, b;
        key.corr = cupti.k[i].corr;
        key.ext = 0;
        hit = (extmap *)bsearch(&key, cupti.x, cupti.nx, sizeof(extmap), cmp_ext);
        if (!hit || hit->ext < 1 || hit->ext > n)
            continue; /* not one of ours (or a warm-up launch) */
        s = (size_t)(hit->ext - 1);
        a = (double)(cupti.k[i].start - t0) * 1e-9;
        b = (double)(cupti.k[i].end - t0) * 1e-9;
        if (a < out->start[s])
            out->start[s] = a;
        if (b > out->end[s])
            out->end[s] = b;
        out->busy[s] += b - a;
    }
    for (i = 0; i < n; i++)
        if (!(out->end[i] >= out->start[i])) {
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "CUPTI returned no kernel record for '%s' "
                                "(sample %zu)",
                                name(ctx, (int)(i % (size_t)out->nk)), i);
            goto done;
        }
done:
    cupti.nk = 0;
    cupti.nx = 0;
    pthread_mutex_unlock(&cupti.lock);
    return rc;
}

int prof_cupti_push(unsigned long long id, util_error *err)
{
    CUptiResult r = cu.push_id(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, (uint64_t)id);

    return r == CUPTI_SUCCESS ? UTIL_OK
                              : cupti_fail(err, "cuptiActivityPushExternalCorrelationId", r);
}

int prof_cupti_pop(util_error *err)
{
    uint64_t last = 0;
    CUptiResult r = cu.pop_id(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);

    return r == CUPTI_SUCCESS ? UTIL_OK
                              : cupti_fail(err, "cuptiActivityPopExternalCorrelationId", r);
}
