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

#endif
