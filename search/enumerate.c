/* search/enumerate.c: AMP Algorithm 1 (every degree, micro-batch size
 * and placement rule, with the optimal layer assignment of each) and the
 * Megatron heuristic baseline of AMP section 4.1. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

void search_params_init(search_params *p)
{
    memset(p, 0, sizeof *p);
    p->method = SEARCH_METHOD_AMP;
    p->global_batch = 0;
    p->top_k = 5;
    p->max_tp = 0;
    p->max_mbs = 0;
    p->placements = (1u << SEARCH_PLACE_NPLACEMENTS) - 1u;
    p->keep_infeasible = 0;
    p->uneven_tp = 1;
    p->tp_granule = 64;
}

void search_result_free(search_result *r)
{
    int i;

    if (r == NULL)
        return;
    for (i = 0; i < r->n; i++) {
        fmt_strategy_free(&r->cands[i].s);
        cost_result_free(&r->cands[i].r);
    }
    free(r->cands);
    memset(r, 0, sizeof *r);
}

/* Groups the layer assignment works on: each layer without
 * parameters is glued to the layer with parameters before it (leading
 * ones to the first with parameters), so that no stage can be left
 * without parameters (cost_empty_stage).  start gets G + 1 entries
 * (start[G] = L); returns G, the layers with parameters. */
static int param_groups(const fmt_model *m, int *start)
{
    int l, g = 0;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].params > 0.0) {
            start[g] = g == 0 ? 0 : l;
            g++;
        }
    start[g] = m->nlayers;
    return g;
}

/* First layer of group q of param_groups, without a table. */
static int group_start(const fmt_model *m, int q)
{
    int l, seen = 0;

    if (q <= 0)
        return 0;
    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].params > 0.0 && seen++ == q)
            return l;
    return m->nlayers;
}

int search_assign_layers(const fmt_cluster *c, const fmt_model *m,
                         const fmt_profile *prof, const cost_params *cp,
                         fmt_strategy *s, util_error *err)
{
    int L = m->nlayers, k = s->pp, j, l, d, t, g, G, rc = UTIL_OK;
    double *tt = NULL, *e = NULL, *mem = NULL, *cap = NULL, obj;
    double *tg = NULL, *eg = NULL, *mg = NULL;
    int *gs = NULL, *gb = NULL;
    search_dp_input in;

    tt = calloc((size_t)k * (size_t)L, sizeof *tt);
    e = calloc((size_t)k * ((size_t)L + 1), sizeof *e);
    mem = calloc((size_t)k * (size_t)L, sizeof *mem);
    cap = calloc((size_t)k, sizeof *cap);
    gs = calloc((size_t)L + 1, sizeof *gs);
    gb = calloc((size_t)k + 1, sizeof *gb);
    if (!tt || !e || !mem || !cap || !gs || !gb) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    G = param_groups(m, gs);
    if (G < k) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "model '%s' has %d layers holding parameters, fewer "
                            "than the %d pipeline stages: a stage without "
                            "parameters cannot run (an optimizer per stage)",
                            m->name, G, k);
        goto done;
    }
    for (j = 0; j < k; j++) {
        int inflight = cost_inflight(cp, j, s->pp, s->gas);
        /* memory: per-layer sums plus a bound of the rest */
        double over = cost_memory_overhead_bound(m, cp, s->tp, s->mbs, j, s->pp,
                                                 inflight, s->gas);
        cap[j] = INFINITY;
        for (d = 0; d < s->dp; d++) {
            double bw, lat;
            cost_tp_ring(c, cp, s, j, d, &bw, &lat);
            for (t = 0; t < s->tp; t++) {
                int dev = fmt_rank_device(s, j, d, t);
                const fmt_device_type *dt = fmt_device(c, dev);
                const fmt_node *node = &c->nodes[c->device_node[dev]];
                for (l = 0; l < L; l++) {
                    cost_layer_time lt;
                    cost_layer_time_of(m, prof, cp, dt, l, s->tp, s->mbs, bw, lat,
                                       node->intra_bw * cp->intra_eff, &lt);
                    cost_rank_layer_adjust(m, cp, dt, s, dev, l, &lt);
                    if (lt.fwd + lt.bwd > tt[j * L + l])
                        tt[j * L + l] = lt.fwd + lt.bwd;
                }
                if (dt->mem_bytes - over < cap[j])
                    cap[j] = dt->mem_bytes - over;
            }
        }
        for (l = 0; l < L; l++)
            mem[j * L + l] = cost_layer_memory(m, cp, l, s->tp, s->dp, s->mbs,
                                               inflight);
        if (cap[j] < 0.0)
            cap[j] = 0.0;
    }
    /* cut costs: activation forward and gradient backward between the
     * stages, on the worst link any replica/TP rank uses there, with the
     * concurrent cross-node flows sharing each NIC */
    for (j = 0; j + 1 < k; j++) {
        double bw, lat;
        cost_cut_link(c, cp, s, j, &bw, &lat);
        for (l = 1; l <= L; l++)
            e[j * (L + 1) + l] =
                2.0 * (lat + (double)s->mbs * m->layers[l - 1].out_bytes / bw);
    }
    /* the DP runs on the G groups: sums of their layers' times and
     * memory, cuts only before a group (identical when G = L) */
    tg = calloc((size_t)k * (size_t)G, sizeof *tg);
    eg = calloc((size_t)k * ((size_t)G + 1), sizeof *eg);
    mg = calloc((size_t)k * (size_t)G, sizeof *mg);
    if (!tg || !eg || !mg) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < k; j++)
        for (g = 0; g < G; g++) {
            for (l = gs[g]; l < gs[g + 1]; l++) {
                tg[j * G + g] += tt[j * L + l];
                mg[j * G + g] += mem[j * L + l];
            }
            eg[j * (G + 1) + g] = e[j * (L + 1) + gs[g]];
        }
    in.L = G;
    in.k = k;
    in.gas = s->gas;
    in.t = tg;
    in.e = eg;
    in.mem = mg;
    in.cap = cap;
    rc = search_dp_assign(&in, gb, &obj, err);
    if (rc == UTIL_OK) /* group boundaries back to layer boundaries */
        for (j = 0; j <= k; j++)
            s->bounds[j] = gs[gb[j]];
done:
    free(tt);
    free(e);
    free(mem);
    free(cap);
    free(tg);
    free(eg);
    free(mg);
    free(gs);
    free(gb);
    return rc;
}

/* Megatron's layer split: blocks divided as evenly as possible (earlier
 * stages take the remainder), the layers before the first block join
 * stage 0 and those after the last block join the last stage.  Models
 * with fewer blocks than stages are split by layers holding parameters. */
static void uniform_bounds(const fmt_model *m, fmt_strategy *s)
{
    int L = m->nlayers, k = s->pp, nb = 0, first = -1, last = -1, l, j;

    for (l = 0; l < L; l++)
        if (m->layers[l].kind == FMT_KIND_TRANSFORMER) {
            nb++;
            if (first < 0)
                first = l;
            last = l;
        }
    if (nb >= k) {
        s->bounds[0] = 0;
        s->bounds[k] = L;
        for (j = 1; j < k; j++) {
            int blocks = nb / k * j + (j < nb % k ? j : nb % k), seen = 0;
            for (l = first; l <= last; l++)
                if (m->layers[l].kind == FMT_KIND_TRANSFORMER && seen++ == blocks)
                    break;
            s->bounds[j] = l;
        }
        if (cost_empty_stage(m, s) < 0)
            return;
    }
    /* fewer blocks than stages (or blocks without parameters): the groups
     * of the layer assignment split evenly, so that every stage holds
     * parameters; by layer count when there are too few */
    nb = cost_param_layers(m);
    for (j = 0; j <= k; j++)
        s->bounds[j] = nb >= k ? (j == k ? L : group_start(m, (int)(((long)nb * j) / k)))
                               : (int)(((long)L * j) / k);
}

/* Keep the best top_k candidates, sorted by predicted time (stable). */
static int keep_candidate(search_result *res, int top_k, fmt_strategy *s,
                          cost_result *r)
{
    int pos = res->n, i;

    while (pos > 0 && res->cands[pos - 1].r.iter_s > r->iter_s)
        pos--;
    if (pos >= top_k) {
        fmt_strategy_free(s);
        cost_result_free(r);
        return UTIL_OK;
    }
    if (res->n == top_k) {
        fmt_strategy_free(&res->cands[top_k - 1].s);
        cost_result_free(&res->cands[top_k - 1].r);
        res->n--;
    }
    for (i = res->n; i > pos; i--)
        res->cands[i] = res->cands[i - 1];
    res->cands[pos].s = *s;
    res->cands[pos].r = *r;
    res->n++;
    memset(s, 0, sizeof *s);
    memset(r, 0, sizeof *r);
    return UTIL_OK;
}

static int same_ranks(const fmt_strategy *a, const fmt_strategy *b)
{
    return memcmp(a->ranks, b->ranks,
                  (size_t)(a->tp * a->dp * a->pp) * sizeof *a->ranks) == 0;
}

static int largest_node(const fmt_cluster *c, int smallest)
{
    int i, v = c->nodes[0].gpus;

    for (i = 1; i < c->nnodes; i++)
        if (smallest ? c->nodes[i].gpus < v : c->nodes[i].gpus > v)
            v = c->nodes[i].gpus;
    return v;
}

/* Remember the rejected strategy closest to fitting: its
 * device with the least headroom, while nothing fits yet. */
static void note_miss(const fmt_cluster *c, const fmt_strategy *s,
                      const cost_result *r, search_result *res)
{
    int w = r->worst_rank;
    double short_new, short_old;

    if (res->n > 0 || r->mem_bytes == NULL || w < 0 || w >= r->nranks)
        return;
    short_new = r->mem_bytes[w] - r->mem_cap[w];
    short_old = res->miss.need - res->miss.cap;
    if (res->miss.need > 0.0 && short_new >= short_old)
        return;
    res->miss.tp = s->tp;
    res->miss.dp = s->dp;
    res->miss.pp = s->pp;
    res->miss.mbs = s->mbs;
    res->miss.stage = w / (s->tp * s->dp);
    res->miss.device = s->ranks[w];
    res->miss.need = r->mem_bytes[w];
    res->miss.cap = r->mem_cap[w];
    (void)c;
}

/* Score one (tp, dp, pp, mbs): each placement rule, DP assignment (or
 * Megatron's uniform split), cost model. */
static int try_degrees(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const search_params *sp, int tp, int dp, int pp,
                       int mbs, search_result *res, int *fit_any,
                       util_error *err)
{
    fmt_strategy s, first;
    cost_result r;
    int rule, rc = UTIL_OK, placed = 0;

    memset(&first, 0, sizeof first);
    memset(&s, 0, sizeof s);
    for (rule = 0; rule < SEARCH_PLACE_NPLACEMENTS; rule++) {
        int arc;
        if (sp->method == SEARCH_METHOD_MEGATRON && rule != SEARCH_PLACE_MEGATRON)
            continue;
        if (sp->method != SEARCH_METHOD_MEGATRON && !(sp->placements & (1u << rule)))
            continue;
        rc = fmt_strategy_alloc(&s, tp, dp, pp);
        if (rc != UTIL_OK) {
            rc = util_error_set(err, rc, NULL, NULL, "out of memory");
            goto done;
        }
        s.mbs = mbs;
        s.gas = sp->global_batch / (dp * mbs);
        s.schedule = cp->schedule;
        rc = search_place(c, rule, &s, err);
        if (rc != UTIL_OK)
            goto done;
        if (placed && same_ranks(&s, &first)) {
            fmt_strategy_free(&s);
            continue;
        }
        if (!placed) {
            rc = fmt_strategy_copy(&first, &s);
            if (rc != UTIL_OK)
                goto done;
            placed = 1;
        }
        if (sp->method == SEARCH_METHOD_MEGATRON) {
            uniform_bounds(m, &s);
            arc = UTIL_OK;
        } else {
            arc = search_assign_layers(c, m, prof, cp, &s, err);
            if (arc == UTIL_OK && sp->uneven_tp && tp > 1) {
                search_shard_params shp;
                search_shard_params_init(&shp);
                shp.granule = sp->tp_granule > 0 ? sp->tp_granule : shp.granule;
                arc = search_shard_refine(c, m, prof, cp, &shp, &s, err);
            }
        }
        if (arc == UTIL_EINFEASIBLE) {
            res->rejected_memory++;
            if (!sp->keep_infeasible && res->n > 0) {
                fmt_strategy_free(&s);
                continue;
            }
            /* while nothing fits, the uniform split is scored too: it says
             * by how much memory falls short (or fits after all) */
            uniform_bounds(m, &s);
        } else if (arc != UTIL_OK) {
            rc = arc;
            goto done;
        }
        rc = cost_evaluate(c, m, prof, cp, &s, &r, err);
        if (rc != UTIL_OK)
            goto done;
        res->evaluated++;
        if (r.empty_stage >= 0) { /* never kept: it cannot run */
            res->rejected_other++;
            fmt_strategy_free(&s);
            cost_result_free(&r);
            continue;
        }
        if (r.fits)
            *fit_any = 1;
        if (!r.fits && arc == UTIL_OK)
            res->rejected_memory++;
        if (r.fits && arc == UTIL_EINFEASIBLE) /* the uniform split fits */
            res->rejected_memory--;
        if (!r.fits)
            note_miss(c, &s, &r, res);
        if (!r.fits && !sp->keep_infeasible) {
            fmt_strategy_free(&s);
            cost_result_free(&r);
            continue;
        }
        rc = keep_candidate(res, sp->top_k, &s, &r);
        if (rc != UTIL_OK)
            goto done;
    }
done:
    fmt_strategy_free(&s);
    fmt_strategy_free(&first);
    return rc;
}

/* Check divisibility for (tp, pp, mbs), then score it.  *fit is set
 * when a strategy with these degrees fits in memory. */
static int consider(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const search_params *sp, int tp, int pp, int mbs,
                    search_result *out, int *fit, util_error *err)
{
    int N = c->ndevices, gbs = sp->global_batch, dp = N / (tp * pp);

    if (m->heads > 0 && m->heads % tp != 0) {
        out->rejected_other++;
        return UTIL_OK;
    }
    if (gbs % dp != 0 || (gbs / dp) % mbs != 0)
        return UTIL_OK; /* mbs must divide the per-replica batch */
    if (pp > cost_param_layers(m)) {
        /* a stage without parameters cannot run */
        out->rejected_other++;
        out->rejected_stages++;
        return UTIL_OK;
    }
    return try_degrees(c, m, prof, cp, sp, tp, dp, pp, mbs, out, fit, err);
}

/* Progress for the caller's callback: the first call at once,
 * then at most every 0.2 s, and a last one when final is set. */
typedef struct progress_state {
    double t0, last;
    int calls;
} progress_state;

static double progress_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_tick(const search_params *sp, const search_result *out,
                          progress_state *ps, int final)
{
    search_progress pr;
    double t;

    if (sp->progress == NULL)
        return;
    t = progress_now();
    if (!final && ps->calls > 0 && t - ps->last < 0.2)
        return;
    ps->last = t;
    ps->calls++;
    pr.elapsed_s = t - ps->t0;
    pr.evaluated = out->evaluated;
    pr.total = 0;
    pr.best_s = out->n > 0 ? out->cands[0].r.iter_s : -1.0;
    pr.phase = "enumerate";
    sp->progress(sp->progress_ctx, &pr);
}

/* The enumeration itself, every candidate scored with cp as given. */
static int search_all(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *cp,
                      const search_params *sp, search_result *out,
                      util_error *err)
{
    int N = c->ndevices, gbs = sp->global_batch, tp, pp, mbs, rc = UTIL_OK;
    int max_tp;
    progress_state ps = {0.0, 0.0, 0};
    double deadline = 0.0;

    memset(out, 0, sizeof *out);
    if (sp->progress || sp->time_limit_s > 0.0)
        ps.t0 = progress_now();
    if (sp->time_limit_s > 0.0) /* checked once per candidate below */
        deadline = ps.t0 + sp->time_limit_s;
    if (gbs < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "global batch must be a positive integer, got %d", gbs);
    if (sp->top_k < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "top-k must be at least 1, got %d", sp->top_k);
    if (N < 1 || m->nlayers < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "empty cluster or model");
    if (cost_param_layers(m) < 1) /* nothing for an optimizer */
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "model '%s' has no layer with parameters "
                              "(every 'params' is 0): nothing to train", m->name);
    out->cands = calloc((size_t)sp->top_k + 1, sizeof *out->cands);
    if (out->cands == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    /* Megatron keeps tensor parallelism inside the smallest node */
    max_tp = sp->method == SEARCH_METHOD_MEGATRON ? largest_node(c, 1)
                                                  : largest_node(c, 0);
    if (sp->max_tp > 0 && sp->max_tp < max_tp)
        max_tp = sp->max_tp;

    for (mbs = 1; mbs <= gbs; mbs++) {
        if (sp->max_mbs > 0 && mbs > sp->max_mbs)
            break;
        if (sp->method == SEARCH_METHOD_MEGATRON) {
            /* Megatron: per mbs, the smallest tp*pp whose strategies fit */
            int q, fit = 0;
            for (q = 1; q <= N && !fit; q++) {
                if (N % q != 0)
                    continue;
                for (tp = 1; tp <= q && tp <= max_tp; tp++) {
                    if (q % tp != 0)
                        continue;
                    rc = consider(c, m, prof, cp, sp, tp, q / tp, mbs, out, &fit, err);
                    if (rc != UTIL_OK)
                        goto done;
                    progress_tick(sp, out, &ps, 0);
                    if (deadline > 0.0 && progress_now() >= deadline)
                        goto stop;
                }
            }
            continue;
        }
        for (tp = 1; tp <= max_tp && tp <= N; tp++) {
            if (N % tp != 0)
                continue;
            for (pp = 1; pp <= N / tp; pp++) {
                int fit = 0;
                if ((N / tp) % pp != 0)
                    continue;
                rc = consider(c, m, prof, cp, sp, tp, pp, mbs, out, &fit, err);
                if (rc != UTIL_OK)
                    goto done;
                progress_tick(sp, out, &ps, 0);
                if (deadline > 0.0 && progress_now() >= deadline)
                    goto stop;
            }
        }
    }
    deadline = 0.0; /* the enumeration ran to its end */
stop:
    progress_tick(sp, out, &ps, 1);
    if (deadline > 0.0) {
        out->timed_out = 1;
        if (out->n == 0) {
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                "time limit of %g s reached after %ld candidates, "
                                "none of which fits", sp->time_limit_s,
                                out->evaluated + out->rejected_other);
            goto done;
        }
    }
    if (out->n == 0 && out->miss.need > 0.0) {
        const search_memory_miss *x = &out->miss;
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no strategy fits in memory: the closest (tp %d, dp %d, "
                            "pp %d, mbs %d) needs %.2f GiB on device %d (%s, "
                            "stage %d), which has %.2f GiB; %ld candidates "
                            "rejected for memory, %ld for divisibility (try a "
                            "smaller micro-batch, ZeRO, recomputation or more "
                            "GPUs)", x->tp, x->dp, x->pp, x->mbs,
                            x->need / 1073741824.0, x->device,
                            fmt_device(c, x->device)->name, x->stage,
                            x->cap / 1073741824.0, out->rejected_memory,
                            out->rejected_other);
        goto done;
    }
    if (out->n == 0 && out->rejected_stages > 0 && out->rejected_memory == 0) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no runnable strategy: model '%s' has %d layers "
                            "holding parameters, and every pipeline stage needs "
                            "one (%ld candidates with more stages ruled out, %ld "
                            "for divisibility)", m->name, cost_param_layers(m),
                            out->rejected_stages,
                            out->rejected_other - out->rejected_stages);
        goto done;
    }
    if (out->n == 0) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no strategy fits in memory: %ld candidates "
                            "rejected for memory, %ld for divisibility (try a "
                            "smaller micro-batch, ZeRO, recomputation or more "
                            "GPUs)", out->rejected_memory, out->rejected_other);
        goto done;
    }
done:
    if (rc != UTIL_OK)
        search_result_free(out);
    return rc;
}

/* Order of re-ranked candidates: predicted time, then analytic rank. */
typedef struct rerank_key {
    double t;
    int i;
} rerank_key;

static int rerank_cmp(const void *pa, const void *pb)
{
    const rerank_key *a = pa, *b = pb;

    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* With fidelity "simulate": prune with the analytic model (every
 * candidate), keep the best max(4 top_k, 20), re-evaluate those with the
 * schedule simulator and re-rank them (docs/simulator.md). */
int search_plan(const fmt_cluster *c, const fmt_model *m,
                const fmt_profile *prof, const cost_params *cp,
                const search_params *sp, search_result *out, util_error *err)
{
    search_params wide;
    cost_params analytic;
    search_candidate *sorted = NULL;
    rerank_key *key = NULL;
    int i, rc;

    if (cp->fidelity != COST_FIDELITY_SIMULATE || sp->top_k < 1)
        return search_all(c, m, prof, cp, sp, out, err);
    wide = *sp;
    wide.top_k = sp->top_k > INT_MAX / 4 ? sp->top_k : 4 * sp->top_k;
    if (wide.top_k < 20)
        wide.top_k = 20;
    analytic = *cp;
    analytic.fidelity = COST_FIDELITY_ANALYTIC;
    rc = search_all(c, m, prof, &analytic, &wide, out, err);
    if (rc != UTIL_OK)
        return rc;
    key = calloc((size_t)out->n, sizeof *key);
    sorted = calloc((size_t)out->n, sizeof *sorted);
    if (key == NULL || sorted == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < out->n; i++) {
        cost_result r;
        rc = cost_evaluate(c, m, prof, cp, &out->cands[i].s, &r, err);
        if (rc != UTIL_OK)
            goto done;
        cost_result_free(&out->cands[i].r);
        out->cands[i].r = r;
        key[i].t = r.iter_s;
        key[i].i = i;
    }
    qsort(key, (size_t)out->n, sizeof *key, rerank_cmp);
    for (i = 0; i < out->n; i++)
        sorted[i] = out->cands[key[i].i];
    for (i = sp->top_k; i < out->n; i++) {
        fmt_strategy_free(&sorted[i].s);
        cost_result_free(&sorted[i].r);
    }
    if (out->n > sp->top_k)
        out->n = sp->top_k;
    free(out->cands);
    out->cands = sorted;
    sorted = NULL;
done:
    free(key);
    free(sorted);
    if (rc != UTIL_OK)
        search_result_free(out);
    return rc;
}
