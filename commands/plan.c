/* commands/plan.c: planner plan (the default command); the options, inputs
 * and output that planner evaluate shares with it; the profile loading that
 * planner calibrate shares. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

const char cmd_plan_usage[] =
    "usage: planner [plan] --cluster FILE --model FILE [options]\n"
    "       planner evaluate --cluster FILE --model FILE --strategies FILE [options]\n"
    "       planner calibrate --cluster FILE --model FILE --trials FILE [options]\n"
    "       planner decentralized --cluster FILE [options]\n"
    "       planner whatif --plan FILE --slow RANK:FACTOR ... [options]\n"
    "       planner replan --plan FILE --frozen K [options]\n"
    "       planner export --plan FILE --to megatron|deepspeed|torchrun|hostfile [options]\n"
    "       planner report --plan FILE --output FILE.svg|FILE.html [options]\n"
    "       planner COMMAND --help   (options of one command)\n"
    "       planner --help | --version\n"
    "\n"
    "Finds tensor/pipeline/data-parallel strategies for training a model on a\n"
    "heterogeneous GPU cluster and predicts their iteration time and memory.\n"
    "\n"
    "inputs:\n"
    "  --cluster FILE         cluster description (docs/inputs.md)\n"
    "  --model FILE           model description: layer list or transformer shorthand\n"
    "  --profile FILE         measured per-layer times (hetplan-profile/1)\n"
    "  --amp-profile FILE[:KEY]  AMP's profiles.json, converted at load (KEY: gpt2)\n"
    "  --strategies FILE      strategies to score (evaluate only)\n"
    "options:\n"
    "  --global-batch N       global batch size (default: the model's training.global_batch)\n"
    "  --top-k K              strategies kept in the plan (default 5)\n"
    "  --method amp|megatron  search: AMP Algorithm 1 (default) or the Megatron heuristic\n"
    "  --placement RULE       all (default), megatron or fastest-first\n"
    "  --max-tp N             largest tensor-parallel degree tried\n"
    "  --max-mbs N            largest micro-batch size tried\n"
    "  --schedule 1f1b|gpipe  pipeline schedule (default 1f1b)\n"
    "  --fidelity analytic|simulate  iteration time from AMP's formula (default)\n"
    "                         or the schedule simulator (plan: re-ranks the best)\n"
    "  --zero N               ZeRO stage 0-3 for the memory model (default 0)\n"
    "  --recompute            assume activation recomputation\n"
    "  --precision fp16|bf16|fp32  training precision (default: the model's\n"
    "                         training.precision, else fp16 mixed precision)\n"
    "  --param NAME=VALUE     override a cost-model constant (repeatable; see\n"
    "                         docs/cost-model.md), e.g. --param net_eff=0.8\n"
    "  --time-limit SECONDS   stop the search after SECONDS and keep the best\n"
    "                         strategies found so far (exit code 6, search.status\n"
    "                         \"time-limit\" in the plan)\n"
    "  --output FILE          write the plan JSON to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print search statistics on stderr\n"
    "  --help, --version\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid input file,\n"
    "  4 no strategy fits, 5 cannot write the output, 6 the time limit ended\n"
    "  the search (the best plan so far is written)\n";

/* Options that plan_option stores. */
enum {
    OPT_PARAM = 1, OPT_PRECISION, OPT_METHOD, OPT_PLACEMENT, OPT_SCHEDULE, OPT_FIDELITY,
    OPT_TIME_LIMIT
};

/* Store the value v of option id in the cmd_plan_opts ctx; exit code. */
static int plan_option(void *ctx, int id, const char *opt, const char *v)
{
    cmd_plan_opts *o = ctx;
    int r;

    (void)opt;
    switch (id) {
    case OPT_PARAM:
        return cmd_add_param(o->params, &o->nparams, v);
    case OPT_TIME_LIMIT:
        return cmd_parse_time_limit(NULL, v, &o->time_limit);
    case OPT_PRECISION:
        o->precision = fmt_precision_from_name(v);
        if (o->precision < 0)
            return cmd_usage_error(NULL, "option '--precision' expects fp16, bf16 or "
                                         "fp32, got '%s'", v);
        break;
    case OPT_METHOD:
        if (strcmp(v, "amp") == 0)
            o->method = SEARCH_METHOD_AMP;
        else if (strcmp(v, "megatron") == 0)
            o->method = SEARCH_METHOD_MEGATRON;
        else
            return cmd_usage_error(NULL, "option '--method' expects amp or megatron, "
                                         "got '%s'", v);
        break;
    case OPT_PLACEMENT:
        r = search_placement_from_name(v);
        if (strcmp(v, "all") == 0)
            o->placements = -1;
        else if (r >= 0)
            o->placements = 1 << r;
        else
            return cmd_usage_error(NULL, "option '--placement' expects all, megatron "
                                         "or fastest-first, got '%s'", v);
        break;
    case OPT_SCHEDULE:
        o->schedule_set = 1;
        if (strcmp(v, "1f1b") == 0)
            o->schedule = FMT_SCHED_1F1B;
        else if (strcmp(v, "gpipe") == 0)
            o->schedule = FMT_SCHED_GPIPE;
        else
            return cmd_usage_error(NULL, "option '--schedule' expects 1f1b or gpipe, "
                                         "got '%s'", v);
        break;
    default: /* OPT_FIDELITY */
        o->fidelity = cost_fidelity_from_name(v);
        if (o->fidelity < 0)
            return cmd_usage_error(NULL, "option '--fidelity' expects analytic or "
                                         "simulate, got '%s'", v);
    }
    return CMD_EXIT_OK;
}

/* Parse the options of plan or evaluate into o; exit code. */
static int plan_args(int argc, char **argv, int evaluate, cmd_plan_opts *o)
{
    const cmd_option table[] = {
        CMD_INPUT_OPTIONS(&o->in),
        CMD_STRING("--strategies", NULL, &o->strategies),
        CMD_INT("--global-batch", &o->global_batch, 1, INT_MAX / 2),
        CMD_INT("--top-k", &o->top_k, 1, 100000),
        CMD_INT("--max-tp", &o->max_tp, 1, 1 << 20),
        CMD_INT("--max-mbs", &o->max_mbs, 1, INT_MAX / 2),
        CMD_INT("--zero", &o->zero, 0, 3),
        CMD_SET("--recompute", NULL, &o->recompute, 1),
        CMD_CALL("--param", OPT_PARAM),
        CMD_CALL("--precision", OPT_PRECISION),
        CMD_CALL("--method", OPT_METHOD),
        CMD_CALL("--placement", OPT_PLACEMENT),
        CMD_CALL("--schedule", OPT_SCHEDULE),
        CMD_CALL("--fidelity", OPT_FIDELITY),
        CMD_CALL("--time-limit", OPT_TIME_LIMIT),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = cmd_plan_usage, .options = table, .version = 1,
                          .handle = plan_option, .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->top_k = 5;
    o->placements = -1;
    o->fidelity = -1;
    o->precision = -1;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if ((code = cmd_require_inputs(&o->in)) != CMD_EXIT_OK)
        return code;
    if (o->in.profile && o->in.amp_profile)
        return cmd_usage_error(NULL, "%s", "give either '--profile' or "
                                           "'--amp-profile', not both");
    if (evaluate && o->strategies == NULL)
        return cmd_usage_error(NULL, "%s", "evaluate needs '--strategies FILE'");
    if (!evaluate && o->strategies != NULL)
        return cmd_usage_error(NULL, "%s", "'--strategies' belongs to 'planner "
                                           "evaluate'");
    if (evaluate && o->time_limit > 0.0)
        return cmd_usage_error(NULL, "%s", "'--time-limit' bounds a search: "
                                           "'planner evaluate' scores the given "
                                           "strategies only");
    return CMD_EXIT_OK;
}

/* --amp-profile FILE[:KEY]: FILE into path; returns KEY ("gpt2" when
 * absent; points into arg or to a static string). */
static const char *amp_profile_split(const char *arg, char *path, size_t n)
{
    const char *key = "gpt2", *colon = strrchr(arg, ':');

    snprintf(path, n, "%s", arg);
    if (colon && colon[1] != '\0' && strchr(colon, '/') == NULL) {
        path[colon - arg] = '\0';
        key = colon + 1;
    }
    return key;
}

int cmd_load_profile(const cmd_input_opts *in, fmt_model *m, fmt_profile *prof,
                     char *path, size_t n, const char **amp_key, util_error *err)
{
    if (in->profile) {
        snprintf(path, n, "%s", in->profile);
        return fmt_load_profile(in->profile, m, prof, err);
    }
    if (in->amp_profile) {
        *amp_key = amp_profile_split(in->amp_profile, path, n);
        return fmt_profile_from_amp(path, *amp_key, m, prof, err);
    }
    return UTIL_OK;
}

/* Apply the --param options to r->cp; exit code. */
static int plan_params(cmd_plan_run *r, util_error *err)
{
    int i;

    for (i = 0; i < r->o.nparams; i++) {
        char name[64];
        double v;
        if (!cmd_split_param(r->o.params[i], name, sizeof name, &v)) {
            fprintf(stderr, "planner: option '--param %s' expects a number after '='\n",
                    r->o.params[i]);
            return CMD_EXIT_USAGE;
        }
        if (cost_params_set(&r->cp, name, v, err) != UTIL_OK) {
            char buf[512];
            util_error_format(err, buf, sizeof buf);
            fprintf(stderr, "planner: option '--param': %s\n", buf);
            return CMD_EXIT_USAGE;
        }
    }
    return CMD_EXIT_OK;
}

int cmd_plan_start(int argc, char **argv, int evaluate, cmd_plan_run *r)
{
    cmd_plan_opts *o = &r->o;
    util_error err;
    int code;

    memset(r, 0, sizeof *r);
    memset(&err, 0, sizeof err);
    r->t0 = cmd_seconds();
    code = plan_args(argc, argv, evaluate, o);
    if (code != CMD_EXIT_OK)
        return code;
    if (fmt_load_cluster(o->in.cluster, &r->c, &err) != UTIL_OK ||
        fmt_load_model(o->in.model, &r->m, &err) != UTIL_OK ||
        (o->precision >= 0 && /* --precision overrides training.precision */
         fmt_model_set_precision(&r->m, o->precision, &err) != UTIL_OK) ||
        cmd_load_profile(&o->in, &r->m, &r->prof, r->prof_path, sizeof r->prof_path,
                         &r->meta.profile_amp_key, &err) != UTIL_OK)
        return cmd_report_error(&err);
    if (o->in.profile || o->in.amp_profile)
        r->profile = &r->prof;
    if (o->global_batch == 0)
        o->global_batch = r->m.global_batch;
    if (o->global_batch == 0) {
        fprintf(stderr, "planner: no global batch: give '--global-batch N' or "
                        "training.global_batch in '%s'\n", o->in.model);
        return CMD_EXIT_USAGE;
    }
    if (cmd_digest_file(o->in.cluster, r->meta.cluster_digest, &err) != UTIL_OK ||
        cmd_digest_file(o->in.model, r->meta.model_digest, &err) != UTIL_OK)
        return cmd_report_error(&err);
    r->meta.cluster_path = o->in.cluster;
    r->meta.model_path = o->in.model;
    r->meta.profile_path = r->profile ? r->prof_path : NULL;
    if (r->profile &&
        cmd_digest_file(r->prof_path, r->meta.profile_digest, &err) != UTIL_OK)
        return cmd_report_error(&err);
    r->meta.global_batch = o->global_batch;

    cost_params_init(&r->cp);
    r->cp.calib = r->profile ? r->prof.calib : NULL; /* a calibrated profile */
    r->cp.schedule = o->schedule;
    r->cp.zero_stage = o->zero;
    r->cp.recompute = o->recompute;
    if (o->fidelity >= 0)
        r->cp.fidelity = o->fidelity;
    return plan_params(r, &err);
}

int cmd_plan_emit(cmd_plan_run *r, const fmt_strategy *s, const cost_result *rs,
                  int n)
{
    const cmd_output_opts *o = &r->o.out;
    char *json, *table = NULL;
    util_error err;
    int code = CMD_EXIT_OK;

    memset(&err, 0, sizeof err);
    if (r->cp.fidelity == COST_FIDELITY_SIMULATE && n > 0 &&
        cost_simulate(&r->c, &r->m, r->profile, &r->cp, &s[0], r->cp.overlap_dp,
                      &r->tl, &err) == UTIL_OK)
        r->meta.timeline = &r->tl; /* optional: none when it cannot be made */
    json = plan_to_json(&r->meta, &r->c, &r->m, &r->cp, s, rs, n);
    if (json == NULL)
        return cmd_out_of_memory();
    if (o->output && (code = cmd_write_file(o->output, json)) != CMD_EXIT_OK)
        goto done;
    if (o->quiet)
        goto done;
    if (o->json) {
        fputs(json, stdout);
        fputc('\n', stdout);
    } else {
        table = plan_to_table(&r->c, &r->m, s, rs, n, r->meta.global_batch);
        if (table == NULL) {
            code = cmd_out_of_memory();
            goto done;
        }
        fputs(table, stdout);
        if (o->output)
            printf("plan written to '%s'\n", o->output);
    }
done:
    if (code == CMD_EXIT_OK)
        code = cmd_flush_stdout();
    free(json);
    free(table);
    return code;
}

void cmd_plan_run_free(cmd_plan_run *r)
{
    cost_timeline_free(&r->tl);
    fmt_profile_free(&r->prof);
    fmt_model_free(&r->m);
    fmt_cluster_free(&r->c);
}

int cmd_plan(int argc, char **argv)
{
    cmd_plan_run r;
    search_params sp;
    search_result res;
    util_error err;
    fmt_strategy *ss = NULL;
    cost_result *rs = NULL;
    int i, code, rc, progress_drawn = 0;

    memset(&res, 0, sizeof res);
    memset(&err, 0, sizeof err);
    code = cmd_plan_start(argc, argv, 0, &r);
    if (code != CMD_EXIT_OK)
        goto done;
    search_params_init(&sp);
    sp.method = r.o.method;
    sp.global_batch = r.o.global_batch;
    sp.top_k = r.o.top_k;
    sp.max_tp = r.o.max_tp;
    sp.max_mbs = r.o.max_mbs;
    sp.time_limit_s = r.o.time_limit;
    if (r.o.placements >= 0)
        sp.placements = (unsigned)r.o.placements;
    if (!r.o.out.quiet && isatty(STDERR_FILENO)) { /* progress on a terminal only */
        sp.progress = cmd_progress_draw;
        sp.progress_ctx = &progress_drawn;
    }
    rc = search_plan(&r.c, &r.m, r.profile, &r.cp, &sp, &res, &err);
    cmd_progress_clear(&progress_drawn);
    if (rc != UTIL_OK) {
        code = cmd_report_error(&err);
        goto done;
    }
    ss = calloc((size_t)res.n, sizeof *ss);
    rs = calloc((size_t)res.n, sizeof *rs);
    if (ss == NULL || rs == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    for (i = 0; i < res.n; i++) {
        ss[i] = res.cands[i].s; /* shallow views; res keeps ownership */
        rs[i] = res.cands[i].r;
    }
    r.meta.method = r.o.method == SEARCH_METHOD_MEGATRON ? "megatron" : "amp";
    r.meta.evaluated = res.evaluated;
    r.meta.rejected_memory = res.rejected_memory;
    r.meta.elapsed_s = cmd_seconds() - r.t0;
    r.meta.timed_out = res.timed_out;
    r.meta.time_limit_s = r.o.time_limit;
    if (r.o.out.verbose)
        fprintf(stderr, "planner: %ld candidates scored, %ld rejected for memory, "
                        "%ld ruled out, %.3f s\n", res.evaluated,
                res.rejected_memory, res.rejected_other, r.meta.elapsed_s);
    code = cmd_plan_emit(&r, ss, rs, res.n);
    if (code == CMD_EXIT_OK && res.timed_out) {
        fprintf(stderr, "planner: note: time limit of %g s reached after %ld "
                        "candidates: the plan holds the best found so far\n",
                r.o.time_limit, res.evaluated);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    free(ss);
    free(rs);
    search_result_free(&res);
    cmd_plan_run_free(&r);
    return code;
}
