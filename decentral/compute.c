/* decentral/compute.c: the compute time of one tasklet on each device for
 * --compute (beyond the DT-FM paper): the model's layer times from the
 * planner-core cost model on the device's GPU type, once per type. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Built-in GPT3-XL (the paper's model) for compute times. */
static int gpt3xl(fmt_model *m, util_error *err)
{
    fmt_transformer_spec sp;

    memset(&sp, 0, sizeof sp);
    memset(m, 0, sizeof *m);
    snprintf(sp.name, sizeof sp.name, "gpt3-xl");
    snprintf(sp.family, sizeof sp.family, "gpt3");
    sp.blocks = 24;
    sp.hidden = 2048;
    sp.heads = 16;
    sp.seq = 2048;
    sp.vocab = 50257;
    sp.tied_embeddings = -1;
    m->dtype_bytes = 2;
    return fmt_model_from_transformer(&sp, m, err);
}

int dtfm_compute_times(const fmt_model *m, const char (*type)[32], int n,
                       double per_tasklet, int d_pp, double *out, int *bad,
                       util_error *err)
{
    fmt_model builtin;
    cost_params cp;
    int rc = UTIL_OK, i, j, l;

    *bad = -1;
    memset(&builtin, 0, sizeof builtin);
    if (m == NULL) {
        if ((rc = gpt3xl(&builtin, err)) != UTIL_OK)
            return rc;
        m = &builtin;
    }
    cost_params_init(&cp);
    for (i = 0; i < n; i++) {
        const fmt_device_type *dt;
        double t = 0.0;
        /* a type seen before: its time (the layers once per type) */
        for (j = 0; j < i && strcmp(type[j], type[i]) != 0; j++)
            ;
        if (j < i) {
            out[i] = out[j];
            continue;
        }
        if ((dt = fmt_catalog_find(type[i])) == NULL) {
            *bad = i;
            break;
        }
        for (l = 0; l < m->nlayers; l++) {
            cost_layer_time lt;
            cost_layer_time_of(m, NULL, &cp, dt, l, 1, 1, INFINITY, 0.0, INFINITY, &lt);
            t += lt.fwd + lt.bwd;
        }
        /* beyond the paper: one tasklet = 1/d_pp of the model's forward
         * and backward over the micro-batch group */
        out[i] = t * per_tasklet / (double)d_pp;
    }
    fmt_model_free(&builtin);
    return rc;
}
