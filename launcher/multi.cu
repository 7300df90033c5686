/* launcher/multi.cu: one rank of a multi-rank launch on its GPU: NCCL
 * communicators for the plan's groups, the rank's layers (profiler/
 * gpu_run.cu kernels of the model's shapes), TP collectives, pipeline
 * point-to-point steps, DP or distributed-optimizer
 * collectives, the tied embedding's all-reduce, a fused Adam step; model
 * state and activations sized by the memory model; CUDA events for the
 * times, cudaMemGetInfo for the memory.  A watchdog thread ends the run
 * when another rank fails or NCCL reports an error.  C-style code;
 * nothing here prints. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifdef HETPLAN_HAVE_NCCL
#include <nccl.h>
#endif

extern "C" {
#include "launch.h"
}

#define CUDA_TRY(call)                                                       \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,             \
                                "rank %d: %s: %s", rank, #call,              \
                                cudaGetErrorString(e_));                     \
            goto done;                                                       \
        }                                                                    \
    } while (0)

int launch_rank_gpu(int local_rank, launch_rank_info *info, util_error *err)
{
    cudaDeviceProp prop;
    cudaError_t e;
    int n = 0;

    info->gpu_ok = 0;
    info->gpu[0] = '\0';
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU: %s",
                              e != cudaSuccess ? cudaGetErrorString(e)
                                               : "the driver reports no device");
    if (local_rank >= n)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU: local rank %d needs GPU %d, this machine "
                              "shows %d", local_rank, local_rank, n);
    if ((e = cudaSetDevice(local_rank)) != cudaSuccess ||
        (e = cudaGetDeviceProperties(&prop, local_rank)) != cudaSuccess)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL, "no CUDA GPU: GPU %d: %s",
                              local_rank, cudaGetErrorString(e));
    snprintf(info->gpu, sizeof info->gpu, "%.63s", prop.name);
    info->gpu_ok = 1;
    return UTIL_OK;
}

#ifndef HETPLAN_HAVE_NCCL

int launch_nccl_id(void *blob, size_t cap, size_t *len, util_error *err)
{
    (void)blob;
    (void)cap;
    *len = 0;
    return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                          "this hetplan-launch was built without NCCL (nccl.h and "
                          "libnccl were not found next to the CUDA toolkit)");
}

int launch_rank_execute(const plan_doc *d, const launch_work *w,
                        const launch_rank_run *r, launch_boot *b,
                        launch_rank_result *out, util_error *err)
{
    size_t len;

    (void)d;
    (void)w;
    (void)r;
    (void)b;
    memset(out, 0, sizeof *out);
    return launch_nccl_id(NULL, 0, &len, err);
}

#else /* HETPLAN_HAVE_NCCL */

int launch_nccl_id(void *blob, size_t cap, size_t *len, util_error *err)
{
    ncclUniqueId id;
    ncclResult_t e = ncclGetUniqueId(&id);

    *len = 0;
    if (e != ncclSuccess)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "rank 0: ncclGetUniqueId: %s", ncclGetErrorString(e));
    if (cap < sizeof id)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "the NCCL id needs %zu bytes", sizeof id);
    memcpy(blob, &id, sizeof id);
    *len = sizeof id;
    return UTIL_OK;
}

/* ---- the watchdog ---------------------------------------------------- */

typedef struct watch {
    launch_boot *b;
    const launch_rank_run *run;
    ncclComm_t *comms;      /* every communicator the rank holds */
    int ncomms;
    pthread_t th;
    pthread_mutex_t mu;
    volatile int stop;      /* set by the main thread */
    volatile int failed;    /* set by the watchdog */
    volatile double progress; /* time of the last completed iteration */
    char why[512];
} watch;

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void watch_fail(watch *wd, const char *why, int tell)
{
    int i;

    pthread_mutex_lock(&wd->mu);
    if (!wd->failed) {
        snprintf(wd->why, sizeof wd->why, "%.511s", why);
        wd->failed = 1;
        if (tell)
            launch_boot_abort(wd->b, why);
        /* unblock whatever NCCL kernel waits for the lost peer */
        for (i = 0; i < wd->ncomms; i++)
            if (wd->comms[i]) {
                ncclCommAbort(wd->comms[i]);
                wd->comms[i] = NULL;
            }
    }
    pthread_mutex_unlock(&wd->mu);
}

static void *watch_main(void *arg)
{
    watch *wd = (watch *)arg;
    util_error e;
    char why[600];
    int i;

    while (!wd->stop) {
        memset(&e, 0, sizeof e);
        if (launch_boot_watch(wd->b, 0.25, &e) != UTIL_OK) {
            watch_fail(wd, e.msg, 0); /* rank 0 told the others already */
            break;
        }
        for (i = 0; i < wd->ncomms && !wd->failed; i++) {
            ncclResult_t ae = ncclSuccess;
            if (wd->comms[i] && ncclCommGetAsyncError(wd->comms[i], &ae) == ncclSuccess &&
                ae != ncclSuccess && ae != ncclInProgress) {
                snprintf(why, sizeof why, "NCCL error: %s", ncclGetErrorString(ae));
                watch_fail(wd, why, 1);
            }
        }
        if (!wd->failed && now_s() - wd->progress > wd->run->timeout_s) {
            snprintf(why, sizeof why, "no progress for %g s (a collective or transfer "
                     "is stuck)", wd->run->timeout_s);
            watch_fail(wd, why, 1);
        }
        if (wd->failed)
            break;
    }
    if (wd->failed) {
        /* give the main thread the grace period to notice, then end */
        double until = now_s() + 10.0;
        while (!wd->stop && now_s() < until)
            usleep(20000);
        if (!wd->stop && wd->run->on_stuck) {
            snprintf(why, sizeof why, "rank %d: %.500s", wd->run->rank, wd->why);
            wd->run->on_stuck(why);
        }
    }
    return NULL;
}

/* ---- kernels --------------------------------------------------------- */

/* Adam (Kingma and Ba 2015, Algorithm 1) over n fp32 master weights with
 * gradients in fp32 (g32) or half precision, writing the half-precision
 * copy the model runs with. */
__global__ void adam_kernel(float *w, float *m, float *v, const void *g, int g32,
                            void *w16, int bf16, long long n, float lr, float b1,
                            float b2, float eps, float c1, float c2)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;

    for (; i < n; i += stride) {
        float gi = g32 ? ((const float *)g)[i]
                   : bf16 ? __bfloat162float(((const __nv_bfloat16 *)g)[i])
                          : __half2float(((const __half *)g)[i]);
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] -= lr * (mi / c1) / (sqrtf(vi / c2) + eps);
        if (bf16)
            ((__nv_bfloat16 *)w16)[i] = __float2bfloat16(w[i]);
        else
            ((__half *)w16)[i] = __float2half(w[i]);
    }
}

/* ---- one rank -------------------------------------------------------- */

typedef struct rank_bufs {
    char *weights, *grads, *rest; /* one block: weights, gradients, the rest
                                     (activations, pipeline buffers) */
    size_t weight_bytes, grad_bytes, rest_bytes, block;
    float *opt;                   /* master, m, v: 3 * nopt floats */
    long long nopt;
    char *send[2], *recv[2];      /* point-to-point, act_cap each */
    size_t act_cap;
    char *tp;                     /* TP collective buffer, tp_cap bytes */
    size_t tp_cap;
    char *host, *host_w;          /* optimizer offload, pinned: the shard's
                                     gradients, then (host_w) its weights */
    size_t host_bytes, host_gcap;
    double allocated;             /* bytes cudaMalloc'd here */
} rank_bufs;

static int alloc_dev(void **p, size_t bytes, rank_bufs *bf, int rank, int dev,
                     const char *what, double predicted, util_error *err)
{
    size_t fr = 0, tot = 0;
    cudaError_t e;

    if (bytes == 0)
        bytes = 256;
    e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) {
        bf->allocated += (double)bytes;
        return cudaMemset(*p, 0, bytes) == cudaSuccess
                   ? UTIL_OK
                   : util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "rank %d: cudaMemset "
                                    "failed", rank);
    }
    cudaGetLastError();
    cudaMemGetInfo(&fr, &tot);
    return util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                          "rank %d: out of memory on GPU %d: %s needs %.2f GiB, %.2f GiB "
                          "free of %.2f GiB after %.2f GiB allocated (the memory model "
                          "predicts %.2f GiB for this rank)",
                          rank, dev, what, (double)bytes / 1073741824.0,
                          (double)fr / 1073741824.0, (double)tot / 1073741824.0,
                          bf->allocated / 1073741824.0, predicted / 1073741824.0);
}

#define NCCL_TRY(call)                                                       \
    do {                                                                     \
        ncclResult_t n_ = (call);                                            \
        if (n_ != ncclSuccess) {                                             \
            rc = util_error_set(err, UTIL_EIO, NULL, NULL, "rank %d: %s: %s", \
                                rank, #call, ncclGetErrorString(n_));        \
            goto done;                                                       \
        }                                                                    \
    } while (0)

static double used_bytes(void)
{
    size_t fr = 0, tot = 0;

    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0.0;
    return (double)(tot - fr);
}

/* Wait for ev, polling so that a failure seen by the watchdog ends the
 * wait. */
static int wait_event(cudaEvent_t ev, watch *wd, int rank, util_error *err)
{
    cudaError_t e;

    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) {
        if (wd->failed)
            return util_error_set(err, UTIL_EIO, NULL, NULL, "%s", wd->why);
        usleep(100);
    }
    if (e != cudaSuccess)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "rank %d: %s", rank,
                              wd->failed ? wd->why : cudaGetErrorString(e));
    return UTIL_OK;
}

static double elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0.0f;

    cudaEventElapsedTime(&ms, a, b);
    return 1e-3 * (double)ms;
}

static double median_of(double *x, int n)
{
    prof_stats st;

    if (n < 1 || prof_stats_of(x, n, &st, NULL) != UTIL_OK)
        return 0.0;
    return st.median;
}

/* The message without its "rank N: " prefix (the bootstrap adds it). */
static const char *unprefixed(const char *msg)
{
    const char *p = msg;

    if (strncmp(p, "rank ", 5) != 0)
        return msg;
    p += 5;
    while (*p >= '0' && *p <= '9')
        p++;
    return p[0] == ':' && p[1] == ' ' ? p + 2 : msg;
}

int launch_rank_execute(const plan_doc *d, const launch_work *w,
                        const launch_rank_run *r, launch_boot *b,
                        launch_rank_result *out, util_error *err)
{
    const fmt_strategy *s = &d->s[w->strategy];
    const fmt_model *m = &d->model;
    int rank = r->rank, pr = r->plan_rank, rc = UTIL_OK, kind, k, i, l, c;
    int vpp = s->vpp > 1 ? s->vpp : 1, pp = s->pp, stage = -1, nops = 0, nl = 0;
    int have[FMT_KIND_NOOP + 1] = {0}, *members = NULL, wd_started = 0, zero;
    int nev = 0, it, total, npass_it = 0, nf = 0, nb = 0, dpi = 0;
    ncclUniqueId id;
    ncclComm_t comms[LAUNCH_NGROUPS + 1];
    ncclComm_t *comm = comms + 1; /* comms[0] is the world */
    ncclDataType_t half = m->bf16 ? ncclBfloat16 : ncclHalf, gtype;
    launch_sizes z;
    launch_coord co;
    launch_rop *ops = NULL;
    prof_gpu *g = NULL;
    prof_layer_work *kinds = NULL;
    const prof_layer_work **layers = NULL;
    int chunk_first[64], chunk_n[64], chunk_a[64], chunk_b[64];
    rank_bufs bf;
    cudaEvent_t *ev = NULL;
    cudaStream_t st = NULL;
    cost_memory mem;
    watch wd;
    double base, peak, prof_alloc = 0.0, gb = 2.0, *t_it = NULL, *t_f = NULL, *t_b = NULL;
    double *t_tp = NULL, *t_p2p = NULL, *t_dp = NULL, *t_opt = NULL;
    const void *blob;
    size_t len;
    long long gcount = 0, wcount = 0;

    memset(out, 0, sizeof *out);
    memset(&z, 0, sizeof z);
    memset(&bf, 0, sizeof bf);
    memset(&wd, 0, sizeof wd);
    memset(comms, 0, sizeof comms);
    out->rank = rank;
    out->plan_rank = pr;
    out->stage = -1;
    pthread_mutex_init(&wd.mu, NULL);
    blob = launch_boot_blob(b, &len);
    if (len != sizeof id) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "rank %d: the NCCL id from "
                            "rank 0 has %zu bytes, %zu expected", rank, len, sizeof id);
        goto done;
    }
    memcpy(&id, blob, sizeof id);
    CUDA_TRY(cudaSetDevice(r->local_rank));
    CUDA_TRY(cudaFree(0)); /* the context, before the baseline */
    base = peak = used_bytes();
    /* the watchdog, from the first collective on */
    wd.b = b;
    wd.run = r;
    wd.comms = comms;
    wd.ncomms = LAUNCH_NGROUPS + 1;
    wd.progress = now_s();
    if (pthread_create(&wd.th, NULL, watch_main, &wd) != 0) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "rank %d: no watchdog "
                            "thread", rank);
        goto done;
    }
    wd_started = 1;
    NCCL_TRY(ncclCommInitRank(&comms[0], r->world, id, rank));
    members = (int *)malloc((size_t)w->ranks * sizeof *members);
    if (!members) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    if (pr >= 0) {
        launch_coord_of(&d->cluster, s, pr, &co);
        stage = co.stage;
        dpi = co.dpi;
    }
    /* one split per kind, in the same order on every rank */
    for (kind = 0; kind < LAUNCH_NGROUPS; kind++) {
        int color = NCCL_SPLIT_NOCOLOR, key = 0, idx = 0, n;
        if (pr >= 0) {
            n = launch_group(s, kind, pr, members, w->ranks, &idx);
            for (key = 0; key < n && members[key] != pr; key++)
                ;
            color = idx;
            if (kind == LAUNCH_GROUP_EMBED && (pp < 2 || (stage != 0 && stage != pp - 1)))
                color = NCCL_SPLIT_NOCOLOR;
        }
        NCCL_TRY(ncclCommSplit(comms[0], color, key, &comm[kind], NULL));
    }
    wd.progress = now_s();
    if (pr < 0)
        goto done; /* idle: in the communicators, nothing to run */
    out->stage = stage;
    if ((rc = launch_sizes_of(d, s, pr, &z, err)) != UTIL_OK)
        goto done;
    cost_rank_stage_memory(m, &d->params, s, pr, &mem);
    out->mem_predicted = mem.total;
    zero = cost_strategy_zero(&d->params, s);
    /* the iteration exactly as launch_rank_program lists it (the order the
       CPU tests simulate for every rank together) */
    nops = launch_rank_program(d, s, pr, &ops, err);
    if (nops < 0) {
        rc = UTIL_EINVAL;
        goto done;
    }
    /* the stage's layers: synthetic kernels of the model's shapes, split
       into vpp chunks of equal layer count */
    if ((rc = prof_gpu_open(r->local_rank, m->bf16, 0, &g, err)) != UTIL_OK)
        goto done;
    st = (cudaStream_t)prof_gpu_stream(g);
    kinds = (prof_layer_work *)calloc(FMT_KIND_NOOP + 1, sizeof *kinds);
    layers = (const prof_layer_work **)calloc((size_t)(s->bounds[stage + 1] -
                                                       s->bounds[stage]) + 1,
                                              sizeof *layers);
    if (!kinds || !layers || vpp > 64) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    {
        int a = s->bounds[stage], n = s->bounds[stage + 1] - a;
        for (c = 0; c < vpp; c++) {
            chunk_a[c] = a + c * n / vpp;
            chunk_b[c] = a + (c + 1) * n / vpp;
            chunk_first[c] = nl;
            for (l = chunk_a[c]; l < chunk_b[c]; l++) {
                int kd = m->layers[l].kind;
                if (!prof_kind_measurable(kd))
                    continue;
                if (!have[kd]) {
                    prof_shape sh;
                    if ((rc = prof_shape_of(m, kd, s->tp, s->mbs, 2, &sh, err)) != UTIL_OK ||
                        (rc = prof_layer_work_of(&sh, &kinds[kd], err)) != UTIL_OK)
                        goto done;
                    have[kd] = 1;
                }
                layers[nl++] = &kinds[kd];
            }
            chunk_n[c] = nl - chunk_first[c];
        }
    }
    {
        double before = used_bytes();
        if (nl > 0 && (rc = prof_gpu_prepare(g, layers, nl, err)) != UTIL_OK) {
            if (rc == UTIL_ENOMEM || strstr(err->msg, "memory"))
                rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "rank %d: out of memory "
                                    "on GPU %d preparing the layers' buffers: %s", rank,
                                    r->local_rank, err->msg);
            goto done;
        }
        prof_alloc = used_bytes() - before;
    }
    /* model state and activations as the memory model sizes them */
    gb = z.params > 0.0 ? z.grad_bytes / z.params : 2.0;
    gtype = gb >= 4.0 ? ncclFloat : half;
    bf.weight_bytes = (size_t)z.weight_bytes;
    bf.grad_bytes = (size_t)z.grad_bytes;
    for (k = 0; k < pp * vpp - 1; k++)
        if ((size_t)z.act_bytes[k] > bf.act_cap)
            bf.act_cap = (size_t)z.act_bytes[k];
    bf.act_cap = (bf.act_cap + 255) / 256 * 256;
    bf.rest_bytes = (size_t)(mem.activations + mem.buffers);
    if (bf.rest_bytes < 4 * bf.act_cap)
        bf.rest_bytes = 4 * bf.act_cap;
    bf.block = bf.weight_bytes + bf.grad_bytes + bf.rest_bytes;
    if ((rc = alloc_dev((void **)&bf.weights, bf.block, &bf, rank, r->local_rank,
                        "the model state and activations", mem.total, err)) != UTIL_OK)
        goto done;
    bf.grads = bf.weights + bf.weight_bytes;
    bf.rest = bf.grads + bf.grad_bytes;
    for (i = 0; i < 2; i++) {
        bf.send[i] = bf.rest + (size_t)i * bf.act_cap;
        bf.recv[i] = bf.rest + (size_t)(2 + i) * bf.act_cap;
    }
    bf.tp_cap = ((size_t)z.tp_bytes + 256 * (size_t)s->tp) / (256 * (size_t)s->tp) *
                (256 * (size_t)s->tp);
    if ((rc = alloc_dev((void **)&bf.tp, 2 * bf.tp_cap, &bf, rank, r->local_rank,
                        "the TP collective buffer", mem.total, err)) != UTIL_OK)
        goto done;
    bf.nopt = (long long)(z.params / (zero >= 1 ? s->dp : 1));
    bf.host_gcap = ((size_t)z.host_grad_bytes + 255) / 256 * 256;
    bf.host_bytes = bf.host_gcap + (size_t)z.host_weight_bytes;
    if (bf.host_bytes > 0) { /* offload: the optimizer state in host memory */
        bf.opt = (float *)calloc((size_t)(3 * bf.nopt) + 64, sizeof(float));
        if (!bf.opt || cudaMallocHost((void **)&bf.host, bf.host_bytes) != cudaSuccess) {
            cudaGetLastError();
            bf.host = NULL;
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "rank %d: no %.2f GiB of host "
                                "memory for the offloaded optimizer", rank, (double)(bf.host_bytes
                                + 12 * (size_t)bf.nopt) / 1073741824.0);
            goto done;
        }
        bf.host_w = bf.host + bf.host_gcap;
    } else if ((rc = alloc_dev((void **)&bf.opt, (size_t)(3 * bf.nopt) * sizeof(float) + 256,
                               &bf, rank, r->local_rank, "the optimizer state", mem.total,
                               err)) != UTIL_OK)
        goto done;
    gcount = (long long)(bf.grad_bytes / (size_t)gb) / s->dp * s->dp;
    wcount = (long long)(bf.weight_bytes / 2) / s->dp * s->dp;
    /* events (one pair per operation) and samples */
    nev = 2 * nops + 2;
    ev = (cudaEvent_t *)calloc((size_t)nev, sizeof *ev);
    total = r->iterations;
    for (k = 0; k < nops; k++)
        npass_it += ops[k].kind == LAUNCH_ROP_PASS;
    t_it = (double *)calloc((size_t)total, sizeof(double));
    t_tp = (double *)calloc((size_t)total, sizeof(double));
    t_p2p = (double *)calloc((size_t)total, sizeof(double));
    t_dp = (double *)calloc((size_t)total, sizeof(double));
    t_opt = (double *)calloc((size_t)total, sizeof(double));
    t_f = (double *)calloc((size_t)total * (size_t)npass_it + 1, sizeof(double));
    t_b = (double *)calloc((size_t)total * (size_t)npass_it + 1, sizeof(double));
    if (!ev || !t_it || !t_tp || !t_p2p || !t_dp || !t_opt || !t_f || !t_b) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (k = 0; k < nev; k++)
        CUDA_TRY(cudaEventCreate(&ev[k]));
    peak = used_bytes();
    wd.progress = now_s();
    for (it = 0; it < r->warmup + r->iterations; it++) {
        int timed = it >= r->warmup, ti = it - r->warmup, cur = -1;
        double pass_s = 0.0;
        CUDA_TRY(cudaEventRecord(ev[0], st));
        for (k = 0; k < nops; k++) {
            const launch_rop *op = &ops[k];
            size_t dpsh = (size_t)dpi * (size_t)(gcount / s->dp);
            CUDA_TRY(cudaEventRecord(ev[1 + 2 * k], st));
            switch (op->kind) {
            case LAUNCH_ROP_PASS: {
                int ch = op->step.pass.chunk;
                if (chunk_n[ch] > 0 &&
                    (rc = prof_gpu_pass(g, layers + chunk_first[ch], chunk_n[ch],
                                        op->step.pass.bwd, err)) != UTIL_OK)
                    goto done;
                break;
            }
            case LAUNCH_ROP_TP: {
                /* Megatron's f and g operators (Shoeybi et al. 2019, fig. 3);
                   with sequence parallelism a reduce-scatter and an all-
                   gather (Korthikanti et al. 2022, sec. 4.2.2) */
                size_t cnt = (size_t)(op->bytes / 2.0);
                cnt = (cnt + (size_t)s->tp - 1) / (size_t)s->tp * (size_t)s->tp;
                if (cnt * 2 > bf.tp_cap)
                    cnt = bf.tp_cap / 2;
                if (s->sp) {
                    NCCL_TRY(ncclReduceScatter(bf.tp, bf.tp + bf.tp_cap, cnt / s->tp, half,
                                               ncclSum, comm[LAUNCH_GROUP_TP], st));
                    NCCL_TRY(ncclAllGather(bf.tp + bf.tp_cap, bf.tp, cnt / s->tp, half,
                                           comm[LAUNCH_GROUP_TP], st));
                } else {
                    NCCL_TRY(ncclAllReduce(bf.tp, bf.tp, cnt, half, ncclSum,
                                           comm[LAUNCH_GROUP_TP], st));
                }
                break;
            }
            case LAUNCH_ROP_P2P: {
                int ns = 0, nr = 0;
                NCCL_TRY(ncclGroupStart());
                for (i = 0; i < op->step.np; i++) {
                    const launch_p2p *p = &op->step.p2p[i];
                    size_t n = (size_t)p->bytes;
                    if (n > bf.act_cap)
                        n = bf.act_cap;
                    if (p->send)
                        NCCL_TRY(ncclSend(bf.send[ns++ & 1], n, ncclInt8, p->peer,
                                          comm[LAUNCH_GROUP_PP], st));
                    else
                        NCCL_TRY(ncclRecv(bf.recv[nr++ & 1], n, ncclInt8, p->peer,
                                          comm[LAUNCH_GROUP_PP], st));
                }
                NCCL_TRY(ncclGroupEnd());
                break;
            }
            case LAUNCH_ROP_EMBED:
                NCCL_TRY(ncclAllReduce(bf.grads, bf.grads, (size_t)(op->bytes / gb), gtype,
                                       ncclSum, comm[LAUNCH_GROUP_EMBED], st));
                break;
            case LAUNCH_ROP_DP_ALLREDUCE:
                NCCL_TRY(ncclAllReduce(bf.grads, bf.grads, (size_t)gcount, gtype, ncclSum,
                                       comm[LAUNCH_GROUP_DP], st));
                break;
            case LAUNCH_ROP_DP_RS:
                NCCL_TRY(ncclReduceScatter(bf.grads, bf.grads + dpsh * (size_t)gb,
                                           (size_t)(gcount / s->dp), gtype, ncclSum,
                                           comm[LAUNCH_GROUP_DP], st));
                break;
            case LAUNCH_ROP_OPT:
                if (bf.nopt > 0) {
                    size_t sh = zero >= 1 ? dpsh : 0;
                    long long n = bf.nopt;
                    if (n > gcount / (zero >= 1 ? s->dp : 1))
                        n = gcount / (zero >= 1 ? s->dp : 1);
                    if (bf.host) { /* offload: on the CPU, after the copy out */
                        launch_adam ad;
                        int nd = 1;
                        if (n > (long long)(z.host_grad_bytes / gb))
                            n = (long long)(z.host_grad_bytes / gb);
                        launch_adam_init(&ad);
                        CUDA_TRY(cudaStreamSynchronize(st));
                        CUDA_TRY(cudaGetDeviceCount(&nd));
                        launch_host_adam(&ad, bf.opt, bf.opt + bf.nopt, bf.opt + 2 * bf.nopt,
                                         bf.host, gb >= 4.0 ? LAUNCH_ELEM_FP32 : m->bf16
                                         ? LAUNCH_ELEM_BF16 : LAUNCH_ELEM_FP16, bf.host_w,
                                         m->bf16, n, launch_host_threads(nd));
                        break;
                    }
                    adam_kernel<<<1024, 256, 0, st>>>(bf.opt, bf.opt + bf.nopt,
                                                      bf.opt + 2 * bf.nopt,
                                                      bf.grads + sh * (size_t)gb, gb >= 4.0,
                                                      bf.weights + sh * 2, m->bf16, n, 1e-4f,
                                                      0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
                    CUDA_TRY(cudaGetLastError());
                }
                break;
            case LAUNCH_ROP_HOST_D2H:
            case LAUNCH_ROP_HOST_H2D: {
                /* optimizer offload: the shard's gradients to the host,
                   its weights back, over the GPU's host link */
                size_t n = (size_t)op->bytes, off, have;
                int out = op->kind == LAUNCH_ROP_HOST_D2H;
                off = (zero >= 1 ? dpsh : 0) * (out ? (size_t)gb : 2);
                have = out ? bf.grad_bytes : bf.weight_bytes;
                if (n > (out ? bf.host_gcap : bf.host_bytes - bf.host_gcap))
                    n = out ? bf.host_gcap : bf.host_bytes - bf.host_gcap;
                if (off + n > have)
                    n = have > off ? have - off : 0;
                if (out)
                    CUDA_TRY(cudaMemcpyAsync(bf.host, bf.grads + off, n,
                                             cudaMemcpyDeviceToHost, st));
                else
                    CUDA_TRY(cudaMemcpyAsync(bf.weights + off, bf.host_w, n,
                                             cudaMemcpyHostToDevice, st));
                break;
            }
            case LAUNCH_ROP_DP_AG:
                NCCL_TRY(ncclAllGather(bf.weights + (size_t)dpi * (size_t)(wcount / s->dp) * 2,
                                       bf.weights, (size_t)(wcount / s->dp), half,
                                       comm[LAUNCH_GROUP_DP], st));
                break;
            default:
                break;
            }
            CUDA_TRY(cudaEventRecord(ev[2 + 2 * k], st));
        }
        CUDA_TRY(cudaEventRecord(ev[nev - 1], st));
        if ((rc = wait_event(ev[nev - 1], &wd, rank, err)) != UTIL_OK)
            goto done;
        wd.progress = now_s();
        {
            double u = used_bytes();
            if (u > peak)
                peak = u;
        }
        if (!timed)
            continue;
        t_it[ti] = elapsed(ev[0], ev[nev - 1]);
        /* a pass's time includes the TP collectives that follow it */
        for (k = 0; k <= nops; k++) {
            double dur = k < nops ? elapsed(ev[1 + 2 * k], ev[2 + 2 * k]) : 0.0;
            if (k < nops && ops[k].kind == LAUNCH_ROP_TP) {
                t_tp[ti] += dur;
                pass_s += dur;
                continue;
            }
            if (cur >= 0) {
                if (ops[cur].step.pass.bwd)
                    t_b[nb++] = pass_s;
                else
                    t_f[nf++] = pass_s;
                cur = -1;
            }
            if (k == nops)
                break;
            switch (ops[k].kind) {
            case LAUNCH_ROP_PASS:
                cur = k;
                pass_s = dur;
                break;
            case LAUNCH_ROP_P2P:
                t_p2p[ti] += dur;
                break;
            case LAUNCH_ROP_OPT:
            case LAUNCH_ROP_HOST_D2H: /* part of the offloaded step */
            case LAUNCH_ROP_HOST_H2D:
                t_opt[ti] += dur;
                break;
            default:
                t_dp[ti] += dur;
            }
        }
    }
    out->passes = npass_it;
    out->iter_s = median_of(t_it, total);
    out->iter_min_s = out->iter_max_s = t_it[0];
    for (k = 0; k < total; k++) {
        if (t_it[k] < out->iter_min_s)
            out->iter_min_s = t_it[k];
        if (t_it[k] > out->iter_max_s)
            out->iter_max_s = t_it[k];
    }
    out->fwd_s = median_of(t_f, nf);
    out->bwd_s = median_of(t_b, nb);
    out->tp_s = median_of(t_tp, total);
    out->p2p_s = median_of(t_p2p, total);
    out->dp_s = median_of(t_dp, total);
    out->opt_s = median_of(t_opt, total);
    out->mem_used = peak;
    out->mem_base = base;
    out->mem_alloc = bf.allocated + prof_alloc;
    {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, r->local_rank) == cudaSuccess)
            snprintf(out->gpu, sizeof out->gpu, "%.63s", prop.name);
    }
done:
    if (wd_started) {
        wd.stop = 1;
        pthread_join(wd.th, NULL);
    }
    if (rc != UTIL_OK && wd.failed) {
        /* the cause is elsewhere (or was told already): say so */
        char mine[512];
        snprintf(mine, sizeof mine, "%s", wd.why);
        util_error_set(err, UTIL_EIO, NULL, NULL, "%s", mine);
    } else if (rc != UTIL_OK) {
        launch_boot_abort(b, unprefixed(err->msg));
    }
    for (k = 0; ev && k < nev; k++)
        if (ev[k])
            cudaEventDestroy(ev[k]);
    free(ev);
    pthread_mutex_lock(&wd.mu); /* the watchdog has ended: no race */
    pthread_mutex_unlock(&wd.mu);
    for (k = LAUNCH_NGROUPS; k >= 0; k--)
        if (comms[k]) {
            if (wd.failed || rc != UTIL_OK)
                ncclCommAbort(comms[k]);
            else
                ncclCommDestroy(comms[k]);
        }
    cudaFree(bf.weights);
    cudaFree(bf.tp);
    if (bf.host_bytes > 0)
        free(bf.opt);
    else
        cudaFree(bf.opt);
    if (bf.host)
        cudaFreeHost(bf.host);
    prof_gpu_close(g);
    free(kinds);
    free(layers);
    free(ops);
    free(members);
    free(t_it);
    free(t_tp);
    free(t_p2p);
    free(t_dp);
    free(t_opt);
    free(t_f);
    free(t_b);
    launch_sizes_free(&z);
    pthread_mutex_destroy(&wd.mu);
    return rc;
}

#endif /* HETPLAN_HAVE_NCCL */
