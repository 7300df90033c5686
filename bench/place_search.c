/* bench/place_search.c: what choosing devices and annealing placements
 * gains, and what it costs in wall time: every GPU with the placement
 * rules only, every GPU annealed, the default search (device subsets and
 * annealing), the cluster pruned by hand and the nodes listed backwards;
 * then 641 DGX A100 nodes (a prime count) for a 530B model.  Prints one
 * JSON object; then simulated annealing against the placement genetic
 * algorithm (predicted time, wall time) on the examples and a 144-GPU
 * cluster of four generations.  --quick skips the 641-node case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The example cluster `name`, its nodes reversed (how = 1) or only its
 * H100 and A100 nodes without link overrides (how = 2). */
static int load_variant(const char *name, int how, fmt_cluster *c)
{
    char path[1024], *text = NULL, *out = NULL;
    cJSON *doc = NULL, *nodes, *keep, *e;
    util_error err;
    int rc, i, n;

    snprintf(path, sizeof path, "%s/examples/%s.json", HETPLAN_SOURCE_DIR, name);
    if (how == 0)
        return fmt_load_cluster(path, c, &err);
    if ((rc = util_read_file(path, &text, &err)) != UTIL_OK)
        return rc;
    doc = cJSON_Parse(text);
    nodes = doc ? cJSON_DetachItemFromObject(doc, "nodes") : NULL;
    keep = cJSON_CreateArray();
    n = cJSON_GetArraySize(nodes);
    for (i = 0; nodes && keep && i < n; i++) {
        e = cJSON_GetArrayItem(nodes, how == 1 ? n - 1 - i : i);
        const cJSON *dev = cJSON_GetObjectItem(e, "device");
        if (how == 2 && !(cJSON_IsString(dev) && (strcmp(dev->valuestring, "H100-SXM") == 0 ||
                                                  strcmp(dev->valuestring, "A100-80GB") == 0)))
            continue;
        cJSON_AddItemToArray(keep, cJSON_Duplicate(e, 1));
    }
    cJSON_AddItemToObject(doc, "nodes", keep);
    cJSON_DeleteItemFromObject(doc, "total_gpus");
    if (how == 2)
        cJSON_DeleteItemFromObject(doc, "links");
    out = cJSON_PrintUnformatted(doc);
    rc = out ? fmt_parse_cluster(out, path, c, &err) : UTIL_ENOMEM;
    if (rc != UTIL_OK)
        fprintf(stderr, "place-search: %s\n", err.msg);
    cJSON_Delete(nodes);
    cJSON_Delete(doc);
    free(out);
    free(text);
    return rc;
}

/* One search, printed as a JSON member "key": {...}. */
/* GA population and generations of run_how, 0 = the defaults; seed. */
static int ga_pop, ga_gens;
static uint64_t bench_seed;

static int run_how(const char *key, const fmt_cluster *c, const fmt_model *m,
                   const cost_params *cp, int gb, int use_all, int steps, int how,
                   int last)
{
    search_params sp;
    search_result res;
    util_error err;
    double t0, ms;
    int rc, used;

    search_params_init(&sp);
    sp.global_batch = gb;
    sp.use_all = use_all;
    sp.anneal_steps = steps;
    sp.placement_search = how;
    sp.ga_population = ga_pop;
    sp.ga_generations = ga_gens;
    sp.seed = bench_seed;
    t0 = now_ms();
    rc = search_plan_devices(c, m, NULL, cp, &sp, &res, &err);
    ms = now_ms() - t0;
    if (rc != UTIL_OK) {
        printf("  \"%s\": {\"error\": \"%s\", \"wall_ms\": %.1f}%s\n", key,
               util_strerror(rc), ms, last ? "" : ",");
        return rc;
    }
    used = res.cands[0].s.tp * res.cands[0].s.dp * res.cands[0].s.pp;
    printf("  \"%s\": {\"predicted_s\": %.4f, \"gpus_used\": %d, \"gpus\": %d, "
           "\"tp\": %d, \"dp\": %d, \"pp\": %d, \"placement\": \"%s\", "
           "\"device_subsets\": %d, \"anneal_moves\": %ld, \"wall_ms\": %.1f}%s\n",
           key, res.cands[0].r.iter_s, used, c->ndevices, res.cands[0].s.tp,
           res.cands[0].s.dp, res.cands[0].s.pp, res.cands[0].s.placement, res.subsets,
           res.anneal_moves, ms, last ? "" : ",");
    search_result_free(&res);
    return UTIL_OK;
}

static int run(const char *key, const fmt_cluster *c, const fmt_model *m,
               const cost_params *cp, int gb, int use_all, int steps, int last)
{
    return run_how(key, c, m, cp, gb, use_all, steps, SEARCH_PSEARCH_ANNEAL, last);
}

/* Annealing against the genetic algorithm on one case: the default
 * annealing, annealing given the GA's extra placements (equal effort),
 * and the GA (annealing first, then the GA). */
static void sa_vs_ga(const fmt_cluster *c, const fmt_model *m, const cost_params *cp,
                     int gb, int use_all, int last)
{
    int equal = SEARCH_ANNEAL_STEPS +
                SEARCH_GA_POPULATION * (1 + SEARCH_GA_GENERATIONS * (1 + SEARCH_GA_LOCAL));

    run_how("sa", c, m, cp, gb, use_all, 0, SEARCH_PSEARCH_ANNEAL, 0);
    run_how("sa_equal_effort", c, m, cp, gb, use_all, equal, SEARCH_PSEARCH_ANNEAL, 0);
    run_how("ga", c, m, cp, gb, use_all, 0, SEARCH_PSEARCH_GA, last);
}

/* A larger heterogeneous cluster: 144 GPUs of four generations in two
 * regions, two slow links between them. */
static const char big_het[] =
    "{\"name\": \"het-144\", \"nodes\": ["
    "{\"name\": \"h100\", \"count\": 4, \"device\": \"H100-SXM\", \"gpus\": 8, "
    "\"region\": \"east\", \"intra_gbps\": 3600, \"nic_gbps\": 400},"
    "{\"name\": \"a100\", \"count\": 6, \"device\": \"A100-80GB\", \"gpus\": 8, "
    "\"region\": \"east\", \"intra_gbps\": 2400, \"nic_gbps\": 200},"
    "{\"name\": \"v100\", \"count\": 6, \"device\": \"V100\", \"gpus\": 8, "
    "\"region\": \"west\", \"intra_gbps\": 1200, \"nic_gbps\": 100},"
    "{\"name\": \"t4\", \"count\": 2, \"device\": \"T4\", \"gpus\": 8, "
    "\"region\": \"west\", \"intra_gbps\": 64, \"nic_gbps\": 50}],"
    "\"links\": [{\"a\": \"h100-0\", \"b\": \"v100-0\", \"gbps\": 10, \"latency_ms\": 30},"
    "{\"a\": \"a100-5\", \"b\": \"v100-5\", \"gbps\": 10, \"latency_ms\": 30}]}";

int main(int argc, char **argv)
{
    static const char c641[] =
        "{\"name\": \"dgx-641\", \"nodes\": [{\"name\": \"dgx\", \"count\": 641, \"device\": "
        "\"A100-80GB\", \"gpus\": 8, \"intra_gbps\": 4800, \"nic_gbps\": 1600}]}";
    static const char m530[] =
        "{\"name\": \"mt-nlg-530b\", \"transformer\": {\"family\": \"gpt3\", \"layers\": 105, "
        "\"hidden\": 20480, \"heads\": 128, \"seq\": 2048, \"vocab\": 51200}}";
    char mpath[1024];
    fmt_cluster c, r, p, big, a, h;
    fmt_model m, m5, ma, m13;
    cost_params cp;
    util_error err;
    int seed, quick = argc > 1 && strcmp(argv[1], "--quick") == 0;

    snprintf(mpath, sizeof mpath, "%s/examples/llama-7b.json", HETPLAN_SOURCE_DIR);
    if (load_variant("mixed-generations", 0, &c) != UTIL_OK ||
        load_variant("mixed-generations", 1, &r) != UTIL_OK ||
        load_variant("mixed-generations", 2, &p) != UTIL_OK ||
        fmt_load_model(mpath, &m, &err) != UTIL_OK) {
        fprintf(stderr, "place-search: cannot load the examples\n");
        return 1;
    }
    /* fp16: every device of the cluster has it (its V100s and T4s have no
     * bf16 units), so the every-GPU cases can run and the subsets compare
     * placements, not precisions */
    if (fmt_model_set_precision(&m, FMT_PREC_FP16, &err) != UTIL_OK) {
        fprintf(stderr, "place-search: %s\n", err.msg);
        return 1;
    }
    cost_params_init(&cp);
    printf("{\n \"mixed-generations+llama-7b, fp16\": {\n");
    run("every_gpu_rules_only", &c, &m, &cp, 512, 1, -1, 0);
    run("every_gpu_annealed", &c, &m, &cp, 512, 1, 0, 0);
    run("default", &c, &m, &cp, 512, 0, 0, 0);
    run("nodes_reversed", &r, &m, &cp, 512, 0, 0, 0);
    run("h100_a100_only_by_hand", &p, &m, &cp, 512, 0, 0, 1);
    printf(" },\n \"sa-vs-ga mixed-generations+llama-7b, fp16\": {\n");
    sa_vs_ga(&c, &m, &cp, 512, 0, 0);
    printf("  \"every_gpu\": {\n");
    sa_vs_ga(&c, &m, &cp, 512, 1, 1);
    printf("  },\n");
    for (seed = 1; seed <= 5; seed++) { /* the same comparison over seeds */
        char key[64];
        bench_seed = (uint64_t)seed;
        snprintf(key, sizeof key, "sa_seed_%d", seed);
        run_how(key, &c, &m, &cp, 512, 0, 0, SEARCH_PSEARCH_ANNEAL, 0);
        snprintf(key, sizeof key, "ga_seed_%d", seed);
        run_how(key, &c, &m, &cp, 512, 0, 0, SEARCH_PSEARCH_GA, seed == 5);
    }
    bench_seed = 0;
    printf(" },\n \"sa-vs-ga amp-het+gpt2-amp, gbs 32\": {\n");
    if (load_variant("amp-het", 0, &a) != UTIL_OK ||
        fmt_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", &ma, &err) != UTIL_OK ||
        fmt_parse_cluster(big_het, "het-144", &h, &err) != UTIL_OK ||
        fmt_load_model(HETPLAN_SOURCE_DIR "/examples/llama2-13b.json", &m13, &err) != UTIL_OK) {
        fprintf(stderr, "place-search: cannot load the sa-vs-ga cases\n");
        return 1;
    }
    sa_vs_ga(&a, &ma, &cp, 32, 0, 1);
    printf(" },\n \"sa-vs-ga het-144+llama2-13b, gbs 1024\": {\n");
    sa_vs_ga(&h, &m13, &cp, 1024, 0, 0);
    /* both searches given more effort: which one still finds better */
    run_how("sa_3000_steps", &h, &m13, &cp, 1024, 0, 3000, SEARCH_PSEARCH_ANNEAL, 0);
    ga_pop = 32;
    ga_gens = 40;
    run_how("ga_32x40", &h, &m13, &cp, 1024, 0, 0, SEARCH_PSEARCH_GA, 1);
    ga_pop = ga_gens = 0;
    printf(" }%s\n", quick ? "" : ",");
    fmt_cluster_free(&a);
    fmt_cluster_free(&h);
    fmt_model_free(&ma);
    fmt_model_free(&m13);
    if (!quick) {
        if (fmt_parse_cluster(c641, "dgx-641", &big, &err) != UTIL_OK ||
            fmt_parse_model(m530, "mt-nlg-530b", &m5, &err) != UTIL_OK) {
            fprintf(stderr, "place-search: %s\n", err.msg);
            return 1;
        }
        cp.recompute = FMT_RECOMPUTE_FULL;
        printf(" \"641xDGX-A100+530B, gbs 2520, full recomputation\": {\n");
        run("every_gpu", &big, &m5, &cp, 2520, 1, 0, 0);
        run("default", &big, &m5, &cp, 2520, 0, 0, 1);
        printf(" }\n");
        fmt_cluster_free(&big);
        fmt_model_free(&m5);
    }
    printf("}\n");
    fmt_cluster_free(&c);
    fmt_cluster_free(&r);
    fmt_cluster_free(&p);
    fmt_model_free(&m);
    return 0;
}
