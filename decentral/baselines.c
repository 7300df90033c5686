/* decentral/baselines.c: what DT-FM's GA is compared with: its
 * Kernighan-Lin local search (Bui and Moon), simulated annealing over
 * pair swaps and random assignment. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* ---- Kernighan-Lin local search (Bui and Moon; DT-FM's baseline) ----- */

/* One KL pass between groups a and b with gain_KL over the affinity
 * 1 / w_dp; applies the best prefix of tentative swaps when its summed
 * gain is positive.  Returns 1 when something moved. */
static int kl_pair(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int a, int b,
                   double *D, int *seq, char *locked)
{
    int g = c->g, n = c->n, g2 = 2 * g, step, i, j, best_m = 0;
    int *ma = s->mem + (size_t)a * (size_t)g, *mb = s->mem + (size_t)b * (size_t)g;
    int la[256], lb[256];
    double cum = 0.0, best_cum = 0.0, *A = c->kl_aff;

    if (g > 256 || A == NULL)
        return 0;
    memcpy(la, ma, (size_t)g * sizeof *la);
    memcpy(lb, mb, (size_t)g * sizeof *lb);
    /* affinities among the 2g devices: la's, then lb's */
    for (i = 0; i < g2; i++) {
        const double *row = c->wdp + (size_t)(i < g ? la[i] : lb[i - g]) * (size_t)n;
        for (j = 0; j < g2; j++) {
            double w = row[j < g ? la[j] : lb[j - g]];
            A[i * g2 + j] = w > 0 ? 1.0 / w : 0.0;
        }
    }
    for (i = 0; i < g2; i++) {
        int own = i < g ? 0 : g, oth = i < g ? g : 0;
        double ext = 0.0, in = 0.0;
        for (j = 0; j < g; j++) {
            ext += A[i * g2 + oth + j];
            if (own + j != i)
                in += A[i * g2 + own + j];
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
                gain = D[i] + D[g + j] - 2.0 * A[i * g2 + g + j];
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
                D[i] += 2.0 * A[i * g2 + bi] - 2.0 * A[i * g2 + g + bj];
            if (!locked[g + i])
                D[g + i] += 2.0 * A[(g + i) * g2 + g + bj] - 2.0 * A[(g + i) * g2 + bi];
        }
    }
    if (best_m == 0)
        return 0;
    dtfm_tx_begin(t, s);
    for (i = 0; i < best_m; i++)
        dtfm_tx_swap(c, t, s, seq[2 * i], seq[2 * i + 1]);
    dtfm_tx_eval(c, t, s, DBL_MAX);
    dtfm_tx_commit(c, t, s);
    return 1;
}

void dtfm_local_search_kl(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int *pairs,
                          int npairs, double *D, int *seq, char *locked)
{
    int pass = 0, limit = c->sp->ls_passes > 0 ? c->sp->ls_passes : 8;

    while (!c->stop && pass++ < limit) {
        int i, moved = 0;
        dtfm_shuffle(&c->rng, pairs, npairs);
        /* a pair that moves nothing evaluates nothing: the clock here */
        for (i = 0; i < npairs && !c->stop && !dtfm_out_of_time(c); i++)
            moved |= kl_pair(c, t, s, pairs[i] / c->k, pairs[i] % c->k, D, seq,
                             locked);
        if (!moved)
            break;
    }
}

/* ---- simulated annealing --------------------------------------------- */

void dtfm_run_sa(dtfm_ctx *c, dtfm_work *w)
{
    /* cycles of len steps (50 n d_pp + 2000); with an evaluation limit,
     * four cycles in 90% of it and the rest for a final descent */
    long len = c->sp->max_evals > 0 ? c->sp->max_evals * 9 / 40
                                    : 50L * c->n * c->k + 2000;
    long step, since = 0, cycle = 0;
    double t0 = 0.0, worse = 0.0;
    int nworse = 0, i;
    dtfm_state *s = &w->s;

    c->phase = "sa";
    dtfm_random_partition(c, s->grp);
    dtfm_state_build(c, s);
    if (c->k < 2)
        return; /* one group: the only schedule, and no swap */
    /* initial temperature: an uphill move ten times the average one is
     * accepted with p = 0.5 */
    for (i = 0; i < 64 && !c->stop; i++) {
        int d = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n), e;
        double before = s->cost, v;
        do
            e = (int)util_pcg32_bounded(&c->rng, (uint32_t)c->n);
        while (s->grp[e] == s->grp[d]);
        dtfm_tx_begin(&w->t, s);
        dtfm_tx_swap(c, &w->t, s, d, e);
        v = dtfm_tx_eval(c, &w->t, s, DBL_MAX);
        if (v > before) {
            worse += v - before;
            nworse++;
        }
        dtfm_tx_rollback(c, &w->t, s);
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
            dtfm_tx_begin(&w->t, s);
            dtfm_tx_swap(c, &w->t, s, d, e);
            v = dtfm_tx_eval(c, &w->t, s, before + thr);
            if (w->t.edges_done && v < before + thr) {
                double old_best = c->best;
                dtfm_tx_commit(c, &w->t, s);
                if (better(c->best, old_best))
                    improved = 1;
            } else {
                dtfm_tx_rollback(c, &w->t, s);
            }
            c->gens++;
        }
        /* reheat: odd cycles from the best schedule, even ones from a
         * fresh random partition */
        if (++cycle & 1)
            memcpy(s->grp, c->best_grp, (size_t)c->n * sizeof *s->grp);
        else
            dtfm_random_partition(c, s->grp);
        dtfm_state_build(c, s);
        if (improved)
            since = 0;
        else if (c->stall > 0 && ++since >= c->stall)
            break;
        if (c->sp->max_evals > 0 && c->evals >= c->sp->max_evals * 9 / 10)
            break;
    }
    dtfm_polish(c, &w->t, s);
}

/* ---- random assignment ----------------------------------------------- */

void dtfm_run_random(dtfm_ctx *c, dtfm_work *w)
{
    long since = 0;
    double last = DBL_MAX;

    c->phase = "random";
    while (!c->stop) {
        dtfm_random_partition(c, w->s.grp);
        dtfm_state_build(c, &w->s);
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
