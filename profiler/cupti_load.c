/* profiler/cupti_load.c: CUPTI loaded at run time (dlopen), so that the
 * programs start without libcupti and say "CUPTI not available" instead
 * of a loader error.  Plain C: the GPU code casts the addresses back to
 * CUPTI's function types (profiler/gpu_cupti.cu). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof.h"

/* Order must match enum prof_cupti_fn in prof.h. */
static const char *const symbols[PROF_CUPTI_NFUNCS] = {
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNumDroppedRecords",
    "cuptiGetResultString",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId"};

const char *prof_cupti_symbol(int fn)
{
    return fn >= 0 && fn < PROF_CUPTI_NFUNCS ? symbols[fn] : NULL;
}

int prof_cupti_candidates(int cuda_major, const char *build_path,
                          char out[][PROF_PATH_MAX], int cap)
{
    const char *env = getenv("HETPLAN_CUPTI_LIBRARY");
    int n = 0;

    if (cap < 1)
        return 0;
    if (env && env[0]) { /* the user's choice, alone */
        snprintf(out[n++], PROF_PATH_MAX, "%s", env);
        return n;
    }
    if (cuda_major > 0 && n < cap)
        snprintf(out[n++], PROF_PATH_MAX, "libcupti.so.%d", cuda_major);
    if (build_path && build_path[0] && n < cap)
        snprintf(out[n++], PROF_PATH_MAX, "%s", build_path);
    if (n < cap)
        snprintf(out[n++], PROF_PATH_MAX, "libcupti.so");
    return n;
}

void prof_cupti_unload(prof_cupti_lib *l)
{
    if (!l)
        return;
    if (l->handle)
        dlclose(l->handle);
    memset(l, 0, sizeof *l);
}

int prof_cupti_load(char names[][PROF_PATH_MAX], int n, prof_cupti_lib *out,
                    util_error *err)
{
    char tried[1024] = "", why[512] = "";
    size_t used = 0;
    int i, f;

    memset(out, 0, sizeof *out);
    if (n < 1)
        return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                              "CUPTI not available: no library name to try");
    for (i = 0; i < n; i++) {
        void *h;
        const char *e;
        int missing = -1;

        if (used + strlen(names[i]) + 5 < sizeof tried) {
            int k = snprintf(tried + used, sizeof tried - used, "%s'%s'",
                             i ? ", " : "", names[i]);
            used += k > 0 ? (size_t)k : 0;
        }
        dlerror();
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            e = dlerror();
            snprintf(why, sizeof why, "%s", e ? e : "unknown dlopen error");
            continue;
        }
        for (f = 0; f < PROF_CUPTI_NFUNCS; f++) {
            out->fn[f] = dlsym(h, symbols[f]);
            if (!out->fn[f]) {
                missing = f;
                break;
            }
        }
        if (missing >= 0) {
            snprintf(why, sizeof why, "'%s' has no symbol '%s'", names[i],
                     symbols[missing]);
            dlclose(h);
            memset(out, 0, sizeof *out);
            continue;
        }
        out->handle = h;
        snprintf(out->path, sizeof out->path, "%s", names[i]);
        return UTIL_OK;
    }
    return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                          "CUPTI not available: cannot load %s (last error: %s); "
                          "install the CUDA toolkit's CUPTI or set "
                          "HETPLAN_CUPTI_LIBRARY to libcupti.so",
                          tried, why);
}
