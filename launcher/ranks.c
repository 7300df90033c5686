/* launcher/ranks.c: which plan rank a process plays, where it sits, and
 * the tensor-, pipeline- and data-parallel groups it belongs to. */
#include <string.h>

#include "launch.h"

void launch_coord_of(const fmt_cluster *c, const fmt_strategy *s, int r,
                     launch_coord *out)
{
    int per_stage = s->tp * s->dp;

    out->stage = r / per_stage;
    out->dpi = (r % per_stage) / s->tp;
    out->tpi = r % s->tp;
    out->device = s->ranks[r];
    out->node = (c && c->device_node && out->device >= 0 &&
                 out->device < c->ndevices) ? c->device_node[out->device] : -1;
}

int launch_plan_rank(const fmt_cluster *c, const fmt_strategy *s, int order,
                     int proc, int world, int *plan_rank, util_error *err)
{
    int ranks = s->tp * s->dp * s->pp;

    *plan_rank = -1;
    if (order == LAUNCH_ORDER_MEGATRON) {
        if (world != ranks)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "world size %d does not match the plan's %d ranks "
                                  "(tp %d x dp %d x pp %d)", world, ranks, s->tp,
                                  s->dp, s->pp);
    } else if (order == LAUNCH_ORDER_PLAN) {
        if (world != c->ndevices)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "world size %d does not match the cluster's %d "
                                  "devices ('--rank-order plan' starts one process "
                                  "per device)", world, c->ndevices);
    } else {
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "unknown rank order %d", order);
    }
    if (proc < 0 || proc >= world)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "rank %d is outside the world of %d", proc, world);
    *plan_rank = order == LAUNCH_ORDER_MEGATRON ? proc : fmt_rank_of_device(s, proc);
    return UTIL_OK;
}

int launch_group(const fmt_strategy *s, int kind, int r, int *members,
                 int cap, int *index)
{
    int tp = s->tp, dp = s->dp, pp = s->pp, per_stage = tp * dp;
    int stage = r / per_stage, dpi = (r % per_stage) / tp, tpi = r % tp;
    int n = 0, i, idx = 0;

#define PUT(x) do { if (n < cap) members[n] = (x); n++; } while (0)
    switch (kind) {
    case LAUNCH_GROUP_TP:
        for (i = 0; i < tp; i++)
            PUT(i + tp * dpi + per_stage * stage);
        idx = dpi + dp * stage;
        break;
    case LAUNCH_GROUP_PP:
        for (i = 0; i < pp; i++)
            PUT(tpi + tp * dpi + per_stage * i);
        idx = tpi + tp * dpi;
        break;
    case LAUNCH_GROUP_DP:
        for (i = 0; i < dp; i++)
            PUT(tpi + tp * i + per_stage * stage);
        idx = tpi + tp * stage;
        break;
    case LAUNCH_GROUP_EMBED:
        PUT(tpi + tp * dpi);
        if (pp > 1)
            PUT(tpi + tp * dpi + per_stage * (pp - 1));
        idx = tpi + tp * dpi;
        break;
    default:
        return 0;
    }
#undef PUT
    if (index)
        *index = idx;
    return n;
}
