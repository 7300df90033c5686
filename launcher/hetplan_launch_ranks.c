/* launcher/hetplan_launch_ranks.c: the multi-rank side of the
 * hetplan-launch program: --dry-run, --spawn N, and one rank of a launch
 * started by torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR, MASTER_PORT).  Prints; the work is the library's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#ifndef HETPLAN_LAUNCH_CUDA
/* Built without CUDA: the GPU entry points say so (the dry run and the
 * checks before any GPU work still run). */
static int no_cuda(util_error *err)
{
    return util_error_set(err, UTIL_ENOTFOUND, NULL, NULL,
                          "no CUDA GPU: this hetplan-launch was built without CUDA "
                          "(--dry-run works)");
}

int launch_rank_gpu(int local_rank, launch_rank_info *info, util_error *err)
{
    (void)local_rank;
    info->gpu_ok = 0;
    return no_cuda(err);
}

int launch_nccl_id(void *blob, size_t cap, size_t *len, util_error *err)
{
    (void)blob;
    (void)cap;
    *len = 0;
    return no_cuda(err);
}

int launch_rank_execute(const plan_doc *d, const launch_work *w,
                        const launch_rank_run *r, launch_boot *b,
                        launch_rank_result *out, util_error *err)
{
    (void)d;
    (void)w;
    (void)r;
    (void)b;
    memset(out, 0, sizeof *out);
    return no_cuda(err);
}
#endif

static int code_of(const util_error *err)
{
    switch (err->code) {
    case UTIL_EIO:
    case UTIL_ETIMEOUT:
        return LAUNCH_EXIT_PEER;
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

/* "hetplan-launch: rank R: msg" (msg may name its rank already). */
static int fail(int rank, const util_error *err)
{
    char buf[1024];

    util_error_format(err, buf, sizeof buf);
    if (rank < 0 || strncmp(buf, "rank ", 5) == 0)
        fprintf(stderr, "hetplan-launch: %s\n", buf);
    else
        fprintf(stderr, "hetplan-launch: rank %d: %s\n", rank, buf);
    return code_of(err);
}

/* fail() for an error while reading the plan and the work of a rank: a
 * plan file that cannot be read is a bad input (3), not a lost peer. */
static int fail_load(int rank, const util_error *err)
{
    int code = fail(rank, err);

    return err->code == UTIL_EIO ? LAUNCH_EXIT_INPUT : code;
}

int launch_cli_check_options(const launch_options *o, const plan_doc *d)
{
    const fmt_strategy *s;
    int ranks;

    if (o->strategy < 1 || o->strategy > d->n) {
        fprintf(stderr, "hetplan-launch: option '--strategy' expects 1..%d (the "
                        "strategies of '%s'), got %d\ntry 'hetplan-launch --help'\n",
                d->n, o->plan, o->strategy);
        return LAUNCH_EXIT_USAGE;
    }
    s = &d->s[o->strategy - 1];
    ranks = s->tp * s->dp * s->pp;
    if (o->spawn > 0 && o->spawn != ranks) {
        fprintf(stderr, "hetplan-launch: option '--spawn' expects the %d ranks of "
                        "strategy %d of '%s' (tp %d x dp %d x pp %d), got %d\n"
                        "try 'hetplan-launch --help'\n",
                ranks, o->strategy, o->plan, s->tp, s->dp, s->pp, o->spawn);
        return LAUNCH_EXIT_USAGE;
    }
    if (o->rank >= ranks) {
        fprintf(stderr, "hetplan-launch: option '--rank' expects 0..%d (the ranks "
                        "of strategy %d of '%s'), got %d\ntry 'hetplan-launch "
                        "--help'\n", ranks - 1, o->strategy, o->plan, o->rank);
        return LAUNCH_EXIT_USAGE;
    }
    return LAUNCH_EXIT_OK;
}

/* The plan and the work of its strategy; *usage set to an exit code when
 * an option does not fit the plan (after the message). */
static int load(const launch_options *o, plan_doc *d, launch_work *w, int rank,
                int *usage, util_error *err)
{
    int rc;

    *usage = LAUNCH_EXIT_OK;
    if ((rc = plan_load_plan(o->plan, d, err)) != UTIL_OK)
        return rc;
    if ((*usage = launch_cli_check_options(o, d)) != LAUNCH_EXIT_OK)
        return UTIL_EINVAL;
    if (d->digest_mismatch && !o->quiet && rank <= 0) {
        char why[1400];
        plan_changed_inputs(d, why, sizeof why);
        fprintf(stderr, "hetplan-launch: warning: %s\n", why);
    }
    return launch_work_of(d, o->strategy - 1, -1, w, err);
}

int launch_cli_dry_run(const launch_options *o, const launch_env *env)
{
    plan_doc d;
    launch_work w;
    launch_dry_input in;
    util_error err;
    char *text = NULL;
    int code = LAUNCH_EXIT_OK, warn = 0, usage;

    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&err, 0, sizeof err);
    launch_dry_input_init(&in);
    in.order = o->order;
    in.local_gpus = launch_local_gpus();
    if (o->spawn > 0) {
        in.world = in.local_world = o->spawn;
    } else if (env->present) {
        in.world = env->world;
        in.local_world = env->local_world;
        in.only = env->rank;
        in.local_first = env->rank - env->local_rank;
    } else if (o->rank >= 0) {
        in.only = o->rank; /* --rank R: that rank only */
    }
    {
        static char names[64][64];
        static const char *ptr[64];
        int i, n = launch_local_gpu_names(names, 64);
        for (i = 0; i < n; i++)
            ptr[i] = names[i];
        if (n > 0 && n == in.local_gpus)
            in.local_names = ptr;
    }
    if (load(o, &d, &w, env->present ? env->rank : 0, &usage, &err) != UTIL_OK ||
        launch_dry_run(&d, &w, &in, &text, &warn, &err) != UTIL_OK) {
        code = usage != LAUNCH_EXIT_OK ? usage : fail_load(-1, &err);
        goto done;
    }
    if (!o->quiet)
        fputs(text, stdout);
done:
    free(text);
    launch_work_free(&w);
    plan_doc_free(&d);
    return code;
}

int launch_cli_spawn(int argc, char **argv, const launch_options *o)
{
    launch_spawn_result res;
    util_error err;
    char **child, exe[4096];
    ssize_t n;
    int i, k = 0, code = LAUNCH_EXIT_OK;

    memset(&err, 0, sizeof err);
    {
        /* the world must fit the plan: say so once, not from every rank */
        plan_doc d;
        launch_work w;
        int pr, rc, usage;
        memset(&d, 0, sizeof d);
        memset(&w, 0, sizeof w);
        rc = load(o, &d, &w, 0, &usage, &err);
        if (rc == UTIL_OK)
            rc = launch_plan_rank(&d.cluster, &d.s[w.strategy], o->order, 0, o->spawn, &pr,
                                  &err);
        launch_work_free(&w);
        plan_doc_free(&d);
        if (rc != UTIL_OK)
            return usage != LAUNCH_EXIT_OK ? usage : fail_load(-1, &err);
    }
    child = calloc((size_t)argc + 1, sizeof *child);
    if (!child) {
        fprintf(stderr, "hetplan-launch: out of memory\n");
        return LAUNCH_EXIT_INTERNAL;
    }
    for (i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--spawn") == 0) {
            i++; /* and its value */
            continue;
        }
        if (strncmp(argv[i], "--spawn=", 8) == 0)
            continue;
        child[k++] = argv[i];
    }
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0)
        exe[n] = '\0';
    else
        snprintf(exe, sizeof exe, "%s", argv[0]);
    if (!o->quiet && o->verbose)
        fprintf(stderr, "hetplan-launch: starting %d ranks on this machine\n", o->spawn);
    if (launch_spawn(exe, child, o->spawn, o->timeout_s + 15.0, &res, &err) != UTIL_OK) {
        free(child);
        return fail(-1, &err);
    }
    free(child);
    if (res.first_failed >= 0) {
        int c = res.status[res.first_failed];
        int others = 0;
        fprintf(stderr, "hetplan-launch: rank %d failed first (%s %d)", res.first_failed,
                c > 128 ? "signal" : "exit code", c > 128 ? c - 128 : c);
        for (i = 0; i < res.n; i++)
            if (i != res.first_failed && res.status[i] != 0)
                fprintf(stderr, "%s rank %d (%s %d)", others++ ? "," : "; then", i,
                        res.status[i] > 128 ? "signal" : "exit code",
                        res.status[i] > 128 ? res.status[i] - 128 : res.status[i]);
        fprintf(stderr, "%s\n", res.killed ? "; the launcher ended the rest" : "");
        code = c > 0 && c < 128 ? c : LAUNCH_EXIT_INTERNAL;
    }
    launch_spawn_result_free(&res);
    return code;
}

static void stuck(const char *msg)
{
    fprintf(stderr, "hetplan-launch: %s\n", msg);
    fflush(stderr);
    _exit(LAUNCH_EXIT_PEER);
}

static double gib(double b)
{
    return b / 1073741824.0;
}

/* Rank 0: the merged result, on stdout and in the trial file. */
static int report_ranks(const launch_options *o, const plan_doc *d, const launch_work *w,
                        const launch_rank_result *all, int n)
{
    launch_measure *meas = calloc((size_t)w->pp, sizeof *meas);
    launch_trial t;
    util_error err;
    char *text = NULL, *full = NULL;
    double used = 0.0, pred = 0.0, added = 0.0;
    int i, code = LAUNCH_EXIT_OK;

    memset(&t, 0, sizeof t);
    memset(&err, 0, sizeof err);
    if (!meas || launch_merge_ranks(d, w, all, n, meas, &t, &err) != UTIL_OK) {
        code = meas ? fail(0, &err) : LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    text = launch_trial_json(d, w, meas, &t, NULL, o->iterations);
    full = text ? launch_ranks_json(text, all, n) : NULL;
    if (!full) {
        fprintf(stderr, "hetplan-launch: out of memory\n");
        code = LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    if (o->output && util_write_file_atomic(o->output, full, &err) != UTIL_OK) {
        fail(0, &err);
        code = LAUNCH_EXIT_OUTPUT;
        goto done;
    }
    if (o->quiet)
        goto done;
    if (o->json) {
        printf("%s\n", full);
        goto done;
    }
    printf("plan '%s', strategy %d: tp %d, dp %d, pp %d, mbs %d, %d micro-batches; "
           "%d ranks over NCCL\n", d->path, w->strategy + 1, w->tp, w->dp, w->pp, w->mbs,
           w->gas, n);
    printf("%4s %5s %5s %-22s %9s %8s %8s %8s %8s %8s %9s %9s\n", "rank", "plan", "stage",
           "GPU", "iter (ms)", "fwd", "bwd", "TP", "p2p", "DP", "mem (GiB)", "predicted");
    for (i = 0; i < n; i++) {
        const launch_rank_result *r = &all[i];
        if (r->plan_rank < 0) {
            printf("%4d %5s (idle)\n", r->rank, "-");
            continue;
        }
        printf("%4d %5d %5d %-22.22s %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %9.2f %9.2f\n",
               r->rank, r->plan_rank, r->stage, r->gpu, r->iter_s * 1e3, r->fwd_s * 1e3,
               r->bwd_s * 1e3, r->tp_s * 1e3, r->p2p_s * 1e3, r->dp_s * 1e3,
               gib(r->mem_used - r->mem_base), gib(r->mem_predicted));
        if (r->mem_used > used)
            used = r->mem_used;
        if (r->mem_used - r->mem_base > added)
            added = r->mem_used - r->mem_base;
        if (r->mem_predicted > pred)
            pred = r->mem_predicted;
    }
    printf("iteration: measured %.4f s (slowest rank's median), predicted %.4f s (plan), "
           "%.4f s (simulator on the measured passes); measured / predicted = %.3f\n",
           t.measured_s, t.predicted_s, t.composed_s,
           t.predicted_s > 0 ? t.measured_s / t.predicted_s : 0.0);
    printf("memory: largest rank %.2f GiB added by the launcher (%.2f GiB in use on its "
           "GPU), predicted %.2f GiB; measured / predicted = %.3f\n", gib(added), gib(used),
           gib(pred), pred > 0 ? added / pred : 0.0);
    if (o->output)
        printf("trial written to '%s'\n", o->output);
done:
    free(text);
    free(full);
    free(meas);
    launch_trial_free(&t);
    return code;
}

int launch_cli_rank(const launch_options *o, const launch_env *env)
{
    plan_doc d;
    launch_work w;
    launch_boot_params bp;
    launch_boot *b = NULL;
    launch_rank_info info;
    launch_rank_run run;
    launch_rank_result res, *all = NULL;
    util_error err, gerr;
    unsigned char blob[LAUNCH_BOOT_MAX];
    size_t blen = 0, len;
    int code = LAUNCH_EXIT_OK, pr = -1, gpu_rc, i, rank = env->rank, usage;

    memset(&d, 0, sizeof d);
    memset(&w, 0, sizeof w);
    memset(&err, 0, sizeof err);
    memset(&gerr, 0, sizeof gerr);
    memset(&info, 0, sizeof info);
    if (load(o, &d, &w, rank, &usage, &err) != UTIL_OK ||
        launch_plan_rank(&d.cluster, &d.s[w.strategy], o->order, rank, env->world, &pr,
                         &err) != UTIL_OK) {
        code = usage != LAUNCH_EXIT_OK ? usage : fail_load(rank, &err);
        goto done;
    }
    info.plan_rank = pr;
    info.local_rank = env->local_rank;
    info.pid = (int)getpid();
    gethostname(info.host, sizeof info.host - 1);
    gpu_rc = launch_rank_gpu(env->local_rank, &info, &gerr);
    if (rank == 0 && gpu_rc == UTIL_OK)
        gpu_rc = launch_nccl_id(blob, sizeof blob, &blen, &gerr);
    launch_boot_params_init(&bp);
    bp.addr = env->addr;
    bp.port = env->port;
    bp.rank = rank;
    bp.world = env->world;
    bp.timeout_s = o->timeout_s;
    if (launch_boot_create(&bp, blob, blen, &info, sizeof info, &b, &err) != UTIL_OK) {
        code = fail(rank, &err);
        goto done;
    }
    if (gpu_rc != UTIL_OK) {
        launch_boot_abort(b, gerr.msg);
        code = fail(rank, &gerr);
        goto done;
    }
    /* every rank's GPU, before any collective: who has none, which type */
    for (i = 0; i < env->world; i++) {
        const launch_rank_info *p = launch_boot_info(b, i, &len);
        if (!p || len != sizeof *p || !p->gpu_ok) {
            fprintf(stderr, "hetplan-launch: rank %d: rank %d has no usable GPU%s\n", rank, i,
                    p && len == sizeof *p ? "" : " (a different build)");
            code = LAUNCH_EXIT_PEER;
            goto done;
        }
        if (rank == 0 && p->plan_rank >= 0 && !o->quiet) {
            const fmt_device_type *dt =
                fmt_device(&d.cluster, d.s[w.strategy].ranks[p->plan_rank]);
            if (dt && !strstr(p->gpu, dt->name) && o->verbose)
                fprintf(stderr, "hetplan-launch: note: rank %d runs on '%s' (%s), the plan "
                                "assumed '%s'\n", i, p->gpu, p->host, dt->name);
        }
    }
    memset(&run, 0, sizeof run);
    run.rank = rank;
    run.world = env->world;
    run.plan_rank = pr;
    run.local_rank = env->local_rank;
    run.warmup = o->warmup;
    run.iterations = o->iterations;
    run.timeout_s = o->timeout_s;
    run.on_stuck = stuck;
    if (launch_rank_execute(&d, &w, &run, b, &res, &err) != UTIL_OK) {
        code = fail(rank, &err);
        goto done;
    }
    if (rank == 0 && !(all = calloc((size_t)env->world, sizeof *all))) {
        launch_boot_abort(b, "out of memory");
        fprintf(stderr, "hetplan-launch: rank 0: out of memory\n");
        code = LAUNCH_EXIT_INTERNAL;
        goto done;
    }
    /* a working rank 0 waits --timeout for the others' reports; the others
       (and an idle rank 0) wait for the run: a lost rank still ends them */
    if (launch_boot_gather(b, &res, sizeof res, all,
                           rank == 0 && pr >= 0 ? o->timeout_s : 86400.0, &err) != UTIL_OK) {
        code = fail(rank, &err);
        goto done;
    }
    if (rank == 0)
        code = report_ranks(o, &d, &w, all, env->world);
done:
    free(all);
    launch_boot_destroy(b);
    launch_work_free(&w);
    plan_doc_free(&d);
    return code;
}
