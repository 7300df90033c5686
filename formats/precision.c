/* formats/precision.c: training precision: its names, whether a device
 * supports it, a model's precision and the change of a loaded model's
 * precision; the names of the recomputation levels. */
#include <string.h>

#include "formats.h"

static const char *const prec_names[] = {"fp16", "bf16", "fp32"};

const char *fmt_precision_name(int prec)
{
    return prec >= 0 && prec < 3 ? prec_names[prec] : NULL;
}

int fmt_precision_from_name(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < 3; i++)
        if (strcmp(name, prec_names[i]) == 0)
            return i;
    return -1;
}

int fmt_device_supports(const fmt_device_type *dt, int prec)
{
    if (dt == NULL)
        return 0;
    switch (prec) {
    case FMT_PREC_FP16:
        return dt->flops_fp16 > 0.0;
    case FMT_PREC_BF16:
        return dt->flops_bf16 > 0.0;
    case FMT_PREC_FP32: /* every GPU computes in fp32 */
        return 1;
    default:
        return 0;
    }
}

int fmt_model_precision(const fmt_model *m)
{
    if (m->dtype_bytes >= 4)
        return FMT_PREC_FP32;
    return m->bf16 ? FMT_PREC_BF16 : FMT_PREC_FP16;
}

int fmt_model_set_precision(fmt_model *m, int prec, util_error *err)
{
    double old_d = m->dtype_bytes > 0 ? (double)m->dtype_bytes : 2.0;
    double new_d = prec == FMT_PREC_FP32 ? 4.0 : 2.0, r = new_d / old_d;
    double logits = (double)m->seq * (double)m->vocab;
    int i;

    if (fmt_precision_name(prec) == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, "precision",
                              "expected fp16, bf16 or fp32, got %d", prec);
    for (i = 0; i < m->nlayers && r != 1.0; i++) {
        fmt_layer *l = &m->layers[i];
        /* the head's fp32 loss copies (8 bytes per logit) keep their size */
        double fixed = l->kind == FMT_KIND_HEAD && logits > 0.0 &&
                               l->act_bytes >= 8.0 * logits
                           ? 8.0 * logits
                           : 0.0;
        l->act_bytes = (l->act_bytes - fixed) * r + fixed;
        l->act_rep_bytes *= r;
        l->traffic *= r;
        l->traffic_rep *= r;
        if (l->kind != FMT_KIND_HEAD) { /* the head sends and reduces fp32 */
            l->out_bytes *= r;
            l->tp_comm_bytes *= r;
        } else if (l->out_bytes > 4.0) { /* logits, not the fp32 loss */
            l->out_bytes *= r;
        }
    }
    m->dtype_bytes = (int)new_d;
    m->bf16 = prec == FMT_PREC_BF16;
    return UTIL_OK;
}

const char *fmt_recompute_name(int r)
{
    static const char *const names[] = {"none", "full", "selective"};

    return r >= 0 && r <= FMT_RECOMPUTE_SELECTIVE ? names[r] : NULL;
}

int fmt_recompute_from_name(const char *name)
{
    int r;

    for (r = 0; name != NULL && r <= FMT_RECOMPUTE_SELECTIVE; r++)
        if (strcmp(name, fmt_recompute_name(r)) == 0)
            return r;
    return -1;
}

const char *fmt_offload_name(int o)
{
    static const char *const names[] = {"none", "optimizer"};

    return o >= 0 && o <= FMT_OFFLOAD_OPTIMIZER ? names[o] : NULL;
}

int fmt_offload_from_name(const char *name)
{
    int o;

    for (o = 0; name != NULL && o <= FMT_OFFLOAD_OPTIMIZER; o++)
        if (strcmp(name, fmt_offload_name(o)) == 0)
            return o;
    return -1;
}
