/* costmodel/gemm.c: the time of one matrix multiplication on one device
 * (docs/time-model.md, "GEMMs"): the unit it runs on (tensor cores for
 * the precision, or the CUDA cores), the output tile that unit's kernels
 * use, tile and wave quantisation over the device's streaming
 * multiprocessors, and a roofline against the bytes of A, B and C; and
 * the fixed cost of a kernel by how the framework launches it. */
#include <ctype.h>
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "internal.h"

/* Per device: large-GEMM efficiency (fraction of the peak of the unit),
 * flash-attention efficiency of forward and backward, streaming
 * multiprocessors, and whether 16-bit matmuls have tensor cores.  First
 * row whose tag the device name contains (longer tags first). */
static const cost_gen gens[] = {
    /* A100: maximum achievable matmul FLOP/s about 268 of 312 TF (Bekman,
     * "Machine Learning Engineering", MAMF table); FlashAttention-2 on
     * A100: forward up to 73 %, backward up to 63 % of peak (Dao 2023,
     * section 4.1); 108 SMs (A100 whitepaper) */
    {"A100", 0.859, 0.70, 0.60, 108, 1},
    /* Hopper (H100, H200, GH200): MAMF about 792 of 989 TF (Bekman;
     * hetplan-profile measured an 8192^3 fp16 GEMM at 782.5 and 901.8 TF
     * on two H200s);
     * FlashAttention-2 on H100 about 35-50 % of peak, FlashAttention-3
     * 75 % (Shah et al. 2024): taken between them; 132 SMs */
    {"GH", 0.80, 0.55, 0.45, 132, 1},
    {"H100", 0.80, 0.55, 0.45, 132, 1},
    {"H200", 0.80, 0.55, 0.45, 132, 1},
    /* MI300X: MAMF about 782 of 1307 TF (Bekman); 304 CUs */
    {"MI300", 0.598, 0.40, 0.35, 304, 1},
    /* V100: cuBLAS HGEMM reaches about 100 of 125 TF at large sizes
     * (cuBLAS microbenchmarks); 80 SMs (Volta whitepaper) */
    {"V100", 0.80, 0.50, 0.40, 80, 1},
    /* T4 (Turing TU104): 40 SMs (NVIDIA Turing whitepaper, appendix) */
    {"T4", 0.75, 0.50, 0.40, 40, 1},
    /* GeForce and Titan Turing: 68 SMs (RTX 2080 Ti), 46 (RTX 2080),
     * 72 (Titan RTX) (NVIDIA Turing whitepaper, appendix A) */
    {"RTX2080TI", 0.75, 0.50, 0.40, 68, 1},
    {"RTX2080", 0.75, 0.50, 0.40, 46, 1},
    {"TITANRTX", 0.75, 0.50, 0.40, 72, 1},
    /* GA102: 82 SMs (RTX 3090), 68 (RTX 3080) (NVIDIA Ampere GA102
     * whitepaper, table 1); AD102: 128 (RTX 4090) (NVIDIA Ada whitepaper) */
    {"RTX3090", 0.75, 0.50, 0.40, 82, 1},
    {"RTX3080", 0.75, 0.50, 0.40, 68, 1},
    {"RTX4090", 0.75, 0.50, 0.40, 128, 1},
    /* P100: 56 SMs, no tensor cores: fp16 runs on the CUDA cores at twice
     * the fp32 rate (Pascal GP100 whitepaper) */
    {"P100", 0.75, 0.50, 0.40, 56, 0},
};
/* Anything else: a typical large-GEMM efficiency of tensor-core GPUs. */
static const cost_gen gen_default = {"", 0.75, 0.50, 0.40, 80, 1};

int cost_name_has_tag(const char *name, const char *tag)
{
    size_t n = strlen(name), t = strlen(tag), i, k;

    for (i = 0; i + t <= n; i++) {
        for (k = 0; k < t; k++)
            if (toupper((unsigned char)name[i + k]) != tag[k])
                break;
        if (k == t)
            return 1;
    }
    return 0;
}

/* Matched on the name's letters and digits alone, so that "RTX 2080",
 * "GeForce RTX 2080" and "RTX2080" find the same row. */
const cost_gen *cost_gen_of(const fmt_device_type *dt)
{
    char sq[sizeof dt->name];
    size_t i, n = 0;

    for (i = 0; dt->name[i] != '\0' && n + 1 < sizeof sq; i++)
        if (isalnum((unsigned char)dt->name[i]))
            sq[n++] = dt->name[i];
    sq[n] = '\0';
    for (i = 0; i < sizeof gens / sizeof gens[0]; i++)
        if (cost_name_has_tag(sq, gens[i].tag))
            return &gens[i];
    return &gen_default;
}

int cost_tf32(const fmt_model *m, const cost_params *p)
{
    if (p->tf32 >= 0)
        return p->tf32 != 0;
    return m->tf32 != FMT_FLAG_OFF; /* unstated: NGC containers' default
                                       (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1) */
}

/* The peak of the unit the model's matmuls run on; *tensor 1 for tensor
 * cores, 0 for the CUDA cores (fp32 without TF32, 16-bit before Volta). */
static double gemm_peak(const fmt_model *m, const cost_params *p,
                        const fmt_device_type *dt, int *tensor)
{
    *tensor = cost_gen_of(dt)->tensor_cores;
    if (m->dtype_bytes >= 4) {
        /* fp32 matmuls: TF32 tensor cores when allowed (NGC containers
         * set TORCH_ALLOW_TF32_CUBLAS_OVERRIDE), else the fp32 units */
        int tf32 = cost_tf32(m, p);
        if (tf32 && dt->flops_tf32 > 0.0)
            return dt->flops_tf32;
        if (tf32 && dt->flops_fp32 <= 0.0 && dt->flops_bf16 > 0.0)
            return dt->flops_fp16 / 2.0; /* bf16-capable NVIDIA parts: TF32
                                            dense = fp16 dense / 2 (A100,
                                            H100 datasheets) */
        *tensor = 0;
        if (dt->flops_fp32 > 0.0)
            return dt->flops_fp32;
        return dt->flops_fp16 / 4.0; /* nothing stated: a quarter of fp16 */
    }
    if (m->bf16 && dt->flops_bf16 > 0.0)
        return dt->flops_bf16;
    return dt->flops_fp16;
}

double cost_gemm_peak(const fmt_model *m, const cost_params *p,
                      const fmt_device_type *dt)
{
    int tensor;

    return gemm_peak(m, p, dt, &tensor);
}

double cost_gemm_eff(const cost_params *p, const fmt_device_type *dt)
{
    return p->gemm_eff > 0.0 ? p->gemm_eff : cost_gen_of(dt)->gemm;
}

void cost_gemm_unit_of(const fmt_model *m, const cost_params *p,
                       const fmt_device_type *dt, cost_gemm_unit *u)
{
    const cost_gen *g = cost_gen_of(dt);

    memset(u, 0, sizeof *u);
    u->peak = gemm_peak(m, p, dt, &u->tensor);
    u->eff = cost_gemm_eff(p, dt);
    u->bw = dt->mem_bw * p->memory_eff;
    u->elem = (double)(m->dtype_bytes > 0 ? m->dtype_bytes : 2);
    u->sms = g->sms;
    /* Output tile of one thread block.  Tensor cores: 256 x 128, the
     * largest tile cuBLAS picks for big half-precision GEMMs (NVIDIA,
     * "Matrix Multiplication Background User's Guide", "Tile
     * quantization"; CUTLASS's default tensor-op threadblock shape
     * 128 x 256 for sm70, sm75 and sm80).  CUDA cores: 128 x 128
     * (CUTLASS default_gemm_configuration.h, OpClassSimt: GemmShape<128,
     * 128, 8>). */
    u->tile_m = u->tensor ? 256 : 128;
    u->tile_n = 128;
}

/* Fraction of the computed tile area that is the matrix's: a partial tile
 * costs a whole one (same guide, "Tile quantization"). */
static double tile_use(double x, double tile)
{
    double tiles = ceil(x / tile);

    return tiles > 0.0 ? x / (tile * tiles) : 1.0;
}

double cost_gemm_time(const cost_gemm_unit *u, double M, double N, double K,
                      double batch)
{
    double flops = 2.0 * M * N * K * batch, eff, tiles, waves, tc, tm;
    double tm_ = (double)u->tile_m, tn = (double)u->tile_n;

    if (flops <= 0.0 || u->peak <= 0.0)
        return 0.0;
    /* compute-bound at eff x tile use x wave use: the tiles run in waves
     * of one per SM and the last wave is partly idle (same guide, "Wave
     * quantization") */
    eff = u->eff * tile_use(M, tm_) * tile_use(N, tn);
    tiles = ceil(M / tm_) * ceil(N / tn) * batch;
    waves = tiles / (double)(u->sms > 0 ? u->sms : 1);
    eff *= waves / ceil(waves);
    tc = flops / (u->peak * eff);
    /* or bound by reading A and B and writing C once (roofline, Williams
     * et al. 2009) */
    tm = u->bw > 0.0 ? (M * K + K * N + M * N) * batch * u->elem / u->bw : 0.0;
    return tc > tm ? tc : tm;
}

/* Fixed cost of one kernel by how it is launched.  Eager frameworks and
 * Megatron-LM's fused kernels: each kernel is a host launch through the
 * framework's dispatcher, p->kernel_overhead (10 us: the CPU-side
 * dispatch and launch of one eager PyTorch op, several to tens of
 * microseconds, PyTorch blog "Accelerating PyTorch with CUDA Graphs",
 * 2021), plus its ramp-up and tail.  CUDA graphs replay the launches on the device: a kernel's
 * overhead falls to about 0.5 us (Gray, "Getting Started with CUDA
 * Graphs", NVIDIA blog 2019: 3.4 us per 2.9 us kernel in a graph, 3.8 us
 * with stream launches, 9.6 us launched one by one and synchronised);
 * never above the stated overhead. */
double cost_kernel_cost(const fmt_model *m, const cost_params *p)
{
    if (cost_launch_mode(m, p) == COST_LAUNCH_GRAPHS)
        return p->kernel_overhead < 0.5e-6 ? p->kernel_overhead : 0.5e-6;
    return p->kernel_overhead;
}
