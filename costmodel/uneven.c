/* costmodel/uneven.c: uneven tensor-parallel shards, per-rank slowdowns
 * and frozen layers.  A rank's time is the even-split time of
 * its layers with the TP-divided part scaled to its share (ZERO-resizing
 * / SEMI-migration, section II-B: the divided GEMMs shrink with the
 * columns a task holds) and its compute scaled by its slowdown; frozen
 * layers (PipeTransformer's AutoFreeze) run forward only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "costmodel.h"
#include "internal.h"

static int model_ffn(const fmt_model *m)
{
    if (m->ffn > 0)
        return m->ffn;
    return m->hidden > 0 ? 4 * m->hidden : 0;
}

int cost_shard_units(const fmt_model *m, int *heads, int *cols,
                     util_error *err)
{
    int f = model_ffn(m);

    if (m->heads <= 0 || f <= 0)
        return util_error_set(err, UTIL_EINVAL, NULL, "shape",
                              "uneven tensor-parallel shards need the model's "
                              "heads and hidden size (or ffn), got heads %d, "
                              "hidden %d, ffn %d", m->heads, m->hidden, m->ffn);
    *heads = m->heads;
    *cols = f;
    return UTIL_OK;
}

double cost_attn_frac(const fmt_model *m, int memory)
{
    double h = (double)m->hidden, f = (double)model_ffn(m), sq = (double)m->seq;
    int llama = strcasecmp(m->family, "llama") == 0;
    double attn, mlp;

    if (m->hidden <= 0 || f <= 0.0)
        return 0.5;
    if (memory) {
        /* parameters: Q, K, V, O are 4 h^2; MLP 2 h f (3 h f with SwiGLU) */
        attn = 4.0 * h * h;
        mlp = (llama ? 3.0 : 2.0) * h * f;
    } else {
        /* FLOPs per token: 8 h^2 + 4 s h in attention, 4 h f (6 h f) in
         * the MLP (docs/model-formulas.md) */
        attn = 8.0 * h * h + 4.0 * (sq > 0.0 ? sq : 0.0) * h;
        mlp = (llama ? 6.0 : 4.0) * h * f;
    }
    return attn / (attn + mlp);
}

double cost_rank_share(const fmt_model *m, const fmt_strategy *s, int rank,
                       int memory)
{
    int H = 0, F = 0; /* set by cost_shard_units; initialised for -O2 */
    double a;

    if (s->tp_heads == NULL || s->tp_cols == NULL || s->tp <= 1 ||
        cost_shard_units(m, &H, &F, NULL) != UTIL_OK)
        return 1.0 / (double)s->tp;
    a = cost_attn_frac(m, memory);
    return a * (double)s->tp_heads[rank] / (double)H +
           (1.0 - a) * (double)s->tp_cols[rank] / (double)F;
}

int cost_shards_check(const fmt_model *m, const fmt_strategy *s,
                      util_error *err)
{
    int H = 0, F = 0, j, d, k, rc; /* H, F: initialised for -O2 */

    if (s->tp_heads == NULL && s->tp_cols == NULL)
        return UTIL_OK;
    if (s->tp_heads == NULL || s->tp_cols == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, "ranks",
                              "expected both heads and mlp_cols per rank");
    if ((rc = cost_shard_units(m, &H, &F, err)) != UTIL_OK)
        return rc;
    for (j = 0; j < s->pp; j++)
        for (d = 0; d < s->dp; d++) {
            int sh = 0, sc = 0, r0 = s->tp * d + s->tp * s->dp * j;
            for (k = 0; k < s->tp; k++) {
                if (s->tp_heads[r0 + k] < 0 || s->tp_cols[r0 + k] < 0)
                    return util_error_set(err, UTIL_EINVAL, NULL, "ranks",
                                          "rank %d has a negative shard", r0 + k);
                sh += s->tp_heads[r0 + k];
                sc += s->tp_cols[r0 + k];
            }
            if (sh != H || sc != F)
                return util_error_set(err, UTIL_EINVAL, NULL, "ranks",
                                      "the TP group of stage %d, replica %d "
                                      "holds %d heads and %d MLP columns, "
                                      "expected %d and %d", j, d, sh, sc, H, F);
        }
    return UTIL_OK;
}

int cost_tp_group_mixed(const fmt_cluster *c, const fmt_strategy *s,
                        int stage, int dpi)
{
    int k, t0 = c->nodes[c->device_node[fmt_rank_device(s, stage, dpi, 0)]].type;

    for (k = 1; k < s->tp; k++)
        if (c->nodes[c->device_node[fmt_rank_device(s, stage, dpi, k)]].type != t0)
            return 1;
    return 0;
}

/* Analytic split of a layer's forward + backward compute at TP degree tp:
 * *div = part that TP divides, *gemm = part that is TP-divided matrix
 * multiplication (backward GEMMs do twice the forward FLOPs, element-wise
 * kernels move bwd_traffic times the forward bytes, as in layer_time.c). */
static void layer_split(const fmt_model *m, const cost_params *p,
                        const fmt_device_type *dt, int layer, int tp,
                        int mbs, double *div, double *gemm)
{
    const fmt_layer *l = &m->layers[layer];
    double t = (double)tp, b = (double)mbs;
    double pk = cost_gemm_peak(m, p, dt) * p->compute_eff, bw = dt->mem_bw * p->memory_eff;
    double gd = pk > 0.0 ? l->fwd_flops * l->tp_flops_frac / t / pk : 0.0;
    double gr = pk > 0.0 ? l->fwd_flops * (1.0 - l->tp_flops_frac) / pk : 0.0;
    double md = bw > 0.0 ? l->traffic / t / bw : 0.0;
    double mr = bw > 0.0 ? l->traffic_rep / bw : 0.0;
    double fd = b * (3.0 * gd + (1.0 + p->bwd_traffic) * md);
    double fr = b * (3.0 * gr + (1.0 + p->bwd_traffic) * mr) +
                3.0 * (double)l->kernels * cost_kernel_cost(m, p);

    *div = fd + fr > 0.0 ? fd / (fd + fr) : 0.0;
    *gemm = fd + fr > 0.0 ? 3.0 * b * gd / (fd + fr) : 0.0;
}

static double rank_slow(const fmt_strategy *s, int rank)
{
    return s->slow != NULL ? s->slow[rank] : 1.0;
}

void cost_rank_layer_adjust(const fmt_model *m, const cost_params *p,
                            const fmt_device_type *dt,
                            const fmt_strategy *s, int rank, int layer,
                            cost_layer_time *lt)
{
    int frozen = layer < p->frozen_layers;
    int shards = s->tp_heads != NULL && s->tp_cols != NULL && s->tp > 1;
    double slow, half = 0.5 * lt->comm, k, cf, cb;

    if (rank >= s->tp * s->dp * s->pp)
        rank = -1;
    if (rank < 0)
        shards = 0;
    slow = rank >= 0 ? rank_slow(s, rank) : 1.0;
    k = slow;
    if (!frozen && !shards && slow == 1.0)
        return;
    if (shards) {
        double df, gf;
        layer_split(m, p, dt, layer, s->tp, s->mbs, &df, &gf);
        /* divided work scales with the share: tp * share = 1 when even */
        k = slow * (1.0 - df + df * (double)s->tp * cost_rank_share(m, s, rank, 0));
    }
    cf = lt->fwd - half > 0.0 ? lt->fwd - half : 0.0;
    cb = lt->bwd - half > 0.0 ? lt->bwd - half : 0.0;
    lt->fwd = half + cf * k;
    if (frozen) { /* PipeTransformer: frozen layers run no backward */
        lt->bwd = 0.0;
        lt->comm = half;
    } else {
        lt->bwd = half + cb * k;
    }
}

void cost_rank_memory_line(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int rank, double *base,
                           double *per_share)
{
    int j = rank / (s->tp * s->dp), inflight = cost_inflight(p, j, s->pp, s->gas);
    cost_params q = *p; /* the strategy's recomputation and sequence parallelism */
    double m1, m2;

    q.recompute = cost_strategy_recompute(p, s);
    q.sp = s->sp > 0;
    m1 = cost_stage_memory(m, &q, s->bounds[j], s->bounds[j + 1], s->tp, s->dp,
                           s->mbs, inflight);
    m2 = cost_stage_memory(m, &q, s->bounds[j], s->bounds[j + 1], 2 * s->tp,
                           s->dp, s->mbs, inflight);

    /* the memory model is linear in 1 / tp: M = A + B / tp */
    *per_share = 2.0 * (double)s->tp * (m1 - m2);
    *base = m1 - *per_share / (double)s->tp;
}

double cost_rank_memory(const fmt_model *m, const cost_params *p,
                        const fmt_strategy *s, int rank, double even_bytes)
{
    double base, per;

    if (s->tp_heads == NULL || s->tp_cols == NULL || s->tp <= 1)
        return even_bytes;
    cost_rank_memory_line(m, p, s, rank, &base, &per);
    return even_bytes + per * (cost_rank_share(m, s, rank, 1) - 1.0 / (double)s->tp);
}

int cost_rank_time_of(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *p,
                      const fmt_strategy *s, int rank, cost_rank_time *out)
{
    int j, d, k, l, dev;
    double bw, lat, slow, t = (double)s->tp;
    const fmt_device_type *dt;
    const fmt_node *node;

    memset(out, 0, sizeof *out);
    if (rank < 0 || rank >= s->tp * s->dp * s->pp)
        return UTIL_EINVAL;
    j = rank / (s->tp * s->dp);
    d = (rank / s->tp) % s->dp;
    k = rank % s->tp;
    dev = fmt_rank_device(s, j, d, k);
    dt = fmt_device(c, dev);
    node = &c->nodes[c->device_node[dev]];
    slow = rank_slow(s, rank);
    out->share = cost_rank_share(m, s, rank, 0);
    cost_tp_ring(c, p, s, j, d, &bw, &lat);
    for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
        cost_layer_time lt;
        double df, gf, half, work;
        cost_layer_time_of(m, prof, p, dt, l, s->tp, s->mbs, bw, lat,
                           node->intra_bw * cost_link_eff(p, FMT_LINK_INTRA, node->intra_bw), &lt);
        layer_split(m, p, dt, l, s->tp, s->mbs, &df, &gf);
        half = 0.5 * lt.comm;
        work = (lt.fwd - half > 0.0 ? lt.fwd - half : 0.0);
        if (l < p->frozen_layers) {
            out->comm += half;
        } else {
            work += lt.bwd - half > 0.0 ? lt.bwd - half : 0.0;
            out->comm += lt.comm;
        }
        if (s->tp <= 1) {
            df = 0.0;
            gf = 0.0;
        }
        out->fixed += work * slow * (1.0 - df);
        out->per_share += work * slow * df * t;
        out->gemm += work * slow * gf * t * out->share;
    }
    out->fixed += out->comm;
    out->total = out->fixed + out->per_share * out->share;
    return UTIL_OK;
}
