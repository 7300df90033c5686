/* launcher/launch.h: the GPU-free parts of hetplan-launch (library
 * hetplan_launcher, plain C): its command line, the mapping from a plan
 * to the work a GPU runs, the pipeline schedule of a stage, and the
 * composition of measured stage times into an iteration with the
 * planner's schedule simulator, written as a trial file that `planner
 * calibrate` and `planner evaluate` read.  Nothing here prints. */
#ifndef HETPLAN_LAUNCH_H
#define HETPLAN_LAUNCH_H

#include "prof.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAUNCH_TRIAL_FORMAT "hetplan-trial/1"

/* ---- command line (launcher/args.c) ----------------------------------- */

typedef struct launch_options {
    const char *plan;       /* --plan FILE (required) */
    const char *output;     /* --output FILE: trial JSON; NULL = none */
    int rank;               /* --rank R: run only rank R's stage; -1 = all */
    int strategy;           /* --strategy K: K-th strategy of the plan (1 = best) */
    int iterations;         /* --iterations N: timed iterations (default 10) */
    int warmup;             /* --warmup N: untimed iterations (default 2) */
    int device;             /* --gpu N: CUDA device index (default 0) */
    int json;               /* --format json: print the trial on stdout */
    int quiet, verbose, help, version;
} launch_options;

void launch_options_init(launch_options *o);
/* argv[0] is the program name.  COST_EINVAL with the message in err. */
int launch_parse_args(int argc, char **argv, launch_options *o,
                      cost_error *err);

/* ---- plan to work (launcher/work.c) ----------------------------------- */

typedef struct launch_stage {
    int first, last;        /* layers [first, last) */
    int same_as;            /* first stage with the same layer kinds (itself
                               when distinct): identical synthetic work */
    int run;                /* 1: this launcher measures the stage */
    int nsynth;             /* layers synthesised on the GPU */
    int nmodelled;          /* layers timed by the cost model (generic kind) */
    char device_type[32];   /* the plan's device type of the stage's first rank */
} launch_stage;

typedef struct launch_work {
    int strategy;           /* 0-based index into the plan's strategies */
    int tp, dp, pp, mbs, gas, schedule;
    int ranks;              /* tp * dp * pp */
    int rank;               /* rank asked for, -1 = all */
    launch_stage *stages;   /* pp entries, owned */
} launch_work;

/* Work of strategy `strategy` (0-based) of the plan; rank >= 0 limits the
 * run to that rank's stage (its stage's `run` = 1, others 0); rank -1
 * runs every distinct stage.  COST_EINVAL for a strategy or rank out of
 * range.  Free with launch_work_free (NULL-safe). */
int launch_work_of(const plan_doc *d, int strategy, int rank,
                   launch_work *out, cost_error *err);
void launch_work_free(launch_work *w);

/* Order of the passes stage `stage` runs in one iteration: 2 * gas
 * entries, bwd[i] = 0 forward / 1 backward of micro-batch micro[i].
 * 1F1B (PipeDream-flush): min(pp - stage - 1, gas) forwards, then one
 * forward and one backward alternately, then the remaining backwards;
 * GPipe: every forward, then every backward.  Returns 2 * gas, or -1 for
 * bad arguments. */
int launch_stage_order(int schedule, int stage, int pp, int gas, int *bwd,
                       int *micro);

/* ---- composition (launcher/compose.c) --------------------------------- */

/* What the GPU measured for one stage (synthesised layers only). */
typedef struct launch_measure {
    int measured;           /* 1: the stage ran; 0: use the prediction */
    double fwd_s, bwd_s;    /* per micro-batch, median over the passes */
    double fwd_iqr_s, bwd_iqr_s;
    double busy_s;          /* median per iteration of the stage's span,
                               first pass start to last pass end */
    double opt_s;           /* optimizer step of the stage's shard, s;
                               < 0 = not measured (the cost model's) */
} launch_measure;

/* An iteration composed from measured stage times. */
typedef struct launch_trial {
    int pp, dp, gas;
    double predicted_s;     /* the plan's predicted iteration time */
    double simulated_s;     /* the simulator with the cost model's stage times */
    double measured_s;      /* the simulator with the measured stage times */
    double *pred_fwd_s;     /* pp: cost model, per micro-batch, slowest replica */
    double *pred_bwd_s;     /* pp */
    double *used_fwd_s;     /* pp: what the simulator got for the measured run:
                               measured + modelled TP all-reduce and generic
                               layers; the prediction when not measured */
    double *used_bwd_s;     /* pp */
    double *tp_comm_s;      /* pp: modelled TP all-reduce per micro-batch (fwd + bwd) */
    double *opt_s;          /* pp: optimizer step used (measured or modelled) */
    double *busy_s;         /* pp: busy time of each stage in the measured
                               timeline (replica 0) */
    double p2p_s;           /* modelled transfers per micro-batch, summed over cuts */
    double dp_s;            /* modelled DP all-reduce, longest stage */
} launch_trial;

/* Compose: the cost model gives what one GPU cannot measure (transfers,
 * TP and DP all-reduces, generic layers; every stage not measured), the
 * measurements give the rest; cost_simulate_stages runs the schedule.
 * meas has w->pp entries.  Free with launch_trial_free (NULL-safe). */
int launch_compose(const plan_doc *d, const launch_work *w,
                   const launch_measure *meas, launch_trial *out,
                   cost_error *err);
void launch_trial_free(launch_trial *t);

/* The trial document: the strategies format of `planner evaluate`
 * (docs/inputs.md) with "measured_s" per strategy, plus the plan's
 * prediction, per-stage times and how they were obtained (docs/
 * profiler.md).  dev may be NULL.  malloc'd (caller frees); NULL when out
 * of memory. */
char *launch_trial_json(const plan_doc *d, const launch_work *w,
                        const launch_measure *meas, const launch_trial *t,
                        const prof_device_info *dev, int iterations);

#ifdef __cplusplus
}
#endif

#endif
