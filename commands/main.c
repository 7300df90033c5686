/* commands/main.c: the hetplan command line.  The only file that prints. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "plan.h"
#include "calibrate.h"
#include "decentral.h"
#include "whatif.h"
#include "replan.h"
#include "export.h"
#include "report.h"

enum exit_code {
    EXIT_OK = 0,        /* plan or evaluation written */
    EXIT_INTERNAL = 1,  /* out of memory or internal error */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_INPUT = 3,     /* an input file is missing or invalid */
    EXIT_NOPLAN = 4,    /* no strategy fits the cluster */
    EXIT_OUTPUT = 5     /* the output file cannot be written */
};

static const char usage_text[] =
    "usage: planner [plan] --cluster FILE --model FILE [options]\n"
    "       planner evaluate --cluster FILE --model FILE --strategies FILE [options]\n"
    "       planner calibrate --cluster FILE --model FILE --trials FILE [options]\n"
    "       planner decentralized --cluster FILE [options]\n"
    "       planner whatif --plan FILE --slow RANK:FACTOR ... [options]\n"
    "       planner replan --plan FILE --frozen K [options]\n"
    "       planner export --plan FILE --to megatron|deepspeed|torchrun|hostfile [options]\n"
    "       planner report --plan FILE --output FILE.svg|FILE.html [options]\n"
    "       planner COMMAND --help   (options of one command)\n"
    "       planner --help | --version\n"
    "\n"
    "Finds tensor/pipeline/data-parallel strategies for training a model on a\n"
    "heterogeneous GPU cluster and predicts their iteration time and memory.\n"
    "\n"
    "inputs:\n"
    "  --cluster FILE         cluster description (docs/inputs.md)\n"
    "  --model FILE           model description: layer list or transformer shorthand\n"
    "  --profile FILE         measured per-layer times (hetplan-profile/1)\n"
    "  --amp-profile FILE[:KEY]  AMP's profiles.json, converted at load (KEY: gpt2)\n"
    "  --strategies FILE      strategies to score (evaluate only)\n"
    "options:\n"
    "  --global-batch N       global batch size (default: the model's training.global_batch)\n"
    "  --top-k K              strategies kept in the plan (default 5)\n"
    "  --method amp|megatron  search: AMP Algorithm 1 (default) or the Megatron heuristic\n"
    "  --placement RULE       all (default), megatron or fastest-first\n"
    "  --max-tp N             largest tensor-parallel degree tried\n"
    "  --max-mbs N            largest micro-batch size tried\n"
    "  --schedule 1f1b|gpipe  pipeline schedule (default 1f1b)\n"
    "  --fidelity analytic|simulate  iteration time from AMP's formula (default)\n"
    "                         or the schedule simulator (plan: re-ranks the best)\n"
    "  --zero N               ZeRO stage 0-3 for the memory model (default 0)\n"
    "  --recompute            assume activation recomputation\n"
    "  --precision fp16|bf16|fp32  training precision (default: the model's\n"
    "                         training.precision, else fp16 mixed precision)\n"
    "  --param NAME=VALUE     override a cost-model constant (repeatable; see\n"
    "                         docs/cost-model.md), e.g. --param net_eff=0.8\n"
    "  --output FILE          write the plan JSON to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print search statistics on stderr\n"
    "  --help, --version\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid input file,\n"
    "  4 no strategy fits, 5 cannot write the output\n";

typedef struct options {
    const char *command;
    const char *cluster, *model, *profile, *amp_profile, *strategies, *output;
    int global_batch, top_k, max_tp, max_mbs, zero, recompute, schedule;
    int method, placements, json, quiet, verbose, schedule_set;
    int fidelity;           /* enum cost_fidelity, -1 = default */
    int precision;          /* enum fmt_precision, -1 = the model's (issue 3) */
    int nparams;
    const char *params[64];
} options;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int usage_error(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "planner: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'planner --help'\n");
    return EXIT_USAGE;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "planner: option '%s' expects an integer in %d..%d, got '%s'\n"
                        "try 'planner --help'\n", opt, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Keep a --param NAME=VALUE argument (at most 64); 0 ok, else -1 after
 * the usage message. */
static int add_param(const char **params, int *n, const char *v)
{
    if (*n >= 64) {
        usage_error("%s", "too many '--param' options");
        return -1;
    }
    if (strchr(v, '=') == NULL) {
        usage_error("option '--param' expects NAME=VALUE, got '%s'", v);
        return -1;
    }
    params[(*n)++] = v;
    return 0;
}

/* NAME and VALUE of a kept --param; 0 when VALUE is not a number. */
static int split_param(const char *p, char *name, size_t n, double *v)
{
    const char *eq = strchr(p, '=');
    char *end;

    *v = strtod(eq + 1, &end);
    snprintf(name, n, "%.*s", (int)(eq - p), p);
    return end != eq + 1 && *end == '\0';
}

/* --amp-profile FILE[:KEY]: FILE into path; returns KEY (default "gpt2",
 * points into arg). */
static const char *amp_profile_split(const char *arg, char *path, size_t n)
{
    const char *key = "gpt2", *colon = strrchr(arg, ':');

    snprintf(path, n, "%s", arg);
    if (colon && colon[1] != '\0' && strchr(colon, '/') == NULL) {
        path[colon - arg] = '\0';
        key = colon + 1;
    }
    return key;
}

/* Options that take a value. */
static int takes_value(const char *a)
{
    static const char *const names[] = {
        "--cluster", "--model", "--profile", "--amp-profile", "--strategies",
        "--output", "-o", "--global-batch", "--top-k", "--max-tp", "--max-mbs",
        "--zero", "--method", "--placement", "--schedule", "--format", "--param",
        "--fidelity", "--precision"};
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(a, names[i]) == 0)
            return 1;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    int i = 1;

    memset(o, 0, sizeof *o);
    o->command = "plan";
    o->top_k = 5;
    o->placements = -1;
    o->fidelity = -1;
    o->precision = -1;
    if (argc > 1 && argv[1][0] != '-') {
        if (strcmp(argv[1], "plan") != 0 && strcmp(argv[1], "evaluate") != 0)
            return usage_error("unknown command '%s'", argv[1]);
        o->command = argv[1];
        i = 2;
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(EXIT_OK);
        } else if (strcmp(a, "--version") == 0) {
            printf("planner (hetplan) %s\n", HETPLAN_VERSION);
            exit(EXIT_OK);
        } else if (strcmp(a, "--recompute") == 0) {
            o->recompute = 1;
            takes = 0;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
            takes = 0;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            o->verbose = 1;
            takes = 0;
        }
        if (!takes)
            continue;
        if (a[0] != '-')
            return usage_error("unexpected argument '%s'", a);
        if (!takes_value(a))
            return usage_error("unknown option '%s'", a);
        if (v == NULL)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--cluster") == 0)
            o->cluster = v;
        else if (strcmp(a, "--model") == 0)
            o->model = v;
        else if (strcmp(a, "--profile") == 0)
            o->profile = v;
        else if (strcmp(a, "--amp-profile") == 0)
            o->amp_profile = v;
        else if (strcmp(a, "--param") == 0) {
            if (add_param(o->params, &o->nparams, v))
                return EXIT_USAGE;
        } else if (strcmp(a, "--strategies") == 0)
            o->strategies = v;
        else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            o->output = v;
        else if (strcmp(a, "--global-batch") == 0) {
            if (parse_int(a, v, 1, INT_MAX / 2, &o->global_batch))
                return EXIT_USAGE;
        } else if (strcmp(a, "--top-k") == 0) {
            if (parse_int(a, v, 1, 100000, &o->top_k))
                return EXIT_USAGE;
        } else if (strcmp(a, "--max-tp") == 0) {
            if (parse_int(a, v, 1, 1 << 20, &o->max_tp))
                return EXIT_USAGE;
        } else if (strcmp(a, "--max-mbs") == 0) {
            if (parse_int(a, v, 1, INT_MAX / 2, &o->max_mbs))
                return EXIT_USAGE;
        } else if (strcmp(a, "--zero") == 0) {
            if (parse_int(a, v, 0, 3, &o->zero))
                return EXIT_USAGE;
        } else if (strcmp(a, "--precision") == 0) { /* issue 3, memory model */
            o->precision = fmt_precision_from_name(v);
            if (o->precision < 0)
                return usage_error("option '--precision' expects fp16, bf16 or "
                                   "fp32, got '%s'", v);
        } else if (strcmp(a, "--method") == 0) {
            if (strcmp(v, "amp") == 0)
                o->method = SEARCH_METHOD_AMP;
            else if (strcmp(v, "megatron") == 0)
                o->method = SEARCH_METHOD_MEGATRON;
            else
                return usage_error("option '--method' expects amp or megatron, got '%s'", v);
        } else if (strcmp(a, "--placement") == 0) {
            int r = search_placement_from_name(v);
            if (strcmp(v, "all") == 0)
                o->placements = -1;
            else if (r >= 0)
                o->placements = 1 << r;
            else
                return usage_error("option '--placement' expects all, megatron or "
                                   "fastest-first, got '%s'", v);
        } else if (strcmp(a, "--schedule") == 0) {
            o->schedule_set = 1;
            if (strcmp(v, "1f1b") == 0)
                o->schedule = FMT_SCHED_1F1B;
            else if (strcmp(v, "gpipe") == 0)
                o->schedule = FMT_SCHED_GPIPE;
            else
                return usage_error("option '--schedule' expects 1f1b or gpipe, got '%s'", v);
        } else if (strcmp(a, "--fidelity") == 0) {
            o->fidelity = cost_fidelity_from_name(v);
            if (o->fidelity < 0)
                return usage_error("option '--fidelity' expects analytic or simulate, "
                                   "got '%s'", v);
        } else if (strcmp(a, "--format") == 0) {
            if (strcmp(v, "json") == 0)
                o->json = 1;
            else if (strcmp(v, "table") == 0)
                o->json = 0;
            else
                return usage_error("option '--format' expects table or json, got '%s'", v);
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (o->cluster == NULL)
        return usage_error("%s", "missing required option '--cluster'");
    if (o->model == NULL)
        return usage_error("%s", "missing required option '--model'");
    if (o->profile && o->amp_profile)
        return usage_error("%s", "give either '--profile' or '--amp-profile', not both");
    if (strcmp(o->command, "evaluate") == 0 && o->strategies == NULL)
        return usage_error("%s", "evaluate needs '--strategies FILE'");
    if (strcmp(o->command, "plan") == 0 && o->strategies != NULL)
        return usage_error("%s", "'--strategies' belongs to 'planner evaluate'");
    return EXIT_OK;
}

static int report(const util_error *err)
{
    char buf[1024];

    util_error_format(err, buf, sizeof buf);
    fprintf(stderr, "planner: %s\n", buf);
    switch (err->code) {
    case UTIL_ENOMEM:
    case UTIL_EINTERNAL:
        return EXIT_INTERNAL;
    case UTIL_EINFEASIBLE:
        return EXIT_NOPLAN;
    default:
        return EXIT_INPUT;
    }
}

static int digest_file(const char *path, char out[65], util_error *err)
{
    char *text = NULL;
    int rc = util_read_file(path, &text, err);

    if (rc == UTIL_OK)
        util_sha256_hex(text, strlen(text), out);
    free(text);
    return rc;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Print and/or write the plan document; returns an exit code. */
static int emit(const options *o, const plan_meta *meta, const fmt_cluster *c,
                const fmt_model *m, const cost_params *cp,
                const fmt_strategy *s, const cost_result *r, int n)
{
    char *json = plan_to_json(meta, c, m, cp, s, r, n);
    char *table = NULL;
    util_error err;
    int code = EXIT_OK;

    memset(&err, 0, sizeof err);
    if (json == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        return EXIT_INTERNAL;
    }
    if (o->output && util_write_file_atomic(o->output, json, &err) != UTIL_OK) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: %s\n", buf);
        code = EXIT_OUTPUT;
        goto done;
    }
    if (o->quiet)
        goto done;
    if (o->json) {
        fputs(json, stdout);
        fputc('\n', stdout);
    } else {
        table = plan_to_table(c, m, s, r, n, meta->global_batch);
        if (table == NULL) {
            fprintf(stderr, "planner: out of memory\n");
            code = EXIT_INTERNAL;
            goto done;
        }
        fputs(table, stdout);
        if (o->output)
            printf("plan written to '%s'\n", o->output);
    }
done:
    if (code == EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "planner: cannot write to standard output: %s\n",
                strerror(errno));
        code = EXIT_OUTPUT;
    }
    free(json);
    free(table);
    return code;
}

/* Subcommands with their own options; each is defined in its section at
 * the end of this file and returns an exit code.  argv[0] is its name. */
static int cmd_calibrate(int argc, char **argv);
static int cmd_decentralized(int argc, char **argv);
static int cmd_whatif(int argc, char **argv);
static int cmd_replan(int argc, char **argv);
static int cmd_export(int argc, char **argv);
static int cmd_report(int argc, char **argv);
/* Progress line of long searches on a terminal (export section, issue 7). */
static void progress_draw(void *ctx, const search_progress *p);
static void progress_clear(int *drawn);

static const struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
} subcommands[] = {
    {"calibrate", cmd_calibrate}, {"decentralized", cmd_decentralized},
    {"whatif", cmd_whatif},       {"replan", cmd_replan},
    {"export", cmd_export},       {"report", cmd_report},
};

int main(int argc, char **argv)
{
    options o;
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    plan_meta meta;
    cost_timeline tl; /* simulated iteration of the first strategy */
    fmt_strategy *strats = NULL, *ss = NULL;
    cost_result *rs = NULL;
    int nstrat = 0, i, code, rc = UTIL_OK, have_prof = 0;
    char prof_path[4096] = "";
    double t0 = now_s();
    int progress_drawn = 0;

    memset(&tl, 0, sizeof tl);
    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&res, 0, sizeof res);
    memset(&err, 0, sizeof err);
    memset(&meta, 0, sizeof meta);
    if (argc > 1) {
        size_t k;
        for (k = 0; k < sizeof subcommands / sizeof subcommands[0]; k++)
            if (strcmp(argv[1], subcommands[k].name) == 0)
                return subcommands[k].run(argc - 1, argv + 1);
    }
    code = parse_args(argc, argv, &o);
    if (code != EXIT_OK)
        return code;

    if ((rc = fmt_load_cluster(o.cluster, &c, &err)) != UTIL_OK ||
        (rc = fmt_load_model(o.model, &m, &err)) != UTIL_OK ||
        (o.precision >= 0 && /* --precision overrides training.precision */
         (rc = fmt_model_set_precision(&m, o.precision, &err)) != UTIL_OK)) {
        code = report(&err);
        goto done;
    }
    if (o.profile) {
        snprintf(prof_path, sizeof prof_path, "%s", o.profile);
        rc = fmt_load_profile(o.profile, &m, &prof, &err);
        have_prof = 1;
    } else if (o.amp_profile) {
        const char *key = amp_profile_split(o.amp_profile, prof_path,
                                            sizeof prof_path);
        meta.profile_amp_key = key;
        rc = fmt_profile_from_amp(prof_path, key, &m, &prof, &err);
        have_prof = 1;
    }
    if (rc != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (o.global_batch == 0)
        o.global_batch = m.global_batch;
    if (o.global_batch == 0) {
        fprintf(stderr, "planner: no global batch: give '--global-batch N' or "
                        "training.global_batch in '%s'\n", o.model);
        code = EXIT_USAGE;
        goto done;
    }
    if (digest_file(o.cluster, meta.cluster_digest, &err) != UTIL_OK ||
        digest_file(o.model, meta.model_digest, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    meta.cluster_path = o.cluster;
    meta.model_path = o.model;
    meta.profile_path = have_prof ? prof_path : NULL;
    if (have_prof && digest_file(prof_path, meta.profile_digest, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    meta.global_batch = o.global_batch;

    cost_params_init(&cp);
    cp.calib = have_prof ? prof.calib : NULL; /* a calibrated profile (issue 3) */
    cp.schedule = o.schedule;
    cp.zero_stage = o.zero;
    cp.recompute = o.recompute;
    if (o.fidelity >= 0)
        cp.fidelity = o.fidelity;
    for (i = 0; i < o.nparams; i++) {
        char name[64];
        double v;
        if (!split_param(o.params[i], name, sizeof name, &v)) {
            fprintf(stderr, "planner: option '--param %s' expects a number after '='\n",
                    o.params[i]);
            code = EXIT_USAGE;
            goto done;
        }
        if (cost_params_set(&cp, name, v, &err) != UTIL_OK) {
            char buf[512];
            util_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "planner: option '--param': %s\n", buf);
            code = EXIT_USAGE;
            goto done;
        }
    }

    if (strcmp(o.command, "evaluate") == 0) {
        rc = fmt_load_strategies(o.strategies, &c, &m, o.global_batch, &strats,
                                  &nstrat, &err);
        if (rc != UTIL_OK) {
            code = report(&err);
            goto done;
        }
        rs = calloc((size_t)(nstrat > 0 ? nstrat : 1), sizeof *rs);
        if (rs == NULL) {
            fprintf(stderr, "planner: out of memory\n");
            code = EXIT_INTERNAL;
            goto done;
        }
        for (i = 0; i < nstrat; i++) {
            if (o.schedule_set) /* the command line overrides the file */
                strats[i].schedule = cp.schedule;
            if (cost_evaluate(&c, &m, have_prof ? &prof : NULL, &cp, &strats[i],
                              &rs[i], &err) != UTIL_OK) {
                code = report(&err);
                goto done;
            }
        }
        meta.method = "evaluate";
        meta.evaluated = nstrat;
        meta.elapsed_s = now_s() - t0;
        if (cp.fidelity == COST_FIDELITY_SIMULATE && nstrat > 0 &&
            cost_simulate(&c, &m, have_prof ? &prof : NULL, &cp, &strats[0],
                          cp.overlap_dp, &tl, &err) == UTIL_OK)
            meta.timeline = &tl; /* optional: none when it cannot be made */
        code = emit(&o, &meta, &c, &m, &cp, strats, rs, nstrat);
        goto done;
    }

    search_params_init(&sp);
    sp.method = o.method;
    sp.global_batch = o.global_batch;
    sp.top_k = o.top_k;
    sp.max_tp = o.max_tp;
    sp.max_mbs = o.max_mbs;
    if (o.placements >= 0)
        sp.placements = (unsigned)o.placements;
    if (!o.quiet && isatty(STDERR_FILENO)) { /* progress on a terminal only */
        sp.progress = progress_draw;
        sp.progress_ctx = &progress_drawn;
    }
    rc = search_plan(&c, &m, have_prof ? &prof : NULL, &cp, &sp, &res, &err);
    progress_clear(&progress_drawn);
    if (rc != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    ss = calloc((size_t)res.n, sizeof *ss);
    rs = calloc((size_t)res.n, sizeof *rs);
    if (ss == NULL || rs == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    for (i = 0; i < res.n; i++) {
        ss[i] = res.cands[i].s; /* shallow views; res keeps ownership */
        rs[i] = res.cands[i].r;
    }
    meta.method = o.method == SEARCH_METHOD_MEGATRON ? "megatron" : "amp";
    meta.evaluated = res.evaluated;
    meta.rejected_memory = res.rejected_memory;
    meta.elapsed_s = now_s() - t0;
    if (o.verbose)
        fprintf(stderr, "planner: %ld candidates scored, %ld rejected for memory, "
                        "%ld ruled out, %.3f s\n", res.evaluated,
                res.rejected_memory, res.rejected_other, meta.elapsed_s);
    if (cp.fidelity == COST_FIDELITY_SIMULATE && res.n > 0 &&
        cost_simulate(&c, &m, have_prof ? &prof : NULL, &cp, &ss[0],
                      cp.overlap_dp, &tl, &err) == UTIL_OK)
        meta.timeline = &tl; /* optional: none when it cannot be made */
    code = emit(&o, &meta, &c, &m, &cp, ss, rs, res.n);
    free(ss);
    free(rs);
    rs = NULL;
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
    cost_timeline_free(&tl);
    search_result_free(&res);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return code;
}

/* ==== planner calibrate (issue 3, calibration) ==== section begin */
#include <cjson/cJSON.h> /* the --format json report */

static const char calibrate_usage[] =
    "usage: planner calibrate --cluster FILE --model FILE\n"
    "                         (--profile FILE | --amp-profile FILE[:KEY])\n"
    "                         (--trials FILE | --amp-trials FILE) [options]\n"
    "\n"
    "Fits the cost model's calibration constants (per device type compute\n"
    "efficiency and its curve over micro-batch size, bandwidth fraction per\n"
    "link class, per-message latency, fixed cost per micro-batch and layer\n"
    "under tensor parallelism, framework overhead per iteration) to measured\n"
    "iteration times by least absolute deviation (a linear program, GLPK),\n"
    "prints the fit with its in-sample and leave-one-out errors, and writes a\n"
    "calibrated profile that 'planner --profile FILE' uses (docs/calibration.md).\n"
    "\n"
    "inputs:\n"
    "  --cluster FILE         cluster the trials ran on\n"
    "  --model FILE           model the trials trained\n"
    "  --profile FILE         per-layer times (hetplan-profile/1; a calibration in it is replaced)\n"
    "  --amp-profile FILE[:KEY]  AMP's profiles.json (KEY: gpt2)\n"
    "  --trials FILE          strategies as for 'planner evaluate', each with\n"
    "                         \"measured_s\" (null or absent: the run failed)\n"
    "  --amp-trials FILE      one of AMP's experiment logs (homogeneous.json, het_cluster.json)\n"
    "options:\n"
    "  --output FILE          write the calibrated profile (atomically)\n"
    "  --global-batch N       global batch of the trials (default: the file's, else the model's)\n"
    "  --param NAME=VALUE     cost-model constant kept fixed during the fit (repeatable)\n"
    "  --reg X                pull towards the neutral values (default 0.01; 0 = none)\n"
    "  --no-loo               skip the leave-one-out scores (one fit per trial)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print each trial's predictions on stderr\n"
    "  --help\n";

typedef struct calibrate_opts {
    const char *cluster, *model, *profile, *amp_profile, *trials, *amp_trials;
    const char *output;
    int global_batch, json, quiet, verbose, loo, nparams;
    double reg;
    const char *params[64];
} calibrate_opts;

static int calibrate_args(int argc, char **argv, calibrate_opts *o)
{
    int i;

    memset(o, 0, sizeof *o);
    o->loo = 1;
    o->reg = 0.01;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(calibrate_usage, stdout);
            exit(EXIT_OK);
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
            continue;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            o->verbose = 1;
            continue;
        } else if (strcmp(a, "--no-loo") == 0) {
            o->loo = 0;
            continue;
        }
        if (a[0] != '-')
            return usage_error("unexpected argument '%s'", a);
        if (v == NULL)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--cluster") == 0)
            o->cluster = v;
        else if (strcmp(a, "--model") == 0)
            o->model = v;
        else if (strcmp(a, "--profile") == 0)
            o->profile = v;
        else if (strcmp(a, "--amp-profile") == 0)
            o->amp_profile = v;
        else if (strcmp(a, "--trials") == 0)
            o->trials = v;
        else if (strcmp(a, "--amp-trials") == 0)
            o->amp_trials = v;
        else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            o->output = v;
        else if (strcmp(a, "--global-batch") == 0) {
            if (parse_int(a, v, 1, INT_MAX / 2, &o->global_batch))
                return EXIT_USAGE;
        } else if (strcmp(a, "--param") == 0) {
            if (add_param(o->params, &o->nparams, v))
                return EXIT_USAGE;
        } else if (strcmp(a, "--reg") == 0) {
            char *end;
            o->reg = strtod(v, &end);
            if (end == v || *end != '\0' || !(o->reg >= 0.0 && o->reg <= 100.0))
                return usage_error("option '--reg' expects a number in 0..100, got '%s'", v);
        } else if (strcmp(a, "--format") == 0) {
            if (strcmp(v, "json") == 0)
                o->json = 1;
            else if (strcmp(v, "table") == 0)
                o->json = 0;
            else
                return usage_error("option '--format' expects table or json, got '%s'", v);
        } else {
            return usage_error("unknown option '%s' (see 'planner calibrate --help')", a);
        }
    }
    if (o->cluster == NULL)
        return usage_error("%s", "missing required option '--cluster'");
    if (o->model == NULL)
        return usage_error("%s", "missing required option '--model'");
    if ((o->profile == NULL) == (o->amp_profile == NULL))
        return usage_error("%s", "calibrate needs one of '--profile FILE' or "
                                 "'--amp-profile FILE[:KEY]'");
    if ((o->trials == NULL) == (o->amp_trials == NULL))
        return usage_error("%s", "calibrate needs one of '--trials FILE' or "
                                 "'--amp-trials FILE'");
    return EXIT_OK;
}

static void calibrate_score_json(cJSON *o, const char *name, const calib_ranking *rk)
{
    cJSON *x = cJSON_AddObjectToObject(o, name);

    cJSON_AddNumberToObject(x, "spearman", rk->spearman);
    cJSON_AddNumberToObject(x, "kendall", rk->kendall);
    if (rk->top1_regret > 0.0)
        cJSON_AddNumberToObject(x, "top1_regret", rk->top1_regret);
    else
        cJSON_AddNullToObject(x, "top1_regret");
    cJSON_AddNumberToObject(x, "mape", rk->mape);
}

static void calibrate_score_row(const char *name, const calib_ranking *rk)
{
    char regret[32];

    if (rk->top1_regret > 0.0)
        snprintf(regret, sizeof regret, "%.3f", rk->top1_regret);
    else
        snprintf(regret, sizeof regret, "failed");
    printf("%-16s %9.3f %9.3f %12s %8.1f%%\n", name, rk->spearman, rk->kendall,
           regret, 100.0 * rk->mape);
}

static int cmd_calibrate(int argc, char **argv)
{
    calibrate_opts o;
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params cp;
    util_error err;
    fmt_trial_set ts;
    calib_trial *t0 = NULL, *t1 = NULL, *t2 = NULL;
    calib_ranking r0, r1, r2;
    calib_params sp;
    calib_fit fit;
    cJSON *doc = NULL;
    char *text = NULL, *json = NULL, path[4096];
    int code, i, failed = 0;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&err, 0, sizeof err);
    memset(&ts, 0, sizeof ts);
    memset(&r2, 0, sizeof r2);
    code = calibrate_args(argc, argv, &o);
    if (code != EXIT_OK)
        return code;
    if (fmt_load_cluster(o.cluster, &c, &err) != UTIL_OK ||
        fmt_load_model(o.model, &m, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (o.profile) {
        if (fmt_load_profile(o.profile, &m, &prof, &err) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
        free(prof.calib); /* refitted from neutral */
        prof.calib = NULL;
    } else {
        const char *key = amp_profile_split(o.amp_profile, path, sizeof path);
        if (fmt_profile_from_amp(path, key, &m, &prof, &err) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
    }
    if (fmt_load_trials(o.trials ? o.trials : o.amp_trials, o.amp_trials != NULL, &c,
                         &m, o.global_batch, &ts, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    cost_params_init(&cp);
    for (i = 0; i < o.nparams; i++) {
        char name[64];
        double v;
        if (!split_param(o.params[i], name, sizeof name, &v) ||
            cost_params_set(&cp, name, v, &err) != UTIL_OK) {
            fprintf(stderr, "planner: option '--param %s' expects a known parameter "
                            "and a number in its range\n", o.params[i]);
            code = EXIT_USAGE;
            goto done;
        }
    }
    calib_params_init(&sp);
    sp.reg = o.reg;
    t0 = calloc((size_t)ts.n, sizeof *t0);
    t1 = calloc((size_t)ts.n, sizeof *t1);
    t2 = calloc((size_t)ts.n, sizeof *t2);
    if (t0 == NULL || t1 == NULL || t2 == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    for (i = 0; i < ts.n; i++)
        failed += ts.measured_s[i] <= 0.0;
    if (calib_predict_trials(&c, &m, &prof, &cp, &ts, t0, &err) != UTIL_OK ||
        calib_run(&c, &m, &prof, &cp, ts.s, ts.measured_s, ts.n, &sp, &fit,
                         &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    cp.calib = &fit.cal;
    if (calib_predict_trials(&c, &m, &prof, &cp, &ts, t1, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    cp.calib = NULL;
    if (o.loo && calib_loo(&c, &m, &prof, &cp, &ts, &sp, t2, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    calib_score_trials(t0, ts.n, &r0);
    calib_score_trials(t1, ts.n, &r1);
    if (o.loo)
        calib_score_trials(t2, ts.n, &r2);
    if (o.output) {
        json = calib_profile_json(&m, &prof, &fit, o.loo ? r2.mape : -1.0,
                                            r2.spearman);
        if (json == NULL) {
            fprintf(stderr, "planner: out of memory\n");
            code = EXIT_INTERNAL;
            goto done;
        }
        if (util_write_file_atomic(o.output, json, &err) != UTIL_OK) {
            char buf[1024];
            util_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "planner: %s\n", buf);
            code = EXIT_OUTPUT;
            goto done;
        }
    }
    if (o.verbose)
        for (i = 0; i < ts.n; i++)
            fprintf(stderr, "trial %d: measured %s%.3f s, uncalibrated %.3f s, fitted "
                            "%.3f s%s%.3f s\n", i, ts.measured_s[i] > 0.0 ? "" : "(failed) ",
                    ts.measured_s[i] > 0.0 ? ts.measured_s[i] : 0.0, t0[i].predicted_s,
                    t1[i].predicted_s, o.loo ? ", left out " : "",
                    o.loo ? t2[i].predicted_s : 0.0);
    if (o.quiet)
        goto done;
    if (o.json) {
        cJSON *jp, *sc, *arr;
        doc = cJSON_CreateObject();
        if (doc == NULL)
            goto nomem;
        cJSON_AddNumberToObject(doc, "trials", ts.n);
        cJSON_AddNumberToObject(doc, "measured", fit.nfit);
        cJSON_AddNumberToObject(doc, "free_parameters", fit.nfree);
        cJSON_AddNumberToObject(doc, "rounds", fit.rounds);
        cJSON_AddNumberToObject(doc, "reg", sp.reg);
        jp = cJSON_AddObjectToObject(doc, "parameters");
        for (i = 0; jp != NULL && i < fit.cal.ntypes; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.compute_scale", fit.cal.type[i]);
            cJSON_AddNumberToObject(jp, k, fit.cal.compute_scale[i]);
            snprintf(k, sizeof k, "%s.mbs_half", fit.cal.type[i]);
            cJSON_AddNumberToObject(jp, k, fit.cal.mbs_half[i]);
        }
        for (i = 0; jp != NULL && i < FMT_LINK_NCLASSES; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.bw_frac", fmt_link_class_name(i));
            cp.calib = &fit.cal;
            cJSON_AddNumberToObject(jp, k, cost_calibration_eff(&cp, i));
            cp.calib = NULL;
        }
        cJSON_AddNumberToObject(jp, "msg_latency_us", fit.cal.msg_latency * 1e6);
        cJSON_AddNumberToObject(jp, "tp_fixed_ms", fit.cal.tp_fixed * 1e3);
        cJSON_AddNumberToObject(jp, "iter_overhead_ms", fit.cal.iter_overhead * 1e3);
        sc = cJSON_AddObjectToObject(doc, "scores");
        calibrate_score_json(sc, "uncalibrated", &r0);
        calibrate_score_json(sc, "in_sample", &r1);
        if (o.loo)
            calibrate_score_json(sc, "loo", &r2);
        arr = cJSON_AddArrayToObject(doc, "predictions");
        for (i = 0; arr != NULL && i < ts.n; i++) {
            cJSON *x = cJSON_CreateObject();
            if (x == NULL || !cJSON_AddItemToArray(arr, x))
                goto nomem;
            cJSON_AddNumberToObject(x, "index", i);
            if (ts.measured_s[i] > 0.0)
                cJSON_AddNumberToObject(x, "measured_s", ts.measured_s[i]);
            else
                cJSON_AddNullToObject(x, "measured_s");
            cJSON_AddNumberToObject(x, "uncalibrated_s", t0[i].predicted_s);
            cJSON_AddNumberToObject(x, "fitted_s", t1[i].predicted_s);
            if (o.loo)
                cJSON_AddNumberToObject(x, "loo_s", t2[i].predicted_s);
        }
        if (o.output)
            cJSON_AddStringToObject(doc, "output", o.output);
        text = cJSON_Print(doc);
        if (text == NULL)
            goto nomem;
        puts(text);
    } else {
        printf("calibration fit: %d measured trials (%d failed runs left out), %d "
               "constants free, %d LP rounds, reg %g\n\n", fit.nfit, failed, fit.nfree,
               fit.rounds, sp.reg);
        printf("%-28s %12s\n", "parameter", "value");
        for (i = 0; i < fit.cal.ntypes; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.compute_scale", fit.cal.type[i]);
            printf("%-28s %12.4f\n", k, fit.cal.compute_scale[i]);
            snprintf(k, sizeof k, "%s.mbs_half", fit.cal.type[i]);
            printf("%-28s %12.4f\n", k, fit.cal.mbs_half[i]);
        }
        cp.calib = &fit.cal;
        for (i = 0; i < FMT_LINK_NCLASSES; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.bw_frac", fmt_link_class_name(i));
            printf("%-28s %12.4f\n", k, cost_calibration_eff(&cp, i));
        }
        cp.calib = NULL;
        printf("%-28s %12.1f\n", "msg_latency_us", fit.cal.msg_latency * 1e6);
        printf("%-28s %12.4f\n", "tp_fixed_ms", fit.cal.tp_fixed * 1e3);
        printf("%-28s %12.1f\n\n", "iter_overhead_ms", fit.cal.iter_overhead * 1e3);
        printf("%-16s %9s %9s %12s %9s\n", "scores", "spearman", "kendall-b",
               "top1-regret", "MAPE");
        calibrate_score_row("uncalibrated", &r0);
        calibrate_score_row("in-sample", &r1);
        if (o.loo)
            calibrate_score_row("leave-one-out", &r2);
        if (o.output)
            printf("\ncalibrated profile written to '%s'\n", o.output);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "planner: cannot write to standard output: %s\n", strerror(errno));
        code = EXIT_OUTPUT;
    }
    goto done;
nomem:
    fprintf(stderr, "planner: out of memory\n");
    code = EXIT_INTERNAL;
done:
    cJSON_Delete(doc);
    free(text);
    free(json);
    free(t0);
    free(t1);
    free(t2);
    fmt_trial_set_free(&ts);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return code;
}
/* ==== planner calibrate ==== section end */

/* ==== planner decentralized (issue 4, DT-FM) ==== section begin */
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
    "  --searcher NAME        ga (default), sa, kl, random or exact (<= 16 devices)\n"
    "  --seed N               random seed (default 0)\n"
    "  --seconds S            wall-time limit; when hit, the best so far is kept\n"
    "                         (default 60)\n"
    "  --evals N              limit on cost evaluations (reproducible on any machine)\n"
    "  --stall N              stop after N offspring (sa: cycles, random: samples)\n"
    "                         without a new best (default 100 for ga/kl, 3 for sa;\n"
    "                         random draws 5000 samples)\n"
    "  --pp N                 pipeline stages d_pp (default: the file's, else 8)\n"
    "  --convention NAME      paper (default: c_pp, c_dp from the model) or\n"
    "                         public-code (the public scheduler's constants)\n"
    "  --compute              add per-stage compute time of each device's GPU type\n"
    "                         (beyond the paper)\n"
    "  --output FILE          write the plan JSON to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print search statistics on stderr\n"
    "  --help\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid input file,\n"
    "  5 cannot write the output\n";

static void decentralized_progress(void *ctx, const search_progress *p)
{
    (void)ctx;
    fprintf(stderr, "\rplanner: %s %.1f s, %ld evaluations, best %.4f s   ",
            p->phase, p->elapsed_s, p->evaluated, p->best_s);
    fflush(stderr);
}

static int decentralized_double(const char *opt, const char *s, double lo,
                                double hi, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "planner: option '%s' expects a number in %g..%g, got '%s'\n"
                        "try 'planner decentralized --help'\n", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int cmd_decentralized(int argc, char **argv)
{
    const char *cluster = NULL, *model_path = NULL, *output = NULL;
    int json = 0, quiet = 0, verbose = 0, i, code = EXIT_OK, rc, evals = 0;
    int stall = 0, progress = 0;
    dtfm_options po;
    dtfm_input in;
    dtfm_meta meta;
    dtfm_search_params sp;
    dtfm_search_result sr;
    dtfm_result res;
    fmt_model m;
    util_error err;
    char *doc = NULL, *table = NULL;
    double seed = 0.0;

    dtfm_options_init(&po);
    dtfm_search_params_init(&sp);
    sp.seconds = 60.0;
    memset(&in, 0, sizeof in);
    memset(&meta, 0, sizeof meta);
    memset(&sr, 0, sizeof sr);
    memset(&res, 0, sizeof res);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(decentralized_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            quiet = 1;
            continue;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            verbose = 1;
            continue;
        } else if (strcmp(a, "--compute") == 0) {
            po.compute = 1;
            continue;
        }
        if (strcmp(a, "--cluster") != 0 && strcmp(a, "--model") != 0 &&
            strcmp(a, "--searcher") != 0 && strcmp(a, "--seed") != 0 &&
            strcmp(a, "--seconds") != 0 && strcmp(a, "--evals") != 0 &&
            strcmp(a, "--stall") != 0 && strcmp(a, "--pp") != 0 &&
            strcmp(a, "--convention") != 0 && strcmp(a, "--output") != 0 &&
            strcmp(a, "-o") != 0 && strcmp(a, "--format") != 0) {
            fprintf(stderr, "planner: %s '%s'\ntry 'planner decentralized --help'\n",
                    a[0] == '-' ? "unknown option" : "unexpected argument", a);
            return EXIT_USAGE;
        }
        if (v == NULL) {
            fprintf(stderr, "planner: option '%s' needs a value\n"
                            "try 'planner decentralized --help'\n", a);
            return EXIT_USAGE;
        }
        i++;
        if (strcmp(a, "--cluster") == 0)
            cluster = v;
        else if (strcmp(a, "--model") == 0)
            model_path = v;
        else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            output = v;
        else if (strcmp(a, "--searcher") == 0) {
            sp.method = dtfm_method_from_name(v);
            if (sp.method < 0) {
                fprintf(stderr, "planner: option '--searcher' expects ga, sa, kl, "
                                "random or exact, got '%s'\n"
                                "try 'planner decentralized --help'\n", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--convention") == 0) {
            po.convention = dtfm_convention_from_name(v);
            if (po.convention < 0) {
                fprintf(stderr, "planner: option '--convention' expects paper or "
                                "public-code, got '%s'\n"
                                "try 'planner decentralized --help'\n", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--format") == 0) {
            if (strcmp(v, "json") == 0)
                json = 1;
            else if (strcmp(v, "table") == 0)
                json = 0;
            else {
                fprintf(stderr, "planner: option '--format' expects table or json, "
                                "got '%s'\ntry 'planner decentralized --help'\n", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--seed") == 0) {
            if (decentralized_double(a, v, 0, 4294967295.0, &seed) ||
                seed != (double)(unsigned long long)seed) {
                if (seed != (double)(unsigned long long)seed)
                    fprintf(stderr, "planner: option '--seed' expects an integer, "
                                    "got '%s'\n", v);
                return EXIT_USAGE;
            }
        } else if (strcmp(a, "--seconds") == 0) {
            if (decentralized_double(a, v, 0.001, 1e6, &sp.seconds))
                return EXIT_USAGE;
        } else if (strcmp(a, "--evals") == 0) {
            if (parse_int(a, v, 1, INT_MAX, &evals))
                return EXIT_USAGE;
        } else if (strcmp(a, "--stall") == 0) {
            if (parse_int(a, v, 1, INT_MAX, &stall))
                return EXIT_USAGE;
        } else if (strcmp(a, "--pp") == 0) {
            if (parse_int(a, v, 1, 65536, &po.d_pp))
                return EXIT_USAGE;
        }
    }
    if (cluster == NULL) {
        fprintf(stderr, "planner: missing required option '--cluster'\n"
                        "try 'planner decentralized --help'\n");
        return EXIT_USAGE;
    }
    sp.seed = (uint64_t)seed;
    sp.max_evals = evals;
    sp.stall = stall > 0 ? stall : (sp.method == DTFM_SA ? 3 : 100);
    if (sp.method == DTFM_RANDOM && stall <= 0) {
        sp.stall = 0; /* the public code's baseline: 5000 samples */
        if (evals <= 0)
            sp.max_evals = 5000;
    }
    if (model_path) {
        if (fmt_load_model(model_path, &m, &err) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
        po.model = &m;
    }
    if (dtfm_load(cluster, &po, &in, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (digest_file(cluster, meta.cluster_digest, &err) != UTIL_OK ||
        (model_path && digest_file(model_path, meta.model_digest, &err) != UTIL_OK)) {
        code = report(&err);
        goto done;
    }
    progress = !quiet && isatty(2);
    if (progress) {
        sp.progress = decentralized_progress;
        sp.progress_ctx = NULL;
    }
    rc = dtfm_search(&in.prob, &sp, &sr, &err);
    if (progress)
        fprintf(stderr, "\r%72s\r", "");
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT) {
        code = err.code == UTIL_EINVAL ? (fprintf(stderr, "planner: %s\n", err.msg),
                                          EXIT_USAGE)
                                       : report(&err);
        goto done;
    }
    if (dtfm_evaluate(&in.prob, sr.group_of, &res, &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    meta.cluster_path = cluster;
    meta.model_path = model_path;
    meta.searcher = dtfm_method_name(sp.method);
    meta.seed = (unsigned long long)sp.seed;
    meta.seconds = sp.seconds;
    meta.max_evals = sp.max_evals;
    meta.search = &sr;
    if (verbose)
        fprintf(stderr, "planner: %s: %ld evaluations, %ld %s, %.3f s, best found "
                        "at %.3f s%s\n", meta.searcher, sr.evaluated, sr.generations,
                sp.method == DTFM_SA ? "steps" : "candidates", sr.elapsed_s,
                sr.best_at_s, sr.timed_out ? ", time limit hit" : "");
    doc = dtfm_to_json(&meta, &in, &res);
    if (doc == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    if (output && util_write_file_atomic(output, doc, &err) != UTIL_OK) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: %s\n", buf);
        code = EXIT_OUTPUT;
        goto done;
    }
    if (!quiet) {
        if (json) {
            fputs(doc, stdout);
            fputc('\n', stdout);
        } else {
            table = dtfm_to_table(&meta, &in, &res);
            if (table == NULL) {
                fprintf(stderr, "planner: out of memory\n");
                code = EXIT_INTERNAL;
                goto done;
            }
            fputs(table, stdout);
            if (sr.timed_out)
                printf("time limit of %g s hit: the best schedule found so far\n",
                       sp.seconds);
            if (output)
                printf("plan written to '%s'\n", output);
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "planner: cannot write to standard output: %s\n",
                    strerror(errno));
            code = EXIT_OUTPUT;
        }
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
/* ==== planner decentralized ==== section end */

/* ==== planner whatif (issue 6, whatif) ==== section begin */
static const char whatif_usage[] =
    "usage: planner whatif --plan FILE --slow RANK:FACTOR [--slow ...] [options]\n"
    "\n"
    "Predicts the iteration time of a plan when some ranks slow down (FACTOR 2 =\n"
    "half speed) and compares remedies (docs/whatif-replan.md): none, re-planned\n"
    "uneven TP shards (lossless), shards and pipeline layers re-planned (lossless),\n"
    "ZERO-resizing with the pruning ratio of its eq. 1 (lossy) and SEMI-migration\n"
    "with the cost-benefit rule of its eq. 3; states the recommended remedy and why.\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --slow RANK:FACTOR     a straggler (repeatable; RANK as in the plan's ranks)\n"
    "  --strategy K           strategy of the plan, 1 = best (default 1)\n"
    "  --iterations N         how long the slowdown lasts: one-off costs of moving\n"
    "                         shards or layers are spread over N (default: for good)\n"
    "  --tolerance F          a lossy remedy must beat the best lossless one by this\n"
    "                         fraction to be recommended (default 0.05)\n"
    "  --granule N            MLP columns of re-planned shards in multiples of N (64)\n"
    "  --output FILE          write the JSON report to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write\n";

/* Print and/or write a report of whatif or replan; returns an exit code. */
static int whatif_emit(char *json, char *table, const char *output, int as_json,
                       int quiet)
{
    util_error err;
    int code = EXIT_OK;

    memset(&err, 0, sizeof err);
    if (json == NULL || table == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    if (output != NULL && util_write_file_atomic(output, json, &err) != UTIL_OK) {
        report(&err);
        code = EXIT_OUTPUT;
        goto done;
    }
    if (!quiet) {
        fputs(as_json ? json : table, stdout);
        if (as_json)
            fputc('\n', stdout);
        else if (output != NULL)
            printf("report written to '%s'\n", output);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "planner: cannot write to standard output: %s\n",
                    strerror(errno));
            code = EXIT_OUTPUT;
        }
    }
done:
    free(json);
    free(table);
    return code;
}

/* Common options of whatif and replan. */
typedef struct whatif_common {
    const char *plan, *output;
    int strategy, json, quiet, verbose;
} whatif_common;

/* Handle a common option at argv[*i]; 1 when taken, 0 when not one of
 * them, -1 on a usage error (printed). */
static int whatif_common_opt(int argc, char **argv, int *i, whatif_common *o,
                             const char *usage)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;

    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        fputs(usage, stdout);
        exit(EXIT_OK);
    }
    if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0)
        return o->quiet = 1;
    if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0)
        return o->verbose = 1;
    if (strcmp(a, "--plan") != 0 && strcmp(a, "--output") != 0 &&
        strcmp(a, "-o") != 0 && strcmp(a, "--strategy") != 0 &&
        strcmp(a, "--format") != 0)
        return 0;
    if (v == NULL) {
        usage_error("option '%s' needs a value", a);
        return -1;
    }
    (*i)++;
    if (strcmp(a, "--plan") == 0)
        o->plan = v;
    else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
        o->output = v;
    else if (strcmp(a, "--strategy") == 0) {
        if (parse_int(a, v, 1, 1000000, &o->strategy))
            return -1;
    } else if (strcmp(v, "json") == 0)
        o->json = 1;
    else if (strcmp(v, "table") == 0)
        o->json = 0;
    else {
        usage_error("option '--format' expects table or json, got '%s'", v);
        return -1;
    }
    return 1;
}

static double whatif_number(const char *opt, const char *s, double lo, int *bad)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= lo) || v > 1e15) {
        fprintf(stderr, "planner: option '%s' expects a number >= %g, got '%s'\n"
                        "try 'planner whatif --help'\n", opt, lo, s);
        *bad = 1;
    }
    return v;
}

/* Load the plan and check the strategy index; exit code. */
static int whatif_load(const whatif_common *o, plan_doc *d)
{
    util_error err;

    memset(&err, 0, sizeof err);
    if (plan_load_plan(o->plan, d, &err) != UTIL_OK)
        return report(&err);
    if (d->digest_mismatch && !o->quiet)
        fprintf(stderr, "planner: warning: an input of '%s' changed since the plan "
                        "was written (SHA-256 differs)\n", o->plan);
    if (o->strategy > d->n) {
        fprintf(stderr, "planner: option '--strategy' is %d but '%s' holds %d "
                        "strateg%s\n", o->strategy, o->plan, d->n,
                d->n == 1 ? "y" : "ies");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static int cmd_whatif(int argc, char **argv)
{
    whatif_common o;
    whatif_params wp;
    whatif_result w;
    plan_doc d;
    whatif_slow slow[64];
    util_error err;
    int i, nslow = 0, code, bad = 0;

    memset(&o, 0, sizeof o);
    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&err, 0, sizeof err);
    o.strategy = 1;
    whatif_params_init(&wp);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int t = whatif_common_opt(argc, argv, &i, &o, whatif_usage);
        if (t < 0)
            return EXIT_USAGE;
        if (t > 0)
            continue;
        if (a[0] != '-')
            return usage_error("unexpected argument '%s'", a);
        if (strcmp(a, "--slow") != 0 && strcmp(a, "--iterations") != 0 &&
            strcmp(a, "--tolerance") != 0 && strcmp(a, "--granule") != 0)
            return usage_error("unknown option '%s' for 'whatif'", a);
        if (v == NULL)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--slow") == 0) {
            const char *colon = strchr(v, ':');
            char rank[32], *end;
            long r;
            if (nslow >= 64)
                return usage_error("%s", "at most 64 '--slow' options");
            if (colon == NULL || colon == v || (size_t)(colon - v) >= sizeof rank)
                return usage_error("option '--slow' expects RANK:FACTOR, got '%s'", v);
            snprintf(rank, sizeof rank, "%.*s", (int)(colon - v), v);
            r = strtol(rank, &end, 10);
            if (*end != '\0' || r < 0 || r > INT_MAX)
                return usage_error("option '--slow' expects a rank (integer >= 0) "
                                   "before ':', got '%s'", rank);
            slow[nslow].rank = (int)r;
            slow[nslow].factor = whatif_number("--slow", colon + 1, 1.0, &bad);
            nslow++;
        } else if (strcmp(a, "--iterations") == 0) {
            wp.iterations = whatif_number(a, v, 1.0, &bad);
        } else if (strcmp(a, "--tolerance") == 0) {
            wp.tolerance = whatif_number(a, v, 0.0, &bad);
            if (!bad && wp.tolerance >= 1.0)
                return usage_error("option '--tolerance' expects a fraction below 1, "
                                   "got '%s'", v);
        } else if (parse_int(a, v, 1, 1 << 20, &wp.granule)) {
            return EXIT_USAGE;
        }
        if (bad)
            return EXIT_USAGE;
    }
    if (o.plan == NULL)
        return usage_error("%s", "whatif needs '--plan FILE'");
    if (nslow == 0)
        return usage_error("%s", "whatif needs at least one '--slow RANK:FACTOR'");
    if ((code = whatif_load(&o, &d)) != EXIT_OK)
        goto done;
    wp.slow = slow;
    wp.nslow = nslow;
    {
        const fmt_strategy *s = &d.s[o.strategy - 1];
        int rc = whatif_run(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                                 &d.params, s, &wp, &w, &err);
        if (rc == UTIL_EINVAL) {
            fprintf(stderr, "planner: option '--slow': %s\ntry 'planner whatif "
                            "--help'\n", err.msg);
            code = EXIT_USAGE;
            goto done;
        }
        if (rc != UTIL_OK) {
            code = report(&err);
            goto done;
        }
    }
    if (o.verbose)
        fprintf(stderr, "planner: whatif: %.4f s without stragglers, %.4f s with, "
                        "recommended '%s'\n", w.base_s,
                w.remedies[WHATIF_REMEDY_NONE].iter_s,
                whatif_remedy_name(w.recommended));
    code = whatif_emit(whatif_json(&w, o.plan, o.strategy),
                       whatif_table(&w, o.plan, o.strategy), o.output, o.json,
                       o.quiet);
done:
    whatif_free(&w);
    plan_doc_free(&d);
    return code;
}
/* ==== planner whatif ==== section end */

/* ==== planner replan (issue 6, replan) ==== section begin */
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
    "  --output FILE          write the JSON report to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 4 no plan fits,\n"
    "  5 cannot write\n";

static int cmd_replan(int argc, char **argv)
{
    whatif_common o;
    replan_params rp;
    replan_result r;
    replan_freeze f;
    plan_doc d;
    util_error err;
    const char *schedule = NULL;
    int i, frozen = -1, code, rc;

    memset(&o, 0, sizeof o);
    memset(&d, 0, sizeof d);
    memset(&r, 0, sizeof r);
    memset(&f, 0, sizeof f);
    memset(&err, 0, sizeof err);
    o.strategy = 1;
    replan_params_init(&rp);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int t = whatif_common_opt(argc, argv, &i, &o, replan_usage);
        if (t < 0)
            return EXIT_USAGE;
        if (t > 0)
            continue;
        if (a[0] != '-')
            return usage_error("unexpected argument '%s'", a);
        if (strcmp(a, "--no-compress") == 0) {
            rp.compress = 0;
            continue;
        }
        if (strcmp(a, "--frozen") != 0 && strcmp(a, "--schedule") != 0 &&
            strcmp(a, "--max-mbs") != 0)
            return usage_error("unknown option '%s' for 'replan'", a);
        if (v == NULL)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--frozen") == 0) {
            if (parse_int(a, v, 0, INT_MAX / 2, &frozen))
                return EXIT_USAGE;
        } else if (strcmp(a, "--schedule") == 0) {
            schedule = v;
        } else if (parse_int(a, v, 1, INT_MAX / 2, &rp.max_mbs)) {
            return EXIT_USAGE;
        }
    }
    if (o.plan == NULL)
        return usage_error("%s", "replan needs '--plan FILE'");
    if ((frozen < 0) == (schedule == NULL))
        return usage_error("%s", "replan needs exactly one of '--frozen K' and "
                                 "'--schedule FILE'");
    if ((code = whatif_load(&o, &d)) != EXIT_OK)
        goto done;
    if (schedule != NULL) {
        if (replan_load_freeze(schedule, d.model.nlayers, &f, &err) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
    } else {
        if (frozen >= d.model.nlayers) {
            fprintf(stderr, "planner: option '--frozen' is %d but the model of '%s' "
                            "has %d layers: expected 0..%d\n", frozen, o.plan,
                    d.model.nlayers, d.model.nlayers - 1);
            code = EXIT_USAGE;
            goto done;
        }
        f.phases = calloc(1, sizeof *f.phases);
        if (f.phases == NULL) {
            fprintf(stderr, "planner: out of memory\n");
            code = EXIT_INTERNAL;
            goto done;
        }
        f.n = 1;
        f.phases[0].frozen = frozen;
        f.total_epochs = 1;
    }
    rp.global_batch = d.global_batch;
    rc = replan_run(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                         &d.params, &d.s[o.strategy - 1], &f, &rp, &r, &err);
    if (rc != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (o.verbose)
        fprintf(stderr, "planner: replan: %d phase(s), predicted speed-up %.3f over "
                        "keeping the first plan\n", r.n, r.speedup);
    code = whatif_emit(replan_json(&r, &d.cluster, o.plan),
                       replan_table(&r, o.plan), o.output, o.json, o.quiet);
done:
    replan_free(&r);
    replan_freeze_free(&f);
    plan_doc_free(&d);
    return code;
}
/* ==== planner replan ==== section end */

/* ==== planner export (issue 7, export) ==== section begin */
static const char export_usage[] =
    "usage: planner export --plan FILE --to megatron|deepspeed|torchrun|hostfile\n"
    "                      [--output DIR] [--strategy K] [--master-addr HOST]\n"
    "                      [--master-port N] [--format table|json] [--quiet] [--verbose]\n"
    "\n"
    "Writes launcher input for one strategy of a plan (docs/export.md):\n"
    "  megatron   megatron.sh (Megatron-LM core_r0.9.0 flags, torchrun per node), ranks.txt\n"
    "  deepspeed  ds_config.json, hostfile, pipeline_parts.json, deepspeed.sh (DeepSpeed 0.14)\n"
    "  torchrun   torchrun.sh (per-node torchrun, CUDA_VISIBLE_DEVICES), ranks.txt\n"
    "  hostfile   hostfile (\"host slots=N\", hosts in rank order)\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --to TARGET            launcher to export for\n"
    "  --output DIR           write the files into DIR (created if missing); without\n"
    "                         it the files are printed on stdout\n"
    "  --strategy K           strategy of the plan, 1 = best (default 1)\n"
    "  --master-addr HOST     rendezvous host (default: host of node rank 0)\n"
    "  --master-port N        rendezvous port (default 29500)\n"
    "  --format table|json    stdout: files (or list of files written), or JSON\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write\n";

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
    "  --quiet                print nothing on success\n"
    "  --verbose              also print a summary line on stderr\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write\n";

/* Options shared by export and report. */
typedef struct export_opts {
    const char *plan, *output, *master_addr;
    int target, strategy, master_port, top_k, json, quiet, verbose;
} export_opts;

static void export_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch == '\t')
            fputs("\\t", f);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* Parse the options of export (report = 0) or report (report = 1). */
static int export_parse(int argc, char **argv, int is_report, export_opts *o)
{
    int i;

    memset(o, 0, sizeof *o);
    o->target = -1;
    o->strategy = 1;
    o->master_port = 29500;
    o->top_k = 5;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(is_report ? report_usage : export_usage, stdout);
            exit(EXIT_OK);
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
            continue;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            o->verbose = 1;
            continue;
        }
        if (a[0] != '-')
            return usage_error("unexpected argument '%s'", a);
        if (strcmp(a, "--plan") != 0 && strcmp(a, "--output") != 0 &&
            strcmp(a, "-o") != 0 && strcmp(a, "--strategy") != 0 &&
            strcmp(a, "--format") != 0 &&
            (is_report || (strcmp(a, "--to") != 0 && strcmp(a, "--master-addr") != 0 &&
                           strcmp(a, "--master-port") != 0)) &&
            (!is_report || strcmp(a, "--top-k") != 0))
            return usage_error("unknown option '%s' for '%s'", a, argv[0]);
        if (v == NULL)
            return usage_error("option '%s' needs a value", a);
        i++;
        if (strcmp(a, "--plan") == 0)
            o->plan = v;
        else if (strcmp(a, "--output") == 0 || strcmp(a, "-o") == 0)
            o->output = v;
        else if (strcmp(a, "--master-addr") == 0)
            o->master_addr = v;
        else if (strcmp(a, "--to") == 0) {
            o->target = export_target_from_name(v);
            if (o->target < 0)
                return usage_error("option '--to' expects megatron, deepspeed, "
                                   "torchrun or hostfile, got '%s'", v);
        } else if (strcmp(a, "--strategy") == 0) {
            if (parse_int(a, v, 1, 100000, &o->strategy))
                return EXIT_USAGE;
        } else if (strcmp(a, "--top-k") == 0) {
            if (parse_int(a, v, 1, 100000, &o->top_k))
                return EXIT_USAGE;
        } else if (strcmp(a, "--master-port") == 0) {
            if (parse_int(a, v, 1, 65535, &o->master_port))
                return EXIT_USAGE;
        } else if (strcmp(v, "json") == 0) {
            o->json = 1;
        } else if (strcmp(v, "table") == 0) {
            o->json = 0;
        } else {
            return usage_error("option '--format' expects table or json, got '%s'", v);
        }
    }
    if (o->plan == NULL)
        return usage_error("%s", "missing required option '--plan'");
    if (!is_report && o->target < 0)
        return usage_error("%s", "missing required option '--to'");
    if (is_report && o->output == NULL)
        return usage_error("%s", "missing required option '--output'");
    return EXIT_OK;
}

/* Load the plan and check the strategy index; exit code. */
static int export_load(const export_opts *o, plan_doc *d)
{
    util_error err;

    memset(&err, 0, sizeof err);
    if (plan_load_plan(o->plan, d, &err) != UTIL_OK)
        return report(&err);
    if (d->n < 1) {
        fprintf(stderr, "planner: '%s': strategies: the plan has no strategy\n",
                o->plan);
        return EXIT_INPUT;
    }
    if (o->strategy > d->n) {
        fprintf(stderr, "planner: option '--strategy' asks for strategy %d, "
                        "'%s' has %d\n", o->strategy, o->plan, d->n);
        return EXIT_USAGE;
    }
    if (d->digest_mismatch && !o->quiet)
        fprintf(stderr, "planner: warning: an input of '%s' changed since the "
                        "plan was made\n", o->plan);
    return EXIT_OK;
}

static const char *export_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Create dir (one level) when missing. */
static int export_mkdir(const char *dir)
{
    struct stat st;

    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        fprintf(stderr, "planner: cannot write into '%s': not a directory\n", dir);
        return -1;
    }
    if (mkdir(dir, 0777) != 0) {
        fprintf(stderr, "planner: cannot create directory '%s': %s\n", dir,
                strerror(errno));
        return -1;
    }
    return 0;
}

static int export_flush(void)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "planner: cannot write to standard output: %s\n",
                strerror(errno));
        return EXIT_OUTPUT;
    }
    return EXIT_OK;
}

/* One updating line on stderr: elapsed, candidates, best so far. */
static void progress_draw(void *ctx, const search_progress *p)
{
    int *drawn = ctx;
    char best[32] = "none yet";

    if (p->best_s >= 0)
        snprintf(best, sizeof best, "%.4f s", p->best_s);
    fprintf(stderr, "\rplanner: %s %6.1f s, %ld candidates scored, best %s\033[K",
            p->phase ? p->phase : "search", p->elapsed_s, p->evaluated, best);
    fflush(stderr);
    *drawn = 1;
}

static void progress_clear(int *drawn)
{
    if (*drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    *drawn = 0;
}

static int cmd_export(int argc, char **argv)
{
    export_opts o;
    plan_doc d;
    export_result ex;
    export_options eo;
    util_error err;
    char path[4096];
    int code, i;

    memset(&d, 0, sizeof d);
    memset(&ex, 0, sizeof ex);
    memset(&err, 0, sizeof err);
    code = export_parse(argc, argv, 0, &o);
    if (code != EXIT_OK)
        return code;
    if ((code = export_load(&o, &d)) != EXIT_OK)
        goto done;
    export_options_init(&eo);
    eo.master_addr = o.master_addr;
    eo.master_port = o.master_port;
    eo.source = export_base(o.plan);
    eo.strategy = o.strategy;
    if (export_build(o.target, &d.cluster, &d.model, &d.params,
                          &d.s[o.strategy - 1], d.global_batch, &eo, &ex,
                          &err) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (o.output) {
        if (export_mkdir(o.output) != 0) {
            code = EXIT_OUTPUT;
            goto done;
        }
        for (i = 0; i < ex.nfiles; i++) {
            snprintf(path, sizeof path, "%s/%s", o.output, ex.files[i].name);
            if (util_write_file_atomic(path, ex.files[i].text, &err) != UTIL_OK) {
                char buf[1024];
                util_error_format(&err, buf, sizeof buf);
                fprintf(stderr, "planner: %s\n", buf);
                code = EXIT_OUTPUT;
                goto done;
            }
            if (ex.files[i].executable && chmod(path, 0755) != 0) {
                fprintf(stderr, "planner: cannot make '%s' executable: %s\n", path,
                        strerror(errno));
                code = EXIT_OUTPUT;
                goto done;
            }
        }
    }
    if (o.verbose)
        fprintf(stderr, "planner: strategy %d of '%s' exported for %s: %d files, "
                        "%d torchrun agents on %d hosts, %d notes\n",
                o.strategy, o.plan, export_target_name(o.target), ex.nfiles,
                ex.agents, ex.hosts, ex.nnotes);
    if (o.quiet)
        goto done;
    if (o.json) {
        printf("{\"target\": ");
        export_json_string(stdout, export_target_name(o.target));
        printf(", \"plan\": ");
        export_json_string(stdout, o.plan);
        printf(", \"strategy\": %d, \"output\": ", o.strategy);
        if (o.output)
            export_json_string(stdout, o.output);
        else
            printf("null");
        printf(", \"agents\": %d, \"hosts\": %d,\n \"files\": [", ex.agents, ex.hosts);
        for (i = 0; i < ex.nfiles; i++) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            export_json_string(stdout, ex.files[i].name);
            printf(", \"bytes\": %zu, \"executable\": %s, \"what\": ",
                   strlen(ex.files[i].text), ex.files[i].executable ? "true" : "false");
            export_json_string(stdout, ex.files[i].what);
            printf(", \"%s\": ", o.output ? "path" : "content");
            if (o.output) {
                snprintf(path, sizeof path, "%s/%s", o.output, ex.files[i].name);
                export_json_string(stdout, path);
            } else {
                export_json_string(stdout, ex.files[i].text);
            }
            printf("}");
        }
        printf("],\n \"notes\": [");
        for (i = 0; i < ex.nnotes; i++) {
            printf("%s\n  ", i ? "," : "");
            export_json_string(stdout, ex.notes[i]);
        }
        printf("]}\n");
    } else if (o.output) {
        printf("%-20s %9s  %s\n", "file", "bytes", "contents");
        for (i = 0; i < ex.nfiles; i++)
            printf("%-20s %9zu  %s\n", ex.files[i].name, strlen(ex.files[i].text),
                   ex.files[i].what);
        for (i = 0; i < ex.nnotes; i++)
            printf("note: %s\n", ex.notes[i]);
        printf("%d files written to '%s' (strategy %d for %s, %d hosts", ex.nfiles,
               o.output, o.strategy, export_target_name(o.target), ex.hosts);
        if (ex.agents != ex.hosts)
            printf(", %d torchrun agents", ex.agents);
        printf(")\n");
    } else {
        for (i = 0; i < ex.nfiles; i++) {
            if (ex.nfiles > 1)
                printf("%s==> %s <==\n", i ? "\n" : "", ex.files[i].name);
            fputs(ex.files[i].text, stdout);
        }
    }
    code = export_flush();
done:
    export_free(&ex);
    plan_doc_free(&d);
    return code;
}
/* ==== planner export ==== section end */

/* ==== planner report (issue 7, report) ==== section begin */
static int report_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmd_report(int argc, char **argv)
{
    export_opts o;
    plan_doc d;
    util_error err;
    cost_result *rs = NULL;
    cost_timeline tl;
    report_input in;
    report_layout lay;
    char *text = NULL;
    int code, i, n, html, have_tl = 0;

    memset(&d, 0, sizeof d);
    memset(&err, 0, sizeof err);
    memset(&tl, 0, sizeof tl);
    code = export_parse(argc, argv, 1, &o);
    if (code != EXIT_OK)
        return code;
    if (report_ends_with(o.output, ".svg"))
        html = 0;
    else if (report_ends_with(o.output, ".html") || report_ends_with(o.output, ".htm"))
        html = 1;
    else
        return usage_error("option '--output' expects a file ending in .svg or "
                           ".html, got '%s'", o.output);
    if ((code = export_load(&o, &d)) != EXIT_OK)
        goto done;
    n = o.top_k < d.n ? o.top_k : d.n;
    if (n < o.strategy)
        n = o.strategy;
    rs = calloc((size_t)n, sizeof *rs);
    if (rs == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    for (i = 0; i < n; i++)
        if (cost_evaluate(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                          &d.params, &d.s[i], &rs[i], &err) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
    if (cost_simulate(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                      &d.params, &d.s[o.strategy - 1], d.params.overlap_dp, &tl,
                      &err) == UTIL_OK)
        have_tl = 1;
    else if (!o.quiet) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: warning: no timeline in the report: %s\n", buf);
    }
    memset(&in, 0, sizeof in);
    in.title = export_base(o.plan);
    in.c = &d.cluster;
    in.m = &d.model;
    in.s = d.s;
    in.r = rs;
    in.n = n;
    in.shown = o.strategy - 1;
    in.timeline = have_tl ? &tl : NULL;
    in.global_batch = d.global_batch;
    if ((html ? report_html(&in, &text, &lay, &err)
              : report_svg(&in, &text, &lay, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (util_write_file_atomic(o.output, text, &err) != UTIL_OK) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: %s\n", buf);
        code = EXIT_OUTPUT;
        goto done;
    }
    if (o.verbose)
        fprintf(stderr, "planner: report of %d strategies from '%s': %.0f x %.0f px, "
                        "%d timeline events\n", n, o.plan, lay.width, lay.height,
                have_tl ? tl.nevents : 0);
    if (o.quiet)
        goto done;
    if (o.json) {
        printf("{\"output\": ");
        export_json_string(stdout, o.output);
        printf(", \"format\": \"%s\", \"width_px\": %.0f, \"height_px\": %.0f, "
               "\"bytes\": %zu,\n \"timeline\": ", html ? "html" : "svg", lay.width,
               lay.height, strlen(text));
        if (have_tl)
            printf("{\"strategy\": %d, \"simulated_s\": %.17g, \"events\": %d}",
                   o.strategy, tl.iter_s, tl.nevents);
        else
            printf("null");
        printf(",\n \"strategies\": [");
        for (i = 0; i < n; i++)
            printf("%s\n  {\"rank\": %d, \"tp\": %d, \"dp\": %d, \"pp\": %d, \"mbs\": %d, "
                   "\"predicted_s\": %.17g, \"fits\": %s}", i ? "," : "", i + 1,
                   d.s[i].tp, d.s[i].dp, d.s[i].pp, d.s[i].mbs, rs[i].iter_s,
                   rs[i].fits ? "true" : "false");
        printf("]}\n");
    } else {
        printf("%-2s %9s %10s %3s %3s %3s %4s %15s %4s\n", "#", "time (s)", "samples/s",
               "tp", "dp", "pp", "mbs", "peak mem (GiB)", "fits");
        for (i = 0; i < n; i++) {
            double peak = 0;
            int k;
            for (k = 0; k < rs[i].nranks; k++)
                if (rs[i].mem_bytes[k] > peak)
                    peak = rs[i].mem_bytes[k];
            printf("%-2d %9.4f %10.2f %3d %3d %3d %4d %15.2f %4s\n", i + 1, rs[i].iter_s,
                   rs[i].iter_s > 0 ? d.global_batch / rs[i].iter_s : 0.0, d.s[i].tp,
                   d.s[i].dp, d.s[i].pp, d.s[i].mbs, peak / 1073741824.0,
                   rs[i].fits ? "yes" : "no");
        }
        if (have_tl)
            printf("timeline of #%d: %.4f s simulated, %d events\n", o.strategy,
                   tl.iter_s, tl.nevents);
        printf("report written to '%s' (%s, %.0f x %.0f px)\n", o.output,
               html ? "HTML" : "SVG", lay.width, lay.height);
    }
    code = export_flush();
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
/* ==== planner report ==== section end */
