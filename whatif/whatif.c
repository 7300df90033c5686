/* whatif/whatif.c: straggler what-if.  Some ranks of a plan
 * slow down; predict the iteration time and compare the remedies of
 * ZERO-resizing / SEMI-migration (seeds/000) as an offline planner can
 * apply them: re-planned uneven shards (lossless, like migration but
 * once), re-planned shards and layers, resizing with the ratio of eq. 1
 * (lossy) and the hybrid whose migrate-or-resize split follows eq. 3. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "whatif.h"
#include "plan.h"

void whatif_params_init(whatif_params *p)
{
    memset(p, 0, sizeof *p);
    p->iterations = 0.0;
    p->tolerance = 0.05;
    p->max_gamma = 0.9;
    p->granule = 64;
    p->deadline = 0.0;
}

const char *whatif_remedy_name(int kind)
{
    static const char *const names[WHATIF_NREMEDIES] = {"none", "reshard", "replan",
                                                      "resize", "semi"};
    return kind >= 0 && kind < WHATIF_NREMEDIES ? names[kind] : NULL;
}

void whatif_free(whatif_result *w)
{
    if (w == NULL)
        return;
    free(w->stragglers);
    fmt_strategy_free(&w->best);
    memset(w, 0, sizeof *w);
}

/* Evaluate s with per-rank slowdowns slow (NULL = none): iteration time
 * and memory verdict. */
static int eval_slow(const fmt_cluster *c, const fmt_model *m,
                     const fmt_profile *prof, const cost_params *cp,
                     const fmt_strategy *s, const double *slow, double *iter,
                     int *fits, util_error *err)
{
    fmt_strategy t;
    cost_result r;
    int rc;

    memset(&t, 0, sizeof t);
    if ((rc = fmt_strategy_copy(&t, s)) != UTIL_OK ||
        (rc = fmt_strategy_set_slow(&t, slow)) != UTIL_OK) {
        fmt_strategy_free(&t);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    rc = cost_evaluate(c, m, prof, cp, &t, &r, err);
    if (rc == UTIL_OK) {
        *iter = r.iter_s;
        if (fits != NULL)
            *fits = r.fits;
        cost_result_free(&r);
    }
    fmt_strategy_free(&t);
    return rc;
}

/* TP-divided parameters of stage j (per TP group), and bytes per
 * iteration a migration of share g moves (weights broadcast once, the
 * activations and gradients of the migrated columns per micro-batch). */
static double stage_params(const fmt_model *m, const fmt_strategy *s, int j)
{
    double p = 0.0;
    int l;

    for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
        p += m->layers[l].params;
    return p;
}

static double migration_bytes(const fmt_model *m, const fmt_strategy *s,
                              int j, double g)
{
    double act = 0.0;
    int l;

    for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
        act += m->layers[l].tp_comm_bytes;
    return g * (stage_params(m, s, j) * (double)m->dtype_bytes +
                2.0 * (double)s->gas * (double)s->mbs * act);
}

/* Model state per parameter (weights, gradients, optimizer), unsharded. */
static double state_per_param(const fmt_model *m, const cost_params *cp)
{
    double w, g, o;

    cost_state_bytes(m, cp, 1, &w, &g, &o);
    return w + g + o;
}

/* One-off cost of moving shards from `from` to `to`: each TP group sends
 * the state (weights, gradients, optimizer) of the share that changes
 * hands over its ring; the slowest group counts. */
static double reshard_cost(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const fmt_strategy *from,
                           const fmt_strategy *to)
{
    double worst = 0.0;
    int j, d, k;

    for (j = 0; j < to->pp; j++)
        for (d = 0; d < to->dp; d++) {
            double moved = 0.0, bw, lat;
            for (k = 0; k < to->tp; k++) {
                int r = k + to->tp * d + to->tp * to->dp * j;
                moved += fabs(cost_rank_share(m, to, r, 1) -
                              cost_rank_share(m, from, r, 1));
            }
            if (moved <= 0.0)
                continue;
            cost_tp_ring(c, cp, to, j, d, &bw, &lat);
            moved = 0.5 * moved * stage_params(m, to, j) * state_per_param(m, cp);
            if (isfinite(bw) && bw > 0.0 && moved / bw + lat > worst)
                worst = moved / bw + lat;
        }
    return worst;
}

/* One-off cost of moving layers between stages (bounds from -> to): the
 * state of every layer that changes stage crosses the slowest cut. */
static double relayer_cost(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const fmt_strategy *from,
                           const fmt_strategy *to)
{
    double bytes = 0.0, bw = INFINITY, lat = 0.0;
    int l, j, sa = 0, sb = 0;

    for (l = 0; l < m->nlayers; l++) {
        while (sa + 1 < from->pp && l >= from->bounds[sa + 1])
            sa++;
        while (sb + 1 < to->pp && l >= to->bounds[sb + 1])
            sb++;
        if (sa != sb)
            bytes += m->layers[l].params / (double)to->tp * state_per_param(m, cp);
    }
    for (j = 0; j + 1 < to->pp; j++) {
        double b, t;
        cost_cut_link(c, cp, to, j, &b, &t);
        if (b < bw)
            bw = b;
        if (t > lat)
            lat = t;
    }
    if (bytes <= 0.0 || !isfinite(bw) || bw <= 0.0)
        return 0.0;
    return bytes / bw + lat;
}

static int straggler_setup(const fmt_cluster *c, const fmt_strategy *s,
                           const whatif_params *wp, double *slow,
                           whatif_result *out, util_error *err)
{
    int nr = s->tp * s->dp * s->pp, i, k;

    if (wp->nslow < 1 || wp->slow == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, "slow",
                              "expected at least one straggler RANK:FACTOR");
    out->stragglers = calloc((size_t)wp->nslow, sizeof *out->stragglers);
    if (out->stragglers == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (i = 0; i < nr; i++)
        slow[i] = 1.0;
    for (i = 0; i < wp->nslow; i++) {
        const whatif_slow *x = &wp->slow[i];
        whatif_straggler *st = &out->stragglers[i];
        if (x->rank < 0 || x->rank >= nr)
            return util_error_set(err, UTIL_EINVAL, NULL, "slow",
                                  "rank %d is not in the plan: expected 0..%d",
                                  x->rank, nr - 1);
        if (!(x->factor >= 1.0) || !isfinite(x->factor))
            return util_error_set(err, UTIL_EINVAL, NULL, "slow",
                                  "slowdown of rank %d must be a number >= 1 "
                                  "(2 = half speed), got %g", x->rank, x->factor);
        for (k = 0; k < i; k++)
            if (wp->slow[k].rank == x->rank)
                return util_error_set(err, UTIL_EINVAL, NULL, "slow",
                                      "rank %d is given twice", x->rank);
        slow[x->rank] = x->factor;
        st->rank = x->rank;
        st->factor = x->factor;
        st->device = s->ranks[x->rank];
        st->stage = x->rank / (s->tp * s->dp);
        st->replica = (x->rank / s->tp) % s->dp;
        st->tp_index = x->rank % s->tp;
    }
    out->nstragglers = wp->nslow;
    (void)c;
    return UTIL_OK;
}

/* 1 when the TP group of rank r holds a straggler. */
static int group_hit(const fmt_strategy *s, const double *slow, int r)
{
    int r0 = r - r % s->tp, k;

    for (k = 0; k < s->tp; k++)
        if (slow[r0 + k] != 1.0)
            return 1;
    return 0;
}

/* Per-micro-batch times of every rank of a TP group with slowdowns. */
static void group_times(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const fmt_strategy *slowed, int r0,
                        cost_rank_time *t)
{
    int k;

    for (k = 0; k < slowed->tp; k++)
        cost_rank_time_of(c, m, prof, cp, slowed, r0 + k, &t[k]);
}

/* New compute multiplier of a rank whose time goes from t->total to
 * target (its TP all-reduces unchanged). */
static double factor_for(const cost_rank_time *t, double slow, double target)
{
    double work = t->total - t->comm, want = target - t->comm;

    if (work <= 0.0)
        return slow;
    if (want < 0.0)
        want = 0.0;
    return slow * want / work;
}

/* ZERO-resizing eq. 1: gamma_i = (T_i - T_ref) / M_i for every rank above
 * T_ref of each hit group; fills eff (new multipliers). */
static double resize_factors(const fmt_cluster *c, const fmt_model *m,
                             const fmt_profile *prof, const cost_params *cp,
                             const fmt_strategy *slowed, const double *slow,
                             double max_gamma, int use_min, double *eff,
                             whatif_result *out)
{
    int nr = slowed->tp * slowed->dp * slowed->pp, r0, k, i;
    double gmax = 0.0;
    cost_rank_time *t = calloc((size_t)slowed->tp, sizeof *t);

    for (i = 0; i < nr; i++)
        eff[i] = slow[i];
    if (t == NULL)
        return -1.0;
    for (r0 = 0; r0 < nr; r0 += slowed->tp) {
        double avg = 0.0, mn = INFINITY, ref;
        if (!group_hit(slowed, slow, r0))
            continue;
        group_times(c, m, prof, cp, slowed, r0, t);
        for (k = 0; k < slowed->tp; k++) {
            avg += t[k].total / (double)slowed->tp;
            if (t[k].total < mn)
                mn = t[k].total;
        }
        ref = use_min ? mn : avg;
        for (k = 0; k < slowed->tp; k++) {
            double g;
            if (t[k].total <= ref || t[k].gemm <= 0.0)
                continue;
            g = (t[k].total - ref) / t[k].gemm; /* ZERO-resizing eq. 1 */
            if (g > max_gamma)
                g = max_gamma;
            if (g > gmax)
                gmax = g;
            eff[r0 + k] = factor_for(&t[k], slow[r0 + k], t[k].total - g * t[k].gemm);
            for (i = 0; i < out->nstragglers && !use_min; i++)
                if (out->stragglers[i].rank == r0 + k)
                    out->stragglers[i].gamma = g;
        }
    }
    free(t);
    return gmax;
}

/* SEMI-migration with eq. 3 per hit group: stragglers sorted by time,
 * x grows while f(x) >= 0; the top x migrate their excess over T_min to
 * the other e - x ranks (paying Phi_1 per iteration), the rest resize to
 * T_min with eq. 1.  Fills eff; returns the largest pruning ratio. */
static double semi_factors(const fmt_cluster *c, const fmt_model *m,
                           const fmt_profile *prof, const cost_params *cp,
                           const fmt_strategy *slowed, const double *slow,
                           double max_gamma, double *eff, int *migrated,
                           int *resized, whatif_result *out)
{
    int nr = slowed->tp * slowed->dp * slowed->pp, e = slowed->tp, r0, k, i;
    double gmax = 0.0;
    cost_rank_time *t = calloc((size_t)e, sizeof *t);
    int *ord = calloc((size_t)e, sizeof *ord);

    *migrated = *resized = 0;
    for (i = 0; i < nr; i++)
        eff[i] = slow[i];
    if (t == NULL || ord == NULL) {
        free(t);
        free(ord);
        return -1.0;
    }
    for (r0 = 0; r0 < nr; r0 += e) {
        double mn = INFINITY, gamma_mig = 0.0, bw, lat, phi = 0.0, extra;
        int z = 0, x = 0, a, b, j = r0 / (e * slowed->dp);
        if (!group_hit(slowed, slow, r0))
            continue;
        group_times(c, m, prof, cp, slowed, r0, t);
        for (k = 0; k < e; k++) {
            ord[k] = k;
            if (t[k].total < mn)
                mn = t[k].total;
        }
        for (a = 1; a < e; a++) /* descending time */
            for (b = a; b > 0 && t[ord[b - 1]].total < t[ord[b]].total; b--) {
                int q = ord[b];
                ord[b] = ord[b - 1];
                ord[b - 1] = q;
            }
        for (k = 0; k < e; k++)
            if (t[k].total > mn * (1.0 + 1e-9))
                z++;
        cost_tp_ring(c, cp, slowed, j, (r0 / e) % slowed->dp, &bw, &lat);
        /* eq. 3: f(x) = (T_x - T_min) - Phi_1(Gamma(x))
         *              - max_{y > x} Gamma(x) / (e - x) * T_y / L_y */
        for (x = 0; x < z && x < e - 1; x++) {
            double g = 0.0, worst = 0.0, f, ph;
            int kx = ord[x];
            for (k = 0; k <= x; k++) {
                const cost_rank_time *q = &t[ord[k]];
                g += q->share * (q->total - mn) / q->total;
            }
            for (k = x + 1; k < e; k++) {
                const cost_rank_time *q = &t[ord[k]];
                double w = g / (double)(e - x - 1) * q->total /
                           (q->share > 0.0 ? q->share : 1e-12);
                if (w > worst)
                    worst = w;
            }
            ph = isfinite(bw) && bw > 0.0
                     ? (migration_bytes(m, slowed, j, g) / bw + lat) / (double)slowed->gas
                     : 0.0;
            f = (t[kx].total - mn) - ph - worst;
            if (f < 0.0)
                break;
            gamma_mig = g;
            phi = ph;
        }
        /* x stragglers migrate: down to T_min; receivers take gamma / (e - x) */
        extra = x > 0 ? gamma_mig / (double)(e - x) : 0.0;
        for (k = 0; k < e; k++) {
            int rk = ord[k], r = r0 + rk;
            const cost_rank_time *q = &t[rk];
            double target;
            if (k < x) {
                target = mn + phi;
                (*migrated)++;
                for (i = 0; i < out->nstragglers; i++)
                    if (out->stragglers[i].rank == r)
                        out->stragglers[i].migrate = 1;
            } else {
                double got = extra * q->total / (q->share > 0.0 ? q->share : 1e-12);
                target = q->total + got;
                if (q->total > mn * (1.0 + 1e-9) && q->gemm > 0.0) {
                    /* eq. 1 against T_min for the stragglers that stay, on
                     * their work including what they received */
                    double mm = q->gemm * target / q->total;
                    double g = (target - mn) / mm;
                    if (g > max_gamma)
                        g = max_gamma;
                    if (g > gmax)
                        gmax = g;
                    target -= g * mm;
                    (*resized)++;
                }
                target += phi;
            }
            eff[r] = factor_for(q, slow[r], target);
        }
    }
    free(t);
    free(ord);
    return gmax;
}

/* 1 when wp's deadline has passed: remedy r is marked skipped. */
static int cut(const whatif_params *wp, whatif_result *out, int r)
{
    if (!util_deadline_passed(wp->deadline))
        return 0;
    out->remedies[r].skipped = out->timed_out = 1;
    snprintf(out->remedies[r].note, sizeof out->remedies[r].note,
             "not evaluated: the time limit ended the run first");
    return 1;
}

int whatif_run(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_strategy *s, const whatif_params *wp,
                    whatif_result *out, util_error *err)
{
    int nr = s->tp * s->dp * s->pp, rc = UTIL_OK, i, any_tp = 0, k;
    double *slow = NULL, *eff = NULL;
    fmt_strategy slowed, resh, repl;
    search_shard_params shp;
    whatif_remedy *rm = out->remedies;
    double best_lossless, best_lossy, amort[WHATIF_NREMEDIES];
    int bl = WHATIF_REMEDY_NONE, by = -1;

    memset(out, 0, sizeof *out);
    memset(&slowed, 0, sizeof slowed);
    memset(&resh, 0, sizeof resh);
    memset(&repl, 0, sizeof repl);
    slow = calloc((size_t)nr, sizeof *slow);
    eff = calloc((size_t)nr, sizeof *eff);
    if (slow == NULL || eff == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    if ((rc = straggler_setup(c, s, wp, slow, out, err)) != UTIL_OK)
        goto done;
    if ((rc = fmt_strategy_copy(&slowed, s)) != UTIL_OK ||
        (rc = fmt_strategy_set_slow(&slowed, slow)) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (i = 0; i < WHATIF_NREMEDIES; i++) {
        rm[i].lossless = i <= WHATIF_REMEDY_REPLAN;
        rm[i].fits = 1;
    }
    if ((rc = eval_slow(c, m, prof, cp, s, NULL, &out->base_s, NULL, err)) != UTIL_OK ||
        (rc = eval_slow(c, m, prof, cp, s, slow, &rm[WHATIF_REMEDY_NONE].iter_s,
                        &rm[WHATIF_REMEDY_NONE].fits, err)) != UTIL_OK)
        goto done;
    rm[WHATIF_REMEDY_NONE].applicable = 1;
    snprintf(rm[0].note, sizeof rm[0].note, "%.1f%% slower than without stragglers",
             100.0 * (rm[0].iter_s / out->base_s - 1.0));
    for (i = 0; i < out->nstragglers; i++) {
        whatif_straggler *st = &out->stragglers[i];
        cost_rank_time t;
        int r0 = st->rank - st->rank % s->tp;
        cost_rank_time_of(c, m, prof, cp, &slowed, st->rank, &t);
        st->t_s = t.total;
        st->gemm_s = t.gemm;
        st->t_min_s = INFINITY;
        for (k = 0; k < s->tp; k++) {
            cost_rank_time_of(c, m, prof, cp, &slowed, r0 + k, &t);
            st->t_avg_s += t.total / (double)s->tp;
            if (t.total < st->t_min_s)
                st->t_min_s = t.total;
        }
        if (s->tp > 1)
            any_tp = 1;
    }

    /* lossless: re-planned shards (the offline form of migration) */
    search_shard_params_init(&shp);
    shp.granule = wp->granule;
    shp.deadline = wp->deadline;
    if (cut(wp, out, WHATIF_REMEDY_RESHARD)) {
    } else if (any_tp) {
        if ((rc = fmt_strategy_copy(&resh, &slowed)) != UTIL_OK) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
        rc = search_shard_strategy(c, m, prof, cp, &shp, 1, &resh, err);
        if (rc == UTIL_EINVAL) {
            snprintf(rm[WHATIF_REMEDY_RESHARD].note, sizeof rm[0].note, "%.200s",
                     err != NULL ? err->msg : "no shards for this model");
            rc = UTIL_OK;
            fmt_strategy_free(&resh);
        } else if (rc == UTIL_ETIMEOUT && cut(wp, out, WHATIF_REMEDY_RESHARD)) {
            rc = UTIL_OK; /* some groups re-split only: not this remedy */
            fmt_strategy_free(&resh);
        } else if (rc != UTIL_OK) {
            goto done;
        } else {
            rm[WHATIF_REMEDY_RESHARD].applicable = 1;
            if ((rc = eval_slow(c, m, prof, cp, &resh, slow,
                                &rm[WHATIF_REMEDY_RESHARD].iter_s,
                                &rm[WHATIF_REMEDY_RESHARD].fits, err)) != UTIL_OK)
                goto done;
            rm[WHATIF_REMEDY_RESHARD].one_off_s = reshard_cost(c, m, cp, s, &resh);
            snprintf(rm[WHATIF_REMEDY_RESHARD].note, sizeof rm[0].note,
                     "heads and MLP columns re-split by the shard program; "
                     "no accuracy change");
        }
    } else {
        snprintf(rm[WHATIF_REMEDY_RESHARD].note, sizeof rm[0].note,
                 "no straggler is in a tensor-parallel group (tp = 1)");
    }
    /* lossless: shards and pipeline layers */
    if (cut(wp, out, WHATIF_REMEDY_REPLAN)) {
    } else if (s->pp > 1 || rm[WHATIF_REMEDY_RESHARD].applicable) {
        int arc;
        if ((rc = fmt_strategy_copy(&repl, resh.ranks ? &resh : &slowed)) != UTIL_OK) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
        arc = s->pp > 1 ? search_assign_layers(c, m, prof, cp, &repl, err) : UTIL_OK;
        if (arc == UTIL_OK && rm[WHATIF_REMEDY_RESHARD].applicable)
            arc = search_shard_strategy(c, m, prof, cp, &shp, 1, &repl, err);
        if (arc == UTIL_OK) {
            rm[WHATIF_REMEDY_REPLAN].applicable = 1;
            if ((rc = eval_slow(c, m, prof, cp, &repl, slow,
                                &rm[WHATIF_REMEDY_REPLAN].iter_s,
                                &rm[WHATIF_REMEDY_REPLAN].fits, err)) != UTIL_OK)
                goto done;
            rm[WHATIF_REMEDY_REPLAN].one_off_s = reshard_cost(c, m, cp, s, &repl) +
                                               relayer_cost(c, m, cp, s, &repl);
            snprintf(rm[WHATIF_REMEDY_REPLAN].note, sizeof rm[0].note,
                     "layers re-assigned to stages%s; no accuracy change",
                     rm[WHATIF_REMEDY_RESHARD].applicable ? " and shards re-split" : "");
        } else if (arc == UTIL_EINFEASIBLE) {
            snprintf(rm[WHATIF_REMEDY_REPLAN].note, sizeof rm[0].note,
                     "no layer assignment fits memory");
        } else if (arc != UTIL_ETIMEOUT || !cut(wp, out, WHATIF_REMEDY_REPLAN)) {
            rc = arc;
            goto done;
        }
    } else {
        snprintf(rm[WHATIF_REMEDY_REPLAN].note, sizeof rm[0].note,
                 "one stage and no tensor parallelism: nothing to move");
    }
    /* lossy: ZERO-resizing with eq. 1 */
    if (cut(wp, out, WHATIF_REMEDY_RESIZE)) {
        cut(wp, out, WHATIF_REMEDY_SEMI);
    } else if (any_tp) {
        double g = resize_factors(c, m, prof, cp, &slowed, slow, wp->max_gamma, 0,
                                  eff, out);
        if (g < 0.0) {
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
        rm[WHATIF_REMEDY_RESIZE].applicable = 1;
        rm[WHATIF_REMEDY_RESIZE].max_gamma = g;
        if ((rc = eval_slow(c, m, prof, cp, s, eff, &rm[WHATIF_REMEDY_RESIZE].iter_s,
                            &rm[WHATIF_REMEDY_RESIZE].fits, err)) != UTIL_OK)
            goto done;
        snprintf(rm[WHATIF_REMEDY_RESIZE].note, sizeof rm[0].note,
                 "slow ranks skip up to %.0f%% of their share of the "
                 "matrix multiplications each iteration, to keep pace with "
                 "their tensor-parallel group; accuracy drops as that share "
                 "grows", 100.0 * g);
        if (!cut(wp, out, WHATIF_REMEDY_SEMI)) {
            int mig = 0, res = 0;
            g = semi_factors(c, m, prof, cp, &slowed, slow, wp->max_gamma, eff, &mig,
                             &res, out);
            if (g < 0.0) {
                rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
                goto done;
            }
            rm[WHATIF_REMEDY_SEMI].applicable = 1;
            rm[WHATIF_REMEDY_SEMI].max_gamma = g;
            rm[WHATIF_REMEDY_SEMI].lossless = res == 0;
            if ((rc = eval_slow(c, m, prof, cp, s, eff, &rm[WHATIF_REMEDY_SEMI].iter_s,
                                &rm[WHATIF_REMEDY_SEMI].fits, err)) != UTIL_OK)
                goto done;
            snprintf(rm[WHATIF_REMEDY_SEMI].note, sizeof rm[0].note,
                     "%d slow rank(s) hand part of their work to faster ranks "
                     "of their group every iteration, %d shrink their share to "
                     "keep pace (skipping up to %.0f%%)", mig, res, 100.0 * g);
        }
    } else {
        snprintf(rm[WHATIF_REMEDY_RESIZE].note, sizeof rm[0].note,
                 "resizing balances a TP group; no straggler is in one");
        snprintf(rm[WHATIF_REMEDY_SEMI].note, sizeof rm[0].note,
                 "migration balances a TP group; no straggler is in one");
    }

    /* recommendation: the best lossless remedy unless a lossy one beats it
     * by more than the tolerance; one-off costs are spread over the
     * iterations the slowdown lasts */
    for (i = 0; i < WHATIF_NREMEDIES; i++)
        amort[i] = rm[i].iter_s + (wp->iterations > 0.0 ? rm[i].one_off_s / wp->iterations
                                                        : 0.0);
    best_lossless = amort[WHATIF_REMEDY_NONE];
    for (i = WHATIF_REMEDY_RESHARD; i <= WHATIF_REMEDY_REPLAN; i++)
        if (rm[i].applicable && rm[i].fits && amort[i] < best_lossless * (1.0 - 1e-3)) {
            best_lossless = amort[i];
            bl = i;
        }
    best_lossy = INFINITY;
    for (i = WHATIF_REMEDY_RESIZE; i < WHATIF_NREMEDIES; i++)
        if (rm[i].applicable && rm[i].fits && amort[i] < best_lossy) {
            best_lossy = amort[i];
            by = i;
        }
    if (by == WHATIF_REMEDY_SEMI && rm[by].lossless && best_lossy < best_lossless) {
        /* pure migration every iteration: lossless too */
        bl = by;
        best_lossless = best_lossy;
        by = -1;
    }
    if (by >= 0 && best_lossy < best_lossless * (1.0 - wp->tolerance)) {
        out->recommended = by;
        snprintf(out->reason, sizeof out->reason,
                 "'%s' is %.1f%% faster than the best lossless remedy ('%s', "
                 "%.4f s) but slow ranks skip up to %.0f%% of their matrix "
                 "multiplications: it trades accuracy for speed (more loss the "
                 "more is skipped)",
                 whatif_remedy_name(by), 100.0 * (1.0 - best_lossy / best_lossless),
                 whatif_remedy_name(bl), best_lossless, 100.0 * rm[by].max_gamma);
    } else if (bl == WHATIF_REMEDY_NONE && out->timed_out) {
        snprintf(out->reason, sizeof out->reason, "keep the plan: the time limit "
                 "ended the run before a remedy that helps was evaluated");
    } else if (bl == WHATIF_REMEDY_NONE) {
        out->recommended = WHATIF_REMEDY_NONE;
        snprintf(out->reason, sizeof out->reason,
                 "no remedy helps enough: lossless ones do not beat keeping the "
                 "plan%s, and lossy ones are within %.0f%% of it",
                 wp->iterations > 0.0 ? " once their one-off cost is spread over "
                                        "the slowdown" : "",
                 100.0 * wp->tolerance);
    } else {
        out->recommended = bl;
        snprintf(out->reason, sizeof out->reason,
                 "'%s' recovers %.0f%% of the slowdown (%.4f s instead of %.4f s) "
                 "with no accuracy change%s%s",
                 whatif_remedy_name(bl),
                 rm[0].iter_s > out->base_s
                     ? 100.0 * (rm[0].iter_s - rm[bl].iter_s) / (rm[0].iter_s - out->base_s)
                     : 0.0,
                 rm[bl].iter_s, rm[0].iter_s,
                 by >= 0 ? "; lossy remedies are not faster by more than the "
                           "tolerance" : "",
                 rm[bl].one_off_s > 0.0 ? "; it pays a one-off move of state" : "");
    }
    {
        const fmt_strategy *pick = out->recommended == WHATIF_REMEDY_RESHARD ? &resh
                                    : out->recommended == WHATIF_REMEDY_REPLAN ? &repl
                                                                             : s;
        if (fmt_strategy_copy(&out->best, pick) != UTIL_OK ||
            fmt_strategy_set_slow(&out->best, NULL) != UTIL_OK)
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
done:
    free(slow);
    free(eff);
    fmt_strategy_free(&slowed);
    fmt_strategy_free(&resh);
    fmt_strategy_free(&repl);
    if (rc != UTIL_OK)
        whatif_free(out);
    return rc;
}

/* ---- output ---------------------------------------------------------- */

static int jnum(cJSON *o, const char *k, double v)
{
    return cJSON_AddItemToObject(o, k, isfinite(v) ? cJSON_CreateNumber(v)
                                                   : cJSON_CreateNull());
}

static cJSON *int_list(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    int i;

    for (i = 0; a != NULL && v != NULL && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

char *whatif_json(const whatif_result *w, const char *plan_path,
                       int strategy)
{
    cJSON *doc = cJSON_CreateObject(), *arr, *o, *b;
    char *text = NULL;
    int i, nr = w->best.tp * w->best.dp * w->best.pp;

    if (doc == NULL)
        return NULL;
    cJSON_AddStringToObject(doc, "schema", "hetplan-whatif/1");
    cJSON_AddStringToObject(doc, "plan", plan_path ? plan_path : "");
    cJSON_AddNumberToObject(doc, "strategy", strategy);
    cJSON_AddStringToObject(doc, "status", w->timed_out ? "time-limit" : "complete");
    jnum(doc, "base_s", w->base_s);
    jnum(doc, "slowed_s", w->remedies[WHATIF_REMEDY_NONE].iter_s);
    arr = cJSON_AddArrayToObject(doc, "stragglers");
    for (i = 0; arr != NULL && i < w->nstragglers; i++) {
        const whatif_straggler *st = &w->stragglers[i];
        o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(arr, o))
            goto done;
        cJSON_AddNumberToObject(o, "rank", st->rank);
        cJSON_AddNumberToObject(o, "device", st->device);
        cJSON_AddNumberToObject(o, "stage", st->stage);
        cJSON_AddNumberToObject(o, "replica", st->replica);
        cJSON_AddNumberToObject(o, "tp_index", st->tp_index);
        jnum(o, "factor", st->factor);
        jnum(o, "stage_s", st->t_s);
        jnum(o, "group_avg_s", st->t_avg_s);
        jnum(o, "group_min_s", st->t_min_s);
        jnum(o, "gemm_s", st->gemm_s);
        jnum(o, "resize_gamma", st->gamma);
        cJSON_AddStringToObject(o, "semi", st->migrate ? "migrate" : "resize");
    }
    arr = cJSON_AddArrayToObject(doc, "remedies");
    for (i = 0; arr != NULL && i < WHATIF_NREMEDIES; i++) {
        const whatif_remedy *r = &w->remedies[i];
        o = cJSON_CreateObject();
        if (o == NULL || !cJSON_AddItemToArray(arr, o))
            goto done;
        cJSON_AddStringToObject(o, "name", whatif_remedy_name(i));
        cJSON_AddBoolToObject(o, "applicable", r->applicable);
        cJSON_AddBoolToObject(o, "lossless", r->lossless);
        if (r->skipped)
            cJSON_AddBoolToObject(o, "skipped", 1);
        if (r->applicable) {
            jnum(o, "predicted_s", r->iter_s);
            jnum(o, "speedup", w->remedies[0].iter_s / r->iter_s);
            jnum(o, "one_off_s", r->one_off_s);
            jnum(o, "max_gamma", r->max_gamma);
            cJSON_AddBoolToObject(o, "fits", r->fits);
        }
        cJSON_AddStringToObject(o, "note", r->note);
    }
    o = cJSON_AddObjectToObject(doc, "recommendation");
    if (o == NULL)
        goto done;
    cJSON_AddStringToObject(o, "remedy", whatif_remedy_name(w->recommended));
    cJSON_AddStringToObject(o, "reason", w->reason);
    if (w->best.tp_heads != NULL && w->best.tp_cols != NULL) {
        b = cJSON_AddObjectToObject(o, "shards");
        if (b != NULL) {
            cJSON_AddItemToObject(b, "heads", int_list(w->best.tp_heads, nr));
            cJSON_AddItemToObject(b, "mlp_cols", int_list(w->best.tp_cols, nr));
        }
    }
    if (w->best.bounds != NULL)
        cJSON_AddItemToObject(o, "stage_boundaries",
                              int_list(w->best.bounds, w->best.pp + 1));
    text = cJSON_Print(doc);
done:
    cJSON_Delete(doc);
    return text;
}

/* Remedy names for people (whatif_remedy_name stays the JSON name). */
static const char *remedy_words(int i)
{
    static const char *const words[WHATIF_NREMEDIES] = {
        "keep the plan", "re-split shards", "re-plan stages",
        "shrink slow ranks", "move work + shrink"};

    return i >= 0 && i < WHATIF_NREMEDIES ? words[i] : "?";
}

char *whatif_table(const whatif_result *w, const char *plan_path,
                        int strategy)
{
    util_buf b;
    int i;

    memset(&b, 0, sizeof b);
    util_buf_printf(&b, "what-if for strategy %d of '%s'\n", strategy, plan_path ? plan_path : "");
    util_buf_printf(&b, "without slow GPUs: %.4f s per iteration\n\n", w->base_s);
    util_buf_printf(&b, "slow GPUs:\n%-5s %-6s %-5s %-7s %-9s %-11s %-15s %-9s %s\n",
       "rank", "device", "stage", "replica", "slowdown", "stage (ms)",
       "TP group (ms)", "shrink by", "when moving work + shrinking");
    for (i = 0; i < w->nstragglers; i++) {
        const whatif_straggler *st = &w->stragglers[i];
        char pct[16];
        snprintf(pct, sizeof pct, "%.0f%%", 100.0 * st->gamma);
        util_buf_printf(&b, "%-5d %-6d %-5d %-7d %-9.2f %-11.3f %-15.3f %-9s %s\n",
           st->rank, st->device, st->stage, st->replica, st->factor, 1e3 * st->t_s,
           1e3 * st->t_avg_s, pct, st->migrate ? "hands work to faster ranks"
                                               : "shrinks its share");
    }
    util_buf_printf(&b, "\n%-27s %-10s %-12s %-8s %-10s %-7s %s\n", "remedy (JSON name)",
       "accuracy", "iteration s", "speedup", "one-off s", "shrink", "what it does");
    for (i = 0; i < WHATIF_NREMEDIES; i++) {
        const whatif_remedy *r = &w->remedies[i];
        char name[48], pct[16];
        snprintf(name, sizeof name, "%s (%s)", remedy_words(i), whatif_remedy_name(i));
        snprintf(pct, sizeof pct, "%.0f%%", 100.0 * r->max_gamma);
        if (r->applicable)
            util_buf_printf(&b, "%-27s %-10s %-12.4f %-8.3f %-10.4g %-7s %s%s\n",
               name, r->lossless ? "unchanged" : "may drop", r->iter_s,
               w->remedies[0].iter_s / r->iter_s, r->one_off_s, pct,
               r->note, r->fits ? "" : " (does not fit memory)");
        else
            util_buf_printf(&b, "%-27s %-10s %-12s %-8s %-10s %-7s %s\n", name, "-",
               "-", "-", "-", "-", r->note);
    }
    util_buf_printf(&b, "\nrecommended: %s (%s)\n  %s\n", remedy_words(w->recommended),
                    whatif_remedy_name(w->recommended), w->reason);
    return util_buf_take(&b);
}
