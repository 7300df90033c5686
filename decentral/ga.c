/* decentral/ga.c: the hybrid genetic algorithm of DT-FM (Yuan et al.,
 * NeurIPS'22, section 3.4): structured and random initial population,
 * crossover and mutation, and the paper's local search with its circular
 * extension (or Kernighan-Lin local search, decentral/baselines.c). */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Lean mode, above GA_LS_DEVICES devices (an evaluation costs far more:
 * eq. 3 is a g x g bottleneck matching per coarsened edge) or when the
 * budget buys fewer than GA_LEAN_MEMBERS Kernighan-Lin members (about
 * GA_KL_PASSES evaluations per pair of groups each): every member gets
 * Kernighan-Lin, initial members nothing more, offspring the paper's
 * local search only when they reach the best cost so far or are one in
 * GA_LS_EVERY, and none the full pair-swap polish; so the population
 * fills about as fast as the KL searcher's while the best members are
 * refined. */
#define GA_LS_DEVICES 256
#define GA_LEAN_MEMBERS 16
#define GA_KL_PASSES 4
#define GA_LS_EVERY 4

static int large(const dtfm_ctx *c)
{
    return c->lean;
}

/* Set c->lean: the evaluations left in the budget (the limit, or the
 * time left over one swap's evaluation, about 4 / d_pp of a full one,
 * which touches 2 (d_pp - 1) of the d_pp (d_pp - 1) / 2 coarse edges). */
static void choose_lean(dtfm_ctx *c, int npairs)
{
    double left = -1.0, member = (double)npairs * GA_KL_PASSES;

    if (c->sp->max_evals > 0)
        left = (double)(c->sp->max_evals - c->evals);
    if (c->deadline > 0 && c->build_s > 0) {
        double t = (c->deadline - dtfm_now_s()) / (c->build_s * 4.0 / c->k);
        if (left < 0 || t < left)
            left = t;
    }
    c->lean = c->n > GA_LS_DEVICES ||
              (left >= 0 && left < GA_LEAN_MEMBERS * member);
}

/* ---- initial population ---------------------------------------------- */

/* Structured starting points (our addition to the paper's random
 * population): devices in nearest-neighbour order over the pipeline
 * weights (fast-linked devices end up adjacent), then within each block
 * of r * g consecutive devices dealt round-robin over r groups.  r = 1
 * keeps fast clusters together (cheap eq. 2); r = d_pp spreads every
 * cluster over all groups (cheap eq. 3 matchings).  Returns 0 when r
 * does not divide d_pp. */
static int interleaved_partition(dtfm_ctx *c, int r, int *grp, int *order,
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

/* Greedy clusters (our addition): group by group, start from the first
 * unassigned device and add the unassigned device that raises the
 * group's eq. 2 row sums least (smallest sum of w_dp to the members so
 * far), so that devices joined by fast links share a group. */
static void greedy_partition(dtfm_ctx *c, int *grp, double *sum)
{
    int n = c->n, g = c->g, q, i, m, d;

    for (i = 0; i < n; i++)
        grp[i] = -1;
    for (q = 0; q < c->k; q++) {
        for (d = 0; d < n && grp[d] >= 0; d++)
            ;
        grp[d] = q;
        for (i = 0; i < n; i++)
            sum[i] = c->wdp[(size_t)d * (size_t)n + (size_t)i];
        for (m = 1; m < g; m++) {
            int best = -1;
            for (i = 0; i < n; i++)
                if (grp[i] < 0 && (best < 0 || sum[i] < sum[best]))
                    best = i;
            grp[best] = q;
            for (i = 0; i < n; i++)
                sum[i] += c->wdp[(size_t)best * (size_t)n + (size_t)i];
        }
    }
}

/* ---- the paper's local search (DT-FM section 3.4) -------------------- */

/* Fastest link (smallest w_pp) inside group q: devices *x, *y. */
static void fastest_link(dtfm_ctx *c, const dtfm_state *s, int q, int *x,
                         int *y)
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
static double mean_to(dtfm_ctx *c, const dtfm_state *s, int d, int q)
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
static int try_cands(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, cand *cs, int nc)
{
    int i;

    qsort(cs, (size_t)nc, sizeof *cs, cand_cmp);
    for (i = 0; i < nc && !c->stop; i++) {
        dtfm_tx_begin(t, s);
        dtfm_tx_swap(c, t, s, cs[i].d, cs[i].e);
        if (dtfm_tx_keep_if_better(c, t, s))
            return 1;
    }
    return 0;
}

/* One pass of pair moves: for each pair of groups the four swaps between
 * the endpoints of their fastest links, ordered by the paper's Gain. */
static int paper_pairs(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int *pairs,
                       int npairs)
{
    int i, improved = 0;

    dtfm_shuffle(&c->rng, pairs, npairs);
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
static int paper_cycles(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int tries)
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
        dtfm_tx_begin(t, s);
        dtfm_tx_swap(c, t, s, pick[0], pick[1]);
        dtfm_tx_swap(c, t, s, pick[1], pick[2]);
        improved |= dtfm_tx_keep_if_better(c, t, s);
    }
    return improved;
}

/* Fastest link among the unlocked devices of group q (ties broken at
 * random); *x = *y = -1 when fewer than two are unlocked. */
static void fastest_unlocked(dtfm_ctx *c, const dtfm_state *s, int q,
                             const char *lock, int *x, int *y)
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
static int paper_kl_pass(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, char *lock,
                         int *seq, int *fx, int *fy, int *save)
{
    int k = c->k, n = c->n, steps = 0, best_m = 0, i, a, b, u, v, maxsteps;
    double c0 = s->cost, s0 = s->sur, bc = s->cost, bs = s->sur;

    maxsteps = n / 2;
    memset(lock, 0, (size_t)n);
    memcpy(save, s->grp, (size_t)n * sizeof *save);
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
        dtfm_tx_begin(t, s);
        dtfm_tx_swap(c, t, s, bd, be);
        dtfm_tx_eval(c, t, s, DBL_MAX);
        dtfm_tx_commit(c, t, s);
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
    /* undo the tail after the best prefix: swap back one by one, or, when
     * that takes more evaluations than one rebuild is worth, replay the
     * prefix on the saved partition and rebuild */
    if (steps - best_m > 2 * k) {
        for (i = 0; i < best_m; i++) {
            int d = seq[2 * i], e = seq[2 * i + 1], q = save[d];
            save[d] = save[e];
            save[e] = q;
        }
        memcpy(s->grp, save, (size_t)n * sizeof *save);
        dtfm_state_build(c, s);
        steps = best_m;
    }
    for (i = steps - 1; i >= best_m; i--) {
        dtfm_tx_begin(t, s);
        dtfm_tx_swap(c, t, s, seq[2 * i], seq[2 * i + 1]);
        dtfm_tx_eval(c, t, s, DBL_MAX);
        dtfm_tx_commit(c, t, s);
    }
    return best_m > 0 && lex_better(s->cost, s->sur, c0, s0);
}

static void local_search_paper(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s,
                               int *pairs, int npairs, char *lock, int *seq,
                               int *fx, int *fy, int *save, int limit)
{
    int pass = 0;

    while (!c->stop && (limit <= 0 || pass < limit)) {
        int imp = paper_pairs(c, t, s, pairs, npairs);
        imp |= paper_cycles(c, t, s, c->k * 2);
        if (!imp)
            imp = paper_kl_pass(c, t, s, lock, seq, fx, fy, save);
        pass++;
        if (!imp)
            break;
    }
}

/* ---- hybrid genetic algorithm (DT-FM section 3.4) -------------------- */

#define GA_RESTART 40    /* offspring without a new best before a half restart */
#define GA_INIT_PASSES 2 /* paper local-search passes for initial members */

typedef struct indiv {
    int *grp;
    double cost;
    uint64_t key;            /* order-independent hash of the partition */
} indiv;

static uint64_t part_key(dtfm_ctx *c, const dtfm_state *s)
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
static void crossover(dtfm_ctx *c, const int *p1, const int *p2, int *child,
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
    dtfm_shuffle(&c->rng, order, n);
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
static void mutate(dtfm_ctx *c, int *grp, int m)
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

/* Kernighan-Lin moves by the affinity gain, so its last state can cost
 * more than one it passed: when it passed a new best, return there
 * (the search keeps that best anyway once the budget is spent). */
static void back_to_best(dtfm_ctx *c, dtfm_state *s, double before)
{
    if (!c->stop && better(c->best, before) && better(c->best, s->cost)) {
        memcpy(s->grp, c->best_grp, (size_t)c->n * sizeof *s->grp);
        dtfm_state_build(c, s);
    }
}

/* A random member with Kernighan-Lin as the KL searcher makes its
 * initial members: its random stream *krng and pair order kpairs, which
 * advance here and nowhere else. */
static void kl_stream_member(dtfm_ctx *c, dtfm_work *w, util_pcg32 *krng,
                             int *kpairs)
{
    util_pcg32 keep = c->rng;
    int *own = w->pairs;
    double before = c->best;

    c->rng = *krng;
    w->pairs = kpairs;
    dtfm_random_partition(c, w->s.grp);
    dtfm_state_build(c, &w->s);
    dtfm_local_search_kl(c, &w->t, &w->s, w->pairs, w->npairs, w->D, w->seq,
                         w->locked);
    back_to_best(c, &w->s, before);
    *krng = c->rng;
    c->rng = keep;
    w->pairs = own;
}

/* Is the paper's local search due for a member after Kernighan-Lin? */
static int paper_due(dtfm_ctx *c, const dtfm_state *s, int init)
{
    if (!large(c))
        return 1;
    if (init)
        return 0;
    return !better(c->best, s->cost) || c->gens % GA_LS_EVERY == 0;
}

/* Local search of an offspring: Kernighan-Lin for the KL baseline; for
 * the GA the paper's, preceded by Kernighan-Lin when with_kl (the random
 * half of the initial population: the affinity pulls fast-linked devices
 * together, which the paper's moves, built around each group's fastest
 * link, cannot do from a random start). */
static void local_search(dtfm_ctx *c, dtfm_work *w, int kl, int with_kl, int init)
{
    int limit = c->sp->ls_passes;
    double before = c->best;

    /* initial members: a couple of passes, so that on large instances
     * the population fills before the budget goes on one member */
    if (init && limit <= 0)
        limit = GA_INIT_PASSES;
    if (kl || with_kl)
        dtfm_local_search_kl(c, &w->t, &w->s, w->pairs, w->npairs, w->D,
                             w->seq, w->locked);
    if (!kl && with_kl)
        back_to_best(c, &w->s, before);
    if (!kl && paper_due(c, &w->s, init))
        local_search_paper(c, &w->t, &w->s, w->pairs, w->npairs, w->lock,
                           w->kseq, w->fx, w->fy, w->order, limit);
}

static int cmp_indiv(const void *pa, const void *pb)
{
    const indiv *a = pa, *b = pb;

    return (a->cost > b->cost) - (a->cost < b->cost);
}

/* Replace the worse half of the population (sorted by cost, best first)
 * by random members after local search, every other one with
 * Kernighan-Lin first. */
static void restart_half(dtfm_ctx *c, dtfm_work *w, indiv *pop, int filled, int kl)
{
    int i;

    qsort(pop, (size_t)filled, sizeof *pop, cmp_indiv);
    for (i = filled / 2; i < filled && !c->stop; i++) {
        dtfm_random_partition(c, w->s.grp);
        dtfm_state_build(c, &w->s);
        local_search(c, w, kl, large(c) || i % 2, 0);
        if (!kl && !large(c))
            dtfm_polish(c, &w->t, &w->s);
        memcpy(pop[i].grp, w->s.grp, (size_t)c->n * sizeof *w->s.grp);
        pop[i].cost = w->s.cost;
        pop[i].key = part_key(c, &w->s);
        c->gens++;
    }
}

int dtfm_run_ga(dtfm_ctx *c, dtfm_work *w, int kl, util_error *err)
{
    int P = c->sp->population, i, j, filled = 0, rc = UTIL_OK;
    indiv *pop = NULL;
    long since_best = 0;
    double last_best;
    util_pcg32 kl_rng = c->rng; /* the KL searcher's stream at its start */
    int *kl_pairs = NULL;       /* the KL searcher's pair order */

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
    choose_lean(c, w->npairs);
    kl_pairs = malloc((size_t)(w->npairs > 0 ? w->npairs : 1) * sizeof *kl_pairs);
    if (kl_pairs == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    memcpy(kl_pairs, w->pairs, (size_t)w->npairs * sizeof *kl_pairs);
    /* lean mode: the GA's own moves on a stream of their own, so that the
     * random members are the KL searcher's initial members, in order */
    if (!kl && c->lean)
        util_pcg32_seed(&c->rng, c->sp->seed, 0x67612d6f776eULL /* "ga-own" */);
    for (i = 0, j = 1; i < P && !(c->stop && i > 0); i++) {
        int seeded = 0;
        /* the greedy clusters first, then a Kernighan-Lin local optimum
         * from the random partition the KL searcher starts from (its
         * random stream, saved at the start: the KL searcher's first
         * member), then random members
         * with Kernighan-Lin first alternating with the interleaved
         * seeds, r = d_pp, ..., 1 (GA only) */
        if (!kl && i == 0 && w->gsum) {
            greedy_partition(c, w->s.grp, w->gsum);
            seeded = 1;
        }
        if (!kl && i == 1) {
            kl_stream_member(c, w, &kl_rng, kl_pairs);
            seeded = 2;
        }
        while (!kl && j <= c->k && !seeded && i % 2 == 1) {
            seeded = interleaved_partition(c, c->k / j, w->s.grp, w->order,
                                           w->lock);
            j++;
        }
        if (!kl && !seeded && c->lean) {
            kl_stream_member(c, w, &kl_rng, kl_pairs);
            seeded = 2;
        }
        if (!seeded)
            dtfm_random_partition(c, w->s.grp);
        if (seeded != 2)
            dtfm_state_build(c, &w->s);
        local_search(c, w, kl,
                     seeded != 2 && (large(c) || !seeded || i == 0), 1);
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
        dtfm_state_build(c, &w->s);
        local_search(c, w, kl, large(c) || (c->gens & 1), 0);
        if (!kl && !large(c) && !better(c->best, w->s.cost))
            dtfm_polish(c, &w->t, &w->s);
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
        } else if (c->stall <= 0) {
            ++since_best;
        }
        /* diversity: after GA_RESTART offspring without a new best the worse
         * half of the population is replaced by fresh random members */
        if (since_best > 0 && since_best % GA_RESTART == 0)
            restart_half(c, w, pop, filled, kl);
    }
done:
    free(kl_pairs);
    for (i = 0; i < P && pop; i++)
        free(pop[i].grp);
    free(pop);
    return rc;
}

