/* commands/common.c: the dispatcher of subcommands, and the messages,
 * output files and progress lines shared by the commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "decentral.h"

/* The unknown input keys of this run (cmd_dispatch), and how many of
 * them are printed. */
static fmt_warnings run_warnings;
static int warnings_printed;

void cmd_warnings_flush(void)
{
    char buf[1024];

    for (; warnings_printed < run_warnings.n; warnings_printed++) {
        util_error_format(&run_warnings.items[warnings_printed], buf, sizeof buf);
        fprintf(stderr, "planner: warning: %s\n", buf);
    }
    if (run_warnings.dropped > 0) {
        fprintf(stderr, "planner: warning: %d more unknown keys not shown\n",
                run_warnings.dropped);
        run_warnings.dropped = 0;
    }
}

int cmd_report_error(const util_error *err)
{
    char buf[1024];

    cmd_warnings_flush();
    util_error_format(err, buf, sizeof buf);
    fprintf(stderr, "planner: %s\n", buf);
    switch (err->code) {
    case UTIL_ENOMEM:
    case UTIL_EINTERNAL:
        return CMD_EXIT_INTERNAL;
    case UTIL_EINFEASIBLE:
        return CMD_EXIT_NOPLAN;
    case UTIL_ETIMEOUT:
        return CMD_EXIT_TIMEOUT;
    default:
        return CMD_EXIT_INPUT;
    }
}

int cmd_plan_inputs_check(const plan_doc *d, int quiet)
{
    char buf[1400];

    if (plan_changed_inputs(d, buf, sizeof buf) == 0)
        return CMD_EXIT_OK;
    cmd_warnings_flush();
    if (run_warnings.strict) {
        fprintf(stderr, "planner: %s (--strict: an input changed since the plan was "
                        "made is an error; plan again)\n", buf);
        return CMD_EXIT_INPUT;
    }
    if (!quiet)
        fprintf(stderr, "planner: warning: %s; the input files as they are now "
                        "are used (--strict refuses)\n", buf);
    return CMD_EXIT_OK;
}

int cmd_parse_time_limit(const char *command, const char *v, double *seconds)
{
    char *end;
    double s = strtod(v, &end);

    if (end == v || *end != '\0' || !(s > 0.0 && s <= 31536000.0))
        return cmd_usage_error(command, "option '--time-limit' expects seconds in "
                                        "(0, 31536000], got '%s'", v);
    *seconds = s;
    return CMD_EXIT_OK;
}

int cmd_out_of_memory(void)
{
    fprintf(stderr, "planner: out of memory\n");
    return CMD_EXIT_INTERNAL;
}

void cmd_print_version(void)
{
    printf("planner (hetplan) %s\n", HETPLAN_VERSION);
}

int cmd_write_file(const char *path, const char *text)
{
    return cmd_write_file_mode(path, text, -1);
}

int cmd_write_file_mode(const char *path, const char *text, int mode)
{
    util_error err;
    char buf[1024];

    memset(&err, 0, sizeof err);
    if (util_write_file_atomic_mode(path, text, mode, &err) == UTIL_OK)
        return CMD_EXIT_OK;
    util_error_format(&err, buf, sizeof buf);
    fprintf(stderr, "planner: %s\n", buf);
    return CMD_EXIT_OUTPUT;
}

int cmd_flush_stdout(void)
{
    int e = fflush(stdout) != 0 ? errno : 0;

    if (e != 0 || ferror(stdout)) {
        fprintf(stderr, "planner: cannot write to standard output%s%s\n",
                e ? ": " : "", e ? strerror(e) : "");
        clearerr(stdout); /* said once */
        return CMD_EXIT_OUTPUT;
    }
    return CMD_EXIT_OK;
}

int cmd_emit_report(char *json, char *table, const cmd_output_opts *o)
{
    int code = CMD_EXIT_OK;

    if (json == NULL || table == NULL)
        code = cmd_out_of_memory();
    else if (o->output != NULL)
        code = cmd_write_file(o->output, json);
    if (code == CMD_EXIT_OK && !o->quiet) {
        fputs(o->json ? json : table, stdout);
        if (o->json)
            fputc('\n', stdout);
        else if (o->output != NULL)
            printf("report written to '%s'\n", o->output);
        code = cmd_flush_stdout();
    }
    free(json);
    free(table);
    return code;
}

int cmd_digest_file(const char *path, char out[65], util_error *err)
{
    char *text = NULL;
    int rc = util_read_file(path, &text, err);

    if (rc == UTIL_OK)
        util_sha256_hex(text, strlen(text), out);
    free(text);
    return rc;
}

double cmd_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cmd_progress_draw(void *ctx, const search_progress *p)
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

void cmd_progress_clear(int *drawn)
{
    if (*drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    *drawn = 0;
}

void cmd_json_string(FILE *f, const char *s)
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

const char *cmd_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
} subcommands[] = {
    {"plan", cmd_plan},           {"evaluate", cmd_evaluate},
    {"calibrate", cmd_calibrate}, {"decentralized", cmd_decentralized},
    {"whatif", cmd_whatif},       {"replan", cmd_replan},
    {"export", cmd_export},       {"report", cmd_report},
    {"inspect", cmd_inspect},
};

/* Remove the global option --strict from argv (argc updated): 1 when it
 * was given. */
static int take_strict(int *argc, char **argv)
{
    int i, j = 1, strict = 0;

    for (i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--") == 0) { /* nothing after it is an option */
            for (; i < *argc; i++)
                argv[j++] = argv[i];
            break;
        }
        if (strcmp(argv[i], "--strict") == 0)
            strict = 1;
        else
            argv[j++] = argv[i];
    }
    *argc = j;
    argv[j] = NULL;
    return strict;
}

static int dispatch(int argc, char **argv);

int cmd_dispatch(int argc, char **argv)
{
    fmt_warnings *old;
    int code;

    memset(&run_warnings, 0, sizeof run_warnings);
    warnings_printed = 0;
    run_warnings.strict = take_strict(&argc, argv);
    old = fmt_warnings_use(&run_warnings);
    code = dispatch(argc, argv);
    /* whatever reached stdout (help, version, tables) must have been
     * written: a failed write is an output error, not a success */
    if (cmd_flush_stdout() != CMD_EXIT_OK && code == CMD_EXIT_OK)
        code = CMD_EXIT_OUTPUT;
    cmd_warnings_flush();
    fmt_warnings_use(old);
    fmt_warnings_free(&run_warnings);
    return code;
}

static int dispatch(int argc, char **argv)
{
    size_t k;

    cmd_set_command(NULL);
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            fputs(cmd_plan_usage, stdout);
            fputs(cmd_plan_usage_options, stdout);
            return CMD_EXIT_OK;
        }
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
            if (argc > 2)
                return cmd_usage_error(NULL, "unexpected argument '%s' after "
                                             "'--version'", argv[2]);
            cmd_print_version();
            return CMD_EXIT_OK;
        }
        return cmd_plan(argc, argv); /* options from argv[1] on */
    }
    for (k = 0; k < sizeof subcommands / sizeof subcommands[0]; k++)
        if (strcmp(argv[1], subcommands[k].name) == 0) {
            cmd_set_command(subcommands[k].name);
            return subcommands[k].run(argc - 1, argv + 1);
        }
    if (strcmp(argv[1], "help") == 0) { /* help [COMMAND]: its --help */
        static char help_opt[] = "--help";
        char *hv[3];
        if (argc < 3) {
            fputs(cmd_plan_usage, stdout);
            fputs(cmd_plan_usage_options, stdout);
            return CMD_EXIT_OK;
        }
        if (argc > 3)
            return cmd_usage_error(NULL, "unexpected argument '%s' after 'help %s'",
                                   argv[3], argv[2]);
        for (k = 0; k < sizeof subcommands / sizeof subcommands[0]; k++)
            if (strcmp(argv[2], subcommands[k].name) == 0) {
                hv[0] = argv[2];
                hv[1] = help_opt;
                hv[2] = NULL;
                return subcommands[k].run(2, hv);
            }
        return cmd_usage_error(NULL, "unknown command '%s' after 'help'", argv[2]);
    }
    for (k = 0; k < sizeof subcommands / sizeof subcommands[0]; k++)
        if (util_near_name(argv[1], subcommands[k].name))
            return cmd_usage_error(NULL, "unknown command '%s', did you mean '%s'?",
                                   argv[1], subcommands[k].name);
    return cmd_usage_error(NULL, "unknown command '%s' (commands: plan, evaluate, "
                                 "calibrate, decentralized, whatif, replan, export, "
                                 "report, inspect)", argv[1]);
}

int cmd_load_cluster(const char *path, fmt_cluster *c, util_error *err)
{
    int n0 = run_warnings.n, rc = fmt_load_cluster(path, c, err);
    dtfm_options o;
    dtfm_input in;
    util_error e2;
    size_t len;

    if (rc != UTIL_EFIELD || strstr(err->msg, "missing required field 'nodes'") == NULL)
        return rc;
    memset(&e2, 0, sizeof e2);
    memset(&in, 0, sizeof in);
    dtfm_options_init(&o);
    if (dtfm_load(path, &o, &in, &e2) != UTIL_OK)
        return rc;
    dtfm_input_free(&in);
    if (run_warnings.n > n0 && warnings_printed <= n0)
        run_warnings.n = n0; /* its keys are right for 'planner decentralized' */
    len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, " (a decentralized cluster: "
             "'planner decentralized --cluster %s' schedules it)", path);
    return rc;
}
