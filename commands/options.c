/* commands/options.c: the option parser of every command, and the parsers
 * of option values that several commands share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

/* The subcommand being run (cmd_dispatch), NULL for plan by default. */
static const char *current_command;

void cmd_set_command(const char *name)
{
    current_command = name;
}

int cmd_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "planner: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (command == NULL)
        command = current_command;
    if (command)
        fprintf(stderr, "\ntry 'planner %s --help'\n", command);
    else
        fprintf(stderr, "\ntry 'planner --help'\n");
    return CMD_EXIT_USAGE;
}

/* The entry of p's table for the argument a, or NULL. */
static const cmd_option *find_option(const cmd_parser *p, const char *a)
{
    const cmd_option *o;

    for (o = p->options; o->name != NULL; o++)
        if (strcmp(a, o->name) == 0 || (o->alias && strcmp(a, o->alias) == 0))
            return o;
    return NULL;
}

/* Report that a is not one of p's options, with the nearest one when
 * near enough (a typo); returns CMD_EXIT_USAGE. */
static int unknown_option(const cmd_parser *p, const char *a)
{
    const cmd_option *o, *best = NULL;
    char near[96] = "";
    int bd = 10, d;

    for (o = p->options; o->name != NULL; o++)
        if ((d = util_edit_distance(a, o->name)) < bd) {
            bd = d;
            best = o;
        }
    if (best != NULL && a[0] == '-' && util_near_name(a, best->name))
        snprintf(near, sizeof near, ", did you mean '%s'?", best->name);
    return cmd_usage_error(p->hint, "unknown option '%s'%s%s", a,
                           p->unknown ? p->unknown : "", near);
}

/* s as an integer in lo..hi for option opt: 0, else -1 after the
 * message. */
static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        cmd_usage_error(NULL, "option '%s' expects an integer in %d..%d, got '%s'",
                        opt, lo, hi, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Store the value v of the option o (written as a); exit code. */
static int store(const cmd_parser *p, const cmd_option *o, const char *a, const char *v)
{
    switch (o->kind) {
    case CMD_OPT_STRING:
        *o->str = v;
        return CMD_EXIT_OK;
    case CMD_OPT_PATH:
        if (v[0] == '\0')
            return cmd_usage_error(p->hint, "option '%s' expects a path, got ''", a);
        *o->str = v;
        return CMD_EXIT_OK;
    case CMD_OPT_INT:
        return parse_int(a, v, o->lo, o->hi, o->num) ? CMD_EXIT_USAGE : CMD_EXIT_OK;
    case CMD_OPT_SET:
        *o->num = o->lo;
        return CMD_EXIT_OK;
    case CMD_OPT_FORMAT:
        if (strcmp(v, "json") == 0)
            *o->num = 1;
        else if (strcmp(v, "table") == 0)
            *o->num = 0;
        else
            return cmd_usage_error(p->hint, "option '--format' expects table or "
                                            "json, got '%s'", v);
        return CMD_EXIT_OK;
    default: /* CMD_OPT_CALL */
        return p->handle(p->ctx, o->id, a, v);
    }
}

/* Largest number of entries in an option table. */
#define MAX_OPTIONS 128

/* Note that o (written as a) was given; a usage error when it was given
 * before and cannot be repeated. */
static int note_seen(const cmd_parser *p, const cmd_option *o, const char *a,
                     unsigned char *seen)
{
    size_t k = (size_t)(o - p->options);

    if (k >= MAX_OPTIONS)
        return CMD_EXIT_OK;
    if (seen[k] && o->kind != CMD_OPT_SET && !(o->kind == CMD_OPT_CALL && o->lo == 1))
        return cmd_usage_error(p->hint, "option '%s' given more than once", a);
    seen[k] = 1;
    return CMD_EXIT_OK;
}

/* 1 when the option named name was given (seen by note_seen). */
static int given(const cmd_parser *p, const unsigned char *seen, const char *name)
{
    const cmd_option *o = find_option(p, name);
    size_t k = o ? (size_t)(o - p->options) : MAX_OPTIONS;

    return k < MAX_OPTIONS && seen[k];
}

int cmd_parse_options(const cmd_parser *p, int argc, char **argv)
{
    unsigned char seen[MAX_OPTIONS] = {0};
    int i, code;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
        char name[64];
        const cmd_option *o;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(p->usage, stdout);
            if (p->usage_more)
                fputs(p->usage_more, stdout);
            exit(cmd_flush_stdout()); /* a help that cannot be written is exit 5 */
        }
        if (p->version && strcmp(a, "--version") == 0) {
            if (argc > 2)
                return cmd_usage_error(p->hint, "%s", "option '--version' takes "
                                                      "no other argument");
            cmd_print_version();
            exit(cmd_flush_stdout());
        }
        if (eq != NULL) {
            /* --name=value: the value is the rest of the word */
            if ((size_t)(eq - a) >= sizeof name)
                return unknown_option(p, a);
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = '\0';
            if ((o = find_option(p, name)) == NULL)
                return unknown_option(p, name);
            if (o->kind == CMD_OPT_SET)
                return cmd_usage_error(p->hint, "option '%s' takes no value", name);
            if ((code = note_seen(p, o, o->name, seen)) != CMD_EXIT_OK ||
                (code = store(p, o, name, eq + 1)) != CMD_EXIT_OK)
                return code;
            continue;
        }
        o = find_option(p, a);
        if (o != NULL && o->kind == CMD_OPT_SET) {
            v = NULL;
        } else {
            if (a[0] != '-')
                return cmd_usage_error(p->hint, "unexpected argument '%s'", a);
            if (o == NULL && !p->value_first)
                return unknown_option(p, a);
            if (v == NULL)
                return cmd_usage_error(p->hint, "option '%s' needs a value", a);
            if (o == NULL)
                return unknown_option(p, a);
            i++;
        }
        if ((code = note_seen(p, o, o->name, seen)) != CMD_EXIT_OK ||
            (code = store(p, o, a, v)) != CMD_EXIT_OK)
            return code;
    }
    if (given(p, seen, "--quiet") && given(p, seen, "--verbose"))
        return cmd_usage_error(p->hint, "%s", "options '--quiet' and '--verbose' "
                                              "exclude each other");
    return CMD_EXIT_OK;
}

int cmd_require_inputs(const cmd_input_opts *in)
{
    if (in->cluster == NULL)
        return cmd_usage_error(NULL, "%s", "missing required option '--cluster'");
    if (in->model == NULL)
        return cmd_usage_error(NULL, "%s", "missing required option '--model'");
    return CMD_EXIT_OK;
}

int cmd_add_param(const char **params, int *n, const char *v)
{
    if (*n >= CMD_MAX_PARAMS)
        return cmd_usage_error(NULL, "%s", "too many '--param' options");
    if (strchr(v, '=') == NULL)
        return cmd_usage_error(NULL, "option '--param' expects NAME=VALUE, got '%s'", v);
    params[(*n)++] = v;
    return CMD_EXIT_OK;
}

int cmd_split_param(const char *p, char *name, size_t n, double *v)
{
    const char *eq = strchr(p, '=');
    char *end;

    *v = strtod(eq + 1, &end);
    snprintf(name, n, "%.*s", (int)(eq - p), p);
    return end != eq + 1 && *end == '\0';
}
