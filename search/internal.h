/* search/internal.h: private declarations shared by the files of
 * search/: the strategy space of AMP's enumeration (search/space.c) and
 * the placement annealing's scoring and moves, which the placement
 * genetic algorithm reuses (search/anneal.c, search/ga.c). */
#ifndef HETPLAN_SEARCH_INTERNAL_H
#define HETPLAN_SEARCH_INTERNAL_H

#include "search.h"

/* Training features of one candidate (fmt_strategy's vpp, sp,
 * recompute, zero). */
typedef struct search_feat {
    int recompute;          /* enum fmt_recompute */
    int sp;                 /* sequence parallelism 0/1 */
    int zero;               /* ZeRO stage 0..3 */
    int vpp;                /* model chunks per device (1 = plain 1F1B) */
    int offload;            /* enum fmt_offload */
} search_feat;

/* One point of the space: degrees, micro-batch size, features, and a
 * lower bound of its iteration time from compute alone. */
typedef struct search_key {
    int tp, pp, mbs;
    search_feat f;
    double lb;              /* s, valid for every placement */
    double glb;             /* least lb of the points with its tp and pp */
    long seq;               /* position in enumeration order (ties) */
} search_key;

/* Every valid point for the cluster, model and batch, grouped by
 * degrees (tp, pp: one placement serves the group), groups by their least
 * bound, points of a group by (lb, seq).  Degrees and micro-batch sizes come from divisors, never from
 * loops over the batch.  *keys is malloc'd (caller frees).  Counts the
 * points ruled out (heads, stages without parameters) in out. */
int search_space_build(const fmt_cluster *c, const fmt_model *m,
                       const fmt_profile *prof, const cost_params *cp,
                       const search_params *sp, int max_tp,
                       search_key **keys, long *nkeys, search_result *out,
                       util_error *err);

/* Sorted divisors of n not above cap (1 <= n < 2^31) into a malloc'd
 * *out; returns the count, -1 when out of memory or n is too large. */
int search_divisors(long n, long cap, long **out);

/* cp with the strategy's own recompute, ZeRO stage, schedule and
 * sequence parallelism and the calibration in force (cp's, else prof's,
 * prof may be NULL), as cost_evaluate applies them; s->vpp acts through
 * search_inflight. */
void search_strategy_params(const cost_params *cp, const fmt_profile *prof,
                            const fmt_strategy *s, cost_params *out);
/* Micro-batches' worth of activations stage keeps under s and p's
 * schedule: cost_inflight_interleaved with vpp > 1 on 1F1B, else
 * cost_inflight (as cost_rank_stage_memory counts them). */
double search_inflight(const cost_params *p, const fmt_strategy *s, int stage);

/* relative tolerance under which two objectives of the layer-assignment
 * DP count as equal */
#define SEARCH_DP_TIE 1e-12
/* UTIL_OK when in is a valid layer-assignment input (detail in err). */
int search_dp_validate(const search_dp_input *in, util_error *err);

/* A buffer reused from call to call, so that hot loops do not allocate:
 * search_scratch_get returns at least bytes of it (contents undefined),
 * NULL when out of memory.  Zero-initialise; free p when done. */
typedef struct search_scratch {
    void *p;
    size_t cap;
} search_scratch;
void *search_scratch_get(search_scratch *b, size_t bytes);
/* Bytes by which stage j of s overflows its tightest device under
 * cost_evaluate's memory (<= 0: it fits); search/fit.c. */
double search_stage_excess(const fmt_cluster *c, const fmt_model *m,
                           const cost_params *cp, const fmt_strategy *s, int j);
/* The layer assignment's program on in (groups gs, cap per stage from
 * the additive bound) with the caps corrected to cost_evaluate's memory
 * until the split it returns fits by cost_evaluate's count: gb and s's
 * bounds get that split, *obj its objective; UTIL_EINFEASIBLE when none
 * is found.  in->cap is left as given. */
int search_assign_fit(const fmt_cluster *c, const fmt_model *m,
                      const cost_params *cp, const search_launcher *lc,
                      fmt_strategy *s, search_dp_input *in, const int *gs,
                      int *gb, double *obj, search_scratch *sd, util_error *err);
/* search_dp_assign with its working memory in buf (NULL: allocated). */
int search_dp_assign_scratch(const search_dp_input *in, int *bounds,
                             double *objective, search_scratch *buf,
                             util_error *err);

/* What the candidates of one search (one cluster, model, profile and
 * cost_params) share in their layer assignments: layer times by device
 * kind, degrees, micro-batch and features, and each placement's stage
 * kinds and links.  Opaque; NULL when out of memory. */
typedef struct search_memo search_memo;
search_memo *search_memo_create(void);
void search_memo_destroy(search_memo *mo);
/* search_assign_layers_for reusing memo (NULL: none), which must only ever
 * see the same c, m, prof and cp (the strategies vary); lc may be NULL. */
int search_assign_layers_memo(const fmt_cluster *c, const fmt_model *m,
                              const fmt_profile *prof, const cost_params *cp,
                              const search_launcher *lc, fmt_strategy *s,
                              search_memo *memo, util_error *err);

/* What memo keeps of s's placement (ranks and degrees), when it does
 * (returns 1): *minmem (pp entries, valid until memo's next use) the
 * least device memory of each stage, bytes; *mixed 1 when a TP group
 * mixes device types (cost_tp_group_mixed).  0 when not kept. */
int search_memo_placement(search_memo *mo, const fmt_strategy *s,
                          const double **minmem, int *mixed);

/* search_plan at sp->global_batch exactly (batch_tolerance ignored). */
int search_plan_exact(const fmt_cluster *c, const fmt_model *m,
                      const fmt_profile *prof, const cost_params *cp,
                      const search_params *sp, search_result *out,
                      util_error *err);

/* Transformer blocks of the model. */
int search_blocks(const fmt_model *m);
/* While res holds no strategy, remember s (rejected for memory with
 * result r) when it comes closer to fitting than res->miss
 * (search/miss.c). */
void search_note_miss(const fmt_cluster *c, const fmt_strategy *s,
                      const cost_result *r, search_result *res);
/* The error of a search that kept no strategy (out->n == 0): the
 * closest candidate and what could make one fit; UTIL_EINFEASIBLE. */
int search_explain_none(const fmt_cluster *c, const fmt_model *m,
                        const cost_params *cp, const search_params *sp,
                        const search_result *out, util_error *err);
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
/* search_anneal_score for the launcher lc (NULL = any): s's ranks put in
 * the order lc realises (search_launcher_order) and its layers assigned
 * with the boundaries lc expresses. */
int search_anneal_score_for(const fmt_cluster *c, const fmt_model *m,
                            const fmt_profile *prof, const cost_params *cp,
                            const search_launcher *lc, int objective,
                            fmt_strategy *s, cost_result *r, double *val,
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

/* ---- device subsets (search/subset.c, search/precision.c) ---------- */

/* out = the nodes nodes[0..n) of c in that order, device memory scaled
 * by mem_scale; dev_map (out->ndevices entries, may be NULL) gets each
 * device's index in c.  Free out with fmt_cluster_free.  UTIL_ENOMEM. */
int search_sub_cluster(const fmt_cluster *c, const int *nodes, int n,
                       double mem_scale, fmt_cluster *out, int *dev_map);
/* search_plan_devices on every node of c, whatever their precision. */
int search_plan_subsets(const fmt_cluster *c, const fmt_model *m,
                        const fmt_profile *prof, const cost_params *cp,
                        const search_params *sp, search_result *out,
                        util_error *err);

/* ---- launcher constraints (search/launcher.c) ------------------------ */

/* 1 when the launcher lc (NULL = any) runs the features f with pp stages. */
int search_launcher_feat(const search_launcher *lc, int pp, const search_feat *f);
/* Layer groups whose starts are the only boundaries of SEARCH_SPLIT_BLOCKS:
 * chunks of vpp (or 1) blocks, the layers before the first block in the
 * first group, those after the last in the last.  start gets G + 1
 * entries; returns G (0 when the blocks do not divide into chunks). */
int search_launcher_groups(const fmt_model *m, int vpp, int *start);
/* Monotonic clock, s (time limits of the search). */
double search_now(void);

#endif
