/* planner/plan.h: the planner library: reading and validating the
 * input files into cost-model structs, and writing plan JSON.  Only
 * planner/main.c prints; these functions report through cost_error. */
#ifndef HETPLAN_PLAN_H
#define HETPLAN_PLAN_H

#include <stddef.h>

#include "cost.h"
#include "search.h"

#define PLAN_VERSION "0.1.0"
#define PLAN_SCHEMA "hetplan-plan/1"
#define PLAN_PROFILE_SCHEMA "hetplan-profile/1"

/* ---- files ------------------------------------------------------------ */

/* Read a whole file; *text is malloc'd (caller frees), NUL-terminated. */
int plan_read_file(const char *path, char **text, cost_error *err);
/* Write text to path through a temporary file in the same directory and
 * rename(2); on failure nothing is left behind.  path "-" = stdout is not
 * handled here. */
int plan_write_file_atomic(const char *path, const char *text,
                           cost_error *err);

/* ---- inputs (docs/inputs.md) ------------------------------------------ */
/* Each parse function takes the JSON text and the file name used in
 * error messages; each load function reads the file then parses.  On
 * success the output struct owns its memory (free with the cost_*_free
 * function); on failure it is left empty and err says file, JSON path
 * and what was expected. */

int plan_parse_cluster(const char *text, const char *file,
                       cost_cluster *out, cost_error *err);
int plan_load_cluster(const char *path, cost_cluster *out, cost_error *err);

int plan_parse_model(const char *text, const char *file, cost_model *out,
                     cost_error *err);
int plan_load_model(const char *path, cost_model *out, cost_error *err);

/* Profile arrays must match the model's layer count. */
int plan_parse_profile(const char *text, const char *file,
                       const cost_model *m, cost_profile *out,
                       cost_error *err);
int plan_load_profile(const char *path, const cost_model *m,
                      cost_profile *out, cost_error *err);

/* AMP's profiles.json (one sample, forward only, per GPU type and tp) as
 * a hetplan profile: fwd per layer at mbs 1, backward left to the cost
 * model's bwd_ratio.  key selects the model ("gpt2"). */
int plan_profile_from_amp(const char *path, const char *key,
                          const cost_model *m, cost_profile *out,
                          cost_error *err);

/* Strategies file of `planner evaluate`:
 * {"strategies":[{"tp":1,"dp":4,"pp":4,"mbs":1,
 *   "stage_boundaries":[0,7,14,20,30], "ranks":[...optional...]}]}.
 * Without "ranks" the Megatron placement (rank r on device r) is used.
 * Every strategy is checked with cost_strategy_check.  *out is a malloc'd
 * array of *n strategies; free each with cost_strategy_free, then free(). */
int plan_parse_strategies(const char *text, const char *file,
                          const cost_cluster *c, const cost_model *m,
                          int global_batch, cost_strategy **out, int *n,
                          cost_error *err);
int plan_load_strategies(const char *path, const cost_cluster *c,
                         const cost_model *m, int global_batch,
                         cost_strategy **out, int *n, cost_error *err);

/* ---- output (docs/plan-format.md) ------------------------------------- */

/* What a plan records besides the strategies. */
typedef struct plan_meta {
    const char *cluster_path;   /* as given on the command line */
    const char *model_path;
    const char *profile_path;   /* NULL when none */
    const char *profile_amp_key; /* model key when the profile is AMP's
                                    profiles.json, NULL for hetplan-profile/1 */
    char cluster_digest[65];    /* SHA-256 hex of each input file's bytes */
    char model_digest[65];
    char profile_digest[65];    /* "" when none */
    int global_batch;
    const char *method;         /* "amp", "megatron", "evaluate" */
    long evaluated;             /* candidates scored */
    long rejected_memory;
    double elapsed_s;           /* planning wall time */
    const cost_timeline *timeline; /* simulated iteration of the first strategy,
                                      written as its "timeline"; NULL = none */
} plan_meta;

/* SHA-256 of a byte string as 64 hex digits + NUL. */
void plan_sha256_hex(const void *data, size_t n, char out[65]);

/* Plan JSON text for n strategies with their results (best first).
 * Returns a malloc'd string (caller frees) or NULL when out of memory. */
char *plan_to_json(const plan_meta *meta, const cost_cluster *c,
                   const cost_model *m, const cost_params *p,
                   const cost_strategy *s, const cost_result *r, int n);

/* Compact human table of n ranked strategies (aligned columns, units in
 * the header), one line each, for stdout.  malloc'd, caller frees; NULL
 * when out of memory. */
char *plan_to_table(const cost_cluster *c, const cost_model *m,
                    const cost_strategy *s, const cost_result *r, int n,
                    int global_batch);

/* ---- ranking accuracy against measured runs (planner/ranking.c) ------- */

/* One measured trial and the model's prediction for it. */
typedef struct plan_trial {
    int index;              /* position in the data file */
    double measured_s;      /* measured iteration time, s; < 0 when the run failed */
    int failed_memory;      /* 1: failure labelled "memory" */
    double predicted_s;     /* model's iteration time, s */
    int fits;               /* model's memory verdict */
    int empty_stage;        /* structural verdict: 1 when a pipeline stage holds no
                               parameters (cost_result.empty_stage >= 0), so the run
                               is predicted to fail whatever the memory (0) */
} plan_trial;

/* Scores as ../shared/data/README.md defines them. */
typedef struct plan_ranking {
    int ran;                /* trials with a measurement */
    double spearman;        /* rho over trials that ran (average ranks for ties) */
    double kendall;         /* tau-b over trials that ran */
    double top1_regret;     /* measured time of the first pick among those
                               predicted to run (fit, no empty stage) / best
                               measured; < 0 when that pick failed (counts as a
                               failure) */
    int top1_index;         /* data-file index of that pick, -1 if none */
    double mape;            /* mean |predicted - measured| / measured */
    int oom_total;          /* trials labelled failure: memory */
    int oom_flagged;        /* ... that the model predicts not to run (memory or
                               empty stage) */
    int runnable_rejected;  /* trials that ran but are predicted not to run */
    int flagged_by_memory;  /* of oom_total: predicted not to fit memory */
    int flagged_by_empty_stage; /* of oom_total: with a stage without parameters
                               (a trial may count in both) */
} plan_ranking;

void plan_score_trials(const plan_trial *t, int n, plan_ranking *out);

/* Evaluate every trial of an AMP experiment file (homogeneous.json,
 * het_cluster.json) with `planner evaluate`'s code path: the trials
 * become a strategies document parsed by plan_parse_strategies, each
 * scored by cost_evaluate.  *trials is malloc'd (caller frees). */
int plan_amp_trials(const char *trial_path, const cost_cluster *c,
                    const cost_model *m, const cost_profile *prof,
                    const cost_params *cp, plan_trial **trials, int *n,
                    cost_error *err);

/* ---- plan files read back (planner/planfile.c) ------------------------ */

/* A plan JSON (hetplan-plan/1) read back with the inputs it names.
 * Input paths in the plan are tried as written (relative to the current
 * directory), then relative to the plan file's directory.  Everything is
 * owned by the struct; free with plan_doc_free. */
typedef struct plan_doc {
    char path[1024];            /* the plan file */
    char cluster_path[1024];    /* resolved input paths; profile "" if none */
    char model_path[1024];
    char profile_path[1024];
    int amp_profile;            /* 1: profile is AMP's profiles.json */
    char profile_key[32];       /* its model key ("gpt2") when amp_profile */
    int digest_mismatch;        /* 1: an input's SHA-256 differs from the plan's */
    char method[32];            /* "amp", "megatron", "evaluate", ... */
    int global_batch;
    cost_cluster cluster;
    cost_model model;
    cost_profile profile;       /* empty (nentries 0) when none */
    int have_profile;
    cost_params params;         /* settings.cost_params of the plan */
    cost_strategy *s;           /* n strategies, best first */
    double *predicted_s;        /* n: iteration times the plan recorded */
    int n;
} plan_doc;

/* Read a plan and re-load its inputs.  COST_EFIELD etc. with the plan's
 * file and JSON path in err on bad input. */
int plan_load_plan(const char *path, plan_doc *out, cost_error *err);
/* Free every member; NULL-safe; leaves *d zeroed. */
void plan_doc_free(plan_doc *d);

/* ---- calibration: trials files and calibrated profiles (issue 3) ------ */
/* section owned by the calibration work: add declarations here */

/* Measured runs (docs/calibration.md): the strategies of a trials file
 * with their measured iteration times. */
typedef struct plan_trial_set {
    cost_strategy *s;       /* n strategies, owned */
    double *measured_s;     /* n measured times, s; -1 = the run failed (owned) */
    int *failed_memory;     /* n: 1 when labelled "failure": "memory" (owned) */
    int n;
    int global_batch;       /* batch the strategies were checked against */
} plan_trial_set;

void plan_trial_set_free(plan_trial_set *t);
/* A trials file: the strategies format of `planner evaluate` with a
 * "measured_s" per strategy (seconds > 0; null or absent = failed run)
 * and an optional "failure" string.  With amp = 1 the file is one of AMP's
 * experiment logs (homogeneous.json, het_cluster.json: "trials" and
 * "global_batch").  global_batch 0 = the file's, else the model's. */
int plan_load_trials(const char *path, int amp, const cost_cluster *c,
                     const cost_model *m, int global_batch,
                     plan_trial_set *out, cost_error *err);

/* Predict every trial with cp (and its calib, if any): fills
 * t[i].index/measured_s/failed_memory/predicted_s/fits/empty_stage for n
 * trials. */
int plan_predict_trials(const cost_cluster *c, const cost_model *m,
                        const cost_profile *prof, const cost_params *cp,
                        const plan_trial_set *ts, plan_trial *t,
                        cost_error *err);
/* Leave-one-out: each measured trial predicted by a calibration fitted on
 * the other measured trials (failed runs, never fitted, by the fit on all
 * of them).  t as in plan_predict_trials. */
int plan_calibrate_loo(const cost_cluster *c, const cost_model *m,
                       const cost_profile *prof, const cost_params *cp,
                       const plan_trial_set *ts,
                       const search_calib_params *sp, plan_trial *t,
                       cost_error *err);

/* Cross-set: calibrate on the measured trials of fit_set (on cluster fc
 * with profile fprof), then predict every trial of ts (cluster c, profile
 * prof) with that calibration.  t as in plan_predict_trials. */
int plan_calibrate_cross(const cost_cluster *fc, const cost_profile *fprof,
                         const plan_trial_set *fit_set, const cost_cluster *c,
                         const cost_model *m, const cost_profile *prof,
                         const cost_params *cp, const plan_trial_set *ts,
                         const search_calib_params *sp, plan_trial *t,
                         cost_error *err);

/* The calibrated profile document (hetplan-profile/1): the entries of
 * base (layer times in ms, per model layer), the calibration, and a "fit"
 * object with the given scores (loo_mape < 0 = not computed).  malloc'd
 * JSON text, caller frees; NULL when out of memory. */
char *plan_calibrated_profile_json(const cost_model *m,
                                   const cost_profile *base,
                                   const search_calib_fit *fit,
                                   double loo_mape, double loo_spearman);

/* ---- DT-FM inputs and plan output (issue 4) --------------------------- */
/* section owned by the DT-FM work: add declarations here */

/* Where c_pp and c_dp come from (docs/decentralized.md). */
enum plan_dtfm_convention {
    PLAN_DTFM_PAPER = 0,        /* derived from the model and batch (physical units) */
    PLAN_DTFM_PUBLIC_CODE = 1   /* the public scheduler's hard-coded 0.471249e9 and
                                   0.65e9 bytes unless the file gives them */
};
/* "paper", "public-code"; NULL when out of range. */
const char *plan_dtfm_convention_name(int convention);
/* Convention from name, -1 when unknown. */
int plan_dtfm_convention_from_name(const char *name);

/* What the command line adds to a decentralized cluster file. */
typedef struct plan_dtfm_options {
    int convention;             /* enum plan_dtfm_convention (paper) */
    const cost_model *model;    /* model for c_pp/c_dp and compute, NULL = the paper's
                                   GPT3-XL settings (NULL) */
    int compute;                /* 1: per-device tasklet compute times (beyond the
                                   paper; needs device types) (0) */
    int d_pp;                   /* stages; 0 = the file's workload.d_pp, else 8 (0) */
} plan_dtfm_options;

void plan_dtfm_options_init(plan_dtfm_options *o);

/* A decentralized cluster and workload, ready for search_dtfm. */
typedef struct plan_dtfm_input {
    char name[64];              /* cluster name */
    cost_dtfm_problem prob;     /* owned; lat/bw as given (asymmetric allowed) */
    int nregions;               /* regions (1 for a matrix file) */
    char (*region_name)[64];    /* nregions names, owned */
    int *region_gpus;           /* nregions device counts, owned */
    int *device_region;         /* n: region of each device, owned */
    char (*device_type)[32];    /* n: GPU type of each device, owned */
    int convention;             /* enum plan_dtfm_convention */
    double batch_tokens;        /* tokens per iteration used for c_pp */
    double hidden;              /* hidden size used for c_pp */
    double params;              /* parameters used for c_dp */
    double act_bytes;           /* bytes per activation element */
    double grad_bytes;          /* bytes per gradient element */
    char workload_source[32];   /* "file", "model", "paper-gpt3-xl", "public-code" */
} plan_dtfm_input;

/* Parse a decentralized cluster file (regions, or full matrices) and
 * derive d_pp, d_dp, c_pp, c_dp (and compute times).  On failure err
 * names the file, the JSON path and what was expected; out is empty. */
int plan_dtfm_parse(const char *text, const char *file,
                    const plan_dtfm_options *o, plan_dtfm_input *out,
                    cost_error *err);
int plan_dtfm_load(const char *path, const plan_dtfm_options *o,
                   plan_dtfm_input *out, cost_error *err);
/* Free every member; NULL-safe; leaves in zeroed. */
void plan_dtfm_input_free(plan_dtfm_input *in);

/* What a decentralized plan records besides the schedule. */
typedef struct plan_dtfm_meta {
    const char *cluster_path;   /* as given */
    char cluster_digest[65];    /* SHA-256 hex of the file */
    const char *model_path;     /* NULL when none */
    char model_digest[65];      /* "" when none */
    const char *searcher;       /* "ga", "sa", "kl", "random", "exact" */
    unsigned long long seed;
    double seconds;             /* time limit, 0 = none */
    long max_evals;             /* evaluation limit, 0 = none */
    const search_dtfm_result *search; /* effort; may be NULL */
} plan_dtfm_meta;

/* Plan JSON (schema "hetplan-dtfm-plan/1", docs/decentralized.md) and a
 * compact table; malloc'd strings (caller frees), NULL when out of memory. */
char *plan_dtfm_to_json(const plan_dtfm_meta *meta,
                        const plan_dtfm_input *in,
                        const cost_dtfm_result *r);
char *plan_dtfm_to_table(const plan_dtfm_meta *meta,
                         const plan_dtfm_input *in,
                         const cost_dtfm_result *r);

/* ---- whatif and replan (issue 6) -------------------------------------- */
/* section owned by the whatif / replan work: add declarations here */

/* A straggler: rank slowed down by factor (2 = half speed). */
typedef struct plan_slow {
    int rank;
    double factor;
} plan_slow;

typedef struct plan_whatif_params {
    const plan_slow *slow;  /* nslow stragglers, distinct ranks */
    int nslow;
    double iterations;      /* how long the slowdown lasts, iterations; 0 = for good (0) */
    double tolerance;       /* a lossy remedy is recommended only when it beats
                               the best lossless one by this fraction (0.05) */
    double max_gamma;       /* largest pruning ratio of ZERO-resizing (0.9) */
    int granule;            /* MLP columns of re-planned shards, multiple of (64) */
} plan_whatif_params;

void plan_whatif_params_init(plan_whatif_params *p);

enum plan_remedy_kind {
    PLAN_REMEDY_NONE = 0,   /* keep the plan */
    PLAN_REMEDY_RESHARD,    /* re-planned uneven TP shards (lossless) */
    PLAN_REMEDY_REPLAN,     /* shards and pipeline layers re-planned (lossless) */
    PLAN_REMEDY_RESIZE,     /* ZERO-resizing, pruning ratio of eq. 1 (lossy) */
    PLAN_REMEDY_SEMI,       /* SEMI-migration: eq. 3 picks who migrates, the
                               rest resize to T_min (partly lossy) */
    PLAN_NREMEDIES
};
/* "none", "reshard", "replan", "resize", "semi"; NULL out of range. */
const char *plan_remedy_name(int kind);

typedef struct plan_remedy {
    int applicable;         /* 0: see note */
    int lossless;           /* 1: no accuracy change */
    double iter_s;          /* predicted iteration time, s */
    double one_off_s;       /* moving shards or layers once, s */
    double max_gamma;       /* largest pruning ratio it applies (lossy ones) */
    int fits;               /* memory verdict of the cost model */
    char note[256];
} plan_remedy;

typedef struct plan_straggler {
    int rank, device, stage, replica, tp_index;
    double factor;          /* slowdown */
    double t_s;             /* per-micro-batch fwd + bwd of its stage, slowed, s */
    double t_avg_s, t_min_s;/* average and fastest of its TP group, s */
    double gemm_s;          /* its TP-divided matrix multiplications (M_i), s */
    double gamma;           /* eq. 1 pruning ratio against T_avg (resize) */
    int migrate;            /* 1: eq. 3 says migrate (semi), 0: resize */
} plan_straggler;

typedef struct plan_whatif {
    double base_s;          /* the plan without stragglers, s */
    plan_remedy remedies[PLAN_NREMEDIES];
    plan_straggler *stragglers; /* nstragglers, owned */
    int nstragglers;
    int recommended;        /* enum plan_remedy_kind */
    char reason[640];       /* why, one or two sentences */
    cost_strategy best;     /* strategy of the recommended remedy (lossless
                               ones: shards and bounds to apply), owned */
} plan_whatif;

/* Predict the iteration time of strategy s with the stragglers of wp and
 * compare the remedies (docs/whatif-replan.md).  out is overwritten; free
 * with plan_whatif_free.  COST_EINVAL (message names the rank) for bad
 * stragglers. */
int plan_whatif_run(const cost_cluster *c, const cost_model *m,
                    const cost_profile *prof, const cost_params *cp,
                    const cost_strategy *s, const plan_whatif_params *wp,
                    plan_whatif *out, cost_error *err);
void plan_whatif_free(plan_whatif *w);
/* JSON report / aligned table; malloc'd, caller frees; NULL out of memory. */
char *plan_whatif_json(const plan_whatif *w, const char *plan_path,
                       int strategy);
char *plan_whatif_table(const plan_whatif *w, const char *plan_path,
                        int strategy);

/* Freeze schedule (docs/whatif-replan.md):
 * {"total_epochs": 10, "epochs": [{"epoch": 0, "frozen": 0},
 *  {"epoch": 3, "frozen": 8}, ...]}: from each listed epoch on, the first
 * `frozen` layers are frozen.  Epochs strictly increase from 0, frozen
 * never decreases and stays below the model's layer count; total_epochs
 * (default: last epoch + 1) ends the last phase. */
typedef struct plan_freeze_phase {
    int epoch;              /* first epoch of the phase */
    int frozen;             /* layers frozen in it */
} plan_freeze_phase;

typedef struct plan_freeze {
    plan_freeze_phase *phases; /* n, owned */
    int n;
    int total_epochs;
} plan_freeze;

int plan_parse_freeze(const char *text, const char *file, int nlayers,
                      plan_freeze *out, cost_error *err);
int plan_load_freeze(const char *path, int nlayers, plan_freeze *out,
                     cost_error *err);
void plan_freeze_free(plan_freeze *f);

/* One phase re-planned. */
typedef struct plan_replan_phase {
    int epoch, epochs;      /* first epoch, epochs it lasts */
    int frozen;
    double keep_s;          /* the first plan with these layers frozen, s */
    double rebalance_s;     /* same degrees, layers re-assigned, s */
    double best_s;          /* the chosen plan, s */
    int compressed;         /* 1: fewer stages than the first plan */
    int mb_lo, mb_hi;       /* PipeTransformer's micro-batch hint [pp, 6 pp] */
    int candidates;         /* plans scored */
    cost_strategy s;        /* the chosen plan, owned */
    cost_result r;          /* its prediction, owned */
} plan_replan_phase;

typedef struct plan_replan {
    plan_replan_phase *phases; /* n, owned */
    int n;
    double first_s;         /* the first plan with nothing frozen, s */
    double keep_total_s;    /* sum over phases of epochs * keep_s */
    double best_total_s;    /* sum over phases of epochs * best_s */
    double speedup;         /* keep_total_s / best_total_s */
    double speedup_unfrozen;/* epochs * first_s / best_total_s */
} plan_replan;

typedef struct plan_replan_params {
    int global_batch;       /* fixed across phases (required) */
    int max_mbs;            /* largest micro-batch size tried, 0 = any (0) */
    int compress;           /* 1: try fewer stages, more replicas (1) */
    unsigned placements;    /* placement rules tried (all) */
} plan_replan_params;

void plan_replan_params_init(plan_replan_params *p);

/* Re-plan strategy s for every phase of f (one phase with frozen = K for
 * `--frozen K`): re-balance the layers, compress the pipeline while the
 * stages fit memory, search the micro-batch count with the cost model
 * and give freed GPUs to more data-parallel replicas.  cp->frozen_layers
 * is ignored.  out is overwritten; free with plan_replan_free. */
int plan_replan_run(const cost_cluster *c, const cost_model *m,
                    const cost_profile *prof, const cost_params *cp,
                    const cost_strategy *s, const plan_freeze *f,
                    const plan_replan_params *rp, plan_replan *out,
                    cost_error *err);
void plan_replan_free(plan_replan *r);
char *plan_replan_json(const plan_replan *r, const cost_cluster *c,
                       const char *plan_path);
char *plan_replan_table(const plan_replan *r, const char *plan_path);

/* ---- exports and reports (issue 7) ------------------------------------ */
/* section owned by the export / report work: add declarations here */

/* Launchers a plan can be exported to (planner/export.c, docs/export.md
 * names the launcher versions whose flags are used). */
enum plan_export_target {
    PLAN_EXPORT_MEGATRON = 0,   /* Megatron-LM core_r0.9.0 pretrain_gpt.py */
    PLAN_EXPORT_DEEPSPEED,      /* DeepSpeed 0.14 config, hostfile, pipeline parts */
    PLAN_EXPORT_TORCHRUN,       /* PyTorch 2.4 torchrun per node */
    PLAN_EXPORT_HOSTFILE,       /* MPI / DeepSpeed hostfile */
    PLAN_EXPORT_NTARGETS
};
/* "megatron", "deepspeed", "torchrun", "hostfile"; NULL when out of range. */
const char *plan_export_target_name(int target);
/* Target from name, -1 when unknown. */
int plan_export_target_from_name(const char *name);

typedef struct plan_export_options {
    const char *master_addr;    /* rendezvous host; NULL = host of node rank 0 (NULL) */
    int master_port;            /* rendezvous port (29500) */
    const char *source;         /* plan name written in file headers; NULL = none (NULL) */
    int strategy;               /* 1-based rank of the strategy in the plan, for headers (1) */
} plan_export_options;

void plan_export_options_init(plan_export_options *o);

/* One generated file. */
typedef struct plan_export_file {
    char name[64];              /* file name inside the output directory */
    char what[96];              /* one-line description for listings */
    int executable;             /* 1: a shell script, to be made executable */
    char *text;                 /* contents, NUL-terminated, owned */
} plan_export_file;

#define PLAN_EXPORT_MAXFILES 6
#define PLAN_EXPORT_MAXNOTES 12

/* What an exporter produced.  Notes say what the launcher cannot express
 * exactly (they are also written into the files as comments). */
typedef struct plan_export {
    int target;                 /* enum plan_export_target */
    plan_export_file files[PLAN_EXPORT_MAXFILES];
    int nfiles;
    char notes[PLAN_EXPORT_MAXNOTES][400];
    int nnotes;
    int agents;                 /* torchrun agents (launch groups) */
    int hosts;                  /* distinct nodes used */
} plan_export;

/* Generate the files of one target for strategy s of a plan made for
 * cluster c, model m, cost parameters p and global batch global_batch.
 * out is overwritten; free with plan_export_free (also on failure).
 * COST_EINVAL when the strategy does not match the cluster or model. */
int plan_export_build(int target, const cost_cluster *c, const cost_model *m,
                      const cost_params *p, const cost_strategy *s,
                      int global_batch, const plan_export_options *o,
                      plan_export *out, cost_error *err);
/* Free the file texts; NULL-safe; leaves *e zeroed. */
void plan_export_free(plan_export *e);

/* Everything a report shows (planner/report.c, docs/report.md). */
typedef struct plan_report_input {
    const char *title;          /* heading, e.g. the plan's file name; NULL = none */
    const cost_cluster *c;
    const cost_model *m;
    const cost_strategy *s;     /* n strategies, best first */
    const cost_result *r;       /* n results of cost_evaluate, same order */
    int n;                      /* >= 1 */
    int shown;                  /* 0-based strategy whose timeline and memory are drawn */
    const cost_timeline *timeline; /* one iteration of s[shown]; NULL = section says
                                      it is unavailable */
    int global_batch;
} plan_report_input;

/* A rectangle of the drawing, in SVG user units (= CSS pixels). */
typedef struct plan_report_box {
    double x, y, w, h;
} plan_report_box;

/* Where the parts of the drawing are, for tests and for callers that
 * crop it.  Boxes of a missing part have w = h = 0. */
typedef struct plan_report_layout {
    double width, height;       /* whole SVG */
    plan_report_box timeline;   /* plot area of the timeline */
    plan_report_box timeline_legend;
    plan_report_box timeline_xaxis; /* ticks, numbers and axis title below the plot */
    plan_report_box timeline_yaxis; /* row labels left of the plot */
    plan_report_box memory;     /* plot area of the memory bars */
    plan_report_box memory_legend;
    plan_report_box memory_xaxis;
    plan_report_box memory_yaxis;
    plan_report_box topk;       /* plot area of the strategy comparison */
    plan_report_box topk_legend;
    plan_report_box topk_xaxis;
} plan_report_layout;

/* Self-contained SVG (no external fonts, images or scripts).  *svg is
 * malloc'd (caller frees); layout (may be NULL) gets the boxes. */
int plan_report_svg(const plan_report_input *in, char **svg,
                    plan_report_layout *layout, cost_error *err);
/* HTML page: the same SVG inline plus tables of the strategies and the
 * stages of the shown one.  *html is malloc'd (caller frees). */
int plan_report_html(const plan_report_input *in, char **html,
                     plan_report_layout *layout, cost_error *err);

#endif
