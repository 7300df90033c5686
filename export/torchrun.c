/* export/torchrun.c: torchrun per-node launch lines (also used by the
 * Megatron-LM export), the rank placement file and the MPI
 * hostfile. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define HOST_N 64 /* = sizeof fmt_node.name */
#define TYPE_N 32 /* = sizeof fmt_device_type.name */

/* ---- torchrun agents ------------------------------------------------- */

/* The rank range text "a-b" or "a". */
static void range_text(char *buf, size_t n, int a, int b)
{
    if (a == b)
        snprintf(buf, n, "%d", a);
    else
        snprintf(buf, n, "%d-%d", a, b);
}

/* Notes shared by the launch scripts about agents and hosts. */
void export_agent_notes(export_ctx *x)
{
    char hosts[240] = "";
    size_t used = 0;
    int k, n = 0;

    for (k = 0; k < x->c->nnodes; k++)
        if (x->node_groups[k] > 1) {
            if (used < sizeof hosts - 80)
                used += (size_t)snprintf(hosts + used, sizeof hosts - used,
                                         "%s'%s' runs %d agents", n ? ", " : "",
                                         export_host_of(x, k), x->node_groups[k]);
            else if (used < sizeof hosts - 5)
                used += (size_t)snprintf(hosts + used, sizeof hosts - used, ", ...");
            n++;
        }
    if (n > 0)
        export_note(x, "the plan's ranks are not consecutive on %d host%s, "
                    "so one torchrun per host cannot realise its placement; "
                    "each run of consecutive ranks gets its own torchrun "
                    "agent (node rank and GPUs): %s", n, n == 1 ? "" : "s", hosts);
}

/* The per-agent case arms of a launch script. */
void export_launch_cases(const export_ctx *x, util_buf *b, const char *cmd)
{
    int k;

    util_buf_printf(b, "case \"${NODE_RANK:?set NODE_RANK to the node rank of this agent, "
                 "0..%d}\" in\n", x->ng - 1);
    for (k = 0; k < x->ng; k++) {
        const export_group *g = &x->g[k];
        char rr[32], host[HOST_N], type[TYPE_N];
        range_text(rr, sizeof rr, g->first, g->first + g->n - 1);
        util_buf_printf(b, "%d)  # host '%s': %d x %s, global ranks %s\n", k,
                        export_clean(host, sizeof host, export_host_of(x, g->node)),
                        g->n,
                        export_clean(type, sizeof type, export_type_of(x, g->node)),
                        rr);
        util_buf_printf(b, "    export CUDA_VISIBLE_DEVICES=");
        export_gpu_list(x, g, b);
        util_buf_printf(b, "\n");
        /* underscore forms: the only ones of PyTorch 1.13, aliases in 2.x */
        util_buf_printf(b, "    exec torchrun --nnodes %d --nproc_per_node %d "
                     "--node_rank %d --master_addr ", x->ng, g->n, k);
        export_sh_word(b, x->master);
        util_buf_printf(b, " --master_port %d %s ;;\n", x->o->master_port, cmd);
    }
    util_buf_printf(b, "*)  echo \"$0: NODE_RANK must be 0..%d, got '$NODE_RANK'\" >&2\n"
                 "    exit 2 ;;\nesac\n", x->ng - 1);
}

void export_agent_table(const export_ctx *x, util_buf *b)
{
    int k;

    util_buf_printf(b, "# node rank  host                  nproc  device          "
                 "CUDA_VISIBLE_DEVICES\n");
    for (k = 0; k < x->ng; k++) {
        const export_group *g = &x->g[k];
        char host[HOST_N], type[TYPE_N];
        util_buf_printf(b, "# %9d  %-20s  %5d  %-14s  ", k,
                        export_clean(host, sizeof host, export_host_of(x, g->node)),
                        g->n,
                        export_clean(type, sizeof type, export_type_of(x, g->node)));
        export_gpu_list(x, g, b);
        util_buf_printf(b, "\n");
    }
}

/* ranks.txt: every rank's place. */
void export_ranks_file(const export_ctx *x, util_buf *b)
{
    fmt_rank_index ix;
    int k, i;

    export_header(x, b, "hetplan rank placement: global rank -> torchrun "
                  "agent, local rank, host and GPU");
    util_buf_printf(b, "# rank  node_rank  local_rank  host                  gpu  "
                 "device          stage  dp  tp\n");
    for (k = 0; k < x->ng; k++)
        for (i = 0; i < x->g[k].n; i++) {
            int r = x->g[k].first + i, node = x->g[k].node;
            int tpd = x->s->tp, dpd = x->s->dp;
            char host[HOST_N], type[TYPE_N];
            util_buf_printf(b, "%6d  %9d  %10d  %-20s  %3d  %-14s  %5d  %2d  %2d\n",
                            r, k, i,
                            export_clean(host, sizeof host, export_host_of(x, node)),
                            export_gpu_of(x, r),
                            export_clean(type, sizeof type, export_type_of(x, node)),
                            r / (tpd * dpd),
                            (r / tpd) % dpd, r % tpd);
        }
    if (x->idle <= 0)
        return;
    if (fmt_rank_index_build(&ix, x->s, x->c->ndevices) != UTIL_OK) {
        b->failed = 1;
        return;
    }
    util_buf_printf(b, "# idle GPUs (no rank runs on them):\n"
                    "# host                  gpu  device\n");
    for (k = 0; k < x->c->nnodes; k++)
        for (i = 0; i < x->c->nodes[k].gpus; i++)
            if (fmt_rank_index_get(&ix, x->c->nodes[k].first_device + i) < 0) {
                char host[HOST_N], type[TYPE_N];
                util_buf_printf(b, "# %-20s  %3d  %s\n",
                                export_clean(host, sizeof host, export_host_of(x, k)),
                                i, export_clean(type, sizeof type,
                                                export_type_of(x, k)));
            }
    fmt_rank_index_free(&ix);
}

/* ---- torchrun -------------------------------------------------------- */

/* shards.txt: every rank's attention heads and MLP columns. */
static void shards_file(const export_ctx *x, util_buf *b)
{
    int r;

    export_header(x, b, "hetplan uneven tensor-parallel shards: attention "
                  "heads and MLP columns of every rank");
    util_buf_printf(b, "# rank  stage  dp  tp  heads  mlp_columns\n");
    for (r = 0; r < x->nranks; r++)
        util_buf_printf(b, "%6d  %5d  %2d  %2d  %5d  %11d\n", r,
                        r / (x->s->tp * x->s->dp), (r / x->s->tp) % x->s->dp,
                        r % x->s->tp, x->s->tp_heads[r], x->s->tp_cols[r]);
}

/* The plan as environment variables for the training script. */
static void plan_env(const export_ctx *x, util_buf *b)
{
    const fmt_strategy *s = x->s;
    int j;

    util_buf_printf(b, "export HETPLAN_TP=%d HETPLAN_DP=%d HETPLAN_PP=%d\n",
                    s->tp, s->dp, s->pp);
    util_buf_printf(b, "export HETPLAN_MICRO_BATCH=%d HETPLAN_MICRO_BATCHES=%d "
                    "HETPLAN_GLOBAL_BATCH=%d\n", s->mbs, s->gas, x->global_batch);
    util_buf_printf(b, "export HETPLAN_PRECISION=%s HETPLAN_SCHEDULE=%s\n",
                    export_precision(x->m),
                    s->schedule == FMT_SCHED_GPIPE ? "gpipe" : "1f1b");
    util_buf_printf(b, "export HETPLAN_VIRTUAL_STAGES=%d HETPLAN_SEQUENCE_PARALLEL=%d "
                    "HETPLAN_RECOMPUTE=%s HETPLAN_ZERO=%d\n",
                    s->vpp > 1 ? s->vpp : 1, s->sp > 0,
                    fmt_recompute_name(export_recompute(x)) ?
                        fmt_recompute_name(export_recompute(x)) : "none",
                    export_zero(x));
    /* the script's to honour, e.g. DeepSpeed's offload_optimizer or
     * Megatron's --optimizer-cpu-offload: torchrun itself has none */
    util_buf_printf(b, "export HETPLAN_OFFLOAD=%s\n",
                    fmt_offload_name(export_offload(x)));
    util_buf_printf(b, "# stage i runs layers [b_i, b_(i+1)) of the model's layer list\n");
    util_buf_printf(b, "export HETPLAN_STAGE_BOUNDARIES=");
    for (j = 0; j <= s->pp; j++)
        util_buf_printf(b, "%s%d", j ? "," : "", s->bounds[j]);
    util_buf_printf(b, "\n");
    if (s->tp_heads != NULL)
        util_buf_printf(b, "export HETPLAN_TP_SHARDS=\"$(cd \"$(dirname \"$0\")\" "
                        "&& pwd)/shards.txt\"\n");
}

int export_torchrun(export_ctx *x, util_error *err)
{
    util_buf b = {0}, r = {0}, sh = {0};
    char what[200];

    export_agent_notes(x);
    if (x->s->tp_heads != NULL)
        export_note(x, "the plan splits heads and MLP columns unevenly over "
                    "the TP group: shards.txt gives every rank's share "
                    "(HETPLAN_TP_SHARDS names it)");
    snprintf(what, sizeof what, "torchrun launch (PyTorch %s), one agent per "
             "run of consecutive ranks on one host", export_release(x));
    export_script_header(x, &b, what);
    util_buf_printf(&b, "#\n# On every host, for each agent listed below for it:\n"
                  "#   NODE_RANK=k sh torchrun.sh train.py [training arguments]\n");
    util_buf_printf(&b, "# torchrun gives agent k the global ranks after those of agents "
                  "0..k-1 (RANK = that\n# offset + LOCAL_RANK); local rank i uses "
                  "the i-th GPU of CUDA_VISIBLE_DEVICES, so the\n# lists below put "
                  "every plan rank on its planned GPU (see ranks.txt).  Build the\n"
                  "# TP, DP and PP groups with TP innermost, then DP, then PP.\n"
                  "# The flags are the underscore forms, which PyTorch 1.13 and 2.x "
                  "both accept.\n#\n");
    export_agent_table(x, &b);
    util_buf_printf(&b, "\nexport CUDA_DEVICE_ORDER=PCI_BUS_ID\n");
    export_tf32_env(x, &b);
    plan_env(x, &b);
    util_buf_printf(&b, "\n");
    export_launch_cases(x, &b, "\"$@\"");
    export_ranks_file(x, &r);
    if (x->s->tp_heads != NULL)
        shards_file(x, &sh);
    if (b.failed || r.failed || sh.failed) {
        free(b.p);
        free(r.p);
        free(sh.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    export_add_file(x, "torchrun.sh",
                    "per-node torchrun lines and CUDA_VISIBLE_DEVICES", 1, b.p);
    export_add_file(x, "ranks.txt", EXPORT_RANKS_WHAT, 0, r.p);
    if (sh.p != NULL)
        export_add_file(x, "shards.txt",
                        "attention heads and MLP columns of every rank", 0, sh.p);
    return UTIL_OK;
}

/* ---- hostfile -------------------------------------------------------- */

/* Hosts in order of their first rank, slots = the host's GPUs in the plan
 * (all its GPUs when all_slots). */
void export_hostfile_text(const export_ctx *x, util_buf *b, const char *what,
                          int all_slots)
{
    int k, i;

    export_header(x, b, what);
    for (k = 0; k < x->ng; k++) {
        int node = x->g[k].node, slots = 0, seen = 0;
        for (i = 0; i < k; i++)
            if (x->g[i].node == node)
                seen = 1;
        if (seen)
            continue;
        for (i = k; i < x->ng; i++)
            if (x->g[i].node == node)
                slots += x->g[i].n;
        if (all_slots)
            slots = x->c->nodes[node].gpus;
        util_buf_printf(b, "%s slots=%d\n", export_host_of(x, node), slots);
    }
}

int export_hosts_check(const export_ctx *x, util_error *err)
{
    char host[HOST_N];
    int k;

    for (k = 0; k < x->ng; k++)
        if (!util_hostname_ok(export_host_of(x, x->g[k].node)))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "node name '%s' cannot go into a hostfile: "
                                  "expected a host name (letters, digits, "
                                  "'-' and '.')",
                                  export_clean(host, sizeof host,
                                               export_host_of(x, x->g[k].node)));
    return UTIL_OK;
}

int export_order_notes(export_ctx *x, const char *launcher, int by_list)
{
    int k;

    if (x->identity_gpus)
        return 0;
    for (k = 0; k < x->c->nnodes; k++)
        if (x->node_groups[k] > 1) {
            export_approx(x, "%s gives each host one block of consecutive "
                        "ranks, but the plan's ranks on host '%s' (and maybe "
                        "others) are not consecutive: launch with the "
                        "torchrun export instead", launcher,
                        export_host_of(x, k));
            return 0;
        }
    for (k = 0; k < x->ng; k++) {
        int i, ident = 1;
        for (i = 0; i < x->g[k].n; i++)
            if (by_list ? i > 0 && export_gpu_of(x, x->g[k].first + i) <
                                       export_gpu_of(x, x->g[k].first + i - 1)
                        : export_gpu_of(x, x->g[k].first + i) != i)
                ident = 0;
        if (!ident) {
            util_buf gl = {0};
            export_gpu_list(x, &x->g[k], &gl);
            export_approx(x, "%s gives a host's %s, but the plan puts ranks "
                        "%d-%d on GPUs %s of host '%s' (and maybe others): "
                        "launch with the torchrun export instead", launcher,
                        by_list ? "ranks its GPUs in ascending order"
                                : "n ranks its GPUs 0..n-1 in order",
                        x->g[k].first, x->g[k].first + x->g[k].n - 1,
                        gl.p ? gl.p : "?", export_host_of(x, x->g[k].node));
            free(gl.p);
            return 0;
        }
    }
    return by_list;
}

void export_include_list(const export_ctx *x, util_buf *b)
{
    int k;

    for (k = 0; k < x->ng; k++) {
        util_buf_printf(b, "%s%s:", k ? "@" : "", export_host_of(x, x->g[k].node));
        export_gpu_list(x, &x->g[k], b);
    }
}

int export_hostfile(export_ctx *x, util_error *err)
{
    util_buf b = {0};
    int rc;

    if ((rc = export_hosts_check(x, err)) != UTIL_OK)
        return rc;
    export_order_notes(x, "mpirun (--map-by slot)", 0);
    /* not offered to DeepSpeed: its launcher gives rank r local rank
     * r % slots, which misplaces a host whose first rank is not a
     * multiple of its slots; the deepspeed target writes its own */
    export_hostfile_text(x, &b, "MPI hostfile (mpirun --hostfile, slot by "
                         "slot): hosts in rank order, one slot per GPU the "
                         "plan uses; for DeepSpeed use the deepspeed export", 0);
    if (b.failed) {
        free(b.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    export_add_file(x, "hostfile", EXPORT_HOSTFILE_WHAT, 0, b.p);
    return UTIL_OK;
}
