/* formats/model.c: layer kinds, per-kind default fields, the expansion
 * of the transformer shorthand (docs/model-formulas.md) and the reader
 * of model.json (docs/inputs.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

#define MAX_BLOCKS 1000000
#define MAX_HIDDEN (1 << 20)
#define MAX_LAYERS 1048576 /* layers in one model */

static const char *const kind_names[] = {
    "generic", "embedding", "transformer", "head", "norm", "noop"
};

#define NKINDS ((int)(sizeof kind_names / sizeof kind_names[0]))

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
        if (fmt_name_eq(name, kind_names[i]))
            return i;
    /* AMP's layer-sequence names */
    if (fmt_name_eq(name, "embed2h"))
        return FMT_KIND_EMBEDDING;
    if (fmt_name_eq(name, "embed2v"))
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
    return family != NULL && fmt_name_eq(family, "llama");
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
        if (fmt_name_eq(family, tied[i]))
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

void fmt_model_free(fmt_model *m)
{
    if (m == NULL)
        return;
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ---- model.json ------------------------------------------------------ */

static void known_kinds(char *buf, size_t n)
{
    size_t used = 0;
    int k;

    buf[0] = '\0';
    for (k = 0; k < 64 && fmt_kind_name(k) != NULL; k++)
        fmt_list_add(buf, n, &used, fmt_kind_name(k));
    fmt_list_add(buf, n, &used, "embed2h");
    fmt_list_add(buf, n, &used, "embed2v");
}

int fmt_kind_value(const fmt_read_ctx *cx, const char *p, const char *name,
                   int *kind)
{
    char list[200];

    *kind = fmt_kind_from_name(name);
    if (*kind >= 0)
        return UTIL_OK;
    known_kinds(list, sizeof list);
    return fmt_fail(cx, UTIL_EFIELD, p, "unknown layer kind '%s' (known: %s)",
                    name, list);
}

static int parse_training(const fmt_read_ctx *cx, const cJSON *root,
                          fmt_model *m)
{
    const cJSON *tr = NULL;
    const char *prec = NULL;
    int rc;

    m->dtype_bytes = 2;
    m->bf16 = 0;
    rc = fmt_sub_field(cx, root, "", "training", 0, FMT_K_OBJ, &tr);
    if (rc != UTIL_OK || tr == NULL)
        return rc;
    if ((rc = fmt_int_field(cx, tr, "training", "global_batch", FMT_F_POS, 0,
                            &m->global_batch)) != UTIL_OK ||
        (rc = fmt_str_ref(cx, tr, "training", "precision", 0, &prec)) !=
            UTIL_OK)
        return rc;
    if (prec == NULL || strcmp(prec, "fp16") == 0)
        return UTIL_OK;
    if (strcmp(prec, "bf16") == 0) {
        m->bf16 = 1;
        return UTIL_OK;
    }
    if (strcmp(prec, "fp32") == 0) {
        m->dtype_bytes = 4;
        return UTIL_OK;
    }
    return fmt_fail(cx, UTIL_EFIELD, "training.precision",
                    "expected 'fp16', 'bf16' or 'fp32', got '%s'", prec);
}

static int parse_transformer(const fmt_read_ctx *cx, const cJSON *tf,
                             fmt_model *m)
{
    const char *P = "transformer";
    fmt_transformer_spec spec;
    const cJSON *tied;
    char name[sizeof m->name];
    int rc, gb = m->global_batch, db = m->dtype_bytes, bf = m->bf16;

    memset(&spec, 0, sizeof spec);
    if (!cJSON_IsObject(tf))
        return fmt_fail(cx, UTIL_EFIELD, P, "expected an object, got %s",
                        util_json_type(tf));
    if ((rc = fmt_str_field(cx, tf, P, "family", FMT_F_NONEMPTY, "gpt2",
                            spec.family, sizeof spec.family)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "layers", FMT_F_REQ | FMT_F_POS, 0,
                            &spec.blocks)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "hidden", FMT_F_REQ | FMT_F_POS, 0,
                            &spec.hidden)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "heads", FMT_F_REQ | FMT_F_POS, 0,
                            &spec.heads)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "seq", FMT_F_REQ | FMT_F_POS, 0,
                            &spec.seq)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "vocab", FMT_F_REQ | FMT_F_POS, 0,
                            &spec.vocab)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tf, P, "ffn", FMT_F_NONNEG, 0, &spec.ffn)) !=
            UTIL_OK)
        return rc;
    tied = fmt_field(tf, "tied_embeddings");
    if (tied == NULL)
        spec.tied_embeddings = -1;
    else if (cJSON_IsBool(tied))
        spec.tied_embeddings = cJSON_IsTrue(tied) ? 1 : 0;
    else
        return fmt_fail(cx, UTIL_EFIELD, "transformer.tied_embeddings",
                        "expected a boolean (true or false), got %s",
                        util_json_type(tied));
    if (spec.blocks > MAX_LAYERS)
        return fmt_fail(cx, UTIL_EFIELD, "transformer.layers",
                        "expected at most %d layers, got %d", MAX_LAYERS,
                        spec.blocks);
    memcpy(name, m->name, sizeof name);
    memcpy(spec.name, m->name, sizeof spec.name);
    rc = fmt_model_from_transformer(&spec, m, cx->err);
    if (rc != UTIL_OK) {
        fmt_prefix_error(cx, P);
        fmt_model_free(m);
        return rc;
    }
    memcpy(m->name, name, sizeof m->name);
    if (gb > 0)
        m->global_batch = gb;
    m->dtype_bytes = db;
    m->bf16 = bf;
    return UTIL_OK;
}

/* One entry of "layers"; optional fields absent are -1 for defaults. */
static int parse_layer(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                       fmt_layer *l, int *repeat)
{
    const char *kind;
    char fp[FMT_PATH_N];
    int rc;

    memset(l, 0, sizeof *l);
    if (!cJSON_IsObject(e))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(e));
    if ((rc = fmt_str_field(cx, e, p, "name", FMT_F_REQ | FMT_F_NONEMPTY, "",
                            l->name, sizeof l->name)) != UTIL_OK ||
        (rc = fmt_str_ref(cx, e, p, "kind", FMT_F_REQ, &kind)) != UTIL_OK)
        return rc;
    util_json_key(fp, sizeof fp, p, "kind");
    if ((rc = fmt_kind_value(cx, fp, kind, &l->kind)) != UTIL_OK)
        return rc;
    if ((rc = fmt_num_field(cx, e, p, "params", FMT_F_REQ | FMT_F_NONNEG, 0,
                            &l->params)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "fwd_flops", FMT_F_REQ | FMT_F_NONNEG, 0,
                            &l->fwd_flops)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "out_bytes", FMT_F_REQ | FMT_F_NONNEG, 0,
                            &l->out_bytes)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "act_bytes", FMT_F_REQ | FMT_F_NONNEG, 0,
                            &l->act_bytes)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "tp_flops_frac", FMT_F_FRAC, -1,
                            &l->tp_flops_frac)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "traffic_bytes", FMT_F_NONNEG, -1,
                            &l->traffic)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "traffic_rep_bytes", FMT_F_NONNEG, -1,
                            &l->traffic_rep)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "act_rep_bytes", FMT_F_NONNEG, -1,
                            &l->act_rep_bytes)) != UTIL_OK ||
        (rc = fmt_num_field(cx, e, p, "tp_comm_bytes", FMT_F_NONNEG, -1,
                            &l->tp_comm_bytes)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "tp_collectives", FMT_F_NONNEG, -1,
                            &l->tp_collectives)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "kernels", FMT_F_NONNEG, -1,
                            &l->kernels)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "tied_group", FMT_F_NONNEG, -1,
                            &l->tied_group)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "repeat", FMT_F_POS, 1, repeat)) !=
            UTIL_OK)
        return rc;
    return UTIL_OK;
}

static int parse_layers(const fmt_read_ctx *cx, const cJSON *root,
                        const cJSON *ly, fmt_model *m)
{
    const cJSON *sh = NULL, *e;
    char p[FMT_PATH_N], fp[FMT_PATH_N];
    fmt_layer l, *grown;
    int rc, i = 0, k, repeat, cap = 0;

    if ((rc = fmt_sub_field(cx, root, "", "shape", 0, FMT_K_OBJ, &sh)) !=
        UTIL_OK)
        return rc;
    if (sh != NULL && ((rc = fmt_int_field(cx, sh, "shape", "hidden", FMT_F_POS,
                                           0, &m->hidden)) != UTIL_OK ||
                       (rc = fmt_int_field(cx, sh, "shape", "heads", FMT_F_POS,
                                           0, &m->heads)) != UTIL_OK ||
                       (rc = fmt_int_field(cx, sh, "shape", "seq", FMT_F_POS, 0,
                                           &m->seq)) != UTIL_OK ||
                       (rc = fmt_int_field(cx, sh, "shape", "vocab", FMT_F_POS,
                                           0, &m->vocab)) != UTIL_OK ||
                       (rc = fmt_int_field(cx, sh, "shape", "ffn", FMT_F_NONNEG,
                                           0, &m->ffn)) != UTIL_OK))
        return rc;
    if ((rc = fmt_sub_field(cx, root, "", "layers", FMT_F_REQ | FMT_F_NONEMPTY,
                            FMT_K_ARR, &ly)) != UTIL_OK)
        return rc;
    cJSON_ArrayForEach(e, ly)
    {
        util_json_index(p, sizeof p, "layers", i);
        if ((rc = parse_layer(cx, e, p, &l, &repeat)) != UTIL_OK)
            return rc;
        if (repeat > MAX_LAYERS - m->nlayers) {
            util_json_key(fp, sizeof fp, p, "repeat");
            return fmt_fail(cx, UTIL_EFIELD, fp,
                            "expected at most %d layers in the model, got more",
                            MAX_LAYERS);
        }
        if (m->nlayers + repeat > cap) {
            int ncap = cap ? cap : 32;
            while (ncap < m->nlayers + repeat)
                ncap *= 2;
            grown = realloc(m->layers, (size_t)ncap * sizeof *grown);
            if (grown == NULL)
                return fmt_fail(cx, UTIL_ENOMEM, p, "out of memory");
            m->layers = grown;
            cap = ncap;
        }
        fmt_layer_defaults(m, &l);
        for (k = 0; k < repeat; k++) {
            fmt_layer *dst = &m->layers[m->nlayers];
            *dst = l;
            if (repeat > 1 &&
                snprintf(dst->name, sizeof dst->name, "%s-%d", l.name, k) >=
                    (int)sizeof dst->name) {
                util_json_key(fp, sizeof fp, p, "name");
                return fmt_fail(cx, UTIL_EFIELD, fp,
                                "expected a name short enough for its '-%d' "
                                "suffix (at most %zu characters in all)",
                                k, sizeof dst->name - 1);
            }
            m->nlayers++;
            if (dst->kind == FMT_KIND_TRANSFORMER)
                m->blocks++;
        }
        i++;
    }
    return UTIL_OK;
}

int fmt_parse_model(const char *text, const char *file, fmt_model *out,
                     util_error *err)
{
    fmt_read_ctx cx;
    cJSON *root = NULL;
    fmt_model m;
    const cJSON *tf, *ly;
    int rc;

    cx.file = file ? file : "";
    cx.err = err;
    memset(&m, 0, sizeof m);
    if (out == NULL)
        return fmt_fail(&cx, UTIL_EINVAL, "", "no output model given");
    memset(out, 0, sizeof *out);
    if ((rc = fmt_read_doc(&cx, text, &root)) != UTIL_OK ||
        (rc = fmt_str_field(&cx, root, "", "name", FMT_F_REQ | FMT_F_NONEMPTY,
                            "", m.name, sizeof m.name)) != UTIL_OK ||
        (rc = parse_training(&cx, root, &m)) != UTIL_OK)
        goto done;
    tf = fmt_field(root, "transformer");
    ly = fmt_field(root, "layers");
    if (tf != NULL && ly != NULL) {
        rc = fmt_fail(&cx, UTIL_EFIELD, "",
                      "expected exactly one of 'transformer' and 'layers', "
                      "found both");
        goto done;
    }
    if (tf == NULL && ly == NULL) {
        rc = fmt_fail(&cx, UTIL_EFIELD, "",
                      "missing required field: expected exactly one of "
                      "'transformer' and 'layers', found neither");
        goto done;
    }
    rc = tf != NULL ? parse_transformer(&cx, tf, &m)
                    : parse_layers(&cx, root, ly, &m);
    if (rc != UTIL_OK)
        goto done;
    *out = m;
    memset(&m, 0, sizeof m);
done:
    fmt_model_free(&m);
    cJSON_Delete(root);
    return rc;
}

int fmt_load_model(const char *path, fmt_model *out, util_error *err)
{
    char *text = NULL;
    int rc;

    if (out != NULL)
        memset(out, 0, sizeof *out);
    rc = util_read_file(path, &text, err);
    if (rc == UTIL_OK)
        rc = fmt_parse_model(text, path, out, err);
    free(text);
    return rc;
}
