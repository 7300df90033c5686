/* costmodel/activations.c: activation memory of a transformer from its
 * description (docs/memory-model.md, "Activations"): what each layer
 * keeps for its backward pass per sample, after Korthikanti et al. 2022
 * ("Reducing activation recomputation in large transformer models",
 * section 4), generalised to grouped-query attention, gated and ReLU
 * MLPs, models without dropout, flash attention and every precision.  Models
 * given as a layer list keep their stated act_bytes.  Pure functions. */
#include "costmodel.h"

int cost_attention(const fmt_model *m)
{
    if (m->attention == FMT_ATTN_FLASH || m->attention == FMT_ATTN_EAGER)
        return m->attention;
    /* FlashAttention (Dao et al. 2022) and PyTorch's fused attention run
     * in fp16 / bf16; an fp32 run falls back to eager attention */
    return fmt_model_precision(m) == FMT_PREC_FP32 ? FMT_ATTN_EAGER
                                                   : FMT_ATTN_FLASH;
}

int cost_act_from_shape(const fmt_model *m)
{
    /* the shorthand's expansion resolves the architecture; a layer list
     * leaves it 0 and states each layer's activations itself */
    return m->mlp > 0 && m->hidden > 0 && m->heads > 0 && m->seq > 0;
}

/* Element size of activations and weights, bytes. */
static double elem(const fmt_model *m)
{
    return m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0;
}

/* s x f tensors an MLP keeps for backward (cost_block_act). */
static double mlp_tensors(const fmt_model *m)
{
    if (m->mlp == FMT_MLP_SWIGLU)
        return 3.0;
    return m->mlp == FMT_MLP_RELU ? 1.0 : 2.0;
}

void cost_block_act(const fmt_model *m, int recompute, cost_act *out)
{
    double e = elem(m), s = m->seq, h = m->hidden, a = m->heads;
    double kv = m->kv_heads > 0 ? m->kv_heads : a;
    double f = m->ffn > 0 ? (double)m->ffn : 4.0 * h;
    int drop = m->dropout == FMT_FLAG_ON;
    int eager = cost_attention(m) == FMT_ATTN_EAGER;

    /* Korthikanti et al. 2022, section 4.1, per sample (b = 1) in units
     * of e-byte elements plus 1-byte dropout masks:
     * - replicated under TP: the two norms' inputs and outputs (the
     *   outputs feed the QKV and fc1 GEMMs), 4esh, and the two dropout
     *   masks after attention and MLP, 2sh;
     * - sharded: Q and the attention output (projection input), 2esh; K
     *   and V, 2esh_kv with flash attention (grouped-query attention,
     *   Ainslie et al. 2023, keeps kv heads), 2esh under eager attention
     *   (K and V are expanded to every head before the batched GEMMs);
     *   the MLP's activation input and output, 2esf, or for a gated MLP
     *   (SwiGLU, Shazeer 2020) gate, up and their product, 3esf; a ReLU
     *   MLP (OPT, Zhang et al. 2022) keeps esf: ReLU's derivative is
     *   1[y > 0] of its output y (PyTorch's threshold_backward takes the
     *   result, nn.ReLU saves it), and y is fc2's input, saved anyway, so
     *   fc1's output is not kept;
     * - the attention core: eager attention keeps the softmax output
     *   e a s^2, plus a mask a s^2 and dropout output e a s^2 when the
     *   probabilities are dropped out; flash attention (Dao et al. 2022)
     *   keeps only the fp32 log-sum-exp per head and row, 4as.
     * With e = 2, dropout on, f = 4h, kv = a and eager attention this is
     * the paper's sbh(34 + 5as/h): replicated 10sbh, sharded 24sbh,
     * core 5as^2b.  PyTorch before 1.11 also keeps the softmax's input,
     * e a s^2 more (pytorch/pytorch#64000, fixed by PR #65242). */
    out->rep = 4.0 * e * s * h + (drop ? 2.0 * s * h : 0.0);
    out->shard = 2.0 * e * s * h +
                 2.0 * e * s * (eager ? h : h * kv / a) +
                 mlp_tensors(m) * e * s * f;
    if (eager)
        out->core = e * a * s * s +
                    (m->attn_dropout == FMT_FLAG_ON ? (1.0 + e) * a * s * s
                                                    : 0.0);
    else
        out->core = 4.0 * a * s;
    if (eager && fmt_framework_softmax_input(&m->framework))
        out->core += e * a * s * s;
    out->input = e * s * h;
    if (recompute == FMT_RECOMPUTE_SELECTIVE) /* section 5: the core is
                                                  recomputed */
        out->core = 0.0;
    if (recompute == FMT_RECOMPUTE_FULL) { /* section 5: only the input */
        out->rep = out->input;
        out->shard = 0.0;
        out->core = 0.0;
    }
}

double cost_act_bytes(const cost_act *x, int tp, int sp)
{
    double t = tp > 1 ? (double)tp : 1.0;

    /* Korthikanti et al. 2022, eq. 2 (TP): rep + (shard + core) / t;
     * eq. 4 (TP with sequence parallelism): everything / t */
    return (sp ? x->rep / t : x->rep) + (x->shard + x->core + x->logits) / t;
}

void cost_layer_act(const fmt_model *m, int l, int recompute, cost_act *out)
{
    const fmt_layer *x = &m->layers[l];
    double e = elem(m), s = m->seq, h = m->hidden;

    out->rep = out->shard = out->core = out->input = 0.0;
    out->logits = 0.0;
    if (!cost_act_from_shape(m)) {
        /* a layer list: its stated bytes; TP divides all but act_rep */
        out->rep = x->act_rep_bytes;
        out->shard = x->act_bytes - x->act_rep_bytes;
        out->input = l > 0 ? m->layers[l - 1].out_bytes : 0.0;
        if (x->kind != FMT_KIND_TRANSFORMER && x->kind != FMT_KIND_GENERIC)
            return;
        if (recompute == FMT_RECOMPUTE_SELECTIVE && m->heads > 0 && s > 0) {
            /* the paper's 5as^2 (in e/2 units) leaves with the core */
            double core = 5.0 * m->heads * s * s * e / 2.0;
            out->shard = out->shard > core ? out->shard - core : 0.0;
        }
        if (recompute == FMT_RECOMPUTE_FULL) {
            out->rep = out->input;
            out->shard = 0.0;
        }
        return;
    }
    switch (x->kind) {
    case FMT_KIND_TRANSFORMER:
        cost_block_act(m, recompute, out);
        break;
    case FMT_KIND_EMBEDDING:
        /* the int64 token ids its backward indexes with, 8s, and the
         * embedding dropout's mask, sh (Megatron-LM
         * theoretical_memory_usage.py: "input to embedding" and "dropout
         * in embedding layer"; Korthikanti et al. 2022, section 4.3) */
        out->rep = 8.0 * s + (m->dropout == FMT_FLAG_ON ? s * h : 0.0);
        break;
    case FMT_KIND_NORM: /* its input */
        out->rep = e * s * h;
        break;
    case FMT_KIND_HEAD:
        /* the output GEMM's input, and the fp32 softmax that Megatron's
         * vocabulary-parallel cross entropy keeps for backward (4sv/t;
         * Korthikanti et al. 2022, section 4.3) */
        out->rep = e * s * h;
        out->logits = 4.0 * s * (double)m->vocab;
        break;
    default:
        out->rep = x->act_rep_bytes;
        out->shard = x->act_bytes - x->act_rep_bytes;
        break;
    }
}
