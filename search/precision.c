/* search/precision.c: a plan never uses a precision a device lacks.
 * search_plan_devices searches only the nodes whose device type trains
 * in the model's precision (fmt_device_supports) and leaves the others
 * idle with the reason; search_precision_fallback picks the precision a
 * plan falls back to when too few devices have the one asked for
 * (docs/algorithms.md, "Precision per device"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int node_supports(const fmt_cluster *c, int node, int prec)
{
    return fmt_device_supports(&c->types[c->nodes[node].type], prec);
}

/* Nodes of c whose devices train in prec. */
static int count_supported(const fmt_cluster *c, int prec)
{
    int i, n = 0;

    for (i = 0; i < c->nnodes; i++)
        n += node_supports(c, i, prec);
    return n;
}

int search_precision_usable(const fmt_cluster *c, int prec, int use_all)
{
    int n = count_supported(c, prec);

    return use_all ? n == c->nnodes && n > 0 : n > 0;
}

int search_precision_fallback(const fmt_cluster *c, int prec, int use_all)
{
    /* bf16 -> fp16 (same element size, loss scaling instead), then fp32,
       which every device runs */
    static const int order[] = {FMT_PREC_FP16, FMT_PREC_FP32};
    size_t i;

    if (search_precision_usable(c, prec, use_all))
        return prec;
    for (i = 0; i < sizeof order / sizeof order[0]; i++)
        if (order[i] != prec && search_precision_usable(c, order[i], use_all))
            return order[i];
    return FMT_PREC_FP32;
}

size_t search_precision_lacking(const fmt_cluster *c, int prec, char *buf, size_t n)
{
    int t, i, k = 0, nlack = 0;
    size_t len = 0;
    const char *pn = fmt_precision_name(prec);

    if (n == 0)
        return 0;
    buf[0] = '\0';
    for (t = 0; t < c->ntypes; t++) /* device types some node uses */
        for (i = 0; i < c->nnodes; i++)
            if (c->nodes[i].type == t) {
                nlack += !fmt_device_supports(&c->types[t], prec);
                break;
            }
    for (t = 0; t < c->ntypes && nlack > 0; t++) {
        for (i = 0; i < c->nnodes && c->nodes[i].type != t; i++)
            ;
        if (i == c->nnodes || fmt_device_supports(&c->types[t], prec))
            continue;
        k++;
        len += (size_t)snprintf(buf + (len < n ? len : n - 1), len < n ? n - len : 1,
                                "%s'%s'", k == 1 ? "" : k == nlack ? " and " : ", ",
                                c->types[t].name);
    }
    if (nlack > 0)
        len += (size_t)snprintf(buf + (len < n ? len : n - 1), len < n ? n - len : 1,
                                " %s no %s units", nlack == 1 ? "has" : "have",
                                pn ? pn : "?");
    return len;
}

/* Map the candidates found on the sub-cluster pc back to c: ranks
 * through dev_map, results evaluated on c, and the idle reason led by
 * the devices that lack the precision. */
static int map_back(const fmt_cluster *c, const fmt_model *m, const fmt_profile *prof,
                    const cost_params *cp, const char *lack, const int *dev_map,
                    search_result *out, util_error *err)
{
    int i, j, rc;

    if (out->miss.need > 0.0 && out->miss.device >= 0)
        out->miss.device = dev_map[out->miss.device];
    for (i = 0; i < out->n; i++) {
        search_candidate *cd = &out->cands[i];
        cost_result r;
        char other[320];
        for (j = 0; j < cd->s.tp * cd->s.dp * cd->s.pp; j++)
            cd->s.ranks[j] = dev_map[cd->s.ranks[j]];
        if ((rc = cost_evaluate(c, m, prof, cp, &cd->s, &r, err)) != UTIL_OK)
            return rc;
        cost_result_free(&cd->r);
        cd->r = r;
        snprintf(other, sizeof other, "%s", cd->idle_reason);
        if (other[0] != '\0')
            snprintf(cd->idle_reason, sizeof cd->idle_reason,
                     "%.110s; the other idle GPUs: %.180s", lack, other);
        else
            snprintf(cd->idle_reason, sizeof cd->idle_reason, "%.300s", lack);
    }
    return UTIL_OK;
}

int search_plan_devices(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, search_result *out,
                        util_error *err)
{
    int prec = fmt_model_precision(m), n = 0, i, rc, *nodes = NULL, *dev_map = NULL;
    const char *pn = fmt_precision_name(prec);
    char lack[200];
    fmt_cluster pc;

    memset(out, 0, sizeof *out);
    if (count_supported(c, prec) == c->nnodes)
        return search_plan_subsets(c, m, prof, cp, sp, out, err);
    search_precision_lacking(c, prec, lack, sizeof lack);
    if (sp->use_all)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "'--use-all' needs every device to train in %s, "
                              "but %s (plan with '--precision %s')", pn ? pn : "?",
                              lack, fmt_precision_name(search_precision_fallback(c, prec, 1)));
    if (count_supported(c, prec) == 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "no device of cluster '%s' trains in %s: %s (plan "
                              "with '--precision %s')", c->name, pn ? pn : "?", lack,
                              fmt_precision_name(search_precision_fallback(c, prec, 0)));
    nodes = malloc((size_t)c->nnodes * sizeof *nodes);
    dev_map = malloc((size_t)(c->ndevices > 0 ? c->ndevices : 1) * sizeof *dev_map);
    if (nodes == NULL || dev_map == NULL) {
        free(nodes);
        free(dev_map);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (i = 0; i < c->nnodes; i++)
        if (node_supports(c, i, prec))
            nodes[n++] = i;
    rc = search_sub_cluster(c, nodes, n, 1.0, &pc, dev_map);
    free(nodes);
    if (rc != UTIL_OK) {
        free(dev_map);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    rc = search_plan_subsets(&pc, m, prof, cp, sp, out, err);
    if (rc == UTIL_OK)
        rc = map_back(c, m, prof, cp, lack, dev_map, out, err);
    if (rc != UTIL_OK) {
        int subsets = out->subsets;
        search_result_free(out);
        out->subsets = subsets;
    }
    fmt_cluster_free(&pc);
    free(dev_map);
    return rc;
}
