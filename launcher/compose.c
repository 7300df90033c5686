/* launcher/compose.c: an iteration from measured stage times and the
 * cost model's communication, through the schedule simulator, and the
 * trial document (docs/profiler.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "launch.h"

void launch_trial_free(launch_trial *t)
{
    if (!t)
        return;
    free(t->pred_fwd_s);
    free(t->pred_bwd_s);
    free(t->used_fwd_s);
    free(t->used_bwd_s);
    free(t->tp_comm_s);
    free(t->opt_s);
    free(t->busy_s);
    free(t->extra_fwd_s);
    free(t->extra_bwd_s);
    free(t->dp_stage_s);
    free(t->gpu);
    free(t->route);
    memset(t, 0, sizeof *t);
}

/* Modelled parts of (replica r, stage j) on its slowest device: TP
 * all-reduce inside fwd + bwd, and fwd / bwd of layers the GPU cannot
 * synthesise (generic kind). */
static void modelled_parts(const plan_doc *d, const fmt_strategy *s, int j,
                           int r, double *comm, double *gen_f, double *gen_b)
{
    const fmt_profile *prof = d->have_profile ? &d->profile : NULL;
    double bw, lat, worst = -1.0;
    int k, l;

    *comm = *gen_f = *gen_b = 0.0;
    cost_tp_ring(&d->cluster, &d->params, s, j, r, &bw, &lat);
    for (k = 0; k < s->tp; k++) {
        int dev = fmt_rank_device(s, j, r, k);
        const fmt_device_type *dt = fmt_device(&d->cluster, dev);
        const fmt_node *node = &d->cluster.nodes[d->cluster.device_node[dev]];
        double tot = 0.0, c = 0.0, gf = 0.0, gb = 0.0;
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
            cost_layer_time lt;
            cost_layer_time_of(&d->model, prof, &d->params, dt, l, s->tp, s->mbs,
                               bw, lat, node->intra_bw * d->params.intra_eff, &lt);
            tot += lt.fwd + lt.bwd;
            c += lt.comm;
            if (!prof_kind_measurable(d->model.layers[l].kind) &&
                d->model.layers[l].kind != FMT_KIND_NOOP) {
                gf += lt.fwd;
                gb += lt.bwd;
            }
        }
        if (tot > worst) { /* a stage runs at its slowest device */
            worst = tot;
            *comm = c;
            *gen_f = gf;
            *gen_b = gb;
        }
    }
}

/* Per-index mean duration of the events of one kind; wrap: of the
 * interleaved schedule's activations from stage pp - 1 to stage 0, per
 * replica. */
static void mean_durations(const cost_timeline *tl, int kind, int pp, int wrap,
                           double *out, int n, int *cnt)
{
    int i;

    memset(cnt, 0, (size_t)n * sizeof *cnt);
    for (i = 0; i < n; i++)
        out[i] = 0.0;
    for (i = 0; i < tl->nevents; i++) {
        const cost_event *e = &tl->events[i];
        int at;
        if (e->kind != kind)
            continue;
        if (kind == COST_EV_FWD || kind == COST_EV_BWD)
            at = e->replica * pp + e->stage;
        else if (wrap) /* interleaved: activations from pp - 1 to 0 */
            at = kind == COST_EV_SEND_ACT && e->stage == pp - 1 ? e->replica : -1;
        else if (kind == COST_EV_SEND_ACT && e->stage < pp - 1)
            at = e->replica * (pp - 1) + e->stage;
        else if (kind == COST_EV_SEND_GRAD && e->stage > 0) /* j + 1 -> j */
            at = e->replica * (pp - 1) + e->stage - 1;
        else
            continue;
        if (at < 0 || at >= n)
            continue;
        out[at] += e->end - e->start;
        cnt[at]++;
    }
    for (i = 0; i < n; i++)
        if (cnt[i] > 0)
            out[i] /= cnt[i];
}

int launch_compose(const plan_doc *d, const launch_work *w,
                   const launch_measure *meas, launch_trial *out,
                   util_error *err)
{
    const fmt_strategy *s;
    const fmt_profile *prof = d->have_profile ? &d->profile : NULL;
    cost_timeline tl_pred, tl_meas;
    cost_sim_input in;
    double *pf = NULL, *pb = NULL, *uf = NULL, *ub = NULL, *sa = NULL,
           *sg = NULL, *dps = NULL, *opt = NULL, *wrap = NULL;
    int *cnt = NULL;
    int pp, dp, cuts, i, j, r, rc = UTIL_OK;
    size_t nst;

    memset(out, 0, sizeof *out);
    memset(&in, 0, sizeof in);
    memset(&tl_pred, 0, sizeof tl_pred);
    memset(&tl_meas, 0, sizeof tl_meas);
    if (w->strategy < 0 || w->strategy >= d->n || !w->stages)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "work does not belong to this plan");
    s = &d->s[w->strategy];
    pp = s->pp;
    dp = s->dp;
    cuts = pp - 1;
    nst = (size_t)dp * (size_t)pp;
    out->pp = pp;
    out->dp = dp;
    out->gas = s->gas;
    out->predicted_s = d->predicted_s ? d->predicted_s[w->strategy] : -1.0;

    /* the cost model's timeline: what the plan expects, and the parts a
     * single GPU cannot measure (transfers, all-reduces) */
    rc = cost_simulate(&d->cluster, &d->model, prof, &d->params, s,
                       d->params.overlap_dp, &tl_pred, err);
    if (rc != UTIL_OK)
        goto done;
    out->simulated_s = tl_pred.iter_s;

    pf = calloc(nst, sizeof *pf);
    pb = calloc(nst, sizeof *pb);
    uf = calloc(nst, sizeof *uf);
    ub = calloc(nst, sizeof *ub);
    sa = calloc(nst, sizeof *sa); /* dp * cuts <= nst */
    sg = calloc(nst, sizeof *sg);
    dps = calloc((size_t)pp, sizeof *dps);
    opt = calloc((size_t)pp, sizeof *opt);
    cnt = calloc(nst, sizeof *cnt);
    wrap = calloc((size_t)dp, sizeof *wrap);
    out->pred_fwd_s = calloc((size_t)pp, sizeof(double));
    out->pred_bwd_s = calloc((size_t)pp, sizeof(double));
    out->used_fwd_s = calloc((size_t)pp, sizeof(double));
    out->used_bwd_s = calloc((size_t)pp, sizeof(double));
    out->tp_comm_s = calloc((size_t)pp, sizeof(double));
    out->opt_s = calloc((size_t)pp, sizeof(double));
    out->busy_s = calloc((size_t)pp, sizeof(double));
    out->extra_fwd_s = calloc((size_t)pp, sizeof(double));
    out->extra_bwd_s = calloc((size_t)pp, sizeof(double));
    out->dp_stage_s = calloc((size_t)pp, sizeof(double));
    if (!pf || !pb || !uf || !ub || !sa || !sg || !dps || !opt || !cnt || !wrap ||
        !out->pred_fwd_s || !out->pred_bwd_s || !out->used_fwd_s ||
        !out->used_bwd_s || !out->tp_comm_s || !out->opt_s || !out->busy_s ||
        !out->extra_fwd_s || !out->extra_bwd_s || !out->dp_stage_s) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    mean_durations(&tl_pred, COST_EV_FWD, pp, 0, pf, (int)nst, cnt);
    mean_durations(&tl_pred, COST_EV_BWD, pp, 0, pb, (int)nst, cnt);
    for (i = 0; i < (int)nst && tl_pred.vpp > 1; i++) { /* all v chunks */
        pf[i] *= tl_pred.vpp;
        pb[i] *= tl_pred.vpp;
    }
    if (tl_pred.vpp > 1 && cuts > 0) /* activations, as in cost_simulate */
        mean_durations(&tl_pred, COST_EV_SEND_ACT, pp, 1, wrap, dp, cnt);
    if (cuts > 0) {
        mean_durations(&tl_pred, COST_EV_SEND_ACT, pp, 0, sa, dp * cuts, cnt);
        mean_durations(&tl_pred, COST_EV_SEND_GRAD, pp, 0, sg, dp * cuts, cnt);
    }
    {
        int tf = pp, tlast = -1;
        for (i = 0; i < tl_pred.nevents; i++) {
            const cost_event *e = &tl_pred.events[i];
            double len = e->end - e->start;
            if (e->kind == COST_EV_DP_ALLREDUCE && e->micro == -2) {
                if (len > in.tied_s)
                    in.tied_s = len;
                if (e->stage < tf)
                    tf = e->stage;
                if (e->stage > tlast)
                    tlast = e->stage;
            } else if (e->kind == COST_EV_DP_ALLREDUCE && e->stage >= 0 &&
                       e->stage < pp) {
                if (len > dps[e->stage])
                    dps[e->stage] = len;
            } else if (e->kind == COST_EV_OPTIMIZER && e->stage >= 0 &&
                       e->stage < pp) {
                if (len > opt[e->stage])
                    opt[e->stage] = len;
            }
        }
        if (tlast >= 0 && tf < tlast) {
            in.tied_first = tf;
            in.tied_last = tlast;
        } else {
            in.tied_s = 0.0;
        }
    }
    out->tied_s = in.tied_s;
    out->tied_first = in.tied_first;
    out->tied_last = in.tied_last;
    out->overlap_dp = d->params.overlap_dp ? 1 : 0;
    for (j = 0; j < pp; j++) { /* what an executed replica 0 cannot run */
        double comm, gf, gb;
        modelled_parts(d, s, j, 0, &comm, &gf, &gb);
        out->extra_fwd_s[j] = gf + 0.5 * comm;
        out->extra_bwd_s[j] = gb + 0.5 * comm;
        out->dp_stage_s[j] = dps[j];
    }

    /* measured stage times, with the modelled parts added */
    for (j = 0; j < pp; j++) {
        int src = -1;
        if (meas[j].measured)
            src = j;
        else if (meas[w->stages[j].same_as].measured)
            src = w->stages[j].same_as;
        out->pred_fwd_s[j] = out->pred_bwd_s[j] = 0.0;
        for (r = 0; r < dp; r++) {
            size_t q = (size_t)r * (size_t)pp + (size_t)j;
            double comm, gf, gb;
            if (pf[q] + pb[q] > out->pred_fwd_s[j] + out->pred_bwd_s[j]) {
                out->pred_fwd_s[j] = pf[q];
                out->pred_bwd_s[j] = pb[q];
            }
            if (src < 0) {
                uf[q] = pf[q];
                ub[q] = pb[q];
                continue;
            }
            modelled_parts(d, s, j, r, &comm, &gf, &gb);
            /* as many TP all-reduces in backward as in forward */
            uf[q] = meas[src].fwd_s + gf + 0.5 * comm;
            ub[q] = meas[src].bwd_s + gb + 0.5 * comm;
            if (comm > out->tp_comm_s[j])
                out->tp_comm_s[j] = comm;
        }
        out->used_fwd_s[j] = uf[j];
        out->used_bwd_s[j] = ub[j];
        /* an offloaded step runs on the host: the GPU's Adam measured
           here is not it, the model's host step stays */
        if (src >= 0 && meas[src].opt_s >= 0.0 &&
            cost_strategy_offload(&d->params, s) != FMT_OFFLOAD_OPTIMIZER)
            opt[j] = meas[src].opt_s;
        out->opt_s[j] = opt[j];
        if (dps[j] > out->dp_s)
            out->dp_s = dps[j];
    }
    for (j = 0; j < cuts; j++)
        out->p2p_s += sa[j] + sg[j];

    in.pp = pp;
    in.dp = dp;
    in.gas = s->gas;
    in.schedule = s->schedule;
    in.fwd = uf;
    in.bwd = ub;
    in.send_act = cuts > 0 ? sa : NULL;
    in.send_grad = cuts > 0 ? sg : NULL;
    in.dp_s = dps;
    in.opt_s = opt;
    in.overlap_dp = d->params.overlap_dp ? 1 : 0;
    in.vpp = tl_pred.vpp;
    in.send_wrap = wrap;
    rc = cost_simulate_stages(&in, &tl_meas, err);
    if (rc != UTIL_OK)
        goto done;
    out->measured_s = tl_meas.iter_s;
    for (j = 0; j < pp; j++)
        out->busy_s[j] = tl_meas.busy_s ? tl_meas.busy_s[j] : 0.0;
done:
    cost_timeline_free(&tl_pred);
    cost_timeline_free(&tl_meas);
    free(pf);
    free(pb);
    free(uf);
    free(ub);
    free(sa);
    free(sg);
    free(dps);
    free(opt);
    free(cnt);
    free(wrap);
    if (rc != UTIL_OK)
        launch_trial_free(out);
    return rc;
}

int launch_trial_set_executed(launch_trial *t, const launch_exec *x,
                              const launch_exec_result *r, util_error *err)
{
    int j;

    free(t->gpu);
    free(t->route);
    t->gpu = calloc((size_t)t->pp, sizeof *t->gpu);
    t->route = calloc((size_t)(t->pp > 1 ? t->pp - 1 : 1), sizeof *t->route);
    if (!t->gpu || !t->route)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    t->executed = 1;
    t->composed_s = t->measured_s;
    t->measured_s = r->iter_s;
    t->iter_iqr_s = r->iter_iqr_s;
    for (j = 0; j < t->pp && j < x->pp; j++) {
        t->gpu[j] = x->st[j].gpu;
        t->used_fwd_s[j] = r->fwd_s[j];
        t->used_bwd_s[j] = r->bwd_s[j];
        t->busy_s[j] = r->busy_s[j];
    }
    for (j = 0; j < x->nxfer; j++) /* activations of cut c, micro-batch 0 */
        if (!x->xfers[j].grad && x->xfers[j].micro == 0 && x->xfers[j].cut < t->pp - 1)
            t->route[x->xfers[j].cut] = x->xfers[j].route;
    return UTIL_OK;
}

/* ---- the trial document ---------------------------------------------- */

/* Shortest of %.15g..%.17g that reads back exactly; null when not finite
 * or negative (= unknown). */
static cJSON *num(double v)
{
    char buf[40];
    int prec;

    if (!isfinite(v) || v < 0.0)
        return cJSON_CreateNull();
    for (prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return cJSON_CreateRaw(buf);
}

static cJSON *str(const char *s)
{
    return s && s[0] ? util_json_str(s) : cJSON_CreateNull();
}

static cJSON *stage_json(const launch_work *w, const launch_measure *meas,
                         const launch_trial *t, int j)
{
    const launch_stage *st = &w->stages[j];
    cJSON *o = cJSON_CreateObject(), *ly;
    int ok = o != NULL, src = -1;
    char source[64];

    if (meas[j].measured)
        src = j;
    else if (meas[st->same_as].measured)
        src = st->same_as;
    if (t->executed)
        snprintf(source, sizeof source, "executed on GPU %d", t->gpu ? t->gpu[j] : -1);
    else if (src == j)
        snprintf(source, sizeof source, "measured");
    else if (src >= 0)
        snprintf(source, sizeof source, "measured (same layers as stage %d)", src);
    else
        snprintf(source, sizeof source, "predicted");
    ok = ok && prof_json_put(o, "index", cJSON_CreateNumber(j));
    ly = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "layers", ly);
    ok = ok && prof_json_put(ly, NULL, cJSON_CreateNumber(st->first));
    ok = ok && prof_json_put(ly, NULL, cJSON_CreateNumber(st->last));
    ok = ok && prof_json_put(o, "device_type", str(st->device_type));
    ok = ok && prof_json_put(o, "source", cJSON_CreateString(source));
    ok = ok && prof_json_put(o, "synthesised_layers", cJSON_CreateNumber(st->nsynth));
    ok = ok && prof_json_put(o, "modelled_layers", cJSON_CreateNumber(st->nmodelled));
    ok = ok && prof_json_put(o, "measured_fwd_s", src >= 0 ? num(meas[src].fwd_s) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "measured_bwd_s", src >= 0 ? num(meas[src].bwd_s) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "measured_fwd_iqr_s",
                   src >= 0 ? num(meas[src].fwd_iqr_s) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "measured_bwd_iqr_s",
                   src >= 0 ? num(meas[src].bwd_iqr_s) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "modelled_tp_allreduce_s", num(t->tp_comm_s[j]));
    ok = ok && prof_json_put(o, "fwd_s", num(t->used_fwd_s[j]));
    ok = ok && prof_json_put(o, "bwd_s", num(t->used_bwd_s[j]));
    ok = ok && prof_json_put(o, "time_per_microbatch_s", num(t->used_fwd_s[j] + t->used_bwd_s[j]));
    ok = ok && prof_json_put(o, "predicted_fwd_s", num(t->pred_fwd_s[j]));
    ok = ok && prof_json_put(o, "predicted_bwd_s", num(t->pred_bwd_s[j]));
    ok = ok && prof_json_put(o, "predicted_time_per_microbatch_s",
                   num(t->pred_fwd_s[j] + t->pred_bwd_s[j]));
    ok = ok && prof_json_put(o, "optimizer_s", num(t->opt_s[j]));
    ok = ok && prof_json_put(o, "optimizer_measured",
                   cJSON_CreateBool(src >= 0 && meas[src].opt_s >= 0.0));
    ok = ok && prof_json_put(o, "busy_s", num(t->busy_s[j]));
    ok = ok && prof_json_put(o, "gpu", t->executed && t->gpu ? cJSON_CreateNumber(t->gpu[j])
                                                  : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "route_to_next",
                   t->executed && t->route && j < t->pp - 1
                       ? cJSON_CreateString(t->route[j] == LAUNCH_ROUTE_PEER
                                                ? "peer" : "host")
                       : cJSON_CreateNull());
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

char *launch_trial_json(const plan_doc *d, const launch_work *w,
                        const launch_measure *meas, const launch_trial *t,
                        const prof_device_info *dev, int iterations)
{
    const fmt_strategy *s = &d->s[w->strategy];
    cJSON *doc = cJSON_CreateObject(), *o, *arr, *st, *list;
    char *text = NULL, note[512];
    int ok = doc != NULL, i, nmeas = 0;

    for (i = 0; i < w->pp; i++)
        nmeas += meas[i].measured;
    if (t->executed && t->processes > 0)
        snprintf(note, sizeof note,
                 "every rank ran as its own process over NCCL (%d rank%s, %d "
                 "stage%s): its layers, tensor-parallel collectives, pipeline "
                 "sends and receives, data-parallel collectives and optimizer "
                 "step; measured_s is the slowest rank's median wall time of an "
                 "iteration (CUDA events)",
                 t->processes, t->processes == 1 ? "" : "s", w->pp,
                 w->pp == 1 ? "" : "s");
    else if (t->executed)
        snprintf(note, sizeof note,
                 "the pipeline ran for real: %d stages on %d local GPUs (%s), "
                 "one host thread each, the schedule's passes in order, "
                 "activations and gradients copied between the stages' GPUs; "
                 "measured_s is the median wall time of an iteration (CUDA "
                 "events); tensor- and data-parallel all-reduces and generic "
                 "layers are the cost model's, run as GPU delays",
                 w->pp, w->pp, dev && dev->type[0] ? dev->type : "unknown");
    else
        snprintf(note, sizeof note,
                 "%d of %d stages ran on the local GPU (%s), one micro-batch at a "
                 "time in the schedule's order; the iteration is composed by the "
                 "planner's schedule simulator (cost_simulate_stages) with the "
                 "cost model's transfers, tensor- and data-parallel all-reduces%s",
                 nmeas, w->pp, dev && dev->type[0] ? dev->type : "unknown",
                 nmeas < w->pp ? " and the stages not measured" : "");
    ok = ok && prof_json_put(doc, "format", cJSON_CreateString(LAUNCH_TRIAL_FORMAT));
    o = cJSON_CreateObject();
    ok = ok && prof_json_put(doc, "launcher", o);
    ok = ok && prof_json_put(o, "name", cJSON_CreateString("hetplan-launch"));
    ok = ok && prof_json_put(o, "version", cJSON_CreateString(PROF_VERSION));
    o = cJSON_CreateObject();
    ok = ok && prof_json_put(doc, "plan", o);
    ok = ok && prof_json_put(o, "path", util_json_str(d->path));
    ok = ok && prof_json_put(o, "strategy", cJSON_CreateNumber(w->strategy + 1));
    ok = ok && prof_json_put(o, "method", str(d->method));
    ok = ok && prof_json_put(o, "cluster", str(d->cluster_path));
    ok = ok && prof_json_put(o, "model", str(d->model_path));
    ok = ok && prof_json_put(o, "profile", str(d->profile_path));
    ok = ok && prof_json_put(doc, "global_batch", cJSON_CreateNumber(d->global_batch));
    ok = ok && prof_json_put(doc, "mode", cJSON_CreateString(t->executed ? "executed" : "composed"));
    ok = ok && prof_json_put(doc, "mode_reason", str(t->reason));
    ok = ok && prof_json_put(doc, "selection", cJSON_CreateString(w->rank >= 0 ? "rank" : "all-local"));
    ok = ok && prof_json_put(doc, "rank", w->rank >= 0 ? cJSON_CreateNumber(w->rank)
                                              : cJSON_CreateNull());
    ok = ok && prof_json_put(doc, "composed", cJSON_CreateBool(!t->executed));
    ok = ok && prof_json_put(doc, "note", cJSON_CreateString(note));
    ok = ok && prof_json_put(doc, "iterations", cJSON_CreateNumber(iterations));
    if (dev) {
        char *dj = prof_device_info_json(dev);
        ok = ok && dj != NULL && prof_json_put(doc, "local_device", cJSON_Parse(dj));
        free(dj);
    } else {
        ok = ok && prof_json_put(doc, "local_device", cJSON_CreateNull());
    }

    list = cJSON_CreateArray();
    ok = ok && prof_json_put(doc, "strategies", list);
    o = cJSON_CreateObject();
    ok = ok && prof_json_put(list, NULL, o);
    ok = ok && prof_json_put(o, "tp", cJSON_CreateNumber(s->tp));
    ok = ok && prof_json_put(o, "dp", cJSON_CreateNumber(s->dp));
    ok = ok && prof_json_put(o, "pp", cJSON_CreateNumber(s->pp));
    ok = ok && prof_json_put(o, "mbs", cJSON_CreateNumber(s->mbs));
    ok = ok && prof_json_put(o, "micro_batches", cJSON_CreateNumber(s->gas));
    ok = ok && prof_json_put(o, "schedule", cJSON_CreateString(
                                      s->schedule == FMT_SCHED_GPIPE ? "gpipe" : "1f1b"));
    arr = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "stage_boundaries", arr);
    for (i = 0; ok && i <= s->pp; i++)
        ok = prof_json_put(arr, NULL, cJSON_CreateNumber(s->bounds[i]));
    arr = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "ranks", arr);
    for (i = 0; ok && i < w->ranks; i++)
        ok = prof_json_put(arr, NULL, cJSON_CreateNumber(s->ranks[i]));
    ok = ok && prof_json_put(o, "measured_s", num(t->measured_s));
    ok = ok && prof_json_put(o, "predicted_s", num(t->predicted_s));
    ok = ok && prof_json_put(o, "simulated_s", num(t->simulated_s));
    ok = ok && prof_json_put(o, "measured_iqr_s", t->executed ? num(t->iter_iqr_s) : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "composed_from_measured_s",
                   t->executed ? num(t->composed_s) : num(t->measured_s));
    ok = ok && prof_json_put(o, "measured_over_predicted",
                   t->predicted_s > 0.0 ? num(t->measured_s / t->predicted_s)
                                        : cJSON_CreateNull());
    ok = ok && prof_json_put(o, "modelled_p2p_per_microbatch_s", num(t->p2p_s));
    ok = ok && prof_json_put(o, "modelled_dp_allreduce_s", num(t->dp_s));
    st = cJSON_CreateArray();
    ok = ok && prof_json_put(o, "stages", st);
    for (i = 0; ok && i < w->pp; i++)
        ok = prof_json_put(st, NULL, stage_json(w, meas, t, i));
    if (ok)
        text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return text;
}
