/* search/ga.c: a hybrid genetic algorithm over the placement of a
 * strategy (which device runs which rank), after the hybrid GA of DT-FM
 * (Yuan et al., NeurIPS 2022, section 3.4: crossover, mutation and a
 * local-search step per child) with Davis's order crossover (1985)
 * applied to whole tensor-parallel groups.  Every placement is scored by
 * the optimal layer assignment and the cost model, as the annealing
 * (search/anneal.c) scores its states. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "internal.h"

static const char *const psearch_names[SEARCH_PSEARCH_N] = {"anneal", "rules", "ga"};

const char *search_place_search_name(int how)
{
    return how >= 0 && how < SEARCH_PSEARCH_N ? psearch_names[how] : NULL;
}

int search_place_search_from_name(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < SEARCH_PSEARCH_N; i++)
        if (strcmp(name, psearch_names[i]) == 0)
            return i;
    return -1;
}

/* State of one GA run.  A chromosome is a permutation of the devices
 * the placement may use: genes [0, n) run ranks 0..n-1, genes [n, len)
 * are idle (none with use_all). */
typedef struct ga_ctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_profile *prof;
    const cost_params *cp;
    int objective;
    const search_launcher *lc; /* the launcher's constraints, NULL = none */
    int n, len, tp;         /* ranks, chromosome length, TP degree */
    fmt_strategy work;      /* scratch strategy that scores a chromosome */
    util_pcg32 rng;
    long scored;            /* placements scored */
    char *used;             /* c->ndevices flags for the crossover */
    /* placements already scored (open addressing on a hash of the ranks):
       a child equal to one seen before is not scored again */
    uint64_t *seen_h;       /* seen_cap hashes, 0 = empty slot */
    double *seen_v;         /* their objectives */
    int *seen_ranks;        /* seen_cap * n ranks */
    int seen_cap, seen_n;
} ga_ctx;

/* Hash of the ranks of g (FNV-1a, 64 bit; never 0). */
static uint64_t ranks_hash(const ga_ctx *x, const int *g)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int i;

    for (i = 0; i < x->n; i++) {
        h ^= (uint64_t)(uint32_t)g[i];
        h *= 0x100000001b3ull;
    }
    return h != 0 ? h : 1;
}

/* Slot of g in the seen table: where it is, or the empty slot for it. */
static int seen_slot(const ga_ctx *x, const int *g, uint64_t h)
{
    int k = (int)(h & (uint64_t)(x->seen_cap - 1));

    while (x->seen_h[k] != 0 &&
           (x->seen_h[k] != h ||
            memcmp(x->seen_ranks + (size_t)k * (size_t)x->n, g,
                   (size_t)x->n * sizeof *g) != 0))
        k = (k + 1) & (x->seen_cap - 1);
    return k;
}

/* Objective of chromosome g (HUGE_VAL when it does not fit or run). */
static int evaluate(ga_ctx *x, const int *g, double *val, util_error *err)
{
    cost_result r;
    uint64_t h = ranks_hash(x, g);
    int rc, k = seen_slot(x, g, h);

    if (x->seen_h[k] != 0) {
        *val = x->seen_v[k];
        return UTIL_OK;
    }
    memcpy(x->work.ranks, g, (size_t)x->n * sizeof *g);
    x->scored++;
    rc = search_anneal_score_for(x->c, x->m, x->prof, x->cp, x->lc, x->objective,
                                 &x->work, &r, val, err);
    if (rc == UTIL_EINFEASIBLE) {
        *val = HUGE_VAL;
        rc = UTIL_OK;
    } else if (rc == UTIL_OK) {
        cost_result_free(&r);
    }
    if (rc == UTIL_OK && 2 * (x->seen_n + 1) <= x->seen_cap) { /* at most half full */
        x->seen_h[k] = h;
        x->seen_v[k] = *val;
        memcpy(x->seen_ranks + (size_t)k * (size_t)x->n, g, (size_t)x->n * sizeof *g);
        x->seen_n++;
    }
    return rc;
}

/* One annealing move on g; 0 when none applies. */
static int mutate(ga_ctx *x, int *g)
{
    return search_anneal_move(&x->rng, &x->work, g, g + x->n, x->len - x->n);
}

/* Order crossover on TP-group blocks: a cyclic run of a's TP groups
 * keeps its slots; the other slots take b's TP groups that are still
 * whole, in b's order from the end of the run (Davis's order crossover
 * with blocks for genes), then b's remaining devices in b's order; the
 * idle tail gets what is left, in b's order.  A TP group that sits in
 * one fast domain in a parent stays there in the child. */
static void crossover(ga_ctx *x, const int *a, const int *b, int *child)
{
    int tp = x->tp, nb = x->n / tp, start, run, q, i, j, slot, pos;

    memset(x->used, 0, (size_t)x->c->ndevices);
    start = (int)util_pcg32_bounded(&x->rng, (uint32_t)nb);
    run = 1 + (int)util_pcg32_bounded(&x->rng, (uint32_t)(nb - 1));
    for (q = 0; q < run; q++) {
        int blk = (start + q) % nb;
        for (i = 0; i < tp; i++) {
            child[blk * tp + i] = a[blk * tp + i];
            x->used[a[blk * tp + i]] = 1;
        }
    }
    /* free slots (start + run + q) % nb, q < nb - run, filled in turn */
    slot = 0;
    for (q = 0; q < nb && slot < nb - run; q++) {
        int blk = (start + run + q) % nb, whole = 1;
        for (i = 0; i < tp; i++)
            whole &= !x->used[b[blk * tp + i]];
        if (!whole)
            continue;
        pos = ((start + run + slot) % nb) * tp;
        for (i = 0; i < tp; i++) {
            child[pos + i] = b[blk * tp + i];
            x->used[b[blk * tp + i]] = 1;
        }
        slot++;
    }
    j = 0;
    for (; slot < nb - run; slot++) {
        pos = ((start + run + slot) % nb) * tp;
        for (i = 0; i < tp; i++) {
            while (x->used[b[j]])
                j++;
            child[pos + i] = b[j];
            x->used[b[j]] = 1;
        }
    }
    for (pos = x->n, j = 0; pos < x->len; pos++) {
        while (x->used[b[j]])
            j++;
        child[pos] = b[j];
        x->used[b[j]] = 1;
    }
}

/* Binary tournament over the population: index of the fitter of two. */
static int tournament(ga_ctx *x, const double *fit, int pop)
{
    int a = (int)util_pcg32_bounded(&x->rng, (uint32_t)pop);
    int b = (int)util_pcg32_bounded(&x->rng, (uint32_t)pop);

    return fit[b] < fit[a] || (fit[b] == fit[a] && b < a) ? b : a;
}

/* Sort key of the elitist replacement: objective, then index (parents
 * before children), so that equal scores keep a fixed order. */
typedef struct ga_rank {
    double v;
    int i;
} ga_rank;

static int rank_cmp(const void *pa, const void *pb)
{
    const ga_rank *a = pa, *b = pb;

    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Chromosome of strategy s: its ranks, then its idle devices. */
static int chromosome(ga_ctx *x, const fmt_strategy *s, int use_all, int *g)
{
    int *idle = NULL, nidle = 0, i;

    memcpy(g, s->ranks, (size_t)x->n * sizeof *g);
    if (use_all)
        return UTIL_OK;
    if (search_anneal_idle(x->c, s, &idle, &nidle) != UTIL_OK)
        return UTIL_ENOMEM;
    for (i = 0; i < nidle && x->n + i < x->len; i++)
        g[x->n + i] = idle[i];
    free(idle);
    return nidle == x->len - x->n ? UTIL_OK : UTIL_EINVAL;
}

/* The GA proper on population genes (2 * pop chromosomes of x->len:
 * the first pop seeded, scored in fit); best (x->len) gets the fittest
 * chromosome, *best_v its objective. */
static int evolve(ga_ctx *x, int pop, int gens, int *genes, double *fit,
                  int *best, double *best_v, util_error *err)
{
    int len = x->len, gen, k, i, rc = UTIL_OK, kept;
    int *trial = malloc((size_t)len * sizeof *trial);
    int *next = malloc((size_t)pop * (size_t)len * sizeof *next);
    double *nfit = malloc((size_t)pop * sizeof *nfit);
    ga_rank *rk = malloc((size_t)2 * (size_t)pop * sizeof *rk);
    char *taken = malloc((size_t)2 * (size_t)pop);

    if (trial == NULL || next == NULL || nfit == NULL || rk == NULL || taken == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (gen = 0; gen < gens; gen++) {
        for (k = 0; k < pop; k++) { /* children into genes[pop + k] */
            int *child = genes + (size_t)(pop + k) * (size_t)len;
            int a = tournament(x, fit, pop), b = tournament(x, fit, pop);
            double v;
            if (x->n / x->tp > 1 && a != b && util_pcg32_double(&x->rng) < 0.9)
                crossover(x, genes + (size_t)a * (size_t)len, genes + (size_t)b * (size_t)len, child);
            else
                memcpy(child, genes + (size_t)a * (size_t)len, (size_t)len * sizeof *child);
            if (a == b || util_pcg32_double(&x->rng) < 0.5)
                mutate(x, child);
            if ((rc = evaluate(x, child, &v, err)) != UTIL_OK)
                goto done;
            /* local search: a few annealing moves at zero temperature */
            for (i = 0; i < SEARCH_GA_LOCAL; i++) {
                double tv;
                memcpy(trial, child, (size_t)len * sizeof *trial);
                if (!mutate(x, trial))
                    break;
                if ((rc = evaluate(x, trial, &tv, err)) != UTIL_OK)
                    goto done;
                if (tv < v) {
                    v = tv;
                    memcpy(child, trial, (size_t)len * sizeof *child);
                }
            }
            fit[pop + k] = v;
        }
        /* elitist replacement: the pop best of parents and children,
         * duplicates (same ranks) only when distinct ones run out */
        for (i = 0; i < 2 * pop; i++) {
            rk[i].v = fit[i];
            rk[i].i = i;
        }
        qsort(rk, (size_t)2 * (size_t)pop, sizeof *rk, rank_cmp);
        memset(taken, 0, (size_t)2 * (size_t)pop);
        kept = 0;
        for (i = 0; i < 2 * pop && kept < pop; i++) {
            int j, dup = 0;
            for (j = 0; j < kept && !dup; j++)
                dup = memcmp(next + (size_t)j * (size_t)len, genes + (size_t)rk[i].i * (size_t)len,
                             (size_t)x->n * sizeof *next) == 0;
            if (dup)
                continue;
            memcpy(next + (size_t)kept * (size_t)len, genes + (size_t)rk[i].i * (size_t)len,
                   (size_t)len * sizeof *next);
            nfit[kept++] = rk[i].v;
            taken[i] = 1;
        }
        for (i = 0; i < 2 * pop && kept < pop; i++)
            if (!taken[i]) {
                memcpy(next + (size_t)kept * (size_t)len, genes + (size_t)rk[i].i * (size_t)len,
                       (size_t)len * sizeof *next);
                nfit[kept++] = rk[i].v;
            }
        memcpy(genes, next, (size_t)pop * (size_t)len * sizeof *genes);
        memcpy(fit, nfit, (size_t)pop * sizeof *fit);
    }
    /* fit[] is sorted after a generation; without one, find the best */
    for (k = 0, i = 1; i < pop; i++)
        if (fit[i] < fit[k])
            k = i;
    memcpy(best, genes + (size_t)k * (size_t)len, (size_t)len * sizeof *best);
    *best_v = fit[k];
done:
    free(trial);
    free(next);
    free(nfit);
    free(rk);
    free(taken);
    return rc;
}

int search_ga(const fmt_cluster *c, const fmt_model *m,
              const fmt_profile *prof, const cost_params *cp,
              const search_params *sp, int steps, uint64_t seed,
              fmt_strategy *s, cost_result *r, long *moves,
              util_error *err)
{
    ga_ctx x;
    fmt_strategy rules, best;
    cost_result br;
    int pop = sp && sp->ga_population > 0 ? sp->ga_population : SEARCH_GA_POPULATION;
    int gens = sp && sp->ga_generations > 0 ? sp->ga_generations : SEARCH_GA_GENERATIONS;
    int use_all = sp != NULL && sp->use_all, i, k, rc, *genes = NULL, *bestg = NULL;
    double *fit = NULL, work, start_v, best_v;
    long am = 0;

    memset(&x, 0, sizeof x);
    memset(&rules, 0, sizeof rules);
    memset(&best, 0, sizeof best);
    memset(&br, 0, sizeof br);
    if (moves != NULL)
        *moves = 0;
    if (fmt_strategy_copy(&rules, s) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    rc = search_anneal(c, m, prof, cp, sp, steps, seed, s, r, &am, err);
    if (moves != NULL)
        *moves = am;
    x.n = s->tp * s->dp * s->pp;
    work = (double)x.n * (double)(m->nlayers > 0 ? m->nlayers : 1) * pop *
           (1 + SEARCH_GA_LOCAL);
    if (gens > SEARCH_GA_WORK / work)
        gens = (int)(SEARCH_GA_WORK / work);
    if (rc != UTIL_OK || gens < 1 || pop < 2 || x.n < 1 || search_anneal_uniform(c) ||
        !r->fits || r->empty_stage >= 0)
        goto done;
    start_v = search_objective_value(c, sp ? sp->objective : SEARCH_OBJ_TIME, s, r);
    if (!isfinite(start_v))
        goto done;
    x.c = c;
    x.m = m;
    x.prof = prof;
    x.cp = cp;
    x.objective = sp ? sp->objective : SEARCH_OBJ_TIME;
    x.lc = sp ? &sp->launcher : NULL;
    x.tp = s->tp;
    x.len = use_all || c->ndevices < x.n ? x.n : c->ndevices;
    util_pcg32_seed(&x.rng, search_anneal_seed(seed, s), 0x6a11ull);
    genes = malloc((size_t)2 * (size_t)pop * (size_t)x.len * sizeof *genes);
    bestg = malloc((size_t)x.len * sizeof *bestg);
    fit = malloc((size_t)2 * (size_t)pop * sizeof *fit);
    x.used = calloc((size_t)c->ndevices, 1);
    /* room for every placement the run can score, half full at most */
    for (x.seen_cap = 16; x.seen_cap < 4 * pop * (1 + gens * (1 + SEARCH_GA_LOCAL));)
        x.seen_cap *= 2;
    while (x.seen_cap > 16 && (double)x.seen_cap * x.n > (double)(1 << 22))
        x.seen_cap /= 2; /* 16 MiB of ranks at most: then fewer are remembered */
    x.seen_h = calloc((size_t)x.seen_cap, sizeof *x.seen_h);
    x.seen_v = malloc((size_t)x.seen_cap * sizeof *x.seen_v);
    x.seen_ranks = malloc((size_t)x.seen_cap * (size_t)x.n * sizeof *x.seen_ranks);
    if (genes == NULL || bestg == NULL || fit == NULL || x.used == NULL ||
        x.seen_h == NULL || x.seen_v == NULL || x.seen_ranks == NULL ||
        fmt_strategy_copy(&x.work, s) != UTIL_OK ||
        fmt_strategy_set_shards(&x.work, NULL, NULL) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    /* seeds: the annealed placement and the rules'; the rest of the
     * population is each seed after 1, 2, ... random moves */
    if (chromosome(&x, s, use_all, genes) != UTIL_OK ||
        chromosome(&x, &rules, use_all, genes + x.len) != UTIL_OK) {
        rc = UTIL_OK; /* a placement this GA cannot encode: keep the seeds */
        goto done;
    }
    for (i = 2; i < pop; i++) {
        memcpy(genes + (size_t)i * (size_t)x.len, genes + (size_t)(i % 2) * (size_t)x.len,
               (size_t)x.len * sizeof *genes);
        for (k = 0; k < i / 2; k++)
            mutate(&x, genes + (size_t)i * (size_t)x.len);
    }
    for (i = 0; i < pop; i++)
        if ((rc = evaluate(&x, genes + (size_t)i * (size_t)x.len, &fit[i], err)) != UTIL_OK)
            goto done;
    rc = evolve(&x, pop, gens, genes, fit, bestg, &best_v, err);
    if (rc != UTIL_OK || !isfinite(best_v))
        goto done;
    /* the best state with its uneven shards planned again, as annealed */
    if (fmt_strategy_copy(&best, &x.work) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    memcpy(best.ranks, bestg, (size_t)x.n * sizeof *bestg);
    rc = search_anneal_score_for(c, m, prof, cp, x.lc, x.objective, &best, &br, &best_v,
                                 err);
    if (rc == UTIL_EINFEASIBLE) { /* br freed */
        rc = UTIL_OK;
        goto done;
    }
    if (rc != UTIL_OK || !isfinite(best_v))
        goto done;
    search_anneal_shards(c, m, prof, cp, sp, x.objective, &best, &br, &best_v);
    if (best_v < start_v * (1.0 - 1e-9)) {
        snprintf(best.placement, sizeof best.placement, "genetic");
        fmt_strategy_free(s);
        cost_result_free(r);
        *s = best;
        *r = br;
        memset(&best, 0, sizeof best);
        memset(&br, 0, sizeof br);
    }
done:
    if (moves != NULL)
        *moves = am + x.scored;
    fmt_strategy_free(&rules);
    fmt_strategy_free(&best);
    fmt_strategy_free(&x.work);
    cost_result_free(&br);
    free(genes);
    free(bestg);
    free(fit);
    free(x.used);
    free(x.seen_h);
    free(x.seen_v);
    free(x.seen_ranks);
    return rc;
}
