/* tests/test_decentral_limits.c: what bounds the cost of a DT-FM
 * schedule search on large inputs: the region form of a cluster file
 * (no n x n matrices, the same weights as the matrices it stands for),
 * the sizes refused (matrix files, stages, the exact search), the search
 * under a spent budget, simulated annealing with one stage, and the TSP
 * heuristic's O(1) Or-opt test against the move built and summed. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "decentral.h"

/* A regions file: nreg regions of gpus V100 each, 5 ms / 2 Gbit/s inside,
 * 50 ms / 1 Gbit/s between, one asymmetric region pair, d_pp stages. */
static char *regions_text(int nreg, int gpus, int d_pp)
{
    size_t cap = (size_t)nreg * 64 + 512, used;
    char *t = malloc(cap);
    int i;

    ck_assert_ptr_nonnull(t);
    used = (size_t)snprintf(t, cap, "{\"name\":\"r\",\"device\":\"V100\",\"regions\":[");
    for (i = 0; i < nreg; i++)
        used += (size_t)snprintf(t + used, cap - used, "%s{\"name\":\"r%d\",\"gpus\":%d}",
                                 i ? "," : "", i, gpus);
    snprintf(t + used, cap - used,
             "],\"inside\":{\"latency_ms\":5,\"bandwidth_gbps\":2},"
             "\"between\":{\"latency_ms\":50,\"bandwidth_gbps\":1},"
             "\"region_pairs\":[{\"a\":\"r0\",\"b\":\"r1\",\"latency_ms\":30,"
             "\"bandwidth_gbps\":1.5,\"reverse\":{\"latency_ms\":40,"
             "\"bandwidth_gbps\":0.5}}],\"workload\":{\"d_pp\":%d}}",
             d_pp);
    return t;
}

static void parse_ok(const char *text, dtfm_input *in)
{
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = dtfm_parse(text, "c.json", NULL, in, &err);
    ck_assert_msg(rc == UTIL_OK, "%s: %s", err.path, err.msg);
}

static void parse_fails(const char *text, const dtfm_options *o, const char *path,
                        const char *msg)
{
    dtfm_input in;
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_int_ne(dtfm_parse(text, "c.json", o, &in, &err), UTIL_OK);
    ck_assert_msg(strcmp(err.path, path) == 0, "path '%s', want '%s' (%s)", err.path,
                  path, err.msg);
    ck_assert_msg(strstr(err.msg, msg) != NULL, "message '%s' lacks '%s'", err.msg, msg);
    ck_assert_int_eq(in.prob.n, 0);
}

/* The same links as n x n matrices (what a matrix file of them reads as). */
static void as_matrices(const dtfm_problem *p, dtfm_problem *q)
{
    int i, j, n = p->n;

    ck_assert_int_eq(dtfm_problem_alloc(q, n, p->d_pp, 0, NULL), UTIL_OK);
    q->c_pp = p->c_pp;
    q->c_dp = p->c_dp;
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            if (i != j) {
                q->lat[i * n + j] = dtfm_latency(p, i, j);
                q->bw[i * n + j] = dtfm_bandwidth(p, i, j);
            }
}

/* ---- region form ------------------------------------------------------ */

/* A regions file is held as its regions' links: the weights, the cost of
 * any schedule and a seeded search are those of the matrices it stands
 * for, bit for bit. */
START_TEST(region_form_is_the_matrices)
{
    char *text = regions_text(6, 4, 4);
    dtfm_input in;
    dtfm_problem q;
    dtfm_result a, b;
    double *w1, *w2, *w3, *w4;
    int n, i, grp[24];

    parse_ok(text, &in);
    n = in.prob.n;
    ck_assert_int_eq(n, 24);
    ck_assert_ptr_null(in.prob.lat);
    ck_assert_ptr_null(in.prob.bw);
    ck_assert_int_eq(in.prob.nreg, 6);
    /* r0 -> r1 as given, r1 -> r0 its reverse, inside a region 5 ms */
    ck_assert_double_eq_tol(dtfm_latency(&in.prob, 0, 4), 30e-3, 1e-15);
    ck_assert_double_eq_tol(dtfm_latency(&in.prob, 4, 0), 40e-3, 1e-15);
    ck_assert_double_eq_tol(dtfm_bandwidth(&in.prob, 4, 0), 0.5e9 / 8, 1e-3);
    ck_assert_double_eq_tol(dtfm_latency(&in.prob, 9, 10), 5e-3, 1e-15);
    ck_assert_double_eq_tol(dtfm_latency(&in.prob, 9, 20), 50e-3, 1e-15);
    as_matrices(&in.prob, &q);
    w1 = malloc(sizeof(double) * (size_t)(n * n));
    w2 = malloc(sizeof(double) * (size_t)(n * n));
    w3 = malloc(sizeof(double) * (size_t)(n * n));
    w4 = malloc(sizeof(double) * (size_t)(n * n));
    dtfm_weights(&in.prob, w1, w2);
    dtfm_weights(&q, w3, w4);
    ck_assert_int_eq(memcmp(w1, w3, sizeof(double) * (size_t)(n * n)), 0);
    ck_assert_int_eq(memcmp(w2, w4, sizeof(double) * (size_t)(n * n)), 0);
    for (i = 0; i < n; i++)
        grp[i] = (i * 7) % 4;
    ck_assert_int_eq(dtfm_evaluate(&in.prob, grp, &a, NULL), UTIL_OK);
    ck_assert_int_eq(dtfm_evaluate(&q, grp, &b, NULL), UTIL_OK);
    ck_assert(a.total_s == b.total_s && a.dp_s == b.dp_s && a.pp_s == b.pp_s);
    dtfm_result_free(&a);
    dtfm_result_free(&b);
    {
        dtfm_search_result ra, rb;
        int m;
        for (m = 0; m < DTFM_NMETHODS; m++) {
            if (m == DTFM_EXACT)
                continue;
            tu_dtfm_search(&in.prob, m, 1500, 5, &ra);
            tu_dtfm_search(&q, m, 1500, 5, &rb);
            ck_assert_msg(ra.cost_s == rb.cost_s, "%s: %.17g vs %.17g",
                          dtfm_method_name(m), ra.cost_s, rb.cost_s);
            ck_assert_int_eq(memcmp(ra.group_of, rb.group_of, sizeof(int) * (size_t)n), 0);
            ck_assert_int_eq(ra.evaluated, rb.evaluated);
            dtfm_search_result_free(&ra);
            dtfm_search_result_free(&rb);
        }
    }
    /* the mean of the two directions, as the matrices' */
    dtfm_symmetrize(&in.prob);
    dtfm_symmetrize(&q);
    ck_assert_double_eq(dtfm_latency(&in.prob, 0, 4), dtfm_latency(&q, 0, 4));
    ck_assert_double_eq(dtfm_bandwidth(&in.prob, 4, 0), dtfm_bandwidth(&q, 4, 0));
    ck_assert_double_eq_tol(dtfm_latency(&in.prob, 4, 0), 35e-3, 1e-15);
    free(w1);
    free(w2);
    free(w3);
    free(w4);
    dtfm_problem_free(&q);
    dtfm_input_free(&in);
    free(text);
}
END_TEST

/* A region pair no device uses is not checked; one that is, is, named by
 * the first pair of devices that uses it. */
START_TEST(region_form_checked)
{
    char *text = regions_text(3, 2, 2);
    dtfm_input in;
    util_error err;

    parse_ok(text, &in);
    ck_assert_int_eq(dtfm_problem_check(&in.prob, NULL), UTIL_OK);
    in.prob.rbw[1 * 3 + 2] = 0.0; /* r1 -> r2: devices 2 -> 4 */
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(dtfm_problem_check(&in.prob, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "expected a positive bandwidth from device 2 to 4, got 0");
    in.prob.rbw[1 * 3 + 2] = 1e8;
    in.prob.rlat[2 * 3 + 2] = -1.0; /* inside r2: devices 4 -> 5 */
    ck_assert_int_eq(dtfm_problem_check(&in.prob, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "expected a non-negative latency from device 4 to 5, got -1");
    dtfm_input_free(&in);
    free(text);
    /* a region of one GPU needs no link inside it */
    parse_ok("{\"regions\":[{\"name\":\"a\",\"gpus\":1},{\"name\":\"b\",\"gpus\":1}],"
             "\"between\":{\"latency_ms\":1,\"bandwidth_gbps\":1},"
             "\"workload\":{\"d_pp\":2}}", &in);
    ck_assert_int_eq(dtfm_problem_check(&in.prob, NULL), UTIL_OK);
    dtfm_input_free(&in);
}
END_TEST

/* Every pair of 400 regions given in region_pairs (79,800 entries, 5 MB):
 * the regions' names are indexed, so the file reads in time linear in
 * its pairs (a scan of the names for each entry took minutes); each link
 * lands where its pair says; one entry more than there are pairs is
 * refused before any is read, a name no region has is located. */
START_TEST(region_pairs_read_in_linear_time)
{
    enum { NREG = 400 };
    size_t cap = (size_t)NREG * NREG * 40 + 65536, used;
    char *t = malloc(cap);
    dtfm_input in;
    int a, b;

    ck_assert_ptr_nonnull(t);
    used = (size_t)snprintf(t, cap, "{\"device\":\"V100\",\"regions\":[");
    for (a = 0; a < NREG; a++)
        used += (size_t)snprintf(t + used, cap - used, "%s{\"name\":\"r%d\",\"gpus\":1}",
                                 a ? "," : "", a);
    used += (size_t)snprintf(t + used, cap - used, "],\"region_pairs\":[");
    for (a = 0; a < NREG; a++)
        for (b = a + 1; b < NREG; b++)
            used += (size_t)snprintf(t + used, cap - used,
                                     "%s{\"a\":\"r%d\",\"b\":\"r%d\",\"latency_ms\":%d,"
                                     "\"bandwidth_gbps\":1}",
                                     a + b > 1 ? "," : "", b, a, 1 + (a * NREG + b) % 97);
    snprintf(t + used, cap - used, "],\"workload\":{\"d_pp\":2}}");
    parse_ok(t, &in);
    ck_assert_int_eq(in.prob.nreg, NREG);
    for (a = 0; a < NREG; a += 7)
        for (b = 0; b < NREG; b += 5)
            if (a != b) {
                int lo = a < b ? a : b, hi = a < b ? b : a;
                ck_assert_double_eq_tol(in.prob.rlat[a * NREG + b],
                                        (1 + (lo * NREG + hi) % 97) / 1000.0, 1e-15);
            }
    dtfm_input_free(&in);
    /* one entry more than the 79,800 pairs */
    snprintf(t + used, cap - used, ",{\"a\":\"r0\",\"b\":\"r1\"}],"
             "\"workload\":{\"d_pp\":2}}");
    parse_fails(t, NULL, "region_pairs", "expected at most 79800 entries (one per "
                "pair of the 400 regions), got 79801");
    free(t);
    parse_fails("{\"device\":\"V100\",\"regions\":[{\"name\":\"a\",\"gpus\":1},"
                "{\"name\":\"b\",\"gpus\":1}],\"region_pairs\":[{\"a\":\"a\","
                "\"b\":\"c\",\"latency_ms\":1,\"bandwidth_gbps\":1}]}", NULL,
                "region_pairs[0].b", "expected the name of a region, got 'c'");
    parse_fails("{\"device\":\"V100\",\"regions\":[{\"name\":\"a\",\"gpus\":1},"
                "{\"name\":\"b\",\"gpus\":1},{\"name\":\"a\",\"gpus\":1}]}", NULL,
                "regions[2].name", "expected a unique region name, 'a' is also regions[0]");
}
END_TEST

/* ---- sizes refused ---------------------------------------------------- */

/* A matrix of n rows of zeros, twice; NULL-terminated text (caller frees). */
static char *matrix_text(int n)
{
    size_t row = (size_t)n * 2 + 3, cap = row * (size_t)n * 2 + 128, used;
    char *t = malloc(cap);
    int m, i, j;

    ck_assert_ptr_nonnull(t);
    used = (size_t)snprintf(t, cap, "{");
    for (m = 0; m < 2; m++) {
        used += (size_t)snprintf(t + used, cap - used, "%s\"%s\":[", m ? "," : "",
                                 m ? "bandwidth_gbps" : "latency_ms");
        for (i = 0; i < n; i++) {
            t[used++] = i ? ',' : '[';
            if (i)
                t[used++] = '[';
            for (j = 0; j < n; j++) {
                t[used++] = j ? ',' : '1';
                if (j)
                    t[used++] = '1';
            }
            t[used++] = ']';
        }
        t[used++] = ']';
    }
    t[used++] = '}';
    t[used] = '\0';
    return t;
}

START_TEST(matrix_form_at_most_1024)
{
    char *t = matrix_text(1025);
    char *big;
    size_t i, n = 2200000;

    /* 2 x 1025^2 numbers: below the value count, above the rows */
    parse_fails(t, NULL, "latency_ms",
                "expected at most 1024 devices in matrix form (regions take up to "
                "4096), got 1025");
    free(t);
    /* more values than two matrices of 1024 hold: refused unparsed */
    big = malloc(2 * n + 32);
    ck_assert_ptr_nonnull(big);
    memcpy(big, "{\"latency_ms\":[", 15);
    for (i = 0; i < n; i++) {
        big[15 + 2 * i] = '0';
        big[16 + 2 * i] = ',';
    }
    memcpy(big + 15 + 2 * n, "0]}", 4);
    parse_fails(big, NULL, "",
                "expected at most 2162688 values (matrices of at most 1024 devices; "
                "regions take up to 4096), got more");
    /* commas inside a string are no values: the name is refused instead */
    memcpy(big, "{\"name\":\"xxxxxx", 15);
    memcpy(big + 15 + 2 * n, "0\"}", 4);
    parse_fails(big, NULL, "name", "expected at most 63 characters");
    free(big);
}
END_TEST

START_TEST(stages_at_most_64)
{
    char *t = regions_text(2, 64, 128);
    dtfm_options o;
    dtfm_input in;
    util_error err;

    parse_fails(t, NULL, "workload.d_pp", "expected an integer in 1..64, got 128");
    free(t);
    t = regions_text(2, 64, 64);
    parse_ok(t, &in);
    ck_assert_int_eq(in.prob.d_pp, 64);
    /* the problem's own check */
    in.prob.d_pp = 128;
    in.prob.d_dp = 1;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(dtfm_problem_check(&in.prob, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "expected at most 64 pipeline stages, got d_pp 128");
    dtfm_input_free(&in);
    dtfm_options_init(&o);
    o.d_pp = 128;
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(dtfm_parse(t, "c.json", &o, &in, &err), UTIL_EINVAL);
    ck_assert_str_eq(err.msg, "expected at most 64 pipeline stages, got 128");
    free(t);
}
END_TEST

/* The exact search declines 4096 devices at once, before any O(n^2)
 * work; 300 devices per stage too. */
START_TEST(exact_declines_large_at_once)
{
    static const int sizes[2][3] = {{64, 64, 8}, {2, 300, 2}};
    int c;

    for (c = 0; c < 2; c++) {
        char *t = regions_text(sizes[c][0], sizes[c][1], sizes[c][2]);
        dtfm_input in;
        dtfm_search_params sp;
        dtfm_search_result r;
        util_error err;
        char want[160];

        parse_ok(t, &in);
        dtfm_search_params_init(&sp);
        sp.method = DTFM_EXACT;
        memset(&err, 0, sizeof err);
        ck_assert_int_eq(dtfm_search(&in.prob, &sp, &r, &err), UTIL_EINVAL);
        snprintf(want, sizeof want, "the exact search handles at most 1024 devices in "
                                    "all and 255 per stage, got %d devices, %d per stage",
                 in.prob.n, in.prob.d_dp);
        ck_assert_str_eq(err.msg, want);
        ck_assert_ptr_null(r.group_of);
        dtfm_input_free(&in);
        free(t);
    }
}
END_TEST

/* ---- searches under a budget ------------------------------------------ */

/* A budget spent before the search: the schedule of devices in order,
 * evaluated once, with its evaluation in the result. */
START_TEST(spent_budget_devices_in_order)
{
    char *t = regions_text(8, 8, 8);
    dtfm_input in;
    dtfm_search_params sp;
    dtfm_search_result r;
    dtfm_result e;
    int i;

    parse_ok(t, &in);
    dtfm_search_params_init(&sp);
    sp.seconds = 1.0;
    sp.budget_start_s = dtfm_clock_s() - 2.0;
    ck_assert_int_eq(dtfm_search(&in.prob, &sp, &r, NULL), UTIL_ETIMEOUT);
    ck_assert_int_eq(r.timed_out, 1);
    ck_assert_int_eq(r.evaluated, 1);
    for (i = 0; i < 64; i++)
        ck_assert_int_eq(r.group_of[i], i / 8);
    ck_assert_int_eq(dtfm_evaluate(&in.prob, r.group_of, &e, NULL), UTIL_OK);
    ck_assert(e.total_s == r.cost_s && r.result.total_s == r.cost_s);
    ck_assert_int_eq(r.result.k, 8);
    ck_assert_int_eq(memcmp(e.members, r.result.members, sizeof(int) * 64), 0);
    dtfm_result_free(&e);
    dtfm_search_result_free(&r);
    dtfm_input_free(&in);
    free(t);
}
END_TEST

/* The result carries the evaluation of its schedule, as dtfm_evaluate
 * gives it. */
START_TEST(result_is_the_evaluation)
{
    char *t = regions_text(4, 6, 4);
    dtfm_input in;
    dtfm_search_result r;
    dtfm_result e;
    int m;

    parse_ok(t, &in);
    for (m = 0; m < DTFM_NMETHODS; m++) {
        if (m == DTFM_EXACT)
            continue;
        tu_dtfm_search(&in.prob, m, 800, 1, &r);
        ck_assert_int_eq(dtfm_evaluate(&in.prob, r.group_of, &e, NULL), UTIL_OK);
        ck_assert(e.total_s == r.result.total_s && e.dp_s == r.result.dp_s);
        ck_assert_int_eq(memcmp(e.order, r.result.order, sizeof(int) * 4), 0);
        ck_assert_int_eq(memcmp(e.chain, r.result.chain, sizeof(int) * 24), 0);
        dtfm_result_free(&e);
        dtfm_search_result_free(&r);
    }
    dtfm_input_free(&in);
    free(t);
}
END_TEST

/* One stage holds every device: one schedule, and simulated annealing,
 * which swaps devices between stages, ends at once. */
START_TEST(annealing_with_one_stage)
{
    char *t = regions_text(2, 4, 1);
    dtfm_input in;
    dtfm_search_params sp;
    dtfm_search_result r;

    parse_ok(t, &in);
    dtfm_search_params_init(&sp);
    sp.method = DTFM_SA;
    sp.seconds = 1000.0;
    ck_assert_int_eq(dtfm_search(&in.prob, &sp, &r, NULL), UTIL_OK);
    ck_assert_int_eq(r.timed_out, 0);
    ck_assert_double_eq(r.result.pp_s, 0.0);
    dtfm_search_result_free(&r);
    dtfm_input_free(&in);
    free(t);
}
END_TEST

/* ---- TSP heuristic ---------------------------------------------------- */

static double len_of(const double *w, int k, const int *p)
{
    double s = 0.0;
    int i;

    for (i = 0; i + 1 < k; i++)
        s += w[p[i] * k + p[i + 1]];
    return s;
}

/* The heuristic as its definition reads: nearest neighbour from every
 * start, then 2-opt and Or-opt rounds, every Or-opt move built and
 * summed. */
static double tsp_by_definition(const double *w, int k, int *order)
{
    int *p = malloc(sizeof(int) * (size_t)k), *tmp = malloc(sizeof(int) * (size_t)k);
    char *used = malloc((size_t)k);
    double best = DBL_MAX;
    int s, i, j;

    for (s = 0; s < k; s++) {
        int improved = 1, guard = 0, len, at;
        double cur;
        memset(used, 0, (size_t)k);
        p[0] = s;
        used[s] = 1;
        for (i = 1; i < k; i++) {
            int bj = -1;
            for (j = 0; j < k; j++)
                if (!used[j] && (bj < 0 || w[p[i - 1] * k + j] < w[p[i - 1] * k + bj]))
                    bj = j;
            p[i] = bj;
            used[bj] = 1;
        }
        cur = len_of(w, k, p);
        while (improved && guard++ < 1000) {
            improved = 0;
            for (i = 0; i < k - 1; i++)
                for (j = i + 1; j < k; j++) {
                    double d = 0.0;
                    int a, b;
                    if (i > 0)
                        d += w[p[i - 1] * k + p[j]] - w[p[i - 1] * k + p[i]];
                    if (j < k - 1)
                        d += w[p[i] * k + p[j + 1]] - w[p[j] * k + p[j + 1]];
                    if (d < -1e-12 * (fabs(cur) + 1e-300)) {
                        for (a = i, b = j; a < b; a++, b--) {
                            int t = p[a];
                            p[a] = p[b];
                            p[b] = t;
                        }
                        cur += d;
                        improved = 1;
                    }
                }
            for (len = 1; len <= 3 && len < k; len++)
                for (i = 0; i + len <= k; i++)
                    for (at = 0; at <= k - len; at++) {
                        int rev, n2, q, r;
                        if (at == i)
                            continue;
                        for (rev = 0; rev < 2; rev++) {
                            double nl;
                            n2 = 0;
                            for (q = 0; q < k; q++)
                                if (q < i || q >= i + len) {
                                    if (n2 == at)
                                        for (r = 0; r < len; r++)
                                            tmp[n2++] = rev ? p[i + len - 1 - r] : p[i + r];
                                    tmp[n2++] = p[q];
                                }
                            if (n2 < k)
                                for (r = 0; r < len; r++)
                                    tmp[n2++] = rev ? p[i + len - 1 - r] : p[i + r];
                            nl = len_of(w, k, tmp);
                            if (nl < cur - 1e-12 * (fabs(cur) + 1e-300)) {
                                memcpy(p, tmp, sizeof(int) * (size_t)k);
                                cur = nl;
                                improved = 1;
                            }
                        }
                    }
        }
        if (len_of(w, k, p) < best) {
            best = len_of(w, k, p);
            memcpy(order, p, sizeof(int) * (size_t)k);
        }
    }
    free(p);
    free(tmp);
    free(used);
    return best;
}

/* Random symmetric instances, and instances with many equal weights (the
 * coarsened graph of a regions file): the same path as the definition. */
START_TEST(tsp_heuristic_as_defined)
{
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 11u, 2u);
    for (trial = 0; trial < 24; trial++) {
        int k = 13 + trial % 20, i, j, o1[40], o2[40];
        double *w = malloc(sizeof(double) * (size_t)(k * k)), l1, l2;
        for (i = 0; i < k; i++)
            for (j = i; j < k; j++)
                w[i * k + j] = w[j * k + i] =
                    i == j ? 0.0
                    : trial % 2 ? (double)(1 + util_pcg32_bounded(&rng, 4))
                                : util_pcg32_double(&rng);
        ck_assert_int_eq(dtfm_tsp_heuristic(w, k, o1, &l1), UTIL_OK);
        l2 = tsp_by_definition(w, k, o2);
        ck_assert_msg(l1 == l2, "k %d: %.17g vs %.17g", k, l1, l2);
        ck_assert_int_eq(memcmp(o1, o2, sizeof(int) * (size_t)k), 0);
        free(w);
    }
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        region_form_is_the_matrices, region_form_checked,
        region_pairs_read_in_linear_time, matrix_form_at_most_1024,
        stages_at_most_64, exact_declines_large_at_once, spent_budget_devices_in_order,
        result_is_the_evaluation, annealing_with_one_stage, tsp_heuristic_as_defined};

    return tu_run_tests("decentral-limits", tests, TU_N(tests));
}
