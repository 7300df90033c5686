/* report/html.c: the HTML page of a report: the SVG of report/report.c
 * inline, then tables of the strategies, the idle GPUs and the stages of
 * the shown strategy (docs/report.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The idle GPUs of the shown strategy, node by node (nothing when none). */
static void idle_table(util_buf *b, const report_input *in)
{
    const fmt_strategy *s = &in->s[in->shown];
    const fmt_cluster *c = in->c;
    fmt_rank_index ix;
    int k;

    if (s->tp * s->dp * s->pp >= c->ndevices)
        return;
    if (fmt_rank_index_build(&ix, s, c->ndevices) != UTIL_OK) {
        b->failed = 1;
        return;
    }
    util_buf_printf(b, "<h2>Idle GPUs of strategy #%d</h2>\n<p style=\"margin: "
                    "0 20px\">%d of the cluster's %d GPUs run no rank; the charts "
                    "above leave them out.</p>\n",
                    in->shown + 1, c->ndevices - s->tp * s->dp * s->pp,
                    c->ndevices);
    if (in->idle_reason != NULL && in->idle_reason[0] != '\0') {
        util_buf_printf(b, "<p style=\"margin: 0 20px\">why: ");
        report_text(b, in->idle_reason);
        util_buf_printf(b, "</p>\n");
    }
    util_buf_printf(b, "<div class=\"wide\"><table>\n<tr><th class=\"l\">node</th>"
                    "<th class=\"l\">device type</th><th class=\"l\">idle GPUs</th>"
                    "<th>of</th></tr>\n");
    for (k = 0; k < c->nnodes; k++) {
        if (report_idle_on_node(c, &ix, k) == 0)
            continue;
        util_buf_printf(b, "<tr style=\"background: #eeeeee; color: #666\">"
                        "<td class=\"l\">");
        report_text(b, c->nodes[k].name);
        util_buf_printf(b, "</td><td class=\"l\">");
        report_text(b, fmt_device(c, c->nodes[k].first_device)->name);
        util_buf_printf(b, "</td><td class=\"l\">idle: ");
        report_idle_gpus(b, c, &ix, k);
        util_buf_printf(b, "</td><td>%d</td></tr>\n", c->nodes[k].gpus);
    }
    util_buf_printf(b, "</table></div>\n");
    fmt_rank_index_free(&ix);
}

int report_html(const report_input *in, char **html,
                     report_layout *layout, util_error *err)
{
    util_buf b = {0};
    report_layout L;
    const fmt_strategy *s;
    const cost_result *r;
    int rc, i, j, t;

    *html = NULL;
    if ((rc = report_check_input(in, err)) != UTIL_OK)
        return rc;
    util_buf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<title>hetplan report");
    if (in->title) {
        util_buf_printf(&b, ": ");
        report_text(&b, in->title);
    }
    util_buf_printf(&b, "</title>\n<style>\n"
                  "body { font-family: sans-serif; margin: 0; background: #fff; color: #222; }\n"
                  "table { border-collapse: collapse; margin: 8px 20px 24px 20px; font-size: 13px; }\n"
                  "th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }\n"
                  "th { background: #f0f0f0; }\n"
                  "td.l, th.l { text-align: left; }\n"
                  "h2 { font-size: 16px; margin: 16px 20px 4px 20px; }\n"
                  /* the drawing scales down with the window, never up */
                  "svg { display: block; width: 100%%; max-width: %.0fpx; height: auto; }\n"
                  ".wide { overflow-x: auto; }\n"
                  "</style>\n</head>\n<body>\n", RP_WIDTH);
    report_svg_body(&b, in, &L);
    util_buf_printf(&b, "<h2>Strategies</h2>\n<div class=\"wide\"><table>\n<tr><th>#</th><th>time (s)</th>"
                  "<th>samples/s</th><th>tp</th><th>dp</th><th>pp</th><th>mbs</th>"
                  "<th>micro-batches</th><th class=\"l\">placement</th><th>bubble (s)</th>"
                  "<th>dp comm (s)</th><th>peak memory (GiB)</th><th>fits</th>"
                  "<th>GPUs used</th><th>idle GPUs</th></tr>\n");
    for (i = 0; i < in->n; i++) {
        double peak = 0;
        s = &in->s[i];
        r = &in->r[i];
        for (j = 0; j < r->nranks; j++)
            if (r->mem_bytes && r->mem_bytes[j] > peak)
                peak = r->mem_bytes[j];
        util_buf_printf(&b, "<tr><td>%d</td><td>%.4f</td><td>%.2f</td><td>%d</td><td>%d</td>"
                      "<td>%d</td><td>%d</td><td>%d</td><td class=\"l\">",
                  i + 1, r->iter_s, r->iter_s > 0 ? in->global_batch / r->iter_s : 0.0,
                  s->tp, s->dp, s->pp, s->mbs, s->gas);
        report_text(&b, s->placement);
        util_buf_printf(&b, "</td><td>%.4f</td><td>%.4f</td><td>%.2f</td><td>%s</td>"
                  "<td>%d</td><td>%d</td></tr>\n",
                  r->bd.bubble, r->bd.dp_comm, peak / RP_GIB, r->fits ? "yes" : "no",
                  s->tp * s->dp * s->pp, in->c->ndevices - s->tp * s->dp * s->pp);
    }
    util_buf_printf(&b, "</table></div>\n");
    idle_table(&b, in);
    s = &in->s[in->shown];
    r = &in->r[in->shown];
    util_buf_printf(&b, "<h2>Stages of strategy #%d</h2>\n<div class=\"wide\"><table>\n<tr><th>stage</th>"
                  "<th class=\"l\">layers</th><th class=\"l\">devices</th>"
                  "<th>time per micro-batch (ms)</th><th>peak memory (GiB)</th>"
                  "<th>capacity (GiB)</th></tr>\n", in->shown + 1);
    for (j = 0; j < s->pp; j++) {
        double mem = 0, cap = 0;
        util_buf_printf(&b, "<tr><td>%d</td><td class=\"l\">%d-%d (", j, s->bounds[j],
                  s->bounds[j + 1] - 1);
        report_text(&b, in->m->layers[s->bounds[j]].name);
        util_buf_printf(&b, " .. ");
        report_text(&b, in->m->layers[s->bounds[j + 1] - 1].name);
        util_buf_printf(&b, ")</td><td class=\"l\">");
        for (t = 0; t < s->tp * s->dp; t++) {
            int rank = j * s->tp * s->dp + t;
            if (t)
                util_buf_printf(&b, ", ");
            util_buf_printf(&b, "%d:", s->ranks[rank]);
            report_text(&b, fmt_device(in->c, s->ranks[rank])->name);
            if (r->mem_bytes && rank < r->nranks && r->mem_bytes[rank] > mem) {
                mem = r->mem_bytes[rank];
                cap = r->mem_cap[rank];
            }
        }
        util_buf_printf(&b, "</td><td>");
        if (r->stage_s && j < r->pp)
            util_buf_printf(&b, "%.3f", r->stage_s[j] * 1e3);
        else
            util_buf_printf(&b, "-");
        util_buf_printf(&b, "</td><td>%.2f</td><td>%.2f</td></tr>\n", mem / RP_GIB, cap / RP_GIB);
    }
    util_buf_printf(&b, "</table></div>\n</body>\n</html>\n");
    if (b.failed) {
        free(b.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    if (layout)
        *layout = L;
    *html = b.p;
    return UTIL_OK;
}
