/* formats/types.c: error table, ownership helpers for the input structs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

void fmt_cluster_free(fmt_cluster *c)
{
    if (c == NULL)
        return;
    free(c->types);
    free(c->nodes);
    free(c->links);
    free(c->device_node);
    memset(c, 0, sizeof *c);
}

int fmt_cluster_index(fmt_cluster *c)
{
    int n = 0, i, g;
    int *map;

    for (i = 0; i < c->nnodes; i++) {
        c->nodes[i].first_device = n;
        n += c->nodes[i].gpus;
    }
    map = malloc((size_t)(n > 0 ? n : 1) * sizeof *map);
    if (map == NULL)
        return UTIL_ENOMEM;
    for (i = 0; i < c->nnodes; i++)
        for (g = 0; g < c->nodes[i].gpus; g++)
            map[c->nodes[i].first_device + g] = i;
    free(c->device_node);
    c->device_node = map;
    c->ndevices = n;
    return UTIL_OK;
}

const fmt_device_type *fmt_device(const fmt_cluster *c, int dev)
{
    return &c->types[c->nodes[c->device_node[dev]].type];
}

static int link_matches(const fmt_link *l, int na, int ga, int nb, int gb)
{
    return l->node_a == na && l->node_b == nb &&
           (l->gpu_a < 0 || l->gpu_a == ga) && (l->gpu_b < 0 || l->gpu_b == gb);
}

void fmt_link_between(const fmt_cluster *c, int dev_a, int dev_b,
                       double *bw, double *lat)
{
    int na = c->device_node[dev_a], nb = c->device_node[dev_b];
    int ga = dev_a - c->nodes[na].first_device;
    int gb = dev_b - c->nodes[nb].first_device;
    const fmt_node *a = &c->nodes[na], *b = &c->nodes[nb];
    int i, best = -1, best_spec = -1;

    /* the most specific override wins (GPU pair over node pair) */
    for (i = 0; i < c->nlinks; i++) {
        const fmt_link *l = &c->links[i];
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

void fmt_model_free(fmt_model *m)
{
    if (m == NULL)
        return;
    free(m->layers);
    memset(m, 0, sizeof *m);
}

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

int fmt_strategy_alloc(fmt_strategy *s, int tp, int dp, int pp)
{
    memset(s, 0, sizeof *s);
    if (tp < 1 || dp < 1 || pp < 1)
        return UTIL_EINVAL;
    s->bounds = calloc((size_t)pp + 1, sizeof *s->bounds);
    s->ranks = calloc((size_t)tp * (size_t)dp * (size_t)pp, sizeof *s->ranks);
    if (s->bounds == NULL || s->ranks == NULL) {
        fmt_strategy_free(s);
        return UTIL_ENOMEM;
    }
    s->tp = tp;
    s->dp = dp;
    s->pp = pp;
    s->mbs = 1;
    s->gas = 1;
    s->schedule = FMT_SCHED_1F1B;
    return UTIL_OK;
}

int fmt_strategy_copy(fmt_strategy *dst, const fmt_strategy *src)
{
    int rc = fmt_strategy_alloc(dst, src->tp, src->dp, src->pp);
    size_t nr = (size_t)src->tp * (size_t)src->dp * (size_t)src->pp;

    if (rc != UTIL_OK)
        return rc;
    dst->mbs = src->mbs;
    dst->gas = src->gas;
    dst->schedule = src->schedule;
    memcpy(dst->bounds, src->bounds, ((size_t)src->pp + 1) * sizeof *dst->bounds);
    memcpy(dst->ranks, src->ranks, nr * sizeof *dst->ranks);
    memcpy(dst->placement, src->placement, sizeof dst->placement);
    if (src->tp_heads && src->tp_cols &&
        fmt_strategy_set_shards(dst, src->tp_heads, src->tp_cols) != UTIL_OK)
        goto nomem;
    if (src->slow && fmt_strategy_set_slow(dst, src->slow) != UTIL_OK)
        goto nomem;
    return UTIL_OK;
nomem:
    fmt_strategy_free(dst);
    return UTIL_ENOMEM;
}

void fmt_strategy_free(fmt_strategy *s)
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

int fmt_rank_device(const fmt_strategy *s, int stage, int dpi, int tpi)
{
    return s->ranks[tpi + s->tp * dpi + s->tp * s->dp * stage];
}

