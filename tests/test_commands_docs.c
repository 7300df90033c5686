/* tests/test_commands_docs.c: the help text and the example sessions that
 * docs/cli.md and docs/user-guide.md quote are those of the current
 * binary.
 *
 * Help: every fenced block after a line "<!-- help: CMD -->" must equal
 * the output of `planner CMD --help` (`planner --help` for plan) byte for
 * byte.  Sessions: every fenced block whose first line starts with
 * "$ planner" is run (continuation lines ending in '\' joined) in a
 * scratch directory laid out like the repository (examples/, and
 * ../shared/data when present); each other line of the block, except
 * "...", must appear in the command's output (stdout then stderr), in
 * order.  The command must exit 0, or N when the text right after the
 * block starts "(exit status N)".  A line "..." (indented or not) stands for
 * lines left out.  Sessions that read ../shared/data run
 * in the _data suite.  scripts/update-docs.py rewrites both kinds of
 * block from the current binary (review its diff). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define PATHN 4096

static char tmp_dir[1024];

/* Output of a shell command, stderr after stdout; *status its exit code. */
static char *capture(const char *cmd, int *status)
{
    char full[PATHN * 3], so[PATHN], se[PATHN], *o, *e, *all;
    int st;

    snprintf(so, sizeof so, "%s/cmd.out", tmp_dir);
    snprintf(se, sizeof se, "%s/cmd.err", tmp_dir);
    snprintf(full, sizeof full, "( %s ) >'%s' 2>'%s'", cmd, so, se);
    st = system(full);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    o = tu_slurp(so);
    e = tu_slurp(se);
    all = malloc(strlen(o ? o : "") + strlen(e ? e : "") + 1);
    ck_assert_ptr_nonnull(all);
    strcpy(all, o ? o : "");
    strcat(all, e ? e : "");
    free(o);
    free(e);
    return all;
}

/* The fenced block starting after position p (the line after "```"), as
 * a new string; *end set after its closing fence. */
static char *block_after(const char *p, const char **end)
{
    const char *a = strstr(p, "```"), *nl, *z;
    char *out;

    ck_assert_ptr_nonnull(a);
    nl = strchr(a, '\n');
    ck_assert_ptr_nonnull(nl);
    z = strstr(nl + 1, "\n```");
    ck_assert_ptr_nonnull(z);
    out = malloc((size_t)(z - nl) + 1);
    ck_assert_ptr_nonnull(out);
    memcpy(out, nl + 1, (size_t)(z - nl));
    out[z - nl] = '\0';
    *end = z + 4;
    return out;
}

START_TEST(cli_md_help_matches_the_binary)
{
    char *doc = tu_slurp(HETPLAN_SOURCE_DIR "/docs/cli.md");
    const char *p = doc, *end;
    static const char *const need[] = {"plan", "evaluate", "calibrate", "export",
                                       "report", "whatif", "replan", "decentralized",
                                       "inspect"};
    int seen[9] = {0}, n = 0, i;

    ck_assert_ptr_nonnull(doc);
    while ((p = strstr(p, "<!-- help: ")) != NULL) {
        char cmd[32], sh[PATHN], *want, *got;
        int st;
        ck_assert_int_eq(sscanf(p, "<!-- help: %31[a-z] -->", cmd), 1);
        want = block_after(p, &end);
        if (strcmp(cmd, "plan") == 0)
            snprintf(sh, sizeof sh, "'%s' --help", HETPLAN_PLANNER);
        else
            snprintf(sh, sizeof sh, "'%s' %s --help", HETPLAN_PLANNER, cmd);
        got = capture(sh, &st);
        ck_assert_int_eq(st, 0);
        if (strcmp(want, got) != 0) {
            size_t k = 0, line = 1, ls = 0;
            for (; want[k] && want[k] == got[k]; k++)
                if (want[k] == '\n')
                    line++, ls = k + 1;
            k = ls; /* from the start of the first line that differs */
            ck_abort_msg("docs/cli.md quotes another help text for '%s' than "
                         "'planner %s --help' prints, from its line %zu:\n"
                         "docs: %.160s\nbinary: %.160s", cmd, cmd, line,
                         want + k, got + k);
        }
        for (i = 0; i < 9; i++)
            seen[i] |= strcmp(need[i], cmd) == 0;
        free(want);
        free(got);
        n++;
        p = end;
    }
    for (i = 0; i < 9; i++)
        ck_assert_msg(seen[i], "docs/cli.md quotes no help text of '%s'", need[i]);
    ck_assert_int_ge(n, 8);
    free(doc);
}
END_TEST

/* A scratch directory like the repository: repo/examples, shared/data. */
static void sandbox(char *repo, size_t n)
{
    char path[PATHN + 64];
    struct stat st;

    ck_assert(n > sizeof tmp_dir + 8);
    snprintf(repo, n, "%s/repo", tmp_dir);
    if (stat(repo, &st) == 0)
        return;
    ck_assert_int_eq(mkdir(repo, 0777), 0);
    snprintf(path, sizeof path, "%s/examples", repo);
    ck_assert_int_eq(symlink(HETPLAN_SOURCE_DIR "/examples", path), 0);
    snprintf(path, sizeof path, "%s/shared", tmp_dir);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/shared/data", tmp_dir);
    ck_assert_int_eq(symlink(TU_DATA, path), 0);
}

/* Run the sessions of doc; data: those that read ../shared/data (1) or
 * the others (0).  Returns the number run. */
static int sessions(const char *doc_path, int data)
{
    char *doc = tu_slurp(doc_path), repo[1100];
    const char *p, *end;
    int ran = 0;

    ck_assert_ptr_nonnull(doc);
    sandbox(repo, sizeof repo);
    for (p = doc; (p = strstr(p, "```\n$ planner")) != NULL; p = end) {
        char *b = block_after(p, &end), *line, *save = NULL, *got, *at;
        char cmd[PATHN] = "", sh[PATHN * 3];
        int in_cmd = 1, st, uses_data, want_status = 0;
        const char *after = end;

        uses_data = strstr(b, "../shared/data") != NULL;
        while (*after == '\n')
            after++;
        if (strncmp(after, "(exit status ", 13) == 0)
            want_status = atoi(after + 13);
        for (line = strtok_r(b, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            size_t len = strlen(line);
            if (!in_cmd)
                break;
            if (strncmp(line, "$ ", 2) == 0)
                line += 2;
            len = strlen(line);
            in_cmd = len > 0 && line[len - 1] == '\\';
            if (in_cmd)
                line[len - 1] = ' ';
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s", line);
        }
        if (uses_data != data) {
            free(b);
            continue;
        }
        ck_assert(strncmp(cmd, "planner ", 8) == 0);
        snprintf(sh, sizeof sh, "cd '%s' && '%s' %s", repo, HETPLAN_PLANNER, cmd + 8);
        got = capture(sh, &st);
        ck_assert_msg(st == want_status, "%s: '%s' exited %d, the page says %d: %s",
                      doc_path, cmd, st, want_status, got);
        /* the rest of the block: its lines in order in the output */
        at = got;
        for (; line; line = strtok_r(NULL, "\n", &save)) {
            char *hit;
            size_t len = strlen(line);
            while (len > 0 && line[len - 1] == ' ')
                line[--len] = '\0';
            if (strcmp(line + strspn(line, " "), "...") == 0 || len == 0)
                continue; /* an elision */
            for (hit = strstr(at, line); hit != NULL; hit = strstr(hit + 1, line))
                if ((hit == got || hit[-1] == '\n') &&
                    (hit[len] == '\n' || hit[len] == ' ' || hit[len] == '\0'))
                    break;
            ck_assert_msg(hit != NULL, "%s: the output of '%.200s' has no line '%.200s' "
                          "(after the lines before it); it prints:\n%.1500s", doc_path,
                          cmd, line, got);
            at = hit + len;
        }
        free(got);
        free(b);
        ran++;
    }
    free(doc);
    return ran;
}

START_TEST(sessions_without_data)
{
    ck_assert_int_ge(sessions(HETPLAN_SOURCE_DIR "/docs/cli.md", 0), 1);
    ck_assert_int_ge(sessions(HETPLAN_SOURCE_DIR "/docs/user-guide.md", 0), 3);
}
END_TEST

START_TEST(sessions_with_data)
{
    ck_assert_int_ge(sessions(HETPLAN_SOURCE_DIR "/docs/cli.md", 1), 1);
    sessions(HETPLAN_SOURCE_DIR "/docs/user-guide.md", 1);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *t = tcase_create("cli");

    tcase_set_timeout(t, 300);
    tcase_add_test(t, cli_md_help_matches_the_binary);
    tcase_add_test(t, sessions_without_data);
    suite_add_tcase(s, t);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("docs_data");
    TCase *t = tcase_create("sessions");

    tcase_set_timeout(t, 300);
    tcase_add_test(t, sessions_with_data);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    const char *t = getenv("TMPDIR");
    int rc;

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-docs.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    rc = tu_main(argc, argv, plain_suite, data_suite, TU_DATA "/amp");
    tu_remove_tree(tmp_dir);
    return rc;
}
