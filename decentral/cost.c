/* decentral/cost.c: the communication cost of a decentralized schedule
 * (DT-FM, Yuan et al., NeurIPS'22, sections 2-3.3): DataP-Cost (eq. 2),
 * the coarsened graph of bottleneck perfect matchings (eq. 3) and
 * PipelineP-Cost as an open-loop TSP over it (eq. 4).  Pure functions. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TSP_STACK_K 8 /* Held-Karp tables up to this size live on the stack */

double dtfm_dp_group(const double *w_dp, int n, const int *members,
                          int m)
{
    double worst = 0.0;
    int i, j;

    /* DT-FM eq. 2: max_{d in C} sum_{d' in C - {d}} 2 (a + c_dp / (D_dp b)) */
    for (i = 0; i < m; i++) {
        const double *row = w_dp + (size_t)members[i] * (size_t)n;
        double s = 0.0;
        for (j = 0; j < m; j++)
            if (j != i)
                s += row[members[j]];
        if (s > worst)
            worst = s;
    }
    return worst;
}

/* ---- bottleneck perfect matching (eq. 3) ----------------------------- */

/* Try to match row u at threshold *t; when the alternating tree from u
 * cannot grow, raise *t to the cheapest edge leaving the tree (a lower
 * bound on the optimum by Hall's condition) and retry.  Scratch arrays
 * have m entries. */
static void bn_augment(const double *w, int m, int u, double *t, int *ml,
                       int *mr, int *prev, char *seen, int *queue)
{
    for (;;) {
        int head = 0, tail = 0, found = -1, x, j;
        double next = DBL_MAX;

        memset(seen, 0, (size_t)m);
        queue[tail++] = u;
        while (head < tail && found < 0) {
            x = queue[head++];
            for (j = 0; j < m; j++) {
                if (seen[j] || w[(size_t)x * (size_t)m + (size_t)j] > *t)
                    continue;
                seen[j] = 1;
                prev[j] = x;
                if (mr[j] < 0) {
                    found = j;
                    break;
                }
                queue[tail++] = mr[j];
            }
        }
        if (found >= 0) {
            j = found;
            while (j >= 0) {
                int row = prev[j], nj = ml[row];
                ml[row] = j;
                mr[j] = row;
                j = row == u ? -1 : nj;
            }
            return;
        }
        for (head = 0; head < tail; head++) {
            x = queue[head];
            for (j = 0; j < m; j++) {
                double v = w[(size_t)x * (size_t)m + (size_t)j];
                if (!seen[j] && v < next)
                    next = v;
            }
        }
        *t = next; /* > *t: every edge <= *t from the tree was seen */
    }
}

double dtfm_bottleneck(const double *w, int m, int *match)
{
    int small_ml[64], small_mr[64], small_prev[64], small_q[64];
    char small_seen[64];
    int *ml = small_ml, *mr = small_mr, *prev = small_prev, *queue = small_q;
    char *seen = small_seen;
    double t = 0.0;
    int i, j;

    if (m <= 0)
        return 0.0;
    if (m > 64) {
        ml = malloc((size_t)m * 4 * sizeof *ml);
        seen = malloc((size_t)m);
        if (ml == NULL || seen == NULL) {
            free(ml);
            free(seen);
            return NAN;
        }
        mr = ml + m;
        prev = mr + m;
        queue = prev + m;
    }
    /* lower bound: every row and every column needs one of its edges */
    for (i = 0; i < m; i++) {
        double rmin = DBL_MAX, cmin = DBL_MAX;
        for (j = 0; j < m; j++) {
            double r = w[(size_t)i * (size_t)m + (size_t)j];
            double c = w[(size_t)j * (size_t)m + (size_t)i];
            if (r < rmin)
                rmin = r;
            if (c < cmin)
                cmin = c;
        }
        if (rmin > t)
            t = rmin;
        if (cmin > t)
            t = cmin;
    }
    for (i = 0; i < m; i++)
        ml[i] = mr[i] = -1;
    for (i = 0; i < m; i++)
        bn_augment(w, m, i, &t, ml, mr, prev, seen, queue);
    if (match)
        memcpy(match, ml, (size_t)m * sizeof *match);
    if (m > 64) {
        free(ml);
        free(seen);
    }
    return t;
}

/* ---- open-loop TSP (eq. 4) ------------------------------------------- */

int dtfm_tsp_exact(const double *w, int k, int *order, double *len)
{
    double stack_dp[(1 << TSP_STACK_K) * TSP_STACK_K];
    unsigned char stack_par[(1 << TSP_STACK_K) * TSP_STACK_K];
    double *dp = stack_dp, best;
    unsigned char *par = stack_par;
    size_t full, mask, nstates;
    int j, x, last, rc = UTIL_OK;

    if (k <= 0 || k > 20) {
        *len = NAN;
        return UTIL_EINVAL;
    }
    if (k == 1) {
        order[0] = 0;
        *len = 0.0;
        return UTIL_OK;
    }
    full = ((size_t)1 << k) - 1;
    nstates = (full + 1) * (size_t)k;
    if (k > TSP_STACK_K) {
        dp = malloc(nstates * sizeof *dp);
        par = malloc(nstates);
        if (dp == NULL || par == NULL) {
            rc = UTIL_ENOMEM;
            *len = NAN;
            goto done;
        }
    }
    for (mask = 0; mask < nstates; mask++)
        dp[mask] = DBL_MAX;
    for (j = 0; j < k; j++) {
        dp[((size_t)1 << j) * (size_t)k + (size_t)j] = 0.0;
        par[((size_t)1 << j) * (size_t)k + (size_t)j] = 0xffu;
    }
    /* Held-Karp: dp[S][j] = shortest path visiting S, ending at j */
    for (mask = 1; mask <= full; mask++) {
        const double *row = dp + mask * (size_t)k;
        for (j = 0; j < k; j++) {
            double base = row[j];
            const double *wj;
            if (base == DBL_MAX || !(mask & ((size_t)1 << j)))
                continue;
            wj = w + (size_t)j * (size_t)k;
            for (x = 0; x < k; x++) {
                size_t nm, idx;
                double v;
                if (mask & ((size_t)1 << x))
                    continue;
                nm = mask | ((size_t)1 << x);
                idx = nm * (size_t)k + (size_t)x;
                v = base + wj[x];
                if (v < dp[idx]) {
                    dp[idx] = v;
                    par[idx] = (unsigned char)j;
                }
            }
        }
    }
    best = DBL_MAX;
    last = 0;
    for (j = 0; j < k; j++)
        if (dp[full * (size_t)k + (size_t)j] < best) {
            best = dp[full * (size_t)k + (size_t)j];
            last = j;
        }
    mask = full;
    for (j = k - 1; j >= 0; j--) {
        int p = par[mask * (size_t)k + (size_t)last];
        order[j] = last;
        mask &= ~((size_t)1 << last);
        last = p;
    }
    *len = best;
done:
    if (dp != stack_dp) {
        free(dp);
        free(par);
    }
    return rc;
}

static double path_len(const double *w, int k, const int *p)
{
    double s = 0.0;
    int i;

    for (i = 0; i + 1 < k; i++)
        s += w[(size_t)p[i] * (size_t)k + (size_t)p[i + 1]];
    return s;
}

/* Change of length when Or-opt moves p[i..i+len) (reversed when rev)
 * before rest[at], rest being the path without the segment (at = k - len
 * appends it): the edges it breaks and makes, O(1). */
static double oropt_delta(const double *w, int k, const int *p, int i, int len,
                          int at, int rev)
{
#define OW(a, b) w[(size_t)(a) * (size_t)k + (size_t)(b)]
#define REST(x) ((x) < i ? p[(x)] : p[(x) + len])
    int first = rev ? p[i + len - 1] : p[i], last = rev ? p[i] : p[i + len - 1], r;
    double d = 0.0;

    if (i > 0)
        d -= OW(p[i - 1], p[i]);
    if (i + len < k)
        d -= OW(p[i + len - 1], p[i + len]);
    if (i > 0 && i + len < k)
        d += OW(p[i - 1], p[i + len]);
    for (r = i; rev && r + 1 < i + len; r++)
        d += OW(p[r + 1], p[r]) - OW(p[r], p[r + 1]);
    if (at > 0 && at < k - len)
        d -= OW(REST(at - 1), REST(at));
    if (at > 0)
        d += OW(REST(at - 1), first);
    if (at < k - len)
        d += OW(last, REST(at));
    return d;
#undef REST
#undef OW
}

/* 2-opt (segment reversal, free ends) and Or-opt (move a segment of 1-3
 * nodes, possibly reversed) until neither improves.  An Or-opt move is
 * measured in O(1) and only a possible gain is built and summed, so a
 * round costs O(k^2). */
static void path_improve(const double *w, int k, int *p, int *tmp)
{
    int improved = 1, i, j, len, at, guard = 0;
    double cur = path_len(w, k, p);

    while (improved && guard++ < 1000) {
        improved = 0;
        for (i = 0; i < k - 1; i++)
            for (j = i + 1; j < k; j++) {
                double d = 0.0;
                int a, b;
                if (i > 0)
                    d += w[(size_t)p[i - 1] * (size_t)k + (size_t)p[j]] -
                         w[(size_t)p[i - 1] * (size_t)k + (size_t)p[i]];
                if (j < k - 1)
                    d += w[(size_t)p[i] * (size_t)k + (size_t)p[j + 1]] -
                         w[(size_t)p[j] * (size_t)k + (size_t)p[j + 1]];
                if (d < -1e-12 * (fabs(cur) + 1e-300)) {
                    for (a = i, b = j; a < b; a++, b--) {
                        int t = p[a];
                        p[a] = p[b];
                        p[b] = t;
                    }
                    cur += d;
                    improved = 1;
                }
            }
        for (len = 1; len <= 3 && len < k; len++)
            for (i = 0; i + len <= k; i++)
                for (at = 0; at <= k - len; at++) {
                    int rev, n2, q, r;
                    if (at == i)
                        continue;
                    for (rev = 0; rev < 2; rev++) {
                        double nl, tol = 1e-12 * (fabs(cur) + 1e-300);
                        /* no gain beyond rounding: the summed length would
                         * not pass the test below either */
                        if (oropt_delta(w, k, p, i, len, at, rev) >= -0.9 * tol)
                            continue;
                        /* rest = path without p[i..i+len); insert at 'at' */
                        n2 = 0;
                        for (q = 0; q < k; q++)
                            if (q < i || q >= i + len) {
                                if (n2 == at)
                                    for (r = 0; r < len; r++)
                                        tmp[n2++] = rev ? p[i + len - 1 - r]
                                                        : p[i + r];
                                tmp[n2++] = p[q];
                            }
                        if (n2 < k)
                            for (r = 0; r < len; r++)
                                tmp[n2++] = rev ? p[i + len - 1 - r] : p[i + r];
                        nl = path_len(w, k, tmp);
                        if (nl < cur - 1e-12 * (fabs(cur) + 1e-300)) {
                            memcpy(p, tmp, (size_t)k * sizeof *p);
                            cur = nl;
                            improved = 1;
                        }
                    }
                }
    }
}

int dtfm_tsp_heuristic(const double *w, int k, int *order, double *len)
{
    int *p = NULL, *tmp = NULL, s, i, j;
    char *used = NULL;
    double best = DBL_MAX, l;
    int rc = UTIL_OK;

    if (k <= 0) {
        *len = NAN;
        return UTIL_EINVAL;
    }
    p = malloc((size_t)k * sizeof *p);
    tmp = malloc((size_t)k * sizeof *tmp);
    used = malloc((size_t)k);
    if (p == NULL || tmp == NULL || used == NULL) {
        rc = UTIL_ENOMEM;
        *len = NAN;
        goto done;
    }
    for (s = 0; s < k; s++) {
        memset(used, 0, (size_t)k);
        p[0] = s;
        used[s] = 1;
        for (i = 1; i < k; i++) {
            int bj = -1;
            double bv = DBL_MAX;
            for (j = 0; j < k; j++)
                if (!used[j] &&
                    w[(size_t)p[i - 1] * (size_t)k + (size_t)j] < bv) {
                    bv = w[(size_t)p[i - 1] * (size_t)k + (size_t)j];
                    bj = j;
                }
            p[i] = bj;
            used[bj] = 1;
        }
        path_improve(w, k, p, tmp);
        l = path_len(w, k, p);
        if (l < best) {
            best = l;
            memcpy(order, p, (size_t)k * sizeof *order);
        }
    }
    *len = best;
done:
    free(p);
    free(tmp);
    free(used);
    return rc;
}

int dtfm_tsp(const double *w, int k, int *order, double *len, int *exact)
{
    if (exact)
        *exact = k <= DTFM_TSP_EXACT_MAX;
    if (k <= DTFM_TSP_EXACT_MAX)
        return dtfm_tsp_exact(w, k, order, len);
    return dtfm_tsp_heuristic(w, k, order, len);
}

/* ---- whole schedule -------------------------------------------------- */

void dtfm_result_free(dtfm_result *r)
{
    if (r == NULL)
        return;
    free(r->members);
    free(r->group_dp_s);
    free(r->order);
    free(r->edge_s);
    free(r->match);
    free(r->chain);
    memset(r, 0, sizeof *r);
}

/* Eq. 2 of a group of m devices, its terms computed from the latency and
 * bandwidth (the sums of dtfm_dp_group, in the same order). */
static double dp_group_direct(const dtfm_problem *p, const int *members, int m)
{
    double worst = 0.0, wd, wp;
    int i, j;

    for (i = 0; i < m; i++) {
        double s = 0.0;
        for (j = 0; j < m; j++)
            if (j != i) {
                dtfm_pair_weights(p, (size_t)members[i], (size_t)members[j], &wd, &wp);
                s += wd;
            }
        if (s > worst)
            worst = s;
    }
    return worst;
}

int dtfm_evaluate(const dtfm_problem *p, const int *group_of,
                       dtfm_result *out, util_error *err)
{
    int rc;

    memset(out, 0, sizeof *out);
    if ((rc = dtfm_problem_check(p, err)) != UTIL_OK)
        return rc;
    return dtfm_evaluate_weights(p, NULL, NULL, group_of, out, err);
}

int dtfm_evaluate_weights(const dtfm_problem *p, const double *w_dp,
                          const double *w_pp, const int *group_of,
                          dtfm_result *out, util_error *err)
{
    int n = p->n, k = p->d_pp, g = p->d_dp, i, j, q, rc = UTIL_OK;
    double *E = NULL, *sub = NULL, len;
    int *relabel = NULL, *fill = NULL, *pos = NULL, *emat = NULL;

    memset(out, 0, sizeof *out);
    E = calloc((size_t)k * (size_t)k, sizeof *E);
    sub = malloc((size_t)g * (size_t)g * sizeof *sub);
    relabel = malloc((size_t)k * sizeof *relabel);
    fill = calloc((size_t)k, sizeof *fill);
    pos = malloc((size_t)n * sizeof *pos);
    emat = malloc((size_t)k * (size_t)k * (size_t)g * sizeof *emat);
    out->members = malloc((size_t)n * sizeof *out->members);
    out->group_dp_s = malloc((size_t)k * sizeof *out->group_dp_s);
    out->order = malloc((size_t)k * sizeof *out->order);
    out->edge_s = malloc((size_t)(k > 1 ? k - 1 : 1) * sizeof *out->edge_s);
    out->match = malloc((size_t)(k > 1 ? k - 1 : 1) * (size_t)g *
                        sizeof *out->match);
    out->chain = malloc((size_t)n * sizeof *out->chain);
    if (!E || !sub || !relabel || !fill || !pos || !emat ||
        !out->members || !out->group_dp_s || !out->order || !out->edge_s ||
        !out->match || !out->chain) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    out->k = k;
    out->g = g;
    /* groups renumbered in order of their smallest device */
    for (q = 0; q < k; q++)
        relabel[q] = -1;
    for (i = 0, j = 0; i < n; i++) {
        int gq = group_of[i];
        if (gq < 0 || gq >= k) {
            rc = util_error_set(err, UTIL_EINVAL, "", "",
                                "expected a group in 0..%d for device %d, "
                                "got %d", k - 1, i, gq);
            goto done;
        }
        if (relabel[gq] < 0)
            relabel[gq] = j++;
        q = relabel[gq];
        if (fill[q] >= g) {
            rc = util_error_set(err, UTIL_EINVAL, "", "",
                                "expected %d devices in every group, group %d "
                                "has more", g, gq);
            goto done;
        }
        pos[i] = fill[q];
        out->members[q * g + fill[q]++] = i;
    }
    out->dp_s = 0.0;
    out->compute_s = 0.0;
    for (q = 0; q < k; q++) {
        out->group_dp_s[q] = w_dp ? dtfm_dp_group(w_dp, n, out->members + q * g, g)
                                  : dp_group_direct(p, out->members + q * g, g);
        if (out->group_dp_s[q] > out->dp_s)
            out->dp_s = out->group_dp_s[q];
        if (p->compute) {
            double worst = 0.0;
            for (i = 0; i < g; i++)
                if (p->compute[out->members[q * g + i]] > worst)
                    worst = p->compute[out->members[q * g + i]];
            /* beyond the paper: each stage waits for its slowest device */
            out->compute_s += worst;
        }
    }
    /* coarsened graph: eq. 3 for every pair of groups */
    for (q = 0; q < k; q++)
        for (j = q + 1; j < k; j++) {
            int a, b;
            for (a = 0; a < g; a++)
                for (b = 0; b < g; b++) {
                    size_t x = (size_t)out->members[q * g + a];
                    size_t y = (size_t)out->members[j * g + b];
                    double wd;
                    if (w_pp)
                        sub[a * g + b] = w_pp[x * (size_t)n + y];
                    else
                        dtfm_pair_weights(p, x, y, &wd, &sub[a * g + b]);
                }
            E[q * k + j] = E[j * k + q] =
                dtfm_bottleneck(sub, g, emat + ((size_t)q * (size_t)k + (size_t)j) * (size_t)g);
            if (isnan(E[q * k + j])) {
                rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
                goto done;
            }
            /* the reverse direction: invert the matching */
            for (a = 0; a < g; a++)
                emat[((size_t)j * (size_t)k + (size_t)q) * (size_t)g +
                     (size_t)emat[((size_t)q * (size_t)k + (size_t)j) * (size_t)g + (size_t)a]] = a;
        }
    rc = dtfm_tsp(E, k, out->order, &len, &out->tsp_exact);
    if (rc != UTIL_OK) {
        rc = util_error_set(err, rc, "", "", "open-loop TSP over %d groups "
                            "failed: %s", k, util_strerror(rc));
        goto done;
    }
    out->pp_s = len; /* DT-FM eq. 4 (edges already carry eq. 3's factor 2) */
    out->total_s = out->dp_s + out->pp_s + out->compute_s; /* DT-FM eq. 1 */
    for (j = 0; j + 1 < k; j++) {
        int a = out->order[j], b = out->order[j + 1];
        const int *m = emat + ((size_t)a * (size_t)k + (size_t)b) * (size_t)g;
        out->edge_s[j] = E[a * k + b];
        for (i = 0; i < g; i++)
            out->match[j * g + i] = out->members[b * g + m[i]];
    }
    for (i = 0; i < g; i++) {
        int d = out->members[out->order[0] * g + i];
        for (j = 0; j < k; j++) {
            out->chain[i * k + j] = d;
            if (j + 1 < k)
                d = out->match[j * g + pos[d]];
        }
    }
done:
    free(E);
    free(sub);
    free(relabel);
    free(fill);
    free(pos);
    free(emat);
    if (rc != UTIL_OK)
        dtfm_result_free(out);
    return rc;
}
