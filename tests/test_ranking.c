/* tests/test_ranking.c: ranking accuracy against AMP's real runs
 * (../shared/data/amp), a regression floor on every metric. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan.h"

#define EXAMPLES HETPLAN_SOURCE_DIR "/examples/"
#define DATA HETPLAN_SOURCE_DIR "/../shared/data/amp/"

/* AMP's own scores (../shared/data/README.md) and the floors hetplan must
 * keep: strictly better than AMP on every metric, and no worse than what
 * the current model reached minus a small margin. */
typedef struct experiment {
    const char *name, *data, *cluster;
    double amp_rho, amp_tau, amp_regret;
    double min_rho, min_tau, max_regret, max_mape;
} experiment;

static const experiment experiments[] = {
    {"homogeneous", "homogeneous.json", "amp-homogeneous.json", 0.935, 0.795, 1.10,
     0.97, 0.87, 1.02, 0.15},
    {"het_cluster", "het_cluster.json", "amp-het.json", 0.394, 0.306, 1.148,
     0.55, 0.44, 1.02, 0.36},
};

static int have_data(void)
{
    struct stat st;

    return stat(DATA "homogeneous.json", &st) == 0;
}

static void score(const experiment *e, plan_ranking *rk)
{
    cost_cluster c;
    cost_model m;
    cost_profile prof;
    cost_params cp;
    cost_error err;
    plan_trial *t = NULL;
    int n = 0, rc;
    char buf[1024];

    memset(&c, 0, sizeof c);
    memset(&m, 0, sizeof m);
    memset(&prof, 0, sizeof prof);
    memset(&err, 0, sizeof err);
    cost_params_init(&cp);
    rc = plan_load_cluster(EXAMPLES "amp-homogeneous.json", &c, &err);
    if (strcmp(e->name, "het_cluster") == 0) {
        cost_cluster_free(&c);
        rc = plan_load_cluster(EXAMPLES "amp-het.json", &c, &err);
    }
    if (rc == COST_OK)
        rc = plan_load_model(EXAMPLES "gpt2-amp.json", &m, &err);
    if (rc == COST_OK)
        rc = plan_profile_from_amp(DATA "profiles.json", "gpt2", &m, &prof, &err);
    if (rc == COST_OK) {
        char path[512];
        snprintf(path, sizeof path, "%s%s", DATA, e->data);
        rc = plan_amp_trials(path, &c, &m, &prof, &cp, &t, &n, &err);
    }
    cost_error_format(&err, buf, sizeof buf);
    ck_assert_msg(rc == COST_OK, "%s: %s", e->name, buf);
    plan_score_trials(t, n, rk);
    printf("%-12s trials %d ran %d | spearman %.3f (AMP %.3f) | kendall-b %.3f "
           "(AMP %.3f) | top-1 regret %.3f (AMP %.3f) | MAPE %.1f%% | memory: "
           "%d/%d failures flagged, %d runnable rejected\n",
           e->name, n, rk->ran, rk->spearman, e->amp_rho, rk->kendall, e->amp_tau,
           rk->top1_regret, e->amp_regret, 100.0 * rk->mape, rk->oom_flagged,
           rk->oom_total, rk->runnable_rejected);
    fflush(stdout);
    free(t);
    cost_profile_free(&prof);
    cost_model_free(&m);
    cost_cluster_free(&c);
}

START_TEST(test_beats_amp)
{
    const experiment *e = &experiments[_i];
    plan_ranking rk;

    if (!have_data()) {
        printf("skipping %s: ../shared/data/amp not found beside the project\n",
               e->name);
        return;
    }
    score(e, &rk);
    ck_assert_msg(rk.spearman > e->amp_rho, "%s: rho %.3f does not beat AMP's %.3f",
                  e->name, rk.spearman, e->amp_rho);
    ck_assert_msg(rk.kendall > e->amp_tau, "%s: tau-b %.3f does not beat AMP's %.3f",
                  e->name, rk.kendall, e->amp_tau);
    ck_assert_msg(rk.top1_regret > 0.0 && rk.top1_regret < e->amp_regret,
                  "%s: top-1 regret %.3f does not beat AMP's %.3f", e->name,
                  rk.top1_regret, e->amp_regret);
    ck_assert_msg(rk.spearman >= e->min_rho, "%s: rho %.3f below the floor %.3f",
                  e->name, rk.spearman, e->min_rho);
    ck_assert_msg(rk.kendall >= e->min_tau, "%s: tau-b %.3f below the floor %.3f",
                  e->name, rk.kendall, e->min_tau);
    ck_assert_msg(rk.top1_regret <= e->max_regret,
                  "%s: regret %.3f above the floor %.3f", e->name, rk.top1_regret,
                  e->max_regret);
    ck_assert_msg(rk.mape <= e->max_mape, "%s: MAPE %.3f above the floor %.3f",
                  e->name, rk.mape, e->max_mape);
    ck_assert_msg(rk.runnable_rejected == 0, "%s: %d runs that ran are rejected "
                  "by the memory model", e->name, rk.runnable_rejected);
}
END_TEST

/* The scorer itself, on hand-computed data. */
START_TEST(test_metrics_by_hand)
{
    plan_trial t[5] = {
        {0, 1.0, 0, 1.1, 1}, {1, 2.0, 0, 1.9, 1}, {2, 3.0, 0, 3.5, 1},
        {3, -1.0, 1, 0.5, 0}, {4, 4.0, 0, 3.0, 1}};
    plan_ranking rk;

    plan_score_trials(t, 5, &rk);
    ck_assert_int_eq(rk.ran, 4);
    /* predicted ranks 1 2 4 3 vs measured 1 2 3 4: rho = 1 - 6*2/(4*15) */
    ck_assert_double_eq_tol(rk.spearman, 0.8, 1e-12);
    /* 5 concordant, 1 discordant of 6 pairs */
    ck_assert_double_eq_tol(rk.kendall, 4.0 / 6.0, 1e-12);
    /* trial 3 is predicted fastest but predicted not to fit: skipped */
    ck_assert_int_eq(rk.top1_index, 0);
    ck_assert_double_eq_tol(rk.top1_regret, 1.0, 1e-12);
    ck_assert_int_eq(rk.oom_total, 1);
    ck_assert_int_eq(rk.oom_flagged, 1);
    ck_assert_double_eq_tol(rk.mape, (0.1 + 0.05 + 0.5 / 3.0 + 0.25) / 4.0, 1e-12);
    t[3].fits = 1; /* now the fastest prediction is a run that failed */
    plan_score_trials(t, 5, &rk);
    ck_assert(rk.top1_regret < 0.0);
    ck_assert_int_eq(rk.oom_flagged, 0);
}
END_TEST

START_TEST(test_tau_b_ties)
{
    /* ties in x: tau-b = (C - D) / sqrt((C + D + Tx)(C + D + Ty)) */
    plan_trial t[4] = {
        {0, 1.0, 0, 1.0, 1}, {1, 2.0, 0, 1.0, 1}, {2, 3.0, 0, 2.0, 1},
        {3, 4.0, 0, 3.0, 1}};
    plan_ranking rk;

    plan_score_trials(t, 4, &rk);
    ck_assert_double_eq_tol(rk.kendall, 5.0 / sqrt(30.0), 1e-12);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ranking");
    TCase *tc = tcase_create("amp");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_beats_amp, 0, 2);
    tcase_add_test(tc, test_metrics_by_hand);
    tcase_add_test(tc, test_tau_b_ties);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
