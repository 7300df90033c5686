/* tests/test_costmodel_gemm.c: the time of one GEMM (costmodel/gemm.c,
 * docs/time-model.md "GEMMs") against hand arithmetic: wave and tile
 * quantisation over the SMs, the memory-bound roofline of a small inner
 * dimension, fp32 on the CUDA cores when TF32 is off, the SM counts and
 * units of catalogue parts from their whitepapers, monotonicity in every
 * dimension, and the per-kernel cost by launch mode. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "testutil.h"

static void make_model(fmt_model *m, int dtype_bytes)
{
    memset(m, 0, sizeof *m);
    m->dtype_bytes = dtype_bytes;
}

/* peak efficiency and bandwidth exactly: only the quantisation is left */
static void params_exact(cost_params *p)
{
    cost_params_init(p);
    p->gemm_eff = 1.0;
    p->memory_eff = 1.0;
}

/* fp16 [2048 x 1024] x K 1024: tiles of 256 x 128, 8 x 8 = 64 of them on
 * 80 SMs, one wave 0.8 full: 2 * 2048 * 1024 * 1024 = 4.294967296e9 FLOP
 * at 100e12 * 0.8 = 53.6870912 us; the bytes, (2048*1024 + 1024*1024 +
 * 2048*1024) * 2 = 10.485760 MB, take 10.49 us: compute-bound */
START_TEST(test_wave_quantisation)
{
    fmt_model m;
    fmt_device_type dt;
    cost_params p;
    cost_gemm_unit u;

    make_model(&m, 2);
    tu_device_x(&dt);
    params_exact(&p);
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_int_eq(u.tensor, 1);
    ck_assert_int_eq(u.sms, 80);
    ck_assert_int_eq(u.tile_m, 256);
    ck_assert_int_eq(u.tile_n, 128);
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2048, 1024, 1024, 1), 53.6870912e-6, 1e-12);
    /* 80 tiles (M 2560): one full wave, 5.36870912e9 FLOP at 100 TF */
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2560, 1024, 1024, 1), 53.6870912e-6, 1e-12);
    /* 88 tiles (M 2816): two waves, the second 0.1 full, 88 / 160 = 0.55
     * of peak: 5.905580032e9 / 55e12 = 107.374182 us */
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2816, 1024, 1024, 1), 107.3741824e-6, 1e-12);
}
END_TEST

/* N 1100: ceil(1100 / 128) = 9 column tiles of which 1100 / 1152 is the
 * matrix's; M 2048: 8 row tiles; 72 tiles on 80 SMs, 0.9 of a wave.
 * 2 * 2048 * 1100 * 1024 = 4.6137344e9 FLOP at 100e12 * (1100 / 1152) *
 * 0.9 = 85.9375e12: 53.6870912 us */
START_TEST(test_tile_quantisation)
{
    fmt_model m;
    fmt_device_type dt;
    cost_params p;
    cost_gemm_unit u;

    make_model(&m, 2);
    tu_device_x(&dt);
    params_exact(&p);
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2048, 1100, 1024, 1), 53.6870912e-6, 1e-12);
}
END_TEST

/* K 16: 2 * 2048 * 1024 * 16 = 67.108864e6 FLOP would take 0.84 us at
 * 0.8 of 100 TF, but A, B and C are (2048*16 + 16*1024 + 2048*1024) * 2
 * = 4.292608 MB: 4.292608 us at 1 TB/s, memory-bound (roofline); with
 * memory_eff 0.5, twice that */
START_TEST(test_memory_bound)
{
    fmt_model m;
    fmt_device_type dt;
    cost_params p;
    cost_gemm_unit u;

    make_model(&m, 2);
    tu_device_x(&dt);
    params_exact(&p);
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2048, 1024, 16, 1), 4.292608e-6, 1e-12);
    /* batched: 16 of them, 16 times the bytes and 1024 tiles */
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2048, 1024, 16, 16), 16 * 4.292608e-6, 1e-11);
    p.memory_eff = 0.5;
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_double_eq_tol(cost_gemm_time(&u, 2048, 1024, 16, 1), 8.585216e-6, 1e-12);
}
END_TEST

/* An A100-like device (fp32 19.5 TF, TF32 156 TF, A100 datasheet) named
 * "X" (80 SMs).  4096^3 in fp32: 1.37438953472e11 FLOP.
 * TF32 off (PyTorch's default for matmuls since 1.12): the CUDA cores,
 * tiles of 128 x 128, 32 x 32 = 1024 tiles, 12.8 waves in 13: 19.5e12 *
 * 12.8 / 13 = 19.2e12 FLOP/s, 7.158278827 ms.
 * TF32 on: tensor cores, tiles of 256 x 128, 512 tiles, 6.4 waves in 7:
 * 156e12 * 6.4 / 7 FLOP/s, 0.9636145 ms. */
START_TEST(test_fp32_without_tf32)
{
    fmt_model m;
    fmt_device_type dt;
    cost_params p;
    cost_gemm_unit u;
    double n = 4096.0, flops = 2.0 * n * n * n;

    make_model(&m, 4);
    tu_device_x(&dt);
    dt.flops_fp16 = 312e12;
    dt.flops_bf16 = 312e12;
    dt.flops_fp32 = 19.5e12;
    dt.flops_tf32 = 156e12;
    params_exact(&p);
    p.tf32 = 0;
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_int_eq(u.tensor, 0);
    ck_assert_int_eq(u.tile_m, 128);
    ck_assert_double_eq(u.peak, 19.5e12);
    ck_assert_double_eq(u.elem, 4.0);
    ck_assert_double_eq_tol(cost_gemm_time(&u, n, n, n, 1), 7.158278826666667e-3, 1e-12);
    ck_assert_double_eq_tol(flops / 19.2e12, 7.158278826666667e-3, 1e-12);
    p.tf32 = 1;
    cost_gemm_unit_of(&m, &p, &dt, &u);
    ck_assert_int_eq(u.tensor, 1);
    ck_assert_double_eq(u.peak, 156e12);
    ck_assert_double_eq_tol(cost_gemm_time(&u, n, n, n, 1), flops / (156e12 * 6.4 / 7.0), 1e-12);
    ck_assert_double_eq_tol(cost_gemm_time(&u, n, n, n, 1), 0.9636145e-3, 1e-9);
}
END_TEST

/* Catalogue parts: SMs and units from their whitepapers.  V100 80 SMs,
 * fp16 on tensor cores at 125 TF, 0.80 of it; T4 40 SMs; RTX 2080 46
 * SMs, fp32 (no TF32 on Turing) on the CUDA cores at 10.1 TF; RTX 3090
 * 82 SMs, TF32 tensor cores at 35.6 TF; P100 56 SMs, no tensor cores. */
START_TEST(test_catalogue_units)
{
    fmt_model m;
    cost_params p;
    cost_gemm_unit u;
    const fmt_device_type *dt;

    cost_params_init(&p);
    make_model(&m, 2);
    dt = fmt_catalog_find("V100");
    ck_assert_ptr_nonnull(dt);
    cost_gemm_unit_of(&m, &p, dt, &u);
    ck_assert_int_eq(u.sms, 80);
    ck_assert_int_eq(u.tensor, 1);
    ck_assert_double_eq_tol(u.peak, 125e12, 1.0);
    ck_assert_double_eq_tol(u.eff, 0.80, 1e-12);
    dt = fmt_catalog_find("T4");
    cost_gemm_unit_of(&m, &p, dt, &u);
    ck_assert_int_eq(u.sms, 40);
    make_model(&m, 4);
    dt = fmt_catalog_find("RTX2080");
    ck_assert_ptr_nonnull(dt);
    cost_gemm_unit_of(&m, &p, dt, &u);
    ck_assert_int_eq(u.sms, 46);
    ck_assert_int_eq(u.tensor, 0);
    ck_assert_double_eq_tol(u.peak, 10.1e12, 1.0);
    dt = fmt_catalog_find("RTX3090");
    ck_assert_ptr_nonnull(dt);
    cost_gemm_unit_of(&m, &p, dt, &u);
    ck_assert_int_eq(u.sms, 82);
    ck_assert_int_eq(u.tensor, 1);
    ck_assert_double_eq_tol(u.peak, 35.6e12, 1.0);
    dt = fmt_catalog_find("TitanRTX");
    ck_assert_ptr_nonnull(dt);
    cost_gemm_unit_of(&m, &p, dt, &u);
    ck_assert_int_eq(u.sms, 72);
    {
        fmt_device_type named = *dt;
        strcpy(named.name, "GeForce RTX 2080 Ti");
        cost_gemm_unit_of(&m, &p, &named, &u);
        ck_assert_int_eq(u.sms, 68);
    }
    {
        fmt_device_type p100;
        tu_device_x(&p100);
        strcpy(p100.name, "Tesla P100-SXM2");
        make_model(&m, 2);
        cost_gemm_unit_of(&m, &p, &p100, &u);
        ck_assert_int_eq(u.sms, 56);
        ck_assert_int_eq(u.tensor, 0);
        ck_assert_int_eq(u.tile_m, 128);
    }
}
END_TEST

/* More work never takes less time, and no GEMM beats the unit's peak
 * times its large-GEMM efficiency. */
START_TEST(test_monotone)
{
    fmt_model m;
    cost_params p;
    cost_gemm_unit u;
    const char *devs[] = {"V100", "T4", "A100", "H100", "RTX2080", "RTX3090"};
    size_t i;
    int prec;

    cost_params_init(&p);
    for (prec = 2; prec <= 4; prec += 2)
        for (i = 0; i < sizeof devs / sizeof devs[0]; i++) {
            const fmt_device_type *dt = fmt_catalog_find(devs[i]);
            double x, last[3] = {0.0, 0.0, 0.0};
            ck_assert_ptr_nonnull(dt);
            make_model(&m, prec);
            cost_gemm_unit_of(&m, &p, dt, &u);
            for (x = 1.0; x <= 16384.0; x += x < 64.0 ? 1.0 : 61.0) {
                double t[3];
                t[0] = cost_gemm_time(&u, x, 1024, 1024, 1);
                t[1] = cost_gemm_time(&u, 1024, x, 1024, 1);
                t[2] = cost_gemm_time(&u, 1024, 1024, x, 1);
                for (int k = 0; k < 3; k++) {
                    /* equal times (one partial tile) may differ in the
                     * last bit */
                    ck_assert_msg(t[k] >= last[k] * (1.0 - 1e-12), "%s dim %d at %g",
                                  devs[i], k, x);
                    ck_assert(2.0 * 1024.0 * 1024.0 * x / t[k] <= u.peak * u.eff * (1.0 + 1e-12));
                    last[k] = t[k];
                }
            }
        }
}
END_TEST

/* Per-kernel cost: kernel_overhead launched from the host (eager,
 * fused, unstated); 0.5 us replayed from a CUDA graph (Gray 2019: 3.4
 * against 2.9 us for a kernel in a graph). */
START_TEST(test_kernel_cost_by_launch)
{
    cost_params p;

    cost_params_init(&p);
    ck_assert_double_eq(cost_kernel_cost(NULL, &p), 10e-6);
    p.launch_mode = COST_LAUNCH_EAGER;
    ck_assert_double_eq(cost_kernel_cost(NULL, &p), 10e-6);
    p.launch_mode = COST_LAUNCH_FUSED;
    ck_assert_double_eq(cost_kernel_cost(NULL, &p), 10e-6);
    p.launch_mode = COST_LAUNCH_GRAPHS;
    ck_assert_double_eq(cost_kernel_cost(NULL, &p), 0.5e-6);
    p.kernel_overhead = 0.0;
    ck_assert_double_eq(cost_kernel_cost(NULL, &p), 0.0);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        test_wave_quantisation, test_tile_quantisation, test_memory_bound,
        test_fp32_without_tf32, test_catalogue_units, test_monotone,
        test_kernel_cost_by_launch,
    };

    return tu_run_tests("gemm", tests, TU_N(tests));
}
