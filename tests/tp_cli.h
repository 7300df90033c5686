/* tests/tp_cli.h: running the planner binary from test_whatif_stragglers,
 * test_whatif_idle and test_replan_freeze in a temporary directory
 * (static helpers, header-only). */
#ifndef HETPLAN_TP_CLI_H
#define HETPLAN_TP_CLI_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

#define TP_PATHN 1024

static char tp_dir[TP_PATHN]; /* made by tp_setup, removed by tp_teardown */

static void tp_setup(void)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(tp_dir, sizeof tp_dir, "%s/hetplan-tp.XXXXXX",
             tmp && tmp[0] ? tmp : "/tmp");
    ck_assert_msg(mkdtemp(tp_dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void tp_teardown(void)
{
    char cmd[TP_PATHN + 32];

    if (tp_dir[0] == '\0')
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tp_dir);
    tp_dir[0] = '\0';
}

static const char *tp_path(char *buf, const char *name)
{
    size_t a = strlen(tp_dir), b = strlen(name);

    ck_assert_uint_lt(a + b + 2, TP_PATHN);
    memcpy(buf, tp_dir, a);
    buf[a] = '/';
    memcpy(buf + a + 1, name, b + 1);
    return buf;
}

static void tp_write(const char *name, const char *text)
{
    tu_put(tp_dir, name, text);
}

/* Whole file, NUL-terminated (caller frees); NULL when missing. */
static char *tp_read(const char *name)
{
    char p[TP_PATHN];

    return tu_slurp(tp_path(p, name));
}

typedef struct tp_run_out {
    int status;
    char *out, *err;
} tp_run_out;

static void tp_run_free(tp_run_out *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Run the planner in tp_dir with args (NULL-terminated). */
static void tp_run(tp_run_out *r, const char *const *args)
{
    pid_t pid;
    int st = 0, n = 0;
    char *argv[64];
    char op[TP_PATHN], ep[TP_PATHN];

    memset(r, 0, sizeof *r);
    argv[n++] = strdup(HETPLAN_PLANNER);
    while (args[n - 1] != NULL && n < 63) {
        argv[n] = strdup(args[n - 1]);
        n++;
    }
    argv[n] = NULL;
    tp_path(op, ".stdout");
    tp_path(ep, ".stderr");
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fi = open("/dev/null", O_RDONLY);
        if (fo < 0 || fe < 0 || fi < 0 || chdir(tp_dir) != 0)
            _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(HETPLAN_PLANNER, argv);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    while (n > 0)
        free(argv[--n]);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r->out = tp_read(".stdout");
    r->err = tp_read(".stderr");
    ck_assert_ptr_nonnull(r->out);
    ck_assert_ptr_nonnull(r->err);
}

/* Run the planner with args, expect exit status `status` and, unless
 * NULL, `err_has` in its stderr and `out_has` in its stdout. */
static inline void tp_expect(const char *const *args, int status,
                             const char *err_has, const char *out_has)
{
    tp_run_out r;

    tp_run(&r, args);
    ck_assert_int_eq(r.status, status);
    if (err_has != NULL)
        ck_assert_ptr_nonnull(strstr(r.err, err_has));
    if (out_has != NULL)
        ck_assert_ptr_nonnull(strstr(r.out, out_has));
    tp_run_free(&r);
}

/* Write the cluster, model and strategies documents to c.json, m.json and
 * s.json and `planner evaluate` them into plan.json; fails the test when
 * evaluate fails. */
static inline void tp_evaluate(const char *cluster, const char *model,
                               const char *strategies)
{
    const char *args[] = {"evaluate", "--cluster", "c.json", "--model", "m.json",
                          "--strategies", "s.json", "--output", "plan.json",
                          "--quiet", NULL};
    tp_run_out r;

    tp_write("c.json", cluster);
    tp_write("m.json", model);
    tp_write("s.json", strategies);
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "evaluate failed: %s", r.err);
    tp_run_free(&r);
}

#endif
