/* planner/internal.h: helpers shared by the planner library's files
 * (growable text buffer, cJSON output and JSON-reading helpers).
 * Private to planner/; not installed. */
#ifndef HETPLAN_PLANNER_INTERNAL_H
#define HETPLAN_PLANNER_INTERNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#if defined(__GNUC__)
#define PLAN_PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PLAN_PRINTF_LIKE(a, b)
#endif

/* ---- growable text buffer ---------------------------------------------- */

/* Zero-initialise ({0}).  p is malloc'd, owned by the caller (free(p));
 * NULL until something is printed.  failed is set on out-of-memory or an
 * encoding error; later prints are then ignored. */
typedef struct plan_buf {
    char *p;          /* text, NUL-terminated; caller frees */
    size_t len, cap;  /* bytes used (without the NUL), bytes allocated */
    int failed;       /* 1 after an allocation/format failure */
} plan_buf;

/* Append printf-formatted text. */
void plan_buf_printf(plan_buf *b, const char *fmt, ...) PLAN_PRINTF_LIKE(2, 3);

/* The text (caller frees), or NULL (text freed) if the buffer failed. */
char *plan_buf_take(plan_buf *b);

/* ---- cJSON output ------------------------------------------------------- */

/* Attach item to obj under key / append to arr; item NULL -> 0; on
 * failure item is freed.  1 = ok.  obj/arr own item afterwards. */
int plan_json_put(cJSON *obj, const char *key, cJSON *item);
int plan_json_push(cJSON *arr, cJSON *item);

/* Number as the shortest of %.15g..%.17g that reads back exactly, null
 * when not finite.  New item owned by the caller (NULL on OOM). */
cJSON *plan_json_num(double v);

/* plan_json_put of a number / string (NULL -> null) / boolean / null. */
int plan_json_put_num(cJSON *obj, const char *key, double v);
int plan_json_put_str(cJSON *obj, const char *key, const char *v);
int plan_json_put_bool(cJSON *obj, const char *key, int v);
int plan_json_put_null(cJSON *obj, const char *key);

/* o when ok, else o freed and NULL. */
cJSON *plan_json_finish(cJSON *o, int ok);

/* Array of v[0..len-1]; null when v is NULL.  Owned by the caller. */
cJSON *plan_json_int_array(const int *v, int len);

/* ---- JSON reading ------------------------------------------------------- */

/* "parent.key" ("key" at the top level) / "parent[i]" into buf of n >= 4
 * bytes; truncated paths end in "...". */
void plan_json_key(char *buf, size_t n, const char *parent, const char *key);
void plan_json_index(char *buf, size_t n, const char *parent, int i);

/* "a string", "a number", ... or "nothing" for NULL (static text). */
const char *plan_json_type(const cJSON *v);

#endif
