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
    search_progress_fn progress; /* progress callback, NULL = none (NULL) */
    void *progress_ctx;     /* passed to progress (NULL) */
} search_params;

void search_params_init(search_params *p);

/* One ranked strategy. */
typedef struct search_candidate {
    cost_strategy s;        /* owned */
    cost_result r;          /* owned */
} search_candidate;

typedef struct search_result {
    search_candidate *cands; /* n entries, best (lowest iter_s) first; owned */
    int n;
    long evaluated;         /* candidates scored by the cost model */
    long rejected_memory;   /* candidates with no assignment that fits memory */
    long rejected_other;    /* candidates ruled out (divisibility, heads, layers) */
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

/* ---- DT-FM scheduling: GA, KL, SA, random, exact (issue 4) ------------ */
/* section owned by the DT-FM work: add declarations here */

/* ---- uneven tensor-parallel shards via GLPK (issue 6) ----------------- */
/* section owned by the uneven-TP work: add declarations here */

#endif
