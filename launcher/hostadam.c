/* launcher/hostadam.c: the optimizer step of optimizer offload on the
 * host CPU (ZeRO-Offload, Ren et al., USENIX ATC'21, sec. 4.2 and 5.1):
 * Adam over the rank's shard in host memory, split over threads, and the
 * 16-bit conversions of its gradients and weights.  Plain C, tested
 * without a GPU; launcher/multi.cu calls it between the host copies. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

/* IEEE 754 binary16 of f, rounded to nearest even; overflow to
 * infinity, NaN kept quiet. */
uint16_t launch_half_of(float f)
{
    uint32_t x, sign, mant;
    int exp;

    memcpy(&x, &f, sizeof x);
    sign = (x >> 16) & 0x8000u;
    exp = (int)((x >> 23) & 0xffu);
    mant = x & 0x7fffffu;
    if (exp == 0xff) /* infinity, NaN */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    exp -= 127 - 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) { /* subnormal half, or zero */
        uint32_t m, shift, r, half, rest;
        if (exp < -10)
            return (uint16_t)sign;
        m = mant | 0x800000u;
        shift = (uint32_t)(14 - exp);
        r = m >> shift;
        half = 1u << (shift - 1);
        rest = m & ((1u << shift) - 1u);
        if (rest > half || (rest == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    {
        uint32_t r = ((uint32_t)exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (r & 1u)))
            r++; /* a carry into the exponent is still right */
        return (uint16_t)(sign | r);
    }
}

float launch_half_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
             mant = h & 0x3ffu, x;
    float f;

    if (exp == 0) { /* zero or subnormal: mant x 2^-24 */
        f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 31)
        x = sign | 0x7f800000u | (mant << 13);
    else
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    memcpy(&f, &x, sizeof f);
    return f;
}

/* bfloat16: the upper half of the float, rounded to nearest even. */
uint16_t launch_bf16_of(float f)
{
    uint32_t x;

    memcpy(&x, &f, sizeof x);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float launch_bf16_value(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;

    memcpy(&f, &x, sizeof f);
    return f;
}

void launch_adam_init(launch_adam *a)
{
    a->lr = 1e-4f;
    a->b1 = 0.9f;
    a->b2 = 0.999f;
    a->eps = 1e-8f;
    a->c1 = 1.0f - a->b1; /* the first step */
    a->c2 = 1.0f - a->b2;
}

typedef struct adam_job {
    const launch_adam *a;
    float *w, *m, *v;
    const void *g;
    int gkind, bf16;
    void *w16;
    long long first, last;
} adam_job;

static float grad_at(const void *g, int kind, long long i)
{
    if (kind == LAUNCH_ELEM_FP32)
        return ((const float *)g)[i];
    if (kind == LAUNCH_ELEM_BF16)
        return launch_bf16_value(((const uint16_t *)g)[i]);
    return launch_half_value(((const uint16_t *)g)[i]);
}

static void *adam_run(void *arg)
{
    const adam_job *j = arg;
    const launch_adam *a = j->a;
    long long i;

    for (i = j->first; i < j->last; i++) {
        float gi = grad_at(j->g, j->gkind, i);
        float mi = a->b1 * j->m[i] + (1.0f - a->b1) * gi;
        float vi = a->b2 * j->v[i] + (1.0f - a->b2) * gi * gi;
        j->m[i] = mi;
        j->v[i] = vi;
        j->w[i] -= a->lr * (mi / a->c1) / (sqrtf(vi / a->c2) + a->eps);
        ((uint16_t *)j->w16)[i] = j->bf16 ? launch_bf16_of(j->w[i])
                                          : launch_half_of(j->w[i]);
    }
    return NULL;
}

int launch_host_adam(const launch_adam *a, float *w, float *m, float *v,
                     const void *g, int gkind, void *w16, int bf16, long long n,
                     int threads)
{
    adam_job jobs[LAUNCH_HOST_THREADS_MAX];
    pthread_t th[LAUNCH_HOST_THREADS_MAX];
    int k, started = 0, rc = 0;

    if (n <= 0)
        return 0;
    if (threads < 1)
        threads = 1;
    if (threads > LAUNCH_HOST_THREADS_MAX)
        threads = LAUNCH_HOST_THREADS_MAX;
    if ((long long)threads > n)
        threads = (int)n;
    for (k = 0; k < threads; k++) {
        adam_job *j = &jobs[k];
        j->a = a;
        j->w = w;
        j->m = m;
        j->v = v;
        j->g = g;
        j->gkind = gkind;
        j->bf16 = bf16;
        j->w16 = w16;
        j->first = n * k / threads;
        j->last = n * (k + 1) / threads;
    }
    /* job 0 on this thread; a thread that cannot start runs here too */
    for (k = 1; k < threads; k++) {
        if (pthread_create(&th[k], NULL, adam_run, &jobs[k]) != 0) {
            rc = -1;
            break;
        }
        started = k;
    }
    adam_run(&jobs[0]);
    for (k = started + 1; k < threads; k++)
        adam_run(&jobs[k]);
    for (k = 1; k <= started; k++)
        pthread_join(th[k], NULL);
    return rc;
}

int launch_host_threads(int ranks_here)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    int t;

    if (n < 1)
        n = 1;
    if (ranks_here < 1)
        ranks_here = 1;
    t = (int)(n / ranks_here);
    if (t < 1)
        t = 1;
    return t > LAUNCH_HOST_THREADS_MAX ? LAUNCH_HOST_THREADS_MAX : t;
}
