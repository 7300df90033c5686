/* launcher/launch.h: the GPU-free parts of hetplan-launch (library
 * hetplan_launcher, plain C): its command line, the mapping from a plan
 * to the work a GPU runs, the pipeline schedule of a stage, the choice
 * between executing the pipeline on one GPU per stage and composing it
 * from stage times, the execution plan the GPU code follows (ops,
 * transfers, event dependencies) with a CPU replay of it, and the
 * composition of measured stage times into an iteration with the
 * planner's schedule simulator, written as a trial file that `planner
 * calibrate` and `planner evaluate` read.  The multi-rank launch (one
 * process per GPU over NCCL): each process's plan rank and groups, the
 * pass order and point-to-point steps of its stage, its message sizes,
 * the TCP bootstrap between the processes, --spawn, the dry run and rank
 * 0's merge.  The GPU side (launch_gpu_*: launcher/exec.cu; launch_rank_*
 * and launch_nccl_id: launcher/multi.cu) is built only with CUDA.
 * Nothing here prints. */
#ifndef HETPLAN_LAUNCH_H
#define HETPLAN_LAUNCH_H

#include <stdint.h>

#include "prof.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAUNCH_TRIAL_FORMAT "hetplan-trial/1"

/* ---- command line (launcher/args.c) ---------------------------------- */

enum launch_mode {
    LAUNCH_MODE_AUTO = 0,   /* executed when the GPUs allow it, else composed */
    LAUNCH_MODE_EXECUTED,   /* one GPU per stage, the pipeline run for real */
    LAUNCH_MODE_COMPOSED    /* stages timed alone, the simulator composes */
};

typedef struct launch_options {
    const char *plan;       /* --plan FILE (required) */
    const char *output;     /* --output FILE: trial JSON; NULL = none */
    int rank;               /* --rank R: run only rank R's stage; -1 = all */
    int strategy;           /* --strategy K: K-th strategy of the plan (1 = best) */
    int iterations;         /* --iterations N: timed iterations (default 10) */
    int warmup;             /* --warmup N: untimed iterations (default 2) */
    int device;             /* --gpu N: CUDA device index (default 0) */
    int json;               /* --format json: print the trial on stdout */
    int mode;               /* --mode auto|executed|composed (enum launch_mode) */
    int quiet, verbose, help, version;
    int dry_run;            /* --dry-run: print what each rank would run */
    int spawn;              /* --spawn N: start N ranks here; 0 = none */
    int order;              /* --rank-order megatron|plan (enum launch_order) */
    double timeout_s;       /* --timeout S: bootstrap and failure deadline (60) */
} launch_options;

void launch_options_init(launch_options *o);
/* argv[0] is the program name.  UTIL_EINVAL with the message in err. */
int launch_parse_args(int argc, char **argv, launch_options *o,
                      util_error *err);

/* ---- plan to work (launcher/work.c) ---------------------------------- */

typedef struct launch_stage {
    int first, last;        /* layers [first, last) */
    int same_as;            /* first stage with the same layer kinds (itself
                               when distinct): identical synthetic work */
    int run;                /* 1: this launcher measures the stage */
    int nsynth;             /* layers synthesised on the GPU */
    int nmodelled;          /* layers timed by the cost model (generic kind) */
    char device_type[32];   /* the plan's device type of the stage's first rank */
    double send_bytes;      /* activation sent to stage j + 1 per micro-batch
                               (mbs * out_bytes of the last layer; 0 for the
                               last stage); its gradient has the same size */
    double params;          /* parameters of the stage's layers (all TP ranks) */
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
 * runs every distinct stage.  UTIL_EINVAL for a strategy or rank out of
 * range, or an fp32 plan.  Free with launch_work_free (NULL-safe). */
int launch_work_of(const plan_doc *d, int strategy, int rank,
                   launch_work *out, util_error *err);
void launch_work_free(launch_work *w);

/* Order of the passes stage `stage` runs in one iteration: 2 * gas
 * entries, bwd[i] = 0 forward / 1 backward of micro-batch micro[i].
 * 1F1B (PipeDream-flush): min(pp - stage - 1, gas) forwards, then one
 * forward and one backward alternately, then the remaining backwards;
 * GPipe: every forward, then every backward.  Returns 2 * gas, or -1 for
 * bad arguments. */
int launch_stage_order(int schedule, int stage, int pp, int gas, int *bwd,
                       int *micro);

/* ---- executed or composed (launcher/execplan.c) ---------------------- */

/* Which mode runs: LAUNCH_MODE_EXECUTED when `asked` is auto or executed,
 * no rank was asked for (w->rank < 0) and GPUs first_gpu ..
 * first_gpu + pp - 1 exist (ngpu visible); else LAUNCH_MODE_COMPOSED.
 * why (n bytes) says why, in words.  -1 when executed was asked for and
 * is not possible (why says why). */
int launch_choose_mode(const launch_work *w, int asked, int ngpu, int first_gpu,
                       char *why, size_t n);

/* ---- the execution plan (launcher/execplan.c) ------------------------ */

enum launch_op_kind {
    LAUNCH_OP_FWD = 0,      /* forward pass of `micro`, then fwd_extra_s */
    LAUNCH_OP_BWD,          /* backward pass of `micro`, then bwd_extra_s */
    LAUNCH_OP_RECV,         /* compute waits until transfer `xfer` arrived */
    LAUNCH_OP_SEND,         /* transfer `xfer` starts on its link once the
                               compute stream got here */
    LAUNCH_OP_MARK,         /* this stage's marker `mark` (an event) */
    LAUNCH_OP_WAIT_MARK,    /* compute waits for marker `mark` of `stage` */
    LAUNCH_OP_DELAY,        /* modelled time delay_s (enum launch_delay what) */
    LAUNCH_OP_OPTIMIZER     /* the stage's Adam step */
};

enum launch_mark {
    LAUNCH_MARK_DRAINED = 0,/* last backward done (no-overlap DP barrier) */
    LAUNCH_MARK_REDUCED,    /* DP all-reduce done (tied-weight meeting) */
    LAUNCH_MARK_END,        /* iteration done (end-of-iteration barrier) */
    LAUNCH_NMARKS
};

enum launch_delay {
    LAUNCH_DELAY_DP = 0,    /* data-parallel gradient all-reduce */
    LAUNCH_DELAY_TIED       /* tied embedding / head all-reduce */
};

enum launch_route {
    LAUNCH_ROUTE_PEER = 0,  /* cudaMemcpyPeerAsync, peer access enabled */
    LAUNCH_ROUTE_HOST       /* device -> pinned host -> device */
};

typedef struct launch_op {
    int kind;               /* enum launch_op_kind */
    int micro;              /* FWD, BWD: micro-batch */
    int xfer;               /* RECV, SEND: index into launch_exec.xfers */
    int stage;              /* WAIT_MARK: whose marker (MARK: own stage) */
    int mark;               /* MARK, WAIT_MARK: enum launch_mark */
    int what;               /* DELAY: enum launch_delay */
    double delay_s;         /* DELAY: seconds */
} launch_op;

/* One activation (stage cut -> cut + 1) or gradient (cut + 1 -> cut)
 * transfer of one micro-batch; repeated every iteration. */
typedef struct launch_xfer {
    int grad;               /* 0 activation, 1 gradient */
    int cut;                /* between stages cut and cut + 1 */
    int micro;
    int src_stage, dst_stage;
    int src_gpu, dst_gpu;
    int route;              /* enum launch_route */
    double bytes;
    int send_at, recv_at;   /* op index of the SEND in the source stage's
                               list, of the RECV in the destination's */
} launch_xfer;

typedef struct launch_exec_stage {
    int gpu;                /* CUDA device running the stage */
    double fwd_extra_s;     /* modelled, queued after each forward's kernels:
                               half the TP all-reduces + generic layers */
    double bwd_extra_s;     /* the same after each backward */
    int nops;
    launch_op *ops;         /* one iteration, in order, owned */
} launch_exec_stage;

typedef struct launch_exec {
    int pp, gas, schedule;
    int overlap_dp;         /* 0: DP all-reduces wait for every stage */
    launch_exec_stage *st;  /* pp, owned */
    int nxfer;
    launch_xfer *xfers;     /* owned */
} launch_exec;

/* What the plan needs besides the work. */
typedef struct launch_exec_input {
    int first_gpu;          /* stage j runs on GPU first_gpu + j */
    int ngpu;               /* CUDA devices visible */
    const int *peer;        /* ngpu * ngpu: [a * ngpu + b] = 1 when GPU a can
                               access GPU b's memory; NULL = never */
    const double *fwd_extra_s; /* pp, NULL = 0 (launch_stage_extra) */
    const double *bwd_extra_s; /* pp, NULL = 0 */
    const double *dp_s;     /* pp: modelled DP all-reduce; NULL = 0 */
    double tied_s;          /* tied-weight all-reduce, 0 = none */
    int tied_first, tied_last; /* its two stages */
    int overlap_dp;         /* as cost_sim_input.overlap_dp */
    int optimizer;          /* 1: every stage runs its optimizer step */
} launch_exec_input;

void launch_exec_input_init(launch_exec_input *in);

/* The ops of one iteration per stage: for each pass of
 * launch_stage_order, RECV of its input (stages > 0 forward, < pp - 1
 * backward), the pass, SEND of its output; then (overlap_dp 0) MARK
 * DRAINED and WAIT_MARK DRAINED of every other stage; DELAY of the DP
 * all-reduce (when > 0); on the tied stages MARK REDUCED, WAIT_MARK of
 * the other's REDUCED, DELAY of the tied all-reduce; OPTIMIZER; MARK END
 * and WAIT_MARK END of every other stage (the iteration barrier).
 * Transfers: activation m of cut j before its gradient, each route PEER
 * when in->peer allows src -> dst.  UTIL_EINVAL when a GPU is missing.
 * Free with launch_exec_free (NULL-safe). */
int launch_exec_plan(const launch_work *w, const launch_exec_input *in,
                     launch_exec *out, util_error *err);
void launch_exec_free(launch_exec *x);

/* Play the plan on the CPU with the stream semantics the GPU code uses
 * (one compute stream per stage, one send stream per cut and direction,
 * FIFO), given per micro-batch kernel times fwd_s/bwd_s (pp; the plan's
 * extras are added), transfer times act_s/grad_s (pp - 1, NULL = 0) and
 * optimizer times opt_s (pp, NULL = 0): iteration time in *iter_s, busy
 * time (passes) per stage in busy_s (pp, NULL = skip).  UTIL_EINTERNAL
 * naming the stuck op when the plan deadlocks. */
int launch_exec_replay(const launch_exec *x, const double *fwd_s,
                       const double *bwd_s, const double *act_s,
                       const double *grad_s, const double *opt_s,
                       double *iter_s, double *busy_s, util_error *err);

/* ---- composition (launcher/compose.c) -------------------------------- */

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
    /* the cost model's parts a GPU cannot run, replica 0, for the
     * executed mode (launch_exec_input) */
    double *extra_fwd_s;    /* pp: half the TP all-reduce + generic layers' fwd */
    double *extra_bwd_s;    /* pp: the other half + generic layers' bwd */
    double *dp_stage_s;     /* pp: DP all-reduce of each stage */
    double tied_s;          /* tied-weight all-reduce, 0 = none */
    int tied_first, tied_last;
    int overlap_dp;         /* the plan's cost parameter */
    /* executed mode (launch_trial_set_executed); 0 / NULL when composed */
    int executed;           /* 1: measured_s is a real pipeline's wall time */
    double composed_s;      /* the simulator on the executed stage times */
    double iter_iqr_s;      /* spread of the executed iterations */
    int *gpu;               /* pp: CUDA device of each stage */
    int *route;             /* pp - 1: enum launch_route of cut j (activations) */
    int processes;          /* > 0: that many ranks ran as processes over
                               NCCL (launch_merge_ranks); 0: one process */
    char reason[256];       /* why this mode ran (launch_choose_mode) */
} launch_trial;

/* Compose: the cost model gives what one GPU cannot measure (transfers,
 * TP and DP all-reduces, generic layers; every stage not measured), the
 * measurements give the rest; cost_simulate_stages runs the schedule.
 * meas has w->pp entries.  Free with launch_trial_free (NULL-safe). */
int launch_compose(const plan_doc *d, const launch_work *w,
                   const launch_measure *meas, launch_trial *out,
                   util_error *err);
void launch_trial_free(launch_trial *t);

/* The trial document: the strategies format of `planner evaluate`
 * (docs/inputs.md) with "measured_s" per strategy, plus the plan's
 * prediction, per-stage times and how they were obtained (docs/
 * profiler.md).  dev may be NULL.  malloc'd (caller frees); NULL when out
 * of memory. */
char *launch_trial_json(const plan_doc *d, const launch_work *w,
                        const launch_measure *meas, const launch_trial *t,
                        const prof_device_info *dev, int iterations);

/* ---- executed mode: what the GPUs measured (launcher/execplan.c) ----- */

/* Raw GPU timings (CUDA events) of the timed iterations. */
typedef struct launch_exec_samples {
    int pp, iterations, npass; /* npass = 2 * gas passes per stage */
    double *iter_s;         /* iterations: barrier-to-barrier wall time */
    double *kern_s;         /* pp * iterations * npass, [(j * iterations + i)
                               * npass + p]: the pass's kernels */
    double *full_s;         /* same layout: kernels + modelled extra */
    double *opt_s;          /* pp * iterations: optimizer step */
    int *bwd;               /* pp * npass: 1 = backward pass */
} launch_exec_samples;

int launch_exec_samples_alloc(launch_exec_samples *s, int pp, int iterations,
                              int npass);
void launch_exec_samples_free(launch_exec_samples *s);

/* Medians over the timed iterations. */
typedef struct launch_exec_result {
    double iter_s, iter_iqr_s;  /* wall time of one iteration */
    double iter_min_s, iter_max_s;
    double *fwd_s, *bwd_s;  /* pp: pass incl. modelled extra, per micro-batch */
    double *busy_s;         /* pp: sum of the stage's passes per iteration */
} launch_exec_result;

/* meas (pp entries) gets the kernels-only pass times (measured = 1) and
 * the optimizer step; res the iteration and the full pass times.  Free
 * res with launch_exec_result_free (NULL-safe). */
int launch_exec_summarise(const launch_exec_samples *s, launch_measure *meas,
                          launch_exec_result *res, util_error *err);
void launch_exec_result_free(launch_exec_result *r);

/* Turn a trial composed from executed stage times (meas from
 * launch_exec_summarise) into the executed trial: measured_s becomes the
 * executed wall time, the composed value moves to composed_s, fwd/bwd
 * and busy become the executed passes, GPUs and routes from x.
 * UTIL_ENOMEM. */
int launch_trial_set_executed(launch_trial *t, const launch_exec *x,
                              const launch_exec_result *r, util_error *err);

/* ---- executed mode, GPU side (launcher/exec.cu; CUDA build only) ----- */

/* Visible GPUs in *n and, when peer is not NULL (n * n ints, caller's,
 * at most cap entries), cudaDeviceCanAccessPeer for each pair.
 * UTIL_ENOTFOUND when there is no GPU. */
int launch_gpu_topology(int *n, int *peer, int cap, util_error *err);

/* Run the plan for real: one host thread per stage on its GPU, the
 * stage's synthetic layers (model shapes at the plan's tp and mbs), the
 * transfers between neighbouring GPUs, `warmup` untimed then
 * `iterations` timed iterations, timed with CUDA events.  bf16: the
 * math precision.  out is allocated here (launch_exec_samples_free). */
int launch_gpu_execute(const plan_doc *d, const launch_work *w,
                       const launch_exec *x, int bf16, int warmup,
                       int iterations, launch_exec_samples *out,
                       util_error *err);


/* ---- multi-rank: roles and groups (launcher/ranks.c) ----------------- */

/* How a process rank (RANK, 0 .. WORLD_SIZE - 1) finds its plan rank. */
enum launch_order {
    LAUNCH_ORDER_MEGATRON = 0, /* process rank r is plan rank r (tp fastest,
                                  then dp, then pp: Megatron's order);
                                  WORLD_SIZE = tp * dp * pp */
    LAUNCH_ORDER_PLAN       /* process rank r is cluster device r (the plan's
                               placement); WORLD_SIZE = the cluster's devices,
                               a device the plan leaves idle runs nothing */
};

/* Where one plan rank sits. */
typedef struct launch_coord {
    int stage, dpi, tpi;    /* pipeline stage, data-parallel and tensor-
                               parallel index */
    int device;             /* the plan's cluster device for the rank */
    int node;               /* that device's node (cluster.nodes index) */
} launch_coord;

/* Coordinates of plan rank r (0 .. w->ranks - 1) of strategy s. */
void launch_coord_of(const fmt_cluster *c, const fmt_strategy *s, int r,
                     launch_coord *out);

/* Plan rank of process rank `proc` in a world of `world` processes:
 * -1 when the process has no work (LAUNCH_ORDER_PLAN, an idle device).
 * UTIL_EINVAL when world does not fit the order (message in err). */
int launch_plan_rank(const fmt_cluster *c, const fmt_strategy *s, int order,
                     int proc, int world, int *plan_rank, util_error *err);

enum launch_group_kind {
    LAUNCH_GROUP_TP = 0,    /* same stage and dp index */
    LAUNCH_GROUP_PP,        /* same dp and tp index: the pipeline */
    LAUNCH_GROUP_DP,        /* same stage and tp index: gradient reduction */
    LAUNCH_GROUP_EMBED,     /* first and last stage of one pipeline (tied
                               embedding and head); 1 member when pp = 1 */
    LAUNCH_NGROUPS
};

/* Members (plan ranks) of plan rank r's group of the kind, in the
 * group's rank order (position in the communicator); returns the count
 * (at most tp, pp, dp or 2), writing at most cap members.  *index (may be
 * NULL) gets the group's number among the groups of that kind:
 * TP: dpi + dp * stage, PP: tpi + tp * dpi, DP: tpi + tp * stage,
 * EMBED: as PP. */
int launch_group(const fmt_strategy *s, int kind, int r, int *members,
                 int cap, int *index);

/* ---- multi-rank: schedule (launcher/sched.c) ------------------------- */

/* One pass of a device in an iteration. */
typedef struct launch_pass {
    int bwd;                /* 0 forward, 1 backward */
    int micro;              /* micro-batch 0 .. gas - 1 */
    int chunk;              /* model chunk of the device 0 .. vpp - 1; its
                               virtual stage is chunk * pp + stage */
} launch_pass;

/* Passes of stage `stage` in one iteration, 2 * gas * vpp of them (vpp
 * < 1 is 1): GPipe and 1F1B as launch_stage_order; interleaved 1F1B
 * (1F1B with vpp > 1; Narayanan et al., SC'21, sec. 2.2, the order of
 * Megatron-LM's forward_backward_pipelining_with_interleaving): gas a
 * multiple of pp, warm-up of min((pp - stage - 1) * 2 + (vpp - 1) * pp,
 * gas * vpp) forwards, forward k running chunk (k mod (pp * vpp)) / pp of
 * micro-batch (k / (pp * vpp)) * pp + k mod pp, backward k the chunk
 * vpp - 1 - that.  Returns the count, or -1 for bad arguments (message
 * in err, may be NULL). */
int launch_passes(int schedule, int vpp, int stage, int pp, int gas,
                  launch_pass *out, int cap, util_error *err);

/* One step of a device: a pass, or a group of point-to-point operations
 * issued together (ncclGroupStart/End). */
typedef struct launch_p2p {
    int send;               /* 1 send, 0 receive */
    int peer;               /* the other stage */
    int grad;               /* 0 activation, 1 gradient */
    int micro, chunk;       /* of the activation or its gradient: the
                               sending pass's micro-batch and chunk */
    double bytes;           /* per rank */
} launch_p2p;

typedef struct launch_step {
    int is_pass;            /* 1: pass (below); 0: p2p group */
    launch_pass pass;
    int np;                 /* p2p operations, at most 4 */
    launch_p2p p2p[4];
} launch_step;

/* The steps of stage `stage` in units of passes: one pass each (GPipe,
 * 1F1B), or (interleaved) one warm-up forward, one steady forward and
 * backward pair, one cool-down backward.  Before the first unit the
 * receives of its inputs; after unit u one group with the sends of its
 * outputs and the receives of unit u + 1's inputs.  These are the
 * pairings of Megatron-LM's schedules (send_forward_recv_backward and
 * the interleaved schedule's batched exchange), which let NCCL's
 * in-order rendezvous proceed without deadlock; bytes from
 * act_bytes (per cut of virtual stages, vpp * pp - 1 entries, NULL = 0).
 * malloc'd into *out (caller frees); returns the count, -1 on bad
 * arguments or no memory (err). */
int launch_steps(int schedule, int vpp, int stage, int pp, int gas,
                 const double *act_bytes, launch_step **out, util_error *err);

/* ---- multi-rank: a rank's program (launcher/program.c) --------------- */

enum launch_rop_kind {
    LAUNCH_ROP_PASS = 0,    /* forward or backward of one chunk (pass) */
    LAUNCH_ROP_TP,          /* one TP collective of layer `layer` after its
                               pass (all-reduce; reduce-scatter + all-gather
                               with sequence parallelism), TP group */
    LAUNCH_ROP_P2P,         /* a point-to-point group (step), PP group */
    LAUNCH_ROP_EMBED,       /* tied embedding gradient all-reduce, EMBED group */
    LAUNCH_ROP_DP_ALLREDUCE,/* gradient all-reduce, DP group */
    LAUNCH_ROP_DP_RS,       /* gradient reduce-scatter, DP group */
    LAUNCH_ROP_OPT,         /* the optimizer step */
    LAUNCH_ROP_DP_AG,       /* updated weights all-gather, DP group */
    LAUNCH_ROP_HOST_D2H,    /* optimizer offload: the shard's gradients to
                               host memory (bytes: host_grad_bytes) */
    LAUNCH_ROP_HOST_H2D     /* optimizer offload: its updated weights back
                               (bytes: host_weight_bytes) */
};

/* One operation of a rank's iteration. */
typedef struct launch_rop {
    int kind;               /* enum launch_rop_kind */
    int group;              /* enum launch_group_kind of its communicator, -1
                               for PASS, OPT and the host copies */
    launch_step step;       /* PASS (step.pass) and P2P (step.p2p) */
    int layer;              /* TP: the model layer */
    double bytes;           /* TP, EMBED, DP_*, HOST_*: bytes per rank */
} launch_rop;

/* Everything plan rank r does in one iteration, in order: its stage's
 * steps (launch_steps), each pass followed by the TP collectives of the
 * chunk's layers (tp > 1: tp_collectives of mbs * tp_comm_bytes each);
 * then the embedding all-reduce (pp > 1, first and last stage, tied
 * weights), the DP all-reduce or reduce-scatter (dp > 1), with optimizer
 * offload the gradients' copy to the host, the optimizer step, with
 * offload the weights' copy back, and the all-gather (distributed
 * optimizer).  The GPU code runs
 * exactly this list.  malloc'd into *out (caller frees); returns the
 * count, -1 on error (err). */
int launch_rank_program(const plan_doc *d, const fmt_strategy *s, int r,
                        launch_rop **out, util_error *err);

/* ---- multi-rank: message sizes (launcher/sizes.c) -------------------- */

/* What one rank sends per iteration, bytes per rank. */
typedef struct launch_sizes {
    int stage, vpp;
    double *act_bytes;      /* vpp * pp - 1 cuts of virtual stages: the
                               activation (and its gradient) of one
                               micro-batch, mbs * out_bytes of the chunk's
                               last layer, / tp with sequence parallelism
                               (Megatron scatters it over the TP group);
                               owned */
    double tp_bytes;        /* one TP collective of one micro-batch: mbs *
                               tp_comm_bytes of a block (0 when tp = 1) */
    int tp_fwd, tp_bwd;     /* TP all-reduces per micro-batch of the stage,
                               forward and backward (sum of tp_collectives);
                               with sp each is a reduce-scatter plus an
                               all-gather of tp_bytes */
    double tp_fwd_bytes, tp_bwd_bytes; /* their bytes per micro-batch, every
                               layer's own mbs * tp_comm_bytes summed */
    double params;          /* parameters the rank holds: replicated part
                               whole, the rest / tp */
    double grad_bytes;      /* its gradients: params * gradient bytes per
                               parameter (cost_state_bytes) */
    double dp_allreduce;    /* DP all-reduce of the gradients (zero 0), else 0 */
    double dp_rs, dp_ag;    /* distributed optimizer (zero >= 1): reduce-
                               scatter of the gradients, all-gather of the
                               updated weights (params * weight bytes) */
    double embed_bytes;     /* tied embedding gradient all-reduce between the
                               first and last stage, 0 = none */
    double weight_bytes;    /* weights the rank holds */
    double host_grad_bytes; /* optimizer offload (ZeRO-Offload, Ren et al.,
                               ATC'21, sec. 4.2): gradients of the rank's
                               optimizer shard copied to host memory per
                               iteration, device to host: grad_bytes, / dp
                               under ZeRO >= 1 with dp > 1; 0 without
                               offload */
    double host_weight_bytes; /* the shard's updated weights copied back,
                               host to device: weight_bytes, the same
                               division; 0 without offload */
} launch_sizes;

/* Sizes of plan rank r's messages under the plan's cost parameters.
 * Free with launch_sizes_free (NULL-safe). */
int launch_sizes_of(const plan_doc *d, const fmt_strategy *s, int r,
                    launch_sizes *out, util_error *err);
void launch_sizes_free(launch_sizes *z);

/* ---- optimizer offload: Adam on the host (launcher/hostadam.c) ------- */

/* Element type of a gradient buffer. */
enum launch_elem { LAUNCH_ELEM_FP32 = 0, LAUNCH_ELEM_FP16, LAUNCH_ELEM_BF16 };

#define LAUNCH_HOST_THREADS_MAX 256

/* One Adam step's hyperparameters (Kingma and Ba 2015, Algorithm 1). */
typedef struct launch_adam {
    float lr;               /* step size (1e-4) */
    float b1, b2;           /* moment decay rates (0.9, 0.999) */
    float eps;              /* added to the denominator (1e-8) */
    float c1, c2;           /* bias corrections 1 - b1^t, 1 - b2^t (those of
                               the first step, t = 1) */
} launch_adam;

void launch_adam_init(launch_adam *a);

/* Adam on the CPU over n fp32 master weights w with moments m and v and
 * gradients g (enum launch_elem gkind), writing the 16-bit weights w16
 * (bfloat16 when bf16, else IEEE half), as the GPU's adam_kernel does:
 * the host step of optimizer offload (ZeRO-Offload, Ren et al., ATC'21,
 * sec. 4.2).  Split over `threads` threads (at most
 * LAUNCH_HOST_THREADS_MAX; the caller's is one of them), each element
 * computed alike whatever their number.  Returns 0; -1 when a thread
 * could not start (the caller's thread then did its share). */
int launch_host_adam(const launch_adam *a, float *w, float *m, float *v,
                     const void *g, int gkind, void *w16, int bf16, long long n,
                     int threads);
/* Threads for the host step of one of ranks_here ranks sharing this
 * machine's online CPUs: at least 1. */
int launch_host_threads(int ranks_here);
/* IEEE 754 binary16 and bfloat16 of a float, rounded to nearest even,
 * and back. */
uint16_t launch_half_of(float f);
float launch_half_value(uint16_t h);
uint16_t launch_bf16_of(float f);
float launch_bf16_value(uint16_t b);

/* ---- multi-rank: dry run (launcher/dryrun.c) ------------------------- */

typedef struct launch_dry_input {
    int order;              /* enum launch_order */
    int world;              /* processes; 0 = what the order needs */
    int only;               /* process rank to describe; -1 = every rank */
    int local_gpus;         /* GPUs this machine shows, -1 = unknown */
    int local_world;        /* processes started on this machine, 0 = world */
    const char *const *local_names; /* CUDA names of this machine's GPUs
                               (local_gpus entries), NULL = unknown: each
                               local rank's GPU is compared with the plan's
                               device type */
    int local_first;        /* process rank on this machine's GPU 0 (local
                               rank = rank - local_first) */
} launch_dry_input;

void launch_dry_input_init(launch_dry_input *in);

/* What each process would run: its plan rank, device, groups, schedule
 * steps and message sizes, after checking the plan against the world
 * and the local GPUs.  *text malloc'd (caller frees); *warnings (may be
 * NULL) gets the count of problems found that do not stop a run (also
 * listed in text, lines starting with "warning:").  UTIL_EINVAL when the
 * plan cannot run in this world. */
int launch_dry_run(const plan_doc *d, const launch_work *w,
                   const launch_dry_input *in, char **text, int *warnings,
                   util_error *err);

/* GPUs this machine shows without CUDA: CUDA_VISIBLE_DEVICES when set,
 * else the NVIDIA driver's /proc entries; -1 when unknown. */
int launch_local_gpus(void);
/* Their CUDA names ("NVIDIA H100 80GB HBM3") from the driver's /proc
 * entries in PCI bus order, at most cap; 0 when unknown (no driver, or
 * CUDA_VISIBLE_DEVICES set). */
int launch_local_gpu_names(char names[][64], int cap);


/* ---- multi-rank: bootstrap over TCP (launcher/bootstrap.c) ----------- */

#define LAUNCH_BOOT_MAX 4096    /* largest blob, per-rank info or message */

typedef struct launch_boot_params {
    const char *addr;       /* rank 0's address (MASTER_ADDR); rank 0 listens
                               on every interface */
    int port;               /* MASTER_PORT */
    int rank, world;        /* this process, all processes */
    double timeout_s;       /* every rank joins within it, else every rank
                               fails naming the missing ones (default 60) */
} launch_boot_params;

void launch_boot_params_init(launch_boot_params *p);

/* Rank 0 and its connections to the other ranks (a star). */
typedef struct launch_boot launch_boot;

/* Join the world: rank 0 accepts world - 1 connections and sends each
 * rank the blob (rank 0's, e.g. the NCCL unique id; ignored on other
 * ranks) and every rank's info; the others connect (retrying until the
 * deadline) and send their info.  Errors name the rank: UTIL_ETIMEOUT
 * when ranks did not join in time, UTIL_EIO when a rank was lost or
 * aborted, UTIL_EINVAL for a bad world or a rank seen twice.  Free with
 * launch_boot_destroy (NULL-safe; closes the connections). */
int launch_boot_create(const launch_boot_params *p, const void *blob,
                       size_t blob_len, const void *info, size_t info_len,
                       launch_boot **out, util_error *err);
void launch_boot_destroy(launch_boot *b);

/* Rank 0's blob; its length in *len.  Owned by b. */
const void *launch_boot_blob(const launch_boot *b, size_t *len);
/* Rank r's info; its length in *len; NULL for r out of range. */
const void *launch_boot_info(const launch_boot *b, int r, size_t *len);

/* Rank 0 collects len bytes from every rank into all (world * len, rank
 * order; only rank 0's is written) and then releases every rank: a
 * barrier too.  Within timeout_s, else UTIL_ETIMEOUT naming the ranks
 * that did not report; a lost rank or an abort ends every rank
 * (UTIL_EIO, the rank and cause in err). */
int launch_boot_gather(launch_boot *b, const void *mine, size_t len,
                       void *all, double timeout_s, util_error *err);

/* Wait up to timeout_s for trouble: UTIL_OK when none came, UTIL_EIO
 * naming the rank when a rank was lost (its connection closed) or a rank
 * aborted; rank 0 tells every other rank.  For a watchdog thread while
 * the GPUs run (no other call on b meanwhile). */
int launch_boot_watch(launch_boot *b, double timeout_s, util_error *err);

/* Tell every rank (through rank 0) that this rank fails with `why`; the
 * others' next launch_boot_* call returns UTIL_EIO with "rank R: why". */
void launch_boot_abort(launch_boot *b, const char *why);


/* ---- multi-rank: environment and --spawn (launcher/spawn.c) ---------- */

/* torchrun's environment. */
typedef struct launch_env {
    int present;            /* 1: WORLD_SIZE was set */
    int rank, world;        /* RANK, WORLD_SIZE */
    int local_rank;         /* LOCAL_RANK (default RANK) */
    int local_world;        /* LOCAL_WORLD_SIZE (default WORLD_SIZE) */
    char addr[256];         /* MASTER_ADDR (default 127.0.0.1) */
    int port;               /* the bootstrap's port: HETPLAN_LAUNCH_PORT, else
                               MASTER_PORT (default 29500), + 1 under torchrun
                               (TORCHELASTIC_RUN_ID set), whose agent holds
                               MASTER_PORT for its own store */
} launch_env;

/* Read the environment; UTIL_EINVAL naming the variable when one is
 * malformed or RANK is missing while WORLD_SIZE is set. */
int launch_env_of(launch_env *e, util_error *err);

/* What --spawn saw of its children. */
typedef struct launch_spawn_result {
    int n;                  /* children started */
    int *status;            /* n: exit code, or 128 + signal; owned */
    int first_failed;       /* rank that failed first, -1 = none */
    int killed;             /* children ended by the launcher after the grace
                               period */
} launch_spawn_result;

/* Start n processes `exe argv...` on this machine with RANK = LOCAL_RANK
 * = i, WORLD_SIZE = LOCAL_WORLD_SIZE = n, MASTER_ADDR 127.0.0.1 and a free
 * MASTER_PORT; wait for all.  Once one fails, the others get grace_s to
 * end (they hear of it through the bootstrap) before SIGTERM, then
 * SIGKILL.  Free res with launch_spawn_result_free (NULL-safe). */
int launch_spawn(const char *exe, char *const *argv, int n, double grace_s,
                 launch_spawn_result *res, util_error *err);
void launch_spawn_result_free(launch_spawn_result *res);

/* ---- multi-rank: measurements (launcher/merge.c) --------------------- */

/* Per-rank information exchanged at bootstrap (fixed layout: every rank
 * runs the same build). */
typedef struct launch_rank_info {
    int plan_rank;          /* -1: idle */
    int local_rank;
    int pid;
    int gpu_ok;             /* 1: the rank opened its GPU */
    char host[64];
    char gpu[64];           /* the GPU's name, "" when none */
} launch_rank_info;

/* What one rank measured, sent to rank 0 (fixed layout). */
typedef struct launch_rank_result {
    int rank, plan_rank, stage;
    int passes;             /* passes per iteration (2 * gas * vpp) */
    double iter_s;          /* median iteration, CUDA events, s */
    double iter_min_s, iter_max_s;
    double fwd_s, bwd_s;    /* median forward / backward pass of one chunk and
                               micro-batch, with its TP collectives, s */
    double tp_s;            /* TP collectives per iteration, s */
    double p2p_s;           /* point-to-point groups per iteration, waiting
                               included, s */
    double dp_s;            /* DP / distributed optimizer and embedding
                               collectives per iteration, s */
    double opt_s;           /* optimizer step per iteration, s */
    double mem_used;        /* peak device memory in use (cudaMemGetInfo), B */
    double mem_base;        /* in use before the launcher allocated (context,
                               other processes), B */
    double mem_alloc;       /* high-water mark of the launcher's allocations
                               (model state, activations, buffers, kernels'
                               work buffers), B */
    double mem_predicted;   /* the memory model's peak for the rank, B */
    char gpu[64];
} launch_rank_result;

/* Merge the ranks' results (n entries, idle ranks have plan_rank < 0)
 * into a trial: per stage the slowest replica's pass times (measured),
 * the iteration the slowest rank's median; composed with the plan's
 * prediction as launch_compose does.  reason names the mode. */
int launch_merge_ranks(const plan_doc *d, const launch_work *w,
                       const launch_rank_result *res, int n,
                       launch_measure *meas, launch_trial *out,
                       util_error *err);

/* The trial document `json` (launch_trial_json) with a "ranks" array:
 * each rank's times and measured against predicted memory.  malloc'd
 * (caller frees); NULL when json is malformed or out of memory. */
char *launch_ranks_json(const char *json, const launch_rank_result *res, int n);

/* ---- multi-rank, GPU side (launcher/multi.cu; CUDA and NCCL only) ---- */

/* Settings of one rank's run. */
typedef struct launch_rank_run {
    int rank, world, plan_rank, local_rank;
    int warmup, iterations;
    double timeout_s;       /* a collective stuck this long ends the run */
    /* called (from the watchdog thread) when the run cannot be ended
       cleanly; the program prints msg and exits.  NULL = none */
    void (*on_stuck)(const char *msg);
} launch_rank_run;

/* The NCCL unique id of a new world in blob (cap bytes), its size in
 * *len.  UTIL_ENOTFOUND when built without NCCL. */
int launch_nccl_id(void *blob, size_t cap, size_t *len, util_error *err);

/* Open GPU local_rank (fills info->gpu, gpu_ok); UTIL_ENOTFOUND naming
 * the cause when there is none. */
int launch_rank_gpu(int local_rank, launch_rank_info *info, util_error *err);

/* Run plan rank r->plan_rank's share of the plan for real: NCCL
 * communicators for the world and every TP, PP, DP and embedding group
 * (ncclCommSplit), the rank's layers as cuBLAS GEMMs and kernels of the
 * model's shapes, TP all-reduces (reduce-scatter + all-gather with
 * sequence parallelism), point-to-point steps of launch_steps, DP all-
 * reduce or reduce-scatter + all-gather, the tied embedding's all-
 * reduce, the Adam step (on the CPU between the host copies under
 * optimizer offload); buffers sized by the memory model.  A watchdog
 * thread ends the run when another rank fails (launch_boot_watch).
 * Idle ranks (plan_rank < 0) join the communicators and return.  On
 * error err names the cause (out of memory, NCCL error, a lost rank). */
int launch_rank_execute(const plan_doc *d, const launch_work *w,
                        const launch_rank_run *r, launch_boot *b,
                        launch_rank_result *out, util_error *err);

#ifdef __cplusplus
}
#endif

#endif
