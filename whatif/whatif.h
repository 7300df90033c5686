/* whatif/whatif.h: what a plan loses to stragglers and the remedies
 * (uneven TP shards, re-assigned layers, resizing after ZERO-resizing /
 * SEMI-migration), docs/whatif-replan.md. */
#ifndef HETPLAN_WHATIF_H
#define HETPLAN_WHATIF_H

#include "search.h"

/* ---- whatif and replan ----------------------------------------------- */

/* A straggler: rank slowed down by factor (2 = half speed). */
typedef struct whatif_slow {
    int rank;
    double factor;
} whatif_slow;

typedef struct whatif_params {
    const whatif_slow *slow;  /* nslow stragglers, distinct ranks */
    int nslow;
    double iterations;      /* how long the slowdown lasts, iterations; 0 = for good (0) */
    double tolerance;       /* a lossy remedy is recommended only when it beats
                               the best lossless one by this fraction (0.05) */
    double max_gamma;       /* largest pruning ratio of ZERO-resizing (0.9) */
    int granule;            /* MLP columns of re-planned shards, multiple of (64) */
    double deadline;        /* util_now() time after which no further remedy is
                               evaluated (the shard planning checks it between
                               TP groups too); 0 = none (0) */
} whatif_params;

void whatif_params_init(whatif_params *p);

enum whatif_remedy_kind {
    WHATIF_REMEDY_NONE = 0,   /* keep the plan */
    WHATIF_REMEDY_RESHARD,    /* re-planned uneven TP shards (lossless) */
    WHATIF_REMEDY_REPLAN,     /* shards and pipeline layers re-planned (lossless) */
    WHATIF_REMEDY_RESIZE,     /* ZERO-resizing, pruning ratio of eq. 1 (lossy) */
    WHATIF_REMEDY_SEMI,       /* SEMI-migration: eq. 3 picks who migrates, the
                               rest resize to T_min (partly lossy) */
    WHATIF_NREMEDIES
};
/* "none", "reshard", "replan", "resize", "semi"; NULL out of range. */
const char *whatif_remedy_name(int kind);

typedef struct whatif_remedy {
    int applicable;         /* 0: see note */
    int lossless;           /* 1: no accuracy change */
    double iter_s;          /* predicted iteration time, s */
    double one_off_s;       /* moving shards or layers once, s */
    double max_gamma;       /* largest pruning ratio it applies (lossy ones) */
    int fits;               /* memory verdict of the cost model */
    char note[256];
    int skipped;            /* 1: the deadline passed before it was evaluated
                               (applicable 0, the note says so) */
} whatif_remedy;

typedef struct whatif_straggler {
    int rank, device, stage, replica, tp_index;
    double factor;          /* slowdown */
    double t_s;             /* per-micro-batch fwd + bwd of its stage, slowed, s */
    double t_avg_s, t_min_s;/* average and fastest of its TP group, s */
    double gemm_s;          /* its TP-divided matrix multiplications (M_i), s */
    double gamma;           /* eq. 1 pruning ratio against T_avg (resize) */
    int migrate;            /* 1: eq. 3 says migrate (semi), 0: resize */
} whatif_straggler;

typedef struct whatif_result {
    double base_s;          /* the plan without stragglers, s */
    whatif_remedy remedies[WHATIF_NREMEDIES];
    whatif_straggler *stragglers; /* nstragglers, owned */
    int nstragglers;
    int recommended;        /* enum whatif_remedy_kind */
    char reason[640];       /* why, one or two sentences */
    fmt_strategy best;     /* strategy of the recommended remedy (lossless
                               ones: shards and bounds to apply), owned */
    int timed_out;          /* 1: wp->deadline left some remedies unevaluated;
                               the recommendation is among those evaluated */
} whatif_result;

/* Predict the iteration time of strategy s with the stragglers of wp and
 * compare the remedies (docs/whatif-replan.md), in the order of enum
 * whatif_remedy_kind; keeping the plan is always evaluated, the others
 * only while wp->deadline has not passed.  out is overwritten; free
 * with whatif_free.  UTIL_EINVAL (message names the rank) for bad
 * stragglers. */
int whatif_run(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *cp,
                    const fmt_strategy *s, const whatif_params *wp,
                    whatif_result *out, util_error *err);
void whatif_free(whatif_result *w);
/* JSON report / aligned table; malloc'd, caller frees; NULL out of memory. */
char *whatif_json(const whatif_result *w, const char *plan_path,
                       int strategy);
char *whatif_table(const whatif_result *w, const char *plan_path,
                        int strategy);

#endif
