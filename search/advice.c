/* search/advice.c: a nearby global batch that trains materially faster
 * per sample than the requested one (docs/algorithms.md, "Nearby
 * batches"): a batch that dp = N / (tp pp) divides allows degrees the
 * requested one does not, and more micro-batches shrink the bubble. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static long gcd(long a, long b)
{
    while (b != 0) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The nearest multiples of the largest divisors q >= 2 of the GPU count
 * below and above b, inside [lo, hi] and not b: every dp divides N, so
 * these batches admit the most dp degrees.  Only batches sharing a larger
 * divisor with N than b does (dp degrees b does not admit): a batch a few
 * percent larger with the same dp degrees only amortises the bubble over
 * a few percent more micro-batches, which cannot gain 5%.  At most n,
 * distinct, in the order found. */
static int nearby_batches(long N, long b, long lo, long hi, long *cand, int n)
{
    long *qs = NULL, gb = gcd(N, b);
    int nq, i, k = 0, j, side;

    nq = search_divisors(N, N, &qs);
    for (i = nq - 1; i >= 0 && k < n; i--) {
        long q = qs[i];
        if (q < 2)
            break;
        for (side = 0; side < 2 && k < n; side++) {
            long v = side == 0 ? b / q * q : (b / q + 1) * q;
            if (v < lo || v > hi || v == b || gcd(N, v) <= gb)
                continue;
            for (j = 0; j < k && cand[j] != v; j++)
                ;
            if (j == k)
                cand[k++] = v;
        }
    }
    free(qs);
    return k;
}

int search_advise_batch(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, double samples_s,
                        search_batch_advice *adv, util_error *err)
{
    long cand[SEARCH_ADVICE_BATCHES], b = sp->global_batch, lo, hi;
    double best = samples_s * (1.0 + SEARCH_ADVICE_GAIN);
    fmt_cluster kept;
    int i, n, own = 0, rc0 = UTIL_OK;

    memset(adv, 0, sizeof *adv);
    if (b < 1 || !(samples_s > 0.0) || c->ndevices < 1)
        return UTIL_OK;
    lo = (long)ceil((double)b * (1.0 - SEARCH_ADVICE_WINDOW));
    hi = (long)floor((double)b * (1.0 + SEARCH_ADVICE_WINDOW));
    if (lo < 1)
        lo = 1;
    if (hi > FMT_MAX_GLOBAL_BATCH)
        hi = FMT_MAX_GLOBAL_BATCH;
    n = nearby_batches(c->ndevices, b, lo, hi, cand, SEARCH_ADVICE_BATCHES);
    if (n > 0 && sp->memory_headroom > 0.0) { /* the headroom the plan kept */
        int *nodes = malloc((size_t)c->nnodes * sizeof *nodes), k, rc;
        if (nodes == NULL)
            return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        for (k = 0; k < c->nnodes; k++)
            nodes[k] = k;
        rc = search_sub_cluster(c, nodes, c->nnodes, 1.0 - sp->memory_headroom,
                                &kept, NULL);
        free(nodes);
        if (rc != UTIL_OK)
            return util_error_set(err, rc, NULL, NULL, "out of memory");
        c = &kept;
        own = 1;
    }
    for (i = 0; i < n && rc0 == UTIL_OK; i++) {
        search_params alt = *sp;
        search_result r;
        util_error e2;
        double thr;
        int rc;

        alt.global_batch = (int)cand[i];
        alt.batch_tolerance = 0.0;
        alt.top_k = 1;
        alt.keep_infeasible = 0;
        alt.progress = NULL;
        alt.time_limit_s = 0.0;
        /* only a time below batch / best samples/s can be advised */
        alt.prune_above_s = (double)cand[i] / best * (1.0 + 1e-9);
        memset(&e2, 0, sizeof e2);
        memset(&r, 0, sizeof r);
        rc = search_plan_exact(c, m, prof, cp, &alt, &r, &e2);
        if (rc == UTIL_ENOMEM) {
            if (err != NULL)
                *err = e2;
            rc0 = rc;
        }
        if (rc != UTIL_OK || r.n < 1 || !r.cands[0].r.fits) {
            search_result_free(&r);
            continue;
        }
        thr = (double)cand[i] / r.cands[0].r.iter_s;
        if (thr >= best * (1.0 - 1e-12) &&
            (adv->global_batch == 0 || thr > best * (1.0 + 1e-12) ||
             labs(cand[i] - b) < labs((long)adv->global_batch - b))) {
            best = thr;
            adv->global_batch = (int)cand[i];
            adv->samples_s = thr;
            adv->speedup = thr / samples_s;
            adv->tp = r.cands[0].s.tp;
            adv->pp = r.cands[0].s.pp;
            adv->dp = r.cands[0].s.dp;
            adv->mbs = r.cands[0].s.mbs;
        }
        search_result_free(&r);
    }
    if (own)
        fmt_cluster_free(&kept);
    return rc0;
}
