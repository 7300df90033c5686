/* search/launcher.c: the constraints of a target launcher on the search
 * (docs/export.md, "Planning for a launcher"): the training features it
 * runs, where its stage boundaries may fall (layer groups and the
 * first/last-stage split of Megatron-LM core_r0.9.0) and the rank order
 * its hostfile can realise.  export_target_caps fills search_launcher
 * from what the exporter refuses; this file makes the search keep it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int search_launcher_params(search_params *sp, const cost_params *cp,
                           util_error *err)
{
    const search_launcher *lc = &sp->launcher;

    if (!lc->active)
        return UTIL_OK;
    if (lc->no_sp && sp->seq_par == 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "sequence parallelism is fixed on, but the "
                              "launcher has none");
    if (lc->no_vpp && sp->vpp > 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "%d virtual stages are fixed, but the launcher "
                              "has no interleaved schedule", sp->vpp);
    if (lc->no_selective && (sp->recompute == FMT_RECOMPUTE_SELECTIVE ||
                             (sp->recompute < 0 && cp != NULL &&
                              sp->method == SEARCH_METHOD_MEGATRON &&
                              cp->recompute == FMT_RECOMPUTE_SELECTIVE)))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "selective recomputation is fixed, but the "
                              "launcher checkpoints whole layers only");
    if (lc->no_gpipe && cp != NULL && cp->schedule == FMT_SCHED_GPIPE)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "the GPipe schedule is fixed, but the launcher "
                              "runs 1F1B");
    if (lc->zero_limit > 0 && sp->zero >= lc->zero_limit)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "ZeRO stage %d is fixed, but the launcher runs "
                              "stages below %d only", sp->zero, lc->zero_limit);
    if (lc->no_offload && sp->offload == FMT_OFFLOAD_OPTIMIZER)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "optimizer offload is fixed, but the launcher "
                              "cannot offload the optimizer");
    if (lc->offload_zero_limit > 0 && sp->offload == FMT_OFFLOAD_OPTIMIZER &&
        sp->zero >= lc->offload_zero_limit)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "optimizer offload with ZeRO stage %d is fixed, "
                              "but the launcher offloads only with stages "
                              "below %d", sp->zero, lc->offload_zero_limit);
    if (lc->no_sp)
        sp->seq_par = 0;
    if (lc->no_offload)
        sp->offload = FMT_OFFLOAD_NONE;
    if (lc->no_vpp)
        sp->vpp = 1;
    if (lc->no_uneven_tp)
        sp->uneven_tp = 0;
    return UTIL_OK;
}

int search_launcher_feat(const search_launcher *lc, int pp, const search_feat *f)
{
    if (lc == NULL || !lc->active)
        return 1;
    return !((lc->no_sp && f->sp > 0) || (lc->no_vpp && f->vpp > 1) ||
             (lc->no_selective && f->recompute == FMT_RECOMPUTE_SELECTIVE) ||
             (lc->zero_limit > 0 && f->zero >= lc->zero_limit) ||
             (lc->zero_limit_pp > 0 && pp > 1 && f->zero >= lc->zero_limit_pp) ||
             (lc->no_offload && f->offload == FMT_OFFLOAD_OPTIMIZER) ||
             (lc->offload_zero_limit > 0 && f->offload == FMT_OFFLOAD_OPTIMIZER &&
              f->zero >= lc->offload_zero_limit));
}

int search_launcher_groups(const fmt_model *m, int vpp, int *start)
{
    int l, b = 0, g = 0, v = vpp > 1 ? vpp : 1, blocks = search_blocks(m);

    if (blocks == 0 || blocks % v != 0)
        return 0;
    start[0] = 0;
    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].kind == FMT_KIND_TRANSFORMER) {
            if (b > 0 && b % v == 0)
                start[++g] = l;
            b++;
        }
    start[++g] = m->nlayers;
    return g;
}

/* Objective of AMP eq. 5 and memory fit of bounds from prefix sums
 * (pt, pm: k rows of L + 1); HUGE_VAL when a stage overflows. */
static double ends_value(const search_dp_input *in, const double *pt,
                         const double *pm, const int *b)
{
    size_t L1 = (size_t)in->L + 1;
    double mx = 0.0, sum = 0.0;
    int j;

    for (j = 0; j < in->k; j++) {
        double t = pt[(size_t)j * L1 + (size_t)b[j + 1]] - pt[(size_t)j * L1 + (size_t)b[j]];
        if (in->mem != NULL && in->cap != NULL &&
            pm[(size_t)j * L1 + (size_t)b[j + 1]] - pm[(size_t)j * L1 + (size_t)b[j]] >
                in->cap[j] * (1.0 + 1e-12))
            return HUGE_VAL;
        mx = t > mx ? t : mx;
        sum += t;
        if (j + 1 < in->k && in->e != NULL)
            sum += in->e[(size_t)j * L1 + (size_t)b[j + 1]];
    }
    return (double)(in->gas - 1) * mx + sum;
}

/* Megatron-LM core_r0.9.0's split over groups: a groups on the first
 * stage, b on the last and the same m on each middle one (a + b + m (k - 2)
 * = L), every stage non-empty; all equal with vpp > 1.  Exhaustive over
 * (m, a): O(L^2 k / (k - 2)) with prefix sums. */
static int ends_assign(const search_dp_input *in, int even, int *bounds,
                       double *objective, util_error *err)
{
    int k = in->k, L = in->L, mid, a, j, found = 0;
    size_t L1 = (size_t)L + 1, z;
    double *pt = calloc((size_t)k * L1, sizeof *pt);
    double *pm = calloc((size_t)k * L1, sizeof *pm), best = HUGE_VAL;
    int *cur = malloc(((size_t)k + 1) * sizeof *cur);

    if (pt == NULL || pm == NULL || cur == NULL) {
        free(pt);
        free(pm);
        free(cur);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (j = 0; j < k; j++)
        for (z = 0; z < (size_t)L; z++) {
            pt[(size_t)j * L1 + z + 1] = pt[(size_t)j * L1 + z] + in->t[(size_t)j * (size_t)L + z];
            pm[(size_t)j * L1 + z + 1] = pm[(size_t)j * L1 + z] +
                                         (in->mem ? in->mem[(size_t)j * (size_t)L + z] : 0.0);
        }
    for (mid = 1; k >= 3 && mid * (k - 2) + 2 <= L; mid++) {
        int rest = L - mid * (k - 2);
        for (a = 1; a < rest; a++) {
            double v;
            if (even && (a != mid || rest - a != mid))
                continue;
            cur[0] = 0;
            for (j = 1; j < k; j++)
                cur[j] = a + (j - 1) * mid;
            cur[k] = L;
            v = ends_value(in, pt, pm, cur);
            if (v < best) {
                best = v;
                memcpy(bounds, cur, ((size_t)k + 1) * sizeof *cur);
                found = 1;
            }
        }
    }
    free(pt);
    free(pm);
    free(cur);
    if (!found)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no split with equal middle stages fits memory");
    *objective = search_dp_objective(in, bounds);
    return UTIL_OK;
}

int search_launcher_dp(const search_dp_input *in, const search_launcher *lc,
                       int vpp, int *bounds, double *objective, util_error *err)
{
    int even = vpp > 1;

    if (lc == NULL || lc->split != SEARCH_SPLIT_ENDS || in->k < 2 ||
        (in->k == 2 && !even))
        return search_dp_assign(in, bounds, objective, err);
    if (in->k == 2) { /* two equal stages */
        bounds[0] = 0;
        bounds[1] = in->L / 2;
        bounds[2] = in->L;
        if (in->L % 2 != 0 || in->L < 2 || !search_dp_fits(in, bounds))
            return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                                  "no even split fits memory");
        *objective = search_dp_objective(in, bounds);
        return UTIL_OK;
    }
    return ends_assign(in, even, bounds, objective, err);
}

/* (first rank on the device's node, device) as one sort key. */
static int cmp_long(const void *pa, const void *pb)
{
    long a = *(const long *)pa, b = *(const long *)pb;

    return (a > b) - (a < b);
}

void search_launcher_order(const fmt_cluster *c, const search_launcher *lc,
                           fmt_strategy *s)
{
    int n = s->tp * s->dp * s->pp, r, k;
    long *key, N = c->ndevices;
    int *first;

    if (lc == NULL || lc->order == SEARCH_ORDER_ANY || n < 2)
        return;
    key = malloc((size_t)n * sizeof *key);
    first = malloc((size_t)c->nnodes * sizeof *first);
    if (key == NULL || first == NULL) { /* the check in search_set drops it */
        free(key);
        free(first);
        return;
    }
    for (k = 0; k < c->nnodes; k++)
        first[k] = n;
    for (r = n - 1; r >= 0; r--)
        first[c->device_node[s->ranks[r]]] = r;
    /* each host's devices in ascending order, hosts by their first rank:
     * a placement that keeps the order maps to itself */
    for (r = 0; r < n; r++)
        key[r] = (long)first[c->device_node[s->ranks[r]]] * N + s->ranks[r];
    qsort(key, (size_t)n, sizeof *key, cmp_long);
    for (r = 0; r < n; r++)
        s->ranks[r] = (int)(key[r] % N);
    free(key);
    free(first);
}

/* Block counts per stage into nb (pp entries); 0 when a boundary is
 * not between two blocks (on a chunk of vpp blocks). */
static int split_blocks(const fmt_model *m, const fmt_strategy *s, int *nb)
{
    int j, l, before = 0, v = s->vpp > 1 ? s->vpp : 1, ok = 1;

    for (j = 0; j < s->pp; j++) {
        nb[j] = 0;
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
            nb[j] += m->layers[l].kind == FMT_KIND_TRANSFORMER;
        if (j > 0)
            ok &= s->bounds[j] < m->nlayers &&
                  m->layers[s->bounds[j]].kind == FMT_KIND_TRANSFORMER &&
                  before > 0 && before % v == 0;
        before += nb[j];
    }
    return ok && nb[s->pp - 1] > 0 && before % v == 0;
}

static int split_ok(const fmt_model *m, const search_launcher *lc,
                    const fmt_strategy *s, char *why, size_t n)
{
    int *nb, j, ok = 1;

    if (lc->split == SEARCH_SPLIT_ANY)
        return 1;
    nb = calloc((size_t)(s->pp > 0 ? s->pp : 1), sizeof *nb);
    if (nb == NULL)
        return 0;
    if (!split_blocks(m, s, nb)) {
        snprintf(why, n, "a stage boundary is not between two transformer "
                 "blocks%s", s->vpp > 1 ? " on a chunk of virtual-stage blocks" : "");
        ok = 0;
    }
    for (j = 2; ok && lc->split == SEARCH_SPLIT_ENDS && j < s->pp - 1; j++)
        if (nb[j] != nb[1]) {
            snprintf(why, n, "the middle stages hold %d and %d blocks", nb[1], nb[j]);
            ok = 0;
        }
    for (j = 1; ok && lc->split == SEARCH_SPLIT_ENDS && s->vpp > 1 && j < s->pp; j++)
        if (nb[j] != nb[0]) {
            snprintf(why, n, "with virtual stages the stages hold %d and %d blocks",
                     nb[0], nb[j]);
            ok = 0;
        }
    free(nb);
    return ok;
}

/* Each host one run of consecutive ranks on ascending GPUs; aligned:
 * each run starts at a multiple of its length. */
static int order_ok(const fmt_cluster *c, const fmt_strategy *s, int aligned,
                    char *why, size_t n)
{
    int r, nr = s->tp * s->dp * s->pp, ok = 1, first = 0;
    char *done = calloc((size_t)c->nnodes, 1);

    if (done == NULL)
        return 0;
    for (r = 0; r < nr && ok; r++) {
        int node = c->device_node[s->ranks[r]];
        int same = r > 0 && c->device_node[s->ranks[r - 1]] == node;
        if (!same && done[node]) {
            snprintf(why, n, "the ranks on host '%s' are not consecutive",
                     c->nodes[node].name);
            ok = 0;
        } else if (same && s->ranks[r] < s->ranks[r - 1]) {
            snprintf(why, n, "ranks %d and %d use GPUs of host '%s' in "
                     "descending order", r - 1, r, c->nodes[node].name);
            ok = 0;
        }
        done[node] = 1;
        if (!same)
            first = r;
        if (ok && aligned && (r + 1 == nr || c->device_node[s->ranks[r + 1]] != node) &&
            first % (r + 1 - first) != 0) {
            snprintf(why, n, "host '%s' runs ranks %d-%d, whose first is not a "
                     "multiple of their number", c->nodes[node].name, first, r);
            ok = 0;
        }
    }
    free(done);
    return ok;
}

int search_launcher_ok(const fmt_cluster *c, const fmt_model *m,
                       const search_launcher *lc, const fmt_strategy *s,
                       char *why, size_t n)
{
    char scratch[8];
    search_feat f;

    if (why == NULL || n == 0) {
        why = scratch;
        n = sizeof scratch;
    }
    why[0] = '\0';
    if (lc == NULL || !lc->active)
        return 1;
    f.sp = s->sp > 0 && s->tp > 1;
    f.vpp = s->vpp;
    f.recompute = s->recompute;
    f.zero = s->zero;
    f.offload = s->offload;
    if (!search_launcher_feat(lc, s->pp, &f)) {
        snprintf(why, n, "a training feature (sequence parallelism, virtual "
                 "stages, selective recomputation, ZeRO stage %d or optimizer "
                 "offload) it lacks", s->zero);
        return 0;
    }
    if (s->vpp > 1 && s->pp > 1 && s->gas % s->pp != 0 && !lc->vpp_gas_any) {
        snprintf(why, n, "interleaving with %d micro-batches, not a multiple "
                 "of pp %d", s->gas, s->pp);
        return 0;
    }
    if (lc->no_gpipe && s->schedule == FMT_SCHED_GPIPE && s->pp > 1) {
        snprintf(why, n, "the GPipe schedule");
        return 0;
    }
    if ((lc->no_overlap_tp && s->overlap_tp == 1 && s->tp > 1) ||
        (lc->no_overlap_param && s->overlap_param == 1 && s->dp > 1) ||
        (lc->no_overlap_grad && s->overlap_grad == 1 && s->dp > 1)) {
        snprintf(why, n, "a communication overlap it lacks");
        return 0;
    }
    if (lc->no_uneven_tp && s->tp_heads != NULL) {
        snprintf(why, n, "uneven tensor-parallel shards");
        return 0;
    }
    if (!split_ok(m, lc, s, why, n))
        return 0;
    return lc->order == SEARCH_ORDER_ANY ||
           order_ok(c, s, lc->order == SEARCH_ORDER_HOSTS_ALIGNED, why, n);
}

void search_overlap_choose(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const search_launcher *lc,
                           fmt_strategy *s)
{
    int any = lc == NULL || !lc->active, zero = cost_strategy_zero(cp, s);

    s->overlap_grad = s->dp > 1 &&
                      (any || (!lc->no_overlap_grad &&
                               (!lc->overlap_grad_zero ||
                                (zero >= 1 && s->pp == 1))));
    /* Megatron-LM gathers the weights behind the forward only when it
     * also reduces the gradients behind the backward */
    s->overlap_param = s->overlap_grad && zero >= 1 &&
                       (any || !lc->no_overlap_param);
    s->overlap_tp = s->sp > 0 && s->tp > 1 && (any || !lc->no_overlap_tp) &&
                    cost_overlap_tp_hardware(c, m, s);
    if (any || lc->p2p == SEARCH_P2P_ANY)
        s->overlap_p2p = -1; /* the cost parameter overlap_p2p */
    else
        s->overlap_p2p = lc->p2p == SEARCH_P2P_VPP && s->vpp > 1 && s->pp > 1;
}
