/* tests/test_export_targets.c: `planner export` (docs/export.md).
 *
 * Library tests on hand-made clusters: the rank placement that the
 * torchrun lines realise (replayed as torchrun assigns ranks), the stage
 * split each Megatron-LM version is given (per-stage block counts summed
 * by hand), DeepSpeed's batch and ZeRO settings, and what each target
 * refuses.  CLI tests on the plans in tests/golden/ (inputs only; no
 * export output is compared with a stored copy): stdout and stderr,
 * refusals and their exit code, plans read from another directory.  The
 * flag and key names of every export are checked against the upstream
 * lists in tests/test_export_upstream.c. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "export.h"
#include "testutil.h"

#define GOLDEN HETPLAN_SOURCE_DIR "/tests/golden" /* plans used as inputs */
#define PATHN 4096

static char tmp_dir[1024];

/* ---- library: hand-made clusters ------------------------------------- */

typedef struct fixture {
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
} fixture;

static void fixture_make(fixture *f, const char *cluster_json,
                         const char *model_json, int tp, int dp, int pp)
{
    memset(f, 0, sizeof *f);
    tu_parse_inputs(cluster_json, model_json, &f->c, &f->m);
    cost_params_init(&f->p);
    ck_assert_int_eq(fmt_strategy_alloc(&f->s, tp, dp, pp), UTIL_OK);
}

static void fixture_free(fixture *f)
{
    fmt_strategy_free(&f->s);
    fmt_model_free(&f->m);
    fmt_cluster_free(&f->c);
}

static const char two_nodes[] =
    "{\"name\": \"two\", \"nodes\": ["
    "{\"name\": \"a\", \"device\": \"A100-80GB\", \"gpus\": 4, \"intra_gbps\": 2400, \"nic_gbps\": 200},"
    "{\"name\": \"b\", \"device\": \"V100\", \"gpus\": 4, \"intra_gbps\": 1200, \"nic_gbps\": 100}]}";
/* gpt2 shorthand: embedding, 16 blocks, final norm, head = 19 layers */
static const char gpt16[] =
    "{\"name\": \"g16\", \"training\": {\"global_batch\": 64, \"precision\": \"fp16\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
    " \"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";

/* Layer index of block b (0-based) in gpt16: after the embedding. */
static void set_blocks(fixture *f, const int *blocks)
{
    int j, at = 1;

    f->s.bounds[0] = 0;
    for (j = 0; j < f->s.pp; j++) {
        at += blocks[j];
        f->s.bounds[j + 1] = at;
    }
    f->s.bounds[f->s.pp] = f->m.nlayers;
}

static int has_note(const export_result *e, const char *needle)
{
    int i;

    for (i = 0; i < e->nnotes; i++)
        if (strstr(e->notes[i], needle))
            return 1;
    return 0;
}

START_TEST(megatron_even_split_has_no_note)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {4, 4, 4, 4};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    ck_assert_int_eq(f.m.nlayers, 19);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 2;
    f.s.gas = 32;
    set_blocks(&f, blocks);
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_OK);
    ck_assert_int_eq(e.nnotes, 0);
    ck_assert_int_eq(e.nfiles, 2);
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--num-layers 16 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--pipeline-model-parallel-size 4 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--global-batch-size 64 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--micro-batch-size 2 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--fp16"));
    ck_assert_ptr_null(strstr(e.files[0].text, "--bf16"));
    ck_assert_ptr_null(strstr(e.files[0].text, "NOTE"));
    ck_assert_ptr_null(strstr(e.files[0].text, "--decoder-"));
    ck_assert_ptr_null(strstr(e.files[0].text, "--pipeline-model-parallel-layout"));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* The value after flag in text (up to a blank), or -1. */
static int flag_int(const char *text, const char *flag)
{
    const char *p = strstr(text, flag);

    return p ? atoi(p + strlen(flag) + 1) : -1;
}

/* Blocks of each stage as Megatron-LM core_r0.9.0 builds them
 * (TransformerBlock's get_num_layers_to_build): the first and last
 * counts when given, the rest split evenly over the other stages.  Fills
 * n[0..pp-1], returns 0 when the rest does not divide. */
static int megatron_r09_stages(const char *text, int pp, int *n)
{
    int total = flag_int(text, "--num-layers");
    int first = flag_int(text, "--decoder-first-pipeline-num-layers");
    int last = flag_int(text, "--decoder-last-pipeline-num-layers");
    int left = total, stages = pp, j;

    if (first >= 0)
        left -= first, stages--;
    if (last >= 0)
        left -= last, stages--;
    if (stages > 0 && left % stages != 0)
        return 0;
    for (j = 0; j < pp; j++)
        n[j] = stages > 0 ? left / stages : 0;
    if (first >= 0)
        n[0] = first;
    if (last >= 0)
        n[pp - 1] = last;
    return 1;
}

/* Blocks of each model chunk in --pipeline-model-parallel-layout: 't'
 * between '|'; returns the chunk count. */
static int layout_stages(const char *text, int *n, int max)
{
    const char *p = strstr(text, "--pipeline-model-parallel-layout ");
    int k = 0;

    ck_assert_ptr_nonnull(p);
    p += strlen("--pipeline-model-parallel-layout ");
    n[0] = 0;
    for (; *p && *p != ' '; p++) {
        if (*p == '|') {
            ck_assert_int_lt(k + 1, max);
            n[++k] = 0;
        } else if (*p == 't') {
            n[k]++;
        }
    }
    return k + 1;
}

START_TEST(megatron_uneven_stages)
{
    fixture f;
    export_result e;
    export_options o;
    util_error err;
    const int blocks[] = {3, 4, 4, 5};
    int r, n[8], j, sum;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 1;
    f.s.gas = 64;
    set_blocks(&f, blocks);
    /* core_r0.9.0: first 3, last 5, middle (16 - 3 - 5) / 2 = 4 each */
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                  64, NULL, &e, &err), UTIL_OK);
    ck_assert_int_eq(e.napprox, 0);
    ck_assert_int_eq(flag_int(e.files[0].text, "--num-layers"), 16);
    ck_assert(megatron_r09_stages(e.files[0].text, 4, n));
    for (j = 0, sum = 0; j < 4; j++) {
        ck_assert_int_eq(n[j], blocks[j]);
        sum += n[j];
    }
    ck_assert_int_eq(sum, 16); /* the model's 16 blocks */
    export_free(&e);
    /* core_v0.19.0: the layout, E + 3 t | 4 t | 4 t | 5 t + L */
    export_options_init(&o);
    o.version = EXPORT_VERSION_NEW;
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                  64, &o, &e, &err), UTIL_OK);
    ck_assert_ptr_nonnull(strstr(e.files[0].text,
                                 "--pipeline-model-parallel-layout Ettt|tttt|tttt|tttttL "));
    ck_assert_int_eq(layout_stages(e.files[0].text, n, 8), 4);
    export_free(&e);
    /* a middle stage differing: core_r0.9.0 refuses, core_v0.19.0 lays it out */
    {
        const int b2[] = {4, 3, 5, 4};
        set_blocks(&f, b2);
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                      &f.s, 64, NULL, &e, &err), UTIL_EINVAL);
        ck_assert_int_eq(e.nfiles, 0);
        ck_assert_int_eq(e.napprox, 1);
        ck_assert(has_note(&e, "blocks per stage: 4,3,5,4"));
        ck_assert_ptr_nonnull(strstr(err.msg, "cannot express"));
        export_free(&e);
        export_options_init(&o);
        o.approximate = 1;
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                      &f.s, 64, &o, &e, &err), UTIL_OK);
        ck_assert_ptr_nonnull(strstr(e.files[0].text, "# APPROXIMATION: "));
        export_free(&e);
        o.approximate = 0;
        o.version = EXPORT_VERSION_NEW;
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                      &f.s, 64, &o, &e, &err), UTIL_OK);
        ck_assert_int_eq(layout_stages(e.files[0].text, n, 8), 4);
        for (j = 0, sum = 0; j < 4; j++) {
            ck_assert_int_eq(n[j], b2[j]);
            sum += n[j];
        }
        ck_assert_int_eq(sum, 16);
        export_free(&e);
    }
    fixture_free(&f);
}
END_TEST

/* Virtual stages, sequence parallelism, recomputation and ZeRO as
 * flags of each version. */
START_TEST(megatron_features)
{
    fixture f;
    export_result e;
    export_options o;
    util_error err;
    const int blocks[] = {8, 8};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 2, 2);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 1;
    f.s.gas = 32;
    f.s.vpp = 2;
    f.s.sp = 1;
    f.s.recompute = FMT_RECOMPUTE_SELECTIVE;
    f.s.zero = 1;
    set_blocks(&f, blocks);
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                  64, NULL, &e, &err), UTIL_OK);
    /* 8 blocks per stage in 2 chunks: 4 blocks per virtual stage */
    ck_assert_int_eq(flag_int(e.files[0].text, "--num-layers-per-virtual-pipeline-stage"), 4);
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--sequence-parallel "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--recompute-granularity selective "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--use-distributed-optimizer "));
    export_free(&e);
    export_options_init(&o);
    o.version = EXPORT_VERSION_NEW;
    f.s.zero = 3;
    f.s.recompute = FMT_RECOMPUTE_FULL;
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                  64, &o, &e, &err), UTIL_OK);
    ck_assert_int_eq(flag_int(e.files[0].text, "--num-virtual-stages-per-pipeline-rank"), 2);
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--data-parallel-sharding-strategy optim_grads_params "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--recompute-granularity full "));
    export_free(&e);
    /* ZeRO 3 has no core_r0.9.0 flag */
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                  64, NULL, &e, &err), UTIL_EINVAL);
    ck_assert(has_note(&e, "ZeRO stage 3"));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* Uneven TP shards: the torchrun export writes every rank's heads and
 * MLP columns; Megatron-LM and DeepSpeed shard evenly and refuse.  The
 * features DeepSpeed lacks (virtual stages, sequence parallelism,
 * selective recomputation) are refused there and stated to torchrun. */
START_TEST(shards_and_features_per_target)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {8, 8};
    /* tp 2 x dp 2 x pp 2: 16 heads and 4096 MLP columns split 10/6 and
     * 2560/1536 on the fast/slow rank of each TP pair */
    const int heads[] = {10, 6, 10, 6, 10, 6, 10, 6};
    const int cols[] = {2560, 1536, 2560, 1536, 2560, 1536, 2560, 1536};
    int r;
    char *sh;

    fixture_make(&f, two_nodes, gpt16, 2, 2, 2);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.gas = 32;
    set_blocks(&f, blocks);
    ck_assert_int_eq(fmt_strategy_set_shards(&f.s, heads, cols), UTIL_OK);
    ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_OK);
    ck_assert_int_eq(e.nfiles, 3);
    ck_assert_str_eq(e.files[2].name, "shards.txt");
    /* rank 1: stage 0, dp 0, tp 1 with 6 heads and 1536 columns */
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "\n     1      0   0   1      6         1536\n"));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "HETPLAN_TP_SHARDS="));
    export_free(&e);
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_EINVAL);
    ck_assert(has_note(&e, "unevenly over the TP group"));
    export_free(&e);
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_EINVAL);
    export_free(&e);
    ck_assert_int_eq(fmt_strategy_set_shards(&f.s, NULL, NULL), UTIL_OK);
    f.s.vpp = 2;
    f.s.sp = 1;
    f.s.recompute = FMT_RECOMPUTE_SELECTIVE;
    f.s.zero = 1;
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_EINVAL);
    ck_assert_int_eq(e.napprox, 3); /* virtual stages, sp, selective */
    ck_assert(has_note(&e, "no interleaved schedule"));
    ck_assert(has_note(&e, "sequence parallelism"));
    ck_assert(has_note(&e, "selective"));
    export_free(&e);
    ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_OK);
    sh = e.files[0].text;
    ck_assert_ptr_nonnull(strstr(sh, "HETPLAN_VIRTUAL_STAGES=2 HETPLAN_SEQUENCE_PARALLEL=1 "
                                     "HETPLAN_RECOMPUTE=selective HETPLAN_ZERO=1\n"));
    ck_assert_ptr_nonnull(strstr(sh, "HETPLAN_STAGE_BOUNDARIES=0,9,19\n"));
    ck_assert_ptr_nonnull(strstr(sh, "HETPLAN_PRECISION=fp16 "));
    ck_assert_int_eq(e.napprox, 0);
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* tp 2, dp 1, pp 4 over two_nodes, ranks in order, 4 blocks per stage,
 * mbs 2 and 32 micro-batches, for model text json. */
static void four_stages(fixture *f, const char *json)
{
    const int blocks[] = {4, 4, 4, 4};
    int r;

    fixture_make(f, two_nodes, json, 2, 1, 4);
    for (r = 0; r < 8; r++)
        f->s.ranks[r] = r;
    f->s.mbs = 2;
    f->s.gas = 32;
    set_blocks(f, blocks);
}

/* DeepSpeed and torchrun export f's plan as is. */
static void exports_as_is(fixture *f)
{
    const int targets[] = {EXPORT_DEEPSPEED, EXPORT_TORCHRUN};
    export_result e;
    util_error err;
    int v;

    for (v = 0; v < 2; v++) {
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(export_build(targets[v], &f->c, &f->m, &f->p, &f->s, 64,
                                      NULL, &e, &err), UTIL_OK);
        ck_assert_int_eq(e.napprox, 0);
        export_free(&e);
    }
}

/* A model that states PyTorch's training code (cross entropy from
 * F.cross_entropy, gradients freed by zero_grad(set_to_none=True)):
 * Megatron-LM runs neither, so both releases refuse, naming each key;
 * DeepSpeed and torchrun run the user's code and export it. */
START_TEST(pytorch_training_code_per_target)
{
    static const char pt16[] =
        "{\"name\": \"g16\", \"training\": {\"global_batch\": 64, \"precision\": \"fp16\","
        " \"cross_entropy\": \"pytorch\", \"grad_buffer\": \"set_to_none\"},"
        " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
        " \"heads\": 16, \"seq\": 1024, \"vocab\": 50272}}";
    fixture f;
    export_result e;
    export_options o;
    util_error err;
    int v;

    four_stages(&f, pt16);
    export_options_init(&o);
    for (v = 0; v < EXPORT_NVERSIONS; v++) {
        o.version = v;
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                      64, &o, &e, &err), UTIL_EINVAL);
        ck_assert_int_eq(e.napprox, 2);
        ck_assert(has_note(&e, "training.cross_entropy 'pytorch'"));
        ck_assert(has_note(&e, "training.grad_buffer 'set_to_none'"));
        export_free(&e);
    }
    exports_as_is(&f);
    fixture_free(&f);
}
END_TEST

/* The text of file name among e's files; fails when there is none. */
static const char *file_text(const export_result *e, const char *name)
{
    int i;

    for (i = 0; i < e->nfiles; i++)
        if (strcmp(e->files[i].name, name) == 0)
            return e->files[i].text;
    ck_abort_msg("no file '%s'", name);
    return NULL;
}

/* fp32 plans say how their matrix multiplications run, as the times
 * assume (cost_tf32): every launch script sets TF32 on (PyTorch's
 * TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1) or off (cuBLAS's
 * NVIDIA_TF32_OVERRIDE=0), and DeepSpeed's hetplan_pipe.py, which every
 * rank imports, sets it too; training.tf32 false turns it off, the cost
 * parameter tf32 over the model; a 16-bit plan sets nothing. */
START_TEST(fp32_matmul_mode_per_target)
{
    static const char *const models[] = {
        "{\"name\": \"g32\", \"training\": {\"global_batch\": 64, \"precision\": \"fp32\"},"
        " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
        " \"heads\": 16, \"seq\": 1024, \"vocab\": 50272}}",
        "{\"name\": \"g32\", \"training\": {\"global_batch\": 64, \"precision\": \"fp32\","
        " \"tf32\": false}, \"transformer\": {\"family\": \"gpt2\", \"layers\": 16,"
        " \"hidden\": 1024, \"heads\": 16, \"seq\": 1024, \"vocab\": 50272}}",
        "{\"name\": \"g16\", \"training\": {\"global_batch\": 64, \"precision\": \"fp16\"},"
        " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
        " \"heads\": 16, \"seq\": 1024, \"vocab\": 50272}}"};
    static const struct {
        int target;
        const char *file;
    } scripts[] = {{EXPORT_MEGATRON, "megatron.sh"},
                   {EXPORT_TORCHRUN, "torchrun.sh"},
                   {EXPORT_DEEPSPEED, "deepspeed.sh"}};
    const char *on = "export TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1\nunset NVIDIA_TF32_OVERRIDE\n";
    const char *off = "export NVIDIA_TF32_OVERRIDE=0\n";
    fixture f;
    export_result e;
    util_error err;
    size_t k, t;
    int param;

    for (k = 0; k < TU_N(models); k++)
        for (param = -1; param <= 1; param++) {
            /* k 0: unstated (on); k 1: training.tf32 false; k 2: fp16 */
            int want = param >= 0 ? param : k == 0;
            four_stages(&f, models[k]);
            f.p.tf32 = param;
            for (t = 0; t < TU_N(scripts); t++) {
                const char *sh, *py = NULL;
                memset(&err, 0, sizeof err);
                ck_assert_int_eq(export_build(scripts[t].target, &f.c, &f.m, &f.p,
                                              &f.s, 64, NULL, &e, &err), UTIL_OK);
                sh = file_text(&e, scripts[t].file);
                if (scripts[t].target == EXPORT_DEEPSPEED)
                    py = file_text(&e, "hetplan_pipe.py");
                if (k == 2) {
                    ck_assert_ptr_null(strstr(sh, "TF32"));
                    ck_assert(py == NULL || strstr(py, "allow_tf32") == NULL);
                } else {
                    ck_assert_msg(strstr(sh, want ? on : off) != NULL,
                                  "%s (model %zu, tf32 %d):\n%s", scripts[t].file,
                                  k, param, sh);
                    ck_assert_ptr_null(strstr(sh, want ? off : on));
                    ck_assert(py == NULL ||
                              strstr(py, want ? "allow_tf32 = True\n"
                                              : "allow_tf32 = False\n") != NULL);
                }
                export_free(&e);
            }
            fixture_free(&f);
        }
}
END_TEST

/* OPT's ReLU MLP: Megatron-LM's GPT model has GeLU, --swiglu and
 * --squared-relu and no plain ReLU (upstream flag lists of core_r0.9.0
 * and core_v0.19.0), so both releases refuse it, naming the MLP;
 * --approximate writes the GeLU command.  DeepSpeed and torchrun run the
 * user's own model code and carry no activation: they export it. */
START_TEST(relu_mlp_per_target)
{
    static const char opt16[] =
        "{\"name\": \"o16\", \"training\": {\"global_batch\": 64, \"precision\": \"fp16\"},"
        " \"transformer\": {\"family\": \"opt\", \"layers\": 16, \"hidden\": 1024,"
        " \"heads\": 16, \"seq\": 1024, \"vocab\": 50272}}";
    fixture f;
    export_result e;
    export_options o;
    util_error err;
    int v;

    four_stages(&f, opt16);
    ck_assert_int_eq(f.m.mlp, FMT_MLP_RELU);
    export_options_init(&o);
    for (v = 0; v < EXPORT_NVERSIONS; v++) {
        o.version = v;
        o.approximate = 0;
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                      64, &o, &e, &err), UTIL_EINVAL);
        ck_assert_int_eq(e.napprox, 1);
        ck_assert_int_eq(e.nfiles, 0);
        ck_assert(has_note(&e, "ReLU MLP"));
        ck_assert_ptr_nonnull(strstr(err.msg, "ReLU MLP"));
        export_free(&e);
        o.approximate = 1;
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                      64, &o, &e, &err), UTIL_OK);
        /* no activation flag (the header's note names them) */
        ck_assert_ptr_null(strstr(e.files[0].text, "  --swiglu \\\n"));
        ck_assert_ptr_null(strstr(e.files[0].text, "  --squared-relu \\\n"));
        ck_assert_ptr_nonnull(strstr(e.files[0].text, "# APPROXIMATION: the model has a ReLU MLP"));
        export_free(&e);
    }
    exports_as_is(&f);
    /* the same model with "mlp": "gelu" exports to Megatron-LM exactly */
    f.m.mlp = FMT_MLP_GELU;
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s, 64,
                                  NULL, &e, &err), UTIL_OK);
    ck_assert_int_eq(e.nnotes, 0);
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* bf16 on a V100 (no bf16 units) is refused by every target, also with
 * --approximate. */
START_TEST(precision_checked_per_device)
{
    static const char bf16[] =
        "{\"name\": \"g16\", \"training\": {\"global_batch\": 64, \"precision\": \"bf16\"},"
        " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
        " \"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";
    fixture f;
    export_result e;
    export_options o;
    util_error err;
    const int blocks[] = {8, 8};
    int r, t;

    fixture_make(&f, two_nodes, bf16, 1, 4, 2);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.gas = 16;
    set_blocks(&f, blocks);
    export_options_init(&o);
    o.approximate = 1;
    for (t = 0; t < EXPORT_NTARGETS; t++) {
        ck_assert_int_eq(export_build(t, &f.c, &f.m, &f.p, &f.s, 64, &o, &e, &err),
                         UTIL_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "'V100'"));
        ck_assert_ptr_nonnull(strstr(err.msg, "bf16"));
        export_free(&e);
    }
    fixture_free(&f);
}
END_TEST

START_TEST(deepspeed_zero_with_pipeline)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {8, 8};
    int r;

    fixture_make(&f, two_nodes, gpt16, 1, 4, 2);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 4;
    f.s.gas = 4;
    f.p.zero_stage = 2;
    f.p.recompute = 1;
    set_blocks(&f, blocks);
    /* ZeRO 2 with a pipeline is refused, written as stage 1 on request */
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                  64, NULL, &e, &err), UTIL_EINVAL);
    ck_assert_int_eq(e.nfiles, 0);
    export_free(&e);
    {
        export_options o;
        export_options_init(&o);
        o.approximate = 1;
        ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                      64, &o, &e, &err), UTIL_OK);
    }
    ck_assert_int_eq(e.napprox, 1);
    ck_assert_str_eq(e.files[0].name, "ds_config.json");
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"stage\": 1\n"));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"train_batch_size\": 64,"));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"gradient_accumulation_steps\": 4,"));
    ck_assert(has_note(&e, "accepts only stage 0 or 1"));
    ck_assert_str_eq(e.files[2].name, "hetplan_pipe.py");
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "\nBOUNDS = [0, 9, 19]\n"));
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "\nACTIVATION_CHECKPOINT_INTERVAL = 1\n"));
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "partition_method='uniform'"));
    ck_assert_ptr_null(strstr(e.files[2].text, "_partition_layers"));
    ck_assert_str_eq(e.files[1].name, "hostfile");
    ck_assert_ptr_nonnull(strstr(e.files[1].text, "\na slots=4\nb slots=4\n"));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* Where DeepSpeed 0.14.4 and 0.19.5 both define (or, deepspeed.pipe,
 * re-export) the names hetplan_pipe.py may import: read from their
 * deepspeed/pipe/__init__.py, runtime/pipe/module.py, topology.py and
 * runtime/activation_checkpointing/checkpointing.py. */
static const struct {
    const char *module, *names;
} ds_defines[] = {
    {"deepspeed.pipe", " PipelineModule LayerSpec TiedLayerSpec "},
    {"deepspeed.runtime.pipe.module", " PipelineModule LayerSpec TiedLayerSpec "},
    {"deepspeed.runtime.pipe.topology", " ProcessTopology PipeDataParallelTopology "
     "PipeModelDataParallelTopology PipelineParallelGrid "},
    {"deepspeed.runtime.activation_checkpointing.checkpointing", " checkpoint "},
};

/* Every "from M import a, b" line of py names only what M defines in both
 * releases, every "import M" line a module of Python or torch; returns
 * the number of names imported from deepspeed. */
static int check_ds_imports(const char *py)
{
    const char *p = py;
    int n = 0;

    while ((p = strstr(p, "\n")) != NULL) {
        char line[512], mod[256], names[256], *save = NULL, *w;
        size_t k = 0, i;
        int found = -1;
        p++;
        while (p[k] && p[k] != '\n' && k + 1 < sizeof line) {
            line[k] = p[k];
            k++;
        }
        line[k] = '\0';
        if (strncmp(line, "import ", 7) == 0) {
            ck_assert_msg(strcmp(line, "import os") == 0 || strcmp(line, "import torch") == 0 ||
                          strcmp(line, "import torch.nn as nn") == 0, "import line '%s'", line);
            continue;
        }
        if (strncmp(line, "from ", 5) != 0)
            continue;
        ck_assert_int_eq(sscanf(line, "from %255s import %255[^\n]", mod, names), 2);
        for (i = 0; i < TU_N(ds_defines); i++)
            if (strcmp(mod, ds_defines[i].module) == 0)
                found = (int)i;
        ck_assert_msg(found >= 0, "'%s': no such module in DeepSpeed 0.14.4 and 0.19.5", line);
        for (w = strtok_r(names, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
            char key[270];
            snprintf(key, sizeof key, " %s ", w);
            ck_assert_msg(strstr(ds_defines[found].names, key) != NULL,
                          "'%s': %s does not define %s", line, mod, w);
            n++;
        }
    }
    return n;
}

/* hetplan_pipe.py imports each name from the module that defines it in
 * DeepSpeed 0.14.4 and 0.19.5 (deepspeed.pipe re-exports only the
 * module's classes, not the topology), for pipelines and without. */
START_TEST(deepspeed_imports_where_defined)
{
    fixture f;
    export_result e;
    util_error err;
    const int two[] = {8, 8}, one[] = {16};
    int r, k;

    for (k = 0; k < 2; k++) {
        if (k == 0)
            fixture_make(&f, two_nodes, gpt16, 2, 2, 2);
        else
            fixture_make(&f, two_nodes, gpt16, 2, 4, 1);
        for (r = 0; r < 8; r++)
            f.s.ranks[r] = r;
        f.s.mbs = 4;
        f.s.gas = k == 0 ? 8 : 4;
        f.p.recompute = 1;
        set_blocks(&f, k == 0 ? two : one);
        ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                      64, NULL, &e, &err), UTIL_OK);
        ck_assert_str_eq(e.files[2].name, "hetplan_pipe.py");
        ck_assert_int_ge(check_ds_imports(e.files[2].text), 3);
        ck_assert_ptr_nonnull(strstr(e.files[2].text, "PipeModelDataParallelTopology(num_pp=NUM_PP, "
                                     "num_mp=NUM_MP, num_dp=NUM_DP)"));
        export_free(&e);
        fixture_free(&f);
    }
}
END_TEST

/* ZeRO 2 and 3 without a pipeline (pp 1): DeepSpeed's pipeline engine
 * asserts that they are incompatible with pipeline parallelism, so the
 * model is no PipelineModule but the layers as one nn.Sequential for the
 * plain engine, with DeepSpeed's PipelineParallelGrid over the plan's
 * topology as mpu when tp > 1 (its data-parallel groups are then the
 * plan's dp); ds_config.json keeps the plan's stage, nothing is
 * approximated. */
START_TEST(deepspeed_zero_without_pipeline)
{
    fixture f;
    export_result e;
    util_error err;
    const int one[] = {16};
    int r, zero, tp;

    for (tp = 1; tp <= 2; tp++)
        for (zero = 0; zero <= 3; zero++) {
            char want[64];
            fixture_make(&f, two_nodes, gpt16, tp, 8 / tp, 1);
            for (r = 0; r < 8; r++)
                f.s.ranks[r] = r;
            f.s.mbs = 2;
            f.s.gas = 4 * tp;
            f.p.zero_stage = zero;
            set_blocks(&f, one);
            ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                          64, NULL, &e, &err), UTIL_OK);
            ck_assert_int_eq(e.napprox, 0);
            snprintf(want, sizeof want, "\"stage\": %d\n", zero);
            ck_assert_ptr_nonnull(strstr(e.files[0].text, want));
            ck_assert_str_eq(e.files[2].name, "hetplan_pipe.py");
            ck_assert_ptr_null(strstr(e.files[2].text, "PipelineModule("));
            ck_assert_ptr_null(strstr(e.files[2].text, "import LayerSpec, PipelineModule"));
            ck_assert_ptr_nonnull(strstr(e.files[2].text, "\nPIPELINE = False\n"));
            ck_assert_ptr_nonnull(strstr(e.files[2].text, "(nn.Sequential):\n"));
            ck_assert_ptr_nonnull(strstr(e.files[2].text, "\nBOUNDS = [0, 19]\n"));
            snprintf(want, sizeof want, "\nNUM_PP, NUM_DP, NUM_MP = 1, %d, %d\n", 8 / tp, tp);
            ck_assert_ptr_nonnull(strstr(e.files[2].text, want));
            ck_assert_ptr_nonnull(strstr(e.files[2].text,
                                         "    return PipelineParallelGrid(topology=topology())\n"));
            ck_assert_ptr_nonnull(strstr(e.files[2].text, "args['mpu'] = mpu"));
            ck_assert_ptr_nonnull(strstr(e.files[3].text, "hetplan_pipe.initialize_args"));
            export_free(&e);
            fixture_free(&f);
        }
}
END_TEST

/* DeepSpeed's launcher numbers ranks host by host and gives global rank r
 * the local rank r % n, n the ranks on its host
 * (deepspeed/launcher/launch.py), and the rank runs on that entry of its
 * host's GPU list.  Two ranks on host a and four on b: b's ranks 2-5 get
 * local ranks 2, 3, 0, 1, so b's list is 2,3,0,1 for them to run on GPUs
 * 0-3 as planned; the slots of the hostfile alone would put rank 2 on
 * GPU 2. */
START_TEST(deepspeed_include_in_launch_order)
{
    fixture f;
    export_result e;
    util_error err;
    const int one[] = {16}, dev[] = {0, 1, 4, 5, 6, 7};
    int r;

    fixture_make(&f, two_nodes, gpt16, 1, 6, 1);
    for (r = 0; r < 6; r++)
        f.s.ranks[r] = dev[r];
    f.s.mbs = 1;
    f.s.gas = 8;
    set_blocks(&f, one);
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                  48, NULL, &e, &err), UTIL_OK);
    ck_assert_str_eq(e.files[3].name, "deepspeed.sh");
    ck_assert_msg(strstr(e.files[3].text, " --include a:0,1@b:2,3,0,1 ") != NULL,
                  "%s", e.files[3].text);
    ck_assert_ptr_nonnull(strstr(e.files[1].text, "\na slots=4\nb slots=4\n"));
    export_free(&e);
    /* 0.19's launcher sorts the list (runner.py's parse_node_config_list):
     * rank 2 cannot run on GPU 0 of b, the export is refused */
    {
        export_options o;
        export_options_init(&o);
        o.version = EXPORT_VERSION_NEW;
        ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                      48, &o, &e, &err), UTIL_EINVAL);
        ck_assert(has_note(&e, "rank 2, the first of ranks 2-5 on host 'b', would "
                               "run on GPU 2, not GPU 0"));
        export_free(&e);
    }
    /* b's first rank a multiple of its 4 ranks: slots 0..3 as they are */
    fixture_free(&f);
    fixture_make(&f, two_nodes, gpt16, 1, 8, 1);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 1;
    f.s.gas = 6;
    set_blocks(&f, one);
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                  48, NULL, &e, &err), UTIL_OK);
    ck_assert_ptr_null(strstr(e.files[3].text, "--include"));
    ck_assert_ptr_nonnull(strstr(e.files[1].text, "\na slots=4\nb slots=4\n"));
    export_free(&e);
    /* 0.19: GPUs 1,2 of a and 0,1 of b (the others idle), each host's
     * first rank a multiple of its 2 ranks: the sorted lists are the plan's */
    {
        export_options o;
        const int dev2[] = {1, 2, 4, 5};
        export_options_init(&o);
        o.version = EXPORT_VERSION_NEW;
        fixture_free(&f);
        fixture_make(&f, two_nodes, gpt16, 1, 4, 1);
        for (r = 0; r < 4; r++)
            f.s.ranks[r] = dev2[r];
        f.s.mbs = 1;
        f.s.gas = 12;
        set_blocks(&f, one);
        ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                      48, &o, &e, &err), UTIL_OK);
        ck_assert_msg(strstr(e.files[3].text, " --include a:1,2@b:0,1 ") != NULL,
                      "%s", e.files[3].text);
        export_free(&e);
    }
    fixture_free(&f);
}
END_TEST

/* Replay torchrun's rank assignment on the generated torchrun.sh: agent
 * k gets global ranks base_k + local, local i runs on the i-th GPU of its
 * CUDA_VISIBLE_DEVICES on its host.  The result must be the plan's map. */
static void replay_torchrun(const fixture *f, const char *text)
{
    const char *p = text;
    int base = 0, agents = 0, nnodes = -1, *seen;
    int N = f->c.ndevices;

    seen = calloc((size_t)N, sizeof *seen);
    while ((p = strstr(p, "# host '")) != NULL) {
        char host[64], *q;
        int gpus[64], ng = 0, nproc, node_rank, nn, i, node;
        p += 8;
        q = strchr(p, '\'');
        snprintf(host, sizeof host, "%.*s", (int)(q - p), p);
        p = strstr(p, "CUDA_VISIBLE_DEVICES=") + 21;
        while (1) {
            gpus[ng++] = (int)strtol(p, &q, 10);
            p = q;
            if (*p != ',')
                break;
            p++;
        }
        p = strstr(p, "exec torchrun");
        ck_assert_int_eq(sscanf(p, "exec torchrun --nnodes %d --nproc_per_node %d "
                                   "--node_rank %d", &nn, &nproc, &node_rank), 3);
        ck_assert_int_eq(node_rank, agents);
        ck_assert_int_eq(nproc, ng);
        if (nnodes < 0)
            nnodes = nn;
        ck_assert_int_eq(nn, nnodes);
        for (node = 0; node < f->c.nnodes; node++)
            if (strcmp(f->c.nodes[node].name, host) == 0)
                break;
        ck_assert_int_lt(node, f->c.nnodes);
        for (i = 0; i < nproc; i++) {
            int rank = base + i;
            int dev = f->c.nodes[node].first_device + gpus[i];
            ck_assert_int_lt(rank, N);
            ck_assert_msg(f->s.ranks[rank] == dev, "rank %d lands on device %d, "
                          "the plan says %d", rank, dev, f->s.ranks[rank]);
            seen[rank]++;
        }
        base += nproc;
        agents++;
        p++;
    }
    ck_assert_int_eq(base, N);
    ck_assert_int_eq(agents, nnodes);
    for (base = 0; base < N; base++)
        ck_assert_int_eq(seen[base], 1);
    free(seen);
}

START_TEST(torchrun_realises_random_placements)
{
    static const char three[] =
        "{\"name\": \"three\", \"nodes\": ["
        "{\"name\": \"h\", \"device\": \"H100-SXM\", \"gpus\": 8, \"intra_gbps\": 3600, \"nic_gbps\": 400},"
        "{\"name\": \"t\", \"count\": 2, \"device\": \"T4\", \"gpus\": 4, \"intra_gbps\": 64, \"nic_gbps\": 50}]}";
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 7u, 11u);
    for (trial = 0; trial < 40; trial++) {
        fixture f;
        export_result e;
        util_error err;
        const int blocks[] = {4, 4, 4, 4};
        int r, N;
        fixture_make(&f, three, gpt16, 2, 2, 4);
        N = f.c.ndevices;
        ck_assert_int_eq(N, 16);
        for (r = 0; r < N; r++)
            f.s.ranks[r] = r;
        if (trial % 4 == 1) { /* permute within nodes only */
            for (r = 0; r < 8; r++) {
                int k = (int)util_pcg32_bounded(&rng, (uint32_t)(8 - r)), t = f.s.ranks[r];
                f.s.ranks[r] = f.s.ranks[r + k];
                f.s.ranks[r + k] = t;
            }
        } else if (trial > 0) { /* any permutation */
            for (r = 0; r < N - 1; r++) {
                int k = (int)util_pcg32_bounded(&rng, (uint32_t)(N - r)), t = f.s.ranks[r];
                f.s.ranks[r] = f.s.ranks[r + k];
                f.s.ranks[r + k] = t;
            }
        }
        f.s.mbs = 1;
        f.s.gas = 32;
        set_blocks(&f, blocks);
        ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p,
                                           &f.s, 64, NULL, &e, &err), UTIL_OK);
        replay_torchrun(&f, e.files[0].text);
        if (trial <= 1) {
            ck_assert_int_eq(e.agents, 3);
            ck_assert_int_eq(e.nnotes, 0);
        }
        if (e.agents > e.hosts)
            ck_assert(has_note(&e, "not consecutive"));
        export_free(&e);
        /* the Megatron script uses the same launch lines */
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                           &f.s, 64, NULL, &e, &err), UTIL_OK);
        replay_torchrun(&f, e.files[0].text);
        export_free(&e);
        fixture_free(&f);
    }
}
END_TEST

START_TEST(bad_strategy_is_refused)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {4, 4, 4, 4};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    set_blocks(&f, blocks);
    f.s.ranks[3] = 99;
    ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "rank 3"));
    ck_assert_int_eq(e.nfiles, 0);
    f.s.ranks[3] = 3;
    ck_assert_int_eq(export_build(99, &f.c, &f.m, &f.p, &f.s, 64, NULL, &e, &err),
                     UTIL_EINVAL);
    export_free(&e);
    export_free(NULL);
    ck_assert_int_eq(export_target_from_name("deepspeed"), EXPORT_DEEPSPEED);
    ck_assert_int_eq(export_target_from_name("slurm"), -1);
    ck_assert_str_eq(export_target_name(EXPORT_HOSTFILE), "hostfile");
    fixture_free(&f);
}
END_TEST

/* ---- CLI behaviour --------------------------------------------------- */

START_TEST(cli_stdout_and_json)
{
    char so[PATHN], se[PATHN];
    char *o, *e;
    const char *a1[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile", NULL};
    const char *a2[] = {"export", "--plan", "plan-amp-het.json", "--to", "torchrun",
                        "--format", "json", NULL};
    const char *a3[] = {"export", "--plan", "plan-amp-het.json", "--to", "slurm", NULL};
    const char *a4[] = {"export", "--plan", "missing.json", "--to", "hostfile", NULL};
    const char *a5[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile",
                        "--output", "/nonexistent-dir/x/y", NULL};
    const char *a6[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile",
                        "--strategy", "9", NULL};

    snprintf(so, sizeof so, "%s/cli.out", tmp_dir);
    snprintf(se, sizeof se, "%s/cli.err", tmp_dir);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a1, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "\np3-0 slots=4\np3-1 slots=4\np3-2 slots=4\n"
                                    "g4dn-0 slots=4\n"));
    free(o);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a2, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "\"target\": \"torchrun\""));
    ck_assert_ptr_nonnull(strstr(o, "\"name\": \"torchrun.sh\""));
    ck_assert_ptr_nonnull(strstr(o, "\"notes\": ["));
    free(o);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a3, so, se), 2);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "'slurm'"));
    free(e);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a4, so, se), 3);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "missing.json"));
    free(e);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a5, so, se), 5);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a6, so, se), 2);
}
END_TEST

START_TEST(cli_output_table)
{
    char so[PATHN], se[PATHN], dir[2048];
    char *o;
    struct stat st;
    const char *a[] = {"export", "--plan", "plan-amp-het.json", "--to", "deepspeed",
                       "--output", dir, NULL};

    snprintf(so, sizeof so, "%s/t.out", tmp_dir);
    snprintf(se, sizeof se, "%s/t.err", tmp_dir);
    snprintf(dir, sizeof dir, "%s/ds-out", tmp_dir);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "file                     bytes  contents\n"));
    ck_assert_ptr_nonnull(strstr(o, "ds_config.json"));
    ck_assert_ptr_nonnull(strstr(o, "4 files written to"));
    free(o);
    snprintf(so, sizeof so, "%s/deepspeed.sh", dir);
    ck_assert_int_eq(stat(so, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0755);
    o = tu_slurp(so);
    ck_assert_int_eq(strncmp(o, "#!/bin/sh\n# ", 12), 0);
    free(o);
    snprintf(so, sizeof so, "%s/ds_config.json", dir);
    ck_assert_int_eq(stat(so, &st), 0);
    ck_assert(!(st.st_mode & S_IXUSR));
}
END_TEST

/* An uneven plan that core_r0.9.0 cannot express: exit 6 and the reason
 * on stderr (also under --quiet), nothing on stdout; --approximate writes
 * it with the approximation on stderr; core_v0.19.0 expresses it. */
START_TEST(cli_refusal_and_notes)
{
    char so[PATHN], se[PATHN], dir[2048];
    char *o, *e;
    const char *a1[] = {"export", "--plan", "plan-amp-het.json", "--to", "megatron",
                        "--quiet", NULL};
    const char *a2[] = {"export", "--plan", "plan-amp-het.json", "--to", "megatron",
                        "--approximate", "--output", dir, NULL};
    const char *a3[] = {"export", "--plan", "plan-amp-het.json", "--to=megatron",
                        "--target-version=core_v0.19.0", "--quiet", NULL};
    const char *a4[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile",
                        "--target-version", "2.x", NULL};

    snprintf(so, sizeof so, "%s/r.out", tmp_dir);
    snprintf(se, sizeof se, "%s/r.err", tmp_dir);
    snprintf(dir, sizeof dir, "%s/approx", tmp_dir);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a1, so, se), 6);
    o = tu_slurp(so);
    e = tu_slurp(se);
    ck_assert_str_eq(o, "");
    ck_assert_ptr_nonnull(strstr(e, "cannot express: the plan's layer split is uneven"));
    ck_assert_ptr_nonnull(strstr(e, "--approximate"));
    free(o);
    free(e);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a2, so, se), 0);
    o = tu_slurp(so);
    e = tu_slurp(se);
    ck_assert_ptr_null(strstr(o, "note"));
    ck_assert_ptr_nonnull(strstr(e, "warning: approximation: the plan's layer split"));
    free(o);
    free(e);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a3, so, se), 0);
    o = tu_slurp(so);
    ck_assert_str_eq(o, "");
    free(o);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a4, so, se), 2);
}
END_TEST

/* planner plan --launcher megatron on an OPT model: no strategy is
 * left (exit 6) and the reason names the ReLU MLP without export's
 * --approximate advice; DeepSpeed plans it. */
START_TEST(cli_launcher_relu)
{
    char so[PATHN], se[PATHN];
    char *e;
    const char *mg[] = {"plan", "--cluster", "h100-node4.json", "--model",
                        "opt-1.3b.json", "--launcher", "megatron", NULL};
    const char *ds[] = {"plan", "--cluster", "h100-node4.json", "--model",
                        "opt-1.3b.json", "--launcher", "deepspeed", "--quiet", NULL};

    snprintf(so, sizeof so, "%s/l.out", tmp_dir);
    snprintf(se, sizeof se, "%s/l.err", tmp_dir);
    ck_assert_int_eq(tu_run_planner(HETPLAN_SOURCE_DIR "/examples", mg, so, se), 6);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "ReLU MLP"));
    ck_assert_ptr_nonnull(strstr(e, "no strategy found that megatron"));
    /* --approximate is export's option, not plan's: not offered here */
    ck_assert_ptr_null(strstr(e, "--approximate"));
    free(e);
    ck_assert_int_eq(tu_run_planner(HETPLAN_SOURCE_DIR "/examples", ds, so, se), 0);
}
END_TEST

/* A plan made in one directory exports and reports from "/" by its
 * absolute path: the plan records its inputs' absolute paths. */
START_TEST(cli_plan_from_another_directory)
{
    char so[PATHN], se[PATHN], plan[PATHN], html[PATHN], work[1100];
    /* --name=value forms of the shared option parser */
    const char *mk[] = {"--cluster=" HETPLAN_SOURCE_DIR "/examples/amp-homogeneous.json",
                        "--model=model.json", "--top-k=2", "--output", "plan.json",
                        "--quiet", NULL};
    const char *ex[] = {"export", "--plan", plan, "--to", "torchrun", "--strategy=2",
                        "--quiet", NULL};
    const char *ex3[] = {"export", "--plan", plan, "--to", "torchrun", "--strategy=3",
                         NULL};
    const char *rp[] = {"report", "--plan", plan, "--output", html, "--quiet", NULL};
    char *text;
    struct stat st;

    snprintf(work, sizeof work, "%s/made-here", tmp_dir);
    ck_assert_int_eq(mkdir(work, 0777), 0);
    snprintf(plan, sizeof plan, "%s/model.json", work);
    text = tu_slurp(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json");
    ck_assert_ptr_nonnull(text);
    {
        FILE *f = fopen(plan, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
    }
    free(text);
    snprintf(so, sizeof so, "%s/m.out", tmp_dir);
    snprintf(se, sizeof se, "%s/m.err", tmp_dir);
    ck_assert_int_eq(tu_run_planner(work, mk, so, se), 0);
    snprintf(plan, sizeof plan, "%s/plan.json", work);
    snprintf(html, sizeof html, "%s/report.html", tmp_dir);
    ck_assert_int_eq(tu_run_planner("/", ex, so, se), 0);
    ck_assert_int_eq(tu_run_planner("/", ex3, so, se), 2); /* --top-k=2 kept two */
    ck_assert_int_eq(tu_run_planner("/", rp, so, se), 0);
    ck_assert_int_eq(stat(html, &st), 0);
    /* moved away: the error names the file and the absolute path tried */
    snprintf(so, sizeof so, "%s/model.json", work);
    snprintf(se, sizeof se, "%s/model.moved", work);
    ck_assert_int_eq(rename(so, se), 0);
    snprintf(so, sizeof so, "%s/x.out", tmp_dir);
    snprintf(se, sizeof se, "%s/x.err", tmp_dir);
    ck_assert_int_eq(tu_run_planner("/", ex, so, se), 3);
    text = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(text, "cannot find the model file 'model.json'"));
    ck_assert_ptr_nonnull(strstr(text, "/made-here/model.json"));
    free(text);
}
END_TEST

static Suite *export_suite(void)
{
    Suite *s = suite_create("export");
    TCase *l = tcase_create("library");
    TCase *c = tcase_create("cli");

    tcase_set_timeout(c, 120);
    tcase_add_test(l, megatron_even_split_has_no_note);
    tcase_add_test(l, megatron_uneven_stages);
    tcase_add_test(l, megatron_features);
    tcase_add_test(l, relu_mlp_per_target);
    tcase_add_test(l, pytorch_training_code_per_target);
    tcase_add_test(l, fp32_matmul_mode_per_target);
    tcase_add_test(l, precision_checked_per_device);
    tcase_add_test(l, shards_and_features_per_target);
    tcase_add_test(l, deepspeed_zero_with_pipeline);
    tcase_add_test(l, deepspeed_imports_where_defined);
    tcase_add_test(l, deepspeed_zero_without_pipeline);
    tcase_add_test(l, deepspeed_include_in_launch_order);
    tcase_add_test(l, torchrun_realises_random_placements);
    tcase_add_test(l, bad_strategy_is_refused);
    tcase_add_test(c, cli_stdout_and_json);
    tcase_add_test(c, cli_output_table);
    tcase_add_test(c, cli_refusal_and_notes);
    tcase_add_test(c, cli_plan_from_another_directory);
    tcase_add_test(c, cli_launcher_relu);
    suite_add_tcase(s, l);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    int failed;
    const char *t = getenv("TMPDIR");

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-export.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    failed = tu_run(export_suite()) != EXIT_SUCCESS;
    tu_remove_tree(tmp_dir);
    return failed == 0 ? 0 : 1;
}
