/* launcher/args.c: the command line of hetplan-launch. */
#include <stdlib.h>
#include <string.h>

#include "launch.h"

void launch_options_init(launch_options *o)
{
    memset(o, 0, sizeof *o);
    o->rank = -1;
    o->strategy = 1;
    o->iterations = 10;
    o->warmup = 2;
    o->order = LAUNCH_ORDER_MEGATRON;
    o->timeout_s = 60.0;
}

/* The names of --mode and --rank-order are in the order of the enums. */
_Static_assert(LAUNCH_MODE_AUTO == 0 && LAUNCH_MODE_EXECUTED == 1 &&
                   LAUNCH_MODE_COMPOSED == 2 && LAUNCH_ORDER_MEGATRON == 0 &&
                   LAUNCH_ORDER_PLAN == 1,
               "launch_option's name lists follow the enums");

/* What the option handler fills: the options, and whether --all-local
 * was given. */
typedef struct launch_cli {
    launch_options *o;
    int all_local;
} launch_cli;

/* One option of hetplan-launch (prof_option_fn; ctx: launch_cli). */
static int launch_option(void *ctx, const char *name, const char *val,
                         util_error *err)
{
    /* indexed by o->json, enum launch_mode, enum launch_order */
    static const char *const formats[] = {"table", "json"};
    static const char *const modes[] = {"auto", "executed", "composed"};
    static const char *const orders[] = {"megatron", "plan"};
    launch_cli *cli = ctx;
    launch_options *o = cli->o;

    if (strcmp(name, "--plan") == 0) {
        o->plan = val;
    } else if (strcmp(name, "--output") == 0 || strcmp(name, "-o") == 0) {
        o->output = val;
    } else if (strcmp(name, "--rank") == 0) {
        return prof_parse_int("--rank", val, 0, 1 << 20, &o->rank, err);
    } else if (strcmp(name, "--all-local") == 0) {
        cli->all_local = 1;
    } else if (strcmp(name, "--strategy") == 0) {
        return prof_parse_int("--strategy", val, 1, 1 << 20, &o->strategy, err);
    } else if (strcmp(name, "--iterations") == 0) {
        return prof_parse_int("--iterations", val, 1, 100000, &o->iterations, err);
    } else if (strcmp(name, "--warmup") == 0) {
        return prof_parse_int("--warmup", val, 0, 100000, &o->warmup, err);
    } else if (strcmp(name, "--gpu") == 0) {
        return prof_parse_int("--gpu", val, 0, 1023, &o->device, err);
    } else if (strcmp(name, "--format") == 0) {
        return prof_parse_choice("--format", val, formats, 2, &o->json, err);
    } else if (strcmp(name, "--mode") == 0) {
        return prof_parse_choice("--mode", val, modes, 3, &o->mode, err);
    } else if (strcmp(name, "--dry-run") == 0) {
        o->dry_run = 1;
    } else if (strcmp(name, "--spawn") == 0) {
        return prof_parse_int("--spawn", val, 1, 1024, &o->spawn, err);
    } else if (strcmp(name, "--rank-order") == 0) {
        return prof_parse_choice("--rank-order", val, orders, 2, &o->order, err);
    } else if (strcmp(name, "--timeout") == 0) {
        int t, rc;
        if ((rc = prof_parse_int("--timeout", val, 1, 86400, &t, err)) != UTIL_OK)
            return rc;
        o->timeout_s = t;
    } else {
        return PROF_NOT_OPTION;
    }
    return UTIL_OK;
}

int launch_parse_args(int argc, char **argv, launch_options *o,
                      util_error *err)
{
    static const char *const valued[] = {
        "--plan", "--output", "-o", "--rank", "--strategy", "--iterations",
        "--warmup", "--gpu", "--format", "--mode", "--spawn", "--rank-order",
        "--timeout"};
    launch_cli cli = {o, 0};
    prof_flags f = {&o->quiet, &o->verbose, &o->help, &o->version};
    int rc, all_local;

    launch_options_init(o);
    rc = prof_walk_args(argc, argv, valued, sizeof valued / sizeof valued[0],
                        launch_option, &cli, &f, err);
    all_local = cli.all_local;
    if (rc != UTIL_OK || o->help || o->version)
        return rc;
    if (!o->plan)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "missing required option '--plan'");
    if (all_local && o->rank >= 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "options '--rank' and '--all-local' exclude each other");
    if (o->rank >= 0 && o->mode == LAUNCH_MODE_EXECUTED)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "options '--rank' and '--mode executed' exclude each "
                              "other (a rank runs one stage, composed)");
    if (o->spawn > 0 && (o->rank >= 0 || o->mode != LAUNCH_MODE_AUTO))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "option '--spawn' excludes '--rank' and '--mode' "
                              "(every rank runs its own part)");
    if (o->dry_run && o->json)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "options '--dry-run' and '--format json' exclude each "
                              "other (the dry run prints text)");
    if (o->quiet && o->verbose)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "options '--quiet' and '--verbose' exclude each other");
    return UTIL_OK;
}
