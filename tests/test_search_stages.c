/* tests/test_search_stages.c: the structural rule that every pipeline stage holds
 * parameters (docs/cost-model.md, "Stages without parameters"): detection
 * on hand-made strategies, the layer assignment and the whole search never
 * producing such a stage (checked against brute force), and the CLI
 * reporting it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"
#define AMP_PROFILES TU_DATA "/amp/profiles.json"

/* ---- detection on hand-made strategies ------------------------------- */

static void load_gpt2(fmt_cluster *c, fmt_model *m)
{
    util_error err;

    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    ck_assert_int_eq(fmt_load_cluster(EX "amp-het.json", c, &err), UTIL_OK);
    ck_assert_int_eq(fmt_load_model(EX "gpt2-amp.json", m, &err), UTIL_OK);
}

/* tp 1, dp 16 / pp, pp stages with the given boundaries, ranks in order. */
static void make_strategy(fmt_strategy *s, int pp, const int *bounds)
{
    int j, dp = 16 / pp;

    memset(s, 0, sizeof *s);
    ck_assert_int_eq(fmt_strategy_alloc(s, 1, dp, pp), UTIL_OK);
    s->mbs = 1;
    s->gas = 32 / dp;
    for (j = 0; j <= pp; j++)
        s->bounds[j] = bounds[j];
    for (j = 0; j < 16; j++)
        s->ranks[j] = j;
}

START_TEST(detect_by_hand)
{
    /* gpt2-amp: 0 embed2h, 1 noop0, 2-25 blocks, 26 noop1, 27 noop2,
     * 28 embed2v (head), 29 noop3 */
    static const struct {
        int pp;
        int b[17];
        int want;
    } cases[] = {
        {1, {0, 30}, -1},
        {2, {0, 1, 30}, -1},                  /* embedding alone: has parameters */
        {2, {0, 2, 30}, -1},                  /* noop0 with the embedding */
        {4, {0, 1, 2, 16, 30}, 1},            /* noop0 alone (AMP het #10) */
        {4, {0, 2, 26, 28, 30}, 2},           /* noop1 + noop2 */
        {4, {0, 2, 26, 29, 30}, 3},           /* noop3 alone at the end */
        {4, {0, 1, 26, 29, 30}, 3},
        {4, {0, 10, 26, 28, 30}, 2},
        {4, {0, 10, 25, 27, 30}, -1},         /* noop1 with block23, noop2 with the head */
        {8, {0, 1, 2, 3, 4, 26, 27, 28, 30}, 1}, /* the first one is reported */
    };
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    util_error err;
    size_t i;

    load_gpt2(&c, &m);
    cost_params_init(&cp);
    ck_assert_int_eq(cost_param_layers(&m), 26);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fmt_strategy s;
        cost_result r;
        make_strategy(&s, cases[i].pp, cases[i].b);
        ck_assert_msg(cost_empty_stage(&m, &s) == cases[i].want,
                      "case %zu: stage %d, want %d", i, cost_empty_stage(&m, &s),
                      cases[i].want);
        ck_assert_int_eq(fmt_strategy_check(&c, &m, &s, 32, &err), UTIL_OK);
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &cp, &s, &r, &err), UTIL_OK);
        ck_assert_int_eq(r.empty_stage, cases[i].want);
        cost_result_free(&r);
        fmt_strategy_free(&s);
    }
    { /* no bounds, no verdict; NULL-safe */
        fmt_strategy s;
        memset(&s, 0, sizeof s);
        s.pp = 2;
        ck_assert_int_eq(cost_empty_stage(&m, &s), -1);
        ck_assert_int_eq(cost_empty_stage(NULL, NULL), -1);
        ck_assert_int_eq(cost_param_layers(NULL), 0);
    }
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* ---- random models against brute force ------------------------------- */

#define MAXL 10
#define MAXK 4

typedef struct instance {
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    fmt_strategy s;
    double t[MAXK * MAXL], e[MAXK * (MAXL + 1)], mem[MAXK * MAXL], cap[MAXK];
    search_dp_input in;     /* layer-level input, as search_assign_layers builds it */
} instance;

static double urand(util_pcg32 *g, double lo, double hi)
{
    return lo + (hi - lo) * util_pcg32_double(g);
}

/* k single-GPU nodes of random type and memory, a model of L generic
 * layers, some without parameters; free = parameter-less layers take no
 * time, no memory and pass on the previous layer's output unchanged. */
static void make_instance(instance *x, util_pcg32 *g, int L, int k, int free_noop)
{
    static const char *const types[2] = {"V100", "T4"};
    int i, l, j;

    memset(x, 0, sizeof *x);
    x->c.ntypes = 2;
    x->c.types = calloc(2, sizeof *x->c.types);
    ck_assert_ptr_nonnull(x->c.types);
    for (i = 0; i < 2; i++) {
        x->c.types[i] = *fmt_catalog_find(types[i]);
        /* small memories: some instances cannot fit */
        x->c.types[i].mem_bytes = urand(g, 1.4, 6.0) * 1073741824.0;
    }
    x->c.nnodes = k;
    x->c.nodes = calloc((size_t)k, sizeof *x->c.nodes);
    ck_assert_ptr_nonnull(x->c.nodes);
    for (i = 0; i < k; i++) {
        snprintf(x->c.nodes[i].name, sizeof x->c.nodes[i].name, "n%d", i);
        x->c.nodes[i].type = (int)util_pcg32_bounded(g, 2);
        x->c.nodes[i].gpus = 1;
        x->c.nodes[i].intra_bw = 100e9;
        x->c.nodes[i].intra_lat = 5e-6;
        x->c.nodes[i].nic_bw = urand(g, 1e9, 12.5e9);
        x->c.nodes[i].nic_lat = 50e-6;
    }
    ck_assert_int_eq(fmt_cluster_index(&x->c), UTIL_OK);

    snprintf(x->m.name, sizeof x->m.name, "random");
    x->m.nlayers = L;
    x->m.dtype_bytes = 2;
    x->m.layers = calloc((size_t)L, sizeof *x->m.layers);
    ck_assert_ptr_nonnull(x->m.layers);
    for (l = 0; l < L; l++) {
        fmt_layer *y = &x->m.layers[l];
        int noop = util_pcg32_bounded(g, 3) == 0;
        snprintf(y->name, sizeof y->name, "%s%d", noop ? "noop" : "layer", l);
        y->kind = noop ? FMT_KIND_NOOP : FMT_KIND_GENERIC;
        y->params = noop ? 0.0 : floor(urand(g, 1e6, 4e7));
        y->fwd_flops = noop && free_noop ? 0.0 : urand(g, 1e8, noop ? 5e9 : 5e10);
        y->tp_flops_frac = 1.0;
        y->out_bytes = noop && free_noop && l > 0 ? x->m.layers[l - 1].out_bytes
                                                  : floor(urand(g, 1e5, 2e7));
        y->act_bytes = noop && free_noop ? 0.0 : floor(urand(g, 1e6, 5e7));
        y->kernels = noop && free_noop ? 0 : 4;
    }
    cost_params_init(&x->cp);
    /* stated runtime memory: the brute force sums the memory model
     * without a cluster, where a derived one falls back to 1 GiB */
    x->cp.mem_reserve = COST_RESERVE_UNKNOWN;
    ck_assert_int_eq(fmt_strategy_alloc(&x->s, 1, 1, k), UTIL_OK);
    x->s.mbs = 1 + (int)util_pcg32_bounded(g, 2);
    x->s.gas = 1 + (int)util_pcg32_bounded(g, 8);
    for (j = 0; j < k; j++)
        x->s.ranks[j] = j;

    /* the DP's layer-level input from the cost model's public functions */
    for (j = 0; j < k; j++) {
        const fmt_device_type *dt = fmt_device(&x->c, j);
        int inflight = cost_inflight(&x->cp, j, k, x->s.gas);
        double over = cost_memory_overhead_bound(&x->m, &x->cp, 1, x->s.dp, x->s.mbs, j, k,
                                                 inflight, x->s.gas);
        for (l = 0; l < L; l++) {
            cost_layer_time lt;
            cost_layer_time_of(&x->m, NULL, &x->cp, dt, l, 1, x->s.mbs, INFINITY, 0.0,
                               x->c.nodes[j].intra_bw * x->cp.intra_eff, &lt);
            x->t[j * L + l] = lt.fwd + lt.bwd;
            x->mem[j * L + l] = cost_layer_memory(&x->m, &x->cp, l, 1, 1, x->s.mbs,
                                                  inflight);
        }
        x->cap[j] = dt->mem_bytes - over > 0.0 ? dt->mem_bytes - over : 0.0;
    }
    for (j = 0; j + 1 < k; j++) {
        double bw, lat;
        cost_cut_link(&x->c, &x->cp, &x->s, j, &bw, &lat);
        for (l = 1; l <= L; l++)
            x->e[j * (L + 1) + l] =
                2.0 * (lat + (double)x->s.mbs * x->m.layers[l - 1].out_bytes / bw);
    }
    x->in.L = L;
    x->in.k = k;
    x->in.gas = x->s.gas;
    x->in.t = x->t;
    x->in.e = x->e;
    x->in.mem = x->mem;
    x->in.cap = x->cap;
}

static void free_instance(instance *x)
{
    fmt_strategy_free(&x->s);
    fmt_model_free(&x->m);
    fmt_cluster_free(&x->c);
}

/* 1 when a cut before layer l is a group boundary of the search: the
 * layer has parameters and is not the first one that has. */
static int group_cut(const fmt_model *m, int l)
{
    int i;

    if (!(m->layers[l].params > 0.0))
        return 0;
    for (i = 0; i < l; i++)
        if (m->layers[i].params > 0.0)
            return 1;
    return 0;
}

/* Best objective over every split into k stages that fits memory and has
 * parameters in every stage (groups_only: cuts on group boundaries only);
 * HUGE_VAL when there is none. */
/* 1 when s fits memory as cost_evaluate counts it (the layer
 * assignment's memory check is the cost model's). */
static int split_fits(const instance *x, const fmt_strategy *s)
{
    cost_result r;
    util_error err;
    int fits;

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cost_evaluate(&x->c, &x->m, NULL, &x->cp, s, &r, &err), UTIL_OK);
    fits = r.fits;
    cost_result_free(&r);
    return fits;
}

static double brute(const instance *x, int groups_only, int *best_bounds)
{
    int L = x->in.L, k = x->in.k, b[MAXK + 1], j;
    double best = HUGE_VAL;
    fmt_strategy s = x->s;

    /* iterate over all increasing b[1..k-1] in 1..L-1 */
    b[0] = 0;
    b[k] = L;
    for (j = 1; j < k; j++)
        b[j] = j;
    s.bounds = b;
    for (;;) {
        int ok = 1;
        for (j = 1; j < k && ok; j++)
            if (groups_only && !group_cut(&x->m, b[j]))
                ok = 0;
        if (ok && cost_empty_stage(&x->m, &s) < 0 && split_fits(x, &s)) {
            double o = search_dp_objective(&x->in, b);
            if (o < best) {
                best = o;
                if (best_bounds)
                    memcpy(best_bounds, b, (size_t)(k + 1) * sizeof *b);
            }
        }
        /* next combination */
        for (j = k - 1; j >= 1 && b[j] == L - k + j; j--)
            ;
        if (j < 1)
            break;
        b[j]++;
        for (j = j + 1; j < k; j++)
            b[j] = b[j - 1] + 1;
    }
    return best;
}

START_TEST(assign_vs_bruteforce)
{
    util_pcg32 g;
    int it, strict_gap = 0, feasible = 0, infeasible = 0, too_few = 0;

    util_pcg32_seed(&g, 20261121u, 3u);
    for (it = 0; it < 1500; it++) {
        instance x;
        util_error err;
        int L = 2 + (int)util_pcg32_bounded(&g, MAXL - 1);
        int k = 1 + (int)util_pcg32_bounded(&g, L < MAXK ? (unsigned)L : MAXK);
        int free_noop = it % 2, rc;
        double bg, ba, obj;

        make_instance(&x, &g, L, k, free_noop);
        memset(&err, 0, sizeof err);
        rc = search_assign_layers(&x.c, &x.m, NULL, &x.cp, &x.s, &err);
        bg = brute(&x, 1, NULL);
        ba = brute(&x, 0, NULL);
        if (cost_param_layers(&x.m) < k) {
            too_few++;
            ck_assert_int_eq(rc, UTIL_EINFEASIBLE);
            ck_assert_ptr_nonnull(strstr(err.msg, "layers holding parameters"));
            ck_assert(ba == HUGE_VAL);
        } else if (bg == HUGE_VAL) {
            infeasible++;
            ck_assert_msg(rc == UTIL_EINFEASIBLE, "it %d: rc %d without a split", it, rc);
        } else {
            feasible++;
            ck_assert_msg(rc == UTIL_OK, "it %d: rc %d (%s)", it, rc, err.msg);
            ck_assert_int_eq(x.s.bounds[0], 0);
            ck_assert_int_eq(x.s.bounds[k], L);
            ck_assert_int_eq(cost_empty_stage(&x.m, &x.s), -1);
            ck_assert(split_fits(&x, &x.s));
            obj = search_dp_objective(&x.in, x.s.bounds);
            /* optimal over the group splits, never better than every runnable split */
            ck_assert_msg(fabs(obj - bg) <= 1e-9 * bg, "it %d: %.17g vs groups %.17g",
                          it, obj, bg);
            ck_assert_msg(obj >= ba * (1.0 - 1e-9), "it %d: below brute force", it);
            if (free_noop)
                ck_assert_msg(fabs(obj - ba) <= 1e-9 * ba,
                              "it %d: free noops: %.17g vs %.17g", it, obj, ba);
            else if (obj > ba * (1.0 + 1e-9))
                strict_gap++;
        }
        free_instance(&x);
    }
    printf("assignment vs brute force: %d feasible, %d do not fit, %d with too few "
           "layers holding parameters; %d where placing a costly parameter-less "
           "layer after the cut would be better\n",
           feasible, infeasible, too_few, strict_gap);
    ck_assert(feasible > 500);
    ck_assert(infeasible > 0);
    ck_assert(too_few > 0);
}
END_TEST

/* ---- the whole search ------------------------------------------------ */

static void check_no_empty(const search_result *res, const fmt_model *m, const char *what)
{
    int i;

    for (i = 0; i < res->n; i++) {
        ck_assert_msg(cost_empty_stage(m, &res->cands[i].s) < 0,
                      "%s: candidate %d has stage %d without parameters", what, i,
                      cost_empty_stage(m, &res->cands[i].s));
        ck_assert_int_eq(res->cands[i].r.empty_stage, -1);
    }
}

/* The AMP and Megatron searches on GPT-2 (analytic layer times, or AMP's
 * profile when amp_profiles is given) pick no stage without parameters. */
static void check_search_gpt2(const char *amp_profiles)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    int method;

    load_gpt2(&c, &m);
    memset(&prof, 0, sizeof prof);
    if (amp_profiles != NULL)
        ck_assert_int_eq(fmt_profile_from_amp(amp_profiles, "gpt2", &m, &prof, &err),
                         UTIL_OK);
    cost_params_init(&cp);
    for (method = 0; method < 2; method++) {
        search_params_init(&sp);
        sp.method = method ? SEARCH_METHOD_MEGATRON : SEARCH_METHOD_AMP;
        sp.global_batch = 32;
        sp.top_k = 1000;
        sp.keep_infeasible = 1;
        ck_assert_int_eq(search_plan(&c, &m, amp_profiles ? &prof : NULL, &cp, &sp,
                                     &res, &err), UTIL_OK);
        ck_assert(res.n > 10 || method == 1);
        check_no_empty(&res, &m, method ? "megatron" : "amp");
        ck_assert_int_eq(res.rejected_stages, 0); /* 26 layers hold parameters */
        search_result_free(&res);
    }
    fmt_profile_free(&prof);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}

START_TEST(search_gpt2)
{
    check_search_gpt2(NULL);
}
END_TEST

START_TEST(search_gpt2_amp_profile)
{
    check_search_gpt2(AMP_PROFILES);
}
END_TEST

/* A model with 3 layers holding parameters, noops around them, on 8 GPUs:
 * pp 4 and 8 are ruled out with a reason; no stage is ever empty. */
START_TEST(search_few_param_layers)
{
    static const char *model =
        "{\"name\": \"tiny\", \"training\": {\"global_batch\": 16},"
        " \"layers\": ["
        "  {\"name\": \"n0\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
        "  {\"name\": \"emb\", \"kind\": \"embedding\", \"params\": 1000000, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
        "  {\"name\": \"n1\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
        "  {\"name\": \"blk\", \"kind\": \"transformer\", \"params\": 5000000, \"fwd_flops\": 1e10, \"out_bytes\": 4096, \"act_bytes\": 65536},"
        "  {\"name\": \"n2\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
        "  {\"name\": \"n3\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
        "  {\"name\": \"head\", \"kind\": \"head\", \"params\": 1000000, \"fwd_flops\": 1e9, \"out_bytes\": 4096, \"act_bytes\": 65536},"
        "  {\"name\": \"n4\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0}"
        "]}";
    static const char *zero =
        "{\"name\": \"nothing\", \"training\": {\"global_batch\": 16},"
        " \"layers\": [{\"name\": \"n0\", \"kind\": \"noop\", \"params\": 0, \"fwd_flops\": 0,"
        "               \"out_bytes\": 4096, \"act_bytes\": 0, \"repeat\": 2}]}";
    static const char *cluster =
        "{\"name\": \"eight\", \"nodes\": [{\"name\": \"a\", \"device\": \"V100\", \"gpus\": 4,"
        " \"intra_gbps\": 100, \"nic_gbps\": 10, \"count\": 2}]}";
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    char p[TP_PATHN];
    int method, i, pp_seen[9] = {0};

    tp_setup();
    tp_write("tiny.json", model);
    tp_write("zero.json", zero);
    tp_write("eight.json", cluster);
    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_load_cluster(tp_path(p, "eight.json"), &c, &err), UTIL_OK);
    ck_assert_int_eq(c.ndevices, 8);
    ck_assert_int_eq(fmt_load_model(tp_path(p, "tiny.json"), &m, &err), UTIL_OK);
    ck_assert_int_eq(cost_param_layers(&m), 3);
    cost_params_init(&cp);
    for (method = 0; method < 2; method++) {
        search_params_init(&sp);
        sp.method = method ? SEARCH_METHOD_MEGATRON : SEARCH_METHOD_AMP;
        sp.global_batch = 16;
        sp.top_k = 1000;
        sp.keep_infeasible = 1;
        ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_OK);
        ck_assert(res.n > 0);
        check_no_empty(&res, &m, method ? "megatron" : "amp");
        for (i = 0; i < res.n; i++) {
            ck_assert_int_le(res.cands[i].s.pp, 3);
            pp_seen[res.cands[i].s.pp] = 1;
        }
        if (method == 0) {
            ck_assert(pp_seen[1] && pp_seen[2]);
            ck_assert(res.rejected_stages > 0); /* pp 4 and 8 */
            ck_assert(res.rejected_other >= res.rejected_stages);
        }
        search_result_free(&res);
    }
    /* global batch 1, tp 1: only dp 1, pp 8 divides, more stages than the
     * 3 layers holding parameters: nothing runnable, and the error says why */
    search_params_init(&sp);
    sp.global_batch = 1;
    sp.max_tp = 1;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, "no runnable strategy") != NULL &&
                      strstr(err.msg, "3 layers holding parameters") != NULL,
                  "message '%s'", err.msg);
    /* a model with no parameters at all cannot be planned */
    sp.global_batch = 16;
    fmt_model_free(&m);
    ck_assert_int_eq(fmt_load_model(tp_path(p, "zero.json"), &m, &err), UTIL_OK);
    ck_assert_int_eq(cost_param_layers(&m), 0);
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no layer with parameters"));
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    tp_teardown();
}
END_TEST

/* ---- the command line ------------------------------------------------ */

START_TEST(cli_evaluate_reports)
{
    static const char *strats =
        "{\"strategies\": ["
        " {\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, \"stage_boundaries\": [0, 7, 14, 20, 30]},"
        " {\"tp\": 1, \"dp\": 1, \"pp\": 16, \"mbs\": 4, \"stage_boundaries\":"
        "  [0, 1, 2, 3, 4, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 30]}]}";
    static const char *const table_args[] = {
        "evaluate", "--cluster", EX "amp-het.json", "--model", EX "gpt2-amp.json",
        "--strategies", "s.json", NULL};
    static const char *const json_args[] = {
        "evaluate", "--cluster", EX "amp-het.json", "--model", EX "gpt2-amp.json",
        "--strategies", "s.json", "--format", "json", NULL};
    tp_run_out r;
    cJSON *doc, *arr, *s0, *s1;
    const cJSON *v;

    tp_setup();
    tp_write("s.json", strats);
    tp_run(&r, table_args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    /* the fits column, then the features column ("-": none stated) */
    ck_assert_ptr_nonnull(strstr(r.out, " no* -\n"));
    ck_assert_ptr_nonnull(strstr(r.out, "* #2 is not runnable: stage 1 (layers 1-1: "
                                        "'noop0') holds no parameters"));
    ck_assert_ptr_null(strstr(r.out, "* #1 "));
    tp_run_free(&r);

    tp_run(&r, json_args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    arr = cJSON_GetObjectItem(doc, "strategies");
    ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
    s0 = cJSON_GetArrayItem(arr, 0);
    s1 = cJSON_GetArrayItem(arr, 1);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(s0, "runnable")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(s0, "empty_stage")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(s0, "reason")));
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(s1, "runnable")));
    v = cJSON_GetObjectItem(s1, "empty_stage");
    ck_assert(cJSON_IsNumber(v) && v->valueint == 1);
    v = cJSON_GetObjectItem(s1, "reason");
    ck_assert(cJSON_IsString(v) && strstr(v->valuestring, "holds no parameters"));
    /* memory is a separate verdict: this one fits */
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(s1, "memory"), "fits")));
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_teardown();
}
END_TEST

/* The plan the issue reported (AMP's profile on the heterogeneous
 * cluster picked stages of a lone noop): now every stage holds parameters. */
START_TEST(cli_plan_amp_het)
{
    static const char *const args[] = {
        "--cluster", EX "amp-het.json", "--model", EX "gpt2-amp.json",
        "--amp-profile", AMP_PROFILES, "--top-k", "30", "--format", "json", NULL};
    tp_run_out r;
    cJSON *doc;
    const cJSON *s;
    int n = 0;

    tp_setup();
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    doc = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(doc);
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "strategies"))
    {
        const cJSON *b = cJSON_GetObjectItem(s, "stage_boundaries"), *x;
        int prev = -1;
        ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(s, "runnable")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(s, "empty_stage")));
        cJSON_ArrayForEach(x, b)
        { /* noop0 is layer 1, noop1/2 are 26-27, noop3 is 29 */
            if (prev >= 0)
                ck_assert_msg(!(prev == 1 && x->valueint == 2) &&
                                  !(prev >= 26 && x->valueint <= 28) &&
                                  !(prev == 29),
                              "strategy %d: stage [%d, %d) of noops", n, prev,
                              x->valueint);
            prev = x->valueint;
        }
        n++;
    }
    ck_assert_int_eq(n, 30);
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_teardown();
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("stages");
    TCase *tc = tcase_create("stages");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, detect_by_hand);
    tcase_add_test(tc, assign_vs_bruteforce);
    tcase_add_test(tc, search_gpt2);
    tcase_add_test(tc, search_few_param_layers);
    tcase_add_test(tc, cli_evaluate_reports);
    suite_add_tcase(s, tc);
    return s;
}

/* Needs AMP's profiles (../shared/data/amp). */
static Suite *data_suite(void)
{
    Suite *s = suite_create("stages with AMP's profile");
    TCase *tc = tcase_create("amp");

    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, search_gpt2_amp_profile);
    tcase_add_test(tc, cli_plan_amp_het);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain_suite, data_suite, TU_DATA "/amp");
}
