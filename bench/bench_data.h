/* bench/bench_data.h: helpers of the benchmarks that score predictions
 * against the runs of a ../shared/data folder: finding the folder (its
 * absence is reported as a skipped benchmark, not an error), reading its
 * JSON, numbers out of it and the scores of calibrate/ranking.c. */
#ifndef HETPLAN_BENCH_DATA_H
#define HETPLAN_BENCH_DATA_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "calibrate.h"

/* Prints cJSON document doc on stdout and frees it. */
static inline void bench_print(cJSON *doc)
{
    char *text = cJSON_Print(doc);

    if (text != NULL)
        puts(text);
    free(text);
    cJSON_Delete(doc);
}

/* Data folder of benchmark `name` into dir: argv[1], else
 * ../shared/data/<sub> from the working directory, else the same beside
 * the source tree.  Returns 1 when <dir>/runs.json is there; otherwise
 * prints {"bench", "skipped": true, "reason"} (or the usage for -h) and a
 * line on stderr, and returns 0: the caller exits 0. */
static inline int bench_data_dir(int argc, char **argv, const char *name,
                                 const char *sub, char *dir, size_t n)
{
    char probe[4200], reason[4400];
    struct stat st;
    cJSON *doc;

    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: %s [DATA_DIR]   (default ../shared/data/%s)\n", name, sub);
        return 0;
    }
    if (argc > 1) {
        snprintf(dir, n, "%s", argv[1]);
    } else {
        snprintf(dir, n, "../shared/data/%s", sub);
        if (stat(dir, &st) != 0)
            snprintf(dir, n, "%s/../shared/data/%s", HETPLAN_SOURCE_DIR, sub);
    }
    snprintf(probe, sizeof probe, "%s/runs.json", dir);
    if (stat(probe, &st) == 0)
        return 1;
    snprintf(reason, sizeof reason, "no '%s': the reference data "
             "(../shared/data/%s) is absent", probe, sub);
    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "bench", name);
    cJSON_AddBoolToObject(doc, "skipped", 1);
    cJSON_AddStringToObject(doc, "reason", reason);
    bench_print(doc);
    fprintf(stderr, "%s: skipped: %s\n", name, reason);
    return 0;
}

/* The JSON document of a file; *root owned by the caller. */
static inline int bench_read_json(const char *path, cJSON **root,
                                  util_error *err)
{
    char *text = NULL;
    int rc = util_read_file(path, &text, err);

    *root = NULL;
    if (rc != UTIL_OK)
        return rc;
    *root = cJSON_Parse(text);
    free(text);
    if (*root == NULL)
        return util_error_set(err, UTIL_EPARSE, path, NULL, "not valid JSON");
    return UTIL_OK;
}

/* Model document doc with training.framework set to fw (NULL: left as
 * it is), so a bench can score data files under a framework without
 * editing them (docs/inputs.md, "Frameworks"). */
static inline void bench_set_framework(cJSON *doc, const char *fw)
{
    cJSON *tr;

    if (fw == NULL)
        return;
    tr = cJSON_GetObjectItemCaseSensitive(doc, "training");
    if (!cJSON_IsObject(tr))
        tr = cJSON_AddObjectToObject(doc, "training");
    if (tr == NULL)
        return;
    cJSON_DeleteItemFromObjectCaseSensitive(tr, "framework");
    cJSON_AddStringToObject(tr, "framework", fw);
}

/* The model file at path, with training.framework set to fw (NULL: as
 * written), parsed into *m. */
static inline int bench_load_model(const char *path, const char *fw,
                                   fmt_model *m, util_error *err)
{
    cJSON *doc = NULL;
    char *text;
    int rc;

    if (fw == NULL)
        return fmt_load_model(path, m, err);
    if ((rc = bench_read_json(path, &doc, err)) != UTIL_OK)
        return rc;
    bench_set_framework(doc, fw);
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (text == NULL)
        return util_error_set(err, UTIL_ENOMEM, path, NULL, "out of memory");
    rc = fmt_parse_model(text, path, m, err);
    cJSON_free(text);
    return rc;
}

/* Number o.key (o may be NULL) into *v; UTIL_EFIELD naming `where`. */
static inline int bench_num(const cJSON *o, const char *key, const char *where,
                            double *v, util_error *err)
{
    const cJSON *x = o != NULL ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;

    if (!cJSON_IsNumber(x))
        return util_error_set(err, UTIL_EFIELD, where, key,
                              "expected a number, got %s", util_json_type(x));
    *v = x->valuedouble;
    return UTIL_OK;
}

/* Integer o.key into *v. */
static inline int bench_int(const cJSON *o, const char *key, const char *where,
                            int *v, util_error *err)
{
    double d = 0.0;
    int rc = bench_num(o, key, where, &d, err);

    if (rc == UTIL_OK && (d != (double)(int)d || d < 0.0))
        return util_error_set(err, UTIL_EFIELD, where, key,
                              "expected a non-negative integer, got %g", d);
    *v = (int)d;
    return rc;
}

/* One number of a run: obj.key into *i (an integer) or *d. */
typedef struct bench_field {
    const cJSON *obj;
    const char *key;
    int *i;
    double *d;
} bench_field;

/* Reads n fields; the first missing or mistyped one fails. */
static inline int bench_fields(const bench_field *f, size_t n,
                               const char *where, util_error *err)
{
    size_t k;
    int rc = UTIL_OK;

    for (k = 0; k < n && rc == UTIL_OK; k++)
        rc = f[k].i != NULL ? bench_int(f[k].obj, f[k].key, where, f[k].i, err)
                            : bench_num(f[k].obj, f[k].key, where, f[k].d, err);
    return rc;
}

/* String o.key, NULL when absent or not a string. */
static inline const char *bench_str(const cJSON *o, const char *key)
{
    const cJSON *x = o != NULL ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;

    return cJSON_IsString(x) ? x->valuestring : NULL;
}

/* Largest of the ranks' predicted peak memory; its capacity in *cap. */
static inline double bench_peak(const cost_result *res, double *cap)
{
    double peak = 0.0;
    int i;

    *cap = 0.0;
    for (i = 0; i < res->nranks; i++)
        if (res->mem_bytes[i] > peak) {
            peak = res->mem_bytes[i];
            *cap = res->mem_cap[i];
        }
    return peak;
}

/* Evaluates one run of runs.json: fills out (its object in the output)
 * and the caller's trials through ctx; BENCH_RUN_SKIPPED when the run
 * cannot be scored and the callback has said why in out (the others are
 * still scored). */
#define BENCH_RUN_SKIPPED (-1)
typedef int (*bench_run_fn)(void *ctx, const cJSON *run, const char *where,
                            int index, cJSON *out, util_error *err);

/* fn on each element of the array runs (read from path), at most max, an
 * object appended to arr for each; *n gets how many were scored (a run
 * fn skips takes no index).  Stops at the first error. */
static inline int bench_each_run(const cJSON *runs, const char *path, int max,
                                 cJSON *arr, bench_run_fn fn, void *ctx,
                                 int *n, util_error *err)
{
    char where[4400];
    const cJSON *x;
    cJSON *o;
    int rc = UTIL_OK, k = 0;

    *n = 0;
    if (!cJSON_IsArray(runs))
        return util_error_set(err, UTIL_EFIELD, path, NULL,
                              "expected an array of runs");
    cJSON_ArrayForEach(x, runs) {
        if (k == max)
            return util_error_set(err, UTIL_EINVAL, path, NULL,
                                  "more than %d runs", max);
        snprintf(where, sizeof where, "%s: run %d", path, k++);
        o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        rc = fn(ctx, x, where, *n, o, err);
        if (rc == BENCH_RUN_SKIPPED) {
            rc = UTIL_OK;
            continue;
        }
        if (rc != UTIL_OK)
            break;
        (*n)++;
    }
    return rc;
}

/* The output document: {"bench", "data_dir", "note", "runs": []}. */
static inline cJSON *bench_doc(const char *name, const char *dir,
                               const char *note, cJSON **runs)
{
    cJSON *doc = cJSON_CreateObject();

    cJSON_AddStringToObject(doc, "bench", name);
    cJSON_AddStringToObject(doc, "data_dir", dir);
    cJSON_AddStringToObject(doc, "note", note);
    *runs = cJSON_AddArrayToObject(doc, "runs");
    return doc;
}

/* Prints doc (with "error" when rc fails, also said on stderr) and frees
 * it; the exit status. */
static inline int bench_finish(cJSON *doc, const char *name, int rc,
                               const util_error *err)
{
    char msg[1024];

    if (rc != UTIL_OK) {
        util_error_format(err, msg, sizeof msg);
        cJSON_AddStringToObject(doc, "error", msg);
        fprintf(stderr, "%s: %s\n", name, msg);
    }
    bench_print(doc);
    return rc == UTIL_OK ? 0 : 1;
}

/* o.key = {"n", "mape", "spearman", "kendall"} over the n trials with a
 * measurement (calib_score_trials, ../shared/data/README.md); the ranking
 * as well in *rk when not NULL. */
static inline void bench_put_scores(cJSON *o, const char *key,
                                    const calib_trial *t, int n,
                                    calib_ranking *rk)
{
    calib_ranking r;
    cJSON *x = cJSON_AddObjectToObject(o, key);

    calib_score_trials(t, n, &r);
    cJSON_AddNumberToObject(x, "n", r.ran);
    cJSON_AddNumberToObject(x, "mape", r.mape);
    cJSON_AddNumberToObject(x, "spearman", r.spearman);
    cJSON_AddNumberToObject(x, "kendall", r.kendall);
    if (rk != NULL)
        *rk = r;
}

#endif
