/* launcher/execplan.c: the executed mode in plain C: whether it runs,
 * the ops each stage's GPU queues in one iteration (passes, transfers,
 * markers, modelled delays, optimizer) with their dependencies, a CPU
 * replay of those ops with the GPU's stream semantics, and the summary
 * of what the GPUs measured.  launcher/exec.cu follows these ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

int launch_choose_mode(const launch_work *w, int asked, int ngpu, int first_gpu,
                       char *why, size_t n)
{
    int have = ngpu - first_gpu;

    if (have < 0)
        have = 0;
    if (asked == LAUNCH_MODE_COMPOSED) {
        snprintf(why, n, "composed: asked for with '--mode composed'");
        return LAUNCH_MODE_COMPOSED;
    }
    if (w->rank >= 0) {
        snprintf(why, n, "composed: '--rank %d' runs only that rank's stage",
                 w->rank);
        return asked == LAUNCH_MODE_EXECUTED ? -1 : LAUNCH_MODE_COMPOSED;
    }
    if (have < w->pp) {
        snprintf(why, n, "composed: executing needs one GPU per pipeline stage "
                         "(%d, GPUs %d..%d), this machine has %d GPU%s from GPU %d",
                 w->pp, first_gpu, first_gpu + w->pp - 1, have,
                 have == 1 ? "" : "s", first_gpu);
        return asked == LAUNCH_MODE_EXECUTED ? -1 : LAUNCH_MODE_COMPOSED;
    }
    snprintf(why, n, "executed: %d stage%s on GPUs %d..%d (one data-parallel "
                     "replica; %s%s)",
             w->pp, w->pp == 1 ? "" : "s", first_gpu, first_gpu + w->pp - 1,
             w->tp > 1 ? "one tensor-parallel shard per stage, TP all-reduces "
                         "modelled as GPU delays"
                       : "tp 1",
             w->dp > 1 ? ", the DP all-reduce modelled as a GPU delay" : "");
    return LAUNCH_MODE_EXECUTED;
}

/* ---- the plan -------------------------------------------------------- */

void launch_exec_input_init(launch_exec_input *in)
{
    memset(in, 0, sizeof *in);
    in->optimizer = 1;
}

void launch_exec_free(launch_exec *x)
{
    int j;

    if (!x)
        return;
    for (j = 0; x->st && j < x->pp; j++)
        free(x->st[j].ops);
    free(x->st);
    free(x->xfers);
    memset(x, 0, sizeof *x);
}

/* Index of the transfer (direction, cut, micro) in the xfers array:
 * activations of cut 0, gradients of cut 0, activations of cut 1, ... */
static int xfer_index(int gas, int grad, int cut, int micro)
{
    return (2 * cut + grad) * gas + micro;
}

static int push(launch_exec_stage *st, int cap, launch_op op)
{
    if (st->nops >= cap)
        return -1;
    st->ops[st->nops] = op;
    return st->nops++;
}

static launch_op op_of(int kind)
{
    launch_op o;

    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.micro = o.xfer = o.stage = -1;
    return o;
}

/* An op about stage's point mark: LAUNCH_OP_MARK or LAUNCH_OP_WAIT_MARK. */
static launch_op mark_op(int kind, int stage, int mark)
{
    launch_op o = op_of(kind);

    o.stage = stage;
    o.mark = mark;
    return o;
}

/* Stage j (of pp) marks mark and waits for every other stage's: a barrier
 * across the pipeline.  -1 when the ops overflow cap. */
static int barrier(launch_exec_stage *st, int cap, int j, int pp, int mark)
{
    int k, rc = push(st, cap, mark_op(LAUNCH_OP_MARK, j, mark));

    for (k = 0; k < pp; k++)
        if (k != j && push(st, cap, mark_op(LAUNCH_OP_WAIT_MARK, k, mark)) < 0)
            rc = -1;
    return rc < 0 ? -1 : 0;
}

int launch_exec_plan(const launch_work *w, const launch_exec_input *in,
                     launch_exec *out, util_error *err)
{
    int pp = w->pp, gas = w->gas, cuts = pp - 1, j, i, k, rc = UTIL_OK, cap;
    int *bwd = NULL, *micro = NULL, tied;

    memset(out, 0, sizeof *out);
    if (pp < 1 || gas < 1 || !w->stages)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected stages and micro-batches, got %d and %d",
                              pp, gas);
    if (in->first_gpu < 0 || in->first_gpu + pp > in->ngpu)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "%d stages need GPUs %d..%d, %d visible", pp,
                              in->first_gpu, in->first_gpu + pp - 1, in->ngpu);
    tied = in->tied_s > 0.0 && in->tied_first >= 0 && in->tied_first < in->tied_last &&
           in->tied_last < pp;
    out->pp = pp;
    out->gas = gas;
    out->schedule = w->schedule;
    out->overlap_dp = in->overlap_dp ? 1 : 0;
    out->nxfer = 2 * cuts * gas;
    out->st = calloc((size_t)pp, sizeof *out->st);
    out->xfers = out->nxfer > 0 ? calloc((size_t)out->nxfer, sizeof *out->xfers) : NULL;
    bwd = calloc((size_t)(2 * gas), sizeof *bwd);
    micro = calloc((size_t)(2 * gas), sizeof *micro);
    if (!out->st || (out->nxfer > 0 && !out->xfers) || !bwd || !micro) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    /* passes with a receive and a send each, then at most 2 pp + 8 */
    cap = 6 * gas + 2 * pp + 8;
    for (j = 0; j < cuts; j++)
        for (k = 0; k < 2; k++)
            for (i = 0; i < gas; i++) {
                launch_xfer *x = &out->xfers[xfer_index(gas, k, j, i)];
                x->grad = k;
                x->cut = j;
                x->micro = i;
                x->src_stage = k ? j + 1 : j;
                x->dst_stage = k ? j : j + 1;
                x->src_gpu = in->first_gpu + x->src_stage;
                x->dst_gpu = in->first_gpu + x->dst_stage;
                x->route = in->peer && in->peer[x->src_gpu * in->ngpu + x->dst_gpu]
                               ? LAUNCH_ROUTE_PEER
                               : LAUNCH_ROUTE_HOST;
                x->bytes = w->stages[j].send_bytes;
                x->send_at = x->recv_at = -1;
            }
    for (j = 0; j < pp; j++) {
        launch_exec_stage *st = &out->st[j];
        launch_op o;
        int np;

        st->gpu = in->first_gpu + j;
        st->fwd_extra_s = in->fwd_extra_s ? in->fwd_extra_s[j] : 0.0;
        st->bwd_extra_s = in->bwd_extra_s ? in->bwd_extra_s[j] : 0.0;
        st->ops = calloc((size_t)cap, sizeof *st->ops);
        if (!st->ops) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
        np = launch_stage_order(w->schedule, j, pp, gas, bwd, micro);
        for (i = 0; i < np; i++) {
            int in_cut = bwd[i] ? j : j - 1;   /* where the input comes from */
            int out_cut = bwd[i] ? j - 1 : j;  /* where the output goes */
            if (in_cut >= 0 && in_cut < cuts) {
                int xi = xfer_index(gas, bwd[i], in_cut, micro[i]);
                o = op_of(LAUNCH_OP_RECV);
                o.xfer = xi;
                out->xfers[xi].recv_at = push(st, cap, o);
            }
            o = op_of(bwd[i] ? LAUNCH_OP_BWD : LAUNCH_OP_FWD);
            o.micro = micro[i];
            push(st, cap, o);
            if (out_cut >= 0 && out_cut < cuts) {
                int xi = xfer_index(gas, bwd[i], out_cut, micro[i]);
                o = op_of(LAUNCH_OP_SEND);
                o.xfer = xi;
                out->xfers[xi].send_at = push(st, cap, o);
            }
        }
        if (!in->overlap_dp) /* DP all-reduces after the whole pipeline */
            barrier(st, cap, j, pp, LAUNCH_MARK_DRAINED);
        if (in->dp_s && in->dp_s[j] > 0.0) {
            o = op_of(LAUNCH_OP_DELAY);
            o.what = LAUNCH_DELAY_DP;
            o.delay_s = in->dp_s[j];
            push(st, cap, o);
        }
        if (tied && (j == in->tied_first || j == in->tied_last)) {
            push(st, cap, mark_op(LAUNCH_OP_MARK, j, LAUNCH_MARK_REDUCED));
            push(st, cap, mark_op(LAUNCH_OP_WAIT_MARK,
                                  j == in->tied_first ? in->tied_last : in->tied_first,
                                  LAUNCH_MARK_REDUCED));
            o = op_of(LAUNCH_OP_DELAY);
            o.what = LAUNCH_DELAY_TIED;
            o.delay_s = in->tied_s;
            push(st, cap, o);
        }
        if (in->optimizer)
            push(st, cap, op_of(LAUNCH_OP_OPTIMIZER));
        if (barrier(st, cap, j, pp, LAUNCH_MARK_END) < 0) {
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "stage %d: more ops than planned", j);
            goto done;
        }
    }
    for (i = 0; i < out->nxfer; i++)
        if (out->xfers[i].send_at < 0 || out->xfers[i].recv_at < 0) {
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "transfer %d (cut %d, micro-batch %d) has no %s",
                                i, out->xfers[i].cut, out->xfers[i].micro,
                                out->xfers[i].send_at < 0 ? "sender" : "receiver");
            goto done;
        }
done:
    free(bwd);
    free(micro);
    if (rc != UTIL_OK)
        launch_exec_free(out);
    return rc;
}

/* ---- CPU replay ------------------------------------------------------ */

static const char *op_name(int kind)
{
    static const char *const names[] = {"forward", "backward", "receive", "send",
                                        "mark", "wait for mark", "delay",
                                        "optimizer"};

    return kind >= 0 && kind <= LAUNCH_OP_OPTIMIZER ? names[kind] : "?";
}

int launch_exec_replay(const launch_exec *x, const double *fwd_s,
                       const double *bwd_s, const double *act_s,
                       const double *grad_s, const double *opt_s,
                       double *iter_s, double *busy_s, util_error *err)
{
    int pp = x->pp, cuts = pp - 1, j, rc = UTIL_OK, left = 0;
    int *pc = NULL, *sent = NULL, *markset = NULL;
    double *t = NULL, *arrive = NULL, *link = NULL, *mark = NULL, *busy = NULL;

    *iter_s = 0.0;
    pc = calloc((size_t)pp, sizeof *pc);
    t = calloc((size_t)pp, sizeof *t);
    busy = calloc((size_t)pp, sizeof *busy);
    markset = calloc((size_t)pp * LAUNCH_NMARKS, sizeof *markset);
    mark = calloc((size_t)pp * LAUNCH_NMARKS, sizeof *mark);
    sent = calloc((size_t)x->nxfer + 1, sizeof *sent);
    arrive = calloc((size_t)x->nxfer + 1, sizeof *arrive);
    link = calloc((size_t)(2 * cuts + 1), sizeof *link);
    if (!pc || !t || !busy || !markset || !mark || !sent || !arrive || !link) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < pp; j++)
        left += x->st[j].nops;
    while (left > 0) {
        int progress = 0;
        for (j = 0; j < pp; j++) {
            const launch_exec_stage *st = &x->st[j];
            while (pc[j] < st->nops) {
                const launch_op *o = &st->ops[pc[j]];
                double d;
                if (o->kind == LAUNCH_OP_RECV) {
                    if (!sent[o->xfer])
                        break;
                    if (arrive[o->xfer] > t[j])
                        t[j] = arrive[o->xfer];
                } else if (o->kind == LAUNCH_OP_WAIT_MARK) {
                    size_t at = (size_t)o->stage * LAUNCH_NMARKS + (size_t)o->mark;
                    if (!markset[at])
                        break;
                    if (mark[at] > t[j])
                        t[j] = mark[at];
                } else if (o->kind == LAUNCH_OP_SEND) {
                    const launch_xfer *xf = &x->xfers[o->xfer];
                    int l = 2 * xf->cut + xf->grad;
                    const double *dur = xf->grad ? grad_s : act_s;
                    double start = t[j] > link[l] ? t[j] : link[l];
                    link[l] = start + (dur ? dur[xf->cut] : 0.0);
                    arrive[o->xfer] = link[l];
                    sent[o->xfer] = 1;
                } else if (o->kind == LAUNCH_OP_MARK) {
                    size_t at = (size_t)j * LAUNCH_NMARKS + (size_t)o->mark;
                    mark[at] = t[j];
                    markset[at] = 1;
                } else {
                    if (o->kind == LAUNCH_OP_FWD) {
                        d = fwd_s[j] + st->fwd_extra_s;
                        busy[j] += d;
                    } else if (o->kind == LAUNCH_OP_BWD) {
                        d = bwd_s[j] + st->bwd_extra_s;
                        busy[j] += d;
                    } else if (o->kind == LAUNCH_OP_DELAY) {
                        d = o->delay_s;
                    } else {
                        d = opt_s ? opt_s[j] : 0.0;
                    }
                    t[j] += d;
                }
                pc[j]++;
                left--;
                progress = 1;
            }
        }
        if (!progress) {
            for (j = 0; j < pp && pc[j] >= x->st[j].nops; j++)
                ;
            rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                                "the execution plan deadlocks: stage %d waits at op "
                                "%d (%s)", j, pc[j], op_name(x->st[j].ops[pc[j]].kind));
            goto done;
        }
    }
    for (j = 0; j < pp; j++) {
        if (t[j] > *iter_s)
            *iter_s = t[j];
        if (busy_s)
            busy_s[j] = busy[j];
    }
done:
    free(pc);
    free(t);
    free(busy);
    free(markset);
    free(mark);
    free(sent);
    free(arrive);
    free(link);
    return rc;
}

/* ---- what the GPUs measured ------------------------------------------ */

int launch_exec_samples_alloc(launch_exec_samples *s, int pp, int iterations,
                              int npass)
{
    size_t n = (size_t)pp * (size_t)iterations * (size_t)npass;

    memset(s, 0, sizeof *s);
    if (pp < 1 || iterations < 1 || npass < 1)
        return UTIL_EINVAL;
    s->pp = pp;
    s->iterations = iterations;
    s->npass = npass;
    s->iter_s = calloc((size_t)iterations, sizeof *s->iter_s);
    s->kern_s = calloc(n, sizeof *s->kern_s);
    s->full_s = calloc(n, sizeof *s->full_s);
    s->opt_s = calloc((size_t)pp * (size_t)iterations, sizeof *s->opt_s);
    s->bwd = calloc((size_t)pp * (size_t)npass, sizeof *s->bwd);
    if (!s->iter_s || !s->kern_s || !s->full_s || !s->opt_s || !s->bwd) {
        launch_exec_samples_free(s);
        return UTIL_ENOMEM;
    }
    return UTIL_OK;
}

void launch_exec_samples_free(launch_exec_samples *s)
{
    if (!s)
        return;
    free(s->iter_s);
    free(s->kern_s);
    free(s->full_s);
    free(s->opt_s);
    free(s->bwd);
    memset(s, 0, sizeof *s);
}

void launch_exec_result_free(launch_exec_result *r)
{
    if (!r)
        return;
    free(r->fwd_s);
    free(r->bwd_s);
    free(r->busy_s);
    memset(r, 0, sizeof *r);
}

/* Median (and IQR) of the passes of one direction of stage j in a. */
static int dir_stats(const launch_exec_samples *s, const double *a, int j,
                     int bwd, double *buf, prof_stats *st, util_error *err)
{
    int i, p, n = 0;

    for (i = 0; i < s->iterations; i++)
        for (p = 0; p < s->npass; p++)
            if (s->bwd[j * s->npass + p] == bwd)
                buf[n++] = a[((size_t)j * (size_t)s->iterations + (size_t)i) *
                                 (size_t)s->npass + (size_t)p];
    if (n == 0) {
        memset(st, 0, sizeof *st);
        return UTIL_OK;
    }
    return prof_stats_of(buf, n, st, err);
}

int launch_exec_summarise(const launch_exec_samples *s, launch_measure *meas,
                          launch_exec_result *res, util_error *err)
{
    double *buf = NULL;
    prof_stats st;
    int j, i, p, rc = UTIL_OK;

    memset(res, 0, sizeof *res);
    if (!s->iter_s || s->pp < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL, "no samples");
    buf = malloc((size_t)s->iterations * (size_t)(s->npass + 1) * sizeof *buf);
    res->fwd_s = calloc((size_t)s->pp, sizeof *res->fwd_s);
    res->bwd_s = calloc((size_t)s->pp, sizeof *res->bwd_s);
    res->busy_s = calloc((size_t)s->pp, sizeof *res->busy_s);
    if (!buf || !res->fwd_s || !res->bwd_s || !res->busy_s) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    if ((rc = prof_stats_of(s->iter_s, s->iterations, &st, err)) != UTIL_OK)
        goto done;
    res->iter_s = st.median;
    res->iter_iqr_s = st.iqr;
    res->iter_min_s = st.min;
    res->iter_max_s = st.max;
    for (j = 0; j < s->pp; j++) {
        launch_measure *m = &meas[j];
        memset(m, 0, sizeof *m);
        m->measured = 1;
        if ((rc = dir_stats(s, s->kern_s, j, 0, buf, &st, err)) != UTIL_OK)
            goto done;
        m->fwd_s = st.median;
        m->fwd_iqr_s = st.iqr;
        if ((rc = dir_stats(s, s->kern_s, j, 1, buf, &st, err)) != UTIL_OK)
            goto done;
        m->bwd_s = st.median;
        m->bwd_iqr_s = st.iqr;
        if ((rc = dir_stats(s, s->full_s, j, 0, buf, &st, err)) != UTIL_OK)
            goto done;
        res->fwd_s[j] = st.median;
        if ((rc = dir_stats(s, s->full_s, j, 1, buf, &st, err)) != UTIL_OK)
            goto done;
        res->bwd_s[j] = st.median;
        for (i = 0; i < s->iterations; i++) {
            double sum = 0.0;
            for (p = 0; p < s->npass; p++)
                sum += s->full_s[((size_t)j * (size_t)s->iterations + (size_t)i) *
                                     (size_t)s->npass + (size_t)p];
            buf[i] = sum;
        }
        if ((rc = prof_stats_of(buf, s->iterations, &st, err)) != UTIL_OK)
            goto done;
        res->busy_s[j] = st.median;
        m->busy_s = st.median;
        if ((rc = prof_stats_of(s->opt_s + (size_t)j * (size_t)s->iterations,
                                s->iterations, &st, err)) != UTIL_OK)
            goto done;
        m->opt_s = st.median;
    }
done:
    free(buf);
    if (rc != UTIL_OK)
        launch_exec_result_free(res);
    return rc;
}
