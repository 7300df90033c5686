/* commands/inspect.c: planner inspect, which shows what the planner reads
 * from its inputs before any search: a model's shape, parameters (which
 * ones tensor parallelism shards), FLOPs, model-state bytes and stored
 * activations layer by layer; a cluster's nodes, links and device types
 * with their peaks; and entries of the device catalogue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static const char inspect_usage[] =
    "usage: planner inspect [--model FILE] [--cluster FILE] [--device NAME ...]\n"
    "                       [--catalogue] [--precision fp16|bf16|fp32]\n"
    "                       [--format table|json] [--output FILE] [--quiet]\n"
    "\n"
    "Shows what the planner reads from its inputs, before any search\n"
    "(docs/cli.md): for a model, its shape, its parameters (each tied\n"
    "group once; the part every tensor-parallel rank holds whole), training\n"
    "FLOPs, model-state bytes per parameter and, layer by layer, parameters,\n"
    "forward FLOPs and the activations kept for the backward pass; for a\n"
    "cluster, its nodes, links and device types with their peak throughput\n"
    "per precision and whether they train in the model's precision; for\n"
    "device names, the catalogue entry each resolves to.\n"
    "options:\n"
    "  --model FILE           model description (docs/inputs.md)\n"
    "  --cluster FILE         cluster description (docs/inputs.md)\n"
    "  --device NAME          a device name as a cluster file or nvidia-smi\n"
    "                         writes it: its catalogue entry (repeatable)\n"
    "  --catalogue            every entry of the device catalogue\n"
    "  --precision P          fp16, bf16 or fp32 instead of the model's\n"
    "                         training.precision\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --output FILE          also write the JSON to FILE (atomically)\n"
    "  --strict               unknown keys in input files are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --time-limit SECONDS   checked once, after the inputs are read: nothing\n"
    "                         is cut (the work is bounded), the exit code is 7\n"
    "at least one of --model, --cluster, --device and --catalogue is needed.\n"
    "exit codes: 0 ok, 1 internal, 2 usage (also a device name the catalogue\n"
    "  does not know), 3 invalid input file, 5 cannot write, 7 the time limit\n"
    "  had passed (the output is complete)\n";

/* Largest number of --device options. */
#define INSPECT_MAX_DEVICES 64

/* What the command line sets. */
typedef struct inspect_opts {
    cmd_output_opts out;
    const char *model, *cluster;
    const char *devices[INSPECT_MAX_DEVICES];
    int ndevices;
    int catalogue;
    int precision;          /* enum fmt_precision, -1 = the model's */
    double time_limit;      /* --time-limit SECONDS, 0 = none */
} inspect_opts;

enum { INSPECT_OPT_DEVICE = 1, INSPECT_OPT_PRECISION, INSPECT_OPT_TIME };

/* --device and --precision into the inspect_opts ctx; exit code. */
static int inspect_option(void *ctx, int id, const char *opt, const char *v)
{
    inspect_opts *o = ctx;

    (void)opt;
    if (id == INSPECT_OPT_DEVICE) {
        if (o->ndevices >= INSPECT_MAX_DEVICES)
            return cmd_usage_error(NULL, "more than %d '--device' options",
                                   INSPECT_MAX_DEVICES);
        o->devices[o->ndevices++] = v;
        return CMD_EXIT_OK;
    }
    if (id == INSPECT_OPT_TIME)
        return cmd_parse_time_limit("inspect", v, &o->time_limit);
    if ((o->precision = fmt_precision_from_name(v)) < 0)
        return cmd_usage_error(NULL, "option '--precision' expects fp16, bf16 or "
                                     "fp32, got '%s'", v);
    return CMD_EXIT_OK;
}

/* Parse the command line into o; exit code. */
static int inspect_args(int argc, char **argv, inspect_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--model", NULL, &o->model),
        CMD_STRING("--cluster", NULL, &o->cluster),
        CMD_REPEAT("--device", INSPECT_OPT_DEVICE),
        CMD_SET("--catalogue", NULL, &o->catalogue, 1),
        CMD_CALL("--precision", INSPECT_OPT_PRECISION),
        CMD_CALL("--time-limit", INSPECT_OPT_TIME),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = inspect_usage, .options = table,
                          .unknown = " for 'inspect'", .handle = inspect_option,
                          .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->precision = -1;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (!o->model && !o->cluster && o->ndevices == 0 && !o->catalogue)
        return cmd_usage_error(NULL, "%s", "nothing to inspect: give '--model', "
                                           "'--cluster', '--device' or '--catalogue'");
    if (o->ndevices > 0 && o->catalogue)
        return cmd_usage_error(NULL, "%s", "options '--device' and '--catalogue' "
                                           "exclude each other");
    if (o->precision >= 0 && !o->model)
        return cmd_usage_error(NULL, "%s", "option '--precision' needs '--model'");
    return CMD_EXIT_OK;
}

/* ---- what is shown ----------------------------------------------------- */

#define GIB 1073741824.0

/* Append e, built when ok, to arr (e dropped when not ok): 1 when both
 * went well. */
static int push_built(cJSON *arr, cJSON *e, int ok)
{
    if (!ok) {
        cJSON_Delete(e);
        e = NULL;
    }
    return util_json_push(arr, e);
}

/* Attach *item to o under key when ok (*item dropped when not ok), and
 * forget it: 1 when both went well. */
static int put_built(cJSON *o, const char *key, cJSON **item, int ok)
{
    cJSON *x = *item;

    *item = NULL;
    if (!ok) {
        cJSON_Delete(x);
        return 0;
    }
    return util_json_put(o, key, x);
}

/* A catalogue entry for a --device query: an error naming the nearest
 * entry when the catalogue does not know the name. */
static const fmt_device_type *inspect_find_device(const char *name)
{
    const fmt_device_type *t = fmt_catalog_find(name), *near;

    if (t != NULL)
        return t;
    if ((near = fmt_catalog_nearest(name)) != NULL)
        cmd_usage_error(NULL, "option '--device': the catalogue has no device "
                              "'%s', did you mean '%s'? ('planner inspect "
                              "--catalogue' lists them)", name, near->name);
    else
        cmd_usage_error(NULL, "option '--device': the catalogue has no device "
                              "'%s' ('planner inspect --catalogue' lists them)",
                        name);
    return NULL;
}

/* A device type as JSON; prec >= 0: also whether it trains in prec. */
static cJSON *type_json(const fmt_device_type *t, const char *source, int prec)
{
    cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
    int k, ok = o != NULL && a != NULL;

    for (k = 0; ok && k < 3; k++)
        if (fmt_device_supports(t, k))
            ok = util_json_push(a, cJSON_CreateString(fmt_precision_name(k)));
    ok = ok && util_json_put_str(o, "name", t->name) &&
         (source == NULL || util_json_put_str(o, "source", source)) &&
         util_json_put_num(o, "memory_gib", t->mem_bytes / GIB) &&
         util_json_put_num(o, "tflops_fp32", t->flops_fp32 / 1e12) &&
         util_json_put_num(o, "tflops_tf32", t->flops_tf32 / 1e12) &&
         util_json_put_num(o, "tflops_fp16", t->flops_fp16 / 1e12) &&
         util_json_put_num(o, "tflops_bf16", t->flops_bf16 / 1e12) &&
         util_json_put_num(o, "bandwidth_gbs", t->mem_bw / 1e9);
    ok = put_built(o, "precisions", &a, ok);
    if (ok && prec >= 0)
        ok = util_json_put_bool(o, "trains_model", fmt_device_supports(t, prec));
    return util_json_finish(o, ok);
}

/* Header and one line of the device-type table, its first column w
 * characters wide. */
static void type_head(util_buf *b, int w, const char *first, int trains)
{
    util_buf_printf(b, "%-*s %10s %6s %6s %7s %7s %6s %s\n", w, first, "memory GiB",
                    "fp32", "tf32", "fp16", "bf16", "GB/s",
                    trains ? "trains the model" : "precisions");
}

/* A peak in TFLOP/s with one decimal into buf, "-" when 0 (none, or not
 * given). */
static const char *tflops(double flops, char buf[16])
{
    if (flops > 0.0)
        snprintf(buf, 16, "%.1f", flops / 1e12);
    else
        snprintf(buf, 16, "-");
    return buf;
}

static void type_line(util_buf *b, int w, const char *first,
                      const fmt_device_type *t, int prec)
{
    char prec_text[24] = "", f[4][16];
    int k;

    if (prec >= 0) {
        snprintf(prec_text, sizeof prec_text, "%s", fmt_device_supports(t, prec) ?
                 "yes" : "no");
    } else {
        for (k = 0; k < 3; k++)
            if (fmt_device_supports(t, k)) {
                if (prec_text[0])
                    strcat(prec_text, ",");
                strcat(prec_text, fmt_precision_name(k));
            }
    }
    util_buf_printf(b, "%-*s %10.2f %6s %6s %7s %7s %6.0f %s\n", w, first,
                    t->mem_bytes / GIB, tflops(t->flops_fp32, f[0]),
                    tflops(t->flops_tf32, f[1]), tflops(t->flops_fp16, f[2]),
                    tflops(t->flops_bf16, f[3]), t->mem_bw / 1e9, prec_text);
}

/* 1 when cluster type t is the catalogue's entry of its name unchanged. */
static int from_catalogue(const fmt_device_type *t)
{
    const fmt_device_type *c = fmt_catalog_find(t->name);

    return c != NULL && strcmp(c->name, t->name) == 0 &&
           c->mem_bytes == t->mem_bytes && c->flops_fp16 == t->flops_fp16 &&
           c->flops_bf16 == t->flops_bf16 && c->flops_fp32 == t->flops_fp32 &&
           c->flops_tf32 == t->flops_tf32 && c->mem_bw == t->mem_bw;
}

/* What layer l keeps for its backward pass per sample, at TP 1 without
 * recomputation, in bytes. */
static double layer_act(const fmt_model *m, const cost_params *p, int l)
{
    return cost_layer_stored(m, p, l, 1);
}

/* Most rows of the layer, node and link tables (text and JSON); the rows
 * past it are counted, not listed (docs/limits.md). */
#define INSPECT_MAX_ROWS 16384

/* 1 when layers a and b of m look the same in the table (one row). */
static int same_layer(const fmt_model *m, const cost_params *p, int a, int b)
{
    const fmt_layer *x = &m->layers[a], *y = &m->layers[b];

    return x->kind == y->kind && x->params == y->params &&
           x->params_rep == y->params_rep && x->fwd_flops == y->fwd_flops &&
           x->tied_group == y->tied_group && x->gemm_count == y->gemm_count &&
           (x->gemm_count == 0 || x->gemm_first == y->gemm_first) &&
           layer_act(m, p, a) == layer_act(m, p, b);
}

/* The model's state bytes per parameter (weights, gradients, optimizer
 * without sharding) and the training FLOPs per sample (forward and
 * backward, 3x the forward: Narayanan et al. SC'21, eq. 3's factor). */
static void model_totals(const fmt_model *m, const cost_params *p, double *w,
                         double *g, double *opt, double *train_flops)
{
    int l;

    cost_state_bytes(m, p, 1, w, g, opt);
    *train_flops = 0.0;
    for (l = 0; l < m->nlayers; l++)
        *train_flops += 3.0 * m->layers[l].fwd_flops;
}

/* 1 when an embedding and a head of the model share one tensor (group
 * numbers are at most 1e6, the reader's range: a mark per group). */
static int tied_embeddings(const fmt_model *m)
{
    unsigned char *emb;
    int i, top = 0, tied = 0;

    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].tied_group > top)
            top = m->layers[i].tied_group;
    if (top == 0 || (emb = calloc((size_t)top + 1, 1)) == NULL)
        return 0;
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].kind == FMT_KIND_EMBEDDING && m->layers[i].tied_group > 0)
            emb[m->layers[i].tied_group] = 1;
    for (i = 0; i < m->nlayers && !tied; i++)
        tied = m->layers[i].kind == FMT_KIND_HEAD && m->layers[i].tied_group > 0 &&
               emb[m->layers[i].tied_group];
    free(emb);
    return tied;
}

/* How the model's stored activations are known: the attention kernel
 * for a transformer shorthand, else the layer list's own figures. */
static const char *attention_text(const fmt_model *m)
{
    if (!cost_act_from_shape(m))
        return "as listed";
    return cost_attention(m) == FMT_ATTN_EAGER ? "eager" : "flash";
}

/* What a model's training.framework made the planner assume
 * (docs/inputs.md, "Frameworks"): each a phrase saying what and why. */
typedef struct fw_assumed {
    char name[FMT_FRAMEWORK_N];
    const char *tf32, *attention, *loss, *launch;
} fw_assumed;

/* 0 when the model names no framework. */
static int framework_assumed(const fmt_model *m, const cost_params *p,
                             fw_assumed *a)
{
    static const char *const launch[] = {"eager (one host launch per kernel)",
                                         "fused kernels",
                                         "CUDA graphs"};
    const fmt_framework *fw = &m->framework;
    int l = cost_launch_mode(m, p);

    if (fw->family == FMT_FW_NONE)
        return 0;
    fmt_framework_text(fw, a->name, sizeof a->name);
    if (fmt_model_precision(m) != FMT_PREC_FP32)
        a->tf32 = "not used (16-bit training)";
    else if (p->tf32 >= 0)
        a->tf32 = p->tf32 ? "on (cost parameter tf32)" : "off (cost parameter tf32)";
    else if (!(m->fw_defaults & FMT_FW_SET_TF32))
        a->tf32 = m->tf32 == FMT_FLAG_OFF ? "off (training.tf32)"
                  : m->tf32 == FMT_FLAG_ON ? "on (training.tf32)"
                                           : "on (unstated: NGC containers' default)";
    else if (m->tf32 == FMT_FLAG_OFF && fw->major == 1 && fw->minor < 7)
        a->tf32 = "off (no TF32 before PyTorch 1.7)";
    else if (fw->family == FMT_FW_PYTORCH && !fw->ngc)
        a->tf32 = m->tf32 == FMT_FLAG_ON
                      ? "on (torch.backends.cuda.matmul.allow_tf32 defaults to "
                        "true in PyTorch 1.7 to 1.11)"
                      : "off (torch.backends.cuda.matmul.allow_tf32 defaults "
                        "to false since PyTorch 1.12)";
    else
        a->tf32 = "on (NGC containers' TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1)";
    if (!cost_act_from_shape(m))
        a->attention = "as listed (a layer list states its activations)";
    else if (cost_attention(m) != FMT_ATTN_EAGER)
        a->attention = "flash: O(s) softmax statistics per head";
    else if (fmt_framework_softmax_input(fw))
        a->attention = "s x s scores: softmax input and output kept (autograd "
                       "before PyTorch 1.11, pytorch/pytorch#64000)";
    else
        a->attention = "s x s scores: softmax output kept";
    a->loss = m->cross_entropy == FMT_CE_PYTORCH
                  ? "F.cross_entropy (log_softmax and nll_loss)"
                  : "vocabulary-parallel softmax in place over an fp32 copy of "
                    "the logits";
    a->launch = l >= 0 && l <= 2 ? launch[l] : "not set";
    return 1;
}

/* End (exclusive) of the row of identical layers that starts at l. */
static int row_end(const fmt_model *m, const cost_params *p, int l)
{
    int k;

    for (k = l + 1; k < m->nlayers && same_layer(m, p, l, k); k++)
        ;
    return k;
}

static cJSON *model_json(const inspect_opts *o, const fmt_model *m,
                         const cost_params *p)
{
    cJSON *o2 = cJSON_CreateObject(), *layers = cJSON_CreateArray(), *shape = NULL;
    double rep, params = fmt_model_params(m, &rep), w, g, opt, flops;
    fw_assumed fa;
    int l, k, rows = 0, ok = o2 != NULL && layers != NULL;

    model_totals(m, p, &w, &g, &opt, &flops);
    if (ok && m->hidden > 0) {
        shape = cJSON_CreateObject();
        ok = shape != NULL && util_json_put_num(shape, "blocks", m->blocks) &&
             util_json_put_num(shape, "hidden", m->hidden) &&
             util_json_put_num(shape, "heads", m->heads) &&
             util_json_put_num(shape, "kv_heads", m->kv_heads > 0 ? m->kv_heads :
                                                                    m->heads) &&
             util_json_put_num(shape, "ffn", m->ffn) &&
             util_json_put_num(shape, "seq", m->seq) &&
             util_json_put_num(shape, "vocab", m->vocab) &&
             (fmt_arch_name(FMT_AXIS_MLP, m->mlp) == NULL ||
              util_json_put_str(shape, "mlp", fmt_arch_name(FMT_AXIS_MLP, m->mlp))) &&
             (fmt_arch_name(FMT_AXIS_POSITIONS, m->positions) == NULL ||
              util_json_put_str(shape, "positions",
                                fmt_arch_name(FMT_AXIS_POSITIONS, m->positions))) &&
             (fmt_arch_name(FMT_AXIS_NORM, m->norm) == NULL ||
              util_json_put_str(shape, "norm", fmt_arch_name(FMT_AXIS_NORM, m->norm)));
    }
    for (l = 0; ok && l < m->nlayers && rows < INSPECT_MAX_ROWS; l = k, rows++) {
        const fmt_layer *x = &m->layers[l];
        cJSON *e = cJSON_CreateObject();
        k = row_end(m, p, l);
        ok = e != NULL && util_json_put_num(e, "first", l) &&
             util_json_put_num(e, "count", k - l) &&
             util_json_put_str(e, "name", x->name) &&
             util_json_put_str(e, "kind", fmt_kind_name(x->kind)) &&
             util_json_put_num(e, "params", x->params) &&
             util_json_put_num(e, "params_replicated", x->params_rep) &&
             util_json_put_num(e, "fwd_flops", x->fwd_flops) &&
             util_json_put_num(e, "stored_bytes", layer_act(m, p, l)) &&
             (x->gemm_count <= 0 || util_json_put_num(e, "gemms", x->gemm_count)) &&
             (x->tied_group <= 0 || util_json_put_num(e, "tied_group", x->tied_group));
        ok = push_built(layers, e, ok);
    }
    ok = ok && util_json_put_str(o2, "file", o->model) &&
         util_json_put_str(o2, "name", m->name) &&
         util_json_put_str(o2, "family", m->family) &&
         util_json_put_str(o2, "precision", fmt_precision_name(fmt_model_precision(m))) &&
         util_json_put_bool(o2, "tf32", fmt_model_precision(m) == FMT_PREC_FP32 &&
                                            cost_tf32(m, p)) &&
         util_json_put_str(o2, "attention", attention_text(m));
    if (ok && framework_assumed(m, p, &fa)) {
        cJSON *f = cJSON_CreateObject();
        ok = f != NULL && util_json_put_str(f, "name", fa.name) &&
             util_json_put_str(f, "tf32", fa.tf32) &&
             util_json_put_str(f, "attention_memory", fa.attention) &&
             util_json_put_str(f, "loss_softmax", fa.loss) &&
             util_json_put_str(f, "launch", fa.launch);
        ok = put_built(o2, "framework", &f, ok);
    }
    if (ok && shape == NULL)
        ok = (shape = cJSON_CreateNull()) != NULL;
    ok = put_built(o2, "shape", &shape, ok);
    ok = ok && util_json_put_bool(o2, "tied_embeddings", tied_embeddings(m)) &&
         util_json_put_num(o2, "params", params) &&
         util_json_put_num(o2, "params_replicated", rep) &&
         util_json_put_num(o2, "train_flops_per_sample", flops) &&
         util_json_put_num(o2, "state_bytes_per_param", w + g + opt) &&
         util_json_put_num(o2, "weight_bytes_per_param", w) &&
         util_json_put_num(o2, "grad_bytes_per_param", g) &&
         util_json_put_num(o2, "optimizer_bytes_per_param", opt) &&
         util_json_put_num(o2, "global_batch", m->global_batch) &&
         util_json_put_num(o2, "layers_total", m->nlayers);
    ok = put_built(o2, "layers", &layers, ok);
    ok = ok && util_json_put_num(o2, "layers_not_listed", m->nlayers - l);
    return util_json_finish(o2, ok);
}

static void model_text(util_buf *b, const inspect_opts *o, const fmt_model *m,
                       const cost_params *p)
{
    double rep, params = fmt_model_params(m, &rep), w, g, opt, flops;
    int prec = fmt_model_precision(m), l, k, rows = 0;
    fw_assumed fa;

    model_totals(m, p, &w, &g, &opt, &flops);
    util_buf_printf(b, "model '%s' ('%s'): %s, %s, %s %s%s\n", m->name, o->model,
                    cost_act_from_shape(m) ? m->family : "layer list",
                    fmt_precision_name(prec),
                    cost_act_from_shape(m) ? attention_text(m) : "activations",
                    cost_act_from_shape(m) ? "attention" : attention_text(m),
                    prec == FMT_PREC_FP32 ? (cost_tf32(m, p) ? ", TF32 matmuls" :
                                             ", fp32 matmuls") : "");
    if (m->hidden > 0) {
        const char *mlp = fmt_arch_name(FMT_AXIS_MLP, m->mlp);
        const char *pos = fmt_arch_name(FMT_AXIS_POSITIONS, m->positions);
        const char *norm = fmt_arch_name(FMT_AXIS_NORM, m->norm);
        char ffn[48] = "";
        if (m->ffn > 0)
            snprintf(ffn, sizeof ffn, ", ffn %d%s%s%s", m->ffn, mlp ? " (" : "",
                     mlp ? mlp : "", mlp ? ")" : "");
        util_buf_printf(b, "  %d blocks, hidden %d, %d heads (%d key/value)%s,"
                           " seq %d, vocab %d%s%s%s%s, %s embeddings\n",
                        m->blocks, m->hidden, m->heads,
                        m->kv_heads > 0 ? m->kv_heads : m->heads, ffn, m->seq,
                        m->vocab, pos ? ", " : "", pos ? pos : "",
                        pos ? " positions" : "", norm ? (strcmp(norm, "rmsnorm") == 0 ?
                                                         ", RMSNorm" : ", LayerNorm") : "",
                        tied_embeddings(m) ? "tied" : "untied");
    }
    if (framework_assumed(m, p, &fa))
        util_buf_printf(b, "  framework      %s\n    TF32 matmuls     %s\n"
                           "    attention memory %s\n    loss softmax     %s\n"
                           "    kernel launch    %s\n",
                        fa.name, fa.tf32, fa.attention, fa.loss, fa.launch);
    util_buf_printf(b, "  parameters     %.0f (%.3g %s); held whole by every "
                       "TP rank: ", params, params >= 1e9 ? params / 1e9 : params / 1e6,
                    params >= 1e9 ? "billion" : "million");
    if (rep > 0.0 || cost_act_from_shape(m))
        util_buf_printf(b, "%.0f\n", rep);
    else /* a layer list without params_rep */
        util_buf_printf(b, "not given (params_rep)\n");
    util_buf_printf(b, "  training FLOPs %.4g per sample (forward and backward)\n",
                    flops);
    util_buf_printf(b, "  model state    %g bytes per parameter (weights %g, "
                       "gradients %g, optimizer %g): %.2f GiB before sharding\n",
                    w + g + opt, w, g, opt, params * (w + g + opt) / GIB);
    if (m->global_batch > 0)
        util_buf_printf(b, "  global batch   %d\n", m->global_batch);
    util_buf_printf(b, "%-9s %-14s %-11s %15s %13s %14s %12s\n", "layers", "name",
                    "kind", "params", "TP-whole", "fwd GFLOP/smp", "kept MiB/smp");
    for (l = 0; l < m->nlayers && rows < INSPECT_MAX_ROWS; l = k, rows++) {
        const fmt_layer *x = &m->layers[l];
        char idx[24], name[64];
        k = row_end(m, p, l);
        if (k - l > 1) {
            snprintf(idx, sizeof idx, "%d-%d", l, k - 1);
            snprintf(name, sizeof name, "%.48s x%d", x->name, k - l);
        } else {
            snprintf(idx, sizeof idx, "%d", l);
            snprintf(name, sizeof name, "%.48s", x->name);
        }
        util_buf_printf(b, "%-9s %-14s %-11s %15.0f %13.0f %14.3f %12.2f%s\n", idx,
                        name, fmt_kind_name(x->kind), x->params, x->params_rep,
                        x->fwd_flops / 1e9, layer_act(m, p, l) / 1048576.0,
                        x->tied_group > 0 ? " (tied)" : "");
    }
    if (l < m->nlayers)
        util_buf_printf(b, "... %d more layers not listed (%d rows at most)\n",
                        m->nlayers - l, INSPECT_MAX_ROWS);
}

/* Rows of a table of n that are past INSPECT_MAX_ROWS. */
static int not_listed(int n)
{
    return n > INSPECT_MAX_ROWS ? n - INSPECT_MAX_ROWS : 0;
}

static cJSON *cluster_json(const inspect_opts *o, const fmt_cluster *c, int prec)
{
    cJSON *o2 = cJSON_CreateObject(), *nodes = cJSON_CreateArray(),
          *types = cJSON_CreateArray(), *links = cJSON_CreateArray();
    int i, ok = o2 != NULL && nodes != NULL && types != NULL && links != NULL;

    for (i = 0; ok && i < c->nnodes && i < INSPECT_MAX_ROWS; i++) {
        const fmt_node *n = &c->nodes[i];
        cJSON *e = cJSON_CreateObject();
        ok = e != NULL && util_json_put_str(e, "name", n->name) &&
             util_json_put_str(e, "region", n->region) &&
             util_json_put_str(e, "type", c->types[n->type].name) &&
             util_json_put_num(e, "gpus", n->gpus) &&
             util_json_put_num(e, "first_device", n->first_device) &&
             util_json_put_num(e, "intra_gbps", n->intra_bw * 8.0 / 1e9) &&
             util_json_put_num(e, "nic_gbps", n->nic_bw * 8.0 / 1e9) &&
             util_json_put_num(e, "host_memory_gib", n->host_mem / GIB);
        ok = push_built(nodes, e, ok);
    }
    for (i = 0; ok && i < c->nlinks && i < INSPECT_MAX_ROWS; i++) {
        const fmt_link *k = &c->links[i];
        cJSON *e = cJSON_CreateObject();
        ok = e != NULL && util_json_put_str(e, "a", c->nodes[k->node_a].name) &&
             (k->gpu_a < 0 || util_json_put_num(e, "gpu_a", k->gpu_a)) &&
             util_json_put_str(e, "b", c->nodes[k->node_b].name) &&
             (k->gpu_b < 0 || util_json_put_num(e, "gpu_b", k->gpu_b)) &&
             util_json_put_num(e, "gbps", k->bw * 8.0 / 1e9) &&
             util_json_put_num(e, "latency_us", k->lat * 1e6);
        ok = push_built(links, e, ok);
    }
    for (i = 0; ok && i < c->ntypes; i++)
        ok = util_json_push(types, type_json(&c->types[i], from_catalogue(&c->types[i]) ?
                                               "catalogue" : "cluster file", prec));
    ok = ok && util_json_put_str(o2, "file", o->cluster) &&
         util_json_put_str(o2, "name", c->name) &&
         util_json_put_num(o2, "gpus", c->ndevices) &&
         util_json_put_num(o2, "nodes_total", c->nnodes) &&
         util_json_put_num(o2, "links_total", c->nlinks);
    if (ok && prec >= 0) /* the precision plan trains the model in here */
        ok = util_json_put_str(o2, "plan_precision", fmt_precision_name(
                                   search_precision_fallback(c, prec, 0)));
    ok = put_built(o2, "nodes", &nodes, ok);
    ok = put_built(o2, "links", &links, ok);
    ok = ok && util_json_put_num(o2, "rows_not_listed",
                                 not_listed(c->nnodes) + not_listed(c->nlinks));
    ok = put_built(o2, "device_types", &types, ok);
    return util_json_finish(o2, ok);
}

/* One end of a stated link, "node" or "node GPU k", into buf. */
static void link_end(const fmt_cluster *c, int node, int gpu, char *buf, size_t n)
{
    if (gpu < 0)
        snprintf(buf, n, "%.30s", c->nodes[node].name);
    else
        snprintf(buf, n, "%.24s GPU %d", c->nodes[node].name, gpu);
}

static void cluster_text(util_buf *b, const inspect_opts *o, const fmt_cluster *c,
                         int prec)
{
    double mem = 0.0;
    int i;

    for (i = 0; i < c->nnodes; i++)
        mem += c->nodes[i].gpus * c->types[c->nodes[i].type].mem_bytes;
    util_buf_printf(b, "cluster '%s' ('%s'): %d GPUs on %d nodes, %.1f GiB of GPU "
                       "memory\n", c->name, o->cluster, c->ndevices, c->nnodes,
                    mem / GIB);
    util_buf_printf(b, "%-20s %-16s %5s %11s %9s %s\n", "node", "type", "gpus",
                    "intra Gbps", "NIC Gbps", "region");
    for (i = 0; i < c->nnodes && i < INSPECT_MAX_ROWS; i++) {
        const fmt_node *n = &c->nodes[i];
        util_buf_printf(b, "%-20s %-16s %5d %11.1f %9.1f %s\n", n->name,
                        c->types[n->type].name, n->gpus, n->intra_bw * 8.0 / 1e9,
                        n->nic_bw * 8.0 / 1e9, n->region[0] ? n->region : "-");
    }
    if (not_listed(c->nnodes) > 0)
        util_buf_printf(b, "... %d more nodes not listed (%d rows at most)\n",
                        not_listed(c->nnodes), INSPECT_MAX_ROWS);
    if (c->nlinks > 0)
        util_buf_printf(b, "%-31s %-31s %9s %12s\n", "link from", "to", "Gbps",
                        "latency us");
    for (i = 0; i < c->nlinks && i < INSPECT_MAX_ROWS; i++) {
        const fmt_link *k = &c->links[i];
        char a[40], z[40];
        link_end(c, k->node_a, k->gpu_a, a, sizeof a);
        link_end(c, k->node_b, k->gpu_b, z, sizeof z);
        util_buf_printf(b, "%-31s %-31s %9.1f %12.1f\n", a, z, k->bw * 8.0 / 1e9,
                        k->lat * 1e6);
    }
    if (not_listed(c->nlinks) > 0)
        util_buf_printf(b, "... %d more links not listed (%d rows at most)\n",
                        not_listed(c->nlinks), INSPECT_MAX_ROWS);
    type_head(b, 36, "device type (source)", prec >= 0);
    for (i = 0; i < c->ntypes; i++) {
        char first[48];
        snprintf(first, sizeof first, "%.24s (%s)", c->types[i].name,
                 from_catalogue(&c->types[i]) ? "catalogue" : "file");
        type_line(b, 36, first, &c->types[i], prec);
    }
    if (prec >= 0) {
        int fb = search_precision_fallback(c, prec, 0);
        char lack[200];
        search_precision_lacking(c, prec, lack, sizeof lack);
        if (fb != prec)
            util_buf_printf(b, "plan trains in %s here: no device type trains in "
                               "%s (%s)\n", fmt_precision_name(fb),
                            fmt_precision_name(prec), lack);
        else if (lack[0])
            util_buf_printf(b, "plan leaves the devices without %s idle: %s\n",
                            fmt_precision_name(prec), lack);
    }
}

/* ---- the command --------------------------------------------------- */

int cmd_inspect(int argc, char **argv)
{
    inspect_opts o;
    fmt_model m;
    fmt_cluster c;
    cost_params cp;
    util_error err;
    util_buf b;
    cJSON *root = NULL, *arr = NULL;
    const fmt_device_type *found[INSPECT_MAX_DEVICES];
    int code, i, prec = -1, ok, timed_out;
    char *json = NULL, *table;
    double t0 = cmd_seconds();

    memset(&m, 0, sizeof m);
    memset(&c, 0, sizeof c);
    memset(&err, 0, sizeof err);
    memset(&b, 0, sizeof b);
    if ((code = inspect_args(argc, argv, &o)) != CMD_EXIT_OK)
        return code;
    for (i = 0; i < o.ndevices; i++)
        if ((found[i] = inspect_find_device(o.devices[i])) == NULL)
            return CMD_EXIT_USAGE;
    cost_params_init(&cp);
    if ((o.model && (fmt_load_model(o.model, &m, &err) != UTIL_OK ||
                     (o.precision >= 0 &&
                      fmt_model_set_precision(&m, o.precision, &err) != UTIL_OK))) ||
        (o.cluster && cmd_load_cluster(o.cluster, &c, &err) != UTIL_OK)) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (o.model)
        prec = fmt_model_precision(&m);
    timed_out = o.time_limit > 0.0 && util_deadline_passed(t0 + o.time_limit);

    root = cJSON_CreateObject();
    ok = root != NULL &&
         util_json_put_str(root, "status", timed_out ? "time-limit" : "complete");
    if (ok && o.model) {
        ok = util_json_put(root, "model", model_json(&o, &m, &cp));
        model_text(&b, &o, &m, &cp);
    }
    if (ok && o.cluster) {
        ok = util_json_put(root, "cluster", cluster_json(&o, &c, prec));
        if (o.model)
            util_buf_printf(&b, "\n");
        cluster_text(&b, &o, &c, prec);
    }
    if (ok && (o.ndevices > 0 || o.catalogue)) {
        int n = o.catalogue ? (int)fmt_catalog_count() : o.ndevices, w = 16;
        ok = (arr = cJSON_CreateArray()) != NULL;
        if (o.model || o.cluster)
            util_buf_printf(&b, "\n");
        for (i = 0; !o.catalogue && i < n; i++) /* the widest "query -> entry" */
            if ((int)strnlen(o.devices[i], 40) + 4 + (int)strlen(found[i]->name) > w)
                w = (int)strnlen(o.devices[i], 40) + 4 + (int)strlen(found[i]->name);
        type_head(&b, w, o.catalogue ? "catalogue entry" : "device -> entry",
                  prec >= 0);
        for (i = 0; ok && i < n; i++) {
            const fmt_device_type *t = o.catalogue ? fmt_catalog_get((size_t)i) : found[i];
            cJSON *e = type_json(t, NULL, prec);
            char first[96];
            if (o.catalogue)
                snprintf(first, sizeof first, "%s", t->name);
            else
                snprintf(first, sizeof first, "%.40s -> %s", o.devices[i], t->name);
            type_line(&b, w, first, t, prec);
            ok = e != NULL && (o.catalogue || util_json_put_str(e, "query", o.devices[i]));
            ok = push_built(arr, e, ok);
        }
        ok = put_built(root, o.catalogue ? "catalogue" : "devices", &arr, ok);
    }
    if (ok)
        json = cJSON_Print(root);
    table = util_buf_take(&b);
    code = cmd_emit_report(json, table, &o.out);
    if (code == CMD_EXIT_OK && timed_out) {
        if (!o.out.quiet)
            fprintf(stderr, "planner: note: time limit of %g s reached once the inputs "
                            "were read; nothing was cut\n", o.time_limit);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    cJSON_Delete(root);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return code;
}
