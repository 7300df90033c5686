/* profiler/prof.h: hetplan-profile and hetplan-launch.  The GPU-free
 * parts (library hetplan_prof, plain C, always built): the sub-kernels of
 * a tensor-parallel layer shard with their FLOPs and bytes, statistics
 * over repeats, the profiler's command line, and the profile JSON
 * (hetplan-profile/1).  The GPU parts (prof_gpu_*, library
 * hetplan_prof_gpu) are built only with CUDA, cuBLAS and CUPTI.
 * Nothing here prints. */
#ifndef HETPLAN_PROF_H
#define HETPLAN_PROF_H

#include <stddef.h>

#include "costmodel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PROF_VERSION "0.1.0"

/* ---- sub-kernels of a layer (profiler/shapes.c) ---------------------- */

enum prof_op {
    PROF_OP_GEMM = 0,       /* cuBLAS GEMM, strided batched when batch > 1 */
    PROF_OP_LAYERNORM,      /* LayerNorm over rows x cols */
    PROF_OP_RMSNORM,        /* RMSNorm over rows x cols */
    PROF_OP_SOFTMAX,        /* causal masked softmax over rows x cols */
    PROF_OP_GELU,           /* GeLU (tanh form) on rows x cols */
    PROF_OP_SWIGLU,         /* silu(gate) * up; cols = output columns */
    PROF_OP_ADD,            /* residual add rows x cols */
    PROF_OP_EMBED,          /* gather rows of a table (fwd), scatter-add (bwd) */
    PROF_OP_XENT,           /* cross-entropy over rows of cols logits */
    PROF_OP_ADAM,           /* fused Adam step over rows x cols parameters */
    PROF_OP_RELU,           /* ReLU on rows x cols (backward from its output) */
    PROF_NOPS
};
/* "gemm", "layernorm", ...; NULL when out of range. */
const char *prof_op_name(int op);

/* One kernel (or one cuBLAS call) of a layer's forward or backward pass.
 * GEMMs use cuBLAS's column-major convention: C (m x n) = op(A) op(B),
 * op(A) m x k, op(B) k x n, `batch` independent products. */
typedef struct prof_kernel {
    char name[40];          /* e.g. "qkv", "qkv.dgrad", "softmax.bwd" */
    int op;                 /* enum prof_op */
    int bwd;                /* 1: part of the backward pass */
    int transa, transb;     /* GEMM: operand A / B transposed */
    long long m, n, k;      /* GEMM dimensions */
    long long batch;        /* GEMM: products (>= 1) */
    long long rows, cols;   /* other ops: rows x cols elements */
    long long table_rows;   /* EMBED: rows of the (vocabulary shard) table */
    double flops;           /* floating-point operations */
    double bytes;           /* minimum memory traffic, bytes */
} prof_kernel;

/* Shape of one layer kind on one tensor-parallel shard. */
typedef struct prof_shape {
    int kind;               /* enum fmt_layer_kind */
    int tp, mbs;            /* tensor-parallel degree, micro-batch size */
    int seq, hidden, heads, ffn, vocab; /* model shape (ffn 0 = 4 * hidden) */
    int dtype_bytes;        /* 2 (fp16/bf16) or 4 */
    int gated;              /* 1: SwiGLU MLP (gate and up projections) */
    int relu;               /* 1: ReLU MLP (OPT); 0 with gated 0: GeLU */
    int rms;                /* 1: RMSNorm, 0: LayerNorm */
} prof_shape;

#define PROF_MAX_KERNELS 48

/* The kernels of a layer shard: forward first, then backward. */
typedef struct prof_layer_work {
    prof_shape shape;
    int nk;                 /* kernels in k[] */
    prof_kernel k[PROF_MAX_KERNELS];
    double fwd_flops, bwd_flops; /* sums over the passes */
    double fwd_bytes, bwd_bytes;
} prof_layer_work;

/* 1 when layers of this kind can be synthesised (embedding, transformer,
 * norm, head); noop layers take no time; generic ones are not measured. */
int prof_kind_measurable(int kind);

/* Shape of `kind` for the model m at (tp, mbs).  dtype_bytes 0 = the
 * model's.  UTIL_EINVAL when the model has no transformer shape (hidden,
 * heads, seq, vocab), when tp does not divide heads, hidden or the FFN
 * size, or when the kind is not measurable. */
int prof_shape_of(const fmt_model *m, int kind, int tp, int mbs,
                  int dtype_bytes, prof_shape *out, util_error *err);

/* Sub-kernels of the layer shard with FLOPs and bytes.  Attention per
 * head group (heads / tp), MLP with ffn / tp columns, vocabulary-parallel
 * embedding and LM head with ceil(vocab / tp) rows; tensor-parallel
 * all-reduces are not kernels here (the cost model adds them). */
int prof_layer_work_of(const prof_shape *s, prof_layer_work *out,
                       util_error *err);

/* ---- statistics (profiler/stats.c) ----------------------------------- */

typedef struct prof_stats {
    int n;                  /* samples */
    double median;          /* middle value (mean of the two middle ones) */
    double q1, q3;          /* quartiles, linear interpolation */
    double iqr;             /* q3 - q1 */
    double min, max, mean;
} prof_stats;

/* Statistics of x[0..n-1] (not modified).  UTIL_EINVAL when n < 1 or a
 * value is not finite; UTIL_ENOMEM. */
int prof_stats_of(const double *x, int n, prof_stats *out, util_error *err);

/* ---- timings of a layer (profiler/stats.c) --------------------------- */

/* What the GPU reported for `repeats` runs of a layer's kernels: for run
 * r and kernel i, index r * nk + i, the GPU start and end of the first
 * and last GPU kernel it launched and the sum of their durations, s. */
typedef struct prof_samples {
    int repeats, nk;
    double *start;          /* repeats * nk, owned */
    double *end;            /* repeats * nk, owned */
    double *busy;           /* repeats * nk, owned */
} prof_samples;

int prof_samples_alloc(prof_samples *s, int repeats, int nk);
void prof_samples_free(prof_samples *s);

/* Time of one kernel of the layer over the repeats. */
typedef struct prof_kernel_time {
    double median_s, iqr_s; /* busy time of the kernel */
} prof_kernel_time;

/* Measured layer: per pass the span from the first kernel's GPU start to
 * the last kernel's GPU end (launch gaps included: what training sees)
 * and the busy time (sum of kernel durations), median and IQR over the
 * repeats. */
typedef struct prof_layer_result {
    int kind, tp, mbs;
    double fwd_s, fwd_iqr_s;        /* span of the forward pass */
    double bwd_s, bwd_iqr_s;        /* span of the backward pass */
    double fwd_busy_s, bwd_busy_s;  /* median busy times */
    int repeats;
    int nk;
    prof_kernel_time kt[PROF_MAX_KERNELS];
} prof_layer_result;

/* Summarise samples of the kernels of w.  UTIL_EINVAL when the sample
 * layout does not match w or a kernel has no time (end < start). */
int prof_layer_summarise(const prof_layer_work *w, const prof_samples *s,
                         prof_layer_result *out, util_error *err);

/* ---- command line (profiler/args.c) ---------------------------------- */

#define PROF_MAX_LIST 16

typedef struct prof_options {
    const char *model;      /* --model FILE (required) */
    const char *output;     /* --output FILE (required) */
    const char *device_type;/* --device-type NAME: type name written to the
                               profile; NULL = from the catalogue */
    int tp[PROF_MAX_LIST];  /* --tp list (default 1,2,4,8) */
    int ntp;
    int mbs[PROF_MAX_LIST]; /* --mbs list (default 1,2,4,8) */
    int nmbs;
    int dtype;              /* --dtype: 0 = the model's, 1 = fp16, 2 = bf16 */
    int warmup;             /* --warmup N (default 5) */
    int repeats;            /* --repeats N (default 20) */
    int device;             /* --gpu N: CUDA device index (default 0) */
    int skip_bandwidth;     /* --no-bandwidth: skip copy and GEMM throughput */
    int quiet, verbose, help, version;
} prof_options;

void prof_options_init(prof_options *o);
/* s as an integer in lo..hi into *out; UTIL_EINVAL naming opt otherwise
 * (also used by hetplan-launch). */
int prof_parse_int(const char *opt, const char *s, int lo, int hi, int *out,
                   util_error *err);
/* UTIL_EINVAL naming the first of valued[0..nvalued-1] that argv[1..]
 * gives twice ("-o" counts as "--output"), else UTIL_OK; a value that
 * looks like an option is not taken for one. */
int prof_repeated_option(int argc, char **argv, const char *const *valued,
                         size_t nvalued, util_error *err);
/* Option argv[*i] split into name (n bytes, truncated) and value: the
 * "--name=value" part, or argv[++*i] when name is one of valued[0..nvalued-1];
 * *val NULL for a flag.  *val points into argv.  UTIL_EINVAL on a missing
 * or unexpected value. */
int prof_next_option(int argc, char **argv, int *i,
                     const char *const *valued, size_t nvalued, char *name,
                     size_t n, const char **val, util_error *err);
/* s as one of names[0..n-1] (n >= 2): its index into *out; UTIL_EINVAL
 * naming opt and the names otherwise ("expects 'a', 'b' or 'c'"). */
int prof_parse_choice(const char *opt, const char *s, const char *const *names,
                      int n, int *out, util_error *err);
/* Comma-separated positive integers in lo..hi into out (at most cap,
 * duplicates dropped, sorted).  UTIL_EINVAL naming opt on bad input. */
int prof_parse_int_list(const char *opt, const char *s, int lo, int hi,
                        int *out, int cap, int *n, util_error *err);
/* Where a GPU tool keeps the flags every tool takes besides its own
 * options (each set to 1 when given). */
typedef struct prof_flags {
    int *quiet;   /* --quiet, -q */
    int *verbose; /* --verbose, -v */
    int *help;    /* --help, -h */
    int *version; /* --version */
} prof_flags;
/* What a tool's option handler returns for an argument that is none of
 * its options. */
#define PROF_NOT_OPTION (-1)
/* One of a tool's own options: name without "=value", val its value (NULL
 * for a flag).  UTIL_OK when taken, PROF_NOT_OPTION when name is not one
 * of the tool's, else an error code with the message in err. */
typedef int (*prof_option_fn)(void *ctx, const char *name, const char *val,
                              util_error *err);
/* A GPU tool's command line argv[1..]: a valued option (one of
 * valued[0..nvalued-1]) given twice is an error (prof_repeated_option);
 * each argument is split by prof_next_option, the common flags set
 * through *flags, every other option handed to opt(ctx, ...).  An
 * argument opt does not take is UTIL_EINVAL: an unknown option, or an
 * unexpected argument when it does not start with '-'. */
int prof_walk_args(int argc, char **argv, const char *const *valued,
                   size_t nvalued, prof_option_fn opt, void *ctx,
                   const prof_flags *flags, util_error *err);
/* argv[0] is the program name.  UTIL_EINVAL with the message in err
 * (unknown option, missing value, bad number, missing --model/--output
 * unless --help/--version). */
int prof_parse_args(int argc, char **argv, prof_options *o, util_error *err);
/* For the tools' main(): collect the unknown keys the input readers find
 * and print each as "TOOL: warning: ..." on stderr when the program
 * exits (a misspelled key is not ignored silently).  tool must outlive
 * the program (a string literal). */
void prof_warn_unknown_keys(const char *tool);

/* ---- the profile document (profiler/profile_json.c) ------------------ */

struct cJSON;
/* Add item to obj under key, or to the array obj when key is NULL; obj
 * owns item afterwards.  0 on failure (item NULL, or freed). */
int prof_json_put(struct cJSON *obj, const char *key, struct cJSON *item);

typedef struct prof_device_info {
    char name[256];         /* CUDA device name */
    char type[32];          /* device type written to the profile */
    int index;              /* CUDA device index */
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    double mem_bytes;       /* total global memory */
    int sm_clock_khz;       /* maximum SM clock, 0 = unknown */
    int mem_clock_khz;      /* memory clock, 0 = unknown */
    int mem_bus_bits;       /* memory bus width, 0 = unknown */
    int driver_version;     /* cudaDriverGetVersion, e.g. 13000 */
    int runtime_version;    /* cudaRuntimeGetVersion */
    int gpus;               /* CUDA devices visible */
} prof_device_info;

/* Copy bandwidths and GEMM throughput of one machine. */
typedef struct prof_bandwidth {
    double h2d_bps;         /* pinned host -> device, bytes/s; 0 = not measured */
    double d2h_bps;         /* device -> pinned host */
    double d2d_bps;         /* device -> same device copy (read + write counted once) */
    double p2p_bps;         /* device -> other device (peer), 0 = one GPU */
    int p2p_peer;           /* 1: peer access was enabled for p2p_bps */
    long long copy_bytes;   /* size of each copy */
    double gemm_flops;      /* achieved FLOP/s of a large GEMM */
    long long gemm_n;       /* its m = n = k */
} prof_bandwidth;

/* Everything one profiler run measured. */
typedef struct prof_run {
    prof_device_info dev;
    prof_bandwidth bw;      /* zeroed when not measured */
    int bf16;               /* 1: bf16 math, 0: fp16 */
    int warmup, repeats;
    prof_layer_result *res; /* nres results (any order), caller-owned */
    int nres;
    int ntp, nmbs;          /* the (tp, mbs) grid, in entry order */
    const int *tp, *mbs;
} prof_run;

/* Device type name for the profile: the catalogue's name when
 * fmt_catalog_find knows the CUDA name (e.g. "NVIDIA H100 80GB HBM3" ->
 * "H100-SXM"), else the CUDA name cut to 31 characters.  out has 32 bytes. */
void prof_device_type_of(const char *cuda_name, char out[32]);

/* The device as a JSON object text (the profile's "device_info"):
 * malloc'd (caller frees); NULL when out of memory. */
char *prof_device_info_json(const prof_device_info *d);

/* hetplan-profile/1 document for model m: one entry per (tp, mbs) of the
 * grid for which some result exists, fwd_ms/bwd_ms per model layer (null
 * for layers not measured, 0 for noop layers), the per-kind detail, the
 * device and the machine measurements.  malloc'd (caller frees); NULL
 * when out of memory. */
char *prof_profile_json(const prof_run *r, const fmt_model *m,
                        const char *model_name);

/* ---- CUPTI loaded at run time (profiler/cupti_load.c) ---------------- */

/* The CUPTI functions the profiler calls, in prof_cupti_lib.fn order. */
enum prof_cupti_fn {
    PROF_CUPTI_REGISTER_CALLBACKS = 0, /* cuptiActivityRegisterCallbacks */
    PROF_CUPTI_ENABLE,                 /* cuptiActivityEnable */
    PROF_CUPTI_FLUSH_ALL,              /* cuptiActivityFlushAll */
    PROF_CUPTI_GET_NEXT_RECORD,        /* cuptiActivityGetNextRecord */
    PROF_CUPTI_GET_DROPPED,            /* cuptiActivityGetNumDroppedRecords */
    PROF_CUPTI_RESULT_STRING,          /* cuptiGetResultString */
    PROF_CUPTI_PUSH_EXTERNAL_ID,       /* cuptiActivityPushExternalCorrelationId */
    PROF_CUPTI_POP_EXTERNAL_ID,        /* cuptiActivityPopExternalCorrelationId */
    PROF_CUPTI_NFUNCS
};

#define PROF_PATH_MAX 512
#define PROF_CUPTI_MAX_CANDIDATES 4

typedef struct prof_cupti_lib {
    void *handle;              /* dlopen handle, NULL = not loaded */
    char path[PROF_PATH_MAX];  /* the name that loaded */
    void *fn[PROF_CUPTI_NFUNCS]; /* dlsym addresses, enum prof_cupti_fn order */
} prof_cupti_lib;

/* Symbol name of function fn; NULL when out of range. */
const char *prof_cupti_symbol(int fn);
/* Library names to try, in order, into out (cap entries): the
 * environment variable HETPLAN_CUPTI_LIBRARY alone when set; else
 * "libcupti.so.<cuda_major>" (when > 0), build_path (the toolkit's
 * library found at build time; NULL/"" = none), "libcupti.so".
 * Returns the count. */
int prof_cupti_candidates(int cuda_major, const char *build_path,
                          char out[][PROF_PATH_MAX], int cap);
/* dlopen the first of names[0..n-1] that loads and has every function.
 * UTIL_ENOTFOUND with "CUPTI not available: cannot load ..." (the names
 * tried and the last loader error) otherwise.  Free with
 * prof_cupti_unload (NULL-safe). */
int prof_cupti_load(char names[][PROF_PATH_MAX], int n, prof_cupti_lib *out,
                    util_error *err);
void prof_cupti_unload(prof_cupti_lib *l);

/* ---- GPU side (profiler/gpu_*.cu; only in the CUDA build) ------------ */

typedef struct prof_gpu prof_gpu;

/* Number of CUDA devices.  UTIL_ENOTFOUND with "no CUDA GPU ..." in err
 * when there is none or the driver is missing. */
int prof_gpu_count(int *n, util_error *err);
/* Open device `index` for fp16 (bf16 = 0) or bf16 math: stream, cuBLAS
 * handle and, when cupti = 1, CUPTI activity collection (libcupti is
 * loaded then, on first use).  UTIL_ENOTFOUND when there is no such GPU
 * or CUPTI cannot be loaded ("CUPTI not available ..."), UTIL_EINTERNAL
 * when CUPTI refuses to trace or cuBLAS cannot be started.  The prof_gpu_time_*
 * functions need cupti = 1.  Free with prof_gpu_close (NULL-safe). */
int prof_gpu_open(int index, int bf16, int cupti, prof_gpu **out,
                  util_error *err);
void prof_gpu_close(prof_gpu *g);
int prof_gpu_info(prof_gpu *g, prof_device_info *out, util_error *err);
/* Run the kernels of layer w (forward, then backward) `warmup` times
 * untimed, then `repeats` times with every kernel timed by CUPTI: out
 * gets repeats * w->nk samples (allocated here; prof_samples_free). */
int prof_gpu_time_layer(prof_gpu *g, const prof_layer_work *w, int warmup,
                        int repeats, prof_samples *out, util_error *err);
/* Times of a sequence of passes over a stage's layers: pass i runs the
 * forward (bwd[i] = 0) or backward (1) kernels of layers[0..nlayers-1];
 * the sequence is run `warmup` times untimed then `repeats` times, and
 * out gets repeats * npasses samples (one per pass, kernel index = pass). */
int prof_gpu_time_passes(prof_gpu *g, const prof_layer_work *const *layers,
                         int nlayers, const int *bwd, int npasses, int warmup,
                         int repeats, prof_samples *out, util_error *err);
/* Fused Adam step over n parameters (fp32 master, m, v; fp16 weights and
 * grads), timed by CUPTI over `repeats` runs: median in *median_s. */
int prof_gpu_time_adam(prof_gpu *g, long long n, int repeats,
                       double *median_s, util_error *err);
/* Copy bandwidths and large-GEMM throughput. */
int prof_gpu_bandwidth(prof_gpu *g, prof_bandwidth *out, util_error *err);

/* Building blocks of hetplan-launch's executed mode (no CUPTI needed):
 * everything is queued on g's stream and returns without waiting.
 * The stream, as a cudaStream_t (owned by g). */
void *prof_gpu_stream(prof_gpu *g);
/* CUDA device index of g. */
int prof_gpu_device(const prof_gpu *g);
/* Allocate and fill the buffers the layers' kernels need (synchronous). */
int prof_gpu_prepare(prof_gpu *g, const prof_layer_work *const *layers,
                     int nlayers, util_error *err);
/* Queue one forward (bwd = 0) or backward pass over the layers (after
 * prof_gpu_prepare with the same layers); nlayers 0 queues nothing. */
int prof_gpu_pass(prof_gpu *g, const prof_layer_work *const *layers,
                  int nlayers, int bwd, util_error *err);
/* Queue a kernel that keeps the stream busy for `seconds` (GPU clock;
 * one thread): how modelled communication enters a real timeline.
 * seconds <= 0 queues nothing. */
int prof_gpu_delay(prof_gpu *g, double seconds, util_error *err);
/* Optimizer state for n parameters (fp32 master, m, v; half-precision
 * weights and gradients), allocated once (synchronous); then each
 * prof_gpu_adam_step queues one fused Adam step over them. */
int prof_gpu_adam_prepare(prof_gpu *g, long long n, util_error *err);
int prof_gpu_adam_step(prof_gpu *g, util_error *err);

#ifdef __cplusplus
}
#endif

#endif
