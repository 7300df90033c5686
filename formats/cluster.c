/* formats/cluster.c: the cluster struct and the reader of cluster.json
 * (docs/inputs.md); its indexes and the links between devices are in
 * formats/links.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

#define MAX_DEVICES 1048576 /* GPUs in one cluster */

void fmt_cluster_free(fmt_cluster *c)
{
    if (c == NULL)
        return;
    free(c->types);
    free(c->nodes);
    free(c->links);
    free(c->link_order);
    free(c->device_node);
    free(c->price);
    memset(c, 0, sizeof *c);
}

/* ---- cluster.json ---------------------------------------------------- */

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
/* The keys of each object of a cluster file (docs/inputs.md). */
static const char *const root_keys[] = {"name", "device_types", "nodes", "total_gpus",
                                        "links", "prices", NULL};
static const char *const type_keys[] = {"memory_gib", "tflops_fp16", "tflops_bf16",
                                        "mem_bw_gbs", "tflops_fp32", "tflops_tf32",
                                        "price_per_hour", NULL};
static const char *const node_keys[] = {"name", "device", "gpus", "intra_gbps",
                                        "nic_gbps", "region", "intra_latency_us",
                                        "nic_latency_us", "count",
                                        "host_memory_gib", "host_bw_gbps",
                                        "pcie_gbps", NULL};
static const char *const link_keys[] = {"a", "b", "gbps", "latency_ms", NULL};

static int parse_types(const fmt_read_ctx *cx, const cJSON *root,
                       fmt_device_type **out, int *nout)
{
    const cJSON *jt = NULL, *e;
    fmt_device_type *v = NULL;
    char p[FMT_PATH_N];
    double gib = 0, f16 = 0, bf16 = 0, bw = 0, f32 = 0, tf32 = 0;
    int rc, k = 0, i, cnt;

    *out = NULL;
    *nout = 0;
    rc = fmt_sub_field(cx, root, "", "device_types", 0, FMT_K_OBJ, &jt);
    if (rc != UTIL_OK || jt == NULL)
        return rc;
    cnt = cJSON_GetArraySize(jt);
    if (cnt == 0)
        return UTIL_OK;
    if (cnt > FMT_MAX_DEVICE_TYPES)
        return fmt_fail(cx, UTIL_EFIELD, "device_types",
                        "expected at most %d device types, got %d",
                        FMT_MAX_DEVICE_TYPES, cnt);
    v = calloc((size_t)cnt, sizeof *v);
    if (v == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, "device_types", "out of memory");
    cJSON_ArrayForEach(e, jt)
    {
        const char *name = e->string ? e->string : "";

        util_json_key(p, sizeof p, "device_types", name);
        if (name[0] == '\0') {
            rc = fmt_fail(cx, UTIL_EFIELD, p,
                          "expected a non-empty device type name, got ''");
            goto done;
        }
        if (strlen(name) >= sizeof v[k].name) {
            rc = fmt_fail(cx, UTIL_EFIELD, p,
                          "expected a device type name of at most %zu "
                          "characters, got %zu",
                          sizeof v[k].name - 1, strlen(name));
            goto done;
        }
        for (i = 0; i < k; i++)
            if (fmt_name_eq(v[i].name, name)) {
                rc = fmt_fail(cx, UTIL_EFIELD, p,
                              "device type '%s' is defined twice", name);
                goto done;
            }
        if (!cJSON_IsObject(e)) {
            rc = fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                          util_json_type(e));
            goto done;
        }
        if ((rc = fmt_keys(cx, e, p, type_keys)) != UTIL_OK)
            goto done;
        if ((rc = fmt_num_field(cx, e, p, "memory_gib", FMT_F_REQ | FMT_F_POS,
                                0, &gib)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "tflops_fp16", FMT_F_REQ | FMT_F_POS,
                                0, &f16)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "tflops_bf16", FMT_F_NONNEG, 0,
                                &bf16)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "mem_bw_gbs", FMT_F_REQ | FMT_F_POS,
                                0, &bw)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "tflops_fp32", FMT_F_NONNEG, 0,
                                &f32)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "tflops_tf32", FMT_F_NONNEG, 0,
                                &tf32)) != UTIL_OK)
            goto done;
        snprintf(v[k].name, sizeof v[k].name, "%s", name);
        v[k].mem_bytes = gib * 1073741824.0;
        v[k].flops_fp16 = f16 * 1e12;
        v[k].flops_bf16 = bf16 * 1e12;
        v[k].mem_bw = bw * 1e9;
        v[k].flops_fp32 = f32 * 1e12;
        v[k].flops_tf32 = tf32 * 1e12;
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
        if (fmt_name_eq(custom[i].name, name))
            src = &custom[i];
    if (src == NULL)
        src = fmt_catalog_find(name);
    if (src == NULL)
        return -1;
    for (i = 0; i < c->ntypes; i++)
        if (fmt_name_eq(c->types[i].name, src->name))
            return i;
    c->types[c->ntypes] = *src;
    if (src->flops_fp32 <= 0.0 && src->flops_tf32 <= 0.0) {
        /* an entry that states neither fp32 figure: the catalogue's for
         * the part of that name and memory (within 10%; another memory
         * is another part: a "2080" with 11 GB is a 2080 Ti), when it
         * knows one */
        const fmt_device_type *cat = fmt_catalog_part(name, src->mem_bytes);
        if (cat != NULL && cat != src) {
            c->types[c->ntypes].flops_fp32 = cat->flops_fp32;
            c->types[c->ntypes].flops_tf32 = cat->flops_tf32;
        }
    }
    return c->ntypes++;
}

static void known_types(const fmt_device_type *custom, int ncustom,
                        char *buf, size_t n)
{
    size_t used = 0, i, cnt = fmt_catalog_count();
    int j, dup;

    buf[0] = '\0';
    for (j = 0; j < ncustom; j++)
        fmt_list_add(buf, n, &used, custom[j].name);
    for (i = 0; i < cnt; i++) {
        const fmt_device_type *t = fmt_catalog_get(i);
        if (t == NULL)
            continue;
        for (dup = 0, j = 0; j < ncustom; j++)
            dup |= fmt_name_eq(custom[j].name, t->name);
        if (!dup)
            fmt_list_add(buf, n, &used, t->name);
    }
}

/* "nodes": expanded by "count"; *refs gets the nodes sorted by name. */
/* A node's optional host side (docs/inputs.md): host memory in GiB, host
 * DRAM and per-GPU PCIe bandwidth in Gbit/s, each > 0 when given (within
 * the limits of formats/json_read.c), 0 when absent. */
static int host_fields(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                       double *gib, double *host_gbps, double *pcie_gbps)
{
    int rc;

    if ((rc = fmt_num_field(cx, e, p, "host_memory_gib", FMT_F_POS, 0.0, gib)) !=
            UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "host_bw_gbps", FMT_F_POS, 0.0, host_gbps)) !=
            UTIL_OK)
        return rc;
    return fmt_num_field(cx, e, p, "pcie_gbps", FMT_F_POS, 0.0, pcie_gbps);
}

static int parse_nodes(const fmt_read_ctx *cx, const cJSON *root,
                       const fmt_device_type *custom, int ncustom,
                       fmt_cluster *c, node_ref **refs)
{
    const cJSON *jn = NULL, *e;
    char p[FMT_PATH_N], fp[FMT_PATH_N], list[200];
    node_ref *r = NULL, *grown_r;
    fmt_node nd, *grown;
    const char *dev;
    double intra_gbps = 0.0, nic_gbps = 0.0, intra_us, nic_us; /* for -O2 */
    double host_gib = 0.0, host_gbps = 0.0, pcie_gbps = 0.0;
    long long gpus_total = 0;
    int rc, entry = 0, cap = 0, count, k, t, nent;

    *refs = NULL;
    rc = fmt_sub_field(cx, root, "", "nodes", FMT_F_REQ | FMT_F_NONEMPTY,
                       FMT_K_ARR, &jn);
    if (rc != UTIL_OK)
        return rc;
    nent = cJSON_GetArraySize(jn);
    c->types = calloc((size_t)nent, sizeof *c->types);
    if (c->types == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, "nodes", "out of memory");
    cJSON_ArrayForEach(e, jn)
    {
        util_json_index(p, sizeof p, "nodes", entry);
        if (!cJSON_IsObject(e)) {
            rc = fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                          util_json_type(e));
            goto done;
        }
        memset(&nd, 0, sizeof nd);
        if ((rc = fmt_keys(cx, e, p, node_keys)) != UTIL_OK ||
            (rc = fmt_str_field(cx, e, p, "name", FMT_F_REQ | FMT_F_NONEMPTY,
                                "", nd.name, sizeof nd.name)) != UTIL_OK ||
            (rc = fmt_str_ref(cx, e, p, "device", FMT_F_REQ | FMT_F_NONEMPTY,
                              &dev)) != UTIL_OK ||
            (rc = fmt_int_field(cx, e, p, "gpus", FMT_F_REQ | FMT_F_POS, 0,
                                &nd.gpus)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "intra_gbps", FMT_F_REQ | FMT_F_POS,
                                0, &intra_gbps)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "nic_gbps", FMT_F_REQ | FMT_F_POS, 0,
                                &nic_gbps)) != UTIL_OK ||
            (rc = fmt_str_field(cx, e, p, "region", 0, "", nd.region,
                                sizeof nd.region)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "intra_latency_us", FMT_F_NONNEG, 5,
                                &intra_us)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "nic_latency_us", FMT_F_NONNEG, 50,
                                &nic_us)) != UTIL_OK ||
            (rc = fmt_int_field(cx, e, p, "count", FMT_F_POS, 1, &count)) !=
                UTIL_OK ||
            (rc = host_fields(cx, e, p, &host_gib, &host_gbps, &pcie_gbps)) !=
                UTIL_OK)
            goto done;
        t = type_index(c, custom, ncustom, dev);
        if (t < 0) {
            const fmt_device_type *near = fmt_catalog_nearest(dev);
            known_types(custom, ncustom, list, sizeof list);
            util_json_key(fp, sizeof fp, p, "device");
            if (near != NULL) /* a typo of a catalogue name */
                rc = fmt_fail(cx, UTIL_EFIELD, fp, "unknown device type '%s', did "
                              "you mean '%s'? (known: %s)", dev, near->name, list);
            else
                rc = fmt_fail(cx, UTIL_EFIELD, fp,
                              "unknown device type '%s' (known: %s)", dev, list);
            goto done;
        }
        nd.type = t;
        nd.intra_bw = intra_gbps * 1e9 / 8;
        nd.nic_bw = nic_gbps * 1e9 / 8;
        nd.intra_lat = intra_us / 1e6;
        nd.nic_lat = nic_us / 1e6;
        nd.host_mem = host_gib * 1073741824.0;
        nd.host_bw = host_gbps * 1e9 / 8;
        nd.pcie_bw = pcie_gbps * 1e9 / 8;
        gpus_total += (long long)nd.gpus * count;
        if (gpus_total > MAX_DEVICES) {
            util_json_key(fp, sizeof fp, p, count > 1 ? "count" : "gpus");
            rc = fmt_fail(cx, UTIL_EFIELD, fp,
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
                rc = fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
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
                rc = fmt_fail(cx, UTIL_EFIELD, fp,
                              "expected a name short enough for its '-%d' "
                              "suffix (at most %zu characters in all)",
                              k, sizeof dst->name - 1);
                goto done;
            }
            if (!util_hostname_ok(dst->name)) {
                util_json_key(fp, sizeof fp, p, "name");
                rc = fmt_fail(cx, UTIL_EFIELD, fp,
                              "expected a host name (letters, digits and "
                              "'-' in labels joined by '.', no '-' at "
                              "either end of a label, at most %zu "
                              "characters in all), got '%s'",
                              sizeof dst->name - 1, dst->name);
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
            rc = fmt_fail(cx, UTIL_EFIELD, fp,
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
static int parse_endpoint(const fmt_read_ctx *cx, const fmt_cluster *c,
                          const node_ref *refs, const cJSON *obj,
                          const char *parent, const char *key, int *node,
                          int *gpu)
{
    char p[FMT_PATH_N], name[64];
    const char *s, *colon;
    const node_ref *hit;
    node_ref probe;
    long idx = 0;
    size_t len;
    int rc;

    util_json_key(p, sizeof p, parent, key);
    rc = fmt_str_ref(cx, obj, parent, key, FMT_F_REQ, &s);
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
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "unknown node '%s' (expected 'NODE' or 'NODE:GPU')", s);
    len = (size_t)(colon - s);
    if (len >= sizeof name)
        return fmt_fail(cx, UTIL_EFIELD, p, "unknown node '%.*s'", (int)len, s);
    memcpy(name, s, len);
    name[len] = '\0';
    probe.name = name;
    hit = bsearch(&probe, refs, (size_t)c->nnodes, sizeof *refs, ref_name_cmp);
    if (hit == NULL)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "unknown node '%s' (expected 'NODE' or 'NODE:GPU')",
                        name);
    if (colon[1] == '\0' ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        strlen(colon + 1) > 9)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "expected a GPU index after ':', got '%s'", colon + 1);
    idx = strtol(colon + 1, NULL, 10);
    if (idx >= c->nodes[hit->node].gpus)
        return fmt_fail(cx, UTIL_EFIELD, p,
                        "GPU index %ld out of range for node '%s' (valid: "
                        "0..%d)",
                        idx, name, c->nodes[hit->node].gpus - 1);
    *node = hit->node;
    *gpu = (int)idx;
    return UTIL_OK;
}

static int parse_links(const fmt_read_ctx *cx, const cJSON *root,
                       const node_ref *refs, fmt_cluster *c)
{
    const cJSON *jl = NULL, *e;
    char p[FMT_PATH_N];
    fmt_link *l;
    double gbps = 0, lat_ms = 0;
    int rc, i = 0, cnt;

    rc = fmt_sub_field(cx, root, "", "links", 0, FMT_K_ARR, &jl);
    if (rc != UTIL_OK || jl == NULL)
        return rc;
    cnt = cJSON_GetArraySize(jl);
    if (cnt == 0)
        return UTIL_OK;
    if (cnt > FMT_MAX_LINKS)
        return fmt_fail(cx, UTIL_EFIELD, "links", "expected at most %d links, got %d",
                        FMT_MAX_LINKS, cnt);
    c->links = calloc((size_t)cnt, sizeof *c->links);
    if (c->links == NULL)
        return fmt_fail(cx, UTIL_ENOMEM, "links", "out of memory");
    cJSON_ArrayForEach(e, jl)
    {
        util_json_index(p, sizeof p, "links", i);
        l = &c->links[i];
        if (!cJSON_IsObject(e))
            return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                            util_json_type(e));
        if ((rc = fmt_keys(cx, e, p, link_keys)) != UTIL_OK ||
            (rc = parse_endpoint(cx, c, refs, e, p, "a", &l->node_a,
                                 &l->gpu_a)) != UTIL_OK ||
            (rc = parse_endpoint(cx, c, refs, e, p, "b", &l->node_b,
                                 &l->gpu_b)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "gbps", FMT_F_REQ | FMT_F_POS, 0,
                                &gbps)) != UTIL_OK ||
            (rc = fmt_num_field(cx, e, p, "latency_ms", FMT_F_NONNEG, -1,
                                &lat_ms)) != UTIL_OK)
            return rc;
        if (l->node_a == l->node_b && l->gpu_a >= 0 && l->gpu_a == l->gpu_b)
            return fmt_fail(cx, UTIL_EFIELD, p,
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

/* Index in c->types of the type a price names (as a node's "device"
 * would), -1 when no node uses it. */
static int price_type(const fmt_cluster *c, const char *name)
{
    const fmt_device_type *cat = fmt_catalog_find(name);
    int i;

    for (i = 0; i < c->ntypes; i++)
        if (fmt_name_eq(c->types[i].name, name) ||
            (cat != NULL && fmt_name_eq(c->types[i].name, cat->name)))
            return i;
    return -1;
}

/* Set the price of type t from the number at path p. */
static int set_price(const fmt_read_ctx *cx, fmt_cluster *c, int t,
                     const cJSON *v, const char *p)
{
    double x = 0.0;
    int rc = fmt_num_value(cx, v, p, FMT_F_NONNEG, &x);

    if (rc != UTIL_OK)
        return rc;
    if (c->price == NULL) {
        int i;
        c->price = malloc((size_t)c->ntypes * sizeof *c->price);
        if (c->price == NULL)
            return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
        for (i = 0; i < c->ntypes; i++)
            c->price[i] = -1.0;
    }
    c->price[t] = x;
    return UTIL_OK;
}

/* Optional prices per GPU hour: "price_per_hour" of a device_types entry
 * and the "prices" object (type name -> price) for any type, catalogue
 * types included; the "prices" entry wins when both give one. */
static int parse_prices(const fmt_read_ctx *cx, const cJSON *root,
                        fmt_cluster *c)
{
    const cJSON *jt = fmt_field(root, "device_types"), *jp = NULL, *e, *v;
    char p[FMT_PATH_N], fp[FMT_PATH_N];
    double unused;
    int rc, t;

    if (cJSON_IsObject(jt))
        cJSON_ArrayForEach(e, jt)
        {
            v = fmt_field(e, "price_per_hour");
            if (v == NULL || e->string == NULL)
                continue;
            util_json_key(p, sizeof p, "device_types", e->string);
            util_json_key(fp, sizeof fp, p, "price_per_hour");
            t = price_type(c, e->string);
            if (t >= 0 && (rc = set_price(cx, c, t, v, fp)) != UTIL_OK)
                return rc;
            if (t < 0 && (rc = fmt_num_value(cx, v, fp, FMT_F_NONNEG,
                                             &unused)) != UTIL_OK)
                return rc;
        }
    rc = fmt_sub_field(cx, root, "", "prices", 0, FMT_K_OBJ, &jp);
    if (rc != UTIL_OK || jp == NULL)
        return rc;
    if (cJSON_GetArraySize(jp) > FMT_MAX_DEVICE_TYPES)
        return fmt_fail(cx, UTIL_EFIELD, "prices",
                        "expected at most %d prices (one per device type), got %d",
                        FMT_MAX_DEVICE_TYPES, cJSON_GetArraySize(jp));
    cJSON_ArrayForEach(e, jp)
    {
        const char *name = e->string ? e->string : "";
        util_json_key(p, sizeof p, "prices", name);
        t = price_type(c, name);
        if (t < 0)
            return fmt_fail(cx, UTIL_EFIELD, p,
                            "no node uses device type '%s' (expected the "
                            "device of some node)", name);
        if ((rc = set_price(cx, c, t, e, p)) != UTIL_OK)
            return rc;
    }
    return UTIL_OK;
}

int fmt_parse_cluster(const char *text, const char *file, fmt_cluster *out,
                       util_error *err)
{
    fmt_read_ctx cx;
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
        return fmt_fail(&cx, UTIL_EINVAL, "", "no output cluster given");
    memset(out, 0, sizeof *out);
    if ((rc = fmt_read_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = fmt_keys(&cx, root, "", root_keys)) != UTIL_OK ||
        (rc = fmt_str_field(&cx, root, "", "name", 0, "", c.name,
                            sizeof c.name)) != UTIL_OK ||
        (rc = parse_types(&cx, root, &custom, &ncustom)) != UTIL_OK ||
        (rc = parse_nodes(&cx, root, custom, ncustom, &c, &refs)) != UTIL_OK)
        goto done;
    jt = fmt_field(root, "total_gpus");
    if (jt != NULL) {
        for (i = 0; i < c.nnodes; i++)
            sum += c.nodes[i].gpus;
        if ((rc = fmt_int_value(&cx, jt, "total_gpus", FMT_F_POS, &total)) !=
            UTIL_OK)
            goto done;
        if ((long long)total != sum) {
            rc = fmt_fail(&cx, UTIL_EFIELD, "total_gpus",
                          "total_gpus is %d but the nodes add up to %lld GPU%s",
                          total, sum, sum == 1 ? "" : "s");
            goto done;
        }
    }
    if ((rc = parse_links(&cx, root, refs, &c)) != UTIL_OK ||
        (rc = parse_prices(&cx, root, &c)) != UTIL_OK)
        goto done;
    if (fmt_cluster_index(&c) != UTIL_OK) {
        rc = fmt_fail(&cx, UTIL_ENOMEM, "", "out of memory");
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

static int parse_cluster_text(const char *text, const char *file,
                              const void *arg, void *out, util_error *err)
{
    (void)arg;
    return fmt_parse_cluster(text, file, out, err);
}

int fmt_load_cluster(const char *path, fmt_cluster *out, util_error *err)
{
    return fmt_load_file(path, parse_cluster_text, NULL, out, sizeof *out, err);
}
