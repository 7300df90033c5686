/* tests/test_formats_inputs.c: input files (cluster, model, profile, strategies),
 * their error messages, and the file helpers. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "formats.h"
#include "testutil.h"

#define EX(name) HETPLAN_SOURCE_DIR "/examples/" name
#define AMP_PROFILES TU_DATA "/amp/profiles.json"

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Check an error: return code, err.code, err.path and a phrase of err.msg. */
#define EXPECT_ERR(rc, e, code_, path_, phrase_) \
    expect_err((rc), &(e), (code_), (path_), (phrase_), __LINE__)

static void expect_err(int rc, const util_error *e, int code, const char *path,
                       const char *phrase, int line)
{
    ck_assert_msg(rc == code,
                  "line %d: expected code %d (%s), got %d; err: path '%s' "
                  "msg '%s'",
                  line, code, util_strerror(code), rc, e->path, e->msg);
    ck_assert_msg(e->code == code, "line %d: err.code %d, expected %d", line,
                  e->code, code);
    ck_assert_msg(strcmp(e->path, path) == 0,
                  "line %d: expected path '%s', got '%s' (msg '%s')", line,
                  path, e->path, e->msg);
    ck_assert_msg(strstr(e->msg, phrase) != NULL,
                  "line %d: expected '%s' in the message, got '%s'", line,
                  phrase, e->msg);
}

/* A document a parse must reject: the expected code, JSON path and a
 * phrase of the message, and the line of the case (for the report). */
typedef struct err_case {
    int line;
    const char *json;
    int code;
    const char *path;
    const char *phrase;
} err_case;
#define ERR_CASE(json_, code_, path_, phrase_) \
    {__LINE__, (json_), (code_), (path_), (phrase_)}

/* Parse the document of each case with parse and check its error. */
static void expect_errs(int (*parse)(const char *, util_error *),
                        const err_case *c, size_t n)
{
    util_error e;
    size_t i;

    for (i = 0; i < n; i++)
        expect_err(parse(c[i].json, &e), &e, c[i].code, c[i].path, c[i].phrase,
                   c[i].line);
}
#define EXPECT_ERRS(parse, cases) \
    expect_errs((parse), (cases), TU_N(cases))

/* ---- parse wrappers: check the output is empty on failure ------------ */

/* After a parse of the document file into out (n bytes; NULL: not
 * checked) that returned rc: on failure out is all zero (what names it)
 * and the error names file. */
static void expect_empty_on_failure(int rc, const void *out, size_t n,
                                    const char *what, const util_error *e,
                                    const char *file)
{
    if (rc == UTIL_OK)
        return;
    if (out != NULL)
        ck_assert_msg(all_zero(out, n), "%s not zeroed on failure", what);
    ck_assert_msg(strcmp(e->file, file) == 0, "error file '%s', expected '%s'",
                  e->file, file);
}

static int cluster_rc(const char *json, util_error *e)
{
    fmt_cluster c;
    int rc;

    memset(e, 0, sizeof *e);
    memset(&c, 0x5a, sizeof c);
    rc = fmt_parse_cluster(json, "c.json", &c, e);
    expect_empty_on_failure(rc, &c, sizeof c, "cluster", e, "c.json");
    if (rc != UTIL_OK)
        ck_assert_msg(e->msg[0] != '\0', "empty error message");
    fmt_cluster_free(&c);
    return rc;
}

static int model_rc(const char *json, util_error *e)
{
    fmt_model m;
    int rc;

    memset(e, 0, sizeof *e);
    memset(&m, 0x5a, sizeof m);
    rc = fmt_parse_model(json, "m.json", &m, e);
    expect_empty_on_failure(rc, &m, sizeof m, "model", e, "m.json");
    fmt_model_free(&m);
    return rc;
}

/* ---- fixtures -------------------------------------------------------- */

/* 2 nodes x 2 V100 = 4 devices */
static const char *SMALL_CLUSTER =
    "{\"name\": \"small\", \"nodes\": ["
    " {\"name\": \"a\", \"device\": \"V100\", \"gpus\": 2, \"intra_gbps\": 800,"
    "  \"nic_gbps\": 50},"
    " {\"name\": \"b\", \"device\": \"V100\", \"gpus\": 2, \"intra_gbps\": 800,"
    "  \"nic_gbps\": 50}]}";

/* 4 layers: embedding, 2 transformer blocks, head; global batch 8 */
static const char *SMALL_MODEL =
    "{\"name\": \"tiny\", \"training\": {\"global_batch\": 8},"
    " \"shape\": {\"hidden\": 64, \"heads\": 4, \"seq\": 32, \"vocab\": 100},"
    " \"layers\": ["
    "  {\"name\": \"emb\", \"kind\": \"embedding\", \"params\": 6400,"
    "   \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 4096},"
    "  {\"name\": \"blk\", \"kind\": \"transformer\", \"repeat\": 2,"
    "   \"params\": 50000, \"fwd_flops\": 1e7, \"out_bytes\": 4096,"
    "   \"act_bytes\": 40000},"
    "  {\"name\": \"head\", \"kind\": \"head\", \"params\": 6400,"
    "   \"fwd_flops\": 4e5, \"out_bytes\": 0, \"act_bytes\": 6400}]}";

static void small_cluster(fmt_cluster *c)
{
    util_error e;
    int rc = fmt_parse_cluster(SMALL_CLUSTER, "c.json", c, &e);
    ck_assert_msg(rc == UTIL_OK, "small cluster: %s: %s", e.path, e.msg);
}

static void small_model(fmt_model *m)
{
    util_error e;
    int rc = fmt_parse_model(SMALL_MODEL, "m.json", m, &e);
    ck_assert_msg(rc == UTIL_OK, "small model: %s: %s", e.path, e.msg);
}

static int profile_rc(const char *json, fmt_profile *p, util_error *e)
{
    fmt_model m;
    int rc;

    small_model(&m);
    memset(e, 0, sizeof *e);
    memset(p, 0x5a, sizeof *p);
    rc = fmt_parse_profile(json, "p.json", &m, p, e);
    expect_empty_on_failure(rc, p, sizeof *p, "profile", e, "p.json");
    fmt_model_free(&m);
    return rc;
}

/* Parse strategies against the small cluster and model (batch 8). */
static int strat_rc(const char *json, fmt_strategy **s, int *n,
                    util_error *e)
{
    fmt_cluster c;
    fmt_model m;
    int rc;

    small_cluster(&c);
    small_model(&m);
    memset(e, 0, sizeof *e);
    *s = (fmt_strategy *)&c; /* must be reset */
    *n = 99;
    rc = fmt_parse_strategies(json, "s.json", &c, &m, 8, s, n, e);
    if (rc != UTIL_OK)
        ck_assert_msg(*s == NULL && *n == 0, "strategies not empty on failure");
    expect_empty_on_failure(rc, NULL, 0, "strategies", e, "s.json");
    fmt_cluster_free(&c);
    fmt_model_free(&m);
    return rc;
}

static void free_strats(fmt_strategy *s, int n)
{
    int i;

    for (i = 0; i < n; i++)
        fmt_strategy_free(&s[i]);
    free(s);
}

/* profile_rc and strat_rc as a parse that must fail (for expect_errs;
 * what an unexpected success returns is freed). */
static int profile_err(const char *json, util_error *e)
{
    fmt_profile p;
    int rc = profile_rc(json, &p, e);

    if (rc == UTIL_OK)
        fmt_profile_free(&p);
    return rc;
}

static int strat_err(const char *json, util_error *e)
{
    fmt_strategy *s;
    int n, rc = strat_rc(json, &s, &n, e);

    if (rc == UTIL_OK)
        free_strats(s, n);
    return rc;
}

/* ---- files ----------------------------------------------------------- */

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetplan-test-XXXXXX");
    ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp failed");
}

/* Entries of tmpdir other than . and .., with a name containing `part`. */
static int count_entries(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    ck_assert_msg(d != NULL, "cannot list %s", dir);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (part == NULL || strstr(de->d_name, part) != NULL)
            n++;
    }
    closedir(d);
    return n;
}

static void write_raw(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");

    ck_assert_msg(f != NULL, "cannot create %s", path);
    ck_assert_msg(fwrite(data, 1, n, f) == n, "short write %s", path);
    fclose(f);
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[512];

    if (d == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (remove(p) != 0)
            rm_tree(p);
        remove(p);
    }
    closedir(d);
    rmdir(dir);
}

START_TEST(read_missing_file)
{
    util_error e;
    char *text = (char *)"sentinel";
    int rc;

    memset(&e, 0, sizeof e);
    rc = util_read_file("/nonexistent/x.json", &text, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "cannot open '/nonexistent/x.json'");
    ck_assert_msg(strstr(e.msg, "No such file or directory") != NULL,
                  "strerror missing: %s", e.msg);
    ck_assert_msg(text == NULL, "text not reset on failure");
    ck_assert_str_eq(e.file, "/nonexistent/x.json");
}
END_TEST

START_TEST(read_file_contents_and_nul)
{
    char p[128], *text = NULL;
    util_error e;
    int rc;

    make_tmpdir();
    snprintf(p, sizeof p, "%s/a.json", tmpdir);
    write_raw(p, "{\"x\": 1}\n", 9);
    rc = util_read_file(p, &text, &e);
    ck_assert_msg(rc == UTIL_OK, "read failed: %s", e.msg);
    ck_assert_str_eq(text, "{\"x\": 1}\n");
    free(text);
    text = NULL;

    write_raw(p, "{\"x\"\0: 1}", 9);
    rc = util_read_file(p, &text, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "NUL byte at offset 4");
    ck_assert_msg(text == NULL, "text set on failure");

    write_raw(p, "", 0);
    rc = util_read_file(p, &text, &e);
    ck_assert_msg(rc == UTIL_OK && text != NULL && text[0] == '\0',
                  "empty file should read as an empty string");
    free(text);
    text = NULL;

    rc = util_read_file(tmpdir, &text, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "Is a directory");
    rm_tree(tmpdir);
}
END_TEST

START_TEST(write_atomic_replaces)
{
    char p[128], *text = NULL;
    util_error e;
    int rc;

    make_tmpdir();
    snprintf(p, sizeof p, "%s/plan.json", tmpdir);
    write_raw(p, "old contents that are longer", 28);
    rc = util_write_file_atomic(p, "{\"new\": true}\n", &e);
    ck_assert_msg(rc == UTIL_OK, "atomic write failed: %s", e.msg);
    rc = util_read_file(p, &text, &e);
    ck_assert_msg(rc == UTIL_OK, "read back failed: %s", e.msg);
    ck_assert_str_eq(text, "{\"new\": true}\n");
    free(text);
    ck_assert_msg(count_entries(tmpdir, NULL) == 1,
                  "expected only plan.json in %s, found %d entries", tmpdir,
                  count_entries(tmpdir, NULL));
    ck_assert_msg(count_entries(tmpdir, ".tmp.") == 0, "temporary file left");
    rm_tree(tmpdir);
}
END_TEST

START_TEST(write_atomic_failures_leave_nothing)
{
    char p[160], sub[140];
    util_error e;
    int rc;

    make_tmpdir();
    /* the directory does not exist */
    snprintf(p, sizeof p, "%s/nodir/plan.json", tmpdir);
    rc = util_write_file_atomic(p, "{}", &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "No such file or directory");
    ck_assert_msg(strstr(e.msg, "cannot create") != NULL, "msg: %s", e.msg);
    ck_assert_msg(count_entries(tmpdir, NULL) == 0,
                  "something was created in %s", tmpdir);

    /* the target is a directory: refused before anything is written */
    snprintf(sub, sizeof sub, "%s/target", tmpdir);
    ck_assert_msg(mkdir(sub, 0700) == 0, "mkdir failed");
    snprintf(p, sizeof p, "%s/x", sub);
    write_raw(p, "x", 1);
    rc = util_write_file_atomic(sub, "{}", &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "it is a directory, not a regular file");
    ck_assert_msg(count_entries(tmpdir, ".tmp.") == 0,
                  "temporary file left behind after a refused write");
    ck_assert_msg(count_entries(tmpdir, NULL) == 1, "unexpected files");
    rm_tree(tmpdir);
}
END_TEST

/* ---- cluster errors -------------------------------------------------- */

START_TEST(cluster_malformed_json)
{
    util_error e;
    const char *bad = "{\n  \"nodes\": [\n    {\"name\": \"a\",, \"gpus\": 1}\n"
                      "  ]\n}\n";
    int rc = cluster_rc(bad, &e);

    EXPECT_ERR(rc, e, UTIL_EPARSE, "", "line 3");
    ck_assert_msg(strstr(e.msg, "malformed JSON") != NULL, "msg: %s", e.msg);

    {
        static const err_case cases[] = {
            ERR_CASE("{\"nodes\": [", UTIL_EPARSE, "", "end of input"),
            ERR_CASE("   \n ", UTIL_EPARSE, "", "empty"),
            ERR_CASE("{} trailing", UTIL_EPARSE, "", "line 1"),
            ERR_CASE("[1, 2]",
                     UTIL_EFIELD, "", "expected a JSON object at the top "
                     "level, got an array"),
        };
        EXPECT_ERRS(cluster_rc, cases);
    }
}
END_TEST

START_TEST(cluster_missing_and_types)
{
    static const err_case cases[] = {
        ERR_CASE("{\"name\": \"x\"}", UTIL_EFIELD, "nodes", "missing required field"),
        ERR_CASE("{\"nodes\": []}", UTIL_EFIELD, "nodes", "non-empty array"),
        ERR_CASE("{\"nodes\": {\"a\": 1}}",
                 UTIL_EFIELD, "nodes",
                 "expected an array, got an object"),
        ERR_CASE("{\"nodes\": [5]}",
                 UTIL_EFIELD, "nodes[0]",
                 "expected an object, got a number"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"intra_gbps\": 10, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].gpus",
                 "missing required field 'gpus'"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": \"4\", \"intra_gbps\": 10, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].gpus", "integer, got a string"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 2.5, \"intra_gbps\": 10, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].gpus", "integer, got 2.5"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 0, \"intra_gbps\": 10, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].gpus",
                 "expected a positive integer of at most 65536, got 0"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1e12, \"intra_gbps\": 10, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].gpus",
                 "at most 65536, got 1000000000000"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": -3, \"nic_gbps\": 10}]}",
                 UTIL_EFIELD, "nodes[0].intra_gbps",
                 "expected a positive number of at least 0.000001 and at most "
                 "10000000 Gbit/s, got -3"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 0}]}",
                 UTIL_EFIELD, "nodes[0].nic_gbps",
                 "expected a positive number of at least 0.000001 and at most "
                 "10000000 Gbit/s, got 0"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": [1]}]}",
                 UTIL_EFIELD, "nodes[0].nic_gbps",
                 "expected a positive number, got an array"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1,"
                 " \"nic_latency_us\": -1}]}",
                 UTIL_EFIELD, "nodes[0].nic_latency_us",
                 "non-negative number"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1,"
                 " \"count\": 0}]}",
                 UTIL_EFIELD, "nodes[0].count", "positive integer"),
        ERR_CASE("{\"nodes\": [{\"name\": \"\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                 UTIL_EFIELD, "nodes[0].name", "non-empty string"),
        ERR_CASE("{\"name\": 5, \"nodes\": [{\"name\": \"a\","
                 " \"device\": \"V100\", \"gpus\": 1, \"intra_gbps\": 3,"
                 " \"nic_gbps\": 1}]}",
                 UTIL_EFIELD, "name", "expected a string, got a number"),
        ERR_CASE("{\"nodes\": [{\"name\": \"a\", \"device\": \"V100\","
                 " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}],"
                 " \"links\": {}}",
                 UTIL_EFIELD, "links", "expected an array, got an object"),
    };
    EXPECT_ERRS(cluster_rc, cases);
}
END_TEST

START_TEST(cluster_device_types)
{
    util_error e;
    int rc;

    rc = cluster_rc("{\"nodes\": [{\"name\": \"a\", \"device\": \"V10\","
                    " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "nodes[0].device",
               "unknown device type 'V10', did you mean 'V100'? (known: ");
    ck_assert_msg(strstr(e.msg, "V100") != NULL, "known list: %s", e.msg);

    rc = cluster_rc("{\"device_types\": {\"MyGPU\": {\"memory_gib\": 8,"
                    " \"tflops_fp16\": 10, \"mem_bw_gbs\": 100}},"
                    " \"nodes\": [{\"name\": \"a\", \"device\": \"Other\","
                    " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "nodes[0].device", "known: MyGPU");

    {
        static const err_case cases[] = {
            ERR_CASE("{\"device_types\": {\"X\": {\"memory_gib\": -16,"
                     " \"tflops_fp16\": 10, \"mem_bw_gbs\": 100}},"
                     " \"nodes\": [{\"name\": \"a\", \"device\": \"X\","
                     " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                     UTIL_EFIELD, "device_types.X.memory_gib",
                     "expected a positive number of at most 1000000 GiB, got -16"),
            ERR_CASE("{\"device_types\": {\"X\": {\"memory_gib\": 16,"
                     " \"tflops_fp16\": 10}},"
                     " \"nodes\": [{\"name\": \"a\", \"device\": \"X\","
                     " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                     UTIL_EFIELD, "device_types.X.mem_bw_gbs",
                     "missing required field"),
            ERR_CASE("{\"device_types\": [], \"nodes\": [{\"name\": \"a\","
                     " \"device\": \"V100\", \"gpus\": 1, \"intra_gbps\": 3,"
                     " \"nic_gbps\": 1}]}",
                     UTIL_EFIELD, "device_types",
                     "expected an object, got an array"),
        };
        EXPECT_ERRS(cluster_rc, cases);
    }
}
END_TEST

START_TEST(cluster_duplicates_and_totals)
{
    util_error e;
    int rc;

    {
        static const err_case cases[] = {
            ERR_CASE("{\"nodes\": ["
                     "{\"name\": \"a\", \"device\": \"V100\", \"gpus\": 1,"
                     " \"intra_gbps\": 3, \"nic_gbps\": 1},"
                     "{\"name\": \"a\", \"device\": \"T4\", \"gpus\": 1,"
                     " \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                     UTIL_EFIELD, "nodes[1].name",
                     "duplicate node name 'a' (also used by nodes[0])"),
            ERR_CASE("{\"nodes\": ["
                     "{\"name\": \"n\", \"count\": 3, \"device\": \"V100\","
                     " \"gpus\": 1, \"intra_gbps\": 3, \"nic_gbps\": 1},"
                     "{\"name\": \"n-2\", \"device\": \"T4\", \"gpus\": 1,"
                     " \"intra_gbps\": 3, \"nic_gbps\": 1}]}",
                     UTIL_EFIELD, "nodes[1].name",
                     "duplicate node name 'n-2'"),
        };
        EXPECT_ERRS(cluster_rc, cases);
    }
    rc = cluster_rc("{\"total_gpus\": 12, \"nodes\": ["
                    "{\"name\": \"n\", \"count\": 4, \"device\": \"T4\","
                    " \"gpus\": 4, \"intra_gbps\": 50, \"nic_gbps\": 50}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "total_gpus", "12");
    ck_assert_msg(strstr(e.msg, "16") != NULL, "both counts: %s", e.msg);
    {
        static const err_case cases[] = {
            ERR_CASE("{\"total_gpus\": \"16\", \"nodes\": ["
                     "{\"name\": \"n\", \"count\": 4, \"device\": \"T4\","
                     " \"gpus\": 4, \"intra_gbps\": 50, \"nic_gbps\": 50}]}",
                     UTIL_EFIELD, "total_gpus", "got a string"),
            ERR_CASE("{\"nodes\": ["
                     "{\"name\": \"n\", \"count\": 2000000, \"device\": \"T4\","
                     " \"gpus\": 4, \"intra_gbps\": 50, \"nic_gbps\": 50}]}",
                     UTIL_EFIELD, "nodes[0].count", "at most"),
        };
        EXPECT_ERRS(cluster_rc, cases);
    }
}
END_TEST

#define TWO_NODES                                                        \
    "\"nodes\": [{\"name\": \"a\", \"device\": \"V100\", \"gpus\": 4,"   \
    " \"intra_gbps\": 800, \"nic_gbps\": 100},"                          \
    "{\"name\": \"b\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 50," \
    " \"nic_gbps\": 50}]"

START_TEST(cluster_bad_links)
{
    util_error e;
    int rc;

    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a\", \"b\": \"zz\","
                    " \"gbps\": 10}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].b", "unknown node 'zz'");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a:1\", \"b\": \"b:2\","
                    " \"gbps\": 10}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].b",
               "GPU index 2 out of range for node 'b'");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"q:1\", \"b\": \"b:0\","
                    " \"gbps\": 10}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].a", "unknown node 'q'");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a:x\", \"b\": \"b:0\","
                    " \"gbps\": 10}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].a", "GPU index");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a\", \"b\": \"b\","
                    " \"gbps\": 0}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].gbps", "positive number");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a\", \"b\": \"b\","
                    " \"gbps\": 1, \"latency_ms\": -2}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].latency_ms", "non-negative");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"b\": \"b\", \"gbps\": 1}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0].a", "missing required field");
    rc = cluster_rc("{" TWO_NODES ", \"links\": [{\"a\": \"a:1\", \"b\": \"a:1\","
                    " \"gbps\": 1}]}",
                    &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "links[0]", "two different GPUs");
}
END_TEST

/* ---- cluster success ------------------------------------------------- */

START_TEST(cluster_conversions)
{
    const char *json =
        "{\"name\": \"conv\", \"future_key\": {\"x\": 1},"
        " \"device_types\": {\"T4\": {\"memory_gib\": 32, \"tflops_fp16\": 100,"
        "  \"tflops_bf16\": 50, \"mem_bw_gbs\": 500},"
        "  \"Unused\": {\"memory_gib\": 1, \"tflops_fp16\": 1, \"mem_bw_gbs\": 1}},"
        " \"nodes\": [{\"name\": \"a\", \"device\": \"v100\", \"gpus\": 4,"
        "  \"intra_gbps\": 800, \"nic_gbps\": 50, \"region\": \"eu\"},"
        "  {\"name\": \"b\", \"device\": \"T4\", \"gpus\": 2, \"intra_gbps\": 50,"
        "   \"nic_gbps\": 100, \"intra_latency_us\": 2, \"nic_latency_us\": 80}],"
        " \"total_gpus\": 6}";
    fmt_cluster c;
    util_error e;
    int rc = fmt_parse_cluster(json, "c.json", &c, &e);

    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_str_eq(c.name, "conv");
    ck_assert_int_eq(c.nnodes, 2);
    ck_assert_int_eq(c.ndevices, 6);
    ck_assert_msg(c.ntypes == 2, "only referenced types kept, got %d",
                  c.ntypes);
    ck_assert_msg(c.nodes[0].nic_bw == 6.25e9, "50 Gbps -> 6.25e9 B/s, got %g",
                  c.nodes[0].nic_bw);
    ck_assert_msg(c.nodes[0].intra_bw == 1e11, "800 Gbps -> 1e11 B/s, got %g",
                  c.nodes[0].intra_bw);
    ck_assert_msg(c.nodes[0].intra_lat == 5e-6 && c.nodes[0].nic_lat == 50e-6,
                  "default latencies 5 us / 50 us, got %g / %g",
                  c.nodes[0].intra_lat, c.nodes[0].nic_lat);
    ck_assert_msg(c.nodes[1].intra_lat == 2e-6 && c.nodes[1].nic_lat == 80e-6,
                  "latencies 2 us / 80 us, got %g / %g", c.nodes[1].intra_lat,
                  c.nodes[1].nic_lat);
    ck_assert_str_eq(c.nodes[0].region, "eu");
    ck_assert_str_eq(c.nodes[1].region, "");
    ck_assert_msg(strcmp(fmt_device(&c, 0)->name, "V100") == 0,
                  "case-insensitive catalogue lookup gave '%s'",
                  fmt_device(&c, 0)->name);
    ck_assert_msg(fmt_device(&c, 4)->mem_bytes == 32.0 * 1073741824.0,
                  "device_types override: 32 GiB, got %g",
                  fmt_device(&c, 4)->mem_bytes);
    ck_assert_msg(fmt_device(&c, 5)->flops_fp16 == 100e12 &&
                      fmt_device(&c, 5)->flops_bf16 == 50e12 &&
                      fmt_device(&c, 5)->mem_bw == 500e9,
                  "tflops/membw conversion");
    ck_assert_int_eq(c.nodes[1].first_device, 4);
    ck_assert_int_eq(c.device_node[5], 1);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(cluster_count_replication)
{
    const char *json =
        "{\"nodes\": [{\"name\": \"g\", \"count\": 3, \"device\": \"T4\","
        " \"gpus\": 4, \"intra_gbps\": 50, \"nic_gbps\": 50},"
        " {\"name\": \"solo\", \"count\": 1, \"device\": \"T4\", \"gpus\": 2,"
        " \"intra_gbps\": 50, \"nic_gbps\": 50}]}";
    fmt_cluster c;
    util_error e;
    int rc = fmt_parse_cluster(json, "c.json", &c, &e);

    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(c.nnodes, 4);
    ck_assert_int_eq(c.ndevices, 14);
    ck_assert_str_eq(c.nodes[0].name, "g-0");
    ck_assert_str_eq(c.nodes[1].name, "g-1");
    ck_assert_str_eq(c.nodes[2].name, "g-2");
    ck_assert_msg(strcmp(c.nodes[3].name, "solo") == 0,
                  "count 1 keeps the name, got '%s'", c.nodes[3].name);
    ck_assert_int_eq(c.nodes[2].first_device, 8);
    ck_assert_int_eq(c.ntypes, 1);
    fmt_cluster_free(&c);
}
END_TEST

START_TEST(cluster_link_overrides)
{
    const char *json =
        "{" TWO_NODES ", \"links\": ["
        " {\"a\": \"a\", \"b\": \"b\", \"gbps\": 8, \"latency_ms\": 30},"
        " {\"a\": \"a:0\", \"b\": \"a:1\", \"gbps\": 16},"
        " {\"a\": \"b:1\", \"b\": \"a:3\", \"gbps\": 24, \"latency_ms\": 0}]}";
    fmt_cluster c;
    util_error e;
    double bw, lat;
    int rc = fmt_parse_cluster(json, "c.json", &c, &e);

    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(c.nlinks, 3);
    fmt_link_between(&c, 1, 4, &bw, &lat);
    ck_assert_msg(bw == 1e9 && lat == 0.03,
                  "node link override 8 Gbps / 30 ms, got %g B/s / %g s", bw,
                  lat);
    fmt_link_between(&c, 1, 0, &bw, &lat);
    ck_assert_msg(bw == 2e9 && lat == 5e-6,
                  "GPU link override 16 Gbps, default intra latency, got %g / "
                  "%g",
                  bw, lat);
    fmt_link_between(&c, 3, 5, &bw, &lat);
    ck_assert_msg(bw == 3e9 && lat == 0, "GPU pair wins over node pair: %g",
                  bw);
    fmt_link_between(&c, 1, 2, &bw, &lat);
    ck_assert_msg(bw == 1e11, "no override inside a: intra 1e11, got %g", bw);
    fmt_cluster_free(&c);
}
END_TEST

/* ---- model ----------------------------------------------------------- */

START_TEST(model_form_errors)
{
    util_error e;
    int rc;

    rc = model_rc("{\"name\": \"x\", \"transformer\": {\"layers\": 2,"
                  " \"hidden\": 64, \"heads\": 4, \"seq\": 8, \"vocab\": 10},"
                  " \"layers\": []}",
                  &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "", "found both");
    ck_assert_msg(strstr(e.msg, "'transformer'") && strstr(e.msg, "'layers'"),
                  "names both keys: %s", e.msg);
    {
        static const err_case cases[] = {
            ERR_CASE("{\"name\": \"x\"}", UTIL_EFIELD, "", "found neither"),
            ERR_CASE("{\"transformer\": {\"layers\": 2, \"hidden\": 64,"
                     " \"heads\": 4, \"seq\": 8, \"vocab\": 10}}",
                     UTIL_EFIELD, "name", "missing required field"),
            ERR_CASE("{\"name\": \"x\", \"layers\": []}",
                     UTIL_EFIELD, "layers", "non-empty"),
            ERR_CASE("{\"name\": \"x\", \"layers\": {}}",
                     UTIL_EFIELD, "layers", "expected an array, got an "
                     "object"),
            ERR_CASE("{\"name\": \"x\",\n \"layers\": [\n{\"name\": 1 2}]}",
                     UTIL_EPARSE, "", "line 3"),
        };
        EXPECT_ERRS(model_rc, cases);
    }
}
END_TEST

START_TEST(model_layer_errors)
{
    util_error e;
    int rc;

    rc = model_rc("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                  " \"kind\": \"blob\", \"params\": 1, \"fwd_flops\": 1,"
                  " \"out_bytes\": 1, \"act_bytes\": 1}]}",
                  &e);
    EXPECT_ERR(rc, e, UTIL_EFIELD, "layers[0].kind",
               "unknown layer kind 'blob' (known: ");
    ck_assert_msg(strstr(e.msg, "transformer") && strstr(e.msg, "embedding"),
                  "kinds listed: %s", e.msg);
    {
        static const err_case cases[] = {
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1}]}",
                     UTIL_EFIELD, "layers[0].params",
                     "missing required field"),
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"params\": \"many\", \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1}]}",
                     UTIL_EFIELD, "layers[0].params",
                     "expected a non-negative number, got a string"),
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"params\": 1, \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": -1}]}",
                     UTIL_EFIELD, "layers[0].act_bytes", "got -1"),
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"params\": 1, \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1, \"tp_flops_frac\": 1.5}]}",
                     UTIL_EFIELD, "layers[0].tp_flops_frac",
                     "between 0 and 1"),
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"params\": 1, \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1, \"kernels\": 2.5}]}",
                     UTIL_EFIELD, "layers[0].kernels", "integer, got 2.5"),
            ERR_CASE("{\"name\": \"x\", \"layers\": [{\"name\": \"l\","
                     " \"kind\": \"norm\", \"params\": 1, \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1}, {\"name\": \"m\","
                     " \"kind\": \"norm\", \"params\": 1, \"fwd_flops\": 1,"
                     " \"out_bytes\": 1, \"act_bytes\": 1, \"repeat\": 0}]}",
                     UTIL_EFIELD, "layers[1].repeat", "positive integer"),
            ERR_CASE("{\"name\": \"x\", \"shape\": {\"hidden\": 0},"
                     " \"layers\": [{\"name\": \"l\", \"kind\": \"norm\","
                     " \"params\": 1, \"fwd_flops\": 1, \"out_bytes\": 1,"
                     " \"act_bytes\": 1}]}",
                     UTIL_EFIELD, "shape.hidden", "positive integer"),
            ERR_CASE("{\"name\": \"x\", \"training\": {\"precision\": \"int8\"},"
                     " \"layers\": [{\"name\": \"l\", \"kind\": \"norm\","
                     " \"params\": 1, \"fwd_flops\": 1, \"out_bytes\": 1,"
                     " \"act_bytes\": 1}]}",
                     UTIL_EFIELD, "training.precision",
                     "expected 'fp16', 'bf16' or 'fp32', got 'int8'"),
            ERR_CASE("{\"name\": \"x\", \"training\": {\"global_batch\": -8},"
                     " \"layers\": [{\"name\": \"l\", \"kind\": \"norm\","
                     " \"params\": 1, \"fwd_flops\": 1, \"out_bytes\": 1,"
                     " \"act_bytes\": 1}]}",
                     UTIL_EFIELD, "training.global_batch", "got -8"),
        };
        EXPECT_ERRS(model_rc, cases);
    }
}
END_TEST

START_TEST(model_transformer_errors)
{
    static const err_case cases[] = {
        ERR_CASE("{\"name\": \"x\", \"transformer\": {\"layers\": 2,"
                 " \"hidden\": 64, \"heads\": 0, \"seq\": 8, \"vocab\": 10}}",
                 UTIL_EFIELD, "transformer.heads", "positive integer"),
        ERR_CASE("{\"name\": \"x\", \"transformer\": {\"layers\": 2,"
                 " \"hidden\": 64, \"heads\": 4, \"vocab\": 10}}",
                 UTIL_EFIELD, "transformer.seq", "missing required"),
        ERR_CASE("{\"name\": \"x\", \"transformer\": {\"layers\": 2,"
                 " \"hidden\": 64, \"heads\": 4, \"seq\": 8, \"vocab\": 10,"
                 " \"tied_embeddings\": \"yes\"}}",
                 UTIL_EFIELD, "transformer.tied_embeddings",
                 "expected a boolean"),
        ERR_CASE("{\"name\": \"x\", \"transformer\": [1]}",
                 UTIL_EFIELD, "transformer", "expected an object"),
        /* checked by fmt_model_from_transformer: error keeps this file */
        ERR_CASE("{\"name\": \"x\", \"transformer\": {\"layers\": 2,"
                 " \"hidden\": 100, \"heads\": 16, \"seq\": 8, \"vocab\": 10}}",
                 UTIL_EFIELD, "transformer.heads", "divisible"),
        ERR_CASE("{\"name\": \"x\", \"transformer\": {\"family\": \"rnn\","
                 " \"layers\": 2, \"hidden\": 64, \"heads\": 4, \"seq\": 8,"
                 " \"vocab\": 10}}",
                 UTIL_EFIELD, "transformer.family", "rnn"),
    };
    EXPECT_ERRS(model_rc, cases);
}
END_TEST

START_TEST(model_explicit_layers)
{
    fmt_model m;
    util_error e;
    int rc, i;

    rc = fmt_parse_model(SMALL_MODEL, "m.json", &m, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_str_eq(m.name, "tiny");
    ck_assert_int_eq(m.nlayers, 4);
    ck_assert_str_eq(m.layers[1].name, "blk-0");
    ck_assert_str_eq(m.layers[2].name, "blk-1");
    ck_assert_str_eq(m.layers[0].name, "emb");
    ck_assert_int_eq(m.layers[1].kind, FMT_KIND_TRANSFORMER);
    ck_assert_int_eq(m.layers[3].kind, FMT_KIND_HEAD);
    ck_assert_msg(m.layers[2].fwd_flops == 1e7, "fwd_flops copied");
    ck_assert_int_eq(m.global_batch, 8);
    ck_assert_int_eq(m.dtype_bytes, 2);
    ck_assert_int_eq(m.bf16, 0);
    ck_assert_int_eq(m.hidden, 64);
    ck_assert_int_eq(m.heads, 4);
    ck_assert_int_eq(m.seq, 32);
    ck_assert_int_eq(m.vocab, 100);
    ck_assert_int_eq(m.blocks, 2);
    for (i = 0; i < m.nlayers; i++) {
        const fmt_layer *l = &m.layers[i];
        ck_assert_msg(l->tp_flops_frac >= 0 && l->traffic >= 0 &&
                          l->traffic_rep >= 0 && l->act_rep_bytes >= 0 &&
                          l->tp_comm_bytes >= 0 && l->tp_collectives >= 0 &&
                          l->kernels >= 0 && l->tied_group >= 0,
                      "layer %d: absent optional fields must get defaults", i);
    }
    fmt_model_free(&m);

    rc = fmt_parse_model("{\"name\": \"y\", \"training\": {\"precision\":"
                          " \"bf16\"}, \"layers\": [{\"name\": \"l\","
                          " \"kind\": \"embed2v\", \"params\": 1,"
                          " \"fwd_flops\": 1, \"out_bytes\": 1,"
                          " \"act_bytes\": 1, \"kernels\": 7,"
                          " \"tp_flops_frac\": 0.25, \"tied_group\": 3}]}",
                          "m.json", &m, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(m.bf16, 1);
    ck_assert_int_eq(m.dtype_bytes, 2);
    ck_assert_int_eq(m.layers[0].kind, FMT_KIND_HEAD);
    ck_assert_int_eq(m.layers[0].kernels, 7);
    ck_assert_int_eq(m.layers[0].tied_group, 3);
    ck_assert_msg(m.layers[0].tp_flops_frac == 0.25, "explicit value kept");
    ck_assert_str_eq(m.layers[0].name, "l");
    fmt_model_free(&m);
}
END_TEST

START_TEST(model_transformer_ok)
{
    fmt_model m;
    util_error e;
    int rc;

    rc = fmt_parse_model("{\"name\": \"t\", \"training\": {\"global_batch\":"
                          " 16, \"precision\": \"fp32\"}, \"transformer\":"
                          " {\"layers\": 6, \"hidden\": 128, \"heads\": 4,"
                          " \"seq\": 64, \"vocab\": 1000,"
                          " \"tied_embeddings\": false}}",
                          "m.json", &m, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_str_eq(m.name, "t");
    ck_assert_str_eq(m.family, "gpt2");
    ck_assert_int_eq(m.nlayers, 6 + 3);
    ck_assert_int_eq(m.global_batch, 16);
    ck_assert_int_eq(m.dtype_bytes, 4);
    ck_assert_int_eq(m.hidden, 128);
    ck_assert_msg(m.layers[0].tied_group == 0, "tied_embeddings false");
    fmt_model_free(&m);
}
END_TEST

/* ---- profile --------------------------------------------------------- */

START_TEST(profile_errors)
{
    static const err_case cases[] = {
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3]}]}",
                 UTIL_EFIELD, "entries[0].fwd_ms",
                 "expected 4 entries (one per model layer), got 3"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3, 4],"
                 " \"bwd_ms\": [1, 2, 3, 4, 5]}]}",
                 UTIL_EFIELD, "entries[0].bwd_ms", "got 5"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3, 4]},"
                 " {\"device\": \"T4\", \"tp\": 1, \"mbs\": 1,"
                 " \"fwd_ms\": [1, 2, 3, 4]},"
                 " {\"device\": \"V100\", \"tp\": 1, \"mbs\": 1,"
                 " \"fwd_ms\": [1, 2, 3, 4]}]}",
                 UTIL_EFIELD, "entries[2]",
                 "duplicate entry for device 'V100', tp 1, mbs 1"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, -2, 3, 4]}]}",
                 UTIL_EFIELD, "entries[0].fwd_ms[1]",
                 "non-negative number of at most 1000000000 ms, got -2"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, \"2\", 3, 4]}]}",
                 UTIL_EFIELD, "entries[0].fwd_ms[1]", "got a string"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 0,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3, 4]}]}",
                 UTIL_EFIELD, "entries[0].tp", "positive integer"),
        ERR_CASE("{\"entries\": [{\"device\": \"\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3, 4]}]}",
                 UTIL_EFIELD, "entries[0].device", "non-empty"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1}]}",
                 UTIL_EFIELD, "entries[0].fwd_ms",
                 "missing required field"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"fwd_ms\": [1, 2, 3, 4],"
                 " \"by_kind\": {}}]}",
                 UTIL_EFIELD, "entries[0]", "found both"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"by_kind\": {\"blob\": {\"fwd_ms\": 1}}}]}",
                 UTIL_EFIELD, "entries[0].by_kind.blob",
                 "unknown layer kind 'blob'"),
        ERR_CASE("{\"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                 " \"mbs\": 1, \"by_kind\": {\"head\": {\"bwd_ms\": 1}}}]}",
                 UTIL_EFIELD, "entries[0].by_kind.head.fwd_ms",
                 "missing required field"),
        ERR_CASE("{\"format\": \"hetplan-profile/9\", \"entries\": []}",
                 UTIL_EFIELD, "format",
                 "expected 'hetplan-profile/1', got 'hetplan-profile/9'"),
        ERR_CASE("{\"entries\": {}}", UTIL_EFIELD, "entries", "expected an array"),
        ERR_CASE("{\"format\": \"hetplan-profile/1\"}",
                 UTIL_EFIELD, "entries", "missing required field"),
    };
    EXPECT_ERRS(profile_err, cases);
}
END_TEST

START_TEST(profile_ok)
{
    fmt_profile p;
    util_error e;
    int rc;

    rc = profile_rc("{\"format\": \"hetplan-profile/1\", \"model\": \"tiny\","
                    " \"device_info\": {\"anything\": [1, 2]},"
                    " \"entries\": [{\"device\": \"V100\", \"tp\": 1,"
                    " \"mbs\": 2, \"fwd_ms\": [2, null, 0.5, 4],"
                    " \"bwd_ms\": [4, 6, null, 8]},"
                    " {\"device\": \"V100\", \"tp\": 2, \"mbs\": 2,"
                    " \"fwd_ms\": [1, 1, 1, 1]},"
                    " {\"device\": \"T4\", \"tp\": 1, \"mbs\": 1,"
                    " \"by_kind\": {\"transformer\": {\"fwd_ms\": 3,"
                    " \"bwd_ms\": 7}, \"embed2h\": {\"fwd_ms\": 1}}}]}",
                    &p, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(p.nentries, 3);
    ck_assert_int_eq(p.nlayers, 4);
    ck_assert_str_eq(p.entries[0].device, "V100");
    ck_assert_int_eq(p.entries[0].mbs, 2);
    ck_assert_msg(p.entries[0].fwd[0] == 0.002, "2 ms -> 0.002 s, got %g",
                  p.entries[0].fwd[0]);
    ck_assert_msg(p.entries[0].fwd[1] == -1, "null -> -1");
    ck_assert_msg(p.entries[0].bwd[2] == -1 && p.entries[0].bwd[3] == 0.008,
                  "bwd conversion");
    ck_assert_msg(p.entries[1].bwd == NULL, "absent bwd_ms -> NULL");
    ck_assert_int_eq(p.entries[1].tp, 2);
    ck_assert_msg(p.entries[2].fwd[0] == 0.001 && p.entries[2].bwd[0] == -1,
                  "by_kind embedding: fwd 1 ms, bwd ratio");
    ck_assert_msg(p.entries[2].fwd[1] == 0.003 && p.entries[2].fwd[2] == 0.003 &&
                      p.entries[2].bwd[2] == 0.007,
                  "by_kind transformer applies to every block");
    ck_assert_msg(p.entries[2].fwd[3] == -1, "other kinds stay -1");
    fmt_profile_free(&p);
}
END_TEST

START_TEST(profile_from_amp)
{
    fmt_model m;
    fmt_profile p;
    util_error e;
    int rc, i, v100 = 0, t4 = 0;

    rc = fmt_load_model(EX("gpt2-amp.json"), &m, &e);
    ck_assert_msg(rc == UTIL_OK, "gpt2-amp: %s: %s", e.path, e.msg);
    ck_assert_int_eq(m.nlayers, 30);
    rc = fmt_profile_from_amp(AMP_PROFILES, "gpt2", &m, &p, &e);
    ck_assert_msg(rc == UTIL_OK, "amp profile: %s: %s", e.path, e.msg);
    ck_assert_int_eq(p.nlayers, 30);
    for (i = 0; i < p.nentries; i++) {
        ck_assert_int_eq(p.entries[i].mbs, 1);
        ck_assert_msg(p.entries[i].bwd == NULL, "AMP gives forward only");
        ck_assert_msg(p.entries[i].tp == 1 || p.entries[i].tp == 2 ||
                          p.entries[i].tp == 4,
                      "tp %d", p.entries[i].tp);
        v100 += strcmp(p.entries[i].device, "V100") == 0;
        t4 += strcmp(p.entries[i].device, "T4") == 0;
    }
    ck_assert_msg(v100 == 3 && t4 == 3,
                  "3 tp entries per GPU type, got V100 %d, T4 %d", v100, t4);
    ck_assert_msg(p.entries[0].fwd[2] > 0 && p.entries[0].fwd[2] < 1,
                  "times in seconds, got %g", p.entries[0].fwd[2]);
    fmt_profile_free(&p);

    memset(&e, 0, sizeof e);
    rc = fmt_profile_from_amp(AMP_PROFILES, "bert", &m, &p, &e);
    EXPECT_ERR(rc, e, UTIL_ENOTFOUND, "bert", "'bert' not found");
    ck_assert_msg(all_zero(&p, sizeof p), "profile not empty on failure");
    fmt_model_free(&m);

    small_model(&m);
    rc = fmt_profile_from_amp(AMP_PROFILES, "gpt2", &m, &p, &e);
    ck_assert_int_eq(rc, UTIL_EFIELD);
    ck_assert_msg(strstr(e.msg, "expected 4 entries") && strstr(e.msg, "30"),
                  "length mismatch names both counts: %s", e.msg);
    ck_assert_msg(all_zero(&p, sizeof p), "profile not empty on failure");
    fmt_model_free(&m);
}
END_TEST

/* ---- strategies ------------------------------------------------------ */

START_TEST(strategies_ok)
{
    fmt_strategy *s;
    util_error e;
    int n, rc;

    rc = strat_rc("{\"strategies\": ["
                  "{\"tp\": 1, \"dp\": 2, \"pp\": 2, \"mbs\": 2,"
                  " \"stage_boundaries\": [0, 2, 4]},"
                  "{\"tp\": 2, \"dp\": 1, \"pp\": 2, \"mbs\": 1,"
                  " \"stage_boundaries\": [0, 1, 4], \"ranks\": [3, 2, 1, 0],"
                  " \"schedule\": \"gpipe\"}]}",
                  &s, &n, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(s[0].gas, 2);
    ck_assert_int_eq(s[0].schedule, FMT_SCHED_1F1B);
    ck_assert_str_eq(s[0].placement, "megatron");
    ck_assert_int_eq(s[0].ranks[3], 3);
    ck_assert_int_eq(s[0].bounds[1], 2);
    ck_assert_int_eq(s[1].gas, 8);
    ck_assert_int_eq(s[1].schedule, FMT_SCHED_GPIPE);
    ck_assert_str_eq(s[1].placement, "explicit");
    ck_assert_int_eq(s[1].ranks[0], 3);
    free_strats(s, n);
}
END_TEST

/* The training features of a strategy: defaults when absent ("not
 * stated" for recompute and zero), values when given, located errors. */
START_TEST(strategies_features)
{
    fmt_strategy *s;
    util_error e;
    int n, rc;

    rc = strat_rc("{\"strategies\": ["
                  "{\"tp\": 1, \"dp\": 2, \"pp\": 2, \"mbs\": 2,"
                  " \"stage_boundaries\": [0, 2, 4]},"
                  "{\"tp\": 2, \"dp\": 1, \"pp\": 2, \"mbs\": 1,"
                  " \"stage_boundaries\": [0, 2, 4], \"vpp\": 2,"
                  " \"sequence_parallel\": true, \"recompute\": \"selective\","
                  " \"zero\": 1}]}",
                  &s, &n, &e);
    ck_assert_msg(rc == UTIL_OK, "parse failed: %s: %s", e.path, e.msg);
    ck_assert_int_eq(s[0].vpp, 1);
    ck_assert_int_eq(s[0].sp, 0);
    ck_assert_int_eq(s[0].recompute, -1);
    ck_assert_int_eq(s[0].zero, -1);
    ck_assert_int_eq(s[1].vpp, 2);
    ck_assert_int_eq(s[1].sp, 1);
    ck_assert_int_eq(s[1].recompute, FMT_RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(s[1].zero, 1);
    free_strats(s, n);

    {
        static const err_case cases[] = {
            ERR_CASE("{\"strategies\": [{\"tp\": 2, \"dp\": 1, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4],"
                     " \"recompute\": \"some\"}]}",
                     UTIL_EFIELD, "strategies[0].recompute", "'some'"),
            ERR_CASE("{\"strategies\": [{\"tp\": 2, \"dp\": 1, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4],"
                     " \"zero\": 4}]}",
                     UTIL_EFIELD, "strategies[0].zero", "0 to 3"),
            ERR_CASE("{\"strategies\": [{\"tp\": 2, \"dp\": 1, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4],"
                     " \"sequence_parallel\": 1}]}",
                     UTIL_EFIELD, "strategies[0].sequence_parallel",
                     "boolean"),
            /* interleaving needs pp >= 2 and micro-batches divisible by pp */
            ERR_CASE("{\"strategies\": [{\"tp\": 2, \"dp\": 2, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"vpp\": 2}]}",
                     UTIL_EINVAL, "strategies[0].vpp", "pp >= 2"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 4,"
                     " \"mbs\": 4, \"stage_boundaries\": [0, 1, 2, 3, 4],"
                     " \"vpp\": 2}]}",
                     UTIL_EINVAL, "strategies[0].vpp", "at least pp"),
            /* fewer ranks than GPUs: the message says how to leave some idle */
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 1, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4]}]}",
                     UTIL_EINVAL, "strategies[0]", "in 'ranks' to leave the others idle"),
        };
        EXPECT_ERRS(strat_err, cases);
    }
}
END_TEST

START_TEST(strategies_errors)
{
    fmt_strategy *s;
    util_error e;
    int n, rc;

    rc = strat_rc("{\"strategies\": [{\"tp\": 2, \"dp\": 2, \"pp\": 2,"
                  " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4]}]}",
                  &s, &n, &e);
    EXPECT_ERR(rc, e, UTIL_EINVAL, "strategies[0]", "does not match");
    ck_assert_msg(strstr(e.msg, "4 GPUs") != NULL, "msg: %s", e.msg);
    {
        static const err_case cases[] = {
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4]}]}",
                     UTIL_EINVAL, "strategies[0].stage_boundaries",
                     "expected 3 entries (pp + 1), got 2"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4, 4]}]}",
                     UTIL_EINVAL, "strategies[0].stage_boundaries",
                     "increasing"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 2,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 2, 5]}]}",
                     UTIL_EINVAL, "strategies[0].stage_boundaries", "0 to 4"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 3, \"stage_boundaries\": [0, 4]}]}",
                     UTIL_EINVAL, "strategies[0].mbs", "not divisible"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"ranks\": [0, 1, 2, 7]}]}",
                     UTIL_EFIELD, "strategies[0].ranks[3]",
                     "expected a device index below 4"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"ranks\": [0, 1, 1, 2]}]}",
                     UTIL_EFIELD, "strategies[0].ranks[2]",
                     "device 1 is used twice"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"ranks\": [0, 1, -2, 3]}]}",
                     UTIL_EFIELD, "strategies[0].ranks[2]", "non-negative"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"ranks\": [0, 1]}]}",
                     UTIL_EFIELD, "strategies[0].ranks",
                     "expected 4 entries"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4],"
                     " \"schedule\": \"zb\"}]}",
                     UTIL_EFIELD, "strategies[0].schedule",
                     "expected '1f1b' or 'gpipe', got 'zb'"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4]},"
                     " {\"tp\": 1, \"dp\": \"4\", \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4]}]}",
                     UTIL_EFIELD, "strategies[1].dp", "got a string"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1, \"stage_boundaries\": [0, 4.5]}]}",
                     UTIL_EFIELD, "strategies[0].stage_boundaries[1]",
                     "integer, got 4.5"),
            ERR_CASE("{\"strategies\": [{\"tp\": 1, \"dp\": 4, \"pp\": 1,"
                     " \"mbs\": 1}]}",
                     UTIL_EFIELD, "strategies[0].stage_boundaries",
                     "missing required field"),
            ERR_CASE("{\"strategies\": []}", UTIL_EFIELD, "strategies", "non-empty"),
            ERR_CASE("{\"strategies\": [{\"tp\": 100000, \"dp\": 100000,"
                     " \"pp\": 100000, \"mbs\": 1, \"stage_boundaries\": [0, 4]}]}",
                     UTIL_EINVAL, "strategies[0]", "does not match"),
        };
        EXPECT_ERRS(strat_err, cases);
    }
}
END_TEST

/* ---- examples -------------------------------------------------------- */

START_TEST(example_clusters)
{
    static const struct {
        const char *file;
        int devices, nodes, types;
    } want[] = {
        {EX("amp-homogeneous.json"), 16, 4, 1},
        {EX("amp-het.json"), 16, 4, 2},
        {EX("mixed-generations.json"), 42, 7, 5},
    };
    fmt_cluster c;
    util_error e;
    size_t i;
    int rc;

    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        rc = fmt_load_cluster(want[i].file, &c, &e);
        ck_assert_msg(rc == UTIL_OK, "%s: %s: %s", want[i].file, e.path,
                      e.msg);
        ck_assert_msg(c.ndevices == want[i].devices,
                      "%s: %d devices, expected %d", want[i].file, c.ndevices,
                      want[i].devices);
        ck_assert_msg(c.nnodes == want[i].nodes, "%s: %d nodes, expected %d",
                      want[i].file, c.nnodes, want[i].nodes);
        ck_assert_msg(c.ntypes == want[i].types, "%s: %d types, expected %d",
                      want[i].file, c.ntypes, want[i].types);
        if (i == 0)
            ck_assert_msg(c.nodes[3].nic_bw == 6.25e9 &&
                              strcmp(c.nodes[3].name, "g4dn-3") == 0,
                          "amp-homogeneous: g4dn-3 at 50 Gbps");
        fmt_cluster_free(&c);
    }
}
END_TEST

START_TEST(example_models)
{
    static const struct {
        const char *file;
        int layers, batch;
    } want[] = {
        {EX("gpt2-amp.json"), 30, 32},
        {EX("gpt2-345m.json"), 27, 32},
        {EX("gpt3-xl.json"), 27, 256},
        {EX("llama-7b.json"), 35, 512},
    };
    fmt_model m;
    util_error e;
    size_t i;
    int rc;

    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        rc = fmt_load_model(want[i].file, &m, &e);
        ck_assert_msg(rc == UTIL_OK, "%s: %s: %s", want[i].file, e.path,
                      e.msg);
        ck_assert_msg(m.nlayers == want[i].layers,
                      "%s: %d layers, expected %d", want[i].file, m.nlayers,
                      want[i].layers);
        ck_assert_msg(m.global_batch == want[i].batch,
                      "%s: global batch %d, expected %d", want[i].file,
                      m.global_batch, want[i].batch);
        fmt_model_free(&m);
    }
}
END_TEST

START_TEST(example_strategies)
{
    fmt_cluster c;
    fmt_model m;
    fmt_strategy *s = NULL;
    util_error e;
    int rc, n = 0;

    rc = fmt_load_cluster(EX("amp-het.json"), &c, &e);
    ck_assert_msg(rc == UTIL_OK, "amp-het: %s", e.msg);
    rc = fmt_load_model(EX("gpt2-amp.json"), &m, &e);
    ck_assert_msg(rc == UTIL_OK, "gpt2-amp: %s", e.msg);
    rc = fmt_load_strategies(EX("strategies-amp-het.json"), &c, &m, 32, &s,
                              &n, &e);
    ck_assert_msg(rc == UTIL_OK, "strategies: %s: %s", e.path, e.msg);
    ck_assert_msg(n >= 1, "at least one strategy");
    ck_assert_int_eq(s[0].tp * s[0].dp * s[0].pp, 16);
    ck_assert_int_eq(s[0].bounds[0], 0);
    ck_assert_int_eq(s[0].bounds[s[0].pp], 30);
    ck_assert_int_eq(s[0].gas, 32 / (s[0].dp * s[0].mbs));
    free_strats(s, n);

    /* global batch 0: taken from the model's training.global_batch */
    rc = fmt_load_strategies(EX("strategies-amp-het.json"), &c, &m, 0, &s,
                              &n, &e);
    ck_assert_msg(rc == UTIL_OK, "strategies (batch from model): %s", e.msg);
    free_strats(s, n);

    rc = fmt_load_strategies("/nonexistent/s.json", &c, &m, 32, &s, &n, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "cannot open");
    ck_assert_msg(s == NULL && n == 0, "outputs empty on failure");
    fmt_cluster_free(&c);
    fmt_model_free(&m);
}
END_TEST

START_TEST(load_missing_files)
{
    fmt_cluster c;
    fmt_model m;
    fmt_profile p;
    util_error e;
    int rc;

    rc = fmt_load_cluster("/nonexistent/c.json", &c, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "cannot open '/nonexistent/c.json'");
    ck_assert_msg(all_zero(&c, sizeof c), "cluster empty on failure");
    rc = fmt_load_model("/nonexistent/m.json", &m, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "No such file");
    small_model(&m);
    rc = fmt_load_profile("/nonexistent/p.json", &m, &p, &e);
    EXPECT_ERR(rc, e, UTIL_EIO, "", "No such file");
    ck_assert_msg(all_zero(&p, sizeof p), "profile empty on failure");
    fmt_model_free(&m);
}
END_TEST

/* Every truncation and one-byte corruption of valid inputs must fail
 * (or succeed) cleanly: no crash, no leak (run under ASan). */
START_TEST(robust_truncations)
{
    const char *docs[3];
    char *buf;
    size_t i, k, len;
    fmt_cluster c;
    fmt_model m, sm;
    fmt_profile p;
    fmt_strategy *s;
    util_error e;
    int n, which;
    static const char corrupt[] = {'"', '}', ']', ',', '-', '0', 'x', ':'};

    docs[0] = SMALL_CLUSTER;
    docs[1] = SMALL_MODEL;
    docs[2] = "{\"entries\": [{\"device\": \"V100\", \"tp\": 1, \"mbs\": 1,"
              " \"fwd_ms\": [1, 2, null, 4]}]}";
    small_cluster(&c);
    small_model(&sm);
    for (which = 0; which < 3; which++) {
        len = strlen(docs[which]);
        buf = malloc(len + 1);
        ck_assert_ptr_nonnull(buf);
        for (i = 0; i <= len; i++) {
            for (k = 0; k <= sizeof corrupt; k++) {
                memcpy(buf, docs[which], len + 1);
                if (k == sizeof corrupt)
                    buf[i] = '\0'; /* truncation */
                else if (i < len)
                    buf[i] = corrupt[k];
                if (which == 0) {
                    fmt_cluster cc;
                    if (fmt_parse_cluster(buf, "c", &cc, &e) == UTIL_OK)
                        fmt_cluster_free(&cc);
                    else
                        ck_assert_msg(all_zero(&cc, sizeof cc), "not empty");
                } else if (which == 1) {
                    if (fmt_parse_model(buf, "m", &m, &e) == UTIL_OK)
                        fmt_model_free(&m);
                    else
                        ck_assert_msg(all_zero(&m, sizeof m), "not empty");
                } else {
                    if (fmt_parse_profile(buf, "p", &sm, &p, &e) == UTIL_OK)
                        fmt_profile_free(&p);
                    else
                        ck_assert_msg(all_zero(&p, sizeof p), "not empty");
                }
            }
        }
        free(buf);
    }
    /* strategies */
    {
        const char *st = "{\"strategies\": [{\"tp\": 1, \"dp\": 2, \"pp\": 2,"
                         " \"mbs\": 1, \"stage_boundaries\": [0, 2, 4],"
                         " \"ranks\": [0, 1, 2, 3]}]}";
        len = strlen(st);
        buf = malloc(len + 1);
        ck_assert_ptr_nonnull(buf);
        for (i = 0; i <= len; i++)
            for (k = 0; k <= sizeof corrupt; k++) {
                memcpy(buf, st, len + 1);
                if (k == sizeof corrupt)
                    buf[i] = '\0';
                else if (i < len)
                    buf[i] = corrupt[k];
                if (fmt_parse_strategies(buf, "s", &c, &sm, 8, &s, &n, &e) ==
                    UTIL_OK)
                    free_strats(s, n);
                else
                    ck_assert_msg(s == NULL && n == 0, "not empty");
            }
        free(buf);
    }
    fmt_cluster_free(&c);
    fmt_model_free(&sm);
}
END_TEST

static Suite *inputs_suite(void)
{
    const TTest *const tf[] = {read_missing_file, read_file_contents_and_nul,
                               write_atomic_replaces,
                               write_atomic_failures_leave_nothing,
                               load_missing_files};
    const TTest *const tc[] = {cluster_malformed_json, cluster_missing_and_types,
                               cluster_device_types, cluster_duplicates_and_totals,
                               cluster_bad_links, cluster_conversions,
                               cluster_count_replication, cluster_link_overrides};
    const TTest *const tm[] = {model_form_errors, model_layer_errors,
                               model_transformer_errors, model_explicit_layers,
                               model_transformer_ok};
    const TTest *const tp[] = {profile_errors, profile_ok};
    const TTest *const ts[] = {strategies_ok, strategies_errors,
                               strategies_features, robust_truncations};
    const TTest *const te[] = {example_clusters, example_models,
                               example_strategies};
    const tu_case cases[] = {
        {"files", tf, TU_N(tf), 0, NULL, NULL},
        {"cluster", tc, TU_N(tc), 0, NULL, NULL},
        {"model", tm, TU_N(tm), 0, NULL, NULL},
        {"profile", tp, TU_N(tp), 0, NULL, NULL},
        {"strategies", ts, TU_N(ts), 120, NULL, NULL},
        {"examples", te, TU_N(te), 0, NULL, NULL},
    };

    return tu_suite_of("inputs", cases, TU_N(cases));
}

/* Needs AMP's profiles (../shared/data/amp). */
static Suite *data_suite(void)
{
    const TTest *const tests[] = {profile_from_amp};

    return tu_suite("inputs from the data folder", "profile", tests, TU_N(tests));
}

int main(int argc, char **argv)
{
    return tu_main(argc, argv, inputs_suite, data_suite, TU_DATA "/amp");
}
