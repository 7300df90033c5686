/* launcher/work.c: which stages a launch runs, and in what order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

void launch_work_free(launch_work *w)
{
    if (!w)
        return;
    free(w->stages);
    memset(w, 0, sizeof *w);
}

/* 1 when stages a and b hold the same sequence of layer kinds. */
static int same_kinds(const fmt_model *m, const launch_stage *a,
                      const launch_stage *b)
{
    int i;

    if (a->last - a->first != b->last - b->first)
        return 0;
    for (i = 0; i < a->last - a->first; i++)
        if (m->layers[a->first + i].kind != m->layers[b->first + i].kind)
            return 0;
    return 1;
}

int launch_work_of(const plan_doc *d, int strategy, int rank,
                   launch_work *out, util_error *err)
{
    const fmt_strategy *s;
    const fmt_model *m = &d->model;
    int j, l, rc = UTIL_OK, rank_stage = -1;

    memset(out, 0, sizeof *out);
    if (strategy < 0 || strategy >= d->n)
        return util_error_set(err, UTIL_EINVAL, d->path, "strategies",
                              "strategy %d asked for, the plan has %d",
                              strategy + 1, d->n);
    if (m->dtype_bytes >= 4) /* the GPU code has fp16 and bf16 kernels */
        return util_error_set(err, UTIL_EINVAL, d->path, "settings.precision",
                              "the plan trains in fp32 and hetplan-launch runs "
                              "fp16 and bf16 kernels only, so its times would "
                              "not be the plan's (plan in fp16 or bf16, e.g. "
                              "'planner --precision bf16', to check one)");
    s = &d->s[strategy];
    if (s->pp < 1 || s->tp < 1 || s->dp < 1 || !s->bounds || !s->ranks)
        return util_error_set(err, UTIL_EINVAL, d->path, "strategies",
                              "strategy %d has no stage layout", strategy + 1);
    out->strategy = strategy;
    out->tp = s->tp;
    out->dp = s->dp;
    out->pp = s->pp;
    out->mbs = s->mbs;
    out->gas = s->gas;
    out->schedule = s->schedule;
    out->ranks = s->tp * s->dp * s->pp;
    out->rank = rank;
    if (rank >= out->ranks) {
        rc = util_error_set(err, UTIL_EINVAL, d->path, NULL,
                            "rank %d asked for, strategy %d has ranks 0..%d",
                            rank, strategy + 1, out->ranks - 1);
        goto done;
    }
    if (rank >= 0)
        rank_stage = rank / (s->tp * s->dp);
    out->stages = calloc((size_t)s->pp, sizeof *out->stages);
    if (!out->stages) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < s->pp; j++) {
        launch_stage *st = &out->stages[j];
        const fmt_device_type *dt =
            fmt_device(&d->cluster, fmt_rank_device(s, j, 0, 0));
        int k;

        st->first = s->bounds[j];
        st->last = s->bounds[j + 1];
        snprintf(st->device_type, sizeof st->device_type, "%s", dt ? dt->name : "");
        if (j < s->pp - 1)
            st->send_bytes = (double)s->mbs * m->layers[st->last - 1].out_bytes;
        for (l = st->first; l < st->last; l++) {
            int kind = m->layers[l].kind;
            st->params += m->layers[l].params;
            if (prof_kind_measurable(kind))
                st->nsynth++;
            else if (kind != FMT_KIND_NOOP)
                st->nmodelled++;
        }
        st->same_as = j;
        for (k = 0; k < j; k++)
            if (out->stages[k].same_as == k && same_kinds(m, &out->stages[k], st)) {
                st->same_as = k;
                break;
            }
    }
    for (j = 0; j < s->pp; j++) {
        launch_stage *st = &out->stages[j];
        if (rank >= 0)
            st->run = j == rank_stage;
        else
            st->run = st->same_as == j;
        if (st->nsynth == 0) /* nothing to put on the GPU */
            st->run = 0;
    }
done:
    if (rc != UTIL_OK)
        launch_work_free(out);
    return rc;
}

int launch_stage_order(int schedule, int stage, int pp, int gas, int *bwd,
                       int *micro)
{
    int n = 0, f = 0, b = 0, warm;

    if (pp < 1 || gas < 1 || stage < 0 || stage >= pp)
        return -1;
    if (schedule == FMT_SCHED_GPIPE) {
        for (f = 0; f < gas; f++, n++) {
            bwd[n] = 0;
            micro[n] = f;
        }
        for (b = 0; b < gas; b++, n++) {
            bwd[n] = 1;
            micro[n] = b;
        }
        return n;
    }
    /* 1F1B (Narayanan et al. 2021, PipeDream-flush): warm-up forwards,
     * steady one-forward-one-backward, cool-down backwards */
    warm = pp - stage - 1;
    if (warm > gas)
        warm = gas;
    for (; f < warm; f++, n++) {
        bwd[n] = 0;
        micro[n] = f;
    }
    while (f < gas) {
        bwd[n] = 0;
        micro[n++] = f++;
        bwd[n] = 1;
        micro[n++] = b++;
    }
    for (; b < gas; b++, n++) {
        bwd[n] = 1;
        micro[n] = b;
    }
    return n;
}
