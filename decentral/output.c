/* decentral/output.c: a decentralized schedule as plan JSON (schema
 * "hetplan-dtfm-plan/1", docs/decentralized.md) and as a table. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "decentral.h"

/* ---- plan JSON ------------------------------------------------------- */

static cJSON *input_ref(const char *path, const char *digest)
{
    cJSON *o = cJSON_CreateObject();

    if (!util_json_put_str(o, "path", path ? path : "") ||
        !util_json_put_str(o, "sha256", digest ? digest : "")) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

char *dtfm_to_json(const dtfm_meta *meta, const dtfm_input *in,
                   const dtfm_result *r)
{
    cJSON *doc = cJSON_CreateObject(), *o, *arr, *e;
    char *text = NULL;
    int i, j, k = r->k, g = r->g;
    const dtfm_search_result *sr = meta->search;

    if (doc == NULL)
        return NULL;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "schema", cJSON_CreateString("hetplan-dtfm-plan/1")) ||
        !util_json_put(doc, "planner", o) ||
        !util_json_put(o, "name", cJSON_CreateString("hetplan")) ||
        !util_json_put(o, "version", cJSON_CreateString(HETPLAN_VERSION)))
        goto done;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "inputs", o) ||
        !util_json_put(o, "cluster", input_ref(meta->cluster_path, meta->cluster_digest)) ||
        !util_json_put(o, "model", meta->model_path
                             ? input_ref(meta->model_path, meta->model_digest)
                             : cJSON_CreateNull()))
        goto done;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "settings", o) ||
        !util_json_put(o, "method", cJSON_CreateString("decentralized")) ||
        !util_json_put(o, "searcher", cJSON_CreateString(meta->searcher ? meta->searcher : "")) ||
        !util_json_put(o, "seed", util_json_num((double)meta->seed)) ||
        !util_json_put(o, "seconds", util_json_num(meta->seconds)) ||
        !util_json_put(o, "max_evals", cJSON_CreateNumber((double)meta->max_evals)) ||
        !util_json_put(o, "convention",
             cJSON_CreateString(dtfm_convention_name(in->convention))) ||
        !util_json_put(o, "compute", cJSON_CreateBool(in->prob.compute != NULL)) ||
        !util_json_put(o, "d_pp", cJSON_CreateNumber(in->prob.d_pp)) ||
        !util_json_put(o, "d_dp", cJSON_CreateNumber(in->prob.d_dp)) ||
        !util_json_put(o, "c_pp_bytes", util_json_num(in->prob.c_pp)) ||
        !util_json_put(o, "c_dp_bytes", util_json_num(in->prob.c_dp)) ||
        !util_json_put(o, "workload_source", cJSON_CreateString(in->workload_source)))
        goto done;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "search", o) ||
        !util_json_put(o, "evaluated", cJSON_CreateNumber(sr ? (double)sr->evaluated : 0)) ||
        !util_json_put(o, "generations", cJSON_CreateNumber(sr ? (double)sr->generations : 0)) ||
        !util_json_put(o, "elapsed_s", util_json_num(sr ? sr->elapsed_s : 0.0)) ||
        !util_json_put(o, "best_at_s", util_json_num(sr ? sr->best_at_s : 0.0)) ||
        !util_json_put(o, "timed_out", cJSON_CreateBool(sr ? sr->timed_out : 0)))
        goto done;
    o = cJSON_CreateObject();
    arr = cJSON_CreateArray();
    if (!util_json_put(doc, "cluster", o) || !util_json_put_str(o, "name", in->name) ||
        !util_json_put(o, "devices", cJSON_CreateNumber(in->prob.n)) ||
        !util_json_put(o, "regions", arr))
        goto done;
    for (i = 0; i < in->nregions; i++) {
        e = cJSON_CreateObject();
        if (!util_json_push(arr, e) || !util_json_put_str(e, "name", in->region_name[i]) ||
            !util_json_put(e, "gpus", cJSON_CreateNumber(in->region_gpus[i])))
            goto done;
    }
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "cost", o) || !util_json_put(o, "total_s", util_json_num(r->total_s)) ||
        !util_json_put(o, "dp_s", util_json_num(r->dp_s)) || !util_json_put(o, "pp_s", util_json_num(r->pp_s)) ||
        !util_json_put(o, "compute_s", util_json_num(r->compute_s)) ||
        !util_json_put(o, "tsp_exact", cJSON_CreateBool(r->tsp_exact)))
        goto done;
    arr = cJSON_CreateArray();
    if (!util_json_put(doc, "pipeline", arr))
        goto done;
    for (j = 0; j < k; j++) {
        int q = r->order[j];
        cJSON *regs = cJSON_CreateArray();
        e = cJSON_CreateObject();
        if (!util_json_push(arr, e) || !util_json_put(e, "stage", cJSON_CreateNumber(j)) ||
            !util_json_put(e, "group", cJSON_CreateNumber(q)) ||
            !util_json_put(e, "devices", util_json_int_array(r->members + q * g, g)) ||
            !util_json_put(e, "regions", regs) || !util_json_put(e, "dp_s", util_json_num(r->group_dp_s[q])))
            goto done;
        for (i = 0; i < g; i++)
            if (!util_json_push(regs, util_json_str(
                                in->region_name[in->device_region[r->members[q * g + i]]])))
                goto done;
    }
    arr = cJSON_CreateArray();
    if (!util_json_put(doc, "edges", arr))
        goto done;
    for (j = 0; j + 1 < k; j++) {
        cJSON *pairs = cJSON_CreateArray();
        e = cJSON_CreateObject();
        if (!util_json_push(arr, e) || !util_json_put(e, "from_stage", cJSON_CreateNumber(j)) ||
            !util_json_put(e, "to_stage", cJSON_CreateNumber(j + 1)) ||
            !util_json_put(e, "cost_s", util_json_num(r->edge_s[j])) || !util_json_put(e, "matching", pairs))
            goto done;
        for (i = 0; i < g; i++) {
            int pr[2];
            pr[0] = r->members[r->order[j] * g + i];
            pr[1] = r->match[j * g + i];
            if (!util_json_push(pairs, util_json_int_array(pr, 2)))
                goto done;
        }
    }
    arr = cJSON_CreateArray();
    if (!util_json_put(doc, "chains", arr))
        goto done;
    for (i = 0; i < g; i++) {
        e = cJSON_CreateObject();
        if (!util_json_push(arr, e) || !util_json_put(e, "micro_batch_group", cJSON_CreateNumber(i)) ||
            !util_json_put(e, "devices", util_json_int_array(r->chain + i * k, k)))
            goto done;
    }
    text = cJSON_Print(doc);
done:
    cJSON_Delete(doc);
    return text;
}

/* ---- table ----------------------------------------------------------- */

char *dtfm_to_table(const dtfm_meta *meta, const dtfm_input *in,
                    const dtfm_result *r)
{
    util_buf b;
    int i, j, k = r->k, g = r->g;

    memset(&b, 0, sizeof b);
    util_buf_printf(&b, "decentralized schedule of '%s': %d devices, d_pp %d, d_dp %d, "
              "searcher %s, seed %llu, convention %s\n", in->name, in->prob.n,
              k, g, meta->searcher ? meta->searcher : "", meta->seed,
              dtfm_convention_name(in->convention));
    util_buf_printf(&b, "cost %.4f s = data-parallel %.4f s + pipeline %.4f s",
              r->total_s, r->dp_s, r->pp_s);
    if (in->prob.compute)
        util_buf_printf(&b, " + compute %.4f s", r->compute_s);
    util_buf_printf(&b, "%s\n\n", r->tsp_exact ? "" : " (pipeline order by heuristic)");
    util_buf_printf(&b, "stage  dp (s)  next edge (s)  devices\n");
    for (j = 0; j < k; j++) {
        int q = r->order[j];
        util_buf_printf(&b, "%5d %7.3f ", j, r->group_dp_s[q]);
        if (j + 1 < k)
            util_buf_printf(&b, "%14.3f ", r->edge_s[j]);
        else
            util_buf_printf(&b, "%14s ", "-");
        for (i = 0; i < g; i++) {
            int d = r->members[q * g + i];
            util_buf_printf(&b, "%s%d", i ? " " : " ", d);
            if (in->nregions > 1)
                util_buf_printf(&b, "(%s)", in->region_name[in->device_region[d]]);
            if (i == 7 && g > 8) {
                util_buf_printf(&b, " ... (%d more)", g - 8);
                break;
            }
        }
        util_buf_printf(&b, "\n");
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
