/* search/subset.c: which devices to use.  search_plan (AMP Algorithm 1)
 * over subsets of the cluster's nodes in a canonical order, the best
 * candidates annealed (search/anneal.c), all ranked by the objective:
 * iteration time or its price (docs/algorithms.md, "Device subsets"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const objective_names[SEARCH_OBJ_N] = {"time", "cost"};

const char *search_objective_name(int objective)
{
    if (objective < 0 || objective >= SEARCH_OBJ_N)
        return NULL;
    return objective_names[objective];
}

int search_objective_from_name(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < SEARCH_OBJ_N; i++)
        if (strcmp(name, objective_names[i]) == 0)
            return i;
    return -1;
}

double search_price_per_hour(const fmt_cluster *c, const fmt_strategy *s)
{
    int n = s->tp * s->dp * s->pp, i;
    double sum = 0.0;

    if (c->price == NULL)
        return -1.0;
    for (i = 0; i < n; i++) {
        int d = s->ranks[i], t;
        if (d < 0 || d >= c->ndevices)
            return -1.0;
        t = c->nodes[c->device_node[d]].type;
        if (c->price[t] < 0.0)
            return -1.0;
        sum += c->price[t];
    }
    return sum;
}

double search_objective_value(const fmt_cluster *c, int objective,
                              const fmt_strategy *s, const cost_result *r)
{
    double price;

    if (objective != SEARCH_OBJ_COST)
        return r->iter_s;
    price = search_price_per_hour(c, s);
    return price < 0.0 ? HUGE_VAL : r->iter_s * price / 3600.0;
}

/* ---- canonical node order ------------------------------------------- */

/* A node as the canonical sort sees it (qsort has no context argument,
 * so each entry carries its cluster). */
typedef struct node_key {
    const fmt_cluster *c;
    int node;
} node_key;

static int cmp_num(double a, double b)
{
    return (a < b) - (a > b); /* larger first */
}

/* Names compared with runs of digits as numbers ("n-9" before "n-10"). */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            const char *x = a, *y = b;
            size_t la, lb;
            while (*x == '0')
                x++;
            while (*y == '0')
                y++;
            for (a = x; *a >= '0' && *a <= '9'; a++)
                ;
            for (b = y; *b >= '0' && *b <= '9'; b++)
                ;
            la = (size_t)(a - x);
            lb = (size_t)(b - y);
            if (la != lb)
                return la < lb ? -1 : 1;
            if (la > 0 && memcmp(x, y, la) != 0)
                return memcmp(x, y, la);
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return (*a != 0) - (*b != 0);
}

static int node_cmp(const void *pa, const void *pb)
{
    const node_key *ka = pa, *kb = pb;
    const fmt_node *a = &ka->c->nodes[ka->node], *b = &kb->c->nodes[kb->node];
    const fmt_device_type *x = &ka->c->types[a->type], *y = &kb->c->types[b->type];
    int d;

    if ((d = cmp_num(x->flops_fp16 + x->flops_bf16, y->flops_fp16 + y->flops_bf16)) ||
        (d = cmp_num(x->mem_bw, y->mem_bw)) || (d = cmp_num(x->mem_bytes, y->mem_bytes)) ||
        (d = strcmp(x->name, y->name)) || (d = strcmp(a->region, b->region)) ||
        (d = cmp_num(a->intra_bw, b->intra_bw)) || (d = cmp_num(a->nic_bw, b->nic_bw)) ||
        (d = cmp_num(-a->nic_lat, -b->nic_lat)) || (d = cmp_num(a->gpus, b->gpus)))
        return d;
    if ((d = natural_cmp(a->name, b->name)) != 0)
        return d;
    return strcmp(a->name, b->name); /* names are unique */
}

void search_canonical_nodes(const fmt_cluster *c, int *order)
{
    node_key *k = malloc((size_t)(c->nnodes > 0 ? c->nnodes : 1) * sizeof *k);
    int i, j;

    for (i = 0; i < c->nnodes; i++)
        order[i] = i;
    if (k == NULL) { /* out of memory: a stable insertion sort in place */
        for (i = 1; i < c->nnodes; i++)
            for (j = i; j > 0; j--) {
                node_key a = {c, order[j - 1]}, b = {c, order[j]};
                int t = order[j];
                if (node_cmp(&a, &b) <= 0)
                    break;
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        return;
    }
    for (i = 0; i < c->nnodes; i++) {
        k[i].c = c;
        k[i].node = i;
    }
    qsort(k, (size_t)c->nnodes, sizeof *k, node_cmp);
    for (i = 0; i < c->nnodes; i++)
        order[i] = k[i].node;
    free(k);
}

/* ---- sub-clusters ----------------------------------------------------- */

int search_sub_cluster(const fmt_cluster *c, const int *nodes, int n,
                       double mem_scale, fmt_cluster *out, int *dev_map)
{
    int *where = NULL, i, g, k = 0;

    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", c->name);
    out->types = malloc((size_t)c->ntypes * sizeof *out->types);
    out->nodes = malloc((size_t)(n > 0 ? n : 1) * sizeof *out->nodes);
    out->links = malloc((size_t)(c->nlinks > 0 ? c->nlinks : 1) * sizeof *out->links);
    where = malloc((size_t)c->nnodes * sizeof *where);
    if (c->price != NULL)
        out->price = malloc((size_t)c->ntypes * sizeof *out->price);
    if (!out->types || !out->nodes || !out->links || !where ||
        (c->price != NULL && out->price == NULL))
        goto fail;
    out->ntypes = c->ntypes;
    for (i = 0; i < c->ntypes; i++) {
        out->types[i] = c->types[i];
        out->types[i].mem_bytes *= mem_scale;
        if (c->price != NULL)
            out->price[i] = c->price[i];
    }
    for (i = 0; i < c->nnodes; i++)
        where[i] = -1;
    for (i = 0; i < n; i++) {
        out->nodes[i] = c->nodes[nodes[i]];
        where[nodes[i]] = i;
    }
    out->nnodes = n;
    for (i = 0; i < c->nlinks; i++) {
        fmt_link l = c->links[i];
        if (where[l.node_a] < 0 || where[l.node_b] < 0)
            continue;
        l.node_a = where[l.node_a];
        l.node_b = where[l.node_b];
        out->links[k++] = l;
    }
    out->nlinks = k;
    free(where);
    where = NULL;
    if (fmt_cluster_index(out) != UTIL_OK)
        goto fail;
    for (i = 0; dev_map != NULL && i < n; i++)
        for (g = 0; g < c->nodes[nodes[i]].gpus; g++)
            dev_map[out->nodes[i].first_device + g] = c->nodes[nodes[i]].first_device + g;
    return UTIL_OK;
fail:
    free(where);
    fmt_cluster_free(out);
    return UTIL_ENOMEM;
}

/* ---- the search over subsets ----------------------------------------- */

typedef struct pooled {
    search_candidate cand;  /* ranks index c's devices */
    double v;               /* objective on the work cluster */
    int order;              /* insertion order: ties keep it */
    int all;                /* 1: found on every device */
} pooled;

typedef struct subset_ctx {
    const fmt_cluster *c;
    fmt_cluster wc;         /* c with memory scaled by the headroom */
    const fmt_model *m;
    const fmt_profile *prof;
    const cost_params *cp;
    const search_params *sp;
    int *order;             /* all nodes, in placement order */
    int *group;             /* group of each position of order */
    int ngroups;
    int max_sets, canonical;
    double deadline;        /* search_now() when sp->time_limit_s ends, 0 = none */
    pooled *pool;
    int npool, cap;
    double all_v;           /* best objective using every device */
    int *best_nodes;        /* the set with the best objective so far */
    int best_n;
    double best_v;
    int all_rc;             /* search_plan's status on every device */
    util_error all_err;
    search_result *out;
    char lc_why[160];       /* why the launcher dropped the first candidate */
} subset_ctx;

static int pool_add(subset_ctx *x, search_candidate *cand, double v, int all)
{
    if (x->npool == x->cap) {
        int ncap = x->cap ? 2 * x->cap : 32;
        pooled *p = realloc(x->pool, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return UTIL_ENOMEM;
        x->pool = p;
        x->cap = ncap;
    }
    x->pool[x->npool].cand = *cand;
    x->pool[x->npool].v = v;
    x->pool[x->npool].order = x->npool;
    x->pool[x->npool].all = all;
    x->npool++;
    memset(cand, 0, sizeof *cand);
    return UTIL_OK;
}

static int pool_cmp(const void *pa, const void *pb)
{
    const pooled *a = pa, *b = pb;

    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    if (a->cand.r.iter_s != b->cand.r.iter_s)
        return a->cand.r.iter_s < b->cand.r.iter_s ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Largest prime factor of n (n >= 1). */
static int largest_prime(int n)
{
    int p, big = 1;

    for (p = 2; (long)p * p <= n; p++)
        while (n % p == 0) {
            big = p;
            n /= p;
        }
    return n > 1 ? n : big;
}

static int set_gpus(const subset_ctx *x, const int *nodes, int n)
{
    int i, sum = 0;

    for (i = 0; i < n; i++)
        sum += x->c->nodes[nodes[i]].gpus;
    return sum;
}

/* The objective of a candidate per requested batch: with
 * --batch-tolerance, subsets may run different (rounded) batches, so the
 * time or price of an iteration is scaled to the batch asked for. */
static double pool_value(const subset_ctx *x, const search_candidate *cd)
{
    double v = search_objective_value(&x->wc, x->sp->objective, &cd->s, &cd->r);
    long b = (long)cd->s.mbs * cd->s.gas * cd->s.dp;

    if (x->sp->global_batch > 0 && b > 0 && b != x->sp->global_batch)
        v *= (double)x->sp->global_batch / (double)b;
    return v;
}

/* Search one set of nodes (in placement order); its candidates join the
 * pool; *best gets the set's best objective (INFINITY when none). */
static int search_set(subset_ctx *x, const int *nodes, int n, int is_all,
                      double *best, util_error *err)
{
    fmt_cluster sc;
    search_result res;
    search_params lsp;
    util_error e;
    int *dev_map = NULL, rc, i, j;

    *best = HUGE_VAL;
    if (!is_all && x->deadline > 0.0 && search_now() >= x->deadline) {
        x->out->timed_out = 1; /* no time left for another subset */
        return UTIL_OK;
    }
    memset(&res, 0, sizeof res);
    memset(&e, 0, sizeof e);
    dev_map = malloc(((size_t)set_gpus(x, nodes, n) + 1) * sizeof *dev_map);
    if (dev_map == NULL ||
        search_sub_cluster(x->c, nodes, n, 1.0 - x->sp->memory_headroom, &sc, dev_map) != UTIL_OK) {
        free(dev_map);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    x->out->subsets++;
    lsp = *x->sp;
    if (x->deadline > 0.0) { /* the time limit covers every subset */
        lsp.time_limit_s = x->deadline - search_now();
        if (lsp.time_limit_s <= 0.0)
            lsp.time_limit_s = 1e-9;
    }
    rc = search_plan(&sc, x->m, x->prof, x->cp, &lsp, &res, &e);
    if (rc == UTIL_ETIMEOUT) /* name the user's limit, not what was left of it */
        util_error_set(&e, UTIL_ETIMEOUT, NULL, NULL, "time limit of %g s reached "
                       "after %ld candidates, none of which fits", x->sp->time_limit_s,
                       x->out->evaluated + x->out->rejected_memory +
                           x->out->rejected_other + res.evaluated +
                           res.rejected_memory + res.rejected_other);
    if (is_all) {
        x->all_rc = rc;
        x->all_err = e;
    }
    if (res.timed_out || rc == UTIL_ETIMEOUT)
        x->out->timed_out = 1;
    if (rc == UTIL_ETIMEOUT) {
        rc = UTIL_OK;
        goto done;
    }
    if (rc == UTIL_EINFEASIBLE) {
        rc = UTIL_OK;
        goto done;
    }
    if (rc != UTIL_OK) {
        if (err != NULL)
            *err = e;
        goto done;
    }
    x->out->evaluated += res.evaluated;
    x->out->rejected_memory += res.rejected_memory;
    x->out->rejected_other += res.rejected_other;
    x->out->rejected_stages += res.rejected_stages;
    x->out->rejected_cells += res.rejected_cells;
    x->out->pruned += res.pruned;
    x->out->space += res.space;
    if (res.exact_samples_s > x->out->exact_samples_s)
        x->out->exact_samples_s = res.exact_samples_s;
    for (i = 0; i < res.n; i++) {
        search_candidate *cd = &res.cands[i];
        double v;
        for (j = 0; j < cd->s.tp * cd->s.dp * cd->s.pp; j++)
            cd->s.ranks[j] = dev_map[cd->s.ranks[j]];
        v = pool_value(x, cd);
        if (!cd->r.fits && !x->sp->keep_infeasible)
            continue;
        if (!search_launcher_ok(x->c, x->m, &x->sp->launcher, &cd->s, x->lc_why[0] ? NULL
                                : x->lc_why, sizeof x->lc_why))
            continue; /* e.g. Megatron's uniform split: the launcher cannot run it */
        if (v < *best)
            *best = v;
        if (pool_add(x, cd, v, is_all) != UTIL_OK) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
    }
    if (is_all)
        x->all_v = *best;
    if (*best < x->best_v) {
        x->best_v = *best;
        x->best_n = n;
        memcpy(x->best_nodes, nodes, (size_t)n * sizeof *nodes);
    }
done:
    search_result_free(&res);
    fmt_cluster_free(&sc);
    free(dev_map);
    return rc;
}

/* Nodes of the groups in mask (1 = kept), in placement order. */
static int mask_nodes(const subset_ctx *x, const char *mask, int *nodes)
{
    int i, n = 0;

    for (i = 0; i < x->c->nnodes; i++)
        if (mask[x->group[i]])
            nodes[n++] = x->order[i];
    return n;
}

/* When the set's GPU count has a prime factor above 7 (tp, dp and pp
 * cannot split it), search it again without its last nodes: the fewest
 * (at most an eighth of them) that make the count factor. */
static int odd_scale(subset_ctx *x, const int *nodes, int n, util_error *err)
{
    int d, gpus = set_gpus(x, nodes, n), rc = UTIL_OK;
    double v;

    if (largest_prime(gpus) <= 7 || n < 2)
        return UTIL_OK;
    for (d = 1; d <= (n / 8 > 1 ? n / 8 : 1) && d < n; d++) {
        gpus -= x->c->nodes[nodes[n - d]].gpus;
        if (largest_prime(gpus) <= 7) {
            if (x->out->subsets < x->max_sets)
                rc = search_set(x, nodes, n - d, 0, &v, err);
            break;
        }
    }
    return rc;
}

/* Backward elimination of node groups: each round searches the current
 * set without each of its groups and keeps the removal that scores
 * best, until one group is left or the bound on searches is reached. */
static int eliminate(subset_ctx *x, int *nodes, util_error *err)
{
    char *mask = malloc((size_t)x->ngroups);
    int left = x->ngroups, g, n, rc = UTIL_OK, best_g;
    double v, best_v;

    if (mask == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    memset(mask, 1, (size_t)x->ngroups);
    while (left > 1 && x->out->subsets < x->max_sets) {
        best_g = -1;
        best_v = HUGE_VAL;
        for (g = 0; g < x->ngroups && x->out->subsets < x->max_sets; g++) {
            if (!mask[g])
                continue;
            mask[g] = 0;
            n = mask_nodes(x, mask, nodes);
            rc = search_set(x, nodes, n, 0, &v, err);
            mask[g] = 1;
            if (rc != UTIL_OK)
                goto done;
            if (best_g < 0 || v < best_v) {
                best_g = g;
                best_v = v;
            }
        }
        if (best_v == HUGE_VAL) /* nothing runs: drop the slowest group */
            for (g = 0; g < x->ngroups; g++)
                if (mask[g])
                    best_g = g;
        if (best_g < 0)
            break;
        mask[best_g] = 0;
        left--;
    }
done:
    free(mask);
    return rc;
}

/* Why cand leaves devices idle. */
static void idle_reason(const subset_ctx *x, search_candidate *cd, double v)
{
    int used = cd->s.tp * cd->s.dp * cd->s.pp, N = x->c->ndevices;
    char why[320];

    cd->idle_reason[0] = '\0';
    if (used >= N)
        return;
    if (x->all_v < HUGE_VAL) {
        if (x->sp->objective == SEARCH_OBJ_COST)
            snprintf(cd->idle_reason, sizeof cd->idle_reason,
                     "cheaper without them: %.4g per iteration on %d GPUs "
                     "against %.4g with all %d in use", v, used, x->all_v, N);
        else
            snprintf(cd->idle_reason, sizeof cd->idle_reason,
                     "faster without them: %.4f s per iteration on %d GPUs "
                     "against %.4f s with all %d in use", v, used, x->all_v, N);
        return;
    }
    util_error_format(&x->all_err, why, sizeof why);
    if (largest_prime(N) > 7)
        snprintf(cd->idle_reason, sizeof cd->idle_reason,
                 "no strategy runs on all %d GPUs (prime factor %d: tp, dp "
                 "and pp cannot split them): %.180s", N, largest_prime(N), why);
    else
        snprintf(cd->idle_reason, sizeof cd->idle_reason,
                 "no strategy runs on all %d GPUs: %.240s", N, why);
}

/* The placement search sp->placement_search asks for (annealing, or
 * annealing then the GA) on one strategy of the work cluster. */
static int place_search(subset_ctx *x, const cost_params *cp, int steps,
                        fmt_strategy *s, cost_result *r, long *moves, util_error *err)
{
    if (x->sp->placement_search == SEARCH_PSEARCH_GA)
        return search_ga(&x->wc, x->m, x->prof, cp, x->sp, steps, x->sp->seed, s, r,
                         moves, err);
    return search_anneal(&x->wc, x->m, x->prof, cp, x->sp, steps, x->sp->seed, s, r,
                         moves, err);
}

/* Anneal one candidate on the work cluster.  Under the simulator the
 * moves are scored with the analytic model (as the enumeration prunes),
 * and the result is kept only when the simulator agrees it is better. */
static int anneal_one(subset_ctx *x, search_candidate *cd, int steps, long *moves,
                      util_error *err)
{
    cost_params analytic = *x->cp;
    fmt_strategy s;
    cost_result r, rs;
    int rc;

    if (x->cp->fidelity != COST_FIDELITY_SIMULATE)
        return place_search(x, x->cp, steps, &cd->s, &cd->r, moves, err);
    analytic.fidelity = COST_FIDELITY_ANALYTIC;
    memset(&rs, 0, sizeof rs);
    if (fmt_strategy_copy(&s, &cd->s) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    rc = cost_evaluate(&x->wc, x->m, x->prof, &analytic, &s, &r, err);
    if (rc == UTIL_OK)
        rc = place_search(x, &analytic, steps, &s, &r, moves, err);
    if (rc == UTIL_OK && strcmp(s.placement, cd->s.placement) != 0)
        rc = cost_evaluate(&x->wc, x->m, x->prof, x->cp, &s, &rs, err);
    if (rc == UTIL_OK && rs.fits && rs.empty_stage < 0 &&
        search_objective_value(&x->wc, x->sp->objective, &s, &rs) <
            search_objective_value(&x->wc, x->sp->objective, &cd->s, &cd->r)) {
        fmt_strategy_free(&cd->s);
        cost_result_free(&cd->r);
        cd->s = s;
        cd->r = rs;
        memset(&s, 0, sizeof s);
        memset(&rs, 0, sizeof rs);
    }
    fmt_strategy_free(&s);
    cost_result_free(&r);
    cost_result_free(&rs);
    return rc;
}

/* Groups of alike nodes (device type and region), numbered in placement
 * order; alike nodes are adjacent in the canonical order, so the node
 * before is tried first. */
static int make_groups(subset_ctx *x)
{
    int *rep = malloc((size_t)x->c->nnodes * sizeof *rep), i, g;

    x->group = malloc((size_t)x->c->nnodes * sizeof *x->group);
    if (x->group == NULL || rep == NULL) {
        free(rep);
        return UTIL_ENOMEM;
    }
    x->ngroups = 0;
    for (i = 0; i < x->c->nnodes; i++) {
        const fmt_node *a = &x->c->nodes[x->order[i]];
        x->group[i] = -1;
        for (g = i > 0 ? x->group[i - 1] : 0; g < x->ngroups && x->group[i] < 0; g++) {
            const fmt_node *b = &x->c->nodes[rep[g]];
            if (a->type == b->type && strcmp(a->region, b->region) == 0)
                x->group[i] = g;
        }
        for (g = 0; g < x->ngroups && x->group[i] < 0; g++) {
            const fmt_node *b = &x->c->nodes[rep[g]];
            if (a->type == b->type && strcmp(a->region, b->region) == 0)
                x->group[i] = g;
        }
        if (x->group[i] < 0) {
            rep[x->ngroups] = x->order[i];
            x->group[i] = x->ngroups++;
        }
    }
    free(rep);
    return UTIL_OK;
}

/* Check that objective cost has a price for every device type used. */
static int same_ints(const int *a, const int *b, int n)
{
    return a == NULL || b == NULL ? a == b : memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* a and b the same plan for a user: the same degrees, features, stages
 * and shards, every rank on the same node (the GPUs of a node are alike)
 * and the same time; they differ at most by which GPUs of a node they
 * use, as two searches of one set can end. */
static int same_plan(const fmt_cluster *c, const search_candidate *a,
                     const search_candidate *b)
{
    const fmt_strategy *x = &a->s, *y = &b->s;
    int n = x->tp * x->dp * x->pp, i;

    if (x->tp != y->tp || x->dp != y->dp || x->pp != y->pp || x->mbs != y->mbs ||
        x->gas != y->gas || x->schedule != y->schedule || x->vpp != y->vpp ||
        x->sp != y->sp || x->recompute != y->recompute || x->zero != y->zero ||
        x->offload != y->offload || !same_ints(x->bounds, y->bounds, x->pp + 1) ||
        !same_ints(x->tp_heads, y->tp_heads, n) || !same_ints(x->tp_cols, y->tp_cols, n) ||
        (x->slow == NULL) != (y->slow == NULL) ||
        fabs(a->r.iter_s - b->r.iter_s) > 1e-12 * fabs(a->r.iter_s))
        return 0;
    for (i = 0; i < n; i++)
        if (c->device_node[x->ranks[i]] != c->device_node[y->ranks[i]] ||
            (x->slow != NULL && x->slow[i] != y->slow[i]))
            return 0;
    return 1;
}

static int check_prices(const fmt_cluster *c, int objective, util_error *err)
{
    int i, t;

    if (objective != SEARCH_OBJ_COST)
        return UTIL_OK;
    for (i = 0; i < c->nnodes; i++) {
        t = c->nodes[i].type;
        if (c->price == NULL || c->price[t] < 0.0)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "objective 'cost' needs the price of device "
                                  "type '%s' (node '%s'): give 'price_per_hour' "
                                  "in device_types or 'prices' in the cluster file",
                                  c->types[t].name, c->nodes[i].name);
    }
    return UTIL_OK;
}

int search_plan_subsets(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, search_result *out,
                        util_error *err)
{
    subset_ctx x;
    int *nodes = NULL, i, n, rc, keep, steps, all_done;
    double v;

    memset(out, 0, sizeof *out);
    memset(&x, 0, sizeof x);
    if (sp->memory_headroom < 0.0 || !(sp->memory_headroom < 1.0))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "memory headroom must be at least 0 and below 1, "
                              "got %g", sp->memory_headroom);
    if (sp->objective < 0 || sp->objective >= SEARCH_OBJ_N)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "unknown objective %d", sp->objective);
    if ((rc = check_prices(c, sp->objective, err)) != UTIL_OK)
        return rc;
    x.c = c;
    x.m = m;
    x.prof = prof;
    x.cp = cp;
    x.sp = sp;
    x.out = out;
    x.all_v = HUGE_VAL;
    x.best_v = HUGE_VAL;
    x.deadline = sp->time_limit_s > 0.0 ? search_now() + sp->time_limit_s : 0.0;
    x.max_sets = sp->max_subsets;
    if (x.max_sets <= 0) { /* fewer searches of a large cluster */
        x.max_sets = c->ndevices > 1024
                         ? (int)((long)SEARCH_MAX_SUBSETS * 1024 / c->ndevices) : SEARCH_MAX_SUBSETS;
        if (x.max_sets < 4)
            x.max_sets = 4;
    }
    /* megatron's baseline and a single placement rule keep the file order */
    x.canonical = sp->method != SEARCH_METHOD_MEGATRON &&
                  (sp->placements & ((1u << SEARCH_PLACE_NPLACEMENTS) - 1u)) ==
                      ((1u << SEARCH_PLACE_NPLACEMENTS) - 1u);
    x.order = malloc((size_t)c->nnodes * sizeof *x.order);
    nodes = malloc((size_t)c->nnodes * sizeof *nodes);
    x.best_nodes = malloc((size_t)c->nnodes * sizeof *x.best_nodes);
    if (x.order == NULL || nodes == NULL || x.best_nodes == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < c->nnodes; i++)
        x.order[i] = i;
    if (x.canonical)
        search_canonical_nodes(c, x.order);
    for (i = 0; i < c->nnodes; i++)
        nodes[i] = i;
    /* the work cluster: c in file order, memory scaled by the headroom */
    if (make_groups(&x) != UTIL_OK ||
        search_sub_cluster(c, nodes, c->nnodes, 1.0 - sp->memory_headroom, &x.wc, NULL) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    rc = search_set(&x, x.order, c->nnodes, 1, &v, err);
    if (rc == UTIL_OK && !sp->use_all && sp->method != SEARCH_METHOD_MEGATRON) {
        memcpy(nodes, x.order, (size_t)c->nnodes * sizeof *nodes);
        rc = odd_scale(&x, nodes, c->nnodes, err);
        if (rc == UTIL_OK)
            rc = eliminate(&x, nodes, err);
        if (rc == UTIL_OK && x.best_n > 0 && x.best_n < c->nnodes) {
            /* the best set may not factor either */
            memcpy(nodes, x.best_nodes, (size_t)x.best_n * sizeof *nodes);
            rc = odd_scale(&x, nodes, x.best_n, err);
        }
    }
    if (rc != UTIL_OK)
        goto done;
    if (x.npool == 0) { /* nothing runs on any subset: say why for all */
        rc = x.all_rc != UTIL_OK ? x.all_rc : UTIL_EINFEASIBLE;
        if (x.all_rc == UTIL_OK && x.lc_why[0] != '\0')
            util_error_set(&x.all_err, UTIL_EINFEASIBLE, NULL, NULL,
                           "no strategy found that the launcher runs exactly: %s",
                           x.lc_why);
        if (err != NULL) /* a memory headroom is named in its remedies */
            *err = x.all_err;
        goto done;
    }
    qsort(x.pool, (size_t)x.npool, sizeof *x.pool, pool_cmp);
    /* anneal the placement of the best few, then rank again */
    steps = sp->anneal_steps == 0 ? SEARCH_ANNEAL_STEPS : sp->anneal_steps;
    if (out->timed_out || (x.deadline > 0.0 && search_now() >= x.deadline))
        steps = -1; /* the time limit has passed: no placement search */
    keep = x.canonical && sp->placement_search != SEARCH_PSEARCH_RULES &&
                   (steps > 0 || sp->placement_search == SEARCH_PSEARCH_GA)
               ? SEARCH_ANNEAL_KEEP : 0;
    for (i = 0, n = 0, all_done = 0; keep > 0 && i < x.npool; i++) {
        long moves = 0;
        /* the best few, and the best few on every device */
        if (n >= keep && (all_done >= keep || !x.pool[i].all))
            continue;
        n += n < keep;
        all_done += x.pool[i].all;
        rc = anneal_one(&x, &x.pool[i].cand, steps, &moves, err);
        if (rc != UTIL_OK)
            goto done;
        out->anneal_moves += moves;
        x.pool[i].v = pool_value(&x, &x.pool[i].cand);
    }
    qsort(x.pool, (size_t)x.npool, sizeof *x.pool, pool_cmp);
    n = x.npool < sp->top_k ? x.npool : sp->top_k;
    out->cands = calloc((size_t)n + 1, sizeof *out->cands);
    if (out->cands == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < x.npool && out->n < n; i++) {
        search_candidate *cd = &x.pool[i].cand;
        long b = (long)cd->s.mbs * cd->s.gas * cd->s.dp;
        int k;
        if (out->n > 0 && b != out->global_batch)
            continue; /* a plan has one global batch: that of the best */
        for (k = 0; k < out->n && !same_plan(c, &out->cands[k], cd); k++)
            ;
        if (k < out->n)
            continue; /* listed already */
        out->global_batch = (int)b;
        if (sp->memory_headroom > 0.0) { /* memory and headroom of the real devices */
            cost_result r;
            rc = cost_evaluate(c, m, prof, cp, &cd->s, &r, err);
            if (rc != UTIL_OK)
                goto done;
            cost_result_free(&cd->r);
            cd->r = r;
        }
        idle_reason(&x, cd, x.pool[i].v);
        out->cands[out->n++] = *cd;
        memset(cd, 0, sizeof *cd);
    }
done:
    for (i = 0; i < x.npool; i++) {
        fmt_strategy_free(&x.pool[i].cand.s);
        cost_result_free(&x.pool[i].cand.r);
    }
    free(x.pool);
    free(x.order);
    free(x.group);
    free(x.best_nodes);
    free(nodes);
    fmt_cluster_free(&x.wc);
    if (rc != UTIL_OK) {
        int subsets = out->subsets;
        search_result_free(out);
        out->subsets = subsets;
    }
    return rc;
}
