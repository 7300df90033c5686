/* search/anneal.c: simulated annealing over the placement of a strategy
 * (which device runs which rank), after AMP's placement search (Li et
 * al. 2022, section 3.3) with the Metropolis acceptance rule of
 * Kirkpatrick, Gelatt and Vecchi (1983).  Each state is scored by the
 * optimal layer assignment and the cost model, never by a proxy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "internal.h"

/* Moves of the annealing. */
enum {
    MOVE_TP_GROUPS = 0,     /* swap the devices of two TP groups */
    MOVE_STAGES,            /* swap the devices of two pipeline stages */
    MOVE_REVERSE,           /* reverse the order of a run of stages */
    MOVE_DEVICES,           /* swap two devices (regroups TP groups) */
    MOVE_IDLE,              /* trade a TP group's devices for idle ones */
    MOVE_N
};

/* 1 when every node has the same device type, GPU count, links and
 * region and no link override exists: every placement is then the same
 * up to symmetry and annealing cannot gain. */
int search_anneal_uniform(const fmt_cluster *c)
{
    int i;

    if (c->nlinks > 0)
        return 0;
    for (i = 1; i < c->nnodes; i++) {
        const fmt_node *a = &c->nodes[0], *b = &c->nodes[i];
        if (a->type != b->type || a->gpus != b->gpus ||
            a->intra_bw != b->intra_bw || a->nic_bw != b->nic_bw ||
            a->intra_lat != b->intra_lat || a->nic_lat != b->nic_lat ||
            strcmp(a->region, b->region) != 0)
            return 0;
    }
    return 1;
}

/* Layer assignment and cost of s; UTIL_EINFEASIBLE (r freed) when it
 * does not fit or cannot run, *val the objective otherwise. */
int search_anneal_score(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        int objective, fmt_strategy *s, cost_result *r, double *val,
                        util_error *err)
{
    return search_anneal_score_for(c, m, prof, cp, NULL, objective, s, r, val, err);
}

int search_anneal_score_for(const fmt_cluster *c, const fmt_model *m,
                            const fmt_profile *prof, const cost_params *cp,
                            const search_launcher *lc, int objective,
                            fmt_strategy *s, cost_result *r, double *val,
                            util_error *err)
{
    util_error scratch;
    int rc;

    memset(r, 0, sizeof *r);
    memset(&scratch, 0, sizeof scratch);
    search_launcher_order(c, lc, s);
    rc = search_assign_layers_for(c, m, prof, cp, lc, s, &scratch);
    if (rc == UTIL_EINFEASIBLE)
        return rc;
    if (rc != UTIL_OK) {
        if (err != NULL)
            *err = scratch;
        return rc;
    }
    rc = cost_evaluate(c, m, prof, cp, s, r, err);
    if (rc != UTIL_OK)
        return rc;
    if (!r->fits || r->empty_stage >= 0) {
        cost_result_free(r);
        return UTIL_EINFEASIBLE;
    }
    *val = search_objective_value(c, objective, s, r);
    return UTIL_OK;
}

static void swap_int(int *a, int *b)
{
    int t = *a;

    *a = *b;
    *b = t;
}

static void swap_blocks(int *ranks, int a, int b, int len)
{
    int i;

    for (i = 0; i < len; i++)
        swap_int(&ranks[a * len + i], &ranks[b * len + i]);
}

/* Devices of c that s leaves idle, in the canonical node order. */
int search_anneal_idle(const fmt_cluster *c, const fmt_strategy *s,
                       int **out, int *nidle)
{
    int n = s->tp * s->dp * s->pp, i, g, k = 0;
    int *order = malloc((size_t)c->nnodes * sizeof *order);
    char *used = calloc((size_t)c->ndevices, 1);
    int *idle = malloc((size_t)(c->ndevices > n ? c->ndevices - n : 1) * sizeof *idle);

    *out = NULL;
    *nidle = 0;
    if (order == NULL || used == NULL || idle == NULL) {
        free(order);
        free(used);
        free(idle);
        return UTIL_ENOMEM;
    }
    for (i = 0; i < n; i++)
        if (s->ranks[i] >= 0 && s->ranks[i] < c->ndevices)
            used[s->ranks[i]] = 1;
    search_canonical_nodes(c, order);
    for (i = 0; i < c->nnodes; i++)
        for (g = 0; g < c->nodes[order[i]].gpus; g++) {
            int d = c->nodes[order[i]].first_device + g;
            if (!used[d] && k < c->ndevices - n)
                idle[k++] = d;
        }
    free(order);
    free(used);
    *out = idle;
    *nidle = k;
    return UTIL_OK;
}

/* Apply a random move to ranks (and idle); 0 when none applies. */
int search_anneal_move(util_pcg32 *rng, const fmt_strategy *s, int *ranks,
                       int *idle, int nidle)
{
    int tp = s->tp, groups = s->dp * s->pp, per = s->tp * s->dp;
    int kinds[MOVE_N], nk = 0, a, b, i;

    if (groups > 1)
        kinds[nk++] = MOVE_TP_GROUPS;
    if (s->pp > 1) {
        kinds[nk++] = MOVE_STAGES;
        kinds[nk++] = MOVE_REVERSE;
    }
    if (tp > 1 && groups > 1)
        kinds[nk++] = MOVE_DEVICES;
    if (nidle >= tp)
        kinds[nk++] = MOVE_IDLE;
    if (nk == 0)
        return 0;
    switch (kinds[util_pcg32_bounded(rng, (uint32_t)nk)]) {
    case MOVE_TP_GROUPS:
        a = (int)util_pcg32_bounded(rng, (uint32_t)groups);
        b = (int)util_pcg32_bounded(rng, (uint32_t)(groups - 1));
        swap_blocks(ranks, a, b >= a ? b + 1 : b, tp);
        break;
    case MOVE_STAGES:
        a = (int)util_pcg32_bounded(rng, (uint32_t)s->pp);
        b = (int)util_pcg32_bounded(rng, (uint32_t)(s->pp - 1));
        swap_blocks(ranks, a, b >= a ? b + 1 : b, per);
        break;
    case MOVE_REVERSE:
        a = (int)util_pcg32_bounded(rng, (uint32_t)s->pp);
        b = (int)util_pcg32_bounded(rng, (uint32_t)(s->pp - 1));
        b = b >= a ? b + 1 : b;
        if (a > b)
            swap_int(&a, &b);
        for (; a < b; a++, b--)
            swap_blocks(ranks, a, b, per);
        break;
    case MOVE_DEVICES:
        a = (int)util_pcg32_bounded(rng, (uint32_t)(groups * tp));
        b = (int)util_pcg32_bounded(rng, (uint32_t)(groups * tp - 1));
        swap_int(&ranks[a], &ranks[b >= a ? b + 1 : b]);
        break;
    default: /* MOVE_IDLE: a TP group for tp consecutive idle devices */
        a = (int)util_pcg32_bounded(rng, (uint32_t)groups);
        b = (int)util_pcg32_bounded(rng, (uint32_t)(nidle / tp)) * tp;
        for (i = 0; i < tp; i++)
            swap_int(&ranks[a * tp + i], &idle[b + i]);
    }
    return 1;
}

/* Seed of one annealing run: the caller's seed mixed with the
 * strategy's shape (splitmix64 finaliser, Steele et al. 2014). */
uint64_t search_anneal_seed(uint64_t seed, const fmt_strategy *s)
{
    uint64_t key = (uint64_t)s->tp + 131u * (uint64_t)s->dp +
                   17161u * (uint64_t)s->pp + 2248091u * (uint64_t)s->mbs;
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * key;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void search_anneal_shards(const fmt_cluster *c, const fmt_model *m,
                          const fmt_profile *prof, const cost_params *cp,
                          const search_params *sp, int objective, fmt_strategy *best,
                          cost_result *br, double *best_v)
{
    search_shard_params shp;
    fmt_strategy t;
    cost_result sr;
    util_error scratch; /* a failure keeps the even split: no error */
    double v;

    memset(&scratch, 0, sizeof scratch);
    if (sp == NULL || !sp->uneven_tp || best->tp <= 1 ||
        fmt_strategy_copy(&t, best) != UTIL_OK)
        return;
    search_shard_params_init(&shp);
    shp.granule = sp->tp_granule > 0 ? sp->tp_granule : shp.granule;
    if (search_shard_refine(c, m, prof, cp, &shp, &t, &scratch) == UTIL_OK &&
        search_anneal_score_for(c, m, prof, cp, &sp->launcher, objective, &t, &sr,
                                &v, &scratch) == UTIL_OK) {
        fmt_strategy_free(best);
        cost_result_free(br);
        *best = t;
        *br = sr;
        *best_v = v;
        return;
    }
    fmt_strategy_free(&t);
}

int search_anneal(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *cp,
                  const search_params *sp, int steps, uint64_t seed,
                  fmt_strategy *s, cost_result *r, long *moves,
                  util_error *err)
{
    fmt_strategy cur, best;
    cost_result cr, br;
    util_pcg32 rng;
    int n = s->tp * s->dp * s->pp, *idle = NULL, *save = NULL, *save_idle = NULL;
    int nidle = 0, k, rc = UTIL_OK, objective = sp ? sp->objective : SEARCH_OBJ_TIME;
    const search_launcher *lc = sp ? &sp->launcher : NULL;
    double cur_v, best_v, start_v, t0, work;

    memset(&cur, 0, sizeof cur);
    memset(&best, 0, sizeof best);
    memset(&br, 0, sizeof br);
    if (moves != NULL)
        *moves = 0;
    work = (double)n * (double)(m->nlayers > 0 ? m->nlayers : 1);
    if (steps > SEARCH_ANNEAL_WORK / work)
        steps = (int)(SEARCH_ANNEAL_WORK / work);
    if (steps < 1 || n < 1 || search_anneal_uniform(c) || !r->fits || r->empty_stage >= 0)
        return UTIL_OK;
    start_v = search_objective_value(c, objective, s, r);
    if (!isfinite(start_v))
        return UTIL_OK;
    if ((sp == NULL || !sp->use_all) &&
        search_anneal_idle(c, s, &idle, &nidle) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    save = malloc((size_t)n * sizeof *save);
    save_idle = malloc((size_t)(nidle > 0 ? nidle : 1) * sizeof *save_idle);
    if (save == NULL || save_idle == NULL ||
        fmt_strategy_copy(&cur, s) != UTIL_OK ||
        fmt_strategy_copy(&best, s) != UTIL_OK ||
        fmt_strategy_set_shards(&cur, NULL, NULL) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    /* the current state without uneven shards, so that moves compare
     * like with like; shards are planned again for the best state */
    rc = search_anneal_score_for(c, m, prof, cp, lc, objective, &cur, &cr, &cur_v, err);
    if (rc == UTIL_EINFEASIBLE) {
        rc = UTIL_OK;
        goto done;
    }
    if (rc != UTIL_OK)
        goto done;
    cost_result_free(&cr);
    best_v = HUGE_VAL;
    util_pcg32_seed(&rng, search_anneal_seed(seed, s), 0x5a17ull);
    t0 = 0.02 * cur_v; /* the first moves accept a few per cent worse */
    for (k = 0; k < steps; k++) {
        double v, temp = t0 * (1.0 - (double)k / steps) + 1e-12;
        memcpy(save, cur.ranks, (size_t)n * sizeof *save);
        if (nidle > 0)
            memcpy(save_idle, idle, (size_t)nidle * sizeof *idle);
        if (!search_anneal_move(&rng, &cur, cur.ranks, idle, nidle))
            break;
        if (moves != NULL)
            (*moves)++;
        rc = search_anneal_score_for(c, m, prof, cp, lc, objective, &cur, &cr, &v, err);
        if (rc != UTIL_OK && rc != UTIL_EINFEASIBLE)
            goto done;
        if (rc == UTIL_OK && (v < cur_v ||
                              util_pcg32_double(&rng) < exp(-(v - cur_v) / temp))) {
            cur_v = v;
            if (v < best_v) {
                best_v = v;
                fmt_strategy_free(&best);
                cost_result_free(&br);
                if (fmt_strategy_copy(&best, &cur) != UTIL_OK) {
                    cost_result_free(&cr);
                    rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                                        "out of memory");
                    goto done;
                }
                br = cr;
                memset(&cr, 0, sizeof cr);
            }
        } else { /* rejected: back to the state before the move */
            memcpy(cur.ranks, save, (size_t)n * sizeof *save);
            if (nidle > 0)
                memcpy(idle, save_idle, (size_t)nidle * sizeof *idle);
        }
        cost_result_free(&cr);
        rc = UTIL_OK;
    }
    if (best_v == HUGE_VAL)
        goto done;
    search_anneal_shards(c, m, prof, cp, sp, objective, &best, &br, &best_v);
    if (best_v < start_v * (1.0 - 1e-9)) {
        snprintf(best.placement, sizeof best.placement, "annealed");
        fmt_strategy_free(s);
        cost_result_free(r);
        *s = best;
        *r = br;
        memset(&best, 0, sizeof best);
        memset(&br, 0, sizeof br);
    }
done:
    fmt_strategy_free(&cur);
    fmt_strategy_free(&best);
    cost_result_free(&br);
    free(idle);
    free(save);
    free(save_idle);
    return rc;
}
