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
 * (bounds[0] = 0, bounds[k] = L); *objective gets its value.  Ties go
 * to balanced stages: among optimal splits whose bottleneck is not above
 * the first one's, the largest smallest stage time, then the least sum,
 * then the least peak stage memory (with mem and cap), then the
 * lexicographically smallest bounds (docs/algorithms.md).
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

/* Largest inputs search_plan takes (UTIL_EINVAL beyond, with a message):
 * GPUs in the cluster and layers of the model (docs/algorithms.md). */
#define SEARCH_MAX_DEVICES 131072
#define SEARCH_MAX_LAYERS 16384
/* Largest stages x layers of one layer assignment (its tables hold three
 * doubles per cell, about 100 MB at the limit): search_assign_layers
 * refuses more with UTIL_EINVAL, and the search skips such pipeline
 * depths (docs/limits.md). */
#define SEARCH_MAX_ASSIGN_CELLS (1L << 22)

/* ---- what a target launcher can run (search/launcher.c) ------------- */

/* Where the stage boundaries of a layer assignment may fall. */
enum search_split {
    SEARCH_SPLIT_ANY = 0,   /* before any layer group with parameters */
    SEARCH_SPLIT_BLOCKS,    /* only between two transformer blocks (with
                               interleaving, between chunks of vpp blocks):
                               the layers before the first block stay on the
                               first stage, those after the last on the last */
    SEARCH_SPLIT_ENDS,      /* SEARCH_SPLIT_BLOCKS, and the middle stages hold
                               the same number of blocks (only the first and
                               last may differ); with vpp > 1 every stage */
    SEARCH_SPLIT_N
};

/* Which device may run which rank. */
enum search_order {
    SEARCH_ORDER_ANY = 0,   /* any device any rank */
    SEARCH_ORDER_HOSTS,     /* each host runs one run of consecutive ranks,
                               on its GPUs in ascending order (a hostfile
                               launcher with per-host GPU lists) */
    SEARCH_ORDER_HOSTS_ALIGNED, /* SEARCH_ORDER_HOSTS, and each host's first
                               rank a multiple of its number of ranks (a
                               launcher that gives rank r the local rank
                               r mod n of a GPU list it sorts) */
    SEARCH_ORDER_N
};

/* The constraints of a target launcher on strategies and placements,
 * as plain fields; zero everywhere = no constraint.  export_target_caps
 * (export/export.h) fills them from what the exporter refuses. */
typedef struct search_launcher {
    int active;             /* 1: a launcher is targeted (0) */
    int no_sp;              /* 1: no sequence parallelism (0) */
    int no_vpp;             /* 1: no interleaved virtual stages (0) */
    int no_selective;       /* 1: recomputation none or full only (0) */
    int no_gpipe;           /* 1: no GPipe schedule with pp > 1 (0) */
    int no_uneven_tp;       /* 1: TP shards always even (0) */
    int zero_limit;         /* ZeRO stages >= this are refused; 0 = none (0) */
    int zero_limit_pp;      /* same with pp > 1; 0 = none (0) */
    int split;              /* enum search_split (any) */
    int order;              /* enum search_order (any) */
    int no_offload;         /* 1: no optimizer offload (0) */
    int offload_zero_limit; /* optimizer offload with ZeRO stages >= this is
                               refused; 0 = none (0) */
    int vpp_gas_any;        /* 1: the interleaved schedule runs any count of
                               micro-batches >= pp (Megatron core_v0.19.0,
                               with a micro-batch group size per virtual stage,
                               cost_vpp_group); 0: a multiple of pp only, as
                               without a launcher (0) */
    /* communication overlap (fmt_strategy.overlap_*) the launcher runs */
    int no_overlap_grad;    /* 1: no bucketed gradient reduction in the
                               backward (0) */
    int overlap_grad_zero;  /* 1: that overlap only with ZeRO >= 1 and pp = 1
                               (DeepSpeed's overlap_comm) (0) */
    int no_overlap_param;   /* 1: no parameter all-gather overlap (0) */
    int no_overlap_tp;      /* 1: no TP communication / GEMM overlap (0) */
    int p2p;                /* enum search_p2p: pipeline P2P overlap (any) */
} search_launcher;

/* search_launcher.p2p: where a launcher overlaps pipeline P2P with
 * compute */
enum search_p2p {
    SEARCH_P2P_ANY = 0,     /* as the cost parameter overlap_p2p says */
    SEARCH_P2P_VPP,         /* with virtual stages only (Megatron-LM) */
    SEARCH_P2P_NONE         /* never: blocking sends (DeepSpeed's pipeline) */
};

/* Set s's overlap flags to what launcher lc (NULL or inactive: any)
 * runs and the cluster allows (search/launcher.c): the gradient
 * reduction with dp > 1, the parameter all-gather with it under ZeRO
 * >= 1, TP overlap where cost_overlap_tp_hardware holds and sequence
 * parallelism is on, P2P as lc->p2p says.  Overlap never costs time in
 * the model; TP overlap's userbuffers cost memory (the caller retries
 * without it when the strategy does not fit). */
void search_overlap_choose(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const search_launcher *lc,
                           fmt_strategy *s);

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
    /* search_plan_devices only (search/subset.c, search/anneal.c); zero
       is each field's default, so search_params_init need not set them */
    int objective;          /* enum search_objective (time) */
    double memory_headroom; /* fraction of every device's memory kept free,
                               0 <= h < 1 (0) */
    int use_all;            /* 1: every device runs a rank, no subsets (0) */
    int max_subsets;        /* device subsets searched, 0 = SEARCH_MAX_SUBSETS
                               scaled to the cluster (0) */
    int anneal_steps;       /* annealing moves per annealed candidate, 0 =
                               SEARCH_ANNEAL_STEPS, < 0 = no annealing (0) */
    uint64_t seed;          /* seed of the annealing's PCG32 (0) */
    /* training features (method AMP; the Megatron baseline takes
       cost_params' recompute and ZeRO stage, no sp, no interleaving) */
    int recompute;          /* enum fmt_recompute every strategy uses, -1 = search
                               none, selective and full (-1) */
    int zero;               /* ZeRO stage 0..3 every strategy uses, -1 = search
                               0..3 (above 0 only with dp > 1) (-1) */
    int seq_par;            /* sequence parallelism: 0 off, 1 on (where tp > 1),
                               -1 = searched: on where tp > 1, as it never
                               loses (docs/algorithms.md) (-1) */
    int vpp;                /* model chunks per device, >= 1 fixed (1 = plain
                               1F1B), 0 = search 1 and every count the blocks
                               allow (0) */
    double batch_tolerance; /* > 0: the global batch may be rounded by up to this
                               fraction to one with more divisors, when the
                               exact batch gives no strategy or a slower one (0) */
    int exhaustive;         /* 1: score every point, no lower-bound pruning (for
                               tests and benchmarks; the result is the same) (0) */
    int placement_search;   /* enum search_place_search: how search_plan_devices
                               searches placements beyond the rules (anneal) */
    int ga_population;      /* GA placements kept per generation, 0 =
                               SEARCH_GA_POPULATION (0) */
    int ga_generations;     /* GA generations, 0 = SEARCH_GA_GENERATIONS (0) */
    double time_limit_s;    /* stop after this many seconds, keeping the best
                               so far (out->timed_out); <= 0 = none (0) */
    search_launcher launcher; /* what the launcher the plan is for can run
                                 (export_target_caps); zeroed = anything */
    int offload;            /* enum fmt_offload every strategy uses, -1 =
                               search none and optimizer where every node
                               the strategy uses gives host_memory (with
                               ZeRO >= 1, the stage both DeepSpeed and
                               Megatron's distributed optimizer offload)
                               (-1; 0 when zeroed) */
    const char *cluster_file; /* path of the cluster file, named in errors about
                                 the cluster as util_error.file; not owned
                                 (NULL: none) */
    const char *model_file;   /* path of the model file, named in errors about
                                 the model (its layer counts) as
                                 util_error.file; not owned (NULL: none) */
    double prune_above_s;   /* > 0: points whose compute-only lower bound
                               exceeds this iteration time are never scored,
                               as if the k-th best were this fast (0) */
} search_params;

void search_params_init(search_params *p);

/* Make the search parameters keep the launcher sp->launcher: sequence
 * parallelism off, one model chunk, even TP shards as it needs.
 * UTIL_EINVAL (message in err) when a feature fixed in sp or cp (the
 * schedule, --zero, --vpp, ...) is one it cannot run. */
int search_launcher_params(search_params *sp, const cost_params *cp,
                           util_error *err);
/* 1 when the launcher lc runs strategy s of model m on cluster c as
 * planned (features, stage split, rank order); else 0 with the first
 * reason in why (n bytes; why may be NULL). */
int search_launcher_ok(const fmt_cluster *c, const fmt_model *m,
                       const search_launcher *lc, const fmt_strategy *s,
                       char *why, size_t n);

/* ---- nearby global batches (search/advice.c) ----------------------- */

/* Batches within this fraction of the requested one, either side, are
 * tried for advice; one is advised when its samples per second beat the
 * requested batch's by at least SEARCH_ADVICE_GAIN. */
#define SEARCH_ADVICE_WINDOW 0.05
#define SEARCH_ADVICE_GAIN 0.05
/* Nearby batches tried at most (the nearest multiples of the largest
 * divisors of the GPU count, which allow the most dp degrees). */
#define SEARCH_ADVICE_BATCHES 6

/* A nearby global batch that trains faster per sample. */
typedef struct search_batch_advice {
    int global_batch;       /* the batch; 0 = none is materially faster */
    double samples_s;       /* samples per second of its best strategy */
    double speedup;         /* samples_s over the requested batch's */
    int tp, pp, dp, mbs;    /* degrees and micro-batch size of that strategy */
} search_batch_advice;

/* Search the batches within SEARCH_ADVICE_WINDOW of sp->global_batch on
 * the whole cluster c (top 1, with the same features and launcher) and
 * fill *adv with the one of most samples per second when it beats
 * samples_s (the requested batch's best) by SEARCH_ADVICE_GAIN or more;
 * ties go to the batch nearest the requested one.  Points that cannot
 * beat it are pruned, so a batch that is not faster costs little.
 * UTIL_OK with adv->global_batch = 0 when none is; an error only for
 * what stops any search (memory). */
int search_advise_batch(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, double samples_s,
                        search_batch_advice *adv, util_error *err);

/* One ranked strategy. */
typedef struct search_candidate {
    fmt_strategy s;        /* owned */
    cost_result r;          /* owned */
    char idle_reason[320];  /* search_plan_devices: why the devices s leaves
                               idle are idle; "" when it uses every device */
} search_candidate;

/* Where a strategy that does not fit overflows (memory model). */
typedef struct search_memory_miss {
    int tp, dp, pp, mbs;    /* its degrees and micro-batch size */
    int stage, device;      /* stage and device (global index) with the least headroom */
    double need, cap;       /* bytes that device needs and has; need = 0: none recorded */
    int host_short;         /* 1: its GPUs fit but the host memory of node
                               host_node does not hold the optimizer state
                               offloaded to it: need and cap are those bytes */
    char host_node[64];     /* that node's name when host_short */
} search_memory_miss;

typedef struct search_result {
    search_candidate *cands; /* n entries, best (lowest iter_s) first; owned */
    int n;
    long evaluated;         /* candidates scored by the cost model */
    long rejected_memory;   /* candidates with no assignment that fits memory */
    long rejected_other;    /* candidates ruled out (divisibility, heads, layers) */
    long rejected_stages;   /* of rejected_other: more stages than layers holding
                               parameters (a stage without any cannot run) */
    long rejected_cells;    /* of rejected_other: stages x layers past
                               SEARCH_MAX_ASSIGN_CELLS */
    search_memory_miss miss; /* of the rejected candidate closest to fitting
                                (recorded while none fits) */
    int subsets;            /* search_plan_devices: device subsets searched */
    long anneal_moves;      /* search_plan_devices: annealing moves scored */
    long pruned;            /* points never scored: their compute-only lower
                               bound exceeds the k-th best time found */
    long space;             /* points of the space (degrees, mbs, features) */
    int global_batch;       /* batch the strategies use: sp->global_batch, or
                               the rounded one (batch_tolerance) */
    double exact_samples_s; /* with a tolerance: samples/s of the best strategy
                               at the exact batch, 0 when none runs it */
    int timed_out;          /* 1: time_limit_s ended the enumeration early;
                               the candidates are the best of those scored */
} search_result;

/* Run the search on the cluster c (any sub-cluster works alike: it is
 * the entry point for searches over device subsets).  out is
 * overwritten; free with search_result_free.  UTIL_EINFEASIBLE (with a
 * reason in err) when no strategy fits; UTIL_ETIMEOUT when
 * sp->time_limit_s passed before any strategy fit.  With
 * sp->batch_tolerance, the batch used is out->global_batch. */
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
/* search_dp_assign with lc's SEARCH_SPLIT_ENDS rule when it applies
 * (in->L groups: the middle stages hold the same number of groups, all
 * stages with vpp > 1): the least objective among those splits, by
 * exhaustive search over (first, middle) in O(L^2 k / (k - 2)); otherwise
 * search_dp_assign.  Same contract as search_dp_assign. */
int search_launcher_dp(const search_dp_input *in, const search_launcher *lc,
                       int vpp, int *bounds, double *objective, util_error *err);
/* s's ranks in the order lc realises (SEARCH_ORDER_HOSTS and
 * SEARCH_ORDER_HOSTS_ALIGNED: each host's devices in ascending order,
 * hosts by their first rank, so a placement that keeps the order is left
 * as it is; search_launcher_ok then checks the alignment); the devices
 * used stay the same.  No-op for SEARCH_ORDER_ANY. */
void search_launcher_order(const fmt_cluster *c, const search_launcher *lc,
                           fmt_strategy *s);
/* search_assign_layers with the stage boundaries a launcher can express
 * (lc->split; NULL or zeroed = any): the best assignment among them. */
int search_assign_layers_for(const fmt_cluster *c, const fmt_model *m,
                             const fmt_profile *prof, const cost_params *cp,
                             const search_launcher *lc, fmt_strategy *s,
                             util_error *err);

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
    double deadline;        /* search_shard_strategy: time of the monotonic clock
                               (util_now) after which no further group is
                               planned (checked between groups); 0 = none (0) */
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
 * s->tp_cols are set, or cleared when every group is even.  UTIL_ETIMEOUT
 * when sp->deadline passed before every group was planned: s is set all
 * the same, the groups left with the even split. */
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

/* ---- device subsets, objectives and placement annealing -------------- */

/* What search_plan_devices minimises. */
enum search_objective {
    SEARCH_OBJ_TIME = 0,    /* iteration time */
    SEARCH_OBJ_COST,        /* price of an iteration: time x hourly price of the
                               devices that run a rank (idle ones are not
                               rented); needs fmt_cluster.price for them */
    SEARCH_OBJ_N
};
/* "time", "cost"; NULL when out of range. */
const char *search_objective_name(int objective);
/* Objective from its name, -1 when unknown. */
int search_objective_from_name(const char *name);

#define SEARCH_MAX_SUBSETS 24   /* default bound on device subsets searched, for
                                   clusters up to 1024 GPUs; larger ones get
                                   24 * 1024 / GPUs of them, at least 4 */
#define SEARCH_ANNEAL_STEPS 150 /* default annealing moves per candidate */
#define SEARCH_ANNEAL_KEEP 3    /* candidates annealed: the best, and the best
                                   on every device */
/* Work bound of one annealing run: moves x ranks x layers scored stays
 * below this, so large clusters take fewer moves (deterministically). */
#define SEARCH_ANNEAL_WORK 1e7

/* Hourly price of the devices s runs on (fmt_cluster.price); -1 when
 * one of them has none. */
double search_price_per_hour(const fmt_cluster *c, const fmt_strategy *s);
/* Value of the objective for a scored strategy (time: r->iter_s; cost:
 * r->iter_s x search_price_per_hour / 3600, -1 price: INFINITY). */
double search_objective_value(const fmt_cluster *c, int objective,
                              const fmt_strategy *s, const cost_result *r);

/* The placement order the search starts from: node indices of c sorted
 * by device speed (fastest first), then memory, links and region, then
 * name, so that it does not depend on the order of the cluster file.
 * order gets c->nnodes entries. */
void search_canonical_nodes(const fmt_cluster *c, int *order);

/* Simulated annealing over the placement of a scored strategy (AMP
 * section 3.3 searches placements; moves after Kirkpatrick et al.
 * 1983): swap two TP groups, two stages, reverse a run of stages, swap
 * two devices, or trade a device for an idle one (not with use_all).
 * Every move is scored by the layer assignment and the cost model; the
 * best state seen is kept.  steps moves at most (bounded by
 * SEARCH_ANNEAL_WORK), PCG32 seeded with seed.  s and r are replaced by
 * the best state when it beats them (s->placement "annealed");
 * *moves (may be NULL) gets the moves scored. */
int search_anneal(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *cp,
                  const search_params *sp, int steps, uint64_t seed,
                  fmt_strategy *s, cost_result *r, long *moves,
                  util_error *err);

/* How search_plan_devices searches placements beyond the rules. */
enum search_place_search {
    SEARCH_PSEARCH_ANNEAL = 0, /* simulated annealing (search_anneal) */
    SEARCH_PSEARCH_RULES,      /* the placement rules only, canonical order */
    SEARCH_PSEARCH_GA,         /* annealing, then the genetic algorithm (search_ga) */
    SEARCH_PSEARCH_N
};
/* "anneal", "rules", "ga"; NULL when out of range. */
const char *search_place_search_name(int how);
/* Placement search from its name, -1 when unknown. */
int search_place_search_from_name(const char *name);

#define SEARCH_GA_POPULATION 12 /* default GA population */
#define SEARCH_GA_GENERATIONS 8 /* default GA generations */
#define SEARCH_GA_LOCAL 2       /* local-search moves per GA child */
/* Work bound of one GA run, as SEARCH_ANNEAL_WORK: placements scored x
 * ranks x layers stays below this (fewer generations on large
 * clusters, deterministically). */
#define SEARCH_GA_WORK 4e7

/* Hybrid genetic algorithm over the placement of a scored strategy
 * (docs/algorithms.md, "Placement genetic algorithm"; after DT-FM's
 * hybrid GA, Yuan et al. 2022, section 3.4): search_anneal with steps
 * and seed first, then a population seeded with the rules' placement
 * (s on entry) and the annealed one; order crossover on TP-group blocks,
 * the annealing's moves as mutation and SEARCH_GA_LOCAL improving moves
 * of local search per child, elitist replacement.  At most
 * sp->ga_generations x sp->ga_population children (defaults above,
 * bounded by SEARCH_GA_WORK), PCG32 seeded with seed.  s and r are
 * replaced by the best state when it beats them (s->placement
 * "annealed" or "genetic"); never worse than either seed.  *moves (may
 * be NULL) gets the placements scored, annealing included. */
int search_ga(const fmt_cluster *c, const fmt_model *m,
              const fmt_profile *prof, const cost_params *cp,
              const search_params *sp, int steps, uint64_t seed,
              fmt_strategy *s, cost_result *r, long *moves,
              util_error *err);

/* search_plan over subsets of c's devices (docs/algorithms.md, "Device
 * subsets"): every device, then whole groups of alike nodes (device
 * type, region, links) removed by backward elimination, then, when a
 * set's GPU count does not factor (a prime factor above 7), its last
 * nodes removed; at most sp->max_subsets searches.  Each set is searched
 * in the canonical node order, the SEARCH_ANNEAL_KEEP best candidates
 * and the SEARCH_ANNEAL_KEEP best on every device annealed (search_anneal), and all ranked by sp->objective under
 * sp->memory_headroom.  Candidates' ranks index c's devices and may
 * leave some idle (idle_reason says why); results are evaluated on c.
 * sp->method megatron, or a single placement rule, keeps the file
 * order and does not anneal.  Only the nodes whose devices train in the
 * model's precision (fmt_device_supports) are searched; the others stay
 * idle and idle_reason names them first ("'V100' has no bf16 units").
 * UTIL_EINVAL when no device trains in it, or with sp->use_all when one
 * does not (search_precision_fallback gives a precision that works). */
int search_plan_devices(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, search_result *out,
                        util_error *err);

/* ---- precision per device (search/precision.c) ----------------------- */

/* 1 when a plan of c can train in precision prec: some node's devices
 * support it (fmt_device_supports), with use_all every node's. */
int search_precision_usable(const fmt_cluster *c, int prec, int use_all);
/* prec when usable, else the precision a plan falls back to: fp16 (bf16
 * and fp16 store 2 bytes an element; fp16 adds loss scaling), then fp32,
 * which every device runs. */
int search_precision_fallback(const fmt_cluster *c, int prec, int use_all);
/* Into buf (n bytes, NUL-terminated, truncated): the device types of c's
 * nodes that lack prec, e.g. "'V100' and 'T4' have no bf16 units"; ""
 * when none does.  Returns the length it needed. */
size_t search_precision_lacking(const fmt_cluster *c, int prec, char *buf,
                                size_t n);

#endif
