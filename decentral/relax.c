/* decentral/relax.c: a lower bound from a coarser instance.  Devices are
 * grouped into clusters (single linkage on the eq. 3 weights); every
 * pair of two clusters gets the smallest latency and the largest
 * bandwidth (each the mean of the two directions, as the weights use
 * them) of any pair between them (and every device its cluster's
 * smallest compute time).  Each eq. 2 and eq. 3 weight only falls, and
 * eq. 2 (a max of sums), eq. 3 (a bottleneck matching) and eq. 4 (a
 * shortest path) never rise when weights fall, so every schedule costs
 * no more there: the coarse instance's optimum, which the exact search
 * over classes (decentral/classes.c) finds, bounds the original's. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RX_MAX 32 /* clusters (dtfm_prove's class limit) */

static int find(int *parent, int a)
{
    while (parent[a] != a)
        a = parent[a] = parent[parent[a]];
    return a;
}

/* Compositions of g over the cluster sizes, counting stops above cap. */
static long count(const int *size, int nc, int q, int left, long cap)
{
    long t = 0;
    int v;

    if (q == nc - 1)
        return left <= size[q] ? 1 : 0;
    for (v = 0; v <= left && v <= size[q] && t <= cap; v++)
        t += count(size, nc, q + 1, left - v, cap);
    return t;
}

typedef struct rx_edge {
    double w;
    int a, b;
} rx_edge;

static int cmp_edge(const void *x, const void *y)
{
    const rx_edge *a = x, *b = y;
    if (a->w != b->w)
        return (a->w > b->w) - (a->w < b->w);
    return a->a != b->a ? a->a - b->a : a->b - b->b;
}

int dtfm_relaxed_bound(const dtfm_problem *p, const dtfm_prove_params *pp,
                       dtfm_proof *out, int *clusters, util_error *err)
{
    int n = p->n, rc, i, j, nc = n, *parent = NULL, *cl = NULL, size[RX_MAX];
    size_t nn = (size_t)n * (size_t)n, ne = 0, e;
    double *wdp = NULL, *wpp = NULL;
    rx_edge *edges = NULL;
    dtfm_problem q;

    memset(&q, 0, sizeof q);
    memset(out, 0, sizeof *out);
    *clusters = 0;
    if ((rc = dtfm_problem_check(p, err)) != UTIL_OK)
        return rc;
    wdp = malloc(nn * sizeof *wdp);
    wpp = malloc(nn * sizeof *wpp);
    parent = malloc((size_t)n * sizeof *parent);
    cl = malloc((size_t)n * sizeof *cl);
    edges = malloc((nn / 2 + 1) * sizeof *edges);
    if (!wdp || !wpp || !parent || !cl || !edges) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    dtfm_weights(p, wdp, wpp);
    for (i = 0; i < n; i++) {
        parent[i] = i;
        for (j = i + 1; j < n; j++) {
            edges[ne].w = wpp[(size_t)i * (size_t)n + (size_t)j];
            edges[ne].a = i;
            edges[ne++].b = j;
        }
    }
    qsort(edges, ne, sizeof *edges, cmp_edge);
    /* merge along the lightest links until few enough clusters compose
     * few enough stages */
    for (e = 0;; e++) {
        if (nc <= RX_MAX) {
            int k = 0;
            for (i = 0; i < n; i++)
                if (find(parent, i) == i)
                    cl[i] = k++;
            for (i = 0; i < nc; i++)
                size[i] = 0;
            for (i = 0; i < n; i++)
                size[cl[find(parent, i)]]++;
            if (nc == 1 ||
                count(size, nc, 0, p->d_dp, pp->max_compositions) <= pp->max_compositions)
                break;
        }
        for (; e < ne; e++) {
            int a = find(parent, edges[e].a), b = find(parent, edges[e].b);
            if (a != b) {
                parent[b] = a;
                nc--;
                break;
            }
        }
    }
    for (i = 0; i < n; i++)
        cl[i] = cl[find(parent, i)];
    *clusters = nc;
    /* the coarse instance: per cluster pair the fastest link, both ways */
    if ((rc = dtfm_problem_alloc(&q, n, p->d_pp, p->compute != NULL, err)) != UTIL_OK)
        goto done;
    q.c_pp = p->c_pp;
    q.c_dp = p->c_dp;
    {
        double lat[RX_MAX][RX_MAX], bw[RX_MAX][RX_MAX], cmin[RX_MAX];
        int a, b;
        for (a = 0; a < nc; a++) {
            cmin[a] = DBL_MAX;
            for (b = 0; b < nc; b++) {
                lat[a][b] = DBL_MAX;
                bw[a][b] = 0.0;
            }
        }
        for (i = 0; i < n; i++) {
            if (p->compute && p->compute[i] < cmin[cl[i]])
                cmin[cl[i]] = p->compute[i];
            for (j = 0; j < n; j++) {
                double la, bm;
                if (i == j)
                    continue;
                /* the weights use the mean of the two directions */
                la = 0.5 * (dtfm_latency(p, i, j) + dtfm_latency(p, j, i));
                bm = 0.5 * (dtfm_bandwidth(p, i, j) + dtfm_bandwidth(p, j, i));
                a = cl[i];
                b = cl[j];
                if (la < lat[a][b])
                    lat[a][b] = lat[b][a] = la;
                if (bm > bw[a][b])
                    bw[a][b] = bw[b][a] = bm;
            }
        }
        for (i = 0; i < n; i++) {
            if (p->compute)
                q.compute[i] = cmin[cl[i]];
            for (j = 0; j < n; j++)
                if (i != j) {
                    size_t ij = (size_t)i * (size_t)n + (size_t)j;
                    q.lat[ij] = lat[cl[i]][cl[j]];
                    q.bw[ij] = bw[cl[i]][cl[j]];
                }
        }
    }
    {
        dtfm_prove_params qp = *pp;
        qp.upper_s = 0.0; /* the original's costs do not bound the coarse one */
        rc = dtfm_prove(&q, &qp, out, err);
    }
    if (rc == UTIL_OK) {
        /* the coarse schedule is no schedule's cost here: keep the bound */
        free(out->group_of);
        out->group_of = NULL;
    }
done:
    dtfm_problem_free(&q);
    free(wdp);
    free(wpp);
    free(parent);
    free(cl);
    free(edges);
    return rc;
}
