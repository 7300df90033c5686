/* costmodel/cost.h: hetplan's inputs as plain structs, the error table
 * shared by every module, and the analytic cost model (AMP section 3.4
 * with per-device heterogeneity).  Pure functions: no I/O, no printing.
 *
 * Units are SI everywhere: seconds, bytes, bytes/second, FLOP/s.  Input
 * files may use GB, Gbps and ms; they are converted once, when parsed. */
#ifndef HETPLAN_COST_H
#define HETPLAN_COST_H

#include <stddef.h>

/* ---- errors ----------------------------------------------------------- */

/* One table for the whole project: X(symbol, value, message). */
#define HETPLAN_ERRORS(X)                                               \
    X(COST_OK, 0, "success")                                            \
    X(COST_ENOMEM, 1, "out of memory")                                  \
    X(COST_EIO, 2, "cannot read or write file")                         \
    X(COST_EPARSE, 3, "malformed JSON")                                 \
    X(COST_EFIELD, 4, "invalid field")                                  \
    X(COST_EINVAL, 5, "invalid argument")                               \
    X(COST_EINFEASIBLE, 6, "no feasible strategy")                      \
    X(COST_ENOTFOUND, 7, "not found")                                   \
    X(COST_ETIMEOUT, 8, "time limit hit")                               \
    X(COST_EINTERNAL, 9, "internal error")

enum cost_status {
#define COST_X_ENUM(sym, val, msg) sym = val,
    HETPLAN_ERRORS(COST_X_ENUM)
#undef COST_X_ENUM
    COST_NSTATUS
};

/* Message of a status code; never NULL, static storage. */
const char *cost_strerror(int code);

/* Detail of a failure, filled by the callee, owned by the caller. */
typedef struct cost_error {
    int code;         /* one of enum cost_status */
    char file[256];   /* input file concerned, "" if none */
    char path[160];   /* JSON path inside it, e.g. "nodes[2].gpus", "" if none */
    char msg[320];    /* what was expected and what was found */
} cost_error;

/* Fill *err (NULL-safe) and return code.  printf-style message. */
int cost_error_set(cost_error *err, int code, const char *file,
                   const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Format "'file': path: msg" (parts omitted when empty) into buf. */
void cost_error_format(const cost_error *err, char *buf, size_t n);

/* ---- device types ----------------------------------------------------- */

typedef struct cost_device_type {
    char name[32];       /* e.g. "V100", "T4", "A100-80GB" */
    double mem_bytes;    /* device memory, bytes */
    double flops_fp16;   /* peak dense fp16 tensor throughput, FLOP/s */
    double flops_bf16;   /* peak dense bf16 throughput, FLOP/s; 0 = none */
    double mem_bw;       /* memory bandwidth, bytes/s */
} cost_device_type;

/* Built-in catalogue of published GPU specs (costmodel/catalog.c).
 * Lookup is case-insensitive; returns NULL when unknown.  Static storage. */
const cost_device_type *cost_catalog_find(const char *name);
size_t cost_catalog_count(void);
const cost_device_type *cost_catalog_get(size_t i);

/* ---- cluster ---------------------------------------------------------- */

typedef struct cost_node {
    char name[64];       /* unique node name */
    char region[64];     /* optional region, "" if none */
    int type;            /* index into cost_cluster.types */
    int gpus;            /* GPUs in this node (> 0) */
    int first_device;    /* global index of its first GPU */
    double intra_bw;     /* GPU-GPU bandwidth inside the node, B/s */
    double intra_lat;    /* latency inside the node, s */
    double nic_bw;       /* NIC bandwidth to other nodes, B/s */
    double nic_lat;      /* latency to other nodes, s */
} cost_node;

/* Explicit link between two nodes (gpu = -1) or two GPUs. */
typedef struct cost_link {
    int node_a, gpu_a;   /* node index, GPU index inside it or -1 */
    int node_b, gpu_b;
    double bw;           /* B/s */
    double lat;          /* s */
} cost_link;

typedef struct cost_cluster {
    char name[64];
    cost_device_type *types; /* ntypes entries, owned */
    int ntypes;
    cost_node *nodes;        /* nnodes entries, owned */
    int nnodes;
    cost_link *links;        /* nlinks overrides, owned, may be NULL */
    int nlinks;
    int ndevices;            /* sum of nodes[].gpus */
    int *device_node;        /* ndevices entries: node of each device, owned */
} cost_cluster;

/* Free the members of c (not c itself); NULL-safe, leaves c zeroed. */
void cost_cluster_free(cost_cluster *c);
/* Fill device_node/first_device/ndevices from nodes[]; COST_ENOMEM. */
int cost_cluster_index(cost_cluster *c);
/* Nominal bandwidth and latency of the link between two devices:
 * an override when one matches, else the node's intra link for two GPUs
 * of one node, else the slower NIC of the two nodes (larger latency). */
void cost_link_between(const cost_cluster *c, int dev_a, int dev_b,
                       double *bw, double *lat);
/* Device type of a device. */
const cost_device_type *cost_device(const cost_cluster *c, int dev);

/* ---- model ------------------------------------------------------------ */

enum cost_layer_kind {
    COST_KIND_GENERIC = 0,
    COST_KIND_EMBEDDING,
    COST_KIND_TRANSFORMER,
    COST_KIND_HEAD,          /* output projection to the vocabulary + loss */
    COST_KIND_NORM,
    COST_KIND_NOOP
};
/* "generic", "embedding", ... ; NULL for out-of-range. */
const char *cost_kind_name(int kind);
/* Kind from name (also accepts AMP's "embed2h", "embed2v", "noop");
 * returns -1 when unknown. */
int cost_kind_from_name(const char *name);

typedef struct cost_layer {
    char name[48];
    int kind;               /* enum cost_layer_kind */
    double params;          /* parameter count (whole layer, tp = 1) */
    double fwd_flops;       /* forward FLOPs per sample, tp = 1 */
    double tp_flops_frac;   /* fraction of fwd_flops that TP divides (0..1) */
    double traffic;         /* forward memory traffic per sample, bytes, TP-divided part */
    double traffic_rep;     /* forward memory traffic per sample, bytes, replicated under TP */
    double out_bytes;       /* output activation per sample sent to the next layer, bytes */
    double act_bytes;       /* activation stored for backward per sample, bytes, tp = 1 */
    double act_rep_bytes;   /* part of act_bytes that TP does not divide */
    double tp_comm_bytes;   /* bytes all-reduced per sample in forward under TP */
    int tp_collectives;     /* TP all-reduces in forward (the same again in backward) */
    int kernels;            /* GPU kernels in forward (host overhead estimate) */
    int tied_group;         /* > 0: layers sharing one weight tensor (tied embeddings) */
} cost_layer;

typedef struct cost_model {
    char name[64];
    char family[32];        /* "gpt2", "gpt3", "llama", "bert", "" */
    cost_layer *layers;     /* nlayers entries, owned */
    int nlayers;
    int hidden, heads, seq, vocab, ffn, blocks; /* transformer shape; 0 = unknown */
    int global_batch;       /* default global batch, 0 = not given */
    int dtype_bytes;        /* bytes per activation/weight element: 2 (fp16/bf16) or 4 */
    int bf16;               /* 1: bf16 math, 0: fp16 (or fp32 when dtype_bytes == 4) */
} cost_model;

/* The transformer shorthand of model.json. */
typedef struct cost_transformer_spec {
    char name[64];
    char family[32];        /* gpt2, gpt3, llama, bert, ... */
    int blocks;             /* transformer blocks */
    int hidden, heads, seq, vocab;
    int ffn;                /* FFN inner size; 0 = 4 * hidden */
    int tied_embeddings;    /* 1: embedding and LM head share weights, 0: not,
                               -1: family default (tied for gpt2/gpt3/bert,
                               untied for llama) */
} cost_transformer_spec;

/* Expand the shorthand into embedding, blocks, final norm and head
 * layers with standard formulas (docs/model-formulas.md).  m is
 * overwritten; its fields other than layers keep caller values when
 * non-zero (global_batch, dtype_bytes). */
int cost_model_from_transformer(const cost_transformer_spec *spec,
                                cost_model *m, cost_error *err);
/* Fill a layer's optional fields that are negative (= not given in the
 * file) with defaults for its kind and the model's shape. */
void cost_layer_defaults(const cost_model *m, cost_layer *l);
void cost_model_free(cost_model *m);

/* ---- profile ---------------------------------------------------------- */

/* Measured per-layer times for one (device type, tp, mbs). */
typedef struct cost_profile_entry {
    char device[32];        /* device type name */
    int tp;                 /* tensor-parallel degree measured */
    int mbs;                /* micro-batch size measured */
    double *fwd;            /* nlayers forward times, s; < 0 = not measured; owned */
    double *bwd;            /* nlayers backward times, s; < 0 = 2x forward; owned, may be NULL */
} cost_profile_entry;

typedef struct cost_profile {
    cost_profile_entry *entries; /* owned */
    int nentries;
    int nlayers;            /* length of every fwd/bwd array */
} cost_profile;

void cost_profile_free(cost_profile *p);

/* ---- strategy --------------------------------------------------------- */

enum cost_schedule { COST_SCHED_1F1B = 0, COST_SCHED_GPIPE = 1 };

/* One parallel training strategy.  Rank r has
 * tp_index = r % tp, dp_index = (r / tp) % dp, stage = r / (tp * dp). */
typedef struct cost_strategy {
    int tp, dp, pp;         /* degrees, tp * dp * pp = ranks */
    int mbs;                /* micro-batch size */
    int gas;                /* micro-batches per iteration per replica */
    int schedule;           /* enum cost_schedule */
    int *bounds;            /* pp + 1 stage boundaries, owned: stage i runs [b[i], b[i+1]) */
    int *ranks;             /* tp * dp * pp device indices, owned */
    char placement[32];     /* name of the placement rule that made ranks */
} cost_strategy;

/* Allocate bounds and ranks for the given degrees (contents zeroed). */
int cost_strategy_alloc(cost_strategy *s, int tp, int dp, int pp);
int cost_strategy_copy(cost_strategy *dst, const cost_strategy *src);
void cost_strategy_free(cost_strategy *s);
/* Device of (stage, dp_index, tp_index). */
int cost_rank_device(const cost_strategy *s, int stage, int dpi, int tpi);

/* ---- parameters ------------------------------------------------------- */

typedef struct cost_params {
    double compute_eff;     /* fraction of peak FLOP/s reached by GEMMs when estimating (0.5) */
    double memory_eff;      /* fraction of memory bandwidth reached by element-wise kernels (0.7) */
    double kernel_overhead; /* host launch cost per kernel when estimating, s (10 us) */
    double net_eff;         /* fraction of NIC line rate NCCL reaches across nodes (0.5) */
    double intra_eff;       /* fraction of intra-node line rate reached (1.0) */
    double bwd_ratio;       /* backward / forward time of layers with no FLOPs or traffic (2.0) */
    double bwd_traffic;     /* backward / forward memory traffic of element-wise kernels (1.5) */
    double optimizer_bytes; /* memory traffic of the optimizer step per parameter, bytes (32) */
    int schedule;           /* enum cost_schedule for strategies the search makes (1F1B);
                               cost_evaluate uses the strategy's own */
    /* memory model */
    double state_bytes;     /* weights + grads + optimizer state per parameter, bytes (20: fp16
                               weights and grads, fp32 grad copy, fp32 master + Adam m, v) */
    int zero_stage;         /* 0..3: shard optimizer (1), + grads (2), + weights (3) across DP */
    int recompute;          /* 1: activation recomputation (store only layer inputs) */
    double mem_reserve;     /* framework, workspace and fragmentation per GPU, bytes (1.5 GiB) */
} cost_params;

/* Fill defaults (values in parentheses above). */
void cost_params_init(cost_params *p);
/* Set one field by its name (e.g. "net_eff") from a number; COST_EINVAL
 * for an unknown name or a value outside the field's range. */
int cost_params_set(cost_params *p, const char *name, double value,
                    cost_error *err);
/* Name of field i (0-based), NULL past the last: for listings. */
const char *cost_params_name(int i);
/* Value of the field called name in *value; COST_ENOTFOUND when unknown. */
int cost_params_get(const cost_params *p, const char *name, double *value);

/* ---- evaluation ------------------------------------------------------- */

/* Where an iteration's time goes.  The fields add up to total. */
typedef struct cost_breakdown {
    double compute;         /* busy time of the bottleneck stage (gas micro-batches), excl. TP comm */
    double tp_comm;         /* tensor-parallel all-reduces on the bottleneck stage */
    double bubble;          /* pipeline fill and drain: sum of stage times minus the largest */
    double p2p;             /* activation/gradient transfers between stages */
    double dp_comm;         /* data-parallel gradient all-reduce (incl. tied embeddings) */
    double optimizer;       /* optimizer step */
    double total;           /* predicted iteration time, s */
} cost_breakdown;

typedef struct cost_result {
    double iter_s;          /* predicted iteration time, s */
    cost_breakdown bd;
    int pp;                 /* entries in the per-stage arrays */
    double *stage_s;        /* per-micro-batch fwd+bwd time of each stage (slowest device), owned */
    double *p2p_s;          /* pp - 1 per-micro-batch transfer times (fwd + bwd), owned */
    int nranks;
    double *mem_bytes;      /* peak memory of each rank's device, owned */
    double *mem_cap;        /* capacity of each rank's device, owned */
    int fits;               /* 1 when every device fits in memory */
    int worst_rank;         /* rank with the least headroom */
    int estimated;          /* layer times estimated analytically (no profile entry) */
    int measured;           /* layer times taken from the profile */
} cost_result;

void cost_result_free(cost_result *r);

/* Time of one layer for one micro-batch on one device type.
 * link_bw/link_lat describe the TP group's slowest link (ignored for
 * tp == 1).  *comm gets the TP all-reduce part of fwd + bwd;
 * *estimated is set to 1 when no profile entry covered it. */
typedef struct cost_layer_time {
    double fwd, bwd;        /* s, including TP communication */
    double comm;            /* TP all-reduce time inside fwd + bwd */
    int estimated;          /* 1 when estimated from FLOPs and bandwidth */
} cost_layer_time;

void cost_layer_time_of(const cost_model *m, const cost_profile *prof,
                        const cost_params *p, const cost_device_type *dt,
                        int layer, int tp, int mbs, double link_bw,
                        double link_lat, double home_bw, cost_layer_time *out);

/* Bandwidth one flow between two devices gets when share_a flows leave
 * node a's NIC and share_b enter node b's at the same time, with the
 * efficiency of its link class applied; *lat gets the link latency. */
double cost_flow_bw(const cost_cluster *c, const cost_params *p, int dev_a,
                    int dev_b, int share_a, int share_b, double *lat);
/* Slowest bandwidth and largest latency around the TP ring of
 * (stage, replica); bw = INFINITY when tp == 1. */
void cost_tp_ring(const cost_cluster *c, const cost_params *p,
                  const cost_strategy *s, int stage, int dpi, double *bw,
                  double *lat);
/* Slowest bandwidth and largest latency of the transfers between stage j
 * and j + 1 over all replicas and TP ranks, which run at the same time
 * and share NICs. */
void cost_cut_link(const cost_cluster *c, const cost_params *p,
                   const cost_strategy *s, int j, double *bw, double *lat);

/* Ring all-reduce of `bytes` over n members (AMP eq. 3, plus latency). */
double cost_allreduce(double bytes, int n, double bw, double lat);

/* Memory of one device holding layers [a, b) of a stage with `inflight`
 * micro-batches alive (1F1B: pp - stage; GPipe: gas). */
double cost_stage_memory(const cost_model *m, const cost_params *p,
                         int a, int b, int tp, int dp, int mbs, int inflight);
/* Micro-batches whose activations a stage keeps under the schedule. */
int cost_inflight(const cost_params *p, int stage, int pp, int gas);

/* Evaluate a full strategy: iteration time (AMP eqs. 3-5 with actual
 * links and the slowest device of each stage), breakdown and memory.
 * out is overwritten; free with cost_result_free. */
int cost_evaluate(const cost_cluster *c, const cost_model *m,
                  const cost_profile *prof, const cost_params *p,
                  const cost_strategy *s, cost_result *out, cost_error *err);

/* Check a strategy against cluster and model (degrees, ranks, bounds,
 * batch divisibility); COST_EINVAL with a message otherwise. */
int cost_strategy_check(const cost_cluster *c, const cost_model *m,
                        const cost_strategy *s, int global_batch,
                        cost_error *err);

/* ---- pipeline schedule simulator (costmodel/simulate.c) --------------- */

enum cost_event_kind {
    COST_EV_FWD = 0,        /* forward of one micro-batch on one stage */
    COST_EV_BWD,            /* backward of one micro-batch */
    COST_EV_SEND_ACT,       /* activation transfer stage j -> j + 1 */
    COST_EV_SEND_GRAD,      /* gradient transfer stage j + 1 -> j */
    COST_EV_DP_ALLREDUCE,   /* data-parallel gradient all-reduce of a stage */
    COST_EV_OPTIMIZER,      /* optimizer step of a stage */
    COST_EV_NKINDS
};
/* "forward", "backward", "send-activation", "send-gradient",
 * "dp-allreduce", "optimizer"; NULL when out of range. */
const char *cost_event_name(int kind);

/* One interval of work.  A transfer belongs to its sending stage. */
typedef struct cost_event {
    int kind;               /* enum cost_event_kind */
    int stage;              /* pipeline stage doing the work (sender) */
    int replica;            /* data-parallel replica (0 .. dp - 1) */
    int micro;              /* micro-batch, -1 for all-reduce and optimizer */
    double start, end;      /* s from the start of the iteration */
} cost_event;

/* Timeline of one iteration.  Every device of (stage, replica) runs the
 * events of that pair; cost_rank_device maps them to devices. */
typedef struct cost_timeline {
    int pp, dp, gas;
    cost_event *events;     /* nevents, sorted by start, owned */
    int nevents;
    double iter_s;          /* end of the last event */
    double *busy_s;         /* dp * pp: forward + backward busy time of
                               (replica r, stage j) at [r * pp + j], owned */
} cost_timeline;

void cost_timeline_free(cost_timeline *t);

/* Raw input of the simulator: per-micro-batch times, already known. */
typedef struct cost_sim_input {
    int pp, dp, gas;        /* stages, replicas, micro-batches per replica */
    int schedule;           /* enum cost_schedule */
    const double *fwd;      /* dp * pp: forward time of stage j in replica r at [r * pp + j] */
    const double *bwd;      /* dp * pp: backward time, same layout */
    const double *send_act; /* dp * (pp - 1): transfer j -> j + 1 incl. latency; NULL = 0 */
    const double *send_grad;/* dp * (pp - 1): transfer j + 1 -> j incl. latency; NULL = 0 */
    const double *dp_s;     /* pp: gradient all-reduce of stage j; NULL = none */
    const double *opt_s;    /* pp: optimizer step of stage j; NULL = none */
    int overlap_dp;         /* 1: a stage's all-reduce starts when its own last
                               backward (in every replica) ends; 0: after the
                               last backward of every stage */
} cost_sim_input;

/* Event-driven simulation of one iteration of in.  out is overwritten;
 * free with cost_timeline_free. */
int cost_simulate_stages(const cost_sim_input *in, cost_timeline *out,
                         cost_error *err);
/* Stage times from the cost model (each replica on its own devices), then
 * cost_simulate_stages.  overlap_dp as in cost_sim_input. */
int cost_simulate(const cost_cluster *c, const cost_model *m,
                  const cost_profile *prof, const cost_params *p,
                  const cost_strategy *s, int overlap_dp, cost_timeline *out,
                  cost_error *err);

/* ---- memory model (issue 3; costmodel/memory.c) ----------------------- */
/* section owned by the memory-model work: add declarations here */

/* ---- calibration parameters (issue 3; costmodel/) --------------------- */
/* section owned by the calibration work: add declarations here */

/* ---- decentralized training, DT-FM (issue 4; costmodel/dtfm.c) -------- */
/* section owned by the DT-FM work: add declarations here */

/* ---- uneven TP shards, stragglers, frozen layers (issue 6) ------------ */
/* section owned by the uneven-TP / replan work: add declarations here */

#endif
