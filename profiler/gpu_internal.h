/* profiler/gpu_internal.h: what the GPU files of profiler/ (gpu_*.cu,
 * library hetplan_prof_gpu) share with each other; private to them.  The
 * interface for the programs is prof_gpu_* in prof.h.  CUDA C++ only. */
#ifndef HETPLAN_GPU_INTERNAL_H
#define HETPLAN_GPU_INTERNAL_H

#include <stddef.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "prof.h"
}

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

/* On a failed CUDA call: rc and err set, goto done. */
#define CUDA_TRY(call)                                                       \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL, "%s: %s",   \
                                #call, cudaGetErrorString(e_));              \
            goto done;                                                       \
        }                                                                    \
    } while (0)

/* ---- CUPTI activity collection (profiler/gpu_cupti.cu) --------------- */

/* Load libcupti once per process; UTIL_ENOTFOUND when it is missing. */
int prof_cupti_init(util_error *err);
/* Register the buffer callbacks and enable the activity kinds (once). */
int prof_cupti_start(util_error *err);
/* Deliver every pending record, then forget them all. */
int prof_cupti_reset(util_error *err);
/* Deliver pending records, if collection was started (on close). */
void prof_cupti_flush(void);
/* Fill out (already allocated, repeats * nk samples) from the collected
 * records: sample s gets the earliest start, latest end and summed
 * duration of the GPU kernels launched under external id s + 1.  names
 * labels sample s % nk in messages. */
int prof_cupti_assemble(prof_samples *out, const char *(*name)(void *, int),
                        void *ctx, util_error *err);
/* Launches between push and pop carry external correlation id `id`. */
int prof_cupti_push(unsigned long long id, util_error *err);
int prof_cupti_pop(util_error *err);

/* ---- the device's buffers (profiler/gpu_device.cu) ------------------- */

/* Make every buffer large enough for the kernels of the given layers. */
int prof_gpu_buffers(prof_gpu *g, const prof_layer_work *const *w, int nw,
                     util_error *err);

/* ---- kernels, queued on g's stream (profiler/gpu_kernels.cu) --------- */

/* Fill n half-precision elements (fp16 or bf16, as g) with small
 * pseudo-random values; 0 when the launch failed. */
int prof_gpu_fill_half(prof_gpu *g, void *p, size_t n);
/* Set n floats to v. */
void prof_gpu_fill_f32(prof_gpu *g, float *p, long long n, float v);
/* n token ids drawn from [0, range). */
void prof_gpu_fill_ids(prof_gpu *g, int *p, long long n, int range);
/* The CUDA kernels of sub-kernel k (not a GEMM) on g's buffers;
 * cudaGetLastError tells whether they launched. */
void prof_gpu_launch(prof_gpu *g, const prof_kernel *k, int seq, int head_dim);
/* One fused Adam step over n parameters (grad and w16 as g's precision). */
void prof_gpu_launch_adam(prof_gpu *g, float *w, float *m, float *v,
                          const void *grad, void *w16, long long n);
/* One thread busy until ns nanoseconds of GPU time have passed. */
void prof_gpu_launch_spin(prof_gpu *g, unsigned long long ns);

#endif
