/* tests/test_commands_stdout.c: what every command does with its standard
 * output and --output (docs/cli.md, "Exit codes"): help, version and
 * tables that cannot be written (stdout on /dev/full) are exit 5, never
 * a success; an empty --output is a usage error (exit 2) of every
 * command; the report labels each timeline row with exactly the devices
 * of its tensor-parallel group. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tp_cli.h"

static const char *const commands[] = {"plan", "evaluate", "calibrate", "export",
                                       "report", "whatif", "replan",
                                       "decentralized", "inspect"};

/* Run the planner in tp_dir with stdout on /dev/full; its exit status,
 * its stderr in *err (caller frees). */
static int to_full(const char *const *args, char **err)
{
    char ep[TP_PATHN];
    struct stat st;
    int rc;

    ck_assert_msg(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode),
                  "the check needs /dev/full");
    rc = tu_run_planner(tp_dir, args, "/dev/full", tp_path(ep, ".stderr"));
    *err = tp_read(".stderr");
    ck_assert_ptr_nonnull(*err);
    return rc;
}

START_TEST(help_that_cannot_be_written)
{
    const char *args[4];
    char *err;
    size_t k;
    int rc;

    for (k = 0; k < TU_N(commands); k++) {
        args[0] = commands[k];
        args[1] = "--help";
        args[2] = NULL;
        rc = to_full(args, &err);
        ck_assert_msg(rc == 5, "%s --help on /dev/full: exit %d", commands[k], rc);
        ck_assert_msg(strstr(err, "cannot write to standard output") != NULL, "%s", err);
        free(err);
        args[0] = "help";
        args[1] = commands[k];
        rc = to_full(args, &err);
        ck_assert_msg(rc == 5, "help %s on /dev/full: exit %d", commands[k], rc);
        free(err);
    }
    {
        static const char *const more[][3] = {{"--help", NULL}, {"help", NULL},
                                               {"--version", NULL},
                                               {"plan", "--version", NULL}};
        for (k = 0; k < TU_N(more); k++) {
            rc = to_full(more[k], &err);
            ck_assert_msg(rc == 5, "%s %s on /dev/full: exit %d", more[k][0],
                          more[k][1] ? more[k][1] : "", rc);
            free(err);
        }
    }
}
END_TEST

/* A table (inspect's) on /dev/full: exit 5 as well. */
START_TEST(table_that_cannot_be_written)
{
    static const char *const args[] = {"inspect", "--device", "V100", NULL};
    char *err;
    int rc = to_full(args, &err);

    ck_assert_msg(rc == 5, "exit %d: %s", rc, err);
    free(err);
}
END_TEST

/* --output '' (and -o ''): a usage error naming the option, before any
 * other check of the command line. */
START_TEST(empty_output_is_usage)
{
    const char *args[5];
    size_t k;
    tp_run_out r;

    for (k = 0; k < TU_N(commands); k++) {
        int n = 0;
        if (k > 0)
            args[n++] = commands[k];
        args[n++] = k % 2 ? "-o" : "--output";
        args[n++] = "";
        args[n] = NULL;
        tp_run(&r, args);
        ck_assert_msg(r.status == 2, "%s --output '': exit %d: %s", commands[k],
                      r.status, r.err);
        ck_assert_msg(strstr(r.err, "expects a path, got ''") != NULL, "%s", r.err);
        tp_run_free(&r);
    }
}
END_TEST

/* tp 2, dp 2 on devices [3, 1 | 0, 2] of the flat node: the rows are
 * labelled with those sets, not with the ranges 1-3 and 0-2. */
START_TEST(timeline_rows_name_their_devices)
{
    static const char *const args[] = {"report", "--plan", "plan.json", "--output",
                                       "r.svg", "--quiet", NULL};
    char *svg;

    tp_evaluate(tu_flat_cluster_json, tu_flat_model_json,
                "{\"strategies\":[{\"tp\":2,\"dp\":2,\"pp\":1,\"mbs\":1,"
                "\"stage_boundaries\":[0,2],\"ranks\":[3,1,0,2]}]}");
    tp_expect(args, 0, NULL, NULL);
    svg = tp_read("r.svg");
    ck_assert_ptr_nonnull(svg);
    ck_assert_msg(strstr(svg, "stage 0, dp 0: 2xX (dev 1,3)") != NULL, "no row dp 0");
    ck_assert_msg(strstr(svg, "stage 0, dp 1: 2xX (dev 0,2)") != NULL, "no row dp 1");
    free(svg);
    /* consecutive devices are a range */
    tp_evaluate(tu_flat_cluster_json, tu_flat_model_json,
                "{\"strategies\":[{\"tp\":2,\"dp\":2,\"pp\":1,\"mbs\":1,"
                "\"stage_boundaries\":[0,2],\"ranks\":[3,2,0,1]}]}");
    tp_expect(args, 0, NULL, NULL);
    svg = tp_read("r.svg");
    ck_assert_ptr_nonnull(strstr(svg, "stage 0, dp 0: 2xX (dev 2-3)"));
    ck_assert_ptr_nonnull(strstr(svg, "stage 0, dp 1: 2xX (dev 0-1)"));
    free(svg);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("commands_stdout");
    TCase *tc = tcase_create("stdout");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, help_that_cannot_be_written);
    tcase_add_test(tc, table_that_cannot_be_written);
    tcase_add_test(tc, empty_output_is_usage);
    tcase_add_test(tc, timeline_rows_name_their_devices);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
