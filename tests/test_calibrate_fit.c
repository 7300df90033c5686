/* tests/test_calibrate_fit.c: calibration by least absolute deviation
 * (calibrate/fit.c), calibrated profiles and `planner calibrate`. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "calibrate.h"
#include "testutil.h"

#define EXAMPLES HETPLAN_SOURCE_DIR "/examples/"

/* ---- synthetic trials made by the model itself ----------------------- */

typedef struct synth {
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;          /* empty: every layer time estimated */
    fmt_strategy s[64];
    double measured[64];
    int n;
} synth;

/* The parameters the trials are generated with. */
static void truth(fmt_calibration *cal)
{
    int v, t;

    fmt_calibration_init(cal);
    v = fmt_calibration_add_type(cal, "V100");
    t = fmt_calibration_add_type(cal, "T4");
    cal->compute_scale[v] = 0.8;
    cal->mbs_half[v] = 0.5;
    cal->compute_scale[t] = 1.3;
    cal->mbs_half[t] = 1.0;
    cal->bw_frac[FMT_LINK_INTRA] = 0.8;
    cal->bw_frac[FMT_LINK_INTER] = 0.3;
    cal->msg_latency = 50e-6;
    cal->tp_fixed = 0.3e-3;
    cal->iter_overhead = 0.04;
}

/* Strategies over tp, pp, mbs on the 12 V100 + 4 T4 cluster, even layer
 * split, measured = the model's time under cal. */
static void make_synth(synth *x, const fmt_calibration *cal)
{
    static const int tps[] = {1, 2, 4}, pps[] = {1, 2, 4, 8, 16}, mbss[] = {1, 2, 4, 8};
    util_error err;
    cost_params cp;
    size_t a, b, k;
    int i, gb = 32;

    memset(x, 0, sizeof *x);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(EXAMPLES "amp-het.json", &x->c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EXAMPLES "gpt2-amp.json", &x->m, &err), UTIL_OK);
    x->prof.nlayers = x->m.nlayers;
    cost_params_init(&cp);
    cp.calib = cal;
    for (a = 0; a < 3; a++)
        for (b = 0; b < 5; b++)
            for (k = 0; k < 4; k++) {
                int tp = tps[a], pp = pps[b], mbs = mbss[k], dp;
                fmt_strategy *s = &x->s[x->n];
                cost_result r;
                if (tp * pp > 16 || x->n >= 64)
                    continue;
                dp = 16 / (tp * pp);
                if (gb % (dp * mbs) != 0)
                    continue;
                ck_assert_int_eq(fmt_strategy_alloc(s, tp, dp, pp), UTIL_OK);
                s->mbs = mbs;
                s->gas = gb / (dp * mbs);
                for (i = 0; i <= pp; i++)
                    s->bounds[i] = i * x->m.nlayers / pp;
                for (i = 0; i < 16; i++)
                    s->ranks[i] = i;
                ck_assert_int_eq(fmt_strategy_check(&x->c, &x->m, s, gb, &err), UTIL_OK);
                ck_assert_int_eq(cost_evaluate(&x->c, &x->m, &x->prof, &cp, s, &r, &err),
                                 UTIL_OK);
                x->measured[x->n++] = r.iter_s;
                cost_result_free(&r);
            }
    ck_assert_int_ge(x->n, 30);
}

static void free_synth(synth *x)
{
    int i;

    for (i = 0; i < x->n; i++)
        fmt_strategy_free(&x->s[i]);
    fmt_model_free(&x->m);
    fmt_cluster_free(&x->c);
}

static void expect_near(double got, double want, double rel, double abs_tol,
                        const char *what)
{
    ck_assert_msg(fabs(got - want) <= rel * fabs(want) + abs_tol,
                  "%s: fitted %.6g, true %.6g", what, got, want);
}

static void expect_recovered(const fmt_calibration *got, const fmt_calibration *want,
                             double rel)
{
    int i, k;
    static const char *const names[] = {"V100", "T4"};

    for (i = 0; i < 2; i++) {
        int g = fmt_calibration_type(got, names[i]), w = fmt_calibration_type(want, names[i]);
        ck_assert_int_ge(g, 0);
        expect_near(got->compute_scale[g], want->compute_scale[w], rel, 0.0, "compute_scale");
        expect_near(got->mbs_half[g], want->mbs_half[w], rel, 0.01, "mbs_half");
    }
    for (k = FMT_LINK_INTRA; k <= FMT_LINK_INTER; k++)
        expect_near(got->bw_frac[k], want->bw_frac[k], rel, 0.0, "bw_frac");
    ck_assert_msg(got->bw_frac[FMT_LINK_REGION] == 0.0,
                  "no trial crosses regions: bw_frac stays at the default");
    expect_near(got->msg_latency, want->msg_latency, rel, 2e-6, "msg_latency");
    expect_near(got->tp_fixed, want->tp_fixed, rel, 2e-5, "tp_fixed");
    expect_near(got->iter_overhead, want->iter_overhead, rel, 1e-3, "iter_overhead");
}

START_TEST(test_recovers_exact)
{
    synth x;
    fmt_calibration want;
    cost_params cp;
    util_error err;
    calib_params sp;
    calib_fit fit;

    truth(&want);
    make_synth(&x, &want);
    cost_params_init(&cp);
    calib_params_init(&sp);
    sp.reg = 0.0;
    sp.max_rounds = 60;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n,
                                      &sp, &fit, &err), UTIL_OK);
    ck_assert_int_eq(fit.nfit, x.n);
    ck_assert_msg(fit.mape < 1e-4, "noise-free fit leaves MAPE %.3g", fit.mape);
    expect_recovered(&fit.cal, &want, 0.02);
    free_synth(&x);
}
END_TEST

/* A deadline already passed (1e-9 s of the monotonic clock, long gone):
 * the fit stops after its first LP round, which is the whole of a fit
 * limited to one round, and leave-one-out starts no fit without a trial. */
START_TEST(test_deadline_keeps_first_round)
{
    synth x;
    fmt_calibration want;
    cost_params cp;
    calib_params sp, one;
    calib_fit cut, first, full;
    fmt_trial_set ts;
    calib_trial t[64];
    int left[64], ndone = -1, i;

    truth(&want);
    make_synth(&x, &want);
    cost_params_init(&cp);
    calib_params_init(&sp);
    one = sp;
    one.max_rounds = 1;
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n, &sp,
                               &full, NULL), UTIL_OK);
    ck_assert_int_gt(full.rounds, 1);
    ck_assert_int_eq(full.timed_out, 0);
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n, &one,
                               &first, NULL), UTIL_OK);
    sp.deadline = 1e-9;
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n, &sp,
                               &cut, NULL), UTIL_OK);
    ck_assert_int_eq(cut.rounds, 1);
    ck_assert_int_eq(cut.timed_out, 1);
    ck_assert_int_eq(first.timed_out, 0);
    ck_assert_double_eq(cut.objective, first.objective);
    ck_assert_double_eq(cut.cal.tp_fixed, first.cal.tp_fixed);
    ck_assert(cut.objective >= full.objective);
    /* leave-one-out: the fit on all (cut) predicts every trial */
    memset(&ts, 0, sizeof ts);
    ts.s = x.s;
    ts.measured_s = x.measured;
    ts.failed_memory = calloc((size_t)x.n, sizeof *ts.failed_memory);
    ts.n = x.n;
    ck_assert_ptr_nonnull(ts.failed_memory);
    for (i = 0; i < x.n; i++)
        left[i] = -1;
    ck_assert_int_eq(calib_loo_until(&x.c, &x.m, &x.prof, &cp, &ts, &sp, t, left,
                                     &ndone, NULL), UTIL_OK);
    ck_assert_int_eq(ndone, 0);
    for (i = 0; i < x.n; i++)
        ck_assert_int_eq(left[i], 0);
    free(ts.failed_memory);
    free_synth(&x);
}
END_TEST

START_TEST(test_robust_to_outliers)
{
    synth x;
    fmt_calibration want;
    cost_params cp;
    util_error err;
    calib_params sp;
    calib_fit fit;
    int i, outliers[3] = {3, 11, 20}, big = 0;

    truth(&want);
    make_synth(&x, &want);
    for (i = 0; i < 3; i++) /* three runs disturbed by something else */
        x.measured[outliers[i]] *= i == 1 ? 0.6 : 1.8;
    x.measured[7] = -1.0; /* and one that failed: left out */
    cost_params_init(&cp);
    calib_params_init(&sp);
    sp.reg = 0.0;
    sp.max_rounds = 60;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n,
                                      &sp, &fit, &err), UTIL_OK);
    ck_assert_int_eq(fit.nfit, x.n - 1);
    /* least absolute deviation puts the outliers' error on the outliers */
    expect_recovered(&fit.cal, &want, 0.05);
    cp.calib = &fit.cal;
    for (i = 0; i < x.n; i++) {
        cost_result r;
        double rel;
        ck_assert_int_eq(cost_evaluate(&x.c, &x.m, &x.prof, &cp, &x.s[i], &r, &err),
                         UTIL_OK);
        rel = fabs(r.iter_s - x.measured[i]) / x.measured[i];
        if (x.measured[i] > 0.0 && rel > 0.1)
            big++;
        cost_result_free(&r);
    }
    ck_assert_int_eq(big, 3);
    free_synth(&x);
}
END_TEST

START_TEST(test_neutral_is_identity)
{
    synth x;
    fmt_calibration neutral;
    cost_params cp;
    util_error err;
    int i;

    make_synth(&x, NULL);
    fmt_calibration_init(&neutral);
    fmt_calibration_add_type(&neutral, "V100");
    cost_params_init(&cp);
    memset(&err, 0, sizeof err);
    for (i = 0; i < x.n; i++) {
        cost_result a, b;
        cp.calib = NULL;
        ck_assert_int_eq(cost_evaluate(&x.c, &x.m, &x.prof, &cp, &x.s[i], &a, &err), UTIL_OK);
        cp.calib = &neutral;
        ck_assert_int_eq(cost_evaluate(&x.c, &x.m, &x.prof, &cp, &x.s[i], &b, &err), UTIL_OK);
        ck_assert_double_eq_tol(a.iter_s, b.iter_s, 1e-12 * a.iter_s);
        ck_assert_double_eq_tol(x.measured[i], a.iter_s, 1e-12 * a.iter_s);
        cost_result_free(&a);
        cost_result_free(&b);
    }
    free_synth(&x);
}
END_TEST

/* The calibration of one layer by hand (costmodel/calibration.c): the
 * extra work (compute_scale - 1) W + compute_scale b_half w goes to the
 * backward times the work's ratio when it is given, else times
 * (bwd - comm/2) / (fwd - comm/2); tp_fixed is split half and half
 * between the passes, and only under TP for a layer with collectives. */
START_TEST(test_layer_by_hand)
{
    fmt_calibration cal;
    fmt_device_type dt;
    fmt_layer l;
    double fwd, bwd, extra;
    int t;

    memset(&dt, 0, sizeof dt);
    strcpy(dt.name, "T4");
    memset(&l, 0, sizeof l);
    l.tp_collectives = 2;
    fmt_calibration_init(&cal);
    t = fmt_calibration_add_type(&cal, "T4");
    cal.compute_scale[t] = 1.5;
    cal.mbs_half[t] = 2.0;
    cal.tp_fixed = 3e-3;
    extra = 0.5 * 4e-3 + 1.5 * 2.0 * 4e-3 / 4.0; /* W = 4 ms at mbs 4 */
    fwd = 10e-3;
    bwd = 18e-3;
    cost_calibration_layer(&cal, &dt, &l, 2, 4, 4e-3, 2.5, 2e-3, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, 10e-3 + extra + 1.5e-3, 1e-15);
    ck_assert_double_eq_tol(bwd, 18e-3 + 2.5 * extra + 1.5e-3, 1e-15);
    fwd = 10e-3;
    bwd = 18e-3;
    cost_calibration_layer(&cal, &dt, &l, 2, 4, 4e-3, 0.0, 2e-3, &fwd, &bwd);
    ck_assert_double_eq_tol(bwd, 18e-3 + 17e-3 / 9e-3 * extra + 1.5e-3, 1e-15);
    fwd = 10e-3;
    bwd = 18e-3;
    cost_calibration_layer(&cal, &dt, &l, 1, 4, 4e-3, 2.5, 0.0, &fwd, &bwd);
    ck_assert_double_eq_tol(fwd, 10e-3 + extra, 1e-15);
    ck_assert_double_eq_tol(bwd, 18e-3 + 2.5 * extra, 1e-15);
}
END_TEST

START_TEST(test_too_few_trials)
{
    synth x;
    cost_params cp;
    util_error err;
    calib_fit fit;
    int i;

    make_synth(&x, NULL);
    for (i = 1; i < x.n; i++)
        x.measured[i] = -1.0;
    cost_params_init(&cp);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(calib_run(&x.c, &x.m, &x.prof, &cp, x.s, x.measured, x.n,
                                      NULL, &fit, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "at least 2 trials"));
    free_synth(&x);
}
END_TEST

/* ---- the command line ------------------------------------------------ */

static char tmp_dir[256];

static void setup(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/hetplan-calibrate-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static void teardown(void)
{
    static const char *const names[] = {"trials.json", "profile.json", "out.json",
                                        "bad.json", "stdout", "stderr", "plan.json"};
    char p[512];
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", tmp_dir, names[i]);
        unlink(p);
    }
    rmdir(tmp_dir);
}

static const char *tpath(char *buf, const char *name)
{
    snprintf(buf, 512, "%s/%s", tmp_dir, name);
    return buf;
}

static void put(const char *name, const char *text)
{
    tu_put(tmp_dir, name, text);
}

static char *slurp(const char *name)
{
    char p[512], *text = NULL;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(util_read_file(tpath(p, name), &text, &err), UTIL_OK);
    return text;
}

/* Run the planner with argv (NULL-terminated) from the source dir;
 * stdout and stderr go to files in tmp_dir.  Returns the exit code. */
static int planner(const char *const *args)
{
    char out[512], errp[512];
    char *argv[32];
    int n = 0, st = 0;
    pid_t pid;

    argv[n++] = strdup(HETPLAN_PLANNER);
    while (args[n - 1] != NULL && n < 31) {
        argv[n] = strdup(args[n - 1]);
        n++;
    }
    argv[n] = NULL;
    tpath(out, "stdout");
    tpath(errp, "stderr");
    fflush(stdout);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0 ||
            chdir(HETPLAN_SOURCE_DIR) != 0)
            _exit(126);
        execv(HETPLAN_PLANNER, argv);
        _exit(127);
    }
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_int_eq(errno, EINTR);
    while (n > 0)
        free(argv[--n]);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) < 126, "planner did not run");
    return WEXITSTATUS(st);
}

/* A small trials file: strategies of `evaluate` with measured_s made by
 * the model under the true calibration (one run failed). */
static void write_trials(void)
{
    synth x;
    fmt_calibration want;
    char *text, buf[256];
    size_t cap = 1 << 16, used = 0;
    int i, j, k = 0;

    truth(&want);
    make_synth(&x, &want);
    text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    used += (size_t)snprintf(text + used, cap - used, "{\"global_batch\": 32, \"strategies\": [\n");
    for (i = 0; i < x.n; i += 2, k++) {
        const fmt_strategy *s = &x.s[i];
        used += (size_t)snprintf(text + used, cap - used,
                                 "%s{\"tp\": %d, \"dp\": %d, \"pp\": %d, \"mbs\": %d, "
                                 "\"stage_boundaries\": [", k ? ",\n" : "", s->tp, s->dp,
                                 s->pp, s->mbs);
        for (j = 0; j <= s->pp; j++)
            used += (size_t)snprintf(text + used, cap - used, "%s%d", j ? ", " : "",
                                     s->bounds[j]);
        if (k == 1)
            snprintf(buf, sizeof buf, "null, \"failure\": \"memory\"");
        else
            snprintf(buf, sizeof buf, "%.17g", x.measured[i]);
        used += (size_t)snprintf(text + used, cap - used, "], \"measured_s\": %s}", buf);
    }
    snprintf(text + used, cap - used, "\n]}\n");
    put("trials.json", text);
    put("profile.json", "{\"format\": \"hetplan-profile/1\", \"entries\": []}\n");
    free(text);
    free_synth(&x);
}

/* The number of "trial N: ..., fitted X s" lines in text; fails the
 * test on a trial line that does not end that way. */
static int fitted_trial_lines(const char *text)
{
    size_t at = 0, end;
    int lines = 0;

    while (text[at] != '\0' && strncmp(text + at, "trial 0: ", 9) != 0)
        at++;
    ck_assert_msg(text[at] != '\0', "no \"trial 0: \" line");
    for (; text[at] != '\0'; at = end + 1) {
        char line[512], *num, *rest;
        end = at + strcspn(text + at, "\n");
        if (strncmp(text + at, "trial ", 6) == 0) {
            ck_assert_uint_lt(end - at, sizeof line);
            memcpy(line, text + at, end - at);
            line[end - at] = '\0';
            num = strstr(line, ", fitted ");
            ck_assert_msg(num != NULL, "%s", line);
            strtod(num + strlen(", fitted "), &rest);
            ck_assert_msg(strcmp(rest, " s") == 0, "%s", line);
            lines++;
        }
        if (text[end] == '\0')
            break;
    }
    return lines;
}

START_TEST(test_cli_end_to_end)
{
    char tr[512], pr[512], out[512], pl[512], *text;
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    util_error err;
    fmt_calibration want;
    int rc;

    write_trials();
    tpath(tr, "trials.json");
    tpath(pr, "profile.json");
    tpath(out, "out.json");
    {
        const char *args[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", pr, "--trials", tr,
                              "--reg", "0", "--output", out, NULL};
        rc = planner(args);
    }
    text = slurp("stderr");
    ck_assert_msg(rc == 0, "calibrate exit %d: %s", rc, text);
    /* progress goes to a terminal only (or with --verbose) */
    ck_assert_ptr_null(strstr(text, "planner: calibrate "));
    ck_assert_ptr_null(strstr(text, "already calibrated")); /* pr has none */
    free(text);
    text = slurp("stdout");
    ck_assert_ptr_null(strstr(text, "profile as given"));
    ck_assert_ptr_nonnull(strstr(text, "V100.compute_scale"));
    ck_assert_ptr_nonnull(strstr(text, "leave-one-out"));
    ck_assert_ptr_nonnull(strstr(text, "1 failed runs left out"));
    free(text);
    /* the calibrated profile reads back with the fitted values */
    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(EXAMPLES "amp-het.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EXAMPLES "gpt2-amp.json", &m, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_profile(out, &m, &prof, &err), UTIL_OK);
    ck_assert_ptr_nonnull(prof.calib);
    truth(&want);
    expect_recovered(prof.calib, &want, 0.05);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    /* JSON report, and planning with the calibrated profile */
    {
        const char *args[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", out, "--trials", tr,
                              "--no-loo", "--format", "json", "--verbose", NULL};
        ck_assert_int_eq(planner(args), 0);
    }
    /* --verbose: the steps of the fit as progress lines on stderr */
    text = slurp("stderr");
    ck_assert_ptr_nonnull(strstr(text, "planner: calibrate "));
    ck_assert_ptr_nonnull(strstr(text, "fitting the constants to "));
    ck_assert_ptr_nonnull(strstr(text, ": done\n"));
    /* --verbose --no-loo: each trial line ends with its fitted time, no
     * leave-one-out figure */
    ck_assert_int_ge(fitted_trial_lines(text), 2);
    free(text);
    text = slurp("stdout");
    ck_assert_ptr_nonnull(strstr(text, "\"in_sample\""));
    ck_assert_ptr_null(strstr(text, "\"loo\""));
    free(text);
    /* calibrating the calibrated profile again, as before (reg 0, same
     * trials): a note says the constants are fitted from neutral values,
     * and the profile's own calibration, scored as given, predicts every
     * trial as this run's fit does (the same LP from the same start: the
     * written calibration reproduces the fit) */
    {
        const char *args[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", out, "--trials", tr,
                              "--reg", "0", "--no-loo", "--format", "json", NULL};
        cJSON *doc, *sc, *p;
        int k;
        ck_assert_int_eq(planner(args), 0);
        text = slurp("stderr");
        ck_assert_msg(strstr(text, "planner: note: profile '") != NULL &&
                      strstr(text, "out.json' is already calibrated: the constants "
                                   "are fitted again from neutral values") != NULL,
                      "no note in: %s", text);
        free(text);
        text = slurp("stdout");
        doc = cJSON_Parse(text);
        free(text);
        ck_assert_ptr_nonnull(doc);
        sc = cJSON_GetObjectItem(doc, "scores");
        ck_assert_ptr_nonnull(cJSON_GetObjectItem(sc, "profile_as_given"));
        ck_assert_double_eq_tol(
            cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "profile_as_given"), "mape")->valuedouble,
            cJSON_GetObjectItem(cJSON_GetObjectItem(sc, "in_sample"), "mape")->valuedouble,
            1e-6);
        k = 0;
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(doc, "predictions")) {
            double g = cJSON_GetObjectItem(p, "profile_as_given_s")->valuedouble;
            double f = cJSON_GetObjectItem(p, "fitted_s")->valuedouble;
            ck_assert_double_eq_tol(g, f, 1e-6 * f);
            k++;
        }
        ck_assert_int_gt(k, 2);
        cJSON_Delete(doc);
    }
    tpath(pl, "plan.json");
    {
        const char *args[] = {"--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", out, "--quiet",
                              "--output", pl, NULL};
        ck_assert_int_eq(planner(args), 0);
    }
}
END_TEST

/* exit code and a message naming the file, the JSON path and what was
 * expected */
static void expect_bad(const char *file_text, const char *opt, int code,
                       const char *path, const char *expected)
{
    char tr[512], pr[512], *text;
    int rc;

    put("bad.json", file_text);
    put("profile.json", "{\"format\": \"hetplan-profile/1\", \"entries\": []}\n");
    tpath(tr, "bad.json");
    tpath(pr, "profile.json");
    if (strcmp(opt, "--profile") == 0) {
        const char *args[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", tr, "--trials",
                              "examples/strategies-amp-het.json", NULL};
        rc = planner(args);
    } else {
        const char *args[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                              "examples/gpt2-amp.json", "--profile", pr, opt, tr, NULL};
        rc = planner(args);
    }
    text = slurp("stderr");
    ck_assert_msg(rc == code, "exit %d (want %d): %s", rc, code, text);
    ck_assert_msg(strstr(text, "bad.json") != NULL, "no file name in: %s", text);
    ck_assert_msg(strstr(text, path) != NULL, "no path '%s' in: %s", path, text);
    ck_assert_msg(strstr(text, expected) != NULL, "no '%s' in: %s", expected, text);
    free(text);
}

START_TEST(test_cli_bad_trials)
{
    expect_bad("{\"strategies\": [{\"tp\": 1, \"dp\": 16, \"pp\": 1, \"mbs\": 1, "
               "\"stage_boundaries\": [0, 30], \"measured_s\": \"fast\"}]}",
               "--trials", 3, "strategies[0].measured_s", "expected a positive number");
    expect_bad("{\"strategies\": [{\"tp\": 1, \"dp\": 16, \"pp\": 1, \"mbs\": 1, "
               "\"stage_boundaries\": [0, 30], \"measured_s\": -2}]}",
               "--trials", 3, "strategies[0].measured_s", "expected a positive number");
    expect_bad("{\"strategies\": [{\"tp\": 1, \"dp\": 16, \"pp\": 1, \"mbs\": 1, "
               "\"stage_boundaries\": [0, 30]}]}",
               "--trials", 3, "strategies", "expected at least one entry with a 'measured_s'");
    expect_bad("{\"strategies\": [{\"tp\": 1, \"dp\": 8, \"pp\": 1, \"mbs\": 1, "
               "\"stage_boundaries\": [0, 30], \"measured_s\": 1.0}]}",
               "--trials", 3, "strategies[0]", "does not match the cluster's 16 GPUs");
    expect_bad("{\"trials\": []}", "--amp-trials", 3, "trials", "expected a non-empty array");
    expect_bad("{\"strategies\": [", "--trials", 3, "", "JSON");
    expect_bad("{\"entries\": [], \"calibration\": {\"links\": {\"backplane\": 0.5}}}",
               "--profile", 3, "calibration.links.backplane", "unknown link class");
    expect_bad("{\"entries\": [], \"calibration\": {\"devices\": {\"T4\": "
               "{\"compute_scale\": -1}}}}",
               "--profile", 3, "calibration.devices.T4.compute_scale", "expected");
}
END_TEST

START_TEST(test_cli_usage)
{
    const char *a1[] = {"calibrate", "--cluster", "examples/amp-het.json", "--model",
                        "examples/gpt2-amp.json", "--trials", "x.json", NULL};
    const char *a2[] = {"calibrate", "--help", NULL};
    char *text;

    ck_assert_int_eq(planner(a1), 2);
    text = slurp("stderr");
    ck_assert_ptr_nonnull(strstr(text, "--profile"));
    free(text);
    ck_assert_int_eq(planner(a2), 0);
    text = slurp("stdout");
    ck_assert_ptr_nonnull(strstr(text, "--amp-trials"));
    free(text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("lad");
    TCase *cli = tcase_create("cli");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_neutral_is_identity);
    tcase_add_test(tc, test_recovers_exact);
    tcase_add_test(tc, test_robust_to_outliers);
    tcase_add_test(tc, test_deadline_keeps_first_round);
    tcase_add_test(tc, test_too_few_trials);
    tcase_add_test(tc, test_layer_by_hand);
    suite_add_tcase(s, tc);
    tcase_set_timeout(cli, 120);
    tcase_add_checked_fixture(cli, setup, teardown);
    tcase_add_test(cli, test_cli_end_to_end);
    tcase_add_test(cli, test_cli_bad_trials);
    tcase_add_test(cli, test_cli_usage);
    suite_add_tcase(s, cli);
    return tu_run(s);
}
