/* tests/test_search_space.c: the strategy space of the enumeration
 * (training features, divisors), its lower-bound pruning against the
 * exhaustive search, and rounding of the global batch. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "tp_cli.h"

static void load(const char *cluster, const char *model, fmt_cluster *c,
                 fmt_model *m)
{
    char p[512];
    util_error err;

    snprintf(p, sizeof p, "%s/examples/%s.json", HETPLAN_SOURCE_DIR, cluster);
    ck_assert_int_eq(fmt_load_cluster(p, c, &err), UTIL_OK);
    snprintf(p, sizeof p, "%s/examples/%s.json", HETPLAN_SOURCE_DIR, model);
    ck_assert_int_eq(fmt_load_model(p, m, &err), UTIL_OK);
}

static int same_strategy(const fmt_strategy *a, const fmt_strategy *b)
{
    int n = a->tp * a->dp * a->pp;

    return a->tp == b->tp && a->dp == b->dp && a->pp == b->pp &&
           a->mbs == b->mbs && a->vpp == b->vpp && a->sp == b->sp &&
           a->recompute == b->recompute && a->zero == b->zero &&
           memcmp(a->bounds, b->bounds, (size_t)(a->pp + 1) * sizeof *a->bounds) == 0 &&
           memcmp(a->ranks, b->ranks, (size_t)n * sizeof *a->ranks) == 0;
}

/* The pruned search returns exactly what scoring every point returns
 * (the brute force over the same space), with fewer scored. */
static long pruned_equals_exhaustive(const char *cluster, const char *model,
                                     int batch)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result a, b;
    util_error err;
    int i;

    load(cluster, model, &c, &m);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = batch;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &a, &err), UTIL_OK);
    sp.exhaustive = 1;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &b, &err), UTIL_OK);
    ck_assert_int_eq(a.n, b.n);
    for (i = 0; i < a.n; i++) {
        ck_assert_msg(same_strategy(&a.cands[i].s, &b.cands[i].s),
                      "%s + %s: rank %d differs", cluster, model, i);
        ck_assert_double_eq(a.cands[i].r.iter_s, b.cands[i].r.iter_s);
    }
    ck_assert_int_eq(b.pruned, 0);
    ck_assert_int_le(a.evaluated, b.evaluated);
    ck_assert_int_eq(a.space, b.space);
    i = (int)(b.evaluated - a.evaluated);
    search_result_free(&a);
    search_result_free(&b);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return i;
}

START_TEST(test_pruning_is_exact)
{
    long saved = 0;

    saved += pruned_equals_exhaustive("amp-het", "gpt2-amp", 32);
    saved += pruned_equals_exhaustive("mixed-generations", "gpt2-345m", 64);
    saved += pruned_equals_exhaustive("amp-homogeneous", "gpt2-amp", 32);
    saved += pruned_equals_exhaustive("mixed-generations", "llama-7b", 64);
    /* the bound must spare work somewhere, or it tests nothing */
    ck_assert_int_gt(saved, 0);
}
END_TEST

/* Searching the features can only improve on fixing them (the fixed
 * space is a subset), and a fixed feature is what every strategy uses. */
START_TEST(test_features_superset)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result fixed, all;
    util_error err;
    int i;

    load("mixed-generations", "gpt2-345m", &c, &m);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 64;
    ck_assert_int_eq(sp.recompute, -1);
    ck_assert_int_eq(sp.zero, -1);
    ck_assert_int_eq(sp.seq_par, -1);
    ck_assert_int_eq(sp.vpp, 0);
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &all, &err), UTIL_OK);
    sp.recompute = FMT_RECOMPUTE_FULL;
    sp.zero = 1;
    sp.seq_par = 0;
    sp.vpp = 1;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &fixed, &err), UTIL_OK);
    for (i = 0; i < fixed.n; i++) {
        const fmt_strategy *s = &fixed.cands[i].s;
        ck_assert_int_eq(s->recompute, FMT_RECOMPUTE_FULL);
        ck_assert_int_eq(s->zero, 1);
        ck_assert_int_eq(s->sp, 0);
        ck_assert_int_eq(s->vpp, 1);
    }
    ck_assert(all.cands[0].r.iter_s <= fixed.cands[0].r.iter_s);
    for (i = 0; i < all.n; i++) { /* what the search states is valid */
        const fmt_strategy *s = &all.cands[i].s;
        ck_assert(s->sp == 0 || s->tp > 1);
        ck_assert(s->zero == 0 || s->dp > 1);
        ck_assert(s->vpp == 1 || (s->pp >= 2 && s->gas % s->pp == 0));
        ck_assert_int_eq(fmt_strategy_check(&c, &m, s, 64, &err), UTIL_OK);
    }
    search_result_free(&all);
    search_result_free(&fixed);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Interleaving fixed at 2: every device holds a multiple of 2 blocks. */
START_TEST(test_vpp_chunks)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result r;
    util_error err;
    int i, j, l;

    load("amp-homogeneous", "gpt2-345m", &c, &m);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 64;
    sp.vpp = 2;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_OK);
    ck_assert_int_gt(r.n, 0);
    for (i = 0; i < r.n; i++) {
        const fmt_strategy *s = &r.cands[i].s;
        ck_assert_int_eq(s->vpp, 2);
        for (j = 0; j < s->pp; j++) {
            int blocks = 0;
            for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
                blocks += m.layers[l].kind == FMT_KIND_TRANSFORMER;
            ck_assert_msg(blocks % 2 == 0, "stage %d holds %d blocks", j, blocks);
        }
    }
    search_result_free(&r);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* The cluster document (file names it in errors) and a two-layer GPT-2
 * of global batch gb (tiny.json) parsed; parameters at their defaults,
 * the search's global batch gb. */
static void tiny_inputs(const char *cluster, const char *file, int gb,
                        fmt_cluster *c, fmt_model *m, cost_params *cp,
                        search_params *sp)
{
    char model[256];
    util_error err;

    snprintf(model, sizeof model,
             "{\"name\":\"tiny\",\"training\":{\"global_batch\":%d},\"transformer\":"
             "{\"family\":\"gpt2\",\"layers\":2,\"hidden\":1024,\"heads\":16,"
             "\"seq\":1024,\"vocab\":50257}}", gb);
    ck_assert_int_eq(fmt_parse_cluster(cluster, file, c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(model, "tiny.json", m, &err), UTIL_OK);
    cost_params_init(cp);
    search_params_init(sp);
    sp->global_batch = gb;
}

/* A prime GPU count (7 single-GPU nodes) and a prime batch (31): dp must
 * divide both, so dp = 1; tp = 7 does not divide 16 heads and 7 stages
 * exceed the 5 layers holding parameters (embedding, 2 blocks, norm,
 * head).  Nothing runs 31 samples.  Within 10% (28 to 34), 28 = 4 * 7 is
 * the only multiple of 7: dp = 7 runs it. */
START_TEST(test_batch_tolerance_prime)
{
    static const char cluster[] =
        "{\"name\":\"prime\",\"nodes\":[{\"name\":\"n\",\"count\":7,"
        "\"device\":\"A100-80GB\",\"gpus\":1,\"intra_gbps\":2400,\"nic_gbps\":200}]}";
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result r;
    util_error err;

    tiny_inputs(cluster, "prime.json", 31, &c, &m, &cp, &sp);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_EINFEASIBLE);
    ck_assert(err.msg[0] != '\0');
    sp.batch_tolerance = 0.10;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_OK);
    ck_assert_int_eq(r.global_batch, 28);
    ck_assert_double_eq(r.exact_samples_s, 0.0);
    ck_assert_int_eq(r.cands[0].s.dp, 7);
    ck_assert_int_eq(r.cands[0].s.dp * r.cands[0].s.mbs * r.cands[0].s.gas, 28);
    search_result_free(&r);
    /* 5% (29.45 to 32.55) holds no multiple of 7: still nothing */
    sp.batch_tolerance = 0.05;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_EINFEASIBLE);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* A batch with a rounded neighbour: the one kept has the most samples per
 * second of the exact batch and the candidates, each searched alone. */
START_TEST(test_batch_tolerance_best)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result r, x;
    util_error err;
    static const int tries[] = {30, 32};
    double best = 0.0, got;
    int i, arg = -1;

    load("amp-het", "gpt2-amp", &c, &m);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 30;
    sp.batch_tolerance = 0.10; /* 27..33: 32 = 2 * 16 is the candidate of
                                  the GPU count's largest divisors */
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_OK);
    got = r.global_batch / r.cands[0].r.iter_s;
    sp.batch_tolerance = 0.0;
    for (i = 0; i < 2; i++) {
        sp.global_batch = tries[i];
        ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &x, &err), UTIL_OK);
        if (tries[i] / x.cands[0].r.iter_s > best * (1.0 + 1e-9)) {
            best = tries[i] / x.cands[0].r.iter_s;
            arg = tries[i];
        }
        search_result_free(&x);
    }
    ck_assert_int_eq(r.global_batch, arg);
    ck_assert_double_eq_tol(got, best, 1e-9 * best);
    if (r.global_batch != 30)
        ck_assert(r.exact_samples_s > 0.0 && r.exact_samples_s < got);
    search_result_free(&r);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Beyond the documented limit the search refuses at once, saying so. */
START_TEST(test_device_limit)
{
    char cluster[256];
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result r;
    util_error err;

    /* 16,385 nodes of 8: 131,080 GPUs, 8 over SEARCH_MAX_DEVICES */
    snprintf(cluster, sizeof cluster,
             "{\"name\":\"huge\",\"nodes\":[{\"name\":\"n\",\"count\":%d,"
             "\"device\":\"A100-80GB\",\"gpus\":8,\"intra_gbps\":2400,"
             "\"nic_gbps\":200}]}", SEARCH_MAX_DEVICES / 8 + 1);
    tiny_inputs(cluster, "huge.json", 64, &c, &m, &cp, &sp);
    ck_assert_int_eq(c.ndevices, 131080);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "131080 GPUs"));
    ck_assert_ptr_nonnull(strstr(err.msg, "131072"));
    ck_assert_str_eq(err.file, ""); /* no cluster_file given */
    /* with the file's path: the error is located there */
    sp.cluster_file = "huge.json";
    sp.model_file = "tiny.json";
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.file, "huge.json");
    ck_assert_ptr_nonnull(strstr(err.msg, "cluster 'huge' has 131080 GPUs"));
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* planner plan: fixed features are what every strategy states, and a
 * rounded batch is recorded in the plan and said on stderr. */
START_TEST(test_cli_options)
{
    static const char *const fixed[] = {
        "plan", "--cluster", HETPLAN_SOURCE_DIR "/examples/amp-het.json",
        "--model", HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json",
        "--recompute-level", "selective", "--zero", "1", "--vpp", "1",
        "--sequence-parallel", "off", "--format", "json", NULL};
    static const char *const rounded[] = {
        "plan", "--cluster", HETPLAN_SOURCE_DIR "/examples/amp-het.json",
        "--model", HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json",
        "--global-batch", "31", "--batch-tolerance", "5", "--format", "json", NULL};
    static const char *const bad[] = {
        "plan", "--cluster", HETPLAN_SOURCE_DIR "/examples/amp-het.json",
        "--model", "tiny.json", "--batch-tolerance", "lots", NULL};
    tp_run_out r;
    cJSON *doc, *st, *e, *set;

    tp_setup();
    tp_run(&r, fixed);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    st = cJSON_GetObjectItem(doc, "strategies");
    ck_assert_int_gt(cJSON_GetArraySize(st), 0);
    cJSON_ArrayForEach(e, st) {
        ck_assert_str_eq(cJSON_GetObjectItem(e, "recompute")->valuestring, "selective");
        ck_assert_int_eq(cJSON_GetObjectItem(e, "zero")->valueint, 1);
        ck_assert_int_eq(cJSON_GetObjectItem(e, "vpp")->valueint, 1);
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(e, "sequence_parallel")));
    }
    cJSON_Delete(doc);
    tp_run_free(&r);

    /* 31 within 5% (29.45 to 32.55): 32, a multiple of the 16 GPUs, runs
     * with more samples per second on amp-het (test_batch_tolerance_best
     * compares each batch searched alone) */
    tp_run(&r, rounded);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    set = cJSON_GetObjectItem(doc, "settings");
    ck_assert_ptr_nonnull(set);
    ck_assert_int_eq(cJSON_GetObjectItem(set, "global_batch")->valueint, 32);
    ck_assert_int_eq(cJSON_GetObjectItem(set, "requested_global_batch")->valueint, 31);
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(set, "batch_note")->valuestring,
                                 "more samples per second"));
    ck_assert_ptr_nonnull(strstr(r.err, "global batch 32 used instead of 31"));
    cJSON_Delete(doc);
    tp_run_free(&r);

    {   /* 24 blocks never split into chunks of 7: a bad option value, exit 2,
         * naming the divisors of 24 that leave >= 2 chunks: 1, 2, 3, 4, 6, 8, 12 */
        static const char *const vpp7[] = {
            "plan", "--cluster", HETPLAN_SOURCE_DIR "/examples/amp-het.json",
            "--model", HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", "--vpp", "7",
            NULL};
        tp_run(&r, vpp7);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "option '--vpp'"));
        ck_assert_ptr_nonnull(strstr(r.err, "24 transformer blocks"));
        ck_assert_ptr_nonnull(strstr(r.err, "one of 1, 2, 3, 4, 6, 8, 12), got 7"));
        ck_assert_ptr_nonnull(strstr(r.err, "try 'planner plan --help'"));
        tp_run_free(&r);
    }
    tp_write("tiny.json", "{\"name\":\"tiny\",\"training\":{\"global_batch\":8},"
                          "\"transformer\":{\"family\":\"gpt2\",\"layers\":2,"
                          "\"hidden\":256,\"heads\":4,\"seq\":128,\"vocab\":1000}}");
    tp_run(&r, bad);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--batch-tolerance"));
    tp_run_free(&r);
    tp_teardown();
}
END_TEST

static Suite *space_suite(void)
{
    Suite *s = suite_create("space");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_pruning_is_exact);
    tcase_add_test(tc, test_features_superset);
    tcase_add_test(tc, test_vpp_chunks);
    tcase_add_test(tc, test_batch_tolerance_prime);
    tcase_add_test(tc, test_batch_tolerance_best);
    tcase_add_test(tc, test_device_limit);
    tcase_add_test(tc, test_cli_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(space_suite());
}
