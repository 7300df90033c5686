/* search/internal.h: declarations shared inside the search module, for
 * its tests and benchmarks; not part of the public interface. */
#ifndef HETPLAN_SEARCH_INTERNAL_H
#define HETPLAN_SEARCH_INTERNAL_H

#include "search.h"

/* Work done by one search_dp_assign call. */
typedef struct search_dp_stats {
    int solves;             /* O(k * L) passes of the constrained DP, all phases */
    int steps;              /* passes of the descending bottleneck sweep */
} search_dp_stats;

/* search_dp_assign that also reports its work in *stats (may be NULL). */
int search_dp_assign_stats(const search_dp_input *in, int *bounds,
                           double *objective, search_dp_stats *stats,
                           cost_error *err);

#endif
