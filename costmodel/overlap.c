/* costmodel/overlap.c: communication hidden behind compute (docs/
 * time-model.md, "Communication overlap"): the exposed part of a transfer split into
 * chunks and pipelined with the compute that produces or consumes them,
 * what tensor-parallel overlap needs of the hardware, and the memory of
 * Transformer Engine's userbuffers. */
#include <math.h>

#include "costmodel.h"
#include "internal.h"

/* Two-stage pipeline of n chunks, each c / n of communication and w / n
 * of compute, one chunk's transfer outside the compute (the last
 * gradient bucket, the first weight bucket): it ends (c + w) / n +
 * (n - 1) max(c, w) / n after it starts, so max(c / n, c - w (1 - 1/n))
 * of c is not hidden behind w (Li et al. VLDB 2020, PyTorch DDP, sec.
 * 3.2.3).  Compute is assumed not slowed by the communication running
 * beside it. */
double cost_overlap_exposed(double comm, double window, double chunks)
{
    double n = chunks >= 1.0 ? chunks : 1.0, hidden_bound, e;

    if (comm <= 0.0)
        return 0.0;
    if (window <= 0.0)
        return comm;
    hidden_bound = comm - window * (1.0 - 1.0 / n);
    e = comm / n > hidden_bound ? comm / n : hidden_bound;
    return e < comm ? e : comm;
}

int cost_overlap_tp_group(const fmt_cluster *c, const fmt_model *m,
                          const fmt_strategy *s, int j, int d)
{
    int k, n0;

    if (s->tp <= 1)
        return 0;
    /* plain PyTorch training code (its own loss or gradient handling,
     * docs/memory-model.md) has no Transformer Engine layers */
    if (m != NULL && (m->cross_entropy == FMT_CE_PYTORCH ||
                      m->grad_buffer == FMT_GRADS_SET_TO_NONE))
        return 0;
    /* userbuffers exchange through CUDA IPC peer memory: the TP group
     * inside one node with NVLink / NVSwitch-class links */
    n0 = c->device_node[fmt_rank_device(s, j, d, 0)];
    if (c->nodes[n0].intra_bw <= COST_PCIE_MAX_BW)
        return 0;
    for (k = 1; k < s->tp; k++)
        if (c->device_node[fmt_rank_device(s, j, d, k)] != n0)
            return 0;
    return 1;
}

int cost_overlap_tp_hardware(const fmt_cluster *c, const fmt_model *m,
                             const fmt_strategy *s)
{
    int j, d;

    if (s->tp <= 1)
        return 0;
    for (j = 0; j < s->pp; j++)
        for (d = 0; d < s->dp; d++)
            if (!cost_overlap_tp_group(c, m, s, j, d))
                return 0;
    return 1;
}

/* Transformer Engine splits each TP collective of a block (the
 * all-gathers before QKV and FC1, the reduce-scatters after the
 * projection and FC2, and their conjugates in the backward) into tp
 * chunks exchanged around the ring while the GEMM works on the chunk
 * already there (Megatron-LM --tp-comm-overlap; Wang et al. ASPLOS
 * 2023, collectives decomposed with their dependent GEMMs): the GEMM's
 * first chunk is the rank's own (all-gather) and its last stays there
 * (reduce-scatter), so tp - 1 transfers of c / (tp - 1)
 * run beside tp - 1 of the tp GEMM chunks of w / tp each, and
 * max(0, c - w (tp - 1) / tp) of a layer's TP time c is exposed.
 * Assumed: the GEMMs are the share gemm_fwd / fwd of the layer's compute
 * w, in equal chunks; the exchange runs on copy engines and does not slow
 * them; the hidden time comes half out of the forward and half out of
 * the backward; the embedding's and head's collectives are not
 * overlapped. */
void cost_overlap_tp_layer(const fmt_model *m, const cost_params *p,
                           const fmt_device_type *dt, int layer, int tp,
                           int mbs, cost_layer_time *lt)
{
    cost_kernel_time k;
    double comp, win, hidden, hf, hb;

    if (tp <= 1 || lt->comm <= 0.0 ||
        m->layers[layer].kind != FMT_KIND_TRANSFORMER)
        return;
    cost_layer_kernels(m, p, dt, layer, tp, mbs, &k);
    comp = lt->fwd + lt->bwd - lt->comm;
    win = k.fwd > 0.0 && comp > 0.0 ? comp * k.gemm_fwd / k.fwd : 0.0;
    hidden = win * (1.0 - 1.0 / (double)tp);
    if (hidden > lt->comm)
        hidden = lt->comm;
    if (hidden <= 0.0)
        return;
    hf = hidden / 2.0 < lt->fwd ? hidden / 2.0 : lt->fwd;
    hb = hidden - hf < lt->bwd ? hidden - hf : lt->bwd;
    lt->fwd -= hf;
    lt->bwd -= hb;
    lt->comm -= hf + hb;
}

/* Bucket ready last (gradients) or needed first (weights) of a stage
 * whose device holds `params` in nb buckets and whose first trained
 * layer holds `first`: a layer larger than a bucket is a bucket of its
 * own (PyTorch DDP and Megatron-LM's buckets, Li et al. 2020 sec.
 * 3.2.3), its share t * first / params of the transfer t. */
static double edge_bucket(double t, double params, double first, double nb)
{
    double e = params > 0.0 && first > params / nb ? t * first / params : t / nb;

    return e < t ? e : t;
}

double cost_overlap_dp(const cost_params *p, const fmt_strategy *s, double t,
                       double params, double first, double wb, double wf)
{
    double nb, rs = t, ag = 0.0, er, ea;
    int zero = cost_strategy_zero(p, s);

    if (t <= 0.0)
        return 0.0;
    nb = p->dp_bucket > 0.0 ? ceil(params / p->dp_bucket) : 1.0;
    if (nb < 1.0)
        nb = 1.0;
    /* the distributed optimizer / ZeRO-1 and -2: reduce-scatter of the
     * gradients, then all-gather of the updated weights, half of the
     * all-reduce's ring bytes each (Rajbhandari et al. 2020, sec. 7);
     * ZeRO-3's gathers run inside every micro-batch and stay whole */
    if (zero == 1 || zero == 2) {
        rs = t / 2.0;
        ag = t / 2.0;
    }
    /* buckets fill evenly during the last backward pass wb and are
     * reduced one after another: the reduction ends max(wb + last,
     * wb / nb + rs) after wb starts (Li et al. 2020, PyTorch DDP, sec.
     * 3.2.3; Megatron-LM --overlap-grad-reduce) */
    er = rs;
    if (cost_strategy_overlap(p, s, COST_OVERLAP_GRAD)) {
        double last = edge_bucket(rs, params, first, nb);
        er = cost_overlap_exposed(rs, wb, nb);
        er = last > er ? last : er;
    }
    /* the weights' all-gather bucket by bucket ahead of the next
     * iteration's first forward pass wf, the first bucket exposed
     * (Megatron-LM --overlap-param-gather: each bucket's gather is
     * waited for in the forward pre-hook of its first layer) */
    ea = ag;
    if (ag > 0.0 && cost_strategy_overlap(p, s, COST_OVERLAP_PARAM)) {
        double head = edge_bucket(ag, params, first, nb);
        ea = cost_overlap_exposed(ag, wf, nb);
        ea = head > ea ? head : ea;
    }
    return er + ea;
}

/* Transformer Engine's initialize_ub (Megatron-LM's
 * _initialize_tp_communicators): one buffer of the input shape
 * [seq x micro-batch, hidden] per overlapped GEMM (ring exchange:
 * qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; pipelined: proj_fprop,
 * fc2_fprop; bulk: qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad) on every
 * TP rank. */
#define COST_UB_BUFFERS 10.0

double cost_overlap_tp_memory(const fmt_model *m, const fmt_strategy *s)
{
    double bytes = m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0;

    if (s->tp <= 1 || m->seq <= 0 || m->hidden <= 0)
        return 0.0;
    return COST_UB_BUFFERS * (double)m->seq * (double)s->mbs *
           (double)m->hidden * bytes;
}
