/* launcher/exec.cu: the executed mode of hetplan-launch: the plan's
 * pipeline run for real on one GPU per stage.  One host thread per stage
 * (pthreads) queues the ops of launch_exec_plan (launcher/execplan.c) on
 * its GPU: the synthetic passes (profiler/gpu_run.cu), activations and
 * gradients copied to the neighbouring GPU (cudaMemcpyPeerAsync, or
 * through pinned host memory), dependencies as CUDA events
 * (cudaStreamWaitEvent), modelled communication as GPU delays.  Timing:
 * CUDA events.  C-style code; nothing here prints. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

extern "C" {
#include "launch.h"
}

#define CUDA_TRY(call)                                                       \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "%s: %s",   \
                                #call, cudaGetErrorString(e_));              \
            goto done;                                                       \
        }                                                                    \
    } while (0)

int launch_gpu_topology(int *n, int *peer, int cap, util_error *err)
{
    cudaError_t e;
    int a, b, can;

    *n = 0;
    e = cudaGetDeviceCount(n);
    if (e != cudaSuccess || *n < 1) {
        *n = 0;
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU: %s (is an NVIDIA GPU with its driver "
                              "present?)",
                              e != cudaSuccess ? cudaGetErrorString(e)
                                               : "the driver reports no device");
    }
    if (!peer)
        return UTIL_OK;
    for (a = 0; a < *n; a++)
        for (b = 0; b < *n; b++) {
            if (a * *n + b >= cap)
                continue;
            can = 0;
            if (a != b && cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess)
                can = 0;
            peer[a * *n + b] = can;
        }
    cudaGetLastError();
    return UTIL_OK;
}

/* ---- run-time state -------------------------------------------------- */

typedef struct stage_rt {
    int j, dev;
    prof_gpu *g;
    cudaStream_t cs;            /* compute: g's stream */
    cudaStream_t send[2];       /* 0: activations to j + 1, 1: gradients to j - 1 */
    cudaStream_t recv[2];       /* host route: 0 activations from j - 1, 1 gradients from j + 1 */
    cudaEvent_t ready[2];       /* compute reached a send (reused) */
    void *src;                  /* what this stage sends (contents irrelevant) */
    char *in[2];                /* 0: activation slots, 1: gradient slots (gas each) */
    double in_bytes[2];         /* slot size */
    prof_layer_work *kinds;     /* FMT_KIND_NOOP + 1 entries */
    const prof_layer_work **layers;
    int nlayers;
    cudaEvent_t *tpass;         /* iterations * npass * 3 */
    cudaEvent_t *topt;          /* iterations * 2 */
    util_error err;
    int rc;
    pthread_t thread;
    int started;
} stage_rt;

typedef struct exec_rt {
    const launch_exec *x;
    const launch_work *w;
    int warmup, iterations, npass;
    stage_rt *st;
    cudaEvent_t *arr;           /* nxfer * 2 (iteration parity) */
    cudaEvent_t *mid;           /* nxfer * 2: host route, device -> host done */
    void **host;                /* nxfer: pinned staging (host route) */
    cudaEvent_t *mark;          /* pp * NMARKS * 2 */
    cudaEvent_t *iter_ev;       /* iterations + 1, on stage 0's GPU */
    long long *xfer_gen;        /* nxfer * 2: iteration whose record is queued */
    long long *mark_gen;        /* pp * NMARKS * 2 */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int abort;
} exec_rt;

static void publish(exec_rt *r, long long *slot, long long it)
{
    pthread_mutex_lock(&r->lock);
    *slot = it;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/* Wait until the other thread queued iteration it's record of an event
 * (a CUDA wait on an event not yet recorded would not wait at all). */
static int await(exec_rt *r, const long long *slot, long long it)
{
    int ok;

    pthread_mutex_lock(&r->lock);
    while (*slot != it && !r->abort)
        pthread_cond_wait(&r->cond, &r->lock);
    ok = !r->abort;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static void fail(exec_rt *r)
{
    pthread_mutex_lock(&r->lock);
    r->abort = 1;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static int do_send(exec_rt *r, stage_rt *s, const launch_xfer *xf, int xi, int par,
                   long long it, util_error *err)
{
    stage_rt *d = &r->st[xf->dst_stage];
    int dir = xf->grad, rc = UTIL_OK;
    size_t bytes = (size_t)xf->bytes;
    char *dst = d->in[dir] + (size_t)xf->micro * bytes;
    cudaEvent_t arr = r->arr[xi * 2 + par];

    CUDA_TRY(cudaEventRecord(s->ready[dir], s->cs));
    CUDA_TRY(cudaStreamWaitEvent(s->send[dir], s->ready[dir], 0));
    if (bytes == 0) {
        CUDA_TRY(cudaEventRecord(arr, s->send[dir]));
    } else if (xf->route == LAUNCH_ROUTE_PEER) {
        CUDA_TRY(cudaMemcpyPeerAsync(dst, d->dev, s->src, s->dev, bytes, s->send[dir]));
        CUDA_TRY(cudaEventRecord(arr, s->send[dir]));
    } else {
        cudaEvent_t mid = r->mid[xi * 2 + par];
        CUDA_TRY(cudaMemcpyAsync(r->host[xi], s->src, bytes, cudaMemcpyDeviceToHost,
                                 s->send[dir]));
        CUDA_TRY(cudaEventRecord(mid, s->send[dir]));
        CUDA_TRY(cudaSetDevice(d->dev));
        CUDA_TRY(cudaStreamWaitEvent(d->recv[dir], mid, 0));
        CUDA_TRY(cudaMemcpyAsync(dst, r->host[xi], bytes, cudaMemcpyHostToDevice,
                                 d->recv[dir]));
        CUDA_TRY(cudaEventRecord(arr, d->recv[dir]));
        CUDA_TRY(cudaSetDevice(s->dev));
    }
    publish(r, &r->xfer_gen[xi * 2 + par], it);
done:
    return rc;
}

/* One stage's thread: warm-up and timed iterations of its op list. */
static int run_ops(exec_rt *r, stage_rt *s, util_error *err)
{
    const launch_exec_stage *es = &r->x->st[s->j];
    long long it, total = r->warmup + r->iterations;
    int k, rc = UTIL_OK;

    CUDA_TRY(cudaSetDevice(s->dev));
    for (it = 0; it < total; it++) {
        int timed = it >= r->warmup, par = (int)(it & 1), p = 0;
        int ti = (int)(it - r->warmup);
        if (timed && s->j == 0 && ti == 0)
            CUDA_TRY(cudaEventRecord(r->iter_ev[0], s->cs));
        for (k = 0; k < es->nops; k++) {
            const launch_op *o = &es->ops[k];
            cudaEvent_t *tp = timed ? &s->tpass[((size_t)ti * (size_t)r->npass +
                                                 (size_t)p) * 3] : NULL;
            size_t at;
            switch (o->kind) {
            case LAUNCH_OP_RECV:
                if (!await(r, &r->xfer_gen[o->xfer * 2 + par], it))
                    goto done; /* another stage failed */
                CUDA_TRY(cudaStreamWaitEvent(s->cs, r->arr[o->xfer * 2 + par], 0));
                break;
            case LAUNCH_OP_FWD:
            case LAUNCH_OP_BWD:
                if (tp)
                    CUDA_TRY(cudaEventRecord(tp[0], s->cs));
                if ((rc = prof_gpu_pass(s->g, s->layers, s->nlayers,
                                        o->kind == LAUNCH_OP_BWD, err)) != UTIL_OK)
                    goto done;
                if (tp)
                    CUDA_TRY(cudaEventRecord(tp[1], s->cs));
                if ((rc = prof_gpu_delay(s->g, o->kind == LAUNCH_OP_BWD
                                                   ? es->bwd_extra_s
                                                   : es->fwd_extra_s,
                                         err)) != UTIL_OK)
                    goto done;
                if (tp)
                    CUDA_TRY(cudaEventRecord(tp[2], s->cs));
                p++;
                break;
            case LAUNCH_OP_SEND:
                if ((rc = do_send(r, s, &r->x->xfers[o->xfer], o->xfer, par, it,
                                  err)) != UTIL_OK)
                    goto done;
                break;
            case LAUNCH_OP_MARK:
                at = ((size_t)s->j * LAUNCH_NMARKS + (size_t)o->mark) * 2 + (size_t)par;
                CUDA_TRY(cudaEventRecord(r->mark[at], s->cs));
                publish(r, &r->mark_gen[at], it);
                break;
            case LAUNCH_OP_WAIT_MARK:
                at = ((size_t)o->stage * LAUNCH_NMARKS + (size_t)o->mark) * 2 + (size_t)par;
                if (!await(r, &r->mark_gen[at], it))
                    goto done;
                CUDA_TRY(cudaStreamWaitEvent(s->cs, r->mark[at], 0));
                break;
            case LAUNCH_OP_DELAY:
                if ((rc = prof_gpu_delay(s->g, o->delay_s, err)) != UTIL_OK)
                    goto done;
                break;
            case LAUNCH_OP_OPTIMIZER:
                if (timed)
                    CUDA_TRY(cudaEventRecord(s->topt[ti * 2], s->cs));
                if ((rc = prof_gpu_adam_step(s->g, err)) != UTIL_OK)
                    goto done;
                if (timed)
                    CUDA_TRY(cudaEventRecord(s->topt[ti * 2 + 1], s->cs));
                break;
            default:
                rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                    "stage %d: unknown op %d", s->j, o->kind);
                goto done;
            }
        }
        if (timed && s->j == 0)
            CUDA_TRY(cudaEventRecord(r->iter_ev[ti + 1], s->cs));
    }
    CUDA_TRY(cudaStreamSynchronize(s->cs));
done:
    return rc;
}

typedef struct thread_arg {
    exec_rt *r;
    stage_rt *s;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = (thread_arg *)p;

    a->s->rc = run_ops(a->r, a->s, &a->s->err);
    if (a->s->rc != UTIL_OK)
        fail(a->r);
    return NULL;
}

/* ---- set-up and tear-down -------------------------------------------- */

static int stage_setup(exec_rt *r, const plan_doc *d, stage_rt *s, int bf16,
                       util_error *err)
{
    const launch_work *w = r->w;
    const launch_stage *ls = &w->stages[s->j];
    int have[FMT_KIND_NOOP + 1] = {0};
    int l, k, rc = UTIL_OK, pp = w->pp;
    size_t n, src_bytes;
    double params = ls->params / (double)w->tp;

    if ((rc = prof_gpu_open(s->dev, bf16, 0, &s->g, err)) != UTIL_OK)
        return rc;
    s->cs = (cudaStream_t)prof_gpu_stream(s->g);
    CUDA_TRY(cudaSetDevice(s->dev));
    for (k = 0; k < 2; k++) {
        CUDA_TRY(cudaStreamCreateWithFlags(&s->send[k], cudaStreamNonBlocking));
        CUDA_TRY(cudaStreamCreateWithFlags(&s->recv[k], cudaStreamNonBlocking));
        CUDA_TRY(cudaEventCreateWithFlags(&s->ready[k], cudaEventDisableTiming));
    }
    /* the layers */
    s->kinds = (prof_layer_work *)calloc(FMT_KIND_NOOP + 1, sizeof *s->kinds);
    s->layers = (const prof_layer_work **)calloc((size_t)(ls->last - ls->first) + 1,
                                                 sizeof *s->layers);
    if (!s->kinds || !s->layers) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (l = ls->first; l < ls->last; l++) {
        int kind = d->model.layers[l].kind;
        if (!prof_kind_measurable(kind))
            continue;
        if (!have[kind]) {
            prof_shape sh;
            if ((rc = prof_shape_of(&d->model, kind, w->tp, w->mbs, 2, &sh, err)) != UTIL_OK ||
                (rc = prof_layer_work_of(&sh, &s->kinds[kind], err)) != UTIL_OK)
                goto done;
            have[kind] = 1;
        }
        s->layers[s->nlayers++] = &s->kinds[kind];
    }
    if ((rc = prof_gpu_prepare(s->g, s->layers, s->nlayers, err)) != UTIL_OK)
        goto done;
    if (params >= 1.0 && (rc = prof_gpu_adam_prepare(s->g, (long long)params, err)) != UTIL_OK)
        goto done;
    /* transfer buffers: gas slots per incoming direction */
    s->in_bytes[0] = s->j > 0 ? w->stages[s->j - 1].send_bytes : 0.0;
    s->in_bytes[1] = s->j < pp - 1 ? ls->send_bytes : 0.0;
    for (k = 0; k < 2; k++) {
        n = (size_t)s->in_bytes[k] * (size_t)w->gas;
        if (n > 0 && cudaMalloc((void **)&s->in[k], n) != cudaSuccess) {
            cudaGetLastError();
            s->in[k] = NULL;
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                                "out of GPU memory on GPU %d for %d %s of %.1f MiB",
                                s->dev, w->gas, k ? "gradients" : "activations",
                                s->in_bytes[k] / 1048576.0);
            goto done;
        }
    }
    src_bytes = (size_t)(ls->send_bytes > s->in_bytes[0] ? ls->send_bytes : s->in_bytes[0]);
    if (src_bytes > 0) {
        CUDA_TRY(cudaMalloc(&s->src, src_bytes));
        CUDA_TRY(cudaMemset(s->src, 0, src_bytes));
    }
    /* timing events */
    n = (size_t)r->iterations * (size_t)r->npass * 3;
    s->tpass = (cudaEvent_t *)calloc(n, sizeof *s->tpass);
    s->topt = (cudaEvent_t *)calloc((size_t)r->iterations * 2, sizeof *s->topt);
    if (!s->tpass || !s->topt) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        CUDA_TRY(cudaEventCreate(&s->tpass[i]));
    for (k = 0; k < r->iterations * 2; k++)
        CUDA_TRY(cudaEventCreate(&s->topt[k]));
    CUDA_TRY(cudaDeviceSynchronize());
done:
    return rc;
}

static void stage_free(exec_rt *r, stage_rt *s)
{
    size_t i, n = (size_t)r->iterations * (size_t)r->npass * 3;
    int k;

    if (s->dev < 0)
        return;
    cudaSetDevice(s->dev);
    cudaDeviceSynchronize();
    for (i = 0; s->tpass && i < n; i++)
        if (s->tpass[i])
            cudaEventDestroy(s->tpass[i]);
    for (k = 0; s->topt && k < r->iterations * 2; k++)
        if (s->topt[k])
            cudaEventDestroy(s->topt[k]);
    free(s->tpass);
    free(s->topt);
    for (k = 0; k < 2; k++) {
        if (s->send[k])
            cudaStreamDestroy(s->send[k]);
        if (s->recv[k])
            cudaStreamDestroy(s->recv[k]);
        if (s->ready[k])
            cudaEventDestroy(s->ready[k]);
        cudaFree(s->in[k]);
    }
    cudaFree(s->src);
    free(s->kinds);
    free(s->layers);
    prof_gpu_close(s->g);
}

static float elapsed_ms(cudaEvent_t a, cudaEvent_t b, int *bad)
{
    float ms = 0.0f;

    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
        *bad = 1;
        ms = 0.0f;
    }
    return ms;
}

int launch_gpu_execute(const plan_doc *d, const launch_work *w,
                       const launch_exec *x, int bf16, int warmup,
                       int iterations, launch_exec_samples *out,
                       util_error *err)
{
    exec_rt r;
    thread_arg *args = NULL;
    int j, i, p, k, rc = UTIL_OK, pp = x->pp, bad = 0;
    size_t nm = (size_t)pp * LAUNCH_NMARKS * 2;

    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    r.x = x;
    r.w = w;
    r.warmup = warmup;
    r.iterations = iterations;
    r.npass = 2 * x->gas;
    if (iterations < 1 || warmup < 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected iterations >= 1 and warmup >= 0");
    if (launch_exec_samples_alloc(out, pp, iterations, r.npass) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    r.st = (stage_rt *)calloc((size_t)pp, sizeof *r.st);
    args = (thread_arg *)calloc((size_t)pp, sizeof *args);
    r.arr = (cudaEvent_t *)calloc((size_t)x->nxfer * 2 + 1, sizeof *r.arr);
    r.mid = (cudaEvent_t *)calloc((size_t)x->nxfer * 2 + 1, sizeof *r.mid);
    r.host = (void **)calloc((size_t)x->nxfer + 1, sizeof *r.host);
    r.mark = (cudaEvent_t *)calloc(nm, sizeof *r.mark);
    r.iter_ev = (cudaEvent_t *)calloc((size_t)iterations + 1, sizeof *r.iter_ev);
    r.xfer_gen = (long long *)malloc(((size_t)x->nxfer * 2 + 1) * sizeof *r.xfer_gen);
    r.mark_gen = (long long *)malloc(nm * sizeof *r.mark_gen);
    if (!r.st || !args || !r.arr || !r.mid || !r.host || !r.mark || !r.iter_ev ||
        !r.xfer_gen || !r.mark_gen) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < x->nxfer * 2; i++)
        r.xfer_gen[i] = -1;
    for (i = 0; i < (int)nm; i++)
        r.mark_gen[i] = -1;
    for (j = 0; j < pp; j++)
        r.st[j].dev = -1;
    for (j = 0; j < pp; j++) {
        r.st[j].j = j;
        r.st[j].dev = x->st[j].gpu;
        if ((rc = stage_setup(&r, d, &r.st[j], bf16, err)) != UTIL_OK)
            goto done;
        for (p = 0; p < r.npass; p++) { /* pass p of the stage: fwd or bwd */
            int q = 0;
            for (k = 0; k < x->st[j].nops; k++)
                if (x->st[j].ops[k].kind == LAUNCH_OP_FWD ||
                    x->st[j].ops[k].kind == LAUNCH_OP_BWD) {
                    if (q == p)
                        out->bwd[j * r.npass + p] = x->st[j].ops[k].kind == LAUNCH_OP_BWD;
                    q++;
                }
        }
    }
    /* events of the transfers and markers, on the device that records them */
    for (i = 0; i < x->nxfer; i++) {
        const launch_xfer *xf = &x->xfers[i];
        int rec = xf->route == LAUNCH_ROUTE_PEER ? xf->src_gpu : xf->dst_gpu;
        if (xf->route == LAUNCH_ROUTE_PEER && xf->bytes > 0) {
            cudaError_t e;
            CUDA_TRY(cudaSetDevice(xf->src_gpu));
            e = cudaDeviceEnablePeerAccess(xf->dst_gpu, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
                rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                    "peer access from GPU %d to GPU %d: %s",
                                    xf->src_gpu, xf->dst_gpu, cudaGetErrorString(e));
                goto done;
            }
            cudaGetLastError();
        }
        if (xf->route == LAUNCH_ROUTE_HOST && xf->bytes > 0)
            CUDA_TRY(cudaHostAlloc(&r.host[i], (size_t)xf->bytes, cudaHostAllocPortable));
        for (k = 0; k < 2; k++) {
            CUDA_TRY(cudaSetDevice(rec));
            CUDA_TRY(cudaEventCreateWithFlags(&r.arr[i * 2 + k], cudaEventDisableTiming));
            CUDA_TRY(cudaSetDevice(xf->src_gpu));
            CUDA_TRY(cudaEventCreateWithFlags(&r.mid[i * 2 + k], cudaEventDisableTiming));
        }
    }
    for (j = 0; j < pp; j++) {
        CUDA_TRY(cudaSetDevice(x->st[j].gpu));
        for (k = 0; k < LAUNCH_NMARKS * 2; k++)
            CUDA_TRY(cudaEventCreateWithFlags(&r.mark[(size_t)j * LAUNCH_NMARKS * 2 +
                                                      (size_t)k],
                                              cudaEventDisableTiming));
    }
    CUDA_TRY(cudaSetDevice(x->st[0].gpu));
    for (i = 0; i <= iterations; i++)
        CUDA_TRY(cudaEventCreate(&r.iter_ev[i]));

    /* run: one thread per stage */
    for (j = 0; j < pp; j++) {
        args[j].r = &r;
        args[j].s = &r.st[j];
        if (pthread_create(&r.st[j].thread, NULL, thread_main, &args[j]) != 0) {
            fail(&r);
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "cannot start the thread of stage %d", j);
            break;
        }
        r.st[j].started = 1;
    }
    for (j = 0; j < pp; j++)
        if (r.st[j].started)
            pthread_join(r.st[j].thread, NULL);
    if (rc != UTIL_OK)
        goto done;
    for (j = 0; j < pp; j++)
        if (r.st[j].rc != UTIL_OK) {
            if (err)
                *err = r.st[j].err;
            rc = r.st[j].rc;
            goto done;
        }
    if (r.abort) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "a stage thread stopped without an error");
        goto done;
    }

    /* read the clocks */
    for (j = 0; j < pp; j++) {
        CUDA_TRY(cudaSetDevice(x->st[j].gpu));
        CUDA_TRY(cudaDeviceSynchronize());
    }
    CUDA_TRY(cudaSetDevice(x->st[0].gpu));
    for (i = 0; i < iterations; i++)
        out->iter_s[i] = 1e-3 * elapsed_ms(r.iter_ev[i], r.iter_ev[i + 1], &bad);
    for (j = 0; j < pp; j++) {
        stage_rt *s = &r.st[j];
        CUDA_TRY(cudaSetDevice(s->dev));
        for (i = 0; i < iterations; i++) {
            for (p = 0; p < r.npass; p++) {
                cudaEvent_t *tp = &s->tpass[((size_t)i * (size_t)r.npass + (size_t)p) * 3];
                size_t at = ((size_t)j * (size_t)iterations + (size_t)i) *
                                (size_t)r.npass + (size_t)p;
                out->kern_s[at] = 1e-3 * elapsed_ms(tp[0], tp[1], &bad);
                out->full_s[at] = 1e-3 * elapsed_ms(tp[0], tp[2], &bad);
            }
            out->opt_s[(size_t)j * (size_t)iterations + (size_t)i] =
                1e-3 * elapsed_ms(s->topt[i * 2], s->topt[i * 2 + 1], &bad);
        }
    }
    if (bad)
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "cudaEventElapsedTime failed on a timing event");
done:
    for (j = 0; r.st && j < pp; j++)
        stage_free(&r, &r.st[j]);
    for (i = 0; r.arr && r.mid && i < x->nxfer * 2; i++) {
        if (r.arr[i])
            cudaEventDestroy(r.arr[i]);
        if (r.mid[i])
            cudaEventDestroy(r.mid[i]);
    }
    for (i = 0; r.host && i < x->nxfer; i++)
        if (r.host[i])
            cudaFreeHost(r.host[i]);
    for (i = 0; r.mark && i < (int)nm; i++)
        if (r.mark[i])
            cudaEventDestroy(r.mark[i]);
    for (i = 0; r.iter_ev && i <= iterations; i++)
        if (r.iter_ev[i])
            cudaEventDestroy(r.iter_ev[i]);
    free(r.st);
    free(args);
    free(r.arr);
    free(r.mid);
    free(r.host);
    free(r.mark);
    free(r.iter_ev);
    free(r.xfer_gen);
    free(r.mark_gen);
    pthread_mutex_destroy(&r.lock);
    pthread_cond_destroy(&r.cond);
    if (rc != UTIL_OK)
        launch_exec_samples_free(out);
    return rc;
}
