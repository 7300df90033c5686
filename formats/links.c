/* formats/links.c: the indexes of a cluster (the node of each device,
 * the links sorted by their ends) and the link between two devices: the
 * most specific override of the cluster file, else the node's own
 * interconnect or the slower NIC (docs/inputs.md).  A lookup is a binary
 * search of the sorted links. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- links: the override between two GPUs --------------------------- */

/* The ends of a link or of a pattern of one, in an order that does not
 * depend on its direction: (node, GPU or -1) pairs, the smaller first. */
typedef struct link_key {
    int n1, g1, n2, g2;
} link_key;

static link_key key_of(int na, int ga, int nb, int gb)
{
    link_key k;

    if (na < nb || (na == nb && ga <= gb)) {
        k.n1 = na, k.g1 = ga, k.n2 = nb, k.g2 = gb;
    } else {
        k.n1 = nb, k.g1 = gb, k.n2 = na, k.g2 = ga;
    }
    return k;
}

static int key_cmp(const link_key *x, const link_key *y)
{
    if (x->n1 != y->n1)
        return x->n1 < y->n1 ? -1 : 1;
    if (x->g1 != y->g1)
        return x->g1 < y->g1 ? -1 : 1;
    if (x->n2 != y->n2)
        return x->n2 < y->n2 ? -1 : 1;
    if (x->g2 != y->g2)
        return x->g2 < y->g2 ? -1 : 1;
    return 0;
}

static link_key link_key_of(const fmt_link *l)
{
    return key_of(l->node_a, l->gpu_a, l->node_b, l->gpu_b);
}

/* A link of the index being sorted: by key, then by place in the file. */
typedef struct keyed_link {
    link_key k;
    int i;
} keyed_link;

static int keyed_cmp(const void *a, const void *b)
{
    const keyed_link *x = a, *y = b;
    int d = key_cmp(&x->k, &y->k);

    return d != 0 ? d : (x->i > y->i) - (x->i < y->i);
}

/* The first link (in the file) whose ends are exactly k, -1 if none. */
static int link_find(const fmt_cluster *c, link_key k)
{
    int lo = 0, hi = c->nlinks;

    while (lo < hi) { /* first position whose key is not below k */
        int mid = lo + (hi - lo) / 2;
        link_key km = link_key_of(&c->links[c->link_order[mid]]);
        if (key_cmp(&km, &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->nlinks) {
        link_key kl = link_key_of(&c->links[c->link_order[lo]]);
        if (key_cmp(&kl, &k) == 0)
            return c->link_order[lo];
    }
    return -1;
}

/* The link between GPU ga of node na and GPU gb of node nb: the most
 * specific that matches (a GPU pair over a GPU and a node over two
 * nodes), the first in the file among equals; -1 if none. */
static int link_lookup(const fmt_cluster *c, int na, int ga, int nb, int gb)
{
    int x, y;

    if ((x = link_find(c, key_of(na, ga, nb, gb))) >= 0)
        return x;
    x = link_find(c, key_of(na, -1, nb, gb));
    y = link_find(c, key_of(na, ga, nb, -1));
    if (x >= 0 || y >= 0)
        return x < 0 ? y : y < 0 ? x : x < y ? x : y;
    return link_find(c, key_of(na, -1, nb, -1));
}

int fmt_cluster_index(fmt_cluster *c)
{
    int n = 0, i, g;
    int *map, *order = NULL;
    keyed_link *kl;

    if (c->nlinks > 0) {
        order = malloc((size_t)c->nlinks * sizeof *order);
        kl = malloc((size_t)c->nlinks * sizeof *kl);
        if (order == NULL || kl == NULL) {
            free(order);
            free(kl);
            return UTIL_ENOMEM;
        }
        for (i = 0; i < c->nlinks; i++) {
            kl[i].k = link_key_of(&c->links[i]);
            kl[i].i = i;
        }
        qsort(kl, (size_t)c->nlinks, sizeof *kl, keyed_cmp);
        for (i = 0; i < c->nlinks; i++)
            order[i] = kl[i].i;
        free(kl);
    }
    free(c->link_order);
    c->link_order = order;
    c->link_order_n = c->nlinks;

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
    if (c->link_order != NULL && c->link_order_n == c->nlinks)
        best = link_lookup(c, na, ga, nb, gb);
    else
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
