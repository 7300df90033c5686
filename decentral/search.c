/* decentral/search.c: schedulers for decentralized training (DT-FM, Yuan et
 * al., NeurIPS'22, section 3.4): the hybrid genetic algorithm with the
 * paper's local search and its circular extension, the same GA with
 * Kernighan-Lin local search, simulated annealing, random assignment and
 * an exhaustive optimum for small instances.
 *
 * All searchers share one incremental evaluator: a partition keeps each
 * device's eq. 2 row sum inside its group, each group's DataP-Cost, and
 * the coarsened graph (eq. 3 for every pair of groups, memoised by the
 * two groups' member sets); a move touches the rows of the groups it
 * changes and re-solves the open-loop TSP (eq. 4).  Single-threaded, so a
 * seed gives the same result on any machine for an evaluation limit. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decentral.h"

#define HK_INNER_MAX 12      /* exact TSP inside the search up to this k */
#define CACHE_BITS 16        /* memoised coarsened edges: 2^16 slots */
#define TOL 1e-12            /* relative tolerance of "better" */

static const char *const method_names[DTFM_NMETHODS] = {
    "ga", "sa", "kl", "random", "exact"};

const char *dtfm_method_name(int method)
{
    if (method < 0 || method >= DTFM_NMETHODS)
        return NULL;
    return method_names[method];
}

int dtfm_method_from_name(const char *name)
{
    int i;

    if (name == NULL)
        return -1;
    for (i = 0; i < DTFM_NMETHODS; i++)
        if (strcmp(name, method_names[i]) == 0)
            return i;
    return -1;
}

void dtfm_search_params_init(dtfm_search_params *p)
{
    memset(p, 0, sizeof *p);
    p->method = DTFM_GA;
    p->seed = 0;
    p->seconds = 0.0;
    p->max_evals = 0;
    p->stall = 0;
    p->population = 32;
    p->ls_passes = 0;
    p->checkpoint_s = 0.0;
    p->progress = NULL;
    p->progress_ctx = NULL;
}

void dtfm_search_result_free(dtfm_search_result *r)
{
    if (r == NULL)
        return;
    free(r->group_of);
    memset(r, 0, sizeof *r);
}

/* ---- context and partition state ------------------------------------- */

typedef struct cache_slot {
    uint64_t ka, kb;         /* member-set hashes of the two groups, ka <= kb */
    double v;                /* eq. 3 value */
    double r;                /* tie-break value (edge_refined) */
} cache_slot;

typedef struct ctx {
    const dtfm_problem *p;
    const dtfm_search_params *sp;
    int n, k, g;
    double *wdp, *wpp;       /* n * n pair weights of eqs. 2 and 3 */
    double *aff;             /* n * n Kernighan-Lin affinity 1 / w_dp */
    const double *comp;      /* per-device compute or NULL */
    uint64_t *zob;           /* n random keys: group hash = XOR of members' */
    double *sub;             /* g * g scratch for eq. 3 */
    double *hk;              /* Held-Karp table for k <= HK_INNER_MAX */
    int *tsp_order;          /* k scratch */
    double *mstkey;          /* k scratch */
    cache_slot *cache;       /* 2^CACHE_BITS slots */
    util_pcg32 rng;
    long evals;
    long gens;
    double t0;
    int stop;                /* budget exhausted */
    int timed_out;
    long stall;              /* effective stall limit, 0 = none */
    double next_report;      /* progress callback time */
    double best;             /* best cost so far */
    int *best_grp;           /* n */
    double best_at;
    double checkpoint_cost;
    int checkpoint_done;
    const char *phase;
} ctx;

typedef struct state {
    int *grp;                /* n: group of each device */
    int *mem;                /* k * g: members of each group */
    int *pos;                /* n: index of a device in its group's row */
    double *rs;              /* n: sum of w_dp to the other members */
    double *dp;              /* k: eq. 2 of each group */
    double *cm;              /* k: slowest compute in each group */
    uint64_t *h;             /* k: member-set hash */
    double *E;               /* k * k coarsened graph */
    double *R;               /* k * k tie-break edge values */
    double tsp;              /* PipelineP-Cost */
    double cost;             /* total */
    double sur;              /* tie-break: sum of eq. 2 over groups + sum of R */
} state;

/* A move in progress: saved rows of the groups it touches. */
typedef struct tx {
    int ntouched;
    int *touched;            /* k group ids */
    char *is_touched;        /* k flags */
    int *smem;               /* k * g saved member rows (by slot) */
    double *srs;             /* k * g saved row sums (by position) */
    double *sE;              /* k * k saved E rows */
    double *sR;              /* k * k saved R rows */
    double *sdp, *scm;       /* k */
    uint64_t *sh;            /* k */
    double stsp, scost, ssur;
    int edges_done;          /* 0 after an early exit: E rows of touched groups stale */
} tx;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int better(double a, double b)
{
    return a < b - TOL * (fabs(b) > 1.0 ? fabs(b) : 1.0);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static int state_alloc(state *s, int n, int k, int g)
{
    memset(s, 0, sizeof *s);
    s->grp = malloc((size_t)n * sizeof *s->grp);
    s->mem = malloc((size_t)k * (size_t)g * sizeof *s->mem);
    s->pos = malloc((size_t)n * sizeof *s->pos);
    s->rs = malloc((size_t)n * sizeof *s->rs);
    s->dp = malloc((size_t)k * sizeof *s->dp);
    s->cm = malloc((size_t)k * sizeof *s->cm);
    s->h = malloc((size_t)k * sizeof *s->h);
    s->E = calloc((size_t)k * (size_t)k, sizeof *s->E);
    s->R = calloc((size_t)k * (size_t)k, sizeof *s->R);
    return s->grp && s->mem && s->pos && s->rs && s->dp && s->cm && s->h &&
           s->E && s->R;
}

static void state_free(state *s)
{
    free(s->grp);
    free(s->mem);
    free(s->pos);
    free(s->rs);
    free(s->dp);
    free(s->cm);
    free(s->h);
    free(s->E);
    free(s->R);
    memset(s, 0, sizeof *s);
}

static int tx_alloc(tx *t, int k, int g)
{
    memset(t, 0, sizeof *t);
    t->touched = malloc((size_t)k * sizeof *t->touched);
    t->is_touched = calloc((size_t)k, 1);
    t->smem = malloc((size_t)k * (size_t)g * sizeof *t->smem);
    t->srs = malloc((size_t)k * (size_t)g * sizeof *t->srs);
    t->sE = malloc((size_t)k * (size_t)k * sizeof *t->sE);
    t->sR = malloc((size_t)k * (size_t)k * sizeof *t->sR);
    t->sdp = malloc((size_t)k * sizeof *t->sdp);
    t->scm = malloc((size_t)k * sizeof *t->scm);
    t->sh = malloc((size_t)k * sizeof *t->sh);
    return t->touched && t->is_touched && t->smem && t->srs && t->sE &&
           t->sR && t->sdp && t->scm && t->sh;
}

static void tx_free(tx *t)
{
    free(t->touched);
    free(t->is_touched);
    free(t->smem);
    free(t->srs);
    free(t->sE);
    free(t->sR);
    free(t->sdp);
    free(t->scm);
    free(t->sh);
    memset(t, 0, sizeof *t);
}

/* ---- budget and progress --------------------------------------------- */

static void report(ctx *c, int force)
{
    double t = now_s() - c->t0;
    search_progress pr;

    if (c->sp->progress == NULL || (!force && t < c->next_report))
        return;
    c->next_report = t + 0.25;
    pr.elapsed_s = t;
    pr.evaluated = c->evals;
    pr.total = c->sp->max_evals;
    pr.best_s = c->best < DBL_MAX ? c->best : -1.0;
    pr.phase = c->phase;
    c->sp->progress(c->sp->progress_ctx, &pr);
}

/* Count one evaluation; sets c->stop when a limit is reached. */
static void tick(ctx *c)
{
    c->evals++;
    if (c->sp->max_evals > 0 && c->evals >= c->sp->max_evals)
        c->stop = 1;
    if ((c->evals & 15) == 0) {
        double t = now_s() - c->t0;
        if (!c->checkpoint_done && c->sp->checkpoint_s > 0 &&
            t >= c->sp->checkpoint_s) {
            c->checkpoint_done = 1;
            c->checkpoint_cost = c->best < DBL_MAX ? c->best : -1.0;
        }
        if (c->sp->seconds > 0 && t >= c->sp->seconds) {
            c->stop = 1;
            c->timed_out = 1;
        }
        report(c, 0);
    }
}

static void note_best(ctx *c, const state *s)
{
    if (better(s->cost, c->best)) {
        c->best = s->cost;
        memcpy(c->best_grp, s->grp, (size_t)c->n * sizeof *s->grp);
        c->best_at = now_s() - c->t0;
    }
}

/* ---- evaluation ------------------------------------------------------ */

/* Largest matching of the g * g graph w using only edges < t (Kuhn's
 * augmenting paths over bit masks; g <= 64). */
static int below_dfs(const uint64_t *adj, int u, uint64_t *seen, int *mr)
{
    uint64_t cand = adj[u] & ~*seen;

    while (cand) {
        int j = __builtin_ctzll(cand);
        cand &= cand - 1;
        *seen |= (uint64_t)1 << j;
        if (mr[j] < 0 || below_dfs(adj, mr[j], seen, mr)) {
            mr[j] = u;
            return 1;
        }
    }
    return 0;
}

static int matching_below(const double *w, int g, double t)
{
    uint64_t adj[64], seen;
    int mr[64], i, j, size = 0;

    for (i = 0; i < g; i++) {
        adj[i] = 0;
        mr[i] = -1;
        for (j = 0; j < g; j++)
            if (w[i * g + j] < t)
                adj[i] |= (uint64_t)1 << j;
    }
    for (i = 0; i < g; i++) {
        seen = 0;
        size += below_dfs(adj, i, &seen, mr);
    }
    return size;
}

/* Eq. 3 between groups a and b (memoised), and its tie-break value: the
 * bottleneck weight times the fraction of pairs that cannot avoid it. */
static double edge(ctx *c, const state *s, int a, int b, double *refined)
{
    uint64_t ka = s->h[a], kb = s->h[b], t;
    cache_slot *slot;
    const int *ma = s->mem + (size_t)a * (size_t)c->g;
    const int *mb = s->mem + (size_t)b * (size_t)c->g;
    int i, j, g = c->g, need;
    double v;

    if (ka > kb) {
        t = ka;
        ka = kb;
        kb = t;
    }
    slot = &c->cache[mix64(ka * 0x9e3779b97f4a7c15ULL ^ kb) &
                     (((uint64_t)1 << CACHE_BITS) - 1)];
    if (slot->ka == ka && slot->kb == kb && slot->v >= 0) {
        *refined = slot->r;
        return slot->v;
    }
    for (i = 0; i < g; i++) {
        const double *row = c->wpp + (size_t)ma[i] * (size_t)c->n;
        for (j = 0; j < g; j++)
            c->sub[i * g + j] = row[mb[j]];
    }
    v = dtfm_bottleneck(c->sub, g, NULL); /* DT-FM eq. 3 */
    need = g <= 64 ? g - matching_below(c->sub, g, v) : g;
    slot->ka = ka;
    slot->kb = kb;
    slot->v = v;
    slot->r = v * (double)need / (double)g;
    *refined = slot->r;
    return v;
}

/* Minimum spanning tree weight of E: a lower bound on any Hamiltonian
 * path (Prim, O(k^2)). */
static double mst_len(ctx *c, const double *E)
{
    int k = c->k, i, j, *in = c->tsp_order;
    double *key = c->mstkey, sum = 0.0;

    for (i = 0; i < k; i++) {
        in[i] = 0;
        key[i] = E[i];
    }
    in[0] = 1;
    for (i = 1; i < k; i++) {
        int bj = -1;
        double bv = DBL_MAX;
        for (j = 0; j < k; j++)
            if (!in[j] && key[j] < bv) {
                bv = key[j];
                bj = j;
            }
        in[bj] = 1;
        sum += bv;
        for (j = 0; j < k; j++)
            if (!in[j] && E[(size_t)bj * (size_t)k + (size_t)j] < key[j])
                key[j] = E[(size_t)bj * (size_t)k + (size_t)j];
    }
    return sum;
}

/* Nearest-neighbour path from every start: an upper bound for pruning. */
static double nn_bound(ctx *c, const double *E)
{
    int k = c->k, s, i, j, cur;
    uint32_t left;
    double best = DBL_MAX;

    for (s = 0; s < k; s++) {
        double len = 0.0;
        left = (k >= 32 ? 0xffffffffu : ((1u << k) - 1u)) & ~(1u << s);
        cur = s;
        for (i = 1; i < k; i++) {
            int bj = -1;
            double bv = DBL_MAX;
            uint32_t m = left;
            while (m) {
                j = __builtin_ctz(m);
                m &= m - 1;
                if (E[cur * k + j] < bv) {
                    bv = E[cur * k + j];
                    bj = j;
                }
            }
            len += bv;
            left &= ~(1u << bj);
            cur = bj;
        }
        if (len < best)
            best = len;
    }
    return best;
}

/* Open-loop TSP length over E (DT-FM eq. 4), Held-Karp for k <= 12.
 * Partial paths longer than bound are pruned: the result is exact when
 * it is <= bound and DBL_MAX (or a heuristic length) otherwise. */
static double tsp_len(ctx *c, const double *E, double bound)
{
    int k = c->k, j, x;
    uint32_t mask, full, m, rest;
    double best = DBL_MAX, len, ub, *hk = c->hk;

    if (k == 1)
        return 0.0;
    if (k > HK_INNER_MAX) {
        if (dtfm_tsp_heuristic(E, k, c->tsp_order, &len) != UTIL_OK)
            return DBL_MAX;
        return len;
    }
    ub = nn_bound(c, E);
    if (bound < ub)
        ub = bound; /* prune above min(bound, a known path) */
    ub += TOL * (fabs(ub) > 1.0 ? fabs(ub) : 1.0);
    full = (1u << k) - 1u;
    for (m = 0; m < (full + 1u) * (uint32_t)k; m++)
        hk[m] = DBL_MAX;
    for (j = 0; j < k; j++)
        hk[(1u << j) * (uint32_t)k + (uint32_t)j] = 0.0;
    for (mask = 1; mask < full; mask++) {
        const double *row = hk + mask * (uint32_t)k;
        m = mask;
        while (m) {
            double base;
            const double *ej;
            j = __builtin_ctz(m);
            m &= m - 1;
            base = row[j];
            if (base > ub)
                continue;
            ej = E + j * k;
            rest = full & ~mask;
            while (rest) {
                double *dst, v;
                x = __builtin_ctz(rest);
                rest &= rest - 1;
                dst = hk + (mask | (1u << x)) * (uint32_t)k + (uint32_t)x;
                v = base + ej[x];
                if (v < *dst)
                    *dst = v;
            }
        }
    }
    for (j = 0; j < k; j++)
        if (hk[full * (uint32_t)k + (uint32_t)j] < best)
            best = hk[full * (uint32_t)k + (uint32_t)j];
    return best > ub ? DBL_MAX : best;
}

static void group_stats(ctx *c, state *s, int q)
{
    const int *m = s->mem + (size_t)q * (size_t)c->g;
    double worst = 0.0, cw = 0.0;
    int i;

    for (i = 0; i < c->g; i++) {
        if (s->rs[m[i]] > worst)
            worst = s->rs[m[i]];
        if (c->comp && c->comp[m[i]] > cw)
            cw = c->comp[m[i]];
    }
    s->dp[q] = worst; /* DT-FM eq. 2 for group q */
    s->cm[q] = cw;
}

static double lower_part(ctx *c, const state *s)
{
    double dpmax = 0.0, comp = 0.0;
    int q;

    for (q = 0; q < c->k; q++) {
        if (s->dp[q] > dpmax)
            dpmax = s->dp[q];
        comp += s->cm[q];
    }
    return dpmax + comp;
}

/* Tie-break between schedules of equal cost: the spanning tree of the
 * coarsened edges weighted by the share of pairs that need the
 * bottleneck link (rewards neighbouring groups nearly matched on fast
 * links, where the cost itself is flat). */
static double surrogate(ctx *c, const state *s)
{
    return mst_len(c, s->R);
}

/* (cost, surrogate) lexicographically below (cost0, sur0)? */
static int lex_better(double cost, double sur, double cost0, double sur0)
{
    if (better(cost, cost0))
        return 1;
    if (better(cost0, cost))
        return 0;
    return better(sur, sur0);
}

/* Rebuild everything from s->grp (which must be balanced). */
static void state_build(ctx *c, state *s)
{
    int n = c->n, k = c->k, g = c->g, i, j, q;
    int *fill = c->tsp_order; /* k scratch */

    for (q = 0; q < k; q++) {
        fill[q] = 0;
        s->h[q] = 0;
    }
    for (i = 0; i < n; i++) {
        q = s->grp[i];
        s->pos[i] = fill[q];
        s->mem[q * g + fill[q]++] = i;
        s->h[q] ^= c->zob[i];
    }
    for (i = 0; i < n; i++) {
        const int *m = s->mem + (size_t)s->grp[i] * (size_t)g;
        const double *row = c->wdp + (size_t)i * (size_t)n;
        double sum = 0.0;
        for (j = 0; j < g; j++)
            sum += row[m[j]];
        s->rs[i] = sum;
    }
    for (q = 0; q < k; q++)
        group_stats(c, s, q);
    for (q = 0; q < k; q++)
        for (j = q + 1; j < k; j++) {
            double r;
            s->E[q * k + j] = s->E[j * k + q] = edge(c, s, q, j, &r);
            s->R[q * k + j] = s->R[j * k + q] = r;
        }
    s->tsp = tsp_len(c, s->E, DBL_MAX);
    s->cost = lower_part(c, s) + s->tsp; /* DT-FM eq. 1 (+ compute) */
    s->sur = surrogate(c, s);
    tick(c);
    note_best(c, s);
}

static void tx_begin(tx *t, const state *s)
{
    t->ntouched = 0;
    t->stsp = s->tsp;
    t->scost = s->cost;
    t->ssur = s->sur;
    t->edges_done = 1;
}

static void tx_touch(ctx *c, tx *t, const state *s, int q)
{
    int k = c->k, g = c->g, i, slot;

    if (t->is_touched[q])
        return;
    slot = t->ntouched++;
    t->touched[slot] = q;
    t->is_touched[q] = 1;
    memcpy(t->smem + (size_t)slot * (size_t)g, s->mem + (size_t)q * (size_t)g,
           (size_t)g * sizeof *t->smem);
    for (i = 0; i < g; i++)
        t->srs[(size_t)slot * (size_t)g + (size_t)i] = s->rs[s->mem[q * g + i]];
    memcpy(t->sE + (size_t)slot * (size_t)k, s->E + (size_t)q * (size_t)k,
           (size_t)k * sizeof *t->sE);
    memcpy(t->sR + (size_t)slot * (size_t)k, s->R + (size_t)q * (size_t)k,
           (size_t)k * sizeof *t->sR);
    t->sdp[slot] = s->dp[q];
    t->scm[slot] = s->cm[q];
    t->sh[slot] = s->h[q];
}

/* Swap devices d and e (different groups) inside a transaction. */
static void tx_swap(ctx *c, tx *t, state *s, int d, int e)
{
    int a = s->grp[d], b = s->grp[e], g = c->g, i, n = c->n;
    int *ma = s->mem + (size_t)a * (size_t)g, *mb = s->mem + (size_t)b * (size_t)g;
    const double *wd = c->wdp + (size_t)d * (size_t)n;
    const double *we = c->wdp + (size_t)e * (size_t)n;
    double sd = 0.0, se = 0.0;
    int pd = s->pos[d], pe = s->pos[e];

    tx_touch(c, t, s, a);
    tx_touch(c, t, s, b);
    for (i = 0; i < g; i++) {
        int x = ma[i], y = mb[i];
        if (x != d) {
            s->rs[x] += we[x] - wd[x];
            se += we[x];
        }
        if (y != e) {
            s->rs[y] += wd[y] - we[y];
            sd += wd[y];
        }
    }
    s->rs[d] = sd;
    s->rs[e] = se;
    ma[pd] = e;
    mb[pe] = d;
    s->pos[d] = pe;
    s->pos[e] = pd;
    s->grp[d] = b;
    s->grp[e] = a;
    s->h[a] ^= c->zob[d] ^ c->zob[e];
    s->h[b] ^= c->zob[d] ^ c->zob[e];
}

/* Cost after the swaps of t.  When it certainly exceeds bound (the part
 * without the pipeline, or that plus the spanning-tree bound, already
 * does), returns a lower bound with t->edges_done = 0; the state is then
 * only good for tx_rollback (or tx_commit, which completes it). */
static double tx_eval(ctx *c, tx *t, state *s, double bound)
{
    int k = c->k, i, q, x;
    double lb, slack = bound + TOL * (fabs(bound) > 1.0 ? fabs(bound) : 1.0);

    for (i = 0; i < t->ntouched; i++)
        group_stats(c, s, t->touched[i]);
    lb = lower_part(c, s);
    tick(c);
    if (lb > slack) {
        t->edges_done = 0;
        return lb;
    }
    for (i = 0; i < t->ntouched; i++) {
        q = t->touched[i];
        for (x = 0; x < k; x++) {
            double r;
            if (x == q || (t->is_touched[x] && x < q))
                continue;
            s->E[q * k + x] = s->E[x * k + q] = edge(c, s, q, x, &r);
            s->R[q * k + x] = s->R[x * k + q] = r;
        }
    }
    if (bound < DBL_MAX && lb + mst_len(c, s->E) > slack) {
        t->edges_done = 0;
        return lb + mst_len(c, s->E);
    }
    s->tsp = tsp_len(c, s->E, bound < DBL_MAX ? slack - lb : DBL_MAX);
    if (s->tsp == DBL_MAX) {
        t->edges_done = 0;
        return DBL_MAX;
    }
    t->edges_done = 1;
    s->cost = lb + s->tsp;
    s->sur = surrogate(c, s);
    return s->cost;
}

static void tx_clear(tx *t)
{
    int i;

    for (i = 0; i < t->ntouched; i++)
        t->is_touched[t->touched[i]] = 0;
    t->ntouched = 0;
}

static void tx_commit(ctx *c, tx *t, state *s)
{
    if (!t->edges_done)
        tx_eval(c, t, s, DBL_MAX);
    tx_clear(t);
    note_best(c, s);
}

static void tx_rollback(ctx *c, tx *t, state *s)
{
    int k = c->k, g = c->g, i, j, q;

    for (i = 0; i < t->ntouched; i++) {
        q = t->touched[i];
        memcpy(s->mem + (size_t)q * (size_t)g, t->smem + (size_t)i * (size_t)g,
               (size_t)g * sizeof *s->mem);
        for (j = 0; j < g; j++) {
            int d = s->mem[q * g + j];
            s->grp[d] = q;
            s->pos[d] = j;
            s->rs[d] = t->srs[(size_t)i * (size_t)g + (size_t)j];
        }
        for (j = 0; j < k; j++) {
            s->E[q * k + j] = s->E[j * k + q] = t->sE[(size_t)i * (size_t)k + (size_t)j];
            s->R[q * k + j] = s->R[j * k + q] = t->sR[(size_t)i * (size_t)k + (size_t)j];
        }
        s->dp[q] = t->sdp[i];
        s->cm[q] = t->scm[i];
        s->h[q] = t->sh[i];
    }
    s->tsp = t->stsp;
    s->cost = t->scost;
    s->sur = t->ssur;
    tx_clear(t);
}

/* Evaluate the swaps already applied in t against the state before
 * them; keep them when (cost, surrogate) improves.  1 = kept. */
static int tx_keep_if_better(ctx *c, tx *t, state *s)
{
    double c0 = t->scost, s0 = t->ssur, v = tx_eval(c, t, s, c0);

    if (t->edges_done && lex_better(v, s->sur, c0, s0)) {
        tx_commit(c, t, s);
        return 1;
    }
    tx_rollback(c, t, s);
    return 0;
}

/* ---- random partitions ----------------------------------------------- */

static void shuffle(util_pcg32 *rng, int *a, int n)
{
    int i;

    for (i = n - 1; i > 0; i--) {
        int j = (int)util_pcg32_bounded(rng, (uint32_t)(i + 1)), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void random_partition(ctx *c, int *grp)
{
    int i;

    for (i = 0; i < c->n; i++)
        grp[i] = i / c->g;
    shuffle(&c->rng, grp, c->n);
}

/* Structured starting points (our addition to the paper's random
 * population): devices in nearest-neighbour order over the pipeline
 * weights (fast-linked devices end up adjacent), then within each block
 * of r * g consecutive devices dealt round-robin over r groups.  r = 1
 * keeps fast clusters together (cheap eq. 2); r = d_pp spreads every
 * cluster over all groups (cheap eq. 3 matchings).  Returns 0 when r
 * does not divide d_pp. */
static int interleaved_partition(ctx *c, int r, int *grp, int *order,
                                 char *used)
{
    int n = c->n, g = c->g, i, j, cur = 0;

    if (r <= 0 || c->k % r != 0)
        return 0;
    memset(used, 0, (size_t)n);
    order[0] = 0;
    used[0] = 1;
    for (i = 1; i < n; i++) {
        int bj = -1;
        double bv = DBL_MAX;
        for (j = 0; j < n; j++)
            if (!used[j] && c->wpp[(size_t)cur * (size_t)n + (size_t)j] < bv) {
                bv = c->wpp[(size_t)cur * (size_t)n + (size_t)j];
                bj = j;
            }
        order[i] = cur = bj;
        used[bj] = 1;
    }
    for (i = 0; i < n; i++) {
        int block = i / (r * g), within = i % (r * g);
        grp[order[i]] = block * r + within % r;
    }
    return 1;
}

/* ---- the paper's local search (DT-FM section 3.4) -------------------- */

/* Fastest link (smallest w_pp) inside group q: devices *x, *y. */
static void fastest_link(ctx *c, const state *s, int q, int *x, int *y)
{
    const int *m = s->mem + (size_t)q * (size_t)c->g;
    double best = DBL_MAX;
    int i, j;

    *x = m[0];
    *y = c->g > 1 ? m[1] : m[0];
    for (i = 0; i < c->g; i++)
        for (j = i + 1; j < c->g; j++) {
            double v = c->wpp[(size_t)m[i] * (size_t)c->n + (size_t)m[j]];
            if (v < best) {
                best = v;
                *x = m[i];
                *y = m[j];
            }
        }
}

/* (1/|C|) sum_{d'' in C} w_pp[d, d''] */
static double mean_to(ctx *c, const state *s, int d, int q)
{
    const int *m = s->mem + (size_t)q * (size_t)c->g;
    const double *row = c->wpp + (size_t)d * (size_t)c->n;
    double sum = 0.0;
    int i;

    for (i = 0; i < c->g; i++)
        sum += row[m[i]];
    return sum / (double)c->g;
}

typedef struct cand {
    int d, e;
    double gain;
} cand;

static int cand_cmp(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;

    if (a->gain > b->gain)
        return -1;
    if (a->gain < b->gain)
        return 1;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

/* Try the swaps in cands (best gain first); keep the first that lowers
 * the cost.  Returns 1 when one was kept. */
static int try_cands(ctx *c, tx *t, state *s, cand *cs, int nc)
{
    int i;

    qsort(cs, (size_t)nc, sizeof *cs, cand_cmp);
    for (i = 0; i < nc && !c->stop; i++) {
        tx_begin(t, s);
        tx_swap(c, t, s, cs[i].d, cs[i].e);
        if (tx_keep_if_better(c, t, s))
            return 1;
    }
    return 0;
}

/* One pass of pair moves: for each pair of groups the four swaps between
 * the endpoints of their fastest links, ordered by the paper's Gain. */
static int paper_pairs(ctx *c, tx *t, state *s, int *pairs, int npairs)
{
    int i, improved = 0;

    shuffle(&c->rng, pairs, npairs);
    for (i = 0; i < npairs && !c->stop; i++) {
        int a = pairs[i] / c->k, b = pairs[i] % c->k, x[2], y[2], u, v, nc = 0;
        cand cs[4];
        fastest_link(c, s, a, &x[0], &x[1]);
        fastest_link(c, s, b, &y[0], &y[1]);
        if (x[0] == x[1] || y[0] == y[1])
            continue;
        for (u = 0; u < 2; u++)
            for (v = 0; v < 2; v++) {
                int d1 = x[u], d2 = x[1 - u], e1 = y[v], e2 = y[1 - v];
                /* DT-FM Gain((d1, C_a) <-> (e1, C_b)) */
                cs[nc].d = d1;
                cs[nc].e = e1;
                cs[nc].gain = mean_to(c, s, d1, b) -
                              c->wpp[(size_t)d1 * (size_t)c->n + (size_t)d2] +
                              mean_to(c, s, e1, a) -
                              c->wpp[(size_t)e1 * (size_t)c->n + (size_t)e2];
                nc++;
            }
        improved |= try_cands(c, t, s, cs, nc);
    }
    return improved;
}

/* Circular extension: a fastest-link endpoint of a moves to b, one of b
 * to q3 and one of q3 to a (the circular KL of Kang and Moon with the
 * paper's gain choosing each endpoint). */
static int paper_cycles(ctx *c, tx *t, state *s, int tries)
{
    int i, improved = 0, k = c->k;

    if (k < 3)
        return 0;
    for (i = 0; i < tries && !c->stop; i++) {
        int q[3], pick[3], j;
        q[0] = (int)util_pcg32_bounded(&c->rng, (uint32_t)k);
        do
            q[1] = (int)util_pcg32_bounded(&c->rng, (uint32_t)k);
        while (q[1] == q[0]);
        do
            q[2] = (int)util_pcg32_bounded(&c->rng, (uint32_t)k);
        while (q[2] == q[0] || q[2] == q[1]);
        for (j = 0; j < 3; j++) {
            int x, y, to = q[(j + 1) % 3];
            double gx, gy;
            fastest_link(c, s, q[j], &x, &y);
            gx = mean_to(c, s, x, to) - c->wpp[(size_t)x * (size_t)c->n + (size_t)y];
            gy = mean_to(c, s, y, to) - c->wpp[(size_t)x * (size_t)c->n + (size_t)y];
            pick[j] = gx >= gy ? x : y;
        }
        if (pick[0] == pick[1] || pick[1] == pick[2])
            continue;
        /* pick0 -> q1, pick1 -> q2, pick2 -> q0 as two swaps */
        tx_begin(t, s);
        tx_swap(c, t, s, pick[0], pick[1]);
        tx_swap(c, t, s, pick[1], pick[2]);
        improved |= tx_keep_if_better(c, t, s);
    }
    return improved;
}

/* Fastest link among the unlocked devices of group q (ties broken at
 * random); *x = *y = -1 when fewer than two are unlocked. */
static void fastest_unlocked(ctx *c, const state *s, int q, const char *lock,
                             int *x, int *y)
{
    const int *m = s->mem + (size_t)q * (size_t)c->g;
    double best = DBL_MAX;
    uint32_t ties = 0;
    int i, j;

    *x = *y = -1;
    for (i = 0; i < c->g; i++) {
        if (lock[m[i]])
            continue;
        for (j = i + 1; j < c->g; j++) {
            double v;
            if (lock[m[j]])
                continue;
            v = c->wpp[(size_t)m[i] * (size_t)c->n + (size_t)m[j]];
            if (v < best) {
                best = v;
                ties = 1;
                *x = m[i];
                *y = m[j];
            } else if (v == best &&
                       util_pcg32_bounded(&c->rng, ++ties) == 0) {
                *x = m[i];
                *y = m[j];
            }
        }
    }
}

/* One pass of the paper's local search run as a Kernighan-Lin procedure
 * (DT-FM section 3.4): repeatedly take, over all pairs of groups, the
 * swap between endpoints of their fastest unlocked links with the largest
 * Gain, apply it and lock both devices, even when the cost rises; then
 * return to the best prefix of the sequence.  1 = the pass improved. */
static int paper_kl_pass(ctx *c, tx *t, state *s, char *lock, int *seq,
                         int *fx, int *fy)
{
    int k = c->k, n = c->n, steps = 0, best_m = 0, i, a, b, u, v, maxsteps;
    double c0 = s->cost, s0 = s->sur, bc = s->cost, bs = s->sur;

    maxsteps = n / 2;
    memset(lock, 0, (size_t)n);
    while (steps < maxsteps && !c->stop) {
        int bd = -1, be = -1;
        double bg = -DBL_MAX;
        for (a = 0; a < k; a++)
            fastest_unlocked(c, s, a, lock, &fx[a], &fy[a]);
        for (a = 0; a < k; a++) {
            if (fx[a] < 0)
                continue;
            for (b = a + 1; b < k; b++) {
                int xa[2], xb[2];
                if (fx[b] < 0)
                    continue;
                xa[0] = fx[a];
                xa[1] = fy[a];
                xb[0] = fx[b];
                xb[1] = fy[b];
                for (u = 0; u < 2; u++)
                    for (v = 0; v < 2; v++) {
                        int d1 = xa[u], d2 = xa[1 - u], e1 = xb[v], e2 = xb[1 - v];
                        /* DT-FM Gain((d1, C_a) <-> (e1, C_b)) */
                        double gain = mean_to(c, s, d1, b) -
                                      c->wpp[(size_t)d1 * (size_t)n + (size_t)d2] +
                                      mean_to(c, s, e1, a) -
                                      c->wpp[(size_t)e1 * (size_t)n + (size_t)e2];
                        if (gain > bg) {
                            bg = gain;
                            bd = d1;
                            be = e1;
                        }
                    }
            }
        }
        if (bd < 0)
            break;
        tx_begin(t, s);
        tx_swap(c, t, s, bd, be);
        tx_eval(c, t, s, DBL_MAX);
        tx_commit(c, t, s);
        lock[bd] = lock[be] = 1;
        seq[2 * steps] = bd;
        seq[2 * steps + 1] = be;
        steps++;
        if (lex_better(s->cost, s->sur, bc, bs)) {
            bc = s->cost;
            bs = s->sur;
            best_m = steps;
        }
    }
    /* undo the tail after the best prefix */
    for (i = steps - 1; i >= best_m; i--) {
        tx_begin(t, s);
        tx_swap(c, t, s, seq[2 * i], seq[2 * i + 1]);
        tx_eval(c, t, s, DBL_MAX);
        tx_commit(c, t, s);
    }
    return best_m > 0 && lex_better(s->cost, s->sur, c0, s0);
}

static void local_search_paper(ctx *c, tx *t, state *s, int *pairs,
                               int npairs, char *lock, int *seq, int *fx,
                               int *fy)
{
    int pass = 0, limit = c->sp->ls_passes;

    while (!c->stop && (limit <= 0 || pass < limit)) {
        int imp = paper_pairs(c, t, s, pairs, npairs);
        imp |= paper_cycles(c, t, s, c->k * 2);
        if (!imp)
            imp = paper_kl_pass(c, t, s, lock, seq, fx, fy);
        pass++;
        if (!imp)
            break;
    }
}

/* ---- Kernighan-Lin local search (Bui and Moon; DT-FM's baseline) ----- */

/* One KL pass between groups a and b with gain_KL over the affinity
 * 1 / w_dp; applies the best prefix of tentative swaps when its summed
 * gain is positive.  Returns 1 when something moved. */
static int kl_pair(ctx *c, tx *t, state *s, int a, int b, double *D,
                   int *seq, char *locked)
{
    int g = c->g, n = c->n, step, i, j, best_m = 0;
    int *ma = s->mem + (size_t)a * (size_t)g, *mb = s->mem + (size_t)b * (size_t)g;
    int la[256], lb[256];
    double cum = 0.0, best_cum = 0.0;

    if (g > 256)
        return 0;
    memcpy(la, ma, (size_t)g * sizeof *la);
    memcpy(lb, mb, (size_t)g * sizeof *lb);
    for (i = 0; i < 2 * g; i++) {
        int d = i < g ? la[i] : lb[i - g];
        const int *own = i < g ? la : lb, *oth = i < g ? lb : la;
        double ext = 0.0, in = 0.0;
        for (j = 0; j < g; j++) {
            ext += c->aff[(size_t)d * (size_t)n + (size_t)oth[j]];
            if (own[j] != d)
                in += c->aff[(size_t)d * (size_t)n + (size_t)own[j]];
        }
        D[i] = ext - in;
        locked[i] = 0;
    }
    for (step = 0; step < g; step++) {
        int bi = -1, bj = -1;
        double bg = -DBL_MAX;
        for (i = 0; i < g; i++) {
            if (locked[i])
                continue;
            for (j = 0; j < g; j++) {
                double gain;
                if (locked[g + j])
                    continue;
                /* gain_KL = D_d + D_d' - 2 w_{d,d'} */
                gain = D[i] + D[g + j] -
                       2.0 * c->aff[(size_t)la[i] * (size_t)n + (size_t)lb[j]];
                if (gain > bg) {
                    bg = gain;
                    bi = i;
                    bj = j;
                }
            }
        }
        if (bi < 0)
            break;
        locked[bi] = locked[g + bj] = 1;
        seq[2 * step] = la[bi];
        seq[2 * step + 1] = lb[bj];
        cum += bg;
        if (cum > best_cum + 1e-15) {
            best_cum = cum;
            best_m = step + 1;
        }
        for (i = 0; i < g; i++) {
            if (!locked[i])
                D[i] += 2.0 * c->aff[(size_t)la[i] * (size_t)n + (size_t)la[bi]] -
                        2.0 * c->aff[(size_t)la[i] * (size_t)n + (size_t)lb[bj]];
            if (!locked[g + i])
                D[g + i] += 2.0 * c->aff[(size_t)lb[i] * (size_t)n + (size_t)lb[bj]] -
                            2.0 * c->aff[(size_t)lb[i] * (size_t)n + (size_t)la[bi]];
        }
    }
    if (best_m == 0)
        return 0;
    tx_begin(t, s);
    for (i = 0; i < best_m; i++)
        tx_swap(c, t, s, seq[2 * i], seq[2 * i + 1]);
    tx_eval(c, t, s, DBL_MAX);
    tx_commit(c, t, s);
    return 1;
}

static void local_search_kl(ctx *c, tx *t, state *s, int *pairs, int npairs,
                            double *D, int *seq, char *locked)
{
    int pass = 0, limit = c->sp->ls_passes > 0 ? c->sp->ls_passes : 8;

    while (!c->stop && pass++ < limit) {
        int i, moved = 0;
        shuffle(&c->rng, pairs, npairs);
        for (i = 0; i < npairs && !c->stop; i++)
            moved |= kl_pair(c, t, s, pairs[i] / c->k, pairs[i] % c->k, D, seq,
                             locked);
        if (!moved)
            break;
    }
}

/* ---- hybrid genetic algorithm (DT-FM section 3.4) -------------------- */

typedef struct indiv {
    int *grp;
    double cost;
    uint64_t key;            /* order-independent hash of the partition */
} indiv;

static uint64_t part_key(ctx *c, const state *s)
{
    uint64_t key = 0;
    int q;

    for (q = 0; q < c->k; q++)
        key += mix64(s->h[q]);
    return key;
}

/* Offspring of p1 and p2 (Kang and Moon): p2's groups relabelled to
 * overlap p1's most, each device takes either parent's group, then
 * surplus devices move to groups that lack devices, back to their p1
 * group when it has room. */
static void crossover(ctx *c, const int *p1, const int *p2, int *child,
                      int *map2, int *overlap, int *size, int *order)
{
    int n = c->n, k = c->k, g = c->g, i, a, b, r;

    memset(overlap, 0, (size_t)k * (size_t)k * sizeof *overlap);
    for (i = 0; i < n; i++)
        overlap[p1[i] * k + p2[i]]++;
    for (b = 0; b < k; b++)
        map2[b] = -1;
    for (r = 0; r < k; r++) {
        int ba = -1, bb = -1, bv = -1;
        for (a = 0; a < k; a++) {
            int used = 0;
            for (b = 0; b < k; b++)
                if (map2[b] == a)
                    used = 1;
            if (used)
                continue;
            for (b = 0; b < k; b++)
                if (map2[b] < 0 && overlap[a * k + b] > bv) {
                    bv = overlap[a * k + b];
                    ba = a;
                    bb = b;
                }
        }
        map2[bb] = ba;
    }
    for (a = 0; a < k; a++)
        size[a] = 0;
    for (i = 0; i < n; i++) {
        child[i] = (util_pcg32_next(&c->rng) & 1u) ? p1[i] : map2[p2[i]];
        size[child[i]]++;
    }
    for (i = 0; i < n; i++)
        order[i] = i;
    shuffle(&c->rng, order, n);
    for (i = 0; i < n; i++) {
        int d = order[i], q = child[d], to = -1;
        if (size[q] <= g)
            continue;
        if (size[p1[d]] < g)
            to = p1[d];
        else if (size[map2[p2[d]]] < g)
            to = map2[p2[d]];
        else {
            int start = (int)util_pcg32_bounded(&c->rng, (uint32_t)k);
            for (a = 0; a < k; a++)
                if (size[(start + a) % k] < g) {
                    to = (start + a) % k;
                    break;
                }
        }
        size[q]--;
        size[to]++;
        child[d] = to;
    }
}

/* Swap the groups of m random pairs of devices. */
static void mutate(ctx *c, int *grp, int m)
{
    int i;

    for (i = 0; i < m && c->k > 1; i++) {
        int d = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n), e, t;
        do
            e = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n);
        while (grp[e] == grp[d]);
        t = grp[d];
        grp[d] = grp[e];
        grp[e] = t;
    }
}

typedef struct work {
    state s;
    tx t;
    int *pairs;
    int npairs;
    double *D;
    int *seq;
    char *locked;
    int *map2, *overlap, *size, *order;
    char *lock;              /* n */
    int *kseq;               /* n */
    int *fx, *fy;            /* k */
} work;

/* Full pair-swap descent (first improvement, with the tie-break): the
 * polish given to offspring that reach the best cost so far. */
static void polish(ctx *c, tx *t, state *s)
{
    int improved = 1, g = c->g, k = c->k, a, b, i, j;

    while (improved && !c->stop) {
        improved = 0;
        for (a = 0; a < k && !c->stop; a++)
            for (b = a + 1; b < k && !c->stop; b++)
                for (i = 0; i < g && !c->stop; i++)
                    for (j = 0; j < g && !c->stop; j++) {
                        tx_begin(t, s);
                        tx_swap(c, t, s, s->mem[a * g + i], s->mem[b * g + j]);
                        improved |= tx_keep_if_better(c, t, s);
                    }
    }
}

static void local_search(ctx *c, work *w, int kl)
{
    if (kl)
        local_search_kl(c, &w->t, &w->s, w->pairs, w->npairs, w->D, w->seq,
                        w->locked);
    else
        local_search_paper(c, &w->t, &w->s, w->pairs, w->npairs, w->lock,
                           w->kseq, w->fx, w->fy);
}

static int run_ga(ctx *c, work *w, int kl, util_error *err)
{
    int P = c->sp->population, i, j, filled = 0, rc = UTIL_OK;
    indiv *pop = NULL;
    long since_best = 0;
    double last_best;

    if (P < 2)
        P = 2;
    pop = calloc((size_t)P, sizeof *pop);
    if (pop == NULL)
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    for (i = 0; i < P; i++) {
        pop[i].grp = malloc((size_t)c->n * sizeof *pop[i].grp);
        if (pop[i].grp == NULL) {
            rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
            goto done;
        }
    }
    c->phase = kl ? "kl-init" : "ga-init";
    for (i = 0, j = 1; i < P && !(c->stop && i > 0); i++) {
        int seeded = 0;
        /* the first members: interleaved seeds, r = d_pp, ..., 1 (GA only) */
        while (!kl && j <= c->k && !seeded && i < P / 2) {
            seeded = interleaved_partition(c, c->k / j, w->s.grp, w->order,
                                           w->lock);
            j++;
        }
        if (!seeded)
            random_partition(c, w->s.grp);
        state_build(c, &w->s);
        local_search(c, w, kl);
        memcpy(pop[i].grp, w->s.grp, (size_t)c->n * sizeof *w->s.grp);
        pop[i].cost = w->s.cost;
        pop[i].key = part_key(c, &w->s);
        filled++;
        c->gens++;
    }
    c->phase = kl ? "kl" : "ga";
    last_best = c->best;
    while (!c->stop && filled >= 2) {
        int a = (int)util_pcg32_bounded(&c->rng, (uint32_t)filled), b, worst = 0;
        int dup = 0;
        do
            b = (int)util_pcg32_bounded(&c->rng, (uint32_t)filled);
        while (b == a);
        crossover(c, pop[a].grp, pop[b].grp, w->s.grp, w->map2, w->overlap,
                  w->size, w->order);
        /* mutation: a few random swaps in every other offspring */
        if (util_pcg32_next(&c->rng) & 1u)
            mutate(c, w->s.grp, 1 + (int)util_pcg32_bounded(
                                       &c->rng, (uint32_t)(c->n / 8 + 1)));
        state_build(c, &w->s);
        local_search(c, w, kl);
        if (!kl && !better(c->best, w->s.cost))
            polish(c, &w->t, &w->s);
        c->gens++;
        {
            uint64_t key = part_key(c, &w->s);
            for (j = 0; j < filled; j++) {
                if (pop[j].key == key)
                    dup = 1;
                if (pop[j].cost > pop[worst].cost)
                    worst = j;
            }
            /* the offspring replaces the worst member when it is better */
            if (!dup && better(w->s.cost, pop[worst].cost)) {
                memcpy(pop[worst].grp, w->s.grp, (size_t)c->n * sizeof *w->s.grp);
                pop[worst].cost = w->s.cost;
                pop[worst].key = key;
            }
        }
        if (better(c->best, last_best)) {
            last_best = c->best;
            since_best = 0;
        } else if (c->stall > 0 && ++since_best >= c->stall) {
            break;
        }
    }
done:
    for (i = 0; i < P; i++)
        free(pop[i].grp);
    free(pop);
    return rc;
}

/* ---- simulated annealing --------------------------------------------- */

static void run_sa(ctx *c, work *w)
{
    /* cycles of len steps (50 n d_pp + 2000); with an evaluation limit,
     * four cycles in 90% of it and the rest for a final descent */
    long len = c->sp->max_evals > 0 ? c->sp->max_evals * 9 / 40
                                    : 50L * c->n * c->k + 2000;
    long step, since = 0, cycle = 0;
    double t0 = 0.0, worse = 0.0;
    int nworse = 0, i;
    state *s = &w->s;

    c->phase = "sa";
    random_partition(c, s->grp);
    state_build(c, s);
    /* initial temperature: an uphill move ten times the average one is
     * accepted with p = 0.5 */
    for (i = 0; i < 64 && !c->stop; i++) {
        int d = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n), e;
        double before = s->cost, v;
        do
            e = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n);
        while (s->grp[e] == s->grp[d]);
        tx_begin(&w->t, s);
        tx_swap(c, &w->t, s, d, e);
        v = tx_eval(c, &w->t, s, DBL_MAX);
        if (v > before) {
            worse += v - before;
            nworse++;
        }
        tx_rollback(c, &w->t, s);
    }
    t0 = nworse ? 10.0 * (worse / nworse) / log(2.0) : 1e-3 * (s->cost + 1e-9);
    while (!c->stop) {
        double temp;
        int improved = 0;
        for (step = 0; step < len && !c->stop; step++) {
            int d = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n), e;
            double before = s->cost, v, thr;
            /* geometric cooling from t0 to t0 * 1e-3 over one cycle */
            temp = t0 * pow(1e-3, (double)step / (double)len);
            do
                e = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n);
            while (s->grp[e] == s->grp[d]);
            /* Metropolis: accept when v < before + thr, thr = -T ln u */
            thr = -temp * log(1.0 - util_pcg32_double(&c->rng));
            tx_begin(&w->t, s);
            tx_swap(c, &w->t, s, d, e);
            v = tx_eval(c, &w->t, s, before + thr);
            if (w->t.edges_done && v < before + thr) {
                double old_best = c->best;
                tx_commit(c, &w->t, s);
                if (better(c->best, old_best))
                    improved = 1;
            } else {
                tx_rollback(c, &w->t, s);
            }
            c->gens++;
        }
        /* reheat: odd cycles from the best schedule, even ones from a
         * fresh random partition */
        if (++cycle & 1)
            memcpy(s->grp, c->best_grp, (size_t)c->n * sizeof *s->grp);
        else
            random_partition(c, s->grp);
        state_build(c, s);
        if (improved)
            since = 0;
        else if (c->stall > 0 && ++since >= c->stall)
            break;
        if (c->sp->max_evals > 0 && c->evals >= c->sp->max_evals * 9 / 10)
            break;
    }
    polish(c, &w->t, s);
}

/* ---- random assignment and exhaustive search ------------------------- */

static void run_random(ctx *c, work *w)
{
    long since = 0;
    double last = DBL_MAX;

    c->phase = "random";
    while (!c->stop) {
        random_partition(c, w->s.grp);
        state_build(c, &w->s);
        c->gens++;
        if (better(c->best, last)) {
            last = c->best;
            since = 0;
        } else if (c->stall > 0 && ++since >= c->stall) {
            break;
        }
        if (c->sp->max_evals <= 0 && c->sp->seconds <= 0 && c->gens >= 5000)
            break; /* the public code's baseline: 5000 samples */
    }
}

/* Assign device i onwards; groups are opened in order of their smallest
 * device, so each unordered partition is visited once. */
static void exact_rec(ctx *c, work *w, int i, int opened, int *fill)
{
    int q;

    if (c->stop)
        return;
    if (i == c->n) {
        state_build(c, &w->s);
        c->gens++;
        return;
    }
    for (q = 0; q < c->k && q <= opened; q++) {
        if (fill[q] >= c->g)
            continue;
        /* remaining devices must be able to fill the groups still open */
        w->s.grp[i] = q;
        fill[q]++;
        exact_rec(c, w, i + 1, q == opened ? opened + 1 : opened, fill);
        fill[q]--;
    }
}

/* ---- driver ---------------------------------------------------------- */

static void work_free(work *w)
{
    state_free(&w->s);
    tx_free(&w->t);
    free(w->pairs);
    free(w->D);
    free(w->seq);
    free(w->locked);
    free(w->map2);
    free(w->overlap);
    free(w->size);
    free(w->order);
    free(w->lock);
    free(w->kseq);
    free(w->fx);
    free(w->fy);
}

static int work_alloc(ctx *c, work *w)
{
    int k = c->k, g = c->g, n = c->n, a, b;

    memset(w, 0, sizeof *w);
    if (!state_alloc(&w->s, n, k, g) || !tx_alloc(&w->t, k, g))
        return 0;
    w->pairs = malloc((size_t)k * (size_t)k * sizeof *w->pairs);
    w->D = malloc((size_t)(2 * g) * sizeof *w->D);
    w->seq = malloc((size_t)(2 * g) * sizeof *w->seq);
    w->locked = malloc((size_t)(2 * g));
    w->map2 = malloc((size_t)k * sizeof *w->map2);
    w->overlap = malloc((size_t)k * (size_t)k * sizeof *w->overlap);
    w->size = malloc((size_t)k * sizeof *w->size);
    w->order = malloc((size_t)n * sizeof *w->order);
    w->lock = malloc((size_t)n);
    w->kseq = malloc((size_t)(n + 2) * sizeof *w->kseq);
    w->fx = malloc((size_t)k * sizeof *w->fx);
    w->fy = malloc((size_t)k * sizeof *w->fy);
    if (!w->pairs || !w->D || !w->seq || !w->locked || !w->map2 ||
        !w->overlap || !w->size || !w->order || !w->lock || !w->kseq ||
        !w->fx || !w->fy)
        return 0;
    w->npairs = 0;
    for (a = 0; a < k; a++)
        for (b = a + 1; b < k; b++)
            w->pairs[w->npairs++] = a * k + b;
    return 1;
}

static void ctx_free(ctx *c)
{
    free(c->wdp);
    free(c->wpp);
    free(c->aff);
    free(c->zob);
    free(c->sub);
    free(c->hk);
    free(c->tsp_order);
    free(c->mstkey);
    free(c->cache);
    free(c->best_grp);
}

int dtfm_search(const dtfm_problem *p, const dtfm_search_params *sp,
                dtfm_search_result *out, util_error *err)
{
    ctx c;
    work w;
    dtfm_result res;
    int rc, i, n = p->n, k = p->d_pp, g = p->d_dp;
    size_t nn = (size_t)n * (size_t)n;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    memset(&w, 0, sizeof w);
    memset(&res, 0, sizeof res);
    if ((rc = dtfm_problem_check(p, err)) != UTIL_OK)
        return rc;
    if (sp->method < 0 || sp->method >= DTFM_NMETHODS)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "unknown search method %d", sp->method);
    if (sp->method == DTFM_EXACT && n > DTFM_EXACT_MAX)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "the exact search handles at most %d devices, "
                              "got %d", DTFM_EXACT_MAX, n);
    c.p = p;
    c.sp = sp;
    c.n = n;
    c.k = k;
    c.g = g;
    c.comp = p->compute;
    c.best = DBL_MAX;
    c.checkpoint_cost = -1.0;
    c.stall = sp->stall;
    if (c.stall <= 0 && sp->max_evals <= 0 && sp->seconds <= 0)
        c.stall = sp->method == DTFM_SA ? 3 : 200; /* some limit */
    c.t0 = now_s();
    util_pcg32_seed(&c.rng, sp->seed, 0x6474666dULL /* "dtfm" */);
    c.wdp = malloc(nn * sizeof *c.wdp);
    c.wpp = malloc(nn * sizeof *c.wpp);
    c.aff = malloc(nn * sizeof *c.aff);
    c.zob = malloc((size_t)n * sizeof *c.zob);
    c.sub = malloc((size_t)g * (size_t)g * sizeof *c.sub);
    c.tsp_order = malloc((size_t)(k > n ? k : n) * sizeof *c.tsp_order);
    c.mstkey = malloc((size_t)k * sizeof *c.mstkey);
    c.cache = malloc(((size_t)1 << CACHE_BITS) * sizeof *c.cache);
    c.best_grp = malloc((size_t)n * sizeof *c.best_grp);
    if (k <= HK_INNER_MAX)
        c.hk = malloc(((size_t)1 << k) * (size_t)k * sizeof *c.hk);
    out->group_of = malloc((size_t)n * sizeof *out->group_of);
    if (!c.wdp || !c.wpp || !c.aff || !c.zob || !c.sub || !c.tsp_order || !c.mstkey ||
        !c.cache || !c.best_grp || (k <= HK_INNER_MAX && !c.hk) ||
        !out->group_of || !work_alloc(&c, &w)) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    dtfm_weights(p, c.wdp, c.wpp);
    for (i = 0; (size_t)i < nn; i++)
        c.aff[i] = c.wdp[i] > 0 ? 1.0 / c.wdp[i] : 0.0;
    for (i = 0; i < n; i++) {
        uint64_t hi = util_pcg32_next(&c.rng), lo = util_pcg32_next(&c.rng);
        c.zob[i] = hi << 32 | lo;
    }
    for (i = 0; i < (1 << CACHE_BITS); i++) {
        c.cache[i].ka = c.cache[i].kb = 0;
        c.cache[i].v = -1.0;
    }
    switch (sp->method) {
    case DTFM_GA:
        rc = run_ga(&c, &w, 0, err);
        break;
    case DTFM_KL:
        rc = run_ga(&c, &w, 1, err);
        break;
    case DTFM_SA:
        run_sa(&c, &w);
        break;
    case DTFM_RANDOM:
        run_random(&c, &w);
        break;
    default: {
        int *fill = w.size;
        c.phase = "exact";
        for (i = 0; i < k; i++)
            fill[i] = 0;
        exact_rec(&c, &w, 0, 0, fill);
        break;
    }
    }
    if (rc != UTIL_OK)
        goto done;
    if (c.best == DBL_MAX) {
        rc = util_error_set(err, UTIL_EINTERNAL, "", "",
                            "the search evaluated no schedule");
        goto done;
    }
    rc = dtfm_evaluate(p, c.best_grp, &res, err);
    if (rc != UTIL_OK)
        goto done;
    /* report groups numbered as dtfm_evaluate numbers them */
    for (i = 0; i < n; i++) {
        int q, j;
        for (q = 0; q < k; q++)
            for (j = 0; j < g; j++)
                if (res.members[q * g + j] == i)
                    out->group_of[i] = q;
    }
    out->n = n;
    out->cost_s = res.total_s;
    out->evaluated = c.evals;
    out->generations = c.gens;
    out->elapsed_s = now_s() - c.t0;
    out->best_at_s = c.best_at;
    if (!c.checkpoint_done && sp->checkpoint_s > 0)
        c.checkpoint_cost = out->elapsed_s <= sp->checkpoint_s ? res.total_s : c.best;
    out->checkpoint_cost_s = c.checkpoint_cost;
    out->timed_out = c.timed_out;
    report(&c, 1);
    rc = c.timed_out ? UTIL_ETIMEOUT : UTIL_OK;
done:
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT)
        dtfm_search_result_free(out);
    dtfm_result_free(&res);
    work_free(&w);
    ctx_free(&c);
    return rc;
}
