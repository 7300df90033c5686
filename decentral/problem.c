/* decentral/problem.c: the DT-FM scheduling problem (Yuan et al.,
 * NeurIPS'22, section 2) in matrix or region form: allocation, checks,
 * the links of a pair of devices and the pair weights of eqs. 2 and 3
 * every cost is built from. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WEIGHT_TILE 64 /* dtfm_weights works on tiles of this many devices squared */

int dtfm_problem_alloc(dtfm_problem *p, int n, int d_pp,
                            int with_compute, util_error *err)
{
    size_t nn;

    memset(p, 0, sizeof *p);
    if (n <= 0 || d_pp <= 0 || n % d_pp != 0 || n > 65536)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected a device count (1..65536) that is a "
                              "multiple of d_pp, got %d devices and d_pp %d",
                              n, d_pp);
    nn = (size_t)n * (size_t)n;
    p->lat = calloc(nn, sizeof *p->lat);
    p->bw = calloc(nn, sizeof *p->bw);
    if (with_compute)
        p->compute = calloc((size_t)n, sizeof *p->compute);
    if (p->lat == NULL || p->bw == NULL || (with_compute && !p->compute)) {
        dtfm_problem_free(p);
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    }
    p->n = n;
    p->d_pp = d_pp;
    p->d_dp = n / d_pp;
    return UTIL_OK;
}

void dtfm_problem_free(dtfm_problem *p)
{
    if (p == NULL)
        return;
    free(p->lat);
    free(p->bw);
    free(p->region);
    free(p->rlat);
    free(p->rbw);
    free(p->compute);
    memset(p, 0, sizeof *p);
}

double dtfm_latency(const dtfm_problem *p, int i, int j)
{
    if (p->lat)
        return p->lat[(size_t)i * (size_t)p->n + (size_t)j];
    return p->rlat[(size_t)p->region[i] * (size_t)p->nreg + (size_t)p->region[j]];
}

double dtfm_bandwidth(const dtfm_problem *p, int i, int j)
{
    if (p->bw)
        return p->bw[(size_t)i * (size_t)p->n + (size_t)j];
    return p->rbw[(size_t)p->region[i] * (size_t)p->nreg + (size_t)p->region[j]];
}

/* The link from device i to j: latency a and bandwidth b checked. */
static int check_link(int i, int j, double a, double b, util_error *err)
{
    if (!isfinite(a) || a < 0)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected a non-negative latency from "
                              "device %d to %d, got %g", i, j, a);
    if (!isfinite(b) || !(b > 0))
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected a positive bandwidth from "
                              "device %d to %d, got %g", i, j, b);
    return UTIL_OK;
}

/* Region form: every region pair some pair of devices uses, named by
 * the first such pair of devices; O(n + nreg^2). */
static int check_regions(const dtfm_problem *p, util_error *err)
{
    int n = p->n, r = p->nreg, i, a, b, rc = UTIL_OK;
    int *first = malloc((size_t)r * 2 * sizeof *first), *second;

    if (first == NULL)
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    second = first + r;
    for (a = 0; a < r; a++)
        first[a] = second[a] = -1;
    for (i = 0; i < n; i++) {
        a = p->region[i];
        if (a < 0 || a >= r) {
            rc = util_error_set(err, UTIL_EINVAL, "", "", "expected a region in "
                                "0..%d for device %d, got %d", r - 1, i, a);
            goto done;
        }
        if (first[a] < 0)
            first[a] = i;
        else if (second[a] < 0)
            second[a] = i;
    }
    for (a = 0; a < r && rc == UTIL_OK; a++)
        for (b = 0; b < r && rc == UTIL_OK; b++) {
            int d = first[a], e = a == b ? second[a] : first[b];
            size_t x = (size_t)a * (size_t)r + (size_t)b;
            if (d >= 0 && e >= 0)
                rc = check_link(d, e, p->rlat[x], p->rbw[x], err);
        }
done:
    free(first);
    return rc;
}

int dtfm_problem_check(const dtfm_problem *p, util_error *err)
{
    int i, j, n = p->n, rc;
    int full = p->lat != NULL && p->bw != NULL;
    int regions = p->nreg > 0 && p->region && p->rlat && p->rbw;

    if (n <= 0 || p->d_pp <= 0 || p->d_dp <= 0 || p->d_pp * p->d_dp != n ||
        (!full && !regions))
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected d_pp * d_dp = %d devices, got d_pp %d "
                              "and d_dp %d", n, p->d_pp, p->d_dp);
    if (p->d_pp > DTFM_MAX_STAGES)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected at most %d pipeline stages, got d_pp %d",
                              DTFM_MAX_STAGES, p->d_pp);
    if (!isfinite(p->c_pp) || p->c_pp < 0 || !isfinite(p->c_dp) ||
        p->c_dp < 0)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected non-negative c_pp and c_dp, got %g "
                              "and %g", p->c_pp, p->c_dp);
    if (!full && (rc = check_regions(p, err)) != UTIL_OK)
        return rc;
    for (i = 0; full && i < n; i++)
        for (j = 0; j < n; j++) {
            size_t x = (size_t)i * (size_t)n + (size_t)j;
            if (i != j && (rc = check_link(i, j, p->lat[x], p->bw[x], err)) != UTIL_OK)
                return rc;
        }
    if (p->compute)
        for (i = 0; i < n; i++)
            if (!isfinite(p->compute[i]) || p->compute[i] < 0)
                return util_error_set(err, UTIL_EINVAL, "", "",
                                      "expected a non-negative compute time "
                                      "for device %d, got %g", i,
                                      p->compute[i]);
    return UTIL_OK;
}

/* Both directions of one link set to their mean. */
static void mean_pair(double *m, size_t x, size_t y)
{
    m[x] = m[y] = 0.5 * (m[x] + m[y]);
}

void dtfm_symmetrize(dtfm_problem *p)
{
    size_t i, j, n = (size_t)p->n, r = (size_t)p->nreg;

    /* DT-FM section 2: the edge of G carries ((a+a')/2, (b+b')/2) */
    for (i = 0; p->lat && i < n; i++)
        for (j = i + 1; j < n; j++) {
            mean_pair(p->lat, i * n + j, j * n + i);
            mean_pair(p->bw, i * n + j, j * n + i);
        }
    for (i = 0; !p->lat && i < r; i++)
        for (j = i + 1; j < r; j++) {
            mean_pair(p->rlat, i * r + j, j * r + i);
            mean_pair(p->rbw, i * r + j, j * r + i);
        }
}

/* The eq. 2 and eq. 3 terms of a link of latency a and bandwidth b, each
 * the mean of the two directions. */
static void link_weights(const dtfm_problem *p, double a, double b, double *wd,
                         double *wp)
{
    /* DT-FM eq. 2 term: 2 (alpha + c_dp / (D_dp beta)) */
    *wd = 2.0 * (a + p->c_dp / ((double)p->d_dp * b));
    /* DT-FM eq. 3 term: 2 (alpha + c_pp / beta) */
    *wp = 2.0 * (a + p->c_pp / b);
}

void dtfm_pair_weights(const dtfm_problem *p, size_t i, size_t j, double *wd,
                       double *wp)
{
    size_t n = (size_t)p->n, r = (size_t)p->nreg, x, y;

    if (p->lat) {
        link_weights(p, 0.5 * (p->lat[i * n + j] + p->lat[j * n + i]),
                     0.5 * (p->bw[i * n + j] + p->bw[j * n + i]), wd, wp);
        return;
    }
    x = (size_t)p->region[i];
    y = (size_t)p->region[j];
    link_weights(p, 0.5 * (p->rlat[x * r + y] + p->rlat[y * r + x]),
                 0.5 * (p->rbw[x * r + y] + p->rbw[y * r + x]), wd, wp);
}

void dtfm_weights_rows(const dtfm_problem *p, double *w_dp, double *w_pp, int i0,
                       int i1)
{
    size_t n = (size_t)p->n, i, j;

    for (i = (size_t)i0; i < (size_t)i1; i++)
        for (j = 0; j < n; j++) {
            double wd = 0.0, wp = 0.0;
            if (i != j)
                dtfm_pair_weights(p, i, j, &wd, &wp);
            w_dp[i * n + j] = wd;
            w_pp[i * n + j] = wp;
        }
}

/* dtfm_weights in region form: the terms of each pair of regions, then
 * the tables row by row; 0 when out of memory. */
static int weights_by_region(const dtfm_problem *p, double *w_dp, double *w_pp)
{
    size_t n = (size_t)p->n, r = (size_t)p->nreg, a, b, i, j;
    double *rd = malloc(r * r * 2 * sizeof *rd), *rp;

    if (rd == NULL)
        return 0;
    rp = rd + r * r;
    for (a = 0; a < r; a++)
        for (b = 0; b < r; b++)
            link_weights(p, 0.5 * (p->rlat[a * r + b] + p->rlat[b * r + a]),
                         0.5 * (p->rbw[a * r + b] + p->rbw[b * r + a]),
                         &rd[a * r + b], &rp[a * r + b]);
    for (i = 0; i < n; i++) {
        const double *dr = rd + (size_t)p->region[i] * r, *pr = rp + (size_t)p->region[i] * r;
        for (j = 0; j < n; j++) {
            w_dp[i * n + j] = i == j ? 0.0 : dr[p->region[j]];
            w_pp[i * n + j] = i == j ? 0.0 : pr[p->region[j]];
        }
    }
    free(rd);
    return 1;
}

void dtfm_weights(const dtfm_problem *p, double *w_dp,
                       double *w_pp)
{
    size_t n = (size_t)p->n, i0, j0, i, j, iend, jend;

    if (!p->lat && weights_by_region(p, w_dp, w_pp))
        return;

    /* tiles of the upper triangle, each pair mirrored: both directions
     * of a pair are read from one tile row and column, in cache */
    for (i0 = 0; i0 < n; i0 += WEIGHT_TILE) {
        iend = i0 + WEIGHT_TILE < n ? i0 + WEIGHT_TILE : n;
        for (j0 = i0; j0 < n; j0 += WEIGHT_TILE) {
            jend = j0 + WEIGHT_TILE < n ? j0 + WEIGHT_TILE : n;
            for (i = i0; i < iend; i++)
                for (j = j0 > i ? j0 : i; j < jend; j++) {
                    double wd = 0.0, wp = 0.0;
                    if (i != j)
                        dtfm_pair_weights(p, i, j, &wd, &wp);
                    w_dp[i * n + j] = w_dp[j * n + i] = wd;
                    w_pp[i * n + j] = w_pp[j * n + i] = wp;
                }
        }
    }
}
