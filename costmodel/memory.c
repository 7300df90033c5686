/* costmodel/memory.c: memory of one device under a strategy
 * (docs/memory-model.md; docs/cost-model.md, "Memory"): model states
 * after TP and ZeRO sharding,
 * activations kept for backward, the transient of the layer being run,
 * pipeline send/receive buffers, the data-parallel all-reduce bucket and
 * a reserve for the framework.  Pure functions, no I/O. */
#include <string.h>

#include "costmodel.h"

/* DeepSpeed's default all-reduce / reduce-scatter bucket, elements. */
#define BUCKET_ELEMS 5e8

/* ZeRO (Rajbhandari et al. 2020, section 5): per parameter 2 + 2 + K
 * bytes of model state in mixed precision; stages 1, 2, 3 divide the
 * optimizer state, the gradients and the weights by the DP degree. */
void cost_state_bytes(const fmt_model *m, const cost_params *p, int dp,
                      double *w, double *g, double *o)
{
    double d = dp > 1 ? (double)dp : 1.0;

    switch (fmt_model_precision(m)) {
    case FMT_PREC_FP32: /* fp32 weights and grads, Adam m and v */
        *w = 4.0;
        *g = 4.0;
        *o = 8.0;
        break;
    case FMT_PREC_BF16: /* bf16 weights, fp32 gradient accumulation,
                            fp32 master weights + Adam m, v */
        *w = 2.0;
        *g = 4.0;
        *o = 12.0;
        break;
    default: /* fp16: fp16 weights and grads, fp32 master + m + v (K = 12);
                a layer list (DeepSpeed's FP16_Optimizer) also keeps the
                fp32 gradient copy here, a shorthand (Megatron-LM) makes
                it in the step only (cost_step_bytes) */
        *w = 2.0;
        *g = 2.0;
        *o = cost_act_from_shape(m) ? 12.0 : 16.0;
        break;
    }
    if (p->state_bytes > 0.0) { /* explicit total: weights and grads in the
                                   model's element size, the rest optimizer */
        double db = m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0;
        *w = db;
        *g = db;
        *o = p->state_bytes - 2.0 * db;
        if (*o < 0.0)
            *o = 0.0;
    }
    if (p->zero_stage >= 1)
        *o /= d;
    if (p->zero_stage >= 2)
        *g /= d;
    if (p->zero_stage >= 3)
        *w /= d;
}

double cost_step_bytes(const fmt_model *m, const cost_params *p, int dp)
{
    /* Megatron-LM's Float16OptimizerWithFloat16Params (and the
     * distributed optimizer for its shard) copies the fp16 gradients
     * into fp32 main gradients in step(); zero_grad(set_to_none) frees
     * them when the next iteration starts, before any forward pass
     * (megatron/core/optimizer/optimizer.py, training.py train_step).
     * bf16 accumulates in fp32 already (its g is 4); fp32 needs none. */
    double b;

    if (p->state_bytes > 0.0 || !cost_act_from_shape(m) ||
        fmt_model_precision(m) != FMT_PREC_FP16 ||
        p->offload == FMT_OFFLOAD_OPTIMIZER)
        return 0.0;
    b = 4.0;
    if (p->zero_stage >= 1 && dp > 1)
        b /= (double)dp;
    return b;
}

/* Frozen layers (the first p->frozen_layers, PipeTransformer) run
 * forward only: no gradients, no optimizer state, nothing kept for a
 * backward pass that never reaches them. */
static int frozen(const cost_params *p, int l)
{
    return l < p->frozen_layers;
}

/* m, or a copy of it in *tmp whose training.attention is p->attention
 * when that is set (the time model's switch, costmodel/kernels.c): time
 * and memory follow one attention kernel. */
static const fmt_model *attn_model(const fmt_model *m, const cost_params *p,
                                   fmt_model *tmp)
{
    int want;

    if (p->attention < COST_ATTN_FUSED || p->attention > COST_ATTN_UNFUSED)
        return m;
    want = p->attention == COST_ATTN_FLASH ? FMT_ATTN_FLASH : FMT_ATTN_EAGER;
    if (cost_attention(m) == want)
        return m;
    *tmp = *m;
    tmp->attention = want;
    return tmp;
}

double cost_layer_stored(const fmt_model *m, const cost_params *p, int l,
                         int tp)
{
    cost_act x;
    fmt_model tmp;

    if (frozen(p, l))
        return 0.0;
    m = attn_model(m, p, &tmp);
    cost_layer_act(m, l, p->recompute, &x);
    return cost_act_bytes(&x, tp, p->sp);
}

/* Backward of a block, per sample: the gradient of its largest saved
 * tensor and the gradient that op produces, while the saved tensors of
 * the ops after it are already freed: 2 x the largest of the eager
 * scores e a s^2 / t, the MLP's e s f / t (GeLU's or ReLU's input or
 * output; gate and up together, 2esf / t, for a gated MLP) and e s h. */
static double block_workspace(const fmt_model *m, int tp)
{
    double e = m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0;
    double s = m->seq, h = m->hidden, t = tp > 1 ? (double)tp : 1.0;
    double f = m->ffn > 0 ? (double)m->ffn : 4.0 * h;
    double big = (m->mlp == FMT_MLP_SWIGLU ? 2.0 : 1.0) * e * s * f / t;

    if (cost_attention(m) == FMT_ATTN_EAGER && e * m->heads * s * s / t > big)
        big = e * m->heads * s * s / t;
    if (e * s * h > big)
        big = e * s * h;
    return 2.0 * big;
}

double cost_layer_transient(const fmt_model *m, const cost_params *p, int l,
                            int tp)
{
    const fmt_layer *x = &m->layers[l];
    double t = tp > 1 ? (double)tp : 1.0, v = (double)m->seq * m->vocab;
    double e = m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0, tr = 0.0;
    cost_act full, kept;
    fmt_model tmp;

    if (frozen(p, l))
        return 0.0;
    m = attn_model(m, p, &tmp);
    if (x->kind == FMT_KIND_HEAD) {
        if (!cost_act_from_shape(m)) /* a layer list: an fp32 clone */
            return 4.0 * v / t;
        /* Megatron's vocabulary-parallel cross entropy: the e-byte
         * logits, their fp32 copy (none in fp32) and the shifted copy
         * it exponentiates in place, of which the softmax stays;
         * PyTorch's (log_softmax + nll_loss) holds one more fp32 s V at
         * its backward: its saved output, that output's gradient and the
         * logits' gradient (measured on an H200, docs/memory-model.md) */
        return (e + (e < 4.0 ? 4.0 : 0.0) +
                (m->cross_entropy == FMT_CE_PYTORCH ? 4.0 : 0.0)) * v / t;
    }
    if (x->kind != FMT_KIND_TRANSFORMER && x->kind != FMT_KIND_GENERIC)
        return 0.0;
    /* backward: the gradients of the saved tensors, their shapes; plus
     * what recomputation re-materialises for it */
    cost_layer_act(m, l, FMT_RECOMPUTE_NONE, &full);
    cost_layer_act(m, l, p->recompute, &kept);
    if (x->kind == FMT_KIND_TRANSFORMER && cost_act_from_shape(m))
        tr = block_workspace(m, tp);
    else if (x->kind == FMT_KIND_TRANSFORMER)
        tr = cost_act_bytes(&full, tp, p->sp);
    if (p->recompute == FMT_RECOMPUTE_FULL) /* the whole block again */
        tr += cost_act_bytes(&full, tp, p->sp);
    else if (p->recompute == FMT_RECOMPUTE_SELECTIVE) /* its core */
        tr += cost_act_bytes(&full, tp, p->sp) - cost_act_bytes(&kept, tp, p->sp);
    return tr;
}

/* Parameters of layer l held by one rank at TP degree tp: the sharded
 * part divided, params_rep whole (Shoeybi et al. 2019, section 3). */
static double rank_params(const fmt_layer *x, int tp)
{
    double rep = x->params_rep > 0.0 && x->params_rep <= x->params
                     ? x->params_rep
                     : 0.0;

    return (x->params - rep) / (double)(tp > 1 ? tp : 1) + rep;
}

double cost_layer_memory(const fmt_model *m, const cost_params *p, int l,
                         int tp, int dp, int mbs, int inflight)
{
    double w, g, o;

    cost_state_bytes(m, p, dp, &w, &g, &o);
    if (frozen(p, l) || p->offload == FMT_OFFLOAD_OPTIMIZER)
        o = 0.0; /* none, or in host memory */
    if (frozen(p, l))
        g = 0.0;
    return rank_params(&m->layers[l], tp) * (w + g + o) +
           (double)mbs * (double)inflight * cost_layer_stored(m, p, l, tp);
}

int cost_inflight(const cost_params *p, int stage, int pp, int gas)
{
    int k = p->schedule == FMT_SCHED_GPIPE ? gas : pp - stage;

    return k < gas ? k : gas;
}

double cost_inflight_interleaved(int stage, int pp, int gas, int vpp)
{
    double k;

    if (vpp <= 1 || pp <= 1)
        return (double)(pp - stage < gas ? pp - stage : gas);
    /* Megatron's interleaved schedule runs 2 (pp - stage - 1) +
     * (vpp - 1) pp warm-up forwards of model chunks before its first
     * backward and holds one more in the steady state (Narayanan et al.
     * SC'21, section 2.2); each chunk is 1 / vpp of the device's layers */
    k = 2.0 * (pp - stage - 1) +
        (double)(vpp - 1) * (gas % pp == 0 || gas < pp ? pp : cost_vpp_group(pp, gas)) +
        1.0;
    if (k > (double)gas * vpp)
        k = (double)gas * vpp;
    return k / (double)vpp;
}

/* DeepSpeed's pipeline engine: a stage keeps each in-flight micro-batch's
 * received input (one more being received, at most gas) and the gradient
 * it sends back; and each in-flight output until its gradient arrives,
 * plus the buffer receiving that gradient.  Every TP rank holds the whole
 * tensor (no scatter/gather in Megatron v1). */
static double pipe_buffers(const fmt_model *m, double in_bytes,
                           double out_bytes, int stage, int pp, int inflight,
                           int gas, int mbs)
{
    double b = 0.0, n;

    if (pp <= 1)
        return 0.0;
    if (cost_act_from_shape(m)) {
        /* Megatron-LM's schedules: a received activation is the stage's
         * input, already among the stored activations, and a sent output
         * is freed once sent (deallocate_pipeline_outputs); what remains
         * is the gradient received for the output and the one sent back
         * for the input, one micro-batch each */
        if (stage > 0)
            b += (double)mbs * in_bytes;
        if (stage < pp - 1)
            b += (double)mbs * out_bytes;
        return b;
    }
    if (stage > 0) {
        n = (double)(inflight + 1 < gas ? inflight + 1 : gas);
        b += (n + 1.0) * (double)mbs * in_bytes;
    }
    if (stage < pp - 1)
        b += (double)(inflight + 1) * (double)mbs * out_bytes;
    return b;
}

/* 1 when layer l shares its tensor (tied_group) with a layer of [a, l):
 * a stage holding a tied embedding and LM head holds one matrix, its one
 * gradient and optimizer state (Megatron-LM with pp 1; Press and Wolf
 * 2017).  On different stages each keeps its own copy (Megatron-LM's
 * embedding group all-reduces their gradients). */
static int tied_dup(const fmt_model *m, int a, int l)
{
    int g = m->layers[l].tied_group, j;

    if (g <= 0 || !cost_act_from_shape(m))
        return 0;
    for (j = a; j < l; j++)
        if (m->layers[j].tied_group == g)
            return 1;
    return 0;
}

/* Parameters of layers [a, b) on one rank counted twice by a per-layer
 * sum: the tied copies (tied_dup). */
static double tied_dup_params(const fmt_model *m, int a, int b, int tp)
{
    double x = 0.0;
    int l;

    for (l = a; l < b; l++)
        if (tied_dup(m, a, l))
            x += rank_params(&m->layers[l], tp);
    return x;
}

/* Communication buffers of the stage beyond the pipeline's: *resident
 * alive with the activations (none yet), *after alive after the last
 * backward pass only (the DP all-reduce bucket).  Every communication
 * buffer that adds to the peak is counted here. */
static void comm_memory(const fmt_model *m, const cost_mem_stage *st,
                        double trained, double *resident, double *after)
{
    *resident = 0.0;
    *after = 0.0;
    if (st->pp > 0 && st->dp > 1) {
        /* the gradients flattened into all-reduce buckets after the last
         * backward, when no activation is alive any more */
        double gb = fmt_model_precision(m) == FMT_PREC_FP16 ? 2.0 : 4.0;
        *after = (trained < BUCKET_ELEMS ? trained : BUCKET_ELEMS) * gb;
    }
}

/* The peak of x's terms: resident state, then the larger of the
 * backward-pass phase (activations, workspace, buffers) and the phase
 * after the last backward (the DP bucket, then the optimizer step's
 * transient), then the runtime; gradients freed between iterations
 * (set_to_none) are alive in the second phase only. */
static double peak_of(const fmt_model *m, const cost_memory *x)
{
    double dyn = x->activations + x->workspace + x->buffers;
    double after = x->bucket > x->step ? x->bucket : x->step;

    if (m->grad_buffer == FMT_GRADS_SET_TO_NONE) {
        double sync = x->grads + after;
        return x->weights + x->optimizer + (sync > dyn ? sync : dyn) + x->reserve;
    }
    return x->weights + x->grads + x->optimizer + (after > dyn ? after : dyn) +
           x->reserve;
}

/* First layer of the last stage's last model chunk that is held for one
 * micro-batch under the interleaved schedule: the layers after the last
 * block (final norm, head and loss).  Megatron-LM's last stage runs
 * (v - 1) p warm-up forwards of its other chunks, then each forward of
 * its last chunk is followed by that chunk's backward (Narayanan et al.
 * SC'21, section 2.2), so the logits of one micro-batch are alive, not
 * cost_inflight_interleaved's average.  st->b (none) otherwise. */
static int interleaved_tail(const fmt_model *m, const cost_mem_stage *st)
{
    int l;

    if (st->inflight_v <= 0.0 || st->pp <= 1 || st->stage != st->pp - 1)
        return st->b;
    for (l = m->nlayers - 1; l >= st->a; l--)
        if (m->layers[l].kind == FMT_KIND_TRANSFORMER)
            return l + 1 > st->a ? l + 1 : st->b;
    return st->b;
}

double cost_device_memory(const fmt_model *m, const cost_params *p,
                          const cost_mem_stage *st, cost_memory *out)
{
    cost_memory x;
    double w, g, o, params = 0.0, trained = 0.0, act = 0.0, act1 = 0.0, ws = 0.0,
           comm;
    int l, gas = st->gas > 0 ? st->gas : st->inflight, tail = interleaved_tail(m, st);

    memset(&x, 0, sizeof x);
    cost_state_bytes(m, p, st->dp, &w, &g, &o);
    for (l = st->a; l < st->b; l++) {
        double tr = cost_layer_transient(m, p, l, st->tp);
        if (!tied_dup(m, st->a, l)) {
            params += rank_params(&m->layers[l], st->tp);
            if (!frozen(p, l))
                trained += rank_params(&m->layers[l], st->tp);
        }
        if (l >= tail)
            act1 += cost_layer_stored(m, p, l, st->tp);
        else
            act += cost_layer_stored(m, p, l, st->tp);
        if (tr > ws)
            ws = tr;
    }
    x.weights = params * w;
    x.grads = trained * g;
    x.optimizer = trained * o;
    if (p->offload == FMT_OFFLOAD_OPTIMIZER) {
        /* ZeRO-Offload (Ren et al., USENIX ATC'21, sec. 4): the fp32
         * master weights, Adam's m and v (and fp16's fp32 gradient copy)
         * of the rank's shard live in host memory; the GPU keeps the
         * 16-bit weights and gradients; the fp32 gradients there are
         * a resident buffer, not the GPU step's transient */
        cost_params q = *p;
        q.offload = FMT_OFFLOAD_NONE;
        x.host = x.optimizer + trained * cost_step_bytes(m, &q, st->dp);
        x.optimizer = 0.0;
    }
    x.activations = (double)st->mbs *
                    ((st->inflight_v > 0.0 ? st->inflight_v : (double)st->inflight) * act +
                     act1);
    x.workspace = (double)st->mbs * ws;
    if (st->pp > 1 && st->a < st->b) {
        double in = st->a > 0 ? m->layers[st->a - 1].out_bytes : 0.0;
        x.buffers = pipe_buffers(m, in, m->layers[st->b - 1].out_bytes, st->stage,
                                 st->pp, st->inflight, gas, st->mbs);
    }
    comm_memory(m, st, trained, &comm, &x.bucket);
    x.buffers += comm;
    x.step = trained * cost_step_bytes(m, p, st->dp);
    x.reserve = p->mem_reserve >= 0.0 ? p->mem_reserve : COST_RESERVE_UNKNOWN;
    x.total = peak_of(m, &x);
    if (out != NULL)
        *out = x;
    return x.total;
}

double cost_stage_memory(const fmt_model *m, const cost_params *p, int a,
                         int b, int tp, int dp, int mbs, int inflight)
{
    cost_mem_stage st;

    memset(&st, 0, sizeof st);
    st.a = a;
    st.b = b;
    st.tp = tp;
    st.dp = dp;
    st.mbs = mbs;
    st.inflight = inflight;
    st.gas = inflight;
    st.pp = 0; /* position unknown: no pipeline buffers, no bucket */
    return cost_device_memory(m, p, &st, NULL);
}

double cost_memory_overhead_bound(const fmt_model *m, const cost_params *p,
                                  int tp, int dp, int mbs, int stage, int pp,
                                  int inflight, int gas)
{
    double ws = 0.0, hidden = 0.0, tied = 0.0;
    int l, last = stage == pp - 1;

    for (l = 0; l < m->nlayers; l++) {
        double tr;
        if (m->layers[l].kind == FMT_KIND_HEAD && !last)
            continue; /* the head sits in the last stage */
        tr = cost_layer_transient(m, p, l, tp);
        if (tr > ws)
            ws = tr;
        if (m->layers[l].kind == FMT_KIND_TRANSFORMER &&
            m->layers[l].out_bytes > hidden)
            hidden = m->layers[l].out_bytes;
    }
    if (hidden <= 0.0 && m->seq > 0 && m->hidden > 0)
        hidden = (double)m->seq * (double)m->hidden *
                 (double)(m->dtype_bytes > 0 ? m->dtype_bytes : 2);
    /* stages are cut where a block hands its hidden state on; a single
     * stage holds a tied embedding and head once, which the per-layer
     * sums count twice */
    if (pp <= 1) {
        double w, g, o;
        cost_state_bytes(m, p, dp, &w, &g, &o);
        if (p->offload == FMT_OFFLOAD_OPTIMIZER)
            o = 0.0; /* in host memory (cost_layer_memory) */
        tied = tied_dup_params(m, 0, m->nlayers, tp) * (w + g + o);
    }
    return (p->mem_reserve >= 0.0 ? p->mem_reserve : COST_RESERVE_UNKNOWN) +
           (double)mbs * ws +
           pipe_buffers(m, hidden, hidden, stage, pp, inflight, gas, mbs) - tied;
}

int cost_rank_stage_memory(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int rank, cost_memory *out)
{
    cost_mem_stage st;
    cost_params ps = *p; /* the strategy's own features */
    int j = rank / (s->tp * s->dp);

    ps.recompute = cost_strategy_recompute(p, s);
    ps.zero_stage = cost_strategy_zero(p, s);
    ps.offload = cost_strategy_offload(p, s);
    ps.sp = s->sp > 0 && s->tp > 1;
    p = &ps;
    memset(&st, 0, sizeof st);
    st.stage = j;
    st.pp = s->pp;
    st.a = s->bounds[j];
    st.b = s->bounds[j + 1];
    st.tp = s->tp;
    st.dp = s->dp;
    st.mbs = s->mbs;
    st.gas = s->gas;
    st.inflight = cost_inflight(p, j, s->pp, s->gas);
    if (s->vpp > 1 && p->schedule == FMT_SCHED_1F1B)
        st.inflight_v = cost_inflight_interleaved(j, s->pp, s->gas, s->vpp);
    cost_device_memory(m, p, &st, out);
    if (out != NULL && cost_strategy_overlap(p, s, COST_OVERLAP_TP)) {
        /* Transformer Engine's userbuffers (costmodel/overlap.c) */
        double ub = cost_overlap_tp_memory(m, s);
        out->buffers += ub;
        out->total += ub;
    }
    return j;
}
