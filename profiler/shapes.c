/* profiler/shapes.c: the kernels of one tensor-parallel layer shard
 * (Megatron-LM's split, Shoeybi et al. 2019: QKV and MLP-up split by
 * columns, projection and MLP-down by rows, vocabulary-parallel embedding
 * and LM head) with their FLOPs and memory traffic. */
#include <stdio.h>
#include <string.h>

#include "prof.h"

static const char *const op_names[PROF_NOPS] = {
    "gemm", "layernorm", "rmsnorm", "softmax", "gelu", "swiglu", "add",
    "embedding", "cross-entropy", "adam", "relu"};

const char *prof_op_name(int op)
{
    if (op < 0 || op >= PROF_NOPS)
        return NULL;
    return op_names[op];
}

int prof_kind_measurable(int kind)
{
    return kind == FMT_KIND_EMBEDDING || kind == FMT_KIND_TRANSFORMER ||
           kind == FMT_KIND_NORM || kind == FMT_KIND_HEAD;
}

static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a, y = *b;
        if (x >= 'A' && x <= 'Z')
            x = (char)(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = (char)(y - 'A' + 'a');
        if (x != y)
            return 0;
    }
    return *a == *b;
}

/* LLaMA's FFN size: 8h/3 rounded up to a multiple of 256 (as the model
 * expansion, docs/model-formulas.md). */
static int gated_ffn(int h)
{
    long long f = (8LL * h + 2) / 3;
    return (int)((f + 255) / 256 * 256);
}

int prof_shape_of(const fmt_model *m, int kind, int tp, int mbs,
                  int dtype_bytes, prof_shape *out, util_error *err)
{
    prof_shape s;

    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    if (!prof_kind_measurable(kind))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "layer kind '%s' cannot be synthesised "
                              "(expected embedding, transformer, norm or head)",
                              fmt_kind_name(kind) ? fmt_kind_name(kind) : "?");
    if (tp < 1 || mbs < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected tp >= 1 and mbs >= 1, got tp %d, mbs %d",
                              tp, mbs);
    if (m->hidden <= 0 || m->heads <= 0 || m->seq <= 0 || m->vocab <= 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "model '%s' has no transformer shape (hidden, "
                              "heads, seq and vocab are needed)", m->name);
    s.kind = kind;
    s.tp = tp;
    s.mbs = mbs;
    s.seq = m->seq;
    s.hidden = m->hidden;
    s.heads = m->heads;
    s.vocab = m->vocab;
    /* the model's MLP and norm, resolved from its family when the model
     * file does not state them (a layer list: LLaMA's by name) */
    s.gated = m->mlp == FMT_MLP_SWIGLU ||
              (m->mlp == FMT_MLP_FAMILY && same_name(m->family, "llama"));
    s.relu = m->mlp == FMT_MLP_RELU;
    s.rms = m->norm == FMT_NORM_RMSNORM ||
            (m->norm == FMT_NORM_FAMILY && same_name(m->family, "llama"));
    s.ffn = m->ffn > 0 ? m->ffn : (s.gated ? gated_ffn(m->hidden) : 4 * m->hidden);
    s.dtype_bytes = dtype_bytes > 0 ? dtype_bytes
                                    : (m->dtype_bytes > 0 ? m->dtype_bytes : 2);
    if (s.dtype_bytes != 2 && s.dtype_bytes != 4)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected 2 or 4 bytes per element, got %d",
                              s.dtype_bytes);
    if (s.hidden % s.heads != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "hidden size %d is not divisible by %d heads",
                              s.hidden, s.heads);
    if (s.heads % tp != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "tp %d does not divide the model's %d attention heads",
                              tp, s.heads);
    if (s.ffn % tp != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "tp %d does not divide the FFN size %d", tp, s.ffn);
    *out = s;
    return UTIL_OK;
}

/* ---- building the kernel list ---------------------------------------- */

typedef struct builder {
    prof_layer_work *w;
    double e;               /* bytes per element */
    int overflow;
} builder;

static prof_kernel *add(builder *b, const char *name, int op, int bwd)
{
    prof_kernel *k;

    if (b->w->nk >= PROF_MAX_KERNELS) {
        b->overflow = 1;
        return NULL;
    }
    k = &b->w->k[b->w->nk++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->op = op;
    k->bwd = bwd;
    k->batch = 1;
    return k;
}

/* C (m x n) = op(A) op(B), batch products: 2mnk FLOPs each, A, B read
 * and C written once. */
static void gemm(builder *b, const char *name, int bwd, int ta, int tb,
                 long long m, long long n, long long k, long long batch)
{
    prof_kernel *x = add(b, name, PROF_OP_GEMM, bwd);

    if (!x)
        return;
    x->transa = ta;
    x->transb = tb;
    x->m = m;
    x->n = n;
    x->k = k;
    x->batch = batch;
    x->flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
    x->bytes = b->e * ((double)m * (double)k + (double)k * (double)n +
                       (double)m * (double)n) * (double)batch;
}

/* A linear layer Y (T x N) = X (T x K) W (K x N) in column-major terms:
 * forward C (N x T) = W (N x K) X (K x T); the backward pass computes the
 * input gradient (K x T) = W^T dY and the weight gradient (N x K) =
 * dY X^T. */
static void linear_fwd(builder *b, const char *name, long long T, long long K,
                       long long N)
{
    gemm(b, name, 0, 0, 0, N, T, K, 1);
}

static void linear_bwd(builder *b, const char *name, long long T, long long K,
                       long long N)
{
    char buf[40];

    snprintf(buf, sizeof buf, "%s.dgrad", name);
    gemm(b, buf, 1, 1, 0, K, T, N, 1);
    snprintf(buf, sizeof buf, "%s.wgrad", name);
    gemm(b, buf, 1, 0, 1, N, K, T, 1);
}

/* Element-wise or row-wise op: rows x cols elements, `fpe` FLOPs and
 * `bpe` bytes per element (plus `extra` bytes). */
static prof_kernel *elem(builder *b, const char *name, int op, int bwd,
                         long long rows, long long cols, double fpe,
                         double bpe, double extra)
{
    prof_kernel *x = add(b, name, op, bwd);

    if (!x)
        return NULL;
    x->rows = rows;
    x->cols = cols;
    x->flops = fpe * (double)rows * (double)cols;
    x->bytes = bpe * (double)rows * (double)cols + extra;
    return x;
}

static void block(builder *b, const prof_shape *s)
{
    const double e = b->e;
    const long long T = (long long)s->mbs * s->seq, h = s->hidden,
                    sq = s->seq, d = s->hidden / s->heads,
                    ah = s->heads / s->tp, hl = d * ah, ft = s->ffn / s->tp,
                    bh = (long long)s->mbs * ah;
    const int norm = s->rms ? PROF_OP_RMSNORM : PROF_OP_LAYERNORM;
    const double nf = s->rms ? 4.0 : 7.0; /* FLOPs per element of a norm */
    const long long up = s->gated ? 2 * ft : ft;

    /* forward */
    elem(b, "norm1", norm, 0, T, h, nf, 2.0 * e, 2.0 * (double)h * e);
    linear_fwd(b, "qkv", T, h, 3 * hl);
    /* scores S (s x s) = Q K^T per (sample, head): column-major S^T */
    gemm(b, "attn_scores", 0, 1, 0, sq, sq, d, bh);
    elem(b, "softmax", PROF_OP_SOFTMAX, 0, bh * sq, sq, 5.0, 2.0 * e, 0.0);
    /* context O (s x d) = P V */
    gemm(b, "attn_context", 0, 0, 0, d, sq, sq, bh);
    linear_fwd(b, "proj", T, hl, h);
    elem(b, "residual1", PROF_OP_ADD, 0, T, h, 1.0, 3.0 * e, 0.0);
    elem(b, "norm2", norm, 0, T, h, nf, 2.0 * e, 2.0 * (double)h * e);
    linear_fwd(b, s->gated ? "gate_up" : "fc1", T, h, up);
    if (s->gated)
        elem(b, "swiglu", PROF_OP_SWIGLU, 0, T, ft, 6.0, 3.0 * e, 0.0);
    else if (s->relu) /* max(x, 0): read x, write y */
        elem(b, "relu", PROF_OP_RELU, 0, T, ft, 1.0, 2.0 * e, 0.0);
    else
        elem(b, "gelu", PROF_OP_GELU, 0, T, ft, 8.0, 2.0 * e, 0.0);
    linear_fwd(b, "fc2", T, ft, h);
    elem(b, "residual2", PROF_OP_ADD, 0, T, h, 1.0, 3.0 * e, 0.0);

    /* backward, in reverse; the residual adds sum the two gradient
     * branches where they meet (after each norm's backward) */
    linear_bwd(b, "fc2", T, ft, h);
    if (s->gated)
        elem(b, "swiglu.bwd", PROF_OP_SWIGLU, 1, T, ft, 10.0, 5.0 * e, 0.0);
    else if (s->relu) /* dy where y > 0: read y and dy, write dx */
        elem(b, "relu.bwd", PROF_OP_RELU, 1, T, ft, 1.0, 3.0 * e, 0.0);
    else
        elem(b, "gelu.bwd", PROF_OP_GELU, 1, T, ft, 12.0, 3.0 * e, 0.0);
    linear_bwd(b, s->gated ? "gate_up" : "fc1", T, h, up);
    elem(b, "norm2.bwd", norm, 1, T, h, 2.0 * nf, 3.0 * e, 4.0 * (double)h * e);
    elem(b, "residual2.bwd", PROF_OP_ADD, 1, T, h, 1.0, 3.0 * e, 0.0);
    linear_bwd(b, "proj", T, hl, h);
    /* dP = dO V^T, dV = P^T dO */
    gemm(b, "attn_context.dgrad", 1, 1, 0, sq, sq, d, bh);
    gemm(b, "attn_context.wgrad", 1, 0, 1, d, sq, sq, bh);
    elem(b, "softmax.bwd", PROF_OP_SOFTMAX, 1, bh * sq, sq, 4.0, 3.0 * e, 0.0);
    /* dQ = dS K, dK = dS^T Q */
    gemm(b, "attn_scores.dgrad", 1, 0, 0, d, sq, sq, bh);
    gemm(b, "attn_scores.wgrad", 1, 0, 1, d, sq, sq, bh);
    linear_bwd(b, "qkv", T, h, 3 * hl);
    elem(b, "norm1.bwd", norm, 1, T, h, 2.0 * nf, 3.0 * e, 4.0 * (double)h * e);
    elem(b, "residual1.bwd", PROF_OP_ADD, 1, T, h, 1.0, 3.0 * e, 0.0);
}

int prof_layer_work_of(const prof_shape *s, prof_layer_work *out,
                       util_error *err)
{
    builder b;
    long long T, h, vt;
    int i;
    prof_kernel *x;

    memset(out, 0, sizeof *out);
    if (s->tp < 1 || s->mbs < 1 || s->seq < 1 || s->hidden < 1 ||
        s->heads < 1 || s->vocab < 1 || s->ffn < 1 ||
        s->hidden % s->heads != 0 || s->heads % s->tp != 0 ||
        s->ffn % s->tp != 0 || (s->dtype_bytes != 2 && s->dtype_bytes != 4))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "invalid layer shape (use prof_shape_of)");
    out->shape = *s;
    b.w = out;
    b.e = (double)s->dtype_bytes;
    b.overflow = 0;
    T = (long long)s->mbs * s->seq;
    h = s->hidden;
    vt = (s->vocab + s->tp - 1) / s->tp; /* vocabulary shard, padded */

    switch (s->kind) {
    case FMT_KIND_TRANSFORMER:
        block(&b, s);
        break;
    case FMT_KIND_EMBEDDING:
        /* each shard looks up every token in its part of the table */
        x = elem(&b, "embed", PROF_OP_EMBED, 0, T, h, 0.0, 2.0 * b.e, 0.0);
        if (x)
            x->table_rows = vt;
        if (!s->gated) /* learned positions */
            elem(&b, "position_add", PROF_OP_ADD, 0, T, h, 1.0, 3.0 * b.e, 0.0);
        x = elem(&b, "embed.bwd", PROF_OP_EMBED, 1, T, h, 1.0, 3.0 * b.e, 0.0);
        if (x)
            x->table_rows = vt;
        break;
    case FMT_KIND_NORM:
        elem(&b, "norm", s->gated ? PROF_OP_RMSNORM : PROF_OP_LAYERNORM, 0, T,
             h, s->gated ? 4.0 : 7.0, 2.0 * b.e, 2.0 * (double)h * b.e);
        elem(&b, "norm.bwd", s->gated ? PROF_OP_RMSNORM : PROF_OP_LAYERNORM, 1,
             T, h, s->gated ? 8.0 : 14.0, 3.0 * b.e, 4.0 * (double)h * b.e);
        break;
    case FMT_KIND_HEAD:
        linear_fwd(&b, "logits", T, h, vt);
        /* softmax and loss of the logits, fp32 probabilities kept */
        elem(&b, "cross_entropy", PROF_OP_XENT, 0, T, vt, 5.0, b.e + 4.0, 0.0);
        elem(&b, "cross_entropy.bwd", PROF_OP_XENT, 1, T, vt, 2.0, 4.0 + b.e,
             0.0);
        linear_bwd(&b, "logits", T, h, vt);
        break;
    default:
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "layer kind %d cannot be synthesised", s->kind);
    }
    if (b.overflow) {
        memset(out, 0, sizeof *out);
        return util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                              "more than %d kernels in one layer",
                              PROF_MAX_KERNELS);
    }
    for (i = 0; i < out->nk; i++) {
        if (out->k[i].bwd) {
            out->bwd_flops += out->k[i].flops;
            out->bwd_bytes += out->k[i].bytes;
        } else {
            out->fwd_flops += out->k[i].flops;
            out->fwd_bytes += out->k[i].bytes;
        }
    }
    return UTIL_OK;
}
