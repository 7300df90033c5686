/* commands/whatif.c: planner whatif, which predicts a plan's iteration time
 * when ranks slow down and recommends a remedy; and the loading of plan
 * files that replan shares. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whatif.h"
#include "commands.h"

static const char whatif_usage[] =
    "usage: planner whatif --plan FILE --slow RANK:FACTOR [--slow ...] [options]\n"
    "\n"
    "Predicts the iteration time of a plan when some GPUs slow down (FACTOR 2 =\n"
    "half speed) and compares remedies (docs/whatif-replan.md): keep the plan,\n"
    "re-split the tensor-parallel shards, re-plan stages and shards (these keep\n"
    "the training unchanged), let slow GPUs skip part of their work, or move work\n"
    "to faster GPUs and skip the rest (these may cost accuracy); states the\n"
    "recommended remedy and why.\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --slow RANK:FACTOR     a straggler (repeatable; RANK as in the plan's ranks)\n"
    "  --strategy K           strategy of the plan, 1 = best (default 1)\n"
    "  --iterations N         how long the slowdown lasts: one-off costs of moving\n"
    "                         shards or layers are spread over N (default: for good)\n"
    "  --tolerance F          a lossy remedy must beat the best lossless one by this\n"
    "                         fraction to be recommended (default 0.05)\n"
    "  --granule N            MLP columns of re-planned shards in multiples of N (64)\n"
    "  --time-limit SECONDS   evaluate no further remedy SECONDS after the start; the\n"
    "                         ones left are listed as skipped and the recommendation\n"
    "                         is among those evaluated (status \"time-limit\", exit 7)\n"
    "  --output FILE          write the JSON report to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --strict               unknown keys in input files, and an input changed\n"
    "                         since the plan was made, are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write,\n"
    "  7 the time limit left remedies unevaluated (the report is written)\n";

/* What the command line sets. */
typedef struct whatif_opts {
    cmd_output_opts out;
    const char *plan;
    int strategy, nslow;
    whatif_slow slow[64];
    whatif_params wp;
    double time_limit;      /* --time-limit SECONDS, 0 = none */
} whatif_opts;

/* Options that whatif_option stores. */
enum { OPT_SLOW = 1, OPT_ITERATIONS, OPT_TOLERANCE, OPT_TIME_LIMIT };

/* s as a number >= lo (and at most 1e15) for option opt; sets *bad after
 * the message when it is not. */
static double whatif_number(const char *opt, const char *s, double lo, int *bad)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= lo) || v > 1e15) {
        char l[UTIL_NUM_N];
        cmd_usage_error("whatif", "option '%s' expects a number from %s to 1e15, "
                                  "got '%s'", opt, util_num_text(lo, l, sizeof l), s);
        *bad = 1;
    }
    return v;
}

/* --slow RANK:FACTOR: one more straggler; exit code. */
static int whatif_slow_option(whatif_opts *o, const char *v)
{
    const char *colon = strchr(v, ':');
    char rank[32], *end;
    long r;
    int bad = 0;

    if (o->nslow >= 64)
        return cmd_usage_error(NULL, "%s", "at most 64 '--slow' options");
    if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof rank)
        return cmd_usage_error(NULL, "option '--slow' expects RANK:FACTOR, got '%s'", v);
    snprintf(rank, sizeof rank, "%.*s", (int)(colon - v), v);
    r = strtol(rank, &end, 10);
    if (*end != '\0' || r < 0 || r > INT_MAX)
        return cmd_usage_error(NULL, "option '--slow' expects a rank (integer >= 0) "
                                     "before ':', got '%s'", rank);
    o->slow[o->nslow].rank = (int)r;
    o->slow[o->nslow].factor = whatif_number("--slow", colon + 1, 1.0, &bad);
    o->nslow++;
    return bad ? CMD_EXIT_USAGE : CMD_EXIT_OK;
}

/* Store the value v of option id (written as opt) in the whatif_opts ctx;
 * exit code. */
static int whatif_option(void *ctx, int id, const char *opt, const char *v)
{
    whatif_opts *o = ctx;
    int bad = 0;

    if (id == OPT_SLOW)
        return whatif_slow_option(o, v);
    if (id == OPT_TIME_LIMIT)
        return cmd_parse_time_limit("whatif", v, &o->time_limit);
    if (id == OPT_ITERATIONS) {
        o->wp.iterations = whatif_number(opt, v, 1.0, &bad);
    } else {
        o->wp.tolerance = whatif_number(opt, v, 0.0, &bad);
        if (!bad && o->wp.tolerance >= 1.0)
            return cmd_usage_error(NULL, "option '--tolerance' expects a fraction "
                                         "below 1, got '%s'", v);
    }
    return bad ? CMD_EXIT_USAGE : CMD_EXIT_OK;
}

/* Parse the command line into o; exit code. */
static int whatif_args(int argc, char **argv, whatif_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--plan", NULL, &o->plan),
        CMD_INT("--strategy", &o->strategy, 1, 1000000),
        CMD_INT("--granule", &o->wp.granule, 1, 1 << 20),
        CMD_REPEAT("--slow", OPT_SLOW),
        CMD_CALL("--iterations", OPT_ITERATIONS),
        CMD_CALL("--tolerance", OPT_TOLERANCE),
        CMD_CALL("--time-limit", OPT_TIME_LIMIT),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = whatif_usage, .options = table,
                          .unknown = " for 'whatif'", .handle = whatif_option, .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->strategy = 1;
    whatif_params_init(&o->wp);
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->plan == NULL)
        return cmd_usage_error(NULL, "%s", "whatif needs '--plan FILE'");
    if (o->nslow == 0)
        return cmd_usage_error(NULL, "%s", "whatif needs at least one '--slow "
                                           "RANK:FACTOR'");
    return CMD_EXIT_OK;
}

int cmd_whatif_load(const char *plan, int strategy, int quiet, plan_doc *d)
{
    util_error err;
    int code;

    memset(&err, 0, sizeof err);
    if (plan_load_plan(plan, d, &err) != UTIL_OK)
        return cmd_report_error(&err);
    if ((code = cmd_plan_inputs_check(d, quiet)) != CMD_EXIT_OK)
        return code;
    if (strategy > d->n) {
        return cmd_usage_error(NULL, "option '--strategy' expects 1..%d (the "
                                     "strategies of '%s'), got %d", d->n, plan,
                               strategy);
    }
    return CMD_EXIT_OK;
}

int cmd_whatif(int argc, char **argv)
{
    double start = cmd_seconds();
    whatif_opts o;
    whatif_result w;
    plan_doc d;
    util_error err;
    int code, rc;

    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&err, 0, sizeof err);
    code = whatif_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    if ((code = cmd_whatif_load(o.plan, o.strategy, o.out.quiet, &d)) != CMD_EXIT_OK)
        goto done;
    o.wp.slow = o.slow;
    o.wp.nslow = o.nslow;
    o.wp.deadline = o.time_limit > 0.0 ? start + o.time_limit : 0.0;
    rc = whatif_run(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL, &d.params,
                    &d.s[o.strategy - 1], &o.wp, &w, &err);
    if (rc == UTIL_EINVAL) {
        code = cmd_usage_error("whatif", "option '--slow': %s", err.msg);
        goto done;
    }
    if (rc != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (o.out.verbose)
        fprintf(stderr, "planner: whatif: %.4f s without stragglers, %.4f s with, "
                        "recommended '%s'\n", w.base_s,
                w.remedies[WHATIF_REMEDY_NONE].iter_s,
                whatif_remedy_name(w.recommended));
    code = cmd_emit_report(whatif_json(&w, o.plan, o.strategy),
                           whatif_table(&w, o.plan, o.strategy), &o.out);
    if (code == CMD_EXIT_OK && w.timed_out) {
        int i, k = 0;
        fprintf(stderr, "planner: note: time limit of %g s reached: remedies not "
                        "evaluated:", o.time_limit);
        for (i = 0; i < WHATIF_NREMEDIES; i++)
            if (w.remedies[i].skipped)
                fprintf(stderr, "%s '%s'", k++ ? "," : "", whatif_remedy_name(i));
        fprintf(stderr, "; the recommendation is the best of those evaluated\n");
        code = CMD_EXIT_TIMEOUT;
    }
done:
    whatif_free(&w);
    plan_doc_free(&d);
    return code;
}
