/* tests/test_formats_offload.c: the host side of a cluster node
 * (host_memory_gib, host_bw_gbps, pcie_gbps) and a strategy's "offload"
 * read with their units, bad values rejected with located messages. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "testutil.h"

/* A one-node cluster whose node carries extra ("" for none). */
static int parse(const char *extra, fmt_cluster *c, util_error *err)
{
    char text[400];

    snprintf(text, sizeof text,
             "{\"name\":\"h\",\"nodes\":[{\"name\":\"n\",\"device\":\"A100-80GB\","
             "\"gpus\":2,\"intra_gbps\":100,\"nic_gbps\":100%s}]}", extra);
    memset(err, 0, sizeof *err);
    return fmt_parse_cluster(text, "h.json", c, err);
}

START_TEST(host_fields_read)
{
    fmt_cluster c;
    util_error err;

    ck_assert_int_eq(parse(",\"host_memory_gib\":512,\"host_bw_gbps\":3200,"
                           "\"pcie_gbps\":200,\"count\":2", &c, &err), UTIL_OK);
    ck_assert_int_eq(c.nnodes, 2);
    /* 512 GiB = 512 x 2^30 B; 3200 Gbit/s = 400 GB/s; 200 Gbit/s = 25 GB/s */
    ck_assert_double_eq_tol(c.nodes[1].host_mem, 512.0 * 1073741824.0, 1.0);
    ck_assert_double_eq_tol(c.nodes[1].host_bw, 400e9, 1.0);
    ck_assert_double_eq_tol(c.nodes[1].pcie_bw, 25e9, 1.0);
    fmt_cluster_free(&c);
    ck_assert_int_eq(parse("", &c, &err), UTIL_OK);
    ck_assert(c.nodes[0].host_mem == 0.0 && c.nodes[0].host_bw == 0.0 &&
              c.nodes[0].pcie_bw == 0.0); /* not given */
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(host_fields_rejected)
{
    static const struct {
        const char *extra, *path, *msg;
    } bad[] = {
        {",\"host_memory_gib\":-1", "nodes[0].host_memory_gib", "positive"},
        {",\"host_memory_gib\":0", "nodes[0].host_memory_gib", "positive"},
        {",\"host_memory_gib\":\"512\"", "nodes[0].host_memory_gib", "number"},
        /* bytes where GiB belong */
        {",\"host_memory_gib\":549755813888", "nodes[0].host_memory_gib", "at most 1000000 GiB, got 549755813888"},
        {",\"host_bw_gbps\":0", "nodes[0].host_bw_gbps", "positive"},
        {",\"pcie_gbps\":-25", "nodes[0].pcie_gbps", "positive"},
        {",\"pcie_gbps\":1e9", "nodes[0].pcie_gbps", "at most 10000000 Gbit/s"},
        {",\"pcie_gbps\":1e-300", "nodes[0].pcie_gbps", "at least 0.000001"},
    };
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fmt_cluster c;
        util_error err;
        ck_assert_int_ne(parse(bad[i].extra, &c, &err), UTIL_OK);
        ck_assert_str_eq(err.file, "h.json");
        ck_assert_msg(strcmp(err.path, bad[i].path) == 0, "%s: path '%s'",
                      bad[i].extra, err.path);
        ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "%s: '%s'", bad[i].extra,
                      err.msg);
    }
}
END_TEST

START_TEST(strategy_offload)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy *v = NULL;
    util_error err;
    int n = 0;

    tu_parse_inputs(tu_two_nodes_json, tu_gpt2_small4_json, &c, &m);
    ck_assert_int_ne(fmt_parse_strategies(
                         "{\"strategies\":[{\"tp\":1,\"dp\":4,\"pp\":1,\"mbs\":1,"
                         "\"offload\":\"gpu\",\"stage_boundaries\":[0,7]}]}",
                         "s.json", &c, &m, 8, &v, &n, &err),
                     UTIL_OK);
    ck_assert_str_eq(err.path, "strategies[0].offload");
    ck_assert_ptr_nonnull(strstr(err.msg, "'none' or 'optimizer', got 'gpu'"));
    ck_assert_int_eq(fmt_offload_from_name("optimizer"), FMT_OFFLOAD_OPTIMIZER);
    ck_assert_int_eq(fmt_offload_from_name("none"), FMT_OFFLOAD_NONE);
    ck_assert_int_eq(fmt_offload_from_name("cpu"), -1);
    ck_assert_ptr_null(fmt_offload_name(2));
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("formats_offload");
    TCase *tc = tcase_create("offload");

    tcase_add_test(tc, host_fields_read);
    tcase_add_test(tc, host_fields_rejected);
    tcase_add_test(tc, strategy_offload);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
