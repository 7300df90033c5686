/* report/report.c: a plan drawn as a self-contained SVG (and an HTML
 * page around it): the simulated pipeline timeline of one iteration per
 * (stage, replica), the memory of every rank against its device's
 * capacity, and the top-k strategies' predicted times side by side with
 * their breakdown (docs/report.md).  No fonts, images or scripts are
 * referenced; text uses the generic sans-serif family. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plan.h"

/* Text with XML special characters escaped; control characters (not
 * allowed in XML) as '?'. */
void report_text(util_buf *b, const char *s)
{
    for (; s && *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            util_buf_printf(b, "?");
            continue;
        }
        switch (*s) {
        case '&': util_buf_printf(b, "&amp;"); break;
        case '<': util_buf_printf(b, "&lt;"); break;
        case '>': util_buf_printf(b, "&gt;"); break;
        case '"': util_buf_printf(b, "&quot;"); break;
        case '\'': util_buf_printf(b, "&#39;"); break;
        default: util_buf_printf(b, "%c", *s); break;
        }
    }
}

static void text_at(util_buf *b, double x, double y, const char *anchor, int size,
                    const char *weight, const char *s)
{
    util_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s%s>",
              x, y, anchor, size, weight ? " font-weight=\"" : "",
              weight ? weight : "", weight ? "\"" : "");
    report_text(b, s);
    util_buf_printf(b, "</text>\n");
}

static void rect(util_buf *b, double x, double y, double w, double h,
                 const char *fill, const char *extra)
{
    util_buf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"%s%s/>\n",
              x, y, w > 0 ? w : 0, h > 0 ? h : 0, fill, extra ? " " : "",
              extra ? extra : "");
}

/* ---- colours and legends --------------------------------------------- */

static const char *const ev_colour[COST_EV_NKINDS] = {
    "#4e79a7", /* forward */
    "#59a14f", /* backward */
    "#f28e2b", /* send activation */
    "#e15759", /* send gradient */
    "#b07aa1", /* dp all-reduce */
    "#9c755f"  /* optimizer */
};
#define RP_IDLE "#f4e1e1"

typedef struct legend_item {
    const char *colour;
    const char *label;
} legend_item;

/* Legend in one row starting at (x, y); returns its box. */
static report_box legend(util_buf *b, double x, double y,
                              const legend_item *it, int n)
{
    report_box box;
    double cx = x;
    int i;

    util_buf_printf(b, "<g class=\"legend\">\n");
    for (i = 0; i < n; i++) {
        rect(b, cx, y, 14, 14, it[i].colour, "stroke=\"#555\" stroke-width=\"0.5\"");
        text_at(b, cx + 19, y + 11.5, "start", 12, NULL, it[i].label);
        cx += 19 + 7.2 * (double)strlen(it[i].label) + 22;
    }
    util_buf_printf(b, "</g>\n");
    box.x = x;
    box.y = y;
    box.w = cx - x;
    box.h = 14;
    return box;
}

/* A "nice" tick step near range / target (1, 2, 5 x 10^k). */
static double nice_step(double range, int target)
{
    double raw = range / target, mag, f;

    if (!(raw > 0) || !isfinite(raw))
        return 1.0;
    mag = pow(10.0, floor(log10(raw)));
    f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

static void fmt_num(char *buf, size_t n, double v, double step)
{
    int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);

    if (dec > 6)
        dec = 6;
    snprintf(buf, n, "%.*f", dec, v);
}

/* Horizontal axis under a plot: line, ticks, numbers, title.  Values
 * 0..vmax mapped onto [x, x + w]; returns the axis box. */
static report_box x_axis(util_buf *b, double x, double y, double w,
                              double vmax, double scale, const char *title)
{
    report_box box;
    double step = nice_step(vmax * scale, 8), v;
    char num[32];

    util_buf_printf(b, "<g class=\"axis\">\n");
    util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                 "stroke-width=\"1.5\"/>\n", x, y, x + w, y);
    for (v = 0; v <= vmax * scale * (1 + 1e-9); v += step) {
        double px = x + (vmax > 0 ? v / (vmax * scale) * w : 0);
        util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                     "stroke=\"#222\" stroke-width=\"1.5\"/>\n", px, y, px, y + 6);
        fmt_num(num, sizeof num, v, step);
        text_at(b, px, y + 19, "middle", 11, NULL, num);
    }
    text_at(b, x + w / 2, y + 37, "middle", 13, "bold", title);
    util_buf_printf(b, "</g>\n");
    box.x = x - 15;
    box.y = y;
    box.w = w + 30;
    box.h = 42;
    return box;
}

/* ---- section 1: timeline --------------------------------------------- */

/* The row label of (stage, replica): its device type and exactly the
 * devices of its TP group, ascending, consecutive ones as ranges ("dev
 * 4-7", "dev 12,15", "dev 0-1,8"); cut with "..." when buf is full. */
static void rank_range(const fmt_cluster *c, const fmt_strategy *s, int stage,
                       int replica, char *buf, size_t n)
{
    const fmt_device_type *dt = fmt_device(c, fmt_rank_device(s, stage, replica, 0));
    int t, k, j, *dev = malloc((size_t)s->tp * sizeof *dev);
    char tp[16] = "";
    size_t used;

    if (s->tp > 1)
        snprintf(tp, sizeof tp, "%dx", s->tp);
    used = (size_t)snprintf(buf, n, "stage %d, dp %d: %s%s (dev ", stage, replica, tp,
                            dt->name);
    for (t = 0; dev != NULL && t < s->tp; t++) /* insertion sort: tp is small */
        for (k = t, dev[t] = fmt_rank_device(s, stage, replica, t);
             k > 0 && dev[k - 1] > dev[k]; k--)
            j = dev[k], dev[k] = dev[k - 1], dev[k - 1] = j;
    for (k = 0; dev != NULL && k < s->tp && used < n; k = j + 1) {
        for (j = k; j + 1 < s->tp && dev[j + 1] == dev[j] + 1; j++)
            ;
        used += (size_t)snprintf(buf + used, n - used, j > k ? "%s%d-%d" : "%s%d",
                                 k ? "," : "", dev[k], dev[j]);
    }
    if (used + 2 <= n)
        snprintf(buf + used, n - used, ")");
    else if (n > 5)
        snprintf(buf + n - 5, 5, "...)");
    free(dev);
}

/* The event kinds as the report names them.  With dp = 1 the only
 * gradient sync between devices is that of tied weights (the embedding
 * shared by the first and last stage), not a data-parallel all-reduce. */
static const char *ev_label(int kind, int dp)
{
    static const char *const names[COST_EV_NKINDS] = {
        "forward", "backward", "send activation", "send gradient",
        "data-parallel all-reduce", "optimizer step"};

    if (kind == COST_EV_DP_ALLREDUCE && dp == 1)
        return "tied-embedding sync";
    return kind >= 0 && kind < COST_EV_NKINDS ? names[kind] : "?";
}

/* Consecutive events of one kind on one timeline row, drawn as one. */
typedef struct ev_run {
    int kind, stage, replica, row, n, narrow;
    int first_micro, last_micro;
    double start, end;      /* s */
    double x0, x1;          /* px */
    int chunk;              /* model chunk of the first event (interleaved
                               schedule), -1 otherwise */
} ev_run;

static void draw_run(util_buf *b, const ev_run *r, double y, double rh, int dp)
{
    double w = r->x1 - r->x0, ry = y + r->row * rh + 1, eh = rh - 2;
    char buf[32];

    if (r->kind == COST_EV_SEND_ACT || r->kind == COST_EV_SEND_GRAD) {
        ry += eh * 0.62;
        eh *= 0.38;
    }
    util_buf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                 "fill=\"%s\"><title>%s, stage %d, replica %d",
              r->x0, ry, w > 0.3 ? w : 0.3, eh, ev_colour[r->kind],
              ev_label(r->kind, dp), r->stage, r->replica);
    if (r->n > 1)
        util_buf_printf(b, ", %d events, micro-batches %d-%d", r->n, r->first_micro,
                  r->last_micro);
    else if (r->first_micro >= 0)
        util_buf_printf(b, ", micro-batch %d", r->first_micro);
    if (r->n == 1 && r->chunk >= 0)
        util_buf_printf(b, ", chunk %d", r->chunk);
    util_buf_printf(b, ": %.3f-%.3f ms</title></rect>\n", r->start * 1e3, r->end * 1e3);
    if ((r->kind == COST_EV_FWD || r->kind == COST_EV_BWD) && r->n == 1 && w >= 16 &&
        rh >= 14 && r->first_micro >= 0) {
        snprintf(buf, sizeof buf, "%d", r->first_micro);
        util_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
                     "font-size=\"9\" fill=\"#fff\">%s</text>\n",
                  r->x0 + w / 2, ry + eh / 2 + 3, buf);
    }
}

/* Dense timelines (events narrower than a few pixels on average): each
 * pixel column of a row shows its dominant activity, in two layers
 * (compute and all-reduce above, transfers in the bottom strip), and
 * equal neighbouring columns become one shape. */
#define RP_COLS ((int)RP_PW)

static int is_send(int kind)
{
    return kind == COST_EV_SEND_ACT || kind == COST_EV_SEND_GRAD;
}

static int dense_timeline(util_buf *b, const cost_timeline *tl, int shown_rows,
                          double y, double rh)
{
    double *cov = calloc((size_t)shown_rows * RP_COLS * COST_EV_NKINDS, sizeof *cov);
    double px_s = tl->iter_s / RP_PW; /* seconds per pixel column */
    int i, row, col, k;

    if (cov == NULL)
        return -1;
    for (i = 0; i < tl->nevents; i++) {
        const cost_event *e = &tl->events[i];
        double a = e->start / px_s, z = e->end / px_s;
        row = e->stage * tl->dp + e->replica;
        if (row < 0 || row >= shown_rows || e->kind < 0 || e->kind >= COST_EV_NKINDS)
            continue;
        for (col = (int)a; col <= (int)z && col < RP_COLS; col++) {
            double lo = a > col ? a : col, hi = z < col + 1 ? z : col + 1;
            if (col >= 0 && hi > lo)
                cov[((size_t)row * RP_COLS + (size_t)col) * COST_EV_NKINDS + (size_t)e->kind] +=
                    hi - lo;
        }
    }
    for (row = 0; row < shown_rows; row++)
        for (k = 0; k < 2; k++) { /* 0: compute layer, 1: transfers */
            int run_key = -1, run_start = 0;
            for (col = 0; col <= RP_COLS; col++) {
                int best = -1, kind, key = -1;
                double bestv = 0, total = 0;
                if (col < RP_COLS)
                    for (kind = 0; kind < COST_EV_NKINDS; kind++) {
                        double v = cov[((size_t)row * RP_COLS + (size_t)col) *
                                           COST_EV_NKINDS + (size_t)kind];
                        if (is_send(kind) != (k == 1))
                            continue;
                        total += v;
                        if (v > bestv) {
                            bestv = v;
                            best = kind;
                        }
                    }
                /* main kind, and how busy the column is in quarters */
                if (best >= 0 && total >= 0.125)
                    key = best * 8 + (total >= 0.875 ? 4 : (int)(total * 4.0 + 0.5));
                if (col < RP_COLS && key == run_key)
                    continue;
                if (run_key >= 0) {
                    int run_kind = run_key / 8;
                    double opacity = (run_key % 8) / 4.0;
                    double ry = y + row * rh + 1, eh = rh - 2;
                    if (k == 1) {
                        ry += eh * 0.62;
                        eh *= 0.38;
                    }
                    util_buf_printf(b, "<rect x=\"%.1f\" y=\"%.2f\" width=\"%d\" "
                                 "height=\"%.2f\" fill=\"%s\" fill-opacity=\"%.2f\">"
                                 "<title>mostly %s, stage %d, replica %d, busy %.0f%%: "
                                 "%.1f-%.1f ms</title></rect>\n",
                              RP_X0 + run_start, ry, col - run_start, eh,
                              ev_colour[run_kind], opacity, ev_label(run_kind, tl->dp),
                              row / tl->dp, row % tl->dp, opacity * 100.0,
                              run_start * px_s * 1e3, col * px_s * 1e3);
                }
                run_key = key;
                run_start = col;
            }
        }
    free(cov);
    return 0;
}

static double idle_line(util_buf *b, const report_input *in, double y);

static double timeline_section(util_buf *b, const report_input *in, double y,
                               report_layout *L)
{
    const cost_timeline *tl = in->timeline;
    const fmt_strategy *s = &in->s[in->shown];
    legend_item items[] = {
        {"#4e79a7", "forward"},          {"#59a14f", "backward"},
        {"#f28e2b", "send activation"},  {"#e15759", "send gradient"},
        {"#b07aa1", "data-parallel all-reduce"}, {"#9c755f", "optimizer step"},
        {RP_IDLE, "idle (pipeline bubble)"}};
    char buf[256];
    int rows, shown_rows, i;
    double rh, scale, iter;
    const char *unit;
    ev_run *pend;

    snprintf(buf, sizeof buf, "Pipeline timeline of one iteration, strategy #%d "
             "(tp %d, dp %d, pp %d, %d micro-batches of %d)", in->shown + 1, s->tp,
             s->dp, s->pp, s->gas, s->mbs);
    text_at(b, 20, y + 16, "start", 16, "bold", buf);
    y += 30;
    y = idle_line(b, in, y);
    if (tl == NULL || tl->nevents == 0 || !(tl->iter_s > 0)) {
        text_at(b, 20, y + 16, "start", 13, NULL,
                "timeline unavailable: the schedule simulator produced no events");
        return y + 40;
    }
    items[4].label = ev_label(COST_EV_DP_ALLREDUCE, tl->dp);
    L->timeline_legend = legend(b, RP_X0, y, items, 7);
    y += 28;
    rows = tl->pp * tl->dp;
    shown_rows = rows > RP_MAXROWS ? RP_MAXROWS : rows;
    rh = shown_rows <= 24 ? 22.0 : floor(528.0 / shown_rows);
    if (rh < 6)
        rh = 6;
    iter = tl->iter_s;
    if (iter >= 10.0) {
        scale = 1.0;
        unit = "time (s)";
    } else {
        scale = 1e3;
        unit = "time (ms)";
    }
    L->timeline.x = RP_X0;
    L->timeline.y = y;
    L->timeline.w = RP_PW;
    L->timeline.h = rh * shown_rows;
    text_at(b, RP_X0 - 10, y - 6, "end", 11, "bold", "stage, replica: devices");
    /* rows: idle background and labels; row index = stage * dp + replica */
    for (i = 0; i < shown_rows; i++) {
        int stage = i / tl->dp, rep = i % tl->dp;
        double ry = y + i * rh;
        rect(b, RP_X0, ry + 1, RP_PW, rh - 2, RP_IDLE, NULL);
        if (rh >= 10) {
            rank_range(in->c, s, stage, rep, buf, sizeof buf);
            text_at(b, RP_X0 - 10, ry + rh / 2 + 4, "end", rh >= 14 ? 11 : 8, NULL, buf);
        }
    }
    L->timeline_yaxis.x = 10;
    L->timeline_yaxis.y = y;
    L->timeline_yaxis.w = RP_X0 - 18;
    L->timeline_yaxis.h = rh * shown_rows;
    /* events, one shape each; dense timelines per pixel column */
    if (tl->nevents > shown_rows * (int)(RP_PW / 4)) {
        if (dense_timeline(b, tl, shown_rows, y, rh) != 0) {
            b->failed = 1;
            return y;
        }
        text_at(b, RP_X0, y + rh * shown_rows + 52, "start", 11, NULL,
                "(dense timeline: each pixel column shows its main activity, "
                "paler when the device is busy for less of it)");
        goto axis;
    }
    pend = calloc((size_t)shown_rows * COST_EV_NKINDS, sizeof *pend);
    if (pend == NULL) {
        b->failed = 1;
        return y;
    }
    for (i = 0; i < tl->nevents; i++) {
        const cost_event *e = &tl->events[i];
        int row = e->stage * tl->dp + e->replica;
        double x0, x1;
        ev_run *pr;
        if (row < 0 || row >= shown_rows || e->kind < 0 || e->kind >= COST_EV_NKINDS)
            continue;
        x0 = RP_X0 + e->start / iter * RP_PW;
        x1 = RP_X0 + e->end / iter * RP_PW;
        pr = &pend[row * COST_EV_NKINDS + e->kind];
        if (pr->n > 0 && x1 - x0 < 2.0 && pr->x1 - pr->x0 < 2.0 * pr->n &&
            pr->narrow && x0 - pr->x1 < 0.5) {
            pr->x1 = x1 > pr->x1 ? x1 : pr->x1;
            pr->end = e->end;
            pr->last_micro = e->micro;
            pr->n++;
            continue;
        }
        if (pr->n > 0)
            draw_run(b, pr, y, rh, tl->dp);
        pr->kind = e->kind;
        pr->stage = e->stage;
        pr->replica = e->replica;
        pr->row = row;
        pr->first_micro = pr->last_micro = e->micro;
        pr->chunk = tl->vpp > 1 && e->micro >= 0 ? e->chunk : -1;
        pr->start = e->start;
        pr->end = e->end;
        pr->x0 = x0;
        pr->x1 = x1;
        pr->n = 1;
        pr->narrow = x1 - x0 < 2.0;
    }
    for (i = 0; i < shown_rows * COST_EV_NKINDS; i++)
        if (pend[i].n > 0)
            draw_run(b, &pend[i], y, rh, tl->dp);
    free(pend);
axis:
    y += rh * shown_rows;
    if (shown_rows < rows) {
        snprintf(buf, sizeof buf, "(first %d of %d stage/replica rows shown)",
                 shown_rows, rows);
        text_at(b, RP_X0 + RP_PW, y + 52, "end", 11, NULL, buf);
    }
    util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                 "stroke-width=\"1.5\"/>\n", RP_X0, L->timeline.y, RP_X0, y);
    L->timeline_xaxis = x_axis(b, RP_X0, y, RP_PW, iter, scale, unit);
    snprintf(buf, sizeof buf, "simulated iteration: %.4f s", iter);
    text_at(b, RP_X0 + RP_PW, y + 37, "end", 11, NULL, buf);
    return y + 60;
}

/* ---- idle devices ---------------------------------------------------- */

/* GPUs of node k that no rank runs on. */
int report_idle_on_node(const fmt_cluster *c, const fmt_rank_index *ix, int k)
{
    int g, n = 0;

    for (g = 0; g < c->nodes[k].gpus; g++)
        n += fmt_rank_index_get(ix, c->nodes[k].first_device + g) < 0;
    return n;
}

/* "node 'a': GPUs 0,1 (T4)": the idle GPUs of node k. */
void report_idle_gpus(util_buf *b, const fmt_cluster *c,
                      const fmt_rank_index *ix, int k)
{
    int g, n = 0;

    for (g = 0; g < c->nodes[k].gpus; g++)
        if (fmt_rank_index_get(ix, c->nodes[k].first_device + g) < 0)
            util_buf_printf(b, "%s%d", n++ ? "," : "", g);
}

/* The line under a chart naming the idle GPUs it leaves out. */
static double idle_line(util_buf *b, const report_input *in, double y)
{
    const fmt_strategy *s = &in->s[in->shown];
    const fmt_cluster *c = in->c;
    int k, idle = c->ndevices - s->tp * s->dp * s->pp, nodes = 0, on;
    util_buf t = {0};
    fmt_rank_index ix;

    if (idle <= 0)
        return y;
    if (fmt_rank_index_build(&ix, s, c->ndevices) != UTIL_OK) {
        b->failed = 1;
        return y;
    }
    util_buf_printf(&t, "idle, not drawn: %d of %d GPUs run no rank (", idle,
                    c->ndevices);
    for (k = 0; k < c->nnodes; k++) {
        if ((on = report_idle_on_node(c, &ix, k)) == 0)
            continue;
        if (nodes++ == 4) {
            util_buf_printf(&t, "; ...");
            break;
        }
        util_buf_printf(&t, "%s%s: ", nodes > 1 ? "; " : "", c->nodes[k].name);
        if (on == c->nodes[k].gpus)
            util_buf_printf(&t, "all");
        else {
            util_buf_printf(&t, "GPU%s ", on > 1 ? "s" : "");
            report_idle_gpus(&t, c, &ix, k);
            util_buf_printf(&t, " of");
        }
        util_buf_printf(&t, " %d %s", c->nodes[k].gpus,
                        fmt_device(c, c->nodes[k].first_device)->name);
    }
    util_buf_printf(&t, "); the table below lists them");
    fmt_rank_index_free(&ix);
    if (t.failed)
        b->failed = 1;
    else
        text_at(b, 20, y + 12, "start", 12, NULL, t.p);
    free(t.p);
    return y + 22;
}

/* ---- section 2: memory ----------------------------------------------- */

static double memory_section(util_buf *b, const report_input *in, double y,
                             report_layout *L)
{
    const fmt_strategy *s = &in->s[in->shown];
    const cost_result *r = &in->r[in->shown];
    static const legend_item items[] = {
        {"#dcdcdc", "device capacity"},
        {"#4e79a7", "predicted peak memory"},
        {"#e15759", "over capacity"}};
    int n = r->nranks, i, every;
    double vmax = 0, ph = 200, slot, bw, step, v;
    char buf[128];

    text_at(b, 20, y + 16, "start", 16, "bold", "Memory per device against its capacity");
    y += 30;
    y = idle_line(b, in, y);
    if (n <= 0 || r->mem_bytes == NULL || r->mem_cap == NULL) {
        text_at(b, 20, y + 16, "start", 13, NULL, "memory unavailable");
        return y + 40;
    }
    L->memory_legend = legend(b, RP_X0, y, items, 3);
    y += 34;
    for (i = 0; i < n; i++) {
        if (r->mem_cap[i] > vmax)
            vmax = r->mem_cap[i];
        if (r->mem_bytes[i] > vmax)
            vmax = r->mem_bytes[i];
    }
    vmax /= RP_GIB;
    if (!(vmax > 0))
        vmax = 1;
    step = nice_step(vmax, 5);
    vmax = ceil(vmax / step - 1e-9) * step;
    L->memory.x = RP_X0;
    L->memory.y = y;
    L->memory.w = RP_PW;
    L->memory.h = ph;
    /* y axis with grid */
    util_buf_printf(b, "<g class=\"axis\">\n");
    for (v = 0; v <= vmax * (1 + 1e-9); v += step) {
        double py = y + ph - v / vmax * ph;
        char num[32];
        util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                     "stroke-width=\"1\"/>\n", RP_X0 - 6, py, RP_X0 + RP_PW, py,
                  v == 0 ? "#222" : "#e8e8e8");
        fmt_num(num, sizeof num, v, step);
        text_at(b, RP_X0 - 10, py + 4, "end", 11, NULL, num);
    }
    util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                 "stroke-width=\"1.5\"/>\n", RP_X0, y, RP_X0, y + ph);
    util_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\" "
                 "font-weight=\"bold\" transform=\"rotate(-90 %.1f %.1f)\">memory (GiB)"
                 "</text>\n", RP_X0 - 55, y + ph / 2, RP_X0 - 55, y + ph / 2);
    util_buf_printf(b, "</g>\n");
    L->memory_yaxis.x = RP_X0 - 70;
    L->memory_yaxis.y = y;
    L->memory_yaxis.w = 70;
    L->memory_yaxis.h = ph;
    slot = RP_PW / n;
    bw = slot * 0.7 > 40 ? 40 : slot * 0.7;
    for (i = 0; i < n; i++) {
        double cx = RP_X0 + slot * (i + 0.5);
        double cap = r->mem_cap[i] / RP_GIB, used = r->mem_bytes[i] / RP_GIB;
        double hc = cap / vmax * ph, hu = used / vmax * ph;
        const fmt_device_type *dt = fmt_device(in->c, s->ranks[i]);
        util_buf_printf(b, "<g><title>rank %d on device %d (", i, s->ranks[i]);
        report_text(b, dt->name);
        util_buf_printf(b, "): %.2f of %.2f GiB</title>\n", used, cap);
        rect(b, cx - bw / 2, y + ph - hc, bw, hc, "#dcdcdc", NULL);
        if (used <= cap) {
            rect(b, cx - bw / 2, y + ph - hu, bw, hu, "#4e79a7", NULL);
        } else {
            rect(b, cx - bw / 2, y + ph - hc, bw, hc, "#4e79a7", NULL);
            rect(b, cx - bw / 2, y + ph - hu, bw, hu - hc, "#e15759", NULL);
        }
        util_buf_printf(b, "</g>\n");
    }
    /* x axis: rank numbers (thinned), device types where they change */
    every = 1;
    while (slot * every < 24)
        every++;
    util_buf_printf(b, "<g class=\"axis\">\n");
    util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                 "stroke-width=\"1.5\"/>\n", RP_X0, y + ph, RP_X0 + RP_PW, y + ph);
    for (i = 0; i < n; i += every) {
        double cx = RP_X0 + slot * (i + 0.5);
        snprintf(buf, sizeof buf, "%d", i);
        util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\"/>\n",
                  cx, y + ph, cx, y + ph + 5);
        text_at(b, cx, y + ph + 17, "middle", 10, NULL, buf);
    }
    for (i = 0; i < n;) {
        int j = i;
        const char *name = fmt_device(in->c, s->ranks[i])->name;
        while (j < n && strcmp(fmt_device(in->c, s->ranks[j])->name, name) == 0)
            j++;
        if (slot * (j - i) >= 7.0 * (double)strlen(name))
            text_at(b, RP_X0 + slot * (i + j) / 2.0, y + ph + 31, "middle", 10, NULL, name);
        if (i > 0)
            util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                         "stroke=\"#888\" stroke-dasharray=\"3,2\"/>\n",
                      RP_X0 + slot * i, y + ph + 20, RP_X0 + slot * i, y + ph + 34);
        i = j;
    }
    text_at(b, RP_X0 + RP_PW / 2, y + ph + 50, "middle", 13, "bold", "rank (device type)");
    util_buf_printf(b, "</g>\n");
    L->memory_xaxis.x = RP_X0 - 15;
    L->memory_xaxis.y = y + ph;
    L->memory_xaxis.w = RP_PW + 30;
    L->memory_xaxis.h = 55;
    return y + ph + 75;
}

/* ---- section 3: strategies side by side ------------------------------ */

static double topk_section(util_buf *b, const report_input *in, double y,
                           report_layout *L)
{
    static const legend_item items[] = {
        {"#4e79a7", "compute"},       {"#76b7b2", "tensor-parallel comm"},
        {RP_IDLE, "pipeline bubble"}, {"#f28e2b", "stage transfers"},
        {"#b07aa1", "gradient sync (DP, tied)"},
        {"#9c755f", "optimizer step"}};
    static const char *const fills[6] = {"#4e79a7", "#76b7b2", RP_IDLE,
                                         "#f28e2b", "#b07aa1", "#9c755f"};
    double vmax = 0, rh = 26, x;
    char buf[256];
    int i, k;

    snprintf(buf, sizeof buf, "Top %d strategies: predicted iteration time and where it goes",
             in->n);
    text_at(b, 20, y + 16, "start", 16, "bold", buf);
    y += 30;
    L->topk_legend = legend(b, RP_X0, y, items, 6);
    y += 28;
    for (i = 0; i < in->n; i++)
        if (in->r[i].iter_s > vmax)
            vmax = in->r[i].iter_s;
    if (!(vmax > 0))
        vmax = 1;
    vmax *= 1.32; /* room for the value labels */
    L->topk.x = RP_X0;
    L->topk.y = y;
    L->topk.w = RP_PW;
    L->topk.h = rh * in->n;
    text_at(b, RP_X0 - 10, y - 6, "end", 11, "bold", "strategy: degrees (placement)");
    for (i = 0; i < in->n; i++) {
        const fmt_strategy *s = &in->s[i];
        const cost_result *r = &in->r[i];
        const double part[6] = {r->bd.compute, r->bd.tp_comm, r->bd.bubble,
                                r->bd.p2p, r->bd.dp_comm, r->bd.optimizer};
        double ry = y + i * rh;
        snprintf(buf, sizeof buf, "#%d  tp %d, dp %d, pp %d, mbs %d (%s)", i + 1,
                 s->tp, s->dp, s->pp, s->mbs, s->placement[0] ? s->placement : "?");
        text_at(b, RP_X0 - 10, ry + rh / 2 + 4, "end", 11, i == in->shown ? "bold" : NULL,
                buf);
        x = RP_X0;
        for (k = 0; k < 6; k++) {
            double w = part[k] > 0 ? part[k] / vmax * RP_PW : 0;
            util_buf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                         "fill=\"%s\"><title>%s: %.4f s</title></rect>\n",
                      x, ry + 3, w, rh - 6, fills[k], items[k].label, part[k]);
            x += w;
        }
        snprintf(buf, sizeof buf, "%.4f s, %.1f samples/s%s", r->iter_s,
                 r->iter_s > 0 ? in->global_batch / r->iter_s : 0.0,
                 r->fits ? "" : ", does not fit");
        text_at(b, x + 6, ry + rh / 2 + 4, "start", 11, NULL, buf);
    }
    y += rh * in->n;
    util_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                 "stroke-width=\"1.5\"/>\n", RP_X0, L->topk.y, RP_X0, y);
    L->topk_xaxis = x_axis(b, RP_X0, y, RP_PW, vmax, 1.0, "predicted iteration time (s)");
    return y + 60;
}

/* ---- whole drawing --------------------------------------------------- */

int report_check_input(const report_input *in, util_error *err)
{
    int i;

    if (in == NULL || in->c == NULL || in->m == NULL || in->s == NULL ||
        in->r == NULL || in->n < 1)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "a report needs at least one strategy with its result");
    if (in->shown < 0 || in->shown >= in->n)
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "strategy %d to show is outside 1..%d", in->shown + 1,
                              in->n);
    for (i = 0; i < in->n; i++) {
        int n = in->s[i].tp * in->s[i].dp * in->s[i].pp, r;
        if (in->s[i].ranks == NULL || in->s[i].tp < 1 || in->s[i].dp < 1 ||
            in->s[i].pp < 1 || n > in->c->ndevices ||
            (in->r[i].nranks != 0 && in->r[i].nranks != n))
            return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                  "strategy %d does not fit the cluster's %d devices",
                                  i + 1, in->c->ndevices);
        for (r = 0; r < n; r++)
            if (in->s[i].ranks[r] < 0 || in->s[i].ranks[r] >= in->c->ndevices)
                return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                                      "strategy %d puts rank %d on device %d, "
                                      "outside 0..%d", i + 1, r,
                                      in->s[i].ranks[r], in->c->ndevices - 1);
    }
    if (in->timeline && in->timeline->nevents > 0 &&
        (in->timeline->pp != in->s[in->shown].pp ||
         in->timeline->dp != in->s[in->shown].dp))
        return util_error_set(err, UTIL_EINVAL, NULL, NULL,
                              "the timeline is not of strategy %d", in->shown + 1);
    return UTIL_OK;
}

void report_svg_body(util_buf *b, const report_input *in, report_layout *L)
{
    util_buf body = {0};
    double y = 0;
    char buf[400];
    const cost_result *r = &in->r[in->shown];

    memset(L, 0, sizeof *L);
    snprintf(buf, sizeof buf, "hetplan report%s%s", in->title ? ": " : "",
             in->title ? in->title : "");
    text_at(&body, 20, 30, "start", 20, "bold", buf);
    snprintf(buf, sizeof buf, "model '%s' on cluster '%s' (%d GPUs%s), global batch %d; "
             "peak memory headroom of strategy #%d %s",
             in->m->name, in->c->name, in->c->ndevices,
             in->s[in->shown].tp * in->s[in->shown].dp * in->s[in->shown].pp <
                     in->c->ndevices ? ", some idle" : "",
             in->global_batch,
             in->shown + 1, r->fits ? "positive on every GPU" : "NEGATIVE");
    text_at(&body, 20, 52, "start", 12, NULL, buf);
    if (in->timeline && in->timeline->nevents > 0 && in->timeline->iter_s > 0)
        snprintf(buf, sizeof buf, "iteration time of strategy #%d: %.4f s predicted "
                 "(cost model), %.4f s simulated (event-level schedule, timeline "
                 "below)", in->shown + 1, r->iter_s, in->timeline->iter_s);
    else
        snprintf(buf, sizeof buf, "iteration time of strategy #%d: %.4f s predicted "
                 "(cost model)", in->shown + 1, r->iter_s);
    text_at(&body, 20, 70, "start", 12, NULL, buf);
    y = 90;
    y = timeline_section(&body, in, y, L);
    y = memory_section(&body, in, y, L);
    y = topk_section(&body, in, y, L);
    L->width = RP_WIDTH;
    L->height = ceil(y);
    util_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
              L->width, L->height, L->width, L->height);
    util_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
              L->width, L->height);
    if (body.failed)
        b->failed = 1;
    else if (body.p)
        util_buf_printf(b, "%s", body.p);
    util_buf_printf(b, "</svg>\n");
    free(body.p);
}

int report_svg(const report_input *in, char **svg,
                    report_layout *layout, util_error *err)
{
    util_buf b = {0};
    report_layout L;
    int rc;

    *svg = NULL;
    if ((rc = report_check_input(in, err)) != UTIL_OK)
        return rc;
    util_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    report_svg_body(&b, in, &L);
    if (b.failed) {
        free(b.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    if (layout)
        *layout = L;
    *svg = b.p;
    return UTIL_OK;
}
