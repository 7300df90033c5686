/* util/clock.c: the monotonic clock that time limits are measured on. */
#include <time.h>

#include "util.h"

double util_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int util_deadline_passed(double deadline)
{
    return deadline > 0.0 && util_now() >= deadline;
}
