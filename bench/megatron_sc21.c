/* bench/megatron_sc21.c: the analytic time model at scale, on the ten
 * weak-scaling GPT runs of Megatron-LM SC'21, Table 1 (32 to 3072 A100
 * 80GB GPUs, ../shared/data/megatron-sc21/runs.json), or on any runs.json
 * in that layout.  Cluster, model and strategy of each run are built in
 * memory from the file's "hardware" (a catalogue device, GPUs per node,
 * link rates: DGX A100 80GB when absent) and each run's model, degrees,
 * training and features; no profile.  A feature the evaluation does not
 * model is named in the run's object and on stderr; a run that cannot be
 * evaluated is left out of the scores with its reason (exit status 1).
 * Usage: megatron-sc21 [DATA_DIR]   (default ../shared/data/megatron-sc21).
 * Prints one JSON object on stdout and a summary line on stderr; when the
 * data folder is absent the object says it was skipped (exit status 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "plan.h"
#include "calibrate.h"
#include "bench_data.h"
#include "export.h"

#define MAX_RUNS 256

/* The machine of the runs ("hardware" of runs.json). */
typedef struct mega_hw {
    const char *device;     /* catalogue name */
    int gpus_per_node;
    double intra_gbps;      /* per GPU and direction inside a node */
    double nic_gbps;        /* per node */
} mega_hw;

/* DGX link rates when the file gives none, per direction: DGX A100,
 * NVLink 3 + NVSwitch 600 GB/s per GPU counting both directions (300 GB/s
 * = 2400 Gbit/s each way, the rate a ring step sends at) and 8 x 200
 * Gbit/s HDR InfiniBand (one HCA per GPU); DGX H100 and H200, NVLink 4
 * 900 GB/s (3600 Gbit/s each way) and 8 x 400 Gbit/s NDR (DGX A100 and
 * DGX H100 user guides). */
static const struct {
    const char *device;
    double intra_gbps, nic_gbps;
} dgx_links[] = {
    {"A100-80GB", 2400, 8 * 200},
    {"A100-40GB", 2400, 8 * 200},
    {"H100-SXM", 3600, 8 * 400},
    {"H200", 3600, 8 * 400},
};

/* Features of runs.json the evaluation models; any other is reported. */
static const char *const modelled_features[] = {
    "recompute_full",       /* training.recompute (full recomputation) */
    "recompute_selective",  /* selective recomputation */
    "interleaved_schedule", /* parallel.virtual_stages */
    "scatter_gather_p2p",   /* pipeline sends split over TP (the default) */
    "ddp_overlap_backward", /* gradient buckets reduced during the backward */
    "sequence_parallel",    /* Megatron sequence parallelism */
    "distributed_optimizer",/* optimizer state sharded over DP (ZeRO-1) */
    "flash_attention",      /* fused attention keeps no s x s scores */
    "overlap_p2p",          /* pipeline exchanges overlapped with compute */
    "grad_accum_fusion",    /* weight gradients accumulated in the GEMM */
    NULL,
};

/* One run of runs.json. */
typedef struct mega_run {
    const char *name, *precision, *recompute;
    const char *family;     /* model.family, NULL = gpt3 */
    int ffn, kv_heads;      /* model.ffn and model.kv_heads, 0 = the family's */
    double params_billion, measured_s;
    int layers, hidden, heads, seq, vocab;
    int tp, pp, dp, gpus, nodes, global_batch, micro_batch, virtual_stages;
    const cJSON *features;
} mega_run;

/* The hardware every run of the file ran on (main reads it first). */
static const mega_hw *hw_of_runs;

/* The file's "hardware" into *hw: the device (a catalogue name, "A100-SXM
 * 80GB" spellings accepted), gpus_per_node (8), intra_gbps and nic_gbps
 * (numbers, else the DGX rates of the device); DGX A100 80GB without it. */
static int read_hw(const cJSON *root, const char *path, mega_hw *hw,
                   util_error *err)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "hardware");
    const cJSON *v;
    const char *dev = bench_str(h, "device");
    const fmt_device_type *dt = fmt_catalog_find(dev != NULL ? dev : "A100-80GB");
    size_t i;

    memset(hw, 0, sizeof *hw);
    if (dt == NULL)
        return util_error_set(err, UTIL_EFIELD, path, "hardware.device",
                              "'%s' is not in the device catalogue", dev);
    hw->device = dt->name;
    hw->gpus_per_node = 8;
    v = cJSON_GetObjectItemCaseSensitive(h, "gpus_per_node");
    if (v != NULL && bench_int(h, "gpus_per_node", path, &hw->gpus_per_node, err) != UTIL_OK)
        return err->code;
    if (hw->gpus_per_node < 1)
        return util_error_set(err, UTIL_EFIELD, path, "hardware.gpus_per_node",
                              "expected a positive integer");
    for (i = 0; i < sizeof dgx_links / sizeof dgx_links[0]; i++)
        if (strcmp(dgx_links[i].device, hw->device) == 0) {
            hw->intra_gbps = dgx_links[i].intra_gbps;
            hw->nic_gbps = dgx_links[i].nic_gbps;
        }
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(h, "intra_gbps")))
        hw->intra_gbps = cJSON_GetObjectItemCaseSensitive(h, "intra_gbps")->valuedouble;
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(h, "nic_gbps")))
        hw->nic_gbps = cJSON_GetObjectItemCaseSensitive(h, "nic_gbps")->valuedouble;
    if (!(hw->intra_gbps > 0.0) || !(hw->nic_gbps > 0.0) ||
        !isfinite(hw->intra_gbps) || !isfinite(hw->nic_gbps))
        return util_error_set(err, UTIL_EFIELD, path, "hardware",
                              "'intra_gbps' and 'nic_gbps' (positive numbers) "
                              "are needed for '%s' nodes: the DGX rates are "
                              "known for A100 and H100/H200 only", hw->device);
    return UTIL_OK;
}

static int read_run(const cJSON *x, const char *where, mega_run *r,
                    util_error *err)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(x, "model");
    const cJSON *pa = cJSON_GetObjectItemCaseSensitive(x, "parallel");
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(x, "training");
    const cJSON *me = cJSON_GetObjectItemCaseSensitive(x, "measured");
    const bench_field f[] = {
        {md, "params_billion", NULL, &r->params_billion},
        {md, "layers", &r->layers, NULL}, {md, "hidden", &r->hidden, NULL},
        {md, "heads", &r->heads, NULL},   {md, "seq", &r->seq, NULL},
        {md, "vocab", &r->vocab, NULL},   {pa, "tp", &r->tp, NULL},
        {pa, "pp", &r->pp, NULL},         {pa, "dp", &r->dp, NULL},
        {pa, "gpus", &r->gpus, NULL},     {pa, "nodes", &r->nodes, NULL},
        {pa, "global_batch", &r->global_batch, NULL},
        {pa, "micro_batch", &r->micro_batch, NULL},
        {pa, "virtual_stages", &r->virtual_stages, NULL},
        {me, "iteration_time_s", NULL, &r->measured_s},
    };
    const mega_hw *hw = hw_of_runs;
    int rc;

    memset(r, 0, sizeof *r);
    r->family = bench_str(md, "family");
    if (cJSON_GetObjectItemCaseSensitive(md, "ffn") != NULL &&
        bench_int(md, "ffn", where, &r->ffn, err) != UTIL_OK)
        return err->code;
    if (cJSON_GetObjectItemCaseSensitive(md, "kv_heads") != NULL &&
        bench_int(md, "kv_heads", where, &r->kv_heads, err) != UTIL_OK)
        return err->code;
    r->name = bench_str(x, "name");
    r->precision = bench_str(tr, "precision");
    r->recompute = bench_str(tr, "recompute");
    r->features = cJSON_GetObjectItemCaseSensitive(x, "features");
    if (r->name == NULL || r->precision == NULL)
        return util_error_set(err, UTIL_EFIELD, where, "name",
                              "expected strings 'name' and 'training.precision'");
    rc = bench_fields(f, sizeof f / sizeof f[0], where, err);
    if (rc == UTIL_OK && (r->gpus % hw->gpus_per_node != 0 ||
                          r->gpus / hw->gpus_per_node != r->nodes ||
                          r->tp * r->pp * r->dp != r->gpus ||
                          r->pp < 1 || r->layers % r->pp != 0))
        rc = util_error_set(err, UTIL_EFIELD, where, "parallel",
                            "expected gpus = tp*pp*dp = %d * nodes and layers "
                            "divisible by pp", hw->gpus_per_node);
    if (rc == UTIL_OK && r->features != NULL && !cJSON_IsArray(r->features))
        rc = util_error_set(err, UTIL_EFIELD, where, "features",
                            "expected an array of strings");
    return rc;
}

/* `nodes` nodes of the hardware, through the cluster reader (its default
 * latencies: the data states none). */
static int dgx_cluster(const mega_hw *hw, int nodes, fmt_cluster *c,
                       util_error *err)
{
    util_buf b = {0};
    char *text;
    int i, rc;

    util_buf_printf(&b, "{\"name\": \"nodes-x%d\", \"nodes\": [", nodes);
    for (i = 0; i < nodes; i++)
        util_buf_printf(&b, "%s{\"name\": \"node%d\", \"device\": \"%s\", "
                        "\"gpus\": %d, \"intra_gbps\": %.17g, \"nic_gbps\": %.17g}",
                        i ? ", " : "", i, hw->device, hw->gpus_per_node,
                        hw->intra_gbps, hw->nic_gbps);
    util_buf_printf(&b, "]}");
    text = util_buf_take(&b);
    if (text == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    rc = fmt_parse_cluster(text, "hardware", c, err);
    free(text);
    return rc;
}

/* 1 when the run lists feature name. */
static int has_feature(const mega_run *r, const char *name)
{
    const cJSON *f;

    cJSON_ArrayForEach(f, r->features)
        if (cJSON_IsString(f) && strcmp(f->valuestring, name) == 0)
            return 1;
    return 0;
}

/* The run's model: the family's transformer (Megatron's GPT, "gpt3",
 * when model.family is absent) with model.ffn and model.kv_heads where
 * given, in the run's precision. */
static int gpt_model(const mega_run *r, fmt_model *m, util_error *err)
{
    fmt_transformer_spec sp;
    int rc;

    memset(&sp, 0, sizeof sp);
    memset(m, 0, sizeof *m);
    snprintf(sp.name, sizeof sp.name, "%s", r->name);
    snprintf(sp.family, sizeof sp.family, "%s", r->family != NULL ? r->family : "gpt3");
    sp.blocks = r->layers;
    sp.hidden = r->hidden;
    sp.heads = r->heads;
    sp.seq = r->seq;
    sp.vocab = r->vocab;
    sp.ffn = r->ffn;
    sp.kv_heads = r->kv_heads;
    sp.tied_embeddings = -1; /* the family's: tied for Megatron's GPT */
    m->global_batch = r->global_batch;
    rc = fmt_model_from_transformer(&sp, m, err);
    if (rc == UTIL_OK)
        rc = fmt_model_set_precision(m, fmt_precision_from_name(r->precision), err);
    /* Megatron-LM of 2021: scores in memory, fused scale-mask-softmax
       (flash attention came later; a run that lists it uses it), dropout
       on the attention probabilities (--attention-dropout, default 0.1) */
    m->attention = has_feature(r, "flash_attention") ? FMT_ATTN_FLASH : FMT_ATTN_EAGER;
    m->attn_dropout = FMT_FLAG_ON;
    return rc;
}

/* Parameters of m as hetplan's plans report them (tied weights once):
 * model.params of an empty plan document; -1 when unavailable. */
static double plan_params(const fmt_cluster *c, const fmt_model *m,
                          const cost_params *cp)
{
    plan_meta meta;
    char *text;
    cJSON *doc;
    double v = -1.0;

    memset(&meta, 0, sizeof meta);
    meta.method = "evaluate";
    meta.global_batch = m->global_batch;
    text = plan_to_json(&meta, c, m, cp, NULL, NULL, 0);
    doc = text != NULL ? cJSON_Parse(text) : NULL;
    if (bench_num(cJSON_GetObjectItemCaseSensitive(doc, "model"), "params",
                  "plan", &v, NULL) != UTIL_OK)
        v = -1.0;
    cJSON_Delete(doc);
    free(text);
    return v;
}

/* Megatron's strategy: rank = tp_index + tp * dp_index + tp * dp * stage
 * on device rank (fmt_strategy's layout), layers / pp blocks a stage, the
 * embedding on the first stage, final norm and head on the last, 1F1B. */
static int mega_strategy(const fmt_cluster *c, const fmt_model *m,
                         const mega_run *r, fmt_strategy *s, util_error *err)
{
    int j, rc = fmt_strategy_alloc(s, r->tp, r->dp, r->pp);

    if (rc != UTIL_OK)
        return util_error_set(err, rc, NULL, NULL, "cannot allocate the strategy");
    s->mbs = r->micro_batch;
    s->gas = r->global_batch / (r->dp * r->micro_batch);
    s->schedule = FMT_SCHED_1F1B;
    s->vpp = r->virtual_stages > 1 ? r->virtual_stages : 1;
    s->recompute = r->recompute == NULL ? FMT_RECOMPUTE_NONE
                                        : fmt_recompute_from_name(r->recompute);
    if (s->recompute < 0)
        s->recompute = FMT_RECOMPUTE_NONE;
    if (has_feature(r, "recompute_selective"))
        s->recompute = FMT_RECOMPUTE_SELECTIVE;
    if (has_feature(r, "recompute_full"))
        s->recompute = FMT_RECOMPUTE_FULL;
    s->sp = r->tp > 1 && has_feature(r, "sequence_parallel");
    s->zero = has_feature(r, "distributed_optimizer") && r->dp > 1 ? 1 : 0;
    s->bounds[0] = 0;
    for (j = 1; j < r->pp; j++)
        s->bounds[j] = 1 + j * (r->layers / r->pp);
    s->bounds[r->pp] = m->nlayers;
    rc = search_place(c, SEARCH_PLACE_MEGATRON, s, err);
    if (rc == UTIL_OK)
        rc = fmt_strategy_check(c, m, s, r->global_batch, err);
    return rc;
}

/* The run's features as the evaluation states them. */
static void features_used(const mega_run *r, const fmt_model *m,
                          const fmt_strategy *s, const cost_params *cp,
                          cJSON *out)
{
    cJSON *x = cJSON_AddObjectToObject(out, "evaluated_with");

    cJSON_AddNumberToObject(x, "vpp", s->vpp);
    cJSON_AddStringToObject(x, "recompute", fmt_recompute_name(s->recompute));
    cJSON_AddBoolToObject(x, "overlap_grad_reduce", cp->overlap_grad_reduce);
    cJSON_AddBoolToObject(x, "p2p_scatter", cp->p2p_scatter);
    cJSON_AddBoolToObject(x, "overlap_p2p", cp->overlap_p2p);
    cJSON_AddNumberToObject(x, "optimizer_bytes", cost_optimizer_bytes(m, cp));
    cJSON_AddBoolToObject(x, "scatter_gather_listed",
                          has_feature(r, "scatter_gather_p2p"));
    cJSON_AddBoolToObject(x, "sequence_parallel", s->sp);
    cJSON_AddNumberToObject(x, "zero", s->zero);
    cJSON_AddStringToObject(x, "attention",
                            m->attention == FMT_ATTN_FLASH ? "flash" : "eager");
}

/* The run's features the evaluation does not model, into out and on
 * stderr: the prediction leaves them out. */
static void features_not_modelled(const mega_run *r, cJSON *out)
{
    cJSON *arr = cJSON_AddArrayToObject(out, "features_not_modelled");
    const cJSON *f;
    int k;

    cJSON_ArrayForEach(f, r->features)
    {
        const char *name = cJSON_IsString(f) ? f->valuestring : "(not a string)";
        for (k = 0; modelled_features[k] != NULL; k++)
            if (strcmp(modelled_features[k], name) == 0)
                break;
        if (modelled_features[k] != NULL)
            continue;
        cJSON_AddItemToArray(arr, cJSON_CreateString(name));
        fprintf(stderr, "megatron-sc21: run '%s': feature '%s' is not modelled "
                "(predicted without it)\n", r->name, name);
    }
}

/* Where the predicted time goes; the terms add up to the prediction. */
static void put_breakdown(cJSON *out, const cost_breakdown *bd)
{
    cJSON *x = cJSON_AddObjectToObject(out, "breakdown_s");

    cJSON_AddNumberToObject(x, "compute", bd->compute - bd->recompute);
    cJSON_AddNumberToObject(x, "recompute", bd->recompute);
    cJSON_AddNumberToObject(x, "tp_comm", bd->tp_comm);
    cJSON_AddNumberToObject(x, "p2p", bd->p2p);
    cJSON_AddNumberToObject(x, "dp_exposed", bd->dp_comm);
    cJSON_AddNumberToObject(x, "bubble", bd->bubble);
    cJSON_AddNumberToObject(x, "optimizer", bd->optimizer);
}

/* Model FLOP/s per GPU at iteration time t: the paper's eq. 3,
 * 96 B s l h^2 (1 + s / 6h + V / 16 l h), over t and the GPUs. */
static double tflops_per_gpu(const mega_run *r, double t)
{
    double B = r->global_batch, s = r->seq, l = r->layers, h = r->hidden;
    double f = 96.0 * B * s * l * h * h *
               (1.0 + s / (6.0 * h) + (double)r->vocab / (16.0 * l * h));

    return t > 0.0 ? f / (t * (double)r->gpus) / 1e12 : 0.0;
}

/* Speed-ups of hetplan's chosen plans over the published configurations
 * (predicted time of the published / of the chosen), per run. */
static double chosen_speedup[MAX_RUNS];
static int chosen_n;

/* hetplan's own plan for the run's GPUs, model and global batch, for
 * Megatron-LM core_v0.19.0 (its caps: even TP shards, 1F1B, the layer
 * splits it expresses), with today's defaults (sequence parallelism,
 * selective recomputation, distributed optimizer, gradient-accumulation
 * fusion, overlap, all searched where the cost model has them) and the
 * run's optimizer state (fp32 main weights and gradients); its object
 * goes to out->"chosen" with the speed-up over published_s. */
static int choose_plan(const fmt_cluster *c, const fmt_model *m,
                       double published_s, cJSON *out, util_error *err)
{
    search_params sp;
    search_result res;
    cost_params cp;
    const fmt_strategy *s;
    cJSON *x;
    double cap;
    int rc;

    memset(&res, 0, sizeof res);
    cost_params_init(&cp);
    cp.optimizer_bytes = -1.0;
    search_params_init(&sp);
    sp.global_batch = m->global_batch;
    sp.top_k = 1;
    rc = export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW, &sp.launcher, err);
    if (rc == UTIL_OK)
        rc = search_launcher_params(&sp, &cp, err);
    if (rc == UTIL_OK)
        rc = search_plan(c, m, NULL, &cp, &sp, &res, err);
    if (rc != UTIL_OK)
        return rc;
    s = &res.cands[0].s;
    x = cJSON_AddObjectToObject(out, "chosen");
    cJSON_AddNumberToObject(x, "tp", s->tp);
    cJSON_AddNumberToObject(x, "pp", s->pp);
    cJSON_AddNumberToObject(x, "dp", s->dp);
    cJSON_AddNumberToObject(x, "mbs", s->mbs);
    cJSON_AddNumberToObject(x, "gas", s->gas);
    cJSON_AddNumberToObject(x, "vpp", s->vpp);
    cJSON_AddBoolToObject(x, "sequence_parallel", s->sp > 0 && s->tp > 1);
    cJSON_AddStringToObject(x, "recompute", fmt_recompute_name(s->recompute));
    cJSON_AddNumberToObject(x, "zero", s->zero);
    cJSON_AddNumberToObject(x, "overlap_grad", s->overlap_grad);
    cJSON_AddNumberToObject(x, "overlap_param", s->overlap_param);
    cJSON_AddNumberToObject(x, "overlap_tp", s->overlap_tp);
    cJSON_AddNumberToObject(x, "overlap_p2p", s->overlap_p2p);
    cJSON_AddNumberToObject(x, "predicted_s", res.cands[0].r.iter_s);
    cJSON_AddNumberToObject(x, "predicted_peak_gib",
                            bench_peak(&res.cands[0].r, &cap) / (1024.0 * 1024.0 * 1024.0));
    cJSON_AddNumberToObject(x, "speedup", published_s / res.cands[0].r.iter_s);
    if (chosen_n < MAX_RUNS)
        chosen_speedup[chosen_n++] = published_s / res.cands[0].r.iter_s;
    fprintf(stderr, "megatron-sc21: %-10s chosen tp %d pp %d dp %d mbs %d vpp %d "
            "sp %d %s zero %d overlap g%d p%d t%d p2p%d: %.3f s, %.2fx the "
            "published configuration\n", m->name, s->tp, s->pp, s->dp, s->mbs,
            s->vpp, s->sp > 0 && s->tp > 1, fmt_recompute_name(s->recompute),
            s->zero, s->overlap_grad, s->overlap_param, s->overlap_tp, s->overlap_p2p,
            res.cands[0].r.iter_s, published_s / res.cands[0].r.iter_s);
    search_result_free(&res);
    return UTIL_OK;
}

/* Evaluate run r: out gets its object, *t its trial. */
static int eval_run(const mega_run *r, int index, cJSON *out, calib_trial *t,
                    util_error *err)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    cost_params cp;
    cost_result res;
    double peak = 0.0, cap = 0.0;
    int rc;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    memset(&res, 0, sizeof res);
    cost_params_init(&cp);
    /* torch DDP reduces gradient buckets during the backward pass;
       Megatron's local DDP of these runs after it */
    cp.overlap_grad_reduce = has_feature(r, "ddp_overlap_backward");
    /* Megatron-LM of 2021 added every micro-batch's weight gradients into
       main_grad in a separate pass (no gradient-accumulation fusion yet;
       a run that lists it has it) */
    cp.grad_accum_fusion = has_feature(r, "grad_accum_fusion");
    /* and waited for every pipeline exchange, interleaved or not
       (p2p_communication.py: batch_isend_irecv, wait, then
       torch.cuda.synchronize); later releases overlap them */
    cp.overlap_p2p = has_feature(r, "overlap_p2p");
    /* Megatron's fp16 optimizer: fp32 main weights and gradients */
    cp.optimizer_bytes = -1.0;
    rc = dgx_cluster(hw_of_runs, r->nodes, &c, err);
    if (rc == UTIL_OK)
        rc = gpt_model(r, &m, err);
    if (rc == UTIL_OK)
        rc = mega_strategy(&c, &m, r, &s, err);
    if (rc == UTIL_OK)
        rc = cost_evaluate(&c, &m, NULL, &cp, &s, &res, err);
    if (rc != UTIL_OK)
        goto done;
    peak = bench_peak(&res, &cap);
    t->index = index;
    t->measured_s = r->measured_s;
    t->predicted_s = res.iter_s;
    t->fits = res.fits;
    t->empty_stage = res.empty_stage >= 0;

    cJSON_AddStringToObject(out, "name", r->name);
    cJSON_AddNumberToObject(out, "params_billion", r->params_billion);
    cJSON_AddNumberToObject(out, "params_model_billion", plan_params(&c, &m, &cp) / 1e9);
    cJSON_AddNumberToObject(out, "gpus", r->gpus);
    cJSON_AddNumberToObject(out, "tp", r->tp);
    cJSON_AddNumberToObject(out, "pp", r->pp);
    cJSON_AddNumberToObject(out, "dp", r->dp);
    cJSON_AddNumberToObject(out, "mbs", s.mbs);
    cJSON_AddNumberToObject(out, "gas", s.gas);
    cJSON_AddNumberToObject(out, "measured_s", r->measured_s);
    cJSON_AddNumberToObject(out, "predicted_s", res.iter_s);
    cJSON_AddNumberToObject(out, "ratio", res.iter_s / r->measured_s);
    cJSON_AddNumberToObject(out, "measured_tflops_per_gpu", tflops_per_gpu(r, r->measured_s));
    cJSON_AddNumberToObject(out, "predicted_tflops_per_gpu", tflops_per_gpu(r, res.iter_s));
    put_breakdown(out, &res.bd);
    cJSON_AddNumberToObject(out, "predicted_peak_gib", peak / (1024.0 * 1024.0 * 1024.0));
    cJSON_AddNumberToObject(out, "capacity_gib", cap / (1024.0 * 1024.0 * 1024.0));
    cJSON_AddBoolToObject(out, "fits", res.fits);
    features_used(r, &m, &s, &cp, out);
    features_not_modelled(r, out);
    rc = choose_plan(&c, &m, res.iter_s, out, err);
done:
    cost_result_free(&res);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return rc;
}

/* What bench_each_run's callback needs. */
typedef struct mega_ctx {
    calib_trial *t;
    int skipped;            /* runs that could not be evaluated */
} mega_ctx;

static int one_run(void *ctx, const cJSON *run, const char *where, int index,
                   cJSON *out, util_error *err)
{
    mega_ctx *x = ctx;
    mega_run r;
    char msg[1024];
    int rc = read_run(run, where, &r, err);

    if (rc == UTIL_OK)
        rc = eval_run(&r, index, out, &x->t[index], err);
    if (rc == UTIL_OK || rc == UTIL_ENOMEM)
        return rc;
    /* left out of the scores with its reason; the others are scored */
    util_error_format(err, msg, sizeof msg);
    if (r.name != NULL)
        cJSON_AddStringToObject(out, "name", r.name);
    cJSON_AddStringToObject(out, "error", msg);
    fprintf(stderr, "megatron-sc21: %s not scored: %s\n", where, msg);
    memset(err, 0, sizeof *err);
    x->skipped++;
    return BENCH_RUN_SKIPPED;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median and least speed-up of the chosen plans, and the runs they are
 * predicted slower on, into tot and on stderr. */
static void put_chosen(cJSON *tot)
{
    double v[MAX_RUNS], med;
    int i, slower = 0;

    if (chosen_n == 0)
        return;
    memcpy(v, chosen_speedup, (size_t)chosen_n * sizeof *v);
    qsort(v, (size_t)chosen_n, sizeof *v, cmp_double);
    med = chosen_n % 2 ? v[chosen_n / 2] : 0.5 * (v[chosen_n / 2 - 1] + v[chosen_n / 2]);
    for (i = 0; i < chosen_n; i++)
        slower += v[i] < 1.0;
    cJSON_AddNumberToObject(tot, "chosen_speedup_median", med);
    cJSON_AddNumberToObject(tot, "chosen_speedup_min", v[0]);
    cJSON_AddNumberToObject(tot, "chosen_slower_runs", slower);
    fprintf(stderr, "megatron-sc21: chosen plans (core_v0.19.0, today's features) "
            "over the published configurations: median %.2fx, least %.2fx, %d of "
            "%d runs slower\n", med, v[0], slower, chosen_n);
}

int main(int argc, char **argv)
{
    char dir[4096], path[4200];
    calib_trial t[MAX_RUNS];
    mega_ctx ctx = {t, 0};
    mega_hw hw;
    calib_ranking rk;
    cJSON *root = NULL, *doc, *arr, *tot;
    util_error err;
    int n = 0, rc, rejects = 0, i;

    if (!bench_data_dir(argc, argv, "megatron-sc21", "megatron-sc21", dir, sizeof dir))
        return 0;
    memset(&err, 0, sizeof err);
    memset(t, 0, sizeof t);
    doc = bench_doc("megatron-sc21", dir, "nodes of the file's hardware (DGX "
                    "A100 80GB when it names none: NVSwitch 300 GB/s per "
                    "direction, 8 x 200 Gbit/s HDR per node), GPT shorthand, "
                    "Megatron placement, even split, each run's interleaving, "
                    "recomputation, DDP overlap and listed features, analytic "
                    "(no profile); ratio = predicted / measured", &arr);
    snprintf(path, sizeof path, "%s/runs.json", dir);
    rc = bench_read_json(path, &root, &err);
    if (rc == UTIL_OK && (rc = read_hw(root, path, &hw, &err)) == UTIL_OK) {
        cJSON *h = cJSON_AddObjectToObject(doc, "hardware");
        cJSON_AddStringToObject(h, "device", hw.device);
        cJSON_AddNumberToObject(h, "gpus_per_node", hw.gpus_per_node);
        cJSON_AddNumberToObject(h, "intra_gbps", hw.intra_gbps);
        cJSON_AddNumberToObject(h, "nic_gbps", hw.nic_gbps);
        hw_of_runs = &hw;
    }
    if (rc == UTIL_OK)
        rc = bench_each_run(cJSON_GetObjectItemCaseSensitive(root, "runs"), path,
                            MAX_RUNS, arr, one_run, &ctx, &n, &err);
    if (rc == UTIL_OK) {
        tot = cJSON_AddObjectToObject(doc, "totals");
        cJSON_AddNumberToObject(tot, "runs", n);
        cJSON_AddNumberToObject(tot, "runs_not_scored", ctx.skipped);
        bench_put_scores(tot, "time", t, n, &rk);
        for (i = 0; i < n; i++)
            rejects += !t[i].fits;
        cJSON_AddNumberToObject(tot, "false_rejects", rejects);
        fprintf(stderr, "megatron-sc21: %d runs: time MAPE %.1f%%, rho %.3f "
                "(analytic); %d predicted not to fit\n", n, 100.0 * rk.mape,
                rk.spearman, rejects);
        put_chosen(tot);
        if (ctx.skipped > 0)
            rc = util_error_set(&err, UTIL_EINVAL, path, NULL,
                                "%d of %d runs not scored (see their 'error')",
                                ctx.skipped, n + ctx.skipped);
    }
    cJSON_Delete(root);
    return bench_finish(doc, "megatron-sc21", rc, &err);
}
