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

#endif
