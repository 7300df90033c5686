/* plan/output.c: SHA-256 of input files and the plan JSON document
 * (docs/plan-format.md); the human table is in plan/table.c. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "plan.h"
#include "internal.h"

/* ---- JSON helpers ---------------------------------------------------- */

static double gib(double bytes)
{
    return bytes / 1073741824.0;
}

/* GiB rounded to 3 decimals. */
static double gib3(double bytes)
{
    return round(gib(bytes) * 1000.0) / 1000.0;
}

static const char *sched_name(int schedule)
{
    return schedule == FMT_SCHED_GPIPE ? "gpipe" : "1f1b";
}

/* Number, or null when the array is missing or i out of range. */
static int put_opt(cJSON *obj, const char *key, const double *a, int i,
                   int len)
{
    if (a == NULL || i < 0 || i >= len)
        return util_json_put_null(obj, key);
    return util_json_put_num(obj, key, a[i]);
}

/* ---- JSON sections --------------------------------------------------- */

/* The path as given and as an absolute path (so that plan/read.c finds
 * the input from any directory), and the SHA-256 of its bytes. */
static cJSON *input_json(const char *path, const char *digest)
{
    cJSON *o = cJSON_CreateObject();
    char cwd[2048], abs[4096];
    int ok = o != NULL && util_json_put_str(o, "path", path);

    abs[0] = '\0';
    if (path != NULL && path[0] == '/')
        snprintf(abs, sizeof abs, "%s", path);
    else if (path != NULL && getcwd(cwd, sizeof cwd) != NULL)
        snprintf(abs, sizeof abs, "%s/%s", cwd, path);
    if (ok && abs[0] != '\0')
        ok = util_json_put_str(o, "absolute_path", abs);
    return util_json_finish(o, ok && util_json_put_str(o, "sha256", digest));
}

/* The profile input; an AMP profiles.json also records its model key. */
static cJSON *profile_json(const plan_meta *meta)
{
    cJSON *o = input_json(meta->profile_path, meta->profile_digest);

    if (o == NULL || meta->profile_amp_key == NULL)
        return o;
    return util_json_finish(o, util_json_put_str(o, "format", "amp") &&
                         util_json_put_str(o, "key", meta->profile_amp_key));
}

/* Every settable cost-model parameter by its --param name, so that a
 * plan read back (plan_load_plan) gets exactly these values. */
static cJSON *params_json(const cost_params *p)
{
    cJSON *o;
    const char *name;
    double v;
    int i, ok = 1;

    if (p == NULL)
        return cJSON_CreateNull();
    o = cJSON_CreateObject();
    for (i = 0; o != NULL && ok && (name = cost_params_name(i)) != NULL; i++) {
        if (cost_params_get(p, name, &v) != UTIL_OK)
            continue;
        if (strcmp(name, "schedule") == 0)
            ok = util_json_put_str(o, name, sched_name((int)v));
        else if (strcmp(name, "recompute") == 0)
            ok = util_json_put_str(o, name, fmt_recompute_name((int)v));
        else
            ok = util_json_put_num(o, name, v);
    }
    return util_json_finish(o, o != NULL && ok);
}

static const char *precision_name(const fmt_model *m)
{
    if (m->dtype_bytes == 4)
        return "fp32";
    return m->bf16 ? "bf16" : "fp16";
}

/* settings.launcher: {"target", "version"} */
static cJSON *launcher_json(const plan_meta *meta)
{
    cJSON *o = cJSON_CreateObject();

    return util_json_finish(o, o != NULL &&
                         util_json_put_str(o, "target", meta->launcher) &&
                         util_json_put_str(o, "version", meta->launcher_version
                                                             ? meta->launcher_version : ""));
}

static cJSON *settings_json(const plan_meta *meta, const fmt_model *m,
                            const cost_params *p, const fmt_strategy *s,
                            int n)
{
    cJSON *o = cJSON_CreateObject();
    int sched = p ? p->schedule : (n > 0 ? s[0].schedule : FMT_SCHED_1F1B);

    return util_json_finish(o, o != NULL &&
                         util_json_put_num(o, "global_batch", meta->global_batch) &&
                         util_json_put_str(o, "method", meta->method) &&
                         util_json_put_str(o, "schedule", sched_name(sched)) &&
                         util_json_put_str(o, "precision", precision_name(m)) &&
                         util_json_put_str(o, "fidelity",
                                 p ? cost_fidelity_name(p->fidelity) : NULL) &&
                         util_json_put(o, "cost_params", params_json(p)) &&
                         (meta->requested_batch <= 0 ||
                          meta->requested_batch == meta->global_batch ||
                          (util_json_put_num(o, "requested_global_batch",
                                             meta->requested_batch) &&
                           util_json_put_str(o, "batch_note", meta->batch_note))) &&
                         (meta->requested_precision == NULL ||
                          (util_json_put_str(o, "requested_precision",
                                             meta->requested_precision) &&
                           util_json_put_str(o, "precision_note",
                                             meta->precision_note))) &&
                         (meta->launcher == NULL ||
                          util_json_put(o, "launcher", launcher_json(meta))));
}

/* search.batch_advice: a nearby batch that trains faster per sample. */
static cJSON *advice_json(const plan_meta *meta)
{
    cJSON *o = cJSON_CreateObject();

    return util_json_finish(o, o != NULL &&
                         util_json_put_num(o, "global_batch", meta->advice_batch) &&
                         util_json_put_num(o, "speedup", meta->advice_speedup));
}

static cJSON *search_json(const plan_meta *meta)
{
    cJSON *o = cJSON_CreateObject();

    return util_json_finish(o, o != NULL &&
                         util_json_put_num(o, "evaluated", (double)meta->evaluated) &&
                         util_json_put_num(o, "rejected_memory",
                                 (double)meta->rejected_memory) &&
                         util_json_put_num(o, "elapsed_s", meta->elapsed_s) &&
                         (meta->objective == NULL || /* search_plan_devices */
                          (util_json_put_str(o, "objective", meta->objective) &&
                           util_json_put_num(o, "memory_headroom", meta->memory_headroom) &&
                           util_json_put_num(o, "device_subsets", meta->subsets) &&
                           util_json_put_num(o, "anneal_moves", (double)meta->anneal_moves) &&
                           util_json_put_num(o, "seed", (double)meta->seed))) &&
                         (meta->advice_batch <= 0 ||
                          util_json_put(o, "batch_advice", advice_json(meta))) &&
                         util_json_put_str(o, "status", meta->timed_out
                                                ? "time-limit" : "complete") &&
                         (meta->time_limit_s <= 0.0 ||
                          util_json_put_num(o, "time_limit_s", meta->time_limit_s)));
}

static const char *type_name(const fmt_cluster *c, int node)
{
    int t = c->nodes[node].type;

    return t >= 0 && t < c->ntypes ? c->types[t].name : NULL;
}

static cJSON *cluster_json(const fmt_cluster *c)
{
    cJSON *o = cJSON_CreateObject(), *nodes = NULL, *nd = NULL;
    int i, ok = 0;

    if (o == NULL || !util_json_put_str(o, "name", c->name) ||
        !util_json_put_num(o, "devices", c->ndevices))
        goto done;
    nodes = cJSON_CreateArray();
    if (!util_json_put(o, "nodes", nodes))
        goto done;
    for (i = 0; i < c->nnodes; i++) {
        nd = cJSON_CreateObject();
        if (!util_json_push(nodes, nd))
            goto done;
        if (!util_json_put_str(nd, "name", c->nodes[i].name) ||
            !util_json_put_str(nd, "device_type", type_name(c, i)) ||
            !util_json_put_num(nd, "gpus", c->nodes[i].gpus) ||
            !util_json_put_str(nd, "region", c->nodes[i].region))
            goto done;
    }
    ok = 1;
done:
    return util_json_finish(o, ok);
}

static cJSON *model_json(const fmt_model *m)
{
    cJSON *o = cJSON_CreateObject();

    return util_json_finish(o, o != NULL && util_json_put_str(o, "name", m->name) &&
                         util_json_put_num(o, "layers", m->nlayers) &&
                         util_json_put_num(o, "params", fmt_model_params(m, NULL)));
}

static cJSON *breakdown_json(const cost_breakdown *bd)
{
    cJSON *o = cJSON_CreateObject();

    return util_json_finish(o, o != NULL &&
                         util_json_put_num(o, "compute_s", bd->compute) &&
                         util_json_put_num(o, "tp_allreduce_s", bd->tp_comm) &&
                         util_json_put_num(o, "pipeline_bubble_s", bd->bubble) &&
                         util_json_put_num(o, "p2p_s", bd->p2p) &&
                         util_json_put_num(o, "dp_allreduce_s", bd->dp_comm) &&
                         util_json_put_num(o, "optimizer_s", bd->optimizer) &&
                         util_json_put_num(o, "total_s", bd->total));
}

/* One entry of "stages". */
static cJSON *stage_json(const fmt_model *m, const fmt_strategy *s,
                         const cost_result *r, int j)
{
    cJSON *o = cJSON_CreateObject(), *names = NULL, *ranks = NULL;
    int per = s->tp * s->dp, a = 0, b = 0, l, k, ok = 0;

    if (o == NULL)
        return NULL;
    if (s->bounds != NULL) {
        a = s->bounds[j];
        b = s->bounds[j + 1];
    }
    if (!util_json_put_num(o, "index", j))
        goto done;
    if (s->bounds == NULL) {
        if (!util_json_put_null(o, "layers") || !util_json_put_null(o, "layer_names"))
            goto done;
    } else {
        int ab[2];
        ab[0] = a;
        ab[1] = b;
        if (!util_json_put(o, "layers", util_json_int_array(ab, 2)))
            goto done;
        names = cJSON_CreateArray();
        if (!util_json_put(o, "layer_names", names))
            goto done;
        for (l = a; l < b; l++)
            if (!util_json_push(names, l >= 0 && l < m->nlayers
                                 ? cJSON_CreateString(m->layers[l].name)
                                 : cJSON_CreateNull()))
                goto done;
    }
    if (!put_opt(o, "time_per_microbatch_s", r->stage_s, j, r->pp) ||
        !put_opt(o, "p2p_to_next_s", r->p2p_s, j,
                 (s->pp < r->pp ? s->pp : r->pp) - 1))
        goto done;
    ranks = cJSON_CreateArray();
    if (!util_json_put(o, "ranks", ranks))
        goto done;
    for (k = 0; k < per; k++)
        if (!util_json_push(ranks, util_json_num(j * per + k)))
            goto done;
    ok = 1;
done:
    return util_json_finish(o, ok);
}

/* "key": value pairs of one entry of "ranks", as text. */
static void text_key(util_buf *b, const char *key)
{
    util_buf_add(b, ", \"", 3);
    util_buf_add(b, key, strlen(key));
    util_buf_add(b, "\": ", 3);
}

static void text_num(util_buf *b, const char *key, double v)
{
    text_key(b, key);
    util_json_buf_num(b, v);
}

static void text_str(util_buf *b, const char *key, const char *v)
{
    text_key(b, key);
    util_json_buf_str(b, v);
}

/* One entry of "ranks" (an object on a line of its own), appended to b;
 * tracks peak and least headroom.  The entries are written as text: a
 * plan of 10^5 ranks would hold 10^6 small cJSON items otherwise. */
static void rank_text(util_buf *b, const fmt_cluster *c, const fmt_strategy *s,
                      const cost_result *r, int rank, double *peak,
                      double *least)
{
    int dev = s->ranks ? s->ranks[rank] : -1;
    int node = dev >= 0 && dev < c->ndevices && c->device_node
                   ? c->device_node[dev] : -1;
    int has_mem = r->mem_bytes != NULL && rank < r->nranks;
    int has_cap = r->mem_cap != NULL && rank < r->nranks;
    double nan = NAN; /* written as null */

    util_buf_add(b, rank ? ",\n\t\t\t\t{\"rank\": " : "\n\t\t\t\t{\"rank\": ",
                 rank ? 15 : 14);
    util_json_buf_num(b, rank);
    text_num(b, "device", dev >= 0 ? dev : nan);
    if (node >= 0 && node < c->nnodes) {
        text_str(b, "node", c->nodes[node].name);
        text_num(b, "gpu", dev - c->nodes[node].first_device);
        text_str(b, "device_type", type_name(c, node));
    } else {
        text_num(b, "node", nan);
        text_num(b, "gpu", nan);
        text_num(b, "device_type", nan);
    }
    text_num(b, "stage", rank / (s->tp * s->dp));
    text_num(b, "dp_index", (rank / s->tp) % s->dp);
    text_num(b, "tp_index", rank % s->tp);
    if (s->tp_heads != NULL && s->tp_cols != NULL) { /* uneven shards */
        text_num(b, "heads", s->tp_heads[rank]);
        text_num(b, "mlp_cols", s->tp_cols[rank]);
    }
    text_num(b, "memory_gib", has_mem ? gib3(r->mem_bytes[rank]) : nan);
    text_num(b, "capacity_gib", has_cap ? gib3(r->mem_cap[rank]) : nan);
    if (has_mem && has_cap) {
        double head = r->mem_cap[rank] - r->mem_bytes[rank];
        text_num(b, "headroom_gib", gib3(head));
        if (head < *least)
            *least = head;
    } else {
        text_num(b, "headroom_gib", nan);
    }
    util_buf_add(b, "}", 1);
    if (has_mem && r->mem_bytes[rank] > *peak)
        *peak = r->mem_bytes[rank];
}

/* The "ranks" array of s as one raw item (NULL when out of memory). */
static cJSON *ranks_json(const fmt_cluster *c, const fmt_strategy *s,
                         const cost_result *r, int nranks, double *peak,
                         double *least)
{
    util_buf b = {0};
    cJSON *item;
    int j;

    util_buf_add(&b, "[", 1);
    for (j = 0; j < nranks; j++)
        rank_text(&b, c, s, r, j, peak, least);
    util_buf_add(&b, "]", 1);
    item = b.failed ? NULL : cJSON_CreateRaw(b.p);
    free(b.p);
    return item;
}

/* Simulated events of one iteration (docs/simulator.md), or NULL when
 * there are more than PLAN_TIMELINE_MAX (the plan stays small). */
#define PLAN_TIMELINE_MAX 20000
static cJSON *timeline_json(const cost_timeline *t)
{
    cJSON *arr = cJSON_CreateArray(), *e;
    int i;

    if (arr == NULL)
        return NULL;
    for (i = 0; i < t->nevents; i++) {
        const cost_event *ev = &t->events[i];
        e = cJSON_CreateObject();
        if (!util_json_push(arr, e) || !util_json_put_str(e, "kind", cost_event_name(ev->kind)) ||
            !util_json_put_num(e, "stage", ev->stage) || !util_json_put_num(e, "replica", ev->replica) ||
            !util_json_put_num(e, "micro", ev->micro) || !util_json_put_num(e, "start_s", ev->start) ||
            !util_json_put_num(e, "end_s", ev->end) ||
            (t->vpp > 1 && ev->micro >= 0 && !util_json_put_num(e, "chunk", ev->chunk))) {
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static const char layer_note[] =
    "estimated times come from FLOPs and memory traffic at the device's "
    "peak with compute_eff/memory_eff (docs/cost-model.md)";

int plan_runnable_reason(const fmt_model *m, const fmt_strategy *s,
                         const cost_result *r, char *buf, size_t n)
{
    int es = cost_empty_stage(m, s), w = r->worst_rank, len = 0;

    buf[0] = '\0';
    if (es >= 0) {
        int a = s->bounds[es], b = s->bounds[es + 1];
        len = snprintf(buf, n, "stage %d (layers %d-%d: '%s'%s) holds no "
                       "parameters: DeepSpeed and Megatron build one optimizer "
                       "per stage and torch.optim refuses an empty parameter list",
                       es, a, b - 1, a >= 0 && a < b && a < m->nlayers
                                         ? m->layers[a].name : "none",
                       b - a > 1 ? ", ..." : "");
    }
    if (!r->fits && len >= 0 && (size_t)len < n && r->host_node >= 0 &&
        r->host_bytes > r->host_cap) {
        snprintf(buf + len, n - (size_t)len,
                 "%sdoes not fit host memory: the optimizer state offloaded to "
                 "node %d needs %.2f GiB, the node has %.2f GiB",
                 len > 0 ? "; " : "", r->host_node, gib(r->host_bytes),
                 gib(r->host_cap));
    } else if (!r->fits && len >= 0 && (size_t)len < n) {
        if (r->mem_bytes != NULL && r->mem_cap != NULL && w >= 0 && w < r->nranks)
            snprintf(buf + len, n - (size_t)len,
                     "%sdoes not fit memory: rank %d needs %.2f GiB, its device "
                     "has %.2f GiB", len > 0 ? "; " : "", w, gib(r->mem_bytes[w]),
                     gib(r->mem_cap[w]));
        else
            snprintf(buf + len, n - (size_t)len, "%sdoes not fit memory",
                     len > 0 ? "; " : "");
    }
    return r->fits && es < 0;
}

/* The strategy's training features, resolved against p's defaults. */
static int features_put(cJSON *o, const fmt_cluster *c, const fmt_model *m,
                        const cost_params *p, const fmt_strategy *s)
{
    cost_params dflt;

    if (p == NULL) {
        cost_params_init(&dflt);
        p = &dflt;
    }
    return util_json_put_num(o, "vpp", s->vpp > 1 ? s->vpp : 1) &&
           util_json_put_bool(o, "sequence_parallel", s->sp != 0) &&
           util_json_put_str(o, "recompute",
                             fmt_recompute_name(cost_strategy_recompute(p, s))) &&
           util_json_put_num(o, "zero", cost_strategy_zero(p, s)) &&
           util_json_put_str(o, "offload",
                             fmt_offload_name(cost_strategy_offload(p, s))) &&
           util_json_put_bool(o, "overlap_grad",
                              cost_strategy_overlap(p, s, COST_OVERLAP_GRAD)) &&
           util_json_put_bool(o, "overlap_param",
                              cost_strategy_overlap(p, s, COST_OVERLAP_PARAM)) &&
           /* as the cost model ran it: where every TP group can */
           util_json_put_bool(o, "overlap_tp",
                              cost_strategy_overlap(p, s, COST_OVERLAP_TP) &&
                                  (c == NULL || cost_overlap_tp_hardware(c, m, s))) &&
           util_json_put_bool(o, "overlap_p2p",
                              cost_strategy_overlap(p, s, COST_OVERLAP_P2P));
}

static cJSON *strategy_json(const plan_meta *meta, const fmt_cluster *c,
                            const fmt_model *m, const cost_params *p,
                            const fmt_strategy *s, const cost_result *r,
                            int idx)
{
    cJSON *o = cJSON_CreateObject(), *arr, *mem, *lt;
    int nranks = s->tp * s->dp * s->pp, j, ok = 0;
    double peak = -HUGE_VAL, least = HUGE_VAL;

    if (o == NULL)
        return NULL;
    if (s->tp < 1 || s->dp < 1 || s->pp < 1)
        goto done; /* invalid degrees: no plan */
    if (!util_json_put_num(o, "rank", idx + 1) || !util_json_put_num(o, "tp", s->tp) ||
        !util_json_put_num(o, "dp", s->dp) || !util_json_put_num(o, "pp", s->pp) ||
        !util_json_put_num(o, "mbs", s->mbs) || !util_json_put_num(o, "micro_batches", s->gas) ||
        !util_json_put_str(o, "schedule", sched_name(s->schedule)) ||
        !features_put(o, c, m, p, s) ||
        !util_json_put_str(o, "placement", s->placement) ||
        !util_json_put_num(o, "predicted_s", r->iter_s) ||
        !(r->iter_s > 0.0
              ? util_json_put_num(o, "samples_per_s", meta->global_batch / r->iter_s)
              : util_json_put_null(o, "samples_per_s")) ||
        !util_json_put(o, "breakdown", breakdown_json(&r->bd)) ||
        !util_json_put(o, "stage_boundaries", util_json_int_array(s->bounds, s->pp + 1)) ||
        !util_json_put(o, "idle", plan_idle_json(c, s, meta->idle_reasons
                                                   ? meta->idle_reasons[idx] : NULL)))
        goto done;
    if (c->price != NULL) { /* what an iteration costs on the devices it uses */
        double ph = search_price_per_hour(c, s);
        if (!(ph >= 0.0 ? util_json_put_num(o, "price_per_hour", ph)
                        : util_json_put_null(o, "price_per_hour")) ||
            !(ph >= 0.0 ? util_json_put_num(o, "price_per_iteration", ph * r->iter_s / 3600.0)
                        : util_json_put_null(o, "price_per_iteration")))
            goto done;
    }
    arr = cJSON_CreateArray();
    if (!util_json_put(o, "stages", arr))
        goto done;
    for (j = 0; j < s->pp; j++)
        if (!util_json_push(arr, stage_json(m, s, r, j)))
            goto done;
    if (!util_json_put(o, "ranks", ranks_json(c, s, r, nranks, &peak, &least)))
        goto done;
    mem = cJSON_CreateObject();
    if (!util_json_put(o, "memory", mem) || !util_json_put_bool(mem, "fits", r->fits) ||
        !(peak > -HUGE_VAL ? util_json_put_num(mem, "peak_gib", gib3(peak))
                           : util_json_put_null(mem, "peak_gib")) ||
        !(least < HUGE_VAL ? util_json_put_num(mem, "min_headroom_gib", gib3(least))
                           : util_json_put_null(mem, "min_headroom_gib")) ||
        !util_json_put_num(mem, "worst_rank", r->worst_rank))
        goto done;
    if (r->host_node >= 0 && /* offloaded optimizer state, fullest node */
        (!util_json_put_num(mem, "host_gib", gib3(r->host_bytes)) ||
         !util_json_put_num(mem, "host_capacity_gib", gib3(r->host_cap)) ||
         !util_json_put_str(mem, "host_node", c->nodes[r->host_node].name)))
        goto done;
    { /* verdict of memory and of the empty-stage rule */
        char why[512];
        int es = cost_empty_stage(m, s), run = plan_runnable_reason(m, s, r, why, sizeof why);
        if (!util_json_put_bool(o, "runnable", run) ||
            !(es >= 0 ? util_json_put_num(o, "empty_stage", es) : util_json_put_null(o, "empty_stage")) ||
            !(run ? util_json_put_null(o, "reason") : util_json_put_str(o, "reason", why)))
            goto done;
    }
    lt = cJSON_CreateObject();
    if (!util_json_put(o, "layer_times", lt) || !util_json_put_num(lt, "measured", r->measured) ||
        !util_json_put_num(lt, "estimated", r->estimated) ||
        (r->estimated > 0 && !util_json_put_str(lt, "note", layer_note)))
        goto done;
    if (idx == 0 && meta->timeline != NULL &&
        meta->timeline->nevents <= PLAN_TIMELINE_MAX &&
        !util_json_put(o, "timeline", timeline_json(meta->timeline)))
        goto done;
    ok = 1;
done:
    return util_json_finish(o, ok);
}

char *plan_to_json(const plan_meta *meta, const fmt_cluster *c,
                   const fmt_model *m, const cost_params *p,
                   const fmt_strategy *s, const cost_result *r, int n)
{
    cJSON *doc = NULL, *o, *arr;
    char *text = NULL;
    int i;

    if (meta == NULL || c == NULL || m == NULL || n < 0 ||
        (n > 0 && (s == NULL || r == NULL)))
        return NULL;
    doc = cJSON_CreateObject();
    if (doc == NULL)
        goto done;
    if (!util_json_put_str(doc, "schema", PLAN_SCHEMA))
        goto done;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "planner", o) || !util_json_put_str(o, "name", "hetplan") ||
        !util_json_put_str(o, "version", HETPLAN_VERSION))
        goto done;
    o = cJSON_CreateObject();
    if (!util_json_put(doc, "inputs", o) ||
        !util_json_put(o, "cluster",
             input_json(meta->cluster_path, meta->cluster_digest)) ||
        !util_json_put(o, "model", input_json(meta->model_path, meta->model_digest)) ||
        !util_json_put(o, "profile",
             meta->profile_path
                 ? profile_json(meta)
                 : cJSON_CreateNull()))
        goto done;
    if (!util_json_put(doc, "settings", settings_json(meta, m, p, s, n)) ||
        !util_json_put(doc, "search", search_json(meta)) ||
        !util_json_put(doc, "cluster", cluster_json(c)) ||
        !util_json_put(doc, "model", model_json(m)))
        goto done;
    arr = cJSON_CreateArray();
    if (!util_json_put(doc, "strategies", arr))
        goto done;
    for (i = 0; i < n; i++)
        if (!util_json_push(arr, strategy_json(meta, c, m, p, &s[i], &r[i], i)))
            goto done;
    text = cJSON_Print(doc);
done:
    cJSON_Delete(doc);
    return text;
}
