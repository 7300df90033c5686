/* export/internal.h: what the exporters of export/ share (not part of
 * the API in export.h): the analysed strategy, its torchrun agents and the
 * helpers that write common parts of the files. */
#ifndef HETPLAN_EXPORT_INTERNAL_H
#define HETPLAN_EXPORT_INTERNAL_H

#include "export.h"

/* Launcher releases whose flags are used (docs/export.md). */
#define EXPORT_MEGATRON_OLD "core_r0.9.0"
#define EXPORT_MEGATRON_NEW "core_v0.19.0"
#define EXPORT_DEEPSPEED_OLD "0.14"
#define EXPORT_DEEPSPEED_NEW "0.19"
#define EXPORT_TORCH_OLD "1.13"
#define EXPORT_TORCH_NEW "2.x"

/* A torchrun agent: consecutive ranks on one node. */
typedef struct export_group {
    int node;
    int first;      /* first global rank */
    int n;          /* ranks (= nproc-per-node) */
} export_group;

/* A strategy being exported, cut into torchrun agents. */
typedef struct export_ctx {
    const fmt_cluster *c;
    const fmt_model *m;
    const cost_params *p;
    const fmt_strategy *s;
    const export_options *o;
    int global_batch;
    int nranks;         /* tp * dp * pp, at most the cluster's GPUs */
    int idle;           /* the cluster's GPUs no rank runs on */
    export_group *g;
    int ng;
    int *node_groups;   /* per node: agents on it */
    int hosts;
    int identity_gpus;  /* every agent lists its node's GPUs 0..n-1 in order */
    const char *master;
    export_result *out;
    search_launcher caps;  /* what the target expresses (export_target_caps) */
} export_ctx;

/* ---- the strategy and common file parts (export/export.c) ------------ */

/* Add a note (at most EXPORT_MAXNOTES). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void export_note(export_ctx *x, const char *fmt, ...);
/* Add a note saying what the target cannot express exactly; the export
 * is then refused unless the options accept approximations. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void export_approx(export_ctx *x, const char *fmt, ...);
/* The release name written (export_version_name of the target). */
const char *export_release(const export_ctx *x);
/* Recomputation level and ZeRO stage of the strategy (stated or the
 * plan's default). */
int export_recompute(const export_ctx *x);
int export_zero(const export_ctx *x);
/* The strategy's optimizer offload (enum fmt_offload). */
int export_offload(const export_ctx *x);
/* GPU index of a rank on its node; a node's host name and GPU type. */
int export_gpu_of(const export_ctx *x, int rank);
const char *export_host_of(const export_ctx *x, int node);
const char *export_type_of(const export_ctx *x, int node);
/* The agent's GPUs, comma-separated, in rank order. */
void export_gpu_list(const export_ctx *x, const export_group *g, util_buf *b);
/* s as one shell word: as is when it holds only letters, digits and
 * @%+=:,./_- (and is not empty), else in single quotes with each '
 * written '\''.  Every value put into a generated script goes through it. */
void export_sh_word(util_buf *b, const char *s);
/* s for a comment or a text file: control characters (a newline would end
 * a shell comment) as '?'; copied into buf of n bytes, returned. */
const char *export_clean(char *buf, size_t n, const char *s);
/* "fp32", "bf16" or "fp16". */
const char *export_precision(const fmt_model *m);
/* The comment block heading a file: what it is, plan, strategy, notes. */
void export_header(const export_ctx *x, util_buf *b, const char *what);
/* The first lines of a launch script: "#!/bin/sh" (the scripts are POSIX
 * sh; bash runs them alike), then export_header. */
void export_script_header(const export_ctx *x, util_buf *b, const char *what);

/* ---- torchrun agents and the hostfile (export/torchrun.c) ------------ */

/* Notes shared by the launch scripts about agents and hosts. */
void export_agent_notes(export_ctx *x);
/* For an fp32 plan, the environment that makes its matrix multiplications
 * run as the plan assumes (cost_tf32): TF32 forced on (PyTorch's
 * TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1) or off (cuBLAS's
 * NVIDIA_TF32_OVERRIDE=0, which overrides every other setting); nothing
 * for a 16-bit plan. */
void export_tf32_env(const export_ctx *x, util_buf *b);
/* The per-agent case arms of a launch script running cmd. */
void export_launch_cases(const export_ctx *x, util_buf *b, const char *cmd);
/* The agents as a comment table. */
void export_agent_table(const export_ctx *x, util_buf *b);
/* ranks.txt: every rank's place. */
void export_ranks_file(const export_ctx *x, util_buf *b);
/* Descriptions of the files more than one target writes. */
#define EXPORT_RANKS_WHAT "global rank -> agent, local rank, host, GPU"
#define EXPORT_HOSTFILE_WHAT "hosts in rank order with their slots"
/* Appends a generated file to x->out, taking ownership of text. */
void export_add_file(export_ctx *x, const char *name, const char *what,
                     int executable, char *text);
/* Hosts in order of their first rank, slots = the host's GPUs in the plan,
 * or all the host's GPUs when all_slots (with an include list). */
void export_hostfile_text(const export_ctx *x, util_buf *b, const char *what,
                          int all_slots);
/* UTIL_EINVAL naming the first host of the plan that is not a host name
 * (a hostfile has no quoting). */
int export_hosts_check(const export_ctx *x, util_error *err);
/* Notes when a launcher that takes a hostfile cannot realise the plan's
 * rank order.  A launcher that gives a host's ranks GPUs 0..n-1 needs
 * exactly those; one that takes per-host GPU lists (by_list: DeepSpeed's
 * --include) needs each host's GPUs in ascending rank order.  Returns 1
 * when such lists are needed (a host's GPUs are not 0..n-1), else 0. */
int export_order_notes(export_ctx *x, const char *launcher, int by_list);
/* DeepSpeed's --include value: "host:g,g@host:g", every host's GPUs in
 * rank order. */
void export_include_list(const export_ctx *x, util_buf *b);

/* ---- the targets ----------------------------------------------------- */

/* Fill x->out with the target's files; UTIL_ENOMEM. */
int export_megatron(export_ctx *x, util_error *err);  /* export/megatron.c */
int export_deepspeed(export_ctx *x, util_error *err); /* export/deepspeed.c */
int export_torchrun(export_ctx *x, util_error *err);  /* export/torchrun.c */
int export_hostfile(export_ctx *x, util_error *err);  /* export/torchrun.c */

#endif
