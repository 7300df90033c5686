/* export/export.c: a plan's strategy as launcher input (docs/export.md):
 * the target names, the checks and analysis of the strategy shared by the
 * exporters, and the entry point.  The targets are in export/megatron.c,
 * export/deepspeed.c and export/torchrun.c (torchrun and the hostfile).
 *
 * Rank order.  hetplan, Megatron-LM ("tp-cp-ep-dp-pp") and DeepSpeed's
 * PipeModelDataParallelTopology all number ranks TP innermost, then DP,
 * then PP, so plan rank r is launcher rank r.  torchrun gives agent k
 * (node rank k) the global ranks sum(nproc of agents < k) + local_rank,
 * and local rank i uses CUDA device i, i.e. the i-th GPU listed in
 * CUDA_VISIBLE_DEVICES.  The plan's rank -> device map is realised by
 * cutting the ranks into runs of consecutive ranks on one node (one
 * agent each, in rank order) and listing each run's GPUs in rank order. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- names and options ----------------------------------------------- */

static const char *const target_names[EXPORT_NTARGETS] = {
    "megatron", "deepspeed", "torchrun", "hostfile"};

const char *export_target_name(int target)
{
    if (target < 0 || target >= EXPORT_NTARGETS)
        return NULL;
    return target_names[target];
}

int export_target_from_name(const char *name)
{
    int i;

    for (i = 0; name != NULL && i < EXPORT_NTARGETS; i++)
        if (strcmp(name, target_names[i]) == 0)
            return i;
    return -1;
}

static const char *const version_names[EXPORT_NTARGETS][EXPORT_NVERSIONS] = {
    {EXPORT_MEGATRON_OLD, EXPORT_MEGATRON_NEW},
    {EXPORT_DEEPSPEED_OLD, EXPORT_DEEPSPEED_NEW},
    {EXPORT_TORCH_OLD, EXPORT_TORCH_NEW},
    {"", ""}};

const char *export_version_name(int target, int version)
{
    if (export_target_name(target) == NULL || version < 0 ||
        version >= EXPORT_NVERSIONS)
        return NULL;
    return version_names[target][version];
}

int export_version_from_name(int target, const char *name)
{
    int v;

    if (export_target_name(target) == NULL || name == NULL)
        return -1;
    if (strcmp(name, "old") == 0)
        return EXPORT_VERSION_OLD;
    if (strcmp(name, "new") == 0 || strcmp(name, "current") == 0)
        return EXPORT_VERSION_NEW;
    for (v = 0; v < EXPORT_NVERSIONS; v++)
        if (name[0] != '\0' && strcmp(name, version_names[target][v]) == 0)
            return v;
    /* the DeepSpeed and PyTorch releases also by their full numbers */
    if (target == EXPORT_DEEPSPEED && strncmp(name, "0.14.", 5) == 0)
        return EXPORT_VERSION_OLD;
    if (target == EXPORT_DEEPSPEED && strncmp(name, "0.19.", 5) == 0)
        return EXPORT_VERSION_NEW;
    if (target == EXPORT_TORCHRUN && strncmp(name, "1.13.", 5) == 0)
        return EXPORT_VERSION_OLD;
    if (target == EXPORT_TORCHRUN && strncmp(name, "2.", 2) == 0)
        return EXPORT_VERSION_NEW;
    if (target == EXPORT_MEGATRON && strcmp(name, "core_v0.9.0") == 0)
        return EXPORT_VERSION_OLD;
    return -1;
}

int export_target_caps(int target, int version, search_launcher *caps,
                       util_error *err)
{
    memset(caps, 0, sizeof *caps);
    if (export_target_name(target) == NULL || target == EXPORT_HOSTFILE ||
        export_version_name(target, version) == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "no launcher to plan for: target %d version %d",
                              target, version);
    caps->active = 1;
    switch (target) {
    case EXPORT_MEGATRON:
        /* 1F1B, even shards, the embedding on the first stage and the
         * head on the last; core_r0.9.0 sets only the first and last
         * stage's block counts and shards the optimizer state alone */
        caps->no_gpipe = 1;
        caps->no_uneven_tp = 1;
        caps->split = version == EXPORT_VERSION_OLD ? SEARCH_SPLIT_ENDS
                                                    : SEARCH_SPLIT_BLOCKS;
        caps->zero_limit = version == EXPORT_VERSION_OLD ? 2 : 0;
        /* --optimizer-cpu-offload arrived after core_r0.9.0; core_v0.19.0
         * offloads the distributed optimizer's shard, not Megatron-FSDP's
         * (which keeps its fp32 main weights on the GPU) */
        caps->no_offload = version == EXPORT_VERSION_OLD;
        caps->offload_zero_limit = version == EXPORT_VERSION_NEW ? 2 : 0;
        /* core_r0.9.0's interleaved schedule raises unless pp divides the
         * micro-batches; core_v0.19.0 takes any count M >= pp with a
         * micro-batch group size N in [pp, M], M mod N 0 or >= pp
         * (schedules.py, forward_backward_pipelining_with_interleaving) */
        caps->vpp_gas_any = version == EXPORT_VERSION_NEW;
        /* --overlap-grad-reduce and --overlap-param-gather in both;
         * --tp-comm-overlap bootstraps Transformer Engine's userbuffers
         * with an MPI process group in core_r0.9.0 (initialize.py), which
         * a torchrun launch has not, with NCCL in core_v0.19.0; P2P
         * overlaps with the interleaved schedule only (validate_args
         * turns overlap_p2p_comm off without it) */
        caps->no_overlap_tp = version == EXPORT_VERSION_OLD;
        caps->p2p = SEARCH_P2P_VPP;
        break;
    case EXPORT_DEEPSPEED:
        /* the pipeline engine: 1F1B-style, ZeRO 0-1 with pp > 1, whole
         * layers checkpointed; no Megatron sequence parallelism; its
         * launcher gives each host one block of ranks */
        caps->no_sp = 1;
        caps->no_vpp = 1;
        caps->no_selective = 1;
        caps->no_gpipe = 1;
        caps->no_uneven_tp = 1;
        caps->zero_limit_pp = 2;
        /* 0.19's launcher sorts a host's --include GPUs */
        caps->order = version == EXPORT_VERSION_NEW ? SEARCH_ORDER_HOSTS_ALIGNED
                                                    : SEARCH_ORDER_HOSTS;
        /* overlap_comm reduces gradients in backward hooks with ZeRO >= 1
         * (stage_1_and_2.py); the pipeline engine reduces them after the
         * schedule (_exec_reduce_grads) and sends activations with
         * blocking dist.send / recv (pipe/p2p.py); no weight gather to
         * overlap below stage 3 and no Transformer Engine layers */
        caps->overlap_grad_zero = 1;
        caps->no_overlap_param = 1;
        caps->no_overlap_tp = 1;
        caps->p2p = SEARCH_P2P_NONE;
        break;
    default: /* torchrun: the variables state every feature; the script's
                own DDP overlaps the gradient reduction */
        caps->no_overlap_param = 1;
        caps->no_overlap_tp = 1;
        break;
    }
    return UTIL_OK;
}

void export_options_init(export_options *o)
{
    memset(o, 0, sizeof *o);
    o->master_addr = NULL;
    o->master_port = 29500;
    o->source = NULL;
    o->strategy = 1;
    o->version = EXPORT_VERSION_OLD;
    o->approximate = 0;
    o->idle_reason = NULL;
}

void export_free(export_result *e)
{
    int i;

    if (e == NULL)
        return;
    for (i = 0; i < e->nfiles && i < EXPORT_MAXFILES; i++)
        free(e->files[i].text);
    memset(e, 0, sizeof *e);
}

/* ---- analysis of the strategy ---------------------------------------- */

static int node_of(const export_ctx *x, int rank);

static void add_note(export_ctx *x, int approx, const char *fmt, va_list ap)
    UTIL_PRINTF_LIKE(3, 0);
static void add_note(export_ctx *x, int approx, const char *fmt, va_list ap)
{
    if (approx)
        x->out->napprox++;
    if (x->out->nnotes >= EXPORT_MAXNOTES)
        return;
    x->out->approx[x->out->nnotes] = approx;
    vsnprintf(x->out->notes[x->out->nnotes], sizeof x->out->notes[0], fmt, ap);
    /* notes become comments: no value may end the comment line */
    export_clean(x->out->notes[x->out->nnotes], sizeof x->out->notes[0],
                 x->out->notes[x->out->nnotes]);
    x->out->nnotes++;
}

void export_note(export_ctx *x, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_note(x, 0, fmt, ap);
    va_end(ap);
}

void export_approx(export_ctx *x, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    add_note(x, 1, fmt, ap);
    va_end(ap);
}

const char *export_release(const export_ctx *x)
{
    return version_names[x->out->target][x->o->version];
}

int export_recompute(const export_ctx *x)
{
    return cost_strategy_recompute(x->p, x->s);
}

int export_zero(const export_ctx *x)
{
    return cost_strategy_zero(x->p, x->s);
}

int export_offload(const export_ctx *x)
{
    return cost_strategy_offload(x->p, x->s);
}

/* UTIL_EINVAL naming the first device of the plan that cannot train in
 * the model's precision (fmt_device_supports). */
static int precision_check(const export_ctx *x, util_error *err)
{
    int r, prec = fmt_model_precision(x->m);

    for (r = 0; r < x->nranks; r++) {
        int node = node_of(x, r);
        const fmt_device_type *dt = &x->c->types[x->c->nodes[node].type];
        char host[64], type[32];
        if (!fmt_device_supports(dt, prec))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "rank %d runs on a '%s' of host '%s', which "
                                  "cannot train in %s: plan with another "
                                  "precision (--precision fp16 or fp32)", r,
                                  export_clean(type, sizeof type, dt->name),
                                  export_clean(host, sizeof host,
                                               export_host_of(x, node)),
                                  fmt_precision_name(prec));
    }
    return UTIL_OK;
}

int export_gpu_of(const export_ctx *x, int rank)
{
    int dev = x->s->ranks[rank];
    return dev - x->c->nodes[x->c->device_node[dev]].first_device;
}

static int node_of(const export_ctx *x, int rank)
{
    return x->c->device_node[x->s->ranks[rank]];
}

const char *export_host_of(const export_ctx *x, int node)
{
    return x->c->nodes[node].name;
}

const char *export_type_of(const export_ctx *x, int node)
{
    return x->c->types[x->c->nodes[node].type].name;
}

static int make_groups(export_ctx *x, util_error *err)
{
    int r, k;

    x->g = calloc((size_t)x->nranks, sizeof *x->g);
    x->node_groups = calloc((size_t)x->c->nnodes, sizeof *x->node_groups);
    if (x->g == NULL || x->node_groups == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    x->identity_gpus = 1;
    for (r = 0; r < x->nranks; r++) {
        int node = node_of(x, r);
        if (x->ng == 0 || x->g[x->ng - 1].node != node) {
            x->g[x->ng].node = node;
            x->g[x->ng].first = r;
            x->g[x->ng].n = 0;
            x->ng++;
            x->node_groups[node]++;
        }
        if (export_gpu_of(x, r) != x->g[x->ng - 1].n)
            x->identity_gpus = 0;
        x->g[x->ng - 1].n++;
    }
    for (k = 0; k < x->c->nnodes; k++) {
        if (x->node_groups[k] > 1)
            x->identity_gpus = 0;
        if (x->node_groups[k] > 0)
            x->hosts++;
    }
    x->master = x->o->master_addr ? x->o->master_addr
                                  : export_host_of(x, x->g[0].node);
    x->out->agents = x->ng;
    x->out->hosts = x->hosts;
    return UTIL_OK;
}

void export_gpu_list(const export_ctx *x, const export_group *g, util_buf *b)
{
    int i;

    for (i = 0; i < g->n; i++)
        util_buf_printf(b, "%s%d", i ? "," : "",
                        export_gpu_of(x, g->first + i));
}

void export_sh_word(util_buf *b, const char *s)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyz"
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789@%+=:,./_-";

    if (s[0] != '\0' && strspn(s, safe) == strlen(s)) {
        util_buf_printf(b, "%s", s);
        return;
    }
    util_buf_printf(b, "'");
    for (; *s; s++)
        if (*s == '\'')
            util_buf_printf(b, "'\\''");
        else
            util_buf_printf(b, "%c", *s);
    util_buf_printf(b, "'");
}

const char *export_clean(char *buf, size_t n, const char *s)
{
    size_t i;

    for (i = 0; s[i] != '\0' && i + 1 < n; i++)
        buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    buf[i] = '\0';
    return buf;
}

const char *export_precision(const fmt_model *m)
{
    if (m->dtype_bytes == 4)
        return "fp32";
    return m->bf16 ? "bf16" : "fp16";
}

void export_header(const export_ctx *x, util_buf *b, const char *what)
{
    const fmt_strategy *s = x->s;
    char src[256], mn[sizeof x->m->name], cn[sizeof x->c->name];
    int i;

    util_buf_printf(b, "# %s\n", what);
    util_buf_printf(b, "# generated by hetplan %s from plan '%s', strategy %d\n",
              HETPLAN_VERSION,
              export_clean(src, sizeof src, x->o->source ? x->o->source : "(unnamed)"),
              x->o->strategy);
    util_buf_printf(b, "# model '%s' on cluster '%s': tp %d, dp %d, pp %d, "
                 "micro-batch %d, %d micro-batches, global batch %d, %s\n",
              export_clean(mn, sizeof mn, x->m->name),
              export_clean(cn, sizeof cn, x->c->name), s->tp, s->dp, s->pp, s->mbs, s->gas,
              x->global_batch, export_precision(x->m));
    util_buf_printf(b, "# virtual stages %d, sequence parallel %s, recomputation "
                    "%s, ZeRO stage %d; stages (first-last layer, inclusive):",
                    s->vpp > 1 ? s->vpp : 1, s->sp > 0 ? "on" : "off",
                    fmt_recompute_name(export_recompute(x)) ?
                        fmt_recompute_name(export_recompute(x)) : "?",
                    export_zero(x));
    for (i = 0; i < s->pp; i++)
        util_buf_printf(b, " %d-%d", s->bounds[i], s->bounds[i + 1] - 1);
    util_buf_printf(b, "\n");
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER)
        util_buf_printf(b, "# optimizer state and step offloaded to host "
                        "memory and CPU (ZeRO-Offload)\n");
    {   /* the plan's communication overlap (docs/time-model.md) */
        int g = cost_strategy_overlap(x->p, s, COST_OVERLAP_GRAD) && s->dp > 1;
        int w = cost_strategy_overlap(x->p, s, COST_OVERLAP_PARAM);
        int t = cost_strategy_overlap(x->p, s, COST_OVERLAP_TP);
        int q = cost_strategy_overlap(x->p, s, COST_OVERLAP_P2P) && s->pp > 1;
        const char *name[4] = {"gradient reduction", "weight all-gather",
                               "TP collectives", "pipeline P2P"};
        int on[4] = {g, w, t, q}, k, n = 0;
        for (k = 0; k < 4; k++)
            if (on[k])
                util_buf_printf(b, "%s%s", n++ ? ", " : "# planned with "
                                "communication behind compute: ", name[k]);
        if (n > 0)
            util_buf_printf(b, "\n");
    }
    for (i = 0; i < x->out->nnotes; i++)
        util_buf_printf(b, "# %s: %s\n", x->out->approx[i] ? "APPROXIMATION" : "NOTE",
                        x->out->notes[i]);
}

void export_add_file(export_ctx *x, const char *name, const char *what,
                     int executable, char *text)
{
    export_file *f = &x->out->files[x->out->nfiles++];

    snprintf(f->name, sizeof f->name, "%s", name);
    snprintf(f->what, sizeof f->what, "%s", what);
    f->executable = executable;
    f->text = text;
}

void export_tf32_env(const export_ctx *x, util_buf *b)
{
    if (x->m->dtype_bytes < 4)
        return;
    if (cost_tf32(x->m, x->p))
        util_buf_printf(b, "# fp32 matrix multiplications on TF32 tensor cores, "
                        "as the plan's times assume\n"
                        "export TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1\n"
                        "unset NVIDIA_TF32_OVERRIDE\n");
    else
        util_buf_printf(b, "# fp32 matrix multiplications on the fp32 units, "
                        "not TF32, as the plan's times assume\n"
                        "export NVIDIA_TF32_OVERRIDE=0\n");
}

void export_script_header(const export_ctx *x, util_buf *b, const char *what)
{
    util_buf_printf(b, "#!/bin/sh\n");
    export_header(x, b, what);
}

/* UTIL_EINVAL unless every rank is on its own device of c. */
static int ranks_check(const fmt_cluster *c, const fmt_strategy *s,
                       util_error *err)
{
    int r, n = s->tp * s->dp * s->pp, rc = UTIL_OK;
    int *owner = malloc((size_t)c->ndevices * sizeof *owner);

    if (owner == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (r = 0; r < c->ndevices; r++)
        owner[r] = -1;
    for (r = 0; r < n && rc == UTIL_OK; r++) {
        int dev = s->ranks[r];
        if (dev < 0 || dev >= c->ndevices)
            rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                "rank %d is on device %d, outside 0..%d", r,
                                dev, c->ndevices - 1);
        else if (owner[dev] >= 0)
            rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                "ranks %d and %d are both on device %d",
                                owner[dev], r, dev);
        else
            owner[dev] = r;
    }
    free(owner);
    return rc;
}

/* The note naming the GPUs no rank runs on, node by node ("host 'a':
 * 4 x T4 (all), host 'b': GPUs 2,3 of 8 x V100"). */
static int idle_note(export_ctx *x, util_error *err)
{
    const fmt_cluster *c = x->c;
    util_buf b = {0};
    fmt_rank_index ix;
    int k, g, nodes = 0, more = 0;

    x->idle = c->ndevices - x->nranks;
    x->out->ranks = x->nranks;
    x->out->idle = x->idle;
    if (x->idle == 0)
        return UTIL_OK;
    if (fmt_rank_index_build(&ix, x->s, c->ndevices) != UTIL_OK)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (k = 0; k < c->nnodes; k++) {
        const fmt_node *nd = &c->nodes[k];
        int used = 0, n = 0;
        char host[64], type[32];
        for (g = 0; g < nd->gpus; g++)
            used += fmt_rank_index_get(&ix, nd->first_device + g) >= 0;
        if (used == nd->gpus)
            continue;
        if (b.len > 180) { /* the note has room for about 400 bytes */
            more++;
            continue;
        }
        util_buf_printf(&b, "%shost '%s': ", nodes++ ? "; " : "",
                        export_clean(host, sizeof host, nd->name));
        if (used == 0)
            util_buf_printf(&b, "all %d x %s", nd->gpus,
                            export_clean(type, sizeof type, export_type_of(x, k)));
        else {
            util_buf_printf(&b, "GPU%s ", nd->gpus - used > 1 ? "s" : "");
            for (g = 0; g < nd->gpus; g++)
                if (fmt_rank_index_get(&ix, nd->first_device + g) < 0)
                    util_buf_printf(&b, "%s%d", n++ ? "," : "", g);
            util_buf_printf(&b, " of %d x %s", nd->gpus,
                            export_clean(type, sizeof type, export_type_of(x, k)));
        }
    }
    fmt_rank_index_free(&ix);
    if (more > 0)
        util_buf_printf(&b, "; and %d more host%s (ranks.txt of the torchrun "
                        "export lists every idle GPU)", more, more > 1 ? "s" : "");
    if (b.failed) {
        free(b.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    export_note(x, "the strategy runs %d ranks (world size tp %d x dp %d x "
                "pp %d) and leaves %d of the cluster's %d GPUs idle, which "
                "the files leave out: %s", x->nranks, x->s->tp, x->s->dp,
                x->s->pp, x->idle, c->ndevices, b.p ? b.p : "?");
    free(b.p);
    if (x->o->idle_reason != NULL && x->o->idle_reason[0] != '\0')
        export_note(x, "the plan leaves them idle: %s", x->o->idle_reason);
    return UTIL_OK;
}

/* ---- entry point ----------------------------------------------------- */

int export_build(int target, const fmt_cluster *c, const fmt_model *m,
                 const cost_params *p, const fmt_strategy *s, int global_batch,
                 const export_options *o, export_result *out, util_error *err)
{
    export_ctx x;
    export_options defaults;
    int rc = UTIL_OK;

    memset(&x, 0, sizeof x);
    if (out == NULL)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL, "no output");
    memset(out, 0, sizeof *out);
    out->target = target;
    if (o == NULL) {
        export_options_init(&defaults);
        o = &defaults;
    }
    if (export_target_name(target) == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "unknown export target %d", target);
        goto done;
    }
    if (c == NULL || m == NULL || p == NULL || s == NULL || s->ranks == NULL ||
        s->bounds == NULL || c->device_node == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "export needs a cluster, a model and a strategy");
        goto done;
    }
    if (s->tp < 1 || s->dp < 1 || s->pp < 1 ||
        s->tp * s->dp * s->pp > c->ndevices) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "strategy tp %d x dp %d x pp %d needs more than "
                            "the cluster's %d devices", s->tp, s->dp, s->pp,
                            c->ndevices);
        goto done;
    }
    if ((rc = ranks_check(c, s, err)) != UTIL_OK)
        goto done;
    if (s->bounds[0] != 0 || s->bounds[s->pp] != m->nlayers) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "stage boundaries must run from 0 to %d", m->nlayers);
        goto done;
    }
    if (o->master_port < 1 || o->master_port > 65535) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "master port must be in 1..65535, got %d",
                            o->master_port);
        goto done;
    }
    x.c = c;
    x.m = m;
    x.p = p;
    x.s = s;
    x.o = o;
    x.global_batch = global_batch;
    x.nranks = s->tp * s->dp * s->pp;
    x.out = out;
    if ((rc = make_groups(&x, err)) != UTIL_OK)
        goto done;
    if ((rc = idle_note(&x, err)) != UTIL_OK)
        goto done;
    out->version = o->version;
    if (export_version_name(target, o->version) == NULL) {
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "unknown %s version %d", export_target_name(target),
                            o->version);
        goto done;
    }
    if (target != EXPORT_HOSTFILE &&
        (rc = export_target_caps(target, o->version, &x.caps, err)) != UTIL_OK)
        goto done;
    if ((rc = precision_check(&x, err)) != UTIL_OK)
        goto done;
    if (global_batch != s->mbs * s->gas * s->dp &&
        (target == EXPORT_MEGATRON || target == EXPORT_DEEPSPEED))
        export_approx(&x, "global batch %d is not micro-batch %d x %d "
                      "micro-batches x dp %d; %s derives the micro-batch "
                      "count from the global batch", global_batch, s->mbs,
                      s->gas, s->dp, target == EXPORT_MEGATRON ? "Megatron-LM"
                                                               : "DeepSpeed");
    switch (target) {
    case EXPORT_MEGATRON:
        rc = export_megatron(&x, err);
        break;
    case EXPORT_DEEPSPEED:
        rc = export_deepspeed(&x, err);
        break;
    case EXPORT_TORCHRUN:
        rc = export_torchrun(&x, err);
        break;
    default:
        rc = export_hostfile(&x, err);
        break;
    }
    if (rc == UTIL_OK && out->napprox > 0 && !o->approximate) {
        int i;
        for (i = 0; i < out->nnotes && !out->approx[i]; i++)
            ;
        rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                            "%s%s%s cannot express the plan exactly (%d "
                            "approximation%s, first: %s); --approximate "
                            "accepts the stated approximations",
                            export_target_name(target),
                            export_release(&x)[0] ? " " : "", export_release(&x),
                            out->napprox, out->napprox > 1 ? "s" : "",
                            i < out->nnotes ? out->notes[i] : "?");
    }
done:
    free(x.g);
    free(x.node_groups);
    if (rc != UTIL_OK) {
        /* the files go; the notes stay to say what was refused */
        int i;
        for (i = 0; i < out->nfiles && i < EXPORT_MAXFILES; i++)
            free(out->files[i].text);
        memset(out->files, 0, sizeof out->files);
        out->nfiles = 0;
        out->target = target;
    }
    return rc;
}
