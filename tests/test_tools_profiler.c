/* tests/test_tools_profiler.c: the GPU-free parts of hetplan-profile: layer
 * shard shapes and FLOPs, statistics, the command line and the profile
 * JSON (read back by the planner's parser). */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prof.h"
#include "testutil.h"

#define EX(name) HETPLAN_SOURCE_DIR "/examples/" name

static void load(const char *path, fmt_model *m)
{
    util_error err;
    int rc = fmt_load_model(path, m, &err);

    ck_assert_msg(rc == UTIL_OK, "%s: %s", path, err.msg);
}

static double gemm_flops(const prof_layer_work *w, int bwd)
{
    double f = 0.0;
    int i;

    for (i = 0; i < w->nk; i++)
        if (w->k[i].op == PROF_OP_GEMM && w->k[i].bwd == bwd)
            f += w->k[i].flops;
    return f;
}

static int layer_of_kind(const fmt_model *m, int kind)
{
    int l;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].kind == kind)
            return l;
    return -1;
}

static const prof_kernel *kernel(const prof_layer_work *w, const char *name)
{
    int i;

    for (i = 0; i < w->nk; i++)
        if (strcmp(w->k[i].name, name) == 0)
            return &w->k[i];
    return NULL;
}

/* GEMM FLOPs of the shard equal the cost model's per-layer formula
 * (docs/model-formulas.md) times mbs, divided by tp; backward GEMMs do
 * twice the forward work. */
START_TEST(test_block_flops_match_model)
{
    static const int tps[] = {1, 2, 4, 8, 16};
    fmt_model m;
    int b, i, mbs;

    load(EX("gpt2-345m.json"), &m);
    b = layer_of_kind(&m, FMT_KIND_TRANSFORMER);
    ck_assert_int_ge(b, 0);
    for (i = 0; i < 5; i++)
        for (mbs = 1; mbs <= 8; mbs *= 2) {
            prof_shape sh;
            prof_layer_work w;
            double want = m.layers[b].fwd_flops * mbs / tps[i];
            ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, tps[i], mbs,
                                           0, &sh, NULL), UTIL_OK);
            ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
            ck_assert_msg(fabs(gemm_flops(&w, 0) - want) <= 1e-9 * want,
                          "tp %d mbs %d: %g vs %g", tps[i], mbs,
                          gemm_flops(&w, 0), want);
            ck_assert(fabs(gemm_flops(&w, 1) - 2.0 * want) <= 1e-9 * want);
            ck_assert(w.fwd_flops > gemm_flops(&w, 0)); /* element-wise work */
            ck_assert(w.fwd_bytes > 0 && w.bwd_bytes > w.fwd_bytes);
        }
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_block_shapes)
{
    fmt_model m;
    prof_shape sh;
    prof_layer_work w;
    const prof_kernel *k;
    int i, nf = 0, seen_bwd = 0;

    load(EX("gpt2-345m.json"), &m);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, 4, 2, 0, &sh, NULL),
                     UTIL_OK);
    ck_assert_int_eq(sh.ffn, 4096);
    ck_assert_int_eq(sh.gated, 0);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    /* QKV: (b*s, h) x (h, 3h/tp) -> column-major m = 3h/tp, n = b*s, k = h */
    k = kernel(&w, "qkv");
    ck_assert_ptr_nonnull(k);
    ck_assert(k->m == 3 * 1024 / 4 && k->n == 2 * 1024 && k->k == 1024);
    ck_assert(k->batch == 1 && !k->transa && !k->transb && !k->bwd);
    /* scores per head group: batch = b * heads / tp, s x s, inner d = 64 */
    k = kernel(&w, "attn_scores");
    ck_assert(k->m == 1024 && k->n == 1024 && k->k == 64 && k->batch == 2 * 4);
    k = kernel(&w, "softmax");
    ck_assert(k->rows == 2LL * 4 * 1024 && k->cols == 1024);
    k = kernel(&w, "proj");
    ck_assert(k->m == 1024 && k->n == 2048 && k->k == 256);
    k = kernel(&w, "fc1");
    ck_assert(k->m == 1024 && k->n == 2048 && k->k == 1024);
    k = kernel(&w, "gelu");
    ck_assert(k->rows == 2048 && k->cols == 1024);
    k = kernel(&w, "fc2");
    ck_assert(k->m == 1024 && k->n == 2048 && k->k == 1024);
    /* weight gradient of fc2: (N x K) = dY X^T, inner dimension b*s */
    k = kernel(&w, "fc2.wgrad");
    ck_assert(k->m == 1024 && k->n == 1024 && k->k == 2048 && k->transb && k->bwd);
    k = kernel(&w, "qkv.dgrad");
    ck_assert(k->m == 1024 && k->n == 2048 && k->k == 768 && k->transa);
    ck_assert_ptr_nonnull(kernel(&w, "norm1"));
    ck_assert_ptr_nonnull(kernel(&w, "residual2.bwd"));
    ck_assert_ptr_null(kernel(&w, "swiglu"));
    /* forward kernels first, then backward; every size positive */
    for (i = 0; i < w.nk; i++) {
        if (w.k[i].bwd)
            seen_bwd = 1;
        else {
            ck_assert(!seen_bwd);
            nf++;
        }
        ck_assert(w.k[i].flops >= 0 && w.k[i].bytes > 0);
        if (w.k[i].op == PROF_OP_GEMM)
            ck_assert(w.k[i].m > 0 && w.k[i].n > 0 && w.k[i].k > 0 &&
                      w.k[i].m < 2147483647LL && w.k[i].batch >= 1);
        else
            ck_assert(w.k[i].rows > 0 && w.k[i].cols > 0);
        ck_assert_ptr_nonnull(prof_op_name(w.k[i].op));
    }
    ck_assert_int_eq(nf, 12);
    ck_assert_int_eq(w.nk - nf, 18);
    ck_assert_ptr_null(prof_op_name(PROF_NOPS));
    ck_assert_ptr_null(prof_op_name(-1));
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_llama_block)
{
    fmt_model m;
    prof_shape sh;
    prof_layer_work w;
    const prof_kernel *k;
    int b;

    load(EX("llama-7b.json"), &m);
    b = layer_of_kind(&m, FMT_KIND_TRANSFORMER);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, 2, 1, 0, &sh, NULL),
                     UTIL_OK);
    ck_assert_int_eq(sh.gated, 1);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    k = kernel(&w, "gate_up");
    ck_assert_ptr_nonnull(k);
    ck_assert(k->m == 2LL * m.ffn / 2);
    ck_assert_ptr_nonnull(kernel(&w, "swiglu"));
    ck_assert_int_eq(kernel(&w, "norm1")->op, PROF_OP_RMSNORM);
    ck_assert(fabs(gemm_flops(&w, 0) - m.layers[b].fwd_flops / 2) <=
              1e-9 * m.layers[b].fwd_flops);
    fmt_model_free(&m);
}
END_TEST

/* OPT's ReLU MLP (Zhang et al. 2022): max(x, 0) forward, its backward
 * from the output; no GeLU, LayerNorm as GPT-2. */
START_TEST(test_opt_relu_block)
{
    fmt_model m;
    prof_shape sh;
    prof_layer_work w;
    const prof_kernel *k;

    load(EX("opt-1.3b.json"), &m);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, 2, 1, 0, &sh, NULL),
                     UTIL_OK);
    ck_assert(sh.relu == 1 && sh.gated == 0 && sh.rms == 0);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    k = kernel(&w, "relu");
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(k->op, PROF_OP_RELU);
    /* b s rows of ffn / tp: 2048 x 4096, one FLOP and 2 x 2 bytes each */
    ck_assert(k->rows == 2048 && k->cols == 8192 / 2 && !k->bwd);
    ck_assert_double_eq(k->flops, 2048.0 * 4096.0);
    ck_assert_double_eq(k->bytes, 2048.0 * 4096.0 * 4.0);
    k = kernel(&w, "relu.bwd");
    ck_assert(k != NULL && k->bwd && k->bytes == 2048.0 * 4096.0 * 6.0);
    ck_assert_ptr_null(kernel(&w, "gelu"));
    ck_assert_str_eq(prof_op_name(PROF_OP_RELU), "relu");
    ck_assert_int_eq(kernel(&w, "norm1")->op, PROF_OP_LAYERNORM);
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_other_kinds)
{
    fmt_model m;
    prof_shape sh;
    prof_layer_work w;
    const prof_kernel *k;
    int h;

    load(EX("gpt2-345m.json"), &m);
    /* LM head: logits GEMM over a padded vocabulary shard */
    h = layer_of_kind(&m, FMT_KIND_HEAD);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_HEAD, 1, 2, 0, &sh, NULL), UTIL_OK);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    ck_assert(fabs(gemm_flops(&w, 0) - 2 * m.layers[h].fwd_flops) <=
              1e-9 * m.layers[h].fwd_flops);
    ck_assert_ptr_nonnull(kernel(&w, "cross_entropy"));
    ck_assert_ptr_nonnull(kernel(&w, "logits.wgrad"));
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_HEAD, 8, 1, 0, &sh, NULL), UTIL_OK);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    ck_assert(kernel(&w, "logits")->m == 6532); /* 52256 / 8 */
    ck_assert(kernel(&w, "cross_entropy")->cols == 6532);
    /* embedding: gather from a vocabulary shard, positions added (GPT-2) */
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_EMBEDDING, 16, 1, 0, &sh, NULL),
                     UTIL_OK);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    k = kernel(&w, "embed");
    ck_assert(k->rows == 1024 && k->cols == 1024 && k->table_rows == 3266);
    ck_assert_ptr_nonnull(kernel(&w, "position_add"));
    ck_assert_ptr_nonnull(kernel(&w, "embed.bwd"));
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_NORM, 2, 4, 0, &sh, NULL), UTIL_OK);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    ck_assert_int_eq(w.nk, 2);
    ck_assert(w.k[0].rows == 4096 && w.k[0].cols == 1024); /* not split by tp */
    ck_assert(w.k[1].bwd);
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_shape_errors)
{
    fmt_model m;
    prof_shape sh;
    prof_layer_work w;
    util_error err;

    load(EX("gpt2-345m.json"), &m);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, 3, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "tp 3 does not divide"));
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_TRANSFORMER, 32, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_GENERIC, 1, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'generic'"));
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_NOOP, 1, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_HEAD, 0, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_HEAD, 1, 1, 3, &sh, &err),
                     UTIL_EINVAL);
    m.hidden = 0;
    ck_assert_int_eq(prof_shape_of(&m, FMT_KIND_HEAD, 1, 1, 0, &sh, &err),
                     UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "no transformer shape"));
    memset(&sh, 0, sizeof sh);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, &err), UTIL_EINVAL);
    ck_assert(prof_kind_measurable(FMT_KIND_TRANSFORMER));
    ck_assert(!prof_kind_measurable(FMT_KIND_NOOP));
    ck_assert(!prof_kind_measurable(FMT_KIND_GENERIC));
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_stats)
{
    const double even[] = {4, 1, 3, 2};
    const double odd[] = {10, 30, 20, 50, 40};
    double copy[4], bad[2] = {1, NAN};
    prof_stats s;
    util_error err;

    memcpy(copy, even, sizeof copy);
    ck_assert_int_eq(prof_stats_of(copy, 4, &s, NULL), UTIL_OK);
    ck_assert(memcmp(copy, even, sizeof copy) == 0); /* input untouched */
    ck_assert_int_eq(s.n, 4);
    ck_assert_double_eq_tol(s.median, 2.5, 1e-12);
    ck_assert_double_eq_tol(s.q1, 1.75, 1e-12);
    ck_assert_double_eq_tol(s.q3, 3.25, 1e-12);
    ck_assert_double_eq_tol(s.iqr, 1.5, 1e-12);
    ck_assert_double_eq_tol(s.mean, 2.5, 1e-12);
    ck_assert(s.min == 1 && s.max == 4);
    ck_assert_int_eq(prof_stats_of(odd, 5, &s, NULL), UTIL_OK);
    ck_assert_double_eq_tol(s.median, 30, 1e-12);
    ck_assert_double_eq_tol(s.iqr, 20, 1e-12);
    ck_assert_int_eq(prof_stats_of(odd, 1, &s, NULL), UTIL_OK);
    ck_assert(s.median == 10 && s.iqr == 0);
    ck_assert_int_eq(prof_stats_of(odd, 0, &s, &err), UTIL_EINVAL);
    ck_assert_int_eq(prof_stats_of(bad, 2, &s, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "sample 1"));
}
END_TEST

/* Two forward and one backward kernel over three repeats. */
START_TEST(test_summarise)
{
    prof_layer_work w;
    prof_samples s;
    prof_layer_result r;
    util_error err;
    int rep;

    memset(&w, 0, sizeof w);
    w.shape.kind = FMT_KIND_TRANSFORMER;
    w.shape.tp = 2;
    w.shape.mbs = 4;
    w.nk = 3;
    strcpy(w.k[0].name, "a");
    strcpy(w.k[1].name, "b");
    strcpy(w.k[2].name, "c");
    w.k[2].bwd = 1;
    ck_assert_int_eq(prof_samples_alloc(&s, 3, 3), UTIL_OK);
    for (rep = 0; rep < 3; rep++) {
        double t0 = 100.0 * rep, slow = rep == 2 ? 10.0 : 0.0;
        /* a: 1 s, gap 0.5, b: 2 s (+10 in repeat 2), gap 1, c: 4 s */
        s.start[rep * 3 + 0] = t0;
        s.end[rep * 3 + 0] = t0 + 1;
        s.busy[rep * 3 + 0] = 1;
        s.start[rep * 3 + 1] = t0 + 1.5;
        s.end[rep * 3 + 1] = t0 + 3.5 + slow;
        s.busy[rep * 3 + 1] = 2 + slow;
        s.start[rep * 3 + 2] = t0 + 4.5 + slow;
        s.end[rep * 3 + 2] = t0 + 8.5 + slow;
        s.busy[rep * 3 + 2] = 4;
    }
    ck_assert_int_eq(prof_layer_summarise(&w, &s, &r, NULL), UTIL_OK);
    ck_assert_int_eq(r.kind, FMT_KIND_TRANSFORMER);
    ck_assert(r.tp == 2 && r.mbs == 4 && r.repeats == 3 && r.nk == 3);
    ck_assert_double_eq_tol(r.fwd_s, 3.5, 1e-12);      /* span, median */
    ck_assert_double_eq_tol(r.fwd_busy_s, 3.0, 1e-12); /* busy, median */
    ck_assert_double_eq_tol(r.fwd_iqr_s, 5.0, 1e-12);  /* 3.5, 3.5, 13.5 */
    ck_assert_double_eq_tol(r.bwd_s, 4.0, 1e-12);
    ck_assert_double_eq_tol(r.bwd_iqr_s, 0.0, 1e-12);
    ck_assert_double_eq_tol(r.kt[1].median_s, 2.0, 1e-12);
    ck_assert_double_eq_tol(r.kt[2].median_s, 4.0, 1e-12);
    /* a kernel with no GPU time */
    s.end[4] = s.start[4] - 1;
    ck_assert_int_eq(prof_layer_summarise(&w, &s, &r, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'b'"));
    /* layout mismatch */
    w.nk = 2;
    ck_assert_int_eq(prof_layer_summarise(&w, &s, &r, &err), UTIL_EINVAL);
    prof_samples_free(&s);
    prof_samples_free(&s); /* idempotent */
    ck_assert_int_eq(prof_samples_alloc(&s, 0, 3), UTIL_EINVAL);
}
END_TEST

static int parse(prof_options *o, util_error *err, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    char *a;

    argv[argc++] = "hetplan-profile";
    va_start(ap, err);
    while ((a = va_arg(ap, char *)) != NULL)
        argv[argc++] = a;
    va_end(ap);
    return prof_parse_args(argc, argv, o, err);
}

START_TEST(test_args)
{
    prof_options o;
    util_error err;

    ck_assert_int_eq(parse(&o, &err, "--model", "m.json", "--output", "p.json",
                           NULL), UTIL_OK);
    ck_assert_str_eq(o.model, "m.json");
    ck_assert_str_eq(o.output, "p.json");
    ck_assert(o.ntp == 4 && o.tp[3] == 8 && o.nmbs == 4 && o.mbs[0] == 1);
    ck_assert(o.warmup == 5 && o.repeats == 20 && o.dtype == 0 && o.device == 0);
    ck_assert_int_eq(parse(&o, &err, "--model=m.json", "-o", "p.json", "--tp",
                           "4,1,2,1", "--mbs=16", "--dtype", "bf16",
                           "--warmup", "0", "--repeats=7", "--gpu", "1",
                           "--device-type", "H100-SXM", "--no-bandwidth",
                           "--verbose", NULL), UTIL_OK);
    ck_assert(o.ntp == 3 && o.tp[0] == 1 && o.tp[1] == 2 && o.tp[2] == 4);
    ck_assert(o.nmbs == 1 && o.mbs[0] == 16);
    ck_assert(o.dtype == 2 && o.warmup == 0 && o.repeats == 7 && o.device == 1);
    ck_assert_str_eq(o.device_type, "H100-SXM");
    ck_assert(o.skip_bandwidth && o.verbose && !o.quiet);
    ck_assert_int_eq(parse(&o, &err, "--help", NULL), UTIL_OK);
    ck_assert(o.help);
    ck_assert_int_eq(parse(&o, &err, "--version", NULL), UTIL_OK);
    ck_assert(o.version);

    ck_assert_int_eq(parse(&o, &err, "--output", "p.json", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "missing required option '--model'");
    ck_assert_int_eq(parse(&o, &err, "--model", "m", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "missing required option '--output'");
    ck_assert_int_eq(parse(&o, &err, "--model", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--model' needs a value");
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--frob", NULL),
                     UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "unknown option '--frob'");
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "extra", NULL),
                     UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--tp", "1,,2",
                           NULL), UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--tp", "0",
                           NULL), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'--tp'"));
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--mbs", "x",
                           NULL), UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--dtype",
                           "fp8", NULL), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--dtype' expects 'fp16' or 'bf16', got 'fp8'");
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--repeats",
                           "0", NULL), UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--quiet=1",
                           NULL), UTIL_EINVAL);
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--quiet",
                           "--verbose", NULL), UTIL_EINVAL);
    /* an option given twice, in any spelling, is refused, naming it; a
     * value that looks like an option is a value */
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--model=n", NULL),
                     UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--model' given more than once");
    ck_assert_int_eq(parse(&o, &err, "--model", "m", "-o", "p", "--output", "q", NULL),
                     UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "option '--output' given more than once");
    ck_assert_int_eq(parse(&o, &err, "--model", "--tp", "-o", "p", "--tp", "2", NULL),
                     UTIL_OK);
    ck_assert_str_eq(o.model, "--tp");
}
END_TEST

START_TEST(test_int_list)
{
    int v[3], n;
    util_error err;

    ck_assert_int_eq(prof_parse_int_list("--x", "8,2,8,1", 1, 8, v, 3, &n, NULL),
                     UTIL_OK);
    ck_assert(n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 8);
    ck_assert_int_eq(prof_parse_int_list("--x", "1,2,3,4", 1, 8, v, 3, &n, &err),
                     UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "at most 3"));
    ck_assert_int_eq(prof_parse_int_list("--x", "", 1, 8, v, 3, &n, &err),
                     UTIL_EINVAL);
    ck_assert_int_eq(prof_parse_int_list("--x", "2,", 1, 8, v, 3, &n, &err),
                     UTIL_EINVAL);
    ck_assert_int_eq(prof_parse_int_list("--x", "9", 1, 8, v, 3, &n, &err),
                     UTIL_EINVAL);
}
END_TEST

START_TEST(test_device_type)
{
    char out[32];

    prof_device_type_of("NVIDIA H100 80GB HBM3", out);
    ck_assert_str_eq(out, "H100-SXM");
    prof_device_type_of("NVIDIA H200", out);
    ck_assert_str_eq(out, "H200");
    prof_device_type_of("Tesla V100-SXM2-16GB", out);
    ck_assert_str_eq(out, "V100");
    prof_device_type_of("NVIDIA Imaginary GPU with a very long marketing name", out);
    ck_assert_int_eq((int)strlen(out), 31);
    ck_assert(strncmp(out, "NVIDIA Imaginary", 16) == 0);
}
END_TEST

static void fill_result(prof_layer_result *r, const fmt_model *m, int kind,
                        int tp, int mbs, double fwd_ms)
{
    prof_shape sh;
    prof_layer_work w;
    int i;

    ck_assert_int_eq(prof_shape_of(m, kind, tp, mbs, 2, &sh, NULL), UTIL_OK);
    ck_assert_int_eq(prof_layer_work_of(&sh, &w, NULL), UTIL_OK);
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->tp = tp;
    r->mbs = mbs;
    r->fwd_s = fwd_ms / 1e3;
    r->bwd_s = 2 * fwd_ms / 1e3;
    r->fwd_busy_s = 0.9 * r->fwd_s;
    r->bwd_busy_s = 0.9 * r->bwd_s;
    r->repeats = 10;
    r->nk = w.nk;
    for (i = 0; i < w.nk; i++)
        r->kt[i].median_s = 1e-5 * (i + 1);
}

/* The written profile is read back by the planner's own parser against
 * AMP's 30-layer GPT-2 (with noop layers): noop -> 0, measured kinds ->
 * their times, grid points without results -> no entry. */
START_TEST(test_profile_json_roundtrip)
{
    fmt_model m;
    fmt_profile p;
    util_error err;
    prof_run run;
    prof_layer_result res[5];
    const int tps[] = {1, 2}, mbss[] = {1, 4};
    char *text;
    cJSON *doc, *e;
    int rc, l, i;

    load(EX("gpt2-amp.json"), &m);
    fill_result(&res[0], &m, FMT_KIND_EMBEDDING, 1, 1, 0.25);
    fill_result(&res[1], &m, FMT_KIND_TRANSFORMER, 1, 1, 1.5);
    fill_result(&res[2], &m, FMT_KIND_HEAD, 1, 1, 2.0);
    fill_result(&res[3], &m, FMT_KIND_TRANSFORMER, 2, 4, 3.25);
    fill_result(&res[4], &m, FMT_KIND_HEAD, 2, 4, 4.0);
    memset(&run, 0, sizeof run);
    strcpy(run.dev.name, "NVIDIA H100 80GB HBM3");
    prof_device_type_of(run.dev.name, run.dev.type);
    run.dev.cc_major = 9;
    run.dev.sm_count = 132;
    run.dev.mem_bytes = 85e9;
    run.dev.gpus = 1;
    run.bw.h2d_bps = 25e9;
    run.bw.copy_bytes = 1 << 28;
    run.bw.gemm_flops = 700e12;
    run.bw.gemm_n = 8192;
    run.warmup = 5;
    run.repeats = 10;
    run.res = res;
    run.nres = 5;
    run.tp = tps;
    run.ntp = 2;
    run.mbs = mbss;
    run.nmbs = 2;
    text = prof_profile_json(&run, &m, "gpt2-amp");
    ck_assert_ptr_nonnull(text);

    rc = fmt_parse_profile(text, "profile.json", &m, &p, &err);
    ck_assert_msg(rc == UTIL_OK, "%s: %s", err.path, err.msg);
    ck_assert_int_eq(p.nentries, 2); /* (1,1) and (2,4); (1,4), (2,1) empty */
    ck_assert_str_eq(p.entries[0].device, "H100-SXM");
    ck_assert(p.entries[0].tp == 1 && p.entries[0].mbs == 1);
    ck_assert(p.entries[1].tp == 2 && p.entries[1].mbs == 4);
    for (l = 0; l < m.nlayers; l++) {
        int k = m.layers[l].kind;
        double f0 = p.entries[0].fwd[l], f1 = p.entries[1].fwd[l];
        if (k == FMT_KIND_NOOP) {
            ck_assert(f0 == 0 && f1 == 0);
        } else if (k == FMT_KIND_TRANSFORMER) {
            ck_assert_double_eq_tol(f0, 1.5e-3, 1e-12);
            ck_assert_double_eq_tol(p.entries[0].bwd[l], 3e-3, 1e-12);
            ck_assert_double_eq_tol(f1, 3.25e-3, 1e-12);
        } else if (k == FMT_KIND_EMBEDDING) {
            ck_assert_double_eq_tol(f0, 0.25e-3, 1e-12);
            ck_assert(f1 < 0); /* not measured at (2, 4) */
        } else if (k == FMT_KIND_HEAD) {
            ck_assert_double_eq_tol(f1, 4e-3, 1e-12);
        }
    }
    fmt_profile_free(&p);

    /* the extras: device, machine, per-kernel detail */
    doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(cJSON_GetObjectItem(doc, "format")->valuestring,
                     "hetplan-profile/1");
    e = cJSON_GetObjectItem(doc, "device_info");
    ck_assert_int_eq(cJSON_GetObjectItem(e, "sm_count")->valueint, 132);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "compute_capability")->valuestring, "9.0");
    e = cJSON_GetObjectItem(doc, "machine");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(e, "h2d_gbs")->valuedouble, 25, 1e-9);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(e, "p2p_gbs")));
    ck_assert_double_eq_tol(cJSON_GetObjectItem(e, "gemm_tflops")->valuedouble, 700, 1e-9);
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "entries"), 0);
    e = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "detail"), "transformer");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e, "kernels")), 30);
    e = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "kernels"), 1);
    ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->valuestring, "qkv");
    ck_assert_str_eq(cJSON_GetObjectItem(e, "op")->valuestring, "gemm");
    ck_assert_double_eq_tol(cJSON_GetObjectItem(e, "median_ms")->valuedouble, 0.02, 1e-12);
    cJSON_Delete(doc);
    free(text);

    /* without results nothing is measured: an empty entry list */
    run.nres = 0;
    run.bw.copy_bytes = 0;
    run.bw.gemm_n = 0;
    text = prof_profile_json(&run, &m, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert_int_eq(fmt_parse_profile(text, "p.json", &m, &p, &err), UTIL_OK);
    ck_assert_int_eq(p.nentries, 0);
    fmt_profile_free(&p);
    doc = cJSON_Parse(text);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "machine")));
    cJSON_Delete(doc);
    free(text);
    for (i = 0; i < 5; i++)
        ck_assert(res[i].nk > 0);
    fmt_model_free(&m);
}
END_TEST

/* The toolkit's CUPTI in its usual places. */
static const char *const cupti_toolkit[] = {
    "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/lib/libcupti.so",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};

/* CUPTI is opened at run time: the names tried, and the messages when
 * it cannot be loaded (a missing file, a library without CUPTI's
 * functions). */
START_TEST(test_cupti_load)
{
    char names[PROF_CUPTI_MAX_CANDIDATES][PROF_PATH_MAX];
    prof_cupti_lib lib;
    util_error err;
    int n, rc;

    ck_assert_str_eq(prof_cupti_symbol(PROF_CUPTI_ENABLE), "cuptiActivityEnable");
    ck_assert_str_eq(prof_cupti_symbol(PROF_CUPTI_POP_EXTERNAL_ID),
                     "cuptiActivityPopExternalCorrelationId");
    ck_assert_ptr_null(prof_cupti_symbol(PROF_CUPTI_NFUNCS));
    ck_assert_ptr_null(prof_cupti_symbol(-1));

    unsetenv("HETPLAN_CUPTI_LIBRARY");
    n = prof_cupti_candidates(13, "/opt/cuda/lib64/libcupti.so.13.0.1", names,
                              PROF_CUPTI_MAX_CANDIDATES);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(names[0], "libcupti.so.13");
    ck_assert_str_eq(names[1], "/opt/cuda/lib64/libcupti.so.13.0.1");
    ck_assert_str_eq(names[2], "libcupti.so");
    ck_assert_int_eq(prof_cupti_candidates(0, "", names, PROF_CUPTI_MAX_CANDIDATES), 1);
    ck_assert_int_eq(prof_cupti_candidates(12, NULL, names, 1), 1);
    ck_assert_str_eq(names[0], "libcupti.so.12");
    setenv("HETPLAN_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
    n = prof_cupti_candidates(13, "/opt/x.so", names, PROF_CUPTI_MAX_CANDIDATES);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(names[0], "/nonexistent/libcupti.so.13");
    unsetenv("HETPLAN_CUPTI_LIBRARY");

    /* no such file */
    rc = prof_cupti_load(names, n, &lib, &err);
    ck_assert_int_eq(rc, UTIL_ENOTFOUND);
    ck_assert_ptr_null(lib.handle);
    {
        static const char want[] = "CUPTI not available: cannot load "
                                   "'/nonexistent/libcupti.so.13' (last error: ";
        ck_assert_msg(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    }
    ck_assert_ptr_nonnull(strstr(err.msg, "HETPLAN_CUPTI_LIBRARY"));
    /* a library that is not CUPTI (libm is always there) */
    snprintf(names[0], PROF_PATH_MAX, "/nonexistent/libcupti.so");
    snprintf(names[1], PROF_PATH_MAX, "libm.so.6");
    rc = prof_cupti_load(names, 2, &lib, &err);
    ck_assert_int_eq(rc, UTIL_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "'/nonexistent/libcupti.so', 'libm.so.6'"));
    ck_assert_ptr_nonnull(strstr(err.msg, "'libm.so.6' has no symbol "
                                          "'cuptiActivityRegisterCallbacks'"));
    ck_assert_int_eq(prof_cupti_load(names, 0, &lib, &err), UTIL_ENOTFOUND);
    prof_cupti_unload(&lib);
    prof_cupti_unload(NULL);
}
END_TEST

/* The first of cupti_toolkit that exists, -1 when none does. */
static int cupti_found(void)
{
    size_t f;

    for (f = 0; f < sizeof cupti_toolkit / sizeof cupti_toolkit[0]; f++)
        if (access(cupti_toolkit[f], R_OK) == 0)
            return (int)f;
    return -1;
}

/* Why the real-library check cannot run here; NULL when it can. */
static const char *cupti_absent(void)
{
    if (cupti_found() < 0)
        return "the CUPTI check needs the CUDA toolkit's libcupti.so under "
               "/usr/local/cuda (lib64, lib or extras/CUPTI/lib64)";
    return NULL;
}

/* The toolkit's CUPTI loads and has every function the profiler calls. */
START_TEST(test_cupti_real_library)
{
    char names[1][PROF_PATH_MAX];
    prof_cupti_lib lib;
    util_error err;
    int f = cupti_found(), n;

    ck_assert_int_ge(f, 0);
    snprintf(names[0], PROF_PATH_MAX, "%s", cupti_toolkit[f]);
    ck_assert_msg(prof_cupti_load(names, 1, &lib, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(lib.handle);
    ck_assert_str_eq(lib.path, cupti_toolkit[f]);
    for (n = 0; n < PROF_CUPTI_NFUNCS; n++)
        ck_assert_ptr_nonnull(lib.fn[n]);
    /* not unloaded: after dlclose LeakSanitizer reports libcupti's own
     * start-up allocations (the programs never unload it either) */
}
END_TEST

#ifdef HETPLAN_PROFILE_EXE
/* The built program: help, usage errors, and a clear exit 6 without
 * CUPTI (checked before the GPU, so this holds on any machine). */
START_TEST(test_profile_cli)
{
    char out[4096], cmd[1024];

    ck_assert_int_eq(tu_run_shell("'" HETPLAN_PROFILE_EXE "' --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: hetplan-profile"));
    ck_assert_int_eq(tu_run_shell("'" HETPLAN_PROFILE_EXE "'", out, sizeof out), 2);
    ck_assert_int_eq(tu_run_shell("'" HETPLAN_PROFILE_EXE "' --model /nonexistent.json "
                             "--output /tmp/hetplan-never.json", out, sizeof out), 3);
    snprintf(cmd, sizeof cmd,
             "HETPLAN_CUPTI_LIBRARY=/nonexistent/libcupti.so '%s' --model '%s' "
             "--output /tmp/hetplan-never.json", HETPLAN_PROFILE_EXE, EX("gpt2-345m.json"));
    ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 6);
    ck_assert_msg(strstr(out, "hetplan-profile: CUPTI not available: cannot load "
                              "'/nonexistent/libcupti.so'") != NULL, "%s", out);
    ck_assert_int_ne(access("/tmp/hetplan-never.json", F_OK), 0);
    /* a misspelled key of the model file is named, with the right one */
    {
        char path[64];
        FILE *f;
        snprintf(path, sizeof path, "/tmp/hetplan-prof-keys-%ld.json", (long)getpid());
        f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{\"name\": \"m\", \"transformer\": {\"layers\": 2, \"hidden\": 64,"
              " \"heads\": 2, \"sequ\": 8, \"vocab\": 10}}", f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "'%s' --model '%s' --output /tmp/hetplan-never.json",
                 HETPLAN_PROFILE_EXE, path);
        ck_assert_int_eq(tu_run_shell(cmd, out, sizeof out), 3);
        ck_assert_msg(strstr(out, "hetplan-profile: warning: '") != NULL &&
                          strstr(out, "transformer.sequ: unknown key 'sequ', did you "
                                      "mean 'seq'?") != NULL,
                      "%s", out);
        unlink(path);
    }
}
END_TEST
#endif

static Suite *profiler_suite(void)
{
    Suite *s = suite_create("profiler");
    TCase *tc = tcase_create("core");

    /* test_profile_cli starts hetplan-profile five times, each loading
     * the CUDA libraries: seconds, not Check's default */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_block_flops_match_model);
    tcase_add_test(tc, test_block_shapes);
    tcase_add_test(tc, test_llama_block);
    tcase_add_test(tc, test_opt_relu_block);
    tcase_add_test(tc, test_other_kinds);
    tcase_add_test(tc, test_shape_errors);
    tcase_add_test(tc, test_stats);
    tcase_add_test(tc, test_summarise);
    tcase_add_test(tc, test_args);
    tcase_add_test(tc, test_int_list);
    tcase_add_test(tc, test_device_type);
    tcase_add_test(tc, test_profile_json_roundtrip);
    tcase_add_test(tc, test_cupti_load);
#ifdef HETPLAN_PROFILE_EXE
    tcase_add_test(tc, test_profile_cli);
#endif
    suite_add_tcase(s, tc);
    return s;
}

/* its own ctest entry, test_tools_profiler_tool: skipped without CUPTI */
static Suite *cupti_suite(void)
{
    Suite *s = suite_create("profiler_cupti");
    TCase *tc = tcase_create("cupti");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cupti_real_library);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main_tool(argc, argv, profiler_suite, cupti_suite, cupti_absent);
}
