/* calibrate/fit.c: fit the cost model's calibration constants to
 * measured iteration times by least relative absolute deviation, as a
 * sequence of linear programs solved with GLPK (docs/calibration.md).
 *
 * The iteration time T_i(x) of trial i is piecewise affine in the vector
 * x of constants (each one a time multiplier or an added time; the pieces
 * are the choice of bottleneck stage and slowest device).  Each round
 * linearises T_i at the current x (its exact slope on the current piece,
 * by a one-sided difference), solves
 *     min  sum_i |T_i(x) + g_i . (y - x) - m_i| / (n m_i)
 *        + reg sum_k |y_k - neutral_k| / scale_k
 * over y inside the bounds and a trust region, and accepts y when the
 * true objective improves; otherwise the trust region shrinks. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"

enum { P_COMPUTE, P_MBS, P_LINK, P_LAT, P_TPFIX, P_OVERHEAD };

/* One fitted constant in LP coordinates. */
typedef struct cparam {
    int kind;       /* P_* */
    int idx;        /* device type (in cal) or link class */
    double lo, hi;  /* physical bounds */
    double neutral; /* value that leaves the model unchanged */
    double scale;   /* typical size, for the regularisation */
    int free_;      /* 1 when some trial's time depends on it */
} cparam;

typedef struct fit_ctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_profile *prof;
    cost_params p;          /* cp with calib = &cal */
    fmt_calibration cal;
    const fmt_strategy *s;
    const double *meas;
    int *rows;              /* indexes of the measured trials */
    int nrows;
    cparam *par;
    int npar;
    double reg;
    util_error *err;
} fit_ctx;

void calib_params_init(calib_params *p)
{
    p->fit = CALIB_ALL;
    p->reg = 0.01;
    p->max_rounds = 30;
    p->tol = 1e-7;
    p->deadline = 0.0;
}

/* LP coordinates -> calibration.  mbs_half enters as compute_scale *
 * b_half (linear in the LP); links as 1 / bw_frac (time multiplier). */
static void to_cal(fit_ctx *x, const double *v)
{
    int k;

    for (k = 0; k < x->npar; k++) {
        const cparam *q = &x->par[k];
        switch (q->kind) {
        case P_COMPUTE:
            x->cal.compute_scale[q->idx] = v[k];
            break;
        case P_LINK: /* 0 = the cost_params default, for links no trial uses */
            x->cal.bw_frac[q->idx] = q->free_ ? 1.0 / v[k] : 0.0;
            break;
        case P_LAT:
            x->cal.msg_latency = v[k];
            break;
        case P_TPFIX:
            x->cal.tp_fixed = v[k];
            break;
        case P_OVERHEAD:
            x->cal.iter_overhead = v[k];
            break;
        default:
            break;
        }
    }
    for (k = 0; k < x->npar; k++) /* after compute_scale is set */
        if (x->par[k].kind == P_MBS)
            x->cal.mbs_half[x->par[k].idx] = v[k] / x->cal.compute_scale[x->par[k].idx];
}

/* Predicted iteration times of the fitted trials at v. */
static int predict(fit_ctx *x, const double *v, double *t)
{
    int r, rc;

    to_cal(x, v);
    for (r = 0; r < x->nrows; r++) {
        cost_result res;
        rc = cost_evaluate(x->c, x->m, x->prof, &x->p, &x->s[x->rows[r]], &res, x->err);
        if (rc != UTIL_OK)
            return rc;
        t[r] = res.iter_s;
        cost_result_free(&res);
    }
    return UTIL_OK;
}

static double mape_of(const fit_ctx *x, const double *t)
{
    double e = 0.0;
    int r;

    for (r = 0; r < x->nrows; r++) {
        double mi = x->meas[x->rows[r]];
        e += fabs(t[r] - mi) / mi;
    }
    return e / (double)x->nrows;
}

static double objective(const fit_ctx *x, const double *v, const double *t)
{
    double o = mape_of(x, t);
    int k;

    for (k = 0; k < x->npar; k++)
        o += x->reg * fabs(v[k] - x->par[k].neutral) / x->par[k].scale;
    return o;
}

static void add_param(fit_ctx *x, int kind, int idx, double lo, double hi,
                      double neutral, double scale)
{
    cparam *q = &x->par[x->npar++];

    q->kind = kind;
    q->idx = idx;
    q->lo = lo;
    q->hi = hi;
    q->neutral = neutral;
    q->scale = scale;
    q->free_ = 1;
}

/* Typical size of tp_fixed: the mean forward time of a layer with TP
 * collectives in the fitted trials (uncalibrated, at each trial's tp and
 * micro-batch, on its stage's device, collectives left out), so that the
 * pull towards 0 is relative to the time it adds to; 1 ms when no trial
 * uses TP. */
static double tp_layer_time(const fit_ctx *x)
{
    fmt_profile prof;
    cost_params p = x->p;
    cost_layer_time lt;
    double sum = 0.0;
    long n = 0;
    int r, j, l;

    p.calib = NULL;
    if (x->prof != NULL) {
        prof = *x->prof;
        prof.calib = NULL;
    }
    for (r = 0; r < x->nrows; r++) {
        const fmt_strategy *s = &x->s[x->rows[r]];
        if (s->tp <= 1)
            continue;
        for (j = 0; j < s->pp; j++) {
            const fmt_device_type *dt = fmt_device(x->c, fmt_rank_device(s, j, 0, 0));
            for (l = s->bounds[j]; l < s->bounds[j + 1] && l < x->m->nlayers; l++) {
                if (x->m->layers[l].tp_collectives <= 0)
                    continue;
                cost_layer_time_of(x->m, x->prof != NULL ? &prof : NULL, &p, dt, l,
                                   s->tp, s->mbs, INFINITY, 0.0, INFINITY, &lt);
                sum += lt.fwd;
                n++;
            }
        }
    }
    return n > 0 && sum > 0.0 ? sum / (double)n : 1e-3;
}

/* The constants to fit: per device type used by a fitted trial, per
 * link class, and the global ones. */
static int build_params(fit_ctx *x, unsigned fit, const cost_params *cp)
{
    int r, i, k, t, cls;

    x->par = calloc(2 * FMT_CALIB_MAX_TYPES + FMT_LINK_NCLASSES + 3, sizeof *x->par);
    if (x->par == NULL)
        return util_error_set(x->err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (r = 0; r < x->nrows; r++) {
        const fmt_strategy *s = &x->s[x->rows[r]];
        for (i = 0; i < s->tp * s->dp * s->pp; i++) {
            const fmt_device_type *dt = fmt_device(x->c, s->ranks[i]);
            if (fmt_calibration_type(&x->cal, dt->name) >= 0)
                continue;
            if (fmt_calibration_add_type(&x->cal, dt->name) < 0)
                return util_error_set(x->err, UTIL_EINVAL, NULL, NULL,
                                      "more than %d device types to calibrate",
                                      FMT_CALIB_MAX_TYPES);
        }
    }
    for (t = 0; t < x->cal.ntypes; t++) {
        if (fit & CALIB_COMPUTE)
            add_param(x, P_COMPUTE, t, 0.25, 4.0, 1.0, 1.0);
        if (fit & CALIB_MBS)
            add_param(x, P_MBS, t, 0.0, 8.0, 0.0, 1.0);
    }
    if (fit & CALIB_LINKS)
        for (cls = 0; cls < FMT_LINK_NCLASSES; cls++) {
            double eff = cls == FMT_LINK_INTRA ? cp->intra_eff : cp->net_eff;
            /* effective fraction of line rate in [0.02, 1] */
            add_param(x, P_LINK, cls, 1.0, 50.0, 1.0 / eff, 1.0 / eff);
        }
    if (fit & CALIB_LATENCY)
        add_param(x, P_LAT, 0, 0.0, 0.02, 0.0, 1e-3);
    if (fit & CALIB_TP_FIXED)
        add_param(x, P_TPFIX, 0, 0.0, 0.05, 0.0, tp_layer_time(x));
    if (fit & CALIB_OVERHEAD)
        add_param(x, P_OVERHEAD, 0, 0.0, 5.0, 0.0, 0.1);
    for (k = 0; k < x->npar; k++) /* a neutral value outside the bounds */
        if (x->par[k].neutral < x->par[k].lo || x->par[k].neutral > x->par[k].hi)
            x->par[k].neutral = x->par[k].neutral < x->par[k].lo ? x->par[k].lo
                                                                 : x->par[k].hi;
    return UTIL_OK;
}

/* Slopes g[r * npar + k] of every trial's time at v (one-sided). */
static int slopes(fit_ctx *x, double *v, const double *t0, double *g, double *tk)
{
    int k, r, rc;

    for (k = 0; k < x->npar; k++) {
        const cparam *q = &x->par[k];
        double h = 1e-6 * (q->hi - q->lo), keep = v[k];
        if (!q->free_) {
            for (r = 0; r < x->nrows; r++)
                g[r * x->npar + k] = 0.0;
            continue;
        }
        if (keep + h > q->hi)
            h = -h;
        v[k] = keep + h;
        rc = predict(x, v, tk);
        v[k] = keep;
        if (rc != UTIL_OK)
            return rc;
        for (r = 0; r < x->nrows; r++)
            g[r * x->npar + k] = (tk[r] - t0[r]) / h;
    }
    return UTIL_OK;
}

/* Solve the linearised LP inside the box [v - rho range, v + rho range]. */
static int solve_lp(const fit_ctx *x, const double *v, const double *t0,
                    const double *g, double rho, double *out)
{
    int K = x->npar, n = x->nrows, k, r, ne = 0, rc = UTIL_OK, st;
    int ncols = K + 2 * n + 2 * K, nrows = n + K, term;
    int *ia = NULL, *ja = NULL;
    double *ar = NULL;
    glp_prob *lp = NULL;
    glp_smcp parm;

    ia = malloc(((size_t)n * (size_t)(K + 2) + 3 * (size_t)K + 1) * sizeof *ia);
    ja = malloc(((size_t)n * (size_t)(K + 2) + 3 * (size_t)K + 1) * sizeof *ja);
    ar = malloc(((size_t)n * (size_t)(K + 2) + 3 * (size_t)K + 1) * sizeof *ar);
    if (ia == NULL || ja == NULL || ar == NULL) {
        rc = util_error_set(x->err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, nrows);
    glp_add_cols(lp, ncols);
    for (k = 0; k < K; k++) {
        const cparam *q = &x->par[k];
        double w = rho * (q->hi - q->lo);
        double lo = v[k] - w > q->lo ? v[k] - w : q->lo;
        double hi = v[k] + w < q->hi ? v[k] + w : q->hi;
        if (!q->free_ || hi - lo < 1e-15)
            glp_set_col_bnds(lp, k + 1, GLP_FX, v[k], v[k]);
        else
            glp_set_col_bnds(lp, k + 1, GLP_DB, lo, hi);
        /* |y_k - neutral_k| = dp + dn */
        glp_set_col_bnds(lp, K + 2 * n + 2 * k + 1, GLP_LO, 0.0, 0.0);
        glp_set_col_bnds(lp, K + 2 * n + 2 * k + 2, GLP_LO, 0.0, 0.0);
        glp_set_obj_coef(lp, K + 2 * n + 2 * k + 1, x->reg / q->scale);
        glp_set_obj_coef(lp, K + 2 * n + 2 * k + 2, x->reg / q->scale);
        glp_set_row_bnds(lp, n + k + 1, GLP_FX, q->neutral, q->neutral);
        ne++, ia[ne] = n + k + 1, ja[ne] = k + 1, ar[ne] = 1.0;
        ne++, ia[ne] = n + k + 1, ja[ne] = K + 2 * n + 2 * k + 1, ar[ne] = -1.0;
        ne++, ia[ne] = n + k + 1, ja[ne] = K + 2 * n + 2 * k + 2, ar[ne] = 1.0;
    }
    for (r = 0; r < n; r++) {
        double mi = x->meas[x->rows[r]], rhs = mi - t0[r];
        /* g . y - r+ + r- = m - (T(v) - g . v) */
        for (k = 0; k < K; k++) {
            double gk = g[r * K + k];
            rhs += gk * v[k];
            if (gk != 0.0)
                ne++, ia[ne] = r + 1, ja[ne] = k + 1, ar[ne] = gk;
        }
        glp_set_row_bnds(lp, r + 1, GLP_FX, rhs, rhs);
        glp_set_col_bnds(lp, K + 2 * r + 1, GLP_LO, 0.0, 0.0);
        glp_set_col_bnds(lp, K + 2 * r + 2, GLP_LO, 0.0, 0.0);
        glp_set_obj_coef(lp, K + 2 * r + 1, 1.0 / (mi * (double)n));
        glp_set_obj_coef(lp, K + 2 * r + 2, 1.0 / (mi * (double)n));
        ne++, ia[ne] = r + 1, ja[ne] = K + 2 * r + 1, ar[ne] = -1.0;
        ne++, ia[ne] = r + 1, ja[ne] = K + 2 * r + 2, ar[ne] = 1.0;
    }
    glp_load_matrix(lp, ne, ia, ja, ar);
    term = glp_term_out(GLP_OFF); /* libraries never print */
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    st = glp_simplex(lp, &parm);
    glp_term_out(term);
    if (st != 0 || glp_get_status(lp) != GLP_OPT) {
        rc = util_error_set(x->err, UTIL_EINTERNAL, NULL, NULL,
                            "the calibration LP was not solved (GLPK status %d, "
                            "return %d)", glp_get_status(lp), st);
        goto done;
    }
    for (k = 0; k < K; k++) {
        const cparam *q = &x->par[k];
        double y = glp_get_col_prim(lp, k + 1);
        out[k] = y < q->lo ? q->lo : y > q->hi ? q->hi : y;
    }
done:
    if (lp != NULL)
        glp_delete_prob(lp);
    free(ia);
    free(ja);
    free(ar);
    return rc;
}

int calib_run(const fmt_cluster *c, const fmt_model *m,
                     const fmt_profile *prof, const cost_params *cp,
                     const fmt_strategy *s, const double *measured, int n,
                     const calib_params *sp, calib_fit *out,
                     util_error *err)
{
    fit_ctx x;
    calib_params defp;
    double *v = NULL, *y = NULL, *t = NULL, *ty = NULL, *g = NULL, *tk = NULL;
    double f, rho = 0.25;
    int i, k, r, rc = UTIL_OK, round;

    memset(out, 0, sizeof *out);
    fmt_calibration_init(&out->cal);
    memset(&x, 0, sizeof x);
    if (sp == NULL) {
        calib_params_init(&defp);
        sp = &defp;
    }
    x.c = c;
    x.m = m;
    x.prof = prof;
    x.p = *cp;
    x.p.calib = &x.cal;
    x.s = s;
    x.meas = measured;
    x.reg = sp->reg;
    x.err = err;
    fmt_calibration_init(&x.cal);
    x.rows = calloc((size_t)(n > 0 ? n : 1), sizeof *x.rows);
    if (x.rows == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < n; i++)
        if (measured[i] > 0.0)
            x.rows[x.nrows++] = i;
    if (x.nrows < 2) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "expected at least 2 trials with a measured time, "
                            "got %d", x.nrows);
        goto done;
    }
    if ((rc = build_params(&x, sp->fit, cp)) != UTIL_OK)
        goto done;
    v = calloc((size_t)x.npar + 1, sizeof *v);
    y = calloc((size_t)x.npar + 1, sizeof *y);
    t = calloc((size_t)x.nrows, sizeof *t);
    ty = calloc((size_t)x.nrows, sizeof *ty);
    tk = calloc((size_t)x.nrows, sizeof *tk);
    g = calloc((size_t)x.nrows * (size_t)(x.npar + 1), sizeof *g);
    if (!v || !y || !t || !ty || !tk || !g) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (k = 0; k < x.npar; k++)
        v[k] = x.par[k].neutral;
    if ((rc = predict(&x, v, t)) != UTIL_OK ||
        (rc = slopes(&x, v, t, g, tk)) != UTIL_OK)
        goto done;
    /* constants no fitted trial depends on stay neutral */
    for (k = 0; k < x.npar; k++) {
        int used = 0;
        for (r = 0; r < x.nrows; r++)
            if (g[r * x.npar + k] != 0.0)
                used = 1;
        x.par[k].free_ = used;
        out->nfree += used;
    }
    f = objective(&x, v, t);
    for (round = 0; round < sp->max_rounds && rho > 1e-4; round++) {
        double fy;
        if (round > 0 && util_deadline_passed(sp->deadline)) {
            out->timed_out = 1; /* the best point so far stands */
            break;
        }
        if (round > 0 && (rc = slopes(&x, v, t, g, tk)) != UTIL_OK)
            goto done;
        if ((rc = solve_lp(&x, v, t, g, rho, y)) != UTIL_OK)
            goto done;
        out->rounds++;
        if ((rc = predict(&x, y, ty)) != UTIL_OK)
            goto done;
        fy = objective(&x, y, ty);
        if (fy < f - sp->tol) {
            int small = f - fy < 1e-6;
            memcpy(v, y, (size_t)x.npar * sizeof *v);
            memcpy(t, ty, (size_t)x.nrows * sizeof *t);
            f = fy;
            if (small)
                break;
        } else {
            rho *= 0.5; /* the linearisation left its piece: smaller steps */
        }
    }
    to_cal(&x, v);
    out->cal = x.cal;
    out->nfit = x.nrows;
    out->mape = mape_of(&x, t);
    out->objective = f;
done:
    free(x.rows);
    free(x.par);
    free(v);
    free(y);
    free(t);
    free(ty);
    free(tk);
    free(g);
    return rc;
}
