/* replan/replan.h: re-planning as layers freeze (PipeTransformer):
 * freeze schedules, re-balanced stages, freed GPUs as more replicas,
 * docs/whatif-replan.md. */
#ifndef HETPLAN_REPLAN_H
#define HETPLAN_REPLAN_H

#include "search.h"

/* Freeze schedule (docs/whatif-replan.md):
 * {"total_epochs": 10, "epochs": [{"epoch": 0, "frozen": 0},
 *  {"epoch": 3, "frozen": 8}, ...]}: from each listed epoch on, the first
 * `frozen` layers are frozen.  Epochs strictly increase from 0, frozen
 * never decreases and stays below the model's layer count; total_epochs
 * (default: last epoch + 1) ends the last phase. */
typedef struct replan_freeze_phase {
    int epoch;              /* first epoch of the phase */
    int frozen;             /* layers frozen in it */
} replan_freeze_phase;

/* Phases of a freeze schedule: each is re-planned (docs/limits.md). */
#define REPLAN_MAX_PHASES 1024

typedef struct replan_freeze {
    replan_freeze_phase *phases; /* n, owned */
    int n;
    int total_epochs;
} replan_freeze;

int replan_parse_freeze(const char *text, const char *file, int nlayers,
                      replan_freeze *out, util_error *err);
int replan_load_freeze(const char *path, int nlayers, replan_freeze *out,
                     util_error *err);
void replan_freeze_free(replan_freeze *f);

/* One phase re-planned. */
typedef struct replan_phase {
    int epoch, epochs;      /* first epoch, epochs it lasts */
    int frozen;
    double keep_s;          /* the first plan with these layers frozen, s */
    double rebalance_s;     /* same degrees, layers re-assigned, s */
    double best_s;          /* the chosen plan, s */
    int compressed;         /* 1: fewer stages than the first plan */
    int mb_lo, mb_hi;       /* PipeTransformer's micro-batch hint [pp, 6 pp] */
    int candidates;         /* plans scored */
    fmt_strategy s;        /* the chosen plan, owned */
    cost_result r;          /* its prediction, owned */
} replan_phase;

typedef struct replan_result {
    replan_phase *phases; /* n, owned */
    int n;
    double first_s;         /* the first plan with nothing frozen, s */
    double keep_total_s;    /* sum over phases of epochs * keep_s */
    double best_total_s;    /* sum over phases of epochs * best_s */
    double speedup;         /* keep_total_s / best_total_s */
    double speedup_unfrozen;/* epochs * first_s / best_total_s */
    int timed_out;          /* 1: time_limit_s cut a phase's search short; its
                               plan is the best of the candidates scored */
} replan_result;

typedef struct replan_params {
    int global_batch;       /* fixed across phases (required) */
    int max_mbs;            /* largest micro-batch size tried, 0 = any (0) */
    int compress;           /* 1: try fewer stages, more replicas (1) */
    unsigned placements;    /* placement rules tried (all) */
    double time_limit_s;    /* stop searching after this many seconds over all
                               phases, keeping each phase's best so far
                               (out->timed_out); <= 0 = none (0) */
    search_launcher launcher; /* every phase's strategy keeps to what this
                                 launcher runs (export_target_caps; the
                                 plan's settings.launcher); zeroed = any */
} replan_params;

void replan_params_init(replan_params *p);

/* Re-plan strategy s for every phase of f (one phase with frozen = K for
 * `--frozen K`): re-balance the layers, compress the pipeline while the
 * stages fit memory, search the micro-batch count with the cost model
 * and give freed GPUs to more data-parallel replicas.  cp->frozen_layers
 * is ignored.  out is overwritten; free with replan_free. */
int replan_run(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_strategy *s, const replan_freeze *f,
                    const replan_params *rp, replan_result *out,
                    util_error *err);
void replan_free(replan_result *r);
char *replan_json(const replan_result *r, const fmt_cluster *c,
                       const char *plan_path);
char *replan_table(const replan_result *r, const char *plan_path);

#endif
