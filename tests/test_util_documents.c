/* tests/test_util_documents.c: the document every input file must be
 * (util_json_parse_object, docs/inputs.md): one JSON object, no key given
 * twice in any object, checked by every reader (cluster, model, profile,
 * AMP profile, strategies, trials, plan, DT-FM scenario). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "plan.h"
#include "decentral.h"
#include "testutil.h"

static const char cluster_json[] =
    "{\"nodes\": [{\"name\": \"a\", \"device\": \"T4\", \"gpus\": 2,"
    " \"intra_gbps\": 100, \"nic_gbps\": 100}]}";
static const char model_json[] =
    "{\"name\": \"g\", \"transformer\": {\"layers\": 2, \"hidden\": 64,"
    " \"heads\": 2, \"seq\": 8, \"vocab\": 10}}";

static char dir[256];

static const char *put(const char *name, const char *text)
{
    static char p[512];
    FILE *f;

    snprintf(p, sizeof p, "%s/%s", dir, name);
    f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_docs_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

static void expect_dup(const util_error *err, int rc, const char *file,
                       const char *path, const char *key)
{
    char want[96];

    ck_assert_msg(rc == UTIL_EFIELD, "rc %d: %s", rc, err->msg);
    ck_assert_str_eq(err->file, file);
    ck_assert_str_eq(err->path, path);
    snprintf(want, sizeof want, "duplicate key '%s'", key);
    ck_assert_msg(strstr(err->msg, want) != NULL, "msg: %s", err->msg);
}

START_TEST(parse_object_finds_duplicates)
{
    cJSON *root = (cJSON *)1;
    util_error err;

    ck_assert_int_eq(util_json_parse_object("{\"a\": 1, \"b\": {\"c\": [1, {\"d\": 2,"
                                            " \"e\": 3}]}}", "x.json", &root, &err),
                     UTIL_OK);
    cJSON_Delete(root);
    expect_dup(&err, util_json_parse_object("{\"a\": 1, \"b\": 2, \"a\": 1}", "x.json",
                                            &root, &err), "x.json", "a", "a");
    ck_assert_ptr_null(root);
    expect_dup(&err, util_json_parse_object("{\"nodes\": [{\"n\": 1}, {\"n\": 1,"
                                            " \"gpus\": 2, \"gpus\": 4}]}",
                                            "x.json", &root, &err),
               "x.json", "nodes[1].gpus", "gpus");
    expect_dup(&err, util_json_parse_object("{\"a\": {\"b\": [[{\"k\": 1, \"k\": 1}]]}}",
                                            "x.json", &root, &err),
               "x.json", "a.b[0][0].k", "k");
    /* keys differing only in case are different keys */
    ck_assert_int_eq(util_json_parse_object("{\"a\": 1, \"A\": 2}", "x.json", &root,
                                            &err), UTIL_OK);
    cJSON_Delete(root);
    ck_assert_int_eq(util_json_parse_object("[1]", "x.json", &root, &err), UTIL_EFIELD);
    ck_assert_int_eq(util_json_parse_object("{\"a\": ", "x.json", &root, &err),
                     UTIL_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.msg, "line 1"));
}
END_TEST

START_TEST(every_reader_refuses_duplicates)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile pr;
    fmt_strategy *s = NULL;
    fmt_trial_set ts;
    dtfm_input in;
    plan_doc d;
    util_error err;
    const char *p;
    int n = 0;

    expect_dup(&err, fmt_parse_cluster("{\"nodes\": [{\"name\": \"a\", \"name\": \"b\","
                                       " \"device\": \"T4\", \"gpus\": 2,"
                                       " \"intra_gbps\": 100, \"nic_gbps\": 100}]}",
                                       "c.json", &c, &err),
               "c.json", "nodes[0].name", "name");
    expect_dup(&err, fmt_parse_model("{\"name\": \"g\", \"transformer\": {\"layers\": 2,"
                                     " \"layers\": 200, \"hidden\": 64, \"heads\": 2,"
                                     " \"seq\": 8, \"vocab\": 10}}", "m.json", &m, &err),
               "m.json", "transformer.layers", "layers");
    ck_assert_int_eq(fmt_parse_cluster(cluster_json, "c.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(model_json, "m.json", &m, &err), UTIL_OK);
    expect_dup(&err, fmt_parse_profile("{\"format\": \"hetplan-profile/1\", \"entries\": ["
                                       "{\"device\": \"T4\", \"tp\": 1, \"tp\": 2,"
                                       " \"mbs\": 1, \"by_kind\": {}}]}",
                                       "p.json", &m, &pr, &err),
               "p.json", "entries[0].tp", "tp");
    p = put("amp.json", "{\"gpt2\": {\"T4\": {\"tp1\": [1], \"tp1\": [2]}}}");
    expect_dup(&err, fmt_profile_from_amp(p, "gpt2", &m, &pr, &err), p, "gpt2.T4.tp1",
               "tp1");
    expect_dup(&err, fmt_parse_strategies("{\"strategies\": [{\"tp\": 1, \"dp\": 2,"
                                          " \"pp\": 1, \"mbs\": 1, \"mbs\": 2,"
                                          " \"stage_boundaries\": [0, 4]}]}",
                                          "s.json", &c, &m, 8, &s, &n, &err),
               "s.json", "strategies[0].mbs", "mbs");
    p = put("t.json", "{\"global_batch\": 8, \"global_batch\": 16, \"strategies\": []}");
    expect_dup(&err, fmt_load_trials(p, 0, &c, &m, 0, &ts, &err), p, "global_batch",
               "global_batch");
    expect_dup(&err, dtfm_parse("{\"regions\": [{\"name\": \"x\", \"gpus\": 2,"
                                " \"gpus\": 3}]}", "d.json", NULL, &in, &err),
               "d.json", "regions[0].gpus", "gpus");
    p = put("plan.json", "{\"schema\": \"hetplan-plan/1\", \"settings\": {"
                         "\"global_batch\": 8, \"global_batch\": 1000000}}");
    expect_dup(&err, plan_load_plan(p, &d, &err), p, "settings.global_batch",
               "global_batch");
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("util_documents");
    TCase *tc = tcase_create("documents");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, parse_object_finds_duplicates);
    tcase_add_test(tc, every_reader_refuses_duplicates);
    suite_add_tcase(su, tc);
    return tu_run(su);
}
