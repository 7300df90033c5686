/* decentral/state.c: the incremental evaluator all DT-FM searchers share.
 * A partition keeps each device's eq. 2 row sum inside its group, each
 * group's DataP-Cost, and the coarsened graph (eq. 3 for every pair of
 * groups, memoised by the two groups' member sets); a move touches the
 * rows of the groups it changes and re-solves the open-loop TSP (eq. 4).
 * Also the budget (evaluations, time) and progress reports. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* ---- partition state ------------------------------------------------- */

double dtfm_clock_s(void)
{
    return dtfm_now_s();
}

double dtfm_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int dtfm_state_alloc(dtfm_state *s, int n, int k, int g)
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

void dtfm_state_free(dtfm_state *s)
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

int dtfm_tx_alloc(dtfm_tx *t, int k, int g)
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

void dtfm_tx_free(dtfm_tx *t)
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

void dtfm_report(dtfm_ctx *c, int force)
{
    double t = dtfm_now_s() - c->t0;
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
static void tick(dtfm_ctx *c)
{
    c->evals++;
    if (c->sp->max_evals > 0 && c->evals >= c->sp->max_evals)
        c->stop = 1;
    /* the clock every evaluation (a vDSO call, far cheaper than one
     * evaluation), so that large instances stop within one of their end */
    if (c->deadline > 0 &&
        dtfm_now_s() + DTFM_FINAL_EVALS * c->build_s >= c->deadline) {
        c->stop = 1;
        c->timed_out = 1;
    }
    if ((c->evals & 15) == 0) {
        double t = dtfm_now_s() - c->t0;
        if (!c->checkpoint_done && c->sp->checkpoint_s > 0 &&
            t >= c->sp->checkpoint_s) {
            c->checkpoint_done = 1;
            c->checkpoint_cost = c->best < DBL_MAX ? c->best : -1.0;
        }
        dtfm_report(c, 0);
    }
}

int dtfm_out_of_time(dtfm_ctx *c)
{
    if (c->deadline > 0 && !c->stop &&
        dtfm_now_s() + DTFM_FINAL_EVALS * c->build_s >= c->deadline) {
        c->stop = 1;
        c->timed_out = 1;
    }
    return c->stop;
}

static void note_best(dtfm_ctx *c, const dtfm_state *s)
{
    if (better(s->cost, c->best)) {
        c->best = s->cost;
        memcpy(c->best_grp, s->grp, (size_t)c->n * sizeof *s->grp);
        c->best_at = dtfm_now_s() - c->t0;
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
static double edge(dtfm_ctx *c, const dtfm_state *s, int a, int b,
                   double *refined)
{
    uint64_t ka = s->h[a], kb = s->h[b], t;
    dtfm_cache_slot *slot;
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
                     (((uint64_t)1 << DTFM_CACHE_BITS) - 1)];
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
static double mst_len(dtfm_ctx *c, const double *E)
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
static double nn_bound(dtfm_ctx *c, const double *E)
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
static double tsp_len(dtfm_ctx *c, const double *E, double bound)
{
    int k = c->k, j, x;
    uint32_t mask, full, m, rest;
    double best = DBL_MAX, len, ub, *hk = c->hk;

    if (k == 1)
        return 0.0;
    if (k > DTFM_HK_INNER_MAX) {
        if (dtfm_tsp_heuristic(E, k, c->tsp_order, &len) != UTIL_OK)
            return DBL_MAX;
        return len;
    }
    ub = nn_bound(c, E);
    if (bound < ub)
        ub = bound; /* prune above min(bound, a known path) */
    ub += DTFM_TOL * (fabs(ub) > 1.0 ? fabs(ub) : 1.0);
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

static void group_stats(dtfm_ctx *c, dtfm_state *s, int q)
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

static double lower_part(dtfm_ctx *c, const dtfm_state *s)
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
static double surrogate(dtfm_ctx *c, const dtfm_state *s)
{
    return mst_len(c, s->R);
}

/* Rebuild everything from s->grp (which must be balanced). */
void dtfm_state_build(dtfm_ctx *c, dtfm_state *s)
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

void dtfm_tx_begin(dtfm_tx *t, const dtfm_state *s)
{
    t->ntouched = 0;
    t->stsp = s->tsp;
    t->scost = s->cost;
    t->ssur = s->sur;
    t->edges_done = 1;
}

static void tx_touch(dtfm_ctx *c, dtfm_tx *t, const dtfm_state *s, int q)
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
void dtfm_tx_swap(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int d, int e)
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
 * only good for dtfm_tx_rollback (or dtfm_tx_commit, which completes
 * it). */
double dtfm_tx_eval(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, double bound)
{
    int k = c->k, i, q, x;
    double lb, slack = bound + DTFM_TOL * (fabs(bound) > 1.0 ? fabs(bound) : 1.0);

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

static void tx_clear(dtfm_tx *t)
{
    int i;

    for (i = 0; i < t->ntouched; i++)
        t->is_touched[t->touched[i]] = 0;
    t->ntouched = 0;
}

void dtfm_tx_commit(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s)
{
    if (!t->edges_done)
        dtfm_tx_eval(c, t, s, DBL_MAX);
    tx_clear(t);
    note_best(c, s);
}

void dtfm_tx_rollback(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s)
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
int dtfm_tx_keep_if_better(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s)
{
    double c0 = t->scost, s0 = t->ssur, v = dtfm_tx_eval(c, t, s, c0);

    if (t->edges_done && lex_better(v, s->sur, c0, s0)) {
        dtfm_tx_commit(c, t, s);
        return 1;
    }
    dtfm_tx_rollback(c, t, s);
    return 0;
}
