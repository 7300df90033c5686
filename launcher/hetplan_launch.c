/* launcher/hetplan_launch.c: the hetplan-launch program: run a plan's
 * pipeline for real on one local GPU per stage (executed mode), or run
 * each distinct stage's work alone on one GPU and compose the iteration
 * with the planner's schedule simulator (composed mode); write a trial
 * file beside the plan's predictions.  Multi-rank launches (--spawn,
 * torchrun's environment, --dry-run) are in hetplan_launch_ranks.c; the
 * two are the only files of the launcher that print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"


static const char usage_text[] =
    "usage: hetplan-launch --plan FILE [--rank R | --all-local] [options]\n"
    "       hetplan-launch --plan FILE --spawn N [options]   (N ranks on this machine)\n"
    "       torchrun ... hetplan-launch --plan FILE [options] (one process per GPU)\n"
    "       hetplan-launch --plan FILE --dry-run [--spawn N]  (no GPU needed)\n"
    "\n"
    "Multi-rank (WORLD_SIZE set, or --spawn): every process runs its plan rank's\n"
    "share for real over NCCL: its layers, TP collectives, pipeline sends and\n"
    "receives in the schedule's order (1F1B, interleaved, GPipe), DP or\n"
    "distributed-optimizer collectives, the Adam step; rank 0 prints measured\n"
    "against predicted time and memory and writes the trial.  A rank that fails\n"
    "or is lost ends every rank, naming it, within --timeout.\n"
    "\n"
    "Runs the work of a plan's pipeline stages: synthetic layers of the model's\n"
    "shapes (tensor-parallel shard), the plan's micro-batch size and count, each\n"
    "stage's passes in the schedule's order (1F1B).\n"
    "  executed (one local GPU per stage, GPUs N..N+pp-1): the pipeline runs for\n"
    "    real, one thread per GPU, activations and gradients copied between the\n"
    "    GPUs, the iteration timed with CUDA events; one data-parallel replica,\n"
    "    TP and DP all-reduces modelled as GPU delays.\n"
    "  composed (fewer GPUs, --rank, or --mode composed): each distinct stage\n"
    "    runs alone on GPU N, timed with CUPTI; the iteration is composed with\n"
    "    the planner's schedule simulator (transfers and all-reduces from the\n"
    "    cost model).\n"
    "The result is written beside the plan's prediction as a trial file that\n"
    "'planner calibrate' and 'planner evaluate' read (docs/profiler.md).\n"
    "\n"
    "options:\n"
    "  --plan FILE            plan written by 'planner --output' (hetplan-plan/1)\n"
    "  --strategy K           K-th strategy of the plan (default 1, the best)\n"
    "  --all-local            run every stage here (default)\n"
    "  --rank R               run only the stage of rank R (composed); the other\n"
    "                         stages keep the plan's predicted times\n"
    "  --mode M               auto (default: executed when there are enough\n"
    "                         GPUs), executed (fail otherwise) or composed\n"
    "  --iterations N         timed iterations (default 10)\n"
    "  --warmup N             untimed iterations first (default 2)\n"
    "  --gpu N                first CUDA device (default 0)\n"
    "  --output FILE, -o FILE write the trial JSON (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              print progress on stderr\n"
    "  --spawn N              start N ranks on this machine (GPUs 0..N-1)\n"
    "  --rank-order O         megatron (default: process rank = plan rank) or plan\n"
    "                         (process rank = cluster device, idle devices wait)\n"
    "  --timeout S            seconds for the ranks to meet, and for a stuck\n"
    "                         collective or a lost rank to end the run (60)\n"
    "  --dry-run              check the plan against the world and this machine,\n"
    "                         print each rank's groups, schedule and message sizes\n"
    "  --help, --version\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid plan or input,\n"
    "  4 another rank failed or was lost, 5 cannot write the output, 6 no CUDA\n"
    "  GPU, too few GPUs for '--mode executed', no NCCL (multi-rank) or CUPTI not\n"
    "  available (composed mode)\n";

static int report(const util_error *err)
{
    char buf[1024];

    util_error_format(err, buf, sizeof buf);
    fprintf(stderr, "hetplan-launch: %s\n", buf);
    switch (err->code) {
    case UTIL_EIO:
    case UTIL_EPARSE:
    case UTIL_EFIELD:
    case UTIL_EINVAL:
        return LAUNCH_EXIT_INPUT;
    case UTIL_ENOTFOUND:
        return LAUNCH_EXIT_NOGPU;
    default:
        return LAUNCH_EXIT_INTERNAL;
    }
}

#ifdef HETPLAN_LAUNCH_CUDA
/* Median and IQR of the pass spans of one direction, and the median span
 * of a whole iteration. */
static int pass_stats(const prof_samples *s, const int *bwd, launch_measure *out,
                      util_error *err)
{
    double *f = NULL, *b = NULL, *it = NULL;
    int nf = 0, nb = 0, r, i, rc = UTIL_OK;
    prof_stats st;

    f = malloc((size_t)s->repeats * (size_t)s->nk * sizeof *f);
    b = malloc((size_t)s->repeats * (size_t)s->nk * sizeof *b);
    it = malloc((size_t)s->repeats * sizeof *it);
    if (!f || !b || !it) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (r = 0; r < s->repeats; r++) {
        size_t first = (size_t)r * (size_t)s->nk, last = first + (size_t)s->nk - 1;
        for (i = 0; i < s->nk; i++) {
            size_t at = first + (size_t)i;
            if (bwd[i])
                b[nb++] = s->end[at] - s->start[at];
            else
                f[nf++] = s->end[at] - s->start[at];
        }
        it[r] = s->end[last] - s->start[first];
    }
    if ((rc = prof_stats_of(f, nf, &st, err)) != UTIL_OK)
        goto done;
    out->fwd_s = st.median;
    out->fwd_iqr_s = st.iqr;
    if ((rc = prof_stats_of(b, nb, &st, err)) != UTIL_OK)
        goto done;
    out->bwd_s = st.median;
    out->bwd_iqr_s = st.iqr;
    if ((rc = prof_stats_of(it, s->repeats, &st, err)) != UTIL_OK)
        goto done;
    out->busy_s = st.median;
    out->measured = 1;
done:
    free(f);
    free(b);
    free(it);
    return rc;
}

/* Run stage j of the work on the GPU and fill meas. */
static int run_stage(prof_gpu *g, const plan_doc *d, const launch_work *w, int j,
                     const launch_options *o, launch_measure *meas, util_error *err)
{
    const launch_stage *st = &w->stages[j];
    prof_layer_work *kinds = NULL;
    const prof_layer_work **layers = NULL;
    int have[FMT_KIND_NOOP + 1] = {0};
    int *bwd = NULL, *micro = NULL, n = 0, np, l, rc = UTIL_OK;
    double params = 0.0;
    prof_samples s;

    memset(&s, 0, sizeof s);
    kinds = calloc(FMT_KIND_NOOP + 1, sizeof *kinds);
    layers = calloc((size_t)(st->last - st->first), sizeof *layers);
    bwd = calloc((size_t)(2 * w->gas), sizeof *bwd);
    micro = calloc((size_t)(2 * w->gas), sizeof *micro);
    if (!kinds || !layers || !bwd || !micro) {
        rc = util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
        goto done;
    }
    for (l = st->first; l < st->last; l++) {
        int kind = d->model.layers[l].kind;
        params += d->model.layers[l].params;
        if (!prof_kind_measurable(kind))
            continue;
        if (!have[kind]) {
            prof_shape sh;
            if ((rc = prof_shape_of(&d->model, kind, w->tp, w->mbs, 2, &sh, err)) != UTIL_OK ||
                (rc = prof_layer_work_of(&sh, &kinds[kind], err)) != UTIL_OK)
                goto done;
            have[kind] = 1;
        }
        layers[n++] = &kinds[kind];
    }
    np = launch_stage_order(w->schedule, j, w->pp, w->gas, bwd, micro);
    if (n == 0 || np < 1) {
        rc = util_error_set(err, UTIL_EINTERNAL, NULL, NULL,
                            "stage %d has nothing to run", j);
        goto done;
    }
    if ((rc = prof_gpu_time_passes(g, layers, n, bwd, np, o->warmup, o->iterations,
                                   &s, err)) != UTIL_OK)
        goto done;
    if ((rc = pass_stats(&s, bwd, meas, err)) != UTIL_OK)
        goto done;
    /* optimizer step of the stage's shard (every parameter, tp-divided) */
    meas->opt_s = -1.0;
    if (params / w->tp >= 1.0 &&
        prof_gpu_time_adam(g, (long long)(params / w->tp), 5, &meas->opt_s, NULL) != UTIL_OK)
        meas->opt_s = -1.0; /* e.g. no memory left: the cost model's */
done:
    prof_samples_free(&s);
    free(kinds);
    free(layers);
    free(bwd);
    free(micro);
    return rc;
}

static void print_table(const plan_doc *d, const launch_work *w,
                        const launch_measure *meas, const launch_trial *t,
                        const prof_device_info *dev, int ngpu)
{
    int j;

    printf("plan '%s', strategy %d: tp %d, dp %d, pp %d, mbs %d, %d micro-batches, %s\n",
           d->path, w->strategy + 1, w->tp, w->dp, w->pp, w->mbs, w->gas,
           w->schedule == FMT_SCHED_GPIPE ? "gpipe" : "1f1b");
    printf("mode: %s\n", t->reason);
    if (t->executed) {
        printf("%5s %7s %-10s %4s %-5s %10s %10s %10s %10s %10s\n", "stage", "layers",
               "plan GPU", "gpu", "next", "fwd (ms)", "bwd (ms)", "busy (ms)",
               "pred fwd", "pred bwd");
        for (j = 0; j < w->pp; j++) {
            const launch_stage *st = &w->stages[j];
            printf("%5d %3d-%-3d %-10s %4d %-5s %10.3f %10.3f %10.3f %10.3f %10.3f\n", j,
                   st->first, st->last - 1, st->device_type, t->gpu[j],
                   j == w->pp - 1 ? "-" : t->route[j] == LAUNCH_ROUTE_PEER ? "peer" : "host",
                   t->used_fwd_s[j] * 1e3, t->used_bwd_s[j] * 1e3, t->busy_s[j] * 1e3,
                   t->pred_fwd_s[j] * 1e3, t->pred_bwd_s[j] * 1e3);
        }
        printf("iteration: measured (executed) %.4f s (IQR %.4f), composed from the "
               "measured stages %.4f s, predicted %.4f s (plan), %.4f s (simulator); "
               "measured / predicted = %.3f\n",
               t->measured_s, t->iter_iqr_s, t->composed_s, t->predicted_s,
               t->simulated_s, t->predicted_s > 0 ? t->measured_s / t->predicted_s : 0.0);
        return;
    }
    if (w->rank >= 0)
        printf("only the stage of rank %d ran, on GPU %d (%s); ", w->rank, dev->index,
               dev->type);
    else
        printf("this machine has %d GPU%s for the plan's %d ranks: each distinct stage "
               "ran on GPU %d (%s); ", ngpu, ngpu == 1 ? "" : "s", w->ranks, dev->index,
               dev->type);
    printf("the iteration is composed with the planner's schedule simulator "
           "(transfers and all-reduces from the cost model)\n");
    printf("%5s %7s %-10s %-26s %10s %10s %10s %10s\n", "stage", "layers", "plan GPU",
           "source", "fwd (ms)", "bwd (ms)", "pred fwd", "pred bwd");
    for (j = 0; j < w->pp; j++) {
        const launch_stage *st = &w->stages[j];
        const char *src = meas[j].measured ? "measured"
                          : meas[st->same_as].measured ? "measured (same as earlier)"
                                                       : "predicted";
        printf("%5d %3d-%-3d %-10s %-26s %10.3f %10.3f %10.3f %10.3f\n", j, st->first,
               st->last - 1, st->device_type, src, t->used_fwd_s[j] * 1e3,
               t->used_bwd_s[j] * 1e3, t->pred_fwd_s[j] * 1e3, t->pred_bwd_s[j] * 1e3);
    }
    printf("iteration: measured (composed) %.4f s, predicted %.4f s (plan), "
           "%.4f s (simulator); measured / predicted = %.3f\n",
           t->measured_s, t->predicted_s, t->simulated_s,
           t->predicted_s > 0 ? t->measured_s / t->predicted_s : 0.0);
}

/* The executed mode: the plan's pipeline on GPUs o->device .. + pp - 1.
 * t0 is the composition without measurements (the modelled parts). */
static int run_executed(const plan_doc *d, const launch_work *w,
                        const launch_options *o, const launch_trial *t0,
                        const int *peer, int ngpu, int progress,
                        launch_measure *meas, launch_trial *t, util_error *err)
{
    launch_exec_input in;
    launch_exec x;
    launch_exec_samples smp;
    launch_exec_result res;
    int rc, j;

    memset(&x, 0, sizeof x);
    memset(&smp, 0, sizeof smp);
    memset(&res, 0, sizeof res);
    launch_exec_input_init(&in);
    in.first_gpu = o->device;
    in.ngpu = ngpu;
    in.peer = peer;
    in.fwd_extra_s = t0->extra_fwd_s;
    in.bwd_extra_s = t0->extra_bwd_s;
    in.dp_s = t0->dp_stage_s;
    in.tied_s = t0->tied_s;
    in.tied_first = t0->tied_first;
    in.tied_last = t0->tied_last;
    in.overlap_dp = t0->overlap_dp;
    if ((rc = launch_exec_plan(w, &in, &x, err)) != UTIL_OK)
        goto done;
    if (progress) {
        fprintf(stderr, "hetplan-launch: executing %d stages on GPUs %d..%d, %d warm-up "
                        "+ %d timed iterations\n", w->pp, o->device,
                o->device + w->pp - 1, o->warmup, o->iterations);
        for (j = 0; j < x.nxfer; j++)
            if (!x.xfers[j].grad && x.xfers[j].micro == 0)
                fprintf(stderr, "  cut %d: GPU %d <-> GPU %d, %.2f MiB per micro-batch, %s\n",
                        x.xfers[j].cut, x.xfers[j].src_gpu, x.xfers[j].dst_gpu,
                        x.xfers[j].bytes / 1048576.0,
                        x.xfers[j].route == LAUNCH_ROUTE_PEER ? "peer copy"
                                                              : "through pinned host memory");
    }
    if ((rc = launch_gpu_execute(d, w, &x, d->model.bf16, o->warmup, o->iterations,
                                 &smp, err)) != UTIL_OK ||
        (rc = launch_exec_summarise(&smp, meas, &res, err)) != UTIL_OK ||
        (rc = launch_compose(d, w, meas, t, err)) != UTIL_OK ||
        (rc = launch_trial_set_executed(t, &x, &res, err)) != UTIL_OK)
        goto done;
done:
    launch_exec_result_free(&res);
    launch_exec_samples_free(&smp);
    launch_exec_free(&x);
    return rc;
}

#endif /* HETPLAN_LAUNCH_CUDA */

int main(int argc, char **argv)
{
    launch_options o;
    util_error err;
    plan_doc d;
    launch_work w;
    launch_trial t, t0;
    launch_measure *meas = NULL;
    prof_device_info dev;
    prof_gpu *g = NULL;
    char *text = NULL, why[256];
    int *peer = NULL;
    int rc, code = LAUNCH_EXIT_OK, j, ngpu = 0, progress, mode;

    prof_warn_unknown_keys("hetplan-launch");
    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&t, 0, sizeof t);
    memset(&t0, 0, sizeof t0);
    memset(&err, 0, sizeof err);
    if (launch_parse_args(argc, argv, &o, &err) != UTIL_OK) {
        fprintf(stderr, "hetplan-launch: %s\ntry 'hetplan-launch --help'\n", err.msg);
        return LAUNCH_EXIT_USAGE;
    }
    if (o.help) {
        fputs(usage_text, stdout);
        return LAUNCH_EXIT_OK;
    }
    if (o.version) {
        printf("hetplan-launch %s\n", PROF_VERSION);
        return LAUNCH_EXIT_OK;
    }
    {
        launch_env env;
        if (launch_env_of(&env, &err) != UTIL_OK) {
            fprintf(stderr, "hetplan-launch: %s\n", err.msg);
            return LAUNCH_EXIT_USAGE;
        }
        if (o.dry_run)
            return launch_cli_dry_run(&o, &env);
        if (o.spawn > 0)
            return launch_cli_spawn(argc, argv, &o);
        if (env.present)
            return launch_cli_rank(&o, &env);
    }
    progress = !o.quiet && (o.verbose || isatty(STDERR_FILENO));
    if ((rc = plan_load_plan(o.plan, &d, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if ((code = launch_cli_check_options(&o, &d)) != LAUNCH_EXIT_OK)
        goto done;
    if (d.digest_mismatch && !o.quiet) {
        char changed[1400];
        plan_changed_inputs(&d, changed, sizeof changed);
        fprintf(stderr, "hetplan-launch: warning: %s\n", changed);
    }
    if ((rc = launch_work_of(&d, o.strategy - 1, o.rank, &w, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    meas = calloc((size_t)w.pp, sizeof *meas);
    if (!meas) {
        fprintf(stderr, "hetplan-launch: out of memory\n");
        code = LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    for (j = 0; j < w.pp; j++)
        meas[j].opt_s = -1.0;
    /* the prediction alone: the modelled parts the executed mode needs */
    if ((rc = launch_compose(&d, &w, meas, &t0, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
#ifndef HETPLAN_LAUNCH_CUDA
    (void)dev;
    (void)why;
    (void)ngpu;
    (void)mode;
    (void)progress;
    fprintf(stderr, "hetplan-launch: no CUDA GPU: this hetplan-launch was built without "
                    "CUDA (--dry-run works)\n");
    code = LAUNCH_EXIT_NOGPU;
    goto done;
#else
    if ((rc = launch_gpu_topology(&ngpu, NULL, 0, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    peer = calloc((size_t)ngpu * (size_t)ngpu, sizeof *peer);
    if (!peer) {
        fprintf(stderr, "hetplan-launch: out of memory\n");
        code = LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    if ((rc = launch_gpu_topology(&ngpu, peer, ngpu * ngpu, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    mode = launch_choose_mode(&w, o.mode, ngpu, o.device, why, sizeof why);
    if (mode < 0) {
        fprintf(stderr, "hetplan-launch: '--mode executed' is not possible: %s\n",
                why + strlen("composed: "));
        code = LAUNCH_EXIT_NOGPU;
        goto done;
    }
    /* device information (and, composed, the GPU that runs every stage) */
    if ((rc = prof_gpu_open(o.device, d.model.bf16, mode == LAUNCH_MODE_COMPOSED, &g,
                            &err)) != UTIL_OK ||
        (rc = prof_gpu_info(g, &dev, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    if (mode == LAUNCH_MODE_EXECUTED) {
        prof_gpu_close(g); /* each stage opens its own GPU */
        g = NULL;
        if ((rc = run_executed(&d, &w, &o, &t0, peer, ngpu, progress, meas, &t,
                               &err)) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
        snprintf(t.reason, sizeof t.reason, "%s", why);
        goto write;
    }
    for (j = 0; j < w.pp; j++) {
        meas[j].opt_s = -1.0;
        if (!w.stages[j].run)
            continue;
        if (progress)
            fprintf(stderr, "hetplan-launch: stage %d (layers %d-%d): %d passes x %d "
                            "iterations on GPU %d\n", j, w.stages[j].first,
                    w.stages[j].last - 1, 2 * w.gas, o.iterations, dev.index);
        if ((rc = run_stage(g, &d, &w, j, &o, &meas[j], &err)) != UTIL_OK) {
            code = report(&err);
            goto done;
        }
    }
    if ((rc = launch_compose(&d, &w, meas, &t, &err)) != UTIL_OK) {
        code = report(&err);
        goto done;
    }
    snprintf(t.reason, sizeof t.reason, "%s", why);
write:
    text = launch_trial_json(&d, &w, meas, &t, &dev, o.iterations);
    if (!text) {
        fprintf(stderr, "hetplan-launch: out of memory\n");
        code = LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    if (o.output && (rc = util_write_file_atomic(o.output, text, &err)) != UTIL_OK) {
        report(&err);
        code = LAUNCH_EXIT_OUTPUT;
        goto done;
    }
    if (!o.quiet) {
        if (o.json)
            printf("%s\n", text);
        else
            print_table(&d, &w, meas, &t, &dev, ngpu);
        if (o.output && !o.json)
            printf("trial written to '%s'\n", o.output);
    }
#endif /* HETPLAN_LAUNCH_CUDA */
done:
    free(text);
    free(meas);
    free(peer);
    launch_trial_free(&t);
    launch_trial_free(&t0);
    launch_work_free(&w);
    plan_doc_free(&d);
#ifdef HETPLAN_LAUNCH_CUDA
    prof_gpu_close(g);
#else
    (void)g;
#endif
    return code;
}
