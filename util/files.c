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

/* Create tmp (which must not exist) holding text, with the permission
 * bits mode (mode < 0: the default of open(2)), written and synced; on
 * failure tmp is removed and err names path (the file it stands for). */
static int write_new(const char *path, const char *tmp, const char *text, int mode,
                     util_error *err)
{
    FILE *f = NULL;
    size_t len;
    int fd, rc = UTIL_OK, e;

    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) {
        e = errno;
        return util_error_set(err, UTIL_EIO, path, "", "cannot create '%s': %s",
                              tmp, strerror(e));
    }
    if (mode >= 0 && fchmod(fd, (mode_t)mode & 07777) != 0) {
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
    }
done:
    if (f != NULL)
        fclose(f);
    if (rc != UTIL_OK)
        unlink(tmp);
    return rc;
}

/* util_write_file_atomic with mode >= 0: the permission bits the file gets
 * (set on the temporary file, before the rename); mode < 0: those of the
 * file replaced, or the default of open(2) for a new one. */
static int write_atomic(const char *path, const char *text, int mode,
                        util_error *err)
{
    char *tmp = NULL;
    struct stat st;
    size_t n;
    int rc, e;

    if (path == NULL || text == NULL || path[0] == '\0')
        return util_error_set(err, UTIL_EINVAL, path ? path : "", "",
                              "no file name or no text given");
    /* only a regular file is replaced, keeping its permission bits */
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return util_error_set(err, UTIL_EIO, path, "",
                                  "cannot replace '%s': it is %s, not a "
                                  "regular file", path, kind_of(st.st_mode));
        if (mode < 0)
            mode = (int)(st.st_mode & 07777);
    }
    n = strlen(path) + 32;
    tmp = malloc(n);
    if (tmp == NULL)
        return util_error_set(err, UTIL_ENOMEM, path, "",
                              "out of memory writing '%s'", path);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    (void)unlink(tmp); /* a stale temporary file of ours */
    rc = write_new(path, tmp, text, mode, err);
    if (rc == UTIL_OK && rename(tmp, path) != 0) {
        e = errno;
        rc = util_error_set(err, UTIL_EIO, path, "",
                            "cannot rename '%s' to '%s': %s", tmp, path,
                            strerror(e));
        unlink(tmp);
    }
    if (rc == UTIL_OK)
        sync_parent(path);
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

/* ---- a set of files in one directory, all or nothing ------------------ */

/* "dir/name" into a malloc'd string, NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);

    if (p != NULL)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Make a fresh directory for the files: tmp_base ".tmp.PID" (".1" and on
 * when a stale one is in the way); the malloc'd path, NULL (errno set)
 * when it cannot be made. */
static char *make_temp_dir(const char *base, mode_t mode)
{
    size_t n = strlen(base) + 48;
    char *p = malloc(n);
    int k;

    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    for (k = 0; k < 100; k++) {
        if (k == 0)
            snprintf(p, n, "%s.tmp.%ld", base, (long)getpid());
        else
            snprintf(p, n, "%s.tmp.%ld.%d", base, (long)getpid(), k);
        if (mkdir(p, mode) == 0)
            return p;
        if (errno != EEXIST)
            break;
    }
    free(p);
    return NULL;
}

/* fsync a directory; best effort. */
static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY);

    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* The name of file k's copy of the file it replaces, inside the
 * temporary directory (output names never start with '.'). */
#define OLD_PREFIX ".old."

/* Remove what the temporary directory tmp holds of the n files (new
 * files and the copies of replaced ones), then tmp. */
static void remove_temp_dir(const char *tmp, const util_out_file *files, int n)
{
    char *p, old[320];
    int k;

    for (k = 0; k < n; k++) {
        if ((p = join(tmp, files[k].name)) != NULL)
            unlink(p);
        free(p);
        snprintf(old, sizeof old, OLD_PREFIX "%s", files[k].name);
        if ((p = join(tmp, old)) != NULL)
            unlink(p);
        free(p);
    }
    rmdir(tmp);
}

/* 1 when name can be one of the files: a plain name, not hidden. */
static int plain_name(const char *name)
{
    return name != NULL && name[0] != '\0' && name[0] != '.' &&
           strchr(name, '/') == NULL && strlen(name) < 256;
}

int util_write_dir_atomic(const char *dir, const util_out_file *files, int n,
                          util_error *err)
{
    char *d = NULL, *tmp = NULL, *base = NULL, *p = NULL, *q = NULL, old[320];
    const char *slash;
    struct stat st;
    int fresh = 0, rc = UTIL_OK, k, j, e, *modes = NULL;
    int *kept = NULL; /* file k: 0 new, 1 replaces one, 2 and a link to it is kept */
    size_t len;

    if (dir == NULL || dir[0] == '\0' || files == NULL || n < 1)
        return util_error_set(err, UTIL_EINVAL, dir ? dir : "", "",
                              "no directory name or no files given");
    for (k = 0; k < n; k++) {
        if (!plain_name(files[k].name) || files[k].text == NULL)
            return util_error_set(err, UTIL_EINVAL, dir, "",
                                  "'%s' is not a plain file name",
                                  files[k].name ? files[k].name : "");
        for (j = 0; j < k; j++)
            if (strcmp(files[j].name, files[k].name) == 0)
                return util_error_set(err, UTIL_EINVAL, dir, "",
                                      "the file '%s' is given twice", files[k].name);
    }
    /* dir without its trailing slashes ("/" stays "/") */
    len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    d = malloc(len + 1);
    kept = calloc((size_t)n, sizeof *kept);
    modes = calloc((size_t)n, sizeof *modes);
    if (d == NULL || kept == NULL || modes == NULL) {
        rc = util_error_set(err, UTIL_ENOMEM, dir, "", "out of memory writing '%s'",
                            dir);
        goto done;
    }
    memcpy(d, dir, len);
    d[len] = '\0';
    for (k = 0; k < n; k++)
        modes[k] = files[k].mode < 0 ? -1 : files[k].mode & 07777;
    if (stat(d, &st) != 0) {
        e = errno;
        if (e != ENOENT || lstat(d, &st) == 0) { /* a dangling link is no directory */
            rc = util_error_set(err, UTIL_EIO, "", "", "cannot write into '%s': %s", d,
                                e == ENOENT ? "it is a symbolic link to nothing"
                                            : strerror(e));
            goto done;
        }
        fresh = 1;
    } else if (!S_ISDIR(st.st_mode)) {
        rc = util_error_set(err, UTIL_EIO, "", "",
                            "cannot write into '%s': it is %s, not a directory", d,
                            kind_of(st.st_mode));
        goto done;
    }
    /* in a directory that exists: every file replaced must be a regular
     * file (never followed: links, FIFOs and devices are refused); it
     * keeps its permission bits unless the file asks for others */
    for (k = 0; !fresh && k < n; k++) {
        free(p);
        if ((p = join(d, files[k].name)) == NULL) {
            rc = util_error_set(err, UTIL_ENOMEM, dir, "", "out of memory");
            goto done;
        }
        if (lstat(p, &st) != 0) {
            if (errno == ENOENT)
                continue;
            e = errno;
            rc = util_error_set(err, UTIL_EIO, "", "", "cannot replace '%s': %s", p,
                                strerror(e));
            goto done;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = util_error_set(err, UTIL_EIO, "", "",
                                "cannot replace '%s': it is %s, not a regular file",
                                p, kind_of(st.st_mode));
            goto done;
        }
        kept[k] = 1;
        if (modes[k] < 0)
            modes[k] = (int)(st.st_mode & 07777);
    }
    /* the temporary directory: beside a new directory (renamed into its
     * place at the end), inside one that exists (same file system) */
    if (fresh) {
        slash = strrchr(d, '/');
        base = malloc(len + 3);
        if (base == NULL) {
            rc = util_error_set(err, UTIL_ENOMEM, dir, "", "out of memory");
            goto done;
        }
        if (slash == NULL)
            snprintf(base, len + 3, ".%s", d);
        else
            snprintf(base, len + 3, "%.*s/.%s", (int)(slash - d), d, slash + 1);
        tmp = make_temp_dir(base, 0777);
        if (tmp == NULL) {
            e = errno;
            rc = util_error_set(err, UTIL_EIO, "", "", "cannot create directory "
                                "'%s': %s", d, strerror(e));
            goto done;
        }
    } else {
        base = join(d, ".hetplan");
        tmp = base ? make_temp_dir(base, 0700) : NULL;
        if (tmp == NULL) {
            e = errno;
            rc = util_error_set(err, UTIL_EIO, "", "", "cannot write into '%s': %s",
                                d, strerror(e));
            goto done;
        }
    }
    for (k = 0; k < n; k++) {
        free(p);
        free(q);
        p = join(tmp, files[k].name);
        q = join(d, files[k].name);
        if (p == NULL || q == NULL) {
            rc = util_error_set(err, UTIL_ENOMEM, dir, "", "out of memory");
            goto cleanup;
        }
        if ((rc = write_new(q, p, files[k].text, modes[k], err)) != UTIL_OK)
            goto cleanup;
    }
    sync_dir(tmp);
    if (fresh) {
        if (rename(tmp, d) != 0) {
            e = errno;
            rc = util_error_set(err, UTIL_EIO, "", "", "cannot rename '%s' to '%s': %s",
                                tmp, d, strerror(e));
            goto cleanup;
        }
        sync_parent(d);
        goto done;
    }
    /* keep a link to each file replaced, so that a failed rename can put
     * every file back */
    for (k = 0; k < n; k++) {
        if (!kept[k])
            continue;
        free(p);
        free(q);
        snprintf(old, sizeof old, OLD_PREFIX "%s", files[k].name);
        p = join(d, files[k].name);
        q = join(tmp, old);
        if (p != NULL && q != NULL && link(p, q) == 0)
            kept[k] = 2; /* else no copy: a file system without hard links */
    }
    for (k = 0; k < n; k++) {
        free(p);
        free(q);
        p = join(tmp, files[k].name);
        q = join(d, files[k].name);
        if (p != NULL && q != NULL && rename(p, q) == 0)
            continue;
        e = p == NULL || q == NULL ? ENOMEM : errno;
        rc = util_error_set(err, UTIL_EIO, "", "", "cannot rename '%s' to "
                            "'%s': %s", p ? p : tmp, q ? q : d, strerror(e));
        for (j = k - 1; j >= 0; j--) { /* put back what was there */
            free(p);
            free(q);
            snprintf(old, sizeof old, OLD_PREFIX "%s", files[j].name);
            p = join(tmp, old);
            q = join(d, files[j].name);
            if (p == NULL || q == NULL)
                continue;
            if (kept[j] == 2)
                (void)rename(p, q);
            else if (kept[j] == 0)
                (void)unlink(q);
        }
        goto cleanup;
    }
    sync_dir(d);
cleanup:
    remove_temp_dir(tmp, files, n);
done:
    free(d);
    free(tmp);
    free(base);
    free(p);
    free(q);
    free(kept);
    free(modes);
    return rc;
}
