/* tests/test_replan_idle.c: re-planning a strategy that leaves GPUs idle
 * as layers freeze.  The re-planned phases run on the plan's GPUs only:
 * every phase has tp * dp * pp ranks on distinct devices, all of them
 * among those the plan's strategy uses (the idle ones stay idle; the GPUs
 * that compression frees become data-parallel replicas). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* amp-het: p3-0 0-3, p3-1 4-7, p3-2 8-11 (V100), g4dn-0 12-15 (T4); the
 * strategy uses 8 of the 16 GPUs. */
static const int used[8] = {2, 3, 6, 7, 8, 9, 12, 13};

static int is_used(int dev)
{
    int i;

    for (i = 0; i < 8; i++)
        if (used[i] == dev)
            return 1;
    return 0;
}

static void check_phase(const cJSON *ph, int i)
{
    const cJSON *ranks = cJSON_GetObjectItem(ph, "ranks"), *r;
    int tp = cJSON_GetObjectItem(ph, "tp")->valueint;
    int dp = cJSON_GetObjectItem(ph, "dp")->valueint;
    int pp = cJSON_GetObjectItem(ph, "pp")->valueint;
    int seen[16] = {0}, n = 0;

    ck_assert_msg(cJSON_IsArray(ranks), "phase %d: no ranks", i);
    cJSON_ArrayForEach(r, ranks)
    {
        ck_assert(cJSON_IsNumber(r));
        ck_assert_msg(r->valueint >= 0 && r->valueint < 16, "phase %d: device %d", i,
                      r->valueint);
        ck_assert_msg(is_used(r->valueint), "phase %d runs a rank on idle GPU %d", i,
                      r->valueint);
        ck_assert_msg(!seen[r->valueint], "phase %d: GPU %d twice", i, r->valueint);
        seen[r->valueint] = 1;
        n++;
    }
    ck_assert_int_eq(n, tp * dp * pp);
    ck_assert_int_le(n, 8);
}

START_TEST(phases_stay_on_the_plans_gpus)
{
    const char *ev[] = {"evaluate", "--cluster", EX "amp-het.json", "--model",
                        EX "gpt2-amp.json", "--strategies", "s.json", "--output",
                        "plan.json", "--quiet", NULL};
    const char *rp[] = {"replan", "--plan", "plan.json", "--schedule", "f.json",
                        "--format", "json", NULL};
    tp_run_out r;
    cJSON *j, *phases, *ph;
    int i = 0;

    tp_write("s.json", "{\"strategies\":[{\"tp\":1,\"dp\":2,\"pp\":4,\"mbs\":1,"
                       "\"stage_boundaries\":[0,8,15,22,30],"
                       "\"ranks\":[2,3,6,7,8,9,12,13]}]}");
    tp_write("f.json", "{\"total_epochs\":6,\"epochs\":[{\"epoch\":0,\"frozen\":0},"
                       "{\"epoch\":2,\"frozen\":10},{\"epoch\":4,\"frozen\":20}]}");
    tp_run(&r, ev);
    ck_assert_msg(r.status == 0, "evaluate: %s", r.err);
    tp_run_free(&r);
    tp_run(&r, rp);
    ck_assert_msg(r.status == 0, "replan: exit %d: %s", r.status, r.err);
    j = cJSON_Parse(r.out);
    ck_assert_msg(j != NULL, "not JSON: %s", r.out);
    phases = cJSON_GetObjectItem(j, "phases");
    ck_assert(cJSON_IsArray(phases));
    cJSON_ArrayForEach(ph, phases)
        check_phase(ph, i++);
    ck_assert_int_eq(i, 3);
    cJSON_Delete(j);
    tp_run_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replan_idle");
    TCase *tc = tcase_create("idle");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, phases_stay_on_the_plans_gpus);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
