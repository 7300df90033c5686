/* util/error.c: the error table's messages and located error details. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *util_strerror(int code)
{
    switch (code) {
#define UTIL_X_CASE(sym, val, msg) \
    case sym:                      \
        return msg;
        HETPLAN_ERRORS(UTIL_X_CASE)
#undef UTIL_X_CASE
    default:
        return "unknown error";
    }
}

int util_error_set(util_error *err, int code, const char *file,
                   const char *path, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return code;
    err->code = code;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void util_error_format(const util_error *err, char *buf, size_t n)
{
    size_t used = 0;
    int k;

    if (n == 0)
        return;
    buf[0] = '\0';
    if (err == NULL)
        return;
    if (err->file[0]) {
        k = snprintf(buf, n, "'%s': ", err->file);
        used = k > 0 ? (size_t)k : 0;
    }
    if (err->path[0] && used < n) {
        k = snprintf(buf + used, n - used, "%s: ", err->path);
        used += k > 0 ? (size_t)k : 0;
    }
    if (used < n)
        snprintf(buf + used, n - used, "%s",
                 err->msg[0] ? err->msg : util_strerror(err->code));
}

const char *util_num_text(double d, char *buf, size_t n)
{
    int p;

    if (n == 0)
        return buf;
    if (isnan(d)) {
        snprintf(buf, n, "nan");
        return buf;
    }
    if (isinf(d)) {
        snprintf(buf, n, "%s", d < 0 ? "-inf" : "inf");
        return buf;
    }
    if (d == floor(d) && fabs(d) < 1e16) {
        snprintf(buf, n, "%.0f", d);
        return buf;
    }
    /* fixed notation between 1e-9 and 1e16, else the shortest %g */
    if (fabs(d) >= 1e-9 && fabs(d) < 1e16)
        for (p = 1; p <= 30; p++) {
            snprintf(buf, n, "%.*f", p, d);
            if (strtod(buf, NULL) == d)
                return buf;
        }
    for (p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    return buf;
}
