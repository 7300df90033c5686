/* search/space.c: the strategy space of AMP's enumeration (Algorithm 1)
 * extended by today's training features: degrees and micro-batch sizes
 * from divisors, sequence parallelism, recomputation level, virtual
 * pipeline stages, ZeRO stage and optimizer offload, each point with a
 * lower bound of its iteration time from compute alone, for a best-first
 * search. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* largest interleaving searched when no vpp is fixed: each chunk adds
 * its pipeline transfers, so that more chunks rarely pay (search_params
 * vpp fixes any count up to FMT_MAX_VPP) */
#define SEARCH_VPP_MAX 8

int search_divisors(long n, long cap, long **out)
{
    long d, *v, *hi;
    int nlo = 0, nhi = 0, i;

    *out = NULL;
    if (n < 1)
        return 0;
    /* no n < 2^31 has more than 1600 divisors (2095133040 has 1600),
     * half of them at most sqrt(n); larger n are refused */
    if (n > 2147483647L)
        return -1;
    v = malloc(2048 * sizeof *v);
    hi = malloc(1024 * sizeof *hi);
    if (v == NULL || hi == NULL) {
        free(v);
        free(hi);
        return -1;
    }
    for (d = 1; d * d <= n; d++)
        if (n % d == 0) {
            if (d <= cap)
                v[nlo++] = d;
            if (d != n / d && n / d <= cap)
                hi[nhi++] = n / d;
        }
    for (i = nhi - 1; i >= 0; i--)
        v[nlo++] = hi[i];
    free(hi);
    *out = v;
    return nlo;
}

void search_strategy_params(const cost_params *cp, const fmt_profile *prof,
                            const fmt_strategy *s, cost_params *out)
{
    /* search_memo (search/assign.c) keys what it keeps by the fields set
     * here: a field added here belongs in its keys too */
    *out = *cp;
    out->recompute = cost_strategy_recompute(cp, s);
    out->zero_stage = cost_strategy_zero(cp, s);
    out->offload = cost_strategy_offload(cp, s);
    out->schedule = s->schedule;
    /* sequence parallelism only splits work over a TP group */
    out->sp = s->sp > 0 && s->tp > 1;
    out->calib = cost_calibration_of(cp, prof);
}

double search_inflight(const cost_params *p, const fmt_strategy *s, int stage)
{
    if (s->vpp > 1 && p->schedule == FMT_SCHED_1F1B)
        return cost_inflight_interleaved(stage, s->pp, s->gas, s->vpp);
    return (double)cost_inflight(p, stage, s->pp, s->gas);
}

int search_blocks(const fmt_model *m)
{
    int l, n = 0;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].kind == FMT_KIND_TRANSFORMER)
            n++;
    return n;
}

/* Compute-only time of a micro-batch through every layer, fwd + bwd,
 * each layer on the fastest device type of the cluster (TP
 * communication removed, so no placement can beat it), and for every
 * type t its least slowdown rho_t = min_l t_t(l) / t_min(l) >= 1. */
typedef struct lb_table {
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_profile *prof;
    const cost_params *cp;
    int *types;             /* distinct device types used by nodes */
    long *count;            /* devices of each */
    int ntypes;
    long *tps, *mbss;
    int ntp, nmbs;
    double *val;            /* ntp * nmbs * 3 * (1 + ntypes): S, then rho of
                               each type; NAN = not computed */
    double *tl;             /* ntypes * L scratch */
    int *order;             /* ntypes: types by rho, scratch */
} lb_table;

static double *lb_entry(lb_table *t, int ti, int mi, int rc)
{
    size_t at = ((size_t)ti * (size_t)t->nmbs + (size_t)mi) * 3u + (size_t)rc;
    size_t L = (size_t)t->m->nlayers, w = 1u + (size_t)t->ntypes;
    double *e = t->val + at * w;
    cost_params p = *t->cp;
    size_t l;
    int k;
    double big = 0.0;

    if (!isnan(e[0]))
        return e;
    p.recompute = rc;
    /* sequence parallelism splits the norms' and dropouts' work over the
     * TP group: the least compute of either setting */
    p.sp = t->tps[ti] > 1;
    e[0] = 0.0;
    for (k = 0; k < t->ntypes; k++)
        e[1 + k] = HUGE_VAL;
    for (l = 0; l < L; l++) {
        double best = HUGE_VAL;
        for (k = 0; k < t->ntypes; k++) {
            cost_layer_time lt;
            double v;
            cost_layer_time_of(t->m, t->prof, &p, &t->c->types[t->types[k]],
                               (int)l, (int)t->tps[ti], (int)t->mbss[mi], 1e30,
                               0.0, 1e30, &lt);
            v = lt.fwd + lt.bwd - lt.comm;
            if ((int)l < p.frozen_layers || !(v > 0.0)) /* bound it by 0 */
                v = 0.0;
            t->tl[(size_t)k * L + l] = v;
            if (v < best)
                best = v;
        }
        t->tl[(size_t)t->ntypes * L + l] = best;
        if (best > big)
            big = best;
    }
    /* layers under a twentieth of the largest count as 0: a smaller
     * bound, but the slowdowns rho then come from the layers that matter
     * (small memory-bound layers differ less between generations) */
    for (l = 0; l < L; l++) {
        double best = t->tl[(size_t)t->ntypes * L + l];
        if (!(best >= 0.05 * big) || !(best > 0.0))
            continue;
        e[0] += best;
        for (k = 0; k < t->ntypes; k++)
            if (t->tl[(size_t)k * L + l] / best < e[1 + k])
                e[1 + k] = t->tl[(size_t)k * L + l] / best;
    }
    for (k = 0; k < t->ntypes; k++)
        if (!(e[1 + k] >= 1.0) || isinf(e[1 + k]))
            e[1 + k] = 1.0;
    return e;
}

/* Lower bound of the iteration time of gas micro-batches over pp stages
 * of g = N / pp devices each.  Sorted fastest first (by rho), stage i's
 * slowest device is at least as slow as device (i + 1) g - 1, so stage
 * times T_j >= rho_j W_j with sum W_j = S: max T_j >= S / sum 1/rho_j and
 * sum T_j >= rho_0 S.  AMP eq. 5 gives (gas - 1) max + sum; the
 * interleaved schedule's bubble (Narayanan et al. 2021) is at least
 * sum / vpp, and never less than one stage time. */
static double lb_time(lb_table *t, const double *e, int pp, long gas, int vpp)
{
    long g = (long)t->c->ndevices / pp, a = 0;
    double inv = 0.0, rho0 = -1.0, S = e[0], M;
    int i, j, k;

    for (i = 0; i < t->ntypes; i++) /* insertion sort by rho */
        t->order[i] = i;
    for (i = 1; i < t->ntypes; i++)
        for (j = i; j > 0 && e[1 + t->order[j]] < e[1 + t->order[j - 1]]; j--) {
            k = t->order[j];
            t->order[j] = t->order[j - 1];
            t->order[j - 1] = k;
        }
    for (i = 0; i < t->ntypes; i++) {
        long n = t->count[t->order[i]], hi = (a + n) / g, lo = (a + g) / g, cnt;
        if (hi > pp)
            hi = pp;
        cnt = hi - lo + 1; /* stages i + 1 in [ceil((a + 1) / g), (a + n) / g] */
        if (cnt > 0) {
            double rho = e[1 + t->order[i]];
            inv += (double)cnt / rho;
            if (rho0 < 0.0)
                rho0 = rho;
        }
        a += n;
    }
    if (!(inv > 0.0) || rho0 < 0.0) { /* not reached: a plain bound */
        inv = pp;
        rho0 = 1.0;
    }
    M = S / inv;
    return (double)(gas - 1) * M + fmax(M, rho0 * S / (double)vpp);
}

/* (tp, pp, lb, seq) */
static int cmp_shape(const void *pa, const void *pb)
{
    const search_key *a = pa, *b = pb;

    if (a->tp != b->tp)
        return a->tp < b->tp ? -1 : 1;
    if (a->pp != b->pp)
        return a->pp < b->pp ? -1 : 1;
    if (a->lb != b->lb)
        return a->lb < b->lb ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* (glb, tp, pp, lb, seq) */
static int cmp_key(const void *pa, const void *pb)
{
    const search_key *a = pa, *b = pb;

    if (a->glb != b->glb)
        return a->glb < b->glb ? -1 : 1;
    return cmp_shape(pa, pb);
}

/* Append one key, growing the array. */
static int push_key(search_key **v, long *n, long *cap, const search_key *k)
{
    if (*n == *cap) {
        long nc = *cap ? 2 * *cap : 256;
        search_key *g = realloc(*v, (size_t)nc * sizeof *g);
        if (g == NULL)
            return UTIL_ENOMEM;
        *v = g;
        *cap = nc;
    }
    (*v)[(*n)++] = *k;
    return UTIL_OK;
}

/* Interleaving needs pp >= 2, 1F1B, gas divisible by pp (any gas >= pp
 * with gas_any: search_launcher.vpp_gas_any) and the blocks in chunks of
 * v, at least one chunk per stage. */
static int vpp_ok(const cost_params *cp, int blocks, int pp, long gas, int v,
                  int gas_any)
{
    if (v == 1)
        return 1;
    return v >= 2 && v <= FMT_MAX_VPP && pp >= 2 &&
           cp->schedule == FMT_SCHED_1F1B &&
           (gas % pp == 0 || (gas_any && gas >= pp)) && blocks > 0 &&
           blocks % v == 0 && blocks / v >= pp;
}

int search_space_build(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const search_params *sp, int max_tp,
                       search_key **keys, long *nkeys, search_result *out,
                       util_error *err)
{
    lb_table t;
    long N = c->ndevices, gbs = sp->global_batch, cap = 0, n = 0, seq = 0;
    long *pps = NULL, mcap;
    int ti, mi, pi, npp, i, k, rc = UTIL_OK, blocks = search_blocks(m);
    int player = cost_param_layers(m), host = c->nnodes > 0;
    search_key *v = NULL;

    memset(&t, 0, sizeof t);
    t.c = c;
    t.m = m;
    t.prof = prof;
    t.cp = cp;
    t.types = calloc((size_t)c->ntypes + 1, sizeof *t.types);
    t.count = calloc((size_t)c->ntypes + 1, sizeof *t.count);
    t.order = calloc((size_t)c->ntypes + 1, sizeof *t.order);
    t.tl = malloc(((size_t)c->ntypes + 2) * (size_t)m->nlayers * sizeof *t.tl);
    t.ntp = search_divisors(N, max_tp, &t.tps);
    mcap = sp->max_mbs > 0 && sp->max_mbs < gbs ? sp->max_mbs : gbs;
    t.nmbs = search_divisors(gbs, mcap, &t.mbss);
    if (t.types == NULL || t.count == NULL || t.order == NULL || t.tl == NULL ||
        t.ntp < 0 || t.nmbs < 0)
        goto nomem;
    for (i = 0; i < c->nnodes; i++) {
        if (!(c->nodes[i].host_mem > 0.0)) /* offload searched with host memory */
            host = 0;
        for (k = 0; k < t.ntypes && t.types[k] != c->nodes[i].type; k++)
            ;
        if (k == t.ntypes)
            t.types[t.ntypes++] = c->nodes[i].type;
        t.count[k] += c->nodes[i].gpus;
    }
    {
        size_t nv = (size_t)(t.ntp > 0 ? t.ntp : 1) * (size_t)(t.nmbs > 0 ? t.nmbs : 1) *
                    3u * (1u + (size_t)t.ntypes), z;
        t.val = malloc(nv * sizeof *t.val);
        if (t.val == NULL)
            goto nomem;
        for (z = 0; z < nv; z++)
            t.val[z] = NAN;
    }

    /* enumeration order: mbs, tp, pp, then the features (vpp, recompute,
     * sp, zero), the plainest first, so that ties keep the plainer one */
    for (mi = 0; mi < t.nmbs; mi++)
        for (ti = 0; ti < t.ntp; ti++) {
            int tp = (int)t.tps[ti];
            if (m->heads > 0 && m->heads % tp != 0) {
                out->rejected_other++;
                continue;
            }
            free(pps);
            npp = search_divisors(N / tp, N / tp, &pps);
            if (npp < 0)
                goto nomem;
            for (pi = 0; pi < npp; pi++) {
                int pp = (int)pps[pi], dp = (int)(N / tp / pp), mbs = (int)t.mbss[mi];
                int r, s0, z, vv, vmax;
                long gas;
                if (gbs % dp != 0 || (gbs / dp) % mbs != 0)
                    continue; /* mbs must divide the per-replica batch */
                if (pp > player) { /* a stage without parameters cannot run */
                    out->rejected_other++;
                    out->rejected_stages++;
                    continue;
                }
                if ((long long)pp * m->nlayers > SEARCH_MAX_ASSIGN_CELLS) {
                    out->rejected_other++; /* past the layer assignment's limit */
                    out->rejected_cells++;
                    continue;
                }
                gas = gbs / dp / mbs;
                vmax = sp->vpp > 0 ? sp->vpp : SEARCH_VPP_MAX;
                for (vv = sp->vpp > 0 ? sp->vpp : 1; vv <= vmax; vv++) {
                    if (!vpp_ok(cp, blocks, pp, gas, vv,
                                sp->launcher.active && sp->launcher.vpp_gas_any)) {
                        if (sp->vpp > 0)
                            out->rejected_other++;
                        continue;
                    }
                    for (r = 0; r < 3; r++) {
                        /* none, selective, full */
                        int lvl = r == 0 ? FMT_RECOMPUTE_NONE
                                         : r == 1 ? FMT_RECOMPUTE_SELECTIVE
                                                  : FMT_RECOMPUTE_FULL;
                        double lb;
                        if (sp->recompute >= 0 && lvl != sp->recompute)
                            continue;
                        lb = lb_time(&t, lb_entry(&t, ti, mi, lvl), pp, gas, vv);
                        for (s0 = 0; s0 < 2; s0++) {
                            /* searched, sequence parallelism is on wherever
                             * tp > 1: it moves the same bytes as the TP
                             * all-reduce (reduce-scatter + all-gather) and
                             * splits the norms' and dropouts' work and
                             * activations over the group (Korthikanti et al.
                             * 2022), so it never loses */
                            if (s0 != (sp->seq_par >= 0 ? (tp > 1 ? sp->seq_par : 0)
                                                        : (tp > 1)))
                                continue;
                            for (z = 0; z < 8; z++) {
                                search_key key;
                                int zs = z / 2, off = z % 2;
                                /* optimizer offload needs host memory on
                                 * every node and ZeRO >= 1 (DeepSpeed's
                                 * offload_optimizer, Megatron's
                                 * --optimizer-cpu-offload with its
                                 * distributed optimizer), which then
                                 * runs with dp = 1 too */
                                if (off ? (sp->offload == FMT_OFFLOAD_NONE || zs < 1 ||
                                           (sp->offload < 0 && !host))
                                        : sp->offload == FMT_OFFLOAD_OPTIMIZER)
                                    continue;
                                /* ZeRO above 0 needs replicas to shard over;
                                 * stages 2 and 3 do not combine with pipeline
                                 * parallelism (DeepSpeed's pipeline engine
                                 * refuses them), Megatron's distributed
                                 * optimizer is stage 1 */
                                if (sp->zero >= 0 ? zs != sp->zero
                                                  : ((zs > 0 && dp == 1 && !(off && zs == 1)) ||
                                                     (zs > 1 && pp > 1)))
                                    continue;
                                key.tp = tp;
                                key.pp = pp;
                                key.mbs = mbs;
                                key.f.recompute = lvl;
                                key.f.sp = s0;
                                key.f.zero = zs;
                                key.f.vpp = vv;
                                key.f.offload = off;
                                if (!search_launcher_feat(&sp->launcher, pp, &key.f))
                                    continue; /* the target launcher lacks it */
                                key.lb = lb;
                                key.seq = seq++;
                                if (push_key(&v, &n, &cap, &key) != UTIL_OK)
                                    goto nomem;
                            }
                        }
                    }
                }
            }
        }
    if (n > 1) {
        long a0 = 0, i2;
        qsort(v, (size_t)n, sizeof *v, cmp_shape);
        for (i2 = 0; i2 < n; i2++) {
            if (v[i2].tp != v[a0].tp || v[i2].pp != v[a0].pp)
                a0 = i2;
            v[i2].glb = v[a0].lb;
        }
        qsort(v, (size_t)n, sizeof *v, cmp_key);
    } else if (n == 1) {
        v[0].glb = v[0].lb;
    }
    *keys = v;
    *nkeys = n;
    v = NULL;
    goto done;
nomem:
    rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
done:
    free(v);
    free(pps);
    free(t.types);
    free(t.count);
    free(t.order);
    free(t.tl);
    free(t.tps);
    free(t.mbss);
    free(t.val);
    return rc;
}
