/* tests/test_export_idle.c: exports of strategies that leave GPUs idle.
 *
 * Oracle: the plan's own ranks array.  For every rank r the expected place
 * is (name of the node of device ranks[r], ranks[r] - that node's first
 * device); the world size is tp * dp * pp.  Each target's files are read
 * back the way its launcher reads them and must give exactly that map:
 *  - torchrun.sh and megatron.sh: agent k (the k-th case arm) runs
 *    --nproc_per_node n ranks starting after those of agents 0..k-1;
 *    local rank i uses the i-th GPU of its CUDA_VISIBLE_DEVICES;
 *  - deepspeed: hosts in hostfile order; a host's GPUs are 0..slots-1, or
 *    with --include host:a,b its listed GPUs in ascending order (DeepSpeed's
 *    runner parse_resource_filter keeps the list as a set); local rank i
 *    uses the i-th of them;
 *  - hostfile (mpirun --map-by slot): hosts in order, each takes slots
 *    ranks, local rank i uses GPU i.
 * A target that cannot express the map must refuse (exit 6, "cannot
 * express"); it may not write another map silently. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "formats.h"
#include "plan.h"
#include "tp_cli.h"

#define MAXR 512

/* Where each rank runs, as read back from the files. */
typedef struct rankmap {
    int n;                  /* ranks found = world size */
    char host[MAXR][64];
    int gpu[MAXR];
} rankmap;

static void map_add(rankmap *m, const char *host, int gpu)
{
    ck_assert_int_lt(m->n, MAXR);
    snprintf(m->host[m->n], sizeof m->host[0], "%s", host);
    m->gpu[m->n] = gpu;
    m->n++;
}

/* The plan's map of strategy s (the oracle). */
static void plan_map(const plan_doc *d, const fmt_strategy *s, rankmap *m)
{
    int r, w = s->tp * s->dp * s->pp;

    memset(m, 0, sizeof *m);
    for (r = 0; r < w; r++) {
        int dev = s->ranks[r], node = d->cluster.device_node[dev];
        map_add(m, d->cluster.nodes[node].name,
                dev - d->cluster.nodes[node].first_device);
    }
}

static void same_map(const rankmap *want, const rankmap *got, const char *what)
{
    int r;

    ck_assert_msg(got->n == want->n, "%s: world size %d, the plan's %d", what,
                  got->n, want->n);
    for (r = 0; r < want->n; r++)
        ck_assert_msg(strcmp(got->host[r], want->host[r]) == 0 &&
                          got->gpu[r] == want->gpu[r],
                      "%s: rank %d on %s GPU %d, the plan's %s GPU %d", what, r,
                      got->host[r], got->gpu[r], want->host[r], want->gpu[r]);
}

/* Comma-separated integers into v; their count. */
static int int_list(const char *p, int *v, int max)
{
    int n = 0;
    char *end;

    for (;;) {
        long x = strtol(p, &end, 10);
        if (end == p || n >= max)
            break;
        v[n++] = (int)x;
        if (*end != ',')
            break;
        p = end + 1;
    }
    return n;
}

/* The case arms of torchrun.sh or megatron.sh. */
static void torchrun_map(const char *text, rankmap *m, const char *what)
{
    const char *p = text;
    int agents = 0, nnodes = -1;

    memset(m, 0, sizeof *m);
    while ((p = strstr(p, ")  # host '")) != NULL) {
        char host[64];
        int gpus[64], ngpu, nproc, nn, rank, i;
        const char *cvd, *ex;
        ck_assert_int_eq(sscanf(p, ")  # host '%63[^']'", host), 1);
        cvd = strstr(p, "export CUDA_VISIBLE_DEVICES=");
        ex = strstr(p, "exec torchrun --nnodes ");
        ck_assert_msg(cvd != NULL && ex != NULL, "%s: agent %d incomplete", what, agents);
        ngpu = int_list(cvd + strlen("export CUDA_VISIBLE_DEVICES="), gpus, 64);
        ck_assert_int_eq(sscanf(ex, "exec torchrun --nnodes %d --nproc_per_node %d "
                                "--node_rank %d", &nn, &nproc, &rank), 3);
        ck_assert_msg(rank == agents, "%s: node rank %d in arm %d", what, rank, agents);
        ck_assert_msg(nproc == ngpu, "%s: agent %d: %d processes, %d GPUs listed",
                      what, agents, nproc, ngpu);
        ck_assert(nnodes < 0 || nnodes == nn);
        nnodes = nn;
        for (i = 0; i < nproc; i++)
            map_add(m, host, gpus[i]);
        agents++;
        p = ex;
    }
    ck_assert_msg(agents > 0 && nnodes == agents, "%s: %d agents, --nnodes %d",
                  what, agents, nnodes);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* A hostfile read as DeepSpeed (include: the --include value or NULL) or
 * mpirun --map-by slot (include NULL) reads it. */
static void hostfile_map(const char *hostfile, const char *include, rankmap *m,
                         const char *what)
{
    const char *p = hostfile;

    memset(m, 0, sizeof *m);
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024], host[64];
        int slots, gpus[64], n, i;
        ck_assert_uint_lt(len, sizeof line);
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol != NULL);
        if (line[0] == '#' || line[0] == '\0')
            continue;
        ck_assert_msg(sscanf(line, "%63s slots=%d", host, &slots) == 2, "%s: line '%s'",
                      what, line);
        n = slots;
        for (i = 0; i < slots && i < 64; i++)
            gpus[i] = i;
        if (include != NULL) {
            char key[80];
            const char *q;
            snprintf(key, sizeof key, "%s:", host);
            q = strstr(include, key);
            /* a hostfile host missing from --include runs nothing */
            n = q ? int_list(q + strlen(key), gpus, 64) : 0;
            qsort(gpus, (size_t)n, sizeof gpus[0], cmp_int);
            for (i = 0; i < n; i++)
                ck_assert_msg(gpus[i] < slots, "%s: GPU %d of '%s' beyond its %d slots",
                              what, gpus[i], host, slots);
        }
        for (i = 0; i < n; i++)
            map_add(m, host, gpus[i]);
    }
}

/* The idle GPUs named in the export's note on stderr, node by node. */
static void idle_note_names_nodes(const plan_doc *d, const fmt_strategy *s,
                                  const char *err, const char *what)
{
    int k, g, w = s->tp * s->dp * s->pp;
    char want[200];

    snprintf(want, sizeof want, "runs %d ranks (world size tp %d x dp %d x pp %d) "
             "and leaves %d of the cluster's %d GPUs idle", w, s->tp, s->dp, s->pp,
             d->cluster.ndevices - w, d->cluster.ndevices);
    ck_assert_msg(strstr(err, want) != NULL, "%s: no '%s' in: %s", what, want, err);
    for (k = 0; k < d->cluster.nnodes; k++) {
        int idle = 0;
        for (g = 0; g < d->cluster.nodes[k].gpus; g++)
            idle += fmt_rank_of_device(s, d->cluster.nodes[k].first_device + g) < 0;
        snprintf(want, sizeof want, "host '%s': ", d->cluster.nodes[k].name);
        ck_assert_msg((strstr(err, want) != NULL) == (idle > 0),
                      "%s: node '%s' has %d idle GPUs; note: %s", what,
                      d->cluster.nodes[k].name, idle, err);
    }
}

static char *read_out(const char *dir, const char *name)
{
    char p[TP_PATHN];

    snprintf(p, sizeof p, "%s/%s", dir, name);
    return tp_read(p);
}

/* Export strategy k (1-based) of plan.json to every target and check. */
static void export_all(const plan_doc *d, int k, int *exact)
{
    static const char *const targets[] = {"torchrun", "megatron", "deepspeed",
                                          "hostfile"};
    const fmt_strategy *s = &d->s[k - 1];
    rankmap want, got;
    int t;

    plan_map(d, s, &want);
    for (t = 0; t < 4; t++) {
        char dir[64], ks[16], what[128];
        const char *args[] = {"export", "--plan", "plan.json", "--strategy", ks,
                              "--to", targets[t], "--output", dir,
                              "--target-version", NULL, NULL};
        tp_run_out r;
        snprintf(ks, sizeof ks, "%d", k);
        snprintf(dir, sizeof dir, "out-%d-%s", k, targets[t]);
        snprintf(what, sizeof what, "strategy %d, %s", k, targets[t]);
        /* the newer releases express the most (uneven stages) */
        args[10] = t == 0 ? "2.x" : t == 1 ? "core_v0.19.0" : t == 2 ? "0.19" : NULL;
        if (t == 3)
            args[9] = NULL;
        tp_run(&r, args);
        if (r.status == 6) {
            /* refused: named, and only for what the launcher cannot say */
            ck_assert_msg(strstr(r.err, "cannot express") != NULL, "%s: %s", what, r.err);
            ck_assert_msg(t >= 1, "%s: torchrun refused: %s", what, r.err);
            tp_run_free(&r);
            continue;
        }
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", what, r.status, r.err);
        idle_note_names_nodes(d, s, r.err, what);
        if (t <= 1) {
            char *sh = read_out(dir, t == 0 ? "torchrun.sh" : "megatron.sh");
            ck_assert_ptr_nonnull(sh);
            torchrun_map(sh, &got, what);
            free(sh);
        } else {
            char *hf = read_out(dir, "hostfile");
            char *sh = t == 2 ? read_out(dir, "deepspeed.sh") : NULL;
            char include[4096] = "";
            const char *inc = sh ? strstr(sh, "--include ") : NULL;
            ck_assert_ptr_nonnull(hf);
            if (inc != NULL)
                ck_assert_int_eq(sscanf(inc, "--include %4095s", include), 1);
            hostfile_map(hf, inc ? include : NULL, &got, what);
            free(hf);
            free(sh);
        }
        same_map(&want, &got, what);
        (*exact)++;
        tp_run_free(&r);
    }
}

/* Export every strategy of plan.json that leaves GPUs idle; their number. */
static int export_idle_strategies(int *exact)
{
    plan_doc d;
    util_error err;
    char p[TP_PATHN];
    int k, idle = 0;

    memset(&err, 0, sizeof err);
    ck_assert_msg(plan_load_plan(tp_path(p, "plan.json"), &d, &err) == UTIL_OK,
                  "%s", err.msg);
    for (k = 1; k <= d.n; k++)
        if (d.s[k - 1].tp * d.s[k - 1].dp * d.s[k - 1].pp < d.cluster.ndevices) {
            idle++;
            export_all(&d, k, exact);
        }
    plan_doc_free(&d);
    return idle;
}

/* Plan cluster x model (opt val: an extra option or NULL), then export. */
static int plan_and_export(const char *cluster, const char *model,
                           const char *opt, const char *val, int *exact)
{
    const char *args[] = {"--cluster", cluster, "--model", model, "--top-k", "5",
                          "--output", "plan.json", "--quiet", opt, val, NULL};
    tp_run_out r;

    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "plan: exit %d: %s", r.status, r.err);
    tp_run_free(&r);
    return export_idle_strategies(exact);
}

START_TEST(mixed_generations_llama)
{
    int exact = 0;

    /* fp16: the V100s cannot train in the model's bf16 */
    ck_assert_int_ge(plan_and_export(HETPLAN_SOURCE_DIR "/examples/mixed-generations.json",
                                     HETPLAN_SOURCE_DIR "/examples/llama-7b.json",
                                     "--precision", "fp16", &exact), 1);
    /* torchrun and Megatron-LM (agents per run of ranks) always express it */
    ck_assert_int_ge(exact, 2);
}
END_TEST

START_TEST(amp_het_gpt2)
{
    int exact = 0;

    ck_assert_int_ge(plan_and_export(HETPLAN_SOURCE_DIR "/examples/amp-het.json",
                                     HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json",
                                     NULL, NULL, &exact), 1);
    ck_assert_int_ge(exact, 2);
}
END_TEST

/* Placements the search does not make: amp-het's devices are p3-0 0-3,
 * p3-1 4-7, p3-2 8-11 (V100) and g4dn-0 12-15 (T4).  Ranks on GPUs 2,3
 * of two hosts need DeepSpeed's --include and are beyond mpirun's slots
 * (refused); ranks on GPUs 0,1 of a V100 and a T4 host are plain slots. */
START_TEST(hand_placed_subsets)
{
    const char *args[] = {"evaluate", "--cluster",
                          HETPLAN_SOURCE_DIR "/examples/amp-het.json", "--model",
                          HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json",
                          "--strategies", "s.json", "--output", "plan.json",
                          "--quiet", NULL};
    tp_run_out r;
    int exact = 0;

    tp_write("s.json",
             "{\"strategies\": [\n"
             " {\"tp\": 1, \"dp\": 2, \"pp\": 2, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 15, 30], \"ranks\": [2, 3, 6, 7]},\n"
             " {\"tp\": 2, \"dp\": 1, \"pp\": 2, \"mbs\": 1, "
             "\"stage_boundaries\": [0, 15, 30], \"ranks\": [0, 1, 12, 13]}]}\n");
    tp_run(&r, args);
    ck_assert_msg(r.status == 0, "evaluate: exit %d: %s", r.status, r.err);
    tp_run_free(&r);
    ck_assert_int_eq(export_idle_strategies(&exact), 2);
    /* torchrun and Megatron-LM for both, DeepSpeed for both (one with
     * --include), the plain hostfile for the second only: 7 */
    ck_assert_int_eq(exact, 7);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("export_idle");
    TCase *tc = tcase_create("idle");

    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, mixed_generations_llama);
    tcase_add_test(tc, amp_het_gpt2);
    tcase_add_test(tc, hand_placed_subsets);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
