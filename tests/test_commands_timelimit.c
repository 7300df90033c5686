/* tests/test_commands_timelimit.c: --time-limit on every command other
 * than plan and replan (tests/test_commands_limits.c has those), and on
 * the largest inputs: plan, whatif, export, report and decentralized.
 *
 * Each command gets the same two runs:
 * - a limit of a microsecond: the limit counts from the start of the
 *   command, and reading its input files (open, read, parse, hash) takes
 *   longer than that on any machine, so the first check of the limit
 *   always finds it passed, however slow the build.  The command must end
 *   with exit code 7, a note on stderr naming what was cut, a complete
 *   output with status "time-limit", and the work before the first check
 *   done;
 * - a limit of a year (the largest accepted): exit code 0 and the output
 *   of a run without the option, byte for byte (apart from the seconds a
 *   run took, which no two runs share).
 * On the largest input a command accepts, the limit bounds the whole
 * command, setup included: those tests assert that it returns within the
 * limit plus a margin several times what it needs on an idle machine,
 * scaled by HETPLAN_TEST_TIMEOUT_FACTOR (tu_timeout), and the memory it
 * took; nothing else is timed. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <cJSON.h>

#include "tp_cli.h"

#define EX(name) HETPLAN_SOURCE_DIR "/examples/" name
#define TINY "1e-6"
#define YEAR "31536000"

/* Run args; check the exit code and that stderr holds frag (if any).
 * Returns stdout (caller frees). */
static char *run_expect(const char *const *args, int status, const char *frag)
{
    tp_run_out r;
    char *out;

    tp_run(&r, args);
    ck_assert_msg(r.status == status, "%s: exit %d, want %d; stderr: %s", args[0],
                  r.status, status, r.err);
    if (frag)
        ck_assert_msg(strstr(r.err, frag) != NULL, "stderr lacks '%s': %s", frag, r.err);
    if (status == 0)
        ck_assert_msg(strstr(r.err, "time limit") == NULL, "stderr: %s", r.err);
    out = r.out;
    r.out = NULL;
    tp_run_free(&r);
    return out;
}

static cJSON *parse(const char *text, const char *what)
{
    cJSON *j;

    ck_assert_msg(text != NULL, "no %s", what);
    j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "%s is not JSON: %.200s", what, text);
    return j;
}

static cJSON *parse_file(const char *name)
{
    char *text = tp_read(name);
    cJSON *j = parse(text, name);

    free(text);
    return j;
}

static const cJSON *child(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    ck_assert_msg(v != NULL, "no '%s'", key);
    return v;
}

static void expect_str(const cJSON *o, const char *key, const char *want)
{
    const cJSON *v = child(o, key);

    ck_assert_msg(cJSON_IsString(v) && strcmp(v->valuestring, want) == 0,
                  "'%s' is not '%s'", key, want);
}

/* Two files of tp_dir with the same bytes. */
static void expect_same_file(const char *a, const char *b)
{
    char *x = tp_read(a), *y = tp_read(b);

    ck_assert_msg(x != NULL && y != NULL, "'%s' or '%s' missing", a, b);
    ck_assert_msg(strcmp(x, y) == 0, "'%s' and '%s' differ", a, b);
    free(x);
    free(y);
}

/* Two JSON documents equal once obj.key (the seconds a run took) is
 * removed from both. */
static void expect_same_json(cJSON *a, cJSON *b, const char *obj, const char *key)
{
    if (obj != NULL) {
        cJSON_DeleteItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(a, obj), key);
        cJSON_DeleteItemFromObjectCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(b, obj), key);
    }
    ck_assert_msg(cJSON_Compare(a, b, 1), "the documents differ");
}

/* The documents three runs of a command print: cut by a tiny limit,
 * without a limit, with a year's. */
typedef struct runs3 {
    cJSON *t, *n, *y;
} runs3;

/* Run tiny (exit 7, frag on stderr), none and year (exit 0) and parse
 * what each prints (what names it). */
static void run_three(runs3 *r, const char *const *tiny, const char *frag,
                      const char *const *none, const char *const *year,
                      const char *what)
{
    char *out_t = run_expect(tiny, 7, frag);
    char *out_n = run_expect(none, 0, NULL);
    char *out_y = run_expect(year, 0, NULL);

    r->t = parse(out_t, what);
    r->n = parse(out_n, what);
    r->y = parse(out_y, what);
    free(out_t);
    free(out_n);
    free(out_y);
}

/* The run with a year's limit is the run without one: the same document
 * (its "output" named as the other's) and the same output file; then
 * the three documents are freed. */
static void expect_year_as_none(runs3 *r, const char *none_file,
                                const char *year_file)
{
    cJSON_ReplaceItemInObject(r->y, "output", cJSON_CreateString(none_file));
    expect_same_json(r->n, r->y, NULL, NULL);
    expect_same_file(none_file, year_file);
    cJSON_Delete(r->t);
    cJSON_Delete(r->n);
    cJSON_Delete(r->y);
}

/* A plan of the AMP heterogeneous cluster (examples): its best strategy
 * has tp 2 and 8 pipeline stages, so that every what-if remedy applies. */
static void write_plan(void)
{
    const char *args[] = {"--cluster", EX("amp-het.json"), "--model", EX("gpt2-amp.json"),
                          "--quiet", "--output", "plan.json", NULL};

    free(run_expect(args, 0, NULL));
}

/* ---- evaluate: between strategies ----------------------------------- */

/* strategies-amp-het.json holds 4 strategies: the first is always scored,
 * the other 3 come after the first check. */
START_TEST(evaluate_scores_those_done)
{
    const char *tiny[] = {"evaluate", "--cluster", EX("amp-het.json"), "--model",
                          EX("gpt2-amp.json"), "--strategies",
                          EX("strategies-amp-het.json"), "--time-limit", TINY,
                          "--quiet", "--output", "tiny.json", NULL};
    const char *none[] = {"evaluate", "--cluster", EX("amp-het.json"), "--model",
                          EX("gpt2-amp.json"), "--strategies",
                          EX("strategies-amp-het.json"), "--quiet", "--output",
                          "none.json", NULL};
    const char *year[] = {"evaluate", "--cluster", EX("amp-het.json"), "--model",
                          EX("gpt2-amp.json"), "--strategies",
                          EX("strategies-amp-het.json"), "--time-limit", YEAR,
                          "--quiet", "--output", "year.json", NULL};
    cJSON *t, *n, *y;
    const cJSON *s0, *n0;

    free(run_expect(tiny, 7, "strategies 2 to 4 of"));
    free(run_expect(none, 0, NULL));
    free(run_expect(year, 0, NULL));
    t = parse_file("tiny.json");
    n = parse_file("none.json");
    y = parse_file("year.json");
    expect_str(child(t, "search"), "status", "time-limit");
    ck_assert_double_eq_tol(child(child(t, "search"), "time_limit_s")->valuedouble,
                            1e-6, 1e-12);
    ck_assert_int_eq(child(child(t, "search"), "evaluated")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(child(t, "strategies")), 1);
    ck_assert_int_eq(cJSON_GetArraySize(child(n, "strategies")), 4);
    /* the strategy scored is the file's first, scored as without a limit */
    s0 = cJSON_GetArrayItem(child(t, "strategies"), 0);
    n0 = cJSON_GetArrayItem(child(n, "strategies"), 0);
    ck_assert(cJSON_Compare(s0, n0, 1));
    expect_str(child(n, "search"), "status", "complete");
    expect_same_json(n, y, "search", "elapsed_s");
    cJSON_Delete(t);
    cJSON_Delete(n);
    cJSON_Delete(y);
}
END_TEST

/* ---- calibrate: between fit rounds and leave-one-out fits ------------ */

/* Four measured runs of the example strategies (times made up: the fit
 * needs several LP rounds from neutral, and leave-one-out four more
 * fits). */
static void write_trials(void)
{
    tp_write("trials.json",
             "{\"global_batch\": 32, \"strategies\": [\n"
             "{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, \"stage_boundaries\": "
             "[0, 7, 14, 20, 30], \"measured_s\": 2.31},\n"
             "{\"tp\": 1, \"dp\": 2, \"pp\": 8, \"mbs\": 1, \"stage_boundaries\": "
             "[0, 5, 9, 12, 15, 18, 21, 24, 30], \"measured_s\": 2.9},\n"
             "{\"tp\": 2, \"dp\": 2, \"pp\": 4, \"mbs\": 4, \"stage_boundaries\": "
             "[0, 8, 14, 20, 30], \"measured_s\": 1.7},\n"
             "{\"tp\": 1, \"dp\": 16, \"pp\": 1, \"mbs\": 1, \"stage_boundaries\": "
             "[0, 30], \"measured_s\": 1.32}]}\n");
    tp_write("profile.json", "{\"format\": \"hetplan-profile/1\", \"entries\": []}\n");
}

START_TEST(calibrate_keeps_best_fit)
{
#define CAL "calibrate", "--cluster", EX("amp-het.json"), "--model", EX("gpt2-amp.json"), \
            "--profile", "profile.json", "--trials", "trials.json", "--format", "json"
    const char *tiny[] = {CAL, "--time-limit", TINY, "--output", "tiny.json", NULL};
    const char *none[] = {CAL, "--output", "none.json", NULL};
    const char *year[] = {CAL, "--time-limit", YEAR, "--output", "year.json", NULL};
#undef CAL
    runs3 r;
    const cJSON *t, *n, *fit;
    cJSON *prof;

    write_trials();
    run_three(&r, tiny, "planner: note: time limit of 1e-06 s reached: the fit "
              "stopped after 1 LP round(s)", none, year, "calibrate's report");
    t = r.t;
    n = r.n;
    /* one LP round (always run), then the limit: no leave-one-out */
    expect_str(t, "status", "time-limit");
    ck_assert_int_eq(child(t, "rounds")->valueint, 1);
    ck_assert_int_eq(child(t, "loo_done")->valueint, 0);
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(child(t, "scores"), "loo"));
    ck_assert_int_eq(cJSON_GetArraySize(child(t, "predictions")), 4);
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(child(t, "scores"),
                                                           "in_sample"));
    expect_str(n, "status", "complete");
    ck_assert_int_gt(child(n, "rounds")->valueint, 1);
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(child(n, "scores"), "loo"));
    /* the calibrated profile is whole, and says its fit was cut */
    prof = parse_file("tiny.json");
    fit = child(child(prof, "calibration"), "fit");
    expect_str(fit, "status", "time-limit");
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(fit, "loo_mape"));
    cJSON_Delete(prof);
    /* a year: the run without a limit (its --output named differently) */
    expect_year_as_none(&r, "none.json", "year.json");
}
END_TEST

/* ---- whatif: between remedies --------------------------------------- */

START_TEST(whatif_lists_remedies_not_evaluated)
{
    const char *tiny[] = {"whatif", "--plan", "plan.json", "--slow", "1:2", "--slow",
                          "3:1.5", "--time-limit", TINY, "--quiet", "--output",
                          "tiny.json", NULL};
    const char *none[] = {"whatif", "--plan", "plan.json", "--slow", "1:2", "--slow",
                          "3:1.5", "--quiet", "--output", "none.json", NULL};
    const char *year[] = {"whatif", "--plan", "plan.json", "--slow", "1:2", "--slow",
                          "3:1.5", "--time-limit", YEAR, "--quiet", "--output",
                          "year.json", NULL};
    cJSON *t, *n;
    const cJSON *r;
    int k = 0;

    write_plan();
    free(run_expect(tiny, 7, "remedies not evaluated: 'reshard', 'replan', 'resize', "
                             "'semi'"));
    free(run_expect(none, 0, NULL));
    free(run_expect(year, 0, NULL));
    t = parse_file("tiny.json");
    n = parse_file("none.json");
    expect_str(t, "status", "time-limit");
    expect_str(n, "status", "complete");
    /* keeping the plan is evaluated before the first check, as without a
     * limit; the other four are listed as skipped */
    ck_assert_double_eq(child(t, "slowed_s")->valuedouble,
                        child(n, "slowed_s")->valuedouble);
    cJSON_ArrayForEach(r, child(t, "remedies")) {
        if (k++ == 0) {
            ck_assert(cJSON_IsTrue(child(r, "applicable")));
            ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "skipped"));
        } else {
            ck_assert(cJSON_IsTrue(child(r, "skipped")));
            ck_assert(cJSON_IsFalse(child(r, "applicable")));
        }
    }
    ck_assert_int_eq(k, 5);
    expect_str(child(t, "recommendation"), "remedy", "none");
    cJSON_ArrayForEach(r, child(n, "remedies"))
        ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "skipped"));
    expect_same_file("none.json", "year.json");
    cJSON_Delete(t);
    cJSON_Delete(n);
}
END_TEST

/* ---- decentralized: --time-limit and --seconds ----------------------- */

/* --evals makes the search's end reproducible; the time limit cuts it
 * after the first schedule. */
START_TEST(decentralized_time_limit)
{
#define DC "decentralized", "--cluster", EX("dtfm-campuses.json"), "--evals", "3000", \
           "--quiet"
    const char *tiny[] = {DC, "--time-limit", TINY, "--output", "tiny.json", NULL};
    const char *both[] = {DC, "--seconds", "1000", "--time-limit", TINY, "--output",
                          "both.json", NULL};
    const char *secs[] = {DC, "--seconds", "1000000", "--output", "secs.json", NULL};
    const char *tl[] = {DC, "--time-limit", "1000000", "--output", "tl.json", NULL};
#undef DC
    cJSON *t, *b, *s, *l;

    free(run_expect(tiny, 7, "planner: note: time limit of 1e-06 s reached"));
    free(run_expect(both, 7, "planner: note: time limit of 1e-06 s reached"));
    free(run_expect(secs, 0, NULL));
    free(run_expect(tl, 0, NULL));
    t = parse_file("tiny.json");
    b = parse_file("both.json");
    s = parse_file("secs.json");
    l = parse_file("tl.json");
    ck_assert(cJSON_IsTrue(child(child(t, "search"), "timed_out")));
    ck_assert_double_eq_tol(child(child(t, "settings"), "seconds")->valuedouble, 1e-6,
                            1e-12);
    /* given both, the smaller limit wins */
    ck_assert_double_eq_tol(child(child(b, "settings"), "seconds")->valuedouble, 1e-6,
                            1e-12);
    ck_assert(cJSON_IsTrue(child(child(b, "search"), "timed_out")));
    /* --time-limit S is --seconds S */
    ck_assert(cJSON_IsFalse(child(child(l, "search"), "timed_out")));
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "search"),
                                            "best_at_s");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(l, "search"),
                                            "best_at_s");
    expect_same_json(s, l, "search", "elapsed_s");
    cJSON_Delete(t);
    cJSON_Delete(b);
    cJSON_Delete(s);
    cJSON_Delete(l);
}
END_TEST

/* ---- decentralized at its largest: 4,096 devices -------------------- */

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The largest resident set among the children waited for so far, MiB
 * (Check runs each test in a process of its own); < 0 when the planner
 * runs under a wrapper (valgrind) or with sanitizers (their shadow
 * memory and quarantine), whose memory is not the planner's. */
static double children_rss_mib(void)
{
    struct rusage ru;
    const char *base = strrchr(HETPLAN_PLANNER, '/');

#ifdef HETPLAN_TEST_SANITIZED
    return -1.0;
#endif

    if (strcmp(base ? base + 1 : HETPLAN_PLANNER, "planner") != 0 ||
        getrusage(RUSAGE_CHILDREN, &ru) != 0)
        return -1.0;
    return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

/* Run args, expecting exit status and frag on stderr; returns the wall
 * time, s. */
static double run_timed(const char *const *args, int status, const char *frag)
{
    double t0 = mono_s();

    free(run_expect(args, status, frag));
    return mono_s() - t0;
}

/* 64 regions of 64 V100 (5 ms and 2 Gbit/s inside a region, 50 ms and
 * 1 Gbit/s between): the 4,096 devices decentralized accepts at most.
 * A limit of a microsecond returns the schedule of devices in order
 * without the n x n weight tables; a limit of 1 s ends the command,
 * loading, tables and output included, within a margin (on an idle
 * machine it takes about the second: 4 s is several times the margin it
 * needs); the exact search declines the size at once. */
START_TEST(decentralized_at_its_largest)
{
#define BIG "decentralized", "--cluster", "dtfm-4096.json", "--quiet"
    const char *tiny[] = {BIG, "--time-limit", TINY, "--output", "tiny.json", NULL};
    const char *one[] = {BIG, "--time-limit", "1", "--output", "one.json", NULL};
    const char *exact[] = {BIG, "--time-limit", "1", "--searcher", "exact", NULL};
    const char *pp65[] = {BIG, "--pp", "65", NULL};
    const char *pp7[] = {BIG, "--pp", "7", NULL};
#undef BIG
    char text[4096];
    size_t used;
    double wall, rss;
    cJSON *t, *o;
    int i;

    used = (size_t)snprintf(text, sizeof text, "{\"name\":\"dtfm-4096\",\"device\":"
                                               "\"V100\",\"regions\":[");
    for (i = 0; i < 64; i++)
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 "%s{\"name\":\"r%d\",\"gpus\":64}", i ? "," : "", i);
    snprintf(text + used, sizeof text - used,
             "],\"inside\":{\"latency_ms\":5,\"bandwidth_gbps\":2},"
             "\"between\":{\"latency_ms\":50,\"bandwidth_gbps\":1}}\n");
    tp_write("dtfm-4096.json", text);

    wall = run_timed(tiny, 7, "planner: note: time limit of 1e-06 s reached after 1 "
                              "evaluations");
    ck_assert_msg(wall <= tu_timeout(4.0), "--time-limit 1e-6 took %.2f s", wall);
    rss = children_rss_mib();
    ck_assert_msg(rss < 128.0, "--time-limit 1e-6 took %.0f MiB", rss);
    t = parse_file("tiny.json");
    ck_assert_int_eq(child(child(t, "cluster"), "devices")->valueint, 4096);
    ck_assert(cJSON_IsTrue(child(child(t, "search"), "timed_out")));
    /* the devices in order: stage groups of 512 consecutive devices */
    ck_assert_int_eq(cJSON_GetArraySize(child(t, "chains")), 512);

    wall = run_timed(one, 7, "planner: note: time limit of 1 s reached");
    ck_assert_msg(wall <= 1.0 + tu_timeout(4.0), "--time-limit 1 took %.2f s", wall);
    rss = children_rss_mib();
    ck_assert_msg(rss < 600.0, "--time-limit 1 took %.0f MiB", rss);
    o = parse_file("one.json");
    ck_assert_int_eq(child(child(o, "cluster"), "devices")->valueint, 4096);
    ck_assert_int_eq(cJSON_GetArraySize(child(o, "pipeline")), 8);
    ck_assert(cJSON_IsTrue(child(child(o, "search"), "timed_out")));

    wall = run_timed(exact, 2, "the exact search handles at most 1024 devices in all "
                               "and 255 per stage, got 4096 devices, 512 per stage");
    ck_assert_msg(wall <= tu_timeout(4.0), "--searcher exact took %.2f s", wall);
    /* at most 64 stages */
    free(run_expect(pp65, 2, "option '--pp' expects an integer in 1..64, got '65'"));
    free(run_expect(pp7, 2, "expected a divisor of the 4096 devices, at most 64 "
                            "(1, 2, 4, 8, 16, 32, 64), got 7"));
    cJSON_Delete(t);
    cJSON_Delete(o);
}
END_TEST

/* ---- whatif, export and report on plans at the limits --------------- */

/* A plan of one strategy at the largest a plan holds: 262,144 GPUs
 * (32,768 nodes of 8 A100), 131,072 of them running ranks (tp 8, dp
 * 8,192, pp 2) and the other half idle, 64 layers (33 MB, made by
 * evaluate in about a second). */
static void write_half_idle_plan(void)
{
    const char *ev[] = {"evaluate", "--cluster", "c262144.json", "--model", "m64.json",
                        "--strategies", "s131072.json", "--output", "big.json",
                        "--quiet", NULL};
    size_t cap = 131072 * 8 + 256, used;
    char *t = malloc(cap);
    int r;

    ck_assert_ptr_nonnull(t);
    tp_write("c262144.json", "{\"name\":\"big\",\"nodes\":[{\"name\":\"a\","
                             "\"count\":32768,\"device\":\"A100-80GB\",\"gpus\":8,"
                             "\"intra_gbps\":2400,\"nic_gbps\":200}]}");
    tp_write("m64.json", "{\"name\":\"m\",\"training\":{\"global_batch\":16384,"
                         "\"precision\":\"fp16\"},\"transformer\":{\"family\":\"gpt3\","
                         "\"layers\":61,\"hidden\":4096,\"heads\":32,\"seq\":2048,"
                         "\"vocab\":51200}}");
    used = (size_t)snprintf(t, cap, "{\"strategies\":[{\"tp\":8,\"dp\":8192,\"pp\":2,"
                                    "\"mbs\":1,\"ranks\":[");
    for (r = 0; r < 131072; r++)
        used += (size_t)snprintf(t + used, cap - used, "%s%d", r ? "," : "", r);
    snprintf(t + used, cap - used, "]}]}");
    tp_write("s131072.json", t);
    free(t);
    free(run_expect(ev, 0, NULL));
}

/* On that plan the first check of whatif and of export comes within a
 * margin of a few seconds (the plan is read, the plan kept under the
 * slowdown, the idle GPUs listed: each in time linear in the GPUs),
 * however many ranks and idle GPUs: a rank looked up per device and
 * layer took a minute and more.  4 s idle; 12 s is three times that. */
START_TEST(whatif_and_export_at_the_limit)
{
    const char *what[] = {"whatif", "--plan", "big.json", "--slow", "0:2",
                          "--time-limit", TINY, "--output", "w.json", "--quiet", NULL};
    const char *exp[] = {"export", "--plan", "big.json", "--to", "torchrun",
                         "--output", "ex", "--time-limit", TINY, "--quiet", NULL};
    double wall, rss;
    cJSON *w;
    char *ranks;

    write_half_idle_plan();
    wall = run_timed(what, 7, "remedies not evaluated");
    ck_assert_msg(wall <= tu_timeout(12.0), "whatif --time-limit 1e-6 took %.2f s", wall);
    w = parse_file("w.json");
    expect_str(w, "status", "time-limit");
    ck_assert(child(w, "slowed_s")->valuedouble > 0.0);
    cJSON_Delete(w);
    wall = run_timed(exp, 7, "the files are complete");
    ck_assert_msg(wall <= tu_timeout(12.0), "export --time-limit 1e-6 took %.2f s", wall);
    /* every idle GPU listed, the last one last */
    ranks = tp_read("ex/ranks.txt");
    ck_assert_ptr_nonnull(ranks);
    ck_assert_ptr_nonnull(strstr(ranks, "# idle GPUs (no rank runs on them):"));
    ck_assert_ptr_nonnull(strstr(ranks, "# a-32767                 7  A100-80GB\n"));
    free(ranks);
    rss = children_rss_mib();
    ck_assert_msg(rss < 768.0, "the largest child took %.0f MiB", rss);
}
END_TEST

/* A timeline near the most events the simulator holds: 16,384 replicas
 * of one stage (tp 1, 16,384 A100) and 500 micro-batches each (16.4
 * million events), 4,096 small layers.  report --time-limit 2 stops the
 * simulation (between replicas, sweeps and passes of the ordering) and
 * ends within a margin: the stage times of each replica took 20 s
 * before the first check and the simulation ran to its end.  The report
 * is drawn without the timeline. */
START_TEST(report_cuts_the_simulation)
{
    const char *ev[] = {"evaluate", "--cluster", "c16384.json", "--model", "m4096.json",
                        "--strategies", "s16384.json", "--output", "wide.json",
                        "--quiet", NULL};
    const char *rep[] = {"report", "--plan", "wide.json", "--output", "wide.svg",
                         "--format", "json", "--time-limit", "2", NULL};
    char *out, *svg;
    double wall;
    cJSON *j;

    tp_write("c16384.json", "{\"name\":\"wide\",\"nodes\":[{\"name\":\"a\","
                            "\"count\":2048,\"device\":\"A100-80GB\",\"gpus\":8,"
                            "\"intra_gbps\":2400,\"nic_gbps\":200}]}");
    tp_write("m4096.json", "{\"name\":\"m\",\"training\":{\"global_batch\":8192000,"
                           "\"precision\":\"fp16\"},\"transformer\":{\"family\":\"gpt3\","
                           "\"layers\":4093,\"hidden\":256,\"heads\":4,\"seq\":256,"
                           "\"vocab\":51200}}");
    tp_write("s16384.json", "{\"strategies\":[{\"tp\":1,\"dp\":16384,\"pp\":1,"
                            "\"mbs\":1}]}");
    free(run_expect(ev, 0, NULL));
    {
        double t0 = mono_s();
        out = run_expect(rep, 7, "the report is drawn without it");
        wall = mono_s() - t0;
    }
    ck_assert_msg(wall <= 2.0 + tu_timeout(6.0), "report --time-limit 2 took %.2f s",
                  wall);
    j = parse(out, "report's summary");
    expect_str(j, "status", "time-limit");
    ck_assert(cJSON_IsNull(child(j, "timeline")));
    cJSON_Delete(j);
    free(out);
    svg = tp_read("wide.svg");
    ck_assert_ptr_nonnull(svg);
    ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
    free(svg);
}
END_TEST

/* plan on the largest cluster it plans (131,072 GPUs, 8,192 nodes of A100
 * and of H100) and a model of 128 blocks: the search stops at the limit,
 * and evaluating the strategies kept and writing the plan (two
 * strategies of 131,072 ranks, 72 MB) take about 2 s and 170 MB after
 * it: the ranks are written as text, not as a tree of a million items
 * (5 s and 560 MB).  The limit is scaled with the machine, so that some
 * candidate fits in time. */
START_TEST(plan_at_the_limit)
{
    char limit[32];
    const char *args[] = {"plan", "--cluster", "c131072.json", "--model", "m128.json",
                          "--time-limit", limit, "--output", "p.json", "--quiet", NULL};
    double wall, rss, t = tu_timeout(3.0);
    cJSON *p;

    snprintf(limit, sizeof limit, "%g", t);
    tp_write("c131072.json", "{\"name\":\"big\",\"nodes\":[{\"name\":\"a\","
                             "\"count\":8192,\"device\":\"A100-80GB\",\"gpus\":8,"
                             "\"intra_gbps\":2400,\"nic_gbps\":200},{\"name\":\"h\","
                             "\"count\":8192,\"device\":\"H100-SXM\",\"gpus\":8,"
                             "\"intra_gbps\":3600,\"nic_gbps\":400}]}");
    tp_write("m128.json", "{\"name\":\"m\",\"training\":{\"global_batch\":65536,"
                          "\"precision\":\"fp16\"},\"transformer\":{\"family\":"
                          "\"gpt2\",\"layers\":128,\"hidden\":12288,\"heads\":96,"
                          "\"seq\":2048,\"vocab\":50257}}");
    wall = run_timed(args, 7, "the plan holds the best found so far");
    ck_assert_msg(wall <= t + tu_timeout(5.0), "plan --time-limit %s took %.2f s", limit,
                  wall);
    rss = children_rss_mib();
    ck_assert_msg(rss < 320.0, "plan --time-limit %s took %.0f MiB", limit, rss);
    p = parse_file("p.json");
    expect_str(child(p, "search"), "status", "time-limit");
    ck_assert_int_ge(cJSON_GetArraySize(child(p, "strategies")), 1);
    ck_assert_int_eq(cJSON_GetArraySize(child(cJSON_GetArrayItem(child(p, "strategies"), 0),
                                              "ranks")),
                     131072);
    cJSON_Delete(p);
}
END_TEST

/* ---- report: the timeline is left out ------------------------------- */

START_TEST(report_without_timeline)
{
    const char *tiny[] = {"report", "--plan", "plan.json", "--output", "tiny.svg",
                          "--format", "json", "--time-limit", TINY, NULL};
    const char *none[] = {"report", "--plan", "plan.json", "--output", "none.svg",
                          "--format", "json", NULL};
    const char *year[] = {"report", "--plan", "plan.json", "--output", "year.svg",
                          "--format", "json", "--time-limit", YEAR, NULL};
    runs3 r;
    const cJSON *t, *n;
    char *svg;
    size_t len;

    write_plan();
    run_three(&r, tiny, "the report is drawn without it", none, year,
              "report's summary");
    t = r.t;
    n = r.n;
    expect_str(t, "status", "time-limit");
    ck_assert(cJSON_IsNull(child(t, "timeline")));
    expect_str(n, "status", "complete");
    ck_assert(cJSON_IsObject(child(n, "timeline")));
    /* a whole SVG document, without the timeline */
    svg = tp_read("tiny.svg");
    ck_assert_ptr_nonnull(svg);
    len = strlen(svg);
    ck_assert_ptr_nonnull(strstr(svg, "<svg"));
    ck_assert_msg(len > 6 && strcmp(svg + len - 7, "</svg>\n") == 0, "SVG cut: ...%s",
                  svg + (len > 40 ? len - 40 : 0));
    free(svg);
    expect_year_as_none(&r, "none.svg", "year.svg");
}
END_TEST

/* ---- export: bounded, never cut ------------------------------------- */

START_TEST(export_checks_once)
{
    const char *tiny[] = {"export", "--plan", "plan.json", "--to", "torchrun",
                          "--output", "tiny", "--format", "json", "--time-limit", TINY,
                          NULL};
    const char *none[] = {"export", "--plan", "plan.json", "--to", "torchrun",
                          "--output", "none", "--quiet", NULL};
    const char *year[] = {"export", "--plan", "plan.json", "--to", "torchrun",
                          "--output", "year", "--quiet", "--time-limit", YEAR, NULL};
    const char *files[] = {"torchrun.sh", "ranks.txt", NULL};
    char *out, a[64], b[64], c[64];
    cJSON *t;
    int i;

    write_plan();
    out = run_expect(tiny, 7, "the files are complete");
    free(run_expect(none, 0, NULL));
    free(run_expect(year, 0, NULL));
    t = parse(out, "export's listing");
    expect_str(t, "status", "time-limit");
    cJSON_Delete(t);
    free(out);
    /* the files cut by nothing: the same as without a limit */
    for (i = 0; files[i] != NULL; i++) {
        snprintf(a, sizeof a, "tiny/%s", files[i]);
        snprintf(b, sizeof b, "none/%s", files[i]);
        snprintf(c, sizeof c, "year/%s", files[i]);
        expect_same_file(a, b);
        expect_same_file(c, b);
    }
}
END_TEST

/* ---- the option on every command ------------------------------------ */

/* Each command takes --time-limit, lists it in its --help, and refuses a
 * limit out of range naming its own help. */
START_TEST(every_command_takes_it)
{
    const char *cmds[] = {"plan", "evaluate", "calibrate", "decentralized", "whatif",
                          "replan", "export", "report", "inspect", NULL};
    int i;

    for (i = 0; cmds[i] != NULL; i++) {
        const char *help[] = {cmds[i], "--help", NULL};
        const char *bad[] = {cmds[i], "--time-limit", "0", NULL};
        char *out = run_expect(help, 0, NULL), want[64];
        tp_run_out r;

        ck_assert_msg(strstr(out, "--time-limit SECONDS") != NULL,
                      "'%s --help' lacks --time-limit", cmds[i]);
        free(out);
        tp_run(&r, bad);
        ck_assert_msg(r.status == 2, "%s: exit %d", cmds[i], r.status);
        ck_assert_msg(strstr(r.err, "option '--time-limit' expects seconds in "
                                    "(0, 31536000], got '0'") != NULL,
                      "%s: %s", cmds[i], r.err);
        snprintf(want, sizeof want, "planner %s --help", cmds[i]);
        ck_assert_msg(strstr(r.err, want) != NULL, "%s: %s", cmds[i], r.err);
        tp_run_free(&r);
    }
}
END_TEST

static Suite *timelimit_suite(void)
{
    Suite *s = suite_create("timelimit");
    TCase *tc = tcase_create("commands");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, evaluate_scores_those_done);
    tcase_add_test(tc, calibrate_keeps_best_fit);
    tcase_add_test(tc, whatif_lists_remedies_not_evaluated);
    tcase_add_test(tc, decentralized_time_limit);
    tcase_add_test(tc, decentralized_at_its_largest);
    tcase_add_test(tc, report_without_timeline);
    tcase_add_test(tc, whatif_and_export_at_the_limit);
    tcase_add_test(tc, report_cuts_the_simulation);
    tcase_add_test(tc, plan_at_the_limit);
    tcase_add_test(tc, export_checks_once);
    tcase_add_test(tc, every_command_takes_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(timelimit_suite());
}
