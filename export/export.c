/* export/export.c: a plan's strategy as launcher input: Megatron-LM
 * command lines, DeepSpeed config + hostfile + pipeline partition,
 * torchrun per-node launch lines, MPI hostfile (docs/export.md).
 *
 * Rank order.  hetplan, Megatron-LM ("tp-cp-ep-dp-pp") and DeepSpeed's
 * PipeModelDataParallelTopology all number ranks TP innermost, then DP,
 * then PP, so plan rank r is launcher rank r.  torchrun gives agent k
 * (node rank k) the global ranks sum(nproc of agents < k) + local_rank,
 * and local rank i uses CUDA device i, i.e. the i-th GPU listed in
 * CUDA_VISIBLE_DEVICES.  The plan's rank -> device map is realised by
 * cutting the ranks into runs of consecutive ranks on one node (one
 * agent each, in rank order) and listing each run's GPUs in rank order. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "plan.h"

#define EXP_MEGATRON_VERSION "core_r0.9.0"
#define EXP_DEEPSPEED_VERSION "0.14"
#define EXP_TORCH_VERSION "2.4"

/* ---- names and options ----------------------------------------------- */

static const char *const target_names[EXPORT_NTARGETS] = {
    "megatron", "deepspeed", "torchrun", "hostfile"};

const char *export_target_name(int target)
{
    if (target < 0 || target >= EXPORT_NTARGETS)
        return NULL;
    return target_names[target];
}

int export_target_from_name(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < EXPORT_NTARGETS; i++)
        if (strcmp(name, target_names[i]) == 0)
            return i;
    return -1;
}

void export_options_init(export_options *o)
{
    memset(o, 0, sizeof *o);
    o->master_addr = NULL;
    o->master_port = 29500;
    o->source = NULL;
    o->strategy = 1;
}

void export_free(export_result *e)
{
    int i;

    if (e == NULL)
        return;
    for (i = 0; i < e->nfiles && i < EXPORT_MAXFILES; i++)
        free(e->files[i].text);
    memset(e, 0, sizeof *e);
}

/* ---- analysis of the strategy ---------------------------------------- */

/* A torchrun agent: consecutive ranks on one node. */
typedef struct xgroup {
    int node;
    int first;      /* first global rank */
    int n;          /* ranks (= nproc-per-node) */
} xgroup;

typedef struct xctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const cost_params *p;
    const fmt_strategy *s;
    const export_options *o;
    int global_batch;
    int nranks;
    xgroup *g;
    int ng;
    int *node_groups;   /* per node: agents on it */
    int hosts;
    int identity_gpus;  /* every agent lists its node's GPUs 0..n-1 in order */
    const char *master;
    export_result *out;
} xctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void note(xctx *x, const char *fmt, ...)
{
    va_list ap;

    if (x->out->nnotes >= EXPORT_MAXNOTES)
        return;
    va_start(ap, fmt);
    vsnprintf(x->out->notes[x->out->nnotes], sizeof x->out->notes[0], fmt, ap);
    va_end(ap);
    x->out->nnotes++;
}

static int gpu_of(const xctx *x, int rank)
{
    int dev = x->s->ranks[rank];
    return dev - x->c->nodes[x->c->device_node[dev]].first_device;
}

static int node_of(const xctx *x, int rank)
{
    return x->c->device_node[x->s->ranks[rank]];
}

static const char *host_of(const xctx *x, int node)
{
    return x->c->nodes[node].name;
}

static const char *type_of(const xctx *x, int node)
{
    return x->c->types[x->c->nodes[node].type].name;
}

static int make_groups(xctx *x, util_error *err)
{
    int r, k;

    x->g = calloc((size_t)x->nranks, sizeof *x->g);
    x->node_groups = calloc((size_t)x->c->nnodes, sizeof *x->node_groups);
    if (x->g == NULL || x->node_groups == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    x->identity_gpus = 1;
    for (r = 0; r < x->nranks; r++) {
        int node = node_of(x, r);
        if (x->ng == 0 || x->g[x->ng - 1].node != node) {
            x->g[x->ng].node = node;
            x->g[x->ng].first = r;
            x->g[x->ng].n = 0;
            x->ng++;
            x->node_groups[node]++;
        }
        if (gpu_of(x, r) != x->g[x->ng - 1].n)
            x->identity_gpus = 0;
        x->g[x->ng - 1].n++;
    }
    for (k = 0; k < x->c->nnodes; k++) {
        if (x->node_groups[k] > 1)
            x->identity_gpus = 0;
        if (x->node_groups[k] > 0)
            x->hosts++;
    }
    x->master = x->o->master_addr ? x->o->master_addr : host_of(x, x->g[0].node);
    x->out->agents = x->ng;
    x->out->hosts = x->hosts;
    return UTIL_OK;
}

static void gpu_list(const xctx *x, const xgroup *g, util_buf *b)
{
    int i;

    for (i = 0; i < g->n; i++)
        util_buf_printf(b, "%s%d", i ? "," : "", gpu_of(x, g->first + i));
}

static const char *precision(const fmt_model *m)
{
    if (m->dtype_bytes == 4)
        return "fp32";
    return m->bf16 ? "bf16" : "fp16";
}

static void header(const xctx *x, util_buf *b, const char *what)
{
    const fmt_strategy *s = x->s;
    int i;

    util_buf_printf(b, "# %s\n", what);
    util_buf_printf(b, "# generated by hetplan %s from plan '%s', strategy %d\n",
              HETPLAN_VERSION, x->o->source ? x->o->source : "(unnamed)",
              x->o->strategy);
    util_buf_printf(b, "# model '%s' on cluster '%s': tp %d, dp %d, pp %d, "
                 "micro-batch %d, %d micro-batches, global batch %d, %s\n",
              x->m->name, x->c->name, s->tp, s->dp, s->pp, s->mbs, s->gas,
              x->global_batch, precision(x->m));
    for (i = 0; i < x->out->nnotes; i++)
        util_buf_printf(b, "# NOTE: %s\n", x->out->notes[i]);
}

/* The rank range text "a-b" or "a". */
static void range_text(char *buf, size_t n, int a, int b)
{
    if (a == b)
        snprintf(buf, n, "%d", a);
    else
        snprintf(buf, n, "%d-%d", a, b);
}

/* Notes shared by the launch scripts about agents and hosts. */
static void agent_notes(xctx *x)
{
    char hosts[240] = "";
    size_t used = 0;
    int k, n = 0;

    for (k = 0; k < x->c->nnodes; k++)
        if (x->node_groups[k] > 1) {
            if (used < sizeof hosts - 80)
                used += (size_t)snprintf(hosts + used, sizeof hosts - used,
                                         "%s'%s' (%d)", n ? ", " : "",
                                         host_of(x, k), x->node_groups[k]);
            else if (used < sizeof hosts - 5)
                used += (size_t)snprintf(hosts + used, sizeof hosts - used, ", ...");
            n++;
        }
    if (n > 0)
        note(x, "the plan's ranks on %d host(s) are not consecutive, so one "
                "torchrun per host cannot realise its placement; each run of "
                "consecutive ranks gets its own torchrun agent (node rank and "
                "GPUs), several on one host: %s agents", n, hosts);
}

/* The per-agent case arms of a launch script. */
static void launch_cases(const xctx *x, util_buf *b, const char *cmd)
{
    int k;

    util_buf_printf(b, "case \"${NODE_RANK:?set NODE_RANK to this agent's node rank, "
                 "0..%d}\" in\n", x->ng - 1);
    for (k = 0; k < x->ng; k++) {
        const xgroup *g = &x->g[k];
        char rr[32];
        range_text(rr, sizeof rr, g->first, g->first + g->n - 1);
        util_buf_printf(b, "%d)  # host '%s': %d x %s, global ranks %s\n", k,
                  host_of(x, g->node), g->n, type_of(x, g->node), rr);
        util_buf_printf(b, "    export CUDA_VISIBLE_DEVICES=");
        gpu_list(x, g, b);
        util_buf_printf(b, "\n");
        util_buf_printf(b, "    exec torchrun --nnodes %d --nproc-per-node %d "
                     "--node-rank %d --master-addr %s --master-port %d %s ;;\n",
                  x->ng, g->n, k, x->master, x->o->master_port, cmd);
    }
    util_buf_printf(b, "*)  echo \"$0: NODE_RANK must be 0..%d, got '$NODE_RANK'\" >&2\n"
                 "    exit 2 ;;\nesac\n", x->ng - 1);
}

static void agent_table(const xctx *x, util_buf *b)
{
    int k;

    util_buf_printf(b, "# node rank  host                  nproc  device          "
                 "CUDA_VISIBLE_DEVICES\n");
    for (k = 0; k < x->ng; k++) {
        const xgroup *g = &x->g[k];
        util_buf_printf(b, "# %9d  %-20s  %5d  %-14s  ", k, host_of(x, g->node), g->n,
                  type_of(x, g->node));
        gpu_list(x, g, b);
        util_buf_printf(b, "\n");
    }
}

/* ranks.txt: every rank's place. */
static void ranks_file(const xctx *x, util_buf *b)
{
    int k, i;

    header(x, b, "hetplan rank placement: global rank -> torchrun agent, "
                 "local rank, host and GPU");
    util_buf_printf(b, "# rank  node_rank  local_rank  host                  gpu  "
                 "device          stage  dp  tp\n");
    for (k = 0; k < x->ng; k++)
        for (i = 0; i < x->g[k].n; i++) {
            int r = x->g[k].first + i, node = x->g[k].node;
            int tpd = x->s->tp, dpd = x->s->dp;
            util_buf_printf(b, "%6d  %9d  %10d  %-20s  %3d  %-14s  %5d  %2d  %2d\n", r, k,
                      i, host_of(x, node), gpu_of(x, r), type_of(x, node),
                      r / (tpd * dpd), (r / tpd) % dpd, r % tpd);
        }
}

/* ---- Megatron-LM ----------------------------------------------------- */

static int is_block(const fmt_layer *l)
{
    return l->kind == FMT_KIND_TRANSFORMER;
}

static void megatron_split(xctx *x, int *blocks_out, int *even_out)
{
    const fmt_strategy *s = x->s;
    const fmt_model *m = x->m;
    int j, l, total = 0, even = 1, misplaced = 0, generic = 0, zero = 0;
    int *n = calloc((size_t)s->pp, sizeof *n);
    char list[400] = "";
    size_t used = 0;

    if (n == NULL) {
        *blocks_out = 0;
        *even_out = 0;
        return;
    }
    for (j = 0; j < s->pp; j++)
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
            const fmt_layer *ly = &m->layers[l];
            if (is_block(ly))
                n[j]++;
            else if (ly->kind == FMT_KIND_EMBEDDING && j != 0)
                misplaced++;
            else if ((ly->kind == FMT_KIND_HEAD || ly->kind == FMT_KIND_NORM) &&
                     j != s->pp - 1)
                misplaced++;
            else if (ly->kind == FMT_KIND_GENERIC)
                generic++;
        }
    for (j = 0; j < s->pp; j++) {
        total += n[j];
        if (n[j] != n[0])
            even = 0;
        if (n[j] == 0)
            zero++;
        if (used < sizeof list - 12)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                     j ? "," : "", n[j]);
    }
    *blocks_out = total;
    if (generic)
        note(x, "the model has %d layers of kind 'generic' that Megatron-LM's "
                "GPT model does not have; the flags describe its transformer "
                "blocks only", generic);
    if (misplaced)
        note(x, "the plan puts an embedding, final norm or head layer away from "
                "the first/last stage; Megatron-LM keeps the embedding on the "
                "first and the final norm and head on the last stage");
    if (s->pp > 1 && (!even || total % s->pp != 0)) {
        int first_last = s->pp >= 2 && n[0] > 0 && n[s->pp - 1] > 0 && zero == 0;
        for (j = 2; j < s->pp - 1 && first_last; j++)
            if (n[j] != n[1])
                first_last = 0;
        note(x, "the plan's layer split is uneven (transformer blocks per stage: "
                "%s); Megatron-LM %s splits its %d blocks evenly over %d stages%s, "
                "so it cannot express this split and the predicted time does not "
                "apply to the even split it runs", list, EXP_MEGATRON_VERSION,
             total, s->pp,
             total % s->pp != 0 ? " and refuses a block count the stage count "
                                  "does not divide"
                                : "");
        if (first_last)
            note(x, "newer Megatron-LM (core_r0.10.0 and later) can express it "
                    "by adding --decoder-first-pipeline-num-layers %d "
                    "--decoder-last-pipeline-num-layers %d",
                 n[0], n[s->pp - 1]);
        else if (zero)
            note(x, "%d stage(s) hold no transformer block; no Megatron-LM "
                    "version places a stage with embedding, norm or head "
                    "layers only", zero);
        even = 0;
    }
    *even_out = even;
    free(n);
}

static int has_tied(const fmt_model *m)
{
    int l;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].tied_group > 0)
            return 1;
    return 0;
}

static int has_kind(const fmt_model *m, int kind)
{
    int l;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].kind == kind)
            return 1;
    return 0;
}

static void megatron_args(xctx *x, util_buf *b, int blocks)
{
    const fmt_strategy *s = x->s;
    const fmt_model *m = x->m;
    const char *prec = precision(m);

    util_buf_printf(b, "MEGATRON_ARGS=\"\\\n");
    util_buf_printf(b, "  --tensor-model-parallel-size %d \\\n", s->tp);
    util_buf_printf(b, "  --pipeline-model-parallel-size %d \\\n", s->pp);
    util_buf_printf(b, "  --micro-batch-size %d \\\n", s->mbs);
    util_buf_printf(b, "  --global-batch-size %d \\\n", x->global_batch);
    util_buf_printf(b, "  --num-layers %d \\\n", blocks);
    if (m->hidden > 0)
        util_buf_printf(b, "  --hidden-size %d \\\n", m->hidden);
    if (m->ffn > 0)
        util_buf_printf(b, "  --ffn-hidden-size %d \\\n", m->ffn);
    if (m->heads > 0)
        util_buf_printf(b, "  --num-attention-heads %d \\\n", m->heads);
    if (m->seq > 0) {
        util_buf_printf(b, "  --seq-length %d \\\n", m->seq);
        util_buf_printf(b, "  --max-position-embeddings %d \\\n", m->seq);
    }
    if (strcmp(m->family, "llama") == 0)
        util_buf_printf(b, "  --swiglu \\\n  --normalization RMSNorm \\\n"
                     "  --position-embedding-type rope \\\n"
                     "  --disable-bias-linear \\\n");
    if (!has_tied(m) && has_kind(m, FMT_KIND_HEAD))
        util_buf_printf(b, "  --untie-embeddings-and-output-weights \\\n");
    if (x->p->zero_stage >= 1)
        util_buf_printf(b, "  --use-distributed-optimizer \\\n");
    if (x->p->recompute)
        util_buf_printf(b, "  --recompute-granularity full \\\n"
                     "  --recompute-method uniform \\\n"
                     "  --recompute-num-layers 1 \\\n");
    if (strcmp(prec, "fp16") == 0)
        util_buf_printf(b, "  --fp16 \\\n");
    else if (strcmp(prec, "bf16") == 0)
        util_buf_printf(b, "  --bf16 \\\n");
    util_buf_printf(b, "\"\n");
}

static int export_megatron(xctx *x, util_error *err)
{
    util_buf b = {0}, r = {0};
    int blocks = 0, even = 0;
    export_result *out = x->out;

    (void)err;
    megatron_split(x, &blocks, &even);
    if (blocks == 0)
        note(x, "the model has no transformer blocks; Megatron-LM's GPT model "
                "needs --num-layers >= 1");
    if (x->m->hidden <= 0 || x->m->heads <= 0 || x->m->seq <= 0)
        note(x, "the model file gives no hidden size, heads or sequence length "
                "(its 'shape'); add --hidden-size, --num-attention-heads, "
                "--seq-length and --max-position-embeddings yourself");
    if (x->p->zero_stage >= 2)
        note(x, "the plan's memory assumes ZeRO stage %d; Megatron-LM %s shards "
                "only the optimizer state (--use-distributed-optimizer, like ZeRO "
                "stage 1), so expect more memory per GPU than predicted",
             x->p->zero_stage, EXP_MEGATRON_VERSION);
    if (x->s->schedule == FMT_SCHED_GPIPE && x->s->pp > 1)
        note(x, "the plan assumes a GPipe schedule; Megatron-LM runs 1F1B, which "
                "keeps fewer activations alive (the time model is the same)");
    agent_notes(x);

    header(x, &b, "Megatron-LM " EXP_MEGATRON_VERSION
                  " launch (pretrain_gpt.py) with torchrun (PyTorch " EXP_TORCH_VERSION ")");
    util_buf_printf(&b, "#\n# Run from the Megatron-LM checkout on every host, each agent "
                  "with its NODE_RANK:\n#   NODE_RANK=0 sh megatron.sh "
                  "--data-path ... --tokenizer-type ... --train-iters ... "
                  "--lr ...\n");
    util_buf_printf(&b, "# Arguments after the script name (data, tokenizer, optimizer, "
                  "schedule) are passed to pretrain_gpt.py unchanged.\n");
    if (x->m->vocab > 0)
        util_buf_printf(&b, "# The plan's model has a vocabulary of %d: use the tokenizer "
                      "it was planned for.\n", x->m->vocab);
    util_buf_printf(&b, "# Megatron-LM numbers ranks TP innermost, then DP, then PP, as "
                  "the plan does;\n# torchrun agent k runs the global ranks that "
                  "follow those of agents 0..k-1.\n#\n");
    agent_table(x, &b);
    util_buf_printf(&b, "\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    util_buf_printf(&b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    megatron_args(x, &b, blocks);
    util_buf_printf(&b, "\n");
    launch_cases(x, &b, "pretrain_gpt.py $MEGATRON_ARGS \"$@\"");

    ranks_file(x, &r);
    if (b.failed || r.failed) {
        free(b.p);
        free(r.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    snprintf(out->files[0].name, sizeof out->files[0].name, "megatron.sh");
    snprintf(out->files[0].what, sizeof out->files[0].what,
             "Megatron-LM flags and per-node torchrun lines");
    out->files[0].executable = 1;
    out->files[0].text = b.p;
    snprintf(out->files[1].name, sizeof out->files[1].name, "ranks.txt");
    snprintf(out->files[1].what, sizeof out->files[1].what,
             "global rank -> agent, local rank, host, GPU");
    out->files[1].text = r.p;
    out->nfiles = 2;
    return UTIL_OK;
}

/* ---- torchrun -------------------------------------------------------- */

static int export_torchrun(xctx *x, util_error *err)
{
    util_buf b = {0}, r = {0};
    export_result *out = x->out;

    agent_notes(x);
    header(x, &b, "torchrun (PyTorch " EXP_TORCH_VERSION ") launch, one agent per "
                  "run of consecutive ranks on one host");
    util_buf_printf(&b, "#\n# On every host, for each agent listed below for it:\n"
                  "#   NODE_RANK=k sh torchrun.sh train.py [training arguments]\n");
    util_buf_printf(&b, "# torchrun gives agent k the global ranks after those of agents "
                  "0..k-1 (RANK = that\n# offset + LOCAL_RANK); local rank i uses "
                  "the i-th GPU of CUDA_VISIBLE_DEVICES, so the\n# lists below put "
                  "every plan rank on its planned GPU (see ranks.txt).  Build the\n"
                  "# TP, DP and PP groups with TP innermost, then DP, then PP.\n#\n");
    agent_table(x, &b);
    util_buf_printf(&b, "\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    util_buf_printf(&b, "export HETPLAN_TP=%d HETPLAN_DP=%d HETPLAN_PP=%d "
                  "HETPLAN_MICRO_BATCH=%d HETPLAN_MICRO_BATCHES=%d\n",
              x->s->tp, x->s->dp, x->s->pp, x->s->mbs, x->s->gas);
    util_buf_printf(&b, "export HETPLAN_STAGE_BOUNDARIES=");
    {
        int j;
        for (j = 0; j <= x->s->pp; j++)
            util_buf_printf(&b, "%s%d", j ? "," : "", x->s->bounds[j]);
    }
    util_buf_printf(&b, "\n\n");
    launch_cases(x, &b, "\"$@\"");
    ranks_file(x, &r);
    if (b.failed || r.failed) {
        free(b.p);
        free(r.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    snprintf(out->files[0].name, sizeof out->files[0].name, "torchrun.sh");
    snprintf(out->files[0].what, sizeof out->files[0].what,
             "per-node torchrun lines and CUDA_VISIBLE_DEVICES");
    out->files[0].executable = 1;
    out->files[0].text = b.p;
    snprintf(out->files[1].name, sizeof out->files[1].name, "ranks.txt");
    snprintf(out->files[1].what, sizeof out->files[1].what,
             "global rank -> agent, local rank, host, GPU");
    out->files[1].text = r.p;
    out->nfiles = 2;
    return UTIL_OK;
}

/* ---- hostfile -------------------------------------------------------- */

/* Hosts in order of their first rank, slots = the host's GPUs in the plan. */
static void hostfile_text(const xctx *x, util_buf *b, const char *what)
{
    int k, i;

    header(x, b, what);
    for (k = 0; k < x->ng; k++) {
        int node = x->g[k].node, slots = 0, seen = 0;
        for (i = 0; i < k; i++)
            if (x->g[i].node == node)
                seen = 1;
        if (seen)
            continue;
        for (i = k; i < x->ng; i++)
            if (x->g[i].node == node)
                slots += x->g[i].n;
        util_buf_printf(b, "%s slots=%d\n", host_of(x, node), slots);
    }
}

static void order_notes(xctx *x, const char *launcher)
{
    int k;

    if (x->identity_gpus)
        return;
    for (k = 0; k < x->c->nnodes; k++)
        if (x->node_groups[k] > 1) {
            note(x, "%s gives each host one block of consecutive ranks, but the "
                    "plan's ranks on host '%s' (and maybe others) are not "
                    "consecutive: launch with the torchrun export instead",
                 launcher, host_of(x, k));
            return;
        }
    for (k = 0; k < x->ng; k++) {
        int i, ident = 1;
        for (i = 0; i < x->g[k].n; i++)
            if (gpu_of(x, x->g[k].first + i) != i)
                ident = 0;
        if (!ident) {
            util_buf gl = {0};
            gpu_list(x, &x->g[k], &gl);
            note(x, "%s gives a host's ranks its GPUs in ascending order, but the "
                    "plan puts ranks %d-%d on GPUs %s of host '%s' (and maybe "
                    "others): launch with the torchrun export instead",
                 launcher, x->g[k].first, x->g[k].first + x->g[k].n - 1,
                 gl.p ? gl.p : "?", host_of(x, x->g[k].node));
            free(gl.p);
            return;
        }
    }
}

static int export_hostfile(xctx *x, util_error *err)
{
    util_buf b = {0};
    export_result *out = x->out;

    order_notes(x, "mpirun (--map-by slot)");
    hostfile_text(x, &b, "MPI / DeepSpeed hostfile: hosts in rank order, one slot "
                         "per GPU the plan uses");
    if (b.failed) {
        free(b.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    snprintf(out->files[0].name, sizeof out->files[0].name, "hostfile");
    snprintf(out->files[0].what, sizeof out->files[0].what,
             "hosts in rank order with their slots");
    out->files[0].text = b.p;
    out->nfiles = 1;
    return UTIL_OK;
}

/* ---- DeepSpeed ------------------------------------------------------- */

static void json_string(util_buf *b, const char *s)
{
    util_buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            util_buf_printf(b, "\\%c", ch);
        else if (ch < 0x20)
            util_buf_printf(b, "\\u%04x", ch);
        else
            util_buf_printf(b, "%c", ch);
    }
    util_buf_printf(b, "\"");
}

static int export_deepspeed(xctx *x, util_error *err)
{
    util_buf cfg = {0}, hf = {0}, parts = {0}, sh = {0};
    const fmt_strategy *s = x->s;
    const char *prec = precision(x->m);
    export_result *out = x->out;
    int j, l, zero = x->p->zero_stage;

    if (s->pp > 1 && zero >= 2) {
        note(x, "the plan assumes ZeRO stage %d, but DeepSpeed's pipeline engine "
                "accepts only stage 0 or 1; ds_config.json asks for stage 1, so "
                "expect more memory per GPU than predicted", zero);
        zero = 1;
    }
    if (s->schedule == FMT_SCHED_GPIPE && s->pp > 1)
        note(x, "the plan assumes a GPipe schedule; DeepSpeed's pipeline engine "
                "runs its 1F1B-style TrainSchedule, which keeps fewer activations "
                "alive");
    if (s->tp > 1)
        note(x, "tensor parallelism (tp %d) is not done by DeepSpeed itself: the "
                "model must shard its layers (e.g. Megatron-style) and pass an mpu "
                "or a PipeModelDataParallelTopology with num_mp=%d", s->tp, s->tp);
    order_notes(x, "the deepspeed launcher");

    /* ds_config.json: batch sizes satisfy train_batch_size =
     * micro * gradient_accumulation_steps * data-parallel size */
    util_buf_printf(&cfg, "{\n");
    util_buf_printf(&cfg, "  \"train_batch_size\": %d,\n", x->global_batch);
    util_buf_printf(&cfg, "  \"train_micro_batch_size_per_gpu\": %d,\n", s->mbs);
    util_buf_printf(&cfg, "  \"gradient_accumulation_steps\": %d,\n", s->gas);
    util_buf_printf(&cfg, "  \"fp16\": {\n    \"enabled\": %s", strcmp(prec, "fp16") == 0 ? "true" : "false");
    if (strcmp(prec, "fp16") == 0)
        util_buf_printf(&cfg, ",\n    \"loss_scale\": 0,\n    \"initial_scale_power\": 16");
    util_buf_printf(&cfg, "\n  },\n");
    util_buf_printf(&cfg, "  \"bf16\": {\n    \"enabled\": %s\n  },\n",
              strcmp(prec, "bf16") == 0 ? "true" : "false");
    util_buf_printf(&cfg, "  \"zero_optimization\": {\n    \"stage\": %d\n  },\n", zero);
    util_buf_printf(&cfg, "  \"steps_per_print\": 10,\n");
    util_buf_printf(&cfg, "  \"wall_clock_breakdown\": false\n}\n");

    hostfile_text(x, &hf, "DeepSpeed hostfile: hosts in rank order, one slot per "
                          "GPU the plan uses");

    /* pipeline_parts.json: PipelineModule's `parts` for these stages */
    util_buf_printf(&parts, "{\n  \"generator\": \"hetplan %s\",\n", HETPLAN_VERSION);
    util_buf_printf(&parts, "  \"deepspeed\": \"%s\",\n", EXP_DEEPSPEED_VERSION);
    util_buf_printf(&parts, "  \"num_stages\": %d,\n", s->pp);
    util_buf_printf(&parts, "  \"topology\": {\"num_pp\": %d, \"num_dp\": %d, \"num_mp\": %d},\n",
              s->pp, s->dp, s->tp);
    util_buf_printf(&parts, "  \"activation_checkpoint_interval\": %d,\n",
              x->p->recompute ? 1 : 0);
    util_buf_printf(&parts, "  \"parts\": [");
    for (j = 0; j <= s->pp; j++)
        util_buf_printf(&parts, "%s%d", j ? ", " : "", s->bounds[j]);
    util_buf_printf(&parts, "],\n  \"stages\": [\n");
    for (j = 0; j < s->pp; j++) {
        util_buf_printf(&parts, "    {\"stage\": %d, \"first_layer\": %d, \"last_layer\": %d, "
                          "\"layers\": [", j, s->bounds[j], s->bounds[j + 1] - 1);
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
            if (l > s->bounds[j])
                util_buf_printf(&parts, ", ");
            json_string(&parts, x->m->layers[l].name);
        }
        util_buf_printf(&parts, "]}%s\n", j + 1 < s->pp ? "," : "");
    }
    util_buf_printf(&parts, "  ]\n}\n");

    header(x, &sh, "DeepSpeed " EXP_DEEPSPEED_VERSION " launch with its own launcher "
                   "(deepspeed, pdsh/ssh to the hosts of hostfile)");
    util_buf_printf(&sh, "#\n# On the first host of hostfile:\n"
                   "#   sh deepspeed.sh train.py [training arguments]\n"
                   "# train.py builds PipelineModule(..., num_stages=%d) with "
                   "self.parts from pipeline_parts.json\n# (docs/export.md) and "
                   "reads ds_config.json through --deepspeed_config.\n",
              s->pp);
    util_buf_printf(&sh, "\nDIR=$(cd \"$(dirname \"$0\")\" && pwd)\n");
    util_buf_printf(&sh, "SCRIPT=${1:?usage: sh deepspeed.sh train.py [arguments]}\nshift\n");
    util_buf_printf(&sh, "exec deepspeed --hostfile \"$DIR/hostfile\" --master_addr %s "
                   "--master_port %d \\\n    \"$SCRIPT\" --deepspeed "
                   "--deepspeed_config \"$DIR/ds_config.json\" \"$@\"\n",
              x->master, x->o->master_port);

    if (cfg.failed || hf.failed || parts.failed || sh.failed) {
        free(cfg.p);
        free(hf.p);
        free(parts.p);
        free(sh.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    snprintf(out->files[0].name, sizeof out->files[0].name, "ds_config.json");
    snprintf(out->files[0].what, sizeof out->files[0].what,
             "batch sizes, precision, ZeRO stage");
    out->files[0].text = cfg.p;
    snprintf(out->files[1].name, sizeof out->files[1].name, "hostfile");
    snprintf(out->files[1].what, sizeof out->files[1].what,
             "hosts in rank order with their slots");
    out->files[1].text = hf.p;
    snprintf(out->files[2].name, sizeof out->files[2].name, "pipeline_parts.json");
    snprintf(out->files[2].what, sizeof out->files[2].what,
             "PipelineModule stage boundaries (parts)");
    out->files[2].text = parts.p;
    snprintf(out->files[3].name, sizeof out->files[3].name, "deepspeed.sh");
    snprintf(out->files[3].what, sizeof out->files[3].what,
             "deepspeed launcher command");
    out->files[3].executable = 1;
    out->files[3].text = sh.p;
    out->nfiles = 4;
    return UTIL_OK;
}

/* ---- entry point ----------------------------------------------------- */

int export_build(int target, const fmt_cluster *c, const fmt_model *m,
                      const cost_params *p, const fmt_strategy *s,
                      int global_batch, const export_options *o,
                      export_result *out, util_error *err)
{
    xctx x;
    export_options defaults;
    int rc = UTIL_OK, r;

    memset(&x, 0, sizeof x);
    if (out == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL, "no output");
    memset(out, 0, sizeof *out);
    out->target = target;
    if (o == NULL) {
        export_options_init(&defaults);
        o = &defaults;
    }
    if (export_target_name(target) == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "unknown export target %d", target);
        goto done;
    }
    if (c == NULL || m == NULL || p == NULL || s == NULL || s->ranks == NULL ||
        s->bounds == NULL || c->device_node == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "export needs a cluster, a model and a strategy");
        goto done;
    }
    if (s->tp < 1 || s->dp < 1 || s->pp < 1 ||
        s->tp * s->dp * s->pp != c->ndevices) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "strategy tp %d x dp %d x pp %d does not use the "
                            "cluster's %d devices", s->tp, s->dp, s->pp,
                            c->ndevices);
        goto done;
    }
    for (r = 0; r < c->ndevices; r++)
        if (s->ranks[r] < 0 || s->ranks[r] >= c->ndevices) {
            rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                "rank %d is on device %d, outside 0..%d", r,
                                s->ranks[r], c->ndevices - 1);
            goto done;
        }
    if (s->bounds[0] != 0 || s->bounds[s->pp] != m->nlayers) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "stage boundaries must run from 0 to %d", m->nlayers);
        goto done;
    }
    if (o->master_port < 1 || o->master_port > 65535) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "master port must be in 1..65535, got %d",
                            o->master_port);
        goto done;
    }
    x.c = c;
    x.m = m;
    x.p = p;
    x.s = s;
    x.o = o;
    x.global_batch = global_batch;
    x.nranks = c->ndevices;
    x.out = out;
    if ((rc = make_groups(&x, err)) != UTIL_OK)
        goto done;
    if (global_batch != s->mbs * s->gas * s->dp)
        note(&x, "global batch %d is not micro-batch %d x %d micro-batches x dp "
                 "%d; the launchers derive the micro-batch count from the global "
                 "batch", global_batch, s->mbs, s->gas, s->dp);
    switch (target) {
    case EXPORT_MEGATRON:
        rc = export_megatron(&x, err);
        break;
    case EXPORT_DEEPSPEED:
        rc = export_deepspeed(&x, err);
        break;
    case EXPORT_TORCHRUN:
        rc = export_torchrun(&x, err);
        break;
    default:
        rc = export_hostfile(&x, err);
        break;
    }
done:
    free(x.g);
    free(x.node_groups);
    if (rc != UTIL_OK) {
        export_free(out);
        out->target = target;
    }
    return rc;
}
