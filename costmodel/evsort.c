/* costmodel/evsort.c: the simulator's events in time order.  They come
 * in runs already (each stage's operations in the order it ran them): a
 * merge sort of their indices starts from those runs (log2 of their
 * number passes), checking a deadline between passes, on 8 bytes of
 * indices per event; the events are then permuted in place. */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

int cost_event_cmp(const cost_event *a, const cost_event *b)
{
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    if (a->replica != b->replica)
        return a->replica < b->replica ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->micro != b->micro)
        return a->micro < b->micro ? -1 : 1;
    if (a->chunk != b->chunk)
        return a->chunk < b->chunk ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return 0;
}

/* Merge the ordered index runs x[lo, mid) and x[mid, hi) into y. */
static void merge(const cost_event *ev, const uint32_t *x, uint32_t *y,
                  size_t lo, size_t mid, size_t hi)
{
    size_t i = lo, j = mid, k = lo;

    while (i < mid && j < hi)
        y[k++] = cost_event_cmp(&ev[x[j]], &ev[x[i]]) < 0 ? x[j++] : x[i++];
    while (i < mid)
        y[k++] = x[i++];
    while (j < hi)
        y[k++] = x[j++];
}

int cost_sort_events(cost_event *ev, size_t n, double deadline)
{
    uint32_t *a = NULL, *b = NULL, *t, *run = NULL;
    size_t i, j, k, m, nr = 0;
    int rc = UTIL_OK;

    if (n < 2)
        return UTIL_OK;
    if (n > (size_t)UINT32_MAX - 1)
        return UTIL_EINVAL;
    for (i = 1; i < n; i++) /* the runs: maximal ordered stretches */
        nr += cost_event_cmp(&ev[i - 1], &ev[i]) > 0;
    if (nr++ == 0)
        return UTIL_OK;
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    run = malloc((nr + 1) * sizeof *run); /* the start of each, then n */
    if (a == NULL || b == NULL || run == NULL) {
        rc = UTIL_ENOMEM;
        goto done;
    }
    for (i = 0, k = 0; i < n; i++) {
        a[i] = (uint32_t)i;
        if (i == 0 || cost_event_cmp(&ev[i - 1], &ev[i]) > 0)
            run[k++] = (uint32_t)i;
    }
    run[nr] = (uint32_t)n;
    /* merge neighbouring runs pairwise until one is left: each pass
       reads two ordered streams of events at a time */
    while (nr > 1) {
        if (util_deadline_passed(deadline)) {
            rc = UTIL_ETIMEOUT;
            goto done;
        }
        for (k = 0, m = 0; k < nr; k += 2, m++) {
            if (k + 1 < nr)
                merge(ev, a, b, run[k], run[k + 1], run[k + 2]);
            else
                for (i = run[k]; i < run[k + 1]; i++)
                    b[i] = a[i];
            run[m] = run[k];
        }
        nr = m;
        run[nr] = (uint32_t)n;
        t = a;
        a = b;
        b = t;
    }
    /* position i takes the event at a[i]: in place, each cycle once (a
       cycle cut short by the deadline leaves the order unspecified) */
    for (i = 0, m = 0; i < n; i++) {
        cost_event tmp;
        if (a[i] == i)
            continue;
        tmp = ev[i];
        for (j = i;;) {
            k = a[j];
            a[j] = (uint32_t)j;
            if (k == i) {
                ev[j] = tmp;
                break;
            }
            ev[j] = ev[k];
            j = k;
            if ((++m & 0xffff) == 0 && util_deadline_passed(deadline)) {
                ev[j] = tmp;
                rc = UTIL_ETIMEOUT;
                goto done;
            }
        }
    }
done:
    free(a);
    free(b);
    free(run);
    return rc;
}
