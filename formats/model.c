/* formats/model.c: layer kinds, per-kind default fields and the
 * expansion of the transformer shorthand (docs/model-formulas.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

#define MAX_BLOCKS 1000000
#define MAX_HIDDEN (1 << 20)

static const char *const kind_names[] = {
    "generic", "embedding", "transformer", "head", "norm", "noop"
};

#define NKINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

/* ASCII case-insensitive equality. */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const char *fmt_kind_name(int kind)
{
    return kind >= 0 && kind < NKINDS ? kind_names[kind] : NULL;
}

int fmt_kind_from_name(const char *name)
{
    int i;

    if (name == NULL)
        return -1;
    for (i = 0; i < NKINDS; i++)
        if (same_name(name, kind_names[i]))
            return i;
    /* AMP's layer-sequence names */
    if (same_name(name, "embed2h"))
        return FMT_KIND_EMBEDDING;
    if (same_name(name, "embed2v"))
        return FMT_KIND_HEAD;
    return -1;
}

/* Model shape as doubles, with the family's variant flags. */
typedef struct shape {
    double s, h, a, f, v, d;
    int llama;              /* SwiGLU, RMSNorm, no biases, no dropout, no positions */
} shape;

static int is_llama(const char *family)
{
    return family != NULL && same_name(family, "llama");
}

/* LLaMA's FFN size: 2/3 of 4h rounded up to a multiple of 256. */
static long long llama_ffn(long long h)
{
    long long f = (8 * h + 2) / 3;

    return (f + 255) / 256 * 256;
}

static void shape_of(const fmt_model *m, shape *x)
{
    int d = m->dtype_bytes > 0 ? m->dtype_bytes : 2;

    x->llama = is_llama(m->family);
    x->s = m->seq > 0 ? (double)m->seq : 0.0;
    x->h = m->hidden > 0 ? (double)m->hidden : 0.0;
    x->a = m->heads > 0 ? (double)m->heads : 0.0;
    x->v = m->vocab > 0 ? (double)m->vocab : 0.0;
    x->d = (double)d;
    if (m->ffn > 0)
        x->f = (double)m->ffn;
    else if (x->llama)
        x->f = m->hidden > 0 ? (double)llama_ffn(m->hidden) : 0.0;
    else
        x->f = 4.0 * x->h;
}

static void fill_block(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, a = x->a, f = x->f, d = x->d, r = x->d / 2.0;

    l->tp_flops_frac = 1.0;
    l->out_bytes = s * h * d;
    l->tp_comm_bytes = s * h * d; /* per all-reduce (two) */
    l->tp_collectives = 2;
    l->kernels = 40;
    if (x->llama) {
        l->params = 4.0 * h * h + 3.0 * h * f + 2.0 * h;
        l->fwd_flops = 2.0 * s * (4.0 * h * h + 3.0 * h * f) + 4.0 * s * s * h;
        l->traffic = 8.0 * a * s * s * r + 5.0 * s * f * d;
        l->traffic_rep = 10.0 * s * h * d;
        l->act_bytes = (16.0 * s * h + 6.0 * s * f + 2.0 * a * s * s) * r;
        l->act_rep_bytes = 8.0 * s * h * r;
    } else {
        l->params = 4.0 * h * h + 2.0 * h * f + 9.0 * h + f;
        l->fwd_flops = 2.0 * s * (4.0 * h * h + 2.0 * h * f) + 4.0 * s * s * h;
        l->traffic = 13.0 * a * s * s * r + 2.0 * s * f * d;
        l->traffic_rep = 15.0 * s * h * d;
        l->act_bytes = (18.0 * s * h + 4.0 * s * f + 5.0 * a * s * s) * r;
        l->act_rep_bytes = 10.0 * s * h * r;
    }
}

static void fill_embedding(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, d = x->d;

    l->fwd_flops = 0.0;
    l->tp_flops_frac = 1.0;
    l->traffic = s * h * d;
    l->out_bytes = s * h * d;
    l->tp_comm_bytes = s * h * d;
    l->tp_collectives = 1;
    if (x->llama) {
        l->params = x->v * h;
        l->traffic_rep = 0.0;
        l->act_bytes = 0.0;
        l->act_rep_bytes = 0.0;
        l->kernels = 3;
    } else {
        l->params = x->v * h + s * h;
        l->traffic_rep = 3.0 * s * h * d;
        l->act_bytes = s * h; /* dropout mask */
        l->act_rep_bytes = s * h;
        l->kernels = 6;
    }
}

static void fill_norm(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, d = x->d;

    l->params = x->llama ? h : 2.0 * h;
    l->traffic_rep = 2.0 * s * h * d;
    l->out_bytes = s * h * d;
    l->act_bytes = s * h * d;
    l->act_rep_bytes = s * h * d;
    l->kernels = 2;
}

static void fill_head(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, v = x->v, d = x->d;

    l->params = v * h;
    l->fwd_flops = 2.0 * s * h * v;
    l->tp_flops_frac = 1.0;
    l->traffic = s * v * (d + 12.0);
    l->out_bytes = 4.0; /* the loss */
    /* logits in d bytes, an fp32 copy and the fp32 softmax */
    l->act_bytes = s * v * (d + 8.0) + s * h * d;
    l->act_rep_bytes = s * h * d;
    /* per all-reduce (max, sum, target logit), s fp32 values each */
    l->tp_comm_bytes = 4.0 * s;
    l->tp_collectives = 3;
    l->kernels = 12;
}

/* Every field of a layer of this kind (name excepted), from the shape. */
static void fill_kind(const shape *x, int kind, fmt_layer *l)
{
    l->params = 0.0;
    l->fwd_flops = 0.0;
    l->tp_flops_frac = 0.0;
    l->traffic = 0.0;
    l->traffic_rep = 0.0;
    l->out_bytes = 0.0;
    l->act_bytes = 0.0;
    l->act_rep_bytes = 0.0;
    l->tp_comm_bytes = 0.0;
    l->tp_collectives = 0;
    l->kernels = 0;
    l->tied_group = 0;
    l->kind = kind;
    switch (kind) {
    case FMT_KIND_TRANSFORMER:
        fill_block(x, l);
        break;
    case FMT_KIND_EMBEDDING:
        fill_embedding(x, l);
        break;
    case FMT_KIND_NORM:
        fill_norm(x, l);
        break;
    case FMT_KIND_HEAD:
        fill_head(x, l);
        break;
    case FMT_KIND_NOOP:
        break;
    default:
        l->kernels = 1;
        break;
    }
}

void fmt_layer_defaults(const fmt_model *m, fmt_layer *l)
{
    fmt_model none;
    fmt_layer def;
    shape x;

    if (l == NULL)
        return;
    if (m == NULL) {
        memset(&none, 0, sizeof none);
        m = &none;
    }
    shape_of(m, &x);
    memset(&def, 0, sizeof def);
    fill_kind(&x, l->kind, &def);
    if (l->tp_flops_frac < 0)
        l->tp_flops_frac = def.tp_flops_frac;
    if (l->traffic < 0)
        l->traffic = def.traffic;
    if (l->traffic_rep < 0)
        l->traffic_rep = def.traffic_rep;
    if (l->act_rep_bytes < 0)
        l->act_rep_bytes = def.act_rep_bytes;
    if (l->tp_comm_bytes < 0)
        l->tp_comm_bytes = def.tp_comm_bytes;
    if (l->tp_collectives < 0)
        l->tp_collectives = def.tp_collectives;
    if (l->kernels < 0)
        l->kernels = def.kernels;
    if (l->tied_group < 0)
        l->tied_group = 0;
}

/* Known families: 1 when tied by default, 0 untied, -1 unknown. */
static int family_tied(const char *family)
{
    static const char *const tied[] = {"gpt2", "gpt3", "bert"};
    size_t i;

    for (i = 0; i < sizeof tied / sizeof tied[0]; i++)
        if (same_name(family, tied[i]))
            return 1;
    return is_llama(family) ? 0 : -1;
}

static int check_spec(const fmt_transformer_spec *sp, util_error *err)
{
    const struct {
        const char *field;
        int value;
    } pos[] = {
        {"layers", sp->blocks}, {"hidden", sp->hidden}, {"heads", sp->heads},
        {"seq", sp->seq},       {"vocab", sp->vocab},
    };
    char path[64];
    size_t i;

    if (sp->family[0] != '\0' && family_tied(sp->family) < 0)
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.family",
                              "unknown family '%s', expected 'gpt2', 'gpt3', "
                              "'bert' or 'llama'", sp->family);
    for (i = 0; i < sizeof pos / sizeof pos[0]; i++) {
        if (pos[i].value > 0)
            continue;
        snprintf(path, sizeof path, "transformer.%s", pos[i].field);
        return util_error_set(err, UTIL_EFIELD, NULL, path,
                              "'%s' must be a positive integer, got %d",
                              pos[i].field, pos[i].value);
    }
    if (sp->hidden > MAX_HIDDEN)
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.hidden",
                              "'hidden' must be at most %d, got %d",
                              MAX_HIDDEN, sp->hidden);
    if (sp->blocks > MAX_BLOCKS)
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.layers",
                              "'layers' must be at most %d, got %d",
                              MAX_BLOCKS, sp->blocks);
    if (sp->hidden % sp->heads != 0)
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.heads",
                              "'hidden' (%d) must be divisible by 'heads' (%d)",
                              sp->hidden, sp->heads);
    if (sp->ffn < 0)
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.ffn",
                              "'ffn' must be 0 (default) or positive, got %d",
                              sp->ffn);
    if (sp->tied_embeddings < -1 || sp->tied_embeddings > 1)
        return util_error_set(err, UTIL_EFIELD, NULL,
                              "transformer.tied_embeddings",
                              "'tied_embeddings' must be 0, 1 or -1 (family "
                              "default), got %d", sp->tied_embeddings);
    return UTIL_OK;
}

static void lower_copy(char *dst, size_t n, const char *src)
{
    size_t i;

    for (i = 0; i + 1 < n && src[i]; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

int fmt_model_from_transformer(const fmt_transformer_spec *spec,
                                fmt_model *m, util_error *err)
{
    fmt_model out;
    fmt_layer *layers;
    shape x;
    int rc, i, n, tied;

    if (spec == NULL || m == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected a transformer spec and a model, "
                              "got a null pointer");
    rc = check_spec(spec, err);
    if (rc != UTIL_OK)
        return rc;

    memset(&out, 0, sizeof out);
    lower_copy(out.family, sizeof out.family,
               spec->family[0] ? spec->family : "gpt2");
    if (spec->name[0])
        memcpy(out.name, spec->name, sizeof out.name);
    else if (m->name[0])
        memcpy(out.name, m->name, sizeof out.name);
    else
        memcpy(out.name, out.family, sizeof out.family);
    out.name[sizeof out.name - 1] = '\0';
    out.blocks = spec->blocks;
    out.hidden = spec->hidden;
    out.heads = spec->heads;
    out.seq = spec->seq;
    out.vocab = spec->vocab;
    out.global_batch = m->global_batch;
    out.dtype_bytes = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
    out.bf16 = m->bf16;
    if (spec->ffn > 0)
        out.ffn = spec->ffn;
    else if (is_llama(out.family))
        out.ffn = (int)llama_ffn(spec->hidden);
    else
        out.ffn = 4 * spec->hidden;
    tied = spec->tied_embeddings >= 0 ? spec->tied_embeddings
                                      : family_tied(out.family) > 0;

    n = spec->blocks + 3;
    layers = calloc((size_t)n, sizeof *layers);
    if (layers == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                              "cannot allocate %d layers", n);
    shape_of(&out, &x);
    fill_kind(&x, FMT_KIND_EMBEDDING, &layers[0]);
    strcpy(layers[0].name, "embed");
    for (i = 0; i < spec->blocks; i++) {
        fill_kind(&x, FMT_KIND_TRANSFORMER, &layers[i + 1]);
        snprintf(layers[i + 1].name, sizeof layers[i + 1].name, "block%d", i);
    }
    fill_kind(&x, FMT_KIND_NORM, &layers[n - 2]);
    strcpy(layers[n - 2].name, "final_norm");
    fill_kind(&x, FMT_KIND_HEAD, &layers[n - 1]);
    strcpy(layers[n - 1].name, "head");
    if (tied) {
        layers[0].tied_group = 1;
        layers[n - 1].tied_group = 1;
    }
    out.layers = layers;
    out.nlayers = n;
    *m = out;
    return UTIL_OK;
}
