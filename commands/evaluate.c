/* commands/evaluate.c: planner evaluate, which scores the strategies of a
 * file with the cost model instead of searching; its options, inputs and
 * output are plan's (plan.c).  --time-limit: once it has passed no
 * further strategy is scored (the first always is); the plan holds those
 * scored, with status "time-limit". */
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
    int nstrat = 0, nscored = 0, i, code;
    double deadline;

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
    deadline = r.o.time_limit > 0.0 ? r.t0 + r.o.time_limit : 0.0;
    for (i = 0; i < nstrat; i++, nscored++) {
        if (i > 0 && util_deadline_passed(deadline))
            break; /* the strategies from i on are not scored */
        if (r.o.schedule_set) /* the command line overrides the file */
            strats[i].schedule = r.cp.schedule;
        if (cost_evaluate(&r.c, &r.m, r.profile, &r.cp, &strats[i], &rs[i], &err) !=
            UTIL_OK) {
            code = cmd_report_error(&err);
            goto done;
        }
    }
    r.meta.method = "evaluate";
    r.meta.evaluated = nscored;
    r.meta.elapsed_s = cmd_seconds() - r.t0;
    r.meta.timed_out = nscored < nstrat;
    r.meta.time_limit_s = nscored < nstrat ? r.o.time_limit : 0.0;
    code = cmd_plan_emit(&r, strats, rs, nscored);
    if (code == CMD_EXIT_OK && nscored < nstrat) {
        fprintf(stderr, "planner: note: time limit of %g s reached: strategies %d to "
                        "%d of '%s' not scored; the plan holds the first %d\n",
                r.o.time_limit, nscored + 1, nstrat, r.o.strategies, nscored);
        code = CMD_EXIT_TIMEOUT;
    }
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
