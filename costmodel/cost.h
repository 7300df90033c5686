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
    struct cost_calibration *calib; /* fitted calibration (planner calibrate), owned;
                                       NULL = none (issue 3, costmodel/calibration.c) */
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
    int *tp_heads;          /* tp * dp * pp attention heads of each rank, owned;
                               NULL = even split (issue 6, costmodel/uneven.c) */
    int *tp_cols;           /* tp * dp * pp MLP columns of each rank, owned; NULL
                               with tp_heads */
    double *slow;           /* tp * dp * pp compute slowdown of each rank (1 = as
                               catalogued, 2 = twice as slow), owned; NULL = none */
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
    double state_bytes;     /* weights + grads + optimizer state per parameter, bytes; 0 = from
                               the model's precision (fp16 20, bf16 18, fp32 16) (0) */
    int zero_stage;         /* 0..3: shard optimizer (1), + grads (2), + weights (3) across DP */
    int recompute;          /* 1: activation recomputation (store only layer inputs) */
    double mem_reserve;     /* CUDA context, NCCL and cuBLAS buffers, fragmentation per GPU,
                               bytes (1 GiB) */
    int frozen_layers;      /* the first K layers are frozen: forward only, no gradients,
                               no optimizer state (0; issue 6, costmodel/uneven.c) */
    /* prediction fidelity (docs/simulator.md) */
    int fidelity;           /* enum cost_fidelity: iteration time of cost_evaluate (analytic) */
    int overlap_dp;         /* 1: simulated DP all-reduce of a stage overlaps the other
                               stages' backward passes (0) */
    const struct cost_calibration *calib; /* calibration applied, not owned (NULL = none;
                                       cost_evaluate falls back to the profile's) */
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
    int empty_stage;        /* first pipeline stage whose layers hold no parameters,
                               -1 if none: not runnable whatever the memory (a
                               structural rule, cost_empty_stage) */
} cost_result;

void cost_result_free(cost_result *r);

/* Structural rule (docs/cost-model.md, "Stages without parameters"):
 * DeepSpeed's pipeline engine and Megatron build one optimizer per stage
 * from its parameters, and torch.optim refuses an empty parameter list,
 * so every stage must hold a layer with params > 0.  First stage of s
 * whose layers sum to 0 parameters, -1 if none (or bounds is NULL). */
int cost_empty_stage(const cost_model *m, const cost_strategy *s);
/* Layers with params > 0: the most pipeline stages m can be split into. */
int cost_param_layers(const cost_model *m);

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

/* Memory: cost_stage_memory, cost_inflight and the rest of the memory
 * model are declared in the memory-model section below. */

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

/* cost_params.fidelity: what cost_evaluate's iteration time comes from. */
enum cost_fidelity {
    COST_FIDELITY_ANALYTIC = 0, /* AMP eqs. 4-5 (closed form) */
    COST_FIDELITY_SIMULATE = 1  /* cost_simulate: event-driven schedule */
};
/* "analytic", "simulate"; NULL when out of range. */
const char *cost_fidelity_name(int fidelity);
/* Fidelity from its name, -1 when unknown. */
int cost_fidelity_from_name(const char *name);

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
    int micro;              /* micro-batch, -1 for all-reduce and optimizer,
                               -2 for the tied-weight all-reduce (a second
                               COST_EV_DP_ALLREDUCE of the stages holding them) */
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
    double tied_s;          /* all-reduce of tied weights (embedding and LM head)
                               between stages tied_first and tied_last, after
                               both their DP all-reduces; 0 = none */
    int tied_first, tied_last; /* the two stages holding the tied weights */
} cost_sim_input;

/* Event-driven simulation of one iteration of in (docs/simulator.md).
 * Zero-length transfers, all-reduces and optimizer steps make no event.
 * COST_EINVAL for bad sizes or negative/non-finite times.  out is
 * overwritten; free with cost_timeline_free. */
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

/* Training precision (model.json training.precision, --precision). */
enum cost_precision {
    COST_PREC_FP16 = 0,     /* mixed precision, fp16 with loss scaling (default) */
    COST_PREC_BF16 = 1,     /* mixed precision, bf16, fp32 gradient accumulation */
    COST_PREC_FP32 = 2      /* fp32 throughout */
};
/* "fp16", "bf16", "fp32"; NULL when out of range. */
const char *cost_precision_name(int prec);
/* Precision from its name, -1 when unknown. */
int cost_precision_from_name(const char *name);
/* Precision of a model (from dtype_bytes and bf16). */
int cost_model_precision(const cost_model *m);
/* Change a loaded model's precision: sets dtype_bytes and bf16 and
 * rescales the element-size fields of every layer (activations, traffic,
 * transfers) by new / old element size; the head's fp32 loss copies keep
 * their size.  COST_EINVAL for an unknown precision. */
int cost_model_set_precision(cost_model *m, int prec, cost_error *err);

/* Model-state bytes per parameter after ZeRO sharding over dp: weights,
 * gradients, optimizer state (fp16: 2, 2, 16 with the loss scaler's fp32
 * gradient copy; bf16: 2, 4, 12; fp32: 4, 4, 8; p->state_bytes > 0
 * overrides the total, weights and gradients in the model's element size). */
void cost_state_bytes(const cost_model *m, const cost_params *p, int dp,
                      double *w, double *g, double *o);
/* Activation bytes per sample that layer l keeps for backward at TP
 * degree tp (only its input when recomputed). */
double cost_layer_stored(const cost_model *m, const cost_params *p, int l,
                         int tp);
/* Transient bytes per sample while layer l runs: a block's backward
 * gradients (about its stored activations), its re-materialised
 * activations under recomputation, the loss's fp32 working copy of the
 * logits for the head. */
double cost_layer_transient(const cost_model *m, const cost_params *p, int l,
                            int tp);
/* Additive part of layer l's memory on one device: model state plus
 * `inflight` micro-batches of stored activations. */
double cost_layer_memory(const cost_model *m, const cost_params *p, int l,
                         int tp, int dp, int mbs, int inflight);
/* Micro-batches whose activations a stage keeps under the schedule:
 * 1F1B min(pp - stage, gas), GPipe gas. */
int cost_inflight(const cost_params *p, int stage, int pp, int gas);

/* One device's stage, as the memory model needs it. */
typedef struct cost_mem_stage {
    int a, b;               /* layers [a, b) */
    int tp, dp, mbs;
    int inflight;           /* micro-batches whose activations it keeps */
    int gas;                /* micro-batches per iteration (0 = inflight) */
    int stage, pp;          /* position; pp = 0: unknown (no pipeline buffers,
                               no all-reduce bucket) */
} cost_mem_stage;

/* Where a device's memory goes, bytes.  total = weights + grads +
 * optimizer + max(activations + workspace + buffers, bucket) + reserve. */
typedef struct cost_memory {
    double weights;         /* resident weights of its layers */
    double grads;           /* gradients */
    double optimizer;       /* optimizer state (fp16: + fp32 gradient copy) */
    double activations;     /* stored for backward, all in-flight micro-batches */
    double workspace;       /* transient of the layer being run (one micro-batch) */
    double buffers;         /* pipeline send/receive buffers */
    double bucket;          /* DP all-reduce bucket (after the backward passes) */
    double reserve;         /* cost_params.mem_reserve */
    double total;           /* peak */
} cost_memory;

/* Peak memory of one device (docs/cost-model.md, "Memory"); out (may be
 * NULL) gets the parts.  Returns out->total. */
double cost_device_memory(const cost_model *m, const cost_params *p,
                          const cost_mem_stage *st, cost_memory *out);
/* Memory of a device holding layers [a, b) with `inflight` micro-batches
 * alive, position in the pipeline unknown: cost_device_memory without
 * pipeline buffers and all-reduce bucket. */
double cost_stage_memory(const cost_model *m, const cost_params *p,
                         int a, int b, int tp, int dp, int mbs, int inflight);
/* Memory of rank's device under strategy s (its stage, position and
 * schedule from s and p->schedule); returns the stage. */
int cost_rank_stage_memory(const cost_model *m, const cost_params *p,
                           const cost_strategy *s, int rank, cost_memory *out);
/* Upper bound of the non-additive part of a stage's memory (reserve,
 * workspace of its largest layer, pipeline buffers at a hidden-state cut)
 * for the layer-assignment DP, which sums cost_layer_memory per layer. */
double cost_memory_overhead_bound(const cost_model *m, const cost_params *p,
                                  int tp, int mbs, int stage, int pp,
                                  int inflight, int gas);

/* ---- calibration parameters (issue 3; costmodel/) --------------------- */
/* section owned by the calibration work: add declarations here */

/* A few global constants fitted to measured iteration times by `planner
 * calibrate` (search_calibrate, docs/calibration.md).  Every field's
 * neutral value (cost_calibration_init) leaves the model unchanged.  Each
 * enters the iteration time linearly (a time multiplier or an added
 * time), which is what makes the fit a linear program. */
#define COST_CALIB_MAX_TYPES 16

/* Link classes of a transfer between two devices. */
enum cost_link_class {
    COST_LINK_INTRA = 0,    /* both devices in one node */
    COST_LINK_INTER,        /* two nodes of one region (or no region given) */
    COST_LINK_REGION,       /* two nodes in different regions */
    COST_LINK_NCLASSES
};
/* "intra-node", "inter-node", "cross-region"; NULL when out of range. */
const char *cost_link_class_name(int cls);
/* Class of the link between two devices of c. */
int cost_link_class_of(const cost_cluster *c, int dev_a, int dev_b);

typedef struct cost_calibration {
    int ntypes;                             /* device types with their own values */
    char type[COST_CALIB_MAX_TYPES][32];    /* device type names (case-insensitive) */
    double compute_scale[COST_CALIB_MAX_TYPES]; /* multiplier on the per-sample compute time
                                               of the profile/estimate (1); 1 / relative
                                               efficiency e_inf */
    double mbs_half[COST_CALIB_MAX_TYPES];  /* b_half of eff(b) = e_inf b / (b + b_half):
                                               each micro-batch costs b_half samples' worth
                                               of compute on top (0) */
    double bw_frac[COST_LINK_NCLASSES];     /* effective fraction of line rate per link
                                               class; 0 = cost_params' intra_eff / net_eff */
    double msg_latency;                     /* added to every message (P2P transfer,
                                               all-reduce step), s (0) */
    double tp_fixed;                        /* fixed cost per micro-batch and layer with
                                               TP collectives when tp > 1, fwd + bwd, s (0) */
    double iter_overhead;                   /* framework overhead per iteration, s (0) */
} cost_calibration;

/* Neutral calibration: no types, every field at its neutral value. */
void cost_calibration_init(cost_calibration *cal);
/* Index of a device type in cal (case-insensitive), -1 when absent. */
int cost_calibration_type(const cost_calibration *cal, const char *name);
/* Index of name, added with neutral values when absent; -1 when full. */
int cost_calibration_add_type(cost_calibration *cal, const char *name);
/* The calibration in force: p's, else the profile's, else NULL. */
const cost_calibration *cost_calibration_of(const cost_params *p,
                                            const cost_profile *prof);
/* Effective fraction of line rate of a link class under p (calibrated
 * bw_frac when set, else intra_eff / net_eff). */
double cost_calibration_eff(const cost_params *p, int cls);
/* Calibrated layer time (hook of cost_layer_time_of): work_fwd is the
 * part of fwd (s) that grows with the micro-batch, mbs its size; fwd and
 * bwd (TP communication comm included) are adjusted in place. */
void cost_calibration_layer(const cost_calibration *cal,
                            const cost_device_type *dt, const cost_layer *l,
                            int tp, int mbs, double work_fwd, double comm,
                            double *fwd, double *bwd);

/* ---- decentralized training, DT-FM (issue 4; costmodel/dtfm.c) -------- */
/* section owned by the DT-FM work: add declarations here */

/* The scheduling problem of DT-FM (Yuan et al., NeurIPS'22, section 2):
 * n = d_pp * d_dp devices with pairwise latency and bandwidth; a
 * schedule is a balanced partition into d_pp data-parallel groups of
 * d_dp devices (one group per pipeline stage). */
typedef struct cost_dtfm_problem {
    int n;                  /* devices (= d_pp * d_dp) */
    int d_pp;               /* pipeline stages = data-parallel groups */
    int d_dp;               /* devices per group = micro-batch groups */
    double c_pp;            /* activation bytes of one micro-batch group between stages */
    double c_dp;            /* gradient bytes of one stage */
    double *lat;            /* n * n latency d -> d', s; diagonal ignored; owned */
    double *bw;             /* n * n bandwidth d -> d', B/s; diagonal ignored; owned */
    double *compute;        /* n: compute time of one tasklet on each device, s, or NULL
                               (communication only, as in the paper); owned */
} cost_dtfm_problem;

/* Allocate lat, bw (and compute when with_compute) for n devices, zeroed;
 * sets n, d_pp and d_dp = n / d_pp.  COST_EINVAL when d_pp does not
 * divide n, COST_ENOMEM. */
int cost_dtfm_problem_alloc(cost_dtfm_problem *p, int n, int d_pp,
                            int with_compute, cost_error *err);
/* Free the members (not p); NULL-safe; leaves p zeroed. */
void cost_dtfm_problem_free(cost_dtfm_problem *p);
/* Check sizes and values (finite, latency >= 0, bandwidth > 0 off the
 * diagonal, c_pp and c_dp >= 0, compute >= 0); COST_EINVAL naming the
 * first bad entry. */
int cost_dtfm_problem_check(const cost_dtfm_problem *p, cost_error *err);
/* Replace each direction by the mean of the two, as the paper's
 * communication graph G does (section 2). */
void cost_dtfm_symmetrize(cost_dtfm_problem *p);

/* Pair weights, n * n arrays the caller allocates (diagonal 0):
 *   w_dp[d,d'] = 2 (a + c_dp / (D_dp b))   the term of DT-FM eq. 2
 *   w_pp[d,d'] = 2 (a + c_pp / b)          the term of DT-FM eq. 3
 * with a, b the mean latency and bandwidth of the two directions. */
void cost_dtfm_weights(const cost_dtfm_problem *p, double *w_dp,
                       double *w_pp);

/* DataP-Cost of one group (DT-FM eq. 2):
 *   max_{d in C} sum_{d' in C - {d}} w_dp[d,d'].
 * w_dp is n * n; members has m entries. */
double cost_dtfm_dp_group(const double *w_dp, int n, const int *members,
                          int m);

/* Bottleneck perfect matching (DT-FM eq. 3): min over perfect matchings
 * M of an m * m bipartite graph of max_{(i,j) in M} w[i * m + j], exact
 * (threshold raised along alternating trees, O(m^3)).  match (may be
 * NULL) gets m entries: match[i] = column matched with row i. */
double cost_dtfm_bottleneck(const double *w, int m, int *match);

/* Largest number of stages cost_dtfm_tsp solves exactly. */
#define COST_DTFM_TSP_EXACT_MAX 16

/* Open-loop TSP (DT-FM eq. 4): the shortest Hamiltonian path, any start
 * and end, over a symmetric k * k matrix w.  order gets k nodes.
 * _exact: Held-Karp, O(2^k k^2) time, COST_EINVAL for k > 20, COST_ENOMEM.
 * _heuristic: nearest neighbour from every start, then 2-opt and Or-opt.
 * cost_dtfm_tsp: exact up to COST_DTFM_TSP_EXACT_MAX nodes, heuristic
 * beyond; *exact (may be NULL) says which. */
int cost_dtfm_tsp_exact(const double *w, int k, int *order, double *len);
int cost_dtfm_tsp_heuristic(const double *w, int k, int *order,
                            double *len);
int cost_dtfm_tsp(const double *w, int k, int *order, double *len,
                  int *exact);

/* A schedule and its cost (DT-FM eq. 1, plus the compute extension). */
typedef struct cost_dtfm_result {
    double total_s;         /* dp_s + pp_s + compute_s */
    double dp_s;            /* DataP-Cost: max over groups of eq. 2 */
    double pp_s;            /* PipelineP-Cost: eq. 4 over eq. 3 edges */
    double compute_s;       /* beyond the paper: sum over stages of the slowest
                               device's tasklet compute time; 0 without compute */
    int k;                  /* groups (d_pp) */
    int g;                  /* devices per group (d_dp) */
    int tsp_exact;          /* 1 when pp_s is the exact open-loop TSP */
    int *members;           /* k * g: devices of group q, ascending; groups are
                               numbered by their smallest device; owned */
    double *group_dp_s;     /* k: eq. 2 of each group; owned */
    int *order;             /* k: group at pipeline stage j; owned */
    double *edge_s;         /* k - 1: eq. 3 between stage j and j + 1; owned */
    int *match;             /* (k - 1) * g: match[j * g + i] = device of stage
                               j + 1 paired with members[order[j] * g + i]; owned */
    int *chain;             /* g * k: chain[i * k + j] = device running stage j of
                               micro-batch group i (tasklet t_ij); owned */
} cost_dtfm_result;

/* Cost of a partition: group_of[d] in 0..d_pp-1, each value used d_dp
 * times.  Builds the coarsened graph, its TSP path and the chains.
 * out is overwritten; free with cost_dtfm_result_free.  COST_EINVAL for
 * an unbalanced partition. */
int cost_dtfm_evaluate(const cost_dtfm_problem *p, const int *group_of,
                       cost_dtfm_result *out, cost_error *err);
void cost_dtfm_result_free(cost_dtfm_result *r);

/* ---- uneven TP shards, stragglers, frozen layers (issue 6) ------------ */
/* section owned by the uneven-TP / replan work: add declarations here */

/* Uneven shards: rank r of a TP group holds tp_heads[r] of the model's
 * attention heads and tp_cols[r] of its MLP (FFN) columns; every layer's
 * TP-divided work and memory on that rank is its share
 *   share_r = a * heads_r / H + (1 - a) * cols_r / F
 * (a: attention's part of a block's FLOPs for time, of its parameters for
 * memory; H heads, F = ffn columns), 1 / tp under an even split.  Layers
 * other than blocks (vocabulary-parallel embedding and head) use the same
 * share.  A rank's slowdown multiplies its compute, not its all-reduces.
 * Frozen layers (cost_params.frozen_layers) run forward only and keep no
 * gradients (time here, memory in costmodel/memory.c, no DP all-reduce). */

/* Copy per-rank heads and columns (tp * dp * pp each) into s, replacing
 * any; NULL, NULL clears them (even split).  COST_ENOMEM. */
int cost_strategy_set_shards(cost_strategy *s, const int *heads,
                             const int *cols);
/* Copy per-rank slowdowns (tp * dp * pp) into s; NULL clears. */
int cost_strategy_set_slow(cost_strategy *s, const double *slow);
/* Heads H and MLP columns F that shards split: the model's heads and ffn
 * (4 * hidden when ffn is 0).  COST_EINVAL with a message when the model
 * has no transformer shape. */
int cost_shard_units(const cost_model *m, int *heads, int *cols,
                     cost_error *err);
/* Attention's part a of a block's FLOPs (memory = 0) or parameters
 * (memory = 1) from the model's shape (docs/model-formulas.md); 0.5 when
 * the shape is unknown. */
double cost_attn_frac(const cost_model *m, int memory);
/* Share of the TP-divided work (memory = 0) or memory (memory = 1) that
 * rank holds: 1 / tp without shards. */
double cost_rank_share(const cost_model *m, const cost_strategy *s, int rank,
                       int memory);
/* Check shards against the model: per TP group heads sum to H and columns
 * to F, none negative.  COST_OK when s has none.  COST_EINVAL otherwise. */
int cost_shards_check(const cost_model *m, const cost_strategy *s,
                      cost_error *err);
/* 1 when the TP group of (stage, dpi) mixes device types. */
int cost_tp_group_mixed(const cost_cluster *c, const cost_strategy *s,
                        int stage, int dpi);
/* Rank that runs on device dev, -1 when none. */
int cost_rank_of_device(const cost_strategy *s, int dev);
/* Hook of cost_evaluate and the layer assignment: turn lt, the even-split
 * time of layer on device dev (of type dt), into the time of dev's rank
 * under its share, slowdown and frozen layers.  No-op when none applies. */
void cost_rank_layer_adjust(const cost_model *m, const cost_params *p,
                            const cost_device_type *dt,
                            const cost_strategy *s, int dev, int layer,
                            cost_layer_time *lt);
/* Memory of rank from its even-split memory even_bytes: linear in the
 * memory share, M(share) = base + per_share * share. */
double cost_rank_memory(const cost_model *m, const cost_params *p,
                        const cost_strategy *s, int rank, double even_bytes);
void cost_rank_memory_line(const cost_model *m, const cost_params *p,
                           const cost_strategy *s, int rank, double *base,
                           double *per_share);

/* Per-micro-batch forward + backward time of a rank's stage, split the
 * way the shard planner and the straggler what-if need it. */
typedef struct cost_rank_time {
    double total;           /* at the rank's current share and slowdown, s */
    double comm;            /* TP all-reduces inside total, s */
    double fixed;           /* part that does not depend on the share, s */
    double per_share;       /* total = fixed + per_share * share, s */
    double gemm;            /* matrix-multiplication part of total (M_i of
                               ZERO-resizing eq. 1), s */
    double share;           /* the rank's share of the TP-divided work */
} cost_rank_time;

int cost_rank_time_of(const cost_cluster *c, const cost_model *m,
                      const cost_profile *prof, const cost_params *p,
                      const cost_strategy *s, int rank, cost_rank_time *out);

#endif
