/* costmodel/evaluate.c: per-layer times, memory and the iteration time
 * of a strategy (AMP section 3.4, eqs. 3-5), with every stage timed on
 * its own slowest device and every transfer on the link between the two
 * devices that the placement puts there. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "costmodel.h"
#include "internal.h"

void cost_params_init(cost_params *p)
{
    memset(p, 0, sizeof *p);
    p->compute_eff = 0.5;
    p->memory_eff = 0.7;
    p->kernel_overhead = 10e-6;
    p->net_eff = 0.5;
    p->intra_eff = 1.0;
    p->bwd_ratio = 2.0;
    p->bwd_traffic = 1.5;
    p->optimizer_bytes = 32.0;
    p->schedule = FMT_SCHED_1F1B;
    p->state_bytes = 0.0; /* from the precision (costmodel/memory.c) */
    p->zero_stage = 0;
    p->recompute = 0;
    p->mem_reserve = 1073741824.0; /* docs/cost-model.md, "Memory" */
}

/* Settable fields: name, offset, is-integer, range. */
typedef struct param_field {
    const char *name;
    size_t off;
    int integer;
    double lo, hi;
} param_field;

#define PF(n, i, lo, hi) {#n, offsetof(cost_params, n), i, lo, hi}
static const param_field param_fields[] = {
    PF(compute_eff, 0, 1e-6, 1.0),   PF(memory_eff, 0, 1e-6, 1.0),
    PF(kernel_overhead, 0, 0.0, 1.0), PF(net_eff, 0, 1e-6, 1.0),
    PF(intra_eff, 0, 1e-6, 1.0),     PF(bwd_ratio, 0, 0.0, 100.0),
    PF(bwd_traffic, 0, 0.0, 100.0),
    PF(optimizer_bytes, 0, 0.0, 1e4), PF(schedule, 1, 0, 1),
    PF(state_bytes, 0, 0.0, 1e3),    PF(zero_stage, 1, 0, 3),
    PF(recompute, 1, 0, 1),          PF(mem_reserve, 0, 0.0, 1e15),
    PF(fidelity, 1, 0, 1),           PF(overlap_dp, 1, 0, 1),
    PF(frozen_layers, 1, 0, 1e9),
};
#undef PF

const char *cost_params_name(int i)
{
    if (i < 0 || (size_t)i >= sizeof param_fields / sizeof param_fields[0])
        return NULL;
    return param_fields[i].name;
}

int cost_params_set(cost_params *p, const char *name, double value,
                    util_error *err)
{
    size_t i;

    for (i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
        const param_field *f = &param_fields[i];
        char *base = (char *)p + f->off;
        if (strcmp(f->name, name) != 0)
            continue;
        if (!(value >= f->lo && value <= f->hi) ||
            (f->integer && value != floor(value)))
            return util_error_set(err, UTIL_EINVAL, NULL, name,
                                  "expected %s in %g..%g, got %g",
                                  f->integer ? "an integer" : "a number", f->lo,
                                  f->hi, value);
        if (f->integer)
            *(int *)(void *)base = (int)value;
        else
            *(double *)(void *)base = value;
        return UTIL_OK;
    }
    return util_error_set(err, UTIL_EINVAL, NULL, name,
                          "unknown cost-model parameter '%s'", name);
}

int cost_params_get(const cost_params *p, const char *name, double *value)
{
    size_t i;

    for (i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
        const param_field *f = &param_fields[i];
        const char *base = (const char *)p + f->off;
        if (strcmp(f->name, name) != 0)
            continue;
        if (f->integer)
            *value = (double)*(const int *)(const void *)base;
        else
            *value = *(const double *)(const void *)base;
        return UTIL_OK;
    }
    return UTIL_ENOTFOUND;
}

/* AMP eq. 3: T = 2 (n - 1) M / (n B), plus 2 (n - 1) latency-bound steps. */
double cost_allreduce(double bytes, int n, double bw, double lat)
{
    double nn = (double)n;

    if (n <= 1 || bytes <= 0.0)
        return 0.0;
    return 2.0 * (nn - 1.0) * lat + 2.0 * (nn - 1.0) * bytes / (nn * bw);
}

static double peak_flops(const fmt_model *m, const fmt_device_type *dt)
{
    if (m->dtype_bytes >= 4)
        return dt->flops_fp16 / 4.0; /* fp32: roughly a quarter of fp16 tensor peak */
    if (m->bf16 && dt->flops_bf16 > 0.0)
        return dt->flops_bf16;
    return dt->flops_fp16;
}

/* Per-sample forward work of a layer at TP degree tp, from FLOPs and
 * memory traffic at the device's peak times the efficiency factors
 * (roofline sum: compute-bound GEMMs plus bandwidth-bound element-wise). */
static double layer_work(const fmt_model *m, const cost_params *p,
                         const fmt_device_type *dt, const fmt_layer *l, int tp)
{
    double t = (double)tp;
    double flops = l->fwd_flops * (l->tp_flops_frac / t + (1.0 - l->tp_flops_frac));
    double bytes = l->traffic / t + l->traffic_rep;
    double w = 0.0;

    if (flops > 0.0)
        w += flops / (peak_flops(m, dt) * p->compute_eff);
    if (bytes > 0.0)
        w += bytes / (dt->mem_bw * p->memory_eff);
    return w;
}

/* Backward / forward time of a layer: its GEMMs do twice the forward
 * FLOPs (input and weight gradients), its element-wise kernels move
 * about bwd_traffic times the forward bytes (softmax, GeLU, layer-norm and
 * dropout backward read the saved input and the incoming gradient). */
static double bwd_ratio(const fmt_model *m, const cost_params *p,
                        const fmt_device_type *dt, const fmt_layer *l, int tp)
{
    double t = (double)tp;
    double flops = l->fwd_flops * (l->tp_flops_frac / t + (1.0 - l->tp_flops_frac));
    double bytes = l->traffic / t + l->traffic_rep;
    double g = flops > 0.0 ? flops / (peak_flops(m, dt) * p->compute_eff) : 0.0;
    double mu = bytes > 0.0 ? bytes / (dt->mem_bw * p->memory_eff) : 0.0;

    if (g + mu <= 0.0)
        return p->bwd_ratio;
    return (2.0 * g + p->bwd_traffic * mu) / (g + mu);
}

/* TP all-reduces of one micro-batch's forward pass (AMP eq. 3 per
 * collective; Megatron: two per transformer block). */
static double tp_comm(const fmt_layer *l, int tp, int mbs, double bw, double lat)
{
    if (tp <= 1 || l->tp_collectives <= 0 || bw <= 0.0)
        return 0.0;
    return (double)l->tp_collectives *
           cost_allreduce((double)mbs * l->tp_comm_bytes, tp, bw, lat);
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

void cost_layer_time_of(const fmt_model *m, const fmt_profile *prof,
                        const cost_params *p, const fmt_device_type *dt,
                        int layer, int tp, int mbs, double link_bw,
                        double link_lat, double home_bw, cost_layer_time *out)
{
    const fmt_layer *l = &m->layers[layer];
    const fmt_profile_entry *pts[16], *base[16];
    int n, nb;
    double b = (double)mbs, c_act, c_home, fwd, bwd, ratio, work = 0.0;

    memset(out, 0, sizeof *out);
    ratio = bwd_ratio(m, p, dt, l, tp);
    c_act = tp_comm(l, tp, mbs, link_bw, link_lat);
    c_home = tp_comm(l, tp, mbs, home_bw, link_lat);
    n = profile_points(prof, dt->name, tp, layer, pts, 16);
    if (n == 0) {
        /* estimate: host launch cost + work per sample + TP all-reduces */
        work = b * layer_work(m, p, dt, l, tp);
        fwd = (double)l->kernels * p->kernel_overhead + work + c_act;
        out->fwd = fwd;
        out->bwd = ratio * fwd;
        out->comm = 2.0 * c_act;
        out->estimated = 1;
        cost_calibration_layer(cost_calibration_of(p, prof), dt, l, tp, mbs, work,
                               out->comm, &out->fwd, &out->bwd); /* issue 3 */
        return;
    }
    if (n >= 2) {
        fwd = interpolate(pts, n, layer, mbs, 0);
        work = fwd > c_home ? fwd - c_home : 0.0;
        bwd = have_bwd(pts, n, layer) ? interpolate(pts, n, layer, mbs, 1)
                                      : ratio * fwd;
    } else {
        /* One measured micro-batch size b0 with time p0.  The marginal
         * cost of a sample, w, is the tp=1 measurement per sample scaled
         * by the analytic TP speed-up (or the estimate when tp=1 was not
         * measured); the rest of p0 is fixed per micro-batch (launches,
         * host dispatch, collective latency), which is why larger
         * micro-batches amortise better under tensor parallelism. */
        double b0 = (double)pts[0]->mbs, p0 = pts[0]->fwd[layer];
        double wa1 = layer_work(m, p, dt, l, 1), wat = layer_work(m, p, dt, l, tp);
        double w = wat, c0 = tp_comm(l, tp, pts[0]->mbs, home_bw, link_lat), fixed;
        double launch = (double)l->kernels * p->kernel_overhead;

        nb = tp == 1 ? 0 : profile_points(prof, dt->name, 1, layer, base, 16);
        if (tp == 1 || wat <= 0.0) {
            /* at least the kernel launches are paid once per micro-batch */
            if (launch > p0 - c0)
                launch = p0 - c0 > 0.0 ? p0 - c0 : 0.0;
            w = (p0 - c0 - launch) / b0;
        } else if (nb > 0 && wa1 > 0.0) {
            double p1 = base[0]->fwd[layer], l1 = launch < p1 ? launch : p1;
            w = (p1 - l1) / (double)base[0]->mbs * wat / wa1;
        }
        if (w < 0.0)
            w = 0.0;
        fixed = p0 - b0 * w - c0;
        if (fixed >= 0.0) {
            fwd = fixed + b * w + c_home;
            work = b * w;
        } else {
            /* measured faster than the estimate: keep its shape, scale it */
            double scale = p0 / (b0 * w + c0);
            fwd = scale * (b * w + c_home);
            work = scale * b * w;
        }
        bwd = have_bwd(pts, 1, layer) ? pts[0]->bwd[layer] * fwd / (p0 > 0.0 ? p0 : 1.0)
                                      : ratio * fwd;
    }
    /* the profile was taken on the node's own link; charge the difference */
    fwd += c_act - c_home;
    if (fwd < 0.0)
        fwd = 0.0;
    cost_calibration_layer(cost_calibration_of(p, prof), dt, l, tp, mbs, work,
                           2.0 * c_act, &fwd, &bwd); /* issue 3 */
    out->fwd = fwd;
    out->bwd = bwd;
    out->comm = 2.0 * c_act;
    if (out->comm > fwd + bwd)
        out->comm = fwd + bwd;
}

/* cost_inflight and cost_stage_memory: costmodel/memory.c */

/* ---- strategy evaluation --------------------------------------------- */

double cost_flow_bw(const fmt_cluster *c, const cost_params *p, int da,
                    int db, int share_a, int share_b, double *lat)
{
    double bw, nic, eff;
    int na = c->device_node[da], nb = c->device_node[db];

    fmt_link_between(c, da, db, &bw, lat);
    if (p->calib != NULL) /* issue 3: calibrated latency and link class */
        *lat += p->calib->msg_latency;
    eff = cost_calibration_eff(p, fmt_link_class_of(c, da, db));
    if (na == nb)
        return bw * eff;
    bw *= eff;
    nic = c->nodes[na].nic_bw * eff / (double)(share_a > 0 ? share_a : 1);
    if (nic < bw)
        bw = nic;
    nic = c->nodes[nb].nic_bw * eff / (double)(share_b > 0 ? share_b : 1);
    if (nic < bw)
        bw = nic;
    return bw;
}

void cost_tp_ring(const fmt_cluster *c, const cost_params *p,
                  const fmt_strategy *s, int stage, int dpi, double *bw,
                  double *lat)
{
    int k;

    *bw = INFINITY;
    *lat = 0.0;
    for (k = 0; k < s->tp && s->tp > 1; k++) {
        double b, l;
        int a = fmt_rank_device(s, stage, dpi, k);
        int z = fmt_rank_device(s, stage, dpi, (k + 1) % s->tp);
        b = cost_flow_bw(c, p, a, z, 1, 1, &l);
        if (b < *bw)
            *bw = b;
        if (l > *lat)
            *lat = l;
    }
}

typedef struct eval_ctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_profile *prof;
    const cost_params *p;
    const fmt_strategy *s;
    int *out_flows;   /* per node: cross-node flows leaving (scratch) */
    int *in_flows;
} eval_ctx;

/* Time of stage j on one device for one micro-batch: total, TP part and
 * (fwd != NULL) the forward part. */
static void stage_time(const eval_ctx *x, int stage, int dev, double bw,
                       double lat, double *total, double *comm, int *est,
                       int *meas, double *fwd)
{
    const fmt_device_type *dt = fmt_device(x->c, dev);
    const fmt_node *node = &x->c->nodes[x->c->device_node[dev]];
    cost_layer_time lt;
    int l;

    *total = 0.0;
    *comm = 0.0;
    if (fwd != NULL)
        *fwd = 0.0;
    for (l = x->s->bounds[stage]; l < x->s->bounds[stage + 1]; l++) {
        cost_layer_time_of(x->m, x->prof, x->p, dt, l, x->s->tp, x->s->mbs, bw,
                           lat, node->intra_bw * x->p->intra_eff, &lt);
        cost_rank_layer_adjust(x->m, x->p, dt, x->s, dev, l, &lt); /* issue 6 */
        *total += lt.fwd + lt.bwd;
        *comm += lt.comm;
        if (fwd != NULL)
            *fwd += lt.fwd;
        if (lt.estimated)
            (*est)++;
        else
            (*meas)++;
    }
}

/* Count cross-node flows per node for the transfers between stage j and
 * j + 1 of every replica and TP rank (they run at the same time). */
static void count_cut_flows(const fmt_cluster *c, const fmt_strategy *s,
                            int j, int *out_flows, int *in_flows)
{
    int d, k;

    memset(out_flows, 0, (size_t)c->nnodes * sizeof *out_flows);
    memset(in_flows, 0, (size_t)c->nnodes * sizeof *in_flows);
    for (d = 0; d < s->dp; d++)
        for (k = 0; k < s->tp; k++) {
            int a = c->device_node[fmt_rank_device(s, j, d, k)];
            int b = c->device_node[fmt_rank_device(s, j + 1, d, k)];
            if (a != b) {
                out_flows[a]++;
                in_flows[b]++;
            }
        }
}

/* Worst link of the cut between stage j and j + 1 for replicas [d0, d1). */
static void cut_link(const fmt_cluster *c, const cost_params *p,
                     const fmt_strategy *s, int j, int d0, int d1,
                     const int *out_flows, const int *in_flows, double *bw,
                     double *lat)
{
    int d, k;

    *bw = INFINITY;
    *lat = 0.0;
    for (d = d0; d < d1; d++)
        for (k = 0; k < s->tp; k++) {
            int a = fmt_rank_device(s, j, d, k), b = fmt_rank_device(s, j + 1, d, k);
            double l, e = cost_flow_bw(c, p, a, b,
                                       out_flows ? out_flows[c->device_node[a]] : 1,
                                       in_flows ? in_flows[c->device_node[b]] : 1, &l);
            if (e < *bw)
                *bw = e;
            if (l > *lat)
                *lat = l;
        }
}

void cost_cut_link(const fmt_cluster *c, const cost_params *p,
                   const fmt_strategy *s, int j, double *bw, double *lat)
{
    int *flows = calloc((size_t)c->nnodes * 2, sizeof *flows);

    if (flows == NULL) { /* no scratch memory: links without NIC sharing */
        cut_link(c, p, s, j, 0, s->dp, NULL, NULL, bw, lat);
        return;
    }
    count_cut_flows(c, s, j, flows, flows + c->nnodes);
    cut_link(c, p, s, j, 0, s->dp, flows, flows + c->nnodes, bw, lat);
    free(flows);
}

/* Activation forward + gradient backward between stage j and j + 1 of
 * replica d: every TP rank sends the full activation (Megatron without
 * scatter/gather), P2P time = latency + bytes / bandwidth. */
static double p2p_time(const eval_ctx *x, int j, int d)
{
    const fmt_strategy *s = x->s;
    double bytes = (double)s->mbs * x->m->layers[s->bounds[j + 1] - 1].out_bytes;
    double bw, lat;

    cut_link(x->c, x->p, s, j, d, d + 1, x->out_flows, x->in_flows, &bw, &lat);
    return 2.0 * (lat + bytes / bw);
}

/* Gradient bytes of stage j's layers on one device. */
static double stage_grad_bytes(const eval_ctx *x, int j)
{
    double params = 0.0;
    int l;

    for (l = x->s->bounds[j]; l < x->s->bounds[j + 1]; l++)
        if (l >= x->p->frozen_layers) /* issue 6: frozen layers have no gradients */
            params += x->m->layers[l].params;
    return params / (double)x->s->tp * (double)x->m->dtype_bytes;
}

/* AMP eq. 4, second term: the slowest DP all-reduce over all groups
 * (stage, tp index), of stage `only` when >= 0; groups that leave a node
 * share its NIC. */
static double dp_sync(const eval_ctx *x, int only)
{
    const fmt_strategy *s = x->s;
    const fmt_cluster *c = x->c;
    double worst = 0.0;
    int j, k, d, n;

    if (s->dp <= 1)
        return 0.0;
    memset(x->out_flows, 0, (size_t)c->nnodes * sizeof *x->out_flows);
    for (j = 0; j < s->pp; j++)
        for (k = 0; k < s->tp; k++) {
            /* a ring that spans nodes enters and leaves each of them once */
            int first = c->device_node[fmt_rank_device(s, j, 0, k)], multi = 0;
            for (d = 1; d < s->dp; d++)
                if (c->device_node[fmt_rank_device(s, j, d, k)] != first)
                    multi = 1;
            if (!multi)
                continue;
            for (n = 0; n < c->nnodes; n++)
                for (d = 0; d < s->dp; d++)
                    if (c->device_node[fmt_rank_device(s, j, d, k)] == n) {
                        x->out_flows[n]++;
                        break;
                    }
        }
    for (j = 0; j < s->pp; j++) {
        double bytes = stage_grad_bytes(x, j);
        if (only >= 0 && j != only)
            continue;
        for (k = 0; k < s->tp; k++) {
            double bw = INFINITY, lat = 0.0, t;
            for (d = 0; d < s->dp; d++) {
                int a = fmt_rank_device(s, j, d, k);
                int b = fmt_rank_device(s, j, (d + 1) % s->dp, k);
                int na = c->device_node[a], nb = c->device_node[b];
                double l, e = cost_flow_bw(c, x->p, a, b, x->out_flows[na],
                                     x->out_flows[nb], &l);
                if (e < bw)
                    bw = e;
                if (l > lat)
                    lat = l;
            }
            t = cost_allreduce(bytes, s->dp, bw, lat);
            if (t > worst)
                worst = t;
        }
    }
    return worst;
}

/* Tied weights (input embedding and LM head) held by two stages are
 * all-reduced between the holders after the backward pass. */
static double tied_sync(const eval_ctx *x)
{
    const fmt_strategy *s = x->s;
    const fmt_model *m = x->m;
    double worst = 0.0;
    int l, j, first_stage = -1, last_stage = -1, group = 0, d, k;
    double bytes = 0.0;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].tied_group > 0) {
            group = m->layers[l].tied_group;
            break;
        }
    if (group == 0)
        return 0.0;
    for (j = 0; j < s->pp; j++)
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
            if (m->layers[l].tied_group == group) {
                if (first_stage < 0) {
                    first_stage = j;
                    bytes = m->layers[l].params / (double)s->tp * (double)m->dtype_bytes;
                }
                last_stage = j;
            }
    if (first_stage < 0 || first_stage == last_stage)
        return 0.0;
    memset(x->out_flows, 0, (size_t)x->c->nnodes * sizeof *x->out_flows);
    for (d = 0; d < s->dp; d++)
        for (k = 0; k < s->tp; k++) {
            int a = x->c->device_node[fmt_rank_device(s, first_stage, d, k)];
            int b = x->c->device_node[fmt_rank_device(s, last_stage, d, k)];
            if (a != b) {
                x->out_flows[a]++;
                x->out_flows[b]++;
            }
        }
    for (d = 0; d < s->dp; d++)
        for (k = 0; k < s->tp; k++) {
            int a = fmt_rank_device(s, first_stage, d, k);
            int b = fmt_rank_device(s, last_stage, d, k);
            double lat, bw = cost_flow_bw(x->c, x->p, a, b,
                                    x->out_flows[x->c->device_node[a]],
                                    x->out_flows[x->c->device_node[b]], &lat);
            double t = cost_allreduce(bytes, 2, bw, lat);
            if (t > worst)
                worst = t;
        }
    return worst;
}

/* Optimizer step: bandwidth-bound pass over the parameters a device owns
 * (of stage `only` when >= 0). */
static double optimizer_time(const eval_ctx *x, int only)
{
    const fmt_strategy *s = x->s;
    double worst = 0.0;
    int j, d, k;

    for (j = 0; j < s->pp; j++) {
        double params = stage_grad_bytes(x, j) / (double)x->m->dtype_bytes;
        if (only >= 0 && j != only)
            continue;
        if (x->p->zero_stage >= 1)
            params /= (double)s->dp;
        for (d = 0; d < s->dp; d++)
            for (k = 0; k < s->tp; k++) {
                const fmt_device_type *dt = fmt_device(x->c, fmt_rank_device(s, j, d, k));
                double t = params * x->p->optimizer_bytes / (dt->mem_bw * x->p->memory_eff);
                if (t > worst)
                    worst = t;
            }
    }
    return worst;
}

int cost_evaluate(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *p,
                  const fmt_strategy *s, cost_result *out, util_error *err)
{
    eval_ctx x;
    cost_params ps = *p; /* the strategy's own schedule decides memory */
    int nr = s->tp * s->dp * s->pp, j, d, k, rc = UTIL_OK;
    double *st = NULL, *sc = NULL, *e = NULL, best_tpp = -1.0;

    memset(out, 0, sizeof *out);
    memset(&x, 0, sizeof x);
    ps.schedule = s->schedule;
    ps.calib = cost_calibration_of(p, prof); /* issue 3 */
    p = &ps;
    x.c = c;
    x.m = m;
    x.prof = prof;
    x.p = p;
    x.s = s;
    out->pp = s->pp;
    out->nranks = nr;
    out->stage_s = calloc((size_t)s->pp, sizeof *out->stage_s);
    out->p2p_s = calloc((size_t)s->pp, sizeof *out->p2p_s);
    out->mem_bytes = calloc((size_t)nr, sizeof *out->mem_bytes);
    out->mem_cap = calloc((size_t)nr, sizeof *out->mem_cap);
    st = calloc((size_t)s->pp, sizeof *st);
    sc = calloc((size_t)s->pp, sizeof *sc);
    e = calloc((size_t)s->pp, sizeof *e);
    x.out_flows = calloc((size_t)c->nnodes, sizeof *x.out_flows);
    x.in_flows = calloc((size_t)c->nnodes, sizeof *x.in_flows);
    if (!out->stage_s || !out->p2p_s || !out->mem_bytes || !out->mem_cap || !st ||
        !sc || !e || !x.out_flows || !x.in_flows) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }

    /* AMP eq. 5 per replica, eq. 4 max over replicas */
    for (d = 0; d < s->dp; d++) {
        double sum = 0.0, max = 0.0, esum = 0.0, tpp;
        int arg = 0;
        for (j = 0; j < s->pp; j++) {
            double bw, lat;
            st[j] = 0.0;
            sc[j] = 0.0;
            cost_tp_ring(c, p, s, j, d, &bw, &lat);
            for (k = 0; k < s->tp; k++) {
                double t, tc;
                int est = 0, meas = 0;
                stage_time(&x, j, fmt_rank_device(s, j, d, k), bw, lat, &t, &tc,
                           &est, &meas, NULL);
                out->estimated += est;
                out->measured += meas;
                if (t > st[j]) { /* a stage runs at its slowest device */
                    st[j] = t;
                    sc[j] = tc;
                }
            }
            sum += st[j];
            if (st[j] > max) {
                max = st[j];
                arg = j;
            }
        }
        for (j = 0; j + 1 < s->pp; j++) {
            count_cut_flows(c, s, j, x.out_flows, x.in_flows);
            e[j] = p2p_time(&x, j, d);
            esum += e[j];
        }
        /* T_pp = (gas - 1) max t_i + sum t_i + sum e_i (AMP eq. 5) */
        tpp = (double)(s->gas - 1) * max + sum + esum;
        if (tpp > best_tpp) {
            best_tpp = tpp;
            out->bd.compute = (double)s->gas * (st[arg] - sc[arg]);
            out->bd.tp_comm = (double)s->gas * sc[arg];
            out->bd.bubble = sum - max;
            out->bd.p2p = esum;
            for (j = 0; j < s->pp; j++) {
                if (st[j] > out->stage_s[j])
                    out->stage_s[j] = st[j];
                if (j + 1 < s->pp && e[j] > out->p2p_s[j])
                    out->p2p_s[j] = e[j];
            }
        }
    }
    out->bd.dp_comm = dp_sync(&x, -1) + tied_sync(&x);
    out->bd.optimizer = optimizer_time(&x, -1);
    out->bd.total = out->bd.compute + out->bd.tp_comm + out->bd.bubble +
                    out->bd.p2p + out->bd.dp_comm + out->bd.optimizer;
    out->iter_s = out->bd.total;
    if (p->fidelity == COST_FIDELITY_SIMULATE) { /* docs/simulator.md */
        rc = cost_sim_refine(c, m, prof, p, s, out, err);
        if (rc != UTIL_OK)
            goto done;
    }
    if (p->calib != NULL) { /* issue 3: framework overhead, with the optimizer step */
        out->bd.optimizer += p->calib->iter_overhead;
        out->bd.total += p->calib->iter_overhead;
        out->iter_s = out->bd.total;
    }

    /* memory of every rank */
    out->fits = 1;
    out->worst_rank = 0;
    {
        double worst = INFINITY;
        int r;
        for (r = 0; r < nr; r++) {
            const fmt_device_type *dt = fmt_device(c, s->ranks[r]);
            cost_memory mem; /* costmodel/memory.c */
            cost_rank_stage_memory(m, p, s, r, &mem);
            out->mem_bytes[r] = mem.total;
            out->mem_bytes[r] = cost_rank_memory(m, p, s, r, out->mem_bytes[r]); /* issue 6 */
            out->mem_cap[r] = dt->mem_bytes;
            if (out->mem_cap[r] - out->mem_bytes[r] < worst) {
                worst = out->mem_cap[r] - out->mem_bytes[r];
                out->worst_rank = r;
            }
            if (out->mem_bytes[r] > out->mem_cap[r])
                out->fits = 0;
        }
    }
    /* structural rule, not memory: a stage without parameters cannot run */
    out->empty_stage = cost_empty_stage(m, s);
done:
    free(st);
    free(sc);
    free(e);
    free(x.out_flows);
    free(x.in_flows);
    if (rc != UTIL_OK)
        cost_result_free(out);
    return rc;
}

/* ---- per-stage pieces for the simulator (costmodel/internal.h) ------- */

/* eval_ctx with NIC scratch; 0 when out of memory. */
static int ctx_open(eval_ctx *x, const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *p,
                    const fmt_strategy *s)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->m = m;
    x->prof = prof;
    x->p = p;
    x->s = s;
    x->out_flows = calloc((size_t)c->nnodes, sizeof *x->out_flows);
    x->in_flows = calloc((size_t)c->nnodes, sizeof *x->in_flows);
    return x->out_flows != NULL && x->in_flows != NULL;
}

static void ctx_close(eval_ctx *x)
{
    free(x->out_flows);
    free(x->in_flows);
    x->out_flows = x->in_flows = NULL;
}

void cost_stage_fwd_bwd(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *p,
                        const fmt_strategy *s, int j, int dpi, double *fwd,
                        double *bwd, int *est, int *meas)
{
    eval_ctx x;
    double bw, lat, best = -1.0;
    int k, e = 0, me = 0;

    memset(&x, 0, sizeof x); /* stage_time needs no scratch */
    x.c = c;
    x.m = m;
    x.prof = prof;
    x.p = p;
    x.s = s;
    *fwd = *bwd = 0.0;
    cost_tp_ring(c, p, s, j, dpi, &bw, &lat);
    for (k = 0; k < s->tp; k++) {
        double t, tc, f;
        stage_time(&x, j, fmt_rank_device(s, j, dpi, k), bw, lat, &t, &tc, &e,
                   &me, &f);
        if (t > best) { /* the slowest device, as in cost_evaluate */
            best = t;
            *fwd = f;
            *bwd = t - f;
        }
    }
    if (est != NULL)
        *est = e;
    if (meas != NULL)
        *meas = me;
}

double cost_p2p_oneway(const fmt_cluster *c, const fmt_model *m,
                       const cost_params *p, const fmt_strategy *s, int j,
                       int dpi)
{
    eval_ctx x;
    double t;

    if (ctx_open(&x, c, m, NULL, p, s))
        count_cut_flows(c, s, j, x.out_flows, x.in_flows);
    else /* no scratch memory: links without NIC sharing */
        ctx_close(&x);
    t = p2p_time(&x, j, dpi) / 2.0; /* p2p_time is both directions */
    ctx_close(&x);
    return t;
}

double cost_dp_sync_stage(const fmt_cluster *c, const fmt_model *m,
                          const cost_params *p, const fmt_strategy *s, int j)
{
    eval_ctx x;
    double t = -1.0;

    if (ctx_open(&x, c, m, NULL, p, s))
        t = dp_sync(&x, j);
    ctx_close(&x);
    return t;
}

double cost_tied_sync_time(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *p, const fmt_strategy *s)
{
    eval_ctx x;
    double t = -1.0;

    if (ctx_open(&x, c, m, NULL, p, s))
        t = tied_sync(&x);
    ctx_close(&x);
    return t;
}

double cost_optimizer_stage(const fmt_cluster *c, const fmt_model *m,
                            const cost_params *p, const fmt_strategy *s, int j)
{
    eval_ctx x;

    memset(&x, 0, sizeof x); /* optimizer_time needs no scratch */
    x.c = c;
    x.m = m;
    x.p = p;
    x.s = s;
    return optimizer_time(&x, j);
}

void cost_result_free(cost_result *r)
{
    if (r == NULL)
        return;
    free(r->stage_s);
    free(r->p2p_s);
    free(r->mem_bytes);
    free(r->mem_cap);
    memset(r, 0, sizeof *r);
}
