/* tests/test_plan_read.c: plans read back with plan_load_plan: a round
 * trip through plan_to_json, input paths resolved next to the plan, the
 * AMP profile key, digest changes, and bad plans. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "plan.h"
#include "testutil.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

static char dir[256];
static int plan_precision = -1; /* make_plan: --precision of the plan, -1 = none */

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan-planfile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[512];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *name, const char *text)
{
    tu_put(dir, name, text);
}

static void copy_example(const char *name)
{
    char *text = NULL;
    char src[512];
    util_error err;

    snprintf(src, sizeof src, EX "%s", name);
    ck_assert_int_eq(util_read_file(src, &text, &err), UTIL_OK);
    put(name, text);
    free(text);
}

/* Plan the AMP heterogeneous example with the analytic model and write
 * the plan with relative input names (as the CLI does when run in dir). */
static char *make_plan(const char *cluster_name, search_result *res,
                       fmt_cluster *c, fmt_model *m, cost_params *cp)
{
    util_error err;
    search_params sp;
    plan_meta meta;
    fmt_strategy *s;
    cost_result *r;
    char *text, *raw = NULL, path[512];
    int i;

    snprintf(path, sizeof path, "%s/%s", dir, cluster_name);
    ck_assert_int_eq(fmt_load_cluster(path, c, &err), UTIL_OK);
    snprintf(path, sizeof path, "%s/gpt2-amp.json", dir);
    ck_assert_int_eq(fmt_load_model(path, m, &err), UTIL_OK);
    if (plan_precision >= 0) /* as commands/plan.c applies --precision */
        ck_assert_int_eq(fmt_model_set_precision(m, plan_precision, &err), UTIL_OK);
    cost_params_init(cp);
    cp->net_eff = 0.6; /* a non-default value must survive the round trip */
    search_params_init(&sp);
    sp.global_batch = 32;
    sp.top_k = 3;
    ck_assert_int_eq(search_plan(c, m, NULL, cp, &sp, res, &err), UTIL_OK);
    s = calloc((size_t)res->n, sizeof *s);
    r = calloc((size_t)res->n, sizeof *r);
    for (i = 0; i < res->n; i++) {
        s[i] = res->cands[i].s;
        r[i] = res->cands[i].r;
    }
    memset(&meta, 0, sizeof meta);
    meta.cluster_path = cluster_name;
    meta.model_path = "gpt2-amp.json";
    meta.global_batch = 32;
    meta.method = "amp";
    ck_assert_int_eq(util_read_file(path, &raw, &err), UTIL_OK);
    util_sha256_hex(raw, strlen(raw), meta.model_digest);
    free(raw);
    snprintf(path, sizeof path, "%s/%s", dir, cluster_name);
    ck_assert_int_eq(util_read_file(path, &raw, &err), UTIL_OK);
    util_sha256_hex(raw, strlen(raw), meta.cluster_digest);
    free(raw);
    text = plan_to_json(&meta, c, m, cp, s, r, res->n);
    free(s);
    free(r);
    ck_assert_ptr_nonnull(text);
    return text;
}

START_TEST(round_trip)
{
    search_result res;
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    plan_doc d;
    util_error err;
    char *text, path[512];
    int i, k;

    copy_example("amp-het.json");
    copy_example("gpt2-amp.json");
    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    text = make_plan("amp-het.json", &res, &c, &m, &cp);
    put("plan.json", text);
    free(text);

    /* run from another directory: inputs are found next to the plan */
    snprintf(path, sizeof path, "%s/plan.json", dir);
    ck_assert_int_eq(plan_load_plan(path, &d, &err), UTIL_OK);
    ck_assert_int_eq(d.n, res.n);
    ck_assert_int_eq(d.global_batch, 32);
    ck_assert_str_eq(d.method, "amp");
    ck_assert_int_eq(d.digest_mismatch, 0);
    ck_assert_int_eq(d.have_profile, 0);
    ck_assert_int_eq(d.cluster.ndevices, c.ndevices);
    ck_assert_int_eq(d.model.nlayers, m.nlayers);
    ck_assert(fabs(d.params.net_eff - 0.6) < 1e-12);
    for (i = 0; i < d.n; i++) {
        const fmt_strategy *a = &res.cands[i].s, *b = &d.s[i];
        cost_result r;
        ck_assert_int_eq(a->tp, b->tp);
        ck_assert_int_eq(a->dp, b->dp);
        ck_assert_int_eq(a->pp, b->pp);
        ck_assert_int_eq(a->mbs, b->mbs);
        ck_assert_int_eq(a->gas, b->gas);
        ck_assert_str_eq(a->placement, b->placement);
        for (k = 0; k <= a->pp; k++)
            ck_assert_int_eq(a->bounds[k], b->bounds[k]);
        for (k = 0; k < a->tp * a->dp * a->pp; k++)
            ck_assert_int_eq(a->ranks[k], b->ranks[k]);
        /* re-evaluated with the plan's own parameters: the same time */
        ck_assert_int_eq(cost_evaluate(&d.cluster, &d.model, NULL, &d.params,
                                       b, &r, &err),
                         UTIL_OK);
        ck_assert_msg(fabs(r.iter_s - d.predicted_s[i]) <= 1e-9 * r.iter_s,
                      "strategy %d: %g vs %g", i, r.iter_s, d.predicted_s[i]);
        cost_result_free(&r);
    }
    plan_doc_free(&d);
    plan_doc_free(&d); /* freeing twice is harmless */

    /* an input changed since planning is flagged */
    put("gpt2-amp.json.bak", "");
    {
        char *mt = NULL;
        snprintf(path, sizeof path, "%s/gpt2-amp.json", dir);
        ck_assert_int_eq(util_read_file(path, &mt, &err), UTIL_OK);
        put("gpt2-amp.json", mt);
        {
            FILE *f = fopen(path, "a");
            fputs("\n", f);
            fclose(f);
        }
        free(mt);
    }
    snprintf(path, sizeof path, "%s/plan.json", dir);
    ck_assert_int_eq(plan_load_plan(path, &d, &err), UTIL_OK);
    ck_assert_int_eq(d.digest_mismatch, 1);
    plan_doc_free(&d);

    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* A plan made at another precision than the model file's (--precision)
 * reloads the model at the plan's precision: same memory, same time. */
START_TEST(plan_precision_kept)
{
    static const int precs[2] = {FMT_PREC_BF16, FMT_PREC_FP32};
    int p;

    copy_example("amp-het.json");
    copy_example("gpt2-amp.json");
    for (p = 0; p < 2; p++) {
        search_result res;
        fmt_cluster c;
        fmt_model m;
        cost_params cp;
        plan_doc d;
        util_error err;
        cost_result a, b;
        char *text, path[512];
        int i, k;

        memset(&c, 0, sizeof c);
        memset(&m, 0, sizeof m);
        plan_precision = precs[p];
        text = make_plan("amp-het.json", &res, &c, &m, &cp);
        plan_precision = -1;
        {
            cJSON *doc = cJSON_Parse(text);
            const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "settings"),
                                                 "precision");
            ck_assert(cJSON_IsString(v));
            ck_assert_str_eq(v->valuestring, fmt_precision_name(precs[p]));
            cJSON_Delete(doc);
        }
        put("plan.json", text);
        free(text);
        snprintf(path, sizeof path, "%s/plan.json", dir);
        ck_assert_int_eq(plan_load_plan(path, &d, &err), UTIL_OK);
        ck_assert_int_eq(fmt_model_precision(&d.model), precs[p]);
        ck_assert_int_eq(d.model.dtype_bytes, m.dtype_bytes);
        ck_assert_int_eq(d.model.bf16, m.bf16);
        for (i = 0; i < m.nlayers; i++) {
            ck_assert(d.model.layers[i].act_bytes == m.layers[i].act_bytes);
            ck_assert(d.model.layers[i].out_bytes == m.layers[i].out_bytes);
        }
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &cp, &res.cands[0].s, &a, &err),
                         UTIL_OK);
        ck_assert_int_eq(cost_evaluate(&d.cluster, &d.model, NULL, &d.params, &d.s[0],
                                       &b, &err), UTIL_OK);
        ck_assert(fabs(a.iter_s - d.predicted_s[0]) <= 1e-9 * a.iter_s);
        ck_assert(fabs(b.iter_s - d.predicted_s[0]) <= 1e-9 * b.iter_s);
        for (k = 0; k < a.nranks; k++)
            ck_assert(fabs(a.mem_bytes[k] - b.mem_bytes[k]) <= 1e-9 * a.mem_bytes[k]);
        cost_result_free(&a);
        cost_result_free(&b);
        plan_doc_free(&d);
        search_result_free(&res);
        fmt_model_free(&m);
        fmt_cluster_free(&c);
    }
}
END_TEST

static void expect_fail(const char *text, int code, const char *jpath,
                        const char *needle)
{
    plan_doc d;
    util_error err;
    char path[512];

    put("bad.json", text);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(plan_load_plan(path, &d, &err), code);
    ck_assert_str_eq(err.file, path);
    ck_assert_msg(strcmp(err.path, jpath) == 0, "path '%s', want '%s'",
                  err.path, jpath);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'",
                  err.msg, needle);
    ck_assert_int_eq(d.n, 0);
    ck_assert_ptr_null(d.s);
}

START_TEST(bad_plans)
{
    plan_doc d;
    util_error err;

    copy_example("amp-het.json");
    copy_example("gpt2-amp.json");
    ck_assert_int_eq(plan_load_plan("/nonexistent/plan.json", &d, &err),
                     UTIL_EIO);
    expect_fail("{", UTIL_EPARSE, "", "malformed");
    expect_fail("{\"schema\":\"other/1\"}", UTIL_EFIELD, "schema",
                "hetplan-plan/1");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{},"
                "\"settings\":{\"global_batch\":32}}",
                UTIL_EFIELD, "inputs.cluster", "an object with a path");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"missing.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32}}",
                UTIL_EIO, "inputs.cluster.path", "missing.json");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":0}}",
                UTIL_EFIELD, "settings.global_batch", "positive integer");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32,"
                "\"cost_params\":{\"net_eff\":7}}}",
                UTIL_EINVAL, "settings.cost_params.net_eff", "got 7");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32},\"strategies\":[]}",
                UTIL_EFIELD, "strategies", "non-empty array");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32},\"strategies\":[{"
                "\"tp\":1,\"dp\":1,\"pp\":16,\"mbs\":1,"
                "\"stage_boundaries\":[0,1],"
                "\"ranks\":[]}]}",
                UTIL_EINVAL, "strategies[0].stage_boundaries", "17 entries");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32},\"strategies\":[{"
                "\"tp\":16,\"dp\":1,\"pp\":1,\"mbs\":1,"
                "\"stage_boundaries\":[0,30],"
                "\"ranks\":[{\"rank\":0}]}]}",
                UTIL_EFIELD, "strategies[0].ranks[0].device", "device index");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32,\"precision\":\"fp8\"}}",
                UTIL_EFIELD, "settings.precision", "got 'fp8'");
    expect_fail("{\"schema\":\"hetplan-plan/1\",\"inputs\":{"
                "\"cluster\":{\"path\":\"amp-het.json\"},"
                "\"model\":{\"path\":\"gpt2-amp.json\"}},"
                "\"settings\":{\"global_batch\":32,\"precision\":16}}",
                UTIL_EFIELD, "settings.precision", "got a number");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("planfile");
    TCase *tc = tcase_create("planfile");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, bad_plans);
    tcase_add_test(tc, plan_precision_kept);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
