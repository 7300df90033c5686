/* tests/test_tools_launcher.c: the GPU-free parts of hetplan-launch: the
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
#include <sys/wait.h>
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
    util_error err;
    int rc = plan_load_plan(plan_path, d, &err);

    ck_assert_msg(rc == UTIL_OK, "%s: %s: %s", err.file, err.path, err.msg);
    ck_assert_int_eq(d->n, 1);
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

#ifdef HETPLAN_LAUNCH_EXE
static int run_cmd(const char *cmd, char *out, size_t cap)
{
    char full[2048], path[] = "/tmp/hetplan-launch-cli-XXXXXX";
    FILE *f;
    size_t n;
    int fd = mkstemp(path), rc;

    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(full, sizeof full, "%s >'%s' 2>&1", cmd, path);
    rc = system(full);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The built program: help, bad input, and no GPU (all GPUs hidden). */
START_TEST(test_launch_cli)
{
    char out[4096], cmd[1024];

    ck_assert_int_eq(run_cmd("'" HETPLAN_LAUNCH_EXE "' --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--mode M"));
    ck_assert_int_eq(run_cmd("'" HETPLAN_LAUNCH_EXE "' --plan /nonexistent.json", out,
                             sizeof out), 3);
    snprintf(cmd, sizeof cmd, "'%s' --plan '%s' --rank 1 --mode executed",
             HETPLAN_LAUNCH_EXE, plan_path);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "CUDA_VISIBLE_DEVICES= '%s' --plan '%s' --output '%s/t.json'",
             HETPLAN_LAUNCH_EXE, plan_path, tmpdir);
    ck_assert_int_eq(run_cmd(cmd, out, sizeof out), 6);
    ck_assert_msg(strstr(out, "hetplan-launch: no CUDA GPU: ") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s/t.json", tmpdir);
    ck_assert_int_ne(access(cmd, F_OK), 0); /* nothing half-written */
}
END_TEST
#endif

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
    tcase_add_test(tc, test_choose_mode);
    tcase_add_test(tc, test_exec_plan);
    tcase_add_test(tc, test_exec_replay_matches_simulator);
    tcase_add_test(tc, test_exec_replay_plan);
    tcase_add_test(tc, test_exec_replay_deadlock);
    tcase_add_test(tc, test_exec_summarise_trial);
#ifdef HETPLAN_LAUNCH_EXE
    tcase_add_test(tc, test_launch_cli);
#endif
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
