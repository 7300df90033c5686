/* costmodel/memory.c: memory of one device under a strategy
 * (docs/cost-model.md, "Memory"): model states after ZeRO sharding,
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
    default: /* fp16: fp16 weights and grads, fp32 master + m + v (K = 12),
                and the fp32 gradient copy the loss-scaling optimizer makes */
        *w = 2.0;
        *g = 2.0;
        *o = 16.0;
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

/* Activations a layer keeps for backward per sample, all of them
 * (Korthikanti et al. 2022, sec. 4: act_rep + (act - act_rep) / t). */
static double full_act(const fmt_layer *l, int tp)
{
    return l->act_rep_bytes + (l->act_bytes - l->act_rep_bytes) / (double)tp;
}

/* Layers whose activations recomputation drops (Megatron checkpoints
 * the blocks, not the embedding, the final norm or the loss). */
static int recomputed(const fmt_model *m, const cost_params *p, int l)
{
    int k = m->layers[l].kind;

    return p->recompute && (k == FMT_KIND_TRANSFORMER || k == FMT_KIND_GENERIC);
}

/* Frozen layers (the first p->frozen_layers, PipeTransformer) run
 * forward only: no gradients, no optimizer state, nothing kept for a
 * backward pass that never reaches them. */
static int frozen(const cost_params *p, int l)
{
    return l < p->frozen_layers;
}

double cost_layer_stored(const fmt_model *m, const cost_params *p, int l,
                         int tp)
{
    if (frozen(p, l))
        return 0.0;
    if (recomputed(m, p, l)) /* only the input, whole on every TP rank */
        return l > 0 ? m->layers[l - 1].out_bytes : 0.0;
    return full_act(&m->layers[l], tp);
}

double cost_layer_transient(const fmt_model *m, const cost_params *p, int l,
                            int tp)
{
    const fmt_layer *x = &m->layers[l];
    double t = 0.0;

    if (frozen(p, l))
        return 0.0;
    if (x->kind == FMT_KIND_HEAD) {
        /* Megatron's vocab-parallel cross entropy works on an fp32 clone
         * of the fp32 logits: 4 bytes per logit beyond act_bytes */
        if (m->seq > 0 && m->vocab > 0)
            t = 4.0 * (double)m->seq * (double)m->vocab / (double)tp;
        return t;
    }
    if (x->kind == FMT_KIND_TRANSFORMER) /* backward's gradients of the
                                             saved tensors, same shapes */
        t = full_act(x, tp);
    if (recomputed(m, p, l)) /* re-materialised for its backward */
        t += full_act(x, tp);
    return t;
}

double cost_layer_memory(const fmt_model *m, const cost_params *p, int l,
                         int tp, int dp, int mbs, int inflight)
{
    double w, g, o;

    cost_state_bytes(m, p, dp, &w, &g, &o);
    if (frozen(p, l))
        g = o = 0.0;
    return m->layers[l].params / (double)tp * (w + g + o) +
           (double)mbs * (double)inflight * cost_layer_stored(m, p, l, tp);
}

int cost_inflight(const cost_params *p, int stage, int pp, int gas)
{
    int k = p->schedule == FMT_SCHED_GPIPE ? gas : pp - stage;

    return k < gas ? k : gas;
}

/* DeepSpeed's pipeline engine: a stage keeps each in-flight micro-batch's
 * received input (one more being received, at most gas) and the gradient
 * it sends back; and each in-flight output until its gradient arrives,
 * plus the buffer receiving that gradient.  Every TP rank holds the whole
 * tensor (no scatter/gather in Megatron v1). */
static double pipe_buffers(double in_bytes, double out_bytes, int stage,
                           int pp, int inflight, int gas, int mbs)
{
    double b = 0.0, n;

    if (pp <= 1)
        return 0.0;
    if (stage > 0) {
        n = (double)(inflight + 1 < gas ? inflight + 1 : gas);
        b += (n + 1.0) * (double)mbs * in_bytes;
    }
    if (stage < pp - 1)
        b += (double)(inflight + 1) * (double)mbs * out_bytes;
    return b;
}

double cost_device_memory(const fmt_model *m, const cost_params *p,
                          const cost_mem_stage *st, cost_memory *out)
{
    cost_memory x;
    double w, g, o, params = 0.0, trained = 0.0, act = 0.0, ws = 0.0, dyn;
    int l, gas = st->gas > 0 ? st->gas : st->inflight;

    memset(&x, 0, sizeof x);
    cost_state_bytes(m, p, st->dp, &w, &g, &o);
    for (l = st->a; l < st->b; l++) {
        double tr = cost_layer_transient(m, p, l, st->tp);
        params += m->layers[l].params / (double)st->tp;
        if (!frozen(p, l))
            trained += m->layers[l].params / (double)st->tp;
        act += cost_layer_stored(m, p, l, st->tp);
        if (tr > ws)
            ws = tr;
    }
    x.weights = params * w;
    x.grads = trained * g;
    x.optimizer = trained * o;
    x.activations = (double)st->mbs * (double)st->inflight * act;
    x.workspace = (double)st->mbs * ws;
    if (st->pp > 1 && st->a < st->b) {
        double in = st->a > 0 ? m->layers[st->a - 1].out_bytes : 0.0;
        x.buffers = pipe_buffers(in, m->layers[st->b - 1].out_bytes, st->stage,
                                 st->pp, st->inflight, gas, st->mbs);
    }
    if (st->pp > 0 && st->dp > 1) {
        /* the gradients flattened into all-reduce buckets after the last
         * backward, when no activation is alive any more */
        double gb = fmt_model_precision(m) == FMT_PREC_FP16 ? 2.0 : 4.0;
        x.bucket = (trained < BUCKET_ELEMS ? trained : BUCKET_ELEMS) * gb;
    }
    x.reserve = p->mem_reserve;
    /* peak = resident state + the larger of the backward-pass phase and
     * the gradient-synchronisation phase + reserve */
    dyn = x.activations + x.workspace + x.buffers;
    if (x.bucket > dyn)
        dyn = x.bucket;
    x.total = x.weights + x.grads + x.optimizer + dyn + x.reserve;
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
                                  int tp, int mbs, int stage, int pp,
                                  int inflight, int gas)
{
    double ws = 0.0, hidden = 0.0;
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
    /* stages are cut where a block hands its hidden state on */
    return p->mem_reserve + (double)mbs * ws +
           pipe_buffers(hidden, hidden, stage, pp, inflight, gas, mbs);
}

int cost_rank_stage_memory(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int rank, cost_memory *out)
{
    cost_mem_stage st;
    cost_params ps = *p; /* the strategy's own features */
    int j = rank / (s->tp * s->dp);

    ps.recompute = cost_strategy_recompute(p, s);
    ps.zero_stage = cost_strategy_zero(p, s);
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
    cost_device_memory(m, p, &st, out);
    return j;
}
