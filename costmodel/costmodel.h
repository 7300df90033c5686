/* costmodel/costmodel.h: the cost and memory model: per-layer times,
 * collectives over actual links, AMP's pipeline formula with per-device
 * heterogeneity (AMP section 3.4), the memory model, the pipeline
 * schedule simulator, calibrated times and uneven TP shards.  Pure
 * functions of the structs of formats.h: no I/O, no printing. */
#ifndef HETPLAN_COSTMODEL_H
#define HETPLAN_COSTMODEL_H

#include <stddef.h>

#include "formats.h"

/* ---- parameters ------------------------------------------------------ */

typedef struct cost_params {
    double compute_eff;     /* fraction of peak FLOP/s reached by GEMMs when estimating (0.5) */
    double memory_eff;      /* fraction of memory bandwidth reached by element-wise kernels (0.7) */
    double kernel_overhead; /* host launch cost per kernel when estimating, s (10 us) */
    double net_eff;         /* fraction of NIC line rate NCCL reaches across nodes (0.5) */
    double intra_eff;       /* fraction of intra-node line rate reached (1.0) */
    double bwd_ratio;       /* backward / forward time of layers with no FLOPs or traffic (2.0) */
    double bwd_traffic;     /* backward / forward memory traffic of element-wise kernels (1.5) */
    double optimizer_bytes; /* memory traffic of the optimizer step per parameter,
                               bytes (32: Adam and the gradient norm in fp32);
                               negative = the precision's whole step: fp16
                               54, bf16 42, fp32 36 (cost_optimizer_bytes) */
    int schedule;           /* enum fmt_schedule for strategies the search makes (1F1B);
                               cost_evaluate uses the strategy's own */
    /* memory model */
    double state_bytes;     /* weights + grads + optimizer state per parameter, bytes; 0 = from
                               the model's precision (fp16 20, bf16 18, fp32 16) (0) */
    int zero_stage;         /* 0..3 of strategies that do not state theirs: shard
                               optimizer (1), + grads (2), + weights (3) across DP */
    int recompute;          /* enum fmt_recompute of strategies that do not state
                               theirs (none; 1 = full: store only block inputs) */
    double mem_reserve;     /* runtime memory per GPU beyond the tensors (CUDA context,
                               NCCL and cuBLAS buffers, allocator), bytes; < 0 = derived
                               per device generation and strategy where the cluster is
                               known (cost_runtime_memory), else 1 GiB (-1) */
    int frozen_layers;      /* the first K layers are frozen: forward only, no gradients,
                               no optimizer state (0; costmodel/uneven.c) */
    /* prediction fidelity (docs/simulator.md) */
    int fidelity;           /* enum cost_fidelity: iteration time of cost_evaluate (analytic) */
    int overlap_dp;         /* 1: simulated DP all-reduce of a stage overlaps the other
                               stages' backward passes (0) */
    const struct fmt_calibration *calib; /* calibration applied, not owned (NULL = none;
                                       cost_evaluate falls back to the profile's) */
    /* time model of shaped transformers (docs/time-model.md) */
    double gemm_eff;        /* fraction of dense peak reached by large GEMMs; 0 = the
                               device generation's measured figure (0) */
    int attention;          /* enum cost_attention: attention-core kernels; -1 = the
                               model's training.attention (flash, or fused for
                               eager), which also sets the activation memory (-1) */
    int tf32;               /* 1: fp32 matmuls run on TF32 tensor cores where the
                               device has them, 0: on the fp32 units; -1 = the
                               model's training.tf32, unstated: on, as NGC
                               containers default (-1); cost_tf32 */
    int sp;                 /* 1: sequence parallelism of strategies the search
                               makes, in their layer times and activations
                               (cost_layer_memory, cost_stage_memory) (0);
                               cost_evaluate and cost_rank_stage_memory use
                               the strategy's own */
    int overlap_grad_reduce;/* 1: the DP gradient reduction runs in buckets during
                               the last backward pass, only its exposed part
                               counts (torch DDP, Megatron --overlap-grad-reduce);
                               0: after the backward (Megatron's default) (0) */
    double dp_bucket;       /* parameters per gradient bucket (Megatron's
                               --ddp-bucket-size, 40e6); 0 = one bucket */
    int p2p_scatter;        /* 1: with TP > 1 each TP rank sends 1/tp of the
                               activation between stages and the receiver
                               all-gathers it over its TP links (Megatron's
                               scatter/gather, Narayanan et al. SC'21 sec. 4.1) (1) */
    int grad_accum_fusion;  /* 1: weight-gradient GEMMs accumulate into the
                               gradient buffer in place (Megatron
                               --gradient-accumulation-fusion); 0: a separate
                               add per micro-batch (PyTorch) (0) */
    double nvlink_eff;      /* fraction of NVLink / NVSwitch line rate (intra-node
                               links faster than PCIe 5.0 x16) NCCL reaches;
                               intra_eff applies to PCIe-class links (0.78) */
    int overlap_p2p;        /* 1: the steady-state pipeline P2P of 1F1B runs
                               behind compute, only the fill and drain cross
                               the cuts (AMP eq. 5; Megatron
                               --overlap-p2p-communication, interleaved);
                               0: every stage waits for each exchange with
                               its neighbours (Megatron-LM before 2023,
                               its non-interleaved 1F1B) (1) */
    int nccl_cumem;         /* 1: NCCL allocates its device memory with cuMem
                               (NCCL 2.19 and later, its default), each
                               allocation rounded to 2 MiB, so every
                               communicator also holds its per-channel
                               structures; 0: older NCCL (cudaMalloc) (1) */
    int offload;            /* enum fmt_offload of strategies that do not
                               state theirs (none, 0); cost_evaluate and
                               cost_rank_stage_memory use the strategy's own */
    int launch_mode;        /* enum cost_launch: how the framework launches
                               kernels, for the per-kernel cost; -1 = from
                               the model's training.framework, none named:
                               the per-kernel cost as before (-1) */
} cost_params;

/* cost_params.launch_mode */
enum cost_launch {
    COST_LAUNCH_EAGER = 0,  /* one host launch per kernel (PyTorch eager) */
    COST_LAUNCH_FUSED = 1,  /* fused kernels (Megatron-LM, Transformer Engine) */
    COST_LAUNCH_GRAPHS = 2  /* CUDA graphs replay the iteration */
};

/* cost_params.attention */
enum cost_attention {
    COST_ATTN_FUSED = 0,    /* s x s scores in memory, fused scale-mask-softmax
                               (Megatron-LM) */
    COST_ATTN_FLASH = 1,    /* flash attention: no scores in memory */
    COST_ATTN_UNFUSED = 2   /* eager PyTorch: separate mask and softmax kernels */
};

/* Memory traffic of one optimizer step per parameter, bytes: p's
 * optimizer_bytes when >= 0, else the precision's (docs/time-model.md). */
double cost_optimizer_bytes(const fmt_model *m, const cost_params *p);

/* Fill defaults (values in parentheses above). */
void cost_params_init(cost_params *p);
/* How kernels are launched (enum cost_launch): p->launch_mode when set
 * (>= 0), else the model's training.framework's; -1 when neither says
 * (the per-kernel cost as without a framework). */
int cost_launch_mode(const fmt_model *m, const cost_params *p);
/* Set one field by its name (e.g. "net_eff") from a number; UTIL_EINVAL
 * for an unknown name or a value outside the field's range. */
int cost_params_set(cost_params *p, const char *name, double value,
                    util_error *err);
/* Name of field i (0-based), NULL past the last: for listings. */
const char *cost_params_name(int i);
/* Value of the field called name in *value; UTIL_ENOTFOUND when unknown. */
int cost_params_get(const cost_params *p, const char *name, double *value);
/* 1 when fp32 matrix multiplications of m run on TF32 tensor cores (on
 * devices that have them): p->tf32 when set (>= 0), else the model's
 * training.tf32, on when unstated (costmodel/kernels.c). */
int cost_tf32(const fmt_model *m, const cost_params *p);
/* One device's matrix-multiplication unit for a model's precision
 * (costmodel/gemm.c, docs/time-model.md "GEMMs"). */
typedef struct cost_gemm_unit {
    double peak;            /* FLOP/s of the unit the matmuls run on */
    double eff;             /* large-GEMM fraction of peak */
    double bw;              /* reachable memory bandwidth, B/s */
    double elem;            /* bytes per element */
    int sms;                /* streaming multiprocessors */
    int tile_m, tile_n;     /* output tile of one thread block */
    int tensor;             /* 1: tensor cores, 0: CUDA cores */
} cost_gemm_unit;
void cost_gemm_unit_of(const fmt_model *m, const cost_params *p,
                       const fmt_device_type *dt, cost_gemm_unit *u);
/* Time of batch GEMMs C[M,N] = A[M,K] B[K,N] on u: compute-bound with
 * tile and wave quantisation, or memory-bound on A + B + C, s. */
double cost_gemm_time(const cost_gemm_unit *u, double M, double N, double K,
                      double batch);
/* Fixed cost of one kernel, s: p->kernel_overhead, or the device-side
 * launch of a CUDA graph under cost_launch_mode COST_LAUNCH_GRAPHS. */
double cost_kernel_cost(const fmt_model *m, const cost_params *p);
/* A strategy's recomputation level (enum fmt_recompute) and ZeRO stage:
 * its own when stated (>= 0), else p's default. */
int cost_strategy_recompute(const cost_params *p, const fmt_strategy *s);
int cost_strategy_zero(const cost_params *p, const fmt_strategy *s);
/* A strategy's optimizer offload (enum fmt_offload): its own when stated
 * (>= 0), else p's default. */
int cost_strategy_offload(const cost_params *p, const fmt_strategy *s);
/* Communication overlap of a strategy (docs/time-model.md "Overlap"). */
enum cost_overlap {
    COST_OVERLAP_GRAD = 0,  /* fmt_strategy.overlap_grad */
    COST_OVERLAP_PARAM,     /* fmt_strategy.overlap_param */
    COST_OVERLAP_TP,        /* fmt_strategy.overlap_tp */
    COST_OVERLAP_P2P        /* fmt_strategy.overlap_p2p */
};
/* Flag `which` (enum cost_overlap) of s, 0 or 1: its own when stated
 * (>= 0), else p's default (overlap_grad_reduce, overlap_p2p; param and
 * tp overlap off).  A flag the strategy cannot use reads 0: param
 * overlap without ZeRO >= 1 or dp > 1, TP overlap without tp > 1 and
 * sequence parallelism. */
int cost_strategy_overlap(const cost_params *p, const fmt_strategy *s,
                          int which);
/* Part of comm (s) not hidden behind window (s) of compute when both
 * are split into `chunks` pieces and pipelined: max(comm / n, comm -
 * window (1 - 1/n)), at most comm (costmodel/overlap.c). */
double cost_overlap_exposed(double comm, double window, double chunks);
/* 1 when s's TP groups can overlap their collectives with GEMMs
 * (Transformer Engine userbuffers): tp > 1, every TP group inside one
 * node whose intra-node links are NVLink-class (faster than PCIe 5.0),
 * and a model trained by Megatron-style code (not training.cross_entropy
 * "pytorch" or training.grad_buffer "set_to_none"). */
int cost_overlap_tp_hardware(const fmt_cluster *c, const fmt_model *m,
                             const fmt_strategy *s);
/* Bytes of Transformer Engine's userbuffers on each TP rank of s under
 * TP overlap: 10 buffers of seq x mbs x hidden elements. */
double cost_overlap_tp_memory(const fmt_model *m, const fmt_strategy *s);

/* ---- evaluation ------------------------------------------------------ */

/* Where an iteration's time goes.  The fields add up to total. */
typedef struct cost_breakdown {
    double compute;         /* busy time of the bottleneck stage (gas micro-batches), excl. TP comm */
    double tp_comm;         /* tensor-parallel all-reduces on the bottleneck stage */
    double bubble;          /* pipeline fill and drain: sum of stage times minus the largest */
    double p2p;             /* activation/gradient transfers between stages */
    double dp_comm;         /* data-parallel gradient all-reduce (incl. tied embeddings) */
    double optimizer;       /* optimizer step */
    double total;           /* predicted iteration time, s */
    double recompute;       /* part of compute spent re-running forward passes
                               (included in compute, not added to total) */
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
    double host_bytes;      /* offloaded optimizer state on the node with the
                               least host headroom, bytes (0 without offload) */
    double host_cap;        /* that node's host memory, bytes (0 when none) */
    int host_node;          /* that node, -1 without offload */
} cost_result;

void cost_result_free(cost_result *r);

/* Structural rule (docs/cost-model.md, "Stages without parameters"):
 * DeepSpeed's pipeline engine and Megatron build one optimizer per stage
 * from its parameters, and torch.optim refuses an empty parameter list,
 * so every stage must hold a layer with params > 0.  First stage of s
 * whose layers sum to 0 parameters, -1 if none (or bounds is NULL). */
int cost_empty_stage(const fmt_model *m, const fmt_strategy *s);
/* Layers with params > 0: the most pipeline stages m can be split into. */
int cost_param_layers(const fmt_model *m);

/* Time of one layer for one micro-batch on one device type.
 * link_bw/link_lat describe the TP group's slowest link (ignored for
 * tp == 1).  *comm gets the TP collectives of fwd + bwd (each pass's
 * once, and the recomputed forward's under full recomputation);
 * p->recompute and p->sp are the strategy's;
 * *estimated is set to 1 when no profile entry covered it. */
typedef struct cost_layer_time {
    double fwd, bwd;        /* s, including TP communication */
    double comm;            /* TP all-reduce time inside fwd + bwd */
    int estimated;          /* 1 when estimated from FLOPs and bandwidth */
    double recompute;       /* recomputation forward inside bwd (with its TP
                               collectives), s */
} cost_layer_time;

void cost_layer_time_of(const fmt_model *m, const fmt_profile *prof,
                        const cost_params *p, const fmt_device_type *dt,
                        int layer, int tp, int mbs, double link_bw,
                        double link_lat, double home_bw, cost_layer_time *out);

/* Bandwidth one flow between two devices gets when share_a flows leave
 * node a's NIC and share_b enter node b's at the same time, with the
 * efficiency of its link class applied; *lat gets the link latency. */
double cost_flow_bw(const fmt_cluster *c, const cost_params *p, int dev_a,
                    int dev_b, int share_a, int share_b, double *lat);
/* Slowest bandwidth and largest latency around the TP ring of
 * (stage, replica); bw = INFINITY when tp == 1. */
void cost_tp_ring(const fmt_cluster *c, const cost_params *p,
                  const fmt_strategy *s, int stage, int dpi, double *bw,
                  double *lat);
/* Slowest bandwidth and largest latency of the transfers between stage j
 * and j + 1 over all replicas and TP ranks, which run at the same time
 * and share NICs. */
void cost_cut_link(const fmt_cluster *c, const cost_params *p,
                   const fmt_strategy *s, int j, double *bw, double *lat);

/* Ring all-reduce of `bytes` over n members (AMP eq. 3, plus latency). */
double cost_allreduce(double bytes, int n, double bw, double lat);

/* Memory: cost_stage_memory, cost_inflight and the rest of the memory
 * model are declared in the memory-model section below. */

/* Evaluate a full strategy: iteration time (AMP eqs. 3-5 with actual
 * links and the slowest device of each stage), breakdown and memory.
 * out is overwritten; free with cost_result_free. */
int cost_evaluate(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *p,
                  const fmt_strategy *s, cost_result *out, util_error *err);

/* ---- pipeline schedule simulator (costmodel/simulate.c) -------------- */

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
    int chunk;              /* model chunk (0 .. vpp - 1) of a forward,
                               backward or transfer (the sender's) under the
                               interleaved schedule; 0 otherwise */
} cost_event;

/* Timeline of one iteration.  Every device of (stage, replica) runs the
 * events of that pair; fmt_rank_device maps them to devices. */
typedef struct cost_timeline {
    int pp, dp, gas;
    cost_event *events;     /* nevents, sorted by start, owned */
    int nevents;
    double iter_s;          /* end of the last event */
    double *busy_s;         /* dp * pp: forward + backward busy time of
                               (replica r, stage j) at [r * pp + j], owned */
    int vpp;                /* model chunks per device (1: not interleaved) */
} cost_timeline;

void cost_timeline_free(cost_timeline *t);

/* Raw input of the simulator: per-micro-batch times, already known. */
typedef struct cost_sim_input {
    int pp, dp, gas;        /* stages, replicas, micro-batches per replica */
    int schedule;           /* enum fmt_schedule */
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
    int vpp;                /* model chunks per device: > 1 runs the
                               interleaved 1F1B schedule (schedule 1f1b,
                               pp >= 2, gas a multiple of pp), each chunk
                               taking 1 / vpp of fwd and bwd and crossing
                               every cut j -> j + 1 with its send_act and
                               send_grad times; 0 or 1: not interleaved */
    const double *send_wrap;/* dp: transfer between stage pp - 1 and stage 0
                               (chunk k to k + 1 and back), each direction,
                               under the interleaved schedule; NULL = 0 */
} cost_sim_input;

/* The most events one simulated iteration may make (2^24, 40 bytes
 * each: 640 MiB).  An iteration makes up to 4 x replicas x stages x
 * micro-batches (x model chunks) of them, so a larger one is refused
 * (UTIL_EINVAL) before anything is allocated or timed. */
#define COST_SIM_MAX_EVENTS 16777216

/* Event-driven simulation of one iteration of in (docs/simulator.md).
 * Zero-length transfers, all-reduces and optimizer steps make no event.
 * Under the interleaved schedule an activation sent by stage pp - 1 or
 * a gradient sent by stage 0 crosses the wrap-around link (send_wrap).
 * UTIL_EINVAL for bad sizes, negative/non-finite times or more than
 * COST_SIM_MAX_EVENTS events.  out is overwritten; free with
 * cost_timeline_free. */
int cost_simulate_stages(const cost_sim_input *in, cost_timeline *out,
                         util_error *err);
/* Stage times from the cost model (each replica on its own devices), then
 * cost_simulate_stages; a strategy with vpp > 1 runs the interleaved
 * schedule.  overlap_dp as in cost_sim_input.  Time and memory linear in
 * the ranks, layers and events. */
int cost_simulate(const fmt_cluster *c, const fmt_model *m,
                  const fmt_profile *prof, const cost_params *p,
                  const fmt_strategy *s, int overlap_dp, cost_timeline *out,
                  util_error *err);
/* cost_simulate that gives up with UTIL_ETIMEOUT (out empty) once
 * deadline (a util_now() time; 0 = none) has passed: checked between
 * replicas while the stage times are computed and between sweeps of the
 * schedule, so the overshoot is one replica's stage times or one sweep
 * (one step of every stage). */
int cost_simulate_until(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *p,
                        const fmt_strategy *s, int overlap_dp, double deadline,
                        cost_timeline *out, util_error *err);

/* ---- memory model (costmodel/memory.c) ------------------------------- */

/* Model-state bytes per parameter after ZeRO sharding over dp: weights,
 * gradients, optimizer state (fp16: 2, 2, 12 for a transformer shorthand
 * (Megatron-LM), 2, 2, 16 for a layer list, whose o keeps the loss
 * scaler's fp32 gradient copy; bf16: 2, 4, 12; fp32: 4, 4, 8;
 * p->state_bytes > 0 overrides the total, weights and gradients in the
 * model's element size). */
void cost_state_bytes(const fmt_model *m, const cost_params *p, int dp,
                      double *w, double *g, double *o);
/* Bytes per parameter the optimizer step adds after the backward passes,
 * when no activation is alive, after ZeRO sharding over dp: fp16 mixed
 * precision of a transformer shorthand, the fp32 copy of the gradients
 * (Megatron-LM's _copy_model_grads_to_main_grads, freed by zero_grad at
 * the next step), 4 (4/dp with ZeRO >= 1); otherwise 0. */
double cost_step_bytes(const fmt_model *m, const cost_params *p, int dp);
/* Activation bytes per sample that layer l keeps for backward at TP
 * degree tp under p->recompute and p->sp (docs/memory-model.md): from
 * the model's shape for a transformer shorthand, its act_bytes for a
 * layer list. */
double cost_layer_stored(const fmt_model *m, const cost_params *p, int l,
                         int tp);
/* Transient bytes per sample while layer l runs: a block's backward
 * gradients (2 x its largest saved tensor for a shorthand model, about
 * its stored activations for a layer list), what recomputation
 * re-materialises, the loss's working copies of the logits for the
 * head. */
double cost_layer_transient(const fmt_model *m, const cost_params *p, int l,
                            int tp);
/* Additive part of layer l's memory on one device: model state plus
 * `inflight` micro-batches of stored activations. */
double cost_layer_memory(const fmt_model *m, const cost_params *p, int l,
                         int tp, int dp, int mbs, int inflight);
/* Micro-batches whose activations a stage keeps under the schedule:
 * 1F1B min(pp - stage, gas), GPipe gas. */
int cost_inflight(const cost_params *p, int stage, int pp, int gas);

/* Micro-batches' worth of a device's activations that stage keeps under
 * the interleaved 1F1B schedule with vpp model chunks per device
 * (Narayanan et al. SC'21, section 2.2; Korthikanti et al. 2022,
 * section 4.2): (2 (pp - stage - 1) + (vpp - 1) pp + 1) chunk
 * micro-batches, at most gas x vpp, each 1 / vpp of the device's layers;
 * the first stage keeps pp (1 + (pp - 1) / (pp vpp)).  vpp <= 1: plain
 * 1F1B, min(pp - stage, gas).  With gas not a multiple of pp the group
 * of cost_vpp_group replaces pp in the (vpp - 1) pp term. */
double cost_inflight_interleaved(int stage, int pp, int gas, int vpp);
/* Micro-batches the interleaved schedule runs through one model chunk
 * before the next (Megatron-core's microbatch_group_size_per_vp_stage,
 * core_v0.19.0 schedules.py): pp when pp divides gas, else the least N in
 * (pp, gas] with gas mod N 0 or >= pp, the condition that schedule puts
 * on it (gas itself always is one); 0 when gas < pp (no such group). */
int cost_vpp_group(int pp, int gas);

/* ---- activations (costmodel/activations.c) --------------------------- */

/* Per-sample activation bytes one layer keeps for backward, by how
 * tensor and sequence parallelism divide them (docs/memory-model.md). */
typedef struct cost_act {
    double rep;             /* replicated under TP, divided by it only under SP */
    double shard;           /* divided by TP */
    double core;            /* attention core (scores or flash statistics), divided by TP */
    double logits;          /* the loss's fp32 vocabulary-parallel logits, divided by TP */
    double input;           /* the layer's input (what full recomputation keeps) */
} cost_act;

/* Attention kernel of m's training (enum fmt_attention): its own, else
 * flash for fp16/bf16 and eager for fp32. */
int cost_attention(const fmt_model *m);
/* 1 when m's activations come from its shape (a transformer shorthand),
 * 0 when from the layer list's act_bytes. */
int cost_act_from_shape(const fmt_model *m);
/* A transformer block of m under recomputation level recompute (enum
 * fmt_recompute), from the shape (Korthikanti et al. 2022 generalised). */
void cost_block_act(const fmt_model *m, int recompute, cost_act *out);
/* Layer l of m, from the shape or its stated act_bytes. */
void cost_layer_act(const fmt_model *m, int l, int recompute, cost_act *out);
/* Bytes per sample on one device at TP degree tp, sp = 1 with sequence
 * parallelism. */
double cost_act_bytes(const cost_act *x, int tp, int sp);

/* One device's stage, as the memory model needs it. */
typedef struct cost_mem_stage {
    int a, b;               /* layers [a, b) */
    int tp, dp, mbs;
    int inflight;           /* micro-batches whose activations it keeps */
    int gas;                /* micro-batches per iteration (0 = inflight) */
    int stage, pp;          /* position; pp = 0: unknown (no pipeline buffers,
                               no all-reduce bucket) */
    double inflight_v;      /* > 0: micro-batches' worth of activations kept
                               (interleaved schedule, cost_inflight_interleaved);
                               0 = inflight */
} cost_mem_stage;

/* Where a device's memory goes, bytes.  total = weights + grads +
 * optimizer + max(activations + workspace + buffers, bucket) + reserve;
 * with gradients freed between iterations (fmt_model.grad_buffer)
 * weights + optimizer + max(activations + workspace + buffers, grads +
 * bucket) + reserve. */
typedef struct cost_memory {
    double weights;         /* resident weights of its layers */
    double grads;           /* gradients */
    double optimizer;       /* optimizer state (fp16 layer list: + fp32
                               gradient copy) */
    double activations;     /* stored for backward, all in-flight micro-batches */
    double workspace;       /* transient of the layer being run (one micro-batch) */
    double buffers;         /* pipeline send/receive buffers */
    double bucket;          /* DP all-reduce bucket (after the backward passes) */
    double step;            /* optimizer step's transient, after the
                               backward passes (cost_step_bytes) */
    double reserve;         /* runtime memory: cost_params.mem_reserve, or
                               cost_runtime_memory once cost_runtime_apply ran */
    double total;           /* peak */
    double host;            /* optimizer state offloaded to host memory (in
                               none of the above, not in total); 0 without
                               offload */
} cost_memory;

/* Peak memory of one device (docs/cost-model.md, "Memory"); out (may be
 * NULL) gets the parts.  Returns out->total. */
double cost_device_memory(const fmt_model *m, const cost_params *p,
                          const cost_mem_stage *st, cost_memory *out);
/* Memory of a device holding layers [a, b) with `inflight` micro-batches
 * alive, position in the pipeline unknown: cost_device_memory without
 * pipeline buffers and all-reduce bucket. */
double cost_stage_memory(const fmt_model *m, const cost_params *p,
                         int a, int b, int tp, int dp, int mbs, int inflight);
/* Memory of rank's device under strategy s (its stage, position and
 * schedule from s and p->schedule); returns the stage. */
int cost_rank_stage_memory(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int rank, cost_memory *out);
/* Upper bound of the non-additive part of a stage's memory (reserve,
 * workspace of its largest layer, pipeline buffers at a hidden-state cut,
 * less the model state of a tied embedding and head that a single stage
 * holds once) for the layer-assignment DP, which sums cost_layer_memory
 * per layer at the same dp. */
double cost_memory_overhead_bound(const fmt_model *m, const cost_params *p,
                                  int tp, int dp, int mbs, int stage, int pp,
                                  int inflight, int gas);

/* ---- optimizer offload (costmodel/offload.c) ------------------------- */

/* Host side of node n: per-GPU host link bandwidth *pcie and host DRAM
 * bandwidth *host, B/s: the node's, else its GPU generation's default
 * (docs/time-model.md, "Optimizer offload"). */
void cost_offload_links(const fmt_cluster *c, int n, double *pcie,
                        double *host);
/* Offloaded optimizer step of stage j under s (slowest rank), s: the
 * gradients of the rank's shard to host over its PCIe link, of which
 * window seconds (the last backward pass) hide the transfer, the CPU
 * Adam step over every offloading rank of its node at the node's DRAM
 * bandwidth, the updated weights back (Ren et al., ZeRO-Offload,
 * USENIX ATC'21, sec. 4).  p carries the strategy's features. */
double cost_offload_step(const fmt_cluster *c, const fmt_model *m,
                         const cost_params *p, const fmt_strategy *s, int j,
                         double window);
/* Host memory check: fills r->host_bytes, host_cap and host_node from the
 * offloaded state of every rank (its stage's cost_memory.host) summed
 * per node; returns 0 when a node holds more than its host memory (or
 * has none while a rank offloads to it), 1 otherwise. */
int cost_host_fits(const fmt_cluster *c, const fmt_model *m,
                   const cost_params *p, const fmt_strategy *s,
                   cost_result *r);

/* ---- runtime memory (costmodel/runtime.c) ---------------------------- */

/* Reserve of cost_device_memory when mem_reserve is negative (derived)
 * and the device is unknown: 1 GiB. */
#define COST_RESERVE_UNKNOWN 1073741824.0

/* Device memory a training process holds beyond its tensors, bytes
 * (docs/memory-model.md, "Runtime"). */
typedef struct cost_runtime {
    double context;         /* CUDA context with the kernel images */
    double cublas;          /* cuBLAS workspaces of the process's handles */
    double nccl;            /* NCCL buffers of the rank's communicators */
    double allocator;       /* caching allocator's first segments */
    double total;           /* sum; p->mem_reserve when that is stated */
} cost_runtime;

/* 1 when p derives the runtime reserve (mem_reserve < 0), 0 when the
 * user stated it. */
int cost_runtime_derived(const cost_params *p);
/* Runtime memory of rank's process under strategy s on cluster c: per
 * device generation and the communicators of the rank, or the stated
 * p->mem_reserve; out (may be NULL) gets the terms.  Returns the total. */
double cost_runtime_memory(const fmt_cluster *c, const cost_params *p,
                           const fmt_strategy *s, int rank, cost_runtime *out);
/* mem (from cost_rank_stage_memory for rank) with its reserve replaced
 * by cost_runtime_memory when p derives it; returns mem->total. */
double cost_runtime_apply(const fmt_cluster *c, const cost_params *p,
                          const fmt_strategy *s, int rank, cost_memory *mem);

/* ---- calibration applied (docs/calibration.md) ----------------------- */

/* The calibration in force: p's, else the profile's, else NULL. */
const fmt_calibration *cost_calibration_of(const cost_params *p,
                                            const fmt_profile *prof);
/* Effective fraction of line rate of a link class under p (calibrated
 * bw_frac when set, else intra_eff / net_eff). */
double cost_calibration_eff(const cost_params *p, int cls);
/* Calibrated layer time (hook of cost_layer_time_of): work_fwd is the
 * part of fwd (s) that grows with the micro-batch, mbs its size,
 * work_ratio the backward / forward of that work (<= 0: taken from fwd and
 * bwd); fwd and bwd (TP communication comm included) are adjusted in
 * place. */
void cost_calibration_layer(const fmt_calibration *cal,
                            const fmt_device_type *dt, const fmt_layer *l,
                            int tp, int mbs, double work_fwd, double work_ratio,
                            double comm, double *fwd, double *bwd);

/* ---- uneven TP shards, stragglers, frozen layers --------------------- */

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

/* Heads H and MLP columns F that shards split: the model's heads and ffn
 * (4 * hidden when ffn is 0).  UTIL_EINVAL with a message when the model
 * has no transformer shape. */
int cost_shard_units(const fmt_model *m, int *heads, int *cols,
                     util_error *err);
/* Attention's part a of a block's FLOPs (memory = 0) or parameters
 * (memory = 1) from the model's shape (docs/model-formulas.md); 0.5 when
 * the shape is unknown. */
double cost_attn_frac(const fmt_model *m, int memory);
/* Share of the TP-divided work (memory = 0) or memory (memory = 1) that
 * rank holds: 1 / tp without shards. */
double cost_rank_share(const fmt_model *m, const fmt_strategy *s, int rank,
                       int memory);
/* Check shards against the model: per TP group heads sum to H and columns
 * to F, none negative.  UTIL_OK when s has none.  UTIL_EINVAL otherwise. */
int cost_shards_check(const fmt_model *m, const fmt_strategy *s,
                      util_error *err);
/* 1 when the TP group of (stage, dpi) mixes device types. */
int cost_tp_group_mixed(const fmt_cluster *c, const fmt_strategy *s,
                        int stage, int dpi);
/* Hook of cost_evaluate and the layer assignment: turn lt, the even-split
 * time of layer on the device of rank (of type dt), into the time of that
 * rank under its share, slowdown and frozen layers (rank < 0: frozen
 * layers only).  No-op when none applies; O(1). */
void cost_rank_layer_adjust(const fmt_model *m, const cost_params *p,
                            const fmt_device_type *dt,
                            const fmt_strategy *s, int rank, int layer,
                            cost_layer_time *lt);
/* Memory of rank from its even-split memory even_bytes: linear in the
 * memory share, M(share) = base + per_share * share. */
double cost_rank_memory(const fmt_model *m, const cost_params *p,
                        const fmt_strategy *s, int rank, double even_bytes);
void cost_rank_memory_line(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int rank, double *base,
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

int cost_rank_time_of(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *p,
                      const fmt_strategy *s, int rank, cost_rank_time *out);

#endif
