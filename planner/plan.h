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
} plan_trial;

/* Scores as ../shared/data/README.md defines them. */
typedef struct plan_ranking {
    int ran;                /* trials with a measurement */
    double spearman;        /* rho over trials that ran (average ranks for ties) */
    double kendall;         /* tau-b over trials that ran */
    double top1_regret;     /* measured time of the first pick among those
                               predicted to fit / best measured; < 0 when that
                               pick failed (counts as a failure) */
    int top1_index;         /* data-file index of that pick, -1 if none */
    double mape;            /* mean |predicted - measured| / measured */
    int oom_total;          /* trials labelled failure: memory */
    int oom_flagged;        /* ... that the model predicts not to fit */
    int runnable_rejected;  /* trials that ran but are predicted not to fit */
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

/* ---- DT-FM inputs and plan output (issue 4) --------------------------- */
/* section owned by the DT-FM work: add declarations here */

/* ---- whatif and replan (issue 6) -------------------------------------- */
/* section owned by the whatif / replan work: add declarations here */

/* ---- exports and reports (issue 7) ------------------------------------ */
/* section owned by the export / report work: add declarations here */

#endif
