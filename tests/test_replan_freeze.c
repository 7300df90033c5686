/* tests/test_replan_freeze.c: elastic re-planning as layers freeze, on a model
 * worked out by hand, freeze schedules, and `planner replan`.
 *
 * 8 equal layers of 1e9 parameters and 5e11 FLOPs per sample on 8 GPUs of
 * 1 TFLOP/s (compute_eff 0.5): a layer's forward takes u = 1 s per
 * sample, its backward 2 s.  Frozen layers run forward only: 1 s against
 * 3 s.  Memory (fp16 + Adam): 20 bytes per trained parameter, 2 per
 * frozen one; 66 GiB devices hold three trained layers but not four.
 *
 * The first plan: tp 1, dp 2, pp 4, two layers a stage, 16 samples, 8
 * micro-batches of 1.  With the first 4 layers frozen:
 *   4 stages: the best split still has a 6 s stage -> 7 * 6 + 16 = 58 s;
 *   2 stages, dp 4 (4 micro-batches): [0, 5) = 7 s, [5, 8) = 9 s ->
 *     3 * 9 + 16 = 43 s; stage 1 holds 60 GB, stage 0 28 GB;
 *   1 stage: 88 GB, does not fit.
 * So the pipeline compresses to 2 stages with twice the replicas. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "replan.h"
#include "tp_cli.h"

static const char cluster_json[] =
    "{\"name\":\"x8\",\"device_types\":{\"X\":{\"memory_gib\":66,\"tflops_fp16\":1,"
    "\"mem_bw_gbs\":1000}},\"nodes\":[{\"name\":\"n\",\"device\":\"X\",\"gpus\":8,"
    "\"intra_gbps\":8000,\"nic_gbps\":100}]}";

static const char model_json[] =
    "{\"name\":\"eight\",\"training\":{\"global_batch\":16},"
    "\"layers\":[{\"name\":\"l\",\"kind\":\"generic\",\"repeat\":8,\"params\":1e9,"
    "\"fwd_flops\":5e11,\"out_bytes\":1e6,\"act_bytes\":1e6,\"tp_flops_frac\":1,"
    "\"traffic_bytes\":0,\"traffic_rep_bytes\":0,\"act_rep_bytes\":0,"
    "\"tp_comm_bytes\":0,\"tp_collectives\":0,\"kernels\":0}]}";

static const char strategies_json[] =
    "{\"strategies\":[{\"tp\":1,\"dp\":2,\"pp\":4,\"mbs\":1,"
    "\"stage_boundaries\":[0,2,4,6,8]}]}";

static fmt_cluster C;
static fmt_model M;
static fmt_strategy S;

static void load(void)
{
    util_error err;
    fmt_strategy *list = NULL;
    int n = 0;

    memset(&err, 0, sizeof err);
    tu_parse_inputs(cluster_json, model_json, &C, &M);
    ck_assert_msg(fmt_parse_strategies(strategies_json, "s.json", &C, &M, 16, &list,
                                        &n, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(n, 1);
    S = list[0];
    free(list);
}

static void unload(void)
{
    fmt_strategy_free(&S);
    fmt_model_free(&M);
    fmt_cluster_free(&C);
}

static int run(const replan_freeze *f, replan_result *r)
{
    replan_params rp;
    cost_params p;
    util_error err;

    memset(&err, 0, sizeof err);
    cost_params_init(&p);
    replan_params_init(&rp);
    rp.global_batch = 16;
    return replan_run(&C, &M, NULL, &p, &S, f, &rp, r, &err);
}

START_TEST(freeze_four_compresses)
{
    replan_freeze_phase ph = {0, 4};
    replan_freeze f = {&ph, 1, 1};
    replan_result r;
    const replan_phase *x;

    load();
    ck_assert_int_eq(run(&f, &r), UTIL_OK);
    x = &r.phases[0];
    ck_assert_int_eq(x->s.pp, 2);
    ck_assert_int_eq(x->s.dp, 4);
    ck_assert_int_eq(x->s.tp, 1);
    ck_assert_int_eq(x->s.mbs, 1);
    ck_assert_int_eq(x->s.gas, 4);
    ck_assert_int_eq(x->s.bounds[1], 5);
    ck_assert_int_eq(x->compressed, 1);
    ck_assert(x->s.gas >= x->mb_lo && x->s.gas <= x->mb_hi);
    /* the hand-worked compute; optimizer and all-reduces add well under
     * half a second */
    ck_assert(x->keep_s >= 58.0 && x->keep_s < 58.5);
    ck_assert(x->rebalance_s >= 58.0 && x->rebalance_s < 58.5);
    ck_assert(x->best_s >= 43.0 && x->best_s < 43.5);
    ck_assert_double_eq_tol(r.speedup, x->keep_s / x->best_s, 1e-12);
    ck_assert(r.phases[0].r.fits);
    /* without compression: 4 stages stay, nothing better than 58 s */
    replan_free(&r);
    {
        replan_params rp;
        cost_params p;
        cost_params_init(&p);
        replan_params_init(&rp);
        rp.global_batch = 16;
        rp.compress = 0;
        ck_assert_int_eq(replan_run(&C, &M, NULL, &p, &S, &f, &rp, &r, NULL),
                         UTIL_OK);
        ck_assert_int_eq(r.phases[0].s.pp, 4);
        ck_assert(r.phases[0].best_s >= 58.0);
        replan_free(&r);
    }
    unload();
}
END_TEST

/* epochs 0-1 nothing frozen (the first plan stays), epochs 2-3 four
 * layers frozen: speed-up (2 first + 2 keep) / (2 first + 2 best) */
START_TEST(schedule_phases)
{
    replan_freeze f;
    replan_result r;
    util_error err;
    double want;

    load();
    memset(&err, 0, sizeof err);
    ck_assert_msg(replan_parse_freeze("{\"total_epochs\":4,\"epochs\":[{\"epoch\":0,"
                                    "\"frozen\":0},{\"epoch\":2,\"frozen\":4}]}",
                                    "f.json", M.nlayers, &f, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_int_eq(f.n, 2);
    ck_assert_int_eq(f.total_epochs, 4);
    ck_assert_int_eq(run(&f, &r), UTIL_OK);
    ck_assert_int_eq(r.n, 2);
    ck_assert_int_eq(r.phases[0].s.pp, 4);
    ck_assert_double_eq_tol(r.phases[0].best_s, r.first_s, 1e-12);
    ck_assert_int_eq(r.phases[0].epochs, 2);
    ck_assert_int_eq(r.phases[1].s.pp, 2);
    ck_assert_int_eq(r.phases[1].epochs, 2);
    want = (2 * r.first_s + 2 * r.phases[1].keep_s) /
           (2 * r.first_s + 2 * r.phases[1].best_s);
    ck_assert_double_eq_tol(r.speedup, want, 1e-12);
    ck_assert(r.speedup > 1.1);
    replan_free(&r);
    replan_freeze_free(&f);
    unload();
}
END_TEST

static void bad_freeze(const char *text, const char *path, const char *what)
{
    replan_freeze f;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_int_ne(replan_parse_freeze(text, "f.json", 8, &f, &err), UTIL_OK);
    ck_assert_str_eq(err.file, "f.json");
    ck_assert_str_eq(err.path, path);
    ck_assert_msg(strstr(err.msg, what) != NULL, "'%s' not in '%s'", what, err.msg);
    ck_assert_ptr_null(f.phases);
}

START_TEST(freeze_errors)
{
    bad_freeze("{\"epochs\":[}", "", "malformed JSON");
    /* read like every input file: the same messages for an empty file or
     * an array, and no key given twice */
    bad_freeze("[]", "", "expected a JSON object");
    bad_freeze("", "", "malformed JSON: expected a JSON object, got an empty document");
    bad_freeze("{\"epochs\":[{\"epoch\":0,\"frozen\":0,\"frozen\":2}]}",
               "epochs[0].frozen", "duplicate key 'frozen'");
    bad_freeze("{\"epochs\":[]}", "epochs", "non-empty array");
    bad_freeze("{\"epochs\":[{\"epoch\":1,\"frozen\":0}]}", "epochs[0].epoch",
               "must start at epoch 0");
    bad_freeze("{\"epochs\":[{\"epoch\":0,\"frozen\":0},{\"epoch\":0,\"frozen\":2}]}",
               "epochs[1].epoch", "increasing order");
    bad_freeze("{\"epochs\":[{\"epoch\":0,\"frozen\":4},{\"epoch\":2,\"frozen\":2}]}",
               "epochs[1].frozen", "progressive");
    bad_freeze("{\"epochs\":[{\"epoch\":0,\"frozen\":8}]}", "epochs[0].frozen",
               "0..7");
    bad_freeze("{\"epochs\":[{\"epoch\":0,\"frozen\":\"4\"}]}", "epochs[0].frozen",
               "got a string");
    bad_freeze("{\"total_epochs\":2,\"epochs\":[{\"epoch\":0,\"frozen\":0},"
               "{\"epoch\":2,\"frozen\":4}]}", "total_epochs", "above the last");
}
END_TEST

/* ---- command line ---------------------------------------------------- */

static void make_plan(void)
{
    tp_evaluate(cluster_json, model_json, strategies_json);
}

START_TEST(cli_replan)
{
    tp_run_out r;
    char *json;
    const char *frozen[] = {"replan", "--plan", "plan.json", "--frozen", "4", NULL};
    const char *sched[] = {"replan", "--plan", "plan.json", "--schedule", "f.json",
                           "--format", "json", "--output", "r.json", NULL};

    tp_setup();
    make_plan();
    tp_run(&r, frozen);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "(compressed)"));
    /* layers as inclusive ranges, like every table: the two stages of the
     * compressed split [0, 5) and [5, 8) of the file comment */
    ck_assert_ptr_nonnull(strstr(r.out, " 0-4 5-7 (compressed)"));
    ck_assert_ptr_nonnull(strstr(r.out, "speed-up over keeping the first plan"));
    tp_run_free(&r);
    tp_write("f.json", "{\"total_epochs\":10,\"epochs\":[{\"epoch\":0,\"frozen\":0},"
                       "{\"epoch\":3,\"frozen\":2},{\"epoch\":6,\"frozen\":4}]}");
    tp_run(&r, sched);
    ck_assert_msg(r.status == 0, "%s", r.err);
    json = tp_read("r.json");
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"schema\":\t\"hetplan-replan/1\""));
    ck_assert_ptr_nonnull(strstr(json, "\"speedup_over_keeping\""));
    ck_assert_ptr_nonnull(strstr(r.out, "\"phases\""));
    free(json);
    tp_run_free(&r);
    tp_teardown();
}
END_TEST

START_TEST(cli_replan_errors)
{
    const char *neither[] = {"replan", "--plan", "plan.json", NULL};
    const char *both[] = {"replan", "--plan", "plan.json", "--frozen", "2",
                          "--schedule", "f.json", NULL};
    const char *too_many[] = {"replan", "--plan", "plan.json", "--frozen", "8", NULL};
    const char *bad_sched[] = {"replan", "--plan", "plan.json", "--schedule", "f.json",
                               NULL};
    const char *no_sched[] = {"replan", "--plan", "plan.json", "--schedule", "g.json",
                              NULL};
    const char *strict_sched[] = {"replan", "--plan", "plan.json", "--schedule", "g.json",
                                  "--strict", NULL};
    const char *neg[] = {"replan", "--plan", "plan.json", "--frozen", "-1", NULL};
    const char *help[] = {"replan", "--help", NULL};

    tp_setup();
    make_plan();
    tp_expect(neither, 2, "exactly one of", NULL);
    tp_expect(both, 2, NULL, NULL);
    tp_expect(too_many, 2, "has 8 layers: expected 0..7", NULL);
    tp_write("f.json", "{\"epochs\":[{\"epoch\":0,\"frozen\":3},{\"epoch\":1,\"frozen\":1}]}");
    tp_expect(bad_sched, 3, "'f.json': epochs[1].frozen:", NULL);
    tp_expect(no_sched, 3, "g.json", NULL);
    /* a misspelt key is named with its correction; --strict refuses it */
    tp_write("g.json", "{\"epochs\":[{\"epoch\":0,\"frozen\":0},{\"epoch\":1,"
                       "\"frozen\":1,\"frozn\":2}]}");
    tp_expect(no_sched, 0, "'g.json': epochs[1].frozn: unknown key 'frozn', did you "
                           "mean 'frozen'?", NULL);
    tp_expect(strict_sched, 3, "'g.json': epochs[1].frozn: unknown key 'frozn'", NULL);
    tp_expect(neg, 2, NULL, NULL);
    tp_expect(help, 0, NULL, "usage: planner replan");
    tp_teardown();
}
END_TEST

int main(void)
{
    const TTest *const lib[] = {freeze_four_compresses, schedule_phases,
                                freeze_errors};
    const TTest *const cli[] = {cli_replan, cli_replan_errors};
    const tu_case cases[] = {{"library", lib, TU_N(lib), 120, NULL, NULL},
                             {"cli", cli, TU_N(cli), 120, NULL, NULL}};

    return tu_run(tu_suite_of("replan", cases, TU_N(cases)));
}
