/* formats/strategy.c: the strategy struct (allocation, copy, rank to
 * device lookups, the device-to-rank index), its checks against a
 * cluster and a model, and its per-rank shard and slowdown arrays. */
#include <stdlib.h>
#include <string.h>

#include "formats.h"

static size_t nranks_of(const fmt_strategy *s)
{
    return (size_t)s->tp * (size_t)s->dp * (size_t)s->pp;
}

int fmt_strategy_alloc(fmt_strategy *s, int tp, int dp, int pp)
{
    memset(s, 0, sizeof *s);
    if (tp < 1 || dp < 1 || pp < 1)
        return UTIL_EINVAL;
    s->bounds = calloc((size_t)pp + 1, sizeof *s->bounds);
    s->ranks = calloc((size_t)tp * (size_t)dp * (size_t)pp, sizeof *s->ranks);
    if (s->bounds == NULL || s->ranks == NULL) {
        fmt_strategy_free(s);
        return UTIL_ENOMEM;
    }
    s->tp = tp;
    s->dp = dp;
    s->pp = pp;
    s->mbs = 1;
    s->gas = 1;
    s->schedule = FMT_SCHED_1F1B;
    s->vpp = 1;
    s->sp = 0;
    s->recompute = -1;
    s->zero = -1;
    s->offload = -1;
    s->overlap_grad = -1;
    s->overlap_param = -1;
    s->overlap_tp = -1;
    s->overlap_p2p = -1;
    return UTIL_OK;
}

int fmt_strategy_copy(fmt_strategy *dst, const fmt_strategy *src)
{
    int rc = fmt_strategy_alloc(dst, src->tp, src->dp, src->pp);
    size_t nr = (size_t)src->tp * (size_t)src->dp * (size_t)src->pp;

    if (rc != UTIL_OK)
        return rc;
    dst->mbs = src->mbs;
    dst->gas = src->gas;
    dst->schedule = src->schedule;
    dst->vpp = src->vpp;
    dst->sp = src->sp;
    dst->recompute = src->recompute;
    dst->zero = src->zero;
    dst->offload = src->offload;
    dst->overlap_grad = src->overlap_grad;
    dst->overlap_param = src->overlap_param;
    dst->overlap_tp = src->overlap_tp;
    dst->overlap_p2p = src->overlap_p2p;
    dst->bounds_open = src->bounds_open;
    memcpy(dst->bounds, src->bounds, ((size_t)src->pp + 1) * sizeof *dst->bounds);
    memcpy(dst->ranks, src->ranks, nr * sizeof *dst->ranks);
    memcpy(dst->placement, src->placement, sizeof dst->placement);
    if (src->tp_heads && src->tp_cols &&
        fmt_strategy_set_shards(dst, src->tp_heads, src->tp_cols) != UTIL_OK)
        goto nomem;
    if (src->slow && fmt_strategy_set_slow(dst, src->slow) != UTIL_OK)
        goto nomem;
    return UTIL_OK;
nomem:
    fmt_strategy_free(dst);
    return UTIL_ENOMEM;
}

void fmt_strategy_free(fmt_strategy *s)
{
    if (s == NULL)
        return;
    free(s->bounds);
    free(s->ranks);
    free(s->tp_heads);
    free(s->tp_cols);
    free(s->slow);
    memset(s, 0, sizeof *s);
}

int fmt_rank_device(const fmt_strategy *s, int stage, int dpi, int tpi)
{
    return s->ranks[tpi + s->tp * dpi + s->tp * s->dp * stage];
}

int fmt_strategy_check(const fmt_cluster *c, const fmt_model *m,
                        const fmt_strategy *s, int global_batch,
                        util_error *err)
{
    int i, nr = s->tp * s->dp * s->pp;
    char *seen = NULL;
    int rc = UTIL_OK;

    if (s->tp < 1 || s->dp < 1 || s->pp < 1 || s->mbs < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "degrees and micro-batch size must be positive");
    if (nr > c->ndevices) /* fewer: the devices no rank names are idle */
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "tp*dp*pp = %d*%d*%d = %d does not match the "
                              "cluster's %d GPUs", s->tp, s->dp, s->pp, nr,
                              c->ndevices);
    if (s->pp > m->nlayers)
        return util_error_set(err, UTIL_EINVAL, NULL, "pp",
                              "%d pipeline stages but the model has only %d layers",
                              s->pp, m->nlayers);
    if (m->heads > 0 && m->heads % s->tp != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, "tp",
                              "tp %d does not divide the model's %d attention heads",
                              s->tp, m->heads);
    if (global_batch < 1 || global_batch % ((long long)s->dp * s->mbs) != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, "mbs",
                              "global batch %d is not divisible by dp*mbs = %d*%d",
                              global_batch, s->dp, s->mbs);
    if (s->gas != global_batch / ((long long)s->dp * s->mbs))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "micro-batch count %d does not equal global batch "
                              "/ (dp*mbs) = %lld", s->gas,
                              global_batch / ((long long)s->dp * s->mbs));
    if (s->bounds[0] != 0 || s->bounds[s->pp] != m->nlayers)
        return util_error_set(err, UTIL_EINVAL, NULL, "stage_boundaries",
                              "expected boundaries from 0 to %d (the model's "
                              "layer count), got %d to %d", m->nlayers,
                              s->bounds[0], s->bounds[s->pp]);
    for (i = 0; i < s->pp; i++)
        if (s->bounds[i + 1] <= s->bounds[i])
            return util_error_set(err, UTIL_EINVAL, NULL, "stage_boundaries",
                                  "expected strictly increasing boundaries, got "
                                  "%d then %d at index %d", s->bounds[i],
                                  s->bounds[i + 1], i + 1);
    if (s->vpp < 1 || s->vpp > FMT_MAX_VPP)
        return util_error_set(err, UTIL_EINVAL, NULL, "vpp",
                              "expected between 1 and %d model chunks per "
                              "device, got %d", FMT_MAX_VPP, s->vpp);
    if (s->vpp > 1 && (s->pp < 2 || s->schedule != FMT_SCHED_1F1B))
        return util_error_set(err, UTIL_EINVAL, NULL, "vpp",
                              "interleaved stages (vpp %d) need pp >= 2 and the "
                              "1f1b schedule", s->vpp);
    if (s->vpp > 1 && s->gas < s->pp)
        return util_error_set(err, UTIL_EINVAL, NULL, "vpp",
                              "the interleaved schedule needs at least pp "
                              "micro-batches, got %d micro-batches and pp %d",
                              s->gas, s->pp);
    if (s->sp != 0 && s->sp != 1)
        return util_error_set(err, UTIL_EINVAL, NULL, "sequence_parallel",
                              "expected 0 or 1, got %d", s->sp);
    if (s->recompute < -1 || s->recompute > FMT_RECOMPUTE_SELECTIVE)
        return util_error_set(err, UTIL_EINVAL, NULL, "recompute",
                              "expected none, full or selective, got %d",
                              s->recompute);
    if (s->zero < -1 || s->zero > 3)
        return util_error_set(err, UTIL_EINVAL, NULL, "zero",
                              "expected a ZeRO stage from 0 to 3, got %d",
                              s->zero);
    if (s->offload < -1 || s->offload > FMT_OFFLOAD_OPTIMIZER)
        return util_error_set(err, UTIL_EINVAL, NULL, "offload",
                              "expected none or optimizer, got %d", s->offload);
    if (s->overlap_grad < -1 || s->overlap_grad > 1 ||
        s->overlap_param < -1 || s->overlap_param > 1 ||
        s->overlap_tp < -1 || s->overlap_tp > 1 ||
        s->overlap_p2p < -1 || s->overlap_p2p > 1)
        return util_error_set(err, UTIL_EINVAL, NULL, "overlap",
                              "expected overlap flags 0 or 1");
    seen = calloc((size_t)c->ndevices, 1);
    if (seen == NULL)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (i = 0; i < nr; i++) {
        int d = s->ranks[i];
        if (d < 0 || d >= c->ndevices) {
            rc = util_error_set(err, UTIL_EINVAL, NULL, "ranks",
                                "rank %d names device %d, expected 0..%d", i, d,
                                c->ndevices - 1);
            goto done;
        }
        if (seen[d]) {
            rc = util_error_set(err, UTIL_EINVAL, NULL, "ranks",
                                "device %d is given to more than one rank", d);
            goto done;
        }
        seen[d] = 1;
    }
done:
    free(seen);
    return rc;
}

int fmt_strategy_set_shards(fmt_strategy *s, const int *heads,
                             const int *cols)
{
    size_t n = nranks_of(s);
    int *h = NULL, *c = NULL;

    if (heads != NULL && cols != NULL) {
        h = malloc(n * sizeof *h);
        c = malloc(n * sizeof *c);
        if (h == NULL || c == NULL) {
            free(h);
            free(c);
            return UTIL_ENOMEM;
        }
        memcpy(h, heads, n * sizeof *h);
        memcpy(c, cols, n * sizeof *c);
    }
    free(s->tp_heads);
    free(s->tp_cols);
    s->tp_heads = h;
    s->tp_cols = c;
    return UTIL_OK;
}

int fmt_strategy_set_slow(fmt_strategy *s, const double *slow)
{
    size_t n = nranks_of(s);
    double *v = NULL;

    if (slow != NULL) {
        v = malloc(n * sizeof *v);
        if (v == NULL)
            return UTIL_ENOMEM;
        memcpy(v, slow, n * sizeof *v);
    }
    free(s->slow);
    s->slow = v;
    return UTIL_OK;
}

int fmt_rank_of_device(const fmt_strategy *s, int dev)
{
    int r, n = s->tp * s->dp * s->pp;

    for (r = 0; r < n; r++)
        if (s->ranks[r] == dev)
            return r;
    return -1;
}

int fmt_rank_index_build(fmt_rank_index *ix, const fmt_strategy *s, int ndevices)
{
    size_t r, n = nranks_of(s);
    int d;

    ix->rank_of = NULL;
    ix->ndevices = 0;
    if (ndevices < 1)
        return UTIL_OK;
    ix->rank_of = malloc((size_t)ndevices * sizeof *ix->rank_of);
    if (ix->rank_of == NULL)
        return UTIL_ENOMEM;
    for (d = 0; d < ndevices; d++)
        ix->rank_of[d] = -1;
    /* the first rank naming a device wins, as in fmt_rank_of_device */
    for (r = n; r-- > 0;)
        if (s->ranks[r] >= 0 && s->ranks[r] < ndevices)
            ix->rank_of[s->ranks[r]] = (int)r;
    ix->ndevices = ndevices;
    return UTIL_OK;
}

int fmt_rank_index_get(const fmt_rank_index *ix, int dev)
{
    return dev >= 0 && dev < ix->ndevices ? ix->rank_of[dev] : -1;
}

void fmt_rank_index_free(fmt_rank_index *ix)
{
    if (ix == NULL)
        return;
    free(ix->rank_of);
    ix->rank_of = NULL;
    ix->ndevices = 0;
}
