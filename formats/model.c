/* formats/model.c: layer kinds and the reader of model.json
 * (docs/inputs.md); the shorthand's expansion is formats/transformer.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "internal.h"

#define MAX_LAYERS 1048576 /* layers in one model */
#define MAX_LAYER_GEMMS 256 /* entries of one layer's "gemms" */
#define MAX_GEMMS 65536     /* "gemms" entries of one model file */

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

void fmt_model_free(fmt_model *m)
{
    if (m == NULL)
        return;
    free(m->layers);
    free(m->gemms);
    memset(m, 0, sizeof *m);
}

double fmt_model_params(const fmt_model *m, double *replicated)
{
    double sum = 0.0, rep = 0.0;
    unsigned char *seen = NULL;
    int i, j, top = 0, dup;

    /* a tied group's tensor is counted at its first layer: a mark per
     * group number (they are at most 1e6, the reader's range), or a
     * search back when the marks cannot be allocated */
    for (i = 0; i < m->nlayers; i++)
        if (m->layers[i].tied_group > top)
            top = m->layers[i].tied_group;
    if (top > 0)
        seen = calloc((size_t)top + 1, 1);
    for (i = 0; i < m->nlayers; i++) {
        int g = m->layers[i].tied_group;
        dup = 0;
        if (g > 0 && seen != NULL) {
            dup = seen[g];
            seen[g] = 1;
        } else if (g > 0) {
            for (j = 0; j < i && !dup; j++)
                dup = m->layers[j].tied_group == g;
        }
        if (!dup) {
            sum += m->layers[i].params;
            rep += m->layers[i].params_rep;
        }
    }
    free(seen);
    if (replicated != NULL)
        *replicated = rep;
    return sum;
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

static const char *const attention_names[] = {NULL, "flash", "eager"};

const char *fmt_attention_name(int attention)
{
    return attention > 0 && attention <= FMT_ATTN_EAGER
               ? attention_names[attention]
               : NULL;
}

int fmt_attention_from_name(const char *name)
{
    int i;

    for (i = 1; name != NULL && i <= FMT_ATTN_EAGER; i++)
        if (strcmp(name, attention_names[i]) == 0)
            return i;
    return -1;
}

/* Optional string parent.key, one of names (NULL-terminated): *idx its
 * index, left as it is when absent; anything else refused with the list. */
static int parse_named(const fmt_read_ctx *cx, const cJSON *obj,
                       const char *parent, const char *key,
                       const char *const *names, int *idx)
{
    const char *name = NULL;
    char path[FMT_PATH_N], list[96];
    size_t used = 0;
    int rc, i, n;

    if ((rc = fmt_str_ref(cx, obj, parent, key, 0, &name)) != UTIL_OK ||
        name == NULL)
        return rc;
    for (n = 0; names[n] != NULL; n++)
        if (strcmp(name, names[n]) == 0) {
            *idx = n;
            return UTIL_OK;
        }
    list[0] = '\0';
    for (i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'",
                                 i == 0 ? "" : i + 1 < n ? ", " : " or ", names[i]);
    util_json_key(path, sizeof path, parent, key);
    return fmt_fail(cx, UTIL_EFIELD, path, "expected %s, got '%s'", list, name);
}

/* An optional string field of training that is one of two names;
 * first + its index in *out (left as it is when absent). */
static int parse_training_choice(const fmt_read_ctx *cx, const cJSON *tr,
                                 const char *key, const char *const names[2],
                                 int first, int *out)
{
    const char *const both[] = {names[0], names[1], NULL};
    int i = -1, rc = parse_named(cx, tr, "training", key, both, &i);

    if (rc == UTIL_OK && i >= 0)
        *out = first + i;
    return rc;
}

/* Optional boolean training.key into *out: FMT_FLAG_ON or FMT_FLAG_OFF,
 * left as it is when absent. */
static int parse_training_flag(const fmt_read_ctx *cx, const cJSON *tr,
                               const char *key, int *out)
{
    const cJSON *v = fmt_field(tr, key);
    char path[FMT_PATH_N];

    if (v == NULL)
        return UTIL_OK;
    if (!cJSON_IsBool(v)) {
        util_json_key(path, sizeof path, "training", key);
        return fmt_fail(cx, UTIL_EFIELD, path,
                        "expected a boolean (true or false), got %s",
                        util_json_type(v));
    }
    *out = cJSON_IsTrue(v) ? FMT_FLAG_ON : FMT_FLAG_OFF;
    return UTIL_OK;
}

/* training.attention ("flash" | "eager"), training.attention_dropout and
 * training.tf32 (booleans), all optional. */
static int parse_attention(const fmt_read_ctx *cx, const cJSON *tr,
                           fmt_model *m)
{
    int rc;

    if ((rc = parse_training_flag(cx, tr, "attention_dropout", &m->attn_dropout)) != UTIL_OK ||
        (rc = parse_training_flag(cx, tr, "tf32", &m->tf32)) != UTIL_OK)
        return rc;
    return parse_training_choice(cx, tr, "attention", attention_names + 1,
                                 FMT_ATTN_FLASH, &m->attention);
}

/* training.cross_entropy and training.grad_buffer (docs/inputs.md). */
static const char *const ce_names[] = {"megatron", "pytorch"};
static const char *const grad_names[] = {"persistent", "set_to_none"};

/* The keys of each object of a model file (docs/inputs.md). */
static const char *const root_keys[] = {"name", "training", "transformer", "layers",
                                        "shape", NULL};
static const char *const training_keys[] = {"global_batch", "precision", "attention",
                                            "attention_dropout", "cross_entropy",
                                            "grad_buffer", "tf32", "framework", NULL};

static const char *const transformer_keys[] = {
    "family", "layers", "hidden", "heads", "kv_heads", "seq", "vocab", "ffn", "mlp",
    "positions", "norm", "bias", "dropout", "tied_embeddings", NULL};
static const char *const shape_keys[] = {"hidden", "heads", "seq", "vocab", "ffn", NULL};
static const char *const layer_keys[] = {
    "name", "kind", "params", "fwd_flops", "out_bytes", "act_bytes", "tp_flops_frac",
    "traffic_bytes", "traffic_rep_bytes", "act_rep_bytes", "tp_comm_bytes",
    "tp_collectives", "kernels", "tied_group", "params_rep", "repeat", "gemms",
    NULL};
static const char *const gemm_keys[] = {"m", "n", "k", "batch", "split", "rhs",
                                        NULL};
static const char *const split_names[] = {"n", "k", "batch", "none", NULL};
static const char *const rhs_names[] = {"weight", "activation", NULL};

/* training.framework (docs/inputs.md, "Frameworks"): the defaults it
 * implies for the fields the file leaves out; m->cross_entropy is -1
 * when the file states none. */
static int parse_framework(const fmt_read_ctx *cx, const cJSON *tr,
                           fmt_model *m)
{
    const char *name = NULL;
    fmt_framework *fw = &m->framework;
    int rc, v;

    if ((rc = fmt_str_ref(cx, tr, "training", "framework", 0, &name)) != UTIL_OK)
        return rc;
    if (name != NULL && (strlen(name) >= FMT_FRAMEWORK_N ||
                         fmt_framework_parse(name, fw) != 0))
        return fmt_fail(cx, UTIL_EFIELD, "training.framework",
                        "expected one of %s, got '%.40s%s'",
                        fmt_framework_accepted(), name,
                        strlen(name) > 40 ? "..." : "");
    if (m->tf32 == 0 && (v = fmt_framework_tf32(fw)) > 0) {
        m->tf32 = v;
        m->fw_defaults |= FMT_FW_SET_TF32;
    }
    if (m->attention == FMT_ATTN_DEFAULT && (v = fmt_framework_attention(fw)) > 0) {
        m->attention = v;
        m->fw_defaults |= FMT_FW_SET_ATTENTION;
    }
    if (m->cross_entropy < 0 && (v = fmt_framework_cross_entropy(fw)) >= 0) {
        m->cross_entropy = v;
        m->fw_defaults |= FMT_FW_SET_CE;
    }
    if (m->cross_entropy < 0)
        m->cross_entropy = FMT_CE_MEGATRON;
    return UTIL_OK;
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
    if ((rc = fmt_keys(cx, tr, "training", training_keys)) != UTIL_OK ||
        (rc = fmt_int_field(cx, tr, "training", "global_batch", FMT_F_POS, 0,
                            &m->global_batch)) != UTIL_OK ||
        (rc = parse_attention(cx, tr, m)) != UTIL_OK ||
        (m->cross_entropy = -1,
         rc = parse_training_choice(cx, tr, "cross_entropy", ce_names,
                                    FMT_CE_MEGATRON, &m->cross_entropy)) != UTIL_OK ||
        (rc = parse_framework(cx, tr, m)) != UTIL_OK ||
        (rc = parse_training_choice(cx, tr, "grad_buffer", grad_names,
                                    FMT_GRADS_PERSISTENT, &m->grad_buffer)) != UTIL_OK ||
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

/* Optional boolean key of the transformer object: *out = yes, no, or
 * absent when missing. */
static int parse_switch(const fmt_read_ctx *cx, const cJSON *tf,
                        const char *key, int yes, int no, int absent,
                        int *out)
{
    const cJSON *v = fmt_field(tf, key);
    char p[FMT_PATH_N];

    if (v == NULL) {
        *out = absent;
        return UTIL_OK;
    }
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? yes : no;
        return UTIL_OK;
    }
    util_json_key(p, sizeof p, "transformer", key);
    return fmt_fail(cx, UTIL_EFIELD, p,
                    "expected a boolean (true or false), got %s",
                    util_json_type(v));
}

/* Optional architecture choice (fmt_arch_from_name's names); 0 when
 * absent. */
static int parse_choice(const fmt_read_ctx *cx, const cJSON *tf,
                        const char *key, int axis, int *out)
{
    const char *name = NULL;
    char p[FMT_PATH_N], list[80];
    size_t used = 0;
    int rc, v;

    *out = 0;
    if ((rc = fmt_str_ref(cx, tf, "transformer", key, 0, &name)) != UTIL_OK ||
        name == NULL)
        return rc;
    if ((*out = fmt_arch_from_name(axis, name)) > 0)
        return UTIL_OK;
    list[0] = '\0';
    for (v = 1; fmt_arch_name(axis, v) != NULL; v++)
        fmt_list_add(list, sizeof list, &used, fmt_arch_name(axis, v));
    util_json_key(p, sizeof p, "transformer", key);
    return fmt_fail(cx, UTIL_EFIELD, p, "expected one of %s, got '%s'", list,
                    name);
}

static int parse_arch(const fmt_read_ctx *cx, const cJSON *tf,
                      fmt_transformer_spec *sp)
{
    int rc;

    if ((rc = fmt_int_field(cx, tf, "transformer", "kv_heads", FMT_F_POS, 0,
                            &sp->kv_heads)) != UTIL_OK ||
        (rc = parse_choice(cx, tf, "mlp", FMT_AXIS_MLP, &sp->mlp)) !=
            UTIL_OK ||
        (rc = parse_choice(cx, tf, "positions", FMT_AXIS_POSITIONS,
                           &sp->positions)) != UTIL_OK ||
        (rc = parse_choice(cx, tf, "norm", FMT_AXIS_NORM, &sp->norm)) !=
            UTIL_OK ||
        (rc = parse_switch(cx, tf, "tied_embeddings", 1, 0, -1,
                           &sp->tied_embeddings)) != UTIL_OK ||
        (rc = parse_switch(cx, tf, "bias", FMT_FLAG_ON, FMT_FLAG_OFF,
                           FMT_FLAG_FAMILY, &sp->bias)) != UTIL_OK)
        return rc;
    return parse_switch(cx, tf, "dropout", FMT_FLAG_ON, FMT_FLAG_OFF,
                        FMT_FLAG_FAMILY, &sp->dropout);
}

static int parse_transformer(const fmt_read_ctx *cx, const cJSON *tf,
                             fmt_model *m)
{
    const char *P = "transformer";
    fmt_transformer_spec spec;
    char name[sizeof m->name];
    int rc, gb = m->global_batch, db = m->dtype_bytes, bf = m->bf16;

    memset(&spec, 0, sizeof spec);
    if (!cJSON_IsObject(tf))
        return fmt_fail(cx, UTIL_EFIELD, P, "expected an object, got %s",
                        util_json_type(tf));
    if ((rc = fmt_keys(cx, tf, P, transformer_keys)) != UTIL_OK ||
        (rc = fmt_str_field(cx, tf, P, "family", FMT_F_NONEMPTY, "gpt2",
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
            UTIL_OK ||
        (rc = parse_arch(cx, tf, &spec)) != UTIL_OK)
        return rc;
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

/* Entries m->gemms holds for a count of used ones: 0 for none, else the
 * least power of two from 32 that holds them. */
static int gemm_cap(int used)
{
    int cap = 32;

    if (used <= 0)
        return 0;
    while (cap < used)
        cap *= 2;
    return cap;
}

/* The "gemms" of a layer entry at path p, appended to m->gemms
 * (docs/inputs.md, "layers[].gemms"): each product's dimensions, how TP
 * splits it and whether B is a weight; their FLOPs may not exceed the
 * layer's fwd_flops (a GEMM stated per micro-batch instead of per sample
 * would). */
static int parse_gemms(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                       fmt_model *m, fmt_layer *l)
{
    const cJSON *arr = NULL, *g;
    char gp[FMT_PATH_N], fp[FMT_PATH_N];
    double flops = 0.0;
    int rc, n, i = 0;

    l->gemm_first = m->ngemms;
    l->gemm_count = 0;
    if ((rc = fmt_sub_field(cx, e, p, "gemms", 0, FMT_K_ARR, &arr)) != UTIL_OK ||
        arr == NULL)
        return rc;
    util_json_key(gp, sizeof gp, p, "gemms");
    n = cJSON_GetArraySize(arr);
    if (n > MAX_LAYER_GEMMS)
        return fmt_fail(cx, UTIL_EFIELD, gp,
                        "expected at most %d GEMMs in a layer, got %d",
                        MAX_LAYER_GEMMS, n);
    if (n > MAX_GEMMS - m->ngemms)
        return fmt_fail(cx, UTIL_EFIELD, gp,
                        "expected at most %d GEMMs in the model file, got more",
                        MAX_GEMMS);
    /* capacity doubles (a power of two from 32, gemm_cap), so that many
     * layers of few GEMMs cost linear copying */
    if (n > 0 && m->ngemms + n > gemm_cap(m->ngemms)) {
        fmt_gemm *grown = realloc(m->gemms, (size_t)gemm_cap(m->ngemms + n) * sizeof *grown);
        if (grown == NULL)
            return fmt_fail(cx, UTIL_ENOMEM, gp, "out of memory");
        m->gemms = grown;
    }
    cJSON_ArrayForEach(g, arr)
    {
        fmt_gemm *x = &m->gemms[m->ngemms + i];
        int rhs;

        util_json_index(fp, sizeof fp, gp, i);
        memset(x, 0, sizeof *x);
        if (!cJSON_IsObject(g))
            return fmt_fail(cx, UTIL_EFIELD, fp, "expected an object, got %s",
                            util_json_type(g));
        if ((rc = fmt_keys(cx, g, fp, gemm_keys)) != UTIL_OK ||
            (rc = fmt_num_field(cx, g, fp, "m", FMT_F_REQ | FMT_F_POS, 0,
                                &x->m)) != UTIL_OK ||
            (rc = fmt_num_field(cx, g, fp, "n", FMT_F_REQ | FMT_F_POS, 0,
                                &x->n)) != UTIL_OK ||
            (rc = fmt_num_field(cx, g, fp, "k", FMT_F_REQ | FMT_F_POS, 0,
                                &x->k)) != UTIL_OK ||
            (rc = fmt_num_field(cx, g, fp, "batch", FMT_F_POS, 1,
                                &x->batch)) != UTIL_OK ||
            (x->split = FMT_SPLIT_N,
             rc = parse_named(cx, g, fp, "split", split_names, &x->split)) != UTIL_OK ||
            (rhs = 0, rc = parse_named(cx, g, fp, "rhs", rhs_names, &rhs)) != UTIL_OK)
            return rc;
        x->rhs_weight = rhs == 0;
        flops += 2.0 * x->m * x->n * x->k * x->batch;
        i++;
    }
    /* 1e-6 relative slack for a fwd_flops rounded when written */
    if (flops > l->fwd_flops * (1.0 + 1e-6))
        return fmt_fail(cx, UTIL_EFIELD, gp,
                        "the GEMMs' 2*m*n*k*batch sum to %.6g FLOPs per sample, "
                        "more than the layer's 'fwd_flops' (%.6g): state each "
                        "GEMM per sample", flops, l->fwd_flops);
    l->gemm_count = n;
    m->ngemms += n;
    return UTIL_OK;
}

/* One entry of "layers"; optional fields absent are -1 for defaults. */
static int parse_layer(const fmt_read_ctx *cx, const cJSON *e, const char *p,
                       fmt_model *m, fmt_layer *l, int *repeat)
{
    const char *kind;
    char fp[FMT_PATH_N];
    int rc;

    memset(l, 0, sizeof *l);
    if (!cJSON_IsObject(e))
        return fmt_fail(cx, UTIL_EFIELD, p, "expected an object, got %s",
                        util_json_type(e));
    if ((rc = fmt_keys(cx, e, p, layer_keys)) != UTIL_OK ||
        (rc = fmt_str_field(cx, e, p, "name", FMT_F_REQ | FMT_F_NONEMPTY, "",
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
        (rc = fmt_num_field(cx, e, p, "params_rep", FMT_F_NONNEG, -1,
                            &l->params_rep)) != UTIL_OK ||
        (rc = fmt_int_field(cx, e, p, "repeat", FMT_F_POS, 1, repeat)) !=
            UTIL_OK ||
        (rc = parse_gemms(cx, e, p, m, l)) != UTIL_OK)
        return rc;
    if (l->params_rep > l->params) {
        util_json_key(fp, sizeof fp, p, "params_rep");
        return fmt_fail(cx, UTIL_EFIELD, fp,
                        "expected at most the layer's 'params' (%.15g), got "
                        "%.15g", l->params, l->params_rep);
    }
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
    if (sh != NULL && ((rc = fmt_keys(cx, sh, "shape", shape_keys)) != UTIL_OK ||
                       (rc = fmt_int_field(cx, sh, "shape", "hidden", FMT_F_POS,
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
        if ((rc = parse_layer(cx, e, p, m, &l, &repeat)) != UTIL_OK)
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
        (rc = fmt_keys(&cx, root, "", root_keys)) != UTIL_OK ||
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

static int parse_model_text(const char *text, const char *file,
                            const void *arg, void *out, util_error *err)
{
    (void)arg;
    return fmt_parse_model(text, file, out, err);
}

int fmt_load_model(const char *path, fmt_model *out, util_error *err)
{
    return fmt_load_file(path, parse_model_text, NULL, out, sizeof *out, err);
}
