/* commands/evaluate.c: planner evaluate, which scores the strategies of a
 * file with the cost model instead of searching; its options, inputs and
 * output are plan's (plan.c).  --time-limit: once it has passed no
 * further strategy is scored (the first always is); the plan holds those
 * scored, with status "time-limit".  A strategy without stage boundaries
 * gets plan's layer assignment for its degrees and ranks.  --launcher:
 * those assignments keep to the boundaries the launcher writes, and each
 * strategy the launcher cannot run exactly is named on stderr (it is
 * still scored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "commands.h"

/* A strategy that left out its stage boundaries gets the layer
 * assignment plan would give its degrees and ranks (AMP's DP with
 * memory); when none fits memory (or the stages outnumber the layers
 * holding parameters) it keeps the even split, so the plan says which
 * rank does not fit or which stage is empty.  Exit code. */
static int evaluate_split(cmd_plan_run *r, const search_launcher *lc,
                          fmt_strategy *s, int i)
{
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = search_assign_layers_for(&r->c, &r->m, r->profile, &r->cp, lc, s, &err);
    if (rc == UTIL_EINFEASIBLE) {
        if (!r->o.out.quiet)
            fprintf(stderr, "planner: note: '%s': strategies[%d]: no layer "
                            "split for it: %s; scored with the layers split "
                            "evenly\n",
                    r->o.strategies, i, err.msg);
        return CMD_EXIT_OK;
    }
    if (rc != UTIL_OK) {
        /* the strategy's file and path: its boundaries are the remedy */
        snprintf(err.file, sizeof err.file, "%s", r->o.strategies);
        snprintf(err.path, sizeof err.path, "strategies[%d]", i);
        return cmd_report_error(&err);
    }
    return CMD_EXIT_OK;
}

int cmd_evaluate(int argc, char **argv)
{
    cmd_plan_run r;
    util_error err;
    fmt_strategy *strats = NULL;
    cost_result *rs = NULL;
    int nstrat = 0, nscored = 0, i, code, target = -1, version = 0;
    double deadline;
    search_launcher lc;
    char why[600];

    memset(&err, 0, sizeof err);
    memset(&lc, 0, sizeof lc);
    code = cmd_plan_start(argc, argv, 1, &r);
    if (code != CMD_EXIT_OK)
        goto done;
    if (r.o.launcher != NULL &&
        (code = cmd_plan_launcher(&r, &lc, &target, &version)) != CMD_EXIT_OK)
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
        if (strats[i].bounds_open &&
            (code = evaluate_split(&r, &lc, &strats[i], i)) != CMD_EXIT_OK)
            goto done;
        if (target >= 0 && !r.o.out.quiet &&
            cmd_launcher_refusal(&r, target, version, &strats[i], why, sizeof why))
            fprintf(stderr, "planner: note: '%s': strategies[%d]: %s %s cannot run "
                            "it exactly: %s\n", r.o.strategies, i,
                    export_target_name(target), export_version_name(target, version),
                    why);
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
