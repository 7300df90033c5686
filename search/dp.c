/* search/dp.c: pipeline layer assignment (AMP section 3.5, eq. 5).
 *
 * Minimise (gas - 1) * max_j t_j + sum_j t_j + sum_j e_j over splits of
 * L layers into k consecutive non-empty stages.  Let f(M) be the least
 * sum_j (t_j + e_j) with every t_j <= M.  f(M) takes O(k * L) with a
 * sliding-window minimum; the optimum is found by a descending sweep
 * over bottleneck values, see docs/algorithms.md. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* relative tolerance under which two objectives count as equal */
#define DP_TIE SEARCH_DP_TIE
/* relative slack of the pruning bounds (covers rounding of sums) */
#define DP_SLACK 1e-10
/* the bisection on the bottleneck stops at this relative width */
#define DP_BISECT_REL (1.0 / 32.0)
#define DP_BISECT_MAX 64

typedef struct dp_ctx {
    const search_dp_input *in;
    int L, k;
    size_t n1;              /* L + 1, row stride */
    double *P;              /* k * n1 prefix sums of t per stage */
    double *Q;              /* k * n1 prefix sums of mem, NULL = no limit */
    double *g;              /* k * n1 cost to go: g[j][i] for layers [i, L) */
    double *val;            /* n1 window values of the current stage */
    int *dq;                /* n1 monotone deque of window positions */
    int *cur;               /* k + 1 bounds of the last reconstruction */
    int *bal;               /* k + 1 bounds of the best balanced split */
    double A;               /* least stage time allowed (balancing), 0 = none */
    double M;               /* most memory a stage may take besides its cap
                               (peak-memory ties), HUGE_VAL = none */
    int *rlo, *rhi;         /* k: hull of the starts each stage can have with
                               every stage time in [A, T] (dp_reach) */
    int *blo;               /* k: least start from which the rest can end */
    void *own;              /* the arrays' block when not a caller's scratch */
} dp_ctx;

static int dp_bad(double x)
{
    return !(x >= 0.0) || isinf(x);
}

int search_dp_validate(const search_dp_input *in, util_error *err)
{
    size_t L, k, j, l;

    if (in == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "missing assignment input");
    if (in->L < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "layers must be at least 1, got %d", in->L);
    if (in->L == INT_MAX)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "too many layers: %d", in->L);
    if (in->k < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "stages must be at least 1, got %d", in->k);
    if (in->gas < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "micro-batches must be at least 1, got %d",
                              in->gas);
    if (in->t == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "missing layer times");
    L = (size_t)in->L;
    k = (size_t)in->k;
    if (k > SIZE_MAX / sizeof(double) / (L + 1))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "%d stages of %d layers is too large",
                              in->k, in->L);
    if (in->L < in->k)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "%d layers cannot fill %d non-empty stages",
                              in->L, in->k);
    for (j = 0; j < k; j++) {
        for (l = 0; l < L; l++) {
            if (dp_bad(in->t[j * L + l]))
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "time of layer %zu on stage %zu is "
                                      "negative or not finite", l, j);
            if (in->mem != NULL && dp_bad(in->mem[j * L + l]))
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "memory of layer %zu on stage %zu is "
                                      "negative or not finite", l, j);
        }
        if (in->cap != NULL && isnan(in->cap[j]))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "memory cap of stage %zu is not a number",
                                  j);
    }
    if (in->e != NULL) {
        for (j = 0; j + 1 < k; j++)
            for (l = 0; l <= L; l++)
                if (dp_bad(in->e[j * (L + 1) + l]))
                    return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                          "cut cost before layer %zu after "
                                          "stage %zu is negative or not "
                                          "finite", l, j);
    }
    return UTIL_OK;
}

/* bounds[0] = 0 < bounds[1] < ... < bounds[k] = L */
static int dp_bounds_ok(const search_dp_input *in, const int *b)
{
    int j;

    if (b[0] != 0 || b[in->k] != in->L)
        return 0;
    for (j = 0; j < in->k; j++)
        if (b[j + 1] <= b[j])
            return 0;
    return 1;
}

double search_dp_objective(const search_dp_input *in, const int *bounds)
{
    size_t L, j, l;
    double tj, mx = 0.0, sum = 0.0;

    if (in == NULL || bounds == NULL || in->t == NULL || in->L < 1 ||
        in->k < 1 || in->gas < 1 || !dp_bounds_ok(in, bounds))
        return NAN;
    L = (size_t)in->L;
    for (j = 0; j < (size_t)in->k; j++) {
        tj = 0.0;
        for (l = (size_t)bounds[j]; l < (size_t)bounds[j + 1]; l++)
            tj += in->t[j * L + l];
        if (tj > mx)
            mx = tj;
        sum += tj;
        if (in->e != NULL && j + 1 < (size_t)in->k)
            sum += in->e[j * (L + 1) + (size_t)bounds[j + 1]];
    }
    return (double)(in->gas - 1) * mx + sum;
}

int search_dp_fits(const search_dp_input *in, const int *bounds)
{
    size_t L, j, l;
    double m;

    if (in == NULL || bounds == NULL || in->L < 1 || in->k < 1 ||
        !dp_bounds_ok(in, bounds))
        return 0;
    if (in->mem == NULL || in->cap == NULL)
        return 1;
    L = (size_t)in->L;
    for (j = 0; j < (size_t)in->k; j++) {
        m = 0.0;
        for (l = (size_t)bounds[j]; l < (size_t)bounds[j + 1]; l++)
            m += in->mem[j * L + l];
        if (!(m <= in->cap[j]))
            return 0;
    }
    return 1;
}

/* 1 when a is lexicographically smaller than b (n entries) */
static int dp_lex_less(const int *a, const int *b, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return 0;
}

/* Keep cand in (best, *bestv) when better, or as good and lex smaller. */
static void dp_consider(const search_dp_input *in, const int *cand,
                        int *best, double *bestv, int *have)
{
    double v = search_dp_objective(in, cand);
    double tol;
    size_t n = (size_t)in->k + 1;

    if (!*have) {
        memcpy(best, cand, n * sizeof *best);
        *bestv = v;
        *have = 1;
        return;
    }
    tol = DP_TIE * fmax(fabs(v), fabs(*bestv));
    if (v < *bestv - tol ||
        (v <= *bestv + tol && dp_lex_less(cand, best, in->k + 1))) {
        memcpy(best, cand, n * sizeof *best);
        *bestv = v;
    }
}

static double dp_cut(const dp_ctx *c, int j, int i)
{
    if (c->in->e == NULL)
        return 0.0;
    return c->in->e[(size_t)j * c->n1 + (size_t)i];
}

/* Memory stage j may take: its cap, at most M (neither is NaN). */
static double dp_cap_of(const dp_ctx *c, int j)
{
    return c->in->cap[j] < c->M ? c->in->cap[j] : c->M;
}

/* Layers [a, b) fit on stage j under bottleneck T and memory. */
static int dp_seg_ok(const dp_ctx *c, int j, int a, int b, double T)
{
    size_t o = (size_t)j * c->n1;

    if (c->P[o + (size_t)b] - c->P[o + (size_t)a] > T)
        return 0;
    if (c->Q != NULL &&
        c->Q[o + (size_t)b] - c->Q[o + (size_t)a] > dp_cap_of(c, j))
        return 0;
    return 1;
}

/* The starts stage j can have when every stage takes time in [A, T]
 * (memory aside) lie in [rlo[j], rhi[j]]: the smallest grows from the
 * smallest, the largest from the largest, since a stage's time only
 * shrinks as its start moves right; no start below blo[j] can end at L.
 * 0 when some stage has none: then no split fits. */
static int dp_reach(dp_ctx *c, double T)
{
    int L = c->L, k = c->k, j, a = 0, b = 0, lo, hi, emax, i;

    /* backwards, the least start from which stages j.. can end at L
     * with every time at most T: stage j ends at or after blo[j + 1],
     * and the least start for an end only grows with the end */
    b = L;
    for (j = k - 1; j >= 0; j--) {
        const double *pj = c->P + (size_t)j * c->n1;
        for (i = b; i - 1 >= j && pj[b] - pj[i - 1] <= T; i--)
            ;
        c->blo[j] = b = i;
    }
    if (c->blo[0] > 0)
        return 0;
    b = 0;
    c->rlo[0] = c->rhi[0] = 0;
    for (j = 0; j + 1 < k; j++) {
        const double *pj = c->P + (size_t)j * c->n1;
        emax = L - k + j + 1;
        for (lo = a + 1; lo <= emax && pj[lo] - pj[a] < c->A; lo++)
            ;
        for (hi = b; hi + 1 <= emax && pj[hi + 1] - pj[b] <= T; hi++)
            ;
        if (lo > hi)
            return 0;
        c->rlo[j + 1] = a = lo;
        c->rhi[j + 1] = b = hi;
    }
    return 1;
}

/* Row j of g to HUGE_VAL: with dp_reach's hull, only the entries that
 * row j - 1 and dp_rebuild read (the ends of a stage j - 1 that starts
 * in the hull and takes at most T). */
static void dp_clear(dp_ctx *c, double *gj, int j)
{
    int i, lo = j == 0 ? 0 : c->rlo[j - 1] + 1, hi = j == 0 ? 0 : c->rhi[j];

    for (i = lo; i <= hi; i++)
        gj[i] = HUGE_VAL;
}

/* f(T): fills g, returns g[0][0] (HUGE_VAL when nothing fits).  Stage j
 * may start at i in [j, L - k + j] and end at i2 in [i + 1, L - k + j + 1];
 * the feasible ends form a window whose both sides only move right as i
 * grows, so a monotone deque gives each minimum in amortised O(1).  Only
 * the starts of dp_reach are computed: the others cannot lie on a split
 * that fits, every value a fitting split reads comes from starts it
 * reaches, and starts below blo stay HUGE_VAL as they would, so g[0][0]
 * and dp_rebuild are unchanged. */
static double dp_solve(dp_ctx *c, double T)
{
    int L = c->L, k = c->k, j, i, next, head, tail, imax, emax, i0;
    size_t n1 = c->n1;
    double *gj, *gn, *val = c->val, v, capj = HUGE_VAL;
    const double *pj, *qj = NULL, *ej = NULL;
    int *dq = c->dq;

    if (!dp_reach(c, T))
        return HUGE_VAL;

    gj = c->g + (size_t)(k - 1) * n1;
    pj = c->P + (size_t)(k - 1) * n1;
    dp_clear(c, gj, k - 1);
    for (i = L - 1; i >= k - 1 && dp_seg_ok(c, k - 1, i, L, T); i--)
        if (pj[L] - pj[i] >= c->A)
            gj[i] = pj[L] - pj[i];
    for (j = k - 2; j >= 0; j--) {
        gj = c->g + (size_t)j * n1;
        gn = gj + n1;
        pj = c->P + (size_t)j * n1;
        if (c->Q != NULL) {
            qj = c->Q + (size_t)j * n1;
            capj = dp_cap_of(c, j);
        }
        if (c->in->e != NULL)
            ej = c->in->e + (size_t)j * n1;
        imax = L - k + j;
        emax = imax + 1;
        dp_clear(c, gj, j);
        head = tail = 0;
        i0 = c->rlo[j] > j ? c->rlo[j] : j;
        if (c->blo[j] > i0)
            i0 = c->blo[j];
        imax = c->rhi[j] < imax ? c->rhi[j] : imax;
        next = i0 + 1;
        for (i = i0; i <= imax; i++) {
            if (next <= i)
                next = i + 1;
            /* same tests as dp_seg_ok, same sums as dp_rebuild */
            while (next <= emax && pj[next] - pj[i] <= T &&
                   (qj == NULL || qj[next] - qj[i] <= capj)) {
                if (gn[next] < HUGE_VAL) {
                    v = pj[next] + (ej != NULL ? ej[next] : 0.0) + gn[next];
                    val[next] = v;
                    while (tail > head && val[dq[tail - 1]] > v)
                        tail--;
                    dq[tail++] = next;
                }
                next++;
            }
            /* ends below the least stage time only get further below */
            while (tail > head && (dq[head] <= i || pj[dq[head]] - pj[i] < c->A))
                head++;
            if (tail > head)
                gj[i] = val[dq[head]] - pj[i];
        }
    }
    return c->g[0];
}

/* After dp_solve(c, T): lexicographically smallest bounds among those of
 * least sum, into c->cur; returns their bottleneck (prefix sums). */
static double dp_rebuild(dp_ctx *c, double T)
{
    int L = c->L, k = c->k, j, i = 0, i2, pick, emax;
    size_t n1 = c->n1;
    const double *gj, *gn, *pj;
    double target, v, mx = 0.0;

    c->cur[0] = 0;
    for (j = 0; j + 1 < k; j++) {
        gj = c->g + (size_t)j * n1;
        gn = gj + n1;
        pj = c->P + (size_t)j * n1;
        target = gj[i];
        emax = L - k + j + 1;
        pick = emax;    /* not reached: the minimum itself qualifies */
        for (i2 = i + 1; i2 <= emax && dp_seg_ok(c, j, i, i2, T); i2++) {
            if (!(gn[i2] < HUGE_VAL) || pj[i2] - pj[i] < c->A)
                continue;
            v = pj[i2] + dp_cut(c, j, i2) + gn[i2];
            if (v - pj[i] <= target + DP_TIE * fabs(target)) {
                pick = i2;
                break;
            }
        }
        mx = fmax(mx, pj[pick] - pj[i]);
        c->cur[j + 1] = pick;
        i = pick;
    }
    pj = c->P + (size_t)(k - 1) * n1;
    mx = fmax(mx, pj[L] - pj[i]);
    c->cur[k] = L;
    return mx;
}

/* Every stage time is at least max_l min_j t[j][l] and the k stage
 * times add up to at least sum_l min_j t[j][l]. */
static double dp_cheap_lower(const search_dp_input *in)
{
    size_t L = (size_t)in->L, j, l;
    double mn, mx = 0.0, sum = 0.0;

    for (l = 0; l < L; l++) {
        mn = in->t[l];
        for (j = 1; j < (size_t)in->k; j++)
            mn = fmin(mn, in->t[j * L + l]);
        mx = fmax(mx, mn);
        sum += mn;
    }
    return fmax(mx, sum / (double)in->k);
}

void *search_scratch_get(search_scratch *b, size_t bytes)
{
    if (bytes > b->cap) {
        void *g = realloc(b->p, bytes);
        if (g == NULL)
            return NULL;
        b->p = g;
        b->cap = bytes;
    }
    return b->p;
}

static void dp_free(dp_ctx *c)
{
    free(c->own);
}

/* The context of in, its arrays in one block from buf (NULL: its own). */
static int dp_init(dp_ctx *c, const search_dp_input *in, search_scratch *buf)
{
    size_t j, l, L = (size_t)in->L, k = (size_t)in->k, n1 = L + 1;
    size_t nd = (3 * k + 1) * n1, ni = n1 + 2 * (k + 1) + 3 * k;
    double s, m, *d;
    int *z;

    memset(c, 0, sizeof *c);
    c->in = in;
    c->M = HUGE_VAL;
    c->L = in->L;
    c->k = in->k;
    c->n1 = n1;
    if (nd > (SIZE_MAX - ni * sizeof(int)) / sizeof(double))
        return UTIL_ENOMEM;
    d = buf != NULL ? search_scratch_get(buf, nd * sizeof *d + ni * sizeof *z)
                    : (c->own = malloc(nd * sizeof *d + ni * sizeof *z));
    if (d == NULL)
        return UTIL_ENOMEM;
    z = (int *)(d + nd);
    c->P = d;
    c->g = d + k * n1;
    c->val = d + 3 * k * n1;
    if (in->mem != NULL && in->cap != NULL)
        c->Q = d + 2 * k * n1;
    c->dq = z;
    c->cur = z + n1;
    c->bal = c->cur + k + 1;
    c->rlo = c->bal + k + 1;
    c->rhi = c->rlo + k;
    c->blo = c->rhi + k;
    for (j = 0; j < k; j++) {
        s = 0.0;
        m = 0.0;
        c->P[j * n1] = 0.0;
        if (c->Q != NULL)
            c->Q[j * n1] = 0.0;
        for (l = 0; l < L; l++) {
            s += in->t[j * L + l];
            c->P[j * n1 + l + 1] = s;
            if (c->Q != NULL) {
                m += in->mem[j * L + l];
                c->Q[j * n1 + l + 1] = m;
            }
        }
    }
    return UTIL_OK;
}

/* Largest bottleneck worth trying once the best objective is bestv and
 * every remaining split has sum_j (t_j + e_j) >= sum_lb. */
static double dp_cap(double bestv, double sum_lb, int gas)
{
    return (bestv * (1.0 + DP_SLACK) - sum_lb) / (double)(gas - 1);
}

/* Best split for gas > 1 and k > 1, given the unconstrained solve (least
 * sum f_inf, bottleneck bneck) already kept in (best, *bestv). */
static void dp_sweep(dp_ctx *c, double f_inf, double bneck, int *best,
                     double *bestv, int *have, search_dp_stats *st)
{
    const search_dp_input *in = c->in;
    double gm1 = (double)(in->gas - 1), lo, hi, mid, f, T, prev;

    /* bisection on the bottleneck: raises lo (no split has max <= lo
     * once a probe fails) and finds a good split early; it stops once a
     * feasible probe no longer improves the best objective */
    lo = dp_cheap_lower(in);
    hi = bneck;
    while (hi - lo > DP_BISECT_REL * hi && st->solves < DP_BISECT_MAX) {
        mid = lo + 0.5 * (hi - lo);
        f = dp_solve(c, mid);
        st->solves++;
        if (!(f < HUGE_VAL)) {
            lo = mid;
            continue;
        }
        hi = dp_rebuild(c, mid);
        prev = *bestv;
        dp_consider(in, c->cur, best, bestv, have);
        if (!(*bestv < prev))
            break;
    }

    /* descending sweep: least sum under T, then strictly below its
     * bottleneck; nothing above dp_cap can win */
    T = fmin(nextafter(bneck, -HUGE_VAL), dp_cap(*bestv, f_inf, in->gas));
    while (T >= lo) {
        f = dp_solve(c, T);
        st->solves++;
        st->steps++;
        if (!(f < HUGE_VAL))
            break;
        bneck = dp_rebuild(c, T);
        dp_consider(in, c->cur, best, bestv, have);
        /* the rest has bottleneck >= lo and sum >= f */
        if (gm1 * lo + f > *bestv * (1.0 + DP_SLACK))
            break;
        T = fmin(nextafter(bneck, -HUGE_VAL), dp_cap(*bestv, f, in->gas));
    }
}

/* Largest and smallest stage time of bounds b (prefix sums). */
static void dp_range(const dp_ctx *c, const int *b, double *mx, double *mn)
{
    int j;

    *mx = 0.0;
    *mn = HUGE_VAL;
    for (j = 0; j < c->k; j++) {
        const double *pj = c->P + (size_t)j * c->n1;
        double t = pj[b[j + 1]] - pj[b[j]];
        *mx = fmax(*mx, t);
        *mn = fmin(*mn, t);
    }
}

/* Balanced ties: among the splits as good as the best (within DP_TIE)
 * with no stage above its bottleneck B, the one whose smallest stage
 * time is largest (bisection on that least time A: the DP then admits
 * stages in [A, B] only), then least sum, then lexicographically
 * smallest.  Equal layers on equal stages end up with counts that differ
 * by at most one. */
static void dp_balance(dp_ctx *c, int *best, double *bestv, search_dp_stats *st)
{
    const search_dp_input *in = c->in;
    double B, lo, hi, mid, v, mx, mn;
    int have = 0, it;
    size_t n = (size_t)c->k + 1;

    dp_range(c, best, &B, &lo);
    hi = B;
    for (it = 0; it < 40 && hi - lo > 1e-9 * hi; it++) {
        mid = lo + 0.5 * (hi - lo);
        c->A = mid;
        st->solves++;
        if (dp_solve(c, B) < HUGE_VAL) {
            dp_rebuild(c, B);
            v = search_dp_objective(in, c->cur);
            if (v <= *bestv + DP_TIE * fabs(*bestv)) {
                dp_range(c, c->cur, &mx, &mn);
                lo = fmax(mn, mid);
                memcpy(c->bal, c->cur, n * sizeof *c->bal);
                have = 1;
                continue;
            }
        }
        hi = mid;
    }
    c->A = 0.0;
    if (have) {
        memcpy(best, c->bal, n * sizeof *best);
        *bestv = search_dp_objective(in, best);
    }
}

/* Largest stage memory of bounds b (prefix sums); 0 without memory. */
static double dp_peak(const dp_ctx *c, const int *b)
{
    double mx = 0.0;
    int j;

    for (j = 0; c->Q != NULL && j < c->k; j++) {
        const double *qj = c->Q + (size_t)j * c->n1;
        mx = fmax(mx, qj[b[j + 1]] - qj[b[j]]);
    }
    return mx;
}

/* Split under memory bound M (window [c->A, B]) into c->bal when it is
 * as good as (objective, sum) and returns 1; *peak its peak memory. */
static int dp_peak_probe(dp_ctx *c, double B, double M, double bestv,
                         double sum0, double tol, double *peak,
                         search_dp_stats *st)
{
    double v, mx, mn;

    c->M = M;
    st->solves++;
    if (!(dp_solve(c, B) < HUGE_VAL))
        return 0;
    dp_rebuild(c, B);
    v = search_dp_objective(c->in, c->cur);
    dp_range(c, c->cur, &mx, &mn);
    if (v > bestv + tol || v - (double)(c->in->gas - 1) * mx > sum0 + tol)
        return 0;
    *peak = dp_peak(c, c->cur);
    memcpy(c->bal, c->cur, ((size_t)c->k + 1) * sizeof *c->bal);
    return 1;
}

/* After dp_balance: among the splits as good as best, with its stage
 * times' range [A, B] (as balanced) and its sum, the one of least peak
 * stage memory, then the lexicographically smallest.  A bisection on a
 * memory bound M, then a descending sweep over the peaks reached (each
 * strictly lower than the last) until none is left below. */
/* Least peak stage memory over the splits whose stage times all lie in
 * [c->A, B] and whose stages fit their caps, by the tests of dp_solve
 * (min over ends of max(stage memory, rest)): a probe under a memory
 * bound below it cannot succeed.  HUGE_VAL when no split qualifies; -1
 * when unknown (A = 0, or windows so wide that the probes cost less).
 * Uses g as scratch. */
static double dp_least_peak(dp_ctx *c, double B)
{
    int L = c->L, k = c->k, j, i, i2, emax, lo, hi;
    size_t n1 = c->n1;
    long work = 0, budget = 4L * (long)k * (long)n1;
    double *h, *hn, v, p, q;
    const double *pj, *qj;

    if (!(c->A > 0.0))
        return -1.0;
    if (!dp_reach(c, B))
        return HUGE_VAL;
    h = c->g + (size_t)(k - 1) * n1;
    pj = c->P + (size_t)(k - 1) * n1;
    qj = c->Q + (size_t)(k - 1) * n1;
    for (i = c->rlo[k - 1]; i <= c->rhi[k - 1]; i++) {
        p = pj[L] - pj[i];
        q = qj[L] - qj[i];
        h[i] = i < L && p <= B && !(p < c->A) && q <= c->in->cap[k - 1] ? q : HUGE_VAL;
    }
    for (j = k - 2; j >= 0; j--) {
        h = c->g + (size_t)j * n1;
        hn = h + n1;
        pj = c->P + (size_t)j * n1;
        qj = c->Q + (size_t)j * n1;
        emax = L - k + j + 1;
        lo = c->rlo[j];
        hi = c->rhi[j] < emax - 1 ? c->rhi[j] : emax - 1;
        for (i = lo; i <= c->rhi[j]; i++)
            h[i] = HUGE_VAL;
        for (i = lo; i <= hi; i++)
            for (i2 = i + 1; i2 <= emax; i2++) {
                if (++work > budget)
                    return -1.0;
                p = pj[i2] - pj[i];
                q = qj[i2] - qj[i];
                if (p > B || !(q <= c->in->cap[j]))
                    break;
                if (p < c->A)
                    continue;
                /* i2 starts stage j + 1 within its hull */
                v = fmax(q, hn[i2]);
                if (v < h[i])
                    h[i] = v;
            }
    }
    return c->g[0];
}

static void dp_lowpeak(dp_ctx *c, int *best, double *bestv, search_dp_stats *st)
{
    const search_dp_input *in = c->in;
    double B, A, lo = 0.0, hi, mid, sum0, tol, least;
    int it, found = 0;

    if (c->Q == NULL)
        return;
    dp_range(c, best, &B, &A);
    hi = dp_peak(c, best);
    c->A = A;
    sum0 = *bestv - (double)(in->gas - 1) * B;
    tol = DP_TIE * fmax(fabs(*bestv), fabs(sum0));
    /* probes below the least peak any split reaches fail: skipped */
    least = dp_least_peak(c, B);
    /* no qualifying split has peak <= lo; best reaches hi */
    for (it = 0; it < 40 && hi - lo > 1e-9 * hi; it++) {
        mid = lo + 0.5 * (hi - lo);
        if (mid >= least && dp_peak_probe(c, B, mid, *bestv, sum0, tol, &hi, st))
            found = 1;
        else
            lo = mid;
    }
    for (it = 0; it < 64; it++) {
        mid = nextafter(hi, -HUGE_VAL);
        if (!(mid > lo) || !(mid >= least) ||
            !dp_peak_probe(c, B, mid, *bestv, sum0, tol, &hi, st))
            break;
        found = 1;
    }
    /* the last probe may have admitted peaks above the least: again at
     * exactly the least, for the lexicographically smallest */
    if (found)
        found = dp_peak_probe(c, B, hi, *bestv, sum0, tol, &hi, st);
    c->M = HUGE_VAL;
    c->A = 0.0;
    if (found) {
        memcpy(best, c->bal, ((size_t)c->k + 1) * sizeof *best);
        *bestv = search_dp_objective(in, best);
    }
}

static int dp_assign(const search_dp_input *in, int *bounds, double *objective,
                     search_dp_stats *stats, search_scratch *buf, util_error *err)
{
    dp_ctx c;
    search_dp_stats st = {0, 0};
    int rc, have = 0;
    double f_inf, bneck, bestv = HUGE_VAL;

    memset(&c, 0, sizeof c);
    if (bounds == NULL || objective == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "missing bounds or objective output");
        goto cleanup;
    }
    rc = search_dp_validate(in, err);
    if (rc != UTIL_OK)
        goto cleanup;
    rc = dp_init(&c, in, buf);
    if (rc != UTIL_OK) {
        util_error_set(err, rc, NULL, NULL,
                       "no memory for %d stages of %d layers", in->k, in->L);
        goto cleanup;
    }
    /* unconstrained: least sum, and the answer when gas == 1 */
    f_inf = dp_solve(&c, HUGE_VAL);
    st.solves++;
    if (!(f_inf < HUGE_VAL)) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no split of %d layers into %d stages fits "
                            "memory", in->L, in->k);
        goto cleanup;
    }
    bneck = dp_rebuild(&c, HUGE_VAL);
    dp_consider(in, c.cur, bounds, &bestv, &have);
    if (in->gas > 1 && in->k > 1)
        dp_sweep(&c, f_inf, bneck, bounds, &bestv, &have, &st);
    if (in->k > 1) {
        dp_balance(&c, bounds, &bestv, &st);
        dp_lowpeak(&c, bounds, &bestv, &st);
    }
    *objective = bestv;
cleanup:
    if (stats != NULL)
        *stats = st;
    dp_free(&c);
    return rc;
}

int search_dp_assign_stats(const search_dp_input *in, int *bounds,
                           double *objective, search_dp_stats *stats,
                           util_error *err)
{
    return dp_assign(in, bounds, objective, stats, NULL, err);
}

int search_dp_assign(const search_dp_input *in, int *bounds,
                     double *objective, util_error *err)
{
    return dp_assign(in, bounds, objective, NULL, NULL, err);
}

int search_dp_assign_scratch(const search_dp_input *in, int *bounds,
                             double *objective, search_scratch *buf,
                             util_error *err)
{
    return dp_assign(in, bounds, objective, NULL, buf, err);
}
