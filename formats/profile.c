/* formats/profile.c: the profile struct and the readers of profile.json
 * (measured per-layer times, optional calibration) and of AMP's
 * profiles.json (docs/inputs.md, docs/calibration.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

void fmt_profile_free(fmt_profile *p)
{
    int i;

    if (p == NULL)
        return;
    for (i = 0; i < p->nentries; i++) {
        free(p->entries[i].fwd);
        free(p->entries[i].bwd);
    }
    free(p->entries);
    free(p->calib);
    memset(p, 0, sizeof *p);
}

/* ---- profile.json ---------------------------------------------------- */

/* An array of n per-layer times: numbers >= 0 divided by div, null = -1. */
static int parse_times(const fmt_read_ctx *cx, const cJSON *arr, const char *p,
                       int n, double div, double **out)
{
    const cJSON *v;
    char ep[FMT_PATH_N];
    double *t = NULL, d = 0.0; /* d initialised for -O2 */
    int rc = UTIL_OK, i = 0, cnt;

    *out = NULL;
    if (!cJSON_IsArray(arr))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                        util_json_type(arr));
    cnt = cJSON_GetArraySize(arr);
    if (cnt != n)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected %d entries (one per model layer), got %d", n,
                        cnt);
    t = malloc((size_t)n * sizeof *t);
    if (t == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
    cJSON_ArrayForEach(v, arr)
    {
        util_json_index(ep, sizeof ep, p, i);
        if (cJSON_IsNull(v)) {
            t[i++] = -1;
            continue;
        }
        if ((rc = fmt_num_value(cx, v, ep, FMT_F_NONNEG, &d)) != UTIL_OK)
            goto done;
        t[i++] = d / div;
    }
    *out = t;
    t = NULL;
done:
    free(t);
    return rc;
}

/* Error when entry k repeats (device, tp, mbs) of an earlier one. */
static int check_dup(const fmt_read_ctx *cx, const fmt_profile *pr, int k,
                     const char *p)
{
    const fmt_profile_entry *x = &pr->entries[k];
    int i;

    for (i = 0; i < k; i++) {
        const fmt_profile_entry *y = &pr->entries[i];
        if (y->tp == x->tp && y->mbs == x->mbs &&
            fmt_name_eq(y->device, x->device))
            return fmt_fail(cx, UTIL_EFIELD, p,
                            "duplicate entry for device '%s', tp %d, mbs %d "
                            "(entry %d has the same)",
                            x->device, x->tp, x->mbs, i);
    }
    return UTIL_OK;
}

/* The bounds of FMT_MAX_PROFILE_ENTRIES and FMT_MAX_PROFILE_TIMES on cnt
 * entries for m, at path p. */
static int entries_bound(const fmt_read_ctx *cx, const char *p, int cnt,
                         const fmt_model *m)
{
    if (cnt > FMT_MAX_PROFILE_ENTRIES)
        return fmt_fail(cx, UTIL_EFIELD, p, "expected at most %d entries, got %d",
                        FMT_MAX_PROFILE_ENTRIES, cnt);
    if ((long long)cnt * m->nlayers > FMT_MAX_PROFILE_TIMES)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected at most %d entries for the model's %d layers "
                        "(entries x layers at most %d), got %d",
                        FMT_MAX_PROFILE_TIMES / m->nlayers, m->nlayers,
                        FMT_MAX_PROFILE_TIMES, cnt);
    return UTIL_OK;
}

/* The keys of each object of a profile (docs/profiler.md,
 * docs/calibration.md); "profiler", "device_info", "machine", "detail"
 * and "calibration.fit" are what hetplan-profile and planner calibrate
 * record about the measurement, read by nobody. */
static const char *const root_keys[] = {"format", "model", "entries", "calibration",
                                        "profiler", "device_info", "machine", NULL};
static const char *const entry_keys[] = {"device", "tp", "mbs", "fwd_ms", "bwd_ms",
                                         "by_kind", "detail", NULL};
static const char *const kind_keys[] = {"fwd_ms", "bwd_ms", NULL};
static const char *const calib_keys[] = {"devices", "links", "msg_latency_us",
                                         "tp_fixed_ms", "iter_overhead_ms", "fit",
                                         NULL};
static const char *const calib_device_keys[] = {"compute_scale", "mbs_half", NULL};

static int parse_by_kind(const fmt_read_ctx *cx, const cJSON *bk, const char *p,
                         const fmt_model *m, fmt_profile_entry *en)
{
    const cJSON *e;
    char kp[FMT_PATH_N];
    int seen[64];
    double f = 0, b = 0;
    int rc, kind, i, n = m->nlayers;

    memset(seen, 0, sizeof seen);
    if (!cJSON_IsObject(bk))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(bk));
    en->fwd = malloc((size_t)n * sizeof *en->fwd);
    en->bwd = malloc((size_t)n * sizeof *en->bwd);
    if (en->fwd == NULL || en->bwd == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
    for (i = 0; i < n; i++)
        en->fwd[i] = en->bwd[i] = -1;
    cJSON_ArrayForEach(e, bk)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(kp, sizeof kp, p, name);
        if ((rc = fmt_kind_value(cx, kp, name, &kind)) != UTIL_OK)
            return rc;
        if (kind >= 64 || seen[kind])
            return fmt_fail(cx, UTIL_EFIELD, kp,
                            "layer kind '%s' is given twice", name);
        seen[kind] = 1;
        if (!cJSON_IsObject(e))
            return fmt_fail(cx, UTIL_EFIELD, kp, "expected an object, got %s",
                            util_json_type(e));
        if ((rc = fmt_keys(cx, e, kp, kind_keys)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, kp, "fwd_ms", FMT_F_REQ | FMT_F_NONNEG,
                                0, &f)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, kp, "bwd_ms", FMT_F_NONNEG, -1, &b)) !=
                UTIL_OK)
            return rc;
        for (i = 0; i < n; i++)
            if (m->layers[i].kind == kind) {
                en->fwd[i] = f / 1e3;
                en->bwd[i] = b >= 0 ? b / 1e3 : -1;
            }
    }
    return UTIL_OK;
}

static int parse_entry(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                       const fmt_model *m, fmt_profile_entry *en)
{
    const cJSON *fw, *bw, *bk;
    char fp[FMT_PATH_N];
    int rc;

    if (!cJSON_IsObject(e))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(e));
    if ((rc = fmt_keys(cx, e, p, entry_keys)) != UTIL_OK ||
        (rc = fmt_str_field(cx, e, p, "device", FMT_F_REQ | FMT_F_NONEMPTY, "",
                            en->device, sizeof en->device)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "tp", FMT_F_REQ | FMT_F_POS, 0,
                            &en->tp)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "mbs", FMT_F_REQ | FMT_F_POS, 0,
                            &en->mbs)) != UTIL_OK)
        return rc;
    fw = fmt_field(e, "fwd_ms");
    bw = fmt_field(e, "bwd_ms");
    bk = fmt_field(e, "by_kind");
    if (fw != NULL && bk != NULL)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected either 'fwd_ms' or 'by_kind', found both");
    if (bk != NULL) {
        util_json_key(fp, sizeof fp, p, "by_kind");
        if (bw != NULL)
            return fmt_fail(cx, UTIL_EFIELD, fp,
                            "expected 'bwd_ms' inside 'by_kind', found it "
                            "beside");
        return parse_by_kind(cx, bk, fp, m, en);
    }
    util_json_key(fp, sizeof fp, p, "fwd_ms");
    if (fw == NULL)
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "missing required field 'fwd_ms' (or 'by_kind')");
    if ((rc = parse_times(cx, fw, fp, m->nlayers, 1e3, &en->fwd)) !=
        UTIL_OK)
        return rc;
    if (bw == NULL || cJSON_IsNull(bw))
        return UTIL_OK;
    util_json_key(fp, sizeof fp, p, "bwd_ms");
    return parse_times(cx, bw, fp, m->nlayers, 1e3, &en->bwd);
}

/* "calibration" of a calibrated profile (docs/calibration.md):
 * {"devices": {TYPE: {"compute_scale", "mbs_half"}}, "links": {CLASS:
 * fraction}, "msg_latency_us", "tp_fixed_ms", "iter_overhead_ms"}. */
static int parse_calibration(const fmt_read_ctx *cx, const cJSON *jc,
                             fmt_calibration **out)
{
    const cJSON *jd = NULL, *jl = NULL, *e;
    fmt_calibration *cal = calloc(1, sizeof *cal);
    char p[FMT_PATH_N], ep[FMT_PATH_N];
    double v;
    int rc, t, cls;

    *out = NULL;
    if (cal == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, "calibration", "out of memory");
    fmt_calibration_init(cal);
    if ((rc = fmt_keys(cx, jc, "calibration", calib_keys)) != UTIL_OK ||
        (rc = fmt_sub_field(cx, jc, "calibration", "devices", 0, FMT_K_OBJ,
                            &jd)) != UTIL_OK ||
        (rc = fmt_sub_field(cx, jc, "calibration", "links", 0, FMT_K_OBJ,
                            &jl)) != UTIL_OK)
        goto done;
    cJSON_ArrayForEach(e, jd)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(p, sizeof p, "calibration.devices", name);
        if (!cJSON_IsObject(e)) {
            rc = fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                          util_json_type(e));
            goto done;
        }
        if (fmt_calibration_type(cal, name) >= 0) {
            rc = fmt_fail(cx, UTIL_EFIELD, p, "device type '%s' is given twice",
                          name);
            goto done;
        }
        t = fmt_calibration_add_type(cal, name);
        if (t < 0) {
            rc = fmt_fail(cx, UTIL_EFIELD, p,
                          "expected at most %d device types of at "
                          "most 31 characters",
                          FMT_CALIB_MAX_TYPES);
            goto done;
        }
        if ((rc = fmt_keys(cx, e, p, calib_device_keys)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "compute_scale", FMT_F_POS, 1.0,
                                &cal->compute_scale[t])) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "mbs_half", FMT_F_NONNEG, 0.0,
                                &cal->mbs_half[t])) != UTIL_OK)
            goto done;
    }
    cJSON_ArrayForEach(e, jl)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(p, sizeof p, "calibration.links", name);
        for (cls = 0; cls < FMT_LINK_NCLASSES; cls++)
            if (strcmp(name, fmt_link_class_name(cls)) == 0)
                break;
        if (cls == FMT_LINK_NCLASSES) {
            rc = fmt_fail(cx, UTIL_EFIELD, p, "unknown link class '%s' (known: "
                          "intra-node, inter-node, cross-region)", name);
            goto done;
        }
        if ((rc = fmt_num_value(cx, e, p, FMT_F_POS | FMT_F_FRAC, &v)) !=
            UTIL_OK)
            goto done;
        cal->bw_frac[cls] = v;
    }
    util_json_key(ep, sizeof ep, "", "calibration");
    if ((rc = fmt_num_field(cx, jc, ep, "msg_latency_us", FMT_F_NONNEG, 0.0,
                            &v)) != UTIL_OK)
        goto done;
    cal->msg_latency = v * 1e-6;
    if ((rc = fmt_num_field(cx, jc, ep, "tp_fixed_ms", FMT_F_NONNEG, 0.0,
                            &v)) != UTIL_OK)
        goto done;
    cal->tp_fixed = v * 1e-3;
    if ((rc = fmt_num_field(cx, jc, ep, "iter_overhead_ms", FMT_F_NONNEG, 0.0,
                            &v)) != UTIL_OK)
        goto done;
    cal->iter_overhead = v * 1e-3;
    *out = cal;
    cal = NULL;
done:
    free(cal);
    return rc;
}

int fmt_parse_profile(const char *text, const char *file,
                       const fmt_model *m, fmt_profile *out,
                       util_error *err)
{
    fmt_read_ctx cx;
    cJSON *root = NULL;
    fmt_profile pr;
    const cJSON *je = NULL, *e;
    const char *fmt = NULL, *model = NULL;
    char p[FMT_PATH_N];
    int rc, cnt, i = 0;

    cx.file = file ? file : "";
    cx.err = err;
    memset(&pr, 0, sizeof pr);
    if (out == NULL || m == NULL || m->nlayers <= 0 || m->layers == NULL)
        return fmt_fail(&cx, UTIL_EINVAL, "",
                        "a profile needs a model with layers");
    memset(out, 0, sizeof *out);
    pr.nlayers = m->nlayers;
    if ((rc = fmt_read_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = fmt_keys(&cx, root, "", root_keys)) != UTIL_OK ||
        (rc = fmt_str_ref(&cx, root, "", "format", 0, &fmt)) != UTIL_OK ||
        (rc = fmt_str_ref(&cx, root, "", "model", 0, &model)) != UTIL_OK ||
        (rc = fmt_sub_field(&cx, root, "", "entries", FMT_F_REQ, FMT_K_ARR,
                            &je)) != UTIL_OK)
        goto done;
    if (fmt != NULL && strcmp(fmt, FMT_PROFILE_SCHEMA) != 0) {
        rc = fmt_fail(&cx, UTIL_EFIELD, "format", "expected '%s', got '%s'",
                      FMT_PROFILE_SCHEMA, fmt);
        goto done;
    }
    cnt = cJSON_GetArraySize(je);
    if ((rc = entries_bound(&cx, "entries", cnt, m)) != UTIL_OK)
        goto done;
    if (cnt > 0) {
        pr.entries = calloc((size_t)cnt, sizeof *pr.entries);
        if (pr.entries == NULL) {
            rc = fmt_fail(&cx, UTIL_ENOMEM, "entries", "out of memory");
            goto done;
        }
    }
    cJSON_ArrayForEach(e, je)
    {
        util_json_index(p, sizeof p, "entries", i);
        pr.nentries = i + 1; /* freed on failure */
        if ((rc = parse_entry(&cx, e, p, m, &pr.entries[i])) != UTIL_OK ||
            (rc = check_dup(&cx, &pr, i, p)) != UTIL_OK)
            goto done;
        i++;
    }
    if ((rc = fmt_sub_field(&cx, root, "", "calibration", 0, FMT_K_OBJ, &je)) !=
            UTIL_OK ||
        (je != NULL && (rc = parse_calibration(&cx, je, &pr.calib)) != UTIL_OK))
        goto done; /* a calibrated profile */
    *out = pr;
    memset(&pr, 0, sizeof pr);
done:
    fmt_profile_free(&pr);
    cJSON_Delete(root);
    return rc;
}

/* arg: the model. */
static int parse_profile_text(const char *text, const char *file,
                              const void *arg, void *out, util_error *err)
{
    return fmt_parse_profile(text, file, arg, out, err);
}

int fmt_load_profile(const char *path, const fmt_model *m,
                      fmt_profile *out, util_error *err)
{
    return fmt_load_file(path, parse_profile_text, m, out, sizeof *out, err);
}

/* ---- AMP's profiles.json --------------------------------------------- */

/* "tpN" -> N, 0 when malformed. */
static int amp_tp(const char *s)
{
    size_t n;

    if (s == NULL || strncmp(s, "tp", 2) != 0)
        return 0;
    n = strlen(s + 2);
    if (n == 0 || n > 6 || strspn(s + 2, "0123456789") != n)
        return 0;
    return (int)strtol(s + 2, NULL, 10);
}

static int amp_gpu(const fmt_read_ctx *cx, const cJSON *g, const char *gp,
                   const fmt_model *m, fmt_profile *pr)
{
    const cJSON *t;
    char tpath[FMT_PATH_N];
    fmt_profile_entry *en;
    int rc, tp;

    if (!cJSON_IsObject(g))
        return fmt_fail(cx, UTIL_EFIELD, gp, "expected an object, got %s",
                        util_json_type(g));
    cJSON_ArrayForEach(t, g)
    {
        util_json_key(tpath, sizeof tpath, gp, t->string);
        tp = amp_tp(t->string);
        if (tp <= 0)
            return fmt_fail(cx, UTIL_EFIELD, tpath,
                            "expected a key 'tpN' with N > 0, got '%s'",
                            t->string ? t->string : "");
        en = &pr->entries[pr->nentries++];
        if (strlen(g->string) >= sizeof en->device)
            return fmt_fail(cx, UTIL_EFIELD, gp,
                            "expected a device name of at most %zu characters",
                            sizeof en->device - 1);
        snprintf(en->device, sizeof en->device, "%s", g->string);
        en->tp = tp;
        en->mbs = 1;
        if ((rc = parse_times(cx, t, tpath, m->nlayers, 1.0, &en->fwd)) !=
                UTIL_OK ||
            (rc = check_dup(cx, pr, pr->nentries - 1, tpath)) != UTIL_OK)
            return rc;
    }
    return UTIL_OK;
}

int fmt_profile_from_amp(const char *path, const char *key,
                          const fmt_model *m, fmt_profile *out,
                          util_error *err)
{
    fmt_read_ctx cx;
    char *text = NULL;
    cJSON *root = NULL;
    fmt_profile pr;
    const cJSON *jk, *g;
    char list[200];
    size_t used = 0;
    int rc, cnt = 0;

    cx.file = path ? path : "";
    cx.err = err;
    memset(&pr, 0, sizeof pr);
    if (out == NULL || key == NULL || m == NULL || m->nlayers <= 0)
        return fmt_fail(&cx, UTIL_EINVAL, "",
                        "an AMP profile needs a key and a model with layers");
    memset(out, 0, sizeof *out);
    pr.nlayers = m->nlayers;
    if ((rc = util_read_file(path, &text, err)) != UTIL_OK ||
        (rc = fmt_read_doc(&cx, text, &root)) != UTIL_OK)
        goto done;
    jk = fmt_field(root, key);
    if (jk == NULL) {
        list[0] = '\0';
        cJSON_ArrayForEach(g, root)
        {
            if (g->string != NULL && strcmp(g->string, "description") != 0)
                fmt_list_add(list, sizeof list, &used, g->string);
        }
        rc = fmt_fail(&cx, UTIL_ENOTFOUND, key,
                      "model '%s' not found (available: %s)", key, list);
        goto done;
    }
    if (!cJSON_IsObject(jk)) {
        rc = fmt_fail(&cx, UTIL_EFIELD, key, "expected an object, got %s",
                      util_json_type(jk));
        goto done;
    }
    cJSON_ArrayForEach(g, jk)
    {
        if (cJSON_IsObject(g))
            cnt += cJSON_GetArraySize(g);
    }
    if ((rc = entries_bound(&cx, key, cnt, m)) != UTIL_OK)
        goto done;
    if (cnt > 0) {
        pr.entries = calloc((size_t)cnt, sizeof *pr.entries);
        if (pr.entries == NULL) {
            rc = fmt_fail(&cx, UTIL_ENOMEM, key, "out of memory");
            goto done;
        }
    }
    cJSON_ArrayForEach(g, jk)
    {
        char gp[FMT_PATH_N];
        util_json_key(gp, sizeof gp, key, g->string);
        if ((rc = amp_gpu(&cx, g, gp, m, &pr)) != UTIL_OK)
            goto done;
    }
    *out = pr;
    memset(&pr, 0, sizeof pr);
done:
    fmt_profile_free(&pr);
    cJSON_Delete(root);
    free(text);
    return rc;
}
