/* export/export.h: launch files that realise a plan in Megatron-LM,
 * DeepSpeed, torchrun or an MPI hostfile (docs/export.md). */
#ifndef HETPLAN_EXPORT_H
#define HETPLAN_EXPORT_H

#include "costmodel.h"

/* ---- exports and reports --------------------------------------------- */

/* Launchers a plan can be exported to (export/internal.h and docs/export.md
 * name the launcher versions whose flags are used). */
enum export_target {
    EXPORT_MEGATRON = 0,   /* Megatron-LM core_r0.9.0 pretrain_gpt.py */
    EXPORT_DEEPSPEED,      /* DeepSpeed 0.14 config, hostfile, pipeline parts */
    EXPORT_TORCHRUN,       /* PyTorch 2.4 torchrun per node */
    EXPORT_HOSTFILE,       /* MPI / DeepSpeed hostfile */
    EXPORT_NTARGETS
};
/* "megatron", "deepspeed", "torchrun", "hostfile"; NULL when out of range. */
const char *export_target_name(int target);
/* Target from name, -1 when unknown. */
int export_target_from_name(const char *name);

typedef struct export_options {
    const char *master_addr;    /* rendezvous host; NULL = host of node rank 0 (NULL) */
    int master_port;            /* rendezvous port (29500) */
    const char *source;         /* plan name written in file headers; NULL = none (NULL) */
    int strategy;               /* 1-based rank of the strategy in the plan, for headers (1) */
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
#define EXPORT_MAXNOTES 12

/* What an exporter produced.  Notes say what the launcher cannot express
 * exactly (they are also written into the files as comments). */
typedef struct export_result {
    int target;                 /* enum export_target */
    export_file files[EXPORT_MAXFILES];
    int nfiles;
    char notes[EXPORT_MAXNOTES][400];
    int nnotes;
    int agents;                 /* torchrun agents (launch groups) */
    int hosts;                  /* distinct nodes used */
} export_result;

/* Generate the files of one target for strategy s of a plan made for
 * cluster c, model m, cost parameters p and global batch global_batch.
 * out is overwritten; free with export_free (also on failure).
 * UTIL_EINVAL when the strategy does not match the cluster or model. */
int export_build(int target, const fmt_cluster *c, const fmt_model *m,
                      const cost_params *p, const fmt_strategy *s,
                      int global_batch, const export_options *o,
                      export_result *out, util_error *err);
/* Free the file texts; NULL-safe; leaves *e zeroed. */
void export_free(export_result *e);

#endif
