/* formats/formats.h: hetplan's inputs as plain structs (device types
 * and the built-in catalogue, cluster, model, profile with its
 * calibration, strategy) and the readers of the input files (cluster,
 * model, profile, AMP profile, strategies, trials) that validate them
 * with located errors.  Nothing above this room reads those files.
 *
 * Units are SI everywhere: seconds, bytes, bytes/second, FLOP/s.  Input
 * files may use GB, Gbps and ms; they are converted once, when parsed. */
#ifndef HETPLAN_FORMATS_H
#define HETPLAN_FORMATS_H

#include <stddef.h>

#include "util.h"

#define FMT_PROFILE_SCHEMA "hetplan-profile/1"

/* ---- device types ---------------------------------------------------- */

typedef struct fmt_device_type {
    char name[32];       /* e.g. "V100", "T4", "A100-80GB" */
    double mem_bytes;    /* device memory, bytes */
    double flops_fp16;   /* peak dense fp16 tensor throughput, FLOP/s */
    double flops_bf16;   /* peak dense bf16 throughput, FLOP/s; 0 = none */
    double mem_bw;       /* memory bandwidth, bytes/s */
    double flops_fp32;   /* peak fp32 throughput without tensor cores, FLOP/s;
                            0 = not given */
    double flops_tf32;   /* peak dense tf32 tensor throughput, FLOP/s; 0 = none
                            (or not given) */
} fmt_device_type;

/* Built-in catalogue of published GPU specs (formats/catalog.c).
 * Lookup is case-insensitive; returns NULL when unknown.  Static storage. */
const fmt_device_type *fmt_catalog_find(const char *name);
/* The entry whose name is nearest to name (compared as the lookup
 * does: case, punctuation and vendor prefixes ignored), when near enough
 * to be a typo of it (util_near_name); NULL otherwise.  Static storage. */
const fmt_device_type *fmt_catalog_nearest(const char *name);
size_t fmt_catalog_count(void);
const fmt_device_type *fmt_catalog_get(size_t i);

/* ---- cluster --------------------------------------------------------- */

typedef struct fmt_node {
    char name[64];       /* unique node name */
    char region[64];     /* optional region, "" if none */
    int type;            /* index into fmt_cluster.types */
    int gpus;            /* GPUs in this node (> 0) */
    int first_device;    /* global index of its first GPU */
    double intra_bw;     /* GPU-GPU bandwidth inside the node, B/s */
    double intra_lat;    /* latency inside the node, s */
    double nic_bw;       /* NIC bandwidth to other nodes, B/s */
    double nic_lat;      /* latency to other nodes, s */
    /* host side, for optimizer offload (docs/inputs.md); 0 = not given */
    double host_mem;     /* host memory the node's GPUs may fill with
                            offloaded optimizer state, bytes; 0 = none:
                            offload is not searched on this node */
    double host_bw;      /* host DRAM bandwidth of the node, B/s; 0 = the
                            GPU generation's default (costmodel/offload.c) */
    double pcie_bw;      /* host <-> GPU bandwidth of each GPU, B/s; 0 = the
                            GPU generation's default */
} fmt_node;

/* Explicit link between two nodes (gpu = -1) or two GPUs. */
typedef struct fmt_link {
    int node_a, gpu_a;   /* node index, GPU index inside it or -1 */
    int node_b, gpu_b;
    double bw;           /* B/s */
    double lat;          /* s */
} fmt_link;

/* Entries of a cluster file's "device_types" and "prices", and its
 * "links" (docs/limits.md). */
#define FMT_MAX_DEVICE_TYPES 256
#define FMT_MAX_LINKS 131072

typedef struct fmt_cluster {
    char name[64];
    fmt_device_type *types; /* ntypes entries, owned */
    int ntypes;
    fmt_node *nodes;        /* nnodes entries, owned */
    int nnodes;
    fmt_link *links;        /* nlinks overrides, owned, may be NULL */
    int nlinks;
    int *link_order;         /* link_order_n entries: the links sorted by their
                                ends (fmt_cluster_index), owned; used by
                                fmt_link_between when link_order_n == nlinks */
    int link_order_n;
    int ndevices;            /* sum of nodes[].gpus */
    int *device_node;        /* ndevices entries: node of each device, owned */
    double *price;           /* ntypes entries: price of one GPU of each type per
                                hour (any currency, >= 0), < 0 = not given;
                                owned, NULL when the file gives no price */
} fmt_cluster;

/* Free the members of c (not c itself); NULL-safe, leaves c zeroed. */
void fmt_cluster_free(fmt_cluster *c);
/* Fill device_node/first_device/ndevices from nodes[] and the index of
 * the links (link_order); UTIL_ENOMEM.  Call it again after changing
 * nodes or links. */
int fmt_cluster_index(fmt_cluster *c);
/* Nominal bandwidth and latency of the link between two devices:
 * an override when one matches, else the node's intra link for two GPUs
 * of one node, else the slower NIC of the two nodes (larger latency). */
void fmt_link_between(const fmt_cluster *c, int dev_a, int dev_b,
                       double *bw, double *lat);
/* Device type of a device. */
const fmt_device_type *fmt_device(const fmt_cluster *c, int dev);

/* ---- model ----------------------------------------------------------- */

enum fmt_layer_kind {
    FMT_KIND_GENERIC = 0,
    FMT_KIND_EMBEDDING,
    FMT_KIND_TRANSFORMER,
    FMT_KIND_HEAD,          /* output projection to the vocabulary + loss */
    FMT_KIND_NORM,
    FMT_KIND_NOOP
};
/* "generic", "embedding", ... ; NULL for out-of-range. */
const char *fmt_kind_name(int kind);
/* Kind from name (also accepts AMP's "embed2h", "embed2v", "noop");
 * returns -1 when unknown. */
int fmt_kind_from_name(const char *name);

typedef struct fmt_layer {
    char name[48];
    int kind;               /* enum fmt_layer_kind */
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
    double params_rep;      /* part of params that every TP rank holds whole (norms,
                               row-parallel biases, learned positions); the rest is
                               sharded.  0 when a layer list does not give it */
    int gemm_first;         /* the layer's matrix multiplications (a layer
                               list's "gemms"): fmt_model.gemms[gemm_first ..
                               gemm_first + gemm_count - 1]; */
    int gemm_count;         /* 0 = none stated (time from fwd_flops) */
} fmt_layer;

/* Which dimension of a GEMM tensor parallelism divides. */
enum fmt_gemm_split {
    FMT_SPLIT_N = 0,        /* output columns: column-parallel (the default) */
    FMT_SPLIT_K,            /* inner dimension: row-parallel */
    FMT_SPLIT_BATCH,        /* the batched products (attention heads) */
    FMT_SPLIT_NONE          /* every TP rank runs it whole */
};
/* One matrix multiplication of a layer's forward pass, per sample at
 * tp = 1: batch products C[m, n] = A[m, k] B[k, n] (docs/inputs.md,
 * "layers[].gemms"). */
typedef struct fmt_gemm {
    double m, n, k;         /* rows of A and C, columns of C, inner dimension */
    double batch;           /* independent products per sample (>= 1) */
    int split;              /* enum fmt_gemm_split */
    int rhs_weight;         /* 1: B is a weight, shared by the micro-batch's
                               samples, which stack along m; 0: B is an
                               activation (attention scores), each sample
                               its own products, stacked along batch */
} fmt_gemm;

/* Architecture choices of a transformer (docs/model-formulas.md); 0 is
 * the family's default (gpt2's for a model without a family).  The ReLU
 * MLP (OPT) has the GeLU MLP's two matrices; its backward keeps only the
 * activation's output. */
enum fmt_mlp { FMT_MLP_FAMILY = 0, FMT_MLP_GELU, FMT_MLP_SWIGLU, FMT_MLP_RELU };
enum fmt_positions {
    FMT_POS_FAMILY = 0, FMT_POS_LEARNED, FMT_POS_ROTARY, FMT_POS_ALIBI
};
enum fmt_norm { FMT_NORM_FAMILY = 0, FMT_NORM_LAYERNORM, FMT_NORM_RMSNORM };
enum fmt_flag { FMT_FLAG_FAMILY = 0, FMT_FLAG_ON, FMT_FLAG_OFF };
/* Which choice an enum value names, for fmt_arch_name and
 * fmt_arch_from_name. */
enum fmt_arch_axis { FMT_AXIS_MLP = 0, FMT_AXIS_POSITIONS, FMT_AXIS_NORM };
/* "gelu", "swiglu", "relu"; "learned", "rotary", "alibi"; "layernorm",
 * "rmsnorm".
 * NULL for 0 (family default) or out of range. */
const char *fmt_arch_name(int axis, int value);
/* Value of a name on an axis (exact, lower case), -1 when unknown. */
int fmt_arch_from_name(int axis, const char *name);

/* The training framework of a model file (training.framework,
 * formats/framework.c, docs/inputs.md "Frameworks"). */
enum fmt_fw_family {
    FMT_FW_NONE = 0,
    FMT_FW_PYTORCH,         /* PyTorch eager (Hugging Face-style code) */
    FMT_FW_MEGATRON_LM,     /* Megatron-LM before megatron/core (by year) */
    FMT_FW_MEGATRON_CORE,   /* Megatron-core with Transformer Engine */
    FMT_FW_DEEPSPEED        /* DeepSpeed over PyTorch modules */
};
typedef struct fmt_framework {
    int family;             /* enum fmt_fw_family */
    int major, minor;       /* version; Megatron-LM: year, 0 */
    int ngc;                /* 1: PyTorch of an NGC container ("-ngc"),
                               which turns TF32 on for matmuls */
} fmt_framework;
/* Fields a framework set (fmt_model.fw_defaults). */
enum {
    FMT_FW_SET_TF32 = 1, FMT_FW_SET_ATTENTION = 2, FMT_FW_SET_CE = 4
};
/* How a framework launches kernels (values of enum cost_launch). */
enum fmt_launch { FMT_LAUNCH_EAGER = 0, FMT_LAUNCH_FUSED, FMT_LAUNCH_GRAPHS };
#define FMT_FRAMEWORK_N 32 /* longest framework name + 1 */
/* Parse "pytorch-1.7" etc. into *out; -1 when not an accepted name. */
int fmt_framework_parse(const char *name, fmt_framework *out);
/* Its name ("pytorch-1.7") into buf; "" for none. */
const char *fmt_framework_text(const fmt_framework *fw, char *buf, size_t n);
/* The accepted names, for messages and docs. */
const char *fmt_framework_accepted(void);
/* Defaults a framework implies; -1 where it implies none. */
int fmt_framework_tf32(const fmt_framework *fw);       /* enum fmt_flag */
int fmt_framework_attention(const fmt_framework *fw);  /* enum fmt_attention */
int fmt_framework_cross_entropy(const fmt_framework *fw);
int fmt_framework_launch(const fmt_framework *fw);     /* enum fmt_launch */
/* 1 when autograd keeps the input of an unfused softmax as well as its
 * output (PyTorch before 1.11), else 0. */
int fmt_framework_softmax_input(const fmt_framework *fw);

typedef struct fmt_model {
    char name[64];
    char family[32];        /* "gpt2", "gpt3", "bert", "opt", "gpt-neo",
                               "gpt-neox", "llama", "" */
    fmt_layer *layers;     /* nlayers entries, owned */
    int nlayers;
    fmt_gemm *gemms;        /* ngemms entries, owned: the layers' GEMMs
                               (fmt_layer.gemm_first); repeated layers share
                               theirs */
    int ngemms;
    int hidden, heads, seq, vocab, ffn, blocks; /* transformer shape; 0 = unknown */
    int global_batch;       /* default global batch, 0 = not given */
    int dtype_bytes;        /* bytes per activation/weight element: 2 (fp16/bf16) or 4 */
    int bf16;               /* 1: bf16 math, 0: fp16 (or fp32 when dtype_bytes == 4) */
    /* architecture, resolved by the shorthand's expansion; 0 = not known
       (a layer list): the family's default */
    int kv_heads;           /* key/value heads (grouped-query attention); 0 = heads */
    int mlp;                /* enum fmt_mlp */
    int positions;          /* enum fmt_positions */
    int norm;               /* enum fmt_norm */
    int bias;               /* enum fmt_flag: linear layers have biases */
    int dropout;            /* enum fmt_flag: blocks apply dropout */
    /* how attention runs in training (model.json training.attention);
       0 = default: flash for fp16/bf16, eager for fp32 (costmodel/activations.c) */
    int attention;          /* enum fmt_attention */
    int attn_dropout;       /* enum fmt_flag: dropout on the attention
                               probabilities (eager attention stores its mask
                               and output); 0 = off */
    /* the training code (model.json training.cross_entropy and
       training.grad_buffer); 0 = Megatron-LM's */
    int cross_entropy;      /* enum fmt_cross_entropy */
    int grad_buffer;        /* enum fmt_grad_buffer */
    int tf32;               /* enum fmt_flag: fp32 matrix multiplications on
                               TF32 tensor cores (model.json training.tf32);
                               0 = not stated (the cost parameter tf32) */
    fmt_framework framework; /* model.json training.framework; family 0 =
                                none named */
    int fw_defaults;        /* FMT_FW_SET_* bits: the fields above that the
                               framework set because the file left them out */
} fmt_model;

/* Loss of a training run: Megatron-LM's vocabulary-parallel cross entropy
 * (softmax in place) or PyTorch's F.cross_entropy (log_softmax and
 * nll_loss, one more fp32 logits-sized tensor at its backward). */
enum fmt_cross_entropy { FMT_CE_MEGATRON = 0, FMT_CE_PYTORCH };
/* Gradients between iterations: a persistent buffer (Megatron-LM's and
 * DeepSpeed's contiguous buffers) or freed by zero_grad(set_to_none=True)
 * and allocated again during the backward (PyTorch's default). */
enum fmt_grad_buffer { FMT_GRADS_PERSISTENT = 0, FMT_GRADS_SET_TO_NONE };

/* Attention kernel of a training run: flash / fused attention keeps
 * O(s) softmax statistics per head, eager attention the s x s scores. */
enum fmt_attention { FMT_ATTN_DEFAULT = 0, FMT_ATTN_FLASH, FMT_ATTN_EAGER };
/* "flash", "eager"; NULL for 0 or out of range. */
const char *fmt_attention_name(int attention);
/* Value of a name, -1 when unknown. */
int fmt_attention_from_name(const char *name);

/* The transformer shorthand of model.json. */
typedef struct fmt_transformer_spec {
    char name[64];
    char family[32];        /* gpt2, gpt3, bert, opt, gpt-neo, gpt-neox, llama */
    int blocks;             /* transformer blocks */
    int hidden, heads, seq, vocab;
    int ffn;                /* FFN inner size; 0 = 4 * hidden (gelu, relu) or
                               8/3 * hidden rounded up to 256 (swiglu) */
    int tied_embeddings;    /* 1: embedding and LM head share weights, 0: not,
                               -1: family default (untied for gpt-neox and
                               llama, tied otherwise) */
    /* 0 in the fields below = the family's default */
    int kv_heads;           /* key/value heads, dividing heads (grouped-query
                               attention); 0 = heads */
    int mlp;                /* enum fmt_mlp */
    int positions;          /* enum fmt_positions */
    int norm;               /* enum fmt_norm */
    int bias;               /* enum fmt_flag: linear-layer biases */
    int dropout;            /* enum fmt_flag: dropout in the blocks */
} fmt_transformer_spec;

/* Expand the shorthand into embedding, blocks, final norm and head
 * layers with standard formulas (docs/model-formulas.md).  m is
 * overwritten; its fields other than layers keep caller values when
 * non-zero (global_batch, dtype_bytes). */
int fmt_model_from_transformer(const fmt_transformer_spec *spec,
                                fmt_model *m, util_error *err);
/* Fill a layer's optional fields that are negative (= not given in the
 * file) with defaults for its kind and the model's shape. */
void fmt_layer_defaults(const fmt_model *m, fmt_layer *l);
void fmt_model_free(fmt_model *m);
/* Parameters of m, each tied group (an input embedding and the LM head
 * sharing one tensor) counted once; *replicated (may be NULL) gets the
 * part that every TP rank holds whole (params_rep). */
double fmt_model_params(const fmt_model *m, double *replicated);

/* ---- profile --------------------------------------------------------- */

/* Measured per-layer times for one (device type, tp, mbs). */
typedef struct fmt_profile_entry {
    char device[32];        /* device type name */
    int tp;                 /* tensor-parallel degree measured */
    int mbs;                /* micro-batch size measured */
    double *fwd;            /* nlayers forward times, s; < 0 = not measured; owned */
    double *bwd;            /* nlayers backward times, s; < 0 = 2x forward; owned, may be NULL */
} fmt_profile_entry;

typedef struct fmt_profile {
    fmt_profile_entry *entries; /* owned */
    int nentries;
    int nlayers;            /* length of every fwd/bwd array */
    struct fmt_calibration *calib; /* fitted calibration (planner calibrate), owned;
                                       NULL = none (costmodel/calibration.c) */
} fmt_profile;

void fmt_profile_free(fmt_profile *p);

/* Entries of a profile (hetplan's or AMP's), and entries x model layers:
 * each entry holds a forward and a backward time per layer, whatever
 * its file gives (docs/limits.md). */
#define FMT_MAX_PROFILE_ENTRIES 4096
#define FMT_MAX_PROFILE_TIMES 16777216

/* ---- strategy -------------------------------------------------------- */

enum fmt_schedule { FMT_SCHED_1F1B = 0, FMT_SCHED_GPIPE = 1 };

#define FMT_MAX_VPP 64     /* most model chunks per device (vpp) */
/* Strategies of one file (evaluate's, a trials file, a plan read back)
 * and the entries their plan lists: each strategy gives every GPU of the
 * cluster (a rank or idle) and every layer of the model, so strategies x
 * GPUs and strategies x layers are at most FMT_MAX_STRATEGY_ENTRIES each
 * (twice the GPUs the search plans; docs/limits.md).  A trials file
 * holds at most FMT_MAX_TRIALS (each costs calibrate a fit when it is
 * left out). */
#define FMT_MAX_STRATEGIES 10000
#define FMT_MAX_STRATEGY_ENTRIES 262144
#define FMT_MAX_TRIALS 1000
/* Largest global batch anywhere: training.global_batch, --global-batch, a
 * plan's settings.global_batch and the batches a tolerance may round to
 * (docs/limits.md) */
#define FMT_MAX_GLOBAL_BATCH 1000000000

/* Activation recomputation (Korthikanti et al. 2022): none; full (only
 * each block's input is kept, the block's forward runs again before its
 * backward); selective (the attention core, softmax and dropout over the
 * s x s scores, is recomputed, the rest kept).  The values of NONE and
 * FULL match the older boolean `recompute`. */
enum fmt_recompute {
    FMT_RECOMPUTE_NONE = 0,
    FMT_RECOMPUTE_FULL = 1,
    FMT_RECOMPUTE_SELECTIVE = 2
};
/* "none", "full", "selective"; NULL when out of range. */
const char *fmt_recompute_name(int r);
/* Level from its name, -1 when unknown. */
int fmt_recompute_from_name(const char *name);

/* One parallel training strategy.  Rank r has
 * tp_index = r % tp, dp_index = (r / tp) % dp, stage = r / (tp * dp). */
typedef struct fmt_strategy {
    int tp, dp, pp;         /* degrees, tp * dp * pp = ranks */
    int mbs;                /* micro-batch size */
    int gas;                /* micro-batches per iteration per replica */
    int schedule;           /* enum fmt_schedule */
    int *bounds;            /* pp + 1 stage boundaries, owned: stage i runs [b[i], b[i+1]) */
    int *ranks;             /* tp * dp * pp device indices, owned */
    char placement[32];     /* name of the placement rule that made ranks */
    int *tp_heads;          /* tp * dp * pp attention heads of each rank, owned;
                               NULL = even split (costmodel/uneven.c) */
    int *tp_cols;           /* tp * dp * pp MLP columns of each rank, owned; NULL
                               with tp_heads */
    double *slow;           /* tp * dp * pp compute slowdown of each rank (1 = as
                               catalogued, 2 = twice as slow), owned; NULL = none */
    /* training features; a negative value means "not stated": the cost
       model then takes cost_params' default (cost_strategy_recompute,
       cost_strategy_zero) */
    int vpp;                /* model chunks per device for the interleaved 1F1B
                               schedule (Megatron's virtual pipeline stages); 1 =
                               plain.  bounds still gives each device's layers;
                               the launcher splits a device's blocks into vpp
                               equal chunks, chunk k of device j being model chunk
                               k * pp + j (so vpp must divide them) */
    int sp;                 /* 1: sequence parallelism (Megatron, Korthikanti et
                               al. 2022): norms and dropout split over the TP
                               group, all-reduce = reduce-scatter + all-gather */
    int recompute;          /* enum fmt_recompute, -1 = cost_params.recompute */
    int zero;               /* 0..3: optimizer state (1, Megatron's distributed
                               optimizer), + gradients (2), + weights (3) sharded
                               over the DP group; -1 = cost_params.zero_stage */
    int offload;            /* enum fmt_offload: where the optimizer state
                               lives; -1 = cost_params.offload */
    /* communication overlap (docs/time-model.md "Overlap"); 1 on, 0 off,
       -1 = not stated: cost_params' default (cost_strategy_overlap) */
    int overlap_grad;       /* DP gradient reduce(-scatter) in buckets behind
                               the backward (Megatron --overlap-grad-reduce,
                               DeepSpeed overlap_comm) */
    int overlap_param;      /* distributed optimizer's parameter all-gather
                               behind the next forward (Megatron
                               --overlap-param-gather; needs zero >= 1) */
    int overlap_tp;         /* TP collectives split and pipelined with their
                               GEMMs (Megatron --tp-comm-overlap; needs sp,
                               Transformer Engine, TP inside one NVLink node) */
    int overlap_p2p;        /* pipeline P2P behind compute (Megatron
                               --overlap-p2p-communication) */
    int bounds_open;        /* 1: the input left the stage boundaries to the
                               planner; bounds holds an even split of the
                               layers until the caller chooses (0) */
} fmt_strategy;

/* Optimizer offload (ZeRO-Offload, Ren et al. USENIX ATC'21): the fp32
 * master weights and Adam moments (the rank's ZeRO shard) in host
 * memory, the optimizer step on the host CPU. */
enum fmt_offload { FMT_OFFLOAD_NONE = 0, FMT_OFFLOAD_OPTIMIZER = 1 };
/* "none", "optimizer"; NULL when out of range. */
const char *fmt_offload_name(int o);
/* Value from its name, -1 when unknown. */
int fmt_offload_from_name(const char *name);

/* Allocate bounds and ranks for the given degrees (contents zeroed; mbs,
 * gas and vpp 1, sp 0, recompute, zero, offload and the overlap flags
 * -1: not stated). */
int fmt_strategy_alloc(fmt_strategy *s, int tp, int dp, int pp);
int fmt_strategy_copy(fmt_strategy *dst, const fmt_strategy *src);
void fmt_strategy_free(fmt_strategy *s);
/* Device of (stage, dp_index, tp_index). */
int fmt_rank_device(const fmt_strategy *s, int stage, int dpi, int tpi);

/* Check a strategy against cluster and model (degrees, ranks, bounds,
 * batch divisibility); UTIL_EINVAL with a message otherwise.  A strategy
 * may have fewer ranks than the cluster has GPUs: the others are idle. */
int fmt_strategy_check(const fmt_cluster *c, const fmt_model *m,
                        const fmt_strategy *s, int global_batch,
                        util_error *err);
/* Copy per-rank heads and columns (tp * dp * pp each) into s, replacing
 * any; NULL, NULL clears them (even split).  UTIL_ENOMEM. */
int fmt_strategy_set_shards(fmt_strategy *s, const int *heads,
                             const int *cols);
/* Copy per-rank slowdowns (tp * dp * pp) into s; NULL clears. */
int fmt_strategy_set_slow(fmt_strategy *s, const double *slow);
/* Rank that runs on device dev, -1 when none: a scan of the ranks, for
 * one lookup; a loop over devices builds an fmt_rank_index instead. */
int fmt_rank_of_device(const fmt_strategy *s, int dev);

/* Device-to-rank index of one strategy: rank_of[dev] is the rank on
 * device dev, -1 when the device is idle.  Built once in O(devices +
 * ranks); the index owns rank_of (fmt_rank_index_free) and holds no
 * pointer into the strategy, whose ranks it reflects as they were when
 * built. */
typedef struct fmt_rank_index {
    int *rank_of;           /* ndevices entries, owned */
    int ndevices;
} fmt_rank_index;

/* Index the ranks of s over a cluster of ndevices devices (ranks naming a
 * device outside 0..ndevices-1 are left out).  UTIL_ENOMEM; on failure
 * *ix is empty (fmt_rank_index_free is safe). */
int fmt_rank_index_build(fmt_rank_index *ix, const fmt_strategy *s, int ndevices);
/* Rank on device dev, -1 when idle or dev is out of range. */
int fmt_rank_index_get(const fmt_rank_index *ix, int dev);
void fmt_rank_index_free(fmt_rank_index *ix);

/* ---- precision ------------------------------------------------------- */

/* Training precision (model.json training.precision, --precision). */
enum fmt_precision {
    FMT_PREC_FP16 = 0,     /* mixed precision, fp16 with loss scaling (default) */
    FMT_PREC_BF16 = 1,     /* mixed precision, bf16, fp32 gradient accumulation */
    FMT_PREC_FP32 = 2      /* fp32 throughout */
};
/* "fp16", "bf16", "fp32"; NULL when out of range. */
const char *fmt_precision_name(int prec);
/* Precision from its name, -1 when unknown. */
int fmt_precision_from_name(const char *name);
/* 1 when device type dt can train in precision prec: fp16 needs
 * flops_fp16 > 0, bf16 flops_bf16 > 0; fp32 runs on every device (a
 * flops_fp32 of 0 means not given).  0 for NULL or an unknown precision. */
int fmt_device_supports(const fmt_device_type *dt, int prec);
/* Precision of a model (from dtype_bytes and bf16). */
int fmt_model_precision(const fmt_model *m);
/* Change a loaded model's precision: sets dtype_bytes and bf16 and
 * rescales the element-size fields of every layer (activations, traffic,
 * transfers) by new / old element size; the head's fp32 loss copies keep
 * their size.  UTIL_EINVAL for an unknown precision. */
int fmt_model_set_precision(fmt_model *m, int prec, util_error *err);

/* ---- calibration constants (docs/calibration.md) --------------------- */

/* A few global constants fitted to measured iteration times by `planner
 * calibrate` (calib_run, docs/calibration.md).  Every field's
 * neutral value (fmt_calibration_init) leaves the model unchanged.  Each
 * enters the iteration time linearly (a time multiplier or an added
 * time), which is what makes the fit a linear program. */
#define FMT_CALIB_MAX_TYPES 16

/* Link classes of a transfer between two devices. */
enum fmt_link_class {
    FMT_LINK_INTRA = 0,    /* both devices in one node */
    FMT_LINK_INTER,        /* two nodes of one region (or no region given) */
    FMT_LINK_REGION,       /* two nodes in different regions */
    FMT_LINK_NCLASSES
};
/* "intra-node", "inter-node", "cross-region"; NULL when out of range. */
const char *fmt_link_class_name(int cls);
/* Class of the link between two devices of c. */
int fmt_link_class_of(const fmt_cluster *c, int dev_a, int dev_b);

typedef struct fmt_calibration {
    int ntypes;                             /* device types with their own values */
    char type[FMT_CALIB_MAX_TYPES][32];    /* device type names (case-insensitive) */
    double compute_scale[FMT_CALIB_MAX_TYPES]; /* multiplier on the per-sample compute time
                                               of the profile/estimate (1); 1 / relative
                                               efficiency e_inf */
    double mbs_half[FMT_CALIB_MAX_TYPES];  /* b_half of eff(b) = e_inf b / (b + b_half):
                                               each micro-batch costs b_half samples' worth
                                               of compute on top (0) */
    double bw_frac[FMT_LINK_NCLASSES];     /* effective fraction of line rate per link
                                               class; 0 = cost_params' intra_eff / net_eff */
    double msg_latency;                     /* added to every message (P2P transfer,
                                               all-reduce step), s (0) */
    double tp_fixed;                        /* fixed cost per micro-batch and layer with
                                               TP collectives when tp > 1, fwd + bwd, s (0) */
    double iter_overhead;                   /* framework overhead per iteration, s (0) */
} fmt_calibration;

/* Neutral calibration: no types, every field at its neutral value. */
void fmt_calibration_init(fmt_calibration *cal);
/* Index of a device type in cal (case-insensitive), -1 when absent. */
int fmt_calibration_type(const fmt_calibration *cal, const char *name);
/* Index of name, added with neutral values when absent; -1 when full. */
int fmt_calibration_add_type(fmt_calibration *cal, const char *name);

/* ---- unknown keys ---------------------------------------------------- */

/* Keys of an input file that its reader does not know (a misspelled
 * "precison" would otherwise be ignored silently).  The caller supplies
 * the list and installs it for the readers of its thread with
 * fmt_warnings_use; every reader (cluster, model, profile and its
 * calibration, strategies, trials, and the plan and scenario readers of
 * plan/ and decentral/) then adds one entry per unknown key: file, JSON
 * path of the key, and "unknown key 'K'" with a suggestion ("did you mean
 * 'precision'?", by edit distance) or the known keys.  With strict the
 * first unknown key is instead the read's error (UTIL_EFIELD).  Without
 * a list installed unknown keys are ignored.  Zero-initialise. */
typedef struct fmt_warnings {
    int strict;          /* 1: an unknown key fails the read */
    util_error *items;   /* n warnings (code UTIL_EFIELD), malloc'd, owned;
                            release with fmt_warnings_free */
    int n, cap;
    int dropped;         /* warnings not kept: out of memory, or past 1000 */
} fmt_warnings;

/* Install w (NULL: none) for this thread's readers; returns the list
 * installed before. */
fmt_warnings *fmt_warnings_use(fmt_warnings *w);
/* Free the items of w and zero its counts (strict is kept); NULL-safe. */
void fmt_warnings_free(fmt_warnings *w);
/* Check the member names of the object obj, at JSON path path of file,
 * against known (NULL-terminated): UTIL_OK after recording each unknown
 * one in the installed list, or UTIL_EFIELD in err for the first under
 * strict.  For readers outside formats/ (plan, scenario files). */
int fmt_check_keys(const char *file, const cJSON *obj, const char *path,
                   const char *const *known, util_error *err);

/* ---- inputs (docs/inputs.md) ----------------------------------------- */
/* Each parse function takes the JSON text and the file name used in
 * error messages; each load function reads the file then parses.  On
 * success the output struct owns its memory (free with the fmt_*_free
 * function); on failure it is left empty and err says file, JSON path
 * and what was expected. */

int fmt_parse_cluster(const char *text, const char *file,
                       fmt_cluster *out, util_error *err);
int fmt_load_cluster(const char *path, fmt_cluster *out, util_error *err);

int fmt_parse_model(const char *text, const char *file, fmt_model *out,
                     util_error *err);
int fmt_load_model(const char *path, fmt_model *out, util_error *err);

/* Profile arrays must match the model's layer count. */
int fmt_parse_profile(const char *text, const char *file,
                       const fmt_model *m, fmt_profile *out,
                       util_error *err);
int fmt_load_profile(const char *path, const fmt_model *m,
                      fmt_profile *out, util_error *err);

/* AMP's profiles.json (one sample, forward only, per GPU type and tp) as
 * a hetplan profile: fwd per layer at mbs 1, backward left to the cost
 * model's bwd_ratio.  key selects the model ("gpt2"). */
int fmt_profile_from_amp(const char *path, const char *key,
                          const fmt_model *m, fmt_profile *out,
                          util_error *err);

/* Strategies file of `planner evaluate`:
 * {"strategies":[{"tp":1,"dp":4,"pp":4,"mbs":1,
 *   "stage_boundaries":[0,7,14,20,30], "ranks":[...optional...]}]}.
 * Without "ranks" the Megatron placement (rank r on device r) is used
 * and tp * dp * pp must equal the GPU count; with "ranks" it may be
 * smaller (the GPUs no rank names are idle).  Every strategy is checked
 * with fmt_strategy_check.  *out is a malloc'd array of *n strategies;
 * free each with fmt_strategy_free, then free().  fmt_parse_strategies
 * (plans and trials read their strategies with it) requires
 * "stage_boundaries"; fmt_parse_strategies_open and fmt_load_strategies
 * (the file of evaluate) let a strategy leave them out: it then has
 * bounds_open = 1 and an even split of the layers, which the caller
 * replaces (search_assign_layers). */
int fmt_parse_strategies(const char *text, const char *file,
                          const fmt_cluster *c, const fmt_model *m,
                          int global_batch, fmt_strategy **out, int *n,
                          util_error *err);
int fmt_parse_strategies_open(const char *text, const char *file,
                              const fmt_cluster *c, const fmt_model *m,
                              int global_batch, fmt_strategy **out, int *n,
                              util_error *err);
int fmt_load_strategies(const char *path, const fmt_cluster *c,
                         const fmt_model *m, int global_batch,
                         fmt_strategy **out, int *n, util_error *err);

/* ---- trials files (docs/calibration.md) ------------------------------ */

/* Measured runs (docs/calibration.md): the strategies of a trials file
 * with their measured iteration times. */
typedef struct fmt_trial_set {
    fmt_strategy *s;       /* n strategies, owned */
    double *measured_s;     /* n measured times, s; -1 = the run failed (owned) */
    int *failed_memory;     /* n: 1 when labelled "failure": "memory" (owned) */
    int n;
    int global_batch;       /* batch the strategies were checked against */
} fmt_trial_set;

void fmt_trial_set_free(fmt_trial_set *t);
/* A trials file: the strategies format of `planner evaluate` with a
 * "measured_s" per strategy (seconds > 0; null or absent = failed run)
 * and an optional "failure" string.  With amp = 1 the file is one of AMP's
 * experiment logs (homogeneous.json, het_cluster.json: "trials" and
 * "global_batch").  global_batch 0 = the file's, else the model's. */
int fmt_load_trials(const char *path, int amp, const fmt_cluster *c,
                     const fmt_model *m, int global_batch,
                     fmt_trial_set *out, util_error *err);

#endif
