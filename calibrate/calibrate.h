/* calibrate/calibrate.h: fitting the model's physical constants to
 * measured runs (least absolute deviation, GLPK), leave-one-out and
 * cross-set prediction, ranking scores against measured times, and the
 * calibrated profile document (docs/calibration.md). */
#ifndef HETPLAN_CALIBRATE_H
#define HETPLAN_CALIBRATE_H

#include "costmodel.h"

/* ---- calibration by least absolute deviation ------------------------- */

/* Constants calib_run may move (bit mask; the rest stay neutral). */
enum calib_fit_flags {
    CALIB_COMPUTE = 1,   /* compute_scale per device type */
    CALIB_MBS = 2,       /* mbs_half per device type */
    CALIB_LINKS = 4,     /* bw_frac per link class */
    CALIB_LATENCY = 8,   /* msg_latency */
    CALIB_TP_FIXED = 16, /* tp_fixed */
    CALIB_OVERHEAD = 32, /* iter_overhead */
    CALIB_ALL = 63
};

typedef struct calib_params {
    unsigned fit;           /* enum calib_fit_flags (CALIB_ALL) */
    double reg;             /* weight of the pull towards the neutral values: objective
                               += reg * sum |x - neutral| / range per constant (0.01) */
    int max_rounds;         /* linearise-and-solve rounds at most (30) */
    double tol;             /* stop when a round improves the objective less (1e-7) */
    double deadline;        /* util_now() time after which no further round
                               starts (at least one runs) and calib_loo starts no
                               further fit, keeping the best so far; 0 = none (0) */
} calib_params;

void calib_params_init(calib_params *p);

/* What a fit reached. */
typedef struct calib_fit {
    fmt_calibration cal;   /* the fitted constants */
    int nfit;               /* trials fitted (measured time given) */
    int nfree;              /* constants the trials constrain (the others stay neutral) */
    int rounds;             /* linear programs solved */
    double mape;            /* in-sample mean |predicted - measured| / measured */
    double objective;       /* mape + the regularisation term */
    int timed_out;          /* 1: sp->deadline stopped the rounds before the fit
                               converged; cal is the best point reached */
} calib_fit;

/* Fit the calibration constants to measured iteration times by least
 * relative absolute deviation, min sum |T_i(x) - m_i| / m_i, solved as a
 * sequence of linear programs (GLPK): T_i is linearised at the current x
 * (bottleneck stages and devices fixed), the LP is solved inside a trust
 * region, the model re-evaluated (docs/calibration.md).  measured[i] < 0
 * marks a failed run, left out.  cp->calib and prof->calib are ignored
 * (the fit starts from neutral).  UTIL_EINVAL with fewer than 2 measured
 * trials; UTIL_EINTERNAL when GLPK fails. */
int calib_run(const fmt_cluster *c, const fmt_model *m,
                     const fmt_profile *prof, const cost_params *cp,
                     const fmt_strategy *s, const double *measured, int n,
                     const calib_params *sp, calib_fit *out,
                     util_error *err);

/* ---- ranking accuracy against measured runs (calibrate/ranking.c) ---- */

/* One measured trial and the model's prediction for it. */
typedef struct calib_trial {
    int index;              /* position in the data file */
    double measured_s;      /* measured iteration time, s; < 0 when the run failed */
    int failed_memory;      /* 1: failure labelled "memory" */
    double predicted_s;     /* model's iteration time, s */
    int fits;               /* model's memory verdict */
    int empty_stage;        /* structural verdict: 1 when a pipeline stage holds no
                               parameters (cost_result.empty_stage >= 0), so the run
                               is predicted to fail whatever the memory (0) */
} calib_trial;

/* Scores as ../shared/data/README.md defines them. */
typedef struct calib_ranking {
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
} calib_ranking;

void calib_score_trials(const calib_trial *t, int n, calib_ranking *out);

/* Evaluate every trial of an AMP experiment file (homogeneous.json,
 * het_cluster.json) with `planner evaluate`'s code path: the trials
 * become a strategies document parsed by fmt_parse_strategies, each
 * scored by cost_evaluate.  *trials is malloc'd (caller frees). */
int calib_amp_trials(const char *trial_path, const fmt_cluster *c,
                    const fmt_model *m, const fmt_profile *prof,
                    const cost_params *cp, calib_trial **trials, int *n,
                    util_error *err);

/* Predict every trial with cp (and its calib, if any): fills
 * t[i].index/measured_s/failed_memory/predicted_s/fits/empty_stage for n
 * trials. */
int calib_predict_trials(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const fmt_trial_set *ts, calib_trial *t,
                        util_error *err);
/* Leave-one-out: each measured trial predicted by a calibration fitted on
 * the other measured trials (failed runs, never fitted, by the fit on all
 * of them).  t as in calib_predict_trials. */
int calib_loo(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const fmt_trial_set *ts,
                       const calib_params *sp, calib_trial *t,
                       util_error *err);
/* calib_loo within sp->deadline: once it has passed no further fit
 * starts, and a fit it cut short counts as not done.  left_out (ts->n
 * flags, may be NULL) gets 1 for each trial predicted by a complete fit
 * without it, 0 for failed runs and for the trials left unfitted, which
 * keep the prediction of the fit on all measured trials; *ndone (may be
 * NULL) the number of 1s.  UTIL_OK whether or not the deadline cut it. */
int calib_loo_until(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_trial_set *ts, const calib_params *sp,
                    calib_trial *t, int *left_out, int *ndone, util_error *err);

/* Cross-set: calibrate on the measured trials of fit_set (on cluster fc
 * with profile fprof), then predict every trial of ts (cluster c, profile
 * prof) with that calibration.  t as in calib_predict_trials. */
int calib_cross(const fmt_cluster *fc, const fmt_profile *fprof,
                         const fmt_trial_set *fit_set, const fmt_cluster *c,
                         const fmt_model *m, const fmt_profile *prof,
                         const cost_params *cp, const fmt_trial_set *ts,
                         const calib_params *sp, calib_trial *t,
                         util_error *err);

/* The calibrated profile document (hetplan-profile/1): the entries of
 * base (layer times in ms, per model layer), the calibration, and a "fit"
 * object with the given scores (loo_mape < 0 = not computed).  malloc'd
 * JSON text, caller frees; NULL when out of memory. */
char *calib_profile_json(const fmt_model *m,
                                   const fmt_profile *base,
                                   const calib_fit *fit,
                                   double loo_mape, double loo_spearman);

#endif
