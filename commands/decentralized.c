/* commands/decentralized.c: planner decentralized, which schedules
 * decentralized training (DT-FM) over regions with slow links. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decentral.h"
#include "commands.h"

static const char decentralized_usage[] =
    "usage: planner decentralized --cluster FILE [options]\n"
    "\n"
    "Schedules decentralized training (DT-FM, Yuan et al. 2022): splits the\n"
    "devices into d_pp data-parallel groups, one per pipeline stage, so that\n"
    "DataP-Cost + PipelineP-Cost (the paper's eqs. 1-4) is smallest.\n"
    "\n"
    "options:\n"
    "  --cluster FILE         decentralized cluster: regions or latency/bandwidth\n"
    "                         matrices (docs/decentralized.md)\n"
    "  --model FILE           model for c_pp, c_dp and compute times (default: the\n"
    "                         paper's GPT3-XL settings)\n"
    "  --searcher NAME        ga (default), sa, kl, random or exact (<= 16 devices,\n"
    "                         or <= 1024 in <= 32 classes of identical links)\n"
    "  --seed N               random seed (default 0)\n"
    "  --seconds S            wall-time limit of the whole command, loading\n"
    "                         included; when hit, the best so far is kept\n"
    "                         (default 60)\n"
    "  --time-limit SECONDS   the same limit as --seconds (given both, the smaller\n"
    "                         wins); when it ends the search, exit code 7\n"
    "  --evals N              limit on cost evaluations (reproducible on any machine)\n"
    "  --stall N              stop after N offspring (sa: cycles, random: samples)\n"
    "                         without a new best (default 100 for ga/kl, 3 for sa;\n"
    "                         random draws 5000 samples)\n"
    "  --pp N                 pipeline stages d_pp, 1..64 (default: the file's,\n"
    "                         else 8)\n"
    "  --convention NAME      paper (default: c_pp, c_dp from the model) or\n"
    "                         public-code (the public scheduler's constants)\n"
    "  --compute              add per-stage compute time of each device's GPU type\n"
    "                         (beyond the paper)\n"
    "  --output FILE          write the plan JSON to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --strict               unknown keys in input files are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print search statistics on stderr\n"
    "  --help\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid input file,\n"
    "  5 cannot write the output, 7 --time-limit ended the search (the best\n"
    "  schedule so far is written; under --seconds alone that is exit code 0)\n";

/* The search's progress on a terminal: one line, redrawn in place. */
static void decentralized_progress(void *ctx, const search_progress *p)
{
    (void)ctx;
    fprintf(stderr, "\rplanner: %s %.1f s, %ld evaluations, best %.4f s   ",
            p->phase, p->elapsed_s, p->evaluated, p->best_s);
    fflush(stderr);
}

/* What the command line sets. */
typedef struct decentralized_opts {
    cmd_output_opts out;
    const char *cluster, *model;
    int evals, stall, seconds_set;
    double seed, time_limit;    /* time_limit: --time-limit SECONDS, 0 = none */
    dtfm_options po;
    dtfm_search_params sp;
} decentralized_opts;

/* Options that decentralized_option stores. */
enum { OPT_SEARCHER = 1, OPT_CONVENTION, OPT_SEED, OPT_SECONDS, OPT_TIME_LIMIT };

/* s as a number in lo..hi for option opt: 0, else -1 after the message. */
static int decentralized_double(const char *opt, const char *s, double lo,
                                double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        char l[UTIL_NUM_N], h[UTIL_NUM_N];
        cmd_usage_error("decentralized", "option '%s' expects a number in %s..%s, "
                                         "got '%s'", opt, util_num_text(lo, l, sizeof l),
                        util_num_text(hi, h, sizeof h), s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Store the value v of option id (written as opt) in the decentralized_opts
 * ctx; exit code. */
static int decentralized_option(void *ctx, int id, const char *opt, const char *v)
{
    decentralized_opts *o = ctx;

    switch (id) {
    case OPT_SEARCHER:
        o->sp.method = dtfm_method_from_name(v);
        if (o->sp.method < 0)
            return cmd_usage_error("decentralized", "option '--searcher' expects ga, "
                                   "sa, kl, random or exact, got '%s'", v);
        break;
    case OPT_CONVENTION:
        o->po.convention = dtfm_convention_from_name(v);
        if (o->po.convention < 0)
            return cmd_usage_error("decentralized", "option '--convention' expects "
                                   "paper or public-code, got '%s'", v);
        break;
    case OPT_SEED:
        if (decentralized_double(opt, v, 0, 4294967295.0, &o->seed) ||
            o->seed != (double)(unsigned long long)o->seed) {
            if (o->seed != (double)(unsigned long long)o->seed)
                return cmd_usage_error(NULL, "option '--seed' expects an integer in "
                                             "0..4294967295, got '%s'", v);
            return CMD_EXIT_USAGE;
        }
        break;
    case OPT_TIME_LIMIT:
        return cmd_parse_time_limit("decentralized", v, &o->time_limit);
    default: /* OPT_SECONDS */
        if (decentralized_double(opt, v, 0.001, 1e6, &o->sp.seconds))
            return CMD_EXIT_USAGE;
        o->seconds_set = 1;
    }
    return CMD_EXIT_OK;
}

/* Parse the command line into o and settle the search limits; exit code. */
static int decentralized_args(int argc, char **argv, decentralized_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--cluster", NULL, &o->cluster),
        CMD_STRING("--model", NULL, &o->model),
        CMD_INT("--evals", &o->evals, 1, INT_MAX),
        CMD_INT("--stall", &o->stall, 1, INT_MAX),
        CMD_INT("--pp", &o->po.d_pp, 1, DTFM_MAX_STAGES),
        CMD_SET("--compute", NULL, &o->po.compute, 1),
        CMD_CALL("--searcher", OPT_SEARCHER),
        CMD_CALL("--convention", OPT_CONVENTION),
        CMD_CALL("--seed", OPT_SEED),
        CMD_CALL("--seconds", OPT_SECONDS),
        CMD_CALL("--time-limit", OPT_TIME_LIMIT),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = decentralized_usage, .options = table,
                          .hint = "decentralized", .handle = decentralized_option,
                          .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    dtfm_options_init(&o->po);
    dtfm_search_params_init(&o->sp);
    o->sp.seconds = 60.0;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->cluster == NULL)
        return cmd_usage_error("decentralized", "%s", "missing required option "
                                                      "'--cluster'");
    if (o->time_limit > 0.0 && (!o->seconds_set || o->time_limit < o->sp.seconds))
        o->sp.seconds = o->time_limit; /* the smaller of the two limits */
    o->sp.seed = (uint64_t)o->seed;
    o->sp.max_evals = o->evals;
    o->sp.stall = o->stall > 0 ? o->stall : (o->sp.method == DTFM_SA ? 3 : 100);
    if (o->sp.method == DTFM_RANDOM && o->stall <= 0) {
        o->sp.stall = 0; /* the public code's baseline: 5000 samples */
        if (o->evals <= 0)
            o->sp.max_evals = 5000;
    }
    return CMD_EXIT_OK;
}

int cmd_decentralized(int argc, char **argv)
{
    decentralized_opts o;
    dtfm_input in;
    dtfm_meta meta;
    dtfm_search_result sr;
    dtfm_result res;
    fmt_model m;
    util_error err;
    char *doc = NULL, *table = NULL;
    int code = CMD_EXIT_OK, rc, progress;

    memset(&in, 0, sizeof in);
    memset(&meta, 0, sizeof meta);
    memset(&sr, 0, sizeof sr);
    memset(&res, 0, sizeof res);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    code = decentralized_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    /* --seconds bounds the whole command: loading counts, and a little is
     * kept for the final evaluation and the output */
    o.sp.budget_start_s = dtfm_clock_s();
    o.sp.reserve_s = 0.01 * o.sp.seconds;
    if (o.model) {
        if (fmt_load_model(o.model, &m, &err) != UTIL_OK) {
            code = cmd_report_error(&err);
            goto done;
        }
        o.po.model = &m;
    }
    if (dtfm_load(o.cluster, &o.po, &in, &err) == UTIL_OK) {
        cmd_warnings_flush(); /* before the search */
    } else {
        code = err.code == UTIL_EINVAL
                   ? cmd_usage_error(NULL, "option '--pp' with '%s': %s", o.cluster,
                                     err.msg)
                   : cmd_report_error(&err);
        goto done;
    }
    if (cmd_digest_file(o.cluster, meta.cluster_digest, &err) != UTIL_OK ||
        (o.model && cmd_digest_file(o.model, meta.model_digest, &err) != UTIL_OK)) {
        code = cmd_report_error(&err);
        goto done;
    }
    progress = !o.out.quiet && isatty(2);
    if (progress) {
        o.sp.progress = decentralized_progress;
        o.sp.progress_ctx = NULL;
    }
    rc = dtfm_search(&in.prob, &o.sp, &sr, &err);
    if (progress)
        fprintf(stderr, "\r%72s\r", "");
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT) {
        code = err.code != UTIL_EINVAL ? cmd_report_error(&err)
               : o.sp.method == DTFM_EXACT
                   ? cmd_usage_error(NULL, "option '--searcher exact' with '%s': %s",
                                     o.cluster, err.msg)
                   : cmd_usage_error(NULL, "%s", err.msg);
        goto done;
    }
    res = sr.result; /* the search's evaluation of its schedule */
    memset(&sr.result, 0, sizeof sr.result);
    meta.cluster_path = o.cluster;
    meta.model_path = o.model;
    meta.searcher = dtfm_method_name(o.sp.method);
    meta.seed = (unsigned long long)o.sp.seed;
    meta.seconds = o.sp.seconds;
    meta.max_evals = o.sp.max_evals;
    meta.search = &sr;
    if (o.out.verbose)
        fprintf(stderr, "planner: %s: %ld evaluations, %ld %s, %.3f s, best found "
                        "at %.3f s%s\n", meta.searcher, sr.evaluated, sr.generations,
                o.sp.method == DTFM_SA ? "steps" : "candidates", sr.elapsed_s,
                sr.best_at_s, sr.timed_out ? ", time limit hit" : "");
    doc = dtfm_to_json(&meta, &in, &res);
    if (doc == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    if (o.out.output && (code = cmd_write_file(o.out.output, doc)) != CMD_EXIT_OK)
        goto done;
    if (!o.out.quiet) {
        if (o.out.json) {
            fputs(doc, stdout);
            fputc('\n', stdout);
        } else {
            table = dtfm_to_table(&meta, &in, &res);
            if (table == NULL) {
                code = cmd_out_of_memory();
                goto done;
            }
            fputs(table, stdout);
            if (sr.timed_out)
                printf("time limit of %g s hit: the best schedule found so far\n",
                       o.sp.seconds);
            if (o.out.output)
                printf("plan written to '%s'\n", o.out.output);
        }
        code = cmd_flush_stdout();
    }
    if (code == CMD_EXIT_OK && sr.timed_out && o.time_limit > 0.0) {
        fprintf(stderr, "planner: note: time limit of %g s reached after %ld "
                        "evaluations: the schedule is the best found so far\n",
                o.sp.seconds, sr.evaluated);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    free(doc);
    free(table);
    dtfm_result_free(&res);
    dtfm_search_result_free(&sr);
    dtfm_input_free(&in);
    fmt_model_free(&m);
    return code;
}
