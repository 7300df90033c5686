/* tests/test_commands_manpage.c: docs/planner.1 renders without groff warnings
 * (the entry test_commands_manpage_tool, a reported skip without groff)
 * and names every
 * subcommand and every option that `planner [COMMAND] --help` lists. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"

#define MANPAGE HETPLAN_SOURCE_DIR "/docs/planner.1"

/* The man page source with roff's "\-" turned into "-". */
static char *man_text(void)
{
    int st;
    char *t = tu_capture("cat '" MANPAGE "'", &st), *r, *w;

    ck_assert_int_eq(st, 0);
    for (r = w = t; *r; r++) {
        if (r[0] == '\\' && r[1] == '-') {
            *w++ = '-';
            r++;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return t;
}

/* Why groff cannot run here, NULL when it can. */
static const char *groff_absent(void)
{
    int st = system("command -v groff >/dev/null 2>&1");

    return st == 0 ? NULL : "the rendering check needs groff (Debian: groff-base)";
}

START_TEST(renders_without_warnings)
{
    int st;
    char *out;

    out = tu_capture("groff -man -Tutf8 -ww -z '" MANPAGE "' 2>&1", &st);
    ck_assert_msg(st == 0 && out[0] == '\0', "groff warnings: %s", out);
    free(out);
    out = tu_capture("groff -man -Tutf8 -P-cbou '" MANPAGE "' 2>/dev/null", &st);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(out, "EXIT STATUS"));
    ck_assert_ptr_nonnull(strstr(out, "SYNOPSIS"));
    free(out);
}
END_TEST

START_TEST(covers_every_command_and_option)
{
    static const char *const cmds[] = {"", "evaluate", "calibrate", "decentralized",
                                       "whatif", "replan", "export", "report",
                                       "inspect"};
    char *man = man_text();
    size_t i;

    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char cmd[1024], *help, *p;
        int st;
        if (cmds[i][0]) {
            char word[64];
            snprintf(word, sizeof word, ".SS %s", cmds[i]);
            ck_assert_msg(strstr(man, word) != NULL,
                          "docs/planner.1 has no section for 'planner %s'", cmds[i]);
        }
        snprintf(cmd, sizeof cmd, "'%s' %s --help 2>&1", HETPLAN_PLANNER, cmds[i]);
        help = tu_capture(cmd, &st);
        ck_assert_msg(st == 0, "'planner %s --help' exits %d", cmds[i], st);
        for (p = help; (p = strstr(p, "--")) != NULL;) {
            char opt[64];
            int k = 0;
            while (k < 63 && (p[k] == '-' || (p[k] >= 'a' && p[k] <= 'z') ||
                              (p[k] >= '0' && p[k] <= '9')))
                opt[k] = p[k], k++;
            opt[k] = '\0';
            p += k > 2 ? k : 2;
            if (k <= 2)
                continue;
            ck_assert_msg(strstr(man, opt) != NULL,
                          "docs/planner.1 does not document '%s' of 'planner %s'", opt,
                          cmds[i]);
        }
        free(help);
    }
    free(man);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("manpage");
    TCase *tc = tcase_create("manpage");

    tcase_add_test(tc, covers_every_command_and_option);
    suite_add_tcase(s, tc);
    return s;
}

static Suite *groff_suite(void)
{
    Suite *s = suite_create("manpage_groff");
    TCase *tc = tcase_create("groff");

    tcase_add_test(tc, renders_without_warnings);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main_tool(argc, argv, plain_suite, groff_suite, groff_absent);
}
