/* tests/test_launcher.c: the GPU-free parts of hetplan-launch: the
 * command line, plan to stage work, the 1F1B pass order, the composition
 * of measured stage times with the schedule simulator, and the trial
 * file (read back by `planner evaluate`'s parser). */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

#define EX(name) HETPLAN_SOURCE_DIR "/examples/" name

static char tmpdir[256];
static char plan_path[512];

/* A 4-stage GPT-2 345M plan on 4 H100 (tp 1, dp 1, mbs 4, 8 micro-batches),
 * written by the planner itself. */
static void setup(void)
{
    char cmd[2048];
    int rc;

    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetplan-launch-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(plan_path, sizeof plan_path, "%s/plan.json", tmpdir);
    snprintf(cmd, sizeof cmd,
             "'%s' evaluate --cluster '%s' --model '%s' --strategies '%s' "
             "--output '%s' --quiet",
             HETPLAN_PLANNER, EX("h100-node4.json"), EX("gpt2-345m.json"),
             EX("strategies-gpt2-pp4.json"), plan_path);
    rc = system(cmd);
    ck_assert_msg(rc == 0, "planner failed: %s", cmd);
}

static void teardown(void)
{
    unlink(plan_path);
    rmdir(tmpdir);
}

static void load_plan(plan_doc *d)
{
    cost_error err;
    int rc = plan_load_plan(plan_path, d, &err);

    ck_assert_msg(rc == COST_OK, "%s: %s: %s", err.file, err.path, err.msg);
    ck_assert_int_eq(d->n, 1);
}

START_TEST(test_order_1f1b)
{
    int bwd[64], micro[64], pp = 4, gas = 8, j, i;

    for (j = 0; j < pp; j++) {
        int n = launch_stage_order(COST_SCHED_1F1B, j, pp, gas, bwd, micro);
        int fwd_done = 0, bwd_done = 0, live = 0, peak = 0;
        ck_assert_int_eq(n, 2 * gas);
        for (i = 0; i < n; i++) {
            if (bwd[i]) {
                ck_assert_int_eq(micro[i], bwd_done); /* in order */
                ck_assert_int_lt(micro[i], fwd_done); /* after its forward */
                bwd_done++;
                live--;
            } else {
                ck_assert_int_eq(micro[i], fwd_done);
                fwd_done++;
                live++;
            }
            if (live > peak)
                peak = live;
        }
        ck_assert(fwd_done == gas && bwd_done == gas);
        /* 1F1B keeps at most pp - stage micro-batches alive */
        ck_assert_int_eq(peak, pp - j);
    }
    /* stage 0 of 4: F0 F1 F2 F3 B0 F4 B1 ... */
    launch_stage_order(COST_SCHED_1F1B, 0, 4, 8, bwd, micro);
    ck_assert(!bwd[0] && !bwd[2] && !bwd[3] && bwd[4] && micro[4] == 0);
    ck_assert(!bwd[5] && micro[5] == 4 && bwd[15] && micro[15] == 7);
    /* last stage alternates from the start */
    launch_stage_order(COST_SCHED_1F1B, 3, 4, 8, bwd, micro);
    for (i = 0; i < 16; i++)
        ck_assert(bwd[i] == (i % 2) && micro[i] == i / 2);
    /* fewer micro-batches than warm-up forwards */
    ck_assert_int_eq(launch_stage_order(COST_SCHED_1F1B, 0, 8, 2, bwd, micro), 4);
    ck_assert(!bwd[0] && !bwd[1] && bwd[2] && bwd[3]);
    /* GPipe: all forwards, then all backwards */
    launch_stage_order(COST_SCHED_GPIPE, 1, 4, 3, bwd, micro);
    for (i = 0; i < 6; i++)
        ck_assert(bwd[i] == (i >= 3) && micro[i] == i % 3);
    ck_assert_int_eq(launch_stage_order(COST_SCHED_1F1B, 4, 4, 8, bwd, micro), -1);
    ck_assert_int_eq(launch_stage_order(COST_SCHED_1F1B, 0, 4, 0, bwd, micro), -1);
}
END_TEST

START_TEST(test_work_of_plan)
{
    plan_doc d;
    launch_work w;
    cost_error err;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), COST_OK);
    ck_assert(w.tp == 1 && w.dp == 1 && w.pp == 4 && w.mbs == 4 && w.gas == 8);
    ck_assert_int_eq(w.ranks, 4);
    /* embed + 6 blocks | 7 blocks | 7 blocks | 6 blocks + norm + head */
    ck_assert(w.stages[0].first == 0 && w.stages[0].last == 7);
    ck_assert(w.stages[3].first == 21 && w.stages[3].last == 27);
    ck_assert_int_eq(w.stages[2].same_as, 1); /* identical work, run once */
    ck_assert(w.stages[0].same_as == 0 && w.stages[3].same_as == 3);
    ck_assert(w.stages[0].run && w.stages[1].run && !w.stages[2].run &&
              w.stages[3].run);
    ck_assert(w.stages[0].nsynth == 7 && w.stages[0].nmodelled == 0);
    ck_assert_str_eq(w.stages[1].device_type, "H100-SXM");
    launch_work_free(&w);
    launch_work_free(&w); /* zeroed: safe twice */
    launch_work_free(NULL);

    /* --rank 2: only stage 2 runs */
    ck_assert_int_eq(launch_work_of(&d, 0, 2, &w, &err), COST_OK);
    ck_assert(!w.stages[0].run && !w.stages[1].run && w.stages[2].run &&
              !w.stages[3].run);
    launch_work_free(&w);
    ck_assert_int_eq(launch_work_of(&d, 0, 4, &w, &err), COST_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ranks 0..3"));
    ck_assert_int_eq(launch_work_of(&d, 1, -1, &w, &err), COST_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "the plan has 1"));
    plan_doc_free(&d);
}
END_TEST

/* With the cost model's own stage times as "measurements" the composed
 * iteration is the simulated one; slower stages make it slower. */
START_TEST(test_compose)
{
    plan_doc d;
    launch_work w;
    launch_measure meas[4];
    launch_trial t, t2;
    cost_error err;
    int j, rc;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), COST_OK);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++)
        meas[j].opt_s = -1.0;
    /* nothing measured: the prediction */
    rc = launch_compose(&d, &w, meas, &t, &err);
    ck_assert_msg(rc == COST_OK, "%s", err.msg);
    ck_assert(t.simulated_s > 0 && t.predicted_s > 0);
    ck_assert_double_eq_tol(t.measured_s, t.simulated_s, 1e-12);
    ck_assert_double_eq_tol(t.predicted_s, d.predicted_s[0], 1e-15);
    /* AMP eq. 5 and the event simulation agree within transfers/optimizer */
    ck_assert(fabs(t.simulated_s - t.predicted_s) < 0.1 * t.predicted_s);
    for (j = 0; j < 4; j++) {
        ck_assert(t.pred_fwd_s[j] > 0 && t.pred_bwd_s[j] > t.pred_fwd_s[j]);
        ck_assert_double_eq_tol(t.used_fwd_s[j], t.pred_fwd_s[j], 1e-15);
        ck_assert_double_eq(t.tp_comm_s[j], 0.0); /* tp = 1 */
        /* every stage runs gas forwards and backwards */
        ck_assert_double_eq_tol(t.busy_s[j], 8 * (t.pred_fwd_s[j] + t.pred_bwd_s[j]),
                                1e-12);
    }

    /* the prediction as a measurement of stages 0, 1, 3 (2 copies 1) */
    for (j = 0; j < 4; j++) {
        if (!w.stages[j].run)
            continue;
        meas[j].measured = 1;
        meas[j].fwd_s = t.pred_fwd_s[j];
        meas[j].bwd_s = t.pred_bwd_s[j];
    }
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), COST_OK);
    ck_assert_double_eq_tol(t2.measured_s, t.simulated_s, 1e-12);
    launch_trial_free(&t2);

    /* twice as slow everywhere: the compute part of the iteration doubles */
    for (j = 0; j < 4; j++) {
        meas[j].fwd_s *= 2;
        meas[j].bwd_s *= 2;
    }
    meas[3].opt_s = 0.5; /* a measured optimizer step replaces the model's */
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), COST_OK);
    ck_assert(t2.measured_s > 1.8 * t.simulated_s);
    ck_assert_double_eq(t2.opt_s[3], 0.5);
    ck_assert(t2.measured_s >= 0.5 + 8 * 2 * (t.pred_fwd_s[3] + t.pred_bwd_s[3]));
    ck_assert_double_eq_tol(t2.used_fwd_s[2], 2 * t.pred_fwd_s[1], 1e-15);
    ck_assert_double_eq_tol(t2.simulated_s, t.simulated_s, 1e-15);
    launch_trial_free(&t2);
    launch_trial_free(&t);
    launch_trial_free(NULL);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

/* The trial file is a strategies file: `planner evaluate` (and
 * `planner calibrate`) read it back with the plan's inputs. */
START_TEST(test_trial_json)
{
    plan_doc d;
    launch_work w;
    launch_measure meas[4];
    launch_trial t;
    prof_device_info dev;
    cost_error err;
    cost_strategy *s = NULL;
    char *text;
    cJSON *doc, *st, *stages;
    int n = 0, j, rc;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), COST_OK);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++) {
        meas[j].opt_s = -1.0;
        if (w.stages[j].run) {
            meas[j].measured = 1;
            meas[j].fwd_s = 0.004 + 0.001 * j;
            meas[j].bwd_s = 0.009;
        }
    }
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t, &err), COST_OK);
    memset(&dev, 0, sizeof dev);
    strcpy(dev.name, "NVIDIA H100 80GB HBM3");
    prof_device_type_of(dev.name, dev.type);
    text = launch_trial_json(&d, &w, meas, &t, &dev, 10);
    ck_assert_ptr_nonnull(text);

    rc = plan_parse_strategies(text, "trial.json", &d.cluster, &d.model,
                               d.global_batch, &s, &n, &err);
    ck_assert_msg(rc == COST_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(n, 1);
    ck_assert(s[0].tp == 1 && s[0].dp == 1 && s[0].pp == 4 && s[0].mbs == 4);
    ck_assert_int_eq(s[0].gas, 8);
    for (j = 0; j <= 4; j++)
        ck_assert_int_eq(s[0].bounds[j], d.s[0].bounds[j]);
    for (j = 0; j < 4; j++)
        ck_assert_int_eq(s[0].ranks[j], d.s[0].ranks[j]);
    cost_strategy_free(&s[0]);
    free(s);

    doc = cJSON_Parse(text);
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "format")->valuestring, "hetplan-trial/1");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "composed")));
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "mode")->valuestring, "all-local");
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(doc, "note")->valuestring,
                                 "3 of 4 stages ran on the local GPU (H100-SXM)"));
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "local_device"),
                                         "device_type")->valuestring, "H100-SXM");
    st = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 0);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(st, "measured_s")->valuedouble,
                            t.measured_s, 1e-15);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(st, "predicted_s")->valuedouble,
                            d.predicted_s[0], 1e-15);
    stages = cJSON_GetObjectItem(st, "stages");
    ck_assert_int_eq(cJSON_GetArraySize(stages), 4);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 0), "source")->valuestring,
                     "measured");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 2), "source")->valuestring,
                     "measured (same layers as stage 1)");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 2),
                                                "measured_fwd_s")->valuedouble,
                            0.005, 1e-15);
    cJSON_Delete(doc);
    free(text);
    launch_trial_free(&t);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

static int parse(launch_options *o, cost_error *err, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    char *a;

    argv[argc++] = "hetplan-launch";
    va_start(ap, err);
    while ((a = va_arg(ap, char *)) != NULL)
        argv[argc++] = a;
    va_end(ap);
    return launch_parse_args(argc, argv, o, err);
}

START_TEST(test_args)
{
    launch_options o;
    cost_error err;

    ck_assert_int_eq(parse(&o, &err, "--plan", "p.json", NULL), COST_OK);
    ck_assert_str_eq(o.plan, "p.json");
    ck_assert(o.rank == -1 && o.strategy == 1 && o.iterations == 10 &&
              o.warmup == 2 && o.output == NULL && !o.json);
    ck_assert_int_eq(parse(&o, &err, "--plan=p.json", "--rank", "3",
                           "--iterations=5", "--warmup", "0", "--output", "t.json",
                           "--strategy", "2", "--gpu", "1", "--format", "json",
                           NULL), COST_OK);
    ck_assert(o.rank == 3 && o.iterations == 5 && o.warmup == 0 &&
              o.strategy == 2 && o.device == 1 && o.json);
    ck_assert_str_eq(o.output, "t.json");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--all-local", NULL), COST_OK);
    ck_assert_int_eq(o.rank, -1);
    ck_assert_int_eq(parse(&o, &err, "--help", NULL), COST_OK);
    ck_assert(o.help);

    ck_assert_int_eq(parse(&o, &err, NULL), COST_EINVAL);
    ck_assert_str_eq(err.msg, "missing required option '--plan'");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--rank", "1", "--all-local",
                           NULL), COST_EINVAL);
    ck_assert_str_eq(err.msg, "options '--rank' and '--all-local' exclude each other");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--rank", "-1", NULL),
                     COST_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--iterations", "0", NULL),
                     COST_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--strategy", "0", NULL),
                     COST_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--format", "xml", NULL),
                     COST_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--bogus", NULL), COST_EINVAL);
    ck_assert_str_eq(err.msg, "unknown option '--bogus'");
    ck_assert_int_eq(parse(&o, &err, "--plan", NULL), COST_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--all-local=1", NULL),
                     COST_EINVAL);
}
END_TEST

static Suite *launcher_suite(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_order_1f1b);
    tcase_add_test(tc, test_work_of_plan);
    tcase_add_test(tc, test_compose);
    tcase_add_test(tc, test_trial_json);
    tcase_add_test(tc, test_args);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(launcher_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
