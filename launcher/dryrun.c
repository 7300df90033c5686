/* launcher/dryrun.c: what every process of a multi-rank launch would
 * run (plan rank, device, groups, schedule, message sizes), after the
 * plan is checked against the world and this machine's GPUs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

void launch_dry_input_init(launch_dry_input *in)
{
    memset(in, 0, sizeof *in);
    in->order = LAUNCH_ORDER_MEGATRON;
    in->only = -1;
    in->local_gpus = -1;
}

int launch_local_gpus(void)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    DIR *dir;
    struct dirent *e;
    int n = 0;

    if (v) {
        const char *p;
        if (!*v)
            return 0;
        for (n = 1, p = v; *p; p++)
            n += *p == ',';
        return n;
    }
    dir = opendir("/proc/driver/nvidia/gpus");
    if (!dir)
        return -1;
    while ((e = readdir(dir)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(dir);
    return n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int launch_local_gpu_names(char names[][64], int cap)
{
    DIR *dir;
    struct dirent *e;
    char *bus[256];
    int n = 0, i, got = 0;

    if (getenv("CUDA_VISIBLE_DEVICES") || !(dir = opendir("/proc/driver/nvidia/gpus")))
        return 0;
    while ((e = readdir(dir)) != NULL && n < 256)
        if (e->d_name[0] != '.' && (bus[n] = malloc(strlen(e->d_name) + 1)) != NULL)
            strcpy(bus[n++], e->d_name);
    closedir(dir);
    qsort(bus, (size_t)n, sizeof *bus, by_name);
    for (i = 0; i < n; i++) {
        char path[512], line[256];
        FILE *f;
        snprintf(path, sizeof path, "/proc/driver/nvidia/gpus/%s/information", bus[i]);
        if (got < cap && (f = fopen(path, "r")) != NULL) {
            names[got][0] = '\0';
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "Model:", 6) == 0) {
                    char *v = line + 6;
                    while (*v == ' ' || *v == '\t')
                        v++;
                    v[strcspn(v, "\n")] = '\0';
                    snprintf(names[got], 64, "%.63s", v);
                }
            fclose(f);
            got += names[got][0] != '\0';
        }
        free(bus[i]);
    }
    return got;
}

static double mib(double b)
{
    return b / 1048576.0;
}

static void put_group(util_buf *o, const char *name, const fmt_strategy *s,
                      int kind, int r)
{
    int m[4096], n, i, idx = 0;

    n = launch_group(s, kind, r, m, 4096, &idx);
    util_buf_printf(o, " %s #%d [", name, idx);
    for (i = 0; i < n && i < 4096; i++)
        util_buf_printf(o, "%s%d", i ? " " : "", m[i]);
    util_buf_printf(o, "]");
}

/* One process's lines. */
static int describe(util_buf *o, const plan_doc *d, const fmt_strategy *s,
                    int proc, int r, util_error *err)
{
    launch_coord c;
    launch_sizes z;
    launch_pass *ps;
    const fmt_device_type *dt;
    int vpp = s->vpp > 1 ? s->vpp : 1, np, k, rc;

    if (r < 0) {
        util_buf_printf(o, "rank %d: idle (the plan leaves cluster device %d unused)\n",
                        proc, proc);
        return UTIL_OK;
    }
    launch_coord_of(&d->cluster, s, r, &c);
    dt = fmt_device(&d->cluster, c.device);
    util_buf_printf(o, "rank %d: plan rank %d, stage %d, dp %d, tp %d; cluster device "
                       "%d (%s, node '%s'); layers %d-%d\n",
                    proc, r, c.stage, c.dpi, c.tpi, c.device, dt ? dt->name : "?",
                    c.node >= 0 ? d->cluster.nodes[c.node].name : "?",
                    s->bounds[c.stage], s->bounds[c.stage + 1] - 1);
    util_buf_printf(o, "  groups (plan ranks):");
    put_group(o, "tp", s, LAUNCH_GROUP_TP, r);
    put_group(o, "pp", s, LAUNCH_GROUP_PP, r);
    put_group(o, "dp", s, LAUNCH_GROUP_DP, r);
    put_group(o, "embed", s, LAUNCH_GROUP_EMBED, r);
    util_buf_printf(o, "\n");
    if ((rc = launch_sizes_of(d, s, r, &z, err)) != UTIL_OK)
        return rc;
    util_buf_printf(o, "  per micro-batch:");
    if (s->pp > 1) {
        for (k = 0; k < vpp; k++) {
            int v = k * s->pp + c.stage;
            if (v > 0)
                util_buf_printf(o, " recv activation %.3f MiB from stage %d, send its "
                                   "gradient back;", mib(z.act_bytes[v - 1]),
                                (v - 1) % s->pp);
            if (v < s->pp * vpp - 1)
                util_buf_printf(o, " send activation %.3f MiB to stage %d;",
                                mib(z.act_bytes[v]), (v + 1) % s->pp);
        }
    }
    if (z.tp_fwd > 0)
        util_buf_printf(o, " TP %d + %d %s of %.3f MiB (%.3f MiB fwd + %.3f MiB bwd)",
                        z.tp_fwd, z.tp_bwd,
                        s->sp ? "reduce-scatter + all-gather pairs" : "all-reduces",
                        mib(z.tp_bytes), mib(z.tp_fwd_bytes), mib(z.tp_bwd_bytes));
    else if (s->pp == 1)
        util_buf_printf(o, " no point-to-point or TP traffic");
    util_buf_printf(o, "\n  per iteration: %.0f parameters (%.3f MiB weights, %.3f MiB "
                       "gradients);", z.params, mib(z.weight_bytes), mib(z.grad_bytes));
    if (z.dp_allreduce > 0)
        util_buf_printf(o, " DP all-reduce %.3f MiB", mib(z.dp_allreduce));
    else if (z.dp_rs > 0)
        util_buf_printf(o, " distributed optimizer: reduce-scatter %.3f MiB, all-gather "
                           "%.3f MiB", mib(z.dp_rs), mib(z.dp_ag));
    else
        util_buf_printf(o, " no DP traffic");
    if (z.embed_bytes > 0)
        util_buf_printf(o, "; tied embedding all-reduce %.3f MiB", mib(z.embed_bytes));
    if (z.host_grad_bytes > 0 || z.host_weight_bytes > 0)
        util_buf_printf(o, "; optimizer offload: gradients %.3f MiB to the host, weights "
                           "%.3f MiB back", mib(z.host_grad_bytes), mib(z.host_weight_bytes));
    util_buf_printf(o, "\n");
    {
        cost_memory mem;
        cost_rank_stage_memory(&d->model, &d->params, s, r, &mem);
        cost_runtime_apply(&d->cluster, &d->params, s, r, &mem);
        util_buf_printf(o, "  memory model: %.2f GiB peak (weights %.2f, gradients %.2f, "
                           "optimizer %.2f, activations %.2f, pipeline buffers %.2f GiB)\n",
                        mem.total / 1073741824.0, mem.weights / 1073741824.0,
                        mem.grads / 1073741824.0, mem.optimizer / 1073741824.0,
                        mem.activations / 1073741824.0, mem.buffers / 1073741824.0);
        if (mem.host > 0.0)
            util_buf_printf(o, "  host memory: %.2f GiB of offloaded optimizer state\n",
                            mem.host / 1073741824.0);
    }
    launch_sizes_free(&z);
    ps = malloc((size_t)(2 * s->gas * vpp) * sizeof *ps);
    if (!ps)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    np = launch_passes(s->schedule, vpp, c.stage, s->pp, s->gas, ps, 2 * s->gas * vpp,
                       err);
    if (np < 0) {
        free(ps);
        return UTIL_EINVAL;
    }
    util_buf_printf(o, "  schedule (F/B micro-batch%s):", vpp > 1 ? ".chunk" : "");
    for (k = 0; k < np; k++) {
        if (vpp > 1)
            util_buf_printf(o, " %c%d.%d", ps[k].bwd ? 'B' : 'F', ps[k].micro, ps[k].chunk);
        else
            util_buf_printf(o, " %c%d", ps[k].bwd ? 'B' : 'F', ps[k].micro);
    }
    util_buf_printf(o, "\n");
    free(ps);
    return UTIL_OK;
}

int launch_dry_run(const plan_doc *d, const launch_work *w,
                   const launch_dry_input *in, char **text, int *warnings,
                   util_error *err)
{
    const fmt_strategy *s = &d->s[w->strategy];
    util_buf o = {0};
    int world, proc, r, rc = UTIL_OK, warn = 0, local, node, most = 0;
    fmt_rank_index ix = {NULL, 0};
    const char *sched = s->schedule == FMT_SCHED_GPIPE ? "gpipe"
                        : s->vpp > 1                  ? "interleaved 1f1b"
                                                      : "1f1b";

    *text = NULL;
    if (warnings)
        *warnings = 0;
    world = in->world > 0 ? in->world
            : in->order == LAUNCH_ORDER_PLAN ? d->cluster.ndevices : w->ranks;
    if ((rc = launch_plan_rank(&d->cluster, s, in->order, 0, world, &r, err)) != UTIL_OK)
        return rc;
    local = in->local_world > 0 ? in->local_world : world;
    util_buf_printf(&o, "plan '%s', strategy %d: tp %d, dp %d, pp %d, mbs %d, %d "
                        "micro-batches, %s%s, sequence parallelism %s, ZeRO stage %d, %s\n",
                    d->path, w->strategy + 1, s->tp, s->dp, s->pp, s->mbs, s->gas, sched,
                    s->vpp > 1 ? "" : "", s->sp ? "on" : "off",
                    cost_strategy_zero(&d->params, s), d->model.bf16 ? "bf16" : "fp16");
    if (s->vpp > 1)
        util_buf_printf(&o, "interleaving: %d model chunks per stage\n", s->vpp);
    util_buf_printf(&o, "world: %d processes, rank order %s; this machine: %d local "
                        "processes, ", world,
                    in->order == LAUNCH_ORDER_PLAN ? "plan (process rank = cluster device)"
                                                   : "megatron (process rank = plan rank)",
                    local);
    if (in->local_gpus < 0)
        util_buf_printf(&o, "no NVIDIA driver seen\n");
    else
        util_buf_printf(&o, "%d GPU%s visible\n", in->local_gpus,
                        in->local_gpus == 1 ? "" : "s");
    if (in->local_gpus >= 0 && local > in->local_gpus) {
        util_buf_printf(&o, "warning: %d processes would start here but only %d GPU%s "
                            "visible: a real run needs one GPU per local process\n",
                        local, in->local_gpus, in->local_gpus == 1 ? " is" : "s are");
        warn++;
    }
    /* ranks the plan puts on one node against the processes started here */
    for (node = 0; node < d->cluster.nnodes; node++) {
        int n = 0;
        for (r = 0; r < w->ranks; r++) {
            launch_coord c;
            launch_coord_of(&d->cluster, s, r, &c);
            n += c.node == node;
        }
        if (n > d->cluster.nodes[node].gpus) {
            util_buf_printf(&o, "warning: the plan puts %d ranks on node '%s', which has "
                                "%d GPUs\n", n, d->cluster.nodes[node].name,
                            d->cluster.nodes[node].gpus);
            warn++;
        }
        if (n > most)
            most = n;
    }
    if (in->local_world > 0 && in->order == LAUNCH_ORDER_MEGATRON && in->local_world < world &&
        in->local_world != most) {
        util_buf_printf(&o, "warning: %d processes per machine, the plan puts up to %d "
                            "ranks on one node: its placement is not kept\n",
                        in->local_world, most);
        warn++;
    }
    /* plan order: the rank of each device from an index, not a scan of
       the ranks per process */
    if (in->order == LAUNCH_ORDER_PLAN && in->only < 0 &&
        fmt_rank_index_build(&ix, s, d->cluster.ndevices) != UTIL_OK) {
        free(o.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (proc = in->only >= 0 ? in->only : 0; proc < (in->only >= 0 ? in->only + 1 : world);
         proc++) {
        int lr = proc - in->local_first;
        if (ix.rank_of != NULL) /* world is the cluster's devices (checked) */
            r = fmt_rank_index_get(&ix, proc);
        else if ((rc = launch_plan_rank(&d->cluster, s, in->order, proc, world, &r,
                                        err)) != UTIL_OK) {
            free(o.p);
            return rc;
        }
        if ((rc = describe(&o, d, s, proc, r, err)) != UTIL_OK) {
            fmt_rank_index_free(&ix);
            free(o.p);
            return rc;
        }
        /* the local GPU against the plan's device type */
        if (r >= 0 && in->local_names && lr >= 0 && lr < in->local_gpus && lr < local) {
            const fmt_device_type *dt = fmt_device(&d->cluster, s->ranks[r]);
            char type[32];
            prof_device_type_of(in->local_names[lr], type);
            if (dt && strcmp(type, dt->name) != 0) {
                util_buf_printf(&o, "warning: rank %d would run on local GPU %d '%s' (%s), "
                                    "the plan assumed '%s'\n", proc, lr,
                                in->local_names[lr], type, dt->name);
                warn++;
            }
        }
    }
    fmt_rank_index_free(&ix);
    if (!(*text = util_buf_take(&o)))
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    if (warnings)
        *warnings = warn;
    return UTIL_OK;
}
