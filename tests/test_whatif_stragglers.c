/* tests/test_whatif_stragglers.c: straggler what-if on models whose times are worked
 * out by hand, and the `planner whatif` command line.
 *
 * The model: generic layers of 1e12 FLOPs per sample, all divided by
 * tensor parallelism, nothing else (no parameters, traffic, kernels or
 * all-reduces).  Device X: 1 TFLOP/s at compute_eff 0.5, so a layer's
 * forward takes 2 / tp s, its backward twice that: 6 / tp s per layer
 * and micro-batch.  One stage, no DP: iteration = gas * stage time. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "whatif.h"
#include "tp_cli.h"

/* the model of tu_flat_model_json: two layers, 24 heads, ffn 768 (12
 * granules of 64); the node of tu_flat_cluster_json: 4 devices X */
static fmt_cluster C;
static fmt_model M;

static void load(void)
{
    tu_parse_inputs(tu_flat_cluster_json, tu_flat_model_json, &C, &M);
}

static void unload(void)
{
    fmt_model_free(&M);
    fmt_cluster_free(&C);
}

/* tp ranks on devices 0.., one stage, mbs 1, 4 micro-batches */
static void tp_only(fmt_strategy *s, int tp)
{
    tu_one_stage(s, &M, tp, NULL);
}

static int run_whatif(const fmt_strategy *s, const whatif_slow *sl, int n,
                      whatif_result *w)
{
    return tu_whatif(&C, &M, s, sl, n, w);
}

/* tp = 2, rank 1 at half speed.  Even: 6 s vs 3 s per layer -> 12 s a
 * micro-batch, 48 s (base 24 s).  Re-sharded 16/8 heads and 512/256
 * columns (shares 2/3 and 1/3): both ranks 4 s a layer -> 32 s.  Eq. 1:
 * T_avg = (6 + 12) / 2 = 9, M_1 = 12 (all GEMM), gamma = 0.25 -> 36 s.
 * Eq. 3 with one straggler: Gamma = 0.5 * 6 / 12 = 0.25, the receiver
 * gets 0.25 * 6 / 0.5 = 3 s: f = 6 - 3 > 0, migrate; 6 + 3 = 9 -> 36 s. */
START_TEST(one_straggler)
{
    fmt_strategy s;
    whatif_result w;
    whatif_slow sl[1] = {{1, 2.0}};

    load();
    tp_only(&s, 2);
    ck_assert_int_eq(run_whatif(&s, sl, 1, &w), UTIL_OK);
    ck_assert_double_eq_tol(w.base_s, 24.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_NONE].iter_s, 48.0, 1e-6);
    ck_assert_int_eq(w.remedies[WHATIF_REMEDY_RESHARD].applicable, 1);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_RESHARD].iter_s, 32.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_RESIZE].iter_s, 36.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_RESIZE].max_gamma, 0.25, 1e-9);
    ck_assert_double_eq_tol(w.stragglers[0].gamma, 0.25, 1e-9);
    ck_assert_double_eq_tol(w.stragglers[0].t_s, 12.0, 1e-9);
    ck_assert_double_eq_tol(w.stragglers[0].t_avg_s, 9.0, 1e-9);
    ck_assert_int_eq(w.stragglers[0].migrate, 1);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_SEMI].iter_s, 36.0, 1e-3);
    ck_assert_int_eq(w.recommended, WHATIF_REMEDY_RESHARD);
    ck_assert_int_eq(w.best.tp_heads[0], 16);
    ck_assert_int_eq(w.best.tp_heads[1], 8);
    ck_assert_int_eq(w.best.tp_cols[0], 512);
    ck_assert_int_eq(w.best.tp_cols[1], 256);
    ck_assert_ptr_nonnull(strstr(w.reason, "no accuracy change"));
    /* no pipeline to re-balance: replan equals reshard */
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_REPLAN].iter_s, 32.0, 1e-6);
    whatif_free(&w);
    fmt_strategy_free(&s);
    unload();
}
END_TEST

/* tp = 4, ranks 1, 2 at half speed and rank 3 at 1/1.5: 6, 6, 4.5 s
 * against 3 s a micro-batch.  Eq. 1: T_avg = 4.875 for all three
 * -> 19.5 s.  Eq. 3 (shares 1/4, T/L = 24, 24, 18, 12): first straggler:
 * Gamma = 1/8, f = 3 - (1/8)/3 * 24 = 2; second: Gamma = 1/4,
 * f = 3 - (1/4)/2 * 18 = 0.75; third: Gamma = 1/3, f = 1.5 - (1/3) * 12
 * < 0: two migrate.  The other two get (1/4)/2 = 1/8 share each: rank 0
 * 3 + 1.5 = 4.5 s; rank 3 4.5 + 2.25 = 6.75 s, resized to T_min = 3 s
 * (gamma 5/9): the group takes 4.5 s -> 18 s. */
START_TEST(several_stragglers)
{
    fmt_strategy s;
    whatif_result w;
    whatif_slow sl[3] = {{1, 2.0}, {2, 2.0}, {3, 1.5}};
    int mig = 0, i;

    load();
    tp_only(&s, 4);
    ck_assert_int_eq(run_whatif(&s, sl, 3, &w), UTIL_OK);
    ck_assert_double_eq_tol(w.base_s, 12.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_NONE].iter_s, 24.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_RESIZE].iter_s, 19.5, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_SEMI].iter_s, 18.0, 1e-3);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_SEMI].max_gamma, 5.0 / 9.0, 1e-9);
    ck_assert_int_eq(w.remedies[WHATIF_REMEDY_SEMI].lossless, 0);
    for (i = 0; i < 3; i++)
        mig += w.stragglers[i].migrate;
    ck_assert_int_eq(mig, 2);
    ck_assert_int_eq(w.stragglers[2].migrate, 0);
    /* the lossless re-split comes within whole heads and 64-column
     * granules of the ideal 4 * 12 / (1 + 1/2 + 1/2 + 2/3) = 18 s; the
     * partly lossy hybrid is no faster, so the re-split is recommended */
    ck_assert(w.remedies[WHATIF_REMEDY_RESHARD].iter_s >= 18.0 - 1e-9);
    ck_assert(w.remedies[WHATIF_REMEDY_RESHARD].iter_s < 18.2);
    ck_assert_int_eq(w.recommended, WHATIF_REMEDY_RESHARD);
    whatif_free(&w);
    fmt_strategy_free(&s);
    unload();
}
END_TEST

/* tp = 1: the shard remedies do not apply; a 4-stage pipeline with a
 * slow stage re-balances its layers instead */
START_TEST(pipeline_straggler)
{
    fmt_strategy s;
    whatif_result w;
    whatif_slow sl[1] = {{0, 3.0}};

    load();
    tu_strategy(&s, 1, 1, 2, (const int[]){0, 1, 2}, 4);
    ck_assert_int_eq(run_whatif(&s, sl, 1, &w), UTIL_OK);
    ck_assert_int_eq(w.remedies[WHATIF_REMEDY_RESHARD].applicable, 0);
    ck_assert_int_eq(w.remedies[WHATIF_REMEDY_RESIZE].applicable, 0);
    ck_assert_ptr_nonnull(strstr(w.remedies[WHATIF_REMEDY_RESHARD].note, "tp = 1"));
    /* two layers, two stages: nothing to move, the plan stays */
    ck_assert_int_eq(w.recommended, WHATIF_REMEDY_NONE);
    /* 6 s and 18 s stages: (4 - 1) * 18 + 24 = 78 s */
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_NONE].iter_s, 78.0, 1e-3);
    whatif_free(&w);
    fmt_strategy_free(&s);
    unload();
}
END_TEST

START_TEST(bad_stragglers)
{
    fmt_strategy s;
    whatif_result w;
    whatif_params wp;
    cost_params p;
    util_error err;
    whatif_slow out_of_range[1] = {{7, 2.0}}, twice[2] = {{1, 2.0}, {1, 3.0}};
    whatif_slow faster[1] = {{0, 0.5}};

    load();
    tp_only(&s, 2);
    cost_params_init(&p);
    whatif_params_init(&wp);
    memset(&err, 0, sizeof err);
    wp.slow = out_of_range;
    wp.nslow = 1;
    ck_assert_int_eq(whatif_run(&C, &M, NULL, &p, &s, &wp, &w, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "rank 7 is not in the plan"));
    wp.slow = twice;
    wp.nslow = 2;
    ck_assert_int_eq(whatif_run(&C, &M, NULL, &p, &s, &wp, &w, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "given twice"));
    wp.slow = faster;
    wp.nslow = 1;
    ck_assert_int_eq(whatif_run(&C, &M, NULL, &p, &s, &wp, &w, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, ">= 1"));
    fmt_strategy_free(&s);
    unload();
}
END_TEST

/* ---- command line ---------------------------------------------------- */

static void make_plan(void)
{
    tp_evaluate(tu_flat_cluster_json, tu_flat_model_json,
                "{\"strategies\":[{\"tp\":2,\"dp\":2,\"pp\":1,\"mbs\":1,"
                "\"stage_boundaries\":[0,2]}]}");
}

/* The plan: tp 2, dp 2, one stage, global batch 4 -> 2 micro-batches of
 * 1 per replica; a micro-batch takes 2 layers x 6 / 2 s = 6 s: base
 * 2 x 6 = 12 s.  Ranks 1, 2 and 3 at half speed: each TP group waits for
 * its slow rank, 12 s a micro-batch, 24 s an iteration. */
START_TEST(cli_whatif)
{
    tp_run_out r;
    char *json, *printed;
    size_t n;
    const char *table[] = {"whatif", "--plan", "plan.json", "--slow", "1:2", NULL};
    const char *js[] = {"whatif", "--plan", "plan.json", "--slow", "1:2", "--slow",
                        "2:2", "--slow", "3:2", "--format", "json", "--output",
                        "w.json", NULL};

    tp_setup();
    make_plan();
    tp_run(&r, table);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "recommended: re-split shards (reshard)"));
    ck_assert_ptr_nonnull(strstr(r.out, "resize"));
    /* plain words: no paper equation numbers or variable names */
    ck_assert_ptr_null(strstr(r.out, "eq. "));
    ck_assert_ptr_null(strstr(r.out, "gamma"));
    tp_run_free(&r);
    tp_run(&r, js);
    ck_assert_msg(r.status == 0, "%s", r.err);
    json = tp_read("w.json");
    ck_assert_ptr_nonnull(json);
    /* stdout carries the same document as the file, and a newline */
    n = strlen(json);
    printed = malloc(n + 2);
    ck_assert_ptr_nonnull(printed);
    memcpy(printed, json, n);
    memcpy(printed + n, "\n", 2);
    ck_assert_str_eq(r.out, printed);
    free(printed);
    ck_assert_ptr_nonnull(strstr(json, "\"base_s\":\t12,"));
    ck_assert_ptr_nonnull(strstr(json, "\"slowed_s\":\t24,"));
    ck_assert_ptr_nonnull(strstr(json, "\"schema\":\t\"hetplan-whatif/1\""));
    ck_assert_ptr_nonnull(strstr(json, "\"recommendation\":"));
    ck_assert_ptr_nonnull(strstr(json, "\"name\":\t\"semi\""));
    free(json);
    tp_run_free(&r);
    tp_teardown();
}
END_TEST

START_TEST(cli_whatif_errors)
{
    const char *no_slow[] = {"whatif", "--plan", "plan.json", NULL};
    const char *bad_slow[] = {"whatif", "--plan", "plan.json", "--slow", "1x2", NULL};
    const char *bad_factor[] = {"whatif", "--plan", "plan.json", "--slow", "1:0.5", NULL};
    /* too large: the message gives the whole range, not only its floor */
    const char *huge_factor[] = {"whatif", "--plan", "plan.json", "--slow", "1:1e308",
                                 NULL};
    const char *bad_rank[] = {"whatif", "--plan", "plan.json", "--slow", "9:2", NULL};
    const char *missing[] = {"whatif", "--plan", "nope.json", "--slow", "1:2", NULL};
    const char *unknown[] = {"whatif", "--plan", "plan.json", "--fast", "1", NULL};
    const char *bad_out[] = {"whatif", "--plan", "plan.json", "--slow", "1:2",
                             "--output", "no/such/dir/w.json", NULL};
    const char *help[] = {"whatif", "--help", NULL};

    tp_setup();
    make_plan();
    tp_expect(no_slow, 2, "--slow RANK:FACTOR", NULL);
    tp_expect(bad_slow, 2, "expects RANK:FACTOR, got '1x2'", NULL);
    tp_expect(bad_factor, 2, "'--slow' expects a number from 1 to 1e15, got '0.5'", NULL);
    tp_expect(huge_factor, 2, "'--slow' expects a number from 1 to 1e15, got '1e308'",
              NULL);
    tp_expect(bad_rank, 2, "rank 9 is not in the plan: expected 0..3", NULL);
    tp_expect(missing, 3, "nope.json", NULL);
    tp_expect(unknown, 2, "unknown option '--fast'", NULL);
    tp_expect(bad_out, 5, NULL, NULL);
    tp_expect(help, 0, NULL, "usage: planner whatif");
    tp_teardown();
}
END_TEST

int main(void)
{
    const TTest *const lib[] = {one_straggler, several_stragglers,
                                pipeline_straggler, bad_stragglers};
    const TTest *const cli[] = {cli_whatif, cli_whatif_errors};
    const tu_case cases[] = {{"library", lib, TU_N(lib), 0, NULL, NULL},
                             {"cli", cli, TU_N(cli), 120, NULL, NULL}};

    return tu_run(tu_suite_of("whatif", cases, TU_N(cases)));
}
