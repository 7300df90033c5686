/* plan/read.c: a plan JSON (hetplan-plan/1) read back, with the
 * cluster, model and profile it names loaded again, for the commands
 * that start from a plan (export, report, whatif, replan, the launcher). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "plan.h"

#define PF_PATH 160
#define PF_MAX_BATCH FMT_MAX_GLOBAL_BATCH /* global batch, as in model.json */
#define PF_MAX_SHARD 1e8 /* heads or MLP columns of one rank */

static int bad(util_error *err, const char *file, const char *path,
               const char *what, const cJSON *got)
{
    return util_error_set(err, UTIL_EFIELD, file, path, "expected %s, got %s",
                          what, util_json_type(got));
}

/* A number outside 0..max (or not whole): its value and the range. */
static int range_bad(util_error *err, const char *file, const char *path,
                     const char *what, const cJSON *got, double max)
{
    char mx[UTIL_NUM_N], v[UTIL_NUM_N];

    if (!cJSON_IsNumber(got))
        return bad(err, file, path, what, got);
    return util_error_set(err, UTIL_EFIELD, file, path,
                          "expected %s of at most %s, got %s", what,
                          util_num_text(max, mx, sizeof mx),
                          util_num_text(got->valuedouble, v, sizeof v));
}

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static int exists(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 when the file at p has the SHA-256 hex sha (or sha is NULL); 0
 * when it differs or cannot be read.  Its digest goes to hex ("" when it
 * cannot be read or sha is NULL). */
static int digest_ok(const char *p, const char *sha, char hex[65])
{
    char *text = NULL;
    int ok;

    hex[0] = '\0';
    if (sha == NULL)
        return 1;
    if (util_read_file(p, &text, NULL) != UTIL_OK)
        return 0;
    util_sha256_hex(text, strlen(text), hex);
    ok = strcmp(hex, sha) == 0;
    free(text);
    return ok;
}

/* inputs.<key> (input which, enum plan_input): the file the plan was made
 * from, found as its absolute path, as written (from the current
 * directory) or next to the plan file; the first of these whose SHA-256
 * matches the plan's wins, else the first that exists (recorded as
 * changed, with both digests). */
static int input_path(plan_doc *d, const cJSON *inputs, const char *key, int which,
                      int required, char *out, size_t n, util_error *err)
{
    const cJSON *o = get(inputs, key), *p, *ap, *sha;
    char jp[PF_PATH], cand[3][4096], hex[65], first_hex[65] = "";
    const char *slash = strrchr(d->path, '/'), *digest;
    int nc = 0, i, first = -1;

    snprintf(jp, sizeof jp, "inputs.%s", key);
    out[0] = '\0';
    if (o == NULL || cJSON_IsNull(o)) {
        if (required)
            return bad(err, d->path, jp, "an object with a path", o);
        return UTIL_OK;
    }
    p = get(o, "path");
    snprintf(jp, sizeof jp, "inputs.%s.path", key);
    if (!cJSON_IsString(p) || p->valuestring[0] == '\0')
        return bad(err, d->path, jp, "a file name", p);
    ap = get(o, "absolute_path");
    sha = get(o, "sha256");
    digest = cJSON_IsString(sha) ? sha->valuestring : NULL;
    if (cJSON_IsString(ap) && ap->valuestring[0] == '/')
        snprintf(cand[nc++], sizeof cand[0], "%s", ap->valuestring);
    snprintf(cand[nc++], sizeof cand[0], "%s", p->valuestring);
    if (p->valuestring[0] != '/' && slash != NULL)
        snprintf(cand[nc++], sizeof cand[0], "%.*s/%s", (int)(slash - d->path),
                 d->path, p->valuestring);
    for (i = 0; i < nc; i++) {
        if (strlen(cand[i]) >= n || !exists(cand[i]))
            continue;
        if (digest_ok(cand[i], digest, hex)) {
            snprintf(out, n, "%s", cand[i]);
            return UTIL_OK;
        }
        if (first < 0) {
            first = i;
            memcpy(first_hex, hex, sizeof hex);
        }
    }
    if (first < 0)
        return util_error_set(err, UTIL_EIO, d->path, jp,
                              "cannot find the %s file '%s' the plan was made "
                              "from (tried '%s', the path as written and next "
                              "to the plan); put it back or plan again", key,
                              p->valuestring, cJSON_IsString(ap) ?
                              ap->valuestring : "(no absolute path recorded)");
    snprintf(out, n, "%s", cand[first]);
    d->digest_mismatch = 1;
    d->changed[which] = 1;
    snprintf(d->recorded_sha[which], sizeof d->recorded_sha[which], "%.64s", digest);
    memcpy(d->current_sha[which], first_hex, sizeof first_hex);
    return UTIL_OK;
}

/* Append the clause "fmt" to the list buf (n bytes) of *count clauses,
 * at most four of them; the others are only counted. */
static void differ(char *buf, size_t n, int *count, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void differ(char *buf, size_t n, int *count, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;

    if ((*count)++ >= 4 || used + 2 >= n)
        return;
    if (used > 0)
        used += (size_t)snprintf(buf + used, n - used, "; ");
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

/* What the plan recorded of its cluster and model (the "cluster" and
 * "model" summaries) that the files, changed since, now say otherwise:
 * into d->differs. */
static void summary_differs(plan_doc *d, const cJSON *root)
{
    const cJSON *cl = get(root, "cluster"), *nodes = get(cl, "nodes"), *v, *nd;
    const fmt_cluster *c = &d->cluster;
    const fmt_model *m = &d->model;
    char *buf = d->differs[PLAN_INPUT_CLUSTER];
    size_t n = sizeof d->differs[PLAN_INPUT_CLUSTER];
    int count = 0, i, k;

    if (d->changed[PLAN_INPUT_CLUSTER] && cJSON_IsObject(cl)) {
        v = get(cl, "devices");
        if (cJSON_IsNumber(v) && v->valuedouble != c->ndevices)
            differ(buf, n, &count, "the cluster has %d GPUs, the plan recorded %.0f",
                   c->ndevices, v->valuedouble);
        k = cJSON_IsArray(nodes) ? cJSON_GetArraySize(nodes) : -1;
        if (k >= 0 && k != c->nnodes)
            differ(buf, n, &count, "the cluster has %d nodes, the plan recorded %d",
                   c->nnodes, k);
        for (i = 0; i < c->nnodes && i < k; i++) {
            const fmt_node *fn = &c->nodes[i];
            const char *t = fn->type >= 0 && fn->type < c->ntypes
                                ? c->types[fn->type].name : "";
            nd = cJSON_GetArrayItem(nodes, i);
            v = get(nd, "name");
            if (cJSON_IsString(v) && strcmp(v->valuestring, fn->name) != 0)
                differ(buf, n, &count, "node %d is '%s', the plan recorded '%s'", i,
                       fn->name, v->valuestring);
            v = get(nd, "gpus");
            if (cJSON_IsNumber(v) && v->valuedouble != fn->gpus)
                differ(buf, n, &count, "node '%s' has %d GPUs, the plan recorded "
                       "%.0f", fn->name, fn->gpus, v->valuedouble);
            v = get(nd, "device_type");
            if (cJSON_IsString(v) && strcmp(v->valuestring, t) != 0)
                differ(buf, n, &count, "node '%s' has '%s' GPUs, the plan recorded "
                       "'%s'", fn->name, t, v->valuestring);
        }
        if (count > 4 && strlen(buf) + 2 < n)
            snprintf(buf + strlen(buf), n - strlen(buf), "; %d more differences",
                     count - 4);
    }
    buf = d->differs[PLAN_INPUT_MODEL];
    n = sizeof d->differs[PLAN_INPUT_MODEL];
    count = 0;
    cl = get(root, "model");
    if (d->changed[PLAN_INPUT_MODEL] && cJSON_IsObject(cl)) {
        v = get(cl, "name");
        if (cJSON_IsString(v) && strcmp(v->valuestring, m->name) != 0)
            differ(buf, n, &count, "the model is '%s', the plan recorded '%s'",
                   m->name, v->valuestring);
        v = get(cl, "layers");
        if (cJSON_IsNumber(v) && v->valuedouble != m->nlayers)
            differ(buf, n, &count, "the model has %d layers, the plan recorded %.0f",
                   m->nlayers, v->valuedouble);
        v = get(cl, "params");
        if (cJSON_IsNumber(v) && v->valuedouble != fmt_model_params(m, NULL))
            differ(buf, n, &count, "the model has %.0f parameters, the plan recorded "
                   "%.0f", fmt_model_params(m, NULL), v->valuedouble);
    }
}

int plan_changed_inputs(const plan_doc *d, char *buf, size_t n)
{
    static const char *const what[3] = {"cluster", "model", "profile"};
    const char *paths[3];
    size_t used = 0;
    int k, count = 0, w;

    if (buf == NULL || n == 0)
        return 0;
    buf[0] = '\0';
    if (d == NULL)
        return 0;
    paths[0] = d->cluster_path;
    paths[1] = d->model_path;
    paths[2] = d->profile_path;
    for (k = 0; k < 3; k++) {
        if (!d->changed[k] || used + 1 >= n)
            continue;
        w = snprintf(buf + used, n - used, "%sthe %s file '%s' changed since '%s' "
                     "was made (SHA-256 %.16s... in the plan, %.16s%s now)%s%s",
                     count ? "; " : "", what[k], paths[k], d->path,
                     d->recorded_sha[k],
                     d->current_sha[k][0] ? d->current_sha[k] : "unreadable",
                     d->current_sha[k][0] ? "..." : "",
                     d->differs[k][0] ? ": " : "", d->differs[k]);
        used += w > 0 ? (size_t)w : 0;
        if (used >= n)
            used = n - 1;
        count++;
    }
    return count;
}

static int read_params(plan_doc *d, const cJSON *cp, util_error *err)
{
    const cJSON *v;
    char jp[PF_PATH];
    double x;
    int rc;

    cost_params_init(&d->params);
    if (cp == NULL || cJSON_IsNull(cp))
        return UTIL_OK;
    if (!cJSON_IsObject(cp))
        return bad(err, d->path, "settings.cost_params", "an object", cp);
    cJSON_ArrayForEach(v, cp)
    {
        snprintf(jp, sizeof jp, "settings.cost_params.%s", v->string);
        if (cJSON_IsString(v) && strcmp(v->string, "recompute") == 0) {
            x = fmt_recompute_from_name(v->valuestring);
            if (x < 0)
                return util_error_set(err, UTIL_EFIELD, d->path, jp,
                                      "expected 'none', 'full' or 'selective', "
                                      "got '%s'", v->valuestring);
        } else if (cJSON_IsString(v) && strcmp(v->string, "schedule") == 0) {
            if (strcmp(v->valuestring, "gpipe") == 0)
                x = FMT_SCHED_GPIPE;
            else if (strcmp(v->valuestring, "1f1b") == 0)
                x = FMT_SCHED_1F1B;
            else
                return util_error_set(err, UTIL_EFIELD, d->path, jp,
                                      "expected '1f1b' or 'gpipe', got '%s'",
                                      v->valuestring);
        } else if (cJSON_IsBool(v)) {
            x = cJSON_IsTrue(v) ? 1.0 : 0.0;
        } else if (cJSON_IsNumber(v)) {
            x = v->valuedouble;
        } else {
            return bad(err, d->path, jp, "a number", v);
        }
        rc = cost_params_set(&d->params, v->string, x, err);
        if (rc != UTIL_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return util_error_set(err, rc, d->path, jp, "%s", msg);
        }
    }
    return UTIL_OK;
}

/* Uneven TP shards: "heads" and "mlp_cols" on every rank
 * object of strategy i, or on none. */
static int read_shards(plan_doc *d, int i, const cJSON *jr, util_error *err)
{
    fmt_strategy *s = &d->s[i];
    int n = s->tp * s->dp * s->pp, r, have = 0, rc = UTIL_OK;
    int *h = NULL, *c = NULL;
    const cJSON *o;
    char jp[PF_PATH];

    if (!cJSON_IsArray(jr) || cJSON_GetArraySize(jr) != n)
        return UTIL_OK;
    cJSON_ArrayForEach(o, jr) /* in order: cJSON_GetArrayItem walks from the start */
        if (get(o, "heads") != NULL)
            have = 1;
    if (!have)
        return UTIL_OK;
    h = calloc((size_t)n, sizeof *h);
    c = calloc((size_t)n, sizeof *c);
    if (h == NULL || c == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, d->path, "", "out of memory");
        goto done;
    }
    for (r = 0, o = jr->child; r < n && o != NULL; r++, o = o->next) {
        const cJSON *vh = get(o, "heads"), *vc = get(o, "mlp_cols");
        snprintf(jp, sizeof jp, "strategies[%d].ranks[%d].heads", i, r);
        if (!util_json_whole(vh, 0, PF_MAX_SHARD)) {
            rc = range_bad(err, d->path, jp, "a whole number of heads", vh,
                           PF_MAX_SHARD);
            goto done;
        }
        snprintf(jp, sizeof jp, "strategies[%d].ranks[%d].mlp_cols", i, r);
        if (!util_json_whole(vc, 0, PF_MAX_SHARD)) {
            rc = range_bad(err, d->path, jp, "a whole number of MLP columns", vc,
                           PF_MAX_SHARD);
            goto done;
        }
        h[r] = (int)vh->valuedouble;
        c[r] = (int)vc->valuedouble;
    }
    if (fmt_strategy_set_shards(s, h, c) != UTIL_OK) {
        rc = util_error_set(err, UTIL_ENOMEM, d->path, "", "out of memory");
        goto done;
    }
    snprintf(jp, sizeof jp, "strategies[%d].ranks", i);
    if ((rc = cost_shards_check(&d->model, s, err)) != UTIL_OK && err != NULL) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        rc = util_error_set(err, rc, d->path, jp, "%s", msg);
    }
done:
    free(h);
    free(c);
    return rc;
}

/* The plan's strategies as the strategies document `planner evaluate`
 * reads, so that one parser validates both. */
static int read_strategies(plan_doc *d, const cJSON *arr, util_error *err)
{
    static const char *const keys[] = {"tp", "dp", "pp", "mbs", "schedule",
                                       "stage_boundaries", "vpp",
                                       "sequence_parallel", "recompute",
                                       "zero", "offload", "overlap_grad",
                                       "overlap_param", "overlap_tp",
                                       "overlap_p2p"};
    cJSON *doc = NULL, *list = NULL, *e, *ranks;
    const cJSON *js, *jr;
    char jp[PF_PATH], *text = NULL;
    size_t k;
    int rc = UTIL_OK, i = 0, n;

    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
        return bad(err, d->path, "strategies", "a non-empty array", arr);
    n = cJSON_GetArraySize(arr);
    d->predicted_s = calloc((size_t)n, sizeof *d->predicted_s);
    d->idle_reason = calloc((size_t)n, sizeof *d->idle_reason);
    doc = cJSON_CreateObject();
    list = cJSON_AddArrayToObject(doc, "strategies");
    if (d->predicted_s == NULL || d->idle_reason == NULL || doc == NULL ||
        list == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, d->path, "", "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(js, arr)
    {
        const cJSON *pred = get(js, "predicted_s");
        snprintf(jp, sizeof jp, "strategies[%d]", i);
        if (!cJSON_IsObject(js)) {
            rc = bad(err, d->path, jp, "an object", js);
            goto done;
        }
        e = cJSON_CreateObject();
        if (e == NULL || !cJSON_AddItemToArray(list, e)) {
            cJSON_Delete(e);
            rc = util_error_set(err, UTIL_ENOMEM, d->path, jp, "out of memory");
            goto done;
        }
        for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const cJSON *v = get(js, keys[k]);
            if (v != NULL &&
                !cJSON_AddItemToObject(e, keys[k], cJSON_Duplicate(v, 1))) {
                rc = util_error_set(err, UTIL_ENOMEM, d->path, jp,
                                    "out of memory");
                goto done;
            }
        }
        /* plan ranks are objects {"rank", "device", ...}; evaluate's are
         * plain device indices */
        jr = get(js, "ranks");
        if (jr != NULL) {
            const cJSON *r;
            int j = 0;
            ranks = cJSON_AddArrayToObject(e, "ranks");
            if (ranks == NULL) {
                rc = util_error_set(err, UTIL_ENOMEM, d->path, jp,
                                    "out of memory");
                goto done;
            }
            cJSON_ArrayForEach(r, jr)
            {
                const cJSON *dev = cJSON_IsObject(r) ? get(r, "device") : r;
                char rp[PF_PATH + 32];
                snprintf(rp, sizeof rp, "%s.ranks[%d].device", jp, j);
                if (!cJSON_IsNumber(dev)) {
                    rc = bad(err, d->path, rp, "a device index", dev);
                    goto done;
                }
                cJSON_AddItemToArray(ranks, cJSON_CreateNumber(dev->valuedouble));
                j++;
            }
        }
        d->predicted_s[i] = cJSON_IsNumber(pred) ? pred->valuedouble : -1.0;
        {
            const cJSON *why = get(cJSON_GetArrayItem(get(js, "idle"), 0), "reason");
            if (cJSON_IsString(why))
                snprintf(d->idle_reason[i], sizeof d->idle_reason[i], "%s",
                         why->valuestring);
        }
        i++;
    }
    text = cJSON_PrintUnformatted(doc);
    if (text == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, d->path, "", "out of memory");
        goto done;
    }
    rc = fmt_parse_strategies(text, d->path, &d->cluster, &d->model,
                               d->global_batch, &d->s, &d->n, err);
    if (rc != UTIL_OK)
        goto done;
    /* keep the placement names the plan recorded */
    i = 0;
    cJSON_ArrayForEach(js, arr)
    {
        const cJSON *pl = get(js, "placement");
        if (i < d->n && cJSON_IsString(pl))
            snprintf(d->s[i].placement, sizeof d->s[i].placement, "%s",
                     pl->valuestring);
        if (i < d->n && (rc = read_shards(d, i, get(js, "ranks"), err)) != UTIL_OK)
            goto done;
        i++;
    }
done:
    free(text);
    cJSON_Delete(doc);
    return rc;
}

/* The keys of a plan document (docs/plan-format.md), checked for the
 * unknown keys a hand edit may bring (fmt_check_keys). */
static const char *const root_keys[] = {"schema", "planner", "inputs", "settings",
                                        "search", "cluster", "model", "strategies",
                                        NULL};
static const char *const input_keys[] = {"cluster", "model", "profile", NULL};
static const char *const file_keys[] = {"path", "absolute_path", "sha256", "format",
                                        "key", NULL};
static const char *const settings_keys[] = {
    "global_batch", "method", "schedule", "precision", "fidelity", "cost_params",
    "requested_global_batch", "batch_note", "requested_precision", "precision_note",
    "launcher", NULL};
static const char *const launcher_keys[] = {"target", "version", NULL};
static const char *const strategy_keys[] = {
    "rank", "tp", "dp", "pp", "mbs", "micro_batches", "schedule", "vpp", "zero", "offload",
    "overlap_grad", "overlap_param", "overlap_tp", "overlap_p2p",
    "recompute", "sequence_parallel", "placement", "predicted_s", "samples_per_s",
    "price_per_hour", "price_per_iteration", "breakdown", "stage_boundaries", "idle",
    "stages", "ranks", "memory", "runnable", "empty_stage", "reason", "layer_times",
    "timeline", NULL};

static int plan_keys(const char *path, const cJSON *root, util_error *err)
{
    const cJSON *inputs = get(root, "inputs"), *js;
    char jp[PF_PATH];
    size_t k;
    int rc, i = 0;

    if ((rc = fmt_check_keys(path, root, "", root_keys, err)) != UTIL_OK ||
        (rc = fmt_check_keys(path, inputs, "inputs", input_keys, err)) != UTIL_OK ||
        (rc = fmt_check_keys(path, get(root, "settings"), "settings", settings_keys,
                             err)) != UTIL_OK ||
        (rc = fmt_check_keys(path, get(get(root, "settings"), "launcher"),
                             "settings.launcher", launcher_keys, err)) != UTIL_OK)
        return rc;
    for (k = 0; input_keys[k] != NULL; k++) {
        snprintf(jp, sizeof jp, "inputs.%s", input_keys[k]);
        if ((rc = fmt_check_keys(path, get(inputs, input_keys[k]), jp, file_keys,
                                 err)) != UTIL_OK)
            return rc;
    }
    js = get(root, "strategies");
    if (cJSON_IsArray(js))
        for (js = js->child; js != NULL; js = js->next) {
            snprintf(jp, sizeof jp, "strategies[%d]", i++);
            if ((rc = fmt_check_keys(path, js, jp, strategy_keys, err)) != UTIL_OK)
                return rc;
        }
    return UTIL_OK;
}

/* err, raised after an input changed since the plan was made: name the
 * change first, then what no longer fits. */
static void blame_change(const plan_doc *d, util_error *err)
{
    char change[sizeof err->msg], was[sizeof err->msg + 440];

    plan_changed_inputs(d, change, sizeof change);
    util_error_format(err, was, sizeof was);
    util_error_set(err, err->code, "", "", "%s; the plan no longer fits it: %s",
                   change, was);
}

int plan_load_plan(const char *path, plan_doc *out, util_error *err)
{
    char *text = NULL;
    cJSON *root = NULL;
    const cJSON *v, *inputs, *settings, *prof;
    int rc;

    if (out == NULL || path == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "plan_load_plan needs a path and an output");
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    if ((rc = util_read_file(path, &text, err)) != UTIL_OK)
        goto done;
    if ((rc = util_json_parse_object(text, path, &root, err)) != UTIL_OK)
        goto done;
    v = get(root, "schema");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, PLAN_SCHEMA) != 0) {
        rc = cJSON_IsString(v)
                 ? util_error_set(err, UTIL_EFIELD, path, "schema",
                                  "expected '%s', got '%s'", PLAN_SCHEMA,
                                  v->valuestring)
                 : bad(err, path, "schema", "'" PLAN_SCHEMA "'", v);
        goto done;
    }
    if ((rc = plan_keys(path, root, err)) != UTIL_OK)
        goto done;
    inputs = get(root, "inputs");
    if (!cJSON_IsObject(inputs)) {
        rc = bad(err, path, "inputs", "an object", inputs);
        goto done;
    }
    settings = get(root, "settings");
    if (!cJSON_IsObject(settings)) {
        rc = bad(err, path, "settings", "an object", settings);
        goto done;
    }
    v = get(settings, "global_batch");
    if (!util_json_whole(v, 1, PF_MAX_BATCH)) {
        rc = range_bad(err, path, "settings.global_batch", "a positive integer",
                       v, PF_MAX_BATCH);
        goto done;
    }
    out->global_batch = (int)v->valuedouble;
    v = get(settings, "method");
    snprintf(out->method, sizeof out->method, "%s",
             cJSON_IsString(v) ? v->valuestring : "");
    v = get(settings, "launcher"); /* optional: the launcher it was planned for */
    if (v != NULL && (!cJSON_IsObject(v) || !cJSON_IsString(get(v, "target")) ||
                      !cJSON_IsString(get(v, "version")))) {
        rc = bad(err, path, "settings.launcher",
                 "an object with strings 'target' and 'version'", v);
        goto done;
    }
    if (v != NULL) {
        snprintf(out->launcher, sizeof out->launcher, "%s", get(v, "target")->valuestring);
        snprintf(out->launcher_version, sizeof out->launcher_version, "%s",
                 get(v, "version")->valuestring);
    }
    if ((rc = read_params(out, get(settings, "cost_params"), err)) != UTIL_OK)
        goto done;

    if ((rc = input_path(out, inputs, "cluster", PLAN_INPUT_CLUSTER, 1,
                         out->cluster_path, sizeof out->cluster_path, err)) != UTIL_OK ||
        (rc = input_path(out, inputs, "model", PLAN_INPUT_MODEL, 1, out->model_path,
                         sizeof out->model_path, err)) != UTIL_OK ||
        (rc = input_path(out, inputs, "profile", PLAN_INPUT_PROFILE, 0,
                         out->profile_path, sizeof out->profile_path, err)) != UTIL_OK)
        goto done;
    if ((rc = fmt_load_cluster(out->cluster_path, &out->cluster, err)) !=
            UTIL_OK ||
        (rc = fmt_load_model(out->model_path, &out->model, err)) != UTIL_OK)
        goto done;
    summary_differs(out, root);
    /* settings.precision (e.g. from --precision) applies to the model as
     * commands/plan.c applies --precision: before the profile is read */
    v = get(settings, "precision");
    if (v != NULL && !cJSON_IsNull(v)) {
        int prec = cJSON_IsString(v) ? fmt_precision_from_name(v->valuestring) : -1;
        if (prec < 0) {
            rc = cJSON_IsString(v)
                     ? util_error_set(err, UTIL_EFIELD, path, "settings.precision",
                                      "expected 'fp16', 'bf16' or 'fp32', got '%s'",
                                      v->valuestring)
                     : bad(err, path, "settings.precision",
                           "'fp16', 'bf16' or 'fp32'", v);
            goto done;
        }
        if ((rc = fmt_model_set_precision(&out->model, prec, err)) != UTIL_OK)
            goto done;
    }
    prof = get(inputs, "profile");
    if (out->profile_path[0] != '\0') {
        const cJSON *fmt = get(prof, "format"), *key = get(prof, "key");
        if (cJSON_IsString(fmt) && strcmp(fmt->valuestring, "amp") == 0) {
            out->amp_profile = 1;
            snprintf(out->profile_key, sizeof out->profile_key, "%s",
                     cJSON_IsString(key) ? key->valuestring : "gpt2");
            rc = fmt_profile_from_amp(out->profile_path, out->profile_key,
                                       &out->model, &out->profile, err);
        } else {
            rc = fmt_load_profile(out->profile_path, &out->model,
                                   &out->profile, err);
        }
        if (rc != UTIL_OK)
            goto done;
        out->have_profile = 1;
    }
    rc = read_strategies(out, get(root, "strategies"), err);
done:
    if (rc != UTIL_OK && out->digest_mismatch && err != NULL)
        blame_change(out, err);
    if (rc != UTIL_OK) {
        char keep[sizeof out->path];
        snprintf(keep, sizeof keep, "%s", out->path);
        plan_doc_free(out);
        snprintf(out->path, sizeof out->path, "%s", keep);
    }
    cJSON_Delete(root);
    free(text);
    return rc;
}

void plan_doc_free(plan_doc *d)
{
    int i;

    if (d == NULL)
        return;
    for (i = 0; i < d->n; i++)
        fmt_strategy_free(&d->s[i]);
    free(d->s);
    free(d->predicted_s);
    free(d->idle_reason);
    fmt_profile_free(&d->profile);
    fmt_model_free(&d->model);
    fmt_cluster_free(&d->cluster);
    memset(d, 0, sizeof *d);
}
