/* plan/devices.c: the devices a strategy leaves idle and its price, in
 * the plan JSON ("idle", docs/plan-format.md) and after the table. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "plan.h"
#include "internal.h"

static const char *type_name(const fmt_cluster *c, int node)
{
    int t = c->nodes[node].type;

    return t >= 0 && t < c->ntypes ? c->types[t].name : NULL;
}

/* used[d] = 1 for the devices s runs on; returns how many are idle. */
static int idle_mark(const fmt_cluster *c, const fmt_strategy *s, char *used)
{
    int n = s->tp * s->dp * s->pp, i, idle = c->ndevices;

    memset(used, 0, (size_t)c->ndevices);
    for (i = 0; s->ranks != NULL && i < n; i++)
        if (s->ranks[i] >= 0 && s->ranks[i] < c->ndevices && !used[s->ranks[i]]) {
            used[s->ranks[i]] = 1;
            idle--;
        }
    return idle;
}

cJSON *plan_idle_json(const fmt_cluster *c, const fmt_strategy *s,
                        const char *reason)
{
    cJSON *arr = cJSON_CreateArray(), *e, *g;
    char *used = malloc((size_t)(c->ndevices > 0 ? c->ndevices : 1));
    int i, k, ok = arr != NULL && used != NULL;

    if (ok && idle_mark(c, s, used) > 0)
        for (i = 0; ok && i < c->nnodes; i++) {
            const fmt_node *nd = &c->nodes[i];
            for (k = 0; k < nd->gpus && used[nd->first_device + k]; k++)
                ;
            if (k == nd->gpus)
                continue;
            e = cJSON_CreateObject();
            g = cJSON_CreateArray();
            ok = util_json_push(arr, e) && util_json_put_str(e, "node", nd->name) &&
                 util_json_put_str(e, "device_type", type_name(c, i)) &&
                 util_json_put(e, "gpus", g) &&
                 util_json_put_str(e, "reason", reason && reason[0] ? reason
                                   : "not used by this strategy");
            if (!ok)
                cJSON_Delete(g);
            for (k = 0; ok && k < nd->gpus; k++)
                if (!used[nd->first_device + k])
                    ok = util_json_push(g, util_json_num(k));
        }
    free(used);
    return util_json_finish(arr, ok);
}

char *plan_devices_text(const fmt_cluster *c, const fmt_strategy *s,
                        const cost_result *r, const char *reason)
{
    util_buf b = {NULL, 0, 0, 0};
    char *used = malloc((size_t)(c->ndevices > 0 ? c->ndevices : 1));
    int i, k, idle;

    if (used == NULL)
        return NULL;
    idle = idle_mark(c, s, used);
    util_buf_printf(&b, "%s", "");
    if (idle > 0) {
        util_buf_printf(&b, "\nidle devices of #1 (%d of %d GPUs): %s\n", idle,
                        c->ndevices, reason && reason[0] ? reason
                                                         : "not used by this strategy");
        for (i = 0; i < c->nnodes; i++) {
            const fmt_node *nd = &c->nodes[i];
            int cnt = 0;
            for (k = 0; k < nd->gpus; k++)
                cnt += !used[nd->first_device + k];
            if (cnt == nd->gpus)
                util_buf_printf(&b, "  %s: all %d %s\n", nd->name, cnt,
                                type_name(c, i));
            else if (cnt > 0)
                util_buf_printf(&b, "  %s: %d of %d %s\n", nd->name, cnt, nd->gpus,
                                type_name(c, i));
        }
    }
    free(used);
    if (c->price != NULL) {
        double ph = search_price_per_hour(c, s);
        if (ph >= 0.0)
            util_buf_printf(&b, "\nprice of #1: %.4g per hour for the GPUs in use, "
                            "%.4g per iteration\n", ph, ph * r->iter_s / 3600.0);
        else
            util_buf_printf(&b, "\nprice of #1: unknown (a GPU in use has no price)\n");
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
