/* tests/test_formats_devices.c: the catalogue's peaks per precision
 * (fp32, tf32, fp16, bf16), which precisions a device supports, and the
 * optional peaks of a cluster file's device_types. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "testutil.h"

#define MIB 1048576.0

/* The entries that fed predictions before the per-precision peaks were
 * added keep their values: memory (MiB), fp16, bf16 (TFLOPS), bandwidth
 * (GB/s). */
START_TEST(test_existing_rows_unchanged)
{
    static const struct {
        const char *name;
        double mib, f16, b16, bw;
    } rows[] = {
        {"P100-16GB", 16384, 21.2, 0, 732},
        {"P100-PCIe-16GB", 16384, 18.7, 0, 732},
        {"V100", 16160, 125, 0, 900},
        {"V100-32GB", 32510, 125, 0, 900},
        {"V100-PCIe", 16160, 112, 0, 900},
        {"T4", 15360, 65, 0, 320},
        {"A10", 24576, 125, 125, 600},
        {"A10G", 24576, 70, 70, 600},
        {"A40", 49152, 149.7, 149.7, 696},
        {"A100-40GB", 40536, 312, 312, 1555},
        {"A100-80GB", 81920, 312, 312, 2039},
        {"A100-PCIe-40GB", 40960, 312, 312, 1555},
        {"A100-PCIe-80GB", 81920, 312, 312, 1935},
        {"L4", 24576, 121, 121, 300},
        {"L40S", 49152, 362.05, 362.05, 864},
        {"RTX3090", 24576, 71, 71, 936},
        {"RTX4090", 24576, 165.2, 165.2, 1008},
        {"H100-SXM", 81559, 989.5, 989.5, 3350},
        {"H100-PCIe", 81559, 756.5, 756.5, 2000},
        {"H200", 144384, 989.5, 989.5, 4800},
    };
    size_t i;

    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const fmt_device_type *d = fmt_catalog_find(rows[i].name);
        ck_assert_msg(d != NULL, "'%s' missing", rows[i].name);
        ck_assert_str_eq(d->name, rows[i].name);
        ck_assert(d->mem_bytes == rows[i].mib * MIB);
        ck_assert(d->flops_fp16 == rows[i].f16 * 1e12);
        ck_assert(d->flops_bf16 == rows[i].b16 * 1e12);
        ck_assert(d->mem_bw == rows[i].bw * 1e9);
    }
}
END_TEST

/* Datasheet peaks per precision (TFLOPS; docs/device-catalogue.md). */
START_TEST(test_precision_peaks)
{
    static const struct {
        const char *name;
        double f32, tf32, f16, b16;
    } rows[] = {
        {"T4", 8.1, 0, 65, 0},
        {"V100", 15.7, 0, 125, 0},
        {"V100-32GB", 15.7, 0, 125, 0},
        {"V100-PCIe", 14, 0, 112, 0},
        {"A100-40GB", 19.5, 156, 312, 312},
        {"A100-80GB", 19.5, 156, 312, 312},
        {"A100-PCIe-40GB", 19.5, 156, 312, 312},
        {"A100-PCIe-80GB", 19.5, 156, 312, 312},
        {"H100-SXM", 67, 494.5, 989.5, 989.5},
        {"H100-PCIe", 51, 378, 756.5, 756.5},
        {"H200", 67, 494.5, 989.5, 989.5},
        {"GH200", 67, 494.5, 989.5, 989.5},
        {"GH200-144GB", 67, 494.5, 989.5, 989.5},
        {"L4", 30.3, 60, 121, 121},
        {"L40S", 91.6, 183, 362.05, 362.05},
        {"RTX2080", 10.1, 0, 40.3, 0},
        {"RTX2080Ti", 13.4, 0, 53.8, 0},
        {"TitanRTX", 16.3, 0, 130.5, 0},
        {"RTX3090", 35.6, 35.6, 71, 71},
        {"RTX4090", 82.6, 82.6, 165.2, 165.2},
        {"MI250X", 47.9, 0, 383, 383},
        {"MI250X-GCD", 23.95, 0, 191.5, 191.5},
        {"MI300X", 163.4, 653.7, 1307.4, 1307.4},
        /* NVIDIA A30 and L40 datasheets (dense: half the sparse figures),
         * AMD Instinct MI210 datasheet (no tf32 on CDNA2) */
        {"A30", 10.3, 82, 165, 165},
        {"L40", 90.5, 90.5, 181.05, 181.05},
        {"MI210", 22.6, 0, 181, 181},
    };
    size_t i;

    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const fmt_device_type *d = fmt_catalog_find(rows[i].name);
        ck_assert_msg(d != NULL, "'%s' missing", rows[i].name);
        ck_assert_msg(fabs(d->flops_fp32 - rows[i].f32 * 1e12) < 1.0 &&
                          fabs(d->flops_tf32 - rows[i].tf32 * 1e12) < 1.0 &&
                          fabs(d->flops_fp16 - rows[i].f16 * 1e12) < 1.0 &&
                          fabs(d->flops_bf16 - rows[i].b16 * 1e12) < 1.0,
                      "'%s' peaks differ", rows[i].name);
        /* tensor rates are never below the plain fp32 rate */
        ck_assert(d->flops_fp16 >= d->flops_fp32);
    }
    /* every catalogue entry: tf32 only where fp32 is known */
    for (i = 0; i < fmt_catalog_count(); i++) {
        const fmt_device_type *d = fmt_catalog_get(i);
        ck_assert(d->flops_fp32 >= 0 && d->flops_tf32 >= 0);
        ck_assert(d->flops_tf32 == 0 || d->flops_fp32 > 0);
        ck_assert(fmod(d->mem_bytes, MIB) == 0.0);
    }
    ck_assert(fmt_catalog_find("GH200")->mem_bytes == 97871.0 * MIB);
    ck_assert(fmt_catalog_find("MI300X")->mem_bytes == 192.0 * 1024 * MIB);
    ck_assert(fmt_catalog_find("MI250X")->mem_bw == 3276.8e9);
}
END_TEST

START_TEST(test_new_spellings)
{
    static const struct {
        const char *query, *name;
    } cases[] = {
        {"NVIDIA GeForce RTX 2080 Ti", "RTX2080Ti"},
        {"rtx 2080", "RTX2080"},
        {"NVIDIA TITAN RTX", "TitanRTX"},
        {"NVIDIA GH200 480GB", "GH200"},
        {"gh200-96gb", "GH200"},
        {"GH200 144GB HBM3e", "GH200-144GB"},
        {"AMD Instinct MI250X", "MI250X"},
        {"mi250x_gcd", "MI250X-GCD"},
        {"AMD Instinct MI300X", "MI300X"},
        {"GH-96", "GH200"}, /* Sailor's name for the 96 GB part */
        {"RTX-TITAN", "TitanRTX"},
        {"A100-40", "A100-40GB"},
        {"A100-80", "A100-80GB"},
        {"NVIDIA L40", "L40"},
        {"NVIDIA A30", "A30"},
        {"AMD Instinct MI210", "MI210"},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fmt_device_type *d = fmt_catalog_find(cases[i].query);
        ck_assert_msg(d != NULL, "'%s' not found", cases[i].query);
        ck_assert_str_eq(d->name, cases[i].name);
    }
    ck_assert_ptr_null(fmt_catalog_find("AMD"));
    ck_assert_ptr_null(fmt_catalog_find("Instinct"));
}
END_TEST

/* A name the lookup does not know: the entry it is a typo of, through
 * entry names and accepted spellings alike; none for a name far from all. */
START_TEST(test_nearest_entry)
{
    static const struct {
        const char *query, *name;
    } cases[] = {
        {"V10", "V100"},
        {"rtx 4909", "RTX4090"},
        {"H100-SMX", "H100-SXM"},
        {"NVIDIA A100-SXM4-8GB", "A100-80GB"}, /* near the spelling a100sxm480gb */
        {"Tesla T5", "T4"},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fmt_device_type *d = fmt_catalog_nearest(cases[i].query);
        ck_assert_msg(d != NULL, "nothing near '%s'", cases[i].query);
        ck_assert_str_eq(d->name, cases[i].name);
    }
    ck_assert_ptr_null(fmt_catalog_nearest("Z9000"));
    ck_assert_ptr_null(fmt_catalog_nearest("quantum annealer"));
    ck_assert_ptr_null(fmt_catalog_nearest(""));
    ck_assert_ptr_null(fmt_catalog_nearest(NULL));
}
END_TEST

START_TEST(test_device_supports)
{
    const fmt_device_type *v100 = fmt_catalog_find("V100");
    const fmt_device_type *t4 = fmt_catalog_find("T4");
    const fmt_device_type *a100 = fmt_catalog_find("A100-80GB");
    fmt_device_type none;

    ck_assert(!fmt_device_supports(v100, FMT_PREC_BF16));
    ck_assert(!fmt_device_supports(t4, FMT_PREC_BF16));
    ck_assert(fmt_device_supports(a100, FMT_PREC_BF16));
    ck_assert(fmt_device_supports(fmt_catalog_find("MI300X"), FMT_PREC_BF16));
    ck_assert(!fmt_device_supports(fmt_catalog_find("RTX2080Ti"),
                                   FMT_PREC_BF16));
    ck_assert(fmt_device_supports(v100, FMT_PREC_FP16));
    ck_assert(fmt_device_supports(t4, FMT_PREC_FP32));
    ck_assert(fmt_device_supports(a100, FMT_PREC_FP32));
    ck_assert(!fmt_device_supports(a100, 3));
    ck_assert(!fmt_device_supports(a100, -1));
    ck_assert(!fmt_device_supports(NULL, FMT_PREC_FP16));
    /* a type known only by its required fields: fp32 still runs */
    memset(&none, 0, sizeof none);
    none.flops_fp16 = 1e12;
    ck_assert(fmt_device_supports(&none, FMT_PREC_FP32));
    ck_assert(fmt_device_supports(&none, FMT_PREC_FP16));
    ck_assert(!fmt_device_supports(&none, FMT_PREC_BF16));
}
END_TEST

static int cluster(const char *types, fmt_cluster *c, util_error *err)
{
    char json[1024];

    snprintf(json, sizeof json,
             "{\"device_types\": {\"X\": {\"memory_gib\": 16,"
             " \"tflops_fp16\": 100, \"mem_bw_gbs\": 500%s}},"
             " \"nodes\": [{\"name\": \"n\", \"device\": \"X\", \"gpus\": 2,"
             " \"intra_gbps\": 100, \"nic_gbps\": 10}]}",
             types);
    memset(err, 0, sizeof *err);
    return fmt_parse_cluster(json, "cluster.json", c, err);
}

START_TEST(test_cluster_peaks)
{
    fmt_cluster c;
    util_error err;

    ck_assert_int_eq(cluster(", \"tflops_fp32\": 20, \"tflops_tf32\": 50",
                             &c, &err),
                     UTIL_OK);
    ck_assert(c.types[0].flops_fp32 == 20e12);
    ck_assert(c.types[0].flops_tf32 == 50e12);
    ck_assert(c.types[0].flops_bf16 == 0);
    fmt_cluster_free(&c);

    ck_assert_int_eq(cluster("", &c, &err), UTIL_OK);
    ck_assert(c.types[0].flops_fp32 == 0 && c.types[0].flops_tf32 == 0);
    fmt_cluster_free(&c);

    ck_assert_int_eq(cluster(", \"tflops_tf32\": -1", &c, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.file, "cluster.json");
    ck_assert_str_eq(err.path, "device_types.X.tflops_tf32");
    ck_assert_ptr_nonnull(strstr(err.msg, "-1"));
    ck_assert_int_eq(cluster(", \"tflops_fp32\": \"fast\"", &c, &err),
                     UTIL_EFIELD);
    ck_assert_str_eq(err.path, "device_types.X.tflops_fp32");
}
END_TEST

/* A device_types entry named for a catalogue part, with that part's
 * memory (within 10%), that states neither fp32 figure takes both from
 * the catalogue (Titan RTX: 16.3 fp32, no TF32, NVIDIA's specifications;
 * GH200 by Sailor's name: 67 and 494.5); the fp16 / bf16 it states stay
 * its own.  An entry that states either fp32 figure, has another memory
 * (another part) or names no catalogue part keeps what it says. */
START_TEST(test_cluster_fp32_from_catalogue)
{
#define ONE_TYPE                                                              \
    "{\"device_types\": {\"%s\": {\"memory_gib\": %g,"                        \
    " \"tflops_fp16\": 130.5, \"mem_bw_gbs\": 672%s}},"                         \
    " \"nodes\": [{\"name\": \"n\", \"device\": \"%s\", \"gpus\": 1,"          \
    " \"intra_gbps\": 100, \"nic_gbps\": 10}]}"
    /* a device type stating neither fp32 figure, its memory (GiB) and
     * other fields; the bf16, fp32 and tf32 peaks it has (TFLOP/s, 0 =
     * none) */
    static const struct {
        const char *name;
        double gib;
        const char *extra;
        double bf16, fp32, tf32;
    } cases[] = {
        {"Titan-RTX", 24.0, "", 0.0, 16.3, 0.0},
        {"GH-96", 95.5771484375, ", \"tflops_bf16\": 989.5", 989.5, 67.0, 494.5},
        /* a stated tf32 figure: nothing filled */
        {"Titan-RTX", 24.0, ", \"tflops_tf32\": 40", 0.0, 0.0, 40.0},
        /* 24 GiB is neither the 8 GB RTX 2080's memory nor its Ti's */
        {"RTX-2080", 24.0, "", 0.0, 0.0, 0.0},
        /* a "2080" with 11 GB (10.76 GiB as CUDA reports it) is the 2080
         * Ti: its 13.4 TF fp32 (Turing whitepaper), not the 2080's 10.1 */
        {"RTX-2080", 10.76, "", 0.0, 13.4, 0.0},
        {"RTX-2080", 8.0, "", 0.0, 10.1, 0.0},
        /* "A100" is the 40 GB part; with 80 GB the 80 GB one (the same
         * peaks, A100 datasheet); "L4" with 48 GB is no L4 (nor the L40S) */
        {"A100", 80.0, "", 0.0, 19.5, 156.0},
        {"L4", 48.0, "", 0.0, 0.0, 0.0},
        {"Lab-GPU", 24.0, "", 0.0, 0.0, 0.0},
    };
    char json[1024];
    fmt_cluster c;
    util_error err;
    size_t i;

    memset(&err, 0, sizeof err);
    for (i = 0; i < TU_N(cases); i++) {
        snprintf(json, sizeof json, ONE_TYPE, cases[i].name, cases[i].gib,
                 cases[i].extra, cases[i].name);
        ck_assert_int_eq(fmt_parse_cluster(json, "c.json", &c, &err), UTIL_OK);
        ck_assert_str_eq(c.types[0].name, cases[i].name);
        ck_assert_double_eq_tol(c.types[0].flops_fp32, cases[i].fp32 * 1e12, 1e6);
        ck_assert_double_eq_tol(c.types[0].flops_tf32, cases[i].tf32 * 1e12, 1e6);
        ck_assert(c.types[0].flops_fp16 == 130.5e12);
        ck_assert(c.types[0].flops_bf16 == cases[i].bf16 * 1e12);
        ck_assert(c.types[0].mem_bw == 672e9); /* its own, not the catalogue's */
        fmt_cluster_free(&c);
    }
#undef ONE_TYPE
}
END_TEST

static Suite *devices_suite(void)
{
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_existing_rows_unchanged);
    tcase_add_test(tc, test_precision_peaks);
    tcase_add_test(tc, test_new_spellings);
    tcase_add_test(tc, test_nearest_entry);
    tcase_add_test(tc, test_device_supports);
    tcase_add_test(tc, test_cluster_peaks);
    tcase_add_test(tc, test_cluster_fp32_from_catalogue);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(devices_suite());
}
