/* tests/test_util_files.c: util_write_file_atomic replaces regular files
 * only (keeping their permission bits, or giving those asked for) and refuses FIFOs, symbolic
 * links, directories and devices (docs/cli.md, "Output files"). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "testutil.h"

static char dir[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/hetplan_files_%ld", (long)getpid());
    tu_remove_tree(dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

static void teardown(void)
{
    tu_remove_tree(dir);
}

static const char *at(const char *name)
{
    static char p[4][256];
    static int k;

    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* Entries of dir: nothing left behind but what the test made. */
static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void refused(const char *path, const char *kind)
{
    util_error err;

    ck_assert_int_eq(util_write_file_atomic(path, "x\n", &err), UTIL_EIO);
    ck_assert_str_eq(err.file, path);
    ck_assert_msg(strstr(err.msg, "cannot replace") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, kind) != NULL, "'%s' lacks '%s'", err.msg, kind);
}

/* Write text to name (mode -2: util_write_file_atomic, else
 * util_write_file_atomic_mode with mode); the file then holds text with
 * the permission bits want, and nothing else is left in dir. */
static void write_check(const char *name, const char *text, int mode, int want)
{
    struct stat st;
    util_error err;
    char *t;

    ck_assert_int_eq(mode == -2 ? util_write_file_atomic(at(name), text, &err)
                                : util_write_file_atomic_mode(at(name), text, mode, &err),
                     UTIL_OK);
    ck_assert_int_eq(stat(at(name), &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, want);
    t = tu_slurp(at(name));
    ck_assert_str_eq(t, text);
    free(t);
    ck_assert_int_eq(entries(), 1);
}

START_TEST(regular_files_keep_their_mode)
{
    util_error err;

    ck_assert_int_eq(util_write_file_atomic(at("new"), "one\n", &err), UTIL_OK);
    ck_assert_int_eq(chmod(at("new"), 0751), 0);
    write_check("new", "two\n", -2, 0751);
    ck_assert_int_eq(chmod(at("new"), 0600), 0);
    write_check("new", "three\n", -2, 0600);
}
END_TEST

/* util_write_file_atomic_mode: a new file and a replaced one (0600) both
 * get the mode asked for; mode -1 keeps the replaced file's (0644). */
START_TEST(scripts_get_their_mode)
{
    write_check("run.sh", "#!/bin/sh\n", 0755, 0755);
    ck_assert_int_eq(chmod(at("run.sh"), 0600), 0);
    write_check("run.sh", "#!/bin/sh\n:\n", 0755, 0755);
    ck_assert_int_eq(chmod(at("run.sh"), 0644), 0);
    write_check("run.sh", "x\n", -1, 0644);
}
END_TEST

START_TEST(special_files_are_refused)
{
    struct stat st;
    char *t;

    ck_assert_int_eq(mkfifo(at("fifo"), 0600), 0);
    refused(at("fifo"), "a FIFO");
    ck_assert_int_eq(lstat(at("fifo"), &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));

    ck_assert_int_eq(util_write_file_atomic(at("target"), "keep\n", NULL), UTIL_OK);
    ck_assert_int_eq(symlink(at("target"), at("link")), 0);
    refused(at("link"), "a symbolic link");
    ck_assert_int_eq(lstat(at("link"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    t = tu_slurp(at("target"));
    ck_assert_str_eq(t, "keep\n");
    free(t);
    ck_assert_int_eq(symlink(at("nowhere"), at("dangling")), 0);
    refused(at("dangling"), "a symbolic link");
    ck_assert_int_eq(lstat(at("nowhere"), &st), -1);

    ck_assert_int_eq(mkdir(at("sub"), 0700), 0);
    refused(at("sub"), "a directory");
    if (lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode))
        refused("/dev/null", "a device");
    /* fifo, target, link, dangling, sub: no temporary file left */
    ck_assert_int_eq(entries(), 5);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("util_files");
    TCase *tc = tcase_create("files");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, regular_files_keep_their_mode);
    tcase_add_test(tc, scripts_get_their_mode);
    tcase_add_test(tc, special_files_are_refused);
    suite_add_tcase(su, tc);
    return tu_run(su);
}
