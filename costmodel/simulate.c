/* costmodel/simulate.c: event-driven simulation of one training
 * iteration: the 1F1B (PipeDream-flush), interleaved 1F1B or GPipe
 * schedule on every
 * data-parallel replica's pipeline, P2P transfers on link resources, the
 * data-parallel all-reduce of each stage and the optimizer step
 * (docs/simulator.md). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "costmodel.h"
#include "internal.h"

static const char *const event_names[COST_EV_NKINDS] = {
    "forward", "backward", "send-activation", "send-gradient", "dp-allreduce",
    "optimizer"};

const char *cost_event_name(int kind)
{
    if (kind < 0 || kind >= COST_EV_NKINDS)
        return NULL;
    return event_names[kind];
}

const char *cost_fidelity_name(int fidelity)
{
    switch (fidelity) {
    case COST_FIDELITY_ANALYTIC:
        return "analytic";
    case COST_FIDELITY_SIMULATE:
        return "simulate";
    default:
        return NULL;
    }
}

int cost_fidelity_from_name(const char *name)
{
    if (name == NULL)
        return -1;
    if (strcasecmp(name, "analytic") == 0)
        return COST_FIDELITY_ANALYTIC;
    if (strcasecmp(name, "simulate") == 0)
        return COST_FIDELITY_SIMULATE;
    return -1;
}

void cost_timeline_free(cost_timeline *t)
{
    if (t == NULL)
        return;
    free(t->events);
    free(t->busy_s);
    memset(t, 0, sizeof *t);
}

/* ---- the schedule ---------------------------------------------------- */

/* Micro-batch of the k-th compute operation of stage j (0 <= k < 2 gas);
 * *bwd = 1 when it is a backward.
 * GPipe (Huang et al. 2019): every forward, then every backward.
 * 1F1B, the non-interleaved PipeDream-flush schedule of Megatron-LM and
 * DeepSpeed (Narayanan et al. 2021): min(pp - j - 1, gas) warm-up
 * forwards, then one forward and one backward in turn, then the
 * remaining backwards. */
static int op_at(int schedule, int pp, int gas, int j, int k, int *bwd)
{
    int w = pp - j - 1 < gas ? pp - j - 1 : gas, n = gas - w;

    if (schedule == FMT_SCHED_GPIPE) {
        *bwd = k >= gas;
        return k < gas ? k : k - gas;
    }
    if (k < w) {
        *bwd = 0;
        return k;
    }
    k -= w;
    if (k < 2 * n) {
        *bwd = k % 2;
        return *bwd ? k / 2 : w + k / 2;
    }
    *bwd = 1;
    return k - n;
}

/* Interleaved 1F1B (Narayanan et al., SC'21, sec. 2.2; the order of
 * Megatron-LM's forward_backward_pipelining_with_interleaving): stage j
 * holds v chunks, chunk c being virtual stage c pp + j, and runs
 * T = gas v forwards and T backwards.  Forward number i runs chunk
 * (i mod pp v) / pp of micro-batch (i / (pp v)) pp + i mod pp (groups of
 * pp micro-batches go through chunk 0, then chunk 1, ...); backward
 * number i the same micro-batch in chunk v - 1 - that chunk.  Warm-up:
 * W = min(2 (pp - j - 1) + (v - 1) pp, T) forwards (all T when
 * gas = pp), then forward W + i and backward i in turn, then the last W
 * backwards.  Returns the micro-batch of operation k; *bwd, *chunk. */
static int op_interleaved(int pp, int v, int gas, int j, int k, int *bwd,
                          int *chunk)
{
    int T = gas * v, w = gas == pp ? T : 2 * (pp - j - 1) + (v - 1) * pp, i;

    if (w > T)
        w = T;
    if (k < w) {
        i = k;
        *bwd = 0;
    } else if (k < w + 2 * (T - w)) {
        *bwd = (k - w) % 2;
        i = *bwd ? (k - w) / 2 : w + (k - w) / 2;
    } else {
        *bwd = 1;
        i = k - w - (T - w);
    }
    *chunk = (i % (pp * v)) / pp;
    if (*bwd)
        *chunk = v - 1 - *chunk;
    return (i / (pp * v)) * pp + i % pp;
}

typedef struct sim {
    const cost_sim_input *in;
    int pp, dp, gas, cuts, v; /* v: model chunks per device (1: none) */
    int *next;          /* dp * pp: next operation of (replica, stage) */
    double *free_at;    /* dp * pp: when the stage's devices are free */
    double *last_bwd;   /* dp * pp: end of the stage's last backward */
    double *act_in;     /* dp * pp * v * gas: activation of micro m received
                           by chunk c of stage j at
                           [((r * pp + j) * v + c) * gas + m]; < 0 = not yet */
    double *grad_in;    /* same layout: gradient received from the next
                           virtual stage */
    double *link_act;   /* dp * cuts: when the j -> j + 1 direction is free */
    double *link_grad;  /* dp * cuts: when the j + 1 -> j direction is free */
    double *wrap_act;   /* dp: when stage pp - 1 -> 0 is free (interleaved) */
    double *wrap_grad;  /* dp: when stage 0 -> pp - 1 is free */
    cost_event *ev;     /* preallocated to the largest possible count */
    size_t nev;
} sim;

static void emit(sim *x, int kind, int stage, int replica, int micro,
                 int chunk, double start, double end)
{
    cost_event *e = &x->ev[x->nev++];

    e->kind = kind;
    e->stage = stage;
    e->replica = replica;
    e->micro = micro;
    e->chunk = chunk;
    e->start = start;
    e->end = end;
}

/* Transfer produced at time t by chunk c of stage j of replica r;
 * returns when the receiver has it.  Each direction of a cut is one link
 * resource (the wrap-around link between the last and the first stage
 * too): a transfer waits until the previous one on it ended (first
 * come, first served, i.e. in the sender's order). */
static double send(sim *x, int kind, int r, int j, int c, int micro, double t)
{
    int act = kind == COST_EV_SEND_ACT;
    int wrap = act ? j == x->pp - 1 : j == 0;
    size_t q = (size_t)r * (size_t)x->cuts + (size_t)(act ? j : j - 1);
    const double *dur = act ? x->in->send_act : x->in->send_grad;
    double *link, d, start;

    if (wrap) {
        link = act ? &x->wrap_act[r] : &x->wrap_grad[r];
        d = x->in->send_wrap != NULL ? x->in->send_wrap[r] : 0.0;
    } else {
        link = act ? &x->link_act[q] : &x->link_grad[q];
        d = dur != NULL ? dur[q] : 0.0;
    }
    start = t > *link ? t : *link;
    *link = start + d;
    if (d > 0.0)
        emit(x, kind, j, r, micro, c, start, start + d);
    return start + d;
}

/* Run (replica r, stage j) as far as its received inputs allow; returns
 * the number of operations done. */
static int advance(sim *x, int r, int j)
{
    size_t rj = (size_t)r * (size_t)x->pp + (size_t)j;
    size_t G = (size_t)x->gas, V = (size_t)x->v;
    int done = 0, nv = x->pp * x->v;

    while (x->next[rj] < 2 * x->gas * x->v) {
        int bwd, c = 0, mi, vs;
        size_t q;
        double ready, start, end;

        if (x->v > 1)
            mi = op_interleaved(x->pp, x->v, x->gas, j, x->next[rj], &bwd, &c);
        else
            mi = op_at(x->in->schedule, x->pp, x->gas, j, x->next[rj], &bwd);
        vs = c * x->pp + j; /* virtual stage */
        q = (rj * V + (size_t)c) * G + (size_t)mi;
        /* a forward needs the activation from the previous virtual
         * stage, a backward the gradient from the next; the last
         * virtual stage's backward follows its own forward, which comes
         * earlier in its order */
        if (!bwd)
            ready = vs == 0 ? 0.0 : x->act_in[q];
        else
            ready = vs == nv - 1 ? 0.0 : x->grad_in[q];
        if (ready < 0.0)
            break;
        start = ready > x->free_at[rj] ? ready : x->free_at[rj];
        end = start + (bwd ? x->in->bwd[rj] : x->in->fwd[rj]) / (double)x->v;
        emit(x, bwd ? COST_EV_BWD : COST_EV_FWD, j, r, mi, c, start, end);
        x->free_at[rj] = end;
        if (!bwd && vs + 1 < nv) { /* to chunk c of j + 1, or c + 1 of 0 */
            int j2 = (j + 1) % x->pp, c2 = j2 == 0 ? c + 1 : c;
            size_t q2 = ((((size_t)r * (size_t)x->pp + (size_t)j2) * V +
                          (size_t)c2) * G) + (size_t)mi;
            x->act_in[q2] = send(x, COST_EV_SEND_ACT, r, j, c, mi, end);
        }
        if (bwd && vs > 0) { /* to chunk c of j - 1, or c - 1 of pp - 1 */
            int j2 = j == 0 ? x->pp - 1 : j - 1, c2 = j == 0 ? c - 1 : c;
            size_t q2 = ((((size_t)r * (size_t)x->pp + (size_t)j2) * V +
                          (size_t)c2) * G) + (size_t)mi;
            x->grad_in[q2] = send(x, COST_EV_SEND_GRAD, r, j, c, mi, end);
        }
        if (bwd)
            x->last_bwd[rj] = end;
        x->next[rj]++;
        done++;
    }
    return done;
}

/* Every entry of a[0..n) finite and >= 0 (a may be NULL when optional). */
static int check_times(const double *a, size_t n, const char *name,
                       int required, util_error *err)
{
    size_t i;
    char path[48];

    if (a == NULL) {
        if (!required)
            return UTIL_OK;
        return util_error_set(err, UTIL_EINVAL, NULL, name,
                              "expected %zu stage times, got none", n);
    }
    for (i = 0; i < n; i++)
        if (!(isfinite(a[i]) && a[i] >= 0.0)) {
            snprintf(path, sizeof path, "%s[%zu]", name, i);
            return util_error_set(err, UTIL_EINVAL, NULL, path,
                                  "expected a finite time >= 0, got %g", a[i]);
        }
    return UTIL_OK;
}

/* The most events one iteration of pp stages, dp replicas, gas
 * micro-batches and v chunks makes: compute and transfers per micro-batch
 * and chunk (pp v - 1 crossings each way), plus all-reduces (DP and tied)
 * and optimizer steps.  UTIL_EINVAL beyond COST_SIM_MAX_EVENTS. */
static int sim_events(int pp, int dp, int gas, int v, size_t *max_events,
                      util_error *err)
{
    /* n, gas <= 2^24 and v <= 64: the product fits in 64 bits */
    size_t n = (size_t)dp * (size_t)pp, vv = (size_t)v, ev = SIZE_MAX;

    *max_events = 0;
    if (n <= (size_t)COST_SIM_MAX_EVENTS && (size_t)gas <= (size_t)COST_SIM_MAX_EVENTS &&
        vv <= 64)
        ev = 2 * n * (size_t)gas * vv +
             2 * (size_t)dp * ((size_t)pp * vv - 1) * (size_t)gas + 3 * n;
    if (ev > (size_t)COST_SIM_MAX_EVENTS) {
        if (ev == SIZE_MAX)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "%d replicas x %d stages x %d micro-batches are "
                                  "too many to simulate (at most %d events)", dp,
                                  pp, gas, COST_SIM_MAX_EVENTS);
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "%d replicas x %d stages x %d micro-batches (x %d "
                              "model chunks) make up to %zu events, more than the "
                              "%d the simulator holds", dp, pp, gas, v, ev,
                              COST_SIM_MAX_EVENTS);
    }
    *max_events = ev;
    return UTIL_OK;
}

static int check_input(const cost_sim_input *in, size_t *max_events,
                       util_error *err)
{
    size_t n, cuts, v;
    int rc;

    if (in->pp < 1 || in->dp < 1 || in->gas < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected pp, dp and gas >= 1, got %d, %d, %d",
                              in->pp, in->dp, in->gas);
    if (in->schedule != FMT_SCHED_1F1B && in->schedule != FMT_SCHED_GPIPE)
        return util_error_set(err, UTIL_EINVAL, NULL, "schedule",
                              "expected 1f1b (0) or gpipe (1), got %d",
                              in->schedule);
    if (in->vpp > 1 && (in->vpp > FMT_MAX_VPP || in->schedule != FMT_SCHED_1F1B ||
                        in->pp < 2 || in->gas % in->pp != 0))
        return util_error_set(err, UTIL_EINVAL, NULL, "vpp",
                              "the interleaved schedule (vpp %d, at most %d) "
                              "needs 1f1b, pp >= 2 and micro-batches (%d) a "
                              "multiple of pp (%d)", in->vpp, FMT_MAX_VPP,
                              in->gas, in->pp);
    v = in->vpp > 1 ? (size_t)in->vpp : 1;
    n = (size_t)in->dp * (size_t)in->pp;
    cuts = (size_t)in->dp * (size_t)(in->pp - 1);
    if ((rc = sim_events(in->pp, in->dp, in->gas, (int)v, max_events, err)) != UTIL_OK)
        return rc;
    if ((rc = check_times(in->fwd, n, "fwd", 1, err)) != UTIL_OK ||
        (rc = check_times(in->bwd, n, "bwd", 1, err)) != UTIL_OK ||
        (rc = check_times(in->send_act, cuts, "send_act", 0, err)) != UTIL_OK ||
        (rc = check_times(in->send_grad, cuts, "send_grad", 0, err)) != UTIL_OK ||
        (rc = check_times(in->send_wrap, (size_t)in->dp, "send_wrap", 0, err)) != UTIL_OK ||
        (rc = check_times(in->dp_s, (size_t)in->pp, "dp_s", 0, err)) != UTIL_OK ||
        (rc = check_times(in->opt_s, (size_t)in->pp, "opt_s", 0, err)) != UTIL_OK ||
        (rc = check_times(&in->tied_s, 1, "tied_s", 1, err)) != UTIL_OK)
        return rc;
    if (in->tied_s > 0.0 &&
        (in->tied_first < 0 || in->tied_last >= in->pp ||
         in->tied_first >= in->tied_last))
        return util_error_set(err, UTIL_EINVAL, NULL, "tied_first",
                              "expected 0 <= tied_first < tied_last < %d, got "
                              "%d and %d", in->pp, in->tied_first, in->tied_last);
    return UTIL_OK;
}

static int simulate_stages(const cost_sim_input *in, double deadline,
                           cost_timeline *out, util_error *err)
{
    sim x;
    size_t max_events = 0, n, nq, i;
    long total, done = 0;
    double pipe_end = 0.0, *ready = NULL, *dp_end = NULL;
    int r, j, rc;

    memset(out, 0, sizeof *out);
    memset(&x, 0, sizeof x);
    rc = check_input(in, &max_events, err);
    if (rc != UTIL_OK)
        return rc;
    x.in = in;
    x.pp = in->pp;
    x.dp = in->dp;
    x.gas = in->gas;
    x.cuts = in->pp - 1;
    x.v = in->vpp > 1 ? in->vpp : 1;
    n = (size_t)in->dp * (size_t)in->pp;
    nq = n * (size_t)x.v * (size_t)in->gas;
    x.next = calloc(n, sizeof *x.next);
    x.free_at = calloc(n, sizeof *x.free_at);
    x.last_bwd = calloc(n, sizeof *x.last_bwd);
    x.act_in = malloc(nq * sizeof *x.act_in);
    x.grad_in = malloc(nq * sizeof *x.grad_in);
    x.link_act = calloc(n, sizeof *x.link_act); /* dp * cuts <= n */
    x.link_grad = calloc(n, sizeof *x.link_grad);
    x.wrap_act = calloc((size_t)in->dp, sizeof *x.wrap_act);
    x.wrap_grad = calloc((size_t)in->dp, sizeof *x.wrap_grad);
    x.ev = malloc(max_events * sizeof *x.ev);
    ready = calloc((size_t)in->pp, sizeof *ready);
    dp_end = calloc((size_t)in->pp, sizeof *dp_end);
    out->busy_s = calloc(n, sizeof *out->busy_s);
    if (!x.next || !x.free_at || !x.last_bwd || !x.act_in || !x.grad_in ||
        !x.link_act || !x.link_grad || !x.wrap_act || !x.wrap_grad || !x.ev || !ready || !dp_end || !out->busy_s) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < nq; i++)
        x.act_in[i] = x.grad_in[i] = -1.0;

    /* Discrete-event run of the pipelines: each (replica, stage) executes
     * its fixed operation order, an operation starting when the stage is
     * free and its input has arrived.  Sweeping the stages up (forward
     * waves) and down (backward waves) until every operation ran visits
     * the operations in an order consistent with all dependencies. */
    total = 2L * (long)n * (long)in->gas * (long)x.v;
    while (done < total) {
        long progress = 0;
        for (r = 0; r < x.dp && !util_deadline_passed(deadline); r++)
            for (j = 0; j < x.pp; j++)
                progress += advance(&x, r, j);
        for (r = 0; r < x.dp && !util_deadline_passed(deadline); r++)
            for (j = x.pp - 1; j >= 0; j--)
                progress += advance(&x, r, j);
        done += progress;
        if (done < total && util_deadline_passed(deadline)) {
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                "time limit reached after %ld of %ld operations "
                                "of the schedule", done, total);
            goto done;
        }
        if (progress == 0) {
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "pipeline schedule deadlocked after %ld of %ld "
                                "operations", done, total);
            goto done;
        }
    }
    for (i = 0; i < n; i++) {
        out->busy_s[i] = (double)in->gas * (in->fwd[i] + in->bwd[i]);
        if (x.last_bwd[i] > pipe_end)
            pipe_end = x.last_bwd[i];
    }

    /* DP all-reduce of stage j: needs the gradients of every replica, so
     * it starts when the stage's last backward ended in all replicas
     * (overlap) or when the whole pipeline drained (no overlap); the tied
     * weights then meet between their two stages; then the optimizer */
    for (j = 0; j < x.pp; j++) {
        ready[j] = in->overlap_dp ? 0.0 : pipe_end;
        for (r = 0; in->overlap_dp && r < x.dp; r++)
            if (x.last_bwd[(size_t)r * (size_t)x.pp + (size_t)j] > ready[j])
                ready[j] = x.last_bwd[(size_t)r * (size_t)x.pp + (size_t)j];
        dp_end[j] = ready[j] + (in->dp_s ? in->dp_s[j] : 0.0);
        for (r = 0; r < x.dp && dp_end[j] > ready[j]; r++)
            emit(&x, COST_EV_DP_ALLREDUCE, j, r, -1, 0, ready[j], dp_end[j]);
    }
    if (in->tied_s > 0.0) {
        int ends[2];
        double t0 = dp_end[in->tied_first] > dp_end[in->tied_last]
                        ? dp_end[in->tied_first] : dp_end[in->tied_last];
        ends[0] = in->tied_first;
        ends[1] = in->tied_last;
        for (i = 0; i < 2; i++) {
            dp_end[ends[i]] = t0 + in->tied_s;
            for (r = 0; r < x.dp; r++)
                emit(&x, COST_EV_DP_ALLREDUCE, ends[i], r, -2, 0, t0, t0 + in->tied_s);
        }
    }
    for (j = 0; j < x.pp; j++) {
        double d = in->opt_s ? in->opt_s[j] : 0.0;
        for (r = 0; r < x.dp && d > 0.0; r++)
            emit(&x, COST_EV_OPTIMIZER, j, r, -1, 0, dp_end[j], dp_end[j] + d);
    }

    out->iter_s = pipe_end;
    for (i = 0; i < x.nev; i++)
        if (x.ev[i].end > out->iter_s)
            out->iter_s = x.ev[i].end;
    if ((rc = cost_sort_events(x.ev, x.nev, deadline)) != UTIL_OK) {
        rc = rc == UTIL_ETIMEOUT
                 ? util_error_set(err, rc, NULL, NULL, "time limit reached while "
                                  "the %zu events were put in order", x.nev)
                 : util_error_set(err, rc, NULL, NULL, "out of memory");
        goto done;
    }
    out->pp = in->pp;
    out->dp = in->dp;
    out->gas = in->gas;
    out->vpp = x.v;
    out->events = x.ev;
    out->nevents = (int)x.nev;
    x.ev = NULL;
done:
    free(x.next);
    free(x.free_at);
    free(x.last_bwd);
    free(x.act_in);
    free(x.grad_in);
    free(x.link_act);
    free(x.link_grad);
    free(x.wrap_act);
    free(x.wrap_grad);
    free(x.ev);
    free(ready);
    free(dp_end);
    if (rc != UTIL_OK)
        cost_timeline_free(out);
    return rc;
}

int cost_sim_fits(const fmt_strategy *s)
{
    size_t events;

    return s->dp >= 1 && s->pp >= 1 && s->gas >= 1 &&
           sim_events(s->pp, s->dp, s->gas, s->vpp > 1 ? s->vpp : 1, &events,
                      NULL) == UTIL_OK;
}

int cost_simulate_stages(const cost_sim_input *in, cost_timeline *out,
                         util_error *err)
{
    return simulate_stages(in, 0.0, out, err);
}

/* ---- stage times from the cost model --------------------------------- */

/* First and last stage holding layers of the model's first tied group;
 * 0 when fewer than two stages hold it. */
static int tied_stages(const fmt_model *m, const fmt_strategy *s, int *first,
                       int *last)
{
    int l, j, group = 0;

    *first = *last = -1;
    for (l = 0; l < m->nlayers && group == 0; l++)
        group = m->layers[l].tied_group;
    for (j = 0; j < s->pp && group > 0; j++)
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
            if (m->layers[l].tied_group == group) {
                if (*first < 0)
                    *first = j;
                *last = j;
            }
    return *first >= 0 && *last > *first;
}

/* One-way transfer between stage pp - 1 and stage 0 of replica r under
 * the interleaved schedule (chunk k of the last stage feeds chunk k + 1
 * of the first), as p2p_time in evaluate.c times a cut: latency +
 * mbs * out_bytes / B over the worst TP pair's link, the NIC shared by
 * every replica's and TP rank's wrap transfer, the bytes split over the
 * TP ranks with scatter-gather or sequence parallelism (then all-gathered
 * on stage 0's TP ring without sequence parallelism).  The activation is
 * a block's output: that of the layer before stage pp - 1. */
static double wrap_time(const fmt_cluster *c, const fmt_model *m,
                        const cost_params *p, const fmt_strategy *s, int r,
                        const int *out_flows, const int *in_flows)
{
    double bytes = (double)s->mbs * m->layers[s->bounds[s->pp - 1] - 1].out_bytes;
    double bw = INFINITY, lat = 0.0, gather = 0.0;
    int k;

    for (k = 0; k < s->tp; k++) {
        int a = fmt_rank_device(s, s->pp - 1, r, k), b = fmt_rank_device(s, 0, r, k);
        double l, e = cost_flow_bw(c, p, a, b, out_flows[c->device_node[a]],
                                   in_flows[c->device_node[b]], &l);
        if (e < bw)
            bw = e;
        if (l > lat)
            lat = l;
    }
    if (s->tp > 1 && (p->p2p_scatter || p->sp)) {
        double t = (double)s->tp, gbw, glat;
        bytes /= t;
        if (!p->sp) { /* ring all-gather: (t - 1) steps of bytes / t */
            cost_tp_ring(c, p, s, 0, r, &gbw, &glat);
            if (gbw > 0.0 && gbw < INFINITY)
                gather = (t - 1.0) * (glat + bytes / gbw);
        }
    }
    return lat + bytes / bw + gather;
}

/* Wrap-around transfer of every replica into wrap[0 .. dp); -1 when out
 * of memory. */
static int wrap_times(const fmt_cluster *c, const fmt_model *m,
                      const cost_params *p, const fmt_strategy *s, double *wrap)
{
    int *flows = calloc((size_t)c->nnodes * 2, sizeof *flows), r, k;

    if (flows == NULL)
        return -1;
    for (r = 0; r < s->dp; r++) /* cross-node flows per NIC, at once */
        for (k = 0; k < s->tp; k++) {
            int na = c->device_node[fmt_rank_device(s, s->pp - 1, r, k)];
            int nb = c->device_node[fmt_rank_device(s, 0, r, k)];
            if (na != nb) {
                flows[na]++;
                flows[c->nnodes + nb]++;
            }
        }
    for (k = 0; k < 2 * c->nnodes; k++)
        if (flows[k] < 1)
            flows[k] = 1;
    for (r = 0; r < s->dp; r++)
        wrap[r] = wrap_time(c, m, p, s, r, flows, flows + c->nnodes);
    free(flows);
    return 0;
}

int cost_simulate(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *p,
                  const fmt_strategy *s, int overlap_dp, cost_timeline *out,
                  util_error *err)
{
    return cost_simulate_until(c, m, prof, p, s, overlap_dp, 0.0, out, err);
}

int cost_simulate_until(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *p,
                        const fmt_strategy *s, int overlap_dp, double deadline,
                        cost_timeline *out, util_error *err)
{
    cost_params ps;
    cost_sim_input in;
    cost_stage_memo *memo = NULL;
    double *fwd = NULL, *bwd = NULL, *send_s = NULL, *dps = NULL, *opt = NULL,
           *wrap = NULL, *oneway = NULL;
    int r, j, cuts, rc = UTIL_OK;
    size_t n, events;

    memset(out, 0, sizeof *out);
    if (s->tp < 1 || s->dp < 1 || s->pp < 1 || s->mbs < 1 || s->gas < 1 ||
        s->bounds == NULL || s->ranks == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected a strategy with degrees, micro-batches, "
                              "stage boundaries and ranks");
    /* the size first: nothing is timed for an iteration too large */
    if ((rc = sim_events(s->pp, s->dp, s->gas, s->vpp > 1 ? s->vpp : 1, &events,
                         err)) != UTIL_OK)
        return rc;
    ps = *p; /* the strategy's own features, as in cost_evaluate */
    ps.schedule = s->schedule;
    ps.recompute = cost_strategy_recompute(p, s);
    ps.zero_stage = cost_strategy_zero(p, s);
    ps.offload = cost_strategy_offload(p, s);
    ps.sp = s->sp != 0;
    ps.overlap_grad_reduce = cost_strategy_overlap(p, s, COST_OVERLAP_GRAD);
    ps.overlap_p2p = cost_strategy_overlap(p, s, COST_OVERLAP_P2P);
    cuts = s->pp - 1;
    n = (size_t)s->dp * (size_t)s->pp;
    fwd = calloc(n, sizeof *fwd);
    bwd = calloc(n, sizeof *bwd);
    send_s = calloc(n, sizeof *send_s); /* dp * cuts <= n */
    dps = calloc((size_t)s->pp, sizeof *dps);
    opt = calloc((size_t)s->pp, sizeof *opt);
    wrap = calloc((size_t)s->dp, sizeof *wrap);
    oneway = calloc((size_t)s->dp, sizeof *oneway);
    if (!fwd || !bwd || !send_s || !dps || !opt || !wrap || !oneway ||
        (s->vpp > 1 && s->pp > 1 && wrap_times(c, m, &ps, s, wrap) != 0)) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    memset(&in, 0, sizeof in);
    /* each replica on its own devices: t_j of (replica, stage) is the
     * slowest device of that TP group, not of the stage over replicas;
     * replicas on identical devices share the stage's times */
    memo = cost_stage_memo_new(s);
    for (r = 0; r < s->dp; r++) {
        if (util_deadline_passed(deadline)) {
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                "time limit reached after the stage times of %d "
                                "of %d replicas", r, s->dp);
            goto done;
        }
        for (j = 0; j < s->pp; j++) {
            size_t q = (size_t)r * (size_t)s->pp + (size_t)j;
            cost_stage_fwd_bwd(c, m, prof, &ps, s, j, r, memo, &fwd[q], &bwd[q],
                               NULL, NULL);
        }
    }
    /* the transfers of each cut, the cut's flows counted once; send_s is
       [r * cuts + j] */
    for (j = 0; j < cuts; j++) {
        cost_p2p_oneway_cut(c, m, &ps, s, j, oneway);
        for (r = 0; r < s->dp; r++)
            send_s[(size_t)r * (size_t)cuts + (size_t)j] = oneway[r];
        if (util_deadline_passed(deadline)) {
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                "time limit reached after the transfers of %d of "
                                "%d cuts", j + 1, cuts);
            goto done;
        }
    }
    if (cost_dp_sync_stages(c, m, &ps, s, dps) < 0.0) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < s->pp; j++) { /* what overlap leaves exposed */
        double wb = 0.0, wf = 0.0, params = 0.0, first = 0.0;
        int l;
        for (r = 0; r < s->dp; r++) {
            size_t q = (size_t)r * (size_t)s->pp + (size_t)j;
            wb = bwd[q] > wb ? bwd[q] : wb;
            wf = fwd[q] > wf ? fwd[q] : wf;
        }
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
            if (l >= ps.frozen_layers) {
                if (first <= 0.0)
                    first = m->layers[l].params / (double)s->tp;
                params += m->layers[l].params / (double)s->tp;
            }
        dps[j] = cost_overlap_dp(&ps, s, dps[j], params, first, wb, wf);
    }
    for (j = 0; j < s->pp; j++) {
        /* the optimizer step cost_evaluate charges: offloaded, the
         * gradients leave for the host during the stage's last backward
         * pass (its slowest replica's) when the gradient reduction runs
         * in it (overlap_grad_reduce) */
        double window = 0.0;
        for (r = 0; ps.overlap_grad_reduce && r < s->dp; r++)
            if (bwd[(size_t)r * (size_t)s->pp + (size_t)j] > window)
                window = bwd[(size_t)r * (size_t)s->pp + (size_t)j];
        opt[j] = cost_optimizer_stage_window(c, m, &ps, s, j, window);
    }
    if (tied_stages(m, s, &in.tied_first, &in.tied_last)) {
        in.tied_s = cost_tied_sync_time(c, m, &ps, s);
        if (in.tied_s < 0.0) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
    } else {
        in.tied_first = in.tied_last = 0;
    }
    in.pp = s->pp;
    in.dp = s->dp;
    in.gas = s->gas;
    in.schedule = s->schedule;
    in.fwd = fwd;
    in.bwd = bwd;
    in.send_act = send_s; /* the gradient of an activation has its size */
    in.send_grad = send_s;
    in.dp_s = dps;
    in.opt_s = opt;
    in.overlap_dp = overlap_dp ? 1 : 0;
    in.vpp = s->vpp > 1 ? s->vpp : 1;
    in.send_wrap = wrap;
    rc = simulate_stages(&in, deadline, out, err);
done:
    cost_stage_memo_free(memo);
    free(oneway);
    free(fwd);
    free(bwd);
    free(send_s);
    free(dps);
    free(opt);
    free(wrap);
    return rc;
}

int cost_sim_refine(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *p,
                    const fmt_strategy *s, cost_result *out, util_error *err)
{
    cost_timeline tl;
    cost_breakdown *bd = &out->bd;
    double covered, delta, deficit;
    double *hidden[3];
    int rc, i;

    rc = cost_simulate(c, m, prof, p, s, p->overlap_dp, &tl, err);
    if (rc != UTIL_OK)
        return rc;
    covered = bd->compute + bd->tp_comm + bd->bubble + bd->p2p + bd->dp_comm +
              bd->optimizer;
    delta = tl.iter_s - covered;
    bd->bubble += delta;
    /* overlap hid transfers, all-reduces or optimizer time: they shrink */
    hidden[0] = &bd->p2p;
    hidden[1] = &bd->dp_comm;
    hidden[2] = &bd->optimizer;
    deficit = bd->bubble < 0.0 ? -bd->bubble : 0.0;
    if (deficit > 0.0)
        bd->bubble = 0.0;
    for (i = 0; i < 3 && deficit > 0.0; i++) {
        double take = *hidden[i] < deficit ? *hidden[i] : deficit;
        *hidden[i] -= take;
        deficit -= take;
    }
    bd->total += delta;
    out->iter_s = bd->total;
    cost_timeline_free(&tl);
    return UTIL_OK;
}
