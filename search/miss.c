/* search/miss.c: why a search found no strategy.  While nothing fits,
 * the search remembers the rejected candidate closest to fitting; when it
 * ends empty, the error names that candidate, the device it overflows
 * and what the search did not try that could make one fit (a fixed ZeRO
 * stage or recomputation level, offload without host memory in the
 * cluster file, a memory headroom, a tensor-parallel limit, fp32). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define GIB 1073741824.0

void search_note_miss(const fmt_cluster *c, const fmt_strategy *s,
                      const cost_result *r, search_result *res)
{
    int w = r->worst_rank, host;
    double short_new, short_old;

    if (res->n > 0 || r->mem_bytes == NULL || w < 0 || w >= r->nranks)
        return;
    /* the GPUs fit, the host memory of an offloading node does not */
    host = r->mem_bytes[w] <= r->mem_cap[w] && r->host_node >= 0 &&
           r->host_bytes > r->host_cap;
    short_new = host ? r->host_bytes - r->host_cap : r->mem_bytes[w] - r->mem_cap[w];
    short_old = res->miss.need - res->miss.cap;
    if (res->miss.need > 0.0 && short_new >= short_old)
        return;
    res->miss.host_short = host;
    if (host)
        memcpy(res->miss.host_node, c->nodes[r->host_node].name,
               sizeof res->miss.host_node); /* both 64 bytes */
    res->miss.tp = s->tp;
    res->miss.dp = s->dp;
    res->miss.pp = s->pp;
    res->miss.mbs = s->mbs;
    res->miss.stage = w / (s->tp * s->dp);
    res->miss.device = s->ranks[w];
    res->miss.need = host ? r->host_bytes : r->mem_bytes[w];
    res->miss.cap = host ? r->host_cap : r->mem_cap[w];
}

/* Append one remedy to the list in buf, "; " between two. */
static void add(char *buf, size_t n, int *k, const char *text)
{
    size_t used = strlen(buf);

    if (used + 1 >= n)
        return;
    snprintf(buf + used, n - used, "%s%s", *k > 0 ? "; " : "", text);
    (*k)++;
}

/* What could make a strategy fit that the search did not try: the
 * features it held fixed, offload it could not try, the memory it kept
 * free, its TP limit, 16-bit training; then more GPUs. */
static void remedies(const fmt_cluster *c, const fmt_model *m,
                     const cost_params *cp, const search_params *sp, char *buf,
                     size_t n)
{
    char t[96];
    int k = 0, i, nohost = 0, big = 0;
    int zero = sp->method == SEARCH_METHOD_MEGATRON ? cp->zero_stage : sp->zero;
    int rec = sp->method == SEARCH_METHOD_MEGATRON ? cp->recompute : sp->recompute;

    buf[0] = '\0';
    if (zero >= 0 && zero < 3) {
        snprintf(t, sizeof t, "ZeRO above stage %d (held fixed)", zero);
        add(buf, n, &k, t);
    }
    if (rec >= 0 && rec != FMT_RECOMPUTE_FULL) {
        snprintf(t, sizeof t, "full recomputation ('%s' held fixed)",
                 fmt_recompute_name(rec));
        add(buf, n, &k, t);
    }
    for (i = 0; i < c->nnodes; i++) {
        if (c->nodes[i].host_mem <= 0.0)
            nohost = 1;
        if (c->nodes[i].gpus > big)
            big = c->nodes[i].gpus;
    }
    if (sp->offload == FMT_OFFLOAD_NONE)
        add(buf, n, &k, "optimizer offload (held off)");
    else if (sp->offload < 0 && nohost)
        add(buf, n, &k, "optimizer offload (needs host_memory_gib on every node)");
    if (sp->memory_headroom > 0.0) {
        snprintf(t, sizeof t, "less headroom (%.0f%% kept free)",
                 100.0 * sp->memory_headroom);
        add(buf, n, &k, t);
    }
    if (sp->max_tp > 0 && sp->max_tp < big) {
        snprintf(t, sizeof t, "tensor parallelism above %d (the limit)", sp->max_tp);
        add(buf, n, &k, t);
    }
    if (m->dtype_bytes >= 4)
        add(buf, n, &k, "16-bit mixed precision (the model trains in fp32)");
    add(buf, n, &k, "more GPUs or GPUs with more memory");
}

int search_explain_none(const fmt_cluster *c, const fmt_model *m,
                        const cost_params *cp, const search_params *sp,
                        const search_result *out, util_error *err)
{
    const search_memory_miss *x = &out->miss;
    char try[320];

    if (x->need > 0.0 && x->host_short)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no strategy fits in memory: the closest (tp %d, dp "
                              "%d, pp %d, mbs %d) fits its GPUs but offloads %.2f "
                              "GiB of optimizer state to node '%s', which has %.2f "
                              "GiB of host memory; %ld candidates rejected for "
                              "memory, %ld for divisibility (try more host memory "
                              "or more GPUs)",
                              x->tp, x->dp, x->pp, x->mbs, x->need / GIB,
                              x->host_node, x->cap / GIB, out->rejected_memory,
                              out->rejected_other);
    remedies(c, m, cp, sp, try, sizeof try);
    if (x->need > 0.0)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no strategy fits in memory: the closest (tp %d, dp "
                              "%d, pp %d, mbs %d) needs %.2f GiB on device %d (%s, "
                              "stage %d), which has %.2f GiB; %ld candidates "
                              "rejected for memory, %ld for divisibility (try: %s)",
                              x->tp, x->dp, x->pp, x->mbs, x->need / GIB, x->device,
                              fmt_device(c, x->device)->name, x->stage,
                              x->cap / GIB, out->rejected_memory,
                              out->rejected_other, try);
    /* a fixed interleaving that no point admits says so first */
    if (out->space == 0 && sp->vpp > 1 && sp->method == SEARCH_METHOD_AMP)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no strategy runs %d model chunks per device: "
                              "interleaving needs pp >= 2, the 1f1b schedule, "
                              "a micro-batch count divisible by pp and at least "
                              "pp chunks of %d blocks (model '%s' has %d blocks)",
                              sp->vpp, sp->vpp, m->name, search_blocks(m));
    if (out->rejected_stages > 0 && out->rejected_memory == 0)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no runnable strategy: model '%s' has %d layers "
                              "holding parameters, and every pipeline stage needs "
                              "one (%ld candidates with more stages ruled out, %ld "
                              "for divisibility)", m->name, cost_param_layers(m),
                              out->rejected_stages,
                              out->rejected_other - out->rejected_stages);
    if (out->rejected_memory == 0 && out->rejected_cells > 0)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no strategy: all %ld candidates were ruled out "
                              "before memory, %ld of them because their stages x "
                              "layers (model '%s' has %d layers) are more than "
                              "the %ld cells the layer assignment holds%s",
                              out->rejected_other, out->rejected_cells, m->name,
                              m->nlayers, (long)SEARCH_MAX_ASSIGN_CELLS,
                              out->rejected_cells < out->rejected_other
                                  ? "; the others have degrees that divide "
                                    "neither the attention heads nor the global "
                                    "batch, or that the target launcher cannot run"
                                  : " (more data parallelism, which a larger "
                                    "global batch allows, needs fewer stages)");
    if (out->rejected_memory == 0)
        return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                              "no strategy: all %ld candidates were ruled out "
                              "before memory (degrees that divide neither the "
                              "attention heads nor the global batch, or that the "
                              "target launcher cannot run)",
                              out->rejected_other);
    return util_error_set(err, UTIL_EINFEASIBLE, NULL, NULL,
                          "no strategy fits in memory: %ld candidates rejected "
                          "for memory, %ld for divisibility (try: %s)",
                          out->rejected_memory, out->rejected_other, try);
}
