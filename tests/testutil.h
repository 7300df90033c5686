/* tests/testutil.h: small helpers shared by the Check test programs
 * (static: each test program gets its own copy). */
#ifndef HETPLAN_TESTUTIL_H
#define HETPLAN_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whole file, NUL-terminated (caller frees); NULL when it cannot be opened. */
static inline char *tu_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Remove a file or a directory tree; best effort. */
static inline void tu_remove_tree(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char sub[4096];

    if (lstat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        unlink(path);
        return;
    }
    d = opendir(path);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (strlen(path) + strlen(e->d_name) + 2 > sizeof sub)
                continue; /* cannot be one of ours */
            memcpy(sub, path, strlen(path));
            sub[strlen(path)] = '/';
            memcpy(sub + strlen(path) + 1, e->d_name, strlen(e->d_name) + 1);
            tu_remove_tree(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* ---- checks that need the data folder -------------------------------- */
/* The data folder beside the project (AMP's real runs and profiles);
 * cmake -DHETPLAN_TEST_DATA=DIR points the tests elsewhere. */
#ifndef HETPLAN_TEST_DATA
#define HETPLAN_TEST_DATA HETPLAN_SOURCE_DIR "/../shared/data"
#endif
#define TU_DATA HETPLAN_TEST_DATA

/* Exit status ctest reads as a skip (SKIP_RETURN_CODE in CMakeLists.txt). */
#define TU_SKIP 77

/* Run a suite with CK_NORMAL output; EXIT_SUCCESS when every test passed. */
static inline int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* main() of a test program whose checks that need the data folder are in
 * a suite of their own: without arguments it runs plain(); with "--data"
 * (the program's second ctest entry, <name>_data) it runs data(), or,
 * when the folder need is absent, says so and exits TU_SKIP. */
static inline int tu_main(int argc, char **argv, Suite *(*plain)(void),
                          Suite *(*data)(void), const char *need)
{
    struct stat st;

    if (argc < 2)
        return tu_run(plain());
    if (strcmp(argv[1], "--data") != 0) {
        fprintf(stderr, "usage: %s [--data]\n", argv[0]);
        return EXIT_FAILURE;
    }
    if (stat(need, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("skipped: %s not found: these checks need the data folder "
               "beside the project (cmake -DHETPLAN_TEST_DATA=DIR points "
               "elsewhere)\n", need);
        fflush(stdout);
        return TU_SKIP;
    }
    return tu_run(data());
}

#endif
