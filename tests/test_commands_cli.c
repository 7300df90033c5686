/* tests/test_commands_cli.c: the planner command line (docs/cli.md), run as a real
 * process.  Each test gets a fresh temporary directory; the planner runs
 * with its working directory at the repository root (so the shipped
 * examples are named "examples/...") and its stdout and stderr captured
 * into files.  Exit codes, messages and the plan JSON are checked. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "costmodel.h"
#include "plan.h"
#include "testutil.h"

#define CLUSTER "examples/amp-het.json"
#define MODEL "examples/gpt2-amp.json"
#define STRATS "examples/strategies-amp-het.json"
#define AMP_PROFILES TU_DATA "/amp/profiles.json"
#define NGPUS 16   /* GPUs of examples/amp-het.json */
#define NLAYERS 30 /* layers of examples/gpt2-amp.json */
#define PATHN 4096
#define MAXARGS 64

/* ---- temporary directories ------------------------------------------- */

static char top_dir[PATHN]; /* made by main, removed at the end */
static char work_dir[PATHN]; /* this test's files: inputs and outputs */
static char cap_dir[PATHN];  /* this test's captured stdout/stderr */
static int nruns;
static const char *stdout_target; /* NULL: capture stdout; else open this */

/* Two strings joined by sep into buf (PATHN bytes); too long is a failure. */
static void join(char *buf, const char *a, const char *sep, const char *b)
{
    int k = snprintf(buf, PATHN, "%s%s%s", a, sep, b);

    ck_assert_msg(k > 0 && k < PATHN, "path too long: %s%s%s", a, sep, b);
}

static void setup(void)
{
    char base[PATHN];

    join(base, top_dir, "/", "t.XXXXXX");
    ck_assert_msg(mkdtemp(base) != NULL, "mkdtemp under %s: %s", top_dir,
                  strerror(errno));
    join(work_dir, base, "/", "work");
    join(cap_dir, base, "/", "cap");
    ck_assert_int_eq(mkdir(work_dir, 0700), 0);
    ck_assert_int_eq(mkdir(cap_dir, 0700), 0);
    nruns = 0;
}

/* Absolute path of name inside this test's work directory. */
static const char *wpath(char *buf, const char *name)
{
    join(buf, work_dir, "/", name);
    return buf;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0, got;

    ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");

    ck_assert_msg(f != NULL, "cannot create %s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

/* Write text as work_dir/name; returns the absolute path in buf. */
static const char *put_file(char *buf, const char *name, const char *text)
{
    wpath(buf, name);
    write_text(buf, text);
    return buf;
}

/* Number of entries under dir, recursively; their names go to list. */
static int count_entries(const char *dir, char *list, size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    char sub[PATHN];
    int k = 0;
    size_t used = strlen(list);

    ck_assert_msg(d != NULL, "cannot open directory %s", dir);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        if (used + strlen(sub) + 2 < n) {
            snprintf(list + used, n - used, "%s ", sub);
            used = strlen(list);
        }
        k++;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            k += count_entries(sub, list, n);
            used = strlen(list);
        }
    }
    closedir(d);
    return k;
}

/* ---- running the planner --------------------------------------------- */

typedef struct run {
    int status; /* exit code; 128 + signal when killed */
    char *out;  /* captured stdout, NUL-terminated */
    char *err;  /* captured stderr */
    char cmd[1024];
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Run HETPLAN_PLANNER with the given arguments (NULL-terminated), no
 * shell, stdin from /dev/null, cwd at the repository root. */
static void run_planner(run *r, const char *first, ...)
{
    char *argv[MAXARGS + 2];
    char outp[PATHN], errp[PATHN], num[16];
    const char *a;
    va_list ap;
    int argc = 0, i, st = 0;
    size_t used;
    pid_t pid;

    memset(r, 0, sizeof *r);
    argv[argc++] = strdup(HETPLAN_PLANNER);
    snprintf(r->cmd, sizeof r->cmd, "planner");
    va_start(ap, first);
    for (a = first; a != NULL; a = va_arg(ap, const char *)) {
        ck_assert_int_lt(argc, MAXARGS);
        argv[argc++] = strdup(a);
        used = strlen(r->cmd);
        snprintf(r->cmd + used, sizeof r->cmd - used, " %s", a);
    }
    va_end(ap);
    argv[argc] = NULL;
    for (i = 0; i < argc; i++)
        ck_assert_ptr_nonnull(argv[i]);
    nruns++;
    snprintf(num, sizeof num, "%d", nruns);
    join(outp, cap_dir, "/stdout.", num);
    join(errp, cap_dir, "/stderr.", num);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fi = open("/dev/null", O_RDONLY);
        int fo = stdout_target != NULL ? open(stdout_target, O_WRONLY)
                                       : open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fi < 0 || fo < 0 || fe < 0 || dup2(fi, 0) < 0 || dup2(fo, 1) < 0 ||
            dup2(fe, 2) < 0 || chdir(HETPLAN_SOURCE_DIR) != 0)
            _exit(126);
        execv(HETPLAN_PLANNER, argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
    for (i = 0; i < argc; i++)
        free(argv[i]);
    if (WIFEXITED(st))
        r->status = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        r->status = 128 + WTERMSIG(st);
    else
        r->status = -1;
    r->out = stdout_target != NULL ? strdup("") : read_all(outp);
    ck_assert_ptr_nonnull(r->out);
    r->err = read_all(errp);
    ck_assert_msg(r->status != 126 && r->status != 127,
                  "could not run %s (status %d)", HETPLAN_PLANNER, r->status);
    ck_assert_msg(r->status < 128, "'%s' died from signal %d; stderr: %.400s",
                  r->cmd, r->status - 128, r->err);
}

#define PLANNER(r, ...) run_planner((r), __VA_ARGS__, (const char *)NULL)
/* PLANNER, then expect_usage (a usage error naming key1 and key2). */
#define USAGE_ERROR(r, key1, key2, ...)                                       \
    (PLANNER((r), __VA_ARGS__), expect_usage((r), (key1), (key2)), run_free(r))
/* PLANNER, then expect_input (an input error in file at path). */
#define INPUT_ERROR(r, file, path, key1, key2, ...)                           \
    (PLANNER((r), __VA_ARGS__),                                               \
     expect_input((r), (file), (path), (key1), (key2)), run_free(r))

static void expect_exit(const run *r, int code)
{
    ck_assert_msg(r->status == code,
                  "'%s' exited %d, expected %d; stderr: %.600s", r->cmd,
                  r->status, code, r->err);
}

static void expect_in(const char *hay, const char *needle, const char *what,
                      const run *r)
{
    ck_assert_msg(strstr(hay, needle) != NULL,
                  "%s of '%s' lacks \"%s\": %.600s", what, r->cmd, needle, hay);
}

/* The hint line of a usage error of r: "try 'planner COMMAND --help'"
 * for a subcommand named first, else "try 'planner --help'". */
static void usage_hint(const run *r, char *buf, size_t n)
{
    static const char *const names[] = {"plan", "evaluate", "calibrate",
                                        "decentralized", "whatif", "replan",
                                        "export", "report"};
    const char *first = r->cmd + strlen("planner");
    size_t k, len;

    snprintf(buf, n, "try 'planner --help'");
    if (*first != ' ')
        return;
    first++;
    len = strcspn(first, " ");
    for (k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strlen(names[k]) == len && strncmp(first, names[k], len) == 0)
            snprintf(buf, n, "try 'planner %s --help'", names[k]);
}

/* stderr of a failed run: exactly one "planner: " message (plus, for
 * usage errors, the hint naming the command's help), lowercase (its first
 * letter, after the "'FILE': " and "PATH: " prefixes when given), no
 * trailing full stop on any line, and the given substrings present. */
static void expect_message(const run *r, const char *file, const char *path,
                           const char *key1, const char *key2)
{
    const char *e = r->err, *msg, *nl;
    char pre[PATHN + 8], hint[64];
    size_t len;
    int lines = 0;

    ck_assert_msg(strncmp(e, "planner: ", 9) == 0,
                  "stderr of '%s' does not start with 'planner: ': %.400s",
                  r->cmd, e);
    for (msg = e; *msg != '\0'; msg = nl + 1) {
        nl = strchr(msg, '\n');
        ck_assert_msg(nl != NULL, "stderr of '%s' does not end in a newline: %.400s",
                      r->cmd, e);
        len = (size_t)(nl - msg);
        ck_assert_msg(len > 0, "stderr of '%s' has an empty line: %.400s", r->cmd,
                      e);
        ck_assert_msg(msg[len - 1] != '.' && msg[len - 1] != ' ',
                      "stderr line of '%s' ends with '%c': %.*s", r->cmd,
                      msg[len - 1], (int)len, msg);
        usage_hint(r, hint, sizeof hint);
        if (len != strlen(hint) || strncmp(msg, hint, len) != 0) {
            ck_assert_msg(strncmp(msg, "planner: ", 9) == 0,
                          "stderr line of '%s' lacks the 'planner: ' prefix: %.*s",
                          r->cmd, (int)len, msg);
            lines++;
        }
    }
    ck_assert_msg(lines == 1, "'%s' printed %d messages on stderr: %.600s",
                  r->cmd, lines, e);
    msg = e + 9;
    if (file != NULL) {
        snprintf(pre, sizeof pre, "'%s': ", file);
        ck_assert_msg(strncmp(msg, pre, strlen(pre)) == 0,
                      "message of '%s' does not start with the file name %s: %.400s",
                      r->cmd, pre, e);
        msg += strlen(pre);
    }
    if (path != NULL && path[0] != '\0') {
        snprintf(pre, sizeof pre, "%s: ", path);
        ck_assert_msg(strncmp(msg, pre, strlen(pre)) == 0,
                      "message of '%s' does not name the JSON path '%s': %.400s",
                      r->cmd, path, e);
        msg += strlen(pre);
    }
    ck_assert_msg(!(*msg >= 'A' && *msg <= 'Z'),
                  "message of '%s' does not start in lowercase: %.400s", r->cmd, e);
    if (key1 != NULL)
        expect_in(e, key1, "stderr", r);
    if (key2 != NULL)
        expect_in(e, key2, "stderr", r);
}

/* A usage error: exit 2 and a well-formed message with the key words. */
static void expect_usage(const run *r, const char *key1, const char *key2)
{
    char hint[64];

    expect_exit(r, 2);
    expect_message(r, NULL, NULL, key1, key2);
    usage_hint(r, hint, sizeof hint);
    expect_in(r->err, hint, "stderr", r);
    ck_assert_msg(r->out[0] == '\0', "'%s' printed on stdout: %.200s", r->cmd,
                  r->out);
}

/* An input error: exit 3, the file, the JSON path, the key words. */
static void expect_input(const run *r, const char *file, const char *path,
                         const char *key1, const char *key2)
{
    expect_exit(r, 3);
    expect_message(r, file, path, key1, key2);
    ck_assert_msg(r->out[0] == '\0', "'%s' printed on stdout: %.200s", r->cmd,
                  r->out);
}

/* Each row of bad: an option, a value it rejects, two words the usage
 * error of "planner --cluster CLUSTER --model MODEL OPTION VALUE" names. */
static void expect_bad_values(const char *const (*bad)[4], size_t n)
{
    size_t i;
    run r;

    for (i = 0; i < n; i++)
        USAGE_ERROR(&r, bad[i][2], bad[i][3], "--cluster", CLUSTER, "--model", MODEL,
                    bad[i][0], bad[i][1]);
}

/* ---- JSON helpers ---------------------------------------------------- */

static cJSON *parse_json(const char *text, const char *what)
{
    cJSON *j = cJSON_Parse(text);

    ck_assert_msg(j != NULL, "%s is not valid JSON: %.300s", what, text);
    return j;
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    ck_assert_msg(v != NULL, "JSON object lacks \"%s\"", key);
    return v;
}

static double get_num(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);

    ck_assert_msg(cJSON_IsNumber(v), "\"%s\" is not a number", key);
    return v->valuedouble;
}

static int get_int(const cJSON *obj, const char *key)
{
    double d = get_num(obj, key);

    ck_assert_msg(d == floor(d), "\"%s\" = %g is not an integer", key, d);
    return (int)d;
}

static const char *get_str(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);

    ck_assert_msg(cJSON_IsString(v), "\"%s\" is not a string", key);
    return v->valuestring;
}

static const cJSON *get_arr(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);

    ck_assert_msg(cJSON_IsArray(v), "\"%s\" is not an array", key);
    return v;
}

/* Remove the "elapsed_s" member (key and number) from plan JSON text, in
 * place; exactly one must be present. */
static void strip_elapsed(char *s)
{
    char *k = strstr(s, "\"elapsed_s\"");
    char *v;

    ck_assert_msg(k != NULL, "no \"elapsed_s\" in the plan");
    v = k + strlen("\"elapsed_s\"");
    while (*v == ' ' || *v == '\t' || *v == ':')
        v++;
    ck_assert_msg(strchr("-0123456789n", *v) != NULL,
                  "\"elapsed_s\" is not followed by a number: %.40s", k);
    while (*v != '\0' && strchr("+-.0123456789eEnul", *v) != NULL)
        v++;
    memmove(k, v, strlen(v) + 1);
    ck_assert_msg(strstr(s, "\"elapsed_s\"") == NULL,
                  "more than one \"elapsed_s\" in the plan");
}

/* 64 lowercase hex digits (docs/plan-format.md, "inputs"). */
static void expect_sha256(const char *hex, const char *what)
{
    ck_assert_msg(strlen(hex) == 64 && strspn(hex, "0123456789abcdef") == 64,
                  "%s is not 64 lowercase hex digits: '%s'", what, hex);
}

/* Checks shared by every plan of examples/amp-het.json and gpt2-amp.json:
 * schema, n strategies ranked by predicted_s, degrees, boundaries and
 * ranks consistent with 16 GPUs and 30 layers. */
static const cJSON *check_plan(const cJSON *plan, int n)
{
    const cJSON *strats, *s, *b, *ranks, *rk;
    double prev = -1.0, t;
    int i = 0, tp, dp, pp, k, idle, seen[NGPUS];

    ck_assert_str_eq(get_str(plan, "schema"), "hetplan-plan/1");
    ck_assert_str_eq(get_str(plan, "schema"), PLAN_SCHEMA);
    ck_assert_int_eq(get_int(get(plan, "model"), "layers"), NLAYERS);
    ck_assert_int_eq(get_int(get(plan, "cluster"), "devices"), NGPUS);
    strats = get_arr(plan, "strategies");
    if (n >= 0)
        ck_assert_int_eq(cJSON_GetArraySize(strats), n);
    ck_assert_int_gt(cJSON_GetArraySize(strats), 0);
    cJSON_ArrayForEach(s, strats)
    {
        ck_assert_int_eq(get_int(s, "rank"), i + 1);
        t = get_num(s, "predicted_s");
        ck_assert_msg(t > 0 && isfinite(t), "strategy %d: predicted_s %g", i, t);
        ck_assert_msg(t >= prev, "strategy %d: predicted_s %.17g after %.17g "
                      "(not sorted ascending)", i, t, prev);
        prev = t;
        tp = get_int(s, "tp");
        dp = get_int(s, "dp");
        pp = get_int(s, "pp");
        ck_assert_int_ge(get_int(s, "mbs"), 1);
        /* the search may leave GPUs idle: the ranks and the "idle" list
         * together account for every GPU */
        idle = 0;
        cJSON_ArrayForEach(rk, get_arr(s, "idle"))
            idle += cJSON_GetArraySize(get_arr(rk, "gpus"));
        ck_assert_msg(tp * dp * pp + idle == NGPUS, "strategy %d: %d*%d*%d + %d "
                      "idle != %d", i, tp, dp, pp, idle, NGPUS);
        b = get_arr(s, "stage_boundaries");
        ck_assert_int_eq(cJSON_GetArraySize(b), pp + 1);
        ck_assert_int_eq((int)cJSON_GetArrayItem(b, 0)->valuedouble, 0);
        ck_assert_int_eq((int)cJSON_GetArrayItem(b, pp)->valuedouble, NLAYERS);
        for (k = 0; k < pp; k++)
            ck_assert_msg(cJSON_GetArrayItem(b, k)->valuedouble <
                              cJSON_GetArrayItem(b, k + 1)->valuedouble,
                          "strategy %d: stage_boundaries not increasing at %d",
                          i, k);
        ranks = get_arr(s, "ranks");
        ck_assert_int_eq(cJSON_GetArraySize(ranks), tp * dp * pp);
        memset(seen, 0, sizeof seen);
        k = 0;
        cJSON_ArrayForEach(rk, ranks)
        {
            int d = get_int(rk, "device");
            ck_assert_int_eq(get_int(rk, "rank"), k);
            ck_assert_msg(d >= 0 && d < NGPUS && !seen[d],
                          "strategy %d: rank %d on device %d (bad or reused)", i,
                          k, d);
            seen[d] = 1;
            k++;
        }
        i++;
    }
    return strats;
}

/* ---- --help, --version ----------------------------------------------- */

START_TEST(help_lists_exit_codes)
{
    static const char *const forms[] = {"--help", "-h"};
    const char *codes;
    char want[8];
    size_t f;
    int d;
    run r;

    for (f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        PLANNER(&r, forms[f]);
        expect_exit(&r, 0);
        ck_assert_str_eq(r.err, "");
        expect_in(r.out, "usage: planner", "stdout", &r);
        expect_in(r.out, "evaluate", "stdout", &r);
        expect_in(r.out, "--cluster", "stdout", &r);
        expect_in(r.out, "--param", "stdout", &r);
        codes = strstr(r.out, "exit codes");
        ck_assert_msg(codes != NULL, "--help has no exit-code section: %s", r.out);
        for (d = 0; d <= 5; d++) {
            const char *p = codes;
            int found = 0;
            snprintf(want, sizeof want, "%d ", d);
            while ((p = strstr(p, want)) != NULL && !found) {
                found = (p[-1] == ' ' || p[-1] == ',') && p[2] >= 'a' && p[2] <= 'z';
                p++;
            }
            ck_assert_msg(found, "--help does not explain exit code %d: %s", d,
                          codes);
        }
        expect_in(codes, "0 success", "exit codes", &r);
        expect_in(codes, "5 cannot write the output", "exit codes", &r);
        run_free(&r);
    }
}
END_TEST

START_TEST(version)
{
    run r;

    PLANNER(&r, "--version");
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    expect_in(r.out, HETPLAN_VERSION, "stdout", &r);
    expect_in(r.out, "planner", "stdout", &r);
    ck_assert_msg(strchr(r.out, '\n') == r.out + strlen(r.out) - 1,
                  "--version should print one line: %s", r.out);
    run_free(&r);
}
END_TEST

/* ---- usage errors: exit 2 -------------------------------------------- */

START_TEST(usage_unknown_option)
{
    run r;

    USAGE_ERROR(&r, "unknown option", "--frobnicate", "--frobnicate", "--cluster",
                CLUSTER, "--model", MODEL);
    USAGE_ERROR(&r, "unknown option", "--frobnicate", "--cluster", CLUSTER,
                "--frobnicate", "1", "--model", MODEL);
    USAGE_ERROR(&r, "unknown command", "frobnicate", "frobnicate", "--cluster",
                CLUSTER, "--model", MODEL);
    USAGE_ERROR(&r, "stray", NULL, "--cluster", CLUSTER, "--model", MODEL, "stray");
}
END_TEST

/* A single-valued option given twice is a mistake (which one was meant?),
 * in every command and in both spellings; --param and --slow are the
 * documented repeatable options, flags may be repeated. */
START_TEST(usage_repeated_option)
{
    run r;

    USAGE_ERROR(&r, "'--cluster'", "more than once", "--cluster", CLUSTER, "--cluster",
                "examples/h100-node4.json", "--model", MODEL);
    USAGE_ERROR(&r, "'--top-k'", "more than once", "--cluster", CLUSTER, "--model",
                MODEL, "--top-k=3", "--top-k", "2");
    USAGE_ERROR(&r, "'--output'", "more than once", "--cluster", CLUSTER, "--model",
                MODEL, "-o", "a.json", "--output", "b.json");
    USAGE_ERROR(&r, "'--format'", "more than once", "--cluster", CLUSTER, "--model",
                MODEL, "--format", "json", "--format", "table");
    USAGE_ERROR(&r, "'--objective'", "more than once", "--cluster", CLUSTER, "--model",
                MODEL, "--objective", "time", "--objective", "cost");
    USAGE_ERROR(&r, "'--strategies'", "more than once", "evaluate", "--cluster",
                CLUSTER, "--model", MODEL, "--strategies", STRATS, "--strategies",
                STRATS);
    USAGE_ERROR(&r, "'--to'", "more than once", "export", "--plan", "p.json", "--to",
                "torchrun", "--to", "megatron");
    USAGE_ERROR(&r, "'--plan'", "more than once", "whatif", "--plan", "a.json",
                "--plan", "b.json", "--slow", "0:2");
    USAGE_ERROR(&r, "'--seed'", "more than once", "decentralized", "--cluster",
                "examples/dtfm-campuses.json", "--seed", "1", "--seed", "2");
    USAGE_ERROR(&r, "'--frozen'", "more than once", "replan", "--plan", "a.json",
                "--frozen", "1", "--frozen", "2");
    USAGE_ERROR(&r, "'--output'", "more than once", "report", "--plan", "a.json",
                "--output", "a.svg", "--output", "b.svg");
    USAGE_ERROR(&r, "'--cluster'", "more than once", "calibrate", "--cluster", CLUSTER,
                "--cluster", CLUSTER, "--model", MODEL, "--trials", "t.json");
    /* --quiet and --verbose contradict each other, in every command */
    USAGE_ERROR(&r, "'--quiet' and '--verbose' exclude each other", NULL, "--cluster",
                CLUSTER, "--model", MODEL, "-q", "--verbose");
    USAGE_ERROR(&r, "'--quiet' and '--verbose' exclude each other", NULL, "export",
                "--plan", "p.json", "--to", "torchrun", "--verbose", "--quiet");
    /* repeatable: two --param and a repeated flag plan as usual */
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--top-k", "1",
            "--param", "net_eff=0.5", "--param", "net_eff=0.25", "--quiet", "--quiet");
    expect_exit(&r, 0);
    run_free(&r);
}
END_TEST

/* export --master-addr is written into every launch line: an empty or
 * blank value would start torchrun with no rendezvous host. */
START_TEST(usage_export_master_addr)
{
    static const char *const bad[] = {"", "a b", "host;x", "-h"};
    size_t i;
    run r;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        USAGE_ERROR(&r, "'--master-addr' expects a host name or an IP address", NULL,
                    "export", "--plan", "p.json", "--to", "torchrun",
                    "--master-addr", bad[i]);
    }
}
END_TEST

/* --version and 'help COMMAND' take nothing after them. */
START_TEST(usage_version_extra)
{
    run r;

    USAGE_ERROR(&r, "'extra'", "--version", "--version", "extra");
    USAGE_ERROR(&r, "'--version'", NULL, "--cluster", CLUSTER, "--version");
    USAGE_ERROR(&r, "'extra'", NULL, "help", "plan", "extra");
}
END_TEST

/* An unknown option as the last argument is still an unknown option, not
 * an option that lacks its value. */
START_TEST(usage_unknown_option_last)
{
    run r;

    USAGE_ERROR(&r, "unknown option", "--frobnicate", "--cluster", CLUSTER, "--model",
                MODEL, "--frobnicate");
}
END_TEST

START_TEST(usage_missing_cluster)
{
    run r;

    USAGE_ERROR(&r, "missing", "--cluster", "--model", MODEL);
    USAGE_ERROR(&r, "missing", "--cluster", "evaluate", "--model", MODEL,
                "--strategies", STRATS);
}
END_TEST

START_TEST(usage_missing_model)
{
    run r;

    USAGE_ERROR(&r, "missing", "--model", "--cluster", CLUSTER);
}
END_TEST

START_TEST(usage_option_without_value)
{
    static const char *const opts[] = {"--model", "--top-k", "--output",
                                       "--format", "--param", "--global-batch"};
    size_t i;
    run r;

    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        USAGE_ERROR(&r, opts[i], "value", "--cluster", CLUSTER, "--model", MODEL,
                    opts[i]);
    }
    USAGE_ERROR(&r, "--cluster", "value", "--cluster");
}
END_TEST

START_TEST(usage_bad_top_k)
{
    static const char *const bad[] = {"x", "0", "-3", "5x", "", "1e3",
                                      "99999999999999999999"};
    size_t i;
    run r;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        USAGE_ERROR(&r, "--top-k", "integer", "--cluster", CLUSTER, "--model", MODEL,
                    "--top-k", bad[i]);
}
END_TEST

START_TEST(usage_bad_enums)
{
    static const char *const bad[][4] = {
        {"--format", "xml", "--format", "xml"},
        {"--method", "greedy", "--method", "greedy"},
        {"--placement", "random", "--placement", "random"},
        {"--schedule", "zb", "--schedule", "zb"},
        {"--zero", "4", "--zero", "0..3"},
        {"--global-batch", "0", "--global-batch", "integer"},
    };

    expect_bad_values(bad, TU_N(bad));
}
END_TEST

START_TEST(usage_bad_param)
{
    static const char *const bad[][4] = {
        {"--param", "nosuch=1", "nosuch", "--param"},
        {"--param", "net_eff=abc", "net_eff", "number"},
        {"--param", "net_eff=", "net_eff", "number"},
        {"--param", "net_eff", "--param", "NAME=VALUE"},
        {"--param", "net_eff=2", "net_eff", "expected"},
        {"--param", "zero_stage=1.5", "zero_stage", "integer"},
    };

    expect_bad_values(bad, TU_N(bad));
}
END_TEST

START_TEST(usage_strategies_option)
{
    run r;

    USAGE_ERROR(&r, "--strategies", NULL, "evaluate", "--cluster", CLUSTER, "--model",
                MODEL);
    USAGE_ERROR(&r, "--strategies", "evaluate", "--cluster", CLUSTER, "--model", MODEL,
                "--strategies", STRATS);
}
END_TEST

START_TEST(usage_profile_and_amp_profile)
{
    run r;

    USAGE_ERROR(&r, "--profile", "--amp-profile", "--cluster", CLUSTER, "--model",
                MODEL, "--profile", "a.json", "--amp-profile", AMP_PROFILES);
}
END_TEST

START_TEST(usage_no_global_batch)
{
    char m[PATHN];
    run r;

    put_file(m, "nogb.json",
             "{\"name\": \"one\", \"layers\": [{\"name\": \"l\", \"kind\": "
             "\"generic\", \"params\": 1000, \"fwd_flops\": 1e6, "
             "\"out_bytes\": 1024, \"act_bytes\": 1024}]}\n");
    USAGE_ERROR(&r, "--global-batch", NULL, "--cluster", CLUSTER, "--model", m);
    USAGE_ERROR(&r, "--global-batch", NULL, "evaluate", "--cluster", CLUSTER,
                "--model", m, "--strategies", STRATS);
    /* given on the command line, the same model plans */
    PLANNER(&r, "--cluster", CLUSTER, "--model", m, "--global-batch", "16",
            "--quiet");
    expect_exit(&r, 0);
    run_free(&r);
}
END_TEST

/* ---- input errors: exit 3 -------------------------------------------- */

START_TEST(input_missing_file)
{
    char p[PATHN];
    run r;

    wpath(p, "no-such-cluster.json");
    INPUT_ERROR(&r, p, NULL, "cannot open", "no-such-cluster.json", "--cluster", p,
                "--model", MODEL);
    wpath(p, "no-such-model.json");
    INPUT_ERROR(&r, p, NULL, "cannot open", "no-such-model.json", "--cluster", CLUSTER,
                "--model", p);
    wpath(p, "no-such-strategies.json");
    INPUT_ERROR(&r, p, NULL, "cannot open", "no-such-strategies.json", "evaluate",
                "--cluster", CLUSTER, "--model", MODEL, "--strategies", p);
}
END_TEST

START_TEST(input_malformed_json)
{
    char p[PATHN];
    run r;

    put_file(p, "malformed.json",
             "{\"name\": \"x\",\n \"nodes\": [{\"name\": \"a\", \"gpus\": 4,,}]}\n");
    INPUT_ERROR(&r, p, NULL, "malformed JSON", "line 2", "--cluster", p, "--model",
                MODEL);
    put_file(p, "truncated.json", "{\"name\": \"x\", \"nodes\": [\n");
    INPUT_ERROR(&r, p, NULL, "malformed JSON", "end of input", "--cluster", p,
                "--model", MODEL);
    put_file(p, "array.json", "[1, 2]\n");
    INPUT_ERROR(&r, p, NULL, "expected a JSON object", NULL, "--cluster", p, "--model",
                MODEL);
}
END_TEST

/* A decentralized cluster file given to plan or calibrate: one message
 * that says which command reads it, not a warning for each of its keys. */
START_TEST(input_decentralized_cluster)
{
    run r;

    INPUT_ERROR(&r, "examples/dtfm-campuses.json", "nodes",
                "missing required field 'nodes'",
                "'planner decentralized --cluster examples/dtfm-campuses.json'",
                "--cluster", "examples/dtfm-campuses.json", "--model", MODEL);
    INPUT_ERROR(&r, "examples/dtfm-worldwide.json", "nodes", "planner decentralized",
                NULL, "calibrate", "--cluster", "examples/dtfm-worldwide.json",
                "--model", MODEL, "--trials", "t.json", "--profile", "p.json");
}
END_TEST

START_TEST(input_missing_nodes)
{
    char p[PATHN];
    run r;

    put_file(p, "nonodes.json", "{\"name\": \"x\"}\n");
    INPUT_ERROR(&r, p, "nodes", "missing required field", "'nodes'", "--cluster", p,
                "--model", MODEL);
}
END_TEST

START_TEST(input_negative_gpus)
{
    char p[PATHN];
    run r;

    put_file(p, "neg.json",
             "{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\", \"gpus\": -4, "
             "\"intra_gbps\": 100, \"nic_gbps\": 10}]}\n");
    INPUT_ERROR(&r, p, "nodes[0].gpus", "expected a positive integer", "-4",
                "--cluster", p, "--model", MODEL);
}
END_TEST

/* A misspelled key: a warning naming file, path and the nearest known
 * key, the run going on; under --strict (anywhere on the line, any
 * command) an input error. */
START_TEST(input_unknown_key)
{
    char p[PATHN], plan[PATHN], svg[PATHN];
    run r;

    wpath(svg, "x.svg");
    put_file(p, "typo.json",
             "{\"name\": \"t\", \"training\": {\"global_batch\": 32, "
             "\"precison\": \"bf16\"}, \"transformer\": {\"layers\": 4, "
             "\"hidden\": 256, \"heads\": 4, \"seq\": 128, \"vocab\": 1000}}\n");
    wpath(plan, "plan.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", p, "--quiet", "--output", plan);
    expect_exit(&r, 0);
    ck_assert_msg(r.out[0] == '\0', "printed on stdout: %.200s", r.out);
    expect_in(r.err, "planner: warning: '", "stderr", &r);
    expect_in(r.err, "typo.json': training.precison: unknown key 'precison', did you "
                     "mean 'precision'?\n", "stderr", &r);
    run_free(&r);
    INPUT_ERROR(&r, p, "training.precison", "unknown key 'precison'",
                "did you mean 'precision'?", "--strict", "--cluster", CLUSTER,
                "--model", p);
    /* a command reading the plan: the model it names is read again */
    INPUT_ERROR(&r, p, "training.precison", "unknown key", "precision", "report",
                "--plan", plan, "--output", svg, "--strict");
    /* a plan is not a strategies file: said once, not key by key */
    INPUT_ERROR(&r, plan, "schema", "expected a strategies file", "got a plan",
                "evaluate", "--cluster", CLUSTER, "--model", MODEL, "--strategies",
                plan);
    /* the shipped examples raise none */
    PLANNER(&r, "evaluate", "--strict", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", STRATS, "--quiet");
    expect_exit(&r, 0);
    ck_assert_msg(r.err[0] == '\0', "stderr: %.300s", r.err);
    run_free(&r);
}
END_TEST

/* evaluate takes interleaving and sequence parallelism from the file:
 * the options that set them for plan's search are refused, not ignored. */
START_TEST(usage_evaluate_strategy_features)
{
    static const char *const opts[][2] = {{"--vpp", "2"}, {"--sequence-parallel", "on"},
                                          {"--batch-tolerance", "5"}};
    size_t i;
    run r;

    for (i = 0; i < 3; i++) {
        USAGE_ERROR(&r, opts[i][0], "belong to 'planner plan'", "evaluate",
                    "--cluster", CLUSTER, "--model", MODEL, "--strategies", STRATS,
                    opts[i][0], opts[i][1]);
    }
}
END_TEST

/* A typo of a command or an option names the nearest one. */
START_TEST(usage_did_you_mean)
{
    run r;

    USAGE_ERROR(&r, "unknown command 'plna'", "did you mean 'plan'?", "plna",
                "--cluster", CLUSTER);
    USAGE_ERROR(&r, "unknown option '--clusters'", "did you mean '--cluster'?",
                "--clusters", CLUSTER, "--model", MODEL);
    USAGE_ERROR(&r, "unknown option '--too'", "did you mean '--to'?", "export",
                "--too", "hostfile");
    /* "help COMMAND" is "COMMAND --help" */
    PLANNER(&r, "help", "export");
    expect_exit(&r, 0);
    expect_in(r.out, "usage: planner export --plan FILE", "stdout", &r);
    run_free(&r);
    /* nothing near: the commands are listed */
    USAGE_ERROR(&r, "unknown command 'frobnicate'", "(commands: plan, evaluate,",
                "frobnicate");
}
END_TEST

/* Option values that only the inputs show wrong are still usage errors:
 * exit 2, the option, the value and what it expects. */
START_TEST(usage_values_against_inputs)
{
    char plan[PATHN];
    run r;

    /* 64 devices: divisors 1, 2, 4, 8, 16, 32, 64 */
    USAGE_ERROR(&r, "option '--pp'", "(1, 2, 4, 8, 16, 32, 64), got 7",
                "decentralized", "--cluster", "examples/dtfm-datacenter.json",
                "--pp", "7", "--seconds", "5");
    wpath(plan, "plan.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--top-k", "2", "--quiet",
            "--output", plan);
    expect_exit(&r, 0);
    run_free(&r);
    USAGE_ERROR(&r, "option '--strategy' expects 1..2", "got 3", "export", "--plan",
                plan, "--to", "hostfile", "--strategy", "3");
    USAGE_ERROR(&r, "option '--strategy' expects 1..2", "got 3", "whatif", "--plan",
                plan, "--slow", "0:2", "--strategy", "3");
}
END_TEST

START_TEST(input_zero_nic)
{
    char p[PATHN];
    run r;

    put_file(p, "nic.json",
             "{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\", \"gpus\": 4, "
             "\"intra_gbps\": 100, \"nic_gbps\": 10},\n"
             "{\"name\": \"b\", \"device\": \"V100\", \"gpus\": 4, "
             "\"intra_gbps\": 100, \"nic_gbps\": 0}]}\n");
    INPUT_ERROR(&r, p, "nodes[1].nic_gbps", "expected", "positive", "--cluster", p,
                "--model", MODEL);
}
END_TEST

START_TEST(input_unknown_device)
{
    char p[PATHN];
    run r;

    put_file(p, "dev.json",
             "{\"nodes\": [{\"name\": \"a\", \"device\": \"Z9000\", \"gpus\": 4, "
             "\"intra_gbps\": 100, \"nic_gbps\": 10}]}\n");
    PLANNER(&r, "--cluster", p, "--model", MODEL);
    expect_input(&r, p, "nodes[0].device", "unknown device type", "Z9000");
    expect_in(r.err, "V100", "stderr (known types)", &r);
    run_free(&r);
}
END_TEST

START_TEST(input_total_gpus_mismatch)
{
    char p[PATHN];
    run r;

    put_file(p, "total.json",
             "{\"total_gpus\": 8, \"nodes\": [{\"name\": \"a\", \"device\": "
             "\"V100\", \"gpus\": 4, \"intra_gbps\": 100, \"nic_gbps\": 10}]}\n");
    INPUT_ERROR(&r, p, "total_gpus", "8", "4 GPUs", "--cluster", p, "--model", MODEL);
}
END_TEST

START_TEST(input_model_without_layers)
{
    char p[PATHN];
    run r;

    put_file(p, "neither.json",
             "{\"name\": \"m\", \"training\": {\"global_batch\": 8}}\n");
    INPUT_ERROR(&r, p, NULL, "expected", "'transformer' and 'layers'", "--cluster",
                CLUSTER, "--model", p);
}
END_TEST

START_TEST(input_strategy_degrees)
{
    char p[PATHN];
    run r;

    put_file(p, "degrees.json",
             "{\"strategies\": [\n"
             " {\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 7, 14, 20, 30]},\n"
             " {\"tp\": 1, \"dp\": 4, \"pp\": 2, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 15, 30]}]}\n");
    INPUT_ERROR(&r, p, "strategies[1]", "does not match", "16 GPUs", "evaluate",
                "--cluster", CLUSTER, "--model", MODEL, "--strategies", p);
}
END_TEST

START_TEST(input_strategy_boundaries)
{
    char p[PATHN];
    run r;

    put_file(p, "bounds.json",
             "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 15, 10, 20, 30]}]}\n");
    INPUT_ERROR(&r, p, "strategies[0].stage_boundaries", "expected", "increasing",
                "evaluate", "--cluster", CLUSTER, "--model", MODEL, "--strategies",
                p);
    put_file(p, "count.json",
             "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 15, 30]}]}\n");
    INPUT_ERROR(&r, p, "strategies[0].stage_boundaries", "expected", "pp + 1",
                "evaluate", "--cluster", CLUSTER, "--model", MODEL, "--strategies",
                p);
}
END_TEST

/* A strategy without stage_boundaries gets the layer assignment plan
 * would choose for its degrees and ranks: on the mixed V100/T4 cluster
 * it is no slower than the even split, and the split it reports, given
 * back explicitly, predicts the same time.  When no split fits memory
 * (GPT-NeoX-20B's 320 GB of state on 256 GB of GPUs), the strategy is
 * scored with the even split, not runnable, and stderr says why. */
START_TEST(evaluate_open_boundaries)
{
    char p[PATHN], q[PATHN], text[512];
    cJSON *doc, *doc2;
    const cJSON *s0, *s1, *b, *v;
    double t_open, t_even;
    int i = 0, prev = -1;
    run r;

    put_file(p, "open.json",
             "{\"strategies\": [\n"
             " {\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1},\n"
             " {\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 7, 15, 22, 30]}]}\n");
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL, "--strategies",
            p, "--format", "json");
    expect_exit(&r, 0);
    doc = parse_json(r.out, "evaluate output");
    run_free(&r);
    s0 = cJSON_GetArrayItem(get_arr(doc, "strategies"), 0);
    s1 = cJSON_GetArrayItem(get_arr(doc, "strategies"), 1);
    t_open = get_num(s0, "predicted_s");
    t_even = get_num(s1, "predicted_s");
    ck_assert_msg(t_open <= t_even, "chosen split %.4f s slower than even %.4f s",
                  t_open, t_even);
    b = get_arr(s0, "stage_boundaries");
    ck_assert_int_eq(cJSON_GetArraySize(b), 5);
    cJSON_ArrayForEach(v, b)
    {
        ck_assert(cJSON_IsNumber(v) && v->valueint > prev);
        prev = v->valueint;
    }
    ck_assert_int_eq(cJSON_GetArrayItem(b, 0)->valueint, 0);
    ck_assert_int_eq(prev, 30);
    i = snprintf(text, sizeof text,
                 "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, "
                 "\"mbs\": 1, \"stage_boundaries\": [%d, %d, %d, %d, %d]}]}\n",
                 cJSON_GetArrayItem(b, 0)->valueint,
                 cJSON_GetArrayItem(b, 1)->valueint,
                 cJSON_GetArrayItem(b, 2)->valueint,
                 cJSON_GetArrayItem(b, 3)->valueint, prev);
    ck_assert(i > 0 && (size_t)i < sizeof text);
    put_file(q, "given.json", text);
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL, "--strategies",
            q, "--format", "json");
    expect_exit(&r, 0);
    doc2 = parse_json(r.out, "evaluate output");
    run_free(&r);
    ck_assert_double_eq(
        get_num(cJSON_GetArrayItem(get_arr(doc2, "strategies"), 0), "predicted_s"),
        t_open);
    cJSON_Delete(doc2);
    cJSON_Delete(doc);

    put_file(p, "big.json",
             "{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 16, "
             "\"mbs\": 1}]}\n");
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model",
            "examples/gpt-neox-20b.json", "--strategies", p, "--global-batch",
            "16", "--format", "json");
    expect_exit(&r, 0);
    expect_in(r.err, "strategies[0]: no layer split for it: no split of 47 layers "
              "into 16 stages fits memory", "stderr", &r);
    doc = parse_json(r.out, "evaluate output");
    s0 = cJSON_GetArrayItem(get_arr(doc, "strategies"), 0);
    ck_assert(cJSON_IsFalse(get(s0, "runnable")));
    cJSON_Delete(doc);
    run_free(&r);
}
END_TEST

START_TEST(input_strategy_batch)
{
    char p[PATHN];
    run r;

    /* 30 samples cannot be split over dp = 4 replicas of mbs = 1 */
    put_file(p, "batch.json",
             "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 7, 14, 20, 30]}]}\n");
    INPUT_ERROR(&r, p, "strategies[0].mbs", "divisible", "30", "evaluate", "--cluster",
                CLUSTER, "--model", MODEL, "--strategies", p, "--global-batch",
                "30");
    /* the model's own global batch (32) divides */
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", p, "--quiet");
    expect_exit(&r, 0);
    run_free(&r);
}
END_TEST

/* ---- exit 4 and 5 ---------------------------------------------------- */

START_TEST(no_feasible_strategy)
{
    char c[PATHN], o[PATHN], list[PATHN];
    int n;
    run r;

    put_file(c, "t4x2.json",
             "{\"name\": \"tiny\", \"nodes\": [{\"name\": \"t\", \"device\": "
             "\"T4\", \"gpus\": 2, \"intra_gbps\": 50, \"nic_gbps\": 50}]}\n");
    /* fp16: a T4 has no bf16 units (bf16 would add a warning) */
    PLANNER(&r, "--cluster", c, "--model", "examples/llama-7b.json", "--precision",
            "fp16", "--output", wpath(o, "OUT.json"));
    expect_exit(&r, 4);
    expect_message(&r, NULL, NULL, "no strategy", NULL);
    ck_assert_str_eq(r.out, "");
    run_free(&r);
    list[0] = '\0';
    n = count_entries(work_dir, list, sizeof list);
    ck_assert_msg(n == 1, "expected only t4x2.json in the work dir, found: %s", list);
}
END_TEST

START_TEST(output_not_writable)
{
    char o[PATHN], list[PATHN];
    int n;
    run r;

    wpath(o, "nodir/OUT.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--output", o);
    expect_exit(&r, 5);
    expect_message(&r, o, NULL, "cannot", NULL);
    run_free(&r);
    list[0] = '\0';
    n = count_entries(work_dir, list, sizeof list);
    ck_assert_msg(n == 0, "files left in the work dir: %s", list);
}
END_TEST

/* The output path is a directory: the temporary file can be written but
 * not renamed over it; it must be removed again. */
START_TEST(output_is_directory)
{
    char o[PATHN], list[PATHN];
    int n;
    run r;

    ck_assert_int_eq(mkdir(wpath(o, "OUT.json"), 0700), 0);
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--output", o);
    expect_exit(&r, 5);
    expect_message(&r, o, NULL, "cannot", NULL);
    run_free(&r);
    list[0] = '\0';
    n = count_entries(work_dir, list, sizeof list);
    ck_assert_msg(n == 1, "expected only the directory OUT.json, found: %s", list);
}
END_TEST

/* ---- successful runs ------------------------------------------------- */

/* --batch-tolerance may round the batch, but a plan has one global batch:
 * every strategy runs settings.global_batch = dp x mbs x micro_batches
 * samples (AMP's cluster and GPT-3 XL, batch 256 within 10%: dp 2 x mbs 3
 * x 43 = 258 runs too, and must not join a plan whose batch is 256), its
 * samples/s is that batch over its time, and every strategy exports. */
START_TEST(plan_batch_tolerance_one_batch)
{
    char o[PATHN], d[PATHN + 16], k[16];
    char *text;
    cJSON *plan;
    const cJSON *s;
    int gb, n = 0;
    run r;

    wpath(o, "OUT.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", "examples/gpt3-xl.json",
            "--batch-tolerance", "10", "--top-k", "8", "--quiet", "--output", o);
    expect_exit(&r, 0);
    run_free(&r);
    text = read_all(o);
    plan = parse_json(text, "OUT.json");
    gb = get_int(get(plan, "settings"), "global_batch");
    cJSON_ArrayForEach(s, get_arr(plan, "strategies")) {
        int b = get_int(s, "dp") * get_int(s, "mbs") * get_int(s, "micro_batches");
        ck_assert_msg(b == gb, "strategy %d runs %d samples, the plan's batch is %d",
                      n + 1, b, gb);
        ck_assert_msg(fabs(get_num(s, "samples_per_s") * get_num(s, "predicted_s") - gb)
                          < 1e-6 * gb, "strategy %d: samples/s is not %d / time", n + 1,
                      gb);
        n++;
        snprintf(k, sizeof k, "%d", n);
        snprintf(d, sizeof d, "%s/x%d", work_dir, n);
        PLANNER(&r, "export", "--plan", o, "--strategy", k, "--to", "torchrun",
                "--output", d);
        expect_exit(&r, 0);
        run_free(&r);
    }
    ck_assert_int_ge(n, 2);
    cJSON_Delete(plan);
    free(text);
}
END_TEST

START_TEST(plan_success)
{
    char o[PATHN], list[PATHN];
    char *text;
    cJSON *plan;
    const cJSON *settings;
    run r;

    wpath(o, "OUT.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--output", o);
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    ck_assert_msg(strncmp(r.out, "#", 1) == 0 && strstr(r.out, "time (s)") != NULL &&
                      strstr(r.out, "time (s)") < strchr(r.out, '\n'),
                  "the first stdout line is not a table header with 'time (s)': %.300s",
                  r.out);
    expect_in(r.out, "OUT.json", "stdout", &r);
    text = read_all(o);
    plan = parse_json(text, "OUT.json");
    check_plan(plan, 5);
    settings = get(plan, "settings");
    ck_assert_str_eq(get_str(settings, "method"), "amp");
    ck_assert_int_eq(get_int(settings, "global_batch"), 32);
    ck_assert_str_eq(get_str(get(get(plan, "inputs"), "cluster"), "path"), CLUSTER);
    ck_assert_str_eq(get_str(get(get(plan, "inputs"), "model"), "path"), MODEL);
    expect_sha256(get_str(get(get(plan, "inputs"), "cluster"), "sha256"),
                  "inputs.cluster.sha256");
    expect_sha256(get_str(get(get(plan, "inputs"), "model"), "sha256"),
                  "inputs.model.sha256");
    ck_assert_msg(cJSON_IsNull(get(get(plan, "inputs"), "profile")),
                  "inputs.profile should be null without a profile");
    cJSON_Delete(plan);
    free(text);
    run_free(&r);
    /* nothing but OUT.json: no temporary file left behind */
    list[0] = '\0';
    ck_assert_msg(count_entries(work_dir, list, sizeof list) == 1,
                  "expected only OUT.json in the work dir, found: %s", list);

    /* "plan" may be named explicitly */
    PLANNER(&r, "plan", "--cluster", CLUSTER, "--model", MODEL, "--top-k", "2",
            "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    check_plan(plan, 2);
    cJSON_Delete(plan);
    run_free(&r);
}
END_TEST

START_TEST(plan_top_k)
{
    cJSON *plan;
    run r;

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--top-k", "3",
            "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    check_plan(plan, 3);
    cJSON_Delete(plan);
    run_free(&r);
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--top-k", "1");
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "\n1 ") != NULL && strstr(r.out, "\n2 ") == NULL,
                  "--top-k 1 table should have exactly one row: %s", r.out);
    run_free(&r);
}
END_TEST

START_TEST(plan_format_json)
{
    char o[PATHN], o2[PATHN];
    char *file, *file2, *want;
    cJSON *plan;
    run r;

    /* stdout and --output carry the same document */
    wpath(o, "OUT.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--format", "json",
            "--output", o);
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    file = read_all(o);
    want = malloc(strlen(file) + 2);
    ck_assert_ptr_nonnull(want);
    sprintf(want, "%s\n", file);
    ck_assert_msg(strcmp(r.out, want) == 0 || strcmp(r.out, file) == 0,
                  "--format json stdout differs from the --output file");
    plan = parse_json(r.out, "stdout");
    check_plan(plan, 5);
    cJSON_Delete(plan);
    free(want);
    run_free(&r);

    /* and a table run with --output writes the same document */
    wpath(o2, "OUT2.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--output", o2);
    expect_exit(&r, 0);
    file2 = read_all(o2);
    strip_elapsed(file);
    strip_elapsed(file2);
    ck_assert_msg(strcmp(file, file2) == 0,
                  "the plan written with --format table differs from the one "
                  "with --format json");
    free(file);
    free(file2);
    run_free(&r);
}
END_TEST

START_TEST(plan_quiet_and_verbose)
{
    char o[PATHN];
    char *text;
    cJSON *plan;
    run r;

    wpath(o, "OUT.json");
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--quiet", "--output", o);
    expect_exit(&r, 0);
    ck_assert_msg(r.out[0] == '\0', "--quiet printed on stdout: %.300s", r.out);
    ck_assert_msg(r.err[0] == '\0', "--quiet printed on stderr: %.300s", r.err);
    text = read_all(o);
    plan = parse_json(text, "OUT.json");
    check_plan(plan, 5);
    cJSON_Delete(plan);
    free(text);
    run_free(&r);

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--quiet", "--format", "json");
    expect_exit(&r, 0);
    ck_assert_str_eq(r.out, "");
    ck_assert_str_eq(r.err, "");
    run_free(&r);

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--verbose");
    expect_exit(&r, 0);
    expect_in(r.out, "time (s)", "stdout", &r);
    expect_in(r.err, "candidates", "stderr", &r);
    ck_assert_msg(strncmp(r.err, "planner: ", 9) == 0, "stderr: %s", r.err);
    run_free(&r);
}
END_TEST

START_TEST(plan_megatron)
{
    const cJSON *strats, *s;
    cJSON *plan;
    run r;

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--method", "megatron",
            "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    strats = check_plan(plan, -1);
    ck_assert_str_eq(get_str(get(plan, "settings"), "method"), "megatron");
    cJSON_ArrayForEach(s, strats)
    {
        ck_assert_msg(get_int(s, "tp") <= 4, "megatron strategy with tp %d > 4",
                      get_int(s, "tp"));
        ck_assert_str_eq(get_str(s, "placement"), "megatron");
    }
    cJSON_Delete(plan);
    run_free(&r);
}
END_TEST

START_TEST(plan_placement)
{
    static const char *const rules[] = {"megatron", "fastest-first"};
    const cJSON *strats, *s;
    cJSON *plan;
    size_t i;
    run r;

    for (i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--placement",
                rules[i], "--format", "json");
        expect_exit(&r, 0);
        plan = parse_json(r.out, "stdout");
        strats = check_plan(plan, 5);
        cJSON_ArrayForEach(s, strats)
            ck_assert_str_eq(get_str(s, "placement"), rules[i]);
        cJSON_Delete(plan);
        run_free(&r);
    }
}
END_TEST

START_TEST(plan_deterministic)
{
    char *a, *b;
    run r1, r2;

    PLANNER(&r1, "--cluster", CLUSTER, "--model", MODEL, "--format", "json");
    PLANNER(&r2, "--cluster", CLUSTER, "--model", MODEL, "--format", "json");
    expect_exit(&r1, 0);
    expect_exit(&r2, 0);
    a = r1.out;
    b = r2.out;
    strip_elapsed(a);
    strip_elapsed(b);
    ck_assert_msg(strcmp(a, b) == 0, "two runs gave different plans");
    run_free(&r1);
    run_free(&r2);

    PLANNER(&r1, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", STRATS, "--format", "json");
    PLANNER(&r2, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", STRATS, "--format", "json");
    expect_exit(&r1, 0);
    expect_exit(&r2, 0);
    strip_elapsed(r1.out);
    strip_elapsed(r2.out);
    ck_assert_msg(strcmp(r1.out, r2.out) == 0,
                  "two evaluations gave different documents");
    run_free(&r1);
    run_free(&r2);
}
END_TEST

START_TEST(output_replaced_only_on_success)
{
    static const char keep[] = "previous content, must survive failures\n";
    char o[PATHN], bad[PATHN], t4[PATHN], list[PATHN];
    char *text;
    cJSON *plan;
    run r;

    wpath(o, "OUT.json");
    write_text(o, keep);
    put_file(bad, "bad-model.json", "{\"name\": \"m\", \"layers\": [}\n");
    put_file(t4, "t4x2.json",
             "{\"nodes\": [{\"name\": \"t\", \"device\": \"T4\", \"gpus\": 2, "
             "\"intra_gbps\": 50, \"nic_gbps\": 50}]}\n");

    PLANNER(&r, "--cluster", CLUSTER, "--model", bad, "--output", o);
    expect_exit(&r, 3);
    run_free(&r);
    text = read_all(o);
    ck_assert_str_eq(text, keep);
    free(text);

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--param", "nosuch=1",
            "--output", o);
    expect_exit(&r, 2);
    run_free(&r);
    text = read_all(o);
    ck_assert_str_eq(text, keep);
    free(text);

    PLANNER(&r, "--cluster", t4, "--model", "examples/llama-7b.json", "--precision",
            "fp16", "--output", o);
    expect_exit(&r, 4);
    run_free(&r);
    text = read_all(o);
    ck_assert_str_eq(text, keep);
    free(text);

    list[0] = '\0';
    ck_assert_msg(count_entries(work_dir, list, sizeof list) == 3,
                  "unexpected files in the work dir: %s", list);

    /* success replaces it */
    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--output", o, "--quiet");
    expect_exit(&r, 0);
    run_free(&r);
    text = read_all(o);
    plan = parse_json(text, "OUT.json");
    check_plan(plan, 5);
    cJSON_Delete(plan);
    free(text);
    list[0] = '\0';
    ck_assert_msg(count_entries(work_dir, list, sizeof list) == 3,
                  "unexpected files in the work dir: %s", list);
}
END_TEST

static const char *const bd_fields[] = {
    "compute_s", "tp_allreduce_s", "pipeline_bubble_s", "p2p_s",
    "dp_allreduce_s", "optimizer_s"};

START_TEST(evaluate_strategies)
{
    char *in_text;
    cJSON *plan, *in;
    const cJSON *got, *want, *g, *w, *bd;
    double sum, total, pred;
    size_t f;
    int i, k, n;
    run r;

    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", STRATS, "--format", "json");
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "");
    plan = parse_json(r.out, "stdout");
    ck_assert_str_eq(get_str(plan, "schema"), "hetplan-plan/1");
    ck_assert_str_eq(get_str(get(plan, "settings"), "method"), "evaluate");
    in_text = read_all(HETPLAN_SOURCE_DIR "/" STRATS);
    in = parse_json(in_text, STRATS);
    want = get_arr(in, "strategies");
    got = get_arr(plan, "strategies");
    n = cJSON_GetArraySize(want);
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(cJSON_GetArraySize(got), n);
    for (i = 0; i < n; i++) {
        const cJSON *gb, *wb;
        g = cJSON_GetArrayItem(got, i);
        w = cJSON_GetArrayItem(want, i);
        ck_assert_int_eq(get_int(g, "tp"), get_int(w, "tp"));
        ck_assert_int_eq(get_int(g, "dp"), get_int(w, "dp"));
        ck_assert_int_eq(get_int(g, "pp"), get_int(w, "pp"));
        ck_assert_int_eq(get_int(g, "mbs"), get_int(w, "mbs"));
        gb = get_arr(g, "stage_boundaries");
        wb = get_arr(w, "stage_boundaries");
        ck_assert_int_eq(cJSON_GetArraySize(gb), cJSON_GetArraySize(wb));
        for (k = 0; k < cJSON_GetArraySize(wb); k++)
            ck_assert_int_eq((int)cJSON_GetArrayItem(gb, k)->valuedouble,
                             (int)cJSON_GetArrayItem(wb, k)->valuedouble);
        ck_assert_int_eq(cJSON_GetArraySize(get_arr(g, "ranks")), NGPUS);
        pred = get_num(g, "predicted_s");
        ck_assert_msg(pred > 0 && isfinite(pred), "strategy %d: predicted_s %g",
                      i, pred);
        bd = get(g, "breakdown");
        sum = 0;
        for (f = 0; f < sizeof bd_fields / sizeof bd_fields[0]; f++) {
            double v = get_num(bd, bd_fields[f]);
            ck_assert_msg(v >= 0, "strategy %d: %s = %g", i, bd_fields[f], v);
            sum += v;
        }
        total = get_num(bd, "total_s");
        ck_assert_msg(fabs(sum - total) <= 1e-9 * fabs(total),
                      "strategy %d: breakdown adds up to %.17g, total_s %.17g",
                      i, sum, total);
        ck_assert_msg(fabs(pred - total) <= 1e-12 * fabs(total),
                      "strategy %d: predicted_s %.17g != total_s %.17g", i, pred,
                      total);
    }
    cJSON_Delete(in);
    free(in_text);
    cJSON_Delete(plan);
    run_free(&r);

    /* the table form works too, in the file's order */
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", STRATS);
    expect_exit(&r, 0);
    expect_in(r.out, "time (s)", "stdout", &r);
    run_free(&r);
}
END_TEST

/* Predicted time of the strategy with dp == 16 in an evaluate run. */
static double dp16_time(const char *param, double *net_eff)
{
    cJSON *plan;
    const cJSON *s;
    double t = -1;
    run r;

    if (param != NULL)
        PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
                "--strategies", STRATS, "--format", "json", "--param", param);
    else
        PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
                "--strategies", STRATS, "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    *net_eff = get_num(get(get(plan, "settings"), "cost_params"), "net_eff");
    cJSON_ArrayForEach(s, get_arr(plan, "strategies"))
    {
        if (get_int(s, "dp") == 16)
            t = get_num(s, "predicted_s");
    }
    ck_assert_msg(t > 0, "no dp=16 strategy in the evaluation");
    cJSON_Delete(plan);
    run_free(&r);
    return t;
}

START_TEST(param_override_applied)
{
    double base, slow, eff0, eff1;

    base = dp16_time(NULL, &eff0);
    slow = dp16_time("net_eff=0.25", &eff1);
    ck_assert_msg(eff1 == 0.25, "settings.cost_params.net_eff is %g, expected 0.25",
                  eff1);
    ck_assert_msg(eff0 > 0.25, "default net_eff %g", eff0);
    ck_assert_msg(slow > base * 1.01,
                  "net_eff=0.25 should slow down dp=16: %.17g vs %.17g", slow, base);
}
END_TEST

/* The worked example of docs/cli.md with AMP's measured profiles (the
 * "--data" suite). */
START_TEST(plan_amp_profile)
{
    cJSON *plan;
    const cJSON *prof;
    run r;

    PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--amp-profile",
            AMP_PROFILES, "--top-k", "3", "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    check_plan(plan, 3);
    prof = get(get(plan, "inputs"), "profile");
    ck_assert_str_eq(get_str(prof, "path"), AMP_PROFILES);
    expect_sha256(get_str(prof, "sha256"), "inputs.profile.sha256");
    cJSON_Delete(plan);
    run_free(&r);
    INPUT_ERROR(&r, AMP_PROFILES, "nosuchmodel", "not found", "gpt2", "--cluster",
                CLUSTER, "--model", MODEL, "--amp-profile",
                AMP_PROFILES ":nosuchmodel");
}
END_TEST

/* A strategy's own "schedule" (docs/inputs.md, strategies[]) is the
 * schedule it is evaluated with when --schedule is not given. */
START_TEST(evaluate_strategy_schedule)
{
    char p[PATHN];
    cJSON *plan;
    const cJSON *strats, *g, *f;
    run r;

    put_file(p, "sched.json",
             "{\"strategies\": [\n"
             " {\"tp\": 2, \"dp\": 2, \"pp\": 4, \"mbs\": 4, \"schedule\": "
             "\"gpipe\", \"stage_boundaries\": [0, 8, 14, 20, 30]},\n"
             " {\"tp\": 2, \"dp\": 2, \"pp\": 4, \"mbs\": 4, "
             "\"stage_boundaries\": [0, 8, 14, 20, 30]}]}\n");
    PLANNER(&r, "evaluate", "--cluster", CLUSTER, "--model", MODEL,
            "--strategies", p, "--format", "json");
    expect_exit(&r, 0);
    plan = parse_json(r.out, "stdout");
    strats = get_arr(plan, "strategies");
    ck_assert_int_eq(cJSON_GetArraySize(strats), 2);
    g = cJSON_GetArrayItem(strats, 0);
    f = cJSON_GetArrayItem(strats, 1);
    ck_assert_msg(strcmp(get_str(g, "schedule"), "gpipe") == 0,
                  "strategies[0] asks for gpipe but was evaluated as '%s'",
                  get_str(g, "schedule"));
    ck_assert_str_eq(get_str(f, "schedule"), "1f1b");
    /* GPipe keeps all micro-batches of an iteration in flight */
    ck_assert_msg(get_num(get(g, "memory"), "peak_gib") >
                      get_num(get(f, "memory"), "peak_gib"),
                  "gpipe should need more memory than 1f1b: %g vs %g",
                  get_num(get(g, "memory"), "peak_gib"),
                  get_num(get(f, "memory"), "peak_gib"));
    cJSON_Delete(plan);
    run_free(&r);
}
END_TEST

/* When the plan goes to stdout and stdout cannot be written, the run
 * fails with exit 5 ("cannot write the output"), not 0. */
START_TEST(stdout_not_writable)
{
    static const char *const fmts[] = {"json", "table"};
    size_t i;
    run r;

    /* Linux's device that fails every write with ENOSPC */
    ck_assert_msg(access("/dev/full", W_OK) == 0, "/dev/full is not writable here");
    for (i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
        stdout_target = "/dev/full";
        PLANNER(&r, "--cluster", CLUSTER, "--model", MODEL, "--format", fmts[i]);
        stdout_target = NULL;
        expect_exit(&r, 5);
        expect_message(&r, NULL, NULL, NULL, NULL);
        run_free(&r);
    }
}
END_TEST

/* ---- suite ----------------------------------------------------------- */

static Suite *cli_suite(void)
{
    const TTest *const tb[] = {help_lists_exit_codes, version};
    const TTest *const tu[] = {usage_unknown_option, usage_unknown_option_last,
                               usage_repeated_option, usage_version_extra,
                               usage_export_master_addr, usage_missing_cluster,
                               usage_missing_model, usage_option_without_value,
                               usage_bad_top_k, usage_bad_enums, usage_bad_param,
                               usage_strategies_option,
                               usage_profile_and_amp_profile, usage_no_global_batch,
                               usage_values_against_inputs, usage_did_you_mean,
                               usage_evaluate_strategy_features};
    const TTest *const ti[] = {input_missing_file, input_malformed_json,
                               input_missing_nodes, input_decentralized_cluster,
                               input_negative_gpus, input_zero_nic,
                               input_unknown_key, input_unknown_device,
                               input_total_gpus_mismatch,
                               input_model_without_layers, input_strategy_degrees,
                               input_strategy_boundaries, input_strategy_batch,
                               evaluate_open_boundaries};
    const TTest *const tx[] = {no_feasible_strategy, output_not_writable,
                               output_is_directory, stdout_not_writable};
    const TTest *const ts[] = {plan_success, plan_batch_tolerance_one_batch,
                               plan_top_k, plan_format_json, plan_quiet_and_verbose,
                               plan_megatron, plan_placement, plan_deterministic,
                               output_replaced_only_on_success, evaluate_strategies,
                               param_override_applied, evaluate_strategy_schedule};
    const tu_case cases[] = {
        {"info", tb, TU_N(tb), 120, setup, NULL},
        {"usage", tu, TU_N(tu), 120, setup, NULL},
        {"input", ti, TU_N(ti), 120, setup, NULL},
        {"exit45", tx, TU_N(tx), 120, setup, NULL},
        {"success", ts, TU_N(ts), 120, setup, NULL},
    };

    return tu_suite_of("cli", cases, TU_N(cases));
}

/* Needs AMP's profiles (../shared/data/amp). */
static Suite *data_suite(void)
{
    const TTest *const tests[] = {plan_amp_profile};

    return tu_suite("cli with AMP's profile", "success", tests, TU_N(tests));
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    int rc;

    if (tmp == NULL || tmp[0] != '/')
        tmp = "/tmp";
    snprintf(top_dir, sizeof top_dir, "%s/hetplan-cli.XXXXXX", tmp);
    if (mkdtemp(top_dir) == NULL) {
        fprintf(stderr, "test_commands_cli: mkdtemp %s: %s\n", top_dir, strerror(errno));
        return EXIT_FAILURE;
    }
    rc = tu_main(argc, argv, cli_suite, data_suite, TU_DATA "/amp");
    tu_remove_tree(top_dir);
    return rc;
}
