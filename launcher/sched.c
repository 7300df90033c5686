/* launcher/sched.c: the passes of a pipeline stage in one iteration
 * (GPipe, 1F1B, interleaved 1F1B) and the point-to-point groups between
 * them, as the multi-rank launcher issues them. */
#include <stdlib.h>
#include <string.h>

#include "launch.h"

int launch_passes(int schedule, int vpp, int stage, int pp, int gas,
                  launch_pass *out, int cap, util_error *err)
{
    int total, warm, k, n = 0, i;

    if (vpp < 1)
        vpp = 1;
    if (pp < 1 || gas < 1 || stage < 0 || stage >= pp || !out)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "no schedule for stage %d of %d with %d micro-batches",
                              stage, pp, gas), -1;
    total = gas * vpp;
    if (cap < 2 * total)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "room for %d passes, %d needed", cap, 2 * total), -1;
    if (vpp == 1) {
        int *bwd = malloc((size_t)(2 * gas) * sizeof *bwd);
        int *micro = malloc((size_t)(2 * gas) * sizeof *micro);
        if (!bwd || !micro) {
            free(bwd);
            free(micro);
            return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory"), -1;
        }
        n = launch_stage_order(schedule, stage, pp, gas, bwd, micro);
        for (i = 0; i < n; i++) {
            out[i].bwd = bwd[i];
            out[i].micro = micro[i];
            out[i].chunk = 0;
        }
        free(bwd);
        free(micro);
        return n;
    }
    if (schedule != FMT_SCHED_1F1B)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "the interleaved schedule (vpp %d) needs 1f1b", vpp), -1;
    if (pp < 2 || gas % pp != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "the interleaved schedule needs pp > 1 and micro-batches "
                              "(%d) a multiple of pp (%d)", gas, pp), -1;
    /* Megatron-LM: num_warmup_microbatches = (pp - rank - 1) * 2 +
       (vpp - 1) * pp, all of them when gas == pp */
    warm = gas == pp ? total : (pp - stage - 1) * 2 + (vpp - 1) * pp;
    if (warm > total)
        warm = total;
#define FWD_OF(k, p) do { int g_ = (k) % (pp * vpp); (p).bwd = 0; \
        (p).chunk = g_ / pp; (p).micro = ((k) / (pp * vpp)) * pp + (k) % pp; } while (0)
#define BWD_OF(k, p) do { FWD_OF(k, p); (p).bwd = 1; \
        (p).chunk = vpp - 1 - (p).chunk; } while (0)
    for (k = 0; k < warm; k++, n++)
        FWD_OF(k, out[n]);
    for (k = 0; k < total - warm; k++) {
        FWD_OF(warm + k, out[n]);
        n++;
        BWD_OF(k, out[n]);
        n++;
    }
    for (k = total - warm; k < total; k++, n++)
        BWD_OF(k, out[n]);
#undef FWD_OF
#undef BWD_OF
    return n;
}

/* The transfer into pass p of `stage` (as a receive) or out of it (as a
 * send); 0 when there is none. */
static int edge(const launch_pass *p, int send, int stage, int pp, int vpp,
                const double *act, launch_p2p *out)
{
    int v = p->chunk * pp + stage, nv = pp * vpp, other;

    if (!p->bwd)
        other = send ? v + 1 : v - 1;  /* activations flow forward */
    else
        other = send ? v - 1 : v + 1;  /* gradients flow backward */
    if (other < 0 || other >= nv)
        return 0;
    memset(out, 0, sizeof *out);
    out->send = send;
    out->peer = other % pp;
    out->grad = p->bwd;
    out->micro = p->micro;
    /* the sender's chunk: the activation leaves v (send) or other (recv) */
    out->chunk = (send ? v : other) / pp;
    {
        int cut = !p->bwd ? (send ? v : other) : (send ? other : v);
        out->bytes = act ? act[cut] : 0.0;
    }
    return 1;
}

int launch_steps(int schedule, int vpp, int stage, int pp, int gas,
                 const double *act_bytes, launch_step **out, util_error *err)
{
    launch_pass *ps;
    launch_step *st;
    int *unit, np, k, u, nu, n = 0, total, lead;

    *out = NULL;
    if (vpp < 1)
        vpp = 1;
    if (gas < 1 || gas > (1 << 20) || vpp > 1024)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "no schedule for %d micro-batches", gas), -1;
    total = 2 * gas * vpp;
    ps = malloc((size_t)total * sizeof *ps);
    unit = malloc((size_t)(total + 1) * sizeof *unit);
    st = calloc((size_t)(2 * total + 1), sizeof *st);
    if (!ps || !st || !unit) {
        free(ps);
        free(st);
        free(unit);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory"), -1;
    }
    np = launch_passes(schedule, vpp, stage, pp, gas, ps, total, err);
    if (np < 0) {
        free(ps);
        free(st);
        free(unit);
        return -1;
    }
    /* unit[u] = first pass of unit u; interleaved: after the warm-up
       forwards, a forward directly followed by a backward is one unit
       (the steady state) */
    for (lead = 0; lead < np && !ps[lead].bwd; lead++)
        ;
    for (k = 0, nu = 0; k < np; nu++) {
        unit[nu] = k;
        k += vpp > 1 && k >= lead && !ps[k].bwd && k + 1 < np && ps[k + 1].bwd ? 2 : 1;
    }
    unit[nu] = np;
    for (u = 0; u <= nu; u++) {
        launch_step *g = &st[n];
        if (u > 0)
            for (k = unit[u - 1]; k < unit[u]; k++)
                if (edge(&ps[k], 1, stage, pp, vpp, act_bytes, &g->p2p[g->np]))
                    g->np++;
        if (u < nu)
            for (k = unit[u]; k < unit[u + 1]; k++)
                if (edge(&ps[k], 0, stage, pp, vpp, act_bytes, &g->p2p[g->np]))
                    g->np++;
        if (g->np > 0)
            n++;
        if (u < nu)
            for (k = unit[u]; k < unit[u + 1]; k++) {
                st[n].is_pass = 1;
                st[n].pass = ps[k];
                n++;
            }
    }
    free(ps);
    free(unit);
    *out = st;
    return n;
}
