/* formats/json_read.c: what the readers of the input files share: the
 * located error of a reader, number, integer, string and sub-object
 * getters that check their value, the document parse, the file read of
 * the loaders and the prefixing of errors left by other modules.
 * Declared in formats/internal.h. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

int fmt_fail(const fmt_read_ctx *cx, int code, const char *path,
             const char *fmt, ...)
{
    char msg[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return util_error_set(cx->err, code, cx->file, path, "%s", msg);
}

int fmt_name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int x = (unsigned char)*a, y = (unsigned char)*b;
        if (x >= 'A' && x <= 'Z')
            x += 'a' - 'A';
        if (y >= 'A' && y <= 'Z')
            y += 'a' - 'A';
        if (x != y)
            return 0;
    }
    return *a == *b;
}

void fmt_list_add(char *buf, size_t n, size_t *used, const char *name)
{
    size_t need;

    if (*used >= n)
        return;
    need = (*used ? 2 : 0) + strlen(name);
    if (*used + need + 6 >= n) {
        snprintf(buf + *used, n - *used, "%s...", *used ? ", " : "");
        *used = n;
        return;
    }
    snprintf(buf + *used, n - *used, "%s%s", *used ? ", " : "", name);
    *used += need;
}

/* Largest value of a number field, by key (docs/inputs.md, "Ranges"), so
 * that unit conversions and the model's products stay finite. */
typedef struct num_limit {
    const char *key;
    double max;
    const char *unit; /* as in the file */
} num_limit;

static const num_limit limits[] = {
    /* cluster.json */
    {"memory_gib", 1e6, " GiB"},
    {"tflops_fp16", 1e6, " TFLOP/s"},
    {"tflops_bf16", 1e6, " TFLOP/s"},
    {"mem_bw_gbs", 1e6, " GB/s"},
    {"intra_gbps", 1e7, " Gbit/s"},
    {"nic_gbps", 1e7, " Gbit/s"},
    {"gbps", 1e7, " Gbit/s"},
    {"intra_latency_us", 1e9, " us"},
    {"nic_latency_us", 1e9, " us"},
    {"latency_ms", 1e6, " ms"},
    {"gpus", 65536, ""},
    {"count", 1048576, ""},
    {"total_gpus", 1048576, ""},
    {"host_memory_gib", 1e6, " GiB"},
    {"host_bw_gbps", 1e7, " Gbit/s"},
    {"pcie_gbps", 1e7, " Gbit/s"},
    /* model.json */
    {"params", 1e15, ""},
    {"fwd_flops", 1e18, " FLOP"},
    {"out_bytes", 1e15, " bytes"},
    {"act_bytes", 1e15, " bytes"},
    {"act_rep_bytes", 1e15, " bytes"},
    {"traffic_bytes", 1e15, " bytes"},
    {"traffic_rep_bytes", 1e15, " bytes"},
    {"tp_comm_bytes", 1e15, " bytes"},
    {"tp_collectives", 1e6, ""},
    {"kernels", 1e6, ""},
    {"tied_group", 1e6, ""},
    {"repeat", 1e6, ""},
    {"layers", 1e6, ""},
    {"hidden", 1e7, ""},
    {"heads", 1e6, ""},
    {"seq", 1e8, ""},
    {"vocab", 1e9, ""},
    {"ffn", 1e8, ""},
    {"global_batch", FMT_MAX_GLOBAL_BATCH, ""},
    {"m", 1e8, ""}, /* layers[].gemms */
    {"n", 1e8, ""},
    {"k", 1e8, ""},
    {"batch", 1e9, ""},
    /* profile.json */
    {"fwd_ms", 1e9, " ms"},
    {"bwd_ms", 1e9, " ms"},
    {"compute_scale", 1e3, ""},
    {"mbs_half", 1e6, ""},
    {"msg_latency_us", 1e9, " us"},
    {"tp_fixed_ms", 1e9, " ms"},
    {"iter_overhead_ms", 1e9, " ms"},
    /* strategies */
    {"tp", 1048576, ""},
    {"dp", 1048576, ""},
    {"pp", 1048576, ""},
    {"mbs", 1e9, ""},
};

/* Smallest value (in .max) of a positive rate the model divides by
 * (docs/inputs.md, "Ranges"): a rate of 1e-300 would make times overflow
 * to infinity. */
static const num_limit floors[] = {
    {"tflops_fp16", 1e-6, " TFLOP/s"},
    {"tflops_bf16", 1e-6, " TFLOP/s"},
    {"tflops_fp32", 1e-6, " TFLOP/s"},
    {"mem_bw_gbs", 1e-6, " GB/s"},
    {"intra_gbps", 1e-6, " Gbit/s"},
    {"nic_gbps", 1e-6, " Gbit/s"},
    {"gbps", 1e-6, " Gbit/s"},
    {"bandwidth_gbps", 1e-6, " Gbit/s"},
    {"host_bw_gbps", 1e-6, " Gbit/s"},
    {"pcie_gbps", 1e-6, " Gbit/s"},
};

/* Any other number (AMP profile times, device indices, boundaries). */
static const num_limit other = {"", 1e15, ""};

/* The entry of table (n entries) for the field at JSON path p: its last
 * key, indices removed ("entries[0].fwd_ms[3]" is a "fwd_ms"); NULL when
 * none. */
static const num_limit *find_limit(const num_limit *table, size_t n,
                                   const char *p)
{
    const char *key = strrchr(p, '.');
    size_t len, i;

    key = key ? key + 1 : p;
    len = strcspn(key, "[");
    for (i = 0; i < n; i++)
        if (strlen(table[i].key) == len && strncmp(table[i].key, key, len) == 0)
            return &table[i];
    return NULL;
}

/* The limit of the field at JSON path p. */
static const num_limit *limit_of(const char *p)
{
    const num_limit *lim = find_limit(limits, sizeof limits / sizeof limits[0], p);

    return lim ? lim : &other;
}

/* The floor of the positive rate at JSON path p, or NULL. */
static const num_limit *floor_of(const char *p)
{
    return find_limit(floors, sizeof floors / sizeof floors[0], p);
}

/* The error for d outside what flags and the field's limit allow: what
 * was expected with its range, and d. */
static int out_of_range(const fmt_read_ctx *cx, const char *p, const char *want,
                        const num_limit *lim, double d)
{
    char max[UTIL_NUM_N], got[UTIL_NUM_N], low[UTIL_NUM_N];
    const num_limit *fl = floor_of(p);

    util_num_text(lim->max, max, sizeof max);
    util_num_text(d, got, sizeof got);
    if (fl != NULL)
        return fmt_fail(cx, UTIL_EFIELD, p, "expected %s of at least %s and at most "
                        "%s%s, got %s", want, util_num_text(fl->max, low, sizeof low),
                        max, lim->unit, got);
    return fmt_fail(cx, UTIL_EFIELD, p, "expected %s of at most %s%s, got %s", want,
                    max, lim->unit, got);
}

static const char *num_want(int flags)
{
    if (flags & FMT_F_POS)
        return "a positive number";
    if (flags & FMT_F_FRAC)
        return "a number between 0 and 1";
    if (flags & FMT_F_NONNEG)
        return "a non-negative number";
    return "a number";
}

static const char *int_want(int flags)
{
    if (flags & FMT_F_POS)
        return "a positive integer";
    if (flags & FMT_F_NONNEG)
        return "a non-negative integer";
    return "an integer";
}

int fmt_num_value(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                  int flags, double *out)
{
    const num_limit *lim;
    double d;

    if (!cJSON_IsNumber(v))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected %s, got %s",
                        num_want(flags), util_json_type(v));
    d = v->valuedouble;
    lim = limit_of(p);
    if (!(flags & FMT_F_FRAC) && (!isfinite(d) || d > lim->max || d < -lim->max))
        return out_of_range(cx, p, num_want(flags), lim, d);
    if (!isfinite(d) || ((flags & FMT_F_FRAC) && (d < 0 || d > 1))) {
        char got[UTIL_NUM_N];
        return fmt_fail(cx, UTIL_EFIELD, p, "expected %s, got %s", num_want(flags),
                        util_num_text(d, got, sizeof got));
    }
    if (((flags & FMT_F_POS) && !(d > 0)) || ((flags & FMT_F_NONNEG) && d < 0) ||
        (d > 0 && floor_of(p) != NULL && d < floor_of(p)->max))
        return out_of_range(cx, p, num_want(flags), lim, d);
    *out = d;
    return UTIL_OK;
}

int fmt_int_value(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                  int flags, int *out)
{
    const num_limit *lim;
    double d;

    if (!cJSON_IsNumber(v))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected %s, got %s",
                        int_want(flags), util_json_type(v));
    d = v->valuedouble;
    lim = limit_of(p);
    if (isfinite(d) && d != floor(d)) {
        char got[UTIL_NUM_N];
        return fmt_fail(cx, UTIL_EFIELD, p, "expected %s, got %s", int_want(flags),
                        util_num_text(d, got, sizeof got));
    }
    if (!isfinite(d) || d > lim->max || d < -lim->max ||
        d < (double)INT_MIN || d > (double)INT_MAX ||
        ((flags & FMT_F_POS) && d <= 0) || ((flags & FMT_F_NONNEG) && d < 0)) {
        num_limit l = *lim;
        if (l.max > (double)INT_MAX)
            l.max = (double)INT_MAX; /* an int: 32 bits */
        return out_of_range(cx, p, int_want(flags), &l, d);
    }
    *out = (int)d;
    return UTIL_OK;
}

/* A string (non-empty with FMT_F_NONEMPTY) without control characters:
 * names reach scripts, comments, terminals and reports. */
static int str_check(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                     int flags)
{
    const char *s;

    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return fmt_fail(cx, UTIL_EFIELD, p, "expected a string, got %s",
                        util_json_type(v));
    if ((flags & FMT_F_NONEMPTY) && v->valuestring[0] == '\0')
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected a non-empty string, got ''");
    for (s = v->valuestring; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return fmt_fail(cx, UTIL_EFIELD, p,
                            "expected a string without control characters, "
                            "got character 0x%02x at offset %d",
                            (unsigned)(unsigned char)*s,
                            (int)(s - v->valuestring));
    return UTIL_OK;
}

static int str_value(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                     int flags, char *buf, size_t n)
{
    size_t len;
    int rc;

    if ((rc = str_check(cx, v, p, flags)) != UTIL_OK)
        return rc;
    len = strlen(v->valuestring);
    if (len >= n)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected at most %zu characters, got %zu", n - 1, len);
    memcpy(buf, v->valuestring, len + 1);
    return UTIL_OK;
}

const cJSON *fmt_field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* The field key of obj: its JSON path in p (FMT_PATH_N bytes), its value
 * in *v (NULL when absent); the error when it is absent and flags have
 * FMT_F_REQ. */
static int field_at(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                    const char *key, int flags, char *p, const cJSON **v)
{
    *v = fmt_field(obj, key);
    util_json_key(p, FMT_PATH_N, parent, key);
    if (*v == NULL && (flags & FMT_F_REQ))
        return fmt_fail(cx, UTIL_EFIELD, p, "missing required field '%s'", key);
    return UTIL_OK;
}

int fmt_num_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, double dflt, double *out)
{
    char p[FMT_PATH_N];
    const cJSON *v;
    int rc;

    if ((rc = field_at(cx, obj, parent, key, flags, p, &v)) != UTIL_OK)
        return rc;
    if (v == NULL) {
        *out = dflt;
        return UTIL_OK;
    }
    return fmt_num_value(cx, v, p, flags, out);
}

int fmt_int_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, int dflt, int *out)
{
    char p[FMT_PATH_N];
    const cJSON *v;
    int rc;

    if ((rc = field_at(cx, obj, parent, key, flags, p, &v)) != UTIL_OK)
        return rc;
    if (v == NULL) {
        *out = dflt;
        return UTIL_OK;
    }
    return fmt_int_value(cx, v, p, flags, out);
}

int fmt_str_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, const char *dflt, char *buf,
                  size_t n)
{
    char p[FMT_PATH_N];
    const cJSON *v;
    int rc;

    if ((rc = field_at(cx, obj, parent, key, flags, p, &v)) != UTIL_OK)
        return rc;
    if (v == NULL) {
        snprintf(buf, n, "%s", dflt);
        return UTIL_OK;
    }
    return str_value(cx, v, p, flags, buf, n);
}

int fmt_str_ref(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                const char *key, int flags, const char **out)
{
    char p[FMT_PATH_N];
    const cJSON *v;
    int rc;

    *out = NULL;
    if ((rc = field_at(cx, obj, parent, key, flags, p, &v)) != UTIL_OK || v == NULL)
        return rc;
    if ((rc = str_check(cx, v, p, flags)) != UTIL_OK)
        return rc;
    *out = v->valuestring;
    return UTIL_OK;
}

int fmt_sub_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, int kind, const cJSON **out)
{
    char p[FMT_PATH_N];
    const cJSON *v;
    int rc;

    *out = NULL;
    if ((rc = field_at(cx, obj, parent, key, flags, p, &v)) != UTIL_OK || v == NULL)
        return rc;
    if (kind == FMT_K_OBJ && !cJSON_IsObject(v))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(v));
    if (kind == FMT_K_ARR && !cJSON_IsArray(v))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                        util_json_type(v));
    if ((flags & FMT_F_NONEMPTY) && cJSON_GetArraySize(v) == 0)
        return fmt_fail(cx, UTIL_EFIELD, p, "expected a non-empty %s, got %s",
                        kind == FMT_K_OBJ ? "object" : "array",
                        kind == FMT_K_OBJ ? "{}" : "[]");
    *out = v;
    return UTIL_OK;
}

int fmt_read_doc(const fmt_read_ctx *cx, const char *text, cJSON **root)
{
    return util_json_parse_object(text, cx->file, root, cx->err);
}

int fmt_load_file(const char *path, fmt_parse_fn parse, const void *arg,
                  void *out, size_t size, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        memset(out, 0, size);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = parse(text, path, arg, out, err);
    free(text);
    return rc;
}

void fmt_prefix_error(const fmt_read_ctx *cx, const char *prefix)
{
    char old[FMT_PATH_N];
    size_t n = strlen(prefix);
    util_error *err = cx->err;

    if (err == NULL)
        return;
    snprintf(err->file, sizeof err->file, "%s", cx->file);
    memcpy(old, err->path, sizeof old);
    old[sizeof old - 1] = '\0';
    if (old[0] == '\0')
        snprintf(err->path, sizeof err->path, "%s", prefix);
    else if (strncmp(old, prefix, n) != 0 ||
             (old[n] != '\0' && old[n] != '.' && old[n] != '['))
        snprintf(err->path, sizeof err->path, "%s.%.*s", prefix,
                 (int)(sizeof err->path - n - 2), old);
}

/* ---- unknown keys ------------------------------------------------------- */

static _Thread_local fmt_warnings *warn_sink;

fmt_warnings *fmt_warnings_use(fmt_warnings *w)
{
    fmt_warnings *old = warn_sink;

    warn_sink = w;
    return old;
}

void fmt_warnings_free(fmt_warnings *w)
{
    if (w == NULL)
        return;
    free(w->items);
    w->items = NULL;
    w->n = w->cap = w->dropped = 0;
}

/* The message about the unknown key: the closest known key when near
 * enough (at most a third of its letters wrong, at least one allowed),
 * else the known keys. */
static void unknown_key_msg(const char *key, const char *const *known, char *msg,
                            size_t n)
{
    const char *best = NULL;
    char list[240];
    size_t used = 0;
    int bd = 10, k, d;

    list[0] = '\0';
    for (k = 0; known[k] != NULL; k++) {
        d = util_edit_distance(key, known[k]);
        if (d < bd) {
            bd = d;
            best = known[k];
        }
        fmt_list_add(list, sizeof list, &used, known[k]);
    }
    if (best != NULL && util_near_name(key, best))
        snprintf(msg, n, "unknown key '%s', did you mean '%s'?", key, best);
    else
        snprintf(msg, n, "unknown key '%s' (known: %s)", key, list);
}

/* key as it may reach a terminal: control characters as '?', at most 48
 * bytes (then "..."). */
static void safe_key(const char *key, char *out, size_t n)
{
    size_t i;

    for (i = 0; key[i] != '\0' && i + 1 < n; i++)
        out[i] = (unsigned char)key[i] < 0x20 || key[i] == 0x7f ? '?' : key[i];
    out[i] = '\0';
    if (key[i] != '\0' && n > 4)
        memcpy(out + n - 4, "...", 4);
}

int fmt_check_keys(const char *file, const cJSON *obj, const char *path,
                   const char *const *known, util_error *err)
{
    const cJSON *e;
    char p[FMT_PATH_N], msg[320], key[52];
    int k;

    if (warn_sink == NULL || !cJSON_IsObject(obj))
        return UTIL_OK;
    cJSON_ArrayForEach(e, obj)
    {
        const char *name = e->string ? e->string : "";
        for (k = 0; known[k] != NULL; k++)
            if (strcmp(name, known[k]) == 0)
                break;
        if (known[k] != NULL)
            continue;
        safe_key(name, key, sizeof key);
        util_json_key(p, sizeof p, path, key);
        unknown_key_msg(key, known, msg, sizeof msg);
        if (warn_sink->strict)
            return util_error_set(err, UTIL_EFIELD, file, p, "%s", msg);
        if (warn_sink->n >= warn_sink->cap) {
            int cap = warn_sink->cap ? 2 * warn_sink->cap : 8;
            util_error *grown;
            if (warn_sink->cap >= 1000 ||
                (grown = realloc(warn_sink->items, (size_t)cap * sizeof *grown)) == NULL) {
                warn_sink->dropped++;
                continue;
            }
            warn_sink->items = grown;
            warn_sink->cap = cap;
        }
        memset(&warn_sink->items[warn_sink->n], 0, sizeof warn_sink->items[0]);
        util_error_set(&warn_sink->items[warn_sink->n++], UTIL_EFIELD, file, p, "%s",
                       msg);
    }
    return UTIL_OK;
}

int fmt_keys(const fmt_read_ctx *cx, const cJSON *obj, const char *path,
             const char *const *known)
{
    return fmt_check_keys(cx->file, obj, path, known, cx->err);
}
