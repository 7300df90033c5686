/* commands/export.c: planner export, which writes launcher input for one
 * strategy of a plan; the loading of plan files that report shares; and
 * what plan and evaluate ask of a launcher (its constraints, whether its
 * exporter takes a strategy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "commands.h"

static const char export_usage[] =
    "usage: planner export --plan FILE --to TARGET[@VERSION]\n"
    "                      [--target-version V] [--approximate] [--output DIR]\n"
    "                      [--strategy K] [--master-addr HOST] [--master-port N]\n"
    "                      [--format table|json] [--quiet] [--verbose]\n"
    "\n"
    "Writes launcher input for one strategy of a plan (docs/export.md), or\n"
    "refuses (exit 6) naming what the target cannot express:\n"
    "  megatron   megatron.sh (pretrain_gpt.py flags, torchrun per node), ranks.txt;\n"
    "             versions core_r0.9.0 (default), core_v0.19.0\n"
    "  deepspeed  ds_config.json, hostfile, hetplan_pipe.py (PipelineModule stages),\n"
    "             deepspeed.sh; versions 0.14 (default), 0.19\n"
    "  torchrun   torchrun.sh (per-node torchrun, CUDA_VISIBLE_DEVICES, the plan as\n"
    "             HETPLAN_* variables), ranks.txt, shards.txt for uneven TP shards;\n"
    "             versions 1.13 (default), 2.x: the same underscore flags\n"
    "  hostfile   hostfile (\"host slots=N\", hosts in rank order)\n"
    "options:\n"
    "  --plan FILE            plan JSON written by 'planner --output'\n"
    "  --to TARGET[@VERSION]  launcher to export for (a target above); @VERSION\n"
    "                         names the release as --target-version does, the\n"
    "                         spelling of 'plan --launcher'\n"
    "  --target-version V     upstream release to write for (old, new or a name above;\n"
    "                         default: the plan's 'plan --launcher' release, else old)\n"
    "  --approximate          write the files even where the target cannot express\n"
    "                         the plan exactly; the approximations go to stderr\n"
    "  --output DIR           write the files into DIR (created if missing), all or\n"
    "                         nothing: a failure leaves DIR as it was; in a DIR that\n"
    "                         exists only the export's files are replaced; without\n"
    "                         it the files are printed on stdout\n"
    "  --strategy K           strategy of the plan, 1 = best (default 1)\n"
    "  --master-addr HOST     rendezvous host (default: host of node rank 0)\n"
    "  --master-port N        rendezvous port (default 29500)\n"
    "  --format table|json    stdout: files (or list of files written), or JSON\n"
    "  --strict               unknown keys in input files, and an input changed\n"
    "                         since the plan was made, are errors (exit 3)\n"
    "  --quiet                print nothing on success; errors and approximations\n"
    "                         still go to stderr\n"
    "  --verbose              also print a summary line on stderr\n"
    "  --time-limit SECONDS   checked once the plan and its inputs are read: the\n"
    "                         files (bounded work) are then written complete, and\n"
    "                         exit code 7 says the limit had passed\n"
    "Notes and warnings go to stderr; stdout carries only the files or the listing.\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad plan or input, 5 cannot write,\n"
    "            6 the target cannot express the plan (see --approximate),\n"
    "            7 the time limit had passed (the files are complete)\n";

/* What the command line sets. */
typedef struct export_opts {
    cmd_output_opts out;
    const char *plan, *master_addr, *version;
    const char *to;         /* --to as given */
    int target, strategy, master_port, approximate;
    int to_version;         /* the release --to TARGET@VERSION names, -1 = none */
    double time_limit;      /* --time-limit SECONDS, 0 = none */
} export_opts;

/* Store --to (id 0) or --time-limit (id 1) v in the export_opts ctx; exit
 * code. */
static int export_option(void *ctx, int id, const char *opt, const char *v)
{
    export_opts *o = ctx;

    (void)opt;
    if (id == 1)
        return cmd_parse_time_limit("export", v, &o->time_limit);
    o->to = v;
    return cmd_target_parse("--to", v, 1, &o->target, &o->to_version);
}

/* 1 when s can be a rendezvous address: a host name (IPv4 addresses are
 * host names to the check) or an IPv6 address (hex digits, ':', '.'). */
static int addr_ok(const char *s)
{
    size_t n = strlen(s);

    if (util_hostname_ok(s))
        return 1;
    return n > 1 && n <= 45 && strchr(s, ':') != NULL &&
           strspn(s, "0123456789abcdefABCDEF:.") == n;
}

/* Parse the command line into o; exit code. */
static int export_args(int argc, char **argv, export_opts *o)
{
    const cmd_option table[] = {
        CMD_STRING("--plan", NULL, &o->plan),
        CMD_INT("--strategy", &o->strategy, 1, 100000),
        CMD_CALL("--to", 0),
        CMD_STRING("--master-addr", NULL, &o->master_addr),
        CMD_INT("--master-port", &o->master_port, 1, 65535),
        CMD_STRING("--target-version", NULL, &o->version),
        CMD_SET("--approximate", NULL, &o->approximate, 1),
        CMD_CALL("--time-limit", 1),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = export_usage, .options = table,
                          .unknown = " for 'export'", .handle = export_option, .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->target = -1;
    o->to_version = -1;
    o->strategy = 1;
    o->master_port = 29500;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->plan == NULL)
        return cmd_usage_error(NULL, "%s", "missing required option '--plan'");
    if (o->target < 0)
        return cmd_usage_error(NULL, "%s", "missing required option '--to'");
    if (o->to_version >= 0 && o->version != NULL &&
        export_version_from_name(o->target, o->version) >= 0 &&
        export_version_from_name(o->target, o->version) != o->to_version)
        return cmd_usage_error(NULL, "options '--to %s' and '--target-version %s' "
                                     "name different releases: give one of them",
                               o->to, o->version);
    if (o->master_addr != NULL && !addr_ok(o->master_addr))
        return cmd_usage_error(NULL, "option '--master-addr' expects a host name or "
                                     "an IP address, got '%s'", o->master_addr);
    return CMD_EXIT_OK;
}

int cmd_export_load(const char *plan, int strategy, int quiet, plan_doc *d)
{
    util_error err;

    memset(&err, 0, sizeof err);
    if (plan_load_plan(plan, d, &err) != UTIL_OK)
        return cmd_report_error(&err);
    if (d->n < 1) {
        fprintf(stderr, "planner: '%s': strategies: the plan has no strategy\n", plan);
        return CMD_EXIT_INPUT;
    }
    if (strategy > d->n) {
        return cmd_usage_error(NULL, "option '--strategy' expects 1..%d (the "
                                     "strategies of '%s'), got %d", d->n, plan,
                               strategy);
    }
    return cmd_plan_inputs_check(d, quiet);
}

/* The notes on stderr: approximations always (they are what a refusal
 * or --approximate is about), the other notes unless --quiet. */
static void export_print_notes(const export_opts *o, const export_result *ex,
                               int refused)
{
    int i;

    for (i = 0; i < ex->nnotes; i++) {
        if (ex->approx[i])
            fprintf(stderr, "planner: %s: %s\n",
                    refused ? "cannot express" : "warning: approximation",
                    ex->notes[i]);
        else if (!o->out.quiet && !refused)
            fprintf(stderr, "planner: note: %s\n", ex->notes[i]);
    }
    {
        int kept = 0;
        for (i = 0; i < ex->nnotes; i++)
            kept += ex->approx[i];
        if (ex->napprox > kept)
            fprintf(stderr, "planner: ... and %d more approximation(s)\n",
                    ex->napprox - kept);
    }
}

/* Write the files of ex into the directory o->output, all or nothing
 * (util_write_dir_atomic); exit code. */
static int export_write(const export_opts *o, const export_result *ex)
{
    util_out_file *files = calloc((size_t)ex->nfiles, sizeof *files);
    util_error err;
    int i, code = CMD_EXIT_OK;

    if (files == NULL)
        return cmd_out_of_memory();
    memset(&err, 0, sizeof err);
    for (i = 0; i < ex->nfiles; i++) {
        files[i].name = ex->files[i].name;
        files[i].text = ex->files[i].text;
        /* a script appears executable, never without its mode */
        files[i].mode = ex->files[i].executable ? 0755 : -1;
    }
    if (util_write_dir_atomic(o->out.output, files, ex->nfiles, &err) != UTIL_OK) {
        char buf[1024];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: %s; nothing was written\n", buf);
        code = err.code == UTIL_ENOMEM ? CMD_EXIT_INTERNAL : CMD_EXIT_OUTPUT;
    }
    free(files);
    return code;
}

/* --format json on stdout: the files (their paths with --output, else their
 * text) and the notes. */
static void export_print_json(const export_opts *o, const export_result *ex,
                              int timed_out)
{
    char path[4096];
    int i;

    printf("{\"target\": ");
    cmd_json_string(stdout, export_target_name(o->target));
    printf(", \"plan\": ");
    cmd_json_string(stdout, o->plan);
    printf(", \"strategy\": %d, \"status\": \"%s\", \"output\": ", o->strategy,
           timed_out ? "time-limit" : "complete");
    if (o->out.output)
        cmd_json_string(stdout, o->out.output);
    else
        printf("null");
    printf(", \"agents\": %d, \"hosts\": %d, \"ranks\": %d, \"idle_gpus\": %d,"
           "\n \"files\": [", ex->agents, ex->hosts, ex->ranks, ex->idle);
    for (i = 0; i < ex->nfiles; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        cmd_json_string(stdout, ex->files[i].name);
        printf(", \"bytes\": %zu, \"executable\": %s, \"what\": ",
               strlen(ex->files[i].text), ex->files[i].executable ? "true" : "false");
        cmd_json_string(stdout, ex->files[i].what);
        printf(", \"%s\": ", o->out.output ? "path" : "content");
        if (o->out.output) {
            snprintf(path, sizeof path, "%s/%s", o->out.output, ex->files[i].name);
            cmd_json_string(stdout, path);
        } else {
            cmd_json_string(stdout, ex->files[i].text);
        }
        printf("}");
    }
    printf("],\n \"version\": ");
    cmd_json_string(stdout, export_version_name(o->target, ex->version));
    printf(", \"approximations\": %d, \"notes\": [", ex->napprox);
    for (i = 0; i < ex->nnotes; i++) {
        printf("%s\n  {\"approximation\": %s, \"text\": ", i ? "," : "",
               ex->approx[i] ? "true" : "false");
        cmd_json_string(stdout, ex->notes[i]);
        printf("}");
    }
    printf("]}\n");
}

/* The table on stdout: the files written with --output, else their text. */
static void export_print_table(const export_opts *o, const export_result *ex)
{
    int i;

    if (o->out.output == NULL) {
        for (i = 0; i < ex->nfiles; i++) {
            if (ex->nfiles > 1)
                printf("%s==> %s <==\n", i ? "\n" : "", ex->files[i].name);
            fputs(ex->files[i].text, stdout);
        }
        return;
    }
    printf("%-20s %9s  %s\n", "file", "bytes", "contents");
    for (i = 0; i < ex->nfiles; i++)
        printf("%-20s %9zu  %s\n", ex->files[i].name, strlen(ex->files[i].text),
               ex->files[i].what);
    printf("%d files written to '%s' (strategy %d for %s, %d hosts", ex->nfiles,
           o->out.output, o->strategy, export_target_name(o->target), ex->hosts);
    if (ex->agents != ex->hosts)
        printf(", %d torchrun agents", ex->agents);
    if (ex->idle > 0)
        printf(", %d ranks, %d GPUs idle", ex->ranks, ex->idle);
    printf(")\n");
}

int cmd_export(int argc, char **argv)
{
    double start = cmd_seconds();
    export_opts o;
    plan_doc d;
    export_result ex;
    export_options eo;
    util_error err;
    int code, timed_out;

    memset(&d, 0, sizeof d);
    memset(&ex, 0, sizeof ex);
    memset(&err, 0, sizeof err);
    code = export_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    if ((code = cmd_export_load(o.plan, o.strategy, o.out.quiet, &d)) != CMD_EXIT_OK)
        goto done;
    /* the one check: what follows is bounded and never cut */
    timed_out = o.time_limit > 0.0 && util_deadline_passed(start + o.time_limit);
    export_options_init(&eo);
    eo.master_addr = o.master_addr;
    eo.master_port = o.master_port;
    eo.source = cmd_basename(o.plan);
    eo.strategy = o.strategy;
    eo.approximate = o.approximate;
    eo.idle_reason = d.idle_reason ? d.idle_reason[o.strategy - 1] : NULL;
    /* without a release named (--to T@V, --target-version): the one the
     * plan was made for */
    if (o.to_version >= 0)
        eo.version = o.to_version;
    else if (o.version == NULL && d.launcher[0] != '\0' &&
        export_target_from_name(d.launcher) == o.target &&
        export_version_from_name(o.target, d.launcher_version) >= 0)
        eo.version = export_version_from_name(o.target, d.launcher_version);
    if (o.version != NULL &&
        (eo.version = export_version_from_name(o.target, o.version)) < 0) {
        code = cmd_usage_error("export", "option '--target-version' expects %s "
                               "for %s, got '%s'",
                               o.target == EXPORT_MEGATRON ? "core_r0.9.0 or core_v0.19.0"
                               : o.target == EXPORT_DEEPSPEED ? "0.14 or 0.19"
                               : o.target == EXPORT_TORCHRUN ? "1.13 or 2.x"
                                                            : "nothing (a hostfile has no version)",
                               export_target_name(o.target), o.version);
        goto done;
    }
    if (export_build(o.target, &d.cluster, &d.model, &d.params, &d.s[o.strategy - 1],
                     d.global_batch, &eo, &ex, &err) != UTIL_OK) {
        if (ex.napprox > 0 && !o.approximate) {
            export_print_notes(&o, &ex, 1);
            const char *v = export_version_name(o.target, eo.version);
            const char *t = export_target_name(o.target);
            /* a plan made for another launcher: say how to get one for this */
            int other = strcmp(d.launcher, t) != 0 ||
                        (v[0] != '\0' &&
                         export_version_from_name(o.target, d.launcher_version) != eo.version);
            fprintf(stderr, "planner: refused: %s%s%s cannot express strategy %d of "
                            "'%s' exactly (%d approximation%s above); "
                            "--approximate writes it anyway%s%s%s%s%s\n",
                    t, v[0] ? " " : "", v, o.strategy, o.plan, ex.napprox,
                    ex.napprox > 1 ? "s" : "",
                    other ? ", 'planner --launcher " : "", other ? t : "",
                    other && v[0] ? "@" : "", other ? v : "",
                    other ? "' plans what it runs" : "");
            code = CMD_EXIT_REFUSED;
        } else {
            code = cmd_report_error(&err);
        }
        goto done;
    }
    export_print_notes(&o, &ex, 0);
    if (o.out.output && (code = export_write(&o, &ex)) != CMD_EXIT_OK)
        goto done;
    if (o.out.verbose)
        fprintf(stderr, "planner: strategy %d of '%s' exported for %s: %d files, "
                        "%d torchrun agents on %d hosts, %d notes\n",
                o.strategy, o.plan, export_target_name(o.target), ex.nfiles,
                ex.agents, ex.hosts, ex.nnotes);
    if (!o.out.quiet) {
        if (o.out.json)
            export_print_json(&o, &ex, timed_out);
        else
            export_print_table(&o, &ex);
        code = cmd_flush_stdout();
    }
    if (code == CMD_EXIT_OK && timed_out) {
        fprintf(stderr, "planner: note: time limit of %g s passed while reading the "
                        "plan; the files are complete (nothing of an export is cut)\n",
                o.time_limit);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    export_free(&ex);
    plan_doc_free(&d);
    return code;
}

/* ---- planning and evaluating for a launcher (plan.c, evaluate.c) ---- */

int cmd_target_parse(const char *opt, const char *v, int hostfile_ok, int *target,
                     int *version)
{
    char name[32];
    const char *at = strchr(v, '@');
    size_t n = at ? (size_t)(at - v) : strlen(v);
    int t, ver = -1;

    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), v);
    t = n < sizeof name ? export_target_from_name(name) : -1;
    if (t < 0 || (t == EXPORT_HOSTFILE && !hostfile_ok))
        return cmd_usage_error(NULL, "option '%s' expects megatron, deepspeed%s "
                                     "torchrun%s, optionally with @VERSION, got '%s'",
                               opt, hostfile_ok ? "," : " or",
                               hostfile_ok ? " or hostfile" : "", v);
    if (at != NULL && t == EXPORT_HOSTFILE)
        return cmd_usage_error(NULL, "option '%s': hostfile has no release, got "
                                     "'%s'", opt, v);
    if (at != NULL && (ver = export_version_from_name(t, at + 1)) < 0)
        return cmd_usage_error(NULL, "option '%s': %s has no release '%s' "
                                     "(%s or %s)", opt, name, at + 1,
                               export_version_name(t, EXPORT_VERSION_OLD),
                               export_version_name(t, EXPORT_VERSION_NEW));
    if (target != NULL)
        *target = t;
    if (version != NULL)
        *version = ver;
    return CMD_EXIT_OK;
}

int cmd_plan_launcher(cmd_plan_run *r, search_launcher *lc, int *target,
                      int *version)
{
    util_error err;
    int code = cmd_launcher_parse(r->o.launcher, target, version);

    memset(&err, 0, sizeof err);
    if (code != CMD_EXIT_OK)
        return code;
    if (export_target_caps(*target, *version, lc, &err) != UTIL_OK)
        return cmd_report_error(&err);
    r->meta.launcher = export_target_name(*target);
    r->meta.launcher_version = export_version_name(*target, *version);
    return CMD_EXIT_OK;
}

int cmd_launcher_refusal(const cmd_plan_run *r, int target, int version,
                         const fmt_strategy *s, char *why, size_t n)
{
    export_options eo;
    export_result er;
    util_error err;
    int k;

    export_options_init(&eo);
    eo.version = version;
    memset(&err, 0, sizeof err);
    if (export_build(target, &r->c, &r->m, &r->cp, s, r->meta.global_batch, &eo, &er,
                     &err) == UTIL_OK) {
        export_free(&er);
        return 0;
    }
    /* what the launcher cannot express, without the export command's
     * advice (--approximate is not an option here) */
    for (k = 0; k < er.nnotes && !er.approx[k]; k++)
        ;
    if (er.napprox > 0 && k < er.nnotes)
        snprintf(why, n, "%s", er.notes[k]);
    else
        util_error_format(&err, why, n);
    export_free(&er);
    return 1;
}
