/* formats/framework.c: the training frameworks a model file may name
 * (training.framework) and the defaults each implies (docs/inputs.md,
 * "Frameworks"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"

/* Name prefix, family, accepted versions (major.minor from .. to). */
typedef struct fw_row {
    const char *prefix;
    int family;
    int major, lo, hi; /* major, and the minors (or years) accepted */
} fw_row;

static const fw_row fw_rows[] = {
    {"pytorch-", FMT_FW_PYTORCH, 1, 0, 13},
    {"pytorch-", FMT_FW_PYTORCH, 2, 0, 9},
    {"megatron-lm-", FMT_FW_MEGATRON_LM, 0, 2019, 2022},
    {"megatron-core-", FMT_FW_MEGATRON_CORE, 0, 5, 19},
    {"deepspeed-", FMT_FW_DEEPSPEED, 0, 3, 19},
};

#define NROWS ((int)(sizeof fw_rows / sizeof fw_rows[0]))

/* A decimal number of 1 to 4 digits at *s, advanced past it; -1 if none. */
static int number(const char **s)
{
    int v = 0, n = 0;

    while (**s >= '0' && **s <= '9' && n < 5) {
        v = v * 10 + (**s - '0');
        (*s)++;
        n++;
    }
    return n == 0 || n > 4 ? -1 : v;
}

int fmt_framework_parse(const char *name, fmt_framework *out)
{
    int i;

    for (i = 0; name != NULL && i < NROWS; i++) {
        const fw_row *r = &fw_rows[i];
        size_t k = strlen(r->prefix);
        const char *s = name + k;
        int a, b = 0;

        if (strncmp(name, r->prefix, k) != 0)
            continue;
        if ((a = number(&s)) < 0)
            continue;
        if (r->family == FMT_FW_MEGATRON_LM) { /* a year */
            if (*s != '\0' || a < r->lo || a > r->hi)
                continue;
            out->family = r->family;
            out->major = a;
            out->minor = 0;
            out->ngc = 0;
            return 0;
        }
        if (*s++ != '.' || (b = number(&s)) < 0 ||
            a != r->major || b < r->lo || b > r->hi)
            continue;
        out->ngc = r->family == FMT_FW_PYTORCH && strcmp(s, "-ngc") == 0;
        if (*s != '\0' && !out->ngc)
            continue;
        out->family = r->family;
        out->major = a;
        out->minor = b;
        return 0;
    }
    return -1;
}

const char *fmt_framework_text(const fmt_framework *fw, char *buf, size_t n)
{
    static const char *const prefix[] = {"", "pytorch-", "megatron-lm-",
                                         "megatron-core-", "deepspeed-"};

    if (n == 0)
        return buf;
    buf[0] = '\0';
    if (fw == NULL || fw->family <= FMT_FW_NONE || fw->family > FMT_FW_DEEPSPEED)
        return buf;
    if (fw->family == FMT_FW_MEGATRON_LM)
        snprintf(buf, n, "%s%d", prefix[fw->family], fw->major);
    else
        snprintf(buf, n, "%s%d.%d%s", prefix[fw->family], fw->major, fw->minor,
                 fw->ngc ? "-ngc" : "");
    return buf;
}

const char *fmt_framework_accepted(void)
{
    return "'pytorch-1.0' ... 'pytorch-1.13', 'pytorch-2.0' ... "
           "'pytorch-2.9' (each also with '-ngc'), 'megatron-lm-2019' ... 'megatron-lm-2022', "
           "'megatron-core-0.5' ... 'megatron-core-0.19', 'deepspeed-0.3' "
           "... 'deepspeed-0.19'";
}

/* PyTorch major.minor as one number: 1.7 -> 107. */
static int torch_ver(const fmt_framework *fw)
{
    return fw->major * 100 + fw->minor;
}

int fmt_framework_tf32(const fmt_framework *fw)
{
    switch (fw->family) {
    case FMT_FW_PYTORCH:
        /* torch.backends.cuda.matmul.allow_tf32: TF32 arrived with
         * Ampere support in 1.7, on by default; 1.12 turned it off for
         * matmuls (cuDNN convolutions keep it); NGC containers set
         * TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, which turns it on */
        if (fw->ngc)
            return torch_ver(fw) >= 107 ? FMT_FLAG_ON : FMT_FLAG_OFF;
        return torch_ver(fw) >= 107 && torch_ver(fw) < 112 ? FMT_FLAG_ON
                                                            : FMT_FLAG_OFF;
    case FMT_FW_MEGATRON_CORE:
        /* run in NGC PyTorch containers, whose TORCH_ALLOW_TF32_CUBLAS_
         * OVERRIDE=1 turns TF32 on */
        return FMT_FLAG_ON;
    default:
        return -1;
    }
}

int fmt_framework_attention(const fmt_framework *fw)
{
    switch (fw->family) {
    case FMT_FW_PYTORCH:
        /* no fused attention before 2.0's scaled_dot_product_attention:
         * the scores are kept */
        return fw->major < 2 ? FMT_ATTN_EAGER : -1;
    case FMT_FW_MEGATRON_LM:
        /* FusedScaleMaskSoftmax over the s x s scores; --use-flash-attn
         * came in 2023 */
        return FMT_ATTN_EAGER;
    case FMT_FW_MEGATRON_CORE:
        /* Transformer Engine's DotProductAttention: flash / cuDNN fused */
        return FMT_ATTN_FLASH;
    default:
        return -1;
    }
}

int fmt_framework_cross_entropy(const fmt_framework *fw)
{
    switch (fw->family) {
    case FMT_FW_PYTORCH:
        return FMT_CE_PYTORCH; /* F.cross_entropy */
    case FMT_FW_MEGATRON_LM:
    case FMT_FW_MEGATRON_CORE:
        /* vocab_parallel_cross_entropy: softmax in place over the fp32
         * copy of the logits (mpu/cross_entropy.py) */
        return FMT_CE_MEGATRON;
    default:
        return -1;
    }
}

int fmt_framework_launch(const fmt_framework *fw)
{
    switch (fw->family) {
    case FMT_FW_PYTORCH:
    case FMT_FW_DEEPSPEED:
        return FMT_LAUNCH_EAGER;
    case FMT_FW_MEGATRON_LM:
    case FMT_FW_MEGATRON_CORE:
        return FMT_LAUNCH_FUSED;
    default:
        return -1;
    }
}

int fmt_framework_softmax_input(const fmt_framework *fw)
{
    /* derivatives.yaml passed softmax's input to _softmax_backward_data
     * for its dtype, so autograd saved it (pytorch/pytorch#64000); PR
     * #65242, in 1.11, passes the dtype instead */
    return fw->family == FMT_FW_PYTORCH && torch_ver(fw) < 111;
}
