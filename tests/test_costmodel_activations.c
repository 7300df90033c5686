/* tests/test_costmodel_activations.c: activation memory from the model
 * description (costmodel/activations.c) against Korthikanti et al. 2022
 * ("Reducing activation recomputation in large transformer models",
 * table 2 and the configurations of table 3), hand-computed cases for
 * flash attention, grouped-query attention, gated and ReLU MLPs, interleaved
 * in-flight micro-batches, optimizer bytes and replicated parameters. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

/* A transformer shorthand with the given shape and training keys. */
static void load(fmt_model *m, const char *training, const char *tf)
{
    char text[1024];
    util_error err;
    int rc;

    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"training\": {%s}, \"transformer\": {%s}}",
             training, tf);
    memset(&err, 0, sizeof err);
    rc = fmt_parse_model(text, "t.json", m, &err);
    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
}

/* Per-sample bytes block 1 keeps at tp, sp, recompute. */
static double block(const fmt_model *m, int tp, int sp, int recompute)
{
    cost_params p;

    cost_params_init(&p);
    p.sp = sp;
    p.recompute = recompute;
    return cost_layer_stored(m, &p, 1, tp);
}

/* GPT-3 175B's block (Korthikanti et al. 2022, table 3: a 96, h 12288,
 * s 2048, t 8) in fp16 with eager attention and dropout everywhere, the
 * setting of the paper's table 2.  sbh = 2048 x 12288 = 25,165,824
 * bytes-per-unit at b = 1; 5as/h = 5 x 96 x 2048 / 12288 = 80. */
START_TEST(korthikanti_table2_gpt3_175b)
{
    fmt_model m;
    const double sbh = 2048.0 * 12288.0;

    load(&m, "\"precision\": \"fp16\", \"attention\": \"eager\", "
             "\"attention_dropout\": true",
         "\"family\": \"gpt3\", \"layers\": 2, \"hidden\": 12288, "
         "\"heads\": 96, \"seq\": 2048, \"vocab\": 51200");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_EAGER);
    /* no parallelism: sbh(34 + 5as/h) = 114 sbh */
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE), 114.0 * sbh);
    /* TP 8: sbh(10 + 24/t + 5as/(ht)) = (10 + 3 + 10) sbh = 23 sbh */
    ck_assert_double_eq(block(&m, 8, 0, FMT_RECOMPUTE_NONE), 23.0 * sbh);
    /* TP 8 + SP: sbh(34/t + 5as/(ht)) = (4.25 + 10) sbh */
    ck_assert_double_eq(block(&m, 8, 1, FMT_RECOMPUTE_NONE), 14.25 * sbh);
    /* TP 8 + selective: sbh(10 + 24/t) = 13 sbh */
    ck_assert_double_eq(block(&m, 8, 0, FMT_RECOMPUTE_SELECTIVE), 13.0 * sbh);
    /* TP 8 + SP + selective: sbh 34/t = 4.25 sbh */
    ck_assert_double_eq(block(&m, 8, 1, FMT_RECOMPUTE_SELECTIVE), 4.25 * sbh);
    /* full recomputation: the block input, 2sbh (2sbh/t with SP) */
    ck_assert_double_eq(block(&m, 8, 0, FMT_RECOMPUTE_FULL), 2.0 * sbh);
    ck_assert_double_eq(block(&m, 8, 1, FMT_RECOMPUTE_FULL), 2.0 * sbh / 8.0);
    fmt_model_free(&m);
}
END_TEST

/* Table 3's 530B (a 128, h 20480) and 1T (a 160, h 25600) at t 8:
 * 5as/(ht) = 8 for both, so 10 + 3 + 8 = 21 sbh per layer; 13 sbh with
 * selective recomputation; 4.25 sbh with SP and selective. */
START_TEST(korthikanti_530b_1t)
{
    static const struct {
        int h, a;
    } cfg[2] = {{20480, 128}, {25600, 160}};
    char tf[256];
    int i;

    for (i = 0; i < 2; i++) {
        fmt_model m;
        double sbh = 2048.0 * cfg[i].h;
        snprintf(tf, sizeof tf,
                 "\"family\": \"gpt3\", \"layers\": 2, \"hidden\": %d, "
                 "\"heads\": %d, \"seq\": 2048, \"vocab\": 51200",
                 cfg[i].h, cfg[i].a);
        load(&m, "\"attention\": \"eager\", \"attention_dropout\": true", tf);
        ck_assert_double_eq(block(&m, 8, 0, FMT_RECOMPUTE_NONE), 21.0 * sbh);
        ck_assert_double_eq(block(&m, 8, 0, FMT_RECOMPUTE_SELECTIVE), 13.0 * sbh);
        ck_assert_double_eq(block(&m, 8, 1, FMT_RECOMPUTE_SELECTIVE), 4.25 * sbh);
        fmt_model_free(&m);
    }
}
END_TEST

/* A small Llama-style block: h 64, a 8, kv 2, ffn 160, s 32, SwiGLU,
 * RMSNorm, no dropout, bf16.  By hand, per sample, e = 2:
 * replicated 4esh = 4 x 2 x 32 x 64 = 16384 (no masks);
 * sharded Q + output 2esh = 8192, K + V at kv heads 2es(h kv/a)
 * = 2 x 2 x 32 x 16 = 2048, gate/up/product 3esf = 3 x 2 x 32 x 160
 * = 30720: 40960; flash core 4as = 4 x 8 x 32 = 1024. */
START_TEST(flash_gqa_swiglu_by_hand)
{
    fmt_model m;

    load(&m, "\"precision\": \"bf16\"",
         "\"family\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 8, "
         "\"kv_heads\": 2, \"ffn\": 160, \"seq\": 32, \"vocab\": 100");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_FLASH); /* bf16 default */
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE),
                        16384.0 + 40960.0 + 1024.0);
    /* tp 2: 16384 + (40960 + 1024) / 2 */
    ck_assert_double_eq(block(&m, 2, 0, FMT_RECOMPUTE_NONE), 37376.0);
    /* selective drops the flash statistics: 16384 + 40960 / 2 */
    ck_assert_double_eq(block(&m, 2, 0, FMT_RECOMPUTE_SELECTIVE), 36864.0);
    /* backward workspace: 2 x gate and up, 2 x (2 x 2 x 32 x 160) */
    {
        cost_params p;
        cost_params_init(&p);
        ck_assert_double_eq(cost_layer_transient(&m, &p, 1, 1), 40960.0);
    }
    fmt_model_free(&m);
    /* eager: K and V expanded to 8 heads (2esh = 8192) and the softmax
     * output e a s^2 = 2 x 8 x 32 x 32 = 16384, no attention dropout */
    load(&m, "\"precision\": \"bf16\", \"attention\": \"eager\"",
         "\"family\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 8, "
         "\"kv_heads\": 2, \"ffn\": 160, \"seq\": 32, \"vocab\": 100");
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE),
                        16384.0 + 8192.0 + 8192.0 + 30720.0 + 16384.0);
    fmt_model_free(&m);
    /* fp32 falls back to eager: e = 4 doubles every e-byte term */
    load(&m, "\"precision\": \"fp32\"",
         "\"family\": \"llama\", \"layers\": 2, \"hidden\": 64, \"heads\": 8, "
         "\"kv_heads\": 2, \"ffn\": 160, \"seq\": 32, \"vocab\": 100");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_EAGER);
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE),
                        2.0 * (16384.0 + 8192.0 + 8192.0 + 30720.0 + 16384.0));
    fmt_model_free(&m);
}
END_TEST

/* OPT's ReLU MLP keeps its output only (fc2's input; ReLU's backward
 * takes its result), one s x f tensor where GeLU keeps two.  fp16 (e 2),
 * flash attention, dropout (family opt), s 32, h 64, a = kv 8, f 4h 256:
 * - replicated: norm inputs and outputs 4esh = 4 x 2 x 32 x 64 = 16384,
 *   two dropout masks 2sh = 4096: 20480;
 * - sharded: Q and attention output 2esh = 8192, K and V 2esh = 8192,
 *   ReLU output esf = 2 x 32 x 256 = 16384: 32768 (GeLU: + 16384);
 * - core: fp32 log-sum-exp 4as = 4 x 8 x 32 = 1024. */
START_TEST(relu_mlp_by_hand)
{
    static const char *const shape =
        "\"layers\": 2, \"hidden\": 64, \"heads\": 8, \"seq\": 32, "
        "\"vocab\": 100";
    char tf[256];
    fmt_model m;
    cost_params p;

    snprintf(tf, sizeof tf, "\"family\": \"opt\", %s", shape);
    load(&m, "\"precision\": \"fp16\"", tf);
    ck_assert_int_eq(m.mlp, FMT_MLP_RELU);
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_FLASH);
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE),
                        20480.0 + 32768.0 + 1024.0);
    /* tp 2: 20480 + (32768 + 1024) / 2 = 37376 */
    ck_assert_double_eq(block(&m, 2, 0, FMT_RECOMPUTE_NONE), 37376.0);
    /* tp 2 with sequence parallelism: (20480 + 33792) / 2 = 27136 */
    ck_assert_double_eq(block(&m, 2, 1, FMT_RECOMPUTE_NONE), 27136.0);
    /* selective drops the core: 20480 + 32768 */
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_SELECTIVE), 53248.0);
    /* full keeps the block's input, esh = 4096 */
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_FULL), 4096.0);
    /* backward workspace as for GeLU: 2 x the ReLU output's gradient,
     * 2 x esf = 32768 */
    cost_params_init(&p);
    ck_assert_double_eq(cost_layer_transient(&m, &p, 1, 1), 32768.0);
    fmt_model_free(&m);

    /* the same shape with a GeLU MLP keeps esf = 16384 more */
    snprintf(tf, sizeof tf, "\"family\": \"opt\", \"mlp\": \"gelu\", %s", shape);
    load(&m, "\"precision\": \"fp16\"", tf);
    ck_assert_int_eq(m.mlp, FMT_MLP_GELU);
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE),
                        20480.0 + 32768.0 + 16384.0 + 1024.0);
    fmt_model_free(&m);

    /* "mlp": "relu" on another family: the same bytes as family opt */
    snprintf(tf, sizeof tf, "\"family\": \"gpt2\", \"mlp\": \"relu\", %s", shape);
    load(&m, "\"precision\": \"fp16\"", tf);
    ck_assert_double_eq(block(&m, 1, 0, FMT_RECOMPUTE_NONE), 54272.0);
    fmt_model_free(&m);
}
END_TEST

/* The head keeps its input and the fp32 softmax of the vocabulary-
 * parallel cross entropy: s = 32, h = 64, v = 100, fp16:
 * 2 x 32 x 64 + 4 x 32 x 100 / t. */
START_TEST(head_logits)
{
    fmt_model m;
    cost_params p;
    int head;

    load(&m, "\"precision\": \"fp16\"",
         "\"family\": \"gpt2\", \"layers\": 1, \"hidden\": 64, \"heads\": 8, "
         "\"seq\": 32, \"vocab\": 100");
    cost_params_init(&p);
    head = m.nlayers - 1;
    ck_assert_int_eq(m.layers[head].kind, FMT_KIND_HEAD);
    ck_assert_double_eq(cost_layer_stored(&m, &p, head, 2),
                        4096.0 + 12800.0 / 2);
    /* transient: the fp16 logits and their fp32 copy, (2 + 4) x 3200 / 2 */
    ck_assert_double_eq(cost_layer_transient(&m, &p, head, 2), 9600.0);
    fmt_model_free(&m);
}
END_TEST

/* Interleaved 1F1B (Korthikanti et al. 2022, section 4.2): the first
 * stage keeps p (1 + (p - 1) / (p v)) micro-batches' worth: p 8, v 2:
 * 8 x (1 + 7 / 16) = 11.5; the last (0 + 8 + 1) / 2 = 4.5; v = 1 is
 * plain 1F1B; few micro-batches cap it at gas x v chunks. */
START_TEST(interleaved_inflight)
{
    ck_assert_double_eq(cost_inflight_interleaved(0, 8, 16, 2), 11.5);
    ck_assert_double_eq(cost_inflight_interleaved(7, 8, 16, 2), 4.5);
    ck_assert_double_eq(cost_inflight_interleaved(0, 4, 8, 1), 4.0);
    ck_assert_double_eq(cost_inflight_interleaved(2, 4, 8, 1), 2.0);
    ck_assert_double_eq(cost_inflight_interleaved(0, 4, 1, 2), 1.0);
}
END_TEST

/* Mixed-precision Adam bytes per parameter: bf16 2 + 4 + 12 = 18;
 * Megatron-LM's distributed optimizer (docs, "Distributed optimizer"):
 * 6 + 12/d, 7.5 at d = 8; ZeRO-3 (Rajbhandari et al. 2020, table 1)
 * divides all 18 by d; fp32 4 + 4 + 8. */
START_TEST(optimizer_bytes)
{
    fmt_model m;
    cost_params p;
    double w, g, o;

    memset(&m, 0, sizeof m);
    m.dtype_bytes = 2;
    m.bf16 = 1;
    cost_params_init(&p);
    cost_state_bytes(&m, &p, 8, &w, &g, &o);
    ck_assert_double_eq(w + g + o, 18.0);
    p.zero_stage = 1;
    cost_state_bytes(&m, &p, 8, &w, &g, &o);
    ck_assert_double_eq(w + g + o, 7.5);
    p.zero_stage = 3;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert_double_eq(w + g + o, 18.0 / 4.0);
    m.dtype_bytes = 4;
    m.bf16 = 0;
    p.zero_stage = 0;
    cost_state_bytes(&m, &p, 4, &w, &g, &o);
    ck_assert_double_eq(w, 4.0);
    ck_assert_double_eq(g, 4.0);
    ck_assert_double_eq(o, 8.0);
}
END_TEST

/* Norms and row-parallel biases stay whole on every TP rank.  gpt2 block,
 * h 64: weights 12h^2 = 49152, sharded biases h + 2h + 4h = 448,
 * replicated two layer norms 4h + two biases 2h = 384: 49984 params;
 * at tp 2 a rank holds (49984 - 384) / 2 + 384 = 25184, x 16 bytes
 * (fp16 Adam in Megatron-LM: 2 + 2 + 12; the fp32 gradient copy only in
 * the optimizer step). */
START_TEST(replicated_params)
{
    fmt_model m;
    cost_params p;

    load(&m, "\"precision\": \"fp16\"",
         "\"family\": \"gpt2\", \"layers\": 1, \"hidden\": 64, \"heads\": 8, "
         "\"seq\": 32, \"vocab\": 100");
    cost_params_init(&p);
    ck_assert_double_eq(m.layers[1].params, 49984.0);
    ck_assert_double_eq(m.layers[1].params_rep, 384.0);
    ck_assert_double_eq(cost_layer_memory(&m, &p, 1, 2, 1, 0, 0), 25184.0 * 16.0);
    fmt_model_free(&m);
}
END_TEST

/* A described model's middle pipeline stage, by hand: gpt2 shape h 64,
 * a 8, s 32, v 100, fp16 (flash), one block [1, 2) of pp 3 at tp 1,
 * mbs 2, 2 micro-batches in flight.  Per sample the block keeps
 * rep 4 x 2 x 32 x 64 + 2 x 32 x 64 = 20480, shard 2esh + 2esh + 2esf
 * = 8192 + 8192 + 32768 = 49152, flash core 4 x 8 x 32 = 1024: 70656.
 * Workspace 2 x max(e s f = 16384, e s h = 4096) = 32768 per sample.
 * Megatron's buffers: one input gradient and one output gradient,
 * 2 x 2 x 4096 bytes. */
START_TEST(described_stage_by_hand)
{
    fmt_model m;
    cost_params p;
    cost_mem_stage st;
    cost_memory x;
    int j;

    load(&m, "\"precision\": \"fp16\"",
         "\"family\": \"gpt2\", \"layers\": 2, \"hidden\": 64, \"heads\": 8, "
         "\"seq\": 32, \"vocab\": 100");
    cost_params_init(&p);
    p.mem_reserve = 0.0;
    memset(&st, 0, sizeof st);
    st.a = 1;
    st.b = 2;
    st.tp = st.dp = 1;
    st.mbs = 2;
    st.inflight = 2;
    st.gas = 4;
    st.stage = 1;
    st.pp = 3;
    cost_device_memory(&m, &p, &st, &x);
    ck_assert_double_eq(x.activations, 2.0 * 2.0 * 70656.0);
    ck_assert_double_eq(x.workspace, 2.0 * 32768.0);
    ck_assert_double_eq(x.buffers, 2.0 * 4096.0 + 2.0 * 4096.0);
    ck_assert_double_eq(x.weights, m.layers[1].params * 2.0);
    /* the layer-assignment DP's per-layer sum plus its bound covers every
     * stage of a 3-stage cut */
    for (j = 0; j < 3; j++) {
        static const int bounds[4] = {0, 2, 3, 5};
        double sum = 0.0, bound;
        int l, inflight = cost_inflight(&p, j, 3, 4);
        st.a = bounds[j];
        st.b = bounds[j + 1];
        st.stage = j;
        st.inflight = inflight;
        for (l = st.a; l < st.b; l++)
            sum += cost_layer_memory(&m, &p, l, 1, 1, 2, inflight);
        bound = cost_memory_overhead_bound(&m, &p, 1, 1, 2, j, 3, inflight, 4);
        ck_assert_msg(sum + bound >= cost_device_memory(&m, &p, &st, NULL),
                      "stage %d: %g + %g < %g", j, sum, bound,
                      cost_device_memory(&m, &p, &st, NULL));
    }
    fmt_model_free(&m);
}
END_TEST

/* training.attention, attention_dropout, cross_entropy, grad_buffer and
 * tf32: located errors, and what they set. */
START_TEST(attention_keys)
{
    /* bad training keys: the value, the JSON path and a part of the
     * message each must give */
    static const struct {
        const char *training, *path, *msg;
    } bad[] = {
        {"\"attention\": \"paged\"", "training.attention", "'paged'"},
        {"\"attention_dropout\": 1", "training.attention_dropout", "boolean"},
        {"\"cross_entropy\": \"fused\"", "training.cross_entropy",
         "'megatron' or 'pytorch', got 'fused'"},
        {"\"grad_buffer\": 0", "training.grad_buffer", "string"},
        {"\"tf32\": \"yes\"", "training.tf32", "boolean"},
    };
    const char *tf = "\"layers\": 1, \"hidden\": 64, \"heads\": 8, \"seq\": 32, "
                     "\"vocab\": 100";
    char text[512];
    fmt_model m;
    util_error err;
    size_t i;

    ck_assert_str_eq(fmt_attention_name(FMT_ATTN_FLASH), "flash");
    ck_assert_ptr_null(fmt_attention_name(0));
    ck_assert_int_eq(fmt_attention_from_name("eager"), FMT_ATTN_EAGER);
    ck_assert_int_eq(fmt_attention_from_name("paged"), -1);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "{\"name\": \"t\", \"training\": {%s}, \"transformer\": {%s}}",
                 bad[i].training, tf);
        memset(&err, 0, sizeof err);
        ck_assert_int_ne(fmt_parse_model(text, "t.json", &m, &err), UTIL_OK);
        ck_assert_str_eq(err.path, bad[i].path);
        ck_assert_str_eq(err.file, "t.json");
        ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL, "%s", err.msg);
    }
    /* the training code's defaults are Megatron-LM's */
    load(&m, "\"grad_buffer\": \"persistent\"", tf);
    ck_assert(m.grad_buffer == FMT_GRADS_PERSISTENT && m.cross_entropy == FMT_CE_MEGATRON);
    ck_assert_int_eq(m.tf32, FMT_FLAG_FAMILY); /* unstated */
    fmt_model_free(&m);
    load(&m, "\"tf32\": false", tf);
    ck_assert_int_eq(m.tf32, FMT_FLAG_OFF);
    fmt_model_free(&m);
    load(&m, "\"tf32\": true", tf);
    ck_assert_int_eq(m.tf32, FMT_FLAG_ON);
    fmt_model_free(&m);
}
END_TEST

/* ---- Sailor's measured OPT-350 runs (../shared/data/sailor-opt) ----- */

/* Predicted peak (largest over ranks, runtime memory excluded) of run tag with
 * tp 4, global batch gbs; asserts it fits. */
static double sailor_peak(const char *tag, int gbs)
{
    cost_params p;

    cost_params_init(&p);
    p.mem_reserve = 0.0; /* stated as 0: the tensors alone */
    return tu_sailor_peak(tag, gbs, &p) - p.mem_reserve;
}

/* What one more sample costs, independent of the runtime reserve: the
 * measured peaks (runs.json, measured_peak_bytes) of OPT-350 at tp 4,
 * pp 1 grow by 32560381952 - 9551478784 = 23008903168 bytes from mbs 1
 * (gbs 1) to mbs 8 (dp 16, gbs 1024); at pp 4 by 25140658176 -
 * 7358906368 = 17781751808 bytes from mbs 1 (dp 1, gbs 64) to mbs 8
 * (dp 4, gbs 1024).  The model (fp32, eager attention, OPT's ReLU MLP)
 * stays within 5% at pp 1 and 10% at pp 4 (with the GeLU MLP the file
 * describes, e s f more per block, pp 4's growth is 13% high), and
 * predicts every run to fit. */
START_TEST(sailor_per_sample_growth)
{
    double d1 = sailor_peak("clariden_OPT-350_N16_N16_D16", 1024) -
                sailor_peak("clariden_OPT-350_N1_N1_D1_M4_G1", 1);
    double d4 = sailor_peak("clariden_OPT-350_N16_N16_D4", 1024) -
                sailor_peak("clariden_OPT-350_N4_N4_D1", 64);

    ck_assert_msg(d1 > 0.95 * 23008903168.0 && d1 < 1.05 * 23008903168.0,
                  "pp 1: predicted growth %g bytes", d1);
    ck_assert_msg(d4 > 0.90 * 17781751808.0 && d4 < 1.10 * 17781751808.0,
                  "pp 4: predicted growth %g bytes", d4);
}
END_TEST

/* Measured on an NVIDIA H200 (PyTorch 2.11, CUDA 13.0, Hugging Face
 * transformers 5.17; scripts/measure-gpu-memory.py train): an OPT-shaped
 * decoder (24 layers, h 1024, 16 heads, f 4096, s 2048, V 50272, ReLU,
 * dropout 0.1, tied embedding; 355,889,152 parameters) in fp32 with
 * AdamW, one GPU, torch.cuda.max_memory_allocated of a steady step:
 *   sdpa (fused attention):  8111662080, 11886052352, 19433284608 B
 *   eager attention:        14551360512, 24765064192, 45190505472 B
 * at mbs 1, 2, 4.  Eager attention keeps one e a s^2 tensor (the
 * softmax output) per block that fused attention does not.  Described as
 * it ran (training.cross_entropy "pytorch": log_softmax + nll_loss hold
 * three fp32 s V at the loss's backward; training.grad_buffer
 * "set_to_none": no gradient alive at the activation peak), the model's
 * peak plus the two cuBLAS workspaces is within 1% (fused) and 2%
 * (eager) of every run, with the tied embedding and head counted once on
 * the stage that holds both (counted twice, the prediction would be
 * 12 V h = 0.62 GB high). */
START_TEST(h200_pytorch_measured)
{
    static const double meas[2][3] = {
        {8111662080.0, 11886052352.0, 19433284608.0},   /* sdpa (fused) */
        {14551360512.0, 24765064192.0, 45190505472.0}}; /* eager */
    static const char *const attn[2] = {"flash", "eager"};
    static const double tol[2] = {0.01, 0.02};
    const char *shape = "\"family\": \"opt\", \"layers\": 24, \"hidden\": 1024, "
                        "\"heads\": 16, \"seq\": 2048, \"vocab\": 50272, "
                        "\"ffn\": 4096";
    /* what the model adds to the measured counter: the two cuBLAS
     * workspaces */
    const double cublas = 2.0 * 32.0 * 1048576.0;
    const double sv = 4.0 * 2048.0 * 50272.0;
    fmt_model m, meg;
    cost_params p;
    cost_memory x[3], y;
    cost_mem_stage st = {0, 0, 1, 1, 1, 1, 1, 0, 1, 0.0};
    char tr[160];
    double slope;
    int k, i;

    /* eager - fused, per sample: one e a s^2 per block */
    slope = ((meas[1][2] - meas[1][0]) - (meas[0][2] - meas[0][0])) / 3.0;
    ck_assert_double_eq_tol(slope, 24.0 * 4.0 * 16.0 * 2048.0 * 2048.0, 0.001 * slope);
    cost_params_init(&p);
    p.mem_reserve = 0.0;
    for (k = 0; k < 2; k++) {
        snprintf(tr, sizeof tr, "\"precision\": \"fp32\", \"attention\": \"%s\", "
                 "\"cross_entropy\": \"pytorch\", \"grad_buffer\": \"set_to_none\"",
                 attn[k]);
        load(&m, tr, shape);
        ck_assert(m.cross_entropy == FMT_CE_PYTORCH &&
                  m.grad_buffer == FMT_GRADS_SET_TO_NONE);
        st.b = m.nlayers;
        for (i = 0; i < 3; i++) {
            st.mbs = 1 << i;
            cost_device_memory(&m, &p, &st, &x[i]);
            ck_assert_msg(fabs(x[i].total + cublas - meas[k][i]) <=
                              tol[k] * meas[k][i],
                          "%s mbs %d: predicted %g, measured %g", attn[k], st.mbs,
                          x[i].total + cublas, meas[k][i]);
        }
        /* growth per sample */
        slope = (meas[k][2] - meas[k][0]) / 3.0;
        ck_assert(fabs((x[2].total - x[0].total) / 3.0 - slope) <= tol[k] * slope);
        /* Megatron-LM's training (the defaults) holds the gradients and
         * one fp32 s V per sample less at the loss */
        snprintf(tr, sizeof tr, "\"precision\": \"fp32\", \"attention\": \"%s\"",
                 attn[k]);
        load(&meg, tr, shape);
        st.mbs = 1;
        cost_device_memory(&meg, &p, &st, &y);
        ck_assert_double_eq_tol(y.total - x[0].total,
                                y.grads - (x[0].workspace - y.workspace), 1.0);
        /* the loss is the largest transient: exactly one s V more; under
         * eager attention a block's backward (2 e a s^2) is Megatron's */
        ck_assert_double_eq_tol(x[0].workspace - y.workspace,
                                k == 0 ? sv : sv - (2.0 * 4.0 * 16.0 * 2048.0 * 2048.0 - sv),
                                1.0);
        fmt_model_free(&meg);
        fmt_model_free(&m);
    }
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("activations");
    TCase *tc = tcase_create("model");

    tcase_add_test(tc, korthikanti_table2_gpt3_175b);
    tcase_add_test(tc, korthikanti_530b_1t);
    tcase_add_test(tc, flash_gqa_swiglu_by_hand);
    tcase_add_test(tc, relu_mlp_by_hand);
    tcase_add_test(tc, head_logits);
    tcase_add_test(tc, interleaved_inflight);
    tcase_add_test(tc, optimizer_bytes);
    tcase_add_test(tc, replicated_params);
    tcase_add_test(tc, described_stage_by_hand);
    tcase_add_test(tc, attention_keys);
    tcase_add_test(tc, h200_pytorch_measured);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *data_suite(void)
{
    const TTest *const tests[] = {sailor_per_sample_growth};

    return tu_suite("activations_data", "sailor", tests, TU_N(tests));
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain_suite, data_suite, TU_DATA "/sailor-opt");
}
