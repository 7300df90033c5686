/* tests/test_costmodel_simulate.c: the pipeline schedule simulator
 * (costmodel/simulate.c, docs/simulator.md): schedules worked out by hand,
 * agreement with AMP eq. 5 where eq. 5 is exact, properties on random
 * inputs, the cost-model front end, fidelity in cost_evaluate, the
 * search's re-ranking and the command line. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "testutil.h"
#include "calibrate.h"

#define EXAMPLES HETPLAN_SOURCE_DIR "/examples/"
#define TOL 1e-9

/* ---- helpers --------------------------------------------------------- */

/* The event (kind, stage, replica, micro), failing when absent. */
static const cost_event *find(const cost_timeline *t, int kind, int stage,
                              int replica, int micro)
{
    int i;

    for (i = 0; i < t->nevents; i++) {
        const cost_event *e = &t->events[i];
        if (e->kind == kind && e->stage == stage && e->replica == replica &&
            e->micro == micro)
            return e;
    }
    ck_abort_msg("no %s event of stage %d replica %d micro %d",
                 cost_event_name(kind), stage, replica, micro);
    return NULL;
}

static int count(const cost_timeline *t, int kind)
{
    int i, n = 0;

    for (i = 0; i < t->nevents; i++)
        n += t->events[i].kind == kind;
    return n;
}

#define EXPECT(t, kind, j, r, m, s, e)                                        \
    do {                                                                      \
        const cost_event *ev_ = find(t, kind, j, r, m);                       \
        ck_assert_msg(fabs(ev_->start - (s)) < TOL && fabs(ev_->end - (e)) < TOL, \
                      "%s stage %d replica %d micro %d: [%g, %g], expected "  \
                      "[%g, %g]", cost_event_name(kind), j, r, m, ev_->start,   \
                      ev_->end, (double)(s), (double)(e));                    \
    } while (0)

static void input(cost_sim_input *in, int pp, int dp, int gas, int schedule,
                  const double *fwd, const double *bwd)
{
    memset(in, 0, sizeof *in);
    in->pp = pp;
    in->dp = dp;
    in->gas = gas;
    in->schedule = schedule;
    in->fwd = fwd;
    in->bwd = bwd;
}

static void run(const cost_sim_input *in, cost_timeline *t)
{
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = cost_simulate_stages(in, t, &err);
    ck_assert_msg(rc == UTIL_OK, "simulate: %s", err.msg);
}

/* ---- schedules worked out by hand ------------------------------------ */

/* 2 stages, unequal (f, b) = (1, 2) and (2, 4), gas 2, 1F1B, free links.
 * Stage 0 does 1 warm-up forward: F0 F1 B0 B1; stage 1: F0 B0 F1 B1.
 *   s0 F0 [0,1] F1 [1,2]; s1 F0 [1,3] B0 [3,7]; s0 B0 [7,9];
 *   s1 F1 [7,9] (its input waited since 2) B1 [9,13]; s0 B1 [13,15].
 * AMP eq. 5: (2-1)*6 + (3+6) = 15: with 2 stages and free links the
 * last stage never waits after its first forward, so eq. 5 is exact. */
START_TEST(test_two_stages_unequal)
{
    const double f[2] = {1, 2}, b[2] = {2, 4};
    cost_sim_input in;
    cost_timeline t;

    input(&in, 2, 1, 2, FMT_SCHED_1F1B, f, b);
    run(&in, &t);
    ck_assert_int_eq(t.nevents, 8); /* no transfer, all-reduce or optimizer */
    EXPECT(&t, COST_EV_FWD, 0, 0, 0, 0, 1);
    EXPECT(&t, COST_EV_FWD, 0, 0, 1, 1, 2);
    EXPECT(&t, COST_EV_FWD, 1, 0, 0, 1, 3);
    EXPECT(&t, COST_EV_BWD, 1, 0, 0, 3, 7);
    EXPECT(&t, COST_EV_BWD, 0, 0, 0, 7, 9);
    EXPECT(&t, COST_EV_FWD, 1, 0, 1, 7, 9);
    EXPECT(&t, COST_EV_BWD, 1, 0, 1, 9, 13);
    EXPECT(&t, COST_EV_BWD, 0, 0, 1, 13, 15);
    ck_assert_double_eq_tol(t.iter_s, 15.0, TOL);
    ck_assert_double_eq_tol(t.busy_s[0], 6.0, TOL);
    ck_assert_double_eq_tol(t.busy_s[1], 12.0, TOL);
    ck_assert_int_eq(t.pp, 2);
    ck_assert_int_eq(t.dp, 1);
    ck_assert_int_eq(t.gas, 2);
    /* sorted by start; at t = 1 stage 0 (F1) before stage 1 (F0) */
    ck_assert_int_eq(t.events[1].stage, 0);
    ck_assert_int_eq(t.events[2].stage, 1);
    cost_timeline_free(&t);
    cost_timeline_free(&t); /* idempotent */
}
END_TEST

/* 3 stages, f = 1, b = 2 each, gas 4, 1F1B (warm-ups 2, 1, 0).  Worked
 * out step by step; the iteration equals AMP eq. 5, 3*3 + 9 = 18. */
START_TEST(test_three_stages_1f1b)
{
    const double f[3] = {1, 1, 1}, b[3] = {2, 2, 2};
    static const double want[3][8][2] = {
        /* stage 0: F0 F1 F2 B0 F3 B1 B2 B3 */
        {{0, 1}, {1, 2}, {2, 3}, {7, 9}, {9, 10}, {10, 12}, {13, 15}, {16, 18}},
        /* stage 1: F0 F1 B0 F2 B1 F3 B2 B3 */
        {{1, 2}, {2, 3}, {5, 7}, {7, 8}, {8, 10}, {10, 11}, {11, 13}, {14, 16}},
        /* stage 2: F0 B0 F1 B1 F2 B2 F3 B3 */
        {{2, 3}, {3, 5}, {5, 6}, {6, 8}, {8, 9}, {9, 11}, {11, 12}, {12, 14}}};
    static const int kind[3][8] = {{0, 0, 0, 1, 0, 1, 1, 1},
                                   {0, 0, 1, 0, 1, 0, 1, 1},
                                   {0, 1, 0, 1, 0, 1, 0, 1}};
    static const int micro[3][8] = {{0, 1, 2, 0, 3, 1, 2, 3},
                                    {0, 1, 0, 2, 1, 3, 2, 3},
                                    {0, 0, 1, 1, 2, 2, 3, 3}};
    cost_sim_input in;
    cost_timeline t;
    int j, k;

    input(&in, 3, 1, 4, FMT_SCHED_1F1B, f, b);
    run(&in, &t);
    for (j = 0; j < 3; j++)
        for (k = 0; k < 8; k++)
            EXPECT(&t, kind[j][k] ? COST_EV_BWD : COST_EV_FWD, j, 0, micro[j][k],
                   want[j][k][0], want[j][k][1]);
    ck_assert_double_eq_tol(t.iter_s, 18.0, TOL);
    cost_timeline_free(&t);
}
END_TEST

/* 4 stages, f = 1, b = 2, slow links (0.5 s each way per cut), gas 2 < pp
 * (warm-ups capped at gas: stages 0-2 do F0 F1 B0 B1, stage 3 F0 B0 F1 B1).
 * The second activation waits for the link:  s0 F1 ends at 2, its send
 * runs [2, 2.5]; s1 F0 [1.5,2.5] F1 [2.5,3.5], send [3.5,4]; s2 F0 [3,4]
 * F1 [4,5]; s3 F0 [4.5,5.5] B0 [5.5,7.5] F1 [7.5,8.5] B1 [8.5,10.5];
 * s2 B0 [8,10] B1 [11,13]; s1 B0 [10.5,12.5] B1 [13.5,15.5];
 * s0 B0 [13,15] B1 [16,18].  AMP eq. 5: 1*3 + 12 + 3*(0.5+0.5) = 18. */
START_TEST(test_four_stages_slow_links)
{
    const double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2};
    const double link[3] = {0.5, 0.5, 0.5};
    cost_sim_input in;
    cost_timeline t;

    input(&in, 4, 1, 2, FMT_SCHED_1F1B, f, b);
    in.send_act = link;
    in.send_grad = link;
    run(&in, &t);
    EXPECT(&t, COST_EV_FWD, 0, 0, 1, 1, 2);
    EXPECT(&t, COST_EV_SEND_ACT, 0, 0, 0, 1, 1.5);
    EXPECT(&t, COST_EV_SEND_ACT, 0, 0, 1, 2, 2.5);
    EXPECT(&t, COST_EV_FWD, 1, 0, 0, 1.5, 2.5);
    EXPECT(&t, COST_EV_FWD, 1, 0, 1, 2.5, 3.5);
    EXPECT(&t, COST_EV_SEND_ACT, 1, 0, 1, 3.5, 4);
    EXPECT(&t, COST_EV_FWD, 2, 0, 0, 3, 4);
    EXPECT(&t, COST_EV_FWD, 2, 0, 1, 4, 5);
    EXPECT(&t, COST_EV_FWD, 3, 0, 0, 4.5, 5.5);
    EXPECT(&t, COST_EV_BWD, 3, 0, 0, 5.5, 7.5);
    EXPECT(&t, COST_EV_SEND_GRAD, 3, 0, 0, 7.5, 8); /* belongs to the sender */
    EXPECT(&t, COST_EV_FWD, 3, 0, 1, 7.5, 8.5);
    EXPECT(&t, COST_EV_BWD, 3, 0, 1, 8.5, 10.5);
    EXPECT(&t, COST_EV_BWD, 2, 0, 0, 8, 10);
    EXPECT(&t, COST_EV_BWD, 2, 0, 1, 11, 13);
    EXPECT(&t, COST_EV_BWD, 1, 0, 0, 10.5, 12.5);
    EXPECT(&t, COST_EV_BWD, 1, 0, 1, 13.5, 15.5);
    EXPECT(&t, COST_EV_SEND_GRAD, 1, 0, 1, 15.5, 16);
    EXPECT(&t, COST_EV_BWD, 0, 0, 0, 13, 15);
    EXPECT(&t, COST_EV_BWD, 0, 0, 1, 16, 18);
    ck_assert_int_eq(count(&t, COST_EV_SEND_ACT), 6);
    ck_assert_int_eq(count(&t, COST_EV_SEND_GRAD), 6);
    ck_assert_double_eq_tol(t.iter_s, 18.0, TOL);
    cost_timeline_free(&t);
}
END_TEST

/* 2 stages, f = 1, b = 2, links of 1 s, gas 3, 1F1B.  In steady state
 * the round trip (forward on stage 1, its gradient back over the link)
 * lies on the critical path, which AMP eq. 5 does not see:
 *   s0 F0 [0,1] F1 [1,2] (send [2,3] waits for act 0's [1,2]);
 *   s1 F0 [2,3] B0 [3,5] F1 [5,6] B1 [6,8]; grad sends [5,6], [8,9];
 *   s0 B0 [6,8] F2 [8,9] (send [9,10]) B1 [9,11];
 *   s1 F2 [10,11] B2 [11,13] (send [13,14]); s0 B2 [14,16].
 * Simulated 16 s; eq. 5 says 2*3 + 6 + 2 = 14 s. */
START_TEST(test_slow_link_steady_state)
{
    const double f[2] = {1, 1}, b[2] = {2, 2}, link[1] = {1};
    cost_sim_input in;
    cost_timeline t;

    input(&in, 2, 1, 3, FMT_SCHED_1F1B, f, b);
    in.send_act = link;
    in.send_grad = link;
    run(&in, &t);
    EXPECT(&t, COST_EV_SEND_ACT, 0, 0, 1, 2, 3);
    EXPECT(&t, COST_EV_BWD, 1, 0, 1, 6, 8);
    EXPECT(&t, COST_EV_SEND_GRAD, 1, 0, 1, 8, 9);
    EXPECT(&t, COST_EV_BWD, 0, 0, 0, 6, 8);
    EXPECT(&t, COST_EV_FWD, 0, 0, 2, 8, 9);
    EXPECT(&t, COST_EV_BWD, 0, 0, 1, 9, 11);
    EXPECT(&t, COST_EV_FWD, 1, 0, 2, 10, 11);
    EXPECT(&t, COST_EV_BWD, 1, 0, 2, 11, 13);
    EXPECT(&t, COST_EV_BWD, 0, 0, 2, 14, 16);
    ck_assert_double_eq_tol(t.iter_s, 16.0, TOL);
    cost_timeline_free(&t);
}
END_TEST

/* Largest number of micro-batches whose forward ran and backward did not
 * yet, on (replica r, stage j): what the memory model keeps. */
static int max_inflight(const cost_timeline *t, int r, int j)
{
    int i, live = 0, most = 0;

    for (i = 0; i < t->nevents; i++) {
        const cost_event *e = &t->events[i];
        if (e->replica != r || e->stage != j)
            continue;
        if (e->kind == COST_EV_FWD && ++live > most)
            most = live;
        if (e->kind == COST_EV_BWD)
            live--;
    }
    return most;
}

/* GPipe and 1F1B, 2 stages, f = 1, b = 2, gas 3, free links.
 * GPipe: s0 F [0,1] [1,2] [2,3]; s1 F [1,2] [2,3] [3,4], B [4,6] [6,8]
 * [8,10]; s0 B [6,8] [8,10] [10,12].
 * 1F1B: s0 F0 [0,1] F1 [1,2] B0 [4,6] F2 [6,7] B1 [7,9] B2 [10,12];
 * s1 F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7] F2 [7,8] B2 [8,10].
 * Both take 12 = eq. 5 (2*3 + 6), but stage 0 keeps 3 micro-batches'
 * activations under GPipe and 2 under 1F1B (cost_inflight). */
START_TEST(test_gpipe_vs_1f1b)
{
    const double f[2] = {1, 1}, b[2] = {2, 2};
    cost_sim_input in;
    cost_timeline g, o;
    cost_params p;

    input(&in, 2, 1, 3, FMT_SCHED_GPIPE, f, b);
    run(&in, &g);
    EXPECT(&g, COST_EV_FWD, 0, 0, 2, 2, 3);
    EXPECT(&g, COST_EV_FWD, 1, 0, 2, 3, 4);
    EXPECT(&g, COST_EV_BWD, 1, 0, 0, 4, 6);
    EXPECT(&g, COST_EV_BWD, 1, 0, 2, 8, 10);
    EXPECT(&g, COST_EV_BWD, 0, 0, 0, 6, 8);
    EXPECT(&g, COST_EV_BWD, 0, 0, 1, 8, 10);
    EXPECT(&g, COST_EV_BWD, 0, 0, 2, 10, 12);
    ck_assert_double_eq_tol(g.iter_s, 12.0, TOL);
    in.schedule = FMT_SCHED_1F1B;
    run(&in, &o);
    EXPECT(&o, COST_EV_BWD, 1, 0, 0, 2, 4);
    EXPECT(&o, COST_EV_BWD, 0, 0, 0, 4, 6);
    EXPECT(&o, COST_EV_FWD, 1, 0, 1, 4, 5);
    EXPECT(&o, COST_EV_FWD, 0, 0, 2, 6, 7);
    EXPECT(&o, COST_EV_BWD, 0, 0, 1, 7, 9);
    EXPECT(&o, COST_EV_FWD, 1, 0, 2, 7, 8);
    EXPECT(&o, COST_EV_BWD, 1, 0, 2, 8, 10);
    EXPECT(&o, COST_EV_BWD, 0, 0, 2, 10, 12);
    ck_assert_double_eq_tol(o.iter_s, 12.0, TOL);
    cost_params_init(&p);
    p.schedule = FMT_SCHED_GPIPE;
    ck_assert_int_eq(max_inflight(&g, 0, 0), 3);
    ck_assert_int_eq(max_inflight(&g, 0, 0), cost_inflight(&p, 0, 2, 3));
    p.schedule = FMT_SCHED_1F1B;
    ck_assert_int_eq(max_inflight(&o, 0, 0), 2);
    ck_assert_int_eq(max_inflight(&o, 0, 0), cost_inflight(&p, 0, 2, 3));
    ck_assert_int_eq(max_inflight(&o, 0, 1), cost_inflight(&p, 1, 2, 3));
    cost_timeline_free(&g);
    cost_timeline_free(&o);
}
END_TEST

/* The 2-stage schedule of test_two_stages_unequal (stage 0's last
 * backward ends at 15, stage 1's at 13) with DP all-reduces of 3 and 4 s
 * and optimizer steps of 1 s:
 * no overlap: both start at 15: s0 [15,18] then [18,19]; s1 [15,19] then
 * [19,20]: 20 s.  Overlap: s1 starts at 13: [13,17], [17,18]; s0 as
 * before, [15,18], [18,19]: 19 s. */
START_TEST(test_overlap_dp)
{
    const double f[2] = {1, 2}, b[2] = {2, 4}, dps[2] = {3, 4}, opt[2] = {1, 1};
    cost_sim_input in;
    cost_timeline t;

    input(&in, 2, 1, 2, FMT_SCHED_1F1B, f, b);
    in.dp_s = dps;
    in.opt_s = opt;
    run(&in, &t);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, 0, -1, 15, 18);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 1, 0, -1, 15, 19);
    EXPECT(&t, COST_EV_OPTIMIZER, 0, 0, -1, 18, 19);
    EXPECT(&t, COST_EV_OPTIMIZER, 1, 0, -1, 19, 20);
    ck_assert_double_eq_tol(t.iter_s, 20.0, TOL);
    cost_timeline_free(&t);
    in.overlap_dp = 1;
    run(&in, &t);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, 0, -1, 15, 18);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 1, 0, -1, 13, 17);
    EXPECT(&t, COST_EV_OPTIMIZER, 0, 0, -1, 18, 19);
    EXPECT(&t, COST_EV_OPTIMIZER, 1, 0, -1, 17, 18);
    ck_assert_double_eq_tol(t.iter_s, 19.0, TOL);
    /* the last event in start order is stage 0's optimizer */
    ck_assert_int_eq(t.events[t.nevents - 1].kind, COST_EV_OPTIMIZER);
    ck_assert_int_eq(t.events[t.nevents - 1].stage, 0);
    cost_timeline_free(&t);
}
END_TEST

/* dp = 2: replica 0 runs the schedule of test_two_stages_unequal, replica
 * 1 is twice as slow (every time doubled, so every event time doubles:
 * its stage 0 ends at 30, stage 1 at 26).  DP all-reduces (3, 4),
 * optimizer (1, 2).  The all-reduce waits for the slow replica:
 * no overlap: all at 30: s0 [30,33] [33,34], s1 [30,34] [34,36]: 36 s;
 * overlap: s0 at max(15, 30) = 30, s1 at max(13, 26) = 26: s1 [26,30]
 * [30,32], s0 [30,33] [33,34]: 34 s. */
START_TEST(test_slow_replica)
{
    const double f[4] = {1, 2, 2, 4}, b[4] = {2, 4, 4, 8};
    const double dps[2] = {3, 4}, opt[2] = {1, 2};
    cost_sim_input in;
    cost_timeline t;
    int r;

    input(&in, 2, 2, 2, FMT_SCHED_1F1B, f, b);
    in.dp_s = dps;
    in.opt_s = opt;
    run(&in, &t);
    EXPECT(&t, COST_EV_BWD, 1, 0, 1, 9, 13);  /* replica 0 as before */
    EXPECT(&t, COST_EV_BWD, 0, 0, 1, 13, 15);
    EXPECT(&t, COST_EV_FWD, 1, 1, 1, 14, 18); /* replica 1: doubled */
    EXPECT(&t, COST_EV_BWD, 1, 1, 1, 18, 26);
    EXPECT(&t, COST_EV_BWD, 0, 1, 1, 26, 30);
    for (r = 0; r < 2; r++) { /* a collective: the same interval in both */
        EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, r, -1, 30, 33);
        EXPECT(&t, COST_EV_DP_ALLREDUCE, 1, r, -1, 30, 34);
        EXPECT(&t, COST_EV_OPTIMIZER, 1, r, -1, 34, 36);
    }
    ck_assert_double_eq_tol(t.iter_s, 36.0, TOL);
    ck_assert_double_eq_tol(t.busy_s[0], 6.0, TOL);
    ck_assert_double_eq_tol(t.busy_s[3], 24.0, TOL);
    cost_timeline_free(&t);
    in.overlap_dp = 1;
    run(&in, &t);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 1, 0, -1, 26, 30);
    EXPECT(&t, COST_EV_OPTIMIZER, 1, 1, -1, 30, 32);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, 1, -1, 30, 33);
    EXPECT(&t, COST_EV_OPTIMIZER, 0, 0, -1, 33, 34);
    ck_assert_double_eq_tol(t.iter_s, 34.0, TOL);
    cost_timeline_free(&t);
}
END_TEST

/* Tied weights between stages 0 and 2 of test_three_stages_1f1b (last
 * backwards end at 18, 16, 14), overlap on, DP all-reduce 1 s, tied 2 s,
 * optimizer 0.5 s: s2 [14,15], s1 [16,17] then optimizer [17,17.5];
 * s0 [18,19]; the tied all-reduce needs both holders: [19,21] on s0 and
 * s2; their optimizers [21,21.5]. */
START_TEST(test_tied_weights)
{
    const double f[3] = {1, 1, 1}, b[3] = {2, 2, 2};
    const double dps[3] = {1, 1, 1}, opt[3] = {0.5, 0.5, 0.5};
    cost_sim_input in;
    cost_timeline t;

    input(&in, 3, 1, 4, FMT_SCHED_1F1B, f, b);
    in.dp_s = dps;
    in.opt_s = opt;
    in.overlap_dp = 1;
    in.tied_s = 2;
    in.tied_first = 0;
    in.tied_last = 2;
    run(&in, &t);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 2, 0, -1, 14, 15);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 1, 0, -1, 16, 17);
    EXPECT(&t, COST_EV_OPTIMIZER, 1, 0, -1, 17, 17.5);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, 0, -1, 18, 19);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 0, 0, -2, 19, 21);
    EXPECT(&t, COST_EV_DP_ALLREDUCE, 2, 0, -2, 19, 21);
    EXPECT(&t, COST_EV_OPTIMIZER, 2, 0, -1, 21, 21.5);
    EXPECT(&t, COST_EV_OPTIMIZER, 0, 0, -1, 21, 21.5);
    ck_assert_int_eq(count(&t, COST_EV_DP_ALLREDUCE), 5);
    ck_assert_double_eq_tol(t.iter_s, 21.5, TOL);
    cost_timeline_free(&t);
}
END_TEST

START_TEST(test_bad_input)
{
    const double f[2] = {1, 1}, b[2] = {2, -1}, nan2[2] = {NAN, 1};
    cost_sim_input in;
    cost_timeline t;
    util_error err;

    memset(&err, 0, sizeof err);
    input(&in, 0, 1, 1, FMT_SCHED_1F1B, f, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_ptr_null(t.events);
    input(&in, 2, 1, 1, FMT_SCHED_1F1B, f, b);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.path, "bwd[1]");
    input(&in, 2, 1, 1, FMT_SCHED_1F1B, f, f);
    in.send_act = nan2;
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 2, 1, 1, 7, f, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 2, 1, 1, FMT_SCHED_1F1B, NULL, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 2, 1, 1, FMT_SCHED_1F1B, f, f);
    in.tied_s = 1;
    in.tied_first = 1;
    in.tied_last = 1;
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_str_eq(cost_event_name(COST_EV_SEND_GRAD), "send-gradient");
    ck_assert_ptr_null(cost_event_name(COST_EV_NKINDS));
    ck_assert_int_eq(cost_fidelity_from_name("simulate"), COST_FIDELITY_SIMULATE);
    ck_assert_int_eq(cost_fidelity_from_name("exact"), -1);
    ck_assert_str_eq(cost_fidelity_name(COST_FIDELITY_ANALYTIC), "analytic");
}
END_TEST

/* ---- agreement with AMP eq. 5 ---------------------------------------- */

/* Where eq. 5, (gas - 1) max t_j + sum t_j + sum e_j, is exact:
 * (a) equal stage times and free links, either schedule: every stage
 *     runs gas micro-batches back to back after a fill of j forwards
 *     and before a drain of j backwards, so T = (gas + pp - 1) t;
 * (b) gas = 1, any times and links: the single micro-batch goes down and
 *     back up, T = sum (f_j + b_j) + sum (a_j + g_j) = sum t_j + sum e_j;
 * (c) pp = 1: T = gas t.
 * Unequal times with gas > 1 or links with pp > 2 and gas > 1 are not
 * exact (see test_slow_link_steady_state). */
START_TEST(test_eq5_exact_cases)
{
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 42u, 3u);
    for (trial = 0; trial < 200; trial++) {
        int pp = 1 + (int)util_pcg32_bounded(&rng, 8);
        int gas = 1 + (int)util_pcg32_bounded(&rng, 12);
        int sched = (int)util_pcg32_bounded(&rng, 2), j;
        double fe = 0.1 + util_pcg32_double(&rng), be = 2.0 * fe;
        double f[8], b[8], a[7], g[7], sum_t = 0.0, sum_e = 0.0, eq5;
        cost_sim_input in;
        cost_timeline t;

        for (j = 0; j < 8; j++) {
            f[j] = fe;
            b[j] = be;
        }
        input(&in, pp, 1, gas, sched, f, b);
        run(&in, &t); /* (a) */
        eq5 = (double)(gas - 1) * (fe + be) + (double)pp * (fe + be);
        ck_assert_msg(fabs(t.iter_s - eq5) < 1e-9 * eq5,
                      "equal stages pp %d gas %d %s: %.12g vs eq. 5 %.12g", pp,
                      gas, sched ? "gpipe" : "1f1b", t.iter_s, eq5);
        cost_timeline_free(&t);
        for (j = 0; j < pp; j++) { /* (b) */
            f[j] = util_pcg32_double(&rng);
            b[j] = 3.0 * util_pcg32_double(&rng);
            sum_t += f[j] + b[j];
            if (j + 1 < pp) {
                a[j] = 0.2 * util_pcg32_double(&rng);
                g[j] = 0.2 * util_pcg32_double(&rng);
                sum_e += a[j] + g[j];
            }
        }
        input(&in, pp, 1, 1, sched, f, b);
        in.send_act = a;
        in.send_grad = g;
        run(&in, &t);
        ck_assert_msg(fabs(t.iter_s - (sum_t + sum_e)) < 1e-9 * (sum_t + sum_e),
                      "gas 1 pp %d: %.12g vs eq. 5 %.12g", pp, t.iter_s,
                      sum_t + sum_e);
        cost_timeline_free(&t);
        input(&in, 1, 1, gas, sched, f, b); /* (c) */
        run(&in, &t);
        ck_assert_double_eq_tol(t.iter_s, (double)gas * (f[0] + b[0]), 1e-9);
        cost_timeline_free(&t);
    }
}
END_TEST

/* ---- properties on random inputs ------------------------------------- */

typedef struct rnd_case {
    int pp, dp, gas, sched, overlap;
    double f[24], b[24], a[24], g[24], dps[6], opt[6];
    int links, sync;
} rnd_case;

static void random_case(util_pcg32 *rng, rnd_case *c)
{
    int i;

    memset(c, 0, sizeof *c);
    c->pp = 1 + (int)util_pcg32_bounded(rng, 6);
    c->dp = 1 + (int)util_pcg32_bounded(rng, 4);
    c->gas = 1 + (int)util_pcg32_bounded(rng, 10);
    c->sched = (int)util_pcg32_bounded(rng, 2);
    c->overlap = (int)util_pcg32_bounded(rng, 2);
    c->links = (int)util_pcg32_bounded(rng, 3) != 0;
    c->sync = (int)util_pcg32_bounded(rng, 2);
    for (i = 0; i < c->pp * c->dp; i++) {
        c->f[i] = util_pcg32_double(rng);
        c->b[i] = util_pcg32_double(rng) * 3.0;
        if (util_pcg32_bounded(rng, 8) == 0)
            c->f[i] = 0.0; /* zero-time stages are allowed */
        c->a[i] = util_pcg32_bounded(rng, 4) == 0 ? 0.0 : util_pcg32_double(rng);
        c->g[i] = util_pcg32_double(rng) * 0.5;
    }
    for (i = 0; i < c->pp; i++) {
        c->dps[i] = util_pcg32_double(rng);
        c->opt[i] = util_pcg32_double(rng) * 0.1;
    }
}

static void case_input(const rnd_case *c, cost_sim_input *in)
{
    input(in, c->pp, c->dp, c->gas, c->sched, c->f, c->b);
    in->overlap_dp = c->overlap;
    if (c->links) {
        in->send_act = c->a;
        in->send_grad = c->g;
    }
    if (c->sync) {
        in->dp_s = c->dps;
        in->opt_s = c->opt;
    }
}

/* Event of (kind, r, j, m) or NULL, through an index built per case. */
typedef struct ev_index {
    const cost_event **fwd, **bwd, **act, **grad;
    int pp, gas;
} ev_index;

static size_t ix(const ev_index *x, int r, int j, int m)
{
    return ((size_t)r * (size_t)x->pp + (size_t)j) * (size_t)x->gas + (size_t)m;
}

static void check_properties(const rnd_case *c, const cost_timeline *t)
{
    int pp = c->pp, dp = c->dp, gas = c->gas, r, j, m, i, ncomp = 0;
    size_t n = (size_t)pp * (size_t)dp * (size_t)gas;
    ev_index x;
    double last_end = 0.0, max_busy = 0.0, pipe_end = 0.0;
    double *stage_last = calloc((size_t)pp * (size_t)dp, sizeof(double));
    double *free_at = calloc((size_t)pp * (size_t)dp * 3, sizeof(double));

    x.pp = pp;
    x.gas = gas;
    x.fwd = calloc(n, sizeof *x.fwd);
    x.bwd = calloc(n, sizeof *x.bwd);
    x.act = calloc(n, sizeof *x.act);
    x.grad = calloc(n, sizeof *x.grad);
    ck_assert(stage_last && free_at && x.fwd && x.bwd && x.act && x.grad);
    for (i = 0; i < t->nevents; i++) {
        const cost_event *e = &t->events[i];
        const cost_event **slot = NULL;
        ck_assert(e->end >= e->start && e->start >= 0.0);
        if (i > 0) { /* sorted: start, stage, replica, kind, micro */
            const cost_event *p = &t->events[i - 1];
            ck_assert(p->start < e->start ||
                      (p->start == e->start &&
                       (p->stage < e->stage ||
                        (p->stage == e->stage &&
                         (p->replica < e->replica ||
                          (p->replica == e->replica &&
                           (p->kind < e->kind ||
                            (p->kind == e->kind && p->micro <= e->micro))))))));
        }
        if (e->end > last_end)
            last_end = e->end;
        ck_assert(e->stage >= 0 && e->stage < pp && e->replica >= 0 && e->replica < dp);
        if (e->kind == COST_EV_FWD || e->kind == COST_EV_BWD) {
            size_t q = (size_t)e->replica * (size_t)pp + (size_t)e->stage;
            double d = e->kind == COST_EV_FWD ? c->f[q] : c->b[q];
            ck_assert(fabs(e->end - e->start - d) < 1e-9);
            /* one resource per (replica, stage): no overlap */
            ck_assert_msg(e->start >= free_at[3 * q] - 1e-12,
                          "overlap on stage %d replica %d", e->stage, e->replica);
            free_at[3 * q] = e->end;
            ncomp++;
        }
        if (e->kind == COST_EV_SEND_ACT || e->kind == COST_EV_SEND_GRAD) {
            int cut = e->kind == COST_EV_SEND_ACT ? e->stage : e->stage - 1;
            size_t q = (size_t)e->replica * (size_t)pp + (size_t)cut;
            size_t lq = (size_t)e->replica * (size_t)(pp - 1) + (size_t)cut;
            int dir = e->kind == COST_EV_SEND_ACT ? 1 : 2;
            ck_assert(cut >= 0 && cut < pp - 1 && c->links);
            ck_assert(fabs(e->end - e->start -
                           (dir == 1 ? c->a[lq] : c->g[lq])) < 1e-9);
            /* one resource per direction of a replica's cut */
            ck_assert(e->start >= free_at[3 * q + (size_t)dir] - 1e-12);
            free_at[3 * q + (size_t)dir] = e->end;
        }
        if (e->micro >= 0) {
            ck_assert(e->micro < gas);
            switch (e->kind) {
            case COST_EV_FWD: slot = &x.fwd[ix(&x, e->replica, e->stage, e->micro)]; break;
            case COST_EV_BWD: slot = &x.bwd[ix(&x, e->replica, e->stage, e->micro)]; break;
            case COST_EV_SEND_ACT: slot = &x.act[ix(&x, e->replica, e->stage, e->micro)]; break;
            default: slot = &x.grad[ix(&x, e->replica, e->stage, e->micro)]; break;
            }
            ck_assert_ptr_null(*slot); /* each at most once */
            *slot = e;
        }
    }
    ck_assert_int_eq(ncomp, 2 * (int)n);
    ck_assert(fabs(t->iter_s - last_end) < 1e-12);
    for (r = 0; r < dp; r++)
        for (j = 0; j < pp; j++) {
            size_t q = (size_t)r * (size_t)pp + (size_t)j;
            double path = 0.0;
            int jj, most = 0, live = 0, want;
            for (m = 0; m < gas; m++) {
                const cost_event *fe = x.fwd[ix(&x, r, j, m)], *be = x.bwd[ix(&x, r, j, m)];
                ck_assert(fe != NULL && be != NULL);
                ck_assert(be->start >= fe->end - 1e-12); /* own forward first */
                if (j > 0) { /* input of the forward from stage j - 1 */
                    const cost_event *pf = x.fwd[ix(&x, r, j - 1, m)];
                    const cost_event *s = x.act[ix(&x, r, j - 1, m)];
                    double arrive = s ? s->end : pf->end;
                    if (s)
                        ck_assert(s->start >= pf->end - 1e-12);
                    ck_assert(fe->start >= arrive - 1e-12);
                }
                if (j + 1 < pp) { /* gradient from stage j + 1 */
                    const cost_event *nb = x.bwd[ix(&x, r, j + 1, m)];
                    const cost_event *s = x.grad[ix(&x, r, j + 1, m)];
                    double arrive = s ? s->end : nb->end;
                    if (s)
                        ck_assert(s->start >= nb->end - 1e-12);
                    ck_assert(be->start >= arrive - 1e-12);
                }
                if (be->end > stage_last[q])
                    stage_last[q] = be->end;
            }
            if (stage_last[q] > pipe_end)
                pipe_end = stage_last[q];
            ck_assert(fabs(t->busy_s[q] - gas * (c->f[q] + c->b[q])) < 1e-9);
            if (t->busy_s[q] > max_busy)
                max_busy = t->busy_s[q];
            /* micro-batch 0 goes down and back up: a lower bound */
            for (jj = 0; jj < pp; jj++) {
                size_t qq = (size_t)r * (size_t)pp + (size_t)jj;
                path += c->f[qq] + c->b[qq];
            }
            ck_assert(t->iter_s >= path - 1e-9);
            for (i = 0; i < t->nevents; i++) { /* activations kept */
                const cost_event *e = &t->events[i];
                if (e->replica != r || e->stage != j)
                    continue;
                if (e->kind == COST_EV_FWD && ++live > most)
                    most = live;
                if (e->kind == COST_EV_BWD)
                    live--;
            }
            want = c->sched == FMT_SCHED_GPIPE ? gas : (pp - j < gas ? pp - j : gas);
            /* what the memory model assumes (cost_inflight) */
            ck_assert_int_eq(most, want);
        }
    ck_assert(t->iter_s >= max_busy - 1e-9); /* the busiest stage's work */
    for (i = 0; i < t->nevents; i++) {
        const cost_event *e = &t->events[i];
        if (e->kind == COST_EV_DP_ALLREDUCE) {
            double ready = 0.0;
            ck_assert(c->sync);
            for (r = 0; r < dp; r++)
                if (stage_last[(size_t)r * (size_t)pp + (size_t)e->stage] > ready)
                    ready = stage_last[(size_t)r * (size_t)pp + (size_t)e->stage];
            ck_assert(e->start >= (c->overlap ? ready : pipe_end) - 1e-12);
            ck_assert(fabs(e->end - e->start - c->dps[e->stage]) < 1e-9);
        }
        if (e->kind == COST_EV_OPTIMIZER) {
            int k;
            for (k = 0; k < t->nevents; k++)
                if (t->events[k].kind == COST_EV_DP_ALLREDUCE &&
                    t->events[k].stage == e->stage)
                    ck_assert(e->start >= t->events[k].end - 1e-12);
        }
    }
    free(stage_last);
    free(free_at);
    free(x.fwd);
    free(x.bwd);
    free(x.act);
    free(x.grad);
}

START_TEST(test_random_properties)
{
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 2024u, 7u);
    for (trial = 0; trial < 400; trial++) {
        rnd_case c;
        cost_sim_input in;
        cost_timeline t, u;
        int k;

        random_case(&rng, &c);
        case_input(&c, &in);
        run(&in, &t);
        check_properties(&c, &t);
        /* monotone: a longer operation never shortens the iteration */
        k = (int)util_pcg32_bounded(&rng, (uint32_t)(c.pp * c.dp));
        if (util_pcg32_bounded(&rng, 2))
            c.f[k] += 0.5;
        else
            c.b[k] += 0.5;
        case_input(&c, &in);
        run(&in, &u);
        ck_assert_msg(u.iter_s >= t.iter_s - 1e-12, "trial %d: %.12g < %.12g",
                      trial, u.iter_s, t.iter_s);
        /* overlap never makes it slower */
        if (c.sync && !c.overlap) {
            cost_timeline v;
            in.overlap_dp = 1;
            run(&in, &v);
            ck_assert(v.iter_s <= u.iter_s + 1e-12);
            cost_timeline_free(&v);
        }
        cost_timeline_free(&t);
        cost_timeline_free(&u);
    }
}
END_TEST

/* ---- cost-model front end -------------------------------------------- */

typedef struct world {
    fmt_cluster c;
    fmt_model m;
    cost_params p;
} world;

static void load(world *w, const char *cluster)
{
    util_error err;

    memset(w, 0, sizeof *w);
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_load_cluster(cluster, &w->c, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_msg(fmt_load_model(EXAMPLES "gpt2-amp.json", &w->m, &err) == UTIL_OK,
                  "%s", err.msg);
    cost_params_init(&w->p);
}

static void unload(world *w)
{
    fmt_model_free(&w->m);
    fmt_cluster_free(&w->c);
}

/* Strategy with Megatron placement and the even split of the 30 layers. */
static void strategy(fmt_strategy *s, int tp, int dp, int pp, int mbs, int gas)
{
    int i;

    ck_assert_int_eq(fmt_strategy_alloc(s, tp, dp, pp), UTIL_OK);
    s->mbs = mbs;
    s->gas = gas;
    s->schedule = FMT_SCHED_1F1B;
    for (i = 0; i < tp * dp * pp; i++)
        s->ranks[i] = i;
    for (i = 0; i <= pp; i++)
        s->bounds[i] = 30 * i / pp;
}

/* gas = 1 with no optimizer time: eq. 5 is exact for any stage times and
 * links, so with dp = 1 the simulated iteration equals cost_evaluate's
 * (pipeline + tied all-reduce) on the real cluster's links. */
START_TEST(test_model_matches_eq5)
{
    world w;
    fmt_strategy s;
    cost_result r;
    cost_timeline t;
    util_error err;

    load(&w, EXAMPLES "amp-het.json");
    w.p.optimizer_bytes = 0.0;
    strategy(&s, 1, 1, 16, 1, 1);
    ck_assert_int_eq(cost_evaluate(&w.c, &w.m, NULL, &w.p, &s, &r, &err), UTIL_OK);
    ck_assert_int_eq(cost_simulate(&w.c, &w.m, NULL, &w.p, &s, 0, &t, &err), UTIL_OK);
    ck_assert_msg(fabs(t.iter_s - r.iter_s) < 1e-9 * r.iter_s,
                  "simulated %.12g, eq. 5 %.12g", t.iter_s, r.iter_s);
    ck_assert(count(&t, COST_EV_SEND_ACT) == 15); /* one per cut */
    ck_assert(count(&t, COST_EV_DP_ALLREDUCE) == 2); /* tied, on stages 0, 15 */
    cost_timeline_free(&t);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    unload(&w);
}
END_TEST

/* Each replica on its own devices: on amp-het (12 V100, then 4 T4),
 * tp 1, dp 2, pp 8 with replica 1's stage 0 moved to a T4 (swapped with
 * replica 1's stage 6) makes that stage slower than replica 0's, while
 * replica 0's stage 0 is unchanged. */
START_TEST(test_model_per_replica)
{
    world w;
    fmt_strategy s;
    cost_timeline t, u;
    util_error err;
    int dev;

    load(&w, EXAMPLES "amp-het.json");
    strategy(&s, 1, 2, 8, 1, 16);
    ck_assert_int_eq(cost_simulate(&w.c, &w.m, NULL, &w.p, &s, 0, &t, &err), UTIL_OK);
    ck_assert_double_eq_tol(t.busy_s[0], t.busy_s[8], 1e-12); /* both V100 */
    ck_assert_double_eq_tol(t.busy_s[6], t.busy_s[14], 1e-12); /* both T4 */
    ck_assert(t.busy_s[6] != t.busy_s[0]);
    /* rank of (stage j, replica d) is j * dp + d */
    dev = s.ranks[0 * 2 + 1];
    s.ranks[0 * 2 + 1] = s.ranks[6 * 2 + 1];
    s.ranks[6 * 2 + 1] = dev;
    ck_assert_int_eq(cost_simulate(&w.c, &w.m, NULL, &w.p, &s, 0, &u, &err), UTIL_OK);
    ck_assert_double_eq_tol(u.busy_s[0], t.busy_s[0], 1e-12);
    ck_assert_msg(u.busy_s[8] > 1.5 * u.busy_s[0],
                  "replica 1 stage 0 on a T4: %g vs %g on a V100", u.busy_s[8],
                  u.busy_s[0]);
    ck_assert(u.iter_s > t.iter_s);
    cost_timeline_free(&t);
    cost_timeline_free(&u);
    fmt_strategy_free(&s);
    unload(&w);
}
END_TEST

/* The timeline's order, stated: start, then stage, replica, kind,
 * micro-batch, chunk, end. */
static int event_before(const cost_event *a, const cost_event *b)
{
    if (a->start != b->start)
        return a->start < b->start;
    if (a->stage != b->stage)
        return a->stage < b->stage;
    if (a->replica != b->replica)
        return a->replica < b->replica;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    if (a->micro != b->micro)
        return a->micro < b->micro;
    if (a->chunk != b->chunk)
        return a->chunk < b->chunk;
    return a->end < b->end;
}

/* What bounds a simulation: the events of an iteration in order however
 * many runs they come in (replicas of unequal speed, interleaved
 * chunks); an iteration of more than COST_SIM_MAX_EVENTS events refused
 * at once, naming the count; a deadline already passed ends
 * cost_simulate_until with UTIL_ETIMEOUT and no timeline, a deadline of
 * 0 (none) gives cost_simulate's timeline. */
START_TEST(test_events_ordered_and_bounded)
{
    enum { PP = 4, DP = 24, GAS = 16 };
    double fwd[PP * DP], bwd[PP * DP];
    cost_sim_input in;
    cost_timeline t, u;
    util_error err;
    world w;
    fmt_strategy s;
    int i, e;

    for (i = 0; i < PP * DP; i++) { /* every replica at its own pace */
        fwd[i] = 0.001 * (1 + (i * 7) % 5);
        bwd[i] = 0.002 * (1 + (i * 3) % 4);
    }
    input(&in, PP, DP, GAS, FMT_SCHED_1F1B, fwd, bwd);
    in.vpp = 2;
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_OK);
    ck_assert_int_ge(t.nevents, 2 * PP * DP * GAS * 2);
    for (e = 1; e < t.nevents; e++)
        ck_assert_msg(!event_before(&t.events[e], &t.events[e - 1]),
                      "event %d before event %d", e, e - 1);
    cost_timeline_free(&t);

    /* 4096 x 64 x 64 micro-batch steps: about 2^26 events */
    input(&in, 64, 4096, 64, FMT_SCHED_1F1B, fwd, bwd);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_msg(strstr(err.msg, "4096 replicas x 64 stages x 64 micro-batches (x 1 "
                                  "model chunks) make up to") != NULL &&
                      strstr(err.msg, "more than the 16777216 the simulator holds"),
                  "%s", err.msg);
    ck_assert_int_eq(t.nevents, 0);

    load(&w, EXAMPLES "amp-het.json");
    strategy(&s, 1, 2, 8, 1, 16);
    ck_assert_int_eq(cost_simulate_until(&w.c, &w.m, NULL, &w.p, &s, 0,
                                         util_now() - 1.0, &t, &err),
                     UTIL_ETIMEOUT);
    ck_assert_int_eq(t.nevents, 0);
    ck_assert_ptr_null(t.events);
    ck_assert_int_eq(cost_simulate_until(&w.c, &w.m, NULL, &w.p, &s, 0, 0.0, &t, &err),
                     UTIL_OK);
    ck_assert_int_eq(cost_simulate(&w.c, &w.m, NULL, &w.p, &s, 0, &u, &err), UTIL_OK);
    ck_assert_int_eq(t.nevents, u.nevents);
    for (e = 0; e < t.nevents; e++)
        ck_assert(!event_before(&t.events[e], &u.events[e]) &&
                  !event_before(&u.events[e], &t.events[e]));
    cost_timeline_free(&t);
    cost_timeline_free(&u);
    fmt_strategy_free(&s);
    unload(&w);
}
END_TEST

/* fidelity = simulate: cost_evaluate's time is the simulator's, the
 * breakdown still adds up, every field stays >= 0; memory unchanged. */
START_TEST(test_fidelity_evaluate)
{
    static const int shapes[][5] = {{1, 2, 8, 1, 16}, {1, 1, 16, 1, 32},
                                    {2, 2, 4, 2, 8},  {1, 16, 1, 2, 1},
                                    {4, 1, 4, 4, 8}};
    world w;
    util_error err;
    size_t k;
    int ov;

    load(&w, EXAMPLES "amp-het.json");
    for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (ov = 0; ov < 2; ov++) {
            fmt_strategy s;
            cost_result a, r;
            cost_timeline t;
            const cost_breakdown *bd = &r.bd;
            double sum;
            strategy(&s, shapes[k][0], shapes[k][1], shapes[k][2], shapes[k][3],
                     shapes[k][4]);
            w.p.fidelity = COST_FIDELITY_ANALYTIC;
            w.p.overlap_dp = ov;
            ck_assert_int_eq(cost_evaluate(&w.c, &w.m, NULL, &w.p, &s, &a, &err), UTIL_OK);
            w.p.fidelity = COST_FIDELITY_SIMULATE;
            ck_assert_int_eq(cost_evaluate(&w.c, &w.m, NULL, &w.p, &s, &r, &err), UTIL_OK);
            ck_assert_int_eq(cost_simulate(&w.c, &w.m, NULL, &w.p, &s, ov, &t, &err),
                             UTIL_OK);
            ck_assert_double_eq_tol(r.iter_s, t.iter_s, 1e-12);
            sum = bd->compute + bd->tp_comm + bd->bubble + bd->p2p + bd->dp_comm +
                  bd->optimizer;
            ck_assert_double_eq_tol(sum, bd->total, 1e-9);
            ck_assert_double_eq_tol(bd->total, r.iter_s, 1e-12);
            ck_assert(bd->bubble >= 0.0 && bd->p2p >= 0.0 && bd->dp_comm >= 0.0 &&
                      bd->optimizer >= 0.0);
            ck_assert_double_eq_tol(bd->compute, a.bd.compute, 1e-12);
            ck_assert_int_eq(r.fits, a.fits);
            ck_assert_double_eq_tol(r.mem_bytes[0], a.mem_bytes[0], 1e-3);
            if (shapes[k][2] == 1) /* pp = 1: the same formula */
                ck_assert_double_eq_tol(r.iter_s, a.iter_s, 1e-9 * a.iter_s);
            cost_timeline_free(&t);
            cost_result_free(&a);
            cost_result_free(&r);
            fmt_strategy_free(&s);
        }
    /* the parameter by name, as --param fidelity=1 */
    ck_assert_int_eq(cost_params_set(&w.p, "fidelity", 0, &err), UTIL_OK);
    ck_assert_int_eq(w.p.fidelity, COST_FIDELITY_ANALYTIC);
    ck_assert_int_eq(cost_params_set(&w.p, "fidelity", 2, &err), UTIL_EINVAL);
    ck_assert_int_eq(cost_params_set(&w.p, "overlap_dp", 1, &err), UTIL_OK);
    unload(&w);
}
END_TEST

/* The search prunes analytically and re-ranks its best with the
 * simulator: results sorted by simulated time, top_k kept, each time the
 * one cost_evaluate gives with fidelity simulate. */
START_TEST(test_search_reranks)
{
    world w;
    search_params sp;
    search_result res;
    util_error err;
    int i;

    load(&w, EXAMPLES "amp-het.json");
    search_params_init(&sp);
    sp.global_batch = 32;
    sp.top_k = 3;
    w.p.fidelity = COST_FIDELITY_SIMULATE;
    ck_assert_int_eq(search_plan(&w.c, &w.m, NULL, &w.p, &sp, &res, &err), UTIL_OK);
    ck_assert_int_eq(res.n, 3);
    for (i = 0; i < res.n; i++) {
        cost_result r;
        ck_assert_int_eq(cost_evaluate(&w.c, &w.m, NULL, &w.p, &res.cands[i].s, &r,
                                       &err), UTIL_OK);
        ck_assert_double_eq_tol(r.iter_s, res.cands[i].r.iter_s, 1e-12);
        if (i > 0)
            ck_assert(res.cands[i - 1].r.iter_s <= res.cands[i].r.iter_s);
        cost_result_free(&r);
    }
    search_result_free(&res);
    unload(&w);
}
END_TEST

/* ---- ranking quality of both fidelities on AMP's real runs ----------- */

#define AMP_DATA TU_DATA "/amp/"

/* Both fidelities (and the simulator with DP overlap) on both sets of
 * AMP runs, scored as tests/test_calibrate_ranking.c does; printed for
 * docs/simulator.md, and each must beat AMP's own predictions on every
 * metric (rho, tau-b, top-1 regret, MAPE). */
START_TEST(test_ranking_both_fidelities)
{
    static const struct {
        const char *name, *data, *cluster;
        double rho, tau, regret, mape;
    } sets[2] = {
        {"homogeneous", "homogeneous.json", "amp-homogeneous.json", 0.935, 0.795,
         1.10, 0.476},
        {"het_cluster", "het_cluster.json", "amp-het.json", 0.394, 0.306, 1.148,
         0.494}};
    int e, v;

    for (e = 0; e < 2; e++)
        for (v = 0; v < 3; v++) {
            world w;
            fmt_profile prof;
            util_error err;
            calib_trial *t = NULL;
            calib_ranking rk;
            int n = 0;
            char path[1024];

            snprintf(path, sizeof path, "%s%s", EXAMPLES, sets[e].cluster);
            load(&w, path);
            memset(&prof, 0, sizeof prof);
            memset(&err, 0, sizeof err);
            w.p.fidelity = v == 0 ? COST_FIDELITY_ANALYTIC : COST_FIDELITY_SIMULATE;
            w.p.overlap_dp = v == 2;
            ck_assert_msg(fmt_profile_from_amp(AMP_DATA "profiles.json", "gpt2",
                                                &w.m, &prof, &err) == UTIL_OK,
                          "%s", err.msg);
            snprintf(path, sizeof path, "%s%s", AMP_DATA, sets[e].data);
            ck_assert_msg(calib_amp_trials(path, &w.c, &w.m, &prof, &w.p, &t, &n,
                                          &err) == UTIL_OK, "%s", err.msg);
            calib_score_trials(t, n, &rk);
            printf("%-12s %-8s%s rho %.4f tau-b %.4f top-1 regret %.4f MAPE %.2f%%\n",
                   sets[e].name, v == 0 ? "analytic" : "simulate",
                   v == 2 ? "+overlap" : "        ", rk.spearman, rk.kendall,
                   rk.top1_regret, 100.0 * rk.mape);
            ck_assert(rk.spearman > sets[e].rho && rk.kendall > sets[e].tau);
            ck_assert(rk.top1_regret > 0.0 && rk.top1_regret < sets[e].regret);
            ck_assert(rk.mape < sets[e].mape);
            free(t);
            fmt_profile_free(&prof);
            unload(&w);
        }
    fflush(stdout);
}
END_TEST

/* ---- command line ---------------------------------------------------- */

/* Run the planner from the source directory; stdout into a malloc'd
 * string, exit status into *status. */
static char *planner(const char *args, int *status)
{
    char cmd[2048];

    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>/dev/null", HETPLAN_SOURCE_DIR,
             HETPLAN_PLANNER, args);
    return tu_capture(cmd, status);
}

START_TEST(test_cli_fidelity)
{
    char *out;
    int st, n;
    cJSON *doc, *s0, *tl, *e;
    double last = -1.0, pred;

    out = planner("--cluster examples/amp-het.json --model examples/gpt2-amp.json "
                  "--fidelity exact", &st);
    ck_assert_int_eq(st, 2);
    free(out);
    out = planner("--cluster examples/amp-het.json --model examples/gpt2-amp.json "
                  "--fidelity simulate --top-k 2 --format json", &st);
    ck_assert_int_eq(st, 0);
    doc = cJSON_Parse(out);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "settings"),
                                         "fidelity")->valuestring, "simulate");
    s0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 0);
    tl = cJSON_GetObjectItem(s0, "timeline");
    ck_assert_msg(cJSON_IsArray(tl), "no timeline for the first strategy");
    ck_assert_ptr_null(cJSON_GetObjectItem(
        cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "strategies"), 1), "timeline"));
    n = cJSON_GetArraySize(tl);
    ck_assert_int_gt(n, 0);
    cJSON_ArrayForEach(e, tl) {
        double start = cJSON_GetObjectItem(e, "start_s")->valuedouble;
        ck_assert(start >= last);
        last = start;
        ck_assert(cJSON_IsString(cJSON_GetObjectItem(e, "kind")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "micro")));
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "end_s")));
    }
    pred = cJSON_GetObjectItem(s0, "predicted_s")->valuedouble;
    e = cJSON_GetArrayItem(tl, n - 1);
    ck_assert(cJSON_GetObjectItem(e, "end_s")->valuedouble <= pred + 1e-12);
    cJSON_Delete(doc);
    free(out);
    out = planner("--cluster examples/amp-het.json --model examples/gpt2-amp.json "
                  "--fidelity analytic --top-k 1 --format json", &st);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_null(strstr(out, "\"timeline\""));
    ck_assert_ptr_nonnull(strstr(out, "\"fidelity\":\t\"analytic\""));
    free(out);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("simulate");
    TCase *hand = tcase_create("hand"), *prop = tcase_create("properties");
    TCase *model = tcase_create("model");

    tcase_add_test(hand, test_two_stages_unequal);
    tcase_add_test(hand, test_three_stages_1f1b);
    tcase_add_test(hand, test_four_stages_slow_links);
    tcase_add_test(hand, test_slow_link_steady_state);
    tcase_add_test(hand, test_gpipe_vs_1f1b);
    tcase_add_test(hand, test_overlap_dp);
    tcase_add_test(hand, test_slow_replica);
    tcase_add_test(hand, test_tied_weights);
    tcase_add_test(hand, test_bad_input);
    tcase_set_timeout(prop, 120);
    tcase_add_test(prop, test_eq5_exact_cases);
    tcase_add_test(prop, test_random_properties);
    tcase_set_timeout(model, 300);
    tcase_add_test(model, test_model_matches_eq5);
    tcase_add_test(model, test_model_per_replica);
    tcase_add_test(model, test_events_ordered_and_bounded);
    tcase_add_test(model, test_fidelity_evaluate);
    tcase_add_test(model, test_search_reranks);
    tcase_add_test(model, test_cli_fidelity);
    suite_add_tcase(s, hand);
    suite_add_tcase(s, prop);
    suite_add_tcase(s, model);
    return s;
}

/* Needs AMP's real runs (../shared/data/amp). */
static Suite *data_suite(void)
{
    Suite *s = suite_create("simulate on AMP's runs");
    TCase *amp = tcase_create("amp");

    tcase_set_timeout(amp, 300);
    tcase_add_test(amp, test_ranking_both_fidelities);
    suite_add_tcase(s, amp);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, plain_suite, data_suite, TU_DATA "/amp");
}
