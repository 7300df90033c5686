/* formats/catalog.c: built-in table of published NVIDIA GPU specs.
 *
 * Peak throughput is the dense (no structured sparsity) tensor-core rate
 * with FP32 accumulation where a datasheet lists both; memory is the
 * marketed size read as GiB; bandwidth is the datasheet figure in bytes/s.
 *
 * Lookup ignores case and every character that is not a letter or a
 * digit, and drops a leading "NVIDIA", "Tesla" or "GeForce", so that
 * "v100", "Tesla V100-SXM2-16GB" (nvidia-smi) and "V100-16GB" all find
 * "V100".  A bare "A100" means the original A100-40GB (SXM4), the part
 * of the AMP-era clusters; "H100" means the SXM part. */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "formats.h"

#define GIB 1073741824.0
#define TFLOPS 1e12
#define GBS 1e9

#define ENTRY(n, mem, f16, b16, bw) \
    { n, (mem) * GIB, (f16) * TFLOPS, (b16) * TFLOPS, (bw) * GBS }

/* Memory is the total CUDA reports (nvidia-smi "Total"), which is what a
 * job can use before the framework's own reserve, where it is known to
 * differ from the marketed size: V100 16 GB = 16160 MiB, V100 32 GB =
 * 32510 MiB, A100 40 GB = 40536 MiB, H100 80 GB = 81559 MiB. */
static const fmt_device_type catalog[] = {
    /* NVIDIA Tesla P100 datasheet (SXM2): 21.2 TF fp16, 732 GB/s */
    ENTRY("P100-16GB", 16, 21.2, 0, 732),
    /* NVIDIA Tesla P100 datasheet (PCIe): 18.7 TF fp16, 732 GB/s */
    ENTRY("P100-PCIe-16GB", 16, 18.7, 0, 732),
    /* NVIDIA Tesla V100 datasheet (SXM2 16 GB): 125 TF tensor, 900 GB/s */
    ENTRY("V100", 16160.0 / 1024.0, 125, 0, 900),
    /* NVIDIA Tesla V100 datasheet (SXM2 32 GB): 125 TF tensor, 900 GB/s */
    ENTRY("V100-32GB", 32510.0 / 1024.0, 125, 0, 900),
    /* NVIDIA Tesla V100 datasheet (PCIe 16 GB): 112 TF tensor, 900 GB/s */
    ENTRY("V100-PCIe", 16160.0 / 1024.0, 112, 0, 900),
    /* NVIDIA T4 datasheet: 65 TF fp16 mixed precision, 320 GB/s; 16 GB of
     * which CUDA sees 15360 MiB (ECC) */
    ENTRY("T4", 15, 65, 0, 320),
    /* NVIDIA A10 datasheet: 125 TF fp16/bf16 dense, 600 GB/s */
    ENTRY("A10", 24, 125, 125, 600),
    /* AWS G5 / NVIDIA figures for A10G (no public datasheet): 70 TF, 600 GB/s */
    ENTRY("A10G", 24, 70, 70, 600),
    /* NVIDIA A40 datasheet: 149.7 TF fp16/bf16 dense, 696 GB/s */
    ENTRY("A40", 48, 149.7, 149.7, 696),
    /* NVIDIA A100 datasheet (SXM4 40 GB): 312 TF dense, 1555 GB/s */
    ENTRY("A100-40GB", 40536.0 / 1024.0, 312, 312, 1555),
    /* NVIDIA A100 datasheet (SXM4 80 GB): 312 TF dense, 2039 GB/s */
    ENTRY("A100-80GB", 80, 312, 312, 2039),
    /* NVIDIA A100 datasheet (PCIe 40 GB): 312 TF dense, 1555 GB/s */
    ENTRY("A100-PCIe-40GB", 40, 312, 312, 1555),
    /* NVIDIA A100 datasheet (PCIe 80 GB): 312 TF dense, 1935 GB/s */
    ENTRY("A100-PCIe-80GB", 80, 312, 312, 1935),
    /* NVIDIA L4 datasheet: 121 TF fp16/bf16 dense (242 sparse), 300 GB/s */
    ENTRY("L4", 24, 121, 121, 300),
    /* NVIDIA L40S datasheet: 362.05 TF fp16/bf16 dense, 864 GB/s */
    ENTRY("L40S", 48, 362.05, 362.05, 864),
    /* NVIDIA Ampere GA102 whitepaper (RTX 3090): 71 TF fp32-accumulate, 936 GB/s */
    ENTRY("RTX3090", 24, 71, 71, 936),
    /* NVIDIA Ada Lovelace whitepaper (RTX 4090): 165.2 TF fp32-accumulate, 1008 GB/s */
    ENTRY("RTX4090", 24, 165.2, 165.2, 1008),
    /* NVIDIA H100 datasheet (SXM5): 1979 TF sparse = 989.5 dense, 3.35 TB/s */
    ENTRY("H100-SXM", 81559.0 / 1024.0, 989.5, 989.5, 3350),
    /* NVIDIA H100 datasheet (PCIe): 1513 TF sparse = 756.5 dense, 2 TB/s */
    ENTRY("H100-PCIe", 81559.0 / 1024.0, 756.5, 756.5, 2000),
    /* NVIDIA H200 datasheet (SXM): 1979 TF sparse = 989.5 dense, 4.8 TB/s */
    ENTRY("H200", 141, 989.5, 989.5, 4800),
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
    {"a100pcie", "A100-PCIe-40GB"},
    {"a10080gbpcie", "A100-PCIe-80GB"},
    {"h100", "H100-SXM"},
    {"h100sxm5", "H100-SXM"},
    {"h100sxm580gb", "H100-SXM"},
    {"h10080gbhbm3", "H100-SXM"},
    {"h100pcie80gb", "H100-PCIe"},
    {"h200sxm", "H200"},
    {"h200141gb", "H200"},
    {"h200141gbhbm3e", "H200"},
    {"l40s48gb", "L40S"},
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

size_t fmt_catalog_count(void)
{
    return NCATALOG;
}

const fmt_device_type *fmt_catalog_get(size_t i)
{
    return i < NCATALOG ? &catalog[i] : NULL;
}
