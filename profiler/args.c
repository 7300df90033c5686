/* profiler/args.c: the command line of hetplan-profile. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

void prof_options_init(prof_options *o)
{
    static const int def[] = {1, 2, 4, 8};
    int i;

    memset(o, 0, sizeof *o);
    for (i = 0; i < 4; i++) {
        o->tp[i] = def[i];
        o->mbs[i] = def[i];
    }
    o->ntp = 4;
    o->nmbs = 4;
    o->warmup = 5;
    o->repeats = 20;
}

int prof_parse_int(const char *opt, const char *s, int lo, int hi, int *out,
                   util_error *err)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "option '%s' expects an integer in %d..%d, got '%s'",
                              opt, lo, hi, s);
    *out = (int)v;
    return UTIL_OK;
}

int prof_parse_choice(const char *opt, const char *s, const char *const *names,
                      int n, int *out, util_error *err)
{
    char list[200];
    size_t used = 0;
    int k;

    for (k = 0; k < n; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = k;
            return UTIL_OK;
        }
    list[0] = '\0';
    for (k = 0; k < n && used < sizeof list; k++) {
        int w = snprintf(list + used, sizeof list - used, "%s'%s'",
                         k == 0 ? "" : k == n - 1 ? " or " : ", ", names[k]);
        used += w > 0 ? (size_t)w : 0;
    }
    return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                          "option '%s' expects %s, got '%s'", opt, list, s);
}

int prof_parse_int_list(const char *opt, const char *s, int lo, int hi,
                        int *out, int cap, int *n, util_error *err)
{
    char item[32];
    const char *p = s;
    int cnt = 0, i, j, v = 0, rc;

    *n = 0;
    if (*s == '\0')
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "option '%s' expects a comma-separated list of "
                              "integers, got ''", opt);
    while (1) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 0 || len >= sizeof item)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "option '%s' expects a comma-separated list "
                                  "of integers in %d..%d, got '%s'",
                                  opt, lo, hi, s);
        memcpy(item, p, len);
        item[len] = '\0';
        if ((rc = prof_parse_int(opt, item, lo, hi, &v, err)) != UTIL_OK)
            return rc;
        for (i = 0; i < cnt && out[i] != v; i++)
            ;
        if (i == cnt) {
            if (cnt >= cap)
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "option '%s' takes at most %d values",
                                      opt, cap);
            /* insertion keeps the list sorted */
            for (j = cnt; j > 0 && out[j - 1] > v; j--)
                out[j] = out[j - 1];
            out[j] = v;
            cnt++;
        }
        if (!c)
            break;
        p = c + 1;
    }
    *n = cnt;
    return UTIL_OK;
}

/* Option name and inline value of "--name=value"; *val NULL otherwise. */
static void split(const char *arg, char *name, size_t n, const char **val)
{
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);

    if (len >= n)
        len = n - 1;
    memcpy(name, arg, len);
    name[len] = '\0';
    *val = eq ? eq + 1 : NULL;
}

int prof_next_option(int argc, char **argv, int *i,
                     const char *const *valued, size_t nvalued, char *name,
                     size_t n, const char **val, util_error *err)
{
    size_t j;
    int takes = 0;

    split(argv[*i], name, n, val);
    for (j = 0; j < nvalued; j++)
        if (strcmp(name, valued[j]) == 0)
            takes = 1;
    if (takes && !*val) {
        if (*i + 1 >= argc)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "option '%s' needs a value", name);
        *val = argv[++*i];
    } else if (!takes && *val) {
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "option '%s' takes no value", name);
    }
    return UTIL_OK;
}

int prof_repeated_option(int argc, char **argv, const char *const *valued,
                         size_t nvalued, util_error *err)
{
    char seen[32], name[64];
    const char *val;
    size_t j;
    int i;

    if (nvalued > sizeof seen)
        nvalued = sizeof seen;
    memset(seen, 0, sizeof seen);
    for (i = 1; i < argc; i++) {
        split(argv[i], name, sizeof name, &val);
        if (strcmp(name, "-o") == 0)
            snprintf(name, sizeof name, "--output");
        for (j = 0; j < nvalued; j++)
            if (strcmp(name, valued[j]) == 0)
                break;
        if (j == nvalued)
            continue;
        if (val == NULL)
            i++; /* its value */
        if (seen[j])
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "option '%s' given more than once", name);
        seen[j] = 1;
    }
    return UTIL_OK;
}

int prof_walk_args(int argc, char **argv, const char *const *valued,
                   size_t nvalued, prof_option_fn opt, void *ctx,
                   const prof_flags *flags, util_error *err)
{
    int i, rc;

    if ((rc = prof_repeated_option(argc, argv, valued, nvalued, err)) != UTIL_OK)
        return rc;
    for (i = 1; i < argc; i++) {
        char name[64];
        const char *val;

        if ((rc = prof_next_option(argc, argv, &i, valued, nvalued, name,
                                   sizeof name, &val, err)) != UTIL_OK)
            return rc;
        if (strcmp(name, "--quiet") == 0 || strcmp(name, "-q") == 0) {
            *flags->quiet = 1;
        } else if (strcmp(name, "--verbose") == 0 || strcmp(name, "-v") == 0) {
            *flags->verbose = 1;
        } else if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            *flags->help = 1;
        } else if (strcmp(name, "--version") == 0) {
            *flags->version = 1;
        } else if ((rc = opt(ctx, name, val, err)) != PROF_NOT_OPTION) {
            if (rc != UTIL_OK)
                return rc;
        } else if (argv[i][0] == '-') {
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "unknown option '%s'", argv[i]);
        } else {
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "unexpected argument '%s'", argv[i]);
        }
    }
    return UTIL_OK;
}

/* One option of hetplan-profile (prof_option_fn; ctx: prof_options). */
static int profile_option(void *ctx, const char *name, const char *val,
                          util_error *err)
{
    prof_options *o = ctx;

    if (strcmp(name, "--model") == 0) {
        o->model = val;
    } else if (strcmp(name, "--output") == 0 || strcmp(name, "-o") == 0) {
        o->output = val;
    } else if (strcmp(name, "--device-type") == 0) {
        if (val[0] == '\0' || strlen(val) > 31)
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "option '--device-type' expects a name of "
                                  "1 to 31 characters, got '%s'", val);
        o->device_type = val;
    } else if (strcmp(name, "--tp") == 0) {
        return prof_parse_int_list("--tp", val, 1, 64, o->tp, PROF_MAX_LIST,
                                   &o->ntp, err);
    } else if (strcmp(name, "--mbs") == 0) {
        return prof_parse_int_list("--mbs", val, 1, 4096, o->mbs, PROF_MAX_LIST,
                                   &o->nmbs, err);
    } else if (strcmp(name, "--dtype") == 0) {
        static const char *const dtypes[] = {"fp16", "bf16"};
        int k = 0, rc;
        if ((rc = prof_parse_choice("--dtype", val, dtypes, 2, &k, err)) != UTIL_OK)
            return rc;
        o->dtype = k + 1; /* 0 is the model's */
    } else if (strcmp(name, "--warmup") == 0) {
        return prof_parse_int("--warmup", val, 0, 100000, &o->warmup, err);
    } else if (strcmp(name, "--repeats") == 0) {
        return prof_parse_int("--repeats", val, 1, 100000, &o->repeats, err);
    } else if (strcmp(name, "--gpu") == 0) {
        return prof_parse_int("--gpu", val, 0, 1023, &o->device, err);
    } else if (strcmp(name, "--no-bandwidth") == 0) {
        o->skip_bandwidth = 1;
    } else {
        return PROF_NOT_OPTION;
    }
    return UTIL_OK;
}

int prof_parse_args(int argc, char **argv, prof_options *o, util_error *err)
{
    static const char *const valued[] = {
        "--model", "--output", "-o", "--tp", "--mbs", "--dtype", "--warmup",
        "--repeats", "--gpu", "--device-type"};
    prof_flags f = {&o->quiet, &o->verbose, &o->help, &o->version};
    int rc;

    prof_options_init(o);
    rc = prof_walk_args(argc, argv, valued, sizeof valued / sizeof valued[0],
                        profile_option, o, &f, err);
    if (rc != UTIL_OK || o->help || o->version)
        return rc;
    if (!o->model)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "missing required option '--model'");
    if (!o->output)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "missing required option '--output'");
    if (o->quiet && o->verbose)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "options '--quiet' and '--verbose' exclude each other");
    return UTIL_OK;
}

static fmt_warnings key_warnings;
static const char *key_tool = "";

static void print_key_warnings(void)
{
    char buf[1024];
    int k;

    for (k = 0; k < key_warnings.n; k++) {
        util_error_format(&key_warnings.items[k], buf, sizeof buf);
        fprintf(stderr, "%s: warning: %s\n", key_tool, buf);
    }
    if (key_warnings.dropped > 0)
        fprintf(stderr, "%s: warning: %d more unknown keys not shown\n", key_tool,
                key_warnings.dropped);
    fmt_warnings_use(NULL);
    fmt_warnings_free(&key_warnings);
}

void prof_warn_unknown_keys(const char *tool)
{
    key_tool = tool;
    fmt_warnings_use(&key_warnings);
    atexit(print_key_warnings);
}
