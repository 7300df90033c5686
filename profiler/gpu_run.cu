/* profiler/gpu_run.cu: running a layer's sub-kernels, GEMMs through
 * cuBLAS (fp16/bf16 inputs, fp32 accumulation) and the rest through
 * profiler/gpu_kernels.cu: timed by CUPTI for hetplan-profile
 * (prof_gpu_time_*), or queued as the building blocks of hetplan-launch's
 * executed mode (passes, delay kernel, Adam step). */
#include <limits.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpu_internal.h"

/* ---- running the sub-kernels ----------------------------------------- */

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
    prof_gpu_launch(g, k, w->shape.seq, w->shape.hidden / w->shape.heads);
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

/* ---- timed by CUPTI -------------------------------------------------- */

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
    if ((rc = prof_gpu_buffers(g, one, 1, err)) != UTIL_OK)
        goto done;
    for (r = 0; r < warmup; r++)
        for (i = 0; i < w->nk; i++)
            if ((rc = run_kernel(g, w, &w->k[i], err)) != UTIL_OK)
                goto done;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = prof_cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(out, repeats, w->nk) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < repeats; r++)
        for (i = 0; i < w->nk; i++) {
            if ((rc = prof_cupti_push((unsigned long long)r * (unsigned long long)w->nk +
                                      (unsigned long long)i + 1ULL, err)) != UTIL_OK)
                goto done;
            rc = run_kernel(g, w, &w->k[i], err);
            if (rc != UTIL_OK) {
                prof_cupti_pop(NULL);
                goto done;
            }
            if ((rc = prof_cupti_pop(err)) != UTIL_OK)
                goto done;
        }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    rc = prof_cupti_assemble(out, kernel_name, (void *)w, err);
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
    if ((rc = prof_gpu_buffers(g, layers, nlayers, err)) != UTIL_OK)
        goto done;
    for (r = 0; r < warmup; r++)
        for (i = 0; i < npasses; i++)
            if ((rc = run_pass(g, layers, nlayers, bwd[i], err)) != UTIL_OK)
                goto done;
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = prof_cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(out, repeats, npasses) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < repeats; r++)
        for (i = 0; i < npasses; i++) {
            if ((rc = prof_cupti_push((unsigned long long)r * (unsigned long long)npasses +
                                      (unsigned long long)i + 1ULL, err)) != UTIL_OK)
                goto done;
            rc = run_pass(g, layers, nlayers, bwd[i], err);
            if (rc != UTIL_OK) {
                prof_cupti_pop(NULL);
                goto done;
            }
            if ((rc = prof_cupti_pop(err)) != UTIL_OK)
                goto done;
        }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    rc = prof_cupti_assemble(out, pass_name, (void *)"stage pass", err);
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
    prof_gpu_fill_f32(g, w, n, 0.01f);
    prof_gpu_fill_f32(g, m, n, 0.0f);
    prof_gpu_fill_f32(g, v, n, 0.0f);
    if (!prof_gpu_fill_half(g, grad, (size_t)n)) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "initialising optimizer state failed");
        goto done;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = prof_cupti_reset(err)) != UTIL_OK)
        goto done;
    if (prof_samples_alloc(&s, repeats, 1) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r <= repeats; r++) { /* run 0 is the warm-up */
        if (r > 0 && (rc = prof_cupti_push((unsigned long long)r, err)) != UTIL_OK)
            goto done;
        prof_gpu_launch_adam(g, w, m, v, grad, w16, n);
        CUDA_TRY(cudaGetLastError());
        if (r > 0 && (rc = prof_cupti_pop(err)) != UTIL_OK)
            goto done;
    }
    CUDA_TRY(cudaStreamSynchronize(g->stream));
    if ((rc = prof_cupti_assemble(&s, pass_name, (void *)"adam", err)) != UTIL_OK)
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

/* ---- building blocks of the launcher's executed mode ----------------- */

int prof_gpu_prepare(prof_gpu *g, const prof_layer_work *const *layers,
                     int nlayers, util_error *err)
{
    int rc = UTIL_OK;

    CUDA_TRY(cudaSetDevice(g->dev));
    if (nlayers > 0 && (rc = prof_gpu_buffers(g, layers, nlayers, err)) != UTIL_OK)
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
    prof_gpu_launch_spin(g, (unsigned long long)(seconds * 1e9 + 0.5));
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
    prof_gpu_fill_f32(g, g->adam_w, n, 0.01f);
    prof_gpu_fill_f32(g, g->adam_m, n, 0.0f);
    prof_gpu_fill_f32(g, g->adam_v, n, 0.0f);
    if (!prof_gpu_fill_half(g, g->adam_g, (size_t)n)) {
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
    prof_gpu_launch_adam(g, g->adam_w, g->adam_m, g->adam_v, g->adam_g,
                         g->adam_w16, n);
    CUDA_TRY(cudaGetLastError());
done:
    return rc;
}
