/* decentral/classes.c: exact DT-FM search over classes of interchangeable
 * devices (a region whose GPUs all share the same links).  A schedule is
 * then a sequence of group compositions (how many devices of each class
 * each pipeline stage holds); DataP-Cost (DT-FM eq. 2), the eq. 3
 * bottleneck between two stages and the compute term depend on the
 * compositions only.  Branch and bound over the sequences, by levels of
 * the largest eq. 2 value allowed, gives the optimum or, when the budget
 * ends, a lower bound (docs/decentralized.md, "Proving a schedule
 * optimal"). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CL_MAX 32            /* classes handled */
#define CL_MEMO_BITS 21      /* memoised stage-pair bottlenecks: 2^21 slots */
#define CL_TT_BITS 18        /* transposition table: 2^18 states */
#define CL_REL 1e-12         /* a schedule must beat the incumbent by this (relative) */

typedef struct cl_memo {
    uint64_t key;            /* (i + 1) << 32 | (j + 1), from i to j; 0 = empty */
    double v;
} cl_memo;

/* A state searched in full (transposition table). */
typedef struct cl_tt {
    uint64_t key;            /* hash of rem and last, odd; 0 = empty */
    int level;
    long last;               /* (last composition + 1) * 2 + fresh */
    double mx, acc;
    uint16_t rem[CL_MAX];
} cl_tt;

typedef struct cl_ctx {
    const dtfm_problem *p;
    const dtfm_prove_params *pp;
    int n, k, g, nc;
    int *cls;                /* n: class of each device */
    int size[CL_MAX];
    double wdp[CL_MAX][CL_MAX], wpp[CL_MAX][CL_MAX], comp[CL_MAX];
    long ncomp;
    unsigned char *x;        /* ncomp * nc compositions, eq. 2 ascending */
    double *dp;              /* ncomp: eq. 2 of each */
    double *cm;              /* ncomp: slowest compute of each */
    double *self;            /* ncomp: eq. 3 between two stages of the same composition */
    int ncl;                 /* single-linkage clusters of classes, the whole set left out */
    uint32_t cl_mask[2 * CL_MAX]; /* their classes */
    double cl_exit[2 * CL_MAX]; /* lightest eq. 3 weight from inside to outside
                                  (ascending) */
    uint16_t *ccnt;          /* ncomp * ncl: devices of each cluster in each composition */
    double tmin[CL_MAX];     /* lightest eq. 3 weight a device of the class can use */
    int tord[CL_MAX];        /* classes by tmin, descending */
    int near[CL_MAX][CL_MAX]; /* the other classes by eq. 3 weight, ascending */
    long first_with[CL_MAX]; /* first composition (eq. 2 order) holding the class */
    double w_min;            /* lightest eq. 3 edge between two stages */
    double w_change;         /* lightest eq. 3 edge between different compositions */
    double c_min;            /* smallest per-stage compute */
    long limit;              /* compositions allowed in this level */
    cl_memo *memo;
    cl_tt *tt;
    int level;               /* level number (transposition entries are per level) */
    long floor_idx;          /* compositions of earlier levels: 0..floor_idx-1 */
    double floor_dp;         /* dp[floor_idx] (0 in the first level) */
    long memo_used;
    double *sub;             /* g * g */
    double best;             /* incumbent cost */
    int *seq, *best_seq;     /* k compositions, path order */
    int found;
    long nodes;
    double deadline;
    int stop;
} cl_ctx;

/* Classes: d and e are interchangeable when their eq. 2 and eq. 3
 * weights to every other device and their compute times are equal. */
static int find_classes(cl_ctx *c, const double *wdp, const double *wpp)
{
    int n = c->n, d, e, x, rep[CL_MAX], q;

    c->nc = 0;
    for (d = 0; d < n; d++) {
        for (q = 0; q < c->nc; q++) {
            e = rep[q];
            if (c->p->compute && c->p->compute[d] != c->p->compute[e])
                continue;
            for (x = 0; x < n; x++) {
                size_t dx = (size_t)d * (size_t)n + (size_t)x,
                       ex = (size_t)e * (size_t)n + (size_t)x;
                if (x != d && x != e && (wdp[dx] != wdp[ex] || wpp[dx] != wpp[ex]))
                    break;
            }
            if (x == n)
                break;
        }
        if (q == c->nc) {
            if (c->nc == CL_MAX)
                return 0;
            rep[c->nc++] = d;
        }
        c->cls[d] = q;
    }
    for (q = 0; q < c->nc; q++) {
        c->size[q] = 0;
        c->comp[q] = c->p->compute ? c->p->compute[rep[q]] : 0.0;
        for (x = 0; x < c->nc; x++)
            c->wdp[q][x] = c->wpp[q][x] = DBL_MAX;
    }
    for (d = 0; d < n; d++)
        c->size[c->cls[d]]++;
    /* the class weights, and every pair checked against them */
    for (d = 0; d < n; d++)
        for (e = 0; e < n; e++) {
            int a = c->cls[d], b = c->cls[e];
            size_t de = (size_t)d * (size_t)n + (size_t)e;
            if (d == e)
                continue;
            if (c->wdp[a][b] == DBL_MAX) {
                c->wdp[a][b] = wdp[de];
                c->wpp[a][b] = wpp[de];
            } else if (c->wdp[a][b] != wdp[de] || c->wpp[a][b] != wpp[de]) {
                return 0;
            }
        }
    return 1;
}

/* Compositions: x[0..nc-1] with sum g and x[q] <= size[q]. */
static long count_comps(const cl_ctx *c, int q, int left, long cap)
{
    long t = 0;
    int v;

    if (q == c->nc - 1)
        return left <= c->size[q] ? 1 : 0;
    for (v = 0; v <= left && v <= c->size[q] && t <= cap; v++)
        t += count_comps(c, q + 1, left - v, cap);
    return t;
}

static void fill_comps(cl_ctx *c, int q, int left, unsigned char *cur, long *at)
{
    int v;

    if (q == c->nc - 1) {
        if (left <= c->size[q]) {
            cur[q] = (unsigned char)left;
            memcpy(c->x + (size_t)(*at)++ * (size_t)c->nc, cur, (size_t)c->nc);
        }
        return;
    }
    for (v = 0; v <= left && v <= c->size[q]; v++) {
        cur[q] = (unsigned char)v;
        fill_comps(c, q + 1, left - v, cur, at);
    }
}

/* DT-FM eq. 2 of one group: max over its devices of the sum of w_dp to
 * the other members; compute: its slowest device. */
static double comp_dp(const cl_ctx *c, const unsigned char *x, double *cmax)
{
    double worst = 0.0, cm = 0.0;
    int a, b;

    for (a = 0; a < c->nc; a++) {
        double s = 0.0;
        if (x[a] == 0)
            continue;
        for (b = 0; b < c->nc; b++) {
            int m = x[b] - (a == b);
            if (m > 0)
                s += m * c->wdp[a][b];
        }
        if (s > worst)
            worst = s;
        if (c->comp[a] > cm)
            cm = c->comp[a];
    }
    *cmax = cm;
    return worst;
}

/* DT-FM eq. 3 between stages of compositions i and j (memoised). */
static double bottleneck(cl_ctx *c, long i, long j)
{
    uint64_t key, h;
    const unsigned char *x, *y;
    int r, s, a, b, ia, jb;
    double v;

    /* one row (i) lies in consecutive slots: the search asks for the
     * edges from one stage to compositions in order */
    key = ((uint64_t)(i + 1) << 32) | (uint64_t)(j + 1);
    h = (mix64((uint64_t)i + 1) + (uint64_t)j) & ((1u << CL_MEMO_BITS) - 1);
    for (;;) {
        if (c->memo[h].key == key)
            return c->memo[h].v;
        if (c->memo[h].key == 0)
            break;
        h = (h + 1) & ((1u << CL_MEMO_BITS) - 1);
    }
    x = c->x + (size_t)i * (size_t)c->nc;
    y = c->x + (size_t)j * (size_t)c->nc;
    r = 0;
    for (a = 0; a < c->nc; a++)
        for (ia = 0; ia < x[a]; ia++, r++) {
            s = 0;
            for (b = 0; b < c->nc; b++)
                for (jb = 0; jb < y[b]; jb++, s++)
                    c->sub[r * c->g + s] = c->wpp[a][b];
        }
    v = dtfm_bottleneck(c->sub, c->g, NULL);
    if (++c->memo_used > (3L << CL_MEMO_BITS) / 4) { /* full: start again */
        memset(c->memo, 0, ((size_t)1 << CL_MEMO_BITS) * sizeof *c->memo);
        c->memo_used = 1;
        h = (mix64((uint64_t)i + 1) + (uint64_t)j) & ((1u << CL_MEMO_BITS) - 1);
    }
    c->memo[h].key = key;
    c->memo[h].v = v;
    return v;
}

/* eq. 3 between two stages of composition i. */
static double self_edge(cl_ctx *c, long i)
{
    if (c->self[i] < 0.0)
        c->self[i] = bottleneck(c, i, i);
    return c->self[i];
}

/* A lower bound on eq. 3 between compositions x and y, x != y, without
 * the matching: when x holds more devices of class a than y, one of them
 * is matched to a device of another class present in y (and the other
 * way round). */
static double edge_lb(const cl_ctx *c, long i, long j)
{
    const unsigned char *x = c->x + (size_t)i * (size_t)c->nc,
                        *y = c->x + (size_t)j * (size_t)c->nc;
    const uint16_t *cx = c->ccnt + (size_t)i * (size_t)c->ncl,
                   *cy = c->ccnt + (size_t)j * (size_t)c->ncl;
    double lb = 0.0;
    int a, t, b;

    /* clusters, as in future_extra; exit weights ascend with t */
    for (t = c->ncl - 1; t >= 0; t--)
        if (cx[t] != cy[t]) {
            lb = c->cl_exit[t];
            break;
        }
    for (a = 0; a < c->nc; a++) {
        const unsigned char *from = x[a] > y[a] ? y : x[a] < y[a] ? x : NULL;
        if (from == NULL)
            continue;
        for (t = 0; t < c->nc - 1; t++) {
            b = c->near[a][t];
            if (from[b] > 0) {
                if (c->wpp[a][b] > lb)
                    lb = c->wpp[a][b];
                break;
            }
        }
    }
    return lb;
}

/* Beyond m1 lightest edges, what the m1 edges still to come must cost
 * after a run of L stages of composition x, rem counted before the run.
 * A cluster A of classes whose device count differs between two
 * neighbouring stages forces an edge of at least its exit weight (one
 * of its devices is matched outside A).  The next edge changes
 * composition; when the devices of A left cannot be spread evenly over
 * the m1 stages, a later edge changes A's count too. */
static double future_extra(const cl_ctx *c, const int *remc, int L, long i, int m1)
{
    const uint16_t *cx = c->ccnt + (size_t)i * (size_t)c->ncl;
    double e1 = c->w_change, e2 = 0.0;
    int t;

    for (t = 0; t < c->ncl; t++) {
        int here = cx[t], left = remc[t] - L * here;
        if (left != m1 * here && c->cl_exit[t] > e1)
            e1 = c->cl_exit[t];
        if (left % m1 != 0 && c->cl_exit[t] > e2)
            e2 = c->cl_exit[t];
    }
    if (e2 > 0.0 && c->w_change + e2 - c->w_min > e1)
        return c->w_change + e2 - 2.0 * c->w_min;
    return e1 - c->w_min;
}

/* Another bound on the m1 edges to come: each stage left has its own
 * incoming edge (from the stage before it), at least the lightest weight
 * t_a any device of each class a it holds can use.  With the devices
 * left in descending t order, the stage holding the (j g)-th has an
 * incoming edge of at least that device's t (the j g + 1 first fill at
 * least j + 1 stages), as in dtfm_lower_bound. */
static double incoming(const cl_ctx *c, const int *rem, int L, const unsigned char *x,
                       int m1)
{
    double sum = 0.0;
    int t, seen = 0, j = 0;

    for (t = 0; t < c->nc && j < m1; t++) {
        int a = c->tord[t], left = rem[a] - L * x[a];
        /* devices seen .. seen + left - 1 are of class a */
        while (j < m1 && j * c->g < seen + left) {
            sum += c->tmin[a];
            j++;
        }
        seen += left;
    }
    return sum;
}

/* Was this state (devices left, last composition) searched in this
 * level from an eq. 2 maximum and an accumulated cost no larger?  Then
 * every completion from here costs at least as much as one already
 * searched. */
static cl_tt *tt_slot(cl_ctx *c, const int *rem, long id, uint64_t *key)
{
    uint64_t h = mix64((uint64_t)(id + 1) * 0x9e3779b97f4a7c15ULL);
    int q;

    for (q = 0; q < c->nc; q++)
        h = mix64(h ^ ((uint64_t)(unsigned)rem[q] << 8 | (uint64_t)q));
    *key = h | 1;
    return &c->tt[h >> (64 - CL_TT_BITS)];
}

static int tt_same(const cl_ctx *c, const cl_tt *e, uint64_t key, const int *rem,
                   long id)
{
    int q;

    if (e->key != key || e->level != c->level || e->last != id)
        return 0;
    for (q = 0; q < c->nc; q++)
        if (e->rem[q] != rem[q])
            return 0;
    return 1;
}

/* Place the next run of equal stages.  rem: devices of each class left;
 * m stages left; last: composition of the previous stage (-1 at the
 * start); mx: largest eq. 2 so far; acc: eq. 3 edges and compute so far. */
static void search(cl_ctx *c, int *rem, int m, long last, int fresh, double mx,
                   double acc)
{
    long i, id = (last + 1) * 2 + fresh;
    int q, L, placed = c->k - m;
    uint64_t key;
    cl_tt *slot;
    int remc[2 * CL_MAX];

    if (c->stop)
        return;
    /* a node scans up to every composition: the clock is read at each */
    c->nodes++;
    if ((c->pp->max_nodes > 0 && c->nodes > c->pp->max_nodes) ||
        (c->deadline > 0 && dtfm_now_s() >= c->deadline)) {
        c->stop = 1;
        return;
    }
    /* sequences of the compositions of earlier levels only were searched
     * there: one still to come has eq. 2 >= floor */
    if (!fresh && c->floor_dp > mx)
        mx = c->floor_dp;
    slot = tt_slot(c, rem, id, &key);
    if (tt_same(c, slot, key, rem, id) && slot->mx <= mx && slot->acc <= acc)
        return;
    for (L = 0; L < c->ncl; L++) { /* devices left in each cluster */
        remc[L] = 0;
        for (q = 0; q < c->nc; q++)
            if (c->cl_mask[L] >> q & 1u)
                remc[L] += rem[q];
    }
    for (i = 0; i < c->limit && !c->stop; i++) {
        const unsigned char *x = c->x + (size_t)i * (size_t)c->nc;
        double mx1, edge, cut = c->best * (1.0 - CL_REL);
        int maxl = m;

        if (i == last)
            continue;
        /* large stages make each matching slow: the clock here too */
        if ((i & 15) == 15 && c->deadline > 0 && dtfm_now_s() >= c->deadline) {
            c->stop = 1;
            break;
        }
        mx1 = mx > c->dp[i] ? mx : c->dp[i];
        /* compositions are in eq. 2 order: the rest cannot do better */
        if (mx1 + acc + (last >= 0 ? c->w_change : 0.0) +
                (m - 1) * c->w_min + m * c->c_min >= cut)
            break;
        for (q = 0; q < c->nc && x[q] <= rem[q]; q++)
            ;
        if (q < c->nc)
            continue;
        for (q = 0; q < c->nc; q++)
            if (x[q] > 0 && rem[q] < maxl * x[q])
                maxl = rem[q] / x[q];
        if (last >= 0 &&
            mx1 + acc + edge_lb(c, last, i) +
                    (m - 1) * c->w_min + m * c->c_min >= cut)
            continue;
        edge = last >= 0 ? bottleneck(c, last, i) : 0.0;
        for (L = maxl; L >= 1; L--) {
            int m1 = m - L, none = 0;
            double acc1 = acc + edge + (L > 1 ? (L - 1) * self_edge(c, i) : 0.0) +
                          L * c->cm[i], lb, mx2 = mx1;

            for (q = 0; q < c->nc; q++) {
                int left = rem[q] - L * x[q];
                /* a stage must hold the class: one allowed in this level */
                if (left == 0)
                    continue;
                if (c->first_with[q] >= c->limit)
                    none = 1;
                else if (c->dp[c->first_with[q]] > mx2)
                    mx2 = c->dp[c->first_with[q]];
            }
            if (none)
                continue;
            lb = mx2 + acc1;
            if (m1 > 0) {
                double f1 = m1 * c->w_min + future_extra(c, remc, L, i, m1),
                       f2 = incoming(c, rem, L, x, m1);
                lb += m1 * c->c_min + (f1 > f2 ? f1 : f2);
            }
            if (lb >= cut)
                continue;
            for (q = 0; q < L; q++)
                c->seq[placed + q] = (int)i;
            if (m1 == 0) {
                if (!fresh && i < c->floor_idx)
                    continue;
                c->best = lb;
                memcpy(c->best_seq, c->seq, (size_t)c->k * sizeof *c->seq);
                c->found = 1;
                cut = c->best * (1.0 - CL_REL);
                continue;
            }
            for (q = 0; q < c->nc; q++)
                rem[q] -= L * x[q];
            search(c, rem, m1, i, fresh || i >= c->floor_idx, mx1, acc1);
            for (q = 0; q < c->nc; q++)
                rem[q] += L * x[q];
            cut = c->best * (1.0 - CL_REL);
        }
    }
    if (!c->stop) { /* searched in full: remember it */
        slot->key = key;
        slot->level = c->level;
        slot->last = id;
        slot->mx = mx;
        slot->acc = acc;
        for (q = 0; q < c->nc; q++)
            slot->rem[q] = (uint16_t)rem[q];
    }
}

typedef struct cl_key {
    double dp;
    long idx;
} cl_key;

static int cmp_key(const void *a, const void *b)
{
    const cl_key *x = a, *y = b;
    if (x->dp != y->dp)
        return (x->dp > y->dp) - (x->dp < y->dp);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sort compositions by eq. 2 (enumeration order as tie-break). */
static int sort_comps(cl_ctx *c)
{
    long i;
    cl_key *key = malloc((size_t)c->ncomp * sizeof *key);
    unsigned char *x2 = malloc((size_t)c->ncomp * (size_t)c->nc);
    double *cm2 = malloc((size_t)c->ncomp * sizeof *cm2);

    if (!key || !x2 || !cm2) {
        free(key);
        free(x2);
        free(cm2);
        return -1;
    }
    for (i = 0; i < c->ncomp; i++) {
        key[i].dp = c->dp[i];
        key[i].idx = i;
    }
    qsort(key, (size_t)c->ncomp, sizeof *key, cmp_key);
    for (i = 0; i < c->ncomp; i++) {
        memcpy(x2 + (size_t)i * (size_t)c->nc, c->x + (size_t)key[i].idx * (size_t)c->nc,
               (size_t)c->nc);
        c->dp[i] = key[i].dp;
        cm2[i] = c->cm[key[i].idx];
    }
    free(c->x);
    free(c->cm);
    free(key);
    c->x = x2;
    c->cm = cm2;
    return 0;
}

void dtfm_prove_params_init(dtfm_prove_params *pp)
{
    memset(pp, 0, sizeof *pp);
    pp->max_compositions = 200000;
}

void dtfm_proof_free(dtfm_proof *r)
{
    if (r == NULL)
        return;
    free(r->group_of);
    memset(r, 0, sizeof *r);
}

static void cl_free(cl_ctx *c)
{
    free(c->cls);
    free(c->x);
    free(c->dp);
    free(c->cm);
    free(c->self);
    free(c->memo);
    free(c->tt);
    free(c->ccnt);
    free(c->sub);
    free(c->seq);
    free(c->best_seq);
}

/* Single-linkage clusters (Kruskal over the eq. 3 class weights): when
 * a cluster merges into a larger one through weight w, no weight below w
 * leaves it, so w is its exit weight. */
static void clusters(cl_ctx *c)
{
    int comp[CL_MAX], a, b, q;
    uint32_t mask[CL_MAX];

    c->ncl = 0;
    for (a = 0; a < c->nc; a++) {
        comp[a] = a;
        mask[a] = 1u << a;
    }
    for (;;) {
        double w = DBL_MAX;
        int ba = -1, bb = -1;
        for (a = 0; a < c->nc; a++)
            for (b = 0; b < c->nc; b++)
                if (comp[a] != comp[b] && c->wpp[a][b] < w) {
                    w = c->wpp[a][b];
                    ba = comp[a];
                    bb = comp[b];
                }
        if (ba < 0)
            break;
        /* both clusters leave through w */
        c->cl_mask[c->ncl] = mask[ba];
        c->cl_exit[c->ncl++] = w;
        c->cl_mask[c->ncl] = mask[bb];
        c->cl_exit[c->ncl++] = w;
        mask[ba] |= mask[bb];
        for (q = 0; q < c->nc; q++)
            if (comp[q] == bb)
                comp[q] = ba;
    }
}

/* Set up the compositions and the bounds the search uses; 0 when the
 * instance has no usable class structure, -1 out of memory. */
static int cl_setup(cl_ctx *c, const double *wdp, const double *wpp)
{
    unsigned char cur[CL_MAX];
    long i, at = 0;
    int a, b;

    if (!find_classes(c, wdp, wpp))
        return 0;
    for (a = 0; a < c->nc; a++) /* compositions are stored in bytes */
        if (c->size[a] > 65535 || c->g > 255)
            return 0;
    c->ncomp = count_comps(c, 0, c->g, c->pp->max_compositions);
    if (c->ncomp > c->pp->max_compositions)
        return 0;
    c->x = malloc((size_t)c->ncomp * (size_t)c->nc);
    c->dp = malloc((size_t)c->ncomp * sizeof *c->dp);
    c->cm = malloc((size_t)c->ncomp * sizeof *c->cm);
    c->self = malloc((size_t)c->ncomp * sizeof *c->self);
    c->memo = calloc((size_t)1 << CL_MEMO_BITS, sizeof *c->memo);
    c->tt = calloc((size_t)1 << CL_TT_BITS, sizeof *c->tt);
    c->sub = malloc((size_t)c->g * (size_t)c->g * sizeof *c->sub);
    c->seq = malloc((size_t)c->k * sizeof *c->seq);
    c->best_seq = malloc((size_t)c->k * sizeof *c->best_seq);
    if (!c->x || !c->dp || !c->cm || !c->self || !c->memo || !c->tt || !c->sub || !c->seq ||
        !c->best_seq)
        return -1;
    fill_comps(c, 0, c->g, cur, &at);
    for (i = 0; i < c->ncomp; i++)
        c->dp[i] = comp_dp(c, c->x + (size_t)i * (size_t)c->nc, &c->cm[i]);
    if (sort_comps(c) != 0)
        return -1;
    for (a = 0; a < c->nc; a++)
        c->first_with[a] = c->ncomp;
    c->c_min = DBL_MAX;
    for (i = 0; i < c->ncomp; i++) {
        const unsigned char *x = c->x + (size_t)i * (size_t)c->nc;
        c->self[i] = -1.0; /* computed when first needed */
        for (a = 0; a < c->nc; a++)
            if (x[a] > 0 && c->first_with[a] == c->ncomp)
                c->first_with[a] = i;
        if (c->cm[i] < c->c_min)
            c->c_min = c->cm[i];
    }
    for (a = 0; a < c->nc; a++) { /* near[a]: insertion sort by weight */
        int t = 0, u;
        for (b = 0; b < c->nc; b++) {
            if (b == a)
                continue;
            for (u = t++; u > 0 && c->wpp[a][c->near[a][u - 1]] > c->wpp[a][b]; u--)
                c->near[a][u] = c->near[a][u - 1];
            c->near[a][u] = b;
        }
    }
    clusters(c);
    c->ccnt = malloc((size_t)c->ncomp * (size_t)(c->ncl > 0 ? c->ncl : 1) * sizeof *c->ccnt);
    if (c->ccnt == NULL)
        return -1;
    for (i = 0; i < c->ncomp; i++) {
        const unsigned char *x = c->x + (size_t)i * (size_t)c->nc;
        int t;
        for (t = 0; t < c->ncl; t++) {
            int sum = 0;
            for (a = 0; a < c->nc; a++)
                if (c->cl_mask[t] >> a & 1u)
                    sum += x[a];
            c->ccnt[(size_t)i * (size_t)c->ncl + (size_t)t] = (uint16_t)sum;
        }
    }
    for (a = 0; a < c->nc; a++) {
        int u;
        c->tmin[a] = c->size[a] > 1 ? c->wpp[a][a] : DBL_MAX;
        for (b = 0; b < c->nc; b++)
            if (b != a && c->wpp[a][b] < c->tmin[a])
                c->tmin[a] = c->wpp[a][b];
        for (u = a; u > 0 && c->tmin[c->tord[u - 1]] < c->tmin[a]; u--)
            c->tord[u] = c->tord[u - 1];
        c->tord[u] = a;
    }
    c->w_min = c->w_change = DBL_MAX;
    for (a = 0; a < c->nc; a++)
        for (b = 0; b < c->nc; b++) {
            if (a != b && c->wpp[a][b] < c->w_change)
                c->w_change = c->wpp[a][b];
            if ((a != b || c->size[a] > 1) && c->wpp[a][b] < c->w_min)
                c->w_min = c->wpp[a][b];
        }
    return 1;
}

/* Lower bound on the schedules not searched once the compositions
 * before done were: each holds a stage of eq. 2 >= dp[done]; all its
 * stages have one composition (the one with size / d_pp of each class,
 * whose cost is known) or its path changes composition at least once. */
static double level_bound(cl_ctx *c, long done)
{
    double lb = c->dp[done] + c->w_change + (c->k - 2) * c->w_min + c->k * c->c_min;
    long i;
    int q;

    if (c->k < 2)
        return c->dp[done] + c->k * c->c_min;
    for (i = done; i < c->ncomp; i++) {
        const unsigned char *x = c->x + (size_t)i * (size_t)c->nc;
        for (q = 0; q < c->nc && x[q] * c->k == c->size[q]; q++)
            ;
        if (q == c->nc) {
            double u = c->dp[i] + (c->k - 1) * self_edge(c, i) + c->k * c->cm[i];
            return u < lb ? u : lb;
        }
    }
    return lb;
}

int dtfm_prove(const dtfm_problem *p, const dtfm_prove_params *pp,
               dtfm_proof *out, util_error *err)
{
    cl_ctx c;
    dtfm_bound b;
    size_t nn = (size_t)p->n * (size_t)p->n;
    double *wdp = NULL, *wpp = NULL, t0 = dtfm_now_s(), next = 0.0;
    int rc, st, rem[CL_MAX], q;
    long done = 0;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    out->best_s = pp->upper_s > 0 ? pp->upper_s : HUGE_VAL;
    if ((rc = dtfm_lower_bound(p, &b, err)) != UTIL_OK)
        return rc;
    out->lower_s = b.total_s;
    c.p = p;
    c.pp = pp;
    c.n = p->n;
    c.k = p->d_pp;
    c.g = p->d_dp;
    c.best = out->best_s;
    c.deadline = pp->seconds > 0 ? t0 + pp->seconds : 0.0;
    wdp = malloc(nn * sizeof *wdp);
    wpp = malloc(nn * sizeof *wpp);
    c.cls = malloc((size_t)p->n * sizeof *c.cls);
    if (!wdp || !wpp || !c.cls) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    dtfm_weights(p, wdp, wpp);
    st = cl_setup(&c, wdp, wpp);
    if (st < 0) {
        rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
        goto done;
    }
    rc = UTIL_OK;
    if (st == 0)
        goto done;
    out->classes = c.nc;
    out->compositions = c.ncomp;
    /* levels: schedules whose stages all have eq. 2 <= dp[limit - 1];
     * twice as many compositions each level */
    for (c.limit = c.ncomp < 8 ? c.ncomp : 8;; c.limit *= 2) {
        if (c.limit > c.ncomp)
            c.limit = c.ncomp;
        while (c.limit < c.ncomp && c.dp[c.limit] == c.dp[c.limit - 1])
            c.limit++;
        for (q = 0; q < c.nc; q++)
            rem[q] = c.size[q];
        c.level++;
        search(&c, rem, c.k, -1, 0, 0.0, 0.0);
        c.floor_idx = c.limit;
        c.floor_dp = c.limit < c.ncomp ? c.dp[c.limit] : DBL_MAX;
        if (c.stop)
            break;
        out->level_s = c.dp[c.limit - 1];
        done = c.limit;
        if (c.limit == c.ncomp)
            break;
        next = level_bound(&c, c.limit);
        if (next >= c.best * (1.0 - CL_REL))
            break;
    }
    out->nodes = c.nodes;
    out->complete = !c.stop;
    if (c.found) {
        dtfm_result r;
        int *fill = calloc((size_t)c.nc, sizeof *fill), d, j;
        out->group_of = malloc((size_t)p->n * sizeof *out->group_of);
        if (!fill || !out->group_of) {
            free(fill);
            rc = util_error_set(err, UTIL_ENOMEM, "", "", "out of memory");
            goto done;
        }
        /* stage j takes x[a] devices of class a, devices in order */
        for (d = 0; d < p->n; d++) {
            int a = c.cls[d];
            for (j = 0; j < c.k; j++) {
                const unsigned char *x = c.x + (size_t)c.best_seq[j] * (size_t)c.nc;
                int before = 0, jj;
                for (jj = 0; jj < j; jj++)
                    before += c.x[(size_t)c.best_seq[jj] * (size_t)c.nc + (size_t)a];
                if (fill[a] < before + x[a])
                    break;
            }
            out->group_of[d] = j;
            fill[a]++;
        }
        free(fill);
        if ((rc = dtfm_evaluate(p, out->group_of, &r, err)) != UTIL_OK)
            goto done;
        out->best_s = r.total_s;
        dtfm_result_free(&r);
    }
    if (out->complete) {
        out->lower_s = out->best_s < c.best ? out->best_s : c.best;
    } else {
        next = level_bound(&c, done);
        if (next > c.best)
            next = c.best;
        if (next > out->lower_s)
            out->lower_s = next;
    }
done:
    out->elapsed_s = dtfm_now_s() - t0;
    cl_free(&c);
    free(wdp);
    free(wpp);
    if (rc != UTIL_OK)
        dtfm_proof_free(out);
    return rc;
}
