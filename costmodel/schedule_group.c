/* costmodel/schedule_group.c: the micro-batch group of Megatron-core's
 * interleaved schedule (core_v0.19.0 schedules.py,
 * forward_backward_pipelining_with_interleaving and get_schedule_table):
 * each model chunk runs a group of N contiguous micro-batches, pp <= N <=
 * gas, and the last group is either full or at least pp long, else the
 * schedule raises (a dependency bubble).  N = pp by default; a count of
 * micro-batches pp does not divide needs a larger N
 * (--microbatch-group-size-per-virtual-pipeline-stage). */
#include "internal.h"

int cost_vpp_group(int pp, int gas)
{
    int n;

    if (pp < 1 || gas < pp)
        return 0;
    if (gas % pp == 0)
        return pp;
    for (n = pp + 1; n < gas; n++)
        if (gas % n == 0 || gas % n >= pp)
            return n;
    return gas;
}
