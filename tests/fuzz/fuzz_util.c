/* tests/fuzz/fuzz_util.c: helpers of the fuzz harnesses (fuzz.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char temp_dir[512], temp_file[600];

static void remove_temp(void)
{
    if (temp_file[0] != '\0')
        unlink(temp_file);
    if (temp_dir[0] != '\0')
        rmdir(temp_dir);
}

void fuzz_fail(const char *what, const char *why)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, why);
    abort();
}

char *fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (text == NULL)
        fuzz_fail("fuzz_text", "out of memory");
    if (size > 0)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

const char *fuzz_file(const uint8_t *data, size_t size)
{
    FILE *f;

    if (temp_dir[0] == '\0') {
        const char *tmp = getenv("TMPDIR");
        snprintf(temp_dir, sizeof temp_dir, "%s/hetplan-fuzz.XXXXXX",
                 tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
        if (mkdtemp(temp_dir) == NULL)
            fuzz_fail(temp_dir, strerror(errno));
        snprintf(temp_file, sizeof temp_file, "%s/input.json", temp_dir);
        atexit(remove_temp);
    }
    f = fopen(temp_file, "wb");
    if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        fuzz_fail(temp_file, strerror(errno));
    return temp_file;
}

static void example_path(const char *name, char *path, size_t n)
{
    snprintf(path, n, "%s/examples/%s", HETPLAN_SOURCE_DIR, name);
}

void fuzz_example_cluster(const char *name, fmt_cluster *c)
{
    char path[1024];
    util_error err;

    example_path(name, path, sizeof path);
    if (fmt_load_cluster(path, c, &err) != UTIL_OK)
        fuzz_fail(path, err.msg);
}

void fuzz_example_model(const char *name, fmt_model *m)
{
    char path[1024];
    util_error err;

    example_path(name, path, sizeof path);
    if (fmt_load_model(path, m, &err) != UTIL_OK)
        fuzz_fail(path, err.msg);
}

void fuzz_check(const char *what, int rc, const util_error *err,
                const void *out, size_t n)
{
    static int verbose = -1;
    const unsigned char *b = out;
    size_t i;

    if (verbose < 0)
        verbose = getenv("HETPLAN_FUZZ_VERBOSE") != NULL;
    if (verbose) {
        char msg[1024];
        util_error_format(err, msg, sizeof msg);
        fprintf(stderr, "%s: %s\n", what, rc == UTIL_OK ? "ok" : msg);
    }
    if (rc == UTIL_OK)
        return;
    if (rc < 0 || rc >= UTIL_NSTATUS)
        fuzz_fail(what, "unknown status code");
    if (err->code != rc)
        fuzz_fail(what, "err.code differs from the status returned");
    if (err->msg[0] == '\0')
        fuzz_fail(what, "failure without a message");
    for (i = 0; b != NULL && i < n; i++)
        if (b[i] != 0)
            fuzz_fail(what, "output not left empty on failure");
}

/* Bytes of the UTF-8 character at s (RFC 3629, table 3-7 of Unicode),
 * 0 when it is none. */
static size_t utf8_char(const unsigned char *s)
{
    static const struct {
        unsigned char lead_lo, lead_hi, next_lo, next_hi;
        size_t n;
    } forms[] = {
        {0xc2, 0xdf, 0x80, 0xbf, 2}, {0xe0, 0xe0, 0xa0, 0xbf, 3},
        {0xe1, 0xec, 0x80, 0xbf, 3}, {0xed, 0xed, 0x80, 0x9f, 3},
        {0xee, 0xef, 0x80, 0xbf, 3}, {0xf0, 0xf0, 0x90, 0xbf, 4},
        {0xf1, 0xf3, 0x80, 0xbf, 4}, {0xf4, 0xf4, 0x80, 0x8f, 4},
    };
    size_t f, i;

    if (s[0] < 0x80)
        return 1;
    for (f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        if (s[0] < forms[f].lead_lo || s[0] > forms[f].lead_hi)
            continue;
        if (s[1] < forms[f].next_lo || s[1] > forms[f].next_hi)
            return 0;
        for (i = 2; i < forms[f].n; i++)
            if (s[i] < 0x80 || s[i] > 0xbf)
                return 0;
        return forms[f].n;
    }
    return 0;
}

void fuzz_check_name(const char *what, const char *name)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t n;

    for (; s != NULL && *s != 0; s += n)
        if ((n = utf8_char(s)) == 0)
            fuzz_fail(what, "accepted a name that is not UTF-8");
}
