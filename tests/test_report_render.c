/* tests/test_report_render.c: `planner report` (docs/report.md).
 *
 * The SVG and HTML are checked as text (sections, legend, axis titles, one
 * shape per timeline event, escaping, nothing external), then rendered
 * with headless Chromium: the PNG screenshot is decoded here (zlib) and
 * must not be blank, and the legend, axis and plot regions that
 * report_svg reports must hold drawn pixels while a margin stays
 * white.  The rendering check is the ctest entry test_report_render_tool:
 * without chromium (or zlib) it says so and is reported as skipped. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(HETPLAN_HAVE_ZLIB)
#include <zlib.h>
#endif

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "plan.h"
#include "report.h"
#include "testutil.h"

#define GOLDEN HETPLAN_SOURCE_DIR "/tests/golden"
#define PATHN 4096

static char tmp_dir[1024];

static void spill(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");

    ck_assert_msg(f != NULL, "cannot write '%s'", path);
    fputs(text, f);
    fclose(f);
}

/* ---- a hand-made report input ---------------------------------------- */

static const char two_nodes[] =
    "{\"name\": \"two <&> nodes\", \"nodes\": ["
    "{\"name\": \"a\", \"device\": \"A100-80GB\", \"gpus\": 4, \"intra_gbps\": 2400, \"nic_gbps\": 200},"
    "{\"name\": \"b\", \"device\": \"V100\", \"gpus\": 4, \"intra_gbps\": 1200, \"nic_gbps\": 100}]}";
static const char gpt16[] =
    "{\"name\": \"g16\", \"training\": {\"global_batch\": 8, \"precision\": \"fp16\"},"
    " \"transformer\": {\"family\": \"gpt2\", \"layers\": 16, \"hidden\": 1024,"
    " \"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";

typedef struct rfix {
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s[2];
    cost_result r[2];
    cost_timeline tl;
    report_input in;
} rfix;

/* 1F1B-like timeline of pp 2, dp 1, gas 2, in ms, built by hand. */
static void hand_timeline(cost_timeline *tl)
{
    static const cost_event ev[] = {
        {COST_EV_FWD, 0, 0, 0, 0.000, 0.010, 0},      {COST_EV_SEND_ACT, 0, 0, 0, 0.010, 0.012, 0},
        {COST_EV_FWD, 0, 0, 1, 0.010, 0.020, 0},      {COST_EV_FWD, 1, 0, 0, 0.012, 0.022, 0},
        {COST_EV_SEND_ACT, 0, 0, 1, 0.020, 0.022, 0}, {COST_EV_BWD, 1, 0, 0, 0.022, 0.042, 0},
        {COST_EV_SEND_GRAD, 1, 0, 0, 0.042, 0.044, 0}, {COST_EV_FWD, 1, 0, 1, 0.042, 0.052, 0},
        {COST_EV_BWD, 0, 0, 0, 0.044, 0.064, 0},      {COST_EV_BWD, 1, 0, 1, 0.052, 0.072, 0},
        {COST_EV_SEND_GRAD, 1, 0, 1, 0.072, 0.074, 0}, {COST_EV_DP_ALLREDUCE, 1, 0, -1, 0.072, 0.080, 0},
        {COST_EV_BWD, 0, 0, 1, 0.074, 0.094, 0},      {COST_EV_DP_ALLREDUCE, 0, 0, -1, 0.094, 0.104, 0},
        {COST_EV_OPTIMIZER, 0, 0, -1, 0.104, 0.108, 0}, {COST_EV_OPTIMIZER, 1, 0, -1, 0.104, 0.108, 0}};
    int n = (int)(sizeof ev / sizeof ev[0]);

    memset(tl, 0, sizeof *tl);
    tl->pp = 2;
    tl->dp = 1;
    tl->gas = 2;
    tl->events = malloc(sizeof ev);
    memcpy(tl->events, ev, sizeof ev);
    tl->nevents = n;
    tl->iter_s = 0.108;
    tl->busy_s = calloc(2, sizeof *tl->busy_s);
    tl->busy_s[0] = tl->busy_s[1] = 0.06;
}

static void rfix_make(rfix *f)
{
    util_error err;
    int i, r;

    memset(f, 0, sizeof *f);
    tu_parse_inputs(two_nodes, gpt16, &f->c, &f->m);
    cost_params_init(&f->p);
    /* #1: tp 4, pp 2; #2: tp 1, dp 8 */
    ck_assert_int_eq(fmt_strategy_alloc(&f->s[0], 4, 1, 2), UTIL_OK);
    ck_assert_int_eq(fmt_strategy_alloc(&f->s[1], 1, 8, 1), UTIL_OK);
    for (i = 0; i < 2; i++) {
        for (r = 0; r < 8; r++)
            f->s[i].ranks[r] = r;
        f->s[i].mbs = 1;
        snprintf(f->s[i].placement, sizeof f->s[i].placement, "megatron");
    }
    f->s[0].gas = 8;
    f->s[0].bounds[0] = 0;
    f->s[0].bounds[1] = 9;
    f->s[0].bounds[2] = f->m.nlayers;
    f->s[1].gas = 1;
    f->s[1].bounds[0] = 0;
    f->s[1].bounds[1] = f->m.nlayers;
    for (i = 0; i < 2; i++)
        ck_assert_msg(cost_evaluate(&f->c, &f->m, NULL, &f->p, &f->s[i], &f->r[i], &err) ==
                          UTIL_OK, "%s", err.msg);
    hand_timeline(&f->tl);
    f->in.title = "hand <made>";
    f->in.c = &f->c;
    f->in.m = &f->m;
    f->in.s = f->s;
    f->in.r = f->r;
    f->in.n = 2;
    f->in.shown = 0;
    f->in.timeline = &f->tl;
    f->in.global_batch = 8;
}

static void rfix_free(rfix *f)
{
    int i;

    for (i = 0; i < 2; i++) {
        fmt_strategy_free(&f->s[i]);
        cost_result_free(&f->r[i]);
    }
    cost_timeline_free(&f->tl);
    fmt_model_free(&f->m);
    fmt_cluster_free(&f->c);
}

static int box_ok(const report_box *b, double W, double H)
{
    return b->w > 0 && b->h > 0 && b->x >= 0 && b->y >= 0 && b->x + b->w <= W &&
           b->y + b->h <= H;
}

START_TEST(svg_text_has_everything)
{
    rfix f;
    char *svg = NULL;
    report_layout L;
    util_error err;

    rfix_make(&f);
    ck_assert_int_eq(report_svg(&f.in, &svg, &L, &err), UTIL_OK);
    ck_assert(strncmp(svg, "<?xml", 5) == 0);
    ck_assert_int_eq(tu_count(svg, "<svg "), 1);
    ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
    /* sections, legends, axis titles with units */
    ck_assert_ptr_nonnull(strstr(svg, "Pipeline timeline of one iteration"));
    ck_assert_ptr_nonnull(strstr(svg, "Memory per device against its capacity"));
    ck_assert_ptr_nonnull(strstr(svg, "Top 2 strategies"));
    ck_assert_ptr_nonnull(strstr(svg, ">forward</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">backward</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">send activation</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">gradient sync (DP, tied)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">idle (pipeline bubble)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">time (ms)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">memory (GiB)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">rank (device type)</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">predicted iteration time (s)</text>"));
    /* one shape per event, with its kind in the tooltip */
    ck_assert_int_eq(tu_count(svg, "<title>forward, stage"), 4);
    ck_assert_int_eq(tu_count(svg, "<title>backward, stage"), 4);
    ck_assert_int_eq(tu_count(svg, "<title>send activation, stage"), 2);
    ck_assert_int_eq(tu_count(svg, "<title>send gradient, stage"), 2);
    /* dp 1: the two gradient syncs are the tied embedding's, not DP's */
    ck_assert_int_eq(tu_count(svg, "<title>tied-embedding sync, stage"), 2);
    ck_assert_int_eq(tu_count(svg, "<title>data-parallel all-reduce, stage"), 0);
    ck_assert_ptr_nonnull(strstr(svg, ">tied-embedding sync</text>"));
    /* the title says which time is predicted and which simulated */
    ck_assert_ptr_nonnull(strstr(svg, " s predicted (cost model), "));
    ck_assert_ptr_nonnull(strstr(svg, " s simulated (event-level schedule"));
    ck_assert_ptr_nonnull(strstr(svg, ">strategy: degrees (placement)</text>"));
    ck_assert_int_eq(tu_count(svg, "<title>optimizer step, stage"), 2);
    /* x axis ticks 0..100 ms in steps of 10 or 20 */
    ck_assert_ptr_nonnull(strstr(svg, ">100</text>"));
    /* rows labelled with their devices */
    ck_assert_ptr_nonnull(strstr(svg, "stage 1, dp 0: 4xV100 (dev 4-7)"));
    /* one memory bar per rank */
    ck_assert_int_eq(tu_count(svg, "<g><title>rank "), 8);
    /* escaping, nothing external */
    ck_assert_ptr_nonnull(strstr(svg, "two &lt;&amp;&gt; nodes"));
    ck_assert_ptr_nonnull(strstr(svg, "hand &lt;made&gt;"));
    ck_assert_ptr_null(strstr(svg, "<script"));
    ck_assert_ptr_null(strstr(svg, "<image"));
    ck_assert_ptr_null(strstr(svg, "@font-face"));
    ck_assert_ptr_null(strstr(svg, "href"));
    ck_assert_int_eq(tu_count(svg, "http://"), 1); /* the xmlns only */
    /* layout boxes inside the drawing and in order */
    ck_assert(L.width == 1300 && L.height > 500);
    ck_assert(box_ok(&L.timeline, L.width, L.height));
    ck_assert(box_ok(&L.timeline_legend, L.width, L.height));
    ck_assert(box_ok(&L.timeline_xaxis, L.width, L.height));
    ck_assert(box_ok(&L.timeline_yaxis, L.width, L.height));
    ck_assert(box_ok(&L.memory, L.width, L.height));
    ck_assert(box_ok(&L.memory_legend, L.width, L.height));
    ck_assert(box_ok(&L.memory_xaxis, L.width, L.height));
    ck_assert(box_ok(&L.memory_yaxis, L.width, L.height));
    ck_assert(box_ok(&L.topk, L.width, L.height));
    ck_assert(box_ok(&L.topk_legend, L.width, L.height));
    ck_assert(box_ok(&L.topk_xaxis, L.width, L.height));
    ck_assert(L.timeline.y + L.timeline.h <= L.memory.y);
    ck_assert(L.memory.y + L.memory.h <= L.topk.y);
    ck_assert_double_eq_tol(L.timeline.h, 2 * 22.0, 1e-9);
    free(svg);
    rfix_free(&f);
}
END_TEST

START_TEST(html_has_svg_and_tables)
{
    rfix f;
    char *html = NULL;
    util_error err;

    rfix_make(&f);
    ck_assert_int_eq(report_html(&f.in, &html, NULL, &err), UTIL_OK);
    ck_assert(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    ck_assert_int_eq(tu_count(html, "<svg "), 1);
    ck_assert_ptr_null(strstr(html, "<?xml"));
    ck_assert_int_eq(tu_count(html, "<table>"), 2);
    /* the page follows the window: the drawing scales down to its width
     * (never above its own 1300 px), the tables scroll sideways */
    ck_assert_ptr_nonnull(strstr(html, "<meta name=\"viewport\" content=\"width=device-width"));
    ck_assert_ptr_nonnull(strstr(html, "svg { display: block; width: 100%; max-width: 1300px; height: auto; }"));
    ck_assert_int_eq(tu_count(html, "<div class=\"wide\"><table>"), 2);
    /* strategies table: one row per strategy plus header */
    ck_assert_ptr_nonnull(strstr(html, "<th>time (s)</th>"));
    ck_assert_ptr_nonnull(strstr(html, "<th>peak memory (GiB)</th>"));
    ck_assert_ptr_nonnull(strstr(html, "<tr><td>2</td>"));
    /* stage table of #1: two stages */
    ck_assert_ptr_nonnull(strstr(html, "Stages of strategy #1"));
    ck_assert_ptr_nonnull(strstr(html, "<tr><td>1</td><td class=\"l\">9-"));
    ck_assert_ptr_nonnull(strstr(html, "</html>\n"));
    free(html);
    rfix_free(&f);
}
END_TEST

START_TEST(no_timeline_and_bad_input)
{
    rfix f;
    char *svg = NULL;
    report_layout L;
    util_error err;

    rfix_make(&f);
    f.in.timeline = NULL;
    ck_assert_int_eq(report_svg(&f.in, &svg, &L, &err), UTIL_OK);
    ck_assert_ptr_nonnull(strstr(svg, "timeline unavailable"));
    ck_assert(L.timeline.w == 0 && L.timeline.h == 0);
    ck_assert(L.memory.h > 0);
    free(svg);
    /* the timeline of strategy 1 cannot be shown for strategy 2 */
    f.in.timeline = &f.tl;
    f.in.shown = 1;
    ck_assert_int_eq(report_svg(&f.in, &svg, &L, &err), UTIL_EINVAL);
    ck_assert_ptr_null(svg);
    f.in.shown = 2;
    ck_assert_int_eq(report_svg(&f.in, &svg, &L, &err), UTIL_EINVAL);
    f.in.shown = 0;
    f.in.n = 0;
    ck_assert_int_eq(report_html(&f.in, &svg, &L, &err), UTIL_EINVAL);
    ck_assert_ptr_null(svg);
    rfix_free(&f);
}
END_TEST

START_TEST(dense_timeline_is_downsampled)
{
    rfix f;
    char *svg = NULL;
    util_error err;
    cost_timeline dense;
    int i, n = 4000;

    rfix_make(&f);
    memset(&dense, 0, sizeof dense);
    dense.pp = 2;
    dense.dp = 1;
    dense.gas = n / 2;
    dense.events = calloc((size_t)n, sizeof *dense.events);
    dense.busy_s = calloc(2, sizeof *dense.busy_s);
    /* stage 0 busy all the time (forward), stage 1 a quarter of it */
    for (i = 0; i < n; i++) {
        cost_event *e = &dense.events[i];
        e->kind = COST_EV_FWD;
        e->stage = i % 2;
        e->micro = i / 2;
        e->start = (double)(i / 2) * 1e-3;
        e->end = e->start + (e->stage == 0 ? 1e-3 : 0.25e-3);
    }
    dense.nevents = n;
    dense.iter_s = (double)(n / 2) * 1e-3;
    f.in.timeline = &dense;
    ck_assert_int_eq(report_svg(&f.in, &svg, NULL, &err), UTIL_OK);
    ck_assert_ptr_nonnull(strstr(svg, "dense timeline"));
    /* one run per row: stage 0 fully busy, stage 1 at a quarter */
    ck_assert_int_eq(tu_count(svg, "<title>mostly forward, stage 0, replica 0, busy 100%"), 1);
    ck_assert_int_eq(tu_count(svg, "<title>mostly forward, stage 1, replica 0, busy 25%"), 1);
    ck_assert_int_eq(tu_count(svg, "<title>forward, stage"), 0);
    free(svg);
    cost_timeline_free(&dense);
    f.in.timeline = NULL;
    rfix_free(&f);
}
END_TEST

/* ---- the CLI --------------------------------------------------------- */

START_TEST(cli_report)
{
    char so[PATHN], se[PATHN], svg[2048], html[2048], bad[2048];
    char *o, *t;
    const char *a1[] = {"report", "--plan", "plan-amp-het.json", "--output", svg, NULL};
    const char *a2[] = {"report", "--plan", "plan-amp-het.json", "--output", html,
                        "--top-k", "3", "--strategy", "2", "--format", "json", NULL};
    const char *a3[] = {"report", "--plan", "plan-amp-het.json", "--output", bad, NULL};
    const char *a4[] = {"report", "--plan", "plan-amp-het.json", NULL};
    const char *a5[] = {"report", "--plan", "plan-amp-het.json", "--output",
                        "/nonexistent-dir/r.svg", NULL};

    snprintf(so, sizeof so, "%s/r.out", tmp_dir);
    snprintf(se, sizeof se, "%s/r.err", tmp_dir);
    snprintf(svg, sizeof svg, "%s/cli.svg", tmp_dir);
    snprintf(html, sizeof html, "%s/cli.html", tmp_dir);
    snprintf(bad, sizeof bad, "%s/cli.png", tmp_dir);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a1, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "time (s)"));
    ck_assert_ptr_nonnull(strstr(o, "peak mem (GiB)"));
    ck_assert_ptr_nonnull(strstr(o, "report written to"));
    ck_assert_ptr_nonnull(strstr(o, "s simulated"));
    free(o);
    t = tu_slurp(svg);
    ck_assert_ptr_nonnull(t);
    ck_assert(strncmp(t, "<?xml", 5) == 0);
    ck_assert_ptr_nonnull(strstr(t, "<title>forward, stage 7"));
    ck_assert_int_eq(tu_count(t, "<g><title>rank "), 16);
    free(t);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a2, so, se), 0);
    o = tu_slurp(so);
    ck_assert_ptr_nonnull(strstr(o, "\"format\": \"html\""));
    ck_assert_ptr_nonnull(strstr(o, "\"timeline\": {\"strategy\": 2"));
    ck_assert_int_eq(tu_count(o, "\"rank\": "), 3);
    free(o);
    t = tu_slurp(html);
    ck_assert_ptr_nonnull(strstr(t, "Stages of strategy #2"));
    free(t);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a3, so, se), 2);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a4, so, se), 2);
    ck_assert_int_eq(tu_run_planner(GOLDEN, a5, so, se), 5);
}
END_TEST

/* ---- rendering with headless Chromium -------------------------------- */

static int find_chromium(char *out, size_t n)
{
    const char *names[] = {"chromium", "chromium-browser", "google-chrome", NULL};
    const char *env = getenv("HETPLAN_CHROMIUM"), *path = getenv("PATH");
    int i;

    if (env && access(env, X_OK) == 0) {
        snprintf(out, n, "%s", env);
        return 1;
    }
    for (i = 0; names[i] && path; i++) {
        const char *p = path;
        while (*p) {
            const char *q = strchr(p, ':');
            size_t len = q ? (size_t)(q - p) : strlen(p);
            snprintf(out, n, "%.*s/%s", (int)len, p, names[i]);
            if (len > 0 && access(out, X_OK) == 0)
                return 1;
            p += len + (q ? 1 : 0);
        }
    }
    return 0;
}

/* Screenshot file_path into png_path at width x height; 0 on success. */
static int screenshot(const char *chromium, const char *file_path,
                      const char *png_path, int width, int height)
{
    char shot[2048], size[64], url[2048], profile[2048];
    pid_t pid;
    int st = 0, waited = 0;

    snprintf(shot, sizeof shot, "--screenshot=%s", png_path);
    snprintf(size, sizeof size, "--window-size=%d,%d", width, height);
    snprintf(url, sizeof url, "file://%s", file_path);
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium-profile", tmp_dir);
    unlink(png_path);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        char *argv[] = {strdup(chromium), strdup("--headless"), strdup("--disable-gpu"),
                        strdup("--no-sandbox"), strdup("--hide-scrollbars"),
                        strdup("--force-device-scale-factor=1"),
                        strdup("--disable-dev-shm-usage"), strdup("--no-first-run"),
                        strdup(profile), strdup(shot), strdup(size), strdup(url), NULL};
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        setpgid(0, 0);
        execv(chromium, argv);
        _exit(127);
    }
    while (waitpid(pid, &st, WNOHANG) == 0) {
        struct timespec ts = {0, 100000000};
        if (++waited > 1200) { /* 120 s */
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        nanosleep(&ts, NULL);
    }
    return access(png_path, R_OK) == 0 ? 0 : -1;
}

#if defined(HETPLAN_HAVE_ZLIB)
typedef struct image {
    int w, h;
    unsigned char *rgb; /* w * h * 3 */
} image;

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Decode an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes). */
static int png_decode(const char *path, image *img)
{
    FILE *f = fopen(path, "rb");
    unsigned char *file = NULL, *idat = NULL, *raw = NULL;
    size_t n = 0, nidat = 0, pos = 8;
    long len;
    int ctype = -1, bpp = 0, x, y, rc = -1;
    uLongf rawlen;

    memset(img, 0, sizeof *img);
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    file = malloc((size_t)len);
    n = fread(file, 1, (size_t)len, f);
    fclose(f);
    if (n < 8 || memcmp(file, "\x89PNG\r\n\x1a\n", 8) != 0)
        goto done;
    idat = malloc(n);
    while (pos + 12 <= n) {
        uint32_t clen = be32(file + pos);
        const unsigned char *type = file + pos + 4, *data = file + pos + 8;
        if (pos + 12 + clen > n)
            goto done;
        if (memcmp(type, "IHDR", 4) == 0) {
            img->w = (int)be32(data);
            img->h = (int)be32(data + 4);
            if (data[8] != 8 || data[12] != 0)
                goto done;
            ctype = data[9];
            bpp = ctype == 6 ? 4 : ctype == 2 ? 3 : 0;
            if (bpp == 0)
                goto done;
        } else if (memcmp(type, "IDAT", 4) == 0) {
            memcpy(idat + nidat, data, clen);
            nidat += clen;
        } else if (memcmp(type, "IEND", 4) == 0) {
            break;
        }
        pos += 12 + clen;
    }
    if (img->w <= 0 || img->h <= 0)
        goto done;
    rawlen = (uLongf)img->h * (uLongf)(1 + img->w * bpp);
    raw = malloc(rawlen);
    if (uncompress(raw, &rawlen, idat, (uLong)nidat) != Z_OK ||
        rawlen != (uLongf)img->h * (uLongf)(1 + img->w * bpp))
        goto done;
    img->rgb = malloc((size_t)img->w * (size_t)img->h * 3);
    for (y = 0; y < img->h; y++) {
        int stride = img->w * bpp;
        unsigned char *row = raw + (size_t)y * (size_t)(stride + 1);
        unsigned char *cur = row + 1, *prev = y ? row - stride : NULL;
        int ft = row[0];
        for (x = 0; x < stride; x++) {
            int a = x >= bpp ? cur[x - bpp] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= bpp ? prev[x - bpp] : 0;
            int v = cur[x];
            switch (ft) {
            case 0: break;
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: goto done;
            }
            cur[x] = (unsigned char)v;
        }
        for (x = 0; x < img->w; x++) {
            unsigned char *px = cur + x * bpp, *o = img->rgb + ((size_t)y * img->w + x) * 3;
            int alpha = bpp == 4 ? px[3] : 255, k;
            for (k = 0; k < 3; k++) /* composite on white */
                o[k] = (unsigned char)((px[k] * alpha + 255 * (255 - alpha)) / 255);
        }
        /* the unfiltered row must stay in place for the next one */
    }
    rc = 0;
done:
    free(file);
    free(idat);
    free(raw);
    if (rc != 0) {
        free(img->rgb);
        img->rgb = NULL;
    }
    return rc;
}

/* Fraction of pixels in a box that are not (near) white. */
static double ink(const image *img, double bx, double by, double bw, double bh)
{
    int x0 = (int)bx, y0 = (int)by, x1 = (int)(bx + bw), y1 = (int)(by + bh), x, y;
    long inked = 0, total = 0;

    if (x0 < 0)
        x0 = 0;
    if (y0 < 0)
        y0 = 0;
    if (x1 > img->w)
        x1 = img->w;
    if (y1 > img->h)
        y1 = img->h;
    for (y = y0; y < y1; y++)
        for (x = x0; x < x1; x++) {
            const unsigned char *p = img->rgb + ((size_t)y * img->w + x) * 3;
            total++;
            if (p[0] < 235 || p[1] < 235 || p[2] < 235)
                inked++;
        }
    return total ? (double)inked / (double)total : 0.0;
}

static double box_ink(const image *img, const report_box *b)
{
    return ink(img, b->x, b->y, b->w, b->h);
}
#endif

/* Why the rendering check cannot run here, NULL when it can. */
static const char *browser_absent(void)
{
#if !defined(HETPLAN_HAVE_ZLIB)
    return "the Chromium rendering check needs zlib to decode the screenshots "
           "(install zlib1g-dev and configure again)";
#else
    char chromium[PATHN];

    if (!find_chromium(chromium, sizeof chromium))
        return "the Chromium rendering check needs chromium "
               "(scripts/install-deps.sh installs it; HETPLAN_CHROMIUM=PATH "
               "selects one)";
    return NULL;
#endif
}

START_TEST(renders_in_chromium)
{
#if !defined(HETPLAN_HAVE_ZLIB)
    ck_abort_msg("%s", browser_absent());
#else
    char chromium[PATHN], svg_path[2048], png[2048], blank_svg[2048], html_path[2048];
    plan_doc d;
    util_error err;
    cost_result r[3];
    cost_timeline tl;
    report_input in;
    report_layout L;
    char *svg = NULL, *html = NULL;
    image img;
    int i, n;

    ck_assert_msg(find_chromium(chromium, sizeof chromium), "%s", browser_absent());
    /* the report of a shipped plan, as `planner report` makes it */
    memset(&d, 0, sizeof d);
    memset(r, 0, sizeof r);
    memset(&tl, 0, sizeof tl);
    ck_assert_msg(plan_load_plan(GOLDEN "/plan-amp-het.json", &d, &err) == UTIL_OK,
                  "%s", err.msg);
    n = d.n < 3 ? d.n : 3;
    for (i = 0; i < n; i++)
        ck_assert_int_eq(cost_evaluate(&d.cluster, &d.model, NULL, &d.params, &d.s[i],
                                       &r[i], &err), UTIL_OK);
    ck_assert_msg(cost_simulate(&d.cluster, &d.model, NULL, &d.params, &d.s[0],
                                d.params.overlap_dp, &tl, &err) == UTIL_OK, "%s", err.msg);
    memset(&in, 0, sizeof in);
    in.title = "plan-amp-het.json";
    in.c = &d.cluster;
    in.m = &d.model;
    in.s = d.s;
    in.r = r;
    in.n = n;
    in.timeline = &tl;
    in.global_batch = d.global_batch;
    ck_assert_int_eq(report_svg(&in, &svg, &L, &err), UTIL_OK);
    snprintf(svg_path, sizeof svg_path, "%s/render.svg", tmp_dir);
    snprintf(png, sizeof png, "%s/render.png", tmp_dir);
    spill(svg_path, svg);
    ck_assert_msg(screenshot(chromium, svg_path, png, 1400, (int)L.height + 40) == 0,
                  "chromium wrote no screenshot of '%s'", svg_path);
    ck_assert_int_eq(png_decode(png, &img), 0);
    ck_assert_int_eq(img.w, 1400);
    ck_assert_int_eq(img.h, (int)L.height + 40);
    /* not blank */
    ck_assert_msg(ink(&img, 0, 0, img.w, img.h) > 0.08, "screenshot is blank: %.3f inked",
                  ink(&img, 0, 0, img.w, img.h));
    /* legends, axes and plots drawn where the layout says */
    ck_assert_msg(box_ink(&img, &L.timeline_legend) > 0.15, "timeline legend: %.3f",
                  box_ink(&img, &L.timeline_legend));
    ck_assert_msg(box_ink(&img, &L.timeline_xaxis) > 0.02, "timeline x axis: %.3f",
                  box_ink(&img, &L.timeline_xaxis));
    ck_assert_msg(box_ink(&img, &L.timeline_yaxis) > 0.02, "timeline y axis: %.3f",
                  box_ink(&img, &L.timeline_yaxis));
    ck_assert_msg(box_ink(&img, &L.timeline) > 0.6, "timeline plot: %.3f",
                  box_ink(&img, &L.timeline));
    ck_assert_msg(box_ink(&img, &L.memory_legend) > 0.15, "memory legend: %.3f",
                  box_ink(&img, &L.memory_legend));
    ck_assert_msg(box_ink(&img, &L.memory_xaxis) > 0.02, "memory x axis: %.3f",
                  box_ink(&img, &L.memory_xaxis));
    ck_assert_msg(box_ink(&img, &L.memory_yaxis) > 0.02, "memory y axis: %.3f",
                  box_ink(&img, &L.memory_yaxis));
    ck_assert_msg(box_ink(&img, &L.memory) > 0.3, "memory plot: %.3f",
                  box_ink(&img, &L.memory));
    ck_assert_msg(box_ink(&img, &L.topk_legend) > 0.15, "top-k legend: %.3f",
                  box_ink(&img, &L.topk_legend));
    ck_assert_msg(box_ink(&img, &L.topk_xaxis) > 0.02, "top-k x axis: %.3f",
                  box_ink(&img, &L.topk_xaxis));
    ck_assert_msg(box_ink(&img, &L.topk) > 0.3, "top-k plot: %.3f", box_ink(&img, &L.topk));
    /* a margin stays white: right of the plots, and right of the drawing */
    ck_assert_msg(ink(&img, L.timeline.x + L.timeline.w + 8, L.timeline.y, 30,
                      L.timeline.h) < 0.02, "right margin is not white");
    ck_assert(ink(&img, L.width + 5, 0, img.w - L.width - 5, img.h) < 0.01);
    free(img.rgb);

    /* the HTML page renders too: the SVG on top, the tables under it */
    ck_assert_int_eq(report_html(&in, &html, &L, &err), UTIL_OK);
    snprintf(html_path, sizeof html_path, "%s/render.html", tmp_dir);
    spill(html_path, html);
    ck_assert(screenshot(chromium, html_path, png, 1400, (int)L.height + 400) == 0);
    ck_assert_int_eq(png_decode(png, &img), 0);
    ck_assert(box_ink(&img, &L.timeline_legend) > 0.15);
    ck_assert(box_ink(&img, &L.timeline) > 0.6);
    ck_assert_msg(ink(&img, 20, L.height + 30, 900, 200) > 0.03, "no tables under the SVG");
    free(img.rgb);

    /* control: a white SVG is seen as blank */
    snprintf(blank_svg, sizeof blank_svg, "%s/blank.svg", tmp_dir);
    spill(blank_svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1300\" "
                     "height=\"900\"><rect width=\"1300\" height=\"900\" fill=\"#fff\"/></svg>\n");
    ck_assert(screenshot(chromium, blank_svg, png, 1400, 1000) == 0);
    ck_assert_int_eq(png_decode(png, &img), 0);
    ck_assert(ink(&img, 0, 0, img.w, img.h) < 0.001);
    free(img.rgb);

    free(svg);
    free(html);
    for (i = 0; i < n; i++)
        cost_result_free(&r[i]);
    cost_timeline_free(&tl);
    plan_doc_free(&d);
#endif
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("report");
    TCase *t = tcase_create("svg"), *c = tcase_create("cli");

    tcase_add_test(t, svg_text_has_everything);
    tcase_add_test(t, html_has_svg_and_tables);
    tcase_add_test(t, no_timeline_and_bad_input);
    tcase_add_test(t, dense_timeline_is_downsampled);
    tcase_add_test(c, cli_report);
    suite_add_tcase(s, t);
    suite_add_tcase(s, c);
    return s;
}

static Suite *browser_suite(void)
{
    Suite *s = suite_create("report_browser");
    TCase *b = tcase_create("browser");

    tcase_set_timeout(b, 400);
    tcase_add_test(b, renders_in_chromium);
    suite_add_tcase(s, b);
    return s;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    int code;

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-report.XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    code = tu_main_tool(argc, argv, plain_suite, browser_suite, browser_absent);
    tu_remove_tree(tmp_dir);
    return code;
}
