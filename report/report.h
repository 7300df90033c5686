/* report/report.h: the SVG/HTML report of a plan: simulated timeline,
 * memory against capacity, top strategies (docs/report.md). */
#ifndef HETPLAN_REPORT_H
#define HETPLAN_REPORT_H

#include "costmodel.h"

/* Everything a report shows (report/report.c, docs/report.md). */
typedef struct report_input {
    const char *title;          /* heading, e.g. the plan's file name; NULL = none */
    const fmt_cluster *c;
    const fmt_model *m;
    const fmt_strategy *s;     /* n strategies, best first */
    const cost_result *r;       /* n results of cost_evaluate, same order */
    int n;                      /* >= 1 */
    int shown;                  /* 0-based strategy whose timeline and memory are drawn */
    const cost_timeline *timeline; /* one iteration of s[shown]; NULL = section says
                                      it is unavailable */
    int global_batch;
    const char *idle_reason;    /* why s[shown] leaves GPUs idle, shown with them;
                                   NULL or "" = not recorded */
} report_input;

/* A rectangle of the drawing, in SVG user units (= CSS pixels). */
typedef struct report_box {
    double x, y, w, h;
} report_box;

/* Where the parts of the drawing are, for tests and for callers that
 * crop it.  Boxes of a missing part have w = h = 0. */
typedef struct report_layout {
    double width, height;       /* whole SVG */
    report_box timeline;   /* plot area of the timeline */
    report_box timeline_legend;
    report_box timeline_xaxis; /* ticks, numbers and axis title below the plot */
    report_box timeline_yaxis; /* row labels left of the plot */
    report_box memory;     /* plot area of the memory bars */
    report_box memory_legend;
    report_box memory_xaxis;
    report_box memory_yaxis;
    report_box topk;       /* plot area of the strategy comparison */
    report_box topk_legend;
    report_box topk_xaxis;
} report_layout;

/* Self-contained SVG (no external fonts, images or scripts).  *svg is
 * malloc'd (caller frees); layout (may be NULL) gets the boxes. */
int report_svg(const report_input *in, char **svg,
                    report_layout *layout, util_error *err);
/* HTML page: the same SVG inline plus tables of the strategies and the
 * stages of the shown one.  *html is malloc'd (caller frees). */
int report_html(const report_input *in, char **html,
                     report_layout *layout, util_error *err);

#endif

