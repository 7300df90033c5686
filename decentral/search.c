/* decentral/search.c: schedulers for decentralized training (DT-FM, Yuan
 * et al., NeurIPS'22, section 3.4): the method names and parameters, the
 * moves the searchers share and the driver that runs one of them.  The
 * hybrid GA is in decentral/ga.c, Kernighan-Lin local search, simulated
 * annealing and random assignment in decentral/baselines.c, the exhaustive
 * optimum in decentral/exact.c, the incremental evaluator they all use in
 * decentral/state.c.  Single-threaded, so a seed gives the same result on
 * any machine for an evaluation limit. */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WEIGHT_ROWS 64 /* rows of the weight tables between looks at the clock */

static const char *const method_names[DTFM_NMETHODS] = {
    "ga", "sa", "kl", "random", "exact"};

const char *dtfm_method_name(int method)
{
    if (method < 0 || method >= DTFM_NMETHODS)
        return NULL;
    return method_names[method];
}

int dtfm_method_from_name(const char *name)
{
    int i;

    if (name == NULL)
        return -1;
    for (i = 0; i < DTFM_NMETHODS; i++)
        if (strcmp(name, method_names[i]) == 0)
            return i;
    return -1;
}

void dtfm_search_params_init(dtfm_search_params *p)
{
    memset(p, 0, sizeof *p);
    p->method = DTFM_GA;
    p->seed = 0;
    p->seconds = 0.0;
    p->max_evals = 0;
    p->stall = 0;
    p->population = 32;
    p->ls_passes = 0;
    p->checkpoint_s = 0.0;
    p->progress = NULL;
    p->progress_ctx = NULL;
    p->budget_start_s = 0.0;
    p->reserve_s = 0.0;
}

void dtfm_search_result_free(dtfm_search_result *r)
{
    if (r == NULL)
        return;
    free(r->group_of);
    dtfm_result_free(&r->result);
    memset(r, 0, sizeof *r);
}

/* ---- moves shared by the searchers ----------------------------------- */

void dtfm_shuffle(util_pcg32 *rng, int *a, int n)
{
    int i;

    for (i = n - 1; i > 0; i--) {
        int j = (int)util_pcg32_bounded(rng, (uint32_t)(i + 1)), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

void dtfm_random_partition(dtfm_ctx *c, int *grp)
{
    int i;

    for (i = 0; i < c->n; i++)
        grp[i] = i / c->g;
    dtfm_shuffle(&c->rng, grp, c->n);
}

/* Full pair-swap descent (first improvement, with the tie-break): the
 * polish given to offspring that reach the best cost so far. */
void dtfm_polish(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s)
{
    int improved = 1, g = c->g, k = c->k, a, b, i, j;

    while (improved && !c->stop) {
        improved = 0;
        for (a = 0; a < k && !c->stop; a++)
            for (b = a + 1; b < k && !c->stop; b++)
                for (i = 0; i < g && !c->stop; i++)
                    for (j = 0; j < g && !c->stop; j++) {
                        dtfm_tx_begin(t, s);
                        dtfm_tx_swap(c, t, s, s->mem[a * g + i], s->mem[b * g + j]);
                        improved |= dtfm_tx_keep_if_better(c, t, s);
                    }
    }
}

/* ---- driver ---------------------------------------------------------- */

static void work_free(dtfm_work *w)
{
    dtfm_state_free(&w->s);
    dtfm_tx_free(&w->t);
    free(w->pairs);
    free(w->D);
    free(w->seq);
    free(w->locked);
    free(w->map2);
    free(w->overlap);
    free(w->size);
    free(w->order);
    free(w->lock);
    free(w->kseq);
    free(w->fx);
    free(w->fy);
    free(w->gsum);
}

static int work_alloc(dtfm_ctx *c, dtfm_work *w)
{
    int k = c->k, g = c->g, n = c->n, a, b;

    memset(w, 0, sizeof *w);
    if (!dtfm_state_alloc(&w->s, n, k, g) || !dtfm_tx_alloc(&w->t, k, g))
        return 0;
    w->pairs = malloc((size_t)k * (size_t)k * sizeof *w->pairs);
    w->D = malloc((size_t)(2 * g) * sizeof *w->D);
    w->seq = malloc((size_t)(2 * g) * sizeof *w->seq);
    w->locked = malloc((size_t)(2 * g));
    w->map2 = malloc((size_t)k * sizeof *w->map2);
    w->overlap = malloc((size_t)k * (size_t)k * sizeof *w->overlap);
    w->size = malloc((size_t)k * sizeof *w->size);
    w->order = malloc((size_t)n * sizeof *w->order);
    w->lock = malloc((size_t)n);
    w->kseq = malloc((size_t)(n + 2) * sizeof *w->kseq);
    w->fx = malloc((size_t)k * sizeof *w->fx);
    w->fy = malloc((size_t)k * sizeof *w->fy);
    w->gsum = malloc((size_t)n * sizeof *w->gsum);
    if (!w->gsum || !w->pairs || !w->D || !w->seq || !w->locked || !w->map2 ||
        !w->overlap || !w->size || !w->order || !w->lock || !w->kseq ||
        !w->fx || !w->fy)
        return 0;
    w->npairs = 0;
    for (a = 0; a < k; a++)
        for (b = a + 1; b < k; b++)
            w->pairs[w->npairs++] = a * k + b;
    return 1;
}

static void ctx_free(dtfm_ctx *c)
{
    free(c->wdp);
    free(c->wpp);
    free(c->kl_aff);
    free(c->zob);
    free(c->sub);
    free(c->hk);
    free(c->tsp_order);
    free(c->mstkey);
    free(c->cache);
    free(c->best_grp);
}

/* Number groups as dtfm_evaluate does (by their smallest device). */
static void renumber(const dtfm_result *res, int *group_of)
{
    int q, j;

    for (q = 0; q < res->k; q++)
        for (j = 0; j < res->g; j++)
            group_of[res->members[q * res->g + j]] = q;
}

/* A search whose time budget was spent before it began (loading took
 * it): the schedule of devices in order, evaluated without the n * n
 * weight tables. */
static int spent_search(const dtfm_problem *p, double t0, dtfm_search_result *out,
                        util_error *err)
{
    int i, rc;

    out->group_of = malloc((size_t)p->n * sizeof *out->group_of);
    if (out->group_of == NULL)
        return util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
    for (i = 0; i < p->n; i++)
        out->group_of[i] = i / p->d_dp;
    rc = dtfm_evaluate_weights(p, NULL, NULL, out->group_of, &out->result, err);
    if (rc != UTIL_OK) {
        dtfm_search_result_free(out);
        return rc;
    }
    out->n = p->n;
    out->cost_s = out->result.total_s;
    out->evaluated = 1;
    out->generations = 1;
    out->elapsed_s = dtfm_now_s() - t0;
    out->best_at_s = out->elapsed_s;
    out->checkpoint_cost_s = -1.0;
    out->timed_out = 1;
    return UTIL_ETIMEOUT;
}

/* The exact search beyond DTFM_EXACT_MAX devices: the GA's schedule
 * (20 000 evaluations, at most a quarter of the time budget) as the
 * incumbent of the branch and bound over classes of interchangeable
 * devices (decentral/classes.c), whose nodes count as evaluations. */
static int exact_by_classes(const dtfm_problem *p, const dtfm_search_params *sp,
                            dtfm_search_result *out, util_error *err)
{
    dtfm_prove_params pp;
    dtfm_search_params gsp;
    dtfm_search_result ga;
    dtfm_proof pr;
    dtfm_result res;
    double t0 = dtfm_now_s(), end = 0.0;
    int rc, i, n = p->n;

    /* sizes declined before any O(n^2) work */
    if (n > DTFM_EXACT_CLASSES_MAX || p->d_dp > DTFM_EXACT_STAGE_MAX)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "the exact search handles at most %d devices in all "
                              "and %d per stage, got %d devices, %d per stage",
                              DTFM_EXACT_CLASSES_MAX, DTFM_EXACT_STAGE_MAX, n,
                              p->d_dp);
    dtfm_prove_params_init(&pp);
    pp.max_nodes = 1; /* is the instance accepted? */
    if ((rc = dtfm_prove(p, &pp, &pr, err)) != UTIL_OK)
        return rc;
    if (pr.classes == 0) {
        dtfm_proof_free(&pr);
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "the exact search handles at most %d devices, or devices "
                              "in at most 32 classes of identical links giving at most 200000 "
                              "stage compositions; got %d devices",
                              DTFM_EXACT_MAX, n);
    }
    dtfm_proof_free(&pr);
    dtfm_prove_params_init(&pp);
    gsp = *sp;
    gsp.method = DTFM_GA;
    gsp.max_evals = 20000;
    gsp.stall = 0;
    gsp.checkpoint_s = 0;
    gsp.budget_start_s = 0;
    gsp.reserve_s = 0;
    if (sp->seconds > 0) {
        /* the budget less the caller's reserve and 1% for the final
         * evaluation and output */
        end = (sp->budget_start_s > 0 ? sp->budget_start_s : t0) + sp->seconds -
              (sp->reserve_s > 0 ? sp->reserve_s : 0.0) - 0.01 * sp->seconds;
        gsp.seconds = end > t0 ? 0.25 * (end - t0) : 1e-9;
    }
    rc = dtfm_search(p, &gsp, &ga, err);
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT)
        return rc;
    pp.upper_s = ga.cost_s;
    pp.max_nodes = sp->max_evals;
    if (sp->seconds > 0) {
        double now = dtfm_now_s();
        pp.seconds = end > now ? end - now : 1e-9;
    }
    if ((rc = dtfm_prove(p, &pp, &pr, err)) != UTIL_OK) {
        dtfm_search_result_free(&ga);
        return rc;
    }
    *out = ga;
    if (pr.group_of) { /* cheaper than the GA's */
        for (i = 0; i < n; i++)
            out->group_of[i] = pr.group_of[i];
        rc = dtfm_evaluate(p, out->group_of, &res, err);
        if (rc != UTIL_OK) {
            dtfm_proof_free(&pr);
            dtfm_search_result_free(out);
            return rc;
        }
        renumber(&res, out->group_of);
        out->cost_s = res.total_s;
        out->best_at_s = dtfm_now_s() - t0;
        dtfm_result_free(&out->result);
        out->result = res;
    }
    out->evaluated += pr.nodes;
    out->generations += pr.nodes;
    out->elapsed_s = dtfm_now_s() - t0;
    out->checkpoint_cost_s = -1.0;
    out->timed_out = !pr.complete && sp->seconds > 0 && dtfm_now_s() >= end;
    dtfm_proof_free(&pr);
    return out->timed_out ? UTIL_ETIMEOUT : UTIL_OK;
}

/* The weight tables, WEIGHT_ROWS rows at a time: 0 when the time budget
 * ends first, or when an eighth of the rows is done and the rate so far
 * says it will (no time would be left to search with them). */
static int fill_weights(dtfm_ctx *c)
{
    int n = c->n, i0, i1;
    double t0 = dtfm_now_s(), now;

    for (i0 = 0; i0 < n; i0 = i1) {
        i1 = i0 + WEIGHT_ROWS < n ? i0 + WEIGHT_ROWS : n;
        dtfm_weights_rows(c->p, c->wdp, c->wpp, i0, i1);
        if (c->deadline > 0 && i1 < n) {
            now = dtfm_now_s();
            if (now >= c->deadline ||
                (i1 >= n / 8 &&
                 now + (now - t0) * (double)(n - i1) / (double)i1 >= c->deadline))
                return 0;
        }
    }
    return 1;
}

int dtfm_search(const dtfm_problem *p, const dtfm_search_params *sp,
                dtfm_search_result *out, util_error *err)
{
    dtfm_ctx c;
    dtfm_work w;
    dtfm_result res;
    int rc, i, n = p->n, k = p->d_pp, g = p->d_dp;
    size_t nn = (size_t)n * (size_t)n;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    memset(&w, 0, sizeof w);
    memset(&res, 0, sizeof res);
    if ((rc = dtfm_problem_check(p, err)) != UTIL_OK)
        return rc;
    if (sp->method < 0 || sp->method >= DTFM_NMETHODS)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "unknown search method %d", sp->method);
    if (sp->method == DTFM_EXACT && n > DTFM_EXACT_MAX)
        return exact_by_classes(p, sp, out, err);
    if (sp->seconds > 0 &&
        dtfm_now_s() >= (sp->budget_start_s > 0 ? sp->budget_start_s : dtfm_now_s()) +
                            sp->seconds - (sp->reserve_s > 0 ? sp->reserve_s : 0.0))
        return spent_search(p, dtfm_now_s(), out, err);
    c.p = p;
    c.sp = sp;
    c.n = n;
    c.k = k;
    c.g = g;
    c.comp = p->compute;
    c.best = DBL_MAX;
    c.checkpoint_cost = -1.0;
    c.stall = sp->stall;
    if (c.stall <= 0 && sp->max_evals <= 0 && sp->seconds <= 0)
        c.stall = sp->method == DTFM_SA ? 3 : 200; /* some limit */
    c.t0 = dtfm_now_s();
    if (sp->seconds > 0) {
        c.deadline = (sp->budget_start_s > 0 ? sp->budget_start_s : c.t0) +
                     sp->seconds - (sp->reserve_s > 0 ? sp->reserve_s : 0.0);
        if (c.deadline <= 0)
            c.deadline = 1e-300; /* spent: stop after the first schedule */
    }
    util_pcg32_seed(&c.rng, sp->seed, 0x6474666dULL /* "dtfm" */);
    c.wdp = malloc(nn * sizeof *c.wdp);
    c.wpp = malloc(nn * sizeof *c.wpp);
    if (g <= 256)
        c.kl_aff = malloc((size_t)(2 * g) * (size_t)(2 * g) * sizeof *c.kl_aff);
    c.zob = malloc((size_t)n * sizeof *c.zob);
    c.sub = malloc((size_t)g * (size_t)g * sizeof *c.sub);
    c.tsp_order = malloc((size_t)(k > n ? k : n) * sizeof *c.tsp_order);
    c.mstkey = malloc((size_t)k * sizeof *c.mstkey);
    c.cache = malloc(((size_t)1 << DTFM_CACHE_BITS) * sizeof *c.cache);
    c.best_grp = malloc((size_t)n * sizeof *c.best_grp);
    if (k <= DTFM_HK_INNER_MAX)
        c.hk = malloc(((size_t)1 << k) * (size_t)k * sizeof *c.hk);
    out->group_of = malloc((size_t)n * sizeof *out->group_of);
    if (!c.wdp || !c.wpp || (g <= 256 && !c.kl_aff) || !c.zob || !c.sub || !c.tsp_order || !c.mstkey ||
        !c.cache || !c.best_grp || (k <= DTFM_HK_INNER_MAX && !c.hk) ||
        !out->group_of || !work_alloc(&c, &w)) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    if (!fill_weights(&c)) {
        ctx_free(&c);
        work_free(&w);
        dtfm_search_result_free(out);
        return spent_search(p, c.t0, out, err);
    }
    for (i = 0; i < n; i++) {
        uint64_t hi = util_pcg32_next(&c.rng), lo = util_pcg32_next(&c.rng);
        c.zob[i] = hi << 32 | lo;
    }
    for (i = 0; i < (1 << DTFM_CACHE_BITS); i++) {
        c.cache[i].ka = c.cache[i].kb = 0;
        c.cache[i].v = -1.0;
    }
    if (c.deadline > 0 && dtfm_now_s() < c.deadline) {
        /* time one full evaluation, to leave room at the end of the budget
         * for the final one and the output */
        double t1;
        for (i = 0; i < n; i++)
            c.best_grp[i] = i / g;
        t1 = dtfm_now_s();
        rc = dtfm_evaluate_weights(p, c.wdp, c.wpp, c.best_grp, &res, err);
        c.build_s = dtfm_now_s() - t1;
        dtfm_result_free(&res);
        if (rc != UTIL_OK)
            goto done;
    }
    switch (sp->method) {
    case DTFM_GA:
        rc = dtfm_run_ga(&c, &w, 0, err);
        break;
    case DTFM_KL:
        rc = dtfm_run_ga(&c, &w, 1, err);
        break;
    case DTFM_SA:
        dtfm_run_sa(&c, &w);
        break;
    case DTFM_RANDOM:
        dtfm_run_random(&c, &w);
        break;
    default:
        dtfm_run_exact(&c, &w);
        break;
    }
    if (rc != UTIL_OK)
        goto done;
    if (c.best == DBL_MAX) {
        rc = util_error_set(err, UTIL_EINTERNAL, "", "",
                            "the search evaluated no schedule");
        goto done;
    }
    rc = dtfm_evaluate_weights(p, c.wdp, c.wpp, c.best_grp, &out->result, err);
    if (rc != UTIL_OK)
        goto done;
    /* report groups numbered as dtfm_evaluate numbers them */
    renumber(&out->result, out->group_of);
    out->n = n;
    out->cost_s = out->result.total_s;
    out->evaluated = c.evals;
    out->generations = c.gens;
    out->elapsed_s = dtfm_now_s() - c.t0;
    out->best_at_s = c.best_at;
    if (!c.checkpoint_done && sp->checkpoint_s > 0)
        c.checkpoint_cost = out->elapsed_s <= sp->checkpoint_s ? out->result.total_s
                                                               : c.best;
    out->checkpoint_cost_s = c.checkpoint_cost;
    out->timed_out = c.timed_out;
    dtfm_report(&c, 1);
    rc = c.timed_out ? UTIL_ETIMEOUT : UTIL_OK;
done:
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT)
        dtfm_search_result_free(out);
    dtfm_result_free(&res);
    work_free(&w);
    ctx_free(&c);
    return rc;
}
