/* launcher/program.c: the operations one rank runs in an iteration, in
 * the order the GPU code issues them: passes with their TP collectives,
 * point-to-point groups, then the gradient collectives and the
 * optimizer step (between the host copies under optimizer offload). */
#include <stdlib.h>
#include <string.h>

#include "launch.h"

int launch_rank_program(const plan_doc *d, const fmt_strategy *s, int r,
                        launch_rop **out, util_error *err)
{
    const fmt_model *m = &d->model;
    launch_sizes z;
    launch_step *steps = NULL;
    launch_rop *ops = NULL;
    int vpp = s->vpp > 1 ? s->vpp : 1, stage, nsteps, k, l, q, n = 0, cap, colls = 0;
    int zero = cost_strategy_zero(&d->params, s), a, nl;

    *out = NULL;
    if (launch_sizes_of(d, s, r, &z, err) != UTIL_OK)
        return -1;
    stage = z.stage;
    a = s->bounds[stage];
    nl = s->bounds[stage + 1] - a;
    nsteps = launch_steps(s->schedule, vpp, stage, s->pp, s->gas, z.act_bytes, &steps, err);
    if (nsteps < 0) {
        launch_sizes_free(&z);
        return -1;
    }
    for (l = a; l < a + nl && s->tp > 1; l++)
        colls += m->layers[l].tp_collectives;
    /* each pass runs 1 / vpp of the layers; at most all of them */
    cap = nsteps + 2 * s->gas * (colls + 1) + 8;
    ops = calloc((size_t)cap, sizeof *ops);
    if (!ops) {
        free(steps);
        launch_sizes_free(&z);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory"), -1;
    }
#define PUT(k_, g_) (ops[n].kind = (k_), ops[n].group = (g_), &ops[n++])
    for (k = 0; k < nsteps; k++) {
        launch_rop *o;
        if (!steps[k].is_pass) {
            o = PUT(LAUNCH_ROP_P2P, LAUNCH_GROUP_PP);
            o->step = steps[k];
            continue;
        }
        o = PUT(LAUNCH_ROP_PASS, -1);
        o->step = steps[k];
        {
            int c = steps[k].pass.chunk;
            int first = a + c * nl / vpp, last = a + (c + 1) * nl / vpp;
            for (l = first; l < last && s->tp > 1; l++)
                for (q = 0; q < m->layers[l].tp_collectives; q++) {
                    o = PUT(LAUNCH_ROP_TP, LAUNCH_GROUP_TP);
                    o->layer = l;
                    o->bytes = (double)s->mbs * m->layers[l].tp_comm_bytes;
                }
        }
    }
    if (z.embed_bytes > 0.0)
        PUT(LAUNCH_ROP_EMBED, LAUNCH_GROUP_EMBED)->bytes = z.embed_bytes;
    if (z.dp_allreduce > 0.0)
        PUT(LAUNCH_ROP_DP_ALLREDUCE, LAUNCH_GROUP_DP)->bytes = z.dp_allreduce;
    if (z.dp_rs > 0.0)
        PUT(LAUNCH_ROP_DP_RS, LAUNCH_GROUP_DP)->bytes = z.dp_rs;
    if (z.host_grad_bytes > 0.0)
        PUT(LAUNCH_ROP_HOST_D2H, -1)->bytes = z.host_grad_bytes;
    PUT(LAUNCH_ROP_OPT, -1);
    if (z.host_weight_bytes > 0.0)
        PUT(LAUNCH_ROP_HOST_H2D, -1)->bytes = z.host_weight_bytes;
    if (zero >= 1 && z.dp_ag > 0.0)
        PUT(LAUNCH_ROP_DP_AG, LAUNCH_GROUP_DP)->bytes = z.dp_ag;
#undef PUT
    free(steps);
    launch_sizes_free(&z);
    *out = ops;
    return n;
}
