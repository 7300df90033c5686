/* tests/test_search_progress.c: progress of long searches.  The
 * library calls search_params.progress (first call at once, then at most
 * every 0.2 s, and a last one with the final counts); `planner plan` draws
 * it on stderr only when stderr is a terminal and --quiet is not given. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "search.h"
#include "plan.h"
#include "testutil.h"

typedef struct calls {
    int n;
    long last_evaluated;
    double last_elapsed, last_best;
    int monotonic;
} calls;

static void on_progress(void *ctx, const search_progress *p)
{
    calls *c = ctx;

    if (p->evaluated < c->last_evaluated || p->elapsed_s < c->last_elapsed)
        c->monotonic = 0;
    c->n++;
    c->last_evaluated = p->evaluated;
    c->last_elapsed = p->elapsed_s;
    c->last_best = p->best_s;
    ck_assert_ptr_nonnull(p->phase);
}

START_TEST(library_calls_back)
{
    fmt_cluster c;
    fmt_model m;
    cost_params cp;
    search_params sp;
    search_result res;
    util_error err;
    calls k = {0, 0, 0.0, -1.0, 1};

    ck_assert_int_eq(fmt_load_cluster(HETPLAN_SOURCE_DIR "/examples/amp-het.json", &c, &err),
                     UTIL_OK);
    ck_assert_int_eq(fmt_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", &m, &err),
                     UTIL_OK);
    cost_params_init(&cp);
    search_params_init(&sp);
    ck_assert(sp.progress == NULL);
    sp.global_batch = 32;
    sp.progress = on_progress;
    sp.progress_ctx = &k;
    ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &res, &err), UTIL_OK);
    /* a first call at once and a last one with the final numbers */
    ck_assert_int_ge(k.n, 2);
    ck_assert(k.monotonic);
    ck_assert_int_eq(k.last_evaluated, res.evaluated);
    ck_assert_double_eq(k.last_best, res.cands[0].r.iter_s);
    /* at most ~5 per second (+ first and last) */
    ck_assert_int_le(k.n, 2 + (int)(k.last_elapsed * 5.0) + 1);
    search_result_free(&res);
    /* no callback: the same result */
    sp.progress = NULL;
    {
        search_result r2;
        ck_assert_int_eq(search_plan(&c, &m, NULL, &cp, &sp, &r2, &err), UTIL_OK);
        ck_assert_int_eq(r2.evaluated, k.last_evaluated);
        search_result_free(&r2);
    }
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

/* Run a shell command line in the source dir; its output in out_path. */
static int sh(const char *cmd, const char *out_path)
{
    pid_t pid = fork();
    int st;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || chdir(HETPLAN_SOURCE_DIR) != 0)
            _exit(127);
        dup2(fo, 1);
        dup2(fo, 2);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

#define PLAN_CMD "'" HETPLAN_PLANNER "' --cluster examples/amp-het.json " \
                 "--model examples/gpt2-amp.json --top-k 2"

START_TEST(cli_silent_when_not_a_terminal)
{
    char out[] = "/tmp/hetplan-progress.XXXXXX";
    char cmd[2048];
    int fd = mkstemp(out);
    char *t;

    ck_assert_int_ge(fd, 0);
    close(fd);
    /* stderr into a file: no progress, nothing at all */
    snprintf(cmd, sizeof cmd, "%s 2>%s.err >/dev/null; cat %s.err; rm -f %s.err",
             PLAN_CMD, out, out, out);
    ck_assert_int_eq(sh(cmd, out), 0);
    t = slurp(out);
    ck_assert_msg(t[0] == '\0', "stderr not empty when not a terminal: '%s'", t);
    free(t);
    /* --verbose adds its statistics line, still no progress line */
    snprintf(cmd, sizeof cmd, "%s --verbose 2>&1 >/dev/null", PLAN_CMD);
    ck_assert_int_eq(sh(cmd, out), 0);
    t = slurp(out);
    ck_assert_ptr_nonnull(strstr(t, "candidates scored, "));
    ck_assert_ptr_null(strstr(t, "\r"));
    free(t);
    unlink(out);
}
END_TEST

START_TEST(cli_draws_on_a_terminal)
{
    char out[] = "/tmp/hetplan-progress.XXXXXX";
    char cmd[2048];
    int fd = mkstemp(out);
    char *t;

    ck_assert_int_ge(fd, 0);
    close(fd);
    /* script(1) gives the planner a pseudo-terminal as stderr */
    snprintf(cmd, sizeof cmd, "script -qec \"%s >/dev/null\" /dev/null", PLAN_CMD);
    ck_assert_int_eq(sh(cmd, out), 0);
    t = slurp(out);
    ck_assert_msg(strstr(t, "\rplanner: enumerate") != NULL, "no progress line: '%s'", t);
    ck_assert_ptr_nonnull(strstr(t, "candidates scored, best "));
    /* cleared at the end */
    ck_assert_ptr_nonnull(strstr(t, "\r\033[K"));
    free(t);
    snprintf(cmd, sizeof cmd, "script -qec \"%s --quiet\" /dev/null", PLAN_CMD);
    ck_assert_int_eq(sh(cmd, out), 0);
    t = slurp(out);
    ck_assert_msg(strstr(t, "candidates") == NULL, "--quiet drew progress: '%s'", t);
    free(t);
    unlink(out);
}
END_TEST

/* Why the terminal check cannot run here; NULL when it can. */
static const char *script_absent(void)
{
    if (system("command -v script >/dev/null 2>&1") != 0)
        return "the terminal check needs script(1) (Debian: bsdutils)";
    return NULL;
}

static Suite *plain_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("progress");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, library_calls_back);
    tcase_add_test(tc, cli_silent_when_not_a_terminal);
    suite_add_tcase(s, tc);
    return s;
}

/* its own ctest entry, test_search_progress_tool: skipped without script */
static Suite *terminal_suite(void)
{
    Suite *s = suite_create("progress_terminal");
    TCase *tc = tcase_create("terminal");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, cli_draws_on_a_terminal);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    return tu_main_tool(argc, argv, plain_suite, terminal_suite, script_absent);
}
