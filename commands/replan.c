/* commands/replan.c: planner replan, which re-plans a plan as its first
 * layers freeze. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replan.h"
#include "export.h"
#include "commands.h"

static const char replan_usage[] =
    "usage: planner replan --plan FILE (--frozen K | --schedule freeze.json) [options]\n"
    "\n"
    "Re-plans a plan as its first layers freeze (PipeTransformer; docs/whatif-replan.md):\n"
    "frozen layers run forward only and keep no gradients or optimizer state; the\n"
    "layers are re-balanced, the pipeline compressed to fewer stages while they fit\n"
    "memory, the micro-batch count searched with the cost model, and freed GPUs\n"
    "become more data-parallel replicas.  With a freeze schedule every phase is\n"
    "re-planned and the speed-up over keeping the first plan is predicted.\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --frozen K             the first K layers (of the model's layer list) frozen\n"
    "  --schedule FILE        freeze schedule: {\"total_epochs\":N,\"epochs\":[{\"epoch\":0,\n"
    "                         \"frozen\":0},{\"epoch\":3,\"frozen\":8},...]}\n"
    "  --strategy K           strategy of the plan, 1 = best (default 1)\n"
    "  --max-mbs N            largest micro-batch size tried\n"
    "  --no-compress          keep the number of pipeline stages\n"
    "  --time-limit SECONDS   stop searching after SECONDS, keeping the best plans\n"
    "                         found so far (status \"time-limit\", exit code 7)\n"
    "  --launcher T[@V]       keep to what launcher T runs exactly (default: the\n"
    "                         plan's 'plan --launcher', else any strategy)\n"
    "  --output FILE          write the JSON report to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --strict               unknown keys in input files, and an input changed\n"
    "                         since the plan was made, are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 4 no plan fits,\n"
    "  5 cannot write, 7 the time limit cut the search short\n";

/* What the command line sets. */
typedef struct replan_opts {
    cmd_output_opts out;
    const char *plan, *schedule;
    int strategy, frozen;
    replan_params rp;
    const char *launcher;   /* --launcher TARGET[@VERSION], NULL = the plan's */
} replan_opts;

/* --time-limit (id 1) and --launcher (id 2) into the replan_opts ctx;
 * exit code. */
static int replan_option(void *ctx, int id, const char *opt, const char *v)
{
    replan_opts *o = ctx;

    (void)opt;
    if (id == 2) {
        o->launcher = v;
        return cmd_launcher_parse(v, NULL, NULL);
    }
    return cmd_parse_time_limit("replan", v, &o->rp.time_limit_s);
}

/* Parse the command line into o; exit code. */
static int replan_args(int argc, char **argv, replan_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--plan", NULL, &o->plan),
        CMD_INT("--strategy", &o->strategy, 1, 1000000),
        CMD_INT("--frozen", &o->frozen, 0, INT_MAX / 2),
        CMD_STRING("--schedule", NULL, &o->schedule),
        CMD_INT("--max-mbs", &o->rp.max_mbs, 1, INT_MAX / 2),
        CMD_SET("--no-compress", NULL, &o->rp.compress, 0),
        CMD_CALL("--time-limit", 1),
        CMD_CALL("--launcher", 2),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = replan_usage, .options = table,
                          .unknown = " for 'replan'", .handle = replan_option,
                          .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->strategy = 1;
    o->frozen = -1;
    replan_params_init(&o->rp);
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->plan == NULL)
        return cmd_usage_error(NULL, "%s", "replan needs '--plan FILE'");
    if ((o->frozen < 0) == (o->schedule == NULL))
        return cmd_usage_error(NULL, "%s", "replan needs exactly one of '--frozen K' "
                                           "and '--schedule FILE'");
    return CMD_EXIT_OK;
}

/* The freeze schedule: the --schedule file, or one phase of --frozen K
 * layers; exit code. */
static int replan_freeze_of(const replan_opts *o, const plan_doc *d, replan_freeze *f)
{
    util_error err;

    memset(&err, 0, sizeof err);
    if (o->schedule != NULL) {
        if (replan_load_freeze(o->schedule, d->model.nlayers, f, &err) != UTIL_OK)
            return cmd_report_error(&err);
        return CMD_EXIT_OK;
    }
    if (o->frozen >= d->model.nlayers) {
        return cmd_usage_error(NULL, "option '--frozen' is %d but the model of "
                                     "'%s' has %d layers: expected 0..%d", o->frozen,
                               o->plan, d->model.nlayers, d->model.nlayers - 1);
    }
    f->phases = calloc(1, sizeof *f->phases);
    if (f->phases == NULL)
        return cmd_out_of_memory();
    f->n = 1;
    f->phases[0].frozen = o->frozen;
    f->total_epochs = 1;
    return CMD_EXIT_OK;
}

/* The launcher every phase keeps to: --launcher, else the one the plan
 * was made for (settings.launcher); exit code. */
static int replan_launcher(replan_opts *o, const plan_doc *d)
{
    util_error err;
    int target = -1, version = EXPORT_VERSION_OLD, code;

    memset(&err, 0, sizeof err);
    if (o->launcher != NULL) {
        if ((code = cmd_launcher_parse(o->launcher, &target, &version)) != CMD_EXIT_OK)
            return code;
    } else if (d->launcher[0] != '\0') {
        target = export_target_from_name(d->launcher);
        version = export_version_from_name(target, d->launcher_version);
        if (target < 0 || version < 0) {
            fprintf(stderr, "planner: '%s': settings.launcher names no launcher "
                            "hetplan knows ('%s' '%s')\n", o->plan, d->launcher,
                    d->launcher_version);
            return CMD_EXIT_INPUT;
        }
    }
    if (target >= 0 && export_target_caps(target, version, &o->rp.launcher, &err) != UTIL_OK)
        return cmd_report_error(&err);
    return CMD_EXIT_OK;
}

int cmd_replan(int argc, char **argv)
{
    replan_opts o;
    replan_result r;
    replan_freeze f;
    plan_doc d;
    util_error err;
    int code;

    memset(&d, 0, sizeof d);
    memset(&r, 0, sizeof r);
    memset(&f, 0, sizeof f);
    memset(&err, 0, sizeof err);
    code = replan_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    if ((code = cmd_whatif_load(o.plan, o.strategy, o.out.quiet, &d)) != CMD_EXIT_OK ||
        (code = replan_freeze_of(&o, &d, &f)) != CMD_EXIT_OK)
        goto done;
    o.rp.global_batch = d.global_batch;
    if ((code = replan_launcher(&o, &d)) != CMD_EXIT_OK)
        goto done;
    if (replan_run(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL, &d.params,
                   &d.s[o.strategy - 1], &f, &o.rp, &r, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (o.out.verbose)
        fprintf(stderr, "planner: replan: %d phase(s), predicted speed-up %.3f over "
                        "keeping the first plan\n", r.n, r.speedup);
    code = cmd_emit_report(replan_json(&r, &d.cluster, o.plan), replan_table(&r, o.plan),
                           &o.out);
    if (code == CMD_EXIT_OK && r.timed_out) {
        fprintf(stderr, "planner: note: time limit of %g s reached: each phase's plan "
                        "is the best found so far\n", o.rp.time_limit_s);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    replan_free(&r);
    replan_freeze_free(&f);
    plan_doc_free(&d);
    return code;
}
