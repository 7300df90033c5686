/* formats/catalog.c: built-in table of published NVIDIA and AMD GPU
 * specs (docs/device-catalogue.md names the datasheet of every row).
 *
 * Peak tensor throughput is the dense (no structured sparsity) rate with
 * FP32 accumulation where a datasheet lists both; fp32 is the rate
 * without tensor cores (AMD: "FP32 vector"); tf32 and bf16 are 0 where
 * the device has no such tensor cores; memory is the marketed size read
 * as GiB; bandwidth is the datasheet figure in bytes/s.
 *
 * Lookup ignores case and every character that is not a letter or a
 * digit, and drops a leading "NVIDIA", "Tesla", "GeForce", "AMD" or
 * "Instinct", so that "v100", "Tesla V100-SXM2-16GB" (nvidia-smi) and
 * "V100-16GB" all find "V100".  A bare "A100" means the original
 * A100-40GB (SXM4), the part of the AMP-era clusters; "H100" means the
 * SXM part. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "formats.h"
#include "internal.h"

#define GIB 1073741824.0
#define TFLOPS 1e12
#define GBS 1e9

/* name, memory GiB, fp16 / bf16 tensor TFLOPS, bandwidth GB/s, fp32
 * TFLOPS, tf32 tensor TFLOPS */
#define ENTRY(n, mem, f16, b16, bw, f32, tf32)                              \
    {                                                                       \
        n, (mem) * GIB, (f16) * TFLOPS, (b16) * TFLOPS, (bw) * GBS,         \
            (f32) * TFLOPS, (tf32) * TFLOPS                                 \
    }

/* Memory is the total CUDA reports (nvidia-smi "Total"), which is what a
 * job can use before the framework's own reserve, where it is known to
 * differ from the marketed size: V100 16 GB = 16160 MiB, V100 32 GB =
 * 32510 MiB, A100 40 GB = 40536 MiB, H100 80 GB = 81559 MiB, GH200 96 GB
 * = 97871 MiB (Sailor's Clariden device file, ../shared/data/sailor-opt). */
static const fmt_device_type catalog[] = {
    /* NVIDIA Tesla P100 datasheet (SXM2): 21.2 TF fp16, 10.6 fp32, 732 GB/s */
    ENTRY("P100-16GB", 16, 21.2, 0, 732, 10.6, 0),
    /* NVIDIA Tesla P100 datasheet (PCIe): 18.7 TF fp16, 9.3 fp32, 732 GB/s */
    ENTRY("P100-PCIe-16GB", 16, 18.7, 0, 732, 9.3, 0),
    /* NVIDIA Tesla V100 datasheet (SXM2 16 GB): 125 TF tensor, 15.7 fp32,
     * 900 GB/s */
    ENTRY("V100", 16160.0 / 1024.0, 125, 0, 900, 15.7, 0),
    /* NVIDIA Tesla V100 datasheet (SXM2 32 GB): the same */
    ENTRY("V100-32GB", 32510.0 / 1024.0, 125, 0, 900, 15.7, 0),
    /* NVIDIA Tesla V100 datasheet (PCIe 16 GB): 112 TF tensor, 14 fp32,
     * 900 GB/s */
    ENTRY("V100-PCIe", 16160.0 / 1024.0, 112, 0, 900, 14, 0),
    /* NVIDIA T4 datasheet: 65 TF fp16 mixed precision, 8.1 fp32, 320 GB/s;
     * 16 GB of which CUDA sees 15360 MiB (ECC) */
    ENTRY("T4", 15, 65, 0, 320, 8.1, 0),
    /* NVIDIA A10 datasheet: 125 TF fp16/bf16, 62.5 tf32 (dense), 31.2
     * fp32, 600 GB/s */
    ENTRY("A10", 24, 125, 125, 600, 31.2, 62.5),
    /* AWS G5 / NVIDIA figures for A10G (no public datasheet): 70 TF,
     * 600 GB/s; fp32 and tf32 not published */
    ENTRY("A10G", 24, 70, 70, 600, 0, 0),
    /* NVIDIA A30 datasheet: 330 / 165 TF fp16 / tf32 sparse = 165 / 82
     * dense, 10.3 fp32, 24 GB HBM2 at 933 GB/s */
    ENTRY("A30", 24, 165, 165, 933, 10.3, 82),
    /* NVIDIA A40 datasheet: 149.7 TF fp16/bf16, 74.8 tf32 (dense), 37.4
     * fp32, 696 GB/s */
    ENTRY("A40", 48, 149.7, 149.7, 696, 37.4, 74.8),
    /* NVIDIA A100 datasheet (SXM4 40 GB): 312 TF fp16/bf16, 156 tf32
     * (dense), 19.5 fp32, 1555 GB/s */
    ENTRY("A100-40GB", 40536.0 / 1024.0, 312, 312, 1555, 19.5, 156),
    /* NVIDIA A100 datasheet (SXM4 80 GB): the same at 2039 GB/s */
    ENTRY("A100-80GB", 80, 312, 312, 2039, 19.5, 156),
    /* NVIDIA A100 datasheet (PCIe 40 GB): the same at 1555 GB/s */
    ENTRY("A100-PCIe-40GB", 40, 312, 312, 1555, 19.5, 156),
    /* NVIDIA A100 datasheet (PCIe 80 GB): the same at 1935 GB/s */
    ENTRY("A100-PCIe-80GB", 80, 312, 312, 1935, 19.5, 156),
    /* NVIDIA L4 datasheet: 242 / 120 TF fp16 / tf32 sparse = 121 / 60
     * dense, 30.3 fp32, 300 GB/s */
    ENTRY("L4", 24, 121, 121, 300, 30.3, 60),
    /* NVIDIA L40 datasheet: 181.05 TF fp16/bf16 with fp32 accumulate,
     * 90.5 tf32 (dense; 362.1 / 181 sparse), 90.5 fp32, 864 GB/s */
    ENTRY("L40", 48, 181.05, 181.05, 864, 90.5, 90.5),
    /* NVIDIA L40S datasheet: 362.05 TF fp16/bf16, 183 tf32 (dense), 91.6
     * fp32, 864 GB/s */
    ENTRY("L40S", 48, 362.05, 362.05, 864, 91.6, 183),
    /* NVIDIA Turing whitepaper, appendix A (RTX 2080, reference clocks):
     * 40.3 TF fp32-accumulate, 10.1 fp32, 448 GB/s */
    ENTRY("RTX2080", 8, 40.3, 0, 448, 10.1, 0),
    /* NVIDIA Turing whitepaper, appendix A (RTX 2080 Ti, reference clocks):
     * 53.8 TF fp32-accumulate, 13.4 fp32, 616 GB/s */
    ENTRY("RTX2080Ti", 11, 53.8, 0, 616, 13.4, 0),
    /* NVIDIA TITAN RTX specifications: 130 tensor TF (576 tensor cores at
     * 1770 MHz, fp32 accumulate at full rate), 16.3 fp32, 672 GB/s */
    ENTRY("TitanRTX", 24, 130.5, 0, 672, 16.3, 0),
    /* NVIDIA Ampere GA102 whitepaper (RTX 3090): 71 TF fp32-accumulate,
     * 35.6 tf32 (dense), 35.6 fp32, 936 GB/s */
    ENTRY("RTX3090", 24, 71, 71, 936, 35.6, 35.6),
    /* NVIDIA Ada Lovelace whitepaper (RTX 4090): 165.2 TF fp32-accumulate,
     * 82.6 tf32 (dense), 82.6 fp32, 1008 GB/s */
    ENTRY("RTX4090", 24, 165.2, 165.2, 1008, 82.6, 82.6),
    /* NVIDIA H100 datasheet (SXM5): 1979 / 989 TF fp16 / tf32 sparse =
     * 989.5 / 494.5 dense, 67 fp32, 3.35 TB/s */
    ENTRY("H100-SXM", 81559.0 / 1024.0, 989.5, 989.5, 3350, 67, 494.5),
    /* NVIDIA H100 datasheet (PCIe): 1513 / 756 TF sparse = 756.5 / 378
     * dense, 51 fp32, 2 TB/s */
    ENTRY("H100-PCIe", 81559.0 / 1024.0, 756.5, 756.5, 2000, 51, 378),
    /* NVIDIA H200 datasheet (SXM): as H100 SXM, 141 GB at 4.8 TB/s */
    ENTRY("H200", 141, 989.5, 989.5, 4800, 67, 494.5),
    /* NVIDIA GH200 Grace Hopper datasheet: the H100 GPU with 96 GB HBM3 at
     * 4 TB/s; 1979 / 989 TF sparse, 67 fp32 */
    ENTRY("GH200", 97871.0 / 1024.0, 989.5, 989.5, 4000, 67, 494.5),
    /* NVIDIA GH200 datasheet, HBM3e version: 144 GB at 4.9 TB/s */
    ENTRY("GH200-144GB", 144, 989.5, 989.5, 4900, 67, 494.5),
    /* AMD Instinct MI210 datasheet: 181 TF fp16/bf16 matrix, 22.6 fp32
     * vector, no tf32, 64 GB HBM2e at 1.6384 TB/s */
    ENTRY("MI210", 64, 181, 181, 1638.4, 22.6, 0),
    /* AMD Instinct MI250X datasheet (whole OAM module, two GCDs): 383 TF
     * fp16/bf16 matrix, 47.9 fp32 vector, no tf32, 128 GB at 3.2768 TB/s */
    ENTRY("MI250X", 128, 383, 383, 3276.8, 47.9, 0),
    /* One GCD of an MI250X, which software sees as one GPU: half of each
     * module figure */
    ENTRY("MI250X-GCD", 64, 191.5, 191.5, 1638.4, 23.95, 0),
    /* AMD Instinct MI300X datasheet: 1307.4 TF fp16/bf16 dense, 653.7 tf32
     * dense, 163.4 fp32 vector, 192 GB at 5.3 TB/s */
    ENTRY("MI300X", 192, 1307.4, 1307.4, 5300, 163.4, 653.7),
};

#define NCATALOG (sizeof catalog / sizeof catalog[0])

/* Other spellings, already normalised (see normalise). */
static const struct {
    const char *alias;
    const char *name;
} aliases[] = {
    {"p100", "P100-16GB"},
    {"p100sxm2", "P100-16GB"},
    {"p100sxm216gb", "P100-16GB"},
    {"p100pcie", "P100-PCIe-16GB"},
    {"v10016gb", "V100"},
    {"v100sxm2", "V100"},
    {"v100sxm216gb", "V100"},
    {"v100sxm232gb", "V100-32GB"},
    {"v100pcie16gb", "V100-PCIe"},
    {"a100", "A100-40GB"},
    {"a100sxm440gb", "A100-40GB"},
    {"a100sxm480gb", "A100-80GB"},
    {"a100sxm40gb", "A100-40GB"},
    {"a100sxm80gb", "A100-80GB"},
    {"a10040", "A100-40GB"},
    {"a10080", "A100-80GB"},
    {"a100pcie", "A100-PCIe-40GB"},
    {"a10080gbpcie", "A100-PCIe-80GB"},
    {"h100", "H100-SXM"},
    {"h100sxm5", "H100-SXM"},
    {"h100sxm580gb", "H100-SXM"},
    {"h100sxm80gb", "H100-SXM"},
    {"h10080gbhbm3", "H100-SXM"},
    {"h100pcie80gb", "H100-PCIe"},
    {"h200sxm", "H200"},
    {"h200141gb", "H200"},
    {"h200141gbhbm3e", "H200"},
    {"l40s48gb", "L40S"},
    {"l4048gb", "L40"},
    {"a3024gb", "A30"},
    {"rtxtitan", "TitanRTX"},
    {"titanrtx24gb", "TitanRTX"},
    {"gh200480gb", "GH200"},
    {"gh20096gb", "GH200"},
    {"gh96", "GH200"},
    {"gh200144gbhbm3e", "GH200-144GB"},
};

#define NALIASES (sizeof aliases / sizeof aliases[0])

/* Lower-case letters and digits of s into out; 0 when too long. */
static int squeeze(const char *s, char *out, size_t n)
{
    size_t k = 0;

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!isalnum(c))
            continue;
        if (k + 1 >= n)
            return 0;
        out[k++] = (char)tolower(c);
    }
    out[k] = '\0';
    return 1;
}

static const char *skip_prefix(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);

    return strncmp(s, prefix, n) == 0 && s[n] != '\0' ? s + n : s;
}

/* Canonical lookup key of a name; 0 when it cannot be one. */
static int normalise(const char *s, char *out, size_t n)
{
    char tmp[64];
    const char *p;

    if (!squeeze(s, tmp, sizeof tmp))
        return 0;
    p = skip_prefix(tmp, "nvidia");
    p = skip_prefix(p, "tesla");
    p = skip_prefix(p, "geforce");
    p = skip_prefix(p, "amd");
    p = skip_prefix(p, "instinct");
    if (strlen(p) + 1 > n)
        return 0;
    memcpy(out, p, strlen(p) + 1);
    return 1;
}

static const fmt_device_type *find_exact(const char *key)
{
    size_t i;
    char k[64];

    for (i = 0; i < NCATALOG; i++)
        if (normalise(catalog[i].name, k, sizeof k) && strcmp(k, key) == 0)
            return &catalog[i];
    return NULL;
}

const fmt_device_type *fmt_catalog_find(const char *name)
{
    char key[64];
    const fmt_device_type *d;
    size_t i;

    if (name == NULL || !normalise(name, key, sizeof key) || key[0] == '\0')
        return NULL;
    d = find_exact(key);
    if (d != NULL)
        return d;
    for (i = 0; i < NALIASES; i++)
        if (strcmp(aliases[i].alias, key) == 0 &&
            normalise(aliases[i].name, key, sizeof key))
            return find_exact(key);
    return NULL;
}

const fmt_device_type *fmt_catalog_nearest(const char *name)
{
    const fmt_device_type *best = NULL;
    char key[64], k[64], bk[64] = "";
    int bd = 1 << 30, d;
    size_t i;

    if (name == NULL || !normalise(name, key, sizeof key) || key[0] == '\0')
        return NULL;
    for (i = 0; i < NCATALOG; i++)
        if (normalise(catalog[i].name, k, sizeof k) &&
            (d = util_edit_distance(key, k)) < bd) {
            bd = d;
            best = &catalog[i];
            memcpy(bk, k, sizeof bk);
        }
    for (i = 0; i < NALIASES; i++) /* a spelling the lookup accepts */
        if ((d = util_edit_distance(key, aliases[i].alias)) < bd &&
            normalise(aliases[i].name, k, sizeof k) && find_exact(k) != NULL) {
            bd = d;
            best = find_exact(k);
            snprintf(bk, sizeof bk, "%s", aliases[i].alias);
        }
    return best != NULL && util_near_name(key, bk) ? best : NULL;
}

/* Whether a part with mem bytes is one with mem_bytes: within 10%. */
static int same_memory(double mem, double mem_bytes)
{
    return mem_bytes > 0.0 && mem_bytes - mem <= 0.1 * mem &&
           mem - mem_bytes <= 0.1 * mem;
}

/* Whether key names a variant of the part whose key is base: base
 * followed by "ti" (NVIDIA's GeForce Ti) or by a memory size in GB. */
static int variant_of(const char *key, const char *base)
{
    size_t n = strlen(base);
    const char *s = key + n;

    if (strncmp(key, base, n) != 0)
        return 0;
    if (strcmp(s, "ti") == 0)
        return 1;
    if (!isdigit((unsigned char)*s))
        return 0;
    while (isdigit((unsigned char)*s))
        s++;
    return strcmp(s, "gb") == 0;
}

const fmt_device_type *fmt_catalog_part(const char *name, double mem_bytes)
{
    const fmt_device_type *d = fmt_catalog_find(name);
    char base[64], asked[64], key[64];
    size_t i;

    if (d == NULL || same_memory(d->mem_bytes, mem_bytes))
        return d;
    /* variants of the part found and of the name as given ("A100" finds
     * the 40 GB part; with 80 GB it is "A100-80GB") */
    if (!normalise(d->name, base, sizeof base) || !normalise(name, asked, sizeof asked))
        return NULL;
    for (i = 0; i < NCATALOG; i++)
        if (same_memory(catalog[i].mem_bytes, mem_bytes) &&
            normalise(catalog[i].name, key, sizeof key) &&
            (variant_of(key, base) || variant_of(key, asked)))
            return &catalog[i];
    return NULL;
}

size_t fmt_catalog_count(void)
{
    return NCATALOG;
}

const fmt_device_type *fmt_catalog_get(size_t i)
{
    return i < NCATALOG ? &catalog[i] : NULL;
}
