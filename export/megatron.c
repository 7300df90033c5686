/* export/megatron.c: Megatron-LM command lines (pretrain_gpt.py flags,
 * launched with torchrun) for a plan's strategy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int is_block(const fmt_layer *l)
{
    return l->kind == FMT_KIND_TRANSFORMER;
}

static void megatron_split(export_ctx *x, int *blocks_out, int *even_out)
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
        export_note(x, "the model has %d layers of kind 'generic' that "
                    "Megatron-LM's GPT model does not have; the flags "
                    "describe its transformer blocks only", generic);
    if (misplaced)
        export_note(x, "the plan puts an embedding, final norm or head layer "
                    "away from the first/last stage; Megatron-LM keeps the "
                    "embedding on the first and the final norm and head on "
                    "the last stage");
    if (s->pp > 1 && (!even || total % s->pp != 0)) {
        int first_last = s->pp >= 2 && n[0] > 0 && n[s->pp - 1] > 0 && zero == 0;
        for (j = 2; j < s->pp - 1 && first_last; j++)
            if (n[j] != n[1])
                first_last = 0;
        export_note(x, "the plan's layer split is uneven (transformer blocks "
                    "per stage: %s); Megatron-LM %s splits its %d blocks "
                    "evenly over %d stages%s, so it cannot express this split "
                    "and the predicted time does not apply to the even split "
                    "it runs", list, EXPORT_MEGATRON_VERSION, total, s->pp,
                    total % s->pp != 0 ? " and refuses a block count the "
                                         "stage count does not divide"
                                       : "");
        if (first_last)
            export_note(x, "newer Megatron-LM (core_r0.10.0 and later) can "
                        "express it by adding "
                        "--decoder-first-pipeline-num-layers %d "
                        "--decoder-last-pipeline-num-layers %d", n[0],
                        n[s->pp - 1]);
        else if (zero)
            export_note(x, "%d stage(s) hold no transformer block; no "
                        "Megatron-LM version places a stage with embedding, "
                        "norm or head layers only", zero);
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

static void megatron_args(export_ctx *x, util_buf *b, int blocks)
{
    const fmt_strategy *s = x->s;
    const fmt_model *m = x->m;
    const char *prec = export_precision(m);

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

int export_megatron(export_ctx *x, util_error *err)
{
    util_buf b = {0}, r = {0};
    int blocks = 0, even = 0;
    export_result *out = x->out;

    (void)err;
    megatron_split(x, &blocks, &even);
    if (blocks == 0)
        export_note(x, "the model has no transformer blocks; Megatron-LM's "
                    "GPT model needs --num-layers >= 1");
    if (x->m->hidden <= 0 || x->m->heads <= 0 || x->m->seq <= 0)
        export_note(x, "the model file gives no hidden size, heads or "
                    "sequence length (its 'shape'); add --hidden-size, "
                    "--num-attention-heads, --seq-length and "
                    "--max-position-embeddings yourself");
    if (x->p->zero_stage >= 2)
        export_note(x, "the plan's memory assumes ZeRO stage %d; Megatron-LM "
                    "%s shards only the optimizer state "
                    "(--use-distributed-optimizer, like ZeRO stage 1), so "
                    "expect more memory per GPU than predicted",
                    x->p->zero_stage, EXPORT_MEGATRON_VERSION);
    if (x->s->schedule == FMT_SCHED_GPIPE && x->s->pp > 1)
        export_note(x, "the plan assumes a GPipe schedule; Megatron-LM runs "
                    "1F1B, which keeps fewer activations alive (the time "
                    "model is the same)");
    export_agent_notes(x);

    export_header(x, &b, "Megatron-LM " EXPORT_MEGATRON_VERSION " launch "
                  "(pretrain_gpt.py) with torchrun (PyTorch "
                  EXPORT_TORCH_VERSION ")");
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
    export_agent_table(x, &b);
    util_buf_printf(&b, "\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    util_buf_printf(&b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
    megatron_args(x, &b, blocks);
    util_buf_printf(&b, "\n");
    export_launch_cases(x, &b, "pretrain_gpt.py $MEGATRON_ARGS \"$@\"");

    export_ranks_file(x, &r);
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
