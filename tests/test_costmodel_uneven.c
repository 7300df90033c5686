/* tests/test_costmodel_uneven.c: the shard integer program on groups worked out by
 * hand, and uneven shards, slowdowns and frozen layers in the cost model. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "testutil.h"

#define GIB 1073741824.0

static search_shard_rank rank_t(double fixed, double head_s, double col_s)
{
    search_shard_rank r;

    memset(&r, 0, sizeof r);
    r.fixed_s = fixed;
    r.head_s = head_s;
    r.col_s = col_s;
    return r;
}

/* speed 2:1, 12 heads, 192 columns: 8/4 heads and 128/64 columns give
 * both ranks 8 + 1.28 = 4 * 2 + 64 * 0.02 = 9.28 s; anything else is
 * slower on one of them */
START_TEST(ip_two_to_one)
{
    search_shard_rank r[2];
    search_shard_params sp;
    int h[2], c[2];
    double mx;

    search_shard_params_init(&sp);
    r[0] = rank_t(0.0, 1.0, 0.01);
    r[1] = rank_t(0.0, 2.0, 0.02);
    ck_assert_int_eq(search_shard_solve(r, 2, 12, 192, &sp, h, c, &mx, NULL), UTIL_OK);
    ck_assert_int_eq(h[0], 8);
    ck_assert_int_eq(h[1], 4);
    ck_assert_int_eq(c[0], 128);
    ck_assert_int_eq(c[1], 64);
    ck_assert_double_eq_tol(mx, 9.28, 1e-9);
}
END_TEST

/* columns only cost time (1 and 3 s per column): with granule 64 the
 * best of 4 granules is 192/64 (192 s each); with granule 128 only 0,
 * 128 or 256 columns are allowed and 256/0 (256 s) beats 128/128 (384 s).
 * Heads cost nothing, so the second phase splits them 3/1 in proportion
 * to speed. */
START_TEST(ip_granule)
{
    search_shard_rank r[2];
    search_shard_params sp;
    int h[2], c[2];

    search_shard_params_init(&sp);
    r[0] = rank_t(0.0, 0.0, 1.0);
    r[1] = rank_t(0.0, 0.0, 3.0);
    ck_assert_int_eq(search_shard_solve(r, 2, 4, 256, &sp, h, c, NULL, NULL), UTIL_OK);
    ck_assert_int_eq(c[0], 192);
    ck_assert_int_eq(c[1], 64);
    ck_assert_int_eq(h[0], 3);
    ck_assert_int_eq(h[1], 1);
    sp.granule = 128;
    ck_assert_int_eq(search_shard_solve(r, 2, 4, 256, &sp, h, c, NULL, NULL), UTIL_OK);
    ck_assert_int_eq(c[0], 256);
    ck_assert_int_eq(c[1], 0);
    sp.granule = 96; /* 256 is not a multiple of 96 */
    ck_assert_int_eq(search_shard_solve(r, 2, 4, 256, &sp, h, c, NULL, NULL), UTIL_EINVAL);
}
END_TEST

/* the fast rank would take 8 of 12 heads but its memory holds 5 (1 GiB
 * each over a 2 GiB base, 7 GiB device): 5/7, max time 7 * 2 = 14 s */
START_TEST(ip_memory_bound)
{
    search_shard_rank r[2];
    search_shard_params sp;
    int h[2], c[2];
    double mx;

    search_shard_params_init(&sp);
    r[0] = rank_t(0.0, 1.0, 0.0);
    r[1] = rank_t(0.0, 2.0, 0.0);
    r[0].base_bytes = 2.0 * GIB;
    r[0].head_bytes = 1.0 * GIB;
    r[0].cap_bytes = 7.0 * GIB;
    ck_assert_int_eq(search_shard_solve(r, 2, 12, 64, &sp, h, c, &mx, NULL), UTIL_OK);
    ck_assert_int_eq(h[0], 5);
    ck_assert_int_eq(h[1], 7);
    ck_assert_double_eq_tol(mx, 14.0, 1e-9);
    /* neither rank can hold anything: no split */
    r[1] = r[0];
    r[0].cap_bytes = r[1].cap_bytes = 1.0 * GIB;
    ck_assert_int_eq(search_shard_solve(r, 2, 12, 64, &sp, h, c, &mx, NULL),
                     UTIL_EINFEASIBLE);
}
END_TEST

/* equal ranks: the even split (with a fixed part, so T is not scale-free) */
START_TEST(ip_even_when_equal)
{
    search_shard_rank r[4];
    search_shard_params sp;
    int h[4], c[4], k;

    search_shard_params_init(&sp);
    for (k = 0; k < 4; k++)
        r[k] = rank_t(0.5, 0.03, 0.0004);
    ck_assert_int_eq(search_shard_solve(r, 4, 16, 4096, &sp, h, c, NULL, NULL), UTIL_OK);
    for (k = 0; k < 4; k++) {
        ck_assert_int_eq(h[k], 4);
        ck_assert_int_eq(c[k], 1024);
    }
    ck_assert_int_eq(search_shard_solve(r, 0, 16, 4096, &sp, h, c, NULL, NULL),
                     UTIL_EINVAL);
}
END_TEST

/* ---- the cost model -------------------------------------------------- */

/* 2 A100 + 2 V100 in two nodes joined by a fast link: one TP group of 4 */
static const char mixed_cluster[] =
    "{\"name\":\"mixed\",\"nodes\":["
    "{\"name\":\"a\",\"device\":\"A100-40GB\",\"gpus\":2,\"intra_gbps\":2400,\"nic_gbps\":200},"
    "{\"name\":\"v\",\"device\":\"V100\",\"gpus\":2,\"intra_gbps\":1200,\"nic_gbps\":200}],"
    "\"links\":[{\"a\":\"a\",\"b\":\"v\",\"gbps\":1200,\"latency_ms\":0.005}]}";

static const char gpt_model[] =
    "{\"name\":\"g\",\"training\":{\"global_batch\":8},"
    "\"transformer\":{\"family\":\"gpt2\",\"layers\":8,\"hidden\":1024,"
    "\"heads\":16,\"seq\":1024,\"vocab\":50304}}";

/* a 4-GPU V100 node first (the search keeps TP inside the largest node
 * size), then the 2 + 2 group */
static const char mixed8_cluster[] =
    "{\"name\":\"mixed8\",\"nodes\":["
    "{\"name\":\"big\",\"device\":\"V100\",\"gpus\":4,\"intra_gbps\":1200,\"nic_gbps\":200},"
    "{\"name\":\"a\",\"device\":\"A100-40GB\",\"gpus\":2,\"intra_gbps\":2400,\"nic_gbps\":200},"
    "{\"name\":\"v\",\"device\":\"V100\",\"gpus\":2,\"intra_gbps\":1200,\"nic_gbps\":200}],"
    "\"links\":[{\"a\":\"a\",\"b\":\"v\",\"gbps\":1200,\"latency_ms\":0.005}]}";

static void load_cluster(const char *text, fmt_cluster *c, fmt_model *m)
{
    tu_parse_inputs(text, gpt_model, c, m);
}

static void load(fmt_cluster *c, fmt_model *m)
{
    load_cluster(mixed_cluster, c, m);
}

static void tp4(const fmt_model *m, fmt_strategy *s)
{
    int k;

    ck_assert_int_eq(fmt_strategy_alloc(s, 4, 1, 1), UTIL_OK);
    for (k = 0; k < 4; k++)
        s->ranks[k] = k;
    s->bounds[0] = 0;
    s->bounds[1] = m->nlayers;
    s->mbs = 2;
    s->gas = 4;
}

/* A deadline already passed (1e-9 s of the monotonic clock): no group is
 * planned, every one keeps the even split, and the call says so. */
START_TEST(shards_deadline_passed)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    search_shard_params sp;

    load(&c, &m);
    cost_params_init(&p);
    tp4(&m, &s);
    search_shard_params_init(&sp);
    ck_assert_double_eq(sp.deadline, 0.0);
    sp.deadline = 1e-9;
    ck_assert_int_eq(search_shard_strategy(&c, &m, NULL, &p, &sp, 0, &s, NULL),
                     UTIL_ETIMEOUT);
    ck_assert_ptr_null(s.tp_heads);
    ck_assert_ptr_null(s.tp_cols);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(model_uneven_beats_even)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result even, un;
    search_shard_params sp;
    cost_rank_time rt;
    int k;
    double mx = 0.0;

    load(&c, &m);
    cost_params_init(&p);
    tp4(&m, &s);
    ck_assert_int_eq(cost_tp_group_mixed(&c, &s, 0, 0), 1);
    ck_assert_double_eq_tol(cost_rank_share(&m, &s, 2, 0), 0.25, 1e-15);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &even, NULL), UTIL_OK);
    search_shard_params_init(&sp);
    ck_assert_int_eq(search_shard_strategy(&c, &m, NULL, &p, &sp, 0, &s, NULL), UTIL_OK);
    ck_assert_ptr_nonnull(s.tp_heads);
    ck_assert_int_eq(cost_shards_check(&m, &s, NULL), UTIL_OK);
    /* A100s (ranks 0, 1) take more than V100s (2, 3) */
    ck_assert_int_gt(s.tp_heads[0] + s.tp_cols[0] / 256, s.tp_heads[2] + s.tp_cols[2] / 256);
    for (k = 0; k < 4; k++)
        ck_assert_int_eq(s.tp_cols[k] % 64, 0);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &un, NULL), UTIL_OK);
    ck_assert(un.iter_s < 0.95 * even.iter_s);
    /* the stage runs at its slowest rank */
    for (k = 0; k < 4; k++) {
        ck_assert_int_eq(cost_rank_time_of(&c, &m, NULL, &p, &s, k, &rt), UTIL_OK);
        if (rt.total > mx)
            mx = rt.total;
    }
    ck_assert_double_eq_tol(un.stage_s[0], mx, 1e-9 * mx);
    /* memory follows the share: an A100 rank holds more than a V100 rank */
    ck_assert(un.mem_bytes[0] > un.mem_bytes[2]);
    ck_assert_double_eq_tol(even.mem_bytes[0], even.mem_bytes[2], 1.0);
    cost_result_free(&even);
    cost_result_free(&un);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* a bad shard list is refused with the group named */
START_TEST(model_shard_check)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    util_error err;
    int h[4] = {4, 4, 4, 3}, cl[4] = {1024, 1024, 1024, 1024};

    load(&c, &m);
    tp4(&m, &s);
    ck_assert_int_eq(fmt_strategy_set_shards(&s, h, cl), UTIL_OK);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(cost_shards_check(&m, &s, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "15 heads"));
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* slowing one rank of a tp = 1 pipeline by 2 doubles its compute */
START_TEST(model_slowdown)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s, t;
    cost_rank_time a, b;
    double slow[4] = {1.0, 2.0, 1.0, 1.0};
    int k;

    load(&c, &m);
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 1, 4), UTIL_OK);
    for (k = 0; k < 4; k++) {
        s.ranks[k] = k;
        s.bounds[k] = 3 * k;
    }
    s.bounds[4] = m.nlayers;
    s.gas = 8;
    ck_assert_int_eq(cost_rank_time_of(&c, &m, NULL, &p, &s, 1, &a), UTIL_OK);
    ck_assert_int_eq(fmt_strategy_set_slow(&s, slow), UTIL_OK);
    ck_assert_int_eq(fmt_strategy_copy(&t, &s), UTIL_OK);
    ck_assert_ptr_nonnull(t.slow);
    ck_assert_int_eq(cost_rank_time_of(&c, &m, NULL, &p, &t, 1, &b), UTIL_OK);
    ck_assert_double_eq_tol(b.total, 2.0 * a.total, 1e-12 * a.total);
    ck_assert_int_eq(cost_rank_time_of(&c, &m, NULL, &p, &t, 0, &b), UTIL_OK);
    ck_assert_double_eq_tol(b.share, 1.0, 1e-15);
    fmt_strategy_free(&s);
    fmt_strategy_free(&t);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* frozen layers: forward only (time falls by the backward), no
 * gradients or optimizer state (memory falls) */
START_TEST(model_frozen)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result a, b;
    cost_rank_time ra, rb;
    int k;

    load(&c, &m);
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 4, 1), UTIL_OK);
    for (k = 0; k < 4; k++)
        s.ranks[k] = k;
    s.bounds[1] = m.nlayers;
    s.gas = 2;
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &a, NULL), UTIL_OK);
    cost_rank_time_of(&c, &m, NULL, &p, &s, 0, &ra);
    ck_assert_int_eq(cost_params_set(&p, "frozen_layers", 5.0, NULL), UTIL_OK);
    ck_assert_int_eq(p.frozen_layers, 5);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, &p, &s, &b, NULL), UTIL_OK);
    cost_rank_time_of(&c, &m, NULL, &p, &s, 0, &rb);
    ck_assert(b.iter_s < a.iter_s);
    ck_assert(b.bd.dp_comm < a.bd.dp_comm);
    ck_assert(b.mem_bytes[0] < a.mem_bytes[0]);
    ck_assert(rb.total < ra.total);
    /* the first layer alone: frozen leaves only its forward */
    {
        cost_layer_time lt;
        const fmt_device_type *dt = fmt_device(&c, 0);
        cost_layer_time_of(&m, NULL, &p, dt, 1, 1, 1, INFINITY, 0.0, 1e11, &lt);
        double fwd = lt.fwd;
        cost_rank_layer_adjust(&m, &p, dt, &s, 0, 1, &lt);
        ck_assert_double_eq(lt.bwd, 0.0);
        ck_assert_double_eq_tol(lt.fwd, fwd, 1e-15);
    }
    cost_result_free(&a);
    cost_result_free(&b);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* the search plans uneven shards on its own for a mixed TP group and
 * they beat the even split of the same degrees */
START_TEST(search_mixed_group)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    search_params sp;
    search_result res, ev;
    int i, found = 0;

    load_cluster(mixed8_cluster, &c, &m);
    cost_params_init(&p);
    search_params_init(&sp);
    sp.global_batch = 8;
    sp.max_mbs = 2;
    sp.top_k = 50;
    ck_assert_int_eq(sp.uneven_tp, 1);
    ck_assert_int_eq(search_plan(&c, &m, NULL, &p, &sp, &res, NULL), UTIL_OK);
    sp.uneven_tp = 0;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &p, &sp, &ev, NULL), UTIL_OK);
    for (i = 0; i < res.n; i++) {
        const fmt_strategy *s = &res.cands[i].s;
        int j;
        if (s->tp != 4 || !cost_tp_group_mixed(&c, s, 0, s->dp - 1))
            continue;
        ck_assert_ptr_nonnull(s->tp_heads);
        for (j = 0; j < ev.n; j++) {
            const fmt_strategy *e = &ev.cands[j].s;
            if (e->tp == 4 && e->dp == s->dp && e->pp == s->pp &&
                e->mbs == s->mbs && strcmp(e->placement, s->placement) == 0) {
                ck_assert_ptr_null(e->tp_heads);
                ck_assert(res.cands[i].r.iter_s <= ev.cands[j].r.iter_s * (1 + 1e-12));
                if (res.cands[i].r.iter_s < 0.95 * ev.cands[j].r.iter_s)
                    found = 1;
            }
        }
    }
    ck_assert_int_eq(found, 1);
    search_result_free(&res);
    search_result_free(&ev);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("uneven");
    TCase *ip = tcase_create("ip"), *mo = tcase_create("model");

    tcase_add_test(ip, ip_two_to_one);
    tcase_add_test(ip, ip_granule);
    tcase_add_test(ip, ip_memory_bound);
    tcase_add_test(ip, ip_even_when_equal);
    tcase_add_test(mo, model_uneven_beats_even);
    tcase_add_test(mo, shards_deadline_passed);
    tcase_add_test(mo, model_shard_check);
    tcase_add_test(mo, model_slowdown);
    tcase_add_test(mo, model_frozen);
    tcase_add_test(mo, search_mixed_group);
    tcase_set_timeout(mo, 120);
    suite_add_tcase(s, ip);
    suite_add_tcase(s, mo);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
