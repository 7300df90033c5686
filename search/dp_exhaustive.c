/* search/dp_exhaustive.c: the exhaustive layer assignment over every
 * composition of L layers into k stages, with the DP's tie rules: the
 * oracle of search/dp.c in tests and benchmarks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Next k - 1 interior bounds in lexicographic order; 0 after the last. */
static int dp_next_composition(int *b, int k, int L)
{
    int j = k - 1, i;

    while (j >= 1 && b[j] == L - (k - j))
        j--;
    if (j < 1)
        return 0;
    b[j]++;
    for (i = j + 1; i < k; i++)
        b[i] = b[i - 1] + 1;
    return 1;
}

/* Largest and smallest stage time, sum of times and cuts, and largest
 * stage memory (0 without memory) of b. */
static void bf_stats(const search_dp_input *in, const int *b, double *mx,
                     double *mn, double *sum, double *peak)
{
    size_t L = (size_t)in->L, j, l;

    *mx = 0.0;
    *mn = HUGE_VAL;
    *sum = 0.0;
    *peak = 0.0;
    for (j = 0; j < (size_t)in->k; j++) {
        double t = 0.0, q = 0.0;
        for (l = (size_t)b[j]; l < (size_t)b[j + 1]; l++) {
            t += in->t[j * L + l];
            if (in->mem != NULL && in->cap != NULL)
                q += in->mem[j * L + l];
        }
        *peak = fmax(*peak, q);
        *mx = fmax(*mx, t);
        *mn = fmin(*mn, t);
        *sum += t;
        if (in->e != NULL && j + 1 < (size_t)in->k)
            *sum += in->e[j * (L + 1) + (size_t)b[j + 1]];
    }
}

/* First composition of k stages. */
static void bf_first(int *b, int k, int L)
{
    int j;

    for (j = 0; j <= k; j++)
        b[j] = j < k ? j : L;
}

int search_dp_bruteforce(const search_dp_input *in, int *bounds,
                         double *objective, util_error *err)
{
    int *b = NULL, rc, have = 0, more, pass;
    double v, bestv = HUGE_VAL, B0 = -1.0, amax = -HUGE_VAL, smin = HUGE_VAL;
    double mx, mn, sum, peak, pmin = HUGE_VAL, tol;

    if (bounds == NULL || objective == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "missing bounds or objective output");
        goto cleanup;
    }
    rc = search_dp_validate(in, err);
    if (rc != UTIL_OK)
        goto cleanup;
    b = malloc(((size_t)in->k + 1) * sizeof *b);
    if (b == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                            "no memory for %d stages", in->k);
        goto cleanup;
    }
    /* pass 0: least objective; pass 1: bottleneck B0 of the first split
     * within tolerance; pass 2: among those within tolerance and B0 the
     * largest smallest stage; pass 3: least sum among those; pass 4:
     * least peak stage memory among those (k > 1); pass 5: the first of
     * them (search_dp_assign's balanced ties) */
    for (pass = 0; pass <= 5; pass++) {
        bf_first(b, in->k, in->L);
        tol = SEARCH_DP_TIE * fabs(bestv);
        do {
            if (search_dp_fits(in, b)) {
                v = search_dp_objective(in, b);
                have = 1;
                bf_stats(in, b, &mx, &mn, &sum, &peak);
                if (pass == 0 && v < bestv) {
                    bestv = v;
                } else if (pass > 0 && v <= bestv + tol) {
                    if (pass == 1) {
                        B0 = mx;
                        break;
                    }
                    if (mx > B0)
                        ;
                    else if (pass == 2)
                        amax = fmax(amax, in->k > 1 ? mn : 0.0);
                    else if (in->k > 1 && mn < amax)
                        ;
                    else if (pass == 3)
                        smin = fmin(smin, sum);
                    else if (!(sum <= smin + SEARCH_DP_TIE * fabs(smin)))
                        ;
                    else if (pass == 4)
                        pmin = fmin(pmin, in->k > 1 ? peak : 0.0);
                    else if (in->k == 1 || peak <= pmin) {
                        memcpy(bounds, b, ((size_t)in->k + 1) * sizeof *b);
                        *objective = v;
                        break;
                    }
                }
            }
            more = dp_next_composition(b, in->k, in->L);
        } while (more);
        if (!have) {
            rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                                "no split of %d layers into %d stages fits "
                                "memory", in->L, in->k);
            goto cleanup;
        }
    }
    rc = UTIL_OK;
cleanup:
    free(b);
    return rc;
}
