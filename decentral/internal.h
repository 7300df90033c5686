/* decentral/internal.h: what the DT-FM searchers share (not part of the
 * API in decentral.h): the search context, the partition state with its
 * incremental evaluator (decentral/state.c), the searchers' scratch and
 * the shared moves (decentral/search.c). */
#ifndef HETPLAN_DECENTRAL_INTERNAL_H
#define HETPLAN_DECENTRAL_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "decentral.h"

#define DTFM_HK_INNER_MAX 12   /* exact TSP inside the search up to this k */
#define DTFM_CACHE_BITS 16     /* memoised coarsened edges: 2^16 slots */
#define DTFM_TOL 1e-12         /* relative tolerance of "better" */
/* dtfm_evaluate calls left room for at the end of a time budget: the
 * search's final one, its caller's and a margin */
#define DTFM_FINAL_EVALS 2.5

/* One memoised edge of the coarsened graph. */
typedef struct dtfm_cache_slot {
    uint64_t ka, kb;         /* member-set hashes of the two groups, ka <= kb */
    double v;                /* eq. 3 value */
    double r;                /* tie-break value (edge_refined) */
} dtfm_cache_slot;

/* One search: the problem, its pair weights, the budget and the best
 * schedule so far. */
typedef struct dtfm_ctx {
    const dtfm_problem *p;
    const dtfm_search_params *sp;
    int n, k, g;
    double *wdp, *wpp;       /* n * n pair weights of eqs. 2 and 3 */
    const double *comp;      /* per-device compute or NULL */
    uint64_t *zob;           /* n random keys: group hash = XOR of members' */
    double *sub;             /* g * g scratch for eq. 3 */
    double *kl_aff;          /* (2 g)^2 scratch: Kernighan-Lin affinities 1 / w_dp
                                between two groups (g <= 256), else NULL */
    double *hk;              /* Held-Karp table for k <= DTFM_HK_INNER_MAX */
    int *tsp_order;          /* k scratch */
    double *mstkey;          /* k scratch */
    dtfm_cache_slot *cache;  /* 2^DTFM_CACHE_BITS slots */
    util_pcg32 rng;
    long evals;
    long gens;
    double t0;
    double deadline;         /* dtfm_now_s() at which the time budget ends; 0 = none */
    double build_s;          /* duration of one dtfm_evaluate, s (0 without a
                                time budget) */
    int stop;                /* budget exhausted */
    int timed_out;
    long stall;              /* effective stall limit, 0 = none */
    double next_report;      /* progress callback time */
    double best;             /* best cost so far */
    int *best_grp;           /* n */
    double best_at;
    double checkpoint_cost;
    int checkpoint_done;
    const char *phase;
    int lean;                /* GA: the budget buys few members (decentral/ga.c) */
} dtfm_ctx;

/* A partition and everything its cost is computed from. */
typedef struct dtfm_state {
    int *grp;                /* n: group of each device */
    int *mem;                /* k * g: members of each group */
    int *pos;                /* n: index of a device in its group's row */
    double *rs;              /* n: sum of w_dp to the other members */
    double *dp;              /* k: eq. 2 of each group */
    double *cm;              /* k: slowest compute in each group */
    uint64_t *h;             /* k: member-set hash */
    double *E;               /* k * k coarsened graph */
    double *R;               /* k * k tie-break edge values */
    double tsp;              /* PipelineP-Cost */
    double cost;             /* total */
    double sur;              /* tie-break: sum of eq. 2 over groups + sum of R */
} dtfm_state;

/* A move in progress: saved rows of the groups it touches. */
typedef struct dtfm_tx {
    int ntouched;
    int *touched;            /* k group ids */
    char *is_touched;        /* k flags */
    int *smem;               /* k * g saved member rows (by slot) */
    double *srs;             /* k * g saved row sums (by position) */
    double *sE;              /* k * k saved E rows */
    double *sR;              /* k * k saved R rows */
    double *sdp, *scm;       /* k */
    uint64_t *sh;            /* k */
    double stsp, scost, ssur;
    int edges_done;          /* 0 after an early exit: E rows of touched groups stale */
} dtfm_tx;

/* The searchers' state, transaction and scratch arrays. */
typedef struct dtfm_work {
    dtfm_state s;
    dtfm_tx t;
    int *pairs;
    int npairs;
    double *D;
    int *seq;
    char *locked;
    int *map2, *overlap, *size, *order;
    char *lock;              /* n */
    int *kseq;               /* n */
    int *fx, *fy;            /* k */
    double *gsum;            /* n: greedy clustering scratch */
} dtfm_work;

/* a < b beyond the relative tolerance */
static inline int better(double a, double b)
{
    return a < b - DTFM_TOL * (fabs(b) > 1.0 ? fabs(b) : 1.0);
}

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* (cost, surrogate) lexicographically below (cost0, sur0)? */
static inline int lex_better(double cost, double sur, double cost0,
                             double sur0)
{
    if (better(cost, cost0))
        return 1;
    if (better(cost0, cost))
        return 0;
    return better(sur, sur0);
}

/* ---- whole schedule (decentral/cost.c) ------------------------------- */

/* The eq. 2 and eq. 3 terms of devices i != j over the mean latency and
 * bandwidth of the two directions (the same value for (j, i);
 * decentral/problem.c). */
void dtfm_pair_weights(const dtfm_problem *p, size_t i, size_t j, double *wd,
                       double *wp);
/* Rows i0..i1-1 of dtfm_weights' tables (the same values): a fill that
 * can stop between rows. */
void dtfm_weights_rows(const dtfm_problem *p, double *w_dp, double *w_pp, int i0,
                       int i1);
/* dtfm_evaluate for a problem that passed dtfm_problem_check, with the
 * n * n tables of dtfm_weights, or with NULL tables the terms computed
 * from the latency and bandwidth (no n * n memory); the same result. */
int dtfm_evaluate_weights(const dtfm_problem *p, const double *w_dp,
                          const double *w_pp, const int *group_of,
                          dtfm_result *out, util_error *err);

/* The compute time of one tasklet (1/d_pp of the forward and backward of
 * per_tasklet sequences) on each of the n devices of GPU type type[i],
 * from m's layer times (NULL: the paper's GPT3-XL), once per type
 * (decentral/compute.c).  *bad = the first device of a type the
 * catalogue lacks (out filled before it), else -1. */
int dtfm_compute_times(const fmt_model *m, const char (*type)[32], int n,
                       double per_tasklet, int d_pp, double *out, int *bad,
                       util_error *err);

/* ---- context, state and evaluator (decentral/state.c) ---------------- */

double dtfm_now_s(void);
/* Has the time budget ended?  Sets c->stop and c->timed_out when it has:
 * the clock for loops that go long without an evaluation. */
int dtfm_out_of_time(dtfm_ctx *c);
/* Progress callback, at most every 0.25 s unless force. */
void dtfm_report(dtfm_ctx *c, int force);
int dtfm_state_alloc(dtfm_state *s, int n, int k, int g);
void dtfm_state_free(dtfm_state *s);
int dtfm_tx_alloc(dtfm_tx *t, int k, int g);
void dtfm_tx_free(dtfm_tx *t);
/* Rebuild everything from s->grp (which must be balanced). */
void dtfm_state_build(dtfm_ctx *c, dtfm_state *s);
/* A move: dtfm_tx_begin, one or more dtfm_tx_swap, dtfm_tx_eval, then
 * dtfm_tx_commit or dtfm_tx_rollback (dtfm_tx_keep_if_better evaluates
 * and decides). */
void dtfm_tx_begin(dtfm_tx *t, const dtfm_state *s);
/* Swap devices d and e (different groups) inside a transaction. */
void dtfm_tx_swap(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int d, int e);
/* Cost after the swaps of t; above bound it may stop early with
 * t->edges_done = 0 (then only dtfm_tx_rollback or dtfm_tx_commit). */
double dtfm_tx_eval(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, double bound);
void dtfm_tx_commit(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s);
void dtfm_tx_rollback(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s);
/* Keep the swaps applied in t when (cost, surrogate) improves; 1 = kept. */
int dtfm_tx_keep_if_better(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s);

/* ---- shared moves (decentral/search.c) ------------------------------- */

void dtfm_shuffle(util_pcg32 *rng, int *a, int n);
/* A random balanced partition. */
void dtfm_random_partition(dtfm_ctx *c, int *grp);
/* Full pair-swap descent (first improvement, with the tie-break). */
void dtfm_polish(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s);

/* ---- searchers ------------------------------------------------------- */

/* Hybrid GA (decentral/ga.c) with the paper's local search, or with
 * Kernighan-Lin local search when kl. */
int dtfm_run_ga(dtfm_ctx *c, dtfm_work *w, int kl, util_error *err);
/* Kernighan-Lin local search over the pairs of groups
 * (decentral/baselines.c). */
void dtfm_local_search_kl(dtfm_ctx *c, dtfm_tx *t, dtfm_state *s, int *pairs,
                          int npairs, double *D, int *seq, char *locked);
/* Simulated annealing and random assignment (decentral/baselines.c). */
void dtfm_run_sa(dtfm_ctx *c, dtfm_work *w);
void dtfm_run_random(dtfm_ctx *c, dtfm_work *w);
/* Every balanced partition (decentral/exact.c). */
void dtfm_run_exact(dtfm_ctx *c, dtfm_work *w);
/* The unknown keys of the scenario document root of file, by
 * fmt_check_keys: UTIL_OK, or the error in err under strict
 * (decentral/keys.c). */
int dtfm_scenario_keys(const char *file, const cJSON *root, util_error *err);

/* ---- region names (decentral/names.c) -------------------------------- */

/* An index of names[0 .. n - 1] (the regions of a cluster file, kept by
 * the caller); each lookup costs about one comparison. */
typedef struct dtfm_names {
    int *slot;              /* mask + 1 slots: a name's index, -1 = empty; owned */
    size_t mask;
    const char (*name)[64]; /* not owned */
} dtfm_names;

/* Room for n names, none added yet.  UTIL_ENOMEM. */
int dtfm_names_init(dtfm_names *ix, const char (*name)[64], int n);
/* The index of the name added equal to name, -1 if none. */
int dtfm_names_find(const dtfm_names *ix, const char *name);
/* Add name[i]: returns i, or the index of an equal name added before (i
 * is then not added). */
int dtfm_names_add(dtfm_names *ix, int i);
void dtfm_names_free(dtfm_names *ix);

#endif
