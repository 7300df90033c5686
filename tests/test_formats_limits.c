/* tests/test_formats_limits.c: the limits of docs/limits.md on the lists
 * an input file may grow (strategies, trials, device types, links,
 * prices, profile entries, freeze phases), each read at its limit and
 * refused one past it with its located message; and the link overrides
 * found through the cluster's index as the rule of docs/inputs.md says. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "replan.h"
#include "testutil.h"

static char dir[256];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_limits_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

/* The text of b, failing the test when it could not be built. */
static char *take(util_buf *b)
{
    char *t = util_buf_take(b);

    ck_assert_ptr_nonnull(t);
    return t;
}

/* An error holding path and both fragments (frag2 may be NULL). */
static void expect_error(int rc, const util_error *err, const char *file,
                         const char *path, const char *frag1, const char *frag2)
{
    ck_assert_msg(rc != UTIL_OK, "accepted, want '%s'", frag1);
    ck_assert_str_eq(err->file, file);
    ck_assert_str_eq(err->path, path);
    ck_assert_msg(strstr(err->msg, frag1) != NULL, "msg lacks '%s': %s", frag1, err->msg);
    if (frag2 != NULL)
        ck_assert_msg(strstr(err->msg, frag2) != NULL, "msg lacks '%s': %s", frag2,
                      err->msg);
}

static void cluster_of(fmt_cluster *c, int gpus)
{
    char text[256];
    util_error err;

    snprintf(text, sizeof text, "{\"nodes\": [{\"name\": \"a\", \"device\": \"A100-80GB\", "
             "\"gpus\": %d, \"intra_gbps\": 2400, \"nic_gbps\": 200}]}", gpus);
    ck_assert_msg(fmt_parse_cluster(text, "c.json", c, &err) == UTIL_OK, "%s", err.msg);
}

/* A model of n identical layers, global batch 1024. */
static void model_of(fmt_model *m, int n)
{
    char text[256];
    util_error err;

    snprintf(text, sizeof text, "{\"name\": \"m\", \"training\": {\"global_batch\": 1024}, "
             "\"layers\": [{\"name\": \"l\", \"kind\": \"generic\", \"repeat\": %d, "
             "\"params\": 1000, \"fwd_flops\": 1e6, \"out_bytes\": 1000, "
             "\"act_bytes\": 1000}]}", n);
    ck_assert_msg(fmt_parse_model(text, "m.json", m, &err) == UTIL_OK, "%s", err.msg);
}

/* n copies of one strategy (data parallel over all gpus, one stage of
 * layers layers), extra appended to each (e.g. a measured time). */
static char *strategies_text(int n, int gpus, int layers, const char *extra)
{
    util_buf b = {0};
    int i;

    util_buf_printf(&b, "{\"strategies\": [");
    for (i = 0; i < n; i++)
        util_buf_printf(&b, "%s{\"tp\": 1, \"dp\": %d, \"pp\": 1, \"mbs\": 1, "
                        "\"stage_boundaries\": [0, %d]%s}", i ? ", " : "", gpus, layers,
                        extra);
    util_buf_printf(&b, "]}");
    return take(&b);
}

/* Parse n strategies for c and m: the status; *got the count read. */
static int parse_n(int n, const fmt_cluster *c, const fmt_model *m, util_error *err,
                   int *got)
{
    char *text = strategies_text(n, c->ndevices, m->nlayers, "");
    fmt_strategy *s = NULL;
    int rc, i;

    *got = 0;
    rc = fmt_parse_strategies(text, "s.json", c, m, 1024, &s, got, err);
    for (i = 0; i < *got; i++)
        fmt_strategy_free(&s[i]);
    free(s);
    free(text);
    return rc;
}

/* 10,000 strategies (FMT_MAX_STRATEGIES) are read, 10,001 refused before
 * any is; on 2 GPUs and 26 layers the products stay below their limit. */
START_TEST(strategies_in_a_file)
{
    fmt_cluster c;
    fmt_model m;
    util_error err;
    int got;

    ck_assert_int_eq(FMT_MAX_STRATEGIES, 10000);
    cluster_of(&c, 2);
    model_of(&m, 26);
    ck_assert_int_eq(parse_n(10000, &c, &m, &err, &got), UTIL_OK);
    ck_assert_int_eq(got, 10000);
    expect_error(parse_n(10001, &c, &m, &err, &got), &err, "s.json", "strategies",
                 "expected at most 10000 strategies, got 10001", NULL);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Each strategy's plan lists every GPU and every layer: strategies x
 * GPUs and strategies x layers are at most 2^18 (262,144) each. */
START_TEST(strategies_times_gpus_and_layers)
{
    fmt_cluster c, big;
    fmt_model m, wide;
    util_error err;
    char text[256];
    int got;

    ck_assert_int_eq(FMT_MAX_STRATEGY_ENTRIES, 262144);
    cluster_of(&c, 1024);
    model_of(&m, 2);
    ck_assert_int_eq(parse_n(256, &c, &m, &err, &got), UTIL_OK);
    ck_assert_int_eq(got, 256);
    expect_error(parse_n(257, &c, &m, &err, &got), &err, "s.json", "strategies",
                 "expected at most 256 strategies for the cluster's 1024 GPUs "
                 "(strategies x GPUs at most 262144), got 257", NULL);
    fmt_cluster_free(&c);
    cluster_of(&c, 2);
    model_of(&wide, 1024);
    ck_assert_int_eq(parse_n(256, &c, &wide, &err, &got), UTIL_OK);
    expect_error(parse_n(257, &c, &wide, &err, &got), &err, "s.json", "strategies",
                 "expected at most 256 strategies for the model's 1024 layers "
                 "(strategies x layers at most 262144), got 257", NULL);
    /* one strategy on 262,144 GPUs is the most; 262,145 are too many */
    snprintf(text, sizeof text, "{\"nodes\": [{\"name\": \"a\", \"count\": 4, \"device\": "
             "\"A100-80GB\", \"gpus\": 65536, \"intra_gbps\": 2400, \"nic_gbps\": 200}, "
             "{\"name\": \"b\", \"device\": \"A100-80GB\", \"gpus\": 1, "
             "\"intra_gbps\": 2400, \"nic_gbps\": 200}]}");
    ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &big, &err), UTIL_OK);
    ck_assert_int_eq(big.ndevices, 262145);
    expect_error(parse_n(1, &big, &m, &err, &got), &err, "s.json", "strategies",
                 "expected a cluster of at most 262144 GPUs and a model of at most "
                 "262144 layers for strategies", "got 262145 GPUs and 2 layers");
    fmt_cluster_free(&big);
    fmt_model_free(&wide);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* A trials file holds at most 1,000 trials (FMT_MAX_TRIALS). */
START_TEST(trials_in_a_file)
{
    fmt_cluster c;
    fmt_model m;
    fmt_trial_set ts;
    util_error err;
    char path[512];
    char *text;

    ck_assert_int_eq(FMT_MAX_TRIALS, 1000);
    cluster_of(&c, 2);
    model_of(&m, 4);
    snprintf(path, sizeof path, "%s/t.json", dir);
    text = strategies_text(1000, 2, 4, ", \"measured_s\": 1.5");
    tu_put(dir, "t.json", text);
    free(text);
    ck_assert_msg(fmt_load_trials(path, 0, &c, &m, 0, &ts, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(ts.n, 1000);
    fmt_trial_set_free(&ts);
    text = strategies_text(1001, 2, 4, ", \"measured_s\": 1.5");
    tu_put(dir, "t.json", text);
    free(text);
    expect_error(fmt_load_trials(path, 0, &c, &m, 0, &ts, &err), &err, path,
                 "strategies", "expected at most 1000 trials, got 1001", NULL);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* n device types T000.. (and, with nodes, one node using each; with
 * prices, a price for each of nprices names). */
static char *types_text(int n, int nodes, int nprices)
{
    util_buf b = {0};
    int i;

    util_buf_printf(&b, "{\"device_types\": {");
    for (i = 0; i < n; i++)
        util_buf_printf(&b, "%s\"T%03d\": {\"memory_gib\": 80, \"tflops_fp16\": 300, "
                        "\"mem_bw_gbs\": 2000}", i ? ", " : "", i);
    util_buf_printf(&b, "}, \"nodes\": [");
    for (i = 0; i < (nodes ? n : 1); i++)
        util_buf_printf(&b, "%s{\"name\": \"n%d\", \"device\": \"T%03d\", \"gpus\": 1, "
                        "\"intra_gbps\": 100, \"nic_gbps\": 100}", i ? ", " : "", i, i);
    util_buf_printf(&b, "], \"prices\": {");
    for (i = 0; i < nprices; i++)
        util_buf_printf(&b, "%s\"T%03d\": 2.5", i ? ", " : "", i);
    util_buf_printf(&b, "}}");
    return take(&b);
}

/* device_types and prices: 256 entries (FMT_MAX_DEVICE_TYPES) each. */
START_TEST(device_types_and_prices)
{
    fmt_cluster c;
    util_error err;
    char *text;

    ck_assert_int_eq(FMT_MAX_DEVICE_TYPES, 256);
    text = types_text(256, 1, 256);
    ck_assert_msg(fmt_parse_cluster(text, "c.json", &c, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(c.ntypes, 256);
    ck_assert_ptr_nonnull(c.price);
    ck_assert_double_eq(c.price[255], 2.5);
    fmt_cluster_free(&c);
    free(text);
    text = types_text(257, 0, 0);
    expect_error(fmt_parse_cluster(text, "c.json", &c, &err), &err, "c.json",
                 "device_types", "expected at most 256 device types, got 257", NULL);
    free(text);
    text = types_text(256, 1, 257);
    expect_error(fmt_parse_cluster(text, "c.json", &c, &err), &err, "c.json", "prices",
                 "expected at most 256 prices (one per device type), got 257", NULL);
    free(text);
}
END_TEST

/* n links between the GPUs of 256 nodes of 8. */
static char *links_text(int n)
{
    util_buf b = {0};
    int i;

    util_buf_printf(&b, "{\"nodes\": [{\"name\": \"n\", \"count\": 256, \"device\": "
                    "\"A100-80GB\", \"gpus\": 8, \"intra_gbps\": 2400, \"nic_gbps\": 200}],"
                    " \"links\": [");
    for (i = 0; i < n; i++)
        util_buf_printf(&b, "%s{\"a\": \"n-%d:%d\", \"b\": \"n-%d:%d\", \"gbps\": %d}",
                        i ? ", " : "", i % 256, (i / 256) % 8, (i * 7 + 1) % 256,
                        (i / 2048) % 8, 10 + i % 90);
    util_buf_printf(&b, "]}");
    return take(&b);
}

/* links: 131,072 (FMT_MAX_LINKS). */
START_TEST(links_in_a_cluster)
{
    fmt_cluster c;
    util_error err;
    char *text;

    ck_assert_int_eq(FMT_MAX_LINKS, 131072);
    text = links_text(131072);
    ck_assert_msg(fmt_parse_cluster(text, "c.json", &c, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(c.nlinks, 131072);
    fmt_cluster_free(&c);
    free(text);
    text = links_text(131073);
    expect_error(fmt_parse_cluster(text, "c.json", &c, &err), &err, "c.json", "links",
                 "expected at most 131072 links, got 131073", NULL);
    free(text);
}
END_TEST

/* n profile entries (tp 1..64 x mbs 1..) of T4 by layer kind. */
static char *profile_text(int n)
{
    util_buf b = {0};
    int i;

    util_buf_printf(&b, "{\"format\": \"hetplan-profile/1\", \"entries\": [");
    for (i = 0; i < n; i++)
        util_buf_printf(&b, "%s{\"device\": \"T4\", \"tp\": %d, \"mbs\": %d, \"by_kind\": "
                        "{\"generic\": {\"fwd_ms\": 1, \"bwd_ms\": 2}}}", i ? ", " : "",
                        1 + i % 64, 1 + i / 64);
    util_buf_printf(&b, "]}");
    return take(&b);
}

/* Profile entries: 4,096 (FMT_MAX_PROFILE_ENTRIES); entries x model
 * layers at most 2^24 (every entry holds a time per layer). */
START_TEST(profile_entries)
{
    fmt_model m, wide;
    fmt_profile pr;
    util_error err;
    char *text;

    ck_assert_int_eq(FMT_MAX_PROFILE_ENTRIES, 4096);
    ck_assert_int_eq(FMT_MAX_PROFILE_TIMES, 16777216);
    model_of(&m, 2);
    text = profile_text(4096);
    ck_assert_msg(fmt_parse_profile(text, "p.json", &m, &pr, &err) == UTIL_OK, "%s",
                  err.msg);
    ck_assert_int_eq(pr.nentries, 4096);
    fmt_profile_free(&pr);
    free(text);
    text = profile_text(4097);
    expect_error(fmt_parse_profile(text, "p.json", &m, &pr, &err), &err, "p.json",
                 "entries", "expected at most 4096 entries, got 4097", NULL);
    free(text);
    model_of(&wide, 8192); /* 2,048 entries x 8,192 layers = 2^24 */
    text = profile_text(2048);
    ck_assert_msg(fmt_parse_profile(text, "p.json", &wide, &pr, &err) == UTIL_OK, "%s",
                  err.msg);
    fmt_profile_free(&pr);
    free(text);
    text = profile_text(2049);
    expect_error(fmt_parse_profile(text, "p.json", &wide, &pr, &err), &err, "p.json",
                 "entries", "expected at most 2048 entries for the model's 8192 layers "
                 "(entries x layers at most 16777216), got 2049", NULL);
    free(text);
    fmt_model_free(&wide);
    fmt_model_free(&m);
}
END_TEST

static char *phases_text(int n)
{
    util_buf b = {0};
    int i;

    util_buf_printf(&b, "{\"epochs\": [");
    for (i = 0; i < n; i++)
        util_buf_printf(&b, "%s{\"epoch\": %d, \"frozen\": %d}", i ? ", " : "", i,
                        i / 512);
    util_buf_printf(&b, "]}");
    return take(&b);
}

/* A freeze schedule: 1,024 phases (REPLAN_MAX_PHASES), each re-planned. */
START_TEST(freeze_phases)
{
    replan_freeze f;
    util_error err;
    char *text;

    ck_assert_int_eq(REPLAN_MAX_PHASES, 1024);
    text = phases_text(1024);
    ck_assert_msg(replan_parse_freeze(text, "f.json", 4, &f, &err) == UTIL_OK, "%s",
                  err.msg);
    ck_assert_int_eq(f.n, 1024);
    replan_freeze_free(&f);
    free(text);
    text = phases_text(1025);
    expect_error(replan_parse_freeze(text, "f.json", 4, &f, &err), &err, "f.json",
                 "epochs", "expected at most 1024 phases (each is re-planned), got 1025",
                 NULL);
    free(text);
}
END_TEST

/* ---- link overrides ---------------------------------------------------- */

/* The rule of docs/inputs.md written out: among the links whose ends
 * cover the two GPUs (a node end covers its every GPU; either
 * direction), the one naming the most GPUs wins, the first in the file
 * among those; -1 if none. */
static int rule_link(const fmt_cluster *c, int da, int db)
{
    int na = c->device_node[da], nb = c->device_node[db];
    int ga = da - c->nodes[na].first_device, gb = db - c->nodes[nb].first_device;
    int i, best = -1, best_n = -1;

    for (i = 0; i < c->nlinks; i++) {
        const fmt_link *l = &c->links[i];
        int fwd = l->node_a == na && l->node_b == nb &&
                  (l->gpu_a < 0 || l->gpu_a == ga) && (l->gpu_b < 0 || l->gpu_b == gb);
        int rev = l->node_a == nb && l->node_b == na &&
                  (l->gpu_a < 0 || l->gpu_a == gb) && (l->gpu_b < 0 || l->gpu_b == ga);
        int named = (l->gpu_a >= 0) + (l->gpu_b >= 0);
        if ((fwd || rev) && named > best_n) {
            best = i;
            best_n = named;
        }
    }
    return best;
}

/* Random clusters of 2..5 nodes of 1..4 GPUs with 0..40 links of every
 * kind (node or GPU ends, same node or not, repeated ends): every GPU
 * pair gets the bandwidth and latency of the link the rule picks, or the
 * node's own when none. */
START_TEST(link_overrides_follow_the_rule)
{
    util_pcg32 rng;
    int round;

    util_pcg32_seed(&rng, 42, 7);
    for (round = 0; round < 300; round++) {
        util_buf b = {0};
        fmt_cluster c;
        util_error err;
        char *text;
        int nn = 2 + (int)util_pcg32_bounded(&rng, 4), gpus[5], nl, i, da, db;

        util_buf_printf(&b, "{\"nodes\": [");
        for (i = 0; i < nn; i++) {
            gpus[i] = 1 + (int)util_pcg32_bounded(&rng, 4);
            util_buf_printf(&b, "%s{\"name\": \"n%d\", \"device\": \"T4\", \"gpus\": %d, "
                            "\"intra_gbps\": 100, \"nic_gbps\": 10}", i ? ", " : "", i,
                            gpus[i]);
        }
        util_buf_printf(&b, "], \"links\": [");
        nl = (int)util_pcg32_bounded(&rng, 41);
        for (i = 0; i < nl; i++) {
            int a = (int)util_pcg32_bounded(&rng, (uint32_t)nn);
            int z = (int)util_pcg32_bounded(&rng, (uint32_t)nn);
            int ga = (int)util_pcg32_bounded(&rng, (uint32_t)gpus[a] + 1) - 1;
            int gz = (int)util_pcg32_bounded(&rng, (uint32_t)gpus[z] + 1) - 1;
            char ea[16], ez[16];
            if (a == z && ga >= 0 && ga == gz)
                gz = -1; /* a GPU to itself is refused */
            snprintf(ea, sizeof ea, ga < 0 ? "n%d" : "n%d:%d", a, ga);
            snprintf(ez, sizeof ez, gz < 0 ? "n%d" : "n%d:%d", z, gz);
            util_buf_printf(&b, "%s{\"a\": \"%s\", \"b\": \"%s\", \"gbps\": %d, "
                            "\"latency_ms\": %d}", i ? ", " : "", ea, ez, 1 + i, i);
        }
        util_buf_printf(&b, "]}");
        text = take(&b);
        ck_assert_msg(fmt_parse_cluster(text, "c.json", &c, &err) == UTIL_OK, "%s: %s",
                      err.msg, text);
        for (da = 0; da < c.ndevices; da++)
            for (db = 0; db < c.ndevices; db++) {
                double bw, lat, want_bw, want_lat;
                int l = rule_link(&c, da, db);
                int na = c.device_node[da], nb = c.device_node[db];
                if (da == db)
                    continue;
                fmt_link_between(&c, da, db, &bw, &lat);
                if (l >= 0) {
                    want_bw = (1 + l) * 1e9 / 8; /* link i: 1 + i Gbit/s, i ms */
                    want_lat = l / 1e3;
                } else if (na == nb) {
                    want_bw = c.nodes[na].intra_bw;
                    want_lat = c.nodes[na].intra_lat;
                } else {
                    want_bw = 10e9 / 8;
                    want_lat = c.nodes[na].nic_lat;
                }
                ck_assert_msg(bw == want_bw && lat == want_lat,
                              "GPUs %d-%d: %g B/s %g s, want link %d (%g B/s %g s) in %s",
                              da, db, bw, lat, l, want_bw, want_lat, text);
            }
        fmt_cluster_free(&c);
        free(text);
    }
}
END_TEST

/* The device-to-rank index answers as the scan of the ranks does, idle
 * devices and devices out of range included; on 131,072 ranks over
 * 262,144 devices (in reverse order) every lookup is one read, where a
 * scan per device costs 10^10 steps. */
START_TEST(rank_index_of_devices)
{
    static const int ranks[4] = {5, 0, 3, 7};
    fmt_strategy s;
    fmt_rank_index ix;
    int d, r;

    ck_assert_int_eq(fmt_strategy_alloc(&s, 2, 1, 2), UTIL_OK);
    memcpy(s.ranks, ranks, sizeof ranks);
    ck_assert_int_eq(fmt_rank_index_build(&ix, &s, 8), UTIL_OK);
    for (d = -2; d < 10; d++)
        ck_assert_int_eq(fmt_rank_index_get(&ix, d),
                         d >= 0 && d < 8 ? fmt_rank_of_device(&s, d) : -1);
    ck_assert_int_eq(fmt_rank_index_get(&ix, 3), 2);
    ck_assert_int_eq(fmt_rank_index_get(&ix, 1), -1);
    fmt_rank_index_free(&ix);
    fmt_rank_index_free(&ix); /* twice: harmless */
    fmt_strategy_free(&s);

    ck_assert_int_eq(fmt_strategy_alloc(&s, 8, 8192, 2), UTIL_OK);
    for (r = 0; r < 131072; r++)
        s.ranks[r] = 262143 - 2 * r;
    ck_assert_int_eq(fmt_rank_index_build(&ix, &s, 262144), UTIL_OK);
    for (d = 0; d < 262144; d++)
        ck_assert_int_eq(fmt_rank_index_get(&ix, d), d % 2 ? (262143 - d) / 2 : -1);
    fmt_rank_index_free(&ix);
    fmt_strategy_free(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("formats_limits");
    TCase *tc = tcase_create("lists"), *tl = tcase_create("links");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, strategies_in_a_file);
    tcase_add_test(tc, strategies_times_gpus_and_layers);
    tcase_add_test(tc, trials_in_a_file);
    tcase_add_test(tc, device_types_and_prices);
    tcase_add_test(tc, links_in_a_cluster);
    tcase_add_test(tc, profile_entries);
    tcase_add_test(tc, freeze_phases);
    tcase_add_test(tc, rank_index_of_devices);
    tcase_add_test(tl, link_overrides_follow_the_rule);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tl);
    return tu_run(s);
}
