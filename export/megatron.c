/* export/megatron.c: Megatron-LM command lines (pretrain_gpt.py flags,
 * launched with torchrun) for a plan's strategy, for core_r0.9.0 or
 * core_v0.19.0 (flag lists in docs/export.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Transformer blocks per stage and what the split needs. */
typedef struct split {
    int *n;         /* blocks of each stage */
    int total;      /* blocks of the model */
    int even;       /* every stage holds the same number */
    int empty;      /* stages without a block */
    int first;      /* --decoder-first-pipeline-num-layers, -1 = none */
    int last;       /* --decoder-last-pipeline-num-layers, -1 = none */
    int layout;     /* 1: --pipeline-model-parallel-layout */
} split;

static int is_block(const fmt_layer *l)
{
    return l->kind == FMT_KIND_TRANSFORMER;
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

/* "3,4,4,5" into buf. */
static void count_list(const split *sp, int pp, char *buf, size_t n)
{
    size_t used = 0;
    int j;

    buf[0] = '\0';
    for (j = 0; j < pp && used + 14 < n; j++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", j ? "," : "",
                                 sp->n[j]);
}

/* Layers the GPT model of Megatron-LM does not place as the plan does. */
static void layer_kinds(export_ctx *x)
{
    const fmt_strategy *s = x->s;
    int j, l, misplaced = 0, generic = 0;

    for (j = 0; j < s->pp; j++)
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
            int k = x->m->layers[l].kind;
            if (k == FMT_KIND_EMBEDDING && j != 0)
                misplaced++;
            else if ((k == FMT_KIND_HEAD || k == FMT_KIND_NORM) && j != s->pp - 1)
                misplaced++;
            else if (k == FMT_KIND_GENERIC)
                generic++;
        }
    if (generic)
        export_approx(x, "the model has %d layers of kind 'generic' that "
                      "Megatron-LM's GPT model does not have; the flags "
                      "describe its transformer blocks only", generic);
    if (misplaced)
        export_approx(x, "the plan puts an embedding, final norm or head "
                      "layer away from the first/last stage; Megatron-LM "
                      "keeps the embedding on the first and the final norm "
                      "and head on the last stage");
}

/* How the stage split is written; notes what cannot be. */
static int megatron_split(export_ctx *x, split *sp)
{
    const fmt_strategy *s = x->s;
    int j, l, vpp = s->vpp > 1 ? s->vpp : 1, pp = s->pp, mid = 1;
    char list[200];

    memset(sp, 0, sizeof *sp);
    sp->first = sp->last = -1;
    sp->n = calloc((size_t)pp, sizeof *sp->n);
    if (sp->n == NULL)
        return -1;
    for (j = 0; j < pp; j++)
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
            if (is_block(&x->m->layers[l]))
                sp->n[j]++;
    sp->even = 1;
    for (j = 0; j < pp; j++) {
        sp->total += sp->n[j];
        sp->even &= sp->n[j] == sp->n[0];
        sp->empty += sp->n[j] == 0;
    }
    for (j = 2; j < pp - 1; j++)
        mid &= sp->n[j] == sp->n[1];
    count_list(sp, pp, list, sizeof list);
    for (j = 0; j < pp && vpp > 1; j++)
        if (sp->n[j] % vpp != 0) {
            export_approx(x, "%d virtual stages need every stage's block "
                          "count (%s) to be a multiple of %d", vpp, list, vpp);
            return 0;
        }
    if (sp->even || pp == 1)
        return 0;
    if (x->o->version == EXPORT_VERSION_NEW) {
        sp->layout = 1;
        return 0;
    }
    /* core_r0.9.0: first and last stage counts, the rest split evenly */
    if (vpp > 1 || sp->empty || !mid) {
        export_approx(x, "the plan's layer split is uneven (transformer "
                      "blocks per stage: %s); Megatron-LM %s can set only "
                      "the first and last stage's block counts (with equal "
                      "non-empty middle stages and no virtual stages); "
                      "--target-version %s expresses it with "
                      "--pipeline-model-parallel-layout", list,
                      EXPORT_MEGATRON_OLD, EXPORT_MEGATRON_NEW);
        return 0;
    }
    if (pp == 2) {
        sp->first = sp->n[0]; /* the last stage takes the rest */
    } else {
        if (sp->n[0] != sp->n[1])
            sp->first = sp->n[0];
        if (sp->n[pp - 1] != sp->n[1])
            sp->last = sp->n[pp - 1];
    }
    return 0;
}

/* --pipeline-model-parallel-layout: E embedding, t block, L loss/head,
 * '|' between model chunks; chunk k * pp + j is the k-th of device j's
 * vpp equal parts of its blocks. */
static void layout_text(const export_ctx *x, const split *sp, util_buf *b)
{
    int pp = x->s->pp, vpp = x->s->vpp > 1 ? x->s->vpp : 1, k, j, i;

    for (k = 0; k < vpp; k++)
        for (j = 0; j < pp; j++) {
            if (k || j)
                util_buf_printf(b, "|");
            if (k == 0 && j == 0)
                util_buf_printf(b, "E");
            for (i = 0; i < sp->n[j] / vpp; i++)
                util_buf_printf(b, "t");
            if (k == vpp - 1 && j == pp - 1)
                util_buf_printf(b, "L");
        }
}

/* The model's architecture, family defaults for a layer list. */
static void arch_args(export_ctx *x, util_buf *b)
{
    const fmt_model *m = x->m;
    int llama = strcmp(m->family, "llama") == 0;
    int mlp = m->mlp ? m->mlp : (llama ? FMT_MLP_SWIGLU : FMT_MLP_GELU);
    int pos = m->positions ? m->positions
                           : (llama ? FMT_POS_ROTARY : FMT_POS_LEARNED);
    int norm = m->norm ? m->norm : (llama ? FMT_NORM_RMSNORM : FMT_NORM_LAYERNORM);
    int bias = m->bias ? m->bias : (llama ? FMT_FLAG_OFF : FMT_FLAG_ON);

    if (mlp == FMT_MLP_SWIGLU)
        util_buf_printf(b, "  --swiglu \\\n");
    if (norm == FMT_NORM_RMSNORM)
        util_buf_printf(b, "  --normalization RMSNorm \\\n");
    if (pos == FMT_POS_ROTARY)
        util_buf_printf(b, "  --position-embedding-type rope \\\n");
    else if (pos == FMT_POS_ALIBI)
        export_approx(x, "the model uses ALiBi positions, which Megatron-LM's "
                      "GPT model does not have");
    if (bias == FMT_FLAG_OFF)
        util_buf_printf(b, "  --disable-bias-linear \\\n");
    if (m->dropout == FMT_FLAG_OFF)
        util_buf_printf(b, "  --attention-dropout 0 \\\n  --hidden-dropout 0 \\\n");
    if (m->kv_heads > 0 && m->kv_heads != m->heads)
        util_buf_printf(b, "  --group-query-attention \\\n"
                        "  --num-query-groups %d \\\n", m->kv_heads);
    if (!has_tied(m) && has_kind(m, FMT_KIND_HEAD))
        util_buf_printf(b, "  --untie-embeddings-and-output-weights \\\n");
}

/* ZeRO 2 and 3 run on Megatron-FSDP (core_v0.19.0). */
static int uses_fsdp(const export_ctx *x)
{
    return export_zero(x) >= 2 && x->o->version == EXPORT_VERSION_NEW;
}

/* Optimizer offload: --optimizer-cpu-offload (core_v0.19.0), which runs
 * inside the distributed optimizer and needs its precision-aware path
 * (the 16-bit weight shards go to the host optimizer, which keeps the
 * fp32 master weights and Adam states there; their dtypes stay at the
 * fp32 defaults); core_r0.9.0 has no such flag. */
static void offload_args(export_ctx *x, util_buf *b, int zero)
{
    if (x->caps.no_offload) {
        export_approx(x, "the plan offloads the optimizer state to host "
                      "memory; Megatron-LM %s has no --optimizer-cpu-offload "
                      "(--target-version %s has it)", EXPORT_MEGATRON_OLD,
                      EXPORT_MEGATRON_NEW);
        return;
    }
    if (x->caps.offload_zero_limit > 0 && zero >= x->caps.offload_zero_limit) {
        export_approx(x, "the plan offloads the optimizer state with ZeRO "
                      "stage %d; Megatron-LM %s offloads only the distributed "
                      "optimizer's (ZeRO 1): Megatron-FSDP keeps its fp32 "
                      "main weights on the GPU", zero, export_release(x));
        return;
    }
    if (zero < 1) {
        export_approx(x, "the plan offloads the optimizer without sharding "
                      "it; Megatron-LM offloads the distributed optimizer's "
                      "shard: the command adds --use-distributed-optimizer");
        util_buf_printf(b, "  --use-distributed-optimizer \\\n");
    }
    util_buf_printf(b, "  --optimizer-cpu-offload \\\n"
                    "  --use-precision-aware-optimizer \\\n");
}

/* Communication overlap with the rules of validate_args (arguments.py
 * of both releases): --overlap-param-gather needs the distributed
 * optimizer (or Megatron-FSDP) and --overlap-grad-reduce,
 * --tp-comm-overlap sequence parallelism (and Transformer Engine, the
 * default --transformer-impl); P2P overlaps only with the interleaved
 * schedule, on by default there (--no-overlap-p2p-communication turns it
 * off, then with pp > 2 only). */
static void overlap_args(export_ctx *x, util_buf *b)
{
    const fmt_strategy *s = x->s;
    int grad = cost_strategy_overlap(x->p, s, COST_OVERLAP_GRAD) && s->dp > 1;
    int param = cost_strategy_overlap(x->p, s, COST_OVERLAP_PARAM);
    int tp = cost_strategy_overlap(x->p, s, COST_OVERLAP_TP);
    int p2p = cost_strategy_overlap(x->p, s, COST_OVERLAP_P2P);

    if (param && !grad) {
        export_approx(x, "the plan gathers the weights behind the forward "
                      "pass without reducing the gradients behind the "
                      "backward; Megatron-LM's --overlap-param-gather needs "
                      "--overlap-grad-reduce: the command adds it");
        grad = 1;
    }
    if (grad)
        util_buf_printf(b, "  --overlap-grad-reduce \\\n");
    if (param)
        util_buf_printf(b, "  --overlap-param-gather \\\n");
    if (tp && x->caps.no_overlap_tp)
        export_approx(x, "the plan overlaps TP communication with GEMMs; "
                      "Megatron-LM %s bootstraps Transformer Engine's "
                      "userbuffers with an MPI process group, which a "
                      "torchrun launch has not (--target-version %s uses "
                      "NCCL)", EXPORT_MEGATRON_OLD, EXPORT_MEGATRON_NEW);
    else if (tp && !cost_overlap_tp_hardware(x->c, x->m, s))
        export_approx(x, "the plan overlaps TP communication with GEMMs, but "
                      "a TP group is not inside one node with NVLink-class "
                      "links, which Transformer Engine's userbuffers need");
    else if (tp)
        util_buf_printf(b, "  --tp-comm-overlap \\\n");
    if (s->vpp > 1 && s->pp > 1 && !p2p) {
        if (s->pp > 2)
            util_buf_printf(b, "  --no-overlap-p2p-communication \\\n");
        else
            export_approx(x, "the plan interleaves over pp 2 with blocking "
                          "pipeline sends; Megatron-LM needs pp > 2 for that "
                          "(or P2P overlap)");
    } else if (s->vpp <= 1 && s->pp > 1 && p2p && s->overlap_p2p == 1)
        export_note(x, "the plan's time assumes pipeline sends behind "
                    "compute (overlap_p2p); Megatron-LM overlaps them only "
                    "with the interleaved schedule, a little slower");
}

/* Recomputation, sequence parallelism, optimizer sharding, precision. */
static void feature_args(export_ctx *x, util_buf *b)
{
    const fmt_strategy *s = x->s;
    const char *prec = export_precision(x->m);
    int rc = export_recompute(x), zero = export_zero(x);

    if (s->sp > 0 && s->tp > 1)
        util_buf_printf(b, "  --sequence-parallel \\\n");
    if (zero == 1)
        util_buf_printf(b, "  --use-distributed-optimizer \\\n");
    else if (uses_fsdp(x)) {
        /* Megatron-FSDP saves only its own checkpoint format; its main
         * gradients default to the weights' dtype, bf16 accumulates in
         * fp32 as Megatron-LM's DDP does (docs/memory-model.md) */
        util_buf_printf(b, "  --use-megatron-fsdp \\\n"
                        "  --data-parallel-sharding-strategy %s \\\n"
                        "  --ckpt-format fsdp_dtensor \\\n",
                        zero == 2 ? "optim_grads" : "optim_grads_params");
        if (strcmp(prec, "bf16") == 0)
            util_buf_printf(b, "  --megatron-fsdp-main-grads-dtype fp32 \\\n");
    } else if (x->caps.zero_limit > 0 && zero >= x->caps.zero_limit)
        export_approx(x, "the plan shards %s over the DP group (ZeRO stage "
                      "%d); Megatron-LM %s shards only the optimizer state "
                      "(--use-distributed-optimizer); --target-version %s "
                      "has --use-megatron-fsdp", zero == 2 ? "gradients" :
                      "gradients and weights", zero, EXPORT_MEGATRON_OLD,
                      EXPORT_MEGATRON_NEW);
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER)
        offload_args(x, b, zero);
    overlap_args(x, b);
    if (rc == FMT_RECOMPUTE_FULL)
        util_buf_printf(b, "  --recompute-granularity full \\\n"
                        "  --recompute-method uniform \\\n"
                        "  --recompute-num-layers 1 \\\n");
    else if (rc == FMT_RECOMPUTE_SELECTIVE)
        util_buf_printf(b, "  --recompute-granularity selective \\\n");
    if (strcmp(prec, "fp16") == 0)
        util_buf_printf(b, "  --fp16 \\\n");
    else if (strcmp(prec, "bf16") == 0)
        util_buf_printf(b, "  --bf16 \\\n");
}

static void megatron_args(export_ctx *x, util_buf *b, const split *sp)
{
    const fmt_strategy *s = x->s;
    const fmt_model *m = x->m;
    int vpp = s->vpp > 1 ? s->vpp : 1;

    util_buf_printf(b, "MEGATRON_ARGS=\"\\\n");
    util_buf_printf(b, "  --tensor-model-parallel-size %d \\\n", s->tp);
    util_buf_printf(b, "  --pipeline-model-parallel-size %d \\\n", s->pp);
    util_buf_printf(b, "  --micro-batch-size %d \\\n", s->mbs);
    util_buf_printf(b, "  --global-batch-size %d \\\n", x->global_batch);
    util_buf_printf(b, "  --num-layers %d \\\n", sp->total);
    if (sp->layout) {
        util_buf_printf(b, "  --pipeline-model-parallel-layout ");
        layout_text(x, sp, b);
        util_buf_printf(b, " \\\n");
    } else {
        if (sp->first >= 0)
            util_buf_printf(b, "  --decoder-first-pipeline-num-layers %d \\\n",
                            sp->first);
        if (sp->last >= 0)
            util_buf_printf(b, "  --decoder-last-pipeline-num-layers %d \\\n",
                            sp->last);
        if (vpp > 1 && x->o->version == EXPORT_VERSION_NEW)
            util_buf_printf(b, "  --num-virtual-stages-per-pipeline-rank %d \\\n",
                            vpp);
        else if (vpp > 1 && s->pp > 0)
            util_buf_printf(b, "  --num-layers-per-virtual-pipeline-stage %d \\\n",
                            sp->n[0] / vpp);
    }
    /* core_v0.19.0: micro-batches pp does not divide run in groups of
       cost_vpp_group (the default group, pp, would raise) */
    if (vpp > 1 && s->pp > 1 && s->gas % s->pp != 0 &&
        x->o->version == EXPORT_VERSION_NEW && cost_vpp_group(s->pp, s->gas) > 0)
        util_buf_printf(b, "  --microbatch-group-size-per-virtual-pipeline-stage %d \\\n",
                        cost_vpp_group(s->pp, s->gas));
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
    arch_args(x, b);
    feature_args(x, b);
    util_buf_printf(b, "\"\n");
}

/* What Megatron-LM cannot run as planned, whatever the flags. */
static void megatron_limits(export_ctx *x, const split *sp)
{
    const fmt_strategy *s = x->s;

    layer_kinds(x);
    /* Megatron-LM's GPT MLP runs GeLU, --swiglu or --squared-relu (the
     * flag lists of core_r0.9.0 and core_v0.19.0); no plain ReLU */
    if (x->m->mlp == FMT_MLP_RELU)
        export_approx(x, "the model has a ReLU MLP (as OPT has), which Megatron-LM's "
                      "GPT model does not have (GeLU, --swiglu, "
                      "--squared-relu): the command trains a GeLU MLP");
    /* the training code the model describes (docs/memory-model.md):
     * Megatron-LM runs its own vocabulary-parallel cross entropy and keeps
     * its gradients in a contiguous buffer */
    if (x->m->cross_entropy == FMT_CE_PYTORCH)
        export_approx(x, "the model %s, "
                      "which Megatron-LM does not run (its vocabulary-parallel "
                      "cross entropy holds one fp32 logits tensor less)",
                      x->m->fw_defaults & FMT_FW_SET_CE
                          ? "names a PyTorch training.framework (so "
                            "training.cross_entropy 'pytorch')"
                          : "states training.cross_entropy 'pytorch'");
    if (x->m->grad_buffer == FMT_GRADS_SET_TO_NONE)
        export_approx(x, "the model states training.grad_buffer 'set_to_none', "
                      "which Megatron-LM does not run (its DDP keeps the "
                      "gradients in a persistent buffer)");
    if (sp->total == 0)
        export_approx(x, "the model has no transformer blocks; Megatron-LM's "
                      "GPT model needs --num-layers >= 1");
    if (x->m->hidden <= 0 || x->m->heads <= 0 || x->m->seq <= 0)
        export_approx(x, "the model file gives no hidden size, heads or "
                      "sequence length (its 'shape'); add --hidden-size, "
                      "--num-attention-heads, --seq-length and "
                      "--max-position-embeddings yourself");
    if (x->caps.no_gpipe && s->schedule == FMT_SCHED_GPIPE && s->pp > 1)
        export_approx(x, "the plan assumes a GPipe schedule; Megatron-LM runs "
                      "1F1B, which keeps fewer activations alive");
    if (x->caps.no_uneven_tp && s->tp_heads != NULL)
        export_approx(x, "the plan splits heads and MLP columns unevenly over "
                      "the TP group; Megatron-LM shards every tensor evenly "
                      "(the torchrun export writes the per-rank shards)");
    if (s->vpp > 1 && s->pp == 1)
        export_approx(x, "Megatron-LM interleaves virtual stages only over a "
                      "pipeline (pp > 1); the plan has %d virtual stages on "
                      "one stage", s->vpp);
    if (s->vpp > 1 && s->pp > 1 && s->gas % s->pp != 0 &&
        x->o->version == EXPORT_VERSION_OLD)
        export_approx(x, "Megatron-LM %s runs virtual stages only when the "
                      "%d micro-batches are a multiple of pp %d",
                      EXPORT_MEGATRON_OLD, s->gas, s->pp);
    if (s->sp > 0 && s->tp == 1)
        export_note(x, "sequence parallelism has no effect with tp 1 and is "
                    "left out");
}

int export_megatron(export_ctx *x, util_error *err)
{
    util_buf b = {0}, r = {0}, args = {0};
    split sp;
    char what[200];

    if (megatron_split(x, &sp) != 0) {
        free(sp.n);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    megatron_limits(x, &sp);
    megatron_args(x, &args, &sp); /* notes first: the header lists them */
    export_agent_notes(x);

    snprintf(what, sizeof what, "Megatron-LM %s launch (pretrain_gpt.py) with "
             "torchrun (flag forms of PyTorch 1.13 and 2.x)", export_release(x));
    export_script_header(x, &b, what);
    util_buf_printf(&b, "#\n# Run from the Megatron-LM checkout on every host, each agent "
                  "with its NODE_RANK:\n#   NODE_RANK=0 sh megatron.sh "
                  "--data-path ... --tokenizer-type ... --train-iters ... "
                  "--lr ...\n");
    util_buf_printf(&b, "# Arguments after the script name (data, tokenizer, optimizer, "
                  "schedule) are passed to pretrain_gpt.py unchanged.\n");
    if (x->m->vocab > 0)
        util_buf_printf(&b, "# The plan's model has a vocabulary of %d: use the "
                        "tokenizer it was planned for.\n", x->m->vocab);
    util_buf_printf(&b, "# Megatron-LM numbers ranks TP innermost, then DP, then PP, as "
                  "the plan does;\n# torchrun agent k runs the global ranks that "
                  "follow those of agents 0..k-1.\n#\n");
    export_agent_table(x, &b);
    util_buf_printf(&b, "\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    if (uses_fsdp(x))
        util_buf_printf(&b, "# Megatron-FSDP runs with more than one CUDA "
                        "connection (validate_args refuses 1)\n"
                        "unset CUDA_DEVICE_MAX_CONNECTIONS\n");
    else
        util_buf_printf(&b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    export_tf32_env(x, &b);
    util_buf_printf(&b, "%s\n", args.p ? args.p : "");
    export_launch_cases(x, &b, "pretrain_gpt.py $MEGATRON_ARGS \"$@\"");

    export_ranks_file(x, &r);
    free(sp.n);
    free(args.p);
    if (b.failed || r.failed || args.failed) {
        free(b.p);
        free(r.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    export_add_file(x, "megatron.sh",
                    "Megatron-LM flags and per-node torchrun lines", 1, b.p);
    export_add_file(x, "ranks.txt", EXPORT_RANKS_WHAT, 0, r.p);
    return UTIL_OK;
}
