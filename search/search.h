/* search/search.h: everything that chooses a strategy: PCG32 random
 * numbers, AMP's pipeline layer-assignment dynamic program, placement
 * rules, AMP's Algorithm 1 enumeration and the Megatron baseline.
 * Searchers call the cost model; they never duplicate it.  No I/O. */
#ifndef HETPLAN_SEARCH_H
#define HETPLAN_SEARCH_H

#include <stdint.h>

#include "cost.h"

/* ---- PCG32 (O'Neill 2014, pcg32 "XSH RR" 64/32) ------------------------ */

typedef struct search_pcg32 {
    uint64_t state;         /* RNG state, all values possible */
    uint64_t inc;           /* stream selector, always odd */
} search_pcg32;

/* Seed as pcg32_srandom_r(initstate, initseq) of the reference code. */
void search_pcg32_seed(search_pcg32 *rng, uint64_t initstate, uint64_t initseq);
/* Next 32-bit output (pcg32_random_r). */
uint32_t search_pcg32_next(search_pcg32 *rng);
/* Uniform integer in [0, bound) without modulo bias; bound > 0. */
uint32_t search_pcg32_bounded(search_pcg32 *rng, uint32_t bound);
/* Uniform double in [0, 1) with 53 random bits. */
double search_pcg32_double(search_pcg32 *rng);

/* ---- pipeline layer assignment (AMP section 3.5) ---------------------- */

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
 * COST_EINFEASIBLE when no assignment satisfies memory (or L < k).
 * Runs in O(k * L) per distinct bottleneck value it visits, instead of
 * AMP's O(k * L^4); see docs/algorithms.md. */
int search_dp_assign(const search_dp_input *in, int *bounds,
                     double *objective, cost_error *err);
/* Objective of a given assignment (bounds: k + 1 entries); memory is
 * not checked. */
double search_dp_objective(const search_dp_input *in, const int *bounds);
/* 1 when the assignment satisfies the memory limits. */
int search_dp_fits(const search_dp_input *in, const int *bounds);
/* Exhaustive search over all C(L-1, k-1) assignments, for tests and
 * benchmarks only.  Same contract as search_dp_assign. */
int search_dp_bruteforce(const search_dp_input *in, int *bounds,
                         double *objective, cost_error *err);

/* ---- placement -------------------------------------------------------- */

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
int search_place(const cost_cluster *c, int rule, cost_strategy *s,
                 cost_error *err);

/* ---- progress of long searches ---------------------------------------- */

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

/* ---- whole search (AMP Algorithm 1) ----------------------------------- */

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
} search_params;

void search_params_init(search_params *p);

/* One ranked strategy. */
typedef struct search_candidate {
    cost_strategy s;        /* owned */
    cost_result r;          /* owned */
} search_candidate;

/* Where a strategy that does not fit overflows (issue 3, memory model). */
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
} search_result;

/* Run the search.  out is overwritten; free with search_result_free.
 * COST_EINFEASIBLE (with a reason in err) when no strategy fits. */
int search_plan(const cost_cluster *c, const cost_model *m,
                const cost_profile *prof, const cost_params *cp,
                const search_params *sp, search_result *out,
                cost_error *err);
void search_result_free(search_result *r);

/* Best layer assignment for a strategy whose degrees, mbs and ranks are
 * set: fills s->bounds with the DP optimum on the stages' devices. */
int search_assign_layers(const cost_cluster *c, const cost_model *m,
                         const cost_profile *prof, const cost_params *cp,
                         cost_strategy *s, cost_error *err);

/* ---- calibration by least absolute deviation (issue 3) --------------- */
/* section owned by the calibration work: add declarations here */

/* Constants search_calibrate may move (bit mask; the rest stay neutral). */
enum search_calib_fit_flags {
    SEARCH_CALIB_COMPUTE = 1,   /* compute_scale per device type */
    SEARCH_CALIB_MBS = 2,       /* mbs_half per device type */
    SEARCH_CALIB_LINKS = 4,     /* bw_frac per link class */
    SEARCH_CALIB_LATENCY = 8,   /* msg_latency */
    SEARCH_CALIB_TP_FIXED = 16, /* tp_fixed */
    SEARCH_CALIB_OVERHEAD = 32, /* iter_overhead */
    SEARCH_CALIB_ALL = 63
};

typedef struct search_calib_params {
    unsigned fit;           /* enum search_calib_fit_flags (SEARCH_CALIB_ALL) */
    double reg;             /* weight of the pull towards the neutral values: objective
                               += reg * sum |x - neutral| / range per constant (0.01) */
    int max_rounds;         /* linearise-and-solve rounds at most (30) */
    double tol;             /* stop when a round improves the objective less (1e-7) */
} search_calib_params;

void search_calib_params_init(search_calib_params *p);

/* What a fit reached. */
typedef struct search_calib_fit {
    cost_calibration cal;   /* the fitted constants */
    int nfit;               /* trials fitted (measured time given) */
    int nfree;              /* constants the trials constrain (the others stay neutral) */
    int rounds;             /* linear programs solved */
    double mape;            /* in-sample mean |predicted - measured| / measured */
    double objective;       /* mape + the regularisation term */
} search_calib_fit;

/* Fit the calibration constants to measured iteration times by least
 * relative absolute deviation, min sum |T_i(x) - m_i| / m_i, solved as a
 * sequence of linear programs (GLPK): T_i is linearised at the current x
 * (bottleneck stages and devices fixed), the LP is solved inside a trust
 * region, the model re-evaluated (docs/calibration.md).  measured[i] < 0
 * marks a failed run, left out.  cp->calib and prof->calib are ignored
 * (the fit starts from neutral).  COST_EINVAL with fewer than 2 measured
 * trials; COST_EINTERNAL when GLPK fails. */
int search_calibrate(const cost_cluster *c, const cost_model *m,
                     const cost_profile *prof, const cost_params *cp,
                     const cost_strategy *s, const double *measured, int n,
                     const search_calib_params *sp, search_calib_fit *out,
                     cost_error *err);

/* ---- DT-FM scheduling: GA, KL, SA, random, exact (issue 4) ------------ */
/* section owned by the DT-FM work: add declarations here */

/* Searchers for the DT-FM scheduling problem (cost_dtfm_problem): a
 * balanced partition of the devices into d_pp groups minimising
 * cost_dtfm_evaluate's total (DT-FM eq. 1). */
enum search_dtfm_method {
    SEARCH_DTFM_GA = 0,     /* hybrid genetic algorithm, DT-FM section 3.4 */
    SEARCH_DTFM_SA,         /* simulated annealing over pair swaps */
    SEARCH_DTFM_KL,         /* the same GA with Kernighan-Lin local search */
    SEARCH_DTFM_RANDOM,     /* best of random balanced partitions */
    SEARCH_DTFM_EXACT,      /* every balanced partition (small instances) */
    SEARCH_DTFM_NMETHODS
};
/* "ga", "sa", "kl", "random", "exact"; NULL when out of range. */
const char *search_dtfm_method_name(int method);
/* Method from name, -1 when unknown. */
int search_dtfm_method_from_name(const char *name);

/* Largest device count SEARCH_DTFM_EXACT accepts. */
#define SEARCH_DTFM_EXACT_MAX 16

typedef struct search_dtfm_params {
    int method;             /* enum search_dtfm_method (GA) */
    uint64_t seed;          /* PCG32 seed; same seed, same result (0) */
    double seconds;         /* wall-time limit, s; 0 = none (0).  Hitting it
                               returns COST_ETIMEOUT with the best so far */
    long max_evals;         /* cost evaluations (swap trials, candidates) allowed;
                               0 = none (0).  The reproducible limit */
    long stall;             /* GA/KL: stop after this many offspring without a new
                               best; SA: restarts without one; 0 = none (0) */
    int population;         /* GA/KL population size (32) */
    int ls_passes;          /* local-search passes over all group pairs per
                               offspring, 0 = until no improvement (0) */
    double checkpoint_s;    /* also report the best cost reached by this
                               time, s; 0 = none (0) */
    search_progress_fn progress; /* progress callback, NULL = none (NULL) */
    void *progress_ctx;     /* passed to progress (NULL) */
} search_dtfm_params;

void search_dtfm_params_init(search_dtfm_params *p);

typedef struct search_dtfm_result {
    int n;                  /* devices */
    int *group_of;          /* n: group of each device (0..d_pp-1); owned */
    double cost_s;          /* its total cost (cost_dtfm_evaluate's total_s) */
    long evaluated;         /* cost evaluations made */
    long generations;       /* GA/KL offspring, SA steps, random samples, exact
                               partitions */
    double elapsed_s;       /* wall time of the search */
    double best_at_s;       /* elapsed time when the final best was found */
    double checkpoint_cost_s; /* best cost at params.checkpoint_s; < 0 when none */
    int timed_out;          /* 1 when the time limit ended the search */
} search_dtfm_result;

/* Search a schedule.  p must pass cost_dtfm_problem_check.  out is
 * overwritten; free with search_dtfm_result_free.  COST_OK, or
 * COST_ETIMEOUT with the best schedule so far; COST_EINVAL for an exact
 * search over more than SEARCH_DTFM_EXACT_MAX devices. */
int search_dtfm(const cost_dtfm_problem *p, const search_dtfm_params *sp,
                search_dtfm_result *out, cost_error *err);
void search_dtfm_result_free(search_dtfm_result *r);

/* ---- uneven tensor-parallel shards via GLPK (issue 6) ----------------- */
/* section owned by the uneven-TP work: add declarations here */

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
 * largest rank time.  COST_EINFEASIBLE when no split fits memory,
 * COST_EINVAL for bad sizes, COST_ETIMEOUT with the best split found when
 * the time limit hits. */
int search_shard_solve(const search_shard_rank *ranks, int n, int heads,
                       int cols, const search_shard_params *sp,
                       int *heads_out, int *cols_out, double *max_s,
                       cost_error *err);

/* Plan the shards of every TP group of s (all_groups = 0: only groups
 * that mix device types; the others split evenly) from the cost model's
 * per-rank times (cost_rank_time_of, with s->slow) and memory.  A group
 * whose program has no solution keeps the even split.  s->tp_heads and
 * s->tp_cols are set, or cleared when every group is even. */
int search_shard_strategy(const cost_cluster *c, const cost_model *m,
                          const cost_profile *prof, const cost_params *cp,
                          const search_shard_params *sp, int all_groups,
                          cost_strategy *s, cost_error *err);

/* What search_plan does for a candidate with mixed TP groups: shards,
 * layer assignment with those shards, shards again.  No-op (COST_OK) when
 * no TP group is mixed. */
int search_shard_refine(const cost_cluster *c, const cost_model *m,
                        const cost_profile *prof, const cost_params *cp,
                        const search_shard_params *sp, cost_strategy *s,
                        cost_error *err);

#endif
