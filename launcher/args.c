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

int launch_parse_args(int argc, char **argv, launch_options *o,
                      util_error *err)
{
    static const char *const valued[] = {
        "--plan", "--output", "-o", "--rank", "--strategy", "--iterations",
        "--warmup", "--gpu", "--format", "--mode", "--spawn", "--rank-order",
        "--timeout"};
    int i, rc, all_local = 0;

    launch_options_init(o);
    if ((rc = prof_repeated_option(argc, argv, valued, sizeof valued / sizeof valued[0],
                                   err)) != UTIL_OK)
        return rc;
    for (i = 1; i < argc; i++) {
        char name[64];
        const char *val;

        if ((rc = prof_next_option(argc, argv, &i, valued,
                                   sizeof valued / sizeof valued[0], name,
                                   sizeof name, &val, err)) != UTIL_OK)
            return rc;
        if (strcmp(name, "--plan") == 0) {
            o->plan = val;
        } else if (strcmp(name, "--output") == 0 || strcmp(name, "-o") == 0) {
            o->output = val;
        } else if (strcmp(name, "--rank") == 0) {
            if ((rc = prof_parse_int("--rank", val, 0, 1 << 20, &o->rank, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--all-local") == 0) {
            all_local = 1;
        } else if (strcmp(name, "--strategy") == 0) {
            if ((rc = prof_parse_int("--strategy", val, 1, 1 << 20, &o->strategy, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--iterations") == 0) {
            if ((rc = prof_parse_int("--iterations", val, 1, 100000, &o->iterations, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--warmup") == 0) {
            if ((rc = prof_parse_int("--warmup", val, 0, 100000, &o->warmup, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--gpu") == 0) {
            if ((rc = prof_parse_int("--gpu", val, 0, 1023, &o->device, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--format") == 0) {
            if (strcmp(val, "json") == 0)
                o->json = 1;
            else if (strcmp(val, "table") == 0)
                o->json = 0;
            else
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "option '--format' expects 'table' or "
                                      "'json', got '%s'", val);
        } else if (strcmp(name, "--mode") == 0) {
            if (strcmp(val, "auto") == 0)
                o->mode = LAUNCH_MODE_AUTO;
            else if (strcmp(val, "executed") == 0)
                o->mode = LAUNCH_MODE_EXECUTED;
            else if (strcmp(val, "composed") == 0)
                o->mode = LAUNCH_MODE_COMPOSED;
            else
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "option '--mode' expects 'auto', 'executed' "
                                      "or 'composed', got '%s'", val);
        } else if (strcmp(name, "--dry-run") == 0) {
            o->dry_run = 1;
        } else if (strcmp(name, "--spawn") == 0) {
            if ((rc = prof_parse_int("--spawn", val, 1, 1024, &o->spawn, err)) != UTIL_OK)
                return rc;
        } else if (strcmp(name, "--rank-order") == 0) {
            if (strcmp(val, "megatron") == 0)
                o->order = LAUNCH_ORDER_MEGATRON;
            else if (strcmp(val, "plan") == 0)
                o->order = LAUNCH_ORDER_PLAN;
            else
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "option '--rank-order' expects 'megatron' or "
                                      "'plan', got '%s'", val);
        } else if (strcmp(name, "--timeout") == 0) {
            int t;
            if ((rc = prof_parse_int("--timeout", val, 1, 86400, &t, err)) != UTIL_OK)
                return rc;
            o->timeout_s = t;
        } else if (strcmp(name, "--quiet") == 0 || strcmp(name, "-q") == 0) {
            o->quiet = 1;
        } else if (strcmp(name, "--verbose") == 0 || strcmp(name, "-v") == 0) {
            o->verbose = 1;
        } else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            o->help = 1;
        } else if (strcmp(name, "--version") == 0) {
            o->version = 1;
        } else if (argv[i][0] == '-') {
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "unknown option '%s'", argv[i]);
        } else {
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "unexpected argument '%s'", argv[i]);
        }
    }
    if (o->help || o->version)
        return UTIL_OK;
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
