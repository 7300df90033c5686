/* profiler/gpu_device.cu: a GPU opened for profiling or for the
 * launcher's executed mode (stream, cuBLAS handle, CUPTI collection when
 * asked for), its properties, and the buffers its sub-kernels run on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpu_internal.h"

/* ---- the device ------------------------------------------------------ */

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
    prof_cupti_flush();
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
    if (cupti_on && (rc = prof_cupti_init(err)) != UTIL_OK)
        return rc;
    if ((rc = prof_gpu_count(&n, err)) != UTIL_OK)
        return rc;
    if (index < 0 || index >= n)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "no CUDA GPU %d: %d device%s visible (0..%d)",
                              index, n, n == 1 ? "" : "s", n - 1);
    /* CUPTI before the context exists, so that no launch is missed */
    if (cupti_on && (rc = prof_cupti_start(err)) != UTIL_OK)
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

void *prof_gpu_stream(prof_gpu *g)
{
    return (void *)g->stream;
}

int prof_gpu_device(const prof_gpu *g)
{
    return g->dev;
}

/* ---- buffers --------------------------------------------------------- */

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
        if (!prof_gpu_fill_half(g, *p, n))
            return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                  "initialising a GPU buffer failed");
    } else if (kind == 1) { /* fp32: norm weights 1, the rest small */
        prof_gpu_fill_f32(g, (float *)*p, (long long)n, 1.0f);
    }
done:
    return rc;
}

int prof_gpu_buffers(prof_gpu *g, const prof_layer_work *const *w, int nw,
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
        prof_gpu_fill_ids(g, g->ids, (long long)g->capids, range);
        g->id_range = range;
    }
    if (cudaGetLastError() != cudaSuccess)
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "initialising GPU buffers failed");
    return UTIL_OK;
}
