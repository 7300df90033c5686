/* commands/advice.c: the nearby-batch advice of planner plan
 * (docs/algorithms.md, "Nearby batches"). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* A nearby global batch that trains materially faster per sample than
 * the plan's (search_advise_batch), into r->meta and a note on stderr;
 * searched when the batch is the requested one, the time is minimised
 * and the best strategy runs on every GPU. */
int cmd_plan_advice(cmd_plan_run *r, const search_params *sp,
                    const search_result *res)
{
    search_batch_advice adv;
    util_error err;
    const fmt_strategy *s;

    if (res->n < 1 || sp->method != SEARCH_METHOD_AMP ||
        sp->objective != SEARCH_OBJ_TIME || res->timed_out ||
        (res->global_batch > 0 && res->global_batch != sp->global_batch))
        return CMD_EXIT_OK;
    s = &res->cands[0].s;
    if (!res->cands[0].r.fits || s->tp * s->dp * s->pp != r->c.ndevices)
        return CMD_EXIT_OK;
    memset(&err, 0, sizeof err);
    if (search_advise_batch(&r->c, &r->m, r->profile, &r->cp, sp,
                            (double)sp->global_batch / res->cands[0].r.iter_s,
                            &adv, &err) != UTIL_OK)
        return cmd_report_error(&err);
    if (adv.global_batch <= 0)
        return CMD_EXIT_OK;
    r->meta.advice_batch = adv.global_batch;
    r->meta.advice_speedup = adv.speedup;
    if (!r->o.out.quiet)
        fprintf(stderr, "planner: note: global batch %d (%+.1f%%) trains %.1f%% "
                        "more samples per second than %d (tp %d, pp %d, dp %d, "
                        "mbs %d); '--global-batch %d' plans it\n",
                adv.global_batch,
                100.0 * (adv.global_batch - sp->global_batch) / sp->global_batch,
                100.0 * (adv.speedup - 1.0), sp->global_batch, adv.tp, adv.pp,
                adv.dp, adv.mbs, adv.global_batch);
    return CMD_EXIT_OK;
}
