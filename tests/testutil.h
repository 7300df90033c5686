/* tests/testutil.h: helpers shared by the Check test programs: small
 * static ones here (each test program gets its own copy), the ones that
 * need the project's libraries in tests/testutil.c (tu_ prefix too). */
#ifndef HETPLAN_TESTUTIL_H
#define HETPLAN_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "whatif.h"
#include "decentral.h"

/* Whole file, NUL-terminated (caller frees); NULL when it cannot be opened. */
static inline char *tu_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Write text as the file dir/name (replaced when it exists), failing the
 * test when it cannot. */
static inline void tu_put(const char *dir, const char *name, const char *text)
{
    char path[4096];
    FILE *f;

    ck_assert_int_lt(snprintf(path, sizeof path, "%s/%s", dir, name),
                     (int)sizeof path);
    f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot create '%s'", path);
    ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    ck_assert_int_eq(fclose(f), 0);
}

/* Occurrences of needle in hay, not overlapping. */
static inline int tu_count(const char *hay, const char *needle)
{
    int n = 0;
    const char *p = hay;

    while ((p = strstr(p, needle)) != NULL) {
        n++;
        p += strlen(needle);
    }
    return n;
}

/* Remove a file or a directory tree; best effort. */
static inline void tu_remove_tree(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char sub[4096];

    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    d = opendir(path);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (strlen(path) + strlen(e->d_name) + 2 > sizeof sub)
                continue; /* cannot be one of ours */
            memcpy(sub, path, strlen(path));
            sub[strlen(path)] = '/';
            memcpy(sub + strlen(path) + 1, e->d_name, strlen(e->d_name) + 1);
            tu_remove_tree(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* ---- checks that need the data folder -------------------------------- */
/* The data folder beside the project (AMP's real runs and profiles);
 * cmake -DHETPLAN_TEST_DATA=DIR points the tests elsewhere. */
#ifndef HETPLAN_TEST_DATA
#define HETPLAN_TEST_DATA HETPLAN_SOURCE_DIR "/../shared/data"
#endif
#define TU_DATA HETPLAN_TEST_DATA

/* Exit status ctest reads as a skip (SKIP_RETURN_CODE in CMakeLists.txt). */
#define TU_SKIP 77

/* ---- timeouts on a slow machine ---------------------------------------- */
/* HETPLAN_TEST_TIMEOUT_FACTOR (a number from 1 to 1000, default 1): how
 * many times slower than an idle machine the tests may run
 * (docs/testing.md).  It multiplies every Check timeout (each program
 * sets Check's CK_TIMEOUT_MULTIPLIER to it before main, replacing any
 * value given there), every ctest TIMEOUT (CMakeLists.txt) and every
 * wait on the clock inside a test (tu_timeout).  A test without a
 * timeout of its own (tcase_set_timeout) gets TU_TIMEOUT_DEFAULT seconds,
 * not Check's 4 (CK_DEFAULT_TIMEOUT is replaced too). */
#define TU_TIMEOUT_DEFAULT "30"
#define TU_TIMEOUT_FACTOR_ENV "HETPLAN_TEST_TIMEOUT_FACTOR"

/* The factor the environment gives: 1 when unset, -1 when it is not a
 * number from 1 to 1000. */
static inline double tu_timeout_factor(void)
{
    const char *v = getenv(TU_TIMEOUT_FACTOR_ENV);
    size_t digits = strspn(v ? v : "", "0123456789");
    double f;

    if (v == NULL || v[0] == '\0')
        return 1.0;
    /* digits, then a '.' and digits or nothing (as ctest reads it) */
    if (digits == 0 ||
        (v[digits] != '\0' && (v[digits] != '.' ||
                               v[digits + 1 + strspn(v + digits + 1, "0123456789")] != '\0')))
        return -1.0;
    f = strtod(v, NULL);
    return f >= 1.0 && f <= 1000.0 ? f : -1.0;
}

/* A build with sanitizers (HETPLAN_SANITIZE) runs the planner several
 * times slower than a plain one (AddressSanitizer about 2x by its
 * authors' figures, UndefinedBehaviorSanitizer's checks on top), so
 * waits on the clock inside a test allow this many times more. */
#ifdef HETPLAN_TEST_SANITIZED
#define TU_BUILD_SLOWDOWN 4.0
#else
#define TU_BUILD_SLOWDOWN 1.0
#endif

/* seconds on an idle machine, scaled by the factor and the build. */
static inline double tu_timeout(double seconds)
{
    double f = tu_timeout_factor();

    return seconds * (f > 0 ? f : 1.0) * TU_BUILD_SLOWDOWN;
}

/* Before main: Check's multiplier from the factor (times the build's
 * slowdown) and its default timeout (Check reads both when a test case
 * is made); a factor out of range ends the program. */
static void tu_timeout_init(void) __attribute__((constructor));
static void tu_timeout_init(void)
{
    double f = tu_timeout_factor();
    char buf[32];

    if (f < 0) {
        fprintf(stderr, "test: %s: expected a number from 1 to 1000, got '%s'\n",
                TU_TIMEOUT_FACTOR_ENV, getenv(TU_TIMEOUT_FACTOR_ENV));
        exit(EXIT_FAILURE);
    }
    snprintf(buf, sizeof buf, "%.17g", f * TU_BUILD_SLOWDOWN);
    setenv("CK_TIMEOUT_MULTIPLIER", buf, 1);
    setenv("CK_DEFAULT_TIMEOUT", TU_TIMEOUT_DEFAULT, 1);
}

/* Run a suite with CK_NORMAL output; EXIT_SUCCESS when every test passed. */
static inline int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* main() of a test program whose checks that need the data folder are in
 * a suite of their own: without arguments it runs plain(); with "--data"
 * (the program's second ctest entry, <name>_data) it runs data(), or,
 * when the folder need is absent, says so and exits TU_SKIP. */
static inline int tu_main(int argc, char **argv, Suite *(*plain)(void),
                          Suite *(*data)(void), const char *need)
{
    struct stat st;

    if (argc < 2)
        return tu_run(plain());
    if (strcmp(argv[1], "--data") != 0) {
        fprintf(stderr, "usage: %s [--data]\n", argv[0]);
        return EXIT_FAILURE;
    }
    if (stat(need, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("skipped: %s not found: these checks need the data folder "
               "beside the project (cmake -DHETPLAN_TEST_DATA=DIR points "
               "elsewhere)\n", need);
        fflush(stdout);
        return TU_SKIP;
    }
    return tu_run(data());
}

/* main() of a test program whose check that needs an outside program
 * (groff, Chromium) is in a suite of its own: without arguments it runs
 * plain(); with "--tool" (the program's second ctest entry, <name>_tool)
 * it runs tool(), or, when absent() returns why the program cannot run
 * (NULL when it can), prints that and exits TU_SKIP. */
static inline int tu_main_tool(int argc, char **argv, Suite *(*plain)(void),
                               Suite *(*tool)(void), const char *(*absent)(void))
{
    const char *why;

    if (argc < 2)
        return tu_run(plain());
    if (strcmp(argv[1], "--tool") != 0) {
        fprintf(stderr, "usage: %s [--tool]\n", argv[0]);
        return EXIT_FAILURE;
    }
    if ((why = absent()) != NULL) {
        printf("skipped: %s\n", why);
        fflush(stdout);
        return TU_SKIP;
    }
    return tu_run(tool());
}

/* ---- tests/testutil.c -------------------------------------------------- */

/* Bytes/s per Gbit/s. */
#define TU_GB8 (1e9 / 8.0)

/* Run the planner binary with args (NULL-terminated, at most 30) in dir
 * (NULL: the current directory), stdout and stderr into the two files;
 * its exit status, 128 when it did not exit. */
int tu_run_planner(const char *dir, const char *const *args,
                   const char *out_path, const char *err_path);

/* Exit status of the shell command cmd (-1 when it did not exit); its
 * stdout and stderr, cut to cap - 1 bytes, NUL-terminated, in out. */
int tu_run_shell(const char *cmd, char *out, size_t cap);

/* Standard output of the shell command cmd, NUL-terminated (caller
 * frees, never NULL); *status its exit status, -1 when it did not exit. */
char *tu_capture(const char *cmd, int *status);

struct cJSON;
/* The JSON document the bench program prog (a path) prints when run on
 * the data folder dir, its stderr discarded (caller deletes it; the test
 * fails when it is not JSON); *status its exit status. */
struct cJSON *tu_bench_run(const char *prog, const char *dir, int *status);
/* Member key of obj; the test fails when it is absent. */
const struct cJSON *tu_get(const struct cJSON *obj, const char *key);
/* Member key of obj as a number; the test fails when it is not one. */
double tu_num(const struct cJSON *obj, const char *key);

/* Two nodes of two GPUs, T4 and V100, 100 Gbit/s links ("two"). */
extern const char tu_two_nodes_json[];
/* GPT-2 shorthand of 4 layers, hidden 256, 4 heads, seq 128, vocab 1000,
 * global batch 8 ("g4"). */
extern const char tu_gpt2_small4_json[];
/* One node of 4 devices "X" (1 TFLOP/s fp16, 80 GiB, 1 TB/s) ("x"). */
extern const char tu_flat_cluster_json[];
/* Two generic layers of 1e12 FLOPs per sample, all divided by tensor
 * parallelism, nothing else (no parameters, traffic, kernels or
 * all-reduces); 24 heads, ffn 768; global batch 4 ("flat"). */
extern const char tu_flat_model_json[];

/* Device "X": no generation row (so 80 SMs), 80 GB, 100 TFLOP/s fp16,
 * 1 TB/s; everything else zero. */
void tu_device_x(fmt_device_type *dt);
/* *c: n nodes "n0".. of g devices "X" (tu_device_x), intra-node links of
 * intra_bw B/s, 100 Gbit/s NICs, no latency; indexed, the test fails
 * otherwise.  Free with fmt_cluster_free. */
void tu_cluster_nodes(fmt_cluster *c, int n, int g, double intra_bw);

/* The JSON of a Selene-like cluster (Narayanan et al. SC'21) named name:
 * nodes nodes of 8 A100-80GB, 2400 Gbit/s inside a node, nic_gbps NICs,
 * written into buf (cap bytes; the test fails when it does not fit). */
void tu_selene_json(char *buf, size_t cap, const char *name, int nodes,
                    int nic_gbps);
/* *c: tu_selene_json(name, nodes, nic_gbps) parsed; *m: model_json parsed
 * when it is not NULL, else the model file model_path.  The test fails
 * on error.  Free with fmt_cluster_free and fmt_model_free. */
void tu_load_selene(fmt_cluster *c, fmt_model *m, const char *name, int nodes,
                    int nic_gbps, const char *model_json, const char *model_path);

/* Parse the two documents into c and m, failing the test on error. */
void tu_parse_inputs(const char *cluster_json, const char *model_json,
                     fmt_cluster *c, fmt_model *m);
/* n generic layers "l0".. without FLOPs, parameters or traffic, each
 * with out_bytes of output, fp16: times come from a profile only. */
void tu_generic_model(fmt_model *m, int n, double out_bytes);
/* Append a profile entry: every one of nlayers layers takes fwd / bwd
 * seconds on device type dev at tp 1 and micro-batch mbs. */
void tu_profile_add(fmt_profile *p, int nlayers, const char *dev, int mbs,
                    double fwd, double bwd);

/* One stage of tp ranks on devices dev (NULL: 0 .. tp - 1) holding all
 * of m's layers, no DP, mbs 1, 4 micro-batches. */
void tu_one_stage(fmt_strategy *s, const fmt_model *m, int tp, const int *dev);
/* whatif_run with default parameters and the n slowed ranks sl. */
int tu_whatif(const fmt_cluster *c, const fmt_model *m, const fmt_strategy *s,
              const whatif_slow *sl, int n, whatif_result *w);

/* dtfm_search's cost with method, max_evals and seed (the rest default);
 * the result goes to keep (caller frees) or is freed when keep is NULL. */
double tu_dtfm_search(const dtfm_problem *p, int method, long evals,
                      unsigned long long seed, dtfm_search_result *keep);

/* *s allocated for tp x dp x pp devices with ranks 0, 1, ... in order,
 * the stage boundaries bounds[0..pp] (NULL: left zero) and gas
 * micro-batches; free with fmt_strategy_free. */
void tu_strategy(fmt_strategy *s, int tp, int dp, int pp, const int *bounds,
                 int gas);
/* Sailor's OPT-350 model (../shared/data/sailor-opt/model_OPT-350.json,
 * family gpt2 in the file) with OPT's ReLU MLP stated, as the runs
 * trained it (Zhang et al. 2022); free with fmt_model_free. */
void tu_sailor_model(fmt_model *m);
/* The predicted peak memory (largest over ranks) of Sailor's OPT-350 run
 * tag (TAG_cluster.json, tu_sailor_model, TAG_strat.json) at global
 * batch gbs under p; fails the test unless the run is predicted to fit. */
double tu_sailor_peak(const char *tag, int gbs, const cost_params *p);

/* The number of elements of array a. */
#define TU_N(a) (sizeof(a) / sizeof(a)[0])

/* One case of a suite. */
typedef struct tu_case {
    const char *name;          /* the case's name */
    const TTest *const *tests; /* its tests, n of them */
    size_t n;
    double timeout_s;          /* seconds; 0: TU_TIMEOUT_DEFAULT */
    void (*setup)(void);       /* checked fixture around each test; */
    void (*teardown)(void);    /* NULL: none */
} tu_case;
/* A suite named suite of cases[0..n-1] (the caller runs it, which frees
 * it). */
Suite *tu_suite_of(const char *suite, const tu_case *cases, size_t n);
/* A suite named suite of one case named tcase: tests[0..n-1]. */
Suite *tu_suite(const char *suite, const char *tcase, const TTest *const *tests,
                size_t n);
/* Run tu_suite(suite, "core", tests, n); tu_run's status. */
int tu_run_tests(const char *suite, const TTest *const *tests, size_t n);

#endif
