/* decentral/decentral.h: decentralized training over GPUs spread across
 * regions (DT-FM, Yuan et al., NeurIPS'22): the scheduling problem and
 * its costs, the searchers (hybrid GA, SA, Kernighan-Lin, random,
 * exact), the scenario files and the schedule's output. */
#ifndef HETPLAN_DECENTRAL_H
#define HETPLAN_DECENTRAL_H

#include "search.h"

/* ---- decentralized training, DT-FM (decentral/problem.c, cost.c) ---- */

/* Pipeline stages (d_pp) a problem may have: the coarsened graph has
 * d_pp^2 edges and the pipeline order is a TSP over d_pp nodes, both
 * redone by every evaluation. */
#define DTFM_MAX_STAGES 64

/* The scheduling problem of DT-FM (Yuan et al., NeurIPS'22, section 2):
 * n = d_pp * d_dp devices with pairwise latency and bandwidth; a
 * schedule is a balanced partition into d_pp data-parallel groups of
 * d_dp devices (one group per pipeline stage). */
typedef struct dtfm_problem {
    int n;                  /* devices (= d_pp * d_dp) */
    int d_pp;               /* pipeline stages = data-parallel groups */
    int d_dp;               /* devices per group = micro-batch groups */
    double c_pp;            /* activation bytes of one micro-batch group between stages */
    double c_dp;            /* gradient bytes of one stage */
    double *lat;            /* n * n latency d -> d', s; diagonal ignored; owned;
                               NULL in region form */
    double *bw;             /* n * n bandwidth d -> d', B/s; diagonal ignored; owned;
                               NULL in region form */
    /* Region form (lat and bw NULL, O(n + nreg^2) memory): the link from
     * d to d' is the one from region[d] to region[d'], the diagonal the
     * link inside a region (used only by regions of two or more devices) */
    int nreg;               /* regions; 0 in matrix form */
    int *region;            /* n: region of each device; owned */
    double *rlat;           /* nreg * nreg latency from region a to b, s; owned */
    double *rbw;            /* nreg * nreg bandwidth from region a to b, B/s; owned */
    double *compute;        /* n: compute time of one tasklet on each device, s, or NULL
                               (communication only, as in the paper); owned */
} dtfm_problem;

/* Allocate lat, bw (and compute when with_compute) for n devices, zeroed;
 * sets n, d_pp and d_dp = n / d_pp.  UTIL_EINVAL when d_pp does not
 * divide n, UTIL_ENOMEM. */
int dtfm_problem_alloc(dtfm_problem *p, int n, int d_pp,
                            int with_compute, util_error *err);
/* Free the members (not p); NULL-safe; leaves p zeroed. */
void dtfm_problem_free(dtfm_problem *p);
/* Latency (s) and bandwidth (B/s) from device i to device j != i, in
 * either form. */
double dtfm_latency(const dtfm_problem *p, int i, int j);
double dtfm_bandwidth(const dtfm_problem *p, int i, int j);
/* Check sizes (d_pp <= DTFM_MAX_STAGES) and values (finite, latency >= 0,
 * bandwidth > 0 off the diagonal or, in region form, for every region
 * pair some devices use, c_pp and c_dp >= 0, compute >= 0); UTIL_EINVAL
 * naming the first bad entry. */
int dtfm_problem_check(const dtfm_problem *p, util_error *err);
/* Replace each direction by the mean of the two, as the paper's
 * communication graph G does (section 2). */
void dtfm_symmetrize(dtfm_problem *p);

/* Pair weights, n * n arrays the caller allocates (diagonal 0):
 *   w_dp[d,d'] = 2 (a + c_dp / (D_dp b))   the term of DT-FM eq. 2
 *   w_pp[d,d'] = 2 (a + c_pp / b)          the term of DT-FM eq. 3
 * with a, b the mean latency and bandwidth of the two directions. */
void dtfm_weights(const dtfm_problem *p, double *w_dp,
                       double *w_pp);

/* DataP-Cost of one group (DT-FM eq. 2):
 *   max_{d in C} sum_{d' in C - {d}} w_dp[d,d'].
 * w_dp is n * n; members has m entries. */
double dtfm_dp_group(const double *w_dp, int n, const int *members,
                          int m);

/* Bottleneck perfect matching (DT-FM eq. 3): min over perfect matchings
 * M of an m * m bipartite graph of max_{(i,j) in M} w[i * m + j], exact
 * (threshold raised along alternating trees, O(m^3)).  match (may be
 * NULL) gets m entries: match[i] = column matched with row i. */
double dtfm_bottleneck(const double *w, int m, int *match);

/* Largest number of stages dtfm_tsp solves exactly. */
#define DTFM_TSP_EXACT_MAX 16

/* Open-loop TSP (DT-FM eq. 4): the shortest Hamiltonian path, any start
 * and end, over a symmetric k * k matrix w.  order gets k nodes.
 * _exact: Held-Karp, O(2^k k^2) time, UTIL_EINVAL for k > 20, UTIL_ENOMEM.
 * _heuristic: nearest neighbour from every start, then 2-opt and Or-opt.
 * dtfm_tsp: exact up to DTFM_TSP_EXACT_MAX nodes, heuristic
 * beyond; *exact (may be NULL) says which. */
int dtfm_tsp_exact(const double *w, int k, int *order, double *len);
int dtfm_tsp_heuristic(const double *w, int k, int *order,
                            double *len);
int dtfm_tsp(const double *w, int k, int *order, double *len,
                  int *exact);

/* A schedule and its cost (DT-FM eq. 1, plus the compute extension). */
typedef struct dtfm_result {
    double total_s;         /* dp_s + pp_s + compute_s */
    double dp_s;            /* DataP-Cost: max over groups of eq. 2 */
    double pp_s;            /* PipelineP-Cost: eq. 4 over eq. 3 edges */
    double compute_s;       /* beyond the paper: sum over stages of the slowest
                               device's tasklet compute time; 0 without compute */
    int k;                  /* groups (d_pp) */
    int g;                  /* devices per group (d_dp) */
    int tsp_exact;          /* 1 when pp_s is the exact open-loop TSP */
    int *members;           /* k * g: devices of group q, ascending; groups are
                               numbered by their smallest device; owned */
    double *group_dp_s;     /* k: eq. 2 of each group; owned */
    int *order;             /* k: group at pipeline stage j; owned */
    double *edge_s;         /* k - 1: eq. 3 between stage j and j + 1; owned */
    int *match;             /* (k - 1) * g: match[j * g + i] = device of stage
                               j + 1 paired with members[order[j] * g + i]; owned */
    int *chain;             /* g * k: chain[i * k + j] = device running stage j of
                               micro-batch group i (tasklet t_ij); owned */
} dtfm_result;

/* Cost of a partition: group_of[d] in 0..d_pp-1, each value used d_dp
 * times.  Builds the coarsened graph, its TSP path and the chains.
 * out is overwritten; free with dtfm_result_free.  UTIL_EINVAL for
 * an unbalanced partition. */
int dtfm_evaluate(const dtfm_problem *p, const int *group_of,
                       dtfm_result *out, util_error *err);
void dtfm_result_free(dtfm_result *r);

/* ---- DT-FM scheduling: GA, KL, SA, random, exact --------------------- */

/* Searchers for the DT-FM scheduling problem (dtfm_problem): a
 * balanced partition of the devices into d_pp groups minimising
 * dtfm_evaluate's total (DT-FM eq. 1). */
enum dtfm_method {
    DTFM_GA = 0,     /* hybrid genetic algorithm, DT-FM section 3.4 */
    DTFM_SA,         /* simulated annealing over pair swaps */
    DTFM_KL,         /* the same GA with Kernighan-Lin local search */
    DTFM_RANDOM,     /* best of random balanced partitions */
    DTFM_EXACT,      /* every balanced partition (small instances) */
    DTFM_NMETHODS
};
/* "ga", "sa", "kl", "random", "exact"; NULL when out of range. */
const char *dtfm_method_name(int method);
/* Method from name, -1 when unknown. */
int dtfm_method_from_name(const char *name);

/* Largest device count DTFM_EXACT searches partition by partition;
 * beyond it, up to DTFM_EXACT_CLASSES_MAX devices with at most
 * DTFM_EXACT_STAGE_MAX per stage, it searches over classes of
 * interchangeable devices (dtfm_prove). */
#define DTFM_EXACT_MAX 16
#define DTFM_EXACT_CLASSES_MAX 1024
#define DTFM_EXACT_STAGE_MAX 255

typedef struct dtfm_search_params {
    int method;             /* enum dtfm_method (GA) */
    uint64_t seed;          /* PCG32 seed; same seed, same result (0) */
    double seconds;         /* wall-time limit, s; 0 = none (0).  Hitting it
                               returns UTIL_ETIMEOUT with the best so far; at
                               least one schedule is evaluated even when the
                               budget is spent before the call */
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
    double budget_start_s;  /* dtfm_clock_s() when the seconds budget began (a
                               command's start, so that loading counts); 0 = the
                               call (0) */
    double reserve_s;       /* seconds of the budget left free for the caller's
                               work after the search (0) */
} dtfm_search_params;

/* Monotonic clock, s (the time base of budget_start_s). */
double dtfm_clock_s(void);

void dtfm_search_params_init(dtfm_search_params *p);

typedef struct dtfm_search_result {
    int n;                  /* devices */
    int *group_of;          /* n: group of each device (0..d_pp-1); owned */
    double cost_s;          /* its total cost (dtfm_evaluate's total_s) */
    long evaluated;         /* cost evaluations made */
    long generations;       /* GA/KL offspring, SA steps, random samples, exact
                               partitions */
    double elapsed_s;       /* wall time of the search */
    double best_at_s;       /* elapsed time when the final best was found */
    double checkpoint_cost_s; /* best cost at params.checkpoint_s; < 0 when none */
    int timed_out;          /* 1 when the time limit ended the search */
    dtfm_result result;     /* dtfm_evaluate of group_of; owned */
} dtfm_search_result;

/* Search a schedule.  p must pass dtfm_problem_check.  out is
 * overwritten; free with dtfm_search_result_free.  UTIL_OK, or
 * UTIL_ETIMEOUT with the best schedule so far; UTIL_EINVAL for an exact
 * search over more than DTFM_EXACT_MAX devices. */
int dtfm_search(const dtfm_problem *p, const dtfm_search_params *sp,
                dtfm_search_result *out, util_error *err);
void dtfm_search_result_free(dtfm_search_result *r);

/* ---- DT-FM inputs and plan output ------------------------------------ */

/* Where c_pp and c_dp come from (docs/decentralized.md). */
enum dtfm_convention {
    DTFM_PAPER = 0,        /* derived from the model and batch (physical units) */
    DTFM_PUBLIC_CODE = 1   /* the public scheduler's 0.47124922275543213e9 and
                                   0.65e9 bytes unless the file gives them */
};
/* "paper", "public-code"; NULL when out of range. */
const char *dtfm_convention_name(int convention);
/* Convention from name, -1 when unknown. */
int dtfm_convention_from_name(const char *name);

/* What the command line adds to a decentralized cluster file. */
typedef struct dtfm_options {
    int convention;             /* enum dtfm_convention (paper) */
    const fmt_model *model;    /* model for c_pp/c_dp and compute, NULL = the paper's
                                   GPT3-XL settings (NULL) */
    int compute;                /* 1: per-device tasklet compute times (beyond the
                                   paper; needs device types) (0) */
    int d_pp;                   /* stages; 0 = the file's workload.d_pp, else 8 (0) */
} dtfm_options;

void dtfm_options_init(dtfm_options *o);

/* A decentralized cluster and workload, ready for dtfm_search. */
typedef struct dtfm_input {
    char name[64];              /* cluster name */
    dtfm_problem prob;     /* owned; lat/bw as given (asymmetric allowed) */
    int nregions;               /* regions (1 for a matrix file) */
    char (*region_name)[64];    /* nregions names, owned */
    int *region_gpus;           /* nregions device counts, owned */
    int *device_region;         /* n: region of each device, owned */
    char (*device_type)[32];    /* n: GPU type of each device, owned */
    int convention;             /* enum dtfm_convention */
    double batch_tokens;        /* tokens per iteration used for c_pp */
    double hidden;              /* hidden size used for c_pp */
    double params;              /* parameters used for c_dp */
    double act_bytes;           /* bytes per activation element */
    double grad_bytes;          /* bytes per gradient element */
    char workload_source[32];   /* "file", "model", "paper-gpt3-xl", "public-code" */
} dtfm_input;

/* Parse a decentralized cluster file (regions, or full matrices) and
 * derive d_pp, d_dp, c_pp, c_dp (and compute times).  On failure err
 * names the file, the JSON path and what was expected; out is empty.
 * UTIL_EINVAL when o->d_pp (given) does not divide the devices. */
int dtfm_parse(const char *text, const char *file,
                    const dtfm_options *o, dtfm_input *out,
                    util_error *err);
int dtfm_load(const char *path, const dtfm_options *o,
                   dtfm_input *out, util_error *err);
/* Free every member; NULL-safe; leaves in zeroed. */
void dtfm_input_free(dtfm_input *in);

/* What a decentralized plan records besides the schedule. */
typedef struct dtfm_meta {
    const char *cluster_path;   /* as given */
    char cluster_digest[65];    /* SHA-256 hex of the file */
    const char *model_path;     /* NULL when none */
    char model_digest[65];      /* "" when none */
    const char *searcher;       /* "ga", "sa", "kl", "random", "exact" */
    unsigned long long seed;
    double seconds;             /* time limit, 0 = none */
    long max_evals;             /* evaluation limit, 0 = none */
    const dtfm_search_result *search; /* effort; may be NULL */
} dtfm_meta;

/* Plan JSON (schema "hetplan-dtfm-plan/1", docs/decentralized.md) and a
 * compact table; malloc'd strings (caller frees), NULL when out of memory. */
char *dtfm_to_json(const dtfm_meta *meta,
                        const dtfm_input *in,
                        const dtfm_result *r);
char *dtfm_to_table(const dtfm_meta *meta,
                         const dtfm_input *in,
                         const dtfm_result *r);

/* ---- generated instances and a lower bound (decentral/instances.c) --- */

/* Kinds of generated instance. */
enum dtfm_gen_kind {
    DTFM_GEN_GEO = 0,      /* random sites of uneven size on a 12 000 km square:
                              distance latency, random bandwidth, asymmetric noise */
    DTFM_GEN_PLANTED,      /* the same background plus a hidden grid of fast links
                              (every pair of a hidden group, and member i of stage
                              q to member i of stage q + 1), device ids shuffled:
                              the hidden schedule is optimal and its cost equals
                              dtfm_lower_bound */
    DTFM_GEN_NKINDS
};
/* "geo", "planted"; NULL when out of range. */
const char *dtfm_gen_kind_name(int kind);

typedef struct dtfm_gen_params {
    int kind;               /* enum dtfm_gen_kind (geo) */
    int n;                  /* devices, 2..4096 (64) */
    int d_pp;               /* stages, >= 2, divides n (8) */
    uint64_t seed;          /* PCG32 seed; same seed, same instance (0) */
    double c_pp;            /* eq. 3 bytes (0.512e9, the paper's GPT3-XL) */
    double c_dp;            /* eq. 2 bytes (0.65e9) */
} dtfm_gen_params;

void dtfm_gen_params_init(dtfm_gen_params *g);

/* Generate an instance; p is allocated (free with dtfm_problem_free).
 * planted (may be NULL) gets n entries: the hidden group of each device
 * for DTFM_GEN_PLANTED, -1 otherwise.  UTIL_EINVAL for bad sizes. */
int dtfm_generate(const dtfm_gen_params *gp, dtfm_problem *p, int *planted,
                  util_error *err);

/* A random regional network: devices spread over 2..4 regions; inside a
 * region 5 ms and 2 Gbit/s, between two regions 10..250 ms and
 * 0.3..1.3 Gbit/s (uniform, symmetric per region pair); each direction of
 * each device pair then gets its own +-20% noise (latency times f,
 * bandwidth divided by f, f uniform in 0.8..1.2), so the matrices are
 * asymmetric.  c_pp 0.512e9 and c_dp 0.65e9 bytes (the paper's GPT3-XL),
 * no compute.  n devices (2..4096) in d_pp stages (d_pp >= 1 divides n).
 * Draws from rng, which the caller seeds: the same seed and the same
 * sequence of calls give the same instances.  p is allocated (free with
 * dtfm_problem_free); on error p is left zeroed and rng untouched.
 * UTIL_EINVAL for bad sizes, UTIL_ENOMEM. */
int dtfm_generate_regional(util_pcg32 *rng, int n, int d_pp, dtfm_problem *p,
                           util_error *err);

/* A lower bound on dtfm_evaluate's cost over every balanced partition. */
typedef struct dtfm_bound {
    double total_s;         /* dp_s + pp_s + compute_s */
    double dp_s;            /* max over devices of its g - 1 lightest eq. 2 terms */
    double pp_s;            /* sum over the path's k - 1 edges of the lightest eq. 3
                               term any of the stage's devices must use */
    double compute_s;       /* sum over stages of the (t g)-th slowest device */
} dtfm_bound;

/* Lower bound (docs/decentralized.md, "Lower bound"); O(n^2 g).
 * UTIL_EINVAL when p fails dtfm_problem_check, UTIL_ENOMEM. */
int dtfm_lower_bound(const dtfm_problem *p, dtfm_bound *b, util_error *err);

/* ---- exact search over interchangeable devices (decentral/classes.c) - */

/* Devices are interchangeable when their eq. 2 and eq. 3 weights to
 * every other device (and their compute times) are equal: the GPUs of one
 * region of a regions-form cluster file.  With few such classes a
 * schedule is a sequence of stage compositions (devices of each class per
 * stage), which branch and bound searches exactly. */
typedef struct dtfm_prove_params {
    double seconds;         /* wall-time limit, s; 0 = none (0) */
    long max_nodes;         /* search nodes allowed (the reproducible limit);
                               0 = none (0) */
    double upper_s;         /* cost of a known schedule (e.g. the GA's): only
                               cheaper ones are searched for; 0 = none (0) */
    long max_compositions;  /* decline when stages can be composed in more ways
                               than this (200000) */
} dtfm_prove_params;

void dtfm_prove_params_init(dtfm_prove_params *pp);

typedef struct dtfm_proof {
    int classes;            /* classes of interchangeable devices; 0 when the
                               instance has too many compositions (declined) */
    long compositions;      /* ways to compose one stage from the classes */
    double lower_s;         /* lower bound on every schedule's cost, at least
                               dtfm_lower_bound's; = best_s when complete */
    double best_s;          /* cost of group_of, or upper_s when the search found
                               nothing cheaper (HUGE_VAL without upper_s) */
    int *group_of;          /* n: the cheapest schedule found, or NULL when none
                               beat upper_s; owned */
    int complete;           /* 1: the search finished, best_s is the optimum
                               (to 1e-12 relative) */
    double level_s;         /* every schedule whose stages all have eq. 2 <= this
                               was searched (0 before the first level ended) */
    long nodes;             /* search nodes */
    double elapsed_s;       /* wall time, s */
} dtfm_proof;

/* Exact search (branch and bound over stage compositions, in levels of
 * the largest eq. 2 allowed; docs/decentralized.md).  out is overwritten;
 * free with dtfm_proof_free.  UTIL_OK also when the budget ended the
 * search (complete = 0, lower_s still valid) or when the instance was
 * declined (classes = 0, lower_s = dtfm_lower_bound's); UTIL_EINVAL when
 * p fails dtfm_problem_check, UTIL_ENOMEM. */
int dtfm_prove(const dtfm_problem *p, const dtfm_prove_params *pp,
               dtfm_proof *out, util_error *err);
void dtfm_proof_free(dtfm_proof *r);

/* Lower bound for any instance (decentral/relax.c): devices merged into
 * clusters along their lightest eq. 3 links until the clusters compose a
 * stage in at most pp->max_compositions ways (at most 32 clusters); the
 * coarse instance (per cluster pair the smallest latency and largest
 * bandwidth, per cluster the smallest compute) costs no more for every
 * schedule, and dtfm_prove (pp's limits; upper_s ignored) bounds its
 * optimum.  out->lower_s is the bound (valid also when the budget ended
 * the search), out->complete says it is the coarse optimum, group_of is
 * NULL; *clusters gets the cluster count.  UTIL_EINVAL when p fails
 * dtfm_problem_check, UTIL_ENOMEM. */
int dtfm_relaxed_bound(const dtfm_problem *p, const dtfm_prove_params *pp,
                       dtfm_proof *out, int *clusters, util_error *err);

#endif
