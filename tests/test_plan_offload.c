/* tests/test_plan_offload.c: an offloaded plan written by the planner
 * states "offload" and the host memory it fills, reads back with the
 * offload kept (plan_load_plan), and the table lists the feature. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "plan.h"
#include "testutil.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

static char dir[256];

/* cl, out, errp (300 bytes each): paths in dir of the cluster file, now
 * written (4 A100-40GB on one node with 512 GiB of host memory), and of
 * the planner's stdout and stderr. */
static void small_cluster(char *cl, char *out, char *errp)
{
    FILE *f;

    snprintf(cl, 300, "%s/c.json", dir);
    snprintf(out, 300, "%s/out.txt", dir);
    snprintf(errp, 300, "%s/err.txt", dir);
    f = fopen(cl, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"name\":\"small\",\"nodes\":[{\"name\":\"n\",\"device\":\"A100-40GB\","
          "\"gpus\":4,\"intra_gbps\":2400,\"nic_gbps\":100,\"host_memory_gib\":512}]}",
          f);
    fclose(f);
}

/* llama2-13b on 4 A100-40GB with 512 GiB of host memory: only offloaded
 * plans fit (tests/test_search_offload.c). */
START_TEST(round_trip)
{
    char cl[300], plan[300], out[300], errp[300];
    const char *args[] = {"--cluster", cl, "--model", EX "llama2-13b.json",
                          "--global-batch", "8", "--top-k", "2", "--output", plan, NULL};
    char *text, *table;
    cJSON *root, *s0, *mem;
    plan_doc d;
    util_error err;

    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    small_cluster(cl, out, errp);
    ck_assert_int_eq(tu_run_planner(NULL, args, out, errp), 0);
    table = tu_slurp(out);
    ck_assert_ptr_nonnull(table);
    ck_assert_ptr_nonnull(strstr(table, "offload\n"));
    free(table);
    text = tu_slurp(plan);
    ck_assert_ptr_nonnull(text);
    root = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(root);
    s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "strategies"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(s0, "offload")->valuestring, "optimizer");
    mem = cJSON_GetObjectItem(s0, "memory");
    ck_assert_str_eq(cJSON_GetObjectItem(mem, "host_node")->valuestring, "n");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(mem, "host_capacity_gib")->valuedouble,
                            512.0, 1e-9);
    /* 12 B per parameter of bf16 state for 13.0e9 parameters: 145 GiB */
    ck_assert_double_eq_tol(cJSON_GetObjectItem(mem, "host_gib")->valuedouble,
                            12.0 * 13.0e9 / 1073741824.0, 0.03 * 145.3);
    cJSON_Delete(root);
    ck_assert_msg(plan_load_plan(plan, &d, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_ge(d.n, 1);
    ck_assert_int_eq(d.s[0].offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert_double_eq_tol(d.cluster.nodes[0].host_mem, 512.0 * 1073741824.0, 1.0);
    plan_doc_free(&d);
}
END_TEST

/* --offload fixes the dimension: none leaves nothing that fits (exit 4,
 * no strategy fits), a bad name is a usage error (exit 2). */
START_TEST(option)
{
    char cl[300], out[300], errp[300];
    const char *none[] = {"--cluster", cl, "--model", EX "llama2-13b.json",
                          "--global-batch", "8", "--offload", "none", NULL};
    const char *bad[] = {"--cluster", cl, "--model", EX "llama2-13b.json",
                         "--offload", "gpu", NULL};
    char *e;

    small_cluster(cl, out, errp);
    ck_assert_int_eq(tu_run_planner(NULL, none, out, errp), 4);
    ck_assert_int_eq(tu_run_planner(NULL, bad, out, errp), 2);
    e = tu_slurp(errp);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(strstr(e, "option '--offload' expects none or optimizer, "
                                    "got 'gpu'"));
    free(e);
}
END_TEST

static void setup(void)
{
    const char *t = getenv("TMPDIR");

    snprintf(dir, sizeof dir, "%s/hetplan-offload.XXXXXX", t ? t : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

static Suite *suite(void)
{
    Suite *s = suite_create("plan_offload");
    TCase *tc = tcase_create("offload");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, option);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
