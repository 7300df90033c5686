/* profiler/hetplan_profile.c: the hetplan-profile program: measure every
 * distinct layer kind of a model on the local GPU for a grid of tensor-
 * parallel degrees and micro-batch sizes, and write a hetplan-profile/1
 * file.  The only file of the profiler that prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prof.h"

enum exit_code {
    EXIT_OK = 0,
    EXIT_INTERNAL = 1,  /* out of memory, CUDA/cuBLAS failure */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_INPUT = 3,     /* the model cannot be read or profiled */
    EXIT_OUTPUT = 5,    /* the profile cannot be written */
    EXIT_NOGPU = 6      /* no CUDA GPU, or CUPTI cannot be used */
};

static const char usage_text[] =
    "usage: hetplan-profile --model FILE --output FILE [options]\n"
    "\n"
    "Runs every distinct layer kind of the model (embedding, transformer block,\n"
    "final norm, LM head) forward and backward on the local GPU with the shapes\n"
    "of a tensor-parallel shard, times each kernel with CUPTI, and writes the\n"
    "medians as a profile for 'planner --profile' (docs/profiler.md).\n"
    "\n"
    "options:\n"
    "  --model FILE           model description (docs/inputs.md)\n"
    "  --output FILE, -o FILE profile to write (hetplan-profile/1, atomically)\n"
    "  --tp LIST              tensor-parallel degrees, e.g. 1,2,4,8 (default)\n"
    "  --mbs LIST             micro-batch sizes (default 1,2,4,8)\n"
    "  --dtype fp16|bf16      math precision (default: the model's)\n"
    "  --warmup N             untimed runs before timing (default 5)\n"
    "  --repeats N            timed runs; the median is kept (default 20)\n"
    "  --gpu N                CUDA device index (default 0)\n"
    "  --device-type NAME     device type written to the profile (default: the\n"
    "                         catalogue name of the GPU, e.g. H100-SXM)\n"
    "  --no-bandwidth         skip copy bandwidth and GEMM throughput\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              print every measurement on stderr\n"
    "  --help, --version\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid model,\n"
    "  5 cannot write the output, 6 no CUDA GPU or CUPTI not usable\n";

static int report(const char *prefix, const util_error *err)
{
    char buf[1024];

    util_error_format(err, buf, sizeof buf);
    fprintf(stderr, "hetplan-profile: %s%s\n", prefix, buf);
    switch (err->code) {
    case UTIL_EIO:
    case UTIL_EPARSE:
    case UTIL_EFIELD:
    case UTIL_EINVAL:
        return EXIT_INPUT;
    case UTIL_ENOTFOUND:
        return EXIT_NOGPU;
    default:
        return EXIT_INTERNAL;
    }
}

int main(int argc, char **argv)
{
    prof_options o;
    util_error err;
    fmt_model m;
    prof_gpu *g = NULL;
    prof_run run;
    prof_layer_result *res = NULL;
    prof_layer_work *w = NULL;
    int kinds[FMT_KIND_NOOP + 1] = {0};
    int rc, code = EXIT_OK, i, j, k, nres = 0, cap, any = 0;
    int progress;
    char *text = NULL;

    prof_warn_unknown_keys("hetplan-profile");
    memset(&m, 0, sizeof m);
    memset(&err, 0, sizeof err);
    if (prof_parse_args(argc, argv, &o, &err) != UTIL_OK) {
        fprintf(stderr, "hetplan-profile: %s\ntry 'hetplan-profile --help'\n", err.msg);
        return EXIT_USAGE;
    }
    if (o.help) {
        fputs(usage_text, stdout);
        return EXIT_OK;
    }
    if (o.version) {
        printf("hetplan-profile %s\n", PROF_VERSION);
        return EXIT_OK;
    }
    progress = !o.quiet && (o.verbose || isatty(STDERR_FILENO));

    if ((rc = fmt_load_model(o.model, &m, &err)) != UTIL_OK) {
        code = report("", &err);
        goto done;
    }
    for (i = 0; i < m.nlayers; i++)
        if (prof_kind_measurable(m.layers[i].kind)) {
            kinds[m.layers[i].kind] = 1;
            any = 1;
        }
    if (!any) {
        fprintf(stderr, "hetplan-profile: '%s': the model has no embedding, "
                        "transformer, norm or head layer to profile\n", o.model);
        code = EXIT_INPUT;
        goto done;
    }
    /* every shape is checked before the GPU is touched */
    for (i = 0; i < o.ntp; i++) {
        prof_shape sh;
        if (prof_shape_of(&m, FMT_KIND_TRANSFORMER, o.tp[i], 1, 2, &sh, &err) != UTIL_OK) {
            code = report("", &err);
            goto done;
        }
    }

    if ((rc = prof_gpu_open(o.device, o.dtype == 2 || (o.dtype == 0 && m.bf16), 1, &g,
                            &err)) != UTIL_OK) {
        code = report("", &err);
        goto done;
    }
    memset(&run, 0, sizeof run);
    if ((rc = prof_gpu_info(g, &run.dev, &err)) != UTIL_OK) {
        code = report("", &err);
        goto done;
    }
    if (o.device_type)
        snprintf(run.dev.type, sizeof run.dev.type, "%s", o.device_type);
    run.bf16 = o.dtype == 2 || (o.dtype == 0 && m.bf16);
    run.warmup = o.warmup;
    run.repeats = o.repeats;
    run.tp = o.tp;
    run.ntp = o.ntp;
    run.mbs = o.mbs;
    run.nmbs = o.nmbs;
    if (progress)
        fprintf(stderr, "hetplan-profile: GPU %d '%s' (%s), %d SMs, %.1f GiB, %s\n",
                run.dev.index, run.dev.name, run.dev.type, run.dev.sm_count,
                run.dev.mem_bytes / 1073741824.0, run.bf16 ? "bf16" : "fp16");

    cap = o.ntp * o.nmbs * (FMT_KIND_NOOP + 1);
    res = calloc((size_t)cap, sizeof *res);
    w = malloc(sizeof *w);
    if (!res || !w) {
        fprintf(stderr, "hetplan-profile: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    for (i = 0; i < o.ntp; i++)
        for (j = 0; j < o.nmbs; j++)
            for (k = 0; k <= FMT_KIND_NOOP; k++) {
                prof_shape sh;
                prof_samples s;
                if (!kinds[k])
                    continue;
                if ((rc = prof_shape_of(&m, k, o.tp[i], o.mbs[j], 2, &sh, &err)) != UTIL_OK ||
                    (rc = prof_layer_work_of(&sh, w, &err)) != UTIL_OK) {
                    code = report("", &err);
                    goto done;
                }
                rc = prof_gpu_time_layer(g, w, o.warmup, o.repeats, &s, &err);
                if (rc == UTIL_ENOMEM) { /* too large for this GPU: skip */
                    if (!o.quiet)
                        fprintf(stderr, "hetplan-profile: skipping %s at tp %d, "
                                        "mbs %d: %s\n", fmt_kind_name(k), o.tp[i],
                                o.mbs[j], err.msg);
                    continue;
                }
                if (rc == UTIL_OK)
                    rc = prof_layer_summarise(w, &s, &res[nres], &err);
                prof_samples_free(&s);
                if (rc != UTIL_OK) {
                    code = report("", &err);
                    goto done;
                }
                if (progress)
                    fprintf(stderr, "  %-12s tp %-2d mbs %-3d fwd %9.4f ms (IQR %.4f)  "
                                    "bwd %9.4f ms (IQR %.4f)\n",
                            fmt_kind_name(k), o.tp[i], o.mbs[j],
                            res[nres].fwd_s * 1e3, res[nres].fwd_iqr_s * 1e3,
                            res[nres].bwd_s * 1e3, res[nres].bwd_iqr_s * 1e3);
                nres++;
            }
    run.res = res;
    run.nres = nres;
    if (!o.skip_bandwidth) {
        if ((rc = prof_gpu_bandwidth(g, &run.bw, &err)) != UTIL_OK) {
            code = report("", &err);
            goto done;
        }
    }

    text = prof_profile_json(&run, &m, m.name);
    if (!text) {
        fprintf(stderr, "hetplan-profile: out of memory\n");
        code = EXIT_INTERNAL;
        goto done;
    }
    if ((rc = util_write_file_atomic(o.output, text, &err)) != UTIL_OK) {
        report("", &err);
        code = EXIT_OUTPUT;
        goto done;
    }
    if (!o.quiet) {
        printf("device: %s (%s), %d SMs, %.1f GiB, compute %d.%d, %s\n",
               run.dev.name, run.dev.type, run.dev.sm_count,
               run.dev.mem_bytes / 1073741824.0, run.dev.cc_major,
               run.dev.cc_minor, run.bf16 ? "bf16" : "fp16");
        printf("%-12s %3s %4s %12s %12s %10s %10s\n", "kind", "tp", "mbs",
               "fwd (ms)", "bwd (ms)", "fwd IQR", "bwd IQR");
        for (i = 0; i < nres; i++)
            printf("%-12s %3d %4d %12.4f %12.4f %10.4f %10.4f\n",
                   fmt_kind_name(res[i].kind), res[i].tp, res[i].mbs,
                   res[i].fwd_s * 1e3, res[i].bwd_s * 1e3, res[i].fwd_iqr_s * 1e3,
                   res[i].bwd_iqr_s * 1e3);
        if (!o.skip_bandwidth)
            printf("copy GB/s: host->device %.1f, device->host %.1f, "
                   "device->device %.1f, peer %s%.1f; GEMM %lld^3: %.1f TFLOP/s\n",
                   run.bw.h2d_bps / 1e9, run.bw.d2h_bps / 1e9, run.bw.d2d_bps / 1e9,
                   run.bw.p2p_bps > 0 ? "" : "(one GPU) ", run.bw.p2p_bps / 1e9,
                   run.bw.gemm_n, run.bw.gemm_flops / 1e12);
        printf("profile written to '%s'\n", o.output);
    }
done:
    free(text);
    free(res);
    free(w);
    prof_gpu_close(g);
    fmt_model_free(&m);
    return code;
}
