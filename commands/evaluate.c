/* commands/evaluate.c: planner evaluate, which scores the strategies of a
 * file with the cost model instead of searching; its options, inputs and
 * output are plan's (plan.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

int cmd_evaluate(int argc, char **argv)
{
    cmd_plan_run r;
    util_error err;
    fmt_strategy *strats = NULL;
    cost_result *rs = NULL;
    int nstrat = 0, i, code;

    memset(&err, 0, sizeof err);
    code = cmd_plan_start(argc, argv, 1, &r);
    if (code != CMD_EXIT_OK)
        goto done;
    if (fmt_load_strategies(r.o.strategies, &r.c, &r.m, r.o.global_batch, &strats,
                            &nstrat, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if ((code = cmd_plan_check_precision(&r, strats, nstrat)) != CMD_EXIT_OK)
        goto done;
    rs = calloc((size_t)(nstrat > 0 ? nstrat : 1), sizeof *rs);
    if (rs == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    for (i = 0; i < nstrat; i++) {
        if (r.o.schedule_set) /* the command line overrides the file */
            strats[i].schedule = r.cp.schedule;
        if (cost_evaluate(&r.c, &r.m, r.profile, &r.cp, &strats[i], &rs[i], &err) !=
            UTIL_OK) {
            code = cmd_report_error(&err);
            goto done;
        }
    }
    r.meta.method = "evaluate";
    r.meta.evaluated = nstrat;
    r.meta.elapsed_s = cmd_seconds() - r.t0;
    code = cmd_plan_emit(&r, strats, rs, nstrat);
done:
    if (strats) {
        for (i = 0; i < nstrat; i++) {
            fmt_strategy_free(&strats[i]);
            if (rs)
                cost_result_free(&rs[i]);
        }
        free(strats);
    }
    free(rs);
    cmd_plan_run_free(&r);
    return code;
}
