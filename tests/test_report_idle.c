/* tests/test_report_idle.c: the report of a strategy that leaves GPUs
 * idle.  Oracle: the strategy's ranks as written in the strategies file
 * (amp-het's devices: p3-0 0-3, p3-1 4-7, p3-2 8-11 (V100), g4dn-0 12-15
 * (T4)).  Ranks [2, 3, 6, 7, 8, 9, 12, 13] leave idle: p3-0 GPUs 0,1;
 * p3-1 GPUs 0,1; p3-2 GPUs 2,3; g4dn-0 GPUs 2,3 (8 of 16). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

START_TEST(idle_gpus_are_listed)
{
    const char *ev[] = {"evaluate", "--cluster", EX "amp-het.json", "--model",
                        EX "gpt2-amp.json", "--strategies", "s.json", "--output",
                        "plan.json", "--quiet", NULL};
    const char *rp[] = {"report", "--plan", "plan.json", "--output", "r.html", NULL};
    static const char *const rows[4][2] = {{"p3-0", "0,1"}, {"p3-1", "0,1"},
                                           {"p3-2", "2,3"}, {"g4dn-0", "2,3"}};
    tp_run_out r;
    char *html, want[256];
    int i;

    tp_write("s.json", "{\"strategies\":[{\"tp\":1,\"dp\":2,\"pp\":4,\"mbs\":1,"
                       "\"stage_boundaries\":[0,8,15,22,30],"
                       "\"ranks\":[2,3,6,7,8,9,12,13]}]}");
    tp_run(&r, ev);
    ck_assert_msg(r.status == 0, "evaluate: %s", r.err);
    tp_run_free(&r);
    tp_run(&r, rp);
    ck_assert_msg(r.status == 0, "report: exit %d: %s", r.status, r.err);
    ck_assert_msg(strstr(r.out, "idle GPUs of #1: 8 of 16") != NULL, "%s", r.out);
    tp_run_free(&r);
    html = tp_read("r.html");
    ck_assert_ptr_nonnull(html);
    ck_assert_ptr_nonnull(strstr(html, "Idle GPUs of strategy #1"));
    ck_assert_ptr_nonnull(strstr(html, "8 of the cluster's 16 GPUs run no rank"));
    for (i = 0; i < 4; i++) {
        snprintf(want, sizeof want, "<td class=\"l\">%s</td><td class=\"l\">%s</td>"
                 "<td class=\"l\">idle: %s</td><td>4</td>", rows[i][0],
                 i < 3 ? "V100" : "T4", rows[i][1]);
        ck_assert_msg(strstr(html, want) != NULL, "no row '%s'", want);
    }
    /* under both charts, the same list */
    ck_assert_int_eq(tu_count(html, "idle, not drawn: 8 of 16 GPUs run no rank (p3-0: "
                                 "GPUs 0,1 of 4 V100; p3-1: GPUs 0,1 of 4 V100; p3-2: "
                                 "GPUs 2,3 of 4 V100; g4dn-0: GPUs 2,3 of 4 T4)"), 2);
    /* one memory bar per rank, each on its planned device */
    ck_assert_int_eq(tu_count(html, "<title>rank "), 8);
    ck_assert_ptr_nonnull(strstr(html, "<title>rank 0 on device 2 ("));
    ck_assert_ptr_nonnull(strstr(html, "<title>rank 7 on device 13 ("));
    /* the strategies table: 8 GPUs used, 8 idle */
    ck_assert_ptr_nonnull(strstr(html, "<td>8</td><td>8</td></tr>"));
    free(html);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report_idle");
    TCase *tc = tcase_create("idle");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, idle_gpus_are_listed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
