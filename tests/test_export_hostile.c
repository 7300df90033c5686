/* tests/test_export_hostile.c: names from input files that try to run
 * commands through the generated launch files (docs/export.md, "Names
 * in the generated files").
 *
 * The reader refuses node names that are not host names; these tests
 * build the cluster struct directly, so that hostile names reach the
 * exporters anyway, write every target, and run the generated scripts
 * with fake torchrun, deepspeed, ssh, pdsh and python first on PATH.
 * The fakes record their arguments; a payload that ran would create a
 * canary file. */
#include <check.h>
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

#define PATHN 4096

/* inputs: tu_two_nodes_json (T4 and V100 nodes), tu_gpt2_small4_json */

/* Names that would run `touch CANARY` if a script interpolated them
 * unquoted, or ended a comment line. */
static const char *const hostile[] = {
    "n0$(touch CANARY)",
    "n0';touch CANARY;'",
    "n0`touch CANARY`",
    "n0\ntouch CANARY\n",
    "n0\" ; touch CANARY ; \"",
    "-n0 && touch CANARY",
    "n0|touch CANARY",
};
#define NHOSTILE (int)(sizeof hostile / sizeof hostile[0])

typedef struct fixture {
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    char dir[1024];
} fixture;

static void write_file(const char *dir, const char *name, const char *text,
                       int mode)
{
    char p[PATHN];

    snprintf(p, sizeof p, "%s/%s", dir, name);
    tu_put(dir, name, text);
    ck_assert_int_eq(chmod(p, (mode_t)mode), 0);
}

/* A fake launcher: writes its arguments, NUL-terminated, to argv.NAME. */
static const char fake[] =
    "#!/bin/sh\n"
    "printf '%s\\0' \"$@\" > \"$HETPLAN_FAKE_DIR/argv.$(basename \"$0\")\"\n";

static void fixture_make(fixture *f)
{
    char bin[PATHN];
    const char *const tools[] = {"torchrun", "deepspeed", "ssh", "pdsh",
                                 "python", "python3"};
    size_t i;
    int r;

    memset(f, 0, sizeof *f);
    tu_parse_inputs(tu_two_nodes_json, tu_gpt2_small4_json, &f->c, &f->m);
    cost_params_init(&f->p);
    ck_assert_int_eq(fmt_strategy_alloc(&f->s, 1, 2, 2), UTIL_OK);
    for (r = 0; r < 4; r++)
        f->s.ranks[r] = r;
    f->s.mbs = 1;
    f->s.gas = 4;
    f->s.bounds[0] = 0;
    f->s.bounds[1] = 3;
    f->s.bounds[2] = f->m.nlayers;
    snprintf(f->dir, sizeof f->dir, "/tmp/hetplan_hostile_%ld", (long)getpid());
    tu_remove_tree(f->dir);
    ck_assert_int_eq(mkdir(f->dir, 0700), 0);
    snprintf(bin, sizeof bin, "%s/bin", f->dir);
    ck_assert_int_eq(mkdir(bin, 0700), 0);
    for (i = 0; i < sizeof tools / sizeof tools[0]; i++)
        write_file(bin, tools[i], fake, 0755);
}

static void fixture_free(fixture *f)
{
    tu_remove_tree(f->dir);
    fmt_strategy_free(&f->s);
    fmt_model_free(&f->m);
    fmt_cluster_free(&f->c);
}

/* Run `SHELL script args...` in f->dir with the fakes first on PATH; exit
 * status. */
static int run_script_in(const fixture *f, const char *shell, const char *script,
                         int node_rank)
{
    pid_t pid = fork();
    int st;

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char path[PATHN + 64], nr[16];
        snprintf(path, sizeof path, "%s/bin:/usr/bin:/bin", f->dir);
        snprintf(nr, sizeof nr, "%d", node_rank);
        if (chdir(f->dir) != 0 || setenv("PATH", path, 1) != 0 ||
            setenv("NODE_RANK", nr, 1) != 0 ||
            setenv("HETPLAN_FAKE_DIR", f->dir, 1) != 0)
            _exit(126);
        if (shell == NULL) /* the kernel reads the script's #! line */
            execl(script, script, "train.py", "--arg", "$(touch CANARY)",
                  (char *)NULL);
        else
            execl(shell, shell, script, "train.py", "--arg", "$(touch CANARY)",
                  (char *)NULL);
        _exit(127);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Run the script with /bin/sh, then with bash where there is one
 * (users run `bash torchrun.sh`, and /bin/sh is bash on many systems),
 * then as ./script through its #! line: all must exit alike; the exit
 * status. */
static int run_script(const fixture *f, const char *script, int node_rank)
{
    char self[PATHN];
    int st = run_script_in(f, "/bin/sh", script, node_rank);

    snprintf(self, sizeof self, "./%s", script);
    ck_assert_msg(run_script_in(f, NULL, self, node_rank) == st,
                  "./%s and sh %s disagree (node rank %d)", script, script, node_rank);

    if (access("/bin/bash", X_OK) == 0)
        ck_assert_msg(run_script_in(f, "/bin/bash", script, node_rank) == st,
                      "bash and sh disagree on %s (node rank %d)", script, node_rank);
    return st;
}

/* The arguments a fake received, NULL-terminated (free each and the
 * array); NULL when it did not run. */
static char **fake_argv(const fixture *f, const char *tool)
{
    char p[PATHN];
    FILE *fp;
    char **v;
    char *buf;
    long n, i, k = 0, start = 0;

    snprintf(p, sizeof p, "%s/argv.%s", f->dir, tool);
    fp = fopen(p, "rb");
    if (fp == NULL)
        return NULL;
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    v = calloc((size_t)n + 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (i = 0; i < n; i++)
        if (buf[i] == '\0') {
            v[k++] = strdup(buf + start);
            start = i + 1;
        }
    free(buf);
    unlink(p);
    return v;
}

static void free_argv(char **v)
{
    int i;

    for (i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

/* The argument after flag in v, NULL when absent. */
static const char *arg_after(char *const *v, const char *flag)
{
    int i;

    for (i = 0; v[i] != NULL; i++)
        if (strcmp(v[i], flag) == 0)
            return v[i + 1];
    return NULL;
}

static int canary(const fixture *f)
{
    char p[PATHN];
    struct stat st;

    snprintf(p, sizeof p, "%s/CANARY", f->dir);
    return stat(p, &st) == 0;
}

/* Write every file of e into f->dir; the scripts (and only they) start
 * with "#!/bin/sh". */
static void write_result(const fixture *f, const export_result *e)
{
    int i;

    for (i = 0; i < e->nfiles; i++) {
        if (e->files[i].executable)
            ck_assert_msg(strncmp(e->files[i].text, "#!/bin/sh\n", 10) == 0,
                          "%s: first line is not #!/bin/sh", e->files[i].name);
        else
            ck_assert_msg(strncmp(e->files[i].text, "#!", 2) != 0,
                          "%s: a #! line in a file that is not a script",
                          e->files[i].name);
        write_file(f->dir, e->files[i].name, e->files[i].text,
                   e->files[i].executable ? 0755 : 0644);
    }
}

/* torchrun and megatron with a hostile name on every node (node 0 is the
 * rendezvous host), a hostile device type, model name and plan name: each
 * agent's line runs the fake torchrun with the names verbatim and no
 * payload runs. */
START_TEST(torchrun_scripts_quote_node_names)
{
    const int targets[] = {EXPORT_TORCHRUN, EXPORT_MEGATRON};
    const char *const scripts[] = {"torchrun.sh", "megatron.sh"};
    fixture f;
    int h, t, k;

    fixture_make(&f);
    snprintf(f.c.types[0].name, sizeof f.c.types[0].name, "T4\ntouch CANARY");
    snprintf(f.m.name, sizeof f.m.name, "g4\ntouch CANARY\n");
    snprintf(f.c.name, sizeof f.c.name, "c$(touch CANARY)\ntouch CANARY");
    for (h = 0; h < NHOSTILE; h++)
        for (t = 0; t < 2; t++) {
            export_options o;
            export_result e;
            util_error err;

            export_options_init(&o);
            o.source = "plan\ntouch CANARY\n.json";
            snprintf(f.c.nodes[0].name, sizeof f.c.nodes[0].name, "%s", hostile[h]);
            snprintf(f.c.nodes[1].name, sizeof f.c.nodes[1].name, "b%s",
                     hostile[(h + 1) % NHOSTILE]);
            ck_assert_msg(export_build(targets[t], &f.c, &f.m, &f.p, &f.s, 8, &o,
                                       &e, &err) == UTIL_OK, "%s", err.msg);
            write_result(&f, &e);
            for (k = 0; k < e.agents; k++) {
                char **v;
                ck_assert_int_eq(run_script(&f, scripts[t], k), 0);
                ck_assert_msg(!canary(&f), "a payload ran: name %d, %s, agent %d",
                              h, scripts[t], k);
                v = fake_argv(&f, "torchrun");
                ck_assert_msg(v != NULL, "torchrun did not run (%s, name %d)",
                              scripts[t], h);
                ck_assert_ptr_nonnull(arg_after(v, "--master_addr"));
                ck_assert_str_eq(arg_after(v, "--master_addr"), hostile[h]);
                ck_assert_str_eq(arg_after(v, "--node_rank"), k == 0 ? "0" : "1");
                ck_assert_ptr_nonnull(arg_after(v, "--arg"));
                ck_assert_str_eq(arg_after(v, "--arg"), "$(touch CANARY)");
                free_argv(v);
            }
            ck_assert_ptr_null(fake_argv(&f, "deepspeed"));
            ck_assert_ptr_null(fake_argv(&f, "ssh"));
            export_free(&e);
        }
    fixture_free(&f);
}
END_TEST

/* A hostfile cannot quote: hostile node names are refused, naming the
 * node, by the hostfile and deepspeed targets. */
START_TEST(hostfile_refuses_non_host_names)
{
    const int targets[] = {EXPORT_HOSTFILE, EXPORT_DEEPSPEED};
    fixture f;
    int h, t;

    fixture_make(&f);
    for (h = 0; h < NHOSTILE; h++)
        for (t = 0; t < 2; t++) {
            export_result e;
            util_error err;

            snprintf(f.c.nodes[1].name, sizeof f.c.nodes[1].name, "%s", hostile[h]);
            ck_assert_int_eq(export_build(targets[t], &f.c, &f.m, &f.p, &f.s, 8,
                                          NULL, &e, &err), UTIL_EINVAL);
            ck_assert_ptr_nonnull(strstr(err.msg, "cannot go into a hostfile"));
            ck_assert_ptr_nonnull(strstr(err.msg, "n0"));
            ck_assert_ptr_null(strchr(err.msg, '\n'));
            ck_assert_int_eq(e.nfiles, 0);
            export_free(&e);
        }
    fixture_free(&f);
}
END_TEST

/* deepspeed.sh with host names but a hostile --master-addr: the fake
 * deepspeed gets it verbatim and nothing else runs. */
START_TEST(deepspeed_script_quotes_master_addr)
{
    fixture f;
    int h;

    fixture_make(&f);
    snprintf(f.m.name, sizeof f.m.name, "g4\ntouch CANARY\n");
    for (h = 0; h < NHOSTILE; h++) {
        export_options o;
        export_result e;
        util_error err;
        char **v;

        export_options_init(&o);
        o.master_addr = hostile[h];
        ck_assert_msg(export_build(EXPORT_DEEPSPEED, &f.c, &f.m, &f.p, &f.s, 8,
                                   &o, &e, &err) == UTIL_OK, "%s", err.msg);
        write_result(&f, &e);
        ck_assert_int_eq(run_script(&f, "deepspeed.sh", 0), 0);
        ck_assert_msg(!canary(&f), "a payload ran: master address %d", h);
        v = fake_argv(&f, "deepspeed");
        ck_assert_ptr_nonnull(v);
        ck_assert_str_eq(arg_after(v, "--master_addr"), hostile[h]);
        ck_assert_str_eq(v[6], "train.py");
        ck_assert_str_eq(arg_after(v, "--arg"), "$(touch CANARY)");
        free_argv(v);
        ck_assert_ptr_null(fake_argv(&f, "ssh"));
        ck_assert_ptr_null(fake_argv(&f, "torchrun"));
        export_free(&e);
    }
    fixture_free(&f);
}
END_TEST

/* Ordinary host names stay unquoted (as ordinary clusters have them). */
START_TEST(plain_names_are_not_quoted)
{
    fixture f;
    export_result e;
    util_error err;

    fixture_make(&f);
    snprintf(f.c.nodes[0].name, sizeof f.c.nodes[0].name, "p3.8xlarge-0");
    ck_assert_int_eq(export_build(EXPORT_TORCHRUN, &f.c, &f.m, &f.p, &f.s, 8,
                                  NULL, &e, &err), UTIL_OK);
    ck_assert_ptr_nonnull(strstr(e.files[0].text, "--master_addr p3.8xlarge-0 "));
    export_free(&e);
    fixture_free(&f);
}
END_TEST

/* The reader accepts host names only, with a located error. */
START_TEST(reader_refuses_non_host_names)
{
    static const char *const bad[] = {
        "n0$(touch x)", "a b", "a_b", "-a", "a-", "a..b", ".a", "a.",
        "n0;reboot", "ünï"};
    static const char *const good[] = {"a", "p3.8xlarge-0", "10.0.0.7",
                                       "node-01.example.org", "A-1"};
    char text[1024];
    size_t i;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fmt_cluster c;
        util_error err;
        snprintf(text, sizeof text,
                 "{\"nodes\": [{\"name\": \"ok\", \"device\": \"T4\", \"gpus\": 1,"
                 " \"intra_gbps\": 1, \"nic_gbps\": 1},"
                 " {\"name\": \"%s\", \"device\": \"T4\", \"gpus\": 1,"
                 " \"intra_gbps\": 1, \"nic_gbps\": 1}]}", bad[i]);
        ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &c, &err), UTIL_EFIELD);
        ck_assert_str_eq(err.file, "c.json");
        ck_assert_str_eq(err.path, "nodes[1].name");
        ck_assert_ptr_nonnull(strstr(err.msg, "expected a host name"));
        ck_assert_ptr_nonnull(strstr(err.msg, bad[i]));
    }
    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        fmt_cluster c;
        util_error err;
        snprintf(text, sizeof text,
                 "{\"nodes\": [{\"name\": \"%s\", \"device\": \"T4\", \"gpus\": 1,"
                 " \"intra_gbps\": 1, \"nic_gbps\": 1, \"count\": 2}]}", good[i]);
        ck_assert_msg(fmt_parse_cluster(text, "c.json", &c, &err) == UTIL_OK,
                      "%s: %s", good[i], err.msg);
        fmt_cluster_free(&c);
    }
}
END_TEST

/* A node name is a host name of at most 63 characters in all (a label
 * may take them all); the refusal states that limit, the one it applies. */
START_TEST(host_name_length_is_the_one_the_message_states)
{
    static const int lens[] = {63, 64, 253};
    char text[1024], name[300];
    fmt_cluster c;
    util_error err;
    size_t i;
    int k;

    for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        for (k = 0; k < lens[i]; k++)
            name[k] = k % 50 == 49 ? '.' : 'a'; /* labels of 49 */
        name[lens[i]] = '\0';
        snprintf(text, sizeof text,
                 "{\"nodes\": [{\"name\": \"%s\", \"device\": \"T4\", \"gpus\": 1,"
                 " \"intra_gbps\": 1, \"nic_gbps\": 1}]}", name);
        if (lens[i] <= 63) {
            ck_assert_msg(fmt_parse_cluster(text, "c.json", &c, &err) == UTIL_OK,
                          "%d characters: %s", lens[i], err.msg);
            fmt_cluster_free(&c);
            continue;
        }
        ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &c, &err), UTIL_EFIELD);
        ck_assert_str_eq(err.path, "nodes[0].name");
        ck_assert_msg(strstr(err.msg, "at most 63 characters") != NULL, "%s", err.msg);
    }
    /* one label of 63 characters */
    memset(name, 'x', 63);
    name[63] = '\0';
    snprintf(text, sizeof text,
             "{\"nodes\": [{\"name\": \"%s\", \"device\": \"T4\", \"gpus\": 1,"
             " \"intra_gbps\": 1, \"nic_gbps\": 1}]}", name);
    ck_assert_int_eq(fmt_parse_cluster(text, "c.json", &c, &err), UTIL_OK);
    fmt_cluster_free(&c);
    /* a name that is no host name: the message states the limit applied */
    ck_assert_int_eq(fmt_parse_cluster("{\"nodes\": [{\"name\": \"a_b\", \"device\":"
                                       " \"T4\", \"gpus\": 1, \"intra_gbps\": 1,"
                                       " \"nic_gbps\": 1}]}", "c.json", &c, &err),
                     UTIL_EFIELD);
    ck_assert_msg(strstr(err.msg, "at most 63 characters in all") != NULL &&
                  strstr(err.msg, "253") == NULL, "%s", err.msg);
}
END_TEST

/* Control characters in any string of an input file are refused. */
START_TEST(reader_refuses_control_characters)
{
    fmt_model m;
    fmt_cluster c;
    util_error err;

    ck_assert_int_eq(fmt_parse_model("{\"name\": \"g\\ntouch x\", \"transformer\":"
                                     " {\"layers\": 2, \"hidden\": 64, \"heads\": 2,"
                                     " \"seq\": 8, \"vocab\": 10}}",
                                     "m.json", &m, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "name");
    ck_assert_ptr_nonnull(strstr(err.msg, "control characters"));
    ck_assert_int_eq(fmt_parse_cluster("{\"name\": \"c\\u001b[2J\", \"nodes\": "
                                       "[{\"name\": \"a\", \"device\": \"T4\","
                                       " \"gpus\": 1, \"intra_gbps\": 1,"
                                       " \"nic_gbps\": 1}]}",
                                       "c.json", &c, &err), UTIL_EFIELD);
    ck_assert_str_eq(err.path, "name");
    ck_assert_ptr_nonnull(strstr(err.msg, "0x1b"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("export_hostile");
    TCase *tc = tcase_create("hostile");

    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, torchrun_scripts_quote_node_names);
    tcase_add_test(tc, hostfile_refuses_non_host_names);
    tcase_add_test(tc, deepspeed_script_quotes_master_addr);
    tcase_add_test(tc, plain_names_are_not_quoted);
    tcase_add_test(tc, reader_refuses_non_host_names);
    tcase_add_test(tc, host_name_length_is_the_one_the_message_states);
    tcase_add_test(tc, reader_refuses_control_characters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(suite());
}
