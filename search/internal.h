/* search/internal.h: helpers shared between the files of search/ (not
 * part of the public API in search.h): the placement annealing's state
 * scoring and moves, which the placement genetic algorithm reuses. */
#ifndef HETPLAN_SEARCH_INTERNAL_H
#define HETPLAN_SEARCH_INTERNAL_H

#include "search.h"

/* 1 when every node has the same device type, GPU count, links and
 * region and no link override exists: every placement is then the same
 * up to symmetry and a placement search cannot gain. */
int search_anneal_uniform(const fmt_cluster *c);
/* Layer assignment and cost of s under objective; UTIL_EINFEASIBLE (r
 * freed) when it does not fit or cannot run, *val the objective
 * otherwise (r then owned by the caller). */
int search_anneal_score(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        int objective, fmt_strategy *s, cost_result *r, double *val,
                        util_error *err);
/* Devices of c that s leaves idle, in the canonical node order: *out
 * (malloc'd, the caller frees) gets *nidle entries. */
int search_anneal_idle(const fmt_cluster *c, const fmt_strategy *s,
                       int **out, int *nidle);
/* Apply one random annealing move (s's degrees) to ranks (tp * dp * pp
 * entries) and idle (nidle entries); 0 when no move applies. */
int search_anneal_move(util_pcg32 *rng, const fmt_strategy *s, int *ranks,
                       int *idle, int nidle);
/* Uneven TP shards planned again (search_shard_refine) for a scored
 * best state of objective *best_v: best, br and *best_v are replaced
 * when the shards plan and the sharded state scores; otherwise left as
 * they are.  No-op without sp->uneven_tp or with tp 1. */
void search_anneal_shards(const fmt_cluster *c, const fmt_model *m,
                          const fmt_profile *prof, const cost_params *cp,
                          const search_params *sp, int objective, fmt_strategy *best,
                          cost_result *br, double *best_v);
/* Seed of one run: seed mixed with s's degrees and mbs (splitmix64). */
uint64_t search_anneal_seed(uint64_t seed, const fmt_strategy *s);

#endif
