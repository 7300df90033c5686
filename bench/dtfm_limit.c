/* bench/dtfm_limit.c: `planner decentralized` on the largest cluster it
 * accepts, 4,096 GPUs (64 regions of 64 V100): wall time against the time
 * limit and the largest resident set of each run (docs/decentralized.md,
 * "Benchmark"; docs/limits.md).  Prints one JSON object.
 *
 * usage: dtfm-limit [--quick] [--planner PATH] */
#define _DEFAULT_SOURCE /* wait4 */
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_num(double v)
{
    if (isfinite(v))
        printf("%.6g", v);
    else
        printf("null");
}

/* Run `planner decentralized ARGS` (args NULL-terminated, at most 12),
 * stdout to /dev/null: its wall time, s (negative on failure); *rc gets
 * its exit code, *rss_mib its largest resident set, MiB. */
static double spawn_measured(const char *planner, const char *const *args, int *rc,
                             double *rss_mib)
{
    char *argv[16], pl[1024], sub[] = "decentralized", buf[12][1024];
    posix_spawn_file_actions_t fa;
    struct rusage ru;
    pid_t pid;
    int status = 0, i;
    double t0;
    extern char **environ;

    snprintf(pl, sizeof pl, "%s", planner);
    argv[0] = pl;
    argv[1] = sub;
    for (i = 0; args[i] != NULL && i < 12; i++) {
        snprintf(buf[i], sizeof buf[i], "%s", args[i]);
        argv[i + 2] = buf[i];
    }
    argv[i + 2] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    t0 = mono_s();
    if (posix_spawn(&pid, planner, &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1.0;
    }
    posix_spawn_file_actions_destroy(&fa);
    if (wait4(pid, &status, 0, &ru) < 0)
        return -1.0;
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *rss_mib = (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
    return mono_s() - t0;
}

/* The command on the largest cluster it accepts, 4096 GPUs (64 regions of
 * 64 V100, 5 ms and 2 Gbit/s inside a region, 50 ms and 1 Gbit/s between):
 * each searcher under --time-limit 1, one under --seconds (2 s with
 * --quick, else 5), a limit of a microsecond, and the exact searcher
 * (declined at this size); wall time, overshoot and memory. */
static void run_limit(const char *planner, int quick)
{
    static const char *const runs[][5] = {
        {"--searcher", "ga", "--time-limit", "1", NULL},
        {"--searcher", "kl", "--time-limit", "1", NULL},
        {"--searcher", "sa", "--time-limit", "1", NULL},
        {"--searcher", "random", "--time-limit", "1", NULL},
        {"--searcher", "ga", "--time-limit", "1e-6", NULL},
        {"--searcher", "ga", "--seconds", "5", NULL},
        {"--searcher", "exact", "--time-limit", "1", NULL}};
    char path[] = "/tmp/dtfm-bench-XXXXXX";
    int fd, r, i, rc;
    double worst = 0.0, rss_max = 0.0;
    FILE *f;

    printf("{\"devices\":4096,\"regions\":64,\"planner\":\"%s\",\"runs\":[", planner);
    fd = mkstemp(path);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        if (fd >= 0)
            close(fd);
        printf("]}\n");
        return;
    }
    fputs("{\"name\":\"limit-4096\",\"device\":\"V100\",\"regions\":[", f);
    for (i = 0; i < 64; i++)
        fprintf(f, "%s{\"name\":\"r%d\",\"gpus\":64}", i ? "," : "", i);
    fputs("],\"inside\":{\"latency_ms\":5,\"bandwidth_gbps\":2},"
          "\"between\":{\"latency_ms\":50,\"bandwidth_gbps\":1}}\n", f);
    if (fclose(f) != 0) {
        unlink(path);
        printf("]}\n");
        return;
    }
    for (r = 0; r < (int)(sizeof runs / sizeof runs[0]); r++) {
        const char *args[12];
        double rss = NAN, wall, limit = atof(runs[r][3]);
        args[0] = "--cluster";
        args[1] = path;
        for (i = 0; runs[r][i] != NULL; i++)
            args[i + 2] = runs[r][i];
        if (quick && strcmp(runs[r][2], "--seconds") == 0)
            args[5] = "2", limit = 2.0;
        args[i + 2] = NULL;
        rc = -1;
        wall = spawn_measured(planner, args, &rc, &rss);
        printf("%s{\"args\":\"%s %s %s %s\",\"exit\":%d,\"wall_s\":", r ? "," : "",
               args[2], args[3], args[4], args[5], rc);
        print_num(wall >= 0 ? wall : NAN);
        printf(",\"overshoot_s\":");
        print_num(wall >= 0 ? wall - limit : NAN);
        printf(",\"max_rss_mib\":");
        print_num(rss);
        printf("}");
        fflush(stdout);
        if (wall >= 0 && wall - limit > worst)
            worst = wall - limit;
        if (rss > rss_max)
            rss_max = rss;
    }
    unlink(path);
    printf("],\"worst_overshoot_s\":");
    print_num(worst);
    printf(",\"max_rss_mib\":");
    print_num(rss_max);
    printf("}\n");
}

int main(int argc, char **argv)
{
    char def[1024];
    const char *planner = NULL, *sl = strrchr(argv[0], '/');
    int i, quick = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--planner") == 0 && i + 1 < argc)
            planner = argv[++i];
        else {
            fprintf(stderr, "usage: dtfm-limit [--quick] [--planner PATH]\n");
            return 2;
        }
    }
    if (planner == NULL) {
        /* the planner next to this program's directory: build/bench/.. */
        snprintf(def, sizeof def, "%.*s../planner", sl ? (int)(sl - argv[0] + 1) : 0,
                 argv[0]);
        planner = def;
    }
    if (access(planner, X_OK) != 0) {
        printf("{\"skipped\":\"no planner at '%s' (--planner PATH)\"}\n", planner);
        return 0;
    }
    run_limit(planner, quick);
    return 0;
}
