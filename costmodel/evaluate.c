/* costmodel/evaluate.c: the iteration time and memory of a strategy
 * (AMP section 3.4, eqs. 3-5), with every stage timed on its own slowest
 * device and every transfer on the link between the two devices that
 * the placement puts there; and the per-stage pieces of it that the
 * simulator uses (costmodel/internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "internal.h"

/* cost_inflight and cost_stage_memory: costmodel/memory.c */

typedef struct eval_ctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_profile *prof;
    const cost_params *p;
    const fmt_strategy *s;
    int *out_flows;   /* per node: cross-node flows leaving (scratch) */
    int *in_flows;
    int ov_tp;        /* 1: the TP groups overlap their collectives with
                         their GEMMs (costmodel/overlap.c) */
} eval_ctx;

/* Time of stage j on device dev, of rank, for one micro-batch: total, TP
 * part and (fwd != NULL) the forward part. */
static void stage_time(const eval_ctx *x, int stage, int dev, int rank,
                       double bw, double lat, double *total, double *comm,
                       int *est, int *meas, double *fwd, double *rec)
{
    const fmt_device_type *dt = fmt_device(x->c, dev);
    const fmt_node *node = &x->c->nodes[x->c->device_node[dev]];
    cost_layer_time lt;
    int l;

    *total = 0.0;
    *comm = 0.0;
    if (fwd != NULL)
        *fwd = 0.0;
    if (rec != NULL)
        *rec = 0.0;
    for (l = x->s->bounds[stage]; l < x->s->bounds[stage + 1]; l++) {
        cost_layer_time_of(x->m, x->prof, x->p, dt, l, x->s->tp, x->s->mbs, bw,
                           lat, node->intra_bw * cost_link_eff(x->p, FMT_LINK_INTRA, node->intra_bw), &lt);
        cost_rank_layer_adjust(x->m, x->p, dt, x->s, rank, l, &lt);
        if (x->ov_tp)
            cost_overlap_tp_layer(x->m, x->p, dt, l, x->s->tp, x->s->mbs, &lt);
        *total += lt.fwd + lt.bwd;
        *comm += lt.comm;
        if (fwd != NULL)
            *fwd += lt.fwd;
        if (rec != NULL)
            *rec += lt.recompute;
        if (lt.estimated)
            (*est)++;
        else
            (*meas)++;
    }
}

/* Stage times of identical devices (type, TP ring, node bandwidth) are
 * equal unless ranks carry shards or slowdowns: each stage remembers a
 * few. */
#define EVAL_MEMO 4
typedef struct eval_memo {
    const fmt_device_type *dt;  /* NULL = empty */
    double bw, lat, hbw, t, tc, tf, tr;
    int est, meas, ov;
} eval_memo;

static void stage_time_shared(const eval_ctx *x, eval_memo *memo, int stage,
                              int dev, int rank, double bw, double lat,
                              double *total, double *comm, int *est, int *meas,
                              double *fwd, double *rec)
{
    const fmt_device_type *dt = fmt_device(x->c, dev);
    double hbw = x->c->nodes[x->c->device_node[dev]].intra_bw;
    int i;

    if (memo == NULL) {
        stage_time(x, stage, dev, rank, bw, lat, total, comm, est, meas, fwd, rec);
        return;
    }
    for (i = 0; i < EVAL_MEMO && memo[i].dt != NULL; i++)
        if (memo[i].dt == dt && memo[i].bw == bw && memo[i].lat == lat &&
            memo[i].hbw == hbw && memo[i].ov == x->ov_tp) {
            *total = memo[i].t;
            *comm = memo[i].tc;
            *fwd = memo[i].tf;
            *rec = memo[i].tr;
            *est += memo[i].est;
            *meas += memo[i].meas;
            return;
        }
    stage_time(x, stage, dev, rank, bw, lat, total, comm, est, meas, fwd, rec);
    if (i == EVAL_MEMO)
        i = EVAL_MEMO - 1; /* full: the last slot turns over */
    memo[i].dt = dt;
    memo[i].bw = bw;
    memo[i].lat = lat;
    memo[i].hbw = hbw;
    memo[i].ov = x->ov_tp;
    memo[i].t = *total;
    memo[i].tc = *comm;
    memo[i].tf = *fwd;
    memo[i].tr = *rec;
    memo[i].est = *est;
    memo[i].meas = *meas;
}

/* Activation forward + gradient backward between stage j and j + 1 of
 * replica d, P2P time = latency + bytes / bandwidth each way.  With
 * TP > 1 and p2p_scatter, each TP rank sends 1/tp of the activation over
 * its own link and the receiving stage all-gathers it over its TP ring
 * (Narayanan et al. SC'21, sec. 4.1); with sequence parallelism the
 * activation is already split, so there is nothing to gather. */
static double p2p_time(const eval_ctx *x, int j, int d)
{
    const fmt_strategy *s = x->s;
    double bytes = (double)s->mbs * x->m->layers[s->bounds[j + 1] - 1].out_bytes;
    double bw, lat, gather = 0.0;

    cost_cut_link_range(x->c, x->p, s, j, d, d + 1, x->out_flows, x->in_flows,
                        &bw, &lat);
    if (s->tp > 1 && (x->p->p2p_scatter || x->p->sp)) {
        double t = (double)s->tp, gbw, glat;
        bytes /= t;
        if (!x->p->sp) { /* ring all-gather: (t-1) steps of bytes/t */
            cost_tp_ring(x->c, x->p, s, j + 1, d, &gbw, &glat);
            if (gbw > 0.0 && gbw < INFINITY)
                gather = (t - 1.0) * (glat + bytes / gbw);
        }
    }
    return 2.0 * (lat + bytes / bw + gather);
}

/* Gradient bytes of stage j's layers on one device. */
static double stage_grad_bytes(const eval_ctx *x, int j)
{
    double params = 0.0;
    int l;

    for (l = x->s->bounds[j]; l < x->s->bounds[j + 1]; l++)
        if (l >= x->p->frozen_layers) /* frozen layers have no gradients */
            params += x->m->layers[l].params;
    return params / (double)x->s->tp * (double)x->m->dtype_bytes;
}

/* AMP eq. 4, second term: the slowest DP all-reduce over all groups
 * (stage, tp index), of stage `only` when >= 0; groups that leave a node
 * share its NIC.  ZeRO / the distributed optimizer reduce-scatter the
 * gradients and all-gather the updated weights: the same ring bytes as
 * the all-reduce (Rajbhandari et al. 2020, sec. 7); ZeRO-3 also
 * all-gathers the weights for every micro-batch's forward and backward.
 * per_stage (may be NULL, pp entries) gets each stage's time. */
static double dp_sync(const eval_ctx *x, int only, double *per_stage)
{
    const fmt_strategy *s = x->s;
    const fmt_cluster *c = x->c;
    double worst = 0.0;
    int j, k, d, n, *stamp;

    if (s->dp <= 1)
        return 0.0;
    stamp = calloc((size_t)c->nnodes, sizeof *stamp); /* NULL: the slow count */
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
            if (stamp != NULL) { /* each node of the ring once: O(dp) */
                for (d = 0; d < s->dp; d++) {
                    n = c->device_node[fmt_rank_device(s, j, d, k)];
                    if (stamp[n] != j * s->tp + k + 1) {
                        stamp[n] = j * s->tp + k + 1;
                        x->out_flows[n]++;
                    }
                }
                continue;
            }
            for (n = 0; n < c->nnodes; n++)
                for (d = 0; d < s->dp; d++)
                    if (c->device_node[fmt_rank_device(s, j, d, k)] == n) {
                        x->out_flows[n]++;
                        break;
                    }
        }
    free(stamp);
    for (j = 0; j < s->pp; j++) {
        double bytes = stage_grad_bytes(x, j);
        if (per_stage != NULL)
            per_stage[j] = 0.0;
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
            if (x->p->zero_stage >= 3) /* all-gather = half an all-reduce */
                t += 2.0 * (double)s->gas * t / 2.0;
            if (per_stage != NULL && t > per_stage[j])
                per_stage[j] = t;
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

/* Optimizer step of stage j: streaming passes over the parameters a
 * device owns, cost_optimizer_bytes per parameter at memory_eff of the
 * memory bandwidth, once per iteration, on its slowest device; offloaded,
 * on the host CPU with the gradient transfer hidden behind window s of
 * the last backward pass (costmodel/offload.c). */
static double stage_optimizer(const eval_ctx *x, int j, double window)
{
    const fmt_strategy *s = x->s;
    double worst = 0.0, bytes = cost_optimizer_bytes(x->m, x->p);
    double params;
    int d, k;

    if (cost_strategy_offload(x->p, s) == FMT_OFFLOAD_OPTIMIZER)
        return cost_offload_step(x->c, x->m, x->p, s, j, window);
    params = stage_grad_bytes(x, j) / (double)x->m->dtype_bytes;
    if (x->p->zero_stage >= 1)
        params /= (double)s->dp;
    for (d = 0; d < s->dp; d++)
        for (k = 0; k < s->tp; k++) {
            const fmt_device_type *dt = fmt_device(x->c, fmt_rank_device(s, j, d, k));
            double t = params * bytes / (dt->mem_bw * x->p->memory_eff);
            if (t > worst)
                worst = t;
        }
    return worst;
}

/* The slowest stage's optimizer step (of stage `only` when >= 0);
 * window[j] as stage_optimizer's, NULL = none. */
static double optimizer_time(const eval_ctx *x, int only, const double *window)
{
    double worst = 0.0;
    int j;

    for (j = 0; j < x->s->pp; j++)
        if (only < 0 || j == only) {
            double t = stage_optimizer(x, j, window != NULL ? window[j] : 0.0);
            if (t > worst)
                worst = t;
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
    double *st = NULL, *sc = NULL, *e = NULL, *ed = NULL, *sb = NULL, *dpj = NULL;
    double *sf = NULL;
    double best_tpp = -1.0, v = s->vpp > 1 ? (double)s->vpp : 1.0;
    eval_memo *memo = NULL;
    int plain = s->slow == NULL && s->tp_heads == NULL;

    memset(out, 0, sizeof *out);
    memset(&x, 0, sizeof x);
    ps.schedule = s->schedule;
    ps.recompute = cost_strategy_recompute(p, s);
    ps.zero_stage = cost_strategy_zero(p, s);
    ps.offload = cost_strategy_offload(p, s);
    ps.sp = s->sp != 0;
    ps.calib = cost_calibration_of(p, prof);
    ps.overlap_grad_reduce = cost_strategy_overlap(p, s, COST_OVERLAP_GRAD);
    ps.overlap_p2p = cost_strategy_overlap(p, s, COST_OVERLAP_P2P);
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
    ed = calloc((size_t)s->pp * (size_t)s->dp, sizeof *ed);
    sb = calloc((size_t)s->pp, sizeof *sb);
    dpj = calloc((size_t)s->pp, sizeof *dpj);
    sf = calloc((size_t)s->pp, sizeof *sf);
    if (plain) /* NULL when out of memory: every device timed alone */
        memo = calloc((size_t)s->pp * EVAL_MEMO, sizeof *memo);
    x.out_flows = calloc((size_t)c->nnodes, sizeof *x.out_flows);
    x.in_flows = calloc((size_t)c->nnodes, sizeof *x.in_flows);
    if (!out->stage_s || !out->p2p_s || !out->mem_bytes || !out->mem_cap || !st ||
        !sc || !e || !ed || !sb || !dpj || !sf || !x.out_flows || !x.in_flows) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }

    /* TP overlap where every TP group can run it (costmodel/overlap.c) */
    x.ov_tp = cost_strategy_overlap(p, s, COST_OVERLAP_TP) &&
              cost_overlap_tp_hardware(c, m, s);
    /* transfers of every cut and replica, the NIC flows of a cut counted
     * once for all its replicas */
    for (j = 0; j + 1 < s->pp; j++) {
        cost_count_cut_flows(c, s, j, x.out_flows, x.in_flows);
        for (d = 0; d < s->dp; d++)
            ed[(size_t)j * (size_t)s->dp + (size_t)d] = p2p_time(&x, j, d);
    }
    /* AMP eq. 5 per replica, eq. 4 max over replicas */
    for (d = 0; d < s->dp; d++) {
        double sum = 0.0, max = 0.0, esum = 0.0, tpp, rarg = 0.0, period;
        int arg = 0;
        for (j = 0; j < s->pp; j++) {
            double bw, lat, rj = 0.0;
            st[j] = 0.0;
            sc[j] = 0.0;
            cost_tp_ring(c, p, s, j, d, &bw, &lat);
            for (k = 0; k < s->tp; k++) {
                double t, tc, tf, tr;
                int est = 0, meas = 0, dev = fmt_rank_device(s, j, d, k);
                int rank = k + s->tp * d + s->tp * s->dp * j;
                stage_time_shared(&x, memo ? memo + (size_t)j * EVAL_MEMO : NULL, j,
                                  dev, rank, bw, lat, &t, &tc, &est, &meas, &tf, &tr);
                out->estimated += est;
                out->measured += meas;
                if (t > st[j]) { /* a stage runs at its slowest device */
                    st[j] = t;
                    sc[j] = tc;
                    rj = tr;
                    if (t - tf > sb[j])
                        sb[j] = t - tf;
                    if (tf > sf[j])
                        sf[j] = tf;
                }
            }
            sum += st[j];
            if (st[j] > max) {
                max = st[j];
                arg = j;
                rarg = rj;
            }
        }
        for (j = 0; j + 1 < s->pp; j++) {
            e[j] = ed[(size_t)j * (size_t)s->dp + (size_t)d];
            esum += e[j];
        }
        /* T_pp = (gas - 1) max t_i + sum t_i + sum e_i (AMP eq. 5); with v
         * model chunks per device (interleaved 1F1B, Narayanan et al.
         * SC'21 sec. 2.2.2) the fill and drain shrink v-fold, bubble
         * (p - 1) t / v, while each micro-batch crosses the cuts v times */
        tpp = (double)s->gas * max + (sum - max) / v + v * esum;
        /* blocking P2P in the steady state (overlap_p2p 0): after each of
         * its v chunk passes per micro-batch and direction, stage j waits
         * for the exchange with its neighbours (Megatron-LM's
         * send_forward_recv_backward and send_backward_recv_forward:
         * batched isend/irecv, wait), one way over each adjacent
         * cut, (e_{j-1} + e_j) / 2 with e both ways: the 1F1B period is
         * max_j t_j + v (e_{j-1} + e_j) / 2 for the gas - 1 micro-batches
         * after the first, which the fill already carries */
        period = max;
        if (s->schedule == FMT_SCHED_1F1B && s->pp > 1 && !p->overlap_p2p) {
            for (j = 0; j < s->pp; j++) {
                double cj = ((j > 0 ? e[j - 1] : 0.0) + (j + 1 < s->pp ? e[j] : 0.0)) / 2.0;
                if (st[j] + v * cj > period)
                    period = st[j] + v * cj;
            }
            tpp += (double)(s->gas - 1) * (period - max);
        }
        if (tpp > best_tpp) {
            best_tpp = tpp;
            out->bd.compute = (double)s->gas * (st[arg] - sc[arg]);
            out->bd.tp_comm = (double)s->gas * sc[arg];
            out->bd.recompute = (double)s->gas * rarg;
            out->bd.bubble = (sum - max) / v;
            out->bd.p2p = v * esum + (double)(s->gas - 1) * (period - max);
            for (j = 0; j < s->pp; j++) {
                if (st[j] > out->stage_s[j])
                    out->stage_s[j] = st[j];
                if (j + 1 < s->pp && e[j] > out->p2p_s[j])
                    out->p2p_s[j] = e[j];
            }
        }
    }
    dp_sync(&x, -1, dpj);
    for (j = 0; j < s->pp; j++) {
        /* the stage's first trained layer: its gradients come last and its
         * weights are gathered first (costmodel/overlap.c) */
        double first = 0.0, t;
        int l;
        for (l = s->bounds[j]; l < s->bounds[j + 1] && first <= 0.0; l++)
            if (l >= p->frozen_layers)
                first = m->layers[l].params / (double)s->tp;
        t = cost_overlap_dp(p, s, dpj[j],
                            stage_grad_bytes(&x, j) / (double)m->dtype_bytes,
                            first, sb[j], sf[j]);
        if (t > out->bd.dp_comm)
            out->bd.dp_comm = t;
    }
    out->bd.dp_comm += tied_sync(&x);
    /* offloaded gradients leave during the last backward pass only when
     * the gradient reduction runs in it (overlap_grad_reduce) */
    out->bd.optimizer = optimizer_time(&x, -1, p->overlap_grad_reduce ? sb : NULL);
    out->bd.total = out->bd.compute + out->bd.tp_comm + out->bd.bubble +
                    out->bd.p2p + out->bd.dp_comm + out->bd.optimizer;
    out->iter_s = out->bd.total;
    /* docs/simulator.md; an interleaving the schedule cannot run (not
       1f1b, one stage, gas not a multiple of pp), or an iteration of
       more events than the simulator holds, keeps the closed form */
    if (p->fidelity == COST_FIDELITY_SIMULATE && cost_sim_fits(s) &&
        (s->vpp <= 1 || (s->schedule == FMT_SCHED_1F1B && s->pp > 1 &&
                         s->gas % s->pp == 0))) {
        rc = cost_sim_refine(c, m, prof, p, s, out, err);
        if (rc != UTIL_OK)
            goto done;
    }
    if (p->calib != NULL) { /* framework overhead, with the optimizer step */
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
            if (plain && r % (s->tp * s->dp) != 0) { /* as its stage's first rank */
                out->mem_bytes[r] = out->mem_bytes[r - r % (s->tp * s->dp)];
            } else {
                cost_rank_stage_memory(m, p, s, r, &mem);
                cost_runtime_apply(c, p, s, r, &mem); /* costmodel/runtime.c */
                out->mem_bytes[r] = mem.total;
                out->mem_bytes[r] = cost_rank_memory(m, p, s, r, out->mem_bytes[r]);
            }
            out->mem_cap[r] = dt->mem_bytes;
            if (out->mem_cap[r] - out->mem_bytes[r] < worst) {
                worst = out->mem_cap[r] - out->mem_bytes[r];
                out->worst_rank = r;
            }
            if (out->mem_bytes[r] > out->mem_cap[r])
                out->fits = 0;
        }
    }
    /* offloaded optimizer state within each node's host memory */
    if (!cost_host_fits(c, m, p, s, out))
        out->fits = 0;
    /* structural rule, not memory: a stage without parameters cannot run */
    out->empty_stage = cost_empty_stage(m, s);
done:
    free(st);
    free(sc);
    free(e);
    free(ed);
    free(memo);
    free(sb);
    free(sf);
    free(dpj);
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

struct cost_stage_memo {
    eval_memo *slots;       /* EVAL_MEMO per stage */
};

cost_stage_memo *cost_stage_memo_new(const fmt_strategy *s)
{
    cost_stage_memo *memo;

    if (s->slow != NULL || s->tp_heads != NULL) /* as cost_evaluate's plain */
        return NULL;
    memo = malloc(sizeof *memo);
    if (memo == NULL)
        return NULL;
    memo->slots = calloc((size_t)s->pp * EVAL_MEMO, sizeof *memo->slots);
    if (memo->slots == NULL) {
        free(memo);
        return NULL;
    }
    return memo;
}

void cost_stage_memo_free(cost_stage_memo *memo)
{
    if (memo == NULL)
        return;
    free(memo->slots);
    free(memo);
}

void cost_stage_fwd_bwd(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *p,
                        const fmt_strategy *s, int j, int dpi,
                        cost_stage_memo *memo, double *fwd, double *bwd,
                        int *est, int *meas)
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
    x.ov_tp = cost_strategy_overlap(p, s, COST_OVERLAP_TP) &&
              cost_overlap_tp_hardware(c, m, s);
    *fwd = *bwd = 0.0;
    cost_tp_ring(c, p, s, j, dpi, &bw, &lat);
    for (k = 0; k < s->tp; k++) {
        double t, tc, f, rec;
        int ek = 0, mk = 0; /* the memo keeps one device's counts */
        stage_time_shared(&x, memo ? memo->slots + (size_t)j * EVAL_MEMO : NULL, j,
                          fmt_rank_device(s, j, dpi, k),
                          k + s->tp * dpi + s->tp * s->dp * j, bw, lat, &t, &tc,
                          &ek, &mk, &f, &rec);
        e += ek;
        me += mk;
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

void cost_p2p_oneway_cut(const fmt_cluster *c, const fmt_model *m,
                         const cost_params *p, const fmt_strategy *s, int j,
                         double *oneway)
{
    eval_ctx x;
    int d;

    if (ctx_open(&x, c, m, NULL, p, s))
        cost_count_cut_flows(c, s, j, x.out_flows, x.in_flows);
    else /* no scratch memory: links without NIC sharing */
        ctx_close(&x);
    for (d = 0; d < s->dp; d++)
        oneway[d] = p2p_time(&x, j, d) / 2.0; /* p2p_time is both directions */
    ctx_close(&x);
}

double cost_dp_sync_stages(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *p, const fmt_strategy *s,
                           double *per_stage)
{
    eval_ctx x;
    double t = -1.0;
    int j;

    for (j = 0; j < s->pp; j++)
        per_stage[j] = 0.0;
    if (ctx_open(&x, c, m, NULL, p, s))
        t = dp_sync(&x, -1, per_stage);
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
    return cost_optimizer_stage_window(c, m, p, s, j, 0.0);
}

double cost_optimizer_stage_window(const fmt_cluster *c, const fmt_model *m,
                                   const cost_params *p, const fmt_strategy *s,
                                   int j, double window)
{
    eval_ctx x;

    memset(&x, 0, sizeof x); /* stage_optimizer needs no scratch */
    x.c = c;
    x.m = m;
    x.p = p;
    x.s = s;
    return stage_optimizer(&x, j, window);
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
