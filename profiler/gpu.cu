/* profiler/gpu.cu: the GPU side of hetplan-profile and hetplan-launch:
 * the small kernels of a transformer layer written in CUDA C, GEMMs
 * through cuBLAS (fp16/bf16 inputs, fp32 accumulation), kernel times from
 * the CUPTI activity API (GPU start and end of every kernel, matched to
 * our sub-kernels by external correlation ids), copy bandwidths and GEMM
 * throughput.  CUPTI is loaded at run time (profiler/cupti_load.c): only
 * its header is used here, never its library at link time.  C-style
 * code; the interface is prof_gpu_* in prof.h.  Nothing here prints. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cupti.h>

extern "C" {
#include "prof.h"
}

#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 kernel_record;
#else
typedef CUpti_ActivityKernel9 kernel_record;
#endif

#define THREADS 256

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

/* Load libcupti once per process; UTIL_ENOTFOUND when it is missing. */
static int cupti_load(util_error *err)
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

static int cupti_start(util_error *err)
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
    if ((rc = cupti_load(err)) != UTIL_OK)
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

/* Deliver every pending record, then forget them all. */
static int cupti_reset(util_error *err)
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

static int cmp_ext(const void *a, const void *b)
{
    uint32_t x = ((const extmap *)a)->corr, y = ((const extmap *)b)->corr;

    return (x > y) - (x < y);
}

/* Fill out (already allocated, repeats * nk samples) from the collected
 * records: sample s gets the earliest start, latest end and summed
 * duration of the GPU kernels launched under external id s + 1.  names
 * labels sample s % nk in messages. */
static int cupti_assemble(prof_samples *out, const char *(*name)(void *, int),
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

/* ---- the device ------------------------------------------------------ */

struct prof_gpu {
    int dev;
    int bf16;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *x, *y, *z;        /* element buffers (fp16 or bf16) */
    size_t capx, capy, capz;/* elements */
    float *f, *p;           /* fp32 scratch (big, small) */
    size_t capf, capp;
    int *ids;               /* token ids / labels */
    size_t capids;
    int id_range;           /* ids are drawn from [0, id_range) */
    unsigned seed;
    int cupti;              /* 1: CUPTI collection was asked for */
    float *adam_w, *adam_m, *adam_v; /* prof_gpu_adam_prepare's state */
    void *adam_g, *adam_w16;
    long long adam_n;
};

#define CUDA_TRY(call)                                                       \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "%s: %s",   \
                                #call, cudaGetErrorString(e_));              \
            goto done;                                                       \
        }                                                                    \
    } while (0)

int prof_gpu_count(int *n, util_error *err)
{
    cudaError_t e;

    *n = 0;
    e = cudaGetDeviceCount(n);
    if (e != cudaSuccess) {
        *n = 0;
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU: cudaGetDeviceCount failed: %s "
                              "(is an NVIDIA GPU with its driver present?)",
                              cudaGetErrorString(e));
    }
    if (*n < 1)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU: the driver reports no device");
    return UTIL_OK;
}

void prof_gpu_close(prof_gpu *g)
{
    if (!g)
        return;
    cudaSetDevice(g->dev);
    if (g->stream)
        cudaStreamSynchronize(g->stream);
    cudaFree(g->x);
    cudaFree(g->y);
    cudaFree(g->z);
    cudaFree(g->f);
    cudaFree(g->p);
    cudaFree(g->ids);
    if (g->blas)
        cublasDestroy(g->blas);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    if (cupti.ready)
        cu.flush_all(1);
    cudaFree(g->adam_w);
    cudaFree(g->adam_m);
    cudaFree(g->adam_v);
    cudaFree(g->adam_g);
    cudaFree(g->adam_w16);
    free(g);
}

int prof_gpu_open(int index, int bf16, int cupti_on, prof_gpu **out,
                  util_error *err)
{
    prof_gpu *g = NULL;
    int n = 0, rc;

    *out = NULL;
    /* a missing libcupti is reported before anything touches CUDA */
    if (cupti_on && (rc = cupti_load(err)) != UTIL_OK)
        return rc;
    if ((rc = prof_gpu_count(&n, err)) != UTIL_OK)
        return rc;
    if (index < 0 || index >= n)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU %d: %d device%s visible (0..%d)",
                              index, n, n == 1 ? "" : "s", n - 1);
    /* CUPTI before the context exists, so that no launch is missed */
    if (cupti_on && (rc = cupti_start(err)) != UTIL_OK)
        return rc;
    g = (prof_gpu *)calloc(1, sizeof *g);
    if (!g)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    g->dev = index;
    g->bf16 = bf16 ? 1 : 0;
    g->seed = 12345u;
    g->cupti = cupti_on ? 1 : 0;
    CUDA_TRY(cudaSetDevice(index));
    CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
        g->blas = NULL;
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "cuBLAS cannot be started on GPU %d", index);
        goto done;
    }
    if (cublasSetStream(g->blas, g->stream) != CUBLAS_STATUS_SUCCESS) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "cublasSetStream failed");
        goto done;
    }
    *out = g;
    g = NULL;
done:
    prof_gpu_close(g);
    return rc;
}

int prof_gpu_info(prof_gpu *g, prof_device_info *out, util_error *err)
{
    cudaDeviceProp p;
    int rc = UTIL_OK, v;

    memset(out, 0, sizeof *out);
    CUDA_TRY(cudaGetDeviceProperties(&p, g->dev));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    prof_device_type_of(out->name, out->type);
    out->index = g->dev;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->sm_count = p.multiProcessorCount;
    out->mem_bytes = (double)p.totalGlobalMem;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, g->dev) == cudaSuccess)
        out->sm_clock_khz = v;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, g->dev) == cudaSuccess)
        out->mem_clock_khz = v;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, g->dev) == cudaSuccess)
        out->mem_bus_bits = v;
    CUDA_TRY(cudaDriverGetVersion(&out->driver_version));
    CUDA_TRY(cudaRuntimeGetVersion(&out->runtime_version));
    CUDA_TRY(cudaGetDeviceCount(&out->gpus));
done:
    return rc;
}

/* ---- kernels --------------------------------------------------------- */

__device__ __forceinline__ float ld(const __half *p) { return __half2float(*p); }
__device__ __forceinline__ float ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
__device__ __forceinline__ void st(__half *p, float v) { *p = __float2half(v); }
__device__ __forceinline__ void st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }

/* Sum (max when is_max) of v over the block; every thread gets it. */
__device__ float block_reduce(float v, int is_max)
{
    __shared__ float part[32];
    int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5;
    int nw = ((int)blockDim.x + 31) >> 5, o;

    for (o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    __syncthreads(); /* part[] may still be read by a previous call */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < nw ? part[lane] : (is_max ? -INFINITY : 0.0f);
    for (o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    return v;
}

template <typename T>
__global__ void k_fill(T *p, long long n, unsigned seed)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        st(&p[i], ((float)(h & 0xffffu) / 65536.0f - 0.5f) * 0.2f);
    }
}

__global__ void k_fill_f(float *p, long long n, float v)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = v;
}

__global__ void k_fill_ids(int *p, long long n, int range, unsigned seed)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2246822519u ^ seed;
        h ^= h >> 16;
        h *= 0x85ebca6bu;
        h ^= h >> 13;
        p[i] = (int)(h % (unsigned)range);
    }
}

/* LayerNorm (or RMSNorm) of each row: y = (x - mean) * rstd * g + b. */
template <typename T>
__global__ void k_norm_fwd(const T *x, const float *g, const float *b, T *y,
                           float *mean, float *rstd, int cols, int rms)
{
    const T *xr = x + (long long)blockIdx.x * cols;
    T *yr = y + (long long)blockIdx.x * cols;
    float s = 0.0f, ss = 0.0f, mu, r;
    int i;

    for (i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = ld(&xr[i]);
        s += v;
        ss += v * v;
    }
    s = block_reduce(s, 0);
    ss = block_reduce(ss, 0);
    mu = rms ? 0.0f : s / (float)cols;
    r = rsqrtf(fmaxf(ss / (float)cols - mu * mu, 0.0f) + 1e-5f);
    for (i = threadIdx.x; i < cols; i += blockDim.x)
        st(&yr[i], (ld(&xr[i]) - mu) * r * g[i] + (rms ? 0.0f : b[i]));
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = r;
    }
}

/* Input gradient of the norm of each row. */
template <typename T>
__global__ void k_norm_bwd(const T *dy, const T *x, const float *g,
                           const float *mean, const float *rstd, T *dx,
                           int cols, int rms)
{
    long long off = (long long)blockIdx.x * cols;
    float mu = mean[blockIdx.x], r = rstd[blockIdx.x], a = 0.0f, c = 0.0f;
    int i;

    for (i = threadIdx.x; i < cols; i += blockDim.x) {
        float h = (ld(&x[off + i]) - mu) * r, d = ld(&dy[off + i]) * g[i];
        a += d;
        c += d * h;
    }
    a = block_reduce(a, 0) / (float)cols;
    c = block_reduce(c, 0) / (float)cols;
    for (i = threadIdx.x; i < cols; i += blockDim.x) {
        float h = (ld(&x[off + i]) - mu) * r, d = ld(&dy[off + i]) * g[i];
        st(&dx[off + i], r * (d - (rms ? 0.0f : a) - h * c));
    }
}

/* Weight and bias gradients of the norm: column sums over a chunk of
 * rows, accumulated with atomics (grid.y chunks). */
template <typename T>
__global__ void k_norm_params(const T *dy, const T *x, const float *mean,
                              const float *rstd, float *dg, float *db,
                              int rows, int cols)
{
    int c = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    int per = (rows + (int)gridDim.y - 1) / (int)gridDim.y;
    int r0 = (int)blockIdx.y * per, r1 = min(rows, r0 + per), r;
    float sg = 0.0f, sb = 0.0f;

    if (c >= cols)
        return;
    for (r = r0; r < r1; r++) {
        long long at = (long long)r * cols + c;
        float d = ld(&dy[at]);
        sg += d * (ld(&x[at]) - mean[r]) * rstd[r];
        sb += d;
    }
    atomicAdd(&dg[c], sg);
    atomicAdd(&db[c], sb);
}

/* Causal softmax of each row of the s x s score matrices, scaled. */
template <typename T>
__global__ void k_softmax_fwd(const T *x, T *y, int cols, int seq, float scale)
{
    long long off = (long long)blockIdx.x * cols;
    int q = (int)(blockIdx.x % (unsigned)seq), i;
    float m = -INFINITY, s = 0.0f;

    for (i = threadIdx.x; i <= q && i < cols; i += blockDim.x)
        m = fmaxf(m, ld(&x[off + i]) * scale);
    m = block_reduce(m, 1);
    for (i = threadIdx.x; i <= q && i < cols; i += blockDim.x)
        s += __expf(ld(&x[off + i]) * scale - m);
    s = block_reduce(s, 0);
    for (i = threadIdx.x; i < cols; i += blockDim.x)
        st(&y[off + i], i <= q ? __expf(ld(&x[off + i]) * scale - m) / s : 0.0f);
}

template <typename T>
__global__ void k_softmax_bwd(const T *y, const T *dy, T *dx, int cols,
                              float scale)
{
    long long off = (long long)blockIdx.x * cols;
    float d = 0.0f;
    int i;

    for (i = threadIdx.x; i < cols; i += blockDim.x)
        d += ld(&y[off + i]) * ld(&dy[off + i]);
    d = block_reduce(d, 0);
    for (i = threadIdx.x; i < cols; i += blockDim.x)
        st(&dx[off + i], scale * ld(&y[off + i]) * (ld(&dy[off + i]) - d));
}

__device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

template <typename T>
__global__ void k_gelu_fwd(const T *x, T *y, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&y[i], gelu(ld(&x[i])));
}

template <typename T>
__global__ void k_gelu_bwd(const T *x, const T *dy, T *dx, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float v = ld(&x[i]), u = 0.7978845608f * (v + 0.044715f * v * v * v);
        float t = tanhf(u);
        float g = 0.5f * (1.0f + t) +
                  0.5f * v * (1.0f - t * t) * 0.7978845608f *
                      (1.0f + 3.0f * 0.044715f * v * v);
        st(&dx[i], g * ld(&dy[i]));
    }
}

/* y = silu(gate) * up; each row of x holds gate (cols) then up (cols). */
template <typename T>
__global__ void k_swiglu_fwd(const T *x, T *y, long long rows, int cols)
{
    long long i, n = rows * cols;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / cols, c = i % cols;
        float g = ld(&x[r * 2 * cols + c]), u = ld(&x[r * 2 * cols + cols + c]);
        st(&y[i], g / (1.0f + __expf(-g)) * u);
    }
}

template <typename T>
__global__ void k_swiglu_bwd(const T *x, const T *dy, T *dx, long long rows,
                             int cols)
{
    long long i, n = rows * cols;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / cols, c = i % cols;
        float g = ld(&x[r * 2 * cols + c]), u = ld(&x[r * 2 * cols + cols + c]);
        float sg = 1.0f / (1.0f + __expf(-g)), d = ld(&dy[i]);
        st(&dx[r * 2 * cols + c], d * u * sg * (1.0f + g * (1.0f - sg)));
        st(&dx[r * 2 * cols + cols + c], d * g * sg);
    }
}

template <typename T>
__global__ void k_add(const T *a, const T *b, T *c, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&c[i], ld(&a[i]) + ld(&b[i]));
}

/* Vocabulary-parallel lookup: tokens outside this shard give zeros. */
template <typename T>
__global__ void k_embed_fwd(const int *ids, const T *table, T *y,
                            long long rows, int cols, int shard_rows)
{
    long long i, n = rows * cols;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int id = ids[i / cols];
        st(&y[i], id < shard_rows ? ld(&table[(long long)id * cols + i % cols])
                                  : 0.0f);
    }
}

template <typename T>
__global__ void k_embed_bwd(const int *ids, const T *dy, float *dtable,
                            long long rows, int cols, int shard_rows)
{
    long long i, n = rows * cols;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        int id = ids[i / cols];
        if (id < shard_rows)
            atomicAdd(&dtable[(long long)id * cols + i % cols], ld(&dy[i]));
    }
}

/* Softmax cross-entropy of each row of logits; fp32 probabilities kept
 * for backward. */
template <typename T>
__global__ void k_xent_fwd(const T *x, const int *labels, float *prob,
                           float *loss, int cols)
{
    long long off = (long long)blockIdx.x * cols;
    float m = -INFINITY, s = 0.0f;
    int i, lab = labels[blockIdx.x] % cols;

    for (i = threadIdx.x; i < cols; i += blockDim.x)
        m = fmaxf(m, ld(&x[off + i]));
    m = block_reduce(m, 1);
    for (i = threadIdx.x; i < cols; i += blockDim.x)
        s += __expf(ld(&x[off + i]) - m);
    s = block_reduce(s, 0);
    for (i = threadIdx.x; i < cols; i += blockDim.x)
        prob[off + i] = __expf(ld(&x[off + i]) - m) / s;
    if (threadIdx.x == 0)
        loss[blockIdx.x] = logf(s) + m - ld(&x[off + lab]);
}

template <typename T>
__global__ void k_xent_bwd(const float *prob, const int *labels, T *dx,
                           long long rows, int cols)
{
    long long i, n = rows * cols;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        long long r = i / cols;
        float one = (i % cols) == (labels[r] % cols) ? 1.0f : 0.0f;
        st(&dx[i], (prob[i] - one) / (float)rows);
    }
}

/* Adam (Kingma and Ba 2015) on fp32 master weights, writing the
 * half-precision copy. */
template <typename T>
__global__ void k_adam(float *w, float *m, float *v, const T *grad, T *w16,
                       long long n, float lr, float b1, float b2, float eps,
                       float c1, float c2)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        float gr = ld(&grad[i]);
        float mi = b1 * m[i] + (1.0f - b1) * gr;
        float vi = b2 * v[i] + (1.0f - b2) * gr * gr;
        float wi = w[i] - lr * (mi / c1) / (sqrtf(vi / c2) + eps);
        m[i] = mi;
        v[i] = vi;
        w[i] = wi;
        st(&w16[i], wi);
    }
}

/* ---- running the sub-kernels ----------------------------------------- */

static unsigned grid_for(long long n)
{
    long long b = (n + THREADS - 1) / THREADS;

    if (b > 65535LL * 16)
        b = 65535LL * 16;
    return (unsigned)(b < 1 ? 1 : b);
}

/* Buffer sizes (elements) kernel k needs. */
static void needs(const prof_kernel *k, size_t *x, size_t *y, size_t *z,
                  size_t *f, size_t *p, size_t *ids)
{
    size_t rc = (size_t)k->rows * (size_t)k->cols;

    *x = *y = *z = *f = *p = *ids = 0;
    switch (k->op) {
    case PROF_OP_GEMM:
        *x = (size_t)(k->m * k->k * k->batch);
        *y = (size_t)(k->k * k->n * k->batch);
        *z = (size_t)(k->m * k->n * k->batch);
        break;
    case PROF_OP_LAYERNORM:
    case PROF_OP_RMSNORM:
        *x = *y = *z = rc;
        *f = 2 * (size_t)k->rows;
        *p = 4 * (size_t)k->cols;
        break;
    case PROF_OP_SWIGLU:
        *x = *z = 2 * rc;
        *y = rc;
        break;
    case PROF_OP_EMBED:
        *x = *f = (size_t)k->table_rows * (size_t)k->cols;
        *y = *z = rc;
        *ids = (size_t)k->rows;
        break;
    case PROF_OP_XENT:
        *x = *z = *f = rc;
        *p = (size_t)k->rows;
        *ids = (size_t)k->rows;
        break;
    default:
        *x = *y = *z = rc;
        break;
    }
}

template <typename T>
static int fill_t(prof_gpu *g, void *p, size_t n)
{
    k_fill<T><<<grid_for((long long)n), THREADS, 0, g->stream>>>((T *)p, (long long)n,
                                                                g->seed++);
    return cudaGetLastError() == cudaSuccess;
}

/* Grow buffer *p of *cap elements of `elem` bytes to n; fill it. */
static int ensure(prof_gpu *g, void **p, size_t *cap, size_t n, size_t elem,
                  int kind, util_error *err)
{
    int rc = UTIL_OK;

    if (n <= *cap)
        return UTIL_OK;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    cudaFree(*p);
    *p = NULL;
    *cap = 0;
    if (cudaMalloc(p, n * elem) != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                              "out of GPU memory allocating %.1f MiB",
                              (double)(n * elem) / 1048576.0);
    }
    *cap = n;
    if (kind == 0) { /* half-precision data */
        if (!(g->bf16 ? fill_t<__nv_bfloat16>(g, *p, n) : fill_t<__half>(g, *p, n)))
            return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                  "initialising a GPU buffer failed");
    } else if (kind == 1) { /* fp32: norm weights 1, the rest small */
        k_fill_f<<<grid_for((long long)n), THREADS, 0, g->stream>>>((float *)*p,
                                                                   (long long)n, 1.0f);
    }
done:
    return rc;
}

/* Make every buffer large enough for the kernels of the given layers. */
static int prepare(prof_gpu *g, const prof_layer_work *const *w, int nw,
                   util_error *err)
{
    size_t x = 0, y = 0, z = 0, f = 0, p = 0, ids = 0;
    int i, j, rc, range = 1;

    for (i = 0; i < nw; i++) {
        for (j = 0; j < w[i]->nk; j++) {
            size_t a, b, c, d, e, h;
            needs(&w[i]->k[j], &a, &b, &c, &d, &e, &h);
            x = a > x ? a : x;
            y = b > y ? b : y;
            z = c > z ? c : z;
            f = d > f ? d : f;
            p = e > p ? e : p;
            ids = h > ids ? h : ids;
        }
        if (w[i]->shape.vocab > range)
            range = w[i]->shape.vocab;
    }
    if (ids > g->capids)
        g->id_range = 0; /* a new buffer: draw the ids again */
    if ((rc = ensure(g, &g->x, &g->capx, x, 2, 0, err)) != UTIL_OK ||
        (rc = ensure(g, &g->y, &g->capy, y, 2, 0, err)) != UTIL_OK ||
        (rc = ensure(g, &g->z, &g->capz, z, 2, 0, err)) != UTIL_OK ||
        (rc = ensure(g, (void **)&g->f, &g->capf, f, 4, 1, err)) != UTIL_OK ||
        (rc = ensure(g, (void **)&g->p, &g->capp, p, 4, 1, err)) != UTIL_OK ||
        (rc = ensure(g, (void **)&g->ids, &g->capids, ids, 4, 2, err)) != UTIL_OK)
        return rc;
    if (ids > 0 && g->id_range != range) {
        k_fill_ids<<<grid_for((long long)g->capids), THREADS, 0, g->stream>>>(
            g->ids, (long long)g->capids, range, g->seed++);
        g->id_range = range;
    }
    if (cudaGetLastError() != cudaSuccess)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "initialising GPU buffers failed");
    return UTIL_OK;
}

static int gemm(prof_gpu *g, const prof_kernel *k, util_error *err)
{
    const float one = 1.0f, zero = 0.0f;
    cudaDataType_t t = g->bf16 ? CUDA_R_16BF : CUDA_R_16F;
    cublasOperation_t ta = k->transa ? CUBLAS_OP_T : CUBLAS_OP_N,
                      tb = k->transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    long long lda = k->transa ? k->k : k->m, ldb = k->transb ? k->n : k->k;
    cublasStatus_t s;

    if (k->m > INT_MAX || k->n > INT_MAX || k->k > INT_MAX || k->batch > INT_MAX)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "GEMM '%s' is too large for cuBLAS", k->name);
    if (k->batch > 1)
        s = cublasGemmStridedBatchedEx(
            g->blas, ta, tb, (int)k->m, (int)k->n, (int)k->k, &one, g->x, t,
            (int)lda, k->m * k->k, g->y, t, (int)ldb, k->k * k->n, &zero, g->z, t,
            (int)k->m, k->m * k->n, (int)k->batch, CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT);
    else
        s = cublasGemmEx(g->blas, ta, tb, (int)k->m, (int)k->n, (int)k->k, &one,
                         g->x, t, (int)lda, g->y, t, (int)ldb, &zero, g->z, t,
                         (int)k->m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "cuBLAS GEMM '%s' (%lld x %lld x %lld) failed: %s",
                              k->name, k->m, k->n, k->k, cublasGetStatusString(s));
    return UTIL_OK;
}

template <typename T>
static void launch_t(prof_gpu *g, const prof_kernel *k, int seq, int head_dim)
{
    T *X = (T *)g->x, *Y = (T *)g->y, *Z = (T *)g->z;
    float *F = g->f, *P = g->p;
    int cols = (int)k->cols, rows = (int)k->rows;
    long long n = k->rows * k->cols;
    cudaStream_t s = g->stream;
    int rms = k->op == PROF_OP_RMSNORM;
    float scale = 1.0f / sqrtf((float)(head_dim > 0 ? head_dim : 1));

    switch (k->op) {
    case PROF_OP_LAYERNORM:
    case PROF_OP_RMSNORM:
        if (!k->bwd) {
            k_norm_fwd<T><<<rows, THREADS, 0, s>>>(X, P, P + cols, Z, F, F + rows,
                                                   cols, rms);
        } else {
            dim3 grid((unsigned)((cols + THREADS - 1) / THREADS), 64);
            k_norm_bwd<T><<<rows, THREADS, 0, s>>>(Y, X, P, F, F + rows, Z, cols, rms);
            k_norm_params<T><<<grid, THREADS, 0, s>>>(Y, X, F, F + rows, P + 2 * cols,
                                                      P + 3 * cols, rows, cols);
        }
        break;
    case PROF_OP_SOFTMAX:
        if (!k->bwd)
            k_softmax_fwd<T><<<rows, THREADS, 0, s>>>(X, Z, cols, seq, scale);
        else
            k_softmax_bwd<T><<<rows, THREADS, 0, s>>>(Z, Y, X, cols, scale);
        break;
    case PROF_OP_GELU:
        if (!k->bwd)
            k_gelu_fwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Z, n);
        else
            k_gelu_bwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Y, Z, n);
        break;
    case PROF_OP_SWIGLU:
        if (!k->bwd)
            k_swiglu_fwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Z, k->rows, cols);
        else
            k_swiglu_bwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Y, Z, k->rows, cols);
        break;
    case PROF_OP_ADD:
        k_add<T><<<grid_for(n), THREADS, 0, s>>>(X, Y, Z, n);
        break;
    case PROF_OP_EMBED:
        if (!k->bwd)
            k_embed_fwd<T><<<grid_for(n), THREADS, 0, s>>>(g->ids, X, Z, k->rows, cols,
                                                           (int)k->table_rows);
        else
            k_embed_bwd<T><<<grid_for(n), THREADS, 0, s>>>(g->ids, Y, F, k->rows, cols,
                                                           (int)k->table_rows);
        break;
    case PROF_OP_XENT:
        if (!k->bwd)
            k_xent_fwd<T><<<rows, THREADS, 0, s>>>(X, g->ids, F, P, cols);
        else
            k_xent_bwd<T><<<grid_for(n), THREADS, 0, s>>>(F, g->ids, Z, k->rows, cols);
        break;
    default:
        break;
    }
}

/* Launch one sub-kernel of layer w on g's stream. */
static int run_kernel(prof_gpu *g, const prof_layer_work *w, const prof_kernel *k,
                      util_error *err)
{
    cudaError_t e;

    if (k->op == PROF_OP_GEMM)
        return gemm(g, k, err);
    if (k->rows > INT_MAX || k->cols > INT_MAX || k->table_rows > INT_MAX)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "kernel '%s' is too large", k->name);
    if (g->bf16)
        launch_t<__nv_bfloat16>(g, k, w->shape.seq, w->shape.hidden / w->shape.heads);
    else
        launch_t<__half>(g, k, w->shape.seq, w->shape.hidden / w->shape.heads);
    e = cudaGetLastError();
    if (e != cudaSuccess)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "kernel '%s' failed to launch: %s", k->name,
                              cudaGetErrorString(e));
    return UTIL_OK;
}

/* Run the forward (bwd = 0) or backward kernels of the layers: forward
 * in layer order, backward in reverse. */
static int run_pass(prof_gpu *g, const prof_layer_work *const *w, int nw,
                    int bwd, util_error *err)
{
    int i, j, rc;

    for (i = 0; i < nw; i++) {
        const prof_layer_work *l = w[bwd ? nw - 1 - i : i];
        for (j = 0; j < l->nk; j++)
            if (l->k[j].bwd == bwd && (rc = run_kernel(g, l, &l->k[j], err)) != UTIL_OK)
                return rc;
    }
    return UTIL_OK;
}

static int push_id(unsigned long long id, util_error *err)
{
    CUptiResult r = cu.push_id(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, (uint64_t)id);

    return r == CUPTI_SUCCESS ? UTIL_OK
                              : cupti_fail(err, "cuptiActivityPushExternalCorrelationId", r);
}

static int pop_id(util_error *err)
{
    uint64_t last = 0;
    CUptiResult r = cu.pop_id(
        CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);

    return r == CUPTI_SUCCESS ? UTIL_OK
                              : cupti_fail(err, "cuptiActivityPopExternalCorrelationId", r);
}

static const char *kernel_name(void *ctx, int i)
{
    return ((const prof_layer_work *)ctx)->k[i].name;
}

int prof_gpu_time_layer(prof_gpu *g, const prof_layer_work *w, int warmup,
                        int repeats, prof_samples *out, util_error *err)
{
    const prof_layer_work *one[1] = {w};
    int r, i, rc = UTIL_OK;

    memset(out, 0, sizeof *out);
    if (!g->cupti)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "timing needs the GPU opened with CUPTI");
    CUDA_TRY(cudaSetDevice(g->dev));
    if ((rc = prepare(g, one, 1, err)) != UTIL_OK)
        goto done;
    for (r = 0; r < warmup; r++)
        for (i = 0; i < w->nk; i++)
            if ((rc = run_kernel(g, w, &w->k[i], err)) != UTIL_OK)
                goto done;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(out, repeats, w->nk) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < repeats; r++)
        for (i = 0; i < w->nk; i++) {
            if ((rc = push_id((unsigned long long)r * (unsigned long long)w->nk +
                                  (unsigned long long)i + 1ULL, err)) != UTIL_OK)
                goto done;
            rc = run_kernel(g, w, &w->k[i], err);
            if (rc != UTIL_OK) {
                pop_id(NULL);
                goto done;
            }
            if ((rc = pop_id(err)) != UTIL_OK)
                goto done;
        }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    rc = cupti_assemble(out, kernel_name, (void *)w, err);
done:
    if (rc != UTIL_OK)
        prof_samples_free(out);
    return rc;
}

static const char *pass_name(void *ctx, int i)
{
    (void)i;
    return (const char *)ctx;
}

int prof_gpu_time_passes(prof_gpu *g, const prof_layer_work *const *layers,
                         int nlayers, const int *bwd, int npasses, int warmup,
                         int repeats, prof_samples *out, util_error *err)
{
    int r, i, rc = UTIL_OK;

    memset(out, 0, sizeof *out);
    if (!g->cupti)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "timing needs the GPU opened with CUPTI");
    if (nlayers < 1 || npasses < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "nothing to run (%d layers, %d passes)", nlayers,
                              npasses);
    CUDA_TRY(cudaSetDevice(g->dev));
    if ((rc = prepare(g, layers, nlayers, err)) != UTIL_OK)
        goto done;
    for (r = 0; r < warmup; r++)
        for (i = 0; i < npasses; i++)
            if ((rc = run_pass(g, layers, nlayers, bwd[i], err)) != UTIL_OK)
                goto done;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(out, repeats, npasses) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < repeats; r++)
        for (i = 0; i < npasses; i++) {
            if ((rc = push_id((unsigned long long)r * (unsigned long long)npasses +
                                  (unsigned long long)i + 1ULL, err)) != UTIL_OK)
                goto done;
            rc = run_pass(g, layers, nlayers, bwd[i], err);
            if (rc != UTIL_OK) {
                pop_id(NULL);
                goto done;
            }
            if ((rc = pop_id(err)) != UTIL_OK)
                goto done;
        }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    rc = cupti_assemble(out, pass_name, (void *)"stage pass", err);
done:
    if (rc != UTIL_OK)
        prof_samples_free(out);
    return rc;
}

int prof_gpu_time_adam(prof_gpu *g, long long n, int repeats, double *median_s,
                       util_error *err)
{
    float *w = NULL, *m = NULL, *v = NULL;
    void *grad = NULL, *w16 = NULL;
    prof_samples s;
    prof_stats st;
    int r, rc = UTIL_OK;

    memset(&s, 0, sizeof s);
    *median_s = -1.0;
    if (n < 1 || repeats < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected parameters and repeats, got %lld, %d",
                              n, repeats);
    if (!g->cupti)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "timing needs the GPU opened with CUPTI");
    CUDA_TRY(cudaSetDevice(g->dev));
    CUDA_TRY(cudaMalloc((void **)&w, (size_t)n * 4));
    CUDA_TRY(cudaMalloc((void **)&m, (size_t)n * 4));
    CUDA_TRY(cudaMalloc((void **)&v, (size_t)n * 4));
    CUDA_TRY(cudaMalloc(&grad, (size_t)n * 2));
    CUDA_TRY(cudaMalloc(&w16, (size_t)n * 2));
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(w, n, 0.01f);
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(m, n, 0.0f);
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(v, n, 0.0f);
    if (!(g->bf16 ? fill_t<__nv_bfloat16>(g, grad, (size_t)n)
                  : fill_t<__half>(g, grad, (size_t)n))) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "initialising optimizer state failed");
        goto done;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(&s, repeats, 1) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r <= repeats; r++) { /* run 0 is the warm-up */
        if (r > 0 && (rc = push_id((unsigned long long)r, err)) != UTIL_OK)
            goto done;
        if (g->bf16)
            k_adam<__nv_bfloat16><<<grid_for(n), THREADS, 0, g->stream>>>(
                w, m, v, (const __nv_bfloat16 *)grad, (__nv_bfloat16 *)w16, n, 1e-4f,
                0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
        else
            k_adam<__half><<<grid_for(n), THREADS, 0, g->stream>>>(
                w, m, v, (const __half *)grad, (__half *)w16, n, 1e-4f, 0.9f, 0.999f,
                1e-8f, 0.1f, 0.001f);
        CUDA_TRY(cudaGetLastError());
        if (r > 0 && (rc = pop_id(err)) != UTIL_OK)
            goto done;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = cupti_assemble(&s, pass_name, (void *)"adam", err)) != UTIL_OK)
        goto done;
    if ((rc = prof_stats_of(s.busy, repeats, &st, err)) != UTIL_OK)
        goto done;
    *median_s = st.median;
done:
    prof_samples_free(&s);
    cudaFree(w);
    cudaFree(m);
    cudaFree(v);
    cudaFree(grad);
    cudaFree(w16);
    return rc;
}

/* Median bandwidth of `reps` copies of n bytes timed by CUDA events on
 * the copying stream (GPU timestamps). */
static int time_copy(prof_gpu *g, void *dst, int dst_dev, const void *src,
                     int src_dev, size_t n, cudaMemcpyKind kind, int reps,
                     double *bps, util_error *err)
{
    cudaEvent_t a = NULL, b = NULL;
    double t[32];
    prof_stats st;
    int r, rc = UTIL_OK;
    float ms;

    if (reps > 32)
        reps = 32;
    CUDA_TRY(cudaEventCreate(&a));
    CUDA_TRY(cudaEventCreate(&b));
    for (r = -1; r < reps; r++) { /* r = -1: warm-up */
        CUDA_TRY(cudaEventRecord(a, g->stream));
        if (dst_dev >= 0 && src_dev >= 0 && dst_dev != src_dev)
            CUDA_TRY(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, n, g->stream));
        else
            CUDA_TRY(cudaMemcpyAsync(dst, src, n, kind, g->stream));
        CUDA_TRY(cudaEventRecord(b, g->stream));
        CUDA_TRY(cudaEventSynchronize(b));
        CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
        if (r >= 0)
            t[r] = (double)n / ((double)ms * 1e-3);
    }
    if ((rc = prof_stats_of(t, reps, &st, err)) == UTIL_OK)
        *bps = st.median;
done:
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    return rc;
}

int prof_gpu_bandwidth(prof_gpu *g, prof_bandwidth *out, util_error *err)
{
    const size_t n = (size_t)256 << 20;
    void *host = NULL, *d0 = NULL, *d1 = NULL, *peer = NULL;
    int rc = UTIL_OK, ngpu = 0, other = -1, can = 0;
    prof_layer_work w;
    prof_samples s;
    prof_stats st;

    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    CUDA_TRY(cudaSetDevice(g->dev));
    CUDA_TRY(cudaMallocHost(&host, n));
    memset(host, 1, n);
    CUDA_TRY(cudaMalloc(&d0, n));
    CUDA_TRY(cudaMalloc(&d1, n));
    out->copy_bytes = (long long)n;
    if ((rc = time_copy(g, d0, -1, host, -1, n, cudaMemcpyHostToDevice, 10,
                        &out->h2d_bps, err)) != UTIL_OK ||
        (rc = time_copy(g, host, -1, d0, -1, n, cudaMemcpyDeviceToHost, 10,
                        &out->d2h_bps, err)) != UTIL_OK ||
        (rc = time_copy(g, d1, -1, d0, -1, n, cudaMemcpyDeviceToDevice, 10,
                        &out->d2d_bps, err)) != UTIL_OK)
        goto done;
    CUDA_TRY(cudaGetDeviceCount(&ngpu));
    if (ngpu > 1) {
        other = g->dev == 0 ? 1 : 0;
        CUDA_TRY(cudaDeviceCanAccessPeer(&can, g->dev, other));
        if (can) {
            cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
                rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                    "cudaDeviceEnablePeerAccess: %s",
                                    cudaGetErrorString(e));
                goto done;
            }
            cudaGetLastError();
        }
        CUDA_TRY(cudaSetDevice(other));
        CUDA_TRY(cudaMalloc(&peer, n));
        CUDA_TRY(cudaSetDevice(g->dev));
        out->p2p_peer = can;
        if ((rc = time_copy(g, peer, other, d0, g->dev, n, cudaMemcpyDefault, 10,
                            &out->p2p_bps, err)) != UTIL_OK)
            goto done;
    }

    /* achieved GEMM throughput: one large square GEMM, timed by CUPTI */
    memset(&w, 0, sizeof w);
    w.shape.seq = 1;
    w.shape.hidden = 1;
    w.shape.heads = 1;
    w.nk = 1;
    snprintf(w.k[0].name, sizeof w.k[0].name, "gemm-8192");
    w.k[0].op = PROF_OP_GEMM;
    w.k[0].m = w.k[0].n = w.k[0].k = 8192;
    w.k[0].batch = 1;
    w.k[0].flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
    if ((rc = prof_gpu_time_layer(g, &w, 3, 10, &s, err)) != UTIL_OK)
        goto done;
    if ((rc = prof_stats_of(s.busy, s.repeats, &st, err)) != UTIL_OK)
        goto done;
    out->gemm_n = 8192;
    out->gemm_flops = st.median > 0.0 ? w.k[0].flops / st.median : 0.0;
done:
    prof_samples_free(&s);
    if (peer) {
        cudaSetDevice(other);
        cudaFree(peer);
        cudaSetDevice(g->dev);
    }
    cudaFree(d0);
    cudaFree(d1);
    if (host)
        cudaFreeHost(host);
    return rc;
}

/* ---- building blocks of the launcher's executed mode ----------------- */

/* Keep one thread busy until `ns` nanoseconds of the GPU's global timer
 * have passed. */
__global__ void k_spin(unsigned long long ns)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

void *prof_gpu_stream(prof_gpu *g)
{
    return (void *)g->stream;
}

int prof_gpu_device(const prof_gpu *g)
{
    return g->dev;
}

int prof_gpu_prepare(prof_gpu *g, const prof_layer_work *const *layers,
                     int nlayers, util_error *err)
{
    int rc = UTIL_OK;

    CUDA_TRY(cudaSetDevice(g->dev));
    if (nlayers > 0 && (rc = prepare(g, layers, nlayers, err)) != UTIL_OK)
        goto done;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
done:
    return rc;
}

int prof_gpu_pass(prof_gpu *g, const prof_layer_work *const *layers,
                  int nlayers, int bwd, util_error *err)
{
    int rc = UTIL_OK;

    if (nlayers < 1)
        return UTIL_OK;
    CUDA_TRY(cudaSetDevice(g->dev));
    rc = run_pass(g, layers, nlayers, bwd, err);
done:
    return rc;
}

int prof_gpu_delay(prof_gpu *g, double seconds, util_error *err)
{
    int rc = UTIL_OK;

    if (!(seconds > 0.0))
        return UTIL_OK;
    if (seconds > 3600.0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "a modelled delay of %g s is not plausible", seconds);
    CUDA_TRY(cudaSetDevice(g->dev));
    k_spin<<<1, 1, 0, g->stream>>>((unsigned long long)(seconds * 1e9 + 0.5));
    CUDA_TRY(cudaGetLastError());
done:
    return rc;
}

int prof_gpu_adam_prepare(prof_gpu *g, long long n, util_error *err)
{
    int rc = UTIL_OK;

    if (n < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected a positive parameter count, got %lld", n);
    if (g->adam_n >= n)
        return UTIL_OK;
    CUDA_TRY(cudaSetDevice(g->dev));
    cudaFree(g->adam_w);
    cudaFree(g->adam_m);
    cudaFree(g->adam_v);
    cudaFree(g->adam_g);
    cudaFree(g->adam_w16);
    g->adam_w = g->adam_m = g->adam_v = NULL;
    g->adam_g = g->adam_w16 = NULL;
    g->adam_n = 0;
    if (cudaMalloc((void **)&g->adam_w, (size_t)n * 4) != cudaSuccess ||
        cudaMalloc((void **)&g->adam_m, (size_t)n * 4) != cudaSuccess ||
        cudaMalloc((void **)&g->adam_v, (size_t)n * 4) != cudaSuccess ||
        cudaMalloc(&g->adam_g, (size_t)n * 2) != cudaSuccess ||
        cudaMalloc(&g->adam_w16, (size_t)n * 2) != cudaSuccess) {
        cudaGetLastError();
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                              "out of GPU memory for the optimizer state of "
                              "%lld parameters", n);
    }
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(g->adam_w, n, 0.01f);
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(g->adam_m, n, 0.0f);
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(g->adam_v, n, 0.0f);
    if (!(g->bf16 ? fill_t<__nv_bfloat16>(g, g->adam_g, (size_t)n)
                  : fill_t<__half>(g, g->adam_g, (size_t)n))) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "initialising optimizer state failed");
        goto done;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    g->adam_n = n;
done:
    return rc;
}

int prof_gpu_adam_step(prof_gpu *g, util_error *err)
{
    long long n = g->adam_n;
    int rc = UTIL_OK;

    if (n < 1)
        return UTIL_OK;
    CUDA_TRY(cudaSetDevice(g->dev));
    if (g->bf16)
        k_adam<__nv_bfloat16><<<grid_for(n), THREADS, 0, g->stream>>>(
            g->adam_w, g->adam_m, g->adam_v, (const __nv_bfloat16 *)g->adam_g,
            (__nv_bfloat16 *)g->adam_w16, n, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
    else
        k_adam<__half><<<grid_for(n), THREADS, 0, g->stream>>>(
            g->adam_w, g->adam_m, g->adam_v, (const __half *)g->adam_g,
            (__half *)g->adam_w16, n, 1e-4f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
    CUDA_TRY(cudaGetLastError());
done:
    return rc;
}
