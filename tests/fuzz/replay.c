/* tests/fuzz/replay.c: main() of a harness built without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named, and on every file of
 * every folder named (seeds and regression inputs, under ctest).
 * Arguments starting with '-' (libFuzzer's options) are ignored. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#pragma weak LLVMFuzzerInitialize /* as libFuzzer: harnesses may leave it out */

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;

    if (f == NULL) {
        fprintf(stderr, "replay: cannot open '%s'\n", path);
        return -1;
    }
    do {
        if (len == cap) {
            uint8_t *grown = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (grown == NULL) {
                fclose(f);
                free(buf);
                fprintf(stderr, "replay: out of memory\n");
                return -1;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

/* Replay path (a file, or the files of a folder, in name order);
 * the number of inputs, -1 on error. */
static int replay(const char *path)
{
    struct stat st;
    struct dirent **names;
    char sub[4096];
    int n, i, done = 0;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: '%s' not found\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return replay_file(path) == 0 ? 1 : -1;
    n = scandir(path, &names, NULL, alphasort);
    if (n < 0)
        return -1;
    for (i = 0; i < n; i++) {
        snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(sub, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(sub) != 0)
                done = -1;
            else if (done >= 0)
                done++;
        }
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    int i, n, total = 0;

    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    for (i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        if ((n = replay(argv[i])) < 0)
            return EXIT_FAILURE;
        total += n;
    }
    printf("%s: %d inputs replayed, no finding\n", argv[0], total);
    return EXIT_SUCCESS;
}
