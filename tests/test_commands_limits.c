/* tests/test_commands_limits.c: the limits of docs/limits.md, each with
 * the message and exit code a user gets from the planner, the search's
 * time limit (--time-limit), and extreme inputs within the ranges, which
 * must give finite numbers or a located error, never infinity. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cJSON.h>

#include "tp_cli.h"

#define EX(name) HETPLAN_SOURCE_DIR "/examples/" name

/* Run the planner on args; check its exit code and that stderr holds
 * each of the (up to two) fragments. */
static void expect_run(const char *const *args, int status, const char *frag1,
                       const char *frag2)
{
    tp_run_out r;

    tp_run(&r, args);
    ck_assert_msg(r.status == status, "exit %d, want %d; stderr: %s", r.status,
                  status, r.err);
    if (frag1)
        ck_assert_msg(strstr(r.err, frag1) != NULL, "stderr lacks '%s': %s", frag1,
                      r.err);
    if (frag2)
        ck_assert_msg(strstr(r.err, frag2) != NULL, "stderr lacks '%s': %s", frag2,
                      r.err);
    tp_run_free(&r);
}

/* plan --cluster CLUSTER --model MODEL, expecting an input error (exit 3)
 * whose message holds both fragments. */
static void expect_input_error(const char *cluster, const char *model,
                               const char *frag1, const char *frag2)
{
    const char *args[] = {"--cluster", cluster, "--model", model, NULL};

    expect_run(args, 3, frag1, frag2);
}

/* The plan file name in tp_dir, parsed (caller deletes). */
static cJSON *read_plan(const char *name)
{
    char *text = tp_read(name);
    cJSON *j;

    ck_assert_msg(text != NULL, "no plan '%s' written", name);
    j = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(j);
    return j;
}

static const cJSON *child(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    ck_assert_msg(v != NULL, "no '%s' in the plan", key);
    return v;
}

/* ---- limits on the inputs ------------------------------------------- */

/* 16,385 nodes of 64 GPUs = 1,048,640 GPUs, 64 over 2^20 = 1,048,576. */
START_TEST(devices_in_a_cluster)
{
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"count\": 16385, \"device\": "
                       "\"H100-SXM\", \"gpus\": 64, \"intra_gbps\": 1, \"nic_gbps\": 1}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"),
                       "'c.json': nodes[0].count: expected at most 1048576 GPUs "
                       "in the cluster", "got 1048640");
}
END_TEST

START_TEST(gpus_in_a_node)
{
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"device\": \"H100-SXM\", "
                       "\"gpus\": 65537, \"intra_gbps\": 1, \"nic_gbps\": 1}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"),
                       "'c.json': nodes[0].gpus: expected a positive integer of "
                       "at most 65536", "got 65537");
}
END_TEST

/* Nodes: one GPU each, so the node count meets the device limit first. */
START_TEST(nodes_in_a_cluster)
{
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"count\": 1048577, \"device\": "
                       "\"H100-SXM\", \"gpus\": 1, \"intra_gbps\": 1, \"nic_gbps\": 1}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"), "'c.json': nodes[0].count: "
                       "expected a positive integer of at most", "got 1048577");
}
END_TEST

/* Two layer entries repeated 1,000,000 times each: 2,000,000 layers, over
 * 2^20 = 1,048,576; and a transformer of 1,000,001 blocks, over 10^6. */
START_TEST(layers_in_a_model)
{
    const char *layer = "{\"name\": \"l\", \"kind\": \"generic\", \"repeat\": 1000000, "
                        "\"params\": 1, \"fwd_flops\": 1, \"out_bytes\": 1, "
                        "\"act_bytes\": 1}";
    char text[1024];

    snprintf(text, sizeof text, "{\"name\": \"m\", \"training\": {\"global_batch\": 8}, "
             "\"layers\": [%s, %s]}", layer, layer);
    tp_write("m.json", text);
    expect_input_error(EX("amp-het.json"), "m.json", "'m.json': layers[1].repeat: "
                       "expected at most 1048576 layers in the model", NULL);
    tp_write("t.json", "{\"name\": \"t\", \"training\": {\"global_batch\": 8}, "
                       "\"transformer\": {\"family\": \"gpt3\", \"layers\": 1000001, "
                       "\"hidden\": 64, \"heads\": 4, \"seq\": 16, \"vocab\": 100}}");
    expect_input_error(EX("amp-het.json"), "t.json", "'t.json': transformer.layers: "
                       "expected a positive integer of at most 1000000", "got 1000001");
}
END_TEST

/* What the search plans: 16,384 layers (SEARCH_MAX_LAYERS) and 131,072
 * GPUs (SEARCH_MAX_DEVICES); one layer entry repeated 16,385 times and
 * 2,049 nodes of 64 GPUs = 131,136 GPUs go one over.  The messages name
 * the file, as the readers' do; so does a model with nothing to train. */
START_TEST(search_limits_name_the_file)
{
    tp_write("m.json", "{\"name\": \"m\", \"training\": {\"global_batch\": 8}, "
                       "\"layers\": [{\"name\": \"l\", \"kind\": \"generic\", "
                       "\"repeat\": 16385, \"params\": 1, \"fwd_flops\": 1, "
                       "\"out_bytes\": 1, \"act_bytes\": 1}]}");
    expect_input_error(EX("amp-het.json"), "m.json", "planner: 'm.json': model 'm' "
                       "has 16385 layers, more than the 16384 the search assigns "
                       "to stages", NULL);
    tp_write("z.json", "{\"name\": \"z\", \"training\": {\"global_batch\": 8}, "
                       "\"layers\": [{\"name\": \"l\", \"kind\": \"generic\", "
                       "\"params\": 0, \"fwd_flops\": 1, \"out_bytes\": 1, "
                       "\"act_bytes\": 1}]}");
    expect_input_error(EX("amp-het.json"), "z.json", "planner: 'z.json': model 'z' "
                       "has no layer with parameters", NULL);
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"count\": 2049, \"device\": "
                       "\"H100-SXM\", \"gpus\": 64, \"intra_gbps\": 1, \"nic_gbps\": 1}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"), "planner: 'c.json': cluster has "
                       "131136 GPUs, more than the 131072 the search plans", NULL);
}
END_TEST

/* One layer assignment holds stages x layers up to 2^22 cells
 * (SEARCH_MAX_ASSIGN_CELLS): 16,384 layers over 16,384 stages of one GPU
 * each are 2^28.  evaluate refuses such a strategy without boundaries,
 * naming it (exit 3), and plans it with them; plan rules such depths out
 * and says why (exit 4); both without allocating the tables. */
START_TEST(layer_assignment_cells)
{
    const char *ev[] = {"evaluate", "--cluster", "c.json", "--model", "m.json",
                        "--strategies", "s.json", NULL};
    const char *pl[] = {"--cluster", "c.json", "--model", "m.json", NULL};
    char *bounds = malloc(16385 * 7 + 64), *text = malloc(16385 * 7 + 256);
    size_t used = 0;
    int j;

    ck_assert(bounds != NULL && text != NULL);
    tp_write("m.json", "{\"name\": \"m\", \"training\": {\"global_batch\": 1}, "
                       "\"layers\": [{\"name\": \"l\", \"kind\": \"generic\", "
                       "\"repeat\": 16384, \"params\": 1000, \"fwd_flops\": 1e9, "
                       "\"out_bytes\": 1000, \"act_bytes\": 1000}]}");
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"count\": 2048, \"device\": "
                       "\"H100-SXM\", \"gpus\": 8, \"intra_gbps\": 3600, "
                       "\"nic_gbps\": 400}]}");
    tp_write("s.json", "{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 16384, "
                       "\"mbs\": 1}]}");
    expect_run(ev, 3, "planner: 's.json': strategies[0]: 16384 stages x 16384 layers "
               "of model 'm' are 268435456 cells, more than the 4194304 the layer "
               "assignment holds: give the stage boundaries", NULL);
    for (j = 0; j <= 16384; j++)
        used += (size_t)sprintf(bounds + used, "%s%d", j ? ", " : "", j);
    sprintf(text, "{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 16384, "
                  "\"mbs\": 1, \"stage_boundaries\": [%s]}]}", bounds);
    tp_write("s.json", text);
    expect_run(ev, 0, NULL, NULL);
    expect_run(pl, 4, "because their stages x layers (model 'm' has 16384 layers) "
               "are more than the 4194304 cells the layer assignment holds", NULL);
    free(bounds);
    free(text);
}
END_TEST

/* The global batch: one limit, 10^9 (FMT_MAX_GLOBAL_BATCH), in a model
 * file, on the command line of plan and of calibrate; 10^9 itself plans
 * (10^9 = 2^9 5^9 splits over the 16 GPUs), 10^9 + 1 is refused. */
START_TEST(global_batch)
{
    const char *over[] = {"--cluster", EX("amp-het.json"), "--model",
                          EX("gpt2-amp.json"), "--global-batch", "1000000001", NULL};
    const char *cal[] = {"calibrate", "--cluster", EX("amp-het.json"), "--model",
                         EX("gpt2-amp.json"), "--profile", "p.json", "--trials", "t.json",
                         "--global-batch", "1000000001", NULL};
    const char *at[] = {"--cluster", EX("amp-het.json"), "--model", EX("gpt2-amp.json"),
                        "--global-batch", "1000000000", "--top-k", "1", "--quiet",
                        "--output", "plan.json", NULL};
    cJSON *plan;

    tp_write("m.json", "{\"name\": \"m\", \"training\": {\"global_batch\": 1000000001}, "
                       "\"transformer\": {\"family\": \"gpt3\", \"layers\": 2, "
                       "\"hidden\": 64, \"heads\": 4, \"seq\": 16, \"vocab\": 100}}");
    expect_input_error(EX("amp-het.json"), "m.json", "'m.json': training.global_batch: "
                       "expected a positive integer of at most 1000000000", "got 1000000001");
    expect_run(over, 2, "option '--global-batch' expects an integer in "
                        "1..1000000000, got '1000000001'", NULL);
    expect_run(cal, 2, "option '--global-batch' expects an integer in "
                       "1..1000000000, got '1000000001'", NULL);
    expect_run(at, 0, NULL, NULL);
    plan = read_plan("plan.json");
    ck_assert_double_eq(child(child(plan, "settings"), "global_batch")->valuedouble, 1e9);
    cJSON_Delete(plan);
}
END_TEST

/* An input file of 300 MiB (sparse: no disk used) against the 256 MiB
 * limit, refused before it is read. */
START_TEST(input_file_size)
{
    char p[TP_PATHN];
    FILE *f = fopen(tp_path(p, "big.json"), "wb");

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, 300L * 1024 * 1024 - 1, SEEK_SET), 0);
    ck_assert_int_eq(fputc(' ', f), ' ');
    ck_assert_int_eq(fclose(f), 0);
    expect_input_error("big.json", EX("gpt2-amp.json"),
                       "'big.json': file too large: 314572800 bytes (limit 256 MiB)",
                       NULL);
}
END_TEST

/* The strategies of evaluate: at most 10,000 in a file, and at most
 * 262,144 GPUs and layers listed in all (each strategy lists the
 * cluster's every GPU and the model's every layer), refused before any
 * is scored: 10,001 copies of a strategy; 1,025 on 256 GPUs. */
START_TEST(strategies_of_evaluate)
{
    const char *args[] = {"evaluate", "--cluster", "c.json", "--model", EX("gpt2-amp.json"),
                          "--strategies", "s.json", "--format", "json", NULL};
    const char *one = "{\"tp\": 1, \"dp\": 2, \"pp\": 1, \"mbs\": 1, "
                      "\"stage_boundaries\": [0, 30]}";
    size_t n1 = strlen(one) + 2;
    char *text = malloc(10001 * n1 + 64), *q;
    int i;

    ck_assert_ptr_nonnull(text);
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"device\": \"V100\", "
                       "\"gpus\": 2, \"intra_gbps\": 100, \"nic_gbps\": 10}]}");
    q = text + sprintf(text, "{\"strategies\": [");
    for (i = 0; i < 10001; i++)
        q += sprintf(q, "%s%s", i ? ", " : "", one);
    strcpy(q, "]}");
    tp_write("s.json", text);
    expect_run(args, 3, "planner: 's.json': strategies: expected at most 10000 "
               "strategies, got 10001", NULL);
    tp_write("c.json", "{\"nodes\": [{\"name\": \"g\", \"count\": 32, \"device\": "
                       "\"V100\", \"gpus\": 8, \"intra_gbps\": 100, "
                       "\"nic_gbps\": 10}]}");
    q = text + sprintf(text, "{\"strategies\": [");
    for (i = 0; i < 1025; i++)
        q += sprintf(q, "%s{\"tp\": 1, \"dp\": 256, \"pp\": 1, \"mbs\": 1, "
                     "\"stage_boundaries\": [0, 30]}", i ? ", " : "");
    strcpy(q, "]}");
    tp_write("s.json", text);
    expect_run(args, 3, "planner: 's.json': strategies: expected at most 1024 "
               "strategies for the cluster's 256 GPUs (strategies x GPUs at most "
               "262144), got 1025", NULL);
    free(text);
}
END_TEST

/* The text of an input file: UTF-8, no \u0000 in a string, at most 64
 * arrays and objects inside each other; each refused with the line and
 * column (exit 3), and nothing written. */
START_TEST(input_text)
{
    const char *args[] = {"--cluster", "c.json", "--model", EX("gpt2-amp.json"),
                          "--output", "p.json", "--quiet", NULL};
    const char *node = "\"nodes\": [{\"name\": \"p\", \"device\": \"V100\", "
                       "\"gpus\": 4, \"intra_gbps\": 100, \"nic_gbps\": 10}]}";
    char text[4400];
    int k;

    snprintf(text, sizeof text, "{\"name\": \"a\xff\xfe\", %s", node);
    tp_write("c.json", text);
    expect_run(args, 3, "planner: 'c.json': line 1, column 12: expected UTF-8 text, "
               "got byte 0xff", NULL);
    snprintf(text, sizeof text, "{\"name\": \"a\\u0000b\", %s", node);
    tp_write("c.json", text);
    expect_run(args, 3, "planner: 'c.json': line 1, column 12: expected a string "
               "without \\u0000", NULL);
    snprintf(text, sizeof text, "{\"name\": \"a\\ud800\", %s", node);
    tp_write("c.json", text);
    expect_run(args, 3, "planner: 'c.json': line 1, column 12: expected a character, "
               "got the high surrogate escape \\ud800", NULL);
    k = sprintf(text, "{\"x\": ");
    memset(text + k, '[', 2000);
    memset(text + k + 2000, ']', 2000);
    snprintf(text + k + 4000, sizeof text - (size_t)k - 4000, ", %s", node);
    tp_write("c.json", text);
    expect_run(args, 3, "planner: 'c.json': line 1, column 70: nested too deep: "
               "expected at most 64 arrays and objects inside each other, got 65", NULL);
    ck_assert_ptr_null(tp_read("p.json"));
}
END_TEST

/* A file name that is not UTF-8 reaches the plan with U+FFFD for the
 * byte that is not: the plan stays UTF-8 (JSON readers refuse it else). */
START_TEST(file_name_not_utf8)
{
    const char *args[] = {"--cluster", "c\xff.json", "--model", EX("gpt2-amp.json"),
                          "--output", "p.json", "--quiet", NULL};
    const char *dtfm[] = {"decentralized", "--cluster", "d\xff.json", "--pp", "2",
                          "--seconds", "1", "--output", "d.json", "--quiet", NULL};
    char *plan;

    tp_write("c\xff.json", "{\"nodes\": [{\"name\": \"p\", \"device\": \"V100\", "
                           "\"gpus\": 4, \"intra_gbps\": 100, \"nic_gbps\": 10}]}");
    expect_run(args, 0, NULL, NULL);
    plan = tp_read("p.json");
    ck_assert_ptr_nonnull(plan);
    ck_assert_ptr_null(strchr(plan, '\xff'));
    ck_assert_ptr_nonnull(strstr(plan, "\"c\xef\xbf\xbd.json\""));
    free(plan);
    /* the schedule of 'decentralized' alike */
    tp_write("d\xff.json", "{\"name\": \"d\", \"device\": \"V100\", \"regions\": "
                           "[{\"name\": \"a\", \"gpus\": 4}, {\"name\": \"b\", "
                           "\"gpus\": 4}], \"inside\": {\"latency_ms\": 5, "
                           "\"bandwidth_gbps\": 2}, \"between\": {\"latency_ms\": 50, "
                           "\"bandwidth_gbps\": 1}}");
    expect_run(dtfm, 0, NULL, NULL);
    plan = tp_read("d.json");
    ck_assert_ptr_nonnull(plan);
    ck_assert_ptr_null(strchr(plan, '\xff'));
    ck_assert_ptr_nonnull(strstr(plan, "\"d\xef\xbf\xbd.json\""));
    free(plan);
}
END_TEST

/* Search effort: strategies kept and the time limit's range. */
START_TEST(search_effort_options)
{
    const char *topk[] = {"--cluster", EX("amp-het.json"), "--model", EX("gpt2-amp.json"),
                          "--top-k", "100001", NULL};
    const char *bad[] = {"0", "-1", "nan", "inf", "1e400", "31536001", "2s", "", NULL};
    int i;

    expect_run(topk, 2, "option '--top-k' expects an integer in 1..100000, got "
                        "'100001'", NULL);
    for (i = 0; bad[i] != NULL; i++) {
        const char *args[] = {"--cluster", EX("amp-het.json"), "--model",
                              EX("gpt2-amp.json"), "--time-limit", bad[i], NULL};
        char want[128];
        snprintf(want, sizeof want, "got '%s'", bad[i]);
        expect_run(args, 2, "option '--time-limit' expects seconds in (0, 31536000]",
                   want);
    }
}
END_TEST

/* ---- the search's time limit ----------------------------------------- */

/* A cluster whose full search takes about a second on a desktop core
 * (4,096 GPUs of two generations, llama2-70b: over 5,000 candidates and
 * three device subsets, then the placement annealing). */
static void write_big_cluster(void)
{
    tp_write("big.json",
             "{\"name\": \"big\", \"nodes\": ["
             "{\"name\": \"a\", \"count\": 256, \"device\": \"A100-80GB\", \"gpus\": 8,"
             " \"intra_gbps\": 2400, \"nic_gbps\": 200},"
             "{\"name\": \"v\", \"count\": 256, \"device\": \"V100\", \"gpus\": 8,"
             " \"intra_gbps\": 1200, \"nic_gbps\": 100}]}");
}

/* A model no GPU of that cluster can hold a layer of (hidden 131072: 206
 * billion parameters per layer, 26 billion per GPU even at tp 8). */
static void write_huge_model(void)
{
    tp_write("huge.json",
             "{\"name\": \"huge\", \"transformer\": {\"family\": \"gpt3\", "
             "\"layers\": 128, \"hidden\": 131072, \"heads\": 128, \"seq\": 2048, "
             "\"vocab\": 51200}, \"training\": {\"global_batch\": 4096, "
             "\"precision\": \"fp16\"}}");
}

/* The limit given to the planner: base seconds, times the slowdown the
 * tests allow (HETPLAN_TEST_TIMEOUT_FACTOR; CI's valgrind run sets 20),
 * so that the search scores some candidates before it stops. */
static const char *limit_arg(double base, char *buf, size_t n)
{
    snprintf(buf, n, "%g", tu_timeout(base));
    return buf;
}

/* The full search of the big cluster takes about a second; a limit of
 * 0.3 s stops it with the best strategies found so far (up to --top-k
 * 3), exit code 7. */
START_TEST(time_limit_keeps_best_so_far)
{
    char lim[32];
    const char *args[] = {"--cluster", "big.json", "--model", EX("llama2-70b.json"),
                          "--precision", "fp16", "--global-batch", "4096",
                          "--top-k", "3", "--time-limit", lim,
                          "--quiet", "--output", "p.json", NULL};
    const cJSON *search, *strategies, *s;
    cJSON *plan;
    char frag[96];
    double base = 0.3;
    tp_run_out r;

    write_big_cluster();
    /* a sanitizer build may not score a fitting candidate in 0.3 s: then
     * the search says none fits, and the limit doubles (still far below
     * the full search's time there) */
    for (;;) {
        limit_arg(base, lim, sizeof lim);
        tp_run(&r, args);
        if (r.status == 7 && strstr(r.err, "none of which fits") != NULL && base < 10.0) {
            tp_run_free(&r);
            base *= 2.0;
            continue;
        }
        break;
    }
    snprintf(frag, sizeof frag, "planner: note: time limit of %s s reached after", lim);
    ck_assert_msg(r.status == 7, "exit %d, want 7; stderr: %s", r.status, r.err);
    ck_assert_msg(strstr(r.err, frag) != NULL, "stderr lacks '%s': %s", frag, r.err);
    ck_assert_msg(strstr(r.err, "the plan holds the best found so far") != NULL,
                  "stderr: %s", r.err);
    tp_run_free(&r);
    plan = read_plan("p.json");
    search = child(plan, "search");
    ck_assert_str_eq(child(search, "status")->valuestring, "time-limit");
    ck_assert_double_eq_tol(child(search, "time_limit_s")->valuedouble, atof(lim), 1e-9);
    strategies = child(plan, "strategies");
    ck_assert_int_ge(cJSON_GetArraySize(strategies), 1);
    ck_assert_int_le(cJSON_GetArraySize(strategies), 3);
    cJSON_ArrayForEach(s, strategies) {
        double t = child(s, "predicted_s")->valuedouble;
        ck_assert_msg(cJSON_IsNumber(child(s, "predicted_s")) && isfinite(t) && t > 0,
                      "predicted_s %g", t);
    }
    cJSON_Delete(plan);
}
END_TEST

/* No strategy of the huge model fits: with the limit the search gives up
 * with exit code 7 and no plan. */
START_TEST(time_limit_before_any_fit)
{
    char lim[32], frag[96];
    const char *args[] = {"--cluster", "big.json", "--model", "huge.json",
                          "--time-limit", limit_arg(0.2, lim, sizeof lim),
                          "--output", "p.json", NULL};
    char *plan;

    write_big_cluster();
    write_huge_model();
    snprintf(frag, sizeof frag, "planner: time limit of %s s reached after", lim);
    expect_run(args, 7, frag, "none of which fits");
    plan = tp_read("p.json");
    ck_assert_ptr_null(plan);
}
END_TEST

/* A search that ends states it: status "complete", no time_limit_s. */
START_TEST(status_complete)
{
    const char *args[] = {"--cluster", EX("amp-het.json"), "--model", EX("gpt2-amp.json"),
                          "--quiet", "--output", "p.json", NULL};
    cJSON *plan;
    const cJSON *search;

    expect_run(args, 0, NULL, NULL);
    plan = read_plan("p.json");
    search = child(plan, "search");
    ck_assert_str_eq(child(search, "status")->valuestring, "complete");
    ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(search, "time_limit_s"));
    cJSON_Delete(plan);
}
END_TEST

/* replan of a plan with a batch of 10^9 tries micro-batch sizes up to
 * 10^9 / dp for every pipeline depth (seconds); with a limit of 0.1 s it
 * stops with each phase's best so far: status "time-limit", exit 7. */
START_TEST(replan_time_limit)
{
    const char *plan_args[] = {"--cluster", EX("amp-het.json"), "--model",
                               EX("gpt2-amp.json"), "--global-batch", "1000000000",
                               "--top-k", "1", "--quiet", "--output", "p.json", NULL};
    const char *args[] = {"replan", "--plan", "p.json", "--frozen", "3", "--time-limit",
                          "0.1", "--format", "json", "--output", "r.json", "--quiet",
                          NULL};
    const char *bad[] = {"replan", "--plan", "p.json", "--frozen", "3", "--time-limit",
                         "-2", NULL};
    cJSON *doc;

    expect_run(plan_args, 0, NULL, NULL); /* divisors of the batch: fast */
    expect_run(args, 7, "planner: note: time limit of 0.1 s reached", NULL);
    doc = read_plan("r.json");
    ck_assert_str_eq(child(doc, "schema")->valuestring, "hetplan-replan/1");
    ck_assert_str_eq(child(doc, "status")->valuestring, "time-limit");
    ck_assert(isfinite(child(doc, "replanned_total_s")->valuedouble));
    cJSON_Delete(doc);
    expect_run(bad, 2, "option '--time-limit' expects seconds in (0, 31536000], "
                       "got '-2'", "planner replan --help");
}
END_TEST

/* ---- extreme numbers within the ranges ------------------------------- */

/* A rate of 1e-300 TFLOP/s is positive but would make times overflow
 * (10^18 FLOP / 10^-288 FLOP/s): refused with its floor. */
START_TEST(tiny_rates_refused)
{
    tp_write("c.json", "{\"device_types\": {\"X\": {\"memory_gib\": 80, "
                       "\"tflops_fp16\": 1e-300, \"mem_bw_gbs\": 1000}}, \"nodes\": "
                       "[{\"name\": \"a\", \"device\": \"X\", \"gpus\": 4, "
                       "\"intra_gbps\": 100, \"nic_gbps\": 100}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"), "'c.json': "
                       "device_types.X.tflops_fp16: expected a positive number of at "
                       "least 0.000001 and at most 1000000 TFLOP/s", "got 1e-300");
    tp_write("c.json", "{\"nodes\": [{\"name\": \"a\", \"device\": \"T4\", \"gpus\": 4, "
                       "\"intra_gbps\": 100, \"nic_gbps\": 1e-9}]}");
    expect_input_error("c.json", EX("gpt2-amp.json"), "'c.json': nodes[0].nic_gbps: "
                       "expected a positive number of at least 0.000001 and at most "
                       "10000000 Gbit/s", "got 0.000000001");
}
END_TEST

/* Every rate at its floor or its ceiling, the largest FLOP and byte
 * counts, a batch of 10^9: the predictions are huge (compute alone is
 * 10^18 FLOP x 10^9 samples x 4 layers x 3 (forward + backward) / 8 GPUs
 * at 10^6 FLOP/s, about 1.5e21 s) but finite, and the report of that plan
 * is drawn (within the test's timeout). */
START_TEST(extremes_stay_finite)
{
    const char *plan_args[] = {"--cluster", "c.json", "--model", "m.json", "--top-k", "2",
                               "--time-limit", "1", "--quiet", "--output", "p.json", NULL};
    const char *report_args[] = {"report", "--plan", "p.json", "--output", "r.svg",
                                 "--quiet", NULL};
    const cJSON *s, *v;
    cJSON *plan;
    tp_run_out r;

    tp_write("c.json", "{\"device_types\": {\"X\": {\"memory_gib\": 1e6, "
                       "\"tflops_fp16\": 1e-6, \"mem_bw_gbs\": 1e-6}}, \"nodes\": ["
                       "{\"name\": \"a\", \"device\": \"X\", \"gpus\": 4, \"intra_gbps\": "
                       "1e-6, \"nic_gbps\": 1e-6, \"intra_latency_us\": 1e9, "
                       "\"nic_latency_us\": 1e9}, {\"name\": \"b\", \"device\": \"X\", "
                       "\"gpus\": 4, \"intra_gbps\": 1e7, \"nic_gbps\": 1e7}]}");
    tp_write("m.json", "{\"name\": \"m\", \"training\": {\"global_batch\": 1000000000}, "
                       "\"layers\": [{\"name\": \"l\", \"kind\": \"generic\", \"repeat\": 4, "
                       "\"params\": 1e9, \"fwd_flops\": 1e18, \"out_bytes\": 1e15, "
                       "\"act_bytes\": 1e9, \"tp_comm_bytes\": 1e15, \"tp_collectives\": "
                       "1e6, \"traffic_bytes\": 1e15}]}");
    tp_run(&r, plan_args);
    ck_assert_msg(r.status == 0 || r.status == 7, "exit %d: %s", r.status, r.err);
    tp_run_free(&r);
    plan = read_plan("p.json");
    cJSON_ArrayForEach(s, child(plan, "strategies")) {
        ck_assert(cJSON_IsNumber(child(s, "predicted_s")));
        ck_assert(isfinite(child(s, "predicted_s")->valuedouble));
        ck_assert(child(s, "predicted_s")->valuedouble > 1e20);
        cJSON_ArrayForEach(v, child(s, "breakdown"))
            ck_assert_msg(cJSON_IsNumber(v) && isfinite(v->valuedouble),
                          "breakdown.%s is not a finite number", v->string);
    }
    cJSON_Delete(plan);
    expect_run(report_args, 0, NULL, NULL);
}
END_TEST

static Suite *limits_suite(void)
{
    Suite *s = suite_create("limits");
    TCase *in = tcase_create("inputs"), *tl = tcase_create("time_limit"),
          *ex = tcase_create("extremes");

    tcase_add_checked_fixture(in, tp_setup, tp_teardown);
    tcase_add_checked_fixture(tl, tp_setup, tp_teardown);
    tcase_add_checked_fixture(ex, tp_setup, tp_teardown);
    tcase_set_timeout(in, 60);
    tcase_set_timeout(tl, 60);
    tcase_set_timeout(ex, 60);
    tcase_add_test(in, devices_in_a_cluster);
    tcase_add_test(in, gpus_in_a_node);
    tcase_add_test(in, nodes_in_a_cluster);
    tcase_add_test(in, layers_in_a_model);
    tcase_add_test(in, global_batch);
    tcase_add_test(in, search_limits_name_the_file);
    tcase_add_test(in, layer_assignment_cells);
    tcase_add_test(in, input_file_size);
    tcase_add_test(in, search_effort_options);
    tcase_add_test(in, strategies_of_evaluate);
    tcase_add_test(in, input_text);
    tcase_add_test(in, file_name_not_utf8);
    tcase_add_test(tl, time_limit_keeps_best_so_far);
    tcase_add_test(tl, time_limit_before_any_fit);
    tcase_add_test(tl, status_complete);
    tcase_add_test(tl, replan_time_limit);
    tcase_add_test(ex, tiny_rates_refused);
    tcase_add_test(ex, extremes_stay_finite);
    suite_add_tcase(s, in);
    suite_add_tcase(s, tl);
    suite_add_tcase(s, ex);
    return s;
}

int main(void)
{
    return tu_run(limits_suite());
}
