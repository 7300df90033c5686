/* tests/test_commands_exportdir.c: `planner export --output DIR` writes
 * all of its files or none (docs/export.md, "Output directory"): a FIFO
 * or a symbolic link where a file goes, or a write that fails part way
 * (a file-size limit standing in for a full disk), leaves DIR exactly as
 * it was and nothing beside it; and `--to TARGET@VERSION`, the spelling
 * of `plan --launcher`. */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tp_cli.h"

/* Two nodes of two GPUs; the plan runs tp 1, dp 4 on all of them. */
static void make_plan(void)
{
    tp_evaluate(tu_two_nodes_json, tu_gpt2_small4_json,
                "{\"strategies\":[{\"tp\":1,\"dp\":4,\"pp\":1,\"mbs\":1}]}");
}

/* The names in directory rel of tp_dir (hidden ones too), sorted and
 * joined by " ", into out; "(none)" when rel does not exist. */
static void listing(const char *rel, char *out, size_t n)
{
    char p[TP_PATHN], *names[64];
    DIR *d;
    struct dirent *e;
    int k = 0, i, j;
    size_t used = 0;

    out[0] = '\0';
    d = opendir(tp_path(p, rel));
    if (d == NULL) {
        snprintf(out, n, "(none)");
        return;
    }
    while ((e = readdir(d)) != NULL && k < 64)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            names[k++] = strdup(e->d_name);
    closedir(d);
    for (i = 1; i < k; i++)
        for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (i = 0; i < k; i++) {
        used += (size_t)snprintf(out + used, used < n ? n - used : 0, "%s%s",
                                 i ? " " : "", names[i]);
        free(names[i]);
    }
}

/* Run the planner in tp_dir with args, its files limited to limit bytes
 * (0: no limit; a larger write fails with EFBIG, SIGXFSZ ignored); its
 * stderr into .stderr, its stdout into .stdout without a limit (else to
 * /dev/null: the limit holds for every regular file it writes); its exit
 * status. */
static int run_limited(const char *const *args, long limit)
{
    char op[TP_PATHN], buf[4096], *argv[32];
    FILE *f;
    pid_t pid;
    ssize_t got;
    int st = 0, n = 0, fds[2];

    tp_path(op, ".stdout");
    argv[n++] = strdup(HETPLAN_PLANNER);
    while (args[n - 1] != NULL && n < 31) {
        argv[n] = strdup(args[n - 1]);
        n++;
    }
    argv[n] = NULL;
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fo = open(limit > 0 ? "/dev/null" : op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fo < 0 || chdir(tp_dir) != 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        if (limit > 0) {
            struct rlimit rl;
            rl.rlim_cur = rl.rlim_max = (rlim_t)limit;
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        execv(HETPLAN_PLANNER, argv);
        _exit(127);
    }
    close(fds[1]);
    f = fopen(tp_path(op, ".stderr"), "wb");
    ck_assert_ptr_nonnull(f);
    while ((got = read(fds[0], buf, sizeof buf)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, (size_t)got, f), (size_t)got);
    close(fds[0]);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    while (n > 0)
        free(argv[--n]);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A FIFO where the second file of the torchrun export goes: exit 5, and
 * the directory holds what it held (no torchrun.sh, the FIFO, the user's
 * file unchanged); the same with a symbolic link, whose target stays. */
START_TEST(special_file_in_the_way)
{
    static const char *const args[] = {"export", "--plan", "plan.json", "--to",
                                       "torchrun", "--output", "out", NULL};
    char p[TP_PATHN], before[1024], after[1024], top[1024], *text;
    struct stat st;
    int rc;

    make_plan();
    ck_assert_int_eq(mkdir(tp_path(p, "out"), 0777), 0);
    tp_write("out/notes.txt", "mine\n");
    ck_assert_int_eq(mkfifo(tp_path(p, "out/ranks.txt"), 0644), 0);
    listing("out", before, sizeof before);
    listing("", top, sizeof top);
    rc = run_limited(args, 0);
    text = tp_read(".stderr");
    ck_assert_msg(rc == 5, "exit %d: %s", rc, text);
    ck_assert_msg(strstr(text, "'out/ranks.txt': it is a FIFO") != NULL, "%s", text);
    free(text);
    listing("out", after, sizeof after);
    ck_assert_str_eq(after, before); /* no torchrun.sh, no temporary files */
    ck_assert_str_eq(before, "notes.txt ranks.txt");
    ck_assert_int_eq(lstat(tp_path(p, "out/ranks.txt"), &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    text = tp_read("out/notes.txt");
    ck_assert_str_eq(text, "mine\n");
    free(text);
    listing("", after, sizeof after);
    ck_assert_str_eq(after, top);

    /* a symbolic link instead: refused, its target untouched */
    ck_assert_int_eq(unlink(tp_path(p, "out/ranks.txt")), 0);
    tp_write("victim.txt", "do not touch\n");
    ck_assert_int_eq(symlink("../victim.txt", tp_path(p, "out/ranks.txt")), 0);
    listing("out", before, sizeof before);
    rc = run_limited(args, 0);
    ck_assert_int_eq(rc, 5);
    listing("out", after, sizeof after);
    ck_assert_str_eq(after, before);
    text = tp_read("victim.txt");
    ck_assert_str_eq(text, "do not touch\n");
    free(text);
}
END_TEST

/* The sizes of the deepspeed export's files, in the order it writes
 * them (its --format json listing): a limit that lets the first through
 * and stops a later one. */
static long limit_after_first_file(void)
{
    static const char *const args[] = {"export", "--plan", "plan.json", "--to",
                                       "deepspeed", "--format", "json", NULL};
    cJSON *doc, *f;
    long first = -1, later = -1;
    char *text;
    int rc = run_limited(args, 0);

    text = tp_read(".stdout");
    ck_assert_msg(rc == 0, "export exit %d", rc);
    doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(doc, "files"))
    {
        long b = (long)tu_num(f, "bytes");
        if (first < 0)
            first = b;
        else if (b > later)
            later = b;
    }
    cJSON_Delete(doc);
    free(text);
    ck_assert_msg(first > 0 && later > first, "no file after the first is larger "
                  "(%ld, %ld): the check needs one", first, later);
    return first;
}

/* A write that fails part way (the second file is larger than the file
 * size limit; a full disk fails the same way): a new DIR does not
 * appear, an existing one keeps its files and their contents. */
START_TEST(write_fails_part_way)
{
    static const char *const args[] = {"export", "--plan", "plan.json", "--to",
                                       "deepspeed", "--output", "out", NULL};
    char p[TP_PATHN], before[1024], after[1024], *text;
    long limit;
    int rc;

    make_plan();
    limit = limit_after_first_file();
    listing("", before, sizeof before);
    rc = run_limited(args, limit);
    text = tp_read(".stderr");
    ck_assert_msg(rc == 5, "exit %d: %s", rc, text);
    listing("", after, sizeof after);
    ck_assert_str_eq(after, before); /* no out/, no temporary directory */
    listing("out", after, sizeof after);
    ck_assert_str_eq(after, "(none)");
    ck_assert_msg(strstr(text, "File too large; nothing was written") != NULL, "%s",
                  text);
    free(text);

    /* into a directory that holds an older hostfile and a file of the user */
    ck_assert_int_eq(mkdir(tp_path(p, "out"), 0777), 0);
    tp_write("out/hostfile", "old\n");
    tp_write("out/keep.txt", "kept\n");
    rc = run_limited(args, limit);
    ck_assert_int_eq(rc, 5);
    listing("out", after, sizeof after);
    ck_assert_str_eq(after, "hostfile keep.txt");
    text = tp_read("out/hostfile");
    ck_assert_str_eq(text, "old\n");
    free(text);

    /* without the limit: every file written, the user's kept */
    rc = run_limited(args, 0);
    ck_assert_int_eq(rc, 0);
    listing("out", after, sizeof after);
    ck_assert_str_eq(after, "deepspeed.sh ds_config.json hetplan_pipe.py hostfile keep.txt");
    text = tp_read("out/hostfile");
    ck_assert_ptr_null(strstr(text, "old"));
    free(text);
}
END_TEST

/* Replacing files: the script is executable, a replaced file keeps its
 * permission bits, other files stay. */
START_TEST(replace_keeps_modes)
{
    static const char *const args[] = {"export", "--plan", "plan.json", "--to",
                                       "torchrun", "--output", "out/", "--quiet", NULL};
    char p[TP_PATHN], all[1024];
    struct stat st;

    make_plan();
    ck_assert_int_eq(run_limited(args, 0), 0);
    ck_assert_int_eq(stat(tp_path(p, "out/torchrun.sh"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0111, 0111);
    ck_assert_int_eq(chmod(tp_path(p, "out/ranks.txt"), 0600), 0);
    tp_write("out/other", "x");
    ck_assert_int_eq(run_limited(args, 0), 0);
    ck_assert_int_eq(stat(tp_path(p, "out/ranks.txt"), &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    listing("out", all, sizeof all);
    ck_assert_str_eq(all, "other ranks.txt torchrun.sh");
}
END_TEST

/* --to TARGET@VERSION is --to TARGET --target-version VERSION; naming two
 * different releases is a usage error that quotes both. */
START_TEST(to_with_release)
{
    static const char *const at[] = {"export", "--plan", "plan.json", "--to",
                                     "megatron@core_v0.19.0", NULL};
    static const char *const split[] = {"export", "--plan", "plan.json", "--to",
                                        "megatron", "--target-version", "core_v0.19.0",
                                        NULL};
    static const char *const same[] = {"export", "--plan", "plan.json", "--to",
                                       "megatron@core_v0.19.0", "--target-version",
                                       "new", NULL};
    static const char *const both[] = {"export", "--plan", "plan.json", "--to",
                                       "megatron@core_v0.19.0", "--target-version",
                                       "core_r0.9.0", NULL};
    static const char *const hf[] = {"export", "--plan", "plan.json", "--to",
                                     "hostfile@1", NULL};
    static const char *const bad[] = {"export", "--plan", "plan.json", "--to",
                                      "deepspeed@0.99", NULL};
    tp_run_out a, b;

    make_plan();
    tp_run(&a, at);
    ck_assert_msg(a.status == 0, "exit %d: %s", a.status, a.err);
    ck_assert_ptr_nonnull(strstr(a.out, "Megatron-LM core_v0.19.0"));
    tp_run(&b, split);
    ck_assert_int_eq(b.status, 0);
    ck_assert_str_eq(a.out, b.out);
    tp_run_free(&b);
    tp_run(&b, same);
    ck_assert_int_eq(b.status, 0);
    ck_assert_str_eq(a.out, b.out);
    tp_run_free(&b);
    tp_run_free(&a);
    tp_expect(both, 2, "'--to megatron@core_v0.19.0' and '--target-version "
                       "core_r0.9.0' name different releases", NULL);
    tp_expect(hf, 2, "hostfile has no release", NULL);
    tp_expect(bad, 2, "deepspeed has no release '0.99' (0.14 or 0.19)", NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("commands_exportdir");
    TCase *tc = tcase_create("exportdir");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, special_file_in_the_way);
    tcase_add_test(tc, write_fails_part_way);
    tcase_add_test(tc, replace_keeps_modes);
    tcase_add_test(tc, to_with_release);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
