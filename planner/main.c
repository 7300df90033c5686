/* planner/main.c: the hetplan command line.  The only file that prints. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plan.h"

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
    "  --zero N               ZeRO stage 0-3 for the memory model (default 0)\n"
    "  --recompute            assume activation recomputation\n"
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

/* Options that take a value. */
static int takes_value(const char *a)
{
    static const char *const names[] = {
        "--cluster", "--model", "--profile", "--amp-profile", "--strategies",
        "--output", "-o", "--global-batch", "--top-k", "--max-tp", "--max-mbs",
        "--zero", "--method", "--placement", "--schedule", "--format", "--param"};
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
            printf("planner (hetplan) %s\n", PLAN_VERSION);
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
            if (o->nparams >= 64)
                return usage_error("%s", "too many '--param' options");
            if (strchr(v, '=') == NULL)
                return usage_error("option '--param' expects NAME=VALUE, got '%s'", v);
            o->params[o->nparams++] = v;
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
                o->schedule = COST_SCHED_1F1B;
            else if (strcmp(v, "gpipe") == 0)
                o->schedule = COST_SCHED_GPIPE;
            else
                return usage_error("option '--schedule' expects 1f1b or gpipe, got '%s'", v);
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

static int report(const cost_error *err)
{
    char buf[1024];

    cost_error_format(err, buf, sizeof buf);
    fprintf(stderr, "planner: %s\n", buf);
    switch (err->code) {
    case COST_ENOMEM:
    case COST_EINTERNAL:
        return EXIT_INTERNAL;
    case COST_EINFEASIBLE:
        return EXIT_NOPLAN;
    default:
        return EXIT_INPUT;
    }
}

static int digest_file(const char *path, char out[65], cost_error *err)
{
    char *text = NULL;
    int rc = plan_read_file(path, &text, err);

    if (rc == COST_OK)
        plan_sha256_hex(text, strlen(text), out);
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
static int emit(const options *o, const plan_meta *meta, const cost_cluster *c,
                const cost_model *m, const cost_params *cp,
                const cost_strategy *s, const cost_result *r, int n)
{
    char *json = plan_to_json(meta, c, m, cp, s, r, n);
    char *table = NULL;
    cost_error err;
    int code = EXIT_OK;

    memset(&err, 0, sizeof err);
    if (json == NULL) {
        fprintf(stderr, "planner: out of memory\n");
        return EXIT_INTERNAL;
    }
    if (o->output && plan_write_file_atomic(o->output, json, &err) != COST_OK) {
        char buf[1024];
        cost_error_format(&err, buf, sizeof buf);
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
    cost_cluster c;
    cost_model m;
    cost_profile prof;
    cost_params cp;
    search_params sp;
    search_result res;
    cost_error err;
    plan_meta meta;
    cost_strategy *strats = NULL, *ss = NULL;
    cost_result *rs = NULL;
    int nstrat = 0, i, code, rc = COST_OK, have_prof = 0;
    char prof_path[4096] = "";
    double t0 = now_s();

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

    if ((rc = plan_load_cluster(o.cluster, &c, &err)) != COST_OK ||
        (rc = plan_load_model(o.model, &m, &err)) != COST_OK) {
        code = report(&err);
        goto done;
    }
    if (o.profile) {
        snprintf(prof_path, sizeof prof_path, "%s", o.profile);
        rc = plan_load_profile(o.profile, &m, &prof, &err);
        have_prof = 1;
    } else if (o.amp_profile) {
        const char *key = "gpt2", *colon;
        snprintf(prof_path, sizeof prof_path, "%s", o.amp_profile);
        colon = strrchr(o.amp_profile, ':');
        if (colon && colon[1] != '\0' && strchr(colon, '/') == NULL) {
            prof_path[colon - o.amp_profile] = '\0';
            key = colon + 1;
        }
        meta.profile_amp_key = key;
        rc = plan_profile_from_amp(prof_path, key, &m, &prof, &err);
        have_prof = 1;
    }
    if (rc != COST_OK) {
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
    if (digest_file(o.cluster, meta.cluster_digest, &err) != COST_OK ||
        digest_file(o.model, meta.model_digest, &err) != COST_OK) {
        code = report(&err);
        goto done;
    }
    meta.cluster_path = o.cluster;
    meta.model_path = o.model;
    meta.profile_path = have_prof ? prof_path : NULL;
    if (have_prof && digest_file(prof_path, meta.profile_digest, &err) != COST_OK) {
        code = report(&err);
        goto done;
    }
    meta.global_batch = o.global_batch;

    cost_params_init(&cp);
    cp.schedule = o.schedule;
    cp.zero_stage = o.zero;
    cp.recompute = o.recompute;
    for (i = 0; i < o.nparams; i++) {
        char name[64], *end;
        const char *eq = strchr(o.params[i], '=');
        double v = strtod(eq + 1, &end);
        snprintf(name, sizeof name, "%.*s", (int)(eq - o.params[i]), o.params[i]);
        if (end == eq + 1 || *end != '\0') {
            fprintf(stderr, "planner: option '--param %s' expects a number after '='\n",
                    o.params[i]);
            code = EXIT_USAGE;
            goto done;
        }
        if (cost_params_set(&cp, name, v, &err) != COST_OK) {
            char buf[512];
            cost_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "planner: option '--param': %s\n", buf);
            code = EXIT_USAGE;
            goto done;
        }
    }

    if (strcmp(o.command, "evaluate") == 0) {
        rc = plan_load_strategies(o.strategies, &c, &m, o.global_batch, &strats,
                                  &nstrat, &err);
        if (rc != COST_OK) {
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
                              &rs[i], &err) != COST_OK) {
                code = report(&err);
                goto done;
            }
        }
        meta.method = "evaluate";
        meta.evaluated = nstrat;
        meta.elapsed_s = now_s() - t0;
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
    rc = search_plan(&c, &m, have_prof ? &prof : NULL, &cp, &sp, &res, &err);
    if (rc != COST_OK) {
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
    code = emit(&o, &meta, &c, &m, &cp, ss, rs, res.n);
    free(ss);
    free(rs);
    rs = NULL;
done:
    if (strats) {
        for (i = 0; i < nstrat; i++) {
            cost_strategy_free(&strats[i]);
            if (rs)
                cost_result_free(&rs[i]);
        }
        free(strats);
    }
    free(rs);
    search_result_free(&res);
    cost_profile_free(&prof);
    cost_model_free(&m);
    cost_cluster_free(&c);
    return code;
}

/* ==== planner calibrate (issue 3, calibration) ==== section begin */
static int cmd_calibrate(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner calibrate ==== section end */

/* ==== planner decentralized (issue 4, DT-FM) ==== section begin */
static int cmd_decentralized(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner decentralized ==== section end */

/* ==== planner whatif (issue 6, whatif) ==== section begin */
static int cmd_whatif(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner whatif ==== section end */

/* ==== planner replan (issue 6, replan) ==== section begin */
static int cmd_replan(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner replan ==== section end */

/* ==== planner export (issue 7, export) ==== section begin */
static int cmd_export(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner export ==== section end */

/* ==== planner report (issue 7, report) ==== section begin */
static int cmd_report(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "planner: '%s' is not built yet\n", argv[0]);
    return EXIT_USAGE;
}
/* ==== planner report ==== section end */
