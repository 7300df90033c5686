/* tests/test_costmodel_framework.c: the training framework of a model
 * file (training.framework, formats/framework.c) and the defaults it
 * implies: TF32 of fp32 matmuls, the attention kernel and what autograd
 * keeps of an unfused softmax (hand counts after Korthikanti et al.
 * 2022, table 2, plus the softmax input PyTorch before 1.11 keeps), the
 * loss and the kernel launch style; names it does not know refused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

/* GPT-2 medium-like block: h 1024, a 16, s 1024 (sbh = 2^20 at b = 1;
 * 5as/h = 80; the softmax input 2as^2 = 32 sbh in fp16). */
#define SHAPE "\"family\": \"gpt2\", \"layers\": 2, \"hidden\": 1024, " \
              "\"heads\": 16, \"seq\": 1024, \"vocab\": 50304"
#define SBH (1024.0 * 1024.0)

/* Parse a transformer shorthand with the given training keys; its
 * status, err filled. */
static int parse(fmt_model *m, const char *training, util_error *err)
{
    char text[1024];

    snprintf(text, sizeof text,
             "{\"name\": \"t\", \"training\": {%s}, \"transformer\": {" SHAPE "}}",
             training);
    memset(err, 0, sizeof *err);
    return fmt_parse_model(text, "t.json", m, err);
}

static void load(fmt_model *m, const char *training)
{
    util_error err;
    int rc = parse(m, training, &err);

    ck_assert_msg(rc == UTIL_OK, "%s", err.msg);
}

/* Per-sample bytes block 1 keeps at tp, recompute. */
static double block(const fmt_model *m, int tp, int recompute)
{
    cost_params p;

    cost_params_init(&p);
    p.recompute = recompute;
    return cost_layer_stored(m, &p, 1, tp);
}

/* fp16 eager attention with attention dropout: Korthikanti et al.'s
 * sbh(34 + 5as/h) = 114 sbh; PyTorch 1.10 also keeps the softmax input,
 * 2as^2 = 2 x 16 x 1024^2 = 32 sbh: 146 sbh. */
START_TEST(softmax_input_by_hand)
{
    fmt_model m;

    load(&m, "\"precision\": \"fp16\", \"attention_dropout\": true, "
             "\"framework\": \"pytorch-1.10\"");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_EAGER); /* implied */
    ck_assert_double_eq(block(&m, 1, FMT_RECOMPUTE_NONE), 146.0 * SBH);
    /* TP 4: 10 sbh replicated + (24 + 80 + 32) / 4 sbh = 44 sbh */
    ck_assert_double_eq(block(&m, 4, FMT_RECOMPUTE_NONE), 44.0 * SBH);
    /* selective recomputation drops the whole core: 10 + 24 / 4 = 16 */
    ck_assert_double_eq(block(&m, 4, FMT_RECOMPUTE_SELECTIVE), 16.0 * SBH);
    fmt_model_free(&m);

    /* fixed in 1.11 (PR #65242): the paper's 114 sbh */
    load(&m, "\"precision\": \"fp16\", \"attention_dropout\": true, "
             "\"framework\": \"pytorch-1.11\"");
    ck_assert_double_eq(block(&m, 1, FMT_RECOMPUTE_NONE), 114.0 * SBH);
    fmt_model_free(&m);

    /* Megatron-LM 2021: fused scale-mask-softmax keeps only its output */
    load(&m, "\"precision\": \"fp16\", \"attention_dropout\": true, "
             "\"framework\": \"megatron-lm-2021\"");
    ck_assert_double_eq(block(&m, 1, FMT_RECOMPUTE_NONE), 114.0 * SBH);
    fmt_model_free(&m);

    /* no dropout on the probabilities, fp32 (e = 4): core = softmax
     * output 4as^2 + input 4as^2 = 128 sbh; 4sh x 4 + 2sh masks = 18 sbh
     * replicated; 4 x 4sh (Q, K, V, projection input) + 2 x 4sf = 48 sbh
     * sharded: 194 sbh */
    load(&m, "\"precision\": \"fp32\", \"framework\": \"pytorch-1.7\"");
    ck_assert_double_eq(block(&m, 1, FMT_RECOMPUTE_NONE), 194.0 * SBH);
    fmt_model_free(&m);
}
END_TEST

/* A stated attention kernel wins over the framework's: flash keeps no
 * scores, so no softmax input either (4as fp32 statistics). */
START_TEST(stated_attention_wins)
{
    fmt_model m;

    load(&m, "\"precision\": \"fp16\", \"attention\": \"flash\", "
             "\"framework\": \"pytorch-1.8\"");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_FLASH);
    /* 10 sbh + 24 sbh + 4as = 34 sbh + 65536 */
    ck_assert_double_eq(block(&m, 1, FMT_RECOMPUTE_NONE),
                        34.0 * SBH + 4.0 * 16 * 1024);
    fmt_model_free(&m);
}
END_TEST

/* TF32 of fp32 matmuls: on in PyTorch 1.7 to 1.11, off before (no TF32)
 * and from 1.12; a stated training.tf32 or the cost parameter wins. */
START_TEST(tf32_by_version)
{
    static const struct {
        const char *fw;
        int on;
    } cases[] = {{"pytorch-1.6", 0},  {"pytorch-1.7", 1},
                 {"pytorch-1.11", 1}, {"pytorch-1.12", 0},
                 {"pytorch-2.4", 0},  {"pytorch-2.4-ngc", 1},
                 {"pytorch-1.6-ngc", 0}, {"megatron-core-0.9", 1}};
    cost_params p;
    fmt_model m;
    char tr[128];
    size_t i;

    cost_params_init(&p);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(tr, sizeof tr, "\"precision\": \"fp32\", \"framework\": \"%s\"",
                 cases[i].fw);
        load(&m, tr);
        ck_assert_msg(cost_tf32(&m, &p) == cases[i].on, "%s", cases[i].fw);
        ck_assert(m.fw_defaults & FMT_FW_SET_TF32);
        fmt_model_free(&m);
    }
    load(&m, "\"precision\": \"fp32\", \"tf32\": true, \"framework\": \"pytorch-1.12\"");
    ck_assert_int_eq(cost_tf32(&m, &p), 1);
    ck_assert(!(m.fw_defaults & FMT_FW_SET_TF32));
    p.tf32 = 0;
    ck_assert_int_eq(cost_tf32(&m, &p), 0);
    fmt_model_free(&m);
    /* none named: on, as before */
    cost_params_init(&p);
    load(&m, "\"precision\": \"fp32\"");
    ck_assert_int_eq(cost_tf32(&m, &p), 1);
    fmt_model_free(&m);
}
END_TEST

/* The loss and the launch style; none named keeps today's defaults. */
START_TEST(loss_and_launch)
{
    cost_params p;
    fmt_model m;

    cost_params_init(&p);
    ck_assert_int_eq(p.launch_mode, -1);
    load(&m, "\"precision\": \"fp16\"");
    ck_assert_int_eq(m.cross_entropy, FMT_CE_MEGATRON);
    ck_assert_int_eq(m.attention, FMT_ATTN_DEFAULT);
    ck_assert_int_eq(cost_launch_mode(&m, &p), -1);
    fmt_model_free(&m);
    load(&m, "\"framework\": \"pytorch-2.1\"");
    ck_assert_int_eq(m.cross_entropy, FMT_CE_PYTORCH);
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_FLASH); /* SDPA */
    ck_assert_int_eq(cost_launch_mode(&m, &p), COST_LAUNCH_EAGER);
    fmt_model_free(&m);
    load(&m, "\"framework\": \"pytorch-1.9\", \"cross_entropy\": \"megatron\"");
    ck_assert_int_eq(m.cross_entropy, FMT_CE_MEGATRON);
    fmt_model_free(&m);
    load(&m, "\"framework\": \"megatron-lm-2021\"");
    ck_assert_int_eq(m.cross_entropy, FMT_CE_MEGATRON);
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_EAGER);
    ck_assert_int_eq(cost_launch_mode(&m, &p), COST_LAUNCH_FUSED);
    fmt_model_free(&m);
    load(&m, "\"framework\": \"megatron-core-0.9\"");
    ck_assert_int_eq(cost_attention(&m), FMT_ATTN_FLASH);
    ck_assert_int_eq(cost_launch_mode(&m, &p), COST_LAUNCH_FUSED);
    p.launch_mode = COST_LAUNCH_GRAPHS;
    ck_assert_int_eq(cost_launch_mode(&m, &p), COST_LAUNCH_GRAPHS);
    fmt_model_free(&m);
    cost_params_init(&p);
    load(&m, "\"framework\": \"deepspeed-0.14\"");
    ck_assert_int_eq(cost_launch_mode(&m, &p), COST_LAUNCH_EAGER);
    ck_assert_int_eq(m.cross_entropy, FMT_CE_MEGATRON);
    fmt_model_free(&m);
}
END_TEST

/* The attention core's kernels: plain PyTorch runs the mask and the
 * softmax as separate kernels in fp16 too, Megatron-LM its fused
 * scale-mask-softmax; the extra pass reads and writes the scores once
 * more in the forward and in the backward: 2 x b a s^2 x 2 bytes =
 * 2 x 16 x 1024^2 x 2 = 67,108,864 bytes at mbs 1, tp 1, at the memory
 * rate of device "X" (1 TB/s x memory_eff). */
START_TEST(unfused_attention_time)
{
    fmt_device_type dt;
    cost_params p;
    cost_layer_time a, b, c;
    fmt_model m;
    double pass;

    tu_device_x(&dt);
    cost_params_init(&p);
    pass = 2.0 * 16.0 * 1024.0 * 1024.0 * 2.0 / (1e12 * p.memory_eff);
    load(&m, "\"framework\": \"pytorch-1.10\", \"precision\": \"fp16\"");
    cost_layer_time_of(&m, NULL, &p, &dt, 1, 1, 1, 0.0, 0.0, 0.0, &a);
    /* a stated kernel wins: Megatron's fused one */
    p.attention = COST_ATTN_FUSED;
    cost_layer_time_of(&m, NULL, &p, &dt, 1, 1, 1, 0.0, 0.0, 0.0, &c);
    p.attention = -1;
    fmt_model_free(&m);
    load(&m, "\"framework\": \"megatron-lm-2021\", \"precision\": \"fp16\"");
    cost_layer_time_of(&m, NULL, &p, &dt, 1, 1, 1, 0.0, 0.0, 0.0, &b);
    fmt_model_free(&m);
    ck_assert_double_eq_tol(a.fwd - b.fwd, pass, 1e-12);
    ck_assert_double_eq_tol(a.bwd - b.bwd, pass, 1e-12);
    ck_assert_double_eq_tol(c.fwd, b.fwd, 1e-15);
    ck_assert_double_eq_tol(c.bwd, b.bwd, 1e-15);
    /* none named: Megatron-LM's fused kernel in fp16, as before */
    load(&m, "\"precision\": \"fp16\", \"attention\": \"eager\"");
    cost_layer_time_of(&m, NULL, &p, &dt, 1, 1, 1, 0.0, 0.0, 0.0, &c);
    fmt_model_free(&m);
    ck_assert_double_eq_tol(c.fwd, b.fwd, 1e-15);
    ck_assert_double_eq_tol(c.bwd, b.bwd, 1e-15);
}
END_TEST

/* Names and versions it does not know: refused at the field, with the
 * accepted list. */
START_TEST(unknown_refused)
{
    static const char *const bad[] = {
        "pytorch-1.14", "pytorch-3.0", "pytorch-1.7.1", "PyTorch-1.7",
        "pytorch", "pytorch-1", "megatron-lm-2018", "megatron-lm-2021.1",
        "megatron-core-0.4", "tensorflow-2.4", "deepspeed-0.2", "",
        "pytorch-00001.7", "pytorch-2.1-NGC", "megatron-lm-2021-ngc",
        "pytorch-1.7aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    fmt_model m;
    util_error err;
    char tr[160];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(tr, sizeof tr, "\"framework\": \"%s\"", bad[i]);
        ck_assert_msg(parse(&m, tr, &err) == UTIL_EFIELD, "%s", bad[i]);
        ck_assert_str_eq(err.path, "training.framework");
        ck_assert_msg(strstr(err.msg, "'pytorch-1.13'") != NULL, "%s", err.msg);
    }
    ck_assert_int_eq(parse(&m, "\"framework\": 1.7", &err), UTIL_EFIELD);
}
END_TEST

/* A layer list states its own activations: a framework leaves them. */
START_TEST(layer_list_as_stated)
{
    const char *text =
        "{\"name\": \"l\", \"training\": {\"framework\": \"pytorch-1.8\"},"
        " \"shape\": {\"hidden\": 1024, \"heads\": 16, \"seq\": 1024},"
        " \"layers\": [{\"name\": \"b\", \"kind\": \"transformer\", \"params\": 1,"
        " \"fwd_flops\": 1, \"out_bytes\": 1, \"act_bytes\": 1000}]}";
    fmt_model m;
    cost_act a;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_parse_model(text, "l.json", &m, &err), UTIL_OK);
    cost_layer_act(&m, 0, FMT_RECOMPUTE_NONE, &a);
    ck_assert_double_eq(a.rep + a.shard + a.core, 1000.0);
    fmt_model_free(&m);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("framework");
    TCase *tc = tcase_create("framework");

    tcase_add_test(tc, softmax_input_by_hand);
    tcase_add_test(tc, stated_attention_wins);
    tcase_add_test(tc, tf32_by_version);
    tcase_add_test(tc, loss_and_launch);
    tcase_add_test(tc, unfused_attention_time);
    tcase_add_test(tc, unknown_refused);
    tcase_add_test(tc, layer_list_as_stated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(plain_suite());
}
