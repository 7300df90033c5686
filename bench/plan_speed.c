/* bench/plan_speed.c: wall time of the layer-assignment DP on random
 * heterogeneous instances, of whole searches on the shipped examples and
 * of the scale targets (thousands of GPUs, huge batches, a 530B model),
 * each printed with its target and whether it is met (the targets' time
 * includes the nearby-batch advice, advice_cpu_s apart), and the process's
 * peak resident memory.  Prints one JSON object; --dp-only skips the
 * searches, --targets-only runs only the scale targets.  --record prints
 * instead the plans of every example cluster x model and of the targets
 * at full precision, to check that a faster search plans the same. */
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "plan.h"
#include "../search/search.h" /* search/, not util/util.h */

#define DP_REPS 11
#define PLAN_REPS 3

typedef struct dp_case {
    int layers, stages;
} dp_case;

typedef struct plan_case {
    const char *cluster, *model;
} plan_case;

static const dp_case dp_cases[] = {{30, 16}, {128, 64}, {256, 64}};

static const plan_case plan_cases[] = {
    {"amp-homogeneous", "gpt2-amp"},
    {"amp-het", "gpt2-amp"},
    {"mixed-generations", "gpt2-amp"},
    {"mixed-generations", "gpt2-345m"},
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* JSON string body: escape quotes, backslashes and control bytes. */
static void put_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

/* One DP instance: layer times vary 0.5..1.5, stage devices differ up
 * to 4x in speed, cut costs up to 0.2 of a layer; gas 8; PCG32 seed 1. */
static void bench_dp(const dp_case *dc, util_pcg32 *rng, int first)
{
    int L = dc->layers, k = dc->stages, j, l, rep, rc = UTIL_OK;
    double *t = malloc((size_t)(k * L) * sizeof *t);
    double *e = malloc((size_t)((k - 1) * (L + 1) + 1) * sizeof *e);
    double *base = malloc((size_t)L * sizeof *base);
    int *bounds = malloc((size_t)(k + 1) * sizeof *bounds);
    double ms[DP_REPS], obj = 0.0, t0, speed;
    search_dp_input in;
    search_dp_stats st = {0, 0};
    util_error err;

    printf("%s{\"layers\":%d,\"stages\":%d", first ? "" : ",", L, k);
    if (t == NULL || e == NULL || base == NULL || bounds == NULL) {
        printf(",\"error\":\"out of memory\"}");
        goto cleanup;
    }
    for (l = 0; l < L; l++)
        base[l] = 0.5 + util_pcg32_double(rng);
    for (j = 0; j < k; j++) {
        speed = 1.0 + 3.0 * util_pcg32_double(rng);
        for (l = 0; l < L; l++)
            t[j * L + l] = base[l] * speed;
    }
    for (l = 0; l < (k - 1) * (L + 1); l++)
        e[l] = 0.2 * util_pcg32_double(rng);
    memset(&in, 0, sizeof in);
    in.L = L;
    in.k = k;
    in.gas = 8;
    in.t = t;
    in.e = e;
    for (rep = 0; rep < DP_REPS && rc == UTIL_OK; rep++) {
        t0 = now_ms();
        rc = search_dp_assign_stats(&in, bounds, &obj, &st, &err);
        ms[rep] = now_ms() - t0;
    }
    if (rc != UTIL_OK) {
        printf(",\"error\":");
        put_json_string(err.msg);
        putchar('}');
        goto cleanup;
    }
    printf(",\"ms\":%.4f,\"gas\":%d,\"pareto_steps\":%d,\"solves\":%d,"
           "\"objective\":%.6f}", median(ms, DP_REPS), in.gas, st.steps,
           st.solves, obj);
cleanup:
    free(t);
    free(e);
    free(base);
    free(bounds);
}

static void bench_plan(const plan_case *pc, int first)
{
    char cpath[512], mpath[512], buf[1024];
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    double ms[PLAN_REPS], t0;
    long evaluated = 0;
    int rc, rep, have_c = 0, have_m = 0;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    snprintf(cpath, sizeof cpath, "%s/examples/%s.json", HETPLAN_SOURCE_DIR,
             pc->cluster);
    snprintf(mpath, sizeof mpath, "%s/examples/%s.json", HETPLAN_SOURCE_DIR,
             pc->model);
    snprintf(buf, sizeof buf, "%s + %s", pc->cluster, pc->model);
    printf("%s{\"example\":", first ? "" : ",");
    put_json_string(buf);
    rc = fmt_load_cluster(cpath, &c, &err);
    if (rc == UTIL_OK) {
        have_c = 1;
        rc = fmt_load_model(mpath, &m, &err);
    }
    if (rc == UTIL_OK) {
        have_m = 1;
        cost_params_init(&cp);
        search_params_init(&sp);
        sp.global_batch = m.global_batch > 0 ? m.global_batch : 32;
        for (rep = 0; rep < PLAN_REPS && rc == UTIL_OK; rep++) {
            memset(&res, 0, sizeof res);
            t0 = now_ms();
            rc = search_plan(&c, &m, NULL, &cp, &sp, &res, &err);
            ms[rep] = now_ms() - t0;
            if (rc == UTIL_OK)
                evaluated = res.evaluated;
            search_result_free(&res);
        }
    }
    if (rc != UTIL_OK) {
        util_error_format(&err, buf, sizeof buf);
        printf(",\"error\":");
        put_json_string(buf[0] ? buf : util_strerror(rc));
    } else {
        printf(",\"ms\":%.3f,\"candidates\":%ld", median(ms, PLAN_REPS),
               evaluated);
    }
    putchar('}');
    if (have_m)
        fmt_model_free(&m);
    if (have_c)
        fmt_cluster_free(&c);
}

/* 1 with --record: plans printed in full instead of timings */
static int g_record;
static void record_result(const char *name, int rc, const search_result *res);

/* ---- scale targets --------------------------------------------------- */

/* A generated cluster: `nodes` nodes of 8 GPUs, the first half of one
 * device type and the rest of another (the same type twice makes it
 * homogeneous); a transformer of `blocks` blocks; a global batch. */
typedef struct target_case {
    const char *name;
    int nodes;
    const char *type_a, *type_b;
    double intra_gbps, nic_gbps;
    int blocks, hidden, heads, seq;
    double global_batch;
    double target_s;
    int top_k;              /* strategies kept; 0 = the default */
} target_case;

static const target_case target_cases[] = {
    /* 4,096 GPUs (256 DGX A100 + 256 DGX H100 nodes), 128 blocks */
    {"4096 GPUs x 128 layers", 512, "A100-80GB", "H100-SXM", 2400, 1600,
     128, 8192, 64, 2048, 2048, 1.0, 0},
    /* 65,536 GPUs, the same model */
    {"65536 GPUs", 8192, "A100-80GB", "H100-SXM", 2400, 1600,
     128, 8192, 64, 2048, 16384, 10.0, 0},
    /* global batch 1e9 on 64 mixed GPUs, GPT-2 345M shape */
    {"global batch 1e9", 8, "A100-80GB", "V100-32GB", 2400, 200,
     24, 1024, 16, 1024, 1e9, 1.0, 0},
    /* Megatron-LM SC21 (Narayanan et al. 2021, Table 1): 530B, 105
     * layers, h 20480, 128 heads, s 2048 on 640 DGX A100 80GB nodes
     * (NVLink 600 GB/s per GPU, 8 x 200 Gbit/s HDR InfiniBand), batch 2520 */
    {"530B on 5120 A100", 640, "A100-80GB", "A100-80GB", 2400, 1600,
     105, 20480, 128, 2048, 2520, 1.0, 0},
    /* many layers on few GPUs: 8,192 small blocks on 8 A100 + 8 V100 */
    {"8192 layers on 16 GPUs", 2, "A100-80GB", "V100-32GB", 2400, 200,
     8192, 256, 4, 512, 512, 10.0, 0},
    /* many GPUs, few layers, many strategies kept */
    {"4096 GPUs x 2 blocks, top-k 100", 512, "A100-80GB", "H100-SXM", 2400, 1600,
     2, 1024, 16, 1024, 4096, 2.0, 100},
};

/* CPU seconds of this process: the machine is shared, so wall time
 * also counts other people's work */
static double cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double max_rss_mib(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1.0;
    return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static void bench_target(const target_case *tc, int first)
{
    char cj[1024], mj[512], buf[1024];
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    search_batch_advice adv;
    util_error err;
    double t0, c0, s = 0.0, cs = 0.0, as = 0.0;
    int rc, half = tc->nodes / 2;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    memset(&res, 0, sizeof res);
    memset(&adv, 0, sizeof adv);
    snprintf(cj, sizeof cj,
             "{\"name\":\"bench\",\"nodes\":["
             "{\"name\":\"a\",\"count\":%d,\"device\":\"%s\",\"gpus\":8,"
             "\"intra_gbps\":%g,\"nic_gbps\":%g},"
             "{\"name\":\"b\",\"count\":%d,\"device\":\"%s\",\"gpus\":8,"
             "\"intra_gbps\":%g,\"nic_gbps\":%g}]}",
             half, tc->type_a, tc->intra_gbps, tc->nic_gbps, tc->nodes - half,
             tc->type_b, tc->intra_gbps, tc->nic_gbps);
    snprintf(mj, sizeof mj,
             "{\"name\":\"bench\",\"training\":{\"global_batch\":%.0f,"
             "\"precision\":\"fp16\"},\"transformer\":{\"family\":\"gpt3\","
             "\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"seq\":%d,"
             "\"vocab\":51200}}", tc->global_batch, tc->blocks, tc->hidden,
             tc->heads, tc->seq);
    if (!g_record) {
        printf("%s{\"target\":", first ? "" : ",");
        put_json_string(tc->name);
    }
    rc = fmt_parse_cluster(cj, "bench-cluster.json", &c, &err);
    if (rc == UTIL_OK)
        rc = fmt_parse_model(mj, "bench-model.json", &m, &err);
    if (rc == UTIL_OK) {
        cost_params_init(&cp);
        search_params_init(&sp);
        sp.global_batch = (int)tc->global_batch;
        if (tc->top_k > 0)
            sp.top_k = tc->top_k;
        t0 = now_ms();
        c0 = cpu_s();
        rc = search_plan(&c, &m, NULL, &cp, &sp, &res, &err);
        as = cpu_s();
        /* the nearby-batch advice the planner adds to every plan */
        if (rc == UTIL_OK && res.n > 0)
            rc = search_advise_batch(&c, &m, NULL, &cp, &sp,
                                     sp.global_batch / res.cands[0].r.iter_s,
                                     &adv, &err);
        s = (now_ms() - t0) / 1e3;
        cs = cpu_s() - c0;
        as = cpu_s() - as;
    }
    if (g_record) {
        record_result(tc->name, rc, &res);
        goto cleanup;
    }
    printf(",\"gpus\":%d,\"layers\":%d,\"global_batch\":%.0f",
           c.ndevices, m.nlayers, tc->global_batch);
    if (rc != UTIL_OK) {
        util_error_format(&err, buf, sizeof buf);
        printf(",\"error\":");
        put_json_string(buf[0] ? buf : util_strerror(rc));
    } else {
        const fmt_strategy *b = &res.cands[0].s;
        printf(",\"wall_s\":%.3f,\"cpu_s\":%.3f,\"target_s\":%g,\"met\":%s,"
               "\"space\":%ld,"
               "\"pruned\":%ld,\"candidates\":%ld,"
               "\"best\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"mbs\":%d,"
               "\"vpp\":%d,\"sp\":%d,\"recompute\":%d,\"zero\":%d,"
               "\"iter_s\":%.4f}", s, cs, tc->target_s,
               cs < tc->target_s ? "true" : "false", res.space, res.pruned,
               res.evaluated, b->tp, b->pp,
               b->dp, b->mbs, b->vpp, b->sp, b->recompute, b->zero,
               res.cands[0].r.iter_s);
        printf(",\"advice_cpu_s\":%.3f", as);
        if (adv.global_batch > 0)
            printf(",\"batch_advice\":{\"global_batch\":%d,\"speedup\":%.4f}",
                   adv.global_batch, adv.speedup);
    }
    printf(",\"max_rss_mib\":%.1f}", max_rss_mib());
    fflush(stdout);
cleanup:
    search_result_free(&res);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}


/* ---- plans at full precision (--record) ------------------------------ */

/* Every kept candidate of res: degrees, features, placement, bounds,
 * ranks, shards and the predicted time to 17 digits, so that two builds'
 * plans can be compared with diff. */
static void record_result(const char *name, int rc, const search_result *res)
{
    int i, j;

    printf("%s rc %d", name, rc);
    if (rc != UTIL_OK) {
        putchar('\n');
        return;
    }
    printf(" n %d batch %d\n", res->n, res->global_batch);
    for (i = 0; i < res->n; i++) {
        const fmt_strategy *s = &res->cands[i].s;
        const cost_result *r = &res->cands[i].r;
        int nr = s->tp * s->dp * s->pp;
        printf("  %d tp %d dp %d pp %d mbs %d gas %d sched %d vpp %d sp %d rc %d "
               "zero %d place %s iter %.17g fits %d\n   bounds", i, s->tp, s->dp,
               s->pp, s->mbs, s->gas, s->schedule, s->vpp, s->sp, s->recompute,
               s->zero, s->placement, r->iter_s, r->fits);
        for (j = 0; j <= s->pp; j++)
            printf(" %d", s->bounds[j]);
        printf("\n   ranks");
        for (j = 0; j < nr; j++)
            printf(" %d", s->ranks[j]);
        if (s->tp_heads != NULL) {
            printf("\n   heads");
            for (j = 0; j < nr; j++)
                printf(" %d/%d", s->tp_heads[j], s->tp_cols ? s->tp_cols[j] : -1);
        }
        putchar('\n');
    }
}

static const char *const rec_clusters[] = {"amp-homogeneous", "amp-het",
                                           "mixed-generations", "h100-node4"};
static const char *const rec_models[] = {
    "gpt2-amp", "gpt2-345m", "gpt2-small", "gpt2-medium", "gpt2-xl",
    "gpt3-xl", "gpt-neo-2.7b", "gpt-neox-20b", "opt-1.3b", "llama-7b",
    "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b"};

/* search_plan on every example cluster x model (the model's batch, else
 * 32) and on the scale targets, printed by record_result. */
static void record_all(void)
{
    char cpath[512], mpath[512], name[256];
    size_t a, b;

    for (a = 0; a < sizeof rec_clusters / sizeof rec_clusters[0]; a++)
        for (b = 0; b < sizeof rec_models / sizeof rec_models[0]; b++) {
            fmt_cluster c;
            fmt_model m;
            cost_params cp;
            search_params sp;
            search_result res;
            util_error err;
            int rc;

            memset(&c, 0, sizeof c);
            memset(&m, 0, sizeof m);
            memset(&res, 0, sizeof res);
            memset(&err, 0, sizeof err);
            snprintf(cpath, sizeof cpath, "%s/examples/%s.json",
                     HETPLAN_SOURCE_DIR, rec_clusters[a]);
            snprintf(mpath, sizeof mpath, "%s/examples/%s.json",
                     HETPLAN_SOURCE_DIR, rec_models[b]);
            snprintf(name, sizeof name, "%s+%s", rec_clusters[a], rec_models[b]);
            rc = fmt_load_cluster(cpath, &c, &err);
            if (rc == UTIL_OK)
                rc = fmt_load_model(mpath, &m, &err);
            if (rc == UTIL_OK) {
                cost_params_init(&cp);
                search_params_init(&sp);
                sp.global_batch = m.global_batch > 0 ? m.global_batch : 32;
                rc = search_plan(&c, &m, NULL, &cp, &sp, &res, &err);
            }
            record_result(name, rc, &res);
            search_result_free(&res);
            fmt_model_free(&m);
            fmt_cluster_free(&c);
        }
}

int main(int argc, char **argv)
{
    util_pcg32 rng;
    size_t i;
    int dp_only = 0, targets_only = 0, only = -1, a;
    double rss;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--dp-only") == 0) {
            dp_only = 1;
        } else if (strcmp(argv[a], "--record") == 0) {
            g_record = 1;
        } else if (strcmp(argv[a], "--targets-only") == 0) {
            targets_only = 1;
        } else if (strcmp(argv[a], "--target") == 0 && a + 1 < argc) {
            targets_only = 1;
            only = atoi(argv[++a]);
        } else {
            fprintf(stderr, "usage: plan-speed [--dp-only | --targets-only | --target I | --record]\n");
            return EXIT_FAILURE;
        }
    }
    util_pcg32_seed(&rng, 1u, 1u);
    if (g_record) { /* plans, not timings */
        if (only < 0)
            record_all();
        for (i = 0; i < sizeof target_cases / sizeof target_cases[0]; i++)
            if (only < 0 || (size_t)only == i)
                bench_target(&target_cases[i], 0);
        return EXIT_SUCCESS;
    }
    printf("{");
    if (!targets_only) {
        printf("\"dp\":[");
        for (i = 0; i < sizeof dp_cases / sizeof dp_cases[0]; i++)
            bench_dp(&dp_cases[i], &rng, i == 0);
        printf("]");
    }
    if (!dp_only && !targets_only) {
        printf(",\"plans\":[");
        for (i = 0; i < sizeof plan_cases / sizeof plan_cases[0]; i++)
            bench_plan(&plan_cases[i], i == 0);
        printf("]");
    }
    if (!dp_only) {
        printf("%s\"targets\":[", targets_only ? "" : ",");
        for (i = 0; i < sizeof target_cases / sizeof target_cases[0]; i++)
            if (only < 0 || (size_t)only == i)
                bench_target(&target_cases[i], only >= 0 || i == 0);
        rss = max_rss_mib();
        printf("],\"max_rss_mib\":%.1f,\"memory_target_mib\":256,"
               "\"memory_met\":%s", rss, rss < 256.0 ? "true" : "false");
    }
    printf("}\n");
    return EXIT_SUCCESS;
}
