/* tests/test_commands_inputs.c: a plan read back after one of its inputs
 * changed (docs/plan-format.md, "inputs"; docs/cli.md, "--strict").
 * export, report, whatif and replan name the file that changed, the
 * SHA-256 the plan recorded and what the plan recorded that now differs;
 * --strict makes the change an error (exit 3); a change the plan no
 * longer fits (fewer GPUs) is blamed on the file, not on the plan's
 * strategies alone. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "tp_cli.h"

/* Two nodes of two T4 each; the plan runs tp 1, dp 4 on all of them. */
static const char cluster[] =
    "{\"name\": \"pc\", \"nodes\": ["
    "{\"name\": \"alpha\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 100, "
    "\"nic_gbps\": 100},"
    "{\"name\": \"beta\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 100, "
    "\"nic_gbps\": 100}]}";

/* The commands that read a plan back, each with what else it needs. */
static const char *const readers[4][12] = {
    {"export", "--plan", "plan.json", "--to", "hostfile", NULL},
    {"report", "--plan", "plan.json", "--output", "r.svg", NULL},
    {"whatif", "--plan", "plan.json", "--slow", "0:2", NULL},
    {"replan", "--plan", "plan.json", "--frozen", "1", NULL},
};

/* The first 16 hex digits of the SHA-256 of text, as the messages quote it. */
static void sha16(const char *text, char out[17])
{
    char hex[65];

    util_sha256_hex(text, strlen(text), hex);
    memcpy(out, hex, 16);
    out[16] = '\0';
}

static void make_plan(void)
{
    tp_evaluate(cluster, tu_gpt2_small4_json,
                "{\"strategies\":[{\"tp\":1,\"dp\":4,\"pp\":1,\"mbs\":1}]}");
}

/* args with "--strict" in front (strict) or as they are, into v. */
static void with_strict(const char *const *args, int strict, const char **v)
{
    int i = 0, k = 0;

    if (strict)
        v[k++] = "--strict";
    while (args[i] != NULL)
        v[k++] = args[i++];
    v[k] = NULL;
}

/* A host renamed: every reader warns naming the cluster file, the digest
 * the plan recorded and the node; --strict refuses with exit 3. */
START_TEST(renamed_host)
{
    char *changed = strdup(cluster), *p, want[64];
    const char *v[16];
    tp_run_out r;
    int k;

    make_plan();
    sha16(cluster, want);
    p = strstr(changed, "\"beta\"");
    memcpy(p, "\"gama\"", 6);
    tp_write("c.json", changed);
    for (k = 0; k < 4; k++) {
        with_strict(readers[k], 0, v);
        tp_run(&r, v);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", v[0], r.status, r.err);
        ck_assert_msg(strstr(r.err, "warning: the cluster file '") != NULL, "%s", r.err);
        ck_assert_msg(strstr(r.err, "c.json' changed since 'plan.json' was made") != NULL,
                      "%s", r.err);
        ck_assert_msg(strstr(r.err, want) != NULL, "%s: no %s in %s", v[0], want, r.err);
        ck_assert_msg(strstr(r.err, "node 1 is 'gama', the plan recorded 'beta'") != NULL,
                      "%s", r.err);
        tp_run_free(&r);
        with_strict(readers[k], 1, v);
        tp_run(&r, v);
        ck_assert_msg(r.status == 3, "%s --strict: exit %d: %s", v[1], r.status, r.err);
        ck_assert_msg(strstr(r.err, "c.json' changed since 'plan.json' was made") != NULL,
                      "%s", r.err);
        ck_assert_ptr_null(strstr(r.err, "warning"));
        ck_assert_str_eq(r.out, ""); /* nothing written with the new host names */
        tp_run_free(&r);
    }
    free(changed);
}
END_TEST

/* A node with fewer GPUs: the plan no longer fits; the message names the
 * file and the GPUs first (with or without --strict). */
START_TEST(fewer_gpus)
{
    char *changed = strdup(cluster), *p;
    const char *v[16];
    tp_run_out r;
    int k, strict;

    make_plan();
    p = strstr(changed, "\"beta\", \"device\": \"T4\", \"gpus\": 2");
    ck_assert_ptr_nonnull(p);
    p[strlen("\"beta\", \"device\": \"T4\", \"gpus\": ")] = '1';
    tp_write("c.json", changed);
    for (k = 0; k < 4; k++)
        for (strict = 0; strict < 2; strict++) {
            with_strict(readers[k], strict, v);
            tp_run(&r, v);
            ck_assert_msg(r.status == 3, "%s: exit %d: %s", v[strict], r.status, r.err);
            ck_assert_msg(strncmp(r.err, "planner: the cluster file '", 27) == 0, "%s",
                          r.err);
            ck_assert_msg(strstr(r.err, "the cluster has 3 GPUs, the plan recorded 4") !=
                              NULL, "%s", r.err);
            ck_assert_msg(strstr(r.err, "node 'beta' has 1 GPUs, the plan recorded 2") !=
                              NULL, "%s", r.err);
            ck_assert_msg(strstr(r.err, "the plan no longer fits it: 'plan.json': "
                                        "strategies[0]") != NULL, "%s", r.err);
            tp_run_free(&r);
        }
    free(changed);
}
END_TEST

/* The model file changed where nothing the plan records differs: named
 * as the model file, with the digests. */
START_TEST(model_changed)
{
    static const char *const args[] = {"export", "--plan", "plan.json", "--to",
                                       "hostfile", NULL};
    char *m = malloc(strlen(tu_gpt2_small4_json) + 2), want[17];
    tp_run_out r;

    make_plan();
    sha16(tu_gpt2_small4_json, want);
    sprintf(m, "%s\n", tu_gpt2_small4_json);
    tp_write("m.json", m);
    tp_run(&r, args);
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(strstr(r.err, "the model file '") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "m.json' changed since 'plan.json' was made (SHA-256 ") !=
                      NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, want) != NULL, "%s", r.err);
    ck_assert_ptr_null(strstr(r.err, "cluster file"));
    tp_run_free(&r);
    free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("commands_inputs");
    TCase *tc = tcase_create("inputs");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, renamed_host);
    tcase_add_test(tc, fewer_gpus);
    tcase_add_test(tc, model_changed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
