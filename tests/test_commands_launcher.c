/* tests/test_commands_launcher.c: planner plan --launcher on the command
 * line (docs/cli.md, docs/export.md "Planning for a launcher"): the
 * README's example planned for each launcher exports to it with exit 0
 * (it does not without --launcher), the plan records the launcher and
 * export writes its release by default, and the errors: a target or
 * release that does not exist, a fixed feature the launcher lacks (exit
 * 2) and a model it cannot express (exit 6); replan keeps to the
 * plan's launcher; evaluate --launcher chooses splits the launcher
 * writes and names the strategies it cannot run. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

static int plan(const char *launcher, const char *out, const char *model,
                const char *extra, tp_run_out *r)
{
    const char *args[16];
    int n = 0;

    args[n++] = "--cluster";
    args[n++] = EX "amp-het.json";
    args[n++] = "--model";
    args[n++] = model;
    args[n++] = "--top-k";
    args[n++] = "3";
    args[n++] = "--output";
    args[n++] = out;
    if (launcher != NULL) {
        args[n++] = "--launcher";
        args[n++] = launcher;
    }
    if (extra != NULL)
        args[n++] = extra;
    args[n] = NULL;
    tp_run(r, args);
    return r->status;
}

static int export_to(const char *plan_file, const char *to, const char *strategy,
                     tp_run_out *r)
{
    const char *args[] = {"export", "--plan", plan_file, "--to", to, "--strategy",
                          strategy, "--output", "x", "--format", "json", NULL};

    tp_run(r, args);
    return r->status;
}

/* The README's example: unconstrained, Megatron-LM core_r0.9.0 and
 * DeepSpeed refuse its best strategy; planned for them, every strategy
 * exports. */
START_TEST(readme_example_for_each_launcher)
{
    static const char *const launchers[] = {"megatron", "megatron@core_v0.19.0",
                                            "deepspeed@0.19", "torchrun"};
    static const char *const to[] = {"megatron", "megatron", "deepspeed", "torchrun"};
    static const char *const release[] = {"\"core_r0.9.0\"", "\"core_v0.19.0\"", "\"0.19\"",
                                          "\"1.13\""};
    tp_run_out r;
    char *p;
    int i, k;

    ck_assert_int_eq(plan(NULL, "free.json", EX "gpt2-amp.json", NULL, &r), 0);
    tp_run_free(&r);
    ck_assert_int_eq(export_to("free.json", "megatron", "1", &r), 6);
    tp_run_free(&r);
    ck_assert_int_eq(export_to("free.json", "deepspeed", "1", &r), 6);
    tp_run_free(&r);
    for (i = 0; i < 4; i++) {
        ck_assert_msg(plan(launchers[i], "lc.json", EX "gpt2-amp.json", NULL, &r) == 0,
                      "%s: %s", launchers[i], r.err);
        ck_assert_msg(strstr(r.err, "left out") == NULL, "%s", r.err);
        tp_run_free(&r);
        p = tp_read("lc.json");
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(strstr(p, "\"launcher\"") != NULL, "no settings.launcher");
        free(p);
        for (k = 1; k <= 3; k++) {
            char ks[4];
            snprintf(ks, sizeof ks, "%d", k);
            ck_assert_msg(export_to("lc.json", to[i], ks, &r) == 0, "%s #%d: %s",
                          launchers[i], k, r.err);
            /* without --target-version: the release planned for */
            ck_assert_msg(strstr(r.out, release[i]) != NULL, "%s", r.out);
            tp_run_free(&r);
        }
    }
}
END_TEST

START_TEST(command_line_errors)
{
    tp_run_out r;

    /* no such target or release; the hostfile is no launcher */
    ck_assert_int_eq(plan("slurm", "a.json", EX "gpt2-amp.json", NULL, &r), 2);
    ck_assert_msg(strstr(r.err, "'--launcher'") != NULL, "%s", r.err);
    tp_run_free(&r);
    ck_assert_int_eq(plan("hostfile", "a.json", EX "gpt2-amp.json", NULL, &r), 2);
    tp_run_free(&r);
    ck_assert_int_eq(plan("megatron@core_v9", "a.json", EX "gpt2-amp.json", NULL, &r), 2);
    ck_assert_msg(strstr(r.err, "core_r0.9.0") != NULL, "%s", r.err);
    tp_run_free(&r);
    /* a fixed feature the launcher lacks */
    ck_assert_int_eq(plan("deepspeed", "a.json", EX "gpt2-amp.json",
                          "--sequence-parallel=on", &r), 2);
    ck_assert_msg(strstr(r.err, "sequence parallelism") != NULL, "%s", r.err);
    tp_run_free(&r);
    ck_assert_int_eq(plan("megatron", "a.json", EX "gpt2-amp.json", "--schedule=gpipe", &r),
                     2);
    tp_run_free(&r);
    ck_assert_int_eq(plan("megatron", "a.json", EX "gpt2-amp.json", "--zero=3", &r), 2);
    tp_run_free(&r);
    /* Megatron-LM core_v0.19.0 has Megatron-FSDP: ZeRO 3 is fine there */
    ck_assert_int_eq(plan("megatron@new", "a.json", EX "gpt2-amp.json", "--zero=3", &r), 0);
    tp_run_free(&r);
    /* the Megatron baseline on mixed-generations: its uniform split of
     * gpt2-medium's 24 blocks leaves unequal middle stages for some pp
     * (over 16 stages: 2 blocks on the first 8, 1 on the last 8), which
     * core_r0.9.0 cannot write; such strategies take the launcher's best
     * split instead of leaving no strategy at all */
    {
        const char *args[] = {"--cluster", EX "mixed-generations.json", "--model",
                              EX "gpt2-medium.json", "--method", "megatron", "--launcher",
                              "megatron", "--output", "mm.json", "--quiet", NULL};
        tp_run(&r, args);
        ck_assert_msg(r.status == 0, "%s", r.err);
        tp_run_free(&r);
        ck_assert_msg(export_to("mm.json", "megatron", "1", &r) == 0, "%s", r.err);
        tp_run_free(&r);
    }
}
END_TEST

/* evaluate --launcher: the layer split it chooses for a strategy without
 * one keeps to what the launcher writes (the exporter, run afterwards,
 * takes it; without --launcher it refuses the DP's split), and each given
 * strategy the launcher cannot run is named on stderr and still scored. */
START_TEST(evaluate_for_a_launcher)
{
    const char *with[] = {"evaluate", "--cluster", EX "amp-het.json", "--model",
                          EX "gpt2-amp.json", "--strategies", "open.json", "--launcher",
                          "megatron", "--output", "ev.json", NULL};
    const char *without[] = {"evaluate", "--cluster", EX "amp-het.json", "--model",
                             EX "gpt2-amp.json", "--strategies", "open.json",
                             "--output", "free.json", NULL};
    tp_run_out r;
    cJSON *doc;
    char *text;

    tp_write("open.json",
             "{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 4, \"mbs\": 1, "
             "\"schedule\": \"gpipe\", \"stage_boundaries\": [0, 7, 14, 20, 30]}, "
             "{\"tp\": 1, \"dp\": 2, \"pp\": 8, \"mbs\": 2}]}");
    tp_run(&r, with);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "'open.json': strategies[0]: megatron "
                                        "core_r0.9.0 cannot run it exactly"));
    ck_assert_ptr_null(strstr(r.err, "strategies[1]"));
    tp_run_free(&r);
    text = tp_read("ev.json");
    ck_assert_ptr_nonnull(text);
    doc = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(doc, "settings"), "launcher"),
                         "target")->valuestring,
                     "megatron");
    cJSON_Delete(doc);
    ck_assert_msg(export_to("ev.json", "megatron", "2", &r) == 0, "%s", r.err);
    tp_run_free(&r);
    ck_assert_int_eq(export_to("ev.json", "megatron", "1", &r), 6);
    tp_run_free(&r);
    tp_run(&r, without);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tp_run_free(&r);
    ck_assert_int_eq(export_to("free.json", "megatron", "2", &r), 6);
    tp_run_free(&r);
}
END_TEST

/* A model with a layer of kind 'generic': Megatron-LM's GPT model has
 * none, whatever the strategy, so no plan for it exists (exit 6 with the
 * exporter's reason); torchrun takes it. */
START_TEST(model_megatron_cannot_express)
{
    char *m = tu_slurp(EX "gpt2-amp.json"), *at;
    tp_run_out r;

    ck_assert_ptr_nonnull(m);
    at = strstr(m, "\"kind\": \"noop\"");
    ck_assert_ptr_nonnull(at);
    /* "noop" (parameter-free) becomes "generic" of the same length + 3 */
    {
        size_t head = (size_t)(at - m);
        char *out = malloc(strlen(m) + 8);
        ck_assert_ptr_nonnull(out);
        memcpy(out, m, head);
        strcpy(out + head, "\"kind\": \"generic\"");
        strcat(out, at + strlen("\"kind\": \"noop\""));
        tp_write("generic.json", out);
        free(out);
    }
    free(m);
    ck_assert_int_eq(plan("megatron", "g.json", "generic.json", NULL, &r), 6);
    ck_assert_msg(strstr(r.err, "cannot express: ") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "generic") != NULL, "%s", r.err);
    tp_run_free(&r);
    ck_assert_int_eq(plan("torchrun", "g.json", "generic.json", NULL, &r), 0);
    tp_run_free(&r);
}
END_TEST

/* 1 when the stage boundaries in replan's JSON (phase 0) keep Megatron-LM
 * core_r0.9.0's split of examples/gpt2-amp.json: layer 0 the embedding,
 * 1 a noop, 2..25 the 24 blocks, 26..29 noop, noop, head, noop; every
 * boundary between two blocks (2 < b <= 25) and the middle stages with the
 * same number of blocks. */
static int megatron_split(const char *json)
{
    cJSON *d = cJSON_Parse(json), *ph, *b;
    int n, j, ok = 1, bounds[64], mid = -1;

    ck_assert_ptr_nonnull(d);
    ph = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "phases"), 0);
    b = cJSON_GetObjectItem(ph, "stage_boundaries");
    n = cJSON_GetArraySize(b);
    ck_assert(n >= 2 && n <= 64);
    for (j = 0; j < n; j++)
        bounds[j] = cJSON_GetArrayItem(b, j)->valueint;
    ck_assert_int_eq(bounds[0], 0);
    ck_assert_int_eq(bounds[n - 1], 30);
    for (j = 1; j < n - 1; j++)
        ok &= bounds[j] > 2 && bounds[j] <= 25;
    for (j = 1; j + 2 < n; j++) { /* stage j of the n - 1: [b_j, b_(j+1)) */
        if (mid < 0)
            mid = bounds[j + 1] - bounds[j];
        ok &= bounds[j + 1] - bounds[j] == mid;
    }
    cJSON_Delete(d);
    return ok;
}

/* replan keeps to the launcher the plan was made for: with 18 layers
 * frozen the unconstrained re-balance gives the middle stages different
 * block counts (0, 8, 14, 19, 22, 25, 30), Megatron-LM's keeps them equal. */
START_TEST(replan_keeps_the_launcher)
{
    tp_run_out r;
    const char *args[] = {"replan", "--plan", "lc.json", "--frozen", "18", "--format",
                          "json", NULL, NULL, NULL};

    ck_assert_int_eq(plan("megatron", "lc.json", EX "gpt2-amp.json", NULL, &r), 0);
    tp_run_free(&r);
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(megatron_split(r.out), "%s", r.out);
    tp_run_free(&r);
    args[7] = "--launcher";
    args[8] = "torchrun";
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(!megatron_split(r.out), "%s", r.out);
    tp_run_free(&r);
    args[8] = "hostfile";
    tp_run(&r, args);
    ck_assert_int_eq(r.status, 2);
    tp_run_free(&r);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("launcher cli");
    TCase *tc = tcase_create("launcher cli");

    tcase_set_timeout(tc, 300);
    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, readme_example_for_each_launcher);
    tcase_add_test(tc, command_line_errors);
    tcase_add_test(tc, model_megatron_cannot_express);
    tcase_add_test(tc, replan_keeps_the_launcher);
    tcase_add_test(tc, evaluate_for_a_launcher);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(plain_suite());
}
