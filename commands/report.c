/* commands/report.c: planner report, which draws a plan as SVG or HTML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "commands.h"

static const char report_usage[] =
    "usage: planner report --plan FILE --output FILE.svg|FILE.html [--top-k K]\n"
    "                      [--strategy K] [--format table|json] [--quiet] [--verbose]\n"
    "\n"
    "Draws a plan (docs/report.md): the simulated pipeline timeline of one\n"
    "iteration per device, memory per device against its capacity, and the\n"
    "plan's top-k strategies side by side.  .svg: a self-contained SVG; .html:\n"
    "the SVG inline plus tables.\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --output FILE          FILE.svg or FILE.html, written atomically\n"
    "  --top-k K              strategies compared (default 5, at most those in the plan)\n"
    "  --strategy K           strategy whose timeline and memory are drawn (default 1)\n"
    "  --format table|json    stdout: a summary table, or JSON\n"
    "  --strict               unknown keys in input files, and an input changed\n"
    "                         since the plan was made, are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "  --time-limit SECONDS   when SECONDS have passed before the timeline is\n"
    "                         simulated or while it is, draw the report without\n"
    "                         it, comparing the strategies scored (exit code 7)\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write,\n"
    "  7 the time limit left the timeline out (the report is written)\n";

/* What the command line sets. */
typedef struct report_opts {
    cmd_output_opts out;
    const char *plan;
    int strategy, top_k;
    double time_limit;      /* --time-limit SECONDS, 0 = none */
} report_opts;

/* --time-limit into the report_opts ctx; exit code. */
static int report_option(void *ctx, int id, const char *opt, const char *v)
{
    report_opts *o = ctx;

    (void)id;
    (void)opt;
    return cmd_parse_time_limit("report", v, &o->time_limit);
}

/* Parse the command line into o; exit code. */
static int report_args(int argc, char **argv, report_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--plan", NULL, &o->plan),
        CMD_INT("--strategy", &o->strategy, 1, 100000),
        CMD_INT("--top-k", &o->top_k, 1, 100000),
        CMD_CALL("--time-limit", 1),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = report_usage, .options = table,
                          .unknown = " for 'report'", .handle = report_option,
                          .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->strategy = 1;
    o->top_k = 5;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->plan == NULL)
        return cmd_usage_error(NULL, "%s", "missing required option '--plan'");
    if (o->out.output == NULL)
        return cmd_usage_error(NULL, "%s", "missing required option '--output'");
    return CMD_EXIT_OK;
}

/* 1 when s ends with suffix. */
static int report_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* --format json on stdout: the drawing and the strategies compared. */
static void report_print_json(const report_opts *o, const report_input *in,
                              const report_layout *lay, const char *text, int html,
                              int timed_out)
{
    int i;

    printf("{\"output\": ");
    cmd_json_string(stdout, o->out.output);
    printf(", \"status\": \"%s\"", timed_out ? "time-limit" : "complete");
    printf(", \"format\": \"%s\", \"width_px\": %.0f, \"height_px\": %.0f, "
           "\"bytes\": %zu,\n \"timeline\": ", html ? "html" : "svg", lay->width,
           lay->height, strlen(text));
    if (in->timeline)
        printf("{\"strategy\": %d, \"simulated_s\": %.17g, \"events\": %d}",
               o->strategy, in->timeline->iter_s, in->timeline->nevents);
    else
        printf("null");
    printf(",\n \"strategies\": [");
    for (i = 0; i < in->n; i++)
        printf("%s\n  {\"rank\": %d, \"tp\": %d, \"dp\": %d, \"pp\": %d, \"mbs\": %d, "
               "\"predicted_s\": %.17g, \"fits\": %s, \"idle_gpus\": %d}",
               i ? "," : "", i + 1,
               in->s[i].tp, in->s[i].dp, in->s[i].pp, in->s[i].mbs, in->r[i].iter_s,
               in->r[i].fits ? "true" : "false",
               in->c->ndevices - in->s[i].tp * in->s[i].dp * in->s[i].pp);
    printf("]}\n");
}

/* The table on stdout: the strategies compared and what was drawn. */
static void report_print_table(const report_opts *o, const report_input *in,
                               const report_layout *lay, int html)
{
    int i, k;

    printf("%-2s %9s %10s %3s %3s %3s %4s %15s %4s\n", "#", "time (s)", "samples/s",
           "tp", "dp", "pp", "mbs", "peak mem (GiB)", "fits");
    for (i = 0; i < in->n; i++) {
        const cost_result *r = &in->r[i];
        double peak = 0;
        for (k = 0; k < r->nranks; k++)
            if (r->mem_bytes[k] > peak)
                peak = r->mem_bytes[k];
        printf("%-2d %9.4f %10.2f %3d %3d %3d %4d %15.2f %4s\n", i + 1, r->iter_s,
               r->iter_s > 0 ? in->global_batch / r->iter_s : 0.0, in->s[i].tp,
               in->s[i].dp, in->s[i].pp, in->s[i].mbs, peak / 1073741824.0,
               r->fits ? "yes" : "no");
    }
    if (in->timeline)
        printf("timeline of #%d: %.4f s simulated, %d events\n", o->strategy,
               in->timeline->iter_s, in->timeline->nevents);
    k = in->s[o->strategy - 1].tp * in->s[o->strategy - 1].dp *
        in->s[o->strategy - 1].pp;
    if (k < in->c->ndevices)
        printf("idle GPUs of #%d: %d of %d, listed in the report%s%s\n", o->strategy,
               in->c->ndevices - k, in->c->ndevices,
               in->idle_reason && in->idle_reason[0] ? ": " : "",
               in->idle_reason ? in->idle_reason : "");
    printf("report written to '%s' (%s, %.0f x %.0f px)\n", o->out.output,
           html ? "HTML" : "SVG", lay->width, lay->height);
}

int cmd_report(int argc, char **argv)
{
    double start = cmd_seconds();
    report_opts o;
    plan_doc d;
    util_error err;
    cost_result *rs = NULL;
    cost_timeline tl;
    report_input in;
    report_layout lay;
    char *text = NULL;
    int code, i, k, n = 0, html, have_tl = 0, timed_out = 0, asked = 0, rc;
    double deadline;

    memset(&d, 0, sizeof d);
    memset(&err, 0, sizeof err);
    memset(&tl, 0, sizeof tl);
    code = report_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    if (report_ends_with(o.out.output, ".svg"))
        html = 0;
    else if (report_ends_with(o.out.output, ".html") ||
             report_ends_with(o.out.output, ".htm"))
        html = 1;
    else
        return cmd_usage_error(NULL, "option '--output' expects a file ending in .svg "
                                     "or .html, got '%s'", o.out.output);
    if ((code = cmd_export_load(o.plan, o.strategy, o.out.quiet, &d)) != CMD_EXIT_OK)
        goto done;
    n = o.top_k < d.n ? o.top_k : d.n;
    if (n < o.strategy)
        n = o.strategy;
    rs = calloc((size_t)n, sizeof *rs);
    if (rs == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    deadline = o.time_limit > 0.0 ? start + o.time_limit : 0.0;
    asked = n;
    for (i = 0; i < n; i++) {
        if (cost_evaluate(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                          &d.params, &d.s[i], &rs[i], &err) != UTIL_OK) {
            code = cmd_report_error(&err);
            goto done;
        }
        /* past the limit: compare those scored, the shown one among them */
        if (i + 1 < n && i + 1 >= o.strategy && util_deadline_passed(deadline)) {
            for (k = i + 1; k < n; k++)
                cost_result_free(&rs[k]);
            n = i + 1;
            timed_out = 1;
        }
    }
    if (timed_out || util_deadline_passed(deadline))
        timed_out = 1; /* drawn without the timeline */
    else if ((rc = cost_simulate_until(&d.cluster, &d.model,
                                       d.have_profile ? &d.profile : NULL, &d.params,
                                       &d.s[o.strategy - 1], d.params.overlap_dp,
                                       deadline, &tl, &err)) == UTIL_OK)
        have_tl = 1;
    else if (rc == UTIL_ETIMEOUT)
        timed_out = 1;
    else if (!o.out.quiet) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: warning: no timeline in the report: %s\n", buf);
    }
    memset(&in, 0, sizeof in);
    in.title = cmd_basename(o.plan);
    in.c = &d.cluster;
    in.m = &d.model;
    in.s = d.s;
    in.r = rs;
    in.n = n;
    in.shown = o.strategy - 1;
    in.timeline = have_tl ? &tl : NULL;
    in.global_batch = d.global_batch;
    in.idle_reason = d.idle_reason ? d.idle_reason[o.strategy - 1] : NULL;
    if ((html ? report_html(&in, &text, &lay, &err)
              : report_svg(&in, &text, &lay, &err)) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if ((code = cmd_write_file(o.out.output, text)) != CMD_EXIT_OK)
        goto done;
    if (o.out.verbose)
        fprintf(stderr, "planner: report of %d strategies from '%s': %.0f x %.0f px, "
                        "%d timeline events\n", n, o.plan, lay.width, lay.height,
                have_tl ? tl.nevents : 0);
    if (!o.out.quiet) {
        if (o.out.json)
            report_print_json(&o, &in, &lay, text, html, timed_out);
        else
            report_print_table(&o, &in, &lay, html);
        code = cmd_flush_stdout();
    }
    if (code == CMD_EXIT_OK && timed_out) {
        fprintf(stderr, "planner: note: time limit of %g s reached before the "
                        "timeline of strategy %d was simulated: the report is drawn "
                        "without it", o.time_limit, o.strategy);
        if (n < asked)
            fprintf(stderr, " and compares the first %d of the %d strategies", n,
                    asked);
        fprintf(stderr, "\n");
        code = CMD_EXIT_TIMEOUT;
    }
done:
    free(text);
    if (rs) {
        for (i = 0; i < n; i++)
            cost_result_free(&rs[i]);
        free(rs);
    }
    cost_timeline_free(&tl);
    plan_doc_free(&d);
    return code;
}
