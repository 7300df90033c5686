/* tests/test_export_megatron.c: what Megatron-LM core_v0.19.0's
 * validate_args (megatron/training/arguments.py) requires of the
 * Megatron-FSDP and optimizer-offload exports (docs/export.md):
 * CUDA_DEVICE_MAX_CONNECTIONS not 1 and the fsdp_dtensor checkpoint
 * format with Megatron-FSDP, --use-precision-aware-optimizer with
 * --optimizer-cpu-offload; offload with Megatron-FSDP refused and kept
 * out of plans made for the release.  The scripts run under /bin/sh with
 * a stand-in torchrun that prints what it received.  The launchers' own
 * code checks the same exports in tests/upstream/check_megatron.py. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "export.h"
#include "search.h"
#include "testutil.h"

#define PATHN 4096

static char tmp_dir[1024];

/* One node of four H100 with host memory. */
static const char h100[] =
    "{\"name\": \"h\", \"nodes\": [{\"name\": \"n0\", \"device\": \"H100-SXM\","
    " \"gpus\": 4, \"intra_gbps\": 3600, \"nic_gbps\": 400,"
    " \"host_memory_gib\": 512}]}";
/* gpt2 shorthand, 8 blocks (11 layers), in precision prec. */
static const char model_fmt[] =
    "{\"name\": \"g8\", \"training\": {\"global_batch\": 32, \"precision\": \"%s\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 8, \"hidden\": 1024,"
    " \"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";

/* The megatron.sh of strategy tp x dp x 1 with ZeRO zero and offload
 * (0/1) for release version in precision prec (caller frees), or NULL
 * when refused; *notes gets the notes joined (caller frees). */
static char *export_sh(const char *prec, int tp, int dp, int zero, int offload,
                       int version, char **notes)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy s;
    cost_params p;
    export_options o;
    export_result e;
    util_error err;
    char model[512];
    char *text = NULL;
    int r, i, rc;
    size_t len = 1;

    snprintf(model, sizeof model, model_fmt, prec);
    tu_parse_inputs(h100, model, &c, &m);
    cost_params_init(&p);
    tu_strategy(&s, tp, dp, 1, NULL, 32 / dp);
    s.bounds[0] = 0;
    s.bounds[1] = m.nlayers;
    for (r = 0; r < tp * dp; r++)
        s.ranks[r] = r;
    s.mbs = 1;
    s.zero = zero;
    s.offload = offload ? FMT_OFFLOAD_OPTIMIZER : FMT_OFFLOAD_NONE;
    export_options_init(&o);
    o.version = version;
    rc = export_build(EXPORT_MEGATRON, &c, &m, &p, &s, 32, &o, &e, &err);
    if (rc == UTIL_OK)
        text = strdup(e.files[0].text);
    for (i = 0; i < e.nnotes; i++)
        len += strlen(e.notes[i]) + 1;
    *notes = calloc(len, 1);
    ck_assert_ptr_nonnull(*notes);
    for (i = 0; i < e.nnotes; i++) {
        strcat(*notes, e.notes[i]);
        strcat(*notes, "\n");
    }
    export_free(&e);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return text;
}

/* Runs script text under /bin/sh as agent 0 with CUDA_DEVICE_MAX_CONNECTIONS=1
 * already in the environment and a torchrun that prints that variable and
 * its arguments, one per line; the output (caller frees). */
static char *run_agent0(const char *text)
{
    char bin[PATHN], cmd[3 * PATHN], out[65536];
    int st;

    snprintf(bin, sizeof bin, "%s/bin", tmp_dir);
    mkdir(bin, 0755); /* kept between calls */
    tu_put(tmp_dir, "megatron.sh", text);
    tu_put(bin, "torchrun",
           "#!/bin/sh\n"
           "echo \"CUDA_DEVICE_MAX_CONNECTIONS=${CUDA_DEVICE_MAX_CONNECTIONS-unset}\"\n"
           "for a in \"$@\"; do echo \"$a\"; done\n");
    snprintf(cmd, sizeof cmd, "chmod +x %s/torchrun && cd %s && "
             "PATH=%s:/usr/bin:/bin CUDA_DEVICE_MAX_CONNECTIONS=1 NODE_RANK=0 "
             "/bin/sh megatron.sh", bin, tmp_dir, bin);
    st = tu_run_shell(cmd, out, sizeof out);
    ck_assert_msg(st == 0, "megatron.sh exit %d: %s", st, out);
    return strdup(out);
}

/* ZeRO 2 and 3 on Megatron-FSDP: validate_args asserts
 * CUDA_DEVICE_MAX_CONNECTIONS != "1" and ckpt_format == "fsdp_dtensor";
 * bf16 main gradients in fp32 as the plan's memory model counts them. */
START_TEST(fsdp_connections_and_checkpoint)
{
    static const char *const precs[] = {"bf16", "fp16"};
    int zero, i;

    for (i = 0; i < 2; i++)
        for (zero = 2; zero <= 3; zero++) {
            char *notes, *t, *run;
            t = export_sh(precs[i], 2, 2, zero, 0, EXPORT_VERSION_NEW, &notes);
            ck_assert_msg(t != NULL, "zero %d refused: %s", zero, notes);
            ck_assert_ptr_null(strstr(t, "CUDA_DEVICE_MAX_CONNECTIONS=1"));
            ck_assert_ptr_nonnull(strstr(t, "--use-megatron-fsdp \\\n"));
            ck_assert_ptr_nonnull(strstr(t, "--ckpt-format fsdp_dtensor \\\n"));
            ck_assert((strstr(t, "--megatron-fsdp-main-grads-dtype fp32 \\\n") !=
                       NULL) == (i == 0));
            run = run_agent0(t);
            /* the variable is gone even where the caller had set it */
            ck_assert_msg(strstr(run, "CUDA_DEVICE_MAX_CONNECTIONS=unset\n") != NULL,
                          "%s", run);
            ck_assert_ptr_nonnull(strstr(run, "\n--ckpt-format\nfsdp_dtensor\n"));
            ck_assert_ptr_nonnull(strstr(run, zero == 2 ? "\noptim_grads\n"
                                                        : "\noptim_grads_params\n"));
            free(run);
            free(t);
            free(notes);
        }
}
END_TEST

/* Without Megatron-FSDP (ZeRO 0 and 1, and core_r0.9.0) tensor parallelism
 * needs CUDA_DEVICE_MAX_CONNECTIONS=1 and the default checkpoint format. */
START_TEST(ddp_keeps_one_connection)
{
    int zero, v;

    for (v = EXPORT_VERSION_OLD; v <= EXPORT_VERSION_NEW; v++)
        for (zero = 0; zero <= 1; zero++) {
            char *notes, *t, *run;
            t = export_sh("bf16", 2, 2, zero, 0, v, &notes);
            ck_assert_msg(t != NULL, "%s", notes);
            ck_assert_ptr_nonnull(strstr(t, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
            ck_assert_ptr_null(strstr(t, "--ckpt-format"));
            ck_assert_ptr_null(strstr(t, "fsdp"));
            run = run_agent0(t);
            ck_assert_ptr_nonnull(strstr(run, "CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
            free(run);
            free(t);
            free(notes);
        }
}
END_TEST

/* validate_args: --optimizer-cpu-offload only with
 * --use-precision-aware-optimizer; the optimizer's dtypes stay at their
 * fp32 defaults (no dtype flag lowers them). */
START_TEST(offload_is_precision_aware)
{
    char *notes, *t, *run;

    t = export_sh("bf16", 1, 4, 1, 1, EXPORT_VERSION_NEW, &notes);
    ck_assert_msg(t != NULL, "%s", notes);
    ck_assert_ptr_nonnull(strstr(t, "--use-distributed-optimizer \\\n"));
    ck_assert_ptr_nonnull(strstr(t, "--optimizer-cpu-offload \\\n"));
    ck_assert_ptr_nonnull(strstr(t, "--use-precision-aware-optimizer \\\n"));
    ck_assert_ptr_null(strstr(t, "-dtype"));
    ck_assert_ptr_null(strstr(t, "--optimizer-offload-fraction"));
    run = run_agent0(t);
    ck_assert_ptr_nonnull(strstr(run, "\n--optimizer-cpu-offload\n"
                                      "--use-precision-aware-optimizer\n"));
    free(run);
    free(t);
    free(notes);
}
END_TEST

/* Offload with ZeRO 2 or 3: Megatron-LM offloads only the distributed
 * optimizer's shard; the export refuses, naming Megatron-FSDP. */
START_TEST(offload_with_fsdp_refused)
{
    int zero;

    for (zero = 2; zero <= 3; zero++) {
        char *notes, *t;
        t = export_sh("bf16", 1, 4, zero, 1, EXPORT_VERSION_NEW, &notes);
        ck_assert_ptr_null(t);
        ck_assert_msg(strstr(notes, "Megatron-FSDP keeps its fp32 main weights") != NULL,
                      "%s", notes);
        free(notes);
    }
}
END_TEST

START_TEST(caps_rule_out_fsdp_offload)
{
    search_launcher lc;
    util_error err;

    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_NEW, &lc,
                                        &err), UTIL_OK);
    ck_assert_int_eq(lc.offload_zero_limit, 2);
    ck_assert_int_eq(lc.no_offload, 0);
    ck_assert_int_eq(lc.zero_limit, 0);
    ck_assert_int_eq(export_target_caps(EXPORT_MEGATRON, EXPORT_VERSION_OLD, &lc,
                                        &err), UTIL_OK);
    ck_assert_int_eq(lc.no_offload, 1);
}
END_TEST

/* The (zero, offload) of each strategy of the plan `planner` prints for
 * extra; returns how many strategies offload with ZeRO >= 2. */
static int fsdp_offloads(const char *extra, int *nstrategies)
{
    char cl[PATHN], so[PATHN], se[PATHN];
    char *out;
    cJSON *plan, *s;
    int n = 0;
    const char *a[] = {"--cluster", cl, "--model",
                       HETPLAN_SOURCE_DIR "/examples/llama3-8b.json",
                       "--global-batch", "64", "--offload", "optimizer",
                       "--top-k", "8", "--format", "json", extra, NULL};

    snprintf(cl, sizeof cl, "%s/h100.json", tmp_dir);
    snprintf(so, sizeof so, "%s/plan.out", tmp_dir);
    snprintf(se, sizeof se, "%s/plan.err", tmp_dir);
    tu_put(tmp_dir, "h100.json", h100);
    ck_assert_int_eq(tu_run_planner(tmp_dir, a, so, se), 0);
    out = tu_slurp(so);
    plan = cJSON_Parse(out);
    ck_assert_ptr_nonnull(plan);
    *nstrategies = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(plan, "strategies")) {
        const char *off = cJSON_GetStringValue(cJSON_GetObjectItem(s, "offload"));
        (*nstrategies)++;
        if (tu_num(s, "zero") >= 2 && off && strcmp(off, "optimizer") == 0)
            n++;
    }
    cJSON_Delete(plan);
    free(out);
    return n;
}

/* `plan --launcher megatron@core_v0.19.0` never offloads with ZeRO 2/3,
 * though the unconstrained search prefers it here; fixing both is a
 * usage error. */
START_TEST(launcher_plan_keeps_offload_with_zero1)
{
    char so[PATHN], se[PATHN], cl[PATHN];
    char *e;
    int n;
    const char *a[] = {"--cluster", cl, "--model",
                       HETPLAN_SOURCE_DIR "/examples/llama3-8b.json",
                       "--global-batch", "64", "--offload", "optimizer",
                       "--zero", "3", "--launcher", "megatron@core_v0.19.0", NULL};

    ck_assert_int_ge(fsdp_offloads("--use-all", &n), 1);
    ck_assert_int_eq(fsdp_offloads("--launcher=megatron@core_v0.19.0", &n), 0);
    ck_assert_int_ge(n, 1);
    snprintf(cl, sizeof cl, "%s/h100.json", tmp_dir);
    snprintf(so, sizeof so, "%s/z3.out", tmp_dir);
    snprintf(se, sizeof se, "%s/z3.err", tmp_dir);
    ck_assert_int_eq(tu_run_planner(tmp_dir, a, so, se), 2);
    e = tu_slurp(se);
    ck_assert_ptr_nonnull(strstr(e, "offloads only with stages below 2"));
    free(e);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        fsdp_connections_and_checkpoint, ddp_keeps_one_connection,
        offload_is_precision_aware, offload_with_fsdp_refused,
        caps_rule_out_fsdp_offload, launcher_plan_keeps_offload_with_zero1};
    const char *t = getenv("TMPDIR");
    int rc;

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-megatron.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    rc = tu_run_tests("export_megatron", tests, TU_N(tests));
    tu_remove_tree(tmp_dir);
    return rc;
}
