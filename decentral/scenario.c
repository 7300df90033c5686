/* decentral/scenario.c: decentralized cluster files (regions or full
 * latency and bandwidth matrices, docs/decentralized.md) into a DT-FM
 * problem: the workload's c_pp and c_dp and optional compute times. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

#define PATH_N 160               /* = sizeof util_error.path */
#define MAX_DTFM_DEVICES 4096    /* devices in one decentralized cluster */
#define MAX_DTFM_MATRIX_DEVICES 1024 /* devices of a file in matrix form */
/* JSON values (commas, counted before parsing): two such matrices and more */
#define MAX_DTFM_VALUES (2L * MAX_DTFM_MATRIX_DEVICES * MAX_DTFM_MATRIX_DEVICES + 65536L)

/* the paper's GPT3-XL settings (DT-FM section 4.1) */
#define GPT3XL_BATCH_TOKENS 1e6
#define GPT3XL_HIDDEN 2048.0
#define GPT3XL_PARAMS 1.3e9
#define GPT3XL_SEQ 2048.0
/* what the public scheduler computes (../shared/data/dtfm/README.md): the
 * activations of one micro-batch group with hidden 2024 instead of 2048,
 * 2024 x 2048 seq x 2 bytes x (125 000 / 2048) sequences = 506e6 bytes,
 * divided by 2^30 and used as "GB" against Gbit/s: 0.47124922275543213 in
 * its units, 0.47124922275543213e9 bytes in ours (each step but the last
 * product is exact in binary, so the double is the reference's) */
#define PUBLIC_C_PP (2024.0 * 2048.0 * 2.0 * (125000.0 / 2048.0) / 1073741824.0 * 1e9)
#define PUBLIC_C_DP 0.65e9

#if defined(__GNUC__)
#define PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PRINTF_LIKE(a, b)
#endif

enum { F_REQ = 1, F_POS = 2, F_NONNEG = 4 };

typedef struct pctx {
    const char *file;
    util_error *err;
} pctx;

static const char *const conv_names[] = {"paper", "public-code"};

const char *dtfm_convention_name(int convention)
{
    if (convention < 0 || convention > 1)
        return NULL;
    return conv_names[convention];
}

int dtfm_convention_from_name(const char *name)
{
    int i;

    for (i = 0; name && i < 2; i++)
        if (strcmp(name, conv_names[i]) == 0)
            return i;
    return -1;
}

void dtfm_options_init(dtfm_options *o)
{
    memset(o, 0, sizeof *o);
    o->convention = DTFM_PAPER;
    o->model = NULL;
    o->compute = 0;
    o->d_pp = 0;
}

void dtfm_input_free(dtfm_input *in)
{
    if (in == NULL)
        return;
    dtfm_problem_free(&in->prob);
    free(in->region_name);
    free(in->region_gpus);
    free(in->device_region);
    free(in->device_type);
    memset(in, 0, sizeof *in);
}

/* ---- JSON reading helpers -------------------------------------------- */

static int fail(const pctx *cx, const char *path, const char *fmt, ...)
    PRINTF_LIKE(3, 4);

static int fail(const pctx *cx, const char *path, const char *fmt, ...)
{
    char msg[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return util_error_set(cx->err, UTIL_EFIELD, cx->file, path, "%s", msg);
}

static const char *want(int flags, int integer)
{
    if (flags & F_POS)
        return integer ? "a positive integer" : "a positive number";
    if (flags & F_NONNEG)
        return integer ? "a non-negative integer" : "a non-negative number";
    return integer ? "an integer" : "a number";
}

/* Largest value of each number field (docs/decentralized.md), so that
 * unit conversions and the costs stay finite. */
static const struct {
    const char *key;
    double max;
    const char *unit;
} limits[] = {
    {"latency_ms", 1e6, " ms"},         {"bandwidth_gbps", 1e7, " Gbit/s"},
    {"c_pp_bytes", 1e15, " bytes"},     {"c_dp_bytes", 1e15, " bytes"},
    {"activation_bytes", 1e15, " bytes"}, {"gradient_bytes", 1e15, " bytes"},
    {"batch_tokens", 1e12, ""},         {"hidden", 1e7, ""},
    {"params", 1e15, ""},
};

/* Number v of field key at JSON path p. */
static int num_at(const pctx *cx, const cJSON *v, const char *p,
                  const char *key, int flags, double *out)
{
    double d, max = 1e15;
    const char *unit = "";
    size_t i;

    if (!cJSON_IsNumber(v))
        return fail(cx, p, "expected %s, got %s", want(flags, 0), util_json_type(v));
    d = v->valuedouble;
    for (i = 0; i < sizeof limits / sizeof limits[0]; i++)
        if (strcmp(limits[i].key, key) == 0) {
            max = limits[i].max;
            unit = limits[i].unit;
        }
    if (!isfinite(d) || d > max || d < -max) {
        char mx[UTIL_NUM_N], got[UTIL_NUM_N];
        return fail(cx, p, "expected %s of at most %s%s, got %s", want(flags, 0),
                    util_num_text(max, mx, sizeof mx), unit,
                    util_num_text(d, got, sizeof got));
    }
    if (((flags & F_POS) && !(d > 0)) ||
        ((flags & F_NONNEG) && d < 0)) {
        char got[UTIL_NUM_N];
        return fail(cx, p, "expected %s, got %s", want(flags, 0),
                    util_num_text(d, got, sizeof got));
    }
    *out = d;
    return UTIL_OK;
}

/* Optional (or F_REQ) number field; *found says whether it was there. */
static int num_field(const pctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, double *out, int *found)
{
    char p[PATH_N];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    util_json_key(p, PATH_N, parent, key);
    if (found)
        *found = v != NULL;
    if (v == NULL)
        return (flags & F_REQ) ? fail(cx, p, "missing required field '%s'", key)
                               : UTIL_OK;
    return num_at(cx, v, p, key, flags, out);
}

static int int_field(const pctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, int lo, int hi, int *out,
                     int *found)
{
    char p[PATH_N];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    double d;

    util_json_key(p, PATH_N, parent, key);
    if (found)
        *found = v != NULL;
    if (v == NULL)
        return (flags & F_REQ) ? fail(cx, p, "missing required field '%s'", key)
                               : UTIL_OK;
    if (!cJSON_IsNumber(v))
        return fail(cx, p, "expected %s, got %s", want(flags, 1), util_json_type(v));
    d = v->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < lo || d > hi) {
        char got[UTIL_NUM_N];
        return fail(cx, p, "expected an integer in %d..%d, got %s", lo, hi,
                    util_num_text(d, got, sizeof got));
    }
    *out = (int)d;
    return UTIL_OK;
}

static int str_field(const pctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, char *buf, size_t n)
{
    char p[PATH_N];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    size_t len;

    util_json_key(p, PATH_N, parent, key);
    if (v == NULL)
        return (flags & F_REQ) ? fail(cx, p, "missing required field '%s'", key)
                               : UTIL_OK;
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return fail(cx, p, "expected a string, got %s", util_json_type(v));
    len = strlen(v->valuestring);
    if (len == 0)
        return fail(cx, p, "expected a non-empty string, got ''");
    if (len >= n)
        return fail(cx, p, "expected at most %zu characters, got %zu", n - 1, len);
    memcpy(buf, v->valuestring, len + 1);
    return UTIL_OK;
}

/* Object or array field (kind 'o' / 'a'); *out NULL when absent. */
static int sub_field(const pctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, char kind, const cJSON **out)
{
    char p[PATH_N];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    *out = NULL;
    util_json_key(p, PATH_N, parent, key);
    if (v == NULL)
        return (flags & F_REQ) ? fail(cx, p, "missing required field '%s'", key)
                               : UTIL_OK;
    if (kind == 'o' && !cJSON_IsObject(v))
        return fail(cx, p, "expected an object, got %s", util_json_type(v));
    if (kind == 'a' && !cJSON_IsArray(v))
        return fail(cx, p, "expected an array, got %s", util_json_type(v));
    if (kind == 'a' && cJSON_GetArraySize(v) == 0)
        return fail(cx, p, "expected a non-empty array, got []");
    *out = v;
    return UTIL_OK;
}

/* A {"latency_ms": x, "bandwidth_gbps": y} object (both required). */
static int link_obj(const pctx *cx, const cJSON *o, const char *p, double *lat,
                    double *bw)
{
    double ms = 0.0, gbps = 0.0;
    int rc;

    if ((rc = num_field(cx, o, p, "latency_ms", F_REQ | F_NONNEG, &ms, NULL)) ||
        (rc = num_field(cx, o, p, "bandwidth_gbps", F_REQ | F_POS, &gbps, NULL)))
        return rc;
    *lat = ms / 1000.0;
    *bw = gbps * 1e9 / 8.0;
    return UTIL_OK;
}

/* ---- regions and matrices -------------------------------------------- */

typedef struct raw {
    int n;
    double *lat, *bw;        /* n * n (matrix form) */
    double *rlat, *rbw;      /* nreg * nreg (region form) */
    int *region;             /* n */
    char (*type)[32];        /* n */
    int nreg;
    char (*rname)[64];
    int *rgpus;
} raw;

static void raw_free(raw *r)
{
    free(r->lat);
    free(r->bw);
    free(r->rlat);
    free(r->rbw);
    free(r->region);
    free(r->type);
    free(r->rname);
    free(r->rgpus);
    memset(r, 0, sizeof *r);
}

/* n devices in nreg regions; the n * n matrices when matrices, else the
 * nreg * nreg links between regions. */
static int raw_alloc(const pctx *cx, raw *r, int n, int nreg, int matrices)
{
    size_t nn = matrices ? (size_t)n * (size_t)n : (size_t)nreg * (size_t)nreg;
    double **lat = matrices ? &r->lat : &r->rlat, **bw = matrices ? &r->bw : &r->rbw;

    r->n = n;
    r->nreg = nreg;
    *lat = calloc(nn, sizeof **lat);
    *bw = calloc(nn, sizeof **bw);
    r->region = calloc((size_t)n, sizeof *r->region);
    r->type = calloc((size_t)n, sizeof *r->type);
    r->rname = calloc((size_t)nreg, sizeof *r->rname);
    r->rgpus = calloc((size_t)nreg, sizeof *r->rgpus);
    if (!*lat || !*bw || !r->region || !r->type || !r->rname || !r->rgpus)
        return util_error_set(cx->err, UTIL_ENOMEM, cx->file, "",
                              "out of memory");
    return UTIL_OK;
}

static int parse_regions(const pctx *cx, const cJSON *root, const cJSON *regs,
                         raw *r)
{
    int nreg = cJSON_GetArraySize(regs), i, j, n = 0, rc, a, b, np;
    double in_lat = 0, in_bw = 0, bt_lat = 0, bt_bw = 0;
    double *rl, *rb, *il = NULL, *ib = NULL;
    char *have = NULL, p[PATH_N], q[PATH_N];
    const cJSON *inside = NULL, *between = NULL, *pairs = NULL, *e;
    int have_inside = 0, have_between = 0;
    char dflt_type[32] = "V100";
    dtfm_names ix = {NULL, 0, NULL};

    if ((rc = sub_field(cx, root, "", "inside", 0, 'o', &inside)) ||
        (rc = sub_field(cx, root, "", "between", 0, 'o', &between)) ||
        (rc = sub_field(cx, root, "", "region_pairs", 0, 'a', &pairs)) ||
        (rc = str_field(cx, root, "", "device", 0, dflt_type, sizeof dflt_type)))
        return rc;
    if (inside) {
        if ((rc = link_obj(cx, inside, "inside", &in_lat, &in_bw)))
            return rc;
        have_inside = 1;
    }
    if (between) {
        if ((rc = link_obj(cx, between, "between", &bt_lat, &bt_bw)))
            return rc;
        have_between = 1;
    }
    for (i = 0, e = regs->child; i < nreg; i++, e = e->next) {
        int gpus = 0;
        util_json_index(p, PATH_N, "regions", i);
        if (!cJSON_IsObject(e))
            return fail(cx, p, "expected an object, got %s", util_json_type(e));
        if ((rc = int_field(cx, e, p, "gpus", F_REQ | F_POS, 1,
                            MAX_DTFM_DEVICES, &gpus, NULL)))
            return rc;
        n += gpus;
        if (n > MAX_DTFM_DEVICES)
            return fail(cx, p, "expected at most %d devices in all, got more",
                        MAX_DTFM_DEVICES);
    }
    if ((rc = raw_alloc(cx, r, n, nreg, 0)))
        return rc;
    il = calloc((size_t)nreg, sizeof *il);
    ib = calloc((size_t)nreg, sizeof *ib);
    have = calloc((size_t)nreg * (size_t)nreg, 1);
    rl = r->rlat; /* the links between regions; their diagonal last */
    rb = r->rbw;
    if (!il || !ib || !have ||
        dtfm_names_init(&ix, (const char (*)[64])r->rname, nreg) != UTIL_OK) {
        rc = util_error_set(cx->err, UTIL_ENOMEM, cx->file, "", "out of memory");
        goto done;
    }
    for (i = 0, n = 0, e = regs->child; i < nreg; i++, e = e->next) {
        int found = 0, gpus = 0, k;
        char type[32];
        double ms = 0, gbps = 0;
        util_json_index(p, PATH_N, "regions", i);
        snprintf(type, sizeof type, "%s", dflt_type);
        if ((rc = str_field(cx, e, p, "name", F_REQ, r->rname[i], sizeof r->rname[i])) ||
            (rc = int_field(cx, e, p, "gpus", F_REQ | F_POS, 1, MAX_DTFM_DEVICES,
                            &gpus, NULL)) ||
            (rc = str_field(cx, e, p, "device", 0, type, sizeof type)))
            goto done;
        if ((j = dtfm_names_add(&ix, i)) != i) {
            util_json_key(q, PATH_N, p, "name");
            rc = fail(cx, q, "expected a unique region name, '%s' is also "
                      "regions[%d]", r->rname[i], j);
            goto done;
        }
        if ((rc = num_field(cx, e, p, "latency_ms", F_NONNEG, &ms, &found)))
            goto done;
        il[i] = found ? ms / 1000.0 : in_lat;
        if (found && !cJSON_GetObjectItemCaseSensitive(e, "bandwidth_gbps")) {
            util_json_key(q, PATH_N, p, "bandwidth_gbps");
            rc = fail(cx, q, "missing required field 'bandwidth_gbps' (given "
                      "with 'latency_ms')");
            goto done;
        }
        if ((rc = num_field(cx, e, p, "bandwidth_gbps", F_POS, &gbps, &found)))
            goto done;
        ib[i] = found ? gbps * 1e9 / 8.0 : in_bw;
        if (!found && !have_inside && gpus > 1) {
            rc = fail(cx, p, "no link inside region '%s': give 'inside' at the "
                      "top level or 'latency_ms' and 'bandwidth_gbps' here",
                      r->rname[i]);
            goto done;
        }
        r->rgpus[i] = gpus;
        for (k = 0; k < gpus; k++, n++) {
            r->region[n] = i;
            snprintf(r->type[n], sizeof r->type[n], "%s", type);
        }
    }
    np = pairs ? cJSON_GetArraySize(pairs) : 0;
    if (np > nreg * (nreg - 1) / 2) {
        rc = fail(cx, "region_pairs", "expected at most %d entries (one per pair "
                  "of the %d regions), got %d", nreg * (nreg - 1) / 2, nreg, np);
        goto done;
    }
    for (i = 0, e = pairs ? pairs->child : NULL; i < np; i++, e = e->next) {
        char an[64] = "", bn[64] = "";
        const cJSON *rev = NULL;
        double la, ba, lr, br;
        util_json_index(p, PATH_N, "region_pairs", i);
        if (!cJSON_IsObject(e)) {
            rc = fail(cx, p, "expected an object, got %s", util_json_type(e));
            goto done;
        }
        if ((rc = str_field(cx, e, p, "a", F_REQ, an, sizeof an)) ||
            (rc = str_field(cx, e, p, "b", F_REQ, bn, sizeof bn)))
            goto done;
        a = dtfm_names_find(&ix, an);
        b = dtfm_names_find(&ix, bn);
        if (a < 0 || b < 0) {
            util_json_key(q, PATH_N, p, a < 0 ? "a" : "b");
            rc = fail(cx, q, "expected the name of a region, got '%s'",
                      a < 0 ? an : bn);
            goto done;
        }
        if (a == b) {
            util_json_key(q, PATH_N, p, "b");
            rc = fail(cx, q, "expected a region other than '%s'", an);
            goto done;
        }
        if (have[a * nreg + b]) {
            rc = fail(cx, p, "expected one entry per region pair, '%s'-'%s' "
                      "appears twice", an, bn);
            goto done;
        }
        if ((rc = link_obj(cx, e, p, &la, &ba)) ||
            (rc = sub_field(cx, e, p, "reverse", 0, 'o', &rev)))
            goto done;
        lr = la;
        br = ba;
        if (rev) {
            util_json_key(q, PATH_N, p, "reverse");
            if ((rc = link_obj(cx, rev, q, &lr, &br)))
                goto done;
        }
        rl[a * nreg + b] = la;
        rb[a * nreg + b] = ba;
        rl[b * nreg + a] = lr;
        rb[b * nreg + a] = br;
        have[a * nreg + b] = have[b * nreg + a] = 1;
    }
    for (a = 0; a < nreg; a++) /* row by row; have is symmetric */
        for (b = 0; b < nreg; b++)
            if (b != a && !have[a * nreg + b]) {
                if (!have_between) { /* b > a: (b, a) was seen in row b */
                    rc = fail(cx, "region_pairs", "no link between regions '%s' "
                              "and '%s': give 'between' or a region_pairs entry",
                              r->rname[a], r->rname[b]);
                    goto done;
                }
                rl[a * nreg + b] = bt_lat;
                rb[a * nreg + b] = bt_bw;
            }
    /* region form: the link of every pair of regions, inside one on the
     * diagonal (no n * n matrices) */
    for (a = 0; a < nreg; a++) {
        r->rlat[a * nreg + a] = il[a];
        r->rbw[a * nreg + a] = ib[a];
    }
    rc = UTIL_OK;
done:
    free(il);
    free(ib);
    free(have);
    dtfm_names_free(&ix);
    return rc;
}

static int parse_matrix(const pctx *cx, const cJSON *root, const char *key,
                        int n, double scale, double *out, int positive)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, key), *row, *v;
    char p[PATH_N], q[PATH_N];
    int i, j, rc;

    if (!cJSON_IsArray(m))
        return fail(cx, key, "expected an array of %d rows, got %s", n, util_json_type(m));
    if (cJSON_GetArraySize(m) != n)
        return fail(cx, key, "expected %d rows, got %d", n, cJSON_GetArraySize(m));
    /* walk the linked lists (cJSON_GetArrayItem is linear in the index);
     * element paths are formatted only for a message */
    for (i = 0, row = m->child; i < n; i++, row = row->next) {
        util_json_index(p, PATH_N, key, i);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != n)
            return fail(cx, p, "expected an array of %d numbers, got %s", n,
                        cJSON_IsArray(row) ? "another length" : util_json_type(row));
        for (j = 0, v = row->child; j < n; j++, v = v->next) {
            double d = 0.0; /* initialised for -O2 */
            if (i == j && (cJSON_IsNull(v) || cJSON_IsNumber(v)))
                continue; /* the diagonal is ignored */
            if (cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
                v->valuedouble <= 1e6 &&
                (positive ? v->valuedouble > 0 : v->valuedouble >= 0)) {
                d = v->valuedouble; /* within both matrices' limits */
            } else {
                util_json_index(q, PATH_N, p, j);
                if ((rc = num_at(cx, v, q, key, positive ? F_POS : F_NONNEG, &d)))
                    return rc;
            }
            out[(size_t)i * (size_t)n + (size_t)j] = d * scale;
        }
    }
    return UTIL_OK;
}

static int parse_matrices(const pctx *cx, const cJSON *root, raw *r)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "latency_ms");
    const cJSON *types = NULL;
    char dflt[32] = "V100", p[PATH_N];
    int n, i, rc;

    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) == 0)
        return fail(cx, "latency_ms", "expected a non-empty array of rows, got %s",
                    util_json_type(m));
    n = cJSON_GetArraySize(m);
    if (n > MAX_DTFM_MATRIX_DEVICES)
        return fail(cx, "latency_ms", "expected at most %d devices in matrix form "
                    "(regions take up to %d), got %d", MAX_DTFM_MATRIX_DEVICES,
                    MAX_DTFM_DEVICES, n);
    if ((rc = str_field(cx, root, "", "device", 0, dflt, sizeof dflt)) ||
        (rc = sub_field(cx, root, "", "device_types", 0, 'a', &types)))
        return rc;
    if (types && cJSON_GetArraySize(types) != n)
        return fail(cx, "device_types", "expected %d device types, got %d", n,
                    cJSON_GetArraySize(types));
    if ((rc = raw_alloc(cx, r, n, 1, 1)))
        return rc;
    snprintf(r->rname[0], sizeof r->rname[0], "all");
    r->rgpus[0] = n;
    for (i = 0; i < n; i++) {
        snprintf(r->type[i], sizeof r->type[i], "%s", dflt);
        if (types) {
            const cJSON *t = cJSON_GetArrayItem(types, i);
            util_json_index(p, PATH_N, "device_types", i);
            if (!cJSON_IsString(t) || t->valuestring == NULL ||
                t->valuestring[0] == '\0' || strlen(t->valuestring) >= 32)
                return fail(cx, p, "expected a GPU type name, got %s", util_json_type(t));
            snprintf(r->type[i], sizeof r->type[i], "%s", t->valuestring);
        }
    }
    if ((rc = parse_matrix(cx, root, "latency_ms", n, 1e-3, r->lat, 0)) ||
        (rc = parse_matrix(cx, root, "bandwidth_gbps", n, 1e9 / 8.0, r->bw, 1)))
        return rc;
    return UTIL_OK;
}

/* ---- workload -------------------------------------------------------- */

static int derive_workload(const pctx *cx, const cJSON *root,
                           const dtfm_options *o, dtfm_input *in,
                           raw *r)
{
    const cJSON *wl = NULL;
    int rc, d_pp = 8, d_dp = 0, have_dpp = 0, have_ddp = 0, have_cpp = 0;
    int have_cdp = 0, any = 0, f, l;
    double c_pp = 0, c_dp = 0, seq = GPT3XL_SEQ;
    const fmt_model *m = o->model;

    if ((rc = sub_field(cx, root, "", "workload", 0, 'o', &wl)))
        return rc;
    in->batch_tokens = GPT3XL_BATCH_TOKENS;
    in->hidden = GPT3XL_HIDDEN;
    in->params = GPT3XL_PARAMS;
    in->act_bytes = 2.0;
    in->grad_bytes = 4.0;
    snprintf(in->workload_source, sizeof in->workload_source, "paper-gpt3-xl");
    if (wl) {
        if ((rc = int_field(cx, wl, "workload", "d_pp", F_POS, 1,
                            DTFM_MAX_STAGES, &d_pp, &have_dpp)) ||
            (rc = int_field(cx, wl, "workload", "d_dp", F_POS, 1,
                            MAX_DTFM_DEVICES, &d_dp, &have_ddp)) ||
            (rc = num_field(cx, wl, "workload", "c_pp_bytes", F_NONNEG, &c_pp,
                            &have_cpp)) ||
            (rc = num_field(cx, wl, "workload", "c_dp_bytes", F_NONNEG, &c_dp,
                            &have_cdp)) ||
            (rc = num_field(cx, wl, "workload", "batch_tokens", F_POS,
                            &in->batch_tokens, &f)))
            return rc;
        any |= f;
        if ((rc = num_field(cx, wl, "workload", "hidden", F_POS, &in->hidden, &f)))
            return rc;
        any |= f;
        if ((rc = num_field(cx, wl, "workload", "params", F_POS, &in->params, &f)))
            return rc;
        any |= f;
        if ((rc = num_field(cx, wl, "workload", "activation_bytes", F_POS,
                            &in->act_bytes, &f)))
            return rc;
        any |= f;
        if ((rc = num_field(cx, wl, "workload", "gradient_bytes", F_POS,
                            &in->grad_bytes, &f)))
            return rc;
        any |= f;
        if (any)
            snprintf(in->workload_source, sizeof in->workload_source, "file");
    }
    if (o->d_pp > 0)
        d_pp = o->d_pp;
    if (d_pp > DTFM_MAX_STAGES)
        return util_error_set(cx->err, UTIL_EINVAL, cx->file, "",
                              "expected at most %d pipeline stages, got %d",
                              DTFM_MAX_STAGES, d_pp);
    if (o->d_pp > 0 && r->n % d_pp != 0) {
        char divs[160];
        size_t used = 0;
        int k;

        divs[0] = '\0';
        for (k = 1; k <= r->n && k <= DTFM_MAX_STAGES && used + 16 < sizeof divs; k++)
            if (r->n % k == 0)
                used += (size_t)snprintf(divs + used, sizeof divs - used, "%s%d",
                                         used ? ", " : "", k);
        return util_error_set(cx->err, UTIL_EINVAL, cx->file, "",
                              "expected a divisor of the %d devices, at most %d "
                              "(%s), got %d", r->n, DTFM_MAX_STAGES, divs, d_pp);
    }
    if (r->n % d_pp != 0)
        return fail(cx, have_dpp && o->d_pp <= 0 ? "workload.d_pp" : "",
                    "expected d_pp to divide the %d devices, got d_pp %d", r->n,
                    d_pp);
    if (have_ddp && d_dp * d_pp != r->n)
        return fail(cx, "workload.d_dp", "expected d_dp = %d devices / d_pp %d "
                    "= %d, got %d", r->n, d_pp, r->n / d_pp, d_dp);
    /* the problem takes the links as read (no copy): the n * n matrices,
     * or the regions' links and each device's region */
    if ((o->compute && (in->prob.compute = calloc((size_t)r->n,
                                                  sizeof *in->prob.compute)) == NULL) ||
        (!r->lat && (in->prob.region = malloc((size_t)r->n *
                                              sizeof *in->prob.region)) == NULL))
        return util_error_set(cx->err, UTIL_ENOMEM, cx->file, "", "out of memory");
    in->prob.n = r->n;
    in->prob.d_pp = d_pp;
    in->prob.d_dp = r->n / d_pp;
    in->prob.lat = r->lat;
    in->prob.bw = r->bw;
    if (!r->lat) {
        memcpy(in->prob.region, r->region, (size_t)r->n * sizeof *r->region);
        in->prob.nreg = r->nreg;
        in->prob.rlat = r->rlat;
        in->prob.rbw = r->rbw;
    }
    r->lat = r->bw = r->rlat = r->rbw = NULL;
    if (m) {
        double total = 0.0;
        for (l = 0; l < m->nlayers; l++)
            total += m->layers[l].params;
        if (m->hidden > 0)
            in->hidden = m->hidden;
        if (m->seq > 0)
            seq = m->seq;
        if (m->global_batch > 0)
            in->batch_tokens = (double)m->global_batch * seq;
        if (total > 0)
            in->params = total;
        if (m->dtype_bytes > 0)
            in->act_bytes = m->dtype_bytes;
        snprintf(in->workload_source, sizeof in->workload_source, "model");
    }
    if (o->convention == DTFM_PUBLIC_CODE) {
        snprintf(in->workload_source, sizeof in->workload_source, "public-code");
        in->prob.c_pp = PUBLIC_C_PP;
        in->prob.c_dp = PUBLIC_C_DP;
    } else {
        /* activations of one micro-batch group (its tokens) between stages */
        in->prob.c_pp = in->batch_tokens / (double)in->prob.d_dp * in->hidden *
                        in->act_bytes;
        /* gradients of one stage's parameters */
        in->prob.c_dp = in->params / (double)d_pp * in->grad_bytes;
    }
    if (have_cpp)
        in->prob.c_pp = c_pp;
    if (have_cdp)
        in->prob.c_dp = c_dp;
    if (have_cpp && have_cdp)
        snprintf(in->workload_source, sizeof in->workload_source, "file");
    if (o->compute) {
        int bad;
        rc = dtfm_compute_times(m, (const char(*)[32])r->type, r->n,
                                in->batch_tokens / (double)in->prob.d_dp / seq, d_pp,
                                in->prob.compute, &bad, cx->err);
        if (rc == UTIL_OK && bad >= 0)
            rc = fail(cx, r->nreg > 1 || !cJSON_GetObjectItemCaseSensitive(
                                             root, "device_types")
                              ? "device"
                              : "device_types",
                      "unknown GPU type '%s' for device %d (see "
                      "docs/device-catalogue.md)", r->type[bad], bad);
        if (rc != UTIL_OK)
            return rc;
    }
    return UTIL_OK;
}

/* Commas outside strings: at least the JSON values of text less one per
 * array or object, in one pass before any parsing. */
static long count_commas(const char *t)
{
    long c = 0;
    int in = 0;

    for (; *t; t++)
        if (in && *t == '\\' && t[1])
            t++; /* an escaped character, '"' included */
        else if (*t == '"')
            in = !in;
        else
            c += !in && *t == ',';
    return c;
}

int dtfm_parse(const char *text, const char *file,
                    const dtfm_options *o, dtfm_input *out,
                    util_error *err)
{
    pctx cx;
    cJSON *root = NULL;
    raw r;
    int rc;
    dtfm_options dflt;
    const cJSON *regs = NULL;

    cx.file = file ? file : "";
    cx.err = err;
    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    if (o == NULL) {
        dtfm_options_init(&dflt);
        o = &dflt;
    }
    /* the parsed tree costs about 80 bytes a value: bounded before it is built */
    if (text && count_commas(text) > MAX_DTFM_VALUES) {
        rc = fail(&cx, "", "expected at most %ld values (matrices of at most %d "
                  "devices; regions take up to %d), got more", MAX_DTFM_VALUES,
                  MAX_DTFM_MATRIX_DEVICES, MAX_DTFM_DEVICES);
        goto done;
    }
    if ((rc = util_json_parse_object(text, cx.file, &root, err)) != UTIL_OK)
        goto done;
    snprintf(out->name, sizeof out->name, "decentralized");
    if ((rc = dtfm_scenario_keys(cx.file, root, err)) ||
        (rc = str_field(&cx, root, "", "name", 0, out->name, sizeof out->name)) ||
        (rc = sub_field(&cx, root, "", "regions", 0, 'a', &regs)))
        goto done;
    if (regs)
        rc = parse_regions(&cx, root, regs, &r);
    else if (cJSON_GetObjectItemCaseSensitive(root, "latency_ms"))
        rc = parse_matrices(&cx, root, &r);
    else
        rc = fail(&cx, "", "expected 'regions' or the 'latency_ms' and "
                  "'bandwidth_gbps' matrices, got neither");
    if (rc != UTIL_OK)
        goto done;
    if ((rc = derive_workload(&cx, root, o, out, &r)))
        goto done;
    if ((rc = dtfm_problem_check(&out->prob, err)) != UTIL_OK) {
        snprintf(err->file, sizeof err->file, "%s", cx.file);
        goto done;
    }
    out->convention = o->convention;
    out->nregions = r.nreg;
    out->region_name = r.rname;
    out->region_gpus = r.rgpus;
    out->device_region = r.region;
    out->device_type = r.type;
    r.rname = NULL;
    r.rgpus = NULL;
    r.region = NULL;
    r.type = NULL;
    rc = UTIL_OK;
done:
    raw_free(&r);
    cJSON_Delete(root);
    if (rc != UTIL_OK)
        dtfm_input_free(out);
    return rc;
}

int dtfm_load(const char *path, const dtfm_options *o,
                   dtfm_input *out, util_error *err)
{
    char *text = NULL;
    int rc;

    memset(out, 0, sizeof *out);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = dtfm_parse(text, path, o, out, err);
    free(text);
    return rc;
}
