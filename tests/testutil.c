/* tests/testutil.c: helpers shared by several Check test programs that
 * need the project's libraries (declared in tests/testutil.h, linked into
 * every test as hetplan_testutil). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* ---- the planner binary ---------------------------------------------- */

int tu_run_planner(const char *dir, const char *const *args,
                   const char *out_path, const char *err_path)
{
    pid_t pid = fork();
    int st;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char *argv[32];
        int i, fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || (dir != NULL && chdir(dir) != 0))
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

/* ---- shell commands --------------------------------------------------- */

int tu_run_shell(const char *cmd, char *out, size_t cap)
{
    char full[2048], path[] = "/tmp/hetplan-cmd-XXXXXX";
    FILE *f;
    size_t n;
    int fd = mkstemp(path), rc;

    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(full, sizeof full, "%s >'%s' 2>&1", cmd, path);
    rc = system(full);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

char *tu_capture(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    char *buf = NULL;
    size_t n = 0, cap = 0, k;
    char chunk[4096];
    int st;

    ck_assert_ptr_nonnull(p);
    while ((k = fread(chunk, 1, sizeof chunk, p)) > 0) {
        if (n + k + 1 > cap) {
            cap = (n + k + 1) * 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        memcpy(buf + n, chunk, k);
        n += k;
    }
    st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (buf == NULL)
        buf = calloc(1, 1);
    else
        buf[n] = '\0';
    ck_assert_ptr_nonnull(buf);
    return buf;
}

cJSON *tu_bench_run(const char *prog, const char *dir, int *status)
{
    char cmd[1024], *out;
    cJSON *doc;

    ck_assert(snprintf(cmd, sizeof cmd, "'%s' '%s' 2>/dev/null", prog, dir) <
              (int)sizeof cmd);
    out = tu_capture(cmd, status);
    doc = cJSON_Parse(out);
    ck_assert_msg(doc != NULL, "not JSON: %.200s", out);
    free(out);
    return doc;
}

const cJSON *tu_get(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    ck_assert_msg(v != NULL, "no '%s'", key);
    return v;
}

double tu_num(const cJSON *obj, const char *key)
{
    const cJSON *v = tu_get(obj, key);

    ck_assert_msg(cJSON_IsNumber(v), "'%s' is not a number", key);
    return v->valuedouble;
}

/* ---- inputs ----------------------------------------------------------- */

const char tu_two_nodes_json[] =
    "{\"name\": \"two\", \"nodes\": ["
    "{\"name\": \"a\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 100, \"nic_gbps\": 100},"
    "{\"name\": \"b\", \"device\": \"V100\", \"gpus\": 2, \"intra_gbps\": 100, \"nic_gbps\": 100}]}";

const char tu_gpt2_small4_json[] =
    "{\"name\": \"g4\", \"training\": {\"global_batch\": 8},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 4, \"hidden\": 256,"
    " \"heads\": 4, \"seq\": 128, \"vocab\": 1000}}";

const char tu_flat_cluster_json[] =
    "{\"name\":\"x\",\"device_types\":{\"X\":{\"memory_gib\":80,\"tflops_fp16\":1,"
    "\"mem_bw_gbs\":1000}},\"nodes\":[{\"name\":\"n\",\"device\":\"X\",\"gpus\":4,"
    "\"intra_gbps\":8000,\"nic_gbps\":100}]}";

const char tu_flat_model_json[] =
    "{\"name\":\"flat\",\"training\":{\"global_batch\":4},"
    "\"shape\":{\"hidden\":48,\"heads\":24,\"seq\":16,\"vocab\":100,\"ffn\":768},"
    "\"layers\":[{\"name\":\"l\",\"kind\":\"generic\",\"repeat\":2,\"params\":0,"
    "\"fwd_flops\":1e12,\"out_bytes\":0,\"act_bytes\":0,\"tp_flops_frac\":1,"
    "\"traffic_bytes\":0,\"traffic_rep_bytes\":0,\"act_rep_bytes\":0,"
    "\"tp_comm_bytes\":0,\"tp_collectives\":0,\"kernels\":0}]}";

void tu_device_x(fmt_device_type *dt)
{
    memset(dt, 0, sizeof *dt);
    strcpy(dt->name, "X");
    dt->mem_bytes = 80e9;
    dt->flops_fp16 = 100e12;
    dt->mem_bw = 1e12;
}

void tu_cluster_nodes(fmt_cluster *c, int n, int g, double intra_bw)
{
    int i;

    memset(c, 0, sizeof *c);
    c->ntypes = 1;
    c->types = calloc(1, sizeof *c->types);
    ck_assert_ptr_nonnull(c->types);
    tu_device_x(&c->types[0]);
    c->nnodes = n;
    c->nodes = calloc((size_t)n, sizeof *c->nodes);
    ck_assert_ptr_nonnull(c->nodes);
    for (i = 0; i < n; i++) {
        snprintf(c->nodes[i].name, sizeof c->nodes[i].name, "n%d", i);
        c->nodes[i].gpus = g;
        c->nodes[i].intra_bw = intra_bw;
        c->nodes[i].nic_bw = 100.0 * TU_GB8;
    }
    ck_assert_int_eq(fmt_cluster_index(c), UTIL_OK);
}

void tu_selene_json(char *buf, size_t cap, const char *name, int nodes,
                    int nic_gbps)
{
    int k = snprintf(buf, cap,
                     "{\"name\":\"%s\",\"nodes\":[{\"name\":\"a\",\"count\":%d,"
                     "\"device\":\"A100-80GB\",\"gpus\":8,\"intra_gbps\":2400,"
                     "\"nic_gbps\":%d}]}",
                     name, nodes, nic_gbps);

    ck_assert(k >= 0 && (size_t)k < cap);
}

void tu_load_selene(fmt_cluster *c, fmt_model *m, const char *name, int nodes,
                    int nic_gbps, const char *model_json, const char *model_path)
{
    char cj[512];
    util_error err;

    tu_selene_json(cj, sizeof cj, name, nodes, nic_gbps);
    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_parse_cluster(cj, "selene-cluster.json", c, &err) == UTIL_OK,
                  "%s", err.msg);
    if (model_json != NULL)
        ck_assert_msg(fmt_parse_model(model_json, "selene-model.json", m, &err) ==
                          UTIL_OK, "%s", err.msg);
    else
        ck_assert_msg(fmt_load_model(model_path, m, &err) == UTIL_OK, "%s",
                      err.msg);
}

void tu_parse_inputs(const char *cluster_json, const char *model_json,
                     fmt_cluster *c, fmt_model *m)
{
    util_error err;

    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_parse_cluster(cluster_json, "c.json", c, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_msg(fmt_parse_model(model_json, "m.json", m, &err) == UTIL_OK, "%s",
                  err.msg);
}

void tu_generic_model(fmt_model *m, int n, double out_bytes)
{
    int i;

    memset(m, 0, sizeof *m);
    m->nlayers = n;
    m->dtype_bytes = 2;
    m->layers = calloc((size_t)n, sizeof *m->layers);
    ck_assert_ptr_nonnull(m->layers);
    for (i = 0; i < n; i++) {
        snprintf(m->layers[i].name, sizeof m->layers[i].name, "l%d", i);
        m->layers[i].kind = FMT_KIND_GENERIC;
        m->layers[i].out_bytes = out_bytes;
    }
}

void tu_profile_add(fmt_profile *p, int nlayers, const char *dev, int mbs,
                    double fwd, double bwd)
{
    fmt_profile_entry *e;
    int i;

    p->entries = realloc(p->entries, (size_t)(p->nentries + 1) * sizeof *p->entries);
    ck_assert_ptr_nonnull(p->entries);
    e = &p->entries[p->nentries++];
    memset(e, 0, sizeof *e);
    strcpy(e->device, dev);
    e->tp = 1;
    e->mbs = mbs;
    e->fwd = malloc((size_t)nlayers * sizeof *e->fwd);
    e->bwd = malloc((size_t)nlayers * sizeof *e->bwd);
    ck_assert(e->fwd != NULL && e->bwd != NULL);
    for (i = 0; i < nlayers; i++) {
        e->fwd[i] = fwd;
        e->bwd[i] = bwd;
    }
    p->nlayers = nlayers;
}

/* ---- what-if --------------------------------------------------------- */

void tu_one_stage(fmt_strategy *s, const fmt_model *m, int tp, const int *dev)
{
    int k;

    ck_assert_int_eq(fmt_strategy_alloc(s, tp, 1, 1), UTIL_OK);
    for (k = 0; k < tp; k++)
        s->ranks[k] = dev != NULL ? dev[k] : k;
    s->bounds[1] = m->nlayers;
    s->mbs = 1;
    s->gas = 4;
}

int tu_whatif(const fmt_cluster *c, const fmt_model *m, const fmt_strategy *s,
              const whatif_slow *sl, int n, whatif_result *w)
{
    whatif_params wp;
    cost_params p;
    util_error err;

    memset(&err, 0, sizeof err);
    cost_params_init(&p);
    whatif_params_init(&wp);
    wp.slow = sl;
    wp.nslow = n;
    return whatif_run(c, m, NULL, &p, s, &wp, w, &err);
}

/* ---- DT-FM ------------------------------------------------------------ */

double tu_dtfm_search(const dtfm_problem *p, int method, long evals,
                      unsigned long long seed, dtfm_search_result *keep)
{
    dtfm_search_params sp;
    dtfm_search_result r;
    double c;

    dtfm_search_params_init(&sp);
    sp.method = method;
    sp.max_evals = evals;
    sp.seed = seed;
    ck_assert_int_eq(dtfm_search(p, &sp, &r, NULL), UTIL_OK);
    c = r.cost_s;
    if (keep)
        *keep = r;
    else
        dtfm_search_result_free(&r);
    return c;
}

void tu_strategy(fmt_strategy *s, int tp, int dp, int pp, const int *bounds,
                 int gas)
{
    int k;

    ck_assert_int_eq(fmt_strategy_alloc(s, tp, dp, pp), UTIL_OK);
    for (k = 0; k < tp * dp * pp; k++)
        s->ranks[k] = k;
    for (k = 0; bounds != NULL && k <= pp; k++)
        s->bounds[k] = bounds[k];
    s->gas = gas;
}

Suite *tu_suite_of(const char *suite, const tu_case *cases, size_t n)
{
    Suite *su = suite_create(suite);
    size_t k, i;

    for (k = 0; k < n; k++) {
        TCase *tc = tcase_create(cases[k].name);
        for (i = 0; i < cases[k].n; i++)
            tcase_add_test(tc, cases[k].tests[i]);
        if (cases[k].timeout_s > 0)
            tcase_set_timeout(tc, cases[k].timeout_s);
        if (cases[k].setup != NULL || cases[k].teardown != NULL)
            tcase_add_checked_fixture(tc, cases[k].setup, cases[k].teardown);
        suite_add_tcase(su, tc);
    }
    return su;
}

Suite *tu_suite(const char *suite, const char *tcase, const TTest *const *tests,
                size_t n)
{
    tu_case c = {tcase, tests, n, 0.0, NULL, NULL};

    return tu_suite_of(suite, &c, 1);
}

int tu_run_tests(const char *suite, const TTest *const *tests, size_t n)
{
    return tu_run(tu_suite(suite, "core", tests, n));
}

void tu_sailor_model(fmt_model *m)
{
    char *text = tu_slurp(TU_DATA "/sailor-opt/model_OPT-350.json"), *out;
    cJSON *doc, *tf;
    util_error err;

    ck_assert_ptr_nonnull(text);
    doc = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(doc);
    tf = cJSON_GetObjectItemCaseSensitive(doc, "transformer");
    ck_assert(cJSON_IsObject(tf));
    cJSON_DeleteItemFromObjectCaseSensitive(tf, "mlp");
    cJSON_AddStringToObject(tf, "mlp", "relu");
    out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    ck_assert_ptr_nonnull(out);
    memset(&err, 0, sizeof err);
    ck_assert_msg(fmt_parse_model(out, "model_OPT-350.json", m, &err) == UTIL_OK,
                  "%s", err.msg);
    cJSON_free(out);
    ck_assert_int_eq(m->mlp, FMT_MLP_RELU);
}

double tu_sailor_peak(const char *tag, int gbs, const cost_params *p)
{
    char path[512];
    fmt_cluster c;
    fmt_model m;
    fmt_strategy *s = NULL;
    cost_result r;
    util_error err;
    double peak = 0.0;
    int n = 0, i;

    memset(&err, 0, sizeof err);
    snprintf(path, sizeof path, TU_DATA "/sailor-opt/%s_cluster.json", tag);
    ck_assert_msg(fmt_load_cluster(path, &c, &err) == UTIL_OK, "%s", err.msg);
    tu_sailor_model(&m);
    snprintf(path, sizeof path, TU_DATA "/sailor-opt/%s_strat.json", tag);
    ck_assert_msg(fmt_load_strategies(path, &c, &m, gbs, &s, &n, &err) == UTIL_OK,
                  "%s", err.msg);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(cost_evaluate(&c, &m, NULL, p, &s[0], &r, &err), UTIL_OK);
    ck_assert_msg(r.fits, "%s predicted not to fit (it ran)", tag);
    for (i = 0; i < r.nranks; i++)
        if (r.mem_bytes[i] > peak)
            peak = r.mem_bytes[i];
    cost_result_free(&r);
    fmt_strategy_free(&s[0]);
    free(s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
    return peak;
}
