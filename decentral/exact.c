/* decentral/exact.c: the exhaustive DT-FM search, every balanced
 * partition once (small instances, DTFM_EXACT_MAX devices). */
#include "internal.h"

/* Assign device i onwards; groups are opened in order of their smallest
 * device, so each unordered partition is visited once. */
static void exact_rec(dtfm_ctx *c, dtfm_work *w, int i, int opened, int *fill)
{
    int q;

    if (c->stop)
        return;
    if (i == c->n) {
        dtfm_state_build(c, &w->s);
        c->gens++;
        return;
    }
    for (q = 0; q < c->k && q <= opened; q++) {
        if (fill[q] >= c->g)
            continue;
        /* remaining devices must be able to fill the groups still open */
        w->s.grp[i] = q;
        fill[q]++;
        exact_rec(c, w, i + 1, q == opened ? opened + 1 : opened, fill);
        fill[q]--;
    }
}

void dtfm_run_exact(dtfm_ctx *c, dtfm_work *w)
{
    int *fill = w->size, i;

    c->phase = "exact";
    for (i = 0; i < c->k; i++)
        fill[i] = 0;
    exact_rec(c, w, 0, 0, fill);
}
