/* costmodel/links.c: the links transfers run on: the bandwidth of one
 * flow with NIC sharing, the TP ring of a stage, the cut between two
 * stages, and the ring all-reduce over them (AMP eq. 3). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "internal.h"

/* AMP eq. 3: T = 2 (n - 1) M / (n B), plus 2 (n - 1) latency-bound steps. */
double cost_allreduce(double bytes, int n, double bw, double lat)
{
    double nn = (double)n;

    if (n <= 1 || bytes <= 0.0)
        return 0.0;
    return 2.0 * (nn - 1.0) * lat + 2.0 * (nn - 1.0) * bytes / (nn * bw);
}

double cost_flow_bw(const fmt_cluster *c, const cost_params *p, int da,
                    int db, int share_a, int share_b, double *lat)
{
    double bw, nic, eff;
    int na = c->device_node[da], nb = c->device_node[db];

    fmt_link_between(c, da, db, &bw, lat);
    if (p->calib != NULL) /* calibrated latency and link class */
        *lat += p->calib->msg_latency;
    eff = cost_link_eff(p, fmt_link_class_of(c, da, db), bw);
    if (na == nb)
        return bw * eff;
    bw *= eff;
    nic = c->nodes[na].nic_bw * eff / (double)(share_a > 0 ? share_a : 1);
    if (nic < bw)
        bw = nic;
    nic = c->nodes[nb].nic_bw * eff / (double)(share_b > 0 ? share_b : 1);
    if (nic < bw)
        bw = nic;
    return bw;
}

void cost_tp_ring(const fmt_cluster *c, const cost_params *p,
                  const fmt_strategy *s, int stage, int dpi, double *bw,
                  double *lat)
{
    int k;

    *bw = INFINITY;
    *lat = 0.0;
    for (k = 0; k < s->tp && s->tp > 1; k++) {
        double b, l;
        int a = fmt_rank_device(s, stage, dpi, k);
        int z = fmt_rank_device(s, stage, dpi, (k + 1) % s->tp);
        b = cost_flow_bw(c, p, a, z, 1, 1, &l);
        if (b < *bw)
            *bw = b;
        if (l > *lat)
            *lat = l;
    }
}

void cost_count_cut_flows(const fmt_cluster *c, const fmt_strategy *s,
                          int j, int *out_flows, int *in_flows)
{
    int d, k;

    memset(out_flows, 0, (size_t)c->nnodes * sizeof *out_flows);
    memset(in_flows, 0, (size_t)c->nnodes * sizeof *in_flows);
    for (d = 0; d < s->dp; d++)
        for (k = 0; k < s->tp; k++) {
            int a = c->device_node[fmt_rank_device(s, j, d, k)];
            int b = c->device_node[fmt_rank_device(s, j + 1, d, k)];
            if (a != b) {
                out_flows[a]++;
                in_flows[b]++;
            }
        }
}

void cost_cut_link_range(const fmt_cluster *c, const cost_params *p,
                         const fmt_strategy *s, int j, int d0, int d1,
                         const int *out_flows, const int *in_flows, double *bw,
                         double *lat)
{
    int d, k;

    *bw = INFINITY;
    *lat = 0.0;
    for (d = d0; d < d1; d++)
        for (k = 0; k < s->tp; k++) {
            int a = fmt_rank_device(s, j, d, k), b = fmt_rank_device(s, j + 1, d, k);
            double l, e = cost_flow_bw(c, p, a, b,
                                       out_flows ? out_flows[c->device_node[a]] : 1,
                                       in_flows ? in_flows[c->device_node[b]] : 1, &l);
            if (e < *bw)
                *bw = e;
            if (l > *lat)
                *lat = l;
        }
}

void cost_cut_link(const fmt_cluster *c, const cost_params *p,
                   const fmt_strategy *s, int j, double *bw, double *lat)
{
    int *flows = calloc((size_t)c->nnodes * 2, sizeof *flows);

    if (flows == NULL) { /* no scratch memory: links without NIC sharing */
        cost_cut_link_range(c, p, s, j, 0, s->dp, NULL, NULL, bw, lat);
        return;
    }
    cost_count_cut_flows(c, s, j, flows, flows + c->nnodes);
    cost_cut_link_range(c, p, s, j, 0, s->dp, flows, flows + c->nnodes, bw,
                        lat);
    free(flows);
}
