/* costmodel/params.c: the cost-model parameters: their defaults, and
 * setting and reading them by name (planner --param, docs/cli.md). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "costmodel.h"

void cost_params_init(cost_params *p)
{
    memset(p, 0, sizeof *p);
    p->compute_eff = 0.5;
    p->memory_eff = 0.7;
    p->kernel_overhead = 10e-6;
    p->net_eff = 0.5;
    p->intra_eff = 1.0;
    p->bwd_ratio = 2.0;
    p->bwd_traffic = 1.5;
    /* Adam in fp32: weight, gradient, m, v read (16), weight, m, v
     * written (12), the gradient norm read (4) */
    p->optimizer_bytes = 32.0;
    p->schedule = FMT_SCHED_1F1B;
    p->state_bytes = 0.0; /* from the precision (costmodel/memory.c) */
    p->zero_stage = 0;
    p->recompute = 0;
    p->mem_reserve = -1.0; /* derived: costmodel/runtime.c */
    p->gemm_eff = 0.0; /* per device generation (costmodel/kernels.c) */
    p->attention = -1; /* the model's training.attention */
    p->tf32 = -1; /* the model's training.tf32 (cost_tf32) */
    p->sp = 0;
    p->overlap_grad_reduce = 0;
    p->dp_bucket = 40e6;
    p->p2p_scatter = 1;
    p->grad_accum_fusion = 1;
    /* nccl-tests all-reduce on DGX A100: bus bandwidth about 230-240 GB/s
     * of NVLink 3's 300 GB/s per direction */
    p->nvlink_eff = 0.78;
    p->overlap_p2p = 1; /* AMP eq. 5: steady-state P2P behind compute */
    p->nccl_cumem = 1;  /* NCCL 2.19 and later (costmodel/runtime.c) */
    p->offload = FMT_OFFLOAD_NONE;
    p->launch_mode = -1; /* the model's framework (cost_launch_mode) */
}

int cost_launch_mode(const fmt_model *m, const cost_params *p)
{
    if (p != NULL && p->launch_mode >= 0)
        return p->launch_mode;
    /* enum fmt_launch has the values of enum cost_launch */
    return m != NULL ? fmt_framework_launch(&m->framework) : -1;
}

/* Megatron-LM's mixed-precision step (optimizer/optimizer.py,
 * Float16OptimizerWithFloat16Params, apex multi_tensor_adam), bytes per
 * parameter read + written: copy the 16-bit gradient into the fp32 main
 * gradient 2 + 4, unscale it and check for inf/nan in place 4 + 4, its
 * norm for clipping 4, Adam over the fp32 weight, gradient, m and v 16 +
 * 12, the fp32 weight back to 16 bits 4 + 2, zero the 16-bit gradient
 * for the next iteration 2: 54 in fp16.  bf16 accumulates its gradients
 * in fp32 and scales no loss: norm 4, Adam 28, copy back 6, zero 4: 42.
 * fp32: norm, Adam and zero, 36. */
double cost_optimizer_bytes(const fmt_model *m, const cost_params *p)
{
    if (p->optimizer_bytes >= 0.0)
        return p->optimizer_bytes;
    if (m->dtype_bytes >= 4)
        return 4.0 + 28.0 + 4.0;
    if (m->bf16)
        return 4.0 + 28.0 + 6.0 + 4.0;
    return 6.0 + 8.0 + 4.0 + 28.0 + 6.0 + 2.0;
}

/* Settable fields: name, offset, is-integer, range. */
typedef struct param_field {
    const char *name;
    size_t off;
    int integer;
    double lo, hi;
} param_field;

#define PF(n, i, lo, hi) {#n, offsetof(cost_params, n), i, lo, hi}
static const param_field param_fields[] = {
    PF(compute_eff, 0, 1e-6, 1.0),   PF(memory_eff, 0, 1e-6, 1.0),
    PF(kernel_overhead, 0, 0.0, 1.0), PF(net_eff, 0, 1e-6, 1.0),
    PF(intra_eff, 0, 1e-6, 1.0),     PF(bwd_ratio, 0, 0.0, 100.0),
    PF(bwd_traffic, 0, 0.0, 100.0),
    PF(optimizer_bytes, 0, -1.0, 1e4), PF(schedule, 1, 0, 1),
    PF(state_bytes, 0, 0.0, 1e3),    PF(zero_stage, 1, 0, 3),
    PF(recompute, 1, 0, 2),          PF(mem_reserve, 0, -1.0, 1e15),
    PF(fidelity, 1, 0, 1),           PF(overlap_dp, 1, 0, 1),
    PF(frozen_layers, 1, 0, 1e9),    PF(gemm_eff, 0, 0.0, 1.0),
    PF(attention, 1, -1, 2),          PF(tf32, 1, -1, 1),
    PF(sp, 1, 0, 1),                 PF(overlap_grad_reduce, 1, 0, 1),
    PF(dp_bucket, 0, 0.0, 1e15),     PF(p2p_scatter, 1, 0, 1),
    PF(grad_accum_fusion, 1, 0, 1),  PF(nvlink_eff, 0, 1e-6, 1.0),
    PF(overlap_p2p, 1, 0, 1),        PF(nccl_cumem, 1, 0, 1),
    PF(launch_mode, 1, -1, 2),
};
#undef PF

const char *cost_params_name(int i)
{
    if (i < 0 || (size_t)i >= sizeof param_fields / sizeof param_fields[0])
        return NULL;
    return param_fields[i].name;
}

int cost_params_set(cost_params *p, const char *name, double value,
                    util_error *err)
{
    size_t i;

    for (i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
        const param_field *f = &param_fields[i];
        char *base = (char *)p + f->off;
        if (strcmp(f->name, name) != 0)
            continue;
        if (!(value >= f->lo && value <= f->hi) ||
            (f->integer && value != floor(value))) {
            char lo[UTIL_NUM_N], hi[UTIL_NUM_N], v[UTIL_NUM_N];
            return util_error_set(err, UTIL_EINVAL, NULL, name,
                                  "expected %s in %s..%s, got %s",
                                  f->integer ? "an integer" : "a number",
                                  util_num_text(f->lo, lo, sizeof lo),
                                  util_num_text(f->hi, hi, sizeof hi),
                                  util_num_text(value, v, sizeof v));
        }
        if (f->integer)
            *(int *)(void *)base = (int)value;
        else
            *(double *)(void *)base = value;
        return UTIL_OK;
    }
    return util_error_set(err, UTIL_EINVAL, NULL, name,
                          "unknown cost-model parameter '%s'", name);
}

int cost_params_get(const cost_params *p, const char *name, double *value)
{
    size_t i;

    for (i = 0; i < sizeof param_fields / sizeof param_fields[0]; i++) {
        const param_field *f = &param_fields[i];
        const char *base = (const char *)p + f->off;
        if (strcmp(f->name, name) != 0)
            continue;
        if (f->integer)
            *value = (double)*(const int *)(const void *)base;
        else
            *value = *(const double *)(const void *)base;
        return UTIL_OK;
    }
    return UTIL_ENOTFOUND;
}

int cost_strategy_recompute(const cost_params *p, const fmt_strategy *s)
{
    if (s != NULL && s->recompute >= 0)
        return s->recompute;
    return p != NULL ? p->recompute : FMT_RECOMPUTE_NONE;
}

int cost_strategy_zero(const cost_params *p, const fmt_strategy *s)
{
    if (s != NULL && s->zero >= 0)
        return s->zero;
    return p != NULL ? p->zero_stage : 0;
}

int cost_strategy_offload(const cost_params *p, const fmt_strategy *s)
{
    if (s != NULL && s->offload >= 0)
        return s->offload;
    return p != NULL ? p->offload : FMT_OFFLOAD_NONE;
}

int cost_strategy_overlap(const cost_params *p, const fmt_strategy *s,
                          int which)
{
    cost_params dflt;
    int v = -1;

    if (p == NULL) {
        cost_params_init(&dflt);
        p = &dflt;
    }
    switch (which) {
    case COST_OVERLAP_GRAD:
        v = s != NULL && s->overlap_grad >= 0 ? s->overlap_grad
                                              : p->overlap_grad_reduce;
        break;
    case COST_OVERLAP_PARAM:
        v = s != NULL && s->overlap_param >= 0 ? s->overlap_param : 0;
        if (s != NULL && (cost_strategy_zero(p, s) < 1 || s->dp <= 1))
            v = 0;
        break;
    case COST_OVERLAP_TP:
        v = s != NULL && s->overlap_tp >= 0 ? s->overlap_tp : 0;
        if (s != NULL && (s->tp <= 1 || s->sp != 1))
            v = 0;
        break;
    case COST_OVERLAP_P2P:
        v = s != NULL && s->overlap_p2p >= 0 ? s->overlap_p2p : p->overlap_p2p;
        break;
    default:
        v = 0;
    }
    return v != 0;
}
