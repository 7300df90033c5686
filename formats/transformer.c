/* formats/transformer.c: the transformer shorthand: families and their
 * architecture defaults, the expansion into embedding, blocks, final
 * norm and head, and the per-kind default fields of a layer list
 * (docs/model-formulas.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_BLOCKS 1000000
#define MAX_HIDDEN (1 << 20)

/* ---- architecture choices -------------------------------------------- */

static const char *const mlp_names[] = {NULL, "gelu", "swiglu", "relu"};
static const char *const pos_names[] = {NULL, "learned", "rotary", "alibi"};
static const char *const norm_names[] = {NULL, "layernorm", "rmsnorm"};

static const char *const *axis_names(int axis, int *n)
{
    switch (axis) {
    case FMT_AXIS_MLP:
        *n = (int)(sizeof mlp_names / sizeof mlp_names[0]);
        return mlp_names;
    case FMT_AXIS_POSITIONS:
        *n = (int)(sizeof pos_names / sizeof pos_names[0]);
        return pos_names;
    case FMT_AXIS_NORM:
        *n = (int)(sizeof norm_names / sizeof norm_names[0]);
        return norm_names;
    default:
        *n = 0;
        return NULL;
    }
}

const char *fmt_arch_name(int axis, int value)
{
    int n;
    const char *const *names = axis_names(axis, &n);

    return names != NULL && value > 0 && value < n ? names[value] : NULL;
}

int fmt_arch_from_name(int axis, const char *name)
{
    int i, n;
    const char *const *names = axis_names(axis, &n);

    for (i = 1; names != NULL && name != NULL && i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* ---- families --------------------------------------------------------- */

/* Defaults of a family: tied embeddings, MLP, positions, norm, linear
 * biases, dropout. */
typedef struct family {
    const char *name;
    int tied, mlp, positions, norm, bias, dropout;
} family;

#define ON FMT_FLAG_ON
#define OFF FMT_FLAG_OFF
#define GPT_LIKE FMT_MLP_GELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, ON, ON

static const family families[] = {
    /* GPT-2 (Radford et al. 2019), GPT-3 (Brown et al. 2020), BERT
     * (Devlin et al. 2019): tied, GeLU MLP, learned positions, LayerNorm,
     * biases, dropout 0.1 */
    {"gpt2", 1, GPT_LIKE},
    {"gpt3", 1, GPT_LIKE},
    {"bert", 1, GPT_LIKE},
    /* OPT (Zhang et al. 2022, section 2.1; HF OPTConfig
     * activation_function "relu"): GPT's layout with a ReLU MLP, the
     * same two matrices */
    {"opt", 1, FMT_MLP_RELU, FMT_POS_LEARNED, FMT_NORM_LAYERNORM, ON, ON},
    /* GPT-Neo (Black et al. 2021, HF GPTNeoForCausalLM): tied */
    {"gpt-neo", 1, GPT_LIKE},
    /* GPT-NeoX-20B (Black et al. 2022): rotary, untied embed_in and
     * embed_out, no dropout */
    {"gpt-neox", 0, FMT_MLP_GELU, FMT_POS_ROTARY, FMT_NORM_LAYERNORM, ON, OFF},
    /* LLaMA (Touvron et al. 2023, "LLaMA" section 2.2; Llama 2): SwiGLU,
     * rotary, RMSNorm, no biases, no dropout, untied */
    {"llama", 0, FMT_MLP_SWIGLU, FMT_POS_ROTARY, FMT_NORM_RMSNORM, OFF, OFF},
};

#define NFAMILIES (sizeof families / sizeof families[0])

/* Other spellings of a family: the architecture's versions and Hugging
 * Face's config.json model_type ("gpt_neo", "gpt_neox"), which the
 * comparison below covers by ignoring '-' and '_'. */
static const struct {
    const char *alias, *family;
} family_aliases[] = {
    {"llama2", "llama"},
    {"llama3", "llama"},
};

/* Equal ignoring case, '-' and '_' ("GPT_Neo" is "gpt-neo"). */
static int family_name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == '-' || *a == '_')
            a++;
        while (*b == '-' || *b == '_')
            b++;
        if (*a == '\0' || *b == '\0')
            return *a == *b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++;
        b++;
    }
}

/* The family of a name ("" = gpt2), NULL when unknown. */
static const family *find_family(const char *name)
{
    size_t i, j;

    if (name == NULL || name[0] == '\0')
        return &families[0];
    for (i = 0; i < NFAMILIES; i++)
        if (family_name_eq(name, families[i].name))
            return &families[i];
    for (j = 0; j < sizeof family_aliases / sizeof family_aliases[0]; j++)
        if (family_name_eq(name, family_aliases[j].alias))
            for (i = 0; i < NFAMILIES; i++)
                if (strcmp(family_aliases[j].family, families[i].name) == 0)
                    return &families[i];
    return NULL;
}

/* ---- shape and per-kind fields ---------------------------------------- */

/* Model shape as doubles, with every architecture choice resolved. */
typedef struct shape {
    double s, h, a, kv, f, v, d;
    int mlp, positions, norm, bias, dropout;
} shape;

/* LLaMA's FFN size: 2/3 of 4h rounded up to a multiple of 256. */
static long long llama_ffn(long long h)
{
    long long f = (8 * h + 2) / 3;

    return (f + 255) / 256 * 256;
}

static int pick(int given, int dflt)
{
    return given > 0 ? given : dflt;
}

static void shape_of(const fmt_model *m, shape *x)
{
    const family *fam = find_family(m->family);
    int d = m->dtype_bytes > 0 ? m->dtype_bytes : 2;

    if (fam == NULL)
        fam = &families[0];
    x->mlp = pick(m->mlp, fam->mlp);
    x->positions = pick(m->positions, fam->positions);
    x->norm = pick(m->norm, fam->norm);
    x->bias = pick(m->bias, fam->bias);
    x->dropout = pick(m->dropout, fam->dropout);
    x->s = m->seq > 0 ? (double)m->seq : 0.0;
    x->h = m->hidden > 0 ? (double)m->hidden : 0.0;
    x->a = m->heads > 0 ? (double)m->heads : 0.0;
    x->kv = m->kv_heads > 0 ? (double)m->kv_heads : x->a;
    x->v = m->vocab > 0 ? (double)m->vocab : 0.0;
    x->d = (double)d;
    if (m->ffn > 0)
        x->f = (double)m->ffn;
    else if (x->mlp == FMT_MLP_SWIGLU)
        x->f = m->hidden > 0 ? (double)llama_ffn(m->hidden) : 0.0;
    else
        x->f = 4.0 * x->h;
}

/* Parameters of a block, following Megatron-LM's layout (Shoeybi et al.
 * 2019, section 3): QKV and fc1 (gate and up) are column-parallel, their
 * weights and biases sharded; the attention projection and fc2 are
 * row-parallel, their weights sharded and their biases replicated; the
 * norms are replicated.  K and V have kv heads of h/a each (grouped-query
 * attention, Ainslie et al. 2023); a gated MLP has three h x f matrices
 * (SwiGLU, Shazeer 2020; LLaMA). */
static void block_params(const shape *x, double *weights, double *params,
                         double *rep)
{
    double h = x->h, f = x->f;
    double hkv = x->kv == x->a || x->a <= 0.0 ? h : h * x->kv / x->a;
    double mats = x->mlp == FMT_MLP_SWIGLU ? 3.0 : 2.0;
    double norm = x->norm == FMT_NORM_RMSNORM ? h : 2.0 * h;
    double bias_sh = 0.0, bias_rep = 0.0;

    *weights = 2.0 * h * h + 2.0 * h * hkv + mats * h * f;
    if (x->bias == FMT_FLAG_ON) {
        bias_sh = h + 2.0 * hkv + (mats - 1.0) * f;
        bias_rep = 2.0 * h;
    }
    *rep = 2.0 * norm + bias_rep;
    *params = *weights + bias_sh + *rep;
}

static void fill_block(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, a = x->a, f = x->f, d = x->d, r = x->d / 2.0;
    int drop = x->dropout == FMT_FLAG_ON, gated = x->mlp == FMT_MLP_SWIGLU;
    double mlp_sf = gated ? 6.0 : x->mlp == FMT_MLP_RELU ? 2.0 : 4.0;
    double weights;

    block_params(x, &weights, &l->params, &l->params_rep);
    /* 2 FLOPs per weight and token (Narayanan et al. SC'21, eq. 3, whose
     * 24sh^2 is the f = 4h, kv = a case; the gated MLP's third matrix and
     * GQA's narrower K and V enter through weights) plus the score and
     * context GEMMs, 2s^2h each */
    l->fwd_flops = 2.0 * s * weights + 4.0 * s * s * h;
    l->tp_flops_frac = 1.0;
    /* score matrix: GEMM write 2, softmax 4, context read 2, dropout 5;
     * MLP: GeLU or ReLU read + write, or SiLU read + write and product 3 */
    l->traffic = (drop ? 13.0 : 8.0) * a * s * s * r +
                 (gated ? 5.0 : 2.0) * s * f * d;
    /* norms 4, residual adds 6, two dropouts 5 */
    l->traffic_rep = (drop ? 15.0 : 10.0) * s * h * d;
    l->out_bytes = s * h * d;
    /* Korthikanti et al. 2022, section 4: attention 10sh + 2as^2, its
     * dropout 3as^2, two dropout masks 2sh, MLP 2sh + 4sf (gated: 6sf;
     * ReLU: 2sf, its output alone, costmodel/activations.c), norms 4sh;
     * K and V counted at a heads */
    l->act_bytes = ((drop ? 18.0 : 16.0) * s * h +
                    mlp_sf * s * f +
                    (drop ? 5.0 : 2.0) * a * s * s) *
                   r;
    l->act_rep_bytes = (drop ? 10.0 : 8.0) * s * h * r;
    l->tp_comm_bytes = s * h * d; /* per all-reduce (two) */
    l->tp_collectives = 2;
    l->kernels = 40;
}

static void fill_embedding(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, d = x->d;
    int learned = x->positions == FMT_POS_LEARNED;
    int drop = x->dropout == FMT_FLAG_ON;

    /* vocabulary-parallel token table; Megatron-LM replicates the
     * learned position table */
    l->params = learned ? x->v * h + s * h : x->v * h;
    l->params_rep = learned ? s * h : 0.0;
    l->fwd_flops = 0.0;
    l->tp_flops_frac = 1.0;
    l->traffic = s * h * d;
    /* one element-wise pass after the lookup: position add, dropout */
    l->traffic_rep = learned || drop ? 3.0 * s * h * d : 0.0;
    l->out_bytes = s * h * d;
    l->act_bytes = drop ? s * h : 0.0; /* dropout mask */
    l->act_rep_bytes = l->act_bytes;
    l->tp_comm_bytes = s * h * d;
    l->tp_collectives = 1;
    l->kernels = learned || drop ? 6 : 3;
}

static void fill_norm(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, d = x->d;

    l->params = x->norm == FMT_NORM_RMSNORM ? h : 2.0 * h;
    l->params_rep = l->params;
    l->traffic_rep = 2.0 * s * h * d;
    l->out_bytes = s * h * d;
    l->act_bytes = s * h * d;
    l->act_rep_bytes = s * h * d;
    l->kernels = 2;
}

static void fill_head(const shape *x, fmt_layer *l)
{
    double s = x->s, h = x->h, v = x->v, d = x->d;

    l->params = v * h; /* vocabulary-parallel, no bias */
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
    l->params_rep = 0.0;
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
    /* a list that does not split its parameters: all of them sharded,
       as the cost model divides them */
    if (l->params_rep < 0)
        l->params_rep = 0.0;
}

/* ---- the expansion ---------------------------------------------------- */

static void family_list(char *buf, size_t n)
{
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < NFAMILIES; i++)
        fmt_list_add(buf, n, &used, families[i].name);
}

static int check_choices(const fmt_transformer_spec *sp, util_error *err)
{
    const struct {
        const char *field;
        int value, hi;
    } ch[] = {
        {"mlp", sp->mlp, FMT_MLP_RELU},
        {"positions", sp->positions, FMT_POS_ALIBI},
        {"norm", sp->norm, FMT_NORM_RMSNORM},
        {"bias", sp->bias, FMT_FLAG_OFF},
        {"dropout", sp->dropout, FMT_FLAG_OFF},
    };
    char path[64];
    size_t i;

    if (sp->kv_heads < 0 || sp->kv_heads > sp->heads ||
        (sp->kv_heads > 0 && sp->heads % sp->kv_heads != 0))
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.kv_heads",
                              "'kv_heads' must divide 'heads' (%d), got %d",
                              sp->heads, sp->kv_heads);
    for (i = 0; i < sizeof ch / sizeof ch[0]; i++) {
        if (ch[i].value >= 0 && ch[i].value <= ch[i].hi)
            continue;
        snprintf(path, sizeof path, "transformer.%s", ch[i].field);
        return util_error_set(err, UTIL_EFIELD, NULL, path,
                              "'%s' must be between 0 (family default) and "
                              "%d, got %d", ch[i].field, ch[i].hi,
                              ch[i].value);
    }
    return UTIL_OK;
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
    char path[64], list[160];
    size_t i;

    if (find_family(sp->family) == NULL) {
        family_list(list, sizeof list);
        return util_error_set(err, UTIL_EFIELD, NULL, "transformer.family",
                              "unknown family '%s', expected one of %s",
                              sp->family, list);
    }
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
    return check_choices(sp, err);
}

/* The model's shape and resolved architecture from spec (no layers). */
static void resolve(const fmt_transformer_spec *spec, const fmt_model *m,
                    fmt_model *out)
{
    const family *fam = find_family(spec->family);

    memset(out, 0, sizeof *out);
    snprintf(out->family, sizeof out->family, "%s", fam->name);
    if (spec->name[0])
        memcpy(out->name, spec->name, sizeof out->name);
    else if (m->name[0])
        memcpy(out->name, m->name, sizeof out->name);
    else
        memcpy(out->name, out->family, sizeof out->family);
    out->name[sizeof out->name - 1] = '\0';
    out->blocks = spec->blocks;
    out->hidden = spec->hidden;
    out->heads = spec->heads;
    out->kv_heads = spec->kv_heads > 0 ? spec->kv_heads : spec->heads;
    out->seq = spec->seq;
    out->vocab = spec->vocab;
    out->global_batch = m->global_batch;
    out->dtype_bytes = m->dtype_bytes > 0 ? m->dtype_bytes : 2;
    out->bf16 = m->bf16;
    out->mlp = pick(spec->mlp, fam->mlp);
    out->positions = pick(spec->positions, fam->positions);
    out->norm = pick(spec->norm, fam->norm);
    out->bias = pick(spec->bias, fam->bias);
    out->dropout = pick(spec->dropout, fam->dropout);
    out->attention = m->attention;
    out->attn_dropout = m->attn_dropout;
    out->cross_entropy = m->cross_entropy;
    out->grad_buffer = m->grad_buffer;
    out->tf32 = m->tf32;
    out->framework = m->framework;
    out->fw_defaults = m->fw_defaults;
    if (spec->ffn > 0)
        out->ffn = spec->ffn;
    else if (out->mlp == FMT_MLP_SWIGLU)
        out->ffn = (int)llama_ffn(spec->hidden);
    else
        out->ffn = 4 * spec->hidden;
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
    resolve(spec, m, &out);
    tied = spec->tied_embeddings >= 0 ? spec->tied_embeddings
                                      : find_family(out.family)->tied;

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
