/* search/batch.c: the global batch rounded within a tolerance the user
 * gives, to one whose divisors allow more strategies. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Batches within the tolerance that factor better than b: for the
 * largest divisors q of the GPU count, the multiple of q nearest to b
 * (each dp = N / (tp pp) divides N, and dp must divide the batch).  At
 * most n, nearest first among equal q. */
static int batch_candidates(long N, long b, double tol, long *cand, int n)
{
    long lo = (long)ceil((double)b * (1.0 - tol)), hi = (long)floor((double)b * (1.0 + tol));
    long *qs = NULL;
    int nq, i, k = 0, j;

    if (lo < 1)
        lo = 1;
    if (hi > FMT_MAX_GLOBAL_BATCH)
        hi = FMT_MAX_GLOBAL_BATCH;
    nq = search_divisors(N, N, &qs);
    for (i = nq - 1; i >= 0 && k < n; i--) {
        long q = qs[i], down = b / q * q, up = down + q, best = -1;
        if (q < 2)
            break;
        if (down >= lo && down >= 1)
            best = down;
        if (up <= hi && (best < 0 || up - b < b - best))
            best = up;
        if (best < 0 || best == b)
            continue;
        for (j = 0; j < k && cand[j] != best; j++)
            ;
        if (j == k)
            cand[k++] = best;
    }
    free(qs);
    return k;
}

/* The search at the exact batch; with a tolerance, also at the batches
 * of batch_candidates, keeping the one with the most samples per second
 * (the exact batch unless another is strictly faster or it has none). */
int search_plan(const fmt_cluster *c, const fmt_model *m,
                const fmt_profile *prof, const cost_params *cp,
                const search_params *sp, search_result *out, util_error *err)
{
    search_params alt;
    search_result r;
    util_error e2;
    long cand[4];
    double best = 0.0, exact = 0.0;
    int rc, i, n;

    rc = search_plan_exact(c, m, prof, cp, sp, out, err);
    if (!(sp->batch_tolerance > 0.0) || (rc != UTIL_OK && rc != UTIL_EINFEASIBLE))
        return rc;
    if (rc == UTIL_OK)
        best = exact = (double)sp->global_batch / out->cands[0].r.iter_s;
    n = batch_candidates(c->ndevices, sp->global_batch, sp->batch_tolerance,
                         cand, 4);
    for (i = 0; i < n; i++) {
        double thr;
        int rc2;
        alt = *sp;
        alt.global_batch = (int)cand[i];
        alt.batch_tolerance = 0.0;
        memset(&e2, 0, sizeof e2);
        rc2 = search_plan_exact(c, m, prof, cp, &alt, &r, &e2);
        if (rc2 == UTIL_EINFEASIBLE)
            continue;
        if (rc2 != UTIL_OK) {
            if (rc == UTIL_OK)
                search_result_free(out);
            if (err != NULL)
                *err = e2;
            return rc2;
        }
        thr = (double)alt.global_batch / r.cands[0].r.iter_s;
        if (thr > best * (1.0 + 1e-9)) {
            if (rc == UTIL_OK)
                search_result_free(out);
            *out = r;
            best = thr;
            rc = UTIL_OK;
        } else {
            search_result_free(&r);
        }
    }
    if (rc == UTIL_OK)
        out->exact_samples_s = exact;
    return rc;
}
