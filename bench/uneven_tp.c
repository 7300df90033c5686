/* bench/uneven_tp.c: predicted gain of uneven tensor-parallel shards
 * (search_shard_strategy, GLPK) over Megatron's even split, on one TP
 * group that mixes two GPU types joined by a fast link, for a few
 * models.  Prints one JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"

typedef struct group_case {
    const char *fast, *slow;    /* catalogue names */
    int nfast, nslow;           /* GPUs of each, in two nodes */
} group_case;

typedef struct model_case {
    const char *name, *family;
    int layers, hidden, heads, seq;
} model_case;

static const group_case groups[] = {
    {"A100-40GB", "V100", 2, 2},
    {"A100-80GB", "T4", 2, 2},
    {"H100-SXM", "A100-80GB", 2, 2},
    {"V100", "T4", 3, 1},
    {"A100-40GB", "V100", 4, 4},
};

static const model_case models[] = {
    {"gpt2-345m", "gpt2", 24, 1024, 16, 1024},
    {"gpt3-xl", "gpt3", 24, 2048, 16, 2048},
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One case: tp = nfast + nslow, dp = pp = 1; returns 0 on success. */
static int run_case(const group_case *g, const model_case *mc, int first)
{
    char ctext[1024], mtext[512];
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result even, un;
    search_shard_params sp;
    util_error err;
    int tp = g->nfast + g->nslow, k, rc = 1;
    double t0, solve_ms;

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    memset(&even, 0, sizeof even);
    memset(&un, 0, sizeof un);
    memset(&err, 0, sizeof err);
    snprintf(ctext, sizeof ctext,
             "{\"name\":\"group\",\"nodes\":["
             "{\"name\":\"f\",\"device\":\"%s\",\"gpus\":%d,\"intra_gbps\":2400,\"nic_gbps\":200},"
             "{\"name\":\"s\",\"device\":\"%s\",\"gpus\":%d,\"intra_gbps\":2400,\"nic_gbps\":200}],"
             "\"links\":[{\"a\":\"f\",\"b\":\"s\",\"gbps\":1200,\"latency_ms\":0.005}]}",
             g->fast, g->nfast, g->slow, g->nslow);
    snprintf(mtext, sizeof mtext,
             "{\"name\":\"%s\",\"training\":{\"global_batch\":16},"
             "\"transformer\":{\"family\":\"%s\",\"layers\":%d,\"hidden\":%d,"
             "\"heads\":%d,\"seq\":%d,\"vocab\":50304}}",
             mc->name, mc->family, mc->layers, mc->hidden, mc->heads, mc->seq);
    if (fmt_parse_cluster(ctext, "group", &c, &err) != UTIL_OK ||
        fmt_parse_model(mtext, mc->name, &m, &err) != UTIL_OK ||
        fmt_strategy_alloc(&s, tp, 1, 1) != UTIL_OK)
        goto done;
    for (k = 0; k < tp; k++)
        s.ranks[k] = k;
    s.bounds[1] = m.nlayers;
    s.mbs = 1;
    s.gas = 16;
    cost_params_init(&p);
    if (cost_evaluate(&c, &m, NULL, &p, &s, &even, &err) != UTIL_OK)
        goto done;
    search_shard_params_init(&sp);
    t0 = now_ms();
    if (search_shard_strategy(&c, &m, NULL, &p, &sp, 1, &s, &err) != UTIL_OK)
        goto done;
    solve_ms = now_ms() - t0;
    if (cost_evaluate(&c, &m, NULL, &p, &s, &un, &err) != UTIL_OK)
        goto done;
    printf("%s    {\"group\": \"%d %s + %d %s\", \"model\": \"%s\", \"tp\": %d,"
           " \"even_s\": %.6f, \"uneven_s\": %.6f, \"gain\": %.4f,"
           " \"even_fits\": %s, \"uneven_fits\": %s, \"solve_ms\": %.2f,"
           " \"heads\": [", first ? "" : ",\n", g->nfast, g->fast, g->nslow,
           g->slow, mc->name, tp, even.iter_s, un.iter_s,
           even.iter_s / un.iter_s, even.fits ? "true" : "false",
           un.fits ? "true" : "false", solve_ms);
    for (k = 0; k < tp; k++)
        printf("%s%d", k ? ", " : "", s.tp_heads ? s.tp_heads[k] : m.heads / tp);
    printf("], \"mlp_cols\": [");
    for (k = 0; k < tp; k++)
        printf("%s%d", k ? ", " : "", s.tp_cols ? s.tp_cols[k] : 4 * m.hidden / tp);
    printf("]}");
    rc = 0;
done:
    if (rc != 0)
        fprintf(stderr, "uneven-tp: %s: %s\n", mc->name, err.msg);
    cost_result_free(&even);
    cost_result_free(&un);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return rc;
}

int main(void)
{
    size_t g, mi;
    int first = 1, rc = 0;

    printf("{\n  \"bench\": \"uneven-tp\",\n  \"note\": \"predicted iteration "
           "time of one TP group (dp = pp = 1, mbs 1, 16 micro-batches), even "
           "split vs shards from the GLPK program; gain = even_s / uneven_s\",\n"
           "  \"cases\": [\n");
    for (g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (mi = 0; mi < sizeof models / sizeof models[0]; mi++) {
            if (run_case(&groups[g], &models[mi], first) != 0)
                rc = 1;
            else
                first = 0;
        }
    printf("\n  ]\n}\n");
    return rc;
}
