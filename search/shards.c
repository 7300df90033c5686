/* search/shards.c: uneven tensor-parallel shards as an integer program
 * (GLPK).  Heads and MLP columns of a TP group go to its ranks in
 * proportion to speed, in whole heads and columns in multiples of a
 * granule, within each rank's memory; the objective is the largest rank
 * time, the time of the group (every layer ends in an all-reduce). */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"
#include "internal.h"

void search_shard_params_init(search_shard_params *p)
{
    memset(p, 0, sizeof *p);
    p->granule = 64;
    p->time_limit_s = 10.0;
    p->deadline = 0.0;
}

/* Columns of the program: h_r, g_r (granules), T, then u_r, v_r (the
 * distance to the proportional split, second phase). */
#define COL_H(r) ((r) + 1)
#define COL_G(r) (n + (r) + 1)
#define COL_T (2 * n + 1)
#define COL_U(r) (2 * n + 2 + (r))
#define COL_V(r) (3 * n + 2 + (r))

static int shard_validate(const search_shard_rank *rk, int n, int heads,
                          int cols, const search_shard_params *sp,
                          util_error *err)
{
    int r;

    if (rk == NULL || n < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "a TP group needs at least one rank, got %d", n);
    if (heads < 1 || cols < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected positive heads and MLP columns, got %d "
                              "and %d", heads, cols);
    if (sp->granule < 1 || cols % sp->granule != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, "granule",
                              "MLP columns %d are not a multiple of the "
                              "granule %d", cols, sp->granule);
    for (r = 0; r < n; r++) {
        const search_shard_rank *x = &rk[r];
        if (!isfinite(x->fixed_s) || !isfinite(x->head_s) ||
            !isfinite(x->col_s) || x->fixed_s < 0.0 || x->head_s < 0.0 ||
            x->col_s < 0.0 || !isfinite(x->base_bytes) ||
            !isfinite(x->head_bytes) || !isfinite(x->col_bytes) ||
            x->head_bytes < 0.0 || x->col_bytes < 0.0 || !isfinite(x->cap_bytes))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "rank %d of the TP group has negative or "
                                  "non-finite times or memory", r);
    }
    return UTIL_OK;
}

/* Solve the current problem; 0 with the status in *st, else GLPK's code. */
static int shard_intopt(glp_prob *lp, double tm_lim, int *st)
{
    glp_iocp io;
    int rc;

    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_ON;
    io.tm_lim = tm_lim > 0.0 ? (int)(tm_lim * 1000.0) : INT_MAX;
    rc = glp_intopt(lp, &io);
    *st = glp_mip_status(lp);
    return rc;
}

int search_shard_solve(const search_shard_rank *rk, int n, int heads,
                       int cols, const search_shard_params *sp,
                       int *heads_out, int *cols_out, double *max_s,
                       util_error *err)
{
    glp_prob *lp = NULL;
    int *ia = NULL, *ja = NULL, r, nz = 0, row, st = 0, grc, rc = UTIL_OK;
    int G, timed_out = 0;
    double *ar = NULL, tnorm = 0.0, best, wsum = 0.0;
    const double bnorm = 1073741824.0; /* memory rows in GiB */

    if ((rc = shard_validate(rk, n, heads, cols, sp, err)) != UTIL_OK)
        return rc;
    G = cols / sp->granule;
    for (r = 0; r < n; r++) {
        double w = rk[r].fixed_s + rk[r].head_s * heads + rk[r].col_s * cols;
        if (w > tnorm)
            tnorm = w;
    }
    if (tnorm <= 0.0)
        tnorm = 1.0;
    ia = calloc((size_t)(16 * n + 8), sizeof *ia);
    ja = calloc((size_t)(16 * n + 8), sizeof *ja);
    ar = calloc((size_t)(16 * n + 8), sizeof *ar);
    lp = glp_create_prob();
    if (ia == NULL || ja == NULL || ar == NULL || lp == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, 4 * n + 1);
    for (r = 0; r < n; r++) {
        glp_set_col_kind(lp, COL_H(r), GLP_IV);
        glp_set_col_bnds(lp, COL_H(r), GLP_DB, 0.0, (double)heads);
        glp_set_col_kind(lp, COL_G(r), GLP_IV);
        glp_set_col_bnds(lp, COL_G(r), GLP_DB, 0.0, (double)G);
        glp_set_col_bnds(lp, COL_U(r), GLP_LO, 0.0, 0.0);
        glp_set_col_bnds(lp, COL_V(r), GLP_LO, 0.0, 0.0);
    }
    glp_set_col_bnds(lp, COL_T, GLP_LO, 0.0, 0.0);
    glp_set_obj_coef(lp, COL_T, 1.0);
    /* rows: sum h = heads, sum g = G, n time rows, n memory rows,
     * 4n distance rows */
    glp_add_rows(lp, 2 + 6 * n);
    glp_set_row_bnds(lp, 1, GLP_FX, (double)heads, (double)heads);
    glp_set_row_bnds(lp, 2, GLP_FX, (double)G, (double)G);
    for (r = 0; r < n; r++) {
        nz++, ia[nz] = 1, ja[nz] = COL_H(r), ar[nz] = 1.0;
        nz++, ia[nz] = 2, ja[nz] = COL_G(r), ar[nz] = 1.0;
    }
    for (r = 0; r < n; r++) {
        /* fixed + head_s h + col_s granule g <= T */
        row = 3 + r;
        glp_set_row_bnds(lp, row, GLP_UP, 0.0, -rk[r].fixed_s / tnorm);
        nz++, ia[nz] = row, ja[nz] = COL_H(r), ar[nz] = rk[r].head_s / tnorm;
        nz++, ia[nz] = row, ja[nz] = COL_G(r),
            ar[nz] = rk[r].col_s * sp->granule / tnorm;
        nz++, ia[nz] = row, ja[nz] = COL_T, ar[nz] = -1.0;
        /* base + head_bytes h + col_bytes granule g <= cap */
        row = 3 + n + r;
        if (rk[r].cap_bytes > 0.0)
            glp_set_row_bnds(lp, row, GLP_UP, 0.0,
                             (rk[r].cap_bytes - rk[r].base_bytes) / bnorm);
        else
            glp_set_row_bnds(lp, row, GLP_FR, 0.0, 0.0);
        nz++, ia[nz] = row, ja[nz] = COL_H(r), ar[nz] = rk[r].head_bytes / bnorm;
        nz++, ia[nz] = row, ja[nz] = COL_G(r),
            ar[nz] = rk[r].col_bytes * sp->granule / bnorm;
    }
    /* distance rows, free in the first phase: u >= |h - h*|, v >= |g - g*|
     * with h*, g* the split in proportion to speed (1 / full-work time) */
    for (r = 0; r < n; r++) {
        double w = rk[r].fixed_s + rk[r].head_s * heads + rk[r].col_s * cols;
        wsum += 1.0 / (w > 1e-300 ? w : 1e-300);
    }
    for (r = 0; r < n; r++) {
        int base = 3 + 2 * n + 4 * r;
        glp_set_row_bnds(lp, base, GLP_FR, 0.0, 0.0);
        glp_set_row_bnds(lp, base + 1, GLP_FR, 0.0, 0.0);
        glp_set_row_bnds(lp, base + 2, GLP_FR, 0.0, 0.0);
        glp_set_row_bnds(lp, base + 3, GLP_FR, 0.0, 0.0);
        nz++, ia[nz] = base, ja[nz] = COL_U(r), ar[nz] = 1.0;
        nz++, ia[nz] = base, ja[nz] = COL_H(r), ar[nz] = -1.0;
        nz++, ia[nz] = base + 1, ja[nz] = COL_U(r), ar[nz] = 1.0;
        nz++, ia[nz] = base + 1, ja[nz] = COL_H(r), ar[nz] = 1.0;
        nz++, ia[nz] = base + 2, ja[nz] = COL_V(r), ar[nz] = 1.0;
        nz++, ia[nz] = base + 2, ja[nz] = COL_G(r), ar[nz] = -1.0;
        nz++, ia[nz] = base + 3, ja[nz] = COL_V(r), ar[nz] = 1.0;
        nz++, ia[nz] = base + 3, ja[nz] = COL_G(r), ar[nz] = 1.0;
    }
    glp_load_matrix(lp, nz, ia, ja, ar);

    /* phase 1: least largest rank time */
    grc = shard_intopt(lp, sp->time_limit_s, &st);
    if (st == GLP_NOFEAS || grc == GLP_ENOPFS) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "no split of %d heads and %d MLP columns over %d "
                            "ranks fits their memory", heads, cols, n);
        goto done;
    }
    if (st != GLP_OPT && st != GLP_FEAS) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "GLPK could not solve the shard program (code %d)",
                            grc);
        goto done;
    }
    if (st == GLP_FEAS)
        timed_out = 1;
    best = glp_mip_col_val(lp, COL_T);
    for (r = 0; r < n; r++) {
        heads_out[r] = (int)lround(glp_mip_col_val(lp, COL_H(r)));
        cols_out[r] = (int)lround(glp_mip_col_val(lp, COL_G(r))) * sp->granule;
    }
    /* phase 2: among the optimal splits, the closest to proportional */
    if (!timed_out) {
        glp_set_col_bnds(lp, COL_T, GLP_DB, 0.0, best + 1e-9 * fabs(best) + 1e-12);
        glp_set_obj_coef(lp, COL_T, 0.0);
        for (r = 0; r < n; r++) {
            double w = rk[r].fixed_s + rk[r].head_s * heads + rk[r].col_s * cols;
            double f = 1.0 / (w > 1e-300 ? w : 1e-300) / wsum;
            int base = 3 + 2 * n + 4 * r;
            glp_set_obj_coef(lp, COL_U(r), 1.0 / heads);
            glp_set_obj_coef(lp, COL_V(r), 1.0 / G);
            glp_set_row_bnds(lp, base, GLP_LO, -f * heads, 0.0);
            glp_set_row_bnds(lp, base + 1, GLP_LO, f * heads, 0.0);
            glp_set_row_bnds(lp, base + 2, GLP_LO, -f * G, 0.0);
            glp_set_row_bnds(lp, base + 3, GLP_LO, f * G, 0.0);
        }
        grc = shard_intopt(lp, sp->time_limit_s, &st);
        if (grc == 0 && (st == GLP_OPT || st == GLP_FEAS))
            for (r = 0; r < n; r++) {
                heads_out[r] = (int)lround(glp_mip_col_val(lp, COL_H(r)));
                cols_out[r] = (int)lround(glp_mip_col_val(lp, COL_G(r))) * sp->granule;
            }
    }
    if (max_s != NULL) {
        double mx = 0.0;
        for (r = 0; r < n; r++) {
            double t = rk[r].fixed_s + rk[r].head_s * heads_out[r] +
                       rk[r].col_s * cols_out[r];
            if (t > mx)
                mx = t;
        }
        *max_s = mx;
    }
    if (timed_out)
        rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                            "shard program hit its %g s time limit; best split "
                            "so far", sp->time_limit_s);
done:
    if (lp != NULL)
        glp_delete_prob(lp);
    free(ia);
    free(ja);
    free(ar);
    return rc;
}

/* Even split of a group, as Megatron does. */
static void even_split(int tp, int H, int F, int *h, int *c)
{
    int k;

    for (k = 0; k < tp; k++) {
        h[k] = H / tp + (k < H % tp ? 1 : 0);
        c[k] = F / tp + (k < F % tp ? 1 : 0);
    }
}

int search_shard_strategy(const fmt_cluster *c, const fmt_model *m,
                          const fmt_profile *prof, const cost_params *cp,
                          const search_shard_params *sp, int all_groups,
                          fmt_strategy *s, util_error *err)
{
    int nr = s->tp * s->dp * s->pp, H, F, j, d, k, rc, uneven = 0, late = 0;
    int *h = NULL, *cl = NULL;
    search_shard_rank *rk = NULL;
    double am = cost_attn_frac(m, 1), at = cost_attn_frac(m, 0);
    fmt_strategy even;

    memset(&even, 0, sizeof even);
    if ((rc = cost_shard_units(m, &H, &F, err)) != UTIL_OK)
        return rc;
    if (s->tp <= 1)
        return fmt_strategy_set_shards(s, NULL, NULL);
    h = calloc((size_t)nr, sizeof *h);
    cl = calloc((size_t)nr, sizeof *cl);
    rk = calloc((size_t)s->tp, sizeof *rk);
    if (h == NULL || cl == NULL || rk == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    /* coefficients come from the even split (they do not depend on it) */
    if ((rc = fmt_strategy_copy(&even, s)) != UTIL_OK ||
        (rc = fmt_strategy_set_shards(&even, NULL, NULL)) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < s->pp; j++)
        for (d = 0; d < s->dp; d++) {
            int r0 = s->tp * d + s->tp * s->dp * j, src;
            even_split(s->tp, H, F, h + r0, cl + r0);
            if (!all_groups && !cost_tp_group_mixed(c, s, j, d))
                continue;
            /* past the deadline: this group and the rest keep the even split */
            if ((late = late || (sp->deadline > 0.0 && search_now() >= sp->deadline)))
                continue;
            for (k = 0; k < s->tp; k++) {
                cost_rank_time t;
                double base, per;
                cost_rank_time_of(c, m, prof, cp, &even, r0 + k, &t);
                cost_rank_memory_line(m, cp, &even, r0 + k, &base, &per);
                rk[k].fixed_s = t.fixed;
                rk[k].head_s = t.per_share * at / H;
                rk[k].col_s = t.per_share * (1.0 - at) / F;
                rk[k].base_bytes = base;
                rk[k].head_bytes = per * am / H;
                rk[k].col_bytes = per * (1.0 - am) / F;
                rk[k].cap_bytes = fmt_device(c, s->ranks[r0 + k])->mem_bytes;
            }
            src = search_shard_solve(rk, s->tp, H, F, sp, h + r0, cl + r0, NULL,
                                     err);
            if (src == UTIL_EINFEASIBLE) {
                even_split(s->tp, H, F, h + r0, cl + r0);
                continue;
            }
            if (src != UTIL_OK && src != UTIL_ETIMEOUT) {
                rc = src;
                goto done;
            }
            for (k = 0; k < s->tp; k++)
                if (h[r0 + k] * s->tp != H || cl[r0 + k] * s->tp != F)
                    uneven = 1;
        }
    rc = fmt_strategy_set_shards(s, uneven ? h : NULL, uneven ? cl : NULL);
    if (rc != UTIL_OK)
        rc = util_error_set(err, rc, NULL, NULL, "out of memory");
    else if (late)
        rc = UTIL_ETIMEOUT;
done:
    fmt_strategy_free(&even);
    free(h);
    free(cl);
    free(rk);
    return rc;
}

int search_shard_refine(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_shard_params *sp, fmt_strategy *s,
                        util_error *err)
{
    int j, d, mixed = 0, rc, H, F;
    int *keep = NULL;

    if (s->tp <= 1 || cost_shard_units(m, &H, &F, NULL) != UTIL_OK ||
        F % sp->granule != 0)
        return UTIL_OK; /* nothing to shard: the even split stays */
    for (j = 0; j < s->pp && !mixed; j++)
        for (d = 0; d < s->dp && !mixed; d++)
            mixed = cost_tp_group_mixed(c, s, j, d);
    if (!mixed)
        return UTIL_OK;
    rc = search_shard_strategy(c, m, prof, cp, sp, 0, s, err);
    if (rc != UTIL_OK || s->tp_heads == NULL)
        return rc;
    /* the assignment sees the shards through cost_rank_layer_adjust */
    keep = malloc(((size_t)s->pp + 1) * sizeof *keep);
    if (keep == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    memcpy(keep, s->bounds, ((size_t)s->pp + 1) * sizeof *keep);
    rc = search_assign_layers(c, m, prof, cp, s, err);
    if (rc == UTIL_EINFEASIBLE) {
        memcpy(s->bounds, keep, ((size_t)s->pp + 1) * sizeof *keep);
        rc = UTIL_OK;
    } else if (rc == UTIL_OK) {
        rc = search_shard_strategy(c, m, prof, cp, sp, 0, s, err);
    }
    free(keep);
    return rc;
}
