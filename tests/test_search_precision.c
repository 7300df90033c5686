/* tests/test_search_precision.c: a plan never uses a precision a device
 * lacks.  Oracles: which devices have bf16 units comes from the vendors'
 * datasheets (Volta V100 and Turing T4 have fp16 tensor cores and no
 * bf16; Ampere A100, Hopper H100 and Ada RTX 6000 have bf16), and the
 * device of each rank is recomputed here from the cluster file (nodes
 * in file order, "count" copies in place, GPUs numbered consecutively). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"
#define MIXED EX "mixed-generations.json"
#define LLAMA EX "llama-7b.json"

/* Device type of every device index of the cluster file at path, from
 * its JSON alone; returns how many (at most max). */
static int device_types(const char *path, char types[][32], int max)
{
    char *text = tu_slurp(path);
    cJSON *doc = cJSON_Parse(text), *nd;
    int n = 0;

    ck_assert_ptr_nonnull(doc);
    cJSON_ArrayForEach(nd, cJSON_GetObjectItemCaseSensitive(doc, "nodes"))
    {
        const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(nd, "count");
        int copies = cJSON_IsNumber(cnt) ? cnt->valueint : 1, k, g;
        int gpus = cJSON_GetObjectItemCaseSensitive(nd, "gpus")->valueint;
        const char *dev = cJSON_GetObjectItemCaseSensitive(nd, "device")->valuestring;
        for (k = 0; k < copies; k++)
            for (g = 0; g < gpus; g++) {
                ck_assert_int_lt(n, max);
                snprintf(types[n++], 32, "%s", dev);
            }
    }
    cJSON_Delete(doc);
    free(text);
    return n;
}

/* Datasheet oracle: V100 (Volta) and T4 (Turing) have no bf16 units. */
static int lacks_bf16(const char *type)
{
    return strcmp(type, "V100") == 0 || strcmp(type, "T4") == 0;
}

static cJSON *parse_file(const char *name)
{
    char *text = tp_read(name);
    cJSON *doc;

    ck_assert_msg(text != NULL, "no %s", name);
    doc = cJSON_Parse(text);
    free(text);
    ck_assert_msg(doc != NULL, "%s is not JSON", name);
    return doc;
}

static const char *settings_str(const cJSON *doc, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "settings"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Ranks of every strategy of the plan: returns how many in total; each
 * rank's device type (recomputed from the cluster) goes through check. */
static int ranks_of_plan(const cJSON *doc, char types[][32], int ndev, int *bad_bf16)
{
    const cJSON *st, *rk;
    int total = 0;

    *bad_bf16 = 0;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(doc, "strategies"))
    {
        cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(st, "ranks"))
        {
            int d = cJSON_GetObjectItemCaseSensitive(rk, "device")->valueint;
            ck_assert_int_ge(d, 0);
            ck_assert_int_lt(d, ndev);
            /* the plan's own label agrees with the cluster file */
            ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(rk, "device_type")->valuestring,
                             types[d]);
            *bad_bf16 += lacks_bf16(types[d]);
            total++;
        }
    }
    return total;
}

/* Run the planner with args: it plans (exit 0) to plan.json, its stderr
 * holds has and lacks lacks (NULL: not checked).  Returns plan.json
 * parsed (free with cJSON_Delete). */
static cJSON *plan_doc(const char *const *args, const char *has,
                       const char *lacks)
{
    tp_run_out r;

    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    if (has != NULL)
        ck_assert_msg(strstr(r.err, has) != NULL, "stderr: %s", r.err);
    if (lacks != NULL)
        ck_assert_msg(strstr(r.err, lacks) == NULL, "stderr: %s", r.err);
    tp_run_free(&r);
    return parse_file("plan.json");
}

START_TEST(bf16_leaves_v100_and_t4_idle)
{
    const char *args[] = {"--cluster", MIXED, "--model", LLAMA, "--top-k", "3",
                          "--output", "plan.json", "--quiet", NULL};
    const char *exp[] = {"export", "--plan", "plan.json", "--to", "torchrun",
                         "--output", "out", NULL};
    char types[64][32];
    int ndev = device_types(MIXED, types, 64), bad, n;
    const cJSON *st, *idle, *e;
    cJSON *doc;
    tp_run_out r;

    ck_assert_int_eq(ndev, 42); /* 8 + 2 x 8 + 8 + 2 x 4 + 2 */
    doc = plan_doc(args, NULL, NULL);
    ck_assert_str_eq(settings_str(doc, "precision"), "bf16"); /* llama-7b.json */
    ck_assert_ptr_null(settings_str(doc, "precision_note"));
    n = ranks_of_plan(doc, types, ndev, &bad);
    ck_assert_int_gt(n, 0);
    ck_assert_int_eq(bad, 0);
    /* the V100 and T4 nodes are listed idle with the reason */
    st = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "strategies"), 0);
    idle = cJSON_GetObjectItemCaseSensitive(st, "idle");
    n = 0;
    cJSON_ArrayForEach(e, idle)
    {
        const char *t = cJSON_GetObjectItemCaseSensitive(e, "device_type")->valuestring;
        const char *why = cJSON_GetObjectItemCaseSensitive(e, "reason")->valuestring;
        if (!lacks_bf16(t))
            continue;
        n++;
        ck_assert_msg(strstr(why, "'V100'") && strstr(why, "'T4'") &&
                          strstr(why, "no bf16 units"), "reason: %s", why);
    }
    ck_assert_int_eq(n, 3); /* v100-0, t4-0, t4-1 */
    cJSON_Delete(doc);
    /* the exports that refused bf16 on V100 now run */
    tp_run(&r, exp);
    ck_assert_msg(r.status == 0, "export exit %d: %s", r.status, r.err);
    tp_run_free(&r);
}
END_TEST

START_TEST(all_v100_falls_back_to_fp16)
{
    const char *args[] = {"--cluster", "v100.json", "--model", LLAMA, "--top-k", "1",
                          "--output", "plan.json", NULL};
    const char *quiet[] = {"--cluster", "v100.json", "--model", LLAMA, "--top-k", "1",
                           "--quiet", NULL};
    const char *exp[] = {"export", "--plan", "plan.json", "--to", "torchrun",
                         "--output", "out", NULL};
    cJSON *doc;
    tp_run_out r;

    tp_write("v100.json",
             "{\"name\": \"v100s\", \"nodes\": [{\"name\": \"v\", \"count\": 4, "
             "\"device\": \"V100\", \"gpus\": 8, \"intra_gbps\": 1200, "
             "\"nic_gbps\": 100}]}\n");
    doc = plan_doc(args, "note: planned in fp16 instead of bf16", NULL);
    ck_assert_str_eq(settings_str(doc, "precision"), "fp16");
    ck_assert_str_eq(settings_str(doc, "requested_precision"), "bf16");
    ck_assert_ptr_nonnull(strstr(settings_str(doc, "precision_note"),
                                 "'V100' has no bf16 units"));
    cJSON_Delete(doc);
    tp_run(&r, exp);
    ck_assert_msg(r.status == 0, "export exit %d: %s", r.status, r.err);
    tp_run_free(&r);
    tp_run(&r, quiet); /* --quiet silences the note, not the plan */
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.err, "");
    tp_run_free(&r);
}
END_TEST

/* An fp32 run that does not say whether it uses TF32 hears what the
 * times assume where the cluster has TF32 units (A100), and not when it
 * says (training.tf32, or the cost parameter), under --quiet, or on
 * devices without TF32 (V100). */
START_TEST(fp32_says_what_it_assumes_of_tf32)
{
    static const struct {
        const char *device, *training, *param, *quiet;
        int noted;
    } cases[] = {
        {"A100-80GB", "", NULL, NULL, 1},
        {"A100-80GB", ", \"tf32\": false", NULL, NULL, 0},
        {"A100-80GB", ", \"tf32\": true", NULL, NULL, 0},
        {"A100-80GB", "", "tf32=0", NULL, 0},
        {"A100-80GB", "", NULL, "--quiet", 0},
        {"V100", "", NULL, NULL, 0},
    };
    char text[512];
    size_t i;
    tp_run_out r;

    for (i = 0; i < TU_N(cases); i++) {
        const char *args[12] = {"--cluster", "c.json", "--model", "m.json", "--top-k",
                                "1", NULL};
        int n = 6;
        snprintf(text, sizeof text,
                 "{\"name\": \"c\", \"nodes\": [{\"name\": \"n\", \"device\": "
                 "\"%s\", \"gpus\": 2, \"intra_gbps\": 600, \"nic_gbps\": 100}]}\n",
                 cases[i].device);
        tp_write("c.json", text);
        snprintf(text, sizeof text,
                 "{\"name\": \"g\", \"training\": {\"global_batch\": 8, "
                 "\"precision\": \"fp32\"%s}, \"transformer\": {\"layers\": 2, "
                 "\"hidden\": 256, \"heads\": 4, \"seq\": 128, \"vocab\": 1000}}\n",
                 cases[i].training);
        tp_write("m.json", text);
        if (cases[i].param != NULL) {
            args[n++] = "--param";
            args[n++] = cases[i].param;
        }
        if (cases[i].quiet != NULL)
            args[n++] = cases[i].quiet;
        args[n] = NULL;
        tp_run(&r, args);
        ck_assert_msg(r.status == 0, "case %zu: exit %d: %s", i, r.status, r.err);
        ck_assert_msg((strstr(r.err, "note: fp32 matrix multiplications are taken "
                                     "to run on TF32") != NULL) == cases[i].noted,
                      "case %zu: stderr '%s'", i, r.err);
        tp_run_free(&r);
    }
}
END_TEST

START_TEST(use_all_falls_back_and_uses_every_device)
{
    const char *args[] = {"--cluster", MIXED, "--model", LLAMA, "--top-k", "1",
                          "--use-all", "--output", "plan.json", NULL};
    char types[64][32];
    int ndev = device_types(MIXED, types, 64), bad;
    cJSON *doc;

    doc = plan_doc(args, "planned in fp16 instead of bf16: '--use-all'", NULL);
    ck_assert_str_eq(settings_str(doc, "precision"), "fp16");
    ck_assert_str_eq(settings_str(doc, "requested_precision"), "bf16");
    ck_assert_int_eq(ranks_of_plan(doc, types, ndev, &bad), 42);
    ck_assert_int_eq(bad, 8 + 2 * 4); /* every V100 and T4 runs a rank, in fp16 */
    cJSON_Delete(doc);
}
END_TEST

START_TEST(fp16_plans_keep_every_device)
{
    const char *args[] = {"--cluster", MIXED, "--model", LLAMA, "--precision", "fp16",
                          "--top-k", "1", "--use-all", "--output", "plan.json", NULL};
    char types[64][32];
    int ndev = device_types(MIXED, types, 64), bad;
    cJSON *doc;

    doc = plan_doc(args, NULL, "instead of");
    ck_assert_str_eq(settings_str(doc, "precision"), "fp16");
    ck_assert_ptr_null(settings_str(doc, "requested_precision"));
    ck_assert_ptr_null(settings_str(doc, "precision_note"));
    ck_assert_int_eq(ranks_of_plan(doc, types, ndev, &bad), 42);
    ck_assert_int_eq(bad, 16);
    cJSON_Delete(doc);
}
END_TEST

START_TEST(evaluate_refuses_bf16_on_v100)
{
    /* 4 stages of 8 in file order: devices 24..31 are v100-0's */
    const char *bf16[] = {"evaluate", "--cluster", MIXED, "--model", LLAMA,
                          "--strategies", "s.json", NULL};
    const char *fp16[] = {"evaluate", "--cluster", MIXED, "--model", LLAMA,
                          "--strategies", "s.json", "--precision", "fp16", NULL};
    char text[1024], *p = text;
    int d;
    tp_run_out r;

    /* llama-7b: embed, 32 blocks, final_norm, head = 35 layers */
    p += sprintf(p, "{\"strategies\": [{\"tp\": 1, \"dp\": 8, \"pp\": 4, \"mbs\": 1, "
                    "\"stage_boundaries\": [0, 9, 18, 27, 35], \"ranks\": [");
    for (d = 0; d < 32; d++)
        p += sprintf(p, "%s%d", d ? ", " : "", d);
    sprintf(p, "]}]}\n");
    tp_write("s.json", text);
    tp_run(&r, bf16);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "s.json: strategies[0]: rank 24 runs on node "
                                "'v100-0', whose 'V100' devices cannot train in bf16") != NULL,
                  "stderr: %s", r.err);
    ck_assert_str_eq(r.out, "");
    tp_run_free(&r);
    tp_run(&r, fp16);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tp_run_free(&r);
}
END_TEST

/* One A100 cannot hold llama2-70b (bf16) and the V100s cannot run bf16:
 * no plan, and the message says the V100s were left out and how to use
 * them. */
START_TEST(infeasible_subset_says_why)
{
    const char *args[] = {"--cluster", "c.json", "--model", EX "llama2-70b.json", NULL};
    tp_run_out r;

    tp_write("c.json",
             "{\"name\": \"small\", \"nodes\": [{\"name\": \"a\", \"device\": "
             "\"A100-80GB\", \"gpus\": 1, \"intra_gbps\": 2400, \"nic_gbps\": 200}, "
             "{\"name\": \"v\", \"count\": 4, \"device\": \"V100\", \"gpus\": 8, "
             "\"intra_gbps\": 1200, \"nic_gbps\": 100}]}\n");
    tp_run(&r, args);
    ck_assert_int_eq(r.status, 4);
    ck_assert_msg(strstr(r.err, "only the devices that train in bf16 were searched "
                                "('V100' has no bf16 units)") != NULL, "stderr: %s", r.err);
    tp_run_free(&r);
}
END_TEST

START_TEST(library_fallback_rules)
{
    fmt_cluster mixed, het;
    util_error err;
    char buf[200];

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(MIXED, &mixed, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", &het, &err), UTIL_OK);
    /* some devices of mixed-generations have bf16: a subset runs it */
    ck_assert_int_eq(search_precision_fallback(&mixed, FMT_PREC_BF16, 0), FMT_PREC_BF16);
    ck_assert_int_eq(search_precision_fallback(&mixed, FMT_PREC_BF16, 1), FMT_PREC_FP16);
    ck_assert_int_eq(search_precision_fallback(&mixed, FMT_PREC_FP16, 1), FMT_PREC_FP16);
    /* amp-het is a T4 node and a V100 node: no bf16 anywhere */
    ck_assert_int_eq(search_precision_usable(&het, FMT_PREC_BF16, 0), 0);
    ck_assert_int_eq(search_precision_fallback(&het, FMT_PREC_BF16, 0), FMT_PREC_FP16);
    ck_assert_int_eq(search_precision_fallback(&het, FMT_PREC_FP32, 1), FMT_PREC_FP32);
    search_precision_lacking(&mixed, FMT_PREC_BF16, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "'V100'") && strstr(buf, "'T4'") &&
                      strstr(buf, " have no bf16 units") && !strstr(buf, "A100"),
                  "%s", buf);
    search_precision_lacking(&mixed, FMT_PREC_FP16, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    search_precision_lacking(&het, FMT_PREC_BF16, buf, 8); /* truncated, terminated */
    ck_assert_uint_eq(strlen(buf), 7);
    fmt_cluster_free(&mixed);
    fmt_cluster_free(&het);
}
END_TEST

START_TEST(library_use_all_refuses)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(MIXED, &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(LLAMA, &m, &err), UTIL_OK);
    ck_assert_int_eq(fmt_model_precision(&m), FMT_PREC_BF16);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 512;
    sp.use_all = 1;
    ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_EINVAL);
    ck_assert_msg(strstr(err.msg, "'--use-all' needs every device to train in bf16") &&
                      strstr(err.msg, "'--precision fp16'"), "%s", err.msg);
    ck_assert_int_eq(res.n, 0);
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("search_precision");
    TCase *tc = tcase_create("precision");

    tcase_set_timeout(tc, 240);
    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, bf16_leaves_v100_and_t4_idle);
    tcase_add_test(tc, all_v100_falls_back_to_fp16);
    tcase_add_test(tc, use_all_falls_back_and_uses_every_device);
    tcase_add_test(tc, fp32_says_what_it_assumes_of_tf32);
    tcase_add_test(tc, fp16_plans_keep_every_device);
    tcase_add_test(tc, evaluate_refuses_bf16_on_v100);
    tcase_add_test(tc, infeasible_subset_says_why);
    tcase_add_test(tc, library_fallback_rules);
    tcase_add_test(tc, library_use_all_refuses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
