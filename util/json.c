/* util/json.c: helpers shared by the planner library's files
 * (util/util.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- growable text buffer -------------------------------------------- */

/* Room for need bytes in b, doubling from 512; 0 (and b failed) when
 * memory runs out. */
static int buf_reserve(util_buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 512;
    char *q;

    if (need <= b->cap)
        return 1;
    while (cap < need)
        cap *= 2;
    q = realloc(b->p, cap);
    if (q == NULL) {
        b->failed = 1;
        return 0;
    }
    b->p = q;
    b->cap = cap;
    return 1;
}

void util_buf_printf(util_buf *b, const char *fmt, ...)
{
    va_list ap;
    int k;
    size_t need;

    if (b->failed)
        return;
    va_start(ap, fmt);
    k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->failed = 1;
        return;
    }
    need = b->len + (size_t)k + 1;
    if (!buf_reserve(b, need))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)k;
}

void util_buf_add(util_buf *b, const char *s, size_t n)
{
    size_t need = b->len + n + 1;

    if (b->failed)
        return;
    if (!buf_reserve(b, need))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

char *util_buf_take(util_buf *b)
{
    if (b->failed) {
        free(b->p);
        b->p = NULL;
        return NULL;
    }
    return b->p;
}

/* ---- cJSON output ---------------------------------------------------- */

int util_json_put(cJSON *obj, const char *key, cJSON *item)
{
    if (item == NULL)
        return 0;
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

int util_json_push(cJSON *arr, cJSON *item)
{
    if (item == NULL)
        return 0;
    if (!cJSON_AddItemToArray(arr, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

/* cJSON's own printer may drop the last bit, hence raw text. */
static int utf8_len(const unsigned char *q, const char **why);

/* The JSON text of a finite v in buf (40 bytes): the shortest of
 * %.15g..%.17g that reads back exactly. */
static const char *num_text(double v, char *buf)
{
    int prec;

    /* a whole number below 10^15 (not -0): its digits, as %.15g prints
       them, without the formatting and the round trip */
    if (fabs(v) < 1e15 && v == floor(v) && (v != 0.0 || !signbit(v))) {
        unsigned long long u = (unsigned long long)fabs(v);
        char *q = buf + 39;
        *q = '\0';
        do {
            *--q = (char)('0' + u % 10);
            u /= 10;
        } while (u > 0);
        if (v < 0)
            *--q = '-';
        return q;
    }
    for (prec = 15; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

cJSON *util_json_num(double v)
{
    char buf[40];

    if (!isfinite(v))
        return cJSON_CreateNull();
    return cJSON_CreateRaw(num_text(v, buf));
}

void util_json_buf_num(util_buf *b, double v)
{
    char buf[40];
    const char *t = isfinite(v) ? num_text(v, buf) : "null";

    util_buf_add(b, t, strlen(t));
}

void util_json_buf_str(util_buf *b, const char *v)
{
    const char *why, *q, *run;
    char esc[8];
    int n;

    if (v == NULL) {
        util_buf_add(b, "null", 4);
        return;
    }
    util_buf_add(b, "\"", 1);
    for (q = run = v; *q != '\0'; q += n) {
        unsigned char c = (unsigned char)*q;
        n = c < 0x80 ? 1 : utf8_len((const unsigned char *)q, &why);
        if (n > 0 && c >= 0x20 && c != '"' && c != '\\')
            continue; /* copied with its run */
        util_buf_add(b, run, (size_t)(q - run));
        if (n == 0) { /* not UTF-8: U+FFFD */
            util_buf_add(b, "\xef\xbf\xbd", 3);
            n = 1;
        } else {
            snprintf(esc, sizeof esc, c == '"' || c == '\\' ? "\\%c" : "\\u%04x", c);
            util_buf_add(b, esc, strlen(esc));
        }
        run = q + n;
    }
    util_buf_add(b, run, (size_t)(q - run));
    util_buf_add(b, "\"", 1);
}

int util_json_put_num(cJSON *obj, const char *key, double v)
{
    return util_json_put(obj, key, util_json_num(v));
}

int util_json_put_str(cJSON *obj, const char *key, const char *v)
{
    return util_json_put(obj, key, util_json_str(v));
}

cJSON *util_json_str(const char *v)
{
    const char *why, *q;
    util_buf b = {0};
    cJSON *item;
    int n;

    if (v == NULL)
        return cJSON_CreateNull();
    for (q = v; *q != '\0'; q += n)
        if ((n = (unsigned char)*q < 0x80 ? 1 : utf8_len((const unsigned char *)q,
                                                         &why)) == 0)
            break;
    if (*q == '\0')
        return cJSON_CreateString(v);
    /* not UTF-8 (a file name, a path cut short): U+FFFD for each bad byte */
    for (q = v; *q != '\0'; q += n) {
        n = (unsigned char)*q < 0x80 ? 1 : utf8_len((const unsigned char *)q, &why);
        if (n == 0) {
            util_buf_printf(&b, "\xef\xbf\xbd");
            n = 1;
        } else {
            util_buf_printf(&b, "%.*s", n, q);
        }
    }
    item = b.failed ? NULL : cJSON_CreateString(b.p);
    free(b.p);
    return item;
}

int util_json_put_bool(cJSON *obj, const char *key, int v)
{
    return util_json_put(obj, key, cJSON_CreateBool(v ? 1 : 0));
}

int util_json_put_null(cJSON *obj, const char *key)
{
    return util_json_put(obj, key, cJSON_CreateNull());
}

cJSON *util_json_finish(cJSON *o, int ok)
{
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *util_json_int_array(const int *v, int len)
{
    cJSON *a;
    int i;

    if (v == NULL)
        return cJSON_CreateNull();
    a = cJSON_CreateArray();
    if (a == NULL)
        return NULL;
    for (i = 0; i < len; i++)
        if (!util_json_push(a, util_json_num(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* ---- JSON reading ---------------------------------------------------- */

void util_json_key(char *buf, size_t n, const char *parent, const char *key)
{
    int k;

    if (parent == NULL || parent[0] == '\0')
        k = snprintf(buf, n, "%s", key ? key : "");
    else
        k = snprintf(buf, n, "%s.%s", parent, key ? key : "");
    if (k < 0 || (size_t)k >= n)
        memcpy(buf + n - 4, "...", 4);
}

void util_json_index(char *buf, size_t n, const char *parent, int i)
{
    int k = snprintf(buf, n, "%s[%d]", parent, i);

    if (k < 0 || (size_t)k >= n)
        memcpy(buf + n - 4, "...", 4);
}

const char *util_json_type(const cJSON *v)
{
    if (v == NULL)
        return "nothing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "an invalid value";
}

int util_json_whole(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
           v->valuedouble == floor(v->valuedouble) && v->valuedouble >= lo &&
           v->valuedouble <= hi;
}

/* ---- the document of an input file ----------------------------------- */

static int key_cmp(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;

    return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* The first key given twice in one object of v (at JSON path p): its
 * path in dup (n bytes) and *key; 1 when found, 0 when none, -1 out of
 * memory. */
static int dup_key(const cJSON *v, const char *p, char *dup, size_t n,
                   const char **key)
{
    const cJSON *e, **keys;
    char sub[160];
    int k = 0, i, rc = 0;

    if (cJSON_IsObject(v) && cJSON_GetArraySize(v) > 1) {
        keys = malloc((size_t)cJSON_GetArraySize(v) * sizeof *keys);
        if (keys == NULL)
            return -1;
        cJSON_ArrayForEach(e, v) keys[k++] = e;
        qsort(keys, (size_t)k, sizeof *keys, key_cmp);
        for (i = 1; i < k && rc == 0; i++)
            if (key_cmp(&keys[i - 1], &keys[i]) == 0) {
                *key = keys[i]->string ? keys[i]->string : "";
                util_json_key(dup, n, p, *key);
                rc = 1;
            }
        free(keys);
        if (rc != 0)
            return rc;
    }
    k = 0;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsObject(e) && !cJSON_IsArray(e)) {
            k++;
            continue;
        }
        if (cJSON_IsObject(v))
            util_json_key(sub, sizeof sub, p, e->string ? e->string : "");
        else
            util_json_index(sub, sizeof sub, p, k);
        if ((rc = dup_key(e, sub, dup, n, key)) != 0)
            return rc;
        k++;
    }
    return 0;
}

/* Where cJSON stopped reading text: line, column and the text there. */
static int syntax_error(const char *text, const char *end, const char *file,
                        util_error *err)
{
    const char *q, *line_start = text;
    size_t off = 0, len = strlen(text);
    char near[24];
    int line = 1, k;

    if (end != NULL && end >= text && end <= text + len)
        off = (size_t)(end - text);
    for (q = text; q < text + off; q++)
        if (*q == '\n') {
            line++;
            line_start = q + 1;
        }
    for (k = 0; k < (int)sizeof near - 1 && text[off + (size_t)k] != '\0' &&
                text[off + (size_t)k] != '\n';
         k++) {
        char ch = text[off + (size_t)k];
        near[k] = (ch >= 32 && ch < 127) ? ch : ' ';
    }
    near[k] = '\0';
    if (k == 0)
        return util_error_set(err, UTIL_EPARSE, file, "",
                              "malformed JSON at line %d, column %d: "
                              "unexpected end of input",
                              line, (int)(text + off - line_start) + 1);
    return util_error_set(err, UTIL_EPARSE, file, "",
                          "malformed JSON at line %d, column %d, near '%s'",
                          line, (int)(text + off - line_start) + 1, near);
}

/* ---- the text before cJSON reads it ----------------------------------- */

/* Where the scan of a document is: line (from 1) and the start of it. */
typedef struct scan_at {
    const char *line_start;
    int line;
} scan_at;

/* Fail with "line L, column C: what" (column in bytes from 1). */
static int scan_fail(const scan_at *at, const char *q, const char *file,
                     util_error *err, const char *what)
{
    return util_error_set(err, UTIL_EPARSE, file, "", "line %d, column %d: %s",
                          at->line, (int)(q - at->line_start) + 1, what);
}

/* Bytes of the UTF-8 sequence at q (valid: 2..4), or 0 with *why set. */
static int utf8_len(const unsigned char *q, const char **why)
{
    unsigned char b = q[0], lo = 0x80, hi = 0xbf;
    int n, i;

    if (b >= 0xc2 && b <= 0xdf)
        n = 2;
    else if (b >= 0xe0 && b <= 0xef)
        n = 3;
    else if (b >= 0xf0 && b <= 0xf4)
        n = 4;
    else {
        *why = b < 0xc0               ? "a continuation byte with no character "
                                        "to continue"
               : b < 0xc2             ? "an overlong encoding"
               : b < 0xf8             ? "beyond U+10FFFF"
                                      : "never a byte of UTF-8";
        return 0;
    }
    if (b == 0xe0)
        lo = 0xa0;
    else if (b == 0xed)
        hi = 0x9f;
    else if (b == 0xf0)
        lo = 0x90;
    else if (b == 0xf4)
        hi = 0x8f;
    for (i = 1; i < n; i++) {
        if (q[i] < 0x80 || q[i] > 0xbf) {
            *why = "a character cut short";
            return 0;
        }
        if (i == 1 && (q[i] < lo || q[i] > hi)) {
            *why = b == 0xed   ? "an encoded UTF-16 surrogate (U+D800..U+DFFF)"
                   : b == 0xf4 ? "beyond U+10FFFF"
                               : "an overlong encoding";
            return 0;
        }
    }
    return n;
}

/* Value of the 4 hex digits at q, -1 when they are not (cJSON reports). */
static long hex4(const char *q)
{
    long v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = q[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The escapes of the string from just after its opening quote: none
 * that a C string cannot hold (\u0000) or that is not a character (a
 * surrogate without its pair).  *end: the closing quote or where the
 * text ends; line breaks are counted in at. */
static int scan_string(scan_at *at, const char *q, const char **end,
                       const char *file, util_error *err)
{
    const char *why = NULL;
    char what[200];
    long u, v;
    int n;

    for (; *q != '\0' && *q != '"'; q++) {
        if (*q == '\n') {
            at->line++;
            at->line_start = q + 1;
        } else if ((unsigned char)*q >= 0x80) {
            if ((n = utf8_len((const unsigned char *)q, &why)) == 0) {
                snprintf(what, sizeof what,
                         "expected UTF-8 text, got byte 0x%02x (%s)",
                         (unsigned char)*q, why);
                return scan_fail(at, q, file, err, what);
            }
            q += n - 1;
        } else if (*q == '\\' && q[1] != '\0') {
            if (q[1] != 'u' || (u = hex4(q + 2)) < 0) {
                q++;
                continue;
            }
            if (u == 0)
                return scan_fail(at, q, file, err,
                                 "expected a string without \\u0000 (names "
                                 "cannot hold a NUL character), got \\u0000");
            if (u >= 0xdc00 && u <= 0xdfff) {
                snprintf(what, sizeof what, "expected a character, got the lone "
                         "low surrogate escape \\u%04lx", u);
                return scan_fail(at, q, file, err, what);
            }
            if (u >= 0xd800 && u <= 0xdbff) {
                if (q[6] != '\\' || q[7] != 'u' || (v = hex4(q + 8)) < 0xdc00 ||
                    v > 0xdfff) {
                    snprintf(what, sizeof what,
                             "expected a character, got the high surrogate "
                             "escape \\u%04lx without a low surrogate "
                             "(\\udc00..\\udfff) after it", u);
                    return scan_fail(at, q, file, err, what);
                }
                q += 6;
            }
            q += 5;
        }
    }
    *end = q;
    return UTIL_OK;
}

/* Syntax is cJSON's to judge: this scan only counts what it would build
 * (a key is no value) and reads the strings (scan_string). */
int util_json_check_text(const char *text, const char *file, util_error *err)
{
    scan_at at;
    const char *q, *why = NULL;
    char in_obj[UTIL_JSON_MAX_DEPTH + 1], what[200]; /* in_obj[d]: level d is an object */
    long values = 0;
    int depth = 0, want_key = 0, rc, n;

    if (text == NULL)
        return util_error_set(err, UTIL_EINVAL, file, "", "no JSON text given");
    at.line_start = text;
    at.line = 1;
    in_obj[0] = 0;
    for (q = text; *q != '\0'; q++) {
        unsigned char c = (unsigned char)*q;
        int value = 0;

        if (c == '\n') {
            at.line++;
            at.line_start = q + 1;
        } else if (c >= 0x80) {
            if ((n = utf8_len((const unsigned char *)q, &why)) == 0) {
                snprintf(what, sizeof what,
                         "expected UTF-8 text, got byte 0x%02x (%s)", c, why);
                return scan_fail(&at, q, file, err, what);
            }
            q += n - 1; /* outside a string: cJSON reports it */
        } else if (c == '"') {
            value = !(want_key && in_obj[depth]);
            want_key = 0;
            if ((rc = scan_string(&at, q + 1, &q, file, err)) != UTIL_OK)
                return rc;
            if (value && ++values > UTIL_JSON_MAX_VALUES)
                goto too_many;
            if (*q == '\0')
                break;
            continue;
        } else if (c == '[' || c == '{') {
            if (depth == UTIL_JSON_MAX_DEPTH) {
                snprintf(what, sizeof what,
                         "nested too deep: expected at most %d arrays and "
                         "objects inside each other, got %d",
                         UTIL_JSON_MAX_DEPTH, UTIL_JSON_MAX_DEPTH + 1);
                return scan_fail(&at, q, file, err, what);
            }
            in_obj[++depth] = c == '{';
            want_key = c == '{';
            value = 1;
        } else if (c == ']' || c == '}') {
            if (depth > 0)
                depth--;
        } else if (c == ',') {
            want_key = in_obj[depth];
        } else if (c != ' ' && c != '\t' && c != '\r' && c != ':' &&
                   (q == text || strchr(" \t\r\n[{:,", q[-1]) != NULL)) {
            value = 1; /* the first character of a number or literal */
        }
        if (value && ++values > UTIL_JSON_MAX_VALUES)
            goto too_many;
    }
    return UTIL_OK;
too_many:
    snprintf(what, sizeof what,
             "too many values: expected at most %d numbers, strings, arrays "
             "and objects in one document, got more", UTIL_JSON_MAX_VALUES);
    return scan_fail(&at, q, file, err, what);
}

int util_json_parse_object(const char *text, const char *file, cJSON **root,
                           util_error *err)
{
    const char *q, *end = NULL, *key = "";
    char dup[160];
    int rc;

    *root = NULL;
    if (file == NULL)
        file = "";
    if (text == NULL)
        return util_error_set(err, UTIL_EINVAL, file, "", "no JSON text given");
    for (q = text; *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'; q++)
        ;
    if (*q == '\0')
        return util_error_set(err, UTIL_EPARSE, file, "",
                              "malformed JSON: expected a JSON object, got an "
                              "empty document");
    if ((rc = util_json_check_text(text, file, err)) != UTIL_OK)
        return rc;
    *root = cJSON_ParseWithOpts(text, &end, 1);
    if (*root == NULL)
        return syntax_error(text, end, file, err);
    if (!cJSON_IsObject(*root))
        rc = util_error_set(err, UTIL_EFIELD, file, "",
                            "expected a JSON object at the top level, got %s",
                            util_json_type(*root));
    else if ((rc = dup_key(*root, "", dup, sizeof dup, &key)) < 0)
        rc = util_error_set(err, UTIL_ENOMEM, file, "", "out of memory");
    else if (rc > 0)
        rc = util_error_set(err, UTIL_EFIELD, file, dup,
                            "duplicate key '%.60s' (an object may give a key "
                            "only once)", key);
    if (rc != UTIL_OK) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return rc;
}
