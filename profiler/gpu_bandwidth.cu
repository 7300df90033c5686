/* profiler/gpu_bandwidth.cu: copy bandwidths (host to device, device
 * to host, on the device, to a peer GPU) timed by CUDA events, and the
 * achieved throughput of a large GEMM timed by CUPTI. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "gpu_internal.h"

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
