/* tests/test_export_targets.c: `planner export` (docs/export.md).
 *
 * Golden tests: the plans committed in tests/golden/ (made by the planner
 * from the shipped examples; plan-permuted.json by `planner evaluate` of
 * strategies-permuted.json) are exported by the real binary and every
 * file is compared byte for byte with tests/golden/<plan>.<target>/, files
 * reviewed by hand.  HETPLAN_UPDATE_GOLDEN=1 rewrites them instead.
 * Flag names are checked against the lists of the launcher versions that
 * docs/export.md names.  Library tests check the rank placement that the
 * torchrun lines realise, and the notes for what launchers cannot say. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "export.h"
#include "testutil.h"

#define GOLDEN HETPLAN_SOURCE_DIR "/tests/golden"
#define PATHN 4096

static char tmp_dir[1024];

/* Run the planner in dir with args; stdout/stderr into files; exit code. */
static int run_planner(const char *dir, const char *const *args,
                       const char *out_path, const char *err_path)
{
    pid_t pid = fork();
    int st;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *argv[32];
        int i, fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(dir) != 0)
            _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        argv[0] = strdup(HETPLAN_PLANNER);
        for (i = 0; args[i] && i < 30; i++)
            argv[i + 1] = strdup(args[i]);
        argv[i + 1] = NULL;
        execv(HETPLAN_PLANNER, argv);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Files of a directory (names, sorted by the caller's check). */
static int list_dir(const char *dir, char names[][64], int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL && n < max) {
        if (e->d_name[0] == '.')
            continue;
        if (strlen(e->d_name) < 64)
            memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
    }
    closedir(d);
    return n;
}

/* Export plan/target/strategy with the CLI into a fresh dir and compare
 * with tests/golden/<stem>.<target>[.s<k>]. */
static void golden_case(const char *plan, const char *target, const char *strategy)
{
    char out[2048], gdir[2048], so[PATHN], se[PATHN], stem[128], names[16][64];
    char gp[PATHN], op[PATHN];
    const char *args[12];
    int n = 0, rc, i, ng, no, update = getenv("HETPLAN_UPDATE_GOLDEN") != NULL;

    snprintf(stem, sizeof stem, "%.*s", (int)(strlen(plan) - 5), plan);
    snprintf(gdir, sizeof gdir, "%s/%s.%s%s%s", GOLDEN, stem + 5 /* "plan-" */,
             target, strategy ? ".s" : "", strategy ? strategy : "");
    snprintf(out, sizeof out, "%s/%s.%s%s", tmp_dir, stem, target,
             strategy ? strategy : "");
    snprintf(so, sizeof so, "%s.stdout", out);
    snprintf(se, sizeof se, "%s.stderr", out);
    args[n++] = "export";
    args[n++] = "--plan";
    args[n++] = plan;
    args[n++] = "--to";
    args[n++] = target;
    if (strategy) {
        args[n++] = "--strategy";
        args[n++] = strategy;
    }
    args[n++] = "--output";
    args[n++] = update ? gdir : out;
    args[n++] = "--quiet";
    args[n] = NULL;
    rc = run_planner(GOLDEN, args, so, se);
    ck_assert_msg(rc == 0, "export %s %s: exit %d: %s", plan, target, rc, tu_slurp(se));
    {
        char *e = tu_slurp(se);
        ck_assert_msg(e && e[0] == '\0', "export wrote on stderr: %s", e);
        free(e);
    }
    if (update)
        return;
    ng = list_dir(gdir, names, 16);
    ck_assert_msg(ng > 0, "no golden files in '%s' (HETPLAN_UPDATE_GOLDEN=1 makes them)", gdir);
    no = list_dir(out, names + 8, 8);
    ck_assert_int_eq(ng, no);
    for (i = 0; i < ng; i++) {
        char *g, *o;
        snprintf(gp, sizeof gp, "%s/%s", gdir, names[i]);
        snprintf(op, sizeof op, "%s/%s", out, names[i]);
        g = tu_slurp(gp);
        o = tu_slurp(op);
        ck_assert_msg(o != NULL, "'%s' was not written", op);
        ck_assert_msg(strcmp(g, o) == 0, "'%s' differs from golden '%s'", op, gp);
        free(g);
        free(o);
    }
}

START_TEST(golden_amp_het)
{
    golden_case("plan-amp-het.json", "megatron", NULL);
    golden_case("plan-amp-het.json", "deepspeed", NULL);
    golden_case("plan-amp-het.json", "torchrun", NULL);
    golden_case("plan-amp-het.json", "hostfile", NULL);
}
END_TEST

START_TEST(golden_mixed_llama)
{
    golden_case("plan-mixed-llama.json", "megatron", NULL);
    golden_case("plan-mixed-llama.json", "torchrun", NULL);
    golden_case("plan-mixed-llama.json", "deepspeed", NULL);
}
END_TEST

START_TEST(golden_megatron_even)
{
    golden_case("plan-megatron-345m.json", "megatron", NULL);
    golden_case("plan-megatron-345m.json", "deepspeed", NULL);
}
END_TEST

START_TEST(golden_permuted)
{
    golden_case("plan-permuted.json", "torchrun", "1");
    golden_case("plan-permuted.json", "deepspeed", "1");
    golden_case("plan-permuted.json", "torchrun", "2");
    golden_case("plan-permuted.json", "hostfile", "2");
}
END_TEST

/* ---- flag names of the named launcher versions ----------------------- */

/* Megatron-LM core_r0.9.0 (megatron/training/arguments.py) flags we may
 * emit, and torchrun's (PyTorch 2.4, torch/distributed/run.py). */
static const char *const megatron_flags[] = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--micro-batch-size", "--global-batch-size", "--num-layers",
    "--hidden-size", "--ffn-hidden-size", "--num-attention-heads",
    "--seq-length", "--max-position-embeddings", "--fp16", "--bf16",
    "--swiglu", "--normalization", "--position-embedding-type",
    "--disable-bias-linear", "--untie-embeddings-and-output-weights",
    "--use-distributed-optimizer", "--recompute-granularity",
    "--recompute-method", "--recompute-num-layers",
    /* documented placeholders in the usage comment */
    "--data-path", "--tokenizer-type", "--train-iters", "--lr", NULL};
static const char *const torchrun_flags[] = {
    "--nnodes", "--nproc-per-node", "--node-rank", "--master-addr",
    "--master-port", NULL};
/* DeepSpeed 0.14 launcher (deepspeed/launcher/runner.py) and the
 * arguments deepspeed.add_config_arguments adds to the training script. */
static const char *const deepspeed_flags[] = {
    "--hostfile", "--master_addr", "--master_port", "--deepspeed",
    "--deepspeed_config", NULL};
/* ds_config.json keys (DeepSpeed 0.14 runtime/constants.py, fp16, bf16,
 * zero config). */
static const char *const ds_keys[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu",
    "gradient_accumulation_steps", "fp16", "bf16", "enabled", "loss_scale",
    "initial_scale_power", "zero_optimization", "stage", "steps_per_print",
    "wall_clock_breakdown", NULL};

static int in_list(const char *const *list, const char *w)
{
    int i;

    for (i = 0; list[i]; i++)
        if (strcmp(list[i], w) == 0)
            return 1;
    return 0;
}

/* Every "--flag" token of text (comments included: they name flags too)
 * must be in one of the lists. */
static void check_flags(const char *text, const char *const *a,
                        const char *const *b, const char *file)
{
    const char *p = text;
    int seen = 0;

    while ((p = strstr(p, "--")) != NULL) {
        char w[64];
        int k = 0;
        if (p > text && (p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'))) {
            p += 2;
            continue;
        }
        while (k < 63 && (p[k] == '-' || p[k] == '_' || (p[k] >= 'a' && p[k] <= 'z') ||
                          (p[k] >= '0' && p[k] <= '9')))
            w[k] = p[k], k++;
        w[k] = '\0';
        p += k > 2 ? k : 2;
        if (k <= 2)
            continue;
        /* newer-version flags appear only inside NOTE comments */
        if (strncmp(w, "--decoder-", 10) == 0)
            continue;
        ck_assert_msg(in_list(a, w) || (b && in_list(b, w)),
                      "%s: flag '%s' is not one the named launcher version accepts",
                      file, w);
        seen++;
    }
    ck_assert_int_gt(seen, 0);
}

START_TEST(flags_are_known)
{
    char path[PATHN];
    char *t;

    snprintf(path, sizeof path, "%s/amp-het.megatron/megatron.sh", GOLDEN);
    t = tu_slurp(path);
    ck_assert_ptr_nonnull(t);
    check_flags(t, megatron_flags, torchrun_flags, path);
    free(t);
    snprintf(path, sizeof path, "%s/mixed-llama.megatron/megatron.sh", GOLDEN);
    t = tu_slurp(path);
    ck_assert_ptr_nonnull(t);
    check_flags(t, megatron_flags, torchrun_flags, path);
    free(t);
    snprintf(path, sizeof path, "%s/megatron-345m.megatron/megatron.sh", GOLDEN);
    t = tu_slurp(path);
    ck_assert_ptr_nonnull(t);
    check_flags(t, megatron_flags, torchrun_flags, path);
    free(t);
    snprintf(path, sizeof path, "%s/amp-het.torchrun/torchrun.sh", GOLDEN);
    t = tu_slurp(path);
    ck_assert_ptr_nonnull(t);
    check_flags(t, torchrun_flags, NULL, path);
    free(t);
    snprintf(path, sizeof path, "%s/amp-het.deepspeed/deepspeed.sh", GOLDEN);
    t = tu_slurp(path);
    ck_assert_ptr_nonnull(t);
    check_flags(t, deepspeed_flags, NULL, path);
    free(t);
}
END_TEST

START_TEST(ds_config_keys_are_known)
{
    const char *plans[] = {"amp-het", "mixed-llama", "megatron-345m"};
    char path[PATHN];
    size_t i;

    for (i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        char *t, *p;
        int keys = 0;
        snprintf(path, sizeof path, "%s/%s.deepspeed/ds_config.json", GOLDEN, plans[i]);
        t = tu_slurp(path);
        ck_assert_ptr_nonnull(t);
        for (p = strchr(t, '"'); p; p = strchr(p, '"')) {
            char *q = strchr(p + 1, '"');
            char key[64];
            ck_assert_ptr_nonnull(q);
            snprintf(key, sizeof key, "%.*s", (int)(q - p - 1), p + 1);
            ck_assert_msg(in_list(ds_keys, key), "%s: unknown key '%s'", path, key);
            keys++;
            p = q + 1;
        }
        ck_assert_int_ge(keys, 10);
        free(t);
    }
}
END_TEST

/* ---- library: hand-made clusters ------------------------------------- */

typedef struct fixture {
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
} fixture;

static void fixture_make(fixture *f, const char *cluster_json,
                         const char *model_json, int tp, int dp, int pp)
{
    util_error err;

    memset(f, 0, sizeof *f);
    ck_assert_msg(fmt_parse_cluster(cluster_json, "c.json", &f->c, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_msg(fmt_parse_model(model_json, "m.json", &f->m, &err) == UTIL_OK,
                  "%s", err.msg);
    cost_params_init(&f->p);
    ck_assert_int_eq(fmt_strategy_alloc(&f->s, tp, dp, pp), UTIL_OK);
}

static void fixture_free(fixture *f)
{
    fmt_strategy_free(&f->s);
    fmt_model_free(&f->m);
    fmt_cluster_free(&f->c);
}

static const char two_nodes[] =
    "{\"name\": \"two\", \"nodes\": ["
    "{\"name\": \"a\", \"device\": \"A100-80GB\", \"gpus\": 4, \"intra_gbps\": 2400, \"nic_gbps\": 200},"
    "{\"name\": \"b\", \"device\": \"V100\", \"gpus\": 4, \"intra_gbps\": 1200, \"nic_gbps\": 100}]}";
/* gpt2 shorthand: embedding, 16 blocks, final norm, head = 19 layers */
static const char gpt16[] =
    "{\"name\": \"g16\", \"training\": {\"global_batch\": 64, \"precision\": \"bf16\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
    " \"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";

/* Layer index of block b (0-based) in gpt16: after the embedding. */
static void set_blocks(fixture *f, const int *blocks)
{
    int j, at = 1;

    f->s.bounds[0] = 0;
    for (j = 0; j < f->s.pp; j++) {
        at += blocks[j];
        f->s.bounds[j + 1] = at;
    }
    f->s.bounds[f->s.pp] = f->m.nlayers;
}

static int has_note(const export_result *e, const char *needle)
{
    int i;

    for (i = 0; i < e->nnotes; i++)
        if (strstr(e->notes[i], needle))
            return 1;
    return 0;
}

START_TEST(megatron_even_split_has_no_note)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {4, 4, 4, 4};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    ck_assert_int_eq(f.m.nlayers, 19);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 2;
    f.s.gas = 32;
    set_blocks(&f, blocks);
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_OK);
    ck_assert_int_eq(e.nnotes, 0);
    ck_assert_int_eq(e.nfiles, 2);
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--num-layers 16 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--pipeline-model-parallel-size 4 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--global-batch-size 64 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--micro-batch-size 2 "));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--bf16"));
    ck_assert_ptr_null(strstr(e.files[0].text, "--fp16"));
    ck_assert_ptr_null(strstr(e.files[0].text, "NOTE"));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

START_TEST(megatron_first_last_note)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {3, 4, 4, 5};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 1;
    f.s.gas = 64;
    set_blocks(&f, blocks);
    ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_OK);
    ck_assert(has_note(&e, "blocks per stage: 3,4,4,5"));
    ck_assert(has_note(&e, "--decoder-first-pipeline-num-layers 3 "
                           "--decoder-last-pipeline-num-layers 5"));
    /* the flags of newer versions are never in the command line itself */
    ck_assert_ptr_null(strstr(strstr(e.files[0].text, "MEGATRON_ARGS="), "--decoder-"));
    export_free(&e);
    /* a middle stage differing cannot be expressed by any version */
    {
        const int b2[] = {4, 3, 5, 4};
        set_blocks(&f, b2);
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                           &f.s, 64, NULL, &e, &err), UTIL_OK);
        ck_assert(has_note(&e, "cannot express"));
        ck_assert(!has_note(&e, "--decoder-first"));
        export_free(&e);
    }
    fixture_free(&f);
}
END_TEST

START_TEST(deepspeed_zero_with_pipeline)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {8, 8};
    int r;

    fixture_make(&f, two_nodes, gpt16, 1, 4, 2);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    f.s.mbs = 4;
    f.s.gas = 4;
    f.p.zero_stage = 2;
    f.p.recompute = 1;
    set_blocks(&f, blocks);
    ck_assert_int_eq(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_OK);
    ck_assert_str_eq(e.files[0].name, "ds_config.json");
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"stage\": 1\n"));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"train_batch_size\": 64,"));
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "\"gradient_accumulation_steps\": 4,"));
    ck_assert(has_note(&e, "accepts only stage 0 or 1"));
    ck_assert_str_eq(e.files[2].name, "pipeline_parts.json");
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "\"parts\": [0, 9, 19]"));
    ck_assert_ptr_nonnull(strstr(e.files[2].text, "\"activation_checkpoint_interval\": 1"));
    ck_assert_str_eq(e.files[1].name, "hostfile");
    ck_assert_ptr_nonnull(strstr(e.files[1].text, "\na slots=4\nb slots=4\n"));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* Replay torchrun's rank assignment on the generated torchrun.sh: agent
 * k gets global ranks base_k + local, local i runs on the i-th GPU of its
 * CUDA_VISIBLE_DEVICES on its host.  The result must be the plan's map. */
static void replay_torchrun(const fixture *f, const char *text)
{
    const char *p = text;
    int base = 0, agents = 0, nnodes = -1, *seen;
    int N = f->c.ndevices;

    seen = calloc((size_t)N, sizeof *seen);
    while ((p = strstr(p, "# host '")) != NULL) {
        char host[64], *q;
        int gpus[64], ng = 0, nproc, node_rank, nn, i, node;
        p += 8;
        q = strchr(p, '\'');
        snprintf(host, sizeof host, "%.*s", (int)(q - p), p);
        p = strstr(p, "CUDA_VISIBLE_DEVICES=") + 21;
        while (1) {
            gpus[ng++] = (int)strtol(p, &q, 10);
            p = q;
            if (*p != ',')
                break;
            p++;
        }
        p = strstr(p, "exec torchrun");
        ck_assert_int_eq(sscanf(p, "exec torchrun --nnodes %d --nproc-per-node %d "
                                   "--node-rank %d", &nn, &nproc, &node_rank), 3);
        ck_assert_int_eq(node_rank, agents);
        ck_assert_int_eq(nproc, ng);
        if (nnodes < 0)
            nnodes = nn;
        ck_assert_int_eq(nn, nnodes);
        for (node = 0; node < f->c.nnodes; node++)
            if (strcmp(f->c.nodes[node].name, host) == 0)
                break;
        ck_assert_int_lt(node, f->c.nnodes);
        for (i = 0; i < nproc; i++) {
            int rank = base + i;
            int dev = f->c.nodes[node].first_device + gpus[i];
            ck_assert_int_lt(rank, N);
            ck_assert_msg(f->s.ranks[rank] == dev, "rank %d lands on device %d, "
                          "the plan says %d", rank, dev, f->s.ranks[rank]);
            seen[rank]++;
        }
        base += nproc;
        agents++;
        p++;
    }
    ck_assert_int_eq(base, N);
    ck_assert_int_eq(agents, nnodes);
    for (base = 0; base < N; base++)
        ck_assert_int_eq(seen[base], 1);
    free(seen);
}

START_TEST(torchrun_realises_random_placements)
{
    static const char three[] =
        "{\"name\": \"three\", \"nodes\": ["
        "{\"name\": \"h\", \"device\": \"H100-SXM\", \"gpus\": 8, \"intra_gbps\": 3600, \"nic_gbps\": 400},"
        "{\"name\": \"t\", \"count\": 2, \"device\": \"T4\", \"gpus\": 4, \"intra_gbps\": 64, \"nic_gbps\": 50}]}";
    util_pcg32 rng;
    int trial;

    util_pcg32_seed(&rng, 7u, 11u);
    for (trial = 0; trial < 40; trial++) {
        fixture f;
        export_result e;
        util_error err;
        const int blocks[] = {4, 4, 4, 4};
        int r, N;
        fixture_make(&f, three, gpt16, 2, 2, 4);
        N = f.c.ndevices;
        ck_assert_int_eq(N, 16);
        for (r = 0; r < N; r++)
            f.s.ranks[r] = r;
        if (trial % 4 == 1) { /* permute within nodes only */
            for (r = 0; r < 8; r++) {
                int k = (int)util_pcg32_bounded(&rng, (uint32_t)(8 - r)), t = f.s.ranks[r];
                f.s.ranks[r] = f.s.ranks[r + k];
                f.s.ranks[r + k] = t;
            }
        } else if (trial > 0) { /* any permutation */
            for (r = 0; r < N - 1; r++) {
                int k = (int)util_pcg32_bounded(&rng, (uint32_t)(N - r)), t = f.s.ranks[r];
                f.s.ranks[r] = f.s.ranks[r + k];
                f.s.ranks[r + k] = t;
            }
        }
        f.s.mbs = 1;
        f.s.gas = 32;
        set_blocks(&f, blocks);
        ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p,
                                           &f.s, 64, NULL, &e, &err), UTIL_OK);
        replay_torchrun(&f, e.files[0].text);
        if (trial <= 1) {
            ck_assert_int_eq(e.agents, 3);
            ck_assert_int_eq(e.nnotes, 0);
        }
        if (e.agents > e.hosts)
            ck_assert(has_note(&e, "not consecutive"));
        export_free(&e);
        /* the Megatron script uses the same launch lines */
        ck_assert_int_eq(export_build(EXPORT_MEGATRON, &f.c, &f.m, &f.p,
                                           &f.s, 64, NULL, &e, &err), UTIL_OK);
        replay_torchrun(&f, e.files[0].text);
        export_free(&e);
        fixture_free(&f);
    }
}
END_TEST

START_TEST(bad_strategy_is_refused)
{
    fixture f;
    export_result e;
    util_error err;
    const int blocks[] = {4, 4, 4, 4};
    int r;

    fixture_make(&f, two_nodes, gpt16, 2, 1, 4);
    for (r = 0; r < 8; r++)
        f.s.ranks[r] = r;
    set_blocks(&f, blocks);
    f.s.ranks[3] = 99;
    ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p, &f.s,
                                       64, NULL, &e, &err), UTIL_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "rank 3"));
    ck_assert_int_eq(e.nfiles, 0);
    f.s.ranks[3] = 3;
    ck_assert_int_eq(export_build(99, &f.c, &f.m, &f.p, &f.s, 64, NULL, &e, &err),
                     UTIL_EINVAL);
    export_free(&e);
    export_free(NULL);
    ck_assert_int_eq(export_target_from_name("deepspeed"), EXPORT_DEEPSPEED);
    ck_assert_int_eq(export_target_from_name("slurm"), -1);
    ck_assert_str_eq(export_target_name(EXPORT_HOSTFILE), "hostfile");
    fixture_free(&f);
}
END_TEST

/* ---- CLI behaviour --------------------------------------------------- */

START_TEST(cli_stdout_and_json)
{
    char so[PATHN], se[PATHN];
    char *o, *e;
    const char *a1[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile", NULL};
    const char *a2[] = {"export", "--plan", "plan-amp-het.json", "--to", "torchrun",
                        "--format", "json", NULL};
    const char *a3[] = {"export", "--plan", "plan-amp-het.json", "--to", "slurm", NULL};
    const char *a4[] = {"export", "--plan", "missing.json", "--to", "hostfile", NULL};
    const char *a5[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile",
                        "--output", "/nonexistent-dir/x/y", NULL};
    const char *a6[] = {"export", "--plan", "plan-amp-het.json", "--to", "hostfile",
                        "--strategy", "9", NULL};

    snprintf(so, sizeof so, "%s/cli.out", tmp_dir);
    snprintf(se, sizeof se, "%s/cli.err", tmp_dir);
    ck_assert_int_eq(run_planner(GOLDEN, a1, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "\np3-0 slots=4\np3-1 slots=4\np3-2 slots=4\n"
                                    "g4dn-0 slots=4\n"));
    free(o);
    ck_assert_int_eq(run_planner(GOLDEN, a2, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "\"target\": \"torchrun\""));
    ck_assert_ptr_nonnull(strstr(o, "\"name\": \"torchrun.sh\""));
    ck_assert_ptr_nonnull(strstr(o, "\"notes\": ["));
    free(o);
    ck_assert_int_eq(run_planner(GOLDEN, a3, so, se), 2);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "'slurm'"));
    free(e);
    ck_assert_int_eq(run_planner(GOLDEN, a4, so, se), 3);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "missing.json"));
    free(e);
    ck_assert_int_eq(run_planner(GOLDEN, a5, so, se), 5);
    ck_assert_int_eq(run_planner(GOLDEN, a6, so, se), 2);
}
END_TEST

START_TEST(cli_output_table)
{
    char so[PATHN], se[PATHN], dir[2048];
    char *o;
    struct stat st;
    const char *a[] = {"export", "--plan", "plan-amp-het.json", "--to", "deepspeed",
                       "--output", dir, NULL};

    snprintf(so, sizeof so, "%s/t.out", tmp_dir);
    snprintf(se, sizeof se, "%s/t.err", tmp_dir);
    snprintf(dir, sizeof dir, "%s/ds-out", tmp_dir);
    ck_assert_int_eq(run_planner(GOLDEN, a, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "file                     bytes  contents\n"));
    ck_assert_ptr_nonnull(strstr(o, "ds_config.json"));
    ck_assert_ptr_nonnull(strstr(o, "4 files written to"));
    free(o);
    snprintf(so, sizeof so, "%s/deepspeed.sh", dir);
    ck_assert_int_eq(stat(so, &st), 0);
    ck_assert(st.st_mode & S_IXUSR);
}
END_TEST

static Suite *export_suite(void)
{
    Suite *s = suite_create("export");
    TCase *g = tcase_create("golden"), *l = tcase_create("library");
    TCase *c = tcase_create("cli");

    tcase_set_timeout(g, 120);
    tcase_add_test(g, golden_amp_het);
    tcase_add_test(g, golden_mixed_llama);
    tcase_add_test(g, golden_megatron_even);
    tcase_add_test(g, golden_permuted);
    tcase_add_test(g, flags_are_known);
    tcase_add_test(g, ds_config_keys_are_known);
    tcase_add_test(l, megatron_even_split_has_no_note);
    tcase_add_test(l, megatron_first_last_note);
    tcase_add_test(l, deepspeed_zero_with_pipeline);
    tcase_add_test(l, torchrun_realises_random_placements);
    tcase_add_test(l, bad_strategy_is_refused);
    tcase_add_test(c, cli_stdout_and_json);
    tcase_add_test(c, cli_output_table);
    suite_add_tcase(s, g);
    suite_add_tcase(s, l);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;
    const char *t = getenv("TMPDIR");

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-export.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    sr = srunner_create(export_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tu_remove_tree(tmp_dir);
    return failed == 0 ? 0 : 1;
}
