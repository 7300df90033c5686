/* bench/sailor_opt.c: time and peak-memory accuracy of the cost model on
 * Sailor's measured runs (../shared/data/sailor-opt: 15 OPT-350 runs on
 * GH200 nodes; any run listed in runs.json with its files beside it).
 * Each run's exact strategy is evaluated with cost_evaluate twice: with
 * the model's per-layer profile (profile_<model>.json, when there is
 * one) and analytically (no profile).
 * The data's model files describe OPT-350 as family "gpt2" (a GeLU MLP);
 * the runs trained OPT, whose MLP is a ReLU (Zhang et al. 2022; HF
 * OPTConfig activation_function "relu"), so the bench states "mlp":
 * "relu" in a model file named OPT-* that says family "gpt2" and no
 * "mlp"; every other model file is scored as written.  --mlp X states X
 * in every model file (--mlp gelu scores OPT's files as written);
 * --framework NAME states training.framework NAME in every model file.
 * Usage: sailor-opt [--framework NAME] [--mlp gelu|swiglu|relu] [DATA_DIR]
 * (default ../shared/data/sailor-opt).
 * Prints one JSON object on stdout (with each run's memory terms at its
 * peak rank, "peak_terms", and the scores of each subset of runs, one
 * model on one set of device types, "subsets") and on stderr four lines
 * of peak-memory scores (docs/memory-model.md, "Against measured runs"),
 * a line per subset and a summary line; the summary's memory figures are
 * the model's own, with the runtime memory derived per device and
 * strategy.  A run that cannot be evaluated is left out of the scores
 * ("error" in its object, a stderr line) and a profile that does not load
 * leaves its model's runs scored analytically ("profile_error"); either
 * makes the exit status 1, after the scores of the others.  When the data
 * folder is absent the object says it was skipped (exit status 0). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "calibrate.h"
#include "bench_data.h"

#define MAX_RUNS 512
#define SUBSET_LEN 256

/* The MLP set into every model file loaded (--mlp); NULL: OPT's ReLU
 * into OPT files that describe a GPT-2 block, the others as written. */
static const char *run_mlp = NULL;
/* training.framework set into every model file (--framework); NULL: as
 * written */
static const char *run_framework = NULL;

/* One run of runs.json; a measurement that is null is -1: measured_s
 * of a run that did not run (left out of every score; counted among the
 * failed runs, and among those predicted not to fit when so), the peak of
 * a run whose memory was not measured (left out of the memory scores). */
typedef struct sailor_run {
    const char *tag, *model;
    int gbs, tp, dp, pp, mbs;
    double measured_s, measured_peak;
} sailor_run;

/* Measurement key of run x into *v: a positive number, or -1 for null. */
static int read_measured(const cJSON *x, const char *key, const char *where,
                         double *v, util_error *err)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, key);

    if (cJSON_IsNull(m)) {
        *v = -1.0;
        return UTIL_OK;
    }
    if (cJSON_IsNumber(m) && !(m->valuedouble > 0.0 && isfinite(m->valuedouble)))
        return util_error_set(err, UTIL_EFIELD, where, key,
                              "expected a positive number or null, got %g",
                              m->valuedouble);
    if (!cJSON_IsNumber(m))
        return util_error_set(err, UTIL_EFIELD, where, key,
                              "expected a positive number or null, got %s",
                              util_json_type(m));
    *v = m->valuedouble;
    return UTIL_OK;
}

static int read_run(const cJSON *x, const char *where, sailor_run *r,
                    util_error *err)
{
    const bench_field f[] = {
        {x, "gbs", &r->gbs, NULL}, {x, "tp", &r->tp, NULL},
        {x, "dp", &r->dp, NULL},   {x, "pp", &r->pp, NULL},
        {x, "mbs", &r->mbs, NULL},
    };
    int rc;

    memset(r, 0, sizeof *r);
    r->tag = bench_str(x, "tag");
    r->model = bench_str(x, "model");
    if (r->tag == NULL || r->model == NULL)
        return util_error_set(err, UTIL_EFIELD, where, "tag",
                              "expected strings 'tag' and 'model'");
    if ((rc = bench_fields(f, sizeof f / sizeof f[0], where, err)) != UTIL_OK ||
        (rc = read_measured(x, "measured_s", where, &r->measured_s, err)) != UTIL_OK ||
        (rc = read_measured(x, "measured_peak_bytes", where, &r->measured_peak,
                            err)) != UTIL_OK)
        return rc;
    if (r->measured_s < 0.0) /* a run that did not run has no peak */
        r->measured_peak = -1.0;
    return UTIL_OK;
}

/* ---- peak memory: the model predicts the device memory a process
 * holds (docs/memory-model.md, "Which counter"): the tensors' peak, what
 * torch.cuda.max_memory_allocated reports, plus the runtime memory
 * (CUDA context, cuBLAS workspaces, NCCL buffers, allocator segments)
 * derived per device generation and strategy (costmodel/runtime.c).
 * For comparison the runtime memory is also derived for NCCL without
 * cuMem (nccl_cumem 0), taken as a flat 1 GiB, and
 * as one constant of the stack fitted leave-one-out (each run's constant
 * the mean of the other runs' measured minus predicted tensor peaks). */
static double mem_tensor[MAX_RUNS]; /* predicted peak without the runtime */
static double mem_cap[MAX_RUNS];
static double mem_nocumem[MAX_RUNS]; /* predicted peak with nccl_cumem 0 */
static int run_ran[MAX_RUNS];        /* 1: the run has a measured time */
static int mem_pp[MAX_RUNS];
/* Each run's subset, "<model> on <device types>", and whether its model
 * has a profile (the profile's time scores count only those runs). */
static char run_subset[MAX_RUNS][SUBSET_LEN];
static int run_profiled[MAX_RUNS];

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Mean of the residuals measured - tensor peak of all runs but skip: the
 * least-squares constant for the other runs. */
static double loo_reserve(const calib_trial *tm, int n, int skip)
{
    double sum = 0.0;
    int i, k = 0;

    for (i = 0; i < n; i++)
        if (i != skip && tm[i].measured_s > 0.0) {
            sum += tm[i].measured_s - mem_tensor[i];
            k++;
        }
    return k > 0 ? sum / k : 0.0;
}

/* Scores of trials tm under key, overall and per pipeline depth, on
 * stderr after label; returns the overall MAPE. */
static double scores_by_pp(cJSON *x, const char *key, const calib_trial *tm,
                           int n, const char *label)
{
    calib_trial sub[MAX_RUNS];
    calib_ranking rk;
    char name[64];
    double mape;
    int i, pp, k;

    bench_put_scores(x, key, tm, n, &rk);
    mape = rk.mape;
    fprintf(stderr, "%s MAPE %.1f%%", label, 100.0 * mape);
    for (pp = 1; pp <= 64; pp++) {
        for (i = k = 0; i < n; i++)
            if (mem_pp[i] == pp)
                sub[k++] = tm[i];
        if (k == 0)
            continue;
        snprintf(name, sizeof name, "%s_pp%d", key, pp);
        bench_put_scores(x, name, sub, k, &rk);
        fprintf(stderr, ", pp %d %.1f%%", pp, 100.0 * rk.mape);
    }
    return mape;
}

/* Memory scores of the model (tm: runtime memory derived) overall and per
 * pipeline depth, and for comparison with a flat 1 GiB and with a
 * constant fitted leave-one-out; *mape and *rejects of the model. */
static void memory_scores(cJSON *x, const calib_trial *tm, int n,
                          double *mape, int *rejects)
{
    calib_trial loo[MAX_RUNS], flat[MAX_RUNS], old[MAX_RUNS];
    double all[MAX_RUNS], reserve;
    int i, flat_rejects = 0, loo_rejects = 0, old_rejects = 0;

    *rejects = 0;
    for (i = 0; i < n; i++) {
        *rejects += run_ran[i] && tm[i].predicted_s > mem_cap[i];
        all[i] = loo_reserve(tm, n, i);
        loo[i] = tm[i];
        loo[i].predicted_s = mem_tensor[i] + all[i];
        loo[i].fits = loo[i].predicted_s <= mem_cap[i];
        loo_rejects += run_ran[i] && !loo[i].fits;
        flat[i] = tm[i];
        flat[i].predicted_s = mem_tensor[i] + COST_RESERVE_UNKNOWN;
        flat[i].fits = flat[i].predicted_s <= mem_cap[i];
        flat_rejects += run_ran[i] && !flat[i].fits;
        old[i] = tm[i];
        old[i].predicted_s = mem_nocumem[i];
        old[i].fits = old[i].predicted_s <= mem_cap[i];
        old_rejects += run_ran[i] && !old[i].fits;
    }
    qsort(all, (size_t)n, sizeof all[0], cmp_double);
    reserve = n > 0 ? all[n / 2] : 0.0; /* median over runs */
    fprintf(stderr, "sailor-opt: peak memory, runtime memory derived per "
            "device and strategy:");
    *mape = scores_by_pp(x, "peak_memory", tm, n, "");
    fprintf(stderr, "; %d false rejects\nsailor-opt: peak memory, runtime "
            "memory derived for NCCL without cuMem (nccl_cumem 0):", *rejects);
    scores_by_pp(x, "peak_memory_nccl_cumem0", old, n, "");
    fprintf(stderr, "; %d false rejects\nsailor-opt: peak memory, flat 1 GiB "
            "runtime memory:", old_rejects);
    scores_by_pp(x, "peak_memory_flat_1gib", flat, n, "");
    fprintf(stderr, "; %d false rejects\nsailor-opt: peak memory, runtime "
            "constant fitted leave-one-out (%.2f GiB):", flat_rejects,
            reserve / 1073741824.0);
    scores_by_pp(x, "peak_memory_reserve_loo", loo, n, "");
    fprintf(stderr, "; %d false rejects\n", loo_rejects);
    cJSON_AddNumberToObject(x, "false_rejects_memory", *rejects);
    cJSON_AddNumberToObject(x, "false_rejects_flat_1gib", flat_rejects);
    cJSON_AddNumberToObject(x, "false_rejects_nccl_cumem0", old_rejects);
    cJSON_AddNumberToObject(x, "reserve_loo_bytes", reserve);
    cJSON_AddNumberToObject(x, "false_rejects_reserve_loo", loo_rejects);
}

/* The memory terms of the rank holding the peak (the first rank of each
 * stage, the runtime memory derived for it) into out's "peak_terms"
 * (docs/memory-model.md, "The peak"); returns the tensors' part of that
 * peak, without the runtime memory. */
static double put_terms(cJSON *out, const fmt_cluster *c, const fmt_model *m,
                        const cost_params *cp, const fmt_strategy *s)
{
    cost_memory mem, best;
    cost_runtime rt;
    cJSON *x;
    int j, at = 0;

    memset(&best, 0, sizeof best);
    best.total = -1.0;
    for (j = 0; j < s->pp; j++) {
        cost_rank_stage_memory(m, cp, s, j * s->tp * s->dp, &mem);
        cost_runtime_apply(c, cp, s, j * s->tp * s->dp, &mem);
        if (mem.total > best.total) {
            best = mem;
            at = j;
        }
    }
    cost_runtime_memory(c, cp, s, at * s->tp * s->dp, &rt);
    x = cJSON_AddObjectToObject(out, "peak_terms");
    cJSON_AddNumberToObject(x, "stage", at);
    cJSON_AddNumberToObject(x, "weights", best.weights);
    cJSON_AddNumberToObject(x, "grads", best.grads);
    cJSON_AddNumberToObject(x, "optimizer", best.optimizer);
    cJSON_AddNumberToObject(x, "activations", best.activations);
    cJSON_AddNumberToObject(x, "workspace", best.workspace);
    cJSON_AddNumberToObject(x, "buffers", best.buffers);
    cJSON_AddNumberToObject(x, "bucket", best.bucket);
    cJSON_AddNumberToObject(x, "runtime_context", rt.context);
    cJSON_AddNumberToObject(x, "runtime_cublas", rt.cublas);
    cJSON_AddNumberToObject(x, "runtime_nccl", rt.nccl);
    cJSON_AddNumberToObject(x, "runtime_allocator", rt.allocator);
    cJSON_AddNumberToObject(x, "runtime", best.reserve);
    cJSON_AddNumberToObject(x, "total", best.total);
    return best.total - best.reserve;
}

/* Whether name starts with prefix, ignoring case. */
static int starts_with_nocase(const char *name, const char *prefix)
{
    for (; *prefix; name++, prefix++)
        if (*name == '\0' || tolower((unsigned char)*name) != tolower((unsigned char)*prefix))
            return 0;
    return 1;
}

/* The MLP to state in the model file of run model `name` whose
 * transformer shorthand is tf: --mlp's, else OPT's ReLU where an OPT
 * model is described as a GPT-2 block without an "mlp", else none (the
 * file as written). */
static const char *stated_mlp(const cJSON *tf, const char *name)
{
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(tf, "family");

    if (run_mlp != NULL)
        return run_mlp;
    if (starts_with_nocase(name, "opt") &&
        !cJSON_HasObjectItem(tf, "mlp") &&
        (fam == NULL || (cJSON_IsString(fam) && strcmp(fam->valuestring, "gpt2") == 0)))
        return "relu";
    return NULL;
}

/* The model file at path of run model `name`, with transformer.mlp set
 * as stated_mlp says; *mlp gets what was set (NULL: nothing). */
static int load_model(const char *path, const char *name, fmt_model *m,
                      const char **mlp, util_error *err)
{
    cJSON *doc = NULL, *tf;
    char *text = NULL;
    int rc = bench_read_json(path, &doc, err);

    *mlp = NULL;
    if (rc != UTIL_OK)
        return rc;
    tf = cJSON_GetObjectItemCaseSensitive(doc, "transformer");
    if (!cJSON_IsObject(tf)) {
        cJSON_Delete(doc);
        return util_error_set(err, UTIL_EFIELD, path, "transformer",
                              "expected the transformer shorthand");
    }
    *mlp = stated_mlp(tf, name);
    if (*mlp != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(tf, "mlp");
        cJSON_AddStringToObject(tf, "mlp", *mlp);
    }
    bench_set_framework(doc, run_framework);
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (text == NULL)
        return util_error_set(err, UTIL_ENOMEM, path, NULL, "out of memory");
    rc = fmt_parse_model(text, path, m, err);
    cJSON_free(text);
    return rc;
}

/* "<model> on <device types of the cluster's nodes>" into out. */
static void subset_name(const fmt_cluster *c, const char *model, char *out)
{
    size_t len;
    int i, k;

    snprintf(out, SUBSET_LEN, "%s on ", model);
    for (i = 0; i < c->nnodes; i++) {
        const char *name = c->types[c->nodes[i].type].name;
        for (k = 0; k < i; k++) /* each type once, in the nodes' order */
            if (c->nodes[k].type == c->nodes[i].type)
                break;
        if (k < i)
            continue;
        len = strlen(out);
        snprintf(out + len, SUBSET_LEN - len, "%s%s",
                 out[len - 1] == ' ' ? "" : "+", name);
    }
}

/* Models whose profile could not be used (said once each on stderr). */
static char bad_profile[MAX_RUNS][64];
static int nbad_profile;

/* A profile that does not load leaves its runs scored analytically (and
 * for memory): the reason in out's "profile_error", once on stderr. */
static void profile_unusable(const char *model, const util_error *err,
                             cJSON *out)
{
    char msg[1024];
    int i;

    util_error_format(err, msg, sizeof msg);
    cJSON_AddStringToObject(out, "profile_error", msg);
    for (i = 0; i < nbad_profile; i++)
        if (strcmp(bad_profile[i], model) == 0)
            return;
    if (nbad_profile < MAX_RUNS)
        snprintf(bad_profile[nbad_profile++], sizeof bad_profile[0], "%s", model);
    fprintf(stderr, "sailor-opt: the profile of '%s' is not used (its runs are "
            "scored analytically): %s\n", model, msg);
}

/* A measurement or a ratio to one into out: null when not measured
 * (negative). */
static void put_measured(cJSON *out, const char *key, double v)
{
    if (v > 0.0)
        cJSON_AddNumberToObject(out, key, v);
    else
        cJSON_AddNullToObject(out, key);
}

/* Evaluate run r: out gets its object, t[0..2] its time (profile), time
 * (analytic) and peak-memory trials; *no_profile is set when the model's
 * profile exists but cannot be used. */
static int eval_run(const char *dir, const sailor_run *r, int index,
                    cJSON *out, calib_trial *t, int *no_profile,
                    util_error *err)
{
    char path[4200];
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    fmt_strategy *s = NULL;
    cost_params cp;
    cost_result rp, ra, rn;
    double cap = 0.0, peak, tensor;
    const char *mlp = NULL;
    int ns = 0, i, rc, profiled = 0;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&rp, 0, sizeof rp);
    memset(&ra, 0, sizeof ra);
    memset(&rn, 0, sizeof rn);
    cost_params_init(&cp);
    snprintf(path, sizeof path, "%s/%s_cluster.json", dir, r->tag);
    rc = fmt_load_cluster(path, &c, err);
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/model_%s.json", dir, r->model);
        rc = load_model(path, r->model, &m, &mlp, err);
    }
    if (rc == UTIL_OK) { /* a model without a profile: analytic only */
        FILE *f;
        snprintf(path, sizeof path, "%s/profile_%s.json", dir, r->model);
        if ((f = fopen(path, "rb")) != NULL) {
            fclose(f);
            profiled = 1;
            rc = fmt_load_profile(path, &m, &prof, err);
        }
        if (rc != UTIL_OK && rc != UTIL_ENOMEM) {
            profile_unusable(r->model, err, out);
            fmt_profile_free(&prof);
            memset(&prof, 0, sizeof prof);
            memset(err, 0, sizeof *err);
            profiled = 0;
            *no_profile = 1;
            rc = UTIL_OK;
        }
    }
    if (rc == UTIL_OK) {
        snprintf(path, sizeof path, "%s/%s_strat.json", dir, r->tag);
        rc = fmt_load_strategies(path, &c, &m, r->gbs, &s, &ns, err);
    }
    if (rc == UTIL_OK && (ns != 1 || s[0].tp != r->tp || s[0].dp != r->dp ||
                          s[0].pp != r->pp || s[0].mbs != r->mbs))
        rc = util_error_set(err, UTIL_EINVAL, path, NULL,
                            "expected one strategy with runs.json's tp %d, "
                            "dp %d, pp %d, mbs %d", r->tp, r->dp, r->pp, r->mbs);
    /* a strategy file without stage boundaries: the split planner
     * evaluate gives it (the even one when none fits memory) */
    if (rc == UTIL_OK && s[0].bounds_open &&
        (rc = search_assign_layers(&c, &m, profiled ? &prof : NULL, &cp, &s[0],
                                   err)) == UTIL_EINFEASIBLE) {
        memset(err, 0, sizeof *err);
        rc = UTIL_OK;
    }
    if (rc == UTIL_OK)
        rc = cost_evaluate(&c, &m, profiled ? &prof : NULL, &cp, &s[0], &rp, err);
    if (rc == UTIL_OK)
        rc = cost_evaluate(&c, &m, NULL, &cp, &s[0], &ra, err);
    if (rc == UTIL_OK) { /* NCCL before cuMem, for comparison */
        cost_params cn = cp;
        cn.nccl_cumem = 0;
        rc = cost_evaluate(&c, &m, profiled ? &prof : NULL, &cn, &s[0], &rn, err);
    }
    if (rc != UTIL_OK)
        goto done;

    peak = bench_peak(&rp, &cap);
    for (i = 0; i < 3; i++) {
        t[i].index = index;
        t[i].fits = rp.fits;
        t[i].empty_stage = rp.empty_stage >= 0;
        t[i].measured_s = r->measured_s;
    }
    t[0].predicted_s = rp.iter_s;
    t[1].predicted_s = ra.iter_s;
    t[2].measured_s = r->measured_peak; /* the same scores over bytes */
    t[2].predicted_s = peak;
    tensor = put_terms(out, &c, &m, &cp, &s[0]);
    if (index >= 0 && index < MAX_RUNS) {
        mem_tensor[index] = tensor;
        mem_cap[index] = cap;
        double cap_n;
        mem_nocumem[index] = bench_peak(&rn, &cap_n);
        mem_pp[index] = r->pp;
        run_ran[index] = r->measured_s > 0.0;
        run_profiled[index] = profiled;
        subset_name(&c, r->model, run_subset[index]);
        cJSON_AddStringToObject(out, "subset", run_subset[index]);
    }

    cJSON_AddStringToObject(out, "tag", r->tag);
    cJSON_AddNumberToObject(out, "gbs", r->gbs);
    cJSON_AddNumberToObject(out, "tp", r->tp);
    cJSON_AddNumberToObject(out, "dp", r->dp);
    cJSON_AddNumberToObject(out, "pp", r->pp);
    cJSON_AddNumberToObject(out, "mbs", r->mbs);
    cJSON_AddNumberToObject(out, "gas", s[0].gas);
    put_measured(out, "measured_s", r->measured_s);
    cJSON_AddStringToObject(out, "mlp", mlp != NULL ? mlp : "as written");
    if (profiled)
        cJSON_AddNumberToObject(out, "predicted_s_profile", rp.iter_s);
    else
        cJSON_AddNullToObject(out, "predicted_s_profile");
    cJSON_AddNumberToObject(out, "predicted_s_analytic", ra.iter_s);
    put_measured(out, "ratio_profile", profiled ? rp.iter_s / r->measured_s : -1.0);
    put_measured(out, "ratio_analytic", ra.iter_s / r->measured_s);
    cJSON_AddNumberToObject(out, "estimated_layers_profile", rp.estimated);
    put_measured(out, "measured_peak_bytes", r->measured_peak);
    cJSON_AddNumberToObject(out, "predicted_peak_bytes", peak);
    put_measured(out, "peak_ratio", peak / r->measured_peak);
    cJSON_AddNumberToObject(out, "predicted_tensor_peak_bytes", tensor);
    cJSON_AddNumberToObject(out, "capacity_bytes", cap);
    cJSON_AddBoolToObject(out, "fits", rp.fits);
    cJSON_AddBoolToObject(out, "runnable", rp.fits && rp.empty_stage < 0);
done:
    cost_result_free(&rp);
    cost_result_free(&ra);
    cost_result_free(&rn);
    for (i = 0; i < ns; i++)
        fmt_strategy_free(&s[i]);
    free(s);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return rc;
}

/* Time scores of the runs i < n with pick[i] into x: with the profile
 * where the run has one (*np of them) and analytic, in *rp and *ra; the
 * runs picked are copied to tm (their peak-memory trials), *nm of them. */
static void time_scores(cJSON *x, const calib_trial *t, int n, const int *pick,
                        calib_ranking *rp, calib_ranking *ra, int *np,
                        calib_trial *tm, int *nm)
{
    static calib_trial tp[MAX_RUNS], ta[MAX_RUNS];
    int i;

    *np = *nm = 0;
    for (i = 0; i < n; i++) {
        if (!pick[i])
            continue;
        if (run_profiled[i])
            tp[(*np)++] = t[3 * i];
        ta[*nm] = t[3 * i + 1];
        tm[(*nm)++] = t[3 * i + 2];
    }
    cJSON_AddNumberToObject(x, "runs", *nm);
    cJSON_AddNumberToObject(x, "runs_with_profile", *np);
    bench_put_scores(x, "time_profile", tp, *np, rp);
    bench_put_scores(x, "time_analytic", ta, *nm, ra);
}

/* Scores of each subset ("<model> on <device types>"), one stderr line
 * each. */
static void subsets(cJSON *doc, const calib_trial *t, int n)
{
    static int pick[MAX_RUNS], done[MAX_RUNS];
    static calib_trial tm[MAX_RUNS];
    cJSON *arr = cJSON_AddArrayToObject(doc, "subsets");
    calib_ranking rp, ra, mm;
    int i, k, rejects, np, nm;

    memset(done, 0, sizeof done);
    for (i = 0; i < n; i++) {
        cJSON *x;
        if (done[i])
            continue;
        for (k = rejects = 0; k < n; k++) {
            pick[k] = strcmp(run_subset[k], run_subset[i]) == 0;
            done[k] |= pick[k];
            rejects += pick[k] && run_ran[k] && t[3 * k + 2].predicted_s > mem_cap[k];
        }
        x = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, x);
        cJSON_AddStringToObject(x, "subset", run_subset[i]);
        time_scores(x, t, n, pick, &rp, &ra, &np, tm, &nm);
        bench_put_scores(x, "peak_memory", tm, nm, &mm);
        cJSON_AddNumberToObject(x, "false_rejects_memory", rejects);
        fprintf(stderr, "sailor-opt: subset %s: %d runs: time MAPE ",
                run_subset[i], nm);
        if (np > 0)
            fprintf(stderr, "%.1f%% with profile (%d runs), ", 100.0 * rp.mape, np);
        fprintf(stderr, "%.1f%% analytic; peak memory MAPE %.1f%%; %d false "
                "rejects\n", 100.0 * ra.mape, 100.0 * mm.mape, rejects);
    }
}

/* Scores of the n runs in t (n x 3) and the summary line on stderr. */
static void totals(cJSON *doc, const calib_trial *t, int n)
{
    static calib_trial tm[MAX_RUNS];
    static int all[MAX_RUNS];
    calib_ranking rp, ra;
    cJSON *x = cJSON_AddObjectToObject(doc, "totals");
    double mem_mape;
    int i, not_fit = 0, failed = 0, flagged = 0, mem_rejects, np, nm;

    for (i = 0; i < n; i++) {
        all[i] = 1;
        not_fit += run_ran[i] && !t[3 * i].fits;
        failed += !run_ran[i];
        flagged += !run_ran[i] && !t[3 * i].fits;
    }
    time_scores(x, t, n, all, &rp, &ra, &np, tm, &nm);
    cJSON_AddNumberToObject(x, "false_rejects", not_fit);
    /* runs whose measured_s is null: they did not run */
    cJSON_AddNumberToObject(x, "runs_failed", failed);
    cJSON_AddNumberToObject(x, "failed_predicted_not_to_fit", flagged);
    cJSON_AddNumberToObject(x, "not_runnable", rp.runnable_rejected);
    memory_scores(x, tm, n, &mem_mape, &mem_rejects);
    subsets(doc, t, n);
    fprintf(stderr, "sailor-opt: %d runs: time MAPE ", n);
    if (np > 0)
        fprintf(stderr, "%.1f%% with profile (rho %.3f, %d runs), ",
                100.0 * rp.mape, rp.spearman, np);
    else
        fprintf(stderr, "(no run with a profile) ");
    fprintf(stderr, "%.1f%% analytic (rho %.3f); peak memory MAPE %.1f%%; "
            "%d false rejects", 100.0 * ra.mape, ra.spearman,
            100.0 * mem_mape, mem_rejects);
    if (failed > 0)
        fprintf(stderr, "; %d runs that failed, %d of them predicted not to fit",
                failed, flagged);
    fprintf(stderr, "\n");
}

/* What bench_each_run's callback needs. */
typedef struct sailor_ctx {
    const char *dir;
    calib_trial *t;        /* 3 per run */
    int skipped;           /* runs that could not be scored */
    int no_profile;        /* runs scored without their model's profile */
} sailor_ctx;

static int one_run(void *ctx, const cJSON *run, const char *where, int index,
                   cJSON *out, util_error *err)
{
    sailor_ctx *x = ctx;
    sailor_run r;
    char msg[1024];
    int no_profile = 0, rc = read_run(run, where, &r, err);

    if (rc == UTIL_OK)
        rc = eval_run(x->dir, &r, index, out, &x->t[3 * index], &no_profile, err);
    x->no_profile += no_profile;
    if (rc == UTIL_OK || rc == UTIL_ENOMEM)
        return rc;
    /* a run that cannot be evaluated is left out of the scores, said on
     * stderr and in its object; the others are still scored */
    util_error_format(err, msg, sizeof msg);
    if (r.tag != NULL)
        cJSON_AddStringToObject(out, "tag", r.tag);
    cJSON_AddStringToObject(out, "error", msg);
    fprintf(stderr, "sailor-opt: %s%s%s%s not scored: %s\n", where,
            r.tag != NULL ? " ('" : "", r.tag != NULL ? r.tag : "",
            r.tag != NULL ? "')" : "", msg);
    memset(err, 0, sizeof *err);
    x->skipped++;
    return BENCH_RUN_SKIPPED;
}

int main(int argc, char **argv)
{
    char dir[4096], path[4200];
    calib_trial t[3 * MAX_RUNS];
    sailor_ctx ctx = {dir, t, 0, 0};
    cJSON *runs = NULL, *doc, *arr;
    util_error err;
    int n = 0, rc;

    fmt_framework fw;

    if (argc > 2 && strcmp(argv[1], "--framework") == 0) {
        if (fmt_framework_parse(argv[2], &fw) != 0) {
            fprintf(stderr, "sailor-opt: option '--framework' expects one of %s, "
                    "got '%s'\n", fmt_framework_accepted(), argv[2]);
            return 2;
        }
        run_framework = argv[2];
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    if (argc > 2 && strcmp(argv[1], "--mlp") == 0) {
        if (fmt_arch_from_name(FMT_AXIS_MLP, argv[2]) < 0) {
            fprintf(stderr, "sailor-opt: option '--mlp' expects gelu, swiglu "
                    "or relu, got '%s'\n", argv[2]);
            return 2;
        }
        run_mlp = argv[2];
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    if (!bench_data_dir(argc, argv, "sailor-opt", "sailor-opt", dir, sizeof dir))
        return 0;
    memset(&err, 0, sizeof err);
    memset(t, 0, sizeof t);
    doc = bench_doc("sailor-opt", dir, "each run's strategy evaluated by "
                    "cost_evaluate with the shipped profile and analytically; "
                    "peak = largest over ranks; false_rejects = runs that ran "
                    "(measured_s not null) predicted not to fit; a null "
                    "measured_peak_bytes leaves the run out of the memory "
                    "scores", &arr);
    cJSON_AddStringToObject(doc, "mlp", run_mlp != NULL ? run_mlp
                                                        : "relu for OPT files describing a gpt2 block, "
                                                          "else as written");
    cJSON_AddStringToObject(doc, "framework", run_framework != NULL ? run_framework
                                                                    : "as written");
    snprintf(path, sizeof path, "%s/runs.json", dir);
    rc = bench_read_json(path, &runs, &err);
    if (rc == UTIL_OK)
        rc = bench_each_run(runs, path, MAX_RUNS, arr, one_run, &ctx, &n, &err);
    if (rc == UTIL_OK) {
        totals(doc, t, n);
        cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(doc, "totals"),
                                "runs_not_scored", ctx.skipped);
        if (ctx.skipped > 0 && ctx.no_profile > 0)
            rc = util_error_set(&err, UTIL_EINVAL, path, NULL,
                                "%d of %d runs not scored (see their 'error'), "
                                "%d scored without their model's profile (see "
                                "'profile_error')", ctx.skipped,
                                n + ctx.skipped, ctx.no_profile);
        else if (ctx.skipped > 0)
            rc = util_error_set(&err, UTIL_EINVAL, path, NULL,
                                "%d of %d runs not scored (see their 'error')",
                                ctx.skipped, n + ctx.skipped);
        else if (ctx.no_profile > 0)
            rc = util_error_set(&err, UTIL_EINVAL, path, NULL,
                                "%d runs scored without their model's profile "
                                "(see 'profile_error')", ctx.no_profile);
    }
    cJSON_Delete(runs);
    return bench_finish(doc, "sailor-opt", rc, &err);
}
