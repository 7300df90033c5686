/* search/assign.c: the best layer assignment of a strategy whose
 * degrees, micro-batch size and ranks are set: per-layer times of each
 * stage's slowest device (shared by identical devices), memory per layer
 * and cut costs from the cost model, then the DP of search/dp.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Groups the layer assignment works on: each layer without
 * parameters is glued to the layer with parameters before it (leading
 * ones to the first with parameters), so that no stage can be left
 * without parameters (cost_empty_stage).  start gets G + 1 entries
 * (start[G] = L); returns G, the layers with parameters. */
static int param_groups(const fmt_model *m, int *start)
{
    int l, g = 0;

    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].params > 0.0) {
            start[g] = g == 0 ? 0 : l;
            g++;
        }
    start[g] = m->nlayers;
    return g;
}

/* Units of an interleaved split: chunks of v consecutive blocks, the
 * layers before the first block in the first chunk and those after the
 * last block in the last, so that every device's blocks divide into v
 * model chunks.  Returns the count (0 when blocks % v != 0). */
static int chunk_groups(const fmt_model *m, int v, int *start)
{
    return v < 2 ? 0 : search_launcher_groups(m, v, start);
}

/* ---- what the candidates of one search share ------------------------- */

/* Layer times of one kind of device: devices of one type on TP rings of
 * equal bandwidth, latency and node bandwidth share them, so a stage
 * costs O(L) per kind, not per device; the key is every input of
 * cost_layer_time_of besides the layer, with the strategy's features as
 * search_strategy_params sets them, so that every candidate of a search
 * with the same key reuses them. */
typedef struct memo_lt {
    const fmt_device_type *dt;
    int tp, mbs, recompute, zero, schedule, sp;
    double bw, lat, hbw;
    double *t;              /* L fwd + bwd times (cost_rank_layer_adjust's) */
} memo_lt;

/* One kind of device in a stage: its type, first device, TP ring and
 * node bandwidth. */
typedef struct memo_kind {
    const fmt_device_type *dt;
    int rank;               /* the first rank of the kind */
    double bw, lat, hbw;
} memo_kind;

/* What a placement gives every candidate on it: the kinds of each stage
 * (in the order of their first device), the least device memory of each
 * stage and the cut links.  Links read only cost_params' efficiencies
 * and calibration, which a strategy's features do not change. */
typedef struct memo_place {
    int tp, dp, pp;
    int *ranks;             /* tp * dp * pp, NULL = free slot */
    int *koff;              /* pp + 1 offsets into kinds */
    memo_kind *kinds;
    double *minmem;         /* pp: least device memory of each stage, bytes */
    double *minfree;        /* pp: least of device memory less the derived
                             * runtime memory beyond the bound's reserve */
    double *cut_bw, *cut_lat; /* pp - 1 */
    int mixed;              /* 1: a TP group mixes device types */
    long used;              /* last use, for eviction */
} memo_place;

/* placements kept (the rules of the shapes being searched) */
#define MEMO_PLACES 8
/* layer times kept before the table starts again, doubles (32 MiB) */
#define MEMO_LT_DOUBLES ((size_t)1 << 22)

/* cost_memory_overhead_bound of one stage: its arguments and the
 * features search_strategy_params sets */
#define MEMO_OV_KEY 11
typedef struct memo_ov {
    int key[MEMO_OV_KEY];
    int used;
    double v;
} memo_ov;
/* overhead bounds kept before the table starts again (at most 2^17
 * slots of 56 bytes) */
#define MEMO_OV_MAX ((size_t)1 << 16)

struct search_memo {
    memo_lt *lt;
    int nlt, caplt;
    size_t lt_doubles;      /* sum of L over lt */
    memo_place pl[MEMO_PLACES];
    long clock;
    memo_ov *ov;            /* open addressing, a power of 2 slots */
    size_t nov, capov;
    search_scratch sa, sd;  /* arrays of the assignment, of its DP */
};

search_memo *search_memo_create(void)
{
    return calloc(1, sizeof(search_memo));
}

static void memo_lt_clear(search_memo *mo)
{
    int i;

    for (i = 0; i < mo->nlt; i++)
        free(mo->lt[i].t);
    mo->nlt = 0;
    mo->lt_doubles = 0;
}

static void memo_place_free(memo_place *p)
{
    free(p->ranks);
    free(p->koff);
    free(p->kinds);
    free(p->minmem);
    free(p->minfree);
    free(p->cut_bw);
    free(p->cut_lat);
    memset(p, 0, sizeof *p);
}

void search_memo_destroy(search_memo *mo)
{
    int i;

    if (mo == NULL)
        return;
    memo_lt_clear(mo);
    free(mo->lt);
    for (i = 0; i < MEMO_PLACES; i++)
        memo_place_free(&mo->pl[i]);
    free(mo->ov);
    free(mo->sa.p);
    free(mo->sd.p);
    free(mo);
}

static size_t memo_ov_hash(const int *key)
{
    uint64_t h = 1469598103934665603u;
    int i;

    for (i = 0; i < MEMO_OV_KEY; i++) {
        h ^= (uint64_t)(uint32_t)key[i];
        h *= 1099511628211u;
    }
    return (size_t)(h ^ (h >> 29));
}

/* Insert (key, v); 0 when out of memory (the value is then not kept). */
static int memo_ov_put(search_memo *mo, const int *key, double v)
{
    size_t i, mask;

    if (2 * (mo->nov + 1) > mo->capov) {
        size_t nc = mo->capov ? 2 * mo->capov : 1024, j;
        memo_ov *old = mo->ov, *g;
        if (nc > 2 * MEMO_OV_MAX) { /* full: start again */
            nc = mo->capov;
            memset(mo->ov, 0, nc * sizeof *mo->ov);
            mo->nov = 0;
        } else {
            g = calloc(nc, sizeof *g);
            if (g == NULL)
                return 0;
            mo->ov = g;
            mo->nov = 0;
            for (j = 0; j < mo->capov; j++)
                if (old[j].used) {
                    for (i = memo_ov_hash(old[j].key) & (nc - 1); g[i].used;
                         i = (i + 1) & (nc - 1))
                        ;
                    g[i] = old[j];
                    mo->nov++;
                }
            free(old);
            mo->capov = nc;
        }
    }
    mask = mo->capov - 1;
    for (i = memo_ov_hash(key) & mask; mo->ov[i].used; i = (i + 1) & mask)
        ;
    memcpy(mo->ov[i].key, key, sizeof mo->ov[i].key);
    mo->ov[i].used = 1;
    mo->ov[i].v = v;
    mo->nov++;
    return 1;
}

/* cost_memory_overhead_bound(m, cp, tp, dp, mbs, stage, pp, inflight,
 * gas), computed once per search for each key (memo may be NULL). */
static double memo_overhead(search_memo *mo, const fmt_model *m,
                            const cost_params *cp, int tp, int dp, int mbs,
                            int stage, int pp, int inflight, int gas)
{
    int key[MEMO_OV_KEY];
    size_t i, mask;
    double v;

    if (mo == NULL)
        return cost_memory_overhead_bound(m, cp, tp, dp, mbs, stage, pp, inflight,
                                          gas);
    key[0] = cp->recompute;
    key[1] = cp->zero_stage;
    key[2] = cp->schedule;
    key[3] = cp->sp;
    key[4] = tp;
    key[5] = mbs;
    key[6] = stage;
    key[7] = pp;
    key[8] = inflight;
    key[9] = gas;
    key[10] = dp;
    if (mo->capov > 0) {
        mask = mo->capov - 1;
        for (i = memo_ov_hash(key) & mask; mo->ov[i].used; i = (i + 1) & mask)
            if (memcmp(mo->ov[i].key, key, sizeof key) == 0)
                return mo->ov[i].v;
    }
    v = cost_memory_overhead_bound(m, cp, tp, dp, mbs, stage, pp, inflight, gas);
    memo_ov_put(mo, key, v);
    return v;
}

/* The kept structure of s's placement, NULL when none; *old gets the
 * slot to evict. */
static memo_place *memo_place_find(search_memo *mo, const fmt_strategy *s, int *old)
{
    size_t nr = (size_t)s->tp * (size_t)s->dp * (size_t)s->pp;
    memo_place *p;
    int i;

    mo->clock++;
    *old = 0;
    for (i = 0; i < MEMO_PLACES; i++) {
        p = &mo->pl[i];
        if (p->ranks != NULL && p->tp == s->tp && p->dp == s->dp && p->pp == s->pp &&
            memcmp(p->ranks, s->ranks, nr * sizeof *s->ranks) == 0) {
            p->used = mo->clock;
            return p;
        }
        if (p->used < mo->pl[*old].used)
            *old = i;
    }
    return NULL;
}

int search_memo_placement(search_memo *mo, const fmt_strategy *s,
                          const double **minmem, int *mixed)
{
    int old;
    const memo_place *p = mo != NULL ? memo_place_find(mo, s, &old) : NULL;

    if (p == NULL)
        return 0;
    *minmem = p->minmem;
    *mixed = p->mixed;
    return 1;
}

/* The stage structure of s's placement, built on first use; NULL when
 * out of memory. */
static const memo_place *memo_place_get(search_memo *mo, const fmt_cluster *c,
                                        const cost_params *cp,
                                        const fmt_strategy *s)
{
    size_t nr = (size_t)s->tp * (size_t)s->dp * (size_t)s->pp;
    memo_place *p;
    int old, j, d, t, n = 0, cap;

    if ((p = memo_place_find(mo, s, &old)) != NULL)
        return p;
    p = &mo->pl[old];
    memo_place_free(p);
    cap = 8;
    p->ranks = malloc(nr * sizeof *p->ranks);
    p->koff = malloc(((size_t)s->pp + 1) * sizeof *p->koff);
    p->kinds = malloc((size_t)cap * sizeof *p->kinds);
    p->minmem = malloc((size_t)s->pp * sizeof *p->minmem);
    p->minfree = malloc((size_t)s->pp * sizeof *p->minfree);
    p->cut_bw = malloc((size_t)s->pp * sizeof *p->cut_bw);
    p->cut_lat = malloc((size_t)s->pp * sizeof *p->cut_lat);
    if (!p->ranks || !p->koff || !p->kinds || !p->minmem || !p->minfree || !p->cut_bw || !p->cut_lat)
        goto nomem;
    for (j = 0; j < s->pp; j++) {
        p->koff[j] = n;
        p->minmem[j] = INFINITY;
        p->minfree[j] = INFINITY;
        for (d = 0; d < s->dp; d++) {
            double bw, lat;
            cost_tp_ring(c, cp, s, j, d, &bw, &lat);
            for (t = 0; t < s->tp; t++) {
                int dev = fmt_rank_device(s, j, d, t), q;
                const fmt_device_type *dt = fmt_device(c, dev);
                double hbw = c->nodes[c->device_node[dev]].intra_bw * cp->intra_eff;
                /* the derived runtime memory in place of the bound's */
                double rt = cost_runtime_derived(cp)
                                ? cost_runtime_memory(c, cp, s, j * s->tp * s->dp +
                                                      d * s->tp + t, NULL) -
                                      COST_RESERVE_UNKNOWN
                                : 0.0;
                if (dt->mem_bytes < p->minmem[j])
                    p->minmem[j] = dt->mem_bytes;
                if (dt->mem_bytes - rt < p->minfree[j])
                    p->minfree[j] = dt->mem_bytes - rt;
                for (q = p->koff[j]; q < n; q++)
                    if (p->kinds[q].dt == dt && p->kinds[q].bw == bw &&
                        p->kinds[q].lat == lat && p->kinds[q].hbw == hbw)
                        break;
                if (q < n)
                    continue;
                if (n == cap) {
                    memo_kind *g = realloc(p->kinds, 2 * (size_t)cap * sizeof *g);
                    if (g == NULL)
                        goto nomem;
                    p->kinds = g;
                    cap *= 2;
                }
                p->kinds[n].dt = dt;
                p->kinds[n].rank = j * s->tp * s->dp + d * s->tp + t;
                p->kinds[n].bw = bw;
                p->kinds[n].lat = lat;
                p->kinds[n].hbw = hbw;
                n++;
            }
        }
    }
    p->koff[s->pp] = n;
    for (j = 0; j < s->pp && !p->mixed && s->tp > 1; j++)
        for (d = 0; d < s->dp && !p->mixed; d++)
            p->mixed = cost_tp_group_mixed(c, s, j, d);
    for (j = 0; j + 1 < s->pp; j++)
        cost_cut_link(c, cp, s, j, &p->cut_bw[j], &p->cut_lat[j]);
    memcpy(p->ranks, s->ranks, nr * sizeof *s->ranks);
    p->tp = s->tp;
    p->dp = s->dp;
    p->pp = s->pp;
    p->used = mo->clock;
    return p;
nomem:
    memo_place_free(p);
    return NULL;
}

/* The layer times of kind kd under s and cp (the strategy's features),
 * computed on first use; NULL when out of memory. */
static const double *memo_lt_get(search_memo *mo, const fmt_model *m,
                                 const fmt_profile *prof, const cost_params *cp,
                                 const fmt_strategy *s, const memo_kind *kd)
{
    memo_lt *e;
    int i, l;

    for (i = mo->nlt - 1; i >= 0; i--) {
        e = &mo->lt[i];
        if (e->dt == kd->dt && e->tp == s->tp && e->mbs == s->mbs &&
            e->recompute == cp->recompute && e->zero == cp->zero_stage &&
            e->schedule == cp->schedule && e->sp == cp->sp && e->bw == kd->bw &&
            e->lat == kd->lat && e->hbw == kd->hbw)
            return e->t;
    }
    if (mo->lt_doubles + (size_t)m->nlayers > MEMO_LT_DOUBLES)
        memo_lt_clear(mo);
    if (mo->nlt == mo->caplt) {
        int nc = mo->caplt ? 2 * mo->caplt : 32;
        memo_lt *g = realloc(mo->lt, (size_t)nc * sizeof *g);
        if (g == NULL)
            return NULL;
        mo->lt = g;
        mo->caplt = nc;
    }
    e = &mo->lt[mo->nlt];
    e->t = malloc((size_t)m->nlayers * sizeof *e->t);
    if (e->t == NULL)
        return NULL;
    e->dt = kd->dt;
    e->tp = s->tp;
    e->mbs = s->mbs;
    e->recompute = cp->recompute;
    e->zero = cp->zero_stage;
    e->schedule = cp->schedule;
    e->sp = cp->sp;
    e->bw = kd->bw;
    e->lat = kd->lat;
    e->hbw = kd->hbw;
    for (l = 0; l < m->nlayers; l++) {
        cost_layer_time lt;
        cost_layer_time_of(m, prof, cp, kd->dt, l, s->tp, s->mbs, kd->bw, kd->lat,
                           kd->hbw, &lt);
        cost_rank_layer_adjust(m, cp, kd->dt, s, kd->rank, l, &lt);
        e->t[l] = lt.fwd + lt.bwd;
    }
    mo->nlt++;
    mo->lt_doubles += (size_t)m->nlayers;
    return e->t;
}

int search_assign_layers(const fmt_cluster *c, const fmt_model *m,
                         const fmt_profile *prof, const cost_params *cp0,
                         fmt_strategy *s, util_error *err)
{
    return search_assign_layers_for(c, m, prof, cp0, NULL, s, err);
}

int search_assign_layers_for(const fmt_cluster *c, const fmt_model *m,
                             const fmt_profile *prof, const cost_params *cp0,
                             const search_launcher *lc, fmt_strategy *s,
                             util_error *err)
{
    return search_assign_layers_memo(c, m, prof, cp0, lc, s, NULL, err);
}

int search_assign_layers_memo(const fmt_cluster *c, const fmt_model *m,
                              const fmt_profile *prof, const cost_params *cp0,
                              const search_launcher *lc, fmt_strategy *s,
                              search_memo *memo, util_error *err)
{
    int L = m->nlayers, k = s->pp, j, l, d, t, g, G, q, rc = UTIL_OK;
    double *tt, *e, *mem, *cap, *tg, *eg, *mg, *lm, *ls, obj, sum, msum;
    int *gs, *gb;
    /* per-rank times differ only with uneven shards or slowdowns */
    int shared = s->slow == NULL &&
                 !(s->tp_heads != NULL && s->tp_cols != NULL && s->tp > 1);
    search_dp_input in;
    cost_params cpv;
    const cost_params *cp = &cpv;
    search_memo *own = NULL;
    const memo_place *pl = NULL;
    search_scratch loc = {NULL, 0};
    size_t zk = (size_t)k, zl = (size_t)L, nd, ni;
    double *blk;

    if ((long long)k * L > SEARCH_MAX_ASSIGN_CELLS)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "%d stages x %d layers of model '%s' are %lld "
                              "cells, more than the %ld the layer assignment "
                              "holds: give the stage boundaries",
                              k, L, m->name, (long long)k * L,
                              (long)SEARCH_MAX_ASSIGN_CELLS);
    search_strategy_params(cp0, prof, s, &cpv);
    if (shared && memo == NULL && (memo = own = search_memo_create()) == NULL)
        goto nomem;
    /* one block reused across a search: one stage's layer times, cuts and
     * memory (tt, e, mem), lm, ls, cap, then the DP's input on groups
     * (tg, eg, mg; G <= L), then gs and gb */
    nd = 5 * zl + 1 + zk + 3 * zk * zl + zk;
    ni = zl + 1 + zk + 1;
    blk = search_scratch_get(memo != NULL ? &memo->sa : &loc,
                             nd * sizeof *blk + ni * sizeof *gs);
    if (blk == NULL)
        goto nomem;
    tt = blk;
    e = tt + zl;
    mem = e + zl + 1;
    lm = mem + zl;
    ls = lm + zl;
    cap = ls + zl;
    tg = cap + zk;
    eg = tg + zk * zl;
    mg = eg + zk * (zl + 1);
    gs = (int *)(blk + nd);
    gb = gs + zl + 1;
    if (lc != NULL && lc->active && lc->split != SEARCH_SPLIT_ANY)
        G = search_launcher_groups(m, s->vpp, gs); /* the launcher's boundaries */
    else
        G = s->vpp > 1 ? chunk_groups(m, s->vpp, gs) : param_groups(m, gs);
    if (s->vpp > 1 && G < k) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "model '%s' cannot give each of %d stages a "
                            "multiple of %d blocks", m->name, k, s->vpp);
        goto done;
    }
    if (G < k) {
        rc = util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                            "model '%s' has %d layers holding parameters, fewer "
                            "than the %d pipeline stages: a stage without "
                            "parameters cannot run (an optimizer per stage)",
                            m->name, G, k);
        goto done;
    }
    if (shared && (pl = memo_place_get(memo, c, cp, s)) == NULL)
        goto nomem;
    /* model state and stored activations per sample of each layer, the
     * same on every stage */
    for (l = 0; l < L; l++) {
        lm[l] = cost_layer_memory(m, cp, l, s->tp, s->dp, s->mbs, 0);
        ls[l] = cost_layer_stored(m, cp, l, s->tp);
    }
    for (j = 0; j < k; j++) {
        int inflight = cost_inflight(cp, j, s->pp, s->gas);
        double held = search_inflight(cp, s, j);
        /* memory: per-layer sums plus a bound of the rest */
        double over = memo_overhead(own != NULL ? NULL : memo, m, cp, s->tp, s->dp, s->mbs,
                                    j, s->pp, inflight, s->gas);
        /* layer times of the stage's slowest device */
        memset(tt, 0, zl * sizeof *tt);
        if (shared) {
            double v = pl->minfree[j] - over;
            for (q = pl->koff[j]; q < pl->koff[j + 1]; q++) {
                const double *kt = memo_lt_get(memo, m, prof, cp, s, &pl->kinds[q]);
                if (kt == NULL)
                    goto nomem;
                for (l = 0; l < L; l++)
                    if (kt[l] > tt[l])
                        tt[l] = kt[l];
            }
            /* the least of mem_bytes - over over the stage's devices */
            cap[j] = v < INFINITY ? v : INFINITY;
        } else {
            cap[j] = INFINITY;
            for (d = 0; d < s->dp; d++) {
                double bw, lat;
                cost_tp_ring(c, cp, s, j, d, &bw, &lat);
                for (t = 0; t < s->tp; t++) {
                    int dev = fmt_rank_device(s, j, d, t);
                    const fmt_device_type *dt = fmt_device(c, dev);
                    const fmt_node *node = &c->nodes[c->device_node[dev]];
                    for (l = 0; l < L; l++) {
                        cost_layer_time lt;
                        cost_layer_time_of(m, prof, cp, dt, l, s->tp, s->mbs, bw,
                                           lat, node->intra_bw * cp->intra_eff, &lt);
                        cost_rank_layer_adjust(m, cp, dt, s,
                                               j * s->tp * s->dp + d * s->tp + t, l,
                                               &lt);
                        if (lt.fwd + lt.bwd > tt[l])
                            tt[l] = lt.fwd + lt.bwd;
                    }
                    /* the derived runtime memory in place of the bound's */
                    double rt = cost_runtime_derived(cp)
                                    ? cost_runtime_memory(c, cp, s, j * s->tp * s->dp +
                                                          d * s->tp + t, NULL) -
                                          COST_RESERVE_UNKNOWN
                                    : 0.0;
                    if (dt->mem_bytes - over - rt < cap[j])
                        cap[j] = dt->mem_bytes - over - rt;
                }
            }
        }
        /* model state plus the activations of the micro-batches in
         * flight, interleaved or not (cost_rank_stage_memory's count) */
        for (l = 0; l < L; l++)
            mem[l] = lm[l] + (double)s->mbs * held * ls[l];
        if (cap[j] < 0.0)
            cap[j] = 0.0;
        /* cut costs: activation forward and gradient backward to the next
         * stage, on the worst link any replica/TP rank uses there, with
         * the concurrent cross-node flows sharing each NIC (none after
         * the last stage) */
        memset(e, 0, (zl + 1) * sizeof *e);
        if (j + 1 < k) {
            double bw, lat;
            if (pl != NULL) {
                bw = pl->cut_bw[j];
                lat = pl->cut_lat[j];
            } else {
                cost_cut_link(c, cp, s, j, &bw, &lat);
            }
            for (l = 1; l <= L; l++)
                e[l] = 2.0 * (lat + (double)s->mbs * m->layers[l - 1].out_bytes / bw);
        }
        /* the DP runs on the G groups: sums of their layers' times and
         * memory, cuts only before a group (identical when G = L) */
        for (g = 0; g < G; g++) {
            sum = 0.0;
            msum = 0.0;
            for (l = gs[g]; l < gs[g + 1]; l++) {
                sum += tt[l];
                msum += mem[l];
            }
            tg[j * G + g] = sum;
            mg[j * G + g] = msum;
            eg[j * (G + 1) + g] = e[gs[g]];
        }
        eg[j * (G + 1) + G] = 0.0;
    }
    in.L = G;
    in.k = k;
    in.gas = s->gas;
    in.t = tg;
    in.e = eg;
    in.mem = mg;
    in.cap = cap;
    /* memory checked as cost_evaluate counts it (search/fit.c) */
    rc = search_assign_fit(c, m, cp0, lc, s, &in, gs, gb, &obj,
                           memo != NULL ? &memo->sd : NULL, err);
    goto done;
nomem:
    rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
done:
    search_memo_destroy(own);
    free(loc.p);
    return rc;
}

