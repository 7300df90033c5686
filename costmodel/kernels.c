/* costmodel/kernels.c: the analytic compute time of one layer for one
 * micro-batch, kernel by kernel (docs/time-model.md): every GEMM of a
 * transformer block from its shape on a roofline (compute-bound at an
 * efficiency that depends on the shape, memory-bound when small), the
 * element-wise work as the fused kernels Megatron-LM runs (each counted
 * once), the attention core as fused softmax, unfused PyTorch kernels or
 * flash attention, and the recomputation forward pass.  A layer list's
 * layer that states its GEMMs is timed from them; other layers without a
 * transformer shape fall back to FLOPs and bytes (AMP-style roofline). */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "internal.h"

/* What every kernel of one layer needs. */
typedef struct kctx {
    cost_gemm_unit u; /* the matmul unit (costmodel/gemm.c) */
    double peak;      /* its FLOP/s */
    double bw;        /* reachable memory bandwidth, B/s */
    double d;         /* bytes per element */
    const cost_gen *gen;
} kctx;

/* Roofline time of `batch` GEMMs C[M,N] = A[M,K] B[K,N] with tile and
 * wave quantization (cost_gemm_time). */
static double gemm(const kctx *k, double M, double N, double K, double batch)
{
    return cost_gemm_time(&k->u, M, N, K, batch);
}

/* Backward of a GEMM: input gradient dA = dC B^T [M,K] (inner N) and
 * weight gradient dB = A^T dC [K,N] (inner M): twice the FLOPs, each on
 * its own shape. */
static double gemm_bwd(const kctx *k, double M, double N, double K,
                       double batch)
{
    return gemm(k, M, K, N, batch) + gemm(k, K, N, M, batch);
}

int cost_attention_kernel(const fmt_model *m, const cost_params *p)
{
    if (p->attention >= COST_ATTN_FUSED && p->attention <= COST_ATTN_UNFUSED)
        return p->attention;
    /* the model's training.attention (unstated: flash in fp16 / bf16,
     * eager in fp32, cost_attention; eager for a layer list, whose
     * memory comes from its stated act_bytes); eager runs Megatron's
     * fused scale-mask-softmax */
    if (m->attention == FMT_ATTN_DEFAULT && !cost_act_from_shape(m))
        return COST_ATTN_FUSED; /* a layer list states its activations */
    if (cost_attention(m) == FMT_ATTN_FLASH)
        return COST_ATTN_FLASH;
    /* plain PyTorch (Hugging Face-style model code) has no fused
     * scale-mask-softmax: its mask and softmax are separate kernels in
     * every precision (training.framework "pytorch-*") */
    if (m->framework.family == FMT_FW_PYTORCH)
        return COST_ATTN_UNFUSED;
    /* Megatron-LM's fused scale-mask-softmax takes 16-bit inputs only
     * (FusedScaleMaskSoftmax.is_kernel_available: input_in_float16); in
     * fp32 it, like Hugging Face's eager attention, runs PyTorch's
     * separate mask and softmax kernels */
    return m->dtype_bytes >= 4 ? COST_ATTN_UNFUSED : COST_ATTN_FUSED;
}

static void kctx_init(const fmt_model *m, const cost_params *p,
                      const fmt_device_type *dt, kctx *k)
{
    k->gen = cost_gen_of(dt);
    cost_gemm_unit_of(m, p, dt, &k->u);
    k->peak = k->u.peak;
    k->bw = k->u.bw;
    k->d = k->u.elem;
}

/* A transformer block with the model's shape (docs/time-model.md,
 * "Transformer block"): b samples of s tokens at TP degree t. */
static void block_time(const fmt_model *m, const cost_params *p,
                       const kctx *k, int tp, int mbs, cost_kernel_time *o)
{
    double t = (double)tp, b = (double)mbs, s = (double)m->seq;
    double h = (double)m->hidden, a = (double)m->heads, d = k->d;
    double kv = m->kv_heads > 0 ? (double)m->kv_heads : a;
    double f = m->ffn > 0 ? (double)m->ffn : 4.0 * h;
    double dh = h / a, T = b * s, at = a / t, kvt = kv / t > 1.0 ? kv / t : 1.0;
    double ft = f / t, E, Er, F, S2, mask, fwd_g, bwd_g, core_f, core_b;
    double ew_f, ew_b, core_ew_f, core_ew_b, attn_flops;
    int gated = m->mlp == FMT_MLP_SWIGLU, drop = m->dropout != FMT_FLAG_OFF;
    /* dropout on the attention probabilities: training.attention_dropout
     * of a shorthand model, as the memory model counts it; a layer list,
     * whose activations are stated, with the model's dropout (Megatron-LM's
     * --attention-dropout 0.1 beside --hidden-dropout 0.1) */
    int adrop = cost_act_from_shape(m) ? m->attn_dropout == FMT_FLAG_ON : drop;
    int causal = strcmp(m->family, "bert") != 0, bias = m->bias != FMT_FLAG_OFF;
    int attn = cost_attention_kernel(m, p);

    /* GEMMs: QKV (column-parallel), projection (row-parallel), fc1 (gate
     * and up for SwiGLU), fc2 (Shoeybi et al. 2019, section 3) */
    fwd_g = gemm(k, T, (at + 2.0 * kvt) * dh, h, 1.0) + gemm(k, T, h, at * dh, 1.0) +
            gemm(k, T, (gated ? 2.0 : 1.0) * ft, h, 1.0) + gemm(k, T, h, ft, 1.0);
    bwd_g = gemm_bwd(k, T, (at + 2.0 * kvt) * dh, h, 1.0) +
            gemm_bwd(k, T, h, at * dh, 1.0) +
            gemm_bwd(k, T, (gated ? 2.0 : 1.0) * ft, h, 1.0) +
            gemm_bwd(k, T, h, ft, 1.0);
    /* element-wise bytes (Korthikanti et al. 2022 sizes): E one hidden
     * tensor, Er its replicated part (split over TP with sequence
     * parallelism), F one MLP tensor, S2 the scores of the local heads */
    E = T * h * d;
    Er = p->sp && tp > 1 ? E / t : E;
    F = T * ft * d;
    S2 = b * at * s * s * d;
    mask = S2 / d; /* one byte per dropout-mask element */
    /* forward, one pass each: two fused layer norms (read, write), two
     * fused bias-dropout-add (read branch and residual, write, mask),
     * fused bias-GeLU or bias-ReLU (read, write) or SwiGLU (read gate and
     * up, write) */
    ew_f = 4.0 * Er + 2.0 * (3.0 * Er + (drop ? Er / d : 0.0)) +
           (gated ? 3.0 : 2.0) * F;
    /* backward: layer norms in two kernels each (apex's and Megatron's
     * fused layer_norm_cuda_kernel.cu: the weight and bias gradients'
     * partial sums read input and gradient, the input gradient reads them
     * again and writes), dropout-add (read gradient and mask, write) and
     * the residual gradient sums (read two, write), GeLU (read input and
     * gradient, write), ReLU (read output and gradient, write: PyTorch's
     * threshold_backward) or SwiGLU (read gate, up and gradient, write
     * two) */
    ew_b = 2.0 * 5.0 * Er + 2.0 * (2.0 * Er + (drop ? Er / d : 0.0)) + 2.0 * 3.0 * Er +
           (gated ? 5.0 : 3.0) * F;
    /* the attention output's [b, heads, s, dh] -> [s, b, h] layout copy
     * before the projection (Megatron's permute().contiguous()): read,
     * write, in the forward and the backward */
    if (attn != COST_ATTN_FLASH) {
        ew_f += 2.0 * T * at * dh * d;
        ew_b += 2.0 * T * at * dh * d;
    }
    /* bias gradients: a column sum of each linear layer's output gradient
     * (torch.nn.functional.linear's backward, Megatron's
     * grad_output.sum(0)): one read of QKV's, fc1's, the projection's
     * and fc2's */
    if (bias)
        ew_b += T * (at + 2.0 * kvt) * dh * d + (gated ? 2.0 : 1.0) * F + 2.0 * Er;
    if (m->positions == FMT_POS_ROTARY) { /* rotate Q and K: read, write */
        ew_f += 2.0 * T * (at + kvt) * dh * d;
        ew_b += 2.0 * T * (at + kvt) * dh * d;
    }
    /* attention core */
    if (attn == COST_ATTN_FLASH) {
        /* one fused kernel (Dao et al. 2022): 4 b s^2 h / t FLOPs, half of
         * them skipped under a causal mask; backward 2.5x the forward
         * FLOPs (recomputes the scores); reads Q, K, V, writes O */
        double qkvo = T * (2.0 * at + 2.0 * kvt) * dh * d;
        double tm = qkvo / k->bw;
        attn_flops = 4.0 * b * at * s * s * dh * (causal ? 0.5 : 1.0);
        core_f = attn_flops / (k->peak * k->gen->flash_fwd);
        core_b = 2.5 * attn_flops / (k->peak * k->gen->flash_bwd);
        core_f = core_f > tm ? core_f : tm;
        core_b = core_b > 2.0 * tm ? core_b : 2.0 * tm;
        core_ew_f = core_ew_b = 0.0;
    } else {
        /* batched score and context GEMMs over the full s x s, then the
         * softmax: Megatron's fused scale-mask-softmax reads and writes
         * the scores once; unfused PyTorch adds a separate mask-add pass
         * (read, write); dropout reads, writes and stores its mask */
        core_f = gemm(k, s, s, dh, b * at) + gemm(k, s, dh, s, b * at);
        core_b = gemm_bwd(k, s, s, dh, b * at) + gemm_bwd(k, s, dh, s, b * at);
        core_ew_f = 2.0 * S2 + (attn == COST_ATTN_UNFUSED ? 2.0 * S2 : 0.0) +
                    (adrop ? 2.0 * S2 + mask : 0.0);
        /* softmax backward reads output and gradient, writes; unfused
         * adds the scale's pass; dropout backward reads gradient, mask */
        core_ew_b = 3.0 * S2 + (attn == COST_ATTN_UNFUSED ? 2.0 * S2 : 0.0) +
                    (adrop ? 2.0 * S2 + mask : 0.0);
    }
    o->gemm_fwd = fwd_g + core_f;
    o->fwd = fwd_g + core_f + (ew_f + core_ew_f) / k->bw;
    o->bwd = bwd_g + core_b + (ew_b + core_ew_b) / k->bw;
    /* the attention core alone: what selective recomputation re-runs
     * (Korthikanti et al. 2022, section 5: QK^T, softmax, dropout,
     * attention over V); flash attention already recomputes it inside
     * its backward, so nothing more */
    o->core_fwd = attn == COST_ATTN_FLASH ? 0.0 : core_f + core_ew_f / k->bw;
}

/* A layer list's stated GEMMs (docs/inputs.md, "layers[].gemms") for mbs
 * samples at TP degree tp: the split dimension divided over the ranks
 * (the largest share sets the pace), the samples stacked along m when B
 * is a weight (one [b m, k] x [k, n] product) and along the batch when it
 * is an activation; *fwd and *bwd get each product's time on its own
 * shape (costmodel/gemm.c), the backward's two products per GEMM as
 * gemm_bwd. */
static void listed_gemms(const fmt_model *m, const kctx *k, const fmt_layer *l,
                         int tp, int mbs, double *fwd, double *bwd)
{
    double t = (double)tp, b = (double)mbs;
    int i;

    *fwd = *bwd = 0.0;
    for (i = 0; i < l->gemm_count; i++) {
        const fmt_gemm *g = &m->gemms[l->gemm_first + i];
        double M = g->m, N = g->n, K = g->k, B = g->batch;

        if (g->split == FMT_SPLIT_N)
            N = ceil(N / t);
        else if (g->split == FMT_SPLIT_K)
            K = ceil(K / t);
        else if (g->split == FMT_SPLIT_BATCH)
            B = ceil(B / t);
        if (g->rhs_weight)
            M *= b;
        else
            B *= b;
        *fwd += gemm(k, M, N, K, B);
        *bwd += gemm_bwd(k, M, N, K, B);
    }
}

/* Layers without a transformer shape: FLOPs at the large-GEMM (or the
 * compute_eff) rate plus bytes at the memory rate (AMP section 3.4); the
 * backward does twice the FLOPs and bwd_traffic times the bytes. */
static void generic_time(const fmt_model *m, const cost_params *p,
                         const kctx *k, const fmt_layer *l, int tp, int mbs,
                         int shaped_head, cost_kernel_time *o)
{
    double t = (double)tp, b = (double)mbs;
    double flops = l->fwd_flops * (l->tp_flops_frac / t + (1.0 - l->tp_flops_frac));
    double bytes = l->traffic / t + l->traffic_rep, g, gb, mu;

    if (l->gemm_count > 0 && m->gemms != NULL) {
        /* stated GEMMs on their shapes, the rest of the layer its
         * element-wise bytes */
        listed_gemms(m, k, l, tp, mbs, &g, &gb);
        mu = bytes > 0.0 ? b * bytes / k->bw : 0.0;
        o->gemm_fwd = g;
        o->fwd = g + mu;
        o->bwd = gb + p->bwd_traffic * mu;
        return;
    }
    if (shaped_head) {
        /* LM head: logits GEMM [b s, v / t] over h, then Megatron's
         * vocabulary-parallel cross-entropy in fp32 (Shoeybi et al. 2019,
         * mpu/cross_entropy.py), bytes per logit: the fp32 copy (read d,
         * write 4, none in fp32), max (read), subtract, exp and divide in
         * place (read, write each), sum (read); backward: scale the saved
         * softmax in place (read, write) and the copy's gradient back to
         * d bytes (read 4, write d) */
        double T = b * (double)m->seq, V = (double)m->vocab / t;
        double cast = k->d < 4.0 ? k->d + 4.0 : 0.0;
        double ce_f = 32.0, ce_b = 8.0;
        if (m->cross_entropy == FMT_CE_PYTORCH) {
            /* PyTorch's F.cross_entropy (training.cross_entropy
             * "pytorch"): log_softmax's kernel reads the fp32 logits for
             * the row maximum, for the sum of exponentials and for the
             * output it writes; nll_loss reads one logit per row.
             * Backward: nll_loss_backward writes a zeroed gradient with
             * one entry per row, log_softmax_backward reads it for the
             * row sums, then reads it and the output and writes */
            ce_f = 3.0 * 4.0 + 4.0;
            ce_b = 4.0 + 4.0 + 3.0 * 4.0;
        }
        g = gemm(k, T, V, (double)m->hidden, 1.0);
        o->gemm_fwd = g;
        o->fwd = g + T * V * (cast + ce_f) / k->bw;
        o->bwd = gemm_bwd(k, T, V, (double)m->hidden, 1.0) +
                 T * V * (ce_b + cast) / k->bw;
        if (!cost_act_from_shape(m)) { /* a layer list: its stated bytes */
            o->fwd = g + b * bytes / k->bw;
            o->bwd = gemm_bwd(k, T, V, (double)m->hidden, 1.0) +
                     p->bwd_traffic * b * bytes / k->bw;
        }
        return;
    }
    g = flops > 0.0 ? b * flops / (k->peak * p->compute_eff) : 0.0;
    mu = bytes > 0.0 ? b * bytes / k->bw : 0.0;
    o->gemm_fwd = g;
    o->fwd = g + mu;
    o->bwd = g + mu > 0.0 ? 2.0 * g + p->bwd_traffic * mu : 0.0;
}

void cost_layer_kernels(const fmt_model *m, const cost_params *p,
                        const fmt_device_type *dt, int layer, int tp, int mbs,
                        cost_kernel_time *out)
{
    const fmt_layer *l = &m->layers[layer];
    double launch = (double)l->kernels * cost_kernel_cost(m, p);
    int shaped = m->hidden > 0 && m->heads > 0 && m->seq > 0 &&
                 m->hidden % m->heads == 0;
    int rc = cost_strategy_recompute(p, NULL);
    kctx k;

    memset(out, 0, sizeof *out);
    kctx_init(m, p, dt, &k);
    if (shaped && l->kind == FMT_KIND_TRANSFORMER && l->gemm_count == 0)
        block_time(m, p, &k, tp, mbs, out);
    else
        generic_time(m, p, &k, l, tp, mbs,
                     shaped && l->kind == FMT_KIND_HEAD && m->vocab > 0, out);
    /* every kernel pays a fixed cost besides its work: launch, ramp-up
     * and tail of its waves (the backward runs bwd_ratio times the
     * forward's kernels) */
    out->fwd += launch;
    out->bwd += p->bwd_ratio * launch;
    /* weight-gradient accumulation: each micro-batch's gradients are added
     * into the gradient buffer (PyTorch's AccumulateGrad, Megatron's
     * main_grad): read the new, read and write the sum, in fp32 for bf16
     * and fp32 training; none when the weight-gradient GEMM accumulates in
     * place (Megatron --gradient-accumulation-fusion) */
    if (!p->grad_accum_fusion && l->params > 0.0 && layer >= p->frozen_layers) {
        double w = (l->params - l->params_rep) / (double)tp + l->params_rep;
        double acc = m->bf16 || m->dtype_bytes >= 4 ? 4.0 : k.d;
        out->bwd += w * (k.d + 2.0 * acc) / k.bw;
    }
    /* recomputation before the backward pass (Korthikanti et al. 2022):
     * full re-runs the block's forward, selective its attention core */
    if (l->kind == FMT_KIND_TRANSFORMER && rc == FMT_RECOMPUTE_FULL) {
        out->recompute = out->fwd;
        out->recompute_comm = 1;
    } else if (l->kind == FMT_KIND_TRANSFORMER && rc == FMT_RECOMPUTE_SELECTIVE)
        out->recompute = out->core_fwd;
}
