/* costmodel/runtime.c: the device memory a training process holds beyond
 * the tensors of the memory model (docs/memory-model.md, "Runtime"): the
 * CUDA context with its kernel images, the cuBLAS workspaces, the NCCL
 * buffers of each communicator the rank belongs to and the caching
 * allocator's minimum segments.  Constants per device generation, each
 * with its source.  Pure functions, no I/O. */
#include <math.h>
#include <string.h>

#include "costmodel.h"
#include "internal.h"

#define MIB 1048576.0

/* NCCL buffers of one connection (one peer, one channel), bytes: the
 * Simple protocol's NCCL_BUFFSIZE (4 MiB, NCCL documentation,
 * "Environment variables"), LL128's 120 elements x 640 threads x 8 steps
 * x 8 B = 4.6875 MiB and LL's 8 lines x 512 threads x 8 steps x 16 B =
 * 0.5 MiB (NCCL_LL128_* and NCCL_LL_* in NCCL's src/include/device.h). */
#define NCCL_CONN_BYTES (4.0 * MIB + 4915200.0 + 524288.0)
/* Connections a rank holds per channel of a collective communicator: one
 * ring predecessor and a tree's parent and child (NCCL connects rings and
 * trees of every channel when the communicator first runs a collective,
 * the "Connected all rings / trees" of its log). */
#define NCCL_COLL_CONNS 3.0
/* Point-to-point (pipeline send / receive): the Simple protocol only,
 * NCCL_P2P_NVL_CHUNKSIZE 512 KiB (NVLink) or NCCL_P2P_NET_CHUNKSIZE /
 * NCCL_P2P_PCI_CHUNKSIZE 128 KiB x NCCL_STEPS 8 per channel, on
 * NCCL_NCHANNELS_PER_NET_PEER = 2 channels per peer, a send and a
 * receive connection each (NCCL documentation, "Environment variables"). */
#define NCCL_P2P_CHANNELS 2.0
/* Channels of a communicator whose ring leaves the node: 2 per NIC
 * (NCCL_NCHANNELS_PER_NET_PEER's default), one NIC per GPU; and of one
 * over PCIe or shared memory: the 2 rings NCCL's topology search finds on
 * a PCIe tree. */
#define NCCL_NET_CHANNELS 2.0
#define NCCL_PCIE_CHANNELS 2.0
/* NCCL 2.19 and later allocate device memory with cuMem (NCCL_CUMEM_ENABLE,
 * on by default), each allocation rounded up to the granularity that
 * cuMemGetAllocationGranularity reports, 2 MiB on NVIDIA GPUs.  A
 * communicator then holds, besides its connection buffers, three small
 * arrays per channel it initialises (channel.cc, initChannel: the peers,
 * the ring's ranks, a counter) and two from init.cc, 2 MiB each: with
 * NCCL 2.28.9 on an H200, NCCL_DEBUG_SUBSYS=ALLOC logs 3 x 64 + 2
 * allocations of 4 to 23,648 bytes at 2 MiB steps per one-rank
 * communicator, and the process's device memory grows by 0.407-0.409 GB
 * per communicator (scripts/measure-gpu-memory.py runtime). */
#define NCCL_GRANULE (2.0 * MIB)
#define NCCL_CHANNEL_ALLOCS 3.0
#define NCCL_INIT_ALLOCS 2.0
/* A one-rank communicator runs NCCL's MAXCHANNELS channels (64 in NCCL
 * 2.28, "64 coll channels ... 64 p2p channels" in its log); a larger one
 * initialises its collective channels rounded up to a power of two for
 * point-to-point (init.cc, p2pnChannels). */
#define NCCL_MAX_CHANNELS 64.0

/* PyTorch's caching allocator: the first segment of the small pool
 * (kSmallBuffer, 2 MiB, for requests up to 1 MiB) and of the large pool
 * (kLargeBuffer, 20 MiB, for requests up to 10 MiB; c10/cuda/
 * CUDACachingAllocator.cpp).  Larger requests get segments rounded to
 * 2 MiB (kRoundLarge), and their fragmentation depends on the order of
 * allocations: not modelled. */
#define ALLOC_SEGMENTS (2.0 * MIB + 20.0 * MIB)
/* cuBLAS handles of a training process: the forward pass's thread and
 * the autograd engine's device thread, one handle and workspace each
 * (PyTorch keeps one per thread and stream). */
#define CUBLAS_HANDLES 2.0

/* Per device generation (first row whose tag the device name contains). */
typedef struct rt_gen {
    const char *tag;
    double context;   /* CUDA context with the kernel images, bytes */
    double cublas;    /* cuBLAS workspace per handle, bytes */
    double nvlink_ch; /* NCCL channels of an NVLink ring inside a node */
} rt_gen;

/* Context: PyTorch's first CUDA call costs "0.5-2 GB" of device memory
 * for the context and the kernels it loads, growing with the GPU
 * generation and the CUDA version (Bekman, "Machine Learning
 * Engineering", "Preloaded CUDA kernels memory consumption"; Hugging Face
 * Transformers documentation, "Model training anatomy": 1.3 GB).  A
 * training process also loads cuDNN, cuBLASLt and NCCL's kernels.
 * Hopper builds carry the most images (sm_90 and sm_90a kernels of
 * PyTorch, cuBLASLt and cuDNN 9): the top of the range, 2 GB, what an
 * H200 measured with eager module loading (PyTorch 2.11, CUDA 13.0:
 * 1.32 GB at the context, 1.86 GB after cuBLAS GEMMs; lazy loading 0.55
 * and 0.72 GB, 0.79 GB after a training step); Ampere
 * and Ada the measured 1.3 GB; Volta, Turing and Pascal, without bf16
 * and TF32 kernels, 1 GB.
 * cuBLAS workspace: PyTorch's default CUBLAS_WORKSPACE_CONFIG, ":4096:8"
 * (32 MiB) on Hopper and ":4096:2:16:8" (8 MiB + 128 KiB) before
 * (aten/src/ATen/cuda/CublasHandlePool.cpp; cuBLAS documentation,
 * cublasSetWorkspace: 32 MiB recommended on Hopper, 4 MiB before).
 * NVLink channels: about two per pair of links from NCCL's ring search,
 * 32 on Hopper's 18 NVLink 4 links, 16 on Ampere (12 NVLink 3 links), 12
 * on Volta (6 NVLink 2 links); NCCL 2.28's MAXCHANNELS is 64, which only
 * a one-rank communicator reaches (measured). */
static const rt_gen gens[] = {
    {"GH", 2e9, 32.0 * MIB, 32.0},   /* GH200 */
    {"H100", 2e9, 32.0 * MIB, 32.0},
    {"H200", 2e9, 32.0 * MIB, 32.0},
    {"H800", 2e9, 32.0 * MIB, 32.0},
    {"A100", 1.3e9, 8.125 * MIB, 16.0},
    {"A800", 1.3e9, 8.125 * MIB, 16.0},
    {"A10", 1.3e9, 8.125 * MIB, 16.0},    /* A10, A10G */
    {"A30", 1.3e9, 8.125 * MIB, 16.0},
    {"A40", 1.3e9, 8.125 * MIB, 16.0},
    {"3090", 1.3e9, 8.125 * MIB, 16.0},
    {"3080", 1.3e9, 8.125 * MIB, 16.0},
    {"L4", 1.3e9, 8.125 * MIB, 16.0},     /* L4, L40, L40S (Ada) */
    {"4090", 1.3e9, 8.125 * MIB, 16.0},
    {"V100", 1e9, 8.125 * MIB, 12.0},
    {"TITAN", 1e9, 8.125 * MIB, 12.0}, /* Titan RTX, Titan V */
    {"2080", 1e9, 8.125 * MIB, 12.0},
    {"T4", 1e9, 8.125 * MIB, 12.0},
    {"P100", 1e9, 8.125 * MIB, 8.0},
};
/* Anything else (AMD parts, unknown names): the published 1.3 GB. */
static const rt_gen gen_default = {"", 1.3e9, 8.125 * MIB, 16.0};

static const rt_gen *rt_gen_of(const fmt_device_type *dt)
{
    size_t i;

    for (i = 0; i < sizeof gens / sizeof gens[0]; i++)
        if (cost_name_has_tag(dt->name, gens[i].tag))
            return &gens[i];
    return &gen_default;
}

/* Members of a communicator: the devices of strategy s at (stage, dp
 * index, tp index) = base + i * step over i < n, in rank order. */
typedef struct rt_comm {
    const fmt_strategy *s;
    int base, step, n;
} rt_comm;

/* Device memory of a communicator's own structures over ch channels:
 * nothing worth counting without cuMem, else the per-channel and init
 * allocations at 2 MiB each (channels rounded up to a power of two). */
static double comm_structs(const cost_params *p, double ch)
{
    double c2 = 1.0;

    if (!p->nccl_cumem)
        return 0.0;
    while (c2 < ch)
        c2 *= 2.0;
    return (NCCL_CHANNEL_ALLOCS * c2 + NCCL_INIT_ALLOCS) * NCCL_GRANULE;
}

/* One connection's buffers, one allocation under cuMem (rounded up). */
static double conn_bytes(const cost_params *p)
{
    if (!p->nccl_cumem)
        return NCCL_CONN_BYTES;
    return ceil(NCCL_CONN_BYTES / NCCL_GRANULE) * NCCL_GRANULE;
}

/* Channels of a communicator: the network's when its members span
 * nodes, else NVLink's or PCIe's of the node. */
static double comm_channels(const fmt_cluster *c, const rt_gen *g, rt_comm x)
{
    int i, node = c->device_node[x.s->ranks[x.base]];

    for (i = 1; i < x.n; i++)
        if (c->device_node[x.s->ranks[x.base + i * x.step]] != node)
            return NCCL_NET_CHANNELS;
    return c->nodes[node].intra_bw > COST_PCIE_MAX_BW ? g->nvlink_ch
                                                      : NCCL_PCIE_CHANNELS;
}

/* NCCL memory of one collective communicator, per rank: channels x
 * connections per channel x buffers per connection, and the
 * communicator's structures.  A one-rank communicator connects to no
 * peer; it exists only where the framework calls a collective on it
 * (one_rank), and then holds the structures of NCCL's MAXCHANNELS. */
static double coll_bytes(const fmt_cluster *c, const cost_params *p,
                         const rt_gen *g, rt_comm x, int one_rank)
{
    double ch;

    if (x.n <= 1)
        return one_rank ? comm_structs(p, NCCL_MAX_CHANNELS) : 0.0;
    ch = comm_channels(c, g, x);
    return ch * NCCL_COLL_CONNS * conn_bytes(p) + comm_structs(p, ch);
}

/* NCCL buffers of the point-to-point connection between two devices. */
static double p2p_bytes(const fmt_cluster *c, int a, int b)
{
    double chunk = 128.0 * 1024.0;

    if (c->device_node[a] == c->device_node[b] &&
        c->nodes[c->device_node[a]].intra_bw > COST_PCIE_MAX_BW)
        chunk = 512.0 * 1024.0;
    return NCCL_P2P_CHANNELS * 2.0 * chunk * 8.0;
}

int cost_runtime_derived(const cost_params *p)
{
    return p->mem_reserve < 0.0;
}

double cost_runtime_memory(const fmt_cluster *c, const cost_params *p,
                           const fmt_strategy *s, int rank, cost_runtime *out)
{
    cost_runtime x;
    const rt_gen *g;
    int n = s->tp * s->dp * s->pp, g1 = s->tp * s->dp;
    int j = rank / g1, d = (rank % g1) / s->tp, t = rank % s->tp;

    memset(&x, 0, sizeof x);
    if (!cost_runtime_derived(p)) { /* stated for the stack */
        x.total = p->mem_reserve;
        if (out != NULL)
            *out = x;
        return x.total;
    }
    g = rt_gen_of(fmt_device(c, s->ranks[rank]));
    x.context = g->context;
    x.cublas = CUBLAS_HANDLES * g->cublas;
    x.allocator = ALLOC_SEGMENTS;
    {
        /* tensor-parallel group: the rank's stage and replica; data-
         * parallel group: the same shard of the stage's replicas; the
         * default (world) group, of the frameworks' barriers and loss and
         * gradient-norm reductions */
        rt_comm tpg = {s, j * g1 + d * s->tp, 1, s->tp};
        rt_comm dpg = {s, j * g1 + t, s->tp, s->dp};
        rt_comm world = {s, 0, 1, n};
        /* Megatron-LM's DDP all-reduces the gradients over the DP group
         * even when it has one rank; no framework calls a TP collective
         * at tp 1; the pipeline group carries the point-to-point
         * connections below */
        rt_comm ppg = {s, d * s->tp + t, g1, s->pp};
        x.nccl = coll_bytes(c, p, g, tpg, 0) + coll_bytes(c, p, g, dpg, n > 1) +
                 coll_bytes(c, p, g, world, 0);
        if (s->pp > 1)
            x.nccl += comm_structs(p, comm_channels(c, g, ppg));
    }
    /* pipeline neighbours, one point-to-point connection each */
    if (j > 0)
        x.nccl += p2p_bytes(c, s->ranks[rank], fmt_rank_device(s, j - 1, d, t));
    if (j + 1 < s->pp)
        x.nccl += p2p_bytes(c, s->ranks[rank], fmt_rank_device(s, j + 1, d, t));
    x.total = x.context + x.cublas + x.nccl + x.allocator;
    if (out != NULL)
        *out = x;
    return x.total;
}

double cost_runtime_apply(const fmt_cluster *c, const cost_params *p,
                          const fmt_strategy *s, int rank, cost_memory *mem)
{
    double r;

    if (!cost_runtime_derived(p))
        return mem->total;
    r = cost_runtime_memory(c, p, s, rank, NULL);
    mem->total += r - mem->reserve;
    mem->reserve = r;
    return mem->total;
}
