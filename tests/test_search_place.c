/* tests/test_search_place.c: choosing devices and placing ranks
 * (search/subset.c, search/anneal.c): the search against hand-pruned
 * clusters, independence of the node order, reproducibility, a prime
 * node count, the cost and memory-headroom objectives, the annealing's
 * invariants, no plan listed twice, and the idle list of the plan (CLI). */
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

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* The nodes of examples/mixed-generations.json, one entry per string,
 * so that tests can list them in any order or leave some out. */
static const char *const mixed_nodes[] = {
    "{\"name\": \"h100-0\", \"device\": \"H100-SXM\", \"gpus\": 8, \"region\": \"us-east\", "
    "\"intra_gbps\": 3600, \"nic_gbps\": 400, \"intra_latency_us\": 3, \"nic_latency_us\": 10}",
    "{\"name\": \"a100-0\", \"device\": \"A100-80GB\", \"gpus\": 8, \"region\": \"us-east\", "
    "\"intra_gbps\": 2400, \"nic_gbps\": 200}",
    "{\"name\": \"a100-1\", \"device\": \"A100-80GB\", \"gpus\": 8, \"region\": \"us-east\", "
    "\"intra_gbps\": 2400, \"nic_gbps\": 200}",
    "{\"name\": \"v100-0\", \"device\": \"V100\", \"gpus\": 8, \"region\": \"us-west\", "
    "\"intra_gbps\": 1200, \"nic_gbps\": 100}",
    "{\"name\": \"t4-0\", \"device\": \"T4\", \"gpus\": 4, \"region\": \"us-west\", "
    "\"intra_gbps\": 64, \"nic_gbps\": 50}",
    "{\"name\": \"t4-1\", \"device\": \"T4\", \"gpus\": 4, \"region\": \"us-west\", "
    "\"intra_gbps\": 64, \"nic_gbps\": 50}",
    "{\"name\": \"ws-0\", \"device\": \"RTX6000-Ada\", \"gpus\": 2, \"region\": \"us-west\", "
    "\"intra_gbps\": 256, \"nic_gbps\": 100}"};
#define NMIXED 7

/* A cluster of the mixed nodes listed by idx[0..n) with extra top-level
 * members (e.g. "prices"); the h100-0 to v100-0 link when both are in. */
static void mixed_cluster(fmt_cluster *c, const int *idx, int n, const char *extra)
{
    char text[8192];
    size_t used;
    int i, h100 = 0, v100 = 0;
    util_error err;

    used = (size_t)snprintf(text, sizeof text,
                            "{\"name\": \"mixed\", \"device_types\": {\"RTX6000-Ada\": "
                            "{\"memory_gib\": 48, \"tflops_fp16\": 364.2, \"tflops_bf16\": "
                            "364.2, \"mem_bw_gbs\": 960}}, %s%s\"nodes\": [",
                            extra ? extra : "", extra ? ", " : "");
    for (i = 0; i < n; i++) {
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", i ? ", " : "",
                                 mixed_nodes[idx[i]]);
        h100 |= idx[i] == 0;
        v100 |= idx[i] == 3;
    }
    snprintf(text + used, sizeof text - used, "]%s}",
             h100 && v100 ? ", \"links\": [{\"a\": \"h100-0\", \"b\": \"v100-0\", "
                            "\"gbps\": 10, \"latency_ms\": 30}]"
                          : "");
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_parse_cluster(text, "mixed.json", c, &err) == UTIL_OK, "%s", err.msg);
}

static void load_model(fmt_model *m, const char *name)
{
    util_error err;

    ck_assert_int_eq(fmt_load_model(name, m, &err), UTIL_OK);
}

/* Best plan of search_plan_devices with the defaults and global batch gb. */
static double plan_best(const fmt_cluster *c, const fmt_model *m, int gb,
                        search_params *sp, search_result *res)
{
    cost_params cp;
    util_error err;

    cost_params_init(&cp);
    sp->global_batch = gb;
    memset(&err, 0, sizeof err);
    ck_assert_msg(search_plan_devices(c, m, NULL, &cp, sp, res, &err) == UTIL_OK, "%s",
                  err.msg);
    ck_assert_int_gt(res->n, 0);
    return res->cands[0].r.iter_s;
}

/* ---- device subsets -------------------------------------------------- */

/* mixed-generations + llama-7b: the search may leave the slow nodes idle,
 * so its plan is at least as fast as the best plan on the cluster with
 * the V100, T4 and RTX6000 nodes removed by hand, and as the best plan
 * that uses all 42 GPUs. */
START_TEST(mixed_beats_hand_pruned)
{
    static const int all[] = {0, 1, 2, 3, 4, 5, 6}, fast[] = {0, 1, 2};
    fmt_cluster c, p;
    fmt_model m;
    search_params sp;
    search_result res, rp, ra;
    double t, tp, ta;
    int used;

    mixed_cluster(&c, all, NMIXED, NULL);
    mixed_cluster(&p, fast, 3, NULL);
    load_model(&m, EX "llama-7b.json");
    /* fp16, which every device here runs: in the model's bf16 the V100 and
       T4 nodes cannot run a rank (tests/test_search_precision.c) */
    ck_assert_int_eq(fmt_model_set_precision(&m, FMT_PREC_FP16, NULL), UTIL_OK);
    search_params_init(&sp);
    t = plan_best(&c, &m, 512, &sp, &res);
    tp = plan_best(&p, &m, 512, &sp, &rp);
    sp.use_all = 1;
    ta = plan_best(&c, &m, 512, &sp, &ra);
    ck_assert_msg(t <= tp, "plan %.4f s slower than the hand-pruned cluster's %.4f s", t, tp);
    ck_assert_msg(t <= ta, "plan %.4f s slower than using every GPU, %.4f s", t, ta);
    /* with all 42 GPUs in use every device runs a rank */
    ck_assert_int_eq(ra.cands[0].s.tp * ra.cands[0].s.dp * ra.cands[0].s.pp, 42);
    ck_assert_str_eq(ra.cands[0].idle_reason, "");
    used = res.cands[0].s.tp * res.cands[0].s.dp * res.cands[0].s.pp;
    if (used < 42) /* idle devices come with their reason */
        ck_assert_ptr_nonnull(strstr(res.cands[0].idle_reason, "faster without them"));
    search_result_free(&res);
    search_result_free(&rp);
    search_result_free(&ra);
    fmt_cluster_free(&c);
    fmt_cluster_free(&p);
    fmt_model_free(&m);
}
END_TEST

/* The same nodes listed in another order give the same predicted time. */
START_TEST(node_order_does_not_matter)
{
    static const int fwd[] = {0, 1, 2, 3, 4, 5, 6}, rev[] = {6, 5, 4, 3, 2, 1, 0},
                     mix[] = {4, 0, 6, 2, 3, 5, 1};
    const int *orders[] = {rev, mix};
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    double t0, t;
    int k;

    load_model(&m, EX "llama-7b.json");
    search_params_init(&sp);
    mixed_cluster(&c, fwd, NMIXED, NULL);
    t0 = plan_best(&c, &m, 512, &sp, &res);
    search_result_free(&res);
    fmt_cluster_free(&c);
    for (k = 0; k < 2; k++) {
        mixed_cluster(&c, orders[k], NMIXED, NULL);
        t = plan_best(&c, &m, 512, &sp, &res);
        ck_assert_msg(fabs(t - t0) <= 0.01 * t0, "order %d: %.6f s against %.6f s", k,
                      t, t0);
        search_result_free(&res);
        fmt_cluster_free(&c);
    }
    fmt_model_free(&m);
}
END_TEST

/* Same seed, same plan: degrees, ranks and boundaries of every candidate. */
START_TEST(same_seed_same_plan)
{
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result a, b;
    util_error err;
    int i;

    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", &c, &err), UTIL_OK);
    load_model(&m, EX "gpt2-amp.json");
    search_params_init(&sp);
    sp.seed = 7;
    plan_best(&c, &m, 32, &sp, &a);
    plan_best(&c, &m, 32, &sp, &b);
    ck_assert_int_eq(a.n, b.n);
    ck_assert_int_gt(a.anneal_moves, 0);
    for (i = 0; i < a.n; i++) {
        const fmt_strategy *x = &a.cands[i].s, *y = &b.cands[i].s;
        ck_assert_int_eq(x->tp, y->tp);
        ck_assert_int_eq(x->dp, y->dp);
        ck_assert_int_eq(x->pp, y->pp);
        ck_assert_int_eq(x->mbs, y->mbs);
        ck_assert_mem_eq(x->ranks, y->ranks, (size_t)(x->tp * x->dp * x->pp) * sizeof *x->ranks);
        ck_assert_mem_eq(x->bounds, y->bounds, (size_t)(x->pp + 1) * sizeof *x->bounds);
        ck_assert_double_eq(a.cands[i].r.iter_s, b.cands[i].r.iter_s);
    }
    search_result_free(&a);
    search_result_free(&b);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* 13 nodes (a prime) of 8 A100 = 104 GPUs, a 4-block model (embedding,
 * 4 blocks, final norm and head: fewer than 13 layers hold parameters),
 * global batch 64.  104 = 8 x 13 and tp <= 8 divides 8, so 13 divides dp
 * or pp: dp in {13, 26, 52, 104} does not divide 64 and pp = 13 exceeds
 * the layers with parameters, so no strategy uses every GPU.  12 nodes =
 * 96 = 2^5 x 3 GPUs factor, so the plan leaves exactly one node idle. */
static const char prime_cluster[] =
    "{\"name\": \"prime\", \"nodes\": [{\"name\": \"dgx\", \"count\": 13, \"device\": "
    "\"A100-80GB\", \"gpus\": 8, \"intra_gbps\": 4800, \"nic_gbps\": 1600}]}";
static const char small_model[] =
    "{\"name\": \"gpt-4l\", \"training\": {\"global_batch\": 64}, \"transformer\": "
    "{\"family\": \"gpt3\", \"layers\": 4, \"hidden\": 1024, \"heads\": 16, \"seq\": 1024, "
    "\"vocab\": 51200}}";

START_TEST(prime_node_count)
{
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    cost_params cp;
    util_error err;

    ck_assert_int_eq(fmt_parse_cluster(prime_cluster, "prime.json", &c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_parse_model(small_model, "model.json", &m, &err), UTIL_OK);
    ck_assert_int_lt(cost_param_layers(&m), 13);
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 64;
    /* every GPU: nothing runs */
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_EINFEASIBLE);
    sp.use_all = 1;
    ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &res, &err),
                     UTIL_EINFEASIBLE);
    sp.use_all = 0;
    plan_best(&c, &m, 64, &sp, &res);
    ck_assert_int_eq(res.cands[0].s.tp * res.cands[0].s.dp * res.cands[0].s.pp, 96);
    ck_assert_msg(strstr(res.cands[0].idle_reason, "prime factor 13") != NULL, "%s",
                  res.cands[0].idle_reason);
    /* whole nodes: the 8 idle GPUs are one node's */
    {
        int used[13] = {0}, i, idle_nodes = 0;
        for (i = 0; i < 96; i++)
            used[c.device_node[res.cands[0].s.ranks[i]]]++;
        for (i = 0; i < 13; i++) {
            ck_assert(used[i] == 0 || used[i] == 8);
            idle_nodes += used[i] == 0;
        }
        ck_assert_int_eq(idle_nodes, 1);
    }
    search_result_free(&res);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* The plan and the table name the idle node and say why (CLI). */
START_TEST(prime_node_count_cli)
{
    const char *args[] = {"--cluster", "prime.json", "--model", "model.json",
                          "--format", "json", NULL};
    const char *targs[] = {"--cluster", "prime.json", "--model", "model.json", NULL};
    tp_run_out r;
    cJSON *doc, *s, *idle, *e;

    tp_write("prime.json", prime_cluster);
    tp_write("model.json", small_model);
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    s = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 0);
    idle = cJSON_GetObjectItem(s, "idle");
    ck_assert_int_eq(cJSON_GetArraySize(idle), 1);
    e = cJSON_GetArrayItem(idle, 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e, "gpus")), 8);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "device_type")->valuestring, "A100-80GB");
    ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(e, "reason")->valuestring,
                                 "no strategy runs on all 104 GPUs"));
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_run(&r, targs);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "idle devices of #1 (8 of 104 GPUs)"));
    tp_run_free(&r);
    /* a plan with an idle node reads back (whatif re-evaluates it) */
    {
        const char *wr[] = {"--cluster", "prime.json", "--model", "model.json", "-q",
                            "-o", "plan.json", NULL};
        const char *wi[] = {"whatif", "--plan", "plan.json", "--slow", "0:2", NULL};
        tp_run(&r, wr);
        ck_assert_msg(r.status == 0, "%s", r.err);
        tp_run_free(&r);
        tp_run(&r, wi);
        ck_assert_msg(r.status == 0, "%s", r.err);
        tp_run_free(&r);
    }
    /* --use-all keeps every GPU, and so finds nothing */
    {
        const char *ua[] = {"--cluster", "prime.json", "--model", "model.json",
                            "--use-all", NULL};
        tp_run(&r, ua);
        ck_assert_int_eq(r.status, 4);
        tp_run_free(&r);
    }
}
END_TEST

/* ---- objectives ------------------------------------------------------- */

static const char prices[] =
    "\"prices\": {\"H100-SXM\": 4.0, \"A100-80GB\": 2.0, \"V100\": 0.9, \"T4\": 0.35, "
    "\"RTX6000-Ada\": 1.0}";

/* Objective cost: the plan's price per iteration is no more than that of
 * the fastest plan (priced by hand: time x sum of the prices of its
 * GPUs / 3600). */
START_TEST(cost_objective)
{
    static const int all[] = {0, 1, 2, 3, 4, 5, 6};
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result rt, rc;
    double price_t = 0.0, cost_t, cost_c;
    const fmt_strategy *s;
    int i;

    mixed_cluster(&c, all, NMIXED, prices);
    load_model(&m, EX "llama-7b.json");
    search_params_init(&sp);
    plan_best(&c, &m, 512, &sp, &rt);
    sp.objective = SEARCH_OBJ_COST;
    plan_best(&c, &m, 512, &sp, &rc);
    s = &rt.cands[0].s;
    for (i = 0; i < s->tp * s->dp * s->pp; i++) {
        const char *t = fmt_device(&c, s->ranks[i])->name;
        price_t += strcmp(t, "H100-SXM") == 0    ? 4.0
                   : strcmp(t, "A100-80GB") == 0 ? 2.0
                   : strcmp(t, "V100") == 0      ? 0.9
                   : strcmp(t, "T4") == 0        ? 0.35
                                                 : 1.0;
    }
    ck_assert_double_eq_tol(search_price_per_hour(&c, s), price_t, 1e-9);
    cost_t = rt.cands[0].r.iter_s * price_t / 3600.0;
    cost_c = search_objective_value(&c, SEARCH_OBJ_COST, &rc.cands[0].s, &rc.cands[0].r);
    ck_assert_msg(cost_c <= cost_t * (1 + 1e-12), "cost plan %.6g per iteration, fastest "
                  "plan %.6g", cost_c, cost_t);
    for (i = 1; i < rc.n; i++) /* ranked by price */
        ck_assert(search_objective_value(&c, SEARCH_OBJ_COST, &rc.cands[i].s,
                                         &rc.cands[i].r) >= cost_c);
    search_result_free(&rt);
    search_result_free(&rc);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* The plan states the price: per hour the sum over the GPUs in use, per
 * iteration that x predicted_s / 3600; the table says it too, in its
 * price columns and below it. */
START_TEST(cost_in_plan_cli)
{
    const char *args[] = {"--cluster", "c.json", "--model", "m.json", "--format", "json",
                          "--objective", "cost", NULL};
    const char *targs[] = {"--cluster", "c.json", "--model", "m.json", NULL};
    tp_run_out r;
    cJSON *doc, *s;
    double ph, pi, t;

    /* 13 x 8 A100 at 2.5 per GPU hour; the plan uses 96 of them */
    tp_write("c.json", "{\"prices\": {\"A100-80GB\": 2.5}, \"nodes\": [{\"name\": \"dgx\", "
                       "\"count\": 13, \"device\": \"A100-80GB\", \"gpus\": 8, "
                       "\"intra_gbps\": 4800, \"nic_gbps\": 1600}]}");
    tp_write("m.json", small_model);
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    s = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 0);
    ph = cJSON_GetObjectItem(s, "price_per_hour")->valuedouble;
    pi = cJSON_GetObjectItem(s, "price_per_iteration")->valuedouble;
    t = cJSON_GetObjectItem(s, "predicted_s")->valuedouble;
    ck_assert_double_eq_tol(ph, 96 * 2.5, 1e-9);
    ck_assert_double_eq_tol(pi, 240.0 * t / 3600.0, 1e-12);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "search"), "objective")
                         ->valuestring, "cost");
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_run(&r, targs);
    ck_assert_ptr_nonnull(strstr(r.out, "price of #1: 240 per hour"));
    /* the ranking shows the price of every strategy: 240 an hour, and per
     * iteration what the JSON says */
    ck_assert_ptr_nonnull(strstr(r.out, " price/h price/iter features\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "     240 "));
    tp_run_free(&r);
}
END_TEST

START_TEST(cost_needs_prices)
{
    static const int all[] = {0, 1, 2, 3, 4, 5, 6};
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    cost_params cp;
    util_error err;

    mixed_cluster(&c, all, NMIXED, "\"prices\": {\"H100-SXM\": 4.0}");
    load_model(&m, EX "llama-7b.json");
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 512;
    sp.objective = SEARCH_OBJ_COST;
    ck_assert_int_eq(search_plan_devices(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "needs the price of device type 'A100-80GB'"));
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* A 30 % headroom: every rank of every candidate keeps 30 % free. */
START_TEST(memory_headroom)
{
    static const int all[] = {0, 1, 2, 3, 4, 5, 6};
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    int i, k;

    mixed_cluster(&c, all, NMIXED, NULL);
    load_model(&m, EX "llama-7b.json");
    search_params_init(&sp);
    sp.memory_headroom = 0.3;
    plan_best(&c, &m, 512, &sp, &res);
    for (i = 0; i < res.n; i++)
        for (k = 0; k < res.cands[i].r.nranks; k++)
            ck_assert_msg(res.cands[i].r.mem_bytes[k] <= 0.7 * res.cands[i].r.mem_cap[k],
                          "candidate %d rank %d: %.3g of %.3g bytes", i, k,
                          res.cands[i].r.mem_bytes[k], res.cands[i].r.mem_cap[k]);
    search_result_free(&res);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* ---- annealing and the canonical order -------------------------------- */

/* Annealing never returns a worse placement; what it returns scores, when
 * evaluated afresh, what it says, on distinct devices. */
START_TEST(anneal_invariants)
{
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    cost_params cp;
    cost_result again;
    util_error err;
    fmt_strategy *s;
    double before;
    long moves = 0;
    int i, n;
    char seen[16] = {0};

    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", &c, &err), UTIL_OK);
    load_model(&m, EX "gpt2-amp.json");
    cost_params_init(&cp);
    search_params_init(&sp);
    sp.global_batch = 32;
    sp.placements = 1u << SEARCH_PLACE_MEGATRON;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_OK);
    s = &res.cands[0].s;
    before = res.cands[0].r.iter_s;
    ck_assert_int_eq(search_anneal(&c, &m, NULL, &cp, &sp, 300, 3, s, &res.cands[0].r,
                                   &moves, &err), UTIL_OK);
    ck_assert_int_gt(moves, 0);
    ck_assert(res.cands[0].r.iter_s <= before);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &cp, s, &again, &err), UTIL_OK);
    ck_assert_double_eq_tol(again.iter_s, res.cands[0].r.iter_s, 1e-12 * before);
    n = s->tp * s->dp * s->pp;
    for (i = 0; i < n; i++) {
        ck_assert(s->ranks[i] >= 0 && s->ranks[i] < 16 && !seen[s->ranks[i]]);
        seen[s->ranks[i]] = 1;
    }
    cost_result_free(&again);
    search_result_free(&res);
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

/* Three nodes of four alike GPUs (three types): the searches of the
 * whole set and of its subsets end on plans that differ only by which
 * GPUs of a node they use; each is listed once.  Checked by node, not
 * by the search's own test: no two plans have the same degrees,
 * features, stages, node of every rank and time. */
START_TEST(no_plan_listed_twice)
{
    static const char text[] =
        "{\"name\": \"rtx\", \"nodes\": ["
        "{\"name\": \"a\", \"device\": \"RTX3090\", \"gpus\": 4, \"intra_gbps\": 100, "
        "\"nic_gbps\": 25},"
        "{\"name\": \"b\", \"device\": \"TitanRTX\", \"gpus\": 4, \"intra_gbps\": 100, "
        "\"nic_gbps\": 25},"
        "{\"name\": \"c\", \"device\": \"RTX2080\", \"gpus\": 4, \"intra_gbps\": 100, "
        "\"nic_gbps\": 25}]}";
    fmt_cluster c;
    fmt_model m;
    search_params sp;
    search_result res;
    util_error err;
    int i, j, k, n;

    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_parse_cluster(text, "rtx.json", &c, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(fmt_parse_model("{\"name\": \"opt\", \"training\": {\"precision\": "
                                     "\"fp16\"}, \"transformer\": {\"family\": \"gpt2\", \"layers\": 24, "
                                     "\"hidden\": 1024, \"heads\": 16, \"seq\": 2048, "
                                     "\"vocab\": 50272}}", "opt.json", &m, &err), UTIL_OK);
    search_params_init(&sp);
    sp.top_k = 8;
    plan_best(&c, &m, 32, &sp, &res);
    ck_assert_int_ge(res.n, 4);
    for (i = 0; i < res.n; i++)
        for (j = 0; j < i; j++) {
            const fmt_strategy *a = &res.cands[i].s, *b = &res.cands[j].s;
            int same = a->tp == b->tp && a->dp == b->dp && a->pp == b->pp &&
                       a->mbs == b->mbs && a->vpp == b->vpp && a->zero == b->zero &&
                       a->recompute == b->recompute && a->sp == b->sp &&
                       res.cands[i].r.iter_s == res.cands[j].r.iter_s;
            n = a->tp * a->dp * a->pp;
            for (k = 0; same && k <= a->pp; k++)
                same = a->bounds[k] == b->bounds[k];
            for (k = 0; same && k < n; k++)
                same = c.device_node[a->ranks[k]] == c.device_node[b->ranks[k]];
            ck_assert_msg(!same, "plans %d and %d differ only in GPUs of a node", j + 1,
                          i + 1);
        }
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Fastest device type first, the same order whatever the file's. */
START_TEST(canonical_order)
{
    static const int fwd[] = {0, 1, 2, 3, 4, 5, 6}, rev[] = {6, 5, 4, 3, 2, 1, 0};
    fmt_cluster a, b;
    int oa[NMIXED], ob[NMIXED], i;

    mixed_cluster(&a, fwd, NMIXED, NULL);
    mixed_cluster(&b, rev, NMIXED, NULL);
    search_canonical_nodes(&a, oa);
    search_canonical_nodes(&b, ob);
    ck_assert_str_eq(a.nodes[oa[0]].name, "h100-0");
    for (i = 0; i < NMIXED; i++)
        ck_assert_str_eq(a.nodes[oa[i]].name, b.nodes[ob[i]].name);
    /* T4 (65 TFLOP/s fp16) after V100 (125) */
    ck_assert_str_eq(a.nodes[oa[NMIXED - 1]].name, "t4-1");
    ck_assert_str_eq(a.nodes[oa[NMIXED - 2]].name, "t4-0");
    fmt_cluster_free(&a);
    fmt_cluster_free(&b);
}
END_TEST

/* ---- prices in cluster.json ------------------------------------------- */

START_TEST(prices_parsed_and_checked)
{
    static const int two[] = {0, 6};
    fmt_cluster c;
    util_error err;
    int t;

    mixed_cluster(&c, two, 2, "\"prices\": {\"h100-sxm\": 3.5}");
    ck_assert_ptr_nonnull(c.price);
    for (t = 0; t < c.ntypes; t++)
        ck_assert_double_eq(c.price[t], strcmp(c.types[t].name, "H100-SXM") == 0 ? 3.5 : -1.0);
    fmt_cluster_free(&c);
    ck_assert_int_eq(fmt_parse_cluster(
                         "{\"device_types\": {\"X1\": {\"memory_gib\": 16, \"tflops_fp16\": 50, "
                         "\"mem_bw_gbs\": 500, \"price_per_hour\": 0.5}}, \"nodes\": [{\"name\": "
                         "\"n\", \"device\": \"X1\", \"gpus\": 2, \"intra_gbps\": 100, "
                         "\"nic_gbps\": 10}]}", "c.json", &c, &err), UTIL_OK);
    ck_assert_double_eq(c.price[0], 0.5);
    fmt_cluster_free(&c);
    ck_assert_int_eq(fmt_parse_cluster(
                         "{\"prices\": {\"T4\": -1}, \"nodes\": [{\"name\": \"n\", \"device\": "
                         "\"T4\", \"gpus\": 2, \"intra_gbps\": 100, \"nic_gbps\": 10}]}",
                         "c.json", &c, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "prices.T4");
    ck_assert_int_eq(fmt_parse_cluster(
                         "{\"prices\": {\"V100\": 1}, \"nodes\": [{\"name\": \"n\", \"device\": "
                         "\"T4\", \"gpus\": 2, \"intra_gbps\": 100, \"nic_gbps\": 10}]}",
                         "c.json", &c, &err), UTIL_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.msg, "no node uses device type 'V100'"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("search_place");
    TCase *tc = tcase_create("place");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, mixed_beats_hand_pruned);
    tcase_add_test(tc, node_order_does_not_matter);
    tcase_add_test(tc, same_seed_same_plan);
    tcase_add_test(tc, prime_node_count);
    tcase_add_test(tc, prime_node_count_cli);
    tcase_add_test(tc, cost_objective);
    tcase_add_test(tc, cost_needs_prices);
    tcase_add_test(tc, cost_in_plan_cli);
    tcase_add_test(tc, memory_headroom);
    tcase_add_test(tc, anneal_invariants);
    tcase_add_test(tc, canonical_order);
    tcase_add_test(tc, no_plan_listed_twice);
    tcase_add_test(tc, prices_parsed_and_checked);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
