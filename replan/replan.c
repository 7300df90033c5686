/* replan/replan.c: elastic re-planning as layers freeze (after
 * PipeTransformer, seeds/003): with the first K layers frozen (forward
 * only, no gradients, no optimizer state) re-balance the pipeline
 * (AutoPipe's partitioning, here the exact DP of search_assign_layers),
 * compress it to fewer stages while every stage fits memory (AutoPipe
 * halves the stage count), search the micro-batch count with the cost
 * model (the paper finds the best between K and 6K for K stages) and turn
 * the GPUs freed into more data-parallel replicas (AutoDP). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "replan.h"
#include "plan.h"
#include "formats.h"

void replan_params_init(replan_params *p)
{
    memset(p, 0, sizeof *p);
    p->compress = 1;
    p->placements = (1u << SEARCH_PLACE_NPLACEMENTS) - 1u;
}

void replan_freeze_free(replan_freeze *f)
{
    if (f == NULL)
        return;
    free(f->phases);
    memset(f, 0, sizeof *f);
}

static int whole(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 1e9;
}

int replan_parse_freeze(const char *text, const char *file, int nlayers,
                      replan_freeze *out, util_error *err)
{
    static const char *const root_keys[] = {"total_epochs", "epochs", NULL};
    static const char *const phase_keys[] = {"epoch", "frozen", NULL};
    cJSON *doc = NULL;
    const cJSON *arr, *e, *te;
    char jp[64];
    int rc, i = 0;

    memset(out, 0, sizeof *out);
    if ((rc = util_json_parse_object(text, file, &doc, err)) != UTIL_OK)
        return rc;
    if ((rc = fmt_check_keys(file, doc, "", root_keys, err)) != UTIL_OK)
        goto done;
    arr = cJSON_GetObjectItemCaseSensitive(doc, "epochs");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0) {
        rc = util_error_set(err, UTIL_EFIELD, file, "epochs",
                            "expected a non-empty array of {\"epoch\", \"frozen\"}, "
                            "got %s", util_json_type(arr));
        goto done;
    }
    if (cJSON_GetArraySize(arr) > REPLAN_MAX_PHASES) {
        rc = util_error_set(err, UTIL_EFIELD, file, "epochs",
                            "expected at most %d phases (each is re-planned), got %d",
                            REPLAN_MAX_PHASES, cJSON_GetArraySize(arr));
        goto done;
    }
    out->phases = calloc((size_t)cJSON_GetArraySize(arr), sizeof *out->phases);
    if (out->phases == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, file, NULL, "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *ep = cJSON_GetObjectItemCaseSensitive(e, "epoch");
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(e, "frozen");
        replan_freeze_phase *ph = &out->phases[i];
        snprintf(jp, sizeof jp, "epochs[%d].epoch", i);
        if (!cJSON_IsObject(e)) {
            snprintf(jp, sizeof jp, "epochs[%d]", i);
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "expected an object, got %s", util_json_type(e));
            goto done;
        }
        snprintf(jp, sizeof jp, "epochs[%d]", i);
        if ((rc = fmt_check_keys(file, e, jp, phase_keys, err)) != UTIL_OK)
            goto done;
        snprintf(jp, sizeof jp, "epochs[%d].epoch", i);
        if (!whole(ep) || ep->valuedouble < 0) {
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "expected a whole epoch number >= 0, got %s",
                                util_json_type(ep));
            goto done;
        }
        ph->epoch = (int)ep->valuedouble;
        if (i == 0 && ph->epoch != 0) {
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "the first phase must start at epoch 0, got %d",
                                ph->epoch);
            goto done;
        }
        if (i > 0 && ph->epoch <= out->phases[i - 1].epoch) {
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "expected epochs in increasing order, got %d after %d",
                                ph->epoch, out->phases[i - 1].epoch);
            goto done;
        }
        snprintf(jp, sizeof jp, "epochs[%d].frozen", i);
        if (!whole(fr) || fr->valuedouble < 0 || fr->valuedouble >= nlayers) {
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "expected a whole number of frozen layers in 0..%d "
                                "(the model has %d layers), got %s%s", nlayers - 1,
                                nlayers, util_json_type(fr),
                                cJSON_IsNumber(fr) ? " out of range" : "");
            goto done;
        }
        ph->frozen = (int)fr->valuedouble;
        if (i > 0 && ph->frozen < out->phases[i - 1].frozen) {
            rc = util_error_set(err, UTIL_EFIELD, file, jp,
                                "freezing is progressive: expected at least %d "
                                "frozen layers, got %d",
                                out->phases[i - 1].frozen, ph->frozen);
            goto done;
        }
        i++;
    }
    out->n = i;
    out->total_epochs = out->phases[i - 1].epoch + 1;
    te = cJSON_GetObjectItemCaseSensitive(doc, "total_epochs");
    if (te != NULL) {
        if (!whole(te) || te->valuedouble <= out->phases[i - 1].epoch) {
            rc = util_error_set(err, UTIL_EFIELD, file, "total_epochs",
                                "expected a whole number above the last phase's "
                                "epoch %d, got %s", out->phases[i - 1].epoch,
                                util_json_type(te));
            goto done;
        }
        out->total_epochs = (int)te->valuedouble;
    }
done:
    cJSON_Delete(doc);
    if (rc != UTIL_OK)
        replan_freeze_free(out);
    return rc;
}

int replan_load_freeze(const char *path, int nlayers, replan_freeze *out,
                     util_error *err)
{
    char *text = NULL;
    int rc = util_read_file(path, &text, err);

    memset(out, 0, sizeof *out);
    if (rc == UTIL_OK)
        rc = replan_parse_freeze(text, path, nlayers, out, err);
    free(text);
    return rc;
}

void replan_free(replan_result *r)
{
    int i;

    if (r == NULL)
        return;
    for (i = 0; i < r->n; i++) {
        fmt_strategy_free(&r->phases[i].s);
        cost_result_free(&r->phases[i].r);
    }
    free(r->phases);
    memset(r, 0, sizeof *r);
}

/* Keep cand when it fits and beats *best (ownership moves); else free it. */
static void keep_best(fmt_strategy *cand, cost_result *cr, fmt_strategy *best,
                      cost_result *br)
{
    if (cr->fits && (best->bounds == NULL || cr->iter_s < br->iter_s * (1.0 - 1e-12))) {
        fmt_strategy_free(best);
        cost_result_free(br);
        *best = *cand;
        *br = *cr;
        memset(cand, 0, sizeof *cand);
        memset(cr, 0, sizeof *cr);
    }
    fmt_strategy_free(cand);
    cost_result_free(cr);
}

/* Layers, shards (mixed TP groups) and evaluation of cand; UTIL_EINFEASIBLE
 * when no assignment fits. */
static int score(const fmt_cluster *c, const fmt_model *m,
                 const fmt_profile *prof, const cost_params *cp,
                 const replan_params *rp, fmt_strategy *cand, cost_result *r,
                 util_error *err)
{
    search_shard_params shp;
    const search_launcher *lc = &rp->launcher;
    int rc = search_assign_layers_for(c, m, prof, cp, lc, cand, err);

    if (rc != UTIL_OK)
        return rc;
    search_shard_params_init(&shp);
    if (!lc->no_uneven_tp &&
        (rc = search_shard_refine(c, m, prof, cp, &shp, cand, err)) != UTIL_OK)
        return rc;
    if ((rc = cost_evaluate(c, m, prof, cp, cand, r, err)) != UTIL_OK)
        return rc;
    if (!search_launcher_ok(c, m, lc, cand, NULL, 0)) { /* the launcher cannot run it */
        cost_result_free(r);
        return UTIL_EINFEASIBLE;
    }
    return UTIL_OK;
}

/* Seconds of a monotonic clock. */
static double replan_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every placement rule and micro-batch size for (tp, dp, pp); *fit set
 * when a candidate fits.  *deadline (monotonic s, 0 = none) is checked
 * after every candidate scored and every 2^20 sizes; once passed it
 * becomes -1 and the search stops. */
static int try_shape(const fmt_cluster *c, const fmt_model *m,
                     const fmt_profile *prof, const cost_params *cp,
                     const fmt_strategy *s0, const replan_params *rp,
                     int pp, replan_phase *ph, int *fit, double *deadline,
                     util_error *err)
{
    /* the first plan's GPUs: all of c's, or those it runs on when it
     * leaves some idle (they stay idle) */
    int n = s0->tp * s0->dp * s0->pp, subset = n < c->ndevices;
    int tp = s0->tp, dp = n / (tp * pp), gbs = rp->global_batch;
    int rule, mbs, rc = UTIL_OK;

    if (n % (tp * pp) != 0 || gbs % dp != 0 || pp > m->nlayers)
        return UTIL_OK;
    for (rule = -1; rule < SEARCH_PLACE_NPLACEMENTS && *deadline >= 0.0; rule++) {
        /* rule -1: the first plan's own ranks in their order, when the
         * shape is its own or its GPUs are a subset (TP groups stay whole:
         * they are runs of tp consecutive ranks); the rules place on all
         * of c's GPUs */
        if (rule < 0 && pp != s0->pp && !subset)
            continue;
        if (rule >= 0 && (subset || !(rp->placements & (1u << rule))))
            continue;
        for (mbs = 1; mbs <= gbs / dp; mbs++) {
            fmt_strategy cand;
            cost_result r;
            int arc;
            /* a batch of 10^9 has few divisors among many sizes */
            if ((mbs & 0xfffff) == 0 && *deadline > 0.0 && replan_now() >= *deadline) {
                *deadline = -1.0;
                break;
            }
            if ((gbs / dp) % mbs != 0 || (rp->max_mbs > 0 && mbs > rp->max_mbs))
                continue;
            memset(&r, 0, sizeof r);
            if (fmt_strategy_alloc(&cand, tp, dp, pp) != UTIL_OK)
                return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            cand.mbs = mbs;
            cand.gas = gbs / (dp * mbs);
            cand.schedule = s0->schedule;
            if (rule < 0) {
                memcpy(cand.ranks, s0->ranks,
                       (size_t)(tp * dp * pp) * sizeof *cand.ranks);
                snprintf(cand.placement, sizeof cand.placement, "%s", s0->placement);
            } else if ((rc = search_place(c, rule, &cand, err)) != UTIL_OK) {
                fmt_strategy_free(&cand);
                return rc;
            }
            arc = score(c, m, prof, cp, rp, &cand, &r, err);
            if (arc == UTIL_EINFEASIBLE) {
                fmt_strategy_free(&cand);
                continue;
            }
            if (arc != UTIL_OK) {
                fmt_strategy_free(&cand);
                return arc;
            }
            ph->candidates++;
            if (r.fits)
                *fit = 1;
            keep_best(&cand, &r, &ph->s, &ph->r);
            if (*deadline > 0.0 && replan_now() >= *deadline) {
                *deadline = -1.0;
                break;
            }
        }
    }
    return rc;
}

static int eval_copy(const fmt_cluster *c, const fmt_model *m,
                     const fmt_profile *prof, const cost_params *cp,
                     const fmt_strategy *s, double *iter, util_error *err)
{
    cost_result r;
    int rc = cost_evaluate(c, m, prof, cp, s, &r, err);

    if (rc == UTIL_OK)
        *iter = r.iter_s;
    cost_result_free(&r);
    return rc;
}

static int plan_phase(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *cp0,
                      const fmt_strategy *s, const replan_params *rp,
                      int frozen, replan_phase *ph, double *deadline,
                      util_error *err)
{
    cost_params cp = *cp0;
    fmt_strategy reb;
    cost_result rr;
    int rc, pp, arc;

    memset(&reb, 0, sizeof reb);
    memset(&rr, 0, sizeof rr);
    cp.frozen_layers = frozen;
    cp.schedule = s->schedule;
    ph->frozen = frozen;
    if ((rc = eval_copy(c, m, prof, &cp, s, &ph->keep_s, err)) != UTIL_OK)
        return rc;
    /* re-balance only: same degrees, ranks and micro-batches */
    if ((rc = fmt_strategy_copy(&reb, s)) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    arc = score(c, m, prof, &cp, rp, &reb, &rr, err);
    if (arc == UTIL_OK) {
        ph->rebalance_s = rr.iter_s;
        ph->candidates++;
        keep_best(&reb, &rr, &ph->s, &ph->r);
    } else if (arc == UTIL_EINFEASIBLE) {
        ph->rebalance_s = ph->keep_s;
        fmt_strategy_free(&reb);
    } else {
        fmt_strategy_free(&reb);
        return arc;
    }
    /* nothing frozen: the first plan stays (re-planning follows freezing) */
    if (frozen == 0) {
        fmt_strategy_free(&ph->s);
        cost_result_free(&ph->r);
        ph->candidates = 1;
    }
    /* the first plan as it is stays a candidate */
    if ((rc = fmt_strategy_copy(&reb, s)) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    if ((rc = cost_evaluate(c, m, prof, &cp, &reb, &rr, err)) != UTIL_OK) {
        fmt_strategy_free(&reb);
        return rc;
    }
    keep_best(&reb, &rr, &ph->s, &ph->r);
    if (frozen == 0 && ph->s.bounds != NULL) {
        ph->rebalance_s = ph->keep_s;
        goto chosen;
    }
    /* halve the stage count while some candidate still fits memory */
    for (pp = s->pp; pp >= 1 && *deadline >= 0.0; pp = pp % 2 == 0 ? pp / 2 : 0) {
        int fit = 0;
        if ((rc = try_shape(c, m, prof, &cp, s, rp, pp, ph, &fit, deadline,
                            err)) != UTIL_OK)
            return rc;
        if (!rp->compress || !fit)
            break;
    }
    if (ph->s.bounds == NULL)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no plan fits memory with %d frozen layers", frozen);
chosen:
    ph->best_s = ph->r.iter_s;
    ph->compressed = ph->s.pp < s->pp;
    ph->mb_lo = ph->s.pp;
    ph->mb_hi = 6 * ph->s.pp;
    return UTIL_OK;
}

int replan_run(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_strategy *s, const replan_freeze *f,
                    const replan_params *rp, replan_result *out,
                    util_error *err)
{
    cost_params p0 = *cp;
    int i, rc = UTIL_OK, total = 0;
    double deadline = rp->time_limit_s > 0.0 ? replan_now() + rp->time_limit_s : 0.0;

    memset(out, 0, sizeof *out);
    if (f == NULL || f->n < 1 || rp->global_batch < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "replan needs at least one phase and a global batch");
    out->phases = calloc((size_t)f->n, sizeof *out->phases);
    if (out->phases == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    out->n = f->n;
    p0.frozen_layers = 0;
    p0.schedule = s->schedule;
    if ((rc = eval_copy(c, m, prof, &p0, s, &out->first_s, err)) != UTIL_OK)
        goto done;
    for (i = 0; i < f->n; i++) {
        replan_phase *ph = &out->phases[i];
        int end = i + 1 < f->n ? f->phases[i + 1].epoch : f->total_epochs;
        ph->epoch = f->phases[i].epoch;
        ph->epochs = end - ph->epoch;
        rc = plan_phase(c, m, prof, cp, s, rp, f->phases[i].frozen, ph, &deadline,
                        err);
        if (rc != UTIL_OK)
            goto done;
        out->keep_total_s += (double)ph->epochs * ph->keep_s;
        out->best_total_s += (double)ph->epochs * ph->best_s;
        total += ph->epochs;
    }
    out->timed_out = deadline < 0.0;
    out->speedup = out->best_total_s > 0.0 ? out->keep_total_s / out->best_total_s : 1.0;
    out->speedup_unfrozen = out->best_total_s > 0.0
                                ? (double)total * out->first_s / out->best_total_s
                                : 1.0;
done:
    if (rc != UTIL_OK)
        replan_free(out);
    return rc;
}

/* ---- output ---------------------------------------------------------- */

static cJSON *ints(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    int i;

    for (i = 0; a != NULL && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

char *replan_json(const replan_result *r, const fmt_cluster *c,
                       const char *plan_path)
{
    cJSON *doc = cJSON_CreateObject(), *arr;
    char *text = NULL;
    int i;

    (void)c;
    if (doc == NULL)
        return NULL;
    cJSON_AddStringToObject(doc, "schema", "hetplan-replan/1");
    cJSON_AddStringToObject(doc, "plan", plan_path ? plan_path : "");
    cJSON_AddNumberToObject(doc, "first_s", r->first_s);
    cJSON_AddNumberToObject(doc, "keep_total_s", r->keep_total_s);
    cJSON_AddNumberToObject(doc, "replanned_total_s", r->best_total_s);
    cJSON_AddNumberToObject(doc, "speedup_over_keeping", r->speedup);
    cJSON_AddNumberToObject(doc, "speedup_over_no_freezing", r->speedup_unfrozen);
    cJSON_AddStringToObject(doc, "status", r->timed_out ? "time-limit" : "complete");
    cJSON_AddStringToObject(doc, "note",
                            "totals are per-iteration times weighted by the epochs "
                            "of each phase (the same iterations per epoch)");
    arr = cJSON_AddArrayToObject(doc, "phases");
    for (i = 0; arr != NULL && i < r->n; i++) {
        const replan_phase *ph = &r->phases[i];
        const fmt_strategy *s = &ph->s;
        cJSON *o = cJSON_CreateObject(), *mb;
        if (o == NULL || !cJSON_AddItemToArray(arr, o))
            goto done;
        cJSON_AddNumberToObject(o, "epoch", ph->epoch);
        cJSON_AddNumberToObject(o, "epochs", ph->epochs);
        cJSON_AddNumberToObject(o, "frozen", ph->frozen);
        cJSON_AddNumberToObject(o, "keep_s", ph->keep_s);
        cJSON_AddNumberToObject(o, "rebalance_s", ph->rebalance_s);
        cJSON_AddNumberToObject(o, "predicted_s", ph->best_s);
        cJSON_AddNumberToObject(o, "speedup_over_keeping",
                                ph->best_s > 0.0 ? ph->keep_s / ph->best_s : 1.0);
        cJSON_AddBoolToObject(o, "compressed", ph->compressed);
        cJSON_AddNumberToObject(o, "tp", s->tp);
        cJSON_AddNumberToObject(o, "dp", s->dp);
        cJSON_AddNumberToObject(o, "pp", s->pp);
        cJSON_AddNumberToObject(o, "mbs", s->mbs);
        cJSON_AddNumberToObject(o, "micro_batches", s->gas);
        mb = cJSON_AddArrayToObject(o, "micro_batch_hint");
        if (mb != NULL) {
            cJSON_AddItemToArray(mb, cJSON_CreateNumber(ph->mb_lo));
            cJSON_AddItemToArray(mb, cJSON_CreateNumber(ph->mb_hi));
        }
        cJSON_AddBoolToObject(o, "micro_batches_in_hint",
                              s->gas >= ph->mb_lo && s->gas <= ph->mb_hi);
        cJSON_AddStringToObject(o, "placement", s->placement);
        cJSON_AddItemToObject(o, "stage_boundaries", ints(s->bounds, s->pp + 1));
        cJSON_AddItemToObject(o, "ranks", ints(s->ranks, s->tp * s->dp * s->pp));
        if (s->tp_heads != NULL && s->tp_cols != NULL) {
            cJSON_AddItemToObject(o, "heads", ints(s->tp_heads, s->tp * s->dp * s->pp));
            cJSON_AddItemToObject(o, "mlp_cols", ints(s->tp_cols, s->tp * s->dp * s->pp));
        }
        cJSON_AddBoolToObject(o, "fits", ph->r.fits);
        cJSON_AddNumberToObject(o, "candidates", ph->candidates);
    }
    text = cJSON_Print(doc);
done:
    cJSON_Delete(doc);
    return text;
}

char *replan_table(const replan_result *r, const char *plan_path)
{
    util_buf b;
    int i;

    memset(&b, 0, sizeof b);
    util_buf_printf(&b, "re-plan of '%s' as layers freeze (first plan: %.4f s per iteration)\n\n",
           plan_path ? plan_path : "", r->first_s);
    util_buf_printf(&b, "%-6s %-6s %-6s %-9s %-9s %-9s %-7s %-4s %-4s %-4s %-4s %-5s %s\n",
           "epoch", "epochs", "frozen", "keep_s", "rebal_s", "best_s", "speedup", "tp",
           "dp", "pp", "mbs", "M", "layers per stage (first-last, inclusive)");
    for (i = 0; i < r->n; i++) {
        const replan_phase *ph = &r->phases[i];
        int j;
        util_buf_printf(&b, "%-6d %-6d %-6d %-9.4f %-9.4f %-9.4f %-7.3f %-4d %-4d %-4d %-4d %-5d ",
               ph->epoch, ph->epochs, ph->frozen, ph->keep_s, ph->rebalance_s,
               ph->best_s, ph->best_s > 0.0 ? ph->keep_s / ph->best_s : 1.0, ph->s.tp,
               ph->s.dp, ph->s.pp, ph->s.mbs, ph->s.gas);
        for (j = 0; j < ph->s.pp; j++)
            util_buf_printf(&b, "%s%d-%d", j ? " " : "", ph->s.bounds[j],
                            ph->s.bounds[j + 1] - 1);
        util_buf_printf(&b, "%s\n", ph->compressed ? " (compressed)" : "");
    }
    util_buf_printf(&b, "\npredicted speed-up over keeping the first plan: %.3f\n", r->speedup);
    util_buf_printf(&b, "predicted speed-up over training without freezing: %.3f\n",
           r->speedup_unfrozen);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
