/* profiler/gpu_kernels.cu: the small kernels of a transformer layer
 * written in CUDA C (norms, softmax, GeLU, SwiGLU, residual add,
 * embedding, cross-entropy), the fused Adam step, buffer fills and the
 * delay kernel of the launcher's executed mode, with the host functions
 * that queue them on a prof_gpu's stream.  GEMMs are cuBLAS calls
 * (profiler/gpu_run.cu). */
#include <math.h>
#include <stddef.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "gpu_internal.h"

#define THREADS 256

/* ---- kernels --------------------------------------------------------- */

static __device__ __forceinline__ float ld(const __half *p) { return __half2float(*p); }
static __device__ __forceinline__ float ld(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
static __device__ __forceinline__ void st(__half *p, float v) { *p = __float2half(v); }
static __device__ __forceinline__ void st(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }

/* Sum (max when is_max) of v over the block; every thread gets it. */
static __device__ float block_reduce(float v, int is_max)
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
static __global__ void k_fill(T *p, long long n, unsigned seed)
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

static __global__ void k_fill_f(float *p, long long n, float v)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = v;
}

static __global__ void k_fill_ids(int *p, long long n, int range, unsigned seed)
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
static __global__ void k_norm_fwd(const T *x, const float *g, const float *b, T *y,
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
static __global__ void k_norm_bwd(const T *dy, const T *x, const float *g,
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
static __global__ void k_norm_params(const T *dy, const T *x, const float *mean,
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
static __global__ void k_softmax_fwd(const T *x, T *y, int cols, int seq, float scale)
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
static __global__ void k_softmax_bwd(const T *y, const T *dy, T *dx, int cols,
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

static __device__ __forceinline__ float gelu(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

template <typename T>
static __global__ void k_gelu_fwd(const T *x, T *y, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&y[i], gelu(ld(&x[i])));
}

template <typename T>
static __global__ void k_gelu_bwd(const T *x, const T *dy, T *dx, long long n)
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

template <typename T>
static __global__ void k_relu_fwd(const T *x, T *y, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&y[i], fmaxf(ld(&x[i]), 0.0f));
}

/* dx = dy where the output y is positive: the backward needs only y */
template <typename T>
static __global__ void k_relu_bwd(const T *y, const T *dy, T *dx, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&dx[i], ld(&y[i]) > 0.0f ? ld(&dy[i]) : 0.0f);
}

/* y = silu(gate) * up; each row of x holds gate (cols) then up (cols). */
template <typename T>
static __global__ void k_swiglu_fwd(const T *x, T *y, long long rows, int cols)
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
static __global__ void k_swiglu_bwd(const T *x, const T *dy, T *dx, long long rows,
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
static __global__ void k_add(const T *a, const T *b, T *c, long long n)
{
    long long i;

    for (i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        st(&c[i], ld(&a[i]) + ld(&b[i]));
}

/* Vocabulary-parallel lookup: tokens outside this shard give zeros. */
template <typename T>
static __global__ void k_embed_fwd(const int *ids, const T *table, T *y,
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
static __global__ void k_embed_bwd(const int *ids, const T *dy, float *dtable,
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
static __global__ void k_xent_fwd(const T *x, const int *labels, float *prob,
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
static __global__ void k_xent_bwd(const float *prob, const int *labels, T *dx,
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
static __global__ void k_adam(float *w, float *m, float *v, const T *grad, T *w16,
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

/* Keep one thread busy until `ns` nanoseconds of the GPU's global timer
 * have passed. */
static __global__ void k_spin(unsigned long long ns)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

/* ---- queueing them --------------------------------------------------- */

static unsigned grid_for(long long n)
{
    long long b = (n + THREADS - 1) / THREADS;

    if (b > 65535LL * 16)
        b = 65535LL * 16;
    return (unsigned)(b < 1 ? 1 : b);
}

template <typename T>
static int fill_t(prof_gpu *g, void *p, size_t n)
{
    k_fill<T><<<grid_for((long long)n), THREADS, 0, g->stream>>>((T *)p, (long long)n,
                                                                g->seed++);
    return cudaGetLastError() == cudaSuccess;
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
    case PROF_OP_RELU:
        if (!k->bwd)
            k_relu_fwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Z, n);
        else
            k_relu_bwd<T><<<grid_for(n), THREADS, 0, s>>>(X, Y, Z, n);
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

int prof_gpu_fill_half(prof_gpu *g, void *p, size_t n)
{
    return g->bf16 ? fill_t<__nv_bfloat16>(g, p, n) : fill_t<__half>(g, p, n);
}

void prof_gpu_fill_f32(prof_gpu *g, float *p, long long n, float v)
{
    k_fill_f<<<grid_for(n), THREADS, 0, g->stream>>>(p, n, v);
}

void prof_gpu_fill_ids(prof_gpu *g, int *p, long long n, int range)
{
    k_fill_ids<<<grid_for(n), THREADS, 0, g->stream>>>(p, n, range, g->seed++);
}

void prof_gpu_launch(prof_gpu *g, const prof_kernel *k, int seq, int head_dim)
{
    if (g->bf16)
        launch_t<__nv_bfloat16>(g, k, seq, head_dim);
    else
        launch_t<__half>(g, k, seq, head_dim);
}

void prof_gpu_launch_adam(prof_gpu *g, float *w, float *m, float *v,
                          const void *grad, void *w16, long long n)
{
    if (g->bf16)
        k_adam<__nv_bfloat16><<<grid_for(n), THREADS, 0, g->stream>>>(
            w, m, v, (const __nv_bfloat16 *)grad, (__nv_bfloat16 *)w16, n, 1e-4f,
            0.9f, 0.999f, 1e-8f, 0.1f, 0.001f);
    else
        k_adam<__half><<<grid_for(n), THREADS, 0, g->stream>>>(
            w, m, v, (const __half *)grad, (__half *)w16, n, 1e-4f, 0.9f, 0.999f,
            1e-8f, 0.1f, 0.001f);
}

void prof_gpu_launch_spin(prof_gpu *g, unsigned long long ns)
{
    k_spin<<<1, 1, 0, g->stream>>>(ns);
}
