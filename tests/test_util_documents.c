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
#include "replan.h"
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

/* util_json_parse_object on text: UTIL_EPARSE with a message holding
 * where ("line L, column C") and what. */
static void expect_text_error(const char *text, const char *where, const char *what)
{
    cJSON *root = (cJSON *)1;
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = util_json_parse_object(text, "x.json", &root, &err);
    ck_assert_msg(rc == UTIL_EPARSE, "rc %d for '%s': %s", rc, text, err.msg);
    ck_assert_ptr_null(root);
    ck_assert_str_eq(err.file, "x.json");
    ck_assert_msg(strstr(err.msg, where) != NULL, "msg lacks '%s': %s", where, err.msg);
    ck_assert_msg(strstr(err.msg, what) != NULL, "msg lacks '%s': %s", what, err.msg);
}

static void expect_text_ok(const char *text)
{
    cJSON *root = NULL;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_msg(util_json_parse_object(text, "x.json", &root, &err) == UTIL_OK,
                  "refused '%s': %s", text, err.msg);
    cJSON_Delete(root);
}

/* The text of an input file is UTF-8 (RFC 3629): every byte sequence
 * outside it is refused where it stands, whether in a string or not. */
START_TEST(parse_object_wants_utf8)
{
    /* U+00E9, U+20AC, U+FFFF, U+10000, U+10FFFF, and an escaped pair */
    expect_text_ok("{\"n\": \"\xc3\xa9 \xe2\x82\xac \xef\xbf\xbf \xf0\x90\x80\x80"
                   " \xf4\x8f\xbf\xbf \\ud83d\\ude00\"}");
    expect_text_error("{\"name\": \"a\xff\xfe\"}", "line 1, column 12",
                      "expected UTF-8 text, got byte 0xff");
    expect_text_error("{\"a\": 1,\n \"b\": \"x\xc0\xaf\"}", "line 2, column 9",
                      "got byte 0xc0 (an overlong encoding)");
    expect_text_error("{\"a\": \"\xe0\x80\xaf\"}", "column 8", "an overlong encoding");
    expect_text_error("{\"a\": \"\xf0\x80\x80\xaf\"}", "column 8",
                      "an overlong encoding");
    expect_text_error("{\"a\": \"\xed\xa0\x80\"}", "column 8",
                      "an encoded UTF-16 surrogate");
    expect_text_error("{\"a\": \"\xf4\x90\x80\x80\"}", "column 8", "beyond U+10FFFF");
    expect_text_error("{\"a\": \"\xf5\x80\x80\x80\"}", "column 8", "beyond U+10FFFF");
    expect_text_error("{\"a\": \"\xe2\x82\"}", "column 8", "a character cut short");
    expect_text_error("{\"a\": \"\x80\"}", "column 8", "a continuation byte");
    expect_text_error("{\"\xff\": 1}", "column 3", "got byte 0xff"); /* in a key */
    expect_text_error("{\"a\": 1}\xff", "column 9", "got byte 0xff"); /* outside */
}
END_TEST

/* Escapes cJSON would store as a C string that is not what the text
 * says (\u0000 ends it) or as bytes that are not UTF-8 (a surrogate
 * without its pair) are refused, in values and keys alike. */
START_TEST(parse_object_refuses_bad_escapes)
{
    expect_text_ok("{\"a\": \"\\u0041\\u00e9\\ud800\\udc00\\n\"}");
    expect_text_error("{\"name\": \"a\\u0000b\"}", "line 1, column 12",
                      "expected a string without \\u0000");
    expect_text_error("{\"a\\u0000b\": 1}", "column 4", "without \\u0000");
    expect_text_error("{\"a\": \"\\ud800\"}", "column 8",
                      "got the high surrogate escape \\ud800 without a low surrogate");
    expect_text_error("{\"a\": \"\\ud800\\u0041\"}", "column 8",
                      "without a low surrogate");
    expect_text_error("{\"a\": \"\\uDBFF\\uDBFF\"}", "column 8",
                      "without a low surrogate");
    expect_text_error("{\"a\": \"x\\udc00\"}", "column 9",
                      "got the lone low surrogate escape \\udc00");
}
END_TEST

/* Arrays and objects inside each other: 64 levels (the top-level object
 * included) are read, 65 refused saying so, as 2,000 levels are. */
START_TEST(parse_object_nesting_limit)
{
    char text[4200];
    int d, k = 0;

    ck_assert_int_eq(UTIL_JSON_MAX_DEPTH, 64);
    for (d = 64; d <= 65; d++) {
        k = sprintf(text, "{\"a\": ");
        memset(text + k, '[', (size_t)d - 1);
        k += d - 1;
        memset(text + k, ']', (size_t)d - 1);
        k += d - 1;
        strcpy(text + k, "}");
        if (d == 64)
            expect_text_ok(text);
        else
            expect_text_error(text, "line 1, column 70", "nested too deep: expected at "
                              "most 64 arrays and objects inside each other, got 65");
    }
    k = sprintf(text, "{\"a\": ");
    memset(text + k, '[', 2000);
    memset(text + k + 2000, ']', 2000);
    strcpy(text + k + 4000, "}");
    expect_text_error(text, "column 70", "nested too deep");
}
END_TEST

/* Values in one document: 2^24 are read (the scan alone, without
 * cJSON's 1.3 GB), one more is refused before cJSON allocates any.
 * Keys are no values. */
START_TEST(parse_object_value_limit)
{
    const long n = UTIL_JSON_MAX_VALUES;
    char *text = malloc((size_t)n * 2 + 64), *q;
    util_error err;
    long i;

    ck_assert_int_eq(UTIL_JSON_MAX_VALUES, 16777216);
    ck_assert_ptr_nonnull(text);
    /* the object, the array and n - 2 numbers */
    q = text + sprintf(text, "{\"key\": [");
    for (i = 0; i < n - 2; i++) {
        *q++ = '0';
        *q++ = ',';
    }
    strcpy(q - 1, "]}");
    ck_assert_int_eq(util_json_check_text(text, "v.json", &err), UTIL_OK);
    strcpy(q - 1, ",0]}");
    ck_assert_int_eq(util_json_check_text(text, "v.json", &err), UTIL_EPARSE);
    ck_assert_msg(strstr(err.msg, "too many values: expected at most 16777216 numbers, "
                                  "strings, arrays and objects in one document") != NULL,
                  "msg: %s", err.msg);
    /* keys and strings: {"k0": "v", "k1": "v", ...} counts the values */
    sprintf(text, "{\"a\": \"v\", \"b\": [\"w\", {\"c\": 1, \"d\": [true, null]}]}");
    ck_assert_int_eq(util_json_check_text(text, "v.json", &err), UTIL_OK);
    free(text);
}
END_TEST

/* Every reader goes through util_json_parse_object, so every one refuses
 * a name that is not UTF-8, naming its file. */
START_TEST(every_reader_wants_utf8)
{
    static const char bad[] = "{\"name\": \"a\xff\xfe\"}";
    fmt_cluster c;
    fmt_model m;
    fmt_profile pr;
    fmt_strategy *s = NULL;
    fmt_trial_set ts;
    dtfm_input in;
    plan_doc d;
    replan_freeze fz;
    util_error err;
    const char *p;
    int n = 0;

#define EXPECT_UTF8(call, fname)                                                   \
    do {                                                                         \
        memset(&err, 0, sizeof err);                                             \
        ck_assert_int_eq((call), UTIL_EPARSE);                                   \
        ck_assert_str_eq(err.file, (fname));                                     \
        ck_assert_msg(strstr(err.msg, "expected UTF-8 text, got byte 0xff") != NULL, \
                      "msg: %s", err.msg);                                       \
    } while (0)
    EXPECT_UTF8(fmt_parse_cluster(bad, "c.json", &c, &err), "c.json");
    EXPECT_UTF8(fmt_parse_model(bad, "m.json", &m, &err), "m.json");
    ck_assert_int_eq(fmt_parse_cluster(cluster_json, "c.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(model_json, "m.json", &m, &err), UTIL_OK);
    EXPECT_UTF8(fmt_parse_profile(bad, "p.json", &m, &pr, &err), "p.json");
    p = put("amp.json", bad);
    EXPECT_UTF8(fmt_profile_from_amp(p, "gpt2", &m, &pr, &err), p);
    EXPECT_UTF8(fmt_parse_strategies(bad, "s.json", &c, &m, 8, &s, &n, &err), "s.json");
    p = put("t.json", bad);
    EXPECT_UTF8(fmt_load_trials(p, 0, &c, &m, 0, &ts, &err), p);
    EXPECT_UTF8(fmt_load_trials(p, 1, &c, &m, 0, &ts, &err), p);
    EXPECT_UTF8(dtfm_parse(bad, "d.json", NULL, &in, &err), "d.json");
    p = put("plan.json", bad);
    EXPECT_UTF8(plan_load_plan(p, &d, &err), p);
    EXPECT_UTF8(replan_parse_freeze(bad, "f.json", 2, &fz, &err), "f.json");
#undef EXPECT_UTF8
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("util_documents");
    TCase *tc = tcase_create("documents");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, parse_object_finds_duplicates);
    tcase_add_test(tc, every_reader_refuses_duplicates);
    tcase_add_test(tc, parse_object_wants_utf8);
    tcase_add_test(tc, parse_object_refuses_bad_escapes);
    tcase_add_test(tc, parse_object_nesting_limit);
    tcase_add_test(tc, parse_object_value_limit);
    tcase_add_test(tc, every_reader_wants_utf8);
    suite_add_tcase(su, tc);
    return tu_run(su);
}
