/* export/export.h: launch files that realise a plan in Megatron-LM,
 * DeepSpeed, torchrun or an MPI hostfile (docs/export.md). */
#ifndef HETPLAN_EXPORT_H
#define HETPLAN_EXPORT_H

#include "costmodel.h"
#include "search.h"

/* ---- exports and reports --------------------------------------------- */

/* Launchers a plan can be exported to (export/internal.h and docs/export.md
 * name the launcher versions whose flags are used). */
enum export_target {
    EXPORT_MEGATRON = 0,   /* Megatron-LM pretrain_gpt.py (core_r0.9.0, core_v0.19.0) */
    EXPORT_DEEPSPEED,      /* DeepSpeed config, hostfile, pipeline module (0.14, 0.19) */
    EXPORT_TORCHRUN,       /* torchrun per node (PyTorch 1.13, 2.x) */
    EXPORT_HOSTFILE,       /* MPI hostfile (mpirun --hostfile) */
    EXPORT_NTARGETS
};

/* Upstream releases a target can be written for: the older one a target
 * names first, or the current one.  The hostfile has no version. */
enum export_version {
    EXPORT_VERSION_OLD = 0,  /* core_r0.9.0, DeepSpeed 0.14, PyTorch 1.13 */
    EXPORT_VERSION_NEW = 1,  /* core_v0.19.0, DeepSpeed 0.19, PyTorch 2.x */
    EXPORT_NVERSIONS
};
/* The release name of a target's version ("core_r0.9.0", "0.14", "1.13",
 * ...; "" for the hostfile); NULL when either is out of range. */
const char *export_version_name(int target, int version);
/* Version of a target from its release name (also "old", "new",
 * "current"), -1 when unknown. */
int export_version_from_name(int target, const char *name);
/* "megatron", "deepspeed", "torchrun", "hostfile"; NULL when out of range. */
const char *export_target_name(int target);
/* Target from name, -1 when unknown. */
int export_target_from_name(const char *name);

/* What target (at version) can express, as constraints for the search
 * (search_params.launcher; planner plan --launcher): the features,
 * stage splits and rank orders export_build would refuse are exactly
 * those caps rules out, and export_build decides its feature refusals
 * from the same table.  UTIL_EINVAL for an unknown target or version, and
 * for the hostfile (it is no launcher to plan for).  What the model
 * itself lacks for a target (a 'generic' layer, ALiBi, no shape for
 * Megatron-LM) no strategy can change: export_build still refuses it. */
int export_target_caps(int target, int version, search_launcher *caps,
                       util_error *err);

typedef struct export_options {
    const char *master_addr;    /* rendezvous host; NULL = host of node rank 0 (NULL) */
    int master_port;            /* rendezvous port (29500) */
    const char *source;         /* plan name written in file headers; NULL = none (NULL) */
    int strategy;               /* 1-based rank of the strategy in the plan, for headers (1) */
    int version;                /* enum export_version: upstream release (EXPORT_VERSION_OLD) */
    int approximate;            /* 1: write the files although the target cannot
                                   express the plan exactly (approximations are
                                   stated in the notes); 0: refuse (0) */
    const char *idle_reason;    /* why the strategy leaves GPUs idle, added to
                                   the note listing them; NULL = none (NULL) */
} export_options;

void export_options_init(export_options *o);

/* One generated file. */
typedef struct export_file {
    char name[64];              /* file name inside the output directory */
    char what[96];              /* one-line description for listings */
    int executable;             /* 1: a shell script, to be made executable */
    char *text;                 /* contents, NUL-terminated, owned */
} export_file;

#define EXPORT_MAXFILES 6
#define EXPORT_MAXNOTES 16

/* What an exporter produced.  Notes explain the files; the notes marked
 * approx[i] say what the target cannot express exactly (all notes are
 * also written into the files as comments). */
typedef struct export_result {
    int target;                 /* enum export_target */
    export_file files[EXPORT_MAXFILES];
    int nfiles;
    char notes[EXPORT_MAXNOTES][400];
    int nnotes;
    int agents;                 /* torchrun agents (launch groups) */
    int hosts;                  /* distinct nodes used */
    int approx[EXPORT_MAXNOTES]; /* 1: notes[i] is an approximation of the plan */
    int napprox;                /* approximations among the notes */
    int version;                /* enum export_version written */
    int ranks;                  /* world size: tp * dp * pp of the strategy */
    int idle;                   /* the cluster's GPUs no rank runs on (left out
                                   of every file; a note lists them) */
} export_result;

/* Generate the files of one target for strategy s of a plan made for
 * cluster c, model m, cost parameters p and global batch global_batch.
 * out is overwritten; free with export_free (also on failure).
 * UTIL_EINVAL when the strategy does not match the cluster or model, when
 * a device cannot run the model's precision, or when the target cannot
 * express the plan exactly and o->approximate is 0: then out->nfiles is 0
 * and out->notes / out->approx still say what it cannot express. */
int export_build(int target, const fmt_cluster *c, const fmt_model *m,
                      const cost_params *p, const fmt_strategy *s,
                      int global_batch, const export_options *o,
                      export_result *out, util_error *err);
/* Free the file texts; NULL-safe; leaves *e zeroed. */
void export_free(export_result *e);

#endif
