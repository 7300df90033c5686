/* tests/fuzz/fuzz_cli.c: the planner's command line, run in-process
 * (cmd_dispatch) on arguments made from the input: one argument per line,
 * at most 48 of 512 bytes.  It works in a temporary folder holding
 * read-only copies of the examples (examples/NAME), of the calibration
 * seeds (profiles/NAME) and of plans the planner wrote at start-up
 * (plans/amp.json, plans/megatron.json, plans/evaluate.json); whatever a
 * command writes there is removed after each input.  Inputs that could
 * reach outside it are skipped: an argument starting with '/', or holding
 * "..", or "-" (standard input is /dev/null anyway).  --help, -h and
 * --version, which exit, are skipped too.  Every search is bounded:
 * "decentralized" gets "--seconds 0.2" and plan "--time-limit 2" before
 * their options, and any later "--seconds" becomes "--stall",
 * "--time-limit" "--top-k".  The contract checked: the exit code is one
 * of the planner's (0-6), no crash, no leak, no sanitizer report. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <fcntl.h>
#include <ftw.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "fuzz.h"

#define MAX_ARGS 48
#define MAX_ARG 512

static char work[512];

/* Copy every regular file of folder src into folder dst (made). */
static void copy_folder(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    struct dirent *e;

    if (d == NULL || mkdir(dst, 0755) != 0)
        fuzz_fail("cli set-up", src);
    while ((e = readdir(d)) != NULL) {
        char from[1024], to[1024];
        char *text = NULL;
        util_error err;
        if (e->d_name[0] == '.')
            continue;
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        if (util_read_file(from, &text, &err) != UTIL_OK ||
            util_write_file_atomic(to, text, &err) != UTIL_OK)
            fuzz_fail("cli set-up", from);
        free(text);
    }
    closedir(d);
}

/* Make files and folders below path read-only. */
static int make_read_only(const char *path, const struct stat *st, int flag,
                          struct FTW *ftw)
{
    (void)ftw;
    (void)flag;
    return chmod(path, S_ISDIR(st->st_mode) ? 0555 : 0444);
}

/* Remove path, after what it holds (FTW_DEPTH). */
static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Remove what a command wrote in the work folder (everything but
 * examples/, plans/ and profiles/, which are read-only). */
static void clean_work(void)
{
    DIR *d = opendir(work);
    struct dirent *e;

    if (d == NULL)
        fuzz_fail("cli clean-up", work);
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, "examples") == 0 || strcmp(e->d_name, "plans") == 0 ||
            strcmp(e->d_name, "profiles") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", work, e->d_name);
        chmod(p, 0700);
        nftw(p, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
}

/* Make path writable again. */
static int make_writable(const char *path, const struct stat *st, int flag,
                         struct FTW *ftw)
{
    (void)ftw;
    (void)flag;
    return chmod(path, S_ISDIR(st->st_mode) ? 0700 : 0600);
}

static void remove_work(void)
{
    clean_work();
    nftw(work, make_writable, 16, FTW_PHYS);
    nftw(work, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Run the planner on the arguments args (n of them, argv[0] added). */
static int run(int n, char **args)
{
    static char name[] = "planner";
    char *argv[MAX_ARGS + 4];
    int i, code;

    argv[0] = name;
    for (i = 0; i < n; i++)
        argv[i + 1] = args[i];
    argv[n + 1] = NULL;
    code = cmd_dispatch(n + 1, argv);
    fflush(stdout);
    return code;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static char *plans[][16] = {
        {"plan", "--cluster", "examples/amp-het.json", "--model",
         "examples/gpt2-amp.json", "--top-k", "2", "--quiet", "--output",
         "plans/amp.json", NULL},
        {"plan", "--cluster", "examples/mixed-generations.json", "--model",
         "examples/llama-7b.json", "--method", "megatron", "--top-k", "1",
         "--quiet", "--output", "plans/megatron.json", NULL},
        {"evaluate", "--cluster", "examples/amp-het.json", "--model",
         "examples/gpt2-amp.json", "--strategies",
         "examples/strategies-amp-het.json", "--quiet", "--output",
         "plans/evaluate.json", NULL}};
    const char *tmp = getenv("TMPDIR");
    size_t k;
    int fd;

    (void)argc;
    (void)argv;
    snprintf(work, sizeof work, "%s/hetplan-fuzz-cli.XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(work) == NULL || chdir(work) != 0)
        fuzz_fail("cli set-up", work);
    atexit(remove_work);
    copy_folder(HETPLAN_SOURCE_DIR "/examples", "examples");
    copy_folder(HETPLAN_SOURCE_DIR "/tests/fuzz/seeds/calibration", "profiles");
    if (mkdir("plans", 0755) != 0)
        fuzz_fail("cli set-up", "plans");
    for (k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        int n = 0;
        while (plans[k][n] != NULL)
            n++;
        if (run(n, plans[k]) != CMD_EXIT_OK)
            fuzz_fail("cli set-up", plans[k][n - 1]);
    }
    nftw("examples", make_read_only, 16, FTW_PHYS);
    nftw("plans", make_read_only, 16, FTW_PHYS);
    nftw("profiles", make_read_only, 16, FTW_PHYS);
    /* stdout carries the commands' documents: discarded; stdin is empty */
    fd = open("/dev/null", O_RDWR);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDIN_FILENO) < 0)
        fuzz_fail("cli set-up", "/dev/null");
    close(fd);
    return 0;
}

/* 1 when the argument a may be given to the planner here. */
static int allowed(const char *a)
{
    return a[0] != '/' && strstr(a, "..") == NULL && strcmp(a, "-") != 0 &&
           strcmp(a, "--help") != 0 && strcmp(a, "-h") != 0 &&
           strcmp(a, "--version") != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size), *line, *save = NULL;
    char *args[MAX_ARGS + 4];
    static char seconds[] = "--seconds", limit[] = "0.2", stall[] = "--stall";
    static char time_limit[] = "--time-limit", budget[] = "2", top_k[] = "--top-k";
    int n = 0, ok = 1, code, i;

    if (text == NULL)
        return 0;
    for (line = strtok_r(text, "\n", &save); line != NULL && ok;
         line = strtok_r(NULL, "\n", &save)) {
        if (n == MAX_ARGS || strlen(line) > MAX_ARG || !allowed(line))
            ok = 0;
        else if (strcmp(line, "--seconds") == 0)
            args[n++] = stall;
        else if (strcmp(line, "--time-limit") == 0)
            args[n++] = top_k;
        else if (n == 0 && line[0] == '-') { /* plan, named or not */
            args[n++] = time_limit;
            args[n++] = budget;
            args[n++] = line;
        } else
            args[n++] = line;
        if (n == 1 && strcmp(line, "decentralized") == 0) {
            args[n++] = seconds;
            args[n++] = limit;
        } else if (n == 1 && strcmp(line, "plan") == 0) {
            args[n++] = time_limit;
            args[n++] = budget;
        }
    }
    if (ok) {
        code = run(n, args);
        if (code < CMD_EXIT_OK || code > CMD_EXIT_TIMEOUT) {
            char why[64];
            snprintf(why, sizeof why, "exit code %d", code);
            fuzz_fail("planner", why);
        }
        if (getenv("HETPLAN_FUZZ_VERBOSE")) {
            fprintf(stderr, "fuzz: planner");
            for (i = 0; i < n; i++)
                fprintf(stderr, " '%s'", args[i]);
            fprintf(stderr, ": exit %d\n", code);
        }
        clean_work();
    }
    free(text);
    return 0;
}
