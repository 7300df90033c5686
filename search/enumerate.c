/* search/enumerate.c: AMP Algorithm 1 (every degree, micro-batch size
 * and placement rule, with the optimal layer assignment of each) and the
 * Megatron heuristic baseline of AMP section 4.1. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

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
    p->recompute = -1;
    p->zero = -1;
    p->offload = -1;
    p->seq_par = -1;
    p->vpp = 0;
    p->batch_tolerance = 0.0;
    p->exhaustive = 0;
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

/* placements remembered per rule (the degrees most recently placed) */
#define ENUM_PLACED 8

/* State of one enumeration: the order of what is kept, the recent
 * placements of each rule (shared by the features of one shape). */
typedef struct enum_state {
    long *seqs;             /* top_k + 1: enumeration position of each kept one */
    fmt_strategy placed[SEARCH_PLACE_NPLACEMENTS][ENUM_PLACED];
    long used[SEARCH_PLACE_NPLACEMENTS][ENUM_PLACED]; /* last use, for eviction */
    long clock;
    int lb_bad;             /* a scored time fell below its lower bound */
    search_memo *memo;      /* shared by the layer assignments */
} enum_state;

static void enum_state_free(enum_state *st)
{
    int i;

    free(st->seqs);
    search_memo_destroy(st->memo);
    for (i = 0; i < SEARCH_PLACE_NPLACEMENTS * ENUM_PLACED; i++)
        fmt_strategy_free(&st->placed[i / ENUM_PLACED][i % ENUM_PLACED]);
}

/* (t, seq) before (t2, seq2): lower time, then earlier enumeration. */
static int ranks_before(double t, long seq, double t2, long seq2)
{
    return t < t2 || (t == t2 && seq < seq2);
}

/* Keep the best top_k candidates sorted by predicted time, ties by
 * enumeration position; one per (degrees, mbs, placement rule): the
 * features of a shape compete for its place. */
static int keep_candidate(search_result *res, enum_state *st, int top_k,
                          long seq, fmt_strategy *s, cost_result *r)
{
    int pos, i;

    for (i = 0; i < res->n; i++) {
        const fmt_strategy *o = &res->cands[i].s;
        if (o->tp == s->tp && o->pp == s->pp && o->mbs == s->mbs &&
            strcmp(o->placement, s->placement) == 0)
            break;
    }
    if (i < res->n) { /* the same shape: the better of the two stays */
        if (!ranks_before(r->iter_s, seq, res->cands[i].r.iter_s, st->seqs[i])) {
            fmt_strategy_free(s);
            cost_result_free(r);
            return UTIL_OK;
        }
        fmt_strategy_free(&res->cands[i].s);
        cost_result_free(&res->cands[i].r);
        for (; i + 1 < res->n; i++) {
            res->cands[i] = res->cands[i + 1];
            st->seqs[i] = st->seqs[i + 1];
        }
        res->n--;
    }
    pos = res->n;
    while (pos > 0 && ranks_before(r->iter_s, seq, res->cands[pos - 1].r.iter_s,
                                   st->seqs[pos - 1]))
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
    for (i = res->n; i > pos; i--) {
        res->cands[i] = res->cands[i - 1];
        st->seqs[i] = st->seqs[i - 1];
    }
    res->cands[pos].s = *s;
    res->cands[pos].r = *r;
    st->seqs[pos] = seq;
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

/* Memory before the full cost: 0 when a stage's even-split memory
 * (the cost model's, as cost_evaluate computes it) exceeds the smallest
 * device of that stage.  1 with uneven shards (not checked here). */
static int memory_fits(const fmt_cluster *c, const fmt_model *m,
                       const cost_params *cp, const fmt_strategy *s,
                       search_memo *memo)
{
    cost_params ps;
    int j, i, g = s->tp * s->dp, mixed;
    const double *minmem = NULL;

    if (s->tp_heads != NULL)
        return 1;
    if (!search_memo_placement(memo, s, &minmem, &mixed))
        minmem = NULL;
    search_strategy_params(cp, NULL, s, &ps);
    for (j = 0; j < s->pp; j++) {
        cost_memory mem;
        double cap = INFINITY, need;
        for (i = 0; i < g && minmem == NULL; i++) {
            double b = fmt_device(c, s->ranks[j * g + i])->mem_bytes;
            if (b < cap)
                cap = b;
        }
        if (minmem != NULL) /* the same least, kept with the placement */
            cap = minmem[j];
        cost_rank_stage_memory(m, &ps, s, j * g, &mem);
        cost_runtime_apply(c, &ps, s, j * g, &mem);
        need = cost_rank_memory(m, &ps, s, j * g, mem.total);
        if (need > cap)
            return 0;
    }
    return 1;
}

/* Ranks of (tp, dp, pp) by rule into s (allocated here), from the
 * state's last placement of that rule when the degrees match. */
static int place_cached(const fmt_cluster *c, enum_state *st, int rule, int tp,
                        int dp, int pp, fmt_strategy *s, util_error *err)
{
    fmt_strategy *pc = NULL;
    int rc, i, old = 0;

    st->clock++;
    for (i = 0; i < ENUM_PLACED; i++) {
        fmt_strategy *q = &st->placed[rule][i];
        if (q->ranks != NULL && q->tp == tp && q->dp == dp && q->pp == pp) {
            st->used[rule][i] = st->clock;
            rc = fmt_strategy_copy(s, q);
            return rc == UTIL_OK ? UTIL_OK
                                 : util_error_set(err, rc, NULL, NULL, "out of memory");
        }
        if (st->used[rule][i] < st->used[rule][old])
            old = i;
    }
    rc = fmt_strategy_alloc(s, tp, dp, pp);
    if (rc != UTIL_OK)
        return util_error_set(err, rc, NULL, NULL, "out of memory");
    rc = search_place(c, rule, s, err);
    if (rc != UTIL_OK)
        return rc;
    pc = &st->placed[rule][old];
    fmt_strategy_free(pc);
    st->used[rule][old] = st->clock;
    rc = fmt_strategy_copy(pc, s);
    return rc == UTIL_OK ? UTIL_OK
                         : util_error_set(err, rc, NULL, NULL, "out of memory");
}

/* Score one (tp, dp, pp, mbs) with features f (NULL: cost_params'
 * defaults): each placement rule, DP assignment (or Megatron's uniform
 * split), cost model.  seq: enumeration position; lb: lower bound of
 * the time (checked, st->lb_bad set when a time falls below it). */
static int try_degrees(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const search_params *sp, int tp, int dp, int pp,
                       int mbs, const search_feat *f, long seq, double lb,
                       enum_state *est, search_result *res, int *fit_any,
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
        rc = place_cached(c, est, rule, tp, dp, pp, &s, err);
        if (rc != UTIL_OK)
            goto done;
        s.mbs = mbs;
        s.gas = sp->global_batch / (dp * mbs);
        s.schedule = cp->schedule;
        if (f != NULL) {
            s.vpp = f->vpp;
            s.sp = f->sp;
            s.recompute = f->recompute;
            s.zero = f->zero;
            s.offload = f->offload;
            search_overlap_choose(c, m, cp, &sp->launcher, &s);
        }
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
            if (!search_launcher_ok(c, m, &sp->launcher, &s, NULL, 0))
                /* a split the target launcher cannot write: its best one */
                arc = search_assign_layers_for(c, m, prof, cp, &sp->launcher, &s, err);
        } else {
            const double *mm;
            int mixed = 1;
            arc = search_assign_layers_memo(c, m, prof, cp, &sp->launcher, &s, est->memo,
                                            err);
            if (arc == UTIL_EINFEASIBLE && s.overlap_tp == 1) {
                /* TP overlap's userbuffers may be what does not fit */
                s.overlap_tp = 0;
                arc = search_assign_layers_memo(c, m, prof, cp, &sp->launcher, &s,
                                                est->memo, err);
            }
            /* shards are planned only where a TP group mixes types */
            if (!search_memo_placement(est->memo, &s, &mm, &mixed))
                mixed = 1;
            if (arc == UTIL_OK && sp->uneven_tp && tp > 1 && mixed) {
                search_shard_params shp;
                search_shard_params_init(&shp);
                shp.granule = sp->tp_granule > 0 ? sp->tp_granule : shp.granule;
                arc = search_shard_refine(c, m, prof, cp, &shp, &s, err);
            }
        }
        if (arc == UTIL_EINFEASIBLE) {
            res->rejected_memory++;
            if ((!sp->keep_infeasible && res->n > 0) || s.vpp > 1) {
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
        /* the layer assignment's split fits by the cost model's count
           (search/fit.c); the baseline's even split is checked here */
        if (arc == UTIL_OK && res->n > 0 && !sp->keep_infeasible &&
            sp->method == SEARCH_METHOD_MEGATRON &&
            !memory_fits(c, m, cp, &s, est->memo)) {
            res->rejected_memory++;
            fmt_strategy_free(&s);
            continue;
        }
        rc = cost_evaluate(c, m, prof, cp, &s, &r, err);
        if (rc == UTIL_OK && !r.fits && s.overlap_tp == 1) {
            /* TP overlap's userbuffers may be what does not fit */
            cost_result_free(&r);
            s.overlap_tp = 0;
            rc = cost_evaluate(c, m, prof, cp, &s, &r, err);
        }
        if (rc != UTIL_OK)
            goto done;
        res->evaluated++;
        if (r.iter_s < lb * (1.0 - 1e-9))
            est->lb_bad = 1;
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
            search_note_miss(c, &s, &r, res);
        if (!r.fits && !sp->keep_infeasible) {
            fmt_strategy_free(&s);
            cost_result_free(&r);
            continue;
        }
        rc = keep_candidate(res, est, sp->top_k,
                            seq * SEARCH_PLACE_NPLACEMENTS + rule, &s, &r);
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
                    enum_state *est, long seq, search_result *out, int *fit,
                    util_error *err)
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
    return try_degrees(c, m, prof, cp, sp, tp, dp, pp, mbs, NULL, seq, 0.0, est,
                       out, fit, err);
}

/* Progress for the caller's callback: the first call at once,
 * then at most every 0.2 s, and a last one when final is set. */
typedef struct progress_state {
    double t0, last;
    int calls;
    double deadline;        /* search_now() at which to stop, 0 = none */
    int stopped;            /* 1: the deadline ended the enumeration */
} progress_state;

double search_now(void)
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
    t = search_now();
    if (!final && ps->calls > 0 && t - ps->last < 0.2)
        return;
    ps->last = t;
    ps->calls++;
    pr.elapsed_s = t - ps->t0;
    pr.evaluated = out->evaluated;
    pr.total = out->space; /* points of the space, 0 when not known */
    pr.best_s = out->n > 0 ? out->cands[0].r.iter_s : -1.0;
    pr.phase = "enumerate";
    sp->progress(sp->progress_ctx, &pr);
}

/* Megatron's heuristic: per mbs (a divisor of the batch), the smallest
 * tp * pp whose strategies fit. */
static int search_megatron(const fmt_cluster *c, const fmt_model *m,
                           const fmt_profile *prof, const cost_params *cp,
                           const search_params *sp, int max_tp,
                           enum_state *est, progress_state *ps,
                           search_result *out, util_error *err)
{
    long *mbss = NULL, *qs = NULL, seq = 0, cap;
    int nm, nq, i, a, tp, rc = UTIL_OK, N = c->ndevices;

    cap = sp->max_mbs > 0 && sp->max_mbs < sp->global_batch ? sp->max_mbs
                                                            : sp->global_batch;
    nm = search_divisors(sp->global_batch, cap, &mbss);
    nq = search_divisors(N, N, &qs);
    if (nm < 0 || nq < 0) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < nm; i++) {
        int fit = 0;
        for (a = 0; a < nq && !fit; a++) {
            int q = (int)qs[a];
            for (tp = 1; tp <= q && tp <= max_tp; tp++) {
                if (q % tp != 0)
                    continue;
                rc = consider(c, m, prof, cp, sp, tp, q / tp, (int)mbss[i], est,
                              seq++, out, &fit, err);
                if (rc != UTIL_OK)
                    goto done;
                progress_tick(sp, out, ps, 0);
                if (ps->deadline > 0.0 && search_now() >= ps->deadline) {
                    ps->stopped = 1;
                    goto done;
                }
            }
        }
    }
done:
    free(mbss);
    free(qs);
    return rc;
}

/* AMP's Algorithm 1 over the space of search/space.c, best first by the
 * compute-only lower bound (groups of equal degrees by their least bound,
 * so that a placement serves its group): once the top_k are full, a point
 * whose bound exceeds the k-th best time cannot enter, and once a group's
 * least bound does, nothing left can.  Ties keep enumeration order, so
 * the result is the exhaustive one. */
static int search_amp(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *cp,
                      const search_params *sp, int max_tp, enum_state *est,
                      progress_state *ps, search_result *out, util_error *err)
{
    search_key *keys = NULL;
    long nk = 0, i;
    int rc, N = c->ndevices;

    rc = search_space_build(c, m, prof, cp, sp, max_tp, &keys, &nk, out, err);
    if (rc != UTIL_OK)
        return rc;
    out->space = nk;
    for (i = 0; i < nk; i++) {
        const search_key *k = &keys[i];
        int fit = 0;
        double kth = !est->lb_bad && !sp->exhaustive && out->n >= sp->top_k
                         ? out->cands[sp->top_k - 1].r.iter_s * (1.0 + 1e-9)
                         : HUGE_VAL;
        if (!est->lb_bad && !sp->exhaustive && sp->prune_above_s > 0.0 &&
            sp->prune_above_s < kth)
            kth = sp->prune_above_s;
        if (k->glb > kth) { /* every group left starts above the k-th best */
            out->pruned += nk - i;
            break;
        }
        if (k->lb > kth) {
            out->pruned++;
            continue;
        }
        rc = try_degrees(c, m, prof, cp, sp, k->tp, N / (k->tp * k->pp), k->pp,
                         k->mbs, &k->f, k->seq, k->lb, est, out, &fit, err);
        if (rc != UTIL_OK)
            break;
        progress_tick(sp, out, ps, 0);
        if (ps->deadline > 0.0 && search_now() >= ps->deadline) {
            ps->stopped = 1; /* checked once per candidate */
            break;
        }
    }
    free(keys);
    return rc;
}

/* The enumeration itself, every candidate scored with cp as given. */
static int search_all(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *cp,
                      const search_params *sp, search_result *out,
                      util_error *err)
{
    int N = c->ndevices, gbs = sp->global_batch, rc = UTIL_OK;
    int max_tp;
    progress_state ps = {0};
    enum_state est;

    memset(out, 0, sizeof *out);
    memset(&est, 0, sizeof est);
    if (sp->progress || sp->time_limit_s > 0.0)
        ps.t0 = search_now();
    if (sp->time_limit_s > 0.0) /* checked once per candidate */
        ps.deadline = ps.t0 + sp->time_limit_s;
    if (gbs < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "global batch must be a positive integer, got %d", gbs);
    if (sp->top_k < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "top-k must be at least 1, got %d", sp->top_k);
    if (N < 1)
        return util_error_set(err, UTIL_EINVAL, sp->cluster_file, NULL,
                              "empty cluster");
    if (m->nlayers < 1)
        return util_error_set(err, UTIL_EINVAL, sp->model_file, NULL,
                              "empty model");
    if (cost_param_layers(m) < 1) /* nothing for an optimizer */
        return util_error_set(err, UTIL_EINVAL, sp->model_file, NULL,
                              "model '%s' has no layer with parameters "
                              "(every 'params' is 0): nothing to train", m->name);
    /* documented limits (docs/algorithms.md, "Limits"): beyond them a
     * search would run for minutes, so it is refused at once */
    if (N > SEARCH_MAX_DEVICES)
        return util_error_set(err, UTIL_EINVAL, sp->cluster_file, NULL,
                              "cluster%s%s%s has %d GPUs, more than the %d the "
                              "search plans; plan a part of it (a sub-cluster "
                              "file) or use 'planner evaluate' on given "
                              "strategies", c->name[0] ? " '" : "", c->name,
                              c->name[0] ? "'" : "", N, SEARCH_MAX_DEVICES);
    if (m->nlayers > SEARCH_MAX_LAYERS)
        return util_error_set(err, UTIL_EINVAL, sp->model_file, NULL,
                              "model '%s' has %d layers, more than the %d the "
                              "search assigns to stages", m->name, m->nlayers,
                              SEARCH_MAX_LAYERS);
    out->global_batch = gbs;
    out->cands = calloc((size_t)sp->top_k + 1, sizeof *out->cands);
    est.seqs = calloc((size_t)sp->top_k + 1, sizeof *est.seqs);
    est.memo = search_memo_create();
    if (out->cands == NULL || est.seqs == NULL || est.memo == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    /* Megatron keeps tensor parallelism inside the smallest node */
    max_tp = sp->method == SEARCH_METHOD_MEGATRON ? largest_node(c, 1)
                                                  : largest_node(c, 0);
    if (sp->max_tp > 0 && sp->max_tp < max_tp)
        max_tp = sp->max_tp;
    if (sp->method == SEARCH_METHOD_MEGATRON)
        rc = search_megatron(c, m, prof, cp, sp, max_tp, &est, &ps, out, err);
    else
        rc = search_amp(c, m, prof, cp, sp, max_tp, &est, &ps, out, err);
    if (rc != UTIL_OK)
        goto done;
    progress_tick(sp, out, &ps, 1);
    if (ps.stopped) {
        out->timed_out = 1;
        if (out->n == 0) {
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                "time limit of %g s reached after %ld candidates, "
                                "none of which fits", sp->time_limit_s,
                                out->evaluated + out->rejected_other);
            goto done;
        }
    }
    if (out->n == 0)
        rc = search_explain_none(c, m, cp, sp, out, err);
done:
    enum_state_free(&est);
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
int search_plan_exact(const fmt_cluster *c, const fmt_model *m,
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
