/* plan/internal.h: what the files of plan/ share; private to the room. */
#ifndef HETPLAN_PLAN_INTERNAL_H
#define HETPLAN_PLAN_INTERNAL_H

#include <cjson/cJSON.h>

#include "plan.h"

/* "idle" of a strategy: one object per node with GPUs s leaves idle
 * (node, device_type, gpus: indices inside the node, reason; reason NULL
 * or "" = "not used by this strategy"); [] when s uses every device.
 * NULL when out of memory. */
cJSON *plan_idle_json(const fmt_cluster *c, const fmt_strategy *s,
                      const char *reason);

/* Whether a strategy is predicted to run (memory fits and every stage
 * holds parameters, docs/cost-model.md); why not in buf of n bytes (""
 * when it runs).  The structural rule is checked on s itself, not on r. */
int plan_runnable_reason(const fmt_model *m, const fmt_strategy *s,
                         const cost_result *r, char *buf, size_t n);

#endif
