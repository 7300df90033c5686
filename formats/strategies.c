/* formats/strategies.c: the reader of the strategies file of `planner
 * evaluate` (docs/inputs.md), also used for trials files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

static int parse_ranks(const fmt_read_ctx *cx, const cJSON *jr, const char *p,
                       const fmt_cluster *c, fmt_strategy *s)
{
    const cJSON *v;
    char ep[FMT_PATH_N];
    int *where = NULL;
    int rc = UTIL_OK, i = 0, d, n = s->tp * s->dp * s->pp, cnt;

    if (!cJSON_IsArray(jr))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                        util_json_type(jr));
    cnt = cJSON_GetArraySize(jr);
    if (cnt != n)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected %d entries (tp * dp * pp), got %d", n, cnt);
    where = malloc((size_t)c->ndevices * sizeof *where);
    if (where == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
    for (d = 0; d < c->ndevices; d++)
        where[d] = -1;
    cJSON_ArrayForEach(v, jr)
    {
        util_json_index(ep, sizeof ep, p, i);
        if ((rc = fmt_int_value(cx, v, ep, FMT_F_NONNEG, &d)) != UTIL_OK)
            goto done;
        if (d >= c->ndevices) {
            rc = fmt_fail(cx, UTIL_EFIELD, ep,
                          "expected a device index below %d (the cluster has "
                          "%d GPUs), got %d",
                          c->ndevices, c->ndevices, d);
            goto done;
        }
        if (where[d] >= 0) {
            rc = fmt_fail(cx, UTIL_EFIELD, ep,
                          "device %d is used twice (also by rank %d)", d,
                          where[d]);
            goto done;
        }
        where[d] = i;
        s->ranks[i++] = d;
    }
done:
    free(where);
    return rc;
}

/* Optional boolean field key of obj: *out 0 or 1, unchanged when absent. */
static int parse_flag(const fmt_read_ctx *cx, const cJSON *obj,
                      const char *parent, const char *key, int *out)
{
    const cJSON *v = fmt_field(obj, key);
    char fp[FMT_PATH_N];

    if (v == NULL)
        return UTIL_OK;
    if (!cJSON_IsBool(v)) {
        util_json_key(fp, sizeof fp, parent, key);
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected a boolean (true or false), got %s",
                        util_json_type(v));
    }
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return UTIL_OK;
}

/* The keys of a strategies file (docs/inputs.md). */
const char *const fmt_strategies_root_keys[] = {"strategies", NULL};
const char *const fmt_strategy_keys[] = {"tp", "dp", "pp", "mbs", "schedule", "vpp",
                                         "zero", "recompute", "sequence_parallel",
                                         "stage_boundaries", "ranks", "offload",
                                         "overlap_grad", "overlap_param",
                                         "overlap_tp", "overlap_p2p", NULL};

/* open: stage_boundaries may be left out (fmt_load_strategies). */
static int parse_strategy(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                          const fmt_cluster *c, const fmt_model *m, int gb,
                          const char *const *keys, int open, fmt_strategy *s)
{
    const cJSON *jb = NULL, *jr, *v;
    const char *sched = NULL, *rec = NULL, *off = NULL;
    char fp[FMT_PATH_N], ep[FMT_PATH_N];
    int rc, tp, dp, pp, mbs, i, nb, sch = FMT_SCHED_1F1B, vpp, zero, sp = 0;
    int recompute = -1, offload = -1;
    int ov_grad = -1, ov_param = -1, ov_tp = -1, ov_p2p = -1;

    memset(s, 0, sizeof *s);
    if (!cJSON_IsObject(e))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(e));
    if ((keys != NULL && (rc = fmt_keys(cx, e, p, keys)) != UTIL_OK) ||
        (rc = fmt_int_field(cx, e, p, "tp", FMT_F_REQ | FMT_F_POS, 0, &tp)) !=
            UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "dp", FMT_F_REQ | FMT_F_POS, 0, &dp)) !=
            UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "pp", FMT_F_REQ | FMT_F_POS, 0, &pp)) !=
            UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "mbs", FMT_F_REQ | FMT_F_POS, 0, &mbs)) !=
            UTIL_OK ||
        (rc = fmt_str_ref(cx, e, p, "schedule", 0, &sched)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "vpp", FMT_F_POS, 1, &vpp)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "zero", 0, -1, &zero)) != UTIL_OK ||
        (rc = fmt_str_ref(cx, e, p, "recompute", 0, &rec)) != UTIL_OK ||
        (rc = parse_flag(cx, e, p, "sequence_parallel", &sp)) != UTIL_OK ||
        (rc = fmt_str_ref(cx, e, p, "offload", 0, &off)) != UTIL_OK ||
        (rc = parse_flag(cx, e, p, "overlap_grad", &ov_grad)) != UTIL_OK ||
        (rc = parse_flag(cx, e, p, "overlap_param", &ov_param)) != UTIL_OK ||
        (rc = parse_flag(cx, e, p, "overlap_tp", &ov_tp)) != UTIL_OK ||
        (rc = parse_flag(cx, e, p, "overlap_p2p", &ov_p2p)) != UTIL_OK ||
        (rc = fmt_sub_field(cx, e, p, "stage_boundaries", open ? 0 : FMT_F_REQ,
                            FMT_K_ARR, &jb)) != UTIL_OK)
        return rc;
    /* fewer ranks than GPUs only with explicit ranks: the rest are idle */
    if ((long long)tp * dp > c->ndevices ||
        (long long)tp * dp * pp > c->ndevices ||
        ((long long)tp * dp * pp != c->ndevices && fmt_field(e, "ranks") == NULL))
        return fmt_fail(cx, UTIL_EINVAL, p,
                        "tp * dp * pp = %d * %d * %d = %.0f does not match the "
                        "cluster's %d GPUs%s",
                        tp, dp, pp, (double)tp * dp * pp, c->ndevices,
                        (long long)tp * dp > c->ndevices ||
                                (long long)tp * dp * pp > c->ndevices
                            ? ""
                            : " (list the devices of the ranks in 'ranks' to leave "
                              "the others idle)");
    if (sched != NULL) {
        util_json_key(fp, sizeof fp, p, "schedule");
        if (strcmp(sched, "gpipe") == 0)
            sch = FMT_SCHED_GPIPE;
        else if (strcmp(sched, "1f1b") != 0)
            return fmt_fail(cx, UTIL_EFIELD, fp,
                            "expected '1f1b' or 'gpipe', got '%s'", sched);
    }
    if (rec != NULL && (recompute = fmt_recompute_from_name(rec)) < 0) {
        util_json_key(fp, sizeof fp, p, "recompute");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected 'none', 'full' or 'selective', got '%s'", rec);
    }
    if (off != NULL && (offload = fmt_offload_from_name(off)) < 0) {
        util_json_key(fp, sizeof fp, p, "offload");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected 'none' or 'optimizer', got '%s'", off);
    }
    if (ov_tp == 1 && tp > 1 && !sp) {
        util_json_key(fp, sizeof fp, p, "overlap_tp");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "tensor-parallel communication overlap needs "
                        "sequence_parallel true");
    }
    if (zero != -1 && (zero < 0 || zero > 3)) {
        util_json_key(fp, sizeof fp, p, "zero");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected a ZeRO stage from 0 to 3, got %d", zero);
    }
    if (vpp > FMT_MAX_VPP) {
        util_json_key(fp, sizeof fp, p, "vpp");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected at most %d model chunks per device, got %d",
                        FMT_MAX_VPP, vpp);
    }
    util_json_key(fp, sizeof fp, p, "stage_boundaries");
    nb = jb != NULL ? cJSON_GetArraySize(jb) : pp + 1;
    if (nb != pp + 1)
        return fmt_fail(cx, UTIL_EINVAL, fp,
                        "expected %d entries (pp + 1), got %d", pp + 1, nb);
    if (fmt_strategy_alloc(s, tp, dp, pp) != UTIL_OK)
        return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
    s->mbs = mbs;
    s->schedule = sch;
    s->vpp = vpp;
    s->sp = sp;
    s->recompute = recompute;
    s->zero = zero;
    s->offload = offload;
    s->overlap_grad = ov_grad;
    s->overlap_param = ov_param;
    s->overlap_tp = ov_tp;
    s->overlap_p2p = ov_p2p;
    i = 0;
    if (jb == NULL) {
        /* the caller chooses them; until then the layers split evenly
         * (pp <= layers is checked below) */
        s->bounds_open = 1;
        for (i = 0; i <= pp; i++)
            s->bounds[i] = (int)((long long)i * m->nlayers / pp);
    } else
        cJSON_ArrayForEach(v, jb)
        {
            util_json_index(ep, sizeof ep, fp, i);
            if ((rc = fmt_int_value(cx, v, ep, 0, &s->bounds[i])) != UTIL_OK)
                goto done;
            i++;
        }
    jr = fmt_field(e, "ranks");
    if (jr != NULL) {
        util_json_key(fp, sizeof fp, p, "ranks");
        if ((rc = parse_ranks(cx, jr, fp, c, s)) != UTIL_OK)
            goto done;
        snprintf(s->placement, sizeof s->placement, "explicit");
    } else {
        for (i = 0; i < c->ndevices; i++)
            s->ranks[i] = i;
        snprintf(s->placement, sizeof s->placement, "megatron");
    }
    s->gas = (int)(gb / ((long long)dp * mbs));
    rc = fmt_strategy_check(c, m, s, gb, cx->err);
    if (rc != UTIL_OK)
        fmt_prefix_error(cx, p);
done:
    if (rc != UTIL_OK)
        fmt_strategy_free(s);
    return rc;
}

int fmt_parse_strategies(const char *text, const char *file,
                          const fmt_cluster *c, const fmt_model *m,
                          int global_batch, fmt_strategy **out, int *n,
                          util_error *err)
{
    return fmt_parse_strategies_keys(text, file, c, m, global_batch,
                                     fmt_strategies_root_keys, fmt_strategy_keys,
                                     out, n, err);
}

/* The bounds of FMT_MAX_STRATEGIES and FMT_MAX_STRATEGY_ENTRIES on cnt
 * strategies for c and m, checked before any is read. */
static int strategies_bound(const fmt_read_ctx *cx, int cnt, const fmt_cluster *c,
                            const fmt_model *m)
{
    const int lim = FMT_MAX_STRATEGY_ENTRIES;

    if (cnt > FMT_MAX_STRATEGIES)
        return fmt_fail(cx, UTIL_EFIELD, "strategies",
                        "expected at most %d strategies, got %d",
                        FMT_MAX_STRATEGIES, cnt);
    if (c->ndevices > lim || m->nlayers > lim)
        return fmt_fail(cx, UTIL_EFIELD, "strategies",
                        "expected a cluster of at most %d GPUs and a model of at "
                        "most %d layers for strategies (each lists every GPU and "
                        "layer), got %d GPUs and %d layers",
                        lim, lim, c->ndevices, m->nlayers);
    if ((long long)cnt * c->ndevices > lim)
        return fmt_fail(cx, UTIL_EFIELD, "strategies",
                        "expected at most %d strategies for the cluster's %d "
                        "GPUs (strategies x GPUs at most %d), got %d",
                        lim / c->ndevices, c->ndevices, lim, cnt);
    if ((long long)cnt * m->nlayers > lim)
        return fmt_fail(cx, UTIL_EFIELD, "strategies",
                        "expected at most %d strategies for the model's %d "
                        "layers (strategies x layers at most %d), got %d",
                        lim / m->nlayers, m->nlayers, lim, cnt);
    return UTIL_OK;
}

static int parse_strategies(const char *text, const char *file,
                            const fmt_cluster *c, const fmt_model *m,
                            int global_batch, const char *const *root_keys,
                            const char *const *keys, int open, fmt_strategy **out,
                            int *n, util_error *err)
{
    fmt_read_ctx cx;
    cJSON *root = NULL;
    const cJSON *js = NULL, *e;
    fmt_strategy *arr = NULL;
    char p[FMT_PATH_N];
    int rc, k = 0, cnt, i, gb = global_batch;

    cx.file = file ? file : "";
    cx.err = err;
    if (out != NULL)
        *out = NULL;
    if (n != NULL)
        *n = 0;
    if (out == NULL || n == NULL || c == NULL || m == NULL ||
        c->ndevices <= 0 || m->nlayers <= 0)
        return fmt_fail(&cx, UTIL_EINVAL, "",
                        "strategies need a cluster and a model with layers");
    if (gb <= 0)
        gb = m->global_batch;
    if (gb <= 0)
        return fmt_fail(&cx, UTIL_EINVAL, "",
                        "no global batch size given (none on the command line "
                        "nor in the model's training.global_batch)");
    if ((rc = fmt_read_doc(&cx, text, &root)) != UTIL_OK)
        goto done;
    js = fmt_field(root, "schema");
    if (cJSON_IsString(js) && strncmp(js->valuestring, "hetplan-plan/", 13) == 0) {
        rc = fmt_fail(&cx, UTIL_EFIELD, "schema", "expected a strategies file "
                      "(docs/inputs.md), got a plan ('%.40s'): a plan is read by "
                      "'--plan' of whatif, replan, export and report",
                      js->valuestring);
        goto done;
    }
    if ((root_keys != NULL && (rc = fmt_keys(&cx, root, "", root_keys)) != UTIL_OK) ||
        (rc = fmt_sub_field(&cx, root, "", "strategies",
                            FMT_F_REQ | FMT_F_NONEMPTY, FMT_K_ARR, &js)) !=
            UTIL_OK)
        goto done;
    cnt = cJSON_GetArraySize(js);
    if ((rc = strategies_bound(&cx, cnt, c, m)) != UTIL_OK)
        goto done;
    arr = calloc((size_t)cnt, sizeof *arr);
    if (arr == NULL) {
        rc = fmt_fail(&cx, UTIL_ENOMEM, "strategies", "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(e, js)
    {
        util_json_index(p, sizeof p, "strategies", k);
        if ((rc = parse_strategy(&cx, e, p, c, m, gb, keys, open, &arr[k])) != UTIL_OK)
            goto done;
        k++;
    }
    *out = arr;
    *n = k;
    arr = NULL;
done:
    if (arr != NULL)
        for (i = 0; i < k; i++)
            fmt_strategy_free(&arr[i]);
    free(arr);
    cJSON_Delete(root);
    return rc;
}

int fmt_parse_strategies_keys(const char *text, const char *file,
                              const fmt_cluster *c, const fmt_model *m,
                              int global_batch, const char *const *root_keys,
                              const char *const *keys, fmt_strategy **out,
                              int *n, util_error *err)
{
    return parse_strategies(text, file, c, m, global_batch, root_keys, keys, 0,
                            out, n, err);
}

/* What fmt_parse_strategies needs besides the text. */
typedef struct strategies_arg {
    const fmt_cluster *c;
    const fmt_model *m;
    int global_batch;
    int *n;
} strategies_arg;

int fmt_parse_strategies_open(const char *text, const char *file,
                              const fmt_cluster *c, const fmt_model *m,
                              int global_batch, fmt_strategy **out, int *n,
                              util_error *err)
{
    return parse_strategies(text, file, c, m, global_batch,
                            fmt_strategies_root_keys, fmt_strategy_keys, 1, out, n,
                            err);
}

static int parse_strategies_text(const char *text, const char *file,
                                 const void *arg, void *out, util_error *err)
{
    const strategies_arg *a = arg;

    return fmt_parse_strategies_open(text, file, a->c, a->m, a->global_batch, out,
                                     a->n, err);
}

int fmt_load_strategies(const char *path, const fmt_cluster *c,
                         const fmt_model *m, int global_batch,
                         fmt_strategy **out, int *n, util_error *err)
{
    strategies_arg a = {c, m, global_batch, n};

    if (n != NULL)
        *n = 0;
    return fmt_load_file(path, parse_strategies_text, &a, out, sizeof *out, err);
}
