/* util/util.h: what every room shares: the project's error table with
 * located error details, a growable text buffer, cJSON helpers for
 * writing and for error paths when reading, whole-file reading and
 * atomic writing, SHA-256, and PCG32 random numbers.  No printing. */
#ifndef HETPLAN_UTIL_H
#define HETPLAN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Version of hetplan, written into plans and printed by --version. */
#define HETPLAN_VERSION "0.1.0"

#if defined(__GNUC__)
#define UTIL_PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define UTIL_PRINTF_LIKE(a, b)
#endif

/* ---- errors ---------------------------------------------------------- */

/* One table for the whole project: X(symbol, value, message). */
#define HETPLAN_ERRORS(X)                                               \
    X(UTIL_OK, 0, "success")                                            \
    X(UTIL_ENOMEM, 1, "out of memory")                                  \
    X(UTIL_EIO, 2, "cannot read or write file")                         \
    X(UTIL_EPARSE, 3, "malformed JSON")                                 \
    X(UTIL_EFIELD, 4, "invalid field")                                  \
    X(UTIL_EINVAL, 5, "invalid argument")                               \
    X(UTIL_EINFEASIBLE, 6, "no feasible strategy")                      \
    X(UTIL_ENOTFOUND, 7, "not found")                                   \
    X(UTIL_ETIMEOUT, 8, "time limit hit")                               \
    X(UTIL_EINTERNAL, 9, "internal error")

enum util_status {
#define UTIL_X_ENUM(sym, val, msg) sym = val,
    HETPLAN_ERRORS(UTIL_X_ENUM)
#undef UTIL_X_ENUM
    UTIL_NSTATUS
};

/* Message of a status code; never NULL, static storage. */
const char *util_strerror(int code);

/* Detail of a failure, filled by the callee, owned by the caller. */
typedef struct util_error {
    int code;         /* one of enum util_status */
    char file[256];   /* input file concerned, "" if none */
    char path[160];   /* JSON path inside it, e.g. "nodes[2].gpus", "" if none */
    char msg[512];    /* what was expected and what was found */
} util_error;

/* Fill *err (NULL-safe) and return code.  printf-style message. */
int util_error_set(util_error *err, int code, const char *file,
                   const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Format "'file': path: msg" (parts omitted when empty) into buf. */
void util_error_format(const util_error *err, char *buf, size_t n);

/* Edit distance between a and b (insertions, deletions, substitutions
 * and swaps of two neighbours, ASCII case ignored; Damerau's optimal
 * string alignment), capped at 9; names longer than 32 bytes count as 9.
 * For "did you mean" suggestions (util/names.c). */
int util_edit_distance(const char *a, const char *b);
/* 1 when name is near enough to cand to suggest it: at most a third of
 * cand's letters (and at least one) wrong. */
int util_near_name(const char *name, const char *cand);

/* Bytes util_num_text needs at most. */
#define UTIL_NUM_N 48
/* d for a message, as a user would type it: whole numbers below 1e16 in
 * full ("1000000", not "1e+06"), others in the fewest digits that read
 * back as d ("0.000001", "1e+300", "inf").  Writes buf (n bytes, at least
 * UTIL_NUM_N) and returns it. */
const char *util_num_text(double d, char *buf, size_t n);

/* ---- growable text buffer -------------------------------------------- */

/* Zero-initialise ({0}).  p is malloc'd, owned by the caller (free(p));
 * NULL until something is printed.  failed is set on out-of-memory or an
 * encoding error; later prints are then ignored. */
typedef struct util_buf {
    char *p;          /* text, NUL-terminated; caller frees */
    size_t len, cap;  /* bytes used (without the NUL), bytes allocated */
    int failed;       /* 1 after an allocation/format failure */
} util_buf;

/* Append printf-formatted text. */
void util_buf_printf(util_buf *b, const char *fmt, ...) UTIL_PRINTF_LIKE(2, 3);

/* Append the n bytes at s. */
void util_buf_add(util_buf *b, const char *s, size_t n);

/* The text (caller frees), or NULL (text freed) if the buffer failed. */
char *util_buf_take(util_buf *b);

/* ---- cJSON output ---------------------------------------------------- */

/* Attach item to obj under key / append to arr; item NULL -> 0; on
 * failure item is freed.  1 = ok.  obj/arr own item afterwards. */
int util_json_put(cJSON *obj, const char *key, cJSON *item);
int util_json_push(cJSON *arr, cJSON *item);

/* Number as the shortest of %.15g..%.17g that reads back exactly, null
 * when not finite.  New item owned by the caller (NULL on OOM). */
cJSON *util_json_num(double v);

/* util_json_put of a number / string (NULL -> null) / boolean / null;
 * a string that is not UTF-8 (a file name given on the command line) is
 * written with U+FFFD for each byte that is not, so the output stays
 * UTF-8. */
int util_json_put_num(cJSON *obj, const char *key, double v);
int util_json_put_str(cJSON *obj, const char *key, const char *v);
/* The string item util_json_put_str attaches (NULL -> null), for arrays
 * and callers with their own put: U+FFFD for each byte that is not
 * UTF-8.  New item owned by the caller (NULL on OOM). */
cJSON *util_json_str(const char *v);

/* JSON text written straight into a buffer, for long arrays of records
 * that a cJSON tree would hold in many small allocations: a number as
 * util_json_num gives it ("null" when not finite); a string quoted and
 * escaped (quote, backslash and control characters), U+FFFD for each
 * byte that is not UTF-8, "null" for NULL.  A cJSON parser reads back
 * what util_json_put_num / util_json_put_str would have written. */
void util_json_buf_num(util_buf *b, double v);
void util_json_buf_str(util_buf *b, const char *v);
int util_json_put_bool(cJSON *obj, const char *key, int v);
int util_json_put_null(cJSON *obj, const char *key);

/* o when ok, else o freed and NULL. */
cJSON *util_json_finish(cJSON *o, int ok);

/* Array of v[0..len-1]; null when v is NULL.  Owned by the caller. */
cJSON *util_json_int_array(const int *v, int len);

/* ---- JSON reading ---------------------------------------------------- */

/* "parent.key" ("key" at the top level) / "parent[i]" into buf of n >= 4
 * bytes; truncated paths end in "...". */
void util_json_key(char *buf, size_t n, const char *parent, const char *key);
void util_json_index(char *buf, size_t n, const char *parent, int i);

/* "a string", "a number", ... or "nothing" for NULL (static text). */
const char *util_json_type(const cJSON *v);

/* 1 when v is a whole number in lo..hi (checked before any cast to int). */
int util_json_whole(const cJSON *v, double lo, double hi);

/* Limits of an input document (docs/limits.md): arrays and objects
 * inside each other, and values (numbers, strings, literals, arrays,
 * objects; keys not counted), which bound what the parse allocates. */
#define UTIL_JSON_MAX_DEPTH 64
#define UTIL_JSON_MAX_VALUES 16777216

/* Parse text as the document of an input file: one JSON object with no
 * key given twice in any of its objects, valid UTF-8 throughout (no
 * overlong form, surrogate or code point beyond U+10FFFF), no string
 * escaping U+0000 or a lone surrogate, within the limits above.  Errors
 * name file and, for a duplicate key, its JSON path (e.g.
 * "nodes[2].gpus"); the others give line and column (in bytes).  *root
 * (caller deletes) is NULL on failure. */
int util_json_parse_object(const char *text, const char *file, cJSON **root,
                           util_error *err);
/* The checks util_json_parse_object makes of the text before it parses
 * it: UTF-8, the escapes, UTIL_JSON_MAX_DEPTH and UTIL_JSON_MAX_VALUES
 * (UTIL_EPARSE with line and column); not the syntax. */
int util_json_check_text(const char *text, const char *file, util_error *err);

/* ---- files ----------------------------------------------------------- */

/* Read a whole file; *text is malloc'd (caller frees), NUL-terminated. */
int util_read_file(const char *path, char **text, util_error *err);
/* Write text to path through a temporary file in the same directory and
 * rename(2); on failure nothing is left behind.  path "-" = stdout is not
 * handled here. */
int util_write_file_atomic(const char *path, const char *text,
                           util_error *err);
/* util_write_file_atomic giving the file the permission bits mode (0755
 * for a script), set before it appears under path, whatever the mode of
 * the file it replaces; mode < 0: as util_write_file_atomic. */
int util_write_file_atomic_mode(const char *path, const char *text, int mode,
                                util_error *err);

/* One file of util_write_dir_atomic. */
typedef struct util_out_file {
    const char *name;   /* plain name: no '/', not starting with '.' */
    const char *text;
    int mode;           /* permission bits (0755: a script); < 0: those of
                           the file it replaces, else the default */
} util_out_file;

/* Write the n files into the directory dir, all or nothing.  A dir that
 * does not exist is written whole as a temporary directory beside it
 * (".NAME.tmp.PID") and renamed into place.  In a dir that exists only
 * these files are replaced: each must be a regular file or absent
 * (checked first, never followed), all are written and synced in a
 * temporary directory inside dir, then renamed over their names (a
 * failed rename puts back the files already replaced).  Other files in
 * dir are left alone.  On failure dir is as it was and nothing is left
 * behind. */
int util_write_dir_atomic(const char *dir, const util_out_file *files, int n,
                          util_error *err);

/* ---- names ---------------------------------------------------------- */

/* 1 when s is a host name (RFC 1123): labels of letters, digits and '-'
 * (not first or last), 1..63 characters each, joined by '.', 1..253
 * characters in all; 0 otherwise (NULL included). */
int util_hostname_ok(const char *s);

/* SHA-256 of a byte string as 64 hex digits + NUL. */
void util_sha256_hex(const void *data, size_t n, char out[65]);

/* ---- PCG32 (O'Neill 2014, pcg32 "XSH RR" 64/32) ---------------------- */

typedef struct util_pcg32 {
    uint64_t state;         /* RNG state, all values possible */
    uint64_t inc;           /* stream selector, always odd */
} util_pcg32;

/* Seed as pcg32_srandom_r(initstate, initseq) of the reference code. */
void util_pcg32_seed(util_pcg32 *rng, uint64_t initstate, uint64_t initseq);
/* Next 32-bit output (pcg32_random_r). */
uint32_t util_pcg32_next(util_pcg32 *rng);
/* Uniform integer in [0, bound) without modulo bias; bound > 0. */
uint32_t util_pcg32_bounded(util_pcg32 *rng, uint32_t bound);
/* Uniform double in [0, 1) with 53 random bits. */
double util_pcg32_double(util_pcg32 *rng);

/* ---- time limits ----------------------------------------------------- */

/* Seconds of the monotonic clock (CLOCK_MONOTONIC): the clock of the
 * deadlines in the rooms' parameter structs. */
double util_now(void);
/* 1 when deadline (a util_now() time; 0 = none) has passed. */
int util_deadline_passed(double deadline);

#endif
