/* bench/dtfm_scenarios.c: the DT-FM scheduler on the paper's five
 * 64-GPU scenarios (examples/dtfm-*.json, "convention":"paper") and on
 * the public scheduler's own instances of them
 * (../shared/data/dtfm/scenarios.json, "convention":"public-code", with
 * the costs the public Python code reached), plus optimality gaps on
 * small random instances solved exactly, gaps to a lower bound on
 * generated 64-1024-GPU instances (random geo-distributed networks and
 * networks with a planted optimum, decentral/instances.c) with the GA's
 * margin over Kernighan-Lin and random, and the planner command's wall
 * time against its --seconds budget.  Prints one JSON object.
 *
 * usage: dtfm-scenarios [--seconds S] [--hard-seconds S] [--hard-evals N]
 *                       [--prove-seconds S] [--case N]
 *                       [--seed N] [--quick] [--planner PATH]
 *                       [--only scenarios|small|hard|budget] */
#include <math.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "costmodel.h"
#include "decentral.h"

#define DATA HETPLAN_SOURCE_DIR "/../shared/data/dtfm/scenarios.json"

static const char *const paper_files[5] = {
    "dtfm-datacenter.json", "dtfm-spot.json", "dtfm-campuses.json",
    "dtfm-regional.json", "dtfm-worldwide.json"};
static const char *const names[5] = {
    "datacenter-on-demand", "datacenter-spot", "two-campuses",
    "regional-geo-distributed", "world-wide-geo-distributed"};
static const int methods[4] = {DTFM_GA, DTFM_SA, DTFM_KL,
                               DTFM_RANDOM};

static double seconds_opt = 5.0;
static double hard_seconds_opt = 5.0;
static long hard_evals_opt = 0; /* > 0: GA and KL stop on evaluations */
static double prove_seconds_opt = 60.0;
static int case_opt = 0; /* run one scenario number (both conventions); 0 = all */
static const char *planner_opt = NULL;
static const char *only_opt = NULL; /* run one part: scenarios, small, hard, budget */

static int part(const char *name)
{
    return only_opt == NULL || strcmp(only_opt, name) == 0;
}
static unsigned long long seed_opt = 0;

static void print_num(double v)
{
    if (isfinite(v))
        printf("%.6g", v);
    else
        printf("null");
}

/* Run one searcher and print {"cost_s":...}; returns its cost (NAN on
 * failure). */
static double run_one(const dtfm_problem *p, int method)
{
    dtfm_search_params sp;
    dtfm_search_result r;
    dtfm_result res;
    util_error err;
    int rc;
    double cost;

    memset(&err, 0, sizeof err);
    dtfm_search_params_init(&sp);
    sp.method = method;
    sp.seed = seed_opt;
    sp.seconds = seconds_opt;
    sp.checkpoint_s = 1.0;
    sp.stall = method == DTFM_SA ? 3 : 100;
    if (method == DTFM_RANDOM) { /* the public baseline: 5000 samples */
        sp.stall = 0;
        sp.max_evals = 5000;
    }
    rc = dtfm_search(p, &sp, &r, &err);
    if ((rc != UTIL_OK && rc != UTIL_ETIMEOUT) ||
        dtfm_evaluate(p, r.group_of, &res, &err) != UTIL_OK) {
        printf("{\"error\":\"%s\"}", err.msg);
        dtfm_search_result_free(&r);
        return NAN;
    }
    cost = res.total_s;
    printf("{\"cost_s\":");
    print_num(res.total_s);
    printf(",\"dp_s\":");
    print_num(res.dp_s);
    printf(",\"pp_s\":");
    print_num(res.pp_s);
    printf(",\"wall_s\":");
    print_num(r.elapsed_s);
    printf(",\"best_at_s\":");
    print_num(r.best_at_s);
    printf(",\"cost_at_1s_s\":");
    print_num(r.checkpoint_cost_s);
    printf(",\"evaluations\":%ld,\"timed_out\":%s}", r.evaluated,
           r.timed_out ? "true" : "false");
    dtfm_result_free(&res);
    dtfm_search_result_free(&r);
    return cost;
}

/* Exact search over interchangeable devices (dtfm_prove) with the best
 * searcher's cost as the incumbent: prints "best_s" (the cheaper of the
 * two), the lower bound, the gap and whether the bound is proven exact. */
static void prove(const dtfm_problem *p, double upper)
{
    dtfm_prove_params pp;
    dtfm_proof pr;
    dtfm_bound b;

    dtfm_prove_params_init(&pp);
    pp.seconds = prove_seconds_opt;
    pp.upper_s = isfinite(upper) ? upper : 0.0;
    printf(",\"proof\":");
    if (dtfm_lower_bound(p, &b, NULL) != UTIL_OK || dtfm_prove(p, &pp, &pr, NULL) != UTIL_OK) {
        printf("{\"error\":\"no bound\"}");
        return;
    }
    printf("{\"searchers_best_s\":");
    print_num(upper);
    printf(",\"best_s\":");
    print_num(pr.best_s);
    printf(",\"improved\":%s,\"simple_bound_s\":", pr.group_of ? "true" : "false");
    print_num(b.total_s);
    printf(",\"bound_s\":");
    print_num(pr.lower_s);
    printf(",\"gap\":");
    print_num((pr.best_s - pr.lower_s) / pr.lower_s);
    printf(",\"bound_exact\":%s,\"classes\":%d,\"compositions\":%ld,\"level_s\":",
           pr.complete ? "true" : "false", pr.classes, pr.compositions);
    print_num(pr.level_s);
    printf(",\"nodes\":%ld,\"wall_s\":", pr.nodes);
    print_num(pr.elapsed_s);
    printf("}");
    dtfm_proof_free(&pr);
}

static void run_all(const dtfm_problem *p)
{
    int m;
    double best = NAN;

    for (m = 0; m < 4; m++) {
        double c;
        printf(",\"%s\":", dtfm_method_name(methods[m]));
        c = run_one(p, methods[m]);
        if (isfinite(c) && !(c >= best))
            best = c;
        fflush(stdout);
    }
    prove(p, best);
    fflush(stdout);
}

/* One public-code case as a hetplan decentralized cluster document. */
static char *public_case_doc(const cJSON *cs)
{
    cJSON *doc = cJSON_CreateObject(), *regs = cJSON_CreateArray(), *pairs;
    const cJSON *groups = cJSON_GetObjectItem(cs, "groups"), *g, *in, *bt, *gp;
    char *text = NULL, nm[32];
    int i = 0;

    cJSON_AddStringToObject(doc, "name", "public-code");
    cJSON_AddItemToObject(doc, "regions", regs);
    cJSON_ArrayForEach(g, groups) {
        cJSON *r = cJSON_CreateObject();
        const cJSON *name = cJSON_GetObjectItem(g, "name");
        snprintf(nm, sizeof nm, "g%d", i++);
        cJSON_AddStringToObject(r, "name", cJSON_IsString(name) ? name->valuestring : nm);
        cJSON_AddNumberToObject(r, "gpus", cJSON_GetObjectItem(g, "gpus")->valuedouble);
        cJSON_AddItemToArray(regs, r);
    }
    in = cJSON_GetObjectItem(cs, "inside");
    bt = cJSON_GetObjectItem(cs, "between");
    gp = cJSON_GetObjectItem(cs, "group_pairs");
    if (in) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "latency_ms", cJSON_GetObjectItem(in, "latency_ms")->valuedouble);
        cJSON_AddNumberToObject(o, "bandwidth_gbps", cJSON_GetObjectItem(in, "bandwidth")->valuedouble);
        cJSON_AddItemToObject(doc, "inside", o);
    }
    if (bt) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "latency_ms", cJSON_GetObjectItem(bt, "latency_ms")->valuedouble);
        cJSON_AddNumberToObject(o, "bandwidth_gbps", cJSON_GetObjectItem(bt, "bandwidth")->valuedouble);
        cJSON_AddItemToObject(doc, "between", o);
    }
    if (gp) {
        pairs = cJSON_CreateArray();
        cJSON_ArrayForEach(g, gp) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "a", cJSON_GetObjectItem(g, "a")->valuestring);
            cJSON_AddStringToObject(o, "b", cJSON_GetObjectItem(g, "b")->valuestring);
            cJSON_AddNumberToObject(o, "latency_ms", cJSON_GetObjectItem(g, "latency_ms")->valuedouble);
            cJSON_AddNumberToObject(o, "bandwidth_gbps", cJSON_GetObjectItem(g, "bandwidth")->valuedouble);
            cJSON_AddItemToArray(pairs, o);
        }
        cJSON_AddItemToObject(doc, "region_pairs", pairs);
    }
    text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return text;
}

static void print_public(const cJSON *pub, int cs)
{
    char key[8];
    const cJSON *res, *kl, *rnd, *v;

    snprintf(key, sizeof key, "%d", cs);
    res = cJSON_GetObjectItem(cJSON_GetObjectItem(pub, "cases"), key);
    kl = cJSON_GetObjectItem(cJSON_GetObjectItem(pub, "kernighan_lin_baseline_seed0"), key);
    rnd = cJSON_GetObjectItem(cJSON_GetObjectItem(pub, "random_assignment_seeds0-2"), key);
    printf(",\"public\":{\"ga\":{\"cost_s\":");
    print_num(res ? cJSON_GetObjectItem(res, "total_s")->valuedouble : NAN);
    printf(",\"dp_s\":");
    print_num(res ? cJSON_GetObjectItem(res, "dp_s")->valuedouble : NAN);
    printf(",\"pp_s\":");
    print_num(res ? cJSON_GetObjectItem(res, "pp_s")->valuedouble : NAN);
    printf(",\"wall_s\":");
    print_num(res ? cJSON_GetObjectItem(res, "wall_s")->valuedouble : NAN);
    printf("},\"kl_cost_s\":");
    if (cJSON_IsNumber(kl))
        print_num(kl->valuedouble);
    else if (cJSON_IsString(kl))
        printf("\"%s\"", kl->valuestring);
    else
        printf("null");
    printf(",\"random_cost_s\":");
    v = cJSON_IsArray(rnd) ? cJSON_GetArrayItem(rnd, 0) : NULL;
    print_num(v ? v->valuedouble : NAN);
    printf("}");
}

/* ---- small instances ------------------------------------------------- */

static double small_cost(const dtfm_problem *p, int method, long evals)
{
    dtfm_search_params sp;
    dtfm_search_result r;
    double c;

    dtfm_search_params_init(&sp);
    sp.method = method;
    sp.seed = seed_opt;
    sp.max_evals = evals;
    if (dtfm_search(p, &sp, &r, NULL) != UTIL_OK)
        return NAN;
    c = r.cost_s;
    dtfm_search_result_free(&r);
    return c;
}

/* ---- generated 64-1024-GPU instances ---------------------------------- */

/* summary over the generated instances */
static int hard_count, hard_exact;
static double hard_kl_margin, hard_rnd_margin, hard_min_kl_margin = 1e300,
    hard_max_exact_gap;

typedef struct hard_run {
    double cost, wall, best_at;
    long evals;
    int timed_out, ok;
} hard_run;

static hard_run hard_one(const dtfm_problem *p, int method)
{
    dtfm_search_params sp;
    dtfm_search_result r;
    hard_run h;
    int rc;

    memset(&h, 0, sizeof h);
    dtfm_search_params_init(&sp);
    sp.method = method;
    sp.seed = seed_opt;
    sp.seconds = hard_seconds_opt;
    sp.stall = 100;
    if (hard_evals_opt > 0 && method != DTFM_RANDOM) {
        /* equal evaluation budgets: load-independent, reproducible */
        sp.seconds = 0;
        sp.stall = 0;
        sp.max_evals = hard_evals_opt;
    }
    if (method == DTFM_RANDOM) { /* the public baseline: 5000 samples */
        sp.stall = 0;
        sp.max_evals = 5000;
    }
    rc = dtfm_search(p, &sp, &r, NULL);
    if (rc != UTIL_OK && rc != UTIL_ETIMEOUT)
        return h;
    h.ok = 1;
    h.cost = r.cost_s;
    h.wall = r.elapsed_s;
    h.best_at = r.best_at_s;
    h.evals = r.evaluated;
    h.timed_out = r.timed_out;
    dtfm_search_result_free(&r);
    return h;
}

static void print_hard_run(const char *name, const hard_run *h, double bound)
{
    printf(",\"%s\":{\"cost_s\":", name);
    print_num(h->ok ? h->cost : NAN);
    printf(",\"gap\":");
    print_num(h->ok ? (h->cost - bound) / bound : NAN);
    printf(",\"wall_s\":");
    print_num(h->ok ? h->wall : NAN);
    printf(",\"best_at_s\":");
    print_num(h->ok ? h->best_at : NAN);
    printf(",\"evaluations\":%ld,\"timed_out\":%s}", h->evals,
           h->timed_out ? "true" : "false");
}

/* One generated instance: the lower bound, the planted schedule's cost
 * (the optimum when it equals the bound), GA, KL and random with their
 * gaps to the bound, and the GA's margins over KL and random. */
static void run_hard(int kind, int n, int d_pp, uint64_t iseed, int first)
{
    dtfm_gen_params gp;
    dtfm_problem p;
    dtfm_bound b;
    dtfm_result pr;
    hard_run ga, kl, rnd;
    int *planted = malloc((size_t)n * sizeof *planted), exact = 0;
    double planted_s = NAN, best_bound;

    dtfm_gen_params_init(&gp);
    gp.kind = kind;
    gp.n = n;
    gp.d_pp = d_pp;
    gp.seed = iseed;
    printf("%s{\"kind\":\"%s\",\"devices\":%d,\"d_pp\":%d,\"instance_seed\":%llu",
           first ? "" : ",", dtfm_gen_kind_name(kind), n, d_pp,
           (unsigned long long)iseed);
    if (planted == NULL || dtfm_generate(&gp, &p, planted, NULL) != UTIL_OK ||
        dtfm_lower_bound(&p, &b, NULL) != UTIL_OK) {
        printf(",\"error\":\"could not generate the instance\"}");
        free(planted);
        return;
    }
    if (kind == DTFM_GEN_PLANTED && dtfm_evaluate(&p, planted, &pr, NULL) == UTIL_OK) {
        planted_s = pr.total_s;
        /* a schedule whose cost equals the bound proves both optimal */
        exact = fabs(planted_s - b.total_s) <= 1e-9 * b.total_s;
        dtfm_result_free(&pr);
    }
    best_bound = b.total_s;
    printf(",\"bound_s\":");
    print_num(b.total_s);
    printf(",\"bound_dp_s\":");
    print_num(b.dp_s);
    printf(",\"bound_pp_s\":");
    print_num(b.pp_s);
    printf(",\"planted_s\":");
    print_num(planted_s);
    printf(",\"bound_exact\":%s", exact ? "true" : "false");
    {
        /* the coarse-instance bound (decentral/relax.c) */
        dtfm_prove_params pp;
        dtfm_proof rx;
        int ncl = 0;
        dtfm_prove_params_init(&pp);
        pp.seconds = 2.0 * hard_seconds_opt;
        printf(",\"relaxed\":");
        if (dtfm_relaxed_bound(&p, &pp, &rx, &ncl, NULL) == UTIL_OK) {
            printf("{\"bound_s\":");
            print_num(rx.lower_s);
            printf(",\"clusters\":%d,\"coarse_optimum\":%s,\"wall_s\":", ncl,
                   rx.complete ? "true" : "false");
            print_num(rx.elapsed_s);
            printf("}");
            if (rx.lower_s > best_bound)
                best_bound = rx.lower_s;
            dtfm_proof_free(&rx);
        } else {
            printf("null");
        }
        printf(",\"best_bound_s\":");
        print_num(best_bound);
    }
    {
        /* the GA's first member before local search, the greedy clusters
         * (one evaluation): how far the structured start is */
        dtfm_search_params sp;
        dtfm_search_result r;
        dtfm_search_params_init(&sp);
        sp.max_evals = 1;
        printf(",\"greedy_seed_gap\":");
        if (dtfm_search(&p, &sp, &r, NULL) == UTIL_OK) {
            print_num((r.cost_s - b.total_s) / b.total_s);
            dtfm_search_result_free(&r);
        } else {
            printf("null");
        }
    }
    fflush(stdout);
    ga = hard_one(&p, DTFM_GA);
    kl = hard_one(&p, DTFM_KL);
    rnd = hard_one(&p, DTFM_RANDOM);
    print_hard_run("ga", &ga, b.total_s);
    print_hard_run("kl", &kl, b.total_s);
    print_hard_run("random", &rnd, b.total_s);
    /* margin: how much higher the baseline's cost is than the GA's */
    printf(",\"ga_gap_best_bound\":");
    print_num(ga.ok ? (ga.cost - best_bound) / best_bound : NAN);
    printf(",\"kl_over_ga\":");
    print_num(ga.ok && kl.ok ? (kl.cost - ga.cost) / ga.cost : NAN);
    printf(",\"random_over_ga\":");
    print_num(ga.ok && rnd.ok ? (rnd.cost - ga.cost) / ga.cost : NAN);
    printf("}");
    if (ga.ok && kl.ok && rnd.ok) {
        double m = (kl.cost - ga.cost) / ga.cost;
        hard_count++;
        hard_kl_margin += m;
        hard_rnd_margin += (rnd.cost - ga.cost) / ga.cost;
        if (m < hard_min_kl_margin)
            hard_min_kl_margin = m;
        if (exact) {
            hard_exact++;
            if ((ga.cost - b.total_s) / b.total_s > hard_max_exact_gap)
                hard_max_exact_gap = (ga.cost - b.total_s) / b.total_s;
        }
    }
    fflush(stdout);
    dtfm_problem_free(&p);
    free(planted);
}

/* ---- the command's wall time against --seconds ------------------------ */

static double mono_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Write p as a matrix-form decentralized cluster file. */
static int write_matrices(const dtfm_problem *p, const char *path)
{
    FILE *f = fopen(path, "w");
    int n = p->n, i, j, m;

    if (f == NULL)
        return -1;
    fprintf(f, "{\"name\":\"generated\",\"workload\":{\"d_pp\":%d,"
               "\"c_pp_bytes\":%.17g,\"c_dp_bytes\":%.17g}", p->d_pp, p->c_pp, p->c_dp);
    for (m = 0; m < 2; m++) {
        fprintf(f, ",\"%s\":[", m ? "bandwidth_gbps" : "latency_ms");
        for (i = 0; i < n; i++) {
            fputs(i ? ",[" : "[", f);
            for (j = 0; j < n; j++) {
                double v = i == j ? 0.0
                           : m    ? dtfm_bandwidth(p, i, j) * 8.0 / 1e9
                                  : dtfm_latency(p, i, j) * 1e3;
                if (i == j)
                    fprintf(f, "%snull", j ? "," : "");
                else
                    fprintf(f, "%s%.17g", j ? "," : "", v);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* Run `planner decentralized --cluster FILE --searcher M --seconds S` and
 * return its wall time, s (negative on failure); *rc gets its exit code. */
static double time_command(const char *planner, const char *file, const char *method,
                           double budget, int *rc)
{
    char secs[32], seed[32], pl[1024], fl[1024], me[32];
    char sub[] = "decentralized", o1[] = "--cluster", o2[] = "--searcher",
         o3[] = "--seconds", o4[] = "--seed", o5[] = "--stall", big[] = "1000000000";
    char *argv[] = {pl, sub, o1, fl, o2, me, o3, secs, o4, seed, o5, big, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    double t0;
    extern char **environ;

    snprintf(pl, sizeof pl, "%s", planner);
    snprintf(fl, sizeof fl, "%s", file);
    snprintf(me, sizeof me, "%s", method);
    snprintf(secs, sizeof secs, "%g", budget);
    snprintf(seed, sizeof seed, "%llu", seed_opt);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    t0 = mono_s();
    if (posix_spawn(&pid, planner, &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -1.0;
    }
    posix_spawn_file_actions_destroy(&fa);
    if (waitpid(pid, &status, 0) < 0)
        return -1.0;
    *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return mono_s() - t0;
}

/* The command on generated 256- and 1024-GPU instances, every searcher
 * with an evaluation-free budget: wall time / --seconds - 1. */
static void run_budget(const char *planner, double budget, int quick)
{
    static const int sizes[2][2] = {{256, 16}, {1024, 16}};
    static const char *const meth[4] = {"ga", "kl", "sa", "random"};
    char path[] = "/tmp/dtfm-bench-XXXXXX";
    int s, m, fd, first = 1;
    double worst = 0.0;

    printf(",\"seconds_budget\":{\"budget_s\":%g,\"planner\":\"%s\",\"runs\":[",
           budget, planner);
    fd = mkstemp(path);
    if (fd < 0) {
        printf("]}");
        return;
    }
    close(fd);
    for (s = 0; s < (quick ? 1 : 2); s++) {
        dtfm_gen_params gp;
        dtfm_problem p;

        dtfm_gen_params_init(&gp);
        gp.kind = DTFM_GEN_PLANTED;
        gp.n = sizes[s][0];
        gp.d_pp = sizes[s][1];
        gp.seed = seed_opt;
        if (dtfm_generate(&gp, &p, NULL, NULL) != UTIL_OK)
            continue;
        if (write_matrices(&p, path) != 0) {
            dtfm_problem_free(&p);
            continue;
        }
        dtfm_problem_free(&p);
        for (m = 0; m < 4; m++) {
            int rc = -1;
            double wall = time_command(planner, path, meth[m], budget, &rc);
            printf("%s{\"devices\":%d,\"searcher\":\"%s\",\"exit\":%d,\"wall_s\":",
                   first ? "" : ",", sizes[s][0], meth[m], rc);
            print_num(wall >= 0 ? wall : NAN);
            printf(",\"overshoot\":");
            print_num(wall >= 0 ? wall / budget - 1.0 : NAN);
            printf("}");
            fflush(stdout);
            first = 0;
            if (wall / budget - 1.0 > worst)
                worst = wall / budget - 1.0;
        }
    }
    unlink(path);
    printf("],\"worst_overshoot\":");
    print_num(worst);
    printf("}");
}

int main(int argc, char **argv)
{
    static const int sizes[][2] = {{8, 2}, {8, 4}, {9, 3}, {10, 2}, {10, 5},
                                   {12, 2}, {12, 3}, {12, 4}, {12, 6}, {14, 7}, {15, 3}};
    int i, cs, first = 1, quick = 0;
    char *text = NULL;
    cJSON *data = NULL;
    const cJSON *pcases = NULL, *pub = NULL;
    util_pcg32 rng;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds_opt = atof(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed_opt = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            case_opt = atoi(argv[++i]);
        else if (strcmp(argv[i], "--prove-seconds") == 0 && i + 1 < argc)
            prove_seconds_opt = atof(argv[++i]);
        else if (strcmp(argv[i], "--hard-seconds") == 0 && i + 1 < argc)
            hard_seconds_opt = atof(argv[++i]);
        else if (strcmp(argv[i], "--hard-evals") == 0 && i + 1 < argc)
            hard_evals_opt = atol(argv[++i]);
        else if (strcmp(argv[i], "--planner") == 0 && i + 1 < argc)
            planner_opt = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only_opt = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: dtfm-scenarios [--seconds S] [--hard-seconds S] "
                            "[--hard-evals N] [--prove-seconds S] [--case N]\n"
                            "       [--seed N] [--quick] [--planner PATH]\n"
                            "       [--only scenarios|small|hard|budget]\n");
            return 2;
        }
    }
    if (!(seconds_opt > 0) || !(hard_seconds_opt > 0)) {
        fprintf(stderr, "dtfm-scenarios: --seconds expects a positive number\n");
        return 2;
    }
    if (util_read_file(DATA, &text, NULL) == UTIL_OK) {
        data = cJSON_Parse(text);
        pcases = cJSON_GetObjectItem(
            cJSON_GetObjectItem(data, "public_code_conventions"), "cases");
        pub = cJSON_GetObjectItem(
            cJSON_GetObjectItem(data, "public_code_conventions"),
            "public_results_seed0");
    }
    printf("{\"seconds\":%g,\"hard_evals\":%ld,\"seed\":%llu,\"scenarios\":[", seconds_opt,
           hard_evals_opt, seed_opt);
    for (cs = 1; cs <= 5 && part("scenarios"); cs++) {
        dtfm_input in;
        dtfm_options o;
        util_error err;
        char path[1024];

        if (case_opt > 0 && cs != case_opt)
            continue;
        memset(&err, 0, sizeof err);
        dtfm_options_init(&o);
        snprintf(path, sizeof path, "%s/examples/%s", HETPLAN_SOURCE_DIR,
                 paper_files[cs - 1]);
        printf("%s{\"case\":%d,\"name\":\"%s\",\"convention\":\"paper\","
               "\"cluster\":\"examples/%s\"", first ? "" : ",", cs, names[cs - 1],
               paper_files[cs - 1]);
        first = 0;
        if (dtfm_load(path, &o, &in, &err) != UTIL_OK) {
            printf(",\"error\":\"%s\"}", err.msg);
            continue;
        }
        run_all(&in.prob);
        printf("}");
        dtfm_input_free(&in);
    }
    for (cs = 1; cs <= 5 && pcases && part("scenarios"); cs++) {
        dtfm_input in;
        dtfm_options o;
        util_error err;
        char *doc;

        if (case_opt > 0 && cs != case_opt)
            continue;
        doc = public_case_doc(cJSON_GetArrayItem(pcases, cs - 1));
        memset(&err, 0, sizeof err);
        dtfm_options_init(&o);
        o.convention = DTFM_PUBLIC_CODE;
        printf(",{\"case\":%d,\"name\":\"%s\",\"convention\":\"public-code\"", cs,
               names[cs - 1]);
        if (doc == NULL || dtfm_parse(doc, "scenarios.json", &o, &in, &err) != UTIL_OK) {
            printf(",\"error\":\"%s\"}", err.msg);
            free(doc);
            continue;
        }
        free(doc);
        run_all(&in.prob);
        print_public(pub, cs);
        printf("}");
        dtfm_input_free(&in);
    }
    printf("]");
    if (pcases == NULL)
        printf(",\"public_code\":\"skipped: %s not found (the public-code "
               "instances and the public scheduler's costs come from it)\"", DATA);
    printf(",\"small\":[");
    util_pcg32_seed(&rng, 2022u, 4u);
    for (i = 0; i < (int)(sizeof sizes / sizeof sizes[0]) && part("small"); i++) {
        dtfm_problem p;
        double opt, ga, sa, kl, rnd;
        long budget = quick ? 5000 : 20000;

        if (dtfm_generate_regional(&rng, sizes[i][0], sizes[i][1], &p, NULL) != UTIL_OK) {
            fprintf(stderr, "dtfm-scenarios: out of memory\n");
            return 1;
        }
        opt = small_cost(&p, DTFM_EXACT, 0);
        ga = small_cost(&p, DTFM_GA, budget);
        sa = small_cost(&p, DTFM_SA, budget);
        kl = small_cost(&p, DTFM_KL, budget);
        rnd = small_cost(&p, DTFM_RANDOM, budget);
        printf("%s{\"devices\":%d,\"d_pp\":%d,\"optimum_s\":", i ? "," : "",
               sizes[i][0], sizes[i][1]);
        print_num(opt);
        printf(",\"evaluations\":%ld,\"ga_gap\":", budget);
        print_num((ga - opt) / opt);
        printf(",\"sa_gap\":");
        print_num((sa - opt) / opt);
        printf(",\"kl_gap\":");
        print_num((kl - opt) / opt);
        printf(",\"random_gap\":");
        print_num((rnd - opt) / opt);
        printf("}");
        fflush(stdout);
        dtfm_problem_free(&p);
    }
    printf("],\"hard\":[");
    {
        static const int hard[][2] = {{64, 8}, {256, 16}, {1024, 16}};
        int h, kind, nh = !part("hard") ? 0 : quick ? 2 : 3, fh = 1;
        for (h = 0; h < nh; h++)
            for (kind = DTFM_GEN_PLANTED; kind >= DTFM_GEN_GEO; kind--) {
                run_hard(kind, hard[h][0], hard[h][1], seed_opt + (unsigned long long)h, fh);
                fh = 0;
            }
    }
    printf("],\"hard_summary\":{\"instances\":%d,\"mean_kl_over_ga\":", hard_count);
    print_num(hard_count ? hard_kl_margin / hard_count : NAN);
    printf(",\"min_kl_over_ga\":");
    print_num(hard_count ? hard_min_kl_margin : NAN);
    printf(",\"mean_random_over_ga\":");
    print_num(hard_count ? hard_rnd_margin / hard_count : NAN);
    printf(",\"exact_bound_instances\":%d,\"max_ga_gap_where_exact\":", hard_exact);
    print_num(hard_exact ? hard_max_exact_gap : NAN);
    printf("}");
    {
        /* the planner next to this program's directory: build/bench/.. */
        char def[1024];
        const char *sl = strrchr(argv[0], '/');
        if (planner_opt == NULL) {
            snprintf(def, sizeof def, "%.*s../planner", sl ? (int)(sl - argv[0] + 1) : 0,
                     argv[0]);
            planner_opt = def;
        }
        if (!part("budget"))
            ;
        else if (access(planner_opt, X_OK) == 0)
            run_budget(planner_opt, quick ? 2.0 : 5.0, quick);
        else
            printf(",\"seconds_budget\":\"skipped: no planner at '%s' (--planner PATH)\"",
                   planner_opt);
    }
    printf("}\n");
    cJSON_Delete(data);
    free(text);
    return 0;
}
