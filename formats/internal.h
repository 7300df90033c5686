/* formats/internal.h: the JSON-reading helpers shared by the readers of
 * the input files in formats/ (not part of the public API in formats.h),
 * defined in formats/json_read.c unless said otherwise.  Every getter
 * names the file and the JSON path of what it rejects, and says what was
 * expected. */
#ifndef HETPLAN_FORMATS_INTERNAL_H
#define HETPLAN_FORMATS_INTERNAL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "formats.h"

#define FMT_PATH_N 160 /* = sizeof util_error.path */

/* Field flags: required, > 0, >= 0, in 0..1, non-empty. */
enum {
    FMT_F_REQ = 1,
    FMT_F_POS = 2,
    FMT_F_NONNEG = 4,
    FMT_F_FRAC = 8,
    FMT_F_NONEMPTY = 16
};
/* What fmt_sub_field expects: an object or an array. */
enum { FMT_K_OBJ, FMT_K_ARR };

/* The file being read and where its errors go. */
typedef struct fmt_read_ctx {
    const char *file;
    util_error *err;
} fmt_read_ctx;

/* Set cx's error (file, JSON path, message); returns code. */
int fmt_fail(const fmt_read_ctx *cx, int code, const char *path,
             const char *fmt, ...) UTIL_PRINTF_LIKE(4, 5);
/* The catalogue part a device type name stands for given its memory
 * (formats/catalog.c): the part fmt_catalog_find names when its memory is
 * mem_bytes (within 10%), else its variant with that memory ("RTX2080"
 * with 11 GB: "RTX2080Ti"; "A100" with 80 GB: "A100-80GB"); NULL when
 * neither.  Static storage. */
const fmt_device_type *fmt_catalog_part(const char *name, double mem_bytes);
/* ASCII case-insensitive equality. */
int fmt_name_eq(const char *a, const char *b);
/* Append name to a ", "-separated list; ends with "..." when full. */
void fmt_list_add(char *buf, size_t n, size_t *used, const char *name);

/* A number / an integer at path p that meets flags. */
int fmt_num_value(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                  int flags, double *out);
int fmt_int_value(const fmt_read_ctx *cx, const cJSON *v, const char *p,
                  int flags, int *out);

/* Member key of obj, NULL when absent. */
const cJSON *fmt_field(const cJSON *obj, const char *key);
/* Field key of obj (at JSON path parent) that meets flags; dflt when
 * absent and not FMT_F_REQ.  Strings must fit in n bytes. */
int fmt_num_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, double dflt, double *out);
int fmt_int_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, int dflt, int *out);
int fmt_str_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, const char *dflt, char *buf,
                  size_t n);
/* A string field without length limit; *out NULL when absent. */
int fmt_str_ref(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                const char *key, int flags, const char **out);
/* An object (FMT_K_OBJ) or array (FMT_K_ARR) field; *out NULL when
 * absent. */
int fmt_sub_field(const fmt_read_ctx *cx, const cJSON *obj, const char *parent,
                  const char *key, int flags, int kind, const cJSON **out);

/* A parser of a document's text (file names it in errors) into out, with
 * arg (what it needs besides the text, NULL when nothing). */
typedef int (*fmt_parse_fn)(const char *text, const char *file, const void *arg,
                            void *out, util_error *err);
/* The loader of an input file: out (size bytes, when not NULL) zeroed,
 * then the text of the file at path parsed by parse into out. */
int fmt_load_file(const char *path, fmt_parse_fn parse, const void *arg,
                  void *out, size_t size, util_error *err);
/* Parse text; the root must be an object (free *root with cJSON_Delete,
 * also on failure). */
int fmt_read_doc(const fmt_read_ctx *cx, const char *text, cJSON **root);
/* fmt_check_keys for the file of cx: the unknown members of obj (at
 * path) warned about, or the error under strict. */
int fmt_keys(const fmt_read_ctx *cx, const cJSON *obj, const char *path,
             const char *const *known);
/* The keys of a strategies file: the document, each strategy
 * (formats/strategies.c). */
extern const char *const fmt_strategies_root_keys[];
extern const char *const fmt_strategy_keys[];
/* fmt_parse_strategies with the known keys of the document and of each
 * strategy (NULL: not checked) (formats/strategies.c). */
int fmt_parse_strategies_keys(const char *text, const char *file,
                              const fmt_cluster *c, const fmt_model *m,
                              int global_batch, const char *const *root_keys,
                              const char *const *keys, fmt_strategy **out,
                              int *n, util_error *err);
/* Point an error left by another module at this file under prefix. */
void fmt_prefix_error(const fmt_read_ctx *cx, const char *prefix);

/* Layer kind of a name at JSON path p (formats/model.c); the error lists
 * the known kinds. */
int fmt_kind_value(const fmt_read_ctx *cx, const char *p, const char *name,
                   int *kind);

#endif
