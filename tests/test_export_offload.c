/* tests/test_export_offload.c: an offloaded plan in each launcher's
 * files: DeepSpeed's zero_optimization.offload_optimizer, Megatron-LM's
 * --optimizer-cpu-offload where the release has it (refused otherwise),
 * torchrun's HETPLAN_OFFLOAD; with the data folder, the keys and flags
 * against the upstream lists (../shared/data/upstream/). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "export.h"
#include "testutil.h"

#define UP TU_DATA "/upstream/"

static fmt_cluster c;
static fmt_model m;
static fmt_strategy s;

/* gpt2-small4 on one node of four T4 (host memory 64 GiB), tp 1, dp 2,
 * pp 2, ZeRO zero, optimizer offloaded. */
static void setup_zero(int zero)
{
    static const char cl[] =
        "{\"name\":\"h\",\"nodes\":[{\"name\":\"n\",\"device\":\"T4\",\"gpus\":4,"
        "\"intra_gbps\":100,\"nic_gbps\":100,\"host_memory_gib\":64}]}";
    char text[300];
    fmt_strategy *v = NULL;
    int n = 0;
    util_error err;

    tu_parse_inputs(cl, tu_gpt2_small4_json, &c, &m);
    snprintf(text, sizeof text,
             "{\"strategies\":[{\"tp\":1,\"dp\":2,\"pp\":2,\"mbs\":1,\"zero\":%d,"
             "\"offload\":\"optimizer\",\"stage_boundaries\":[0,3,%d]}]}",
             zero, m.nlayers);
    ck_assert_msg(fmt_parse_strategies(text, "s.json", &c, &m, 8, &v, &n, &err) ==
                      UTIL_OK, "%s", err.msg);
    s = v[0];
    free(v);
}

static void teardown(void)
{
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}

/* Export to target/version; the text of file name (caller frees) or NULL
 * when refused. */
static char *export_text(int target, int version, const char *name, int *napprox)
{
    export_options eo;
    export_result er;
    cost_params p;
    util_error err;
    char *t = NULL;
    int i, rc;

    cost_params_init(&p);
    export_options_init(&eo);
    eo.version = version;
    rc = export_build(target, &c, &m, &p, &s, 8, &eo, &er, &err);
    *napprox = er.napprox;
    for (i = 0; rc == UTIL_OK && i < er.nfiles; i++)
        if (strcmp(er.files[i].name, name) == 0)
            t = strdup(er.files[i].text);
    export_free(&er);
    return t;
}

START_TEST(deepspeed_config)
{
    int na;
    char *t;

    setup_zero(1);
    t = export_text(EXPORT_DEEPSPEED, EXPORT_VERSION_NEW, "ds_config.json", &na);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(na, 0);
    ck_assert_ptr_nonnull(strstr(t, "\"zero_optimization\": {\n    \"stage\": 1,\n"
                                    "    \"offload_optimizer\": {\n"
                                    "      \"device\": \"cpu\",\n"
                                    "      \"pin_memory\": true\n    }\n  }"));
    {
        cJSON *j = cJSON_Parse(t);
        ck_assert_ptr_nonnull(j);
        cJSON_Delete(j);
    }
    free(t);
    teardown();
    /* ZeRO 0: DeepSpeed offloads only with stage >= 1, an approximation */
    setup_zero(0);
    t = export_text(EXPORT_DEEPSPEED, EXPORT_VERSION_NEW, "ds_config.json", &na);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(na, 1);
    teardown();
}
END_TEST

START_TEST(megatron_flag)
{
    int na;
    char *t;

    setup_zero(1);
    t = export_text(EXPORT_MEGATRON, EXPORT_VERSION_NEW, "megatron.sh", &na);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, "--use-distributed-optimizer \\\n"));
    ck_assert_ptr_nonnull(strstr(t, "--optimizer-cpu-offload \\\n"));
    free(t);
    /* core_r0.9.0 has no such flag: refused (exit 6 in the CLI) */
    t = export_text(EXPORT_MEGATRON, EXPORT_VERSION_OLD, "megatron.sh", &na);
    ck_assert_ptr_null(t);
    ck_assert_int_ge(na, 1);
    teardown();
}
END_TEST

START_TEST(torchrun_variable)
{
    int na;
    char *t;

    setup_zero(1);
    t = export_text(EXPORT_TORCHRUN, EXPORT_VERSION_NEW, "torchrun.sh", &na);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(strstr(t, "export HETPLAN_OFFLOAD=optimizer\n"));
    free(t);
    teardown();
}
END_TEST

/* 1 when the upstream list file has a line starting with key + tab. */
static int listed(const char *file, const char *key)
{
    char *t = tu_slurp(file), *p;
    size_t n = strlen(key);
    int found = 0;

    ck_assert_msg(t != NULL, "cannot read %s", file);
    for (p = t; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, n) == 0 && p[n] == '\t') {
            found = 1;
            break;
        }
    free(t);
    return found;
}

START_TEST(upstream_lists)
{
    /* the keys ds_config.json writes, in both DeepSpeed lists */
    ck_assert(listed(UP "deepspeed_config_keys.txt",
                     "zero_optimization.offload_optimizer.device"));
    ck_assert(listed(UP "deepspeed_config_keys.txt",
                     "zero_optimization.offload_optimizer.pin_memory"));
    ck_assert(listed(UP "deepspeed_v0.19.5_config_keys.txt",
                     "zero_optimization.offload_optimizer.device"));
    ck_assert(listed(UP "deepspeed_v0.19.5_config_keys.txt",
                     "zero_optimization.offload_optimizer.pin_memory"));
    /* the flag: core_v0.19.0 has it, core_r0.9.0 (refused) does not */
    ck_assert(listed(UP "megatron-lm_core_v0.19.0_args.txt", "--optimizer-cpu-offload"));
    ck_assert(!listed(UP "megatron-lm_core_r0.9.0_args.txt", "--optimizer-cpu-offload"));
}
END_TEST

static Suite *plain(void)
{
    Suite *su = suite_create("export_offload");
    TCase *tc = tcase_create("offload");

    tcase_add_test(tc, deepspeed_config);
    tcase_add_test(tc, megatron_flag);
    tcase_add_test(tc, torchrun_variable);
    suite_add_tcase(su, tc);
    return su;
}

static Suite *data(void)
{
    Suite *su = suite_create("export_offload_data");
    TCase *tc = tcase_create("upstream");

    tcase_add_test(tc, upstream_lists);
    suite_add_tcase(su, tc);
    return su;
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain, data, TU_DATA "/upstream");
}
