/* tests/test_search_dp.c: pipeline layer assignment against the test's own
 * exhaustive search of AMP eq. 5,
 * an independent slow DP, hand-worked cases and bad input. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../search/search.h" /* search/, not util/util.h */
#include "util.h"
#include "search.h"
#include "testutil.h"

/* A random instance with owned arrays. */
typedef struct inst {
    search_dp_input in;
    double *t, *e, *mem, *cap;
    int integral;           /* every time and cut cost is an integer */
} inst;

static void inst_free(inst *x)
{
    free(x->t);
    free(x->e);
    free(x->mem);
    free(x->cap);
    memset(x, 0, sizeof *x);
}

static double rnd(util_pcg32 *r)
{
    return util_pcg32_double(r);
}

static int rint_below(util_pcg32 *r, int n)
{
    return (int)util_pcg32_bounded(r, (uint32_t)n);
}

/* Layer times by mode: 0 uniform, 1 heavy-tailed, 2 small integers
 * (many ties), 3 one integer repeated (all layers tie). */
static double base_time(util_pcg32 *r, int mode, double one)
{
    double u;

    switch (mode) {
    case 0:
        return rnd(r);
    case 1:
        u = rnd(r);
        return 0.01 / (0.01 + u * u * u) + (rint_below(r, 10) == 0 ? 50.0 : 0.0);
    case 2:
        return (double)rint_below(r, 5);
    default:
        return one;
    }
}

static void inst_random(inst *x, util_pcg32 *r, int L, int k, int gas,
                        int with_mem)
{
    int mode = rint_below(r, 4), j, l, emode;
    double one = (double)(1 + rint_below(r, 3));
    double *speed = malloc((size_t)k * sizeof *speed);
    double *base = malloc((size_t)L * sizeof *base);
    double *mbase = malloc((size_t)L * sizeof *mbase);
    double total = 0.0;

    ck_assert(speed && base && mbase);
    memset(x, 0, sizeof *x);
    x->integral = mode >= 2;
    for (j = 0; j < k; j++)
        speed[j] = x->integral ? (double)(1 + rint_below(r, 4))
                               : 1.0 + 3.0 * rnd(r);
    for (l = 0; l < L; l++)
        base[l] = base_time(r, mode, one);
    x->t = malloc((size_t)(k * L) * sizeof *x->t);
    ck_assert_ptr_nonnull(x->t);
    for (j = 0; j < k; j++)
        for (l = 0; l < L; l++)
            x->t[j * L + l] = base[l] * speed[j];

    emode = rint_below(r, 3);  /* 0: none, 1: random, 2: integer */
    if (emode != 0 && k > 1) {
        x->e = malloc((size_t)((k - 1) * (L + 1)) * sizeof *x->e);
        ck_assert_ptr_nonnull(x->e);
        for (l = 0; l < (k - 1) * (L + 1); l++)
            x->e[l] = emode == 1 ? 2.0 * rnd(r) : (double)rint_below(r, 4);
        if (emode == 1)
            x->integral = 0;
    }
    if (with_mem) {
        for (l = 0; l < L; l++) {
            mbase[l] = (double)(1 + rint_below(r, 5));
            total += mbase[l];
        }
        x->mem = malloc((size_t)(k * L) * sizeof *x->mem);
        x->cap = malloc((size_t)k * sizeof *x->cap);
        ck_assert(x->mem && x->cap);
        for (j = 0; j < k; j++) {
            for (l = 0; l < L; l++)
                x->mem[j * L + l] = mbase[l];
            /* from too tight to roomy: some instances are infeasible */
            x->cap[j] = floor(total / k * (0.6 + 2.0 * rnd(r)));
        }
    }
    x->in.L = L;
    x->in.k = k;
    x->in.gas = gas;
    x->in.t = x->t;
    x->in.e = x->e;
    x->in.mem = x->mem;
    x->in.cap = x->cap;
    free(speed);
    free(base);
    free(mbase);
}

static int bounds_valid(const int *b, int k, int L)
{
    int j;

    if (b[0] != 0 || b[k] != L)
        return 0;
    for (j = 0; j < k; j++)
        if (b[j + 1] <= b[j])
            return 0;
    return 1;
}

static int close_rel(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fmax(1.0, fmax(fabs(a), fabs(b)));
}

static void solve_ok(const search_dp_input *in, int *b, double *o);

/* ---- the test's own oracle ------------------------------------------
 * Written here from AMP eq. 5, sharing no code with search/dp.c:
 *   (gas - 1) * max_j t_j + sum_j t_j + sum_j e_j,
 * t_j the sum of stage j's layer times on stage j's device, e_j the cost
 * of the cut at bounds[j + 1] between stages j and j + 1. */
static double oracle_objective(const search_dp_input *in, const int *b)
{
    double mx = 0.0, sum = 0.0;
    int j, l;

    for (j = 0; j < in->k; j++) {
        double tj = 0.0;
        for (l = b[j]; l < b[j + 1]; l++)
            tj += in->t[j * in->L + l];
        mx = tj > mx ? tj : mx;
        sum += tj;
        if (in->e && j + 1 < in->k)
            sum += in->e[j * (in->L + 1) + b[j + 1]];
    }
    return (in->gas - 1) * mx + sum;
}

/* Every stage's layers within its device's memory. */
static int oracle_fits(const search_dp_input *in, const int *b)
{
    int j, l;

    if (in->mem == NULL || in->cap == NULL)
        return 1;
    for (j = 0; j < in->k; j++) {
        double m = 0.0;
        for (l = b[j]; l < b[j + 1]; l++)
            m += in->mem[j * in->L + l];
        if (m > in->cap[j])
            return 0;
    }
    return 1;
}

/* Every split of L layers into k non-empty stages, in lexicographic
 * order of the bounds (stage j's first layer chosen in increasing order,
 * recursively): the least objective among those that fit (HUGE_VAL when
 * none does) and, in best, the first split that reaches it exactly. */
static void oracle_walk(const search_dp_input *in, int *b, int j, double *bestv,
                        int *best)
{
    int first;

    if (j == in->k) {
        double v;
        if (!oracle_fits(in, b))
            return;
        v = oracle_objective(in, b);
        if (v < *bestv) {
            *bestv = v;
            memcpy(best, b, (size_t)(in->k + 1) * sizeof *b);
        }
        return;
    }
    /* stage j starts at b[j]; stage j + 1 at first, leaving at least one
     * layer to each later stage */
    for (first = b[j] + 1; first <= in->L - (in->k - j - 1); first++) {
        if (j + 1 == in->k && first != in->L)
            continue;
        b[j + 1] = first;
        oracle_walk(in, b, j + 1, bestv, best);
    }
}

static double oracle_optimum(const search_dp_input *in, int *best)
{
    int b[16];
    double bestv = HUGE_VAL;

    ck_assert_int_lt(in->k, 16);
    b[0] = 0;
    oracle_walk(in, b, 0, &bestv, best);
    return bestv;
}

/* Stage j of split b: its time *t (without cut costs) and memory *m
 * (0 without in->mem); the return value is the cost of its outgoing cut
 * (0 for the last stage or without in->e). */
static double oracle_stage(const search_dp_input *in, const int *b, int j,
                           double *t, double *m)
{
    int l;

    *t = 0.0;
    *m = 0.0;
    for (l = b[j]; l < b[j + 1]; l++) {
        *t += in->t[j * in->L + l];
        if (in->mem != NULL)
            *m += in->mem[j * in->L + l];
    }
    return in->e != NULL && j + 1 < in->k ? in->e[j * (in->L + 1) + b[j + 1]] : 0.0;
}

/* Stage times and stage memory of a split: the largest and smallest
 * stage time (without cut costs), the sum of stage times and cut costs,
 * and the peak stage memory. */
static void oracle_stats(const search_dp_input *in, const int *b, double *mx,
                         double *mn, double *sum, double *peak)
{
    int j;

    *mx = 0.0;
    *mn = HUGE_VAL;
    *sum = 0.0;
    *peak = 0.0;
    for (j = 0; j < in->k; j++) {
        double t, m, cut = oracle_stage(in, b, j, &t, &m);
        *mx = fmax(*mx, t);
        *mn = fmin(*mn, t);
        *sum += t;
        *sum += cut;
        *peak = fmax(*peak, m);
    }
}

/* The documented tie rule (search.h, search_dp_assign) applied by brute
 * force to exact (integer) instances: among the optimal splits whose
 * bottleneck is not above that of the lexicographically first optimum
 * (first, from oracle_optimum), the largest smallest stage, then the
 * least sum, then (with memory) the least peak stage memory, then the
 * lexicographically first.  Each pass walks every split again. */
typedef struct tie_oracle {
    const search_dp_input *in;
    double opt, B0, amax, smin, pmin;
    int pass;
    int best[16];
    int found;
} tie_oracle;

static void tie_visit(tie_oracle *o, const int *b)
{
    double mx, mn, sum, peak;

    if (!oracle_fits(o->in, b) || oracle_objective(o->in, b) != o->opt)
        return;
    oracle_stats(o->in, b, &mx, &mn, &sum, &peak);
    if (mx > o->B0)
        return;
    if (o->in->k > 1 && o->pass > 0 && mn < o->amax)
        return;
    if (o->pass > 1 && sum > o->smin)
        return;
    if (o->pass > 2 && o->in->k > 1 && o->in->mem != NULL && o->in->cap != NULL &&
        peak > o->pmin)
        return;
    switch (o->pass) {
    case 0: o->amax = o->in->k > 1 ? fmax(o->amax, mn) : 0.0; break;
    case 1: o->smin = fmin(o->smin, sum); break;
    case 2: o->pmin = fmin(o->pmin, peak); break;
    default:
        if (!o->found) {
            memcpy(o->best, b, (size_t)(o->in->k + 1) * sizeof *b);
            o->found = 1;
        }
    }
}

static void tie_walk_all(tie_oracle *o, int *b, int j)
{
    int first;

    if (j == o->in->k) {
        tie_visit(o, b);
        return;
    }
    for (first = b[j] + 1; first <= o->in->L - (o->in->k - j - 1); first++) {
        if (j + 1 == o->in->k && first != o->in->L)
            continue;
        b[j + 1] = first;
        tie_walk_all(o, b, j + 1);
    }
}

static void oracle_tie(const search_dp_input *in, const int *first, int *best)
{
    tie_oracle o;
    double mn, sum, peak;
    int b[16];

    memset(&o, 0, sizeof o);
    o.in = in;
    o.opt = oracle_objective(in, first);
    oracle_stats(in, first, &o.B0, &mn, &sum, &peak);
    o.amax = -HUGE_VAL;
    o.smin = HUGE_VAL;
    o.pmin = HUGE_VAL;
    for (o.pass = 0; o.pass <= 3; o.pass++) {
        b[0] = 0;
        tie_walk_all(&o, b, 0);
    }
    ck_assert(o.found);
    memcpy(best, o.best, (size_t)(in->k + 1) * sizeof *best);
}

/* The enumeration itself, checked by hand: L = 4 layers, k = 2 stages,
 * gas = 3, times 1 2 3 4 on stage 0 and twice that on stage 1, no cut
 * cost.  Splits: [1 | 2 3 4] -> t = 1, 18: 2 * 18 + 19 = 55;
 * [1 2 | 3 4] -> 3, 14: 2 * 14 + 17 = 45; [1 2 3 | 4] -> 6, 8: 2 * 8 + 14
 * = 30.  Optimum 30 at bounds {0, 3, 4}. */
START_TEST(test_oracle_by_hand)
{
    const double t[] = {1, 2, 3, 4, 2, 4, 6, 8};
    search_dp_input in = {4, 2, 3, t, NULL, NULL, NULL};
    int best[3], b[3];
    double o;

    ck_assert_double_eq(oracle_optimum(&in, best), 30.0);
    ck_assert_int_eq(best[1], 3);
    solve_ok(&in, b, &o);
    ck_assert_double_eq_tol(o, 30.0, 1e-12);
    ck_assert_int_eq(b[1], 3);
}
END_TEST

START_TEST(test_random_vs_bruteforce)
{
    util_pcg32 r;
    int it, L, k, gas, rc1, rc2, infeasible = 0, same = 0, integral = 0;
    int b1[7], b2[7], bo[7];
    double o1, o2, oo;
    util_error e1, e2;
    inst x;

    util_pcg32_seed(&r, 20240601u, 1u);
    for (it = 0; it < 3000; it++) {
        L = 1 + rint_below(&r, 11);
        k = 1 + rint_below(&r, L < 6 ? L : 6);
        gas = 1 + rint_below(&r, 12);
        inst_random(&x, &r, L, k, gas, rint_below(&r, 2));
        memset(&e1, 0, sizeof e1);
        memset(&e2, 0, sizeof e2);
        rc1 = search_dp_assign(&x.in, b1, &o1, &e1);
        rc2 = search_dp_bruteforce(&x.in, b2, &o2, &e2);
        oo = oracle_optimum(&x.in, bo);
        ck_assert_msg(rc1 == rc2, "instance %d: dp rc %d, brute rc %d",
                      it, rc1, rc2);
        /* the oracle finds no split exactly when the DP reports none */
        ck_assert_msg((rc1 == UTIL_EINFEASIBLE) == !(oo < HUGE_VAL),
                      "instance %d: dp rc %d, oracle %g", it, rc1, oo);
        if (rc1 == UTIL_EINFEASIBLE) {
            infeasible++;
            ck_assert(e1.code == UTIL_EINFEASIBLE && e1.msg[0] != '\0');
            inst_free(&x);
            continue;
        }
        ck_assert_int_eq(rc1, UTIL_OK);
        ck_assert(bounds_valid(b1, k, L));
        /* against the test's own oracle: the split fits, its objective is
         * the one reported, and it is the least of all splits */
        ck_assert(oracle_fits(&x.in, b1));
        ck_assert_msg(close_rel(oracle_objective(&x.in, b1), o1, 1e-12),
                      "instance %d: reported %.17g, the split's objective %.17g",
                      it, o1, oracle_objective(&x.in, b1));
        ck_assert_msg(close_rel(o1, oo, 1e-9),
                      "instance %d (L %d k %d gas %d): dp %.17g oracle %.17g",
                      it, L, k, gas, o1, oo);
        /* the library's brute force (a public function) agrees too */
        ck_assert_msg(close_rel(o2, oo, 1e-9), "instance %d: brute %.17g oracle "
                      "%.17g", it, o2, oo);
        if (memcmp(b1, bo, (size_t)(k + 1) * sizeof *b1) == 0)
            same++;
        if (x.integral) {
            /* exact arithmetic: the DP's tie-break must be the
             * documented rule, applied here by brute force */
            int bt[7];
            integral++;
            oracle_tie(&x.in, bo, bt);
            ck_assert_msg(memcmp(b1, bt, (size_t)(k + 1) * sizeof *b1) == 0,
                          "instance %d: integer tie broken differently", it);
            ck_assert(memcmp(b2, bt, (size_t)(k + 1) * sizeof *b2) == 0);
        }
        inst_free(&x);
    }
    /* the generator must exercise both outcomes and many ties */
    ck_assert_int_gt(infeasible, 50);
    ck_assert_int_gt(integral, 500);
    ck_assert_int_gt(same, 2000);
}
END_TEST

/* Independent reference: min over every stage time M of
 * (gas - 1) * M + f(M), f by the plain O(k L^2) recurrence. */
static double slow_optimum(const search_dp_input *in)
{
    int L = in->L, k = in->k, j, a, b, n = 0, m, lo;
    double *cand = malloc((size_t)(k * L * (L + 1) / 2 + 1) * sizeof *cand);
    double *f = malloc((size_t)((k + 1) * (L + 1)) * sizeof *f);
    double best = HUGE_VAL, M, s, mm, v, ecut;

    ck_assert(cand && f);
    for (j = 0; j < k; j++)
        for (a = 0; a < L; a++) {
            s = 0.0;
            for (b = a; b < L; b++) {
                s += in->t[j * L + b];
                cand[n++] = s;
            }
        }
    for (m = 0; m < n; m++) {
        M = cand[m];
        /* f[j][i]: first j stages cover layers [0, i) */
        for (a = 0; a < (k + 1) * (L + 1); a++)
            f[a] = HUGE_VAL;
        f[0] = 0.0;
        for (j = 1; j <= k; j++)
            for (b = j; b <= L; b++)
                for (a = j - 1; a < b; a++) {
                    if (!(f[(j - 1) * (L + 1) + a] < HUGE_VAL))
                        continue;
                    s = 0.0;
                    mm = 0.0;
                    for (lo = a; lo < b; lo++) {
                        s += in->t[(j - 1) * L + lo];
                        if (in->mem && in->cap)
                            mm += in->mem[(j - 1) * L + lo];
                    }
                    if (s > M * (1.0 + 1e-12))
                        continue;
                    if (in->mem && in->cap && mm > in->cap[j - 1])
                        continue;
                    ecut = (j >= 2 && in->e) ? in->e[(j - 2) * (L + 1) + a]
                                             : 0.0;
                    v = f[(j - 1) * (L + 1) + a] + s + ecut;
                    if (v < f[j * (L + 1) + b])
                        f[j * (L + 1) + b] = v;
                }
        v = f[k * (L + 1) + L];
        if (v < HUGE_VAL && (in->gas - 1) * M + v < best)
            best = (in->gas - 1) * M + v;
    }
    free(cand);
    free(f);
    return best;
}

START_TEST(test_random_vs_slow_reference)
{
    util_pcg32 r;
    int it, L, k, gas, b[11], rc;
    double o, ref;
    inst x;

    util_pcg32_seed(&r, 777u, 5u);
    for (it = 0; it < 60; it++) {
        L = 12 + rint_below(&r, 19);
        k = 2 + rint_below(&r, 9);
        gas = 2 + rint_below(&r, 15);
        inst_random(&x, &r, L, k, gas, rint_below(&r, 2));
        rc = search_dp_assign(&x.in, b, &o, NULL);
        ref = slow_optimum(&x.in);
        if (rc == UTIL_EINFEASIBLE) {
            ck_assert(!(ref < HUGE_VAL));
        } else {
            ck_assert_int_eq(rc, UTIL_OK);
            ck_assert(bounds_valid(b, k, L));
            ck_assert(search_dp_fits(&x.in, b));
            ck_assert_msg(close_rel(o, ref, 1e-9),
                          "instance %d: dp %.17g reference %.17g", it, o, ref);
        }
        inst_free(&x);
    }
}
END_TEST

static void solve_ok(const search_dp_input *in, int *b, double *o)
{
    util_error err;
    int rc = search_dp_assign(in, b, o, &err);

    ck_assert_msg(rc == UTIL_OK, "rc %d: %s", rc, err.msg);
}

START_TEST(test_hand_cases)
{
    double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    double mem[8] = {1, 1, 1, 1, 1, 1, 1, 1}, cap[2] = {1, 4};
    double cut[5] = {0, 0, 10, 0, 0};
    double het[12] = {2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1};
    double zeros[64] = {0};
    search_dp_input in;
    int b[7];
    double o;

    /* 4 equal layers, 2 stages: balanced */
    memset(&in, 0, sizeof in);
    in.L = 4;
    in.k = 2;
    in.gas = 4;
    in.t = ones;
    solve_ok(&in, b, &o);
    ck_assert(b[0] == 0 && b[1] == 2 && b[2] == 4);
    ck_assert_double_eq_tol(o, 3 * 2 + 4, 1e-12);

    /* an expensive cut in the middle pushes the boundary: [0,1,4] and
     * [0,3,4] both cost 7, the lexicographically smaller wins */
    in.gas = 2;
    in.e = cut;
    solve_ok(&in, b, &o);
    ck_assert(b[1] == 1);
    ck_assert_double_eq_tol(o, 7.0, 1e-12);

    /* memory: stage 0 holds one layer only */
    in.e = NULL;
    in.gas = 4;
    in.mem = mem;
    in.cap = cap;
    solve_ok(&in, b, &o);
    ck_assert(b[1] == 1);
    ck_assert_double_eq_tol(o, 3 * 3 + 4, 1e-12);
    ck_assert(search_dp_fits(&in, b));
    {
        int bal[3] = {0, 2, 4};
        ck_assert(!search_dp_fits(&in, bal));
        ck_assert_double_eq_tol(search_dp_objective(&in, bal), 10.0, 1e-12);
    }

    /* stage 1 twice as fast: large gas balances time, 2 + 4 layers */
    memset(&in, 0, sizeof in);
    in.L = 6;
    in.k = 2;
    in.gas = 100;
    in.t = het;
    solve_ok(&in, b, &o);
    ck_assert(b[1] == 2);
    ck_assert_double_eq_tol(o, 99 * 4 + 8, 1e-12);
    /* gas 1 minimises the sum: everything but one layer on the fast stage */
    in.gas = 1;
    solve_ok(&in, b, &o);
    ck_assert(b[1] == 1);
    ck_assert_double_eq_tol(o, 7.0, 1e-12);

    /* one stage */
    memset(&in, 0, sizeof in);
    in.L = 5;
    in.k = 1;
    in.gas = 3;
    in.t = ones;
    solve_ok(&in, b, &o);
    ck_assert(b[0] == 0 && b[1] == 5);
    ck_assert_double_eq_tol(o, 15.0, 1e-12);

    /* as many stages as layers */
    in.L = 6;
    in.k = 6;
    in.gas = 8;
    in.t = zeros;
    solve_ok(&in, b, &o);
    ck_assert(b[0] == 0 && b[1] == 1 && b[5] == 5 && b[6] == 6);

    /* all zero: every split ties, lexicographically smallest wins */
    in.L = 12;
    in.k = 3;
    solve_ok(&in, b, &o);
    ck_assert(b[0] == 0 && b[1] == 1 && b[2] == 2 && b[3] == 12);
    ck_assert_double_eq(o, 0.0);
}
END_TEST

START_TEST(test_errors)
{
    double t[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    double bad[8] = {1, 1, 1, 1, 1, -1, 1, 1};
    double nan8[8] = {1, 1, NAN, 1, 1, 1, 1, 1}, enan[5] = {0, 0, NAN, 0, 0};
    double mem[8] = {1, 1, 1, 1, 1, 1, 1, 1}, tiny[2] = {0.5, 4};
    double cnan[2] = {NAN, 1}, mneg[8] = {1, -2, 1, 1, 1, 1, 1, 1};
    search_dp_input in;
    util_error err;
    int b[5], good[3] = {0, 2, 4}, badb[3] = {0, 4, 4};
    double o;

    memset(&in, 0, sizeof in);
    in.L = 4;
    in.k = 2;
    in.gas = 2;
    in.t = t;
    ck_assert_int_eq(search_dp_assign(NULL, b, &o, &err), UTIL_EINVAL);
    ck_assert_int_eq(err.code, UTIL_EINVAL);
    ck_assert(err.msg[0] != '\0');
    ck_assert_int_eq(search_dp_assign(&in, NULL, &o, &err), UTIL_EINVAL);
    ck_assert_int_eq(search_dp_assign(&in, b, NULL, &err), UTIL_EINVAL);
    ck_assert_int_eq(search_dp_bruteforce(&in, NULL, &o, &err), UTIL_EINVAL);
    ck_assert_int_eq(search_dp_assign(&in, b, &o, NULL), UTIL_OK);

    in.L = 0;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.L = 4;
    in.k = 0;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.k = 2;
    in.gas = 0;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.gas = 2;
    in.t = NULL;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.t = bad;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    ck_assert_int_eq(search_dp_bruteforce(&in, b, &o, &err), UTIL_EINVAL);
    in.t = nan8;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.t = t;
    in.e = enan;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.e = NULL;
    in.mem = mneg;
    in.cap = tiny;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);
    in.mem = mem;
    in.cap = cnan;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINVAL);

    /* infeasible: cap below one layer, or fewer layers than stages */
    in.cap = tiny;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINFEASIBLE);
    ck_assert_int_eq(err.code, UTIL_EINFEASIBLE);
    ck_assert(err.msg[0] != '\0');
    ck_assert_int_eq(search_dp_bruteforce(&in, b, &o, &err),
                     UTIL_EINFEASIBLE);
    in.mem = NULL;
    in.cap = NULL;
    in.k = 5;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_EINFEASIBLE);
    ck_assert_int_eq(search_dp_bruteforce(&in, b, &o, &err),
                     UTIL_EINFEASIBLE);

    /* objective and fits reject malformed bounds */
    in.k = 2;
    ck_assert_double_eq_tol(search_dp_objective(&in, good), 6.0, 1e-12);
    ck_assert(isnan(search_dp_objective(&in, badb)));
    ck_assert(isnan(search_dp_objective(NULL, good)));
    ck_assert(!search_dp_fits(&in, badb));
    ck_assert(search_dp_fits(&in, good));
}
END_TEST

static void large_case(int L, int k, unsigned seed, int with_mem)
{
    util_pcg32 r;
    inst x;
    int *b = malloc((size_t)(k + 1) * sizeof *b);
    int *u = malloc((size_t)(k + 1) * sizeof *u);
    int j, rc;
    double o;
    search_dp_stats st;
    util_error err;

    ck_assert(b && u);
    util_pcg32_seed(&r, seed, 3u);
    inst_random(&x, &r, L, k, 8, with_mem);
    for (j = 0; j <= k; j++)
        u[j] = (int)((long)j * L / k);
    if (with_mem) {
        /* caps bind, yet leave room for the uniform split */
        for (j = 0; j < k; j++) {
            double m = 0.0;
            int l;

            for (l = u[j]; l < u[j + 1]; l++)
                m += x.mem[j * L + l];
            x.cap[j] = m * (1.0 + 0.5 * rnd(&r));
        }
        ck_assert(search_dp_fits(&x.in, u));
    }
    rc = search_dp_assign_stats(&x.in, b, &o, &st, &err);
    ck_assert_msg(rc == UTIL_OK, "rc %d: %s", rc, err.msg);
    ck_assert(bounds_valid(b, k, L));
    ck_assert(search_dp_fits(&x.in, b));
    ck_assert(st.solves >= 1);
    ck_assert(o <= search_dp_objective(&x.in, u) * (1.0 + 1e-12));
    ck_assert(close_rel(search_dp_objective(&x.in, b), o, 1e-12));
    inst_free(&x);
    free(b);
    free(u);
}

START_TEST(test_large)
{
    unsigned s;

    for (s = 1; s <= 4; s++) {
        large_case(128, 64, s, 0);
        large_case(256, 64, s, 0);
    }
    large_case(256, 64, 9u, 1);
    large_case(30, 16, 10u, 0);
}
END_TEST

/* ---- balanced ties ---------------------------------------------------- */

/* Oracle written here, not the library's: stage j's time, the AMP eq. 5
 * objective (gas - 1) max_j t_j + sum_j t_j + sum of cuts, and memory. */
typedef struct oracle_split {
    double obj, mx, mn;
    int fits;
} oracle_split;

static oracle_split oracle_eval(const search_dp_input *in, const int *b)
{
    oracle_split o = {0.0, 0.0, HUGE_VAL, 1};
    double sum = 0.0;
    int j;

    for (j = 0; j < in->k; j++) {
        double t, m, cut = oracle_stage(in, b, j, &t, &m);
        if (in->mem != NULL && in->cap != NULL && m > in->cap[j])
            o.fits = 0;
        if (t > o.mx)
            o.mx = t;
        if (t < o.mn)
            o.mn = t;
        sum += t;
        sum += cut;
    }
    o.obj = (double)(in->gas - 1) * o.mx + sum;
    return o;
}

/* Every split of L layers into k stages, by recursion on the bounds. */
static void tie_walk(const search_dp_input *in, int *b, int j,
                        void (*visit)(void *, const int *), void *ctx)
{
    int i;

    if (j == in->k) {
        visit(ctx, b);
        return;
    }
    for (i = b[j - 1] + 1; i <= in->L - (in->k - j); i++) {
        b[j] = i;
        tie_walk(in, b, j + 1, visit, ctx);
    }
}

typedef struct oracle_ctx {
    const search_dp_input *in;
    double best, cap_mx, best_mn;   /* pass 2: largest smallest stage */
    int pass;
} oracle_ctx;

static void oracle_visit(void *p, const int *b)
{
    oracle_ctx *x = p;
    oracle_split o = oracle_eval(x->in, b);

    if (!o.fits)
        return;
    if (x->pass == 1) {
        if (o.obj < x->best)
            x->best = o.obj;
    } else if (o.obj <= x->best * (1.0 + 1e-9) && o.mx <= x->cap_mx * (1.0 + 1e-12) &&
               o.mn > x->best_mn) {
        x->best_mn = o.mn;
    }
}

/* 105 equal layers (the 530B model's blocks, Narayanan et al. 2021) over
 * k equal stages: the optimum holds ceil(105 / k) layers at the
 * bottleneck, objective (gas - 1) ceil(105 / k) + 105, e.g. k = 20:
 * 7 * 6 + 105 = 147; every balanced split reaches it, and the planner
 * must pick one: stage counts differ by at most one. */
START_TEST(test_balanced_equal_layers)
{
    static const int ks[] = {2, 8, 10, 16, 20, 25, 35, 52, 64, 105};
    double t[105 * 105];
    int b[106], i, j, k, cnt, lo, hi;
    search_dp_input in;
    double o;
    util_error err;

    for (i = 0; i < 105 * 105; i++)
        t[i] = 1.0;
    for (i = 0; i < (int)(sizeof ks / sizeof ks[0]); i++) {
        k = ks[i];
        memset(&in, 0, sizeof in);
        in.L = 105;
        in.k = k;
        in.gas = 8;
        in.t = t;
        ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_OK);
        ck_assert_double_eq_tol(o, 7.0 * ((105 + k - 1) / k) + 105.0, 1e-9);
        lo = 105;
        hi = 0;
        for (j = 0; j < k; j++) {
            cnt = b[j + 1] - b[j];
            lo = cnt < lo ? cnt : lo;
            hi = cnt > hi ? cnt : hi;
        }
        ck_assert_msg(hi - lo <= 1, "k %d: stages hold %d to %d layers", k, lo, hi);
    }
    /* k = 20 by hand: 105 = 5 * 6 + 15 * 5 */
    in.k = 20;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_OK);
    ck_assert_double_eq_tol(o, 147.0, 1e-9);
}
END_TEST

/* Balanced ties go to the lower peak memory: 3 layers of time 1 on 2
 * equal stages, gas 4.  Both 1 | 2 and 2 | 1 have bottleneck 2, least
 * stage 1, sum 3, objective 3 * 2 + 3 = 9.  Layer memory 1, 1, 5 (both
 * stages): 1 | 2 peaks at 1 + 5 = 6, 2 | 1 at 5, so bounds {0, 2, 3},
 * not the lexicographically smaller {0, 1, 3}; with memory 5, 1, 1 the
 * peaks are 5 and 6 and {0, 1, 3} stays. */
START_TEST(test_balanced_low_peak)
{
    double t[6] = {1, 1, 1, 1, 1, 1}, mem[6], cap[2] = {100, 100}, o;
    static const double m1[3] = {1, 1, 5}, m2[3] = {5, 1, 1};
    search_dp_input in;
    util_error err;
    int b[3], j;

    memset(&in, 0, sizeof in);
    in.L = 3;
    in.k = 2;
    in.gas = 4;
    in.t = t;
    in.mem = mem;
    in.cap = cap;
    for (j = 0; j < 6; j++)
        mem[j] = m1[j % 3];
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_OK);
    ck_assert_double_eq_tol(o, 9.0, 1e-12);
    ck_assert_int_eq(b[1], 2);
    for (j = 0; j < 6; j++)
        mem[j] = m2[j % 3];
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_OK);
    ck_assert_double_eq_tol(o, 9.0, 1e-12);
    ck_assert_int_eq(b[1], 1);
    /* without memory the lexicographic rule decides */
    in.mem = NULL;
    in.cap = NULL;
    ck_assert_int_eq(search_dp_assign(&in, b, &o, &err), UTIL_OK);
    ck_assert_int_eq(b[1], 1);
}
END_TEST

/* Random small instances against the oracle above: the same optimum,
 * and no optimal split with the same bottleneck has a larger smallest
 * stage than the one returned. */
START_TEST(test_balanced_vs_oracle)
{
    util_pcg32 r;
    int it, L, k, gas, b[8], w[8], checked = 0;
    double o;
    util_error err;
    inst x;

    util_pcg32_seed(&r, 777u, 3u);
    for (it = 0; it < 1500; it++) {
        oracle_ctx ox;
        oracle_split got;
        L = 2 + rint_below(&r, 10);
        k = 2 + rint_below(&r, L - 1 < 5 ? L - 1 : 5);
        gas = 1 + rint_below(&r, 10);
        inst_random(&x, &r, L, k, gas, rint_below(&r, 2));
        if (search_dp_assign(&x.in, b, &o, &err) != UTIL_OK) {
            inst_free(&x);
            continue;
        }
        memset(&ox, 0, sizeof ox);
        ox.in = &x.in;
        ox.best = HUGE_VAL;
        ox.pass = 1;
        w[0] = 0;
        w[k] = L;
        tie_walk(&x.in, w, 1, oracle_visit, &ox);
        got = oracle_eval(&x.in, b);
        ck_assert(got.fits);
        ck_assert_msg(close_rel(got.obj, ox.best, 1e-9),
                      "instance %d: dp %.17g oracle %.17g", it, got.obj, ox.best);
        ox.pass = 2;
        ox.cap_mx = got.mx;
        ox.best_mn = -HUGE_VAL;
        tie_walk(&x.in, w, 1, oracle_visit, &ox);
        ck_assert_msg(got.mn >= ox.best_mn - 1e-9 * fmax(1.0, ox.best_mn),
                      "instance %d: smallest stage %.17g, oracle finds %.17g",
                      it, got.mn, ox.best_mn);
        checked++;
        inst_free(&x);
    }
    ck_assert_int_gt(checked, 1000);
}
END_TEST

static Suite *dp_suite(void)
{
    Suite *s = suite_create("dp");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_oracle_by_hand);
    tcase_add_test(tc, test_random_vs_bruteforce);
    tcase_add_test(tc, test_random_vs_slow_reference);
    tcase_add_test(tc, test_hand_cases);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_large);
    tcase_add_test(tc, test_balanced_equal_layers);
    tcase_add_test(tc, test_balanced_vs_oracle);
    tcase_add_test(tc, test_balanced_low_peak);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(dp_suite());
}
