/* launcher/internal.h: what the two files of the hetplan-launch program
 * (hetplan_launch.c, hetplan_launch_ranks.c) share; not part of the
 * library. */
#ifndef HETPLAN_LAUNCH_INTERNAL_H
#define HETPLAN_LAUNCH_INTERNAL_H

#include "launch.h"

/* Exit codes of hetplan-launch (its --help lists them). */
enum launch_exit {
    LAUNCH_EXIT_OK = 0,
    LAUNCH_EXIT_INTERNAL = 1,  /* out of memory, CUDA/cuBLAS/NCCL failure */
    LAUNCH_EXIT_USAGE = 2,     /* bad command line or environment, or an
                                  option that does not fit the plan */
    LAUNCH_EXIT_INPUT = 3,     /* the plan or its inputs cannot be read, or
                                  do not fit the world */
    LAUNCH_EXIT_PEER = 4,      /* another rank failed or was lost, or the
                                  ranks did not meet in time */
    LAUNCH_EXIT_OUTPUT = 5,    /* the trial cannot be written */
    LAUNCH_EXIT_NOGPU = 6      /* no CUDA GPU, NCCL or CUPTI */
};

/* --dry-run: print what each rank would run; returns the exit code. */
int launch_cli_dry_run(const launch_options *o, const launch_env *env);
/* --spawn N: start the ranks and wait; argv without --spawn is theirs. */
int launch_cli_spawn(int argc, char **argv, const launch_options *o);
/* --strategy, --spawn and --rank against the plan d: LAUNCH_EXIT_OK, else
 * LAUNCH_EXIT_USAGE after the message naming the option. */
int launch_cli_check_options(const launch_options *o, const plan_doc *d);
/* One rank of a multi-rank launch (torchrun environment). */
int launch_cli_rank(const launch_options *o, const launch_env *env);

#endif
