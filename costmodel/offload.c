/* costmodel/offload.c: optimizer offload (ZeRO-Offload, Ren et al.,
 * USENIX ATC'21): the optimizer state of a rank's shard in host memory,
 * the step on the host CPU, gradients and weights crossing the GPU's
 * host link every iteration (docs/time-model.md and
 * docs/memory-model.md, "Optimizer offload").  Pure functions, no I/O. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GBS 1e9

/* Host side of a node by GPU generation (first row whose tag the device
 * name contains):
 * pcie: achievable host <-> GPU bandwidth per GPU and direction.  PCIe
 *   3.0 x16 15.75 GB/s raw, about 12 GB/s reached; 4.0 x16 31.5 GB/s,
 *   about 25 GB/s (cudaMemcpy from pinned memory, NVIDIA bandwidthTest on
 *   DGX A100); 5.0 x16 63 GB/s, about 50 GB/s (DGX H100); GH200's
 *   NVLink-C2C 900 GB/s both ways, 450 GB/s each (NVIDIA Grace Hopper
 *   Superchip Architecture whitepaper, 2023).
 * host: peak DRAM bandwidth of the node's CPUs, channels x transfer rate
 *   x 8 bytes: DGX-1 (2 Xeon E5-2698 v4, 4 DDR4-2400 channels each)
 *   153.6 GB/s; DGX A100 (2 EPYC 7742, 8 DDR4-3200 each) 409.6 GB/s;
 *   DGX H100 (2 Xeon 8480C, 8 DDR5-4800 each) 614.4 GB/s; Grace's
 *   LPDDR5X up to 512 GB/s per superchip (one GPU).  memory_eff of it is
 *   reached, as on the GPU. */
typedef struct host_gen {
    const char *tag;
    double pcie, host;     /* B/s */
} host_gen;

static const host_gen gens[] = {
    {"GH", 450 * GBS, 512 * GBS},   /* GH200: NVLink-C2C, LPDDR5X */
    {"H100", 50 * GBS, 614.4 * GBS},
    {"H200", 50 * GBS, 614.4 * GBS},
    {"H800", 50 * GBS, 614.4 * GBS},
    {"L40", 25 * GBS, 409.6 * GBS},
    {"L4", 25 * GBS, 409.6 * GBS},
    {"A100", 25 * GBS, 409.6 * GBS},
    {"A800", 25 * GBS, 409.6 * GBS},
    {"A10", 25 * GBS, 409.6 * GBS},
    {"A30", 25 * GBS, 409.6 * GBS},
    {"A40", 25 * GBS, 409.6 * GBS},
    {"4090", 25 * GBS, 409.6 * GBS},
    {"3090", 25 * GBS, 409.6 * GBS},
};
/* anything older or unknown: PCIe 3.0 x16 in a DGX-1 class host */
static const host_gen gen_default = {"", 12 * GBS, 153.6 * GBS};

void cost_offload_links(const fmt_cluster *c, int n, double *pcie,
                        double *host)
{
    const fmt_node *nd = &c->nodes[n];
    const host_gen *g = &gen_default;
    size_t i;

    for (i = 0; i < sizeof gens / sizeof gens[0]; i++)
        if (cost_name_has_tag(c->types[nd->type].name, gens[i].tag)) {
            g = &gens[i];
            break;
        }
    *pcie = nd->pcie_bw > 0.0 ? nd->pcie_bw : g->pcie;
    *host = nd->host_bw > 0.0 ? nd->host_bw : g->host;
}

/* Trained parameters of stage j one rank holds at TP degree tp (the
 * optimizer's, before ZeRO sharding). */
static double stage_params(const fmt_model *m, const cost_params *p,
                           const fmt_strategy *s, int j)
{
    double n = 0.0;
    int l;

    for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
        if (l >= p->frozen_layers)
            n += m->layers[l].params;
    return n / (double)s->tp;
}

/* Parameters whose optimizer state rank r steps: its stage's, divided
 * over the DP group under ZeRO >= 1 (Rajbhandari et al. 2020, sec. 5). */
static double rank_shard(const fmt_model *m, const cost_params *p,
                         const fmt_strategy *s, int r)
{
    double n = stage_params(m, p, s, r / (s->tp * s->dp));

    return p->zero_stage >= 1 && s->dp > 1 ? n / (double)s->dp : n;
}

double cost_offload_step(const fmt_cluster *c, const fmt_model *m,
                         const cost_params *p, const fmt_strategy *s, int j,
                         double window)
{
    double w, g, o, worst = 0.0, bytes = cost_optimizer_bytes(m, p);
    double *node_params;
    int nr = s->tp * s->dp * s->pp, r;
    cost_params q = *p;

    q.zero_stage = 0; /* per-parameter bytes, before sharding */
    cost_state_bytes(m, &q, 1, &w, &g, &o);
    node_params = calloc((size_t)c->nnodes, sizeof *node_params);
    if (node_params == NULL)
        return HUGE_VAL;
    /* every rank steps at once: a node's DRAM serves all its ranks */
    for (r = 0; r < nr; r++)
        node_params[c->device_node[s->ranks[r]]] += rank_shard(m, p, s, r);
    for (r = j * s->tp * s->dp; r < (j + 1) * s->tp * s->dp; r++) {
        int n = c->device_node[s->ranks[r]];
        double pcie, host, shard = rank_shard(m, p, s, r), d2h, adam, h2d, t;
        cost_offload_links(c, n, &pcie, &host);
        /* ZeRO-Offload sec. 4.2: the gradients (g bytes each) go to host
         * memory as the backward produces them, hidden behind it up to
         * window; the CPU runs Adam, streaming the optimizer step's bytes
         * per parameter through DRAM (memory-bound, as on the GPU:
         * cost_optimizer_bytes); the updated 16-bit weights (w bytes)
         * return.  The one-step delayed update (sec. 5.2), which hides
         * the step behind the next forward, is not modelled */
        d2h = shard * g / pcie - window;
        if (d2h < 0.0)
            d2h = 0.0;
        adam = node_params[n] * bytes / (host * p->memory_eff);
        h2d = shard * w / pcie;
        t = d2h + adam + h2d;
        if (t > worst)
            worst = t;
    }
    free(node_params);
    return worst;
}

int cost_host_fits(const fmt_cluster *c, const fmt_model *m,
                   const cost_params *p, const fmt_strategy *s,
                   cost_result *r)
{
    double *host, stage_host = 0.0, worst = INFINITY;
    int nr = s->tp * s->dp * s->pp, k, n, any = 0, fits = 1;
    int plain = s->tp_heads == NULL; /* every rank of a stage alike */

    r->host_bytes = 0.0;
    r->host_cap = 0.0;
    r->host_node = -1;
    if (cost_strategy_offload(p, s) != FMT_OFFLOAD_OPTIMIZER)
        return 1;
    host = calloc((size_t)c->nnodes, sizeof *host);
    if (host == NULL)
        return 0;
    for (k = 0; k < nr; k++) {
        cost_memory mem;
        if (!plain || k % (s->tp * s->dp) == 0) {
            cost_rank_stage_memory(m, p, s, k, &mem);
            stage_host = mem.host;
        }
        host[c->device_node[s->ranks[k]]] += stage_host;
    }
    for (n = 0; n < c->nnodes; n++) {
        if (host[n] <= 0.0)
            continue;
        if (!any || c->nodes[n].host_mem - host[n] < worst) {
            worst = c->nodes[n].host_mem - host[n];
            r->host_bytes = host[n];
            r->host_cap = c->nodes[n].host_mem;
            r->host_node = n;
            any = 1;
        }
        if (host[n] > c->nodes[n].host_mem)
            fits = 0;
    }
    free(host);
    return fits;
}
