/* plan/plan.h: the plan document (hetplan-plan/1, docs/plan-format.md):
 * the JSON plan and the table written from search results, and a plan
 * read back with its inputs checked against their digests. */
#ifndef HETPLAN_PLAN_H
#define HETPLAN_PLAN_H

#include <stddef.h>

#include "search.h"

#define PLAN_SCHEMA "hetplan-plan/1"

/* ---- output (docs/plan-format.md) ------------------------------------ */

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
    const char *const *idle_reasons; /* n entries: why strategy i leaves devices
                                        idle (search_candidate.idle_reason);
                                        NULL = no reason recorded */
    const char *objective;      /* "time", "cost"; NULL = not recorded */
    double memory_headroom;     /* fraction of memory the search kept free */
    int subsets;                /* device subsets searched, 0 = not recorded */
    long anneal_moves;          /* placement annealing moves scored */
    unsigned long seed;         /* --seed of the search */
    int requested_batch;        /* global batch asked for when the plan rounded it
                                   (settings.requested_global_batch); 0 = not rounded */
    const char *batch_note;     /* why it was rounded (settings.batch_note) */
    int advice_batch;           /* a global batch within a few percent that trains
                                   faster per sample (search.batch_advice); 0 = none */
    double advice_speedup;      /* its samples/s over the plan's best strategy's */
    const char *requested_precision; /* precision asked for when the plan fell
                                        back to another (settings.requested_precision);
                                        NULL = the one asked for is used */
    const char *precision_note; /* why it fell back (settings.precision_note) */
    int timed_out;              /* 1: a time limit ended the search early; the
                                   plan holds the best strategies found so far
                                   (search.status "time-limit", else "complete") */
    double time_limit_s;        /* the search's time limit, s; 0 = none */
    const char *launcher;       /* launcher the search kept to (settings.launcher:
                                   "megatron", "deepspeed", "torchrun"); NULL = none */
    const char *launcher_version; /* its release ("core_r0.9.0", "0.14", ...) */
} plan_meta;


/* Plan JSON text for n strategies with their results (best first).
 * Returns a malloc'd string (caller frees) or NULL when out of memory. */
char *plan_to_json(const plan_meta *meta, const fmt_cluster *c,
                   const fmt_model *m, const cost_params *p,
                   const fmt_strategy *s, const cost_result *r, int n);

/* Compact human table of n ranked strategies (aligned columns, units in
 * the header), one line each, for stdout; with price columns (per hour of
 * the GPUs in use, per iteration) when c gives prices.  malloc'd, caller frees; NULL
 * when out of memory. */
char *plan_to_table(const fmt_cluster *c, const fmt_model *m,
                    const fmt_strategy *s, const cost_result *r, int n,
                    int global_batch);

/* Lines for stdout after the table about the devices of the best
 * strategy s (result r): those it leaves idle, node by node, and why
 * (reason may be NULL), and its price when c gives prices; "" when
 * neither applies.  malloc'd, caller frees; NULL when out of memory. */
char *plan_devices_text(const fmt_cluster *c, const fmt_strategy *s,
                        const cost_result *r, const char *reason);

/* ---- plan files read back (plan/read.c) ------------------------------ */

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
    /* per input (PLAN_INPUT_*): its bytes differ from those the plan was
     * made from, the SHA-256 the plan recorded and the file's now, and
     * what the plan recorded of it (cluster and model summaries) that the
     * file now says otherwise ("" when nothing it recorded differs) */
    int changed[3];
    char recorded_sha[3][65];
    char current_sha[3][65];
    char differs[3][400];
    char method[32];            /* "amp", "megatron", "evaluate", ... */
    int global_batch;
    fmt_cluster cluster;
    fmt_model model;
    fmt_profile profile;       /* empty (nentries 0) when none */
    int have_profile;
    cost_params params;         /* settings.cost_params of the plan */
    fmt_strategy *s;           /* n strategies, best first */
    double *predicted_s;        /* n: iteration times the plan recorded */
    int n;
    char (*idle_reason)[256];   /* n: why strategy i leaves GPUs idle (the reason
                                   of its first "idle" entry), "" when it uses
                                   every GPU or records none */
    char launcher[16];          /* settings.launcher.target, "" when the plan
                                   was made for no launcher */
    char launcher_version[32];  /* settings.launcher.version, "" when none */
} plan_doc;

/* The inputs a plan names, indices of plan_doc.changed and the like. */
enum plan_input { PLAN_INPUT_CLUSTER = 0, PLAN_INPUT_MODEL, PLAN_INPUT_PROFILE };

/* Read a plan and re-load its inputs.  UTIL_EFIELD etc. with the plan's
 * file and JSON path in err on bad input.  When an input changed since
 * the plan was made and the plan does not fit it any more (fewer GPUs, a
 * layer less), the error names that input, how it changed and then the
 * plan's mismatch. */
int plan_load_plan(const char *path, plan_doc *out, util_error *err);

/* The inputs of d that changed since the plan was made, one clause each
 * ("the cluster file 'c.json' changed since 'plan.json' was made (SHA-256
 * 3f2a9c1b04d5e6f7 in the plan, 8d0e... now): node 1 is 'c', the plan
 * recorded 'b'"), into buf (n bytes); returns how many changed (0: buf
 * ""). */
int plan_changed_inputs(const plan_doc *d, char *buf, size_t n);
/* Free every member; NULL-safe; leaves *d zeroed. */
void plan_doc_free(plan_doc *d);

#endif
