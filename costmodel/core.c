/* costmodel/core.c: error table, ownership helpers for the input structs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

const char *cost_strerror(int code)
{
    switch (code) {
#define COST_X_CASE(sym, val, msg) \
    case sym:                      \
        return msg;
        HETPLAN_ERRORS(COST_X_CASE)
#undef COST_X_CASE
    default:
        return "unknown error";
    }
}

int cost_error_set(cost_error *err, int code, const char *file,
                   const char *path, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void cost_error_format(const cost_error *err, char *buf, size_t n)
{
    size_t used = 0;
    int k;

    if (n == 0)
        return;
    buf[0] = '\0';
    if (err == NULL)
        return;
    if (err->file[0]) {
        k = snprintf(buf, n, "'%s': ", err->file);
        used = k > 0 ? (size_t)k : 0;
    }
    if (err->path[0] && used < n) {
        k = snprintf(buf + used, n - used, "%s: ", err->path);
        used += k > 0 ? (size_t)k : 0;
    }
    if (used < n)
        snprintf(buf + used, n - used, "%s",
                 err->msg[0] ? err->msg : cost_strerror(err->code));
}

void cost_cluster_free(cost_cluster *c)
{
    if (c == NULL)
        return;
    free(c->types);
    free(c->nodes);
    free(c->links);
    free(c->device_node);
    memset(c, 0, sizeof *c);
}

int cost_cluster_index(cost_cluster *c)
{
    int n = 0, i, g;
    int *map;

    for (i = 0; i < c->nnodes; i++) {
        c->nodes[i].first_device = n;
        n += c->nodes[i].gpus;
    }
    map = malloc((size_t)(n > 0 ? n : 1) * sizeof *map);
    if (map == NULL)
        return COST_ENOMEM;
    for (i = 0; i < c->nnodes; i++)
        for (g = 0; g < c->nodes[i].gpus; g++)
            map[c->nodes[i].first_device + g] = i;
    free(c->device_node);
    c->device_node = map;
    c->ndevices = n;
    return COST_OK;
}

const cost_device_type *cost_device(const cost_cluster *c, int dev)
{
    return &c->types[c->nodes[c->device_node[dev]].type];
}

static int link_matches(const cost_link *l, int na, int ga, int nb, int gb)
{
    return l->node_a == na && l->node_b == nb &&
           (l->gpu_a < 0 || l->gpu_a == ga) && (l->gpu_b < 0 || l->gpu_b == gb);
}

void cost_link_between(const cost_cluster *c, int dev_a, int dev_b,
                       double *bw, double *lat)
{
    int na = c->device_node[dev_a], nb = c->device_node[dev_b];
    int ga = dev_a - c->nodes[na].first_device;
    int gb = dev_b - c->nodes[nb].first_device;
    const cost_node *a = &c->nodes[na], *b = &c->nodes[nb];
    int i, best = -1, best_spec = -1;

    /* the most specific override wins (GPU pair over node pair) */
    for (i = 0; i < c->nlinks; i++) {
        const cost_link *l = &c->links[i];
        int spec;
        if (!link_matches(l, na, ga, nb, gb) && !link_matches(l, nb, gb, na, ga))
            continue;
        spec = (l->gpu_a >= 0) + (l->gpu_b >= 0);
        if (spec > best_spec) {
            best = i;
            best_spec = spec;
        }
    }
    if (best >= 0) {
        *bw = c->links[best].bw;
        *lat = c->links[best].lat;
        return;
    }
    if (na == nb) {
        *bw = a->intra_bw;
        *lat = a->intra_lat;
        return;
    }
    *bw = a->nic_bw < b->nic_bw ? a->nic_bw : b->nic_bw;
    *lat = a->nic_lat > b->nic_lat ? a->nic_lat : b->nic_lat;
}

void cost_model_free(cost_model *m)
{
    if (m == NULL)
        return;
    free(m->layers);
    memset(m, 0, sizeof *m);
}

void cost_profile_free(cost_profile *p)
{
    int i;

    if (p == NULL)
        return;
    for (i = 0; i < p->nentries; i++) {
        free(p->entries[i].fwd);
        free(p->entries[i].bwd);
    }
    free(p->entries);
    free(p->calib); /* issue 3 */
    memset(p, 0, sizeof *p);
}

int cost_strategy_alloc(cost_strategy *s, int tp, int dp, int pp)
{
    memset(s, 0, sizeof *s);
    if (tp < 1 || dp < 1 || pp < 1)
        return COST_EINVAL;
    s->bounds = calloc((size_t)pp + 1, sizeof *s->bounds);
    s->ranks = calloc((size_t)tp * (size_t)dp * (size_t)pp, sizeof *s->ranks);
    if (s->bounds == NULL || s->ranks == NULL) {
        cost_strategy_free(s);
        return COST_ENOMEM;
    }
    s->tp = tp;
    s->dp = dp;
    s->pp = pp;
    s->mbs = 1;
    s->gas = 1;
    s->schedule = COST_SCHED_1F1B;
    return COST_OK;
}

int cost_strategy_copy(cost_strategy *dst, const cost_strategy *src)
{
    int rc = cost_strategy_alloc(dst, src->tp, src->dp, src->pp);
    size_t nr = (size_t)src->tp * (size_t)src->dp * (size_t)src->pp;

    if (rc != COST_OK)
        return rc;
    dst->mbs = src->mbs;
    dst->gas = src->gas;
    dst->schedule = src->schedule;
    memcpy(dst->bounds, src->bounds, ((size_t)src->pp + 1) * sizeof *dst->bounds);
    memcpy(dst->ranks, src->ranks, nr * sizeof *dst->ranks);
    memcpy(dst->placement, src->placement, sizeof dst->placement);
    if (src->tp_heads && src->tp_cols &&
        cost_strategy_set_shards(dst, src->tp_heads, src->tp_cols) != COST_OK)
        goto nomem;
    if (src->slow && cost_strategy_set_slow(dst, src->slow) != COST_OK)
        goto nomem;
    return COST_OK;
nomem:
    cost_strategy_free(dst);
    return COST_ENOMEM;
}

void cost_strategy_free(cost_strategy *s)
{
    if (s == NULL)
        return;
    free(s->bounds);
    free(s->ranks);
    free(s->tp_heads);
    free(s->tp_cols);
    free(s->slow);
    memset(s, 0, sizeof *s);
}

int cost_rank_device(const cost_strategy *s, int stage, int dpi, int tpi)
{
    return s->ranks[tpi + s->tp * dpi + s->tp * s->dp * stage];
}

void cost_result_free(cost_result *r)
{
    if (r == NULL)
        return;
    free(r->stage_s);
    free(r->p2p_s);
    free(r->mem_bytes);
    free(r->mem_cap);
    memset(r, 0, sizeof *r);
}
