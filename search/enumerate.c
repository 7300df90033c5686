/* search/enumerate.c: AMP Algorithm 1 (every degree, micro-batch size
 * and placement rule, with the optimal layer assignment of each) and the
 * Megatron heuristic baseline of AMP section 4.1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
}

void search_result_free(search_result *r)
{
    int i;

    if (r == NULL)
        return;
    for (i = 0; i < r->n; i++) {
        cost_strategy_free(&r->cands[i].s);
        cost_result_free(&r->cands[i].r);
    }
    free(r->cands);
    memset(r, 0, sizeof *r);
}

int search_assign_layers(const cost_cluster *c, const cost_model *m,
                         const cost_profile *prof, const cost_params *cp,
                         cost_strategy *s, cost_error *err)
{
    int L = m->nlayers, k = s->pp, j, l, d, t, rc = COST_OK;
    double *tt = NULL, *e = NULL, *mem = NULL, *cap = NULL, obj;
    search_dp_input in;

    tt = calloc((size_t)k * (size_t)L, sizeof *tt);
    e = calloc((size_t)k * ((size_t)L + 1), sizeof *e);
    mem = calloc((size_t)k * (size_t)L, sizeof *mem);
    cap = calloc((size_t)k, sizeof *cap);
    if (!tt || !e || !mem || !cap) {
        rc = cost_error_set(err, COST_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < k; j++) {
        int inflight = cost_inflight(cp, j, s->pp, s->gas);
        cap[j] = INFINITY;
        for (d = 0; d < s->dp; d++) {
            double bw, lat;
            cost_tp_ring(c, cp, s, j, d, &bw, &lat);
            for (t = 0; t < s->tp; t++) {
                int dev = cost_rank_device(s, j, d, t);
                const cost_device_type *dt = cost_device(c, dev);
                const cost_node *node = &c->nodes[c->device_node[dev]];
                for (l = 0; l < L; l++) {
                    cost_layer_time lt;
                    cost_layer_time_of(m, prof, cp, dt, l, s->tp, s->mbs, bw, lat,
                                       node->intra_bw * cp->intra_eff, &lt);
                    if (lt.fwd + lt.bwd > tt[j * L + l])
                        tt[j * L + l] = lt.fwd + lt.bwd;
                }
                if (dt->mem_bytes - cp->mem_reserve < cap[j])
                    cap[j] = dt->mem_bytes - cp->mem_reserve;
            }
        }
        for (l = 0; l < L; l++)
            mem[j * L + l] = cost_stage_memory(m, cp, l, l + 1, s->tp, s->dp,
                                               s->mbs, inflight) -
                             cp->mem_reserve;
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
    in.L = L;
    in.k = k;
    in.gas = s->gas;
    in.t = tt;
    in.e = e;
    in.mem = mem;
    in.cap = cap;
    rc = search_dp_assign(&in, s->bounds, &obj, err);
done:
    free(tt);
    free(e);
    free(mem);
    free(cap);
    return rc;
}

/* Megatron's layer split: blocks divided as evenly as possible (earlier
 * stages take the remainder), the layers before the first block join
 * stage 0 and those after the last block join the last stage.  Models
 * without blocks are split by layer count. */
static void uniform_bounds(const cost_model *m, cost_strategy *s)
{
    int L = m->nlayers, k = s->pp, nb = 0, first = -1, last = -1, l, j;

    for (l = 0; l < L; l++)
        if (m->layers[l].kind == COST_KIND_TRANSFORMER) {
            nb++;
            if (first < 0)
                first = l;
            last = l;
        }
    if (nb < k) {
        for (j = 0; j <= k; j++)
            s->bounds[j] = (int)(((long)L * j) / k);
        return;
    }
    s->bounds[0] = 0;
    s->bounds[k] = L;
    for (j = 1; j < k; j++) {
        int blocks = nb / k * j + (j < nb % k ? j : nb % k), seen = 0;
        for (l = first; l <= last; l++)
            if (m->layers[l].kind == COST_KIND_TRANSFORMER && seen++ == blocks)
                break;
        s->bounds[j] = l;
    }
}

/* Keep the best top_k candidates, sorted by predicted time (stable). */
static int keep_candidate(search_result *res, int top_k, cost_strategy *s,
                          cost_result *r)
{
    int pos = res->n, i;

    while (pos > 0 && res->cands[pos - 1].r.iter_s > r->iter_s)
        pos--;
    if (pos >= top_k) {
        cost_strategy_free(s);
        cost_result_free(r);
        return COST_OK;
    }
    if (res->n == top_k) {
        cost_strategy_free(&res->cands[top_k - 1].s);
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
    return COST_OK;
}

static int same_ranks(const cost_strategy *a, const cost_strategy *b)
{
    return memcmp(a->ranks, b->ranks,
                  (size_t)(a->tp * a->dp * a->pp) * sizeof *a->ranks) == 0;
}

static int largest_node(const cost_cluster *c, int smallest)
{
    int i, v = c->nodes[0].gpus;

    for (i = 1; i < c->nnodes; i++)
        if (smallest ? c->nodes[i].gpus < v : c->nodes[i].gpus > v)
            v = c->nodes[i].gpus;
    return v;
}

/* Score one (tp, dp, pp, mbs): each placement rule, DP assignment (or
 * Megatron's uniform split), cost model. */
static int try_degrees(const cost_cluster *c, const cost_model *m,
                       const cost_profile *prof, const cost_params *cp,
                       const search_params *sp, int tp, int dp, int pp,
                       int mbs, search_result *res, int *fit_any,
                       cost_error *err)
{
    cost_strategy s, first;
    cost_result r;
    int rule, rc = COST_OK, placed = 0;

    memset(&first, 0, sizeof first);
    memset(&s, 0, sizeof s);
    for (rule = 0; rule < SEARCH_PLACE_NPLACEMENTS; rule++) {
        int arc;
        if (sp->method == SEARCH_METHOD_MEGATRON && rule != SEARCH_PLACE_MEGATRON)
            continue;
        if (sp->method != SEARCH_METHOD_MEGATRON && !(sp->placements & (1u << rule)))
            continue;
        rc = cost_strategy_alloc(&s, tp, dp, pp);
        if (rc != COST_OK) {
            rc = cost_error_set(err, rc, NULL, NULL, "out of memory");
            goto done;
        }
        s.mbs = mbs;
        s.gas = sp->global_batch / (dp * mbs);
        s.schedule = cp->schedule;
        rc = search_place(c, rule, &s, err);
        if (rc != COST_OK)
            goto done;
        if (placed && same_ranks(&s, &first)) {
            cost_strategy_free(&s);
            continue;
        }
        if (!placed) {
            rc = cost_strategy_copy(&first, &s);
            if (rc != COST_OK)
                goto done;
            placed = 1;
        }
        if (sp->method == SEARCH_METHOD_MEGATRON) {
            uniform_bounds(m, &s);
            arc = COST_OK;
        } else {
            arc = search_assign_layers(c, m, prof, cp, &s, err);
        }
        if (arc == COST_EINFEASIBLE) {
            res->rejected_memory++;
            if (!sp->keep_infeasible) {
                cost_strategy_free(&s);
                continue;
            }
            uniform_bounds(m, &s);
        } else if (arc != COST_OK) {
            rc = arc;
            goto done;
        }
        rc = cost_evaluate(c, m, prof, cp, &s, &r, err);
        if (rc != COST_OK)
            goto done;
        res->evaluated++;
        if (r.fits)
            *fit_any = 1;
        if (!r.fits && arc == COST_OK)
            res->rejected_memory++;
        if (!r.fits && !sp->keep_infeasible) {
            cost_strategy_free(&s);
            cost_result_free(&r);
            continue;
        }
        rc = keep_candidate(res, sp->top_k, &s, &r);
        if (rc != COST_OK)
            goto done;
    }
done:
    cost_strategy_free(&s);
    cost_strategy_free(&first);
    return rc;
}

/* Check divisibility for (tp, pp, mbs), then score it.  *fit is set
 * when a strategy with these degrees fits in memory. */
static int consider(const cost_cluster *c, const cost_model *m,
                    const cost_profile *prof, const cost_params *cp,
                    const search_params *sp, int tp, int pp, int mbs,
                    search_result *out, int *fit, cost_error *err)
{
    int N = c->ndevices, gbs = sp->global_batch, dp = N / (tp * pp);

    if (m->heads > 0 && m->heads % tp != 0) {
        out->rejected_other++;
        return COST_OK;
    }
    if (gbs % dp != 0 || (gbs / dp) % mbs != 0)
        return COST_OK; /* mbs must divide the per-replica batch */
    if (pp > m->nlayers) {
        out->rejected_other++;
        return COST_OK;
    }
    return try_degrees(c, m, prof, cp, sp, tp, dp, pp, mbs, out, fit, err);
}

int search_plan(const cost_cluster *c, const cost_model *m,
                const cost_profile *prof, const cost_params *cp,
                const search_params *sp, search_result *out, cost_error *err)
{
    int N = c->ndevices, gbs = sp->global_batch, tp, pp, mbs, rc = COST_OK;
    int max_tp;

    memset(out, 0, sizeof *out);
    if (gbs < 1)
        return cost_error_set(err, COST_EINVAL, NULL, NULL,
                              "global batch must be a positive integer, got %d", gbs);
    if (sp->top_k < 1)
        return cost_error_set(err, COST_EINVAL, NULL, NULL,
                              "top-k must be at least 1, got %d", sp->top_k);
    if (N < 1 || m->nlayers < 1)
        return cost_error_set(err, COST_EINVAL, NULL, NULL,
                              "empty cluster or model");
    out->cands = calloc((size_t)sp->top_k + 1, sizeof *out->cands);
    if (out->cands == NULL)
        return cost_error_set(err, COST_ENOMEM, NULL, NULL, "out of memory");
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
                    if (rc != COST_OK)
                        goto done;
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
                if (rc != COST_OK)
                    goto done;
            }
        }
    }
    if (out->n == 0) {
        rc = cost_error_set(err, COST_EINFEASIBLE, NULL, NULL,
                            "no strategy fits in memory: %ld candidates "
                            "rejected for memory, %ld for divisibility (try a "
                            "smaller micro-batch, ZeRO, recomputation or more "
                            "GPUs)", out->rejected_memory, out->rejected_other);
        goto done;
    }
done:
    if (rc != COST_OK)
        search_result_free(out);
    return rc;
}
