/* util/json.c: helpers shared by the planner library's files
 * (util/util.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- growable text buffer -------------------------------------------- */

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
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 512;
        char *q;
        while (cap < need)
            cap *= 2;
        q = realloc(b->p, cap);
        if (q == NULL) {
            b->failed = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)k;
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
cJSON *util_json_num(double v)
{
    char buf[40];
    int prec;

    if (!isfinite(v))
        return cJSON_CreateNull();
    for (prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return cJSON_CreateRaw(buf);
}

int util_json_put_num(cJSON *obj, const char *key, double v)
{
    return util_json_put(obj, key, util_json_num(v));
}

int util_json_put_str(cJSON *obj, const char *key, const char *v)
{
    return util_json_put(obj, key,
                         v ? cJSON_CreateString(v) : cJSON_CreateNull());
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
