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
    for (i = 1; i < c->nnodes; i++)
        for (j = i; j > 0 && node_faster(c, order[j], order[j - 1]); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (i = 0; i < c->nnodes; i++)
        for (j = 0; j < c->nodes[order[i]].gpus; j++)
            s->ranks[r++] = c->nodes[order[i]].first_device + j;
    snprintf(s->placement, sizeof s->placement, "%s", place_names[rule]);
    free(order);
    return UTIL_OK;
}
