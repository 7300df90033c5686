/* tests/test_formats_model.c: device catalogue, layer kinds, transformer
 * expansion and per-kind layer defaults. */
#include <check.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "testutil.h"

#define GIB 1073741824.0

/* A spec with these sizes, the family's defaults for everything else. */
static void spec_of(fmt_transformer_spec *sp, const char *name, const char *family,
                    int blocks, int hidden, int heads, int seq, int vocab)
{
    memset(sp, 0, sizeof *sp);
    snprintf(sp->name, sizeof sp->name, "%s", name);
    snprintf(sp->family, sizeof sp->family, "%s", family);
    sp->blocks = blocks;
    sp->hidden = hidden;
    sp->heads = heads;
    sp->seq = seq;
    sp->vocab = vocab;
    sp->tied_embeddings = -1;
}

static void gpt2_spec(fmt_transformer_spec *sp)
{
    spec_of(sp, "gpt2-345m", "gpt2", 24, 1024, 16, 1024, 52256);
}

static void llama_spec(fmt_transformer_spec *sp)
{
    spec_of(sp, "llama-7b", "llama", 32, 4096, 32, 4096, 32000);
}

/* Parameters with each tied group counted once. */
static double unique_params(const fmt_model *m)
{
    double total = 0.0;
    int seen[64] = {0};
    int i;

    for (i = 0; i < m->nlayers; i++) {
        int g = m->layers[i].tied_group;
        if (g > 0 && g < 64) {
            if (seen[g])
                continue;
            seen[g] = 1;
        }
        total += m->layers[i].params;
    }
    return total;
}

/* ---- catalogue ------------------------------------------------------- */

START_TEST(test_catalog_known)
{
    const fmt_device_type *d;

    d = fmt_catalog_find("V100");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->name, "V100");
    ck_assert(d->flops_fp16 == 125e12);
    ck_assert(d->flops_bf16 == 0.0);
    ck_assert(d->mem_bw == 900e9);
    ck_assert(d->mem_bytes == 16160.0 * 1048576.0); /* CUDA-visible total */

    d = fmt_catalog_find("T4");
    ck_assert_ptr_nonnull(d);
    ck_assert(d->flops_fp16 == 65e12);
    ck_assert(d->mem_bw == 320e9);
    ck_assert(d->mem_bytes == 15360.0 * 1048576.0); /* CUDA-visible total (ECC) */

    d = fmt_catalog_find("A100-80GB");
    ck_assert_ptr_nonnull(d);
    ck_assert(d->flops_bf16 == 312e12);
    ck_assert(d->mem_bw == 2039e9);
    ck_assert(d->mem_bytes == 80.0 * GIB);

    d = fmt_catalog_find("H200");
    ck_assert_ptr_nonnull(d);
    ck_assert(d->mem_bytes == 141.0 * GIB);
    ck_assert(d->mem_bw == 4800e9);

    d = fmt_catalog_find("L4");
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->name, "L4");
    ck_assert(d->flops_fp16 == 121e12);
}
END_TEST

START_TEST(test_catalog_spellings)
{
    static const struct {
        const char *query, *name;
    } cases[] = {
        {"v100", "V100"},
        {"V100-16GB", "V100"},
        {"Tesla V100-SXM2-16GB", "V100"},
        {"t4", "T4"},
        {"Tesla T4", "T4"},
        {"a100-80gb", "A100-80GB"},
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
        {"A100-SXM 80GB", "A100-80GB"},
        {"A100 SXM 40GB", "A100-40GB"},
        {"H100-SXM 80GB", "H100-SXM"},
        {"A100", "A100-40GB"},
        {"a100_pcie_40gb", "A100-PCIe-40GB"},
        {"a10", "A10"},
        {"A10G", "A10G"},
        {"h100", "H100-SXM"},
        {"NVIDIA H100 80GB HBM3", "H100-SXM"},
        {"NVIDIA H100 PCIe", "H100-PCIe"},
        {"NVIDIA GeForce RTX 3090", "RTX3090"},
        {"rtx 4090", "RTX4090"},
        {"l40s", "L40S"},
        {"p100", "P100-16GB"},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fmt_device_type *d = fmt_catalog_find(cases[i].query);
        ck_assert_msg(d != NULL, "'%s' not found", cases[i].query);
        ck_assert_str_eq(d->name, cases[i].name);
    }
}
END_TEST

START_TEST(test_catalog_unknown)
{
    ck_assert_ptr_null(fmt_catalog_find("V200"));
    ck_assert_ptr_null(fmt_catalog_find(""));
    ck_assert_ptr_null(fmt_catalog_find("-"));
    ck_assert_ptr_null(fmt_catalog_find("NVIDIA"));
    ck_assert_ptr_null(fmt_catalog_find(NULL));
    ck_assert_ptr_null(fmt_catalog_find("A1000"));
    ck_assert_ptr_null(fmt_catalog_get(fmt_catalog_count()));
}
END_TEST

START_TEST(test_catalog_entries)
{
    size_t i, j, n = fmt_catalog_count();
    static const char *const required[] = {
        "P100-16GB", "V100", "V100-32GB", "V100-PCIe", "T4", "A10", "A10G",
        "A40", "A100-40GB", "A100-80GB", "A100-PCIe-40GB", "L4", "L40S",
        "RTX3090", "RTX4090", "H100-SXM", "H100-PCIe", "H200",
    };

    ck_assert_uint_ge(n, sizeof required / sizeof required[0]);
    for (i = 0; i < n; i++) {
        const fmt_device_type *d = fmt_catalog_get(i);
        ck_assert_ptr_nonnull(d);
        ck_assert_msg(d->mem_bytes > 0 && d->flops_fp16 > 0 && d->mem_bw > 0,
                      "'%s' has a non-positive spec", d->name);
        ck_assert(d->flops_bf16 >= 0);
        /* memory is a whole number of MiB */
        ck_assert(fmod(d->mem_bytes, 1048576.0) == 0.0);
        ck_assert_ptr_eq(fmt_catalog_find(d->name), d);
        for (j = 0; j < i; j++)
            ck_assert_str_ne(fmt_catalog_get(j)->name, d->name);
    }
    for (i = 0; i < sizeof required / sizeof required[0]; i++) {
        const fmt_device_type *d = fmt_catalog_find(required[i]);
        ck_assert_msg(d != NULL, "'%s' missing", required[i]);
        ck_assert_str_eq(d->name, required[i]);
    }
}
END_TEST

/* ---- kinds ----------------------------------------------------------- */

START_TEST(test_kind_names)
{
    int k;

    for (k = FMT_KIND_GENERIC; k <= FMT_KIND_NOOP; k++) {
        const char *name = fmt_kind_name(k);
        ck_assert_ptr_nonnull(name);
        ck_assert_int_eq(fmt_kind_from_name(name), k);
    }
    ck_assert_str_eq(fmt_kind_name(FMT_KIND_TRANSFORMER), "transformer");
    ck_assert_ptr_null(fmt_kind_name(-1));
    ck_assert_ptr_null(fmt_kind_name(FMT_KIND_NOOP + 1));
    ck_assert_int_eq(fmt_kind_from_name("embed2h"), FMT_KIND_EMBEDDING);
    ck_assert_int_eq(fmt_kind_from_name("embed2v"), FMT_KIND_HEAD);
    ck_assert_int_eq(fmt_kind_from_name("noop"), FMT_KIND_NOOP);
    ck_assert_int_eq(fmt_kind_from_name("Transformer"), FMT_KIND_TRANSFORMER);
    ck_assert_int_eq(fmt_kind_from_name("EMBED2V"), FMT_KIND_HEAD);
    ck_assert_int_eq(fmt_kind_from_name("attention"), -1);
    ck_assert_int_eq(fmt_kind_from_name(""), -1);
    ck_assert_int_eq(fmt_kind_from_name(NULL), -1);
}
END_TEST

/* ---- transformer expansion ------------------------------------------- */

START_TEST(test_gpt2_345m)
{
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    double s = 1024, h = 1024, a = 16, v = 52256, total;
    int i;

    gpt2_spec(&sp);
    memset(&m, 0, sizeof m);
    m.global_batch = 32;
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);
    ck_assert_int_eq(m.nlayers, 27);
    ck_assert_int_eq(m.blocks, 24);
    ck_assert_int_eq(m.hidden, 1024);
    ck_assert_int_eq(m.heads, 16);
    ck_assert_int_eq(m.seq, 1024);
    ck_assert_int_eq(m.vocab, 52256);
    ck_assert_int_eq(m.ffn, 4096);
    ck_assert_int_eq(m.global_batch, 32);
    ck_assert_int_eq(m.dtype_bytes, 2);
    ck_assert_str_eq(m.name, "gpt2-345m");
    ck_assert_str_eq(m.family, "gpt2");

    ck_assert_str_eq(m.layers[0].name, "embed");
    ck_assert_int_eq(m.layers[0].kind, FMT_KIND_EMBEDDING);
    ck_assert_str_eq(m.layers[1].name, "block0");
    ck_assert_str_eq(m.layers[24].name, "block23");
    ck_assert_str_eq(m.layers[25].name, "final_norm");
    ck_assert_int_eq(m.layers[25].kind, FMT_KIND_NORM);
    ck_assert_str_eq(m.layers[26].name, "head");
    ck_assert_int_eq(m.layers[26].kind, FMT_KIND_HEAD);
    ck_assert_int_eq(m.layers[0].tied_group, 1);
    ck_assert_int_eq(m.layers[26].tied_group, 1);

    total = unique_params(&m);
    ck_assert_msg(fabs(total - 355e6) / 355e6 < 0.01, "params %.0f", total);
    ck_assert(m.layers[0].params == v * h + s * h);
    ck_assert(m.layers[26].params == v * h);
    ck_assert(m.layers[25].params == 2 * h);

    for (i = 1; i <= 24; i++) {
        const fmt_layer *l = &m.layers[i];
        ck_assert_int_eq(l->kind, FMT_KIND_TRANSFORMER);
        ck_assert(l->fwd_flops == 24 * s * h * h + 4 * s * s * h);
        ck_assert(l->params == 12 * h * h + 13 * h);
        ck_assert(l->act_bytes == s * h * 34 + 5 * a * s * s);
        ck_assert(l->act_rep_bytes == 10 * s * h);
        ck_assert(l->out_bytes == s * h * 2);
        ck_assert(l->traffic == 13 * a * s * s + 2 * s * 4 * h * 2);
        ck_assert(l->traffic_rep == 15 * s * h * 2);
        ck_assert(l->tp_comm_bytes == s * h * 2);
        ck_assert(l->tp_flops_frac == 1.0);
        ck_assert_int_eq(l->tp_collectives, 2);
        ck_assert_int_eq(l->kernels, 40);
        ck_assert_int_eq(l->tied_group, 0);
    }
    ck_assert(m.layers[26].fwd_flops == 2 * s * h * v);
    ck_assert(m.layers[26].out_bytes == 4);
    ck_assert(m.layers[26].act_bytes == s * v * 10 + s * h * 2);
    ck_assert(m.layers[26].tp_comm_bytes == 4 * s);
    ck_assert_int_eq(m.layers[26].tp_collectives, 3);
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_dtype_and_overrides)
{
    fmt_transformer_spec sp;
    fmt_model m2, m4;
    util_error err;

    gpt2_spec(&sp);
    memset(&m2, 0, sizeof m2);
    memset(&m4, 0, sizeof m4);
    m4.dtype_bytes = 4;
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m2, &err), UTIL_OK);
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m4, &err), UTIL_OK);
    ck_assert_int_eq(m4.dtype_bytes, 4);
    ck_assert(m4.layers[1].act_bytes == 2 * m2.layers[1].act_bytes);
    ck_assert(m4.layers[1].out_bytes == 2 * m2.layers[1].out_bytes);
    ck_assert(m4.layers[1].fwd_flops == m2.layers[1].fwd_flops);
    fmt_model_free(&m2);
    fmt_model_free(&m4);

    /* explicit untied gpt2, explicit ffn, empty name keeps the caller's */
    gpt2_spec(&sp);
    sp.tied_embeddings = 0;
    sp.ffn = 2048;
    sp.name[0] = '\0';
    memset(&m2, 0, sizeof m2);
    strcpy(m2.name, "mine");
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m2, &err), UTIL_OK);
    ck_assert_int_eq(m2.layers[0].tied_group, 0);
    ck_assert_int_eq(m2.layers[26].tied_group, 0);
    ck_assert_int_eq(m2.ffn, 2048);
    ck_assert_str_eq(m2.name, "mine");
    ck_assert(m2.layers[1].params == 4.0 * 1024 * 1024 + 2.0 * 1024 * 2048 +
                                         9.0 * 1024 + 2048);
    fmt_model_free(&m2);
}
END_TEST

START_TEST(test_llama)
{
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    double s = 4096, h = 4096, f = 11008, v = 32000;
    int i;

    llama_spec(&sp); /* ffn 0: default rounding of 8h/3 */
    memset(&m, 0, sizeof m);
    m.dtype_bytes = 2;
    m.bf16 = 1;
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);
    ck_assert_int_eq(m.ffn, 11008);
    ck_assert_int_eq(m.bf16, 1);
    ck_assert_int_eq(m.nlayers, 35);
    ck_assert_str_eq(m.family, "llama");
    /* untied, no learned positions, RMSNorm without bias */
    ck_assert_int_eq(m.layers[0].tied_group, 0);
    ck_assert_int_eq(m.layers[34].tied_group, 0);
    ck_assert(m.layers[0].params == v * h);
    ck_assert(m.layers[33].params == h);
    for (i = 1; i <= 32; i++) {
        ck_assert(m.layers[i].params == 4 * h * h + 3 * h * f + 2 * h);
        ck_assert(m.layers[i].fwd_flops ==
                  2 * s * (4 * h * h + 3 * h * f) + 4 * s * s * h);
    }
    /* LLaMA-7B has 6,738,415,616 parameters */
    ck_assert(unique_params(&m) == 6738415616.0);
    fmt_model_free(&m);

    llama_spec(&sp);
    sp.tied_embeddings = 1;
    sp.ffn = 11008;
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);
    ck_assert_int_eq(m.layers[0].tied_group, 1);
    ck_assert_int_eq(m.layers[34].tied_group, 1);
    fmt_model_free(&m);
}
END_TEST

START_TEST(test_invalid_specs)
{
    static const struct {
        const char *path;
        int field, value;
    } cases[] = {
        {"transformer.layers", 0, 0},   {"transformer.layers", 0, -3},
        {"transformer.hidden", 1, 0},   {"transformer.heads", 2, 0},
        {"transformer.seq", 3, -1},     {"transformer.vocab", 4, 0},
        {"transformer.heads", 2, 12},   {"transformer.ffn", 5, -1},
        {"transformer.tied_embeddings", 6, 2},
    };
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int *fields[7];
        gpt2_spec(&sp);
        fields[0] = &sp.blocks;
        fields[1] = &sp.hidden;
        fields[2] = &sp.heads;
        fields[3] = &sp.seq;
        fields[4] = &sp.vocab;
        fields[5] = &sp.ffn;
        fields[6] = &sp.tied_embeddings;
        *fields[cases[i].field] = cases[i].value;
        memset(&m, 0, sizeof m);
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_EFIELD);
        ck_assert_int_eq(err.code, UTIL_EFIELD);
        ck_assert_str_eq(err.path, cases[i].path);
        ck_assert(err.msg[0] != '\0');
        ck_assert_ptr_null(m.layers);
    }
    gpt2_spec(&sp);
    strcpy(sp.family, "resnet");
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "transformer.family");
    ck_assert_ptr_nonnull(strstr(err.msg, "'resnet'"));
    ck_assert_int_eq(fmt_model_from_transformer(NULL, &m, &err), UTIL_EINVAL);
}
END_TEST

/* Spellings of a family that users copy from elsewhere (Hugging Face's
 * config.json model_type, the version in the name) resolve to the family
 * itself: its canonical name and its defaults (section comments of
 * formats/transformer.c); near misses stay errors. */
START_TEST(test_family_spellings)
{
    static const struct {
        const char *given, *family;
        int mlp, positions, norm, tied;
    } ok[] = {
        {"GPT2", "gpt2", FMT_MLP_GELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, 1},
        {"gpt-2", "gpt2", FMT_MLP_GELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, 1},
        {"gpt_neo", "gpt-neo", FMT_MLP_GELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, 1},
        {"GPTNeo", "gpt-neo", FMT_MLP_GELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, 1},
        {"gpt_neox", "gpt-neox", FMT_MLP_GELU, FMT_POS_ROTARY, FMT_NORM_LAYERNORM, 0},
        {"OPT", "opt", FMT_MLP_RELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, 1},
        {"Llama-2", "llama", FMT_MLP_SWIGLU, FMT_POS_ROTARY, FMT_NORM_RMSNORM, 0},
        {"llama3", "llama", FMT_MLP_SWIGLU, FMT_POS_ROTARY, FMT_NORM_RMSNORM, 0},
    };
    static const char *bad[] = {"gpt-neoy", "llama4", "neo", "-", "gpt"};
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    size_t i;

    for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        spec_of(&sp, "m", ok[i].given, 4, 256, 4, 128, 1000);
        memset(&m, 0, sizeof m);
        ck_assert_msg(fmt_model_from_transformer(&sp, &m, &err) == UTIL_OK,
                      "'%s': %s", ok[i].given, err.msg);
        ck_assert_str_eq(m.family, ok[i].family);
        ck_assert_int_eq(m.mlp, ok[i].mlp);
        ck_assert_int_eq(m.positions, ok[i].positions);
        ck_assert_int_eq(m.norm, ok[i].norm);
        ck_assert_int_eq(m.layers[0].tied_group > 0, ok[i].tied);
        fmt_model_free(&m);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spec_of(&sp, "m", bad[i], 4, 256, 4, 128, 1000);
        memset(&m, 0, sizeof m);
        ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_EFIELD);
        ck_assert_str_eq(err.path, "transformer.family");
        ck_assert_ptr_null(m.layers);
    }
}
END_TEST

/* ---- layer defaults -------------------------------------------------- */

static void unset(fmt_layer *l)
{
    l->tp_flops_frac = -1;
    l->traffic = -1;
    l->traffic_rep = -1;
    l->act_rep_bytes = -1;
    l->tp_comm_bytes = -1;
    l->tp_collectives = -1;
    l->kernels = -1;
    l->tied_group = -1;
}

START_TEST(test_layer_defaults)
{
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    fmt_layer l;
    int i;

    gpt2_spec(&sp);
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);

    /* every optional field unset: the expansion's values */
    for (i = 0; i < m.nlayers; i++) {
        const fmt_layer *e = &m.layers[i];
        l = *e;
        unset(&l);
        fmt_layer_defaults(&m, &l);
        ck_assert(l.tp_flops_frac == e->tp_flops_frac);
        ck_assert(l.traffic == e->traffic);
        ck_assert(l.traffic_rep == e->traffic_rep);
        ck_assert(l.act_rep_bytes == e->act_rep_bytes);
        ck_assert(l.tp_comm_bytes == e->tp_comm_bytes);
        ck_assert_int_eq(l.tp_collectives, e->tp_collectives);
        ck_assert_int_eq(l.kernels, e->kernels);
        ck_assert_int_eq(l.tied_group, 0);
    }

    /* only negative fields change; required fields never */
    memset(&l, 0, sizeof l);
    strcpy(l.name, "x");
    l.kind = FMT_KIND_TRANSFORMER;
    l.params = 7;
    l.fwd_flops = 11;
    l.out_bytes = 13;
    l.act_bytes = 17;
    unset(&l);
    l.traffic = 5;
    l.kernels = 3;
    l.tied_group = 2;
    l.tp_comm_bytes = 0;
    fmt_layer_defaults(&m, &l);
    ck_assert_str_eq(l.name, "x");
    ck_assert(l.params == 7 && l.fwd_flops == 11);
    ck_assert(l.out_bytes == 13 && l.act_bytes == 17);
    ck_assert(l.traffic == 5);
    ck_assert_int_eq(l.kernels, 3);
    ck_assert_int_eq(l.tied_group, 2);
    ck_assert(l.tp_comm_bytes == 0);
    ck_assert(l.traffic_rep == m.layers[1].traffic_rep);
    ck_assert(l.act_rep_bytes == m.layers[1].act_rep_bytes);
    ck_assert_int_eq(l.tp_collectives, 2);
    ck_assert(l.tp_flops_frac == 1.0);
    fmt_model_free(&m);

    /* unknown shape: shape-dependent defaults are 0 */
    memset(&m, 0, sizeof m);
    memset(&l, 0, sizeof l);
    l.kind = FMT_KIND_TRANSFORMER;
    unset(&l);
    fmt_layer_defaults(&m, &l);
    ck_assert(l.traffic == 0 && l.traffic_rep == 0 && l.act_rep_bytes == 0);
    ck_assert(l.tp_comm_bytes == 0);
    ck_assert_int_eq(l.kernels, 40);
    ck_assert_int_eq(l.tp_collectives, 2);

    /* generic and noop */
    l.kind = FMT_KIND_GENERIC;
    unset(&l);
    fmt_layer_defaults(&m, &l);
    ck_assert(l.tp_flops_frac == 0 && l.traffic == 0 && l.tp_comm_bytes == 0);
    ck_assert_int_eq(l.kernels, 1);
    ck_assert_int_eq(l.tp_collectives, 0);
    l.kind = FMT_KIND_NOOP;
    unset(&l);
    fmt_layer_defaults(&m, &l);
    ck_assert_int_eq(l.kernels, 0);
    ck_assert_int_eq(l.tied_group, 0);
}
END_TEST

/* ---- examples -------------------------------------------------------- */

static cJSON *load_json(const char *name)
{
    char path[512];
    char *text;
    cJSON *j;

    snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR, name);
    text = tu_slurp(path);
    ck_assert_msg(text != NULL, "cannot open '%s'", path);
    j = cJSON_Parse(text);
    free(text);
    ck_assert_msg(j != NULL, "'%s' is not valid JSON", path);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    ck_assert_msg(cJSON_IsNumber(v), "missing number '%s'", key);
    return v->valuedouble;
}

/* Every field of entry o equals layer e (out_bytes unless skip_out). */
static void same_layer(const cJSON *o, const fmt_layer *e, int skip_out)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "kind");

    ck_assert(cJSON_IsString(kind));
    ck_assert_int_eq(fmt_kind_from_name(kind->valuestring), e->kind);
    ck_assert(num(o, "params") == e->params);
    ck_assert(num(o, "fwd_flops") == e->fwd_flops);
    if (!skip_out)
        ck_assert(num(o, "out_bytes") == e->out_bytes);
    ck_assert(num(o, "act_bytes") == e->act_bytes);
    ck_assert(num(o, "tp_flops_frac") == e->tp_flops_frac);
    ck_assert(num(o, "traffic_bytes") == e->traffic);
    ck_assert(num(o, "traffic_rep_bytes") == e->traffic_rep);
    ck_assert(num(o, "act_rep_bytes") == e->act_rep_bytes);
    ck_assert(num(o, "tp_comm_bytes") == e->tp_comm_bytes);
    ck_assert(num(o, "tp_collectives") == e->tp_collectives);
    ck_assert(num(o, "kernels") == e->kernels);
}

START_TEST(test_gpt2_amp_example)
{
    static const char *const seq[] = {"embed2h", "noop", "transformer",
                                      "noop", "noop", "embed2v", "noop"};
    fmt_transformer_spec sp;
    fmt_model m;
    util_error err;
    cJSON *root = load_json("gpt2-amp.json");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(root, "shape");
    double s = 1024, h = 1024, v = 52256;
    int i;

    ck_assert(cJSON_IsArray(layers));
    ck_assert_int_eq(cJSON_GetArraySize(layers), 30);
    ck_assert(num(shape, "hidden") == 1024 && num(shape, "heads") == 16);
    ck_assert(num(shape, "seq") == 1024 && num(shape, "vocab") == 52256);

    gpt2_spec(&sp);
    memset(&m, 0, sizeof m);
    ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);
    for (i = 0; i < 30; i++) {
        const cJSON *o = cJSON_GetArrayItem(layers, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const char *want = seq[i < 2 ? i : i < 26 ? 2 : i - 23];
        int kind = fmt_kind_from_name(
            cJSON_GetObjectItemCaseSensitive(o, "kind")->valuestring);
        char block[16];

        ck_assert(cJSON_IsString(name));
        ck_assert_int_eq(kind, fmt_kind_from_name(want));
        if (kind == FMT_KIND_TRANSFORMER) {
            snprintf(block, sizeof block, "block%d", i - 2);
            ck_assert_str_eq(name->valuestring, block);
            same_layer(o, &m.layers[i - 1], 0);
            ck_assert(num(o, "tied_group") == 0);
        } else if (kind == FMT_KIND_EMBEDDING) {
            ck_assert_str_eq(name->valuestring, "embed2h");
            same_layer(o, &m.layers[0], 0);
            ck_assert(num(o, "tied_group") == 1);
        } else if (kind == FMT_KIND_HEAD) {
            ck_assert_str_eq(name->valuestring, "embed2v");
            same_layer(o, &m.layers[m.nlayers - 1], 1);
            ck_assert(num(o, "out_bytes") == s * v * 2);
            ck_assert(num(o, "tied_group") == 1);
        } else {
            double out = i == 29 ? s * v * 2 : s * h * 2;
            ck_assert(num(o, "params") == 0 && num(o, "fwd_flops") == 0);
            ck_assert(num(o, "act_bytes") == 0);
            ck_assert(num(o, "out_bytes") == out);
            ck_assert(num(o, "kernels") == 0);
        }
    }
    ck_assert(num(cJSON_GetObjectItemCaseSensitive(root, "training"),
                  "global_batch") == 32);
    fmt_model_free(&m);
    cJSON_Delete(root);
}
END_TEST

/* The transformer shorthand examples expand without error. */
START_TEST(test_shorthand_examples)
{
    static const char *const files[] = {"gpt2-345m.json", "gpt3-xl.json",
                                        "llama-7b.json"};
    size_t i;

    for (i = 0; i < sizeof files / sizeof files[0]; i++) {
        cJSON *root = load_json(files[i]);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "transformer");
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(t, "family");
        const cJSON *ffn = cJSON_GetObjectItemCaseSensitive(t, "ffn");
        fmt_transformer_spec sp;
        fmt_model m;
        util_error err;

        memset(&sp, 0, sizeof sp);
        memset(&m, 0, sizeof m);
        ck_assert(cJSON_IsString(fam));
        snprintf(sp.family, sizeof sp.family, "%s", fam->valuestring);
        sp.blocks = (int)num(t, "layers");
        sp.hidden = (int)num(t, "hidden");
        sp.heads = (int)num(t, "heads");
        sp.seq = (int)num(t, "seq");
        sp.vocab = (int)num(t, "vocab");
        sp.ffn = cJSON_IsNumber(ffn) ? ffn->valueint : 0;
        sp.tied_embeddings = -1;
        ck_assert_int_eq(fmt_model_from_transformer(&sp, &m, &err), UTIL_OK);
        ck_assert_int_eq(m.nlayers, sp.blocks + 3);
        if (i == 0)
            ck_assert(fabs(unique_params(&m) - 355e6) / 355e6 < 0.01);
        if (i == 1) /* GPT-3 XL: 1.3B */
            ck_assert(fabs(unique_params(&m) - 1.3e9) / 1.3e9 < 0.05);
        fmt_model_free(&m);
        cJSON_Delete(root);
    }
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_catalog_known);
    tcase_add_test(tc, test_catalog_spellings);
    tcase_add_test(tc, test_catalog_unknown);
    tcase_add_test(tc, test_catalog_entries);
    tcase_add_test(tc, test_kind_names);
    tcase_add_test(tc, test_gpt2_345m);
    tcase_add_test(tc, test_dtype_and_overrides);
    tcase_add_test(tc, test_llama);
    tcase_add_test(tc, test_invalid_specs);
    tcase_add_test(tc, test_family_spellings);
    tcase_add_test(tc, test_layer_defaults);
    tcase_add_test(tc, test_gpt2_amp_example);
    tcase_add_test(tc, test_shorthand_examples);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(model_suite());
}
