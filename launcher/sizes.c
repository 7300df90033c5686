/* launcher/sizes.c: the bytes a rank moves in one iteration: pipeline
 * activations and gradients, tensor-parallel collectives, data-parallel
 * gradient reduction or the distributed optimizer's reduce-scatter and
 * all-gather, the tied embedding's all-reduce, the host copies of
 * optimizer offload. */
#include <stdlib.h>
#include <string.h>

#include "launch.h"

void launch_sizes_free(launch_sizes *z)
{
    if (!z)
        return;
    free(z->act_bytes);
    memset(z, 0, sizeof *z);
}

/* Parameters of layer l one TP rank holds: the replicated part whole,
 * the rest split tp ways (Megatron's column/row-parallel linears and
 * vocab-parallel embedding, Shoeybi et al. 2019, sec. 3). */
static double rank_params(const fmt_layer *l, int tp)
{
    double rep = l->params_rep > 0.0 ? l->params_rep : 0.0;

    if (rep > l->params)
        rep = l->params;
    return rep + (l->params - rep) / (double)tp;
}

int launch_sizes_of(const plan_doc *d, const fmt_strategy *s, int r,
                    launch_sizes *out, util_error *err)
{
    const fmt_model *m = &d->model;
    int vpp = s->vpp > 1 ? s->vpp : 1, pp = s->pp, tp = s->tp, j, c, l;
    int stage = r / (s->tp * s->dp), zero = cost_strategy_zero(&d->params, s);
    double wb, gb, ob, mbs = (double)s->mbs, div;

    memset(out, 0, sizeof *out);
    if (r < 0 || r >= s->tp * s->dp * s->pp)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "rank %d is not in the plan", r);
    out->stage = stage;
    out->vpp = vpp;
    out->act_bytes = calloc((size_t)(pp * vpp), sizeof *out->act_bytes);
    if (!out->act_bytes)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    /* activations at each cut of virtual stages v = c * pp + j: device j's
       layers split into vpp contiguous chunks of equal count */
    div = s->sp && tp > 1 ? (double)tp : 1.0;
    for (j = 0; j < pp; j++) {
        int a = s->bounds[j], n = s->bounds[j + 1] - a;
        for (c = 0; c < vpp; c++) {
            int v = c * pp + j, last = a + (c + 1) * n / vpp - 1;
            if (v >= pp * vpp - 1 || last < a)
                continue;
            out->act_bytes[v] = mbs * m->layers[last].out_bytes / div;
        }
    }
    /* the rank's own layers: collectives and parameters */
    cost_state_bytes(m, &d->params, 1, &wb, &gb, &ob);
    for (l = s->bounds[stage]; l < s->bounds[stage + 1]; l++) {
        const fmt_layer *ly = &m->layers[l];
        double p = rank_params(ly, tp);
        if (tp > 1 && ly->tp_collectives > 0) {
            out->tp_fwd += ly->tp_collectives;
            out->tp_bwd += ly->tp_collectives;
            out->tp_fwd_bytes += ly->tp_collectives * mbs * ly->tp_comm_bytes;
            out->tp_bwd_bytes += ly->tp_collectives * mbs * ly->tp_comm_bytes;
            if (ly->tp_comm_bytes * mbs > out->tp_bytes)
                out->tp_bytes = ly->tp_comm_bytes * mbs;
        }
        out->params += p;
        /* the tied weight is the token table (embedding) and the head's
           matrix, vocabulary-parallel; learned positions are not tied */
        if (ly->tied_group > 0 && pp > 1 && (stage == 0 || stage == pp - 1))
            out->embed_bytes += (ly->params - (ly->params_rep > 0.0 ? ly->params_rep : 0.0)) /
                                (double)tp * gb;
    }
    out->grad_bytes = out->params * gb;
    out->weight_bytes = out->params * wb;
    if (s->dp > 1) {
        if (zero >= 1) {
            /* Megatron's distributed optimizer (ZeRO-1, Rajbhandari et al.
               2020, sec. 5): reduce-scatter the gradients, all-gather the
               updated weights */
            out->dp_rs = out->grad_bytes;
            out->dp_ag = out->weight_bytes;
        } else {
            out->dp_allreduce = out->grad_bytes;
        }
    }
    if (cost_strategy_offload(&d->params, s) == FMT_OFFLOAD_OPTIMIZER) {
        /* ZeRO-Offload (Ren et al., ATC'21, sec. 4.2): the gradients of
           the shard the rank steps go to host memory, the CPU's Adam
           updates it, its weights come back; the shard is the rank's
           1 / dp under ZeRO >= 1, as cost_offload_step charges it */
        double sh = zero >= 1 && s->dp > 1 ? (double)s->dp : 1.0;
        out->host_grad_bytes = out->grad_bytes / sh;
        out->host_weight_bytes = out->weight_bytes / sh;
    }
    return UTIL_OK;
}
