/* tests/test_tools_launcher.c: the GPU-free parts of hetplan-launch: the
 * command line, plan to stage work, the 1F1B pass order, the composition
 * of measured stage times with the schedule simulator, and the trial
 * file (read back by `planner evaluate`'s parser). */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"
#include "testutil.h"

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
    util_error err;
    int rc = plan_load_plan(plan_path, d, &err);

    ck_assert_msg(rc == UTIL_OK, "%s: %s: %s", err.file, err.path, err.msg);
    ck_assert_int_eq(d->n, 1);
}

/* planner calibrate reads a trial as hetplan-launch wrote it: every key
 * known (under strict warnings an unknown one fails the read). */
static void strict_trial_read(const char *json, const plan_doc *d)
{
    char path[] = "/tmp/hetplan-trial-XXXXXX";
    int fd = mkstemp(path);
    fmt_warnings wn;
    fmt_trial_set ts;
    util_error err;
    int rc;

    ck_assert_int_ge(fd, 0);
    close(fd);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(util_write_file_atomic(path, json, &err), UTIL_OK);
    memset(&wn, 0, sizeof wn);
    wn.strict = 1;
    fmt_warnings_use(&wn);
    rc = fmt_load_trials(path, 0, &d->cluster, &d->model, d->global_batch, &ts, &err);
    fmt_warnings_use(NULL);
    unlink(path);
    ck_assert_msg(rc == UTIL_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(ts.n, 1);
    fmt_trial_set_free(&ts);
}

START_TEST(test_order_1f1b)
{
    int bwd[64], micro[64], pp = 4, gas = 8, j, i;

    for (j = 0; j < pp; j++) {
        int n = launch_stage_order(FMT_SCHED_1F1B, j, pp, gas, bwd, micro);
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
    launch_stage_order(FMT_SCHED_1F1B, 0, 4, 8, bwd, micro);
    ck_assert(!bwd[0] && !bwd[2] && !bwd[3] && bwd[4] && micro[4] == 0);
    ck_assert(!bwd[5] && micro[5] == 4 && bwd[15] && micro[15] == 7);
    /* last stage alternates from the start */
    launch_stage_order(FMT_SCHED_1F1B, 3, 4, 8, bwd, micro);
    for (i = 0; i < 16; i++)
        ck_assert(bwd[i] == (i % 2) && micro[i] == i / 2);
    /* fewer micro-batches than warm-up forwards */
    ck_assert_int_eq(launch_stage_order(FMT_SCHED_1F1B, 0, 8, 2, bwd, micro), 4);
    ck_assert(!bwd[0] && !bwd[1] && bwd[2] && bwd[3]);
    /* GPipe: all forwards, then all backwards */
    launch_stage_order(FMT_SCHED_GPIPE, 1, 4, 3, bwd, micro);
    for (i = 0; i < 6; i++)
        ck_assert(bwd[i] == (i >= 3) && micro[i] == i % 3);
    ck_assert_int_eq(launch_stage_order(FMT_SCHED_1F1B, 4, 4, 8, bwd, micro), -1);
    ck_assert_int_eq(launch_stage_order(FMT_SCHED_1F1B, 0, 4, 0, bwd, micro), -1);
}
END_TEST

START_TEST(test_work_of_plan)
{
    plan_doc d;
    launch_work w;
    util_error err;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
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
    ck_assert_int_eq(launch_work_of(&d, 0, 2, &w, &err), UTIL_OK);
    ck_assert(!w.stages[0].run && !w.stages[1].run && w.stages[2].run &&
              !w.stages[3].run);
    launch_work_free(&w);
    ck_assert_int_eq(launch_work_of(&d, 0, 4, &w, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "ranks 0..3"));
    ck_assert_int_eq(launch_work_of(&d, 1, -1, &w, &err), UTIL_EINVAL);
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
    util_error err;
    int j, rc;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++)
        meas[j].opt_s = -1.0;
    /* nothing measured: the prediction */
    rc = launch_compose(&d, &w, meas, &t, &err);
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
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
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), UTIL_OK);
    ck_assert_double_eq_tol(t2.measured_s, t.simulated_s, 1e-12);
    launch_trial_free(&t2);

    /* twice as slow everywhere: the compute part of the iteration doubles */
    for (j = 0; j < 4; j++) {
        meas[j].fwd_s *= 2;
        meas[j].bwd_s *= 2;
    }
    meas[3].opt_s = 0.5; /* a measured optimizer step replaces the model's */
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), UTIL_OK);
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
    util_error err;
    fmt_strategy *s = NULL;
    char *text;
    cJSON *doc, *st, *stages;
    int n = 0, j, rc;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++) {
        meas[j].opt_s = -1.0;
        if (w.stages[j].run) {
            meas[j].measured = 1;
            meas[j].fwd_s = 0.004 + 0.001 * j;
            meas[j].bwd_s = 0.009;
        }
    }
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t, &err), UTIL_OK);
    memset(&dev, 0, sizeof dev);
    strcpy(dev.name, "NVIDIA H100 80GB HBM3");
    prof_device_type_of(dev.name, dev.type);
    text = launch_trial_json(&d, &w, meas, &t, &dev, 10);
    ck_assert_ptr_nonnull(text);
    strict_trial_read(text, &d);

    rc = fmt_parse_strategies(text, "trial.json", &d.cluster, &d.model,
                               d.global_batch, &s, &n, &err);
    ck_assert_msg(rc == UTIL_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(n, 1);
    ck_assert(s[0].tp == 1 && s[0].dp == 1 && s[0].pp == 4 && s[0].mbs == 4);
    ck_assert_int_eq(s[0].gas, 8);
    for (j = 0; j <= 4; j++)
        ck_assert_int_eq(s[0].bounds[j], d.s[0].bounds[j]);
    for (j = 0; j < 4; j++)
        ck_assert_int_eq(s[0].ranks[j], d.s[0].ranks[j]);
    fmt_strategy_free(&s[0]);
    free(s);

    doc = cJSON_Parse(text);
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "format")->valuestring, "hetplan-trial/1");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(doc, "composed")));
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "mode")->valuestring, "composed");
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "selection")->valuestring, "all-local");
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
    /* paths that are not UTF-8 (as a file system may hold them) reach the
       trial with U+FFFD for each byte that is not: it stays UTF-8 */
    snprintf(d.path, sizeof d.path, "p\xff\xfe.json");
    snprintf(d.model_path, sizeof d.model_path, "m\xc3.json");
    text = launch_trial_json(&d, &w, meas, &t, &dev, 10);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_null(strpbrk(text, "\xff\xfe"));
    ck_assert_ptr_nonnull(strstr(text, "\"p\xef\xbf\xbd\xef\xbf\xbd.json\""));
    ck_assert_ptr_nonnull(strstr(text, "\"m\xef\xbf\xbd.json\""));
    free(text);
    launch_trial_free(&t);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

static int parse(launch_options *o, util_error *err, ...)
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
    util_error err;

    ck_assert_int_eq(parse(&o, &err, "--plan", "p.json", NULL), UTIL_OK);
    ck_assert_str_eq(o.plan, "p.json");
    ck_assert(o.rank == -1 && o.strategy == 1 && o.iterations == 10 &&
              o.warmup == 2 && o.output == NULL && !o.json);
    ck_assert_int_eq(parse(&o, &err, "--plan=p.json", "--rank", "3",
                           "--iterations=5", "--warmup", "0", "--output", "t.json",
                           "--strategy", "2", "--gpu", "1", "--format", "json",
                           NULL), UTIL_OK);
    ck_assert(o.rank == 3 && o.iterations == 5 && o.warmup == 0 &&
              o.strategy == 2 && o.device == 1 && o.json);
    ck_assert_str_eq(o.output, "t.json");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--all-local", NULL), UTIL_OK);
    ck_assert_int_eq(o.rank, -1);
    ck_assert_int_eq(parse(&o, &err, "--help", NULL), UTIL_OK);
    ck_assert(o.help);

    ck_assert_int_eq(parse(&o, &err, NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "missing required option '--plan'");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--plan=q", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--plan' given more than once");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "-o", "a", "--output", "b", NULL),
                     UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--output' given more than once");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--rank", "1", "--all-local",
                           NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "options '--rank' and '--all-local' exclude each other");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--rank", "-1", NULL),
                     UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--iterations", "0", NULL),
                     UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--strategy", "0", NULL),
                     UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--format", "xml", NULL),
                     UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--bogus", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "unknown option '--bogus'");
    ck_assert_int_eq(parse(&o, &err, "--plan", NULL), UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--all-local=1", NULL),
                     UTIL_EINVAL);
    /* --mode */
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", NULL), UTIL_OK);
    ck_assert_int_eq(o.mode, LAUNCH_MODE_AUTO);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--mode", "executed", NULL), UTIL_OK);
    ck_assert_int_eq(o.mode, LAUNCH_MODE_EXECUTED);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--mode=composed", NULL), UTIL_OK);
    ck_assert_int_eq(o.mode, LAUNCH_MODE_COMPOSED);
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--mode", "real", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--mode' expects 'auto', 'executed' or "
                              "'composed', got 'real'");
    ck_assert_int_eq(parse(&o, &err, "--plan", "p", "--rank", "0", "--mode", "executed",
                           NULL), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'--rank' and '--mode executed'"));
}
END_TEST

/* A hand-made work of pp stages (1F1B unless given), each sending
 * `bytes` per micro-batch. */
static void fake_work(launch_work *w, int pp, int gas, int schedule, double bytes)
{
    int j;

    memset(w, 0, sizeof *w);
    w->tp = w->dp = 1;
    w->pp = pp;
    w->gas = gas;
    w->mbs = 1;
    w->schedule = schedule;
    w->ranks = pp;
    w->rank = -1;
    w->stages = calloc((size_t)pp, sizeof *w->stages);
    ck_assert_ptr_nonnull(w->stages);
    for (j = 0; j < pp; j++) {
        w->stages[j].first = j;
        w->stages[j].last = j + 1;
        w->stages[j].same_as = j;
        w->stages[j].send_bytes = j < pp - 1 ? bytes : 0.0;
    }
}

START_TEST(test_choose_mode)
{
    launch_work w;
    char why[256];

    fake_work(&w, 4, 8, FMT_SCHED_1F1B, 1.0);
    /* enough GPUs: executed, which ones */
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_AUTO, 4, 0, why, sizeof why),
                     LAUNCH_MODE_EXECUTED);
    ck_assert_ptr_nonnull(strstr(why, "executed: 4 stages on GPUs 0..3"));
    ck_assert_ptr_nonnull(strstr(why, "tp 1"));
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_EXECUTED, 8, 4, why, sizeof why),
                     LAUNCH_MODE_EXECUTED);
    ck_assert_ptr_nonnull(strstr(why, "GPUs 4..7"));
    /* too few from --gpu on */
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_AUTO, 8, 5, why, sizeof why),
                     LAUNCH_MODE_COMPOSED);
    ck_assert_ptr_nonnull(strstr(why, "this machine has 3 GPUs from GPU 5"));
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_AUTO, 1, 0, why, sizeof why),
                     LAUNCH_MODE_COMPOSED);
    ck_assert_ptr_nonnull(strstr(why, "one GPU per pipeline stage (4, GPUs 0..3)"));
    ck_assert_ptr_nonnull(strstr(why, "has 1 GPU from GPU 0"));
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_EXECUTED, 2, 0, why, sizeof why),
                     -1);
    /* asked for composed */
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_COMPOSED, 4, 0, why, sizeof why),
                     LAUNCH_MODE_COMPOSED);
    ck_assert_ptr_nonnull(strstr(why, "'--mode composed'"));
    /* a rank: composed */
    w.rank = 2;
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_AUTO, 4, 0, why, sizeof why),
                     LAUNCH_MODE_COMPOSED);
    ck_assert_ptr_nonnull(strstr(why, "'--rank 2'"));
    w.rank = -1;
    /* tensor and data parallelism are modelled */
    w.tp = 2;
    w.dp = 2;
    ck_assert_int_eq(launch_choose_mode(&w, LAUNCH_MODE_AUTO, 4, 0, why, sizeof why),
                     LAUNCH_MODE_EXECUTED);
    ck_assert_ptr_nonnull(strstr(why, "TP all-reduces modelled as GPU delays"));
    ck_assert_ptr_nonnull(strstr(why, "DP all-reduce modelled"));
    launch_work_free(&w);
}
END_TEST

static int count_ops(const launch_exec_stage *st, int kind)
{
    int i, n = 0;

    for (i = 0; i < st->nops; i++)
        n += st->ops[i].kind == kind;
    return n;
}

/* Which GPU runs which stage, which transfers go between which GPUs in
 * which order and by which route, and the event dependencies. */
START_TEST(test_exec_plan)
{
    launch_work w;
    launch_exec_input in;
    launch_exec x;
    util_error err;
    int peer[6 * 6], j, i, k;

    fake_work(&w, 4, 8, FMT_SCHED_1F1B, 8.0 * 1048576);
    memset(peer, 0, sizeof peer);
    /* GPUs 1..4 run the stages; 1<->2 and 3<->4 are peers, 2->3 one way only */
    peer[1 * 6 + 2] = peer[2 * 6 + 1] = 1;
    peer[3 * 6 + 4] = peer[4 * 6 + 3] = 1;
    peer[2 * 6 + 3] = 1;
    launch_exec_input_init(&in);
    in.first_gpu = 1;
    in.ngpu = 6;
    in.peer = peer;
    in.overlap_dp = 1;
    ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
    ck_assert_int_eq(x.pp, 4);
    ck_assert_int_eq(x.nxfer, 2 * 3 * 8);
    for (j = 0; j < 4; j++)
        ck_assert_int_eq(x.st[j].gpu, 1 + j);
    for (i = 0; i < x.nxfer; i++) {
        const launch_xfer *xf = &x.xfers[i];
        int src = xf->grad ? xf->cut + 1 : xf->cut, dst = xf->grad ? xf->cut : xf->cut + 1;
        const launch_op *so = &x.st[src].ops[xf->send_at];
        const launch_op *ro = &x.st[dst].ops[xf->recv_at];
        ck_assert(xf->src_stage == src && xf->dst_stage == dst);
        ck_assert(xf->src_gpu == 1 + src && xf->dst_gpu == 1 + dst);
        ck_assert_double_eq(xf->bytes, 8.0 * 1048576);
        /* the send follows the pass that made the data, the receive
         * precedes the pass that uses it */
        ck_assert(so->kind == LAUNCH_OP_SEND && so->xfer == i);
        ck_assert(ro->kind == LAUNCH_OP_RECV && ro->xfer == i);
        ck_assert_int_eq(x.st[src].ops[xf->send_at - 1].kind,
                         xf->grad ? LAUNCH_OP_BWD : LAUNCH_OP_FWD);
        ck_assert_int_eq(x.st[src].ops[xf->send_at - 1].micro, xf->micro);
        ck_assert_int_eq(x.st[dst].ops[xf->recv_at + 1].kind,
                         xf->grad ? LAUNCH_OP_BWD : LAUNCH_OP_FWD);
        ck_assert_int_eq(x.st[dst].ops[xf->recv_at + 1].micro, xf->micro);
        /* routes follow the peer matrix */
        ck_assert_int_eq(xf->route, peer[xf->src_gpu * 6 + xf->dst_gpu]
                                        ? LAUNCH_ROUTE_PEER : LAUNCH_ROUTE_HOST);
    }
    /* cut 1 (GPUs 2, 3): activations by peer copy, gradients through the host */
    for (i = 0; i < x.nxfer; i++)
        if (x.xfers[i].cut == 1)
            ck_assert_int_eq(x.xfers[i].route,
                             x.xfers[i].grad ? LAUNCH_ROUTE_HOST : LAUNCH_ROUTE_PEER);
    /* on each link, transfers go in micro-batch order */
    for (j = 0; j < 3; j++)
        for (k = 0; k < 2; k++) {
            int src = k ? j + 1 : j, last = -1;
            for (i = 0; i < x.st[src].nops; i++) {
                const launch_op *o = &x.st[src].ops[i];
                if (o->kind != LAUNCH_OP_SEND || x.xfers[o->xfer].cut != j ||
                    x.xfers[o->xfer].grad != k)
                    continue;
                ck_assert_int_eq(x.xfers[o->xfer].micro, last + 1);
                last++;
            }
            ck_assert_int_eq(last, 7);
        }
    /* stage 0: F0 S F1 S F2 S F3 S R B0 S? no: stage 0 sends no gradient */
    ck_assert_int_eq(x.st[0].ops[0].kind, LAUNCH_OP_FWD);
    ck_assert_int_eq(x.st[0].ops[1].kind, LAUNCH_OP_SEND);
    ck_assert_int_eq(x.st[0].ops[8].kind, LAUNCH_OP_RECV); /* gradient 0 */
    ck_assert_int_eq(x.st[0].ops[9].kind, LAUNCH_OP_BWD);
    ck_assert_int_eq(x.st[0].ops[9].micro, 0);
    /* last stage: R F0 R B0 S ... */
    ck_assert_int_eq(x.st[3].ops[0].kind, LAUNCH_OP_RECV);
    ck_assert_int_eq(x.st[3].ops[1].kind, LAUNCH_OP_FWD);
    ck_assert_int_eq(x.st[3].ops[2].kind, LAUNCH_OP_BWD);
    ck_assert_int_eq(x.st[3].ops[3].kind, LAUNCH_OP_SEND);
    for (j = 0; j < 4; j++) {
        const launch_exec_stage *st = &x.st[j];
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_FWD), 8);
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_BWD), 8);
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_SEND), (j > 0) * 8 + (j < 3) * 8);
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_RECV), (j > 0) * 8 + (j < 3) * 8);
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_OPTIMIZER), 1);
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_DELAY), 0); /* nothing modelled */
        /* overlap: no drain barrier; the iteration barrier ends the list */
        ck_assert_int_eq(count_ops(st, LAUNCH_OP_MARK), 1);
        ck_assert_int_eq(st->ops[st->nops - 4].kind, LAUNCH_OP_MARK);
        ck_assert_int_eq(st->ops[st->nops - 4].mark, LAUNCH_MARK_END);
        for (i = st->nops - 3; i < st->nops; i++) {
            ck_assert_int_eq(st->ops[i].kind, LAUNCH_OP_WAIT_MARK);
            ck_assert_int_eq(st->ops[i].mark, LAUNCH_MARK_END);
            ck_assert_int_ne(st->ops[i].stage, j);
        }
    }
    launch_exec_free(&x);
    launch_exec_free(&x);
    launch_exec_free(NULL);

    /* modelled parts: DP all-reduce (after a drain barrier without
     * overlap), tied weights between stages 0 and 3 */
    {
        double dps[4] = {0.1, 0.2, 0.2, 0.1}, fx[4] = {1e-3, 1e-3, 1e-3, 2e-3};
        in.dp_s = dps;
        in.fwd_extra_s = fx;
        in.tied_s = 0.05;
        in.tied_first = 0;
        in.tied_last = 3;
        in.overlap_dp = 0;
        in.peer = NULL;
        ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
        for (i = 0; i < x.nxfer; i++)
            ck_assert_int_eq(x.xfers[i].route, LAUNCH_ROUTE_HOST);
        ck_assert_double_eq(x.st[3].fwd_extra_s, 2e-3);
        ck_assert_double_eq(x.st[3].bwd_extra_s, 0.0);
        for (j = 0; j < 4; j++) {
            ck_assert_int_eq(count_ops(&x.st[j], LAUNCH_OP_DELAY), (j == 0 || j == 3) ? 2 : 1);
            ck_assert_int_eq(count_ops(&x.st[j], LAUNCH_OP_MARK), (j == 0 || j == 3) ? 3 : 2);
        }
        launch_exec_free(&x);
    }
    /* a missing GPU */
    in.first_gpu = 3;
    ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "4 stages need GPUs 3..6, 6 visible"));
    launch_work_free(&w);
}
END_TEST

/* The CPU replay of the plan gives the planner's simulator's iteration
 * exactly, for both schedules, with transfers, DP and tied all-reduces,
 * optimizer steps, with and without overlap. */
START_TEST(test_exec_replay_matches_simulator)
{
    static const int shapes[][3] = {{4, 8, FMT_SCHED_1F1B}, {4, 2, FMT_SCHED_1F1B},
                                    {3, 5, FMT_SCHED_GPIPE}, {1, 4, FMT_SCHED_1F1B},
                                    {6, 12, FMT_SCHED_1F1B}};
    int c, ov, j;

    for (c = 0; c < 5; c++)
        for (ov = 0; ov < 2; ov++) {
            int pp = shapes[c][0], gas = shapes[c][1];
            double f[8], b[8], fx[8], bx[8], uf[8], ub[8], a[8], g[8], dps[8], opt[8];
            double busy[8], iter;
            launch_work w;
            launch_exec_input in;
            launch_exec x;
            cost_sim_input si;
            cost_timeline tl;
            util_error err;

            fake_work(&w, pp, gas, shapes[c][2], 1.0);
            for (j = 0; j < pp; j++) {
                f[j] = 0.010 + 0.003 * ((j * 7 + c) % 4);
                b[j] = 2.1 * f[j] + 0.001 * j;
                fx[j] = 0.0004 * (j % 2);
                bx[j] = 0.0007 * ((j + 1) % 3);
                uf[j] = f[j] + fx[j];
                ub[j] = b[j] + bx[j];
                a[j] = 0.0015 + 0.0005 * j;
                g[j] = 0.0011 + 0.0003 * j;
                dps[j] = 0.004 * (j + 1);
                opt[j] = 0.002 + 0.0005 * j;
            }
            launch_exec_input_init(&in);
            in.ngpu = pp;
            in.fwd_extra_s = fx;
            in.bwd_extra_s = bx;
            in.dp_s = dps;
            in.overlap_dp = ov;
            if (pp > 1) {
                in.tied_s = 0.003;
                in.tied_first = 0;
                in.tied_last = pp - 1;
            }
            ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
            ck_assert_int_eq(launch_exec_replay(&x, f, b, a, g, opt, &iter, busy, &err),
                             UTIL_OK);

            memset(&si, 0, sizeof si);
            si.pp = pp;
            si.dp = 1;
            si.gas = gas;
            si.schedule = shapes[c][2];
            si.fwd = uf;
            si.bwd = ub;
            si.send_act = pp > 1 ? a : NULL;
            si.send_grad = pp > 1 ? g : NULL;
            si.dp_s = dps;
            si.opt_s = opt;
            si.overlap_dp = ov;
            si.tied_s = in.tied_s;
            si.tied_first = in.tied_first;
            si.tied_last = in.tied_last;
            ck_assert_int_eq(cost_simulate_stages(&si, &tl, &err), UTIL_OK);
            ck_assert_msg(fabs(iter - tl.iter_s) < 1e-12,
                          "pp %d gas %d overlap %d: replay %.9f, simulator %.9f", pp, gas,
                          ov, iter, tl.iter_s);
            for (j = 0; j < pp; j++)
                ck_assert_double_eq_tol(busy[j], tl.busy_s[j], 1e-12);
            /* a slower transfer never shortens the replayed iteration */
            if (pp > 1) {
                double it2;
                a[0] *= 3.0;
                ck_assert_int_eq(launch_exec_replay(&x, f, b, a, g, opt, &it2, NULL, &err),
                                 UTIL_OK);
                ck_assert(it2 >= iter);
            }
            cost_timeline_free(&tl);
            launch_exec_free(&x);
            launch_work_free(&w);
        }
}
END_TEST

/* The replay of the real 4-stage plan with the cost model's own times
 * (taken from its simulated timeline) is the plan's simulated iteration. */
START_TEST(test_exec_replay_plan)
{
    plan_doc d;
    launch_work w;
    launch_measure meas[4];
    launch_trial t0;
    launch_exec_input in;
    launch_exec x;
    cost_timeline tl;
    util_error err;
    double f[4] = {0}, b[4] = {0}, a[3] = {0}, g[3] = {0}, opt[4] = {0}, iter;
    int i, j, peer[16];

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    /* 4 * 1024 tokens of 1024 fp16 values cross each cut */
    for (j = 0; j < 3; j++)
        ck_assert_double_eq_tol(w.stages[j].send_bytes, 4.0 * 1024 * 1024 * 2, 1.0);
    ck_assert_double_eq(w.stages[3].send_bytes, 0.0);
    ck_assert(w.stages[1].params > 7 * 12.0e6 && w.stages[1].params < 7 * 13.0e6);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++)
        meas[j].opt_s = -1.0;
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t0, &err), UTIL_OK);
    for (j = 0; j < 4; j++) { /* tp 1, no generic layers, dp 1 */
        ck_assert_double_eq(t0.extra_fwd_s[j], 0.0);
        ck_assert_double_eq(t0.dp_stage_s[j], 0.0);
    }
    ck_assert_int_eq(cost_simulate(&d.cluster, &d.model, d.have_profile ? &d.profile : NULL,
                                   &d.params, &d.s[0], d.params.overlap_dp, &tl, &err),
                     UTIL_OK);
    for (i = 0; i < tl.nevents; i++) {
        const cost_event *e = &tl.events[i];
        double len = e->end - e->start;
        if (e->replica != 0)
            continue;
        if (e->kind == COST_EV_FWD)
            f[e->stage] = len;
        else if (e->kind == COST_EV_BWD)
            b[e->stage] = len;
        else if (e->kind == COST_EV_SEND_ACT)
            a[e->stage] = len;
        else if (e->kind == COST_EV_SEND_GRAD)
            g[e->stage - 1] = len;
        else if (e->kind == COST_EV_OPTIMIZER)
            opt[e->stage] = len;
    }
    memset(peer, 0, sizeof peer);
    launch_exec_input_init(&in);
    in.ngpu = 4;
    in.peer = peer;
    in.fwd_extra_s = t0.extra_fwd_s;
    in.bwd_extra_s = t0.extra_bwd_s;
    in.dp_s = t0.dp_stage_s;
    in.tied_s = t0.tied_s;
    in.tied_first = t0.tied_first;
    in.tied_last = t0.tied_last;
    in.overlap_dp = t0.overlap_dp;
    ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
    ck_assert_int_eq(launch_exec_replay(&x, f, b, a, g, opt, &iter, NULL, &err), UTIL_OK);
    ck_assert(a[0] > 0 && g[2] > 0);
    ck_assert_msg(fabs(iter - t0.simulated_s) < 1e-12, "replay %.9f, simulated %.9f",
                  iter, t0.simulated_s);
    cost_timeline_free(&tl);
    launch_exec_free(&x);
    launch_trial_free(&t0);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

/* A plan whose receive comes before the matching send deadlocks; the
 * replay says where instead of hanging. */
START_TEST(test_exec_replay_deadlock)
{
    launch_work w;
    launch_exec_input in;
    launch_exec x;
    util_error err;
    double f[2] = {1, 1}, b[2] = {2, 2}, iter;
    launch_op tmp;

    fake_work(&w, 2, 2, FMT_SCHED_1F1B, 1.0);
    launch_exec_input_init(&in);
    in.ngpu = 2;
    ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
    ck_assert_int_eq(launch_exec_replay(&x, f, b, NULL, NULL, NULL, &iter, NULL, &err),
                     UTIL_OK);
    ck_assert_double_eq_tol(iter, (2 + 2 - 1) * 3.0, 1e-12); /* (gas + pp - 1) t */
    /* stage 0: F0 S F1 S R B0 ...: make it wait for gradient 0 first */
    ck_assert_int_eq(x.st[0].ops[4].kind, LAUNCH_OP_RECV);
    tmp = x.st[0].ops[0];
    x.st[0].ops[0] = x.st[0].ops[4];
    x.st[0].ops[4] = tmp;
    ck_assert_int_eq(launch_exec_replay(&x, f, b, NULL, NULL, NULL, &iter, NULL, &err),
                     UTIL_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "deadlocks: stage 0 waits at op 0 (receive)"));
    launch_exec_free(&x);
    launch_work_free(&w);
}
END_TEST

/* GPU samples to medians, then the executed trial document. */
START_TEST(test_exec_summarise_trial)
{
    plan_doc d;
    launch_work w;
    launch_exec_input in;
    launch_exec x;
    launch_exec_samples smp;
    launch_exec_result res;
    launch_measure meas[4];
    launch_trial t;
    util_error err;
    int peer[16], i, j, p;
    char *text;
    cJSON *doc, *st, *stages, *s2;

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(peer, 0, sizeof peer);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++)
            peer[i * 4 + j] = i != j && !(i == 2 && j == 3); /* 2 -> 3 via host */
    launch_exec_input_init(&in);
    in.ngpu = 4;
    in.peer = peer;
    ck_assert_int_eq(launch_exec_plan(&w, &in, &x, &err), UTIL_OK);
    ck_assert_int_eq(launch_exec_samples_alloc(&smp, 4, 3, 16), UTIL_OK);
    smp.iter_s[0] = 0.30;
    smp.iter_s[1] = 0.20;
    smp.iter_s[2] = 0.25;
    for (j = 0; j < 4; j++) {
        int q = 0;
        for (i = 0; i < x.st[j].nops; i++)
            if (x.st[j].ops[i].kind == LAUNCH_OP_BWD || x.st[j].ops[i].kind == LAUNCH_OP_FWD)
                smp.bwd[j * 16 + q++] = x.st[j].ops[i].kind == LAUNCH_OP_BWD;
        ck_assert_int_eq(q, 16);
        for (i = 0; i < 3; i++) {
            for (p = 0; p < 16; p++) {
                size_t at = ((size_t)j * 3 + (size_t)i) * 16 + (size_t)p;
                double k = smp.bwd[j * 16 + p] ? 0.010 : 0.005;
                smp.kern_s[at] = k * (1 + j) + 0.001 * i;
                smp.full_s[at] = smp.kern_s[at] + 0.0005;
            }
            smp.opt_s[j * 3 + i] = 0.001 * (i + 1);
        }
    }
    ck_assert_int_eq(launch_exec_summarise(&smp, meas, &res, &err), UTIL_OK);
    ck_assert_double_eq_tol(res.iter_s, 0.25, 1e-15);
    ck_assert_double_eq_tol(res.iter_min_s, 0.20, 1e-15);
    ck_assert_double_eq_tol(res.iter_iqr_s, 0.05, 1e-12);
    for (j = 0; j < 4; j++) {
        ck_assert(meas[j].measured);
        ck_assert_double_eq_tol(meas[j].fwd_s, 0.005 * (1 + j) + 0.001, 1e-12);
        ck_assert_double_eq_tol(meas[j].bwd_s, 0.010 * (1 + j) + 0.001, 1e-12);
        ck_assert_double_eq_tol(res.fwd_s[j], meas[j].fwd_s + 0.0005, 1e-12);
        ck_assert_double_eq_tol(res.busy_s[j], 8 * (res.fwd_s[j] + res.bwd_s[j]), 1e-12);
        ck_assert_double_eq_tol(meas[j].opt_s, 0.002, 1e-15);
    }
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t, &err), UTIL_OK);
    ck_assert_int_eq(launch_trial_set_executed(&t, &x, &res, &err), UTIL_OK);
    snprintf(t.reason, sizeof t.reason, "executed: test");
    ck_assert(t.executed);
    ck_assert_double_eq_tol(t.measured_s, 0.25, 1e-15);
    ck_assert(t.composed_s > 8 * 0.015); /* the simulator on the stage times */
    ck_assert_int_eq(t.route[1], LAUNCH_ROUTE_PEER);
    ck_assert_int_eq(t.route[2], LAUNCH_ROUTE_HOST);
    text = launch_trial_json(&d, &w, meas, &t, NULL, 3);
    ck_assert_ptr_nonnull(text);
    strict_trial_read(text, &d);
    doc = cJSON_Parse(text);
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "mode")->valuestring, "executed");
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "mode_reason")->valuestring, "executed: test");
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(doc, "composed")));
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(doc, "note")->valuestring,
                                 "the pipeline ran for real: 4 stages"));
    st = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 0);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(st, "measured_s")->valuedouble, 0.25, 1e-15);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(st, "composed_from_measured_s")->valuedouble,
                            t.composed_s, 1e-15);
    stages = cJSON_GetObjectItem(st, "stages");
    s2 = cJSON_GetArrayItem(stages, 2);
    ck_assert_str_eq(cJSON_GetObjectItem(s2, "source")->valuestring, "executed on GPU 2");
    ck_assert_int_eq(cJSON_GetObjectItem(s2, "gpu")->valueint, 2);
    ck_assert_str_eq(cJSON_GetObjectItem(s2, "route_to_next")->valuestring, "host");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(stages, 3),
                                               "route_to_next")));
    ck_assert_double_eq_tol(cJSON_GetObjectItem(s2, "measured_fwd_s")->valuedouble,
                            meas[2].fwd_s, 1e-15);
    cJSON_Delete(doc);
    free(text);
    launch_trial_free(&t);
    launch_exec_result_free(&res);
    launch_exec_result_free(NULL);
    launch_exec_samples_free(&smp);
    launch_exec_samples_free(NULL);
    launch_exec_free(&x);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

/* ---- multi-rank: groups, schedule, sizes, bootstrap, dry run --------- */

/* Megatron-LM's own example (megatron/core/parallel_state.py,
 * initialize_model_parallel docstring): 16 GPUs, tp 2, pp 4 (dp 2) give
 * tensor groups [g0 g1] [g2 g3] ..., pipeline groups [g0 g4 g8 g12]
 * [g1 g5 g9 g13] [g2 g6 g10 g14] [g3 g7 g11 g15], data groups [g0 g2]
 * [g1 g3] [g4 g6] [g5 g7] ... */
START_TEST(test_groups_megatron)
{
    fmt_strategy s;
    int m[16], n, r, k, idx, kind;
    static const int pipe[4][4] = {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14},
                                   {3, 7, 11, 15}};
    static const int data[8][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7},
                                   {8, 10}, {9, 11}, {12, 14}, {13, 15}};

    ck_assert_int_eq(fmt_strategy_alloc(&s, 2, 2, 4), UTIL_OK);
    for (r = 0; r < 16; r++)
        s.ranks[r] = r;
    for (r = 0; r < 16; r++) {
        n = launch_group(&s, LAUNCH_GROUP_TP, r, m, 16, &idx);
        ck_assert_int_eq(n, 2);
        ck_assert(m[0] == (r & ~1) && m[1] == (r | 1));
        ck_assert_int_eq(idx, r / 2);
        n = launch_group(&s, LAUNCH_GROUP_PP, r, m, 16, &idx);
        ck_assert_int_eq(n, 4);
        for (k = 0; k < 4; k++)
            ck_assert_int_eq(m[k], pipe[r % 4][k]);
        ck_assert_int_eq(idx, r % 4);
        n = launch_group(&s, LAUNCH_GROUP_DP, r, m, 16, &idx);
        ck_assert_int_eq(n, 2);
        for (k = 0; k < 8 && !(data[k][0] == r || data[k][1] == r); k++)
            ;
        ck_assert(k < 8 && m[0] == data[k][0] && m[1] == data[k][1]);
        /* embedding group: first and last stage of the pipeline */
        n = launch_group(&s, LAUNCH_GROUP_EMBED, r, m, 16, NULL);
        ck_assert(n == 2 && m[0] == pipe[r % 4][0] && m[1] == pipe[r % 4][3]);
    }
    /* brute force: every rank is in exactly one group of each kind, the
       group's members are all the ranks agreeing on the other two
       coordinates */
    for (kind = LAUNCH_GROUP_TP; kind <= LAUNCH_GROUP_DP; kind++)
        for (r = 0; r < 16; r++) {
            int q, count = 0;
            n = launch_group(&s, kind, r, m, 16, NULL);
            for (q = 0; q < 16; q++) {
                int st = q / 4, dpi = (q % 4) / 2, tpi = q % 2;
                int rs = r / 4, rd = (r % 4) / 2, rt = r % 2, same;
                same = kind == LAUNCH_GROUP_TP   ? st == rs && dpi == rd
                       : kind == LAUNCH_GROUP_PP ? dpi == rd && tpi == rt
                                                 : st == rs && tpi == rt;
                if (same) {
                    ck_assert_int_lt(count, n);
                    ck_assert_int_eq(m[count], q); /* ascending order */
                    count++;
                }
            }
            ck_assert_int_eq(count, n);
        }
    ck_assert_int_eq(launch_group(&s, LAUNCH_NGROUPS, 0, m, 16, NULL), 0);
    fmt_strategy_free(&s);
}
END_TEST

START_TEST(test_plan_rank)
{
    fmt_cluster c;
    fmt_strategy s;
    util_error err;
    launch_coord co;
    int pr, r;

    memset(&c, 0, sizeof c);
    c.nnodes = 2;
    c.nodes = calloc(2, sizeof *c.nodes);
    c.nodes[0].gpus = 4;
    c.nodes[1].gpus = 4;
    ck_assert_int_eq(fmt_cluster_index(&c), UTIL_OK);
    ck_assert_int_eq(c.ndevices, 8);
    /* tp 2, dp 1, pp 3 on devices 7 6 | 1 0 | 3 2: devices 4 and 5 idle */
    ck_assert_int_eq(fmt_strategy_alloc(&s, 2, 1, 3), UTIL_OK);
    {
        static const int dev[6] = {7, 6, 1, 0, 3, 2};
        memcpy(s.ranks, dev, sizeof dev);
    }
    ck_assert_int_eq(launch_plan_rank(&c, &s, LAUNCH_ORDER_MEGATRON, 5, 6, &pr, &err), UTIL_OK);
    ck_assert_int_eq(pr, 5);
    ck_assert_int_eq(launch_plan_rank(&c, &s, LAUNCH_ORDER_MEGATRON, 0, 8, &pr, &err),
                     UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "world size 8 does not match the plan's 6 ranks"));
    ck_assert_int_eq(launch_plan_rank(&c, &s, LAUNCH_ORDER_PLAN, 0, 6, &pr, &err), UTIL_EINVAL);
    /* plan order: process r runs on cluster device r */
    {
        static const int want[8] = {3, 2, 5, 4, -1, -1, 1, 0};
        for (r = 0; r < 8; r++) {
            ck_assert_int_eq(launch_plan_rank(&c, &s, LAUNCH_ORDER_PLAN, r, 8, &pr, &err),
                             UTIL_OK);
            ck_assert_int_eq(pr, want[r]);
        }
    }
    ck_assert_int_eq(launch_plan_rank(&c, &s, LAUNCH_ORDER_PLAN, 8, 8, &pr, &err), UTIL_EINVAL);
    /* plan rank 3: stage 1, tp index 1, device 0 on node 0; rank 0 on node 1 */
    launch_coord_of(&c, &s, 3, &co);
    ck_assert(co.stage == 1 && co.dpi == 0 && co.tpi == 1 && co.device == 0 && co.node == 0);
    launch_coord_of(&c, &s, 0, &co);
    ck_assert(co.stage == 0 && co.device == 7 && co.node == 1);
    fmt_strategy_free(&s);
    fmt_cluster_free(&c);
}
END_TEST

/* Interleaved 1F1B, pp 2, vpp 2, 4 micro-batches, by hand from Megatron-
 * LM's rules: warm-up (pp - 1 - stage) * 2 + (vpp - 1) * pp forwards (4
 * on stage 0, 2 on stage 1); forward k runs chunk (k mod 4) / 2 of
 * micro-batch (k / 4) * 2 + k mod 2, backward k the other chunk. */
START_TEST(test_passes_interleaved)
{
    static const char *want[2] = {
        "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0",
        "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0"};
    launch_pass ps[64];
    util_error err;
    char got[512];
    int j, n, k, at;

    for (j = 0; j < 2; j++) {
        n = launch_passes(FMT_SCHED_1F1B, 2, j, 2, 4, ps, 64, &err);
        ck_assert_int_eq(n, 16);
        for (k = 0, at = 0; k < n; k++)
            at += snprintf(got + at, sizeof got - (size_t)at, "%s%c%d.%d", k ? " " : "",
                           ps[k].bwd ? 'B' : 'F', ps[k].micro, ps[k].chunk);
        ck_assert_str_eq(got, want[j]);
    }
    /* vpp 1 is plain 1F1B */
    n = launch_passes(FMT_SCHED_1F1B, 1, 0, 4, 8, ps, 64, &err);
    ck_assert(n == 16 && !ps[3].bwd && ps[4].bwd && ps[4].micro == 0 && ps[4].chunk == 0);
    ck_assert_int_eq(launch_passes(FMT_SCHED_1F1B, 2, 0, 2, 3, ps, 64, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "a multiple of pp"));
    ck_assert_int_eq(launch_passes(FMT_SCHED_GPIPE, 2, 0, 2, 4, ps, 64, &err), -1);
    ck_assert_int_eq(launch_passes(FMT_SCHED_1F1B, 2, 0, 2, 4, ps, 8, &err), -1);
}
END_TEST

/* Brute-force run of every stage's steps with NCCL's matching rule (the
 * k-th send from a to b meets the k-th receive at b from a; a group ends
 * when each of its operations has met its partner), forward 1 and
 * backward 2 time units per chunk, transfers free.  Returns the
 * makespan; fails the test on a deadlock, a mismatched pair or a pass
 * run before its input. */
static double simulate_steps(int schedule, int vpp, int pp, int gas, int *peak)
{
    enum { MAXS = 8, MAXN = 1024, MAXO = 4 };
    launch_step *st[MAXS];
    int n[MAXS], at[MAXS], cp[MAXS][MAXN][MAXO], j, k, o, progress = 1, nv = pp * vpp;
    double arrive[MAXS][MAXN + 1], t[MAXS], end_f[64][32], end_b[64][32], span = 0.0;
    double act[32];
    util_error err;

    ck_assert(pp <= MAXS && gas <= 64 && nv <= 32);
    for (k = 0; k < nv; k++)
        act[k] = 1000.0 + k; /* distinct per cut, to check the pairing */
    for (j = 0; j < pp; j++) {
        n[j] = launch_steps(schedule, vpp, j, pp, gas, act, &st[j], &err);
        ck_assert_msg(n[j] > 0 && n[j] <= MAXN, "%s", err.msg);
        at[j] = 0;
        t[j] = 0.0;
        arrive[j][0] = 0.0;
        peak[j] = 0;
    }
    for (k = 0; k < gas; k++)
        for (o = 0; o < nv; o++)
            end_f[k][o] = end_b[k][o] = -1.0;
    /* partners: k-th send a -> b with k-th receive at b from a */
    for (j = 0; j < pp; j++)
        for (k = 0; k < n[j]; k++)
            for (o = 0; o < st[j][k].np; o++) {
                const launch_p2p *p = &st[j][k].p2p[o];
                int b = p->peer, seq = 0, kk, oo, found = 0;
                ck_assert(b >= 0 && b < pp && b != j);
                for (kk = 0; kk < k; kk++)
                    for (oo = 0; oo < st[j][kk].np; oo++)
                        seq += st[j][kk].p2p[oo].peer == b && st[j][kk].p2p[oo].send == p->send;
                for (oo = 0; oo < o; oo++)
                    seq += st[j][k].p2p[oo].peer == b && st[j][k].p2p[oo].send == p->send;
                for (kk = 0; kk < n[b] && !found; kk++)
                    for (oo = 0; oo < st[b][kk].np && !found; oo++) {
                        const launch_p2p *q = &st[b][kk].p2p[oo];
                        if (q->peer != j || q->send == p->send)
                            continue;
                        if (seq-- == 0) {
                            found = 1;
                            ck_assert(q->grad == p->grad && q->micro == p->micro &&
                                      q->chunk == p->chunk && q->bytes == p->bytes);
                            cp[j][k][o] = kk;
                        }
                    }
                ck_assert_msg(found, "stage %d step %d: no partner", j, k);
            }
    while (progress) {
        progress = 0;
        for (j = 0; j < pp; j++) {
            launch_step *s;
            if (at[j] >= n[j])
                continue;
            s = &st[j][at[j]];
            if (s->is_pass) {
                int v = s->pass.chunk * pp + j, m = s->pass.micro, live = 0, q;
                double start = t[j];
                if (!s->pass.bwd) {
                    if (v > 0)
                        ck_assert(end_f[m][v - 1] >= 0 && end_f[m][v - 1] <= start);
                    ck_assert(end_f[m][v] < 0);
                    t[j] += 1.0;
                    end_f[m][v] = t[j];
                } else {
                    if (v < nv - 1)
                        ck_assert(end_b[m][v + 1] >= 0 && end_b[m][v + 1] <= start);
                    ck_assert(end_f[m][v] >= 0 && end_f[m][v] <= start && end_b[m][v] < 0);
                    t[j] += 2.0;
                    end_b[m][v] = t[j];
                }
                for (q = 0; q < gas; q++)
                    for (o = 0; o < vpp; o++)
                        live += end_f[q][o * pp + j] >= 0 && end_b[q][o * pp + j] < 0;
                if (live > peak[j])
                    peak[j] = live;
            } else {
                double done = arrive[j][at[j]];
                int ok = 1;
                for (o = 0; o < s->np; o++) {
                    int b = s->p2p[o].peer, kk = cp[j][at[j]][o];
                    if (at[b] < kk) {
                        ok = 0;
                        break;
                    }
                    if (arrive[b][kk] > done)
                        done = arrive[b][kk];
                }
                if (!ok)
                    continue;
                t[j] = done;
            }
            at[j]++;
            arrive[j][at[j]] = t[j];
            progress = 1;
        }
    }
    for (j = 0; j < pp; j++) {
        ck_assert_msg(at[j] == n[j], "deadlock: stage %d stuck at step %d of %d "
                      "(schedule %d, vpp %d, pp %d, gas %d)", j, at[j], n[j], schedule,
                      vpp, pp, gas);
        if (t[j] > span)
            span = t[j];
        free(st[j]);
    }
    for (k = 0; k < gas; k++)
        for (o = 0; o < nv; o++)
            ck_assert(end_f[k][o] >= 0 && end_b[k][o] >= 0);
    return span;
}

START_TEST(test_steps_simulated)
{
    int pp, gas, vpp, peak[8], j;
    cost_params p;

    cost_params_init(&p);
    for (pp = 1; pp <= 6; pp++)
        for (gas = 1; gas <= 12; gas++) {
            /* 1F1B and GPipe: (gas + pp - 1)(tf + tb), the pipeline bubble
               of Narayanan et al. SC'21, sec. 2.2.1 */
            ck_assert_double_eq(simulate_steps(FMT_SCHED_1F1B, 1, pp, gas, peak),
                                (gas + pp - 1) * 3.0);
            for (j = 0; j < pp; j++) {
                p.schedule = FMT_SCHED_1F1B;
                ck_assert_int_eq(peak[j], cost_inflight(&p, j, pp, gas));
            }
            ck_assert_double_eq(simulate_steps(FMT_SCHED_GPIPE, 1, pp, gas, peak),
                                (gas + pp - 1) * 3.0);
            ck_assert_int_eq(peak[0], gas);
            /* interleaved: the bubble of the idealised schedule is (pp - 1)
               (tf + tb) / vpp (SC'21, sec. 2.2.2): per-chunk times 1 and 2
               give a lower bound of (gas * vpp + pp - 1) * 3.  Megatron's
               exchange after every forward-backward pair is synchronous
               here (a send waits for its receive), which can add at most
               one more (pp - 1)(tf + tb) / vpp of fill: the upper bound. */
            for (vpp = 2; vpp <= 3 && pp > 1; vpp++)
                if (gas % pp == 0) {
                    double got = simulate_steps(FMT_SCHED_1F1B, vpp, pp, gas, peak);
                    ck_assert_double_ge(got, (gas * vpp + pp - 1) * 3.0);
                    ck_assert_double_le(got, (gas * vpp + 2 * (pp - 1)) * 3.0);
                    if (gas == pp) /* warm-up and cool-down only: no lockstep */
                        ck_assert_double_eq(got, (gas * vpp + pp - 1) * 3.0);
                }
        }
}
END_TEST

/* A plan with every kind of group: GPT-2 345M, tp 2, dp 2, pp 2, mbs 2
 * (8 micro-batches), sequence parallelism, distributed optimizer, on two
 * nodes of 4 H100; extra JSON fields of the strategy in `more`. */
static void make_plan8(const char *more, char *path, size_t n)
{
    char cl[600], sg[600], cmd[4096];
    FILE *f;

    snprintf(cl, sizeof cl, "%s/c8.json", tmpdir);
    snprintf(sg, sizeof sg, "%s/s8.json", tmpdir);
    snprintf(path, n, "%s/plan8.json", tmpdir);
    f = fopen(cl, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"name\": \"two\", \"nodes\": [\n"
          " {\"name\": \"a\", \"device\": \"H100-SXM\", \"gpus\": 4, \"intra_gbps\": 3600, "
          "\"nic_gbps\": 400},\n"
          " {\"name\": \"b\", \"device\": \"H100-SXM\", \"gpus\": 4, \"intra_gbps\": 3600, "
          "\"nic_gbps\": 400}]}\n", f);
    fclose(f);
    f = fopen(sg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"strategies\": [{\"tp\": 2, \"dp\": 2, \"pp\": 2, \"mbs\": 2, "
               "\"stage_boundaries\": [0, 13, 27]%s}]}\n", more);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' evaluate --cluster '%s' --model '%s' --strategies '%s' "
                              "--output '%s' --quiet", HETPLAN_PLANNER, cl,
             EX("gpt2-345m.json"), sg, path);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

static void remove_plan8(void)
{
    static const char *const names[] = {"c8.json", "s8.json", "plan8.json"};
    char path[600];
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
}

/* GPT-2 345M (h = s = 1024, vocab 52256, fp16, learned positions, tied
 * embedding), stage 0 = embedding + 12 blocks, tp 2, mbs 2, by hand:
 * - activation at the cut: mbs s h 2 bytes / tp (sequence parallel) =
 *   2 * 1024 * 1024 * 2 / 2 = 2097152;
 * - TP collectives: 1 (embedding) + 2 per block = 25 each way, each of
 *   mbs s h 2 = 4194304 bytes: 104857600 per direction;
 * - parameters per rank: embedding 52256 * 1024 / 2 + 1024 * 1024
 *   (replicated positions) = 27803648; a block 12h^2 + 13h = 12596224
 *   of which 6144 replicated (two norms 4h, two row-parallel biases 2h):
 *   (12596224 - 6144) / 2 + 6144 = 6301184, 12 of them 75614208; in all
 *   103417856;
 * - fp16 gradients 2 bytes per parameter: 206835712 reduce-scattered,
 *   the same in weights all-gathered (zero 1);
 * - the tied embedding's gradient: the token table only (positions are
 *   not tied), 52256 * 1024 / 2 * 2 bytes = 53510144; the head's side
 *   is the same matrix, so both ends all-reduce the same size. */
START_TEST(test_sizes)
{
    char p8[600];
    plan_doc d;
    launch_sizes z;
    util_error err;
    int rc;

    make_plan8(", \"sequence_parallel\": true, \"zero\": 1", p8, sizeof p8);
    rc = plan_load_plan(p8, &d, &err);
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 1, &z, &err), UTIL_OK);
    ck_assert_int_eq(z.stage, 0);
    ck_assert_double_eq(z.act_bytes[0], 2097152.0);
    ck_assert_int_eq(z.tp_fwd, 25);
    ck_assert_int_eq(z.tp_bwd, 25);
    ck_assert_double_eq(z.tp_bytes, 4194304.0);
    ck_assert_double_eq(z.tp_fwd_bytes, 104857600.0);
    ck_assert_double_eq(z.params, 103417856.0);
    ck_assert_double_eq(z.grad_bytes, 206835712.0);
    ck_assert_double_eq(z.dp_rs, 206835712.0);
    ck_assert_double_eq(z.dp_ag, 206835712.0);
    ck_assert_double_eq(z.dp_allreduce, 0.0);
    ck_assert_double_eq(z.embed_bytes, 53510144.0);
    launch_sizes_free(&z);
    /* stage 1 (rank 4): 12 blocks + final norm (2h = 2048 replicated) +
     * head (52256 * 1024, tied, split): 75614208 + 2048 + 26755072 =
     * 102371328; TP 24 + 3 (head's loss all-reduces) = 27 */
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 4, &z, &err), UTIL_OK);
    ck_assert_int_eq(z.stage, 1);
    ck_assert_double_eq(z.params, 102371328.0);
    ck_assert_int_eq(z.tp_fwd, 27);
    ck_assert_double_eq(z.embed_bytes, 26755072.0 * 2.0);
    launch_sizes_free(&z);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 8, &z, &err), UTIL_EINVAL);
    launch_sizes_free(&z);
    plan_doc_free(&d);
    /* no sequence parallelism, no distributed optimizer: whole activation,
       one all-reduce of the gradients */
    make_plan8(", \"zero\": 0", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 0, &z, &err), UTIL_OK);
    ck_assert_double_eq(z.act_bytes[0], 4194304.0);
    ck_assert_double_eq(z.dp_allreduce, 206835712.0);
    ck_assert_double_eq(z.dp_rs + z.dp_ag, 0.0);
    launch_sizes_free(&z);
    plan_doc_free(&d);
    /* interleaved, vpp 2: device 0's 13 layers split 6 + 7, device 1's 14
       split 7 + 7; the cuts after virtual stages 0, 1, 2 follow layers 5,
       19 and 12, all blocks: mbs s h 2 = 4194304 bytes each */
    make_plan8(", \"vpp\": 2", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(d.s[0].vpp, 2);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 0, &z, &err), UTIL_OK);
    ck_assert_int_eq(z.vpp, 2);
    ck_assert_double_eq(z.act_bytes[0], 4194304.0);
    ck_assert_double_eq(z.act_bytes[1], 4194304.0);
    ck_assert_double_eq(z.act_bytes[2], 4194304.0);
    launch_sizes_free(&z);
    plan_doc_free(&d);
    remove_plan8();
}
END_TEST

/* The GPU code has fp16 and bf16 kernels: an fp32 plan is refused with
 * the reason, not run in 16 bits against fp32 times. */
START_TEST(test_fp32_plan_refused)
{
    char p8[600];
    plan_doc d;
    launch_work w;
    util_error err;

    make_plan8("", p8, sizeof p8);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    launch_work_free(&w);
    d.model.dtype_bytes = 4;
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.path, "settings.precision");
    ck_assert_ptr_nonnull(strstr(err.msg, "the plan trains in fp32"));
    launch_work_free(&w);
    plan_doc_free(&d);
    remove_plan8();
}
END_TEST

START_TEST(test_dry_run)
{
    char p8[600], *text = NULL;
    plan_doc d;
    launch_work w;
    launch_dry_input in;
    util_error err;
    int warn = -1;

    make_plan8(", \"sequence_parallel\": true, \"zero\": 1", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    launch_dry_input_init(&in);
    in.local_gpus = 8;
    ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_OK);
    ck_assert_int_eq(warn, 0);
    /* rank 5: stage 1 (5 / 4), dp 0 ((5 % 4) / 2), tp 1 */
    ck_assert_msg(strstr(text, "rank 5: plan rank 5, stage 1, dp 0, tp 1; cluster device 5 "
                               "(H100-SXM, node 'b')") != NULL, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "groups (plan ranks): tp #2 [4 5] pp #1 [1 5] "
                                       "dp #3 [5 7] embed #1 [1 5]"));
    /* 1F1B, stage 0 of 2, 8 micro-batches: one warm-up forward */
    ck_assert_ptr_nonnull(strstr(text, "schedule (F/B micro-batch): F0 F1 B0 F2 B1"));
    ck_assert_ptr_nonnull(strstr(text, "send activation 2.000 MiB to stage 1"));
    ck_assert_ptr_nonnull(strstr(text, "reduce-scatter"));
    {
        /* the memory line is the memory model's own figure for the rank */
        cost_memory mem;
        char want[128];
        cost_rank_stage_memory(&d.model, &d.params, &d.s[0], 7, &mem);
        cost_runtime_apply(&d.cluster, &d.params, &d.s[0], 7, &mem);
        snprintf(want, sizeof want, "memory model: %.2f GiB peak", mem.total / 1073741824.0);
        ck_assert_ptr_nonnull(strstr(strstr(text, "rank 7:"), want));
    }
    free(text);
    /* more local processes than GPUs: a warning; a world that does not fit */
    in.local_gpus = 1;
    in.only = 3;
    ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_OK);
    ck_assert_int_eq(warn, 1);
    ck_assert_ptr_nonnull(strstr(text, "warning: 8 processes would start here but only 1 GPU"));
    ck_assert_ptr_null(strstr(text, "rank 2:"));
    ck_assert_ptr_nonnull(strstr(text, "rank 3:"));
    free(text);
    /* this machine's GPUs against the plan's H100s: GPU 3 is an A100 */
    {
        static const char *const names[8] = {
            "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
            "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
            "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"};
        in.local_gpus = 8;
        in.local_names = names;
        in.only = -1;
        ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_OK);
        ck_assert_int_eq(warn, 1);
        ck_assert_msg(strstr(text, "warning: rank 3 would run on local GPU 3 'NVIDIA "
                                   "A100-SXM4-80GB' (A100-80GB), the plan assumed "
                                   "'H100-SXM'") != NULL, "%.900s", strstr(text, "rank 3:"));
        free(text);
        in.local_names = NULL;
    }
    in.world = 6;
    ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "world size 6"));
    launch_work_free(&w);
    plan_doc_free(&d);
    remove_plan8();
}
END_TEST

static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    ck_assert_int_ge(fd, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

enum boot_case { BOOT_OK, BOOT_LOST, BOOT_ABORT, BOOT_MISSING, BOOT_MISSING2 };

/* One rank of a bootstrap test, in a child process: 0 when it saw what
 * the case expects. */
static int boot_child(int rank, int world, int port, int what)
{
    launch_boot_params p;
    launch_boot *b = NULL;
    util_error err;
    unsigned char blob[128];
    char info[64];
    const void *got;
    size_t len;
    int r, rc, mine = 100 + rank, all[8];

    launch_boot_params_init(&p);
    p.port = port;
    p.rank = rank;
    p.world = world;
    p.timeout_s = what >= BOOT_MISSING ? 1.0 : tu_timeout(20.0);
    for (r = 0; r < 128; r++)
        blob[r] = (unsigned char)(r * 7 + 3);
    snprintf(info, sizeof info, "info of rank %d", rank);
    rc = launch_boot_create(&p, rank == 0 ? blob : NULL, rank == 0 ? 128 : 0, info,
                            strlen(info) + 1, &b, &err);
    if (what == BOOT_MISSING2)
        return rc != UTIL_OK && strstr(err.msg, "ranks 2, 3 did not join within 1 s") ? 0 : 11;
    if (what == BOOT_MISSING)
        return rc == UTIL_ETIMEOUT || (rc == UTIL_EIO && rank != 0)
                   ? (strstr(err.msg, "rank 2") ? 0 : 11) : 12;
    if (rc != UTIL_OK)
        return 13;
    got = launch_boot_blob(b, &len);
    if (len != 128 || memcmp(got, blob, 128) != 0)
        return 14;
    for (r = 0; r < world; r++) {
        snprintf(info, sizeof info, "info of rank %d", r);
        got = launch_boot_info(b, r, &len);
        if (!got || len != strlen(info) + 1 || strcmp(got, info) != 0)
            return 15;
    }
    if (what == BOOT_LOST && rank == 2)
        _exit(0); /* dies without a word */
    if (what == BOOT_ABORT && rank == 1) {
        launch_boot_abort(b, "out of memory on GPU 1");
        launch_boot_destroy(b);
        return 0;
    }
    if (what == BOOT_LOST) {
        /* the watchdog sees it */
        for (r = 0; r < (int)tu_timeout(100); r++)
            if ((rc = launch_boot_watch(b, 0.1, &err)) != UTIL_OK)
                break;
        launch_boot_destroy(b);
        return rc == UTIL_EIO && strstr(err.msg, "rank 2 lost") ? 0 : 16;
    }
    rc = launch_boot_gather(b, &mine, sizeof mine, all, tu_timeout(20.0), &err);
    launch_boot_destroy(b);
    if (what == BOOT_ABORT)
        return rc == UTIL_EIO && strstr(err.msg, "rank 1: out of memory on GPU 1") ? 0 : 17;
    if (rc != UTIL_OK)
        return 18;
    if (rank == 0)
        for (r = 0; r < world; r++)
            if (all[r] != 100 + r)
                return 19;
    return 0;
}

/* world processes (all but those in the bit mask `skip`), each must exit
 * 0, within `limit` s (times HETPLAN_TEST_TIMEOUT_FACTOR). */
static void boot_run(int world, int what, int skip, double limit)
{
    pid_t pid[8];
    int r, port = free_port(), status;
    time_t t0 = time(NULL);

    for (r = 0; r < world; r++) {
        pid[r] = -1;
        if (skip >= 0 && (skip >> r) & 1)
            continue;
        pid[r] = fork();
        ck_assert_int_ge(pid[r], 0);
        if (pid[r] == 0)
            _exit(boot_child(r, world, port, what));
    }
    for (r = 0; r < world; r++) {
        if (pid[r] < 0)
            continue;
        ck_assert_int_eq(waitpid(pid[r], &status, 0), pid[r]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "case %d: rank %d ended with %d", what, r, WEXITSTATUS(status));
    }
    ck_assert_msg(difftime(time(NULL), t0) <= tu_timeout(limit), "case %d took %.0f s", what,
                  difftime(time(NULL), t0));
}

START_TEST(test_bootstrap)
{
    boot_run(4, BOOT_OK, -1, 10.0);
    boot_run(1, BOOT_OK, -1, 5.0);
    boot_run(4, BOOT_LOST, -1, 10.0);     /* rank 2 dies after joining */
    boot_run(4, BOOT_ABORT, -1, 10.0);    /* rank 1 reports a failure */
    boot_run(3, BOOT_MISSING, 1 << 2, 6.0);          /* rank 2 never starts: 1 s */
    boot_run(4, BOOT_MISSING2, 1 << 2 | 1 << 3, 6.0); /* nor do 2 and 3 */
}
END_TEST

/* torchrun's variables, its agent's port, the explicit override. */
START_TEST(test_env)
{
    launch_env e;
    util_error err;

    unsetenv("TORCHELASTIC_RUN_ID");
    unsetenv("HETPLAN_LAUNCH_PORT");
    unsetenv("WORLD_SIZE");
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_OK);
    ck_assert_int_eq(e.present, 0);
    setenv("WORLD_SIZE", "16", 1);
    setenv("RANK", "9", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("LOCAL_WORLD_SIZE", "8", 1);
    setenv("MASTER_ADDR", "node-a", 1);
    setenv("MASTER_PORT", "29400", 1);
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_OK);
    ck_assert(e.present && e.rank == 9 && e.world == 16 && e.local_rank == 1 &&
              e.local_world == 8 && e.port == 29400);
    ck_assert_str_eq(e.addr, "node-a");
    setenv("TORCHELASTIC_RUN_ID", "none", 1);
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_OK);
    ck_assert_int_eq(e.port, 29401);
    setenv("HETPLAN_LAUNCH_PORT", "31000", 1);
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_OK);
    ck_assert_int_eq(e.port, 31000);
    setenv("RANK", "16", 1);
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'RANK' expects an integer from 0 to 15"));
    unsetenv("RANK");
    ck_assert_int_eq(launch_env_of(&e, &err), UTIL_EINVAL);
    unsetenv("WORLD_SIZE");
}
END_TEST

START_TEST(test_bootstrap_args)
{
    launch_boot_params p;
    launch_boot *b = (launch_boot *)1;
    util_error err;

    launch_boot_params_init(&p);
    p.rank = 2;
    p.world = 2;
    ck_assert_int_eq(launch_boot_create(&p, NULL, 0, NULL, 0, &b, &err), UTIL_EINVAL);
    ck_assert_ptr_null(b);
    p.rank = 0;
    p.port = 70000;
    ck_assert_int_eq(launch_boot_create(&p, NULL, 0, NULL, 0, &b, &err), UTIL_EINVAL);
    launch_boot_destroy(NULL);
}
END_TEST

/* Rank 0's merge: per stage the slowest replica, the iteration the
 * slowest rank's median; the trial stays a strategies file with a
 * "ranks" array beside it. */
START_TEST(test_merge_ranks)
{
    plan_doc d;
    launch_work w;
    launch_measure meas[4];
    launch_trial t;
    launch_rank_result res[5];
    util_error err;
    fmt_strategy *s = NULL;
    char *text, *full;
    cJSON *doc, *ranks;
    int n = 0, j;
    static const double iter[4] = {0.20, 0.21, 0.22, 0.205};

    load_plan(&d);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(res, 0, sizeof res);
    for (j = 0; j < 4; j++) {
        res[j].rank = j;
        res[j].plan_rank = j;
        res[j].stage = j;
        res[j].iter_s = iter[j];
        res[j].iter_min_s = iter[j] - 0.001;
        res[j].iter_max_s = iter[j] + 0.002;
        res[j].fwd_s = 0.004 + 0.001 * j;
        res[j].bwd_s = 0.009;
        res[j].opt_s = 0.002;
        res[j].mem_predicted = 1e9 * (j + 1);
        res[j].mem_used = 2e9;
        res[j].mem_base = 0.5e9;
    }
    res[4].rank = 4;
    res[4].plan_rank = -1; /* an idle device */
    ck_assert_int_eq(launch_merge_ranks(&d, &w, res, 5, meas, &t, &err), UTIL_OK);
    ck_assert_double_eq_tol(t.measured_s, 0.22, 1e-12);
    ck_assert_double_eq_tol(t.iter_iqr_s, 0.003, 1e-12);
    for (j = 0; j < 4; j++) {
        ck_assert(meas[j].measured);
        /* tp 1: no TP collectives to take out */
        ck_assert_double_eq_tol(meas[j].fwd_s, 0.004 + 0.001 * j, 1e-12);
        ck_assert_double_eq_tol(meas[j].opt_s, 0.002, 1e-12);
    }
    ck_assert(t.executed && t.composed_s > 0.0);
    text = launch_trial_json(&d, &w, meas, &t, NULL, 10);
    ck_assert_ptr_nonnull(text);
    full = launch_ranks_json(text, res, 5);
    ck_assert_ptr_nonnull(full);
    ck_assert_int_eq(fmt_parse_strategies(full, "trial.json", &d.cluster, &d.model,
                                          d.global_batch, &s, &n, &err), UTIL_OK);
    ck_assert_int_eq(n, 1);
    fmt_strategy_free(&s[0]);
    free(s);
    doc = cJSON_Parse(full);
    /* the note says what ran: processes over NCCL, not delays */
    ck_assert_int_eq(t.processes, 5);
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(doc, "note")->valuestring,
                                 "own process over NCCL (5 ranks, 4 stages)"));
    ck_assert_ptr_null(strstr(cJSON_GetObjectItem(doc, "note")->valuestring, "delays"));
    strict_trial_read(full, &d);
    ranks = cJSON_GetObjectItem(doc, "ranks");
    ck_assert_int_eq(cJSON_GetArraySize(ranks), 5);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 2),
                                                "memory_predicted_bytes")->valuedouble,
                            3e9, 1.0);
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 4), "stage"));
    ck_assert_ptr_null(launch_ranks_json("{not json", res, 5));
    cJSON_Delete(doc);
    free(text);
    free(full);
    launch_trial_free(&t);
    /* a stage nobody reported */
    res[1].plan_rank = -1;
    ck_assert_int_eq(launch_merge_ranks(&d, &w, res, 5, meas, &t, &err), UTIL_EINTERNAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no rank reported stage 1"));
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

/* --spawn's supervisor: the environment each rank gets, the first
 * failure, and the rest ended after the grace period. */
START_TEST(test_spawn)
{
    launch_spawn_result res;
    util_error err;
    char script[1024], path[600], line[256];
    char *argv[4];
    FILE *f;
    time_t t0;
    int r;

    snprintf(path, sizeof path, "%s/env", tmpdir);
    snprintf(script, sizeof script,
             "echo \"$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR\" "
             "> '%s'.$RANK; [ \"$RANK\" = 2 ] && exit 7; [ \"$RANK\" = 1 ] && exit 0; "
             "exec sleep 30", path);
    argv[0] = (char *)"sh";
    argv[1] = (char *)"-c";
    argv[2] = script;
    argv[3] = NULL;
    t0 = time(NULL);
    ck_assert_int_eq(launch_spawn("/bin/sh", argv, 4, 1.0, &res, &err), UTIL_OK);
    ck_assert_msg(difftime(time(NULL), t0) < tu_timeout(10.0), "took %.0f s",
                  difftime(time(NULL), t0));
    ck_assert_int_eq(res.n, 4);
    ck_assert_int_eq(res.first_failed, 2);
    ck_assert_int_eq(res.status[2], 7);
    ck_assert_int_eq(res.status[1], 0);
    ck_assert_int_eq(res.status[0], 128 + SIGTERM); /* ended by the supervisor */
    ck_assert_int_eq(res.status[3], 128 + SIGTERM);
    ck_assert(res.killed);
    for (r = 0; r < 4; r++) {
        char want[128], name[700];
        snprintf(name, sizeof name, "%s.%d", path, r);
        f = fopen(name, "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        fclose(f);
        unlink(name);
        snprintf(want, sizeof want, "%d %d 4 4 127.0.0.1\n", r, r);
        ck_assert_str_eq(line, want);
    }
    launch_spawn_result_free(&res);
    launch_spawn_result_free(NULL);
    /* all succeed: nothing failed, nothing killed */
    argv[2] = (char *)"exit 0";
    ck_assert_int_eq(launch_spawn("/bin/sh", argv, 3, 1.0, &res, &err), UTIL_OK);
    ck_assert(res.first_failed == -1 && !res.killed);
    launch_spawn_result_free(&res);
    ck_assert_int_eq(launch_spawn("/bin/sh", argv, 0, 1.0, &res, &err), UTIL_EINVAL);
}
END_TEST

/* Every rank's program run together with NCCL's rules: a collective on a
 * group ends when every member has reached its collective of the same
 * ordinal on that group (same kind and size), a point-to-point operation
 * when its partner (k-th send a -> b, k-th receive at b) is posted.  Fails
 * on a deadlock or a mismatch; returns the TP operations of plan rank 0. */
static int simulate_programs(const plan_doc *d)
{
    enum { MAXR = 16 };
    const fmt_strategy *s = &d->s[0];
    int R = s->tp * s->dp * s->pp, n[MAXR], at[MAXR], r, i, progress = 1, tp0 = 0;
    launch_rop *prog[MAXR];
    int *ord[MAXR];
    util_error err;

    ck_assert_int_le(R, MAXR);
    for (r = 0; r < R; r++) {
        int count[LAUNCH_NGROUPS] = {0};
        n[r] = launch_rank_program(d, s, r, &prog[r], &err);
        ck_assert_msg(n[r] > 0, "%s", err.msg);
        at[r] = 0;
        ord[r] = calloc((size_t)n[r], sizeof(int));
        for (i = 0; i < n[r]; i++)
            if (prog[r][i].group >= 0 && prog[r][i].kind != LAUNCH_ROP_P2P)
                ord[r][i] = count[prog[r][i].group]++;
        for (i = 0; r == 0 && i < n[r]; i++)
            tp0 += prog[r][i].kind == LAUNCH_ROP_TP;
    }
    while (progress) {
        progress = 0;
        for (r = 0; r < R; r++) {
            const launch_rop *o;
            int ok = 1, m[MAXR], nm, k, j;
            if (at[r] >= n[r])
                continue;
            o = &prog[r][at[r]];
            if (o->kind == LAUNCH_ROP_P2P) {
                nm = launch_group(s, LAUNCH_GROUP_PP, r, m, MAXR, NULL);
                for (k = 0; k < o->step.np && ok; k++) {
                    const launch_p2p *p = &o->step.p2p[k];
                    int peer = m[p->peer], seq = 0, found = -1, jj, kk;
                    for (j = 0; j < at[r]; j++)
                        for (kk = 0; prog[r][j].kind == LAUNCH_ROP_P2P && kk < prog[r][j].step.np; kk++)
                            seq += prog[r][j].step.p2p[kk].peer == p->peer &&
                                   prog[r][j].step.p2p[kk].send == p->send;
                    for (kk = 0; kk < k; kk++)
                        seq += o->step.p2p[kk].peer == p->peer && o->step.p2p[kk].send == p->send;
                    for (jj = 0; jj < n[peer] && found < 0; jj++)
                        for (kk = 0; prog[peer][jj].kind == LAUNCH_ROP_P2P &&
                                     kk < prog[peer][jj].step.np && found < 0; kk++) {
                            const launch_p2p *q = &prog[peer][jj].step.p2p[kk];
                            if (m[q->peer] != r || q->send == p->send || seq-- != 0)
                                continue;
                            ck_assert(q->grad == p->grad && q->micro == p->micro &&
                                      q->chunk == p->chunk && q->bytes == p->bytes);
                            found = jj;
                        }
                    ck_assert_msg(found >= 0, "rank %d: no partner", r);
                    ok = at[peer] >= found;
                }
                (void)nm;
            } else if (o->group >= 0) {
                nm = launch_group(s, o->group, r, m, MAXR, NULL);
                for (k = 0; k < nm && ok; k++) {
                    int q = m[k];
                    for (j = 0; j < n[q] && !(prog[q][j].group == o->group &&
                                              prog[q][j].kind != LAUNCH_ROP_P2P &&
                                              ord[q][j] == ord[r][at[r]]); j++)
                        ;
                    ck_assert_msg(j < n[q], "rank %d: no collective %d on group %d", q,
                                  ord[r][at[r]], o->group);
                    ck_assert(prog[q][j].kind == o->kind && prog[q][j].bytes == o->bytes);
                    ok = at[q] >= j;
                }
            }
            if (ok) {
                at[r]++;
                progress = 1;
            }
        }
    }
    for (r = 0; r < R; r++) {
        ck_assert_msg(at[r] == n[r], "deadlock: rank %d at op %d of %d (kind %d)", r, at[r],
                      n[r], prog[r][at[r]].kind);
        free(prog[r]);
        free(ord[r]);
    }
    return tp0;
}

/* The whole world: TP, PP, DP and embedding groups together. */
START_TEST(test_programs_simulated)
{
    char p8[600];
    plan_doc d;
    util_error err;
    launch_rop *ops;
    int n, i, kinds[8] = {0};

    /* tp 2, dp 2, pp 2, sequence parallel, distributed optimizer: rank 0
       runs 8 micro-batches x (25 forward + 25 backward) TP collectives =
       400, then embedding all-reduce, reduce-scatter, Adam, all-gather */
    make_plan8(", \"sequence_parallel\": true, \"zero\": 1", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(simulate_programs(&d), 400);
    n = launch_rank_program(&d, &d.s[0], 0, &ops, &err);
    for (i = 0; i < n; i++)
        kinds[ops[i].kind]++;
    ck_assert_int_eq(kinds[LAUNCH_ROP_PASS], 16);
    ck_assert(kinds[LAUNCH_ROP_EMBED] == 1 && kinds[LAUNCH_ROP_DP_RS] == 1 &&
              kinds[LAUNCH_ROP_OPT] == 1 && kinds[LAUNCH_ROP_DP_AG] == 1 &&
              kinds[LAUNCH_ROP_DP_ALLREDUCE] == 0);
    ck_assert_int_eq(ops[n - 1].kind, LAUNCH_ROP_DP_AG);
    free(ops);
    plan_doc_free(&d);
    make_plan8(", \"vpp\": 2, \"zero\": 0", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(simulate_programs(&d), 400);
    plan_doc_free(&d);
    make_plan8(", \"schedule\": \"gpipe\"", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    simulate_programs(&d);
    plan_doc_free(&d);
    remove_plan8();
    load_plan(&d); /* pp 4, tp 1: no TP collectives */
    ck_assert_int_eq(simulate_programs(&d), 0);
    plan_doc_free(&d);
}
END_TEST

/* Optimizer offload (ZeRO-Offload, Ren et al., ATC'21, sec. 4.2) of the
 * plan of test_sizes, by hand: each rank copies the gradients of the
 * shard it steps to the host and the shard's weights back.
 * - ZeRO 1, dp 2: rank 1 (stage 0) holds 103417856 parameters (test_sizes),
 *   fp16 gradients and weights 2 bytes each: 206835712 bytes, its half
 *   103417856 bytes = 98.627 MiB each way; rank 4 (stage 1) 102371328
 *   parameters: 204742656 / 2 = 102371328 bytes each way;
 * - ZeRO 0: no sharding, the whole 206835712 bytes each way;
 * - host memory of rank 1: fp32 master weights, Adam's m and v and the
 *   fp32 gradient copy, 16 bytes per parameter, / dp 2 under ZeRO 1:
 *   103417856 x 16 / 2 = 827342848 B = 0.7705 GiB. */
START_TEST(test_sizes_offload)
{
    char p8[600], *text = NULL;
    plan_doc d;
    launch_sizes z;
    launch_work w;
    launch_dry_input in;
    launch_rop *ops;
    util_error err;
    int n, i, kinds[16] = {0}, d2h = -1, opt = -1, h2d = -1, warn = -1;

    make_plan8(", \"zero\": 1, \"offload\": \"optimizer\"", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(d.s[0].offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 1, &z, &err), UTIL_OK);
    ck_assert_double_eq(z.params, 103417856.0);
    ck_assert_double_eq(z.host_grad_bytes, 103417856.0);
    ck_assert_double_eq(z.host_weight_bytes, 103417856.0);
    /* the collectives do not change */
    ck_assert_double_eq(z.dp_rs, 206835712.0);
    ck_assert_double_eq(z.dp_ag, 206835712.0);
    launch_sizes_free(&z);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 4, &z, &err), UTIL_OK);
    ck_assert_double_eq(z.host_grad_bytes, 102371328.0);
    ck_assert_double_eq(z.host_weight_bytes, 102371328.0);
    launch_sizes_free(&z);
    /* the program: reduce-scatter, gradients out, Adam, weights back,
       all-gather; every rank's program still matches its peers' */
    n = launch_rank_program(&d, &d.s[0], 1, &ops, &err);
    ck_assert_int_gt(n, 0);
    for (i = 0; i < n; i++) {
        ck_assert(ops[i].kind >= 0 && ops[i].kind < 16);
        kinds[ops[i].kind]++;
        if (ops[i].kind == LAUNCH_ROP_HOST_D2H) {
            d2h = i;
            ck_assert_double_eq(ops[i].bytes, 103417856.0);
            ck_assert_int_eq(ops[i].group, -1);
        }
        if (ops[i].kind == LAUNCH_ROP_OPT)
            opt = i;
        if (ops[i].kind == LAUNCH_ROP_HOST_H2D) {
            h2d = i;
            ck_assert_double_eq(ops[i].bytes, 103417856.0);
        }
    }
    ck_assert_int_eq(kinds[LAUNCH_ROP_HOST_D2H], 1);
    ck_assert_int_eq(kinds[LAUNCH_ROP_HOST_H2D], 1);
    ck_assert_int_eq(ops[d2h - 1].kind, LAUNCH_ROP_DP_RS);
    ck_assert_int_eq(opt, d2h + 1);
    ck_assert_int_eq(h2d, opt + 1);
    ck_assert_int_eq(ops[n - 1].kind, LAUNCH_ROP_DP_AG);
    free(ops);
    simulate_programs(&d);
    /* the dry run reports the copies and the host memory */
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    launch_dry_input_init(&in);
    in.local_gpus = 8;
    in.only = 1;
    ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_OK);
    ck_assert_msg(strstr(text, "optimizer offload: gradients 98.627 MiB to the host, "
                               "weights 98.627 MiB back") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "host memory: 0.77 GiB of offloaded optimizer state") != NULL,
                  "%s", text);
    free(text);
    launch_work_free(&w);
    plan_doc_free(&d);
    /* ZeRO 0: the whole gradients and weights cross */
    make_plan8(", \"zero\": 0, \"offload\": \"optimizer\"", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 0, &z, &err), UTIL_OK);
    ck_assert_double_eq(z.host_grad_bytes, 206835712.0);
    ck_assert_double_eq(z.host_weight_bytes, 206835712.0);
    ck_assert_double_eq(z.dp_allreduce, 206835712.0);
    launch_sizes_free(&z);
    plan_doc_free(&d);
    /* without offload: no host copies, none in the program or the dry run */
    make_plan8(", \"zero\": 1", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_sizes_of(&d, &d.s[0], 1, &z, &err), UTIL_OK);
    ck_assert_double_eq(z.host_grad_bytes, 0.0);
    ck_assert_double_eq(z.host_weight_bytes, 0.0);
    launch_sizes_free(&z);
    n = launch_rank_program(&d, &d.s[0], 1, &ops, &err);
    for (i = 0; i < n; i++)
        ck_assert(ops[i].kind != LAUNCH_ROP_HOST_D2H && ops[i].kind != LAUNCH_ROP_HOST_H2D);
    free(ops);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    ck_assert_int_eq(launch_dry_run(&d, &w, &in, &text, &warn, &err), UTIL_OK);
    ck_assert_ptr_null(strstr(text, "offload"));
    ck_assert_ptr_null(strstr(text, "host memory"));
    free(text);
    launch_work_free(&w);
    plan_doc_free(&d);
    remove_plan8();
}
END_TEST

/* Composed mode of an offloaded plan: the optimizer step is the host
 * step of the cost model, not the GPU Adam the single GPU measured.  By
 * hand (docs/time-model.md, "Optimizer offload", plan settings
 * optimizer_bytes 32, memory_eff 0.7, no gradient-reduction overlap so
 * W = 0; H100: PCIe 5.0 50 GB/s, DGX H100 DRAM 614.4 GB/s): stage 0 (node
 * a) holds 52256 x 1024 + 1024 x 1024 + 12 x 12596224 = 205713408
 * parameters, a rank's shard / tp 2 / dp 2 = 51428352; the node's four
 * ranks step all 205713408: Adam 205713408 x 32 / (614.4e9 x 0.7) =
 * 0.0153060 s, gradients out and weights back 2 x 51428352 x 2 / 50e9 =
 * 0.0041143 s: 0.0194203 s.  Stage 1 (node b): 12 blocks + final norm
 * 2048 + head 53510144 = 204666880, shard 51166720: 0.0152280 +
 * 0.0040933 = 0.0193214 s. */
START_TEST(test_compose_offload)
{
    char p8[600];
    plan_doc d;
    launch_work w;
    launch_measure meas[2];
    launch_trial t, t2;
    util_error err;
    int j;

    make_plan8(", \"zero\": 1, \"offload\": \"optimizer\"", p8, sizeof p8);
    ck_assert_int_eq(plan_load_plan(p8, &d, &err), UTIL_OK);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(meas, 0, sizeof meas);
    meas[0].opt_s = meas[1].opt_s = -1.0;
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t, &err), UTIL_OK);
    ck_assert(d.params.optimizer_bytes == 32.0 && d.params.memory_eff == 0.7);
    ck_assert_double_eq_tol(t.opt_s[0], 205713408.0 * 32.0 / (614.4e9 * 0.7) +
                                            2.0 * 51428352.0 * 2.0 / 50e9, 1e-12);
    ck_assert_double_eq_tol(t.opt_s[0], 0.0194203, 1e-7);
    ck_assert_double_eq_tol(t.opt_s[1], 204666880.0 * 32.0 / (614.4e9 * 0.7) +
                                            2.0 * 51166720.0 * 2.0 / 50e9, 1e-12);
    for (j = 0; j < 2; j++) {
        meas[j].measured = 1;
        meas[j].fwd_s = t.pred_fwd_s[j];
        meas[j].bwd_s = t.pred_bwd_s[j];
        meas[j].opt_s = 1e-3;
    }
    /* a measured GPU Adam of 1 ms is not the offloaded step */
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), UTIL_OK);
    for (j = 0; j < 2; j++)
        ck_assert_double_eq(t2.opt_s[j], t.opt_s[j]);
    launch_trial_free(&t);
    launch_trial_free(&t2);
    launch_work_free(&w);
    plan_doc_free(&d);
    remove_plan8();
}
END_TEST

/* The host optimizer step of optimizer offload (launcher/hostadam.c). */
START_TEST(test_host_adam)
{
    static const struct {
        float f;
        unsigned half, bf16;
    } conv[] = {
        /* IEEE 754 binary16: 1 = 0x3c00, 0.5 = 0x3800, -2 = 0xc000; the
           largest half 65504 = 0x7bff; 65520 lies halfway to 65536, which
           is out of range: to even, infinity 0x7c00; 0.1 = 0x2e66 (the
           nearest half, 0.0999755859375); 2^-24 = 0x0001, the smallest
           subnormal; 1e-7 = 1.68 x 2^-24 rounds to 0x0002; 2^-25, a tie
           between 0 and 2^-24, to even 0; 1 + 2^-11, halfway between 1
           and 1 + 2^-10, to even 0x3c00; 1 + 3 x 2^-11 up to 0x3c02.
           bfloat16 (float's upper 16 bits, nearest even): 1 = 0x3f80,
           -2 = 0xc000, 0.5 = 0x3f00, 1 + 2^-8 a tie to 0x3f80, 1 + 3 x
           2^-8 to 0x3f82; 65504 = 1.9990234 x 2^15 rounds up to 2^16 =
           0x4780 */
        {1.0f, 0x3c00, 0x3f80},
        {0.5f, 0x3800, 0x3f00},
        {-2.0f, 0xc000, 0xc000},
        {65504.0f, 0x7bff, 0x4780},
        {65520.0f, 0x7c00, 0x4780},
        {0.1f, 0x2e66, 0x3dcd},
        {5.9604645e-8f, 0x0001, 0x3380},
        {1e-7f, 0x0002, 0x33d7},
        {2.9802322e-8f, 0x0000, 0x3300},
        {1.00048828125f, 0x3c00, 0x3f80},
        {1.00146484375f, 0x3c02, 0x3f80},
        {1.00390625f, 0x3c04, 0x3f80},
        {1.01171875f, 0x3c0c, 0x3f82},
    };
    launch_adam a;
    uint16_t g16[3], w16[3];
    float w[3], mo[3], v[3], g32[1] = {0.5f};
    float *wa, *ma, *va, *wb, *mb, *vb;
    uint16_t *ga, *oa, *ob;
    size_t i;
    int n = 1000;

    for (i = 0; i < sizeof conv / sizeof conv[0]; i++) {
        ck_assert_msg(launch_half_of(conv[i].f) == conv[i].half, "half of %.10g: %#x, "
                      "expected %#x", conv[i].f, launch_half_of(conv[i].f), conv[i].half);
        ck_assert_msg(launch_bf16_of(conv[i].f) == conv[i].bf16, "bf16 of %.10g: %#x, "
                      "expected %#x", conv[i].f, launch_bf16_of(conv[i].f), conv[i].bf16);
    }
    ck_assert(launch_half_of(1.0f / 0.0f) == 0x7c00);
    ck_assert(launch_half_value(0x3555) == 0.333251953125f); /* 1365 / 4096 */
    ck_assert(launch_half_value(0x0001) == 5.9604645e-8f);
    ck_assert(launch_half_value(0xc000) == -2.0f);
    ck_assert(isinf(launch_half_value(0x7c00)));
    ck_assert(launch_bf16_value(0x3f40) == 0.75f);
    /* Adam's first step (Kingma and Ba 2015, Algorithm 1, t = 1): m =
       (1 - b1) g, v = (1 - b2) g^2, bias-corrected g and g^2, so the
       update is lr g / (|g| + eps) = lr sign(g) for |g| >> eps.  lr 0.25,
       w = 1: g = 0.5 gives 0.75 (half 0x3a00), g = -0.5 1.25 (0x3d00),
       g = 0 leaves 1 (0x3c00) */
    launch_adam_init(&a);
    ck_assert(a.lr == 1e-4f && a.b1 == 0.9f && a.b2 == 0.999f && a.eps == 1e-8f);
    a.lr = 0.25f;
    g16[0] = 0x3800;
    g16[1] = 0xb800;
    g16[2] = 0x0000;
    for (i = 0; i < 3; i++) {
        w[i] = 1.0f;
        mo[i] = v[i] = 0.0f;
    }
    ck_assert_int_eq(launch_host_adam(&a, w, mo, v, g16, LAUNCH_ELEM_FP16, w16, 0, 3, 1), 0);
    ck_assert_float_eq_tol(w[0], 0.75f, 1e-6f);
    ck_assert_float_eq_tol(w[1], 1.25f, 1e-6f);
    ck_assert_float_eq(w[2], 1.0f);
    ck_assert_float_eq_tol(mo[0], 0.05f, 1e-7f); /* 0.1 x 0.5 */
    /* 0.001 x 0.25; in float 1 - 0.999f = 0.00099998713 */
    ck_assert_float_eq_tol(v[0], 0.00025f, 1e-8f);
    ck_assert(w16[0] == 0x3a00 && w16[1] == 0x3d00 && w16[2] == 0x3c00);
    /* fp32 gradients, bfloat16 weights: 0.75 = 0x3f40 */
    w[0] = 1.0f;
    mo[0] = v[0] = 0.0f;
    launch_host_adam(&a, w, mo, v, g32, LAUNCH_ELEM_FP32, w16, 1, 1, 4);
    ck_assert_float_eq_tol(w[0], 0.75f, 1e-6f);
    ck_assert(w16[0] == 0x3f40);
    /* bfloat16 gradients: -0.5 = 0xbf00 raises the weight to 1.25 = 0x3fa0 */
    w[0] = 1.0f;
    mo[0] = v[0] = 0.0f;
    g16[0] = 0xbf00;
    launch_host_adam(&a, w, mo, v, g16, LAUNCH_ELEM_BF16, w16, 1, 1, 1);
    ck_assert(w16[0] == 0x3fa0);
    /* 1000 parameters over 1 and 7 threads: every weight moves by lr
       against its gradient's sign, the same bits either way */
    wa = calloc((size_t)n, sizeof *wa);
    ma = calloc((size_t)n, sizeof *ma);
    va = calloc((size_t)n, sizeof *va);
    wb = calloc((size_t)n, sizeof *wb);
    mb = calloc((size_t)n, sizeof *mb);
    vb = calloc((size_t)n, sizeof *vb);
    ga = calloc((size_t)n, sizeof *ga);
    oa = calloc((size_t)n, sizeof *oa);
    ob = calloc((size_t)n, sizeof *ob);
    ck_assert(wa && ma && va && wb && mb && vb && ga && oa && ob);
    for (i = 0; i < (size_t)n; i++) {
        wa[i] = wb[i] = 1.0f;
        ga[i] = launch_half_of((i % 2 ? -1.0f : 1.0f) * (0.001f + (float)i / 100.0f));
    }
    launch_host_adam(&a, wa, ma, va, ga, LAUNCH_ELEM_FP16, oa, 0, n, 1);
    launch_host_adam(&a, wb, mb, vb, ga, LAUNCH_ELEM_FP16, ob, 0, n, 7);
    for (i = 0; i < (size_t)n; i++)
        ck_assert_float_eq_tol(wa[i], i % 2 ? 1.25f : 0.75f, 1e-5f);
    ck_assert(memcmp(wa, wb, (size_t)n * sizeof *wa) == 0);
    ck_assert(memcmp(oa, ob, (size_t)n * sizeof *oa) == 0);
    ck_assert(memcmp(ma, mb, (size_t)n * sizeof *ma) == 0);
    free(wa);
    free(ma);
    free(va);
    free(wb);
    free(mb);
    free(vb);
    free(ga);
    free(oa);
    free(ob);
    ck_assert_int_ge(launch_host_threads(1), 1);
    ck_assert_int_eq(launch_host_threads(1 << 30), 1);
}
END_TEST

#ifdef HETPLAN_LAUNCH_EXE
/* The built program: help, bad input, and no GPU (all GPUs hidden). */
START_TEST(test_launch_cli)
{
    char out[4096], cmd[1024];

    ck_assert_int_eq(tu_run_shell("'" HETPLAN_LAUNCH_EXE "' --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--mode M"));
    ck_assert_int_eq(tu_run_shell("'" HETPLAN_LAUNCH_EXE "' --plan /nonexistent.json", out,
                             sizeof out), 3);
    /* a plan that cannot be read is a bad input (3) on every path */
    ck_assert_int_eq(tu_run_shell("'" HETPLAN_LAUNCH_EXE "' --plan /nonexistent.json "
                                  "--dry-run", out, sizeof out), 3);
    ck_assert_int_eq(tu_run_shell("'" HETPLAN_LAUNCH_EXE "' --plan /nonexistent.json "
                                  "--spawn 2", out, sizeof out), 3);
    ck_assert_int_eq(tu_run_shell("WORLD_SIZE=2 RANK=0 '" HETPLAN_LAUNCH_EXE "' --plan "
                                  "/nonexistent.json", out, sizeof out), 3);
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --rank 1 --mode executed",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "CUDA_VISIBLE_DEVICES= '%s' --plan '%s' --output '%s/t.json'",
             HETPLAN_LAUNCH_EXE, plan_path, tmpdir);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 6);
    ck_assert_msg(strstr(out, "hetplan-launch: no CUDA GPU: ") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/t.json", tmpdir);
    ck_assert_int_ne(access(cmd, F_OK), 0); /* nothing half-written */
}
END_TEST

/* Multi-rank on a machine without GPUs: the dry run works; spawned ranks
 * meet over TCP, each finds no GPU, and all of them end, naming their
 * rank and the cause, well within the timeout. */
START_TEST(test_launch_cli_ranks)
{
    char out[16384], cmd[2048];
    time_t t0;

    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --dry-run", HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 0);
    /* pp 4, tp 1, dp 1: rank 3 is the last stage, layers 21-26 */
    ck_assert_msg(strstr(out, "rank 3: plan rank 3, stage 3, dp 0, tp 0; cluster device 3 "
                              "(H100-SXM, node 'h100'); layers 21-26") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "world: 4 processes"));
    /* as torchrun would start it: only its own rank */
    snprintf(cmd, sizeof cmd, "WORLD_SIZE=4 RANK=2 '%s' --plan '%s' --dry-run",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 0);
    ck_assert(strstr(out, "rank 2: plan rank 2") && !strstr(out, "rank 1: plan rank 1"));
    /* so does --rank R */
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --dry-run --rank 2", HETPLAN_LAUNCH_EXE,
             plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "rank 2: plan rank 2") && !strstr(out, "rank 1: plan rank 1") &&
                  !strstr(out, "rank 3: plan rank 3"), "%s", out);
    /* the dry run prints text only: --format json is refused, not ignored */
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --dry-run --format json",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "'--dry-run' and '--format json' exclude each other"));
    /* --spawn, --strategy and --rank that do not fit the plan (pp 4, one
     * strategy) are usage errors naming the option, with or without
     * --dry-run */
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --spawn 3", HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "option '--spawn' expects the 4 ranks of strategy 1") &&
                  strstr(out, "got 3\ntry 'hetplan-launch --help'"), "%s", out);
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --dry-run --spawn 3", HETPLAN_LAUNCH_EXE,
             plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "option '--spawn' expects the 4 ranks"));
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --dry-run --strategy 2", HETPLAN_LAUNCH_EXE,
             plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "option '--strategy' expects 1..1"));
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --rank 4", HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "option '--rank' expects 0..3"));
    snprintf(cmd, sizeof cmd, "WORLD_SIZE=4 RANK=1 MASTER_PORT=70000 '%s' --plan '%s'",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "'MASTER_PORT' expects an integer from 1 to 65535"));
    snprintf(cmd, sizeof cmd, "WORLD_SIZE=4 '%s' --plan '%s'", HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 2);
    ck_assert_ptr_nonnull(strstr(out, "'RANK' is not"));
    t0 = time(NULL);
    snprintf(cmd, sizeof cmd, "CUDA_VISIBLE_DEVICES= '%s' --plan '%s' --spawn 4 --timeout 20",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 6);
    ck_assert_msg(difftime(time(NULL), t0) < tu_timeout(15.0), "took %.0f s",
                  difftime(time(NULL), t0));
    ck_assert_msg(strstr(out, "hetplan-launch: rank 0: no CUDA GPU") != NULL, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "hetplan-launch: rank 3: "));
    ck_assert_ptr_nonnull(strstr(out, "failed first (exit code 6)"));
}
END_TEST
#endif

static Suite *launcher_suite(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("core");

    tcase_add_checked_fixture(tc, setup, teardown);
    /* forked ranks and spawned programs: seconds, not Check's default 4 */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_order_1f1b);
    tcase_add_test(tc, test_work_of_plan);
    tcase_add_test(tc, test_compose);
    tcase_add_test(tc, test_trial_json);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_choose_mode);
    tcase_add_test(tc, test_exec_plan);
    tcase_add_test(tc, test_exec_replay_matches_simulator);
    tcase_add_test(tc, test_exec_replay_plan);
    tcase_add_test(tc, test_exec_replay_deadlock);
    tcase_add_test(tc, test_exec_summarise_trial);
    tcase_add_test(tc, test_groups_megatron);
    tcase_add_test(tc, test_plan_rank);
    tcase_add_test(tc, test_passes_interleaved);
    tcase_add_test(tc, test_steps_simulated);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_sizes_offload);
    tcase_add_test(tc, test_host_adam);
    tcase_add_test(tc, test_compose_offload);
    tcase_add_test(tc, test_dry_run);
    tcase_add_test(tc, test_fp32_plan_refused);
    tcase_add_test(tc, test_bootstrap);
    tcase_add_test(tc, test_bootstrap_args);
    tcase_add_test(tc, test_env);
    tcase_add_test(tc, test_merge_ranks);
    tcase_add_test(tc, test_spawn);
    tcase_add_test(tc, test_programs_simulated);
#ifdef HETPLAN_LAUNCH_EXE
    tcase_add_test(tc, test_launch_cli);
    tcase_add_test(tc, test_launch_cli_ranks);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(launcher_suite());
}
