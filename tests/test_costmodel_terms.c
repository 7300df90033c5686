/* tests/test_costmodel_terms.c: every memory term of the first pipeline
 * stage (costmodel/memory.c, costmodel/activations.c) against the
 * published formulas, hand-computed here from them, at the four models of
 * Korthikanti et al. 2022 ("Reducing activation recomputation in large
 * transformer models", table 3: 22B, 175B, 530B, 1T; s 2048, V 51200,
 * micro-batch 1): the activations per layer of table 2, the in-flight
 * micro-batches of section 4.2, and Megatron-LM's estimator
 * megatron/training/theoretical_memory_usage.py (parameters of the most
 * loaded shard, bytes per parameter, activations of the first stage);
 * then the terms hetplan adds beyond them (docs/memory-model.md, "Beyond
 * the formulas"), and the search's per-layer sums equal to the stage's
 * peak. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

/* A configuration of Korthikanti et al. 2022, table 3. */
typedef struct kcfg {
    const char *name;
    double h, a;
    int L, t, p;
} kcfg;

static const kcfg cfgs[] = {
    {"22B", 6144.0, 64.0, 48, 8, 1},
    {"175B", 12288.0, 96.0, 96, 8, 8},
    {"530B", 20480.0, 128.0, 105, 8, 35},
    {"1T", 25600.0, 160.0, 128, 8, 64},
};
#define NCFG ((int)(sizeof cfgs / sizeof cfgs[0]))

static const double S = 2048.0, V = 51200.0;

/* The model of configuration c: GPT with dropout, LayerNorm, f = 4h,
 * tied embeddings; no biases and no learned position table, so that its
 * parameters are the estimator's (which counts neither). */
static void load(fmt_model *m, const kcfg *c, const char *training)
{
    char text[1024];
    util_error err;
    int rc;

    snprintf(text, sizeof text,
             "{\"name\": \"%s\", \"training\": {%s}, \"transformer\": "
             "{\"family\": \"gpt3\", \"layers\": %d, \"hidden\": %.0f, "
             "\"heads\": %.0f, \"seq\": %.0f, \"vocab\": %.0f, "
             "\"bias\": false, \"positions\": \"rotary\", \"norm\": "
             "\"layernorm\", \"dropout\": true, \"tied_embeddings\": true}}",
             c->name, training, c->L, c->h, c->a, S, V);
    memset(&err, 0, sizeof err);
    rc = fmt_parse_model(text, "t.json", m, &err);
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
    ck_assert_int_eq(m->nlayers, c->L + 3); /* embedding, blocks, norm, head */
}

/* Relative equality. */
#define EQ(x, y, what)                                                        \
    ck_assert_msg(fabs((x) - (y)) <= 1e-12 * fabs(y) + 1e-6,                  \
                  "%s %s: hetplan %.17g, formula %.17g", c->name, what,     \
                  (double)(x), (double)(y))

/* The first stage of c at tp t, dp d, micro-batch 1, gas micro-batches,
 * vpp v: layers [0, 1 + L/p) (the whole model when p = 1). */
static void first_stage(const fmt_model *m, const cost_params *p, const kcfg *c,
                        int d, int gas, int v, cost_memory *x)
{
    cost_mem_stage st;

    memset(&st, 0, sizeof st);
    st.a = 0;
    st.b = c->p > 1 ? 1 + c->L / c->p : m->nlayers;
    st.tp = c->t;
    st.dp = d;
    st.mbs = 1;
    st.gas = gas;
    st.stage = 0;
    st.pp = c->p;
    st.inflight = cost_inflight(p, 0, c->p, gas);
    if (v > 1)
        st.inflight_v = cost_inflight_interleaved(0, c->p, gas, v);
    cost_device_memory(m, p, &st, x);
}

/* Table 2, per layer and sample (b = 1), fp16 with eager attention and
 * attention dropout, the paper's setting:
 * no parallelism sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht)); TP + SP
 * sbh(34/t + 5as/(ht)); TP + selective sbh(10 + 24/t); TP + SP +
 * selective sbh 34/t; full recomputation 2sbh (section 5). */
START_TEST(table2_per_layer)
{
    int i;

    for (i = 0; i < NCFG; i++) {
        const kcfg *c = &cfgs[i];
        double sbh = S * c->h, t = c->t, as_h = c->a * S / c->h;
        cost_params p;
        fmt_model m;

        load(&m, c, "\"precision\": \"fp16\", \"attention\": \"eager\", "
                    "\"attention_dropout\": true");
        cost_params_init(&p);
        EQ(cost_layer_stored(&m, &p, 1, 1), sbh * (34.0 + 5.0 * as_h), "none, t 1");
        EQ(cost_layer_stored(&m, &p, 1, c->t), sbh * (10.0 + 24.0 / t + 5.0 * as_h / t),
           "TP");
        p.sp = 1;
        EQ(cost_layer_stored(&m, &p, 1, c->t), sbh * (34.0 / t + 5.0 * as_h / t),
           "TP + SP");
        p.recompute = FMT_RECOMPUTE_SELECTIVE;
        EQ(cost_layer_stored(&m, &p, 1, c->t), sbh * 34.0 / t, "TP + SP + selective");
        p.sp = 0;
        EQ(cost_layer_stored(&m, &p, 1, c->t), sbh * (10.0 + 24.0 / t), "TP + selective");
        p.recompute = FMT_RECOMPUTE_FULL;
        EQ(cost_layer_stored(&m, &p, 1, c->t), 2.0 * sbh, "full");
        fmt_model_free(&m);
    }
}
END_TEST

/* Section 4.2: the first stage of 1F1B holds p micro-batches (fewer when
 * the iteration has fewer, theoretical_memory_usage.py's
 * min(1, gas / p)); interleaved with v chunks p (1 + (p - 1) / (p v)). */
START_TEST(inflight_first_stage)
{
    int i, v;

    for (i = 0; i < NCFG; i++) {
        const kcfg *c = &cfgs[i];
        double p = c->p;
        cost_params cp;

        cost_params_init(&cp);
        ck_assert_int_eq(cost_inflight(&cp, 0, c->p, 4 * c->p), c->p);
        ck_assert_int_eq(cost_inflight(&cp, 0, c->p, 1), 1);
        if (c->p == 1)
            continue;
        ck_assert_int_eq(cost_inflight(&cp, 0, c->p, c->p / 2), c->p / 2);
        for (v = 2; v <= 4; v++)
            EQ(cost_inflight_interleaved(0, c->p, 4 * c->p, v),
               p * (1.0 + (p - 1.0) / (p * v)), "interleaved in flight");
    }
}
END_TEST

/* theoretical_memory_usage.py, compute_weight_and_optimizer_memory:
 * transformer parameters 2 L h^2 (2 + 4 + 2/h + 1/(L h)) (attention 4h^2,
 * MLP 8h^2, two LayerNorms 4h, the final LayerNorm 2h; f = 4h, no GQA),
 * the most loaded shard (N / p + V h) / t.  hetplan differs by design in
 * the LayerNorms alone: Megatron-LM keeps them whole on every TP rank
 * (hetplan: 4h per block and 2h on the last stage, not divided by t; the
 * estimator divides them by t and spreads the final one over the p
 * stages). */
static double shard_params(const kcfg *c, double *hetplan)
{
    double h = c->h, L = c->L, p = c->p, t = c->t;
    double n = 2.0 * L * h * h * (2.0 + 4.0 + 2.0 / h + 1.0 / (L * h));
    double shard = (n / p + V * h) / t;

    *hetplan = shard + (L / p) * 4.0 * h * (1.0 - 1.0 / t) +
               (c->p == 1 ? 2.0 * h * (1.0 - 1.0 / t) : -2.0 * h / (p * t));
    return shard;
}

/* Bytes per parameter: the estimator's 18 (bf16, Adam, no distributed
 * optimizer) and 6 + 12/d (distributed optimizer); fp16 as Megatron-LM's
 * Float16OptimizerWithFloat16Params runs it: 2 + 2 + 12 resident and the
 * fp32 main gradients (4, 4/d distributed) made in the step only.  A
 * stage with both tied ends holds the matrix once. */
START_TEST(weights_and_optimizer)
{
    int i;

    for (i = 0; i < NCFG; i++) {
        const kcfg *c = &cfgs[i];
        double want, hp, d = 8.0;
        cost_params p;
        cost_memory x;
        fmt_model m;

        shard_params(c, &hp);
        load(&m, c, "\"precision\": \"bf16\"");
        cost_params_init(&p);
        p.mem_reserve = 0.0;
        first_stage(&m, &p, c, 8, 4 * c->p, 1, &x);
        EQ(x.weights / 2.0, hp, "parameters of the first stage");
        want = shard_params(c, &hp) * 18.0;
        EQ(x.weights + x.grads + x.optimizer, hp * 18.0, "bf16 model state");
        ck_assert_msg(fabs(hp * 18.0 - want) < 1e-3 * want, "%s: LayerNorms", c->name);
        p.zero_stage = 1;
        first_stage(&m, &p, c, 8, 4 * c->p, 1, &x);
        EQ(x.weights + x.grads + x.optimizer, hp * (6.0 + 12.0 / d),
           "bf16 distributed optimizer");
        EQ(x.step, 0.0, "bf16 step transient");
        fmt_model_free(&m);

        load(&m, c, "\"precision\": \"fp16\"");
        p.zero_stage = 0;
        first_stage(&m, &p, c, 8, 4 * c->p, 1, &x);
        EQ(x.weights + x.grads + x.optimizer, hp * 16.0, "fp16 model state");
        EQ(x.step, hp * 4.0, "fp16 main gradients");
        p.zero_stage = 1;
        first_stage(&m, &p, c, 8, 4 * c->p, 1, &x);
        EQ(x.weights + x.grads + x.optimizer, hp * (4.0 + 12.0 / d),
           "fp16 distributed optimizer");
        EQ(x.step, hp * 4.0 / d, "fp16 main gradient shard");
        fmt_model_free(&m);
    }
}
END_TEST

/* theoretical_memory_usage.py, compute_activation_memory (sequence
 * parallelism and selective recomputation), first stage, b = 1:
 * [s b h (18 + 4 f/h) L + 8 s b p + s b h p] / t, times
 * 1 + (p - 1)/(p v) when interleaved, times min(1, gas/p) otherwise, plus
 * for p = 1 the output layer and loss 4 s b h (1 + V/h) / t. */
static double megatron_act(const kcfg *c, int v, int gas)
{
    double h = c->h, p = c->p, t = c->t, x;

    x = S * h * (18.0 + 4.0 * 4.0) * c->L + 8.0 * S * p + S * h * p;
    if (v > 1)
        x *= 1.0 + (p - 1.0) / (p * v);
    else if (c->p > 1 && gas < c->p)
        x *= (double)gas / p;
    if (c->p == 1)
        x += S * h * 4.0 * (1.0 + V / h);
    return x / t;
}

START_TEST(activations_first_stage)
{
    static const char *const attn[2] = {"flash", "eager"};
    int i, k;

    for (i = 0; i < NCFG; i++) {
        for (k = 0; k < 2; k++) {
            const kcfg *c = &cfgs[i];
            char tr[128];
            cost_params p;
            cost_memory x;
            fmt_model m;

            snprintf(tr, sizeof tr, "\"precision\": \"bf16\", \"attention\": \"%s\"",
                     attn[k]);
            load(&m, c, tr);
            cost_params_init(&p);
            p.sp = 1;
            p.recompute = FMT_RECOMPUTE_SELECTIVE;
            first_stage(&m, &p, c, 1, 4 * c->p, 1, &x);
            EQ(x.activations, megatron_act(c, 1, 4 * c->p), "activations, 1F1B");
            if (c->p > 1) {
                first_stage(&m, &p, c, 1, c->p / 2, 1, &x);
                EQ(x.activations, megatron_act(c, 1, c->p / 2), "activations, gas < p");
                first_stage(&m, &p, c, 1, 4 * c->p, 2, &x);
                EQ(x.activations, megatron_act(c, 2, 4 * c->p),
                   "activations, interleaved");
            }
            fmt_model_free(&m);
        }
    }
}
END_TEST

/* Beyond the formulas, with the runtime set to 0 (docs/memory-model.md):
 * the backward's workspace, 2 x the larger of e s f / t (the MLP's
 * tensor) and e s h (a norm's), plus the flash core that selective
 * recomputation re-runs, 4 a s / t (the loss's logits when p = 1);
 * the gradient sent back from a stage before the last, e s h; nothing
 * else: the peak of the first stage is the two formulas plus these. */
START_TEST(extras_first_stage)
{
    int i;

    for (i = 0; i < NCFG; i++) {
        const kcfg *c = &cfgs[i];
        double hp, t = c->t, ws, buf;
        cost_params p;
        cost_memory x;
        fmt_model m;

        shard_params(c, &hp);
        load(&m, c, "\"precision\": \"bf16\", \"attention\": \"flash\"");
        cost_params_init(&p);
        p.mem_reserve = 0.0;
        p.sp = 1;
        p.recompute = FMT_RECOMPUTE_SELECTIVE;
        first_stage(&m, &p, c, 1, 4 * c->p, 1, &x);
        ws = 2.0 * fmax(2.0 * S * 4.0 * c->h / t, 2.0 * S * c->h) + 4.0 * c->a * S / t;
        if (c->p == 1) /* the loss: bf16 logits and their fp32 copy */
            ws = (2.0 + 4.0) * S * V / t;
        buf = c->p > 1 ? 2.0 * S * c->h : 0.0;
        EQ(x.workspace, ws, "workspace");
        EQ(x.buffers, buf, "pipeline buffers");
        EQ(x.bucket, 0.0, "bucket at dp 1");
        EQ(x.total, hp * 18.0 + megatron_act(c, 1, 4 * c->p) + ws + buf, "peak");
        fmt_model_free(&m);
    }
}
END_TEST

/* The fp16 step's fp32 main gradients are alive when no activation is:
 * 22B on one stage with full recomputation holds 4 bytes per parameter
 * more at the step than its activations, so the peak is Megatron-LM's 20
 * bytes per parameter (2 + 2 + 12 + 4). */
START_TEST(fp16_step_phase)
{
    const kcfg *c = &cfgs[0];
    double hp;
    cost_params p;
    cost_memory x;
    fmt_model m;

    shard_params(c, &hp);
    load(&m, c, "\"precision\": \"fp16\"");
    cost_params_init(&p);
    p.mem_reserve = 0.0;
    p.recompute = FMT_RECOMPUTE_FULL;
    first_stage(&m, &p, c, 1, 4, 1, &x);
    ck_assert(x.step > x.activations + x.workspace + x.buffers);
    EQ(x.total, hp * 20.0, "peak at the step");
    fmt_model_free(&m);
}
END_TEST

/* The last stage under the interleaved schedule (Narayanan et al. SC'21,
 * section 2.2): (v - 1) p warm-up forwards of its other chunks, then each
 * forward of its last chunk runs straight into that chunk's backward, so
 * its blocks keep ((v - 1) p + 1) / v micro-batches' worth and the final
 * norm, the head's input and the fp32 softmax (section 4.3: 2sh/t, 2sh/t,
 * 4sV/t with SP) one micro-batch's.  175B, p 8, v 2: 12 blocks x 4.5. */
START_TEST(interleaved_last_stage)
{
    const kcfg *c = &cfgs[1];
    double t = c->t, blk = 34.0 * S * c->h / t;
    cost_params p;
    cost_mem_stage st;
    cost_memory x;
    fmt_model m;

    load(&m, c, "\"precision\": \"bf16\"");
    cost_params_init(&p);
    p.sp = 1;
    p.recompute = FMT_RECOMPUTE_SELECTIVE;
    memset(&st, 0, sizeof st);
    st.a = 1 + 7 * 12;
    st.b = m.nlayers;
    st.tp = c->t;
    st.dp = 1;
    st.mbs = 1;
    st.gas = 32;
    st.stage = 7;
    st.pp = 8;
    st.inflight = cost_inflight(&p, 7, 8, 32);
    st.inflight_v = cost_inflight_interleaved(7, 8, 32, 2);
    EQ(st.inflight_v, 4.5, "last stage in flight");
    cost_device_memory(&m, &p, &st, &x);
    EQ(x.activations, 4.5 * 12.0 * blk + (4.0 * S * c->h + 4.0 * S * V) / t,
       "interleaved last stage");
    fmt_model_free(&m);
}
END_TEST

/* The layer-assignment DP of the search sums cost_layer_memory per layer
 * and adds cost_memory_overhead_bound: at each first stage (and the
 * single stage of 22B, with its tied embedding and head) that sum equals
 * cost_device_memory's peak, so the search rejects no split that the
 * evaluation accepts. */
START_TEST(search_sum_equals_peak)
{
    int i, z;

    for (i = 0; i < NCFG; i++) {
        for (z = 0; z < 2; z++) {
            const kcfg *c = &cfgs[i];
            double sum = 0.0, held;
            cost_params p;
            cost_memory x;
            fmt_model m;
            int l, b = c->p > 1 ? 1 + c->L / c->p : c->L + 3;

            load(&m, c, "\"precision\": \"bf16\"");
            cost_params_init(&p);
            p.sp = 1;
            p.zero_stage = z;
            first_stage(&m, &p, c, 1, 4 * c->p, 1, &x);
            held = (double)cost_inflight(&p, 0, c->p, 4 * c->p);
            for (l = 0; l < b; l++)
                sum += cost_layer_memory(&m, &p, l, c->t, 1, 1, 0) +
                       held * cost_layer_stored(&m, &p, l, c->t);
            sum += cost_memory_overhead_bound(&m, &p, c->t, 1, 1, 0, c->p,
                                              (int)held, 4 * c->p);
            EQ(sum, x.total, "search's stage sum");
            fmt_model_free(&m);
        }
    }
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("terms");
    TCase *tc = tcase_create("korthikanti");

    tcase_add_test(tc, table2_per_layer);
    tcase_add_test(tc, inflight_first_stage);
    tcase_add_test(tc, weights_and_optimizer);
    tcase_add_test(tc, activations_first_stage);
    tcase_add_test(tc, extras_first_stage);
    tcase_add_test(tc, fp16_step_phase);
    tcase_add_test(tc, interleaved_last_stage);
    tcase_add_test(tc, search_sum_equals_peak);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(plain_suite());
}
