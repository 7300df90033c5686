/* costmodel/internal.h: helpers shared between the files of costmodel/
 * (not part of the public API in costmodel.h).  Pure functions, no I/O. */
#ifndef HETPLAN_COSTMODEL_INTERNAL_H
#define HETPLAN_COSTMODEL_INTERNAL_H

#include "costmodel.h"

/* ---- the cut between two stages (costmodel/links.c) ------------------ */

/* Count cross-node flows per node (out_flows, in_flows: c->nnodes each)
 * for the transfers between stage j and j + 1 of every replica and TP
 * rank (they run at the same time). */
void cost_count_cut_flows(const fmt_cluster *c, const fmt_strategy *s,
                          int j, int *out_flows, int *in_flows);
/* Worst link of the cut between stage j and j + 1 for replicas [d0, d1),
 * the NICs shared by the counted flows (NULL: no sharing). */
void cost_cut_link_range(const fmt_cluster *c, const cost_params *p,
                         const fmt_strategy *s, int j, int d0, int d1,
                         const int *out_flows, const int *in_flows, double *bw,
                         double *lat);

/* ---- per-stage pieces of the analytic model (costmodel/evaluate.c) --- */

/* Stage times that identical devices (type, TP ring, node bandwidth)
 * share, a few per stage, as cost_evaluate keeps them: for the calls of
 * cost_stage_fwd_bwd on one strategy under one cost_params, so that the
 * replicas of a stage cost one pass over its layers rather than one
 * each.  cost_stage_memo_new returns NULL for a strategy whose ranks
 * carry shards or slowdowns (their times differ) or when out of memory:
 * every device is then timed alone.  Owned by the caller. */
typedef struct cost_stage_memo cost_stage_memo;
cost_stage_memo *cost_stage_memo_new(const fmt_strategy *s);
void cost_stage_memo_free(cost_stage_memo *memo);

/* Forward and backward time of stage j in replica dpi for one
 * micro-batch, on the slowest device of its TP group (TP all-reduces
 * included), exactly the t_j of AMP eq. 5 that cost_evaluate uses:
 * *fwd + *bwd = t_j.  *est / *meas (may be NULL) get the number of layer
 * times estimated / measured.  memo: NULL or cost_stage_memo_new(s). */
void cost_stage_fwd_bwd(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *p,
                        const fmt_strategy *s, int j, int dpi,
                        cost_stage_memo *memo, double *fwd, double *bwd,
                        int *est, int *meas);
/* ---- the simulator's events in order (costmodel/evsort.c) ----------- */

/* Order of the timeline: start time, then stage, replica, kind,
 * micro-batch, chunk, end. */
int cost_event_cmp(const cost_event *a, const cost_event *b);
/* Sort ev[0 .. n) by cost_event_cmp in O(n log runs) time (runs: its
 * maximal ordered stretches) with 8 bytes per event and 4 per run of
 * scratch.  UTIL_ETIMEOUT once deadline (a util_now() time, 0 = none)
 * has passed, checked between merge passes and every 65,536 moves of
 * the final permutation (the order of ev is then unspecified);
 * UTIL_ENOMEM (ev unchanged). */
int cost_sort_events(cost_event *ev, size_t n, double deadline);

/* Does the device name contain tag (upper case), case-insensitively?  The
 * device generation tables of gemm.c and runtime.c match on it. */
int cost_name_has_tag(const char *name, const char *tag);

/* What the compute model knows of a device generation (costmodel/gemm.c). */
typedef struct cost_gen {
    const char *tag;        /* upper-case part of the device name */
    double gemm;            /* large-GEMM fraction of the unit's peak */
    double flash_fwd;       /* flash-attention forward fraction of peak */
    double flash_bwd;       /* flash-attention backward fraction of peak */
    int sms;                /* streaming multiprocessors (or CUs) */
    int tensor_cores;       /* 1: 16-bit matmuls run on tensor cores */
} cost_gen;
/* The generation row of dt (a default row when none matches). */
const cost_gen *cost_gen_of(const fmt_device_type *dt);

/* One-way transfer (latency + bytes / bandwidth) between stage j and
 * j + 1 of every replica, with the NIC shared by all replicas' and TP
 * ranks' concurrent transfers of that cut: half of e_j of AMP eq. 5,
 * into oneway[0 .. dp - 1].  The flows of the cut are counted once:
 * O(dp x tp + nodes). */
void cost_p2p_oneway_cut(const fmt_cluster *c, const fmt_model *m,
                         const cost_params *p, const fmt_strategy *s, int j,
                         double *oneway);
/* Data-parallel gradient all-reduce of every stage (slowest of its TP
 * indices) into per_stage[0 .. pp - 1], every stage's groups running at
 * once; 0 when dp = 1.  Returns the slowest, -1 when out of memory. */
double cost_dp_sync_stages(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *p, const fmt_strategy *s,
                           double *per_stage);
/* All-reduce of the tied weights between the first and last stage that
 * hold them (0 when none or one stage holds them; -1 when out of
 * memory). */
double cost_tied_sync_time(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *p, const fmt_strategy *s);
/* Optimizer step of stage j (slowest device). */
double cost_optimizer_stage(const fmt_cluster *c, const fmt_model *m,
                            const cost_params *p, const fmt_strategy *s,
                            int j);
/* The same with the window (s) of the stage's last backward pass behind
 * which an offloaded step's gradient transfer to the host hides, as
 * cost_evaluate passes it under overlap_grad_reduce (0: none); a step on
 * the GPU ignores it. */
double cost_optimizer_stage_window(const fmt_cluster *c, const fmt_model *m,
                                   const cost_params *p, const fmt_strategy *s,
                                   int j, double window);

/* ---- analytic kernel times (costmodel/kernels.c) ---------------------- */

/* Compute time of one layer for one micro-batch on one device, without
 * TP communication (docs/time-model.md). */
typedef struct cost_kernel_time {
    double fwd;             /* forward kernels, s */
    double bwd;             /* backward kernels (recomputation excluded), s */
    double recompute;       /* forward re-run before the backward under
                               p->recompute (full: fwd; selective: core_fwd), s */
    int recompute_comm;     /* 1: the re-run repeats the forward's TP collectives */
    double gemm_fwd;        /* matrix-multiplication part of fwd, s */
    double core_fwd;        /* attention core (scores, softmax, dropout,
                               context) part of fwd; 0 with flash attention */
} cost_kernel_time;

void cost_layer_kernels(const fmt_model *m, const cost_params *p,
                        const fmt_device_type *dt, int layer, int tp, int mbs,
                        cost_kernel_time *out);
/* Dense tensor peak FLOP/s of the model's precision on dt (fp32: TF32 when
 * p->tf32 and the device has it). */
double cost_gemm_peak(const fmt_model *m, const cost_params *p,
                      const fmt_device_type *dt);
/* Fastest PCIe x16 link, B/s per direction (PCIe 5.0); faster
 * intra-node links are NVLink-class. */
#define COST_PCIE_MAX_BW 64e9
/* Fraction of line rate of a link of class cls (enum fmt_link_class) and
 * bandwidth bw: calibrated when set, p->nvlink_eff for NVLink-class
 * intra-node links, else cost_calibration_eff. */
double cost_link_eff(const cost_params *p, int cls, double bw);
/* Attention-core kernels of a run (enum cost_attention): p->attention
 * when set (>= 0), else the model's training.attention (cost_attention;
 * eager = fused scale-mask-softmax). */
int cost_attention_kernel(const fmt_model *m, const cost_params *p);
/* Large-GEMM efficiency on dt: p->gemm_eff, else its generation's. */
double cost_gemm_eff(const cost_params *p, const fmt_device_type *dt);

/* ---- communication overlap (costmodel/overlap.c) -------------------- */

/* 1 when the TP group of (stage j, replica d) can overlap its
 * collectives with GEMMs (cost_overlap_tp_hardware for one group). */
int cost_overlap_tp_group(const fmt_cluster *c, const fmt_model *m,
                          const fmt_strategy *s, int j, int d);
/* Take the TP time hidden behind the GEMMs of `layer` out of lt (TP
 * overlap on, a transformer block; other layers unchanged). */
void cost_overlap_tp_layer(const fmt_model *m, const cost_params *p,
                           const fmt_device_type *dt, int layer, int tp,
                           int mbs, cost_layer_time *lt);
/* Exposed DP synchronisation of a stage whose all-reduce (or ZeRO
 * reduce-scatter + all-gather) takes t: params on each device, first
 * (its first trained layer's, the bucket of edge), wb the backward and
 * wf the forward pass of one micro-batch, under s's overlap_grad and
 * overlap_param (p resolved for s: zero_stage, dp_bucket). */
double cost_overlap_dp(const cost_params *p, const fmt_strategy *s, double t,
                       double params, double first, double wb, double wf);

/* ---- fidelity (costmodel/simulate.c) --------------------------------- */

/* Replace out's iteration time with the simulated one (p->overlap_dp):
 * total and iter_s change by the difference between the simulated time
 * and the pipeline + DP + optimizer part of the analytic breakdown; the
 * bubble absorbs it (when it would go negative, the overlap hid P2P,
 * then DP all-reduce, then optimizer time, which shrink instead). */
int cost_sim_refine(const fmt_cluster *c, const fmt_model *m,
                    const fmt_profile *prof, const cost_params *p,
                    const fmt_strategy *s, cost_result *out,
                    util_error *err);
/* 1 when an iteration of s makes no more than COST_SIM_MAX_EVENTS events
 * (cost_simulate takes it). */
int cost_sim_fits(const fmt_strategy *s);

#endif
