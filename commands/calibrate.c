/* commands/calibrate.c: planner calibrate, which fits the cost model's
 * calibration constants to measured iteration times. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h> /* the --format json report */

#include "calibrate.h"
#include "commands.h"

static const char calibrate_usage[] =
    "usage: planner calibrate --cluster FILE --model FILE\n"
    "                         (--profile FILE | --amp-profile FILE[:KEY])\n"
    "                         (--trials FILE | --amp-trials FILE) [options]\n"
    "\n"
    "Fits the cost model's calibration constants (per device type compute\n"
    "efficiency and its curve over micro-batch size, bandwidth fraction per\n"
    "link class, per-message latency, fixed cost per micro-batch and layer\n"
    "under tensor parallelism, framework overhead per iteration) to measured\n"
    "iteration times by least absolute deviation (a linear program, GLPK),\n"
    "prints the fit with its in-sample and leave-one-out errors, and writes a\n"
    "calibrated profile that 'planner --profile FILE' uses (docs/calibration.md).\n"
    "\n"
    "inputs:\n"
    "  --cluster FILE         cluster the trials ran on\n"
    "  --model FILE           model the trials trained\n"
    "  --profile FILE         per-layer times (hetplan-profile/1; a calibration in it is\n"
    "                         scored, then fitted again from neutral values)\n"
    "  --amp-profile FILE[:KEY]  AMP's profiles.json (KEY: gpt2)\n"
    "  --trials FILE          strategies as for 'planner evaluate', each with\n"
    "                         \"measured_s\" (null or absent: the run failed)\n"
    "  --amp-trials FILE      one of AMP's experiment logs (homogeneous.json, het_cluster.json)\n"
    "options:\n"
    "  --output FILE          write the calibrated profile (atomically)\n"
    "  --global-batch N       global batch of the trials (default: the file's, else the model's)\n"
    "  --param NAME=VALUE     cost-model constant kept fixed during the fit (repeatable)\n"
    "  --reg X                pull towards the neutral values (default 0.01; 0 = none)\n"
    "  --no-loo               skip the leave-one-out scores (one fit per trial)\n"
    "  --time-limit SECONDS   stop fitting SECONDS after the start, keeping the best\n"
    "                         constants so far (at least one LP round); leave-one-out\n"
    "                         scores only when every trial was left out in time\n"
    "                         (status \"time-limit\", exit code 7)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --strict               unknown keys in input files are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print each trial's predictions on stderr, and\n"
    "                         the steps of the fit (shown on a terminal anyway)\n"
    "  --help\n"
    "exit codes: 0 ok, 1 internal, 2 usage, 3 bad input, 5 cannot write,\n"
    "  7 the time limit cut the fit short (the best so far is written)\n";

/* What the command line sets. */
typedef struct calibrate_opts {
    cmd_output_opts out;
    cmd_input_opts in;
    const char *trials, *amp_trials;
    int global_batch, loo, nparams;
    double reg;
    const char *params[CMD_MAX_PARAMS];
    double time_limit;      /* --time-limit SECONDS, 0 = none */
} calibrate_opts;

/* Options that calibrate_option stores. */
enum { OPT_PARAM = 1, OPT_REG, OPT_TIME_LIMIT };

/* Store the value v of option id in the calibrate_opts ctx; exit code. */
static int calibrate_option(void *ctx, int id, const char *opt, const char *v)
{
    calibrate_opts *o = ctx;
    char *end;

    (void)opt;
    if (id == OPT_PARAM)
        return cmd_add_param(o->params, &o->nparams, v);
    if (id == OPT_TIME_LIMIT)
        return cmd_parse_time_limit("calibrate", v, &o->time_limit);
    o->reg = strtod(v, &end);
    if (end == v || *end != '\0' || !(o->reg >= 0.0 && o->reg <= 100.0))
        return cmd_usage_error(NULL, "option '--reg' expects a number in 0..100, "
                                     "got '%s'", v);
    return CMD_EXIT_OK;
}

/* Parse the command line into o; exit code. */
static int calibrate_args(int argc, char **argv, calibrate_opts *o)
{
    const cmd_option table[] = {
        CMD_INPUT_OPTIONS(&o->in),
        CMD_STRING("--trials", NULL, &o->trials),
        CMD_STRING("--amp-trials", NULL, &o->amp_trials),
        CMD_INT("--global-batch", &o->global_batch, 1, FMT_MAX_GLOBAL_BATCH),
        CMD_SET("--no-loo", NULL, &o->loo, 0),
        CMD_REPEAT("--param", OPT_PARAM),
        CMD_CALL("--reg", OPT_REG),
        CMD_CALL("--time-limit", OPT_TIME_LIMIT),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = calibrate_usage, .options = table,
                          .unknown = " for 'calibrate'",
                          .value_first = 1, .handle = calibrate_option, .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->loo = 1;
    o->reg = 0.01;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if ((code = cmd_require_inputs(&o->in)) != CMD_EXIT_OK)
        return code;
    if ((o->in.profile == NULL) == (o->in.amp_profile == NULL))
        return cmd_usage_error(NULL, "%s", "calibrate needs one of '--profile FILE' or "
                                           "'--amp-profile FILE[:KEY]'");
    if ((o->trials == NULL) == (o->amp_trials == NULL))
        return cmd_usage_error(NULL, "%s", "calibrate needs one of '--trials FILE' or "
                                           "'--amp-trials FILE'");
    return CMD_EXIT_OK;
}

static void calibrate_score_json(cJSON *o, const char *name, const calib_ranking *rk)
{
    cJSON *x = cJSON_AddObjectToObject(o, name);

    cJSON_AddNumberToObject(x, "spearman", rk->spearman);
    cJSON_AddNumberToObject(x, "kendall", rk->kendall);
    if (rk->top1_regret > 0.0)
        cJSON_AddNumberToObject(x, "top1_regret", rk->top1_regret);
    else
        cJSON_AddNullToObject(x, "top1_regret");
    cJSON_AddNumberToObject(x, "mape", rk->mape);
}

static void calibrate_score_row(const char *name, const calib_ranking *rk)
{
    char regret[32];

    if (rk->top1_regret > 0.0)
        snprintf(regret, sizeof regret, "%.3f", rk->top1_regret);
    else
        snprintf(regret, sizeof regret, "failed");
    printf("%-16s %9.3f %9.3f %12s %8.1f%%\n", name, rk->spearman, rk->kendall,
           regret, 100.0 * rk->mape);
}

/* One progress line on stderr: on a terminal, or always with --verbose;
 * never with --quiet.  step names what starts now. */
static void calibrate_progress(const calibrate_opts *o, double t0, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void calibrate_progress(const calibrate_opts *o, double t0, const char *fmt, ...)
{
    va_list ap;

    if (o->out.quiet || !(o->out.verbose || isatty(STDERR_FILENO)))
        return;
    fprintf(stderr, "planner: calibrate %6.1f s: ", cmd_seconds() - t0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

int cmd_calibrate(int argc, char **argv)
{
    double start = cmd_seconds();
    calibrate_opts o;
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params cp;
    util_error err;
    fmt_trial_set ts;
    calib_trial *t0 = NULL, *t1 = NULL, *t2 = NULL, *tg = NULL;
    calib_ranking r0, r1, r2, rg;
    fmt_calibration *given = NULL; /* the calibration --profile came with */
    calib_params sp;
    calib_fit fit;
    cJSON *doc = NULL;
    char *text = NULL, *json = NULL, path[4096];
    const char *key;
    int code, i, failed = 0, loo, loo_done = 0;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&err, 0, sizeof err);
    memset(&ts, 0, sizeof ts);
    memset(&r2, 0, sizeof r2);
    memset(&rg, 0, sizeof rg);
    code = calibrate_args(argc, argv, &o);
    if (code != CMD_EXIT_OK)
        return code;
    if (cmd_load_cluster(o.in.cluster, &c, &err) != UTIL_OK ||
        fmt_load_model(o.in.model, &m, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (cmd_load_profile(&o.in, &m, &prof, path, sizeof path, &key, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (o.in.profile && prof.calib != NULL) { /* refitted from neutral */
        given = prof.calib;
        prof.calib = NULL;
        if (!o.out.quiet)
            fprintf(stderr, "planner: note: profile '%s' is already calibrated: the "
                            "constants are fitted again from neutral values, not from "
                            "its calibration, which is scored on these trials as "
                            "'profile as given'; to plan with it as it is, use "
                            "'planner --profile %s'\n", o.in.profile, o.in.profile);
    }
    if (fmt_load_trials(o.trials ? o.trials : o.amp_trials, o.amp_trials != NULL, &c,
                        &m, o.global_batch, &ts, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    cost_params_init(&cp);
    for (i = 0; i < o.nparams; i++) {
        char name[64];
        double v;
        if (!cmd_split_param(o.params[i], name, sizeof name, &v) ||
            cost_params_set(&cp, name, v, &err) != UTIL_OK) {
            code = cmd_usage_error(NULL, "option '--param %s' expects a known "
                                         "parameter and a number in its range",
                                   o.params[i]);
            goto done;
        }
    }
    calib_params_init(&sp);
    sp.reg = o.reg;
    sp.deadline = o.time_limit > 0.0 ? start + o.time_limit : 0.0;
    t0 = calloc((size_t)ts.n, sizeof *t0);
    t1 = calloc((size_t)ts.n, sizeof *t1);
    t2 = calloc((size_t)ts.n, sizeof *t2);
    tg = calloc((size_t)ts.n, sizeof *tg);
    if (t0 == NULL || t1 == NULL || t2 == NULL || tg == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    for (i = 0; i < ts.n; i++)
        failed += ts.measured_s[i] <= 0.0;
    calibrate_progress(&o, start, "predicting %d trials with the uncalibrated model",
                       ts.n);
    if (calib_predict_trials(&c, &m, &prof, &cp, &ts, t0, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    cp.calib = given; /* the profile's own calibration on these trials */
    if (given != NULL && calib_predict_trials(&c, &m, &prof, &cp, &ts, tg, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    cp.calib = NULL;
    calibrate_progress(&o, start, "fitting the constants to %d measured trials "
                       "(linear program)", ts.n - failed);
    if (calib_run(&c, &m, &prof, &cp, ts.s, ts.measured_s, ts.n, &sp, &fit, &err) !=
            UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    calibrate_progress(&o, start, "fitted %d constants in %d round(s); predicting "
                       "the trials again", fit.nfree, fit.rounds);
    cp.calib = &fit.cal;
    if (calib_predict_trials(&c, &m, &prof, &cp, &ts, t1, &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    cp.calib = NULL;
    /* leave-one-out: not started once the time limit has passed */
    loo = o.loo && !fit.timed_out && !util_deadline_passed(sp.deadline);
    if (loo)
        calibrate_progress(&o, start, "leave-one-out: %d more fits, one per "
                           "measured trial", ts.n - failed);
    if (loo && calib_loo_until(&c, &m, &prof, &cp, &ts, &sp, t2, NULL, &loo_done,
                               &err) != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    if (loo && loo_done < ts.n - failed)
        loo = 0; /* scores of some trials only would mislead: none */
    calibrate_progress(&o, start, "done");
    calib_score_trials(t0, ts.n, &r0);
    calib_score_trials(t1, ts.n, &r1);
    if (given != NULL)
        calib_score_trials(tg, ts.n, &rg);
    if (loo)
        calib_score_trials(t2, ts.n, &r2);
    if (o.out.output) {
        json = calib_profile_json(&m, &prof, &fit, loo ? r2.mape : -1.0, r2.spearman);
        if (json == NULL) {
            code = cmd_out_of_memory();
            goto done;
        }
        if ((code = cmd_write_file(o.out.output, json)) != CMD_EXIT_OK)
            goto done;
    }
    if (o.out.verbose)
        for (i = 0; i < ts.n; i++) {
            fprintf(stderr, "trial %d: measured %s%.3f s, uncalibrated %.3f s, fitted "
                            "%.3f s", i, ts.measured_s[i] > 0.0 ? "" : "(failed) ",
                    ts.measured_s[i] > 0.0 ? ts.measured_s[i] : 0.0, t0[i].predicted_s,
                    t1[i].predicted_s);
            if (loo) /* the fit without this trial */
                fprintf(stderr, ", left out %.3f s", t2[i].predicted_s);
            fputc('\n', stderr);
        }
    if (o.out.quiet)
        goto finish;
    if (o.out.json) {
        cJSON *jp, *sc, *arr;
        doc = cJSON_CreateObject();
        if (doc == NULL)
            goto nomem;
        cJSON_AddNumberToObject(doc, "trials", ts.n);
        cJSON_AddNumberToObject(doc, "measured", fit.nfit);
        cJSON_AddNumberToObject(doc, "free_parameters", fit.nfree);
        cJSON_AddNumberToObject(doc, "rounds", fit.rounds);
        cJSON_AddNumberToObject(doc, "reg", sp.reg);
        cJSON_AddStringToObject(doc, "status", o.loo > loo || fit.timed_out
                                                   ? "time-limit" : "complete");
        if (o.loo > loo || fit.timed_out)
            cJSON_AddNumberToObject(doc, "time_limit_s", o.time_limit);
        if (o.loo > loo) /* trials left out before the limit */
            cJSON_AddNumberToObject(doc, "loo_done", loo_done);
        jp = cJSON_AddObjectToObject(doc, "parameters");
        for (i = 0; jp != NULL && i < fit.cal.ntypes; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.compute_scale", fit.cal.type[i]);
            cJSON_AddNumberToObject(jp, k, fit.cal.compute_scale[i]);
            snprintf(k, sizeof k, "%s.mbs_half", fit.cal.type[i]);
            cJSON_AddNumberToObject(jp, k, fit.cal.mbs_half[i]);
        }
        for (i = 0; jp != NULL && i < FMT_LINK_NCLASSES; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.bw_frac", fmt_link_class_name(i));
            cp.calib = &fit.cal;
            cJSON_AddNumberToObject(jp, k, cost_calibration_eff(&cp, i));
            cp.calib = NULL;
        }
        cJSON_AddNumberToObject(jp, "msg_latency_us", fit.cal.msg_latency * 1e6);
        cJSON_AddNumberToObject(jp, "tp_fixed_ms", fit.cal.tp_fixed * 1e3);
        cJSON_AddNumberToObject(jp, "iter_overhead_ms", fit.cal.iter_overhead * 1e3);
        sc = cJSON_AddObjectToObject(doc, "scores");
        calibrate_score_json(sc, "uncalibrated", &r0);
        if (given != NULL)
            calibrate_score_json(sc, "profile_as_given", &rg);
        calibrate_score_json(sc, "in_sample", &r1);
        if (loo)
            calibrate_score_json(sc, "loo", &r2);
        arr = cJSON_AddArrayToObject(doc, "predictions");
        for (i = 0; arr != NULL && i < ts.n; i++) {
            cJSON *x = cJSON_CreateObject();
            if (x == NULL || !cJSON_AddItemToArray(arr, x))
                goto nomem;
            cJSON_AddNumberToObject(x, "index", i);
            if (ts.measured_s[i] > 0.0)
                cJSON_AddNumberToObject(x, "measured_s", ts.measured_s[i]);
            else
                cJSON_AddNullToObject(x, "measured_s");
            cJSON_AddNumberToObject(x, "uncalibrated_s", t0[i].predicted_s);
            if (given != NULL)
                cJSON_AddNumberToObject(x, "profile_as_given_s", tg[i].predicted_s);
            cJSON_AddNumberToObject(x, "fitted_s", t1[i].predicted_s);
            if (loo)
                cJSON_AddNumberToObject(x, "loo_s", t2[i].predicted_s);
        }
        if (o.out.output)
            cJSON_AddStringToObject(doc, "output", o.out.output);
        text = cJSON_Print(doc);
        if (text == NULL)
            goto nomem;
        puts(text);
    } else {
        printf("calibration fit: %d measured trials (%d failed runs left out), %d "
               "constants free, %d LP rounds, reg %g\n\n", fit.nfit, failed, fit.nfree,
               fit.rounds, sp.reg);
        printf("%-28s %12s\n", "parameter", "value");
        for (i = 0; i < fit.cal.ntypes; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.compute_scale", fit.cal.type[i]);
            printf("%-28s %12.4f\n", k, fit.cal.compute_scale[i]);
            snprintf(k, sizeof k, "%s.mbs_half", fit.cal.type[i]);
            printf("%-28s %12.4f\n", k, fit.cal.mbs_half[i]);
        }
        cp.calib = &fit.cal;
        for (i = 0; i < FMT_LINK_NCLASSES; i++) {
            char k[64];
            snprintf(k, sizeof k, "%s.bw_frac", fmt_link_class_name(i));
            printf("%-28s %12.4f\n", k, cost_calibration_eff(&cp, i));
        }
        cp.calib = NULL;
        printf("%-28s %12.1f\n", "msg_latency_us", fit.cal.msg_latency * 1e6);
        printf("%-28s %12.4f\n", "tp_fixed_ms", fit.cal.tp_fixed * 1e3);
        printf("%-28s %12.1f\n\n", "iter_overhead_ms", fit.cal.iter_overhead * 1e3);
        printf("%-16s %9s %9s %12s %9s\n", "scores", "spearman", "kendall-b",
               "top1-regret", "MAPE");
        calibrate_score_row("uncalibrated", &r0);
        if (given != NULL)
            calibrate_score_row("profile as given", &rg);
        calibrate_score_row("in-sample", &r1);
        if (loo)
            calibrate_score_row("leave-one-out", &r2);
        if (o.out.output)
            printf("\ncalibrated profile written to '%s'\n", o.out.output);
    }
    code = cmd_flush_stdout();
finish:
    if (code == CMD_EXIT_OK && (fit.timed_out || o.loo > loo)) {
        fprintf(stderr, "planner: note: time limit of %g s reached: ", o.time_limit);
        if (fit.timed_out)
            fprintf(stderr, "the fit stopped after %d LP round(s) with the best "
                            "constants so far%s\n", fit.rounds,
                    o.loo ? "; no leave-one-out scores" : "");
        else
            fprintf(stderr, "leave-one-out done for %d of %d measured trials: no "
                            "leave-one-out scores\n", loo_done, ts.n - failed);
        code = CMD_EXIT_TIMEOUT;
    }
    goto done;
nomem:
    code = cmd_out_of_memory();
done:
    cJSON_Delete(doc);
    free(text);
    free(json);
    free(t0);
    free(t1);
    free(t2);
    free(tg);
    free(given);
    fmt_trial_set_free(&ts);
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return code;
}
