/* decentral/instances.c: generated DT-FM instances (random geo-distributed
 * networks, networks with a planted optimum, random regional networks) and
 * a lower bound on the cost of any schedule, for optimality gaps beyond the
 * exhaustive search. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decentral.h"

static const char *const gen_names[DTFM_GEN_NKINDS] = {"geo", "planted"};

const char *dtfm_gen_kind_name(int kind)
{
    if (kind < 0 || kind >= DTFM_GEN_NKINDS)
        return NULL;
    return gen_names[kind];
}

void dtfm_gen_params_init(dtfm_gen_params *g)
{
    memset(g, 0, sizeof *g);
    g->kind = DTFM_GEN_GEO;
    g->n = 64;
    g->d_pp = 8;
    g->seed = 0;
    g->c_pp = 0.512e9;
    g->c_dp = 0.65e9;
}

#define GBPS (1e9 / 8.0) /* bytes/s per Gbit/s */

/* Background network: devices in random sites of uneven size on a square
 * 12 000 km wide (fibre at about 100 km per ms one way, plus 2-10 ms of
 * routing); inside a site 0.5-5 ms and 2-50 Gbit/s; between sites the
 * distance latency and 0.3-3 Gbit/s (log-uniform); each direction of each
 * pair gets its own +-20% noise, so the matrices are asymmetric.  0 when
 * out of memory. */
static int background(util_pcg32 *rng, dtfm_problem *p, int *site)
{
    int n = p->n, ns, i, j, s, ok = 0;
    double (*xy)[2], *slat, *sbw, *plat, *pbw;

    ns = 2 + (int)util_pcg32_bounded(rng, (uint32_t)(n / 8 > 14 ? 14 : n / 8 + 1));
    xy = malloc((size_t)ns * sizeof *xy);
    slat = malloc((size_t)ns * sizeof *slat);
    sbw = malloc((size_t)ns * sizeof *sbw);
    plat = malloc((size_t)ns * (size_t)ns * sizeof *plat);
    pbw = malloc((size_t)ns * (size_t)ns * sizeof *pbw);
    if (!xy || !slat || !sbw || !plat || !pbw)
        goto done;
    for (s = 0; s < ns; s++) {
        xy[s][0] = 12000.0 * util_pcg32_double(rng);
        xy[s][1] = 12000.0 * util_pcg32_double(rng);
        slat[s] = 0.5e-3 + 4.5e-3 * util_pcg32_double(rng);
        sbw[s] = 2.0 * pow(25.0, util_pcg32_double(rng)) * GBPS;
    }
    for (s = 0; s < ns; s++)
        for (i = s; i < ns; i++) {
            double dx = xy[s][0] - xy[i][0], dy = xy[s][1] - xy[i][1];
            double l = (2.0 + 8.0 * util_pcg32_double(rng) +
                        sqrt(dx * dx + dy * dy) / 100.0) * 1e-3;
            double b = 0.3 * pow(10.0, util_pcg32_double(rng)) * GBPS;
            plat[s * ns + i] = plat[i * ns + s] = s == i ? slat[s] : l;
            pbw[s * ns + i] = pbw[i * ns + s] = s == i ? sbw[s] : b;
        }
    /* uneven sites: each device picks a site with weight 1..4 */
    for (i = 0; i < n; i++) {
        uint32_t r = util_pcg32_bounded(rng, (uint32_t)(ns * 4));
        site[i] = (int)(r % (uint32_t)ns);
        if (r / (uint32_t)ns >= 2 && site[i] > 0)
            site[i] = site[i] / 2;
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double f = 0.8 + 0.4 * util_pcg32_double(rng);
            if (i == j)
                continue;
            p->lat[i * n + j] = plat[site[i] * ns + site[j]] * f;
            p->bw[i * n + j] = pbw[site[i] * ns + site[j]] / f;
        }
    ok = 1;
done:
    free(xy);
    free(slat);
    free(sbw);
    free(plat);
    free(pbw);
    return ok;
}

int dtfm_generate(const dtfm_gen_params *gp, dtfm_problem *p, int *planted,
                  util_error *err)
{
    util_pcg32 rng;
    int n = gp->n, k = gp->d_pp, g, rc, i, j, *perm = NULL, *site = NULL;

    memset(p, 0, sizeof *p);
    if (gp->kind < 0 || gp->kind >= DTFM_GEN_NKINDS)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "unknown instance kind %d", gp->kind);
    if (n < 2 || n > 4096 || k < 2 || n % k != 0)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected 2..4096 devices in d_pp >= 2 equal "
                              "groups, got %d devices and d_pp %d", n, k);
    if ((rc = dtfm_problem_alloc(p, n, k, 0, err)) != UTIL_OK)
        return rc;
    g = p->d_dp;
    p->c_pp = gp->c_pp;
    p->c_dp = gp->c_dp;
    perm = malloc((size_t)n * sizeof *perm);
    site = malloc((size_t)n * sizeof *site);
    if (!perm || !site) {
        free(perm);
        free(site);
        dtfm_problem_free(p);
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    }
    util_pcg32_seed(&rng, gp->seed, 0x67656e ^ (uint64_t)gp->kind);
    if (!background(&rng, p, site)) {
        free(perm);
        free(site);
        dtfm_problem_free(p);
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    }
    /* hidden schedule: device perm[q * g + i] is member i of stage q */
    for (i = 0; i < n; i++)
        perm[i] = i;
    for (i = n - 1; i > 0; i--) {
        int r = (int)util_pcg32_bounded(&rng, (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[r];
        perm[r] = t;
    }
    if (planted)
        for (i = 0; i < n; i++)
            planted[perm[i]] = gp->kind == DTFM_GEN_PLANTED ? i / g : -1;
    if (gp->kind == DTFM_GEN_PLANTED) {
        /* a grid of fast links (0.2 ms, 100 Gbit/s, symmetric), better than
         * any background link in both eq. 2 and eq. 3 terms: every pair
         * inside a hidden group, and member i of stage q to member i of
         * stage q + 1 */
        for (i = 0; i < n; i++)
            for (j = 0; j < n; j++) {
                int a = perm[i], b = perm[j], qi = i / g, qj = j / g;
                if (i == j)
                    continue;
                if (qi == qj || (abs(qi - qj) == 1 && i % g == j % g)) {
                    p->lat[a * n + b] = 0.2e-3;
                    p->bw[a * n + b] = 100.0 * GBPS;
                }
            }
    }
    free(perm);
    free(site);
    return UTIL_OK;
}

int dtfm_generate_regional(util_pcg32 *rng, int n, int d_pp, dtfm_problem *p,
                           util_error *err)
{
    int nreg, *reg, i, j, rc;
    double rl[4][4], rb[4][4];

    memset(p, 0, sizeof *p);
    if (n < 2 || n > 4096 || d_pp < 1 || n % d_pp != 0)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "expected 2..4096 devices in d_pp >= 1 equal "
                              "groups, got %d devices and d_pp %d", n, d_pp);
    reg = malloc((size_t)n * sizeof *reg);
    if (reg == NULL)
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    if ((rc = dtfm_problem_alloc(p, n, d_pp, 0, err)) != UTIL_OK) {
        free(reg);
        return rc;
    }
    p->c_pp = 0.512e9;
    p->c_dp = 0.65e9;
    nreg = 2 + (int)util_pcg32_bounded(rng, 3);
    for (i = 0; i < nreg; i++)
        for (j = i; j < nreg; j++) {
            rl[i][j] = rl[j][i] = i == j ? 5e-3 : 0.01 + 0.24 * util_pcg32_double(rng);
            rb[i][j] = rb[j][i] = (i == j ? 2.0 : 0.3 + util_pcg32_double(rng)) * GBPS;
        }
    for (i = 0; i < n; i++)
        reg[i] = (int)util_pcg32_bounded(rng, (uint32_t)nreg);
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++) {
            double f = 0.8 + 0.4 * util_pcg32_double(rng);
            if (i == j)
                continue;
            p->lat[i * n + j] = rl[reg[i]][reg[j]] * f;
            p->bw[i * n + j] = rb[reg[i]][reg[j]] / f;
        }
    free(reg);
    return UTIL_OK;
}

/* ---- lower bound ----------------------------------------------------- */

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static int cmp_asc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sum of the m smallest of v[0..len-1], added in ascending order
 * (partial selection for small m, else a sort; v reordered). */
static double sum_smallest(double *v, int len, int m)
{
    double s = 0.0;
    int i, j;

    if (m > 16) {
        qsort(v, (size_t)len, sizeof *v, cmp_asc);
        for (i = 0; i < m && i < len; i++)
            s += v[i];
        return s;
    }
    for (i = 0; i < m && i < len; i++) {
        int b = i;
        for (j = i + 1; j < len; j++)
            if (v[j] < v[b])
                b = j;
        double t = v[i];
        v[i] = v[b];
        v[b] = t;
        s += v[i];
    }
    return s;
}

int dtfm_lower_bound(const dtfm_problem *p, dtfm_bound *b, util_error *err)
{
    int n = p->n, k = p->d_pp, g = p->d_dp, rc, d, e, t;
    size_t nn = (size_t)n * (size_t)n;
    double *wdp = NULL, *wpp = NULL, *row = NULL, *nu = NULL;

    memset(b, 0, sizeof *b);
    if ((rc = dtfm_problem_check(p, err)) != UTIL_OK)
        return rc;
    wdp = malloc(nn * sizeof *wdp);
    wpp = malloc(nn * sizeof *wpp);
    row = malloc((size_t)n * sizeof *row);
    nu = malloc((size_t)n * sizeof *nu);
    if (!wdp || !wpp || !row || !nu) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    dtfm_weights(p, wdp, wpp);
    for (d = 0; d < n; d++) {
        int len = 0;
        double lo = DBL_MAX, s;
        for (e = 0; e < n; e++)
            if (e != d) {
                size_t de = (size_t)d * (size_t)n + (size_t)e;
                row[len++] = wdp[de];
                if (wpp[de] < lo)
                    lo = wpp[de];
            }
        /* eq. 2: d's row sum in any group of g devices is at least the sum
         * of its g - 1 lightest w_dp terms; DataP-Cost is a max over all
         * devices, so it is at least every device's bound */
        s = sum_smallest(row, len, g - 1);
        if (s > b->dp_s)
            b->dp_s = s;
        /* eq. 3: every device sends to (or receives from) some device of a
         * neighbouring stage, so every edge at an end of d's group is at
         * least d's lightest w_pp term */
        nu[d] = n > 1 ? lo : 0.0;
    }
    /* eq. 4: the path's k - 1 edges, each charged to its first stage, cost
     * at least the sum of mu(C) = max nu over C for all stages but one, the
     * one with the largest mu.  With nu sorted descending the stage holding
     * the (t g)-th device has mu >= nu_(t g) for t = 0..k-1 (the t g + 1
     * largest fill at least t + 1 groups), so PP >= sum_{t=1}^{k-1} nu_(tg). */
    qsort(nu, (size_t)n, sizeof *nu, cmp_desc);
    for (t = 1; t < k; t++)
        b->pp_s += nu[t * g];
    if (p->compute) {
        /* compute: sum over stages of the slowest member, same argument */
        for (d = 0; d < n; d++)
            row[d] = p->compute[d];
        qsort(row, (size_t)n, sizeof *row, cmp_desc);
        for (t = 0; t < k; t++)
            b->compute_s += row[t * g];
    }
    b->total_s = b->dp_s + b->pp_s + b->compute_s;
    rc = UTIL_OK;
done:
    free(wdp);
    free(wpp);
    free(row);
    free(nu);
    return rc;
}
