/* search/fit.c: the layer assignment's memory check made the cost
 * model's.  The dynamic program needs memory that adds up over layers
 * plus a per-stage bound of the rest (cost_memory_overhead_bound); the
 * cost model's peak is not additive (the larger of the backward phase and
 * the phase after it, a tied embedding and head held once, the runtime
 * of each device).  So the program runs with its caps corrected by the
 * difference between its additive count and cost_evaluate's memory on a
 * split, and a split is kept only when cost_evaluate's memory fits
 * (docs/algorithms.md, "Memory of a split"). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Rounds of cap correction before the assignment gives up. */
#define FIT_ROUNDS 4

/* search_stage_excess with the stage's least device memory devmin
 * already known (< 0: not known). */
static double stage_excess(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const fmt_strategy *s, int j,
                           double devmin)
{
    cost_params ps = *cp; /* as cost_evaluate sets them */
    int g = s->tp * s->dp, i, plain = s->slow == NULL && s->tp_heads == NULL;
    double worst = -INFINITY, need = 0.0;

    ps.schedule = s->schedule;
    ps.recompute = cost_strategy_recompute(cp, s);
    ps.zero_stage = cost_strategy_zero(cp, s);
    ps.offload = cost_strategy_offload(cp, s);
    ps.sp = s->sp != 0;
    ps.overlap_grad_reduce = cost_strategy_overlap(cp, s, COST_OVERLAP_GRAD);
    ps.overlap_p2p = cost_strategy_overlap(cp, s, COST_OVERLAP_P2P);
    if (plain && devmin >= 0.0) { /* one need, the stage's least memory */
        cost_memory mem;
        cost_rank_stage_memory(m, &ps, s, j * g, &mem);
        cost_runtime_apply(c, &ps, s, j * g, &mem);
        return cost_rank_memory(m, &ps, s, j * g, mem.total) - devmin;
    }
    for (i = 0; i < g; i++) {
        int r = j * g + i;
        if (!plain || i == 0) { /* cost_evaluate copies a stage's first rank */
            cost_memory mem;
            cost_rank_stage_memory(m, &ps, s, r, &mem);
            cost_runtime_apply(c, &ps, s, r, &mem);
            need = cost_rank_memory(m, &ps, s, r, mem.total);
        }
        if (need - fmt_device(c, s->ranks[r])->mem_bytes > worst)
            worst = need - fmt_device(c, s->ranks[r])->mem_bytes;
    }
    return worst;
}

double search_stage_excess(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const fmt_strategy *s, int j)
{
    return stage_excess(c, m, cp, s, j, -1.0);
}

/* Layer bounds of group bounds gb into s. */
static void set_bounds(fmt_strategy *s, const int *gs, const int *gb)
{
    int j;

    for (j = 0; j <= s->pp; j++)
        s->bounds[j] = gs[gb[j]];
}

/* The program's memory need of stage j under split gb, as a device's
 * memory: its groups' memory plus what its cap leaves out (cap0). */
static double dp_need(const search_dp_input *in, const double *cap0,
                      const double *devmem, const int *gb, int j)
{
    double v = 0.0;
    int g;

    for (g = gb[j]; g < gb[j + 1]; g++)
        v += in->mem[(size_t)j * (size_t)in->L + (size_t)g];
    return v + (devmem[j] - cap0[j]);
}

/* Splits of G groups into k stages enumerated outright when at most
 * this many (times the layers, the work of checking each). */
#define FIT_ENUM_WORK 5000L

/* C(n, r), or LONG_MAX past lim. */
static long binom_capped(long n, long r, long lim)
{
    long v = 1, i;

    if (r < 0 || r > n)
        return 0;
    if (r > n - r)
        r = n - r;
    for (i = 1; i <= r; i++) {
        v = v * (n - r + i) / i;
        if (v > lim)
            return LONG_MAX;
    }
    return v;
}

/* 1 when group split gb is one launcher lc writes (the middle stages
 * equal under SEARCH_SPLIT_ENDS, all equal with vpp > 1). */
static int ends_ok(const search_launcher *lc, int vpp, const int *gb, int k)
{
    int j;

    if (lc == NULL || lc->split != SEARCH_SPLIT_ENDS || k < 2)
        return 1;
    for (j = 0; j < k; j++) {
        int n = gb[j + 1] - gb[j];
        if (vpp > 1 ? n != gb[1] - gb[0]
                    : j > 0 && j < k - 1 && n != gb[2] - gb[1])
            return 0;
    }
    return 1;
}

/* Every split of the G groups: the least objective whose memory fits by
 * cost_evaluate's count, ties to the first in lexicographic order. */
static int enum_fit(const fmt_cluster *c, const fmt_model *m,
                    const cost_params *cp, const search_launcher *lc,
                    fmt_strategy *s, const search_dp_input *in, const int *gs,
                    const double *devmem, int *gb, int *cur, double *obj)
{
    int k = in->k, L = in->L, j, found = 0;
    double best = HUGE_VAL;

    cur[0] = 0;
    cur[k] = L;
    for (j = 1; j < k; j++)
        cur[j] = j;
    for (;;) {
        if (ends_ok(lc, s->vpp, cur, k)) {
            double o = search_dp_objective(in, cur);
            if (o < best) {
                int fits = 1;
                set_bounds(s, gs, cur);
                for (j = 0; j < k && fits; j++)
                    fits = stage_excess(c, m, cp, s, j, devmem[j]) <= 0.0;
                if (fits) {
                    best = o;
                    memcpy(gb, cur, ((size_t)k + 1) * sizeof *cur);
                    found = 1;
                }
            }
        }
        for (j = k - 1; j >= 1 && cur[j] == L - k + j; j--)
            ;
        if (j < 1)
            break;
        cur[j]++;
        for (j = j + 1; j < k; j++)
            cur[j] = cur[j - 1] + 1;
    }
    if (found) {
        set_bounds(s, gs, gb);
        *obj = best;
    }
    return found;
}

int search_assign_fit(const fmt_cluster *c, const fmt_model *m,
                      const cost_params *cp, const search_launcher *lc,
                      fmt_strategy *s, search_dp_input *in, const int *gs,
                      int *gb, double *obj, search_scratch *sd, util_error *err)
{
    int k = in->k, j, round, rc = UTIL_OK, found = 0;
    size_t zk = (size_t)k;
    double *cap0 = NULL, *devmem, *adj, *cap, *d, best = HUGE_VAL;
    const double *orig = in->cap;
    int *free_gb = NULL, *best_gb;
    search_dp_input fr = *in;

    cap0 = malloc(5 * zk * sizeof *cap0);
    free_gb = malloc(2 * (zk + 1) * sizeof *free_gb);
    if (cap0 == NULL || free_gb == NULL) {
        free(cap0);
        free(free_gb);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    devmem = cap0 + zk;
    adj = devmem + zk;
    cap = adj + zk;
    d = cap + zk;
    best_gb = free_gb + zk + 1;
    for (j = 0; j < k; j++) {
        cap0[j] = in->cap[j];
        adj[j] = 0.0;
        /* the least device memory of the stage */
        devmem[j] = HUGE_VAL;
    }
    for (j = 0; j < k; j++) {
        int i, g = s->tp * s->dp;
        if (c->ntypes == 1) { /* one device type: its memory */
            devmem[j] = c->types[0].mem_bytes;
            continue;
        }
        for (i = 0; i < g; i++) {
            double b = fmt_device(c, s->ranks[j * g + i])->mem_bytes;
            if (b < devmem[j])
                devmem[j] = b;
        }
    }
    if (binom_capped(in->L - 1, k - 1, FIT_ENUM_WORK) <=
        FIT_ENUM_WORK / (m->nlayers > 0 ? m->nlayers : 1)) {
        /* few splits: each checked outright */
        found = enum_fit(c, m, cp, lc, s, in, gs, devmem, best_gb, gb, &best);
        rc = UTIL_OK;
        round = FIT_ROUNDS;
    } else {
        round = 0;
        /* the correction measured first on the even split of the groups,
           which the program's split is usually close to */
        for (j = 0; j <= k; j++)
            gb[j] = (int)((long)j * in->L / k);
        set_bounds(s, gs, gb);
        for (j = 0; j < k; j++)
            adj[j] = dp_need(in, cap0, devmem, gb, j) -
                     (stage_excess(c, m, cp, s, j, devmem[j]) + devmem[j]);
    }
    fr.mem = NULL; /* the split that ignores memory */
    fr.cap = NULL;
    in->cap = cap;
    for (; round < FIT_ROUNDS; round++) {
        double o = 0.0;
        int fits = 1, moved = 0;
        util_error e2;
        memset(&e2, 0, sizeof e2);
        for (j = 0; j < k; j++)
            cap[j] = cap0[j] + adj[j] > 0.0 ? cap0[j] + adj[j] : 0.0;
        if (lc != NULL && lc->split == SEARCH_SPLIT_ENDS)
            rc = search_launcher_dp(in, lc, s->vpp, gb, &o, &e2);
        else
            rc = search_dp_assign_scratch(in, gb, &o, sd, &e2);
        if (rc == UTIL_EINFEASIBLE) { /* measure on the split without memory */
            if (lc != NULL && lc->split == SEARCH_SPLIT_ENDS)
                rc = search_launcher_dp(&fr, lc, s->vpp, gb, &o, &e2);
            else
                rc = search_dp_assign_scratch(&fr, gb, &o, sd, &e2);
            if (rc != UTIL_OK) {
                if (err != NULL)
                    *err = e2;
                break;
            }
        } else if (rc != UTIL_OK) {
            if (err != NULL)
                *err = e2;
            break;
        }
        set_bounds(s, gs, gb);
        for (j = 0; j < k; j++) {
            /* the program's count minus the cost model's, on this split */
            double x = stage_excess(c, m, cp, s, j, devmem[j]) + devmem[j];
            d[j] = dp_need(in, cap0, devmem, gb, j) - x;
            if (x > devmem[j]) /* cost_evaluate's test */
                fits = 0;
        }
        /* a split that fits under caps no tighter than the cost model's
         * on it is the least objective of all that fit: done; else the
         * caps take the correction measured on it */
        for (j = 0; j < k; j++)
            if (fits ? d[j] > adj[j] + 1e-9 * devmem[j]
                     : fabs(d[j] - adj[j]) > 1e-9 * devmem[j])
                moved = 1;
        for (j = 0; j < k && moved; j++)
            adj[j] = d[j];
        if (fits && o < best) {
            best = o;
            memcpy(best_gb, gb, (zk + 1) * sizeof *gb);
            found = 1;
        }
        if (!moved)
            break;
    }
    in->cap = orig;
    if (found) {
        memcpy(gb, best_gb, (zk + 1) * sizeof *gb);
        set_bounds(s, gs, gb);
        *obj = best;
        rc = UTIL_OK;
    } else if (rc == UTIL_OK || rc == UTIL_EINFEASIBLE) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no split of %d layers into %d stages fits memory",
                            m->nlayers, k);
    }
    free(cap0);
    free(free_gb);
    return rc;
}
