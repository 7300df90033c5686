/* tests/test_formats_ranges.c: every number read from an input file is
 * finite and within the range docs/inputs.md gives for its field, and the
 * error names the file, the JSON path, the value and the range, numbers
 * written as a user types them ("10000000", not "1e+07"). */
#include <check.h>
#include <math.h>
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

static void expect(int rc, const util_error *err, const char *file,
                   const char *path, const char *msg1, const char *msg2)
{
    ck_assert_msg(rc == UTIL_EFIELD, "rc %d: %s", rc, err->msg);
    ck_assert_str_eq(err->file, file);
    ck_assert_msg(strcmp(err->path, path) == 0, "path '%s', want '%s' (%s)",
                  err->path, path, err->msg);
    ck_assert_msg(strstr(err->msg, msg1) != NULL, "'%s' lacks '%s'", err->msg, msg1);
    ck_assert_msg(strstr(err->msg, msg2) != NULL, "'%s' lacks '%s'", err->msg, msg2);
}

/* A one-node cluster with field key of the node set to value. */
static int node_with(const char *key, const char *value, fmt_cluster *c,
                     util_error *err)
{
    static const char *const keys[] = {"gpus", "intra_gbps", "nic_gbps"};
    char text[512];
    size_t i, n;

    n = (size_t)snprintf(text, sizeof text, "{\"nodes\": [{\"name\": \"a\", "
                         "\"device\": \"T4\", \"%s\": %s", key, value);
    for (i = 0; i < 3; i++)
        if (strcmp(keys[i], key) != 0)
            n += (size_t)snprintf(text + n, sizeof text - n, ", \"%s\": 2", keys[i]);
    snprintf(text + n, sizeof text - n, "}]}");
    return fmt_parse_cluster(text, "c.json", c, err);
}

START_TEST(cluster_numbers)
{
    fmt_cluster c;
    util_error err;

    expect(node_with("nic_gbps", "1e308", &c, &err), &err, "c.json",
           "nodes[0].nic_gbps", "at most 10000000 Gbit/s", "got 1e+308");
    expect(node_with("intra_gbps", "1e999", &c, &err), &err, "c.json",
           "nodes[0].intra_gbps", "at most 10000000 Gbit/s", "got inf");
    expect(node_with("nic_latency_us", "1e300", &c, &err), &err, "c.json",
           "nodes[0].nic_latency_us", "at most 1000000000 us", "got 1e+300");
    expect(node_with("gpus", "100000", &c, &err), &err, "c.json",
           "nodes[0].gpus", "at most 65536", "got 100000");
    expect(fmt_parse_cluster("{\"device_types\": {\"X\": {\"memory_gib\": 1e300,"
                             " \"tflops_fp16\": 1, \"mem_bw_gbs\": 1}}, \"nodes\": ["
                             "{\"name\": \"a\", \"device\": \"X\", \"gpus\": 1,"
                             " \"intra_gbps\": 1, \"nic_gbps\": 1}]}",
                             "c.json", &c, &err),
           &err, "c.json", "device_types.X.memory_gib", "at most 1000000 GiB",
           "got 1e+300");
    expect(fmt_parse_cluster("{\"nodes\": [{\"name\": \"a\", \"device\": \"T4\","
                             " \"gpus\": 2, \"intra_gbps\": 1, \"nic_gbps\": 1}],"
                             " \"links\": [{\"a\": \"a:0\", \"b\": \"a:1\","
                             " \"gbps\": 1e20}]}", "c.json", &c, &err),
           &err, "c.json", "links[0].gbps", "at most 10000000 Gbit/s", "1e+20");
    /* the largest values allowed still load */
    ck_assert_int_eq(node_with("nic_latency_us", "1e9", &c, &err), UTIL_OK);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(model_and_profile_numbers)
{
    fmt_model m;
    fmt_profile pr;
    util_error err;

    expect(fmt_parse_model("{\"name\": \"g\", \"layers\": [{\"name\": \"l\","
                           " \"kind\": \"generic\", \"params\": 1e300,"
                           " \"fwd_flops\": 1, \"out_bytes\": 1, \"act_bytes\": 1}]}",
                           "m.json", &m, &err),
           &err, "m.json", "layers[0].params", "at most 1000000000000000", "got 1e+300");
    expect(fmt_parse_model("{\"name\": \"g\", \"transformer\": {\"layers\": 2,"
                           " \"hidden\": 100000000, \"heads\": 2, \"seq\": 8,"
                           " \"vocab\": 10}}", "m.json", &m, &err),
           &err, "m.json", "transformer.hidden", "at most 10000000", "got 100000000");
    ck_assert_int_eq(fmt_parse_model("{\"name\": \"g\", \"transformer\": {\"layers\": 2,"
                                     " \"hidden\": 64, \"heads\": 2, \"seq\": 8,"
                                     " \"vocab\": 10}}", "m.json", &m, &err), UTIL_OK);
    expect(fmt_parse_profile("{\"format\": \"hetplan-profile/1\", \"entries\": ["
                             "{\"device\": \"T4\", \"tp\": 1, \"mbs\": 1,"
                             " \"by_kind\": {\"transformer\": {\"fwd_ms\": 1e300}}}]}",
                             "p.json", &m, &pr, &err),
           &err, "p.json", "entries[0].by_kind.transformer.fwd_ms", "at most 1000000000 ms",
           "got 1e+300");
    fmt_model_free(&m);
}
END_TEST

START_TEST(plan_numbers)
{
    char dir[128], p[256];
    plan_doc d;
    util_error err;
    FILE *f;

    snprintf(dir, sizeof dir, "/tmp/hetplan_ranges_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    snprintf(p, sizeof p, "%s/plan.json", dir);
    f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("{\"schema\": \"hetplan-plan/1\", \"inputs\": {},"
          " \"settings\": {\"global_batch\": 1e300}}", f);
    fclose(f);
    expect(plan_load_plan(p, &d, &err), &err, p, "settings.global_batch",
           "at most 1000000000", "got 1e+300");
    tu_remove_tree(dir);
}
END_TEST

START_TEST(scenario_numbers)
{
    dtfm_input in;
    util_error err;

    expect(dtfm_parse("{\"regions\": [{\"name\": \"a\", \"gpus\": 2,"
                      " \"latency_ms\": 1e308, \"bandwidth_gbps\": 10}]}",
                      "d.json", NULL, &in, &err),
           &err, "d.json", "regions[0].latency_ms", "at most 1000000 ms", "1e+308");
    expect(dtfm_parse("{\"regions\": [{\"name\": \"a\", \"gpus\": 2,"
                      " \"latency_ms\": 1, \"bandwidth_gbps\": 1e999}]}",
                      "d.json", NULL, &in, &err),
           &err, "d.json", "regions[0].bandwidth_gbps", "at most 10000000 Gbit/s", "inf");
}
END_TEST

/* util_num_text: whole numbers in full, others in the fewest digits that
 * read back as the same double. */
START_TEST(number_text)
{
    char b[UTIL_NUM_N];

    ck_assert_str_eq(util_num_text(1e6, b, sizeof b), "1000000");
    ck_assert_str_eq(util_num_text(-4, b, sizeof b), "-4");
    ck_assert_str_eq(util_num_text(1e15, b, sizeof b), "1000000000000000");
    ck_assert_str_eq(util_num_text(1e-6, b, sizeof b), "0.000001");
    ck_assert_str_eq(util_num_text(0.1, b, sizeof b), "0.1");
    ck_assert_str_eq(util_num_text(2.5, b, sizeof b), "2.5");
    ck_assert_str_eq(util_num_text(123456789.125, b, sizeof b), "123456789.125");
    ck_assert_str_eq(util_num_text(1e20, b, sizeof b), "1e+20");
    ck_assert_str_eq(util_num_text(1e-300, b, sizeof b), "1e-300");
    ck_assert_str_eq(util_num_text(INFINITY, b, sizeof b), "inf");
}
END_TEST

/* A value of the wrong sign is told the whole range, as a too large one. */
START_TEST(sign_errors_give_the_range)
{
    fmt_cluster c;
    util_error err;

    expect(node_with("gpus", "-4", &c, &err), &err, "c.json", "nodes[0].gpus",
           "expected a positive integer of at most 65536", "got -4");
    expect(node_with("nic_gbps", "0", &c, &err), &err, "c.json", "nodes[0].nic_gbps",
           "at least 0.000001 and at most 10000000 Gbit/s", "got 0");
    expect(node_with("nic_latency_us", "-1", &c, &err), &err, "c.json",
           "nodes[0].nic_latency_us", "non-negative number of at most 1000000000 us",
           "got -1");
}
END_TEST

int main(void)
{
    Suite *su = suite_create("formats_ranges");
    TCase *tc = tcase_create("ranges");

    tcase_add_test(tc, cluster_numbers);
    tcase_add_test(tc, model_and_profile_numbers);
    tcase_add_test(tc, plan_numbers);
    tcase_add_test(tc, scenario_numbers);
    tcase_add_test(tc, number_text);
    tcase_add_test(tc, sign_errors_give_the_range);
    suite_add_tcase(su, tc);
    return tu_run(su);
}
