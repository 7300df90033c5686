/* launcher/bootstrap.c: the ranks of a launch meet over TCP: rank 0
 * listens, the others connect and send their info, rank 0 answers with
 * its blob (the NCCL unique id) and every rank's info.  The connections
 * stay open for gathering results, barriers and failure notices: a lost
 * rank (closed connection) or an abort ends every rank, within a
 * deadline, naming the rank. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

#define MAGIC 0x48504c42u       /* "HPLB" */
enum { MSG_HELLO = 1, MSG_WELCOME, MSG_DATA, MSG_GO, MSG_ABORT };
enum { IO_OK = 0, IO_CLOSED, IO_TIMEOUT, IO_BAD };

struct launch_boot {
    int rank, world;
    int *fd;                    /* rank 0: fd[r] to rank r; others: fd[0] */
    unsigned char *blob;
    size_t blob_len;
    unsigned char **info;       /* world entries */
    size_t *info_len;
    unsigned char **stash;      /* rank 0: data that came during a watch */
    size_t *stash_len;
};

void launch_boot_params_init(launch_boot_params *p)
{
    memset(p, 0, sizeof *p);
    p->addr = "127.0.0.1";
    p->port = 29500;
    p->world = 1;
    p->timeout_s = 60.0;
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int ms_left(double deadline)
{
    double left = deadline - now_s();

    if (left <= 0.0)
        return 0;
    return left > 3600.0 ? 3600000 : (int)(left * 1000.0) + 1;
}

static int read_full(int fd, void *buf, size_t n, double deadline)
{
    unsigned char *p = buf;

    while (n > 0) {
        struct pollfd pf = {fd, POLLIN, 0};
        ssize_t got;
        int r = poll(&pf, 1, ms_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return IO_CLOSED;
        if (r == 0)
            return IO_TIMEOUT;
        got = recv(fd, p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return IO_CLOSED;
        p += got;
        n -= (size_t)got;
    }
    return IO_OK;
}

static int write_full(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;

    while (n > 0) {
        ssize_t put = send(fd, p, n, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return IO_CLOSED;
        p += put;
        n -= (size_t)put;
    }
    return IO_OK;
}

static int send_msg(int fd, unsigned type, int rank, const void *data, size_t len)
{
    uint32_t h[4];

    h[0] = htonl(MAGIC);
    h[1] = htonl(type);
    h[2] = htonl((uint32_t)rank);
    h[3] = htonl((uint32_t)len);
    if (fd < 0 || write_full(fd, h, sizeof h) != IO_OK)
        return IO_CLOSED;
    return len ? write_full(fd, data, len) : IO_OK;
}

/* One message; *data malloc'd (caller frees, NUL-terminated). */
static int recv_msg(int fd, double deadline, unsigned *type, int *rank,
                    unsigned char **data, size_t *len)
{
    uint32_t h[4];
    int rc;

    *data = NULL;
    if ((rc = read_full(fd, h, sizeof h, deadline)) != IO_OK)
        return rc;
    if (ntohl(h[0]) != MAGIC || ntohl(h[3]) > (64u << 20))
        return IO_BAD;
    *type = ntohl(h[1]);
    *rank = (int)ntohl(h[2]);
    *len = ntohl(h[3]);
    if (!(*data = malloc(*len + 1)))
        return IO_BAD;
    (*data)[*len] = '\0';
    if (*len && (rc = read_full(fd, *data, *len, deadline)) != IO_OK) {
        free(*data);
        *data = NULL;
        return rc == IO_TIMEOUT ? IO_CLOSED : rc;
    }
    return IO_OK;
}

/* Rank 0 tells every connected rank (but `skip`) that rank `who` fails. */
static void broadcast_abort(launch_boot *b, int who, const char *why, int skip)
{
    int r;

    for (r = 1; r < b->world; r++)
        if (r != skip && b->fd[r] >= 0)
            send_msg(b->fd[r], MSG_ABORT, who, why, strlen(why));
}

/* "ranks 2, 3" of the ranks whose flag is 0. */
static void list_missing(const int *have, int world, char *out, size_t n)
{
    size_t at;
    int r, count = 0, first = 1;

    for (r = 0; r < world; r++)
        count += !have[r];
    at = (size_t)snprintf(out, n, "%s", count == 1 ? "rank" : "ranks");
    for (r = 0; r < world && at < n; r++)
        if (!have[r]) {
            at += (size_t)snprintf(out + at, n - at, "%s %d", first ? "" : ",", r);
            first = 0;
        }
}

static void boot_free(launch_boot *b)
{
    int r;

    if (!b)
        return;
    /* an orderly close: the peer reads what was sent (an abort notice)
       before it sees the end, even if it had data in flight to us */
    for (r = 0; r < b->world && b->fd; r++)
        if (b->fd[r] >= 0)
            shutdown(b->fd[r], SHUT_WR);
    {
        double until = now_s() + 0.5;
        char sink[1];
        for (r = 0; r < b->world && b->fd; r++)
            while (b->fd[r] >= 0 && read_full(b->fd[r], sink, 1, until) == IO_OK)
                ;
    }
    for (r = 0; r < b->world; r++) {
        if (b->fd && b->fd[r] >= 0)
            close(b->fd[r]);
        if (b->info)
            free(b->info[r]);
        if (b->stash)
            free(b->stash[r]);
    }
    free(b->fd);
    free(b->info);
    free(b->info_len);
    free(b->stash);
    free(b->stash_len);
    free(b->blob);
    free(b);
}

void launch_boot_destroy(launch_boot *b)
{
    boot_free(b);
}

static int set_info(launch_boot *b, int r, const void *data, size_t len)
{
    free(b->info[r]);
    b->info[r] = malloc(len + 1);
    if (!b->info[r])
        return -1;
    if (len)
        memcpy(b->info[r], data, len);
    b->info_len[r] = len;
    return 0;
}

/* Rank 0: accept the others, then send the welcome. */
static int boot_root(launch_boot *b, const launch_boot_params *p, util_error *err)
{
    struct sockaddr_in sa;
    double deadline = now_s() + p->timeout_s;
    int lfd, one = 1, joined = 1, r, rc = UTIL_OK, *have = NULL;
    unsigned char *w = NULL;
    size_t wlen, at;
    char miss[512];

    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        return util_error_set(err, UTIL_EIO, NULL, NULL, "rank 0: cannot open a "
                              "socket: %s", strerror(errno));
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons((uint16_t)p->port);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, p->world) != 0) {
        rc = util_error_set(err, UTIL_EIO, NULL, NULL, "rank 0: cannot listen on port "
                            "%d: %s", p->port, strerror(errno));
        goto done;
    }
    have = calloc((size_t)p->world, sizeof *have);
    if (!have) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    have[0] = 1;
    while (joined < p->world) {
        struct pollfd pf = {lfd, POLLIN, 0};
        unsigned type;
        int from, fd, pr = poll(&pf, 1, ms_left(deadline));
        unsigned char *data;
        size_t len;
        uint32_t world;

        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            list_missing(have, p->world, miss, sizeof miss);
            snprintf(miss + strlen(miss), sizeof miss - strlen(miss),
                     " did not join within %g s", p->timeout_s);
            broadcast_abort(b, 0, miss, -1);
            rc = util_error_set(err, UTIL_ETIMEOUT, NULL, NULL, "%s", miss);
            goto done;
        }
        if ((fd = accept(lfd, NULL, NULL)) < 0)
            continue;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (recv_msg(fd, deadline, &type, &from, &data, &len) != IO_OK) {
            close(fd);
            continue;
        }
        if (type != MSG_HELLO || len < 4 || len - 4 > LAUNCH_BOOT_MAX || from < 1 ||
            from >= p->world || have[from]) {
            int bad_world = type == MSG_HELLO && from >= 1 && from < p->world && have[from];
            free(data);
            close(fd);
            if (bad_world) {
                snprintf(miss, sizeof miss, "rank %d joined twice", from);
                broadcast_abort(b, 0, miss, -1);
                rc = util_error_set(err, UTIL_EINVAL, NULL, NULL, "%s", miss);
                goto done;
            }
            continue;
        }
        memcpy(&world, data, 4);
        if ((int)ntohl(world) != p->world) {
            snprintf(miss, sizeof miss, "rank %d has a world of %d, rank 0 of %d", from,
                     (int)ntohl(world), p->world);
            send_msg(fd, MSG_ABORT, 0, miss, strlen(miss));
            free(data);
            close(fd);
            broadcast_abort(b, 0, miss, -1);
            rc = util_error_set(err, UTIL_EINVAL, NULL, NULL, "%s", miss);
            goto done;
        }
        if (set_info(b, from, data + 4, len - 4) != 0) {
            free(data);
            close(fd);
            rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
            goto done;
        }
        free(data);
        b->fd[from] = fd;
        have[from] = 1;
        joined++;
    }
    /* welcome: blob length, blob, then each rank's info length and info */
    wlen = 4 + b->blob_len;
    for (r = 0; r < p->world; r++)
        wlen += 4 + b->info_len[r];
    if (!(w = malloc(wlen))) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    at = 0;
#define PUT32(v) do { uint32_t v_ = htonl((uint32_t)(v)); memcpy(w + at, &v_, 4); at += 4; } while (0)
    PUT32(b->blob_len);
    memcpy(w + at, b->blob, b->blob_len);
    at += b->blob_len;
    for (r = 0; r < p->world; r++) {
        PUT32(b->info_len[r]);
        memcpy(w + at, b->info[r], b->info_len[r]);
        at += b->info_len[r];
    }
#undef PUT32
    for (r = 1; r < p->world; r++)
        if (send_msg(b->fd[r], MSG_WELCOME, 0, w, wlen) != IO_OK) {
            snprintf(miss, sizeof miss, "rank %d lost: its connection closed", r);
            broadcast_abort(b, r, miss, r);
            rc = util_error_set(err, UTIL_EIO, NULL, NULL, "%s", miss);
            goto done;
        }
done:
    free(w);
    free(have);
    close(lfd);
    return rc;
}

/* Parse the welcome into b's blob and infos; -1 when malformed. */
static int take_welcome(launch_boot *b, const unsigned char *w, size_t len)
{
    size_t at = 0;
    uint32_t v;
    int r;

    if (len < 4)
        return -1;
    memcpy(&v, w, 4);
    at = 4;
    v = ntohl(v);
    if (v > LAUNCH_BOOT_MAX || at + v > len || !(b->blob = malloc(v + 1u)))
        return -1;
    memcpy(b->blob, w + at, v);
    b->blob_len = v;
    at += v;
    for (r = 0; r < b->world; r++) {
        if (at + 4 > len)
            return -1;
        memcpy(&v, w + at, 4);
        at += 4;
        v = ntohl(v);
        if (v > LAUNCH_BOOT_MAX || at + v > len || set_info(b, r, w + at, v) != 0)
            return -1;
        at += v;
    }
    return 0;
}

/* A message other than the one expected from rank 0: the error. */
static int peer_trouble(int io, unsigned type, int who, const char *text,
                        int from, util_error *err)
{
    if (io == IO_CLOSED)
        return util_error_set(err, UTIL_EIO, NULL, NULL,
                              "rank %d lost: its connection closed", from);
    if (io == IO_TIMEOUT)
        return util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                              "rank %d did not answer in time", from);
    if (io == IO_OK && type == MSG_ABORT)
        return util_error_set(err, UTIL_EIO, NULL, NULL, "rank %d: %s", who, text);
    return util_error_set(err, UTIL_EIO, NULL, NULL,
                          "rank %d sent an unexpected message", from);
}

static int boot_leaf(launch_boot *b, const launch_boot_params *p, const void *info,
                     size_t info_len, util_error *err)
{
    double deadline = now_s() + p->timeout_s;
    struct addrinfo hints, *ai = NULL;
    char port[16];
    unsigned char *hello, *data = NULL;
    unsigned type = 0;
    int fd = -1, one = 1, who = 0, io, rc;
    uint32_t world = htonl((uint32_t)p->world);
    size_t len;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", p->port);
    if ((rc = getaddrinfo(p->addr, port, &hints, &ai)) != 0)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL, "rank %d: cannot resolve "
                              "'%s': %s", p->rank, p->addr, gai_strerror(rc));
    for (;;) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (fd >= 0)
            close(fd);
        fd = -1;
        if (now_s() >= deadline) {
            freeaddrinfo(ai);
            return util_error_set(err, UTIL_ETIMEOUT, NULL, NULL,
                                  "rank %d: rank 0 at %s:%d did not answer within %g s",
                                  p->rank, p->addr, p->port, p->timeout_s);
        }
        {
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
        }
    }
    freeaddrinfo(ai);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    b->fd[0] = fd;
    if (!(hello = malloc(4 + info_len)))
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    memcpy(hello, &world, 4);
    if (info_len)
        memcpy(hello + 4, info, info_len);
    io = send_msg(fd, MSG_HELLO, p->rank, hello, 4 + info_len);
    free(hello);
    /* rank 0 judges who is missing: give it time to say so */
    if (io == IO_OK)
        io = recv_msg(fd, deadline + 5.0, &type, &who, &data, &len);
    if (io == IO_OK && type == MSG_WELCOME) {
        rc = take_welcome(b, data, len) == 0
                 ? UTIL_OK
                 : util_error_set(err, UTIL_EIO, NULL, NULL, "rank %d: malformed "
                                  "answer from rank 0", p->rank);
    } else {
        rc = peer_trouble(io, type, who, data ? (char *)data : "", 0, err);
    }
    free(data);
    return rc;
}

int launch_boot_create(const launch_boot_params *p, const void *blob,
                       size_t blob_len, const void *info, size_t info_len,
                       launch_boot **out, util_error *err)
{
    launch_boot *b;
    int r, rc;

    *out = NULL;
    if (p->world < 1 || p->world > (1 << 16) || p->rank < 0 || p->rank >= p->world)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "rank %d is outside the world of %d", p->rank, p->world);
    if (p->port < 1 || p->port > 65535)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "port %d is not a TCP port", p->port);
    if (blob_len > LAUNCH_BOOT_MAX || info_len > LAUNCH_BOOT_MAX)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "bootstrap data over %d bytes", LAUNCH_BOOT_MAX);
    b = calloc(1, sizeof *b);
    if (!b)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    b->rank = p->rank;
    b->world = p->world;
    b->fd = malloc((size_t)p->world * sizeof *b->fd);
    b->info = calloc((size_t)p->world, sizeof *b->info);
    b->info_len = calloc((size_t)p->world, sizeof *b->info_len);
    b->stash = calloc((size_t)p->world, sizeof *b->stash);
    b->stash_len = calloc((size_t)p->world, sizeof *b->stash_len);
    if (!b->fd || !b->info || !b->info_len || !b->stash || !b->stash_len) {
        boot_free(b);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    for (r = 0; r < p->world; r++)
        b->fd[r] = -1;
    if (p->rank == 0) {
        if (!(b->blob = malloc(blob_len + 1)) || set_info(b, 0, info, info_len) != 0) {
            boot_free(b);
            return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        }
        if (blob_len)
            memcpy(b->blob, blob, blob_len);
        b->blob_len = blob_len;
        rc = p->world > 1 ? boot_root(b, p, err) : UTIL_OK;
    } else {
        rc = boot_leaf(b, p, info, info_len, err);
    }
    if (rc != UTIL_OK) {
        boot_free(b);
        return rc;
    }
    *out = b;
    return UTIL_OK;
}

const void *launch_boot_blob(const launch_boot *b, size_t *len)
{
    *len = b->blob_len;
    return b->blob;
}

const void *launch_boot_info(const launch_boot *b, int r, size_t *len)
{
    if (r < 0 || r >= b->world) {
        *len = 0;
        return NULL;
    }
    *len = b->info_len[r];
    return b->info[r];
}

/* Rank 0 reads what became readable before the deadline.  Data goes to
 * the stash; an abort or a closed connection ends every rank.  UTIL_OK
 * when nothing went wrong (also on timeout); *timed_out set then. */
static int root_poll(launch_boot *b, const int *want, double deadline,
                     int *timed_out, util_error *err)
{
    struct pollfd *pf = calloc((size_t)b->world, sizeof *pf);
    int r, n = 0, pr, rc = UTIL_OK;

    *timed_out = 0;
    if (!pf)
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    for (r = 1; r < b->world; r++)
        if (b->fd[r] >= 0 && (!want || want[r])) {
            pf[n].fd = b->fd[r];
            pf[n].events = POLLIN;
            n++;
        }
    do
        pr = poll(pf, (nfds_t)n, ms_left(deadline));
    while (pr < 0 && errno == EINTR);
    if (pr <= 0) {
        *timed_out = 1;
        free(pf);
        return UTIL_OK;
    }
    for (r = 1; r < b->world && rc == UTIL_OK; r++) {
        int i, io, who = r;
        unsigned type = 0;
        unsigned char *data = NULL;
        size_t len = 0;
        char why[LAUNCH_BOOT_MAX + 64];

        for (i = 0; i < n && pf[i].fd != b->fd[r]; i++)
            ;
        if (i == n || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        io = recv_msg(b->fd[r], now_s() + 5.0, &type, &who, &data, &len);
        if (io == IO_OK && type == MSG_DATA && !b->stash[r]) {
            b->stash[r] = data;
            b->stash_len[r] = len;
            continue;
        }
        if (io == IO_OK && type == MSG_ABORT) {
            snprintf(why, sizeof why, "%s", (char *)data);
            broadcast_abort(b, r, why, r);
            rc = util_error_set(err, UTIL_EIO, NULL, NULL, "rank %d: %s", r, why);
        } else {
            snprintf(why, sizeof why, io == IO_OK ? "rank %d sent an unexpected message"
                                                  : "rank %d lost: its connection closed",
                     r);
            broadcast_abort(b, r, why, r);
            rc = util_error_set(err, UTIL_EIO, NULL, NULL, "%s", why);
        }
        free(data);
    }
    free(pf);
    return rc;
}

int launch_boot_gather(launch_boot *b, const void *mine, size_t len,
                       void *all, double timeout_s, util_error *err)
{
    double deadline = now_s() + timeout_s;
    int r, rc, t, io, who = 0;

    if (b->rank != 0) {
        unsigned type = 0;
        unsigned char *data = NULL;
        size_t got;
        /* a failed send may still leave rank 0's abort notice to read */
        if (send_msg(b->fd[0], MSG_DATA, b->rank, mine, len) != IO_OK)
            deadline = now_s() + 1.0;
        io = recv_msg(b->fd[0], deadline, &type, &who, &data, &got);
        rc = io == IO_OK && type == MSG_GO ? UTIL_OK
                                           : peer_trouble(io, type, who,
                                                          data ? (char *)data : "", 0, err);
        free(data);
        return rc;
    }
    if (all && len)
        memcpy(all, mine, len);
    for (;;) {
        int missing = 0, *have;
        for (r = 1; r < b->world; r++)
            missing += !b->stash[r];
        if (!missing)
            break;
        if ((rc = root_poll(b, NULL, deadline, &t, err)) != UTIL_OK)
            return rc;
        if (!t)
            continue;
        if (!(have = calloc((size_t)b->world, sizeof *have)))
            return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        {
            char miss[512];
            for (r = 0; r < b->world; r++)
                have[r] = r == 0 || b->stash[r] != NULL;
            list_missing(have, b->world, miss, sizeof miss);
            free(have);
            snprintf(miss + strlen(miss), sizeof miss - strlen(miss),
                     " did not report within %g s", timeout_s);
            broadcast_abort(b, 0, miss, -1);
            return util_error_set(err, UTIL_ETIMEOUT, NULL, NULL, "%s", miss);
        }
    }
    rc = UTIL_OK;
    for (r = 1; r < b->world; r++) {
        if (b->stash_len[r] != len && rc == UTIL_OK)
            rc = util_error_set(err, UTIL_EIO, NULL, NULL, "rank %d reported %zu bytes, "
                                "%zu expected", r, b->stash_len[r], len);
        else if (all && len)
            memcpy((unsigned char *)all + (size_t)r * len, b->stash[r], len);
        free(b->stash[r]);
        b->stash[r] = NULL;
    }
    if (rc != UTIL_OK) {
        broadcast_abort(b, 0, err->msg, -1);
        return rc;
    }
    for (r = 1; r < b->world; r++)
        send_msg(b->fd[r], MSG_GO, 0, NULL, 0);
    return UTIL_OK;
}

int launch_boot_watch(launch_boot *b, double timeout_s, util_error *err)
{
    double deadline = now_s() + timeout_s;
    int t, io, who = 0, rc, pr;

    if (b->rank == 0)
        return b->world > 1 ? root_poll(b, NULL, deadline, &t, err) : UTIL_OK;
    {
        struct pollfd pf = {b->fd[0], POLLIN, 0};
        unsigned type = 0;
        unsigned char *data = NULL;
        size_t len;
        do
            pr = poll(&pf, 1, ms_left(deadline));
        while (pr < 0 && errno == EINTR);
        if (pr <= 0)
            return UTIL_OK;
        io = recv_msg(b->fd[0], now_s() + 5.0, &type, &who, &data, &len);
        rc = peer_trouble(io, type, who, data ? (char *)data : "", 0, err);
        free(data);
        return rc;
    }
}

void launch_boot_abort(launch_boot *b, const char *why)
{
    if (!b)
        return;
    if (b->rank == 0)
        broadcast_abort(b, 0, why, -1);
    else
        send_msg(b->fd[0], MSG_ABORT, b->rank, why, strlen(why));
}
