/* commands/plan.c: planner plan (the default command); the options, inputs
 * and output that planner evaluate shares with it; the profile loading that
 * planner calibrate shares. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
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
    "       planner inspect [--model FILE] [--cluster FILE] [--device NAME] [--catalogue]\n"
    "       planner COMMAND --help, planner help COMMAND  (options of one command)\n"
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
    "  --strategies FILE      strategies to score (evaluate only): at most 10000,\n"
    "                         strategies x GPUs and strategies x layers at most\n"
    "                         262144 each (docs/limits.md)\n";

/* The second half of the usage (C99 bounds one string literal). */
const char cmd_plan_usage_options[] =
    "options:\n"
    "  --global-batch N       global batch size (default: the model's training.global_batch)\n"
    "  --top-k K              strategies kept in the plan (default 5)\n"
    "  --method amp|megatron  search: AMP Algorithm 1 (default) or the Megatron heuristic\n"
    "  --placement HOW        anneal (default; also 'all'), rules, ga (annealing,\n"
    "                         then a genetic algorithm), megatron or fastest-first\n"
    "  --objective time|cost  minimise the iteration time (default) or its price\n"
    "                         (needs prices in the cluster file)\n"
    "  --memory-headroom PCT  keep PCT per cent of every GPU's memory free\n"
    "  --use-all              every GPU runs a rank (no idle devices)\n"
    "  --seed N               seed of the placement search (default 0)\n"
    "  --anneal-steps N       annealing moves per candidate, 0 = none (default 150)\n"
    "  --ga-population N      GA placements per generation (default 12)\n"
    "  --ga-generations N     GA generations (default 8)\n"
    "  --max-tp N             largest tensor-parallel degree tried\n"
    "  --max-mbs N            largest micro-batch size tried\n"
    "  --schedule 1f1b|gpipe  pipeline schedule (default 1f1b)\n"
    "  --fidelity analytic|simulate  iteration time from AMP's formula (default)\n"
    "                         or the schedule simulator (plan: re-ranks the best)\n"
    "  --zero N               ZeRO stage 0-3 (default: plan searches 0-3, evaluate 0)\n"
    "  --offload none|optimizer  optimizer state and step on the host (default: plan\n"
    "                         searches it where every node gives host_memory_gib;\n"
    "                         evaluate none)\n"
    "  --recompute            full activation recomputation (default: plan searches\n"
    "                         none, selective and full; evaluate none)\n"
    "  --recompute-level none|selective|full  fix the recomputation level\n"
    "  --sequence-parallel on|off  sequence parallelism (default: on where tp > 1)\n"
    "  --vpp N                model chunks per device, 1 = plain 1F1B (default:\n"
    "                         searched where the blocks and micro-batches allow)\n"
    "  --batch-tolerance PCT  plan may round the global batch by up to PCT percent\n"
    "                         to one that factors better (default 0: exact)\n"
    "  --precision fp16|bf16|fp32  training precision (default: the model's\n"
    "                         training.precision, else fp16 mixed precision)\n"
    "  --param NAME=VALUE     override a cost-model constant (docs/cost-model.md)\n"
    "  --time-limit SECONDS   stop the search after SECONDS, keep the best so far\n"
    "                         (evaluate: score no further strategy, keep those done)\n"
    "  --launcher T[@V]       only what megatron|deepspeed|torchrun[@V] runs exactly\n"
    "                         (evaluate: layer splits it runs, a note on the rest)\n"
    "  --output FILE          write the plan JSON to FILE (atomically)\n"
    "  --format table|json    what to print on stdout (default table)\n"
    "  --strict               unknown keys in input files are errors (exit 3)\n"
    "  --quiet                print nothing on success\n"
    "  --verbose              also print search statistics on stderr\n"
    "  --help, --version\n"
    "\n"
    "exit codes:\n"
    "  0 success, 1 internal error, 2 bad command line, 3 invalid input file,\n"
    "  4 no strategy fits, 5 cannot write the output,\n"
    "  6 'planner export' cannot express the plan exactly (see its --help),\n"
    "  7 the time limit ended the work early (the best so far is written)\n"
    "every option also takes the form --name=value\n";

/* Options that plan_option stores. */
enum {
    OPT_PARAM = 1, OPT_PRECISION, OPT_METHOD, OPT_PLACEMENT, OPT_SCHEDULE, OPT_FIDELITY,
    OPT_OBJECTIVE, OPT_HEADROOM,
    OPT_RECOMPUTE_LEVEL, OPT_SEQ_PAR, OPT_BATCH_TOL, OPT_OFFLOAD,
    OPT_TIME_LIMIT, OPT_LAUNCHER
};

int cmd_launcher_parse(const char *v, int *target, int *version)
{
    int ver = -1, code = cmd_target_parse("--launcher", v, 0, target, &ver);

    if (version != NULL)
        *version = ver < 0 ? EXPORT_VERSION_OLD : ver;
    return code;
}

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
    case OPT_LAUNCHER:
        o->launcher = v;
        return cmd_launcher_parse(v, NULL, NULL);
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
        o->placements = -1;
        o->placement_search = SEARCH_PSEARCH_ANNEAL;
        if (strcmp(v, "all") == 0)
            break;
        if (r >= 0)
            o->placements = 1 << r;
        else if ((o->placement_search = search_place_search_from_name(v)) < 0)
            return cmd_usage_error(NULL, "option '--placement' expects rules, anneal, "
                                         "ga, megatron or fastest-first, got '%s'", v);
        else if (o->placement_search != SEARCH_PSEARCH_ANNEAL)
            o->plan_only = 1;
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
    case OPT_OBJECTIVE:
        o->plan_only = 1;
        o->objective = search_objective_from_name(v);
        if (o->objective < 0)
            return cmd_usage_error(NULL, "option '--objective' expects time or cost, "
                                         "got '%s'", v);
        break;
    case OPT_HEADROOM: {
        char *end = NULL;
        double pct = strtod(v, &end);
        o->plan_only = 1;
        if (end == v || *end != '\0' || !(pct >= 0.0 && pct < 100.0))
            return cmd_usage_error(NULL, "option '--memory-headroom' expects a per "
                                         "cent from 0 to below 100, got '%s'", v);
        o->headroom = pct / 100.0;
        break;
    }
    case OPT_RECOMPUTE_LEVEL:
        o->recompute = fmt_recompute_from_name(v);
        if (o->recompute < 0)
            return cmd_usage_error(NULL, "option '--recompute-level' expects none, "
                                         "selective or full, got '%s'", v);
        break;
    case OPT_SEQ_PAR:
        if (strcmp(v, "on") == 0)
            o->seq_par = 1;
        else if (strcmp(v, "off") == 0)
            o->seq_par = 0;
        else
            return cmd_usage_error(NULL, "option '--sequence-parallel' expects on or "
                                         "off, got '%s'", v);
        break;
    case OPT_OFFLOAD:
        o->offload = fmt_offload_from_name(v);
        if (o->offload < 0)
            return cmd_usage_error(NULL, "option '--offload' expects none or "
                                         "optimizer, got '%s'", v);
        break;
    case OPT_BATCH_TOL: {
        char *end = NULL;
        double pct = strtod(v, &end);
        if (end == v || *end != '\0' || !(pct >= 0.0 && pct <= 50.0))
            return cmd_usage_error(NULL, "option '--batch-tolerance' expects a "
                                         "percentage from 0 to 50, got '%s'", v);
        o->batch_tolerance = pct / 100.0;
        break;
    }
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
        CMD_INT("--global-batch", &o->global_batch, 1, FMT_MAX_GLOBAL_BATCH),
        CMD_INT("--top-k", &o->top_k, 1, 100000),
        CMD_INT("--max-tp", &o->max_tp, 1, 1 << 20),
        CMD_INT("--max-mbs", &o->max_mbs, 1, INT_MAX / 2),
        CMD_INT("--zero", &o->zero, 0, 3),
        CMD_SET("--recompute", NULL, &o->recompute, FMT_RECOMPUTE_FULL),
        CMD_CALL("--recompute-level", OPT_RECOMPUTE_LEVEL),
        CMD_CALL("--sequence-parallel", OPT_SEQ_PAR),
        CMD_CALL("--offload", OPT_OFFLOAD),
        CMD_INT("--vpp", &o->vpp, 1, FMT_MAX_VPP),
        CMD_CALL("--batch-tolerance", OPT_BATCH_TOL),
        CMD_REPEAT("--param", OPT_PARAM),
        CMD_CALL("--precision", OPT_PRECISION),
        CMD_CALL("--method", OPT_METHOD),
        CMD_CALL("--placement", OPT_PLACEMENT),
        CMD_CALL("--schedule", OPT_SCHEDULE),
        CMD_CALL("--fidelity", OPT_FIDELITY),
        CMD_CALL("--objective", OPT_OBJECTIVE),
        CMD_CALL("--memory-headroom", OPT_HEADROOM),
        CMD_SET("--use-all", NULL, &o->use_all, 1),
        CMD_INT("--seed", &o->seed, 0, INT_MAX),
        CMD_INT("--anneal-steps", &o->anneal_steps, 0, 1000000),
        CMD_INT("--ga-population", &o->ga_population, 2, 10000),
        CMD_INT("--ga-generations", &o->ga_generations, 1, 100000),
        CMD_CALL("--time-limit", OPT_TIME_LIMIT),
        CMD_CALL("--launcher", OPT_LAUNCHER),
        CMD_OUTPUT_OPTIONS(&o->out),
        CMD_END};
    const cmd_parser p = {.usage = cmd_plan_usage, .usage_more = cmd_plan_usage_options,
                          .options = table, .version = 1,
                          .handle = plan_option, .ctx = o};
    int code;

    memset(o, 0, sizeof *o);
    o->top_k = 5;
    o->placements = -1;
    o->fidelity = -1;
    o->precision = -1;
    o->seed = -1;
    o->anneal_steps = -1;
    o->zero = -1;
    o->recompute = -1;
    o->seq_par = -1;
    o->offload = -1;
    if ((code = cmd_parse_options(&p, argc, argv)) != CMD_EXIT_OK)
        return code;
    if (o->use_all || o->seed >= 0 || o->anneal_steps >= 0 || o->ga_population > 0 ||
        o->ga_generations > 0)
        o->plan_only = 1;
    if (evaluate && o->plan_only)
        return cmd_usage_error(NULL, "%s", "'--objective', '--memory-headroom', "
                                           "'--use-all', '--seed', '--anneal-steps', "
                                           "'--ga-population', '--ga-generations' "
                                           "and '--placement rules|ga' belong to "
                                           "'planner plan'");
    if (evaluate && (o->vpp > 0 || o->seq_par >= 0 || o->batch_tolerance > 0.0))
        return cmd_usage_error(NULL, "%s", "'--vpp', '--sequence-parallel' and "
                                           "'--batch-tolerance' belong to 'planner "
                                           "plan': evaluate takes vpp and "
                                           "sequence_parallel from each strategy of "
                                           "the strategies file");
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

/* --vpp N > 1 against the model: interleaving splits the transformer
 * blocks into chunks of N, at least two stages of one chunk each, under
 * 1F1B; else a usage error saying which values the model admits. */
static int plan_check_vpp(const cmd_plan_run *r)
{
    char ok[160];
    size_t used = 0;
    int blocks = 0, l, v;

    if (r->o.vpp <= 1)
        return CMD_EXIT_OK;
    if (r->o.schedule_set && r->o.schedule != FMT_SCHED_1F1B)
        return cmd_usage_error(NULL, "option '--vpp %d' interleaves stages, which "
                                     "needs '--schedule 1f1b'", r->o.vpp);
    for (l = 0; l < r->m.nlayers; l++)
        blocks += r->m.layers[l].kind == FMT_KIND_TRANSFORMER;
    if (blocks % r->o.vpp == 0 && blocks / r->o.vpp >= 2)
        return CMD_EXIT_OK;
    ok[0] = '\0';
    for (v = 1; v <= blocks / 2 && v <= FMT_MAX_VPP && used + 16 < sizeof ok; v++)
        if (blocks % v == 0)
            used += (size_t)snprintf(ok + used, sizeof ok - used, "%s%d",
                                     used ? ", " : "", v);
    return cmd_usage_error(NULL, "option '--vpp' expects a chunk count that "
                                 "divides the %d transformer blocks of model '%s' "
                                 "into at least pp >= 2 chunks (one of %s), got %d",
                           blocks, r->m.name, used ? ok : "1", r->o.vpp);
}

/* An fp32 run that does not say whether its matrix multiplications use
 * TF32, on a cluster with TF32 units: say what the times assume (a factor
 * of about 8 on A100 and H100; the exports set it). */
static void plan_tf32_note(const cmd_plan_run *r)
{
    int i;

    if (r->o.out.quiet || r->m.dtype_bytes < 4 || r->m.tf32 != FMT_FLAG_FAMILY ||
        r->cp.tf32 >= 0)
        return;
    for (i = 0; i < r->c.ntypes; i++) {
        const fmt_device_type *t = &r->c.types[i];
        if (t->flops_tf32 > 0.0 || (t->flops_fp32 <= 0.0 && t->flops_bf16 > 0.0))
            break;
    }
    if (i < r->c.ntypes)
        fprintf(stderr, "planner: note: fp32 matrix multiplications are taken "
                "to run on TF32 tensor cores, as NGC containers run them; for "
                "PyTorch's own default (fp32 units) state \"tf32\": false in "
                "the 'training' of '%s'\n", r->o.in.model);
}

/* Apply the --param options to r->cp; exit code. */
static int plan_params(cmd_plan_run *r, util_error *err)
{
    int i;

    for (i = 0; i < r->o.nparams; i++) {
        char name[64];
        double v;
        if (!cmd_split_param(r->o.params[i], name, sizeof name, &v)) {
            return cmd_usage_error(NULL, "option '--param %s' expects a number "
                                         "after '='", r->o.params[i]);
        }
        if (cost_params_set(&r->cp, name, v, err) != UTIL_OK) {
            char buf[512];
            util_error_format(err, buf, sizeof buf);
            return cmd_usage_error(NULL, "option '--param': %s", buf);
        }
    }
    return CMD_EXIT_OK;
}

/* A plan never uses a precision a device lacks: the search leaves such
 * devices idle; when no device (with --use-all, not every device) trains
 * in the model's precision, plan in the one search_precision_fallback
 * picks and say so on stderr and in settings.precision_note. */
static int plan_precision_fallback(cmd_plan_run *r, util_error *err)
{
    int prec = fmt_model_precision(&r->m);
    int fb = search_precision_fallback(&r->c, prec, r->o.use_all);
    char lack[200];

    if (fb == prec)
        return UTIL_OK;
    search_precision_lacking(&r->c, prec, lack, sizeof lack);
    if (r->o.use_all)
        snprintf(r->precision_note, sizeof r->precision_note, "planned in %s "
                 "instead of %s: '--use-all' runs a rank on every device, and %.180s",
                 fmt_precision_name(fb), fmt_precision_name(prec), lack);
    else
        snprintf(r->precision_note, sizeof r->precision_note, "planned in %s "
                 "instead of %s: no device of the cluster trains in %s (%.180s)",
                 fmt_precision_name(fb), fmt_precision_name(prec),
                 fmt_precision_name(prec), lack);
    r->meta.requested_precision = fmt_precision_name(prec);
    r->meta.precision_note = r->precision_note;
    if (!r->o.out.quiet)
        fprintf(stderr, "planner: note: %s\n", r->precision_note);
    return fmt_model_set_precision(&r->m, fb, err);
}

int cmd_plan_check_precision(const cmd_plan_run *r, const fmt_strategy *s, int n)
{
    int prec = fmt_model_precision(&r->m), i, k;

    for (i = 0; i < n; i++)
        for (k = 0; k < s[i].tp * s[i].dp * s[i].pp; k++) {
            int node = r->c.device_node[s[i].ranks[k]];
            const fmt_device_type *dt = &r->c.types[r->c.nodes[node].type];
            if (fmt_device_supports(dt, prec))
                continue;
            fprintf(stderr, "planner: %s: strategies[%d]: rank %d runs on node "
                            "'%s', whose '%s' devices cannot train in %s: give "
                            "'--precision %s' or leave that node out\n",
                    r->o.strategies, i, k, r->c.nodes[node].name, dt->name,
                    fmt_precision_name(prec),
                    fmt_device_supports(dt, FMT_PREC_FP16) ? "fp16" : "fp32");
            return CMD_EXIT_INPUT;
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
    if (cmd_load_cluster(o->in.cluster, &r->c, &err) != UTIL_OK ||
        fmt_load_model(o->in.model, &r->m, &err) != UTIL_OK ||
        (o->precision >= 0 && /* --precision overrides training.precision */
         fmt_model_set_precision(&r->m, o->precision, &err) != UTIL_OK) ||
        (!evaluate && plan_precision_fallback(r, &err) != UTIL_OK) ||
        cmd_load_profile(&o->in, &r->m, &r->prof, r->prof_path, sizeof r->prof_path,
                         &r->meta.profile_amp_key, &err) != UTIL_OK)
        return cmd_report_error(&err);
    if (o->in.profile || o->in.amp_profile)
        r->profile = &r->prof;
    if (o->global_batch == 0)
        o->global_batch = r->m.global_batch;
    if (o->global_batch == 0) {
        return cmd_usage_error(NULL, "no global batch: give '--global-batch N' or "
                                     "training.global_batch in '%s'", o->in.model);
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

    cmd_warnings_flush(); /* before a search that may take long */
    if ((code = plan_check_vpp(r)) != CMD_EXIT_OK)
        return code;
    cost_params_init(&r->cp);
    r->cp.calib = r->profile ? r->prof.calib : NULL; /* a calibrated profile */
    r->cp.schedule = o->schedule;
    r->cp.zero_stage = o->zero >= 0 ? o->zero : 0;
    r->cp.offload = o->offload >= 0 ? o->offload : FMT_OFFLOAD_NONE;
    r->cp.recompute = o->recompute >= 0 ? o->recompute : FMT_RECOMPUTE_NONE;
    if (o->fidelity >= 0)
        r->cp.fidelity = o->fidelity;
    if ((code = plan_params(r, &err)) == CMD_EXIT_OK)
        plan_tf32_note(r);
    return code;
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
        free(table);
        table = NULL;
        if (n > 0) { /* the devices #1 leaves idle and why, its price */
            table = plan_devices_text(&r->c, &s[0], &rs[0], r->meta.idle_reasons
                                                              ? r->meta.idle_reasons[0]
                                                              : NULL);
            if (table == NULL) {
                code = cmd_out_of_memory();
                goto done;
            }
            fputs(table, stdout);
        }
        if (r->meta.advice_batch > 0)
            printf("nearby batch: global batch %d trains %.1f%% more samples "
                   "per second than %d\n", r->meta.advice_batch,
                   100.0 * (r->meta.advice_speedup - 1.0), r->meta.global_batch);
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

/* --launcher: the search keeps to what the target expresses (the
 * exporter's own capability table); exit code. */
static int plan_launcher(cmd_plan_run *r, search_params *sp, int *target,
                         int *version)
{
    util_error err;
    int code = cmd_plan_launcher(r, &sp->launcher, target, version);

    memset(&err, 0, sizeof err);
    if (code != CMD_EXIT_OK)
        return code;
    if (search_launcher_params(sp, &r->cp, &err) != UTIL_OK) {
        char buf[400];
        util_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "planner: option '--launcher %s': %s\n", r->o.launcher, buf);
        return CMD_EXIT_USAGE;
    }
    return CMD_EXIT_OK;
}

/* Keep the strategies of res that the target exports exactly, checked by
 * the exporter itself (the search's constraints make that all of them;
 * this keeps the promise whatever path a candidate took); exit code, 6
 * when none is left. */
static int plan_launcher_keep(cmd_plan_run *r, int target, int version,
                              search_result *res)
{
    char first[600] = "", why[600];
    int i, kept = 0, dropped = 0;

    for (i = 0; i < res->n; i++) {
        if (!cmd_launcher_refusal(r, target, version, &res->cands[i].s, why,
                                  sizeof why)) {
            res->cands[kept++] = res->cands[i];
            continue;
        }
        if (dropped++ == 0)
            snprintf(first, sizeof first, "%s", why);
        fmt_strategy_free(&res->cands[i].s);
        cost_result_free(&res->cands[i].r);
    }
    res->n = kept;
    if (kept == 0) {
        fprintf(stderr, "planner: cannot express: %s\n", first);
        fprintf(stderr, "planner: no strategy found that %s %s runs exactly\n",
                export_target_name(target), export_version_name(target, version));
        return CMD_EXIT_REFUSED;
    }
    if (dropped > 0 && !r->o.out.quiet)
        fprintf(stderr, "planner: note: %d strateg%s left out: %s %s cannot express "
                        "them (first: %s)\n", dropped, dropped > 1 ? "ies" : "y",
                export_target_name(target), export_version_name(target, version), first);
    return CMD_EXIT_OK;
}

int cmd_plan(int argc, char **argv)
{
    cmd_plan_run r;
    search_params sp;
    search_result res;
    util_error err;
    fmt_strategy *ss = NULL;
    cost_result *rs = NULL;
    const char **why = NULL;
    int i, code, rc, progress_drawn = 0, target = -1, version = 0;
    char batch_note[256];

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
    sp.objective = r.o.objective;
    sp.memory_headroom = r.o.headroom;
    sp.use_all = r.o.use_all;
    sp.seed = r.o.seed > 0 ? (uint64_t)r.o.seed : 0;
    sp.anneal_steps = r.o.anneal_steps < 0 ? 0 : r.o.anneal_steps > 0 ? r.o.anneal_steps : -1;
    sp.recompute = r.o.recompute;
    sp.zero = r.o.zero;
    sp.offload = r.o.offload;
    sp.seq_par = r.o.seq_par;
    sp.vpp = r.o.vpp;
    sp.batch_tolerance = r.o.batch_tolerance;
    sp.placement_search = r.o.placement_search;
    sp.ga_population = r.o.ga_population;
    sp.ga_generations = r.o.ga_generations;
    sp.cluster_file = r.o.in.cluster;
    sp.model_file = r.o.in.model;
    if (r.o.launcher != NULL &&
        (code = plan_launcher(&r, &sp, &target, &version)) != CMD_EXIT_OK)
        goto done;
    if (!r.o.out.quiet && isatty(STDERR_FILENO)) { /* progress on a terminal only */
        sp.progress = cmd_progress_draw;
        sp.progress_ctx = &progress_drawn;
    }
    rc = search_plan_devices(&r.c, &r.m, r.profile, &r.cp, &sp, &res, &err);
    cmd_progress_clear(&progress_drawn);
    if (rc != UTIL_OK) {
        char lack[200];
        code = cmd_report_error(&err);
        if (rc == UTIL_EINFEASIBLE && !sp.use_all &&
            search_precision_lacking(&r.c, fmt_model_precision(&r.m), lack,
                                     sizeof lack) > 0)
            fprintf(stderr, "planner: note: only the devices that train in %s "
                            "were searched (%s); '--precision fp16' can use them\n",
                    fmt_precision_name(fmt_model_precision(&r.m)), lack);
        goto done;
    }
    if (res.global_batch > 0)
        r.meta.global_batch = res.global_batch;
    if (target >= 0 &&
        (code = plan_launcher_keep(&r, target, version, &res)) != CMD_EXIT_OK)
        goto done;
    ss = calloc((size_t)res.n + 1, sizeof *ss);
    rs = calloc((size_t)res.n + 1, sizeof *rs);
    why = calloc((size_t)res.n + 1, sizeof *why);
    if (ss == NULL || rs == NULL || why == NULL) {
        code = cmd_out_of_memory();
        goto done;
    }
    for (i = 0; i < res.n; i++) {
        ss[i] = res.cands[i].s; /* shallow views; res keeps ownership */
        rs[i] = res.cands[i].r;
        why[i] = res.cands[i].idle_reason;
    }
    r.meta.idle_reasons = why;
    r.meta.objective = search_objective_name(sp.objective);
    r.meta.memory_headroom = sp.memory_headroom;
    r.meta.subsets = res.subsets;
    r.meta.anneal_moves = res.anneal_moves;
    r.meta.seed = (unsigned long)sp.seed;
    if (res.global_batch > 0 && res.global_batch != sp.global_batch) {
        /* rounded within --batch-tolerance: say which batch and why */
        if (res.exact_samples_s > 0.0)
            snprintf(batch_note, sizeof batch_note, "global batch %d used instead "
                     "of %d (within --batch-tolerance): %.1f%% more samples per "
                     "second", res.global_batch, sp.global_batch,
                     100.0 * (res.global_batch / res.cands[0].r.iter_s /
                              res.exact_samples_s - 1.0));
        else
            snprintf(batch_note, sizeof batch_note, "global batch %d used instead "
                     "of %d (within --batch-tolerance): no strategy runs the "
                     "exact batch", res.global_batch, sp.global_batch);
        if (!r.o.out.quiet)
            fprintf(stderr, "planner: note: %s\n", batch_note);
        r.meta.requested_batch = sp.global_batch;
        r.meta.batch_note = batch_note;
        r.meta.global_batch = res.global_batch;
    }
    if ((code = cmd_plan_advice(&r, &sp, &res)) != CMD_EXIT_OK)
        goto done;
    r.meta.method = r.o.method == SEARCH_METHOD_MEGATRON ? "megatron" : "amp";
    r.meta.evaluated = res.evaluated;
    r.meta.rejected_memory = res.rejected_memory;
    r.meta.elapsed_s = cmd_seconds() - r.t0;
    r.meta.timed_out = res.timed_out;
    r.meta.time_limit_s = r.o.time_limit;
    if (r.o.out.verbose)
        fprintf(stderr, "planner: %ld candidates scored, %ld rejected for memory, "
                        "%ld ruled out, %d device subsets, %ld annealing moves, "
                        "%.3f s\n", res.evaluated, res.rejected_memory,
                res.rejected_other, res.subsets, res.anneal_moves, r.meta.elapsed_s);
    {
        /* a plan lists every GPU and layer of each strategy: keep it
         * within what a plan read back may hold (formats.h) */
        int keep = res.n, most = FMT_MAX_STRATEGY_ENTRIES /
                                 (r.c.ndevices > r.m.nlayers ? r.c.ndevices : r.m.nlayers);
        if (most > FMT_MAX_STRATEGIES)
            most = FMT_MAX_STRATEGIES;
        if (keep > most && most >= 1) {
            keep = most;
            if (!r.o.out.quiet)
                fprintf(stderr, "planner: note: the plan holds the best %d of the %d "
                                "strategies kept: it lists the %d GPUs and %d layers "
                                "of each, at most %d of either in all (docs/limits.md)\n",
                        keep, res.n, r.c.ndevices, r.m.nlayers, FMT_MAX_STRATEGY_ENTRIES);
        }
        code = cmd_plan_emit(&r, ss, rs, keep);
    }
    if (code == CMD_EXIT_OK && res.timed_out) {
        fprintf(stderr, "planner: note: time limit of %g s reached after %ld "
                        "candidates: the plan holds the best found so far\n",
                r.o.time_limit, res.evaluated);
        code = CMD_EXIT_TIMEOUT;
    }
done:
    free(ss);
    free(rs);
    free(why);
    search_result_free(&res);
    cmd_plan_run_free(&r);
    return code;
}
