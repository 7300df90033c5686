/* decentral/keys.c: the keys of a scenario file, checked for unknown
 * ones (a misspelled key would otherwise be ignored). */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "internal.h"

#define PATH_N 160 /* = sizeof util_error.path */

/* The keys of a scenario file (docs/decentralized.md); "source" says
 * where its numbers come from. */
static const char *const root_keys[] = {
    "name", "source", "regions", "region_pairs", "inside", "between", "device",
    "device_types", "latency_ms", "bandwidth_gbps", "workload", NULL};
static const char *const region_keys[] = {"name", "gpus", "device", "latency_ms",
                                          "bandwidth_gbps", NULL};
static const char *const link_keys[] = {"latency_ms", "bandwidth_gbps", NULL};
static const char *const pair_keys[] = {"a", "b", "latency_ms", "bandwidth_gbps",
                                        "reverse", NULL};
static const char *const workload_keys[] = {
    "d_pp", "d_dp", "c_pp_bytes", "c_dp_bytes", "batch_tokens", "hidden", "params",
    "activation_bytes", "gradient_bytes", NULL};

int dtfm_scenario_keys(const char *file, const cJSON *root, util_error *err)
{
    const cJSON *e;
    char p[PATH_N], q[PATH_N];
    int rc, i;

    if ((rc = fmt_check_keys(file, root, "", root_keys, err)) ||
        (rc = fmt_check_keys(file, cJSON_GetObjectItemCaseSensitive(root, "inside"),
                             "inside", link_keys, err)) ||
        (rc = fmt_check_keys(file, cJSON_GetObjectItemCaseSensitive(root, "between"),
                             "between", link_keys, err)) ||
        (rc = fmt_check_keys(file, cJSON_GetObjectItemCaseSensitive(root, "workload"),
                             "workload", workload_keys, err)))
        return rc;
    i = 0;
    e = cJSON_GetObjectItemCaseSensitive(root, "regions");
    for (e = cJSON_IsArray(e) ? e->child : NULL; e != NULL; e = e->next) {
        util_json_index(p, PATH_N, "regions", i++);
        if ((rc = fmt_check_keys(file, e, p, region_keys, err)))
            return rc;
    }
    i = 0;
    e = cJSON_GetObjectItemCaseSensitive(root, "region_pairs");
    for (e = cJSON_IsArray(e) ? e->child : NULL; e != NULL; e = e->next) {
        util_json_index(p, PATH_N, "region_pairs", i++);
        util_json_key(q, PATH_N, p, "reverse");
        if ((rc = fmt_check_keys(file, e, p, pair_keys, err)) ||
            (rc = fmt_check_keys(file, cJSON_GetObjectItemCaseSensitive(e, "reverse"),
                                 q, link_keys, err)))
            return rc;
    }
    return UTIL_OK;
}
