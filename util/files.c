/* util/files.c: whole-file reads and atomic writes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

/* Largest input file accepted, bytes. */
#define UTIL_MAX_FILE ((size_t)256 * 1024 * 1024)

int util_read_file(const char *path, char **text, util_error *err)
{
    FILE *f = NULL;
    char *buf = NULL, *grown;
    size_t len = 0, cap = 0, got;
    struct stat st;
    const char *nul;
    int rc = UTIL_OK, e;

    if (text != NULL)
        *text = NULL;
    if (path == NULL || text == NULL)
        return util_error_set(err, UTIL_EINVAL, "", "",
                              "no file name given");
    f = fopen(path, "rb");
    if (f == NULL) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "", "cannot open '%s': %s",
                            path, strerror(e));
        goto done;
    }
    if (fstat(fileno(f), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            rc = util_error_set(err, UTIL_EIO, path, "",
                                "cannot read '%s': %s", path,
                                strerror(EISDIR));
            goto done;
        }
        if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size >
                                       (unsigned long long)UTIL_MAX_FILE) {
            rc = util_error_set(err, UTIL_EIO, path, "",
                                "file too large: %lld bytes (limit 256 MiB)",
                                (long long)st.st_size);
            goto done;
        }
    }
    for (;;) {
        if (cap - len < 2) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > UTIL_MAX_FILE + 2)
                ncap = UTIL_MAX_FILE + 2;
            if (ncap <= cap) {
                rc = util_error_set(err, UTIL_EIO, path, "",
                                    "file too large: more than 256 MiB");
                goto done;
            }
            grown = realloc(buf, ncap);
            if (grown == NULL) {
                rc = util_error_set(err, UTIL_ENOMEM, path, "",
                                    "out of memory reading '%s'", path);
                goto done;
            }
            buf = grown;
            cap = ncap;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (len > UTIL_MAX_FILE) {
            rc = util_error_set(err, UTIL_EIO, path, "",
                                "file too large: more than 256 MiB");
            goto done;
        }
        if (got == 0) {
            if (ferror(f)) {
                e = errno;
                rc = util_error_set(err, UTIL_EIO, path, "",
                                    "cannot read '%s': %s", path,
                                    strerror(e));
                goto done;
            }
            break;
        }
    }
    buf[len] = '\0';
    nul = memchr(buf, '\0', len);
    if (nul != NULL) {
        rc = util_error_set(err, UTIL_EIO, path, "",
                            "expected text, found a NUL byte at offset %zu",
                            (size_t)(nul - buf));
        goto done;
    }
    *text = buf;
    buf = NULL;
done:
    if (f != NULL)
        fclose(f);
    free(buf);
    return rc;
}

/* fsync the directory holding path so the rename is durable; best effort. */
static void sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    size_t n;
    int fd;

    if (slash == NULL) {
        fd = open(".", O_RDONLY);
    } else {
        n = (size_t)(slash - path);
        dir = malloc(n + 2);
        if (dir == NULL)
            return;
        if (n == 0)
            n = 1; /* "/file" lives in "/" */
        memcpy(dir, path, n);
        dir[n] = '\0';
        fd = open(dir, O_RDONLY);
        free(dir);
    }
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* What a non-regular file is, for the error. */
static const char *kind_of(mode_t m)
{
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISSOCK(m))
        return "a socket";
    return "a special file";
}

/* util_write_file_atomic with mode >= 0: the permission bits the file gets
 * (set on the temporary file, before the rename); mode < 0: those of the
 * file replaced, or the default of open(2) for a new one. */
static int write_atomic(const char *path, const char *text, int mode,
                        util_error *err)
{
    char *tmp = NULL;
    FILE *f = NULL;
    struct stat st;
    size_t n, len;
    int fd = -1, rc = UTIL_OK, made = 0, e, keep_mode = 0;

    if (path == NULL || text == NULL || path[0] == '\0')
        return util_error_set(err, UTIL_EINVAL, path ? path : "", "",
                              "no file name or no text given");
    /* only a regular file is replaced, keeping its permission bits */
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return util_error_set(err, UTIL_EIO, path, "",
                                  "cannot replace '%s': it is %s, not a "
                                  "regular file", path, kind_of(st.st_mode));
        keep_mode = 1;
    }
    n = strlen(path) + 32;
    tmp = malloc(n);
    if (tmp == NULL)
        return util_error_set(err, UTIL_ENOMEM, path, "",
                              "out of memory writing '%s'", path);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0)
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666); /* stale temp of ours */
    if (fd < 0) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "", "cannot create '%s': %s",
                            tmp, strerror(e));
        goto done;
    }
    made = 1;
    if (mode >= 0 ? fchmod(fd, (mode_t)mode & 07777) != 0
                  : keep_mode && fchmod(fd, st.st_mode & 07777) != 0) {
        e = errno;
        close(fd);
        rc = util_error_set(err, UTIL_EIO, path, "",
                            "cannot set the mode of '%s': %s", tmp, strerror(e));
        goto done;
    }
    f = fdopen(fd, "wb");
    if (f == NULL) {
        e = errno;
        close(fd);
        rc = util_error_set(err, UTIL_EIO, path, "", "cannot write '%s': %s",
                            tmp, strerror(e));
        goto done;
    }
    len = strlen(text);
    if (fwrite(text, 1, len, f) != len || fflush(f) != 0 ||
        fsync(fileno(f)) != 0) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "", "cannot write '%s': %s",
                            tmp, strerror(e));
        goto done;
    }
    e = fclose(f);
    f = NULL;
    if (e != 0) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "", "cannot write '%s': %s",
                            tmp, strerror(e));
        goto done;
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "",
                            "cannot rename '%s' to '%s': %s", tmp, path,
                            strerror(e));
        goto done;
    }
    made = 0;
    sync_parent(path);
done:
    if (f != NULL)
        fclose(f);
    if (made)
        unlink(tmp);
    free(tmp);
    return rc;
}

int util_write_file_atomic(const char *path, const char *text,
                           util_error *err)
{
    return write_atomic(path, text, -1, err);
}

int util_write_file_atomic_mode(const char *path, const char *text, int mode,
                                util_error *err)
{
    return write_atomic(path, text, mode < 0 ? -1 : mode & 07777, err);
}
