/* tests/test_costmodel_gemmlist.c: a layer list's stated GEMMs
 * (docs/inputs.md "layers[].gemms"): what the reader keeps and refuses,
 * and the layer time from them against hand arithmetic on device "X"
 * (80 SMs, 100 TFLOP/s fp16, 1 TB/s; tiles of 256 x 128), with the
 * large-GEMM efficiency and the memory efficiency at 1 so that only tile
 * and wave quantisation are left: one tile of K 1024 on one SM is
 * 2 * 256 * 128 * 1024 / (100e12 / 80) = 53.6870912 us, and a GEMM that
 * fills whole tiles takes that per wave. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

#define TILE_US 53.6870912e-6

/* A model of one generic layer with the given "gemms" and fwd_flops,
 * traffic_bytes and kernels 0 unless extra says otherwise. */
static int parse(const char *gemms, double fwd_flops, const char *extra,
                 fmt_model *m, util_error *err)
{
    static char text[16384];

    snprintf(text, sizeof text,
             "{\"name\": \"g\", \"training\": {\"precision\": \"fp16\"},"
             " \"layers\": [{\"name\": \"l\", \"kind\": \"generic\","
             " \"params\": 0, \"fwd_flops\": %.17g, \"out_bytes\": 0,"
             " \"act_bytes\": 0, \"traffic_bytes\": 0, \"traffic_rep_bytes\": 0,"
             " \"kernels\": 0%s, \"gemms\": %s}]}",
             fwd_flops, extra, gemms);
    memset(err, 0, sizeof *err);
    return fmt_parse_model(text, "m.json", m, err);
}

static void params_exact(cost_params *p)
{
    cost_params_init(p);
    p->gemm_eff = 1.0;
    p->memory_eff = 1.0;
}

/* Forward and backward of layer 0 at (tp, mbs), no profile, no link. */
static void layer_time(const fmt_model *m, int tp, int mbs, double *fwd,
                       double *bwd)
{
    fmt_device_type dt;
    cost_params p;
    cost_layer_time t;

    tu_device_x(&dt);
    params_exact(&p);
    cost_layer_time_of(m, NULL, &p, &dt, 0, tp, mbs, 0.0, 0.0, 0.0, &t);
    *fwd = t.fwd;
    *bwd = t.bwd;
}

/* Defaults: batch 1, split "n", B a weight; a repeated entry shares its
 * GEMMs. */
START_TEST(test_read_defaults)
{
    fmt_model m;
    util_error err;
    char text[1024];

    snprintf(text, sizeof text,
             "{\"name\": \"g\", \"layers\": [{\"name\": \"l\", \"kind\": "
             "\"transformer\", \"repeat\": 3, \"params\": 0, \"fwd_flops\": 1e9,"
             " \"out_bytes\": 0, \"act_bytes\": 0, \"gemms\": ["
             "{\"m\": 64, \"n\": 96, \"k\": 32},"
             "{\"m\": 64, \"n\": 64, \"k\": 8, \"batch\": 12, \"split\": \"batch\","
             " \"rhs\": \"activation\"},"
             "{\"m\": 64, \"n\": 32, \"k\": 96, \"split\": \"k\"},"
             "{\"m\": 1, \"n\": 2, \"k\": 3, \"split\": \"none\"}]}]}");
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(fmt_parse_model(text, "m.json", &m, &err), UTIL_OK);
    ck_assert_int_eq(m.nlayers, 3);
    ck_assert_int_eq(m.ngemms, 4);
    ck_assert_int_eq(m.layers[2].gemm_first, 0);
    ck_assert_int_eq(m.layers[2].gemm_count, 4);
    ck_assert_double_eq(m.gemms[0].batch, 1.0);
    ck_assert_int_eq(m.gemms[0].split, FMT_SPLIT_N);
    ck_assert_int_eq(m.gemms[0].rhs_weight, 1);
    ck_assert_double_eq(m.gemms[1].batch, 12.0);
    ck_assert_int_eq(m.gemms[1].split, FMT_SPLIT_BATCH);
    ck_assert_int_eq(m.gemms[1].rhs_weight, 0);
    ck_assert_int_eq(m.gemms[2].split, FMT_SPLIT_K);
    ck_assert_int_eq(m.gemms[3].split, FMT_SPLIT_NONE);
    fmt_model_free(&m);
}
END_TEST

/* Each refusal names the file, the field's path and what was expected. */
START_TEST(test_read_errors)
{
    static const struct {
        const char *gemms;
        double flops;
        const char *path, *text;
    } cases[] = {
        {"[{\"m\": 8, \"n\": 8, \"k\": 8, \"split\": \"rows\"}]", 1e9,
         "layers[0].gemms[0].split", "expected 'n', 'k', 'batch' or 'none', got 'rows'"},
        {"[{\"m\": 8, \"n\": 8, \"k\": 8}, {\"m\": 8, \"n\": 8, \"k\": 8, "
         "\"rhs\": \"bias\"}]", 1e9,
         "layers[0].gemms[1].rhs", "expected 'weight' or 'activation', got 'bias'"},
        {"[{\"m\": 0, \"n\": 8, \"k\": 8}]", 1e9, "layers[0].gemms[0].m", "positive"},
        {"[{\"n\": 8, \"k\": 8}]", 1e9, "layers[0].gemms[0]", "m"},
        {"[{\"m\": 2e8, \"n\": 8, \"k\": 8}]", 1e18, "layers[0].gemms[0].m", "at most 100000000, got 200000000"},
        {"[7]", 1e9, "layers[0].gemms[0]", "expected an object"},
        {"{\"m\": 8}", 1e9, "layers[0].gemms", "array"},
        /* 2 * 1024^3 * 4 = 8.59e9 FLOPs: stated per micro-batch of 4 */
        {"[{\"m\": 1024, \"n\": 1024, \"k\": 1024, \"batch\": 4}]", 2.147483648e9,
         "layers[0].gemms", "sum to 8.58993e+09 FLOPs per sample, more than the "
                            "layer's 'fwd_flops' (2.14748e+09)"},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fmt_model m;
        util_error err;
        char msg[512];

        ck_assert_msg(parse(cases[i].gemms, cases[i].flops, "", &m, &err) != UTIL_OK,
                      "case %zu accepted", i);
        util_error_format(&err, msg, sizeof msg);
        ck_assert_msg(strstr(msg, "m.json") != NULL && strstr(msg, cases[i].path) != NULL &&
                          strstr(msg, cases[i].text) != NULL,
                      "case %zu: %s", i, msg);
    }
}
END_TEST

/* The Swin-T stage-1 block of docs/inputs.md: its GEMMs' FLOPs equal
 * twice the multiply-adds of Liu et al. 2021 (Swin Transformer) eq. 2,
 * 4hwC^2 + 2M^2hwC for W-MSA plus 8hwC^2 for the MLP, at h = w = 56,
 * C = 96, M = 7: 376,320,000 MACs, 752,640,000 FLOPs; a fwd_flops below
 * them is refused. */
START_TEST(test_read_swin_example)
{
    const char *swin =
        "[{\"m\": 3136, \"n\": 288, \"k\": 96},"
        " {\"m\": 49, \"n\": 49, \"k\": 32, \"batch\": 192, \"split\": \"batch\","
        " \"rhs\": \"activation\"},"
        " {\"m\": 49, \"n\": 32, \"k\": 49, \"batch\": 192, \"split\": \"batch\","
        " \"rhs\": \"activation\"},"
        " {\"m\": 3136, \"n\": 96, \"k\": 96, \"split\": \"k\"},"
        " {\"m\": 3136, \"n\": 384, \"k\": 96},"
        " {\"m\": 3136, \"n\": 96, \"k\": 384, \"split\": \"k\"}]";
    double hw = 56.0 * 56.0, C = 96.0, M2 = 49.0;
    double flops = 2.0 * (4.0 * hw * C * C + 2.0 * M2 * hw * C + 8.0 * hw * C * C);
    char *docs = tu_slurp(HETPLAN_SOURCE_DIR "/docs/inputs.md");
    fmt_model m;
    util_error err;

    ck_assert_double_eq(flops, 752640000.0);
    ck_assert_int_eq(parse(swin, flops, "", &m, &err), UTIL_OK);
    ck_assert_int_eq(m.ngemms, 6);
    fmt_model_free(&m);
    ck_assert_int_ne(parse(swin, flops - 1000.0, "", &m, &err), UTIL_OK);
    /* the same GEMMs as the docs show */
    ck_assert_ptr_nonnull(docs);
    ck_assert_ptr_nonnull(strstr(docs, "{\"m\": 49, \"n\": 49, \"k\": 32, \"batch\": 192, "
                                       "\"split\": \"batch\", \"rhs\": \"activation\"}"));
    ck_assert_ptr_nonnull(strstr(docs, "{\"m\": 3136, \"n\": 96, \"k\": 384, "
                                       "\"split\": \"k\"}"));
    free(docs);
}
END_TEST

/* More than 256 GEMMs in one layer are refused (docs/limits.md). */
START_TEST(test_read_limit)
{
    static char gemms[257 * 32 + 8];
    size_t used = 0;
    fmt_model m;
    util_error err;
    char msg[512];
    int i;

    gemms[used++] = '[';
    for (i = 0; i < 257; i++)
        used += (size_t)snprintf(gemms + used, sizeof gemms - used, "%s{\"m\":1,\"n\":1,\"k\":1}",
                                 i ? "," : "");
    snprintf(gemms + used, sizeof gemms - used, "]");
    ck_assert_int_ne(parse(gemms, 1e9, "", &m, &err), UTIL_OK);
    util_error_format(&err, msg, sizeof msg);
    ck_assert_msg(strstr(msg, "layers[0].gemms: expected at most 256 GEMMs in a layer, got 257") !=
                      NULL, "%s", msg);
}
END_TEST

/* 65,536 GEMMs in a model file, one per layer entry, are read; one more
 * is refused naming the entry (docs/limits.md). */
START_TEST(test_read_file_limit)
{
    util_buf b;
    fmt_model m;
    util_error err;
    char msg[512];
    int i, n;

    for (n = 65536; n <= 65537; n++) {
        memset(&b, 0, sizeof b);
        util_buf_printf(&b, "{\"name\": \"g\", \"layers\": [");
        for (i = 0; i < n; i++)
            util_buf_printf(&b, "%s{\"name\": \"l\", \"kind\": \"generic\", \"params\": 0,"
                                " \"fwd_flops\": 2, \"out_bytes\": 0, \"act_bytes\": 0,"
                                " \"gemms\": [{\"m\": 1, \"n\": 1, \"k\": 1}]}",
                            i ? "," : "");
        util_buf_printf(&b, "]}");
        ck_assert(!b.failed);
        memset(&err, 0, sizeof err);
        if (n == 65536) {
            ck_assert_int_eq(fmt_parse_model(b.p, "m.json", &m, &err), UTIL_OK);
            ck_assert_int_eq(m.ngemms, 65536);
            ck_assert_int_eq(m.layers[65535].gemm_first, 65535);
            fmt_model_free(&m);
        } else {
            ck_assert_int_ne(fmt_parse_model(b.p, "m.json", &m, &err), UTIL_OK);
            util_error_format(&err, msg, sizeof msg);
            ck_assert_msg(strstr(msg, "'m.json': layers[65536].gemms: expected at most 65536 "
                                      "GEMMs in the model file, got more") != NULL, "%s", msg);
        }
        free(b.p);
    }
}
END_TEST

/* [2048 x 1024] x K 1024, B a weight: 8 x 8 = 64 tiles, one wave: one
 * tile time.  Backward: dA [2048 x 1024] over 1024, one wave again; dB
 * [1024 x 1024] over 2048: 4 x 8 = 32 tiles, one wave of a K twice as
 * long: 2 tile times.  Traffic 1 MB at 1 TB/s: 1 us forward, 1.5 us
 * (bwd_traffic) backward. */
START_TEST(test_time_weight)
{
    fmt_model m;
    util_error err;
    double f, b;

    ck_assert_int_eq(parse("[{\"m\": 2048, \"n\": 1024, \"k\": 1024}]", 4.294967296e9,
                           "", &m, &err), UTIL_OK);
    layer_time(&m, 1, 1, &f, &b);
    ck_assert_double_eq_tol(f, TILE_US, 1e-12);
    ck_assert_double_eq_tol(b, 3.0 * TILE_US, 1e-12);
    fmt_model_free(&m);
    ck_assert_int_eq(parse("[{\"m\": 2048, \"n\": 1024, \"k\": 1024}]", 4.294967296e9,
                           "", &m, &err), UTIL_OK);
    m.layers[0].traffic = 1e6;
    layer_time(&m, 1, 1, &f, &b);
    ck_assert_double_eq_tol(f, TILE_US + 1e-6, 1e-12);
    ck_assert_double_eq_tol(b, 3.0 * TILE_US + 1.5e-6, 1e-12);
    fmt_model_free(&m);
}
END_TEST

/* Tensor parallelism at tp 2 on [2048 x 1024] x K 1024: split "n" leaves
 * 8 x 4 = 32 tiles, still one wave: no faster (wave quantisation);
 * split "k" halves each tile's K: half a tile time; "none": as tp 1;
 * "batch" over 16 products of [256 x 128] x K 1024: 8 per rank, one wave
 * of 8 tiles either way: one tile time. */
START_TEST(test_time_tp_split)
{
    static const struct {
        const char *gemms;
        double flops, tiles;
    } cases[] = {
        {"[{\"m\": 2048, \"n\": 1024, \"k\": 1024, \"split\": \"n\"}]", 4.294967296e9, 1.0},
        {"[{\"m\": 2048, \"n\": 1024, \"k\": 1024, \"split\": \"k\"}]", 4.294967296e9, 0.5},
        {"[{\"m\": 2048, \"n\": 1024, \"k\": 1024, \"split\": \"none\"}]", 4.294967296e9, 1.0},
        {"[{\"m\": 256, \"n\": 128, \"k\": 1024, \"batch\": 16, \"split\": \"batch\"}]",
         1.073741824e9, 1.0},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fmt_model m;
        util_error err;
        double f, b;

        ck_assert_int_eq(parse(cases[i].gemms, cases[i].flops, "", &m, &err), UTIL_OK);
        layer_time(&m, 2, 1, &f, &b);
        ck_assert_msg(fabs(f - cases[i].tiles * TILE_US) < 1e-12, "case %zu: %g", i, f);
        fmt_model_free(&m);
    }
}
END_TEST

/* The micro-batch: [300 x 4096] x K 1024 per sample at mbs 4.  B a
 * weight: one product of 1200 rows, 5 x 32 = 160 tiles, 2 waves; B an
 * activation: 4 products of 300 rows, 2 x 32 x 4 = 256 tiles, 4 waves
 * (3.2 rounded up). */
START_TEST(test_time_microbatch)
{
    fmt_model m;
    util_error err;
    double f, b;

    ck_assert_int_eq(parse("[{\"m\": 300, \"n\": 4096, \"k\": 1024}]", 2.52e9, "", &m, &err),
                     UTIL_OK);
    layer_time(&m, 1, 4, &f, &b);
    ck_assert_double_eq_tol(f, 2.0 * TILE_US, 1e-12);
    fmt_model_free(&m);
    ck_assert_int_eq(parse("[{\"m\": 300, \"n\": 4096, \"k\": 1024, \"rhs\": \"activation\"}]",
                           2.52e9, "", &m, &err), UTIL_OK);
    layer_time(&m, 1, 4, &f, &b);
    ck_assert_double_eq_tol(f, 4.0 * TILE_US, 1e-12);
    fmt_model_free(&m);
}
END_TEST

/* Without "gemms" the same layer is timed from fwd_flops at the
 * large-GEMM rate: 4.294967296e9 FLOPs at 100 TFLOP/s x compute_eff; with
 * them, a transformer layer of a shaped list is timed from them rather
 * than from the shape's kernels. */
START_TEST(test_time_stated_wins)
{
    fmt_model m;
    util_error err;
    cost_params p;
    double f, b;

    ck_assert_int_eq(parse("[]", 4.294967296e9, "", &m, &err), UTIL_OK);
    ck_assert_int_eq(m.layers[0].gemm_count, 0);
    cost_params_init(&p);
    layer_time(&m, 1, 1, &f, &b);
    ck_assert_double_eq_tol(f, 4.294967296e9 / (100e12 * p.compute_eff), 1e-12);
    fmt_model_free(&m);
    {
        const char *text =
            "{\"name\": \"t\", \"shape\": {\"hidden\": 1024, \"heads\": 16, \"seq\": 2048,"
            " \"vocab\": 1000}, \"layers\": [{\"name\": \"b\", \"kind\": \"transformer\","
            " \"params\": 0, \"fwd_flops\": 4.294967296e9, \"out_bytes\": 0,"
            " \"act_bytes\": 0, \"traffic_bytes\": 0, \"traffic_rep_bytes\": 0,"
            " \"kernels\": 0, \"gemms\": [{\"m\": 2048, \"n\": 1024, \"k\": 1024}]}]}";
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(fmt_parse_model(text, "t.json", &m, &err), UTIL_OK);
        layer_time(&m, 1, 1, &f, &b);
        ck_assert_double_eq_tol(f, TILE_US, 1e-12);
        fmt_model_free(&m);
    }
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        test_read_defaults,    test_read_errors,   test_read_swin_example,
        test_read_limit,       test_read_file_limit, test_time_weight,
        test_time_tp_split,    test_time_microbatch, test_time_stated_wins,
    };

    return tu_run_tests("gemmlist", tests, TU_N(tests));
}
