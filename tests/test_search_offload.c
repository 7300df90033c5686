/* tests/test_search_offload.c: optimizer offload as a searched
 * dimension: chosen when a 13B model fits a small cluster no other way,
 * never searched without host memory or for a launcher that lacks it,
 * and left out where it only adds time. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "export.h"
#include "testutil.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* One node of 4 A100-40GB; host memory when host_gib > 0. */
static void cluster(fmt_cluster *c, double host_gib)
{
    char text[400];
    util_error err;

    snprintf(text, sizeof text,
             "{\"name\":\"small\",\"nodes\":[{\"name\":\"n\",\"device\":"
             "\"A100-40GB\",\"gpus\":4,\"intra_gbps\":2400,\"nic_gbps\":100%s%g}]}",
             host_gib > 0 ? ",\"host_memory_gib\":" : ",\"count\":",
             host_gib > 0 ? host_gib : 1.0);
    ck_assert_msg(fmt_parse_cluster(text, "c.json", c, &err) == UTIL_OK, "%s",
                  err.msg);
}

static void model(const char *path, fmt_model *m)
{
    util_error err;

    ck_assert_msg(fmt_load_model(path, m, &err) == UTIL_OK, "%s", err.msg);
}

static util_error last_err; /* of the last plan() */

/* search_plan_devices with batch gb, top_k 8; target >= 0 plans for that
 * launcher.  Returns the search's status. */
static int plan(const fmt_cluster *c, const fmt_model *m, int gb, int offload,
                int target, int version, search_result *res)
{
    cost_params cp;
    search_params sp;
    util_error err;

    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = gb;
    sp.top_k = 8;
    sp.offload = offload;
    if (target >= 0) {
        ck_assert_int_eq(export_target_caps(target, version, &sp.launcher, &err),
                         UTIL_OK);
        ck_assert_int_eq(search_launcher_params(&sp, &cp, &err), UTIL_OK);
    }
    memset(&last_err, 0, sizeof last_err);
    return search_plan_devices(c, m, NULL, &cp, &sp, res, &last_err);
}

/* llama2-13b in bf16 on 4 x 40 GB: 13e9 x (2 + 4) B of weights and
 * gradients = 78 GB (19.5 GB a GPU) fit, but the optimizer's 12 B per
 * parameter (156 GB, 39 GB a GPU even sharded 4 ways) do not; with
 * 512 GiB of host memory only offloaded plans run. */
START_TEST(chosen_when_nothing_else_fits)
{
    fmt_cluster host, bare;
    fmt_model m;
    search_result res;
    int i;

    cluster(&host, 512);
    cluster(&bare, 0);
    model(EX "llama2-13b.json", &m);
    ck_assert_int_eq(plan(&bare, &m, 8, -1, -1, 0, &res), UTIL_EINFEASIBLE);
    search_result_free(&res);
    ck_assert_int_eq(plan(&host, &m, 8, -1, -1, 0, &res), UTIL_OK);
    ck_assert_int_ge(res.n, 1);
    for (i = 0; i < res.n; i++) {
        ck_assert_int_eq(res.cands[i].s.offload, FMT_OFFLOAD_OPTIMIZER);
        ck_assert_int_ge(res.cands[i].s.zero, 1);
        ck_assert(res.cands[i].r.fits);
        ck_assert(res.cands[i].r.host_bytes <= res.cands[i].r.host_cap);
        /* the whole optimizer state is on the host: 12 B per parameter of
         * bf16 (fp32 master weights, m, v) */
        ck_assert_double_eq_tol(res.cands[i].r.host_bytes, 12.0 * 13.0e9, 0.03 * 12.0 * 13.0e9);
    }
    search_result_free(&res);
    /* offload ruled out: nothing fits, as without host memory */
    ck_assert_int_eq(plan(&host, &m, 8, FMT_OFFLOAD_NONE, -1, 0, &res),
                     UTIL_EINFEASIBLE);
    search_result_free(&res);
    /* 100 GiB of host memory holds no 156 GB of optimizer state */
    fmt_cluster_free(&host);
    cluster(&host, 100);
    ck_assert_int_eq(plan(&host, &m, 8, -1, -1, 0, &res), UTIL_EINFEASIBLE);
    search_result_free(&res);
    /* just short of the state (12 B x 13.0e9 = 145.3 GiB, 0.6% more with
     * the norms and embeddings): the closest plan fits its GPUs, and the
     * miss names the host */
    fmt_cluster_free(&host);
    cluster(&host, 145.3);
    ck_assert_int_eq(plan(&host, &m, 8, -1, -1, 0, &res), UTIL_EINFEASIBLE);
    ck_assert_msg(strstr(last_err.msg, "fits its GPUs but offloads 145.") != NULL &&
                      strstr(last_err.msg, "of optimizer state to node 'n', which has "
                                           "145.30 GiB of host memory") != NULL,
                  "%s", last_err.msg);
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&host);
    fmt_cluster_free(&bare);
}
END_TEST

/* Offload only adds time (transfers and a CPU step): a model that fits
 * keeps its optimizer on the GPU, with or without host memory. */
START_TEST(never_without_need_or_host_memory)
{
    fmt_cluster host, bare;
    fmt_model m;
    search_result res, res0;
    int i;

    cluster(&host, 512);
    cluster(&bare, 0);
    model(EX "gpt2-345m.json", &m);
    ck_assert_int_eq(plan(&bare, &m, 32, -1, -1, 0, &res0), UTIL_OK);
    for (i = 0; i < res0.n; i++)
        ck_assert_int_ne(res0.cands[i].s.offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert_int_eq(plan(&host, &m, 32, -1, -1, 0, &res), UTIL_OK);
    ck_assert_int_ne(res.cands[0].s.offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert_double_eq_tol(res.cands[0].r.iter_s, res0.cands[0].r.iter_s, 1e-12);
    search_result_free(&res);
    search_result_free(&res0);
    /* forced on, every plan offloads and is slower than the best without */
    ck_assert_int_eq(plan(&host, &m, 32, FMT_OFFLOAD_OPTIMIZER, -1, 0, &res), UTIL_OK);
    ck_assert_int_eq(plan(&bare, &m, 32, -1, -1, 0, &res0), UTIL_OK);
    for (i = 0; i < res.n; i++)
        ck_assert_int_eq(res.cands[i].s.offload, FMT_OFFLOAD_OPTIMIZER);
    ck_assert(res.cands[0].r.iter_s > res0.cands[0].r.iter_s);
    search_result_free(&res);
    search_result_free(&res0);
    fmt_model_free(&m);
    fmt_cluster_free(&host);
    fmt_cluster_free(&bare);
}
END_TEST

/* Megatron-LM core_r0.9.0 has no --optimizer-cpu-offload: planning for
 * it never offloads, core_v0.19.0 and DeepSpeed do. */
START_TEST(launcher_caps)
{
    fmt_cluster host;
    fmt_model m;
    search_result res;
    search_launcher lc;
    util_error err;

    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_OLD, &lc, &err),
                     UTIL_OK);
    ck_assert_int_eq(lc.no_offload, 1);
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW, &lc, &err),
                     UTIL_OK);
    ck_assert_int_eq(lc.no_offload, 0);
    ck_assert_int_eq(export_target_caps(EXPORT_DEEPSPEED, EXPORT_VERSION_OLD, &lc, &err),
                     UTIL_OK);
    ck_assert_int_eq(lc.no_offload, 0);
    cluster(&host, 512);
    model(EX "llama2-13b.json", &m);
    ck_assert_int_eq(plan(&host, &m, 8, -1, EXPORT_MEGATRON, EXPORT_VERSION_OLD, &res),
                     UTIL_EINFEASIBLE);
    search_result_free(&res);
    ck_assert_int_eq(plan(&host, &m, 8, -1, EXPORT_MEGATRON, EXPORT_VERSION_NEW, &res),
                     UTIL_OK);
    ck_assert_int_eq(res.cands[0].s.offload, FMT_OFFLOAD_OPTIMIZER);
    search_result_free(&res);
    ck_assert_int_eq(plan(&host, &m, 8, -1, EXPORT_DEEPSPEED, EXPORT_VERSION_NEW, &res),
                     UTIL_OK);
    ck_assert_int_eq(res.cands[0].s.offload, FMT_OFFLOAD_OPTIMIZER);
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&host);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("search_offload");
    TCase *tc = tcase_create("offload");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, chosen_when_nothing_else_fits);
    tcase_add_test(tc, never_without_need_or_host_memory);
    tcase_add_test(tc, launcher_caps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
