/* tests/test_whatif_idle.c: straggler what-if on strategies that leave
 * GPUs idle.
 *
 * The model and device are those of test_whatif_stragglers.c: generic
 * layers of 1e12 FLOPs per sample, all divided by tensor parallelism;
 * device X runs 1 TFLOP/s at compute_eff 0.5, so a layer's forward takes
 * 2 / tp s and its backward twice that: 6 / tp s per layer and
 * micro-batch.  One stage, no DP: iteration = gas * 2 layers * 6 / tp s.
 * The node has 4 GPUs; the strategies below use 1 or 2 of them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "whatif.h"
#include "tp_cli.h"

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

/* One stage of tp ranks on the given devices, mbs 1, 4 micro-batches. */
static void on_devices(fmt_strategy *s, int tp, const int *dev)
{
    tu_one_stage(s, &M, tp, dev);
}

static void run(const fmt_strategy *s, const whatif_slow *sl, whatif_result *w)
{
    ck_assert_int_eq(tu_whatif(&C, &M, s, sl, 1, w), UTIL_OK);
}

/* tp 1 on GPU 2 (0, 1 and 3 idle), rank 0 at half speed: 4 x 2 x 6 s =
 * 48 s, slowed 96 s; the straggler is device 2. */
START_TEST(one_gpu_of_four)
{
    static const int dev[1] = {2};
    whatif_slow sl[1] = {{0, 2.0}};
    fmt_strategy s;
    whatif_result w;

    load();
    on_devices(&s, 1, dev);
    run(&s, sl, &w);
    ck_assert_double_eq_tol(w.base_s, 48.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_NONE].iter_s, 96.0, 1e-6);
    ck_assert_int_eq(w.nstragglers, 1);
    ck_assert_int_eq(w.stragglers[0].device, 2);
    whatif_free(&w);
    fmt_strategy_free(&s);
    unload();
}
END_TEST

/* tp 2 on GPUs 3 and 1 (0 and 2 idle), rank 1 (device 1) at half speed:
 * base 4 x 2 x 3 s = 24 s; kept, the slow rank takes 6 s a layer: 48 s;
 * re-sharded 2/3 : 1/3 both take 4 s a layer: 32 s (the hand-worked
 * numbers of test_whatif_stragglers.c's one_straggler, same GPUs). */
START_TEST(two_gpus_of_four)
{
    static const int dev[2] = {3, 1};
    whatif_slow sl[1] = {{1, 2.0}};
    fmt_strategy s;
    whatif_result w;

    load();
    on_devices(&s, 2, dev);
    run(&s, sl, &w);
    ck_assert_double_eq_tol(w.base_s, 24.0, 1e-6);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_NONE].iter_s, 48.0, 1e-6);
    ck_assert(w.remedies[WHATIF_REMEDY_RESHARD].applicable);
    ck_assert_double_eq_tol(w.remedies[WHATIF_REMEDY_RESHARD].iter_s, 32.0, 1e-6);
    ck_assert_int_eq(w.stragglers[0].device, 1);
    whatif_free(&w);
    fmt_strategy_free(&s);
    unload();
}
END_TEST

/* The command line on a plan of 2 ranks on a 4-GPU node: rank 1 may be
 * slowed, rank 2 (an idle GPU has no rank) is refused with the range. */
START_TEST(cli_on_idle_plan)
{
    const char *ok[] = {"whatif", "--plan", "plan.json", "--slow", "1:2",
                        "--format", "json", NULL};
    const char *bad[] = {"whatif", "--plan", "plan.json", "--slow", "2:2", NULL};
    tp_run_out r;

    tp_evaluate(tu_flat_cluster_json, tu_flat_model_json,
                "{\"strategies\":[{\"tp\":2,\"dp\":1,\"pp\":1,\"mbs\":1,"
                "\"stage_boundaries\":[0,2],\"ranks\":[3,1]}]}");
    tp_run(&r, ok);
    ck_assert_msg(r.status == 0, "whatif: exit %d: %s", r.status, r.err);
    /* rank 1 runs on device 1 (ranks [3, 1]); base 24 s, kept 48 s */
    ck_assert_msg(strstr(r.out, "\"device\":\t1,") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "\"base_s\":\t24,") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "\"slowed_s\":\t48,") != NULL, "%s", r.out);
    tp_run_free(&r);
    tp_run(&r, bad);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "rank 2 is not in the plan: expected 0..1") != NULL,
                  "%s", r.err);
    tp_run_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("whatif_idle");
    TCase *tc = tcase_create("idle");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, one_gpu_of_four);
    tcase_add_test(tc, two_gpus_of_four);
    tcase_add_test(tc, cli_on_idle_plan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
