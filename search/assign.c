/* search/assign.c: the best layer assignment of a strategy whose
 * degrees, micro-batch size and ranks are set: per-layer times of each
 * stage's slowest device (shared by identical devices), memory per layer
 * and cut costs from the cost model, then the DP of search/dp.c. */
#include <math.h>
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
    int l, b = 0, g = 0;

    if (v < 2 || search_blocks(m) % v != 0 || search_blocks(m) == 0)
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

/* Layer times of one kind of device at the strategy's tp and mbs:
 * devices of one type on TP rings of equal bandwidth, latency and node
 * bandwidth share them, so a stage costs O(L) per kind, not per device. */
typedef struct lt_kind {
    const fmt_device_type *dt;
    double bw, lat, hbw;
    int stamp;              /* last stage whose maximum took it */
    double *t;              /* L fwd + bwd times */
} lt_kind;

typedef struct lt_cache {
    lt_kind *k;
    int n, cap, last;
} lt_cache;

static void lt_cache_free(lt_cache *c)
{
    int i;

    for (i = 0; i < c->n; i++)
        free(c->k[i].t);
    free(c->k);
}

/* The kind of (dt, ring, node bandwidth), computed on first use; NULL
 * when out of memory. */
static lt_kind *lt_cache_get(lt_cache *c, const fmt_model *m,
                             const fmt_profile *prof, const cost_params *cp,
                             const fmt_strategy *s, const fmt_device_type *dt,
                             int dev, double bw, double lat, double hbw)
{
    lt_kind *k;
    int i, l;

    if (c->last < c->n) {
        k = &c->k[c->last];
        if (k->dt == dt && k->bw == bw && k->lat == lat && k->hbw == hbw)
            return k;
    }
    for (i = 0; i < c->n; i++) {
        k = &c->k[i];
        if (k->dt == dt && k->bw == bw && k->lat == lat && k->hbw == hbw) {
            c->last = i;
            return k;
        }
    }
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 8;
        lt_kind *g = realloc(c->k, (size_t)nc * sizeof *g);
        if (g == NULL)
            return NULL;
        c->k = g;
        c->cap = nc;
    }
    k = &c->k[c->n];
    k->t = malloc((size_t)m->nlayers * sizeof *k->t);
    if (k->t == NULL)
        return NULL;
    k->dt = dt;
    k->bw = bw;
    k->lat = lat;
    k->hbw = hbw;
    k->stamp = -1;
    for (l = 0; l < m->nlayers; l++) {
        cost_layer_time lt;
        cost_layer_time_of(m, prof, cp, dt, l, s->tp, s->mbs, bw, lat, hbw, &lt);
        cost_rank_layer_adjust(m, cp, dt, s, dev, l, &lt);
        k->t[l] = lt.fwd + lt.bwd;
    }
    c->last = c->n++;
    return k;
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
    int L = m->nlayers, k = s->pp, j, l, d, t, g, G, rc = UTIL_OK;
    double *tt = NULL, *e = NULL, *mem = NULL, *cap = NULL, obj;
    double *tg = NULL, *eg = NULL, *mg = NULL;
    int *gs = NULL, *gb = NULL;
    /* per-rank times differ only with uneven shards or slowdowns */
    int shared = s->slow == NULL &&
                 !(s->tp_heads != NULL && s->tp_cols != NULL && s->tp > 1);
    search_dp_input in;
    cost_params cpv;
    const cost_params *cp = &cpv;
    lt_cache cache;

    memset(&cache, 0, sizeof cache);
    search_strategy_params(cp0, prof, s, &cpv);
    tt = calloc((size_t)k * (size_t)L, sizeof *tt);
    e = calloc((size_t)k * ((size_t)L + 1), sizeof *e);
    mem = calloc((size_t)k * (size_t)L, sizeof *mem);
    cap = calloc((size_t)k, sizeof *cap);
    gs = calloc((size_t)L + 1, sizeof *gs);
    gb = calloc((size_t)k + 1, sizeof *gb);
    if (!tt || !e || !mem || !cap || !gs || !gb) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
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
    for (j = 0; j < k; j++) {
        int inflight = cost_inflight(cp, j, s->pp, s->gas);
        double held = search_inflight(cp, s, j);
        /* memory: per-layer sums plus a bound of the rest */
        double over = cost_memory_overhead_bound(m, cp, s->tp, s->mbs, j, s->pp,
                                                 inflight, s->gas);
        cap[j] = INFINITY;
        for (d = 0; d < s->dp; d++) {
            double bw, lat;
            cost_tp_ring(c, cp, s, j, d, &bw, &lat);
            for (t = 0; t < s->tp; t++) {
                int dev = fmt_rank_device(s, j, d, t);
                const fmt_device_type *dt = fmt_device(c, dev);
                const fmt_node *node = &c->nodes[c->device_node[dev]];
                if (shared) {
                    lt_kind *kd = lt_cache_get(&cache, m, prof, cp, s, dt, dev, bw,
                                               lat, node->intra_bw * cp->intra_eff);
                    if (kd == NULL) {
                        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL,
                                            "out of memory");
                        goto done;
                    }
                    if (kd->stamp != j) {
                        kd->stamp = j;
                        for (l = 0; l < L; l++)
                            if (kd->t[l] > tt[j * L + l])
                                tt[j * L + l] = kd->t[l];
                    }
                } else {
                    for (l = 0; l < L; l++) {
                        cost_layer_time lt;
                        cost_layer_time_of(m, prof, cp, dt, l, s->tp, s->mbs, bw,
                                           lat, node->intra_bw * cp->intra_eff, &lt);
                        cost_rank_layer_adjust(m, cp, dt, s, dev, l, &lt);
                        if (lt.fwd + lt.bwd > tt[j * L + l])
                            tt[j * L + l] = lt.fwd + lt.bwd;
                    }
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
        /* model state plus the activations of the micro-batches in
         * flight, interleaved or not (cost_rank_stage_memory's count) */
        for (l = 0; l < L; l++)
            mem[j * L + l] = cost_layer_memory(m, cp, l, s->tp, s->dp, s->mbs, 0) +
                             (double)s->mbs * held *
                                 cost_layer_stored(m, cp, l, s->tp);
        if (cap[j] < 0.0)
            cap[j] = 0.0;
    }
    /* cut costs: activation forward and gradient backward between the
     * stages, on the worst link any replica/TP rank uses there, with the
     * concurrent cross-node flows sharing each NIC */
    for (j = 0; j + 1 < k; j++) {
        double bw, lat;
        cost_cut_link(c, cp, s, j, &bw, &lat);
        for (l = 1; l <= L; l++)
            e[j * (L + 1) + l] =
                2.0 * (lat + (double)s->mbs * m->layers[l - 1].out_bytes / bw);
    }
    /* the DP runs on the G groups: sums of their layers' times and
     * memory, cuts only before a group (identical when G = L) */
    {
        size_t zk = (size_t)(k > 0 ? k : 1), zg = (size_t)(G > 0 ? G : 1);
        tg = calloc(zk * zg, sizeof *tg);
        eg = calloc(zk * (zg + 1), sizeof *eg);
        mg = calloc(zk * zg, sizeof *mg);
    }
    if (!tg || !eg || !mg) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (j = 0; j < k; j++)
        for (g = 0; g < G; g++) {
            for (l = gs[g]; l < gs[g + 1]; l++) {
                tg[j * G + g] += tt[j * L + l];
                mg[j * G + g] += mem[j * L + l];
            }
            eg[j * (G + 1) + g] = e[j * (L + 1) + gs[g]];
        }
    in.L = G;
    in.k = k;
    in.gas = s->gas;
    in.t = tg;
    in.e = eg;
    in.mem = mg;
    in.cap = cap;
    rc = search_launcher_dp(&in, lc, s->vpp, gb, &obj, err);
    if (rc == UTIL_OK) /* group boundaries back to layer boundaries */
        for (j = 0; j <= k; j++)
            s->bounds[j] = gs[gb[j]];
done:
    lt_cache_free(&cache);
    free(tt);
    free(e);
    free(mem);
    free(cap);
    free(tg);
    free(eg);
    free(mg);
    free(gs);
    free(gb);
    return rc;
}

