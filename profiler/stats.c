/* profiler/stats.c: median and spread over repeats, and the summary of a
 * layer's kernel timings. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Quantile q of sorted x[0..n-1], linear interpolation between ranks
 * (Hyndman and Fan 1996, definition 7). */
static double quantile(const double *x, int n, double q)
{
    double pos = q * (double)(n - 1);
    int i = (int)floor(pos);
    double f = pos - (double)i;

    if (i + 1 >= n)
        return x[n - 1];
    return x[i] + f * (x[i + 1] - x[i]);
}

int prof_stats_of(const double *x, int n, prof_stats *out, util_error *err)
{
    double *y = NULL, sum = 0.0;
    int i, rc = UTIL_OK;

    memset(out, 0, sizeof *out);
    if (n < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected at least one sample, got %d", n);
    for (i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "sample %d is not a finite number", i);
    y = malloc((size_t)n * sizeof *y);
    if (!y) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    memcpy(y, x, (size_t)n * sizeof *y);
    qsort(y, (size_t)n, sizeof *y, cmp_double);
    for (i = 0; i < n; i++)
        sum += y[i];
    out->n = n;
    out->min = y[0];
    out->max = y[n - 1];
    out->mean = sum / (double)n;
    out->median = quantile(y, n, 0.5);
    out->q1 = quantile(y, n, 0.25);
    out->q3 = quantile(y, n, 0.75);
    out->iqr = out->q3 - out->q1;
done:
    free(y);
    return rc;
}

int prof_samples_alloc(prof_samples *s, int repeats, int nk)
{
    size_t n;

    memset(s, 0, sizeof *s);
    if (repeats < 1 || nk < 1)
        return UTIL_EINVAL;
    n = (size_t)repeats * (size_t)nk;
    s->start = calloc(n, sizeof *s->start);
    s->end = calloc(n, sizeof *s->end);
    s->busy = calloc(n, sizeof *s->busy);
    if (!s->start || !s->end || !s->busy) {
        prof_samples_free(s);
        return UTIL_ENOMEM;
    }
    s->repeats = repeats;
    s->nk = nk;
    return UTIL_OK;
}

void prof_samples_free(prof_samples *s)
{
    if (!s)
        return;
    free(s->start);
    free(s->end);
    free(s->busy);
    memset(s, 0, sizeof *s);
}

int prof_layer_summarise(const prof_layer_work *w, const prof_samples *s,
                         prof_layer_result *out, util_error *err)
{
    double *fspan = NULL, *bspan = NULL, *fbusy = NULL, *bbusy = NULL,
           *col = NULL;
    int r, i, rc = UTIL_OK, nf = 0, nb = 0;
    prof_stats st;

    memset(out, 0, sizeof *out);
    if (s->nk != w->nk || s->repeats < 1 || w->nk < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "expected samples of %d kernels, got %d x %d",
                              w->nk, s->repeats, s->nk);
    for (i = 0; i < w->nk; i++) {
        if (w->k[i].bwd)
            nb++;
        else
            nf++;
    }
    fspan = calloc((size_t)s->repeats, sizeof *fspan);
    bspan = calloc((size_t)s->repeats, sizeof *bspan);
    fbusy = calloc((size_t)s->repeats, sizeof *fbusy);
    bbusy = calloc((size_t)s->repeats, sizeof *bbusy);
    col = calloc((size_t)s->repeats, sizeof *col);
    if (!fspan || !bspan || !fbusy || !bbusy || !col) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < s->repeats; r++) {
        double f0 = INFINITY, f1 = -INFINITY, b0 = INFINITY, b1 = -INFINITY;
        for (i = 0; i < w->nk; i++) {
            size_t at = (size_t)r * (size_t)s->nk + (size_t)i;
            if (!(s->end[at] >= s->start[at]) || !(s->busy[at] >= 0.0) ||
                !isfinite(s->end[at]) || !isfinite(s->start[at])) {
                rc = util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                    "kernel '%s' has no GPU time in repeat %d",
                                    w->k[i].name, r);
                goto done;
            }
            if (w->k[i].bwd) {
                b0 = fmin(b0, s->start[at]);
                b1 = fmax(b1, s->end[at]);
                bbusy[r] += s->busy[at];
            } else {
                f0 = fmin(f0, s->start[at]);
                f1 = fmax(f1, s->end[at]);
                fbusy[r] += s->busy[at];
            }
        }
        fspan[r] = nf > 0 ? f1 - f0 : 0.0;
        bspan[r] = nb > 0 ? b1 - b0 : 0.0;
    }
    out->kind = w->shape.kind;
    out->tp = w->shape.tp;
    out->mbs = w->shape.mbs;
    out->repeats = s->repeats;
    out->nk = w->nk;
    if ((rc = prof_stats_of(fspan, s->repeats, &st, err)) != UTIL_OK)
        goto done;
    out->fwd_s = st.median;
    out->fwd_iqr_s = st.iqr;
    if ((rc = prof_stats_of(bspan, s->repeats, &st, err)) != UTIL_OK)
        goto done;
    out->bwd_s = st.median;
    out->bwd_iqr_s = st.iqr;
    if ((rc = prof_stats_of(fbusy, s->repeats, &st, err)) != UTIL_OK)
        goto done;
    out->fwd_busy_s = st.median;
    if ((rc = prof_stats_of(bbusy, s->repeats, &st, err)) != UTIL_OK)
        goto done;
    out->bwd_busy_s = st.median;
    for (i = 0; i < w->nk; i++) {
        for (r = 0; r < s->repeats; r++)
            col[r] = s->busy[(size_t)r * (size_t)s->nk + (size_t)i];
        if ((rc = prof_stats_of(col, s->repeats, &st, err)) != UTIL_OK)
            goto done;
        out->kt[i].median_s = st.median;
        out->kt[i].iqr_s = st.iqr;
    }
done:
    if (rc != UTIL_OK) {
        int keep = rc;
        memset(out, 0, sizeof *out);
        rc = keep;
    }
    free(fspan);
    free(bspan);
    free(fbusy);
    free(bbusy);
    free(col);
    return rc;
}
