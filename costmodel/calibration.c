/* costmodel/calibration.c: the calibration constants that `planner
 * calibrate` fits to measured runs (docs/calibration.md) and the hooks
 * through which the cost model applies them.  Each constant enters the
 * iteration time linearly, as a multiplier of a time or an added time. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cost.h"

static const char *const class_names[COST_LINK_NCLASSES] = {
    "intra-node", "inter-node", "cross-region"};

const char *cost_link_class_name(int cls)
{
    if (cls < 0 || cls >= COST_LINK_NCLASSES)
        return NULL;
    return class_names[cls];
}

int cost_link_class_of(const cost_cluster *c, int dev_a, int dev_b)
{
    const cost_node *a = &c->nodes[c->device_node[dev_a]];
    const cost_node *b = &c->nodes[c->device_node[dev_b]];

    if (a == b)
        return COST_LINK_INTRA;
    if (a->region[0] && b->region[0] && strcmp(a->region, b->region) != 0)
        return COST_LINK_REGION;
    return COST_LINK_INTER;
}

void cost_calibration_init(cost_calibration *cal)
{
    memset(cal, 0, sizeof *cal);
}

int cost_calibration_type(const cost_calibration *cal, const char *name)
{
    int i;

    for (i = 0; cal != NULL && i < cal->ntypes; i++)
        if (strcasecmp(cal->type[i], name) == 0)
            return i;
    return -1;
}

int cost_calibration_add_type(cost_calibration *cal, const char *name)
{
    int i = cost_calibration_type(cal, name);

    if (i >= 0)
        return i;
    if (cal->ntypes >= COST_CALIB_MAX_TYPES || strlen(name) >= sizeof cal->type[0])
        return -1;
    i = cal->ntypes++;
    snprintf(cal->type[i], sizeof cal->type[i], "%s", name);
    cal->compute_scale[i] = 1.0;
    cal->mbs_half[i] = 0.0;
    return i;
}

const cost_calibration *cost_calibration_of(const cost_params *p,
                                            const cost_profile *prof)
{
    if (p != NULL && p->calib != NULL)
        return p->calib;
    return prof != NULL ? prof->calib : NULL;
}

double cost_calibration_eff(const cost_params *p, int cls)
{
    const cost_calibration *cal = p->calib;

    if (cal != NULL && cls >= 0 && cls < COST_LINK_NCLASSES && cal->bw_frac[cls] > 0.0)
        return cal->bw_frac[cls];
    return cls == COST_LINK_INTRA ? p->intra_eff : p->net_eff;
}

/* Compute time at micro-batch b with efficiency eff(b) = e_inf b / (b +
 * b_half): t(b) = (b + b_half) w / e_inf = s (b w) + s b_half w, with s =
 * compute_scale the profile's per-sample time multiplier.  Under TP every
 * layer with collectives pays tp_fixed per micro-batch (synchronisation
 * and launch of the collectives beyond their bandwidth and latency). */
void cost_calibration_layer(const cost_calibration *cal,
                            const cost_device_type *dt, const cost_layer *l,
                            int tp, int mbs, double work_fwd, double comm,
                            double *fwd, double *bwd)
{
    int t;
    double extra = 0.0, ratio, base;

    if (cal == NULL)
        return;
    base = *fwd - 0.5 * comm;
    ratio = base > 0.0 ? (*bwd - 0.5 * comm) / base : 2.0;
    if (!(ratio >= 0.0))
        ratio = 2.0;
    t = cost_calibration_type(cal, dt->name);
    if (t >= 0 && work_fwd > 0.0 && mbs > 0)
        extra = (cal->compute_scale[t] - 1.0) * work_fwd +
                cal->compute_scale[t] * cal->mbs_half[t] * work_fwd / (double)mbs;
    *fwd += extra;
    *bwd += ratio * extra;
    if (tp > 1 && l->tp_collectives > 0) {
        *fwd += cal->tp_fixed / 3.0;
        *bwd += 2.0 * cal->tp_fixed / 3.0;
    }
    if (*fwd < 0.0)
        *fwd = 0.0;
    if (*bwd < 0.0)
        *bwd = 0.0;
}
