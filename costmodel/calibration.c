/* costmodel/calibration.c: the calibration constants that `planner
 * calibrate` fits to measured runs (docs/calibration.md) and the hooks
 * through which the cost model applies them.  Each constant enters the
 * iteration time linearly, as a multiplier of a time or an added time. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "costmodel.h"
#include "internal.h"

const fmt_calibration *cost_calibration_of(const cost_params *p,
                                            const fmt_profile *prof)
{
    if (p != NULL && p->calib != NULL)
        return p->calib;
    return prof != NULL ? prof->calib : NULL;
}

double cost_calibration_eff(const cost_params *p, int cls)
{
    const fmt_calibration *cal = p->calib;

    if (cal != NULL && cls >= 0 && cls < FMT_LINK_NCLASSES && cal->bw_frac[cls] > 0.0)
        return cal->bw_frac[cls];
    return cls == FMT_LINK_INTRA ? p->intra_eff : p->net_eff;
}

double cost_link_eff(const cost_params *p, int cls, double bw)
{
    const fmt_calibration *cal = p->calib;

    if (cal != NULL && cls >= 0 && cls < FMT_LINK_NCLASSES && cal->bw_frac[cls] > 0.0)
        return cal->bw_frac[cls];
    /* NVLink / NVSwitch: faster than any PCIe x16 link (PCIe 5.0: 63 GB/s
     * per direction); NCCL's all-reduce reaches nvlink_eff of it */
    if (cls == FMT_LINK_INTRA && bw > COST_PCIE_MAX_BW)
        return p->nvlink_eff;
    return cost_calibration_eff(p, cls);
}

/* Compute time at micro-batch b with efficiency eff(b) = e_inf b / (b +
 * b_half): t(b) = (b + b_half) w / e_inf = s (b w) + s b_half w, with s =
 * compute_scale the profile's per-sample time multiplier.  Under TP every
 * layer with collectives pays tp_fixed per micro-batch (synchronisation
 * and launch of the collectives beyond their bandwidth and latency), half
 * in each pass: the backward runs as many collectives as the forward. */
void cost_calibration_layer(const fmt_calibration *cal,
                            const fmt_device_type *dt, const fmt_layer *l,
                            int tp, int mbs, double work_fwd, double work_ratio,
                            double comm, double *fwd, double *bwd)
{
    int t;
    double extra = 0.0, ratio, base;

    if (cal == NULL)
        return;
    base = *fwd - 0.5 * comm;
    ratio = work_ratio > 0.0 ? work_ratio
            : base > 0.0     ? (*bwd - 0.5 * comm) / base
                             : 2.0;
    if (!(ratio >= 0.0))
        ratio = 2.0;
    t = fmt_calibration_type(cal, dt->name);
    if (t >= 0 && work_fwd > 0.0 && mbs > 0)
        extra = (cal->compute_scale[t] - 1.0) * work_fwd +
                cal->compute_scale[t] * cal->mbs_half[t] * work_fwd / (double)mbs;
    *fwd += extra;
    *bwd += ratio * extra;
    if (tp > 1 && l->tp_collectives > 0) { /* each pass runs the collectives */
        *fwd += 0.5 * cal->tp_fixed;
        *bwd += 0.5 * cal->tp_fixed;
    }
    if (*fwd < 0.0)
        *fwd = 0.0;
    if (*bwd < 0.0)
        *bwd = 0.0;
}
