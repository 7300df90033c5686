/* tests/test_costmodel_interleaved.c: the interleaved 1F1B schedule of
 * the pipeline simulator (costmodel/simulate.c, docs/simulator.md):
 * the closed form of Narayanan et al. (SC'21, sec. 2.2.1) for uniform
 * stages, an independent brute-force dependency solver on random inputs,
 * the launcher's pass order (launcher/sched.c), bad input, the cost
 * model's front end, the launcher's composed timeline and the report. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "launch.h"
#include "plan.h"
#include "report.h"
#include "testutil.h"

#define EXAMPLES HETPLAN_SOURCE_DIR "/examples/"

static void run(const cost_sim_input *in, cost_timeline *t)
{
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_msg(cost_simulate_stages(in, t, &err) == UTIL_OK, "simulate: %s",
                  err.msg);
}

static void input(cost_sim_input *in, int pp, int gas, int vpp,
                  const double *fwd, const double *bwd)
{
    memset(in, 0, sizeof *in);
    in->pp = pp;
    in->dp = 1;
    in->gas = gas;
    in->vpp = vpp;
    in->schedule = FMT_SCHED_1F1B;
    in->fwd = fwd;
    in->bwd = bwd;
}

/* ---- the closed form -------------------------------------------------- */

/* Uniform stages (a device's forward t_f and backward t_b over all its v
 * chunks), free links: each device computes m (t_f + t_b) and the
 * pipeline bubble shrinks v-fold to (p - 1)(t_f + t_b) / v (SC'21 sec.
 * 2.2.1), so T = m (t_f + t_b) + (p - 1)(t_f + t_b) / v.  By hand:
 *   p 4, v 2, m 8, t_f 1, t_b 2: 8 * 3 + 3 * 3 / 2 = 28.5
 *   p 2, v 3, m 4, t_f 3, t_b 3: 4 * 6 + 1 * 6 / 3 = 26
 *   p 4, v 4, m 4 (all warm-up): 4 * 3 + 3 * 3 / 4 = 14.25
 * and the non-interleaved 1F1B of the same plans (m + p - 1)(t_f + t_b):
 * 11 * 3 = 33, 5 * 6 = 30, 7 * 3 = 21. */
START_TEST(test_closed_form_by_hand)
{
    static const struct {
        int p, v, m;
        double f, b, want, plain;
    } c[] = {{4, 2, 8, 1, 2, 28.5, 33}, {2, 3, 4, 3, 3, 26, 30},
             {4, 4, 4, 1, 2, 14.25, 21}};
    double f[8], b[8];
    cost_sim_input in;
    cost_timeline t;
    size_t i;
    int j;

    for (i = 0; i < sizeof c / sizeof c[0]; i++) {
        for (j = 0; j < c[i].p; j++) {
            f[j] = c[i].f;
            b[j] = c[i].b;
        }
        input(&in, c[i].p, c[i].m, c[i].v, f, b);
        run(&in, &t);
        ck_assert_msg(fabs(t.iter_s - c[i].want) < 1e-9, "p %d v %d m %d: %.12g, "
                      "expected %g", c[i].p, c[i].v, c[i].m, t.iter_s, c[i].want);
        ck_assert_int_eq(t.vpp, c[i].v);
        /* every chunk's forward and backward: 2 m v events per device */
        ck_assert_int_eq(t.nevents, 2 * c[i].m * c[i].v * c[i].p);
        ck_assert_double_eq_tol(t.busy_s[0], c[i].m * (c[i].f + c[i].b), 1e-9);
        cost_timeline_free(&t);
        in.vpp = 1;
        run(&in, &t);
        ck_assert_double_eq_tol(t.iter_s, c[i].plain, 1e-9);
        cost_timeline_free(&t);
    }
}
END_TEST

/* The same closed form over a grid of p, v, m and stage times. */
START_TEST(test_closed_form_grid)
{
    static const double fb[3][2] = {{1, 2}, {1, 1}, {0.25, 1}};
    double f[6], b[6];
    cost_sim_input in;
    cost_timeline t;
    int p, v, k, x, j;

    for (p = 2; p <= 6; p++)
        for (v = 2; v <= 4; v++)
            for (k = 1; k <= 3; k++)
                for (x = 0; x < 3; x++) {
                    double tt = fb[x][0] + fb[x][1], m = (double)(k * p);
                    double want = m * tt + (p - 1) * tt / v;
                    for (j = 0; j < p; j++) {
                        f[j] = fb[x][0];
                        b[j] = fb[x][1];
                    }
                    input(&in, p, k * p, v, f, b);
                    run(&in, &t);
                    ck_assert_msg(fabs(t.iter_s - want) < 1e-9 * want,
                                  "p %d v %d m %d f %g b %g: %.12g, expected %.12g",
                                  p, v, k * p, f[0], b[0], t.iter_s, want);
                    cost_timeline_free(&t);
                }
}
END_TEST

/* ---- brute force ------------------------------------------------------- */

/* An independent solver for one replica: every pass of every stage in the
 * launcher's order (launch_passes), every transfer on its link in the
 * sender's order; times are the least fixed point of
 *   pass start = max(end of the stage's previous pass, arrival of its input)
 *   transfer start = max(end of its pass, end of the link's previous one)
 * found by relaxing all of them until nothing changes (Bellman-Ford on
 * the dependency graph, no event queue, no sweep order). */
typedef struct brute {
    int p, v, m, V;
    launch_pass *ps;    /* p * 2 m v passes, stage j's at [j * 2 m v] */
    double *start, *end;/* of each pass */
    double *arr_act;    /* V * m: activation of micro at virtual stage vs */
    double *arr_grad;   /* V * m: gradient arriving at virtual stage vs */
} brute;

static void brute_run(brute *x, const cost_sim_input *in)
{
    int n = 2 * x->m * x->v, j, k, round, changed = 1;
    double *link = calloc((size_t)(2 * x->p), sizeof *link);

    x->V = x->p * x->v;
    x->ps = malloc((size_t)(x->p * n) * sizeof *x->ps);
    x->start = calloc((size_t)(x->p * n), sizeof *x->start);
    x->end = calloc((size_t)(x->p * n), sizeof *x->end);
    x->arr_act = calloc((size_t)(x->V * x->m), sizeof *x->arr_act);
    x->arr_grad = calloc((size_t)(x->V * x->m), sizeof *x->arr_grad);
    ck_assert(link && x->ps && x->start && x->end && x->arr_act && x->arr_grad);
    for (j = 0; j < x->p; j++)
        ck_assert_int_eq(launch_passes(FMT_SCHED_1F1B, x->v, j, x->p, x->m,
                                       &x->ps[j * n], n, NULL), n);
    for (round = 0; changed; round++) {
        ck_assert_msg(round <= x->p * n + 2, "brute force did not converge");
        changed = 0;
        for (k = 0; k < 2 * x->p; k++)
            link[k] = 0.0; /* links 0 .. p-1: activations j -> j+1 (p-1: wrap) */
        for (j = 0; j < x->p; j++) {
            double prev = 0.0;
            for (k = 0; k < n; k++) {
                const launch_pass *q = &x->ps[j * n + k];
                int vs = q->chunk * x->p + j, i = j * n + k;
                double ready = 0.0, s, e, d, *l, *dst;
                if (!q->bwd && vs > 0)
                    ready = x->arr_act[vs * x->m + q->micro];
                if (q->bwd && vs < x->V - 1)
                    ready = x->arr_grad[vs * x->m + q->micro];
                s = ready > prev ? ready : prev;
                e = s + (q->bwd ? in->bwd[j] : in->fwd[j]) / x->v;
                if (s != x->start[i] || e != x->end[i])
                    changed = 1;
                x->start[i] = s;
                x->end[i] = prev = e;
                if (!q->bwd && vs + 1 < x->V) {
                    l = &link[j];
                    d = j < x->p - 1 ? (in->send_act ? in->send_act[j] : 0.0)
                                     : (in->send_wrap ? in->send_wrap[0] : 0.0);
                    dst = &x->arr_act[(vs + 1) * x->m + q->micro];
                } else if (q->bwd && vs > 0) {
                    l = &link[x->p + j];
                    d = j > 0 ? (in->send_grad ? in->send_grad[j - 1] : 0.0)
                              : (in->send_wrap ? in->send_wrap[0] : 0.0);
                    dst = &x->arr_grad[(vs - 1) * x->m + q->micro];
                } else {
                    continue;
                }
                *l = (e > *l ? e : *l) + d;
                if (*dst != *l)
                    changed = 1;
                *dst = *l;
            }
        }
    }
    free(link);
}

static void brute_free(brute *x)
{
    free(x->ps);
    free(x->start);
    free(x->end);
    free(x->arr_act);
    free(x->arr_grad);
}

/* Random stage times, link times and wrap-around link, p 2..5, v 2..4,
 * m a multiple of p: every forward and backward of the simulation starts
 * and ends where the brute force puts it, and the iteration (no
 * all-reduce) is the end of the last pass. */
START_TEST(test_brute_force)
{
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 2021, 22);
    for (trial = 0; trial < 300; trial++) {
        double f[5], b[5], sa[4], sg[4], w[1], last = 0.0;
        cost_sim_input in;
        cost_timeline t;
        brute x;
        int j, i, n, matched = 0, links = trial % 3 != 0;

        memset(&x, 0, sizeof x);
        x.p = 2 + (int)util_pcg32_bounded(&rng, 4);
        x.v = 2 + (int)util_pcg32_bounded(&rng, 3);
        x.m = x.p * (1 + (int)util_pcg32_bounded(&rng, 3));
        for (j = 0; j < x.p; j++) {
            f[j] = 0.1 + util_pcg32_double(&rng);
            b[j] = 0.1 + 2.0 * util_pcg32_double(&rng);
            if (j < x.p - 1) {
                sa[j] = 0.3 * util_pcg32_double(&rng);
                sg[j] = 0.3 * util_pcg32_double(&rng);
            }
        }
        w[0] = 0.5 * util_pcg32_double(&rng);
        input(&in, x.p, x.m, x.v, f, b);
        if (links) {
            in.send_act = sa;
            in.send_grad = sg;
            in.send_wrap = w;
        }
        run(&in, &t);
        brute_run(&x, &in);
        n = 2 * x.m * x.v;
        for (i = 0; i < t.nevents; i++) {
            const cost_event *e = &t.events[i];
            int k;
            if (e->kind != COST_EV_FWD && e->kind != COST_EV_BWD)
                continue;
            for (k = 0; k < n; k++) {
                const launch_pass *q = &x.ps[e->stage * n + k];
                if (q->bwd == (e->kind == COST_EV_BWD) && q->micro == e->micro &&
                    q->chunk == e->chunk)
                    break;
            }
            ck_assert_int_lt(k, n);
            k += e->stage * n;
            ck_assert_msg(fabs(e->start - x.start[k]) < 1e-9 &&
                          fabs(e->end - x.end[k]) < 1e-9,
                          "trial %d p %d v %d m %d: %s stage %d micro %d chunk %d "
                          "[%g, %g], brute force [%g, %g]", trial, x.p, x.v, x.m,
                          cost_event_name(e->kind), e->stage, e->micro, e->chunk,
                          e->start, e->end, x.start[k], x.end[k]);
            matched++;
        }
        ck_assert_int_eq(matched, x.p * n);
        for (i = 0; i < x.p * n; i++)
            if (x.end[i] > last)
                last = x.end[i];
        ck_assert_double_eq_tol(t.iter_s, last, 1e-9);
        cost_timeline_free(&t);
        brute_free(&x);
    }
}
END_TEST

/* ---- the launcher's order --------------------------------------------- */

/* Each stage's forwards and backwards, by start time, are the passes
 * launch_passes issues (stage, micro-batch and chunk), for uneven stages
 * and slow links that move every start. */
START_TEST(test_launcher_order)
{
    const double f[4] = {1, 3, 0.5, 2}, b[4] = {2, 5, 1, 3};
    const double sa[3] = {0.4, 0.1, 0.7}, sg[3] = {0.2, 0.6, 0.3}, w[1] = {0.9};
    static const int pvm[][3] = {{4, 2, 8}, {4, 3, 4}, {3, 2, 9}, {2, 4, 6}};
    size_t c;

    for (c = 0; c < sizeof pvm / sizeof pvm[0]; c++) {
        int p = pvm[c][0], v = pvm[c][1], m = pvm[c][2], n = 2 * m * v, j, i;
        launch_pass *ps = malloc((size_t)n * sizeof *ps);
        cost_sim_input in;
        cost_timeline t;

        ck_assert_ptr_nonnull(ps);
        input(&in, p, m, v, f, b);
        in.send_act = sa;
        in.send_grad = sg;
        in.send_wrap = w;
        run(&in, &t);
        for (j = 0; j < p; j++) {
            int k = 0;
            ck_assert_int_eq(launch_passes(FMT_SCHED_1F1B, v, j, p, m, ps, n, NULL), n);
            for (i = 0; i < t.nevents; i++) { /* sorted by start */
                const cost_event *e = &t.events[i];
                if (e->stage != j || (e->kind != COST_EV_FWD && e->kind != COST_EV_BWD))
                    continue;
                ck_assert_int_lt(k, n);
                ck_assert_msg(ps[k].bwd == (e->kind == COST_EV_BWD) &&
                              ps[k].micro == e->micro && ps[k].chunk == e->chunk,
                              "p %d v %d m %d stage %d pass %d: simulated %s micro "
                              "%d chunk %d, launcher %s micro %d chunk %d", p, v, m,
                              j, k, cost_event_name(e->kind), e->micro, e->chunk,
                              ps[k].bwd ? "backward" : "forward", ps[k].micro,
                              ps[k].chunk);
                k++;
            }
            ck_assert_int_eq(k, n);
        }
        /* every micro-batch crosses the p v - 1 links each way once per
         * chunk boundary: (p - 1) v cuts, v - 1 wraps (sent by stage p - 1
         * for activations, by stage 0 for gradients) */
        {
            int act = 0, grad = 0, wa = 0, wg = 0;
            for (i = 0; i < t.nevents; i++) {
                const cost_event *e = &t.events[i];
                act += e->kind == COST_EV_SEND_ACT;
                grad += e->kind == COST_EV_SEND_GRAD;
                wa += e->kind == COST_EV_SEND_ACT && e->stage == p - 1;
                wg += e->kind == COST_EV_SEND_GRAD && e->stage == 0;
                if (e->kind == COST_EV_SEND_ACT && e->stage == p - 1)
                    ck_assert_double_eq_tol(e->end - e->start, w[0], 1e-12);
            }
            ck_assert_int_eq(act, m * (p * v - 1));
            ck_assert_int_eq(grad, m * (p * v - 1));
            ck_assert_int_eq(wa, m * (v - 1));
            ck_assert_int_eq(wg, m * (v - 1));
        }
        cost_timeline_free(&t);
        free(ps);
    }
}
END_TEST

/* What the interleaved schedule cannot run is refused, as the launcher
 * refuses it: GPipe, one stage, micro-batches not a multiple of pp. */
START_TEST(test_bad_input)
{
    const double f[4] = {1, 1, 1, 1}, bad[1] = {-1};
    cost_sim_input in;
    cost_timeline t;
    util_error err;

    memset(&err, 0, sizeof err);
    input(&in, 4, 6, 2, f, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.path, "vpp");
    ck_assert_ptr_null(t.events);
    input(&in, 1, 4, 2, f, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 4, 4, 2, f, f);
    in.schedule = FMT_SCHED_GPIPE;
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 4, 4, FMT_MAX_VPP + 1, f, f);
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    input(&in, 4, 4, 2, f, f);
    in.send_wrap = bad;
    ck_assert_int_eq(cost_simulate_stages(&in, &t, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.path, "send_wrap[0]");
    /* vpp 0 and 1 are the plain schedule */
    input(&in, 4, 6, 0, f, f);
    run(&in, &t);
    ck_assert_int_eq(t.vpp, 1);
    ck_assert_double_eq_tol(t.iter_s, (6 + 3) * 2.0, 1e-12);
    cost_timeline_free(&t);
}
END_TEST

/* ---- the cost model's front end --------------------------------------- */

/* GPT-2 (AMP's 30 layers) on amp-het, tp 1, dp 1, pp 4, gas 8: with vpp
 * 2 the strategy's timeline runs two chunks per device, with the same
 * busy time per device as vpp 1, and the wrap-around transfers on the
 * link from stage 3's device to stage 0's. */
START_TEST(test_model_interleaved)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    cost_params p;
    cost_timeline t1, t2;
    util_error err;
    double tmax = 0.0;
    int i, wraps = 0, chunk1 = 0;

    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_load_cluster(EXAMPLES "amp-het.json", &c, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_msg(fmt_load_model(EXAMPLES "gpt2-amp.json", &m, &err) == UTIL_OK,
                  "%s", err.msg);
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 1, 4), UTIL_OK);
    s.mbs = 1;
    s.gas = 8;
    s.schedule = FMT_SCHED_1F1B;
    for (i = 0; i < 4; i++)
        s.ranks[i] = i;
    for (i = 0; i <= 4; i++)
        s.bounds[i] = (int[]){0, 8, 16, 23, 30}[i];
    ck_assert_int_eq(cost_simulate(&c, &m, NULL, &p, &s, 0, &t1, &err), UTIL_OK);
    s.vpp = 2;
    ck_assert_msg(cost_simulate(&c, &m, NULL, &p, &s, 0, &t2, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_int_eq(t1.vpp, 1);
    ck_assert_int_eq(t2.vpp, 2);
    for (i = 0; i < 4; i++) {
        ck_assert_double_eq_tol(t2.busy_s[i], t1.busy_s[i], 1e-15);
        if (t1.busy_s[i] / 8 > tmax)
            tmax = t1.busy_s[i] / 8;
    }
    for (i = 0; i < t2.nevents; i++) {
        const cost_event *e = &t2.events[i];
        wraps += e->kind == COST_EV_SEND_ACT && e->stage == 3;
        chunk1 += e->kind == COST_EV_FWD && e->chunk == 1;
    }
    ck_assert_int_eq(wraps, 8);      /* chunk 0 -> 1 of each micro-batch */
    ck_assert_int_eq(chunk1, 4 * 8); /* every stage, every micro-batch */
    /* devices 3 -> 0 and 0 -> 1 are in the same 4-V100 node and both
     * carry a block's output: the wrap takes what cut 0 takes */
    {
        double d_wrap = -1.0, d_cut = -2.0;
        for (i = 0; i < t2.nevents; i++) {
            const cost_event *e = &t2.events[i];
            if (e->kind == COST_EV_SEND_ACT && e->stage == 3)
                d_wrap = e->end - e->start;
            if (e->kind == COST_EV_SEND_ACT && e->stage == 0)
                d_cut = e->end - e->start;
        }
        ck_assert_double_eq_tol(d_wrap, d_cut, 1e-15);
    }
    /* no device finishes before its own busy time, 8 t_max */
    ck_assert(t2.iter_s >= 8 * tmax - 1e-12);
    /* fidelity simulate: cost_evaluate's time is this timeline's (the
     * interleaved one), its breakdown still adds up */
    {
        cost_result r, r2;
        cost_timeline t3;
        cost_breakdown *bd = &r.bd;
        p.fidelity = COST_FIDELITY_SIMULATE;
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
        ck_assert_double_eq_tol(r.iter_s, t2.iter_s, 1e-12 * t2.iter_s);
        ck_assert_double_eq_tol(bd->compute + bd->tp_comm + bd->bubble + bd->p2p +
                                bd->dp_comm + bd->optimizer, r.iter_s,
                                1e-12 * r.iter_s);
        cost_result_free(&r);
        /* gas 6 is no multiple of pp 4: no interleaved simulation, the
         * closed form stays */
        s.gas = 6;
        ck_assert_int_eq(cost_simulate(&c, &m, NULL, &p, &s, 0, &t3, &err),
                         UTIL_EINVAL);
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err), UTIL_OK);
        p.fidelity = COST_FIDELITY_ANALYTIC;
        ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &r2, &err), UTIL_OK);
        ck_assert_double_eq(r.iter_s, r2.iter_s);
        cost_result_free(&r);
        cost_result_free(&r2);
    }
    cost_timeline_free(&t1);
    cost_timeline_free(&t2);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* The launcher's composition (launch_compose) of a plan with vpp 2: GPT-2
 * 345M on amp-homogeneous (16 T4), pp 4 on devices 0, 4, 8 and 12 (one
 * per node, so the wrap-around transfer from stage 3 to stage 0 crosses
 * the 50 Gbit/s NICs; with this split it lies on the critical path),
 * 8 micro-batches, written by the planner.  With nothing measured, and
 * with the prediction fed back as measured stage times, the composed run
 * is the simulated one: the chunks' forwards and backwards add up to the
 * stage's times again and the wrap-around transfers keep their time. */
START_TEST(test_launcher_compose)
{
    char dir[] = "/tmp/hetplan-interleaved-XXXXXX", path[256], cmd[2048];
    plan_doc d;
    launch_work w;
    launch_measure meas[4];
    launch_trial t, t2;
    util_error err;
    FILE *f;
    int j;

    memset(&err, 0, sizeof err);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/s.json", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 4, \"mbs\": 4, "
          "\"vpp\": 2, \"stage_boundaries\": [0, 8, 15, 22, 27], "
          "\"ranks\": [0, 4, 8, 12]}]}", f);
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' evaluate --cluster '%s' --model '%s' --strategies "
             "s.json --output plan.json --quiet", dir, HETPLAN_PLANNER,
             EXAMPLES "amp-homogeneous.json", EXAMPLES "gpt2-345m.json");
    ck_assert_msg(system(cmd) == 0, "planner failed: %s", cmd);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    ck_assert_msg(plan_load_plan(path, &d, &err) == UTIL_OK, "%s", err.msg);
    tu_remove_tree(dir);
    ck_assert(d.s[0].pp == 4 && d.s[0].gas == 8 && d.s[0].vpp == 2);
    ck_assert_int_eq(launch_work_of(&d, 0, -1, &w, &err), UTIL_OK);
    memset(meas, 0, sizeof meas);
    for (j = 0; j < 4; j++)
        meas[j].opt_s = -1.0;
    ck_assert_msg(launch_compose(&d, &w, meas, &t, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_double_eq_tol(t.measured_s, t.simulated_s, 1e-12);
    for (j = 0; j < 4; j++) {
        ck_assert(t.pred_fwd_s[j] > 0 && t.pred_bwd_s[j] > t.pred_fwd_s[j]);
        ck_assert_double_eq_tol(t.busy_s[j], 8 * (t.pred_fwd_s[j] + t.pred_bwd_s[j]),
                                1e-12);
        if (w.stages[j].run) {
            meas[j].measured = 1;
            meas[j].fwd_s = t.pred_fwd_s[j];
            meas[j].bwd_s = t.pred_bwd_s[j];
        }
    }
    ck_assert_int_eq(launch_compose(&d, &w, meas, &t2, &err), UTIL_OK);
    ck_assert_double_eq_tol(t2.measured_s, t.simulated_s, 1e-12);
    launch_trial_free(&t2);
    launch_trial_free(&t);
    launch_work_free(&w);
    plan_doc_free(&d);
}
END_TEST

/* The report's timeline names each pass's chunk under the interleaved
 * schedule (tu_two_nodes_json, tu_gpt2_small4_json: pp 2, vpp 2, 4
 * micro-batches), and no chunk without it. */
START_TEST(test_report_names_chunks)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    cost_params p;
    cost_result r;
    cost_timeline t;
    report_input in;
    util_error err;
    char *svg = NULL;
    int v;

    memset(&err, 0, sizeof err);
    tu_parse_inputs(tu_two_nodes_json, tu_gpt2_small4_json, &c, &m);
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 1, 2), UTIL_OK);
    s.ranks[0] = 0;
    s.ranks[1] = 1;
    s.mbs = 1;
    s.gas = 4;
    s.bounds[1] = m.nlayers / 2;
    s.bounds[2] = m.nlayers;
    for (v = 1; v <= 2; v++) {
        s.vpp = v;
        ck_assert_msg(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err) == UTIL_OK, "%s",
                      err.msg);
        ck_assert_msg(cost_simulate(&c, &m, NULL, &p, &s, 0, &t, &err) == UTIL_OK,
                      "%s", err.msg);
        memset(&in, 0, sizeof in);
        in.c = &c;
        in.m = &m;
        in.s = &s;
        in.r = &r;
        in.n = 1;
        in.timeline = &t;
        in.global_batch = 4;
        ck_assert_msg(report_svg(&in, &svg, NULL, &err) == UTIL_OK, "%s", err.msg);
        if (v == 2) { /* stage 1 runs micro-batch 0 in chunk 0, then chunk 1 */
            ck_assert_ptr_nonnull(strstr(svg, "stage 1, replica 0, micro-batch 0, chunk 0:"));
            ck_assert_ptr_nonnull(strstr(svg, "stage 1, replica 0, micro-batch 0, chunk 1:"));
        } else {
            ck_assert_ptr_nonnull(strstr(svg, "stage 1, replica 0, micro-batch 0:"));
            ck_assert_ptr_null(strstr(svg, ", chunk "));
        }
        free(svg);
        cost_timeline_free(&t);
        cost_result_free(&r);
    }
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("interleaved");
    TCase *hand = tcase_create("hand"), *prop = tcase_create("properties");

    tcase_add_test(hand, test_closed_form_by_hand);
    tcase_add_test(hand, test_bad_input);
    tcase_add_test(hand, test_launcher_order);
    tcase_add_test(hand, test_model_interleaved);
    tcase_add_test(hand, test_launcher_compose);
    tcase_add_test(hand, test_report_names_chunks);
    tcase_set_timeout(prop, 120);
    tcase_add_test(prop, test_closed_form_grid);
    tcase_add_test(prop, test_brute_force);
    suite_add_tcase(s, hand);
    suite_add_tcase(s, prop);
    return s;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return tu_run(plain_suite());
}
