/* tests/test_plan_overlap.c: the overlap flags through the planner
 * binary: a strategies file's flags recorded in the plan and read back
 * by the exporters, Megatron-LM's flags present or absent, the
 * refusals (exit 6) of what a target cannot run, DeepSpeed's
 * overlap_comm, and the search's choice on NVLink and PCIe nodes. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_cli.h"

/* One node of 4 H100 on NVSwitch (3600 Gbit/s), and the same on PCIe
 * 4.0 (256 Gbit/s). */
static const char nvlink_json[] =
    "{\"name\": \"nv\", \"nodes\": [{\"name\": \"h\", \"device\": \"H100-SXM\","
    " \"gpus\": 4, \"intra_gbps\": 3600, \"nic_gbps\": 400}]}";
static const char pcie_json[] =
    "{\"name\": \"pcie\", \"nodes\": [{\"name\": \"h\", \"device\": \"H100-SXM\","
    " \"gpus\": 4, \"intra_gbps\": 256, \"nic_gbps\": 400}]}";

static const char strategies_json[] =
    "{\"strategies\": ["
    /* 1: every overlap Megatron-LM core_v0.19.0 runs */
    "{\"tp\": 2, \"dp\": 2, \"pp\": 1, \"mbs\": 1, \"sequence_parallel\": true,"
    " \"zero\": 1, \"overlap_grad\": true, \"overlap_param\": true,"
    " \"overlap_tp\": true, \"stage_boundaries\": [0, 7]},"
    /* 2: none stated */
    "{\"tp\": 1, \"dp\": 4, \"pp\": 1, \"mbs\": 1, \"zero\": 1,"
    " \"stage_boundaries\": [0, 7]},"
    /* 3: the weights' gather, which DeepSpeed does not overlap */
    "{\"tp\": 1, \"dp\": 4, \"pp\": 1, \"mbs\": 1, \"zero\": 1,"
    " \"overlap_grad\": true, \"overlap_param\": true,"
    " \"stage_boundaries\": [0, 7]},"
    /* 4: the gradients only: DeepSpeed's overlap_comm */
    "{\"tp\": 1, \"dp\": 4, \"pp\": 1, \"mbs\": 1, \"zero\": 1,"
    " \"overlap_grad\": true, \"stage_boundaries\": [0, 7]}]}";

/* Strategy i (0-based) of the plan file name, parsed (caller deletes
 * the document in *doc). */
static const cJSON *plan_strategy(const char *name, int i, cJSON **doc)
{
    char *text = tp_read(name);
    const cJSON *s;

    ck_assert_ptr_nonnull(text);
    *doc = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(*doc);
    s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(*doc, "strategies"), i);
    ck_assert_ptr_nonnull(s);
    return s;
}

static int flag(const cJSON *s, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);

    ck_assert_msg(cJSON_IsBool(v), "'%s' is not a boolean", key);
    return cJSON_IsTrue(v) ? 1 : 0;
}

/* Export strategy k of plan.json to target (with --target-version v
 * unless NULL) into dir out; the exit status. */
static int export_to(int k, const char *target, const char *v, const char *out)
{
    char ks[16];
    const char *args[] = {"export", "--plan", "plan.json", "--strategy", ks,
                          "--to", target, "--output", out,
                          v != NULL ? "--target-version" : NULL, v, NULL};
    tp_run_out r;
    int st;

    snprintf(ks, sizeof ks, "%d", k);
    tp_run(&r, args);
    st = r.status;
    tp_run_free(&r);
    return st;
}

START_TEST(test_flags_recorded)
{
    cJSON *doc;
    const cJSON *s;

    tp_evaluate(nvlink_json, tu_gpt2_small4_json, strategies_json);
    s = plan_strategy("plan.json", 0, &doc);
    ck_assert_int_eq(flag(s, "overlap_grad"), 1);
    ck_assert_int_eq(flag(s, "overlap_param"), 1);
    ck_assert_int_eq(flag(s, "overlap_tp"), 1);
    s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), 1);
    /* unstated: the cost parameters' defaults (no gradient overlap) */
    ck_assert_int_eq(flag(s, "overlap_grad"), 0);
    ck_assert_int_eq(flag(s, "overlap_param"), 0);
    ck_assert_int_eq(flag(s, "overlap_tp"), 0);
    ck_assert_int_eq(flag(s, "overlap_p2p"), 1);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(test_megatron_flags)
{
    char *sh;

    tp_evaluate(nvlink_json, tu_gpt2_small4_json, strategies_json);
    ck_assert_int_eq(export_to(1, "megatron", "core_v0.19.0", "m1"), 0);
    sh = tp_read("m1/megatron.sh");
    ck_assert_ptr_nonnull(sh);
    ck_assert_ptr_nonnull(strstr(sh, "--overlap-grad-reduce"));
    ck_assert_ptr_nonnull(strstr(sh, "--overlap-param-gather"));
    ck_assert_ptr_nonnull(strstr(sh, "--tp-comm-overlap"));
    free(sh);
    ck_assert_int_eq(export_to(2, "megatron", "core_v0.19.0", "m2"), 0);
    sh = tp_read("m2/megatron.sh");
    ck_assert_ptr_nonnull(sh);
    ck_assert_ptr_null(strstr(sh, "--overlap-"));
    ck_assert_ptr_null(strstr(sh, "--tp-comm-overlap"));
    free(sh);
    /* core_r0.9.0 bootstraps the userbuffers over MPI: refused */
    ck_assert_int_eq(export_to(1, "megatron", "core_r0.9.0", "m3"), 6);
    ck_assert_int_eq(export_to(4, "megatron", "core_r0.9.0", "m4"), 0);
}
END_TEST

START_TEST(test_deepspeed_overlap_comm)
{
    char *cfg;

    tp_evaluate(nvlink_json, tu_gpt2_small4_json, strategies_json);
    ck_assert_int_eq(export_to(3, "deepspeed", NULL, "d3"), 6);
    ck_assert_int_eq(export_to(4, "deepspeed", NULL, "d4"), 0);
    cfg = tp_read("d4/ds_config.json");
    ck_assert_ptr_nonnull(cfg);
    ck_assert_ptr_nonnull(strstr(cfg, "\"overlap_comm\": true"));
    free(cfg);
    ck_assert_int_eq(export_to(2, "deepspeed", NULL, "d2"), 0);
    cfg = tp_read("d2/ds_config.json");
    ck_assert_ptr_nonnull(cfg);
    ck_assert_ptr_null(strstr(cfg, "overlap_comm"));
    free(cfg);
}
END_TEST

/* Every strategy the search keeps: the gradient reduction overlapped
 * with dp > 1, TP overlap exactly where tp > 1 with sequence parallelism
 * on NVLink, never on PCIe; returns the strategies with tp > 1. */
static int search_check(const char *cluster, int nvlink)
{
    const char *args[] = {"--cluster", "c.json", "--model", "m.json",
                          "--top-k", "20", "--output", "p.json", "--quiet", NULL};
    tp_run_out r;
    cJSON *doc;
    const cJSON *s;
    int i, n, tp_many = 0;

    tp_write("c.json", cluster);
    tp_write("m.json", tu_gpt2_small4_json);
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "plan failed: %s", r.err);
    tp_run_free(&r);
    s = plan_strategy("p.json", 0, &doc);
    n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "strategies"));
    for (i = 0; i < n; i++) {
        int tp, dp, sp;
        s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), i);
        tp = cJSON_GetObjectItemCaseSensitive(s, "tp")->valueint;
        dp = cJSON_GetObjectItemCaseSensitive(s, "dp")->valueint;
        sp = flag(s, "sequence_parallel");
        ck_assert_int_eq(flag(s, "overlap_grad"), dp > 1);
        ck_assert_int_eq(flag(s, "overlap_tp"), nvlink && tp > 1 && sp);
        if (tp > 1 && sp)
            tp_many++;
    }
    cJSON_Delete(doc);
    return tp_many;
}

START_TEST(test_search_nvlink_pcie)
{
    ck_assert_int_gt(search_check(nvlink_json, 1), 0);
    ck_assert_int_gt(search_check(pcie_json, 0), 0);
}
END_TEST

static Suite *plain_suite(void)
{
    const TTest *const tests[] = {test_flags_recorded, test_megatron_flags,
                                  test_deepspeed_overlap_comm,
                                  test_search_nvlink_pcie};
    tu_case c = {"cli", tests, TU_N(tests), 0, tp_setup, tp_teardown};

    return tu_suite_of("plan_overlap", &c, 1);
}

int main(void)
{
    return tu_run(plain_suite());
}
