/* costmodel/layer_time.c: forward and backward time of one layer for
 * one micro-batch on one device type: from the profile (interpolated
 * over micro-batch sizes) or estimated from FLOPs and memory traffic
 * (roofline), with its TP all-reduces (AMP eq. 3). */
#include <string.h>
#include <strings.h>

#include "costmodel.h"
#include "internal.h"


/* Per-sample forward work of a layer at TP degree tp, from FLOPs and
 * memory traffic at the device's peak times the efficiency factors
 * (roofline sum: compute-bound GEMMs plus bandwidth-bound element-wise):
 * the shape of the TP speed-up that scales a one-point profile. */
static double layer_work(const fmt_model *m, const cost_params *p,
                         const fmt_device_type *dt, const fmt_layer *l, int tp)
{
    double t = (double)tp;
    double flops = l->fwd_flops * (l->tp_flops_frac / t + (1.0 - l->tp_flops_frac));
    double bytes = l->traffic / t + l->traffic_rep;
    double w = 0.0;

    if (flops > 0.0)
        w += flops / (cost_gemm_peak(m, p, dt) * p->compute_eff);
    if (bytes > 0.0)
        w += bytes / (dt->mem_bw * p->memory_eff);
    return w;
}

/* TP collectives of one micro-batch's forward pass (AMP eq. 3 per
 * all-reduce; Megatron: two per transformer block, Shoeybi et al. 2019
 * fig. 3; with sequence parallelism each becomes a reduce-scatter plus an
 * all-gather, the same ring bytes, Korthikanti et al. 2022 sec. 4.2.2). */
static double tp_comm(const fmt_layer *l, int tp, int mbs, double bw, double lat)
{
    if (tp <= 1 || l->tp_collectives <= 0 || bw <= 0.0)
        return 0.0;
    return (double)l->tp_collectives *
           cost_allreduce((double)mbs * l->tp_comm_bytes, tp, bw, lat);
}

/* The backward pass's collectives, each once: a block's two (the
 * conjugate g/f operators of Megatron's column- and row-parallel pairs),
 * none for the vocabulary-parallel embedding (its gradient needs no
 * exchange), one hidden-size all-reduce of the LM head's input gradient;
 * other layers as their forward. */
static double tp_comm_bwd(const fmt_model *m, const fmt_layer *l, int tp,
                          int mbs, double bw, double lat)
{
    if (tp <= 1 || bw <= 0.0)
        return 0.0;
    if (l->kind == FMT_KIND_EMBEDDING)
        return 0.0;
    if (l->kind == FMT_KIND_HEAD && m->seq > 0 && m->hidden > 0)
        return cost_allreduce((double)mbs * (double)m->seq * (double)m->hidden *
                                  (double)m->dtype_bytes, tp, bw, lat);
    return tp_comm(l, tp, mbs, bw, lat);
}

/* Collectives of the backward pass against the forward's (as
 * tp_comm_bwd): the share of the forward's per-collective synchronisation
 * that the backward pays again. */
static double bwd_collective_share(const fmt_model *m, const fmt_layer *l)
{
    if (l->tp_collectives <= 0)
        return 1.0;
    if (l->kind == FMT_KIND_EMBEDDING)
        return 0.0;
    if (l->kind == FMT_KIND_HEAD && m->seq > 0 && m->hidden > 0)
        return 1.0 / (double)l->tp_collectives;
    return 1.0;
}

/* The estimate's forward work per sample at TP degree tp and micro-batch
 * mbs, the kernels' fixed costs left out (costmodel/kernels.c): its
 * ratio between two TP degrees is the speed-up of the layer's kernels. */
static double sample_work(const fmt_model *m, const cost_params *p,
                          const fmt_device_type *dt, int layer, int tp, int mbs)
{
    cost_kernel_time k;
    double launch = (double)m->layers[layer].kernels * cost_kernel_cost(m, p);

    cost_layer_kernels(m, p, dt, layer, tp, mbs, &k);
    return k.fwd > launch && mbs > 0 ? (k.fwd - launch) / (double)mbs : 0.0;
}

/* Profile entries for (device, tp) covering layer, sorted by mbs. */
static int profile_points(const fmt_profile *prof, const char *dev, int tp,
                          int layer, const fmt_profile_entry **pts, int max)
{
    int i, n = 0, a, b;

    if (prof == NULL)
        return 0;
    for (i = 0; i < prof->nentries && n < max; i++) {
        const fmt_profile_entry *e = &prof->entries[i];
        if (e->tp != tp || strcasecmp(e->device, dev) != 0)
            continue;
        if (layer >= prof->nlayers || e->fwd == NULL || e->fwd[layer] < 0.0)
            continue;
        pts[n++] = e;
    }
    for (a = 1; a < n; a++) /* insertion sort by mbs */
        for (b = a; b > 0 && pts[b - 1]->mbs > pts[b]->mbs; b--) {
            const fmt_profile_entry *x = pts[b];
            pts[b] = pts[b - 1];
            pts[b - 1] = x;
        }
    return n;
}

/* Piecewise-linear value over measured micro-batch sizes; beyond the
 * range the nearest segment's slope (never negative) extends it. */
static double interpolate(const fmt_profile_entry **pts, int n, int layer,
                          int mbs, int bwd)
{
    int i = 0;
    double x0, x1, y0, y1, slope;

    while (i + 2 < n && pts[i + 1]->mbs < mbs)
        i++;
    x0 = (double)pts[i]->mbs;
    x1 = (double)pts[i + 1]->mbs;
    y0 = bwd ? pts[i]->bwd[layer] : pts[i]->fwd[layer];
    y1 = bwd ? pts[i + 1]->bwd[layer] : pts[i + 1]->fwd[layer];
    slope = (y1 - y0) / (x1 - x0);
    if (slope < 0.0)
        slope = 0.0;
    return y0 + slope * ((double)mbs - x0);
}

static int have_bwd(const fmt_profile_entry **pts, int n, int layer)
{
    int i;

    for (i = 0; i < n; i++)
        if (pts[i]->bwd == NULL || pts[i]->bwd[layer] < 0.0)
            return 0;
    return 1;
}

/* The work in a TP forward at micro-batch mbs: the tp 1 measurement
 * there (interpolated, or linear in the samples from one size) scaled by
 * the speed-up of the estimate's kernels, its launches kept once; what a
 * measured TP forward holds beyond it is collective and synchronisation
 * time.  *ratio becomes tp 1's measured backward / forward when the
 * profile has it. */
static double tp1_work(const fmt_model *m, const cost_params *p,
                       const fmt_device_type *dt, const fmt_profile_entry **base,
                       int nb, int layer, int tp, int mbs, double *ratio)
{
    double launch = (double)m->layers[layer].kernels * cost_kernel_cost(m, p);
    double f1, b1 = -1.0, e1, et;

    if (nb >= 2) {
        f1 = interpolate(base, nb, layer, mbs, 0);
        if (have_bwd(base, nb, layer))
            b1 = interpolate(base, nb, layer, mbs, 1);
    } else {
        double p1 = base[0]->fwd[layer], l1 = launch < p1 ? launch : p1;
        f1 = l1 + (p1 - l1) * (double)mbs / (double)base[0]->mbs;
        if (have_bwd(base, 1, layer) && p1 > 0.0)
            b1 = base[0]->bwd[layer] * f1 / p1;
    }
    if (b1 >= 0.0 && f1 > 0.0)
        *ratio = b1 / f1;
    if (launch > f1)
        launch = f1;
    e1 = sample_work(m, p, dt, layer, 1, mbs);
    et = sample_work(m, p, dt, layer, tp, mbs);
    return e1 > 0.0 && et > 0.0 ? launch + (f1 - launch) * et / e1 : f1;
}

void cost_layer_time_of(const fmt_model *m, const fmt_profile *prof,
                        const cost_params *p, const fmt_device_type *dt,
                        int layer, int tp, int mbs, double link_bw,
                        double link_lat, double home_bw, cost_layer_time *out)
{
    const fmt_layer *l = &m->layers[layer];
    const fmt_profile_entry *pts[16], *base[16];
    cost_kernel_time k;
    int n, nb, rc = cost_strategy_recompute(p, NULL);
    double b = (double)mbs, c_act, c_home, cb_act, cb_home, fwd, bwd, ratio;
    double work = 0.0, rec, sync = 0.0;

    memset(out, 0, sizeof *out);
    cost_layer_kernels(m, p, dt, layer, tp, mbs, &k);
    c_act = tp_comm(l, tp, mbs, link_bw, link_lat);
    c_home = tp_comm(l, tp, mbs, home_bw, link_lat);
    cb_act = tp_comm_bwd(m, l, tp, mbs, link_bw, link_lat);
    cb_home = tp_comm_bwd(m, l, tp, mbs, home_bw, link_lat);
    n = profile_points(prof, dt->name, tp, layer, pts, 16);
    if (n == 0) {
        /* estimate: kernels (costmodel/kernels.c) + each pass's collectives;
         * the recomputed forward repeats its collectives */
        rec = k.recompute + (k.recompute_comm ? c_act : 0.0);
        out->fwd = k.fwd + c_act;
        out->bwd = k.bwd + cb_act + rec;
        out->comm = c_act + cb_act + (k.recompute_comm ? c_act : 0.0);
        out->recompute = rec;
        out->estimated = 1;
        cost_calibration_layer(cost_calibration_of(p, prof), dt, l, tp, mbs,
                               k.fwd, 0.0, out->comm, &out->fwd, &out->bwd);
        return;
    }
    /* backward / forward compute of the estimate, for profiles without
     * backward: the measured forward's compute scaled by it, plus the
     * backward's own collectives (not the forward's scaled) */
    ratio = k.fwd > 0.0 ? k.bwd / k.fwd : p->bwd_ratio;
    if (n >= 2) {
        fwd = interpolate(pts, n, layer, mbs, 0);
        work = fwd > c_home ? fwd - c_home : 0.0;
        nb = tp == 1 || have_bwd(pts, n, layer)
                 ? 0 : profile_points(prof, dt->name, 1, layer, base, 16);
        if (nb > 0) { /* the rest of a TP forward, once per collective */
            double wt = tp1_work(m, p, dt, base, nb, layer, tp, mbs, &ratio);
            sync = work > wt ? work - wt : 0.0;
        }
        bwd = have_bwd(pts, n, layer)
                  ? interpolate(pts, n, layer, mbs, 1)
                  : ratio * (work - sync) + sync * bwd_collective_share(m, l) + cb_home;
        work -= sync;
    } else {
        /* One measured micro-batch size b0 with time p0.  The marginal
         * cost of a sample, w, is the tp=1 measurement per sample scaled
         * by the analytic TP speed-up (or the estimate when tp=1 was not
         * measured); the rest of p0 is fixed per micro-batch (launches,
         * host dispatch, collective latency), which is why larger
         * micro-batches amortise better under tensor parallelism.  The
         * backward repeats the work bwd/fwd times and the launches with
         * it, but the rest (sync) once per collective it runs: Megatron's
         * conjugate f/g operators put as many in the backward as in the
         * forward (Shoeybi et al. 2019, sec. 3). */
        double b0 = (double)pts[0]->mbs, p0 = pts[0]->fwd[layer];
        double wa1 = layer_work(m, p, dt, l, 1), wat = layer_work(m, p, dt, l, tp);
        double w = wat, c0 = tp_comm(l, tp, pts[0]->mbs, home_bw, link_lat), fixed;
        double launch = (double)l->kernels * cost_kernel_cost(m, p);

        nb = tp == 1 ? 0 : profile_points(prof, dt->name, 1, layer, base, 16);
        if (tp == 1 || wat <= 0.0) {
            /* at least the kernel launches are paid once per micro-batch */
            if (launch > p0 - c0)
                launch = p0 - c0 > 0.0 ? p0 - c0 : 0.0;
            w = (p0 - c0 - launch) / b0;
        } else if (nb > 0 && wa1 > 0.0) {
            /* the speed-up of the estimate's kernels (tile and wave
             * quantization, element-wise work replicated under TP), else
             * of the FLOP and byte roofline */
            double p1 = base[0]->fwd[layer], l1 = launch < p1 ? launch : p1;
            double e1 = sample_work(m, p, dt, layer, 1, base[0]->mbs);
            double et = sample_work(m, p, dt, layer, tp, pts[0]->mbs);

            w = (p1 - l1) / (double)base[0]->mbs *
                (e1 > 0.0 && et > 0.0 ? et / e1 : wat / wa1);
            /* a backward measured at tp 1 gives the work's bwd/fwd */
            if (base[0]->bwd != NULL && base[0]->bwd[layer] >= 0.0 && p1 > 0.0)
                ratio = base[0]->bwd[layer] / p1;
        }
        if (w < 0.0)
            w = 0.0;
        fixed = p0 - b0 * w - c0;
        if (fixed >= 0.0) {
            fwd = fixed + b * w + c_home;
            work = b * w;
            sync = fixed > launch ? fixed - launch : 0.0;
        } else {
            /* measured faster than the estimate: keep its shape, scale it */
            double scale = p0 / (b0 * w + c0);
            fwd = scale * (b * w + c_home);
            work = scale * b * w;
        }
        bwd = have_bwd(pts, 1, layer)
                  ? pts[0]->bwd[layer] * fwd / (p0 > 0.0 ? p0 : 1.0)
                  : ratio * (fwd - c_home - sync > 0.0 ? fwd - c_home - sync : 0.0) +
                        sync * bwd_collective_share(m, l) + cb_home;
    }
    /* the profile was taken on the node's own link; charge the difference */
    fwd += c_act - c_home;
    bwd += cb_act - cb_home;
    if (fwd < 0.0)
        fwd = 0.0;
    if (bwd < 0.0)
        bwd = 0.0;
    /* recomputation: the measured forward again (full), or the attention
     * core's share of it as estimated (selective) */
    rec = 0.0;
    if (l->kind == FMT_KIND_TRANSFORMER && rc == FMT_RECOMPUTE_FULL)
        rec = fwd;
    else if (k.recompute > 0.0 && k.fwd > 0.0)
        rec = k.recompute * (fwd - c_act > 0.0 ? fwd - c_act : 0.0) / k.fwd;
    bwd += rec;
    out->comm = c_act + cb_act + (l->kind == FMT_KIND_TRANSFORMER &&
                                  rc == FMT_RECOMPUTE_FULL ? c_act : 0.0);
    /* the calibrated extra is work: its backward is the work's ratio,
     * which bwd / fwd no longer gives once sync is in both */
    cost_calibration_layer(cost_calibration_of(p, prof), dt, l, tp, mbs, work,
                           sync > 0.0 ? ratio : 0.0, out->comm, &fwd, &bwd);
    out->fwd = fwd;
    out->bwd = bwd;
    out->recompute = rec;
    if (out->comm > fwd + bwd)
        out->comm = fwd + bwd;
}
