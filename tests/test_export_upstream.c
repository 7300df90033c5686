/* tests/test_export_upstream.c: every export of every shipped example
 * against the upstream flag and key lists (../shared/data/upstream/,
 * README there: Megatron-LM's argparse flags of core_r0.9.0 and
 * core_v0.19.0, DeepSpeed's config keys of 0.14.4 and 0.19.5, torchrun's
 * flags of PyTorch 1.13.1 and 2.x).
 *
 * Each cluster of examples/ is planned with each model of examples/
 * (those that fit), the shipped strategies files are evaluated, and the
 * strategies are exported for every target and version.  An export either exits 0 and then:
 *   - every Megatron-LM flag is in the version's list, a store_true flag
 *     has no value, a valued flag has one and a choice is one of the
 *     listed choices;
 *   - the stage block counts Megatron-LM derives from the flags (its
 *     rules: first/last counts and the rest split evenly, or the layout's
 *     't' per stage) are the plan's, and sum to the model's blocks;
 *   - every torchrun flag is accepted by both 1.13 and 2.x;
 *   - every ds_config.json key (dotted) is in the version's key list and
 *     hetplan_pipe.py's padded uniform partition (DeepSpeed's
 *     partition_uniform, re-done here) gives the plan's stages (the file
 *     is imported and run against DeepSpeed itself in tests/upstream/);
 *   - the hostfile's slots add up to the cluster's GPUs;
 * or exits 3 or 6 with its reason on stderr.
 *
 * The default run plans a sample of the (cluster, model) pairs: model k
 * of the sorted list with cluster k mod (number of clusters), so every
 * model and every cluster appears, and the pairs of sample_extra.
 * HETPLAN_TEST_FULL=1 plans every pair (CI's full stage) and checks that
 * the sample shows every feature the whole sweep shows: each target and
 * version written and refused, each reason for a refusal, each flag,
 * config key and launcher option written, each strategy shape. */
#include <check.h>
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "plan.h"
#include "export.h"
#include "testutil.h"

#define UP TU_DATA "/upstream"
#define PATHN 4096
#define MAXW 1200

static char tmp_dir[1024];

/* ---- the upstream lists ---------------------------------------------- */

typedef struct wordlist {
    char *name[MAXW];
    char *type[MAXW];   /* second column */
    char *third[MAXW];  /* third column */
    int n;
} wordlist;

/* Tab-separated lines of path, '#' lines skipped. */
static void load_list(const char *path, wordlist *w)
{
    char *t = tu_slurp(path), *line, *save = NULL;

    ck_assert_msg(t != NULL, "cannot read '%s'", path);
    memset(w, 0, sizeof *w);
    for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *a, *b;
        if (line[0] == '#' || line[0] == '\0' || w->n >= MAXW)
            continue;
        a = strchr(line, '\t');
        if (a)
            *a++ = '\0';
        b = a ? strchr(a, '\t') : NULL;
        if (b)
            *b++ = '\0';
        w->name[w->n] = strdup(line);
        w->type[w->n] = strdup(a ? a : "");
        w->third[w->n] = strdup(b ? b : "");
        w->n++;
    }
    free(t);
    ck_assert_int_gt(w->n, 10);
}

static void free_list(wordlist *w)
{
    int i;

    for (i = 0; i < w->n; i++) {
        free(w->name[i]);
        free(w->type[i]);
        free(w->third[i]);
    }
}

static int find(const wordlist *w, const char *name)
{
    int i;

    for (i = 0; i < w->n; i++)
        if (strcmp(w->name[i], name) == 0)
            return i;
    return -1;
}

static wordlist meg[2], ds[2], tr;

/* ---- what the exports show ------------------------------------------- */

#define MAXF 4096
static char *feature[MAXF];    /* each feature seen, once */
static char *first_pair[MAXF]; /* the first pair that showed it */
static int in_sample[MAXF];    /* a sampled pair showed it */
static int nfeature;
static char cur_pair[2 * PATHN]; /* the pair being planned */
static int cur_sampled;          /* it is in the default sample */
static char cur_export[64];      /* "target vN" of the export being checked */

/* Note a feature of the current pair (printf-style). */
static void note(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    char f[512];
    va_list ap;
    int i;

    va_start(ap, fmt);
    vsnprintf(f, sizeof f, fmt, ap);
    va_end(ap);
    for (i = 0; i < nfeature; i++)
        if (strcmp(feature[i], f) == 0)
            break;
    if (i == nfeature) {
        ck_assert_msg(nfeature < MAXF, "more than %d features", MAXF);
        feature[i] = strdup(f);
        first_pair[i] = strdup(cur_pair);
        in_sample[i] = 0;
        nfeature++;
    }
    in_sample[i] |= cur_sampled;
}

/* A refusal's reason without what differs between plans: quoted names
 * become '' (a quote after a letter is an apostrophe), numbers #, the
 * first line only. */
static void note_reason(const char *err)
{
    char r[400];
    const char *p = strstr(err, "cannot express: ");
    size_t k = 0;

    p = p ? p + strlen("cannot express: ") : err;
    while (*p && *p != '\n' && k + 3 < sizeof r) {
        if (*p == '\'' && (k == 0 || !isalnum((unsigned char)r[k - 1]))) {
            const char *q = strchr(p + 1, '\'');
            if (q != NULL && memchr(p + 1, '\n', (size_t)(q - p)) == NULL) {
                r[k++] = '\'';
                r[k++] = '\'';
                p = q + 1;
                continue;
            }
        }
        if (*p >= '0' && *p <= '9') {
            while ((*p >= '0' && *p <= '9') || *p == ',' || *p == '.')
                p++;
            r[k++] = '#';
            continue;
        }
        r[k++] = *p++;
    }
    r[k] = '\0';
    note("%s refused: %s", cur_export, r);
}

/* Every feature the whole sweep showed was shown by the sample too. */
static void check_sample_covers(void)
{
    char msg[8192] = "";
    int i, missing = 0;

    for (i = 0; i < nfeature; i++)
        if (!in_sample[i]) {
            missing++;
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
                     "\n  '%s' (first in %s)", feature[i], first_pair[i]);
        }
    ck_assert_msg(missing == 0,
                  "the default sample misses %d of the %d features the whole sweep "
                  "shows (add a pair showing each to sample_extra):%s",
                  missing, nfeature, msg);
}

static void free_features(void)
{
    int i;

    for (i = 0; i < nfeature; i++) {
        free(feature[i]);
        free(first_pair[i]);
    }
    nfeature = 0;
}

/* ---- Megatron-LM ----------------------------------------------------- */

/* The next blank-separated word of *p (quotes and backslashes of the
 * script are not used inside MEGATRON_ARGS). */
static int next_word(const char **p, char *w, size_t n)
{
    size_t k = 0;

    while (**p == ' ' || **p == '\\' || **p == '\n')
        (*p)++;
    if (**p == '"' || **p == '\0')
        return 0;
    while (**p && **p != ' ' && **p != '\n' && **p != '"' && k + 1 < n)
        w[k++] = *(*p)++;
    w[k] = '\0';
    return 1;
}

/* Every flag of MEGATRON_ARGS is in list v; values as the list's type
 * wants.  Stores the values the stage check needs. */
typedef struct megargs {
    int num_layers, pp, first, last, per_virtual, virtual_stages;
    char layout[4096];
} megargs;

static void check_megatron_args(const char *text, const wordlist *v,
                                const char *file, megargs *a)
{
    const char *p = strstr(text, "MEGATRON_ARGS=\"");
    char w[4096], val[4096];
    int flags = 0;

    memset(a, 0, sizeof *a);
    a->first = a->last = a->per_virtual = a->virtual_stages = -1;
    ck_assert_ptr_nonnull(p);
    p += strlen("MEGATRON_ARGS=\"");
    while (next_word(&p, w, sizeof w)) {
        int i = find(v, w);
        const char *type, *ch;
        ck_assert_msg(w[0] == '-' && w[1] == '-', "%s: '%s' is not a flag", file, w);
        ck_assert_msg(i >= 0, "%s: flag '%s' is not in the upstream list", file, w);
        type = v->type[i];
        flags++;
        note("%s flag %s", cur_export, w);
        if (strncmp(type, "store_", 6) == 0) {
            const char *q = p;
            char peek[64];
            if (next_word(&q, peek, sizeof peek))
                ck_assert_msg(peek[0] == '-', "%s: '%s' (%s) takes no value, got '%s'",
                              file, w, type, peek);
            continue;
        }
        ck_assert_msg(next_word(&p, val, sizeof val), "%s: '%s' needs a value", file, w);
        ck_assert_msg(val[0] != '-' || (val[1] >= '0' && val[1] <= '9'),
                      "%s: '%s' needs a value, got '%s'", file, w, val);
        if (strncmp(type, "int", 3) == 0) {
            char *end;
            strtol(val, &end, 10);
            ck_assert_msg(*end == '\0', "%s: '%s' wants an int, got '%s'", file, w, val);
        }
        ch = strstr(type, "{choices=");
        if (ch != NULL) {
            char quoted[4200];
            snprintf(quoted, sizeof quoted, "'%s'", val);
            ck_assert_msg(strstr(ch, quoted) != NULL, "%s: '%s %s' is not one of %s",
                          file, w, val, ch);
        }
        if (strcmp(w, "--num-layers") == 0)
            a->num_layers = atoi(val);
        else if (strcmp(w, "--pipeline-model-parallel-size") == 0)
            a->pp = atoi(val);
        else if (strcmp(w, "--decoder-first-pipeline-num-layers") == 0)
            a->first = atoi(val);
        else if (strcmp(w, "--decoder-last-pipeline-num-layers") == 0)
            a->last = atoi(val);
        else if (strcmp(w, "--num-layers-per-virtual-pipeline-stage") == 0)
            a->per_virtual = atoi(val);
        else if (strcmp(w, "--num-virtual-stages-per-pipeline-rank") == 0)
            a->virtual_stages = atoi(val);
        else if (strcmp(w, "--pipeline-model-parallel-layout") == 0)
            snprintf(a->layout, sizeof a->layout, "%s", val);
    }
    ck_assert_int_ge(flags, 5);
}

/* Blocks per pipeline stage as Megatron-LM builds them from the flags:
 * the layout's 't' per chunk (chunk k * pp + j on stage j), else the
 * first/last counts with the rest split evenly over the other stages
 * (TransformerBlock's get_num_layers_to_build). */
static void megatron_stages(const megargs *a, int *n, const char *file)
{
    int j;

    for (j = 0; j < a->pp; j++)
        n[j] = 0;
    if (a->layout[0]) {
        int chunk = 0;
        const char *c;
        for (c = a->layout; *c; c++) {
            if (*c == '|')
                chunk++;
            else if (*c == 't')
                n[chunk % a->pp]++;
            else
                ck_assert_msg(*c == 'E' || *c == 'L', "%s: layout letter '%c'", file, *c);
        }
        ck_assert_msg((chunk + 1) % a->pp == 0, "%s: %d chunks for pp %d", file,
                      chunk + 1, a->pp);
    } else {
        int left = a->num_layers, stages = a->pp;
        if (a->first >= 0)
            left -= a->first, stages--;
        if (a->last >= 0)
            left -= a->last, stages--;
        ck_assert_msg(stages == 0 || left % stages == 0,
                      "%s: %d blocks left for %d stages", file, left, stages);
        for (j = 0; j < a->pp; j++)
            n[j] = stages ? left / stages : 0;
        if (a->first >= 0)
            n[0] = a->first;
        if (a->last >= 0)
            n[a->pp - 1] = a->last;
        if (a->per_virtual > 0)
            ck_assert_msg(n[0] % a->per_virtual == 0, "%s: virtual stages", file);
    }
}

/* The integer after "flag " in text, -1 when absent. */
static int flag_value(const char *text, const char *flag)
{
    char pat[128];
    const char *p;

    snprintf(pat, sizeof pat, "%s ", flag);
    p = strstr(text, pat);
    return p ? atoi(p + strlen(pat)) : -1;
}

/* torchrun flags of every "exec torchrun" line: accepted by 1.13 and 2.x. */
static void check_torchrun_lines(const char *text, const char *file)
{
    const char *p = text;
    int lines = 0;

    while ((p = strstr(p, "exec torchrun ")) != NULL) {
        char w[256];
        p += strlen("exec torchrun ");
        while (next_word(&p, w, sizeof w) && w[0] == '-') {
            int i = find(&tr, w);
            ck_assert_msg(i >= 0, "%s: torchrun has no flag '%s'", file, w);
            ck_assert_msg(strcmp(tr.type[i], "Y") == 0 && tr.third[i][0] == 'Y',
                          "%s: '%s' is not accepted by both PyTorch 1.13 and 2.x",
                          file, w);
            note("%s torchrun %s", cur_export, w);
            if (strcmp(w, "--standalone") != 0)
                ck_assert(next_word(&p, w, sizeof w));
        }
        lines++;
    }
    ck_assert_int_gt(lines, 0);
}

/* ---- DeepSpeed ------------------------------------------------------- */

static int has_prefix(const wordlist *w, const char *section)
{
    size_t n = strlen(section);
    int i;

    for (i = 0; i < w->n; i++)
        if (strncmp(w->name[i], section, n) == 0 && w->name[i][n] == '.')
            return 1;
    return 0;
}

static void check_ds_keys(const cJSON *o, const char *prefix, const wordlist *v,
                          const char *file, int *keys)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, o)
    {
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", c->string);
        /* a section is known when listed or when a listed key lies in it
         * (0.14.4's list has bf16.enabled but not the bare bf16) */
        ck_assert_msg(find(v, key) >= 0 || (cJSON_IsObject(c) && has_prefix(v, key)),
                      "%s: key '%s' is not in the upstream list", file, key);
        note("%s key %s", cur_export, key);
        (*keys)++;
        if (cJSON_IsObject(c))
            check_ds_keys(c, key, v, file, keys);
    }
}

/* DeepSpeed's partition_uniform(num_items, num_parts)
 * (deepspeed/runtime/utils.py, 0.14.4 and 0.19.5). */
static void partition_uniform(int items, int parts, int *out)
{
    int p, chunk, residual, i;

    if (items <= parts) {
        for (p = 0; p <= parts; p++)
            out[p] = p < items ? p : items;
        return;
    }
    chunk = items / parts;
    residual = items - chunk * parts;
    for (p = 0; p <= parts; p++)
        out[p] = p * chunk;
    for (i = 0; i < residual; i++)
        for (p = i + 1; p <= parts; p++)
            out[p]++;
}

/* hetplan_pipe.py pads stage i to w = the widest stage with pass-through
 * layers; the uniform partition of the padded list must then start stage
 * i at i * w, so stage i holds exactly the plan's layers.  Without a
 * pipeline (pp 1) it builds no PipelineModule (DeepSpeed's pipeline
 * engine refuses ZeRO 2 and 3) but one nn.Sequential.  The file itself is
 * imported and run by DeepSpeed's own code in tests/upstream/
 * (check_deepspeed.py). */
static void check_pipe(const char *py, const fmt_strategy *s, const char *file)
{
    const char *p = strstr(py, "\nBOUNDS = [");
    int j, w = 0, parts[257];

    ck_assert_ptr_nonnull(p);
    p += strlen("\nBOUNDS = [");
    for (j = 0; j <= s->pp; j++) {
        char *end;
        ck_assert_int_eq((int)strtol(p, &end, 10), s->bounds[j]);
        p = end + (j < s->pp ? 2 : 0);
    }
    ck_assert_msg(*p == ']', "%s: BOUNDS has more than pp + 1 entries", file);
    if (s->pp == 1) {
        ck_assert_ptr_null(strstr(py, "PipelineModule("));
        ck_assert_ptr_nonnull(strstr(py, "(nn.Sequential):\n"));
        return;
    }
    for (j = 0; j < s->pp; j++)
        if (s->bounds[j + 1] - s->bounds[j] > w)
            w = s->bounds[j + 1] - s->bounds[j];
    ck_assert(s->pp <= 256);
    partition_uniform(w * s->pp, s->pp, parts);
    for (j = 0; j <= s->pp; j++)
        ck_assert_int_eq(parts[j], j * w);
    ck_assert_ptr_nonnull(strstr(py, "partition_method='uniform'"));
    ck_assert_ptr_null(strstr(py, "_partition_layers"));
}

/* deepspeed launcher flags (deepspeed/launcher/runner.py) and the script
 * flags of deepspeed.add_config_arguments, 0.14.4 and 0.19.5: not in the
 * config key lists, named here from those files.  runner.py's
 * "-i/--include" (host:gpu,gpu@host:...) comes when a host's ranks use
 * GPUs other than 0..n-1. */
static void check_deepspeed_sh(const char *text, const char *file)
{
    static const char *const known[] = {"--hostfile", "--master_addr", "--master_port",
                                        "--deepspeed", "--deepspeed_config", "--include",
                                        NULL};
    const char *p = strstr(text, "exec deepspeed");
    int n = 0;

    ck_assert_ptr_nonnull(p);
    while ((p = strstr(p, " --")) != NULL) {
        char w[64];
        int k = 0, i, ok = 0;
        p++;
        while (k < 63 && p[k] && p[k] != ' ' && p[k] != '\n')
            w[k] = p[k], k++;
        w[k] = '\0';
        for (i = 0; known[i]; i++)
            ok |= strcmp(known[i], w) == 0;
        ck_assert_msg(ok, "%s: deepspeed flag '%s' unknown", file, w);
        note("%s deepspeed %s", cur_export, w);
        n++;
        p += k;
    }
    ck_assert_int_eq(n, strstr(text, " --include ") != NULL ? 6 : 5);
}

/* ---- one export ------------------------------------------------------ */

/* The strategy's shape as a feature. */
static void note_shape(const fmt_strategy *s)
{
    int j, uneven = 0;

    for (j = 1; j < s->pp; j++)
        uneven |= s->bounds[j + 1] - s->bounds[j] != s->bounds[1] - s->bounds[0];
    note("pp %s, tp %s, dp %s%s%s", s->pp > 1 ? ">1" : "1", s->tp > 1 ? ">1" : "1",
         s->dp > 1 ? ">1" : "1", uneven ? ", uneven stages" : "",
         s->tp_heads != NULL ? ", heads split unevenly" : "");
}

static int passed[4], refused[4];
static int must_export; /* 1: the plan was made for the target: exit 0 */

static char *file_in(const char *dir, const char *name)
{
    char p[PATHN];
    int n = snprintf(p, sizeof p, "%s/%s", dir, name);

    ck_assert_msg(n > 0 && (size_t)n < sizeof p, "path too long: %s/%s", dir, name);
    return tu_slurp(p);
}

static void one_export(const char *plan, const plan_doc *d, int k,
                       const char *target, int ti, const char *version, int vi)
{
    char dir[PATHN], so[PATHN], se[PATHN], ks[16], label[PATHN + 64];
    const char *args[16];
    const fmt_strategy *s = &d->s[k - 1];
    int n = 0, rc;

    snprintf(ks, sizeof ks, "%d", k);
    snprintf(dir, sizeof dir, "%s/x", tmp_dir);
    tu_remove_tree(dir);
    snprintf(so, sizeof so, "%s/out", tmp_dir);
    snprintf(se, sizeof se, "%s/err", tmp_dir);
    snprintf(label, sizeof label, "%s #%d %s %s", plan, k, target, version ? version : "");
    args[n++] = "export";
    args[n++] = "--plan";
    args[n++] = plan;
    args[n++] = "--strategy";
    args[n++] = ks;
    args[n++] = "--to";
    args[n++] = target;
    if (version) {
        args[n++] = "--target-version";
        args[n++] = version;
    }
    args[n++] = "--output";
    args[n++] = dir;
    args[n++] = "--quiet";
    args[n] = NULL;
    snprintf(cur_export, sizeof cur_export, "%s v%d", target, vi);
    note_shape(s);
    rc = tu_run_planner(NULL, args, so, se);
    note("%s exit %d", cur_export, rc);
    if (rc != 0) {
        char *e = tu_slurp(se);
        /* a plan made for this launcher (plan --launcher) is never refused */
        ck_assert_msg(!must_export, "%s: planned for it, yet exit %d: %s", label, rc, e);
        ck_assert_msg(rc == 3 || rc == 6, "%s: exit %d: %s", label, rc, e);
        ck_assert_msg(strncmp(e, "planner: ", 9) == 0, "%s: exit %d without a reason", label, rc);
        if (rc == 6)
            ck_assert_msg(strstr(e, "cannot express: ") != NULL, "%s: %s", label, e);
        note_reason(e);
        free(e);
        refused[ti]++;
        return;
    }
    passed[ti]++;
    if (ti == 0) {
        char *t = file_in(dir, "megatron.sh");
        megargs a;
        int nb[256], j, l, sum = 0, blocks = 0;
        ck_assert_ptr_nonnull(t);
        check_megatron_args(t, &meg[vi], label, &a);
        check_torchrun_lines(t, label);
        ck_assert_int_eq(a.pp, s->pp);
        ck_assert(a.pp <= 256);
        megatron_stages(&a, nb, label);
        for (j = 0; j < s->pp; j++) {
            int want = 0;
            for (l = s->bounds[j]; l < s->bounds[j + 1]; l++)
                want += d->model.layers[l].kind == FMT_KIND_TRANSFORMER;
            ck_assert_msg(nb[j] == want, "%s: stage %d gets %d blocks, the plan %d",
                          label, j, nb[j], want);
            sum += nb[j];
        }
        for (l = 0; l < d->model.nlayers; l++)
            blocks += d->model.layers[l].kind == FMT_KIND_TRANSFORMER;
        ck_assert_int_eq(sum, blocks);
        ck_assert_int_eq(a.num_layers, blocks);
        /* Megatron-LM derives the micro-batch count global / (micro x dp)
         * and asserts it is whole: it must be the plan's */
        ck_assert_int_eq(flag_value(t, "--global-batch-size"),
                         flag_value(t, "--micro-batch-size") * s->gas * s->dp);
        free(t);
    } else if (ti == 1) {
        char *c = file_in(dir, "ds_config.json"), *py = file_in(dir, "hetplan_pipe.py");
        char *sh = file_in(dir, "deepspeed.sh");
        cJSON *j = cJSON_Parse(c);
        int keys = 0;
        ck_assert_msg(j != NULL, "%s: ds_config.json is not JSON", label);
        check_ds_keys(j, "", &ds[vi], label, &keys);
        ck_assert_int_ge(keys, 8);
        /* DeepSpeed's batch identity: train_batch_size =
         * micro-batch x gradient accumulation x data-parallel size */
        ck_assert_int_eq(cJSON_GetObjectItem(j, "train_batch_size")->valueint,
                         cJSON_GetObjectItem(j, "train_micro_batch_size_per_gpu")->valueint *
                             cJSON_GetObjectItem(j, "gradient_accumulation_steps")->valueint *
                             s->dp);
        ck_assert_int_eq(cJSON_GetObjectItem(j, "train_batch_size")->valueint, d->global_batch);
        cJSON_Delete(j);
        check_pipe(py, s, label);
        check_deepspeed_sh(sh, label);
        free(c);
        free(py);
        free(sh);
    } else if (ti == 2) {
        char *t = file_in(dir, "torchrun.sh");
        char want[2048] = "HETPLAN_STAGE_BOUNDARIES=";
        int j;
        ck_assert_ptr_nonnull(t);
        check_torchrun_lines(t, label);
        for (j = 0; j <= s->pp; j++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d",
                     j ? "," : "", s->bounds[j]);
        ck_assert_msg(strstr(t, want) != NULL, "%s: no '%s'", label, want);
        if (s->tp_heads != NULL) {
            char *sh = file_in(dir, "shards.txt");
            note("%s shards.txt", cur_export);
            ck_assert_ptr_nonnull(sh);
            free(sh);
        }
        free(t);
    } else {
        char *t = file_in(dir, "hostfile"), *line, *save = NULL;
        int slots = 0;
        ck_assert_ptr_nonnull(t);
        for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            const char *q = strstr(line, " slots=");
            if (line[0] == '#')
                continue;
            ck_assert_ptr_nonnull(q);
            slots += atoi(q + 7);
        }
        /* one slot per rank: the strategy's tp x dp x pp GPUs, fewer than
         * the cluster's when it leaves some idle */
        ck_assert_int_eq(slots, s->tp * s->dp * s->pp);
        free(t);
    }
}

/* ---- the examples ---------------------------------------------------- */

static int is_kind(const char *path, const char *key)
{
    char *t = tu_slurp(path);
    int yes = t != NULL && strstr(t, key) != NULL;

    free(t);
    return yes;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The pairs the default run adds to the diagonal (file names in
 * examples/): each shows a feature no pair of the diagonal shows. */
static const char *const sample_extra[][2] = {
    {"amp-homogeneous.json", "gpt-neo-2.7b.json"}, /* virtual pipeline stages */
    {"amp-homogeneous.json", "gpt3-xl.json"},      /* ZeRO-3: Megatron-LM's FSDP */
    {"h100-node4.json", "llama-7b.json"},          /* FSDP's gradient dtype */
    {"mixed-generations.json", "gpt-neox-20b.json"}, /* deepspeed --include */
    {"mixed-generations.json", "opt-1.3b.json"},   /* GPUs out of order on a host */
    {"amp-het.json", "gpt2-345m.json"},     /* a host's ranks not consecutive */
    {"amp-het.json", "gpt2-amp.json"},      /* virtual stages per rank (core_v0.19.0) */
    {"h100-node4.json", "gpt3-xl.json"},    /* ZeRO-3 refused for core_r0.9.0 */
    {"h100-node4.json", "llama2-13b.json"}, /* pp 1, tp > 1, dp 1 */
    {"mixed-generations.json", "llama2-13b.json"}, /* --include; 0.19's GPU order */
    {NULL, NULL}};

/* HETPLAN_TEST_FULL=1: every pair, not the sample. */
static int full_sweep(void)
{
    const char *v = getenv("HETPLAN_TEST_FULL");

    return v != NULL && strcmp(v, "1") == 0;
}

/* 1 when pair (c, m) of the sorted lists is in the default sample; sets
 * cur_pair and cur_sampled for note(). */
static int sampled(int c, int nc, int m, char (*clusters)[PATHN],
                   char (*models)[PATHN])
{
    const char *cn = strrchr(clusters[c], '/') + 1, *mn = strrchr(models[m], '/') + 1;
    int k, yes = m % nc == c;

    for (k = 0; sample_extra[k][0] != NULL; k++)
        yes |= strcmp(sample_extra[k][0], cn) == 0 && strcmp(sample_extra[k][1], mn) == 0;
    snprintf(cur_pair, sizeof cur_pair, "%s with %s", cn, mn);
    cur_sampled = yes;
    return yes;
}

/* The clusters and models of examples/ (the clusters have "nodes"),
 * sorted by name. */
static void examples(char (*clusters)[PATHN], int *nc, char (*models)[PATHN], int *nm)
{
    DIR *dd = opendir(HETPLAN_SOURCE_DIR "/examples");
    struct dirent *e;

    *nc = *nm = 0;
    ck_assert_ptr_nonnull(dd);
    while ((e = readdir(dd)) != NULL) {
        char path[PATHN];
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 ||
            strncmp(e->d_name, "dtfm-", 5) == 0 || strncmp(e->d_name, "strategies-", 11) == 0 ||
            strstr(e->d_name, "-priced.") != NULL) /* amp-het again, with prices */
            continue;
        snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR, e->d_name);
        if (is_kind(path, "\"nodes\"") && *nc < 16)
            snprintf(clusters[(*nc)++], PATHN, "%s", path);
        else if (*nm < 32)
            snprintf(models[(*nm)++], PATHN, "%s", path);
    }
    closedir(dd);
    qsort(clusters, (size_t)*nc, PATHN, by_name);
    qsort(models, (size_t)*nm, PATHN, by_name);
    ck_assert_int_ge(*nc, 4);
    ck_assert_int_ge(*nm, 10);
}

START_TEST(every_example_every_target)
{
    static const char *const targets[] = {"megatron", "deepspeed", "torchrun", "hostfile"};
    static const char *const versions[4][2] = {{"core_r0.9.0", "core_v0.19.0"},
                                               {"0.14", "0.19"},
                                               {"1.13", "2.x"},
                                               {NULL, NULL}};
    char clusters[16][PATHN], models[32][PATHN];
    int nc = 0, nm = 0, c, m, plans = 0, pairs = 0, full = full_sweep();

    nfeature = 0;
    load_list(UP "/megatron-lm_core_r0.9.0_args.txt", &meg[0]);
    load_list(UP "/megatron-lm_core_v0.19.0_args.txt", &meg[1]);
    load_list(UP "/deepspeed_config_keys.txt", &ds[0]);
    load_list(UP "/deepspeed_v0.19.5_config_keys.txt", &ds[1]);
    load_list(UP "/torchrun_flags.txt", &tr);
    examples(clusters, &nc, models, &nm);
    for (c = 0; c < nc; c++)
        for (m = 0; m < nm; m++) {
            char plan[PATHN], so[PATHN], se[PATHN];
            const char *args[] = {"--cluster", clusters[c], "--model", models[m],
                                  "--top-k", "3", "--output", plan, "--quiet",
                                  NULL, NULL, NULL};
            plan_doc d;
            util_error err;
            int k, t, v, rc;
            if (!sampled(c, nc, m, clusters, models) && !full)
                continue;
            pairs++;
            snprintf(plan, sizeof plan, "%s/plan-%d-%d.json", tmp_dir, c, m);
            snprintf(so, sizeof so, "%s/p.out", tmp_dir);
            snprintf(se, sizeof se, "%s/p.err", tmp_dir);
            rc = tu_run_planner(NULL, args, so, se);
            if (rc == 2) { /* a model without a global batch */
                note("plan needs --global-batch");
                args[9] = "--global-batch";
                args[10] = "64";
                rc = tu_run_planner(NULL, args, so, se);
            }
            note("plan exit %d", rc);
            if (rc == 4) /* does not fit: nothing to export */
                continue;
            ck_assert_msg(rc == 0, "planning %s with %s: exit %d", clusters[c],
                          models[m], rc);
            memset(&d, 0, sizeof d);
            ck_assert_msg(plan_load_plan(plan, &d, &err) == UTIL_OK, "%s", err.msg);
            plans++;
            for (k = 1; k <= d.n; k++)
                for (t = 0; t < 4; t++)
                    for (v = 0; v < (t == 3 ? 1 : 2); v++)
                        one_export(plan, &d, k, targets[t], t, versions[t][v], v);
            plan_doc_free(&d);
        }
    ck_assert_int_ge(plans, full ? 8 : 6);
    printf("%d of %d (cluster, model) pairs planned%s, %d features shown\n", pairs,
           nc * nm, full ? "" : " (HETPLAN_TEST_FULL=1: every pair)", nfeature);
    /* the shipped strategies files, evaluated on their cluster and model */
    {
        static const char *const ev[][3] = {
            {"amp-het.json", "gpt2-amp.json", "strategies-amp-het.json"},
            {"h100-node4.json", "gpt2-345m.json", "strategies-gpt2-pp4.json"}};
        size_t i;
        for (i = 0; i < sizeof ev / sizeof ev[0]; i++) {
            char plan[PATHN], so[PATHN], se[PATHN], cl[PATHN], mo[PATHN], st[PATHN];
            const char *args[] = {"evaluate", "--cluster", cl, "--model", mo,
                                  "--strategies", st, "--output", plan, "--quiet", NULL};
            plan_doc d;
            util_error err;
            int k, t, v;
            snprintf(cl, sizeof cl, "%s/examples/%s", HETPLAN_SOURCE_DIR, ev[i][0]);
            snprintf(mo, sizeof mo, "%s/examples/%s", HETPLAN_SOURCE_DIR, ev[i][1]);
            snprintf(st, sizeof st, "%s/examples/%s", HETPLAN_SOURCE_DIR, ev[i][2]);
            snprintf(plan, sizeof plan, "%s/evaluated-%zu.json", tmp_dir, i);
            snprintf(cur_pair, sizeof cur_pair, "%s", ev[i][2]);
            cur_sampled = 1;
            snprintf(so, sizeof so, "%s/p.out", tmp_dir);
            snprintf(se, sizeof se, "%s/p.err", tmp_dir);
            ck_assert_msg(tu_run_planner(NULL, args, so, se) == 0, "evaluate %s", ev[i][2]);
            memset(&d, 0, sizeof d);
            ck_assert_msg(plan_load_plan(plan, &d, &err) == UTIL_OK, "%s", err.msg);
            for (k = 1; k <= d.n; k++)
                for (t = 0; t < 4; t++)
                    for (v = 0; v < (t == 3 ? 1 : 2); v++)
                        one_export(plan, &d, k, targets[t], t, versions[t][v], v);
            plan_doc_free(&d);
        }
    }
    for (c = 0; c < 4; c++) {
        printf("%-9s %4d written, %4d refused\n", targets[c], passed[c], refused[c]);
        ck_assert_msg(passed[c] > 0, "no %s export passed", targets[c]);
    }
    if (full)
        check_sample_covers();
    free_features();
    for (c = 0; c < 2; c++) {
        free_list(&meg[c]);
        free_list(&ds[c]);
    }
    free_list(&tr);
}
END_TEST

/* 1 when the model file at path has a ReLU MLP (family opt), which
 * Megatron-LM's GPT model lacks whatever the strategy. */
static int relu_model(const char *path)
{
    fmt_model m;
    util_error err;
    int relu;

    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_load_model(path, &m, &err) == UTIL_OK, "%s", err.msg);
    relu = m.mlp == FMT_MLP_RELU;
    fmt_model_free(&m);
    return relu;
}

/* planner plan --launcher T for every cluster and model of examples/ and
 * every launcher that constrains the search (Megatron-LM's two releases
 * differ in what they express, DeepSpeed's do not; torchrun expresses
 * every plan, which the case above exports): every strategy of the plan
 * exports to T with exit 0, without --target-version (the plan's
 * release), and passes the checks of one_export; no strategy was left
 * out.  A ReLU MLP (OPT) no Megatron-LM strategy expresses: plan exits 6
 * naming it. */
START_TEST(every_example_planned_for_its_launcher)
{
    static const char *const launchers[] = {"megatron", "megatron@core_v0.19.0",
                                            "deepspeed"};
    static const int ti[] = {0, 0, 1}, vi[] = {0, 1, 0};
    char clusters[16][PATHN], models[32][PATHN];
    int nc, nm, c, m, L, plans = 0, pairs = 0, full = full_sweep();

    load_list(UP "/megatron-lm_core_r0.9.0_args.txt", &meg[0]);
    load_list(UP "/megatron-lm_core_v0.19.0_args.txt", &meg[1]);
    load_list(UP "/deepspeed_config_keys.txt", &ds[0]);
    load_list(UP "/deepspeed_v0.19.5_config_keys.txt", &ds[1]);
    load_list(UP "/torchrun_flags.txt", &tr);
    examples(clusters, &nc, models, &nm);
    must_export = 1;
    nfeature = 0;
    for (c = 0; c < nc; c++)
        for (m = 0; m < nm; m++) {
            if (!sampled(c, nc, m, clusters, models) && !full)
                continue;
            pairs++;
            for (L = 0; L < 3; L++) {
                static const char *const tn[] = {"megatron", "deepspeed"};
                char plan[PATHN], so[PATHN], se[PATHN];
                const char *args[] = {"--cluster", clusters[c], "--model", models[m],
                                      "--launcher", launchers[L], "--top-k", "2",
                                      "--output", plan, "--quiet", NULL, NULL, NULL};
                plan_doc d;
                util_error err;
                char *e;
                int k, rc;
                snprintf(plan, sizeof plan, "%s/launcher-%d-%d-%d.json", tmp_dir, c, m, L);
                snprintf(so, sizeof so, "%s/p.out", tmp_dir);
                snprintf(se, sizeof se, "%s/p.err", tmp_dir);
                rc = tu_run_planner(NULL, args, so, se);
                if (rc == 2) { /* a model without a global batch */
                    args[11] = "--global-batch";
                    args[12] = "64";
                    rc = tu_run_planner(NULL, args, so, se);
                }
                note("plan --launcher %s exit %d", launchers[L], rc);
                if (rc == 4) /* does not fit: nothing to export */
                    continue;
                e = tu_slurp(se);
                if (ti[L] == 0 && relu_model(models[m])) {
                    ck_assert_msg(rc == 6 && strstr(e, "ReLU MLP") != NULL,
                                  "planning %s with %s for %s: exit %d: %s",
                                  clusters[c], models[m], launchers[L], rc, e);
                    free(e);
                    continue;
                }
                ck_assert_msg(rc == 0, "planning %s with %s for %s: exit %d: %s",
                              clusters[c], models[m], launchers[L], rc, e);
                ck_assert_msg(strstr(e, "left out") == NULL, "%s", e);
                free(e);
                memset(&d, 0, sizeof d);
                ck_assert_msg(plan_load_plan(plan, &d, &err) == UTIL_OK, "%s", err.msg);
                ck_assert_str_eq(d.launcher, tn[ti[L]]);
                plans++;
                for (k = 1; k <= d.n; k++)
                    one_export(plan, &d, k, tn[ti[L]], ti[L], NULL, vi[L]);
                plan_doc_free(&d);
            }
        }
    must_export = 0;
    ck_assert_int_ge(plans, full ? 3 * 8 : 3 * 5);
    printf("%d of %d (cluster, model) pairs planned for each launcher%s, %d features "
           "shown\n", pairs, nc * nm, full ? "" : " (HETPLAN_TEST_FULL=1: every pair)",
           nfeature);
    if (full)
        check_sample_covers();
    free_features();
    for (c = 0; c < 2; c++) {
        free_list(&meg[c]);
        free_list(&ds[c]);
    }
    free_list(&tr);
}
END_TEST

/* The release names --target-version takes map to the versions the
 * lists above are for. */
START_TEST(version_names)
{
    ck_assert_str_eq(export_version_name(EXPORT_MEGATRON, EXPORT_VERSION_OLD), "core_r0.9.0");
    ck_assert_str_eq(export_version_name(EXPORT_MEGATRON, EXPORT_VERSION_NEW), "core_v0.19.0");
    ck_assert_int_eq(export_version_from_name(EXPORT_MEGATRON, "core_v0.19.0"), EXPORT_VERSION_NEW);
    ck_assert_int_eq(export_version_from_name(EXPORT_DEEPSPEED, "0.14.4"), EXPORT_VERSION_OLD);
    ck_assert_int_eq(export_version_from_name(EXPORT_DEEPSPEED, "0.19.5"), EXPORT_VERSION_NEW);
    ck_assert_int_eq(export_version_from_name(EXPORT_TORCHRUN, "1.13.1"), EXPORT_VERSION_OLD);
    ck_assert_int_eq(export_version_from_name(EXPORT_TORCHRUN, "2.4"), EXPORT_VERSION_NEW);
    ck_assert_int_eq(export_version_from_name(EXPORT_TORCHRUN, "core_r0.9.0"), -1);
    ck_assert_int_eq(export_version_from_name(EXPORT_HOSTFILE, "1.13"), -1);
    ck_assert_ptr_null(export_version_name(EXPORT_NTARGETS, 0));
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("export_upstream");
    TCase *t = tcase_create("names");

    tcase_add_test(t, version_names);
    suite_add_tcase(s, t);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("export_upstream_data");
    TCase *t = tcase_create("examples");

    tcase_set_timeout(t, 600);
    tcase_add_test(t, every_example_every_target);
    suite_add_tcase(s, t);
    /* its own ctest entry (CK_RUN_CASE=launchers in CMakeLists.txt) */
    t = tcase_create("launchers");
    tcase_set_timeout(t, 900);
    tcase_add_test(t, every_example_planned_for_its_launcher);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    const char *t = getenv("TMPDIR");
    int rc;

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-upstream.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    rc = tu_main(argc, argv, plain_suite, data_suite, UP);
    tu_remove_tree(tmp_dir);
    return rc;
}
