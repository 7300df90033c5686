/* launcher/spawn.c: torchrun's environment, and --spawn: N ranks on this
 * machine, started and waited for, failures propagated. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

static int env_int(const char *name, int lo, int hi, int dflt, int *out,
                   util_error *err)
{
    const char *v = getenv(name);
    char *end;
    long x;

    if (!v) {
        *out = dflt;
        return UTIL_OK;
    }
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "environment variable '%s' expects an integer from %d "
                              "to %d, got '%s'", name, lo, hi, v);
    *out = (int)x;
    return UTIL_OK;
}

int launch_env_of(launch_env *e, util_error *err)
{
    const char *addr = getenv("MASTER_ADDR");
    int rc;

    memset(e, 0, sizeof *e);
    if (!getenv("WORLD_SIZE"))
        return UTIL_OK;
    e->present = 1;
    if (!getenv("RANK"))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "environment variable 'WORLD_SIZE' is set but 'RANK' "
                              "is not");
    if ((rc = env_int("WORLD_SIZE", 1, 1 << 16, 1, &e->world, err)) != UTIL_OK ||
        (rc = env_int("RANK", 0, e->world - 1, 0, &e->rank, err)) != UTIL_OK ||
        (rc = env_int("LOCAL_RANK", 0, 1023, e->rank, &e->local_rank, err)) != UTIL_OK ||
        (rc = env_int("LOCAL_WORLD_SIZE", 1, 1 << 16, e->world, &e->local_world, err)) !=
            UTIL_OK ||
        (rc = env_int("MASTER_PORT", 1, 65535, 29500, &e->port, err)) != UTIL_OK)
        return rc;
    /* torchrun's agent serves its own store on MASTER_PORT: take the next */
    if (getenv("TORCHELASTIC_RUN_ID") && e->port < 65535)
        e->port++;
    if ((rc = env_int("HETPLAN_LAUNCH_PORT", 1, 65535, e->port, &e->port, err)) != UTIL_OK)
        return rc;
    snprintf(e->addr, sizeof e->addr, "%s", addr && *addr ? addr : "127.0.0.1");
    return UTIL_OK;
}

void launch_spawn_result_free(launch_spawn_result *res)
{
    if (!res)
        return;
    free(res->status);
    memset(res, 0, sizeof *res);
}

/* A port nobody listens on now (the kernel's choice). */
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int launch_spawn(const char *exe, char *const *argv, int n, double grace_s,
                 launch_spawn_result *res, util_error *err)
{
    pid_t *pid;
    int i, left, port = free_port(), sent = 0;
    double deadline = 0.0;
    char v[32];

    memset(res, 0, sizeof *res);
    res->first_failed = -1;
    if (n < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL, "nothing to spawn");
    if (port < 0)
        return util_error_set(err, UTIL_EIO, NULL, NULL, "no free TCP port on "
                              "127.0.0.1: %s", strerror(errno));
    pid = calloc((size_t)n, sizeof *pid);
    res->status = calloc((size_t)n, sizeof *res->status);
    if (!pid || !res->status) {
        free(pid);
        launch_spawn_result_free(res);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] < 0) {
            int e = errno, j;
            for (j = 0; j < i; j++)
                kill(pid[j], SIGTERM);
            for (j = 0; j < i; j++)
                waitpid(pid[j], NULL, 0);
            free(pid);
            launch_spawn_result_free(res);
            return util_error_set(err, UTIL_EIO, NULL, NULL, "cannot start rank %d: %s",
                                  i, strerror(e));
        }
        if (pid[i] == 0) {
            snprintf(v, sizeof v, "%d", i);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", n);
            setenv("WORLD_SIZE", v, 1);
            setenv("LOCAL_WORLD_SIZE", v, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            snprintf(v, sizeof v, "%d", port);
            setenv("MASTER_PORT", v, 1);
            execv(exe, argv);
            _exit(127);
        }
    }
    res->n = n;
    for (left = n; left > 0;) {
        int status;
        pid_t got = waitpid(-1, &status, WNOHANG);
        if (got > 0) {
            for (i = 0; i < n && pid[i] != got; i++)
                ;
            if (i == n)
                continue;
            res->status[i] = WIFEXITED(status) ? WEXITSTATUS(status)
                                               : 128 + WTERMSIG(status);
            pid[i] = -1;
            left--;
            if (res->status[i] != 0 && res->first_failed < 0) {
                res->first_failed = i;
                deadline = now_s() + grace_s;
            }
            continue;
        }
        if (got < 0 && errno != EINTR)
            break;
        if (deadline > 0.0 && now_s() > deadline) {
            /* the failure did not end them: SIGTERM, then SIGKILL */
            for (i = 0; i < n; i++)
                if (pid[i] > 0)
                    kill(pid[i], sent ? SIGKILL : SIGTERM);
            res->killed = 1;
            sent = 1;
            deadline = now_s() + 2.0;
        }
        {
            struct timespec ts = {0, 20000000L};
            nanosleep(&ts, NULL);
        }
    }
    free(pid);
    return UTIL_OK;
}
