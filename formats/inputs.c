/* formats/inputs.c: cluster, model, profile and strategy files into
 * cost-model structs.  Formats: docs/inputs.md. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "formats.h"

#define MAX_DEVICES 1048576 /* GPUs in one cluster */
#define MAX_LAYERS 1048576  /* layers in one model */
#define PATH_N 160          /* = sizeof util_error.path */

#if defined(__GNUC__)
#define PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PRINTF_LIKE(a, b)
#endif

/* field flags */
enum { F_REQ = 1, F_POS = 2, F_NONNEG = 4, F_FRAC = 8, F_NONEMPTY = 16 };
enum { K_OBJ, K_ARR };

typedef struct ctx {
    const char *file;
    util_error *err;
} ctx;

/* ---- helpers --------------------------------------------------------- */

static int fail(const ctx *cx, int code, const char *path, const char *fmt,
                ...) PRINTF_LIKE(4, 5);

static int fail(const ctx *cx, int code, const char *path, const char *fmt,
                ...)
{
    char msg[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return util_error_set(cx->err, code, cx->file, path, "%s", msg);
}

static int name_eq(const char *a, const char *b)
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

/* Append name to a ", "-separated list; ends with "..." when full. */
static void list_add(char *buf, size_t n, size_t *used, const char *name)
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

static const char *num_want(int flags)
{
    if (flags & F_POS)
        return "a positive number";
    if (flags & F_FRAC)
        return "a number between 0 and 1";
    if (flags & F_NONNEG)
        return "a non-negative number";
    return "a number";
}

static const char *int_want(int flags)
{
    if (flags & F_POS)
        return "a positive integer";
    if (flags & F_NONNEG)
        return "a non-negative integer";
    return "an integer";
}

static int num_value(const ctx *cx, const cJSON *v, const char *p, int flags,
                     double *out)
{
    double d;

    if (!cJSON_IsNumber(v))
        return fail(cx, UTIL_EFIELD, p, "expected %s, got %s",
                    num_want(flags), util_json_type(v));
    d = v->valuedouble;
    if (!isfinite(d) || ((flags & F_POS) && !(d > 0)) ||
        ((flags & (F_NONNEG | F_FRAC)) && d < 0) ||
        ((flags & F_FRAC) && d > 1))
        return fail(cx, UTIL_EFIELD, p, "expected %s, got %.10g",
                    num_want(flags), d);
    *out = d;
    return UTIL_OK;
}

static int int_value(const ctx *cx, const cJSON *v, const char *p, int flags,
                     int *out)
{
    double d;

    if (!cJSON_IsNumber(v))
        return fail(cx, UTIL_EFIELD, p, "expected %s, got %s",
                    int_want(flags), util_json_type(v));
    d = v->valuedouble;
    if (!isfinite(d) || d != floor(d))
        return fail(cx, UTIL_EFIELD, p, "expected %s, got %.10g",
                    int_want(flags), d);
    if (d < (double)INT_MIN || d > (double)INT_MAX)
        return fail(cx, UTIL_EFIELD, p,
                    "expected %s that fits in 32 bits, got %.10g",
                    int_want(flags), d);
    if (((flags & F_POS) && d <= 0) || ((flags & F_NONNEG) && d < 0))
        return fail(cx, UTIL_EFIELD, p, "expected %s, got %.10g",
                    int_want(flags), d);
    *out = (int)d;
    return UTIL_OK;
}

static int str_value(const ctx *cx, const cJSON *v, const char *p, int flags,
                     char *buf, size_t n)
{
    size_t len;

    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return fail(cx, UTIL_EFIELD, p, "expected a string, got %s",
                    util_json_type(v));
    len = strlen(v->valuestring);
    if ((flags & F_NONEMPTY) && len == 0)
        return fail(cx, UTIL_EFIELD, p,
                    "expected a non-empty string, got ''");
    if (len >= n)
        return fail(cx, UTIL_EFIELD, p,
                    "expected at most %zu characters, got %zu", n - 1, len);
    memcpy(buf, v->valuestring, len + 1);
    return UTIL_OK;
}

static const cJSON *field(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int missing(const ctx *cx, const char *p, const char *key)
{
    return fail(cx, UTIL_EFIELD, p, "missing required field '%s'", key);
}

static int num_field(const ctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, double dflt, double *out)
{
    char p[PATH_N];
    const cJSON *v = field(obj, key);

    util_json_key(p, sizeof p, parent, key);
    if (v == NULL) {
        if (flags & F_REQ)
            return missing(cx, p, key);
        *out = dflt;
        return UTIL_OK;
    }
    return num_value(cx, v, p, flags, out);
}

static int int_field(const ctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, int dflt, int *out)
{
    char p[PATH_N];
    const cJSON *v = field(obj, key);

    util_json_key(p, sizeof p, parent, key);
    if (v == NULL) {
        if (flags & F_REQ)
            return missing(cx, p, key);
        *out = dflt;
        return UTIL_OK;
    }
    return int_value(cx, v, p, flags, out);
}

static int str_field(const ctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, const char *dflt, char *buf,
                     size_t n)
{
    char p[PATH_N];
    const cJSON *v = field(obj, key);

    util_json_key(p, sizeof p, parent, key);
    if (v == NULL) {
        if (flags & F_REQ)
            return missing(cx, p, key);
        snprintf(buf, n, "%s", dflt);
        return UTIL_OK;
    }
    return str_value(cx, v, p, flags, buf, n);
}

/* A string field without length limit; *out NULL when absent. */
static int str_ref(const ctx *cx, const cJSON *obj, const char *parent,
                   const char *key, int flags, const char **out)
{
    char p[PATH_N];
    const cJSON *v = field(obj, key);

    *out = NULL;
    util_json_key(p, sizeof p, parent, key);
    if (v == NULL)
        return (flags & F_REQ) ? missing(cx, p, key) : UTIL_OK;
    if (!cJSON_IsString(v) || v->valuestring == NULL)
        return fail(cx, UTIL_EFIELD, p, "expected a string, got %s",
                    util_json_type(v));
    if ((flags & F_NONEMPTY) && v->valuestring[0] == '\0')
        return fail(cx, UTIL_EFIELD, p,
                    "expected a non-empty string, got ''");
    *out = v->valuestring;
    return UTIL_OK;
}

/* An object (K_OBJ) or array (K_ARR) field; *out NULL when absent. */
static int sub_field(const ctx *cx, const cJSON *obj, const char *parent,
                     const char *key, int flags, int kind, const cJSON **out)
{
    char p[PATH_N];
    const cJSON *v = field(obj, key);

    *out = NULL;
    util_json_key(p, sizeof p, parent, key);
    if (v == NULL)
        return (flags & F_REQ) ? missing(cx, p, key) : UTIL_OK;
    if (kind == K_OBJ && !cJSON_IsObject(v))
        return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                    util_json_type(v));
    if (kind == K_ARR && !cJSON_IsArray(v))
        return fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                    util_json_type(v));
    if ((flags & F_NONEMPTY) && cJSON_GetArraySize(v) == 0)
        return fail(cx, UTIL_EFIELD, p, "expected a non-empty %s, got %s",
                    kind == K_OBJ ? "object" : "array",
                    kind == K_OBJ ? "{}" : "[]");
    *out = v;
    return UTIL_OK;
}

/* Parse text; the root must be an object. */
static int parse_doc(const ctx *cx, const char *text, cJSON **root)
{
    const char *end = NULL, *q, *line_start;
    char near[24];
    int line = 1, k;
    size_t off;

    *root = NULL;
    if (text == NULL)
        return fail(cx, UTIL_EINVAL, "", "no JSON text given");
    for (q = text; *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'; q++)
        ;
    if (*q == '\0')
        return fail(cx, UTIL_EPARSE, "",
                    "malformed JSON: expected a JSON object, got an empty "
                    "document");
    *root = cJSON_ParseWithOpts(text, &end, 1);
    if (*root == NULL) {
        off = 0;
        if (end != NULL && end >= text)
            off = (size_t)(end - text);
        if (off > strlen(text))
            off = strlen(text);
        line_start = text;
        for (q = text; q < text + off; q++)
            if (*q == '\n') {
                line++;
                line_start = q + 1;
            }
        for (k = 0; k < (int)sizeof near - 1 && text[off + (size_t)k] != '\0' &&
                    text[off + (size_t)k] != '\n';
             k++) {
            char ch = text[off + (size_t)k];
            near[k] = (ch >= 32 && ch < 127) ? ch : ' ';
        }
        near[k] = '\0';
        if (k == 0)
            return fail(cx, UTIL_EPARSE, "",
                        "malformed JSON at line %d, column %d: unexpected "
                        "end of input",
                        line, (int)(text + off - line_start) + 1);
        return fail(cx, UTIL_EPARSE, "",
                    "malformed JSON at line %d, column %d, near '%s'", line,
                    (int)(text + off - line_start) + 1, near);
    }
    if (!cJSON_IsObject(*root))
        return fail(cx, UTIL_EFIELD, "",
                    "expected a JSON object at the top level, got %s",
                    util_json_type(*root));
    return UTIL_OK;
}

/* Point an error left by another module at this file under prefix. */
static void prefix_error(const ctx *cx, const char *prefix)
{
    char old[PATH_N];
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

/* ---- cluster --------------------------------------------------------- */

typedef struct node_ref {
    const char *name;
    int entry; /* index in the file's nodes array */
    int node;  /* index in fmt_cluster.nodes */
} node_ref;

static int ref_cmp(const void *a, const void *b)
{
    const node_ref *x = a, *y = b;
    int d = strcmp(x->name, y->name);

    if (d != 0)
        return d;
    return (x->node > y->node) - (x->node < y->node);
}

static int ref_name_cmp(const void *a, const void *b)
{
    const node_ref *x = a, *y = b;

    return strcmp(x->name, y->name);
}

/* "device_types": user-defined types, checked, converted to SI. */
static int parse_types(const ctx *cx, const cJSON *root,
                       fmt_device_type **out, int *nout)
{
    const cJSON *jt = NULL, *e;
    fmt_device_type *v = NULL;
    char p[PATH_N];
    double gib = 0, f16 = 0, bf16 = 0, bw = 0;
    int rc, k = 0, i, cnt;

    *out = NULL;
    *nout = 0;
    rc = sub_field(cx, root, "", "device_types", 0, K_OBJ, &jt);
    if (rc != UTIL_OK || jt == NULL)
        return rc;
    cnt = cJSON_GetArraySize(jt);
    if (cnt == 0)
        return UTIL_OK;
    v = calloc((size_t)cnt, sizeof *v);
    if (v == NULL)
        return fail(cx, UTIL_ENOMEM, "device_types", "out of memory");
    cJSON_ArrayForEach(e, jt)
    {
        const char *name = e->string ? e->string : "";

        util_json_key(p, sizeof p, "device_types", name);
        if (name[0] == '\0') {
            rc = fail(cx, UTIL_EFIELD, p,
                      "expected a non-empty device type name, got ''");
            goto done;
        }
        if (strlen(name) >= sizeof v[k].name) {
            rc = fail(cx, UTIL_EFIELD, p,
                      "expected a device type name of at most %zu "
                      "characters, got %zu",
                      sizeof v[k].name - 1, strlen(name));
            goto done;
        }
        for (i = 0; i < k; i++)
            if (name_eq(v[i].name, name)) {
                rc = fail(cx, UTIL_EFIELD, p,
                          "device type '%s' is defined twice", name);
                goto done;
            }
        if (!cJSON_IsObject(e)) {
            rc = fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                      util_json_type(e));
            goto done;
        }
        if ((rc = num_field(cx, e, p, "memory_gib", F_REQ | F_POS, 0,
                            &gib)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "tflops_fp16", F_REQ | F_POS, 0,
                            &f16)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "tflops_bf16", F_NONNEG, 0, &bf16)) !=
                UTIL_OK ||
            (rc = num_field(cx, e, p, "mem_bw_gbs", F_REQ | F_POS, 0, &bw)) !=
                UTIL_OK)
            goto done;
        snprintf(v[k].name, sizeof v[k].name, "%s", name);
        v[k].mem_bytes = gib * 1073741824.0;
        v[k].flops_fp16 = f16 * 1e12;
        v[k].flops_bf16 = bf16 * 1e12;
        v[k].mem_bw = bw * 1e9;
        k++;
    }
    *out = v;
    *nout = k;
    v = NULL;
done:
    free(v);
    return rc;
}

/* Index in c->types of a device type name (added on first use), -1 when
 * neither device_types nor the catalogue knows it.  c->types has room. */
static int type_index(fmt_cluster *c, const fmt_device_type *custom,
                      int ncustom, const char *name)
{
    const fmt_device_type *src = NULL;
    int i;

    for (i = 0; i < ncustom && src == NULL; i++)
        if (name_eq(custom[i].name, name))
            src = &custom[i];
    if (src == NULL)
        src = fmt_catalog_find(name);
    if (src == NULL)
        return -1;
    for (i = 0; i < c->ntypes; i++)
        if (name_eq(c->types[i].name, src->name))
            return i;
    c->types[c->ntypes] = *src;
    return c->ntypes++;
}

static void known_types(const fmt_device_type *custom, int ncustom,
                        char *buf, size_t n)
{
    size_t used = 0, i, cnt = fmt_catalog_count();
    int j, dup;

    buf[0] = '\0';
    for (j = 0; j < ncustom; j++)
        list_add(buf, n, &used, custom[j].name);
    for (i = 0; i < cnt; i++) {
        const fmt_device_type *t = fmt_catalog_get(i);
        if (t == NULL)
            continue;
        for (dup = 0, j = 0; j < ncustom; j++)
            dup |= name_eq(custom[j].name, t->name);
        if (!dup)
            list_add(buf, n, &used, t->name);
    }
}

/* "nodes": expanded by "count"; *refs gets the nodes sorted by name. */
static int parse_nodes(const ctx *cx, const cJSON *root,
                       const fmt_device_type *custom, int ncustom,
                       fmt_cluster *c, node_ref **refs)
{
    const cJSON *jn = NULL, *e;
    char p[PATH_N], fp[PATH_N], list[200];
    node_ref *r = NULL, *grown_r;
    fmt_node nd, *grown;
    const char *dev;
    double intra_gbps = 0.0, nic_gbps = 0.0, intra_us, nic_us; /* for -O2 */
    long long gpus_total = 0;
    int rc, entry = 0, cap = 0, count, k, t, nent;

    *refs = NULL;
    rc = sub_field(cx, root, "", "nodes", F_REQ | F_NONEMPTY, K_ARR, &jn);
    if (rc != UTIL_OK)
        return rc;
    nent = cJSON_GetArraySize(jn);
    c->types = calloc((size_t)nent, sizeof *c->types);
    if (c->types == NULL)
        return fail(cx, UTIL_ENOMEM, "nodes", "out of memory");
    cJSON_ArrayForEach(e, jn)
    {
        util_json_index(p, sizeof p, "nodes", entry);
        if (!cJSON_IsObject(e)) {
            rc = fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                      util_json_type(e));
            goto done;
        }
        memset(&nd, 0, sizeof nd);
        if ((rc = str_field(cx, e, p, "name", F_REQ | F_NONEMPTY, "",
                            nd.name, sizeof nd.name)) != UTIL_OK ||
            (rc = str_ref(cx, e, p, "device", F_REQ | F_NONEMPTY, &dev)) !=
                UTIL_OK ||
            (rc = int_field(cx, e, p, "gpus", F_REQ | F_POS, 0, &nd.gpus)) !=
                UTIL_OK ||
            (rc = num_field(cx, e, p, "intra_gbps", F_REQ | F_POS, 0,
                            &intra_gbps)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "nic_gbps", F_REQ | F_POS, 0,
                            &nic_gbps)) != UTIL_OK ||
            (rc = str_field(cx, e, p, "region", 0, "", nd.region,
                            sizeof nd.region)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "intra_latency_us", F_NONNEG, 5,
                            &intra_us)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "nic_latency_us", F_NONNEG, 50,
                            &nic_us)) != UTIL_OK ||
            (rc = int_field(cx, e, p, "count", F_POS, 1, &count)) != UTIL_OK)
            goto done;
        t = type_index(c, custom, ncustom, dev);
        if (t < 0) {
            known_types(custom, ncustom, list, sizeof list);
            util_json_key(fp, sizeof fp, p, "device");
            rc = fail(cx, UTIL_EFIELD, fp,
                      "unknown device type '%s' (known: %s)", dev, list);
            goto done;
        }
        nd.type = t;
        nd.intra_bw = intra_gbps * 1e9 / 8;
        nd.nic_bw = nic_gbps * 1e9 / 8;
        nd.intra_lat = intra_us / 1e6;
        nd.nic_lat = nic_us / 1e6;
        gpus_total += (long long)nd.gpus * count;
        if (gpus_total > MAX_DEVICES) {
            util_json_key(fp, sizeof fp, p, count > 1 ? "count" : "gpus");
            rc = fail(cx, UTIL_EFIELD, fp,
                      "expected at most %d GPUs in the cluster, got %lld "
                      "so far",
                      MAX_DEVICES, gpus_total);
            goto done;
        }
        if (c->nnodes + count > cap) {
            int ncap = cap ? cap : 16;
            while (ncap < c->nnodes + count)
                ncap *= 2;
            grown = realloc(c->nodes, (size_t)ncap * sizeof *grown);
            if (grown != NULL)
                c->nodes = grown;
            grown_r = realloc(r, (size_t)ncap * sizeof *grown_r);
            if (grown_r != NULL)
                r = grown_r;
            if (grown == NULL || grown_r == NULL) {
                rc = fail(cx, UTIL_ENOMEM, p, "out of memory");
                goto done;
            }
            cap = ncap;
        }
        for (k = 0; k < count; k++) {
            fmt_node *dst = &c->nodes[c->nnodes];
            *dst = nd;
            if (count > 1 &&
                snprintf(dst->name, sizeof dst->name, "%s-%d", nd.name, k) >=
                    (int)sizeof dst->name) {
                util_json_key(fp, sizeof fp, p, "name");
                rc = fail(cx, UTIL_EFIELD, fp,
                          "expected a name short enough for its '-%d' "
                          "suffix (at most %zu characters in all)",
                          k, sizeof dst->name - 1);
                goto done;
            }
            r[c->nnodes].entry = entry;
            r[c->nnodes].node = c->nnodes;
            c->nnodes++;
        }
        entry++;
    }
    for (k = 0; k < c->nnodes; k++)
        r[k].name = c->nodes[k].name;
    qsort(r, (size_t)c->nnodes, sizeof *r, ref_cmp);
    for (k = 1; k < c->nnodes; k++)
        if (strcmp(r[k - 1].name, r[k].name) == 0) {
            util_json_index(p, sizeof p, "nodes", r[k].entry);
            util_json_key(fp, sizeof fp, p, "name");
            rc = fail(cx, UTIL_EFIELD, fp,
                      "duplicate node name '%s' (also used by nodes[%d])",
                      r[k].name, r[k - 1].entry);
            goto done;
        }
    *refs = r;
    r = NULL;
done:
    free(r);
    return rc;
}

/* "NODE" or "NODE:GPU" of a link. */
static int parse_endpoint(const ctx *cx, const fmt_cluster *c,
                          const node_ref *refs, const cJSON *obj,
                          const char *parent, const char *key, int *node,
                          int *gpu)
{
    char p[PATH_N], name[64];
    const char *s, *colon;
    const node_ref *hit;
    node_ref probe;
    long idx = 0;
    size_t len;
    int rc;

    util_json_key(p, sizeof p, parent, key);
    rc = str_ref(cx, obj, parent, key, F_REQ, &s);
    if (rc != UTIL_OK)
        return rc;
    probe.name = s;
    hit = bsearch(&probe, refs, (size_t)c->nnodes, sizeof *refs, ref_name_cmp);
    if (hit != NULL) {
        *node = hit->node;
        *gpu = -1;
        return UTIL_OK;
    }
    colon = strrchr(s, ':');
    if (colon == NULL)
        return fail(cx, UTIL_EFIELD, p,
                    "unknown node '%s' (expected 'NODE' or 'NODE:GPU')", s);
    len = (size_t)(colon - s);
    if (len >= sizeof name)
        return fail(cx, UTIL_EFIELD, p, "unknown node '%.*s'", (int)len, s);
    memcpy(name, s, len);
    name[len] = '\0';
    probe.name = name;
    hit = bsearch(&probe, refs, (size_t)c->nnodes, sizeof *refs, ref_name_cmp);
    if (hit == NULL)
        return fail(cx, UTIL_EFIELD, p,
                    "unknown node '%s' (expected 'NODE' or 'NODE:GPU')", name);
    if (colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        strlen(colon + 1) > 9)
        return fail(cx, UTIL_EFIELD, p,
                    "expected a GPU index after ':', got '%s'", colon + 1);
    idx = strtol(colon + 1, NULL, 10);
    if (idx >= c->nodes[hit->node].gpus)
        return fail(cx, UTIL_EFIELD, p,
                    "GPU index %ld out of range for node '%s' (valid: "
                    "0..%d)",
                    idx, name, c->nodes[hit->node].gpus - 1);
    *node = hit->node;
    *gpu = (int)idx;
    return UTIL_OK;
}

static int parse_links(const ctx *cx, const cJSON *root,
                       const node_ref *refs, fmt_cluster *c)
{
    const cJSON *jl = NULL, *e;
    char p[PATH_N];
    fmt_link *l;
    double gbps = 0, lat_ms = 0;
    int rc, i = 0, cnt;

    rc = sub_field(cx, root, "", "links", 0, K_ARR, &jl);
    if (rc != UTIL_OK || jl == NULL)
        return rc;
    cnt = cJSON_GetArraySize(jl);
    if (cnt == 0)
        return UTIL_OK;
    c->links = calloc((size_t)cnt, sizeof *c->links);
    if (c->links == NULL)
        return fail(cx, UTIL_ENOMEM, "links", "out of memory");
    cJSON_ArrayForEach(e, jl)
    {
        util_json_index(p, sizeof p, "links", i);
        l = &c->links[i];
        if (!cJSON_IsObject(e))
            return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(e));
        if ((rc = parse_endpoint(cx, c, refs, e, p, "a", &l->node_a,
                                 &l->gpu_a)) != UTIL_OK ||
            (rc = parse_endpoint(cx, c, refs, e, p, "b", &l->node_b,
                                 &l->gpu_b)) != UTIL_OK ||
            (rc = num_field(cx, e, p, "gbps", F_REQ | F_POS, 0, &gbps)) !=
                UTIL_OK ||
            (rc = num_field(cx, e, p, "latency_ms", F_NONNEG, -1, &lat_ms)) !=
                UTIL_OK)
            return rc;
        if (l->node_a == l->node_b && l->gpu_a >= 0 && l->gpu_a == l->gpu_b)
            return fail(cx, UTIL_EFIELD, p,
                        "expected a link between two different GPUs, got "
                        "GPU %d of node '%s' at both ends",
                        l->gpu_a, c->nodes[l->node_a].name);
        l->bw = gbps * 1e9 / 8;
        if (lat_ms >= 0) {
            l->lat = lat_ms / 1e3;
        } else if (l->node_a == l->node_b) {
            l->lat = c->nodes[l->node_a].intra_lat;
        } else {
            double la = c->nodes[l->node_a].nic_lat;
            double lb = c->nodes[l->node_b].nic_lat;
            l->lat = la > lb ? la : lb;
        }
        c->nlinks = ++i;
    }
    return UTIL_OK;
}

int fmt_parse_cluster(const char *text, const char *file, fmt_cluster *out,
                       util_error *err)
{
    ctx cx;
    cJSON *root = NULL;
    fmt_cluster c;
    fmt_device_type *custom = NULL;
    node_ref *refs = NULL;
    int rc, i, ncustom = 0, total = 0;
    long long sum = 0;
    const cJSON *jt;

    cx.file = file ? file : "";
    cx.err = err;
    memset(&c, 0, sizeof c);
    if (out == NULL)
        return fail(&cx, UTIL_EINVAL, "", "no output cluster given");
    memset(out, 0, sizeof *out);
    if ((rc = parse_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = str_field(&cx, root, "", "name", 0, "", c.name,
                        sizeof c.name)) != UTIL_OK ||
        (rc = parse_types(&cx, root, &custom, &ncustom)) != UTIL_OK ||
        (rc = parse_nodes(&cx, root, custom, ncustom, &c, &refs)) != UTIL_OK)
        goto done;
    jt = field(root, "total_gpus");
    if (jt != NULL) {
        for (i = 0; i < c.nnodes; i++)
            sum += c.nodes[i].gpus;
        if ((rc = int_value(&cx, jt, "total_gpus", F_POS, &total)) !=
            UTIL_OK)
            goto done;
        if ((long long)total != sum) {
            rc = fail(&cx, UTIL_EFIELD, "total_gpus",
                      "total_gpus is %d but the nodes add up to %lld GPU%s",
                      total, sum, sum == 1 ? "" : "s");
            goto done;
        }
    }
    if ((rc = parse_links(&cx, root, refs, &c)) != UTIL_OK)
        goto done;
    if (fmt_cluster_index(&c) != UTIL_OK) {
        rc = fail(&cx, UTIL_ENOMEM, "", "out of memory");
        goto done;
    }
    *out = c;
    memset(&c, 0, sizeof c);
done:
    fmt_cluster_free(&c);
    free(custom);
    free(refs);
    cJSON_Delete(root);
    return rc;
}

int fmt_load_cluster(const char *path, fmt_cluster *out, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        memset(out, 0, sizeof *out);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = fmt_parse_cluster(text, path, out, err);
    free(text);
    return rc;
}

/* ---- model ----------------------------------------------------------- */

static void known_kinds(char *buf, size_t n)
{
    size_t used = 0;
    int k;

    buf[0] = '\0';
    for (k = 0; k < 64 && fmt_kind_name(k) != NULL; k++)
        list_add(buf, n, &used, fmt_kind_name(k));
    list_add(buf, n, &used, "embed2h");
    list_add(buf, n, &used, "embed2v");
}

static int kind_value(const ctx *cx, const char *p, const char *name,
                      int *kind)
{
    char list[200];

    *kind = fmt_kind_from_name(name);
    if (*kind >= 0)
        return UTIL_OK;
    known_kinds(list, sizeof list);
    return fail(cx, UTIL_EFIELD, p, "unknown layer kind '%s' (known: %s)",
                name, list);
}

static int parse_training(const ctx *cx, const cJSON *root, fmt_model *m)
{
    const cJSON *tr = NULL;
    const char *prec = NULL;
    int rc;

    m->dtype_bytes = 2;
    m->bf16 = 0;
    rc = sub_field(cx, root, "", "training", 0, K_OBJ, &tr);
    if (rc != UTIL_OK || tr == NULL)
        return rc;
    if ((rc = int_field(cx, tr, "training", "global_batch", F_POS, 0,
                        &m->global_batch)) != UTIL_OK ||
        (rc = str_ref(cx, tr, "training", "precision", 0, &prec)) != UTIL_OK)
        return rc;
    if (prec == NULL || strcmp(prec, "fp16") == 0)
        return UTIL_OK;
    if (strcmp(prec, "bf16") == 0) {
        m->bf16 = 1;
        return UTIL_OK;
    }
    if (strcmp(prec, "fp32") == 0) {
        m->dtype_bytes = 4;
        return UTIL_OK;
    }
    return fail(cx, UTIL_EFIELD, "training.precision",
                "expected 'fp16', 'bf16' or 'fp32', got '%s'", prec);
}

static int parse_transformer(const ctx *cx, const cJSON *tf, fmt_model *m)
{
    const char *P = "transformer";
    fmt_transformer_spec spec;
    const cJSON *tied;
    char name[sizeof m->name];
    int rc, gb = m->global_batch, db = m->dtype_bytes, bf = m->bf16;

    memset(&spec, 0, sizeof spec);
    if (!cJSON_IsObject(tf))
        return fail(cx, UTIL_EFIELD, P, "expected an object, got %s",
                    util_json_type(tf));
    if ((rc = str_field(cx, tf, P, "family", F_NONEMPTY, "gpt2", spec.family,
                        sizeof spec.family)) != UTIL_OK ||
        (rc = int_field(cx, tf, P, "layers", F_REQ | F_POS, 0,
                        &spec.blocks)) != UTIL_OK ||
        (rc = int_field(cx, tf, P, "hidden", F_REQ | F_POS, 0,
                        &spec.hidden)) != UTIL_OK ||
        (rc = int_field(cx, tf, P, "heads", F_REQ | F_POS, 0, &spec.heads)) !=
            UTIL_OK ||
        (rc = int_field(cx, tf, P, "seq", F_REQ | F_POS, 0, &spec.seq)) !=
            UTIL_OK ||
        (rc = int_field(cx, tf, P, "vocab", F_REQ | F_POS, 0, &spec.vocab)) !=
            UTIL_OK ||
        (rc = int_field(cx, tf, P, "ffn", F_NONNEG, 0, &spec.ffn)) != UTIL_OK)
        return rc;
    tied = field(tf, "tied_embeddings");
    if (tied == NULL)
        spec.tied_embeddings = -1;
    else if (cJSON_IsBool(tied))
        spec.tied_embeddings = cJSON_IsTrue(tied) ? 1 : 0;
    else
        return fail(cx, UTIL_EFIELD, "transformer.tied_embeddings",
                    "expected a boolean (true or false), got %s",
                    util_json_type(tied));
    if (spec.blocks > MAX_LAYERS)
        return fail(cx, UTIL_EFIELD, "transformer.layers",
                    "expected at most %d layers, got %d", MAX_LAYERS,
                    spec.blocks);
    memcpy(name, m->name, sizeof name);
    memcpy(spec.name, m->name, sizeof spec.name);
    rc = fmt_model_from_transformer(&spec, m, cx->err);
    if (rc != UTIL_OK) {
        prefix_error(cx, P);
        fmt_model_free(m);
        return rc;
    }
    memcpy(m->name, name, sizeof m->name);
    if (gb > 0)
        m->global_batch = gb;
    m->dtype_bytes = db;
    m->bf16 = bf;
    return UTIL_OK;
}

/* One entry of "layers"; optional fields absent are -1 for defaults. */
static int parse_layer(const ctx *cx, const cJSON *e, const char *p,
                       fmt_layer *l, int *repeat)
{
    const char *kind;
    char fp[PATH_N];
    int rc;

    memset(l, 0, sizeof *l);
    if (!cJSON_IsObject(e))
        return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                    util_json_type(e));
    if ((rc = str_field(cx, e, p, "name", F_REQ | F_NONEMPTY, "", l->name,
                        sizeof l->name)) != UTIL_OK ||
        (rc = str_ref(cx, e, p, "kind", F_REQ, &kind)) != UTIL_OK)
        return rc;
    util_json_key(fp, sizeof fp, p, "kind");
    if ((rc = kind_value(cx, fp, kind, &l->kind)) != UTIL_OK)
        return rc;
    if ((rc = num_field(cx, e, p, "params", F_REQ | F_NONNEG, 0,
                        &l->params)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "fwd_flops", F_REQ | F_NONNEG, 0,
                        &l->fwd_flops)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "out_bytes", F_REQ | F_NONNEG, 0,
                        &l->out_bytes)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "act_bytes", F_REQ | F_NONNEG, 0,
                        &l->act_bytes)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "tp_flops_frac", F_FRAC, -1,
                        &l->tp_flops_frac)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "traffic_bytes", F_NONNEG, -1,
                        &l->traffic)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "traffic_rep_bytes", F_NONNEG, -1,
                        &l->traffic_rep)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "act_rep_bytes", F_NONNEG, -1,
                        &l->act_rep_bytes)) != UTIL_OK ||
        (rc = num_field(cx, e, p, "tp_comm_bytes", F_NONNEG, -1,
                        &l->tp_comm_bytes)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "tp_collectives", F_NONNEG, -1,
                        &l->tp_collectives)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "kernels", F_NONNEG, -1, &l->kernels)) !=
            UTIL_OK ||
        (rc = int_field(cx, e, p, "tied_group", F_NONNEG, -1,
                        &l->tied_group)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "repeat", F_POS, 1, repeat)) != UTIL_OK)
        return rc;
    return UTIL_OK;
}

static int parse_layers(const ctx *cx, const cJSON *root, const cJSON *ly,
                        fmt_model *m)
{
    const cJSON *sh = NULL, *e;
    char p[PATH_N], fp[PATH_N];
    fmt_layer l, *grown;
    int rc, i = 0, k, repeat, cap = 0;

    if ((rc = sub_field(cx, root, "", "shape", 0, K_OBJ, &sh)) != UTIL_OK)
        return rc;
    if (sh != NULL &&
        ((rc = int_field(cx, sh, "shape", "hidden", F_POS, 0, &m->hidden)) !=
             UTIL_OK ||
         (rc = int_field(cx, sh, "shape", "heads", F_POS, 0, &m->heads)) !=
             UTIL_OK ||
         (rc = int_field(cx, sh, "shape", "seq", F_POS, 0, &m->seq)) !=
             UTIL_OK ||
         (rc = int_field(cx, sh, "shape", "vocab", F_POS, 0, &m->vocab)) !=
             UTIL_OK ||
         (rc = int_field(cx, sh, "shape", "ffn", F_NONNEG, 0, &m->ffn)) !=
             UTIL_OK))
        return rc;
    if ((rc = sub_field(cx, root, "", "layers", F_REQ | F_NONEMPTY, K_ARR,
                        &ly)) != UTIL_OK)
        return rc;
    cJSON_ArrayForEach(e, ly)
    {
        util_json_index(p, sizeof p, "layers", i);
        if ((rc = parse_layer(cx, e, p, &l, &repeat)) != UTIL_OK)
            return rc;
        if (repeat > MAX_LAYERS - m->nlayers) {
            util_json_key(fp, sizeof fp, p, "repeat");
            return fail(cx, UTIL_EFIELD, fp,
                        "expected at most %d layers in the model, got more",
                        MAX_LAYERS);
        }
        if (m->nlayers + repeat > cap) {
            int ncap = cap ? cap : 32;
            while (ncap < m->nlayers + repeat)
                ncap *= 2;
            grown = realloc(m->layers, (size_t)ncap * sizeof *grown);
            if (grown == NULL)
                return fail(cx, UTIL_ENOMEM, p, "out of memory");
            m->layers = grown;
            cap = ncap;
        }
        fmt_layer_defaults(m, &l);
        for (k = 0; k < repeat; k++) {
            fmt_layer *dst = &m->layers[m->nlayers];
            *dst = l;
            if (repeat > 1 &&
                snprintf(dst->name, sizeof dst->name, "%s-%d", l.name, k) >=
                    (int)sizeof dst->name) {
                util_json_key(fp, sizeof fp, p, "name");
                return fail(cx, UTIL_EFIELD, fp,
                            "expected a name short enough for its '-%d' "
                            "suffix (at most %zu characters in all)",
                            k, sizeof dst->name - 1);
            }
            m->nlayers++;
            if (dst->kind == FMT_KIND_TRANSFORMER)
                m->blocks++;
        }
        i++;
    }
    return UTIL_OK;
}

int fmt_parse_model(const char *text, const char *file, fmt_model *out,
                     util_error *err)
{
    ctx cx;
    cJSON *root = NULL;
    fmt_model m;
    const cJSON *tf, *ly;
    int rc;

    cx.file = file ? file : "";
    cx.err = err;
    memset(&m, 0, sizeof m);
    if (out == NULL)
        return fail(&cx, UTIL_EINVAL, "", "no output model given");
    memset(out, 0, sizeof *out);
    if ((rc = parse_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = str_field(&cx, root, "", "name", F_REQ | F_NONEMPTY, "", m.name,
                        sizeof m.name)) != UTIL_OK ||
        (rc = parse_training(&cx, root, &m)) != UTIL_OK)
        goto done;
    tf = field(root, "transformer");
    ly = field(root, "layers");
    if (tf != NULL && ly != NULL) {
        rc = fail(&cx, UTIL_EFIELD, "",
                  "expected exactly one of 'transformer' and 'layers', "
                  "found both");
        goto done;
    }
    if (tf == NULL && ly == NULL) {
        rc = fail(&cx, UTIL_EFIELD, "",
                  "missing required field: expected exactly one of "
                  "'transformer' and 'layers', found neither");
        goto done;
    }
    rc = tf != NULL ? parse_transformer(&cx, tf, &m)
                    : parse_layers(&cx, root, ly, &m);
    if (rc != UTIL_OK)
        goto done;
    *out = m;
    memset(&m, 0, sizeof m);
done:
    fmt_model_free(&m);
    cJSON_Delete(root);
    return rc;
}

int fmt_load_model(const char *path, fmt_model *out, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        memset(out, 0, sizeof *out);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = fmt_parse_model(text, path, out, err);
    free(text);
    return rc;
}

/* ---- profile --------------------------------------------------------- */

/* An array of n per-layer times: numbers >= 0 divided by div, null = -1. */
static int parse_times(const ctx *cx, const cJSON *arr, const char *p, int n,
                       double div, double **out)
{
    const cJSON *v;
    char ep[PATH_N];
    double *t = NULL, d = 0.0; /* d initialised for -O2 */
    int rc = UTIL_OK, i = 0, cnt;

    *out = NULL;
    if (!cJSON_IsArray(arr))
        return fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                    util_json_type(arr));
    cnt = cJSON_GetArraySize(arr);
    if (cnt != n)
        return fail(cx, UTIL_EFIELD, p,
                    "expected %d entries (one per model layer), got %d", n,
                    cnt);
    t = malloc((size_t)n * sizeof *t);
    if (t == NULL)
        return fail(cx, UTIL_ENOMEM, p, "out of memory");
    cJSON_ArrayForEach(v, arr)
    {
        util_json_index(ep, sizeof ep, p, i);
        if (cJSON_IsNull(v)) {
            t[i++] = -1;
            continue;
        }
        if ((rc = num_value(cx, v, ep, F_NONNEG, &d)) != UTIL_OK)
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
static int check_dup(const ctx *cx, const fmt_profile *pr, int k,
                     const char *p)
{
    const fmt_profile_entry *x = &pr->entries[k];
    int i;

    for (i = 0; i < k; i++) {
        const fmt_profile_entry *y = &pr->entries[i];
        if (y->tp == x->tp && y->mbs == x->mbs &&
            name_eq(y->device, x->device))
            return fail(cx, UTIL_EFIELD, p,
                        "duplicate entry for device '%s', tp %d, mbs %d "
                        "(entry %d has the same)",
                        x->device, x->tp, x->mbs, i);
    }
    return UTIL_OK;
}

static int parse_by_kind(const ctx *cx, const cJSON *bk, const char *p,
                         const fmt_model *m, fmt_profile_entry *en)
{
    const cJSON *e;
    char kp[PATH_N];
    int seen[64];
    double f = 0, b = 0;
    int rc, kind, i, n = m->nlayers;

    memset(seen, 0, sizeof seen);
    if (!cJSON_IsObject(bk))
        return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                    util_json_type(bk));
    en->fwd = malloc((size_t)n * sizeof *en->fwd);
    en->bwd = malloc((size_t)n * sizeof *en->bwd);
    if (en->fwd == NULL || en->bwd == NULL)
        return fail(cx, UTIL_ENOMEM, p, "out of memory");
    for (i = 0; i < n; i++)
        en->fwd[i] = en->bwd[i] = -1;
    cJSON_ArrayForEach(e, bk)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(kp, sizeof kp, p, name);
        if ((rc = kind_value(cx, kp, name, &kind)) != UTIL_OK)
            return rc;
        if (kind >= 64 || seen[kind])
            return fail(cx, UTIL_EFIELD, kp,
                        "layer kind '%s' is given twice", name);
        seen[kind] = 1;
        if (!cJSON_IsObject(e))
            return fail(cx, UTIL_EFIELD, kp, "expected an object, got %s",
                        util_json_type(e));
        if ((rc = num_field(cx, e, kp, "fwd_ms", F_REQ | F_NONNEG, 0, &f)) !=
                UTIL_OK ||
            (rc = num_field(cx, e, kp, "bwd_ms", F_NONNEG, -1, &b)) !=
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

static int parse_entry(const ctx *cx, const cJSON *e, const char *p,
                       const fmt_model *m, fmt_profile_entry *en)
{
    const cJSON *fw, *bw, *bk;
    char fp[PATH_N];
    int rc;

    if (!cJSON_IsObject(e))
        return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                    util_json_type(e));
    if ((rc = str_field(cx, e, p, "device", F_REQ | F_NONEMPTY, "",
                        en->device, sizeof en->device)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "tp", F_REQ | F_POS, 0, &en->tp)) !=
            UTIL_OK ||
        (rc = int_field(cx, e, p, "mbs", F_REQ | F_POS, 0, &en->mbs)) !=
            UTIL_OK)
        return rc;
    fw = field(e, "fwd_ms");
    bw = field(e, "bwd_ms");
    bk = field(e, "by_kind");
    if (fw != NULL && bk != NULL)
        return fail(cx, UTIL_EFIELD, p,
                    "expected either 'fwd_ms' or 'by_kind', found both");
    if (bk != NULL) {
        util_json_key(fp, sizeof fp, p, "by_kind");
        if (bw != NULL)
            return fail(cx, UTIL_EFIELD, fp,
                        "expected 'bwd_ms' inside 'by_kind', found it beside");
        return parse_by_kind(cx, bk, fp, m, en);
    }
    util_json_key(fp, sizeof fp, p, "fwd_ms");
    if (fw == NULL)
        return fail(cx, UTIL_EFIELD, fp,
                    "missing required field 'fwd_ms' (or 'by_kind')");
    if ((rc = parse_times(cx, fw, fp, m->nlayers, 1e3, &en->fwd)) !=
        UTIL_OK)
        return rc;
    if (bw == NULL || cJSON_IsNull(bw))
        return UTIL_OK;
    util_json_key(fp, sizeof fp, p, "bwd_ms");
    return parse_times(cx, bw, fp, m->nlayers, 1e3, &en->bwd);
}

/* "calibration" of a calibrated profile (issue 3, docs/calibration.md):
 * {"devices": {TYPE: {"compute_scale", "mbs_half"}}, "links": {CLASS:
 * fraction}, "msg_latency_us", "tp_fixed_ms", "iter_overhead_ms"}. */
static int parse_calibration(const ctx *cx, const cJSON *jc,
                             fmt_calibration **out)
{
    const cJSON *jd = NULL, *jl = NULL, *e;
    fmt_calibration *cal = calloc(1, sizeof *cal);
    char p[PATH_N], ep[PATH_N];
    double v;
    int rc, t, cls;

    *out = NULL;
    if (cal == NULL)
        return fail(cx, UTIL_ENOMEM, "calibration", "out of memory");
    fmt_calibration_init(cal);
    if ((rc = sub_field(cx, jc, "calibration", "devices", 0, K_OBJ, &jd)) != UTIL_OK ||
        (rc = sub_field(cx, jc, "calibration", "links", 0, K_OBJ, &jl)) != UTIL_OK)
        goto done;
    cJSON_ArrayForEach(e, jd)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(p, sizeof p, "calibration.devices", name);
        if (!cJSON_IsObject(e)) {
            rc = fail(cx, UTIL_EFIELD, p, "expected an object, got %s", util_json_type(e));
            goto done;
        }
        if (fmt_calibration_type(cal, name) >= 0) {
            rc = fail(cx, UTIL_EFIELD, p, "device type '%s' is given twice", name);
            goto done;
        }
        t = fmt_calibration_add_type(cal, name);
        if (t < 0) {
            rc = fail(cx, UTIL_EFIELD, p, "expected at most %d device types of at "
                      "most 31 characters", FMT_CALIB_MAX_TYPES);
            goto done;
        }
        if ((rc = num_field(cx, e, p, "compute_scale", F_POS, 1.0,
                            &cal->compute_scale[t])) != UTIL_OK ||
            (rc = num_field(cx, e, p, "mbs_half", F_NONNEG, 0.0,
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
            rc = fail(cx, UTIL_EFIELD, p, "unknown link class '%s' (known: "
                      "intra-node, inter-node, cross-region)", name);
            goto done;
        }
        if ((rc = num_value(cx, e, p, F_POS | F_FRAC, &v)) != UTIL_OK)
            goto done;
        cal->bw_frac[cls] = v;
    }
    util_json_key(ep, sizeof ep, "", "calibration");
    if ((rc = num_field(cx, jc, ep, "msg_latency_us", F_NONNEG, 0.0, &v)) != UTIL_OK)
        goto done;
    cal->msg_latency = v * 1e-6;
    if ((rc = num_field(cx, jc, ep, "tp_fixed_ms", F_NONNEG, 0.0, &v)) != UTIL_OK)
        goto done;
    cal->tp_fixed = v * 1e-3;
    if ((rc = num_field(cx, jc, ep, "iter_overhead_ms", F_NONNEG, 0.0, &v)) != UTIL_OK)
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
    ctx cx;
    cJSON *root = NULL;
    fmt_profile pr;
    const cJSON *je = NULL, *e;
    const char *fmt = NULL, *model = NULL;
    char p[PATH_N];
    int rc, cnt, i = 0;

    cx.file = file ? file : "";
    cx.err = err;
    memset(&pr, 0, sizeof pr);
    if (out == NULL || m == NULL || m->nlayers <= 0 || m->layers == NULL)
        return fail(&cx, UTIL_EINVAL, "",
                    "a profile needs a model with layers");
    memset(out, 0, sizeof *out);
    pr.nlayers = m->nlayers;
    if ((rc = parse_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = str_ref(&cx, root, "", "format", 0, &fmt)) != UTIL_OK ||
        (rc = str_ref(&cx, root, "", "model", 0, &model)) != UTIL_OK ||
        (rc = sub_field(&cx, root, "", "entries", F_REQ, K_ARR, &je)) !=
            UTIL_OK)
        goto done;
    if (fmt != NULL && strcmp(fmt, FMT_PROFILE_SCHEMA) != 0) {
        rc = fail(&cx, UTIL_EFIELD, "format", "expected '%s', got '%s'",
                  FMT_PROFILE_SCHEMA, fmt);
        goto done;
    }
    cnt = cJSON_GetArraySize(je);
    if (cnt > 0) {
        pr.entries = calloc((size_t)cnt, sizeof *pr.entries);
        if (pr.entries == NULL) {
            rc = fail(&cx, UTIL_ENOMEM, "entries", "out of memory");
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
    if ((rc = sub_field(&cx, root, "", "calibration", 0, K_OBJ, &je)) != UTIL_OK ||
        (je != NULL && (rc = parse_calibration(&cx, je, &pr.calib)) != UTIL_OK))
        goto done; /* issue 3: a calibrated profile */
    *out = pr;
    memset(&pr, 0, sizeof pr);
done:
    fmt_profile_free(&pr);
    cJSON_Delete(root);
    return rc;
}

int fmt_load_profile(const char *path, const fmt_model *m,
                      fmt_profile *out, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        memset(out, 0, sizeof *out);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = fmt_parse_profile(text, path, m, out, err);
    free(text);
    return rc;
}

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

static int amp_gpu(const ctx *cx, const cJSON *g, const char *gp,
                   const fmt_model *m, fmt_profile *pr)
{
    const cJSON *t;
    char tpath[PATH_N];
    fmt_profile_entry *en;
    int rc, tp;

    if (!cJSON_IsObject(g))
        return fail(cx, UTIL_EFIELD, gp, "expected an object, got %s",
                    util_json_type(g));
    cJSON_ArrayForEach(t, g)
    {
        util_json_key(tpath, sizeof tpath, gp, t->string);
        tp = amp_tp(t->string);
        if (tp <= 0)
            return fail(cx, UTIL_EFIELD, tpath,
                        "expected a key 'tpN' with N > 0, got '%s'",
                        t->string ? t->string : "");
        en = &pr->entries[pr->nentries++];
        if (strlen(g->string) >= sizeof en->device)
            return fail(cx, UTIL_EFIELD, gp,
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
    ctx cx;
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
        return fail(&cx, UTIL_EINVAL, "",
                    "an AMP profile needs a key and a model with layers");
    memset(out, 0, sizeof *out);
    pr.nlayers = m->nlayers;
    if ((rc = util_read_file(path, &text, err)) != UTIL_OK ||
        (rc = parse_doc(&cx, text, &root)) != UTIL_OK)
        goto done;
    jk = field(root, key);
    if (jk == NULL) {
        list[0] = '\0';
        cJSON_ArrayForEach(g, root)
        {
            if (g->string != NULL && strcmp(g->string, "description") != 0)
                list_add(list, sizeof list, &used, g->string);
        }
        rc = fail(&cx, UTIL_ENOTFOUND, key,
                  "model '%s' not found (available: %s)", key, list);
        goto done;
    }
    if (!cJSON_IsObject(jk)) {
        rc = fail(&cx, UTIL_EFIELD, key, "expected an object, got %s",
                  util_json_type(jk));
        goto done;
    }
    cJSON_ArrayForEach(g, jk)
    {
        if (cJSON_IsObject(g))
            cnt += cJSON_GetArraySize(g);
    }
    if (cnt > 0) {
        pr.entries = calloc((size_t)cnt, sizeof *pr.entries);
        if (pr.entries == NULL) {
            rc = fail(&cx, UTIL_ENOMEM, key, "out of memory");
            goto done;
        }
    }
    cJSON_ArrayForEach(g, jk)
    {
        char gp[PATH_N];
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

/* ---- strategies ------------------------------------------------------ */

static int parse_ranks(const ctx *cx, const cJSON *jr, const char *p,
                       const fmt_cluster *c, fmt_strategy *s)
{
    const cJSON *v;
    char ep[PATH_N];
    int *where = NULL;
    int rc = UTIL_OK, i = 0, d, n = s->tp * s->dp * s->pp, cnt;

    if (!cJSON_IsArray(jr))
        return fail(cx, UTIL_EFIELD, p, "expected an array, got %s",
                    util_json_type(jr));
    cnt = cJSON_GetArraySize(jr);
    if (cnt != n)
        return fail(cx, UTIL_EFIELD, p,
                    "expected %d entries (tp * dp * pp), got %d", n, cnt);
    where = malloc((size_t)c->ndevices * sizeof *where);
    if (where == NULL)
        return fail(cx, UTIL_ENOMEM, p, "out of memory");
    for (d = 0; d < c->ndevices; d++)
        where[d] = -1;
    cJSON_ArrayForEach(v, jr)
    {
        util_json_index(ep, sizeof ep, p, i);
        if ((rc = int_value(cx, v, ep, F_NONNEG, &d)) != UTIL_OK)
            goto done;
        if (d >= c->ndevices) {
            rc = fail(cx, UTIL_EFIELD, ep,
                      "expected a device index below %d (the cluster has "
                      "%d GPUs), got %d",
                      c->ndevices, c->ndevices, d);
            goto done;
        }
        if (where[d] >= 0) {
            rc = fail(cx, UTIL_EFIELD, ep,
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

static int parse_strategy(const ctx *cx, const cJSON *e, const char *p,
                          const fmt_cluster *c, const fmt_model *m, int gb,
                          fmt_strategy *s)
{
    const cJSON *jb = NULL, *jr, *v;
    const char *sched = NULL;
    char fp[PATH_N], ep[PATH_N];
    int rc, tp, dp, pp, mbs, i, nb, sch = FMT_SCHED_1F1B;

    memset(s, 0, sizeof *s);
    if (!cJSON_IsObject(e))
        return fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                    util_json_type(e));
    if ((rc = int_field(cx, e, p, "tp", F_REQ | F_POS, 0, &tp)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "dp", F_REQ | F_POS, 0, &dp)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "pp", F_REQ | F_POS, 0, &pp)) != UTIL_OK ||
        (rc = int_field(cx, e, p, "mbs", F_REQ | F_POS, 0, &mbs)) !=
            UTIL_OK ||
        (rc = str_ref(cx, e, p, "schedule", 0, &sched)) != UTIL_OK ||
        (rc = sub_field(cx, e, p, "stage_boundaries", F_REQ, K_ARR, &jb)) !=
            UTIL_OK)
        return rc;
    if ((long long)tp * dp > c->ndevices ||
        (long long)tp * dp * pp != c->ndevices)
        return fail(cx, UTIL_EINVAL, p,
                    "tp * dp * pp = %d * %d * %d = %.0f does not match the "
                    "cluster's %d GPUs",
                    tp, dp, pp, (double)tp * dp * pp, c->ndevices);
    if (sched != NULL) {
        util_json_key(fp, sizeof fp, p, "schedule");
        if (strcmp(sched, "gpipe") == 0)
            sch = FMT_SCHED_GPIPE;
        else if (strcmp(sched, "1f1b") != 0)
            return fail(cx, UTIL_EFIELD, fp,
                        "expected '1f1b' or 'gpipe', got '%s'", sched);
    }
    util_json_key(fp, sizeof fp, p, "stage_boundaries");
    nb = cJSON_GetArraySize(jb);
    if (nb != pp + 1)
        return fail(cx, UTIL_EINVAL, fp,
                    "expected %d entries (pp + 1), got %d", pp + 1, nb);
    if (fmt_strategy_alloc(s, tp, dp, pp) != UTIL_OK)
        return fail(cx, UTIL_ENOMEM, p, "out of memory");
    s->mbs = mbs;
    s->schedule = sch;
    i = 0;
    cJSON_ArrayForEach(v, jb)
    {
        util_json_index(ep, sizeof ep, fp, i);
        if ((rc = int_value(cx, v, ep, 0, &s->bounds[i])) != UTIL_OK)
            goto done;
        i++;
    }
    jr = field(e, "ranks");
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
        prefix_error(cx, p);
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
    ctx cx;
    cJSON *root = NULL;
    const cJSON *js = NULL, *e;
    fmt_strategy *arr = NULL;
    char p[PATH_N];
    int rc, k = 0, cnt, i, gb = global_batch;

    cx.file = file ? file : "";
    cx.err = err;
    if (out != NULL)
        *out = NULL;
    if (n != NULL)
        *n = 0;
    if (out == NULL || n == NULL || c == NULL || m == NULL ||
        c->ndevices <= 0 || m->nlayers <= 0)
        return fail(&cx, UTIL_EINVAL, "",
                    "strategies need a cluster and a model with layers");
    if (gb <= 0)
        gb = m->global_batch;
    if (gb <= 0)
        return fail(&cx, UTIL_EINVAL, "",
                    "no global batch size given (none on the command line "
                    "nor in the model's training.global_batch)");
    if ((rc = parse_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = sub_field(&cx, root, "", "strategies", F_REQ | F_NONEMPTY,
                        K_ARR, &js)) != UTIL_OK)
        goto done;
    cnt = cJSON_GetArraySize(js);
    arr = calloc((size_t)cnt, sizeof *arr);
    if (arr == NULL) {
        rc = fail(&cx, UTIL_ENOMEM, "strategies", "out of memory");
        goto done;
    }
    cJSON_ArrayForEach(e, js)
    {
        util_json_index(p, sizeof p, "strategies", k);
        if ((rc = parse_strategy(&cx, e, p, c, m, gb, &arr[k])) != UTIL_OK)
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

int fmt_load_strategies(const char *path, const fmt_cluster *c,
                         const fmt_model *m, int global_batch,
                         fmt_strategy **out, int *n, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (n != NULL)
        *n = 0;
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = fmt_parse_strategies(text, path, c, m, global_batch, out, n,
                                   err);
    free(text);
    return rc;
}
