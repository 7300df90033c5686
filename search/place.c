/* search/place.c: device placement rules (rank -> device). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

static const char *const place_names[SEARCH_PLACE_NPLACEMENTS] = {
    "megatron", "fastest-first"};

const char *search_placement_name(int rule)
{
    if (rule < 0 || rule >= SEARCH_PLACE_NPLACEMENTS)
        return NULL;
    return place_names[rule];
}

int search_placement_from_name(const char *name)
{
    int i;

    for (i = 0; i < SEARCH_PLACE_NPLACEMENTS; i++)
        if (strcmp(name, place_names[i]) == 0)
            return i;
    return -1;
}

/* Speed rank of a node's device type: peak FLOP/s, then bandwidth. */
static int node_faster(const fmt_cluster *c, int a, int b)
{
    const fmt_device_type *x = &c->types[c->nodes[a].type];
    const fmt_device_type *y = &c->types[c->nodes[b].type];

    if (x->flops_fp16 != y->flops_fp16)
        return x->flops_fp16 > y->flops_fp16;
    if (x->mem_bw != y->mem_bw)
        return x->mem_bw > y->mem_bw;
    return 0;
}

/* Stable merge sort of the node indices, fastest first: O(n log n)
 * (a cluster may list thousands of nodes). */
static int sort_nodes(const fmt_cluster *c, int *order)
{
    int n = c->nnodes, w, lo, i, a, b, *tmp = malloc((size_t)n * sizeof *tmp);

    if (tmp == NULL)
        return UTIL_ENOMEM;
    for (w = 1; w < n; w *= 2) {
        for (lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            for (i = lo, a = lo, b = mid; i < hi; i++)
                /* the right run goes first only when strictly faster */
                tmp[i] = a < mid && (b >= hi || !node_faster(c, order[b], order[a]))
                             ? order[a++] : order[b++];
        }
        memcpy(order, tmp, (size_t)n * sizeof *order);
    }
    free(tmp);
    return UTIL_OK;
}

int search_place(const fmt_cluster *c, int rule, fmt_strategy *s,
                 util_error *err)
{
    int nr = s->tp * s->dp * s->pp, i, j, r = 0;
    int *order = NULL;

    if (nr != c->ndevices)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "strategy has %d ranks for %d devices", nr,
                              c->ndevices);
    if (rule == SEARCH_PLACE_MEGATRON) {
        /* rank = tp_index + tp*dp_index + tp*dp*stage, devices in file order */
        for (i = 0; i < nr; i++)
            s->ranks[i] = i;
        snprintf(s->placement, sizeof s->placement, "%s", place_names[rule]);
        return UTIL_OK;
    }
    if (rule != SEARCH_PLACE_FASTEST)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "unknown placement rule %d", rule);
    /* Group nodes by device type, fastest first (stable): a stage then
     * holds one GPU generation, so no replica waits on a slower twin,
     * and the layer assignment gives the slow stages fewer layers. */
    order = malloc((size_t)c->nnodes * sizeof *order);
    if (order == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (i = 0; i < c->nnodes; i++)
        order[i] = i;
    if (sort_nodes(c, order) != UTIL_OK) {
        free(order);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (i = 0; i < c->nnodes; i++)
        for (j = 0; j < c->nodes[order[i]].gpus; j++)
            s->ranks[r++] = c->nodes[order[i]].first_device + j;
    snprintf(s->placement, sizeof s->placement, "%s", place_names[rule]);
    free(order);
    return UTIL_OK;
}
