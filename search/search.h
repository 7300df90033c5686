/* search/search.h: everything that chooses a strategy: AMP's pipeline
 * layer-assignment dynamic program, placement rules, AMP's Algorithm 1
 * enumeration, the Megatron baseline and the uneven TP shard planner.
 * Searchers call the cost model; they never duplicate it.  No I/O. */
#ifndef HETPLAN_SEARCH_H
#define HETPLAN_SEARCH_H

#include <stdint.h>

#include "costmodel.h"

/* ---- pipeline layer assignment (AMP section 3.5) --------------------- */

/* Input of the assignment problem: L layers into k consecutive,
 * non-empty stages.  Objective (AMP eq. 5):
 *   (gas - 1) * max_j t_j + sum_j t_j + sum_j e_j
 * with t_j the time of stage j's layers on stage j's device and e_j the
 * cost of the cut between stage j and j + 1.  Optional memory: the
 * layers of stage j must satisfy sum mem[j][l] <= cap[j]. */
typedef struct search_dp_input {
    int L;                  /* layers (>= k) */
    int k;                  /* stages (>= 1) */
    int gas;                /* micro-batches (>= 1) */
    const double *t;        /* k * L: t[j * L + l], time of layer l on stage j (>= 0) */
    const double *e;        /* (k - 1) * (L + 1): e[j * (L + 1) + i], cut before layer i
                               between stage j and j + 1; NULL = no cost */
    const double *mem;      /* k * L: mem[j * L + l] (>= 0); NULL = no memory limit */
    const double *cap;      /* k: memory available to stage j; NULL = no limit */
} search_dp_input;

/* Exact minimum of the objective.  bounds gets k + 1 entries
 * (bounds[0] = 0, bounds[k] = L); *objective gets its value.
 * UTIL_EINFEASIBLE when no assignment satisfies memory (or L < k).
 * Runs in O(k * L) per distinct bottleneck value it visits, instead of
 * AMP's O(k * L^4); see docs/algorithms.md. */
int search_dp_assign(const search_dp_input *in, int *bounds,
                     double *objective, util_error *err);
/* Objective of a given assignment (bounds: k + 1 entries); memory is
 * not checked. */
double search_dp_objective(const search_dp_input *in, const int *bounds);
/* 1 when the assignment satisfies the memory limits. */
int search_dp_fits(const search_dp_input *in, const int *bounds);
/* Exhaustive search over all C(L-1, k-1) assignments, for tests and
 * benchmarks only.  Same contract as search_dp_assign. */
int search_dp_bruteforce(const search_dp_input *in, int *bounds,
                         double *objective, util_error *err);

/* ---- placement ------------------------------------------------------- */

enum search_placement {
    SEARCH_PLACE_MEGATRON = 0,  /* ranks fill devices in file order: TP, then DP, then PP */
    SEARCH_PLACE_FASTEST,       /* same, nodes re-ordered fastest device type first */
    SEARCH_PLACE_NPLACEMENTS
};
/* "megatron", "fastest-first"; NULL when out of range. */
const char *search_placement_name(int rule);
/* Rule from name, -1 when unknown. */
int search_placement_from_name(const char *name);
/* Fill s->ranks (already allocated for its degrees) by rule. */
int search_place(const fmt_cluster *c, int rule, fmt_strategy *s,
                 util_error *err);

/* ---- progress of long searches --------------------------------------- */

/* What a search reports while it runs.  Libraries never print: the
 * caller's callback decides (the CLI draws it on stderr on a terminal). */
typedef struct search_progress {
    double elapsed_s;       /* since the search started */
    long evaluated;         /* candidates (or trials) scored so far */
    long total;             /* expected total, 0 when unknown */
    double best_s;          /* best cost so far, s; < 0 when none yet */
    const char *phase;      /* short name of what runs, e.g. "enumerate", "ga" */
} search_progress;

/* Called from the searching thread at most a few times per second. */
typedef void (*search_progress_fn)(void *ctx, const search_progress *p);

/* ---- whole search (AMP Algorithm 1) ---------------------------------- */

enum search_method {
    SEARCH_METHOD_AMP = 0,      /* every degree, mbs, placement; DP layer assignment */
    SEARCH_METHOD_MEGATRON      /* AMP section 4.1 heuristic baseline */
};

typedef struct search_params {
    int method;             /* enum search_method (AMP) */
    int global_batch;       /* global batch size (required, > 0) */
    int top_k;              /* strategies kept, best first (5) */
    int max_tp;             /* largest TP degree tried, 0 = up to the largest node (0) */
    int max_mbs;            /* largest micro-batch size tried, 0 = no limit (0) */
    unsigned placements;    /* bit mask of enum search_placement rules tried (all) */
    int keep_infeasible;    /* 1: also return strategies that do not fit memory (0) */
    int uneven_tp;          /* 1: uneven shards for TP groups that mix device types (1) */
    int tp_granule;         /* MLP columns of uneven shards come in multiples of this (64) */
    search_progress_fn progress; /* progress callback, NULL = none (NULL) */
    void *progress_ctx;     /* passed to progress (NULL) */
    double time_limit_s;    /* stop after this many seconds, keeping the best
                               so far (out->timed_out); <= 0 = none (0) */
} search_params;

void search_params_init(search_params *p);

/* One ranked strategy. */
typedef struct search_candidate {
    fmt_strategy s;        /* owned */
    cost_result r;          /* owned */
} search_candidate;

/* Where a strategy that does not fit overflows (memory model). */
typedef struct search_memory_miss {
    int tp, dp, pp, mbs;    /* its degrees and micro-batch size */
    int stage, device;      /* stage and device (global index) with the least headroom */
    double need, cap;       /* bytes that device needs and has; need = 0: none recorded */
} search_memory_miss;

typedef struct search_result {
    search_candidate *cands; /* n entries, best (lowest iter_s) first; owned */
    int n;
    long evaluated;         /* candidates scored by the cost model */
    long rejected_memory;   /* candidates with no assignment that fits memory */
    long rejected_other;    /* candidates ruled out (divisibility, heads, layers) */
    long rejected_stages;   /* of rejected_other: more stages than layers holding
                               parameters (a stage without any cannot run) */
    search_memory_miss miss; /* of the rejected candidate closest to fitting
                                (recorded while none fits) */
    int timed_out;          /* 1: time_limit_s ended the enumeration early;
                               the candidates are the best of those scored */
} search_result;

/* Run the search.  out is overwritten; free with search_result_free.
 * UTIL_EINFEASIBLE (with a reason in err) when no strategy fits;
 * UTIL_ETIMEOUT when sp->time_limit_s passed before any strategy fit. */
int search_plan(const fmt_cluster *c, const fmt_model *m,
                const fmt_profile *prof, const cost_params *cp,
                const search_params *sp, search_result *out,
                util_error *err);
void search_result_free(search_result *r);

/* Best layer assignment for a strategy whose degrees, mbs and ranks are
 * set: fills s->bounds with the DP optimum on the stages' devices. */
int search_assign_layers(const fmt_cluster *c, const fmt_model *m,
                         const fmt_profile *prof, const cost_params *cp,
                         fmt_strategy *s, util_error *err);

/* ---- uneven tensor-parallel shards via GLPK -------------------------- */

/* One rank of a TP group as the shard planner sees it: its time and
 * memory are linear in the heads h and MLP columns c it holds. */
typedef struct search_shard_rank {
    double fixed_s;         /* time that does not depend on the shard, s */
    double head_s;          /* time per attention head, s */
    double col_s;           /* time per MLP column, s */
    double base_bytes;      /* memory that does not depend on the shard, bytes */
    double head_bytes;      /* memory per head, bytes */
    double col_bytes;       /* memory per MLP column, bytes */
    double cap_bytes;       /* device memory, bytes; <= 0 = no limit */
} search_shard_rank;

typedef struct search_shard_params {
    int granule;            /* MLP columns come in multiples of this (64) */
    double time_limit_s;    /* GLPK time limit per group, s (10) */
} search_shard_params;

void search_shard_params_init(search_shard_params *p);

/* Integer program (GLPK glp_intopt): split `heads` heads and `cols`
 * columns (cols a multiple of granule) over n ranks minimising the largest
 * rank time fixed_s + head_s * h + col_s * c, each rank within its memory;
 * among the optimal splits the one closest to the split in proportion to
 * speed.  heads_out and cols_out get n entries; *max_s (may be NULL) the
 * largest rank time.  UTIL_EINFEASIBLE when no split fits memory,
 * UTIL_EINVAL for bad sizes, UTIL_ETIMEOUT with the best split found when
 * the time limit hits. */
int search_shard_solve(const search_shard_rank *ranks, int n, int heads,
                       int cols, const search_shard_params *sp,
                       int *heads_out, int *cols_out, double *max_s,
                       util_error *err);

/* Plan the shards of every TP group of s (all_groups = 0: only groups
 * that mix device types; the others split evenly) from the cost model's
 * per-rank times (cost_rank_time_of, with s->slow) and memory.  A group
 * whose program has no solution keeps the even split.  s->tp_heads and
 * s->tp_cols are set, or cleared when every group is even. */
int search_shard_strategy(const fmt_cluster *c, const fmt_model *m,
                          const fmt_profile *prof, const cost_params *cp,
                          const search_shard_params *sp, int all_groups,
                          fmt_strategy *s, util_error *err);

/* What search_plan does for a candidate with mixed TP groups: shards,
 * layer assignment with those shards, shards again.  No-op (UTIL_OK) when
 * no TP group is mixed. */
int search_shard_refine(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_shard_params *sp, fmt_strategy *s,
                        util_error *err);

/* Work done by one search_dp_assign call. */
typedef struct search_dp_stats {
    int solves;             /* O(k * L) passes of the constrained DP, all phases */
    int steps;              /* passes of the descending bottleneck sweep */
} search_dp_stats;

/* search_dp_assign that also reports its work in *stats (may be NULL). */
int search_dp_assign_stats(const search_dp_input *in, int *bounds,
                           double *objective, search_dp_stats *stats,
                           util_error *err);


#endif
