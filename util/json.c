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
